#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "agent/bash_rules.hpp"
#include "agent/claude_hook.hpp"
#include "agent/command_forms.hpp"
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
    w.args = {"--audit-log=/var/log/a.jsonl"};
    return w;
}

// `claude-hook --auto-allow` in a trusted workspace.
agent::HookOptions auto_allow() {
    agent::HookOptions o;
    o.auto_allow = true;
    o.trusted = true;
    return o;
}

policy::CommandPolicy sandboxed() {
    policy::CommandPolicy p;
    p.sandbox_enabled = true;
    p.deny = {rule("Bash(rm -rf:*)"), rule("Bash(git push *)")};
    p.ask = {rule("Bash(npm publish)")};
    p.allow = {rule("Bash(npm run test:*)"), rule("Bash(ls *)"), rule("Bash(git * main)")};
    p.excluded_commands = {rule("docker"), rule("Bash(podman:*)")};
    return p;
}

}  // namespace

TEST_CASE("Bash rule forms") {
    using agent::bash_rule_matches;
    struct Row {
        const char* rule;
        const char* command;
        bool match;
    };
    const Row rows[] = {
        {"Bash", "anything at all", true},
        {"Bash(*)", "anything", true},
        {"Bash(npm run build)", "npm run build", true},
        {"Bash(npm run build)", "npm run build --prod", false},
        {"Bash(npm run test:*)", "npm run test", true},
        {"Bash(npm run test:*)", "npm run test --watch", true},
        {"Bash(npm run test:*)", "npm run tests", false},
        {"Bash(ls *)", "ls", true},
        {"Bash(ls *)", "ls -la", true},
        {"Bash(ls *)", "lsof", false},
        {"Bash(ls*)", "lsof", true},
        {"Bash(git * main)", "git push origin main", true},
        {"Bash(git * main)", "git push origin main2", false},
        {"Bash(* --version)", "node --version", true},
        {"Bash(echo \\*)", "echo *", true},
        {"Bash(echo \\*)", "echo a", false},
        {"Read(*)", "ls", false},
        {"Bash(ls", "ls", false},
    };
    for (const Row& row : rows) {
        INFO(row.rule << " vs " << row.command);
        CHECK(bash_rule_matches(row.rule, row.command) == row.match);
    }
    CHECK(agent::excluded_command_matches("docker", "docker ps -a"));
    CHECK(agent::excluded_command_matches("docker", "docker"));
    CHECK_FALSE(agent::excluded_command_matches("docker", "dockerd"));
    CHECK(agent::without_assignments("A=1 B=x rm y") == "rm y");
    CHECK(agent::without_assignments("A=\"1 2\" rm y") == "A=\"1 2\" rm y");
}

