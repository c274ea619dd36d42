// `cordon run` in the portable build (CORDON_PORTABLE, macOS): no Linux jail. cordon's proxy listens on the
// host's loopback (a free port), and the command runs under `sandbox-exec -p PROFILE` with the Seatbelt
// profile made from the same policy (seatbelt/profile.hpp) and the proxy variables pointing at that port.
// Everything up to the spawn is platform-neutral and compiled on Linux by CI; the spawn itself is macOS's.
// NOT YET RUN ON A MAC (README.md says so): the profile's semantics are checked against srt's, the launch is
// not.
#include <unistd.h>
#include <uv.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/proxy_flags.hpp"
#include "policy/inspection.hpp"
#include "proxy/proxy.hpp"
#include "run/environment.hpp"
#include "seatbelt/launcher.hpp"
#include "seatbelt/profile.hpp"

extern char** environ;

namespace cordon::cli {
namespace {

constexpr const char* kRunHelp =
    "usage: cordon run [flags] -- CMD [ARGS...]\n"
    "       cordon run [flags] -c 'shell string'     (runs /bin/sh -c)\n"
    "\n"
    "macOS (this build has no Linux jail): runs CMD under sandbox-exec with the Seatbelt profile that\n"
    "`cordon policy --format sbpl` prints: reads as the policy allows, writes only in the working "
    "directory,\n"
    "a private temporary directory ($TMPDIR) and allowWrite, minus denyWrite and the protected names; no\n"
    "network but cordon's proxy, which listens on a free port of 127.0.0.1 (HTTP_PROXY & co point at it).\n"
    "Not yet run on a Mac. Exits with CMD's status, 128+N when killed by signal N, 125 when it could not be\n"
    "started, 2 for usage errors and settings that do not load.\n"
    "\n"
    "  -c STRING              run STRING with /bin/sh -c\n"
    "  --host-port PORT       let CMD connect to this port on the host's loopback too (repeatable)\n"
    "  --no-network           no proxy: CMD reaches no network at all\n"
    "  --help                 this text\n"
    "\n";

struct Session {
    uv_loop_t loop;
    uv_process_t child;
    uv_signal_t sigint, sigterm, sighup;
    std::unique_ptr<proxy::Proxy> proxy;
    int status = 125;
};

void forward(uv_signal_t* handle, int signum) {
    auto* s = static_cast<Session*>(handle->data);
    uv_process_kill(&s->child, signum);
}

void on_exit(uv_process_t* child, int64_t exit_status, int term_signal) {
    auto* s = static_cast<Session*>(child->data);
    s->status = term_signal != 0 ? 128 + term_signal : static_cast<int>(exit_status);
    uv_close(reinterpret_cast<uv_handle_t*>(child), nullptr);
    for (uv_signal_t* sig : {&s->sigint, &s->sigterm, &s->sighup})
        uv_close(reinterpret_cast<uv_handle_t*>(sig), nullptr);
    if (s->proxy) s->proxy->shutdown(std::chrono::milliseconds(0), [] {});
}

}  // namespace

int cmd_run(int argc, char** argv) {
    policy::LoadOptions load;
    proxy::Options proxy_options;
    std::vector<std::string> command;
    std::vector<std::uint16_t> host_ports;
    bool network = true;
    ArgCursor args(argc, argv, 0);
    while (!args.done()) {
        if (args.peek() == "--") {
            args.next();
            command = args.rest();
            break;
        }
        if (parse_policy_flag(args, load) || parse_proxy_flag(args, proxy_options)) continue;
        if (args.flag("--help") || args.flag("-h")) {
            std::cout << kRunHelp << kProxyFlagsHelp << "\n" << kPolicyFlagsHelp;
            return 0;
        } else if (args.flag("-c")) {
            command = {"/bin/sh", "-c", args.value()};
            if (!args.done()) throw UsageError("-c takes one shell string; nothing may follow it");
        } else if (args.flag("--host-port")) {
            const std::string v = args.value();
            if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string::npos ||
                std::stoul(v) == 0 || std::stoul(v) > 65535)
                throw UsageError("--host-port needs a port number (1-65535), not '" + v + "'");
            host_ports.push_back(static_cast<std::uint16_t>(std::stoul(v)));
        } else if (args.flag("--no-network")) {
            network = false;
        } else if (args.peek().size() > 1 && args.peek()[0] == '-') {
            throw UsageError("unknown flag '" + args.peek() +
                             "' (this build runs commands under macOS's "
                             "sandbox-exec; the Linux jail's flags are not available)");
        } else {
            command = args.rest();
        }
    }
    if (command.empty())
        throw UsageError("no command given (cordon run [flags] -- CMD ARGS... or -c STRING)");

