// One line of the control channel (proxy/control_line.cpp): what an agent harness writes to `cordon run
// --control-fd` or `cordon proxy --control`. Checks that every line is an update, an answer or an error with
// a message, never a crash, and that an update is always a JSON object in Claude Code's shape.
//
// Input: the line (without its newline).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "proxy/control_line.hpp"

namespace proxy = cordon::proxy;

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto message = proxy::parse_control_line(std::string_view(reinterpret_cast<const char*>(data), size));
    if (auto* update = std::get_if<proxy::ControlUpdate>(&message)) check(update->settings.is_object());
    if (auto* error = std::get_if<proxy::ControlError>(&message)) check(!error->message.empty());
    return 0;
}
