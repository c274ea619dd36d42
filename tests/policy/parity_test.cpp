// srt and Claude Code parity, and "never fail open" (issue 9): overly broad entries, invalid deny entries,
// Claude Code's one-label `*`, srt's validation of allowedDomains / deniedDomains, IPv4 literals in any
// inet_aton spelling, warnings for keys and rules cordon does not honour, allowGitConfig, and the one parser
// per grammar (policy/syntax.hpp).
#include <arpa/inet.h>
#include <sys/socket.h>

#include <random>

#include <nlohmann/json.hpp>

#include "policy/syntax.hpp"
#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

namespace {

std::string flag_error(const std::string& pattern, bool allow = true) {
    TempTree tree;
    LoadOptions o = tree.options();
    (allow ? o.allow_domains : o.deny_domains) = {pattern};
    return load_error(o);
}

bool warned(const PolicyPtr& p, const std::string& needle) {
    for (const auto& w : p->warnings())
        if (w.find(needle) != std::string::npos) return true;
    return false;
}

std::string all_warnings(const PolicyPtr& p) {
    std::string out;
    for (const auto& w : p->warnings())
        out += w + "\n";
    return out;
}

}  // namespace

// ---- fails open today ------------------------------------------------------------------------------------

TEST_CASE("the flag --allow-domain '*.' is refused, not read as every host", "[parity][failopen]") {
    CHECK_THAT(flag_error("*."), Catch::Contains("overly broad"));
    CHECK_THAT(flag_error("*.:443"), Catch::Contains("overly broad"));
    CHECK_THAT(flag_error("*.", false), Catch::Contains("overly broad"));
    CHECK_THAT(flag_error("*.*"), Catch::Contains("overly broad"));
}

TEST_CASE("allowedDomains entry '*.' in srt and Claude Code files is skipped with a warning",
          "[parity][failopen]") {
    for (const std::string text :
         {R"J({"network": {"allowedDomains": ["*.", "ok.example.com"]}})J",
          R"J({"sandbox": {"network": {"allowedDomains": ["*.", "ok.example.com"]}}})J",
          R"J({"permissions": {"allow": ["WebFetch(domain:*.)", "WebFetch(domain:ok.example.com)"]}})J"}) {
        TempTree tree;
        auto file = tree.write("s.json", text);
        LoadOptions o = tree.options();
        o.settings_files = {file};
        auto p = load_ok(o);
        INFO(text << "\n" << all_warnings(p));
        CHECK_FALSE(allows(p, "x.example.com"));
        CHECK_FALSE(allows(p, "anything.org"));
        CHECK(allows(p, "ok.example.com"));
        CHECK(warned(p, file.string() + ":1: "));
        CHECK(warned(p, "skipped"));
        CHECK(warned(p, "overly broad"));
    }
}

