// Mount plans computed from filesystem policies over a scratch directory tree. No privileges needed.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "jail/mount_plan.hpp"

namespace fs = std::filesystem;
using cordon::jail::make_mount_plan;
using cordon::jail::MountKind;
using cordon::jail::MountOp;
using cordon::jail::MountPlan;
using cordon::jail::PlanInput;

namespace {

const std::vector<std::string> kNames = {".claude/settings.json",
                                         ".claude/settings.local.json",
                                         ".bashrc",
                                         ".git/hooks",
                                         ".git/config",
                                         ".vscode",
                                         ".mcp.json"};

struct Scratch {
    fs::path root;
    Scratch() {
        std::string tmpl = (fs::temp_directory_path() / "cordon-plan-XXXXXX").string();
        root = fs::canonical(::mkdtemp(tmpl.data()));
        fs::create_directories(root / "project");
    }
    ~Scratch() { fs::remove_all(root); }
    fs::path file(const fs::path& rel) {
        fs::create_directories((root / rel).parent_path());
        std::ofstream(root / rel) << "x";
        return root / rel;
    }
    fs::path dir(const fs::path& rel) {
        fs::create_directories(root / rel);
        return root / rel;
    }
    PlanInput input() {
        PlanInput in;
        in.cwd = root / "project";
        in.home = root;
        in.filesystem.always_read_only_names = kNames;
        return in;
    }
};

cordon::policy::PathRule rule(const fs::path& p, bool glob = false) {
    return {p, glob, {p.string(), {}}};
}

// The index of the op of `kind` at `path`, or -1.
int find(const MountPlan& plan, MountKind kind, const fs::path& path) {
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if (plan.ops[i].kind == kind && plan.ops[i].path == path) return static_cast<int>(i);
    return -1;
}

bool has_placeholder(const MountPlan& plan, const fs::path& path, bool fifo) {
    return std::any_of(plan.placeholders.begin(), plan.placeholders.end(),
                       [&](const auto& p) { return p.path == path && p.fifo == fifo; });
}

}  // namespace

TEST_CASE("default plan: read-only root, private /tmp, /proc and /dev, then deeper mounts such as the cwd") {
    Scratch s;
    auto plan = make_mount_plan(s.input());
    REQUIRE(plan.ops.size() >= 5);
    CHECK(plan.ops.front().kind == MountKind::RootReadOnly);
    CHECK(find(plan, MountKind::PrivateTmp, "/tmp") == 1);
    int proc = find(plan, MountKind::Proc, "/proc"), dev = find(plan, MountKind::Dev, "/dev");
    REQUIRE(proc > 1);
    REQUIRE(dev > 1);
    // Mounted by depth: a writable root below /dev/shm (a project on the scratch tmpfs) lands on the jail's
    // /dev instead of being hidden by it.
    CHECK(find(plan, MountKind::Writable, s.root / "project") > std::max(proc, dev));
    for (std::size_t i = 1; i < plan.ops.size(); ++i) {
        auto depth = [](const std::filesystem::path& p) { return std::distance(p.begin(), p.end()); };
        CHECK(depth(plan.ops[i - 1].path) <= depth(plan.ops[i].path));
    }
    CHECK(std::find(plan.writable_roots.begin(), plan.writable_roots.end(), s.root / "project") !=
          plan.writable_roots.end());
}

TEST_CASE("the private temp dir of the policy is the tmpfs, not a bind of the host's /tmp") {
    Scratch s;
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule("/tmp"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, "/tmp") == -1);
    CHECK(find(plan, MountKind::PrivateTmp, "/tmp") >= 0);
}

TEST_CASE("existing always-read-only paths in a writable root are bound read-only after it") {
    Scratch s;
    s.file("project/.bashrc");
    s.dir("project/.git/hooks");
    s.file("project/.git/config");
    auto plan = make_mount_plan(s.input());
    int root = find(plan, MountKind::Writable, s.root / "project");
    for (const char* name : {".bashrc", ".git/hooks", ".git/config"}) {
        INFO(name);
        CHECK(find(plan, MountKind::ReadOnly, s.root / "project" / name) > root);
    }
    CHECK_FALSE(has_placeholder(plan, s.root / "project/.bashrc", false));
}

