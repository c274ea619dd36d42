// Request rules (policy::InspectionPolicy::decide_request) for one HTTP request: the one place where a
// request's method and target meet its host's rules, for a plain `http://` request through the HTTP
// front-end and for every request read inside a tunnel (inspected TLS, or plain HTTP to a host with rules).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "policy/inspection.hpp"

namespace cordon::proxy {

struct RequestRuling {
    bool allowed = true;
    int status = 0;       // refused: 400 (a target no rule can be matched against) or 403
    std::string reason;   // refused: "bad-request" or "blocked-by-request-rule" (also the X-Proxy-Error)
    std::string rule;     // the request rule that decided; empty when none matched
    std::string source;   // where that rule was written
    std::string message;  // refused: the answer's body
    // Refused by a request rule: the host's deniedDomainReasons text (DecisionPoint::decide_request adds it,
    // and its `cordon: reason:` line to `message`), empty when none matches.
    std::string reason_text;
};

// `target` is the request's path (origin-form, query included); `url` names the request in the message.
RequestRuling rule_request(const policy::InspectionPolicy& inspection, const std::string& host,
                           std::uint16_t port, std::string_view method, std::string_view target,
                           std::string_view url);

// True when any request rule names `host:port`: HTTP to it must be read, never relayed blind.
bool has_request_rules(const policy::InspectionPolicy& inspection, const std::string& host,
                       std::uint16_t port);

}  // namespace cordon::proxy
