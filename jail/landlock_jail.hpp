// The jail without namespaces (`cordon run --jail landlock`, and the fallback of `--jail auto` where the host
// forbids the namespace jail: user namespaces disabled, refused by a seccomp filter or by AppArmor, another
// sandbox around cordon). The command runs in the host's namespaces, confined by what needs none:
//   - writes, protected names and git rules: the seccomp notifier (notify.hpp), with the host's paths
//     (host_view.hpp), and Landlock write grants on the writable roots where the kernel has Landlock;
//   - reads (denyRead, the project read scope): Landlock read grants computed from the mount plan; a read
//     rule that cannot be enforced (no Landlock) stops the run, naming it;
//   - the network: every connect goes to the supervisor, which connects the caller's own socket only to the
//     proxy's listeners on the host's loopback; UDP, raw, SCTP, MSG_FASTOPEN, TCP_FASTOPEN_CONNECT, io_uring
//     refused in the filter; Landlock's TCP rules (ABI 4) refuse every connect and bind the command makes
//     itself (the supervisor's are not the command's);
//   - signals and abstract Unix sockets scoped by Landlock (ABI 6), ptrace refused, a private TMPDIR.
// Weaker than the namespace jail: host processes are visible under /proc (no PID namespace), /tmp and
// /dev/shm are the host's, programs that ignore the proxy variables get a refusal (no transparent
// proxying), no cgroup unless delegated.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "jail/jail.hpp"
#include "jail/mount_plan.hpp"

namespace cordon::jail {

// Which jail `cordon run` uses: `--jail auto|namespaces|landlock`, settings key `sandbox.jail`.
enum class JailChoice { Auto, Namespaces, Landlock };
std::optional<JailChoice> parse_jail_choice(std::string_view text);
std::string_view to_string(JailChoice choice);

// Starts the namespace-free jail: the proxy's listeners on the host's loopback (ports the kernel picks, see
// Jail::listener_ports) and the run's private temporary directory; configure() starts the command. A
// message when it cannot.
std::variant<std::unique_ptr<Jail>, std::string> start_without_namespaces(const JailConfig& config);

// The Landlock ABI of the running kernel (0: none, or refused by a filter).
int landlock_abi();

// What the namespace-free jail lacks on this host against the namespace jail, for the one stderr line.
std::string without_namespaces_lacks(int abi);

// The namespace-free jail's Landlock rules, computed from the mount plan (what the namespace jail would
// show is what may be read; its writable binds are what may be written). `private_tmp` stands for the plan's
// private /tmp. Exposed for tests.
struct LandlockGrant {
    std::filesystem::path path;
    std::uint64_t access = 0;  // LANDLOCK_ACCESS_FS_* bits
};
struct LandlockGrants {
    std::uint64_t handled = 0;            // handled_access_fs
    std::vector<LandlockGrant> grants;    // what the command may do below each path
    bool reads = false;                   // reads are restricted (denyRead, the project read scope)
    std::vector<std::string> read_rules;  // the rules that restrict them, for an error without Landlock
    // Where reads are restricted: each path the namespace jail would mount, shown (true) or hidden (false);
    // the deepest at or above a path decides. The notifier keeps its own calls out of what is hidden.
    std::map<std::string, bool> shown;
};
LandlockGrants landlock_grants(const MountPlan& plan, const std::filesystem::path& private_tmp, int abi);

}  // namespace cordon::jail
