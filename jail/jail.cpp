// The jail's process model. The supervisor (the caller) clones the jail child into new namespaces, writes its
// id maps, and receives the proxy listeners; the child (PID 1 of the new PID namespace) runs the init's
// steps, starts the command, which runs the command's steps and execs, and becomes its init. The containment
// order is the two tables below, read top-down: kInitSteps and kCommandSteps.
#include "jail/jail.hpp"

#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <fstream>

#include "jail/cgroup.hpp"
#include "jail/detail/handover.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail {

int exit_status(int wait_status) {
    if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
    if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
    return 125;
}

namespace detail {

std::string Failure::message() const {
    std::string m = what;
    if (err != 0) m += ": " + std::string(std::strerror(err));
    m += " (" + std::string(where.file_name()) + ":" + std::to_string(where.line()) + ")";
    return m;
}

namespace {
int say_fd = 2;  // the jail child's JailConfig::setup_report_fd while it sets itself up
}  // namespace

void say(const std::string& line) {
    std::string out = "cordon: " + line + "\n";
    ssize_t n = ::write(say_fd, out.data(), out.size());
    (void)n;
}

bool run_steps(Context& ctx, std::span<const Step> steps) {
    for (const Step& step : steps) {
        Result r = step.run(ctx);
        if (!r) continue;
        if (r->quiet) return false;
        if (step.optional && ctx.config.best_effort) {
            say("warning: --best-effort: running without " + std::string(step.name) + ": " + r->message());
            continue;
        }
        say("cannot set up the jail: " + std::string(step.name) + ": " + r->message());
        return false;
    }
    return true;
}

Result reset_signals(Context&) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail("PR_SET_PDEATHSIG");
    return std::nullopt;
}

// The seccomp listener goes to the supervisor (on a socket of its own: the socketpair's reads are not all
// framed) and is closed here: whoever holds it answers the jail's calls.
Result hand_over_listener(Context& ctx) {
    if (ctx.notify_fd >= 0) {
        if (!send_notify_fd(ctx.notify_sock, ctx.notify_fd)) return fail("send it to the supervisor");
        ::close(ctx.notify_fd);
    }
    if (ctx.notify_sock >= 0) ::close(ctx.notify_sock);
    return std::nullopt;
}

