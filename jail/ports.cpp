// The jail's side of the port forwards. Host ports: the init listens on each named port of its loopback
// (127.0.0.1 and ::1) once the plan says which, and hands the listeners over; the supervisor connects what
// they accept to the same port of the host's loopback. Published ports: the init keeps one end of a
// SOCK_SEQPACKET socketpair (the socket source) and answers each request with a new TCP socket of its
// network namespace; the supervisor connects that socket to the jail's loopback port itself.
//
// Why the init makes the sockets rather than the supervisor entering the namespace: setns(CLONE_NEWNET)
// needs CAP_SYS_ADMIN in the caller's own user namespace as well as in the namespace's, which an unprivileged
// supervisor lacks (and a helper process that joined the jail's user namespace would be one more process
// to keep and kill). A socket belongs to the namespace it was made in, whoever connects it afterwards: the
// init, already there, makes it (a socket(2), never blocking; no capability needed) and the supervisor
// connects it without waiting on its loop. The init does nothing else for the supervisor: it answers only
// requests of the two families, with a stream socket and nothing it holds.
#include "jail/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "jail/detail/handover.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail {

namespace detail {

Result open_ports(Context& ctx) {
    const auto& ports = ctx.plan.host_ports;
    if (ports.empty() && !ctx.plan.jail_sockets) return std::nullopt;
    if (ports.size() > kMaxHostPorts)
        return fail_msg("more than " + std::to_string(kMaxHostPorts) + " host ports");
    // Each descriptor with its name ("h127.0.0.1:PORT", "h[::1]:PORT", "s" for the socket source).
    std::vector<std::pair<int, std::string>> out;
    auto done = [&] {
        for (const auto& [fd, name] : out)
            ::close(fd);
    };
    for (const auto port : ports) {
        const int v4 = listen_loopback(AF_INET, port, SOCK_STREAM);
        if (v4 < 0) {
            Failure f = fail("listen on 127.0.0.1:" + std::to_string(port) + " for the host port");
            done();
            return f;
        }
        out.emplace_back(v4, "h127.0.0.1:" + std::to_string(port));
        // IPv6 may be disabled in the kernel: then the IPv4 listener serves alone (as the proxy's).
        if (const int v6 = listen_loopback(AF_INET6, port, SOCK_STREAM); v6 >= 0)
            out.emplace_back(v6, "h[::1]:" + std::to_string(port));
    }
    if (ctx.plan.jail_sockets) {
        int pair[2];
        if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
            Failure f = fail("socketpair for the published ports");
            done();
            return f;
        }
        ctx.jail_sockets = pair[0];
        out.emplace_back(pair[1], "s");
    }
    // As many messages as it takes, kMaxPassedFds descriptors at most each (never none: a message without
    // descriptors could be read together with the next one on the stream socket), each headed by '+' when
    // another follows or '.' for the last.
    bool sent = true;
    for (std::size_t at = 0; sent && at < out.size(); at += kMaxPassedFds) {
        const std::size_t end = std::min(out.size(), at + kMaxPassedFds);
        std::string names(1, end < out.size() ? '+' : '.');
        int fds[kMaxPassedFds];
        for (std::size_t i = at; i < end; ++i) {
            fds[i - at] = out[i].first;
            names += out[i].second + '\0';
        }
        sent = send_fds(ctx.supervisor_fd, names.data(), names.size(), fds, end - at) ==
               static_cast<ssize_t>(names.size());
    }
    done();  // the jail keeps no listener: only the supervisor accepts on them
    if (!sent) return fail("hand the host ports' listeners to the supervisor");
    return std::nullopt;
}

std::optional<std::vector<Listener>> receive_ports(int fd) {
    std::vector<Listener> out;
    // Bounded: the messages open_ports sends for kMaxHostPorts ports and the socket source.
    const std::size_t most = (2 * kMaxHostPorts + 1 + kMaxPassedFds - 1) / kMaxPassedFds;
    for (std::size_t message = 0; message < most; ++message) {
        char names[kMaxPassedFds * 24 + 2] = {};
        int passed[kMaxPassedFds];
        std::size_t count = 0;
        const ssize_t n = receive_fds(fd, names, sizeof names - 1, passed, kMaxPassedFds, count);
        if (n <= 0 || count == 0 || (names[0] != '+' && names[0] != '.')) {
            for (std::size_t i = 0; i < count; ++i)
                ::close(passed[i]);
            for (auto& l : out)
                ::close(l.fd);
            return std::nullopt;
        }
        std::size_t pos = 1;
        for (std::size_t i = 0; i < count; ++i) {
            std::string name(names + std::min<std::size_t>(pos, static_cast<std::size_t>(n)));
            pos += name.size() + 1;
            Listener l{name.empty() ? name : name.substr(1), passed[i], Listener::Kind::HostPort};
            if (name == "s") l.kind = Listener::Kind::JailSockets;
            out.push_back(std::move(l));
        }
        if (names[0] == '.') return out;
    }
    for (auto& l : out)
        ::close(l.fd);
    return std::nullopt;
}

void serve_socket_request(int source) {
    char family = 0;
    const ssize_t n = ::recv(source, &family, 1, MSG_DONTWAIT);
    if (n != 1) return;
    int fd = -1;
    unsigned char answer = 0;
    if (family != '4' && family != '6') {
        answer = EAFNOSUPPORT;
    } else {
        fd = ::socket(family == '4' ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) answer = static_cast<unsigned char>(errno);
    }
    // Blocking: the supervisor reads every answer it asked for (a SOCK_SEQPACKET message each).
    send_fds(source, &answer, 1, fd >= 0 ? &fd : nullptr, fd >= 0 ? 1 : 0);
    if (fd >= 0) ::close(fd);
}

}  // namespace detail

bool ask_jail_socket(int source, int family) {
    const char request = family == AF_INET6 ? '6' : '4';
    return ::send(source, &request, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1;
}

int receive_jail_socket(int source) {
    unsigned char answer = 0;
    int fd = -1;
    std::size_t count = 0;
    const ssize_t n = detail::receive_fds(source, &answer, 1, &fd, 1, count, MSG_DONTWAIT);
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
    if (n == 0) return -EPIPE;
    if (count == 1) return fd;
    return -(answer ? answer : EIO);
}

}  // namespace cordon::jail
