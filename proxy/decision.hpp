// The decision point: the one decider of the proxy, for what connects, what is asked for inside a
// connection and what is looked up.
//   decide(host, port): a target (host, port) becomes either a refusal or a list of addresses to dial. The
//     policy decides on the name before any DNS; then the name is resolved (or taken as an IP literal) and
//     every address goes through the address guard. Only addresses that passed are handed to the dialer.
//   decide_request(...): one HTTP request (a plain `http://` one, or one inside a tunnel) meets its host's
//     request rules (request_rules.hpp).
//   decide_name(name): a name the jail's DNS stub is asked for, without a port.
// The decisions are written by decision_log.hpp.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/request_rules.hpp"
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

// The policy's decision on a name looked up without a port: allowed when a rule allows it on some port (a
// port-less rule, or a `name:port` rule), with the rule that did; otherwise the denial.
policy::Decision decide_name(const policy::Policy& policy, const std::string& name);

// Rule text and "file:line (where)" for logs and refusal bodies; empty when no rule matched.
std::string rule_text(const policy::Decision& decision);
std::string rule_source(const policy::Decision& decision);
// The refusal's deniedDomainReasons text; empty when none applies.
std::string reason_text(const policy::Decision& decision);

class DecisionPoint {
  public:
    using Callback = std::function<void(Outcome)>;
    explicit DecisionPoint(Context& context) : context_(context) {}

    // Decides `host` (normalised name or IP literal without brackets) and `port`. Calls `done` exactly once,
    // possibly before returning (refusals, IP literals, cached names); cancel() drops a pending callback.
    void decide(const std::string& host, std::uint16_t port, Callback done);
    // Goes on from an allowing `decision` taken elsewhere (an answer on the control channel): resolve, guard.
    void resume(const std::string& host, std::uint16_t port, policy::Decision decision, Callback done);
    // One HTTP request to `host:port` (`target`: its path, query included; `url` names it in a refusal).
    RequestRuling decide_request(const std::string& host, std::uint16_t port, std::string_view method,
                                 std::string_view target, std::string_view url) const;
    // A name the DNS stub is asked for (decide_name above, on the current policy).
    policy::Decision decide_name(const std::string& name) const;
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
