// The seccomp filter: everything is allowed except what a jailed command could use to leave the jail or
// attack the kernel or the terminal. Refused calls fail with an errno (programs see a normal error), never
// kill.
#include <fcntl.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <netinet/in.h>

#include <cerrno>
#include <cstdint>
#include <string>

#include "jail/detail/setup.hpp"
#include "jail/unix_sockets.hpp"

namespace cordon::jail::detail {

namespace {

// Arguments declared `int` are compared on their low 32 bits: the kernel ignores the upper half of the
// register, so a caller could set it to slip past a full 64-bit comparison.
constexpr scmp_datum_t kLow32 = 0xffffffffULL;

struct Filter {
    scmp_filter_ctx ctx;
    ~Filter() { seccomp_release(ctx); }
};

Result refuse(scmp_filter_ctx ctx, const char* name, int err, unsigned count = 0,
              const scmp_arg_cmp* args = nullptr) {
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) return std::nullopt;  // not on this architecture
    int rc = seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(static_cast<std::uint32_t>(err)), nr, count, args);
    if (rc != 0) {
        errno = -rc;
        return fail(std::string("seccomp rule for ") + name);
    }
    return std::nullopt;
}

// The calls the supervisor decides and performs (jail/notify.cpp): every call that creates, replaces or
// removes a name, and the opens that can create or write (the flags are in a register, checkable here; an
// open for reading only costs nothing). And umask, which the supervisor notes: it creates with the caller's.
Result add_notify_rules(scmp_filter_ctx ctx) {
    auto notify = [&](const char* name, unsigned count = 0, const scmp_arg_cmp* args = nullptr) -> Result {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) return std::nullopt;  // not on this architecture
        int rc = seccomp_rule_add_array(ctx, SCMP_ACT_NOTIFY, nr, count, args);
        if (rc != 0) {
            errno = -rc;
            return fail(std::string("seccomp notification rule for ") + name);
        }
        return std::nullopt;
    };
    Result r;
    for (scmp_datum_t bit :
         {scmp_datum_t(O_CREAT), scmp_datum_t(O_WRONLY), scmp_datum_t(O_RDWR), scmp_datum_t(O_TRUNC)}) {
        scmp_arg_cmp open_arg = SCMP_A1(SCMP_CMP_MASKED_EQ, bit, bit);
        scmp_arg_cmp openat_arg = SCMP_A2(SCMP_CMP_MASKED_EQ, bit, bit);
        if (!r) r = notify("open", 1, &open_arg);
        if (!r) r = notify("openat", 1, &openat_arg);
    }
    for (const char* name :
         {"creat", "openat2", "truncate", "mkdir", "mkdirat", "mknod", "mknodat", "link", "linkat", "symlink",
          "symlinkat", "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "umask"}) {
        if (r) break;
        r = notify(name);
    }
    return r;
}

// allowUnixSockets (jail/unix_sockets.hpp): the address of connect and bind is in memory, where the filter
// cannot look, so both are notified for every family (only when the list is non-empty: nothing changes for
// others) and performed by the supervisor with the address it copied. sendto/sendmsg name a destination only
// on a datagram socket (a stream socket refuses an address, a seqpacket one ignores it; an AF_INET/AF_INET6
// address reaches only the jail's loopback): AF_UNIX sockets of other types than stream and seqpacket are
// refused instead, so that nothing is notified for them.
Result add_unix_socket_rules(scmp_filter_ctx ctx) {
    for (const char* name : {"connect", "bind"}) {
        int nr = seccomp_syscall_resolve_name(name);
        if (nr == __NR_SCMP_ERROR) continue;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
        if (rc != 0) {
            errno = -rc;
            return fail(std::string("seccomp notification rule for ") + name);
        }
    }
    // Every type but stream and seqpacket (the kernel makes SOCK_RAW a datagram socket too).
    constexpr scmp_datum_t kSockTypeMask = 0xf;  // SOCK_TYPE_MASK
    Result r;
    for (scmp_datum_t type = 0; type <= kSockTypeMask && !r; ++type) {
        if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
        scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, AF_UNIX),
                               SCMP_A1(SCMP_CMP_MASKED_EQ, kSockTypeMask, type)};
        r = refuse(ctx, "socket", EPERM, 2, args);
    }
    return r;
}

