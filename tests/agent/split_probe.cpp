// For tests/agent/test_split_differential.py: reads commands (each NUL-terminated) on stdin and answers one
// byte per command: 'A' when the hook would allow it with only `Bash(a:*)`, `Bash(b:*)`, `Bash(c:*)` allowed
// (every part the splitter finds is a command a, b or c, or read-only), 'N' otherwise. The test runs the same
// commands under bash, where `p` is a payload that reports running: allowed yet ran p is a splitter bug that
// lets something through.
#include <iostream>
#include <iterator>
#include <string>

#include "agent/claude_hook.hpp"

using namespace cordon;

int main() {
    policy::CommandPolicy rules;
    for (const char* name : {"a", "b", "c"})
        rules.allow.push_back(policy::Rule{std::string("Bash(") + name + ":*)",
                                           policy::Source{policy::Layer::User, "probe", "permissions", 1}});
    agent::Wrapper wrapper;
    wrapper.cordon = "/bin/cordon";
    agent::HookOptions options;
    options.trusted = true;
    agent::HookInput input;
    input.tool_name = "Bash";
    input.cwd = "/w";
    std::string command;
    while (std::getline(std::cin, command, '\0')) {
        input.command = command;
        auto d = agent::decide(input, rules, wrapper, options);
        std::cout.put(d.permission == agent::HookDecision::Permission::Allow ? 'A' : 'N');
    }
    std::cout.flush();
    return 0;
}