    std::error_code ec;
    load.cwd = std::filesystem::current_path(ec);
    policy::PolicyPtr policy = load_policy_or_report(load);
    if (!policy) return 2;
    if (!policy->filesystem().working_directory.writable) {
        std::cerr << "cordon: the working directory is not writable by default: "
                  << policy->filesystem().working_directory.refusal << " (--allow-write . insists)\n";
        return 125;
    }
    if (network && policy->network().inspection->enabled()) {
        // The Linux jail shows the command a trust bundle with cordon's CA; this launcher cannot yet, and an
        // inspected host tunnelled untouched would not be inspected: refused rather than weakened.
        std::cerr
            << "cordon: inspected hosts (sandbox.network.inspect, tlsTerminate) are not supported by the "
               "macOS launcher yet\n";
        return 125;
    }
    if (!proxy_options.audit_log.empty() && proxy_options.audit_log != "-")
        proxy_options.audit_log =
            std::filesystem::absolute(proxy_options.audit_log, ec).lexically_normal().string();

    // The command's private temporary directory, removed at the end (macOS's /tmp is every process's).
    const char* tmp = std::getenv("TMPDIR");
    std::string temp_dir = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/cordon-run-XXXXXX";
    if (::mkdtemp(temp_dir.data()) == nullptr) {
        std::cerr << "cordon: cannot make a temporary directory: " << std::strerror(errno) << "\n";
        return 125;
    }
    struct RemoveTemp {
        std::string path;
        ~RemoveTemp() {
            std::error_code e;
            std::filesystem::remove_all(path, e);
        }
    } remove_temp{temp_dir};

    auto session = std::make_unique<Session>();
    uv_loop_init(&session->loop);
    seatbelt::ProfileOptions profile_options;
    profile_options.host_ports = host_ports;
    profile_options.audit_log = proxy_options.audit_log;
    profile_options.temp_dir = seatbelt::canonical_path(temp_dir);
    profile_options.canonical = seatbelt::canonical_path;
    std::vector<std::pair<std::string, std::string>> variables;
    if (network) {
        try {
            proxy_options.sandbox_id = "seatbelt-" + std::to_string(::getpid());
            session->proxy = proxy::Proxy::create(&session->loop, policy, proxy_options);
            const std::uint16_t port = session->proxy->listen_tcp("127.0.0.1:0");
            profile_options.proxy_ports = {port};
            variables = run::proxy_variables(port, port);
        } catch (const std::exception& e) {
            std::cerr << "cordon: the proxy: " << e.what() << "\n";
            return 125;
        }
    }
    const seatbelt::Profile profile = seatbelt::make_profile(*policy, profile_options);
    for (const std::string& warning : profile.warnings)
        std::cerr << "cordon: warning: " << warning << "\n";
    const seatbelt::Launch launch =
        seatbelt::plan_launch(profile.text, command, environ, variables, temp_dir);

#ifdef __APPLE__
    std::vector<char*> child_argv, child_env;
    for (const std::string& a : launch.argv)
        child_argv.push_back(const_cast<char*>(a.c_str()));
    child_argv.push_back(nullptr);
    for (const std::string& e : launch.env)
        child_env.push_back(const_cast<char*>(e.c_str()));
    child_env.push_back(nullptr);
    uv_stdio_container_t stdio[3];
    for (int fd = 0; fd < 3; ++fd) {
        stdio[fd].flags = UV_INHERIT_FD;
        stdio[fd].data.fd = fd;
    }
    uv_process_options_t spawn{};
    spawn.file = seatbelt::kSandboxExec;
    spawn.args = child_argv.data();
    spawn.env = child_env.data();
    spawn.exit_cb = on_exit;
    spawn.stdio_count = 3;
    spawn.stdio = stdio;
    session->child.data = session.get();
    if (int rc = uv_spawn(&session->loop, &session->child, &spawn); rc != 0) {
        std::cerr << "cordon: cannot start " << seatbelt::kSandboxExec << ": " << uv_strerror(rc) << "\n";
        return 125;
    }
    for (auto [sig, num] :
         {std::pair{&session->sigint, SIGINT}, {&session->sigterm, SIGTERM}, {&session->sighup, SIGHUP}}) {
        uv_signal_init(&session->loop, sig);
        sig->data = session.get();
        uv_signal_start(sig, forward, num);
    }
    uv_run(&session->loop, UV_RUN_DEFAULT);
    std::cout.flush();
    const int status = session->status;
    session.release();  // the loop's handles are closed; the process ends with the command's status
    return status;
#else
    (void)launch;
    (void)forward;
    (void)on_exit;
    std::cerr << "cordon: this build runs commands under macOS's " << seatbelt::kSandboxExec
              << ", which this system does not have; build without -DCORDON_PORTABLE=ON for the Linux jail\n";
    return 125;
#endif
}

}  // namespace cordon::cli

namespace cordon::cli {

// Sessions are started and joined by the Linux jail's init (jail/session_init.cpp).
int cmd_session(int, char**) {
    std::cerr
        << "cordon session: sessions need the Linux jail; on this system each `cordon run` is a jail of "
           "its own\n";
    return 2;
}

}  // namespace cordon::cli
