// `cordon run`'s port forwards (--host-port, --publish; sandbox.network.hostPorts, publishPorts): which
// ones the policy names, what the jail is told (MountPlan::host_ports, jail_sockets), the host's listeners
// of published ports (made before the command starts: a port already taken stops the run), and serving it
// all through the proxy's forwards (proxy.hpp Forward), which write the audit lines.
//
// The namespace jail: a host port is a listener the init made in the jail's network namespace (127.0.0.1
// and ::1), relayed to the same port of the host's loopback; a published port is a host listener whose
// connections go out of a socket the init made (jail/ports.hpp), connected by the supervisor to the jail's
// loopback. The jail without namespaces shares the host's loopback: a host port is a redirect in its connect
// rule (jail/host_view.hpp) to a forward on the host's loopback, so that each connection is still relayed
// and audited; publishing means nothing there (the command's listeners are the host's already): a note.
#pragma once

#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "jail/host_view.hpp"
#include "jail/jail.hpp"
#include "jail/mount_plan.hpp"
#include "policy/policy.hpp"
#include "proxy/proxy.hpp"

struct uv_loop_s;

namespace cordon::run {

class Ports {
  public:
    // The forwards the policy names (flags are its Flags layer), for the jail chosen. An error (a published
    // port the host cannot listen on, too many host ports) stops the run (125); `notes` are printed.
    static std::variant<std::unique_ptr<Ports>, std::string> prepare(const policy::Policy& policy,
                                                                     bool without_namespaces,
                                                                     std::vector<std::string>& notes);
    ~Ports();
    Ports(const Ports&) = delete;
    Ports& operator=(const Ports&) = delete;

    bool empty() const;
    // The namespace jail: what its init must make.
    void add_to_plan(jail::MountPlan& plan) const;
    // The jail without namespaces: `base` with the host ports' redirects.
    std::shared_ptr<const jail::HostView> host_view(std::shared_ptr<const jail::HostView> base) const;
    // Serves every forward on `proxy`: the jail's host-port listeners and socket source taken from
    // `listeners` (the rest is returned), the published ports, the landlock forwards.
    std::vector<jail::Listener> serve(uv_loop_s* loop, proxy::Proxy& proxy,
                                      std::vector<jail::Listener> listeners);
    // Stops asking the jail for sockets (before the loop closes).
    void close();

    struct Impl;

  private:
    explicit Ports(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace cordon::run
