#include <catch2/catch.hpp>

#include "proxy/auth.hpp"
#include "proxy/http_parser.hpp"
#include "proxy/socks5.hpp"

using namespace cordon::proxy;

TEST_CASE("SOCKS5 greeting parses however the bytes trickle in", "[unit]") {
    std::string bytes = {0x05, 0x02, 0x00, 0x02};
    for (std::size_t i = 0; i < bytes.size(); ++i) {
        CHECK(socks5::parse_greeting(bytes.substr(0, i)).state == socks5::Parse::Incomplete);
    }
    auto g = socks5::parse_greeting(bytes + "extra");
    REQUIRE(g.state == socks5::Parse::Complete);
    CHECK(g.consumed == 4);
    CHECK(g.methods == std::vector<std::uint8_t>{0x00, 0x02});
    CHECK(socks5::parse_greeting(std::string{0x04, 0x01, 0x00}).state == socks5::Parse::Invalid);
    CHECK(socks5::parse_greeting(std::string{0x05, 0x00}).state == socks5::Parse::Invalid);
}

TEST_CASE("SOCKS5 requests: domain, IPv4, IPv6, unsupported commands and address types", "[unit]") {
    std::string domain =
        std::string{0x05, 0x01, 0x00, 0x03, 11} + "example.com" + std::string{0x01, static_cast<char>(0xbb)};
    for (std::size_t i = 0; i < domain.size(); ++i) {
        CHECK(socks5::parse_request(domain.substr(0, i)).state == socks5::Parse::Incomplete);
    }
    auto r = socks5::parse_request(domain);
    REQUIRE(r.state == socks5::Parse::Complete);
    CHECK(r.host == "example.com");
    CHECK(r.port == 443);
    CHECK(r.consumed == domain.size());

    auto v4 = socks5::parse_request(std::string{0x05, 0x01, 0x00, 0x01, 10, 0, 0, 1, 0, 80});
    REQUIRE(v4.state == socks5::Parse::Complete);
    CHECK(v4.host == "10.0.0.1");
    CHECK(v4.port == 80);

    std::string v6req = {0x05, 0x01, 0x00, 0x04};
    v6req += std::string(15, '\0') + std::string(1, 1) + std::string{0, 80};
    auto v6 = socks5::parse_request(v6req);
    REQUIRE(v6.state == socks5::Parse::Complete);
    CHECK(v6.host == "::1");

    auto bind = socks5::parse_request(std::string{0x05, 0x02, 0x00, 0x01, 1, 2, 3, 4, 0, 80});
    CHECK(bind.state == socks5::Parse::Invalid);
    CHECK(bind.reply == socks5::kCommandNotSupported);
    auto udp = socks5::parse_request(std::string{0x05, 0x03, 0x00, 0x01, 1, 2, 3, 4, 0, 80});
    CHECK(udp.reply == socks5::kCommandNotSupported);
    auto atyp = socks5::parse_request(std::string{0x05, 0x01, 0x00, 0x09});
    CHECK(atyp.state == socks5::Parse::Invalid);
    CHECK(atyp.reply == socks5::kAddressTypeNotSupported);
    auto empty = socks5::parse_request(std::string{0x05, 0x01, 0x00, 0x03, 0, 0, 80});
    CHECK(empty.state == socks5::Parse::Invalid);
}

TEST_CASE("SOCKS5 username/password and replies", "[unit]") {
    std::string up = "\x01\x04user\x06secret";
    auto u = socks5::parse_userpass(up);
    REQUIRE(u.state == socks5::Parse::Complete);
    CHECK(u.user == "user");
    CHECK(u.password == "secret");
    CHECK(socks5::parse_userpass(up.substr(0, 7)).state == socks5::Parse::Incomplete);
    auto reply = socks5::make_reply(socks5::kNotAllowed);
    CHECK(reply == std::string{0x05, 0x02, 0x00, 0x01, 0, 0, 0, 0, 0, 0});
    auto ok = socks5::make_reply(0, "127.0.0.1", 1234);
    CHECK(ok == std::string{0x05, 0x00, 0x00, 0x01, 127, 0, 0, 1, 0x04, static_cast<char>(0xd2)});
}

