// Settings file errors and positions: JSON syntax errors with line and column, type errors naming the JSON
// path, the line of each rule, and the JSON forms of decisions and of the merged policy.
#include <nlohmann/json.hpp>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

using nlohmann::json;

static std::string project_error(const std::string& text) {
    TempTree tree;
    tree.project_settings(text);
    return load_error(tree.options());
}

TEST_CASE("a file that is not JSON names line and column", "[json]") {
    TempTree tree;
    auto file = tree.project_settings("{\n  \"permissions\": {\n    \"allow\": [\"a\" \"b\"]\n  }\n}\n");
    auto e = load_error(tree.options());
    CHECK_THAT(e, Catch::StartsWith(file.string() + ":3:19: not valid JSON"));
}

TEST_CASE("a JSON error on the first line names column", "[json]") {
    TempTree tree;
    auto file = tree.project_settings("{,}");
    CHECK_THAT(load_error(tree.options()), Catch::StartsWith(file.string() + ":1:2: not valid JSON"));
}

TEST_CASE("an unterminated JSON file names the end", "[json]") {
    TempTree tree;
    auto file = tree.project_settings("{\n  \"a\": [1, 2,\n");
    auto e = load_error(tree.options());
    CHECK_THAT(e, Catch::StartsWith(file.string() + ":3:1: not valid JSON"));
}

TEST_CASE("an empty file is not JSON", "[json]") {
    TempTree tree;
    auto file = tree.project_settings("");
    CHECK_THAT(load_error(tree.options()), Catch::StartsWith(file.string() + ":1:1: not valid JSON"));
}

TEST_CASE("comments and trailing commas are not JSON", "[json]") {
    CHECK_THAT(project_error("{\"a\": 1, // c\n}"), Catch::Contains("not valid JSON"));
    CHECK_THAT(project_error("{\"a\": [1,],}"), Catch::Contains(":1:10: not valid JSON"));
}

TEST_CASE("a top level that is not an object is an error", "[json]") {
    CHECK_THAT(project_error("[1, 2]"), Catch::Contains("top level must be a JSON object, found an array"));
    CHECK_THAT(project_error("\"x\""), Catch::Contains("found a string"));
}

TEST_CASE("allowedDomains as a string is an error naming the path", "[json]") {
    auto e = project_error("{\"sandbox\": {\"network\": {\"allowedDomains\": \"example.com\"}}}");
    CHECK_THAT(e, Catch::Contains(
                      ":1: sandbox.network.allowedDomains: expected an array of strings, found a string"));
}

TEST_CASE("a number inside allowedDomains is an error naming the element", "[json]") {
    auto e = project_error("{\"sandbox\": {\"network\": {\"allowedDomains\": [\n\"a.com\",\n 42]}}}");
    CHECK_THAT(e,
               Catch::Contains(":3: sandbox.network.allowedDomains[1]: expected a string, found a number"));
}

TEST_CASE("known objects of the wrong type are errors", "[json]") {
    CHECK_THAT(project_error(R"J({"permissions": []})J"), Catch::Contains("permissions: expected an object"));
    CHECK_THAT(project_error(R"J({"sandbox": true})J"),
               Catch::Contains("sandbox: expected an object, found a boolean"));
    CHECK_THAT(project_error(R"J({"sandbox": {"network": null}})J"),
               Catch::Contains("sandbox.network: expected an object, found null"));
    CHECK_THAT(project_error(R"J({"sandbox": {"filesystem": "x"}})J"),
               Catch::Contains("sandbox.filesystem: expected"));
}

TEST_CASE("permission lists of the wrong type are errors", "[json]") {
    CHECK_THAT(project_error(R"J({"permissions": {"allow": "WebFetch(domain:a.com)"
}
})J"),
               Catch::Contains("permissions.allow: expected an array of strings"));
    CHECK_THAT(project_error(R"J({"permissions": {"deny": [{"x": 1}]}})J"),
               Catch::Contains("permissions.deny[0]: expected a string, found an object"));
}

TEST_CASE("booleans of the wrong type are errors", "[json]") {
    CHECK_THAT(
        project_error(R"J({"sandbox": {"network": {"allowAllUnixSockets": "yes"}}})J"),
        Catch::Contains("sandbox.network.allowAllUnixSockets: expected true or false, found a string"));
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": 1}}})J");
    CHECK_THAT(load_error(tree.options()),
               Catch::Contains("sandbox.network.allowManagedDomainsOnly: expected true"));
}

