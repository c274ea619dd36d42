// cordon's jail: runs one command inside new user, mount, PID, network, IPC, UTS and cgroup namespaces, with
// the filesystem view of a MountPlan, no capabilities, no_new_privs, a seccomp filter and Landlock. The
// caller (the supervisor, `cordon run`) receives the proxy listening sockets created inside the jail's
// network namespace and serves them; it forwards signals and collects the exit status through this class.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "jail/host_view.hpp"
#include "jail/mount_plan.hpp"

namespace cordon::jail {

// What the jail needs from the command line. The policy's part (the mount plan, allowAllUnixSockets) comes
// later, in Jail::configure: the jail's namespaces are created while the supervisor loads the policy.
struct JailConfig {
    std::vector<std::string> argv;  // the command; argv[0] is looked up in PATH of `env`
    std::vector<std::string> env;   // the command's whole environment, "NAME=value"
    std::filesystem::path cwd;      // where the command starts (inside the jail's view)

    bool allow_ptrace = false;
    bool strict = false;       // a kernel without a protection layer (Landlock) is an error
    bool best_effort = false;  // a restriction that cannot be applied is skipped with a message

    // Started as root, the command keeps uid 0 (mapped to the host's root, every capability dropped) unless
    // `run_as` names another uid/gid (then the jail maps both and the command runs as that user).
    std::optional<std::pair<uid_t, gid_t>> run_as;

    // --memory and --pids hold for the whole jail where a cgroup can be made (jail/cgroup.hpp), otherwise
    // they are rlimits; start() says which on stderr, and fails when neither can apply a limit.
    std::optional<std::uint64_t> memory_bytes;  // --memory
    std::optional<std::uint64_t> max_pids;      // --pids
    bool network = true;                        // create the listeners below inside the jail
    // TCP ports to listen on inside the jail's network namespace (127.0.0.1 and ::1, up to 4), handed to the
    // caller (take_listeners) to serve.
    std::vector<std::uint16_t> listen_ports;
    // Transparent proxying (jail/net_filter.cpp): when not 0, every outbound TCP connection is redirected to
    // a listener on this port (127.0.0.1 and ::1), and a DNS stub's sockets (UDP and TCP on 127.0.0.1:53)
    // are created too, all handed over with the proxy's; /etc/resolv.conf is bound over to name the stub.
    std::uint16_t transparent_port = 0;
    std::string id;  // `cordon-PID-RANDOM`: names the jail's cgroup
    // The seccomp filter sends the calls that create, replace, remove or open a name for writing to the
    // supervisor (jail/notify.hpp); the command hands over the listener (take_notify_fd). False: the
    // old-kernel fallback (placeholders).
    bool user_notify = false;
    // The namespace-free jail (landlock_jail.hpp): the seccomp filter also sends every connect to the
    // supervisor and refuses what would reach the network around it (set by start_without_namespaces).
    bool without_namespaces = false;
    // Where the namespace jail's child writes what it says until it has handed its listeners over (a
    // failure's reason, a --best-effort warning) instead of stderr: the write end of a pipe, so that auto's
    // fallback can say the reason in its one line (run/supervisor.cpp replays the rest). -1: stderr.
    int setup_report_fd = -1;
    // A session (`cordon session start`): the init starts no command of its own (argv is empty) and stays
    // until it is killed; each joining command is started on request (Jail::start_session_command).
    bool session = false;
};

// A command joining a session: started by the session's init into the jail's namespaces with the same
// command steps as the first command of a run (jail.cpp's kCommandSteps), with the joining client's
// descriptors as its 0-2 and `cwd` (in the jail's view) as its working directory.
struct SessionCommand {
    std::uint32_t id = 0;  // the supervisor's number for it, in the events below
    std::vector<std::string> argv, env;
    std::string cwd;
    int fds[3] = {-1, -1, -1};  // stdin, stdout, stderr; not owned
};

// What a session's init reports.
struct SessionEvent {
    enum class Kind : std::uint32_t { Ready = 1, Started = 2, Exited = 3 };
    Kind kind = Kind::Ready;  // Ready: the init serves requests (once, id 0)
    std::uint32_t id = 0;
    std::int32_t value = 0;  // Started: the command's pid in the jail; Exited: its status (128+N)
};

// The proxy's listening sockets created inside the jail's network namespace.
// HostPort: a listener for a host port (MountPlan::host_ports; jail/ports.hpp); JailSockets: not a listener,
// the init's socket source for published ports (jail/ports.hpp), once per jail.
struct Listener {
    enum class Kind { Proxy, Transparent, DnsUdp, DnsTcp, HostPort, JailSockets };
    std::string address;  // "127.0.0.1:PORT", "[::1]:PORT"
    int fd = -1;
    Kind kind = Kind::Proxy;
};

// What socket(AF_UNIX) may do: Refused (the default), Listed (allowUnixSockets: connect and bind go through
// the supervisor, jail/unix_sockets.hpp; needs user notification), All (allowAllUnixSockets).
enum class UnixSockets { Refused, Listed, All };

class Jail {
  public:
    // Starts the jail in two halves, so that creating the namespaces overlaps loading the policy. start()
    // clones the jail child, which writes its id maps, brings up loopback, creates the proxy listeners and a
    // staging root, then waits for configure(). Blocks the forwarded signals and SIGCHLD in the calling
    // thread: they arrive on signal_fd(). Call before starting threads. On failure returns a message.
    static std::variant<std::unique_ptr<Jail>, std::string> start(const JailConfig& config);
    // The policy's half: creates the placeholders, hands the mount plan and the seccomp filter to the child
    // and receives the listeners. The child then applies the plan and starts the command. On failure returns
    // a message (the jail child has already printed the details on stderr); the jail is gone then.
    virtual std::optional<std::string> configure(MountPlan plan, UnixSockets unix_sockets) = 0;

