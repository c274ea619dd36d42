// Matching for the inspection policy (inspection.hpp).
#include "policy/inspection.hpp"

#include <arpa/inet.h>

namespace cordon::policy {

namespace {

bool is_ip_literal(std::string_view host) {
    std::string h(host);
    unsigned char buf[16];
    return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

std::vector<std::string_view> labels(std::string_view name) {
    std::vector<std::string_view> out;
    std::size_t start = 0;
    while (start <= name.size()) {
        std::size_t dot = name.find('.', start);
        if (dot == std::string_view::npos) dot = name.size();
        out.push_back(name.substr(start, dot - start));
        start = dot + 1;
    }
    return out;
}

}  // namespace

bool HostPattern::matches(std::string_view host, std::uint16_t port) const {
    using Kind = detail::DomainPattern::Kind;
    if (pattern.port != 0 && pattern.port != port) return false;
    switch (pattern.kind) {
        case Kind::AnyName:
            return !is_ip_literal(host);
        case Kind::IPv4:
        case Kind::IPv6:
            return host == pattern.name;
        case Kind::Name:
            break;
    }
    if (is_ip_literal(host)) return false;  // wildcards never match IP literals
    auto p = labels(pattern.name), h = labels(host);
    if (pattern.subdomains ? h.size() <= p.size() : h.size() != p.size()) return false;
    std::size_t offset = h.size() - p.size();
    for (std::size_t i = 0; i < p.size(); ++i)
        if (p[i] != "*" && p[i] != h[offset + i]) return false;
    return true;
}

namespace {

char fold_case(char c, bool fold) {
    return fold && c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

bool glob(std::string_view pattern, std::string_view text, bool fold) {
    if (pattern.empty()) return text.empty();
    if (pattern.substr(0, 2) == "**") {
        std::string_view rest = pattern.substr(2);
        for (std::size_t i = 0; i <= text.size(); ++i)
            if (glob(rest, text.substr(i), fold)) return true;
        return false;
    }
    if (pattern[0] == '*') {
        std::string_view rest = pattern.substr(1);
        for (std::size_t i = 0; i <= text.size(); ++i) {
            if (glob(rest, text.substr(i), fold)) return true;
            if (i < text.size() && text[i] == '/') break;
        }
        return false;
    }
    if (text.empty()) return false;
    if (pattern[0] == '?') return text[0] != '/' && glob(pattern.substr(1), text.substr(1), fold);
    return fold_case(pattern[0], fold) == fold_case(text[0], fold) &&
           glob(pattern.substr(1), text.substr(1), fold);
}

}  // namespace

bool glob_matches(std::string_view pattern, std::string_view text) {
    return glob(pattern, text, false);
}

std::optional<RulePath> rule_paths(std::string_view target, std::string& why) {
    std::string_view raw = target.substr(0, target.find('?'));
    // A `#` cannot be in a request target: some servers cut the path there (Node's URL, Python's
    // http.server), others keep it literal (Go), so no one reading of it is safe.
    if (raw.find('#') != std::string_view::npos) {
        why = "a '#' in the request target";
        return std::nullopt;
    }
    RulePath out;
    std::string& path = out.separated;
    path.reserve(raw.size());
    out.literal.reserve(raw.size());
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    for (std::size_t i = 0; i < raw.size(); ++i) {
        char c = raw[i];
        std::string_view spelled = raw.substr(i, 1);
        if (c == '%' && i + 2 < raw.size() && hex(raw[i + 1]) >= 0 && hex(raw[i + 2]) >= 0) {
            c = static_cast<char>(hex(raw[i + 1]) * 16 + hex(raw[i + 2]));
            spelled = raw.substr(i, 3);
            i += 2;
        }
        if (c == '\0') {
            why = "a NUL in the request path";
            return std::nullopt;
        }
        // Why an encoded `/` or `\` (and a bare `\`) is read both ways: servers that decode it (nginx, Go's
        // net/http, Node's static servers, Python's http.server) serve the path it spells, so it is a
        // separator there; a router that matches the encoded path (Express, path-to-regexp) takes
        // `acme%2Fx` for one segment, so `/repos/acme%2Fx/secrets` is its `/repos/:owner/secrets`. The
        // literal reading keeps it inside its segment as the client spelled it. decide_request() denies
        // when a deny rule matches either reading and allows only what an allow rule matches in both, so an
        // API that carries a path in one segment (GitLab's `projects/group%2Fproject`) still works under a
        // `**` rule.
        bool encoded_separator = c == '\\' || (c == '/' && spelled.size() == 3);
        if (c == '\\') c = '/';
        // Why a target that starts with two separators is refused rather than merged: it is a network-path
        // reference. A server that resolves the target as a URL (Node's `new URL(req.url, base)` and other
        // WHATWG parsers, which read `\` as `/` too) takes the first segment for a host name and serves the
        // path after it: `//evil/repos/x` is `/repos/x` there, while merging would make it `/evil/repos/x`.
        if (c == '/' && path == "/") {
            why = "a target that starts with '//' (read as a host name by URL parsers)";
            return std::nullopt;
        }
        // Why empty segments are merged: nginx (merge_slashes), Apache (MergeSlashes) and Python's
        // http.server serve `/a//b` as `/a/b`; a deny rule for `/a/b` must see it so.
        if (encoded_separator)
            out.literal += spelled;
        else if (c != '/' || out.literal.empty() || out.literal.back() != '/')
            out.literal += c;
        if (c == '/' && !path.empty() && path.back() == '/') continue;
        path += c;
    }
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t slash = std::min(path.find('/', start), path.size());
        std::string_view segment = std::string_view(path).substr(start, slash - start);
        if (segment == "." || segment == "..") {
            why = "dot segments in the request path";
            return std::nullopt;
        }
        start = slash + 1;
    }
    return out;
}

std::optional<std::string> rule_path(std::string_view target, std::string& why) {
    auto paths = rule_paths(target, why);
    if (!paths) return std::nullopt;
    return std::move(paths->separated);
}

bool RequestRule::matches(std::string_view method, std::string_view path) const {
    bool method_ok = methods.empty();
    for (const auto& m : methods)
        if (m == "*" || m == method) method_ok = true;
    if (!method_ok) return false;
    if (paths.empty()) return true;
    for (const auto& p : paths)
        if (glob(p, path, false)) return true;
    return false;
}

bool RequestRule::denies(std::string_view method, std::string_view path) const {
    bool method_ok = methods.empty();
    // Why a deny rule for GET holds for HEAD: HEAD is GET without the body (RFC 9110), and servers answer it
    // by running the GET handler (Express, Flask, Go's ServeMux...): its effects happen and its headers
    // reach the client.
    for (const auto& m : methods)
        if (m == "*" || m == method || (m == "GET" && method == "HEAD")) method_ok = true;
    if (!method_ok) return false;
    if (paths.empty()) return true;
    // Why a deny rule matches without regard to case (an allow rule does not, so both err closed): routers
    // that match routes case-insensitively (Express's default, ASP.NET, IIS, any server on a case-insensitive
    // file system) serve `/ADMIN` as `/admin`.
    for (const auto& p : paths)
        if (glob(p, path, true)) return true;
    return false;
}

bool InspectionPolicy::inspects(std::string_view host, std::uint16_t port) const {
    if (terminate_all) {
        for (const auto& e : exclude)
            if (e.matches(host, port)) return false;
        return true;
    }
    for (const auto& p : inspect)
        if (p.matches(host, port)) return true;
    return false;
}

InspectionPolicy::RequestDecision InspectionPolicy::decide_request(std::string_view host, std::uint16_t port,
                                                                   std::string_view method,
                                                                   std::string_view path) const {
    return decide_request(host, port, method, RulePath{std::string(path), std::string(path)});
}

InspectionPolicy::RequestDecision InspectionPolicy::decide_request(std::string_view host, std::uint16_t port,
                                                                   std::string_view method,
                                                                   const RulePath& path) const {
    bool host_has_rules = false;
    const RequestRule* allow = nullptr;
    // Why the path without its trailing `/` is checked against deny rules too: routers that ignore it
    // (Express by default, many frameworks) serve `/a/b/` as `/a/b`.
    auto bare = [](std::string_view p) {
        while (p.size() > 1 && p.back() == '/')
            p.remove_suffix(1);
        return p;
    };
    const std::string_view readings[] = {path.separated, bare(path.separated), path.literal,
                                         bare(path.literal)};
    for (const auto& r : request_rules) {
        if (!r.host.matches(host, port)) continue;
        host_has_rules = true;
        if (!r.allow) {
            for (auto reading : readings)
                if (r.denies(method, reading)) return {false, &r};  // deny wins
            continue;
        }
        if (!allow && r.matches(method, path.separated) && r.matches(method, path.literal)) allow = &r;
    }
    if (allow) return {true, allow};
    return {!host_has_rules, nullptr};
}

}  // namespace cordon::policy
