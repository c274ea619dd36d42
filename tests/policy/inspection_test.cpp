// The inspection keys (issue 13): sandbox.network.inspect / requestRules / tlsTerminate / parentProxy and
// credentials, read from settings files and flags, and their matching.
#include "policy/inspection.hpp"

#include "test_support.hpp"

using namespace cordon::policy;
using namespace cordon::policy::test;

namespace {

const InspectionPolicy& inspection(const PolicyPtr& p) {
    return *p->network().inspection;
}

}  // namespace

TEST_CASE("request rules: deny wins - a host with rules and no match is denied - other hosts pass") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "api.github.com", "methods": ["get"], "paths": ["/repos/acme/**"], "action": "allow"},
        {"host": "api.github.com", "paths": ["/repos/acme/secret/**"], "action": "deny"},
        {"host": "*.example.com", "methods": ["POST"], "paths": ["/v1/*"], "action": "allow"}
    ]}}})");
    auto p = load_ok(tree.options());
    const auto& i = inspection(p);
    REQUIRE(i.request_rules.size() == 3);
    auto d = i.decide_request("api.github.com", 443, "GET", "/repos/acme/app/pulls?state=open");
    CHECK(d.allowed);
    REQUIRE(d.rule);
    CHECK(d.rule->host.rule.source.line == 2);
    d = i.decide_request("api.github.com", 443, "GET", "/repos/acme/secret/x");
    CHECK_FALSE(d.allowed);
    REQUIRE(d.rule);
    CHECK_FALSE(d.rule->allow);
    d = i.decide_request("api.github.com", 443, "POST", "/gists");
    CHECK_FALSE(d.allowed);
    CHECK(d.rule == nullptr);
    CHECK(i.decide_request("a.example.com", 443, "POST", "/v1/x").allowed);
    CHECK_FALSE(i.decide_request("a.example.com", 443, "POST", "/v1/x/y").allowed);  // * stays in a segment
    CHECK(i.decide_request("unrelated.org", 443, "DELETE", "/").allowed);
    CHECK(i.decide_request("unrelated.org", 443, "DELETE", "/").rule == nullptr);
}

TEST_CASE("request rule globs: * within a segment - ** across - ? one character") {
    CHECK(glob_matches("/a/*", "/a/b"));
    CHECK_FALSE(glob_matches("/a/*", "/a/b/c"));
    CHECK(glob_matches("/a/**", "/a/b/c"));
    CHECK(glob_matches("/a/?x", "/a/bx"));
    CHECK_FALSE(glob_matches("/a/?x", "/a//x"));
    CHECK(glob_matches("/**/z", "/a/b/z"));
}

TEST_CASE("inspect / --inspect / tlsTerminate with excludeDomains decide which hosts are inspected") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"inspect": ["*.github.com"]}}})");
    auto o = tree.options();
    o.inspect = {"example.org:8443"};
    auto p = load_ok(o);
    CHECK(inspection(p).inspects("api.github.com", 443));
    CHECK_FALSE(inspection(p).inspects("github.com", 443));
    CHECK(inspection(p).inspects("example.org", 8443));
    CHECK_FALSE(inspection(p).inspects("example.org", 443));

    TempTree srt;
    auto file = srt.write("srt.json", R"({"network": {"allowedDomains": ["example.com"], "tlsTerminate": {
        "caCertPath": "/ca.pem", "caKeyPath": "/ca.key", "excludeDomains": ["*.bank.com"],
        "extraCaCertPaths": ["/corp.pem"], "refuseOpaqueTunnels": true}}})");
    auto so = srt.options();
    so.settings_files = {file};
    auto q = load_ok(so);
    const auto& i = inspection(q);
    CHECK(i.terminate_all);
    CHECK(i.inspects("anything.org", 443));
    CHECK_FALSE(i.inspects("www.bank.com", 443));
    CHECK(i.ca_cert_path == "/ca.pem");
    CHECK(i.extra_ca_paths == std::vector<std::string>{"/corp.pem"});
    CHECK(i.refuse_opaque_tunnels);
}

