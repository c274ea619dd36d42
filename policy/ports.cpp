#include "policy/ports.hpp"

#include <array>

#include "policy/syntax.hpp"

namespace cordon::policy {

bool is_jail_own_port(std::uint16_t port) {
    return port == 53 || port == 1080 || port == 3128 || port == 3129;
}

std::variant<std::uint16_t, std::string> parse_host_port(std::string_view text) {
    auto port = parse_port(text);
    if (auto* why = std::get_if<std::string>(&port)) return *why;
    const auto p = std::get<std::uint16_t>(port);
    if (is_jail_own_port(p))
        return "port " + std::to_string(p) + " is one of the jail's own (53, 1080, 3128, 3129)";
    return p;
}

bool PublishedPort::loopback() const {
    return address == "::1" || address.rfind("127.", 0) == 0;
}

std::string PublishedPort::listen_text() const {
    const bool v6 = address.find(':') != std::string::npos;
    return (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

std::variant<PublishedPort, std::string> parse_published_port(std::string_view text) {
    PublishedPort out;
    out.address = "127.0.0.1";
    std::string_view rest = text;
    auto take_address = [&](std::string_view addr, bool bracketed) -> std::string {
        auto canonical = canonical_ip(addr, true);
        const bool v6 = addr.find(':') != std::string_view::npos;
        if (!canonical || v6 != bracketed)
            return "invalid address '" + std::string(addr) + "' (an IPv4 address, or IPv6 in brackets)";
        out.address = *canonical;
        return "";
    };
    if (!rest.empty() && rest.front() == '[') {
        const auto close = rest.find(']');
        if (close == std::string_view::npos || close + 1 >= rest.size() || rest[close + 1] != ':')
            return std::string("an IPv6 address needs ']' and a port after it: [ADDR]:PORT");
        if (auto why = take_address(rest.substr(1, close - 1), true); !why.empty()) return why;
        rest = rest.substr(close + 2);
    }
    std::array<std::string_view, 3> parts{};
    std::size_t count = 0;
    for (std::size_t start = 0;;) {
        const auto colon = rest.find(':', start);
        if (count == parts.size()) return std::string("too many ':'");
        parts[count++] = rest.substr(start, colon == std::string_view::npos ? colon : colon - start);
        if (colon == std::string_view::npos) break;
        start = colon + 1;
    }
    const bool had_address = text.front() == '[';
    const bool first_is_number =
        !parts[0].empty() && parts[0].find_first_not_of("0123456789") == std::string_view::npos;
    std::size_t at = 0;
    if (!had_address && (count == 3 || (count == 2 && !first_is_number))) {
        if (auto why = take_address(parts[0], false); !why.empty()) return why;
        at = 1;
    } else if (had_address && count > 2) {
        return std::string("too many ':'");
    }
    auto port = parse_port(parts[at]);
    if (auto* why = std::get_if<std::string>(&port)) return "PORT: " + *why;
    out.port = out.jail_port = std::get<std::uint16_t>(port);
    if (at + 1 < count) {
        auto jail = parse_port(parts[at + 1]);
        if (auto* why = std::get_if<std::string>(&jail)) return "JAIL_PORT: " + *why;
        out.jail_port = std::get<std::uint16_t>(jail);
    }
    if (is_jail_own_port(out.jail_port))
        return "JAIL_PORT " + std::to_string(out.jail_port) +
               " is one of the jail's own (53, 1080, 3128, 3129)";
    return out;
}

}  // namespace cordon::policy