namespace {

// Exit status of the jail when its setup failed (the command did not run), as env(1) and container runtimes
// do.
constexpr int kSetupFailed = 125;

// The init's steps (jail.cpp unless named), defined below the tables.
Result die_with_supervisor(Context& ctx);
Result keep_own_descriptors(Context& ctx);
Result map_ids(Context& ctx);
Result read_host(Context& ctx);
Result set_hostname(Context& ctx);
Result setup_network(Context& ctx);  // net.cpp, net_filter.cpp
Result report_to_stderr(Context& ctx);
Result receive_mount_plan(Context& ctx);
Result receive_seccomp_program(Context& ctx);
Result prepare_command_line(Context& ctx);
Result stop_being_dumpable(Context& ctx);
Result start_first_command(Context& ctx);
Result close_init_descriptors(Context& ctx);
Result keep_only_cap_kill(Context& ctx);
// The command's steps (reset_signals and hand_over_listener are shared with the jail without namespaces).
Result close_inherited_descriptors(Context& ctx);

// The jail's init (PID 1 of the new namespaces), from the clone to the command's start; then it reaps and
// relays (init.cpp). The first half runs while the supervisor loads the policy; the mount plan comes from it
// (nothing comes when it could not load the policy: it kills us then).
constexpr Step kInitSteps[] = {
    {"supervisor death", die_with_supervisor, false,
     "a jail outliving its supervisor (PR_SET_PDEATHSIG; a supervisor already gone shows in its pidfd)"},
    {"inherited descriptors", keep_own_descriptors, false,
     "the supervisor's event loop, proxy sockets and audit log reaching into the jail: only 0-2 and the "
     "sockets to the supervisor stay"},
    {"id maps", map_ids, false, "unmapped ids; setgroups(2) given up where the child writes its own maps"},
    {"host mount points", read_host, false,
     "a host mount left writable: every mount point is read before anything is mounted (mounts.cpp)"},
    {"hostname", set_hostname, true, "the host's name seen in the jail"},
    {"network", setup_network, false,
     "a way out but the proxy: a network namespace of its own, lo, routes and nftables to the proxy's "
     "listeners (net.cpp, net_filter.cpp)"},
    {"listener hand-over", send_listeners, false,
     "the jail keeping a copy of the proxy's listeners: they go to the supervisor (net.cpp, handover.cpp)"},
    {"setup report", report_to_stderr, false,
     "a reason lost: until here what the setup says goes to the supervisor (auto's fallback line says it)"},
    {"filesystem", enter_staging_root, false,
     "the host's root written through: a private staging tmpfs over a read-only copy (mounts.cpp)"},
    {"mount plan", receive_mount_plan, false, "a command started before the policy was loaded"},
    {"filesystem", apply_mount_plan, false,
     "writes and reads outside the policy: the plan's binds, masks, /proc, /dev, pivot_root (mounts.cpp)"},
    {"Landlock", prepare_landlock, true,
     "what the mounts cannot say: the ruleset is built here (landlock.cpp)"},
    {"seccomp program", receive_seccomp_program, false, "a command started without its filter"},
    {"ports", open_ports, false,
     "a host port or published port reaching anything but the port named: listeners on exactly the host "
     "ports, a socket source that only makes TCP sockets here (ports.cpp)"},
    {"command line", prepare_command_line, false,
     "a secret the command gets as a sentinel staying readable in the init's environment"},
    {"not dumpable", stop_being_dumpable, false,
     "the command reading or writing the init's memory, environment or descriptors through /proc/1"},
    {"start the command", start_first_command, false,
     "copying the init's address space (CLONE_VM|CLONE_VFORK); a session's init starts none here"},
    {"init's descriptors", close_init_descriptors, false,
     "the init holding anything but its socketpair while the command runs"},
    {"init's capabilities", keep_only_cap_kill, false,
     "the init doing anything with privileges for the jail: it keeps CAP_KILL alone"},
};

// The command, started by the init with vfork semantics (setup.hpp): system calls on prepared data only.
// Limits first (rlimits need no privilege to lower), then privileges (capabilities are needed to drop the
// bounding set and change uid) and no_new_privs, Landlock, and seccomp last: it refuses calls made above.
constexpr Step kCommandSteps[] = {
    {"signals", reset_signals, false, "the init's blocked signals; a command outliving the init"},
    {"resource limits", apply_limits, true, "--memory and --pids where no cgroup holds them (limits.cpp)"},
    {"privilege drop", drop_privileges, false,
     "capabilities, setuid gains and root's groups: securebits, bounding set, uid, no_new_privs (caps.cpp)"},
    {"session command", enter_session_command, false,
     "a joining command with the init's descriptors or directory: the client's 0-2 and working directory, "
     "taken as the command's own user (session_init.cpp)"},
    {"Landlock", enforce_landlock, true,
     "a wrong mount: writes only below the writable roots; with ABI 6 no signal or abstract socket out of "
     "the "
     "jail (landlock.cpp)"},
    {"seccomp filter", enforce_seccomp, true,
     "the kernel's attack surface, sockets, namespaces, ptrace; protected names notified (seccomp.cpp)"},
    {"seccomp listener hand-over", hand_over_listener, false,
     "a notified call nobody answers: the listener goes to the supervisor, none stays in the jail"},
    {"inherited descriptors", close_inherited_descriptors, false,
     "a descriptor reaching past the mounts: only 0-2 survive exec"},
};

// The init: runs kInitSteps, then stays the command's init. Never returns.
[[noreturn]] void run_jail_init(Context& ctx) {
    if (!run_steps(ctx, kInitSteps)) {
        if (ctx.command > 0) ::kill(ctx.command, SIGKILL);
        ::_exit(kSetupFailed);
    }
    if (ctx.config.session) run_session_init(ctx);
    run_init(ctx.command, ctx.supervisor_fd, ctx.jail_sockets);
}

// The command process: kCommandSteps, then exec. Never returns.
int exec_command(void* arg) {
    Context& ctx = *static_cast<Context*>(arg);
    if (!run_steps(ctx, kCommandSteps)) ::_exit(kSetupFailed);
    // The command's PATH is the caller's (only proxy variables differ), which execvpe searches.
    ::execvpe(ctx.argv[0], ctx.argv.data(), ctx.envp.data());
    int err = errno;
    say("cannot run " + ctx.config.argv[0] + ": " + std::strerror(err));
    ::_exit(err == ENOENT ? 127 : 126);
}

bool write_file(const std::string& path, const std::string& content) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
    ::close(fd);
    return ok;
}

