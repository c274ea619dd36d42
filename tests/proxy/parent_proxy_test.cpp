// The parent proxy's URL and NO_PROXY parsing (parent_proxy.hpp).
#include "proxy/parent_proxy.hpp"

#include <catch2/catch.hpp>

using cordon::proxy::ParentProxy;

TEST_CASE("a parent proxy URL gives host, port (3128 by default) and Basic credentials") {
    auto p = std::get<ParentProxy>(ParentProxy::parse("http://alice:s%40cret@Proxy.Corp:8080/", ""));
    CHECK(p.host == "proxy.corp");
    CHECK(p.port == 8080);
    CHECK(p.authorization == "Basic YWxpY2U6c0BjcmV0");  // alice:s@cret
    auto q = std::get<ParentProxy>(ParentProxy::parse("10.0.0.1", ""));
    CHECK(q.host == "10.0.0.1");
    CHECK(q.port == 3128);
    CHECK(q.authorization.empty());
    auto v6 = std::get<ParentProxy>(ParentProxy::parse("http://[fd00::1]:3129", ""));
    CHECK(v6.host == "fd00::1");
    CHECK(std::holds_alternative<std::string>(ParentProxy::parse("https://proxy:443", "")));
    CHECK(std::holds_alternative<std::string>(ParentProxy::parse("http://bad host:1", "")));
}

TEST_CASE("noProxy: names and their subdomains, .suffix and *.suffix, and * for every host") {
    auto p =
        std::get<ParentProxy>(ParentProxy::parse("http://p:1", "corp.internal, .example.com,*.test.org"));
    CHECK_FALSE(p.applies("corp.internal"));
    CHECK_FALSE(p.applies("a.corp.internal"));
    CHECK(p.applies("xcorp.internal"));
    CHECK_FALSE(p.applies("example.com"));
    CHECK_FALSE(p.applies("www.example.com"));
    CHECK_FALSE(p.applies("a.test.org"));
    CHECK(p.applies("api.github.com"));
    auto all = std::get<ParentProxy>(ParentProxy::parse("http://p:1", "*"));
    CHECK_FALSE(all.applies("anything.com"));
}
