// The resolver's cache: name -> addresses, each entry kept for the smallest TTL of its answers (bounded above
// and below), the whole cache bounded in entries (the entry closest to expiry goes first). Pure; time is
// passed in.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "proxy/address_guard.hpp"

namespace cordon::proxy {

class DnsCache {
  public:
    using Clock = std::chrono::steady_clock;

    explicit DnsCache(std::size_t max_entries = 4096,
                      std::chrono::seconds max_ttl = std::chrono::seconds(300))
        : max_entries_(max_entries), max_ttl_(max_ttl) {}

    // The cached addresses for `name` if its entry has not expired at `now`.
    std::optional<std::vector<Address>> find(const std::string& name, Clock::time_point now);
    // Stores `addresses` for `ttl` (clamped to [0, max_ttl]); a TTL of 0 is not cached.
    void store(const std::string& name, std::vector<Address> addresses, std::chrono::seconds ttl,
               Clock::time_point now);
    std::size_t size() const { return entries_.size(); }

  private:
    struct Entry {
        std::vector<Address> addresses;
        Clock::time_point expires;
    };
    void evict(Clock::time_point now);

    std::size_t max_entries_;
    std::chrono::seconds max_ttl_;
    std::map<std::string, Entry> entries_;
};

}  // namespace cordon::proxy