TEST_CASE("with the supervisor deciding (user notification): no placeholder, no scan below the top") {
    Scratch s;
    s.dir("project/.git");
    s.file("project/.bashrc");
    s.file("project/vendor/lib/.git/hooks/pre-commit");
    auto in = s.input();
    in.placeholders = false;
    auto plan = make_mount_plan(in);
    const fs::path p = s.root / "project";
    CHECK(plan.placeholders.empty());
    // What exists at the top keeps its read-only bind (it also stops chmod, xattrs, utimes).
    CHECK(find(plan, MountKind::ReadOnly, p / ".bashrc") >= 0);
    // Nothing below the top is looked for: the supervisor decides there at each call.
    CHECK(find(plan, MountKind::ReadOnly, p / "vendor/lib/.git/hooks") < 0);
    CHECK(find(plan, MountKind::ReadOnly, p / ".git/hooks") < 0);
}

TEST_CASE("missing always-read-only paths get a placeholder at their first missing component") {
    Scratch s;
    s.dir("project/.git");  // a repository without hooks yet
    auto plan = make_mount_plan(s.input());
    const fs::path p = s.root / "project";
    CHECK(has_placeholder(plan, p / ".bashrc", false));  // a file name
    CHECK(has_placeholder(plan, p / ".mcp.json", false));
    CHECK(has_placeholder(plan, p / ".git/hooks", false));  // a file blocks a directory too
    CHECK(has_placeholder(plan, p / ".git/config", false));
    CHECK(has_placeholder(plan, p / ".vscode", false));
    CHECK(has_placeholder(plan, p / ".claude", false));  // the first missing component
    CHECK_FALSE(has_placeholder(plan, p / ".claude/settings.json", false));
    CHECK(find(plan, MountKind::ReadOnly, p / ".claude") > find(plan, MountKind::Writable, p));
    CHECK(find(plan, MountKind::ReadOnly, p / ".git/hooks") >= 0);
    // Nothing is created by planning.
    CHECK_FALSE(fs::exists(p / ".bashrc"));
    CHECK_FALSE(fs::exists(p / ".claude"));
}

TEST_CASE("no .git at all: .git itself is the placeholder") {
    Scratch s;
    auto plan = make_mount_plan(s.input());
    CHECK(has_placeholder(plan, s.root / "project/.git", true));
}

TEST_CASE("protected paths outside writable areas need nothing (already read-only)") {
    Scratch s;
    s.file("elsewhere/.bashrc");
    auto in = s.input();
    in.filesystem.deny_write.push_back(rule(s.root / "elsewhere/.bashrc"));
    in.filesystem.deny_write.push_back(rule(s.root / "elsewhere/missing"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::ReadOnly, s.root / "elsewhere/.bashrc") == -1);
    CHECK_FALSE(has_placeholder(plan, s.root / "elsewhere/missing", true));
}

TEST_CASE("denyWrite inside allowWrite: read-only wins, also at the same path") {
    Scratch s;
    s.dir("data/locked");
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "data"));
    in.filesystem.allow_write.push_back(rule(s.root / "data/locked"));
    in.filesystem.deny_write.push_back(rule(s.root / "data/locked"));
    auto plan = make_mount_plan(in);
    int w = find(plan, MountKind::Writable, s.root / "data/locked");
    int r = find(plan, MountKind::ReadOnly, s.root / "data/locked");
    REQUIRE(w >= 0);
    CHECK(r > w);
}

TEST_CASE("paths are resolved through symlinks before binding") {
    Scratch s;
    s.dir("real/out");
    fs::create_directory_symlink(s.root / "real", s.root / "link");
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "link/out"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "real/out") >= 0);
    CHECK(find(plan, MountKind::Writable, s.root / "link/out") == -1);
}

TEST_CASE("a symlinked always-read-only file protects its target inside the writable area") {
    Scratch s;
    s.file("project/dotfiles/bashrc");
    fs::create_symlink(s.root / "project/dotfiles/bashrc", s.root / "project/.bashrc");
    auto plan = make_mount_plan(s.input());
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/dotfiles/bashrc") >= 0);
}

