// The jail's network as the programs inside see it: the ports where cordon's proxy listens inside the jail
// (127.0.0.1 and ::1) and the environment variables that point there. The one place that knows both.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cordon::run {

constexpr std::uint16_t kHttpProxyPort = 3128;   // HTTP proxy and SOCKS5 on one port
constexpr std::uint16_t kSocksProxyPort = 1080;  // SOCKS5 (ALL_PROXY)
// Where the jail's nftables rules redirect every other outbound TCP connection (127.0.0.1 and ::1).
constexpr std::uint16_t kTransparentPort = 3129;

// The ports the jail creates listeners on, for the proxy to serve.
std::vector<std::uint16_t> proxy_ports();

// The variables that point programs at the proxy, in order, NAME and value: at the jail's own ports, or at
// `http_port` and `socks_port` on 127.0.0.1 (the jail without namespaces listens where the kernel chose; on
// macOS the command shares the host's loopback).
std::vector<std::pair<std::string, std::string>> proxy_variables();
std::vector<std::pair<std::string, std::string>> proxy_variables(std::uint16_t http_port,
                                                                 std::uint16_t socks_port);

// The caller's environment `caller_env` (NULL-terminated) without any of proxy_variables() and
// SANDBOX_RUNTIME, then proxy_variables() (only with network) and SANDBOX_RUNTIME=1.
std::vector<std::string> jail_environment(char** caller_env, bool network);

// With TLS termination on: the variables that make curl, git, Python (requests, ssl) and Node trust
// `bundle` (the system's CAs plus cordon's), as the jail sees it.
std::vector<std::pair<std::string, std::string>> trust_variables(const std::string& bundle);

// For `cordon run --help`: what the variables are set to.
std::string environment_help();

}  // namespace cordon::run
