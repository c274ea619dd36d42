// Filesystem rules: the four path conventions of Claude Code files, plain paths of srt files and flags,
// normalisation, globs, the defaults, always-read-only names and settings files, decide_read / decide_write.
#include <nlohmann/json.hpp>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

static const PathRule& last(const std::vector<PathRule>& rules) {
    REQUIRE_FALSE(rules.empty());
    return rules.back();
}

TEST_CASE("//path in a Claude Code file is absolute", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(//etc/secret)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(last(p->filesystem().deny_read).path == "/etc/secret");
    CHECK_FALSE(p->decide_read("/etc/secret").allowed());
    CHECK(p->decide_read("/etc/secretive").allowed());
}

TEST_CASE("/path in a project file is relative to the project root", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["Edit(/src/**)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(last(p->filesystem().allow_write).path == tree.cwd() / "src/**");
    CHECK(last(p->filesystem().allow_write).glob);
}

TEST_CASE("/path in a file outside .claude is relative to the file's directory", "[paths]") {
    TempTree tree;
    auto file = tree.write("conf/team.json", R"J({"sandbox": {"filesystem": {"allowWrite": ["/build"]}}})J");
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    CHECK(last(p->filesystem().allow_write).path == tree.root() / "conf/build");
}

TEST_CASE("/path in managed settings is relative to the managed directory", "[paths]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"filesystem": {"denyRead": ["/keys"]}}})J");
    auto p = load_ok(tree.options());
    CHECK(last(p->filesystem().deny_read).path == tree.managed() / "keys");
}

TEST_CASE("/path in user settings is relative to the home directory", "[paths]") {
    TempTree tree;
    tree.user_settings(R"J({"permissions": {"deny": ["Read(/notes)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(last(p->filesystem().deny_read).path == tree.home() / "notes");
}

TEST_CASE("~/path is relative to the home directory", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(~/.ssh)", "Read(~)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(p->filesystem().deny_read.at(0).path == tree.home() / ".ssh");
    CHECK(p->filesystem().deny_read.at(1).path == tree.home());
}

TEST_CASE("./path and path are relative to the working directory", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(./.env)", "Read(secrets/key)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(p->filesystem().deny_read.at(0).path == tree.cwd() / ".env");
    CHECK(p->filesystem().deny_read.at(1).path == tree.cwd() / "secrets/key");
}

TEST_CASE("sandbox.filesystem paths follow the Claude Code conventions", "[paths]") {
    TempTree tree;
    tree.project_settings(
        R"J({"sandbox": {"filesystem": {"allowWrite": ["//var/cache/app", "~/out", "gen", "/tools"],
                                                        "denyWrite": ["gen/keep"], "denyRead": ["~/.aws"],
                                                        "allowRead": ["~/.aws/config"]}}})J");
    auto p = load_ok(tree.options());
    const auto& w = p->filesystem().allow_write;
    REQUIRE(w.size() == 6);  // cwd, /tmp, then the four
    CHECK(w[2].path == "/var/cache/app");
    CHECK(w[3].path == tree.home() / "out");
    CHECK(w[4].path == tree.cwd() / "gen");
    CHECK(w[5].path == tree.cwd() / "tools");
    CHECK(last(p->filesystem().deny_write).path == tree.cwd() / "gen/keep");
    CHECK(last(p->filesystem().deny_read).path == tree.home() / ".aws");
    CHECK(last(p->filesystem().allow_read).path == tree.home() / ".aws/config");
}

TEST_CASE("flag paths are absolute, ~/ or relative to the working directory", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_write = {"/srv/out", "~/cache", "build"};
    o.deny_read = {"./private"};
    auto p = load_ok(o);
    const auto& w = p->filesystem().allow_write;
    REQUIRE(w.size() == 5);
    CHECK(w[2].path == "/srv/out");
    CHECK(w[3].path == tree.home() / "cache");
    CHECK(w[4].path == tree.cwd() / "build");
    CHECK(w[4].rule.source.where == "--allow-write");
    CHECK(w[4].rule.source.layer == Layer::Flags);
    CHECK(last(p->filesystem().deny_read).path == tree.cwd() / "private");
}

TEST_CASE("paths are lexically normalised", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_write = {"/srv/a/../b/./c/", "x//y/"};
    auto p = load_ok(o);
    CHECK(p->filesystem().allow_write[2].path == "/srv/b/c");
    CHECK(p->filesystem().allow_write[3].path == tree.cwd() / "x/y");
    CHECK(p->decide_write("/srv/b/c/d/../e").allowed());
}

TEST_CASE("empty paths are rejected with file, JSON path and entry", "[paths][reject]") {
    TempTree tree;
    auto file = tree.project_settings("{\n\"sandbox\": {\"filesystem\": {\"denyRead\": [\"a\", \"\"]}}}");
    CHECK_THAT(load_error(tree.options()),
               Catch::StartsWith(file.string() + ":2: sandbox.filesystem.denyRead[1]: ") &&
                   Catch::Contains("empty"));
    TempTree tree2;
    tree2.project_settings(R"J({"permissions": {"deny": ["Edit()"]
}
})J");
    CHECK_THAT(load_error(tree2.options()),
               Catch::Contains("permissions.deny[0]") && Catch::Contains("\"Edit()\""));
    TempTree tree3;
    LoadOptions o = tree3.options();
    o.deny_write = {""};
    CHECK_THAT(load_error(o), Catch::Contains("--deny-write \"\""));
}

TEST_CASE("Edit allow rules add writable paths", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["Edit(//srv/data)"]
}
})J");
    auto p = load_ok(tree.options());
    auto d = p->decide_write("/srv/data/file");
    CHECK(d.allowed());
    REQUIRE(d.rule);
    CHECK(d.rule->text == "Edit(//srv/data)");
    CHECK(d.rule->source.where == "permissions.allow[0]");
}

TEST_CASE("Edit deny rules are denyWrite", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Edit(./vendor)"]
}
})J");
    auto p = load_ok(tree.options());
    auto d = p->decide_write(tree.cwd() / "vendor/lib.c");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::BlockedByDenylist);
    CHECK(d.rule->text == "Edit(./vendor)");
    CHECK(p->decide_write(tree.cwd() / "vendored").allowed());
}

TEST_CASE("Read deny rules are denyRead and Read allow rules re-expose", "[paths]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(~/.config)"], "allow": ["Read(~/.config/git)"]
}
})J");
    auto p = load_ok(tree.options());
    auto denied = p->decide_read(tree.home() / ".config/gh/hosts.yml");
    CHECK_FALSE(denied.allowed());
    CHECK(denied.reason == Reason::BlockedByDenylist);
    CHECK(denied.rule->text == "Read(~/.config)");
    auto allowed = p->decide_read(tree.home() / ".config/git/config");
    CHECK(allowed.allowed());
    CHECK(allowed.reason == Reason::AllowedByRule);
    CHECK(allowed.rule->text == "Read(~/.config/git)");
}

TEST_CASE("reads are allowed by default without a rule", "[paths]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    auto d = p->decide_read("/etc/passwd");
    CHECK(d.allowed());
    CHECK(d.reason == Reason::DefaultAllow);
    CHECK_FALSE(d.rule);
}

TEST_CASE("an allowRead less specific than the denyRead does not re-expose", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_read = {"/data"};
    o.deny_read = {"/data/secret"};
    auto p = load_ok(o);
    CHECK_FALSE(p->decide_read("/data/secret/x").allowed());
    CHECK(p->decide_read("/data/public").allowed());
    CHECK(p->decide_read("/data/public").reason == Reason::DefaultAllow);
}

TEST_CASE("equal allowRead and denyRead: deny wins", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_read = {"/data"};
    o.deny_read = {"/data"};
    CHECK_FALSE(load_ok(o)->decide_read("/data/x").allowed());
}

TEST_CASE("the working directory and /tmp are writable by default", "[paths]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    auto d = p->decide_write(tree.cwd() / "src/main.c");
    CHECK(d.allowed());
    CHECK(d.rule->source.layer == Layer::Default);
    CHECK(p->decide_write("/tmp/scratch").allowed());
    CHECK(p->decide_write(tree.cwd()).allowed());
}

TEST_CASE("writes elsewhere are denied by default", "[paths]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    for (const char* path : {"/etc/passwd", "/usr/bin/x", "/", "/tmpfoo"}) {
        auto d = p->decide_write(path);
        CHECK_FALSE(d.allowed());
        CHECK(d.reason == Reason::DefaultDeny);
        CHECK_FALSE(d.rule);
    }
    CHECK_FALSE(p->decide_write("/var/lib/cordon-test/file").allowed());
}

TEST_CASE("denyWrite carves out of allowWrite", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_write = {"dist"};
    auto p = load_ok(o);
    CHECK_FALSE(p->decide_write(tree.cwd() / "dist/app.js").allowed());
    CHECK(p->decide_write(tree.cwd() / "src/app.js").allowed());
}

TEST_CASE("denyWrite beats a more specific allowWrite", "[paths]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_write = {"/srv"};
    o.allow_write = {"/srv/data/out"};
    CHECK_FALSE(load_ok(o)->decide_write("/srv/data/out/f").allowed());
}

TEST_CASE("always-read-only names are listed for the jail", "[paths][read-only]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const auto& names = p->filesystem().always_read_only_names;
    for (const char* name : {".claude/settings.json",
                             ".claude/settings.local.json",
                             ".bashrc",
                             ".bash_profile",
                             ".zshrc",
                             ".zprofile",
                             ".profile",
                             ".gitconfig",
                             ".gitmodules",
                             ".mcp.json",
                             ".ripgreprc",
                             ".git/hooks",
                             ".git/config",
                             ".vscode",
                             ".idea",
                             ".claude/commands",
                             ".claude/agents",
                             ".claude/skills",
                             ".claude/hooks",
                             ".claude/workflows",
                             ".claude/scheduled_tasks.json",
                             ".credentials.json"})
        CHECK(std::find(names.begin(), names.end(), name) != names.end());
    CHECK(names.size() == 22);
    const auto& home = p->filesystem().home_read_only_names;
    for (const char* name :
         {".ssh", ".zshenv", ".zlogin", ".bash_login", ".bash_logout", ".config/git", ".config/systemd",
          ".config/autostart", ".local/bin", "bin", ".claude", ".claude.json"})
        CHECK(std::find(home.begin(), home.end(), name) != home.end());
    CHECK(home.size() == 12);
    CHECK(names == always_read_only_names());
    CHECK(home == home_read_only_names());
}

TEST_CASE("always-read-only names in the working directory cannot be written", "[paths][read-only]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    for (const char* name :
         {".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".gitconfig", ".gitmodules",
          ".mcp.json", ".ripgreprc", ".git/config", ".claude/settings.json", ".claude/settings.local.json"}) {
        auto d = p->decide_write(tree.cwd() / name);
        INFO(name);
        CHECK_FALSE(d.allowed());
        CHECK(d.reason == Reason::AlwaysReadOnly);
        REQUIRE(d.rule);
        CHECK(d.rule->source.layer == Layer::Default);
    }
}

TEST_CASE("always-read-only directories protect everything inside", "[paths][read-only]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    CHECK(p->decide_write(tree.cwd() / ".git/hooks/pre-commit").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".vscode/settings.json").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".idea/workspace.xml").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".git/objects/ab/cdef").allowed());
    CHECK(p->decide_write(tree.cwd() / ".claude/commands/x.md").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".claude/agents/a.md").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".claude/scheduled_tasks.json").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".claude/notes.md").allowed());
}

TEST_CASE("always-read-only names are protected at any depth", "[paths][read-only]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    CHECK(p->decide_write(tree.cwd() / "sub/.git/hooks/x").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / "a/b/.bashrc").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write("/tmp/x/.gitconfig").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / "docs/bashrc").allowed());
    CHECK(p->decide_write(tree.cwd() / "hooks/.git").allowed());
}

TEST_CASE("always-read-only beats an explicit allowWrite", "[paths][read-only]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_write = {"~"};
    auto p = load_ok(o);
    CHECK(p->decide_write(tree.home() / "notes.txt").allowed());
    auto d = p->decide_write(tree.home() / ".bashrc");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::AlwaysReadOnly);
    CHECK(d.rule->text == ".bashrc");
}

TEST_CASE("every settings file read is read-only", "[paths][read-only]") {
    TempTree tree;
    auto file = tree.write(tree.cwd() / "config/team.json", allowed_domains_json(R"J(["a.example.com"])J"));
    LoadOptions o = tree.options();
    o.settings_files = {file};
    auto p = load_ok(o);
    auto d = p->decide_write(file);
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::AlwaysReadOnly);
    CHECK(d.rule->text == file.string());
    CHECK(p->decide_write(tree.cwd() / "config/other.json").allowed());
    bool listed = false;
    for (const auto& rule : p->filesystem().deny_write)
        listed = listed || rule.path == file;
    CHECK(listed);
}

TEST_CASE("deny_write lists the always-read-only names under the working directory", "[paths][read-only]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    bool found = false;
    for (const auto& rule : p->filesystem().deny_write)
        found = found || (rule.path == tree.cwd() / ".git/hooks" && rule.rule.source.layer == Layer::Default);
    CHECK(found);
}

TEST_CASE("glob ** matches any depth", "[paths][glob]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"allow": ["Edit(//srv/src/**)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK(p->decide_write("/srv/src/a.c").allowed());
    CHECK(p->decide_write("/srv/src/a/b/c.c").allowed());
    // `**` matches zero components too: the jail makes /srv/src itself writable (it expands the glob to
    // what exists, /srv/src included), and `cordon check` agrees with it.
    CHECK(p->decide_write("/srv/src").allowed());
    CHECK_FALSE(p->decide_write("/srv").allowed());
    CHECK_FALSE(p->decide_write("/srv/srcx/a.c").allowed());
}

TEST_CASE("glob * matches within one component", "[paths][glob]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(*.env)", "Read(//srv/*/secret)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(p->decide_read(tree.cwd() / ".env").allowed());
    CHECK_FALSE(p->decide_read(tree.cwd() / "prod.env").allowed());
    CHECK(p->decide_read(tree.cwd() / "sub/prod.env").allowed());
    CHECK_FALSE(p->decide_read("/srv/app/secret").allowed());
    CHECK_FALSE(p->decide_read("/srv/app/secret/key").allowed());
    CHECK(p->decide_read("/srv/a/b/secret").allowed());
}

TEST_CASE("glob **/ in the middle matches zero or more directories", "[paths][glob]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_read = {"/repo/**/*.pem"};
    auto p = load_ok(o);
    CHECK_FALSE(p->decide_read("/repo/key.pem").allowed());
    CHECK_FALSE(p->decide_read("/repo/a/b/key.pem").allowed());
    CHECK(p->decide_read("/repo/a/b/key.pub").allowed());
    CHECK(p->filesystem().deny_read.at(0).glob);
}

TEST_CASE("glob ? and [..] match single characters", "[paths][glob]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_read = {"/logs/app?.log", "/keys/[ab]*", "/keys/[!c-z]x"};
    auto p = load_ok(o);
    CHECK_FALSE(p->decide_read("/logs/app1.log").allowed());
    CHECK(p->decide_read("/logs/app12.log").allowed());
    CHECK_FALSE(p->decide_read("/keys/alpha").allowed());
    CHECK_FALSE(p->decide_read("/keys/bravo").allowed());
    CHECK(p->decide_read("/keys/charlie").allowed());
    CHECK_FALSE(p->decide_read("/keys/1x").allowed());
}

TEST_CASE("non-glob rules are not globs", "[paths][glob]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_read = {"/plain/dir"};
    auto p = load_ok(o);
    CHECK_FALSE(p->filesystem().deny_read.at(0).glob);
    CHECK_FALSE(p->decide_read("/plain/dir").allowed());
    CHECK(p->decide_read("/plain/directory").allowed());
}

TEST_CASE("glob denyWrite carves out of writable areas", "[paths][glob]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Edit(/**/*.lock)"]
}
})J");
    auto p = load_ok(tree.options());
    CHECK_FALSE(p->decide_write(tree.cwd() / "Cargo.lock").allowed());
    CHECK_FALSE(p->decide_write(tree.cwd() / "a/b/yarn.lock").allowed());
    CHECK(p->decide_write(tree.cwd() / "a/b/yarn.txt").allowed());
}