// The init's steps, in the order of kInitSteps.

Result die_with_supervisor(Context& ctx) {
    if (::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail("PR_SET_PDEATHSIG");
    // A supervisor that died before the line above: its pidfd is readable.
    if (ctx.supervisor_pidfd < 0) return std::nullopt;
    pollfd dead{ctx.supervisor_pidfd, POLLIN, 0};
    const bool gone = ::poll(&dead, 1, 0) != 0;
    ::close(ctx.supervisor_pidfd);
    ctx.supervisor_pidfd = -1;
    if (gone) return supervisor_gone();
    return std::nullopt;
}

// Nothing the supervisor had open (its event loop, the proxy's sockets, the audit log) stays open here: keep
// 0-2, the socketpair and the socket for the seccomp listener (moved above everything else), close the rest.
Result keep_own_descriptors(Context& ctx) {
    ctx.supervisor_fd = ::fcntl(ctx.supervisor_fd, F_DUPFD_CLOEXEC, 1000);
    if (ctx.supervisor_fd < 0) return fail("move the socketpair above 1000");
    if (ctx.notify_sock >= 0) {
        ctx.notify_sock = ::fcntl(ctx.notify_sock, F_DUPFD_CLOEXEC, ctx.supervisor_fd + 1);
        if (ctx.notify_sock < 0) return fail("move the seccomp listener's socket above the socketpair");
    }
    // What the setup says goes to the supervisor's pipe until the listeners are handed over (JailConfig).
    int report = -1;
    if (ctx.config.setup_report_fd >= 0) {
        report = ::fcntl(ctx.config.setup_report_fd, F_DUPFD_CLOEXEC,
                         std::max(ctx.supervisor_fd, ctx.notify_sock) + 1);
        if (report < 0) return fail("move the setup report's pipe above the sockets");
    }
    // Everything from 3 on but the descriptors kept above (each at the socketpair or higher).
    std::array<int, 3> keep{ctx.supervisor_fd, ctx.notify_sock, report};
    std::sort(keep.begin(), keep.end());
    unsigned from = 3;
    for (int k : keep) {
        if (k < 0) continue;
        if (static_cast<unsigned>(k) > from && !close_descriptors(from, static_cast<unsigned>(k) - 1, false))
            return fail_msg(
                "close the inherited descriptors: close_range failed and /proc/self/fd cannot be read");
        from = static_cast<unsigned>(k) + 1;
    }
    if (!close_descriptors(from, ~0U, false))
        return fail_msg(
            "close the inherited descriptors: close_range failed and /proc/self/fd cannot be read");
    if (report >= 0) say_fd = report;
    return std::nullopt;
}

// The listeners are handed over: the supervisor's configure() succeeds and it can no longer fall back to the
// jail without namespaces, so from here on (the plan's half, the command, the init's end) stderr again.
Result report_to_stderr(Context&) {
    if (say_fd != 2) {
        ::close(say_fd);
        say_fd = 2;
    }
    return std::nullopt;
}

Result map_ids(Context& ctx) {
    if (ctx.maps.by_child) {
        if (!write_file("/proc/self/setgroups", "deny")) return fail("write /proc/self/setgroups");
        if (!write_file("/proc/self/uid_map", ctx.maps.uid_map)) return fail("write /proc/self/uid_map");
        if (!write_file("/proc/self/gid_map", ctx.maps.gid_map)) return fail("write /proc/self/gid_map");
        return std::nullopt;
    }
    // The supervisor writes two-line maps (it needs CAP_SETUID) and says go.
    char go = 0;
    if (::read(ctx.supervisor_fd, &go, 1) != 1) return supervisor_gone();
    return std::nullopt;
}

// Read here rather than by the supervisor before the clone: the child waits for the plan anyway. Our mount
// namespace is still an unchanged copy of the caller's.
Result read_host(Context& ctx) {
    ctx.last_cap = read_last_cap();
    ctx.host_mounts = read_mount_points();
    return std::nullopt;
}

Result set_hostname(Context&) {
    if (::sethostname("cordon", 6) != 0) return fail("sethostname");
    return std::nullopt;
}

Result setup_network(Context& ctx) {
    // The network namespace is created here rather than by the clone: that takes the kernel about half a
    // millisecond, which the supervisor (loading the policy meanwhile) would otherwise wait for. The new
    // namespace belongs to the jail's user namespace, as with the clone.
    if (::unshare(CLONE_NEWNET) != 0) return fail("create the network namespace");
    if (!ctx.config.network) return std::nullopt;
    if (auto r = bring_up_loopback(ctx)) return r;
    if (auto r = redirect_to_proxy(ctx)) return r;
    return create_listeners(ctx);
}

Result receive_mount_plan(Context& ctx) {
    if (!receive_plan(ctx.supervisor_fd, ctx.plan)) return supervisor_gone();
    // Pinned by place_child until now; the command is not.
    if (ctx.have_cpus) ::sched_setaffinity(0, sizeof ctx.cpus, &ctx.cpus);
    return std::nullopt;
}

// Compiled by the supervisor while we were setting up (it exits or kills us when that failed).
Result receive_seccomp_program(Context& ctx) {
    if (!receive_seccomp(ctx.supervisor_fd, ctx.seccomp)) return supervisor_gone();
    return std::nullopt;
}

Result prepare_command_line(Context& ctx) {
    for (const auto& a : ctx.config.argv)
        ctx.argv.push_back(const_cast<char*>(a.c_str()));
    ctx.argv.push_back(nullptr);
    auto& env = const_cast<std::vector<std::string>&>(ctx.config.env);
    apply_env_changes(ctx.plan, env);
    for (const auto& e : ctx.config.env)
        ctx.envp.push_back(const_cast<char*>(e.c_str()));
    ctx.envp.push_back(nullptr);
    return std::nullopt;
}

// Before the command exists: from its first instruction after exec, nothing in the jail can read or write the
// init's memory, environment or descriptors through /proc/1 (the command's own exec makes it dumpable again,
// as any exec does). The capabilities can only go after the command is started (it inherits them to drop its
// own bounding set and change uid); a non-dumpable init with them for a few microseconds more offers nothing
// to reach.
Result stop_being_dumpable(Context&) {
    if (::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) return fail("PR_SET_DUMPABLE 0");
    return std::nullopt;
}

Result start_first_command(Context& ctx) {
    if (ctx.config.session) return std::nullopt;
    return start_command(ctx);
}

}  // namespace

