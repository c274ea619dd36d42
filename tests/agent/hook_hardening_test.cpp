// The hook's answers to a security review, beyond the reviewer's own cases (attack_review_test.cpp): the
// loading of other PreToolUse hooks, the splitter's and the rule forms' edges around each fix.
#include <catch2/catch.hpp>

#include "agent/bash_rules.hpp"
#include "agent/claude_hook.hpp"
#include "agent/command_forms.hpp"
#include "agent/read_only.hpp"
#include "agent/shell_split.hpp"
#include "tests/agent/hook_support.hpp"
#include "tests/policy/test_support.hpp"

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

agent::HookOptions auto_allow() {
    agent::HookOptions o;
    o.auto_allow = true;
    o.trusted = true;
    return o;
}

std::vector<std::string> hooks_of(const std::string& settings) {
    policy::test::TempTree tree;
    tree.user_settings(settings);
    auto loaded = policy::load_policy(tree.options());
    REQUIRE(std::holds_alternative<policy::PolicyPtr>(loaded));
    std::vector<std::string> out;
    for (const auto& hook : std::get<policy::PolicyPtr>(loaded)->commands().bash_hooks)
        out.push_back(hook.text);
    return out;
}

}  // namespace

TEST_CASE("hardening: the PreToolUse hooks that can run for Bash are loaded, whatever their matcher") {
    auto entry = [](const std::string& matcher_json, const std::string& command) {
        return R"({"hooks": {"PreToolUse": [{)" + matcher_json +
               R"("hooks": [{"type": "command", "command": ")" + command + R"("}]}]}})";
    };
    CHECK(hooks_of(entry(R"("matcher": "Bash",)", "a")) == std::vector<std::string>{"a"});
    CHECK(hooks_of(entry("", "b")) == std::vector<std::string>{"b"});  // no matcher: every tool
    CHECK(hooks_of(entry(R"("matcher": "",)", "c")) == std::vector<std::string>{"c"});
    CHECK(hooks_of(entry(R"("matcher": "*",)", "d")) == std::vector<std::string>{"d"});
    CHECK(hooks_of(entry(R"("matcher": "Edit|Bash",)", "e")) == std::vector<std::string>{"e"});
    CHECK(hooks_of(entry(R"("matcher": "Edit, Bash",)", "f")) == std::vector<std::string>{"f"});
    CHECK(hooks_of(entry(R"("matcher": "Ba.*",)", "g")) == std::vector<std::string>{"g"});
    CHECK(hooks_of(entry(R"("matcher": "(",)", "h")) == std::vector<std::string>{"h"});  // unreadable
    CHECK(hooks_of(entry(R"("matcher": "Edit",)", "i")).empty());
    CHECK(hooks_of(entry(R"("matcher": "Bashful",)", "j")).empty());
    CHECK(hooks_of(R"({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "prompt"}]}]}})") ==
          std::vector<std::string>{"type: prompt"});
    CHECK(hooks_of(R"({"hooks": {"PreToolUse": {"matcher": "Bash"}}})").size() == 1);  // not an array
    CHECK(hooks_of(R"({"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "x"}]}]}})")
              .empty());
}

