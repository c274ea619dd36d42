// jail::diagnose: which jail the facts allow, and the cause and fix it names for each locked-down host.
#include <catch2/catch.hpp>
#include <cerrno>

#include "jail/probe.hpp"

using cordon::jail::diagnose;
using cordon::jail::HostFacts;
using cordon::jail::HostReport;
using cordon::jail::JailKind;
using cordon::jail::kNotTried;
using cordon::jail::Layer;

namespace {

// A host where everything works (this development machine, as root).
HostFacts full_host() {
    HostFacts f;
    f.kernel = "6.18.0";
    f.euid = 1000;
    f.max_user_namespaces = 60000;
    f.user_ns = f.id_maps = f.mount_ns = f.mounts = f.net_ns = f.loopback = f.nftables = 0;
    f.ipc_uts_cgroup_ns = f.pid_ns = f.proc_mount = 0;
    f.seccomp_filter = f.user_notif = f.addfd = f.pidfd_getfd = 0;
    f.run_tmp_base = "/tmp";
    f.run_tmp = 0;
    f.landlock_abi = 7;
    f.landlock_restrict = 0;
    f.cgroup_version = 2;
    f.cgroup_delegated = true;
    f.self_exe = "/usr/bin/cordon";
    return f;
}

// Nothing after the user namespace was tried.
HostFacts without_user_namespace(int err) {
    HostFacts f = full_host();
    f.user_ns = err;
    f.id_maps = f.mount_ns = f.mounts = f.net_ns = f.loopback = f.nftables = kNotTried;
    f.ipc_uts_cgroup_ns = f.pid_ns = f.proc_mount = kNotTried;
    return f;
}

const Layer& layer(const HostReport& r, const std::string& key) {
    for (const auto& l : r.layers)
        if (l.key == key) return l;
    FAIL("no layer " << key);
    throw;
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("every layer there: the namespace jail, exit 0") {
    HostReport r = diagnose(full_host());
    CHECK(r.jail == JailKind::Namespaces);
    CHECK(r.exit_status() == 0);
    CHECK(r.blocker.empty());
    CHECK(r.lacks.empty());
    for (const char* key :
         {"user_namespace", "mount_namespace", "network_namespace", "pid_namespace", "nftables", "seccomp",
          "user_notification", "addfd", "landlock", "landlock_scoping", "cgroup"})
        CHECK(layer(r, key).available);
}

TEST_CASE("max_user_namespaces 0: the namespace-free jail, the sysctl named with its fix") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.max_user_namespaces = 0;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    CHECK(r.exit_status() == 1);
    CHECK(r.blocker == "user_namespace");
    const Layer& user = layer(r, "user_namespace");
    CHECK_FALSE(user.available);
    CHECK(has(user.cause, "user.max_user_namespaces is 0"));
    CHECK(has(user.fix, "sudo sysctl -w user.max_user_namespaces="));
    CHECK(has(layer(r, "pid_namespace").detail, "not tried"));
    CHECK(has(r.lacks.front(), "PID namespace"));
}

TEST_CASE("a seccomp filter refusing unshare: docker run flags") {
    HostFacts f = without_user_namespace(EPERM);
    f.euid = 0;
    f.seccomp_mode = 2;
    f.pidfd_getfd = EPERM;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    const Layer& user = layer(r, "user_namespace");
    CHECK(has(user.cause, "seccomp filter"));
    CHECK(has(user.fix, "docker run --security-opt seccomp=unconfined"));
    CHECK(has(layer(r, "pidfd_getfd").fix, "--cap-add SYS_PTRACE"));
    CHECK(has(r.lacks.back(), "a TCP connect gets a socket of the supervisor's"));
}

TEST_CASE("inside bubblewrap: the outer sandbox's setting") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.nested_user_namespace = true;
    f.pid1 = "bwrap";
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    const Layer& user = layer(r, "user_namespace");
    CHECK(has(user.cause, "another sandbox"));
    CHECK(has(user.fix, "allowNestedUserNamespaces"));
}

