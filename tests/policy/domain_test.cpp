// Domain semantics (DESIGN.md "Reference semantics", domains): case, trailing dot, IDN, wildcards, ports, IP
// literals, deny over allow, unknown = deny, and every rejected pattern.
#include <atomic>
#include <thread>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

TEST_CASE("exact domain matches itself and nothing else", "[domain]") {
    auto p = flags_policy({"example.com"});
    CHECK(allows(p, "example.com"));
    CHECK_FALSE(allows(p, "www.example.com"));
    CHECK_FALSE(allows(p, "example.org"));
    CHECK_FALSE(allows(p, "notexample.com"));
    CHECK_FALSE(allows(p, "example.com.evil.net"));
}

TEST_CASE("domain matching is case-insensitive in patterns and hosts", "[domain]") {
    auto p = flags_policy({"GitHub.COM"});
    CHECK(allows(p, "github.com"));
    CHECK(allows(p, "GITHUB.com"));
    CHECK(p->network().allowed_domains.at(0).text == "GitHub.COM");
}

TEST_CASE("a trailing dot is ignored in hosts and patterns", "[domain]") {
    auto p = flags_policy({"example.com."});
    CHECK(allows(p, "example.com"));
    CHECK(allows(p, "example.com."));
    auto q = flags_policy({"example.org"});
    CHECK(allows(q, "example.org."));
    CHECK_FALSE(allows(q, "example.org.."));
}

TEST_CASE("IDN patterns and hosts are compared in punycode", "[domain]") {
    auto p = flags_policy({"bücher.de"});
    CHECK(allows(p, "xn--bcher-kva.de"));
    CHECK(allows(p, "bücher.de"));
    CHECK(allows(p, "BÜCHER.de"));
    auto q = flags_policy({"xn--bcher-kva.de"});
    CHECK(allows(q, "bücher.de"));
}

TEST_CASE("IDN wildcard patterns match punycode subdomains", "[domain]") {
    auto p = flags_policy({"*.bücher.de"});
    CHECK(allows(p, "shop.xn--bcher-kva.de"));
    CHECK(allows(p, "shop.bücher.de"));
    CHECK_FALSE(allows(p, "bücher.de"));
}

TEST_CASE("*.example.com matches subdomains at any depth", "[domain]") {
    auto p = flags_policy({"*.example.com"});
    CHECK(allows(p, "a.example.com"));
    CHECK(allows(p, "a.b.example.com"));
    CHECK(allows(p, "x.y.z.w.example.com"));
}

TEST_CASE("*.example.com does not match example.com itself", "[domain]") {
    auto p = flags_policy({"*.example.com"});
    CHECK_FALSE(allows(p, "example.com"));
    CHECK_FALSE(allows(p, "badexample.com"));
    CHECK_FALSE(allows(p, "example.com.evil.org"));
}

TEST_CASE("WebFetch(domain:*) matches every name", "[domain]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:*)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(allows(p, "anything.example"));
    CHECK(allows(p, "localhost"));
    CHECK(allows(p, "a.b.c.d.e"));
    auto d = p->decide_connect("x.org", 80);
    REQUIRE(d.rule);
    CHECK(d.rule->text == "WebFetch(domain:*)");
}

TEST_CASE("* never matches IP literals", "[domain]") {
    auto p = flags_policy({"*"});
    CHECK_FALSE(allows(p, "127.0.0.1"));
    CHECK_FALSE(allows(p, "10.1.2.3"));
    CHECK_FALSE(allows(p, "::1"));
    CHECK_FALSE(allows(p, "[2001:db8::1]"));
}

TEST_CASE("an inner * matches exactly one label", "[domain]") {
    auto p = flags_policy({"api.*.example.com"});
    CHECK(allows(p, "api.eu.example.com"));
    CHECK(allows(p, "api.us.example.com"));
    CHECK_FALSE(allows(p, "api.example.com"));
    CHECK_FALSE(allows(p, "api.a.b.example.com"));
    CHECK_FALSE(allows(p, "x.api.eu.example.com"));
}

TEST_CASE("*.*.example.com needs at least two labels below", "[domain]") {
    auto p = flags_policy({"*.*.example.com"});
    CHECK_FALSE(allows(p, "a.example.com"));
    CHECK(allows(p, "a.b.example.com"));
    CHECK(allows(p, "a.b.c.example.com"));
}

