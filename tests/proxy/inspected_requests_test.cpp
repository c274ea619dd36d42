// The requests inside an inspected tunnel (proxy/inspected_requests.hpp) and the one HTTP/1.1 forwarder under
// them, against a fake pipeline (fake_pipeline.hpp): no sockets, no TLS. The client's and the upstream's
// plaintext are strings; what each side receives and every decision line concluded are checked.
#include <catch2/catch.hpp>

#include "proxy/inspected_requests.hpp"
#include "proxy/tls_inspector.hpp"
#include "tests/proxy/fake_pipeline.hpp"

using namespace cordon::proxy;
using cordon::proxy::testing::FakePipeline;

namespace {

// One side of the tunnel: what is written to it. A side that fails closes the connection, as the TLS
// transport does (InspectedTunnel::write_all).
struct StringSink final : ByteSink {
    FakePipeline* p = nullptr;
    std::string data;
    bool broken = false;
    bool write(std::string_view bytes) override {
        if (broken) {
            p->close("client: Broken pipe");
            return false;
        }
        data.append(bytes);
        return true;
    }
};

constexpr const char* kSentinel = "CORDON_SENTINEL_0123456789abcdef";
constexpr const char* kValue = "ghp_real_value_0123456789ABCDEFG";  // the same length as the sentinel

struct Fixture {
    FakePipeline p;
    StringSink client, upstream;
    std::unique_ptr<InspectedRequests> r;

