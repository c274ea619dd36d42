// The supervisor of `cordon run` (see run.hpp).
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "jail/jail.hpp"
#include "jail/landlock_jail.hpp"
#include "jail/notify.hpp"
#include "jail/unix_sockets.hpp"
#include "policy/syntax.hpp"
#include "proxy/fd_limit.hpp"
#include "run/environment.hpp"
#include "run/ports.hpp"
#include "run/run.hpp"
#include "run/session.hpp"
#include "run/write_refusals.hpp"

extern char** environ;

namespace cordon::run {

namespace {

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
    policy::PolicyPtr policy;
    jail::RunStart run_start;
    std::unique_ptr<jail::Notifier> notifier;  // the protected names (jail/notify.hpp)
    SessionHost* session = nullptr;            // a session's: one notifier per joining command
    std::vector<std::unique_ptr<jail::Notifier>> session_notifiers;
    std::vector<std::string> mount_points;  // of the plan, for the notifier
    std::vector<std::string> cordon_files;  // the audit log, the binary: the write rule cordon-files
    std::shared_ptr<void> watch;            // --watch
    std::unique_ptr<WriteRefusals> writes;  // what the notifier refused (run/write_refusals.hpp)
    std::shared_ptr<const jail::HostView> host_view;  // the jail without namespaces' (with its host ports)
    uv_loop_t loop{};
    uv_poll_t signals{};
    uv_poll_t report{};
    uv_poll_t notify{};  // the command's seccomp listener arrives (closed once it did)
    uv_timer_t timer{};
    std::optional<int> status;
    bool timed_out = false;

    bool notify_open = false;
    void close_notify() {
        if (!notify_open) return;
        notify_open = false;
        uv_poll_stop(&notify);
        uv_close(reinterpret_cast<uv_handle_t*>(&notify), nullptr);
    }

    void finish(int s) {
        if (status) return;
        status = s;
        uv_poll_stop(&signals);
        uv_poll_stop(&report);
        uv_timer_stop(&timer);
        uv_close(reinterpret_cast<uv_handle_t*>(&signals), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&report), nullptr);
        uv_close(reinterpret_cast<uv_handle_t*>(&timer), nullptr);
        close_notify();
        watch.reset();
        if (writes) writes->drain(true);  // their audit lines go out with the proxy's last ones
        // The jail is gone, and with it every client socket: let the proxy finish what is left (upstream
        // sides, the audit log) and stop.
        if (proxy) proxy->shutdown(std::chrono::milliseconds(1000), [this] { uv_stop(&loop); });
    }
};

void print_refusals(const proxy::RefusalSummary& summary) {
    std::cerr << proxy::format_refusals(summary);
}

// Why a note and not a count: a path outside the read scope does not exist inside the jail, so its refusal
// is an ENOENT that nothing sees (no system call reaches cordon). A failed command may have looked for one.
void note_read_scope(const policy::Policy& policy, const std::filesystem::path& cwd) {
    const auto& scope = policy.filesystem().read_scope;
    if (scope.scope != policy::ReadScope::Project) return;
    std::cerr
        << "cordon: note: the read scope is project (" << policy::format_source(scope.rule.source)
        << "): outside " << cwd.string()
        << ", the writable and system paths and allowRead, files do not exist in the jail; `cordon check` "
           "with the same flags and read:PATH says whether PATH is in the scope\n";
}

// Signs that this process is already confined by another sandbox (bubblewrap, a container runtime, Claude
// Code's own sandbox): what it took away, or empty. Only said when the jail cannot be built, to explain why.
std::string inside_another_sandbox() {
    std::vector<std::string> signs;
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line == "NoNewPrivs:\t1") signs.emplace_back("no_new_privs set");
        if (line.rfind("Seccomp:\t", 0) == 0 && line != "Seccomp:\t0") signs.emplace_back("a seccomp filter");
        if (line.rfind("CapEff:\t", 0) == 0 && ::geteuid() == 0 &&
            line.find_first_not_of('0', 8) == std::string::npos)
            signs.emplace_back("root without capabilities");
    }
    std::ifstream userns("/proc/sys/user/max_user_namespaces");
    long max = -1;
    if (userns >> max && max == 0) signs.emplace_back("user namespaces disabled (max_user_namespaces 0)");
    std::string out;
    for (const std::string& sign : signs)
        out += (out.empty() ? "" : ", ") + sign;
    return out;
}