TEST_CASE("a pattern with a port matches only that port", "[domain]") {
    auto p = flags_policy({"example.com:8443"});
    CHECK(allows(p, "example.com", 8443));
    CHECK_FALSE(allows(p, "example.com", 443));
    CHECK_FALSE(allows(p, "example.com", 80));
}

TEST_CASE("a pattern without a port matches every port", "[domain]") {
    auto p = flags_policy({"example.com"});
    CHECK(allows(p, "example.com", 1));
    CHECK(allows(p, "example.com", 80));
    CHECK(allows(p, "example.com", 65535));
}

TEST_CASE("wildcard patterns can carry a port", "[domain]") {
    auto p = flags_policy({"*.example.com:443", "*:8080"});
    CHECK(allows(p, "a.example.com", 443));
    CHECK_FALSE(allows(p, "a.example.com", 80));
    CHECK(allows(p, "other.net", 8080));
    CHECK_FALSE(allows(p, "other.net", 8081));
}

TEST_CASE("IPv4 literals match exactly", "[domain]") {
    auto p = flags_policy({"192.0.2.10"});
    CHECK(allows(p, "192.0.2.10"));
    CHECK_FALSE(allows(p, "192.0.2.11"));
    CHECK_FALSE(allows(p, "192.0.2.1"));
}

TEST_CASE("IPv4 literal with a port", "[domain]") {
    auto p = flags_policy({"127.0.0.1:8080"});
    CHECK(allows(p, "127.0.0.1", 8080));
    CHECK_FALSE(allows(p, "127.0.0.1", 8081));
}

TEST_CASE("localhost does not match 127.0.0.1 and vice versa", "[domain]") {
    auto p = flags_policy({"localhost"});
    CHECK(allows(p, "localhost"));
    CHECK_FALSE(allows(p, "127.0.0.1"));
    CHECK_FALSE(allows(p, "::1"));
    auto q = flags_policy({"127.0.0.1"});
    CHECK_FALSE(allows(q, "localhost"));
}

TEST_CASE("bracketed IPv6 with port matches in canonical form", "[domain]") {
    auto p = flags_policy({"[::1]:443"});
    CHECK(allows(p, "::1", 443));
    CHECK(allows(p, "[::1]", 443));
    CHECK(allows(p, "0:0:0:0:0:0:0:1", 443));
    CHECK_FALSE(allows(p, "::1", 80));
}

TEST_CASE("bracketed IPv6 without port matches every port", "[domain]") {
    auto p = flags_policy({"[2001:DB8:0:0::1]"});
    CHECK(allows(p, "2001:db8::1", 1));
    CHECK(allows(p, "[2001:db8::1]", 443));
    CHECK_FALSE(allows(p, "2001:db8::2", 443));
}

TEST_CASE("wildcards never match IP literals", "[domain]") {
    auto p = flags_policy({"*.example.com", "*", "api.*.example.com"});
    CHECK_FALSE(allows(p, "127.0.0.1"));
    CHECK_FALSE(allows(p, "::ffff:127.0.0.1"));
}

TEST_CASE("wildcard patterns over IP addresses are rejected", "[domain][reject]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_domains = {"*.0.0.1"};
    CHECK_THAT(load_error(o), Catch::Contains("IP addresses"));
}

TEST_CASE("numeric-looking hosts that are not dotted quads are refused", "[domain]") {
    auto p = flags_policy({"*"});
    CHECK_FALSE(allows(p, "127.1"));
    CHECK_FALSE(allows(p, "2130706433"));
    CHECK_FALSE(allows(p, "1.2.3.4.5"));
}

TEST_CASE("invalid hosts are denied without a rule", "[domain]") {
    auto p = flags_policy({"*"});
    for (const char* host : {"", "a..b", "exa mple.com", "a/b", "[::1", "x@y.com", ".", ".."}) {
        auto d = p->decide_connect(host, 443);
        CHECK_FALSE(d.allowed());
        CHECK(d.reason == Reason::BlockedByAllowlist);
        CHECK_FALSE(d.rule);
    }
}

TEST_CASE("deny beats allow for the same host", "[domain]") {
    auto p = flags_policy({"*.example.com"}, {"bad.example.com"});
    CHECK(allows(p, "good.example.com"));
    auto d = p->decide_connect("bad.example.com", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByDenylist);
    REQUIRE(d.rule);
    CHECK(d.rule->text == "bad.example.com");
}

TEST_CASE("a deny wildcard beats a more specific allow", "[domain]") {
    auto p = flags_policy({"api.example.com"}, {"*.example.com"});
    auto d = p->decide_connect("api.example.com", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByDenylist);
}

