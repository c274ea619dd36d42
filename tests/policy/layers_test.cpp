// Layers and merging: managed (file + drop-ins), --settings, local, project, user, flags; discovery; array
// merging; scalar precedence; allowManagedDomainsOnly; srt-shaped files; ignored keys and tools.
#include <nlohmann/json.hpp>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

static Layer layer_of_allow(const PolicyPtr& p, std::string_view host) {
    auto d = p->decide_connect(host, 443);
    REQUIRE(d.rule);
    return d.rule->source.layer;
}

TEST_CASE("managed-settings.json is read as the managed layer", "[layers]") {
    TempTree tree;
    auto file = tree.managed_settings(allowed_domains_json(R"J(["managed.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(layer_of_allow(p, "managed.example.com") == Layer::Managed);
    CHECK(p->decide_connect("managed.example.com", 443).rule->source.file == file.string());
}

TEST_CASE("managed-settings.d/*.json are read in name order after managed-settings.json", "[layers]") {
    TempTree tree;
    tree.managed_settings(allowed_domains_json(R"J(["a.example.com"])J"));
    tree.write(tree.managed() / "managed-settings.d/20-second.json",
               allowed_domains_json(R"J(["c.example.com"])J"));
    tree.write(tree.managed() / "managed-settings.d/10-first.json",
               allowed_domains_json(R"J(["b.example.com"])J"));
    tree.write(tree.managed() / "managed-settings.d/notes.txt", "not json");
    tree.write(tree.managed() / "managed-settings.d/.hidden.json", "not json either");
    auto p = load_ok(tree.options());
    const auto& files = p->files_read();
    REQUIRE(files.size() == 3);
    CHECK(files[0].filename() == "managed-settings.json");
    CHECK(files[1].filename() == "10-first.json");
    CHECK(files[2].filename() == "20-second.json");
    const auto& allowed = p->network().allowed_domains;
    REQUIRE(allowed.size() == 3);
    CHECK(allowed[0].text == "a.example.com");
    CHECK(allowed[1].text == "b.example.com");
    CHECK(allowed[2].text == "c.example.com");
    for (const auto& rule : allowed)
        CHECK(rule.source.layer == Layer::Managed);
}

TEST_CASE("managed drop-ins work without managed-settings.json", "[layers]") {
    TempTree tree;
    tree.write(tree.managed() / "managed-settings.d/policy.json",
               allowed_domains_json(R"J(["d.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(layer_of_allow(p, "d.example.com") == Layer::Managed);
}

TEST_CASE("a missing managed directory is fine", "[layers]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.managed_dir = tree.root() / "does-not-exist";
    auto p = load_ok(o);
    CHECK(p->files_read().empty());
}

TEST_CASE("settings files given with --settings are the settings layer, in the order given", "[layers]") {
    TempTree tree;
    auto one = tree.write("one.json", allowed_domains_json(R"J(["one.example.com"])J"));
    auto two = tree.write("two.json", R"J({"permissions": {"allow": ["WebFetch(domain:two.example.com)"]
}
})J");
    LoadOptions o = tree.options();
    o.settings_files = {one, two};
    auto p = load_ok(o);
    CHECK(layer_of_allow(p, "one.example.com") == Layer::Settings);
    CHECK(layer_of_allow(p, "two.example.com") == Layer::Settings);
    REQUIRE(p->files_read().size() == 2);
    CHECK(p->files_read()[0] == one);
    CHECK(p->files_read()[1] == two);
}

TEST_CASE("a missing settings file given with --settings is an error naming it", "[layers]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.settings_files = {tree.root() / "nope.json"};
    CHECK_THAT(load_error(o), Catch::Contains((tree.root() / "nope.json").string()) &&
                                  Catch::Contains("no such settings file"));
}

TEST_CASE("a directory given with --settings is an error", "[layers]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.settings_files = {tree.cwd()};
    CHECK_THAT(load_error(o), Catch::Contains("is a directory"));
}

TEST_CASE("local settings are discovered in .claude/settings.local.json", "[layers]") {
    TempTree tree;
    tree.local_settings(allowed_domains_json(R"J(["local.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(layer_of_allow(p, "local.example.com") == Layer::Local);
}

TEST_CASE("project settings are discovered in .claude/settings.json", "[layers]") {
    TempTree tree;
    tree.project_settings(allowed_domains_json(R"J(["project.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(layer_of_allow(p, "project.example.com") == Layer::Project);
}

TEST_CASE("user settings are discovered in ~/.claude/settings.json", "[layers]") {
    TempTree tree;
    tree.user_settings(allowed_domains_json(R"J(["user.example.com"])J"));
    auto p = load_ok(tree.options());
    CHECK(layer_of_allow(p, "user.example.com") == Layer::User);
}

TEST_CASE("flags are the flags layer", "[layers]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_domains = {"flag.example.com"};
    auto p = load_ok(o);
    auto d = p->decide_connect("flag.example.com", 443);
    REQUIRE(d.rule);
    CHECK(d.rule->source.layer == Layer::Flags);
    CHECK(d.rule->source.file.empty());
    CHECK(d.rule->source.line == 0);
}

TEST_CASE("discover=false skips local, project and user files but not managed or --settings", "[layers]") {
    TempTree tree;
    tree.managed_settings(allowed_domains_json(R"J(["m.example.com"])J"));
    tree.local_settings(allowed_domains_json(R"J(["l.example.com"])J"));
    tree.project_settings(allowed_domains_json(R"J(["p.example.com"])J"));
    tree.user_settings(allowed_domains_json(R"J(["u.example.com"])J"));
    auto s = tree.write("s.json", allowed_domains_json(R"J(["s.example.com"])J"));
    LoadOptions o = tree.options();
    o.discover = false;
    o.settings_files = {s};
    auto p = load_ok(o);
    CHECK(allows(p, "m.example.com"));
    CHECK(allows(p, "s.example.com"));
    CHECK_FALSE(allows(p, "l.example.com"));
    CHECK_FALSE(allows(p, "p.example.com"));
    CHECK_FALSE(allows(p, "u.example.com"));
    CHECK(p->files_read().size() == 2);
}

TEST_CASE("arrays merge across all layers in precedence order", "[layers]") {
    TempTree tree;
    tree.managed_settings(allowed_domains_json(R"J(["m.example.com"])J"));
    auto s = tree.write("s.json", allowed_domains_json(R"J(["s.example.com"])J"));
    tree.local_settings(allowed_domains_json(R"J(["l.example.com"])J"));
    tree.project_settings(allowed_domains_json(R"J(["p.example.com"])J"));
    tree.user_settings(allowed_domains_json(R"J(["u.example.com"])J"));
    LoadOptions o = tree.options();
    o.settings_files = {s};
    o.allow_domains = {"f.example.com"};
    auto p = load_ok(o);
    const auto& allowed = p->network().allowed_domains;
    REQUIRE(allowed.size() == 6);
    const Layer order[] = {Layer::Managed, Layer::Settings, Layer::Local,
                           Layer::Project, Layer::User,     Layer::Flags};
    for (std::size_t i = 0; i < 6; ++i)
        CHECK(allowed[i].source.layer == order[i]);
    for (const char* host : {"m", "s", "l", "p", "u", "f"})
        CHECK(allows(p, std::string(host) + ".example.com"));
}

TEST_CASE("the allow list merges allowedDomains and WebFetch allow rules", "[layers]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:a.example.com)"]
}
, "sandbox" : {
    "network" : {
        "allowedDomains" : ["b.example.com"]
    }
}
})J");
    auto p = load_ok(tree.options());
    CHECK(allows(p, "a.example.com"));
    CHECK(allows(p, "b.example.com"));
    CHECK(p->network().allowed_domains.size() == 2);
}

TEST_CASE("the deny list merges deniedDomains and WebFetch deny rules", "[layers]") {
    TempTree tree;
    tree.project_settings(
        R"J({"permissions": {"allow": ["WebFetch(domain:*)"], "deny": ["WebFetch(domain:a.example.com)"]
}
, "sandbox" : {
    "network" : {
        "deniedDomains" : ["b.example.com"]
    }
}
})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(allows(p, "a.example.com"));
    CHECK_FALSE(allows(p, "b.example.com"));
    CHECK(allows(p, "c.example.com"));
    CHECK(p->network().denied_domains.size() == 2);
}

