// The HTTP front-end: absolute-form requests forwarded with keep-alive on both sides (each request decided
// and logged on its own), CONNECT tunnels, and the proxy's own answers (400, 403, 407, 431, 501, 502, 503,
// 504). Forwarding an allowed request is its relay, through the one HTTP/1.1 forwarder (http_forwarder.hpp):
// the request head rewritten (origin-form, hop-by-hop headers dropped, framing written by the proxy), the
// body streamed, the response streamed back, then the next request.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "proxy/front_end.hpp"
#include "proxy/http_forwarder.hpp"
#include "proxy/http_parser.hpp"
#include "proxy/pipeline.hpp"

namespace cordon::proxy {

class HttpFrontEnd final : public FrontEnd {
  public:
    explicit HttpFrontEnd(Pipeline& pipeline);
    ~HttpFrontEnd() override;

    void read() override;
    int status_for(const Verdict& verdict) const override;
    void answer(const Verdict& verdict) override;
    bool needs_client() const override;
    void on_upstream_readable() override;
    void on_drained() override { backpressure(); }
    bool on_upstream_error(int error) override;
    bool on_header_timeout() override;
    bool on_idle_timeout() override;
    bool reuse_upstream(std::string target) override;
    void on_tunnel() override;

  private:
    using Phase = Pipeline::Phase;
    using Proto = Pipeline::Proto;

    struct RequestSink final : HttpParser::Sink {
        HttpFrontEnd* h;
        void on_head(const HttpHead&) override {}
        void on_body(std::string_view data) override { h->request_body(data); }
    };
    // What the forwarder writes goes to the connection's sockets, counted for the close line.
    struct ClientSink final : ByteSink {
        explicit ClientSink(Pipeline& pipeline) : p(pipeline) {}
        Pipeline& p;
        bool write(std::string_view data) override {
            p.count_down(data.size());
            return p.send_to_client(data);
        }
    };
    struct UpstreamSink final : ByteSink {
        explicit UpstreamSink(Pipeline& pipeline) : p(pipeline) {}
        Pipeline& p;
        bool write(std::string_view data) override {
            p.count_up(data.size());
            return p.send_to_upstream(data);
        }
    };

    // Reading requests.
    void process();
    void backpressure();
    void head_complete();
    void bad_request(const std::string& why, int status = 400);
    // Charges this connection's half-read head (`size` bytes, 0 = none) to the proxy-wide budget; false when
    // over it (the request was answered 503).
    bool charge_head(std::size_t size);
    bool request_body_buffered() const;
    // Answers.
    void send_error(int status, const std::string& reason, const std::string& x_proxy_error,
                    const std::string& body, bool keep_alive);
    void refuse(const Verdict& verdict);
    void reject(const Verdict& verdict);
    void upstream_failure(int status, const std::string& error, const std::string& detail);
    // Forwarding (the relay of an allowed request).
    void connected();
    void request_body(std::string_view data);
    void request_complete();
    void read_upstream();
    void relayed(HttpForwarder::Relayed relayed);
    void response_complete();
    void drop_upstream();
    void next_request();

    Pipeline& p_;
    std::unique_ptr<HttpParser> request_parser_;
    RequestSink request_sink_;
    ClientSink client_sink_;
    UpstreamSink upstream_sink_;
    std::unique_ptr<HttpForwarder> forwarder_;  // the exchange with the upstream (head, body, response)
    HttpHead request_head_;
    std::string upstream_key_;     // "host:port" the kept-alive upstream connection goes to
    std::size_t head_charge_ = 0;  // bytes charged to Context::head_bytes
    bool request_done_ = false, response_done_ = false, response_started_ = false;
    bool close_after_response_ = false;
    bool upstream_reusable_ = false;
    bool processing_ = false;  // inside process()
};

}  // namespace cordon::proxy
