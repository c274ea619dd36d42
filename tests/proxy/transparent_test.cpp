// The pure pieces of transparent proxying: the DNS stub's message parser and answers, the TLS ClientHello's
// SNI, the fake-address table, and which names the stub answers.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <random>
#include <thread>

#include "proxy/client_hello.hpp"
#include "proxy/decision.hpp"
#include "proxy/dns_message.hpp"
#include "proxy/dns_stub.hpp"
#include "proxy/fake_addresses.hpp"
#include "proxy/proxy.hpp"

using namespace cordon::proxy;
using Bytes = std::vector<std::uint8_t>;

namespace {

Bytes query(const std::string& name, std::uint16_t type, std::uint16_t qdcount = 1) {
    Bytes b = {0xab, 0xcd, 0x01, 0x00, 0x00, static_cast<std::uint8_t>(qdcount), 0, 0, 0, 0, 0, 0};
    std::size_t start = 0;
    while (start <= name.size() && !name.empty()) {
        std::size_t dot = name.find('.', start);
        if (dot == std::string::npos) dot = name.size();
        b.push_back(static_cast<std::uint8_t>(dot - start));
        for (std::size_t i = start; i < dot; ++i)
            b.push_back(static_cast<std::uint8_t>(name[i]));
        start = dot + 1;
    }
    b.push_back(0);
    b.push_back(static_cast<std::uint8_t>(type >> 8));
    b.push_back(static_cast<std::uint8_t>(type));
    b.push_back(0);
    b.push_back(1);
    return b;
}

std::optional<dns::Query> parse(const Bytes& b) {
    return dns::parse_dns_query(std::span<const std::uint8_t>(b));
}

void put16(Bytes& b, std::size_t v) {
    b.push_back(static_cast<std::uint8_t>(v >> 8));
    b.push_back(static_cast<std::uint8_t>(v));
}

// A TLS 1.3-style ClientHello (handshake message, without the record header) naming `sni` (none if empty),
// after a padding extension of `pad` bytes.
Bytes client_hello(const std::string& sni, std::size_t pad = 0) {
    Bytes body = {0x03, 0x03};
    body.insert(body.end(), 32, 0x11);  // random
    body.push_back(32);
    body.insert(body.end(), 32, 0x22);  // session id
    put16(body, 4);
    body.insert(body.end(), {0x13, 0x01, 0x13, 0x02});
    body.insert(body.end(), {0x01, 0x00});  // compression: null
    Bytes ext;
    put16(ext, 0x000a);  // supported_groups first, so SNI is not at the start
    put16(ext, 4);
    put16(ext, 2);
    put16(ext, 0x001d);
    if (pad) {
        put16(ext, 0x0015);
        put16(ext, pad);
        ext.insert(ext.end(), pad, 0);
    }
    if (!sni.empty()) {
        put16(ext, 0);
        put16(ext, sni.size() + 5);
        put16(ext, sni.size() + 3);
        ext.push_back(0);
        put16(ext, sni.size());
        ext.insert(ext.end(), sni.begin(), sni.end());
    }
    put16(body, ext.size());
    body.insert(body.end(), ext.begin(), ext.end());
    Bytes hs = {0x01, static_cast<std::uint8_t>(body.size() >> 16),
                static_cast<std::uint8_t>(body.size() >> 8), static_cast<std::uint8_t>(body.size())};
    hs.insert(hs.end(), body.begin(), body.end());
    return hs;
}

// `handshake` in TLS records of at most `record_size` bytes each.
Bytes records(const Bytes& handshake, std::size_t record_size) {
    Bytes out;
    for (std::size_t pos = 0; pos < handshake.size(); pos += record_size) {
        std::size_t n = std::min(record_size, handshake.size() - pos);
        out.insert(out.end(), {0x16, 0x03, 0x01});
        put16(out, n);
        out.insert(out.end(), handshake.begin() + static_cast<std::ptrdiff_t>(pos),
                   handshake.begin() + static_cast<std::ptrdiff_t>(pos + n));
    }
    return out;
}

ClientHelloSni sni_of(const Bytes& b) {
    return client_hello_sni(std::span<const std::uint8_t>(b));
}

}  // namespace

