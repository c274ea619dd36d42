// `cordon run`: the supervisor. Loads the policy, computes the mount plan, starts the jail, serves the proxy
// listeners handed over from the jail on a libuv loop in the host's network namespace, relays signals,
// enforces
// --timeout, and exits with the command's status.
#include <pwd.h>
#include <sys/resource.h>
#include <unistd.h>
#include <uv.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <random>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/proxy_flags.hpp"
#include "jail/jail.hpp"
#include "proxy/proxy.hpp"

extern char** environ;

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
    "could not be set up, 126/127 when CMD could not be run.\n"
    "\n"
    "Jail flags:\n"
    "  -c STRING              run STRING with /bin/sh -c\n"
    "  --strict               refuse to run when the kernel lacks a protection layer (Landlock, its "
    "scoping)\n"
    "  --best-effort          run even when a restriction cannot be applied (Landlock, seccomp, limits),\n"
    "                         saying once on stderr what is missing\n"
    "  --allow-ptrace         let the command use ptrace (debuggers); refused by default\n"
    "  --memory SIZE          address-space limit per process (SIZE in bytes, or with K, M, G)\n"
    "  --pids N               process limit (RLIMIT_NPROC of the command's user)\n"
    "  --timeout SECONDS      kill the jail after SECONDS of wall time and exit 124\n"
    "  --user UID[:GID]       (root only) run the command as this user instead of root. Started by root,\n"
    "                         the command otherwise keeps uid 0 (mapped to the host's root) with every\n"
    "                         capability dropped and /proc/sys read-only; files owned by root in writable\n"
    "                         areas stay writable to it. Give --user to run it unprivileged.\n"
    "  --no-network           do not create the proxy listeners: the jail has no network at all\n"
    "  --quiet                no end-of-run summary of refused connections\n"
    "  --help                 this text\n"
    "\n"
    "Inside, HTTP_PROXY/HTTPS_PROXY/http_proxy/https_proxy/GRPC_PROXY = http://127.0.0.1:3128,\n"
    "ALL_PROXY/all_proxy = socks5h://127.0.0.1:1080, NO_PROXY=localhost,127.0.0.1,::1, SANDBOX_RUNTIME=1.\n"
    "The proxy runs in cordon itself (host side) and serves sockets created inside the jail; the audit log\n"
    "names the jail in `sandbox`. At the end, refused connections are summarised on stderr (not with "
    "--quiet).\n"
    "\n";

struct RunOptions {
    std::vector<std::string> command;
    bool strict = false, best_effort = false, allow_ptrace = false, quiet = false, network = true;
    std::optional<std::uint64_t> memory, pids;
    std::optional<double> timeout;
    std::optional<std::pair<uid_t, gid_t>> user;
};

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

