// `cordon policy [policy flags]`: the effective merged policy as JSON, every entry with its source.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kPolicyHelp =
    "usage: cordon policy [policy flags]\n"
    "\n"
    "Prints the effective policy, merged from every source, as JSON:\n"
    "  network.allowedDomains / deniedDomains / ignoredAllowedDomains / allowedAddresses / allowUnixSockets\n"
    "    (each entry {\"rule\", \"source\": {\"layer\", \"file\", \"line\", \"where\"}}), "
    "allowAllUnixSockets,\n"
    "    allowManagedDomainsOnly;\n"
    "  filesystem.allowWrite / denyWrite / denyRead / allowRead (each entry adds the resolved \"path\" and "
    "\"glob\"),\n"
    "    alwaysReadOnlyNames, readScope ({\"scope\": \"all\"|\"project\", \"source\", \"includes\", "
    "\"hidden\"});\n"
    "  filesRead (every settings file read) and warnings.\n"
    "Exit status: 0, or 2 on a usage or settings error.\n"
    "\n"
    "  -h, --help             print this help\n"
    "\n"
    "\n";

}  // namespace

int cmd_policy(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions options;
    while (!args.done()) {
        if (args.peek() == "--help" || args.peek() == "-h") {
            std::cout << kPolicyHelp << kPolicyFlagsHelp;
            return 0;
        }
        if (parse_policy_flag(args, options)) continue;
        throw UsageError("unexpected argument " + args.peek());
    }
    auto policy = load_policy_or_report(options);
    if (!policy) return 2;
    std::cout << policy->to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    return 0;
}

}  // namespace cordon::cli
