// The grammar of `cordon run`'s port forwards, shared by the flags and the settings loader: a host port
// (`--host-port PORT`, `sandbox.network.hostPorts`) and a published port (`--publish
// [ADDR:]PORT[:JAIL_PORT]`, `sandbox.network.publishPorts`). Pure: no sockets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>

namespace cordon::policy {

// The ports cordon's jail itself listens on inside its network namespace (the proxy 3128 and 1080, the
// transparent listener 3129, the DNS stub 53): a host port or a published port's jail side cannot be one of
// them (a host port would shadow the proxy; a published one would open the jail's proxy to the host).
bool is_jail_own_port(std::uint16_t port);

// A host port: 1..65535, not one of the jail's own.
std::variant<std::uint16_t, std::string> parse_host_port(std::string_view text);

struct PublishedPort {
    std::string address;     // the host's listen address, canonical, without brackets: "127.0.0.1" by default
    std::uint16_t port = 0;  // on the host
    std::uint16_t jail_port = 0;      // on the jail's loopback
    bool loopback() const;            // 127.0.0.0/8 or ::1
    std::string listen_text() const;  // "127.0.0.1:8080", "[::1]:8080"
};

// `PORT`, `PORT:JAIL_PORT`, `ADDR:PORT`, `ADDR:PORT:JAIL_PORT`; ADDR an IPv4 dotted quad or an IPv6 literal
// in brackets (`[::1]:8080`). Two numbers are PORT:JAIL_PORT (Docker's `-p` order); ADDR is never a name.
std::variant<PublishedPort, std::string> parse_published_port(std::string_view text);

}  // namespace cordon::policy