TEST_CASE("a deny with a port only denies that port", "[domain]") {
    auto p = flags_policy({"example.com"}, {"example.com:80"});
    CHECK(allows(p, "example.com", 443));
    CHECK_FALSE(allows(p, "example.com", 80));
}

TEST_CASE("a host in neither list is denied by the allowlist", "[domain]") {
    auto p = flags_policy({"example.com"});
    auto d = p->decide_connect("other.org", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByAllowlist);
    CHECK_FALSE(d.rule);
}

TEST_CASE("no settings at all denies every host", "[domain]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    CHECK_FALSE(allows(p, "example.com"));
    CHECK_FALSE(allows(p, "127.0.0.1"));
    CHECK(p->network().allowed_domains.empty());
}

TEST_CASE("an allowed decision carries the rule text", "[domain]") {
    auto p = flags_policy({"*.example.com"});
    auto d = p->decide_connect("a.example.com", 443);
    CHECK(d.allowed());
    CHECK(d.reason == Reason::AllowedByRule);
    REQUIRE(d.rule);
    CHECK(d.rule->text == "*.example.com");
    CHECK(d.rule->source.layer == Layer::Flags);
    CHECK(d.rule->source.where == "--allow-domain");
}

TEST_CASE("the first matching rule in precedence order is reported", "[domain]") {
    TempTree tree;
    tree.managed_settings(allowed_domains_json(R"J(["*.example.com"])J"));
    LoadOptions o = tree.options();
    o.allow_domains = {"api.example.com"};
    auto p = load_ok(o);
    auto d = p->decide_connect("api.example.com", 443);
    REQUIRE(d.rule);
    CHECK(d.rule->source.layer == Layer::Managed);
}

TEST_CASE("underscores and digits in labels are accepted", "[domain]") {
    auto p = flags_policy({"_dmarc.example.com", "1password.com", "a-b.c-d.io"});
    CHECK(allows(p, "_dmarc.example.com"));
    CHECK(allows(p, "1password.com"));
    CHECK(allows(p, "A-B.c-d.io"));
}

TEST_CASE("many patterns sharing suffixes stay distinct", "[domain]") {
    std::vector<std::string> allow;
    for (int i = 0; i < 2000; ++i)
        allow.push_back("h" + std::to_string(i) + ".shared.example.com");
    allow.push_back("*.w.shared.example.com");
    auto p = flags_policy(allow);
    CHECK(allows(p, "h0.shared.example.com"));
    CHECK(allows(p, "h1999.shared.example.com"));
    CHECK_FALSE(allows(p, "h2000.shared.example.com"));
    CHECK(allows(p, "x.w.shared.example.com"));
    CHECK_FALSE(allows(p, "w.shared.example.com"));
    CHECK_FALSE(allows(p, "shared.example.com"));
}

// ---- rejected patterns
// -------------------------------------------------------------------------------------

static std::string flag_error(const std::string& pattern) {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_domains = {pattern};
    return load_error(o);
}

TEST_CASE("*.com is rejected (wildcard over a top-level domain)", "[domain][reject]") {
    auto e = flag_error("*.com");
    CHECK_THAT(e, Catch::Contains("--allow-domain") && Catch::Contains("\"*.com\"") &&
                      Catch::Contains("top-level domain"));
}

TEST_CASE("api.*.com and *.*.com are rejected", "[domain][reject]") {
    CHECK_THAT(flag_error("api.*.com"), Catch::Contains("top-level domain"));
    CHECK_THAT(flag_error("*.*.com"), Catch::Contains("top-level domain"));
}

TEST_CASE("*example.com is rejected (partial-label wildcard)", "[domain][reject]") {
    CHECK_THAT(flag_error("*example.com"), Catch::Contains("whole label"));
    CHECK_THAT(flag_error("api-*.example.com"), Catch::Contains("whole label"));
    CHECK_THAT(flag_error("**.example.com"), Catch::Contains("whole label"));
}

TEST_CASE("exa mple.com is rejected (bad characters)", "[domain][reject]") {
    CHECK_THAT(flag_error("exa mple.com"), Catch::Contains("invalid character ' '"));
    CHECK_THAT(flag_error("exa!mple.com"), Catch::Contains("invalid character '!'"));
    CHECK_THAT(flag_error("a..b.com"), Catch::Contains("empty label"));
    CHECK_THAT(flag_error(".example.com"), Catch::Contains("empty label"));
}