TEST_CASE("DNS stub: a well-formed query parses, name in lower case", "[unit]") {
    auto q = parse(query("API.Example.COM", dns::kTypeAAAA));
    REQUIRE(q);
    CHECK(q->id == 0xabcd);
    CHECK(q->name == "api.example.com");
    CHECK(q->type == dns::kTypeAAAA);
    CHECK(q->klass == dns::kClassIN);
    CHECK(q->opcode() == 0);
    auto root = parse(query("", 2));
    REQUIRE(root);
    CHECK(root->name.empty());
}

TEST_CASE("DNS stub: an EDNS OPT record in the additional section is tolerated", "[unit]") {
    Bytes b = query("example.com", dns::kTypeA);
    b[11] = 1;  // ARCOUNT
    b.insert(b.end(), {0x00, 0x00, 0x29, 0x04, 0xd0, 0, 0, 0, 0, 0x00, 0x00});
    auto q = parse(b);
    REQUIRE(q);
    CHECK(q->name == "example.com");
    b.push_back(0);  // a byte more than the records hold
    CHECK_FALSE(parse(b));
}

TEST_CASE("DNS stub: malformed packets are refused, every truncation included", "[unit]") {
    const Bytes good = query("www.example.com", dns::kTypeA);
    for (std::size_t n = 0; n < good.size(); ++n)
        CHECK_FALSE(parse(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))));
    Bytes response = good;
    response[2] |= 0x80;
    CHECK_FALSE(parse(response));
    CHECK_FALSE(parse(query("example.com", dns::kTypeA, 2)));  // two questions
    CHECK_FALSE(parse(query("example.com", dns::kTypeA, 0)));  // none
    Bytes answers = good;
    answers[7] = 1;  // ANCOUNT
    CHECK_FALSE(parse(answers));
    Bytes pointer = {0, 1, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0xc0, 0x0c, 0, 1, 0, 1};
    CHECK_FALSE(parse(pointer));
    CHECK_FALSE(parse(query(std::string(64, 'a') + ".com", dns::kTypeA)));  // label over 63
    std::string long_name;
    for (int i = 0; i < 5; ++i)
        long_name += std::string(60, 'b') + ".";
    CHECK_FALSE(parse(query(long_name + "com", dns::kTypeA)));  // name over 255
    Bytes dot = query("abc.com", dns::kTypeA);
    dot[14] = '.';  // a '.' inside a label would change the name's meaning
    CHECK_FALSE(parse(dot));
    Bytes control = query("abc.com", dns::kTypeA);
    control[13] = 0x01;
    CHECK_FALSE(parse(control));
    Bytes trailing = good;
    trailing.push_back(0);
    CHECK_FALSE(parse(trailing));
}

TEST_CASE("DNS stub: random bytes never crash the parser", "[unit]") {
    std::mt19937 rng(12);
    const Bytes good = query("example.com", dns::kTypeA);
    for (int i = 0; i < 20000; ++i) {
        Bytes b = good;
        if (i % 2 == 0) {
            b.resize(rng() % 80);
            for (auto& c : b)
                c = static_cast<std::uint8_t>(rng());
        } else {
            b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
        }
        auto q = parse(b);
        if (q) CHECK(q->name.size() <= 253);
    }
}

TEST_CASE("DNS stub: answers echo the question with the records asked for", "[unit]") {
    auto q = parse(query("example.com", dns::kTypeA));
    REQUIRE(q);
    auto a = dns::make_dns_answer(*q, dns::kNoError, {{198, 18, 0, 1}}, 60);
    REQUIRE(a.size() == 12 + q->question.size() + 16);
    CHECK(a[0] == 0xab);
    CHECK(a[1] == 0xcd);
    CHECK((a[2] & 0x80) != 0);  // a response
    CHECK((a[2] & 0x01) != 0);  // RD echoed
    CHECK((a[3] & 0x0f) == dns::kNoError);
    CHECK(a[7] == 1);  // one answer
    CHECK(Bytes(a.end() - 4, a.end()) == Bytes{198, 18, 0, 1});
    auto nx = dns::make_dns_answer(*q, dns::kNxDomain);
    CHECK((nx[3] & 0x0f) == dns::kNxDomain);
    CHECK(nx[7] == 0);
    // The answer is itself a message our parser refuses as a query (it is a response).
    CHECK_FALSE(dns::parse_dns_query(std::span<const std::uint8_t>(nx)));
}

