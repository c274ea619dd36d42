#include "policy/syntax.hpp"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>

namespace cordon::policy {
namespace {

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// One part of an inet_aton address: decimal, 0-prefixed octal or 0x hexadecimal, at most 2^32 - 1.
std::optional<std::uint64_t> ipv4_part(std::string_view part) {
    if (part.empty()) return std::nullopt;
    unsigned base = 10;
    if (part.size() >= 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
        base = 16;
        part.remove_prefix(2);
        if (part.empty()) return std::nullopt;  // "0x" alone: refused rather than guessed
    } else if (part.size() >= 2 && part[0] == '0') {
        base = 8;
        part.remove_prefix(1);
    }
    std::uint64_t value = 0;
    for (char c : part) {
        int digit = hex_value(c);
        if (digit < 0 || static_cast<unsigned>(digit) >= base) return std::nullopt;
        value = value * base + static_cast<unsigned>(digit);
        if (value > 0xffffffffull) return std::nullopt;
    }
    return value;
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

std::string dotted_quad(std::uint32_t address) {
    return std::to_string(address >> 24) + "." + std::to_string((address >> 16) & 0xff) + "." +
           std::to_string((address >> 8) & 0xff) + "." + std::to_string(address & 0xff);
}

}  // namespace

std::variant<std::uint16_t, std::string> parse_port(std::string_view text, bool allow_zero) {
    if (text.empty()) return std::string("empty port");
    if (!all_digits(text)) return "port '" + std::string(text) + "' is not a number";
    if (text.size() > 1 && text[0] == '0') return "port '" + std::string(text) + "' has a leading zero";
    if (text.size() > 5) return "port '" + std::string(text) + "' is out of range (1..65535)";
    unsigned value = 0;
    for (char c : text)
        value = value * 10 + static_cast<unsigned>(c - '0');
    if (value > 65535 || (value == 0 && !allow_zero))
        return "port '" + std::string(text) + "' is out of range (1..65535)";
    return static_cast<std::uint16_t>(value);
}

std::variant<HostPortText, std::string> split_host_port(std::string_view text, PortSpec spec) {
    HostPortText out;
    std::string_view port_text;
    bool has_port = false;
    if (text.empty()) return std::string("empty host");
    if (text.front() == '[') {
        auto close = text.find(']');
        if (close == std::string_view::npos) return std::string("unterminated '[' in an IPv6 address");
        out.host = text.substr(1, close - 1);
        out.bracketed = true;
        std::string_view rest = text.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::string("unexpected text after ']'");
            port_text = rest.substr(1);
            has_port = true;
        }
    } else if (std::count(text.begin(), text.end(), ':') >= 2) {
        // A bare IPv6 literal: never split (`::1:443` is itself an address).
        out.host = text;
    } else if (auto colon = text.find(':'); colon != std::string_view::npos) {
        out.host = text.substr(0, colon);
        port_text = text.substr(colon + 1);
        has_port = true;
    } else {
        out.host = text;
    }
    if (has_port) {
        auto port = parse_port(port_text, spec == PortSpec::RequiredOrZero);
        if (auto* why = std::get_if<std::string>(&port)) return *why;
        out.port = std::get<std::uint16_t>(port);
    } else if (spec != PortSpec::Optional) {
        return std::string(out.bracketed || text.find(':') == std::string_view::npos
                               ? "a port is required (HOST:PORT)"
                               : "a port is required; write IPv6 with a port as [ADDRESS]:PORT");
    }
    if (out.host.empty()) return std::string("empty host");
    return out;
}

bool looks_numeric(std::string_view label) {
    if (all_digits(label)) return true;
    if (label.size() >= 2 && label[0] == '0' && (label[1] == 'x' || label[1] == 'X'))
        return std::all_of(label.begin() + 2, label.end(), [](char c) { return hex_value(c) >= 0; });
    return false;
}

std::optional<std::uint32_t> parse_ipv4_any(std::string_view text) {
    std::array<std::uint64_t, 4> parts{};
    std::size_t count = 0;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] != '.') continue;
        if (count == 4) return std::nullopt;
        auto part = ipv4_part(text.substr(start, i - start));
        if (!part) return std::nullopt;
        parts[count++] = *part;
        start = i + 1;
    }
    // Every part but the last is one byte; the last fills what remains (inet_aton).
    std::uint64_t address = 0;
    for (std::size_t i = 0; i + 1 < count; ++i) {
        if (parts[i] > 0xff) return std::nullopt;
        address |= parts[i] << (8 * (3 - i));
    }
    const std::uint64_t last_max = count == 1 ? 0xffffffffull : (1ull << (8 * (5 - count))) - 1;
    if (parts[count - 1] > last_max) return std::nullopt;
    address |= parts[count - 1];
    return static_cast<std::uint32_t>(address);
}

