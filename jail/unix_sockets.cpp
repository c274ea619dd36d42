// Per-path Unix sockets (see unix_sockets.hpp).
#include "jail/unix_sockets.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>

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

}  // namespace cordon::jail::unix_sockets
