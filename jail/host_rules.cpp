// The notifier's mechanism for the namespace-free jail (host_view.hpp): terminals, what the read rules hide,
// connects and binds, taking a caller's socket. Why: in the namespace jail a connect goes out of a socket
// whose network namespace holds nothing but the proxy, and the jail's devpts and masks are its own; without
// namespaces the same calls would reach any address and the user's other terminals. Its write rules (the
// host's devices, kernel knobs, /tmp and shared memory) are entries of policy/write_rules.hpp.
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <dirent.h>
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "jail/host_view.hpp"
#include "jail/unix_sockets.hpp"

namespace cordon::jail::host_rules {

namespace {

// The controlling terminal of process `pid` (/proc/PID/stat's tty_nr, decoded), or nullopt (none, or gone).
std::optional<dev_t> controlling_terminal(const std::string& pid) {
    std::ifstream in("/proc/" + pid + "/stat");
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) return std::nullopt;
    std::istringstream fields(line.substr(close + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    unsigned long tty = 0;
    if (!(fields >> state >> ppid >> pgrp >> session >> tty) || tty == 0) return std::nullopt;
    return ::makedev(static_cast<unsigned>((tty >> 8) & 0xfff),
                     static_cast<unsigned>((tty & 0xff) | ((tty >> 12) & 0xfff00)));
}

}  // namespace

int terminal(pid_t caller, dev_t pty) {
    if (controlling_terminal(std::to_string(caller)) == pty) return 0;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return EACCES;
    int verdict = 0;
    while (const dirent* entry = ::readdir(proc)) {
        if (entry->d_name[0] < '1' || entry->d_name[0] > '9') continue;
        if (controlling_terminal(entry->d_name) == pty) {
            verdict = EACCES;
            break;
        }
    }
    ::closedir(proc);
    return verdict;
}

bool hidden(const HostView& view, const std::string& path) {
    if (view.read_view.empty() || path.empty() || path[0] != '/') return false;
    // Below `path`: anything hidden there ("/a/" up to "/a0", '0' following '/').
    const std::string prefix = path == "/" ? "/" : path + "/";
    for (auto it = view.read_view.lower_bound(prefix); it != view.read_view.end(); ++it) {
        if (it->first.compare(0, prefix.size(), prefix) != 0) break;
        if (!it->second) return true;
    }
    // At or above it: the deepest entry decides (none: shown, as the host's root is by default).
    for (std::string at = path;;) {
        if (auto it = view.read_view.find(at); it != view.read_view.end()) return !it->second;
        if (at == "/") return false;
        const std::size_t slash = at.rfind('/');
        at = slash == 0 ? "/" : at.substr(0, slash);
    }
}

std::string session_registry(uid_t uid) {
    // Root's under /run, which only root writes: /tmp/cordon-0 could be made first by another user, who
    // would own it (a session then refuses to start, as for any uid whose directory is not its own).
    return uid == 0 ? std::string("/run/cordon/sessions")
                    : "/tmp/cordon-" + std::to_string(uid) + "/sessions";
}

std::string session_registry_entry(dev_t dev, ino_t ino) {
    return std::to_string(static_cast<unsigned long long>(dev)) + "-" +
           std::to_string(static_cast<unsigned long long>(ino));
}

int session_socket(int fd, uid_t as) {
    struct stat target {};
    if (::fstat(fd, &target) != 0) return errno;
    if (!S_ISSOCK(target.st_mode)) return 0;
    // A session's socket is owned by the session's uid (it bound it), and a session serves only peers of
    // its uid: a connect made as another uid cannot join or stop it, whatever the registry says.
    if (target.st_uid != as) return 0;
    const std::string entry =
        session_registry(target.st_uid) + "/" + session_registry_entry(target.st_dev, target.st_ino);
    struct stat st {};
    if (::lstat(entry.c_str(), &st) == 0) return EACCES;
    // No such entry, or no registry at all (no session of that uid registered: a session does not start
    // without its entry, and makes it only in a directory of its uid alone). Any other answer (a registry
    // this process cannot read, an I/O error) may hide a session: refused.
    return errno == ENOENT || errno == ENOTDIR ? 0 : EACCES;
}

int connect(const HostView& view, sockaddr_storage& addr, socklen_t len) {
    // A listed host port: the forward's address instead (the same family, so `len` still fits).
    for (const auto& redirect : view.host_ports) {
        if (redirect.from.ss_family != addr.ss_family) continue;
        if (addr.ss_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in))) {
            const auto& to = reinterpret_cast<const sockaddr_in&>(addr);
            const auto& f = reinterpret_cast<const sockaddr_in&>(redirect.from);
            if (f.sin_port != to.sin_port || f.sin_addr.s_addr != to.sin_addr.s_addr) continue;
        } else if (addr.ss_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6))) {
            const auto& to = reinterpret_cast<const sockaddr_in6&>(addr);
            const auto& f = reinterpret_cast<const sockaddr_in6&>(redirect.from);
            if (f.sin6_port != to.sin6_port ||
                std::memcmp(&f.sin6_addr, &to.sin6_addr, sizeof f.sin6_addr) != 0)
                continue;
        } else {
            continue;
        }
        addr = redirect.to;
        return 0;
    }
    switch (addr.ss_family) {
        case AF_UNSPEC:
        case AF_NETLINK:  // the kernel's own sockets (needs_privilege() refuses groups and port ids)
            return 0;
        case AF_UNIX:  // an abstract or unnamed address: the host's abstract namespace is not the jail's
            return view.all_unix_sockets ? 0 : EPERM;
        case AF_INET: {
            if (len < static_cast<socklen_t>(sizeof(sockaddr_in))) return EINVAL;
            const auto& to = reinterpret_cast<const sockaddr_in&>(addr);
            for (const auto& [listener, listener_len] : view.proxy) {
                if (listener.ss_family != AF_INET) continue;
                const auto& l = reinterpret_cast<const sockaddr_in&>(listener);
                if (l.sin_port == to.sin_port && l.sin_addr.s_addr == to.sin_addr.s_addr) return 0;
            }
            return EPERM;
        }
        case AF_INET6: {
            if (len < static_cast<socklen_t>(sizeof(sockaddr_in6))) return EINVAL;
            const auto& to = reinterpret_cast<const sockaddr_in6&>(addr);
            for (const auto& [listener, listener_len] : view.proxy) {
                if (listener.ss_family != AF_INET6) continue;
                const auto& l = reinterpret_cast<const sockaddr_in6&>(listener);
                if (l.sin6_port == to.sin6_port &&
                    std::memcmp(&l.sin6_addr, &to.sin6_addr, sizeof l.sin6_addr) == 0)
                    return 0;
            }
            return EPERM;
        }
        default:
            return EPERM;
    }
}

