// The jail's PID 1 once the command runs. In a PID namespace, PID 1 adopts every orphan and its death kills
// the whole namespace: it reaps, forwards the signals the supervisor relays, and when the command exits it
// kills whatever the command left behind and exits with the command's status.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jail/detail/setup.hpp"

namespace cordon::jail::detail {

sigset_t forwarded_signals(bool with_sigchld) {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH})
        sigaddset(&set, sig);
    if (with_sigchld) sigaddset(&set, SIGCHLD);
    return set;
}

void run_init(pid_t command, int report_fd, int jail_sockets) {
    sigset_t set = forwarded_signals(true);
    // With published ports the init also answers the supervisor's socket requests (ports.cpp): it waits
    // for either, the signals through a signalfd (they stay blocked), then takes them as before.
    const int sigfd = jail_sockets >= 0 ? ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK) : -1;
    const timespec no_wait{0, 0};
    for (;;) {
        if (sigfd >= 0) {
            pollfd fds[2] = {{sigfd, POLLIN, 0}, {jail_sockets, POLLIN, 0}};
            if (::poll(fds, jail_sockets >= 0 ? 2 : 1, -1) < 0) continue;
            if (jail_sockets >= 0 && (fds[1].revents & POLLIN)) serve_socket_request(jail_sockets);
            if (jail_sockets >= 0 && (fds[1].revents & (POLLHUP | POLLERR)) && !(fds[1].revents & POLLIN)) {
                ::close(jail_sockets);  // the supervisor is done with it
                jail_sockets = -1;
            }
            if (!(fds[0].revents & POLLIN)) continue;
        }
        siginfo_t info{};
        int sig = sigfd >= 0 ? ::sigtimedwait(&set, &info, &no_wait) : ::sigwaitinfo(&set, &info);
        if (sig < 0) continue;  // EINTR, or nothing pending after all
        if (sig != SIGCHLD) {
            // Only what the supervisor relays (sent from outside the namespace: si_pid reads 0 here). Signals
            // the terminal sent to the foreground process group (SI_KERNEL) reached the command already;
            // signals from processes inside the jail are not ours to relay.
            if ((info.si_code == SI_USER || info.si_code == SI_QUEUE) && info.si_pid == 0)
                ::kill(command, sig);
            continue;
        }
        int status = 0;
        pid_t pid;
        while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
            if (pid != command) continue;  // an orphan, reaped
            // The command is done: nothing it started may outlive it.
            ::kill(-1, SIGKILL);
            while (::waitpid(-1, nullptr, 0) > 0 || errno == EINTR) {
            }
            int code = exit_status(status);
            ssize_t n = ::write(report_fd, &code, sizeof code);
            (void)n;  // without a report the supervisor learns the status from our exit
            ::_exit(code);
        }
    }
}

}  // namespace cordon::jail::detail
