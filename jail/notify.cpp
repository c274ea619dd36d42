// The supervisor's side of the seccomp user notification (see notify.hpp and jail/README.md).
#include "jail/notify.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fs.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <malloc.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jail/detail/jail_view.hpp"
#include "jail/git_dirs.hpp"
#include "jail/seccomp_notify_compat.hpp"
#include "jail/unix_sockets.hpp"
#include "policy/casefold.hpp"
#include "policy/git_config.hpp"
#include "policy/path_components.hpp"
#include "policy/write_rules.hpp"

namespace cordon::jail {

bool user_notification_supported() {
    const char* off = std::getenv("CORDON_TEST_NO_USER_NOTIF");
    if (off && *off && std::strcmp(off, "0") != 0) return false;
    utsname u{};
    if (::uname(&u) != 0) return false;
    int major = 0, minor = 0;
    if (std::sscanf(u.release, "%d.%d", &major, &minor) != 2) return false;
    return major > 5 || (major == 5 && minor >= 14);
}

RunStart RunStart::now() {
    RunStart start;
    ::clock_gettime(CLOCK_REALTIME_COARSE, &start.coarse);
    ::clock_gettime(CLOCK_REALTIME, &start.fine);
    return start;
}

namespace {
bool before(const timespec& a, const timespec& b) {
    return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}
}  // namespace

bool existed_before(const RunStart& start, const timespec& btime, bool made_by_run) {
    if (before(btime, start.coarse)) return true;  // older than any inode the run can make
    if (before(start.fine, btime)) return false;   // younger than the run's start
    return !made_by_run;
}

namespace {

namespace path_components = policy::path_components;
using detail::Caller;
using detail::Fd;
using detail::JailView;
using detail::magic_descriptor;
using detail::read_caller;
using detail::read_string;
using detail::readlink_str;
using detail::Target;

// The notified system calls by what their arguments are: the table that drives NotifierImpl::handle() (as
// nsjail's syscall_defs.h). Positions of the arguments, -1 for none: `dirfd`/`path` name the first path
// (AT_FDCWD without a dirfd), `dirfd2`/`path2` the second (rename's and link's new name, symlink's link),
// `flags`, `mode` and `extra` (mknod's device, truncate's length, symlink's target text); `fixed_flags` are
// the flags the call implies (creat, rmdir).
enum class Does {
    OpenForWriting,  // open*, creat: creates, truncates or opens for writing (the filter passes only those)
    MakeDirectory,   // creates
    MakeNode,        // creates
    Remove,          // unlink*, rmdir
    Rename,          // removes a name and creates one
    Link,            // creates a second name
    Symlink,         // creates
    Truncate,        // writes through a path
    Socket,          // connect, bind (unix_sockets.hpp)
    ChangeMode,      // chmod*: g+s (directories only); without namespaces, root's every mode
    Umask,           // noted, then continued by the kernel
    Unsupported,     // openat2: ENOSYS (its resolve flags are not emulated; programs fall back to openat)
};

struct SyscallRole {
    long nr;
    Does does;
    int dirfd, path, dirfd2, path2, flags, mode, extra;
    int fixed_flags;
};

// fchmodat2 (Linux 6.6) by number where the headers do not know it (the same on every architecture).
constexpr long kFchmodat2 = 452;

const SyscallRole kSyscalls[] = {
#ifdef SYS_open
    {SYS_open, Does::OpenForWriting, -1, 0, -1, -1, 1, 2, -1, 0},
    {SYS_creat, Does::OpenForWriting, -1, 0, -1, -1, -1, 1, -1, O_CREAT | O_WRONLY | O_TRUNC},
    {SYS_mkdir, Does::MakeDirectory, -1, 0, -1, -1, -1, 1, -1, 0},
    {SYS_mknod, Does::MakeNode, -1, 0, -1, -1, -1, 1, 2, 0},
    {SYS_unlink, Does::Remove, -1, 0, -1, -1, -1, -1, -1, 0},
    {SYS_rmdir, Does::Remove, -1, 0, -1, -1, -1, -1, -1, AT_REMOVEDIR},
    {SYS_rename, Does::Rename, -1, 0, -1, 1, -1, -1, -1, 0},
    {SYS_link, Does::Link, -1, 0, -1, 1, -1, -1, -1, 0},
    {SYS_symlink, Does::Symlink, -1, -1, -1, 1, -1, -1, 0, 0},
    {SYS_chmod, Does::ChangeMode, -1, 0, -1, -1, -1, 1, -1, 0},
#endif
    {SYS_fchmod, Does::ChangeMode, 0, -1, -1, -1, -1, 1, -1, 0},  // dirfd: the descriptor itself
    {SYS_fchmodat, Does::ChangeMode, 0, 1, -1, -1, -1, 2, -1, 0},
    {kFchmodat2, Does::ChangeMode, 0, 1, -1, -1, 3, 2, -1, 0},
    {SYS_openat, Does::OpenForWriting, 0, 1, -1, -1, 2, 3, -1, 0},
    {SYS_openat2, Does::Unsupported, -1, -1, -1, -1, -1, -1, -1, 0},
    {SYS_mkdirat, Does::MakeDirectory, 0, 1, -1, -1, -1, 2, -1, 0},
    {SYS_mknodat, Does::MakeNode, 0, 1, -1, -1, -1, 2, 3, 0},
    {SYS_unlinkat, Does::Remove, 0, 1, -1, -1, 2, -1, -1, 0},
    {SYS_renameat, Does::Rename, 0, 1, 2, 3, -1, -1, -1, 0},
    {SYS_renameat2, Does::Rename, 0, 1, 2, 3, 4, -1, -1, 0},
    {SYS_linkat, Does::Link, 0, 1, 2, 3, 4, -1, -1, 0},
    {SYS_symlinkat, Does::Symlink, -1, -1, 1, 2, -1, -1, 0, 0},
    {SYS_truncate, Does::Truncate, -1, 0, -1, -1, -1, -1, 1, 0},
    {SYS_connect, Does::Socket, -1, -1, -1, -1, -1, -1, -1, 0},
    {SYS_bind, Does::Socket, -1, -1, -1, -1, -1, -1, -1, 0},
    {SYS_listen, Does::Socket, -1, -1, -1, -1, -1, -1, -1, 0},  // only without namespaces (host_view.hpp)
    {SYS_umask, Does::Umask, -1, -1, -1, -1, -1, -1, -1, 0},
};

const SyscallRole* role_of(long nr) {
    for (const SyscallRole& r : kSyscalls)
        if (r.nr == nr) return &r;
    return nullptr;
}

// A notification's arguments decoded once by its role. Integer arguments are taken on their low 32 bits, as
// the kernel takes an `int`.
struct Args {
    const SyscallRole* role = nullptr;
    int dirfd = AT_FDCWD, dirfd2 = AT_FDCWD;
    std::uint64_t path = 0, path2 = 0;  // addresses in the caller's memory
    int flags = 0;
    mode_t mode = 0;
    std::uint64_t extra = 0;

    Args(const SyscallRole& r, const seccomp_notif& req) : role(&r) {
        const auto& a = req.data.args;
        auto low = [&](int i) { return static_cast<int>(static_cast<std::uint32_t>(a[i])); };
        if (r.dirfd >= 0) dirfd = low(r.dirfd);
        if (r.dirfd2 >= 0) dirfd2 = low(r.dirfd2);
        if (r.path >= 0) path = a[r.path];
        if (r.path2 >= 0) path2 = a[r.path2];
        if (r.flags >= 0) flags = low(r.flags);
        flags |= r.fixed_flags;
        if (r.mode >= 0) mode = static_cast<mode_t>(a[r.mode]);
        if (r.extra >= 0) extra = a[r.extra];
    }
};

// The calls that wait (a FIFO's open, a blocking connect) run on threads of their own, not to hold up every
// other call. Why bounded and reaped: the threads are the supervisor's, outside the jail's --pids and
// --memory, and a caller killed while it waits would otherwise pin its thread and descriptors for good
// (thousands of killed openers exhaust the supervisor, and then the jail's own calls fail). So at most
// kMaxWaits wait at once (beyond: EAGAIN to the caller), and a reaper ends, within a tick, each wait whose
// notification is no longer valid (the caller was killed, or a signal interrupted its call, which the kernel
// then restarts as a new notification). A wait that outlives the notifier answers on its own listener copy.
class Waits : public std::enable_shared_from_this<Waits> {
  public:
    static constexpr std::size_t kMaxWaits = 128;

    explicit Waits(int listener) : listener_(::fcntl(listener, F_DUPFD_CLOEXEC, 0)) {}
    ~Waits() {
        if (listener_ >= 0) ::close(listener_);
    }

    // Runs `work(listener, cancelled)` on a thread of its own for the notification `id` (`cancelled()` turns
    // true once the reaper found its caller gone; the wake signal then interrupts the thread's wait).
    // False when the bound is reached or no thread can be made: the caller is answered EAGAIN.
    bool start(std::uint64_t id, std::function<void(int, const std::function<bool()>&)> work,
               int wake_signal) {
        std::unique_lock<std::mutex> lock(mutex_);
        if (listener_ < 0 || entries_.size() >= kMaxWaits || entries_.count(id)) return false;
        // A stack of our own (a guard page below it), unmapped once the thread is joined: glibc would keep
        // the stacks of exited threads in its cache, and a burst of waits would leave the supervisor bigger.
        void* stack = ::mmap(nullptr, kGuard + kStack, PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (stack == MAP_FAILED) return false;
        ::mprotect(stack, kGuard, PROT_NONE);
        auto* job = new Job{shared_from_this(), id, std::move(work)};
        pthread_attr_t attr;
        ::pthread_attr_init(&attr);
        ::pthread_attr_setstack(&attr, static_cast<char*>(stack) + kGuard, kStack);
        pthread_t thread{};
        // The entry exists before the thread runs: it marks it finished, the reaper joins it.
        entries_[id] = Entry{};
        const int rc = ::pthread_create(&thread, &attr, &Waits::run, job);
        ::pthread_attr_destroy(&attr);
        if (rc != 0) {
            entries_.erase(id);
            delete job;
            ::munmap(stack, kGuard + kStack);
            return false;
        }
        entries_[id].thread = thread;
        entries_[id].stack = stack;
        entries_[id].started = true;
        wake_signal_ = wake_signal;
        if (!reaper_) {
            reaper_ = true;
            std::thread([self = shared_from_this()] { self->reap(); }).detach();
        }
        return true;
    }

    std::size_t size() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return entries_.size();
    }

    // Called on a wait thread right before it answers: the reaper leaves its wait alone from then on. Why: an
    // answer that hands a descriptor over (ADDFD with SEND) waits, interruptibly, for the caller to take it,
    // while the notification already reads as answered (ID_VALID fails): the reaper took that for a caller
    // gone, and its wake signal withdrew the descriptor: the caller's open returned 0 with no descriptor.
    static void answering() {
        if (!current_.first) return;
        std::lock_guard<std::mutex> lock(current_.first->mutex_);
        auto it = current_.first->entries_.find(current_.second);
        if (it != current_.first->entries_.end()) it->second.answering = true;
    }

  private:
    static constexpr std::size_t kStack = 256 * 1024;  // a system call and its answer: little stack
    static constexpr std::size_t kGuard = 4096;