TEST_CASE("the hook's decision table") {
    const auto p = sandboxed();
    struct Row {
        std::string command;
        bool disable_sandbox;
        Permission permission;
        bool wrapped;
        std::string rule;  // the rule named, "" for none
    };
    const std::vector<Row> rows = {
        // explicit deny: in any part, also hidden in a substitution, a subshell or behind assignments
        {"rm -rf build", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"ls && rm -rf /", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"echo $(rm -rf ~)", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"(cd x; git push origin main)", false, Permission::Deny, false, "Bash(git push *)"},
        {"X=1 rm -rf y", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"r'm' -rf y", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"\\rm \"-rf\" y", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        {"rm -rf 'unterminated", false, Permission::Deny, false, "Bash(rm -rf:*)"},
        // deny beats dangerouslyDisableSandbox
        {"rm -rf x", true, Permission::Deny, false, "Bash(rm -rf:*)"},
        // explicit ask (wrapped: it runs jailed once approved)
        {"npm publish", false, Permission::Ask, true, "Bash(npm publish)"},
        {"npm run build; npm publish", false, Permission::Ask, true, "Bash(npm publish)"},
        // dangerouslyDisableSandbox: never auto-allowed, never wrapped
        {"curl example.com", true, Permission::Ask, false, ""},
        // cannot be split: not auto-allowed
        {"echo 'open", false, Permission::Ask, true, ""},
        {"for f in *; do echo $f; done", false, Permission::Ask, true, ""},
        // excluded commands: unwrapped, Claude Code's own flow
        {"docker ps", false, Permission::None, false, "docker"},
        {"podman run x && docker ps", false, Permission::None, false, "Bash(podman:*)"},
        // only some parts excluded: the whole runs sandboxed
        {"docker ps && make", false, Permission::Allow, true, ""},
        // sandboxed and auto-allowed
        {"make -j2 && ./test", false, Permission::Allow, true, ""},
        {"cat <<'EOF'\nrm -rf /\nEOF", false, Permission::Allow, true, ""},
    };
    for (const Row& row : rows) {
        INFO(row.command);
        HookDecision d = agent::decide(bash(row.command, row.disable_sandbox), p, wrapper(), auto_allow());
        CHECK(d.permission == row.permission);
        CHECK(d.wrapped == row.wrapped);
        CHECK((d.rule ? d.rule->text : "") == row.rule);
        if (!row.rule.empty() && d.permission != Permission::None)
            CHECK_THAT(d.reason, Catch::Contains(row.rule));
        if (!d.wrapped) CHECK(d.command == row.command);
        if (d.wrapped)
            CHECK_THAT(d.command, Catch::StartsWith("cd -- '/work/project' && '/usr/bin/cordon' run"));
    }
}

TEST_CASE("without --auto-allow, read-only commands and allow rules decide and the rest asks") {
    auto p = sandboxed();
    agent::HookOptions trusted;
    trusted.trusted = true;
    auto d = agent::decide(bash("npm run test --watch | ls -la"), p, wrapper(), trusted);
    CHECK(d.permission == Permission::Allow);
    CHECK(d.wrapped);
    REQUIRE(d.rule);
    CHECK(d.rule->text == "Bash(npm run test:*)");
    d = agent::decide(bash("npm run test && curl x"), p, wrapper(), trusted);
    CHECK(d.permission == Permission::Ask);
    CHECK(d.wrapped);
    // What Claude Code runs unprompted: read-only, allowed without a rule (still jailed).
    d = agent::decide(bash("git status --short && ls -la | wc -l"), p, wrapper(), trusted);
    CHECK(d.permission == Permission::Allow);
    CHECK(d.wrapped);
    CHECK_FALSE(d.rule);
    for (const char* read_only : {"echo $HOME", "jq . f", "ss -tln", "lsof", "history", "cat f | grep x"}) {
        INFO(read_only);
        CHECK(agent::decide(bash(read_only), p, wrapper(), trusted).permission == Permission::Allow);
    }
    for (const char* not_read_only :
         {"ss -K", "history -c", "echo ${x:-$(y)}", "jq --rawfile a /etc/shadow .", "cat /etc/passwd",
          "cat ../x", "echo hi > f", "find . -delete", "sort -o f g", "git branch -D x", "FOO=1 ls",
          "git -C . status", "rg --pre sh x", "cd /tmp", "ls $(x)", "date -s 1", "echo `x`"}) {
        INFO(not_read_only);
        CHECK(agent::decide(bash(not_read_only), p, wrapper(), trusted).permission == Permission::Ask);
    }
    // Claude Code's sandbox switches do not turn on cordon's auto-allow; --auto-allow does, unless managed
    // settings say autoAllowBashIfSandboxed false.
    p.sandbox_enabled = true;
    CHECK(agent::decide(bash("curl x"), p, wrapper(), trusted).permission == Permission::Ask);
    CHECK(agent::decide(bash("curl x"), p, wrapper(), auto_allow()).permission == Permission::Allow);
    p.auto_allow_bash_if_sandboxed = false;
    CHECK(agent::decide(bash("curl x"), p, wrapper(), auto_allow()).permission == Permission::Ask);
}

TEST_CASE(
    "an untrusted workspace: the project's allow rules, excludedCommands and --auto-allow do not apply") {
    policy::CommandPolicy p;
    p.allow = {rule("Bash(make:*)")};  // rule() is a project rule
    p.excluded_commands = {rule("docker")};
    p.allow.push_back(
        policy::Rule{"Bash(npm test)",
                     policy::Source{policy::Layer::User, "/home/u/.claude/settings.json", "permissions", 1}});
    agent::HookOptions untrusted;
    untrusted.auto_allow = true;
    CHECK(agent::decide(bash("make"), p, wrapper(), untrusted).permission == Permission::Ask);
    CHECK(agent::decide(bash("curl x"), p, wrapper(), untrusted).permission == Permission::Ask);
    auto d = agent::decide(bash("docker ps"), p, wrapper(), untrusted);
    CHECK(d.permission == Permission::Ask);
    CHECK(d.wrapped);
    CHECK(agent::decide(bash("npm test"), p, wrapper(), untrusted).permission == Permission::Allow);
    CHECK(agent::decide(bash("git status"), p, wrapper(), untrusted).permission == Permission::Allow);
    CHECK(agent::decide(bash("make"), p, wrapper(), auto_allow()).permission == Permission::Allow);
}

TEST_CASE("workspace trust as Claude Code records it") {
    const char* config = R"({"projects": {"/w/trusted": {"hasTrustDialogAccepted": true},
                                          "/w/no": {"hasTrustDialogAccepted": false}, "/": {}}})";
    CHECK(agent::workspace_trusted(config, "/w/trusted"));
    CHECK(agent::workspace_trusted(config, "/w/trusted/sub/dir/"));
    CHECK_FALSE(agent::workspace_trusted(config, "/w/no"));
    CHECK_FALSE(agent::workspace_trusted(config, "/w/no/sub"));
    CHECK_FALSE(agent::workspace_trusted(config, "/w/trusted-not"));
    CHECK_FALSE(agent::workspace_trusted("", "/w/trusted"));
    CHECK_FALSE(agent::workspace_trusted("{\"projects\": []}", "/w/trusted"));
}

