#include "proxy/decision.hpp"

#include <algorithm>

#include "policy/host_name.hpp"
#include "policy/syntax.hpp"
#include "proxy/context.hpp"

namespace cordon::proxy {

namespace {

constexpr std::size_t kMaxAddresses = 8;

// The ports named by the policy's allow rules (`name:port`): a name allowed only on a port is still a name
// the jail may look up.
std::vector<std::uint16_t> rule_ports(const policy::Policy& policy) {
    std::vector<std::uint16_t> ports;
    for (const auto& rule : policy.network().allowed_domains) {
        std::string_view text = rule.text;
        constexpr std::string_view kWebFetch = "WebFetch(domain:";
        if (text.substr(0, kWebFetch.size()) == kWebFetch && text.back() == ')')
            text = text.substr(kWebFetch.size(), text.size() - kWebFetch.size() - 1);
        auto parsed = policy::detail::parse_domain_pattern(text);
        if (auto* p = std::get_if<policy::detail::DomainPattern>(&parsed); p && p->port != 0)
            if (std::find(ports.begin(), ports.end(), p->port) == ports.end()) ports.push_back(p->port);
    }
    return ports;
}

}  // namespace

policy::Decision decide_name(const policy::Policy& policy, const std::string& name) {
    policy::Decision any_port = policy.decide_connect(name, 0);
    if (any_port.allowed()) return any_port;
    for (std::uint16_t port : rule_ports(policy)) {
        policy::Decision d = policy.decide_connect(name, port);
        if (d.allowed()) return d;
    }
    return any_port;
}

std::string Outcome::reason() const {
    switch (kind) {
        case Kind::Allowed:
        case Kind::ResolveFailed:
            return std::string(policy::to_string(decision.reason));
        case Kind::DeniedByPolicy:
            return std::string(policy::to_string(decision.reason));
        case Kind::DeniedByGuard:
            return "blocked-by-address-guard";
    }
    return "blocked-by-allowlist";
}

std::string rule_text(const policy::Decision& decision) {
    return decision.rule ? decision.rule->text : "";
}

std::string reason_text(const policy::Decision& decision) {
    return decision.reason_text ? decision.reason_text->text : "";
}

std::string rule_source(const policy::Decision& decision) {
    return decision.rule ? policy::format_source(decision.rule->source) : "";
}

Outcome DecisionPoint::guard(Outcome outcome, const std::vector<Address>& addresses,
                             std::uint16_t port) const {
    // Check every answer; dial only those that pass. A name whose answers are all refused is refused.
    for (Address a : addresses) {
        a = a.unmapped();
        a.set_port(port);
        if (auto why = context_.guard.check(a)) {
            if (outcome.refused_ip.empty()) {
                outcome.refused_ip = a.ip();
                outcome.guard_class = *why;
            }
            continue;
        }
        outcome.addresses.push_back(a);
        if (outcome.addresses.size() == kMaxAddresses) break;  // each may cost a connect timeout
    }
    outcome.kind = outcome.addresses.empty() ? Outcome::Kind::DeniedByGuard : Outcome::Kind::Allowed;
    return outcome;
}

void DecisionPoint::decide(const std::string& host, std::uint16_t port, Callback done) {
    Outcome outcome;
    outcome.decision = context_.policy->decide_connect(host, port);
    last_ = outcome.decision;
    if (!outcome.decision.allowed()) {
        if (context_.options.report_only) {
            // Report-only: go on with the denial as the decision (logged `enforced: false`); the address
            // guard still decides what is dialled.
            resume(host, port, std::move(outcome.decision), std::move(done));
            return;
        }
        outcome.kind = Outcome::Kind::DeniedByPolicy;
        done(std::move(outcome));
        return;
    }
    resume(host, port, std::move(outcome.decision), std::move(done));
}

void DecisionPoint::resume(const std::string& host, std::uint16_t port, policy::Decision decision,
                           Callback done) {
    Outcome outcome;
    outcome.decision = std::move(decision);
    last_ = outcome.decision;
    if (context_.parent && context_.parent->applies(host)) {
        // Chained: the parent resolves the target's name; cordon resolves only the parent's (not guarded:
        // the operator named it, and it is typically on a private network).
        outcome.via_parent = true;
        const ParentProxy& parent = *context_.parent;
        auto with_port = [&parent](std::vector<Address> addresses) {
            for (auto& a : addresses)
                a.set_port(parent.port);
            if (addresses.size() > kMaxAddresses) addresses.resize(kMaxAddresses);
            return addresses;
        };
        if (auto literal = Address::parse(parent.host)) {
            outcome.addresses = with_port({*literal});
            outcome.kind = Outcome::Kind::Allowed;
            done(std::move(outcome));
            return;
        }
        auto* self = this;
        pending_ =
            context_.resolver->resolve(parent.host, [self, outcome = std::move(outcome), with_port,
                                                     done = std::move(done)](ResolveResult result) mutable {
                self->pending_.reset();
                if (result.error != ResolveError::None) {
                    outcome.kind = Outcome::Kind::ResolveFailed;
                    outcome.resolve_error = result.error;
                } else {
                    outcome.kind = Outcome::Kind::Allowed;
                    outcome.addresses = with_port(result.addresses);
                }
                done(std::move(outcome));
            });
        return;
    }
    // An IP literal was allowed by a rule naming it; it still goes through the guard.
    if (auto literal = Address::parse(host)) {
        done(guard(std::move(outcome), {*literal}, port));
        return;
    }
    if (auto cached = context_.resolver->cached(host)) {
        ++context_.metrics.dns_cache_hits;
        done(guard(std::move(outcome), *cached, port));
        return;
    }
    auto* self = this;
    pending_ = context_.resolver->resolve(host, [self, outcome = std::move(outcome), port,
                                                 done = std::move(done)](ResolveResult result) mutable {
        self->pending_.reset();
        if (result.error != ResolveError::Cancelled) self->context_.metrics.observe_dns(result.latency);
        if (result.error != ResolveError::None) {
            outcome.kind = Outcome::Kind::ResolveFailed;
            outcome.resolve_error = result.error;
            done(std::move(outcome));
            return;
        }
        done(self->guard(std::move(outcome), result.addresses, port));
    });
}

policy::Decision DecisionPoint::decide_name(const std::string& name) const {
    return proxy::decide_name(*context_.policy, name);
}

RequestRuling DecisionPoint::decide_request(const std::string& host, std::uint16_t port,
                                            std::string_view method, std::string_view target,
                                            std::string_view url) const {
    auto ruling = rule_request(*context_.policy->network().inspection, host, port, method, target, url);
    // Why a request rule's refusal carries its host's deny reason: the author's reason is about what may go
    // to that host (`"paste.example": "no uploads to paste sites"` over rules that let only GET through);
    // a request that cannot be matched against any rule (400) is malformed, not refused by the policy.
    if (!ruling.allowed && ruling.status == 403)
        if (auto why = context_.policy->reason_for(host, port)) {
            ruling.reason_text = why->text;
            ruling.message += "cordon: reason: " + why->text + "\n";
        }
    return ruling;
}

}  // namespace cordon::proxy
