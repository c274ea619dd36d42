#include <cstring>
#include <iostream>
#include <string_view>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/version.hpp"

namespace {

constexpr const char* kUsage =
    "usage: cordon COMMAND [options]\n"
    "\n"
    "Commands:\n"
    "  run -- CMD ARGS  run CMD in a jail whose only way out is cordon's egress proxy\n"
    "  run -c 'SHELL'   the same for a shell command string\n"
    "  session start|stop|list\n"
    "                   a long-lived jail that commands join (cordon run --session NAME -- CMD)\n"
    "  proxy --listen ADDR:PORT\n"
    "                   run the egress filter alone: HTTP proxy and SOCKS5 on one port\n"
    "  ca init|show|export\n"
    "                   manage the CA for inspected (TLS-terminated) connections\n"
    "  check TARGET     print the policy decision for a URL, host, host:port, read:PATH or write:PATH\n"
    "  policy           print the effective merged policy as JSON\n"
    "  claude-hook      Claude Code's PreToolUse hook: Bash commands run under `cordon run` (--install)\n"
    "  connect HOST PORT\n"
    "                   connect through the jail's SOCKS5 proxy and relay stdin/stdout (ssh ProxyCommand)\n"
    "  doctor           which jail this host allows, what is missing, why, and the fix (--json)\n"
    "\n"
    "  cordon COMMAND --help   describes the command's flags\n"
    "  cordon --version        prints the version\n";

struct Command {
    std::string_view name;
    int (*run)(int, char**);
};

constexpr Command kCommands[] = {
    {"ca", cordon::cli::cmd_ca},
    {"check", cordon::cli::cmd_check},
    {"claude-hook", cordon::cli::cmd_claude_hook},
    {"connect", cordon::cli::cmd_connect},
    {"doctor", cordon::cli::cmd_doctor},
    {"policy", cordon::cli::cmd_policy},
    {"proxy", cordon::cli::cmd_proxy},
    {"run", cordon::cli::cmd_run},
    {"session", cordon::cli::cmd_session},
};

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << kUsage;
        return 2;
    }
    std::string_view first = argv[1];
    if (first == "--help" || first == "-h" || first == "help") {
        std::cout << kUsage;
        return 0;
    }
    if (first == "--version" || first == "-V") {
        std::cout << "cordon " << cordon::kVersion << "\n";
        return 0;
    }
    for (const auto& command : kCommands) {
        if (command.name != first) continue;
        try {
            return command.run(argc - 2, argv + 2);
        } catch (const cordon::cli::UsageError& e) {
            std::cerr << "cordon " << first << ": " << e.what() << "\n"
                      << "Try 'cordon " << first << " --help'.\n";
            return 2;
        }
    }
    std::cerr << "cordon: unknown command '" << first << "'\n" << kUsage;
    return 2;
}
