// `cordon claude-hook`: Claude Code's PreToolUse hook for the Bash tool. One pure decision (decide()) from
// the hook input and the Bash rules and sandbox switches of the layered settings (policy::CommandPolicy), and
// the JSON that goes back to Claude Code (hook_output()).
//
// The decision, in order (README.md "cordon for Claude Code" has the table):
//   1. not the Bash tool, or no command                     -> no opinion (empty output)
//   2. a deny rule matches a part (or the whole)            -> deny, naming the rule
//   3. dangerouslyDisableSandbox                            -> ask, unwrapped (deny when
//                                                              allowUnsandboxedCommands is false)
//   4. an ask rule matches a part                           -> ask, wrapped
//   5. the command cannot be split safely                   -> ask, wrapped (never auto-allowed)
//   6. every part matches sandbox.excludedCommands          -> no opinion, unwrapped (Claude Code's own
//      (and allowUnsandboxedCommands is not false)             permission flow)
//   7. otherwise the command is wrapped in `cordon run`, and
//      every part is read-only (read_only.hpp) or matches   -> allow, naming the rule
//      an allow rule Claude Code honours
//      the hook runs with --auto-allow in a trusted         -> allow ("runs in cordon's sandbox")
//      workspace
//      else                                                 -> ask, wrapped
//      but another PreToolUse hook for Bash exists          -> ask, naming it (its updatedInput would
//                                                              replace the wrapper)
// Deny and ask rules match every form of every part (command_forms.hpp), as strictly as Claude Code's own
// check. In a workspace the user has not trusted, Claude Code ignores the project's .claude/settings.json
// allow rules; so does the hook, with its excludedCommands and --auto-allow.
// Errors: none here; malformed input is the caller's (cli/cmd_claude_hook.cpp) to refuse.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "policy/policy.hpp"

namespace cordon::agent {

struct HookInput {
    std::string tool_name;
    nlohmann::json tool_input = nlohmann::json::object();  // kept whole: updatedInput replaces it
    std::string command;                                   // tool_input.command
    bool disable_sandbox = false;                          // tool_input.dangerouslyDisableSandbox
    std::string cwd, session_id, tool_use_id;
    std::string hook_event_name;  // "PreToolUse", or "SessionEnd" (no tool then)
};

// Reads the hook's stdin JSON; an error message when it is not a PreToolUse input cordon can read.
std::variant<HookInput, std::string> parse_hook_input(std::string_view text);

// How a command runs under cordon: `cd -- CWD && CORDON run ARGS -- SHELL -c READER <<'DELIMITER'`, the
// command itself in the here-document (no argument size limit, not re-quoted).
struct Wrapper {
    std::string cordon;             // absolute path of the cordon binary
    std::vector<std::string> args;  // flags for `cordon run` (the hook's policy flags, --audit-log)
    std::string shell = "/bin/bash";
    // `claude-hook --session`: the command joins this cordon session (`cordon run --session NAME`, no other
    // flag: the session was started with them) instead of a jail of its own.
    std::string session;
    // The `cordon session start --reuse …` arguments that made it (the hook's flags and --linger): the
    // wrapped command starts the session again when it lingered out while Claude Code waited for the user's
    // answer.
    std::vector<std::string> session_start;
};
// The cordon session of a Claude Code session: `claude-` and its session_id (what a session name may hold).
std::string session_name(const std::string& session_id);
std::string wrap_command(const Wrapper& wrapper, const std::string& cwd, const std::string& command);

struct HookDecision {
    enum class Permission { None, Allow, Ask, Deny };
    Permission permission = Permission::None;
    std::string reason;
    const policy::Rule* rule = nullptr;  // the rule that decided, when one did (points into the policy)
    bool wrapped = false;
    std::string command;  // the command as it will run (wrapped or the original)
};
std::string_view to_string(HookDecision::Permission permission);  // "none", "allow", "ask", "deny"

struct HookOptions {
    bool auto_allow = false;  // `cordon claude-hook --auto-allow`: the jail makes the command safe to run
    bool trusted = false;     // the workspace is trusted in Claude Code's ~/.claude.json
};

HookDecision decide(const HookInput& input, const policy::CommandPolicy& rules, const Wrapper& wrapper,
                    const HookOptions& options);

// The first hooks.PreToolUse hook for Bash in the settings that is not cordon's own, or null. Claude Code
// runs every matching hook, and another hook's updatedInput replaces cordon's wrapped command (the command
// then runs outside the jail): with one, decide() never allows, it asks.
const policy::Rule* other_bash_hook(const policy::CommandPolicy& rules);

// Whether Claude Code trusts the workspace `cwd`: `projects[DIR].hasTrustDialogAccepted` in its global
// config (`claude_json`: the text of $CLAUDE_CONFIG_DIR/.claude.json or ~/.claude.json) for `cwd` or a
// directory above it. Anything unreadable is untrusted.
bool workspace_trusted(std::string_view claude_json, const std::string& cwd);

// Claude Code's hook output for a decision (empty string: no opinion).
std::string hook_output(const HookInput& input, const HookDecision& decision);

}  // namespace cordon::agent
