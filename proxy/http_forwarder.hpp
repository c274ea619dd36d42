// The one HTTP/1.1 forwarder: one request's head rewritten and sent upstream, its body framed, the response
// relayed back. Both HTTP paths use it: plain `http://` requests (http_frontend.hpp) and the requests inside
// an inspected tunnel (inspected_requests.hpp). It writes to two byte sinks, so the same code serves a plain
// socket and a TLS stream; it decides nothing, logs nothing and never closes anything: its owner does.
//
//   send_head(request head, how)  -> upstream: request line, end-to-end headers, framing written by the proxy
//   body(data) ... end_body()     -> upstream: the parsed body, chunked again when it came chunked
//   relay(upstream bytes)         -> client: the response as sent (AsSent; a head passes once it parsed), or
//                                    written again from its parsed head and body (Rewrite), with every real
//                                    secret value turned back into its sentinel when scrubbing
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/http_parser.hpp"
#include "proxy/secret_scrub.hpp"

namespace cordon::proxy {

// Where forwarded bytes go: a plain socket or a TLS stream. `write` takes all of `data` or fails (false: the
// sink's owner closes the connection); `flush` sends what was written now (a TLS stream's records).
class ByteSink {
  public:
    virtual ~ByteSink() = default;
    virtual bool write(std::string_view data) = 0;
    virtual bool flush() { return true; }
};

class HttpForwarder {
  public:
    enum class Response {
        Rewrite,  // head written again (hop-by-hop headers dropped, framing the proxy's), body framed again
        AsSent,   // every byte as the upstream sent it (the request went with the client's HTTP version)
    };
    // How a request head goes out.
    struct Out {
        std::string_view path;     // origin-form target
        std::string_view host;     // a Host header to add when the head has none (empty: none)
        bool close = false;        // the client's connection closes after this exchange
        bool drop_expect = false;  // the proxy answered `100 Continue` itself
    };
    enum class Status {
        More,      // every byte used, the response goes on
        Complete,  // the response ended (interim 1xx responses are relayed and do not end it)
        Error,     // the response did not parse: error()
        Refused,   // the response may not pass (refusal(): its Content-Encoding); nothing of it was written
        Broken,    // a sink failed (its owner knows why)
    };
    struct Relayed {
        Status status = Status::More;
        bool trailing = false;  // Complete with bytes after the response: the upstream is out of step
    };

    HttpForwarder(ByteSink& client, ByteSink& upstream);
    ~HttpForwarder();
    HttpForwarder(const HttpForwarder&) = delete;
    HttpForwarder& operator=(const HttpForwarder&) = delete;

    // Secrets whose real values never reach the client (an inject host's): responses are rewritten and
    // scrubbed. Set once per connection.
    void scrub(std::vector<SecretForms> secrets, std::size_t keep);
    bool scrubbing() const { return !scrub_.empty(); }
    // The upstream connection was dropped: the next one starts a new response parser.
    void reset();

    // ---- the request
    // Writes the head upstream (or holds it, see hold()): request line, end-to-end headers (hop-by-hop ones
    // dropped), framing written by the proxy; an inject host is asked for `Accept-Encoding: identity`. `head`
    // carries the values to send (secrets already substituted by the owner). False when the upstream failed.
    bool send_head(const HttpHead& head, const Out& out, Response response);
    // From now until release(), what is sent upstream is held (a body scanned for sentinels before any byte
    // of the request leaves).
    void hold() { holding_ = true; }
    bool release();
    void drop_held();
    bool body(std::string_view data);
    bool end_body();

    // ---- the response
    Relayed relay(std::string_view bytes);
    // The upstream closed: Complete when that ends the response (close-delimited), else Error.
    Relayed upstream_closed();
    bool started() const { return started_; }  // a final response head was seen
    int status() const { return status_; }
    // The client's connection closes after this response (it asked to, or the answer is read to the close).
    bool close_after() const { return close_after_; }
    // The upstream may carry the next request (it did not close or ask to, nothing came after the answer).
    bool upstream_reusable() const { return !upstream_done_; }
    const std::string& error() const { return error_; }
    const std::string& refusal() const { return refusal_; }
    std::uint64_t sent_up() const { return up_; }  // bytes written to each side for this exchange
    std::uint64_t sent_down() const { return down_; }

  private:
    struct ResponseSink final : HttpParser::Sink {
        HttpForwarder* f;
        void on_head(const HttpHead& head) override { f->response_head(head); }
        void on_body(std::string_view data) override { f->response_body(data); }
    };
    bool up(std::string_view data);
    bool pass(std::string_view bytes);  // AsSent: the upstream's bytes to the client, a head once it parsed
    bool down(std::string_view data);
    Relayed complete(bool trailing);
    void response_head(const HttpHead& head);
    void response_body(std::string_view data);
    void end_response_body();
    void body_down(std::string_view data);

    ByteSink& client_;
    ByteSink& upstream_;
    ResponseSink sink_;
    std::unique_ptr<HttpParser> parser_;
    std::vector<SecretForms> scrub_;
    std::size_t scrub_keep_ = 0;
    std::string carry_;  // response bytes held back: they may begin a value whose rest has not arrived
    std::string held_;
    std::string head_;  // AsSent: the response head's bytes until it parsed whole
    bool head_seen_ = false;
    bool holding_ = false;
    bool chunk_request_ = false;
    Response response_ = Response::Rewrite;
    bool client_11_ = true, head_request_ = false;
    bool started_ = false, chunk_response_ = false, body_ = false, close_after_ = false,
         upstream_done_ = false;
    bool refused_ = false, broken_ = false;
    int status_ = 0;
    std::string error_, refusal_;
    std::uint64_t up_ = 0, down_ = 0;
};

}  // namespace cordon::proxy
