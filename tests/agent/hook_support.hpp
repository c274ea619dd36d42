// What the hook's table tests share: a Bash rule from a project settings file and a Bash hook input as Claude
// Code sends it.
#pragma once

#include <string>

#include "agent/claude_hook.hpp"

namespace cordon::agent::test {

inline policy::Rule rule(const std::string& text) {
    return policy::Rule{text,
                        policy::Source{policy::Layer::Project, "/p/.claude/settings.json", "permissions", 3}};
}

inline HookInput bash(const std::string& command, bool disable_sandbox = false) {
    HookInput in;
    in.tool_name = "Bash";
    in.command = command;
    in.cwd = "/work/project";
    in.session_id = "s-1";
    in.tool_input = nlohmann::json{{"command", command}, {"description", "d"}, {"timeout", 1000}};
    if (disable_sandbox) in.tool_input["dangerouslyDisableSandbox"] = true;
    in.disable_sandbox = disable_sandbox;
    return in;
}

}  // namespace cordon::agent::test