TEST_CASE("a deny in a lower layer beats an allow in a higher layer", "[layers]") {
    TempTree tree;
    tree.managed_settings(allowed_domains_json(R"J(["*.example.com"])J"));
    tree.user_settings(R"J({"sandbox": {"network": {"deniedDomains": ["x.example.com"]}}})J");
    auto p = load_ok(tree.options());
    auto d = p->decide_connect("x.example.com", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.rule->source.layer == Layer::User);
}

TEST_CASE("a managed deny beats a flag allow", "[layers]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"deniedDomains": ["evil.example.com"]}}})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"evil.example.com"};
    auto p = load_ok(o);
    auto d = p->decide_connect("evil.example.com", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.rule->source.layer == Layer::Managed);
}

TEST_CASE("allowManagedDomainsOnly in managed settings keeps only managed allows", "[layers][managed-only]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                     "allowedDomains": ["corp.example.com"]}}})J");
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:project.example.com)"]
}
})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"flag.example.com"};
    auto p = load_ok(o);
    CHECK(p->network().allow_managed_domains_only);
    CHECK(allows(p, "corp.example.com"));
    CHECK_FALSE(allows(p, "project.example.com"));
    CHECK_FALSE(allows(p, "flag.example.com"));
    REQUIRE(p->network().ignored_allows.size() == 2);
    CHECK(p->network().ignored_allows[0].text == "WebFetch(domain:project.example.com)");
    CHECK(p->network().ignored_allows[1].text == "flag.example.com");
    CHECK(p->network().allowed_domains.size() == 1);
}

