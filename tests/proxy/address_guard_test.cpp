#include <catch2/catch.hpp>

#include "proxy/address_guard.hpp"

using cordon::proxy::Address;
using cordon::proxy::AddressGuard;
using cordon::proxy::Cidr;

namespace {
std::string cls(const char* ip) {
    auto a = Address::parse(ip, 443);
    REQUIRE(a);
    return AddressGuard::classify(*a).value_or("public");
}
}  // namespace

TEST_CASE("address guard classifies IPv4 ranges", "[unit]") {
    CHECK(cls("127.0.0.1") == "loopback");
    CHECK(cls("127.255.0.9") == "loopback");
    CHECK(cls("169.254.169.254") == "link-local");
    CHECK(cls("10.0.0.1") == "private");
    CHECK(cls("172.16.5.4") == "private");
    CHECK(cls("172.31.255.255") == "private");
    CHECK(cls("172.32.0.1") == "public");
    CHECK(cls("192.168.1.1") == "private");
    CHECK(cls("100.64.0.1") == "cgnat");
    CHECK(cls("100.127.255.255") == "cgnat");
    CHECK(cls("100.128.0.1") == "public");
    CHECK(cls("224.0.0.1") == "multicast");
    CHECK(cls("0.0.0.0") == "unspecified");
    CHECK(cls("255.255.255.255") == "broadcast");
    CHECK(cls("240.0.0.1") == "reserved");
    CHECK(cls("198.18.0.5") == "reserved");
    CHECK(cls("192.0.2.1") == "reserved");
    CHECK(cls("93.184.216.34") == "public");
    CHECK(cls("8.8.8.8") == "public");
}

TEST_CASE("address guard classifies IPv6 ranges and IPv4-embedding forms", "[unit]") {
    CHECK(cls("::1") == "loopback");
    CHECK(cls("::") == "unspecified");
    CHECK(cls("fe80::1") == "link-local");
    CHECK(cls("fc00::1") == "unique-local");
    CHECK(cls("fd12:3456::1") == "unique-local");
    CHECK(cls("ff02::1") == "multicast");
    CHECK(cls("2001:db8::1") == "reserved");
    CHECK(cls("2606:4700::1111") == "public");
    // v4-mapped is judged as the IPv4 address it carries
    CHECK(cls("::ffff:127.0.0.1") == "loopback");
    CHECK(cls("::ffff:169.254.169.254") == "link-local");
    CHECK(cls("::ffff:8.8.8.8") == "public");
    // NAT64, 6to4, Teredo, IPv4-compatible carrying refused addresses
    CHECK(cls("64:ff9b::7f00:1") == "ipv4-embedded");
    CHECK(cls("64:ff9b::a9fe:a9fe") == "ipv4-embedded");
    CHECK(cls("64:ff9b::808:808") == "public");
    CHECK(cls("64:ff9b:1::1") == "ipv4-embedded");
    CHECK(cls("2002:7f00:1::1") == "ipv4-embedded");
    CHECK(cls("2002:a9fe:a9fe::1") == "ipv4-embedded");
    CHECK(cls("2002:808:808::1") == "public");
    CHECK(cls("2001:0:4136:e378:8000:63bf:80ff:fffe") == "ipv4-embedded");  // client 127.0.0.1 (inverted)
    CHECK(cls("::7f00:1") == "ipv4-embedded");
}

