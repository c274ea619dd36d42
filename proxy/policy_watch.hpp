// `--watch`: notices when a policy source changes, so the caller can reload as on SIGHUP.
//
// inotify watches the directories the sources live in, never the files themselves: configuration tools write
// a new file and rename it over the old one, and a Kubernetes ConfigMap volume swaps its `..data` symlink; a
// watch on the old file would see neither. A directory that does not exist yet is noticed through its nearest
// existing parent. Events settle for a short debounce before `changed` is called once; after each call the
// caller re-arms the watch for the policy it now has (new files, new directories).
//
// Errors: create() throws std::runtime_error when inotify cannot be set up.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "policy/policy.hpp"

struct uv_loop_s;

namespace cordon::proxy {

class PolicyWatch {
  public:
    static std::unique_ptr<PolicyWatch> create(
        uv_loop_s* loop, std::function<void()> changed,
        std::chrono::milliseconds debounce = std::chrono::milliseconds(300));
    // Watches the directories of every source `options` names and of every file `current` was read from
    // (replacing the previous set). Returns one message per directory that could not be watched (e.g. the
    // user's inotify watch limit), empty when all are.
    virtual std::vector<std::string> arm(const policy::LoadOptions& options,
                                         const policy::Policy& current) = 0;
    // The directories watched now (tests, messages).
    virtual std::vector<std::filesystem::path> directories() const = 0;
    virtual ~PolicyWatch() = default;
};

// The directories whose entries can change the policy `options` loads: the managed directory and its
// managed-settings.d, the directory of each --settings file, the discovered .claude directories, and the
// directory of every file `current` read (also where a symlink leads).
std::vector<std::filesystem::path> policy_source_directories(const policy::LoadOptions& options,
                                                             const policy::Policy& current);

}  // namespace cordon::proxy
