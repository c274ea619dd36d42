// A joined command's own terminal, as `docker exec -t` gives one: the client of `cordon run --session` makes
// a pty, passes its slave in place of each of its descriptors 0-2 that is a terminal, and relays between the
// user's terminal (raw meanwhile) and the master until the command's status arrives; then it closes the
// master. Why: the session keeps what a command leaves running, and a process holding the user's terminal
// itself would go on reading what the user types into their shell afterwards; a slave whose master is closed
// gives it EIO or end of file instead.
#pragma once

#include <poll.h>
#include <termios.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <variant>

namespace cordon::run {

class TerminalRelay {
  public:
    // None of `fds` (the client's 0-2) a terminal: nullptr, they pass as they are. Else a pty (the window
    // size and modes of the user's terminal copied to it) whose slave replaces each that is.
    static std::variant<std::unique_ptr<TerminalRelay>, std::string> open(int (&fds)[3]);
    // The user's terminal restored, the master closed.
    ~TerminalRelay();
    TerminalRelay(const TerminalRelay&) = delete;
    TerminalRelay& operator=(const TerminalRelay&) = delete;

    // Once the slave is passed on: our copy closed, the user's terminal (when it is the input) made raw.
    void start();
    // The descriptors to wait on (at most 2), then what they said.
    std::size_t poll_fds(pollfd* out) const;
    void on_poll(const pollfd* in, std::size_t n);
    // SIGWINCH: the user's terminal's size to the pty (the kernel tells the command).
    void copy_window_size();
    // The command's status arrived: what it wrote last reaches the user's terminal (for a moment at most:
    // a background process may write on), then the master closes and the terminal is restored.
    void finish();

  private:
    TerminalRelay() = default;
    void relay_output();

    int master_ = -1;
    int slave_ = -1;
    int in_ = -1;       // the user's terminal as input (0), -1 when 0 is not one or it ended
    int out_ = -1;      // where the command's output goes: the first terminal of 1, 2, 0
    int size_fd_ = -1;  // the terminal the window size is read from
    int raw_fd_ = -1;   // the user's terminal while it is raw (its modes: saved_)
    bool master_open_ = true;
    std::string pending_;  // typed, not yet taken by the master
    std::optional<termios> saved_;
};

}  // namespace cordon::run
