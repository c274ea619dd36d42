#include "proxy/connection.hpp"

#include <netinet/tcp.h>
#include <sys/socket.h>
#include <uv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "policy/inspection.hpp"
#include "proxy/context.hpp"
#include "proxy/decision_log.hpp"
#include "proxy/http_frontend.hpp"
#include "proxy/socks5.hpp"
#include "proxy/socks5_frontend.hpp"
#include "proxy/tls_inspector.hpp"
#include "proxy/transparent_frontend.hpp"

namespace cordon::proxy {

char* Connection::scratch_buffer() {
    // One read buffer for every connection: the loop is single-threaded and each read is consumed before the
    // next.
    static char buffer[kScratchSize];
    return buffer;
}

Connection::Connection(Context& context, int fd, bool over_limit, bool transparent)
    : context_(context),
      id_(context.next_id++),
      over_limit_(over_limit),
      transparent_(transparent),
      started_(std::chrono::steady_clock::now()),
      decision_(context),
      timer_(new uv_timer_t) {
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    client_ = std::make_unique<Socket>(context.loop, fd, this);
    uv_timer_init(context.loop, timer_);
    timer_->data = this;
}

Connection::~Connection() {
    front_.reset();  // first: a front-end's destructor still uses this connection (the head budget)
    timer_->data = nullptr;
    uv_close(reinterpret_cast<uv_handle_t*>(timer_),
             [](uv_handle_t* h) { delete reinterpret_cast<uv_timer_t*>(h); });
}

void Connection::start() {
    touch();
    head_started_ = last_activity_;
    auto shortest = std::min(context_.options.idle_timeout, context_.options.header_timeout);
    std::uint64_t tick = static_cast<std::uint64_t>(std::clamp<long long>(shortest.count() / 4, 50, 5000));
    uv_timer_start(timer_, &Connection::on_timer, tick, tick);
    client_->want_read(true);
    if (transparent_) {
        // Redirected by the jail's nftables rules: the target is known without a byte from the client.
        proto_ = Proto::Transparent;
        front_ = std::make_unique<TransparentFrontEnd>(*this);
        front_->read();
    }
}

void Connection::touch() {
    last_activity_ = uv_now(context_.loop);
}

void Connection::head_begun() {
    if (head_started_ == 0) head_started_ = uv_now(context_.loop);
}

void Connection::take_back_sockets() {
    client_->set_owner(this);
    if (upstream_) upstream_->set_owner(this);
}

const char* Connection::proto_name() const {
    switch (proto_) {
        case Proto::Http:
            return "http";
        case Proto::Connect:
            return "connect";
        case Proto::Socks5:
            return "socks5";
        case Proto::Transparent:
            return "transparent";
        case Proto::Unknown:
            break;
    }
    return "unknown";
}

// ---- reading from the client

void Connection::on_readable(Socket& socket) {
    if (closed()) return;
    if (&socket == client_.get()) {
        read_client();
    } else if (upstream_ && &socket == upstream_.get() && front_) {
        front_->on_upstream_readable();
    }
}

void Connection::read_client() {
    long n = client_->read(scratch_buffer(), kScratchSize);
    if (n == -1) return;
    if (n == -2) {
        close(std::string("client: ") + std::strerror(client_->error()));
        return;
    }
    touch();
    if (n == 0) {
        client_eof_ = true;
        client_->want_read(false);
        if (phase_ == Phase::Reading && proto_ == Proto::Transparent) {
            front_->read();  // decides without waiting for more first bytes
            return;
        }
        if (phase_ == Phase::Closing || (phase_ == Phase::Reading && proto_ == Proto::Unknown)) {
            close("");
            return;
        }
        if (phase_ == Phase::Reading && proto_ == Proto::Socks5) {
            close("client closed during SOCKS5 handshake");
            return;
        }
        if (front_ && front_->needs_client()) {
            // Gone mid-request (a partial head, a body unsent, also while the request is decided): nothing
            // can complete it.
            close("client closed mid-request");
            return;
        }
        if (phase_ == Phase::Reading) {
            close("");  // between requests
            return;
        }
        return;  // a request is complete and its answer is on the way
    }
    if (phase_ == Phase::Closing) return;  // lingering: discard
    in_.append(scratch_buffer(), static_cast<std::size_t>(n));
    if (in_.size() >= kMaxBuffered) client_->want_read(false);
    process_client_input();
}

// The front-ends: each reads its protocol from in_ until it has a request for the pipeline (decide()) or a
// refusal of its own (conclude() with a Rejected verdict). The first byte picks one: 0x05 = SOCKS5, else
// HTTP.
void Connection::process_client_input() {
    if (phase_ == Phase::Reading && proto_ == Proto::Unknown && !in_.empty()) {
        if (static_cast<unsigned char>(in_[0]) == 0x05) {
            proto_ = Proto::Socks5;
            front_ = std::make_unique<Socks5FrontEnd>(*this);
        } else {
            proto_ = Proto::Http;
            front_ = std::make_unique<HttpFrontEnd>(*this);
        }
    }
    if (front_ && (phase_ == Phase::Reading || phase_ == Phase::Exchange)) front_->read();
}

// ---- the pipeline: decide -> resolve -> guard -> dial -> conclude (log, answer) -> relay

void Connection::decide(const std::string& host, std::uint16_t port) {
    phase_ = Phase::Deciding;
    // Bytes that come meanwhile wait in in_ (bounded: reading stops at kMaxBuffered; for a tunnel they are
    // its first bytes). Reading on is also how a client that closes while its request is decided is noticed.
    request_.host = host;
    request_.port = port;
    request_.upstream_ip.clear();
    request_.guard_class.clear();
    if (over_limit_) {
        // Over --max-connections: answer, never crash, never queue without bound.
        ++context_.metrics.connections_rejected;
        conclude({Verdict::Kind::Rejected, "over-connection-limit", "", Verdict::kAskFrontEnd,
                  "cordon: too many connections (--max-connections); try again later\n"});
        return;
    }
    // The policy decides on the name (before any DNS); resolved addresses pass the guard. See decision.hpp.
    decision_.decide(host, port, [this](Outcome outcome) { on_outcome(std::move(outcome)); });
}

void Connection::on_outcome(Outcome outcome) {
    if (closed()) return;
    switch (outcome.kind) {
        case Outcome::Kind::DeniedByPolicy:
            if (ask(outcome)) return;  // decided when the answer comes
            conclude({Verdict::Kind::Denied, outcome.reason(), "", Verdict::kAskFrontEnd, ""});
            return;
        case Outcome::Kind::DeniedByGuard:
            // The log names the address that was refused and why (it was never dialled).
            request_.upstream_ip = outcome.refused_ip;
            request_.guard_class = outcome.guard_class;
            conclude({Verdict::Kind::Denied, outcome.reason(), "address-guard: " + outcome.guard_class,
                      Verdict::kAskFrontEnd, ""});
            return;
        case Outcome::Kind::ResolveFailed: {
            std::string error = to_string(outcome.resolve_error);
            conclude({Verdict::Kind::Failed, outcome.reason(), error, Verdict::kAskFrontEnd,
                      "cannot resolve " + request_.host + ": " + error});
            return;
        }
        case Outcome::Kind::Allowed:
            break;
    }
    if (front_->reuse_upstream(request_.host + ":" + std::to_string(request_.port))) {
        // Keep-alive upstream to the same target: the address it uses was checked when it was dialled.
        conclude({Verdict::Kind::Connected, outcome.reason(), "", 0, ""});
        return;
    }
    upstream_.reset();
    phase_ = Phase::Dialing;
    request_.via_parent = outcome.via_parent;
    dialer_ = std::make_unique<Dialer>(context_.loop, std::move(outcome.addresses),
                                       context_.options.connect_timeout,
                                       [this](DialResult result) { on_dialed(std::move(result)); });
}

bool Connection::ask(const Outcome& outcome) {
    // Why never under allowManagedDomainsOnly or strictAllowlist: both say that no one below the managed
    // layer (or the lists themselves) may widen what goes out; a control peer's "allow" would do exactly
    // that.
    const auto& network = context_.policy->network();
    if (!context_.control || !context_.options.ask ||
        outcome.decision.reason != policy::Reason::BlockedByAllowlist || network.strict_allowlist ||
        network.allow_managed_domains_only)
        return false;
    ask_ = context_.control->ask(request_.host, request_.port, proto_name(),
                                 [this](AskAnswer answer) { on_answer(std::move(answer)); });
    return ask_ != nullptr;
}

void Connection::on_answer(AskAnswer answer) {
    ask_.reset();
    if (closed()) return;
    // The policy may have changed while the question was open (SIGHUP, --watch).
    const auto& network = context_.policy->network();
    if (answer.allow && (network.allow_managed_domains_only || network.strict_allowlist)) {
        answer.allow = false;
        answer.why =
            network.allow_managed_domains_only ? "allowManagedDomainsOnly is on" : "strictAllowlist is on";
    }
    if (!answer.allow) {
        // Refused as unknown, whether the answer was deny, none came in time, or nobody was left to answer.
        conclude({Verdict::Kind::Denied, "blocked-by-allowlist",
                  "ask: " + (answer.why == "answered" ? std::string("denied") : answer.why),
                  Verdict::kAskFrontEnd, ""});
        return;
    }
    policy::Decision allowed;
    allowed.verdict = policy::Verdict::Allow;
    allowed.reason = policy::Reason::AllowedByRule;
    allowed.rule = std::make_shared<const policy::Rule>(policy::Rule{
        request_.host, policy::Source{policy::Layer::Control, "", "an answer on the control channel", 0}});
    decision_.resume(request_.host, request_.port, std::move(allowed),
                     [this](Outcome outcome) { on_outcome(std::move(outcome)); });
}

void Connection::on_dialed(DialResult result) {
    auto dialer = std::move(dialer_);  // freed when this returns; the dialer touches nothing after calling us
    if (closed()) return;
    request_.upstream_ip = result.address.ip();
    std::string reason(policy::to_string(decision_.last().reason));
    if (!result.socket) {
        int e = result.error;
        std::string error = e == ETIMEDOUT      ? "connect-timeout"
                            : e == ECONNREFUSED ? "connect-refused"
                                                : std::string("connect-failed: ") + std::strerror(e);
        conclude({Verdict::Kind::Failed, reason, error, Verdict::kAskFrontEnd,
                  "cannot connect to " + request_.host + ":" + std::to_string(request_.port) + " (" +
                      result.address.to_string() + "): " + std::strerror(e),
                  e});
        return;
    }
    upstream_ = std::move(result.socket);
    upstream_->set_owner(this);
    touch();
    if (request_.via_parent) {
        // The parent proxy is connected: ask it for the target (by name), then go on as if dialled.
        parent_handshake_ = std::make_unique<ParentHandshake>(
            *upstream_, *context_.parent, request_.host, request_.port, [this, reason](std::string error) {
                // Freed on the next dial or at close: this runs inside it.
                if (closed()) return;
                upstream_->set_owner(this);
                if (!error.empty()) {
                    upstream_.reset();
                    conclude({Verdict::Kind::Failed, reason, error, 502,
                              "the parent proxy refused " + request_.host + ":" +
                                  std::to_string(request_.port) + ": " + error});
                    return;
                }
                touch();
                conclude({Verdict::Kind::Connected, reason, "", 0, ""});
            });
        return;
    }
    conclude({Verdict::Kind::Connected, reason, "", 0, ""});
}

void Connection::conclude(Verdict v) {
    using Kind = Verdict::Kind;
    phase_ = Phase::Answering;
    if (v.status == Verdict::kAskFrontEnd) v.status = front_->status_for(v);
    // The request's decision line: written here and nowhere else, once per request.
    const auto& d = decision_.last();
    bool allowed = v.kind == Kind::Connected || v.kind == Kind::Failed || v.kind == Kind::Aborted;
    DecisionEvent e;
    e.id = id_;
    e.proto = proto_name();
    e.host = request_.host;
    e.port = request_.port;
    e.method = request_.method;
    e.path = request_.path;
    e.decision = allowed ? "allow" : "deny";
    if (allowed && context_.options.report_only && !d.allowed() && !request_.by_request_rule) {
        // The policy refused it; report-only let it through.
        e.decision = "deny";
        e.enforced = false;
        e.reason_text = reason_text(d);
    }
    // A request its host's request rules refused was decided by them, before any decision on the host.
    e.rule = request_.by_request_rule ? request_.rule : rule_text(d);
    e.source = request_.by_request_rule ? request_.source : rule_source(d);
    e.reason = v.reason;
    if (!allowed) e.reason_text = request_.by_request_rule ? request_.reason_text : reason_text(d);
    e.upstream_ip = request_.upstream_ip;
    e.error = v.error;
    e.status = v.status;
    e.original_dst = request_.original_dst;
    e.sni = request_.sni;
    e.sni_mismatch = request_.sni_mismatch;
    e.sni_error = request_.sni_error;
    last_host_ = request_.host;
    last_port_ = request_.port;
    last_upstream_ip_ = request_.upstream_ip;
    record_decision(context_, e);
    if (v.kind == Kind::Denied || v.kind == Kind::Failed) count_refusal(v);
    if (request_.by_request_rule)
        count_refused_request(context_, request_.host, request_.port, request_.rule, request_.source,
                              request_.reason_text);

    // The answer, in the front-end's protocol (then its relay, the next request, or the close).
    if (v.kind != Kind::Aborted) front_->answer(v);
}

void Connection::conclude(const Exchange& x) {
    // A request inside an inspected tunnel: the tunnel's target, the request as it ended.
    DecisionEvent e;
    e.id = id_;
    e.proto = x.plain ? "http" : "https";
    e.host = request_.host;
    e.port = request_.port;
    e.method = x.method;
    e.path = x.path;
    e.url = x.url;
    e.decision = x.allowed ? "allow" : "deny";
    e.rule = x.rule;
    e.source = x.source;
    e.reason = x.reason;
    e.reason_text = x.reason_text;
    e.upstream_ip = request_.upstream_ip;
    e.error = x.error;
    e.status = x.status;
    e.request_bytes = x.request_bytes;
    e.response_bytes = x.response_bytes;
    e.inner = true;
    record_decision(context_, e);
}

// ---- tunnels

void Connection::start_tunnel() {
    phase_ = Phase::Tunnel;
    head_started_ = 0;  // a tunnel's bytes are no head; an inspected one says when its requests' heads begin
    // The client's bytes are the tunnel's now: the front-end has nothing left to do, and an idle tunnel keeps
    // only its two sockets (start_tunnel runs again once queued answers have drained).
    if (front_) {
        front_->on_tunnel();
        front_.reset();
    }
    // The relay step picks the termination stage for an inspected host (unless its client did not speak
    // TLS and the stage handed the tunnel back: then the splice relay below).
    if (!inspected_ && context_.policy->network().inspection->inspects(request_.host, request_.port)) {
        if (!context_.tls) {
            // Never tunnel untouched what the policy says to inspect: its request rules would not apply.
            close("inspection-unavailable: no CA to terminate TLS with (cordon ca init, --ca-dir)");
            return;
        }
        inspected_ = std::make_unique<InspectedTunnel>(*this);
        inspected_->start();
        return;
    }
    if (!in_.empty()) {
        // Bytes the client sent right behind its CONNECT / SOCKS request belong to the tunnel.
        bytes_up_ += in_.size();
        if (!upstream_->send(in_)) {
            close(std::string("upstream: ") + std::strerror(upstream_->error()));
            return;
        }
        std::string().swap(in_);
    }
    if (client_->queued() > 0 || upstream_->queued() > 0) return;  // on_drained comes back here
    relay_ = std::make_unique<Relay>(
        *client_, *upstream_,
        [this](const Relay::Stats& stats) {
            // close() adds the relay's byte counts (also when a timeout or the drain ends the tunnel).
            close(stats.error ? std::strerror(stats.error) : "");
        },
        [this]() { touch(); });
    relay_->start();
}

// ---- socket events

void Connection::on_writable(Socket&) {}

void Connection::on_drained(Socket& socket) {
    if (closed()) return;
    if (phase_ == Phase::Tunnel && !relay_) {
        start_tunnel();
        return;
    }
    if (phase_ == Phase::Closing) {
        if (client_eof_ && client_ && client_->queued() == 0) close(error_);
        return;
    }
    (void)socket;
    if (front_ && (phase_ == Phase::Exchange || phase_ == Phase::Reading)) front_->on_drained();
}

void Connection::on_error(Socket& socket, int error) {
    if (closed()) return;
    bool upstream = upstream_ && &socket == upstream_.get();
    if (upstream && front_ && front_->on_upstream_error(error)) return;
    close(std::string(upstream ? "upstream: " : "client: ") + std::strerror(error));
}

// ---- timers

void Connection::on_timer(uv_timer_t* timer) {
    auto* self = static_cast<Connection*>(timer->data);
    if (!self || self->closed()) return;
    const auto& o = self->context_.options;
    std::uint64_t now = uv_now(self->context_.loop);
    if (self->phase_ == Phase::Closing) {
        if (now - self->closing_since_ >= kLingerMs) self->close(self->error_);
        return;
    }
    // A head being read: the client's first request, or one inside an inspected tunnel (InspectedRequests
    // says when its heads begin and end; a head trickled a byte at a time would otherwise hold the
    // connection, as each byte puts the idle timer back).
    const bool tunnel = self->phase_ == Phase::Tunnel;
    if ((self->phase_ == Phase::Reading || tunnel) && self->head_started_ != 0 &&
        now - self->head_started_ >= static_cast<std::uint64_t>(o.header_timeout.count())) {
        if (tunnel || !self->front_ || !self->front_->on_header_timeout()) self->close("header-timeout");
        return;
    }
    if (self->phase_ == Phase::Dialing && self->parent_handshake_ && self->upstream_ &&
        now - self->last_activity_ >= static_cast<std::uint64_t>(o.connect_timeout.count())) {
        // The parent proxy took the connection but does not answer the CONNECT.
        self->upstream_.reset();
        self->conclude({Verdict::Kind::Failed, std::string(policy::to_string(self->decision_.last().reason)),
                        "parent-proxy: no answer (connect-timeout)", 504,
                        "the parent proxy did not answer in time"});
        return;
    }
    if (now - self->last_activity_ >= static_cast<std::uint64_t>(o.idle_timeout.count())) {
        if (self->front_ && self->front_->on_idle_timeout()) return;
        if (self->phase_ == Phase::Dialing || self->phase_ == Phase::Deciding) return;  // own timeouts
        bool between_requests = self->phase_ == Phase::Reading && self->proto_ != Proto::Socks5 &&
                                self->front_ && !self->front_->needs_client();
        self->close(between_requests ? "" : "idle-timeout");
    }
}

// ---- ending

void Connection::read_next_request() {
    phase_ = Phase::Reading;
    request_ = Request{};
    decision_.forget();
}

void Connection::finish_after_flush() {
    // Lingering close: send what is queued, then half-close and read (discarding) until the client closes or
    // two seconds pass. Closing with unread input would reset the connection and could destroy the answer.
    phase_ = Phase::Closing;
    decision_.cancel();
    ask_.reset();
    dialer_.reset();
    upstream_.reset();
    std::string().swap(in_);
    touch();
    closing_since_ = last_activity_;
    // A precise, short linger (not the connection's coarse tick): a client that keeps its end open after the
    // answer costs at most kLingerMs.
    uv_timer_start(timer_, &Connection::on_timer, kLingerMs / 4, kLingerMs / 4);
    client_->shutdown_write_when_drained();
    if (client_eof_) {
        if (client_->queued() == 0) close(error_);
        return;
    }
    client_->want_read(true);
}

void Connection::close_if_idle() {
    if (closed()) return;
    if (phase_ == Phase::Reading && (!front_ || (proto_ != Proto::Socks5 && !front_->needs_client())))
        close("");  // nothing read yet, or a keep-alive connection between requests
    // A final answer already flushed: the lingering read is only a courtesy, not worth holding a drain.
    else if (phase_ == Phase::Closing && client_ && client_->queued() == 0)
        close(error_);
}

void Connection::count_refusal(const Verdict& verdict) {
    using Why = RefusalSummary::Why;
    auto& e = count_refused(context_, request_.host + ":" + std::to_string(request_.port), "(other hosts)");
    const auto& d = decision_.last();
    e.rule = rule_text(d);
    e.source = rule_source(d);
    e.reason_text = reason_text(d);
    e.error.clear();
    if (verdict.kind == Verdict::Kind::Failed) {
        e.why = Why::Upstream;
        e.error = verdict.error;
    } else if (!request_.guard_class.empty()) {
        e.why = Why::AddressGuard;
        e.address = request_.upstream_ip;
        e.address_class = request_.guard_class;
    } else {
        e.why = d.reason == policy::Reason::BlockedByDenylist ? Why::DeniedByRule : Why::NotAllowed;
    }
}

void Connection::close(const std::string& error) {
    if (closed()) return;
    if ((phase_ == Phase::Deciding || phase_ == Phase::Dialing) &&
        (decision_.last().allowed() || (context_.options.report_only && phase_ == Phase::Dialing))) {
        // Allowed by the policy but the connection ended before the dial finished (shutdown, client gone).
        conclude({Verdict::Kind::Aborted, std::string(policy::to_string(decision_.last().reason)),
                  "aborted" + (error.empty() ? std::string() : ": " + error), 0, ""});
    }
    // An inspected request that reached the upstream (or was about to) has its line whatever ends the
    // connection: the client gone, the upstream failing, the idle timeout, the drain.
    if (inspected_) inspected_->end_in_flight(error);
    phase_ = Phase::Closed;
    decision_.cancel();
    ask_.reset();
    if (relay_) {
        // A tunnel ended by a timeout or the drain: its bytes count as much as one that ended by itself.
        bytes_up_ += relay_->stats().bytes_up;
        bytes_down_ += relay_->stats().bytes_down;
    }
    relay_.reset();
    if (inspected_) {
        bytes_up_ += inspected_->bytes_up();
        bytes_down_ += inspected_->bytes_down();
    }
    dialer_.reset();
    parent_handshake_.reset();
    upstream_.reset();
    client_.reset();
    uv_timer_stop(timer_);
    context_.metrics.bytes_up += bytes_up_;
    context_.metrics.bytes_down += bytes_down_;
    if (proto_ != Proto::Unknown && context_.audit) {
        CloseEvent e;
        e.id = id_;
        e.proto = proto_name();
        e.host = request_.host.empty() ? last_host_ : request_.host;
        e.port = request_.host.empty() ? last_port_ : request_.port;
        e.upstream_ip = request_.upstream_ip.empty() ? last_upstream_ip_ : request_.upstream_ip;
        e.bytes_up = bytes_up_;
        e.bytes_down = bytes_down_;
        e.duration = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() -
                                                                           started_);
        e.error = error.empty() ? error_ : error;
        context_.audit->close(e);
    }
    context_.retire(this);
}

}  // namespace cordon::proxy