TEST_CASE("bad inspection entries: a bad deny rule or inspect pattern stops the load naming file and entry") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "*.com*", "action": "deny"}]}}})");
    auto e = load_error(tree.options());
    CHECK(e.find("settings.json:2") != std::string::npos);
    CHECK(e.find("requestRules[0].host") != std::string::npos);
    tree.project_settings(
        R"({"sandbox": {"network": {"requestRules": [{"host": "a.com", "action": "maybe"}]}}})");
    CHECK(load_error(tree.options()).find("action") != std::string::npos);
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [{"host": "a.com", "paths": ["x"],
        "action": "allow"}]}}})");
    CHECK(load_error(tree.options()).find("starts with /") != std::string::npos);
    auto o = tree.options();
    tree.project_settings("{}");
    o.inspect = {"*.com*"};
    CHECK(load_error(o).find("--inspect") != std::string::npos);
}

TEST_CASE("credentials: envVars with modes and injectHosts - files in deny mode join denyRead") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"credentials": {
        "envVars": [{"name": "GITHUB_TOKEN", "mode": "mask", "injectHosts": ["API.GitHub.com"],
                     "headers": ["X-Custom-Auth"]},
                    {"name": "AWS_SECRET_ACCESS_KEY", "mode": "deny"}],
        "files": [{"path": "~/.aws/credentials", "mode": "deny"}]},
        "network": {"parentProxy": {"https": "http://proxy.corp:3128", "noProxy": "corp.internal"}}}})");
    auto p = load_ok(tree.options());
    const auto& i = inspection(p);
    REQUIRE(i.secrets.size() == 2);
    CHECK(i.secrets[0].mask);
    CHECK(i.secrets[0].inject_hosts == std::vector<std::string>{"api.github.com"});
    CHECK(i.secrets[0].headers == std::vector<std::string>{"X-Custom-Auth"});
    CHECK_FALSE(i.secrets[1].mask);
    CHECK(p->decide_read(tree.home() / ".aws/credentials").verdict == Verdict::Deny);
    CHECK(i.parent_proxy.https == "http://proxy.corp:3128");
    CHECK(i.parent_proxy.no_proxy == "corp.internal");
}

TEST_CASE("credentials: a secret's headers must be header names") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"credentials": {
        "envVars": [{"name": "T", "mode": "mask", "injectHosts": ["a.test"], "headers": ["X-Auth: x"]}]}}})");
    CHECK(load_error(tree.options()).find("invalid header name") != std::string::npos);
}

TEST_CASE("request rules match the path a server may see - dot segments are refused") {
    std::string why;
    CHECK(rule_path("/a%2Fb?x=/../", why) == "/a/b");
    CHECK(rule_path("/a\\b", why) == "/a/b");
    CHECK(rule_path("/public/%73ecret", why) == "/public/secret");
    CHECK_FALSE(rule_path("/repos/acme/../../gists", why));
    CHECK(why.find("dot segments") != std::string::npos);
    CHECK_FALSE(rule_path("/repos/acme/%2e%2e/x", why));
    CHECK_FALSE(rule_path("/a/./b", why));
    CHECK_FALSE(rule_path("/a/..", why));
    CHECK_FALSE(rule_path("/a%00b", why));
    CHECK(rule_path("/a/..b/.c", why) == "/a/..b/.c");
}

TEST_CASE("request rules refuse a target that starts with two separators - URL parsers read a host there") {
    std::string why;
    for (const char* target :
         {"//evil/repos/acme/secrets/x", "/\\evil/x", "///x", "/%2fevil/x", "/%5Cevil/x", "//"}) {
        why.clear();
        CHECK_FALSE(rule_path(target, why));
        CHECK(why.find("'//'") != std::string::npos);
    }
    CHECK(rule_path("/", why) == "/");
    CHECK(rule_path("/a//b", why) == "/a/b");
}

TEST_CASE("request rules see empty segments merged and encoded separators as separators") {
    std::string why;
    CHECK(rule_path("/repos/acme//secrets/x", why) == "/repos/acme/secrets/x");
    CHECK(rule_path("/repos///acme/secrets/x", why) == "/repos/acme/secrets/x");
    CHECK(rule_path("/repos/acme/%2fsecrets/x", why) == "/repos/acme/secrets/x");
    CHECK(rule_path("/repos/acme/%5Csecrets/x", why) == "/repos/acme/secrets/x");
    CHECK(rule_path("/repos/acme\\\\secrets/x", why) == "/repos/acme/secrets/x");
    CHECK_FALSE(rule_path("/repos/acme/secrets/x#y", why));
    CHECK(why.find("'#'") != std::string::npos);
    CHECK(rule_path("/a?b#c", why) == "/a");
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "api.test", "paths": ["/repos/acme/**"], "action": "allow"},
        {"host": "api.test", "paths": ["/repos/acme/secrets/x"], "action": "deny"}
    ]}}})");
    auto p = load_ok(tree.options());
    const auto& i = inspection(p);
    CHECK_FALSE(i.decide_request("api.test", 443, "GET", "/repos/acme/secrets/x/").allowed);
    CHECK_FALSE(i.decide_request("api.test", 443, "GET", "/repos/acme/secrets/x//").allowed);
    CHECK(i.decide_request("api.test", 443, "GET", "/repos/acme/secrets/").allowed);
}