TEST_CASE("relative paths given to decide_* are relative to the working directory", "[paths]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    CHECK(p->decide_write("src/x").allowed());
    CHECK(p->decide_write(".bashrc").reason == Reason::AlwaysReadOnly);
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

TEST_CASE("a settings file reached through a symlink is read-only at its target too", "[paths][read-only]") {
    TempTree tree;
    auto real =
        tree.write(tree.cwd() / "conf/real-settings.json", allowed_domains_json(R"J(["a.example.com"])J"));
    fs::create_directories(tree.cwd() / ".claude");
    fs::create_symlink(real, tree.cwd() / ".claude/settings.json");
    auto p = load_ok(tree.options());
    CHECK(allows(p, "a.example.com"));
    CHECK(p->decide_write(real).reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / ".claude/settings.json").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(tree.cwd() / "conf/other.json").allowed());
}

TEST_CASE("managed settings files are read-only", "[paths][read-only]") {
    TempTree tree;
    auto file = tree.managed_settings("{}");
    auto drop_in = tree.write(tree.managed() / "managed-settings.d/a.json", "{}");
    LoadOptions o = tree.options();
    o.allow_write = {tree.managed().string()};
    auto p = load_ok(o);
    CHECK(p->decide_write(tree.managed() / "new.json").allowed());
    CHECK(p->decide_write(file).reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write(drop_in).reason == Reason::AlwaysReadOnly);
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

// The jail issue, §1: running from /, a system directory or the home directory.
TEST_CASE("the working directory is writable by default only when it is a project", "[paths][cwd]") {
    const fs::path home = "/home/alice";
    CHECK(working_directory_refusal("/", home) == "/ is the root directory");
    for (const char* dir : {"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/boot", "/var", "/opt",
                            "/srv", "/root", "/home", "/proc", "/sys", "/dev", "/run"})
        CHECK(working_directory_refusal(dir, home) == std::string(dir) + " is a system directory");
    CHECK(working_directory_refusal("/usr/local/bin", home) ==
          "/usr/local/bin is inside the system directory /usr");
    CHECK(working_directory_refusal("/etc/ssh", home) == "/etc/ssh is inside the system directory /etc");
    CHECK(working_directory_refusal("/dev/pts", home) == "/dev/pts is inside the system directory /dev");
    CHECK(working_directory_refusal("/lib32", home) == "/lib32 is a system directory");
    CHECK(working_directory_refusal("/libx32/x", home) == "/libx32/x is inside the system directory /libx32");
    CHECK(working_directory_refusal("/library/project", home).empty());
    CHECK(working_directory_refusal("/home/alice", home) == "/home/alice is the home directory");
    CHECK(working_directory_refusal("/data", "/data/users/alice") ==
          "/data holds the home directory /data/users/alice");
    for (const char* dir : {"/home/alice/project", "/var/tmp/build", "/srv/app", "/opt/tool",
                            "/run/user/1000/x", "/home/bob", "/tmp", "/data/src", "/dev/shm/project"})
        CHECK(working_directory_refusal(dir, home).empty());
}

TEST_CASE("from /, every write is refused with the reason, --allow-write . insists", "[paths][cwd]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.cwd = "/";
    auto p = load_ok(o);
    const auto& wd = p->filesystem().working_directory;
    CHECK_FALSE(wd.writable);
    CHECK(wd.refusal == "/ is the root directory");
    auto d = p->decide_write("/etc/passwd");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::DefaultDeny);
    REQUIRE(d.rule);
    CHECK(d.rule->source.where.find("/ is the root directory") != std::string::npos);
    CHECK(d.explain().find("--allow-write .") != std::string::npos);
    CHECK(p->decide_write("/tmp/x").allowed());
    for (const auto& rule : p->filesystem().allow_write)
        CHECK(rule.path != "/");

    o.allow_write = {"."};
    p = load_ok(o);
    CHECK(p->filesystem().working_directory.writable);
    CHECK(p->decide_write("/srv/x").allowed());
    CHECK(p->decide_write("/.bashrc").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write("/root/.ssh/authorized_keys").reason == Reason::AlwaysReadOnly);
    CHECK(p->decide_write("/home/bob/.local/bin/ls").reason == Reason::AlwaysReadOnly);
}