    virtual pid_t pid() const = 0;
    // Ownership passes to the caller.
    virtual std::vector<Listener> take_listeners() = 0;
    // Readable when a signal arrived for the supervisor.
    virtual int signal_fd() const = 0;
    // Reads pending signals: forwards SIGINT SIGTERM SIGHUP SIGQUIT SIGUSR1 SIGUSR2 SIGWINCH sent to the
    // supervisor to the jail (not those the terminal sent to the whole process group: the command got them
    // too), reaps the jail. Returns the exit status (the command's, or 128+N) once the jail has exited.
    virtual std::optional<int> handle_signals() = 0;
    // Readable when the jail's init reports the command's end (everything else in the jail already killed):
    // read_report() then returns the status, earlier than the init's own exit reaches handle_signals().
    // Returns nullopt otherwise; `closed` tells that no report will come (stop polling report_fd()).
    virtual int report_fd() const = 0;
    virtual std::optional<int> read_report(bool& closed) = 0;
    // Readable when the command hands over its seccomp listener (JailConfig::user_notify); -1 without.
    virtual int notify_socket() const = 0;
    // The listener, once notify_socket() was readable, else -1 (then no listener will come: the command
    // did not start). Ownership passes to the caller; call once.
    virtual int take_notify_fd() = 0;
    // The namespace-free jail (landlock_jail.hpp) listens on ports the kernel chose, on the host's loopback:
    // those, in the order of JailConfig::listen_ports. Empty: the ports asked for.
    virtual std::vector<std::uint16_t> listener_ports() const { return {}; }
    // What the notifier must know when the command shares the host's namespaces; null for the namespace jail.
    virtual std::shared_ptr<const HostView> host_view() const { return nullptr; }
    // Sessions (JailConfig::session). The command starts asynchronously: its Started and Exited events come
    // on report_fd() (read_session_event). False when the init is gone.
    virtual bool start_session_command(const SessionCommand&) { return false; }
    // Sends `sig` to the session command `id` (nothing when it has ended).
    virtual bool signal_session_command(std::uint32_t, int) { return false; }
    // The next event once report_fd() is readable; nullopt otherwise, `closed` when no more will come.
    virtual std::optional<SessionEvent> read_session_event(bool& closed) {
        closed = true;
        return std::nullopt;
    }
    // Kills everything in the jail (SIGKILL to its init).
    virtual void kill() = 0;
    // Waits for the jail to exit (after kill()) and returns its status.
    virtual int wait() = 0;

    // Kills the jail if it still runs, removes the placeholders and unblocks signals. After a report the init
    // is only reaped if it is already gone: the caller is expected to exit soon (its child is then inherited
    // and reaped by the system).
    virtual ~Jail() = default;
};

// The exit status for a wait(2) status: the code, or 128+N when killed by signal N.
int exit_status(int wait_status);

}  // namespace cordon::jail
