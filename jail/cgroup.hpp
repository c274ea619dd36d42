// --memory and --pids for the whole jail. A cgroup made for one run below the caller's own cgroup: in the
// unified hierarchy (v2) when the caller's cgroup offers the controllers (a subtree delegated to the caller,
// or root), otherwise in the v1 `memory` and `pids` hierarchies where the caller may create cgroups (root).
// What no cgroup can limit falls back to rlimits, which the command applies itself: RLIMIT_AS per process,
// RLIMIT_NPROC per user (which the kernel does not apply to the host's root: that case is refused).
//
// Errors are messages (std::string), as in jail.hpp: everything here runs in the supervisor.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cordon::jail {

// The caller's own cgroup directory in each hierarchy that can limit something (empty when there is none,
// or it is not visible in this mount namespace).
struct CgroupDirs {
    std::filesystem::path unified;         // cgroup v2
    std::filesystem::path unified_parent;  // its parent, when that is visible too
    std::filesystem::path v1_memory, v1_pids;
};

// From the text of /proc/self/mountinfo and /proc/self/cgroup.
CgroupDirs find_cgroup_dirs(std::string_view mountinfo, std::string_view proc_self_cgroup);
// This process's.
CgroupDirs read_cgroup_dirs();
// Removes the cgroups `cordon-SUPERVISOR-*` that a supervisor that is gone left in this process's cgroup
// directories (a session's cleaner, run/session.cpp, for its supervisor killed with SIGKILL). True when none
// is left (one still holding a dying process stays: call again).
bool remove_cgroups_of(pid_t supervisor);

struct LimitRequest {
    std::optional<std::uint64_t> memory_bytes;  // --memory
    std::optional<std::uint64_t> max_pids;      // --pids
    bool command_is_host_root = false;          // the command runs as the host's uid 0
    bool best_effort = false;                   // a limit that cannot be applied is skipped with a warning
};

// The limits of one jail, decided (and the cgroups created) before the jail starts. Removes its cgroups when
// destroyed; every process in them must be gone by then.
class JailLimits {
  public:
    // Creates the cgroups, named `name` (`cordon-PID-...`: PID is this process), for what they can limit,
    // after removing those left by cordon processes that are gone (a supervisor killed with SIGKILL cannot
    // remove its own); the rest become rlimits. Returns a message when a requested limit can be applied by
    // neither (with best_effort: says so on stderr and runs without it).
    static std::variant<JailLimits, std::string> create(const LimitRequest& request, const CgroupDirs& dirs,
                                                        const std::string& name);

    JailLimits() = default;
    JailLimits(JailLimits&& other) noexcept;
    JailLimits& operator=(JailLimits&& other) noexcept;
    JailLimits(const JailLimits&) = delete;
    JailLimits& operator=(const JailLimits&) = delete;
    ~JailLimits() { remove(); }

    // Moves `pid` (the jail's init, before it starts the command) into the cgroups.
    std::optional<std::string> enter(pid_t pid) const;
    // Removes the cgroups (retrying briefly while the last process exits). False if one stays: the next
    // cordon run with a limit removes it.
    bool remove();

    const std::vector<std::filesystem::path>& cgroups() const { return cgroups_; }
    // What the command applies itself (no cgroup for it).
    std::optional<std::uint64_t> rlimit_as, rlimit_nproc;
    // One line for stderr: which limits are in force, and how.
    std::string notice;

  private:
    std::vector<std::filesystem::path> cgroups_;  // created by us; the pid goes into each
};

}  // namespace cordon::jail
