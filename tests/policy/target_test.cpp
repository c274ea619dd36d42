// parse_target: URLs, host, host:port, [v6]:port, bare IPv6, and malformed input.
#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

static HostPort target(std::string_view text, std::uint16_t default_port = 443) {
    auto result = parse_target(text, default_port);
    if (auto* error = std::get_if<std::string>(&result))
        FAIL("unexpected error for " << text << ": " << *error);
    return std::get<HostPort>(result);
}

static std::string target_error(std::string_view text) {
    auto result = parse_target(text);
    if (std::holds_alternative<HostPort>(result)) FAIL("expected an error for " << text);
    return std::get<std::string>(result);
}

TEST_CASE("URLs take the default port of their scheme", "[target]") {
    CHECK(target("http://example.com/").port == 80);
    CHECK(target("https://example.com/").port == 443);
    CHECK(target("HTTP://Example.COM").host == "example.com");
    CHECK(target("wss://example.com/socket").port == 443);
}

TEST_CASE("URLs with explicit ports, paths, queries and user info", "[target]") {
    auto t = target("https://user:pw@api.example.com:8443/x/y?q=1#f");
    CHECK(t.host == "api.example.com");
    CHECK(t.port == 8443);
    CHECK(target("http://example.com?x").host == "example.com");
}

TEST_CASE("IPv6 in URLs", "[target]") {
    auto t = target("http://[::1]:8080/");
    CHECK(t.host == "::1");
    CHECK(t.port == 8080);
    CHECK(target("https://[2001:DB8::1]/").host == "2001:db8::1");
}

TEST_CASE("host and host:port", "[target]") {
    CHECK(target("example.com").port == 443);
    CHECK(target("example.com", 80).port == 80);
    auto t = target("Example.com.:22");
    CHECK(t.host == "example.com");
    CHECK(t.port == 22);
    CHECK(target("10.0.0.1:5432").host == "10.0.0.1");
}

TEST_CASE("[v6]:port and bare IPv6", "[target]") {
    auto t = target("[::1]:443");
    CHECK(t.host == "::1");
    CHECK(t.port == 443);
    CHECK(target("[fe80::1]").port == 443);
    auto bare = target("2001:db8:0:0:0:0:0:1");
    CHECK(bare.host == "2001:db8::1");
    CHECK(bare.port == 443);
}

TEST_CASE("IDN targets become punycode", "[target]") {
    CHECK(target("https://bücher.de/").host == "xn--bcher-kva.de");
}

TEST_CASE("malformed targets are errors", "[target]") {
    CHECK_THAT(target_error(""), Catch::Contains("empty"));
    CHECK_THAT(target_error("ftp://x.com"), Catch::Contains("scheme"));
    CHECK_THAT(target_error("https://"), Catch::Contains("without a host"));
    CHECK_THAT(target_error("x.com:0"), Catch::Contains("port"));
    CHECK_THAT(target_error("x.com:65536"), Catch::Contains("port"));
    CHECK_THAT(target_error("x.com:abc"), Catch::Contains("port"));
    CHECK_THAT(target_error("[::1"), Catch::Contains("'['"));
    CHECK_THAT(target_error("[::1]x"), Catch::Contains("after ']'"));
    CHECK_THAT(target_error("exa mple.com"), Catch::Contains("not a host"));
    CHECK_THAT(target_error("a..b"), Catch::Contains("invalid host"));
    CHECK_THAT(target_error("[nothex::g]:80"), Catch::Contains("invalid host"));
    CHECK_THAT(target_error("x.com/path"), Catch::Contains("not a host"));
}

}  // namespace cordon::policy::test
