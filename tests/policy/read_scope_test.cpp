// The project read scope (issue 17): what Policy::decide_read allows with `--read-scope project` /
// `sandbox.filesystem.readScope`, how the layers combine (a restriction is never lowered), and bad values.
#include <unistd.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "tests/policy/test_support.hpp"

using namespace cordon::policy;
using namespace cordon::policy::test;

namespace {

// A TempTree below /var/tmp: the host's /tmp is not the jail's, so a tree there shows only its project.
struct InVarTmp {
    std::string saved;
    bool had = false;
    InVarTmp() {
        if (const char* old = std::getenv("TMPDIR")) {
            saved = old;
            had = true;
        }
        ::setenv("TMPDIR", "/var/tmp", 1);
    }
    void restore() const {
        if (had)
            ::setenv("TMPDIR", saved.c_str(), 1);
        else
            ::unsetenv("TMPDIR");
    }
};
struct VarTmpTree : InVarTmp, TempTree {
    VarTmpTree() { restore(); }
};

Decision read(const PolicyPtr& p, const fs::path& path) {
    return p->decide_read(path);
}

LoadOptions scoped(const TempTree& tree) {
    LoadOptions o = tree.options();
    o.read_scope = "project";
    return o;
}

}  // namespace

TEST_CASE("the default read scope is all: everything but denyRead", "[read-scope]") {
    TempTree tree;
    tree.write("sibling/f", "x");
    auto p = load_ok(tree.options());
    CHECK(p->filesystem().read_scope.scope == ReadScope::All);
    CHECK(read(p, tree.root() / "sibling/f").allowed());
    CHECK(read(p, tree.home() / ".aws/credentials").allowed());
    CHECK(p->to_json()["filesystem"]["readScope"]["scope"] == "all");
}

TEST_CASE("the project scope: the project, system paths and allowRead, not siblings or home",
          "[read-scope]") {
    VarTmpTree tree;
    tree.write("project/src/main.c", "x");
    tree.write("sibling/f", "x");
    tree.write("home/.gitconfig", "x");
    tree.write("home/.aws/credentials", "x");
    LoadOptions o = scoped(tree);
    o.allow_read = {"~/.gitconfig"};
    auto p = load_ok(o);
    CHECK(p->filesystem().read_scope.scope == ReadScope::Project);
    CHECK(read(p, tree.cwd() / "src/main.c").allowed());
    CHECK(read(p, "/usr/bin/env").allowed());
    CHECK(read(p, "/etc/hostname").allowed());
    CHECK(read(p, "/dev/null").allowed());
    CHECK(read(p, "/proc/self/status").allowed());
    CHECK(read(p, tree.home() / ".gitconfig").allowed());
    for (const fs::path& hidden : {tree.root() / "sibling/f", tree.home() / ".aws/credentials", tree.home(),
                                   fs::path("/var/log/syslog"), fs::path("/root/.bashrc")}) {
        Decision d = read(p, hidden);
        INFO(hidden);
        CHECK_FALSE(d.allowed());
    }
    CHECK(read(p, tree.home() / ".aws/credentials").reason == Reason::OutsideReadScope);
    Decision d = read(p, "/var/log/syslog");
    CHECK(d.reason == Reason::OutsideReadScope);
    REQUIRE(d.rule);
    CHECK(d.rule->source.where == "--read-scope");
    CHECK(std::string(to_string(d.reason)) == "outside-read-scope");
}

TEST_CASE("the project scope hides the system's secrets whatever allowRead says", "[read-scope]") {
    TempTree tree;
    LoadOptions o = scoped(tree);
    o.allow_read = {"/etc/shadow", "/etc/sudoers.d"};
    auto p = load_ok(o);
    for (const char* secret : {"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/sudoers",
                               "/etc/sudoers.d/README", "/etc/ssh/ssh_host_rsa_key"}) {
        INFO(secret);
        CHECK_FALSE(read(p, secret).allowed());
    }
    CHECK(read(p, "/etc/ssh/ssh_config").allowed());
    CHECK(read(p, "/etc/ssh/ssh_host_rsa_key.pub").allowed());
    CHECK(read(p, "/etc/passwd").allowed());
}

TEST_CASE("denyRead still wins inside the project scope", "[read-scope]") {
    TempTree tree;
    tree.write("project/.env", "x");
    LoadOptions o = scoped(tree);
    o.deny_read = {".env"};
    auto p = load_ok(o);
    Decision d = read(p, tree.cwd() / ".env");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByDenylist);
    CHECK(read(p, tree.cwd() / "other").allowed());
}

TEST_CASE("the project scope follows symlinks as the jail does", "[read-scope]") {
    TempTree tree;
    tree.write("sibling/secret", "x");
    tree.write("project/real", "x");
    fs::create_symlink(tree.root() / "sibling/secret", tree.cwd() / "out");
    fs::create_symlink("real", tree.cwd() / "in");
    fs::create_symlink(tree.cwd() / "real", tree.root() / "sibling/back");
    auto p = load_ok(scoped(tree));
    CHECK_FALSE(read(p, tree.cwd() / "out").allowed());            // leads outside
    CHECK(read(p, tree.cwd() / "in").allowed());                   // stays inside
    CHECK_FALSE(read(p, tree.root() / "sibling/back").allowed());  // the link itself is hidden
    // Merged /usr: /lib is a link into /usr, both in the scope.
    if (fs::is_symlink("/lib")) CHECK(read(p, "/lib").allowed());
}

