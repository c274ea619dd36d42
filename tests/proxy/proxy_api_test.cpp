// The proxy through its public interface, in-process (so the sanitizer build runs the data path too): a
// socket handed over with listen_fd(), SOCKS5 and CONNECT tunnels to a loopback echo server, a refusal,
// refusals(), set_policy() and shutdown().
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "policy/policy.hpp"
#include "proxy/proxy.hpp"
#include "proxy/resolver.hpp"

namespace {

int listen_loopback(std::uint16_t& port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

int connect_loopback(std::uint16_t port) {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
    return fd;
}

std::string recv_n(int fd, std::size_t n) {
    std::string out;
    char buf[4096];
    while (out.size() < n) {
        ssize_t r = ::recv(fd, buf, std::min(sizeof buf, n - out.size()), 0);
        if (r <= 0) break;
        out.append(buf, static_cast<std::size_t>(r));
    }
    return out;
}

void send_all(int fd, const std::string& s) {
    std::size_t off = 0;
    while (off < s.size()) {
        ssize_t n = ::send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return;
        off += static_cast<std::size_t>(n);
    }
}

// An echo server on loopback, one thread per connection.
struct Echo {
    int fd;
    std::uint16_t port = 0;
    std::thread thread;
    std::atomic<int> accepted{0};
    Echo() {
        fd = listen_loopback(port);
        thread = std::thread([this] {
            for (;;) {
                int c = ::accept(fd, nullptr, nullptr);
                if (c < 0) return;
                ++accepted;
                std::thread([c] {
                    char buf[65536];
                    for (;;) {
                        ssize_t n = ::recv(c, buf, sizeof buf, 0);
                        if (n <= 0) break;
                        send_all(c, std::string(buf, static_cast<std::size_t>(n)));
                    }
                    ::close(c);
                }).detach();
            }
        });
    }
    ~Echo() {
        ::shutdown(fd, SHUT_RDWR);
        ::close(fd);
        thread.join();
    }
};

cordon::policy::PolicyPtr load(std::vector<std::string> allow, std::vector<std::string> addresses,
                               std::vector<std::string> deny = {}) {
    cordon::policy::LoadOptions o;
    o.discover = false;
    o.managed_dir = "/nonexistent-cordon-test";
    o.allow_domains = std::move(allow);
    o.deny_domains = std::move(deny);
    o.allow_addresses = std::move(addresses);
    auto r = cordon::policy::load_policy(o);
    REQUIRE(std::holds_alternative<cordon::policy::PolicyPtr>(r));
    return std::get<cordon::policy::PolicyPtr>(r);
}

std::string socks_connect(std::uint16_t port) {
    std::string req = {0x05, 0x01, 0x00, 0x01, 127, 0, 0, 1};
    req.push_back(static_cast<char>(port >> 8));
    req.push_back(static_cast<char>(port & 0xff));
    return req;
}

}  // namespace

TEST_CASE("proxy serves a handed-over socket: SOCKS5 and CONNECT tunnels, refusals, reload, shutdown",
          "[unit]") {
    Echo echo;
    uv_loop_t loop;
    uv_loop_init(&loop);
    cordon::proxy::Options options;
    options.sandbox_id = "test";
    auto proxy = cordon::proxy::Proxy::create(&loop, load({"127.0.0.1"}, {"127.0.0.0/8"}), options);
    std::uint16_t port = 0;
    proxy->listen_fd(listen_loopback(port));

    std::atomic<bool> ok_socks{false}, ok_connect{false}, refused{false}, refused_after_reload{false};
    uv_async_t finished;
    struct Ctx {
        cordon::proxy::Proxy* proxy;
        uv_loop_t* loop;
        std::atomic<int> step{0};
    } ctx{proxy.get(), &loop};
    finished.data = &ctx;
    uv_async_init(&loop, &finished, [](uv_async_t* a) {
        auto* c = static_cast<Ctx*>(a->data);
        if (c->step == 1) {
            // Reload: nothing allowed any more.
            cordon::policy::LoadOptions o;
            o.discover = false;
            o.managed_dir = "/nonexistent-cordon-test";
            auto r = cordon::policy::load_policy(o);
            c->proxy->set_policy(std::get<cordon::policy::PolicyPtr>(r));
            c->step = 2;
            return;
        }
        c->proxy->shutdown(std::chrono::milliseconds(2000),
                           [a] { uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr); });
    });

