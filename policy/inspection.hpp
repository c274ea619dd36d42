// What cordon does inside connections it terminates (issue 13): which hosts are inspected
// (`sandbox.network.inspect`, srt's `tlsTerminate`), the request rules applied to each request inside
// (`sandbox.network.requestRules`), the parent proxy allowed connections are chained through
// (`sandbox.network.parentProxy`), and the secrets the jail sees only as sentinels (`credentials`). Pure data
// and matching, part of the immutable Policy (NetworkPolicy::inspection).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/host_name.hpp"
#include "policy/policy.hpp"

namespace cordon::policy {

// A host pattern as the domain rules write it (Claude Code's grammar: `*` every name, `*.x` any depth).
struct HostPattern {
    detail::DomainPattern pattern;
    Rule rule;
    // `host` is normalised (as Policy::decide_connect normalises).
    bool matches(std::string_view host, std::uint16_t port) const;
};

// The two readings of a request target that request rules match (rule_paths()).
struct RulePath {
    std::string separated;  // an encoded `/` or `\` (and a bare `\`) read as `/`
    std::string literal;    // the same kept inside its segment, as the client spelled it
};

struct RequestRule {
    HostPattern host;
    std::vector<std::string> methods;  // upper case; empty = every method
    std::vector<std::string> paths;    // globs: `*` within a segment, `**` across, `?` one character
    bool allow = true;
    // `path` as rule_path() gives it; the host is checked by the caller.
    bool matches(std::string_view method, std::string_view path) const;
    // What a deny rule refuses: matches(), the path compared without regard to case, and HEAD where the
    // rule names GET.
    bool denies(std::string_view method, std::string_view path) const;
};

struct SecretRule {
    std::string name;                       // the environment variable
    bool mask = true;                       // "mask": a sentinel; "deny": removed
    std::vector<std::string> inject_hosts;  // normalised names
    std::vector<std::string> headers;       // more request headers that carry it (besides the usual ones)
    Rule rule;
};

struct ParentProxySettings {
    std::string http, https;  // URLs (http://[user:pass@]host:port); https is used for every tunnel
    std::string no_proxy;     // comma-separated names, `.suffix` or `*.suffix`, `*`
    Rule rule;                // where it was set
};

struct InspectionPolicy {
    std::vector<HostPattern> inspect;         // sandbox.network.inspect and --inspect
    bool terminate_all = false;               // srt's tlsTerminate: every host but `exclude`
    std::vector<HostPattern> exclude;         // tlsTerminate.excludeDomains
    std::string ca_cert_path, ca_key_path;    // tlsTerminate.caCertPath / caKeyPath
    std::vector<std::string> extra_ca_paths;  // tlsTerminate.extraCaCertPaths
    bool refuse_opaque_tunnels = false;       // tlsTerminate.refuseOpaqueTunnels
    bool require_host_match = true;           // tlsTerminate.requireHostMatch (srt's; on by default)
    std::vector<RequestRule> request_rules;   // in precedence order
    ParentProxySettings parent_proxy;         // the highest layer's
    std::vector<SecretRule> secrets;          // credentials.envVars
    std::vector<Rule> denied_files;           // credentials.files in deny mode (also denyRead)

    bool inspects(std::string_view host, std::uint16_t port) const;
    bool enabled() const { return terminate_all || !inspect.empty(); }

    // A request inside an inspected connection (`path` as rule_paths() gives it): a deny rule that matches
    // either reading wins; an allow rule must match both; a host that has rules and no matching one is
    // denied (`rule` null). A host without rules is allowed (`rule` null). The string form is a path whose
    // two readings are the same.
    struct RequestDecision {
        bool allowed = true;
        const RequestRule* rule = nullptr;
    };
    RequestDecision decide_request(std::string_view host, std::uint16_t port, std::string_view method,
                                   std::string_view path) const;
    RequestDecision decide_request(std::string_view host, std::uint16_t port, std::string_view method,
                                   const RulePath& path) const;
};

// The forms of a request target that request rules match: the path without its query, every %XX escape
// decoded, empty segments merged (so `/a//b` is the `/a/b` a server may see), in two readings of an encoded
// `/` or `\` (and a bare `\`): as a separator (`/a%2Fb` is `/a/b`, as nginx or Go serve it) and kept inside
// its segment (`/a%2Fb` stays one segment, as Express routes it). Refused (nullopt, `why` set): dot segments
// (`/../`, `/./`, also encoded), NUL, `#` (servers disagree about them, and `/repos/acme/../../x` would
// otherwise match a rule for `/repos/acme/**` while the server serves `/x`), and a target that starts with
// two separators (a host name to URL parsers). decide_request() also holds a deny rule for the path without a
// trailing `/`.
std::optional<RulePath> rule_paths(std::string_view target, std::string& why);
// The separator reading of rule_paths().
std::optional<std::string> rule_path(std::string_view target, std::string& why);

// `pattern` (`*`, `**`, `?`) against `text`; `*` and `?` never cross a `/`.
bool glob_matches(std::string_view pattern, std::string_view text);

}  // namespace cordon::policy
