// parse_target: the network target of `cordon check` and of proxy requests.
#include <algorithm>

#include "policy/host_name.hpp"
#include "policy/policy.hpp"
#include "policy/syntax.hpp"

namespace cordon::policy {

std::variant<HostPort, std::string> parse_target(std::string_view text, std::uint16_t default_port) {
    if (text.empty()) return std::string("empty target");
    std::string_view authority = text;
    if (auto scheme_end = text.find("://"); scheme_end != std::string_view::npos) {
        std::string scheme(text.substr(0, scheme_end));
        std::transform(scheme.begin(), scheme.end(), scheme.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (scheme == "http" || scheme == "ws") {
            default_port = 80;
        } else if (scheme == "https" || scheme == "wss") {
            default_port = 443;
        } else {
            return "unsupported URL scheme '" + scheme + "' (use http or https)";
        }
        authority = text.substr(scheme_end + 3);
        authority = authority.substr(0, authority.find_first_of("/?#"));
        if (auto at = authority.rfind('@'); at != std::string_view::npos)
            authority = authority.substr(at + 1);
        if (authority.empty()) return std::string("URL without a host");
    } else if (text.find_first_of("/?#@ \t") != std::string_view::npos) {
        return "not a host, host:port or URL: '" + std::string(text) + "'";
    }

    auto split = split_host_port(authority);
    if (auto* why = std::get_if<std::string>(&split)) return *why;
    const HostPortText& parts = std::get<HostPortText>(split);
    HostPort out;
    out.port = parts.port.value_or(default_port);
    const std::string_view host = parts.host;
    std::string normal;
    if (parts.bracketed && host.find(':') == std::string_view::npos)
        return "invalid host '[" + std::string(host) + "]': brackets hold an IPv6 address";
    if (detail::normalise_host(host, normal) == detail::HostKind::Invalid)
        return "invalid host '" + std::string(host) + "': " + normal;
    out.host = std::move(normal);
    return out;
}

}  // namespace cordon::policy
