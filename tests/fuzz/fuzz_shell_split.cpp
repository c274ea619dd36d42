// `cordon claude-hook`'s shell splitter (agent/shell_split.cpp): the Bash command an agent asks to run.
// Checks that it either splits into non-empty parts or refuses with a message, never crashes, and that
// splitting is deterministic.
//
// Input: the command text.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "agent/shell_split.hpp"

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view command(reinterpret_cast<const char*>(data), size);
    auto first = cordon::agent::split_command(command);
    auto second = cordon::agent::split_command(command);
    check(first.index() == second.index());
    if (auto* parts = std::get_if<std::vector<std::string>>(&first)) {
        check(*parts == std::get<std::vector<std::string>>(second));
    } else {
        check(!std::get<std::string>(first).empty());
    }
    return 0;
}