TEST_CASE("AppArmor's restriction: the namespace is made, its id maps are refused: the profile") {
    HostFacts f = full_host();
    f.id_maps = EPERM;
    f.mount_ns = f.mounts = f.net_ns = f.loopback = f.nftables = kNotTried;
    f.ipc_uts_cgroup_ns = f.pid_ns = f.proc_mount = kNotTried;
    f.apparmor_enabled = true;
    f.apparmor_restrict_userns = 1;
    f.apparmor_label = "unconfined";
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    const Layer& user = layer(r, "user_namespace");
    CHECK(has(user.cause, "AppArmor restricts unprivileged user namespaces"));
    CHECK(has(user.fix, "apparmor_parser -r /etc/apparmor.d/cordon"));
    CHECK(has(user.fix, "kernel.apparmor_restrict_unprivileged_userns=0"));
    CHECK_FALSE(layer(r, "apparmor").available);

    f.apparmor_profile_installed = true;
    CHECK(has(layer(diagnose(f), "user_namespace").fix, "load cordon's AppArmor profile"));
}

TEST_CASE("Debian's unprivileged_userns_clone 0: that sysctl") {
    HostFacts f = without_user_namespace(EPERM);
    f.unprivileged_userns_clone = 0;
    HostReport r = diagnose(f);
    const Layer& user = layer(r, "user_namespace");
    CHECK(has(user.cause, "kernel.unprivileged_userns_clone is 0"));
    CHECK(has(user.fix, "sysctl -w kernel.unprivileged_userns_clone=1"));
}

TEST_CASE("a container's masked /proc: systempaths=unconfined") {
    HostFacts f = full_host();
    f.euid = 0;
    f.container = true;
    f.proc_mount = EPERM;
    HostReport r = diagnose(f);
    CHECK(r.blocker == "pid_namespace");
    CHECK(has(layer(r, "pid_namespace").fix, "systempaths=unconfined"));
}

TEST_CASE("no Landlock: the namespace-free jail says runs with read rules stop") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.max_user_namespaces = 0;
    f.landlock_abi = 0;
    f.landlock_errno = ENOSYS;
    f.landlock_restrict = kNotTried;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    bool said = false;
    for (const auto& lack : r.lacks)
        said = said || has(lack, "read rules");
    CHECK(said);
    CHECK(has(layer(r, "landlock").fix, "a kernel with Landlock"));

    f.landlock_errno = EOPNOTSUPP;
    CHECK(has(layer(diagnose(f), "landlock").fix, "lsm="));
}

TEST_CASE("no user namespace and no ADDFD: no jail, exit 2") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.max_user_namespaces = 0;
    f.addfd = EINVAL;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::None);
    CHECK(r.exit_status() == 2);
    CHECK(has(layer(r, "addfd").fix, "5.14"));
}

TEST_CASE("nftables refused: `cordon run` falls back, --no-transparent keeps the namespace jail") {
    HostFacts f = full_host();
    f.nftables = EOPNOTSUPP;
    f.nftables_error = "load the nftables rules: Operation not supported";
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::Landlock);
    CHECK(r.blocker == "nftables");
    CHECK_FALSE(layer(r, "nftables").available);
    CHECK(has(layer(r, "nftables").fix, "--no-transparent"));
}

TEST_CASE("the notifier switched off for `cordon run`: no namespace-free jail") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.max_user_namespaces = 0;
    f.notify_switched_off = true;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::None);
    CHECK(has(layer(r, "addfd").detail, "does not use it"));
}

TEST_CASE("no writable temporary directory: no namespace-free jail") {
    HostFacts f = without_user_namespace(ENOSPC);
    f.max_user_namespaces = 0;
    f.run_tmp = EROFS;
    HostReport r = diagnose(f);
    CHECK(r.jail == JailKind::None);
    CHECK(has(layer(r, "run_tmpdir").fix, "set TMPDIR"));
}
