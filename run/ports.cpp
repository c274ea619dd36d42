#include "run/ports.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>

#include "jail/ports.hpp"
#include "policy/ports.hpp"
#include "policy/syntax.hpp"

namespace cordon::run {

namespace {

sockaddr_storage loopback(int family, std::uint16_t port) {
    sockaddr_storage out{};
    if (family == AF_INET) {
        auto& a = reinterpret_cast<sockaddr_in&>(out);
        a.sin_family = AF_INET;
        a.sin_port = htons(port);
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    } else {
        auto& a = reinterpret_cast<sockaddr_in6&>(out);
        a.sin6_family = AF_INET6;
        a.sin6_port = htons(port);
        a.sin6_addr = in6addr_loopback;
    }
    return out;
}

std::string loopback_text(int family, std::uint16_t port) {
    return (family == AF_INET ? "127.0.0.1:" : "[::1]:") + std::to_string(port);
}

// A listening socket on `address` (IPv6 without brackets) and `port` (0: the kernel picks); -errno.
int listen_on(const std::string& address, std::uint16_t port, std::uint16_t& bound) {
    const int family = address.find(':') != std::string::npos ? AF_INET6 : AF_INET;
    int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return -errno;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_storage a{};
    socklen_t len;
    if (family == AF_INET) {
        auto& in = reinterpret_cast<sockaddr_in&>(a);
        in.sin_family = AF_INET;
        in.sin_port = htons(port);
        ::inet_pton(AF_INET, address.c_str(), &in.sin_addr);
        len = sizeof in;
    } else {
        ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
        auto& in6 = reinterpret_cast<sockaddr_in6&>(a);
        in6.sin6_family = AF_INET6;
        in6.sin6_port = htons(port);
        ::inet_pton(AF_INET6, address.c_str(), &in6.sin6_addr);
        len = sizeof in6;
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), len) != 0 || ::listen(fd, 4096) != 0) {
        const int err = errno;
        ::close(fd);
        return -err;
    }
    len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    bound = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in&>(a).sin_port
                                    : reinterpret_cast<sockaddr_in6&>(a).sin6_port);
    return fd;
}

// The init's socket source (jail/ports.hpp) on the loop: requests go out at once, answers come in order.
class JailSockets {
  public:
    JailSockets(uv_loop_s* loop, int fd) : fd_(fd), poll_(new uv_poll_t) {
        uv_poll_init(loop, poll_, fd_);
        poll_->data = this;
        uv_poll_start(poll_, UV_READABLE | UV_DISCONNECT, [](uv_poll_t* handle, int, int) {
            if (handle->data) static_cast<JailSockets*>(handle->data)->on_readable();
        });
    }
    ~JailSockets() { close(); }
    JailSockets(const JailSockets&) = delete;
    JailSockets& operator=(const JailSockets&) = delete;

    void make(int family, std::function<void(int fd)> done) {
        if (fd_ < 0 || !jail::ask_jail_socket(fd_, family)) {
            done(-EPIPE);
            return;
        }
        waiting_.push_back(std::move(done));
    }

    void close() {
        if (fd_ < 0) return;
        poll_->data = nullptr;
        uv_close(reinterpret_cast<uv_handle_t*>(poll_),
                 [](uv_handle_t* h) { delete reinterpret_cast<uv_poll_t*>(h); });
        ::close(fd_);
        fd_ = -1;
        fail_all();
    }

  private:
    void on_readable() {
        while (fd_ >= 0) {
            const int fd = jail::receive_jail_socket(fd_);
            if (fd == -EAGAIN) return;
            if (fd == -EPIPE) {  // the jail ended
                close();
                return;
            }
            if (waiting_.empty()) {
                if (fd >= 0) ::close(fd);
                continue;
            }
            auto done = std::move(waiting_.front());
            waiting_.pop_front();
            done(fd);
        }
    }

    void fail_all() {
        auto waiting = std::move(waiting_);
        for (auto& done : waiting)
            done(-EPIPE);
    }

    int fd_;
    uv_poll_t* poll_;
    std::deque<std::function<void(int)>> waiting_;
};

}  // namespace

