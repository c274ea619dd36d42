// `cordon check [policy flags] [--json] TARGET`: the decision for one network target or path, with the rule
// that made it. Exit 0 allow, 1 deny, 2 usage or settings error.
#include <uv.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/syntax.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/resolver.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kCheckHelp =
    "usage: cordon check [policy flags] [--json] TARGET\n"
    "\n"
    "Prints the policy decision for TARGET and the rule that made it (layer, file:line, JSON path).\n"
    "TARGET is one of:\n"
    "  https://host[:port]/path   a URL (port defaults to 443 for https, 80 for http)\n"
    "  host | host:port           a name or IPv4 address (port defaults to 443)\n"
    "  [v6]:port | v6             an IPv6 address\n"
    "  read:PATH | write:PATH     a filesystem access (PATH absolute, ~/..., or relative to the working\n"
    "                             directory)\n"
    "  unix:PATH                  a connect to a Unix socket (allowUnixSockets, symlinks followed, or\n"
    "                             allowAllUnixSockets)\n"
    "\n"
    "Output: the first line is `allow` or `deny`, then the reason, the rule and its source.\n"
    "Exit status: 0 allow, 1 deny, 2 usage or settings error.\n"
    "\n"
    "  --json                 print one JSON object: "
    "{\"decision\",\"reason\",\"rule\",\"source\",\"target\"}\n"
    "  --resolve              for a network target the policy allows, also resolve the name (as the proxy\n"
    "                         does, with --dns-server) and apply the address guard (--allow-address): the\n"
    "                         answer is what the proxy would do. Adds \"addresses\" to --json.\n"
    "  --dns-server IP[:PORT] the DNS server for --resolve (repeatable; default /etc/resolv.conf)\n"
    "  -h, --help             print this help\n"
    "\n"
    "\n";

// The proxy's view of an allowed target: the addresses the name resolves to (an IP literal is its own
// address) and, for each, the address guard's class when it refuses it.
struct Guarded {
    std::string error;                                           // "nxdomain", "dns-failure", ...
    std::vector<std::pair<std::string, std::string>> addresses;  // ip, refusing class ("" = passes)
    bool allowed() const {
        if (!error.empty()) return false;
        for (const auto& a : addresses)
            if (a.second.empty()) return true;
        return false;
    }
};

// Resolves with the proxy's own resolver (c-ares, the same --dns-server flags) and applies the proxy's
// address guard with the policy's allowed ranges, in the order decision.cpp does.
Guarded resolve_and_guard(const policy::Policy& policy, const policy::HostPort& target,
                          const std::vector<std::string>& dns_servers) {
    std::vector<proxy::Cidr> ranges;
    for (const auto& range : policy.network().allowed_ranges)
        ranges.push_back(proxy::Cidr::from(range));
    const proxy::AddressGuard guard(std::move(ranges));
    Guarded out;
    std::vector<proxy::Address> found;
    if (auto literal = proxy::Address::parse(target.host)) {
        found.push_back(*literal);
    } else {
        uv_loop_t loop;
        uv_loop_init(&loop);
        {
            auto resolver = proxy::Resolver::create(&loop, dns_servers);
            proxy::ResolveResult result;
            auto token =
                resolver->resolve(target.host, [&](proxy::ResolveResult r) { result = std::move(r); });
            uv_run(&loop, UV_RUN_DEFAULT);
            if (result.error != proxy::ResolveError::None) out.error = proxy::to_string(result.error);
            found = std::move(result.addresses);
            resolver->close();
            uv_run(&loop, UV_RUN_DEFAULT);
        }
        uv_loop_close(&loop);
    }
    for (proxy::Address a : found) {
        a = a.unmapped();
        a.set_port(target.port);
        auto why = guard.check(a);
        out.addresses.emplace_back(a.ip(), why.value_or(""));
    }
    return out;
}

}  // namespace

namespace {

// unix:PATH: what the jail decides for a connect (jail/unix_sockets.hpp), in the host's view: the socket file
// PATH leads to (symlinks followed) is one of the listed ones (`~` expanded), or allowAllUnixSockets.
policy::Decision decide_unix_socket(const policy::Policy& policy, const std::filesystem::path& path) {
    policy::Decision d;
    const auto& net = policy.network();
    if (net.allow_all_unix_sockets) {
        d.verdict = policy::Verdict::Allow;
        d.reason = policy::Reason::AllowedByRule;
        d.rule = std::make_shared<const policy::Rule>(policy::Rule{"allowAllUnixSockets: true", {}});
        return d;
    }
    std::error_code ec;
    const auto target = std::filesystem::weakly_canonical(path, ec);
    for (const auto& rule : net.allow_unix_sockets) {
        std::string listed = rule.text;
        if (listed == "~" || listed.rfind("~/", 0) == 0)
            listed = policy.filesystem().home.string() + listed.substr(1);
        if (listed.empty() || listed[0] != '/') continue;
        std::error_code lec;
        if (!ec && std::filesystem::weakly_canonical(listed, lec) == target && !lec) {
            d.verdict = policy::Verdict::Allow;
            d.reason = policy::Reason::AllowedByRule;
            d.rule = std::make_shared<const policy::Rule>(rule);
            return d;
        }
    }
    return d;  // deny, blocked-by-allowlist
}

}  // namespace