TEST_CASE("allowManagedDomainsOnly still applies denies from every layer", "[layers][managed-only]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                     "allowedDomains": ["*.corp.example.com"]}}})J");
    tree.user_settings(R"J({"permissions": {"deny": ["WebFetch(domain:secret.corp.example.com)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(allows(p, "wiki.corp.example.com"));
    auto d = p->decide_connect("secret.corp.example.com", 443);
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByDenylist);
    CHECK(d.rule->source.layer == Layer::User);
}

TEST_CASE("allowManagedDomainsOnly from a managed drop-in counts", "[layers][managed-only]") {
    TempTree tree;
    tree.write(tree.managed() / "managed-settings.d/10.json",
               R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true}}})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"flag.example.com"};
    auto p = load_ok(o);
    CHECK(p->network().allow_managed_domains_only);
    CHECK_FALSE(allows(p, "flag.example.com"));
}

TEST_CASE("allowManagedDomainsOnly outside managed settings is ignored with a warning",
          "[layers][managed-only]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                                 "allowedDomains": ["p.example.com"]}}})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"f.example.com"};
    auto p = load_ok(o);
    CHECK_FALSE(p->network().allow_managed_domains_only);
    CHECK(allows(p, "p.example.com"));
    CHECK(allows(p, "f.example.com"));
    REQUIRE(p->warnings().size() == 1);
    CHECK_THAT(p->warnings()[0], Catch::Contains(file.string()) &&
                                     Catch::Contains("allowManagedDomainsOnly") &&
                                     Catch::Contains("ignored"));
}

TEST_CASE("allowManagedDomainsOnly false in managed settings changes nothing", "[layers][managed-only]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": false}}})J");
    LoadOptions o = tree.options();
    o.allow_domains = {"f.example.com"};
    auto p = load_ok(o);
    CHECK(allows(p, "f.example.com"));
    CHECK(p->network().ignored_allows.empty());
}

TEST_CASE("the last managed file sets allowManagedDomainsOnly", "[layers][managed-only]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true}}})J");
    tree.write(tree.managed() / "managed-settings.d/99-off.json",
               R"J({"sandbox": {"network": {"allowManagedDomainsOnly": false}}})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(p->network().allow_managed_domains_only);
}

TEST_CASE("scalars take the highest layer", "[layers][scalars]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": false}}})J");
    tree.user_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": true}}})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(p->network().allow_all_unix_sockets);
}

TEST_CASE("a scalar set only in a lower layer applies", "[layers][scalars]") {
    TempTree tree;
    tree.user_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": true}}})J");
    auto p = load_ok(tree.options());
    CHECK(p->network().allow_all_unix_sockets);
}

TEST_CASE("project scalars beat user scalars, local beats project", "[layers][scalars]") {
    TempTree tree;
    tree.user_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": false}}})J");
    tree.project_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": true}}})J");
    CHECK(load_ok(tree.options())->network().allow_all_unix_sockets);
    tree.local_settings(R"J({"sandbox": {"network": {"allowAllUnixSockets": false}}})J");
    CHECK_FALSE(load_ok(tree.options())->network().allow_all_unix_sockets);
}