TEST_CASE("an invalid deny entry stops the load, naming file:line", "[parity][failopen]") {
    const std::vector<std::string> entries = {
        R"J("sandbox": {"network": {"deniedDomains": ["ok.example.com", "*."]}})J",
        R"J("network": {"deniedDomains": ["*.com"]})J",
        R"J("permissions": {"deny": ["WebFetch(evil.com)"]})J",
        R"J("permissions": {"deny": ["WebFetch(domain:evil.com"]})J",
        R"J("permissions": {"deny": ["WebFetch(domain:*.)"]})J",
        R"J("permissions": {"deny": ["Read()"]})J",
        R"J("sandbox": {"filesystem": {"denyRead": ["a\u0000b"]}})J",
        R"J("filesystem": {"denyWrite": [""]})J",
    };
    for (const auto& entry : entries) {
        TempTree tree;
        auto file = tree.write("s.json", "{\n" + entry + "\n}\n");
        LoadOptions o = tree.options();
        o.settings_files = {file};
        auto e = load_error(o);
        INFO(entry << " -> " << e);
        CHECK_THAT(e, Catch::StartsWith(file.string() + ":2: "));
    }
}

TEST_CASE("an allow entry cordon cannot interpret is skipped with a warning and the rest of the file holds",
          "[parity][failopen]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"permissions": {
  "allow": ["WebFetch(domain:*.com)", "WebFetch(example.org)", "WebFetch(domain:x.org", "Read()", "Edit(a\u0000b)",
            "WebFetch(domain:good.example.com)"],
  "deny": ["WebFetch(domain:bad.good.example.com)"]},
 "sandbox": {"network": {"allowedAddresses": ["10.0.0.0/33", "10.1.0.0/16"]}}})J");
    auto p = load_ok(tree.options());
    INFO(all_warnings(p));
    CHECK(p->warnings().size() == 6);
    for (int i = 0; i < 5; ++i)
        CHECK(warned(p, file.string() + ":2: permissions.allow[" + std::to_string(i) + "]: skipped:"));
    CHECK(warned(p, "sandbox.network.allowedAddresses[0]: skipped: invalid address \"10.0.0.0/33\""));
    CHECK(allows(p, "good.example.com"));
    CHECK_FALSE(allows(p, "bad.good.example.com"));
    CHECK_FALSE(allows(p, "example.org"));
    CHECK(p->network().allowed_addresses.size() == 1);
    CHECK(p->network().allowed_ranges.size() == 1);
}

TEST_CASE("an allowUnixSockets entry that is not absolute is skipped with a warning", "[parity][failopen]") {
    TempTree tree;
    tree.project_settings(
        R"J({"sandbox": {"network": {"allowUnixSockets": ["docker.sock", "~/agent.sock", "/run/x.sock"]}}})J");
    auto p = load_ok(tree.options());
    INFO(all_warnings(p));
    CHECK(warned(p, "sandbox.network.allowUnixSockets[0]: skipped: invalid socket path \"docker.sock\""));
    REQUIRE(p->network().allow_unix_sockets.size() == 2);
    CHECK(p->network().allow_unix_sockets[0].text == "~/agent.sock");
    CHECK(p->network().allow_unix_sockets[1].text == "/run/x.sock");
}

TEST_CASE("WebFetch(domain:example.*): a non-leading * stands for exactly one label", "[parity]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:example.*)"]}})J");
    auto p = load_ok(tree.options());
    CHECK(p->warnings().empty());
    CHECK(allows(p, "example.org"));
    CHECK(allows(p, "example.com"));
    CHECK_FALSE(allows(p, "example.evil.com"));
    CHECK_FALSE(allows(p, "www.example.org"));
    CHECK_FALSE(allows(p, "example"));
    CHECK_FALSE(allows(p, "notexample.org"));
    // Flags read patterns the same way.
    CHECK(allows(flags_policy({"api.example.*"}), "api.example.net"));
    CHECK_FALSE(allows(flags_policy({"api.example.*"}), "api.example.evil.net"));
    // Wildcards still never match IP addresses.
    CHECK_THAT(flag_error("10.0.0.*"), Catch::Contains("IP"));
}

TEST_CASE("WebFetch(domain:*) stays valid: every name", "[parity]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:*)"]}})J");
    auto p = load_ok(tree.options());
    CHECK(p->warnings().empty());
    CHECK(allows(p, "anything.example"));
}

// ---- srt's validation -------------------------------------------------------------------------------------