// Unix sockets from socketpair(), which needs no address and stays allowed. Why: the network namespace does
// not stop filesystem addresses, so a datagram socketpair end could sendto/sendmsg (SCM_RIGHTS included) or
// connect to any datagram socket file on the host, and the destination address of sendto/sendmsg is in
// memory where the filter cannot look. Datagram (and SOCK_RAW, which the kernel makes a datagram socket)
// socketpairs are refused unless allowAllUnixSockets; a stream end refuses an address and a seqpacket end
// ignores one, so no Unix socket of the jail can name a path but through connect and bind. And bind names a
// path on any socket, a socketpair end included (a socket file named `.mcp.json`, or in a repository's
// hooks): notified, so the write rules decide (the per-path mode notifies it already; `notify_bind` for the
// others). Without user
// notification (old kernels) the jail's Landlock still confines where the name can be made.
Result add_socketpair_rules(scmp_filter_ctx ctx, bool notify_bind) {
    constexpr scmp_datum_t kSockTypeMask = 0xf;  // SOCK_TYPE_MASK
    Result r;
    if (notify_bind) {
        int nr = seccomp_syscall_resolve_name("bind");
        int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, nr, 0);
        if (rc != 0) {
            errno = -rc;
            return fail("seccomp notification rule for bind");
        }
    }
    for (scmp_datum_t type = 0; type <= kSockTypeMask && !r; ++type) {
        if (type == SOCK_STREAM || type == SOCK_SEQPACKET) continue;
        scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, AF_UNIX),
                               SCMP_A1(SCMP_CMP_MASKED_EQ, kSockTypeMask, type)};
        r = refuse(ctx, "socketpair", EPERM, 2, args);
    }
    // A datagram socket can still come from outside: handed over SCM_RIGHTS by a listed service or by the
    // peer of an inherited descriptor. The supervisor turns SO_PASSRIGHTS off on those sockets
    // (unix_sockets::refuse_descriptors); the command may not turn it on again.
    if (!r) {
        scmp_arg_cmp args[] = {
            SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, SOL_SOCKET),
            SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(unix_sockets::kSoPassRights))};
        r = refuse(ctx, "setsockopt", EPERM, 2, args);
    }
    return r;
}

// Set-id programs. Started by root, the command is uid 0 without capabilities but owns what it makes:
// `chmod 4755` on a copy of a shell would leave a set-user-ID-root program in the user's tree, which every
// local user who can reach it runs as root after the run (the host's mount has no nosuid); with --user or
// unprivileged it is a set-id program of the caller's. The mode is in a register: S_ISUID is refused in
// the chmod family, and S_ISGID with group execute (what makes a set-group-ID program; S_ISGID without it
// marks mandatory locking). The filter cannot tell a file from a directory, whose S_ISGID (`chmod g+s`:
// new files take the directory's group) is harmless: with user notification (`notify_directories`) such a
// mode without S_ISUID goes to the supervisor, which looks at what the call names and performs it only on
// a directory (jail/notify.cpp); without, it is refused too. The creations' modes are stripped by the
// supervisor, and chown clears the bits itself. `notify_every_mode` (root's command without namespaces, see
// add_without_namespaces_rules): every mode without S_ISUID goes to the supervisor.
Result add_set_id_rules(scmp_filter_ctx ctx, bool notify_directories, bool notify_every_mode) {
    // fchmodat2 (Linux 6.6) by number where libseccomp does not know it yet (the same on every
    // architecture: numbers of new calls are shared).
    constexpr int kFchmodat2 = 452;
    struct Call {
        const char* name;
        int fallback;
        unsigned mode_arg;
    };
    Result r;
    for (const Call& call : {Call{"chmod", -1, 1}, Call{"fchmod", -1, 1}, Call{"fchmodat", -1, 2},
                             Call{"fchmodat2", kFchmodat2, 2}}) {
        int nr = seccomp_syscall_resolve_name(call.name);
        if (nr == __NR_SCMP_ERROR) nr = call.fallback;
        if (nr < 0) continue;  // not on this architecture
        // S_ISUID refused; S_ISGID with group execute and without S_ISUID (one masked compare: the two rules
        // never match the same mode) refused or notified.
        struct Rule {
            scmp_datum_t mask, bits;
            std::uint32_t action;
        };
        const std::uint32_t gid_action = notify_directories ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM);
        const Rule others = notify_every_mode
                                ? Rule{S_ISUID, 0, SCMP_ACT_NOTIFY}
                                : Rule{S_ISUID | S_ISGID | S_IXGRP, S_ISGID | S_IXGRP, gid_action};
        for (const Rule& rule : {Rule{S_ISUID, S_ISUID, SCMP_ACT_ERRNO(EPERM)}, others}) {
            if (r) break;
            const scmp_arg_cmp arg{call.mode_arg, SCMP_CMP_MASKED_EQ, rule.mask, rule.bits};
            int rc = seccomp_rule_add_array(ctx, rule.action, nr, 1, &arg);
            if (rc != 0) {
                errno = -rc;
                r = fail(std::string("seccomp rule for ") + call.name);
            }
        }
    }
    return r;
}