    explicit Fixture(bool with_secret = false, std::string host = "api.test") {
        p.request_.host = std::move(host);
        p.request_.port = 443;
        p.phase_ = Pipeline::Phase::Tunnel;
        client.p = upstream.p = &p;
        if (with_secret) {
            auto ca = cordon::certs::Authority::create("test CA");
            REQUIRE(std::holds_alternative<std::shared_ptr<cordon::certs::Authority>>(ca));
            Options::Secret s{"GITHUB_TOKEN", kSentinel, kValue, {"api.test"}, {}};
            auto tls = TlsInspector::create(std::get<std::shared_ptr<cordon::certs::Authority>>(ca), {}, {s});
            REQUIRE(std::holds_alternative<std::unique_ptr<TlsInspector>>(tls));
            p.context_.tls = std::move(std::get<std::unique_ptr<TlsInspector>>(tls));
        }
        r = std::make_unique<InspectedRequests>(p, client, upstream, false);
        p.on_close = [this](const std::string& error) { r->end_in_flight(error); };
    }
    void client_sends(std::string_view bytes) {
        r->receive(bytes);
        r->read();
    }
};

bool contains(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

// The body of a chunked message, de-chunked (the test's own reading, not the proxy's parser).
std::string dechunk(std::string_view body) {
    std::string out;
    for (;;) {
        auto eol = body.find("\r\n");
        REQUIRE(eol != std::string_view::npos);
        std::size_t size = std::stoul(std::string(body.substr(0, eol)), nullptr, 16);
        body.remove_prefix(eol + 2);
        if (size == 0) break;
        out.append(body.substr(0, size));
        REQUIRE(body.substr(size, 2) == "\r\n");
        body.remove_prefix(size + 2);
    }
    return out;
}

std::string body_of(const std::string& message) {
    auto end = message.find("\r\n\r\n");
    REQUIRE(end != std::string::npos);
    return message.substr(end + 4);
}

}  // namespace

TEST_CASE("inspected requests: a Content-Length body and response split at every byte pass whole, one line") {
    const std::string request =
        "POST /up HTTP/1.1\r\nHost: api.test\r\nContent-Length: 11\r\nConnection: keep-alive\r\n\r\nhello "
        "world";
    const std::string response = "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-Up: 1\r\n\r\nok";
    for (std::size_t cut = 0; cut <= request.size(); ++cut) {
        Fixture f;
        f.client_sends(std::string_view(request).substr(0, cut));
        f.client_sends(std::string_view(request).substr(cut));
        INFO("request cut at " << cut);
        REQUIRE(f.upstream.data ==
                "POST /up HTTP/1.1\r\nHost: api.test\r\nContent-Length: 11\r\n\r\nhello world");
        std::size_t rcut = cut % (response.size() + 1);
        CHECK(f.r->upstream_bytes(std::string_view(response).substr(0, rcut)));
        CHECK(f.r->upstream_bytes(std::string_view(response).substr(rcut)));
        CHECK(f.client.data == response);  // relayed as sent
        REQUIRE(f.p.exchanges.size() == 1);
        CHECK(f.p.exchanges[0].allowed);
        CHECK(f.p.exchanges[0].status == 201);
        CHECK(f.p.exchanges[0].url == "https://api.test/up");
        CHECK(f.p.exchanges[0].request_bytes == f.upstream.data.size());
        CHECK(f.p.exchanges[0].response_bytes == response.size());
        CHECK_FALSE(f.p.closed());
        CHECK(f.r->idle());  // ready for the next request
    }
}

TEST_CASE("inspected requests: a chunked body and response split at every byte pass whole, one line") {
    const std::string request =
        "POST /up HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-Trailer: t\r\n\r\n";
    const std::string response =
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
    for (std::size_t cut = 0; cut <= request.size(); ++cut) {
        Fixture f;
        f.client_sends(std::string_view(request).substr(0, cut));
        f.client_sends(std::string_view(request).substr(cut));
        INFO("request cut at " << cut);
        const std::string& up = f.upstream.data;
        REQUIRE(contains(up, "POST /up HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n"));
        CHECK(dechunk(body_of(up)) == "hello world");
        CHECK_FALSE(contains(up, "X-Trailer"));  // trailers are dropped, chunk extensions too
        CHECK_FALSE(contains(up, "ext=1"));
        std::size_t rcut = cut % (response.size() + 1);
        CHECK(f.r->upstream_bytes(std::string_view(response).substr(0, rcut)));
        CHECK(f.r->upstream_bytes(std::string_view(response).substr(rcut)));
        CHECK(f.client.data == response);
        REQUIRE(f.p.exchanges.size() == 1);
        CHECK(f.p.exchanges[0].status == 200);
        CHECK(f.r->idle());
    }
}

TEST_CASE("inspected requests: a head over 64 KiB is refused with 431, nothing reaches the upstream") {
    Fixture f;
    std::string head =
        "GET / HTTP/1.1\r\nHost: api.test\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n";
    f.client_sends(head);
    CHECK(f.upstream.data.empty());
    CHECK(f.client.data.rfind("HTTP/1.1 431 ", 0) == 0);
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK_FALSE(f.p.exchanges[0].allowed);
    CHECK(f.p.exchanges[0].status == 431);
    CHECK(f.p.closed());
}

TEST_CASE(
    "inspected requests: an upstream that closes mid-response gives the request one line with the error") {
    Fixture f;
    f.client_sends("GET /file HTTP/1.1\r\nHost: api.test\r\n\r\n");
    REQUIRE(contains(f.upstream.data, "GET /file HTTP/1.1\r\n"));
    CHECK(f.r->upstream_bytes("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"));
    f.r->upstream_closed();
    CHECK(f.p.closed());
    CHECK(f.p.closed_with == "upstream closed mid-response");
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].allowed);
    CHECK(f.p.exchanges[0].status == 200);
    CHECK(f.p.exchanges[0].error == "upstream closed mid-response");
    f.r->end_in_flight("again");
    CHECK(f.p.exchanges.size() == 1);
}

TEST_CASE("inspected requests: a bad response head from the upstream gives one line with the error") {
    Fixture f;
    f.client_sends("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n");
    CHECK_FALSE(f.r->upstream_bytes("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"));
    CHECK(f.p.closed());
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].status == 502);
    CHECK(contains(f.p.exchanges[0].error, "bad response from upstream"));
}

TEST_CASE("inspected requests: a response head over 64 KiB: nothing of it passes, one line with the error") {
    Fixture f;
    f.client_sends("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n");
    std::string head = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(70 * 1024, 'a') + "\r\n\r\n";
    bool open = true;
    for (std::size_t i = 0; i < head.size() && open; i += 16 * 1024)
        open = f.r->upstream_bytes(std::string_view(head).substr(i, 16 * 1024));
    CHECK_FALSE(open);
    CHECK(f.p.closed());
    CHECK(f.client.data.empty());
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].allowed);
    CHECK(f.p.exchanges[0].status == 502);
    CHECK(contains(f.p.exchanges[0].error, "bad response from upstream"));
}

