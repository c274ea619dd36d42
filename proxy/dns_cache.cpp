#include "proxy/dns_cache.hpp"

#include <algorithm>

namespace cordon::proxy {

std::optional<std::vector<Address>> DnsCache::find(const std::string& name, Clock::time_point now) {
    auto it = entries_.find(name);
    if (it == entries_.end()) return std::nullopt;
    if (it->second.expires <= now) {
        entries_.erase(it);
        return std::nullopt;
    }
    return it->second.addresses;
}

void DnsCache::store(const std::string& name, std::vector<Address> addresses, std::chrono::seconds ttl,
                     Clock::time_point now) {
    ttl = std::clamp(ttl, std::chrono::seconds(0), max_ttl_);
    if (ttl.count() == 0 || addresses.empty() || max_entries_ == 0) {
        entries_.erase(name);
        return;
    }
    if (entries_.size() >= max_entries_ && !entries_.count(name)) evict(now);
    entries_[name] = Entry{std::move(addresses), now + ttl};
}

void DnsCache::evict(Clock::time_point now) {
    // Drop everything expired; if nothing was, drop the entry that expires first.
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.expires <= now)
            it = entries_.erase(it);
        else
            ++it;
    }
    if (entries_.size() < max_entries_) return;
    auto first = std::min_element(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) {
        return a.second.expires < b.second.expires;
    });
    if (first != entries_.end()) entries_.erase(first);
}

}  // namespace cordon::proxy