// The namespace-free jail (landlock_jail.hpp): no network namespace holds the command's sockets, so every
// way to send a packet without connect(2) is refused here, and connect goes to the supervisor, which connects
// the caller's socket only to the proxy's listeners (host_view.hpp). What is refused: AF_INET/AF_INET6
// sockets other than TCP streams (UDP sends to any address without connect; raw and SCTP ones too, SCTP
// even in a stream socket), MSG_FASTOPEN (sendto/sendmsg connect a TCP socket to the address they carry),
// TCP_FASTOPEN_CONNECT (the connect is deferred to the first write, whose address the supervisor would no
// longer see), and pidfd_getfd (a host process's socket, of the same user, taken over).
Result add_without_namespaces_rules(scmp_filter_ctx ctx, UnixSockets unix_sockets, bool root_command) {
    constexpr scmp_datum_t kSockTypeMask = 0xf;  // SOCK_TYPE_MASK
    Result r;
    // Root's command (uid 0, no capability) owns the host's system files: without the namespace jail's
    // read-only mounts, chmod would let it make /etc/shadow world-writable for everyone after the run
    // (Landlock has no right for modes). Its chmod family goes to the supervisor, which decides by the write
    // rules (add_set_id_rules with notify_every_mode, jail/notify.cpp). Extended attributes are refused
    // outright: a POSIX ACL (system.posix_acl_access, which setfacl writes) is a mode by another name
    // (`setfacl -m o::rw /etc/passwd` makes it world-writable), and the owner may set one.
    if (root_command) {
        constexpr int kSetxattrat = 463, kRemovexattrat = 466;
        for (const char* name : {"setxattr", "lsetxattr", "fsetxattr", "setxattrat", "removexattr",
                                 "lremovexattr", "fremovexattr", "removexattrat"}) {
            if (r) break;
            int nr = seccomp_syscall_resolve_name(name);
            if (nr == __NR_SCMP_ERROR) {
                const std::string n = name;
                nr = n == "setxattrat" ? kSetxattrat : n == "removexattrat" ? kRemovexattrat : -1;
            }
            if (nr < 0) continue;
            int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
            if (rc != 0) {
                errno = -rc;
                r = fail(std::string("seccomp rule for ") + name);
            }
        }
    }
    for (scmp_datum_t family : {scmp_datum_t(AF_INET), scmp_datum_t(AF_INET6)}) {
        for (scmp_datum_t type = 0; type <= kSockTypeMask && !r; ++type) {
            if (type == SOCK_STREAM) continue;
            scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, family),
                                   SCMP_A1(SCMP_CMP_MASKED_EQ, kSockTypeMask, type)};
            r = refuse(ctx, "socket", EPERM, 2, args);
        }
        // A stream socket's protocol: 0 or IPPROTO_TCP (full 64-bit compares: an upper half set is refused).
        for (scmp_datum_t protocol = 1; protocol < IPPROTO_TCP && !r; ++protocol) {
            scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, family),
                                   SCMP_A2(SCMP_CMP_EQ, protocol)};
            r = refuse(ctx, "socket", EPROTONOSUPPORT, 2, args);
        }
        if (!r) {
            scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, family),
                                   SCMP_A2(SCMP_CMP_GT, IPPROTO_TCP)};
            r = refuse(ctx, "socket", EPROTONOSUPPORT, 2, args);
        }
    }
    struct Flags {
        const char* name;
        unsigned arg;
    };
    for (const Flags& call : {Flags{"sendto", 3}, Flags{"sendmsg", 2}, Flags{"sendmmsg", 3}}) {
        if (r) break;
        const scmp_arg_cmp arg{call.arg, SCMP_CMP_MASKED_EQ, MSG_FASTOPEN, MSG_FASTOPEN};
        r = refuse(ctx, call.name, EPERM, 1, &arg);
    }
    if (!r) {
        constexpr scmp_datum_t kTcpFastopenConnect = 30;  // TCP_FASTOPEN_CONNECT (Linux 4.11)
        scmp_arg_cmp args[] = {SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, IPPROTO_TCP),
                               SCMP_A2(SCMP_CMP_MASKED_EQ, kLow32, kTcpFastopenConnect)};
        r = refuse(ctx, "setsockopt", EPERM, 2, args);
    }
    if (!r) {
        constexpr int kPidfdGetfd = 438;
        int nr = seccomp_syscall_resolve_name("pidfd_getfd");
        if (nr == __NR_SCMP_ERROR) nr = kPidfdGetfd;
        int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
        if (rc != 0) {
            errno = -rc;
            r = fail("seccomp rule for pidfd_getfd");
        }
    }
    // prlimit64 on another process: no PID namespace hides the host's processes of the same user (root's
    // command: the host's root daemons), whose limits it would set (RLIMIT_NOFILE 0, RLIMIT_FSIZE 0 cut their
    // writes short); Landlock has no scope for it. Reading them, and setting one's own (pid 0), stay.
    if (!r) {
        scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_NE, 0), SCMP_A2(SCMP_CMP_NE, 0)};
        r = refuse(ctx, "prlimit64", EPERM, 2, args);
    }
    // listen: an unbound or non-loopback INET socket would listen on the host's network.
    if (!r) {
        int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, seccomp_syscall_resolve_name("listen"), 0);
        if (rc != 0) {
            errno = -rc;
            r = fail("seccomp notification rule for listen");
        }
    }
    // connect of every family (the per-path mode notifies it already), and bind where nothing else does.
    for (const char* name : {"connect", "bind"}) {
        if (r || unix_sockets == UnixSockets::Listed) break;
        if (std::string(name) == "bind" && unix_sockets == UnixSockets::Refused)
            break;  // add_socketpair_rules
        int rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, seccomp_syscall_resolve_name(name), 0);
        if (rc != 0) {
            errno = -rc;
            r = fail(std::string("seccomp notification rule for ") + name);
        }
    }
    return r;
}

}  // namespace