    struct Entry {
        pthread_t thread{};
        void* stack = nullptr;
        bool started = false;
        bool cancelled = false;
        bool finished = false;
        bool answering = false;
    };
    struct Job {
        std::shared_ptr<Waits> waits;
        std::uint64_t id;
        std::function<void(int, const std::function<bool()>&)> work;
    };

    static void* run(void* arg) {
        std::unique_ptr<Job> job(static_cast<Job*>(arg));
        Waits& w = *job->waits;
        const std::uint64_t id = job->id;
        current_ = {&w, id};
        job->work(w.listener_, [&w, id] { return w.cancelled(id); });
        current_ = {nullptr, 0};
        std::lock_guard<std::mutex> lock(w.mutex_);
        w.entries_[id].finished = true;  // it takes the lock no more: the reaper may join it now
        w.cv_.notify_all();
        return nullptr;
    }

    bool cancelled(std::uint64_t id) const {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = entries_.find(id);
        return it == entries_.end() || it->second.cancelled;
    }

    // Every tick while waits exist (and at once when one finishes): finished threads are joined and their
    // stacks unmapped; a wait whose notification is no longer valid is cancelled and its thread signalled
    // (again each tick until it is gone: the signal may come before the thread enters its wait).
    void reap() {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!entries_.empty()) {
            for (auto it = entries_.begin(); it != entries_.end();) {
                if (!it->second.finished) {
                    ++it;
                    continue;
                }
                ::pthread_join(it->second.thread, nullptr);
                ::munmap(it->second.stack, kGuard + kStack);
                it = entries_.erase(it);
            }
            for (auto& [id, entry] : entries_) {
                if (!entry.started || entry.finished || entry.answering) continue;
                std::uint64_t check = id;
                if (!entry.cancelled && ::ioctl(listener_, SECCOMP_IOCTL_NOTIF_ID_VALID, &check) != 0)
                    entry.cancelled = true;
                if (entry.cancelled) ::pthread_kill(entry.thread, wake_signal_);
            }
            cv_.wait_for(lock, std::chrono::milliseconds(50));
        }
        reaper_ = false;
        // The waits' threads allocated in arenas of their own: given back once they are all gone, so that a
        // burst of waits leaves the supervisor's memory where it was.
        ::malloc_trim(0);
    }

    static thread_local std::pair<Waits*, std::uint64_t> current_;  // the wait this thread serves
    int listener_ = -1;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::map<std::uint64_t, Entry> entries_;
    bool reaper_ = false;
    int wake_signal_ = 0;
};

thread_local std::pair<Waits*, std::uint64_t> Waits::current_{nullptr, 0};

class NotifierImpl final : public Notifier {
  public:
    NotifierImpl(int fd, policy::PolicyPtr policy, RunStart run_start, std::vector<std::string> mount_points,
                 std::shared_ptr<const HostView> host, std::vector<std::string> cordon_files,
                 RefusedWriteSink refused)
        : refused_(std::move(refused)),
          listener_(fd),
          host_(std::move(host)),
          policy_(std::move(policy)),
          run_start_(run_start),
          mount_points_(mount_points.begin(), mount_points.end()),
          cordon_files_(std::move(cordon_files)) {
        for (const std::string& file : cordon_files_) {
            struct stat st {};
            if (::stat(file.c_str(), &st) == 0) cordon_file_ids_.emplace_back(st.st_dev, st.st_ino);
        }
        for (const auto& rule : policy_->filesystem().allow_write)
            if (!rule.glob) writable_roots_.insert(rule.path.string());
        listed_sockets_ = unix_sockets::listed_paths(policy_->network().allow_unix_sockets,
                                                     policy_->filesystem().home.string());
        pinned_sockets_ = unix_sockets::pin_listed(listed_sockets_);
        waits_ = std::make_shared<Waits>(listener_.fd);
        // Root with the capabilities to act as another user; root without them (another sandbox's, with
        // every capability dropped) is the command's own user, like an unprivileged caller.
        privileged_ = ::geteuid() == 0 && holds_setid_capabilities();
        if (host_ && privileged_) keep_ptrace_.store(true);
        // A speed-up only: an older kernel (EINVAL) serves the same calls with ordinary wake-ups.
        ::ioctl(listener_.fd, SECCOMP_IOCTL_NOTIF_SET_FLAGS, SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP);
        install_wake_signal();
        thread_ = std::thread([this] { serve(); });
    }

    ~NotifierImpl() override {
        // The thread waits in SECCOMP_IOCTL_NOTIF_RECV, which only a signal interrupts (the listener does not
        // wake a receiver when the jail is gone): signalled until it has seen `stopping_` and returned.
        stopping_.store(true);
        if (thread_.joinable()) {
            while (!stopped_.load()) {
                ::pthread_kill(thread_.native_handle(), wake_signal());
                std::unique_lock<std::mutex> lock(mutex_);
                stopped_cv_.wait_for(lock, std::chrono::milliseconds(5), [this] { return stopped_.load(); });
            }
            thread_.join();
        }
        for (const auto& p : pinned_sockets_)
            ::close(p.fd);
    }

    bool finished() const override { return stopped_.load(); }

    NewRepositories new_repositories() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        NewRepositories out;
        for (const auto& [identity, path] : new_repos_)
            out.paths.push_back(path);
        std::sort(out.paths.begin(), out.paths.end());
        out.more = more_repos_;
        return out;
    }

  private:
    // Per thread: what the thread's file system credentials and umask are now (changed only when a caller's
    // differ: most calls come from one process).
    struct ThreadState {
        bool ready = false;
        uid_t fsuid = static_cast<uid_t>(-1);
        gid_t fsgid = static_cast<gid_t>(-1);
        std::vector<gid_t> groups;
        bool groups_set = false;
        mode_t umask = 0;
    };
    static thread_local ThreadState state_;

    // The thread's own umask (unshare CLONE_FS) and, started by root, effective capabilities of CAP_SETUID
    // and CAP_SETGID only: the call is performed with the caller's rights, and the command has no
    // capability (CAP_DAC_OVERRIDE would let root's command write what it cannot).
    static bool prepare_thread(bool privileged) {
        if (state_.ready) return true;
        // A container's filter may refuse unshare altogether (Docker's profile without CAP_SYS_ADMIN): the
        // thread then shares the process's umask and working directory, set per call all the same.
        if (::unshare(CLONE_FS) != 0 && errno != EPERM) return false;
        state_.umask = ::umask(022);
        ::umask(state_.umask);
        if (privileged && !restrict_capabilities()) return false;
        state_.ready = true;
        return true;
    }

    static bool holds_setid_capabilities() {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
        if (::syscall(SYS_capget, &header, caps) != 0) return false;
        const std::uint32_t both = (1U << CAP_SETUID) | (1U << CAP_SETGID);
        return (caps[0].permitted & both) == both;
    }

    static bool restrict_capabilities() {
        __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
        __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
        if (::syscall(SYS_capget, &header, caps) != 0) return false;
        caps[0].effective = (1U << CAP_SETUID) | (1U << CAP_SETGID);
        // Why, without namespaces: a --user command is another user's process in our own user namespace,
        // whose memory (the paths it names) and descriptors only CAP_SYS_PTRACE lets us read. In the
        // namespace jail we own its user namespace, which gives that already. (No file access comes with it;
        // another process's /proc directory stays refused on the path resolved.)
        if (keep_ptrace_.load() && (caps[0].permitted & (1U << CAP_SYS_PTRACE)))
            caps[0].effective |= 1U << CAP_SYS_PTRACE;
        caps[1].effective = 0;
        return ::syscall(SYS_capset, &header, caps) == 0;
    }
    static inline std::atomic<bool> keep_ptrace_{false};

    bool become(const Caller& c) const { return become(c, privileged_); }

    // Static: the threads that wait for a FIFO or a connect may outlive the notifier.
    static bool become(const Caller& c, bool privileged) {
        if (!prepare_thread(privileged)) return false;
        if (c.umask != state_.umask) {
            ::umask(c.umask);
            state_.umask = c.umask;
        }
        if (!privileged) return true;  // the command has our ids and groups
        bool changed = false;
        if (!state_.groups_set || c.groups != state_.groups) {
            if (::syscall(SYS_setgroups, c.groups.size(), c.groups.data()) != 0) return false;
            state_.groups = c.groups;
            state_.groups_set = true;
        }
        if (c.fsgid != state_.fsgid) {
            ::syscall(SYS_setfsgid, c.fsgid);
            if (static_cast<gid_t>(::syscall(SYS_setfsgid, -1)) != c.fsgid) return false;
            state_.fsgid = c.fsgid;
            changed = true;
        }
        if (c.fsuid != state_.fsuid) {
            ::syscall(SYS_setfsuid, c.fsuid);
            if (static_cast<uid_t>(::syscall(SYS_setfsuid, -1)) != c.fsuid) return false;
            state_.fsuid = c.fsuid;
            changed = true;
        }
        // Going back to fsuid 0 raises the file system capabilities again.
        return !changed || restrict_capabilities();
    }

    // The signal that interrupts the thread's wait (a real-time one glibc leaves to programs; its handler
    // does nothing and has no SA_RESTART, so the wait returns EINTR).
    static int wake_signal() { return SIGRTMIN + 3; }

