// The hand-over between the supervisor and the jail: the frames on the socketpair (the mount plan, the
// placeholders the supervisor could not make, the seccomp program) and the SCM_RIGHTS message that carries
// the seccomp listener from the command process to the supervisor. (The proxy's listeners go the other way in
// jail/net.cpp.) A frame is a byte count (native uint32), then the body; in a body every number is a native
// uint32 and every string length-prefixed.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <filesystem>
#include <string>
#include <vector>

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

// The seccomp listener `fd`, sent by the command process (no allocation: it runs with vfork semantics).
bool send_notify_fd(int sock, int fd);
// The listener received by the supervisor (close-on-exec), or -1 for anything else; `again` when nothing has
// arrived yet.
int receive_notify_fd(int sock, bool& again);

}  // namespace cordon::jail::detail
