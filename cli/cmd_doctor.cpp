// `cordon doctor [--json]`: what this host lets cordon's jail use (jail/probe.hpp tries each layer), which
// jail `cordon run` gets, and for each missing layer the cause and its fix.
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "jail/probe.hpp"

namespace cordon::cli {

namespace {

constexpr const char* kDoctorHelp =
    "usage: cordon doctor [--json]\n"
    "\n"
    "Finds out which jail `cordon run` gets on this host by trying, in child processes, what each jail "
    "needs:\n"
    "user, mount, network and PID namespaces (id maps, mounts, a fresh /proc, lo), the nftables rules of\n"
    "transparent proxying in a network namespace, a seccomp filter, user notification and ADDFD, "
    "pidfd_getfd,\n"
    "Landlock (its ABI, TCP port rules, scoping), cgroup delegation, and AppArmor's user-namespace "
    "restriction.\n"
    "For each missing layer it names the cause (a sysctl such as user.max_user_namespaces,\n"
    "kernel.unprivileged_userns_clone or kernel.apparmor_restrict_unprivileged_userns, a seccomp filter, a\n"
    "missing capability, the sandbox or container around cordon) and the fix for that cause (cordon's "
    "AppArmor\n"
    "profile, a sysctl, `docker run` flags, the outer sandbox's setting).\n"
    "\n"
    "The jails:\n"
    "  namespaces  the full jail: its own user, mount, PID, network, IPC, UTS and cgroup namespaces\n"
    "  landlock    the namespace-free jail, where user namespaces cannot be had: Landlock for the file "
    "system,\n"
    "              the seccomp notifier for writes, protected names and every connect; it lacks a PID\n"
    "              namespace, a private /tmp and transparent proxying (doctor lists what it lacks here)\n"
    "\n"
    "Exit status: 0 the namespace jail, 1 the namespace-free jail, 2 no jail possible (or a usage error).\n"
    "\n"
    "  --json                 print the report as JSON: {\"jail\", \"exit_status\", \"blocker\", \"lacks\",\n"
    "                         \"layers\": {KEY: {\"name\", \"available\", \"detail\", \"cause\", \"fix\"}},\n"
    "                         \"facts\"}\n"
    "  -h, --help             print this help\n";

nlohmann::json facts_json(const jail::HostFacts& f) {
    auto opt = [](const std::optional<long>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    return {{"kernel", f.kernel},
            {"euid", f.euid},
            {"cap_effective", f.cap_effective},
            {"seccomp_mode", f.seccomp_mode},
            {"no_new_privs", f.no_new_privs},
            {"nested_user_namespace", f.nested_user_namespace},
            {"pid1", f.pid1},
            {"container", f.container},
            {"sandbox_runtime", f.sandbox_runtime},
            {"kernel.unprivileged_userns_clone", opt(f.unprivileged_userns_clone)},
            {"user.max_user_namespaces", opt(f.max_user_namespaces)},
            {"kernel.apparmor_restrict_unprivileged_userns", opt(f.apparmor_restrict_userns)},
            {"apparmor_enabled", f.apparmor_enabled},
            {"apparmor_label", f.apparmor_label},
            {"landlock_abi", f.landlock_abi},
            {"cgroup_version", f.cgroup_version}};
}

void print_text(const jail::HostFacts& f, const jail::HostReport& r) {
    std::cout << "cordon doctor: Linux " << f.kernel << ", uid " << f.euid << "\n\n";
    for (const auto& l : r.layers) {
        std::cout << "  " << std::left << std::setw(32) << l.name << (l.available ? "yes " : "no  ")
                  << l.detail << "\n";
        if (!l.cause.empty()) std::cout << std::string(38, ' ') << "cause: " << l.cause << "\n";
        if (!l.fix.empty()) std::cout << std::string(38, ' ') << "fix:   " << l.fix << "\n";
    }
    std::cout << "\n";
    switch (r.jail) {
        case jail::JailKind::Namespaces:
            std::cout << "jail: namespaces (`cordon run` uses the full jail)\n";
            break;
        case jail::JailKind::Landlock:
            std::cout
                << "jail: landlock (`cordon run` falls back to the namespace-free jail: Landlock and the "
                   "seccomp notifier)\n";
            break;
        case jail::JailKind::None:
            std::cout << "jail: none (`cordon run` cannot jail a command here)\n";
            break;
    }
    if (!r.lacks.empty()) {
        std::cout << "it lacks:\n";
        for (const auto& lack : r.lacks)
            std::cout << "  - " << lack << "\n";
    }
    if (!r.blocker.empty()) {
        for (const auto& l : r.layers) {
            if (l.key != r.blocker) continue;
            std::cout << "for the namespace jail: the " << l.name << " is missing";
            if (!l.cause.empty()) std::cout << ": " << l.cause;
            std::cout << "\n";
            if (!l.fix.empty()) std::cout << "  fix: " << l.fix << "\n";
        }
    }
}

}  // namespace

int cmd_doctor(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    bool json = false;
    while (!args.done()) {
        if (args.flag("--help") || args.flag("-h")) {
            std::cout << kDoctorHelp;
            return 0;
        }
        if (args.flag("--json")) {
            json = true;
            continue;
        }
        throw UsageError("unexpected argument " + args.peek());
    }
    jail::HostFacts facts = jail::probe_host();
    jail::HostReport report = jail::diagnose(facts);
    if (json) {
        nlohmann::json layers = nlohmann::json::object();
        for (const auto& l : report.layers)
            layers[l.key] = {{"name", l.name},
                             {"available", l.available},
                             {"detail", l.detail},
                             {"cause", l.cause},
                             {"fix", l.fix}};
        nlohmann::json out = {{"jail", std::string(jail::to_string(report.jail))},
                              {"exit_status", report.exit_status()},
                              {"blocker", report.blocker},
                              {"lacks", report.lacks},
                              {"layers", layers},
                              {"facts", facts_json(facts)}};
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        print_text(facts, report);
    }
    return report.exit_status();
}

}  // namespace cordon::cli
