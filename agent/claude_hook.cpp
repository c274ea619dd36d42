#include "agent/claude_hook.hpp"

#include <algorithm>

#include "agent/bash_rules.hpp"
#include "agent/command_forms.hpp"
#include "agent/read_only.hpp"
#include "agent/settings_edit.hpp"
#include "agent/shell_split.hpp"
#include "policy/syntax.hpp"

namespace cordon::agent {

using json = nlohmann::json;
using Permission = HookDecision::Permission;

std::string_view to_string(Permission permission) {
    switch (permission) {
        case Permission::None:
            return "none";
        case Permission::Allow:
            return "allow";
        case Permission::Ask:
            return "ask";
        case Permission::Deny:
            return "deny";
    }
    return "none";
}

std::variant<HookInput, std::string> parse_hook_input(std::string_view text) {
    json root = json::parse(text, nullptr, false);
    if (root.is_discarded()) return std::string("the hook input is not JSON");
    if (!root.is_object()) return std::string("the hook input is not a JSON object");
    HookInput in;
    auto string_field = [&](const json& object, const char* key, std::string& into) -> bool {
        auto it = object.find(key);
        if (it == object.end() || it->is_null()) return true;
        if (!it->is_string()) return false;
        into = it->get<std::string>();
        return true;
    };
    if (!string_field(root, "tool_name", in.tool_name)) return std::string("tool_name is not a string");
    if (!string_field(root, "cwd", in.cwd)) return std::string("cwd is not a string");
    if (!string_field(root, "session_id", in.session_id)) return std::string("session_id is not a string");
    if (!string_field(root, "tool_use_id", in.tool_use_id)) return std::string("tool_use_id is not a string");
    if (!string_field(root, "hook_event_name", in.hook_event_name))
        return std::string("hook_event_name is not a string");
    if (auto it = root.find("tool_input"); it != root.end() && !it->is_null()) {
        if (!it->is_object()) return std::string("tool_input is not an object");
        in.tool_input = *it;
    }
    if (in.tool_name != "Bash") return in;
    if (!string_field(in.tool_input, "command", in.command))
        return std::string("tool_input.command is not a string");
    if (auto it = in.tool_input.find("dangerouslyDisableSandbox");
        it != in.tool_input.end() && !it->is_null()) {
        if (!it->is_boolean()) return std::string("tool_input.dangerouslyDisableSandbox is not a boolean");
        in.disable_sandbox = it->get<bool>();
    }
    return in;
}

std::string wrap_command(const Wrapper& wrapper, const std::string& cwd, const std::string& command) {
    std::string out;
    if (!cwd.empty()) out = "cd -- " + shell_quote(cwd) + " && ";
    // A session the hook started may have lingered out before the command runs (an "ask" the user answered
    // later than the linger): start it again, with the same flags, before joining. `--reuse` makes this a
    // quick no-op while it runs; a failure to start keeps the command from running.
    if (!wrapper.session.empty() && !wrapper.session_start.empty()) {
        out += shell_quote(wrapper.cordon);
        for (const std::string& arg : wrapper.session_start)
            out += " " + shell_quote(arg);
        out += " >/dev/null && ";
    }
    out += shell_quote(wrapper.cordon) + " run";
    if (!wrapper.session.empty())
        out += " --session " + shell_quote(wrapper.session);
    else
        for (const std::string& arg : wrapper.args)
            out += " " + shell_quote(arg);
    // The command travels as a quoted here-document on the jailed shell's stdin, byte for byte and never as
    // an argument: quoting it for argv would grow it (each ' becomes 4 bytes) past the kernel's 128 KiB limit
    // for one argument, so a command Claude Code runs would fail with E2BIG once wrapped. The shell reads it
    // whole
    // (`read -d ''` up to the end), gives the command /dev/null as stdin as Claude Code does, and runs it
    // with `eval` as Claude Code's own shell does. The delimiter occurs nowhere in the command.
    std::string delimiter = "CORDON_COMMAND";
    for (int n = 1; command.find(delimiter) != std::string::npos; ++n)
        delimiter = "CORDON_COMMAND_" + std::to_string(n);
    out += " -- " + shell_quote(wrapper.shell) + " -c " +
           shell_quote("IFS= read -r -d '' c; exec </dev/null; eval \"unset c;${c%?}\"") + " <<'" +
           delimiter + "'\n" + command + "\n" + delimiter + "\n";
    return out;
}

std::string session_name(const std::string& session_id) {
    std::string out = "claude-";
    for (char c : session_id) {
        if (out.size() >= 64) break;
        const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                           c == '-' || c == '_' || c == '.';
        out += plain ? c : '_';
    }
    return out;
}

namespace {

std::string named(const policy::Rule& rule) {
    return "`" + rule.text + "` (" + policy::format_source(rule.source) + ")";
}

// `text` without quote characters and backslashes: `r'm' -rf`, `"rm" -rf` and `\rm -rf` all run `rm -rf`.
// Only for deny and ask rules, where matching more is the safe side.
std::string unquoted(std::string_view text) {
    std::string out;
    for (char c : text)
        if (c != '\'' && c != '"' && c != '\\') out += c;
    return out;
}

// The first rule of `rules` that matches one of `parts` in any of its forms (command_forms.hpp: wrappers,
// paths, redirections, assignments and `-c` scripts seen through, as Claude Code's own check does; and the
// text without quotes), or null. Deny and ask rules only: matching more is the safe side.
const policy::Rule* first_match(const std::vector<policy::Rule>& rules,
                                const std::vector<CommandForms>& parts) {
    for (const policy::Rule& rule : rules)
        for (const CommandForms& part : parts)
            for (const std::string& form : part.forms)
                if (bash_rule_matches(rule.text, form) || bash_rule_matches(rule.text, unquoted(form)))
                    return &rule;
    return nullptr;
}

// `git` with a global option that points it at another repository or configuration.
bool git_elsewhere(const std::string& form) {
    std::vector<std::string> words = command_words(form);
    if (words.empty() || words[0] != "git") return false;
    for (std::size_t k = 1; k < words.size() && words[k].size() > 1 && words[k][0] == '-'; ++k) {
        const std::string& w = words[k];
        if (w == "-C" || w == "-c" || w.rfind("--git-dir", 0) == 0 || w.rfind("--work-tree", 0) == 0 ||
            w.rfind("--exec-path", 0) == 0 || w.rfind("--config-env", 0) == 0 || w.rfind("-C", 0) == 0 ||
            w.rfind("-c", 0) == 0)
            return true;
    }
    return false;
}

// Rules of `list` that Claude Code honours: a project's own rules only in a trusted workspace.
std::vector<const policy::Rule*> honoured(const std::vector<policy::Rule>& list, bool trusted) {
    std::vector<const policy::Rule*> out;
    for (const policy::Rule& rule : list)
        if (trusted || rule.source.layer != policy::Layer::Project) out.push_back(&rule);
    return out;
}

const policy::Rule* first_matching(const std::vector<const policy::Rule*>& rules, std::string_view part,
                                   bool (*matches)(std::string_view, std::string_view)) {
    for (const policy::Rule* rule : rules)
        if (matches(rule->text, part)) return rule;
    return nullptr;
}

}  // namespace

const policy::Rule* other_bash_hook(const policy::CommandPolicy& rules) {
    for (const policy::Rule& hook : rules.bash_hooks) {
        // cordon's own entry as the installer writes it: one command, nothing chained to it whose output
        // could add an updatedInput of its own.
        bool plain = hook.text.find_first_of(";&|<>`$(){}\n\r") == std::string::npos;
        if (!plain || !is_cordon_hook_command(hook.text)) return &hook;
    }
    return nullptr;
}

bool workspace_trusted(std::string_view claude_json, const std::string& cwd) {
    json root = json::parse(claude_json, nullptr, false);
    if (root.is_discarded() || !root.is_object()) return false;
    auto projects = root.find("projects");
    if (projects == root.end() || !projects->is_object()) return false;
    std::string dir = cwd;
    while (!dir.empty() && dir.size() > 1 && dir.back() == '/')
        dir.pop_back();
    for (;;) {
        auto it = projects->find(dir);
        if (it != projects->end() && it->is_object()) {
            auto accepted = it->find("hasTrustDialogAccepted");
            if (accepted != it->end() && accepted->is_boolean() && accepted->get<bool>()) return true;
        }
        if (dir.empty() || dir == "/") return false;
        std::size_t slash = dir.rfind('/');
        if (slash == std::string::npos) return false;
        dir = slash == 0 ? "/" : dir.substr(0, slash);
    }
}

HookDecision decide(const HookInput& input, const policy::CommandPolicy& rules, const Wrapper& wrapper,
                    const HookOptions& options) {
    HookDecision d;
    d.command = input.command;
    if (input.tool_name != "Bash" || input.command.empty()) {
        d.reason = input.tool_name != "Bash" ? "not the Bash tool" : "no command";
        return d;
    }
    if (input.command.find('\0') != std::string::npos) {
        // bash would run the text before the NUL only; the rules would have seen the rest too.
        d.permission = Permission::Deny;
        d.reason = "cordon: the command holds a NUL byte";
        return d;
    }
    auto split = split_command(input.command);
    const std::string* split_error = std::get_if<std::string>(&split);
    std::vector<std::string> parts;
    if (!split_error) parts = std::get<std::vector<std::string>>(split);
    // Deny and ask rules look at every part and at the whole command, so a command cordon cannot split is
    // still refused by a rule that matches its beginning.
    std::vector<CommandForms> checked;
    std::string unsure;
    for (const std::string& part : parts) {
        checked.push_back(command_forms(part));
        if (unsure.empty()) unsure = checked.back().unsure;
    }
    checked.push_back(command_forms(input.command));

    if (const policy::Rule* rule = first_match(rules.deny, checked)) {
        d.permission = Permission::Deny;
        d.rule = rule;
        d.reason = "cordon: denied by " + named(*rule);
        return d;
    }
    if (input.disable_sandbox) {
        if (!rules.allow_unsandboxed_commands) {
            d.permission = Permission::Deny;
            d.reason =
                "cordon: dangerouslyDisableSandbox refused: sandbox.allowUnsandboxedCommands is false, every "
                "command runs in the sandbox";
        } else {
            d.permission = Permission::Ask;
            d.reason =
                "cordon: the command asks to run outside the sandbox (dangerouslyDisableSandbox); "
                "it runs unsandboxed only if you approve";
        }
        return d;
    }

    d.wrapped = true;
    d.command = wrap_command(wrapper, input.cwd, input.command);
    if (const policy::Rule* rule = first_match(rules.ask, checked)) {
        d.permission = Permission::Ask;
        d.rule = rule;
        d.reason = "cordon: ask rule " + named(*rule) + "; it runs in cordon's sandbox once approved";
        return d;
    }
    // A script inside the command that cannot be read may hold what a deny or ask rule names.
    if (!unsure.empty() && rules.deny.empty() && rules.ask.empty()) unsure.clear();
    // Claude Code asks before git runs elsewhere or with other configuration (`git -C DIR`, `-c`,
    // `--git-dir`, `--work-tree`), even under an allow rule for Bash (measured): so does the hook.
    for (const CommandForms& part : checked)
        for (const std::string& form : part.forms)
            if (git_elsewhere(form)) {
                d.permission = Permission::Ask;
                d.reason =
                    "cordon: git with -C, -c, --git-dir or --work-tree asks, as in Claude Code; it runs "
                    "in cordon's sandbox once approved";
                return d;
            }
    if (split_error || !unsure.empty()) {
        d.permission = Permission::Ask;
        d.reason = "cordon: cannot split the command safely (" + (split_error ? *split_error : unsure) +
                   "), so it is not auto-allowed; it runs in cordon's sandbox once approved";
        return d;
    }

    // Claude Code ignores the project's own allow rules until the user trusts the workspace: a cloned
    // repository must not allow itself anything. Its excludedCommands would run outside the jail: same.
    auto excluded = honoured(rules.excluded_commands, options.trusted);
    const policy::Rule* exclusion = nullptr;
    for (const std::string& part : parts) {
        const policy::Rule* hit = first_matching(excluded, part, excluded_command_matches);
        if (!hit) {
            exclusion = nullptr;
            break;
        }
        if (!exclusion) exclusion = hit;
    }
    if (exclusion && rules.allow_unsandboxed_commands) {
        d.permission = Permission::None;
        d.wrapped = false;
        d.command = input.command;
        d.rule = exclusion;
        d.reason = "cordon: excluded by sandbox.excludedCommands " + named(*exclusion) +
                   ": runs outside the sandbox, Claude Code's permissions decide";
        return d;
    }

    // Another PreToolUse hook for Bash may answer with updatedInput, and Claude Code then runs its command in
    // place of cordon's wrapper: whatever cordon allowed to run in its jail would run outside it, unprompted.
    // So never allow then; the user is asked, and told why.
    if (const policy::Rule* other_hook = other_bash_hook(rules)) {
        d.permission = Permission::Ask;
        d.rule = other_hook;
        d.reason =
            "cordon: another PreToolUse hook for Bash, " + named(*other_hook) +
            ", can replace cordon's wrapped command (updatedInput): approved, the command may run "
            "outside cordon's sandbox. Remove that hook, or fold it into one hook, to let cordon allow";
        return d;
    }

    // Every part read-only (Claude Code runs those unprompted) or allowed by an honoured rule.
    auto allow = honoured(rules.allow, options.trusted);
    const policy::Rule* allowed_by = nullptr;
    bool every_part_allowed = !parts.empty();
    for (const std::string& part : parts) {
        if (read_only_command(part)) continue;
        const policy::Rule* hit = first_matching(allow, part, bash_rule_matches);
        if (!hit) {
            every_part_allowed = false;
            break;
        }
        if (!allowed_by) allowed_by = hit;
    }
    if (every_part_allowed) {
        d.permission = Permission::Allow;
        d.rule = allowed_by;
        d.reason = allowed_by
                       ? "cordon: allowed by " + named(*allowed_by) + "; runs in cordon's sandbox"
                       : "cordon: read-only, as Claude Code runs it unprompted; runs in cordon's sandbox";
        return d;
    }
    if (options.auto_allow && options.trusted && rules.auto_allow_bash_if_sandboxed) {
        d.permission = Permission::Allow;
        d.reason =
            "cordon: runs in cordon's sandbox (jail, egress proxy, audit log): claude-hook --auto-allow";
        return d;
    }
    d.permission = Permission::Ask;
    d.reason =
        std::string("cordon: no allow rule matches every part") +
        (options.auto_allow ? " and --auto-allow does not apply in a workspace Claude Code does not trust"
                            : "") +
        "; it runs in cordon's sandbox once approved";
    return d;
}

std::string hook_output(const HookInput& input, const HookDecision& decision) {
    if (decision.permission == Permission::None) return "";
    json specific = {{"hookEventName", "PreToolUse"},
                     {"permissionDecision", std::string(to_string(decision.permission))},
                     {"permissionDecisionReason", decision.reason}};
    if (decision.wrapped && decision.permission != Permission::Deny) {
        json updated = input.tool_input;
        updated["command"] = decision.command;
        specific["updatedInput"] = std::move(updated);
    }
    return json{{"hookSpecificOutput", std::move(specific)}}.dump(-1, ' ', false,
                                                                  json::error_handler_t::replace) +
           "\n";
}

}  // namespace cordon::agent
