// cordon's egress proxy: HTTP (absolute-form and CONNECT) and SOCKS5 on one listener, every connection
// decided by the policy before DNS, resolved addresses checked by the address guard, every request written to
// the audit log. Runs on a libuv loop that the caller owns (the standalone `cordon proxy` and the jail
// supervisor).
//
// This header is the seam the jail uses; the internals (one concern per file: listener, socket, http_parser
// and http_frontend, socks5 and socks5_frontend, decision, resolver and dns_cache, address_guard, dialer,
// relay, audit_log, metrics, auth; for a jail: transparent_frontend with client_hello, dns_stub with
// dns_message and fake_addresses) stay behind it. Connections flow through connection.hpp top to bottom.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "policy/policy.hpp"
#include "proxy/audit_log.hpp"

struct uv_loop_s;

namespace cordon::certs {
class Authority;
}

namespace cordon::proxy {

class Resolver;  // proxy/resolver.hpp: names to addresses, asynchronously on the loop

struct Options {
    std::vector<std::string> dns_servers;  // --dns-server IP[:PORT]; empty = /etc/resolv.conf
    std::string audit_log;                 // --audit-log FILE, "-" = stdout, empty = none
    std::string sandbox_id;                // written as `sandbox` in each audit line
    std::string auth_token;                // --auth-token: require Basic credentials with this password
    std::chrono::milliseconds connect_timeout{10'000};
    std::chrono::milliseconds header_timeout{30'000};
    std::chrono::milliseconds idle_timeout{300'000};
    std::size_t max_connections = 10'000;
    // Transparent connections whose TLS ClientHello names another host than the one connected to are
    // refused (--strict-sni); otherwise the mismatch is only logged.
    bool strict_sni = false;

    // TLS termination (issue 13; inspect.hpp). `ca`: the CA leaves are minted from; null = no termination
    // (an inspected host is then tunnelled untouched, which Proxy::create refuses: see select_ca).
    std::shared_ptr<const certs::Authority> ca;
    std::string ca_dir;                    // --ca-dir DIR (select_ca)
    std::vector<std::string> upstream_ca;  // --upstream-ca FILE: more CAs to trust upstream
    std::string parent_proxy;              // --parent-proxy URL (overrides sandbox.network.parentProxy)
    bool parent_proxy_from_env = false;    // --parent-proxy-from-env: the host's HTTPS_PROXY / NO_PROXY
    // Secrets the jail sees as sentinels (credentials.envVars mask, --secret): the proxy puts the real value
    // into the credential headers (TlsInspector::carries_credentials) of requests to `inject_hosts` only,
    // refuses a request carrying a sentinel elsewhere, and turns the value back into the sentinel in the
    // responses of `inject_hosts`.
    struct Secret {
        std::string name, sentinel, value;
        std::vector<std::string> inject_hosts;
        std::vector<std::string> headers;  // credentials.envVars[].headers: more headers that carry it
    };
    std::vector<Secret> secrets;
    // --ask: a host in neither list is asked about on the control channel (when one is served and a peer is
    // connected, and the policy has no strictAllowlist); the connection waits up to ask_timeout for the
    // answer, then is refused as unknown.
    bool ask = false;
    std::chrono::milliseconds ask_timeout{30'000};
    // --report-only (or sandbox.network.reportOnly, see policy.hpp): a connection the policy refuses goes on
    // (resolved, guarded, dialled) and is logged `decision: "deny", enforced: false` and counted in
    // cordon_would_refuse_total. The address guard still refuses (enforced): report-only lifts the policy's
    // domain lists only, never the guard classes. Request rules inside inspected connections stay enforced.
    bool report_only = false;
    // Rebuilds the policy with a control channel's settings (JSON text, Claude Code's shape) as the Control
    // layer; a message when it does not load. Unset: the control channel refuses settings updates.
    std::function<std::variant<policy::PolicyPtr, std::string>(const std::string& control_settings)> reload;
};

// What the proxy refused (and what failed upstream) during its life, for the jail's end-of-run summary.
struct RefusalSummary {
    enum class Why {
        NotAllowed,    // no allow rule matches the host
        DeniedByRule,  // a deny rule matches (`rule`, `source`)
        AddressGuard,  // the name resolved to a refused address (`address`, `address_class`)
        Upstream,  // allowed, but the upstream failed (`error`: nxdomain, connect-refused, connect-timeout,
                   // ...)
        RequestRule,  // the host is allowed; its request rules refused a request (`rule`, `source`: the
                      // rule that did, empty when none matched the method and path)
    };
    struct Entry {
        Why why = Why::NotAllowed;  // the latest outcome for this host
        std::size_t count = 0;
        std::string rule, source, address, address_class, error;
        std::string reason_text;  // the policy author's deniedDomainReasons text, when one matches
    };
    std::map<std::string, Entry> hosts;  // "host:port" -> what happened to it
};

// The end-of-run summary: one section per kind of refusal, each with the advice that fits it (never
// "--allow-domain" for a host a deny rule refused). Empty when nothing was refused.
std::string format_refusals(const RefusalSummary& summary);

// The CA inspected connections are terminated with, when the policy inspects anything (else null): the
// directory given with --ca-dir, else srt's tlsTerminate.caCertPath/caKeyPath, else the default directory
// (`cordon ca init`); with none of them an ephemeral CA made for this process when `ephemeral` (cordon run),
// else an error saying how to make one.
std::variant<std::shared_ptr<const certs::Authority>, std::string> select_ca(const Options& options,
                                                                             const policy::Policy& policy,
                                                                             bool ephemeral);

// A port forward of `cordon run` (--host-port, --publish; proxy/forward.hpp): connections accepted on a
// listening socket are relayed, with no policy decision (the user named the port), to the first of `targets`
// that accepts, with the tunnels' relay (back-pressure, half-close, the idle timeout). Each is a decision
// line and a close line of `proto`.
struct Forward {
    std::string proto;                 // "host-port" | "publish"
    std::vector<std::string> targets;  // "127.0.0.1:5432", "[::1]:5432": tried in order while refused
    std::string rule, source;          // the audit lines' `rule` and `source`
    // Makes the unconnected TCP socket of a target's family elsewhere (the jail's network namespace) and
    // calls `done` with it (non-blocking), or with -errno; maybe later, on the loop. Unset: a socket of this
    // process's network namespace.
    std::function<void(int family, std::function<void(int fd)> done)> make_socket;
};

class Proxy {
  public:
    // Creates a proxy on `loop`. Throws std::runtime_error with a message when the audit log cannot be
    // opened.
    static std::unique_ptr<Proxy> create(uv_loop_s* loop, policy::PolicyPtr policy, Options options);
    // The same with the resolver given (tests: names resolved without a DNS server); `options.dns_servers`
    // is then unused.
    static std::unique_ptr<Proxy> create(uv_loop_s* loop, policy::PolicyPtr policy, Options options,
                                         std::unique_ptr<Resolver> resolver);

    // Listens on ADDR:PORT (`127.0.0.1:3128`, `[::1]:0`, `0.0.0.0:8080`). Returns the bound port. Throws
    // std::runtime_error with a message on failure.
    virtual std::uint16_t listen_tcp(const std::string& address) = 0;
    // Serves an already-listening TCP socket, e.g. one created inside a jail's network namespace and handed
    // over with SCM_RIGHTS. The proxy takes ownership of `fd`.
    virtual void listen_fd(int fd) = 0;
    // Serves a jail's transparent listener (connections redirected by its nftables rules; the target is their
    // original destination). Takes ownership of `fd`.
    virtual void listen_transparent_fd(int fd) = 0;
    // Serves a jail's DNS stub socket (UDP, or listening TCP) on 127.0.0.1:53. Takes ownership of `fd`.
    virtual void serve_dns_fd(int fd) = 0;

    // Serves `fd` (listening; the proxy takes it) as the port forward `forward`.
    virtual void serve_forward(int fd, Forward forward) = 0;

    // Swaps the policy: new requests use it, open tunnels continue.
    virtual void set_policy(policy::PolicyPtr policy) = 0;
    // Serves a control channel (JSON lines, proxy/control_channel.hpp) on `fd`, a socket or pipe the proxy
    // takes over (`cordon run --control-fd N`), or on a Unix socket listening at `path` (`cordon proxy
    // --control unix:PATH`; throws std::runtime_error when it cannot listen).
    virtual void serve_control_fd(int fd) = 0;
    virtual void listen_control(const std::string& path) = 0;
    // Stops accepting; calls `done` when every connection has closed or `grace` has passed (then closes the
    // rest), after the audit log is flushed.
    virtual void shutdown(std::chrono::milliseconds grace, std::function<void()> done) = 0;

    virtual RefusalSummary refusals() const = 0;
    // A write the jail refused (`cordon run`): an audit line `event: "write"` and a `refused` line to the
    // control channel's peers. On the loop's thread.
    virtual void record_write(const WriteEvent& event) = 0;

    // Serves Prometheus metrics on ADDR:PORT (`--metrics`). Returns the bound port; throws
    // std::runtime_error.
    virtual std::uint16_t serve_metrics(const std::string& address) = 0;
    // Serves only /healthz and /readyz on ADDR:PORT (`--health`; --metrics serves them too). Throws as above.
    virtual std::uint16_t serve_health(const std::string& address) = 0;
    // Counts a policy reload (SIGHUP) in the metrics; `ok` false for a reload that was refused.
    virtual void count_policy_reload(bool ok) = 0;
    // Connections open now: the proxy's own and the port forwards' (host-port and publish), as a session's
    // --linger and `cordon session list` count every connection the jail has.
    virtual std::size_t active_connections() const = 0;
    // Opens the audit log file again by its name (SIGHUP; logrotate without copytruncate). Returns an error
    // message when it cannot (the old file stays in use).
    virtual std::optional<std::string> reopen_audit_log() = 0;
    virtual ~Proxy() = default;
};

}  // namespace cordon::proxy