    std::thread client([&] {
        int s = connect_loopback(port);
        send_all(s, std::string{0x05, 0x01, 0x00});
        if (recv_n(s, 2) == std::string{0x05, 0x00}) {
            send_all(s, socks_connect(echo.port));
            std::string reply = recv_n(s, 10);
            if (reply.size() == 10 && reply[1] == 0) {
                send_all(s, "hello over socks");
                ok_socks = recv_n(s, 16) == "hello over socks";
            }
        }
        ::close(s);

        s = connect_loopback(port);
        send_all(s, "CONNECT 127.0.0.1:" + std::to_string(echo.port) + " HTTP/1.1\r\n\r\nearly");
        std::string head = recv_n(s, 39);
        if (head.find(" 200 ") != std::string::npos) {
            ok_connect = recv_n(s, 5) == "early";
        }
        ::close(s);

        s = connect_loopback(port);
        send_all(s, "CONNECT 127.0.0.2:80 HTTP/1.1\r\n\r\n");
        refused = recv_n(s, 200).find("403") != std::string::npos;
        ::close(s);

        ctx.step = 1;
        uv_async_send(&finished);
        while (ctx.step != 2)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        s = connect_loopback(port);
        send_all(s, std::string{0x05, 0x01, 0x00});
        recv_n(s, 2);
        send_all(s, socks_connect(echo.port));
        std::string reply = recv_n(s, 10);
        refused_after_reload = reply.size() >= 2 && reply[1] == 0x02;
        ::close(s);
        ctx.step = 3;
        uv_async_send(&finished);
    });

    uv_run(&loop, UV_RUN_DEFAULT);
    client.join();
    CHECK(ok_socks);
    CHECK(ok_connect);
    CHECK(refused);
    CHECK(refused_after_reload);
    auto summary = proxy->refusals();
    CHECK(summary.hosts["127.0.0.2:80"].count == 1);
    CHECK(summary.hosts["127.0.0.1:" + std::to_string(echo.port)].count == 1);
    CHECK(echo.accepted == 2);
    proxy.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}