void say_if_inside_another_sandbox() {
    if (std::string why = inside_another_sandbox(); !why.empty())
        std::cerr
            << "cordon: running inside another sandbox (" << why
            << "), which keeps cordon from building its jail; run cordon outside it (under Claude Code: "
               "sandbox.enabled false)\n";
}

// Whether `uid` (with primary group `gid`, no capabilities) may search every directory from `/` to `dir`.
bool may_search(const std::filesystem::path& dir, uid_t uid, gid_t gid) {
    std::filesystem::path at = "/";
    for (const auto& part : dir.relative_path()) {
        struct stat st {};
        if (::stat(at.c_str(), &st) != 0) return false;
        const mode_t bit = st.st_uid == uid ? S_IXUSR : st.st_gid == gid ? S_IXGRP : S_IXOTH;
        if (!(st.st_mode & bit)) return false;
        at /= part;
    }
    struct stat st {};
    if (::stat(at.c_str(), &st) != 0) return false;
    const mode_t bits = st.st_uid == uid   ? S_IXUSR | S_IWUSR
                        : st.st_gid == gid ? S_IXGRP | S_IWGRP
                                           : S_IXOTH | S_IWOTH;
    return (st.st_mode & bits) == bits;
}

// Started by root without --user in a working directory that root's command, which has no capability, cannot
// enter or write (another user's mode-0700 project): the user it belongs to, who can; nothing otherwise.
// Why the owner rather than root with a capability: CAP_DAC_OVERRIDE (or _READ_SEARCH) would let the
// command write (or read) what every mode on the host forbids it.
std::optional<std::pair<uid_t, gid_t>> owner_for_root(const std::filesystem::path& cwd) {
    if (::geteuid() != 0) return std::nullopt;
    struct stat st {};
    if (::stat(cwd.c_str(), &st) != 0 || st.st_uid == 0 || may_search(cwd, 0, 0)) return std::nullopt;
    gid_t gid = st.st_gid;
    if (const passwd* pw = ::getpwuid(st.st_uid)) gid = pw->pw_gid;
    if (!may_search(cwd, st.st_uid, gid)) return std::nullopt;
    return std::make_pair(st.st_uid, gid);
}

}  // namespace