    // A blocking connect, interrupted by the wake signal only to see whether its caller is gone: an
    // interrupted connect goes on in the kernel (EALREADY on the next try), so the rest is a wait for the
    // socket to become writable. 0 or an errno; -1 when cancelled (nobody to answer).
    static int connect_waiting(int sock, const std::function<int()>& attempt,
                               const std::function<bool()>& cancelled) {
        int err = attempt();
        // Done, or a non-blocking socket's answer (EINPROGRESS, EAGAIN, EALREADY): the caller's to handle.
        if (err != EINTR) return err;
        while (err == EINTR || err == EALREADY || err == EINPROGRESS) {
            if (cancelled()) return -1;
            if (err == EINTR) {
                err = attempt();
                if (err == EISCONN) return 0;
                continue;
            }
            pollfd p{sock, POLLOUT, 0};
            if (::poll(&p, 1, -1) < 0) {
                err = errno == EINTR ? EALREADY : errno;
                continue;
            }
            int so_error = 0;
            socklen_t len = sizeof so_error;
            if (::getsockopt(sock, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) return errno;
            return so_error;
        }
        return err;
    }

    // Runs `call` (a connect to a listed socket) with the caller's effective uid and gid. Why: the listening
    // end takes the connecting thread's effective ids for its peer's (SO_PEERCRED, and the groups for
    // SO_PEERGROUPS): performed with ours, a command run by root with --user would be root to a service that
    // authorises by peer credentials. The real and saved ids stay ours, so the thread comes back; the way
    // back raises its effective capabilities, which are then restricted again.
    template <typename Call>
    static int as_caller(const Caller& c, bool privileged, Call&& call) {
        uid_t ruid = 0, euid = 0, suid = 0;
        gid_t rgid = 0, egid = 0, sgid = 0;
        if (!privileged || ::getresuid(&ruid, &euid, &suid) != 0 || ::getresgid(&rgid, &egid, &sgid) != 0 ||
            (c.fsuid == euid && c.fsgid == egid))
            return call();
        int result = EPERM;
        if (::syscall(SYS_setresgid, -1, c.fsgid, -1) == 0) {
            if (::syscall(SYS_setresuid, -1, c.fsuid, -1) == 0) {
                result = call();
                ::syscall(SYS_setresuid, -1, euid, -1);
            }
            ::syscall(SYS_setresgid, -1, egid, -1);
        }
        // The file system ids followed the effective ones: the next become() sets them again.
        state_.fsuid = static_cast<uid_t>(-1);
        state_.fsgid = static_cast<gid_t>(-1);
        if (!restrict_capabilities()) return EPERM;
        return result;
    }

    // The effective uid a connect performed for `c` is made with: the caller's when we may take its ids
    // (as_caller, a Connector), else ours.
    uid_t connecting_uid(const Caller& c) const { return privileged_ ? c.fsuid : ::geteuid(); }

    // Runs a connect of a socket that was non-blocking when we looked, on the receive thread, under a
    // deadline: a timer of the thread's own signals it every kConnectDeadline until the connect returns.
    // Why: the caller's other thread may have cleared O_NONBLOCK since (the open file is shared), and a
    // connect that waits (a listener's full backlog) would hold up every notified call of the jail. An
    // interrupted connect answers EINTR (a Unix one is abandoned, a TCP one goes on in the kernel), which
    // the caller of this hands to a wait thread (connect_waiting takes either up).
    static int connect_without_waiting(const std::function<int()>& attempt) {
        static constexpr long kConnectDeadline = 5'000'000;  // ns
        thread_local timer_t timer{};
        thread_local bool made = false;
        if (!made) {
            sigevent ev{};
            ev.sigev_notify = SIGEV_THREAD_ID;
            ev.sigev_signo = wake_signal();
            ev._sigev_un._tid = static_cast<pid_t>(::syscall(SYS_gettid));
            if (::timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0) return EINTR;  // no deadline: to a thread
            made = true;
        }
        itimerspec arm{};
        arm.it_value.tv_nsec = kConnectDeadline;
        arm.it_interval.tv_nsec = kConnectDeadline;  // again, should a tick come before the connect waits
        if (::timer_settime(timer, 0, &arm, nullptr) != 0) return EINTR;
        const int err = attempt();
        const itimerspec off{};
        ::timer_settime(timer, 0, &off, nullptr);
        return err;
    }

    static void install_wake_signal() {
        static std::once_flag once;
        std::call_once(once, [] {
            struct sigaction sa {};
            sa.sa_handler = [](int) {};
            sigemptyset(&sa.sa_mask);
            ::sigaction(wake_signal(), &sa, nullptr);
        });
    }

    // Receives with a blocking SECCOMP_IOCTL_NOTIF_RECV rather than poll + receive: one system call less per
    // call, and the jail's synchronous wake-up hands the CPU straight to the waiting receiver.
    void serve() {
        sigset_t wake;
        sigemptyset(&wake);
        sigaddset(&wake, wake_signal());
        ::pthread_sigmask(SIG_UNBLOCK, &wake, nullptr);
        // Before the first call is decided (the jail's calls wait in the kernel meanwhile; nothing the
        // command does changes the trees until one is answered), not in the constructor: the supervisor's
        // loop goes on, and a command that writes nothing never waits for it.
        note_git_config_targets();
        for (;;) {
            if (stopping_.load()) break;
            seccomp_notif req{};
            if (::ioctl(listener_.fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
                if (errno == EINTR) continue;
                // ENOENT: the caller died before we took its call, or (Linux 6.6 on) the jail is gone and the
                // receive no longer waits, which only the listener's POLLHUP tells.
                pollfd p{listener_.fd, POLLIN, 0};
                if (errno == ENOENT &&
                    !(::poll(&p, 1, 0) >= 0 && (p.revents & (POLLHUP | POLLERR | POLLNVAL))))
                    continue;
                break;
            }
            handle(req);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        stopped_.store(true);
        stopped_cv_.notify_all();
    }

    bool valid(std::uint64_t id) const {
        return ::ioctl(listener_.fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
    }

    void reply(std::uint64_t id, int err, long long val = 0) const {
        seccomp_notif_resp resp{};
        resp.id = id;
        resp.error = err ? -err : 0;
        resp.val = err ? 0 : val;
        ::ioctl(listener_.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }

    static std::pair<std::uint64_t, std::uint64_t> inode_of(const struct statx& stx) {
        return {(static_cast<std::uint64_t>(stx.stx_dev_major) << 32) | stx.stx_dev_minor, stx.stx_ino};
    }

    // A directory just made, in the run's first tick (its birth time may read as before the run): noted, so
    // that it counts as the run's own when it is (or holds) a git directory. Bounded: past the bound a
    // directory of that tick counts as older than the run (the safe side).
    void note_made_early(const Target& t) {
        struct statx stx {};
        if (made_early_.size() < kMaxMadeEarly &&
            ::statx(t.dir.fd, t.name.c_str(), AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) == 0)
            made_early_.insert(inode_of(stx));
    }

    // Whether an entry with this statx (birth time, device, inode) existed when the run started. Without a
    // birth time it counts as existing.
    bool existed_at_start(const struct statx& stx) const {
        if (!(stx.stx_mask & STATX_BTIME)) return true;
        const timespec btime{static_cast<time_t>(stx.stx_btime.tv_sec),
                             static_cast<long>(stx.stx_btime.tv_nsec)};
        return existed_before(run_start_, btime, made_early_.count(inode_of(stx)) > 0);
    }

    // Whether the git directory `dir` (jail view) existed when the run started. Why: decided on the directory
    // itself (its birth time, device and inode), never remembered by path: a path names whatever directory
    // was last moved there (`rm -rf b; mv a b` puts an old git directory where a new one was).
    bool git_dir_existed(const std::string& dir) {
        open_how how{};
        how.flags = O_PATH | O_CLOEXEC;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        Fd fd(static_cast<int>(::syscall(SYS_openat2, view_.root_fd(), dir.c_str(), &how, sizeof how)));
        if (fd.fd < 0) return errno != ENOENT;  // missing: it will be new; unreadable: counts as existing
        struct statx stx {};
        if (::statx(fd.fd, "", AT_EMPTY_PATH, STATX_BTIME | STATX_INO, &stx) != 0) return true;
        const bool existed = existed_at_start(stx);
        if (!existed) note_repository(inode_of(stx), dir);
        return existed;
    }

    // A repository the run created, for the end-of-run summary: by identity (one entry however often it is
    // moved or written), under the last path it was seen at; bounded, the rest counted.
    void note_repository(std::pair<std::uint64_t, std::uint64_t> identity, const std::string& path) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = new_repos_.find(identity);
        if (it != new_repos_.end()) {
            it->second = path;
        } else if (new_repos_.size() < kMaxNamedRepositories) {
            new_repos_.emplace(identity, path);
        } else if (seen_beyond_bound_.size() < kMaxCountedRepositories) {
            if (seen_beyond_bound_.insert(identity).second) ++more_repos_;
        }
    }

    // A `.git` the call just made (a directory, a gitfile, a link): named in the summary, whatever it is.
    void note_if_git(const Target& t) {
        if (t.name != ".git") return;
        struct statx stx {};
        if (::statx(t.dir.fd, ".git", AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) == 0)
            note_repository(inode_of(stx), t.path());
    }

    // The write rules' facts (policy/write_rules.hpp) from the jail's view. The directory a call lands in is
    // looked at through the descriptor it was resolved to (`at`), never looked up by path again; other
    // directories are opened in the jail's root (RESOLVE_IN_ROOT, no magic links).
    class Facts final : public policy::WriteFacts {
      public:
        // `at`, `at2`: the targets a call resolved (their directories are looked at through their
        // descriptors).
        explicit Facts(NotifierImpl& n, const Target* at = nullptr, const Target* at2 = nullptr)
            : n_(n), at_(at), at2_(at2) {}
        policy::JailKind jail() const override {
            return n_.host_ ? policy::JailKind::Landlock : policy::JailKind::Namespaces;
        }
        bool in_private_tmp(const std::string& path) const override {
            const std::string& tmp = n_.host_ ? n_.host_->private_tmp : std::string();
            return !tmp.empty() && path.compare(0, tmp.size(), tmp) == 0 &&
                   (path.size() == tmp.size() || path[tmp.size()] == '/');
        }
        bool hidden_by_read_rules(const std::string& path) override {
            return n_.host_ && host_rules::hidden(*n_.host_, path);
        }
        bool git_dir_existed(const std::string& dir) override { return n_.git_dir_existed(dir); }
        bool holds_git_signature(const std::string& dir) override {
            Fd fd = n_.open_in_root(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            return fd.fd >= 0 && git_dirs::holds_signature(fd.fd);
        }
        bool compares_without_case(const std::string& dir) override {
            const Target* t = landing(dir);
            Fd fd = t ? Fd(::openat(t->dir.fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC))
                      : n_.open_in_root(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            return fd.fd < 0 || casefold_dir(fd.fd);
        }
        bool is_directory(const std::string& dir, const std::string& name) override {
            struct stat st {};
            return stat_in(dir, name, st) && S_ISDIR(st.st_mode);
        }
        bool is_symlink(const std::string& dir, const std::string& name) override {
            struct stat st {};
            return stat_in(dir, name, st) && S_ISLNK(st.st_mode);
        }
        bool holds_cordon_file(const std::string& path) override {
            for (const std::string& file : n_.cordon_files_)
                if (file != path && covers(path, file)) return true;
            return false;
        }
        int walk_tree(const std::string& dir, const std::string& name, const std::string& lands_at,
                      const std::function<int(policy::MovedDirectory&)>& visit) override {
            Fd own;
            const int fd = dir_fd(dir, own);
            if (fd < 0) return EACCES;
            const std::function<bool(int, const std::string&)> existed =
                [this](int at, const std::string& entry) { return existed_at(at, entry, true); };
            const std::function<bool(int)> nocase = [](int at) { return casefold_dir(at); };
            return policy::walk_tree_at(fd, name, lands_at, existed, nocase, visit);
        }
        bool is_regular_file(const std::string& dir, const std::string& name) override {
            struct stat st {};
            return stat_in(dir, name, st) && S_ISREG(st.st_mode);
        }
        bool has_entry(const std::string& dir, const std::string& name) override {
            struct stat st {};
            return stat_in(dir, name, st);
        }
        bool existed_at_start(const std::string& dir, const std::string& name) override {
            Fd own;
            const int fd = dir_fd(dir, own);
            return fd >= 0 && existed_at(fd, name);
        }
        bool is_cordon_file(const std::string& dir, const std::string& name) override {
            const std::string path = dir == "/" ? "/" + name : dir + "/" + name;
            for (const std::string& file : n_.cordon_files_)
                if (file == path) return true;
            struct stat st {};
            if (n_.cordon_file_ids_.empty() || !stat_in(dir, name, st)) return false;
            return std::find(n_.cordon_file_ids_.begin(), n_.cordon_file_ids_.end(),
                             std::make_pair(st.st_dev, st.st_ino)) != n_.cordon_file_ids_.end();
        }
        const policy::git_config::Targets& git_targets() override { return n_.git_targets_; }
        const policy::ProtectedLinks& protected_links() override { return n_.protected_links_; }
        bool is_protected_file(const std::string& dir, const std::string& name) override {
            struct stat st {};
            return stat_in(dir, name, st) && S_ISREG(st.st_mode) &&
                   n_.protected_links_.holds_file(st.st_dev, st.st_ino);
        }
        void note_bare_repository(const std::string& dir) override {
            Fd own;
            const int fd = dir_fd(dir, own);
            struct statx stx {};
            if (fd >= 0 && ::statx(fd, "", AT_EMPTY_PATH, STATX_INO, &stx) == 0)
                n_.note_repository(inode_of(stx), dir);
        }

      private:
        // Whether the entry `name` (`.`: the directory itself) of the directory open as `fd` existed when
        // the run started. One that cannot be looked at counts as old; a missing one as new, or as old where
        // `missing_is_old` (an entry a walk listed, gone since: what it was is unknown).
        bool existed_at(int fd, const std::string& name, bool missing_is_old = false) const {
            struct statx stx {};
            const bool self = name == ".";
            if (::statx(fd, self ? "" : name.c_str(), (self ? AT_EMPTY_PATH : 0) | AT_SYMLINK_NOFOLLOW,
                        STATX_BTIME | STATX_INO, &stx) != 0)
                return missing_is_old || (errno != ENOENT && errno != ENOTDIR);
            return n_.existed_at_start(stx);
        }
        // The resolved target whose directory is `dir`, if any.
        const Target* landing(const std::string& dir) const {
            if (at_ != nullptr && dir == at_->dir_path) return at_;
            if (at2_ != nullptr && dir == at2_->dir_path) return at2_;
            return nullptr;
        }
        int dir_fd(const std::string& dir, Fd& own) {
            if (const Target* t = landing(dir)) return t->dir.fd;
            own = n_.open_in_root(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
            return own.fd;
        }
        bool stat_in(const std::string& dir, const std::string& name, struct stat& st) {
            Fd own;
            const int fd = dir_fd(dir, own);
            return fd >= 0 && ::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
        }
        NotifierImpl& n_;
        const Target* at_;
        const Target* at2_;
    };

    Fd open_in_root(const std::string& path, int flags) const {
        open_how how{};
        how.flags = static_cast<std::uint64_t>(flags);
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
        return Fd(static_cast<int>(::syscall(SYS_openat2, view_.root_fd(), path.c_str(), &how, sizeof how)));
    }

    bool repository_place_allowed(const std::string& dir) {
        Facts facts(*this);
        return policy::repository_place_allowed(*policy_, dir, facts);
    }

    // 0 when the write rules (policy/write_rules.hpp) let the caller write `path` (jail view), otherwise the
    // errno to return: EROFS outside the writable areas (as the read-only mounts say), EACCES for a
    // protected path.
    int decide(const std::string& path, bool creates) {
        Facts facts(*this);
        return noted(path, policy::decide_write(*policy_, path, creates, facts));
    }

    // The path rules and the jail's own areas alone, on `path` as spelt.
    int decide_exact(const std::string& path, bool creates, const std::string& original) {
        (void)original;
        Facts facts(*this);
        return noted(path, policy::decide_write_exact(*policy_, path, creates, facts));
    }

    // decide() for a target, with what only the file system tells where the call lands (a gitfile, the
    // bare-repository shape, another program's shared memory without namespaces).
    int decide_at(const Target& t, bool creates) {
        Facts facts(*this, &t);
        return noted(t.path(), policy::decide_write_at(*policy_, t.dir_path, t.name, creates, facts));
    }

    // The refusals reported (RefusedWriteSink): the latest decision of the call being handled, refused or
    // not. A call answers with the errno of the decision that refused it (the checks return at once), so the
    // call's answer tells whether the refusal noted is the one it got (report_refusal). Also a call the rules
    // allow that the jail's own file system refuses (a read-only part of /proc: EROFS) is noted: the kernel
    // answers it, with that errno.
    int noted(const std::string& path, const policy::WriteDecision& d) {
        if (!refused_) return d.error;
        const int seen = d.error ? d.error : d.jail_answers == EROFS ? EROFS : 0;
        if (seen == 0) {
            refusal_.reset();
        } else {
            refusal_.emplace();
            refusal_->path = path;
            refusal_->error = seen;
            refusal_->rule = d.rule;
            refusal_->path_rule = d.path_rule;
        }
        return d.error;
    }

    // A move the move rules refused (protected-moves), noted under the name it concerns; EXDEV (a tree too
    // large to look through: `mv` copies) is no refusal.
    int noted_move(const policy::MoveDecision& d) { return d.error == EACCES ? noted(d.path, d) : d.error; }

    // The call's refusal to the sink, when its answer `err` is the refusal noted. Before the answer, while
    // the caller waits for it. Why not after: a caller that exits at once (`(echo x > f)`) would be gone
    // before its name is read, and a command that ends right after could end the run before the refusal is
    // handed over (the supervisor stops taking refusals for the log when the command ends). What it costs the
    // caller: a read of its own /proc entry and the sink's map update and queue push (RefusedWriteSink); the
    // audit line and the control line are written later, by the supervisor's loop.
    void report_refusal(const seccomp_notif& req, const SyscallRole& role, int err) {
        if (!refused_ || !refusal_ || refusal_->error != err) return;
        RefusedWrite w = std::move(*refusal_);
        refusal_.reset();
        w.operation = operation_name(role);
        w.pid = static_cast<pid_t>(req.pid);
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%d/comm", static_cast<int>(req.pid));
        Fd comm(::open(path, O_RDONLY | O_CLOEXEC));
        char name[32];
        const ssize_t n = comm.fd >= 0 ? ::read(comm.fd, name, sizeof name) : -1;
        if (n > 0) w.program.assign(name, static_cast<std::size_t>(name[n - 1] == '\n' ? n - 1 : n));
        refused_(std::move(w));
    }

    static const char* operation_name(const SyscallRole& role) {
        switch (role.does) {
            case Does::OpenForWriting:
                return "open";
            case Does::MakeDirectory:
                return "mkdir";
            case Does::MakeNode:
                return "mknod";
            case Does::Remove:
                return "remove";
            case Does::Rename:
                return "rename";
            case Does::Link:
                return "link";
            case Does::Symlink:
                return "symlink";
            case Does::Truncate:
                return "truncate";
            case Does::ChangeMode:
                return "chmod";
            case Does::Socket:
                return "bind";
            default:
                return "write";
        }
    }

    static std::string fold(const std::string& text) { return policy::casefold::fold(text); }

    // Whether the directory open as `dirfd` (not O_PATH) compares names without case.
    static bool casefold_dir(int dirfd) {
        constexpr unsigned kCasefold = 0x40000000;  // FS_CASEFOLD_FL
        unsigned flags = 0;
        return ::ioctl(dirfd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & kCasefold);
    }

    // Whether two targets' directories are one (by identity: a path resolved twice may name two).
    static bool same_directory(const Target& a, const Target& b) {
        struct stat x {
        }, y{};
        return ::fstat(a.dir.fd, &x) == 0 && ::fstat(b.dir.fd, &y) == 0 && x.st_dev == y.st_dev &&
               x.st_ino == y.st_ino;
    }

    // Whether two targets' directories lie on one mount (a rename or link between mounts is EXDEV, which the
    // kernel says before anything else: `mv` then copies).
    static bool same_mount(const Target& a, const Target& b) {
        struct statx x {
        }, y{};
        if (::statx(a.dir.fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &x) != 0 ||
            ::statx(b.dir.fd, "", AT_EMPTY_PATH, STATX_MNT_ID, &y) != 0 || !(x.stx_mask & STATX_MNT_ID) ||
            !(y.stx_mask & STATX_MNT_ID))
            return true;  // unknown: the call decides
        return x.stx_mnt_id == y.stx_mnt_id;
    }

    // Where git's configuration sends git when the run starts (see git_config.hpp): `core.hooksPath` (the
    // hooks git runs instead of `.git/hooks`) and the files `include.path` / `includeIf.*.path` read as
    // configuration. Why: both usually point into the working tree, which is writable, and a hook written
    // there (or core.fsmonitor in an included file) runs on the host at the user's next commit or status;
    // they are protected as `.git/hooks` and `.git/config` are. Of the working directory's repository and of
    // every repository in the writable areas (a vendored package, a submodule's working tree, a monorepo's
    // subproject: the user runs git there too), found by a walk of those trees when the run starts, bounded
    // (past the bound the directories left are read-only in the jail, and named on stderr). Each as
    // configured and resolved (the jail shows the host's paths where they are). Fails closed: a config it
    // cannot read (a chmod is metadata, not a write: an earlier run's, or this command's while the search
    // runs) may name any hooks directory or include, so then every writable area is read-only, said on
    // stderr.
    // Whether an allowWrite rule names the host's /dev/shm itself or a directory above it (a glob by its
    // literal part): then the namespace jail shows the host's there.
    static bool allows_host_shm(const policy::Policy& policy) {
        for (const auto& rule : policy.filesystem().allow_write) {
            std::string p = rule.path.lexically_normal().string();
            if (rule.glob) p = p.substr(0, p.find_first_of("*?["));
            while (p.size() > 1 && p.back() == '/')
                p.pop_back();
            const std::string shm = "/dev/shm";
            if (p.empty() || (shm.compare(0, p.size(), p) == 0 &&
                              (p.size() == shm.size() || p == "/" || shm[p.size()] == '/' || rule.glob)))
                return true;
        }
        return false;
    }

    void note_git_config_targets() {
        policy::git_config::SearchLimits limits;
        limits.stop = [this] { return stopping_.load(); };
        auto search = policy::git_config::find_targets_for(*policy_, limits);
        if (!host_ && !allows_host_shm(*policy_)) {
            // The namespace jail's /dev/shm is a tmpfs of its own (a project below the host's is a writable
            // area of its own): nothing written there outlives the run, and POSIX semaphores live there.
            auto& dirs = search.targets.hook_dirs;
            dirs.erase(std::remove(dirs.begin(), dirs.end(), std::string("/dev/shm")), dirs.end());
            search.targets.index();
        }
        git_targets_ = std::move(search.targets);
        protected_links_ = std::move(search.protected_links);
        if (search.unreadable_count > 0 && !search.stopped) {
            std::string line =
                "cordon: warning: git configuration that must be read to protect git's hooks "
                "cannot be read (";
            for (std::size_t i = 0; i < search.unreadable.size() && i < 3; ++i)
                line += (i ? ", " : "") + search.unreadable[i];
            if (search.unreadable_count > 3)
                line += ", and " + std::to_string(search.unreadable_count - 3) + " more";
            line +=
                "): what it names is unknown, so every writable area is read-only in this run; restore "
                "its mode (chmod u+r) and run again\n";
            std::fputs(line.c_str(), stderr);
        }
        if (search.unsearched_count > 0 && !search.stopped) {
            const std::string line =
                "cordon: warning: the writable areas hold more than " + std::to_string(limits.max_entries) +
                " entries or " + std::to_string(limits.max_depth) +
                " levels: " + std::to_string(search.unsearched_count) + " directories (" +
                search.unsearched.front() + (search.unsearched_count > 1 ? ", ..." : "") +
                ") were not searched for git repositories: a repository there may name any hooks "
                "directory, so every writable area is read-only in this run\n";
            std::fputs(line.c_str(), stderr);
        }
        for (const std::string& notice : protected_links_.notices())
            std::fputs(("cordon: note: " + notice + "\n").c_str(), stderr);
        if (!protected_links_.unsearched().empty() && !search.stopped) {
            const std::string line =
                "cordon: warning: the protected directories and what their symlinks lead to could not be "
                "looked through (" +
                protected_links_.unsearched().front() +
                ": a directory of yours that cannot be listed, or past 200000 entries in all): a link or a "
                "hard link there to the writable areas is unknown, so every writable area is read-only in "
                "this run; restore its mode (chmod u+rx) and run again\n";
            std::fputs(line.c_str(), stderr);
        }
        if (search.unlisted_count > 0) {
            const std::string line =
                "cordon: note: " + std::to_string(search.unlisted_count) +
                " directories of the writable areas could not be listed (" + search.unlisted.front() +
                (search.unlisted_count > 1 ? ", ..." : "") +
                "): a git repository there is unknown, so each is read-only in the jail\n";
            std::fputs(line.c_str(), stderr);
        }
    }

    static bool covers(const std::string& dir, const std::string& path) {
        return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 &&
               (path.size() == dir.size() || dir == "/" || path[dir.size()] == '/');
    }

    // The caller's descriptor `n`, reopened with `flags` (a write only through a descriptor open for
    // writing, never a directory or O_PATH one: the reopen writes only where the original could).
    // kWouldWait: the open would wait (a FIFO, a lease to break), and `pending` holds the original for an
    // open on a wait thread (reopen_path names it there).
    // `path`: the magic link as the call names it (for a refusal reported).
    int reopen(pid_t pid, long n, int flags, mode_t mode, Fd& out, std::shared_ptr<Fd>& pending,
               const std::string& path) {
        Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
        if (pidfd.fd < 0) return errno;
        Fd orig(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.fd, static_cast<int>(n), 0)));
        if (orig.fd < 0) return errno == EBADF ? ENOENT : errno;
        int oflags = ::fcntl(orig.fd, F_GETFL);
        struct stat st {};
        if (oflags < 0 || ::fstat(orig.fd, &st) != 0) return EACCES;
        // magic-links: never wider than the descriptor (policy/write_rules.hpp).
        const policy::ReopenDecision d = policy::decide_reopen(flags, oflags, S_ISDIR(st.st_mode));
        if (d.error) return d.writes ? noted(path, d) : d.error;
        const int open_flags = (flags & ~O_NOFOLLOW) | O_CLOEXEC | O_NOCTTY;
        const int err = open_without_waiting(AT_FDCWD, reopen_path(orig.fd), open_flags, mode, out);
        if (err == kWouldWait) pending = std::make_shared<Fd>(std::move(orig));
        return err;
    }

    static std::string reopen_path(int fd) { return "/proc/self/fd/" + std::to_string(fd); }

    // An open that would wait: for the other end of a FIFO, for the holder of a lease to let go (an open for
    // writing breaks a read lease, and waits up to /proc/sys/fs/lease-break-time, 45 s by default), for a
    // device. Returned by open_without_waiting and reopen.
    static constexpr int kWouldWait = -2;

    // Opens as openat(2) would, but never waits. Why: the receive thread serves every notified call of the
    // jail; one open that waits (a FIFO that became one after we looked, a lease the command holds itself)
    // would freeze the jail's file system for as long. So the open is tried with O_NONBLOCK, with which the
    // kernel answers EWOULDBLOCK (a lease) or ENXIO (a FIFO without reader) instead of waiting; a caller who
    // did not ask for O_NONBLOCK gets the descriptor without it, or kWouldWait (then the open is made again
    // as asked, on a wait thread: wait_on_thread).
    static int open_without_waiting(int dirfd, const std::string& name, int open_flags, mode_t mode,
                                    Fd& out) {
        out = Fd(::openat(dirfd, name.c_str(), open_flags | O_NONBLOCK, mode));
        if (open_flags & O_NONBLOCK) return out.fd < 0 ? errno : 0;
        if (out.fd < 0) return errno == EWOULDBLOCK || errno == ENXIO ? kWouldWait : errno;
        struct stat st {};
        if (::fstat(out.fd, &st) != 0) return errno;
        // Open for writing with O_NONBLOCK, a FIFO (or a pipe) opens only where a reader is, as without it
        // (O_RDWR never waits); open for reading it opens with or without a writer, which only waiting tells.
        if (S_ISFIFO(st.st_mode) && (open_flags & O_ACCMODE) == O_RDONLY) {
            out.reset();
            return kWouldWait;
        }
        const int fl = ::fcntl(out.fd, F_GETFL);
        if (fl < 0 || ::fcntl(out.fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
            out.reset();
            return EIO;
        }
        return 0;
    }

    // Runs `attempt` (an open or a truncate that may wait) on a wait thread (see Waits) with the caller's
    // rights, again after each interruption, until it is done or its caller gone. It answers with the
    // descriptor `attempt` leaves in its Fd (when it returns 0 and `sends_fd`), or its errno. -1 when
    // started, EAGAIN when no wait can start.
    int wait_on_thread(const seccomp_notif& req, const Caller& c, std::function<int(Fd&)> attempt,
                       bool sends_fd, int send_flags) {
        const bool started = waits_->start(
            req.id,
            [attempt = std::move(attempt), who = c, id = req.id, privileged = privileged_, sends_fd,
             send_flags](int answer, const std::function<bool()>& cancelled) {
                if (!become(who, privileged)) return reply_on(answer, id, EPERM);
                for (;;) {
                    Fd fd;
                    const int err = attempt(fd);
                    if (err == 0 && sends_fd) return send_fd_on(answer, id, fd.fd, send_flags);
                    if (err != EINTR) return reply_on(answer, id, err);
                    if (cancelled()) return;  // the caller is gone: nobody to answer
                }
            },
            wake_signal());
        return started ? -1 : EAGAIN;
    }

    // The blocking open of `name` in `dir` (kept open by the wait), for wait_on_thread.
    static std::function<int(Fd&)> blocking_open(std::shared_ptr<Fd> dir, std::string name, int open_flags,
                                                 mode_t mode) {
        return [dir = std::move(dir), name = std::move(name), open_flags, mode](Fd& fd) {
            fd = Fd(::openat(dir ? dir->fd : AT_FDCWD, name.c_str(), open_flags, mode));
            return fd.fd < 0 ? errno : 0;
        };
    }

    // Hands `fd` to the caller as the call's result (atomically answering the notification).
    void send_fd(std::uint64_t id, int fd, int flags) const { send_fd_on(listener_.fd, id, fd, flags); }

    static void send_fd_on(int listener, std::uint64_t id, int fd, int flags) {
        Waits::answering();
        seccomp_notif_addfd add{};
        add.id = id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = static_cast<std::uint32_t>(fd);
        add.newfd_flags = static_cast<std::uint32_t>(flags & O_CLOEXEC);
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    }

    // O_CREAT|O_EXCL (tar, git's checkout and lock files) of a path the policy lets the caller create, with
    // no ".." and no name whose decision needs the file system: created in one system call that refuses to
    // cross a symlink (so the file lands at the path decided). nullopt: not such a call, or a symlink on
    // the way (resolve() follows it); otherwise as do_open.
    std::optional<int> create_exclusive(const seccomp_notif& req, const Caller& c, const std::string& abs,
                                        int flags, mode_t mode, Fd& result) {
        const std::vector<std::string> parts = path_components::split(abs);
        if (parts.empty() || parts[0] == "proc" || parts[0] == "dev") return std::nullopt;
        for (const std::string& part : parts)
            if (part == "..") return std::nullopt;
        const std::string& name = parts.back();
        if (policy::looked_up_where_it_lands(name)) return std::nullopt;
        const std::string where = path_components::join(parts, parts.size());
        if (decide(where, true) != 0) {  // refused: the slow path says with which errno (and notes it)
            refusal_.reset();
            return std::nullopt;
        }
        const int rootfd = view_.root(c.pid);
        if (rootfd < 0) return std::nullopt;
        if (!valid(req.id)) return -1;
        if (!become(c)) return EPERM;
        open_how how{};
        how.flags = static_cast<std::uint64_t>((flags & ~O_CLOEXEC) | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW);
        how.mode = mode;
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
        result = Fd(static_cast<int>(::syscall(SYS_openat2, rootfd, where.c_str(), &how, sizeof how)));
        if (result.fd >= 0) return 0;
        // ELOOP: a symlink on the way; EINVAL: a flag openat2 refuses and openat ignores.
        if (errno == ELOOP || errno == EINVAL) return std::nullopt;
        return errno;
    }

    int do_open(const seccomp_notif& req, const Caller& c, int dirfd, const std::string& path, int flags,
                mode_t mode, Fd& result) {
        std::string abs;
        if (int err = view_.absolute(c, dirfd, path, abs)) return err;
        if ((flags & O_PATH)) flags &= O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
        const bool tmpfile = (flags & O_TMPFILE) == O_TMPFILE;
        // "name/" never names a file to create (the kernel's answer).
        if ((flags & O_CREAT) && !tmpfile && abs.back() == '/') return EISDIR;
        if ((flags & O_CREAT) && (flags & O_EXCL) && !tmpfile) {
            if (const std::optional<int> err = create_exclusive(req, c, abs, flags, mode, result))
                return *err;
        }
        const bool follow = tmpfile || (!(flags & O_NOFOLLOW) && !((flags & O_CREAT) && (flags & O_EXCL)));
        Target t;
        if (int err = view_.resolve(c, abs, follow, t)) {
            // Another process's /proc/PID: a refusal of the supervisor's own, reported when the call writes.
            const bool writes = !(flags & O_PATH) &&
                                ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) || tmpfile);
            return t.other_process && writes ? noted(abs, policy::decide_other_process(err)) : err;
        }
        if (tmpfile && t.magic < 0 && t.name != ".") {
            // O_TMPFILE names the directory the unnamed file goes to.
            Fd d(::openat(t.dir.fd, t.name.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
            if (d.fd < 0) return errno;
            t.dir_path = t.path();
            t.dir = std::move(d);
            t.name = ".";
        }
        if (!valid(req.id)) return -1;
        const bool writes =
            !(flags & O_PATH) && ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC) || tmpfile);
        if (t.magic >= 0) {
            if (!become(c)) return EPERM;
            std::shared_ptr<Fd> pending;
            const int err = reopen(c.pid, t.magic, flags, mode, result, pending, abs);
            if (err != kWouldWait) return err;
            const std::string name = reopen_path(pending->fd);
            return wait_on_thread(
                req, c,
                blocking_open(std::move(pending), name, (flags & ~O_NOFOLLOW) | O_CLOEXEC | O_NOCTTY, mode),
                true, flags);
        }
        // An open for reading comes here too (every openat2 is notified): performed by the supervisor, it
        // would not meet the command's Landlock read rules.
        if (host_ && host_rules::hidden(*host_, t.path())) {
            // A write there is one the write rules refuse too (read-rules-hide, or the CA's own rule): noted
            // so, for the summary.
            if (writes || (flags & O_CREAT)) (void)decide(t.path(), (flags & O_CREAT) != 0);
            return EACCES;
        }
        struct stat st {};
        bool exists = false;
        if (host_ && t.dir_path == "/dev/pts" && ::fstatat(t.dir.fd, t.name.c_str(), &st, 0) == 0 &&
            S_ISCHR(st.st_mode))
            if (int err = host_rules::terminal(c.pid, st.st_rdev)) return err;
        // O_CREAT|O_EXCL (tar, git's checkout and lock files) fails on an existing name, whatever it is (no
        // FIFO is opened): a creation allowed (the stricter decision) needs no look at the file system.
        const bool exclusive = !tmpfile && (flags & O_CREAT) && (flags & O_EXCL) && t.name != ".";
        if (!exclusive || decide_at(t, true) != 0) {
            exists = ::fstatat(t.dir.fd, t.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
            if (!exists && !(flags & O_CREAT)) return errno;
            if (writes || (flags & O_CREAT)) {
                if (tmpfile) {
                    if (int err = decide(t.dir_path == "/" ? "/x" : t.dir_path + "/x", true)) return err;
                } else if (int err = decide_at(t, !exists)) {
                    return err;
                }
            }
        }
        if (!become(c)) return EPERM;
        const int open_flags = (flags & ~O_CLOEXEC) | O_CLOEXEC | O_NOCTTY | (tmpfile ? 0 : O_NOFOLLOW);
        // Opening a FIFO waits for the other side: on a thread of its own (see Waits), as any open that would
        // wait.
        const int err = exists && S_ISFIFO(st.st_mode) && !(flags & O_NONBLOCK)
                            ? kWouldWait
                            : open_without_waiting(t.dir.fd, t.name, open_flags, mode, result);
        if (err == kWouldWait) {
            // The wait opens the very file decided, through a descriptor of it, never its name again and
            // never with O_CREAT. Why: a name looked up later may be gone, and O_CREAT would then make a file
            // the rules never decided, in a directory moved elsewhere meanwhile (a FIFO named HEAD in a new
            // .git, removed and the .git moved to src/: a HEAD made next to objects/ and refs/ there, a
            // repository git reads in src/).
            auto pinned =
                std::make_shared<Fd>(::openat(t.dir.fd, t.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
            struct stat now {};
            if (pinned->fd < 0 || ::fstat(pinned->fd, &now) != 0) return errno;
            if (exists && (now.st_dev != st.st_dev || now.st_ino != st.st_ino)) return EAGAIN;  // replaced
            const std::string self = reopen_path(pinned->fd);
            return wait_on_thread(
                req, c,
                blocking_open(std::move(pinned), self, open_flags & ~(O_CREAT | O_EXCL | O_NOFOLLOW), mode),
                true, flags);
        }
        if (err) return err;
        if ((flags & O_CREAT) && !exists) note_if_git(t);
        return 0;
    }

    // The caller's status, read once per thread: the jail's credentials never change (no capability, no
    // setuid binary under no_new_privs) and its umask only through umask(2), which is notified too (see
    // note_umask). A thread's pidfd tells when the id is gone (and may be reused by another process).
    const Caller* caller(pid_t tid) {
        // Once a second at most: the entries of threads that are gone are dropped, so that their pidfds do
        // not stay after a burst of short-lived callers.
        timespec now{};
        ::clock_gettime(CLOCK_MONOTONIC_COARSE, &now);
        if (now.tv_sec != last_sweep_ && !callers_.empty()) {
            last_sweep_ = now.tv_sec;
            sweep_callers();
        }
        auto it = callers_.find(tid);
        if (it != callers_.end()) {
            pollfd p{it->second.pidfd.fd, POLLIN, 0};
            if (::poll(&p, 1, 0) == 0) return &it->second.caller;
            callers_.erase(it);
        }
        // Bounded: each entry holds a pidfd. Past kCallersSwept the entries of threads that are gone are
        // dropped (one poll over all); past kCallersMax all (they are read again when they call).
        if (callers_.size() >= kCallersSwept) {
            sweep_callers();
            if (callers_.size() >= kCallersMax) callers_.clear();
        }
        // The pidfd first: the status read next is then that thread's (or the read fails).
        constexpr unsigned kPidfdThread = O_EXCL;  // PIDFD_THREAD (Linux 6.9)
        Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread)));
        Cached entry;
        if (!read_caller(tid, entry.caller)) return nullptr;
        if (pidfd.fd < 0) {
            uncached_ = entry.caller;
            return &uncached_;
        }
        entry.pidfd = std::move(pidfd);
        return &callers_.emplace(tid, std::move(entry)).first->second.caller;
    }

    void sweep_callers() {
        std::vector<pollfd> fds;
        fds.reserve(callers_.size());
        for (const auto& [id, entry] : callers_)
            fds.push_back(pollfd{entry.pidfd.fd, POLLIN, 0});
        if (::poll(fds.data(), fds.size(), 0) <= 0) return;
        std::size_t i = 0;
        for (auto it = callers_.begin(); it != callers_.end(); ++i)
            it = fds[i].revents ? callers_.erase(it) : std::next(it);
    }

    // umask(2): the new mask is noted for every known thread of the process (they share it), and the kernel
    // performs the call (nothing in it depends on memory).
    void note_umask(const seccomp_notif& req) {
        if (const Caller* c = caller(static_cast<pid_t>(req.pid))) {
            const long tgid = c->tgid;
            for (auto& [tid, entry] : callers_)
                if (entry.caller.tgid == tgid)
                    entry.caller.umask = static_cast<mode_t>(req.data.args[0] & 0777);
        }
        seccomp_notif_resp resp{};
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ::ioctl(listener_.fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }

    // The permission bits of a mode the supervisor applies for the caller, without S_ISUID and S_ISGID. Why:
    // a creation performed with the mode as given (`open(..., O_CREAT, 06755)`) would leave a set-id program
    // in the user's tree, which the chmod family refuses in the filter (jail/seccomp.cpp).
    static mode_t without_set_id(mode_t mode) { return mode & 01777; }

    // One handler for every notified call, driven by the table (kSyscalls).
    void handle(const seccomp_notif& req) {
        const SyscallRole* role = role_of(static_cast<long>(req.data.nr));
        if (!role) return reply(req.id, ENOSYS);
        if (role->does == Does::Umask) return note_umask(req);
        const Caller* known = caller(static_cast<pid_t>(req.pid));
        if (!known) return reply(req.id, EPERM);
        const Caller& c = *known;
        const Args args(*role, req);
        refusal_.reset();
        std::string p1, p2;
        int err = 0;
        switch (role->does) {
            case Does::OpenForWriting: {
                if ((err = read_string(c.pid, args.path, p1))) break;
                Fd fd;
                err = do_open(req, c, args.dirfd, p1, args.flags, without_set_id(args.mode), fd);
                if (err < 0) return;  // answered elsewhere, or the caller is gone
                if (err == 0) return send_fd(req.id, fd.fd, args.flags);
                break;
            }
            case Does::Socket:
                err = socket_call(req, c);
                if (err < 0) return;
                break;
            case Does::ChangeMode:
                err = change_mode(req, c, args, p1);
                if (err < 0) return;
                break;
            case Does::Unsupported:
                err = ENOSYS;
                break;
            default:
                err = handle_path_call(req, c, args, p1, p2);
                if (err < 0) return;
                break;
        }
        if (err > 0) report_refusal(req, *role, err);
        reply(req.id, err);
    }

    // chmod, fchmod, fchmodat, fchmodat2 as the filter sends them (jail/seccomp.cpp): S_ISGID with group
    // execute and S_ISUID unset, from every command; without namespaces, root's command's every mode without
    // S_ISUID. S_ISGID with group execute is performed on a directory only (`chmod g+s`: new files take its
    // group) and refused on anything else (a set-group-ID program, EPERM as the filter refuses S_ISUID).
    // Without namespaces no read-only mount refuses a chmod, and root's command owns the host's system files
    // (`chmod 666 /etc/shadow`): the write rules decide the file itself, where it lies now, so a mode changes
    // only where the command may write (git's lock files in the project; EROFS elsewhere, EACCES for a
    // protected name). The file is opened once in the jail's view (its mounts: a read-only one stays
    // read-only) and what was looked at is what is decided and changed, through that descriptor: a name
    // swapped after the look changes nothing. The kernel's own checks (owner, group membership for S_ISGID)
    // apply with the caller's file system ids. 0 or an errno; -1: the caller is gone.
    int change_mode(const seccomp_notif& req, const Caller& c, const Args& args, std::string& p1) {
        const pid_t tgid = c.tgid > 0 ? static_cast<pid_t>(c.tgid) : c.pid;
        const bool set_group_id = (args.mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP);
        if ((args.mode & S_ISUID) || (!set_group_id && !host_)) return EPERM;  // the filter sends neither
        Fd file;
        if (args.role->path < 0) {  // fchmod
            file.fd = unix_sockets::take_socket(c.pid, tgid, args.dirfd);
            int fl = file.fd >= 0 ? ::fcntl(file.fd, F_GETFL) : -1;
            // Where pidfd_getfd is refused to the supervisor too (Docker's profile): what the caller's
            // descriptor names, reopened as O_PATH through /proc (the same file; its flags from fdinfo).
            if (file.fd < 0 && host_ && (errno == EPERM || errno == ENOSYS)) {
                file.fd = host_rules::reopen_descriptor(c.pid, args.dirfd);
                fl = host_rules::descriptor_flags(c.pid, args.dirfd);
            }
            if (file.fd < 0) return errno == ESRCH ? -1 : EBADF;
            if (fl < 0 || (fl & O_PATH)) return EBADF;  // fchmod of an O_PATH descriptor, as the kernel
        } else {
            if (int e = read_string(c.pid, args.path, p1)) return e;
            if (args.flags & ~AT_SYMLINK_NOFOLLOW) return EINVAL;  // AT_EMPTY_PATH among others: not emulated
            std::string abs;
            if (int e = view_.absolute(c, args.dirfd, p1, abs)) return e;
            Target t;
            if (int e = view_.resolve(c, abs, (args.flags & AT_SYMLINK_NOFOLLOW) == 0, t)) return e;
            if (t.magic >= 0) {
                file.fd = unix_sockets::take_socket(c.pid, tgid, static_cast<int>(t.magic));
                if (file.fd < 0 && host_ && (errno == EPERM || errno == ENOSYS))
                    file.fd = host_rules::reopen_descriptor(c.pid, static_cast<int>(t.magic));
            } else {
                file.fd = ::openat(t.dir.fd, t.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
            }
            if (file.fd < 0) return errno == EBADF ? ENOENT : errno;
        }
        struct statx stx {};
        if (::statx(file.fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_BTIME | STATX_INO, &stx) != 0)
            return errno;
        if (set_group_id && !S_ISDIR(stx.stx_mode)) return EPERM;
        // The host's device nodes (/dev/null, root's other terminals in /dev/pts) are root's command's to
        // write, not to chmod: their modes are every host program's (`chmod 600 /dev/null`, `chmod 666` on a
        // terminal whose input another user would then read). The namespace jail's /dev is its own.
        if (host_ && (S_ISCHR(stx.stx_mode) || S_ISBLK(stx.stx_mode))) return EPERM;
        if (host_) {
            char link[64];
            std::snprintf(link, sizeof link, "/proc/self/fd/%d", file.fd);
            std::error_code ec;
            const std::string where = std::filesystem::read_symlink(link, ec).string();
            if (ec || where.empty() || where.front() != '/') return EACCES;
            if (int e = decide(where, false)) return e;
            // Another program's POSIX shared memory in the host's /dev/shm (decide_at's rule, on the file
            // open).
            if (int e = noted(where, policy::decide_shared_memory_entry(policy::JailKind::Landlock, where,
                                                                        existed_at_start(stx))))
                return e;
        }
        if (!valid(req.id)) return -1;
        if (!become(c)) return EPERM;
        char self[64];
        std::snprintf(self, sizeof self, "/proc/self/fd/%d", file.fd);
        return ::chmod(self, args.mode & 07777 & ~mode_t(S_ISUID)) == 0 ? 0 : errno;
    }

    // mkdir*, mknod*, unlink*, rmdir, rename*, link*, symlink*, truncate. 0 or an errno; -1: not to be
    // answered (the caller is gone).
    int handle_path_call(const seccomp_notif& req, const Caller& c, const Args& args, std::string& p1,
                         std::string& p2) {
        int err = 0;
        auto target = [&](int dirfd, std::uint64_t path, bool follow, Target& t, std::string& text) {
            if (int e = read_string(c.pid, path, text)) return e;
            std::string abs;
            if (int e = view_.absolute(c, dirfd, text, abs)) return e;
            // A magic link or another process's /proc/PID is never made, removed, renamed nor linked over.
            if (int e = view_.resolve(c, abs, follow, t))
                return t.other_process ? noted(abs, policy::decide_other_process(e)) : e;
            return t.magic >= 0 ? noted(abs, policy::decide_magic_link_entry()) : 0;
        };
        Target t1, t2;
        switch (args.role->does) {
            case Does::MakeDirectory: {
                if ((err = target(args.dirfd, args.path, false, t1, p1))) return err;
                if (!valid(req.id)) return -1;
                if (t1.name == ".") return EEXIST;
                if ((err = decide_at(t1, true))) return err;
                if (!become(c)) return EPERM;
                const mode_t mode = without_set_id(args.mode);
                timespec now{};
                ::clock_gettime(CLOCK_REALTIME_COARSE, &now);
                if (::mkdirat(t1.dir.fd, t1.name.c_str(), mode) != 0) return errno;
                // Born at `now` or later (the coarse clock): possibly before run_start_.fine.
                if (!before(run_start_.fine, now)) note_made_early(t1);
                note_if_git(t1);
                return 0;
            }
            case Does::MakeNode: {
                if ((err = target(args.dirfd, args.path, false, t1, p1))) return err;
                if (!valid(req.id)) return -1;
                if (t1.name == ".") return EEXIST;
                if ((err = decide_at(t1, true))) return err;
                if (!become(c)) return EPERM;
                const dev_t dev = static_cast<dev_t>(args.extra);
                const mode_t mode = args.mode & ~mode_t(S_ISUID | S_ISGID);
                if (::mknodat(t1.dir.fd, t1.name.c_str(), mode, dev) != 0) return errno;
                note_if_git(t1);
                return 0;
            }
            case Does::Remove: {
                const int flags = args.flags & AT_REMOVEDIR;
                if ((err = target(args.dirfd, args.path, false, t1, p1))) return err;
                if (!valid(req.id)) return -1;
                if (t1.name == ".") return flags ? EINVAL : EISDIR;
                if (mount_points_.count(t1.path())) return EBUSY;
                if ((err = decide_at(t1, false))) return err;
                Facts facts(*this, &t1);
                if ((err = noted_move(policy::decide_removal(*policy_, t1.dir_path, t1.name, facts))))
                    return err;
                if (!become(c)) return EPERM;
                return ::unlinkat(t1.dir.fd, t1.name.c_str(), flags) == 0 ? 0 : errno;
            }
            case Does::Rename: {
                const auto flags = static_cast<unsigned>(args.flags);
                if ((err = target(args.dirfd, args.path, false, t1, p1))) return err;
                if ((err = target(args.dirfd2, args.path2, false, t2, p2))) return err;
                if (!valid(req.id)) return -1;
                if (t1.name == "." || t2.name == ".") return EBUSY;
                // Between mounts the kernel says EXDEV before anything else (`mv` then copies): it says so
                // itself for a call performed, so the mounts are compared only for a call refused here.
                auto refused = [&](int e) { return same_mount(t1, t2) ? e : EXDEV; };
                if (mount_points_.count(t1.path()) || mount_points_.count(t2.path())) return refused(EBUSY);
                if ((err = decide_at(t1, false)) || (err = decide_at(t2, true))) return refused(err);
                if (t1.dir_path == t2.dir_path && !same_directory(t1, t2)) return EBUSY;  // swapped meanwhile
                Facts facts(*this, &t1, &t2);
                if ((err = noted_move(policy::decide_rename(*policy_, t1.dir_path, t1.name, t2.dir_path,
                                                            t2.name, flags & RENAME_EXCHANGE, facts))))
                    return refused(err);
                if (!become(c)) return EPERM;
                if (::syscall(SYS_renameat2, t1.dir.fd, t1.name.c_str(), t2.dir.fd, t2.name.c_str(), flags) !=
                    0)
                    return errno;
                note_if_git(t2);
                return 0;
            }
            case Does::Link: {
                const int flags = args.flags;
                if ((err = read_string(c.pid, args.path, p1))) return err;
                if (p1.empty() && (flags & AT_EMPTY_PATH)) return ENOENT;  // needs CAP_DAC_READ_SEARCH
                std::string abs;
                if ((err = view_.absolute(c, args.dirfd, p1, abs))) return err;
                if ((err = view_.resolve(c, abs, flags & AT_SYMLINK_FOLLOW, t1)))
                    return t1.other_process ? noted(abs, policy::decide_other_process(err)) : err;
                if ((err = target(args.dirfd2, args.path2, false, t2, p2))) return err;
                if (!valid(req.id)) return -1;
                if (t2.name == ".") return EEXIST;
                if ((err = decide_at(t2, true))) return err;
                if (t1.magic >= 0) {
                    // An O_TMPFILE file given a name (linkat of /proc/self/fd/N): a file that has a name
                    // already is decided where it lies (a link would give a protected file a writable name).
                    Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, c.pid, 0)));
                    if (pidfd.fd < 0) return errno;
                    Fd orig(static_cast<int>(
                        ::syscall(SYS_pidfd_getfd, pidfd.fd, static_cast<int>(t1.magic), 0)));
                    if (orig.fd < 0) return errno == EBADF ? ENOENT : errno;
                    struct stat st {};
                    if (::fstat(orig.fd, &st) != 0) return errno;
                    char self[64];
                    std::snprintf(self, sizeof self, "/proc/self/fd/%d", orig.fd);
                    if (st.st_nlink > 0) {
                        int e = 0;
                        std::string where = readlink_str(self, e);
                        if (e || where.empty() || where[0] != '/') return EACCES;
                        if ((err = decide(where, false))) return err;
                    }
                    if (!become(c)) return EPERM;
                    if (::linkat(AT_FDCWD, self, t2.dir.fd, t2.name.c_str(), AT_SYMLINK_FOLLOW) != 0)
                        return errno;
                    note_if_git(t2);
                    return 0;
                }
                if (t1.name == ".") return EPERM;
                if (t1.dir_path == t2.dir_path && !same_directory(t1, t2)) return EBUSY;  // swapped meanwhile
                Facts facts(*this, &t1, &t2);
                if ((err = noted_move(policy::decide_link(*policy_, t1.dir_path, t1.name, t2.path(), facts))))
                    return err;
                // The source gets a second name: it must be writable where it is (between mounts EXDEV, as
                // the kernel says first and says itself for a call performed).
                if ((err = decide_at(t1, false))) return same_mount(t1, t2) ? err : EXDEV;
                if (!become(c)) return EPERM;
                if (::linkat(t1.dir.fd, t1.name.c_str(), t2.dir.fd, t2.name.c_str(), 0) != 0) return errno;
                note_if_git(t2);
                return 0;
            }
            case Does::Symlink: {
                if ((err = read_string(c.pid, args.extra, p1))) return err;
                if ((err = target(args.dirfd2, args.path2, false, t2, p2))) return err;
                if (!valid(req.id)) return -1;
                if (t2.name == ".") return EEXIST;
                Facts facts(*this, &t2);
                if ((err = decide_at(t2, true)) ||
                    (err = noted_move(policy::decide_symlink(*policy_, t2.path(), facts))))
                    return err;
                if (!become(c)) return EPERM;
                if (::symlinkat(p1.c_str(), t2.dir.fd, t2.name.c_str()) != 0) return errno;
                note_if_git(t2);
                return 0;
            }
            case Does::Truncate: {
                if ((err = read_string(c.pid, args.path, p1))) return err;
                std::string abs;
                if ((err = view_.absolute(c, args.dirfd, p1, abs))) return err;
                if ((err = view_.resolve(c, abs, true, t1)))
                    return t1.other_process ? noted(abs, policy::decide_other_process(err)) : err;
                if (!valid(req.id)) return -1;
                const auto length = static_cast<off_t>(args.extra);
                if (t1.magic >= 0) {
                    Fd fd;
                    if (!become(c)) return EPERM;
                    std::shared_ptr<Fd> pending;
                    err = reopen(c.pid, t1.magic, O_WRONLY, 0, fd, pending, abs);
                    if (err == kWouldWait) {
                        auto open = blocking_open(pending, reopen_path(pending->fd), O_WRONLY | O_CLOEXEC, 0);
                        return wait_on_thread(
                            req, c,
                            [open, length](Fd& f) {
                                const int e = open(f);
                                return e ? e : ::ftruncate(f.fd, length) == 0 ? 0 : errno;
                            },
                            false, 0);
                    }
                    if (err) return err;
                    return ::ftruncate(fd.fd, length) == 0 ? 0 : errno;
                }
                struct stat st {};
                if (::fstatat(t1.dir.fd, t1.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return errno;
                if ((err = decide_at(t1, false))) return err;
                if (!become(c)) return EPERM;
                Fd fd(::openat(t1.dir.fd, t1.name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
                if (fd.fd < 0) return errno;
                const std::string self = reopen_path(fd.fd);
                // truncate(2) breaks a lease as an open for writing does (and waits): a regular file is
                // opened for writing without waiting first, and truncated on a wait thread when that would
                // wait.
                if (S_ISREG(st.st_mode)) {
                    Fd w;
                    err = open_without_waiting(AT_FDCWD, self, O_WRONLY | O_CLOEXEC | O_NOCTTY, 0, w);
                    if (err == 0) return ::ftruncate(w.fd, length) == 0 ? 0 : errno;
                    if (err != kWouldWait) return err;
                    auto kept = std::make_shared<Fd>(std::move(fd));
                    return wait_on_thread(
                        req, c,
                        [kept, length](Fd&) {
                            return ::truncate(reopen_path(kept->fd).c_str(), length) == 0 ? 0 : errno;
                        },
                        false, 0);
                }
                return ::truncate(self.c_str(), length) == 0 ? 0 : errno;
            }
            default:
                return ENOSYS;
        }
    }

    static void reply_on(int listener, std::uint64_t id, int err) {
        Waits::answering();
        seccomp_notif_resp resp{};
        resp.id = id;
        resp.error = err ? -err : 0;
        ::ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }

    // connect and bind (allowUnixSockets, see unix_sockets.hpp), performed with the address copied once. 0 or
    // an errno; -1: not to be answered here.
    int socket_call(const seccomp_notif& req, const Caller& c) {
        const auto& a = req.data.args;
        if (req.data.nr == SYS_listen) {
            // Without a network namespace a listener on any address but loopback is reachable from the
            // network; performed on the caller's socket only when it is bound to loopback.
            Fd sock(host_rules::take_socket(c.pid, c.tgid > 0 ? static_cast<pid_t>(c.tgid) : c.pid,
                                            static_cast<int>(static_cast<std::uint32_t>(a[0]))));
            if (sock.fd < 0) return errno == EBADF || errno == ENOTSOCK ? errno : EPERM;
            if (!host_) return EPERM;
            if (int err = host_rules::listen(sock.fd)) return err;
            if (!valid(req.id)) return -1;
            return ::listen(sock.fd, static_cast<int>(static_cast<std::uint32_t>(a[1]))) == 0 ? 0 : errno;
        }
        sockaddr_storage addr{};
        socklen_t len = 0;
        if (int err = unix_sockets::read_address(c.pid, a[1], a[2], addr, len)) return err;
        const int caller_fd = static_cast<int>(static_cast<std::uint32_t>(a[0]));
        const pid_t caller_tgid = c.tgid > 0 ? static_cast<pid_t>(c.tgid) : c.pid;
        Fd sock(host_ ? host_rules::take_socket(c.pid, caller_tgid, caller_fd)
                      : unix_sockets::take_socket(c.pid, caller_tgid, caller_fd));
        if (sock.fd < 0 && host_ && (errno == EPERM || errno == ENOSYS) && req.data.nr == SYS_connect &&
            (addr.ss_family == AF_INET || addr.ss_family == AF_INET6)) {
            // pidfd_getfd refused to us too (a container's filter): the caller's socket is replaced instead.
            if (int err = host_rules::connect(*host_, addr, len)) return err;
            if (!valid(req.id)) return -1;
            return host_rules::connect_by_replacement(
                listener_.fd, req.id, c.pid, static_cast<int>(static_cast<std::uint32_t>(a[0])), addr, len);
        }
        if (sock.fd < 0) return errno == ESRCH ? EPERM : errno;
        if (!valid(req.id)) return -1;
        const bool connecting = req.data.nr == SYS_connect;
        if (addr.ss_family == AF_UNIX && len > sizeof(sockaddr_un)) return EINVAL;  // as the kernel
        const auto path = unix_sockets::filesystem_path(addr, len);
        // A blocking connect waits (a full backlog, a TCP handshake): on a thread of its own, not to hold up
        // every other call. A non-blocking one is made here, but under a deadline (connect_without_waiting):
        // the socket's open file is shared with the caller, whose other thread can clear O_NONBLOCK between
        // our look and the connect.
        const int flags = ::fcntl(sock.fd, F_GETFL);
        const bool blocking = flags < 0 || (flags & O_NONBLOCK) == 0;
        auto s = std::make_shared<Fd>(std::move(sock));
        std::function<int()> attempt;
        if (!path) {
            // Another family, an abstract or unnamed address: confined by the socket's network namespace,
            // performed with the caller's rights.
            if (int err = unix_sockets::needs_privilege(addr, len, connecting)) return err;
            // Without a network namespace the address is the host's: only the proxy's listeners.
            if (host_)
                if (int err =
                        connecting ? host_rules::connect(*host_, addr, len) : host_rules::bind(addr, len))
                    return err;
            if (!connecting) {
                if (!become(c)) return EPERM;
                return ::bind(s->fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ? 0 : errno;
            }
            attempt = [s, addr, len] {
                return ::connect(s->fd, reinterpret_cast<const sockaddr*>(&addr), len) == 0 ? 0 : errno;
            };
        } else if (connecting && host_ && host_->all_unix_sockets) {
            // allowAllUnixSockets without a listed path: performed as the caller asked, as the caller, to the
            // file its path names (relative to its working directory), opened once and connected through
            // /proc/self/fd (exactly the file checked), unless that is a session's control socket: the
            // session would take the supervisor, a process of the host with the session's uid, for a client.
            std::string abs;
            if (int err = view_.absolute(c, AT_FDCWD, *path, abs)) return err;
            const int rootfd = view_.root(c.pid);
            if (rootfd < 0) return EACCES;
            auto to = std::make_shared<Fd>();
            if (int err = as_caller(c, privileged_, [&] {
                    to->fd = unix_sockets::open_path(rootfd, abs);
                    return to->fd < 0 ? errno : 0;
                }))
                return err;
            if (int err = host_rules::session_socket(to->fd, connecting_uid(c))) return err;
            attempt = [s, to, who = c, privileged = privileged_] {
                return as_caller(who, privileged, [&] { return unix_sockets::connect_to(s->fd, to->fd); });
            };
        } else if (connecting) {
            std::string abs;
            if (int err = view_.absolute(c, AT_FDCWD, *path, abs)) return err;
            auto to = std::make_shared<Fd>();
            if (int err = unix_sockets::open_listed(view_.root(c.pid), abs, pinned_sockets_, listed_sockets_,
                                                    to->fd))
                return err;
            // Refused in either jail: the process performing the connect (this supervisor or a connector)
            // is one of the host's pid namespace, which a session takes for a client.
            if (int err = host_rules::session_socket(to->fd, connecting_uid(c))) return err;
            // The listed service may not hand the jail descriptors (a Unix datagram socket would send to any
            // socket file, see refuse_descriptors). Set before the connect, so that no message comes first.
            // A kernel without SO_PASSRIGHTS (Linux < 6.16, ENOPROTOOPT) cannot keep them out: the connect
            // goes on, since the user listed that service and trusts it, and the run said so at its start
            // (the alternative, every listed socket refused, would end allowUnixSockets on most LTS kernels).
            if (const int err = unix_sockets::refuse_descriptors(s->fd); err != 0 && err != ENOPROTOOPT)
                return EPERM;
            if (privileged_ && (c.fsuid != ::geteuid() || c.fsgid != ::getegid())) {
                // Another identity than ours: the connect is made by a process of the caller's ids (see
                // unix_sockets::Connector), so the listener's peer process is not a root one.
                auto connector = connector_for(c);
                if (!connector) return EAGAIN;
                using std::chrono::milliseconds;
                if (!blocking) {
                    // On the receive thread: bounded by the deadline and the wait for the request before it
                    // (a waiting connect holds the connector a millisecond at a time and steps aside while
                    // this one waits; the wait allows for a loaded machine's scheduling, where 5 ms answered
                    // EAGAIN to a free listener).
                    const int err = connector->connect(s->fd, to->fd, milliseconds(5), milliseconds(200),
                                                       unix_sockets::Connector::Turn::Waits);
                    return err == EINTR ? EAGAIN : err;
                }
                attempt = [s, to, connector] {
                    // A millisecond at a time, then a pause: connects that wait for a full backlog share the
                    // connector (ten of them keep it a fifth busy) instead of holding it from the others.
                    const int err = connector->connect(s->fd, to->fd, milliseconds(1), milliseconds(50),
                                                       unix_sockets::Connector::Turn::Yields);
                    if (err == EINTR) {
                        timespec pause{0, 50'000'000};  // the wake signal ends it early
                        ::nanosleep(&pause, nullptr);
                    }
                    return err;
                };
            } else {
                attempt = [s, to, who = c, privileged = privileged_] {
                    return as_caller(who, privileged,
                                     [&] { return unix_sockets::connect_to(s->fd, to->fd); });
                };
            }
        }
        if (connecting) {
            if (!blocking) {
                if (!become(c)) return EPERM;
                const int err = connect_without_waiting(attempt);
                // Past the deadline a Unix socket's connect is abandoned: answered as the non-blocking
                // connect the caller made (its flag changed while the call was made; the kernel would have
                // taken either), EAGAIN for a full backlog. Another family's goes on in the kernel, on a wait
                // thread.
                if (err == EINTR && addr.ss_family == AF_UNIX) return EAGAIN;
                if (err != EINTR || !valid(req.id)) return err;
            }
            const bool started = waits_->start(
                req.id,
                [s, attempt, who = c, id = req.id, privileged = privileged_](
                    int answer, const std::function<bool()>& cancelled) {
                    if (!become(who, privileged)) return reply_on(answer, id, EPERM);
                    const int err = connect_waiting(s->fd, attempt, cancelled);
                    if (err >= 0) reply_on(answer, id, err);
                },
                wake_signal());
            return started ? -1 : EAGAIN;
        }
        Fd& sock_fd = *s;
        std::string abs;
        if (int err = view_.absolute(c, AT_FDCWD, *path, abs)) return err;
        // bind creates the name: the write rules, as mknod.
        Target t;
        if (int err = view_.resolve(c, abs, false, t)) return err;
        if (t.magic >= 0) return EACCES;
        if (t.name == ".") return EADDRINUSE;
        if (int err = decide_at(t, true)) return err;
        if (!become(c)) return EPERM;
        return unix_sockets::bind_at(sock_fd.fd, t.dir.fd, t.name);
    }

    // The connector of the caller's identity (receive thread only): made on first use, made again when it
    // died; null when kMaxConnectors others exist (a jail's command cannot change its ids: one is the rule).
    std::shared_ptr<unix_sockets::Connector> connector_for(const Caller& c) {
        const unix_sockets::Connector::Identity who{c.fsuid, c.fsgid, c.groups};
        auto it = std::find_if(connectors_.begin(), connectors_.end(),
                               [&](const auto& k) { return k->identity() == who; });
        if (it != connectors_.end()) {
            if ((*it)->alive()) return *it;
            connectors_.erase(it);
        }
        if (connectors_.size() >= kMaxConnectors) return nullptr;
        auto made = unix_sockets::Connector::spawn(who);
        if (made) connectors_.push_back(made);
        return made;
    }

    RefusedWriteSink refused_;
    std::optional<RefusedWrite> refusal_;  // the call being handled: its latest refused decision (noted)
    Fd listener_;
    std::shared_ptr<const HostView> host_;  // the namespace-free jail's (host_view.hpp); null: namespaces
    std::atomic<bool> stopping_{false}, stopped_{false};
    std::condition_variable stopped_cv_;
    JailView view_;
    policy::PolicyPtr policy_;
    RunStart run_start_;
    // Directories the run made while their birth time could still fall before run_start_.fine (see
    // existed_before): the first tick of the run only.
    std::set<std::pair<std::uint64_t, std::uint64_t>> made_early_;
    bool privileged_ = false;
    struct Cached {
        Caller caller;
        Fd pidfd;
    };
    std::unordered_map<pid_t, Cached> callers_;
    static constexpr std::size_t kCallersSwept = 64, kCallersMax = 1024;
    time_t last_sweep_ = 0;
    Caller uncached_;
    std::unordered_set<std::string> mount_points_;
    std::unordered_set<std::string> writable_roots_;  // allowWrite entries, the working directory, /tmp
    policy::ProtectedLinks protected_links_;          // symlinks at protected names when the run started
    policy::git_config::Targets git_targets_;  // core.hooksPath and included files, as written and resolved
    std::vector<std::string> cordon_files_;    // the audit log, the binary (Notifier::start)
    std::vector<std::pair<dev_t, ino_t>> cordon_file_ids_;
    std::vector<std::string> listed_sockets_;           // allowUnixSockets, `~` expanded
    std::vector<unix_sockets::Pinned> pinned_sockets_;  // what they named when the run started
    std::vector<std::shared_ptr<unix_sockets::Connector>> connectors_;
    static constexpr std::size_t kMaxConnectors = 8;
    std::shared_ptr<Waits> waits_;
    mutable std::mutex mutex_;
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::string> new_repos_;  // by identity
    std::set<std::pair<std::uint64_t, std::uint64_t>> seen_beyond_bound_;
    std::size_t more_repos_ = 0;
    static constexpr std::size_t kMaxCountedRepositories = 65536;
    static constexpr std::size_t kMaxMadeEarly = 4096;
    std::thread thread_;
};

thread_local NotifierImpl::ThreadState NotifierImpl::state_;

}  // namespace

std::unique_ptr<Notifier> Notifier::start(int fd, policy::PolicyPtr policy, RunStart run_start,
                                          std::vector<std::string> mount_points,
                                          std::shared_ptr<const HostView> host,
                                          std::vector<std::string> cordon_files, RefusedWriteSink refused) {
    return std::make_unique<NotifierImpl>(fd, std::move(policy), run_start, std::move(mount_points),
                                          std::move(host), std::move(cordon_files), std::move(refused));
}

}  // namespace cordon::jail