int cmd_check(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions options;
    bool as_json = false;
    bool resolve = false;
    std::vector<std::string> dns_servers;
    std::optional<std::string> target;
    bool only_positional = false;
    while (!args.done()) {
        if (!only_positional) {
            if (args.peek() == "--") {
                args.next();
                only_positional = true;
                continue;
            }
            if (args.peek() == "--help" || args.peek() == "-h") {
                std::cout << kCheckHelp << kPolicyFlagsHelp;
                return 0;
            }
            if (args.flag("--json")) {
                as_json = true;
                continue;
            }
            if (args.flag("--resolve")) {
                resolve = true;
                continue;
            }
            if (args.flag("--dns-server")) {
                std::string value = args.value();
                if (proxy::dns_server_to_csv(value).empty())
                    throw UsageError("--dns-server needs IP or IP:PORT ([v6]:PORT), got '" + value + "'");
                dns_servers.push_back(value);
                continue;
            }
            if (parse_policy_flag(args, options)) continue;
            if (args.peek().size() > 1 && args.peek()[0] == '-')
                throw UsageError("unknown flag " + args.peek());
        }
        if (target) throw UsageError("more than one TARGET ('" + *target + "' and '" + args.peek() + "')");
        target = args.next();
    }
    if (!target) throw UsageError("missing TARGET");

    auto policy = load_policy_or_report(options);
    if (!policy) return 2;

    std::error_code ec;
    const std::filesystem::path cwd =
        options.cwd.empty() ? std::filesystem::current_path(ec) : std::filesystem::absolute(options.cwd, ec);
    policy::Decision decision;
    std::string shown;
    std::optional<Guarded> guarded;
    const bool unix_socket = target->rfind("unix:", 0) == 0;
    if (unix_socket || target->rfind("read:", 0) == 0 || target->rfind("write:", 0) == 0) {
        if (resolve) throw UsageError("--resolve applies to network targets, not to '" + *target + "'");
        const bool write = (*target)[0] == 'w';
        std::string path_text = target->substr(write ? 6 : 5);  // "read:" and "unix:" alike
        if (path_text.empty()) throw UsageError("empty path in '" + *target + "'");
        std::filesystem::path path(path_text);
        if (path_text == "~" || path_text.rfind("~/", 0) == 0) {
            const char* home = std::getenv("HOME");
            path = std::filesystem::path(home != nullptr ? home : "/") /
                   path_text.substr(path_text.size() > 1 ? 2 : 1);
        }
        if (path.is_relative()) path = cwd / path;
        path = path.lexically_normal();
        if (unix_socket) {
            shown = "unix:" + path.string();
            decision = decide_unix_socket(*policy, path);
        } else {
            shown = (write ? "write:" : "read:") + path.string();
            decision = write ? policy->decide_write(path) : policy->decide_read(path);
        }
    } else {
        auto parsed = policy::parse_target(*target);
        if (auto* why = std::get_if<std::string>(&parsed)) {
            std::cerr << "cordon check: bad target '" << *target << "': " << *why << "\n";
            return 2;
        }
        const auto& hp = std::get<policy::HostPort>(parsed);
        const bool v6 = hp.host.find(':') != std::string::npos;
        shown = (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
        decision = policy->decide_connect(hp.host, hp.port);
        if (resolve && decision.allowed()) {
            try {
                guarded = resolve_and_guard(*policy, hp, dns_servers);
            } catch (const std::exception& e) {
                std::cerr << "cordon check: " << e.what() << "\n";
                return 2;
            }
        }
    }

    // With --resolve, an allowed name is refused when it does not resolve or every answer is refused by the
    // address guard (the proxy then answers 502 / 403 blocked-by-address-guard).
    const bool allowed = decision.allowed() && (!guarded || guarded->allowed());
    std::string reason(policy::to_string(decision.reason));
    if (guarded && !guarded->error.empty()) reason = guarded->error;
    if (guarded && guarded->error.empty() && !guarded->allowed()) reason = "blocked-by-address-guard";
    if (as_json) {
        nlohmann::json out = decision.to_json();
        out["target"] = shown;
        if (guarded) {
            out["decision"] = allowed ? "allow" : "deny";
            out["reason"] = reason;
            nlohmann::json addresses = nlohmann::json::array();
            for (const auto& [ip, refused] : guarded->addresses)
                addresses.push_back(
                    {{"address", ip},
                     {"guard", refused.empty() ? nlohmann::json(nullptr) : nlohmann::json(refused)}});
            out["addresses"] = addresses;
        }
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        std::cout << (allowed ? "allow" : "deny") << "\n"
                  << "target: " << shown << "\n"
                  << "reason: " << reason << "\n";
        if (decision.rule) {
            std::cout << "rule: " << decision.rule->text << "\n"
                      << "source: " << policy::format_source(decision.rule->source) << "\n";
        } else {
            std::cout << "rule: (none)\n";
        }
        if (decision.reason_text)
            std::cout << "reason_text: " << decision.reason_text->text << "\n"
                      << "reason_source: " << policy::format_source(decision.reason_text->source) << "\n";
        if (guarded) {
            for (const auto& [ip, refused] : guarded->addresses)
                std::cout << "address: " << ip
                          << (refused.empty() ? std::string(" (passes the address guard)")
                                              : " (refused by the address guard: " + refused +
                                                    "; allow it with --allow-address)")
                          << "\n";
        }
    }
    return allowed ? 0 : 1;
}

}  // namespace cordon::cli
