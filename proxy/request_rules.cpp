// Request rules for one HTTP request (request_rules.hpp).
#include "proxy/request_rules.hpp"

#include "policy/syntax.hpp"

namespace cordon::proxy {

RequestRuling rule_request(const policy::InspectionPolicy& inspection, const std::string& host,
                           std::uint16_t port, std::string_view method, std::string_view target,
                           std::string_view url) {
    RequestRuling out;
    // On the path as a server may read it; shapes servers disagree on are refused.
    std::string why_not;
    auto paths = policy::rule_paths(target, why_not);
    if (!paths && target != "*") {
        out.allowed = false;
        out.status = 400;
        out.reason = "bad-request";
        out.message = "cordon: bad request: " + why_not + "\n";
        return out;
    }
    auto verdict = inspection.decide_request(host, port, method, paths.value_or(policy::RulePath{"*", "*"}));
    if (verdict.rule) {
        out.rule = verdict.rule->host.rule.text;
        out.source = policy::format_source(verdict.rule->host.rule.source);
    }
    if (verdict.allowed) return out;
    out.allowed = false;
    out.status = 403;
    out.reason = "blocked-by-request-rule";
    std::string why = verdict.rule ? "blocked by request rule " + out.rule + " from " + out.source
                                   : "no request rule for " + host + " allows " + std::string(method) + " " +
                                         (paths ? paths->separated : "*");
    out.message = "Connection blocked by network allowlist\ncordon: " + std::string(method) + " " +
                  std::string(url) + ": " + why + "\n";
    return out;
}

bool has_request_rules(const policy::InspectionPolicy& inspection, const std::string& host,
                       std::uint16_t port) {
    for (const auto& r : inspection.request_rules)
        if (r.host.matches(host, port)) return true;
    return false;
}

}  // namespace cordon::proxy