TEST_CASE("allowUnsandboxedCommands false: no way out of the sandbox") {
    auto p = sandboxed();
    p.allow_unsandboxed_commands = false;
    auto d = agent::decide(bash("curl example.com", true), p, wrapper(), auto_allow());
    CHECK(d.permission == Permission::Deny);
    CHECK_FALSE(d.wrapped);
    CHECK_THAT(d.reason, Catch::Contains("allowUnsandboxedCommands"));
    d = agent::decide(bash("docker ps"), p, wrapper(), auto_allow());
    CHECK(d.permission == Permission::Allow);
    CHECK(d.wrapped);
}

TEST_CASE("hook input and output JSON") {
    auto in = agent::parse_hook_input(R"({"session_id":"abc","transcript_path":"/t","cwd":"/w",
        "hook_event_name":"PreToolUse","tool_name":"Bash","tool_use_id":"toolu_1",
        "tool_input":{"command":"ls","description":"list","timeout":5000}})");
    REQUIRE(std::holds_alternative<HookInput>(in));
    auto input = std::get<HookInput>(in);
    CHECK(input.command == "ls");
    CHECK(input.session_id == "abc");
    CHECK(input.cwd == "/w");
    auto d = agent::decide(input, sandboxed(), wrapper(), auto_allow());
    json out = json::parse(agent::hook_output(input, d));
    const json& h = out.at("hookSpecificOutput");
    CHECK(h.at("hookEventName") == "PreToolUse");
    CHECK(h.at("permissionDecision") == "allow");
    CHECK_THAT(h.at("permissionDecisionReason").get<std::string>(), Catch::Contains("sandbox"));
    CHECK(h.at("updatedInput").at("description") == "list");  // the rest of the input is kept
    CHECK(h.at("updatedInput").at("timeout") == 5000);
    CHECK(h.at("updatedInput").at("command") == d.command);

    auto other = std::get<HookInput>(
        agent::parse_hook_input(R"({"tool_name":"Read","tool_input":{"file_path":"/x"}})"));
    CHECK(agent::hook_output(other, agent::decide(other, sandboxed(), wrapper(), auto_allow())).empty());

    auto deny = bash("rm -rf x");
    json denied =
        json::parse(agent::hook_output(deny, agent::decide(deny, sandboxed(), wrapper(), auto_allow())));
    CHECK(denied["hookSpecificOutput"]["permissionDecision"] == "deny");
    CHECK_FALSE(denied["hookSpecificOutput"].contains("updatedInput"));

    CHECK(std::holds_alternative<std::string>(agent::parse_hook_input("not json")));
    CHECK(std::holds_alternative<std::string>(agent::parse_hook_input("[1]")));
    CHECK(std::holds_alternative<std::string>(
        agent::parse_hook_input(R"({"tool_name":"Bash","tool_input":{"command":3}})")));
    CHECK(std::holds_alternative<std::string>(agent::parse_hook_input(
        R"({"tool_name":"Bash","tool_input":{"command":"x","dangerouslyDisableSandbox":"yes"}})")));
}

