// The joined command's pty and its relay (see terminal_relay.hpp).
#include "run/terminal_relay.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace cordon::run {

namespace {

// The user's terminal while it is raw, for the signal handlers: the relay must never leave it raw, also
// when the client dies of a signal (the relayed ones come through the client's signalfd; these do not).
int g_raw_fd = -1;
termios g_saved{}, g_raw{};
constexpr int kDeadly[] = {SIGABRT, SIGALRM, SIGBUS,    SIGFPE,  SIGILL,  SIGPIPE,
                           SIGPROF, SIGSEGV, SIGVTALRM, SIGXCPU, SIGXFSZ, SIGSYS};
struct sigaction g_old_deadly[std::size(kDeadly)], g_old_stop;

void on_deadly(int sig) {
    if (g_raw_fd >= 0) ::tcsetattr(g_raw_fd, TCSANOW, &g_saved);
    ::raise(sig);  // SA_RESETHAND: the default action once this returns
}

// SIGTSTP (sent by kill: raw, the terminal makes none): stopped with the terminal as the user had it.
void on_stop(int) {
    const int saved_errno = errno;
    if (g_raw_fd >= 0) ::tcsetattr(g_raw_fd, TCSANOW, &g_saved);
    ::kill(::getpid(), SIGSTOP);
    if (g_raw_fd >= 0) ::tcsetattr(g_raw_fd, TCSANOW, &g_raw);
    errno = saved_errno;
}

void write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, size);
        if (n > 0) {
            data += n;
            size -= static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EAGAIN) {
            pollfd p{fd, POLLOUT, 0};
            ::poll(&p, 1, 100);
        } else if (n < 0 && errno == EINTR) {
            continue;
        } else {
            return;  // the user's terminal is gone: the output has nowhere to go
        }
    }
}

}  // namespace

std::variant<std::unique_ptr<TerminalRelay>, std::string> TerminalRelay::open(int (&fds)[3]) {
    int terminal = -1;
    for (int fd : fds)
        if (terminal < 0 && ::isatty(fd)) terminal = fd;
    if (terminal < 0) return std::unique_ptr<TerminalRelay>();
    std::unique_ptr<TerminalRelay> relay(new TerminalRelay);
    relay->master_ = ::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (relay->master_ < 0 || ::grantpt(relay->master_) != 0 || ::unlockpt(relay->master_) != 0)
        return std::string("cannot make a terminal for the command: ") + std::strerror(errno);
    // The slave by the master (not by its path in /dev/pts, which could be another file by then); O_NOCTTY:
    // it is the command's controlling terminal, never the client's.
    relay->slave_ = ::ioctl(relay->master_, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (relay->slave_ < 0) return std::string("cannot open the command's terminal: ") + std::strerror(errno);
    ::fcntl(relay->master_, F_SETFL, ::fcntl(relay->master_, F_GETFL) | O_NONBLOCK);
    termios modes{};
    if (::tcgetattr(terminal, &modes) == 0) ::tcsetattr(relay->slave_, TCSANOW, &modes);
    relay->size_fd_ = terminal;
    relay->copy_window_size();
    relay->in_ = ::isatty(fds[0]) ? fds[0] : -1;
    for (int i : {1, 2, 0})
        if (relay->out_ < 0 && ::isatty(fds[i])) relay->out_ = fds[i];
    for (int& fd : fds)
        if (::isatty(fd)) fd = relay->slave_;
    return relay;
}

TerminalRelay::~TerminalRelay() {
    if (raw_fd_ >= 0) {
        ::tcsetattr(raw_fd_, TCSANOW, &*saved_);
        g_raw_fd = -1;
        for (std::size_t i = 0; i < std::size(kDeadly); ++i)
            ::sigaction(kDeadly[i], &g_old_deadly[i], nullptr);
        ::sigaction(SIGTSTP, &g_old_stop, nullptr);
    }
    if (slave_ >= 0) ::close(slave_);
    if (master_ >= 0) ::close(master_);
}

void TerminalRelay::start() {
    ::close(slave_);
    slave_ = -1;
    termios modes{};
    if (in_ < 0 || ::tcgetattr(in_, &modes) != 0) return;
    // Raw: every key (^C, ^Z, ^D included) goes to the pty, whose line discipline gives the command its
    // signals and end of file; the user's terminal neither echoes nor acts on them meanwhile.
    saved_ = modes;
    g_saved = modes;
    ::cfmakeraw(&modes);
    g_raw = modes;
    struct sigaction deadly {
    }, stop{};
    deadly.sa_handler = on_deadly;
    deadly.sa_flags = SA_RESETHAND;
    stop.sa_handler = on_stop;
    stop.sa_flags = SA_RESTART;
    for (std::size_t i = 0; i < std::size(kDeadly); ++i)
        ::sigaction(kDeadly[i], &deadly, &g_old_deadly[i]);
    ::sigaction(SIGTSTP, &stop, &g_old_stop);
    g_raw_fd = raw_fd_ = in_;
    ::tcsetattr(in_, TCSANOW, &modes);
}

std::size_t TerminalRelay::poll_fds(pollfd* out) const {
    std::size_t n = 0;
    // Typed input waits while the master has not taken what came before (a command that does not read).
    if (in_ >= 0 && pending_.size() < 4096) out[n++] = {in_, POLLIN, 0};
    if (master_open_) out[n++] = {master_, static_cast<short>(POLLIN | (pending_.empty() ? 0 : POLLOUT)), 0};
    return n;
}

void TerminalRelay::on_poll(const pollfd* in, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
        if (in[i].fd == in_ && (in[i].revents & (POLLIN | POLLHUP | POLLERR))) {
            char buf[4096];
            const ssize_t got = ::read(in_, buf, sizeof buf);
            if (got > 0)
                pending_.append(buf, static_cast<std::size_t>(got));
            else if (got == 0 || (errno != EINTR && errno != EAGAIN))
                in_ = -1;  // the user's terminal ended: the command reads on until it ends too
        }
        if (in[i].fd == master_ && (in[i].revents & (POLLIN | POLLHUP | POLLERR))) relay_output();
    }
    if (!pending_.empty() && master_open_) {
        const ssize_t put = ::write(master_, pending_.data(), pending_.size());
        if (put > 0)
            pending_.erase(0, static_cast<std::size_t>(put));
        else if (put < 0 && errno != EAGAIN && errno != EINTR)
            pending_.clear();
    }
}

void TerminalRelay::relay_output() {
    char buf[16384];
    for (int round = 0; round < 16; ++round) {
        const ssize_t n = ::read(master_, buf, sizeof buf);
        if (n > 0) {
            if (out_ >= 0) write_all(out_, buf, static_cast<std::size_t>(n));
            continue;
        }
        // EIO: no process has the slave open any more.
        if (n == 0 || (errno != EAGAIN && errno != EINTR)) master_open_ = false;
        return;
    }
}

void TerminalRelay::copy_window_size() {
    winsize size{};
    if (::ioctl(size_fd_, TIOCGWINSZ, &size) == 0) ::ioctl(master_, TIOCSWINSZ, &size);
}

void TerminalRelay::finish() {
    using Clock = std::chrono::steady_clock;
    const auto end = Clock::now() + std::chrono::milliseconds(500);
    while (master_open_ && Clock::now() < end) {
        pollfd p{master_, POLLIN, 0};
        if (::poll(&p, 1, 50) <= 0) break;  // quiet: the command's last output is out
        relay_output();
    }
    // From here a process the command left gets EIO or end of file from the slave, never what the user
    // types into their shell.
    ::close(master_);
    master_ = -1;
    master_open_ = false;
}

}  // namespace cordon::run