TEST_CASE("from the home directory: refused by default, insisted, its protected names stay read-only",
          "[paths][cwd][read-only]") {
    TempTree tree;
    LoadOptions o = tree.options();
    o.cwd = tree.home();
    auto p = load_ok(o);
    CHECK_FALSE(p->filesystem().working_directory.writable);
    for (const auto& rule : p->filesystem().allow_write)
        CHECK(rule.path != tree.home());
    o.cwd = tree.root();  // an ancestor of the home directory
    CHECK_FALSE(load_ok(o)->filesystem().working_directory.writable);

    o.cwd = tree.home();
    o.allow_write = {"."};
    p = load_ok(o);
    CHECK(p->filesystem().working_directory.writable);
    CHECK(p->decide_write(tree.home() / "notes.txt").allowed());
    for (const char* rel : {".ssh/authorized_keys", ".local/bin/ls", ".config/systemd/user/x.service",
                            ".config/autostart/x.desktop", ".config/git/config", "bin/ls", ".zshenv",
                            ".zlogin", ".bash_login", ".bash_logout", ".claude/settings.json",
                            ".claude/CLAUDE.md", ".claude.json", ".claude/.credentials.json", ".bashrc"}) {
        INFO(rel);
        auto d = p->decide_write(tree.home() / rel);
        CHECK_FALSE(d.allowed());
        CHECK(d.reason == Reason::AlwaysReadOnly);
    }
    CHECK(p->decide_write(tree.home() / ".config/other/x").allowed());
    CHECK(p->decide_write(tree.home() / "project/bin/x").allowed());  // `bin` only at the top of a home
}

