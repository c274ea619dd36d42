// Landlock, a second layer under the mounts: even if a mount were wrong, the command can write only below the
// writable roots (and with the project read scope read and execute files only below what the plan shows);
// with ABI 6 it can neither signal processes outside its domain nor connect to abstract Unix sockets created
// outside it.
#include <fcntl.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>

#include "jail/detail/landlock_abi.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

namespace {

using namespace landlock;

bool said_missing = false;

}  // namespace

Result prepare_landlock(Context& ctx) {
    int abi = abi_version();
    if (abi < 1) {
        if (ctx.config.strict) return fail_msg("Landlock is not available in this kernel (--strict)");
        if (!said_missing) say("note: Landlock is not available in this kernel; running without it");
        said_missing = true;
        return std::nullopt;
    }
    std::uint64_t file_rights = kWriteFile;
    std::uint64_t dir_rights = kWriteFile | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg |
                               kMakeSock | kMakeFifo | kMakeBlock | kMakeSym;
    if (abi >= 2) dir_rights |= kRefer;
    if (abi >= 3) file_rights |= kTruncate;
    if (abi >= 5) file_rights |= kIoctlDev;
    dir_rights |= file_rights;
    // The project read scope: reading and executing files, only below what the mounts show (a second layer
    // under the "/" mask). Listing directories stays unhandled: the mounts decide what a listing shows, and
    // a rule on the jail's "/" (the mask, listing only the scope's mount points) would cover everything.
    const std::uint64_t read_rights = ctx.plan.read_scope ? (kReadFile | kExecute) : 0;

    RulesetAttr attr{dir_rights | read_rights, 0, 0};
    std::size_t size = sizeof(std::uint64_t);
    if (abi >= 6) {
        attr.scoped = kScopeAbstractUnix | kScopeSignal;
        size = sizeof attr;
    } else {
        if (ctx.config.strict)
            return fail_msg("Landlock ABI " + std::to_string(abi) +
                            " has no signal and "
                            "abstract-socket scoping (needs 6; --strict)");
        say("note: Landlock ABI " + std::to_string(abi) +
            " lacks signal and abstract-socket scoping; running "
            "without them");
    }
    int ruleset = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
    if (ruleset < 0) return fail("create Landlock ruleset");

    auto allow = [&](const std::string& path, std::uint64_t dir_access, bool must_exist) -> Result {
        int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0) {
            if (!must_exist) return std::nullopt;
            return fail("open " + path + " for Landlock");
        }
        struct stat st {};
        ::fstat(fd, &st);
        PathBeneath rule{S_ISDIR(st.st_mode) ? dir_access : (dir_access & (file_rights | read_rights)), fd};
        long rc = ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
        int err = errno;
        ::close(fd);
        if (rc != 0 && must_exist) {
            errno = err;
            return fail("add Landlock rule for " + path);
        }
        return std::nullopt;
    };

    Result result;
    for (const auto& root : ctx.plan.writable_roots)
        if ((result = allow(root.string(), dir_rights, false))) break;
    for (const auto& root : ctx.plan.readable_roots)
        if (!result) result = allow(root.string(), read_rights, false);
    // Device files (/dev/null, /dev/tty, the jail's ptys) and /proc/self knobs are written, not created; the
    // read-only mounts on /dev and /proc/sys still apply.
    if (!result) result = allow("/dev", file_rights, true);
    // POSIX shared memory (shm_open, multiprocessing) lives in the jail's own /dev/shm tmpfs.
    if (!result) result = allow("/dev/shm", dir_rights, false);
    if (!result) result = allow("/proc", file_rights, true);
    // The files behind fds 0-2 (a host pty, a log file), reopened through /dev/stdout & co. Why only those
    // open for writing, and never a directory: /proc/self/fd/N reopens the caller's file through the host's
    // mount, so a rule for a file given only for reading (`< file`) would let `echo X > /proc/self/fd/0`
    // overwrite it. (A directory or O_PATH descriptor never gets here: Jail::start replaces it.)
    // With the read scope, those open for reading may be read again through /dev/stdin & co.
    for (int fd = 0; fd <= 2 && !result; ++fd) {
        int flags = ::fcntl(fd, F_GETFL);
        struct stat st {};
        if (flags < 0 || (flags & O_PATH) || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) continue;
        const int mode = flags & O_ACCMODE;
        std::uint64_t rights = mode == O_RDONLY ? 0 : file_rights;
        if (mode != O_WRONLY) rights |= read_rights & kReadFile;
        if (rights != 0) allow("/proc/self/fd/" + std::to_string(fd), rights, false);
    }
    if (result) {
        ::close(ruleset);
        return result;
    }
    ctx.landlock_ruleset = ruleset;
    return std::nullopt;
}

Result enforce_landlock(Context& ctx) {
    if (ctx.landlock_ruleset < 0) return std::nullopt;  // not available: reported when preparing
    if (::syscall(SYS_landlock_restrict_self, ctx.landlock_ruleset, 0) != 0) return fail("enforce Landlock");
    return std::nullopt;
}

}  // namespace cordon::jail::detail