TEST_CASE("allowedDomains / deniedDomains refuse what srt refuses", "[parity][srt]") {
    const std::vector<std::pair<std::string, std::string>> refused = {
        {"intranet", "single-label"},
        {"example.com:0443", "leading zero"},
        {"example.com:65536", "out of range"},
        {"example.com:0", "out of range"},
        {"::1", "bracketed"},
        {"2001:db8::1", "bracketed"},
        {"*.", "overly broad"},
        {"example.com.", "trailing dot"},
        {"example.*", "leading `*.`"},
        {"api.*.example.com", "leading `*.`"},
        {"*.com", "overly broad"},
    };
    for (const auto& [entry, why] : refused) {
        for (const bool srt_file : {true, false}) {
            TempTree tree;
            const std::string list = "[\"" + entry + "\", \"ok.example.com\"]";
            auto file = tree.write(
                "s.json", srt_file ? "{\"network\": {\"allowedDomains\": " + list + "}}"
                                   : "{\"sandbox\": {\"network\": {\"allowedDomains\": " + list + "}}}");
            LoadOptions o = tree.options();
            o.settings_files = {file};
            auto p = load_ok(o);
            INFO(entry << "\n" << all_warnings(p));
            CHECK(p->network().allowed_domains.size() == 1);
            CHECK(warned(p, why));
            CHECK(warned(p, "as in srt"));
            // The same entry in a deny list stops the load.
            auto denied = tree.write(
                "d.json", srt_file ? "{\"network\": {\"deniedDomains\": " + list + "}}"
                                   : "{\"sandbox\": {\"network\": {\"deniedDomains\": " + list + "}}}");
            o.settings_files = {denied};
            CHECK_THAT(load_error(o), Catch::Contains(why));
        }
    }
}

TEST_CASE("srt accepts localhost, bracketed IPv6, ports, and * in deniedDomains", "[parity][srt]") {
    TempTree tree;
    auto file = tree.write("s.json", R"J({"network": {
        "allowedDomains": ["localhost", "[::1]:8080", "[2001:db8::1]", "*.example.com:443", "10.1.2.3", "a.b"],
        "deniedDomains": ["*:25"]}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    INFO(all_warnings(p));
    CHECK(p->warnings().empty());
    CHECK(allows(p, "localhost"));
    CHECK(allows(p, "::1", 8080));
    CHECK(allows(p, "x.example.com", 443));
    CHECK_FALSE(allows(p, "x.example.com", 80));
    CHECK(allows(p, "10.1.2.3"));
    CHECK_FALSE(allows(p, "a.b", 25));  // `*:25` denies port 25 everywhere
    CHECK(allows(p, "a.b", 443));
}

TEST_CASE("WebFetch patterns keep Claude Code's grammar (single labels, trailing dot)", "[parity][srt]") {
    TempTree tree;
    tree.project_settings(
        R"J({"permissions": {"allow": ["WebFetch(domain:intranet)", "WebFetch(domain:example.com.)"]}})J");
    auto p = load_ok(tree.options());
    CHECK(p->warnings().empty());
    CHECK(allows(p, "intranet"));
    CHECK(allows(p, "example.com"));
}

// ---- IPv4 literals in any spelling
// --------------------------------------------------------------------------

TEST_CASE("IPv4 literals in any inet_aton spelling match the dotted-quad rule", "[parity][ipv4]") {
    auto p = flags_policy({"10.203.0.2"});
    for (const char* spelling : {"10.203.0.2", "10.203.2", "0x0a.203.0.2", "181075970", "012.203.0.2",
                                 "0xa.0xcb.0.2", "0x0acb0002", "10.13303810"}) {
        INFO(spelling);
        CHECK(allows(p, spelling));
    }
    CHECK_FALSE(allows(p, "10.203.0.3"));
    auto loopback = flags_policy({"127.0.0.1"});
    CHECK(allows(loopback, "0x7f.1"));
    CHECK(allows(loopback, "0x7F.0.0.1"));
    CHECK(allows(loopback, "2130706433"));
    CHECK(allows(loopback, "0177.0.0.1"));
    // A deny rule catches every spelling too.
    auto denied = flags_policy({"*"}, {"169.254.169.254"});
    CHECK_FALSE(allows(denied, "0xa9fea9fe"));
    CHECK_FALSE(allows(denied, "169.254.43518"));
}