Result compile_seccomp(const JailConfig& config, UnixSockets unix_sockets,
                       std::vector<sock_filter>& program) {
    Filter f{seccomp_init(SCMP_ACT_ALLOW)};
    if (!f.ctx) return fail_msg("seccomp_init failed");
    Result r;

    // Socket families. AF_INET/AF_INET6 reach only the jail's loopback (the network namespace has nothing
    // else). AF_UNIX is refused unless allowAllUnixSockets: a read-only mount does not stop connect() to a
    // socket file (docker.sock, D-Bus). socketpair() is not affected. AF_NETLINK only for NETLINK_ROUTE
    // (getaddrinfo asks it for the interfaces; the namespace has only lo). Every other family (AF_PACKET,
    // AF_VSOCK, AF_KEY, AF_BLUETOOTH, AF_ALG, ...) is refused.
    for (int family = 0; family < AF_MAX && !r; ++family) {
        if (family == AF_INET || family == AF_INET6 || family == AF_NETLINK) continue;
        if (family == AF_UNIX && unix_sockets != UnixSockets::Refused) continue;
        scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, static_cast<scmp_datum_t>(family));
        r = refuse(f.ctx, "socket", family == AF_UNIX ? EPERM : EAFNOSUPPORT, 1, &arg);
    }
    if (!r) {
        scmp_arg_cmp args[] = {SCMP_A0(SCMP_CMP_MASKED_EQ, kLow32, AF_NETLINK), SCMP_A2(SCMP_CMP_NE, 0)};
        r = refuse(f.ctx, "socket", EPROTONOSUPPORT, 2, args);
    }

    // New user namespaces would give the command a fresh set of capabilities over new mount and network
    // namespaces. (Other namespace flags need capabilities the command does not have.)
    if (!r) {
        scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
        r = refuse(f.ctx, "clone", EPERM, 1, &arg);
    }
    if (!r) {
        scmp_arg_cmp arg = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_NEWUSER, CLONE_NEWUSER);
        r = refuse(f.ctx, "unshare", EPERM, 1, &arg);
    }
    // clone3 passes its flags in memory, which seccomp cannot read: ENOSYS makes libc fall back to clone().
    if (!r) r = refuse(f.ctx, "clone3", ENOSYS);

    // The mount API, keys, io_uring (bypasses seccomp for the operations it performs), bpf, perf,
    // userfaultfd (a tool for kernel exploits), and ptrace unless asked for.
    const char* refused[] = {"mount",
                             "umount2",
                             "move_mount",
                             "open_tree",
                             "fsopen",
                             "fsconfig",
                             "fsmount",
                             "fspick",
                             "pivot_root",
                             "mount_setattr",
                             "setns",
                             "keyctl",
                             "add_key",
                             "request_key",
                             "io_uring_setup",
                             "io_uring_enter",
                             "io_uring_register",
                             "bpf",
                             "perf_event_open",
                             "userfaultfd",
                             "kexec_load",
                             "kexec_file_load",
                             "init_module",
                             "finit_module",
                             "delete_module",
                             "acct",
                             "swapon",
                             "swapoff",
                             "reboot"};
    for (const char* name : refused) {
        if (r) break;
        r = refuse(f.ctx, name, EPERM);
    }
    // pidfd_getfd takes another process's descriptor under ptrace's access check: a ptrace of its own. Why:
    // Landlock's ptrace scoping keeps it inside the jail where Landlock is, but a listed socket hands the
    // command its listener's pidfd (SO_PEERPIDFD): a host process, maybe of the command's user.
    if (!r && !config.allow_ptrace) {
        for (const char* name : {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}) {
            if (r) break;
            r = refuse(f.ctx, name, EPERM);
        }
    }

    // Terminal injection: TIOCSTI pushes bytes into the terminal's input queue, which the user's shell reads
    // after the jail exits; TIOCLINUX can do the same on a Linux console.
    for (unsigned long request :
         {static_cast<unsigned long>(TIOCSTI), static_cast<unsigned long>(TIOCLINUX)}) {
        if (r) break;
        scmp_arg_cmp arg = SCMP_A1(SCMP_CMP_MASKED_EQ, kLow32, request);
        r = refuse(f.ctx, "ioctl", EPERM, 1, &arg);
    }
    // Root's command without namespaces: its every chmod is decided by the supervisor (no read-only mount
    // keeps it off the host's system files, which it owns).
    const bool root_command = ::getuid() == 0 && (!config.run_as || config.run_as->first == 0);
    const bool notify_every_mode = config.without_namespaces && config.user_notify && root_command;
    if (!r) r = add_set_id_rules(f.ctx, config.user_notify, notify_every_mode);
    if (!r && config.user_notify) r = add_notify_rules(f.ctx);
    if (!r && unix_sockets == UnixSockets::Listed) r = add_unix_socket_rules(f.ctx);
    if (!r && unix_sockets != UnixSockets::All)
        r = add_socketpair_rules(f.ctx, config.user_notify && unix_sockets == UnixSockets::Refused);
    if (!r && config.without_namespaces) {
        if (!config.user_notify)
            return fail_msg("the jail without namespaces needs seccomp user notification");
        r = add_without_namespaces_rules(f.ctx, unix_sockets, root_command);
    }
    if (r) return r;

    // Exported as raw BPF once, in the supervisor; the command process only loads it.
    int fd = static_cast<int>(::syscall(SYS_memfd_create, "cordon-seccomp", MFD_CLOEXEC));
    if (fd < 0) return fail("memfd for the seccomp program");
    int rc = seccomp_export_bpf(f.ctx, fd);
    if (rc != 0) {
        ::close(fd);
        errno = -rc;
        return fail("export the seccomp program");
    }
    off_t size = ::lseek(fd, 0, SEEK_END);
    program.resize(static_cast<std::size_t>(size) / sizeof(sock_filter));
    ssize_t n = ::pread(fd, program.data(), program.size() * sizeof(sock_filter), 0);
    ::close(fd);
    if (size <= 0 || n != size) {
        program.clear();
        return fail_msg("read back the seccomp program");
    }
    return std::nullopt;
}

Result enforce_seccomp(Context& ctx) {
    if (ctx.seccomp.empty()) return std::nullopt;  // not compiled: best effort, already reported
    sock_fprog prog{static_cast<unsigned short>(ctx.seccomp.size()), ctx.seccomp.data()};
    if (ctx.config.user_notify) {
        // The listener comes back from the kernel: sent to the supervisor before exec (jail.cpp).
        long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        if (fd < 0) return fail("load the seccomp filter with a notification listener");
        ctx.notify_fd = static_cast<int>(fd);
        return std::nullopt;
    }
    if (::prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0)
        return fail("load the seccomp filter");
    return std::nullopt;
}

}  // namespace cordon::jail::detail