// Starts the command sharing our memory (CLONE_VM) and suspended until it execs or exits (CLONE_VFORK):
// nothing of the init's address space is copied.
Result start_command(Context& ctx) {
    constexpr std::size_t kStack = 256 * 1024;
    void* stack =
        ::mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) return fail("map the command's stack");
    const pid_t pid =
        ::clone(exec_command, static_cast<char*>(stack) + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &ctx);
    const int err = errno;
    ::munmap(stack, kStack);
    errno = err;
    if (pid < 0) return fail("clone");
    ctx.command = pid;
    return std::nullopt;
}

// The plan's environment changes (MountPlan::env) applied to `env`. Why overwrite: a value replaced here (a
// secret the command gets as a sentinel) must not stay readable in the init, which lives as long as the jail.
void apply_env_changes(const MountPlan& plan, std::vector<std::string>& env) {
    for (const auto& change : plan.env) {
        const std::string name = change.substr(0, change.find('='));
        auto same = [&](const char* entry) {
            return std::strncmp(entry, name.c_str(), name.size()) == 0 && entry[name.size()] == '=';
        };
        for (auto it = env.begin(); it != env.end();) {
            if (same(it->c_str())) {
                ::explicit_bzero(it->data(), it->size());
                it = env.erase(it);
            } else {
                ++it;
            }
        }
        for (char** e = environ; e && *e; ++e)
            if (same(*e)) ::explicit_bzero(*e + name.size() + 1, std::strlen(*e + name.size() + 1));
        if (change.find('=') != std::string::npos) env.push_back(change);
    }
}

