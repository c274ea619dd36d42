// Descriptor hygiene: what of the caller's descriptors reaches the jail. Why: a descriptor reaches what it
// points to, whatever the mounts say, and /proc/self/fd/N reopens it.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstring>
#include <string>

#include "jail/detail/setup.hpp"
#include "jail/unix_sockets.hpp"

namespace cordon::jail::detail {

// Closes every descriptor in [first, last] (or marks it close-on-exec): with close_range(2) where the kernel
// has it (5.9, CLOSE_RANGE_CLOEXEC 5.11), else by walking /proc/self/fd. False when neither works: then an
// inherited descriptor would reach the command, whatever the mounts say, and the jail must not start. Makes
// no allocation (runs in the command process too).
bool close_descriptors(unsigned first, unsigned last, bool cloexec, int except) {
    if (first > last) return true;
    if (except >= 0 && static_cast<unsigned>(except) >= first && static_cast<unsigned>(except) <= last) {
        const auto e = static_cast<unsigned>(except);
        return (e == first || close_descriptors(first, e - 1, cloexec)) &&
               (e == last || close_descriptors(e + 1, last, cloexec));
    }
    if (::syscall(SYS_close_range, first, last, cloexec ? 4U /* CLOSE_RANGE_CLOEXEC */ : 0U) == 0)
        return true;
    struct LinuxDirent64 {
        std::uint64_t ino;
        std::int64_t off;
        unsigned short reclen;
        unsigned char type;
        char name[1];
    };
    // Closing while listing: repeat until a pass finds nothing left to close.
    for (bool again = true; again;) {
        again = false;
        int dir = ::open("/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir < 0) return false;
        alignas(8) char buf[4096];
        for (;;) {
            long n = ::syscall(SYS_getdents64, dir, buf, sizeof buf);
            if (n < 0) {
                ::close(dir);
                return false;
            }
            if (n == 0) break;
            for (long pos = 0; pos < n;) {
                const auto* entry = reinterpret_cast<const LinuxDirent64*>(buf + pos);
                pos += entry->reclen;
                unsigned fd = 0;
                bool number = entry->name[0] != '\0';
                for (const char* c = entry->name; *c && number; ++c) {
                    number = *c >= '0' && *c <= '9';
                    fd = fd * 10 + static_cast<unsigned>(*c - '0');
                }
                if (!number || fd < first || fd > last || static_cast<int>(fd) == dir) continue;
                if (cloexec) {
                    if (::fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC) != 0) {
                        ::close(dir);
                        return false;
                    }
                } else {
                    ::close(static_cast<int>(fd));
                    again = true;
                }
            }
        }
        ::close(dir);
    }
    return true;
}

namespace {

// What a descriptor on 0-2 would reach past the jail; nullptr when it reaches only itself.
//  - A directory (or O_PATH) descriptor hands the command everything below it, denyRead included
//    (`cordon run -c 'cat /proc/self/fd/0/.ssh/id_rsa' < ~`).
//  - A socket keeps the network namespace it was made in: an inet socket of the host's (an unconnected or
//    disconnected TCP one connects anywhere, a UDP one sends anywhere, connected or not, a listening one
//    takes the host network's connections) would bypass the jail's network and the proxy. A Unix datagram
//    socket sends to any socket file the command can see (the address of sendto is in memory, out of the
//    filter's sight), and an unconnected Unix stream one connects to any (connect is decided only for the
//    jail's own sockets). A connected Unix stream or seqpacket socket (a socketpair: what libuv, and so node,
//    gives a child for its stdio; a pipe is no socket) reaches only its peer: it stays (but see
//    holds_queued_descriptors).
const char* reaches_past_the_jail(int fd) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0) return nullptr;  // closed
    if (flags & O_PATH) return "a directory (or an O_PATH descriptor), which would reach everything below it";
    struct stat st {};
    if (::fstat(fd, &st) != 0) return "a descriptor cordon cannot look at";
    if (S_ISDIR(st.st_mode))
        return "a directory (or an O_PATH descriptor), which would reach everything below it";
    if (!S_ISSOCK(st.st_mode)) return nullptr;
    int domain = -1, type = -1, listening = 0;
    socklen_t len = sizeof domain;
    if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        (len = sizeof type, ::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) ||
        (len = sizeof listening, ::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0))
        return "a socket cordon cannot look at";
    if (domain != AF_UNIX)
        return "a socket of the network outside the jail, which would reach past the jail's network and "
               "proxy";
    if (type != SOCK_STREAM && type != SOCK_SEQPACKET)
        return "a socket (Unix datagram), which would send to any socket file the command can see";
    // A listening one: the connections queued before the run were made with descriptor passing on (the
    // server end takes the listener's SO_PASSRIGHTS when the client connects), so their clients could hand
    // the command descriptors; nothing in a command's stdio needs a listener.
    if (listening)
        return "a listening socket (Unix), whose clients from before the run could hand the command "
               "descriptors";
    sockaddr_storage peer{};
    len = sizeof peer;
    if (::getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0)
        return "a socket (unconnected Unix), which would connect to any socket file the command can see";
    return nullptr;
}

