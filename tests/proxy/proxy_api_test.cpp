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
#include <string>
#include <thread>

#include "policy/policy.hpp"
#include "proxy/proxy.hpp"

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

cordon::policy::PolicyPtr load(std::vector<std::string> allow, std::vector<std::string> addresses) {
    cordon::policy::LoadOptions o;
    o.discover = false;
    o.managed_dir = "/nonexistent-cordon-test";
    o.allow_domains = std::move(allow);
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
    CHECK(summary.hosts["127.0.0.2:80"] == 1);
    CHECK(summary.hosts["127.0.0.1:" + std::to_string(echo.port)] == 1);
    CHECK(echo.accepted == 2);
    proxy.reset();
    uv_run(&loop, UV_RUN_DEFAULT);
    CHECK(uv_loop_close(&loop) == 0);
}
