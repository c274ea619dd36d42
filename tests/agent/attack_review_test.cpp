// Attacks on `cordon claude-hook`'s decision: commands that Claude Code 2.1.332 alone refuses or asks about
// (measured with the real binary against a mock Messages API, see test_attack_review.py), for which the hook
// must never answer "allow": its `cordon run` wrapper hides the command from Claude Code's own check, so
// whatever the hook allows runs without that check.
#include <catch2/catch.hpp>

#include "agent/claude_hook.hpp"
#include "tests/agent/hook_support.hpp"

using namespace cordon;
using agent::HookDecision;
using agent::HookInput;
using Permission = HookDecision::Permission;
using agent::test::bash;
using agent::test::rule;
using nlohmann::json;

namespace {

agent::Wrapper wrapper() {
    agent::Wrapper w;
    w.cordon = "/usr/bin/cordon";
    return w;
}

agent::HookOptions trusted(bool auto_allow) {
    agent::HookOptions o;
    o.auto_allow = auto_allow;
    o.trusted = true;
    return o;
}

// Claude Code 2.1.332 refuses each of these for `deny: Bash(rm:*)` with `allow: Bash` ("A permission rule
// denies a command inside this shell -c script"; measured, the victim file stayed). For an ask rule it runs
// them: its look into `-c` scripts is for deny rules only.
const char* const kShellScriptsClaudeCodeRefuses[] = {
    // A `-c` script after `--`, or after shell options that take a value (-o NAME, -O NAME, +o NAME).
    "bash -c -- 'rm -f victim'",
    "sh -c -- 'rm -f victim'",
    "timeout 5 bash -c -- 'rm -f victim'",
    "bash -c '' ; bash -c -- 'rm -f victim'",
    "bash -o pipefail -c 'rm -f victim'",
    "bash -euo pipefail -c 'rm -f victim'",
    "sh -o errexit -c 'rm -f victim'",
    "bash -O extglob -c 'rm -f victim'",
    "bash +o history -c 'rm -f victim'",
    // A shell the wrapper list does not name.
    "rbash -c 'rm -f victim'",
};

// Claude Code 2.1.332 refuses each of these for `deny: Bash(rm:*)` with `allow: Bash` and asks about each
// for `ask: Bash(rm:*)` with `allow: Bash` (measured).
const char* const kRmSpellingsClaudeCodeRefuses[] = {
    // The command name is a variable set earlier in the same command.
    "x=rm; $x -f victim",
    "x=rm && $x -f victim",
    "x=rm\n$x -f victim",
    "export X=rm; $X -f victim",
    "declare x=rm; $x -f victim",
    "x=rm; \"$x\" -f victim",
    "x=rm; env $x -f victim",
    // An array element assignment before the command.
    "a[0]=1 rm -f victim",
    // flock's -c/--command runs a shell command.
    "flock -c 'rm -f victim' /tmp/lock",
    "flock --command 'rm -f victim' /tmp/lock",
    "flock /tmp/lock -c 'rm -f victim'",
    // Wrappers Claude Code sees through.
    "unshare -r rm -f victim",
    "nsenter -t 1 rm -f victim",
};

}  // namespace

TEST_CASE("attack review: a deny rule is not bypassed by spellings Claude Code refuses") {
    policy::CommandPolicy p;
    p.deny = {rule("Bash(rm:*)")};
    p.allow = {rule("Bash")};
    auto check = [&](const char* command) {
        INFO(command);
        for (bool auto_allow : {false, true}) {
            HookDecision d = agent::decide(bash(command), p, wrapper(), trusted(auto_allow));
            CHECK(d.permission != Permission::Allow);
            CHECK(d.permission != Permission::None);
        }
    };
    for (const char* command : kShellScriptsClaudeCodeRefuses)
        check(command);
    for (const char* command : kRmSpellingsClaudeCodeRefuses)
        check(command);
}

TEST_CASE("attack review: an ask rule is not bypassed by spellings Claude Code asks about") {
    policy::CommandPolicy p;
    p.ask = {rule("Bash(rm:*)")};
    p.allow = {rule("Bash")};
    for (const char* command : kRmSpellingsClaudeCodeRefuses) {
        INFO(command);
        HookDecision d = agent::decide(bash(command), p, wrapper(), trusted(true));
        CHECK(d.permission != Permission::Allow);
        CHECK(d.permission != Permission::None);
    }
}

TEST_CASE("attack review: no read-only allow for what Claude Code asks about") {
    // No rules, no --auto-allow: Claude Code 2.1.332 asks about each of these (measured: "This command
    // requires approval", or "... was blocked. For security, Claude Code may only ..." for paths outside the
    // working directory); the hook must not run them unprompted.
    const char* const commands[] = {
        "sort -uo g f",                 // -o clustered: writes g
        "sort -mo g f",                 //
        "sort --compress-prog=sh f",    // an abbreviation of --compress-program: runs sh
        "tree -fo g",                   // -o clustered: writes g
        "git diff /etc/hostname f",     // a path outside the repository: --no-index implied
        "grep -f/etc/hostname f",       // reads a pattern file outside the working directory
        "grep --file=/etc/hostname f",  //
        "cat </etc/hostname",           // input redirection from outside the working directory
    };
    policy::CommandPolicy p;
    for (const char* command : commands) {
        INFO(command);
        HookDecision d = agent::decide(bash(command), p, wrapper(), trusted(false));
        CHECK(d.permission != Permission::Allow);
    }
}

TEST_CASE("attack review: the splitter agrees with bash on $' inside double quotes and nested backticks") {
    // bash runs `touch pwn` in each (checked with bash 5.2): inside double quotes `$'` is a literal `$` and
    // `'`, not ANSI-C quoting; an escaped backquote inside backquotes opens a nested command substitution.
    // The splitter saw one `git` command in each, so an excludedCommands entry `git` ran the payload
    // outside the jail, and an allow rule `Bash(git:*)` allowed it.
    const char* const commands[] = {
        "git --version \"$'\"; touch pwn; echo \"'\"",
        "git --version `git --version \\`touch pwn\\``",
    };
    policy::CommandPolicy excluded;
    excluded.allow = {rule("Bash")};
    excluded.excluded_commands = {rule("git")};
    policy::CommandPolicy allowed;
    allowed.allow = {rule("Bash(git:*)")};
    for (const char* command : commands) {
        INFO(command);
        HookDecision d = agent::decide(bash(command), excluded, wrapper(), trusted(true));
        CHECK(d.permission != Permission::None);
        CHECK(d.wrapped);
        d = agent::decide(bash(command), allowed, wrapper(), trusted(false));
        CHECK(d.permission != Permission::Allow);
    }
}