TEST_CASE("every IPv4-embedding IPv6 form is judged by the IPv4 address it carries", "[unit]") {
    // IPv4-translated (SIIT, ::ffff:0:0:0/96): the attack, ::ffff:0:7f00:1 was dialled.
    CHECK(cls("::ffff:0:7f00:1") == "ipv4-embedded");
    CHECK(cls("::ffff:0:127.0.0.1") == "ipv4-embedded");
    CHECK(cls("::ffff:0:a9fe:a9fe") == "ipv4-embedded");
    CHECK(cls("::ffff:0:c0a8:101") == "ipv4-embedded");
    CHECK(cls("::ffff:0:808:808") == "public");
    // IPv4-mapped (::ffff:0:0/96)
    CHECK(cls("::ffff:7f00:1") == "loopback");
    CHECK(cls("::ffff:a00:1") == "private");
    // IPv4-compatible (::/96)
    CHECK(cls("::a00:1") == "ipv4-embedded");
    CHECK(cls("::a9fe:a9fe") == "ipv4-embedded");
    CHECK(cls("::808:808") == "public");
    // NAT64 well-known prefix (64:ff9b::/96) and local-use prefix (64:ff9b:1::/48, position unknowable)
    CHECK(cls("64:ff9b::a00:1") == "ipv4-embedded");
    CHECK(cls("64:ff9b::c0a8:101") == "ipv4-embedded");
    CHECK(cls("64:ff9b:1:7f00:1::") == "ipv4-embedded");
    CHECK(cls("64:ff9b:1::808:808") == "ipv4-embedded");
    CHECK(cls("64:ff9b:1:0808:0808::") == "ipv4-embedded");
    // the rest of ::/8 is reserved: no other translator convention gets through
    CHECK(cls("64:ff9b::1:808:808") == "reserved");
    CHECK(cls("::1:7f00:1") == "reserved");
    CHECK(cls("::fffe:0:7f00:1") == "reserved");
    // 6to4 (2002::/16)
    CHECK(cls("2002:a00:1::1") == "ipv4-embedded");
    CHECK(cls("2002:c0a8:101:1::1") == "ipv4-embedded");
    CHECK(cls("2002:6440:1::1") == "ipv4-embedded");  // CGNAT 100.64.0.1
    // Teredo (2001::/32): server in bits 32-63, client inverted in the last 32 bits; both are judged
    CHECK(cls("2001:0:4136:e378:8000:63bf:f7f7:f7f7") == "public");         // server public, client 8.8.8.8
    CHECK(cls("2001:0:4136:e378:8000:63bf:5601:5601") == "ipv4-embedded");  // client 169.254.169.254
    CHECK(cls("2001:0:a00:1:8000:63bf:f7f7:f7f7") == "ipv4-embedded");      // server 10.0.0.1
    CHECK(cls("2001:0:7f00:1:8000:63bf:f7f7:f7f7") == "ipv4-embedded");     // server 127.0.0.1
    // ISATAP (interface identifier 0:5efe:a.b.c.d or 200:5efe:a.b.c.d under any prefix)
    CHECK(cls("2606:4700:1:2:0:5efe:7f00:1") == "ipv4-embedded");
    CHECK(cls("2606:4700:1:2:200:5efe:a9fe:a9fe") == "ipv4-embedded");
    CHECK(cls("2606:4700:1:2:0:5efe:a00:1") == "ipv4-embedded");
    CHECK(cls("2606:4700:1:2:0:5efe:808:808") == "public");
    CHECK(cls("2002:808:808:1:0:5efe:a00:1") == "ipv4-embedded");  // ISATAP inside a public 6to4 prefix
    CHECK(cls("2001:db8::5efe:808:808") == "reserved");            // other ranges still apply
    CHECK(cls("fe80::5efe:808:808") == "link-local");
    // an IPv4 allow rule does not open the IPv6 dress of the address (fail closed)
    AddressGuard guard({*Cidr::parse("127.0.0.0/8")});
    CHECK(guard.check(*Address::parse("::ffff:0:7f00:1", 80)) == std::optional<std::string>("ipv4-embedded"));
}

TEST_CASE("allow-address ranges let the guard pass, the proxy itself never", "[unit]") {
    auto loop8 = Cidr::parse("127.0.0.0/8");
    REQUIRE(loop8);
    AddressGuard guard({*loop8, *Cidr::parse("fd00::/8")});
    CHECK_FALSE(guard.check(*Address::parse("127.0.0.1", 80)));
    CHECK_FALSE(guard.check(*Address::parse("::ffff:127.0.0.1", 80)));
    CHECK_FALSE(guard.check(*Address::parse("fd00::5", 80)));
    CHECK(guard.check(*Address::parse("169.254.169.254", 80)) == std::optional<std::string>("link-local"));
    CHECK(guard.check(*Address::parse("fc00::5", 80)) == std::optional<std::string>("unique-local"));
    guard.add_own_listener(*Address::parse("127.0.0.1", 3128));
    CHECK(guard.check(*Address::parse("127.0.0.1", 3128)) == std::optional<std::string>("proxy-itself"));
    CHECK_FALSE(guard.check(*Address::parse("127.0.0.1", 3129)));
    CHECK(guard.check(*Address::parse("127.0.0.2", 3128)) == std::optional<std::string>("proxy-itself"));
    guard.add_own_listener(*Address::parse("0.0.0.0", 8080));
    CHECK(guard.check(*Address::parse("127.9.9.9", 8080)) == std::optional<std::string>("proxy-itself"));
}

TEST_CASE("CIDR parsing", "[unit]") {
    CHECK(Cidr::parse("10.0.0.0/8"));
    CHECK(Cidr::parse("10.1.2.3"));
    CHECK(Cidr::parse("::1/128"));
    CHECK(Cidr::parse("[::1]/128"));
    CHECK_FALSE(Cidr::parse("10.0.0.0/33"));
    CHECK_FALSE(Cidr::parse("::/129"));
    CHECK_FALSE(Cidr::parse("10.0.0.0/"));
    CHECK_FALSE(Cidr::parse("10.0.0.0/8x"));
    CHECK_FALSE(Cidr::parse("example.com/8"));
    CHECK_FALSE(Cidr::parse(""));
    auto c = Cidr::parse("192.168.0.0/16");
    CHECK(c->contains(*Address::parse("192.168.200.1")));
    CHECK_FALSE(c->contains(*Address::parse("192.169.0.1")));
    CHECK_FALSE(c->contains(*Address::parse("::1")));
    CHECK(Cidr::parse("0.0.0.0/0")->contains(*Address::parse("1.2.3.4")));
}

TEST_CASE("addresses print and compare", "[unit]") {
    CHECK(Address::parse("::1", 80)->to_string() == "[::1]:80");
    CHECK(Address::parse("1.2.3.4", 8080)->to_string() == "1.2.3.4:8080");
    CHECK(Address::parse("::ffff:1.2.3.4")->same_ip(*Address::parse("1.2.3.4")));
    CHECK_FALSE(Address::parse("not-an-ip"));
    CHECK_FALSE(Address::parse("1.2.3.4.5"));
}