TEST_CASE("request rules read an encoded separator both ways - deny on either, allow only on both") {
    std::string why;
    auto p = rule_paths("/repos/acme%2fx/secrets", why);
    REQUIRE(p);
    CHECK(p->separated == "/repos/acme/x/secrets");
    CHECK(p->literal == "/repos/acme%2fx/secrets");
    p = rule_paths("/a%5Cb\\c//d%2F%2Fe", why);
    REQUIRE(p);
    CHECK(p->separated == "/a/b/c/d/e");
    CHECK(p->literal == "/a%5Cb\\c/d%2F%2Fe");
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "api.test", "paths": ["/**"], "action": "allow"},
        {"host": "api.test", "paths": ["/repos/*/secrets"], "action": "deny"},
        {"host": "gitlab.test", "paths": ["/api/v4/projects/**", "/repos/acme/**"], "action": "allow"}
    ]}}})");
    auto policy = load_ok(tree.options());
    const auto& i = inspection(policy);
    auto decide = [&](const char* host, const char* target) {
        auto paths = rule_paths(target, why);
        REQUIRE(paths);
        return i.decide_request(host, 443, "GET", *paths);
    };
    // Express's `/repos/:owner/secrets` takes `acme%2fx` for the owner.
    for (const char* target : {"/repos/acme%2fx/secrets", "/repos/acme%2Fx/secrets",
                               "/repos/acme%5cx/secrets", "/repos/acme\\x/secrets", "/repos/acme/secrets"})
        CHECK_FALSE(decide("api.test", target).allowed);
    CHECK(decide("api.test", "/repos/acme/x/y").allowed);
    // An allow rule must hold for both readings: `**` does, a path that differs in one reading does not.
    CHECK(decide("gitlab.test", "/api/v4/projects/group%2Fproject/issues").allowed);
    CHECK(decide("gitlab.test", "/repos/acme/x").allowed);
    CHECK_FALSE(decide("gitlab.test", "/repos%2Facme/x").allowed);
}

TEST_CASE("request rules: deny rules match without regard to case, allow rules exactly") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "api.test", "paths": ["/Repos/**", "/admin"], "action": "allow"},
        {"host": "api.test", "paths": ["/admin", "/Repos/*/Secrets/**"], "action": "deny"}
    ]}}})");
    auto p = load_ok(tree.options());
    const auto& i = inspection(p);
    for (const char* path : {"/admin", "/ADMIN", "/Admin/", "/repos/acme/secrets/x", "/REPOS/acme/SECRETS/x"})
        CHECK_FALSE(i.decide_request("api.test", 443, "GET", path).allowed);
    CHECK(i.decide_request("api.test", 443, "GET", "/Repos/acme/x").allowed);
    auto d = i.decide_request("api.test", 443, "GET", "/repos/acme/x");
    CHECK_FALSE(d.allowed);
    CHECK(d.rule == nullptr);  // no allow rule matched: /Repos/** is exact
}

TEST_CASE(
    "request rules: a deny rule that names GET holds for HEAD - an allow rule for GET does not allow HEAD") {
    TempTree tree;
    tree.project_settings(R"({"sandbox": {"network": {"requestRules": [
        {"host": "api.test", "methods": ["GET"], "paths": ["/**"], "action": "allow"},
        {"host": "api.test", "methods": ["GET"], "paths": ["/report"], "action": "deny"}
    ]}}})");
    auto p = load_ok(tree.options());
    const auto& i = inspection(p);
    CHECK_FALSE(i.decide_request("api.test", 443, "GET", "/report").allowed);
    auto d = i.decide_request("api.test", 443, "HEAD", "/report");
    CHECK_FALSE(d.allowed);
    CHECK(d.rule);
    CHECK(i.decide_request("api.test", 443, "GET", "/other").allowed);
    CHECK_FALSE(i.decide_request("api.test", 443, "HEAD", "/other").allowed);
}
