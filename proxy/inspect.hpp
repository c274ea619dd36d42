// The termination stage: the relay step of the pipeline (connection.hpp) picks it instead of the splice
// tunnel when the policy inspects the tunnel's host (sandbox.network.inspect, --inspect, srt's tlsTerminate),
// whatever front-end made the tunnel (CONNECT, SOCKS5, transparent).
//
//   client's first bytes: not a TLS handshake -> relayed opaquely (splice), or closed with
//                         refuseOpaqueTunnels
//   TLS: upstream handshake first (verified: system store + --upstream-ca, hostname checked); a failure is
//        answered inside cordon's TLS: the client's first request gets a 502 naming the reason (one audit
//        line), and no byte of that upstream passes
//     -> a leaf for the host (certs::LeafCache), the client's handshake (ALPN http/1.1 only)
//     -> HTTP/1.1 requests read with HttpParser, each: Host = the tunnel's name (else 421), request rules
//        (403 blocked-by-request-rule, the connection stays usable), secrets (sentinels substituted in
//        headers for injectHosts, refused elsewhere: 403 blocked-by-secret-scope), forwarded; the response
//        relayed as it came; one audit line per request (method, full URL, status, bytes, the deciding rule).
//
// TLS runs on memory BIOs: every byte moves through the loop's non-blocking sockets, nothing blocks.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http_parser.hpp"
#include "proxy/proxy.hpp"
#include "proxy/secret_scrub.hpp"
#include "proxy/socket.hpp"

typedef struct ssl_st SSL;

namespace cordon::proxy {

class Pipeline;
struct RequestRuleText;

class InspectedTunnel final : public SocketOwner {
  public:
    explicit InspectedTunnel(Pipeline& pipeline);
    ~InspectedTunnel() override;
    // Takes over both sockets and the client bytes already read (Pipeline::input()).
    void start();
    bool declined() const { return declined_; }
    std::uint64_t bytes_up() const { return bytes_up_; }
    std::uint64_t bytes_down() const { return bytes_down_; }

    // The connection is closing with `error`: a request in flight gets its decision line now (the status the
    // client saw, else 502) with the error.
    void end_in_flight(const std::string& error);

    void on_readable(Socket& socket) override;
    void on_drained(Socket& socket) override;
    void on_error(Socket& socket, int error) override;

  private:
    enum class State { Peek, UpstreamHandshake, ClientHandshake, Open, Done };
    enum class Request { Head, Body, Hold, Skip, AwaitResponse };

    struct RequestSink final : HttpParser::Sink {
        InspectedTunnel* t;
        void on_head(const HttpHead&) override {}
        void on_body(std::string_view data) override { t->scan_body(data); }
    };
    struct ResponseSink final : HttpParser::Sink {
        InspectedTunnel* t;
        void on_head(const HttpHead& head) override { t->response_head(head); }
        void on_body(std::string_view data) override { t->response_body(data); }
    };

    void peek();
    void opaque();
    // Plain HTTP to a host with request rules: the requests are read and decided as inside TLS.
    void read_plain_http();
    void begin_upstream();
    void continue_upstream();
    void upstream_refused(const std::string& error);
    void answer_upstream_failure();
    void begin_client();
    void continue_client();
    void read_client_plaintext();
    void read_upstream_plaintext();
    // One read of the upstream's response bytes; false when the connection was closed.
    bool upstream_plaintext(std::string_view data);
    void process_requests();
    void request_head();
    // The body of the request in flight did not parse (`why`): the connection closes.
    void bad_body(const std::string& why);
    void request_bytes(std::string_view raw);
    void request_end();
    void release_hold();
    void scan_body(std::string_view data);
    // 403 blocked-by-secret-scope: `where` ("header NAME", "the request URL", ...) carries `secret`'s
    // sentinel.
    void refuse_secret(const std::string& where, const Options::Secret& secret);
    void refuse(int status, const std::string& x_proxy_error, const std::string& reason,
                const std::string& body, const std::string& rule, const std::string& source);
    void response_complete();
    // Responses of an inject host (scrub_ not empty): written from the parsed head and de-chunked body with
    // every real value turned back into its sentinel.
    void response_head(const HttpHead& head);
    void response_body(std::string_view data);
    void end_scrubbed_body();
    void write_scrubbed_body(std::string_view data);
    void write_scrubbed(std::string_view data);
    void log_request(const std::string& decision, const std::string& reason, int status,
                     const std::string& error);
    void next_request();
    bool flush();  // TLS output to both sockets; false when the connection was closed
    // The whole of `data` into the TLS stream, or the connection is finished (false).
    bool write_client(std::string_view data);
    bool write_upstream(std::string_view data);
    bool write_all(SSL* ssl, std::string_view data, const char* side);
    bool write_plain(Socket& socket, std::string_view data, const char* side);
    void update_interest();
    void finish(const std::string& error);

    Pipeline& p_;
    State state_ = State::Peek;
    bool declined_ = false;
    bool plain_ = false;         // HTTP without TLS (read_plain_http)
    SSL* up_ = nullptr;          // cordon as the client of the upstream
    SSL* down_ = nullptr;        // cordon as the server of the client
    std::string client_cipher_;  // the client's bytes before its handshake can start
    std::string
        upstream_error_;  // the upstream failed its handshake: why (every request gets a 502 saying so)
    std::string req_in_;  // client plaintext not yet parsed
    bool client_eof_ = false;
    std::uint64_t bytes_up_ = 0, bytes_down_ = 0;

    // The request in flight.
    RequestSink request_sink_;
    ResponseSink response_sink_;
    std::unique_ptr<HttpParser> request_parser_, response_parser_;
    Request request_ = Request::Head;
    std::string method_, path_, url_, rule_, source_;
    std::string head_out_,
        hold_;             // Hold: the head and raw body bytes kept until the body's prefix is scanned
    std::string scanned_;  // the body's first bytes (de-chunked), scanned for sentinels
    bool scan_done_ = false;
    bool keep_alive_ = true;
    bool logged_ = true;  // the request in flight has its decision line
    int response_status_ = 0;
    std::uint64_t request_bytes_ = 0, response_bytes_ = 0;

    // The secrets this host gets the real value of, and the response body's bytes held back to find a value
    // split across reads or chunks.
    std::vector<SecretForms> scrub_;
    std::size_t scrub_keep_ = 0;
    std::string scrub_carry_;
    bool scrub_body_ = false, scrub_chunked_ = false;
};

}  // namespace cordon::proxy