namespace {

// What the namespace jail's child says while it sets itself up (JailConfig::setup_report_fd), kept while auto
// may still fall back: when it does, the child's reason goes into the fallback's one line; when the namespace
// jail runs, it is said as it would have been.
class SetupReport {
  public:
    SetupReport() = default;
    SetupReport(const SetupReport&) = delete;
    SetupReport& operator=(const SetupReport&) = delete;
    ~SetupReport() {
        replay();  // what came late (a child that failed right after handing its listeners over)
        for (int fd : fds_)
            if (fd >= 0) ::close(fd);
    }
    // The write end for the child, or -1 (then it says all on stderr).
    int open() {
        if (::pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
        return fds_[1];
    }
    // After the clone: only the child holds the write end.
    void started() { close_fd(fds_[1]); }
    // Everything said so far (the child has ended, or has started the command).
    std::string take() {
        std::string text;
        char buf[4096];
        ssize_t n;
        while (fds_[0] >= 0 && (n = ::read(fds_[0], buf, sizeof buf)) > 0)
            text.append(buf, static_cast<std::size_t>(n));
        return text;
    }
    void replay() { std::cerr << take(); }
    // The child's reason in a few words: its last line without "cordon: ", "cannot set up the jail: " and the
    // source location, or "" when it said nothing.
    std::string reason() {
        std::string text = take();
        close_fd(fds_[0]);
        while (!text.empty() && text.back() == '\n')
            text.pop_back();
        std::string line = text.substr(text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1);
        for (const char* prefix : {"cordon: ", "cannot set up the jail: "})
            if (line.compare(0, std::strlen(prefix), prefix) == 0) line.erase(0, std::strlen(prefix));
        if (const std::size_t at = line.rfind(" (");
            at != std::string::npos && line.back() == ')' && line.find(".cpp:", at) != std::string::npos)
            line.erase(at);
        return line;
    }

  private:
    static void close_fd(int& fd) {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    int fds_[2] = {-1, -1};
};

}  // namespace

int run(const Options& options) {
    std::error_code ec;
    std::filesystem::path cwd = std::filesystem::current_path(ec);
    if (ec) {
        std::cerr << "cordon: cannot read the working directory: " << ec.message() << "\n";
        return 125;
    }

    // Before anything of the run exists: git directories born later were created by the run.
    const jail::RunStart run_start = jail::RunStart::now();
    // The jail's namespaces are created first, while the policy loads (the plan follows in configure()).
    jail::JailConfig config;
    config.user_notify = jail::user_notification_supported();
    config.argv = options.command;
    config.env = jail_environment(environ, options.network);
    config.cwd = cwd;
    config.allow_ptrace = options.allow_ptrace;
    config.strict = options.strict;
    config.best_effort = options.best_effort;
    config.run_as = options.user;
    if (!config.run_as) {
        if (auto owner = owner_for_root(cwd)) {
            config.run_as = owner;
            std::cerr << "cordon: note: " << cwd.string() << " belongs to uid " << owner->first
                      << " and root without capabilities cannot use it: the command runs as uid "
                      << owner->first << " (--user to choose)\n";
        }
    }
    config.memory_bytes = options.memory;
    config.max_pids = options.pids;
    config.network = options.network;
    config.listen_ports = proxy_ports();
    if (options.network && options.transparent) config.transparent_port = kTransparentPort;
    config.id = make_jail_id();
    config.session = options.session != nullptr;
    // Which jail: --jail, else sandbox.jail (known only once the policy loads: the namespace jail starts
    // meanwhile, and is replaced when the settings ask for the other one), else auto: the namespace jail
    // where the host allows one, the jail without namespaces otherwise (not with --strict).
    const auto flag_choice = jail::parse_jail_choice(options.jail);
    jail::JailChoice choice = flag_choice.value_or(jail::JailChoice::Auto);
    // A session's commands are started by the namespace jail's init: no fallback.
    if (options.session) {
        if (choice == jail::JailChoice::Landlock) {
            std::cerr << "cordon: a session needs the namespace jail (not --jail landlock)\n";
            return 125;
        }
        choice = jail::JailChoice::Namespaces;
    }
    std::string fallback_why;  // why the namespace jail is not used, for the one line
    SetupReport setup_report;
    auto start = [&](jail::JailChoice want) -> std::variant<std::unique_ptr<jail::Jail>, std::string> {
        if (want == jail::JailChoice::Landlock) return jail::start_without_namespaces(config);
        if (want == jail::JailChoice::Auto && !options.strict) config.setup_report_fd = setup_report.open();
        auto made = jail::Jail::start(config);
        setup_report.started();
        config.setup_report_fd = -1;
        auto* error = std::get_if<std::string>(&made);
        if (!error || want == jail::JailChoice::Namespaces || options.strict) return made;
        fallback_why = *error;
        return jail::start_without_namespaces(config);
    };
    auto started = start(choice);
    if (auto* error = std::get_if<std::string>(&started)) {
        std::cerr << "cordon: " << (fallback_why.empty() ? "" : fallback_why + "; ") << *error << "\n";
        if (choice != jail::JailChoice::Landlock) say_if_inside_another_sandbox();
        if (options.strict && choice == jail::JailChoice::Auto)
            std::cerr << "cordon: --strict: not falling back to the jail without namespaces\n";
        return 125;
    }
    auto jail = std::get<std::unique_ptr<jail::Jail>>(std::move(started));

    policy::PolicyPtr policy = options.load_policy(cwd);
    if (!policy) return 2;  // the jail is killed on the way out
    if (const auto& setting = policy->filesystem().jail; setting && !flag_choice) {
        const auto wanted = jail::parse_jail_choice(setting->text).value_or(jail::JailChoice::Auto);
        const std::string named =
            "sandbox.jail " + setting->text + " (" + policy::format_source(setting->source) + ")";
        if (wanted == jail::JailChoice::Namespaces && jail->host_view()) {
            std::cerr << "cordon: " << named << ": the namespace jail cannot be set up here: " << fallback_why
                      << "\n";
            return 125;
        }
        if (wanted == jail::JailChoice::Landlock && options.session) {
            std::cerr << "cordon: " << named << ": a session needs the namespace jail\n";
            return 125;
        }
        if (wanted == jail::JailChoice::Landlock && !jail->host_view()) {
            jail.reset();  // killed and reaped
            auto again = jail::start_without_namespaces(config);
            if (auto* error = std::get_if<std::string>(&again)) {
                std::cerr << "cordon: " << named << ": " << *error << "\n";
                return 125;
            }
            jail = std::get<std::unique_ptr<jail::Jail>>(std::move(again));
            fallback_why = named;
        }
        choice = wanted;
    }
    auto say_without_namespaces = [&] {
        const std::string why = !fallback_why.empty() ? fallback_why : "--jail landlock";
        std::cerr << "cordon: running the jail without namespaces (" << why
                  << "); it lacks: " << jail::without_namespaces_lacks(jail::landlock_abi()) << "\n";
    };
    bool without_namespaces = jail->host_view() != nullptr;
    if (without_namespaces) say_without_namespaces();
    // The proxy variables of the jail without namespaces: its listeners' ports.
    auto point_at_listeners = [&](jail::MountPlan& plan) {
        const auto ports = jail->listener_ports();
        if (options.network && ports.size() >= 2)
            for (const auto& [name, value] : proxy_variables(ports[0], ports[1]))
                plan.env.push_back(name + "=" + value);
    };
    // The audit log is read-only inside the jail wherever it lies: created now so the plan can protect it,
    // and opened by the proxy under its resolved name.
    proxy::Options proxy_options = options.proxy;
    std::vector<std::filesystem::path> supervisor_files;
    if (options.network && !proxy_options.audit_log.empty() && proxy_options.audit_log != "-") {
        auto audit = jail::prepare_audit_log(proxy_options.audit_log);
        if (auto* error = std::get_if<std::string>(&audit)) {
            std::cerr << "cordon: " << *error << "\n";
            return 125;
        }
        proxy_options.audit_log = std::get<std::filesystem::path>(audit).string();
        supervisor_files.push_back(std::get<std::filesystem::path>(audit));
    }
    std::error_code exe_error;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", exe_error);
    jail::MountPlan plan = jail::make_mount_plan(*policy, cwd, policy->filesystem().home, supervisor_files,
                                                 self, !config.user_notify && !without_namespaces);
    if (without_namespaces) point_at_listeners(plan);
    // The session directory (its control sockets) is hidden in the jail's view (below /tmp the jail's
    // private /tmp hides it already).
    if (options.session && options.session->directory().string().rfind("/tmp/", 0) != 0)
        plan.ops.push_back(
            {jail::MountKind::MaskDir, options.session->directory(), "cordon's session sockets"});
    if (!config.user_notify && !options.quiet)
        std::cerr << "cordon: note: this kernel has no seccomp user notification with ADDFD (Linux 5.14); "
                     "missing protected names are kept by placeholder files during the run\n";
    // TLS termination and credentials: the CA, the jail's trust bundle, secrets (run/inspection.hpp).
    RunInspection inspection;
    std::vector<std::string> inspection_notes;
    if (auto error = inspection.prepare(*policy, options.secrets, options.network, proxy_options, plan,
                                        inspection_notes)) {
        std::cerr << "cordon: " << *error << "\n";
        return 125;
    }
    for (const auto& note : inspection_notes)
        plan.notices.push_back(note);
    for (const auto& notice : plan.notices)
        std::cerr << "cordon: note: " << notice << "\n";
    for (const auto& error : plan.errors)
        std::cerr << "cordon: " << error << "\n";
    if (!plan.errors.empty()) return 125;
    const auto& net = policy->network();
    // allowUnixSockets: connect and bind go through the supervisor (jail/unix_sockets.hpp), which needs user
    // notification; without it Unix sockets stay refused.
    jail::UnixSockets unix_sockets = jail::UnixSockets::Refused;
    if (net.allow_all_unix_sockets)
        unix_sockets = jail::UnixSockets::All;
    else if (!net.allow_unix_sockets.empty() && config.user_notify)
        unix_sockets = jail::UnixSockets::Listed;
    else if (!net.allow_unix_sockets.empty())
        std::cerr << "cordon: note: allowUnixSockets needs seccomp user notification (Linux 5.14); Unix "
                     "sockets stay refused (allowAllUnixSockets allows them all)\n";
    if (unix_sockets == jail::UnixSockets::Listed && !jail::unix_sockets::kernel_refuses_descriptors())
        std::cerr << "cordon: note: this kernel lacks SO_PASSRIGHTS (Linux 6.16): a listed Unix socket's "
                     "service can hand the command descriptors, which reach what they point to\n";
    // Host ports and published ports (run/ports.hpp): a published port the host cannot listen on stops the
    // run here, before the command starts.
    std::unique_ptr<Ports> ports;
    auto prepare_ports = [&]() -> bool {
        if (!options.network) {
            if (!net.host_ports.empty() || !net.publish_ports.empty())
                std::cerr
                    << "cordon: note: --no-network: sandbox.network.hostPorts and publishPorts ignored\n";
            return true;
        }
        std::vector<std::string> notes;
        auto made = Ports::prepare(*policy, without_namespaces, notes);
        for (const auto& note : notes)
            std::cerr << "cordon: note: " << note << "\n";
        if (auto* error = std::get_if<std::string>(&made)) {
            std::cerr << "cordon: " << *error << "\n";
            return false;
        }
        ports = std::move(std::get<std::unique_ptr<Ports>>(made));
        return true;
    };
    if (!prepare_ports()) return 125;
    if (ports) ports->add_to_plan(plan);
    std::vector<std::string> mount_points;
    if (config.user_notify && !without_namespaces)
        for (const auto& op : plan.ops)
            if (op.path != "/") mount_points.push_back(op.path.string());
    // The namespaces may be made and still be of no use (AppArmor's restriction of unprivileged user
    // namespaces: no capability inside, so no mount): then the jail child fails in its setup, and auto falls
    // back here.
    std::optional<jail::MountPlan> fallback_plan;
    if (!without_namespaces && choice == jail::JailChoice::Auto && !options.strict) fallback_plan = plan;
    if (auto error = jail->configure(std::move(plan), unix_sockets)) {
        if (!fallback_plan) {
            setup_report.replay();
            std::cerr << "cordon: " << *error << "\n";
            if (!without_namespaces) say_if_inside_another_sandbox();
            return 125;
        }
        // The jail's child said why on the setup report: in the one line.
        const std::string reason = setup_report.reason();
        fallback_why = "the namespace jail could not be set up: " +
                       (*error == "the jail could not be set up" && !reason.empty() ? reason : *error);
        jail.reset();
        auto again = jail::start_without_namespaces(config);
        if (auto* message = std::get_if<std::string>(&again)) {
            std::cerr << "cordon: " << *message << "\n";
            return 125;
        }
        jail = std::get<std::unique_ptr<jail::Jail>>(std::move(again));
        without_namespaces = true;
        say_without_namespaces();
        point_at_listeners(*fallback_plan);
        fallback_plan->host_ports.clear();
        fallback_plan->jail_sockets = false;
        ports.reset();
        if (!prepare_ports()) return 125;
        mount_points.clear();
        if (auto second = jail->configure(std::move(*fallback_plan), unix_sockets)) {
            std::cerr << "cordon: " << *second << "\n";
            return 125;
        }
    }
    setup_report.replay();  // the namespace jail runs: its setup's warnings, as it said them

    Supervisor sup;
    uv_loop_init(&sup.loop);
    sup.loop.data = &sup;
    sup.jail = jail.get();
    sup.policy = policy;
    sup.run_start = run_start;
    sup.session = options.session.get();
    sup.mount_points = std::move(mount_points);
    sup.host_view = ports ? ports->host_view(jail->host_view()) : jail->host_view();
    for (const auto& file : supervisor_files)
        sup.cordon_files.push_back(file.string());
    // cordon's own binary: the namespace jail binds it read-only where it lies in a writable area; replaced,
    // the user's next `cordon` would run the command's program on the host.
    if (!exe_error && !self.empty()) sup.cordon_files.push_back(self.string());
    std::unique_ptr<proxy::Proxy> proxy;
    if (options.network) {
        proxy_options.sandbox_id = config.id;
        try {
            proxy = proxy::Proxy::create(&sup.loop, policy, std::move(proxy_options));
        } catch (const std::exception& e) {
            // The audit log cannot be opened: a set-up failure like any other (the jail is killed on the way
            // out, before its command can do anything through the proxy).
            std::cerr << "cordon: " << e.what() << "\n";
            uv_loop_close(&sup.loop);
            return 125;
        }
        sup.proxy = proxy.get();
        // A control channel or a settings watch that cannot be set up stops the run before the command.
        auto setup_failed = [&](const std::exception& e) {
            std::cerr << "cordon: " << e.what() << "\n";
            proxy.reset();
            uv_run(&sup.loop, UV_RUN_NOWAIT);
            uv_loop_close(&sup.loop);
            return 125;
        };
        if (options.control_fd) {
            try {
                proxy->serve_control_fd(*options.control_fd);
            } catch (const std::exception& e) {
                return setup_failed(e);
            }
        }
        if (options.watch) {
            try {
                sup.watch = options.watch(&sup.loop, *proxy, policy);
            } catch (const std::exception& e) {
                return setup_failed(e);
            }
        }
    }
    // After the jail started: it must not inherit an ignored SIGPIPE (`yes | head` relies on it).
    ::signal(SIGPIPE, SIG_IGN);
    proxy::raise_fd_limit();
    auto listeners = jail->take_listeners();
    if (ports && proxy) listeners = ports->serve(&sup.loop, *proxy, std::move(listeners));
    for (auto& listener : listeners) {
        using Kind = jail::Listener::Kind;
        if (!proxy)
            ::close(listener.fd);
        else if (listener.kind == Kind::Transparent)
            proxy->listen_transparent_fd(listener.fd);
        else if (listener.kind == Kind::DnsUdp || listener.kind == Kind::DnsTcp)
            proxy->serve_dns_fd(listener.fd);
        else
            proxy->listen_fd(listener.fd);
    }

    sup.writes = std::make_unique<WriteRefusals>(
        &sup.loop, proxy ? std::function<void(const proxy::WriteEvent&)>(
                               [p = proxy.get()](const proxy::WriteEvent& e) { p->record_write(e); })
                         : nullptr);
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
        if (s->session) {
            if (!s->session->on_jail_event()) uv_poll_stop(handle);
            return;
        }
        bool closed = false;
        if (auto st = s->jail->read_report(closed)) s->finish(s->timed_out ? 124 : *st);
        if (closed && !s->status) uv_poll_stop(handle);
    });
    // The command's seccomp listener: the protected names are decided by a thread of ours (jail/notify.hpp).
    if (jail->notify_socket() >= 0) {
        uv_poll_init(&sup.loop, &sup.notify, jail->notify_socket());
        sup.notify.data = &sup;
        sup.notify_open = true;
        uv_poll_start(&sup.notify, UV_READABLE, [](uv_poll_t* handle, int, int) {
            auto* s = static_cast<Supervisor*>(handle->data);
            if (s->session) {
                // Each joining command sends the listener of its own seccomp filter; those of commands
                // that have ended (with all they started) go.
                std::erase_if(s->session_notifiers, [](const auto& n) { return n->finished(); });
                if (int fd = s->jail->take_notify_fd(); fd >= 0)
                    s->session_notifiers.push_back(jail::Notifier::start(
                        fd, s->policy, s->run_start, s->mount_points, nullptr, s->cordon_files,
                        [writes = s->writes.get()](jail::RefusedWrite&& w) { writes->add(std::move(w)); }));
                return;
            }
            s->close_notify();
            if (int fd = s->jail->take_notify_fd(); fd >= 0)
                s->notifier = jail::Notifier::start(
                    fd, s->policy, s->run_start, std::move(s->mount_points), s->host_view,
                    std::move(s->cordon_files),
                    [writes = s->writes.get()](jail::RefusedWrite&& w) { writes->add(std::move(w)); });
        });
    }
    uv_timer_init(&sup.loop, &sup.timer);
    sup.timer.data = &sup;
    if (options.timeout) {
        auto ms = static_cast<std::uint64_t>(std::ceil(*options.timeout * 1000));
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
    if (options.session) options.session->attach(&sup.loop, jail.get(), proxy.get(), options.network);
    // The jail may have exited before the poll started.
    if (auto st = jail->handle_signals()) sup.finish(*st);
    uv_run(&sup.loop, UV_RUN_DEFAULT);
    int status = sup.status.value_or(125);
    jail.reset();  // placeholders removed
    sup.session_notifiers.clear();
    if (options.session) options.session->end();
    // Not hidden by --quiet: a repository the run made is code the host's git may run (its hooks and config).
    if (sup.notifier) {
        const auto repos = sup.notifier->new_repositories();
        constexpr std::size_t kShown = 20;
        for (std::size_t i = 0; i < repos.paths.size() && i < kShown; ++i)
            std::cerr << "cordon: note: a git repository was created during the run: "
                      << policy::printable(repos.paths[i]) << " (its hooks and config were not protected)\n";
        const std::size_t rest =
            repos.paths.size() > kShown ? repos.paths.size() - kShown + repos.more : repos.more;
        if (rest)
            std::cerr << "cordon: note: and " << rest << " more git repositories created during the run\n";
    }
    inspection.remove();  // the trust bundle's directory
    if (ports) ports->close();
    // The writes first: a refused write explains a failed command more often than a refused connection.
    if (!options.quiet) std::cerr << format_write_refusals(sup.writes->summary(), proxy != nullptr);
    if (proxy) {
        if (!options.quiet) print_refusals(proxy->refusals());
        proxy.reset();
        uv_run(&sup.loop, UV_RUN_NOWAIT);  // close callbacks
    }
    uv_loop_close(&sup.loop);
    if (!options.quiet && status != 0) note_read_scope(*policy, cwd);
    // Everything with an effect outside this process is done (jail reaped, placeholders removed, audit log
    // closed): leave without running the destructors of the policy, the plan and the runtime, which only
    // touch memory about to be dropped anyway.
    std::cout.flush();
    std::cerr.flush();
    std::fflush(nullptr);
    ::_exit(status);
}

}  // namespace cordon::run