TEST_CASE("ClientHello: SNI found in one record, across records, and only when complete", "[unit]") {
    Bytes hello = client_hello("Api.Example.com");
    auto one = sni_of(records(hello, 16384));
    CHECK(one.status == ClientHelloSni::Status::Found);
    CHECK(one.name == "api.example.com");
    Bytes split = records(hello, 40);
    auto many = sni_of(split);
    CHECK(many.status == ClientHelloSni::Status::Found);
    CHECK(many.name == "api.example.com");
    for (std::size_t n = 0; n < split.size(); ++n)
        CHECK(sni_of(Bytes(split.begin(), split.begin() + static_cast<std::ptrdiff_t>(n))).status ==
              ClientHelloSni::Status::NeedMore);
    // Bytes after the ClientHello (the client's next record) change nothing.
    Bytes more = records(hello, 16384);
    more.insert(more.end(), {0x14, 0x03, 0x03, 0x00, 0x01, 0x01});
    CHECK(sni_of(more).name == "api.example.com");
}

TEST_CASE("ClientHello: a hello padded past one record is read, one over 64 KiB is too large", "[unit]") {
    auto padded = sni_of(records(client_hello("late.example", 20000), 16384));
    CHECK(padded.status == ClientHelloSni::Status::Found);
    CHECK(padded.name == "late.example");
    CHECK(sni_of(records(client_hello("late.example", 60000), 16384)).status ==
          ClientHelloSni::Status::Found);
    Bytes huge = client_hello("late.example", 60000);
    Bytes more = client_hello("", 60000);  // two padding extensions: over 64 KiB together
    huge.insert(huge.end(), more.begin() + 4, more.end());
    std::size_t body = huge.size() - 4;
    huge[1] = static_cast<std::uint8_t>(body >> 16);
    huge[2] = static_cast<std::uint8_t>(body >> 8);
    huge[3] = static_cast<std::uint8_t>(body);
    CHECK(sni_of(records(huge, 16384)).status == ClientHelloSni::Status::TooLarge);
}

TEST_CASE("ClientHello: no SNI, not TLS, malformed", "[unit]") {
    CHECK(sni_of(records(client_hello(""), 16384)).status == ClientHelloSni::Status::NoSni);
    Bytes http = {'G', 'E', 'T', ' ', '/', ' ', 'H'};
    CHECK(sni_of(http).status == ClientHelloSni::Status::NotTls);
    CHECK(sni_of(Bytes{'S', 'S', 'H', '-'}).status == ClientHelloSni::Status::NotTls);
    Bytes server_hello = client_hello("a.com");
    server_hello[0] = 2;
    CHECK(sni_of(records(server_hello, 16384)).status == ClientHelloSni::Status::NotTls);
    Bytes bad_length = client_hello("a.com");
    bad_length.back() = 0;  // inside the name: still a name
    CHECK(sni_of(records(bad_length, 16384)).status == ClientHelloSni::Status::NotTls);
    // A server name of "." (the root) names no host: it was reported as Found with an empty name.
    CHECK(sni_of(records(client_hello("."), 16384)).status == ClientHelloSni::Status::NotTls);
    std::mt19937 rng(7);
    Bytes good = records(client_hello("example.com"), 16384);
    for (int i = 0; i < 20000; ++i) {
        Bytes b = good;
        b[rng() % b.size()] = static_cast<std::uint8_t>(rng());
        if (i % 3 == 0) b.resize(rng() % b.size());
        auto r = sni_of(b);
        if (r.status == ClientHelloSni::Status::Found) CHECK(!r.name.empty());
    }
}

