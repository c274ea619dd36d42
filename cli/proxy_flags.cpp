#include "cli/proxy_flags.hpp"

#include <cmath>
#include <cstdlib>

#include "proxy/resolver.hpp"

namespace cordon::cli {

std::chrono::milliseconds parse_seconds(const std::string& flag, const std::string& value) {
    char* end = nullptr;
    double seconds = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size() || !std::isfinite(seconds) || seconds <= 0 ||
        seconds > 86400 * 7)
        throw UsageError(flag + " needs a number of seconds > 0, got '" + value + "'");
    // Rounded to the nearest millisecond (seconds > 0). Not std::llround: it is the one libm function the
    // binary would use, and libm.so would then be loaded on every start.
    return std::chrono::milliseconds(static_cast<long long>(seconds * 1000 + 0.5));
}

bool parse_proxy_flag(ArgCursor& args, proxy::Options& options) {
    if (args.flag("--dns-server")) {
        std::string value = args.value();
        if (proxy::dns_server_to_csv(value).empty())
            throw UsageError("--dns-server needs IP or IP:PORT ([v6]:PORT), got '" + value + "'");
        options.dns_servers.push_back(value);
    } else if (args.flag("--audit-log")) {
        options.audit_log = args.value();
        if (options.audit_log.empty()) throw UsageError("--audit-log needs a file name or -");
    } else if (args.flag("--connect-timeout")) {
        options.connect_timeout = parse_seconds("--connect-timeout", args.value());
    } else if (args.flag("--idle-timeout")) {
        options.idle_timeout = parse_seconds("--idle-timeout", args.value());
    } else if (args.flag("--header-timeout")) {
        options.header_timeout = parse_seconds("--header-timeout", args.value());
    } else if (args.flag("--ca-dir")) {
        options.ca_dir = args.value();
        if (options.ca_dir.empty()) throw UsageError("--ca-dir needs a directory");
    } else if (args.flag("--upstream-ca")) {
        options.upstream_ca.push_back(args.value());
        if (options.upstream_ca.back().empty()) throw UsageError("--upstream-ca needs a PEM file");
    } else if (args.flag("--parent-proxy")) {
        options.parent_proxy = args.value();
    } else if (args.flag("--parent-proxy-from-env")) {
        options.parent_proxy_from_env = true;
    } else if (args.flag("--max-connections")) {
        std::string value = args.value();
        char* end = nullptr;
        long long n = std::strtoll(value.c_str(), &end, 10);
        if (value.empty() || end != value.c_str() + value.size() || n < 1 || n > 10'000'000)
            throw UsageError("--max-connections needs a whole number >= 1, got '" + value + "'");
        options.max_connections = static_cast<std::size_t>(n);
    } else {
        return false;
    }
    return true;
}

const char* const kProxyFlagsHelp =
    "Upstream flags (cordon proxy and cordon run):\n"
    "  --dns-server IP[:PORT] resolve names with this DNS server (repeatable; default /etc/resolv.conf)\n"
    "  --audit-log FILE|-     write one JSON line per decision and per closed connection (- = stdout)\n"
    "  --connect-timeout S    give up connecting upstream after S seconds (default 10; then 504)\n"
    "  --idle-timeout S       close a connection idle for S seconds (default 300; 504 if awaiting a "
    "response)\n"
    "  --header-timeout S     close a client that takes S seconds to send a request head (default 30)\n"
    "  --max-connections N    concurrent connections; more get 503 / SOCKS5 0x01 (default 10000)\n"
    "  --ca-dir DIR           the CA for inspected hosts (default $XDG_CONFIG_HOME/cordon/ca; cordon ca)\n"
    "  --upstream-ca FILE     also trust the PEM CAs in FILE for inspected upstreams (repeatable)\n"
    "  --parent-proxy URL     chain allowed connections through this HTTP proxy "
    "(http://[user:pass@]host:port)\n"
    "  --parent-proxy-from-env  take the parent proxy from this host's HTTPS_PROXY / NO_PROXY\n";

}  // namespace cordon::cli
