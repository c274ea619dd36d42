// The HTTP/1.1 requests inside an inspected tunnel (TLS terminated by inspect.hpp), or in plain HTTP to a
// host with request rules, read from plaintext. Each request:
//
//   head (strict parser) -> origin-form, HTTP/1.x with Host, no Upgrade, Host = the tunnel's host (else 421)
//     -> request rules (Pipeline::decide_request, the one decider) -> secrets (sentinels into credential
//        headers of an inject host only; the body's first 64 KiB held and scanned, `100 Continue` answered
//        meanwhile) -> the one HTTP/1.1 forwarder (http_forwarder.hpp) -> its response relayed
//     -> Pipeline::conclude(exchange): the request's one decision line, however it ended
//
// The transport hands it the client's plaintext and the upstream's, and two byte sinks to write into; so it
// runs on a fake pipeline and strings in tests (tests/proxy/inspected_requests_test.cpp), without sockets or
// TLS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/http_forwarder.hpp"
#include "proxy/http_parser.hpp"
#include "proxy/proxy.hpp"

namespace cordon::proxy {

class Pipeline;

class InspectedRequests {
  public:
    static constexpr std::size_t kBodyScan =
        64 * 1024;  // how much of a request body is scanned for sentinels
    static constexpr std::size_t kMaxPending = 256 * 1024;  // client bytes held while a request is answered

    // `plain`: HTTP without TLS (no real value ever goes into it).
    InspectedRequests(Pipeline& pipeline, ByteSink& client, ByteSink& upstream, bool plain);
    ~InspectedRequests();

    // The upstream failed its TLS verification (`error`): the client's first request gets a 502 saying so,
    // and nothing goes upstream.
    void upstream_failed(const std::string& error);

    // The client's plaintext: `receive` keeps it, `read` reads requests from what is kept.
    void receive(std::string_view data) { in_.append(data); }
    void read();
    void client_closed();
    bool wants_client() const { return in_.size() < kMaxPending; }
    // Between requests with nothing unread: a close now ends no request.
    bool idle() const { return request_ == Request::Head && in_.empty(); }

    // The upstream's plaintext; false when the connection was closed.
    bool upstream_bytes(std::string_view data);
    void upstream_closed();

    // The connection is closing with `error`: a request in flight gets its decision line now (the status the
    // client saw, else 502) with the error.
    void end_in_flight(const std::string& error);

  private:
    enum class Request { Head, Body, Hold, Skip, AwaitResponse };

    struct RequestSink final : HttpParser::Sink {
        InspectedRequests* r;
        void on_head(const HttpHead&) override {}
        void on_body(std::string_view data) override { r->body(data); }
    };

    void request_head();
    void answer_upstream_failure();
    void body(std::string_view data);
    // The body of the request in flight did not parse (`why`): the connection closes.
    void bad_body(const std::string& why);
    void request_end();
    void release_hold();
    // 403 blocked-by-secret-scope: `where` ("header NAME", "the request URL", ...) carries `secret`'s
    // sentinel.
    void refuse_secret(const std::string& where, const Options::Secret& secret);
    void refuse(int status, const std::string& x_proxy_error, const std::string& reason,
                const std::string& body, const std::string& rule, const std::string& source);
    void response_complete();
    void next_request();
    void conclude(bool allowed, const std::string& reason, int status, const std::string& error);
    void finish(const std::string& error);

    Pipeline& p_;
    ByteSink& client_;
    bool plain_;
    RequestSink request_sink_;
    HttpParser request_parser_;
    HttpForwarder forwarder_;
    std::string in_;  // client plaintext not yet parsed
    bool client_eof_ = false;
    std::string upstream_error_;  // the upstream failed its handshake: why (the first request gets a 502)

    // The request in flight.
    Request request_ = Request::Head;
    std::string method_, path_, url_, rule_, source_;
    std::string reason_text_;  // a refusal's deniedDomainReasons text (the Exchange's reason_text)
    std::string scanned_;      // the body's first bytes (de-chunked), scanned for sentinels
    bool keep_alive_ = true;
    bool concluded_ = true;       // the request in flight has its decision line
    int status_ = 0;              // the proxy's own answer, when it gave one
    std::uint64_t answered_ = 0;  // the bytes of that answer
};

}  // namespace cordon::proxy
