#include <catch2/catch.hpp>

#include "proxy/auth.hpp"
#include "proxy/http_parser.hpp"
#include "proxy/socks5.hpp"
#include "proxy/tls_inspector.hpp"

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
    // Exactly `chunked`: no other coding before it, no second header, no list.
    CHECK(parse_error(h + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n") ==
          "Transfer-Encoding other than chunked");
    CHECK(parse_error(h + "Transfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n") != "");
    CHECK(parse_error(h + "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n") != "");
    CHECK(parse_error(h + "Transfer-Encoding: CHUNKED\r\n\r\n0\r\n\r\n") == "");
    CHECK(parse_error(h + "Transfer-Encoding:  chunked \r\n\r\n0\r\n\r\n") == "");
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

namespace {
// Drives a parser the way the front-end does (resume after each pause) and counts the steps: the parser's
// contract is that every step either consumes bytes, passes one of a message's two pauses, or ends.
int drive(HttpParser& parser, std::string in, HttpParser::Status& last) {
    int steps = 0;
    while (!in.empty() && steps < 1000) {
        ++steps;
        auto r = parser.feed(in);
        last = r.status;
        if (r.status == HttpParser::Status::Ok) break;
        if (r.status == HttpParser::Status::Error) break;
        in.erase(0, r.consumed);
        parser.resume();
    }
    return steps;
}
}  // namespace

TEST_CASE("HTTP parser loops always progress: Upgrade and pipelined CONNECT end instead of pausing forever",
          "[unit]") {
    NullSink sink;
    for (std::string bytes : {
             std::string(
                 "GET http://good/hello HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nX"),
             std::string("GET http://good/ HTTP/1.1\r\n\r\nCONNECT x:443 HTTP/1.1\r\n\r\nX"),
             std::string("CONNECT x:443 HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n"),
         }) {
        HttpParser parser(HttpParser::Kind::Request, &sink);
        HttpParser::Status last = HttpParser::Status::Ok;
        int steps = drive(parser, bytes, last);
        CHECK(steps < 10);
        CHECK(last == HttpParser::Status::Error);
        CHECK(parser.feed("more").status == HttpParser::Status::Error);  // terminal
    }
    HttpParser parser(HttpParser::Kind::Request, &sink);
    auto r = parser.feed("GET http://good/ HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    REQUIRE(r.status == HttpParser::Status::HeadComplete);
    CHECK(parser.head().upgrade);
    HttpParser connect(HttpParser::Kind::Request, &sink);
    REQUIRE(connect.feed("CONNECT x:443 HTTP/1.1\r\n\r\n").status == HttpParser::Status::HeadComplete);
    CHECK_FALSE(connect.head().upgrade);

    HttpParser response(HttpParser::Kind::Response, &sink);
    HttpParser::Status last = HttpParser::Status::Ok;
    CHECK(drive(response, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
                last) < 10);
}

TEST_CASE("HTTP heads are bounded as a whole and their errors say what was wrong", "[unit]") {
    NullSink sink;
    std::string head = "GET http://good/ HTTP/1.1\r\n";
    for (int i = 0; i < 100; ++i)
        head += "X-Fill-" + std::to_string(i) + ": " + std::string(1000, 'a') + "\r\n";
    HttpParser big(HttpParser::Kind::Request, &sink);
    REQUIRE(big.feed(head + "\r\n").status == HttpParser::Status::Error);
    CHECK(big.error_status() == 431);
    CHECK(big.error() == "request head larger than 64 KiB");

    std::string many = "GET http://good/ HTTP/1.1\r\n";
    for (int i = 0; i < 300; ++i)
        many += "X-" + std::to_string(i) + ": 1\r\n";
    HttpParser lines(HttpParser::Kind::Request, &sink);
    REQUIRE(lines.feed(many + "\r\n").status == HttpParser::Status::Error);
    CHECK(lines.error() == "more than 256 header lines");
    CHECK(lines.error_status() == 400);

    HttpParser partial(HttpParser::Kind::Request, &sink);
    REQUIRE(partial.feed("GET http://good/ HTTP/1.1\r\nX-A: " + std::string(5000, 'b')).status ==
            HttpParser::Status::Ok);
    CHECK(partial.head_size() > 5000);
}

TEST_CASE("Connection never makes framing headers or Host hop-by-hop", "[unit]") {
    HttpHead h;
    h.headers = {{"Connection", "Content-Length, Host, Transfer-Encoding, X-Drop"}};
    auto tokens = connection_tokens(h);
    CHECK(tokens == std::vector<std::string>{"X-Drop"});
    CHECK_FALSE(is_hop_by_hop("Host", tokens));
    CHECK_FALSE(is_hop_by_hop("Content-Length", tokens));
    CHECK(is_hop_by_hop("x-drop", tokens));
}

TEST_CASE("a Host header names the request's host and port or it does not", "[unit]") {
    // The one check behind both front-ends' refusals (400 for absolute-form requests, 421 inside an inspected
    // tunnel).
    CHECK(host_header_names("api.test", "api.test", 8443));  // no port: the request's
    CHECK(host_header_names("API.Test.", "api.test", 443));  // normalised as the policy does
    CHECK(host_header_names("api.test:443", "api.test", 443));
    CHECK(host_header_names("[::1]:443", "::1", 443));
    CHECK(host_header_names("[::1]", "::1", 80));
    CHECK(host_header_names("::1", "::1", 80));  // a bare IPv6 literal is never split
    CHECK(host_header_names("0x7f.1", "127.0.0.1", 80));
    CHECK_FALSE(host_header_names("api.test:444", "api.test", 443));
    CHECK_FALSE(host_header_names("other.test", "api.test", 443));
    CHECK_FALSE(host_header_names("api.test:x", "api.test", 443));
    CHECK_FALSE(host_header_names("api.test:", "api.test", 443));
    CHECK_FALSE(host_header_names("api.test:0", "api.test", 443));
    CHECK_FALSE(host_header_names("api.test:99999", "api.test", 443));
    CHECK_FALSE(host_header_names("", "api.test", 443));
    CHECK_FALSE(host_header_names(":443", "api.test", 443));
    CHECK_FALSE(host_header_names("[::1", "::1", 443));
    CHECK_FALSE(host_header_names("[::1]x", "::1", 443));
    CHECK_FALSE(host_header_names("[[::1]]", "::1", 443));  // the HTTP front-end let this one through
    CHECK_FALSE(host_header_names("api.test@evil.test", "api.test", 443));
    CHECK_FALSE(host_header_names("user@api.test", "api.test", 443));
}

TEST_CASE("proxy_answer: one shape for every answer the proxy gives itself", "[unit]") {
    CHECK(proxy_answer(403, "blocked-by-request-rule", "no\n", true, false) ==
          "HTTP/1.1 403 Forbidden\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n"
          "X-Proxy-Error: blocked-by-request-rule\r\n\r\nno\n");
    // HEAD: the length of the body that is not sent; a final answer closes.
    CHECK(proxy_answer(502, "upstream-failure", "why\n", false, true) ==
          "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nContent-Length: 4\r\n"
          "X-Proxy-Error: upstream-failure\r\nConnection: close\r\n\r\n");
    CHECK(proxy_answer(200, "", "", true, false, "Connection established") ==
          "HTTP/1.1 200 Connection established\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n");
}

TEST_CASE("secrets go into the headers that carry credentials only", "[unit]") {
    Options::Secret s{"T", "sentinel", "value", {"api.test"}, {"X-Custom-Auth"}};
    for (const char* name : {"Authorization", "authorization", "Cookie", "X-Api-Key", "x-auth-token",
                             "Private-Token", "Api-Key", "Token", "X-Custom-Auth", "x-custom-auth"})
        CHECK(TlsInspector::carries_credentials(s, name));
    for (const char* name :
         {"Origin", "Referer", "User-Agent", "X-Tokens", "Token-Type", "Set-Cookie", "X-Other"})
        CHECK_FALSE(TlsInspector::carries_credentials(s, name));
}