TEST_CASE("a symlinked protected file: the link itself gets a read-only file, also when it dangles") {
    Scratch s;
    s.file("project/dotfiles/bashrc");
    fs::create_symlink("dotfiles/bashrc", s.root / "project/.bashrc");
    fs::create_symlink(s.root / "outside/missing", s.root / "project/.mcp.json");
    s.dir("project/shared-vscode");
    fs::create_symlink("shared-vscode", s.root / "project/.vscode");
    auto plan = make_mount_plan(s.input());
    auto op_at = [&](const fs::path& p) {
        return std::find_if(plan.ops.begin(), plan.ops.end(), [&](const MountOp& op) {
            return op.kind == MountKind::ReadOnlyLink && op.path == p;
        });
    };
    // A link to a file: the link shows its target, read-only; the target is read-only too.
    auto bashrc = op_at(s.root / "project/.bashrc");
    REQUIRE(bashrc != plan.ops.end());
    CHECK(bashrc->source == s.root / "project/dotfiles/bashrc");
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/dotfiles/bashrc") >= 0);
    // A dangling link: an empty read-only file, and no bind that would follow the link (and fail).
    auto mcp = op_at(s.root / "project/.mcp.json");
    REQUIRE(mcp != plan.ops.end());
    CHECK(mcp->source.empty());
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/.mcp.json") < 0);
    // A link to a directory cannot carry a file: its target is protected, and the user is told.
    CHECK(op_at(s.root / "project/.vscode") == plan.ops.end());
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/shared-vscode") >= 0);
    CHECK(std::any_of(plan.notices.begin(), plan.notices.end(), [](const std::string& n) {
        return n.find(".vscode is a symlink") != std::string::npos;
    }));
}

TEST_CASE("allowWrite of a path that does not exist is a notice, not a mount") {
    Scratch s;
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "nope"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "nope") == -1);
    REQUIRE_FALSE(plan.notices.empty());
    CHECK(plan.notices.back().find("does not exist") != std::string::npos);
}

TEST_CASE("denyRead masks directories with a tmpfs and files with an empty file, allowRead re-exposes") {
    Scratch s;
    s.file("secrets/key.pem");
    s.file("secrets/public/readme");
    s.file("token");
    auto in = s.input();
    in.filesystem.deny_read.push_back(rule(s.root / "secrets"));
    in.filesystem.deny_read.push_back(rule(s.root / "token"));
    in.filesystem.deny_read.push_back(rule(s.root / "absent"));
    in.filesystem.allow_read.push_back(rule(s.root / "secrets/public"));
    in.filesystem.allow_read.push_back(rule(s.root / "project"));  // not inside a mask: nothing to do
    auto plan = make_mount_plan(in);
    int mask = find(plan, MountKind::MaskDir, s.root / "secrets");
    REQUIRE(mask >= 0);
    CHECK(find(plan, MountKind::MaskFile, s.root / "token") >= 0);
    CHECK(find(plan, MountKind::ReadOnly, s.root / "secrets/public") > mask);
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project") == -1);
    CHECK(find(plan, MountKind::MaskDir, s.root / "absent") == -1);
}

TEST_CASE("a writable root inside a denied directory stays visible, a denied dir inside it is hidden") {
    Scratch s;
    s.dir("project/private");
    auto in = s.input();
    in.filesystem.deny_read.push_back(rule(s.root));
    in.filesystem.deny_read.push_back(rule(s.root / "project/private"));
    auto plan = make_mount_plan(in);
    int outer = find(plan, MountKind::MaskDir, s.root);
    int cwd = find(plan, MountKind::Writable, s.root / "project");
    int inner = find(plan, MountKind::MaskDir, s.root / "project/private");
    CHECK(outer >= 0);
    CHECK(cwd > outer);
    CHECK(inner > cwd);
}

TEST_CASE("protection is not re-exposed inside a denyRead mask") {
    Scratch s;
    s.dir("project/.git/hooks");
    auto in = s.input();
    in.filesystem.deny_read.push_back(rule(s.root / "project/.git"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::MaskDir, s.root / "project/.git") >= 0);
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/.git/hooks") == -1);
}

TEST_CASE("globs apply to what exists, with a notice") {
    Scratch s;
    s.file("project/a.key");
    s.file("project/sub/b.key");
    s.file("project/c.txt");
    auto in = s.input();
    in.filesystem.deny_read.push_back(rule(s.root / "project/**/*.key", true));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::MaskFile, s.root / "project/a.key") >= 0);
    CHECK(find(plan, MountKind::MaskFile, s.root / "project/sub/b.key") >= 0);
    CHECK(find(plan, MountKind::MaskFile, s.root / "project/c.txt") == -1);
    bool noticed = std::any_of(plan.notices.begin(), plan.notices.end(), [](const std::string& n) {
        return n.find("created later") != std::string::npos;
    });
    CHECK(noticed);
}