namespace {

// The socketpair stays, for the report at the end, and the socket source of published ports (ports.cpp); a
// session's init also keeps what starts further commands: the socket their seccomp listeners go to the
// supervisor on and the Landlock ruleset.
Result close_init_descriptors(Context& ctx) {
    std::array<int, 4> keep{ctx.supervisor_fd, ctx.jail_sockets, -1, -1};
    if (ctx.config.session)
        keep = {ctx.supervisor_fd, ctx.jail_sockets, ctx.notify_sock, ctx.landlock_ruleset};
    std::sort(keep.begin(), keep.end());
    unsigned from = 3;
    for (int k : keep) {
        if (k < 3) continue;
        if (static_cast<unsigned>(k) > from && !close_descriptors(from, static_cast<unsigned>(k) - 1, false))
            return fail_msg(
                "close the inherited descriptors: close_range failed and /proc/self/fd cannot be read");
        from = static_cast<unsigned>(k) + 1;
    }
    if (!close_descriptors(from, ~0U, false))
        return fail_msg(
            "close the inherited descriptors: close_range failed and /proc/self/fd cannot be read");
    return std::nullopt;
}

// The init keeps only what it needs (CAP_KILL, to kill a command running under another uid): nothing in the
// jail can make it do anything with privileges. A session's init starts further commands, whose privilege
// drop (caps.cpp) needs CAP_SETPCAP (securebits, bounding set) and, for --user, CAP_SETUID and CAP_SETGID:
// it keeps those too. Why that is safe: it is not dumpable (no ptrace, no /proc/1 access from the jail),
// its only input is the supervisor's socketpair, which no command holds, and none of the four reaches past
// the jail's user namespace.
Result keep_only_cap_kill(Context& ctx) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct caps[_LINUX_CAPABILITY_U32S_3] = {};
    caps[0].permitted = caps[0].effective = 1U << CAP_KILL;
    if (ctx.config.session)
        caps[0].permitted = caps[0].effective =
            (1U << CAP_KILL) | (1U << CAP_SETPCAP) | (1U << CAP_SETUID) | (1U << CAP_SETGID);
    if (::syscall(SYS_capset, &header, caps) != 0) return fail("drop the init's capabilities");
    return std::nullopt;
}

// The command's own steps (the others are in limits.cpp, caps.cpp, landlock.cpp, seccomp.cpp, and above the
// anonymous namespace).

// A file descriptor inherited from the caller reaches whatever it points to, whatever the mounts say: only
// 0-2 survive exec.
Result close_inherited_descriptors(Context& ctx) {
    ::close(ctx.supervisor_fd);
    if (!close_descriptors(3U, ~0U, true))
        return fail_msg(
            "close the inherited descriptors: close_range failed and /proc/self/fd cannot be read");
    return std::nullopt;
}

// Why: a new child starts on its parent's CPU and waits there, behind the parent (busy loading the policy),
// until the scheduler's balancing moves it: measured 1 to 3.5 ms. Moving it at once to another allowed CPU
// lets both halves of the setup run in parallel. The child restores the whole mask when the plan arrives
// (sent after this call, so it cannot be undone by it), so the command is not pinned.
void place_child(pid_t child, const Context& ctx) {
    if (!ctx.have_cpus || CPU_COUNT(&ctx.cpus) < 2) return;
    int here = ::sched_getcpu();
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (cpu == here || !CPU_ISSET(cpu, &ctx.cpus)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        ::sched_setaffinity(child, sizeof one, &one);
        return;
    }
}

// The jail's id maps (Context::maps).
IdMaps id_maps(const JailConfig& config) {
    IdMaps m;
    uid_t uid = ::getuid();
    gid_t gid = ::getgid();
    m.uid_map = std::to_string(uid) + " " + std::to_string(uid) + " 1\n";
    m.gid_map = std::to_string(gid) + " " + std::to_string(gid) + " 1\n";
    if (uid == 0 && config.run_as) {
        // Root stays root inside (the jail's init needs a mapped uid to create mount points) and the command
        // switches to the requested user, mapped to itself. Two lines need the supervisor's CAP_SETUID. The
        // supervisor writes the maps even for `--user 0`: a map written by the child requires setgroups(2)
        // denied in the namespace, and the command could then not drop root's supplementary groups.
        m.by_child = false;
        if (config.run_as->first != uid)
            m.uid_map +=
                std::to_string(config.run_as->first) + " " + std::to_string(config.run_as->first) + " 1\n";
        if (config.run_as->second != gid)
            m.gid_map +=
                std::to_string(config.run_as->second) + " " + std::to_string(config.run_as->second) + " 1\n";
    }
    return m;
}