TEST_CASE("Fake addresses: stable per name, one index for both pools, mapped back", "[unit]") {
    FakeAddresses fake;
    auto a = fake.assign("example.com", AF_INET);
    auto a6 = fake.assign("example.com", AF_INET6);
    auto b = fake.assign("other.test", AF_INET);
    REQUIRE(a);
    REQUIRE(a6);
    REQUIRE(b);
    CHECK(a->ip() == "198.18.0.1");
    CHECK(a6->ip() == "fd63:6f72:646f:6e00::1");
    CHECK(b->ip() == "198.18.0.2");
    CHECK(fake.assign("example.com", AF_INET)->ip() == "198.18.0.1");
    CHECK(fake.name_for(*a) == "example.com");
    CHECK(fake.name_for(*a6) == "example.com");
    CHECK(fake.name_for(*Address::parse("::ffff:198.18.0.2")) == "other.test");
    CHECK_FALSE(fake.name_for(*Address::parse("198.18.0.3")));  // in the pool, never given out
    CHECK(FakeAddresses::in_pool(*Address::parse("198.19.255.255")));
    CHECK_FALSE(FakeAddresses::in_pool(*Address::parse("198.20.0.1")));
    CHECK_FALSE(fake.name_for(*Address::parse("93.184.216.34")));
    CHECK_FALSE(fake.name_for(*Address::parse("fd63:6f72:646f:6e00:1::1")));
    CHECK(fake.size() == 2);
}

TEST_CASE("DNS stub: a name allowed only on one port is still answered", "[unit]") {
    cordon::policy::LoadOptions options;
    options.discover = false;
    options.managed_dir = "/nonexistent-cordon-test";
    options.allow_domains = {"ssh.example.com:22", "*.open.test"};
    options.deny_domains = {"bad.open.test"};
    auto loaded = cordon::policy::load_policy(options);
    REQUIRE(std::holds_alternative<cordon::policy::PolicyPtr>(loaded));
    const auto& policy = *std::get<cordon::policy::PolicyPtr>(loaded);
    CHECK(decide_name(policy, "ssh.example.com").allowed());
    CHECK(decide_name(policy, "a.open.test").allowed());
    CHECK_FALSE(decide_name(policy, "example.com").allowed());
    auto denied = decide_name(policy, "bad.open.test");
    CHECK_FALSE(denied.allowed());
    CHECK(denied.reason == cordon::policy::Reason::BlockedByDenylist);
}

TEST_CASE("The end-of-run summary counts names the DNS stub refused apart from connections", "[unit]") {
    RefusalSummary summary;
    summary.hosts["evil.test (DNS)"].count = 2;
    summary.hosts["1.2.3.4:80"].count = 1;
    std::string text = format_refusals(summary);
    CHECK(text.find("refused 1 connection(s) and 2 DNS lookup(s):") != std::string::npos);
    CHECK(text.find("evil.test (DNS)  x2") != std::string::npos);
    summary.hosts.erase("1.2.3.4:80");
    CHECK(format_refusals(summary).find("refused 2 DNS lookup(s):") != std::string::npos);
}