TEST_CASE("a host whose last label is numeric is an IPv4 literal or invalid, never a name",
          "[parity][ipv4]") {
    auto p = flags_policy({"*"});
    CHECK_FALSE(allows(p, "10.0.0.0x1"));  // an address (10.0.0.1), which `*` never matches
    CHECK_FALSE(allows(p, "foo.0x1"));     // neither a name nor an address
    CHECK(allows(p, "foo.0xzz"));          // `0xzz` is not a number: a name
    CHECK_FALSE(allows(p, "1.2.3.4.5"));
    CHECK_FALSE(allows(p, "256.1.1.1"));
    CHECK_FALSE(allows(p, "0x100000000"));
    CHECK_FALSE(allows(p, "1.0x1000000"));
    auto q = flags_policy({"10.0.0.1"});
    CHECK(allows(q, "10.0.0.0x1"));
}

TEST_CASE("parse_ipv4_any agrees with glibc's inet_aton on random spellings", "[parity][ipv4]") {
    // inet_aton is the reference: what a client library hands to connect() for such a host.
    std::mt19937 rng(20261201);
    const std::string alphabet = "0123456789abcdefxX.";
    std::size_t accepted = 0;
    for (int i = 0; i < 200000; ++i) {
        std::string text;
        const int length = 1 + static_cast<int>(rng() % 14);
        for (int k = 0; k < length; ++k)
            text += alphabet[rng() % alphabet.size()];
        in_addr reference{};
        const bool glibc = inet_aton(text.c_str(), &reference) != 0;
        const auto ours = parse_ipv4_any(text);
        INFO(text);
        REQUIRE(ours.has_value() == glibc);
        if (glibc) {
            REQUIRE(*ours == ntohl(reference.s_addr));
            ++accepted;
        }
    }
    CHECK(accepted > 1000);
}

TEST_CASE("parse_target canonicalises IPv4 spellings", "[parity][ipv4]") {
    auto t = parse_target("0x7f.1:8080");
    REQUIRE(std::holds_alternative<HostPort>(t));
    CHECK(std::get<HostPort>(t).host == "127.0.0.1");
    CHECK(std::get<HostPort>(t).port == 8080);
    auto u = parse_target("http://181075970/x");
    REQUIRE(std::holds_alternative<HostPort>(u));
    CHECK(std::get<HostPort>(u).host == "10.203.0.2");
    CHECK(std::holds_alternative<std::string>(parse_target("foo.0x1")));
}

TEST_CASE("parse_target_host: a front-end's bare host, normalised as parse_target does", "[parity][ipv4]") {
    auto host = [](std::string_view text) {
        auto r = parse_target_host(text, 443);
        return std::holds_alternative<HostPort>(r) ? std::get<HostPort>(r).host
                                                   : "error: " + std::get<std::string>(r);
    };
    CHECK(host("0x7f.1") == "127.0.0.1");
    CHECK(host("Example.COM.") == "example.com");
    CHECK(host("[::1]") == "::1");
    CHECK(host("::FFFF:1.2.3.4") == "::ffff:1.2.3.4");
    CHECK(host("bücher.de") == "xn--bcher-kva.de");
    for (const char* bad : {"", "a:80", "[1.2.3.4]", "a@b", "a/b", "a b", "a\\b", "foo.0x1", "[::1"})
        CHECK_THAT(host(bad), Catch::StartsWith("error: "));
}

// ---- warnings for what cordon does not honour -------------------------------------------------------------