namespace {

// Names resolved from a table, answered on the next loop turn (as a real resolver does, never inside
// resolve()): the proxy's resolution, guard and failure paths without any DNS server.
class TableResolver final : public cordon::proxy::Resolver {
  public:
    TableResolver(uv_loop_t* loop, std::map<std::string, std::vector<std::string>> table)
        : loop_(loop), table_(std::move(table)) {}
    std::optional<std::vector<cordon::proxy::Address>> cached(const std::string&) override {
        return std::nullopt;
    }
    std::shared_ptr<void> resolve(const std::string& name, Callback callback) override {
        ++lookups;
        auto token = std::make_shared<Callback>(std::move(callback));
        auto* timer = new uv_timer_t;
        uv_timer_init(loop_, timer);
        timer->data = new Pending{std::weak_ptr<Callback>(token), name, this};
        uv_timer_start(
            timer,
            [](uv_timer_t* t) {
                auto* p = static_cast<Pending*>(t->data);
                cordon::proxy::ResolveResult result;
                auto it = p->self->table_.find(p->name);
                if (it == p->self->table_.end()) {
                    result.error = cordon::proxy::ResolveError::NotFound;
                } else {
                    for (const auto& ip : it->second)
                        result.addresses.push_back(*cordon::proxy::Address::parse(ip));
                }
                if (auto cb = p->callback.lock()) (*cb)(result);
                delete p;
                uv_close(reinterpret_cast<uv_handle_t*>(t),
                         [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
            },
            1, 0);
        return token;
    }
    void close() override {}
    int lookups = 0;

  private:
    struct Pending {
        std::weak_ptr<Callback> callback;
        std::string name;
        TableResolver* self;
    };
    uv_loop_t* loop_;
    std::map<std::string, std::vector<std::string>> table_;
};

// One SOCKS5 CONNECT by name; returns the reply code (-1 when there was none).
int socks_by_name(std::uint16_t proxy_port, const std::string& name, std::uint16_t port, std::string* echo) {
    int s = connect_loopback(proxy_port);
    send_all(s, std::string{0x05, 0x01, 0x00});
    if (recv_n(s, 2) != std::string{0x05, 0x00}) {
        ::close(s);
        return -1;
    }
    std::string req = {0x05, 0x01, 0x00, 0x03, static_cast<char>(name.size())};
    req += name;
    req.push_back(static_cast<char>(port >> 8));
    req.push_back(static_cast<char>(port & 0xff));
    send_all(s, req);
    std::string reply = recv_n(s, 10);
    int code = reply.size() >= 2 ? static_cast<unsigned char>(reply[1]) : -1;
    if (code == 0 && echo) {
        send_all(s, "ping");
        *echo = recv_n(s, 4);
    }
    ::close(s);
    return code;
}

}  // namespace

TEST_CASE("names are resolved by the resolver given to Proxy::create, the summary tells the reasons apart",
          "[unit]") {
    Echo echo;
    uv_loop_t loop;
    uv_loop_init(&loop);
    auto resolver = std::make_unique<TableResolver>(
        &loop, std::map<std::string, std::vector<std::string>>{{"echo.test", {"127.0.0.1"}},
                                                               {"inside.test", {"10.1.2.3"}}});
    auto* table = resolver.get();
    auto proxy = cordon::proxy::Proxy::create(
        &loop,
        load({"echo.test", "inside.test", "gone.test", "*.deny.test"}, {"127.0.0.0/8"}, {"bad.deny.test"}),
        cordon::proxy::Options{}, std::move(resolver));
    std::uint16_t port = 0;
    proxy->listen_fd(listen_loopback(port));

    std::atomic<bool> done{false};
    int ok = -1, guarded = -1, gone = -1, not_allowed = -1, denied = -1;
    std::string echoed;
    uv_async_t finished;
    finished.data = proxy.get();
    uv_async_init(&loop, &finished, [](uv_async_t* a) {
        static_cast<cordon::proxy::Proxy*>(a->data)->shutdown(
            std::chrono::milliseconds(2000), [a] { uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr); });
    });
    std::thread client([&] {
        ok = socks_by_name(port, "echo.test", echo.port, &echoed);
        guarded = socks_by_name(port, "inside.test", 443, nullptr);
        gone = socks_by_name(port, "gone.test", 443, nullptr);
        not_allowed = socks_by_name(port, "elsewhere.test", 443, nullptr);
        denied = socks_by_name(port, "bad.deny.test", 443, nullptr);
        done = true;
        uv_async_send(&finished);
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    client.join();
    CHECK(ok == 0);
    CHECK(echoed == "ping");
    CHECK(guarded == 0x02);
    CHECK(gone == 0x04);
    CHECK(not_allowed == 0x02);
    CHECK(denied == 0x02);
    CHECK(table->lookups == 3);  // refused names are never looked up

    using Why = cordon::proxy::RefusalSummary::Why;
    auto summary = proxy->refusals();
    CHECK(summary.hosts.size() == 4);
    CHECK(summary.hosts["inside.test:443"].why == Why::AddressGuard);
    CHECK(summary.hosts["inside.test:443"].address == "10.1.2.3");
    CHECK(summary.hosts["gone.test:443"].why == Why::Upstream);
    CHECK(summary.hosts["gone.test:443"].error == "nxdomain");
    CHECK(summary.hosts["elsewhere.test:443"].why == Why::NotAllowed);
    CHECK(summary.hosts["bad.deny.test:443"].why == Why::DeniedByRule);
    CHECK(summary.hosts["bad.deny.test:443"].rule == "bad.deny.test");

    std::string text = cordon::proxy::format_refusals(summary);
    INFO(text);
    auto section = [&](const std::string& title) {
        auto at = text.find(title);
        REQUIRE(at != std::string::npos);
        // Up to the next line that is not indented below the title: the next section or header.
        std::size_t end = at;
        while ((end = text.find('\n', end + 1)) != std::string::npos && end + 3 < text.size() &&
               text.compare(end + 1, 4, "    ") == 0) {
        }
        return text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    };
    std::string allow = section("not in the allow list");
    CHECK(allow.find("elsewhere.test:443") != std::string::npos);
    CHECK(allow.find("--allow-domain") != std::string::npos);
    std::string deny = section("denied by a deny rule");
    CHECK(deny.find("bad.deny.test:443") != std::string::npos);
    CHECK(deny.find("`bad.deny.test`") != std::string::npos);
    CHECK(deny.find("--deny-domain") != std::string::npos);  // the rule's source
    CHECK(deny.find("--allow-domain") == std::string::npos);
    std::string guard = section("refused by the address guard");
    CHECK(guard.find("10.1.2.3 (") != std::string::npos);
    CHECK(guard.find("--allow-address 10.1.2.3/32") != std::string::npos);
    CHECK(guard.find("--allow-domain") == std::string::npos);
    CHECK(text.find("gone.test:443  x1  DNS: no such name (NXDOMAIN)") != std::string::npos);
    CHECK(text.find("refused 3 connection(s)") != std::string::npos);

    proxy.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}
