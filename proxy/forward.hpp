// Port forwards (proxy.hpp's Forward): `cordon run --host-port` (a listener made in the jail's network
// namespace, connections to the host's loopback port) and `--publish` (a listener on the host, connections
// made from a socket of the jail's network namespace to its loopback). No front-end and no decision: the
// user named the port. Accept -> socket (here or from make_socket) -> connect, the next target while refused
// -> decision line -> the tunnels' Relay -> close line.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "proxy/context.hpp"
#include "proxy/listener.hpp"

struct uv_check_s;

namespace cordon::proxy {

class ForwardConnection;

class Forwarder {
  public:
    Forwarder(Context& context, int listening_fd, Forward forward);
    // Closes the listener and every connection (each writes its close line, error "shutdown").
    ~Forwarder();
    Forwarder(const Forwarder&) = delete;
    Forwarder& operator=(const Forwarder&) = delete;

    const Forward& forward() const { return forward_; }
    Context& context() { return context_; }
    void retire(ForwardConnection* connection);

  private:
    Context& context_;
    Forward forward_;
    std::unique_ptr<Listener> listener_;
    std::unordered_map<ForwardConnection*, std::unique_ptr<ForwardConnection>> connections_;
    std::vector<std::unique_ptr<ForwardConnection>> graveyard_;
    uv_check_s* reaper_;
};

}  // namespace cordon::proxy
