// Privileges of the command: no capabilities in any set, no way to regain them, no_new_privs.
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

int read_last_cap() {
    constexpr int kAll = 63;  // try them all; PR_CAPBSET_DROP fails with EINVAL past the last one
    int fd = ::open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return kAll;
    char buf[16] = {};
    ssize_t len = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    int n = 0;
    for (ssize_t i = 0; i < len && buf[i] >= '0' && buf[i] <= '9'; ++i)
        n = n * 10 + (buf[i] - '0');
    return n > 0 && n <= kAll ? n : kAll;
}

Result drop_privileges(Context& ctx) {
    // Why securebits first: with SECBIT_NOROOT, uid 0 gets no capabilities from execve(), and the bits are
    // locked so the command cannot clear them. Needs CAP_SETPCAP, which we still hold in the jail's user
    // namespace.
    unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                         SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
    if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return fail("set securebits");
    // The bounding set limits what any later execve() can grant: empty it (needs CAP_SETPCAP, so before the
    // uid change below).
    for (int cap = 0; cap <= ctx.last_cap; ++cap) {
        if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
            return fail("drop capability " + std::to_string(cap) + " from the bounding set");
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0)
        return fail("clear ambient capabilities");

    if (ctx.config.run_as) {
        auto [uid, gid] = *ctx.config.run_as;
        // No supplementary group of the caller (root's groups) may follow the command.
        // Raw system calls: this runs in a process sharing the init's memory, where libc's
        // all-threads set*id machinery has no business.
        if (::syscall(SYS_setgroups, 0, nullptr) != 0) return fail("clear supplementary groups");
        if (::syscall(SYS_setresgid, gid, gid, gid) != 0) return fail("setresgid " + std::to_string(gid));
        if (::syscall(SYS_setresuid, uid, uid, uid) != 0) return fail("setresuid " + std::to_string(uid));
    }

    // Permitted, effective and inheritable: all empty.
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, data) != 0) return fail("clear capabilities");

    // No execve() can grant privileges again (setuid binaries, file capabilities). Also required for seccomp
    // and Landlock without CAP_SYS_ADMIN.
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("set no_new_privs");
    return std::nullopt;
}

}  // namespace cordon::jail::detail