TEST_CASE("unknown and unhonoured keys get one warning each, naming file:line", "[parity][warnings]") {
    TempTree tree;
    auto file = tree.write("srt.json", R"J({
  "network": {
    "allowedDomain": ["typo.example.com"],
    "httpProxyPort": 8080,
    "socksProxyPort": 1081,
    "allowedDomains": ["ok.example.com"]
  },
  "filesystem": {"denyWrites": ["x"], "allowWrite": ["."]},
  "enableWeakerNestedSandbox": true,
  "ignoreViolations": {}
})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    INFO(all_warnings(p));
    CHECK(p->warnings().size() == 6);
    CHECK(warned(p, file.string() + ":3: network.allowedDomain: unknown key"));
    CHECK(warned(p, file.string() + ":4: network.httpProxyPort: not honoured"));
    CHECK(warned(p, file.string() + ":5: network.socksProxyPort: not honoured"));
    CHECK(warned(p, file.string() + ":8: filesystem.denyWrites: unknown key"));
    CHECK(warned(p, file.string() + ":9: enableWeakerNestedSandbox: not honoured"));
    CHECK(warned(p, file.string() + ":10: ignoreViolations: not honoured"));
    CHECK(allows(p, "ok.example.com"));
}

TEST_CASE("Claude Code's sandbox section: its own keys pass, typos are warned about", "[parity][warnings]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({
  "model": "whatever",
  "sandbox": {
    "enabled": true, "autoAllowBashIfSandboxed": true, "excludedCommands": ["docker"],
    "allowUnsandboxedCommands": false,
    "netwrok": {},
    "network": {"allowLocalBinding": true, "allowUnixSocket": []}
  }
})J");
    auto p = load_ok(tree.options());
    INFO(all_warnings(p));
    CHECK(p->warnings().size() == 3);
    CHECK(warned(p, file.string() + ":6: sandbox.netwrok: unknown key"));
    CHECK(warned(p, "sandbox.network.allowLocalBinding: not honoured"));
    CHECK(warned(p, "sandbox.network.allowUnixSocket: unknown key"));
}

TEST_CASE("the sandbox keys of Claude Code 2.1.332's settings schema are known", "[parity][warnings]") {
    TempTree tree;
    tree.project_settings(R"J({"sandbox": {
    "enabled": false, "enabledPlatforms": ["linux"], "failIfUnavailable": false, "bwrapPath": "/usr/bin/bwrap",
    "socatPath": "/usr/bin/socat", "backend": "auto", "windows": {}, "allowAppleEvents": false,
    "autoAllowBashIfSandboxed": true, "allowUnsandboxedCommands": true, "excludedCommands": [],
    "allowNestedUserNamespaces": true,
    "network": {"allowMachLookup": ["com.example.*"], "allowedDomains": []},
    "filesystem": {"allowManagedReadPathsOnly": true}
}})J");
    auto p = load_ok(tree.options());
    INFO(all_warnings(p));
    CHECK_FALSE(warned(p, "unknown key"));
    // Known, but what they would weaken or widen cordon does not do: said once each.
    CHECK(warned(p, "sandbox.allowNestedUserNamespaces: not honoured"));
    CHECK(warned(p, "sandbox.network.allowMachLookup: not honoured"));
    // Honoured, but only from managed settings (as allowManagedDomainsOnly): here it is a project file's.
    CHECK(warned(p,
                 "sandbox.filesystem.allowManagedReadPathsOnly: honoured only in managed settings; ignored"));
    CHECK(p->warnings().size() == 3);
}

TEST_CASE("allowManagedReadPathsOnly in managed settings drops every other layer's read allowance",
          "[parity][layers]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"filesystem": {"allowManagedReadPathsOnly": true,
        "denyRead": ["~/secrets"], "allowRead": ["~/secrets/managed"]}}})J");
    tree.project_settings(R"J({"sandbox": {"filesystem": {"allowRead": ["~/secrets/project"]}},
        "permissions": {"allow": ["Read(~/secrets/rule)"]}})J");
    LoadOptions options = tree.options();
    options.allow_read.push_back((tree.home() / "secrets/flag").string());
    auto p = load_ok(options);
    INFO(all_warnings(p));
    CHECK(p->decide_read(tree.home() / "secrets/managed/a").allowed());
    CHECK_FALSE(p->decide_read(tree.home() / "secrets/project/a").allowed());
    CHECK_FALSE(p->decide_read(tree.home() / "secrets/rule/a").allowed());
    CHECK_FALSE(p->decide_read(tree.home() / "secrets/flag/a").allowed());
    CHECK(
        warned(p, "allowRead \"~/secrets/project\" ignored: allowManagedReadPathsOnly in managed settings"));
    CHECK(warned(p, "ignored: allowManagedReadPathsOnly"));

    // Without it the same files allow those reads: the test above fails for the right reason.
    TempTree open;
    open.managed_settings(R"J({"sandbox": {"filesystem": {"denyRead": ["~/secrets"]}}})J");
    open.project_settings(R"J({"sandbox": {"filesystem": {"allowRead": ["~/secrets/project"]}}})J");
    CHECK(load_ok(open.options())->decide_read(open.home() / "secrets/project/a").allowed());
}

