// `cordon proxy --listen ADDR:PORT [flags]`: the standalone egress filter, HTTP proxy and SOCKS5 on one port.
// SIGHUP re-reads every policy source and reopens the audit log; SIGTERM/SIGINT stop accepting, drain, flush
// the audit log and exit 0.
#include <uv.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/policy_reload.hpp"
#include "cli/proxy_flags.hpp"
#include "policy/syntax.hpp"
#include "proxy/fd_limit.hpp"
#include "proxy/proxy.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kProxyHelp =
    "usage: cordon proxy --listen ADDR:PORT [policy flags] [upstream flags] [--metrics ADDR:PORT]\n"
    "                    [--auth-token TOKEN] [--drain-timeout S]\n"
    "\n"
    "Runs the egress filter: an HTTP proxy (absolute-form and CONNECT) and a SOCKS5 proxy on one port. "
    "Every\n"
    "request is decided by the policy before DNS; resolved addresses pass the address guard (loopback, "
    "private,\n"
    "link-local and metadata addresses are refused unless --allow-address covers them).\n"
    "\n"
    "  --listen ADDR:PORT     where to listen (repeatable; 127.0.0.1:3128, [::1]:0, 0.0.0.0:8080)\n"
    "  --metrics ADDR:PORT    serve Prometheus metrics there\n"
    "  --auth-token TOKEN     require Basic proxy credentials (any user name) with this password;\n"
    "                         SOCKS5 clients must use username/password\n"
    "  --control unix:PATH    a control channel on a Unix socket (mode 0600): JSON lines in (settings\n"
    "                         updates, answers to --ask), JSON lines out (asks, refusals)\n"
    "  --drain-timeout S      on SIGTERM/SIGINT, let open connections finish for S seconds (default 30)\n"
    "  --watch                reload the policy as on SIGHUP when a settings file or managed-settings.d\n"
    "                         changes (inotify on their directories: rename-over and ConfigMap updates too)\n"
    "  --health ADDR:PORT     serve /healthz and /readyz there (they are also on --metrics)\n"
    "  --report-only          let through what the policy refuses, logged `decision: \"deny\", enforced:\n"
    "                         false` and counted in cordon_would_refuse_total (the address guard still\n"
    "                         refuses); also sandbox.network.reportOnly in managed or --settings files\n"
    "  -h, --help             print this help\n"
    "\n"
    "Signals: SIGHUP re-reads the policy (a bad one is refused, the old one stays) and reopens the audit\n"
    "log file (for logrotate); SIGTERM/SIGINT drain and exit 0 (a second one exits at once). The bound\n"
    "address is printed on stderr: `cordon proxy: listening on ADDR:PORT`.\n"
    "\n";

struct State {
    policy::LoadOptions load;
    std::shared_ptr<std::string> control_layer = std::make_shared<std::string>();  // kept across SIGHUP
    std::unique_ptr<proxy::Proxy> proxy;
    std::chrono::milliseconds drain{30'000};
    std::unique_ptr<PolicyReloader> reloader;
    bool stopping = false;
    uv_signal_t hup, term, intr;
};

void on_hup(uv_signal_t* handle, int) {
    auto* state = static_cast<State*>(handle->data);
    // First the audit log, whatever the policy's fate: logrotate moved the file and signals us.
    if (auto error = state->proxy->reopen_audit_log())
        std::cerr << "cordon proxy: SIGHUP: " << *error << "\n";
    if (state->reloader) state->reloader->reload_now("SIGHUP");  // none while draining
}

void on_stop(uv_signal_t* handle, int signum) {
    auto* state = static_cast<State*>(handle->data);
    if (state->stopping) {
        // A second signal: stop now. Audit lines the writer thread has not reached yet are lost.
        std::cerr << "cordon proxy: second signal: exiting without waiting for open connections\n";
        std::_Exit(0);
    }
    state->stopping = true;
    std::cerr << "cordon proxy: " << (signum == SIGINT ? "SIGINT" : "SIGTERM") << ": draining "
              << state->proxy->active_connections() << " connection(s)\n";
    state->reloader.reset();  // no reload while draining
    state->proxy->shutdown(state->drain, [state]() {
        uv_close(reinterpret_cast<uv_handle_t*>(&state->hup), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&state->term), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&state->intr), nullptr);
        uv_stop(state->hup.loop);
    });
}

}  // namespace

