// The pipeline as a front-end sees it: the one way a front-end (HTTP, SOCKS5, transparent) or the termination
// stage (inspect.hpp, inspected_requests.hpp) reaches its connection. Connection implements it; nothing else
// of Connection is open to them, so the order of the pipeline stays in connection.cpp and a front-end or the
// requests inside an inspected tunnel can be tested against a fake pipeline without sockets
// (tests/proxy/http_frontend_test.cpp, tests/proxy/inspected_requests_test.cpp).
//
//   front-end -> Pipeline::decide(host, port)     -> (policy, DNS, guard, dial) -> FrontEnd::answer(verdict)
//   front-end -> Pipeline::conclude(verdict)      its own refusal: the decision line, then FrontEnd::answer
//   inspected request -> Pipeline::conclude(exchange): its decision line, however it ended
//   front-end -> begin_exchange / read_next_request / begin_closing / finish_after_flush / start_tunnel
//   pipeline  -> FrontEnd (front_end.hpp): read, answer, on_upstream_readable, on_drained, timeouts, ...
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "policy/policy.hpp"
#include "proxy/front_end.hpp"
#include "proxy/request_rules.hpp"

namespace cordon::proxy {

struct Context;
class Socket;

class Pipeline {
  public:
    // Where the connection is in the pipeline. Only the pipeline moves it; a front-end asks (below).
    enum class Phase {
        Reading,    // a front-end reads a request: the first byte, a SOCKS5 handshake, an HTTP head
        Deciding,   // policy / DNS / guard
        Dialing,    // connecting upstream
        Answering,  // the request is concluded; its answer is being sent (inside conclude())
        Exchange,   // HTTP: one request forwarded, its response on the way
        Tunnel,     // CONNECT / SOCKS5 relay
        Closing,    // flushing a final answer to the client
        Closed,
    };
    enum class Proto { Unknown, Http, Connect, Socks5, Transparent };

    // The request being decided (one per HTTP request, one per tunnel): what its decision line says.
    struct Request {
        std::string host;
        std::uint16_t port = 0;
        std::string method, path;
        std::string upstream_ip;
        std::string guard_class;        // refused by the address guard: why (upstream_ip is the address)
        std::string original_dst, sni;  // transparent: where the client connected, its TLS server name
        bool sni_mismatch = false;
        std::string sni_error;     // transparent TLS without `sni`: why (incomplete, too large, none in it)
        bool via_parent = false;   // dialled the parent proxy: CONNECT through it before concluding
        std::string rule, source;  // a request rule decided (not the domain rule): its text and source
        bool by_request_rule = false;  // a plain `http://` request its host's request rules refused
        std::string reason_text;       // ... and the host's deniedDomainReasons text (RequestRuling)
    };

    static constexpr std::size_t kMaxBuffered = 256 * 1024;  // client bytes held while not processing them

    virtual ~Pipeline() = default;

    // ---- what the connection is
    virtual Context& context() = 0;  // what every connection shares: options, policy, budgets, the loop
    virtual std::uint64_t id() const = 0;
    virtual Phase phase() const = 0;
    virtual bool closed() const = 0;
    virtual Proto proto() const = 0;
    virtual void set_proto(Proto proto) = 0;  // an HTTP head says CONNECT or an absolute-form request
    virtual bool over_limit() const = 0;      // accepted over --max-connections
    virtual Request& request() = 0;
    // The policy's decision on the current target (empty before decide()); forget_decision() starts a new
    // request so that nothing of the last one shows in the next one's line.
    virtual const policy::Decision& decision() const = 0;
    virtual void forget_decision() = 0;

    // ---- the client's bytes
    virtual std::string& input() = 0;  // read but not yet consumed
    virtual bool client_eof() const = 0;
    virtual bool send_to_client(std::string_view data) = 0;  // false: the client failed (client_error())
    virtual std::size_t client_queued() const = 0;
    virtual void want_client_read(bool on) = 0;
    // While corked, what is sent to the client is only queued; uncork writes it in one go.
    virtual void cork_client() = 0;
    virtual void uncork_client() = 0;
    virtual int client_error() const = 0;
    virtual int client_fd() const = 0;  // for socket options and SO_ORIGINAL_DST

    // ---- the upstream connection (a kept-alive one between HTTP requests)
    virtual bool has_upstream() const = 0;
    virtual bool send_to_upstream(std::string_view data) = 0;  // false: failed (upstream_error())
    virtual std::size_t upstream_queued() const = 0;
    virtual void want_upstream_read(bool on) = 0;
    // Reads into `buf`: >0 bytes, 0 at EOF, -1 would block, -2 on error (upstream_error()).
    virtual long read_upstream(char* buf, std::size_t size) = 0;
    virtual int upstream_error() const = 0;
    virtual int upstream_fd() const = 0;
    virtual void drop_upstream() = 0;
    // A buffer for one read at a time, shared by the loop's connections.
    virtual char* scratch() = 0;
    virtual std::size_t scratch_size() const = 0;

    // ---- accounting: the close line's bytes and error, the idle and head clocks
    virtual void count_up(std::uint64_t bytes) = 0;
    virtual void count_down(std::uint64_t bytes) = 0;
    virtual void set_error(const std::string& error) = 0;
    virtual void touch() = 0;
    virtual void head_begun() = 0;  // a request head's first byte: --header-timeout runs (if not already)
    virtual void head_ended() = 0;  // the head is complete, or the connection waits for none

    // ---- the pipeline's steps, in order
    virtual void decide(const std::string& host, std::uint16_t port) = 0;
    // One HTTP request to the current target (request().host, port): its host's request rules, decided by the
    // same decider (decision.hpp). `target`: the path as sent; `url` names the request in a refusal.
    virtual RequestRuling decide_request(std::string_view method, std::string_view target,
                                         std::string_view url) = 0;
    // The request's one decision line, then FrontEnd::answer(verdict).
    virtual void conclude(Verdict verdict) = 0;
    // A request inside an inspected tunnel as it ended (inspected_requests.hpp): its one decision line,
    // written by the same conclude as every other (the connection adds its host, port and address).
    struct Exchange {
        bool plain = false;  // plain HTTP to a host with request rules (`proto` http), else https
        std::string method, path, url, rule, source;
        bool allowed = false;
        std::string reason, error;
        std::string reason_text;  // refused: the deniedDomainReasons text that explains it, when one does
        int status = 0;           // what the client got: the upstream's status or the proxy's own answer
        std::uint64_t request_bytes = 0, response_bytes = 0;
    };
    virtual void conclude(const Exchange& exchange) = 0;
    // Adds the current target to the end-of-run summary with why it did not go through.
    virtual void count_refusal(const Verdict& verdict) = 0;
    virtual void begin_exchange() = 0;      // an HTTP request forwarded or answered: its response on the way
    virtual void read_next_request() = 0;   // keep-alive: the next request, the last one's target forgotten
    virtual void begin_closing() = 0;       // a final answer is being sent
    virtual void finish_after_flush() = 0;  // send what is queued, then close (lingering)
    virtual void start_tunnel() = 0;        // the client now belongs to a tunnel (splice or termination)
    virtual void close(const std::string& error) = 0;

    // ---- the termination stage (inspect.hpp), a relay step, takes both sockets and hands them back
    virtual Socket& client_socket() = 0;
    virtual Socket& upstream_socket() = 0;
    virtual void take_back_sockets() = 0;
};

}  // namespace cordon::proxy
