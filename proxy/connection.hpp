// One client connection, from accept to close. Each request takes one path:
//
//   front-end (SOCKS5 | HTTP, picked by the first byte) -- reads a request: a target, or a refusal of its own
//     -> decide (policy, on the name, before DNS) -> resolve -> guard (DecisionPoint, decision.hpp)
//     -> dial (exactly the guarded addresses)
//     -> conclude: the request's one decision line (audit log, metrics, refusal summary), then the answer in
//        the front-end's protocol (403 / 0x02, 502 / 0x04, 200 / 0x00, 400 / 407 / 501 ...)
//     -> relay (CONNECT and SOCKS5: the splice tunnel; HTTP: the request forwarded, the response streamed back,
//        then the next request of a keep-alive connection)
//   -> close: the connection's close line.
//
// connection.cpp holds the pipeline (decide, on_outcome, on_dialed, conclude), the tunnel, timers and close;
// http_frontend.cpp and socks5_frontend.cpp hold each protocol's reading and answers. A front-end never writes
// the audit log: it ends each request in decide() or in conclude() with a Rejected verdict.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/audit_log.hpp"
#include "proxy/decision.hpp"
#include "proxy/dialer.hpp"
#include "proxy/http_parser.hpp"
#include "proxy/relay.hpp"
#include "proxy/socket.hpp"

struct uv_timer_s;

namespace cordon::proxy {

struct Context;

class Connection final : public SocketOwner {
  public:
    // Takes ownership of the accepted `fd`. `over_limit`: answer the first request with 503 / SOCKS 0x01.
    Connection(Context& context, int fd, bool over_limit);
    ~Connection() override;

    void start();
    // Closes both sides (idempotent), writes the close line and retires the connection.
    void close(const std::string& error);
    bool closed() const { return phase_ == Phase::Closed; }
    // During shutdown: a keep-alive connection waiting for its next request closes now.
    void close_if_idle();

