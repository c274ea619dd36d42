// The jail's filesystem view as data: what to mount where, computed from the policy without touching anything
// (it only looks at the filesystem to resolve symlinks, expand globs and see what exists). The executor
// (jail/mounts.cpp) applies a plan; unit tests check plans without privileges.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::jail {

enum class MountKind {
    RootReadOnly,  // "/" of the host, bound recursively, every submount read-only
    PrivateTmp,    // a fresh, writable tmpfs (the private /tmp)
    Writable,      // the host path bound read-write (working directory, allowWrite)
    ReadOnly,  // the host path bound read-only over itself (denyWrite, always-read-only, settings files read,
               // allowRead re-exposed inside a mask, placeholders)
    MaskDir,   // an empty read-only tmpfs over a directory (denyRead)
    MaskFile,  // an empty read-only file over a file (denyRead)
    Proc,      // a fresh /proc of the jail's PID namespace, with /proc/sys & co read-only
    Dev,       // a minimal /dev
    // A symlinked protected name in a writable area (a dotfile manager's `.bashrc -> dotfiles/bashrc`): a
    // read-only file mounted on the symlink itself (the new mount API can; mount(2) would follow the link),
    // so the name cannot be removed or replaced. Shows `source` (the link's target) read-only, or an empty
    // file when the target is missing or hidden. `path` is the link, not resolved.
    ReadOnlyLink,
    // A symlink recreated inside a denyRead mask (`source`: its text), where it leads into a re-exposed
    // allowRead path: with `denyRead: ["/"]` and `allowRead: ["/usr"]`, the merged-/usr links /bin and /lib64
    // must still lead to /usr/bin and /usr/lib64, or nothing runs.
    Symlink,
};
std::string_view to_string(MountKind kind);

struct MountOp {
    MountKind kind;
    std::filesystem::path path;         // absolute, resolved through symlinks (ReadOnlyLink: up to the link)
    std::string why;                    // the rule or default that asked for it, for error messages
    std::filesystem::path source = {};  // ReadOnlyLink: what it shows; empty: an empty file
};

// A protected path that does not exist yet. It must stay impossible to create inside the jail, so an empty
// placeholder is created at its first missing component (an empty file, which blocks a directory of that name
// too; only `.git` is a FIFO, see below) before the jail starts and bound read-only over itself: the name is
// taken, the mount cannot be written, renamed or unlinked (EBUSY), and nothing can be created inside it. The
// supervisor removes placeholders after the run (if they are still what it made).
//
// Why not something that leaves the host untouched: a mount needs a mount point, and every alternative is
// worse: an empty read-only tmpfs over the parent directory would hide the working directory's contents,
// Landlock rules only allow (they cannot carve one name out of a writable directory), and a mount point
// created only in the jail's view does not exist (the working directory *is* the host directory). The
// placeholder is visible on the host during the run; an empty `.bashrc` does nothing. A `.git` that is an
// empty file would be read by git as a broken gitfile (fatal, also in a subdirectory of a repository); one
// that is neither a file nor a directory is skipped by git's discovery like an empty directory, and unlike a
// directory it has no data block to free (with the `discard` mount option, removing an empty directory cost
// 0.4-0.7 ms here). Its mode is 0: nobody but root can open it.
struct Placeholder {
    std::filesystem::path path;
    bool fifo = false;  // `.git`: a FIFO (a directory where the file system has no FIFOs)
    std::string why;
};

struct MountPlan {
    // In the order they must be applied: shallower paths first, so a deeper rule overrides a shallower one;
    // at equal depth, Writable < ReadOnly < MaskDir/MaskFile (deny beats allow).
    std::vector<MountOp> ops;
    std::vector<Placeholder> placeholders;
    // The roots where the command may write (for Landlock): the working directory, /tmp, allowWrite.
    std::vector<std::filesystem::path> writable_roots;
    // The project read scope (policy::ReadScope::Project): "/" is masked and the scope bound back in;
    // `readable_roots` are what the mounts show, where Landlock lets the command read and execute files.
    bool read_scope = false;
    std::vector<std::filesystem::path> readable_roots;
    // Things the user should know: a glob enforced only on what exists, an allowWrite path that does not
    // exist or is a dangling symlink.
    std::vector<std::string> notices;
    // Why the plan cannot be applied as the policy asks (a deny rule that cannot be resolved, a working
    // directory that is not writable by default): `cordon run` prints them and stops (125). One line each.
    std::vector<std::string> errors;
    // Changes to the command's environment known only once the policy has loaded (the jail started with
    // JailConfig::env before): "NAME=value" sets NAME, "NAME" removes it. The init also overwrites the old
    // values in its own memory (a secret the command sees only as a sentinel must not stay in the init).
    std::vector<std::string> env;
    // The port forwards known only once the policy has loaded (jail/ports.cpp): the init listens on these
    // ports of its loopback (127.0.0.1 and ::1) for the host's loopback ports (`--host-port`), and with
    // `jail_sockets` keeps a socket source that makes TCP sockets in its network namespace for the
    // supervisor (`--publish`). Both handed over before the command starts.
    std::vector<std::uint16_t> host_ports;
    bool jail_sockets = false;
};

struct PlanInput {
    policy::FilesystemPolicy filesystem;
    std::vector<std::filesystem::path> files_read;
    std::filesystem::path cwd;
    std::filesystem::path home;
    // The working directory is a writable root (see policy::FilesystemPolicy::WorkingDirectory).
    bool cwd_writable = true;
    // Files cordon itself writes from outside the jail (the audit log): read-only inside wherever they lie,
    // like the settings files; the supervisor writes through its own descriptor.
    std::vector<std::filesystem::path> supervisor_files;
    // cordon's own binary, which the command runs as `cordon connect` (the jail's GIT_SSH_COMMAND): shown at
    // the same path where the private /tmp would hide it, and read-only where it lies in a writable area.
    std::filesystem::path self_exe;
    // How deep to look for existing always-read-only names (.git/hooks, .bashrc, ...) below each writable
    // root.
    int scan_depth = 3;
    // Missing protected paths get placeholders, and existing ones below the top of each writable root are
    // looked for (scan_depth): only on kernels without seccomp user notification (jail/notify.hpp), which
    // otherwise enforces them at the system-call boundary.
    bool placeholders = true;
};

MountPlan make_mount_plan(const PlanInput& input);
// The plan for `policy`. A working directory the policy does not make writable by default (`/`, a system
// directory, the home directory) is an error of the plan unless an allowWrite covers it.
MountPlan make_mount_plan(const policy::Policy& policy, const std::filesystem::path& cwd,
                          const std::filesystem::path& home,
                          const std::vector<std::filesystem::path>& supervisor_files = {},
                          const std::filesystem::path& self_exe = {}, bool placeholders = true);

// Creates the audit log `path` (as the proxy would: append, mode 0640) when it does not exist yet, so that
// the plan can protect it before the command starts, and returns it resolved through symlinks (the name the
// supervisor then opens: a link the command replaces later leads nowhere). An error message on failure.
std::variant<std::filesystem::path, std::string> prepare_audit_log(const std::filesystem::path& path);

// Whether `p` is `root` or lies below it (lexically: both already resolved).
bool within(const std::filesystem::path& p, const std::filesystem::path& root);

// Expands a gitignore-style glob (`*`, `?`, `[...]` within a component, `**` across components) against what
// exists now. Exposed for tests.
std::vector<std::filesystem::path> expand_glob(const std::filesystem::path& pattern);

}  // namespace cordon::jail
