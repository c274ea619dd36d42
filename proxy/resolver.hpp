// Asynchronous name resolution with c-ares on the proxy's libuv loop: A and AAAA answers, a TTL-honouring
// bounded cache, concurrent lookups of one name coalesced. Callbacks run on the loop, never inside resolve().
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "proxy/address_guard.hpp"
#include "proxy/dns_cache.hpp"

struct uv_loop_s;

namespace cordon::proxy {

enum class ResolveError { None, NotFound, Failed, Timeout, Cancelled };
const char* to_string(ResolveError error);  // "", "nxdomain", "dns-failure", "dns-timeout", "cancelled"

struct ResolveResult {
    ResolveError error = ResolveError::None;
    std::vector<Address> addresses;  // ports are 0
    std::chrono::microseconds latency{0};
    bool cached = false;
};

class Resolver {
  public:
    using Callback = std::function<void(ResolveResult)>;

    // `servers`: "IP" or "IP:PORT" or "[v6]:PORT"; empty = the system's resolv.conf. Throws
    // std::runtime_error for a bad server or when c-ares cannot start.
    static std::unique_ptr<Resolver> create(uv_loop_s* loop, const std::vector<std::string>& servers);

    // The cached answer for `name`, if one is fresh.
    virtual std::optional<std::vector<Address>> cached(const std::string& name) = 0;
    // Resolves `name` (lowercase, no trailing dot) through DNS. The returned token cancels the callback when
    // destroyed or reset (the lookup itself may still finish and fill the cache).
    virtual std::shared_ptr<void> resolve(const std::string& name, Callback callback) = 0;
    // Closes the c-ares sockets and handles; pending callbacks get ResolveError::Cancelled.
    virtual void close() = 0;
    virtual ~Resolver() = default;
};

// Turns a `--dns-server` value into c-ares's server list syntax; empty on a malformed value.
std::string dns_server_to_csv(const std::string& server);

}  // namespace cordon::proxy