TEST_CASE("filesystem lists of the wrong type are errors", "[json]") {
    for (const char* key : {"allowWrite", "denyWrite", "denyRead", "allowRead"}) {
        auto e = project_error(std::string("{\"sandbox\": {\"filesystem\": {\"") + key + "\": [true]}}}");
        CHECK_THAT(e, Catch::Contains(std::string("sandbox.filesystem.") + key + "[0]: expected a string"));
    }
    CHECK_THAT(project_error(R"J({"sandbox": {"network": {"allowUnixSockets": {}}}})J"),
               Catch::Contains("sandbox.network.allowUnixSockets: expected an array"));
}

TEST_CASE("rules carry the line of their entry", "[json][lines]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({
  "permissions": {
    "allow": [
      "Bash(ls)",
      "WebFetch(domain:a.example.com)",

      "WebFetch(domain:b.example.com)"
    ],
    "deny": ["WebFetch(domain:c.example.com)"]
  },
  "sandbox": {
    "network": {
      "allowedDomains": [
        "d.example.com"
      ]
    },
    "filesystem": {"denyRead": ["~/.ssh"]}
  }
})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"*"};
    auto p = load_ok(o);
    auto line = [&](std::string_view host) { return p->decide_connect(host, 443).rule->source.line; };
    CHECK(line("a.example.com") == 5);
    CHECK(line("b.example.com") == 7);
    CHECK(line("c.example.com") == 9);
    CHECK(line("d.example.com") == 14);
    auto d = p->decide_connect("b.example.com", 443);
    CHECK(d.rule->source.file == file.string());
    CHECK(d.rule->source.where == "permissions.allow[2]");
    CHECK(d.rule->text == "WebFetch(domain:b.example.com)");
    CHECK(p->filesystem().deny_read.at(0).rule.source.line == 17);
}

TEST_CASE("lines are right for minified and escaped files", "[json][lines]") {
    TempTree tree;
    tree.project_settings(
        "{\"x\\\"\\u00e9\": [\"]\", {\"a\": \"[\"}],\n\"sandbox\":{\"network\":{\"allowedDomains\":"
        "[\"a.example.com\",\n\n\"b.example.com\"]}}}");
    auto p = load_ok(tree.options());
    CHECK(p->decide_connect("a.example.com", 443).rule->source.line == 2);
    CHECK(p->decide_connect("b.example.com", 443).rule->source.line == 4);
}

TEST_CASE("errors for entries deep in a file name their line", "[json][lines]") {
    std::string text = "{\n\"sandbox\": {\n\"network\": {\n\"allowedDomains\": [\n";
    for (int i = 0; i < 50; ++i)
        text += "\"h" + std::to_string(i) + ".example.com\",\n";
    text += "\"*.com\"\n]}}}\n";
    TempTree tree;
    auto file = tree.project_settings(text);
    auto p = load_ok(tree.options());
    REQUIRE(p->warnings().size() == 1);
    CHECK_THAT(p->warnings()[0],
               Catch::StartsWith(file.string() + ":55: sandbox.network.allowedDomains[50]: "));
}

TEST_CASE("Decision::to_json has decision, reason, rule and source", "[json]") {
    TempTree tree;
    auto file =
        tree.project_settings("{\"permissions\": {\"allow\": [\n\"WebFetch(domain:*.example.com)\"]}}");
    auto p = load_ok(tree.options());
    json allow = p->decide_connect("a.example.com", 443).to_json();
    CHECK(allow["decision"] == "allow");
    CHECK(allow["reason"] == "allowed");
    CHECK(allow["rule"] == "WebFetch(domain:*.example.com)");
    CHECK(allow["source"]["layer"] == "project");
    CHECK(allow["source"]["file"] == file.string());
    CHECK(allow["source"]["line"] == 2);
    CHECK(allow["source"]["where"] == "permissions.allow[0]");
    json deny = p->decide_connect("other.org", 443).to_json();
    CHECK(deny["decision"] == "deny");
    CHECK(deny["reason"] == "blocked-by-allowlist");
    CHECK(deny["rule"].is_null());
    CHECK(deny["source"].is_null());
}

TEST_CASE("Decision::explain names verdict, reason, rule and source", "[json]") {
    TempTree tree;
    auto file = tree.project_settings("{\"sandbox\": {\"network\": {\"deniedDomains\": [\"*.evil.com\"]}}}");
    auto p = load_ok(tree.options());
    auto text = p->decide_connect("x.evil.com", 443).explain();
    CHECK(text == "deny: blocked-by-denylist by `*.evil.com` (project " + file.string() +
                      ":1 sandbox.network.deniedDomains[0])");
    CHECK(p->decide_connect("x.org", 443).explain() == "deny: blocked-by-allowlist");
    auto flag = flags_policy({"a.example.com"})->decide_connect("a.example.com", 1).explain();
    CHECK(flag == "allow: allowed by `a.example.com` (flags --allow-domain)");
}

