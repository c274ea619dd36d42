// One line of a control channel (`cordon run --control-fd N`, `cordon proxy --control unix:PATH`), parsed.
// Pure (no sockets, no state) so that a fuzz target can call it. Two kinds of line come in:
//   a settings update: a partial settings object, srt's shape (`{"network": {"allowedDomains": [...]}}`) or
//     Claude Code's (`{"sandbox": {"network": ...}, "permissions": {...}}`); srt's shape is returned as
//     Claude Code's (under `sandbox`), so updates of both shapes merge into one layer;
//   an answer to an ask: `{"answer": {"id": N, "decision": "allow"|"deny", "remember": true|false}}`.
// Anything else is a ControlError with a message for the one `{"error": ...}` line sent back.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <variant>

namespace cordon::proxy {

struct ControlUpdate {
    nlohmann::json settings;  // Claude Code's shape
    bool filesystem = false;  // it holds filesystem rules (which a running jail cannot change)
};
struct ControlAnswer {
    std::uint64_t id = 0;
    bool allow = false;
    bool remember = false;
};
struct ControlError {
    std::string message;
};
using ControlMessage = std::variant<ControlUpdate, ControlAnswer, ControlError>;

ControlMessage parse_control_line(std::string_view line);

}  // namespace cordon::proxy
