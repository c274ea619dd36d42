// The one writer of decision lines (decision_log.hpp).
#include "proxy/decision_log.hpp"

#include "proxy/context.hpp"
#include "proxy/control_channel.hpp"

namespace cordon::proxy {

namespace {
constexpr std::size_t kMaxRefusedHosts = 10'000;
}

void record_decision(Context& context, const DecisionEvent& e) {
    context.metrics.count_request(e.proto, e.decision, e.reason);
    if (!e.enforced) ++context.metrics.would_refuse[e.reason];
    if (context.audit) context.audit->decision(e);
    if (context.control && e.decision == "deny" && e.enforced) context.control->refused(e);
}

void record_decision(Context& context, const DnsEvent& e) {
    context.metrics.count_request("dns", e.decision, e.reason);
    if (context.audit) context.audit->dns(e);
}

void record_decision(Context& context, const WriteEvent& e) {
    if (context.audit) context.audit->write(e);
    if (context.control) context.control->refused(e);
}

RefusalSummary::Entry& count_refused(Context& context, const std::string& key,
                                     const std::string& overflow_key) {
    auto& hosts = context.refusals.hosts;
    auto& entry = hosts.size() >= kMaxRefusedHosts && !hosts.count(key) ? hosts[overflow_key] : hosts[key];
    ++entry.count;
    return entry;
}

void count_refused_request(Context& context, const std::string& host, std::uint16_t port,
                           const std::string& rule, const std::string& source,
                           const std::string& reason_text) {
    auto& e = count_refused(context, host + ":" + std::to_string(port), "(other hosts)");
    e.why = RefusalSummary::Why::RequestRule;
    e.rule = rule;
    e.source = source;
    e.reason_text = reason_text;
    e.error.clear();
}

}  // namespace cordon::proxy
