#include "policy/host_name.hpp"

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
    if (text.empty() || text.size() > 63) return false;
    std::array<char, 64> buf{};
    std::copy(text.begin(), text.end(), buf.begin());
    in6_addr addr{};
    if (inet_pton(AF_INET6, buf.data(), &addr) != 1) return false;
    std::array<char, INET6_ADDRSTRLEN> str{};
    if (inet_ntop(AF_INET6, &addr, str.data(), str.size()) == nullptr) return false;
    out.assign(str.data());
    return true;
}

bool canonical_ipv4(std::string_view text, std::string& out) {
    if (text.empty() || text.size() > 15) return false;
    std::array<char, 16> buf{};
    std::copy(text.begin(), text.end(), buf.begin());
    in_addr addr{};
    if (inet_pton(AF_INET, buf.data(), &addr) != 1) return false;
    std::array<char, INET_ADDRSTRLEN> str{};
    if (inet_ntop(AF_INET, &addr, str.data(), str.size()) == nullptr) return false;
    out.assign(str.data());
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

bool last_label_numeric(std::string_view name) {
    auto dot = name.rfind('.');
    std::string_view last = dot == std::string_view::npos ? name : name.substr(dot + 1);
    return !last.empty() &&
           std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

std::uint16_t parse_port(std::string_view text) {
    if (text.empty() || text.size() > 5) return 0;
    unsigned value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return 0;
        value = value * 10 + static_cast<unsigned>(c - '0');
    }
    return value >= 1 && value <= 65535 ? static_cast<std::uint16_t>(value) : 0;
}

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
            out = "neither a name nor a dotted-quad IPv4 address";
            return HostKind::Invalid;
        }
        out = std::move(address);
        return HostKind::IPv4;
    }
    return HostKind::Name;
}

std::variant<DomainPattern, std::string> parse_domain_pattern(std::string_view text) {
    DomainPattern pattern;
    if (text.empty()) return std::string("empty pattern");
    if (text.find("://") != std::string_view::npos)
        return std::string("a URL is not a domain pattern: write the host only (e.g. example.com)");
    if (text.find('/') != std::string_view::npos) return std::string("a domain pattern holds no path");
    if (text.find('@') != std::string_view::npos) return std::string("invalid character '@'");

    std::string_view host = text;
    std::string_view port_text;
    bool has_port = false;
    if (text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos) return std::string("unterminated '[' in an IPv6 address");
        host = text.substr(1, close - 1);
        std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::string("unexpected text after ']'");
            port_text = rest.substr(1);
            has_port = true;
        }
        if (!canonical_ipv6(host, pattern.name)) return std::string("invalid IPv6 address");
        pattern.kind = DomainPattern::Kind::IPv6;
    } else if (std::count(text.begin(), text.end(), ':') >= 2) {
        if (!canonical_ipv6(text, pattern.name))
            return std::string("invalid IPv6 address (write IPv6 with a port as [addr]:port)");
        pattern.kind = DomainPattern::Kind::IPv6;
    } else {
        auto colon = text.find(':');
        if (colon != std::string_view::npos) {
            host = text.substr(0, colon);
            port_text = text.substr(colon + 1);
            has_port = true;
        }
    }
    if (has_port) {
        pattern.port = parse_port(port_text);
        if (pattern.port == 0) return std::string("port must be a number from 1 to 65535");
    }
    if (pattern.kind == DomainPattern::Kind::IPv6) return pattern;

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
    // The part right of the rightmost wildcard must be at least two labels: `*.com`, `api.*.com` and `api.*`
    // would open whole top-level domains.
    bool has_wildcard = pattern.subdomains || name.find('*') != std::string::npos;
    if (has_wildcard) {
        auto star = name.rfind('*');
        std::string_view tail =
            star == std::string::npos ? std::string_view(name) : std::string_view(name).substr(star + 1);
        if (!tail.empty() && tail.front() == '.') tail.remove_prefix(1);
        if (tail.empty()) return std::string("a wildcard may not stand for the top-level domain");
        if (tail.find('.') == std::string_view::npos)
            return std::string("a wildcard may not stand directly over a top-level domain");
    }
    if (last_label_numeric(name)) {
        if (has_wildcard) return std::string("wildcards never match IP addresses");
        std::string address;
        if (!canonical_ipv4(name, address))
            return std::string("neither a name nor a dotted-quad IPv4 address");
        pattern.kind = DomainPattern::Kind::IPv4;
        pattern.name = std::move(address);
        return pattern;
    }
    pattern.name = std::move(name);
    return pattern;
}

}  // namespace cordon::policy::detail

namespace cordon::policy::detail {

std::string check_cidr(std::string_view text) {
    if (text.empty()) return "empty address";
    std::string_view address = text;
    std::string_view prefix;
    bool has_prefix = false;
    if (auto slash = text.find('/'); slash != std::string_view::npos) {
        address = text.substr(0, slash);
        prefix = text.substr(slash + 1);
        has_prefix = true;
    }
    std::string canonical;
    int max_prefix = 0;
    if (address.find(':') != std::string_view::npos) {
        if (!canonical_ipv6(address, canonical)) return "invalid IPv6 address";
        max_prefix = 128;
    } else {
        if (!canonical_ipv4(address, canonical)) return "invalid IPv4 address";
        max_prefix = 32;
    }
    if (has_prefix) {
        if (prefix.empty() || prefix.size() > 3 ||
            !std::all_of(prefix.begin(), prefix.end(), [](char c) { return c >= '0' && c <= '9'; }))
            return "invalid prefix length";
        int value = std::atoi(std::string(prefix).c_str());
        if (value > max_prefix) return "prefix length must be 0.." + std::to_string(max_prefix);
    }
    return {};
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
    return true;
}

}  // namespace cordon::policy::detail