std::vector<std::string> jail_environment(bool network) {
    std::vector<std::string> env;
    auto overridden = [&](const std::string& entry) {
        static const char* const kNames[] = {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy",     "https_proxy",
                                             "ALL_PROXY",  "all_proxy",   "GRPC_PROXY",     "grpc_proxy",
                                             "NO_PROXY",   "no_proxy",    "SANDBOX_RUNTIME"};
        std::string name = entry.substr(0, entry.find('='));
        for (const char* n : kNames)
            if (name == n) return true;
        return false;
    };
    for (char** e = environ; *e; ++e)
        if (!overridden(*e)) env.emplace_back(*e);
    if (network) {
        const std::string http = "http://127.0.0.1:3128", socks = "socks5h://127.0.0.1:1080";
        for (const char* n :
             {"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "GRPC_PROXY", "grpc_proxy"})
            env.push_back(std::string(n) + "=" + http);
        env.push_back("ALL_PROXY=" + socks);
        env.push_back("all_proxy=" + socks);
        env.push_back("NO_PROXY=localhost,127.0.0.1,::1");
        env.push_back("no_proxy=localhost,127.0.0.1,::1");
    }
    env.push_back("SANDBOX_RUNTIME=1");
    return env;
}

std::string make_jail_id() {
    std::random_device rd;
    char buf[32];
    std::snprintf(buf, sizeof buf, "cordon-%d-%08x", static_cast<int>(::getpid()), rd());
    return buf;
}

// The supervisor's loop: signals (relayed, SIGCHLD), the timeout, and (once started) the proxy.
struct Supervisor {
    jail::Jail* jail = nullptr;
    proxy::Proxy* proxy = nullptr;
    uv_loop_t loop{};
    uv_poll_t signals{};
    uv_poll_t report{};
    uv_timer_t timer{};
    std::optional<int> status;
    bool timed_out = false;

    void finish(int s) {
        if (status) return;
        status = s;
        uv_poll_stop(&signals);
        uv_poll_stop(&report);
        uv_timer_stop(&timer);
        uv_close(reinterpret_cast<uv_handle_t*>(&signals), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&report), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
        // The jail is gone, and with it every client socket: let the proxy finish what is left (upstream
        // sides, the audit log) and stop.
        if (proxy) proxy->shutdown(std::chrono::milliseconds(1000), [this] { uv_stop(&loop); });
    }
};

void print_refusals(const proxy::RefusalSummary& summary) {
    std::cerr << proxy::format_refusals(summary);
}

}  // namespace

int cmd_run(int argc, char** argv) {
    policy::LoadOptions load;
    proxy::Options proxy_options;
    RunOptions run;
    ArgCursor args(argc, argv, 0);
    while (!args.done()) {
        if (args.peek() == "--") {
            args.next();
            run.command = args.rest();
            break;
        }
        if (parse_policy_flag(args, load) || parse_proxy_flag(args, proxy_options)) continue;
        if (args.flag("--help") || args.flag("-h")) {
            std::cout << kRunHelp << kProxyFlagsHelp << "\n" << kPolicyFlagsHelp;
            return 0;
        } else if (args.flag("-c")) {
            run.command = {"/bin/sh", "-c", args.value()};
            if (!args.done()) throw UsageError("-c takes one shell string; nothing may follow it");
        } else if (args.flag("--strict")) {
            run.strict = true;
        } else if (args.flag("--best-effort")) {
            run.best_effort = true;
        } else if (args.flag("--allow-ptrace")) {
            run.allow_ptrace = true;
        } else if (args.flag("--quiet")) {
            run.quiet = true;
        } else if (args.flag("--no-network")) {
            run.network = false;
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
    if (run.command.empty())
        throw UsageError("no command given (cordon run [flags] -- CMD ARGS... or -c STRING)");
    if (run.strict && run.best_effort) throw UsageError("--strict and --best-effort contradict each other");

    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) {
        std::cerr << "cordon: cannot read the working directory: " << ec.message() << "\n";
        return 125;
    }
    load.cwd = cwd;

    // The jail's namespaces are created first, while the policy loads (the plan follows in configure()).
    jail::JailConfig config;
    config.argv = run.command;
    config.env = jail_environment(run.network);
    config.cwd = cwd;
    config.allow_ptrace = run.allow_ptrace;
    config.strict = run.strict;
    config.best_effort = run.best_effort;
    config.run_as = run.user;
    config.memory_bytes = run.memory;
    config.max_pids = run.pids;
    config.network = run.network;
    auto started = jail::Jail::start(config);
    if (auto* error = std::get_if<std::string>(&started)) {
        std::cerr << "cordon: " << *error << "\n";
        return 125;
    }
    auto jail = std::get<std::unique_ptr<jail::Jail>>(std::move(started));

    policy::PolicyPtr policy = load_policy_or_report(load);
    if (!policy) return 2;  // the jail is killed on the way out
    // The audit log is read-only inside the jail wherever it lies: created now so the plan can protect it,
    // and opened by the proxy under its resolved name.
    std::vector<std::filesystem::path> supervisor_files;
    if (run.network && !proxy_options.audit_log.empty() && proxy_options.audit_log != "-") {
        auto audit = jail::prepare_audit_log(proxy_options.audit_log);
        if (auto* error = std::get_if<std::string>(&audit)) {
            std::cerr << "cordon: " << *error << "\n";
            return 2;
        }
        proxy_options.audit_log = std::get<std::filesystem::path>(audit).string();
        supervisor_files.push_back(std::get<std::filesystem::path>(audit));
    }
    jail::MountPlan plan = jail::make_mount_plan(*policy, cwd, policy->filesystem().home, supervisor_files);
    for (const auto& notice : plan.notices)
        std::cerr << "cordon: note: " << notice << "\n";
    for (const auto& error : plan.errors)
        std::cerr << "cordon: " << error << "\n";
    if (!plan.errors.empty()) return 125;
    const auto& net = policy->network();
    if (!net.allow_unix_sockets.empty() && !net.allow_all_unix_sockets)
        std::cerr
            << "cordon: note: allowUnixSockets paths cannot be enforced one by one on Linux; Unix sockets "
               "stay refused (allowAllUnixSockets allows them all)\n";
    if (run.memory || run.pids)
        std::cerr << "cordon: note: cgroup v2 is not used; limits are rlimits (RLIMIT_AS per process"
                  << (run.pids ? ", RLIMIT_NPROC per user, not applied to the host's root" : "") << ")\n";
    if (auto error = jail->configure(std::move(plan), net.allow_all_unix_sockets)) {
        std::cerr << "cordon: " << *error << "\n";
        return 125;
    }

    Supervisor sup;
    uv_loop_init(&sup.loop);
    sup.loop.data = &sup;
    sup.jail = jail.get();
    std::unique_ptr<proxy::Proxy> proxy;
    if (run.network) {
        proxy_options.sandbox_id = make_jail_id();
        try {
            proxy = proxy::Proxy::create(&sup.loop, policy, proxy_options);
        } catch (const std::exception& e) {
            std::cerr << "cordon: " << e.what() << "\n";
            uv_loop_close(&sup.loop);
            return 2;
        }
        sup.proxy = proxy.get();
    }
    // After the jail started: it must not inherit an ignored SIGPIPE (`yes | head` relies on it).
    ::signal(SIGPIPE, SIG_IGN);
    rlimit files{};
    if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
        files.rlim_cur = files.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &files);
    }
    for (auto& listener : jail->take_listeners()) {
        if (proxy)
            proxy->listen_fd(listener.fd);
        else
            ::close(listener.fd);
    }

    uv_poll_init(&sup.loop, &sup.signals, jail->signal_fd());
    sup.signals.data = &sup;
    uv_poll_start(&sup.signals, UV_READABLE, [](uv_poll_t* handle, int, int) {
        auto* s = static_cast<Supervisor*>(handle->data);
        if (auto st = s->jail->handle_signals()) s->finish(s->timed_out ? 124 : *st);
    });
    // The init's report of the command's end comes before its own exit: cleaning up overlaps that exit.
    uv_poll_init(&sup.loop, &sup.report, jail->report_fd());
    sup.report.data = &sup;
    uv_poll_start(&sup.report, UV_READABLE, [](uv_poll_t* handle, int, int) {
        auto* s = static_cast<Supervisor*>(handle->data);
        bool closed = false;
        if (auto st = s->jail->read_report(closed)) s->finish(s->timed_out ? 124 : *st);
        if (closed && !s->status) uv_poll_stop(handle);
    });
    uv_timer_init(&sup.loop, &sup.timer);
    sup.timer.data = &sup;
    if (run.timeout) {
        auto ms = static_cast<std::uint64_t>(std::ceil(*run.timeout * 1000));
        uv_timer_start(
            &sup.timer,
            [](uv_timer_t* handle) {
                auto* s = static_cast<Supervisor*>(handle->data);
                std::cerr << "cordon: timeout: killing the jail\n";
                s->timed_out = true;
                s->jail->kill();
            },
            ms, 0);
    }
    // The jail may have exited before the poll started.
    if (auto st = jail->handle_signals()) sup.finish(*st);
    uv_run(&sup.loop, UV_RUN_DEFAULT);
    int status = sup.status.value_or(125);
    jail.reset();  // placeholders removed
    if (proxy) {
        if (!run.quiet) print_refusals(proxy->refusals());
        proxy.reset();
        uv_run(&sup.loop, UV_RUN_NOWAIT);  // close callbacks
    }
    uv_loop_close(&sup.loop);
    // Everything with an effect outside this process is done (jail reaped, placeholders removed, audit log
    // closed): leave without running the destructors of the policy, the plan and the runtime, which only
    // touch memory about to be dropped anyway.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::_exit(status);
}

}  // namespace cordon::cli