int cmd_proxy(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    State state;
    proxy::Options options;
    std::vector<std::string> listen;
    std::string metrics, health, control;
    bool watch = false;
    while (!args.done()) {
        if (args.peek() == "--help" || args.peek() == "-h") {
            std::cout << kProxyHelp << kProxyFlagsHelp << "\n" << kPolicyFlagsHelp;
            return 0;
        }
        if (args.flag("--listen")) {
            listen.push_back(args.value());
        } else if (args.flag("--metrics")) {
            metrics = args.value();
        } else if (args.flag("--auth-token")) {
            options.auth_token = args.value();
            if (options.auth_token.empty()) throw UsageError("--auth-token needs a non-empty token");
        } else if (args.flag("--control")) {
            control = args.value();
            if (control.rfind("unix:", 0) != 0 || control.size() <= 5)
                throw UsageError("--control needs unix:PATH, not '" + control + "'");
        } else if (args.flag("--watch")) {
            watch = true;
        } else if (args.flag("--report-only")) {
            options.report_only = true;
        } else if (args.flag("--health")) {
            health = args.value();
        } else if (args.flag("--drain-timeout")) {
            state.drain = parse_seconds("--drain-timeout", args.value());
        } else if (parse_proxy_flag(args, options) || parse_policy_flag(args, state.load)) {
            continue;
        } else {
            throw UsageError("unknown argument '" + args.peek() + "'");
        }
    }
    if (listen.empty()) throw UsageError("--listen ADDR:PORT is required");
    if (options.ask && control.empty()) throw UsageError("--ask needs --control unix:PATH (someone to ask)");

    auto policy = load_policy_or_report(state.load);
    if (!policy) return 2;
    if (policy->network().allowed_domains.empty()) {
        // Not an error (a deny-all egress point is a valid configuration), but rarely what was meant.
        std::cerr << "cordon proxy: no policy allows any host (no --allow-domain, no "
                     "sandbox.network.allowedDomains in the settings read): every request will be refused\n";
    }
    if (policy->network().report_only) options.report_only = true;
    if (options.report_only) {
        const auto& rule = policy->network().report_only_rule;
        std::cerr << "cordon proxy: REPORT-ONLY ("
                  << (rule && rule->text == "true"
                          ? "sandbox.network.reportOnly from " + policy::format_source(rule->source)
                          : std::string("--report-only"))
                  << "): connections the policy refuses are let through and logged `decision: \"deny\", "
                     "enforced: false`; the address guard still refuses\n";
    }
    auto ca = proxy::select_ca(options, *policy, false);
    if (auto* error = std::get_if<std::string>(&ca)) {
        std::cerr << "cordon proxy: " << *error << "\n";
        return 2;
    }
    options.ca = std::get<std::shared_ptr<const certs::Authority>>(ca);
    proxy::raise_fd_limit();
    options.reload = control_reload(state.load, state.control_layer);

    uv_loop_t* loop = uv_default_loop();
    try {
        state.proxy = proxy::Proxy::create(loop, policy, options);
        for (const auto& address : listen) {
            auto port = state.proxy->listen_tcp(address);
            std::string host = address.substr(0, address.rfind(':'));
            std::cerr << "cordon proxy: listening on " << host << ":" << port << "\n";
        }
        if (!control.empty()) {
            state.proxy->listen_control(control.substr(5));
            std::cerr << "cordon proxy: control channel on " << control << "\n";
        }
        if (!metrics.empty()) {
            auto port = state.proxy->serve_metrics(metrics);
            std::cerr << "cordon proxy: metrics on " << metrics.substr(0, metrics.rfind(':')) << ":" << port
                      << "\n";
        }
        if (!health.empty()) {
            auto port = state.proxy->serve_health(health);
            std::cerr << "cordon proxy: health on " << health.substr(0, health.rfind(':')) << ":" << port
                      << "\n";
        }
        state.reloader =
            std::make_unique<PolicyReloader>("cordon proxy", state.load, state.proxy.get(), policy, false);
        state.reloader->keep_control_layer(state.control_layer);
        if (watch) state.reloader->watch(loop);
    } catch (const std::exception& e) {
        std::cerr << "cordon proxy: " << e.what() << "\n";
        return 2;
    }
    std::cerr.flush();

    uv_signal_init(loop, &state.hup);
    uv_signal_init(loop, &state.term);
    uv_signal_init(loop, &state.intr);
    state.hup.data = state.term.data = state.intr.data = &state;
    uv_signal_start(&state.hup, on_hup, SIGHUP);
    uv_signal_start(&state.term, on_stop, SIGTERM);
    uv_signal_start(&state.intr, on_stop, SIGINT);
    signal(SIGPIPE, SIG_IGN);

    uv_run(loop, UV_RUN_DEFAULT);
    state.reloader.reset();
    state.proxy.reset();
    uv_run(loop, UV_RUN_NOWAIT);  // let the handles' close callbacks run
    std::cerr << "cordon proxy: stopped\n";
    return 0;
}

}  // namespace cordon::cli
