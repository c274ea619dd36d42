// The whole proxy data path in-process (proxy/: connection, HTTP and SOCKS5 front-ends, parser, relay, audit
// log), over real loopback sockets: one client sends the fuzzed request bytes; every upstream connection the
// proxy opens gets the fuzzed response bytes. Covers request lines, headers, bodies (Content-Length and
// chunked, re-framed both ways), pipelined requests, CONNECT and SOCKS5 tunnels, 400/407/431/501/502 answers.
// Checks that no connection outlives its two peers (Proxy::active_connections() returns to 0).
//
// Input: byte 0 = flags (bit 0: the proxy wants --auth-token, bit 1: the client half-closes right after
// sending), then the client's bytes, then optionally "@@UPSTREAM@@" and the upstream's bytes. In the client's
// bytes "{PORT}" becomes the test upstream's port in decimal, "{P2}" the same as two big-endian bytes
// (SOCKS5). Every name resolves to 127.0.0.1 except names starting with "nx" (NXDOMAIN).
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/proxy.hpp"
#include "proxy/resolver.hpp"

namespace {

using namespace std::chrono_literals;
namespace proxy = cordon::proxy;

void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "fuzz_proxy: %s\n", what);
        std::abort();
    }
}

// Names resolve on the next loop turn, as c-ares answers do.
class LoopbackResolver final : public proxy::Resolver {
  public:
    explicit LoopbackResolver(uv_loop_t* loop) : loop_(loop) {}
    std::optional<std::vector<proxy::Address>> cached(const std::string&) override { return std::nullopt; }
    std::shared_ptr<void> resolve(const std::string& name, Callback callback) override {
        auto token = std::make_shared<Callback>(std::move(callback));
        auto* timer = new uv_timer_t;
        uv_timer_init(loop_, timer);
        timer->data = new Pending{token, name.rfind("nx", 0) == 0};
        uv_timer_start(
            timer,
            [](uv_timer_t* t) {
                auto* p = static_cast<Pending*>(t->data);
                proxy::ResolveResult result;
                if (p->nxdomain)
                    result.error = proxy::ResolveError::NotFound;
                else
                    result.addresses.push_back(*proxy::Address::parse("127.0.0.1"));
                if (auto cb = p->callback.lock()) (*cb)(result);
                delete p;
                uv_close(reinterpret_cast<uv_handle_t*>(t),
                         [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
            },
            0, 0);
        return token;
    }
    void close() override {}

  private:
    struct Pending {
        std::weak_ptr<Callback> callback;
        bool nxdomain;
    };
    uv_loop_t* loop_;
};

int listen_loopback(std::uint16_t& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    check(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 128) == 0, "listen");
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

// Closes with a reset: no TIME_WAIT left behind by millions of runs.
void close_hard(int fd) {
    linger l{1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    ::close(fd);
}

struct Peer {
    int fd;
    std::string out;  // still to send
    bool eof = false, shut = false;
};

// Sends what it can; reads and discards; notes EOF. False when the socket failed. Adds to `moved` the bytes
// sent and received.
bool pump(Peer& p, bool shut_when_sent, std::size_t& moved) {
    while (!p.out.empty()) {
        ssize_t n = ::send(p.fd, p.out.data(), p.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0) break;
        p.out.erase(0, static_cast<std::size_t>(n));
        moved += static_cast<std::size_t>(n);
    }
    if (p.out.empty() && shut_when_sent && !p.shut) {
        ::shutdown(p.fd, SHUT_WR);
        p.shut = true;
    }
    char buf[65536];
    while (!p.eof) {
        ssize_t n = ::recv(p.fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            moved += static_cast<std::size_t>(n);
            continue;
        }
        if (n == 0) p.eof = true;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return false;
        break;
    }
    return true;
}

struct World {
    uv_loop_t loop;
    std::unique_ptr<proxy::Proxy> open_proxy, auth_proxy;
    std::uint16_t open_port = 0, auth_port = 0, upstream_port = 0;
    int upstream_fd = -1;

    World() {
        uv_loop_init(&loop);
        cordon::policy::LoadOptions o;
        o.discover = false;
        o.managed_dir = "/nonexistent-cordon-fuzz";
        o.allow_domains = {"*", "127.0.0.1", "[::1]"};
        o.deny_domains = {"denied.test"};
        o.allow_addresses = {"127.0.0.0/8"};
        auto loaded = cordon::policy::load_policy(o);
        check(std::holds_alternative<cordon::policy::PolicyPtr>(loaded), "policy");
        auto policy = std::get<cordon::policy::PolicyPtr>(loaded);
        proxy::Options options;
        options.audit_log = "/dev/null";
        options.sandbox_id = "fuzz";
        options.connect_timeout = 1s;
        options.header_timeout = 2s;
        options.idle_timeout = 2s;
        open_proxy = proxy::Proxy::create(&loop, policy, options, std::make_unique<LoopbackResolver>(&loop));
        open_proxy->listen_fd(listen_loopback(open_port));
        options.auth_token = "secret";
        auth_proxy = proxy::Proxy::create(&loop, policy, options, std::make_unique<LoopbackResolver>(&loop));
        auth_proxy->listen_fd(listen_loopback(auth_port));
        upstream_fd = listen_loopback(upstream_port);
    }
};

std::string replace_all(std::string s, std::string_view from, const std::string& to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
        s.replace(at, from.size(), to);
    return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static World* world = new World;  // one proxy for the whole run, as in production
    if (size == 0) return 0;
    World& w = *world;
    const std::uint8_t flags = data[0];
    std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
    std::string_view request = input, response;
    if (auto at = input.find("@@UPSTREAM@@"); at != std::string_view::npos) {
        request = input.substr(0, at);
        response = input.substr(at + 12);
    }
    std::string port = std::to_string(w.upstream_port);
    std::string p2{static_cast<char>(w.upstream_port >> 8), static_cast<char>(w.upstream_port & 0xff)};
    std::string client_bytes = replace_all(replace_all(std::string(request), "{PORT}", port), "{P2}", p2);
    proxy::Proxy& px = (flags & 1) ? *w.auth_proxy : *w.open_proxy;

    Peer client{::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), client_bytes};
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((flags & 1) ? w.auth_port : w.open_port);
    ::connect(client.fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // EINPROGRESS: pump() sends later
    std::vector<Peer> upstreams;

    bool half_close = (flags & 2) != 0;
    const auto deadline = std::chrono::steady_clock::now() + 8s;
    int quiet = 0;
    while (!client.eof && std::chrono::steady_clock::now() < deadline) {
        uv_run(&w.loop, UV_RUN_NOWAIT);
        std::size_t moved = 0;
        for (int fd; (fd = ::accept4(w.upstream_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;) {
            upstreams.push_back({fd, std::string(response)});
            ++moved;
        }
        bool ok = pump(client, half_close, moved);
        for (auto& u : upstreams)
            pump(u, true, moved);
        if (!ok) break;
        // Nothing moved for a few turns: the proxy waits for the client. Half-close so that it can finish.
        if (moved == 0 && ++quiet > 4) half_close = true;
        if (moved > 0) quiet = 0;
        pollfd p{uv_backend_fd(&w.loop), POLLIN, 0};
        ::poll(&p, 1, 1);
    }
    if (std::getenv("FUZZ_PROXY_DEBUG"))
        std::fprintf(stderr, "client eof %d after %lld ms\n", client.eof,
                     static_cast<long long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                                std::chrono::steady_clock::now() - deadline + 8s)
                                                .count()));
    close_hard(client.fd);
    for (auto& u : upstreams)
        close_hard(u.fd);
    // Both peers are gone: every connection must close.
    const auto close_deadline = std::chrono::steady_clock::now() + 5s;
    while (px.active_connections() > 0 && std::chrono::steady_clock::now() < close_deadline) {
        uv_run(&w.loop, UV_RUN_NOWAIT);
        for (int fd; (fd = ::accept4(w.upstream_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0;)
            close_hard(fd);
        pollfd p{uv_backend_fd(&w.loop), POLLIN, 0};
        ::poll(&p, 1, 1);
    }
    check(px.active_connections() == 0, "a connection outlived both its peers");
    return 0;
}