TEST_CASE("within one layer the later file sets a scalar", "[layers][scalars]") {
    TempTree tree;
    auto a = tree.write("a.json", R"J({"sandbox": {"network": {"allowAllUnixSockets": true}}})J");
    auto b = tree.write("b.json", R"J({"sandbox": {"network": {"allowAllUnixSockets": false}}})J");
    LoadOptions o = tree.options();
    o.settings_files = {a, b};
    CHECK_FALSE(load_ok(o)->network().allow_all_unix_sockets);
    o.settings_files = {b, a};
    CHECK(load_ok(o)->network().allow_all_unix_sockets);
}

TEST_CASE("allowUnixSockets and allowedAddresses merge with sources", "[layers]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowUnixSockets": ["/run/a.sock"],
                                                     "allowedAddresses": ["10.0.0.0/8"]}}})J");
    tree.project_settings(R"J({"sandbox": {"network": {"allowUnixSockets": ["/run/b.sock"],
                                                     "allowedAddresses": ["fd00::/8", "192.0.2.1"]}}})J");
    LoadOptions o = tree.options();
    o.allow_addresses = {"127.0.0.1/32"};
    auto p = load_ok(o);
    const auto& sockets = p->network().allow_unix_sockets;
    REQUIRE(sockets.size() == 2);
    CHECK(sockets[0].text == "/run/a.sock");
    CHECK(sockets[1].source.layer == Layer::Project);
    const auto& addresses = p->network().allowed_addresses;
    REQUIRE(addresses.size() == 4);
    CHECK(addresses[0].text == "10.0.0.0/8");
    CHECK(addresses[3].text == "127.0.0.1/32");
    CHECK(addresses[3].source.where == "--allow-address");
}

TEST_CASE("invalid allowedAddresses entries are rejected", "[layers][reject]") {
    for (const char* bad :
         {"10.0.0.0/33", "fd00::/129", "10.0.0", "10.0.0.0/", "10.0.0.0/x", "nothost/8", ""}) {
        TempTree tree;
        auto file = tree.project_settings(
            std::string("{\"sandbox\": {\"network\": {\"allowedAddresses\": [\"") + bad + "\"]}}}");
        // An allow entry cordon cannot read is skipped, with a warning naming it.
        auto p = load_ok(tree.options());
        REQUIRE(p->warnings().size() == 1);
        CHECK(p->network().allowed_addresses.empty());
        const std::string& e = p->warnings()[0];
        INFO(bad);
        CHECK_THAT(e, Catch::Contains(file.string()) && Catch::Contains("skipped") &&
                          Catch::Contains("sandbox.network.allowedAddresses[0]") &&
                          Catch::Contains(std::string("\"") + bad + "\""));
    }
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_addresses = {"300.1.1.1"};
    CHECK_THAT(load_error(o), Catch::Contains("--allow-address \"300.1.1.1\""));
}

TEST_CASE("srt-shaped files are detected and loaded", "[layers][srt]") {
    TempTree tree;
    auto file = tree.write("srt.json", R"J({
  "network": {
    "allowedDomains": ["github.com", "*.npmjs.org"],
    "deniedDomains": ["evil.npmjs.org"],
    "allowUnixSockets": ["/var/run/docker.sock"],
    "allowAllUnixSockets": true
  },
  "filesystem": {
    "denyRead": ["~/.ssh"],
    "allowWrite": ["out", "/srv/data"],
    "denyWrite": ["out/locked"]
  }
})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    CHECK(allows(p, "github.com"));
    CHECK(allows(p, "registry.npmjs.org"));
    CHECK_FALSE(allows(p, "evil.npmjs.org"));
    CHECK(p->network().allow_all_unix_sockets);
    CHECK(p->network().allow_unix_sockets.at(0).text == "/var/run/docker.sock");
    CHECK(p->decide_connect("github.com", 443).rule->source.where == "network.allowedDomains[0]");
    CHECK_FALSE(p->decide_read(tree.home() / ".ssh/id_rsa").allowed());
    CHECK(p->decide_write(tree.cwd() / "out/x").allowed());
    CHECK(p->decide_write("/srv/data/y").allowed());
    CHECK_FALSE(p->decide_write(tree.cwd() / "out/locked/z").allowed());
}