TEST_CASE("nested always-read-only names below a writable root are protected") {
    Scratch s;
    s.dir("project/vendor/lib/.git/hooks");
    s.file("project/sub/.claude/settings.json");
    auto plan = make_mount_plan(s.input());
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/vendor/lib/.git/hooks") >= 0);
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/sub/.claude/settings.json") >= 0);
}

TEST_CASE(
    "a nested repository without hooks gets a placeholder for them, nested files only where they exist") {
    Scratch s;
    s.file("project/vendor/lib/.git/HEAD");
    s.dir("project/sub/.claude");
    s.dir("project/docs");
    auto plan = make_mount_plan(s.input());
    CHECK(has_placeholder(plan, s.root / "project/vendor/lib/.git/hooks", false));
    CHECK(has_placeholder(plan, s.root / "project/vendor/lib/.git/config", false));
    CHECK(find(plan, MountKind::ReadOnly, s.root / "project/vendor/lib/.git/hooks") >= 0);
    // The directory holding the placeholders is pinned against a rename.
    CHECK(find(plan, MountKind::Writable, s.root / "project/vendor/lib/.git") >= 0);
    // A nested .claude without settings: a placeholder; nothing for a plain subdirectory.
    CHECK(std::any_of(plan.placeholders.begin(), plan.placeholders.end(),
                      [&](const auto& p) { return p.path.parent_path() == s.root / "project/sub/.claude"; }));
    CHECK_FALSE(std::any_of(plan.placeholders.begin(), plan.placeholders.end(),
                            [&](const auto& p) { return p.path.parent_path() == s.root / "project/docs"; }));
    // Shell start-up files are not invented in subdirectories.
    CHECK_FALSE(has_placeholder(plan, s.root / "project/sub/.bashrc", false));
}

TEST_CASE("settings files read by cordon are read-only when inside a writable area") {
    Scratch s;
    auto f = s.file("project/my-settings.json");
    auto in = s.input();
    in.files_read.push_back(f);
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::ReadOnly, f) >= 0);
}

TEST_CASE("expand_glob: *, ?, [..] within a component and ** across components") {
    Scratch s;
    s.file("g/a1.txt");
    s.file("g/b2.txt");
    s.file("g/x/y/z.txt");
    s.file("g/.hidden.txt");
    using cordon::jail::expand_glob;
    CHECK(expand_glob(s.root / "g/?1.txt") == std::vector<fs::path>{s.root / "g/a1.txt"});
    CHECK(expand_glob(s.root / "g/[b]*.txt") == std::vector<fs::path>{s.root / "g/b2.txt"});
    auto all = expand_glob(s.root / "g/**/*.txt");
    CHECK(all.size() == 4);
    CHECK(std::find(all.begin(), all.end(), s.root / "g/x/y/z.txt") != all.end());
    CHECK(expand_glob(s.root / "g/nothing*").empty());
}

TEST_CASE("directories holding a protected path are pinned (bound over themselves) so they cannot be moved") {
    Scratch s;
    s.dir("project/.git/hooks");
    s.file("project/sub/deep/.claude/settings.json");
    auto plan = make_mount_plan(s.input());
    const fs::path p = s.root / "project";
    int git = find(plan, MountKind::Writable, p / ".git");
    REQUIRE(git >= 0);
    CHECK(find(plan, MountKind::ReadOnly, p / ".git/hooks") > git);
    CHECK(find(plan, MountKind::Writable, p / "sub") >= 0);
    CHECK(find(plan, MountKind::Writable, p / "sub/deep") >= 0);
    CHECK(find(plan, MountKind::Writable, p / "sub/deep/.claude") >= 0);
    CHECK(find(plan, MountKind::ReadOnly, p / "sub/deep/.claude/settings.json") >= 0);
}

