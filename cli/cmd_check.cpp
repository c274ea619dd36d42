// `cordon check [policy flags] [--json] TARGET`: the decision for one network target or path, with the rule
// that made it. Exit 0 allow, 1 deny, 2 usage or settings error.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"

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
    "\n"
    "Output: the first line is `allow` or `deny`, then the reason, the rule and its source.\n"
    "Exit status: 0 allow, 1 deny, 2 usage or settings error.\n"
    "\n"
    "  --json                 print one JSON object: "
    "{\"decision\",\"reason\",\"rule\",\"source\",\"target\"}\n"
    "  -h, --help             print this help\n"
    "\n"
    "\n";

std::string describe(const policy::Source& source) {
    std::string out(policy::to_string(source.layer));
    if (!source.file.empty()) {
        out += " " + source.file;
        if (source.line > 0) out += ":" + std::to_string(source.line);
    }
    if (!source.where.empty()) out += " " + source.where;
    return out;
}

}  // namespace

int cmd_check(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions options;
    bool as_json = false;
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
    if (target->rfind("read:", 0) == 0 || target->rfind("write:", 0) == 0) {
        const bool write = (*target)[0] == 'w';
        std::string path_text = target->substr(write ? 6 : 5);
        if (path_text.empty()) throw UsageError("empty path in '" + *target + "'");
        std::filesystem::path path(path_text);
        if (path_text == "~" || path_text.rfind("~/", 0) == 0) {
            const char* home = std::getenv("HOME");
            path = std::filesystem::path(home != nullptr ? home : "/") /
                   path_text.substr(path_text.size() > 1 ? 2 : 1);
        }
        if (path.is_relative()) path = cwd / path;
        path = path.lexically_normal();
        shown = (write ? "write:" : "read:") + path.string();
        decision = write ? policy->decide_write(path) : policy->decide_read(path);
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
    }

    if (as_json) {
        nlohmann::json out = decision.to_json();
        out["target"] = shown;
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        std::cout << policy::to_string(decision.verdict) << "\n"
                  << "target: " << shown << "\n"
                  << "reason: " << policy::to_string(decision.reason) << "\n";
        if (decision.rule) {
            std::cout << "rule: " << decision.rule->text << "\n"
                      << "source: " << describe(decision.rule->source) << "\n";
        } else {
            std::cout << "rule: (none)\n";
        }
    }
    return decision.allowed() ? 0 : 1;
}

}  // namespace cordon::cli
