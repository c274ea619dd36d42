// Per-path Unix sockets (see unix_sockets.hpp).
#include "jail/unix_sockets.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

#include "jail/detail/handover.hpp"

namespace cordon::jail::unix_sockets {

namespace {

int open_in_root(int rootfd, const std::string& path) {
    open_how how{};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return static_cast<int>(::syscall(SYS_openat2, rootfd, path.c_str(), &how, sizeof how));
}

}  // namespace

std::vector<std::string> listed_paths(const std::vector<policy::Rule>& rules, const std::string& home) {
    std::vector<std::string> out;
    for (const auto& rule : rules) {
        std::string p = rule.text;
        if (p == "~")
            p = home;
        else if (p.compare(0, 2, "~/") == 0)
            p = home + p.substr(1);
        if (!p.empty() && p[0] == '/') out.push_back(std::move(p));
    }
    return out;
}

int read_address(pid_t pid, std::uint64_t addr, std::uint64_t len, sockaddr_storage& out,
                 socklen_t& out_len) {
    out = {};
    // The kernel takes the length as an int: a negative one or one over the storage is EINVAL.
    const auto n = static_cast<std::int32_t>(static_cast<std::uint32_t>(len));
    if (n < 0 || static_cast<std::size_t>(n) > sizeof out) return EINVAL;
    out_len = static_cast<socklen_t>(n);
    if (n == 0) return 0;
    iovec local{&out, static_cast<std::size_t>(n)};
    iovec remote{reinterpret_cast<void*>(addr), static_cast<std::size_t>(n)};
    ssize_t got = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got == n) return 0;
    return got < 0 && errno == ESRCH ? ESRCH : EFAULT;
}

int take_socket(pid_t tid, pid_t tgid, int fd) {
    // The thread's own descriptor table (PIDFD_THREAD, Linux 6.9); before, the process's.
    constexpr unsigned kPidfdThread = O_EXCL;
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tid, kPidfdThread));
    if (pidfd < 0 && errno == EINVAL) pidfd = static_cast<int>(::syscall(SYS_pidfd_open, tgid, 0));
    if (pidfd < 0) return -1;
    int sock = static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, fd, 0));
    int saved = errno;
    ::close(pidfd);
    errno = saved;
    return sock;
}

std::optional<std::string> filesystem_path(const sockaddr_storage& addr, socklen_t len) {
    constexpr socklen_t offset = offsetof(sockaddr_un, sun_path);
    if (addr.ss_family != AF_UNIX || len <= offset) return std::nullopt;
    const auto* un = reinterpret_cast<const sockaddr_un*>(&addr);
    if (un->sun_path[0] == '\0') return std::nullopt;  // abstract
    std::size_t max = std::min<std::size_t>(len - offset, sizeof un->sun_path);
    return std::string(un->sun_path, strnlen(un->sun_path, max));
}

int needs_privilege(const sockaddr_storage& addr, socklen_t len, bool connecting) {
    if (len < sizeof(sa_family_t)) return 0;  // the kernel refuses it
    switch (addr.ss_family) {
        case AF_UNSPEC:
        case AF_UNIX:
            return 0;
        case AF_INET:
        case AF_INET6: {
            if (connecting) return 0;
            const std::uint16_t port = addr.ss_family == AF_INET
                                           ? ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port)
                                           : ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
            return port != 0 && port < 1024 ? EACCES : 0;
        }
        case AF_NETLINK: {
            if (!connecting) return 0;  // NETLINK_ROUTE lets anyone receive its groups
            const auto* nl = reinterpret_cast<const sockaddr_nl*>(&addr);
            return nl->nl_groups || nl->nl_pid ? EPERM : 0;
        }
        default:
            return EPERM;
    }
}

std::vector<Pinned> pin_listed(const std::vector<std::string>& listed) {
    std::vector<Pinned> out;
    for (const auto& path : listed) {
        const int fd = ::open(path.c_str(), O_PATH | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode)) {
            ::close(fd);
            continue;
        }
        out.push_back(Pinned{path, fd, st.st_dev, st.st_ino});
    }
    return out;
}

int open_listed(int rootfd, const std::string& path, const std::vector<Pinned>& pinned,
                const std::vector<std::string>& listed, int& target) {
    target = -1;
    const int fd = open_in_root(rootfd, path);
    if (fd < 0) {
        const int err = errno;
        for (const auto& l : listed)
            if (l == path) return err;  // listed, not there (ENOENT as the kernel would say)
        return EPERM;
    }
    struct stat st {};
    const bool found = ::fstat(fd, &st) == 0;
    ::close(fd);
    if (!found) return EPERM;
    for (const auto& p : pinned) {
        if (p.dev != st.st_dev || p.ino != st.st_ino) continue;
        target = ::fcntl(p.fd, F_DUPFD_CLOEXEC, 0);
        return target < 0 ? errno : 0;
    }
    return EPERM;
}