class JailImpl final : public Jail {
  public:
    ~JailImpl() override {
        // Still running (the supervisor failed, or the jail ended without a report): nothing may run in the
        // jail while the placeholders go.
        if (pid_ > 0 && !reaped_ && !reported_) {
            kill();
            wait();
        }
        remove_placeholders();
        // After a report, only the init is left, and it is exiting (tearing down the jail's mount and network
        // namespaces takes the kernel a millisecond or two): reaped if already gone, otherwise left to
        // whoever inherits it when the supervisor exits, which `cordon run` does right after (as bwrap's
        // monitor does once its init reported). A cgroup can only be removed once the init has left it: then
        // we wait for it.
        if (pid_ > 0 && !reaped_) reap(limits_.cgroups().empty() ? WNOHANG : 0);
        limits_.remove();
        for (auto& l : listeners_)
            if (l.fd >= 0) ::close(l.fd);
        if (sigfd_ >= 0) ::close(sigfd_);
        if (sock_ >= 0) ::close(sock_);
        if (notify_sock_ >= 0) ::close(notify_sock_);
        ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    }

    pid_t pid() const override { return pid_; }
    std::vector<Listener> take_listeners() override { return std::move(listeners_); }
    int signal_fd() const override { return sigfd_; }
    int report_fd() const override { return sock_; }

    std::optional<std::string> configure(MountPlan plan, UnixSockets unix_sockets) override;

    int notify_socket() const override { return notify_sock_; }

    int take_notify_fd() override {
        if (!config_.session) return detail::take_notify_fd(notify_sock_);
        // A session's commands each send theirs on it: the socket stays.
        if (notify_sock_ < 0) return -1;
        bool again = false;
        const int passed = receive_notify_fd(notify_sock_, again);
        return again ? -1 : passed;
    }