// Whether the connected Unix socket `fd` holds a message with descriptors (SCM_RIGHTS) its peer sent before
// SO_PASSRIGHTS was turned off: the kernel checks that option when a message is sent, so what is queued
// already would still hand the command a descriptor. Peeks through what is queued (SO_PEEK_OFF moves on
// from each peek; a peek of a stream socket stops at a message with descriptors, which it duplicates here:
// closed at once), up to what was queued when it started, so a peer that keeps sending cannot hold it.
// Unsure (a peek that fails) counts as holding some.
bool holds_queued_descriptors(int fd) {
    int queued = 0;
    if (::ioctl(fd, FIONREAD, &queued) != 0) return true;
    if (queued <= 0) return false;
    int offset = 0;
    if (::setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &offset, sizeof offset) != 0) return true;
    bool found = false;
    long seen = 0;
    static char data[65536];
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 253)];
    while (seen < queued && !found) {
        iovec iov{data, sizeof data};
        msghdr msg{};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        const ssize_t n = ::recvmsg(fd, &msg, MSG_PEEK | MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            found = errno != EAGAIN;
            break;
        }
        if (msg.msg_flags & MSG_CTRUNC) found = true;
        for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
            if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
            found = true;
            const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int dup = -1;
                std::memcpy(&dup, CMSG_DATA(c) + i * sizeof(int), sizeof dup);
                if (dup >= 0) ::close(dup);
            }
        }
        if (n == 0) break;
        seen += n;
    }
    const int off = -1;  // peeking as before: from the front
    if (::setsockopt(fd, SOL_SOCKET, SO_PEEK_OFF, &off, sizeof off) != 0) found = true;
    return found;
}

}  // namespace

// Why: a descriptor reaches what it points to, whatever the mounts say and whatever the jail's network
// namespace: what of 0-2 would reach past the jail is replaced by /dev/null, here in the supervisor before
// the clone (which the jail inherits), with a notice.
bool replace_reaching_descriptors(std::string& error) {
    for (int fd = 0; fd <= 2; ++fd) {
        const char* what = reaches_past_the_jail(fd);
        if (!what) {
            // A connected Unix socket that stays: its peer, outside the jail, may not hand the command
            // descriptors (unix_sockets::refuse_descriptors says why), neither from now on nor by a message
            // it queued before. Not a socket, or a kernel without SO_PASSRIGHTS (Linux < 6.16): nothing to
            // do, or nothing that can be done (the peer is the process that started cordon; jail/README.md,
            // limits).
            struct stat st {};
            const bool socket = ::fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
            if (!socket || unix_sockets::refuse_descriptors(fd) != 0) continue;
            if (!holds_queued_descriptors(fd)) continue;
            what = "a socket (Unix) holding descriptors its peer sent before the run";
        }
        int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || ::dup2(null, fd) < 0) {
            error = "cannot replace descriptor " + std::to_string(fd) + " (" + what +
                    ") by /dev/null: " + std::strerror(errno);
            if (null >= 0) ::close(null);
            return false;
        }
        ::close(null);
        say("note: descriptor " + std::to_string(fd) + " is " + what +
            "; the command gets /dev/null instead");
    }
    return true;
}

}  // namespace cordon::jail::detail
