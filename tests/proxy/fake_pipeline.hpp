// A pipeline without sockets, for front-end unit tests: what a front-end sends to either side is collected in
// strings, the upstream's bytes come from a string, and the pipeline's steps are recorded (the target given
// to decide(), each concluded verdict as its decision line would say it, each phase the front-end asked for).
// The test plays the rest of the pipeline: allow() and deny() answer a decide() as Connection would after
// the policy, DNS, the guard and the dial.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/front_end.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/tls_inspector.hpp"

namespace cordon::proxy::testing {

class FakePipeline final : public Pipeline {
  public:
    struct Concluded {
        Verdict verdict;
        std::string host;
        std::uint16_t port;
        std::string method, path, rule, source;
    };
    struct RuleCall {
        std::string host;
        std::uint16_t port;
        std::string method, target, url;
    };

    Context context_;
    FrontEnd* front = nullptr;
    Phase phase_ = Phase::Reading;
    Proto proto_ = Proto::Unknown;
    Request request_;
    policy::Decision decision_;
    std::string in;  // client bytes not yet consumed
    bool eof = false;
    std::string to_client, to_upstream;
    bool upstream = false;
    std::string from_upstream;  // what read_upstream() returns next
    bool upstream_eof = false;
    bool client_reading = true, upstream_reading = false;
    std::uint64_t up = 0, down = 0;
    std::string error, closed_with;
    bool head_clock = false;
    // What was asked of the pipeline.
    std::vector<std::pair<std::string, std::uint16_t>> decided;
    std::vector<Concluded> lines;
    std::vector<Exchange> exchanges;  // the lines of requests inside an inspected tunnel
    // What the connection's close runs first (Connection: the inspected request in flight gets its line).
    std::function<void(const std::string&)> on_close;
    std::vector<RuleCall> rule_calls;
    RequestRuling ruling;  // what decide_request() answers (allowed unless a test says otherwise)
    int tunnels = 0, dials = 0;
    char buffer[64 * 1024];

    // Client bytes arrive.
    void client_sends(std::string_view bytes) {
        in.append(bytes);
        front->read();
    }
    // The upstream's bytes arrive (one read each).
    void upstream_sends(std::string_view bytes) {
        from_upstream.append(bytes);
        front->on_upstream_readable();
    }
    void upstream_closes() {
        upstream_eof = true;
        front->on_upstream_readable();
    }
    // The policy allowed the target decided last: a kept-alive upstream to it is reused, else one is
    // "dialled".
    void allow() {
        const auto& [host, port] = decided.back();
        if (!front->reuse_upstream(host + ":" + std::to_string(port))) {
            upstream = true;
            ++dials;
        }
        conclude({Verdict::Kind::Connected, "allowed", "", 0, ""});
    }
    void deny() { conclude({Verdict::Kind::Denied, "blocked-by-allowlist", "", Verdict::kAskFrontEnd, ""}); }

    // ---- Pipeline
    Context& context() override { return context_; }
    std::uint64_t id() const override { return 1; }
    Phase phase() const override { return phase_; }
    bool closed() const override { return phase_ == Phase::Closed; }
    Proto proto() const override { return proto_; }
    void set_proto(Proto proto) override { proto_ = proto; }
    bool over_limit() const override { return false; }
    Request& request() override { return request_; }
    const policy::Decision& decision() const override { return decision_; }
    void forget_decision() override { decision_ = policy::Decision{}; }

    std::string& input() override { return in; }
    bool client_eof() const override { return eof; }
    bool send_to_client(std::string_view data) override {
        to_client.append(data);
        return true;
    }
    std::size_t client_queued() const override { return 0; }
    void want_client_read(bool on) override { client_reading = on; }
    void cork_client() override {}
    void uncork_client() override {}
    int client_error() const override { return 0; }
    int client_fd() const override { return -1; }

    bool has_upstream() const override { return upstream; }
    bool send_to_upstream(std::string_view data) override {
        to_upstream.append(data);
        return true;
    }
    std::size_t upstream_queued() const override { return 0; }
    void want_upstream_read(bool on) override { upstream_reading = on; }
    long read_upstream(char* buf, std::size_t size) override {
        if (from_upstream.empty()) return upstream_eof ? 0 : -1;
        std::size_t n = std::min(size, from_upstream.size());
        from_upstream.copy(buf, n);
        from_upstream.erase(0, n);
        return static_cast<long>(n);
    }
    int upstream_error() const override { return 0; }
    int upstream_fd() const override { return -1; }
    void drop_upstream() override { upstream = false; }
    char* scratch() override { return buffer; }
    std::size_t scratch_size() const override { return sizeof buffer; }

    void count_up(std::uint64_t bytes) override { up += bytes; }
    void count_down(std::uint64_t bytes) override { down += bytes; }
    void set_error(const std::string& e) override { error = e; }
    void touch() override {}
    void head_begun() override { head_clock = true; }
    void head_ended() override { head_clock = false; }

    void decide(const std::string& host, std::uint16_t port) override {
        phase_ = Phase::Deciding;
        request_.host = host;
        request_.port = port;
        decided.emplace_back(host, port);
    }
    RequestRuling decide_request(std::string_view method, std::string_view target,
                                 std::string_view url) override {
        rule_calls.push_back(
            {request_.host, request_.port, std::string(method), std::string(target), std::string(url)});
        return ruling;
    }
    // As Connection::conclude: the line (here: recorded), then the front-end's answer.
    void conclude(Verdict v) override {
        phase_ = Phase::Answering;
        if (v.status == Verdict::kAskFrontEnd) v.status = front->status_for(v);
        lines.push_back({v, request_.host, request_.port, request_.method, request_.path, request_.rule,
                         request_.source});
        if (v.kind != Verdict::Kind::Aborted) front->answer(v);
    }
    // As Connection::conclude for a request inside an inspected tunnel: its line (here: recorded).
    void conclude(const Exchange& x) override { exchanges.push_back(x); }
    void count_refusal(const Verdict&) override {}
    void begin_exchange() override { phase_ = Phase::Exchange; }
    void read_next_request() override {
        phase_ = Phase::Reading;
        request_ = Request{};
        decision_ = policy::Decision{};
    }
    void begin_closing() override { phase_ = Phase::Closing; }
    void finish_after_flush() override {
        phase_ = Phase::Closing;
        upstream = false;
        in.clear();
    }
    void start_tunnel() override {
        phase_ = Phase::Tunnel;
        ++tunnels;
    }
    void close(const std::string& e) override {
        if (phase_ == Phase::Closed) return;
        if (on_close) on_close(e);
        phase_ = Phase::Closed;
        closed_with = e;
    }
    Socket& client_socket() override { throw std::logic_error("no sockets in a fake pipeline"); }
    Socket& upstream_socket() override { throw std::logic_error("no sockets in a fake pipeline"); }
    void take_back_sockets() override {}
};

}  // namespace cordon::proxy::testing