    std::optional<int> read_report(bool& closed) override {
        int code = 0;
        ssize_t n = ::recv(sock_, &code, sizeof code, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
        closed = true;  // a report comes once; anything else is the end of the socket
        if (n != static_cast<ssize_t>(sizeof code)) return std::nullopt;
        reported_ = true;
        if (!status_) status_ = code;
        // Nothing runs in the jail any more: the placeholders go now, while the init exits.
        remove_placeholders();
        return status_;
    }

    std::optional<int> handle_signals() override {
        signalfd_siginfo info{};
        while (::read(sigfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            int sig = static_cast<int>(info.ssi_signo);
            if (sig == SIGCHLD) continue;
            // The terminal sends SIGINT, SIGQUIT, SIGWINCH to the whole foreground process group, the command
            // included: relaying those would deliver them twice.
            if (info.ssi_code == SI_KERNEL) continue;
            ::kill(pid_, sig);
        }
        reap(WNOHANG);
        return status_;
    }

    void kill() override {
        if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
    }

    bool start_session_command(const SessionCommand& command) override {
        return config_.session && !reaped_ && send_session_command(sock_, command);
    }
    bool signal_session_command(std::uint32_t id, int sig) override {
        return config_.session && !reaped_ && send_session_signal(sock_, id, sig);
    }
    std::optional<SessionEvent> read_session_event(bool& closed) override {
        SessionEvent event;
        ssize_t n = ::recv(sock_, &event, sizeof event, MSG_DONTWAIT);
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return std::nullopt;
        // Events are written whole (12 bytes, one write): anything else is the end of the init.
        if (n != static_cast<ssize_t>(sizeof event)) {
            closed = true;
            return std::nullopt;
        }
        return event;
    }

    int wait() override {
        while (!reaped_)
            reap(0);
        return status_.value_or(kSetupFailed);
    }

    bool start(const JailConfig& config, std::string& error);

  private:
    void reap(int options) {
        if (reaped_) return;
        int st = 0;
        pid_t r = ::waitpid(pid_, &st, options);
        if (r == pid_) {
            reaped_ = true;
            if (!status_) status_ = exit_status(st);
        }
        if (r < 0 && errno != EINTR) {
            reaped_ = true;
            if (!status_) status_ = kSetupFailed;
        }
    }

    bool write_id_maps(const IdMaps& maps, std::string& error);
    std::optional<std::string> create_placeholders(const MountPlan& plan,
                                                   std::vector<std::filesystem::path>& not_made);
    void remove_placeholders();

    JailConfig config_;
    pid_t pid_ = -1;
    int sigfd_ = -1;
    int sock_ = -1;
    sigset_t old_mask_{};
    std::optional<int> status_;
    bool reaped_ = false;
    bool reported_ = false;
    std::vector<Listener> listeners_;
    int notify_sock_ = -1;  // our end of the socket the command sends its seccomp listener on
    struct Made {
        std::filesystem::path path;
        mode_t type;  // S_IFREG, S_IFIFO or S_IFDIR
    };
    std::vector<Made> created_;
    JailLimits limits_;  // --memory, --pids: the cgroups, or the rlimits for the command
};

bool JailImpl::write_id_maps(const IdMaps& maps, std::string& error) {
    std::string proc = "/proc/" + std::to_string(pid_);
    if (!write_file(proc + "/uid_map", maps.uid_map)) {
        error = "cannot write the jail's uid map: " + std::string(std::strerror(errno));
        return false;
    }
    if (!write_file(proc + "/gid_map", maps.gid_map)) {
        error = "cannot write the jail's gid map: " + std::string(std::strerror(errno));
        return false;
    }
    return true;
}

std::optional<std::string> JailImpl::create_placeholders(const MountPlan& plan,
                                                         std::vector<std::filesystem::path>& not_made) {
    // Placeholders after the first of their type are hard links to it where they can be (same file system):
    // a new name costs no inode allocation (and later no inode release), which on ext4 is most of the time
    // spent. Every name is bound read-only in the jail; the supervisor removes each one only while it is
    // still what it made.
    const std::filesystem::path* first_file = nullptr;
    const std::filesystem::path* first_fifo = nullptr;
    for (const auto& ph : plan.placeholders) {
        const std::filesystem::path*& first = ph.fifo ? first_fifo : first_file;
        mode_t type = ph.fifo ? S_IFIFO : S_IFREG;
        int rc = first ? ::link(first->c_str(), ph.path.c_str()) : -1;
        if (rc != 0 && (!first || errno == EXDEV || errno == EPERM || errno == EMLINK || errno == ENOENT)) {
            if (ph.fifo) {
                rc = ::mkfifo(ph.path.c_str(), 0);
                if (rc != 0 && (errno == EPERM || errno == EINVAL || errno == EOPNOTSUPP)) {
                    // A file system without FIFOs: an empty directory does the same, at a higher cost.
                    rc = ::mkdir(ph.path.c_str(), 0755);
                    type = S_IFDIR;
                }
            } else {
                rc = ::open(ph.path.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
                if (rc >= 0) ::close(rc);
            }
            if (rc >= 0 && type != S_IFDIR && !first) first = &ph.path;
        }
        // Where we may not create it (a directory we cannot write, a read-only file system), the command,
        // with our uid and no capabilities, cannot either: nothing to protect.
        if (rc < 0 && (errno == EACCES || errno == EPERM || errno == EROFS)) {
            not_made.push_back(ph.path);
            continue;
        }
        if (rc < 0 && errno != EEXIST)
            return "cannot create the placeholder " + ph.path.string() + " that keeps " + ph.why +
                   " from being created: " + std::strerror(errno);
        if (rc >= 0) created_.push_back({ph.path, type});
    }
    return std::nullopt;
}

void JailImpl::remove_placeholders() {
    for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
        // Only if still what we made: an empty file, a FIFO, an empty directory (rmdir fails otherwise).
        struct stat st {};
        if (::lstat(it->path.c_str(), &st) != 0 || (st.st_mode & S_IFMT) != it->type) continue;
        if (it->type == S_IFDIR)
            ::rmdir(it->path.c_str());
        else if (it->type == S_IFIFO || st.st_size == 0)
            ::unlink(it->path.c_str());
    }
    created_.clear();
}

bool JailImpl::start(const JailConfig& config, std::string& error) {
    config_ = config;
    if (!replace_reaching_descriptors(error)) return false;
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
        error = std::string("socketpair: ") + std::strerror(errno);
        return false;
    }
    sock_ = pair[0];

    sigset_t set = forwarded_signals(true);
    ::sigprocmask(SIG_BLOCK, &set, &old_mask_);
    sigfd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd_ < 0) {
        error = std::string("signalfd: ") + std::strerror(errno);
        ::close(pair[1]);
        return false;
    }

