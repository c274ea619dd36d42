// The HTTP front-end against a fake pipeline (fake_pipeline.hpp): no sockets, no loop, no policy. What it
// asks the pipeline to decide, the verdicts it concludes with, and the bytes it writes to each side.
#include <catch2/catch.hpp>

#include "proxy/http_frontend.hpp"
#include "tests/proxy/fake_pipeline.hpp"

using namespace cordon::proxy;
using cordon::proxy::testing::FakePipeline;
using Phase = Pipeline::Phase;

namespace {

struct Fixture {
    FakePipeline pipeline;
    HttpFrontEnd front{pipeline};
    Fixture() { pipeline.front = &front; }
};

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("http front-end: an absolute-form GET is decided, forwarded in origin-form, its response relayed") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends(
        "GET http://Example.COM/a//b?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Hop\r\n"
        "X-Hop: 1\r\nProxy-Connection: keep-alive\r\nProxy-Authorization: Basic eDp5\r\nAccept: */*\r\n\r\n");
    REQUIRE(p.decided.size() == 1);
    CHECK(p.decided[0] == std::pair<std::string, std::uint16_t>{"example.com", 80});
    CHECK(p.proto() == Pipeline::Proto::Http);
    CHECK(p.request().method == "GET");
    CHECK(p.request().path == "/a//b?q=1");
    // The host's request rules were asked, with the path as sent.
    REQUIRE(p.rule_calls.size() == 1);
    CHECK(p.rule_calls[0].host == "example.com");
    CHECK(p.rule_calls[0].target == "/a//b?q=1");
    CHECK(p.to_upstream.empty());  // nothing goes out before the decision

    p.allow();
    CHECK(p.phase() == Phase::Exchange);
    CHECK(p.to_upstream == "GET /a//b?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\n\r\n");
    REQUIRE(p.lines.size() == 1);
    CHECK(p.lines[0].verdict.kind == Verdict::Kind::Connected);

    p.upstream_sends("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nKeep-Alive: timeout=5\r\n\r\nhello");
    CHECK(p.to_client == "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
    CHECK(p.phase() == Phase::Reading);  // ready for the next request on the same connection
    CHECK(p.up == p.to_upstream.size());
    CHECK(p.down == p.to_client.size());
}

TEST_CASE("http front-end: keep-alive reuses the upstream for the same target and dials for another") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("GET http://a.test/1 HTTP/1.1\r\nHost: a.test\r\n\r\n");
    p.allow();
    p.upstream_sends("HTTP/1.1 204 No Content\r\n\r\n");
    REQUIRE(p.phase() == Phase::Reading);
    p.client_sends("GET http://a.test/2 HTTP/1.1\r\nHost: a.test\r\n\r\n");
    p.allow();
    CHECK(p.dials == 1);
    p.upstream_sends("HTTP/1.1 204 No Content\r\n\r\n");
    p.client_sends("GET http://b.test/3 HTTP/1.1\r\nHost: b.test\r\n\r\n");
    p.allow();
    CHECK(p.dials == 2);
    CHECK(p.lines.size() == 3);
    CHECK(p.decided.back().first == "b.test");
}

TEST_CASE(
    "http front-end: a chunked request body is re-chunked, a close-delimited response chunked for 1.1") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends(
        "POST http://a.test/up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n");
    p.allow();
    CHECK(contains(p.to_upstream, "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"));
    p.client_sends("2;ext=1\r\nde\r\n0\r\n\r\n");
    CHECK(contains(p.to_upstream, "3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"));  // extensions are not passed on

    p.upstream_sends("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npart one, ");
    p.upstream_sends("part two");
    p.upstream_closes();
    CHECK(p.to_client ==
          "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"
          "a\r\npart one, \r\n8\r\npart two\r\n0\r\n\r\n");
    CHECK_FALSE(p.has_upstream());  // a close-delimited response leaves nothing to reuse
}

TEST_CASE("http front-end: a Content-Length body streams as it comes, framed by the proxy") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("PUT http://a.test/f HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\n01234");
    p.allow();
    CHECK(contains(p.to_upstream, "Content-Length: 10\r\n\r\n01234"));
    p.client_sends("56789");
    CHECK(contains(p.to_upstream, "\r\n\r\n0123456789"));
    p.upstream_sends("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
    CHECK(contains(p.to_client, "HTTP/1.1 201 Created\r\n"));
    CHECK(p.phase() == Phase::Reading);
}