// The jail issue, §1: a home directory inside a writable area keeps its own protected names.
TEST_CASE(
    "a writable home directory: .ssh, .local/bin, bin, .claude ... protected, placeholders for the missing") {
    Scratch s;
    const fs::path home = s.dir("project/home");
    s.dir("project/home/.ssh");
    s.file("project/home/.ssh/authorized_keys");
    s.dir("project/home/.config");
    auto in = s.input();
    in.home = home;
    in.filesystem.home_read_only_names = cordon::policy::home_read_only_names();
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::ReadOnly, home / ".ssh") >= 0);
    CHECK(has_placeholder(plan, home / ".config/systemd", false));
    CHECK(has_placeholder(plan, home / ".config/autostart", false));
    CHECK(has_placeholder(plan, home / ".config/git", false));
    CHECK(has_placeholder(plan, home / ".local", false));
    CHECK(has_placeholder(plan, home / "bin", false));
    CHECK(has_placeholder(plan, home / ".claude", false));
    CHECK(has_placeholder(plan, home / ".claude.json", false));
    CHECK(has_placeholder(plan, home / ".zshenv", false));
    CHECK(has_placeholder(plan, home / ".bashrc", false));  // the common names too
    // Not in the project (a writable root that is no home): no `bin` placeholder there.
    CHECK_FALSE(has_placeholder(plan, s.root / "project/bin", false));
    CHECK_FALSE(has_placeholder(plan, s.root / "project/.ssh", false));
}

TEST_CASE("a working directory the policy does not make writable is no writable root") {
    Scratch s;
    auto in = s.input();
    in.cwd_writable = false;
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "project") == -1);
    CHECK(plan.placeholders.empty());
}

TEST_CASE("from / or the home directory the plan is an error naming the reason and --allow-write .") {
    Scratch s;
    cordon::policy::LoadOptions o;
    o.cwd = s.root;
    o.home = s.root / "project";  // the working directory holds the home directory
    o.discover = false;
    o.managed_dir = s.root / "no-managed";
    auto loaded = cordon::policy::load_policy(o);
    REQUIRE(std::holds_alternative<cordon::policy::PolicyPtr>(loaded));
    auto policy = std::get<cordon::policy::PolicyPtr>(loaded);
    auto plan = make_mount_plan(*policy, s.root, o.home);
    REQUIRE(plan.errors.size() == 1);
    CHECK(plan.errors[0].find("holds the home directory") != std::string::npos);
    CHECK(plan.errors[0].find("--allow-write .") != std::string::npos);
    CHECK(find(plan, MountKind::Writable, s.root) == -1);

    o.allow_write = {"."};
    policy = std::get<cordon::policy::PolicyPtr>(cordon::policy::load_policy(o));
    plan = make_mount_plan(*policy, s.root, o.home);
    CHECK(plan.errors.empty());
    CHECK(find(plan, MountKind::Writable, s.root) >= 0);
    CHECK(has_placeholder(plan, s.root / "project/.ssh", false));  // the home inside keeps its names
}

// The jail issue, §2.
TEST_CASE("the audit log is read-only inside a writable area, its directories pinned") {
    Scratch s;
    const fs::path log = s.file("project/logs/audit.jsonl");
    auto in = s.input();
    in.supervisor_files = {log};
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::ReadOnly, log) >= 0);
    CHECK(find(plan, MountKind::Writable, s.root / "project/logs") >= 0);  // pinned: cannot be renamed
}

TEST_CASE("prepare_audit_log creates the file and returns it resolved") {
    Scratch s;
    s.dir("real");
    fs::create_directory_symlink(s.root / "real", s.root / "link");
    auto r = cordon::jail::prepare_audit_log(s.root / "link/audit.jsonl");
    REQUIRE(std::holds_alternative<fs::path>(r));
    CHECK(std::get<fs::path>(r) == s.root / "real/audit.jsonl");
    CHECK(fs::exists(s.root / "real/audit.jsonl"));
    CHECK(
        std::holds_alternative<std::string>(cordon::jail::prepare_audit_log(s.root / "missing/dir/a.jsonl")));
}

// The jail issue, §4.
TEST_CASE("a dangling allowWrite symlink is a notice, not a mount that fails") {
    Scratch s;
    fs::create_symlink(s.root / "missing", s.root / "dangling");
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "dangling"));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "dangling") == -1);
    CHECK(std::any_of(plan.notices.begin(), plan.notices.end(),
                      [](const std::string& n) { return n.find("dangling symlink") != std::string::npos; }));
    CHECK(plan.errors.empty());
}

