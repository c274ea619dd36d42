// The jail's PID 1 once the command runs. In a PID namespace, PID 1 adopts every orphan and its death kills
// the whole namespace: it reaps, forwards the signals the supervisor relays, and when the command exits it
// kills whatever the command left behind and exits with the command's status.
#include <signal.h>
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

void run_init(pid_t command, int report_fd) {
    sigset_t set = forwarded_signals(true);
    for (;;) {
        siginfo_t info{};
        int sig = ::sigwaitinfo(&set, &info);
        if (sig < 0) continue;  // EINTR
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
