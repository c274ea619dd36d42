// A session's PID 1 (JailConfig::session). It starts no command of its own: the supervisor asks it for each
// joining command (a request on the socketpair carrying the client's descriptors), and it starts each with
// start_command, so through the same command steps as a run's command (jail.cpp's kCommandSteps), in the
// same namespaces. Unlike a run's init it does not kill what a command leaves running: background servers
// stay, reachable by the next command, until the session ends (the init is killed, or the supervisor goes).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "jail/detail/handover.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

namespace {

void report(int fd, SessionEvent::Kind kind, std::uint32_t id, std::int32_t value) {
    SessionEvent event{kind, id, value};
    // One write of 12 bytes on a stream socket: read whole by the supervisor (read_session_event).
    ssize_t n = ::send(fd, &event, sizeof event, MSG_NOSIGNAL);
    (void)n;  // a supervisor that is gone kills us (PR_SET_PDEATHSIG)
}

[[noreturn]] void end_session(int code) {
    ::kill(-1, SIGKILL);
    while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
    }
    ::_exit(code);
}

}  // namespace

// Runs as the joining command (after the privilege drop, so as the command's own user): its descriptors are
// the client's, not the init's /dev/null, and it starts where the client is (in the jail's view; the
// filesystem rules are the session's, fixed when it started).
Result enter_session_command(Context& ctx) {
    if (ctx.session_fds[0] < 0) return std::nullopt;
    for (int i = 0; i < 3; ++i)
        if (::dup2(ctx.session_fds[i], i) < 0)
            return fail("take the client's descriptor " + std::to_string(i));
    // The client's pty (run/terminal_relay.hpp) becomes the command's controlling terminal, in a session of
    // its own: ^C typed there reaches the command as SIGINT, a resize as SIGWINCH, and /dev/tty opens it.
    // Without force: a terminal that is another session's stays theirs (the command runs without one).
    for (int i = 0; i < 3; ++i)
        if (::isatty(i)) {
            if (::setsid() >= 0) ::ioctl(i, TIOCSCTTY, 0);
            break;
        }
    if (::chdir(ctx.session_cwd.c_str()) != 0) return fail("enter the working directory " + ctx.session_cwd);
    return std::nullopt;
}

void run_session_init(Context& ctx) {
    // The session outlives the `cordon session start` that made it: nothing of its terminal or pipes stays.
    const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0)
        for (int i = 0; i < 3; ++i)
            ::dup2(null, i);
    if (null > 2) ::close(null);
    sigset_t set = forwarded_signals(true);
    const int sigfd = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sigfd < 0) end_session(125);
    std::map<pid_t, std::uint32_t> running;  // command pid -> the supervisor's id
    report(ctx.supervisor_fd, SessionEvent::Kind::Ready, 0, 0);
    for (;;) {
        // The socket source of published ports (ports.cpp), served as by a run's init.
        pollfd p[3] = {{ctx.supervisor_fd, POLLIN, 0}, {sigfd, POLLIN, 0}, {ctx.jail_sockets, POLLIN, 0}};
        if (::poll(p, ctx.jail_sockets >= 0 ? 3 : 2, -1) < 0) continue;  // EINTR
        if (ctx.jail_sockets >= 0 && (p[2].revents & POLLIN)) serve_socket_request(ctx.jail_sockets);
        if (ctx.jail_sockets >= 0 && (p[2].revents & (POLLHUP | POLLERR)) && !(p[2].revents & POLLIN)) {
            ::close(ctx.jail_sockets);  // the supervisor is done with it
            ctx.jail_sockets = -1;
        }
        if (p[1].revents & POLLIN) {
            signalfd_siginfo info{};
            while (::read(sigfd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
                const int sig = static_cast<int>(info.ssi_signo);
                // Only the supervisor ends the session by a signal (sent from outside the namespace: the
                // sender's pid reads 0 here); processes in the jail cannot.
                const bool from_outside =
                    (info.ssi_code == SI_USER || info.ssi_code == SI_QUEUE) && info.ssi_pid == 0;
                if (sig != SIGCHLD && from_outside && (sig == SIGTERM || sig == SIGINT || sig == SIGHUP))
                    end_session(128 + sig);
            }
            int status = 0;
            pid_t pid;
            while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
                auto it = running.find(pid);
                if (it == running.end()) continue;  // an orphan, reaped
                report(ctx.supervisor_fd, SessionEvent::Kind::Exited, it->second, exit_status(status));
                running.erase(it);
            }
        }
        if (!(p[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
        SessionCommand command;
        int sig = 0;
        const char op = receive_session_request(ctx.supervisor_fd, command, sig);
        if (op == 0) end_session(125);  // the supervisor is gone, or speaks nonsense
        if (op == 'K') {
            for (const auto& [pid, id] : running)
                if (id == command.id) ::kill(pid, sig);
            continue;
        }
        ctx.session_argv = std::move(command.argv);
        ctx.session_env = std::move(command.env);
        apply_env_changes(ctx.plan, ctx.session_env);
        ctx.argv.clear();
        ctx.envp.clear();
        for (auto& a : ctx.session_argv)
            ctx.argv.push_back(a.data());
        ctx.argv.push_back(nullptr);
        for (auto& e : ctx.session_env)
            ctx.envp.push_back(e.data());
        ctx.envp.push_back(nullptr);
        ctx.session_cwd = command.cwd;
        for (int i = 0; i < 3; ++i)
            ctx.session_fds[i] = command.fds[i];
        ctx.notify_fd = -1;  // each command makes its own seccomp listener
        ctx.command = -1;
        // exec_command names the program in its failure message from config.argv.
        auto& first = const_cast<std::vector<std::string>&>(ctx.config.argv);
        first.assign(1, ctx.session_argv[0]);
        const Result started = start_command(ctx);
        for (int i = 0; i < 3; ++i) {
            ::close(command.fds[i]);
            ctx.session_fds[i] = -1;
        }
        if (started || ctx.command <= 0) {
            report(ctx.supervisor_fd, SessionEvent::Kind::Exited, command.id, 125);
            continue;
        }
        running[ctx.command] = command.id;
        report(ctx.supervisor_fd, SessionEvent::Kind::Started, command.id, ctx.command);
    }
}

}  // namespace cordon::jail::detail
