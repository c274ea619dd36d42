// Finding the caller's cgroups from /proc/self/mountinfo and /proc/self/cgroup, and the rlimit fallback when
// no cgroup can be made. Creating real cgroups needs root: tests/jail/test_limits.py.
#include <catch2/catch.hpp>

#include "jail/cgroup.hpp"

using cordon::jail::CgroupDirs;
using cordon::jail::find_cgroup_dirs;
using cordon::jail::JailLimits;
using cordon::jail::LimitRequest;

namespace {

// A hybrid layout: v1 memory and pids, v2 without controllers (this development machine's).
constexpr const char* kHybridMountinfo =
    "25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "33 25 0:28 / /sys/fs/cgroup rw,relatime shared:9 - tmpfs tmpfs rw,mode=755\n"
    "36 33 0:31 / /sys/fs/cgroup/memory rw,relatime shared:12 - cgroup cgroup rw,memory\n"
    "37 33 0:32 / /sys/fs/cgroup/pids rw,relatime shared:13 - cgroup cgroup rw,pids\n"
    "38 33 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:14 - cgroup cgroup rw,cpu,cpuacct\n"
    "39 33 0:34 / /sys/fs/cgroup/unified rw,relatime shared:15 - cgroup2 cgroup2 rw\n";
constexpr const char* kHybridCgroup =
    "8:pids:/\n"
    "4:memory:/process_api/1cf5\n"
    "2:cpu,cpuacct:/\n"
    "0::/\n";

}  // namespace

TEST_CASE("cgroup: the caller's directories in a hybrid layout") {
    CgroupDirs dirs = find_cgroup_dirs(kHybridMountinfo, kHybridCgroup);
    CHECK(dirs.v1_memory == "/sys/fs/cgroup/memory/process_api/1cf5");
    CHECK(dirs.v1_pids == "/sys/fs/cgroup/pids");
    CHECK(dirs.unified == "/sys/fs/cgroup/unified");
    CHECK(dirs.unified_parent.empty());  // the root has none
}

TEST_CASE("cgroup: the caller's directories in a unified layout, with the parent for a sibling") {
    CgroupDirs dirs = find_cgroup_dirs(
        "30 25 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate\n",
        "0::/user.slice/user-1000.slice/user@1000.service/app.slice/run-u1.scope\n");
    CHECK(dirs.unified ==
          "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/run-u1.scope");
    CHECK(dirs.unified_parent == "/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice");
    CHECK(dirs.v1_memory.empty());
    CHECK(dirs.v1_pids.empty());
}

TEST_CASE("cgroup: a mount of part of the hierarchy, an escaped mount point, a cgroup outside the mount") {
    // A container's view: the mount's root is the container's cgroup.
    CgroupDirs dirs = find_cgroup_dirs(
        "40 30 0:26 /docker/abc /sys/fs/cgroup\\040x rw - cgroup2 cgroup2 rw\n"
        "41 30 0:27 /other /mnt/pids rw - cgroup cgroup rw,pids\n",
        "0::/docker/abc/inner\n5:pids:/docker/abc\n");
    CHECK(dirs.unified == "/sys/fs/cgroup x/inner");
    CHECK(dirs.unified_parent == "/sys/fs/cgroup x");
    CHECK(dirs.v1_pids.empty());  // our pids cgroup is not below that mount
}

TEST_CASE("cgroup: garbage yields nothing") {
    CgroupDirs dirs = find_cgroup_dirs("not a mountinfo line\n\n- - -\n", "nonsense\n::\n");
    CHECK(dirs.unified.empty());
    CHECK(dirs.v1_memory.empty());
    CHECK(dirs.v1_pids.empty());
}

TEST_CASE("cgroup: without cgroups the limits become rlimits, and --pids is refused for the host's root") {
    LimitRequest request;
    request.memory_bytes = 64ULL << 20;
    request.max_pids = 10;
    auto made = JailLimits::create(request, CgroupDirs{}, "cordon-1-test");
    REQUIRE(std::holds_alternative<JailLimits>(made));
    const auto& limits = std::get<JailLimits>(made);
    CHECK(limits.cgroups().empty());
    CHECK(limits.rlimit_as == 64ULL << 20);
    CHECK(limits.rlimit_nproc == 10U);
    CHECK(limits.notice ==
          "note: limits in force: --memory 64M per process (rlimit RLIMIT_AS; no memory cgroup); --pids 10 "
          "processes of the user (rlimit RLIMIT_NPROC; no pids cgroup)");

    request.command_is_host_root = true;
    auto refused = JailLimits::create(request, CgroupDirs{}, "cordon-1-test");
    REQUIRE(std::holds_alternative<std::string>(refused));
    CHECK_THAT(
        std::get<std::string>(refused),
        Catch::Contains("RLIMIT_NPROC does not apply to the host's root") && Catch::Contains("--user"));

    request.best_effort = true;
    auto skipped = JailLimits::create(request, CgroupDirs{}, "cordon-1-test");
    REQUIRE(std::holds_alternative<JailLimits>(skipped));
    CHECK_FALSE(std::get<JailLimits>(skipped).rlimit_nproc);
    CHECK(std::get<JailLimits>(skipped).rlimit_as == 64ULL << 20);
}

TEST_CASE("cgroup: a cgroup directory that cannot be used falls back to rlimits with the reason") {
    LimitRequest request;
    request.max_pids = 5;
    CgroupDirs dirs;
    dirs.v1_pids = "/nonexistent-cordon-test/pids";
    auto made = JailLimits::create(request, dirs, "cordon-1-test");
    REQUIRE(std::holds_alternative<JailLimits>(made));
    CHECK_THAT(
        std::get<JailLimits>(made).notice,
        Catch::Contains("rlimit RLIMIT_NPROC; cgroup v1: /nonexistent-cordon-test/pids/cordon-1-test: No "
                        "such file or directory"));
}