TEST_CASE("http front-end: a denied target gets srt's 403 and the connection stays for the next request") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n");
    p.deny();
    REQUIRE(p.lines.size() == 1);
    CHECK(p.lines[0].verdict.status == 403);
    CHECK(contains(p.to_client, "HTTP/1.1 403 Forbidden\r\n"));
    CHECK(contains(p.to_client, "X-Proxy-Error: blocked-by-allowlist\r\n"));
    CHECK(contains(p.to_client, "Connection blocked by network allowlist\n"));
    CHECK(p.to_upstream.empty());
    CHECK(p.phase() == Phase::Reading);
    p.client_sends("GET http://ok.test/ HTTP/1.1\r\nHost: ok.test\r\n\r\n");
    CHECK(p.decided.back().first == "ok.test");
}

TEST_CASE("http front-end: malformed and unsupported requests are its own refusals, never decided") {
    struct Case {
        const char* request;
        int status;
        const char* says;
    };
    const Case cases[] = {
        {"GET /local HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "origin-form request to the proxy itself"},
        {"GET https://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "go through CONNECT"},
        {"GET http://a.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", 400, "names another host"},
        {"GET http://u:p@a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "credentials in the request URI"},
        {"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
         501, "is not supported"},
        {"CONNECT a.test HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "CONNECT needs host:port"},
        {"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
         400, ""},
        {"GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400, ""},
    };
    for (const auto& c : cases) {
        INFO(c.request);
        Fixture f;
        auto& p = f.pipeline;
        p.client_sends(c.request);
        CHECK(p.decided.empty());
        REQUIRE(p.lines.size() == 1);
        CHECK(p.lines[0].verdict.kind == Verdict::Kind::Rejected);
        CHECK(p.lines[0].verdict.status == c.status);
        CHECK(contains(p.to_client, "HTTP/1.1 " + std::to_string(c.status) + " "));
        CHECK(contains(p.to_client, c.says));
        CHECK(contains(p.to_client, "Connection: close\r\n"));
        CHECK(p.phase() == Phase::Closing);
        CHECK(p.to_upstream.empty());
    }
}

TEST_CASE("http front-end: a request rule's refusal names the rule and goes nowhere") {
    Fixture f;
    auto& p = f.pipeline;
    p.ruling = RequestRuling{false,
                             403,
                             "blocked-by-request-rule",
                             "DELETE a.test/admin/**",
                             "flags --rule",
                             "cordon: refused by a request rule\n",
                             "ask #netops"};
    p.client_sends("DELETE http://a.test/admin/x HTTP/1.1\r\nHost: a.test\r\n\r\n");
    CHECK(p.decided.empty());
    REQUIRE(p.lines.size() == 1);
    CHECK(p.lines[0].verdict.reason == "blocked-by-request-rule");
    CHECK(p.lines[0].rule == "DELETE a.test/admin/**");
    CHECK(p.lines[0].source == "flags --rule");
    CHECK(p.lines[0].method == "DELETE");
    CHECK(p.lines[0].path == "/admin/x");
    // The request's line is the request rule's, with its host's deny reason (Connection::conclude writes it).
    CHECK(p.request().by_request_rule);
    CHECK(p.request().reason_text == "ask #netops");
    CHECK(contains(p.to_client, "HTTP/1.1 403 "));
    CHECK(contains(p.to_client, "X-Proxy-Error: blocked-by-request-rule\r\n"));
    CHECK(p.to_upstream.empty());
}

TEST_CASE("http front-end: a secret's sentinel towards a host outside its injectHosts is refused") {
    Fixture f;
    auto& p = f.pipeline;
    p.context().options.secrets.push_back(
        {"GH_TOKEN", "SENTINEL_123", "real-value", {"api.github.test"}, {}});
    p.client_sends("GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\nX-Leak: SENTINEL_123\r\n\r\n");
    CHECK(p.decided.empty());
    REQUIRE(p.lines.size() == 1);
    CHECK(p.lines[0].verdict.reason == "blocked-by-secret-scope");
    CHECK(contains(p.to_client, "HTTP/1.1 403 "));
    CHECK(contains(p.to_client, "GH_TOKEN"));
    CHECK_FALSE(contains(p.to_client, "real-value"));
}

TEST_CASE("http front-end: --auth-token asks for Proxy-Authorization before anything is decided") {
    Fixture f;
    auto& p = f.pipeline;
    p.context().options.auth_token = "s3cret";
    p.client_sends("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n");
    CHECK(p.decided.empty());
    REQUIRE(p.lines.size() == 1);
    CHECK(p.lines[0].verdict.status == 407);
    CHECK(contains(p.to_client, "HTTP/1.1 407 Proxy Authentication Required\r\n"));
    CHECK(contains(p.to_client, "Proxy-Authenticate: Basic"));
    CHECK(p.phase() == Phase::Closing);
}

TEST_CASE("http front-end: CONNECT is decided on host:port and becomes a tunnel") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("CONNECT [2001:db8::1]:8443 HTTP/1.1\r\nHost: x\r\n\r\n");
    REQUIRE(p.decided.size() == 1);
    CHECK(p.decided[0] == std::pair<std::string, std::uint16_t>{"2001:db8::1", 8443});
    CHECK(p.proto() == Pipeline::Proto::Connect);
    CHECK(p.rule_calls.empty());  // request rules are for the requests inside, not the tunnel
    p.allow();
    CHECK(p.to_client == "HTTP/1.1 200 Connection established\r\n\r\n");
    CHECK(p.tunnels == 1);
    CHECK(p.phase() == Phase::Tunnel);
}

TEST_CASE(
    "http front-end: upstream failures are 502 and 504 with the reason, and the request's line says so") {
    SECTION("closed without answering") {
        Fixture f;
        auto& p = f.pipeline;
        p.client_sends("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n");
        p.allow();
        p.upstream_closes();
        CHECK(contains(p.to_client, "HTTP/1.1 502 "));
        CHECK(contains(p.to_client, "closed the connection without answering"));
        CHECK(p.error == "upstream-closed");
    }
    SECTION("not HTTP") {
        Fixture f;
        auto& p = f.pipeline;
        p.client_sends("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n");
        p.allow();
        p.upstream_sends("SSH-2.0-OpenSSH\r\n");
        CHECK(contains(p.to_client, "HTTP/1.1 502 "));
        CHECK(p.error == "bad-response");
    }
    SECTION("an unasked-for 101") {
        Fixture f;
        auto& p = f.pipeline;
        p.client_sends("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n");
        p.allow();
        p.upstream_sends("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n");
        CHECK(contains(p.to_client, "HTTP/1.1 502 "));
        CHECK_FALSE(contains(p.to_client, "HTTP/1.1 101"));
        CHECK_FALSE(contains(p.to_client, "Upgrade: x"));
    }
    SECTION("the pipeline's failure verdicts") {
        Fixture f;
        auto& p = f.pipeline;
        p.client_sends("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n");
        p.conclude({Verdict::Kind::Failed, "allowed", "dns-timeout", Verdict::kAskFrontEnd, "no answer"});
        CHECK(p.lines.back().verdict.status == 504);
        CHECK(contains(p.to_client, "HTTP/1.1 504 "));
        p.client_sends("GET http://b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n");
        p.conclude({Verdict::Kind::Failed, "allowed", "connect-refused", Verdict::kAskFrontEnd, "refused"});
        CHECK(p.lines.back().verdict.status == 502);
    }
}

TEST_CASE("http front-end: a response that ends before the request body closes the exchange in step") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 100\r\n\r\nabc");
    p.allow();
    p.upstream_sends("HTTP/1.1 413 Payload Too Large\r\nContent-Length: 0\r\n\r\n");
    CHECK(contains(p.to_client, "HTTP/1.1 413 "));
    CHECK(p.phase() == Phase::Closing);  // the two sides are out of step: no next request on it
}

TEST_CASE("http front-end: HTTP/1.0 gets no interim responses and a close-delimited body") {
    Fixture f;
    auto& p = f.pipeline;
    p.client_sends("GET http://a.test/ HTTP/1.0\r\nHost: a.test\r\n\r\n");
    p.allow();
    CHECK(contains(p.to_upstream, "GET / HTTP/1.1\r\n"));
    p.upstream_sends("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nbody");
    p.upstream_closes();
    CHECK(p.to_client == "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody");
}