TEST_CASE("inspected requests: the client gone after forwarding: exactly one line, with the error") {
    SECTION("the connection closes while the response is awaited") {
        Fixture f;
        f.client_sends("GET /slow HTTP/1.1\r\nHost: api.test\r\n\r\n");
        REQUIRE_FALSE(f.upstream.data.empty());
        CHECK(f.p.exchanges.empty());
        f.p.close("client: Connection reset by peer");
        REQUIRE(f.p.exchanges.size() == 1);
        CHECK(f.p.exchanges[0].allowed);
        CHECK(f.p.exchanges[0].status == 502);
        CHECK(f.p.exchanges[0].error == "client: Connection reset by peer");
        f.r->end_in_flight("later");
        CHECK(f.p.exchanges.size() == 1);
    }
    SECTION("writing the response to the client fails") {
        Fixture f;
        f.client_sends("GET /x HTTP/1.1\r\nHost: api.test\r\n\r\n");
        f.client.broken = true;
        CHECK_FALSE(f.r->upstream_bytes("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"));
        CHECK(f.p.closed());
        REQUIRE(f.p.exchanges.size() == 1);
        CHECK(f.p.exchanges[0].status == 200);
        CHECK(f.p.exchanges[0].error == "client: Broken pipe");
    }
}

TEST_CASE("inspected requests: a secret goes into credential headers only, and never comes back") {
    Fixture f(true);
    const std::string s = kSentinel, v = kValue;
    f.client_sends("GET /user HTTP/1.1\r\nHost: api.test\r\nAuthorization: token " + s +
                   "\r\nOrigin: https://" + s + "\r\nX-Api-Key: " + s + "\r\nAccept-Encoding: gzip\r\n\r\n");
    const std::string& up = f.upstream.data;
    CHECK(contains(up, "Authorization: token " + v + "\r\n"));
    CHECK(contains(up, "X-Api-Key: " + v + "\r\n"));
    CHECK(contains(up, "Origin: https://" + s + "\r\n"));  // not a credential header: the sentinel stays
    CHECK_FALSE(contains(up, "gzip"));
    CHECK(contains(up, "Accept-Encoding: identity\r\n"));
    // The upstream reflects the value in a header and in a body split across reads.
    std::string body = "{\"token\":\"" + v + "\"}";
    std::string response = "HTTP/1.1 200 OK\r\nAccess-Control-Allow-Origin: https://" + v +
                           "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (std::size_t i = 0; i < response.size(); i += 7)
        CHECK(f.r->upstream_bytes(std::string_view(response).substr(i, 7)));
    CHECK_FALSE(contains(f.client.data, v));
    CHECK(contains(f.client.data, "Access-Control-Allow-Origin: https://" + s + "\r\n"));
    CHECK(body_of(f.client.data) == "{\"token\":\"" + s + "\"}");
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].status == 200);
}

TEST_CASE("inspected requests: a sentinel towards a host not in injectHosts is refused, nothing sent") {
    Fixture f(true, "other.test");
    f.client_sends("GET / HTTP/1.1\r\nHost: other.test\r\nAuthorization: token " + std::string(kSentinel) +
                   "\r\n\r\n");
    CHECK(f.upstream.data.empty());
    CHECK(f.client.data.rfind("HTTP/1.1 403 ", 0) == 0);
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].reason == "blocked-by-secret-scope");
    CHECK_FALSE(f.p.exchanges[0].allowed);
}

TEST_CASE("inspected requests: Expect: 100-continue while the body is held is answered by cordon") {
    Fixture f(true);
    f.client_sends("PUT /f HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\nExpect: 100-continue\r\n\r\n");
    CHECK(f.client.data == "HTTP/1.1 100 Continue\r\n\r\n");
    CHECK(f.upstream.data.empty());  // held until the body is scanned
    f.client_sends("data");
    // (An inject host is asked for an identity encoding: its responses are scrubbed.)
    CHECK(f.upstream.data ==
          "PUT /f HTTP/1.1\r\nHost: api.test\r\nContent-Length: 4\r\nAccept-Encoding: identity\r\n\r\ndata");
}

TEST_CASE("inspected requests: a sentinel in the held body towards another host is refused before any byte") {
    Fixture f(true, "other.test");
    f.client_sends("POST / HTTP/1.1\r\nHost: other.test\r\nContent-Length: 40\r\n\r\nx=" +
                   std::string(kSentinel) + "abcdef");
    CHECK(f.upstream.data.empty());
    CHECK(f.client.data.rfind("HTTP/1.1 403 ", 0) == 0);
    REQUIRE(f.p.exchanges.size() == 1);
    CHECK(f.p.exchanges[0].reason == "blocked-by-secret-scope");
}
