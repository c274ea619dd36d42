// Benchmarks for TLS termination (issue 13), run by bench/run (never by ctest):
//   inspect_bench mint [N]      mint N leaves for distinct hosts: median and p99 microseconds per leaf
//   inspect_bench rps PROXY_PORT TARGET_HOST TARGET_PORT PATH MODE CA_FILE CONNS SECONDS
//       requests/s through `cordon proxy` on 127.0.0.1:PROXY_PORT with CONNS keep-alive connections (one
//       thread each): MODE "inspected" = CONNECT, then TLS (trusting CA_FILE, cordon's CA) and GET PATH on
//       it; MODE "absolute" = plain absolute-form GET http://TARGET/PATH (the same client, for a
//       like-for-like ratio). Prints: BENCH rps=... requests=... errors=...
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "certs/certs.hpp"

namespace {

using Clock = std::chrono::steady_clock;

int mint(int n) {
    auto ca = std::get<std::shared_ptr<cordon::certs::Authority>>(cordon::certs::Authority::create("bench"));
    cordon::certs::LeafCache cache(ca, static_cast<std::size_t>(n) + 1);
    std::vector<double> us;
    for (int i = 0; i < n; ++i) {
        auto start = Clock::now();
        auto leaf = cache.get("host" + std::to_string(i) + ".bench.example");
        us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
        if (std::holds_alternative<std::string>(leaf)) return 1;
    }
    std::sort(us.begin(), us.end());
    std::printf("BENCH mint_median_us=%.1f mint_p99_us=%.1f leaves=%d\n", us[us.size() / 2],
                us[us.size() * 99 / 100], n);
    return 0;
}

int connect_to(int port) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
        ::close(fd);
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

// Reads one response with a Content-Length body (the bench upstream's /small); false on error.
template <typename Read>
bool read_response(Read read, std::string& buf) {
    for (;;) {
        auto end = buf.find("\r\n\r\n");
        if (end != std::string::npos) {
            auto cl = buf.find("Content-Length: ");
            if (cl == std::string::npos || cl > end) cl = buf.find("content-length: ");
            std::size_t len = cl == std::string::npos ? 0 : std::strtoul(buf.c_str() + cl + 16, nullptr, 10);
            if (buf.size() >= end + 4 + len) {
                bool ok = buf.compare(9, 3, "200") == 0;
                buf.erase(0, end + 4 + len);
                return ok;
            }
        }
        char tmp[16384];
        int n = read(tmp, static_cast<int>(sizeof tmp));
        if (n <= 0) return false;
        buf.append(tmp, static_cast<std::size_t>(n));
    }
}

int rps(int argc, char** argv) {
    if (argc < 10) return 2;
    int proxy_port = std::atoi(argv[2]);
    std::string host = argv[3], port = argv[4], path = argv[5], mode = argv[6], ca = argv[7];
    int conns = std::atoi(argv[8]), seconds = std::atoi(argv[9]);
    bool inspected = mode == "inspected";
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_load_verify_locations(ctx, ca.c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    std::atomic<long> ok{0}, errors{0};
    std::atomic<bool> stop{false};
    auto worker = [&] {
        int fd = connect_to(proxy_port);
        if (fd < 0) {
            ++errors;
            return;
        }
        std::string buf;
        SSL* ssl = nullptr;
        std::string request;
        if (inspected) {
            std::string connect =
                "CONNECT " + host + ":" + port + " HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n";
            (void)!::write(fd, connect.data(), connect.size());
            char c;
            std::string head;
            while (head.find("\r\n\r\n") == std::string::npos && ::read(fd, &c, 1) == 1)
                head += c;
            ssl = SSL_new(ctx);
            SSL_set_fd(ssl, fd);
            SSL_set1_host(ssl, host.c_str());
            if (head.find(" 200 ") == std::string::npos || SSL_connect(ssl) != 1) {
                ++errors;
                SSL_free(ssl);
                ::close(fd);
                return;
            }
            request = "GET " + path + " HTTP/1.1\r\nHost: " + host + ":" + port + "\r\n\r\n";
        } else {
            request = "GET http://" + host + ":" + port + path + " HTTP/1.1\r\nHost: " + host + ":" + port +
                      "\r\n\r\n";
        }
        while (!stop) {
            bool good;
            if (ssl) {
                SSL_write(ssl, request.data(), static_cast<int>(request.size()));
                good = read_response([&](char* b, int n) { return SSL_read(ssl, b, n); }, buf);
            } else {
                (void)!::write(fd, request.data(), request.size());
                good = read_response(
                    [&](char* b, int n) {
                        return static_cast<int>(::read(fd, b, static_cast<std::size_t>(n)));
                    },
                    buf);
            }
            if (!good) {
                ++errors;
                break;
            }
            ++ok;
        }
        if (ssl) SSL_free(ssl);
        ::close(fd);
    };
    std::vector<std::thread> threads;
    auto start = Clock::now();
    for (int i = 0; i < conns; ++i)
        threads.emplace_back(worker);
    std::this_thread::sleep_for(std::chrono::seconds(seconds));
    stop = true;
    long done = ok;
    double secs = std::chrono::duration<double>(Clock::now() - start).count();
    for (auto& t : threads)
        t.join();
    std::printf("BENCH rps=%.1f requests=%ld errors=%ld\n", static_cast<double>(done) / secs, done,
                errors.load());
    SSL_CTX_free(ctx);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a connection the proxy closed is counted as an error, not a crash
    if (argc >= 2 && std::strcmp(argv[1], "mint") == 0) return mint(argc > 2 ? std::atoi(argv[2]) : 2000);
    if (argc >= 2 && std::strcmp(argv[1], "rps") == 0) return rps(argc, argv);
    std::fprintf(stderr,
                 "usage: inspect_bench mint [N] | rps PROXY_PORT HOST PORT PATH inspected|absolute CA CONNS "
                 "SECONDS\n");
    return 2;
}