int open_path(int rootfd, const std::string& path) {
    return open_in_root(rootfd, path);
}

int refuse_descriptors(int sock) {
    const int off = 0;
    return ::setsockopt(sock, SOL_SOCKET, kSoPassRights, &off, sizeof off) == 0 ? 0 : errno;
}

bool kernel_refuses_descriptors() {
    static const bool has = [] {
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return false;
        const bool ok = refuse_descriptors(pair[0]) == 0;
        ::close(pair[0]);
        ::close(pair[1]);
        return ok;
    }();
    return has;
}

int connect_to(int sock, int target) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    int n = std::snprintf(un.sun_path, sizeof un.sun_path, "/proc/self/fd/%d", target);
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + static_cast<std::size_t>(n) + 1);
    return ::connect(sock, reinterpret_cast<const sockaddr*>(&un), len) == 0 ? 0 : errno;
}

int bind_at(int sock, int dirfd, const std::string& name) {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    if (name.size() >= sizeof un.sun_path) return ENAMETOOLONG;
    std::memcpy(un.sun_path, name.data(), name.size());
    if (::fchdir(dirfd) != 0) return errno;
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + name.size() + 1);
    int rc = ::bind(sock, reinterpret_cast<const sockaddr*>(&un), len);
    int err = rc == 0 ? 0 : errno;
    if (::chdir("/") != 0) {
    }
    return err;
}

namespace {

// What the supervisor asks of a connector, with the caller's socket and the pinned file as SCM_RIGHTS.
struct ConnectRequest {
    std::int64_t deadline_ns = 0;
};

void on_alarm(int) {}

// The connector's side, in the forked child of a multithreaded process: async-signal-safe calls only (no
// allocation, no locks), each failure an exit.
[[noreturn]] void serve_connector(int sock, pid_t parent, uid_t uid, gid_t gid, const gid_t* groups,
                                  std::size_t ngroups) {
    // Nothing of the supervisor's stays open here: not its listeners, keys, the jail's descriptors, nor
    // another connector's socketpair end (which would keep that one from seeing its end of file).
    if ((sock > 0 && ::syscall(SYS_close_range, 0U, static_cast<unsigned>(sock - 1), 0U) != 0) ||
        ::syscall(SYS_close_range, static_cast<unsigned>(sock + 1), ~0U, 0U) != 0)
        ::_exit(1);
    // A session of its own: the terminal's signals to the foreground group (^C) are not for it.
    if (::chdir("/") != 0 || ::setsid() < 0) ::_exit(1);
    // Groups first: afterwards the process has no right to change them.
    if (::syscall(SYS_setgroups, ngroups, groups) != 0 || ::syscall(SYS_setresgid, gid, gid, gid) != 0 ||
        ::syscall(SYS_setresuid, uid, uid, uid) != 0)
        ::_exit(1);
    uid_t r = 0, e = 0, s = 0;
    gid_t rg = 0, eg = 0, sg = 0;
    if (::getresuid(&r, &e, &s) != 0 || r != uid || e != uid || s != uid || ::getresgid(&rg, &eg, &sg) != 0 ||
        rg != gid || eg != gid || sg != gid)
        ::_exit(1);
    // No capability (an identity with uid 0 keeps them through setresuid).
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) ::_exit(1);
    // After the id change, which clears the parent-death signal: not dumpable (no ptrace, no /proc/PID/mem
    // for the caller's user on the host: the process holds a copy of the supervisor's memory), and killed
    // with the receive thread that forked it.
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 || ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
        ::getppid() != parent)
        ::_exit(1);
    struct sigaction sa {};
    sa.sa_handler = on_alarm;  // no SA_RESTART: the deadline interrupts the connect
    sigemptyset(&sa.sa_mask);
    sigset_t alarm;
    sigemptyset(&alarm);
    sigaddset(&alarm, SIGALRM);
    if (::sigaction(SIGALRM, &sa, nullptr) != 0 || ::sigprocmask(SIG_UNBLOCK, &alarm, nullptr) != 0)
        ::_exit(1);
    for (;;) {
        ConnectRequest req;
        int fds[2] = {-1, -1};
        std::size_t nfds = 0;
        const ssize_t n = detail::receive_fds(sock, &req, sizeof req, fds, 2, nfds);
        if (n == 0 || (n < 0 && errno != EBADMSG)) ::_exit(0);  // the supervisor is gone or let go of us
        int err = EINVAL;
        if (n == static_cast<ssize_t>(sizeof req) && nfds == 2) {
            // "/proc/self/fd/N" without snprintf (not async-signal-safe).
            sockaddr_un un{};
            un.sun_family = AF_UNIX;
            static constexpr char kPrefix[] = "/proc/self/fd/";
            std::memcpy(un.sun_path, kPrefix, sizeof kPrefix - 1);
            char digits[16];
            std::size_t nd = 0;
            for (unsigned v = static_cast<unsigned>(fds[1]); nd == 0 || v; v /= 10)
                digits[nd++] = static_cast<char>('0' + v % 10);
            std::size_t at = sizeof kPrefix - 1;
            while (nd)
                un.sun_path[at++] = digits[--nd];
            itimerval arm{};
            arm.it_value.tv_sec = static_cast<time_t>(req.deadline_ns / 1'000'000'000);
            arm.it_value.tv_usec = static_cast<suseconds_t>(req.deadline_ns % 1'000'000'000 / 1000);
            if (arm.it_value.tv_sec == 0 && arm.it_value.tv_usec == 0) arm.it_value.tv_usec = 1;
            arm.it_interval = arm.it_value;  // again, should it fire before the connect waits
            const itimerval off{};
            ::setitimer(ITIMER_REAL, &arm, nullptr);
            const int rc = ::connect(fds[0], reinterpret_cast<const sockaddr*>(&un),
                                     static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + at + 1));
            err = rc == 0 ? 0 : errno;
            ::setitimer(ITIMER_REAL, &off, nullptr);
        }
        for (std::size_t i = 0; i < nfds; ++i)
            ::close(fds[i]);
        if (::send(sock, &err, sizeof err, MSG_NOSIGNAL) != static_cast<ssize_t>(sizeof err)) ::_exit(0);
    }
}

}  // namespace

