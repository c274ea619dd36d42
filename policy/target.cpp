// parse_target: the network target of `cordon check` and of proxy requests.
#include <algorithm>

#include "policy/host_name.hpp"
#include "policy/policy.hpp"

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

    std::string_view host = authority;
    std::string_view port_text;
    bool has_port = false;
    if (authority.front() == '[') {
        auto close = authority.find(']');
        if (close == std::string_view::npos) return std::string("unterminated '[' in an IPv6 address");
        host = authority.substr(0, close + 1);
        std::string_view rest = authority.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') return std::string("unexpected text after ']'");
            port_text = rest.substr(1);
            has_port = true;
        }
    } else if (std::count(authority.begin(), authority.end(), ':') == 1) {
        auto colon = authority.find(':');
        host = authority.substr(0, colon);
        port_text = authority.substr(colon + 1);
        has_port = true;
    }
    HostPort out;
    out.port = default_port;
    if (has_port) {
        out.port = detail::parse_port(port_text);
        if (out.port == 0) return "invalid port '" + std::string(port_text) + "' (must be 1..65535)";
    }
    std::string normal;
    if (detail::normalise_host(host, normal) == detail::HostKind::Invalid)
        return "invalid host '" + std::string(host) + "': " + normal;
    out.host = std::move(normal);
    return out;
}

}  // namespace cordon::policy
