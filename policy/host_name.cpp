#include "policy/host_name.hpp"

#include "policy/syntax.hpp"

#include <arpa/inet.h>
#include <idn2.h>

#include <algorithm>
#include <array>
#include <cstdlib>

namespace cordon::policy::detail {
namespace {

bool is_ascii(std::string_view s) {
    return std::all_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

// UTS#46 (non-transitional) mapping and punycode: `Bücher.DE` -> `xn--bcher-kva.de`. Only called for names
// that hold non-ASCII bytes, so plain names never pay for it.
bool to_punycode(std::string_view in, std::string& out) {
    std::string input(in);
    char* converted = nullptr;
    int rc = idn2_to_ascii_8z(input.c_str(), &converted, IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    if (rc != IDN2_OK) {
        out = std::string("not a valid internationalised name (") + idn2_strerror(rc) + ")";
        return false;
    }
    out.assign(converted);
    idn2_free(converted);
    return true;
}

bool canonical_ipv6(std::string_view text, std::string& out) {
    if (text.find(':') == std::string_view::npos) return false;
    auto canonical = canonical_ip(text);
    if (!canonical) return false;
    out = std::move(*canonical);
    return true;
}

// IPv4 in any inet_aton spelling (`0x7f.1`, `2130706433`), canonicalised to a dotted quad: every spelling of
// an address matches the same rules (policy/syntax.hpp).
bool canonical_ipv4(std::string_view text, std::string& out) {
    if (text.find(':') != std::string_view::npos) return false;
    auto canonical = canonical_ip(text);
    if (!canonical) return false;
    out = std::move(*canonical);
    return true;
}

bool is_label_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

// Lowercases `name` in place and checks its labels. `*` labels are accepted when `allow_star`. On error `why`
// says what is wrong.
bool check_labels(std::string& name, bool allow_star, std::string& why) {
    if (name.empty()) {
        why = "empty name";
        return false;
    }
    if (name.size() > kMaxHostLength) {
        why = "name longer than 253 characters";
        return false;
    }
    std::size_t label_start = 0;
    for (std::size_t i = 0; i <= name.size(); ++i) {
        if (i == name.size() || name[i] == '.') {
            std::size_t len = i - label_start;
            if (len == 0) {
                why = "empty label";
                return false;
            }
            if (len > 63) {
                why = "label longer than 63 characters";
                return false;
            }
            std::string_view label(name.data() + label_start, len);
            if (label.find('*') != std::string_view::npos) {
                if (!allow_star) {
                    why = "invalid character '*'";
                    return false;
                }
                if (label != "*") {
                    why = "a wildcard must stand for a whole label (write *.example.com)";
                    return false;
                }
            }
            label_start = i + 1;
            continue;
        }
        char& c = name[i];
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (!is_label_char(c) && c != '*') {
            why = std::string("invalid character '") + c + "'";
            return false;
        }
    }
    return true;
}

// True when the last label is spelled as a number (`1`, `0x7f`): the host is then an IPv4 literal or invalid,
// never a name (as URL parsers decide), so `10.0.0.0x1` cannot pass as a name.
bool last_label_numeric(std::string_view name) {
    auto dot = name.rfind('.');
    return looks_numeric(dot == std::string_view::npos ? name : name.substr(dot + 1));
}

}  // namespace

HostKind normalise_host(std::string_view host, std::string& out) {
    if (host.empty()) {
        out = "empty host";
        return HostKind::Invalid;
    }
    if (host.front() == '[') {
        if (host.back() != ']' || !canonical_ipv6(host.substr(1, host.size() - 2), out)) {
            out = "invalid IPv6 address";
            return HostKind::Invalid;
        }
        return HostKind::IPv6;
    }
    if (host.find(':') != std::string_view::npos) {
        if (!canonical_ipv6(host, out)) {
            out = "invalid IPv6 address";
            return HostKind::Invalid;
        }
        return HostKind::IPv6;
    }
    if (host.back() == '.') host.remove_suffix(1);
    if (host.empty()) {
        out = "empty host";
        return HostKind::Invalid;
    }
    std::string why;
    if (is_ascii(host)) {
        out.assign(host);
    } else if (!to_punycode(host, out)) {
        return HostKind::Invalid;
    }
    if (!check_labels(out, false, why)) {
        out = std::move(why);
        return HostKind::Invalid;
    }
    if (last_label_numeric(out)) {
        std::string address;
        if (!canonical_ipv4(out, address)) {
            out = "neither a name nor an IPv4 address";
            return HostKind::Invalid;
        }
        out = std::move(address);
        return HostKind::IPv4;
    }
    return HostKind::Name;
}

namespace {

// srt's validation of an allowedDomains / deniedDomains entry (its isValidDomainPattern and IPv6 bracketing
// rule), on the raw entry. Empty when srt would accept it; cordon's own checks follow.
std::string srt_refusal(std::string_view text, std::string_view host, bool bracketed,
                        PatternDialect dialect) {
    if (!bracketed && std::count(text.begin(), text.end(), ':') >= 2)
        return "an IPv6 address must be bracketed: [::1] or [::1]:443";
    if (bracketed) return {};
    if (host == "*") {
        if (dialect == PatternDialect::SrtDenied) return {};
        return "overly broad: `*` (every host) is not allowed in an allow list";
    }
    if (!host.empty() && host.back() == '.') return "a trailing dot is not allowed";
    if (!host.empty() && host.front() == '.') return "a leading dot is not allowed";
    if (host.size() >= 2 && host[0] == '*' && host[1] == '.') {
        std::string_view rest = host.substr(2);
        if (rest.find('*') != std::string_view::npos)
            return "a wildcard is allowed only as a leading `*.` (e.g. *.example.com)";
        if (rest.find('.') == std::string_view::npos)
            return "overly broad: a wildcard may not stand directly over a top-level domain";
        return {};
    }
    if (host.find('*') != std::string_view::npos)
        return "a wildcard is allowed only as a leading `*.` (e.g. *.example.com)";
    if (host != "localhost" && host.find('.') == std::string_view::npos)
        return "a single-label name (only localhost may have one label)";
    return {};
}

}  // namespace

std::variant<DomainPattern, std::string> parse_domain_pattern(std::string_view text, PatternDialect dialect) {
    DomainPattern pattern;
    if (text.empty()) return std::string("empty pattern");
    if (text.find("://") != std::string_view::npos)
        return std::string("a URL is not a domain pattern: write the host only (e.g. example.com)");
    if (text.find('/') != std::string_view::npos) return std::string("a domain pattern holds no path");
    if (text.find('@') != std::string_view::npos) return std::string("invalid character '@'");

    auto split = split_host_port(text);
    if (auto* why = std::get_if<std::string>(&split)) return *why;
    const HostPortText& parts = std::get<HostPortText>(split);
    std::string_view host = parts.host;
    pattern.port = parts.port.value_or(0);
    if (dialect != PatternDialect::ClaudeCode) {
        if (std::string why = srt_refusal(text, host, parts.bracketed, dialect); !why.empty()) return why;
    }
    if (parts.bracketed || host.find(':') != std::string_view::npos) {
        if (!canonical_ipv6(host, pattern.name))
            return std::string(parts.bracketed
                                   ? "invalid IPv6 address"
                                   : "invalid IPv6 address (write IPv6 with a port as [addr]:port)");
        pattern.kind = DomainPattern::Kind::IPv6;
        return pattern;
    }

    // `*.` would become `*` (every name) once its trailing dot is dropped: an entry that means nothing
    // precise never widens access.
    if (host == "*." || host == "*..")
        return std::string("overly broad: `*.` names no domain (write *.example.com, or * for every name)");
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    if (host.empty()) return std::string("empty host");
    if (host == "*") {
        pattern.kind = DomainPattern::Kind::AnyName;
        return pattern;
    }
    std::string name;
    if (is_ascii(host)) {
        name.assign(host);
    } else if (!to_punycode(host, name)) {
        return name;
    }
    std::string why;
    if (!check_labels(name, true, why)) return why;

    if (name.size() >= 2 && name[0] == '*' && name[1] == '.') {
        pattern.subdomains = true;
        name.erase(0, 2);
    }
    bool has_wildcard = pattern.subdomains || name.find('*') != std::string::npos;
    if (has_wildcard) {
        // Claude Code: a `*` that is the last label stands for exactly one label (`example.*` matches
        // example.org), when every other label is written out.
        const bool trailing_star = name.size() >= 2 && name.compare(name.size() - 2, 2, ".*") == 0 &&
                                   !pattern.subdomains && name.find('*') == name.size() - 1;
        if (trailing_star) {
            if (last_label_numeric(std::string_view(name).substr(0, name.size() - 2)))
                return std::string("wildcards never match IP addresses");
            if (dialect != PatternDialect::ClaudeCode)
                return std::string("a wildcard is allowed only as a leading `*.` (e.g. *.example.com)");
        } else {
            // The part right of the rightmost wildcard must be at least two labels: `*.com`, `api.*.com`
            // would open whole top-level domains.
            auto star = name.rfind('*');
            std::string_view tail =
                star == std::string::npos ? std::string_view(name) : std::string_view(name).substr(star + 1);
            if (!tail.empty() && tail.front() == '.') tail.remove_prefix(1);
            if (tail.empty()) return std::string("overly broad: a wildcard may not stand for every domain");
            if (tail.find('.') == std::string_view::npos)
                return std::string("overly broad: a wildcard may not stand directly over a top-level domain");
        }
    }
    if (last_label_numeric(name)) {
        if (has_wildcard) return std::string("wildcards never match IP addresses");
        // A pattern names an IPv4 address as a dotted quad (`1.2.3` is a typo more often than 1.2.0.3);
        // targets are canonicalised from any spelling before they are matched.
        auto address = canonical_ip(name, true);
        if (!address) return std::string("neither a name nor a dotted-quad IPv4 address");
        pattern.kind = DomainPattern::Kind::IPv4;
        pattern.name = std::move(*address);
        return pattern;
    }
    pattern.name = std::move(name);
    return pattern;
}

}  // namespace cordon::policy::detail

namespace cordon::policy::detail {

bool normalise_plain_name(std::string_view host, std::array<char, 256>& buffer, std::string_view& out) {
    if (!host.empty() && host.back() == '.') host.remove_suffix(1);
    if (host.empty() || host.size() > kMaxHostLength) return false;
    std::size_t label_length = 0;
    bool label_numeric = true;
    for (std::size_t i = 0; i < host.size(); ++i) {
        char c = host[i];
        if (c == '.') {
            if (label_length == 0) return false;
            label_length = 0;
            label_numeric = true;
            buffer[i] = c;
            continue;
        }
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        if (!is_label_char(c)) return false;
        if (c < '0' || c > '9') label_numeric = false;
        if (++label_length > 63) return false;
        buffer[i] = c;
    }
    if (label_length == 0 || label_numeric) return false;  // empty last label, or maybe an IPv4 literal
    out = std::string_view(buffer.data(), host.size());
    if (last_label_numeric(out)) return false;  // `0x7f`: a hexadecimal IPv4 part

    return true;
}

}  // namespace cordon::policy::detail
