// cordon's policy as a macOS Seatbelt profile (SBPL, what `sandbox-exec -p` reads): the same Policy the Linux
// jail is built from, turned into a profile that denies by default and grants reads, writes and the network
// the way the jail does. Pure: no file system access but through `ProfileOptions::canonical`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::seatbelt {

struct ProfileOptions {
    // Loopback ports of cordon's proxy (HTTP and SOCKS5): the only network the command reaches. Empty: none.
    std::vector<std::uint16_t> proxy_ports;
    // Further loopback ports on the host the command may connect to (a database, a dev server).
    std::vector<std::uint16_t> host_ports;
    // The proxy's audit log: never writable by the command, wherever it lies.
    std::string audit_log;
    // The command's private temporary directory, written in place of the Linux jail's private /tmp (on
    // macOS /tmp is the host's, shared by every process). Empty: `/tmp` as the policy has it.
    std::string temp_dir;
    // The spelling of an absolute path as the kernel reports it to Seatbelt: symlinks on the way resolved
    // (on macOS /tmp is /private/tmp, /var is /private/var). Each path rule is written as given and, where
    // the two differ, canonical too. Unset: paths as given.
    std::function<std::string(const std::string&)> canonical;
};

struct Profile {
    std::string text;                   // the profile, one S-expression per rule
    std::vector<std::string> warnings;  // allow rules that could not be written (skipped, never widened)
};

// The profile for `policy`: default deny; the process basics programs need (srt's list); reads everywhere
// but denyRead (allowRead re-exposing, the longer rule winning as in Policy::decide_read) or only the project
// read scope; writes only in the writable roots, minus denyWrite, the settings files read, the audit log and
// the protected names (at any depth, letters of either case), with renaming or removing a protected path or
// any of its parents denied; network only to `proxy_ports` and `host_ports` on loopback and the allowed Unix
// sockets. Strings longer than Seatbelt reads (1025 bytes) are split: a deny into a wider match, an allow is
// left out with a warning.
Profile make_profile(const policy::Policy& policy, const ProfileOptions& options);

// The canonical spelling of an absolute path on this machine: the longest existing prefix through realpath,
// the rest appended as written. For ProfileOptions::canonical.
std::string canonical_path(const std::string& path);

}  // namespace cordon::seatbelt