TEST_CASE("Policy::to_json lists every entry with its source", "[json]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
        "allowedDomains": ["m.example.com"], "allowedAddresses": ["10.0.0.0/8"]}}})J");
    auto file =
        tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:p.example.com)", "Edit(/gen)"],
        "deny": ["WebFetch(domain:bad.example.com)", "Read(~/.ssh)"]
}
, "sandbox" : {
    "network" : {
        "allowUnixSockets" : ["/run/x.sock", "~/agent.sock"], "allowAllUnixSockets" : true
    }
}
})J");
    auto p = load_ok(tree.options());
    json j = p->to_json();
    CHECK(j["network"]["allowManagedDomainsOnly"] == true);
    CHECK(j["network"]["allowAllUnixSockets"] == true);
    REQUIRE(j["network"]["allowedDomains"].size() == 1);
    CHECK(j["network"]["allowedDomains"][0]["rule"] == "m.example.com");
    CHECK(j["network"]["allowedDomains"][0]["source"]["layer"] == "managed");
    REQUIRE(j["network"]["ignoredAllowedDomains"].size() == 1);
    CHECK(j["network"]["ignoredAllowedDomains"][0]["rule"] == "WebFetch(domain:p.example.com)");
    CHECK(j["network"]["ignoredAllowedDomains"][0]["source"]["file"] == file.string());
    CHECK(j["network"]["deniedDomains"][0]["rule"] == "WebFetch(domain:bad.example.com)");
    CHECK(j["network"]["allowedAddresses"][0]["rule"] == "10.0.0.0/8");
    CHECK(j["network"]["allowUnixSockets"][0]["rule"] == "/run/x.sock");
    CHECK(j["network"]["allowUnixSockets"][0]["path"] == "/run/x.sock");
    CHECK(j["network"]["allowUnixSockets"][1]["rule"] == "~/agent.sock");
    CHECK(j["network"]["allowUnixSockets"][1]["path"] == (p->filesystem().home / "agent.sock").string());
    const json& writes = j["filesystem"]["allowWrite"];
    CHECK(writes.back()["rule"] == "Edit(/gen)");
    CHECK(writes.back()["path"] == (tree.cwd() / "gen").string());
    CHECK(writes.back()["glob"] == false);
    CHECK(writes.back()["source"]["where"] == "permissions.allow[1]");
    CHECK(j["filesystem"]["denyRead"][0]["path"] == (tree.home() / ".ssh").string());
    CHECK(j["filesystem"]["allowRead"].empty());
    CHECK(j["filesystem"]["denyWrite"].size() >= 15);
    CHECK(j["filesRead"].size() == 2);
    CHECK(j["warnings"].empty());
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

TEST_CASE("a UTF-8 byte order mark is accepted and lines stay right", "[json][lines]") {
    TempTree tree;
    tree.project_settings(
        "\xEF\xBB\xBF{\n\"sandbox\": {\"network\": {\"allowedDomains\": [\n\"a.example.com\"]}}}");
    auto p = load_ok(tree.options());
    auto d = p->decide_connect("a.example.com", 443);
    REQUIRE(d.rule);
    CHECK(d.rule->source.line == 3);
}

TEST_CASE("deeply nested unknown keys neither crash nor shift lines", "[json][lines]") {
    std::string deep = std::string(20000, '[') + std::string(20000, ']');
    TempTree tree;
    tree.project_settings(
        "{\"unknown\": " + deep + ",\n\"odd\": {\"s\": \"]]}}\\\"[[\"},\n" +
        "\"sandbox\": {\"network\": {\"allowedDomains\": [\"a.example.com\",\n\"b.example.com\"]}}}");
    auto p = load_ok(tree.options());
    CHECK(p->decide_connect("a.example.com", 443).rule->source.line == 3);
    CHECK(p->decide_connect("b.example.com", 443).rule->source.line == 4);
}

TEST_CASE("directories in managed-settings.d are skipped", "[layers]") {
    TempTree tree;
    fs::create_directories(tree.managed() / "managed-settings.d/dir.json");
    tree.write(tree.managed() / "managed-settings.d/a.json", allowed_domains_json(R"J(["a.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(p->files_read().size() == 1);
    CHECK(allows(p, "a.example.com"));
}

}  // namespace cordon::policy::test
