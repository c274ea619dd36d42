// Reloading a running proxy's policy, on SIGHUP and with --watch (`cordon proxy`, `cordon run`): every source
// is read again; an invalid policy is refused and reported, and the old one stays.
#pragma once

#include <memory>
#include <string>

#include "policy/policy.hpp"
#include "proxy/policy_watch.hpp"
#include "proxy/proxy.hpp"

struct uv_loop_s;

namespace cordon::cli {

class PolicyReloader {
  public:
    // `who` starts every message ("cordon proxy", "cordon"). With `jail` (cordon run), only the network part
    // of a new policy applies, and a new policy read from where the jailed command could write (as `current`,
    // the policy the jail was built from, says) is refused.
    PolicyReloader(std::string who, policy::LoadOptions load, proxy::Proxy* proxy, policy::PolicyPtr current,
                   bool jail);

    // SIGHUP: reload, and say so, even when nothing changed.
    void reload_now(const char* why);
    // --watch: watch every source's directory; a change reloads, a policy that says what the current one says
    // changes nothing, and the same error is not reported twice in a row. Throws std::runtime_error when
    // inotify cannot be set up.
    void watch(uv_loop_s* loop);
    // For `cordon run --watch` at start: an error when a source lies where the jailed command could write.
    std::optional<std::string> writable_source() const;

  private:
    void reload(const char* why, bool quiet_when_unchanged);

    std::string who_;
    policy::LoadOptions load_;
    proxy::Proxy* proxy_;  // null: only writable_source() is used
    policy::PolicyPtr current_;
    policy::PolicyPtr jail_policy_;  // cordon run: the policy the jail's mounts were made from
    std::string last_error_;
    std::unique_ptr<proxy::PolicyWatch> watch_;
};

}  // namespace cordon::cli
