#include <catch2/catch.hpp>

#include "proxy/dns_cache.hpp"
#include "proxy/resolver.hpp"

using namespace cordon::proxy;
using namespace std::chrono_literals;

TEST_CASE("DNS cache honours TTLs", "[unit]") {
    DnsCache cache;
    auto now = DnsCache::Clock::now();
    cache.store("a.test", {*Address::parse("1.2.3.4")}, 10s, now);
    CHECK(cache.find("a.test", now + 9s));
    CHECK_FALSE(cache.find("a.test", now + 10s));
    CHECK_FALSE(cache.find("b.test", now));
    cache.store("zero.test", {*Address::parse("1.2.3.4")}, 0s, now);
    CHECK_FALSE(cache.find("zero.test", now));
}

TEST_CASE("DNS cache clamps TTLs and stays bounded", "[unit]") {
    DnsCache cache(3, 60s);
    auto now = DnsCache::Clock::now();
    cache.store("long.test", {*Address::parse("1.1.1.1")}, 86400s, now);
    CHECK(cache.find("long.test", now + 59s));
    CHECK_FALSE(cache.find("long.test", now + 61s));  // expired entries leave on lookup
    cache.store("x.test", {*Address::parse("1.1.1.9")}, 50s, now);
    cache.store("a.test", {*Address::parse("1.1.1.1")}, 5s, now);
    cache.store("b.test", {*Address::parse("1.1.1.2")}, 30s, now);
    cache.store("c.test", {*Address::parse("1.1.1.3")}, 40s, now);
    CHECK(cache.size() <= 3);
    CHECK(cache.find("c.test", now));
    // the entry closest to expiry went first
    CHECK_FALSE(cache.find("a.test", now));
}

TEST_CASE("dns-server flag values", "[unit]") {
    CHECK(dns_server_to_csv("127.0.0.1") == "127.0.0.1");
    CHECK(dns_server_to_csv("127.0.0.1:5353") == "127.0.0.1:5353");
    CHECK(dns_server_to_csv("[::1]:53") == "[::1]:53");
    CHECK(dns_server_to_csv("::1") == "::1");
    CHECK(dns_server_to_csv("example.com") == "");
    CHECK(dns_server_to_csv("1.2.3.4:99999") == "");
    CHECK(dns_server_to_csv("1.2.3.4:") == "");
}