TEST_CASE("hardening: with another PreToolUse hook for Bash the hook never allows, and names it") {
    policy::CommandPolicy p;
    p.allow = {rule("Bash(ls:*)")};
    policy::Rule other{
        "/usr/local/bin/rewrite",
        policy::Source{policy::Layer::User, "/h/.claude/settings.json", "hooks.PreToolUse[0].hooks[0]", 4}};
    policy::Rule own{"/usr/bin/cordon claude-hook --auto-allow",
                     policy::Source{policy::Layer::Local, "/p/.claude/settings.local.json",
                                    "hooks.PreToolUse[0].hooks[0]", 5}};
    p.bash_hooks = {own};
    CHECK(agent::decide(bash("make"), p, wrapper(), auto_allow()).permission == Permission::Allow);
    CHECK(agent::decide(bash("ls"), p, wrapper(), {}).permission == Permission::Allow);
    // cordon's entry with something chained to it is not cordon's alone.
    p.bash_hooks = {own, policy::Rule{"/usr/bin/cordon claude-hook; /usr/local/bin/rewrite", own.source}};
    CHECK(agent::decide(bash("ls"), p, wrapper(), {}).permission == Permission::Ask);
    p.bash_hooks = {own, other};
    for (const char* command : {"make", "ls", "cat f"}) {
        INFO(command);
        HookDecision d = agent::decide(bash(command), p, wrapper(), auto_allow());
        CHECK(d.permission == Permission::Ask);
        CHECK(d.rule == &p.bash_hooks[1]);
        CHECK(d.reason.find("/usr/local/bin/rewrite") != std::string::npos);
        CHECK(d.reason.find("/h/.claude/settings.json:4") != std::string::npos);
    }
    // Deny rules still deny.
    p.deny = {rule("Bash(rm:*)")};
    CHECK(agent::decide(bash("rm x"), p, wrapper(), auto_allow()).permission == Permission::Deny);
}

TEST_CASE("hardening: a shell's -c script is found past --, option values and option clusters") {
    auto forms = [](const std::string& command) { return agent::command_forms(command).forms; };
    auto has = [&](const std::string& command, const std::string& form) {
        auto f = forms(command);
        return std::find(f.begin(), f.end(), form) != f.end();
    };
    for (const char* command :
         {"bash -c -- 'rm x'", "bash -o pipefail -c 'rm x'", "bash -euo pipefail -c 'rm x'",
          "sh -c -e 'rm x'", "bash -O extglob -c 'rm x'", "bash +o history -c 'rm x'",
          "bash +O extglob -c 'rm x'", "bash --norc -c 'rm x'", "bash --rcfile /r -c 'rm x'",
          "rbash -c 'rm x'", "/bin/dash -c 'rm x'", "busybox sh -c 'rm x'", "fish -c 'rm x'",
          "fish --command='rm x'", "fish --command 'rm x'", "fish -C 'rm x'",
          "zsh -o errexit -c 'rm x' name arg", "bash -oO pipefail extglob -c 'rm x'"}) {
        INFO(command);
        CHECK(has(command, "rm x"));
        CHECK(agent::command_forms(command).unsure.empty());
    }
    // The value of -o is not the script; a script file is not read.
    CHECK_FALSE(has("bash -o 'rm x' -c 'ls'", "rm x"));
    CHECK(has("bash -o 'rm x' -c 'ls'", "ls"));
    CHECK_FALSE(has("bash 'rm x'", "rm x"));
    // An option cordon cannot read, which may expand to -c: unsure.
    CHECK_FALSE(agent::command_forms("bash $opt 'rm x'").unsure.empty());
    CHECK_FALSE(agent::command_forms("bash -c \"$script\"").unsure.empty());
}

TEST_CASE(
    "hardening: a command name that is an expansion is unsure, plain names and the test command are not") {
    for (const char* command :
         {"$x -f v", "\"$x\" -f v", "${x} -f v", "$(echo rm) -f v", "`echo rm` -f v", "env $x -f v",
          "sudo \"$X\" -f v", "/bin/r? -f v", "/bin/r[m] -f v", "{rm,-f,v}", "$'\\x72m' -f v", "A=1 $x"}) {
        INFO(command);
        CHECK_FALSE(agent::command_forms(command).unsure.empty());
    }
    for (const char* command : {"rm -f v", "[ -f v ]", "[[ -f v ]]", "echo $x", "ls *.c", "env A=$x ls"}) {
        INFO(command);
        CHECK(agent::command_forms(command).unsure.empty());
    }
    // With no deny or ask rule an unsure command is not asked about on that account.
    policy::CommandPolicy none;
    CHECK(agent::decide(bash("x=ls; $x"), none, wrapper(), auto_allow()).permission == Permission::Allow);
    policy::CommandPolicy deny;
    deny.deny = {rule("Bash(rm:*)")};
    CHECK(agent::decide(bash("x=ls; $x"), deny, wrapper(), auto_allow()).permission == Permission::Ask);
}

