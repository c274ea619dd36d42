// `cordon run`'s part of TLS termination and credentials (issue 13): the CA (an ephemeral one when none is
// configured), the trust bundle the jail sees (system CAs + cordon's, in a run-private directory outside
// the user's, bound read-only over the system bundle, or at its own path where there is none, and named by
// the trust variables), and the secrets (credentials.envVars, --secret): removed from the jail, or replaced
// by sentinels the proxy swaps back.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "jail/mount_plan.hpp"
#include "policy/policy.hpp"
#include "proxy/proxy.hpp"

namespace cordon::run {

// `--secret NAME=HOST[,HOST...]`: mask NAME, inject it towards HOSTs.
struct SecretFlag {
    std::string name;
    std::vector<std::string> hosts;
};

// Owns the run-private directory; removes it (and the bundle) when destroyed.
class RunInspection {
  public:
    RunInspection() = default;
    ~RunInspection();
    RunInspection(const RunInspection&) = delete;
    RunInspection& operator=(const RunInspection&) = delete;

    // Fills `proxy` (ca, secrets) and `plan` (the bundle's mount, env changes). An error message (set-up
    // failure: exit 125) or nullopt. Notes for the user go to `notes`.
    std::optional<std::string> prepare(const policy::Policy& policy, const std::vector<SecretFlag>& flags,
                                       bool network, proxy::Options& proxy, jail::MountPlan& plan,
                                       std::vector<std::string>& notes);
    void remove();

  private:
    std::filesystem::path dir_;
};

// A random sentinel of the same shape as `value`: the same length, digits for digits, letters for letters
// (same case), other characters and a short prefix before the first `_` or `-` (`ghp_`, `sk-`) kept.
std::string make_sentinel(const std::string& value);

}  // namespace cordon::run