TEST_CASE("permission rules that look like a misspelt WebFetch/Read/Edit are warned about",
          "[parity][warnings]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"permissions": {
  "allow": ["webfetch(domain:a.example.com)", "Webfetch(domain:b.example.com)", "WebFetc(domain:c.example.com)",
            "read(~/x)", "EDIT(/y)", "Bash(ls)", "WebSearch", "Write(/z)", "Grep", "mcp__x__y"],
  "deny": ["Reed(~/.ssh)"]}})J");
    auto p = load_ok(tree.options());
    INFO(all_warnings(p));
    CHECK(p->warnings().size() == 6);
    CHECK(warned(p, file.string() + ":2: permissions.allow[0]: rule \"webfetch(domain:a.example.com)\""));
    CHECK(warned(p, "did you mean WebFetch?"));
    CHECK(warned(p, "did you mean Read?"));
    CHECK(warned(p, "did you mean Edit?"));
    CHECK(warned(p, "permissions.deny[0]"));
    CHECK_FALSE(allows(p, "a.example.com"));
}

// ---- allowGitConfig
// -----------------------------------------------------------------------------------------

TEST_CASE("allowGitConfig: .git/config leaves the always-read-only set, .git/hooks stays", "[parity][git]") {
    TempTree tree;
    {
        auto p = load_ok(tree.options());
        CHECK_FALSE(p->filesystem().allow_git_config);
        const auto& names = p->filesystem().always_read_only_names;
        CHECK(std::find(names.begin(), names.end(), ".git/config") != names.end());
        CHECK_FALSE(p->decide_write(tree.cwd() / ".git/config").allowed());
    }
    auto file = tree.write("srt.json", R"J({"filesystem": {"allowGitConfig": true}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    CHECK(p->warnings().empty());
    CHECK(p->filesystem().allow_git_config);
    const auto& names = p->filesystem().always_read_only_names;
    CHECK(std::find(names.begin(), names.end(), ".git/config") == names.end());
    CHECK(std::find(names.begin(), names.end(), ".git/hooks") != names.end());
    CHECK(p->decide_write(tree.cwd() / ".git/config").allowed());
    CHECK(p->decide_write(tree.cwd() / "sub/.git/config").allowed());
    CHECK_FALSE(p->decide_write(tree.cwd() / ".git/hooks/pre-commit").allowed());
    CHECK(p->to_json()["filesystem"]["allowGitConfig"] == true);
    // Claude Code's sandbox.filesystem reads it too; a non-boolean is an error.
    tree.project_settings(R"J({"sandbox": {"filesystem": {"allowGitConfig": "yes"}}})J");
    CHECK_THAT(load_error(tree.options()),
               Catch::Contains("allowGitConfig") && Catch::Contains("true or false"));
}

// ---- Read(~/.ssh/**) agrees with the jail
// -------------------------------------------------------------------

TEST_CASE("Read(~/.ssh/**) denies ~/.ssh itself, as the jail hides it", "[parity][paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(~/.ssh/**)"]}})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(p->decide_read(tree.home() / ".ssh").allowed());
    CHECK_FALSE(p->decide_read(tree.home() / ".ssh/id_ed25519").allowed());
    CHECK(p->decide_read(tree.home() / ".sshx").allowed());
    CHECK(p->decide_read(tree.home()).allowed());
}

