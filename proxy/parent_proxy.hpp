// The parent proxy (sandbox.network.parentProxy, --parent-proxy, --parent-proxy-from-env): allowed
// connections are chained through a corporate HTTP proxy with CONNECT, after cordon's own decision. The
// target's name is passed on unresolved (the parent resolves it; cordon's address guard then sees only the
// parent's address, which is trusted as configured). Basic credentials come from the URL's user info.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "proxy/socket.hpp"

namespace cordon::proxy {

struct ParentProxy {
    std::string host;  // name or IP literal (no brackets)
    std::uint16_t port = 0;
    std::string authorization;          // "Basic ..." or empty
    std::vector<std::string> no_proxy;  // normalised names; ".x" / "*.x" = x and below; "*" = every host
    // Parses `http://[user:pass@]host[:port][/]` (port 3128 by default) and a NO_PROXY list.
    static std::variant<ParentProxy, std::string> parse(std::string_view url, std::string_view no_proxy);
    // True when `host` goes through the parent (not covered by no_proxy).
    bool applies(std::string_view target) const;
};

// The CONNECT request to the parent on a connected socket, and its answer. Calls `done` once: an empty
// string when the parent answered 2xx (the socket is then a tunnel to the target), else why not.
class ParentHandshake final : public SocketOwner {
  public:
    using Done = std::function<void(std::string error)>;
    ParentHandshake(Socket& socket, const ParentProxy& parent, const std::string& host, std::uint16_t port,
                    Done done);
    void on_readable(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

  private:
    Socket& socket_;
    Done done_;
    std::string answer_;
};

}  // namespace cordon::proxy
