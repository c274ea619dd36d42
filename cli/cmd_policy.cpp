// `cordon policy [policy flags]`: the effective merged policy as JSON, every entry with its source; with
// `--format sbpl`, the macOS Seatbelt profile made from it.
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/write_rules.hpp"
#include "seatbelt/profile.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kPolicyHelp =
    "usage: cordon policy [policy flags]\n"
    "       cordon policy suggest --from AUDIT.jsonl [--format claude|srt]   (see its --help)\n"
    "\n"
    "Prints the effective policy, merged from every source, as JSON:\n"
    "  network.allowedDomains / deniedDomains / ignoredAllowedDomains / allowedAddresses / allowUnixSockets\n"
    "    (each entry {\"rule\", \"source\": {\"layer\", \"file\", \"line\", \"where\"}}), "
    "allowAllUnixSockets,\n"
    "    (allowUnixSockets entries add \"path\": `~` expanded, the socket the jail lets connect),\n"
    "    allowManagedDomainsOnly;\n"
    "  filesystem.allowWrite / denyWrite / denyRead / allowRead (each entry adds the resolved \"path\" and "
    "\"glob\"),\n"
    "    alwaysReadOnlyNames, readScope ({\"scope\": \"all\"|\"project\", \"source\", \"includes\", "
    "\"hidden\"});\n"
    "  filesystem.writeRules: the jail's write rules, in the order applied (each {\"name\", \"jail\": "
    "\"all\"|\n"
    "    \"landlock\", \"decides\", \"why\", \"limit\"}; `cordon check write:PATH` names the one that "
    "decides);\n"
    "  filesRead (every settings file read) and warnings.\n"
    "Exit status: 0, or 2 on a usage or settings error.\n"
    "\n"
    "  --format json|sbpl     json (the default), or the macOS Seatbelt profile (SBPL) `cordon run` gives\n"
    "                         sandbox-exec on a Mac: reads, writes and network as the Linux jail grants "
    "them\n"
    "  --proxy-port PORT      sbpl: the loopback port of cordon's proxy, the only network (repeatable;\n"
    "                         default 3128, as in the Linux jail)\n"
    "  --host-port PORT       sbpl: a host loopback port the command may connect to too (repeatable)\n"
    "  --audit-log FILE       sbpl: the proxy's audit log, which the command may not write\n"
    "  --temp-dir DIR         sbpl: the command's private temporary directory, writable instead of /tmp\n"
    "  --write-rules          print the jail's write rules as text, one paragraph each, and nothing else\n"
    "  -h, --help             print this help\n"
    "\n"
    "\n";

}  // namespace

int cmd_policy(int argc, char** argv) {
    if (argc > 0 && std::string(argv[0]) == "suggest") return cmd_policy_suggest(argc - 1, argv + 1);
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions options;
    std::string format = "json";
    seatbelt::ProfileOptions sbpl;
    bool sbpl_flags = false;
    bool write_rules_text = false;
    auto port = [&](const std::string& flag) {
        const std::string v = args.value();
        if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos ||
            std::stoul(v) == 0 || std::stoul(v) > 65535)
            throw UsageError(flag + " needs a port number (1-65535), not '" + v + "'");
        sbpl_flags = true;
        return static_cast<std::uint16_t>(std::stoul(v));
    };
    auto absolute = [&](const std::string& flag) {
        std::string v = args.value();
        if (v.empty()) throw UsageError(flag + " needs a path");
        sbpl_flags = true;
        std::error_code ec;
        return std::filesystem::absolute(v, ec).lexically_normal().string();
    };
    while (!args.done()) {
        if (args.peek() == "--help" || args.peek() == "-h") {
            std::cout << kPolicyHelp << kPolicyFlagsHelp;
            return 0;
        }
        if (parse_policy_flag(args, options)) continue;
        if (args.flag("--format")) {
            format = args.value();
            if (format != "json" && format != "sbpl")
                throw UsageError("--format is json or sbpl, not '" + format + "'");
        } else if (args.flag("--write-rules")) {
            write_rules_text = true;
        } else if (args.flag("--proxy-port")) {
            sbpl.proxy_ports.push_back(port("--proxy-port"));
        } else if (args.flag("--host-port")) {
            sbpl.host_ports.push_back(port("--host-port"));
        } else if (args.flag("--audit-log")) {
            sbpl.audit_log = absolute("--audit-log");
        } else if (args.flag("--temp-dir")) {
            sbpl.temp_dir = absolute("--temp-dir");
        } else {
            throw UsageError("unexpected argument " + args.peek());
        }
    }
    if (sbpl_flags && format != "sbpl")
        throw UsageError("--proxy-port, --host-port, --audit-log and --temp-dir go with --format sbpl");
    if (write_rules_text && (format != "json" || sbpl_flags))
        throw UsageError("--write-rules prints the write rules alone: it takes no --format or sbpl flags");
    if (write_rules_text) {
        int n = 0;
        for (const policy::WriteRule& rule : policy::write_rules()) {
            std::cout << ++n << ". " << rule.name
                      << (rule.landlock_only ? " (the jail without namespaces, --jail landlock)"
                                             : " (every jail)")
                      << "\n   decides: " << rule.decides << "\n   why: " << rule.why << "\n";
            if (!rule.limit.empty()) std::cout << "   limit: " << rule.limit << "\n";
        }
        return 0;
    }
    auto policy = load_policy_or_report(options);
    if (!policy) return 2;
    if (format == "sbpl") {
        if (sbpl.proxy_ports.empty()) sbpl.proxy_ports.push_back(3128);
        sbpl.canonical = seatbelt::canonical_path;
        const seatbelt::Profile profile = seatbelt::make_profile(*policy, sbpl);
        for (const std::string& warning : profile.warnings)
            std::cerr << "cordon policy: warning: " << warning << "\n";
        std::cout << profile.text;
        return 0;
    }
    nlohmann::json out = policy->to_json();
    out["filesystem"]["writeRules"] = policy::write_rules_json();
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace cordon::cli
