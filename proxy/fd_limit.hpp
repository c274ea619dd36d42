// The descriptor limit of a process that runs the proxy: each tunnel holds two sockets (and two pipes while
// moving data), so ask for every descriptor we may have.
#pragma once

namespace cordon::proxy {

// Raises RLIMIT_NOFILE's soft limit to the hard limit; as root, both to fs.nr_open first. Best effort: on
// failure the limits stay as they were.
void raise_fd_limit();

}  // namespace cordon::proxy