namespace {
struct NullSink : HttpParser::Sink {
    std::string body;
    void on_head(const HttpHead&) override {}
    void on_body(std::string_view d) override { body.append(d); }
};
std::string parse_error(const std::string& raw) {
    NullSink sink;
    HttpParser p(HttpParser::Kind::Request, &sink);
    std::string_view rest = raw;
    for (int i = 0; i < 8; ++i) {
        auto r = p.feed(rest);
        if (r.status == HttpParser::Status::Error) return p.error();
        if (r.status == HttpParser::Status::Ok) return "";
        rest.remove_prefix(r.consumed);
        p.resume();
    }
    return "";
}
}  // namespace

TEST_CASE("HTTP request parser refuses smuggling shapes", "[unit]") {
    const std::string h = "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\n";
    CHECK(parse_error(h + "Content-Length: 3\r\n\r\nabc") == "");
    CHECK(parse_error(h + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") != "");
    CHECK(parse_error(h + "Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc") != "");
    CHECK(parse_error(h + "Content-Length: 3x\r\n\r\nabc") != "");
    CHECK(parse_error(h + "X-A : b\r\n\r\n") == "whitespace before the colon in a header");
    CHECK(parse_error(h + "X-A: a\r\n b\r\n\r\n") == "obsolete header line folding");
    CHECK(parse_error(h + "Transfer-Encoding: gzip\r\n\r\n") == "Transfer-Encoding other than chunked");
    CHECK(parse_error(h + "Host: b.test\r\n\r\n") == "duplicate Host header");
    CHECK(parse_error(h + "X\x01: b\r\n\r\n") != "");
}

TEST_CASE("HTTP request parser pauses at head and message ends, streams de-chunked bodies", "[unit]") {
    NullSink sink;
    HttpParser p(HttpParser::Kind::Request, &sink);
    std::string raw =
        "POST http://a.test/x HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: "
        "chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"
        "GET http://b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n";
    auto r = p.feed(raw);
    REQUIRE(r.status == HttpParser::Status::HeadComplete);
    CHECK(p.head().method == "POST");
    CHECK(p.head().target == "http://a.test/x");
    CHECK(p.head().chunked);
    std::string_view rest = std::string_view(raw).substr(r.consumed);
    p.resume();
    r = p.feed(rest);
    REQUIRE(r.status == HttpParser::Status::MessageComplete);
    CHECK(sink.body == "abcde");
    rest.remove_prefix(r.consumed);
    p.resume();
    r = p.feed(rest);
    REQUIRE(r.status == HttpParser::Status::HeadComplete);
    CHECK(p.head().target == "http://b.test/");
}

TEST_CASE("hop-by-hop headers", "[unit]") {
    HttpHead h;
    h.headers = {{"Connection", "close, X-Secret"}, {"X-Secret", "1"}, {"Accept", "*/*"}};
    auto tokens = connection_tokens(h);
    CHECK(is_hop_by_hop("connection", tokens));
    CHECK(is_hop_by_hop("Proxy-Authorization", tokens));
    CHECK(is_hop_by_hop("x-secret", tokens));
    CHECK_FALSE(is_hop_by_hop("Accept", tokens));
}

TEST_CASE("proxy Basic authentication", "[unit]") {
    CHECK(base64_decode("dXNlcjpzM2NyZXQ=") == std::optional<std::string>("user:s3cret"));
    CHECK_FALSE(base64_decode("!!"));
    CHECK(basic_auth_ok("Basic dXNlcjpzM2NyZXQ=", "s3cret"));
    CHECK(basic_auth_ok("basic   dXNlcjpzM2NyZXQ=  ", "s3cret"));
    CHECK_FALSE(basic_auth_ok("Basic dXNlcjpzM2NyZXQ=", "other"));
    CHECK_FALSE(basic_auth_ok("Bearer s3cret", "s3cret"));
    CHECK_FALSE(basic_auth_ok("Basic dXNlcg==", "s3cret"));  // no colon
    CHECK_FALSE(token_matches("", ""));
}