// ---- one parser per grammar
// ---------------------------------------------------------------------------------

TEST_CASE("parse_port: digits 1..65535, no leading zero", "[syntax]") {
    CHECK(std::get<std::uint16_t>(parse_port("443")) == 443);
    CHECK(std::get<std::uint16_t>(parse_port("65535")) == 65535);
    CHECK(std::get<std::uint16_t>(parse_port("0", true)) == 0);
    for (const char* bad : {"", "0", "0443", "65536", "99999999", "-1", "+1", "1x", " 1"})
        CHECK(std::holds_alternative<std::string>(parse_port(bad)));
}

TEST_CASE("split_host_port: one grammar for targets, listeners, DNS servers and patterns", "[syntax]") {
    auto ok = [](std::string_view text, PortSpec spec = PortSpec::Optional) {
        auto r = split_host_port(text, spec);
        if (auto* why = std::get_if<std::string>(&r)) FAIL(std::string(text) << ": " << *why);
        return std::get<HostPortText>(r);
    };
    auto bad = [](std::string_view text, PortSpec spec = PortSpec::Optional) {
        return std::holds_alternative<std::string>(split_host_port(text, spec));
    };
    CHECK(ok("example.com").host == "example.com");
    CHECK_FALSE(ok("example.com").port);
    CHECK(*ok("example.com:80").port == 80);
    CHECK(ok("[::1]:443").host == "::1");
    CHECK(ok("[::1]:443").bracketed);
    CHECK(ok("::1").host == "::1");  // bare IPv6: never split
    CHECK_FALSE(ok("::1:443").port);
    CHECK(*ok("127.0.0.1:0", PortSpec::RequiredOrZero).port == 0);
    CHECK(bad("127.0.0.1:0", PortSpec::Required));
    CHECK(bad("example.com", PortSpec::Required));
    CHECK(bad("::1", PortSpec::Required));
    CHECK(bad("[::1", PortSpec::Optional));
    CHECK(bad("[::1]x"));
    CHECK(bad(":80"));
    CHECK(bad("example.com:"));
    CHECK(bad("example.com:08"));
}

TEST_CASE("parse_cidr: one CIDR grammar", "[syntax]") {
    auto r = std::get<AddressRange>(parse_cidr("10.0.0.0/8"));
    CHECK(r.family == AF_INET);
    CHECK(r.prefix == 8);
    const std::uint8_t inside[4] = {10, 9, 8, 7}, outside[4] = {11, 0, 0, 1};
    CHECK(r.contains(AF_INET, inside));
    CHECK_FALSE(r.contains(AF_INET, outside));
    CHECK(std::get<AddressRange>(parse_cidr("10.1.2.3")).prefix == 32);
    CHECK(std::get<AddressRange>(parse_cidr("[::1]/128")).family == AF_INET6);
    CHECK(std::get<AddressRange>(parse_cidr("fd00::/8")).prefix == 8);
    for (const char* bad :
         {"", "10/8", "10.0.0.0/33", "::/129", "10.0.0.0/", "10.0.0.0/8x", "0x0a.0.0.0/8", "x"})
        CHECK(std::holds_alternative<std::string>(parse_cidr(bad)));
}

TEST_CASE("format_source: one printed form of a rule's source", "[syntax]") {
    CHECK(format_source(Source{Layer::Project, "/w/.claude/settings.json", "permissions.allow[0]", 3}) ==
          "project /w/.claude/settings.json:3 permissions.allow[0]");
    CHECK(format_source(Source{Layer::Flags, "", "--allow-domain", 0}) == "flags --allow-domain");
    CHECK(format_source(Source{Layer::Default, "", "working directory", 0}) == "default working directory");
}

}  // namespace cordon::policy::test
