// The decision point: one place where a target (host, port) becomes either a refusal or a list of addresses
// to dial. The policy decides on the name before any DNS; then the name is resolved (or taken as an IP
// literal) and every address goes through the address guard. Only addresses that passed are handed to the
// dialer.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/resolver.hpp"

namespace cordon::proxy {

struct Context;

struct Outcome {
    enum class Kind { Allowed, DeniedByPolicy, DeniedByGuard, ResolveFailed };
    Kind kind = Kind::DeniedByPolicy;
    policy::Decision decision;       // the policy's decision on the name (with its rule)
    std::vector<Address> addresses;  // Allowed: the addresses to dial, ports set, in order
    std::string refused_ip;          // DeniedByGuard: the (first) address refused
    std::string guard_class;         // DeniedByGuard: why ("loopback", "link-local", ...)
    ResolveError resolve_error = ResolveError::None;
    // Allowed through the parent proxy: `addresses` are the parent's (the target's name goes to it
    // unresolved in a CONNECT).
    bool via_parent = false;

    bool allowed() const { return kind == Kind::Allowed; }
    // The audit log's / X-Proxy-Error's reason word.
    std::string reason() const;
};

// Rule text and "file:line (where)" for logs and refusal bodies; empty when no rule matched.
std::string rule_text(const policy::Decision& decision);
std::string rule_source(const policy::Decision& decision);

class DecisionPoint {
  public:
    using Callback = std::function<void(Outcome)>;
    explicit DecisionPoint(Context& context) : context_(context) {}

    // Decides `host` (normalised name or IP literal without brackets) and `port`. Calls `done` exactly once,
    // possibly before returning (refusals, IP literals, cached names); cancel() drops a pending callback.
    void decide(const std::string& host, std::uint16_t port, Callback done);
    void cancel() { pending_.reset(); }
    // Starts a new request: last() is empty until decide() is called again.
    void forget() {
        pending_.reset();
        last_ = policy::Decision{};
    }
    // The policy's decision on the target last given to decide() (known before any DNS).
    const policy::Decision& last() const { return last_; }

  private:
    Outcome guard(Outcome outcome, const std::vector<Address>& addresses, std::uint16_t port) const;

    Context& context_;
    std::shared_ptr<void> pending_;
    policy::Decision last_;
};

}  // namespace cordon::proxy
