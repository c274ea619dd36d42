// The DNS stub's fake-address table (fake_addresses.hpp).
#include "proxy/fake_addresses.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace cordon::proxy {

namespace {
constexpr std::uint32_t kV4Base = 0xc6120000U;  // 198.18.0.0
constexpr std::uint8_t kV6Prefix[8] = {0xfd, 0x63, 0x6f, 0x72,
                                       0x64, 0x6f, 0x6e, 0x00};  // fd63:6f72:646f:6e00::/64
}  // namespace

Address FakeAddresses::at(std::uint32_t index, int family) {
    Address a;
    if (family == AF_INET) {
        auto* sin = reinterpret_cast<sockaddr_in*>(&a.storage);
        sin->sin_family = AF_INET;
        sin->sin_addr.s_addr = htonl(kV4Base + index);
        a.length = sizeof(sockaddr_in);
    } else {
        auto* sin6 = reinterpret_cast<sockaddr_in6*>(&a.storage);
        sin6->sin6_family = AF_INET6;
        std::memcpy(sin6->sin6_addr.s6_addr, kV6Prefix, sizeof kV6Prefix);
        std::uint32_t n = htonl(index);
        std::memcpy(sin6->sin6_addr.s6_addr + 12, &n, sizeof n);
        a.length = sizeof(sockaddr_in6);
    }
    return a;
}

std::optional<std::uint32_t> FakeAddresses::index_of(const Address& address) {
    Address a = address.unmapped();
    if (a.family() == AF_INET) {
        std::uint32_t ip = ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr);
        if ((ip & 0xfffe0000U) != kV4Base) return std::nullopt;
        return ip - kV4Base;
    }
    if (a.family() != AF_INET6) return std::nullopt;
    const std::uint8_t* b = reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr.s6_addr;
    if (std::memcmp(b, kV6Prefix, sizeof kV6Prefix) != 0) return std::nullopt;
    for (int i = 8; i < 12; ++i)
        if (b[i] != 0) return std::nullopt;
    std::uint32_t n;
    std::memcpy(&n, b + 12, sizeof n);
    n = ntohl(n);
    if (n > kCapacity) return std::nullopt;
    return n;
}

bool FakeAddresses::in_pool(const Address& address) {
    Address a = address.unmapped();
    if (a.family() == AF_INET)
        return (ntohl(reinterpret_cast<const sockaddr_in*>(&a.storage)->sin_addr.s_addr) & 0xfffe0000U) ==
               kV4Base;
    if (a.family() != AF_INET6) return false;
    return std::memcmp(reinterpret_cast<const sockaddr_in6*>(&a.storage)->sin6_addr.s6_addr, kV6Prefix,
                       sizeof kV6Prefix) == 0;
}

std::optional<Address> FakeAddresses::assign(const std::string& name, int family) {
    auto it = indexes_.find(name);
    std::uint32_t index;
    if (it != indexes_.end()) {
        index = it->second;
    } else {
        if (names_.size() >= kCapacity) return std::nullopt;
        names_.push_back(name);
        index = static_cast<std::uint32_t>(names_.size());
        indexes_.emplace(name, index);
    }
    return at(index, family);
}

std::optional<std::string> FakeAddresses::name_for(const Address& address) const {
    auto index = index_of(address);
    if (!index || *index == 0 || *index > names_.size()) return std::nullopt;
    return names_[*index - 1];
}

}  // namespace cordon::proxy
