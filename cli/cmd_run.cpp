// `cordon run`: its flags. The supervisor itself is run/ (run::run).
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "certs/certs.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/policy_reload.hpp"
#include "cli/proxy_flags.hpp"
#include "policy/ports.hpp"
#include "policy/syntax.hpp"
#include "run/environment.hpp"
#include "run/run.hpp"
#include "run/session.hpp"

namespace cordon::cli {

namespace {

constexpr const char* kRunHelp =
    "usage: cordon run [flags] -- CMD [ARGS...]\n"
    "       cordon run [flags] -c 'shell string'     (runs /bin/sh -c)\n"
    "\n"
    "Runs CMD in a jail: a read-only view of / with the working directory, a private /tmp and allowWrite\n"
    "writable; denyWrite and the always-read-only files kept read-only; denyRead hidden; no network but\n"
    "cordon's proxy (HTTP_PROXY & co point at it); no capabilities, no_new_privs, seccomp, Landlock.\n"
    "The working directory is writable only when it is a project: run from /, a system directory or the\n"
    "home directory, cordon stops (125) unless --allow-write . insists.\n"
    "Exits with CMD's status, 128+N when CMD was killed by signal N, 124 on --timeout, 125 when the jail\n"
    "(its limits, the proxy, the audit log) could not be set up, 126/127 when CMD could not be run, 2 for\n"
    "usage errors and settings that do not load.\n"
    "\n"
    "Jail flags:\n"
    "  -c STRING              run STRING with /bin/sh -c\n"
    "  --session NAME         run CMD in the running session NAME (cordon session --help), under its policy\n"
    "                         and jail: no other flag\n"
    "  --jail auto|namespaces|landlock\n"
    "                         which jail (default auto, or sandbox.jail): namespaces, or without them\n"
    "                         (landlock: Landlock, the seccomp notifier for writes and every connect;\n"
    "                         one stderr line says what it lacks); auto uses the namespace jail where the\n"
    "                         host allows one and falls back to the other (not with --strict)\n"
    "  --strict               refuse to run when the kernel lacks a protection layer (Landlock, its "
    "scoping),\n"
    "                         and refuse the fallback to the jail without namespaces\n"
    "  --best-effort          run even when a restriction cannot be applied (Landlock, seccomp, limits),\n"
    "                         saying once on stderr what is missing\n"
    "  --allow-ptrace         let the command use ptrace (debuggers); refused by default\n"
    "  --memory SIZE          memory limit for the whole jail (SIZE in bytes, or with K, M, G): a cgroup\n"
    "                         where one can be made (v2 delegated to the caller, or v1 as root), otherwise\n"
    "                         an address-space limit per process (RLIMIT_AS); a note says which holds\n"
    "  --pids N               process limit for the whole jail: a cgroup, otherwise RLIMIT_NPROC of the\n"
    "                         command's user (refused for the host's root, whom it does not bind)\n"
    "  --timeout SECONDS      kill the jail after SECONDS of wall time and exit 124\n"
    "  --user USER[:GID]      (root only) run the command as this user (a name or a UID) instead of root.\n"
    "                         `--user root` or `--user 0` keeps uid 0 without root's supplementary groups.\n"
    "                         Started by root,\n"
    "                         the command otherwise keeps uid 0 (mapped to the host's root) with every\n"
    "                         capability dropped and /proc/sys read-only; files owned by root in writable\n"
    "                         areas stay writable to it. Give --user to run it unprivileged.\n"
    "  --no-network           do not create the proxy listeners: the jail has no network at all\n"
    "  --no-transparent       no transparent proxying: only programs that honour the proxy variables reach\n"
    "                         the network (by default every TCP connection goes through the proxy and names\n"
    "                         through cordon's DNS stub, see below)\n"
    "  --host-port PORT       the host's loopback PORT reachable inside the jail at 127.0.0.1:PORT and\n"
    "                         [::1]:PORT (repeatable; sandbox.network.hostPorts); each connection audited\n"
    "                         (proto \"host-port\"); nothing else of the host's loopback is reachable\n"
    "  --publish [ADDR:]PORT[:JAIL_PORT]\n"
    "                         listen on the host at ADDR:PORT (ADDR 127.0.0.1 unless given; IPv6 in\n"
    "                         brackets) and connect each connection to the jail's loopback JAIL_PORT\n"
    "                         (default PORT) (repeatable; sandbox.network.publishPorts); audited (proto\n"
    "                         \"publish\"); a host port already taken stops the run (125). The jail without\n"
    "                         namespaces has no loopback of its own: a note, nothing published\n"
    "  --strict-sni           refuse a transparent TLS connection whose server name (SNI) is not the name\n"
    "                         it connected to, or cannot be read (by default both are only logged)\n"
    "  --secret NAME=HOST[,HOST...]\n"
    "                         the jail sees NAME as a random sentinel; the proxy puts the real value into\n"
    "                         request headers to HOSTs (inspected ones) and refuses the sentinel elsewhere\n"
    "  --control-fd N         a control channel on descriptor N (a socket; a pipe only reads): JSON\n"
    "                         lines in (settings updates for the network policy of new connections,\n"
    "                         answers to asks), JSON lines out (asks, refusals); filesystem rules\n"
    "                         cannot change for a running jail\n"
    "  --quiet                no end-of-run summaries of refused writes and of refused connections, no\n"
    "                         read-scope hint after a failure, no note about the old-kernel placeholders;\n"
    "                         the notes naming git repositories the run created are always printed\n"
    "  --watch                reload the network policy (not the filesystem rules) when a settings file or\n"
    "                         managed-settings.d changes, as `cordon proxy --watch` does; refused (exit 2)\n"
    "                         when a source lies where the jailed command could write\n"
    "  --help                 this text\n"
    "\n"
    "\n";

// After the environment (run::environment_help).
constexpr const char* kRunHelpEnd =
    "The proxy runs in cordon itself (host side) and serves sockets created inside the jail; the audit log\n"
    "names the jail in `sandbox`. At the end, refused writes and refused connections are summarised on\n"
    "stderr (not with --quiet).\n"
    "Transparent proxying (unless --no-transparent): programs that ignore the variables still go through\n"
    "the policy. /etc/resolv.conf names cordon's DNS stub (127.0.0.1:53), which answers a name the policy\n"
    "could allow with a fake address (198.18.0.0/15, fd63:6f72:646f:6e00::/64) and a denied one with\n"
    "NXDOMAIN, and forwards nothing; every TCP connection is redirected to the proxy (audit `proto`\n"
    "\"transparent\"), which decides on the name; UDP and everything else fail at once.\n"
    "With inspected hosts (--inspect, sandbox.network.inspect), the jail trusts cordon's CA (an ephemeral "
    "one\n"
    "without --ca-dir or `cordon ca init`): the system bundle path shows the system's CAs plus cordon's, "
    "and\n"
    "SSL_CERT_FILE/NODE_EXTRA_CA_CERTS/REQUESTS_CA_BUNDLE/CURL_CA_BUNDLE/GIT_SSL_CAINFO name it.\n"
    "\n";

std::uint64_t parse_size(const std::string& text, const char* flag) {
    std::size_t pos = 0;
    unsigned long long n = 0;
    try {
        n = std::stoull(text, &pos, 10);
    } catch (const std::exception&) {
        throw UsageError(std::string(flag) + ": not a number: '" + text + "'");
    }
    std::string suffix = text.substr(pos);
    unsigned long long mult = 1;
    if (suffix == "K" || suffix == "k")
        mult = 1ULL << 10;
    else if (suffix == "M" || suffix == "m")
        mult = 1ULL << 20;
    else if (suffix == "G" || suffix == "g")
        mult = 1ULL << 30;
    else if (!suffix.empty())
        throw UsageError(std::string(flag) + ": unknown unit in '" + text + "'");
    if (n == 0) throw UsageError(std::string(flag) + " must be greater than 0");
    return n * mult;
}

std::pair<uid_t, gid_t> parse_user(const std::string& text) {
    std::string u = text.substr(0, text.find(':'));
    std::optional<std::string> g;
    if (text.find(':') != std::string::npos) g = text.substr(text.find(':') + 1);
    uid_t uid;
    gid_t gid;
    if (!u.empty() && u.find_first_not_of("0123456789") == std::string::npos) {
        uid = static_cast<uid_t>(std::stoul(u));
        passwd* pw = ::getpwuid(uid);
        gid = pw ? pw->pw_gid : static_cast<gid_t>(uid);
    } else {
        passwd* pw = ::getpwnam(u.c_str());
        if (!pw) throw UsageError("--user: no such user '" + u + "'");
        uid = pw->pw_uid;
        gid = pw->pw_gid;
    }
    if (g) {
        if (g->empty() || g->find_first_not_of("0123456789") != std::string::npos)
            throw UsageError("--user: GID must be a number: '" + *g + "'");
        gid = static_cast<gid_t>(std::stoul(*g));
    }
    return {uid, gid};
}

}  // namespace

int cmd_run(int argc, char** argv) {
    if (auto joined = run_in_session(argc, argv)) return *joined;
    return run_with_flags(argc, argv, nullptr);
}

int run_with_flags(int argc, char** argv, const RunLauncher& launch) {
    policy::LoadOptions load;
    run::Options run;
    bool watch = false;
    ArgCursor args(argc, argv, 0);
    while (!args.done()) {
        if (args.peek() == "--") {
            args.next();
            run.command = args.rest();
            break;
        }
        if (parse_policy_flag(args, load) || parse_proxy_flag(args, run.proxy)) continue;
        if (args.peek() == "--report-only")
            throw UsageError(
                "--report-only is for `cordon proxy` only: `cordon run` always enforces its policy");
        if (args.flag("--help") || args.flag("-h")) {
            std::cout << kRunHelp << run::environment_help() << kRunHelpEnd << kProxyFlagsHelp << "\n"
                      << kPolicyFlagsHelp;
            return 0;
        } else if (args.flag("-c")) {
            run.command = {"/bin/sh", "-c", args.value()};
            if (!args.done()) throw UsageError("-c takes one shell string; nothing may follow it");
        } else if (args.flag("--jail")) {
            run.jail = args.value();
            if (run.jail != "auto" && run.jail != "namespaces" && run.jail != "landlock")
                throw UsageError("--jail takes auto, namespaces or landlock, not '" + run.jail + "'");
        } else if (args.flag("--strict")) {
            run.strict = true;
        } else if (args.flag("--best-effort")) {
            run.best_effort = true;
        } else if (args.flag("--allow-ptrace")) {
            run.allow_ptrace = true;
        } else if (args.flag("--quiet")) {
            run.quiet = true;
        } else if (args.flag("--secret")) {
            // NAME=HOST[,HOST...]: the jail sees a sentinel; the proxy injects the value towards HOSTs.
            std::string v = args.value();
            auto eq = v.find('=');
            if (eq == 0 || eq == std::string::npos || eq + 1 == v.size())
                throw UsageError("--secret needs NAME=HOST[,HOST...], got '" + v + "'");
            run::SecretFlag flag{v.substr(0, eq), {}};
            for (std::size_t start = eq + 1; start <= v.size();) {
                std::size_t comma = std::min(v.find(',', start), v.size());
                auto host = policy::parse_target_host(v.substr(start, comma - start), 443);
                if (auto* why = std::get_if<std::string>(&host))
                    throw UsageError("--secret " + flag.name + ": bad host: " + *why);
                flag.hosts.push_back(std::get<policy::HostPort>(host).host);
                start = comma + 1;
            }
            run.secrets.push_back(std::move(flag));
        } else if (args.flag("--control-fd")) {
            std::string v = args.value();
            if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos)
                throw UsageError("--control-fd needs a file descriptor number, not '" + v + "'");
            int fd = std::stoi(v);
            struct stat st {};
            if (fd <= 2 || ::fcntl(fd, F_GETFD) < 0 || ::fstat(fd, &st) != 0)
                throw UsageError("--control-fd " + v + ": not an open descriptor above 2");
            if (!S_ISSOCK(st.st_mode) && !S_ISFIFO(st.st_mode))
                throw UsageError("--control-fd " + v + ": not a socket or a pipe");
            ::fcntl(fd, F_SETFD, FD_CLOEXEC);  // the supervisor's, never the jail's
            run.control_fd = fd;
        } else if (args.flag("--watch")) {
            watch = true;
        } else if (args.flag("--no-network")) {
            run.network = false;
        } else if (args.flag("--no-transparent")) {
            run.transparent = false;
        } else if (args.flag("--host-port")) {
            const std::string v = args.value();
            if (auto port = policy::parse_host_port(v); auto* why = std::get_if<std::string>(&port))
                throw UsageError("--host-port '" + v + "': " + *why);
            load.host_ports.push_back(v);
        } else if (args.flag("--publish")) {
            const std::string v = args.value();
            if (auto port = policy::parse_published_port(v); auto* why = std::get_if<std::string>(&port))
                throw UsageError("--publish '" + v + "': " + *why + " ([ADDR:]PORT[:JAIL_PORT])");
            load.publish_ports.push_back(v);
        } else if (args.flag("--strict-sni")) {
            run.proxy.strict_sni = true;
        } else if (args.flag("--memory")) {
            run.memory = parse_size(args.value(), "--memory");
        } else if (args.flag("--pids")) {
            std::string v = args.value();
            if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || std::stoull(v) == 0)
                throw UsageError("--pids needs a positive number, not '" + v + "'");
            run.pids = std::stoull(v);
        } else if (args.flag("--timeout")) {
            std::string v = args.value();
            char* end = nullptr;
            double t = std::strtod(v.c_str(), &end);
            if (v.empty() || *end != '\0' || !(t > 0) || !std::isfinite(t))
                throw UsageError("--timeout needs a positive number of seconds, not '" + v + "'");
            run.timeout = t;
        } else if (args.flag("--user")) {
            run.user = parse_user(args.value());
            if (::getuid() != 0) throw UsageError("--user needs root (an unprivileged user runs as itself)");
        } else if (args.peek().size() > 1 && args.peek()[0] == '-') {
            throw UsageError("unknown flag '" + args.peek() + "'");
        } else {
            run.command = args.rest();
        }
    }
    if (run.command.empty() && !launch)
        throw UsageError("no command given (cordon run [flags] -- CMD ARGS... or -c STRING)");
    if (launch && !run.command.empty())
        throw UsageError(
            "a session starts without a command: join it with `cordon run --session NAME -- CMD`");
    if (launch && run.timeout) throw UsageError("--timeout is for one command; a session ends with --linger");
    if (watch && !run.network)
        throw UsageError("--watch reloads the network policy; with --no-network there is none");
    if (run.strict && run.best_effort) throw UsageError("--strict and --best-effort contradict each other");

    // The CA's private key signs what the jail's clients trust (and what a user who exported it trusts on the
    // host): the jailed command neither reads nor replaces it, whether or not this run inspects.
    load.private_dirs.push_back(run.proxy.ca_dir.empty() ? certs::default_ca_dir()
                                                         : std::filesystem::path(run.proxy.ca_dir));
    // cordon's sessions (their registries, control sockets and directories): never written by a jailed
    // command, whose uid (or --user's) could otherwise unregister a session's socket and join it, or put a
    // socket of its own in the place of one.
    // --user's home: its protected names (~U/.ssh, ~U/.local/bin) hold as the caller's do.
    if (run.user && run.user->first != ::getuid())
        if (const passwd* pw = ::getpwuid(run.user->first); pw && pw->pw_dir && pw->pw_dir[0] == '/')
            load.other_homes.emplace_back(pw->pw_dir);
    {
        std::vector<uid_t> uids{::getuid()};
        if (run.user && run.user->first != ::getuid()) uids.push_back(run.user->first);
        for (auto& dir : run::session_state_directories(uids))
            load.session_dirs.push_back(std::move(dir));
    }
    // The control channel's layer, kept by --watch reloads too.
    auto control_layer = std::make_shared<std::string>();
    if (!run.network && (!load.host_ports.empty() || !load.publish_ports.empty()))
        throw UsageError("--host-port and --publish need the jail's network (not --no-network)");
    if (run.control_fd && !run.network) throw UsageError("--control-fd needs the network (not --no-network)");
    if (run.proxy.ask && !run.control_fd) throw UsageError("--ask needs --control-fd (someone to ask)");
    {
        std::error_code ec;
        policy::LoadOptions reload = load;
        reload.cwd = std::filesystem::current_path(ec);
        run.proxy.reload = control_reload(reload, control_layer);
    }
    auto shared_load = std::make_shared<policy::LoadOptions>(load);
    run.load_policy = [shared_load, watch](const std::filesystem::path& cwd) -> policy::PolicyPtr {
        shared_load->cwd = cwd;
        auto policy = load_policy_or_report(*shared_load);
        if (policy && policy->network().report_only)
            std::cerr << "cordon: sandbox.network.reportOnly ("
                      << policy::format_source(policy->network().report_only_rule->source)
                      << ") is for `cordon proxy` only: `cordon run` enforces its policy\n";
        if (policy && watch) {
            // The jailed command must not be able to change its own network policy through --watch.
            PolicyReloader check("cordon", *shared_load, nullptr, policy, true);
            if (auto why = check.writable_source()) {
                std::cerr << "cordon: --watch: " << *why
                          << ": the jailed command could change its own network "
                             "policy (give the policy from outside the jail's writable areas, or leave out "
                             "--watch)\n";
                return nullptr;
            }
        }
        return policy;
    };
    if (watch) {
        run.watch = [shared_load, control_layer](uv_loop_s* loop, proxy::Proxy& proxy,
                                                 policy::PolicyPtr policy) -> std::shared_ptr<void> {
            auto reloader = std::make_shared<PolicyReloader>("cordon", *shared_load, &proxy, policy, true);
            reloader->keep_control_layer(control_layer);
            reloader->watch(loop);
            return reloader;
        };
    }
    return launch ? launch(run) : run::run(run);
}

}  // namespace cordon::cli