// The rewritten command, run by a real shell with a stand-in for cordon that runs what follows `--`: the
// command must reach the jail's shell byte for byte.
TEST_CASE("the rewritten command keeps its quoting exactly") {
    policy::test::TempTree tree;
    auto fake =
        tree.write("fake-cordon", "#!/bin/sh\nwhile [ \"$1\" != -- ]; do shift; done\nshift\nexec \"$@\"\n");
    std::filesystem::permissions(fake, std::filesystem::perms::owner_all);
    agent::Wrapper w;
    w.cordon = fake.string();
    w.args = {"--settings=/a b/it's.json"};
    const std::string commands[] = {
        "printf '%s\\n' 'single quoted' \"double $((1+1))\" it\\'s",
        "echo one\necho two",
        "echo \"$(echo nested 'quotes')\" `echo back`",
        "cat <<'EOF'\nliteral $HOME 'q' \"d\" \\ done\nEOF",
        "cat <<EOF\nexpanded $((6*7))\nEOF",
        "x='a'\\''b'; echo \"$x\"; echo $'tab\\there'",
        "echo \"c=${c:-unset}\"; echo CORDON_COMMAND; echo CORDON_COMMAND_1",
        "printf '%s|' a b\n\n",
        // 160 KB quoted for argv, past the kernel's 128 KiB limit for one argument: travels by here-document.
        "printf '%s' " +
            [] {
                std::string s;
                for (int k = 0; k < 25000; ++k)
                    s += "'a'\"b\"";
                return s;
            }() +
            " | wc -c",
    };
    auto run = [&](const std::string& script) {
        auto file = tree.write("script.sh", script);
        std::string out;
        FILE* p =
            ::popen(("cd " + tree.root().string() + " && /bin/bash " + file.string() + " 2>&1").c_str(), "r");
        char buf[512];
        std::size_t n;
        while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
            out.append(buf, n);
        ::pclose(p);
        return out;
    };
    for (const std::string& command : commands) {
        INFO(command);
        std::string direct = run(command);
        std::string wrapped = run(agent::wrap_command(w, tree.root().string(), command));
        CHECK(!direct.empty());
        CHECK(wrapped == direct);
    }
}

TEST_CASE("Bash rules and sandbox switches come from the layered settings, managed settings win") {
    policy::test::TempTree tree;
    tree.managed_settings(R"J({"permissions": {"deny": ["Bash(curl:*)"]},
        "sandbox": {"allowUnsandboxedCommands": false, "autoAllowBashIfSandboxed": false}})J");
    tree.project_settings(
        R"J({"permissions": {"allow": ["Bash(curl:*)", "Bash(make:*)"], "ask": ["Bash(git push:*)"]},
        "sandbox": {"enabled": true, "allowUnsandboxedCommands": true, "autoAllowBashIfSandboxed": true,
                    "excludedCommands": ["docker"]}})J");
    auto p = policy::test::load_ok(tree.options());
    const auto& c = p->commands();
    CHECK(c.sandbox_enabled);
    CHECK_FALSE(c.allow_unsandboxed_commands);
    CHECK_FALSE(c.auto_allow_bash_if_sandboxed);
    REQUIRE(c.deny.size() == 1);
    CHECK(c.deny[0].source.layer == policy::Layer::Managed);
    auto d = agent::decide(bash("curl https://example.com"), c, wrapper(), auto_allow());
    CHECK(d.permission == Permission::Deny);
    CHECK_THAT(d.reason, Catch::Contains("managed"));
    CHECK(agent::decide(bash("make"), c, wrapper(), auto_allow()).permission == Permission::Allow);
    CHECK(agent::decide(bash("make; ls"), c, wrapper(), auto_allow()).permission == Permission::Allow);
    CHECK(agent::decide(bash("make; npm i"), c, wrapper(), auto_allow()).permission == Permission::Ask);
    CHECK(agent::decide(bash("git push"), c, wrapper(), auto_allow()).permission == Permission::Ask);
    CHECK(agent::decide(bash("x", true), c, wrapper(), auto_allow()).permission == Permission::Deny);
    // docker is excluded, but allowUnsandboxedCommands (managed) is false: it runs sandboxed
    CHECK(agent::decide(bash("docker ps"), c, wrapper(), auto_allow()).wrapped);
}

