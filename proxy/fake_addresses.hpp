// The DNS stub's fake addresses (docs/DESIGN.md, choice 2): a name the policy could allow gets one address
// from 198.18.0.0/15 (RFC 2544 benchmarking space, never routed) and the same index in the IPv6 pool
// fd63:6f72:646f:6e00::/64 (a ULA /64 whose global ID and subnet spell "cordon"), stable for the name during
// the run. The transparent front-end maps an original destination back to the name: the proxy then resolves
// the name itself and dials what passed the guard, never the address the client used.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "proxy/address_guard.hpp"

namespace cordon::proxy {

class FakeAddresses {
  public:
    // 198.18.0.0/15 holds 131072 addresses; the first (198.18.0.0) is not handed out.
    static constexpr std::uint32_t kCapacity = (1U << 17) - 1;

    // The address of `name` (normalised) in `family` (AF_INET or AF_INET6), allocated on first use;
    // nullopt when the pool is exhausted.
    std::optional<Address> assign(const std::string& name, int family);
    // The name behind a fake address; nullopt for any other address (a real one, or a free fake one).
    std::optional<std::string> name_for(const Address& address) const;
    // True for an address in either pool, assigned or not.
    static bool in_pool(const Address& address);
    std::size_t size() const { return names_.size(); }

  private:
    static Address at(std::uint32_t index, int family);
    static std::optional<std::uint32_t> index_of(const Address& address);

    std::unordered_map<std::string, std::uint32_t> indexes_;
    std::vector<std::string> names_;  // names_[i - 1] has index i
};

}  // namespace cordon::proxy
