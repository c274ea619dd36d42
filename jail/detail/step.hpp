// The jail's setup pipeline, nsjail-style: an explicit context passed through ordered steps; each step
// returns success or a Failure carrying errno and the source location; a failed step stops the pipeline (fail
// closed) unless the user asked for best effort and the step is one that may be skipped.
#pragma once

#include <cerrno>
#include <optional>
#include <source_location>
#include <string>

namespace cordon::jail::detail {

struct Failure {
    std::string what;  // "mount tmpfs on /tmp"
    int err = 0;       // errno, 0 when not a system call failure
    std::source_location where;
    // Nothing to say: the supervisor is gone, or it stopped the setup and reports why itself.
    bool quiet = false;
    std::string message() const;  // "mount tmpfs on /tmp: Permission denied (jail/mounts.cpp:42)"
};

// Empty = success.
using Result = std::optional<Failure>;

// A failure built from the current errno.
inline Failure fail(std::string what, std::source_location where = std::source_location::current()) {
    return Failure{std::move(what), errno, where};
}
inline Failure supervisor_gone(std::source_location where = std::source_location::current()) {
    return Failure{"the supervisor is gone", 0, where, true};
}
inline Failure fail_msg(std::string what, std::source_location where = std::source_location::current()) {
    return Failure{std::move(what), 0, where};
}

// Writes one line "cordon: ..." to stderr with a single write(2) (safe in a forked child).
void say(const std::string& line);

}  // namespace cordon::jail::detail
