// diagnose(): the facts of probe.cpp become layers, the jail `cordon run` gets, and for each missing layer
// the cause and its fix. Pure.
#include <cstring>

#include "jail/probe.hpp"

namespace cordon::jail {

namespace {

constexpr std::uint64_t kCapSysAdmin = 1ULL << 21, kCapSetfcap = 1ULL << 31;

std::string errno_text(int err) {
    if (err == kNotTried) return "not tried";
    const char* name = strerrorname_np(err);
    return std::string(name ? name : "errno " + std::to_string(err)) + " (" + std::strerror(err) + ")";
}

const char* const kSysctlFile = "/etc/sysctl.d/90-cordon.conf";

std::string sysctl_fix(const std::string& setting) {
    return "sudo sysctl -w " + setting + " (to keep it: echo " + setting + " | sudo tee -a " + kSysctlFile +
           ")";
}

// The container runtimes' switches for what a namespace jail needs inside a container.
const char* const kContainerFix =
    "start the container with `docker run --security-opt seccomp=unconfined --security-opt "
    "apparmor=unconfined --security-opt systempaths=unconfined ...` (Podman takes the same flags; with "
    "Docker's default seccomp profile, `--cap-add SYS_ADMIN` also lets unshare, mount and setns through; "
    "Kubernetes: securityContext.seccompProfile.type: Unconfined and procMount: Unmasked)";

const char* const kOuterSandboxFix =
    "inside Claude Code's sandbox: set `\"sandbox\": {\"allowNestedUserNamespaces\": true}` in its settings, "
    "or turn its sandbox off (`\"sandbox\": {\"enabled\": false}`) and let `cordon claude-hook` jail each "
    "command; bubblewrap run by hand: leave out --disable-userns";

std::string apparmor_fix(const HostFacts& f) {
    std::string fix;
    if (f.apparmor_profile_installed)
        fix =
            "load cordon's AppArmor profile: sudo apparmor_parser -r /etc/apparmor.d/cordon (it must name " +
            f.self_exe + ")";
    else
        fix =
            "install cordon's AppArmor profile, which grants it user namespaces as Ubuntu's grants bwrap: "
            "the .deb installs and loads it; from a source build `sudo cmake --install build` writes "
            "/etc/apparmor.d/cordon for PREFIX/bin/cordon, then `sudo apparmor_parser -r "
            "/etc/apparmor.d/cordon` (this binary is " +
            f.self_exe + ": the profile must name that path)";
    return fix + "; or, for every program, " + sysctl_fix("kernel.apparmor_restrict_unprivileged_userns=0");
}

bool apparmor_restricts(const HostFacts& f) {
    return f.apparmor_enabled && f.apparmor_restrict_userns.value_or(0) != 0 &&
           (f.cap_effective & kCapSysAdmin) == 0;
}

bool in_outer_sandbox(const HostFacts& f) {
    return f.pid1 == "bwrap" || f.sandbox_runtime;
}

struct Diagnosis {
    std::string cause, fix;
};

// Why the user namespace could not be made (unshare failed with `err`).
Diagnosis user_namespace_refused(const HostFacts& f, int err) {
    if (err == ENOSPC) {
        long limit = f.max_user_namespaces.value_or(-1);
        if (f.nested_user_namespace && in_outer_sandbox(f))
            return {
                "cordon runs inside another sandbox (bubblewrap, as Claude Code's sandbox runs it) whose "
                "user namespace allows no user namespaces of its own (its max_user_namespaces, or "
                "--disable-userns)",
                kOuterSandboxFix};
        if (f.nested_user_namespace && limit != 0)
            return {
                "the user namespace cordon runs in (another sandbox's or a rootless container's) allows no "
                "more user namespaces: the limit of a namespace above it is spent",
                "let the sandbox or container around cordon allow nested user namespaces (" +
                    std::string(kOuterSandboxFix) + ")"};
        if (limit == 0)
            return {"user.max_user_namespaces is 0: no user namespace may be made",
                    f.nested_user_namespace ? "raise user.max_user_namespaces in the namespace that set it "
                                              "(the sandbox or container around cordon)"
                                            : sysctl_fix("user.max_user_namespaces=10000")};
        return {
            "the user-namespace limit is reached (user.max_user_namespaces=" + std::to_string(limit) + ")",
            sysctl_fix("user.max_user_namespaces=" + std::to_string(limit > 0 ? limit * 2 : 10000))};
    }
    if (err == EPERM || err == EACCES) {
        if (in_outer_sandbox(f))
            return {
                "cordon runs inside another sandbox (bubblewrap, as Claude Code's sandbox runs it) whose "
                "seccomp filter refuses user namespaces",
                kOuterSandboxFix};
        if (f.seccomp_mode == 2)
            return {
                std::string(
                    "a seccomp filter refuses unshare(CLONE_NEWUSER) (\"Seccomp: 2\" in /proc/self/status") +
                    (f.container ? ", in a container" : "") +
                    "): a container runtime's profile, as Docker's default one for a container without "
                    "CAP_SYS_ADMIN",
                kContainerFix};
        if (f.unprivileged_userns_clone.value_or(1) == 0 && (f.cap_effective & kCapSysAdmin) == 0)
            return {"kernel.unprivileged_userns_clone is 0: only root may make user namespaces",
                    sysctl_fix("kernel.unprivileged_userns_clone=1")};
        return {"unshare(CLONE_NEWUSER) is not permitted (a chroot, or a security module)", ""};
    }
    if (err == EINVAL || err == ENOSYS)
        return {"this kernel has no user namespaces (CONFIG_USER_NS)",
                "a kernel built with CONFIG_USER_NS=y"};
    return {"", ""};
}

// Why a step after the user namespace failed with `err`: the namespace holds no capabilities (AppArmor), or a
// filter or a container's setting refuses the call.
Diagnosis step_refused(const HostFacts& f, int err, bool proc) {
    if (err != EPERM && err != EACCES) return {"", ""};
    if (apparmor_restricts(f))
        return {
            "AppArmor restricts unprivileged user namespaces "
            "(kernel.apparmor_restrict_unprivileged_userns=1, Ubuntu 23.10 and later): the namespace is made "
            "but holds no capabilities",
            apparmor_fix(f)};
    if (in_outer_sandbox(f)) return {"the sandbox around cordon (bubblewrap) refuses it", kOuterSandboxFix};
    if (f.seccomp_mode == 2)
        return {"a seccomp filter refuses the call (a container runtime's profile)", kContainerFix};
    if (proc && f.container)
        return {
            "a fresh /proc cannot be mounted where /proc has files mounted over it (a container's masked "
            "paths)",
            "docker run --security-opt systempaths=unconfined (Podman: the same; Kubernetes: procMount: "
            "Unmasked)"};
    if (f.euid == 0 && (f.cap_bounding & kCapSetfcap) == 0)
        return {"root without CAP_SETFCAP cannot map uid 0 into a user namespace (Linux 5.12 and later)",
                "grant CAP_SETFCAP (docker run --cap-add SETFCAP), or run cordon as a non-root user"};
    return {"", ""};
}

Layer layer(std::string key, std::string name) {
    Layer l;
    l.key = std::move(key);
    l.name = std::move(name);
    return l;
}

// A trial step's layer: available when err is 0; otherwise its errno, and the cause and fix from `why`.
void set_step(Layer& l, int err, const std::string& call, const Diagnosis& why, const std::string& needs) {
    l.available = err == 0;
    if (err == 0) return;
    if (err == kNotTried) {
        l.detail = "not tried: needs the " + needs;
        return;
    }
    l.detail = call + ": " + errno_text(err);
    l.cause = why.cause;
    l.fix = why.fix;
}

}  // namespace

std::string_view to_string(JailKind kind) {
    switch (kind) {
        case JailKind::Namespaces:
            return "namespaces";
        case JailKind::Landlock:
            return "landlock";
        case JailKind::None:
            break;
    }
    return "none";
}

int HostReport::exit_status() const {
    switch (jail) {
        case JailKind::Namespaces:
            return 0;
        case JailKind::Landlock:
            return 1;
        case JailKind::None:
            break;
    }
    return 2;
}

HostReport diagnose(const HostFacts& f) {
    HostReport r;
    const std::string kUserNs = "user namespace";

    Layer user = layer("user_namespace", "user namespace");
    if (f.user_ns != 0) {
        set_step(user, f.user_ns, "unshare(CLONE_NEWUSER)", user_namespace_refused(f, f.user_ns), "");
    } else {
        set_step(user, f.id_maps, "writing its uid_map and gid_map", step_refused(f, f.id_maps, false), "");
        if (user.available) user.detail = "made, this uid and gid mapped";
    }

    Layer mount = layer("mount_namespace", "mount namespace");
    int mount_err = f.mount_ns != 0 ? f.mount_ns : f.mounts;
    set_step(mount, user.available ? mount_err : kNotTried,
             f.mount_ns != 0 ? "unshare(CLONE_NEWNS)" : "mount (" + f.mounts_step + ")",
             step_refused(f, mount_err, false), kUserNs);
    if (mount.available) mount.detail = "a tmpfs, a bind, a read-only remount";

    Layer net = layer("network_namespace", "network namespace");
    int net_err = f.net_ns != 0 ? f.net_ns : f.loopback;
    set_step(net, user.available ? net_err : kNotTried,
             f.net_ns != 0 ? "unshare(CLONE_NEWNET)" : "bringing up lo", step_refused(f, net_err, false),
             kUserNs);

    if (net.available) net.detail = "lo up";

    Layer pid = layer("pid_namespace", "PID namespace");
    int pid_err = f.pid_ns != 0 ? f.pid_ns : f.proc_mount;
    set_step(pid, user.available ? pid_err : kNotTried,
             f.pid_ns != 0 ? "unshare(CLONE_NEWPID)" : "mounting a fresh /proc",
             step_refused(f, pid_err, f.pid_ns == 0), kUserNs);
    if (pid.available) pid.detail = "a fresh /proc";

    Layer other = layer("ipc_uts_cgroup_namespaces", "IPC, UTS and cgroup namespaces");
    set_step(other, user.available ? f.ipc_uts_cgroup_ns : kNotTried,
             "unshare(CLONE_NEWIPC|NEWUTS|NEWCGROUP)", step_refused(f, f.ipc_uts_cgroup_ns, false), kUserNs);

    Layer nft = layer("nftables", "nftables in a netns");
    if (net.available && f.nftables != 0 && f.nftables != kNotTried) {
        nft.detail = f.nftables_error;
        nft.cause =
            "the kernel refuses the transparent-proxying rules (nf_tables, or its nat, redirect or reject "
            "expressions, missing or refused)";
        nft.fix =
            "load them (`sudo modprobe nf_tables nft_redir nft_reject_inet nft_nat`; in a container the host "
            "must have them), or run `cordon run --no-transparent`, which keeps the namespace jail without "
            "transparent proxying";
    } else {
        set_step(nft, net.available ? f.nftables : kNotTried, "nftables", {}, "network namespace");
        if (nft.available) nft.detail = "transparent proxying: every TCP connection redirected to the proxy";
    }

    Layer seccomp = layer("seccomp", "seccomp filter");
    set_step(seccomp, f.seccomp_filter, "installing a filter",
             {f.seccomp_filter == EINVAL ? "this kernel has no seccomp filters (CONFIG_SECCOMP_FILTER)" : "",
              f.seccomp_filter == EINVAL ? "a kernel built with CONFIG_SECCOMP_FILTER=y" : ""},
             "");
    if (seccomp.available && f.seccomp_mode == 2) seccomp.detail = "(this process is already under a filter)";

    Layer notif = layer("user_notification", "seccomp user notification");
    set_step(notif, seccomp.available ? f.user_notif : kNotTried, "SECCOMP_FILTER_FLAG_NEW_LISTENER",
             {"this kernel has no seccomp user notification (Linux 5.0)", "Linux 5.14 or later"},
             "seccomp filter");

    Layer addfd = layer("addfd", "seccomp ADDFD");
    set_step(addfd, notif.available ? f.addfd : kNotTried,
             "SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND",
             {"this kernel cannot answer a notified call with a new descriptor (Linux 5.14)",
              "Linux 5.14 or later"},
             "seccomp user notification");
    if (addfd.available) addfd.detail = "a descriptor injected as a call's result";
    if (addfd.available && f.notify_switched_off) {
        addfd.available = false;
        addfd.detail =
            "works, but `cordon run` does not use it here (a kernel release before 5.14 by its number, or "
            "CORDON_TEST_NO_USER_NOTIF)";
    }

    Layer getfd = layer("pidfd_getfd", "pidfd_getfd");
    set_step(getfd, f.pidfd_getfd, "pidfd_getfd",
             {f.pidfd_getfd == ENOSYS ? "this kernel has no pidfd_getfd (Linux 5.6)"
                                      : "refused: Docker's default seccomp profile allows it only with "
                                        "CAP_SYS_PTRACE (Yama's ptrace_scope 3 refuses it to everyone)",
              f.pidfd_getfd == ENOSYS ? "Linux 5.6 or later" : "docker run --cap-add SYS_PTRACE"},
             "");
    if (getfd.available) getfd.detail = "the notifier can take a jailed process's socket to connect it";

    Layer tmp = layer("run_tmpdir", "run's temporary directory");
    set_step(
        tmp, f.run_tmp, "making one in " + f.run_tmp_base,
        {"the namespace-free jail makes the run's TMPDIR below $TMPDIR (a directory outside the working "
         "directory) or else /tmp, and cannot here",
         "set TMPDIR to a writable directory outside the working directory (another sandbox around cordon "
         "usually gives one)"},
        "");
    if (tmp.available) tmp.detail = "below " + f.run_tmp_base + " (the namespace-free jail's TMPDIR)";

    Layer landlock = layer("landlock", "Landlock");
    landlock.available = f.landlock_abi > 0 && f.landlock_restrict == 0;
    if (f.landlock_abi > 0) {
        landlock.detail = "ABI " + std::to_string(f.landlock_abi);
        if (f.landlock_restrict != 0)
            landlock.detail += ", but restricting a process: " + errno_text(f.landlock_restrict);
    } else {
        landlock.detail = "landlock_create_ruleset: " + errno_text(f.landlock_errno);
        if (f.landlock_errno == EOPNOTSUPP) {
            landlock.cause = "Landlock is built into this kernel but not enabled at boot";
            landlock.fix =
                "add landlock to the kernel's lsm= boot parameter (for example "
                "lsm=landlock,lockdown,yama,integrity,apparmor,bpf) and reboot";
        } else {
            landlock.cause = f.seccomp_mode == 2
                                 ? "this kernel has no Landlock, or a seccomp filter refuses its calls"
                                 : "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK, Linux 5.13)";
            landlock.fix = "a kernel with Landlock (5.13 or later; 6.7 for TCP port rules, 6.12 for scoping)";
        }
    }

    Layer landlock_net = layer("landlock_network", "Landlock TCP ports");
    landlock_net.available = landlock.available && f.landlock_abi >= 4;
    landlock_net.detail = landlock_net.available ? "ABI 4: connect and bind limited to the ports it allows"
                                                 : "needs Landlock ABI 4 (Linux 6.7)";
    Layer scoping = layer("landlock_scoping", "Landlock scoping");
    scoping.available = landlock.available && f.landlock_abi >= 6;
    scoping.detail = scoping.available ? "ABI 6: signals and abstract Unix sockets stay inside the jail"
                                       : "needs Landlock ABI 6 (Linux 6.12)";

    Layer cgroup = layer("cgroup", "cgroup");
    cgroup.available = f.cgroup_delegated;
    if (f.cgroup_version == 0) {
        cgroup.detail = "no cgroup hierarchy mounted: --memory and --pids become rlimits";
    } else {
        cgroup.detail = "v" + std::to_string(f.cgroup_version) +
                        (f.cgroup_delegated ? ", delegated" : ", not delegated") +
                        (f.cgroup_dir.empty() ? "" : " (" + f.cgroup_dir + ")");
        if (!f.cgroup_delegated) {
            cgroup.cause =
                "this process may not make a cgroup with the memory and pids controllers: --memory and "
                "--pids become rlimits";
            cgroup.fix = "as a user: `systemd-run --user --scope -p Delegate=yes cordon run ...`";
        }
    }

    Layer apparmor = layer("apparmor", "AppArmor");
    apparmor.available = !apparmor_restricts(f);
    if (!f.apparmor_enabled) {
        apparmor.detail = "not enabled";
    } else {
        apparmor.detail =
            "enabled; unprivileged user namespaces " +
            std::string(f.apparmor_restrict_userns.value_or(0) ? "restricted" : "not restricted") +
            "; this process: " + (f.apparmor_label.empty() ? "?" : f.apparmor_label);
        if (!apparmor.available) {
            apparmor.cause =
                "a user namespace made here holds no capabilities unless a profile grants `userns`";
            apparmor.fix = apparmor_fix(f);
        }
    }

    // The namespace jail needs every namespace and the seccomp filter, and for transparent proxying (the
    // default) the nftables rules: where the jail child cannot set one up, `cordon run` falls back to the
    // namespace-free jail. That one needs the seccomp notifier with ADDFD (it performs every write and
    // connect for the command); Landlock enforces its reads.
    const Layer* needs[] = {&user, &mount, &net, &pid, &other, &nft, &seccomp};
    for (const Layer* l : needs)
        if (!l->available) {
            r.blocker = l->key;
            break;
        }
    bool namespace_free = seccomp.available && notif.available && addfd.available && tmp.available;
    if (r.blocker.empty()) {
        r.jail = JailKind::Namespaces;
        if (!landlock.available)
            r.lacks.push_back("Landlock, the second layer under the mounts (--strict refuses)");
        if (!addfd.available)
            r.lacks.push_back("the seccomp notifier: protected names that do not exist yet get placeholders");
        if (addfd.available && !getfd.available)
            r.lacks.push_back("pidfd_getfd: listed Unix sockets and /proc/self/fd reopens are refused");
    } else if (namespace_free) {
        r.jail = JailKind::Landlock;
        r.lacks = {"a PID namespace: host processes are visible under /proc", "a private /tmp and /dev/shm",
                   "transparent proxying: programs that ignore the proxy variables get a refusal"};
        if (!landlock.available)
            r.lacks.push_back(
                "Landlock: runs whose policy has read rules (denyRead, the project read scope) stop");
        if (!landlock_net.available)
            r.lacks.push_back("Landlock's TCP port rules under the notifier's connect");
        if (!scoping.available) r.lacks.push_back("Landlock's scoping of signals and abstract Unix sockets");
        if (!cgroup.available) r.lacks.push_back("a cgroup: --memory and --pids are rlimits");
        if (!getfd.available)
            r.lacks.push_back("pidfd_getfd (" + getfd.fix +
                              "): a TCP connect gets a socket of the supervisor's in place of the command's "
                              "(options set on it before the connect are lost); listed Unix sockets and "
                              "/proc/self/fd reopens are refused");
    } else {
        r.jail = JailKind::None;
    }
    r.layers = {user,  mount, net, pid,      other,        nft,     seccomp, notif,
                addfd, getfd, tmp, landlock, landlock_net, scoping, cgroup,  apparmor};
    return r;
}

}  // namespace cordon::jail
