// Prometheus metrics: counters the proxy bumps as it works, rendered as text exposition format, and a small
// HTTP endpoint (`--metrics ADDR:PORT`) that serves them on any path but two: `/healthz` (200 while the
// process serves) and `/readyz` (200 when listening with a policy, 503 while draining), for load balancers
// and Kubernetes probes. `--health ADDR:PORT` serves only those two.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>

struct uv_loop_s;

namespace cordon::proxy {

class AuditLog;

struct Metrics {
    // (proto, decision, reason) -> count
    std::map<std::tuple<std::string, std::string, std::string>, std::uint64_t> requests;
    std::uint64_t connections_total = 0;
    std::uint64_t connections_active = 0;
    std::uint64_t connections_rejected = 0;  // over --max-connections
    std::uint64_t bytes_up = 0, bytes_down = 0;
    std::uint64_t policy_reloads = 0, policy_reload_failures = 0;
    std::uint64_t dns_cache_hits = 0;
    std::uint64_t dns_malformed = 0;      // DNS stub: packets dropped as malformed
    std::uint64_t tls_leaves_minted = 0;  // inspected connections: leaves minted (one per host, cached)
    // DNS lookup latency histogram (seconds).
    static constexpr std::array<double, 9> kDnsBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025,
                                                          0.05,  0.1,    0.5,   2.5};
    std::array<std::uint64_t, kDnsBuckets.size()> dns_bucket_counts{};
    std::uint64_t dns_count = 0;
    double dns_sum = 0;
    // Readiness (/readyz): listening on at least one socket (the policy is loaded before the proxy exists),
    // and not draining.
    std::size_t listeners = 0;
    bool draining = false;
    // Report-only (Options::report_only): /readyz says so; what the policy would have refused, by reason.
    bool report_only = false;
    std::map<std::string, std::uint64_t> would_refuse;
    // The audit log's drop counters are its own (its writer thread counts too); rendered from here.
    const AuditLog* audit = nullptr;

    void count_request(const std::string& proto, const std::string& decision, const std::string& reason) {
        ++requests[{proto, decision, reason}];
    }
    void observe_dns(std::chrono::microseconds latency);
    std::string render() const;
};

class MetricsServer {
  public:
    // Listens on ADDR:PORT; throws std::runtime_error on failure. Returns the bound port via port().
    static std::unique_ptr<MetricsServer> create(uv_loop_s* loop, const std::string& address,
                                                 const Metrics& metrics, bool health_only = false);
    virtual std::uint16_t port() const = 0;
    virtual void close() = 0;
    virtual ~MetricsServer() = default;
};

// Parses "ADDR:PORT", "[v6]:PORT" into ip and port; false when malformed.
bool split_host_port(const std::string& text, std::string& ip, std::uint16_t& port);

}  // namespace cordon::proxy
