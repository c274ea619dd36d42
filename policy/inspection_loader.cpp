// The inspection keys of a settings file (inspection_loader.hpp).
#include "policy/inspection_loader.hpp"

#include <algorithm>

namespace cordon::policy::detail {

namespace {

using json = nlohmann::json;

std::string json_quote(const std::string& s) {
    return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string key_path(const std::string& base, const std::string& key) {
    return base.empty() ? key : base + "." + key;
}
std::string index_path(const std::string& base, std::size_t i) {
    return base + "[" + std::to_string(i) + "]";
}

// A host pattern; a bad one stops the load when `deny` (skipping a deny widens access) and is skipped with
// a warning otherwise. False when skipped.
bool host_pattern(const json& value, const std::string& where, bool deny, const InspectionContext& c,
                  HostPattern& out) {
    if (!value.is_string()) {
        c.fail(where, "expected a domain pattern string");
        return false;
    }
    const std::string text = value.get<std::string>();
    auto parsed = parse_domain_pattern(text, PatternDialect::ClaudeCode);
    if (auto* why = std::get_if<std::string>(&parsed)) {
        if (deny) c.fail(where, "invalid domain pattern " + json_quote(text) + ": " + *why);
        c.warn(where, "skipped: invalid domain pattern " + json_quote(text) + ": " + *why);
        return false;
    }
    out = HostPattern{std::get<DomainPattern>(parsed), Rule{text, c.source(where)}};
    return true;
}

std::vector<std::string> string_list(const json& value, const std::string& where,
                                     const InspectionContext& c) {
    if (!value.is_array()) c.fail(where, "expected an array of strings");
    std::vector<std::string> out;
    for (std::size_t i = 0; i < value.size(); ++i) {
        if (!value[i].is_string()) c.fail(index_path(where, i), "expected a string");
        out.push_back(value[i].get<std::string>());
    }
    return out;
}

bool boolean(const json& value, const std::string& where, const InspectionContext& c) {
    if (!value.is_boolean()) c.fail(where, "expected true or false");
    return value.get<bool>();
}

std::string string(const json& value, const std::string& where, const InspectionContext& c) {
    if (!value.is_string()) c.fail(where, "expected a string");
    return value.get<std::string>();
}

void request_rule(const json& value, const std::string& where, InspectionPolicy& out,
                  const InspectionContext& c) {
    if (!value.is_object()) c.fail(where, "expected an object {host, methods, paths, action}");
    auto action = value.find("action");
    if (action == value.end() || !action->is_string() || (*action != "allow" && *action != "deny"))
        c.fail(key_path(where, "action"), "expected \"allow\" or \"deny\"");
    RequestRule rule;
    rule.allow = *action == "allow";
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string k = it.key();
        if (k != "host" && k != "methods" && k != "paths" && k != "action") {
            // An unknown key in a deny rule may have been meant to narrow it: refusing it is the safe side
            // for deny and allow alike (an allow rule read wider than meant widens access).
            c.fail(key_path(where, k), "unknown key in a request rule");
        }
    }
    auto host = value.find("host");
    if (host == value.end()) c.fail(where, "a request rule needs \"host\"");
    // A rule cordon cannot read: a deny rule stops the load, an allow rule is skipped.
    if (!host_pattern(*host, key_path(where, "host"), !rule.allow, c, rule.host)) return;
    if (auto m = value.find("methods"); m != value.end()) {
        rule.methods = string_list(*m, key_path(where, "methods"), c);
        for (auto& method : rule.methods)
            std::transform(method.begin(), method.end(), method.begin(),
                           [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    }
    if (auto p = value.find("paths"); p != value.end()) {
        rule.paths = string_list(*p, key_path(where, "paths"), c);
        for (std::size_t i = 0; i < rule.paths.size(); ++i)
            if (rule.paths[i].empty() || rule.paths[i][0] != '/')
                c.fail(index_path(key_path(where, "paths"), i),
                       "a path glob starts with / (" + json_quote(rule.paths[i]) + ")");
    }
    rule.host.rule = Rule{value.dump(), c.source(where)};
    out.request_rules.push_back(std::move(rule));
}

void tls_terminate(const json& value, const std::string& where, InspectionPolicy& out,
                   const InspectionContext& c) {
    if (value.is_boolean()) {
        out.terminate_all = out.terminate_all || value.get<bool>();
        return;
    }
    if (!value.is_object()) c.fail(where, "expected an object or true/false");
    out.terminate_all = true;
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string k = it.key(), w = key_path(where, k);
        if (k == "enabled") {
            out.terminate_all = boolean(*it, w, c);
        } else if (k == "caCertPath") {
            if (out.ca_cert_path.empty()) out.ca_cert_path = string(*it, w, c);
        } else if (k == "caKeyPath") {
            if (out.ca_key_path.empty()) out.ca_key_path = string(*it, w, c);
        } else if (k == "excludeDomains") {
            // Excluding less than meant inspects more (never widens access): a bad entry is skipped.
            for (std::size_t i = 0; i < it->size(); ++i) {
                HostPattern p;
                if (host_pattern((*it)[i], index_path(w, i), false, c, p))
                    out.exclude.push_back(std::move(p));
            }
            if (!it->is_array()) c.fail(w, "expected an array of domain patterns");
        } else if (k == "extraCaCertPaths") {
            for (auto& path : string_list(*it, w, c))
                out.extra_ca_paths.push_back(std::move(path));
        } else if (k == "refuseOpaqueTunnels") {
            out.refuse_opaque_tunnels = out.refuse_opaque_tunnels || boolean(*it, w, c);
        } else if (k == "requireHostMatch") {
            // Why never off: a Host that differs from the name the connection was decided for would route
            // a request to a host the policy never saw (through a shared front end, a CDN).
            if (!boolean(*it, w, c))
                c.warn(w,
                       "false is not honoured: cordon always refuses a Host that differs from the name the "
                       "connection was decided for (421)");
        } else {
            c.warn(w, "unknown key; ignored (a typo?)");
        }
    }
}

void parent_proxy(const json& value, const std::string& where, InspectionPolicy& out,
                  const InspectionContext& c) {
    if (!value.is_object()) c.fail(where, "expected an object {http, https, noProxy}");
    if (!out.parent_proxy.http.empty() || !out.parent_proxy.https.empty()) return;  // a higher layer set it
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string k = it.key(), w = key_path(where, k);
        if (k == "http")
            out.parent_proxy.http = string(*it, w, c);
        else if (k == "https")
            out.parent_proxy.https = string(*it, w, c);
        else if (k == "noProxy")
            out.parent_proxy.no_proxy = it->is_array() ? [&] {
                std::string s;
                for (auto& e : string_list(*it, w, c))
                    s += (s.empty() ? "" : ",") + e;
                return s;
            }()
                                                       : string(*it, w, c);
        else
            c.warn(w, "unknown key; ignored (a typo?)");
    }
    out.parent_proxy.rule = Rule{value.dump(), c.source(where)};
}

void credentials(const json& value, const std::string& where, InspectionPolicy& out,
                 const InspectionContext& c) {
    if (!value.is_object()) c.fail(where, "expected an object {envVars, files}");
    for (auto it = value.begin(); it != value.end(); ++it) {
        const std::string k = it.key(), w = key_path(where, k);
        if (k == "envVars") {
            if (!it->is_array()) c.fail(w, "expected an array of {name, mode, injectHosts}");
            for (std::size_t i = 0; i < it->size(); ++i) {
                const json& e = (*it)[i];
                const std::string ew = index_path(w, i);
                SecretRule s;
                if (e.is_string()) {
                    s.name = e.get<std::string>();
                } else {
                    if (!e.is_object()) c.fail(ew, "expected {name, mode, injectHosts}");
                    auto name = e.find("name");
                    if (name == e.end()) c.fail(ew, "needs \"name\"");
                    s.name = string(*name, key_path(ew, "name"), c);
                    if (auto m = e.find("mode"); m != e.end()) {
                        std::string mode = string(*m, key_path(ew, "mode"), c);
                        if (mode != "mask" && mode != "deny")
                            c.fail(key_path(ew, "mode"), "expected \"mask\" or \"deny\"");
                        s.mask = mode == "mask";
                    }
                    if (auto h = e.find("headers"); h != e.end())
                        for (auto& header : string_list(*h, key_path(ew, "headers"), c)) {
                            if (header.empty() || header.find_first_of(" \t\r\n:") != std::string::npos)
                                c.fail(key_path(ew, "headers"), "invalid header name " + json_quote(header));
                            s.headers.push_back(header);
                        }
                    if (auto h = e.find("injectHosts"); h != e.end())
                        for (auto& host : string_list(*h, key_path(ew, "injectHosts"), c)) {
                            std::string normal;
                            if (normalise_host(host, normal) == HostKind::Invalid)
                                c.fail(key_path(ew, "injectHosts"), "invalid host " + json_quote(host));
                            s.inject_hosts.push_back(normal);
                        }
                }
                if (s.name.empty() || s.name.find('=') != std::string::npos)
                    c.fail(ew, "invalid variable name " + json_quote(s.name));
                s.rule = Rule{e.dump(), c.source(ew)};
                out.secrets.push_back(std::move(s));
            }
        } else if (k == "files") {
            if (!it->is_array()) c.fail(w, "expected an array of {path, mode}");
            for (std::size_t i = 0; i < it->size(); ++i) {
                const json& e = (*it)[i];
                const std::string ew = index_path(w, i);
                std::string path, mode = "deny";
                if (e.is_string()) {
                    path = e.get<std::string>();
                } else {
                    if (!e.is_object() || !e.contains("path")) c.fail(ew, "expected {path, mode}");
                    path = string(e["path"], key_path(ew, "path"), c);
                    if (e.contains("mode")) mode = string(e["mode"], key_path(ew, "mode"), c);
                }
                if (mode == "deny") {
                    c.deny_read(path, ew);
                    out.denied_files.push_back(Rule{path, c.source(ew)});
                } else if (mode == "mask") {
                    // A masked file would need a sentinel file with the real one substituted on the way out;
                    // the safe reading is to hide it.
                    c.warn(ew, "mode \"mask\" for files is read as \"deny\" (the file is hidden)");
                    c.deny_read(path, ew);
                    out.denied_files.push_back(Rule{path, c.source(ew)});
                } else {
                    c.fail(key_path(ew, "mode"), "expected \"deny\" or \"mask\"");
                }
            }
        } else {
            c.warn(w, "unknown key; ignored (a typo?)");
        }
    }
}

}  // namespace

void load_inspection_key(const json& value, const std::string& key, const std::string& where,
                         InspectionPolicy& out, const InspectionContext& c) {
    if (key == "inspect") {
        if (!value.is_array()) c.fail(where, "expected an array of domain patterns");
        for (std::size_t i = 0; i < value.size(); ++i) {
            HostPattern p;
            // Inspecting less than meant lets requests past their request rules: refuse a bad entry.
            host_pattern(value[i], index_path(where, i), true, c, p);
            out.inspect.push_back(std::move(p));
        }
    } else if (key == "tlsTerminate") {
        tls_terminate(value, where, out, c);
    } else if (key == "requestRules") {
        if (!value.is_array()) c.fail(where, "expected an array of {host, methods, paths, action}");
        for (std::size_t i = 0; i < value.size(); ++i)
            request_rule(value[i], index_path(where, i), out, c);
    } else if (key == "parentProxy") {
        parent_proxy(value, where, out, c);
    } else if (key == "credentials") {
        credentials(value, where, out, c);
    }
}

std::string add_inspect_flag(const std::string& text, InspectionPolicy& out) {
    auto parsed = parse_domain_pattern(text, PatternDialect::ClaudeCode);
    if (auto* why = std::get_if<std::string>(&parsed)) return "--inspect " + json_quote(text) + ": " + *why;
    out.inspect.push_back(
        HostPattern{std::get<DomainPattern>(parsed), Rule{text, Source{Layer::Flags, "", "--inspect", 0}}});
    return {};
}

}  // namespace cordon::policy::detail