TEST_CASE("host:0 and host:65536 are rejected", "[domain][reject]") {
    CHECK_THAT(flag_error("host.example:0"), Catch::Contains("port '0' is out of range (1..65535)"));
    CHECK_THAT(flag_error("host.example:0443"), Catch::Contains("leading zero"));
    CHECK_THAT(flag_error("host.example:65536"), Catch::Contains("port"));
    CHECK_THAT(flag_error("host.example:"), Catch::Contains("port"));
    CHECK_THAT(flag_error("host.example:https"), Catch::Contains("port"));
    CHECK_THAT(flag_error("[::1]:0"), Catch::Contains("port"));
}

TEST_CASE("https://x.com is rejected (scheme)", "[domain][reject]") {
    CHECK_THAT(flag_error("https://x.com"), Catch::Contains("URL") && Catch::Contains("\"https://x.com\""));
    CHECK_THAT(flag_error("x.com/path"), Catch::Contains("path"));
}

TEST_CASE("the empty pattern is rejected", "[domain][reject]") {
    CHECK_THAT(flag_error(""), Catch::Contains("empty"));
    CHECK_THAT(flag_error("."), Catch::Contains("empty"));
}

TEST_CASE("malformed IP patterns are rejected", "[domain][reject]") {
    CHECK_THAT(flag_error("[::g]"), Catch::Contains("IPv6"));
    CHECK_THAT(flag_error("[::1"), Catch::Contains("'['"));
    CHECK_THAT(flag_error("[::1]x"), Catch::Contains("after ']'"));
    CHECK_THAT(flag_error("1.2.3.256"), Catch::Contains("IPv4"));
    CHECK_THAT(flag_error("1.2.3"), Catch::Contains("dotted-quad IPv4"));
}

TEST_CASE("over-long labels and names are rejected", "[domain][reject]") {
    CHECK_THAT(flag_error(std::string(64, 'a') + ".com"), Catch::Contains("63"));
    std::string longname;
    for (int i = 0; i < 60; ++i)
        longname += "abcd.";
    longname += "com";
    CHECK_THAT(flag_error(longname), Catch::Contains("253"));
}

TEST_CASE("deny-domain flag errors name the flag", "[domain][reject]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_domains = {"*.org"};
    CHECK_THAT(load_error(o), Catch::Contains("--deny-domain \"*.org\""));
}

TEST_CASE("invalid patterns in a settings file name file, JSON path and entry", "[domain][reject]") {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"*.com", "top-level"},
        {"*example.com", "wildcard"},
        {"exa mple.com", "invalid character"},
        {"host.example:0", "port"},
        {"host.example:65536", "port"},
        {"https://x.com", "URL"},
        {"", "empty"},
    };
    for (const auto& [pattern, why] : cases) {
        // A deny entry cordon cannot interpret stops the load; an allow entry is skipped with a warning.
        for (const std::string list : {"deniedDomains", "allowedDomains"}) {
            TempTree tree;
            auto file = tree.project_settings("{\n  \"sandbox\": {\n    \"network\": {\n      \"" + list +
                                              "\": [\n        \"ok.example.com\",\n        \"" + pattern +
                                              "\"\n      ]\n    }\n  }\n}\n");
            std::string e;
            if (list == "deniedDomains") {
                e = load_error(tree.options());
            } else {
                auto p = load_ok(tree.options());
                REQUIRE(p->warnings().size() == 1);
                e = p->warnings()[0];
                CHECK(p->network().allowed_domains.size() == 1);
            }
            INFO(e);
            CHECK_THAT(e, Catch::StartsWith(file.string() + ":6: sandbox.network." + list + "[1]: "));
            CHECK_THAT(e, Catch::Contains("\"" + pattern + "\""));
            CHECK_THAT(e, Catch::Contains(why));
        }
    }
}

TEST_CASE("invalid WebFetch rules name the rule", "[domain][reject]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"permissions": {"deny": ["Bash(rm)", "WebFetch(domain:*.net)"]
}
})J");
    auto e = load_error(tree.options());
    CHECK_THAT(e, Catch::StartsWith(file.string() + ":1: permissions.deny[1]: "));
    CHECK_THAT(e, Catch::Contains("\"WebFetch(domain:*.net)\""));
}

