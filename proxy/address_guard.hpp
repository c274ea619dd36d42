// The address guard: after a name was allowed and resolved, every address is checked here before the proxy
// dials it (DESIGN.md, choice 3). Addresses that reach the host, its private networks or cloud metadata are
// refused unless an --allow-address CIDR covers them; the proxy's own listeners are refused always (a proxy
// loop).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::proxy {

// An IPv4 or IPv6 address with a port, small enough to copy around.
struct Address {
    sockaddr_storage storage{};
    socklen_t length = 0;

    static std::optional<Address> parse(std::string_view ip, std::uint16_t port = 0);  // literal, no brackets
    static Address from_sockaddr(const sockaddr* sa, socklen_t len);
    int family() const { return storage.ss_family; }
    std::uint16_t port() const;
    void set_port(std::uint16_t port);
    const sockaddr* sa() const { return reinterpret_cast<const sockaddr*>(&storage); }
    std::string ip() const;         // "1.2.3.4" or "::1"
    std::string to_string() const;  // "1.2.3.4:80" or "[::1]:80"
    bool same_ip(const Address& other) const;
    // A v4-mapped IPv6 address (::ffff:a.b.c.d) becomes the IPv4 address it stands for; others are unchanged.
    Address unmapped() const;
};

// A CIDR range, `10.0.0.0/8`, `::1/128`, or a bare address (a /32 or /128).
struct Cidr {
    int family = AF_INET;
    std::uint8_t bytes[16]{};
    int prefix = 0;

    static std::optional<Cidr> parse(std::string_view text);  // policy::parse_cidr's grammar
    static Cidr from(const policy::AddressRange& range);
    bool contains(const Address& address) const;
};

class AddressGuard {
  public:
    // `allowed` are the --allow-address ranges.
    explicit AddressGuard(std::vector<Cidr> allowed = {}) : allowed_(std::move(allowed)) {}

    void set_allowed(std::vector<Cidr> allowed) { allowed_ = std::move(allowed); }
    // A listening address of this proxy (with its port): never dialled, whatever --allow-address says.
    void add_own_listener(const Address& address);

    // Empty when the address may be dialled; otherwise the class that refused it ("loopback", "link-local",
    // "private", "cgnat", "multicast", "unspecified", "broadcast", "reserved", "unique-local",
    // "ipv4-embedded", "proxy-itself").
    std::optional<std::string> check(const Address& address) const;

    // The class of an address regardless of --allow-address: empty for a public unicast address.
    static std::optional<std::string> classify(const Address& address);

  private:
    bool is_own_listener(const Address& address) const;

    std::vector<Cidr> allowed_;
    std::vector<Address> own_;  // unspecified listen addresses expand to every local interface address
};

}  // namespace cordon::proxy