TEST_CASE("srt files use plain paths: /path is absolute", "[layers][srt][paths]") {
    TempTree tree;
    auto file = tree.write("conf/srt.json", R"J({"filesystem": {"allowWrite": ["/srv/x"]}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    CHECK(p->filesystem().allow_write.back().path == "/srv/x");
}

TEST_CASE("srt files with only a network object are srt", "[layers][srt]") {
    TempTree tree;
    auto file = tree.write("srt.json", R"J({"network": {"allowedDomains": ["a.example.com"]}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    CHECK(allows(load_ok(o), "a.example.com"));
}

TEST_CASE("srt files given as managed settings are the managed layer", "[layers][srt]") {
    TempTree tree;
    tree.managed_settings(R"J({"network": {"allowedDomains": ["m.example.com"]}})J");
    CHECK(layer_of_allow(load_ok(tree.options()), "m.example.com") == Layer::Managed);
}

TEST_CASE("srt errors name the srt JSON path", "[layers][srt][reject]") {
    TempTree tree;
    auto file = tree.write("srt.json", R"J({"network": {"allowedDomains": ["ok.com", 5]}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    CHECK_THAT(load_error(o),
               Catch::Contains("network.allowedDomains[1]: expected a string, found a number"));
}

TEST_CASE("rules of other tools are ignored without error", "[layers]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {
        "allow": ["Bash(npm run test:*)", "Bash", "mcp__github__create_issue", "WebSearch", "WebFetch", "Read", "Edit",
                  "Write(src/**)", "Glob", "NotebookEdit(x)", "Task(anything at all"],
        "deny": ["Bash(rm -rf /)", "WebFetch"],
        "ask": ["WebFetch(domain:ask.example.com)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../other"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(p->network().allowed_domains.empty());
    CHECK(p->network().denied_domains.empty());
    CHECK_FALSE(allows(p, "ask.example.com"));
    CHECK(p->filesystem().allow_read.empty());
    CHECK(p->filesystem().deny_read.empty());
}

TEST_CASE("unknown keys are ignored", "[layers]") {
    TempTree tree;
    tree.project_settings(R"J({"model": "opus", "env": {"A": "1"}, "hooks": {"PreToolUse": []},
        "sandbox": {"enabled": true, "excludedCommands": ["docker"], "autoAllowBashIfSandboxed": true,
                    "network": {"httpProxyPort": 8080, "allowLocalBinding": true, "allowedDomains": ["a.example.com"]},
                    "filesystem": {"somethingNew": 1}},
        "permissions": {"allow": ["WebFetch(domain:b.example.com)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(allows(p, "a.example.com"));
    CHECK(allows(p, "b.example.com"));
}

TEST_CASE("an empty object and empty arrays are valid", "[layers]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": [], "deny": []}, "sandbox": {"network": {}}})J");
    tree.user_settings("{}");
    auto p = load_ok(tree.options());
    CHECK(p->files_read().size() == 2);
}

TEST_CASE("the same file reached twice is read once", "[layers]") {
    TempTree tree;
    auto file = tree.project_settings(allowed_domains_json(R"J(["a.example.com"])J"));
    LoadOptions o = tree.options();
    o.settings_files = {file};
    o.home = tree.cwd();  // ~/.claude/settings.json is the project file too
    auto p = load_ok(o);
    CHECK(p->files_read().size() == 1);
    CHECK(p->network().allowed_domains.size() == 1);
    CHECK(p->network().allowed_domains[0].source.layer == Layer::Settings);
}

TEST_CASE("to_string names layers, verdicts and reasons", "[layers]") {
    CHECK(to_string(Layer::Managed) == "managed");
    CHECK(to_string(Layer::Settings) == "settings");
    CHECK(to_string(Layer::Local) == "local");
    CHECK(to_string(Layer::Project) == "project");
    CHECK(to_string(Layer::User) == "user");
    CHECK(to_string(Layer::Flags) == "flags");
    CHECK(to_string(Layer::Default) == "default");
    CHECK(to_string(Verdict::Allow) == "allow");
    CHECK(to_string(Verdict::Deny) == "deny");
    CHECK(to_string(Reason::AllowedByRule) == "allowed");
    CHECK(to_string(Reason::BlockedByDenylist) == "blocked-by-denylist");
    CHECK(to_string(Reason::BlockedByAllowlist) == "blocked-by-allowlist");
    CHECK(to_string(Reason::DefaultAllow) == "default-allow");
    CHECK(to_string(Reason::DefaultDeny) == "default-deny");
    CHECK(to_string(Reason::AlwaysReadOnly) == "always-read-only");
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

TEST_CASE("a settings file of 100,000 domains loads and decides every entry", "[layers][large]") {
    TempTree tree;
    std::string text = "{\"sandbox\": {\"network\": {\"allowedDomains\": [\n";
    for (int i = 0; i < 100000; ++i) {
        if (i > 0) text += ",\n";
        text += (i % 2 == 0 ? "\"*.h" : "\"h") + std::to_string(i) + ".example.com\"";
    }
    text += "\n]}}}\n";
    auto file = tree.write("big.json", text);
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    REQUIRE(p->network().allowed_domains.size() == 100000);
    for (int i = 0; i < 100000; i += 997) {
        const std::string name = "h" + std::to_string(i) + ".example.com";
        auto exact = p->decide_connect(name, 443);
        auto sub = p->decide_connect("x." + name, 443);
        INFO(name);
        CHECK(exact.allowed() == (i % 2 == 1));
        CHECK(sub.allowed() == (i % 2 == 0));
        const auto& decided = i % 2 == 0 ? sub : exact;
        REQUIRE(decided.rule);
        CHECK(decided.rule->source.line == i + 2);
        CHECK(decided.rule->source.where == "sandbox.network.allowedDomains[" + std::to_string(i) + "]");
    }
    CHECK_FALSE(p->decide_connect("h100000.example.com", 443).allowed());
}

TEST_CASE("deniedDomainReasons: the highest layer's matching reason, on refusals only", "[layers][reasons]") {
    TempTree tree;
    tree.managed_settings(
        R"J({"sandbox": {"network": {"deniedDomainReasons": {"*.paste.example": "managed says no"}}}})J");
    tree.project_settings(R"J({"sandbox": {"network": {"allowedDomains": ["ok.example.com"],
        "deniedDomains": ["bad.example.com"],
        "deniedDomainReasons": {"*.paste.example": "project says no", "bad.example.com": "known bad",
                                "*": "ask netops", "ok.example.com": "never shown", "x": 1}}}})J");
    auto p = load_ok(tree.options());
    auto d = p->decide_connect("a.paste.example", 443);
    REQUIRE(d.reason_text);
    CHECK(d.reason_text->text == "managed says no");
    CHECK(d.reason_text->source.layer == Layer::Managed);
    d = p->decide_connect("bad.example.com", 443);
    CHECK(d.reason == Reason::BlockedByDenylist);
    REQUIRE(d.reason_text);
    CHECK(d.reason_text->text == "known bad");
    CHECK(d.explain().find(": \"known bad\"") != std::string::npos);
    CHECK(d.to_json()["reason_text"] == "known bad");
    d = p->decide_connect("elsewhere.example.org", 443);
    REQUIRE(d.reason_text);
    CHECK(d.reason_text->text == "ask netops");
    // Advisory: an allowed host has no reason, whatever matches it.
    d = p->decide_connect("ok.example.com", 443);
    CHECK(d.allowed());
    CHECK(!d.reason_text);
    CHECK(!d.to_json().contains("reason_text"));
    // What a request its host's request rules refuse shows (an allowed host): that host's reason, the same
    // match as a refusal's; names normalised as decide_connect normalises them.
    auto why = p->reason_for("OK.Example.com.", 443);
    REQUIRE(why);
    CHECK(why->text == "never shown");
    why = p->reason_for("a.paste.example", 443);
    REQUIRE(why);
    CHECK(why->source.layer == Layer::Managed);
    CHECK(!p->reason_for("not a host!", 443));
    bool warned = false;
    for (const auto& w : p->warnings())
        warned =
            warned || w.find("deniedDomainReasons.x: skipped: the reason must be a string, found a number") !=
                          std::string::npos;
    CHECK(warned);
}

TEST_CASE("reportOnly: honoured from managed and --settings only, managed winning", "[layers][report-only]") {
    TempTree tree;
    auto on = tree.write("on.json", R"J({"sandbox": {"network": {"reportOnly": true}}})J");
    auto options = tree.options();
    options.settings_files = {on};
    auto p = load_ok(options);
    CHECK(p->network().report_only);
    REQUIRE(p->network().report_only_rule);
    CHECK(p->network().report_only_rule->source.file == on.string());
    tree.managed_settings(R"J({"sandbox": {"network": {"reportOnly": false}}})J");
    CHECK(!load_ok(options)->network().report_only);

    TempTree project;
    project.project_settings(R"J({"sandbox": {"network": {"reportOnly": true}}})J");
    project.user_settings(R"J({"network": {"reportOnly": true}})J");
    auto q = load_ok(project.options());
    CHECK(!q->network().report_only);
    std::size_t warned = 0;
    for (const auto& w : q->warnings())
        if (w.find("reportOnly: honoured only in managed settings or cordon proxy's --settings") !=
            std::string::npos)
            ++warned;
    CHECK(warned == 2);
}

}  // namespace cordon::policy::test
