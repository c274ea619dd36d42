// What this host lets cordon's jail use, and so which jail `cordon run` gets here. probe_host() finds out by
// trying, in child processes, what each jail does (a user namespace with id maps, mounts in a mount
// namespace, a fresh /proc in a PID namespace, lo and the nftables rules in a network namespace; a seccomp
// filter with a user-notification listener that injects a descriptor; a Landlock domain); the caller's own
// process is left as it was. diagnose() is pure: the report, each missing layer's cause and the fix for that
// cause, from the facts alone (unit-tested with made-up facts).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cordon::jail {

// Each trial step's errno: 0 it worked, kNotTried an earlier step it needs failed.
constexpr int kNotTried = -1;

struct HostFacts {
    std::string kernel;  // uname -r
    uid_t euid = 0;
    std::uint64_t cap_effective = 0, cap_bounding = 0;
    int seccomp_mode = 0;  // "Seccomp:" of /proc/self/status: 0 none, 1 strict, 2 a filter
    bool no_new_privs = false;
    // /proc/self/uid_map is not the whole identity map: cordon runs in a user namespace someone else made
    // (another sandbox: bubblewrap, a rootless container).
    bool nested_user_namespace = false;
    std::string pid1;              // /proc/1/comm: "bwrap" inside bubblewrap's PID namespace
    bool sandbox_runtime = false;  // SANDBOX_RUNTIME=1: srt (Claude Code's sandbox) or a cordon jail
    bool container = false;        // /.dockerenv, /run/.containerenv or $container
    std::optional<long> unprivileged_userns_clone;  // kernel.unprivileged_userns_clone (Debian's patch)
    std::optional<long> max_user_namespaces;        // user.max_user_namespaces, as this namespace sees it
    std::optional<long> apparmor_restrict_userns;   // kernel.apparmor_restrict_unprivileged_userns
    bool apparmor_enabled = false;
    std::string apparmor_label;  // this process's confinement ("unconfined", "cordon (unconfined)")
    std::string self_exe;        // /proc/self/exe: where the AppArmor profile must point
    bool apparmor_profile_installed = false;  // /etc/apparmor.d/cordon exists

    // The namespace jail's trial, in order; each step only when the ones it needs worked.
    int user_ns = kNotTried;   // unshare(CLONE_NEWUSER)
    int id_maps = kNotTried;   // setgroups "deny", uid_map and gid_map: this uid and gid as 0
    int mount_ns = kNotTried;  // unshare(CLONE_NEWNS)
    int mounts = kNotTried;    // private propagation, a tmpfs, a bind remounted read-only
    std::string mounts_step;   // which of those failed
    int net_ns = kNotTried;    // unshare(CLONE_NEWNET)
    int loopback = kNotTried;  // lo up
    int nftables = kNotTried;  // default routes via lo and the jail's nftables rules (transparent proxying)
    std::string nftables_error;
    int ipc_uts_cgroup_ns = kNotTried;  // unshare(CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP)
    int pid_ns = kNotTried;             // unshare(CLONE_NEWPID) and a child in it
    int proc_mount = kNotTried;         // a fresh /proc mounted by that child

    // The seccomp trial.
    int seccomp_filter = kNotTried;  // a filter installed (with no_new_privs)
    int user_notif = kNotTried;      // SECCOMP_FILTER_FLAG_NEW_LISTENER
    int addfd = kNotTried;           // SECCOMP_IOCTL_NOTIF_ADDFD with SECCOMP_ADDFD_FLAG_SEND answered a call
    // `cordon run` does not use the notifier here although it works: jail::user_notification_supported() says
    // no (a kernel release before 5.14, or the test switch CORDON_TEST_NO_USER_NOTIF).
    bool notify_switched_off = false;
    // pidfd_getfd of a child's descriptor: how the notifier takes the caller's socket to connect it (every
    // connect of the namespace-free jail, listed Unix sockets) and reopens /proc/self/fd/N.
    int pidfd_getfd = kNotTried;

    // Landlock.
    int landlock_abi = 0;    // 0: none
    int landlock_errno = 0;  // why none: ENOSYS not built (or filtered), EOPNOTSUPP not enabled at boot
    int landlock_restrict = kNotTried;  // a child restricted itself

    // Where the namespace-free jail makes the run's temporary directory ($TMPDIR when it is a directory
    // outside the working directory, else /tmp), and whether one could be made there (made and removed).
    std::string run_tmp_base;
    int run_tmp = kNotTried;

    // cgroups (for --memory and --pids).
    int cgroup_version = 0;         // 2, 1, or 0 when none is mounted
    bool cgroup_delegated = false;  // v2: this process's cgroup offers memory and pids to a child of its own
    std::string cgroup_dir;
};

enum class JailKind {
    Namespaces,  // the full jail: user, mount, PID, network, IPC, UTS and cgroup namespaces
    Landlock,    // the namespace-free jail: Landlock and the seccomp notifier
    None,
};
std::string_view to_string(JailKind kind);  // "namespaces", "landlock", "none"

struct Layer {
    std::string key;   // stable, for --json: "user_namespace", "landlock", ...
    std::string name;  // for people: "user namespace"
    bool available = false;
    std::string detail;  // what was found ("ABI 7", "unshare(CLONE_NEWUSER): No space left on device")
    std::string cause;   // why it is missing (empty when available or not known)
    std::string fix;     // the fix for that cause (empty when available or none is known)
};

struct HostReport {
    JailKind jail = JailKind::None;
    std::vector<Layer> layers;       // every layer, in a fixed order
    std::vector<std::string> lacks;  // what the jail in use lacks, against the full one
    std::string blocker;             // key of the first missing layer the namespace jail needs ("" when none)
    int exit_status() const;         // 0 namespaces, 1 landlock, 2 none
};

// Runs the trials (a few forked children, each bounded by a timeout; ~10 ms here).
HostFacts probe_host();
HostReport diagnose(const HostFacts& facts);

}  // namespace cordon::jail