TEST_CASE("a denyRead or denyWrite path in a symlink loop is an error naming it") {
    Scratch s;
    fs::create_symlink(s.root / "project/loop", s.root / "project/loop");
    for (bool read : {true, false}) {
        auto in = s.input();
        (read ? in.filesystem.deny_read : in.filesystem.deny_write)
            .push_back(rule(s.root / "project/loop/x"));
        auto plan = make_mount_plan(in);
        REQUIRE(plan.errors.size() == 1);
        CHECK(plan.errors[0].find(read ? "denyRead" : "denyWrite") != std::string::npos);
        CHECK(plan.errors[0].find((s.root / "project/loop/x").string()) != std::string::npos);
        CHECK(plan.errors[0].find("symlink loop") != std::string::npos);
    }
}

TEST_CASE("symlinks in a mask that lead to a re-exposed path are recreated (merged /usr)") {
    Scratch s;
    s.file("sys/usr/bin/tool");
    s.file("sys/usr/lib64/ld.so");
    s.file("sys/hidden/x");
    fs::create_directory_symlink("usr/bin", s.root / "sys/bin");
    fs::create_directory_symlink("usr/lib64", s.root / "sys/lib64");
    fs::create_directory_symlink("hidden", s.root / "sys/hidden-link");
    auto in = s.input();
    in.filesystem.deny_read.push_back(rule(s.root / "sys"));
    in.filesystem.allow_read.push_back(rule(s.root / "sys/usr"));
    auto plan = make_mount_plan(in);
    int mask = find(plan, MountKind::MaskDir, s.root / "sys");
    int bin = find(plan, MountKind::Symlink, s.root / "sys/bin");
    REQUIRE(bin >= 0);
    CHECK(bin > mask);
    CHECK(plan.ops[static_cast<std::size_t>(bin)].source == "usr/bin");
    CHECK(find(plan, MountKind::Symlink, s.root / "sys/lib64") >= 0);
    CHECK(find(plan, MountKind::Symlink, s.root / "sys/hidden-link") == -1);  // leads into the mask
}

TEST_CASE("an allowWrite glob matching a symlink out of the writable areas does not follow it") {
    Scratch s;
    s.dir("ua/real");
    s.dir("outside");
    fs::create_directory_symlink(s.root / "outside", s.root / "ua/src");
    fs::create_directory_symlink(s.root / "project", s.root / "ua/into-project");
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "ua/*", true));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "outside") == -1);
    CHECK(find(plan, MountKind::Writable, s.root / "ua/real") >= 0);
    CHECK(std::any_of(plan.notices.begin(), plan.notices.end(), [](const std::string& n) {
        return n.find("ua/src leads through a symlink to") != std::string::npos;
    }));
}

TEST_CASE("an allowWrite symlink the command cannot have made, within its own directory, is followed") {
    Scratch s;
    s.dir("data/v2");
    fs::create_directory_symlink("v2", s.root / "data/current");
    auto in = s.input();
    in.filesystem.allow_write.push_back(rule(s.root / "data/current", false));
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "data/v2") >= 0);
    CHECK(std::none_of(plan.notices.begin(), plan.notices.end(),
                       [](const std::string& n) { return n.find("data/current") != std::string::npos; }));
}

TEST_CASE(
    "a plain allowWrite symlink out of the writable areas is not bound, also without the policy's check") {
    Scratch s;
    s.dir("outside");
    s.dir("project/real");
    fs::create_directory_symlink(s.root / "outside", s.root / "project/src");
    fs::create_directory_symlink(s.root / "project/real", s.root / "project/in");
    fs::create_directory_symlink(s.root / "project", s.root / "project/up");
    auto in = s.input();
    for (const char* p : {"project/src", "project/src/deeper", "project/in", "project/up"})
        in.filesystem.allow_write.push_back(rule(s.root / p));
    s.dir("outside/deeper");
    auto plan = make_mount_plan(in);
    CHECK(find(plan, MountKind::Writable, s.root / "outside") == -1);
    CHECK(find(plan, MountKind::Writable, s.root / "outside/deeper") == -1);
    CHECK(find(plan, MountKind::Writable, s.root / "project/real") >= 0);
    auto noticed = [&](const std::string& text) {
        return std::any_of(plan.notices.begin(), plan.notices.end(),
                           [&](const std::string& n) { return n.find(text) != std::string::npos; });
    };
    CHECK(noticed("outside the writable areas; not followed"));
    CHECK(noticed("above it; not followed"));
}
