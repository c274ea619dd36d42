// Host names and domain patterns: normalisation (case, trailing dot, IDN to punycode, canonical IPv6) and the
// parsing of domain patterns (`example.com`, `*.example.com`, `api.*.example.com`, `host:443`, `[::1]:80`,
// `*`). Internal to the policy module.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace cordon::policy::detail {

enum class HostKind { Name, IPv4, IPv6, Invalid };

// Longest host name we accept (RFC 1035: 253 characters without the trailing dot).
inline constexpr std::size_t kMaxHostLength = 253;

// Normalises a host for matching: strips `[...]` around IPv6, a trailing dot, lowercases, converts non-ASCII
// names to punycode (UTS#46), canonicalises IP literals. `out` receives the normal form (IPv6 without
// brackets). Names must consist of labels of [a-z0-9-_] (1..63 characters); a name whose last label is
// numeric must be a dotted-quad IPv4 literal. Anything else is Invalid, with a reason in `out`.
HostKind normalise_host(std::string_view host, std::string& out);

// A parsed domain pattern.
struct DomainPattern {
    enum class Kind {
        Name,     // `name` holds labels, `*` labels match exactly one label
        AnyName,  // `*`: every name (never an IP literal)
        IPv4,     // `name` holds the canonical address
        IPv6,     // `name` holds the canonical address, without brackets
    };
    Kind kind = Kind::Name;
    std::string name;
    bool subdomains = false;  // a leading `*.`: any depth of subdomain below `name`, never `name` itself
    std::uint16_t port = 0;   // 0 = every port
};

// Which grammar a pattern is read with.
enum class PatternDialect {
    // WebFetch(domain:...) rules and flags (Claude Code's meaning): `*` is every name; a leading `*.` any
    // depth of subdomain; any other `*` exactly one label (`example.*` matches `example.org`).
    ClaudeCode,
    // srt files and `sandbox.network.allowedDomains`: srt's validation. No `*` but a leading `*.`, at least
    // two labels (but `localhost`), no trailing dot, IPv6 bracketed.
    SrtAllowed,
    SrtDenied,  // the same, and a bare `*` (deny every name) is accepted
};

// Parses a pattern as written in a settings file or a flag. Returns a reason on error ("overly broad: ...",
// "a wildcard may not stand directly over a top-level domain", ...).
std::variant<DomainPattern, std::string> parse_domain_pattern(
    std::string_view text, PatternDialect dialect = PatternDialect::ClaudeCode);

}  // namespace cordon::policy::detail

namespace cordon::policy::detail {

// The allocation-free fast path of normalise_host for plain ASCII names (the common case on the proxy's data
// path): lowercases into `buffer` and sets `out`. Returns false when the host needs the general path (IP
// literals, IDN, invalid input), which then decides.
bool normalise_plain_name(std::string_view host, std::array<char, 256>& buffer, std::string_view& out);

}  // namespace cordon::policy::detail
