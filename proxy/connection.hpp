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
// A front-end never decides, dials or writes the audit log, and reaches the connection only through the
// Pipeline interface (pipeline.hpp).
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
#include "proxy/pipeline.hpp"
#include "proxy/relay.hpp"
#include "proxy/socket.hpp"

struct uv_timer_s;

namespace cordon::proxy {

struct Context;

class Connection final : public SocketOwner, public Pipeline {
  public:
    // Takes ownership of the accepted `fd`. `over_limit`: answer the first request with 503 / SOCKS 0x01.
    // `transparent`: accepted on the jail's transparent listener (TransparentFrontEnd, no first byte needed).
    Connection(Context& context, int fd, bool over_limit, bool transparent = false);
    ~Connection() override;

    void start();
    // During shutdown: a keep-alive connection waiting for its next request closes now.
    void close_if_idle();

    void on_readable(Socket& socket) override;
    void on_writable(Socket& socket) override;
    void on_drained(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

    // ---- Pipeline (pipeline.hpp): all the front-ends and the termination stage see of a connection
    Context& context() override { return context_; }
    std::uint64_t id() const override { return id_; }
    Phase phase() const override { return phase_; }
    bool closed() const override { return phase_ == Phase::Closed; }
    Proto proto() const override { return proto_; }
    void set_proto(Proto proto) override { proto_ = proto; }
    bool over_limit() const override { return over_limit_; }
    Request& request() override { return request_; }
    const policy::Decision& decision() const override { return decision_.last(); }
    void forget_decision() override { decision_.forget(); }

    std::string& input() override { return in_; }
    bool client_eof() const override { return client_eof_; }
    bool send_to_client(std::string_view data) override { return client_->send(data); }
    std::size_t client_queued() const override { return client_->queued(); }
    void want_client_read(bool on) override { client_->want_read(on); }
    void cork_client() override { client_->cork(); }
    void uncork_client() override { client_->uncork(); }
    int client_error() const override { return client_->error(); }
    int client_fd() const override { return client_->fd(); }

    bool has_upstream() const override { return upstream_ != nullptr; }
    bool send_to_upstream(std::string_view data) override { return upstream_->send(data); }
    std::size_t upstream_queued() const override { return upstream_->queued(); }
    void want_upstream_read(bool on) override { upstream_->want_read(on); }
    long read_upstream(char* buf, std::size_t size) override { return upstream_->read(buf, size); }
    int upstream_error() const override { return upstream_->error(); }
    int upstream_fd() const override { return upstream_->fd(); }
    void drop_upstream() override { upstream_.reset(); }
    char* scratch() override { return scratch_buffer(); }
    std::size_t scratch_size() const override { return kScratchSize; }

    void count_up(std::uint64_t bytes) override { bytes_up_ += bytes; }
    void count_down(std::uint64_t bytes) override { bytes_down_ += bytes; }
    void set_error(const std::string& error) override { error_ = error; }
    void touch() override;
    void head_begun() override;
    void head_ended() override { head_started_ = 0; }

    // The pipeline, in order (connection.cpp): a front-end found a request -> decide (policy on the name) ->
    // resolve -> guard (DecisionPoint) -> dial -> conclude (the decision line, the answer) -> relay.
    void decide(const std::string& host, std::uint16_t port) override;
    RequestRuling decide_request(std::string_view method, std::string_view target,
                                 std::string_view url) override {
        return decision_.decide_request(request_.host, request_.port, method, target, url);
    }
    // Every decision line of this connection is written by conclude: its requests' (then the front-end's
    // answer) and those inside an inspected tunnel (inspected_requests.hpp), through the one writer
    // (decision_log.hpp): counted in the metrics, written to the audit log, a refusal told to the control
    // channel.
    void conclude(Verdict verdict) override;
    void conclude(const Exchange& exchange) override;
    // Adds this request to the end-of-run summary (RefusalSummary): why it did not go through.
    void count_refusal(const Verdict& verdict) override;
    // The phase moves only here (a front-end asks): an HTTP request forwarded or answered, its response on
    // the way (Exchange); a final answer being flushed before the close (Closing); a kept-alive connection's
    // next request, with the last one's target and decision forgotten (Reading).
    void begin_exchange() override { phase_ = Phase::Exchange; }
    void read_next_request() override;
    void begin_closing() override { phase_ = Phase::Closing; }
    void finish_after_flush() override;
    void start_tunnel() override;
    // Closes both sides (idempotent), writes the close line and retires the connection.
    void close(const std::string& error) override;

    Socket& client_socket() override { return *client_; }
    Socket& upstream_socket() override { return *upstream_; }
    void take_back_sockets() override;

  private:
    static constexpr std::size_t kScratchSize = 64 * 1024;
    static constexpr std::uint64_t kLingerMs = 1000;  // after a final answer, wait this long for the close
    static char* scratch_buffer();

    void read_client();
    void process_client_input();
    void on_outcome(Outcome outcome);
    // --ask: a host in neither list is asked about on the control channel; the request stays in Deciding
    // (a pending decision, ask_) until the answer or the ask timeout.
    bool ask(const Outcome& outcome);
    void on_answer(AskAnswer answer);
    void on_dialed(DialResult result);
    const char* proto_name() const;
    static void on_timer(uv_timer_s* timer);

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
