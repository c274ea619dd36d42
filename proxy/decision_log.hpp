// Where every decision goes once it is made: the one writer of decision lines for the whole proxy. A
// connection's requests and the requests inside its inspected tunnel (both Connection::conclude; the latter
// concluded by inspected_requests.hpp) and the DNS stub's names (dns_stub.hpp) all write through here, so
// each is counted in the metrics, written to the audit log and, when refused, told to the control channel and
// the end-of-run summary the same way.
#pragma once

#include <cstdint>
#include <string>

#include "proxy/audit_log.hpp"
#include "proxy/proxy.hpp"

namespace cordon::proxy {

struct Context;

// A connection's or an inner request's decision: metrics, the audit log, and a refusal to the control
// channel's peer.
void record_decision(Context& context, const DecisionEvent& event);
// A DNS stub's answer: metrics and the audit log (`dns` line).
void record_decision(Context& context, const DnsEvent& event);
// A write the jail refused: the audit log (`write` line) and the control channel's peers.
void record_decision(Context& context, const WriteEvent& event);

// The end-of-run summary's entry for `key` ("host:port", "name (DNS)"), counted once more. Bounded: past
// kMaxRefusedHosts distinct keys, refusals count under `overflow_key`, so a client inventing names cannot
// grow the summary without end.
RefusalSummary::Entry& count_refused(Context& context, const std::string& key,
                                     const std::string& overflow_key);
// A request its host's request rules refused (plain `http://`, or inside a tunnel): the summary's entry for
// the host, with the rule (empty when none matched) and the host's deny reason.
void count_refused_request(Context& context, const std::string& host, std::uint16_t port,
                           const std::string& rule, const std::string& source,
                           const std::string& reason_text);

}  // namespace cordon::proxy