    // A fork-like clone: the child continues here with a copy of our memory, in new namespaces. The process
    // is single-threaded at this point (the proxy's loop starts later). It is cloned early, while our
    // address space is still small: every page either side writes afterwards is copied.
    long flags =
        CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | SIGCHLD;
    Context ctx{config_};
    if (config.memory_bytes || config.max_pids) {
        LimitRequest request;
        request.memory_bytes = config.memory_bytes;
        request.max_pids = config.max_pids;
        request.command_is_host_root = ::getuid() == 0 && (!config.run_as || config.run_as->first == 0);
        request.best_effort = config.best_effort;
        std::string name = config.id.empty() ? "cordon-" + std::to_string(::getpid()) + "-jail" : config.id;
        auto made = JailLimits::create(request, read_cgroup_dirs(), name);
        if (auto* message = std::get_if<std::string>(&made)) {
            error = *message;
            ::close(pair[1]);
            return false;
        }
        limits_ = std::move(std::get<JailLimits>(made));
        if (!limits_.notice.empty()) say(limits_.notice);
        ctx.rlimit_as = limits_.rlimit_as;
        ctx.rlimit_nproc = limits_.rlimit_nproc;
    }
    int notify_pair[2] = {-1, -1};
    if (config.user_notify && ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, notify_pair) != 0) {
        error = std::string("socketpair: ") + std::strerror(errno);
        ::close(pair[1]);
        return false;
    }
    notify_sock_ = notify_pair[0];
    ctx.notify_sock = notify_pair[1];
    ctx.supervisor_fd = pair[1];
    ctx.maps = id_maps(config);
    ctx.have_cpus = ::sched_getaffinity(0, sizeof ctx.cpus, &ctx.cpus) == 0;
    ctx.supervisor_pidfd = static_cast<int>(::syscall(SYS_pidfd_open, ::getpid(), 0));
    long child = ::syscall(SYS_clone, flags, nullptr, nullptr, nullptr, nullptr);
    if (child != 0 && ctx.supervisor_pidfd >= 0) ::close(ctx.supervisor_pidfd);
    if (child < 0) {
        error = std::string("cannot create the jail's namespaces: ") + std::strerror(errno) +
                (errno == EPERM || errno == ENOSPC ? " (are user namespaces disabled?)" : "");
        ::close(pair[1]);
        return false;
    }
    if (child == 0) {
        ::close(pair[0]);
        run_jail_init(ctx);
    }
    pid_ = static_cast<pid_t>(child);
    place_child(pid_, ctx);
    ::close(pair[1]);
    if (ctx.notify_sock >= 0) ::close(ctx.notify_sock);
    // Before the init starts the command (it waits for the plan): every process of the jail is counted.
    if (auto message = limits_.enter(pid_)) {
        error = *message;
        return false;
    }

    if (!ctx.maps.by_child) {
        if (!write_id_maps(ctx.maps, error)) return false;
        char go = 'g';
        if (::write(sock_, &go, 1) != 1) {
            error = std::string("cannot start the jail: ") + std::strerror(errno);
            return false;
        }
    }
    return true;
}

std::optional<std::string> JailImpl::configure(MountPlan plan, UnixSockets unix_sockets) {
    // The plan first: the child applies it while the placeholders are created and the seccomp filter is
    // compiled here (on another CPU when there is one). It binds the placeholders last, once they exist.
    const bool ports = !plan.host_ports.empty() || plan.jail_sockets;
    bool sent = send_plan(sock_, plan);
    if (!plan.placeholders.empty()) {
        std::vector<std::filesystem::path> not_made;
        if (auto error = create_placeholders(plan, not_made)) return error;
        sent = sent && send_paths(sock_, not_made);
    }
    std::vector<sock_filter> seccomp;
    if (auto r = compile_seccomp(config_, unix_sockets, seccomp)) {
        if (!config_.best_effort) return "cannot build the seccomp filter: " + r->message();
        say("warning: --best-effort: running without the seccomp filter: " + r->message());
        seccomp.clear();
    }
    // A child that failed is reported below, when no listeners arrive.
    if (sent) send_seccomp(sock_, seccomp);
    auto listeners = receive_listeners(sock_);
    if (!listeners) {
        wait();
        return "the jail could not be set up";
    }
    listeners_ = std::move(*listeners);
    // The host ports' listeners and the socket source come after the plan (ports.cpp).
    if (ports) {
        auto more = receive_ports(sock_);
        if (!more) {
            wait();
            return "the jail could not be set up";
        }
        for (auto& l : *more)
            listeners_.push_back(std::move(l));
    }
    return std::nullopt;
}

}  // namespace
}  // namespace detail

std::variant<std::unique_ptr<Jail>, std::string> Jail::start(const JailConfig& config) {
    auto jail = std::make_unique<detail::JailImpl>();
    std::string error;
    if (!jail->start(config, error)) return error;
    return std::unique_ptr<Jail>(std::move(jail));
}

}  // namespace cordon::jail