TEST_CASE("WebFetch rules without domain: are rejected", "[domain][reject]") {
    // A deny rule cordon cannot read stops the load; an allow rule is skipped with a warning.
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["WebFetch(https://x.com)"]
}
})J");
    CHECK_THAT(load_error(tree.options()), Catch::Contains("domain:PATTERN"));
    TempTree tree2;
    tree2.project_settings(R"J({"permissions": {"deny": ["WebFetch(domain:x.com"]}})J");
    CHECK_THAT(load_error(tree2.options()), Catch::Contains("missing ')'"));
    TempTree tree3;
    tree3.project_settings(
        R"J({"permissions": {"allow": ["WebFetch(https://x.com)", "WebFetch(domain:x.com"]}})J");
    auto p = load_ok(tree3.options());
    REQUIRE(p->warnings().size() == 2);
    CHECK_THAT(p->warnings()[0], Catch::Contains("skipped") && Catch::Contains("domain:PATTERN"));
    CHECK_THAT(p->warnings()[1], Catch::Contains("skipped") && Catch::Contains("missing ')'"));
    CHECK(p->network().allowed_domains.empty());
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

TEST_CASE("several rules for one name: port rules and the first rule in order", "[domain]") {
    auto p = flags_policy({"a.example.com:80", "a.example.com", "a.example.com:8080", "a.example.com"});
    auto d80 = p->decide_connect("a.example.com", 80);
    REQUIRE(d80.rule);
    CHECK(p->network().allowed_domains[0].text == "a.example.com:80");
    CHECK(d80.rule->text == "a.example.com:80");
    auto d443 = p->decide_connect("a.example.com", 443);
    REQUIRE(d443.rule);
    CHECK(d443.rule->text == "a.example.com");
    CHECK(d443.rule->source.where == "--allow-domain");
    auto q = flags_policy({"b.example.com", "b.example.com:8080"});
    CHECK(q->decide_connect("b.example.com", 8080).rule->text == "b.example.com");
    CHECK(q->decide_connect("b.example.com", 1).rule->text == "b.example.com");
    auto r = flags_policy({"c.example.com:8080", "c.example.com:9090"});
    CHECK(allows(r, "c.example.com", 9090));
    CHECK_FALSE(allows(r, "c.example.com", 443));
}

TEST_CASE("patterns with many labels grow the trie without losing entries", "[domain]") {
    std::vector<std::string> allow;
    for (int i = 0; i < 300; ++i) {
        std::string name;
        for (int k = 0; k < 12; ++k)
            name += "l" + std::to_string(i) + "-" + std::to_string(k) + ".";
        allow.push_back(name + "example.com");
    }
    allow.push_back("*.averyveryverylonglabelname.example.com");  // a label longer than the inline slot space
    auto p = flags_policy(allow);
    for (const auto& name : allow) {
        if (name[0] == '*') continue;
        CHECK(allows(p, name));
        CHECK_FALSE(allows(p, "x." + name));
    }
    CHECK(allows(p, "x.averyveryverylonglabelname.example.com"));
    CHECK_FALSE(allows(p, "x.averyveryverylonglabelnamf.example.com"));
}

TEST_CASE("IP literal rules with and without ports", "[domain]") {
    auto p = flags_policy({"10.0.0.1:22", "10.0.0.1:80", "[::1]", "[::1]:443"}, {"10.0.0.1:23"});
    CHECK(allows(p, "10.0.0.1", 22));
    CHECK(allows(p, "10.0.0.1", 80));
    CHECK_FALSE(allows(p, "10.0.0.1", 23));
    CHECK_FALSE(allows(p, "10.0.0.1", 443));
    CHECK(p->decide_connect("::1", 443).rule->text == "[::1]");
}

TEST_CASE("a bare IPv6 pattern without brackets is accepted", "[domain]") {
    auto p = flags_policy({"2001:db8::5"});
    CHECK(allows(p, "[2001:db8::5]", 443));
    CHECK(allows(p, "2001:0db8:0000::5", 80));
}

TEST_CASE("decisions are the same from many threads", "[domain]") {
    auto p = flags_policy({"*.example.com", "api.*.example.org"}, {"bad.example.com"});
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            for (int i = 0; i < 2000; ++i) {
                if (!p->decide_connect("a" + std::to_string(i) + ".example.com", 443).allowed()) ++wrong;
                if (p->decide_connect("bad.example.com", 443).allowed()) ++wrong;
                if (!p->decide_connect("api.x.example.org", 443).allowed()) ++wrong;
                if (p->decide_connect("example.com", 443).allowed()) ++wrong;
            }
        });
    }
    for (auto& thread : threads)
        thread.join();
    CHECK(wrong == 0);
}

}  // namespace cordon::policy::test
