// What every connection of one proxy shares: the loop, options, the current policy, the address guard, the
// resolver, the audit log and the metrics. Internal to proxy/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "policy/policy.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/audit_log.hpp"
#include "proxy/fake_addresses.hpp"
#include "proxy/metrics.hpp"
#include "proxy/parent_proxy.hpp"
#include "proxy/proxy.hpp"
#include "proxy/resolver.hpp"

struct uv_loop_s;

namespace cordon::proxy {

class Connection;
class TlsInspector;
class ControlChannel;

struct Context {
    uv_loop_s* loop = nullptr;
    Options options;
    policy::PolicyPtr policy;
    AddressGuard guard;
    std::unique_ptr<Resolver> resolver;
    std::unique_ptr<AuditLog> audit;
    std::unique_ptr<TlsInspector> tls;
    std::optional<ParentProxy> parent;  // allowed connections chain through it (parent_proxy.hpp)  //
                                        // inspected connections (tls_inspector.hpp); null without a CA
    Metrics metrics;
    RefusalSummary refusals;
    // The DNS stub's names and their fake addresses, which the transparent front-end maps back.
    FakeAddresses fake;
    std::uint64_t next_id = 1;
    // Bytes held by half-read request heads across every connection, bounded by kMaxHeadBytes.
    static constexpr std::size_t kMaxHeadBytes = 16 * 1024 * 1024;
    std::size_t head_bytes = 0;
    // Open connections of the port forwards (forward.hpp), which count against options.max_connections with
    // the proxy's own (metrics.connections_active).
    std::size_t forward_connections = 0;
    bool draining = false;
    // The control channel (asks, refused lines), when one is served.
    ControlChannel* control = nullptr;
    // Hands a closed connection back to the proxy, which frees it on the next loop turn.
    std::function<void(Connection*)> retire;
};

}  // namespace cordon::proxy
