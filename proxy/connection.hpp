// One client connection, from accept to close. Each request takes one path:
//
//   front-end (front_end.hpp: Socks5FrontEnd | HttpFrontEnd, picked by the first byte; TransparentFrontEnd
//   for connections from a jail's transparent listener) reads a request:
//     a target -> decide (policy, on the name, before DNS) -> resolve -> guard (DecisionPoint, decision.hpp)
//              -> dial (exactly the guarded addresses)
//     or its own refusal (malformed, unauthenticated, unsupported)
//   -> conclude(verdict): the request's one decision line (audit log, metrics, refusal summary), then
//      FrontEnd::answer() in its protocol (403 / 0x02, 502 / 0x04, 400 / 407 / 501, 200 / 0x00)
//   -> relay: the splice tunnel (CONNECT, SOCKS5), the termination stage for an inspected host (inspect.hpp),
//      or the front-end's HTTP exchange, then the next request
//   -> close: the connection's close line.
//
// connection.cpp holds the pipeline (decide, on_outcome, on_dialed, conclude), the tunnel, timers and close.
// A front-end never decides, dials or writes the audit log.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "proxy/audit_log.hpp"
#include "proxy/control_channel.hpp"
#include "proxy/decision.hpp"
#include "proxy/dialer.hpp"
#include "proxy/front_end.hpp"
#include "proxy/inspect.hpp"
#include "proxy/parent_proxy.hpp"
#include "proxy/relay.hpp"
#include "proxy/socket.hpp"

struct uv_timer_s;

namespace cordon::proxy {

struct Context;

class Connection final : public SocketOwner {
  public:
    // Takes ownership of the accepted `fd`. `over_limit`: answer the first request with 503 / SOCKS 0x01.
    // `transparent`: accepted on the jail's transparent listener (TransparentFrontEnd, no first byte needed).
    Connection(Context& context, int fd, bool over_limit, bool transparent = false);
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
    // The front-ends read requests into the pipeline and answer its verdicts (front_end.hpp).
    friend class HttpFrontEnd;
    friend class Socks5FrontEnd;
    friend class TransparentFrontEnd;
    friend class InspectedTunnel;  // the termination stage (inspect.hpp), a relay step

    // Where the connection is in the pipeline. What a front-end has read so far is its own state.
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

    // The request being decided (one per HTTP request, one per tunnel).
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
    };

    static constexpr std::size_t kScratchSize = 64 * 1024;
    static constexpr std::size_t kMaxBuffered = 256 * 1024;  // client bytes held while not processing them
    static constexpr std::uint64_t kLingerMs = 1000;  // after a final answer, wait this long for the close
    static char* scratch_buffer();

    void read_client();
    void process_client_input();
    // The pipeline, in order (connection.cpp): a front-end found a request -> decide (policy on the name) ->
    // resolve -> guard (DecisionPoint) -> dial -> conclude (the decision line, the answer) -> relay.
    void decide(const std::string& host, std::uint16_t port);
    void on_outcome(Outcome outcome);
    // --ask: a host in neither list is asked about on the control channel; the request stays in Deciding
    // (a pending decision, ask_) until the answer or the ask timeout.
    bool ask(const Outcome& outcome);
    void on_answer(AskAnswer answer);
    void on_dialed(DialResult result);
    void conclude(Verdict verdict);
    // Every decision line of this connection goes out here: its requests' (conclude) and those inside an
    // inspected tunnel (InspectedTunnel): counted in the metrics, written to the audit log, and a refusal
    // told to the control channel.
    void record_decision(const DecisionEvent& event);
    void start_tunnel();
    // Adds this request to the end-of-run summary (RefusalSummary): why it did not go through.
    void count_refusal(const Verdict& verdict);
    const char* proto_name() const;
    static void on_timer(uv_timer_s* timer);
    void touch();
    void finish_after_flush();
    // The phase moves only here (a front-end asks): an HTTP request forwarded or answered, its response on
    // the way (Exchange); a final answer being flushed before the close (Closing); a kept-alive connection's
    // next request, with the last one's target and decision forgotten (Reading).
    Phase phase() const { return phase_; }
    void begin_exchange() { phase_ = Phase::Exchange; }
    void begin_closing() { phase_ = Phase::Closing; }
    void read_next_request();

    Context& context_;
    std::uint64_t id_;
    bool over_limit_;
    bool transparent_;
    std::chrono::steady_clock::time_point started_;
    std::unique_ptr<Socket> client_;
    std::unique_ptr<Socket> upstream_;
    std::unique_ptr<Dialer> dialer_;
    std::unique_ptr<ParentHandshake> parent_handshake_;
    std::unique_ptr<Relay> relay_;
    std::unique_ptr<InspectedTunnel> inspected_;  // kept until the connection is freed (it may close us)
    DecisionPoint decision_;
    std::shared_ptr<void> ask_;  // an open question on the control channel (dropping it withdraws it)
    Phase phase_ = Phase::Reading;
    Proto proto_ = Proto::Unknown;
    std::unique_ptr<FrontEnd> front_;  // picked by the first byte; lives as long as the connection
    std::string in_;                   // client bytes read but not yet consumed
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
};

}  // namespace cordon::proxy