TEST_CASE("the host's /tmp is not the jail's: only the project below it is shown", "[read-scope]") {
    TempTree tree;  // below /tmp
    tree.write("sibling/f", "x");
    auto p = load_ok(scoped(tree));
    CHECK(read(p, tree.cwd()).allowed());
    Decision d = read(p, tree.root() / "sibling/f");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::OutsideReadScope);
    CHECK(read(p, "/tmp/made-by-the-command-" + std::to_string(::getpid())).allowed());
    // allowRead below the host's /tmp shows nothing there either (as in the jail).
    tree.write("home/.gitconfig", "x");
    LoadOptions o = scoped(tree);
    o.allow_read = {"~/.gitconfig"};
    CHECK_FALSE(read(load_ok(o), tree.home() / ".gitconfig").allowed());
}

TEST_CASE("readScope in settings: project, all, bad values with file:line", "[read-scope]") {
    TempTree tree;
    SECTION("project in a settings file") {
        tree.project_settings(R"({"sandbox": {"filesystem": {"readScope": "project"}}})");
        auto p = load_ok(tree.options());
        CHECK(p->filesystem().read_scope.scope == ReadScope::Project);
        CHECK(p->filesystem().read_scope.rule.source.layer == Layer::Project);
        CHECK(p->filesystem().read_scope.rule.source.line == 1);
    }
    SECTION("srt shape") {
        fs::path f = tree.write("srt.json", R"({"filesystem": {"readScope": "project"}})");
        LoadOptions o = tree.options();
        o.settings_files = {f};
        CHECK(load_ok(o)->filesystem().read_scope.scope == ReadScope::Project);
    }
    SECTION("an unknown value stops the load, naming file:line") {
        fs::path f =
            tree.project_settings("{\"sandbox\": {\"filesystem\": {\n  \"readScope\": \"projct\"}}}");
        std::string error = load_error(tree.options());
        CHECK_THAT(error, Catch::Contains(f.string() + ":2"));
        CHECK_THAT(error, Catch::Contains("projct"));
    }
    SECTION("a value that is not a string stops the load") {
        tree.project_settings(R"({"sandbox": {"filesystem": {"readScope": true}}})");
        CHECK_THAT(load_error(tree.options()), Catch::Contains("readScope"));
    }
    SECTION("a bad flag value") {
        LoadOptions o = tree.options();
        o.read_scope = "home";
        CHECK_THAT(load_error(o), Catch::Contains("--read-scope"));
    }
}

TEST_CASE("readScope project is never lowered by another layer", "[read-scope]") {
    TempTree tree;
    SECTION("user asks for project, the project's settings (a higher layer) say all") {
        tree.user_settings(R"({"sandbox": {"filesystem": {"readScope": "project"}}})");
        tree.project_settings(R"({"sandbox": {"filesystem": {"readScope": "all"}}})");
        auto p = load_ok(tree.options());
        CHECK(p->filesystem().read_scope.scope == ReadScope::Project);
        CHECK(p->filesystem().read_scope.rule.source.layer == Layer::User);
        REQUIRE(p->warnings().size() == 1);
        CHECK_THAT(p->warnings()[0], Catch::Contains((tree.cwd() / ".claude/settings.json").string() +
                                                     ":1: sandbox.filesystem.readScope"));
        CHECK_THAT(p->warnings()[0], Catch::Contains("does not lower"));
    }
    SECTION("managed asks for project, the flag says all: a warning, project holds") {
        tree.managed_settings(R"({"sandbox": {"filesystem": {"readScope": "project"}}})");
        LoadOptions o = tree.options();
        o.read_scope = "all";
        auto p = load_ok(o);
        CHECK(p->filesystem().read_scope.scope == ReadScope::Project);
        CHECK(p->filesystem().read_scope.rule.source.layer == Layer::Managed);
        REQUIRE_FALSE(p->warnings().empty());
        CHECK_THAT(p->warnings().back(), Catch::Contains("--read-scope all"));
    }
    SECTION("the highest layer that asked is the source") {
        tree.managed_settings(R"({"sandbox": {"filesystem": {"readScope": "project"}}})");
        tree.user_settings(R"({"sandbox": {"filesystem": {"readScope": "project"}}})");
        auto p = load_ok(tree.options());
        CHECK(p->filesystem().read_scope.rule.source.layer == Layer::Managed);
    }
}

TEST_CASE("cordon policy's JSON shows the scope, its source and what it includes", "[read-scope]") {
    VarTmpTree tree;
    fs::path settings = tree.project_settings(R"({"sandbox": {"filesystem": {"readScope": "project",
        "allowRead": ["~/.npmrc"]}}})");
    auto j = load_ok(tree.options())->to_json()["filesystem"]["readScope"];
    CHECK(j["scope"] == "project");
    CHECK(j["source"]["source"]["file"] == settings.string());
    std::vector<std::string> paths;
    for (const auto& entry : j["includes"])
        paths.push_back(entry["path"]);
    auto has = [&](const std::string& p) { return std::find(paths.begin(), paths.end(), p) != paths.end(); };
    CHECK(has("/usr"));
    CHECK(has("/etc"));
    CHECK(has(tree.cwd().string()));
    CHECK(has(settings.string()));
    CHECK(has((tree.home() / ".npmrc").string()));
    CHECK_FALSE(j["hidden"].empty());
}