namespace {

int bound_loopback(int type, std::uint16_t& port) {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    if (type == SOCK_STREAM) REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof a;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
    return fd;
}

int client_socket(int type, std::uint16_t port) {
    int fd = ::socket(AF_INET, type | SOCK_CLOEXEC, 0);
    timeval tv{5, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(port);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    return fd;
}

Bytes exchange_udp(int fd, const Bytes& q, int timeout_ms = 5000) {
    ::send(fd, q.data(), q.size(), 0);
    timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    Bytes r(512);
    ssize_t n = ::recv(fd, r.data(), r.size(), 0);
    r.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    return r;
}

}  // namespace

TEST_CASE("The DNS stub through the proxy: UDP and TCP, denied names, malformed packets, shutdown",
          "[unit]") {
    uv_loop_t loop;
    uv_loop_init(&loop);
    cordon::policy::LoadOptions o;
    o.discover = false;
    o.managed_dir = "/nonexistent-cordon-test";
    o.allow_domains = {"*.allowed.test"};
    auto loaded = cordon::policy::load_policy(o);
    REQUIRE(std::holds_alternative<cordon::policy::PolicyPtr>(loaded));
    auto proxy = Proxy::create(&loop, std::get<cordon::policy::PolicyPtr>(loaded), Options{});
    std::uint16_t udp_port = 0, tcp_port = 0, transparent_port = 0;
    proxy->serve_dns_fd(bound_loopback(SOCK_DGRAM, udp_port));
    proxy->serve_dns_fd(bound_loopback(SOCK_STREAM, tcp_port));
    proxy->listen_transparent_fd(bound_loopback(SOCK_STREAM, transparent_port));

    Bytes allowed, again, aaaa, denied, malformed, over_tcp;
    bool reset = false;
    uv_async_t done;
    done.data = proxy.get();
    uv_async_init(&loop, &done, [](uv_async_t* a) {
        static_cast<Proxy*>(a->data)->shutdown(std::chrono::milliseconds(500),
                                               [a] { uv_close(reinterpret_cast<uv_handle_t*>(a), nullptr); });
    });
    std::thread client([&] {
        int u = client_socket(SOCK_DGRAM, udp_port);
        malformed = exchange_udp(u, Bytes{0, 1, 2, 3}, 300);
        allowed = exchange_udp(u, query("a.allowed.test", dns::kTypeA));
        again = exchange_udp(u, query("A.Allowed.Test", dns::kTypeA));
        aaaa = exchange_udp(u, query("a.allowed.test", dns::kTypeAAAA));
        denied = exchange_udp(u, query("x.denied.test", dns::kTypeA));
        ::close(u);
        int t = client_socket(SOCK_STREAM, tcp_port);
        Bytes m = query("b.allowed.test", dns::kTypeA);
        Bytes framed = {static_cast<std::uint8_t>(m.size() >> 8), static_cast<std::uint8_t>(m.size())};
        framed.insert(framed.end(), m.begin(), m.end());
        ::send(t, framed.data(), framed.size(), MSG_NOSIGNAL);
        Bytes r(514);
        std::size_t got = 0;
        while (got < 2 || got < 2u + (r[0] << 8 | r[1])) {
            ssize_t n = ::recv(t, r.data() + got, r.size() - got, 0);
            if (n <= 0) break;
            got += static_cast<std::size_t>(n);
        }
        over_tcp.assign(r.begin() + 2, r.begin() + static_cast<std::ptrdiff_t>(got));
        // Not a redirected connection: no original destination to decide; the proxy resets it.
        int direct = client_socket(SOCK_STREAM, transparent_port);
        char byte;
        ssize_t n = ::recv(direct, &byte, 1, 0);
        reset = n < 0 ? errno == ECONNRESET : n == 0;
        ::close(direct);
        uv_async_send(&done);
        ::close(t);
    });
    uv_run(&loop, UV_RUN_DEFAULT);
    client.join();
    auto summary = proxy->refusals();
    proxy.reset();
    uv_run(&loop, UV_RUN_NOWAIT);
    CHECK(uv_loop_close(&loop) == 0);

    CHECK(malformed.empty());
    REQUIRE(allowed.size() >= 16);
    CHECK((allowed[3] & 0x0f) == dns::kNoError);
    CHECK(Bytes(allowed.end() - 4, allowed.end()) == Bytes{198, 18, 0, 1});
    REQUIRE(again.size() >= 4);
    CHECK(Bytes(again.end() - 4, again.end()) == Bytes{198, 18, 0, 1});  // stable, case-insensitive
    REQUIRE(aaaa.size() >= 16);
    CHECK(Bytes(aaaa.end() - 16, aaaa.end() - 1) ==
          Bytes{0xfd, 0x63, 0x6f, 0x72, 0x64, 0x6f, 0x6e, 0, 0, 0, 0, 0, 0, 0, 0});
    REQUIRE(denied.size() >= 4);
    CHECK((denied[3] & 0x0f) == dns::kNxDomain);
    REQUIRE(over_tcp.size() >= 4);
    CHECK(Bytes(over_tcp.end() - 4, over_tcp.end()) == Bytes{198, 18, 0, 2});
    CHECK(reset);
    CHECK(summary.hosts.count("x.denied.test (DNS)") == 1);
}
