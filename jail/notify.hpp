// The protected names at the system-call boundary. The jail's seccomp filter sends every call that creates,
// replaces, removes or opens a name for writing (open/openat/creat with O_CREAT O_WRONLY O_RDWR O_TRUNC,
// openat2, truncate, mkdir*, mknod*, link*, symlink*, rename*, unlink*, rmdir) to the supervisor
// (SECCOMP_RET_USER_NOTIF). A Notifier thread there resolves the path in the jail's view, decides with the
// policy (policy::Policy::decide_write_resolved: the whole write policy, since the call it performs is not
// under the jail's Landlock) and performs the call itself, as the caller (its fsuid, fsgid, groups, umask),
// returning the result or injecting the new descriptor (SECCOMP_IOCTL_NOTIF_ADDFD). It never lets the kernel
// continue a call whose decision depended on a path in the caller's memory. See jail/README.md.
#pragma once

#include <sys/types.h>

#include <ctime>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "jail/host_view.hpp"
#include "policy/policy.hpp"
#include "policy/write_rules.hpp"

namespace cordon::jail {

// True when the kernel has what the mechanism needs (user notification with SECCOMP_ADDFD_FLAG_SEND: Linux
// 5.14) and the test switch CORDON_TEST_NO_USER_NOTIF=1 does not ask for the old-kernel fallback
// (placeholders, see mount_plan.hpp).
bool user_notification_supported();

// When the run started, by the two clocks a birth time is compared with. File systems stamp a new inode with
// the coarse clock (up to a tick, ~4 ms, behind the fine one), so a git directory born between `coarse` and
// `fine` may be older or younger than the run: the notifier then asks whether the run made it.
struct RunStart {
    timespec coarse{};  // CLOCK_REALTIME_COARSE, read first
    timespec fine{};    // CLOCK_REALTIME, read right after
    static RunStart now();
};

// Whether a directory born at `btime` existed when the run started: before `coarse`, yes; after `fine`, no;
// in between, unless the run made it (`made_by_run`).
bool existed_before(const RunStart& start, const timespec& btime, bool made_by_run);

// A write the notifier refused by its write rules (policy/write_rules.hpp), for the end-of-run summary, the
// audit log and the control channel (run/write_refusals.hpp).
struct RefusedWrite {
    std::string path;       // where the write lands, in the jail's view
    std::string operation;  // "open", "mkdir", "mknod", "remove", "rename", "link", "symlink", "truncate",
                            // "chmod"
    int error = 0;  // what the caller got: EROFS outside the writable areas, EACCES for a protected path
    const policy::WriteRule* rule = nullptr;  // the write rule that refused
    policy::Decision path_rule;               // the path rules' decision, when `rule` is path-rules
    pid_t pid = 0;                            // the caller, in the supervisor's PID namespace
    std::string program;                      // its name (/proc/PID/comm), empty when it is gone
};
// Called on the notifier's thread right before the caller gets its answer (so that a refusal is handed over
// before a command that ends at once can end the run). Must only count and queue, never write anything out
// nor wait on another party (the audit log's disk, a control peer): the jailed caller waits meanwhile.
using RefusedWriteSink = std::function<void(RefusedWrite&&)>;

class Notifier {
  public:
    // Serves the listener `fd` (ownership passes) on its own thread until the jail is gone. `run_start` tells
    // git directories that existed before the run from those the run created.
    // `mount_points`: the paths the mount plan mounts on (jail view). The supervisor works from the host's
    // mount namespace, where they are no mount points: it refuses to remove or rename them (EBUSY) as the
    // jail's namespace would.
    // `host`: the command runs without namespaces (jail/host_view.hpp): writes to /dev, /proc and the host's
    // /tmp, and every connect, follow its rules too.
    // `cordon_files`: cordon's own files (the audit log, its binary; resolved): never written,
    // replaced, linked, moved or removed (the write rule cordon-files), known by identity and by path.
    // `refused`: told of every call the write rules refused (see RefusedWriteSink).
    // A connect to a session's control socket (host_rules::session_socket) is refused in either jail: the
    // supervisor, which performs the connect, is a process of the host the session would take for a client.
    static std::unique_ptr<Notifier> start(int fd, policy::PolicyPtr policy, RunStart run_start,
                                           std::vector<std::string> mount_points,
                                           std::shared_ptr<const HostView> host = nullptr,
                                           std::vector<std::string> cordon_files = {},
                                           RefusedWriteSink refused = nullptr);
    // The repositories the run created, for the end-of-run summary: git directories (`.../.git`, jail view)
    // it made or wrote into, gitfiles, and bare repositories where allowBareRepositories lets it make them.
    // Each is known by its identity (device and inode), under the path it was last seen at; the list is
    // bounded (kMaxNamedRepositories), `more` counts the rest.
    struct NewRepositories {
        std::vector<std::string> paths;
        std::size_t more = 0;
    };
    static constexpr std::size_t kMaxNamedRepositories = 256;
    virtual NewRepositories new_repositories() const = 0;
    // True once its thread has ended: every process under its filter is gone (a session's supervisor drops
    // the notifiers of commands that have ended, with their listeners).
    virtual bool finished() const = 0;
    virtual ~Notifier() = default;
};

}  // namespace cordon::jail
