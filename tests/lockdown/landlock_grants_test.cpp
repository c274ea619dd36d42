// The jail without namespaces' Landlock grants, computed from a mount plan (jail/landlock_jail.hpp): reads
// are granted everywhere the mounts would show but never on a directory that holds a hidden path (the host's
// /dev/pts is always hidden: the user's other terminals); writes in the writable roots, the plan's /tmp being
// the run's own.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "jail/landlock_jail.hpp"

namespace fs = std::filesystem;
using cordon::jail::landlock_grants;
using cordon::jail::MountKind;
using cordon::jail::MountPlan;

namespace {

constexpr std::uint64_t kReadFile = 1ULL << 2, kReadDir = 1ULL << 3, kWriteFile = 1ULL << 1;

bool granted(const cordon::jail::LandlockGrants& g, const fs::path& path, std::uint64_t access) {
    return std::any_of(g.grants.begin(), g.grants.end(), [&](const auto& grant) {
        return grant.path == path && (grant.access & access) == access;
    });
}

// Whether any grant covers `path` for `access` (a grant covers everything below it).
bool covered(const cordon::jail::LandlockGrants& g, const fs::path& path, std::uint64_t access) {
    const std::string p = path.string();
    return std::any_of(g.grants.begin(), g.grants.end(), [&](const auto& grant) {
        const std::string d = grant.path.string();
        const bool below = p == d || (p.compare(0, d.size(), d) == 0 && (d == "/" || p[d.size()] == '/'));
        return below && (grant.access & access) == access;
    });
}

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "cordon-grants-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST_CASE("no read rule: everything readable but the host's terminals, writes only in the writable roots") {
    MountPlan plan;
    plan.ops.push_back({MountKind::RootReadOnly, "/", "root"});
    plan.ops.push_back({MountKind::PrivateTmp, "/tmp", "tmp"});
    plan.ops.push_back({MountKind::Writable, "/srv/project", "working directory"});
    plan.writable_roots = {"/srv/project", "/tmp"};
    auto g = landlock_grants(plan, "/var/tmp/cordon-tmp-x", 6);
    CHECK_FALSE(g.reads);
    CHECK(g.shown.empty());  // the notifier hides nothing
    CHECK((g.handled & kReadFile) != 0);
    CHECK(covered(g, "/usr/bin/env", kReadFile));
    CHECK(covered(g, "/etc", kReadDir));
    CHECK(covered(g, "/dev/null", kReadFile));
    CHECK(covered(g, "/dev/shm/x", kReadFile));
    CHECK(granted(g, "/", kReadDir));
    // The user's other terminals (opened for reading without the notifier) are not readable; the command's
    // own are granted when it starts.
    CHECK_FALSE(covered(g, "/dev/pts/0", kReadFile));
    CHECK_FALSE(covered(g, "/dev/pts/7", kReadFile));
    CHECK_FALSE(granted(g, "/dev", kReadFile));
    CHECK_FALSE(granted(g, "/", kReadFile));
    // Without Landlock nothing is handled.
    CHECK((landlock_grants(plan, "/var/tmp/cordon-tmp-x", 0).handled & kReadFile) == 0);
    CHECK(granted(g, "/srv/project", kWriteFile));
    CHECK(granted(g, "/var/tmp/cordon-tmp-x", kWriteFile));
    CHECK_FALSE(covered(g, "/tmp/other", kWriteFile));  // the host's /tmp is not the private one
    CHECK_FALSE(covered(g, "/etc/passwd", kWriteFile));
}

TEST_CASE("denyRead: everything else readable, the hidden path and its holders not") {
    TempDir t;
    fs::create_directories(t.path / "secret" / "deep");
    std::ofstream(t.path / "secret" / "deep" / "key") << "k";
    std::ofstream(t.path / "other") << "o";
    fs::create_directories(t.path / "open" / "sub");
    MountPlan plan;
    plan.ops.push_back({MountKind::RootReadOnly, "/", "root"});
    plan.ops.push_back({MountKind::MaskDir, t.path / "secret", "denyRead"});
    plan.ops.push_back({MountKind::ReadOnly, t.path / "secret" / "deep" / "key", "allowRead"});
    auto g = landlock_grants(plan, "/tmp/x", 6);
    REQUIRE(g.reads);
    CHECK((g.handled & kReadFile) != 0);
    CHECK(covered(g, t.path / "other", kReadFile));
    CHECK(covered(g, t.path / "open" / "sub", kReadFile | kReadDir));
    CHECK(covered(g, "/usr/bin", kReadFile));
    CHECK_FALSE(covered(g, t.path / "secret", kReadDir));
    CHECK_FALSE(covered(g, t.path / "secret" / "deep" / "other", kReadFile));
    CHECK(covered(g, t.path / "secret" / "deep" / "key", kReadFile));  // re-exposed by allowRead
    // No grant on a directory that holds the hidden path: it would cover the hidden path too.
    for (fs::path p = t.path; p != p.parent_path(); p = p.parent_path())
        CHECK_FALSE(granted(g, p, kReadFile));
    CHECK_FALSE(granted(g, "/", kReadFile));
    REQUIRE(g.read_rules.size() == 1);
}
