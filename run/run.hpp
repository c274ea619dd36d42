// `cordon run`'s supervisor: wires the jail (jail/) and the egress proxy (proxy/) for one jailed command. It
// starts the jail's namespaces while the policy loads, hands the mount plan to the jail, serves the proxy
// listeners created inside the jail on a libuv loop in the host's network namespace, relays signals, enforces
// --timeout, prints the refusals and ends with the command's status.
//
// Errors: set-up failures are printed on stderr ("cordon: ...") and become the exit status 125 (2 when the
// policy does not load, as for every command).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/proxy.hpp"
#include "run/inspection.hpp"

namespace cordon::run {

class SessionHost;

struct Options {
    std::vector<std::string> command;
    bool strict = false, best_effort = false, allow_ptrace = false, quiet = false, network = true;
    // --jail auto|namespaces|landlock (jail/landlock_jail.hpp); empty: sandbox.jail, else auto.
    std::string jail;
    // Transparent proxying (--no-transparent turns it off): every TCP connection goes through the proxy,
    // names through the DNS stub.
    bool transparent = true;
    std::optional<std::uint64_t> memory, pids;
    std::optional<double> timeout;
    std::optional<std::pair<uid_t, gid_t>> user;
    std::optional<int> control_fd;  // --control-fd: served by the proxy (proxy::Proxy::serve_control_fd)
    proxy::Options proxy;
    std::vector<SecretFlag> secrets;  // --secret NAME=HOST[,HOST...]
    // Loads the policy for the working directory `cwd` (called while the jail sets up), reporting errors and
    // warnings on stderr itself; nullptr when it could not.
    std::function<policy::PolicyPtr(const std::filesystem::path& cwd)> load_policy;
    // --watch: called once the proxy runs, with the policy the jail was made from; what it returns (the
    // watch) lives until the command ends. Throws std::runtime_error when it cannot watch (exit 125).
    std::function<std::shared_ptr<void>(uv_loop_s* loop, proxy::Proxy& proxy, policy::PolicyPtr policy)>
        watch;
    // `cordon session start` (run/session.hpp): the jail starts no command and serves the commands that
    // join it until the session is stopped; the namespace jail only.
    std::shared_ptr<SessionHost> session;
};

// Runs the command jailed. When the command has run, exits the process with its status (the command's, 128+N
// when killed by signal N, 124 after the timeout) once everything with an effect outside the process is done,
// without running destructors that only free memory. Returns only when the jail could not be set up: the
// exit status (125, or 2 when the policy did not load).
int run(const Options& options);

}  // namespace cordon::run