std::shared_ptr<Connector> Connector::spawn(const Identity& who) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) return nullptr;
    const pid_t parent = ::getpid();
    const pid_t pid = ::_Fork();
    if (pid < 0) {
        const int err = errno;
        ::close(sv[0]);
        ::close(sv[1]);
        errno = err;
        return nullptr;
    }
    if (pid == 0) serve_connector(sv[1], parent, who.uid, who.gid, who.groups.data(), who.groups.size());
    ::close(sv[1]);
    return std::shared_ptr<Connector>(new Connector(who, pid, sv[0]));
}

Connector::~Connector() {
    ::close(fd_);  // its end of file: it exits
    if (!dead_.load()) {
        ::kill(pid_, SIGKILL);  // also should it be in a connect (a zombie's pid is not reused)
        while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
        }
    }
}

bool Connector::alive() const {
    return !dead_.load();
}

void Connector::fail() {
    if (dead_.exchange(true)) return;
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
}

int Connector::connect(int sock, int target, std::chrono::nanoseconds deadline,
                       std::chrono::nanoseconds queue, Turn turn) {
    std::unique_lock<std::timed_mutex> lock(mutex_, std::defer_lock);
    if (turn == Turn::Yields) {
        if (waiting_.load() > 0 || !lock.try_lock_for(queue) || waiting_.load() > 0) return EINTR;
    } else {
        waiting_.fetch_add(1);
        const bool locked = lock.try_lock_for(queue);
        waiting_.fetch_sub(1);
        if (!locked) return EINTR;
    }
    if (dead_.load()) return ECONNREFUSED;
    const ConnectRequest req{deadline.count()};
    const int fds[2] = {sock, target};
    const ssize_t sent = detail::send_fds(fd_, &req, sizeof req, fds, 2);
    if (sent != static_cast<ssize_t>(sizeof req)) {
        fail();
        return ECONNREFUSED;
    }
    // Its answer comes within the deadline; a connector that does not answer within a second more (stopped
    // by the caller's user on the host, or gone) is killed: the connect it may still make is lost with it.
    const auto until = std::chrono::steady_clock::now() + deadline + std::chrono::seconds(1);
    for (;;) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
        if (left.count() < 0) {
            fail();
            return ECONNREFUSED;
        }
        pollfd p{fd_, POLLIN, 0};
        const int ready = ::poll(&p, 1, static_cast<int>(left.count()) + 1);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) continue;  // the time left decides
        int err = 0;
        const ssize_t n = ::recv(fd_, &err, sizeof err, MSG_DONTWAIT);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (n != static_cast<ssize_t>(sizeof err)) {
            fail();
            return ECONNREFUSED;
        }
        return err;
    }
}

}  // namespace cordon::jail::unix_sockets