struct Ports::Impl {
    bool without_namespaces = false;
    struct HostPort {
        std::uint16_t port;
        policy::Rule rule;
    };
    std::vector<HostPort> host_ports;
    struct Published {
        policy::PublishedPort port;
        policy::Rule rule;
        int fd = -1;  // the host's listener, made in prepare()
    };
    std::vector<Published> published;
    // The jail without namespaces: a forward on the host's loopback per host port and family.
    struct Relay {
        int family;
        std::uint16_t port;  // the host port
        const policy::Rule* rule;
        int fd = -1;
        std::uint16_t bound = 0;
    };
    std::vector<Relay> relays;
    std::shared_ptr<JailSockets> sockets;  // JailSockets lives until the loop frees its handle

    ~Impl() {
        for (auto& p : published)
            if (p.fd >= 0) ::close(p.fd);
        for (auto& r : relays)
            if (r.fd >= 0) ::close(r.fd);
    }
};

Ports::Ports(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Ports::~Ports() = default;

std::variant<std::unique_ptr<Ports>, std::string> Ports::prepare(const policy::Policy& policy,
                                                                 bool without_namespaces,
                                                                 std::vector<std::string>& notes) {
    auto impl = std::make_unique<Impl>();
    impl->without_namespaces = without_namespaces;
    const auto& net = policy.network();
    for (const auto& rule : net.host_ports) {
        auto parsed = policy::parse_host_port(rule.text);
        if (!std::holds_alternative<std::uint16_t>(parsed)) continue;  // the loader checked it
        const auto port = std::get<std::uint16_t>(parsed);
        if (std::none_of(impl->host_ports.begin(), impl->host_ports.end(),
                         [&](const Impl::HostPort& h) { return h.port == port; }))
            impl->host_ports.push_back({port, rule});
    }
    if (!without_namespaces && impl->host_ports.size() > jail::kMaxHostPorts)
        return "at most " + std::to_string(jail::kMaxHostPorts) + " host ports (" +
               std::to_string(impl->host_ports.size()) +
               " named by --host-port and sandbox.network.hostPorts)";
    for (const auto& rule : net.publish_ports) {
        auto parsed = policy::parse_published_port(rule.text);
        if (!std::holds_alternative<policy::PublishedPort>(parsed)) continue;
        auto port = std::get<policy::PublishedPort>(parsed);
        const std::string named = policy::format_source(rule.source) + " \"" + rule.text + "\"";
        if (without_namespaces) {
            notes.push_back(
                "publishing " + named +
                " means nothing in the jail without namespaces: it has no loopback of its own, so a "
                "server the command starts on 127.0.0.1 listens on the host's already");
            continue;
        }
        // The jail's JAIL_PORT is then the supervisor's own listener, which leads back to the host's loopback
        // PORT: publishing would open the host's loopback service to whoever reaches ADDR, and PORT:PORT
        // would be a loop (each connection making the next until no descriptor is left).
        for (const auto& h : impl->host_ports)
            if (h.port == port.jail_port)
                return "published port " + named + " leads to host port " + std::to_string(h.port) + " (" +
                       policy::format_source(h.rule.source) +
                       "): its JAIL_PORT would be the host's loopback port itself, not a server of the jail";
        bool same = false;
        for (const auto& p : impl->published)
            if (p.port.address == port.address && p.port.port == port.port) {
                if (p.port.jail_port != port.jail_port)
                    return "published ports " + named + " and \"" + p.rule.text + "\" both listen on " +
                           port.listen_text();
                same = true;
            }
        if (same) continue;
        std::uint16_t bound = 0;
        const int fd = listen_on(port.address, port.port, bound);
        if (fd < 0)
            return "cannot publish " + port.listen_text() + " (" + named + "): " + std::strerror(-fd) +
                   (fd == -EADDRINUSE ? " (the host's port is taken)" : "");
        if (!port.loopback())
            notes.push_back("published port " + port.listen_text() + " (" + named +
                            ") listens beyond loopback: reachable from the network");
        impl->published.push_back({std::move(port), rule, fd});
    }
    if (without_namespaces) {
        for (const auto& h : impl->host_ports)
            for (const int family : {AF_INET, AF_INET6}) {
                std::uint16_t bound = 0;
                const int fd = listen_on(family == AF_INET ? "127.0.0.1" : "::1", 0, bound);
                if (fd < 0) {
                    if (family == AF_INET6) continue;  // no IPv6 loopback: nothing to redirect there
                    return "cannot make the forward of host port " + std::to_string(h.port) + ": " +
                           std::strerror(-fd);
                }
                impl->relays.push_back({family, h.port, &h.rule, fd, bound});
            }
    }
    return std::unique_ptr<Ports>(new Ports(std::move(impl)));
}

bool Ports::empty() const {
    return impl_->host_ports.empty() && impl_->published.empty();
}

void Ports::add_to_plan(jail::MountPlan& plan) const {
    if (impl_->without_namespaces) return;
    for (const auto& h : impl_->host_ports)
        plan.host_ports.push_back(h.port);
    plan.jail_sockets = !impl_->published.empty();
}

std::shared_ptr<const jail::HostView> Ports::host_view(std::shared_ptr<const jail::HostView> base) const {
    if (!base || impl_->relays.empty()) return base;
    auto view = std::make_shared<jail::HostView>(*base);
    for (const auto& r : impl_->relays)
        view->host_ports.push_back({loopback(r.family, r.port), loopback(r.family, r.bound)});
    return view;
}

std::vector<jail::Listener> Ports::serve(uv_loop_s* loop, proxy::Proxy& proxy,
                                         std::vector<jail::Listener> listeners) {
    auto forward = [&](const char* proto, const policy::Rule& rule, std::vector<std::string> targets) {
        proxy::Forward f;
        f.proto = proto;
        f.rule = rule.text;
        f.source = policy::format_source(rule.source);
        f.targets = std::move(targets);
        return f;
    };
    // The other loopback address second: a client in the jail that chose ::1 reaches a host server that
    // listens on 127.0.0.1 only (and the reverse); the same port of the host's loopback either way.
    auto host_targets = [](int family, std::uint16_t port) {
        const int other = family == AF_INET ? AF_INET6 : AF_INET;
        return std::vector<std::string>{loopback_text(family, port), loopback_text(other, port)};
    };
    std::vector<jail::Listener> rest;
    for (auto& l : listeners) {
        if (l.kind == jail::Listener::Kind::JailSockets) {
            impl_->sockets = std::make_shared<JailSockets>(loop, l.fd);
            continue;
        }
        if (l.kind != jail::Listener::Kind::HostPort) {
            rest.push_back(std::move(l));
            continue;
        }
        const int family = l.address.front() == '[' ? AF_INET6 : AF_INET;
        const auto port = static_cast<std::uint16_t>(std::stoi(l.address.substr(l.address.rfind(':') + 1)));
        const Impl::HostPort* named = nullptr;
        for (const auto& h : impl_->host_ports)
            if (h.port == port) named = &h;
        if (!named) {  // not one we asked for: nothing serves it
            ::close(l.fd);
            continue;
        }
        proxy.serve_forward(l.fd, forward("host-port", named->rule, host_targets(family, port)));
    }
    for (auto& r : impl_->relays) {
        proxy.serve_forward(r.fd, forward("host-port", *r.rule, host_targets(r.family, r.port)));
        r.fd = -1;
    }
    for (auto& p : impl_->published) {
        auto f =
            forward("publish", p.rule,
                    {loopback_text(AF_INET, p.port.jail_port), loopback_text(AF_INET6, p.port.jail_port)});
        std::weak_ptr<JailSockets> source = impl_->sockets;
        f.make_socket = [source](int family, std::function<void(int)> done) {
            auto s = source.lock();
            if (!s) {
                done(-EPIPE);
                return;
            }
            s->make(family, std::move(done));
        };
        proxy.serve_forward(p.fd, std::move(f));
        p.fd = -1;
    }
    return rest;
}

void Ports::close() {
    if (impl_->sockets) impl_->sockets->close();
}

}  // namespace cordon::run