namespace {

bool loopback(const sockaddr_storage& addr, socklen_t len) {
    if (addr.ss_family == AF_INET && len >= static_cast<socklen_t>(sizeof(sockaddr_in)))
        return (ntohl(reinterpret_cast<const sockaddr_in&>(addr).sin_addr.s_addr) >> 24) == 127;
    if (addr.ss_family == AF_INET6 && len >= static_cast<socklen_t>(sizeof(sockaddr_in6)))
        return IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6&>(addr).sin6_addr);
    return false;
}

}  // namespace

int bind(const sockaddr_storage& addr, socklen_t len) {
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return 0;
    return loopback(addr, len) ? 0 : EADDRNOTAVAIL;
}

int listen(int fd) {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return errno;
    if (addr.ss_family != AF_INET && addr.ss_family != AF_INET6) return 0;
    const in_port_t port = addr.ss_family == AF_INET ? reinterpret_cast<const sockaddr_in&>(addr).sin_port
                                                     : reinterpret_cast<const sockaddr_in6&>(addr).sin6_port;
    return port != 0 && loopback(addr, len) ? 0 : EADDRNOTAVAIL;
}

int take_socket(pid_t tid, pid_t tgid, int fd) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
    const std::uint32_t ptrace = 1U << CAP_SYS_PTRACE;
    const bool raise = ::syscall(SYS_capget, &header, caps) == 0 && (caps[0].permitted & ptrace) &&
                       !(caps[0].effective & ptrace);
    if (raise) {
        caps[0].effective |= ptrace;
        ::syscall(SYS_capset, &header, caps);
    }
    const int sock = unix_sockets::take_socket(tid, tgid, fd);
    const int err = errno;
    if (raise) {
        caps[0].effective &= ~ptrace;
        ::syscall(SYS_capset, &header, caps);
    }
    errno = err;
    return sock;
}

int reopen_descriptor(pid_t pid, int fd) {
    const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
    return ::open(path.c_str(), O_PATH | O_CLOEXEC);
}

int descriptor_flags(pid_t pid, int fd) {
    std::ifstream info("/proc/" + std::to_string(pid) + "/fdinfo/" + std::to_string(fd));
    std::string key;
    while (info >> key)
        if (key == "flags:") {
            std::string octal;
            info >> octal;
            return static_cast<int>(std::strtol(octal.c_str(), nullptr, 8));  // octal in fdinfo
        }
    return -1;
}

int connect_by_replacement(int listener, std::uint64_t id, pid_t pid, int fd, const sockaddr_storage& addr,
                           socklen_t len) {
    // The caller's descriptor: a socket, and its file status flags.
    const std::string base = "/proc/" + std::to_string(pid) + "/fd";
    char link[64] = {};
    const std::string path = base + "/" + std::to_string(fd);
    ssize_t n = ::readlink(path.c_str(), link, sizeof link - 1);
    if (n < 0) return EBADF;
    if (std::strncmp(link, "socket:", 7) != 0) return ENOTSOCK;
    const long flags = descriptor_flags(pid, fd);
    if (flags < 0) return EBADF;
    int sock = ::socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (sock < 0) return errno;
    // The proxy's listener on loopback: the handshake completes at once, even for a non-blocking caller.
    if (::connect(sock, reinterpret_cast<const sockaddr*>(&addr), len) != 0) {
        const int err = errno;
        ::close(sock);
        return err;
    }
    if (flags & O_NONBLOCK) ::fcntl(sock, F_SETFL, O_NONBLOCK);
    seccomp_notif_addfd addfd{};
    addfd.id = id;
    addfd.flags = SECCOMP_ADDFD_FLAG_SETFD;
    addfd.srcfd = static_cast<std::uint32_t>(sock);
    addfd.newfd = static_cast<std::uint32_t>(fd);
    addfd.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
    const int rc = ::ioctl(listener, SECCOMP_IOCTL_NOTIF_ADDFD, &addfd);
    const int err = errno;
    ::close(sock);
    return rc < 0 ? err : 0;
}

}  // namespace cordon::jail::host_rules
