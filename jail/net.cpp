// The jail's network: loopback up in the new network namespace, the proxy's listening sockets created there
// and handed to the supervisor with SCM_RIGHTS. A socket belongs to the namespace it was created in, so the
// proxy, running in the host's namespace, accepts connections from the jail directly: no bridge process, one
// hop.
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <span>

#include "jail/detail/handover.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

int listen_loopback(int family, std::uint16_t port, int type) {
    int fd = ::socket(family, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return -1;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    int rc;
    if (family == AF_INET) {
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    } else {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        sockaddr_in6 a{};
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
        rc = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    }
    if (rc != 0 || (type == SOCK_STREAM && ::listen(fd, 4096) != 0)) {
        const int err = errno;
        ::close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

namespace {

constexpr std::size_t kMaxPorts = 4;
// The proxy's ports on both loopback addresses, the transparent listener on both, the DNS stub's UDP and TCP
// sockets on both.
constexpr std::size_t kMaxListeners = 2 * kMaxPorts + 6;
static_assert(kMaxListeners <= kMaxPassedFds, "the listeners go in one SCM_RIGHTS message");

// On the wire to the supervisor, each address is prefixed by its kind's letter.
constexpr char kKindLetters[] = {'p', 't', 'u', 'd', 'h', 's'};

Result listen_on(int family, const char* ip, std::uint16_t port, std::vector<Listener>& out,
                 Listener::Kind kind = Listener::Kind::Proxy) {
    const int fd = listen_loopback(family, port, kind == Listener::Kind::DnsUdp ? SOCK_DGRAM : SOCK_STREAM);
    if (fd < 0)
        return fail("listen on " + std::string(family == AF_INET6 ? "[" : "") + ip +
                    (family == AF_INET6 ? "]" : "") + ":" + std::to_string(port));
    std::string name = family == AF_INET6 ? "[" + std::string(ip) + "]" : std::string(ip);
    out.push_back({name + ":" + std::to_string(port), fd, kind});
    return std::nullopt;
}

}  // namespace

Result bring_up_loopback(Context&) {
    int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail("socket for loopback setup");
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
    Result result;
    if (::ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) {
        result = fail("read flags of lo");
    } else {
        ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
        if (::ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) result = fail("bring up lo");
    }
    ::close(fd);
    return result;
}

Result create_listeners(Context& ctx) {
    // The caller's ports (the proxy's), on both loopback addresses. IPv6 may be disabled in the kernel: then
    // the IPv4 listeners suffice (the caller's environment names 127.0.0.1).
    const auto& ports = ctx.config.listen_ports;
    if (ports.size() > kMaxPorts) return fail_msg("more than 4 listening ports asked for");
    for (auto port : ports)
        if (auto r = listen_on(AF_INET, "127.0.0.1", port, ctx.listeners)) return r;
    bool v6 = true;
    for (auto port : ports)
        v6 = v6 && !listen_on(AF_INET6, "::1", port, ctx.listeners);
    if (!v6) say("note: no IPv6 loopback in the jail; the proxy listens on 127.0.0.1 only");
    if (ctx.config.transparent_port != 0) {
        // Where the nftables rules redirect every outbound TCP connection (net_filter.cpp), and the DNS stub
        // that /etc/resolv.conf names.
        using Kind = Listener::Kind;
        const auto port = ctx.config.transparent_port;
        if (auto r = listen_on(AF_INET, "127.0.0.1", port, ctx.listeners, Kind::Transparent)) return r;
        if (v6 && listen_on(AF_INET6, "::1", port, ctx.listeners, Kind::Transparent))
            say("note: no IPv6 transparent listener in the jail");
        if (auto r = listen_on(AF_INET, "127.0.0.1", 53, ctx.listeners, Kind::DnsUdp)) return r;
        if (auto r = listen_on(AF_INET, "127.0.0.1", 53, ctx.listeners, Kind::DnsTcp)) return r;
        // For DNS sent to an IPv6 server, which the nftables rules redirect to ::1:53.
        if (v6 && (listen_on(AF_INET6, "::1", 53, ctx.listeners, Kind::DnsUdp) ||
                   listen_on(AF_INET6, "::1", 53, ctx.listeners, Kind::DnsTcp)))
            say("note: no IPv6 DNS stub in the jail");
    }
    return std::nullopt;
}

// One message: the listeners' addresses, NUL-separated, with their fds attached in the same order.
Result send_listeners(Context& ctx) {
    if (ctx.listeners.size() > kMaxListeners) return fail_msg("too many listeners for one message");
    std::string names;
    std::vector<int> fds;
    for (const auto& l : ctx.listeners) {
        names += kKindLetters[static_cast<int>(l.kind)];
        names += l.address;
        names.push_back('\0');
        fds.push_back(l.fd);
    }
    if (names.empty()) names.push_back('\0');
    if (send_fds(ctx.supervisor_fd, names.data(), names.size(), fds.data(), fds.size()) !=
        static_cast<ssize_t>(names.size()))
        return fail("hand the listeners to the supervisor");
    // The jail keeps no copy: only the proxy accepts on them.
    for (auto& l : ctx.listeners)
        ::close(l.fd);
    ctx.listeners.clear();
    return std::nullopt;
}

std::optional<std::vector<Listener>> receive_listeners(int fd, std::size_t max) {
    char names[512] = {};
    int passed[kMaxPassedFds];
    std::size_t count = 0;
    if (max > kMaxPassedFds) max = kMaxPassedFds;
    if (receive_fds(fd, names, sizeof names - 1, passed, max, count) <= 0) return std::nullopt;
    std::vector<Listener> out;
    std::size_t pos = 0;
    for (const int f : std::span(passed, count)) {
        std::string name(names + pos);
        pos += name.size() + 1;
        Listener l{name, f, Listener::Kind::Proxy};
        for (std::size_t k = 0; !name.empty() && k < sizeof kKindLetters; ++k)
            if (name[0] == kKindLetters[k]) {
                l.kind = static_cast<Listener::Kind>(k);
                l.address = name.substr(1);
            }
        out.push_back(std::move(l));
    }
    return out;
}

}  // namespace cordon::jail::detail
