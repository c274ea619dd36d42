// The end-of-run summary of what the proxy refused, grouped by why, with the advice that fits each reason.
#include <algorithm>
#include <string_view>
#include <vector>

#include "proxy/proxy.hpp"

namespace cordon::proxy {

namespace {

std::string upstream_text(const std::string& error) {
    if (error == "nxdomain") return "DNS: no such name (NXDOMAIN)";
    if (error == "dns-timeout") return "DNS: no answer in time";
    if (error == "dns-failure") return "DNS lookup failed";
    if (error == "connect-refused") return "connection refused by the server";
    if (error == "connect-timeout") return "connection timed out";
    if (error == "upstream-timeout") return "the server did not answer in time";
    if (error == "upstream-closed") return "the server closed the connection without answering";
    if (error == "bad-response") return "the server's answer was not valid HTTP";
    return error;
}

}  // namespace

std::string format_refusals(const RefusalSummary& summary) {
    using Why = RefusalSummary::Why;
    using Item = std::pair<std::string, RefusalSummary::Entry>;
    if (summary.hosts.empty()) return "";
    std::vector<Item> items(summary.hosts.begin(), summary.hosts.end());
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& a, const Item& b) { return a.second.count > b.second.count; });
    std::size_t refused = 0, failed = 0, lookups = 0, requests = 0;
    constexpr std::string_view kDns = " (DNS)";  // a name the jail's DNS stub refused (dns_stub.cpp)
    for (const auto& [host, e] : items) {
        bool dns =
            host.size() > kDns.size() && host.compare(host.size() - kDns.size(), kDns.size(), kDns) == 0;
        (e.why == Why::Upstream      ? failed
         : e.why == Why::RequestRule ? requests
         : dns                       ? lookups
                                     : refused) += e.count;
    }

    constexpr std::size_t kMax = 15;  // per section
    auto section = [&](Why why, const std::string& title, auto&& detail, const std::string& advice) {
        std::string out;
        std::size_t n = 0, hosts = 0;
        for (const auto& [host, e] : items) {
            if (e.why != why) continue;
            ++hosts;
            if (n++ < kMax) out += "    " + host + "  x" + std::to_string(e.count) + detail(e) + "\n";
        }
        if (hosts == 0) return std::string();
        if (hosts > kMax) out += "    ... and " + std::to_string(hosts - kMax) + " more host(s)\n";
        return "  " + title + ":\n" + out + (advice.empty() ? "" : "    (" + advice + ")\n");
    };
    // The policy author's reason (deniedDomainReasons), when one matches the host.
    auto why_text = [](const RefusalSummary::Entry& e) {
        return e.reason_text.empty() ? std::string() : "  reason: " + e.reason_text;
    };

    std::string out;
    std::vector<std::string> counts;
    if (refused > 0) counts.push_back(std::to_string(refused) + " connection(s)");
    if (requests > 0) counts.push_back(std::to_string(requests) + " request(s)");
    if (lookups > 0) counts.push_back(std::to_string(lookups) + " DNS lookup(s)");
    if (!counts.empty()) {
        out += "cordon: refused ";
        for (std::size_t i = 0; i < counts.size(); ++i)
            out += (i == 0 ? "" : i + 1 == counts.size() ? " and " : ", ") + counts[i];
        out += ":\n";
    }
    out += section(Why::NotAllowed, "not in the allow list", why_text,
                   "allow with --allow-domain HOST or sandbox.network.allowedDomains; `cordon check HOST` "
                   "explains");
    out += section(
        Why::DeniedByRule, "denied by a deny rule",
        [&](const RefusalSummary::Entry& e) {
            return "  by `" + e.rule + "`" + (e.source.empty() ? "" : " from " + e.source) + why_text(e);
        },
        "a deny rule wins over every allow rule: remove the rule to reach these hosts");
    out += section(
        Why::RequestRule, "refused by a request rule",
        [&](const RefusalSummary::Entry& e) {
            return (e.rule.empty()
                        ? std::string("  no request rule allows them")
                        : "  by `" + e.rule + "`" + (e.source.empty() ? "" : " from " + e.source)) +
                   why_text(e);
        },
        "the host is allowed, its request rules (method and path) refused these; `cordon check` explains "
        "the host, the audit log each request");
    out += section(
        Why::AddressGuard, "refused by the address guard",
        [](const RefusalSummary::Entry& e) {
            bool v6 = e.address.find(':') != std::string::npos;
            return "  resolves to " + e.address + " (" + e.address_class + "); allow with --allow-address " +
                   e.address + (v6 ? "/128" : "/32");
        },
        "or sandbox.network.allowedAddresses; only for addresses you mean the sandbox to reach");
    if (failed > 0) {
        out += "cordon: " + std::to_string(failed) + " allowed connection(s) failed upstream:\n";
        out += section(
            Why::Upstream, "upstream failures",
            [](const RefusalSummary::Entry& e) { return "  " + upstream_text(e.error); }, "");
    }
    return out;
}

}  // namespace cordon::proxy