TEST_CASE("hardening: array element assignments before a command are skipped like any assignment") {
    auto forms = agent::command_forms("a[0]=1 b[x+1]+=2 c+=3 rm -f v").forms;
    CHECK(std::find(forms.begin(), forms.end(), "rm -f v") != forms.end());
    CHECK(agent::without_assignments("a[0]=1 rm -f v") == "rm -f v");
    CHECK(agent::without_assignments("a+=1 rm -f v") == "rm -f v");
    CHECK(agent::without_assignments("a[$i]=1 rm -f v") == "a[$i]=1 rm -f v");  // an expansion: kept
    CHECK(agent::command_forms("a[0 rm").forms.size() >= 1);                    // not an assignment
}

TEST_CASE("hardening: flock -c, su -c, runuser, script -c, unshare, nsenter, setpriv run what they name") {
    auto has = [](const std::string& command, const std::string& form) {
        auto f = agent::command_forms(command).forms;
        return std::find(f.begin(), f.end(), form) != f.end();
    };
    for (const char* command : {"flock -c 'rm x' /l",
                                "flock --command 'rm x' /l",
                                "flock --command='rm x' /l",
                                "flock /l -c 'rm x'",
                                "flock -x /l -c 'rm x'",
                                "flock -w 5 /l -c 'rm x'",
                                "flock -xc 'rm x' /l",
                                "flock /l rm x",
                                "su -c 'rm x' root",
                                "su root -c 'rm x'",
                                "runuser -u u -- rm x",
                                "runuser -c 'rm x' u",
                                "script -q -c 'rm x' /dev/null",
                                "unshare -r rm x",
                                "unshare --map-user 0 -m rm x",
                                "unshare -R /r -w /w rm x",
                                "nsenter -t 1 -m rm x",
                                "nsenter --target=1 -a rm x",
                                "nsenter -t1 rm x",
                                "setpriv --reuid 1 --clear-groups rm x"}) {
        INFO(command);
        CHECK(has(command, "rm x"));
    }
}

TEST_CASE("hardening: read-only means read-only as the option parsers read the options") {
    for (const char* command :
         {"sort -uo g f",     "sort -o g f",          "sort --out=g f", "sort --compress-prog=sh f",
          "sort --comp=sh f", "tree -fo g",           "wc --files0=x",  "git log --out=g",
          "git diff --ext",   "git diff /etc/x f",    "git diff ../x",  "git log ~/x",
          "grep -f/etc/x f",  "grep --file=/etc/x f", "grep -f../x f",  "grep --file=~/x f",
          "cat </etc/x",      "cat < /etc/x",         "cat <../x",      "cat <>f",
          "cat 0</etc/x",     "cat <'/etc/x'",        "cat <&",         "grep x f <\"/etc/x\""}) {
        INFO(command);
        CHECK_FALSE(agent::read_only_command(command));
    }
    for (const char* command :
         {"sort -u f", "sort -r -k2 f", "git log --oneline -5", "git log main..feature", "git diff HEAD~1 f",
          "grep -f pats f", "grep --file=pats f", "grep -- -x f", "cat <f", "cat < f", "cat <<<x", "cat <&0",
          "wc -l <f", "ls --color=auto", "grep --include=*.c -r x ."}) {
        INFO(command);
        CHECK(agent::read_only_command(command));
    }
}

TEST_CASE("hardening: trap's action is a script the rules see") {
    for (const char* command : {"trap 'rm x' EXIT", "trap -- 'rm x' EXIT INT"}) {
        INFO(command);
        auto f = agent::command_forms(command).forms;
        CHECK(std::find(f.begin(), f.end(), "rm x") != f.end());
    }
    policy::CommandPolicy p;
    p.deny = {rule("Bash(rm:*)")};
    CHECK(agent::decide(bash("trap 'rm -f v' EXIT; true"), p, wrapper(), auto_allow()).permission ==
          Permission::Deny);
}
