// The steps of the jail's setup, one concern per file (mounts, net, caps, landlock, seccomp, limits, init).
// Everything here runs in the jail child (the jail's PID 1) or in the command process it starts.
//
// The command process is started with vfork semantics (it shares the init's memory until it execs): every
// step that runs there ("enforce_*", drop_privileges, apply_limits) only makes system calls on data prepared
// beforehand (the seccomp program compiled by the supervisor, the Landlock ruleset built by the init, argv
// and envp), never allocates on its success path. That spares copying the address space per run.
#pragma once

#include <sched.h>
#include <signal.h>
#include <sys/types.h>

#include <linux/filter.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jail/detail/step.hpp"
#include "jail/jail.hpp"

namespace cordon::jail::detail {

// The jail's id maps: the caller keeps its uid and gid inside. Computed by the supervisor before the clone
// (inside, before the maps exist, getuid() reads the overflow uid).
struct IdMaps {
    std::string uid_map, gid_map;
    // A single line mapping our own ids: the jail child writes it itself (no round trip to the supervisor),
    // which the kernel allows only after setgroups(2) is given up in the namespace (otherwise dropping a
    // group could gain access that the group was denying).
    bool by_child = true;
};

// What the pipeline carries from step to step. The supervisor fills in its part before the clone, so that
// the jail child (a copy-on-write image of it) only uses it: every page the child writes is copied.
struct Context {
    const JailConfig& config;
    int supervisor_fd = -1;  // socketpair to the supervisor: "go" byte and seccomp program in, listeners out
    std::vector<Listener> listeners{};
    std::vector<sock_filter> seccomp{};      // compiled by the supervisor; empty = none (best effort)
    int landlock_ruleset = -1;               // built by the init after the mounts; -1 = none
    int last_cap = 63;                       // /proc/sys/kernel/cap_last_cap
    std::vector<char*> argv{}, envp{};       // for execvpe, pointing into config
    std::vector<std::string> host_mounts{};  // the host's mount points, read before anything is mounted
    MountPlan plan{};                        // received from the supervisor (ops, writable roots)
    // The limits no cgroup holds, which the command sets on itself (decided by the supervisor).
    std::optional<std::uint64_t> rlimit_as{}, rlimit_nproc{};
    int notify_fd = -1;    // the seccomp listener (command process), sent to the supervisor
    int notify_sock = -1;  // the socket it is sent on
    // The init's own: the supervisor's pidfd (-1: none), the id maps, the CPU mask the init takes back once
    // the plan arrives (jail.cpp's place_child), the command once started.
    int supervisor_pidfd = -1;
    IdMaps maps{};
    cpu_set_t cpus{};
    bool have_cpus = false;
    pid_t command = -1;
    // A session's init, for the joining command it starts next (jail/session_init.cpp): the client's 0-2
    // (-1: the first command of a run, which keeps the init's) and its working directory.
    int session_fds[3] = {-1, -1, -1};
    std::string session_cwd{};
    std::vector<std::string> session_argv{}, session_env{};
    int jail_sockets = -1;  // the init's end of the socket source (jail/ports.cpp), -1: none
};

// One step of the jail's setup: a name (in every failure), what it does, what it guards against (read by
// people: jail.cpp's tables state the order). An optional step may be skipped with --best-effort.
struct Step {
    const char* name;
    Result (*run)(Context&);
    bool optional;
    const char* guards;
};

// Runs `steps` in order; a failure stops the pipeline unless the step is optional and best effort was asked
// for. Says "cannot set up the jail: STEP: what: error (file:line)" unless the failure is quiet. Makes no
// allocation on success (runs in the command process too).
bool run_steps(Context& ctx, std::span<const Step> steps);

// jail/mounts.cpp: the mount points of the caller's mount table (read by the jail child before it mounts;
// empty when unreadable); the staging root (a private tmpfs with the host's root below it), entered before
// the plan is known; the plan applied under it, then pivot into the jail's root and detach the host's.
Result enter_staging_root(Context& ctx);
Result apply_mount_plan(Context& ctx);
// jail/handover.cpp: the supervisor's word that the plan's placeholders exist, with those it could not create
// (where the command cannot create them either: they need no mount). False when the supervisor is gone.
bool receive_placeholders_made(int fd, std::vector<std::filesystem::path>& not_made);
std::vector<std::string> read_mount_points();
// jail/net.cpp
Result bring_up_loopback(Context& ctx);
// A socket of `type` (SOCK_STREAM: listening) bound to `port` of the loopback address of `family` (IPv6 only
// for AF_INET6), non-blocking and close-on-exec; the descriptor, or -1 with errno. The proxy's listeners and
// the host ports (jail/ports.cpp).
int listen_loopback(int family, std::uint16_t port, int type);
Result create_listeners(Context& ctx);
Result send_listeners(Context& ctx);
// jail/net_filter.cpp: the default routes via lo and the nftables rules (transparent_port != 0).
Result redirect_to_proxy(Context& ctx);
// jail/net_filter.cpp: /etc/resolv.conf naming the DNS stub, bound read-only (before the pivot).
Result bind_resolv_conf(Context& ctx);
// Supervisor side; nullopt on EOF. `max`: the most descriptors the message may carry.
std::optional<std::vector<Listener>> receive_listeners(int fd, std::size_t max = 14);
// jail/ports.cpp: the host ports' listeners and the socket source (MountPlan::host_ports, jail_sockets),
// made after the plan and handed over in one message; the supervisor receives it in configure().
Result open_ports(Context& ctx);
std::optional<std::vector<Listener>> receive_ports(int fd);
// jail/ports.cpp: one request on the socket source, answered (a socket, or the errno).
void serve_socket_request(int source);
// jail/caps.cpp: no_new_privs, capabilities (bounding, ambient, inheritable, permitted, effective), uid
// change.
Result drop_privileges(Context& ctx);
// jail/landlock.cpp: builds the ruleset (in the init, after the mounts); returns success when Landlock is
// missing and that is allowed (with a message). enforce_landlock restricts the calling process.
Result prepare_landlock(Context& ctx);
Result enforce_landlock(Context& ctx);
// jail/seccomp.cpp: compile_seccomp runs in the supervisor while the child sets up (the program is sent over
// the socketpair); enforce_seccomp loads the program in the command process.
Result compile_seccomp(const JailConfig& config, UnixSockets unix_sockets, std::vector<sock_filter>& program);
Result enforce_seccomp(Context& ctx);
// Reads /proc/sys/kernel/cap_last_cap (63 when unreadable).
int read_last_cap();
// jail/limits.cpp
Result apply_limits(Context& ctx);
// jail/jail.cpp: command steps both jails run: the signal mask the supervisor blocked cleared and death with
// the parent; the seccomp listener sent to the supervisor (send_notify_fd) and closed with its socket.
Result reset_signals(Context& ctx);
Result hand_over_listener(Context& ctx);
// jail/init.cpp: the jail's PID 1 after forking the command: reaps, forwards signals, kills the rest when the
// command exits, reports the command's status on `report_fd` (the supervisor can clean up while the init
// exits) and exits with it.
// `jail_sockets` (-1: none): the socket source it serves meanwhile (jail/ports.cpp).
[[noreturn]] void run_init(pid_t command, int report_fd, int jail_sockets);
// jail/session_init.cpp: a session's PID 1 (JailConfig::session): starts each command the supervisor asks
// for (start_command), reports its start and end, and keeps what commands leave running until it is killed.
[[noreturn]] void run_session_init(Context& ctx);
// jail/jail.cpp: the command, started with CLONE_VM|CLONE_VFORK (returns once it has exec'd or exited);
// the plan's environment changes (MountPlan::env) applied to `env`.
Result start_command(Context& ctx);
void apply_env_changes(const MountPlan& plan, std::vector<std::string>& env);
// jail/session_init.cpp, a command step: a joining command's descriptors and working directory.
Result enter_session_command(Context& ctx);

// jail/descriptors.cpp: descriptor hygiene. close_descriptors closes every descriptor in [first, last] but
// `except` (or marks it close-on-exec), without allocating; false when it cannot, and then the jail must not
// start. replace_reaching_descriptors gives the command /dev/null for a descriptor on 0-2 that reaches past
// the jail: a directory or O_PATH one, a socket of the host's network, a Unix datagram or unconnected one (in
// the supervisor, before the clone).
bool close_descriptors(unsigned first, unsigned last, bool cloexec, int except = -1);
bool replace_reaching_descriptors(std::string& error);

// The signals forwarded to the command (and SIGCHLD), blocked in the supervisor and the jail's init.
sigset_t forwarded_signals(bool with_sigchld);

}  // namespace cordon::jail::detail
