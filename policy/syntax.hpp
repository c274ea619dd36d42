// The one parser for each small grammar cordon reads in more than one place, so that `cordon check`, the
// proxy's front-ends, the listeners and the settings loader can never disagree: a port, `host:port`, an IP
// address literal (IPv4 in any inet_aton spelling), a CIDR range, and the printed form of a rule's source.
// Pure: no sockets. Errors are returned as a reason (std::variant<T, std::string>), never thrown.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "policy/policy.hpp"

namespace cordon::policy {

// A decimal port 1..65535 (0 too when `allow_zero`, for listen addresses): digits only, no sign, no leading
// zero ("0443" is refused, as srt does).
std::variant<std::uint16_t, std::string> parse_port(std::string_view text, bool allow_zero = false);

enum class PortSpec {
    Optional,        // `host` or `host:port`
    Required,        // CONNECT's authority form, SOCKS targets
    RequiredOrZero,  // listen addresses: `127.0.0.1:0` picks a free port
};

// `host`, `host:port`, `[v6]`, `[v6]:port`, or a bare IPv6 literal `v6` (which then has no port). Syntax
// only: the host part is not checked (see normalise / canonical_ip).
struct HostPortText {
    std::string_view host;  // without the brackets
    bool bracketed = false;
    std::optional<std::uint16_t> port;
};
std::variant<HostPortText, std::string> split_host_port(std::string_view text,
                                                        PortSpec spec = PortSpec::Optional);

// An IPv4 address in any spelling inet_aton accepts: 1 to 4 parts, each decimal, octal (leading 0) or
// hexadecimal (0x); the last part fills the remaining bytes (`10.203.2`, `0x0a.203.0.2`, `181075970`,
// `012.203.0.2` are all 10.203.0.2 / 10.203.2.2 as inet_aton reads them). The address in host byte order.
std::optional<std::uint32_t> parse_ipv4_any(std::string_view text);
// True when `label` (the last label of a host) is spelled as a number (decimal, or 0x hex): such a host is an
// IPv4 literal or nothing (as URL parsers decide).
bool looks_numeric(std::string_view label);

// The canonical text of an IP literal: a dotted quad (any inet_aton spelling accepted unless
// `strict_ipv4`), or RFC 5952 IPv6 (no brackets). nullopt when `text` is neither.
std::optional<std::string> canonical_ip(std::string_view text, bool strict_ipv4 = false);

// A CIDR range (`10.0.0.0/8`, `fd00::/8`, `[::1]/128`) or one address (a /32 or /128). IPv4 must be a
// dotted quad here (`10/8` is refused rather than read as 0.0.0.10/8).
std::variant<AddressRange, std::string> parse_cidr(std::string_view text);

// A rule's source as every part of cordon prints it (`cordon check`, the audit log's `source`, the 403
// body, Decision::explain): "LAYER FILE:LINE WHERE", e.g. `project /w/.claude/settings.json:3
// permissions.allow[0]`, `flags --allow-domain`, `default working directory`.
std::string format_source(const Source& source);

// `text` (a path, a program's name: the jailed command chose them) as one line a terminal shows as it is:
// control bytes (newline, escape, C1 controls), backslash and bytes that are not UTF-8 as `\xNN`, so that a
// name can neither forge a line of the summary nor send escape sequences to the user's terminal.
std::string printable(std::string_view text);

}  // namespace cordon::policy