TEST_CASE("a project directory stays writable by default", "[paths][cwd]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    CHECK(p->filesystem().working_directory.writable);
    CHECK(p->filesystem().working_directory.refusal.empty());
    CHECK(p->decide_write(tree.cwd() / "src/a.c").allowed());
    CHECK(p->to_json().dump().find("\"workingDirectory\":{\"path\"") != std::string::npos);
}

// The jail issue, §4: symlinks in allowWrite.
TEST_CASE("a write through a symlink is decided where it leads", "[paths][symlink]") {
    TempTree tree;
    fs::create_directories(tree.cwd() / "ua");
    fs::create_directory_symlink("/etc", tree.cwd() / "ua/src");  // the tree is in /tmp: writable
    LoadOptions o = tree.options();
    o.allow_write = {"ua"};
    auto p = load_ok(o);
    auto d = p->decide_write(tree.cwd() / "ua/src/x");
    CHECK_FALSE(d.allowed());
    CHECK(d.reason == Reason::DefaultDeny);
    CHECK(p->decide_write(tree.cwd() / "ua/other").allowed());
}

TEST_CASE("an allowWrite symlink outside every writable area is skipped, not followed", "[paths][symlink]") {
    TempTree tree;
    fs::create_directories(tree.cwd() / "ua");
    fs::create_directory_symlink("/etc", tree.cwd() / "ua/src");            // the tree is in /tmp: writable
    fs::create_directory_symlink(tree.cwd() / "ua", tree.cwd() / "ua/up");  // above the entry
    fs::create_directories(tree.cwd() / "real");
    fs::create_directory_symlink(tree.cwd() / "real", tree.cwd() / "inside");
    fs::create_symlink(tree.root() / "missing", tree.cwd() / "dangling");
    fs::create_symlink(tree.cwd() / "loop", tree.cwd() / "loop");
    LoadOptions o = tree.options();
    o.allow_write = {"ua/src", "ua/src/deeper", "inside", "dangling", "loop"};
    auto p = load_ok(o);
    const auto& warnings = p->warnings();
    auto warned = [&](const std::string& text) {
        return std::any_of(warnings.begin(), warnings.end(),
                           [&](const std::string& w) { return w.find(text) != std::string::npos; });
    };
    CHECK(warned("--allow-write: allowWrite `ua/src`: "));
    CHECK(warned("outside every writable area; not followed; skipped"));
    CHECK(warned("allowWrite `ua/src/deeper`"));
    CHECK(warned("allowWrite `dangling`"));
    CHECK(warned("is a dangling symlink; skipped"));
    CHECK(warned("is a symlink loop; skipped"));
    CHECK_FALSE(warned("allowWrite `inside`"));  // leads into the working directory: followed
    CHECK_FALSE(p->decide_write("/etc/x").allowed());
    CHECK_FALSE(p->decide_write("/etc/deeper/x").allowed());
    CHECK(p->decide_write(tree.cwd() / "inside/x").allowed());
    for (const auto& rule : p->filesystem().allow_write)
        CHECK(rule.rule.text != "ua/src");

    o.allow_write = {"ua/up"};
    p = load_ok(o);
    CHECK(std::any_of(p->warnings().begin(), p->warnings().end(),
                      [](const std::string& w) { return w.find("above the entry") != std::string::npos; }));
}

TEST_CASE("an allowWrite symlink where the command cannot write is followed, as srt does",
          "[paths][symlink]") {
    TempTree tree;
    // The user's own link, outside every writable area: `data/current -> v2`.
    fs::create_directories(tree.root() / "data/v2");
    fs::create_directory_symlink("v2", tree.root() / "data/current");
    LoadOptions o = tree.options();
    o.allow_write = {(tree.root() / "data/current").string()};
    auto p = load_ok(o);
    for (const auto& w : p->warnings())
        CHECK(w.find("data/current") == std::string::npos);
    CHECK(p->decide_write(tree.root() / "data/v2/x").allowed());
    CHECK(p->decide_write(tree.root() / "data/current/x").allowed());
}

}  // namespace cordon::policy::test
