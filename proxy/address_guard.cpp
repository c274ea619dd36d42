#include "proxy/address_guard.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>

#include <charconv>
#include <cstring>

#include "policy/syntax.hpp"

namespace cordon::proxy {

namespace {

const sockaddr_in* v4(const Address& a) {
    return reinterpret_cast<const sockaddr_in*>(&a.storage);
}
const sockaddr_in6* v6(const Address& a) {
    return reinterpret_cast<const sockaddr_in6*>(&a.storage);
}

std::uint32_t v4_host_order(const Address& a) {
    return ntohl(v4(a)->sin_addr.s_addr);
}

bool in_v4(std::uint32_t ip, std::uint32_t net, int prefix) {
    std::uint32_t mask = prefix == 0 ? 0 : ~std::uint32_t{0} << (32 - prefix);
    return (ip & mask) == (net & mask);
}

constexpr std::uint32_t ip4(unsigned a, unsigned b, unsigned c, unsigned d) {
    return a << 24 | b << 16 | c << 8 | d;
}

std::optional<std::string> classify_v4(std::uint32_t ip) {
    struct Range {
        std::uint32_t net;
        int prefix;
        const char* what;
    };
    // Ordered so that the most specific name wins where ranges nest.
    static const Range kRanges[] = {
        {ip4(255, 255, 255, 255), 32, "broadcast"},
        {ip4(0, 0, 0, 0), 8, "unspecified"},
        {ip4(127, 0, 0, 0), 8, "loopback"},
        {ip4(169, 254, 0, 0), 16, "link-local"},  // includes the cloud metadata address 169.254.169.254
        {ip4(10, 0, 0, 0), 8, "private"},
        {ip4(172, 16, 0, 0), 12, "private"},
        {ip4(192, 168, 0, 0), 16, "private"},
        {ip4(100, 64, 0, 0), 10, "cgnat"},
        {ip4(224, 0, 0, 0), 4, "multicast"},
        {ip4(240, 0, 0, 0), 4, "reserved"},
        {ip4(192, 0, 0, 0), 24, "reserved"},     // IETF protocol assignments
        {ip4(192, 0, 2, 0), 24, "reserved"},     // TEST-NET-1
        {ip4(198, 51, 100, 0), 24, "reserved"},  // TEST-NET-2
        {ip4(203, 0, 113, 0), 24, "reserved"},   // TEST-NET-3
        {ip4(192, 88, 99, 0), 24, "reserved"},   // 6to4 relay anycast
        {ip4(198, 18, 0, 0), 15, "reserved"},    // benchmarking; also the jail's fake-DNS pool
    };
    for (const auto& r : kRanges) {
        if (in_v4(ip, r.net, r.prefix)) return std::string(r.what);
    }
    return std::nullopt;
}

bool prefix_equal(const std::uint8_t* a, const std::uint8_t* b, int prefix) {
    int full = prefix / 8;
    if (std::memcmp(a, b, static_cast<std::size_t>(full)) != 0) return false;
    int rest = prefix % 8;
    if (rest == 0) return true;
    auto mask = static_cast<std::uint8_t>(0xff << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

std::uint32_t read_be32(const std::uint8_t* p) {
    return std::uint32_t{p[0]} << 24 | std::uint32_t{p[1]} << 16 | std::uint32_t{p[2]} << 8 | p[3];
}

// IPv6 forms that carry an IPv4 address. A refused IPv4 address must not come back dressed as IPv6 (a
// translator, tunnel or the kernel itself may deliver the packet to the IPv4 address): each form is refused
// when the address it carries would be, and otherwise passes as the IPv4 address it names.
// Returns nullopt when `b` is none of these forms, "" when it is one that carries only public addresses (the
// other IPv6 ranges still apply), and "ipv4-embedded" when it carries a refused one or one whose position
// cannot be known.
std::optional<std::string> classify_v4_embedding(const std::uint8_t* b) {
    static const std::uint8_t kZero[12] = {};
    static const std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    static const std::uint8_t kTranslated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
    static const std::uint8_t kNat64[12] = {0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
    static const std::uint8_t kNat64Local[6] = {0x00, 0x64, 0xff, 0x9b, 0x00, 0x01};
    const std::uint32_t last32 = read_be32(b + 12);
    std::uint32_t carried[3];
    std::size_t n = 0;
    if (std::memcmp(b, kMapped, 12) == 0) {
        carried[n++] =
            last32;  // ::ffff:a.b.c.d, IPv4-mapped (RFC 4291 2.5.5.2): sockets dial the IPv4 address
    } else if (std::memcmp(b, kTranslated, 12) == 0) {
        carried[n++] = last32;  // ::ffff:0:a.b.c.d, IPv4-translated (SIIT, RFC 2765 2.1, RFC 7915)
    } else if (std::memcmp(b, kZero, 12) == 0) {
        carried[n++] =
            last32;  // ::a.b.c.d, IPv4-compatible (RFC 4291 2.5.5.1; :: and ::1 are classified before)
    } else if (std::memcmp(b, kNat64, 12) == 0) {
        carried[n++] = last32;  // 64:ff9b::a.b.c.d, NAT64 well-known prefix (RFC 6052: only /96 there)
    } else if (std::memcmp(b, kNat64Local, 6) == 0) {
        // 64:ff9b:1::/48, NAT64 local use (RFC 8215): the operator picks the prefix length (/48 to /96), so
        // where the IPv4 address sits cannot be known. Refused whole; --allow-address opens it.
        return std::string("ipv4-embedded");
    } else if (b[0] == 0x20 && b[1] == 0x02) {
        carried[n++] = read_be32(b + 2);  // 2002:AABB:CCDD::/48, 6to4 (RFC 3056): the relay's IPv4 target
    } else if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
        // 2001:0:SSSS:SSSS:flags:port:CCCC:CCCC, Teredo (RFC 4380): the server, and the client inverted.
        carried[n++] = read_be32(b + 4);
        carried[n++] = ~last32;
    }
    // PREFIX:0:5efe:a.b.c.d (or 200:5efe, the u bit set), ISATAP (RFC 5214) under any /64, 6to4 and Teredo
    // prefixes included: the router of that prefix tunnels to the IPv4 address in the interface identifier.
    if ((b[8] & 0xfc) == 0 && b[9] == 0 && b[10] == 0x5e && b[11] == 0xfe) carried[n++] = last32;
    if (n == 0) return std::nullopt;
    for (std::size_t i = 0; i < n; ++i) {
        if (classify_v4(carried[i])) return std::string("ipv4-embedded");
    }
    return std::string();
}

std::optional<std::string> classify_v6(const std::uint8_t* b) {
    static const std::uint8_t kZero[16] = {};
    if (std::memcmp(b, kZero, 16) == 0) return "unspecified";
    if (std::memcmp(b, kZero, 15) == 0 && b[15] == 1) return "loopback";
    if (b[0] == 0xff) return "multicast";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return "link-local";
    if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0) return "private";  // deprecated site-local
    if ((b[0] & 0xfe) == 0xfc) return "unique-local";

    auto embedded = classify_v4_embedding(b);
    if (embedded && !embedded->empty()) return embedded;
    // The rest of ::/8 (IETF reserved, no global unicast there): nothing legitimate to dial, and any further
    // translator convention a network may use would live here.
    if (!embedded && b[0] == 0) return "reserved";

    struct Range6 {
        std::uint8_t net[16];
        int prefix;
        const char* what;
    };
    static const Range6 kRanges[] = {
        {{0x20, 0x01, 0x0d, 0xb8}, 32, "reserved"},  // documentation
        {{0x01, 0x00}, 64, "reserved"},              // discard-only
        {{0x20, 0x01, 0x00, 0x10}, 28, "reserved"},  // ORCHID
        {{0x20, 0x01, 0x00, 0x20}, 28, "reserved"},  // ORCHIDv2
        {{0x3f, 0xff}, 20, "reserved"},              // documentation (RFC 9637)
    };
    for (const auto& r : kRanges) {
        if (prefix_equal(b, r.net, r.prefix)) return std::string(r.what);
    }
    return std::nullopt;
}

}  // namespace

std::optional<Address> Address::parse(std::string_view ip, std::uint16_t port) {
    if (ip.empty() || ip.size() > INET6_ADDRSTRLEN) return std::nullopt;
    std::string text(ip);
    Address a;
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage);
    if (inet_pton(AF_INET, text.c_str(), &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons(port);
        a.length = sizeof(sockaddr_in);
        return a;
    }
    auto* s6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
    if (inet_pton(AF_INET6, text.c_str(), &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(port);
        a.length = sizeof(sockaddr_in6);
        return a;
    }
    return std::nullopt;
}

Address Address::from_sockaddr(const sockaddr* sa, socklen_t len) {
    Address a;
    if (len > static_cast<socklen_t>(sizeof(a.storage))) len = sizeof(a.storage);
    std::memcpy(&a.storage, sa, static_cast<std::size_t>(len));
    a.length = len;
    return a;
}

std::uint16_t Address::port() const {
    if (family() == AF_INET) return ntohs(v4(*this)->sin_port);
    if (family() == AF_INET6) return ntohs(v6(*this)->sin6_port);
    return 0;
}

void Address::set_port(std::uint16_t port) {
    if (family() == AF_INET) reinterpret_cast<sockaddr_in*>(&storage)->sin_port = htons(port);
    if (family() == AF_INET6) reinterpret_cast<sockaddr_in6*>(&storage)->sin6_port = htons(port);
}

std::string Address::ip() const {
    char buf[INET6_ADDRSTRLEN] = {};
    if (family() == AF_INET) inet_ntop(AF_INET, &v4(*this)->sin_addr, buf, sizeof buf);
    if (family() == AF_INET6) inet_ntop(AF_INET6, &v6(*this)->sin6_addr, buf, sizeof buf);
    return buf;
}

std::string Address::to_string() const {
    if (family() == AF_INET6) return "[" + ip() + "]:" + std::to_string(port());
    return ip() + ":" + std::to_string(port());
}

bool Address::same_ip(const Address& other) const {
    Address a = unmapped(), b = other.unmapped();
    if (a.family() != b.family()) return false;
    if (a.family() == AF_INET) return v4(a)->sin_addr.s_addr == v4(b)->sin_addr.s_addr;
    if (a.family() == AF_INET6) return std::memcmp(&v6(a)->sin6_addr, &v6(b)->sin6_addr, 16) == 0;
    return false;
}

Address Address::unmapped() const {
    if (family() != AF_INET6) return *this;
    const auto* s6 = v6(*this);
    if (!IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) return *this;
    Address a;
    auto* s4 = reinterpret_cast<sockaddr_in*>(&a.storage);
    s4->sin_family = AF_INET;
    s4->sin_port = s6->sin6_port;
    std::memcpy(&s4->sin_addr, s6->sin6_addr.s6_addr + 12, 4);
    a.length = sizeof(sockaddr_in);
    return a;
}

std::optional<Cidr> Cidr::parse(std::string_view text) {
    auto range = policy::parse_cidr(text);
    if (std::holds_alternative<std::string>(range)) return std::nullopt;
    return from(std::get<policy::AddressRange>(range));
}

Cidr Cidr::from(const policy::AddressRange& range) {
    Cidr c;
    c.family = range.family;
    c.prefix = range.prefix;
    std::memcpy(c.bytes, range.bytes.data(), sizeof c.bytes);
    return c;
}

bool Cidr::contains(const Address& address) const {
    Address a = address.unmapped();
    if (a.family() != family) return false;
    const auto* ip = family == AF_INET ? reinterpret_cast<const std::uint8_t*>(&v4(a)->sin_addr)
                                       : reinterpret_cast<const std::uint8_t*>(&v6(a)->sin6_addr);
    return prefix_equal(ip, bytes, prefix);
}

std::optional<std::string> AddressGuard::classify(const Address& address) {
    Address a = address.unmapped();
    if (a.family() == AF_INET) return classify_v4(v4_host_order(a));
    if (a.family() == AF_INET6) return classify_v6(v6(a)->sin6_addr.s6_addr);
    return "reserved";
}

void AddressGuard::add_own_listener(const Address& address) {
    Address a = address.unmapped();
    bool unspecified = classify(a) == std::optional<std::string>("unspecified");
    if (!unspecified) {
        own_.push_back(a);
        return;
    }
    // Listening on 0.0.0.0 or :: means every local address reaches the proxy.
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) return;
    for (ifaddrs* i = list; i; i = i->ifa_next) {
        if (!i->ifa_addr) continue;
        int fam = i->ifa_addr->sa_family;
        if (fam != AF_INET && fam != AF_INET6) continue;
        Address local = Address::from_sockaddr(
            i->ifa_addr, fam == AF_INET ? sizeof(sockaddr_in) : static_cast<socklen_t>(sizeof(sockaddr_in6)));
        local.set_port(a.port());
        own_.push_back(local);
    }
    freeifaddrs(list);
    own_.push_back(a);
}

bool AddressGuard::is_own_listener(const Address& address) const {
    bool loopback = classify(address) == std::optional<std::string>("loopback");
    for (const auto& own : own_) {
        if (own.port() != address.port()) continue;
        if (own.same_ip(address)) return true;
        // 127.0.0.0/8 all reaches a wildcard or loopback listener on this port.
        if (loopback && own.family() == address.unmapped().family()) {
            auto what = classify(own);
            if (what == std::optional<std::string>("loopback") ||
                what == std::optional<std::string>("unspecified"))
                return true;
        }
    }
    return false;
}

std::optional<std::string> AddressGuard::check(const Address& address) const {
    // Never: a connection from the proxy to itself would loop until the connection limit.
    if (is_own_listener(address)) return "proxy-itself";
    auto what = classify(address);
    if (!what) return std::nullopt;
    for (const auto& cidr : allowed_) {
        if (cidr.contains(address)) return std::nullopt;
    }
    return what;
}

}  // namespace cordon::proxy
