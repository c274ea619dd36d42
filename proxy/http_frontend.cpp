// The HTTP front-end (http_frontend.hpp).
#include "proxy/http_frontend.hpp"

#include <algorithm>
#include <cstring>

#include "policy/syntax.hpp"
#include "proxy/auth.hpp"
#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/http_forwarder.hpp"
#include "proxy/request_rules.hpp"

namespace cordon::proxy {

namespace {

constexpr std::size_t kHighWater = 1024 * 1024;  // stop reading one side while the other has this much queued

bool starts_with_icase(std::string_view s, std::string_view prefix) {
    return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// Splits "host:port" / "[v6]:port" (CONNECT's authority form) with the one host:port grammar
// (policy/syntax.hpp). Port required.
bool split_authority(std::string_view text, std::string& host, std::uint16_t& port) {
    auto parts = policy::split_host_port(text, policy::PortSpec::Required);
    if (std::holds_alternative<std::string>(parts)) return false;
    const auto& hp = std::get<policy::HostPortText>(parts);
    if (!hp.bracketed && hp.host.find(':') != std::string_view::npos) return false;
    host = std::string(hp.host);
    port = *hp.port;
    return true;
}

// Normalises a host the way the policy does (case, trailing dot, IDN); empty with `why` set when malformed.
bool normalise_host(const std::string& host, std::uint16_t port, std::string& out, std::string& why) {
    auto parsed = policy::parse_target_host(host, port);
    if (auto* error = std::get_if<std::string>(&parsed)) {
        why = *error;
        return false;
    }
    out = std::get<policy::HostPort>(parsed).host;
    return true;
}

}  // namespace

HttpFrontEnd::HttpFrontEnd(Pipeline& pipeline)
    : p_(pipeline),
      request_parser_(std::make_unique<HttpParser>(HttpParser::Kind::Request, &request_sink_)),
      client_sink_(pipeline),
      upstream_sink_(pipeline),
      forwarder_(std::make_unique<HttpForwarder>(client_sink_, upstream_sink_)) {
    request_sink_.h = this;
}

HttpFrontEnd::~HttpFrontEnd() {
    p_.context().head_bytes -= head_charge_;
}

void HttpFrontEnd::read() {
    process();
}

int HttpFrontEnd::status_for(const Verdict& v) const {
    switch (v.kind) {
        case Verdict::Kind::Denied:
            return 403;
        case Verdict::Kind::Failed:
            return v.error == "dns-timeout" || v.error == "connect-timeout" ? 504 : 502;
        case Verdict::Kind::Rejected:
            return 503;  // over a limit
        case Verdict::Kind::Connected:
        case Verdict::Kind::Aborted:
            break;
    }
    return 0;
}

void HttpFrontEnd::answer(const Verdict& v) {
    switch (v.kind) {
        case Verdict::Kind::Connected:
            upstream_reusable_ = true;  // upstream_key_ was set by reuse_upstream()
            if (p_.proto() == Proto::Connect) {
                p_.send_to_client("HTTP/1.1 200 Connection established\r\n\r\n");
                p_.start_tunnel();
            } else {
                connected();
            }
            return;
        case Verdict::Kind::Denied:
            refuse(v);
            return;
        case Verdict::Kind::Failed:
            upstream_failure(v.status, v.error, v.message);
            return;
        case Verdict::Kind::Rejected:
            reject(v);
            return;
        case Verdict::Kind::Aborted:
            return;
    }
}

bool HttpFrontEnd::needs_client() const {
    switch (p_.phase()) {
        case Phase::Reading:
            return !p_.input().empty() || (request_parser_ && request_parser_->in_message());  // a head begun
        case Phase::Exchange:
            return !request_done_;  // a body still coming
        case Phase::Deciding:
        case Phase::Dialing:
            return !request_body_buffered();
        default:
            return false;
    }
}

void HttpFrontEnd::on_upstream_readable() {
    read_upstream();
}

bool HttpFrontEnd::on_upstream_error(int error) {
    if (p_.phase() == Phase::Exchange && !response_started_ && !response_done_) {
        upstream_failure(502, "upstream-reset", std::string("upstream failed: ") + std::strerror(error));
        return true;
    }
    if (p_.phase() == Phase::Reading) {
        drop_upstream();  // an idle kept-alive upstream went away
        return true;
    }
    return false;
}

bool HttpFrontEnd::on_header_timeout() {
    if (!needs_client()) return false;
    p_.set_error("header-timeout");
    send_error(408, "Request Timeout", "", "cordon: request head not received in time\n", false);
    return true;
}

bool HttpFrontEnd::on_idle_timeout() {
    if (p_.phase() != Phase::Exchange || response_started_ || response_done_) return false;
    upstream_failure(504, "upstream-timeout", "upstream " + p_.request().host + " did not answer in time");
    return true;
}

bool HttpFrontEnd::reuse_upstream(std::string target) {
    if (p_.proto() == Proto::Http && p_.has_upstream() && upstream_reusable_ && upstream_key_ == target)
        return true;
    upstream_key_ = std::move(target);  // the upstream about to be dialled
    return false;
}

void HttpFrontEnd::on_tunnel() {
    // A tunnel keeps no HTTP state: idle tunnels stay small.
    charge_head(0);
    request_parser_.reset();
    forwarder_->reset();
    request_head_ = HttpHead{};
    std::string().swap(upstream_key_);
}

void HttpFrontEnd::process() {
    // Answers given synchronously (refusals, a reused upstream) lead back here; the loop below picks up where
    // they left off instead of recursing, so a client pipelining thousands of refused requests cannot exhaust
    // the stack.
    if (processing_) return;
    processing_ = true;
    // Answers pile up for a client that pipelines without reading: stop at kHighWater until it drains.
    while (!p_.input().empty() && !p_.closed() && p_.client_queued() < kHighWater &&
           (p_.phase() == Phase::Reading || (p_.phase() == Phase::Exchange && !request_done_))) {
        if (p_.phase() == Phase::Reading) p_.head_begun();
        auto result = request_parser_->feed(p_.input());
        switch (result.status) {
            case HttpParser::Status::Ok:
                p_.input().clear();
                if (!charge_head(request_parser_->head_size())) {
                    processing_ = false;
                    return;
                }
                break;
            case HttpParser::Status::HeadComplete:
                p_.input().erase(0, result.consumed);
                head_complete();
                break;
            case HttpParser::Status::MessageComplete:
                p_.input().erase(0, result.consumed);
                request_complete();
                break;
            case HttpParser::Status::Error:
                processing_ = false;
                charge_head(0);
                bad_request(request_parser_->error(), request_parser_->error_status());
                return;
        }
    }
    processing_ = false;
    if (!p_.closed()) backpressure();
}

void HttpFrontEnd::backpressure() {
    if (p_.closed()) return;
    // The client is read while a request is decided and answered too (bounded by kMaxBuffered): toggling read
    // interest costs system calls on every request of a keep-alive connection.
    bool body_blocked = p_.phase() == Phase::Exchange && !request_done_ && p_.has_upstream() &&
                        p_.upstream_queued() >= kHighWater;
    // A connection closing after its final answer (a 407, a refusal) keeps reading: the lingering read is
    // what notices the client's close or reset at once (it used to wait for the timer).
    bool client_read =
        !p_.client_eof() && !body_blocked && p_.input().size() < Pipeline::kMaxBuffered &&
        (p_.phase() == Phase::Closing || (p_.client_queued() < kHighWater &&
                                          (p_.phase() == Phase::Reading || p_.phase() == Phase::Exchange ||
                                           p_.phase() == Phase::Deciding || p_.phase() == Phase::Dialing)));
    p_.want_client_read(client_read);
    if (p_.has_upstream()) {
        bool upstream_read =
            (p_.phase() == Phase::Exchange && !response_done_ && p_.client_queued() < kHighWater) ||
            p_.phase() == Phase::Reading;  // an idle kept-alive upstream: notice when it closes
        p_.want_upstream_read(upstream_read);
    }
    // Bytes that arrived while the body was not being read.
    if (!p_.input().empty() && p_.client_queued() < kHighWater &&
        (p_.phase() == Phase::Reading || (p_.phase() == Phase::Exchange && !request_done_ && !body_blocked)))
        process();
}

void HttpFrontEnd::head_complete() {
    const HttpHead& head = request_parser_->head();
    p_.head_ended();
    charge_head(0);
    p_.forget_decision();  // nothing of the previous request's decision may show in this one's line
    request_head_ = head;
    request_done_ = response_done_ = response_started_ = false;
    close_after_response_ = false;
    p_.request() = Pipeline::Request{};
    p_.request().method = head.method;

    std::string host;
    std::uint16_t port = 0;
    if (request_parser_->is_connect()) {
        p_.set_proto(Proto::Connect);
        std::string raw;
        if (!split_authority(head.target, raw, port)) {
            bad_request("CONNECT needs host:port, got '" + head.target + "'");
            return;
        }
        std::string why;
        if (!normalise_host(raw, port, host, why)) {
            bad_request("bad CONNECT target: " + why);
            return;
        }
    } else {
        p_.set_proto(Proto::Http);
        const std::string& target = head.target;
        if (target.empty() || target.front() == '/' || target == "*") {
            bad_request(
                "origin-form request to the proxy itself: send an absolute URI (GET http://host/path) "
                "or use CONNECT");
            return;
        }
        if (starts_with_icase(target, "https://")) {
            bad_request("https:// URLs go through CONNECT, not as absolute-form requests");
            return;
        }
        if (!starts_with_icase(target, "http://")) {
            bad_request("unsupported request target '" + target.substr(0, 64) + "' (only http:// URIs)");
            return;
        }
        std::string_view rest = std::string_view(target).substr(7);
        auto end = rest.find_first_of("/?#");
        std::string_view authority = rest.substr(0, end);
        std::string path = end == std::string_view::npos ? "/" : std::string(rest.substr(end));
        if (auto hash = path.find('#'); hash != std::string::npos) path.erase(hash);
        if (path.empty() || path.front() == '?') path.insert(0, "/");
        if (authority.find('@') != std::string_view::npos) {
            bad_request("credentials in the request URI are not accepted");
            return;
        }
        std::string raw;
        if (!split_authority(authority, raw, port)) {
            raw = std::string(authority);
            port = 80;
            if (!raw.empty() && raw.front() == '[' && raw.back() == ']') raw = raw.substr(1, raw.size() - 2);
        }
        std::string why;
        if (raw.empty() || !normalise_host(raw, port, host, why)) {
            bad_request("bad host in request URI" + (why.empty() ? std::string() : ": " + why));
            return;
        }
        // A Host header naming another host than the URI is how requests get routed past a filter.
        if (auto h = head.header("host"); h && !host_header_names(*h, host, port)) {
            bad_request("Host header '" + std::string(*h) + "' names another host than the request URI");
            return;
        }
        p_.request().path = path;
        if (head.upgrade) {
            // Upgrade is hop-by-hop and this proxy does not switch protocols on a client's behalf: the bytes
            // after this head would be another protocol, which the proxy could neither read nor police.
            // Refuse it plainly, and close (the client may already be sending the new protocol).
            p_.request().host = host;
            p_.request().port = port;
            p_.set_error("upgrade-not-supported");
            p_.conclude({Verdict::Kind::Rejected, "bad-request", "upgrade not supported", 501,
                         "cordon: Upgrade (" + std::string(head.header("upgrade").value_or("")) +
                             ") is not supported through this proxy for http:// URLs: use CONNECT "
                             "(wss://, or the client's proxy tunnel mode)\n"});
            return;
        }
    }
    p_.request().host = host;
    p_.request().port = port;

    // A secret's sentinel (credentials, --secret) goes nowhere but its injectHosts, and a plain request is
    // never substituted (that happens only inside inspected connections): refuse it towards any other host.
    for (const auto& secret : p_.context().options.secrets) {
        bool carried = head.target.find(secret.sentinel) != std::string::npos;
        for (const auto& [name, value] : head.headers)
            carried = carried || value.find(secret.sentinel) != std::string::npos;
        if (carried && std::find(secret.inject_hosts.begin(), secret.inject_hosts.end(), host) ==
                           secret.inject_hosts.end()) {
            p_.conclude({Verdict::Kind::Rejected, "blocked-by-secret-scope", "", 403,
                         "cordon: the request carries the sentinel of " + secret.name +
                             ", which may go to its injectHosts only\n"});
            return;
        }
    }

    if (!p_.context().options.auth_token.empty()) {
        auto credentials = head.header("proxy-authorization");
        if (!credentials || !basic_auth_ok(*credentials, p_.context().options.auth_token)) {
            p_.conclude({Verdict::Kind::Rejected, "proxy-auth-required", "", 407,
                         "cordon: proxy authentication required\n"});
            return;
        }
    }
    // A host's request rules hold for plain `http://` to it as for requests inside its inspected TLS.
    if (p_.proto() == Proto::Http) {
        auto ruling = p_.decide_request(head.method, p_.request().path, head.target);
        if (!ruling.allowed) {
            p_.request().rule = ruling.rule;
            p_.request().source = ruling.source;
            p_.request().by_request_rule = ruling.status == 403;
            p_.request().reason_text = ruling.reason_text;
            p_.conclude({Verdict::Kind::Rejected, ruling.reason, "", ruling.status, ruling.message});
            return;
        }
    }
    p_.decide(host, port);
}

void HttpFrontEnd::bad_request(const std::string& why, int status) {
    p_.set_error("bad-request: " + why);
    // Every refused request has its decision line, named or not (a head that never parsed has no host).
    p_.conclude({Verdict::Kind::Rejected, "bad-request", why, status,
                 std::string(status == 431 ? "cordon: request head too large: " : "cordon: bad request: ") +
                     why + "\n"});
}

bool HttpFrontEnd::charge_head(std::size_t size) {
    // All half-read heads together are bounded (each alone is bounded by HttpParser::kMaxHead): a flood of
    // connections sending large heads slowly cannot grow the proxy without end.
    p_.context().head_bytes -= head_charge_;
    head_charge_ = 0;
    if (size == 0) return true;
    if (p_.context().head_bytes + size > Context::kMaxHeadBytes) {
        p_.set_error("over-head-memory-limit");
        p_.conclude({Verdict::Kind::Rejected, "over-connection-limit",
                     "request heads in flight over their memory limit", 503,
                     "cordon: too many large request heads in flight; try again later\n"});
        return false;
    }
    head_charge_ = size;
    p_.context().head_bytes += size;
    return true;
}

void HttpFrontEnd::send_error(int status, const std::string& reason, const std::string& x_proxy_error,
                              const std::string& body, bool keep_alive) {
    // Keep the connection only when the request carried no body we would have to skip.
    bool has_body = request_head_.chunked || request_head_.content_length.value_or(0) > 0;
    // After a CONNECT head the client's next bytes are for the tunnel, not another request.
    if (has_body || !request_head_.keep_alive || p_.context().draining || p_.over_limit() ||
        p_.proto() == Proto::Connect)
        keep_alive = false;
    std::string out =
        proxy_answer(status, x_proxy_error, body, keep_alive, request_head_.method == "HEAD", reason);
    if (!p_.send_to_client(out)) {
        p_.close(std::string("client: ") + std::strerror(p_.client_error()));
        return;
    }
    if (!keep_alive) {
        charge_head(0);
        p_.finish_after_flush();
        return;
    }
    // The request was answered here; read the next one.
    request_done_ = true;
    response_done_ = true;
    p_.begin_exchange();
    request_parser_->resume();  // paused after the head; the (empty) body completes at once
    auto result = request_parser_->feed(std::string_view());
    (void)result;
    next_request();
}

void HttpFrontEnd::refuse(const Verdict& v) {
    std::string target = p_.request().host + ":" + std::to_string(p_.request().port);
    const policy::Decision& d = p_.decision();
    // srt's phrase first (tools and srt's tests look for it), then what cordon knows: the rule and its
    // source.
    std::string body = "Connection blocked by network allowlist\n";
    if (!p_.request().guard_class.empty()) {
        body += "cordon: connection to " + target + " blocked: " + p_.request().host + " resolves to " +
                p_.request().upstream_ip + " (" + p_.request().guard_class +
                "), which the address guard refuses (allow it with --allow-address)\n";
    } else if (d.rule) {
        body += "cordon: connection to " + target + " blocked by rule `" + rule_text(d) + "` from " +
                rule_source(d) + " (" + v.reason + ")\n";
    } else {
        body += "cordon: connection to " + target + " blocked: no rule allows " + p_.request().host +
                " (hosts not in the allow list are denied) (" + v.reason + ")\n";
    }
    if (d.reason_text && p_.request().guard_class.empty())
        body += "cordon: reason: " + d.reason_text->text + "\n";
    send_error(403, "Forbidden", v.reason, body, true);
}

void HttpFrontEnd::reject(const Verdict& v) {
    if (v.status == 407) {
        p_.begin_closing();
        p_.send_to_client(proxy_answer(407, "", v.message, false, request_head_.method == "HEAD", {},
                                       "Proxy-Authenticate: " + std::string(kProxyAuthenticate) + "\r\n"));
        p_.finish_after_flush();
        return;
    }
    send_error(v.status, reason_phrase(v.status), v.reason, v.message, false);
}

void HttpFrontEnd::upstream_failure(int status, const std::string& error, const std::string& detail) {
    // Answers only: a failure before the upstream was reached was concluded (logged) already; one after it
    // (reset, timeout, a bad response) belongs to an allowed request and shows in the close line.
    drop_upstream();
    if (response_started_) {
        p_.close(error);
        return;
    }
    p_.set_error(error);
    send_error(status, reason_phrase(status), status == 504 ? "upstream-timeout" : "upstream-failure",
               "cordon: " + detail + "\n", true);
}

void HttpFrontEnd::connected() {
    p_.begin_exchange();
    const HttpHead& h = request_head_;
    std::string host;
    if (!h.header("host")) {
        bool v6 = p_.request().host.find(':') != std::string::npos;
        host = v6 ? "[" + p_.request().host + "]" : p_.request().host;
        if (p_.request().port != 80) host += ":" + std::to_string(p_.request().port);
    }
    HttpForwarder::Out out;
    out.path = p_.request().path;
    out.host = host;
    out.close = !h.keep_alive || p_.context().draining;
    if (!forwarder_->send_head(h, out, HttpForwarder::Response::Rewrite)) {
        upstream_failure(502, "upstream-reset",
                         std::string("upstream failed: ") + std::strerror(p_.upstream_error()));
        return;
    }
    request_parser_->resume();
    backpressure();
    if (!p_.closed() && !p_.input().empty()) process();
    // A body-less request completes at its head: let the parser say so.
    if (!p_.closed() && p_.phase() == Phase::Exchange && !request_done_ && p_.input().empty() && !h.chunked &&
        h.content_length.value_or(0) == 0) {
        auto result = request_parser_->feed(std::string_view());
        if (result.status == HttpParser::Status::MessageComplete) request_complete();
    }
}

void HttpFrontEnd::request_body(std::string_view data) {
    if (response_done_ && request_done_) return;
    if (!p_.has_upstream() || p_.phase() != Phase::Exchange) return;  // answered by the proxy: discard
    // A failed write shows as the upstream's error on the loop's next turn (on_upstream_error).
    (void)forwarder_->body(data);
}

void HttpFrontEnd::request_complete() {
    request_done_ = true;
    if (!p_.has_upstream() || response_done_) {
        next_request();
        return;
    }
    (void)forwarder_->end_body();
    backpressure();
}

void HttpFrontEnd::read_upstream() {
    long n = p_.read_upstream(p_.scratch(), p_.scratch_size());
    if (n == -1) return;
    if (p_.phase() != Phase::Exchange || response_done_) {
        // An idle kept-alive upstream spoke or closed: it can no longer be trusted for the next request.
        drop_upstream();
        return;
    }
    if (n == -2) {
        int error = p_.upstream_error();
        if (!on_upstream_error(error)) p_.close(std::string("upstream: ") + std::strerror(error));
        return;
    }
    if (n == 0 && !forwarder_->started()) {
        upstream_failure(502, "upstream-closed",
                         "upstream " + p_.request().host + " closed the connection without answering");
        return;
    }
    if (n == 0) {
        relayed(forwarder_->upstream_closed());
        return;
    }
    p_.touch();
    // Everything this read produces for the client goes out in one write.
    p_.cork_client();
    relayed(forwarder_->relay(std::string_view(p_.scratch(), static_cast<std::size_t>(n))));
    if (p_.closed()) return;
    p_.uncork_client();
    backpressure();
}

void HttpFrontEnd::relayed(HttpForwarder::Relayed r) {
    using Status = HttpForwarder::Status;
    response_started_ = forwarder_->started();
    switch (r.status) {
        case Status::More:
            return;
        case Status::Broken:
            p_.close(p_.client_error() ? std::string("client: ") + std::strerror(p_.client_error())
                                       : std::string("upstream: ") + std::strerror(p_.upstream_error()));
            return;
        case Status::Error:
        case Status::Refused:
            if (!response_started_) {
                upstream_failure(502, "bad-response", forwarder_->error());
            } else {
                p_.close(forwarder_->error());
            }
            return;
        case Status::Complete:
            break;
    }
    p_.uncork_client();
    if (!response_started_) {
        // 101 Switching Protocols (we never forward Upgrade, so it was not asked for).
        upstream_failure(502, "bad-response",
                         "upstream answered 101 (switched protocols) to a request that asked for no protocol "
                         "switch");
        return;
    }
    response_complete();
}

void HttpFrontEnd::response_complete() {
    response_done_ = true;
    if (forwarder_->close_after()) close_after_response_ = true;
    if (!forwarder_->upstream_reusable()) {
        upstream_reusable_ = false;
        drop_upstream();
    }
    if (!request_done_) {
        // The upstream answered before the request body ended: the two sides are out of step; finish here.
        close_after_response_ = true;
        request_done_ = true;
    }
    next_request();
}

void HttpFrontEnd::drop_upstream() {
    p_.drop_upstream();
    upstream_key_.clear();
    forwarder_->reset();
}

bool HttpFrontEnd::request_body_buffered() const {
    if (request_head_.chunked) return false;  // its end is known only by parsing it
    return p_.input().size() >= request_head_.content_length.value_or(0);
}

void HttpFrontEnd::next_request() {
    if (p_.closed()) return;
    if (close_after_response_ || p_.client_eof() || p_.context().draining) {
        p_.finish_after_flush();
        return;
    }
    p_.read_next_request();
    request_head_ = HttpHead{};
    request_done_ = response_done_ = response_started_ = false;
    request_parser_->resume();
    p_.touch();
    backpressure();
    if (!p_.input().empty()) process();
}

}  // namespace cordon::proxy
