// The hand-over between the supervisor and the jail, in one place: the frames on the socketpair (the mount
// plan, the placeholders the supervisor could not make, the seccomp program) and the one way descriptors pass
// between cordon's processes, an SCM_RIGHTS message (send_fds / receive_fds): the proxy's listeners from the
// jail's init to the supervisor (jail/net.cpp), the seccomp listener from the command process to the
// supervisor, a caller's socket and a pinned socket file from the supervisor to a connector
// (jail/unix_sockets.cpp). A frame is a byte count (native uint32), then the body; in a body every number is
// a native uint32 and every string length-prefixed.
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

#include "jail/jail.hpp"
#include "jail/mount_plan.hpp"

namespace cordon::jail::detail {

bool read_all(int fd, void* buf, std::size_t size);
bool write_all(int fd, const std::string& data);
bool send_frame(int fd, const std::string& body);
bool receive_frame(int fd, std::string& body);

// The supervisor sends, the jail child receives (it waits for the plan first: await_readable).
bool send_plan(int fd, const MountPlan& plan);
bool receive_plan(int fd, MountPlan& plan);
bool send_paths(int fd, const std::vector<std::filesystem::path>& paths);
bool receive_placeholders_made(int fd, std::vector<std::filesystem::path>& not_made);
bool send_seccomp(int fd, const std::vector<sock_filter>& program);
bool receive_seccomp(int fd, std::vector<sock_filter>& program);
void await_readable(int fd);

// The most descriptors one message carries (the proxy's listeners are the most: jail/net.cpp).
constexpr std::size_t kMaxPassedFds = 16;
// One message: `size` bytes of `data` and `nfds` descriptors (at most kMaxPassedFds; none: no control data).
// Returns sendmsg's count (the caller checks it is `size`), or -1 with errno; EINTR is retried, SIGPIPE never
// raised. Neither function allocates: they run in the command process (vfork semantics) and in a connector
// forked from the multithreaded supervisor.
ssize_t send_fds(int sock, const void* data, std::size_t size, const int* fds, std::size_t nfds);
// Receives one message: up to `size` bytes into `data`, its descriptors (close-on-exec) into `fds`, `nfds` of
// them. A message that carries more than `max_fds` descriptors, or whose control data was cut short, is
// refused: every descriptor it brought is closed, and -1 returned with errno EBADMSG. Otherwise the byte
// count (0: end of file), or -1 with recvmsg's errno (EINTR is retried; `flags` may add MSG_DONTWAIT).
ssize_t receive_fds(int sock, void* data, std::size_t size, int* fds, std::size_t max_fds, std::size_t& nfds,
                    int flags = 0);

// A session's requests, supervisor to init: a command to start (one byte 'R' carrying its three descriptors,
// then a frame) or a signal for one ('K', then a frame). receive_session_request returns the byte (0: the
// supervisor is gone or the message is malformed).
bool send_session_command(int fd, const SessionCommand& command);
bool send_session_signal(int fd, std::uint32_t id, int sig);
char receive_session_request(int fd, SessionCommand& command, int& sig);

// The seccomp listener `fd`, sent by the command process (no allocation: it runs with vfork semantics).
bool send_notify_fd(int sock, int fd);
// The listener received by the supervisor (close-on-exec), or -1 for anything else; `again` when nothing has
// arrived yet.
int receive_notify_fd(int sock, bool& again);
// receive_notify_fd once: when a message (or anything else) has come, `sock` is closed and set to -1 (the
// socket is done with either way) and the listener, or -1, returned; -1 with `sock` kept while nothing has.
// Both jails' take_notify_fd.
int take_notify_fd(int& sock);

}  // namespace cordon::jail::detail