    void on_readable(Socket& socket) override;
    void on_writable(Socket& socket) override;
    void on_drained(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

  private:
    // Where the connection is in the pipeline. What a front-end has read so far is its own state (proto_,
    // socks_step_, request_parser_).
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
    enum class SocksStep { Greeting, Auth, Request };  // SOCKS5: method negotiation, RFC 1929, CONNECT
    enum class Proto { Unknown, Http, Connect, Socks5 };

    // The request being decided (one per HTTP request, one per tunnel).
    struct Request {
        std::string host;
        std::uint16_t port = 0;
        std::string method, path;
        std::string upstream_ip;
        std::string guard_class;  // refused by the address guard: why (upstream_ip is the address)
    };

    // How a request ends its way through the pipeline: conclude() writes it as the request's one decision
    // line and answers the client in the front-end's protocol.
    struct Verdict {
        enum class Kind {
            Connected,  // allowed, upstream connected (or a kept-alive one reused): relay
            Denied,     // the policy or the address guard refused the target
            Failed,     // allowed, but the name did not resolve or the upstream could not be reached
            Rejected,   // the front-end refused the request itself: malformed, unauthenticated, over a limit
            Aborted,    // allowed, but the connection ended before the dial finished
        };
        Kind kind;
        std::string reason;   // the audit log's `reason`
        std::string error;    // the audit log's `error`
        int status;           // the HTTP status or SOCKS5 reply the client gets; 0 = none / the upstream's
        std::string message;  // Failed / Rejected over HTTP: the answer's text
    };

    struct RequestSink final : HttpParser::Sink {
        Connection* c;
        void on_head(const HttpHead&) override {}
        void on_body(std::string_view data) override { c->http_request_body(data); }
    };
    struct ResponseSink final : HttpParser::Sink {
        Connection* c;
        void on_head(const HttpHead& head) override { c->http_response_head(head); }
        void on_body(std::string_view data) override { c->http_response_body(data); }
    };

    static constexpr std::size_t kScratchSize = 64 * 1024;
    static constexpr std::size_t kMaxBuffered = 256 * 1024;  // client bytes held while not processing them
    static constexpr std::uint64_t kLingerMs = 1000;  // after a final answer, wait this long for the close
    static char* scratch_buffer();

    // --- connection.cpp: shared steps
    void read_client();
    void process_client_input();
    // The pipeline, in order (connection.cpp): a front-end found a request -> decide (policy on the name) ->
    // resolve -> guard (DecisionPoint) -> dial -> conclude (the decision line, the answer) -> relay.
    void decide(const std::string& host, std::uint16_t port);
    void on_outcome(Outcome outcome);
    void on_dialed(DialResult result);
    void conclude(const Verdict& verdict);
    int deny_status() const;
    void start_tunnel();
    // Adds this request to the end-of-run summary (RefusalSummary): why it did not go through.
    void count_refusal(const Verdict& verdict);
    const char* proto_name() const;
    static void on_timer(uv_timer_s* timer);
    void touch();
    void finish_after_flush();

    // --- http_frontend.cpp
    void http_process();
    void http_head_complete();
    void http_bad_request(const std::string& why, int status = 400);
    // Charges this connection's half-read head (`size` bytes, 0 = none) to the proxy-wide budget; false when
    // over it (the request was answered 503).
    bool charge_head(std::size_t size);
    void http_send_error(int status, const std::string& reason, const std::string& x_proxy_error,
                         const std::string& body, bool keep_alive);
    void http_refuse(const Verdict& verdict);
    void http_reject(const Verdict& verdict);
    void http_upstream_failure(int status, const std::string& error, const std::string& detail);
    void http_connected();
    void http_request_body(std::string_view data);
    void http_request_complete();
    void http_read_upstream();
    void http_response_head(const HttpHead& head);
    void http_response_body(std::string_view data);
    void http_response_complete();
    void http_upstream_eof();
    void http_next_request();
    // While a request is decided: is its whole body already read (in in_)?
    bool request_body_buffered() const;
    void http_backpressure();

    // --- socks5_frontend.cpp
    void socks_process();
    void socks_reply(std::uint8_t code, bool then_close);
    void socks_refuse();
    void socks_reject(const Verdict& verdict);
    void socks_connected();

    Context& context_;
    std::uint64_t id_;
    bool over_limit_;
    std::chrono::steady_clock::time_point started_;
    std::unique_ptr<Socket> client_;
    std::unique_ptr<Socket> upstream_;
    std::string upstream_key_;  // "host:port" the kept-alive upstream connection goes to
    std::unique_ptr<Dialer> dialer_;
    std::unique_ptr<Relay> relay_;
    DecisionPoint decision_;
    Phase phase_ = Phase::Reading;
    SocksStep socks_step_ = SocksStep::Greeting;
    Proto proto_ = Proto::Unknown;
    std::string in_;  // client bytes read but not yet consumed
    bool client_eof_ = false;
    Request request_;
    std::string last_host_, last_upstream_ip_;  // the last request decided, for the close line
    std::uint16_t last_port_ = 0;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;
    std::string error_;
    uv_timer_s* timer_;
    std::uint64_t last_activity_ = 0;  // uv_now()
    std::uint64_t head_started_ = 0;   // uv_now() when the first byte of a request head arrived, 0 if none
    std::uint64_t closing_since_ = 0;  // uv_now() when the final answer was queued (Phase::Closing)
    std::size_t head_charge_ = 0;      // bytes charged to Context::head_bytes

    // HTTP state for the current exchange.
    std::unique_ptr<HttpParser> request_parser_, response_parser_;
    RequestSink request_sink_;
    ResponseSink response_sink_;
    HttpHead request_head_;
    bool request_done_ = false, response_done_ = false, response_started_ = false;
    bool chunk_request_ = false;   // re-frame the request body as chunks
    bool chunk_response_ = false;  // re-frame the response body as chunks
    bool close_after_response_ = false;
    bool upstream_reusable_ = false;
    bool processing_ = false;  // inside http_process()
};

}  // namespace cordon::proxy