std::optional<std::string> canonical_ip(std::string_view text, bool strict_ipv4) {
    std::string out;
    if (text.find(':') != std::string_view::npos) {
        if (!canonical_ipv6(text, out)) return std::nullopt;
        return out;
    }
    if (strict_ipv4) {
        if (text.empty() || text.size() > 15) return std::nullopt;
        std::array<char, 16> buf{};
        std::copy(text.begin(), text.end(), buf.begin());
        in_addr addr{};
        if (inet_pton(AF_INET, buf.data(), &addr) != 1) return std::nullopt;
        return dotted_quad(ntohl(addr.s_addr));
    }
    auto address = parse_ipv4_any(text);
    if (!address) return std::nullopt;
    return dotted_quad(*address);
}

bool AddressRange::contains(int address_family, const std::uint8_t* address) const {
    if (address_family != family) return false;
    int bits = prefix;
    for (std::size_t i = 0; bits > 0; ++i, bits -= 8) {
        const std::uint8_t mask = bits >= 8 ? 0xff : static_cast<std::uint8_t>(0xff << (8 - bits));
        if ((address[i] & mask) != (bytes[i] & mask)) return false;
    }
    return true;
}

std::variant<AddressRange, std::string> parse_cidr(std::string_view text) {
    if (text.empty()) return std::string("empty address");
    std::string_view address = text;
    std::string_view prefix;
    bool has_prefix = false;
    if (auto slash = text.find('/'); slash != std::string_view::npos) {
        address = text.substr(0, slash);
        prefix = text.substr(slash + 1);
        has_prefix = true;
    }
    if (address.size() >= 2 && address.front() == '[' && address.back() == ']')
        address = address.substr(1, address.size() - 2);
    AddressRange range;
    std::array<char, 64> buf{};
    if (address.empty() || address.size() >= buf.size()) return std::string("invalid IP address");
    std::copy(address.begin(), address.end(), buf.begin());
    if (address.find(':') != std::string_view::npos) {
        if (inet_pton(AF_INET6, buf.data(), range.bytes.data()) != 1)
            return std::string("invalid IPv6 address");
        range.family = AF_INET6;
    } else {
        if (inet_pton(AF_INET, buf.data(), range.bytes.data()) != 1)
            return std::string("invalid IPv4 address (write a dotted quad, e.g. 10.0.0.0/8)");
        range.family = AF_INET;
    }
    const int max_prefix = range.family == AF_INET ? 32 : 128;
    range.prefix = max_prefix;
    if (has_prefix) {
        if (prefix.empty() || prefix.size() > 3 || !all_digits(prefix))
            return std::string("invalid prefix length");
        int value = 0;
        for (char c : prefix)
            value = value * 10 + (c - '0');
        if (value > max_prefix) return "prefix length must be 0.." + std::to_string(max_prefix);
        range.prefix = value;
    }
    return range;
}

std::string format_source(const Source& source) {
    std::string out(to_string(source.layer));
    if (!source.file.empty()) {
        out += " " + source.file;
        if (source.line > 0) out += ":" + std::to_string(source.line);
    }
    if (!source.where.empty()) out += " " + source.where;
    return out;
}

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    auto escape = [&](unsigned char c) {
        static const char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
    };
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f || c == '\\')
                escape(c);
            else
                out += static_cast<char>(c);
            ++i;
            continue;
        }
        // A well-formed UTF-8 sequence (no overlong form, no surrogate, at most U+10FFFF) other than a C1
        // control (U+0080..U+009F) is kept; every other byte is escaped one by one.
        std::size_t n = c >= 0xc2 && c <= 0xdf   ? 2
                        : c >= 0xe0 && c <= 0xef ? 3
                        : c >= 0xf0 && c <= 0xf4 ? 4
                                                 : 0;
        bool ok = n != 0 && i + n <= text.size();
        for (std::size_t k = 1; ok && k < n; ++k)
            ok = (static_cast<unsigned char>(text[i + k]) & 0xc0) == 0x80;
        if (ok) {
            const auto c1 = static_cast<unsigned char>(text[i + 1]);
            if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 >= 0xa0) || (c == 0xf0 && c1 < 0x90) ||
                (c == 0xf4 && c1 >= 0x90) || (c == 0xc2 && c1 < 0xa0))
                ok = false;
        }
        if (!ok) {
            escape(c);
            ++i;
            continue;
        }
        out.append(text.substr(i, n));
        i += n;
    }
    return out;
}

}  // namespace cordon::policy
