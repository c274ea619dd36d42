// The front-ends' interface. A front-end speaks one client protocol (HTTP, SOCKS5, transparent; later
// TLS-terminated): it reads the client's bytes into requests and answers each request's verdict. It never
// decides, resolves, dials or writes the audit log; the pipeline in Connection does (connection.hpp):
//
//   front-end: bytes -> a target        -> Connection::decide(host, port) -> resolve -> guard -> dial
//              bytes -> its own refusal -> Connection::conclude(Rejected verdict)
//   pipeline:  conclude(verdict): the decision line, then FrontEnd::answer(verdict) -> relay
#pragma once

#include <string>

namespace cordon::proxy {

// How a request ends its way through the pipeline: Connection::conclude() writes it as the request's one
// decision line, then the front-end answers it.
struct Verdict {
    enum class Kind {
        Connected,  // allowed, upstream connected (or a kept-alive one reused): relay
        Denied,     // the policy or the address guard refused the target
        Failed,     // allowed, but the name did not resolve or the upstream could not be reached
        Rejected,   // refused before any decision: malformed, unauthenticated, unsupported, over a limit
        Aborted,    // allowed, but the connection ended before the dial finished: nothing to answer
    };
    static constexpr int kAskFrontEnd = -1;  // `status`: the front-end says which (FrontEnd::status_for)

    Kind kind;
    std::string reason;   // the audit log's `reason`
    std::string error;    // the audit log's `error`
    int status;           // the HTTP status or SOCKS5 reply the client gets; 0 = none / the upstream's answer
    std::string message;  // the answer's text, for a protocol that has room for one (HTTP)
    int sys_error = 0;    // Failed: errno of the failed connect, 0 for a DNS failure
};

class FrontEnd {
  public:
    virtual ~FrontEnd() = default;

    // New client bytes are in the connection's buffer: read requests from them.
    virtual void read() = 0;
    // The code this protocol answers `verdict` with (for verdicts the pipeline reached on its own).
    virtual int status_for(const Verdict& verdict) const = 0;
    // Answers the current request's verdict (then relays, waits for the next request, or closes).
    virtual void answer(const Verdict& verdict) = 0;

    // While the current request still needs the client's bytes (a partial head, an unsent body): a client
    // that closes now abandons it.
    virtual bool needs_client() const = 0;

    // Events for a front-end that relays its own exchanges (HTTP forwarding; tunnels use Relay instead).
    // The defaults suit a front-end that hands its client to a tunnel.
    virtual void on_upstream_readable() {}
    virtual void on_drained() {}
    virtual bool on_upstream_error(int /*error*/) { return false; }  // true: handled
    virtual bool on_header_timeout() { return false; }               // true: handled (answered)
    virtual bool on_idle_timeout() { return false; }                 // true: handled (answered)
    // An allowed request to `target` ("host:port"): true to reuse the upstream connection the front-end kept
    // (already guarded when dialled), false to dial one.
    virtual bool reuse_upstream(std::string /*target*/) { return false; }
    virtual void on_tunnel() {}  // the client now belongs to a tunnel
};

}  // namespace cordon::proxy
