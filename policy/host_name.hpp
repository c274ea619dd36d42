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

// Parses a pattern as written in a settings file or a flag. Returns a reason on error ("a wildcard may not
// stand directly over a top-level domain", ...).
std::variant<DomainPattern, std::string> parse_domain_pattern(std::string_view text);

// Parses a decimal port 1..65535. Returns 0 on error.
std::uint16_t parse_port(std::string_view text);

}  // namespace cordon::policy::detail

namespace cordon::policy::detail {

// Checks an address-guard entry: an IPv4 or IPv6 address with an optional `/prefix` (0..32, 0..128). Returns
// an empty string when valid, else the reason.
std::string check_cidr(std::string_view text);

}  // namespace cordon::policy::detail

namespace cordon::policy::detail {

// The allocation-free fast path of normalise_host for plain ASCII names (the common case on the proxy's data
// path): lowercases into `buffer` and sets `out`. Returns false when the host needs the general path (IP
// literals, IDN, invalid input), which then decides.
bool normalise_plain_name(std::string_view host, std::array<char, 256>& buffer, std::string_view& out);

}  // namespace cordon::policy::detail