TEST_CASE("a Bash deny or ask rule that cannot be read stops the load") {
    policy::test::TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Bash(rm -rf"]}})J");
    CHECK_THAT(policy::test::load_error(tree.options()), Catch::Contains("Bash(rm -rf"));
    tree.project_settings(R"J({"permissions": {"ask": ["Bash(npm publish"]}})J");
    CHECK_THAT(policy::test::load_error(tree.options()), Catch::Contains("npm publish"));
}

TEST_CASE("deny and ask rules see through wrappers, paths, redirections, assignments and -c scripts") {
    policy::CommandPolicy p;
    p.sandbox_enabled = true;
    p.deny = {rule("Bash(rm:*)")};
    p.ask = {rule("Bash(curl:*)")};
    // Every spelling Claude Code 2.1.332 itself refuses for `Bash(rm:*)` (measured with the real binary;
    // tests/agent/test_claude_code.py checks the same list end to end).
    for (const char* command : {"timeout 5 rm -f x",
                                "env rm -f x",
                                "command rm -f x",
                                "/bin/rm -f x",
                                "echo x | xargs rm -f",
                                "nohup rm -f x",
                                "bash -c 'rm -f x'",
                                "rm>/dev/null -f x",
                                "exec rm -f x",
                                "nice rm -f x",
                                "nice -n 5 rm -f x",
                                "sudo rm -f x",
                                "time -p rm -f x",
                                "time rm -f x",
                                "X='' rm -f x",
                                ">/dev/null rm -f x",
                                "sh -c 'rm -f x'",
                                "FOO=1 rm -f x",
                                "r'm' -f x",
                                "\\rm -f x",
                                "env -i rm -f x",
                                "timeout -s KILL 5 rm -f x",
                                "sudo -u nobody rm -f x",
                                "bash -lc 'rm -f x'",
                                "stdbuf -o0 rm -f x",
                                "setsid rm -f x",
                                "ionice rm -f x",
                                "env -S 'rm -f x'",
                                "eval rm -f x",
                                "exec -a foo rm -f x",
                                "true && rm -f x",
                                "(rm -f x)",
                                "echo $(rm -f x)",
                                "2>/dev/null rm x",
                                "sudo env X=1 nice -n 5 /usr/bin/rm x",
                                "bash -c \"sh -c 'rm x'\"",
                                "xargs -n1 -I{} rm {}",
                                "timeout --signal=KILL 5 rm x",
                                "nice -5 rm x",
                                "\"/bin/rm\" x",
                                "rm<x",
                                "rm 2>&1 x"}) {
        INFO(command);
        HookDecision d = agent::decide(bash(command), p, wrapper(), auto_allow());
        CHECK(d.permission == Permission::Deny);
    }
    for (const char* command :
         {"timeout 5 curl x", "bash -c 'curl x'", "env A=1 curl x", "/usr/bin/curl x"}) {
        INFO(command);
        CHECK(agent::decide(bash(command), p, wrapper(), auto_allow()).permission == Permission::Ask);
    }
    // Not the command: arguments that merely look like it.
    for (const char* command : {"echo rm", "git rm x", "command -v rm", "ls rm"}) {
        INFO(command);
        CHECK(agent::decide(bash(command), p, wrapper(), auto_allow()).permission == Permission::Allow);
    }
    // A -c script cordon cannot split may hold the denied command: asked, never auto-allowed.
    CHECK(
        agent::decide(bash("bash -c 'for f in *; do rm $f; done'"), p, wrapper(), auto_allow()).permission ==
        Permission::Ask);
}

TEST_CASE("command words: quotes, escapes and redirections as bash reads them") {
    using V = std::vector<std::string>;
    CHECK(agent::command_words("rm>/dev/null -rf x") == V{"rm", "-rf", "x"});
    CHECK(agent::command_words(">/dev/null rm") == V{"rm"});
    CHECK(agent::command_words("r'm' \"a b\" \\c 2>&1 d") == V{"rm", "a b", "c", "d"});
    CHECK(agent::command_words("a2>x b") == V{"a2", "b"});
    CHECK(agent::command_words("echo \"$(x \")\")\" y") == V{"echo", "$(x \")\")", "y"});
}

TEST_CASE("git pointed elsewhere asks even under an allow rule for Bash, as in Claude Code") {
    policy::CommandPolicy p;
    p.allow = {rule("Bash")};
    for (const char* command : {"git -C . status", "git -c core.pager=x log", "git --git-dir=/x status",
                                "ls && timeout 5 git -C /tmp status"}) {
        INFO(command);
        CHECK(agent::decide(bash(command), p, wrapper(), auto_allow()).permission == Permission::Ask);
    }
    CHECK(agent::decide(bash("git status -c"), p, wrapper(), auto_allow()).permission == Permission::Allow);
}
