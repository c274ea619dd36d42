// The mount plan of the project read scope (issue 17), computed from a real policy over a scratch tree and
// this machine's system directories. No privileges needed.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <fstream>

#include "jail/mount_plan.hpp"

namespace fs = std::filesystem;
using cordon::jail::make_mount_plan;
using cordon::jail::MountKind;
using cordon::jail::MountPlan;

namespace {

struct Tree {
    fs::path root;
    Tree() {
        std::string tmpl = fs::path("/var/tmp/cordon-scope-XXXXXX").string();
        root = fs::canonical(::mkdtemp(tmpl.data()));
        fs::create_directories(root / "project");
        fs::create_directories(root / "home");
        std::ofstream(root / "home/.gitconfig") << "[user]\n";
        std::ofstream(root / "project/.env") << "SECRET=1\n";
    }
    ~Tree() { fs::remove_all(root); }
    cordon::policy::PolicyPtr policy(const std::string& scope, std::vector<std::string> allow_read = {},
                                     std::vector<std::string> deny_read = {}) const {
        cordon::policy::LoadOptions o;
        o.cwd = root / "project";
        o.home = root / "home";
        o.managed_dir = root / "managed";
        o.discover = false;
        o.read_scope = scope;
        o.allow_read = std::move(allow_read);
        o.deny_read = std::move(deny_read);
        auto loaded = cordon::policy::load_policy(o);
        REQUIRE(std::holds_alternative<cordon::policy::PolicyPtr>(loaded));
        return std::get<cordon::policy::PolicyPtr>(loaded);
    }
    MountPlan plan(const cordon::policy::PolicyPtr& p) const {
        return make_mount_plan(*p, root / "project", root / "home");
    }
};

int find(const MountPlan& plan, MountKind kind, const fs::path& path) {
    for (std::size_t i = 0; i < plan.ops.size(); ++i)
        if (plan.ops[i].kind == kind && plan.ops[i].path == path) return static_cast<int>(i);
    return -1;
}

bool contains(const std::vector<fs::path>& list, const fs::path& p) {
    return std::find(list.begin(), list.end(), p) != list.end();
}

}  // namespace

TEST_CASE("read scope all: no mask over /, no read rules") {
    Tree t;
    auto plan = t.plan(t.policy("all"));
    CHECK(find(plan, MountKind::MaskDir, "/") == -1);
    CHECK_FALSE(plan.read_scope);
    CHECK(plan.readable_roots.empty());
}

TEST_CASE("read scope project: / masked, the scope bound back, secrets masked inside") {
    Tree t;
    auto plan = t.plan(t.policy("project", {"~/.gitconfig"}, {".env"}));
    REQUIRE(plan.errors.empty());
    CHECK(plan.read_scope);
    const int mask = find(plan, MountKind::MaskDir, "/");
    REQUIRE(mask >= 0);
    CHECK(find(plan, MountKind::RootReadOnly, "/") < mask);
    int usr = find(plan, MountKind::ReadOnly, "/usr");
    int etc = find(plan, MountKind::ReadOnly, "/etc");
    CHECK(usr > mask);
    CHECK(etc > mask);
    CHECK(find(plan, MountKind::Writable, t.root / "project") > mask);
    CHECK(find(plan, MountKind::ReadOnly, t.root / "home/.gitconfig") > mask);
    CHECK(find(plan, MountKind::MaskFile, t.root / "project/.env") >
          find(plan, MountKind::Writable, t.root / "project"));
    if (fs::exists("/etc/shadow")) CHECK(find(plan, MountKind::MaskFile, "/etc/shadow") > etc);
    // The jail makes its own /proc, /dev and /tmp: never bound from the host.
    for (const char* own : {"/proc", "/dev", "/tmp"}) {
        INFO(own);
        CHECK(find(plan, MountKind::ReadOnly, own) == -1);
    }
    // Merged /usr: the links of / that lead into the scope are recreated in the mask, not bound twice.
    for (const char* link : {"/bin", "/sbin", "/lib", "/lib64"}) {
        if (!fs::is_symlink(link)) continue;
        INFO(link);
        CHECK(find(plan, MountKind::Symlink, link) > mask);
        CHECK(find(plan, MountKind::ReadOnly, fs::canonical(link)) == -1);
    }
    // Nothing of the home directory but what was asked for; no notices about cordon's own globs.
    for (const auto& op : plan.ops)
        if (op.path.native().rfind((t.root / "home").native(), 0) == 0)
            CHECK(op.path == t.root / "home/.gitconfig");
    for (const auto& notice : plan.notices)
        CHECK(notice.find("/etc/ssh") == std::string::npos);
    // Landlock's read rules: what the mounts show.
    for (const fs::path& p :
         {fs::path("/usr"), fs::path("/etc"), t.root / "project", t.root / "home/.gitconfig",
          fs::path("/tmp"), fs::path("/proc"), fs::path("/dev")}) {
        INFO(p);
        CHECK(contains(plan.readable_roots, p));
    }
    CHECK_FALSE(contains(plan.readable_roots, "/"));
    // No root below another (a rule covers everything beneath).
    for (const auto& a : plan.readable_roots)
        for (const auto& b : plan.readable_roots)
            if (a != b) CHECK(a.native().rfind(b.native() + "/", 0) != 0);
    CHECK_FALSE(contains(plan.readable_roots, t.root / "home"));
}

TEST_CASE("read scope project: allowRead cannot re-expose a hidden secret") {
    Tree t;
    struct stat st {};
    if (::stat("/etc/shadow", &st) != 0) {
        WARN("no /etc/shadow on this machine: nothing to check");
        return;
    }
    auto plan = t.plan(t.policy("project", {"/etc/shadow"}));
    CHECK(find(plan, MountKind::MaskFile, "/etc/shadow") >= 0);
    CHECK(find(plan, MountKind::ReadOnly, "/etc/shadow") == -1);
}

TEST_CASE("read scope project with allowRead /: nothing masked but the secrets, / readable") {
    Tree t;
    auto plan = t.plan(t.policy("project", {"/"}));
    CHECK(plan.read_scope);
    CHECK(find(plan, MountKind::MaskDir, "/") == -1);
    CHECK(contains(plan.readable_roots, "/"));
    if (fs::exists("/etc/shadow")) CHECK(find(plan, MountKind::MaskFile, "/etc/shadow") >= 0);
    auto policy = t.policy("project", {"/"});
    CHECK(policy->decide_read(t.root / "home/.gitconfig").allowed());
    CHECK_FALSE(policy->decide_read("/etc/shadow").allowed());
}
