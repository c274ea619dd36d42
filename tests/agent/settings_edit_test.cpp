#include "agent/settings_edit.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using cordon::agent::install_hook;
using cordon::agent::is_cordon_hook_command;
using cordon::agent::uninstall_hook;
using nlohmann::json;

namespace {
const std::string kCommand = "/opt/cordon/bin/cordon claude-hook --audit-log=/var/log/c.jsonl";

json pre_tool_use(const std::string& text) {
    return json::parse(text).at("hooks").at("PreToolUse");
}
}  // namespace

TEST_CASE("install then uninstall gives the file back byte for byte, other hooks untouched") {
    const std::string originals[] = {
        // other hooks, 4-space indentation, odd spacing, keys in a non-sorted order
        "{\n    \"permissions\": {\"allow\": [\"Bash(ls *)\"]},\n    \"hooks\": {\n        \"PreToolUse\": "
        "[\n"
        "            {\"matcher\": \"Write\", \"hooks\": [{\"type\": \"command\", \"command\": "
        "\"lint.sh\"}]}\n"
        "        ],\n        \"PostToolUse\": []\n    },\n    \"zeta\" :  1\n}\n",
        // hooks without PreToolUse
        "{\n  \"hooks\": {\n    \"Stop\": [{\"hooks\": [{\"type\": \"command\", \"command\": \"say "
        "done\"}]}]\n  }\n}\n",
        // no hooks at all, one line
        "{\"model\": \"opus\", \"env\": {\"A\": \"1\"}}",
        // empty object
        "{}\n",
        // tabs
        "{\n\t\"sandbox\": {\n\t\t\"enabled\": true\n\t}\n}",
    };
    for (const std::string& original : originals) {
        INFO(original);
        auto installed = install_hook(original, kCommand);
        REQUIRE(installed.error.empty());
        CHECK(installed.changed);
        json before = json::parse(original);
        json after = json::parse(installed.text);
        // exactly one entry more in PreToolUse; everything else equal
        json entries = pre_tool_use(installed.text);
        CHECK(entries.back() ==
              json{{"matcher", "Bash"}, {"hooks", {{{"type", "command"}, {"command", kCommand}}}}});
        after["hooks"]["PreToolUse"].erase(after["hooks"]["PreToolUse"].size() - 1);
        if (after["hooks"]["PreToolUse"].empty()) after["hooks"].erase("PreToolUse");
        if (after["hooks"].empty()) after.erase("hooks");
        CHECK(after == before);
        // installing again changes nothing
        auto again = install_hook(installed.text, kCommand);
        CHECK_FALSE(again.changed);
        CHECK(again.text == installed.text);
        auto removed = uninstall_hook(installed.text);
        REQUIRE(removed.error.empty());
        CHECK(removed.changed);
        CHECK(removed.text == original);
    }
}

TEST_CASE("a new file, an updated command, a foreign entry kept") {
    auto fresh = install_hook("", kCommand);
    REQUIRE(fresh.changed);
    CHECK(pre_tool_use(fresh.text).size() == 1);
    CHECK(json::parse(uninstall_hook(fresh.text).text) == json::object());

    auto updated = install_hook(fresh.text, "'/new path/cordon' claude-hook");
    CHECK(updated.changed);
    CHECK(pre_tool_use(updated.text).size() == 1);
    CHECK(pre_tool_use(updated.text)[0]["hooks"][0]["command"] == "'/new path/cordon' claude-hook");

    // an entry that mixes cordon with another hook is the user's: never removed
    std::string mixed = R"({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
        {"type": "command", "command": "cordon claude-hook"}, {"type": "command", "command": "other"}]}]}})";
    CHECK_FALSE(uninstall_hook(mixed).changed);
    CHECK_FALSE(uninstall_hook("{\"a\": 1}").changed);
}

TEST_CASE("files cordon cannot edit are left alone") {
    CHECK_FALSE(install_hook("{not json", kCommand).error.empty());
    CHECK_FALSE(install_hook("[1, 2]", kCommand).error.empty());
    CHECK_FALSE(install_hook("{\"hooks\": []}", kCommand).error.empty());
    CHECK_FALSE(install_hook("{\"hooks\": {\"PreToolUse\": {}}}", kCommand).error.empty());
    CHECK_FALSE(uninstall_hook("{\"hooks\": 3}").error.empty());
}

TEST_CASE("cordon's hook command is recognised by its program and subcommand") {
    CHECK(is_cordon_hook_command("cordon claude-hook"));
    CHECK(is_cordon_hook_command("/usr/local/bin/cordon claude-hook --audit-log=x"));
    CHECK(is_cordon_hook_command("'/a b/cordon' claude-hook"));
    CHECK_FALSE(is_cordon_hook_command("cordon run -- x"));
    CHECK_FALSE(is_cordon_hook_command("/bin/notcordon claude-hook"));
    CHECK_FALSE(is_cordon_hook_command("lint.sh"));
}

TEST_CASE(
    "a UTF-8 byte order mark is accepted and kept, duplicate keys on the way to the entry are refused") {
    const std::string bom = "\xEF\xBB\xBF";
    const std::string original = bom + "{\n  \"model\": \"opus\"\n}\n";
    auto installed = install_hook(original, kCommand);
    REQUIRE(installed.error.empty());
    CHECK(installed.text.substr(0, 3) == bom);
    CHECK(pre_tool_use(installed.text.substr(3)).size() == 1);
    auto removed = uninstall_hook(installed.text);
    REQUIRE(removed.error.empty());
    CHECK(removed.text == original);

    // JSON.parse (Claude Code) reads the last "hooks", nlohmann the first: cordon edits neither.
    for (const std::string& text : {std::string(R"({"hooks": {}, "hooks": {"PreToolUse": []}})"),
                                    std::string(R"({"hooks": {"PreToolUse": [], "PreToolUse": []}})")}) {
        INFO(text);
        CHECK_FALSE(install_hook(text, kCommand).error.empty());
        CHECK_FALSE(uninstall_hook(text).error.empty());
    }
}
