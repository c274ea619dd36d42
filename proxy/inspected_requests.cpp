// The requests inside an inspected tunnel (inspected_requests.hpp).
#include "proxy/inspected_requests.hpp"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <variant>

#include "policy/syntax.hpp"
#include "proxy/auth.hpp"
#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/decision_log.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/request_rules.hpp"
#include "proxy/secret_scrub.hpp"
#include "proxy/tls_inspector.hpp"

namespace cordon::proxy {

namespace {

// `text` is the value of request header `header`. Returns the first secret whose sentinel it carries and
// which may not go to `host` (nothing is substituted then), or null after putting each secret's value in
// place of its sentinel, in a header that carries credentials only. Why only there: a server that reflects a
// request header (CORS middleware echoing Origin, an error page quoting User-Agent) would hand the real value
// back to the jail.
const Options::Secret* substitute_sentinels(const TlsInspector& tls, std::string& text,
                                            const std::string& host, std::string_view header) {
    for (const auto& s : tls.secrets())
        if (!s.sentinel.empty() && text.find(s.sentinel) != std::string::npos &&
            !TlsInspector::may_inject(s, host))
            return &s;
    for (const auto& s : tls.secrets()) {
        if (s.sentinel.empty() || !TlsInspector::carries_credentials(s, header)) continue;
        for (std::size_t at = text.find(s.sentinel); at != std::string::npos;
             at = text.find(s.sentinel, at + s.value.size()))
            text.replace(at, s.sentinel.size(), s.value);
    }
    return nullptr;
}

// The host a Host header names (`value`; its port, else `port`) and the policy's decision on it; nothing
// when the header names no host.
std::optional<std::pair<policy::HostPort, policy::Decision>> decide_named_host(const policy::Policy& policy,
                                                                               std::string_view value,
                                                                               std::uint16_t port) {
    auto parts = policy::split_host_port(value, policy::PortSpec::Optional);
    const auto* text = std::get_if<policy::HostPortText>(&parts);
    if (!text) return std::nullopt;
    auto target = policy::parse_target_host(text->host, text->port.value_or(port));
    const auto* named = std::get_if<policy::HostPort>(&target);
    if (!named) return std::nullopt;
    return std::make_pair(*named, policy.decide_connect(named->host, named->port));
}

}  // namespace

InspectedRequests::InspectedRequests(Pipeline& pipeline, ByteSink& client, ByteSink& upstream, bool plain)
    : p_(pipeline),
      client_(client),
      plain_(plain),
      request_parser_(HttpParser::Kind::Request, &request_sink_),
      forwarder_(client, upstream) {
    request_sink_.r = this;
    if (plain_ || !p_.context().tls) return;
    // Why responses of an inject host are rewritten: it holds the real value of a secret and may send it
    // back (a reflected header, an echo endpoint, an error page); the jail only ever sees the sentinel.
    std::vector<SecretForms> scrub;
    std::size_t keep = 0;
    for (const auto& s : p_.context().tls->secrets())
        if (!s.value.empty() && s.value.size() == s.sentinel.size() &&
            TlsInspector::may_inject(s, p_.request().host)) {
            scrub.emplace_back(s.value, s.sentinel);
            keep = std::max(keep, longest_secret_form(s.value.size()) - 1);
        }
    if (!scrub.empty()) forwarder_.scrub(std::move(scrub), keep);
}

InspectedRequests::~InspectedRequests() = default;

void InspectedRequests::finish(const std::string& error) {
    if (!p_.closed()) p_.close(error);
}

void InspectedRequests::upstream_failed(const std::string& error) {
    upstream_error_ = error;
    method_.clear();
    path_.clear();
    url_ = "https://" + p_.request().host +
           (p_.request().port == 443 ? "" : ":" + std::to_string(p_.request().port));
    rule_ = rule_text(p_.decision());
    source_ = rule_source(p_.decision());
    status_ = 502;
    concluded_ =
        false;  // concluded with the request that gets the 502, or when the client leaves without one
}

void InspectedRequests::answer_upstream_failure() {
    keep_alive_ = false;
    std::string body =
        "cordon: " + url_ + " failed TLS verification, nothing was sent to it: " + upstream_error_ + "\n";
    std::string out = proxy_answer(502, "upstream-failure", body, false, method_ == "HEAD");
    if (!client_.write(out)) return;
    answered_ = out.size();
    conclude(true, "allowed", 502, upstream_error_);
    request_ = Request::Skip;
    next_request();
}

void InspectedRequests::client_closed() {
    client_eof_ = true;
    if (idle() && client_.flush()) finish("");
}

// ---- requests

void InspectedRequests::read() {
    while (!p_.closed() && !in_.empty() && request_ != Request::AwaitResponse) {
        if (request_ == Request::Head) p_.head_begun();  // --header-timeout runs until the head is whole
        auto result = request_parser_.feed(in_);
        if (p_.closed()) return;
        switch (result.status) {
            case HttpParser::Status::Ok:
                in_.clear();
                break;
            case HttpParser::Status::HeadComplete: {
                in_.erase(0, result.consumed);
                p_.head_ended();
                request_head();
                if (p_.closed()) return;
                // A body-less request completes at its head: let the parser say so.
                auto end = request_parser_.feed(std::string_view());
                if (end.status == HttpParser::Status::MessageComplete) request_end();
                break;
            }
            case HttpParser::Status::MessageComplete:
                in_.erase(0, result.consumed);
                request_end();
                break;
            case HttpParser::Status::Error: {
                std::string why = request_parser_.error();
                keep_alive_ = false;
                if (request_ == Request::Body || request_ == Request::Skip) {
                    bad_body(why);
                    return;
                }
                forwarder_.drop_held();
                refuse(request_parser_.error_status(), "bad-request", "bad-request",
                       "cordon: bad request: " + why + "\n", "", "");
                if (!p_.closed() && client_.flush()) finish("bad-request: " + why);
                return;
            }
        }
        if (!p_.closed() && request_ == Request::Hold && scanned_.size() >= kBodyScan) release_hold();
    }
    if (!p_.closed() && client_eof_ && idle() && client_.flush()) finish("");
}

void InspectedRequests::bad_body(const std::string& why) {
    std::string error = "bad-request: " + why;
    if (request_ == Request::Skip) {  // a refused request's body: it has its line, and nothing was sent
        finish(error);
        return;
    }
    // Why `allow`: the head (and part of the body) reached the upstream, which holds the request; its line
    // says it was forwarded and how it ended. The client gets the 400 unless a response has begun.
    int status = forwarder_.started() ? forwarder_.status() : 502;
    if (forwarder_.sent_down() == 0) {
        status = request_parser_.error_status();
        std::string out = proxy_answer(status, "bad-request", "cordon: bad request: " + why + "\n", false,
                                       method_ == "HEAD");
        if (!client_.write(out)) return;
        answered_ = out.size();
    }
    conclude(true, "allowed", status, error);
    if (client_.flush()) finish(error);
}

void InspectedRequests::request_head() {
    const HttpHead& head = request_parser_.head();
    const std::string& host = p_.request().host;
    const std::uint16_t port = p_.request().port;
    const TlsInspector* tls = p_.context().tls.get();
    method_ = head.method;
    path_ = head.target;
    concluded_ = false;
    keep_alive_ = head.keep_alive && !p_.context().draining;
    status_ = 0;
    answered_ = 0;
    scanned_.clear();
    bool v6 = host.find(':') != std::string::npos;
    std::string authority =
        (v6 ? "[" + host + "]" : host) + (port == (plain_ ? 80 : 443) ? "" : ":" + std::to_string(port));
    url_ = (plain_ ? "http://" : "https://") + authority + path_;
    const policy::Decision& d = p_.decision();
    rule_ = rule_text(d);
    source_ = rule_source(d);
    reason_text_.clear();
    request_parser_.resume();
    if (!upstream_error_.empty()) {
        answer_upstream_failure();
        return;
    }

    if (path_.empty() || path_.front() != '/') {
        if (!(method_ == "OPTIONS" && path_ == "*")) {
            keep_alive_ = false;
            refuse(400, "bad-request", "bad-request",
                   "cordon: bad request: inside a tunnel the target is a path (origin-form), got '" +
                       path_.substr(0, 64) + "'\n",
                   "", "");
            return;
        }
    }
    // Why a request must be HTTP/1.x and name its host here: an HTTP/0.9 line or a head without Host is read
    // differently by servers behind a shared front (default host, another protocol), and the Host check
    // below could not hold it to the tunnel's host.
    if (head.version_major != 1 || !head.header("host")) {
        keep_alive_ = false;
        refuse(400, "bad-request", "bad-request",
               std::string("cordon: bad request: ") +
                   (head.version_major != 1 ? "only HTTP/1.0 and HTTP/1.1 are read inside a tunnel"
                                            : "no Host header") +
                   "\n",
               "", "");
        return;
    }
    if (head.upgrade) {
        keep_alive_ = false;
        refuse(501, "bad-request", "bad-request",
               "cordon: Upgrade is not supported inside an inspected connection\n", "", "");
        return;
    }
    // The Host must name the host the connection was decided for (srt's requireHostMatch): a shared front
    // (a CDN) would otherwise route the request to a host the policy never saw.
    if (auto h = head.header("host"); h && !host_header_names(*h, host, port)) {
        std::string body = "cordon: this connection is for " + authority + "; the Host header names '" +
                           std::string(*h) + "'\n";
        // Why a host the policy refuses is named in the refusal, with its deny rule and reason: a request
        // through an allowed host's tunnel to another host is an attempt to reach that host (domain
        // fronting), and the user should learn the author's reason for refusing it as for a CONNECT to it.
        // It counts in the end-of-run summary under that host. The answer stays 421 whatever the policy
        // says of it: this connection never carries it.
        auto named = p_.context().policy ? decide_named_host(*p_.context().policy, *h, port) : std::nullopt;
        if (named && !named->second.allowed()) {
            const auto& [target, refusal] = *named;
            const std::string key = target.host + ":" + std::to_string(target.port);
            reason_text_ = reason_text(refusal);
            body += "cordon: the policy refuses " + key + " too (" +
                    std::string(policy::to_string(refusal.reason)) +
                    (refusal.rule ? " by `" + rule_text(refusal) + "` from " + rule_source(refusal)
                                  : std::string()) +
                    ")\n";
            if (!reason_text_.empty()) body += "cordon: reason: " + reason_text_ + "\n";
            auto& e = count_refused(p_.context(), key, "(other hosts)");
            e.why = refusal.reason == policy::Reason::BlockedByDenylist ? RefusalSummary::Why::DeniedByRule
                                                                        : RefusalSummary::Why::NotAllowed;
            e.rule = rule_text(refusal);
            e.source = rule_source(refusal);
            e.reason_text = reason_text_;
            e.error.clear();
        }
        refuse(421, "misdirected-request", "misdirected-request", body, "", "");
        return;
    }
    // Request rules (deny wins; a host with rules and no matching one is denied).
    auto ruling = p_.decide_request(method_, path_, url_);
    if (!ruling.rule.empty()) {
        rule_ = ruling.rule;
        source_ = ruling.source;
    }
    if (!ruling.allowed) {
        if (ruling.status == 400) keep_alive_ = false;
        reason_text_ = ruling.reason_text;
        if (ruling.status == 403)
            count_refused_request(p_.context(), host, port, ruling.rule, ruling.source, ruling.reason_text);
        refuse(ruling.status, ruling.reason, ruling.reason, ruling.message, ruling.rule, ruling.source);
        return;
    }
    // Secrets: never towards a host that may not have them. The refusal names the variable, never a value.
    // Why no real value goes into plain HTTP, even to an inject host: anyone on the path would read it.
    if (tls && plain_) {
        const Options::Secret* carried = tls->sentinel_in(path_);
        for (const auto& [name, value] : head.headers)
            if (!carried) carried = tls->sentinel_in(value);
        if (carried) {
            refuse_secret("a plain-HTTP request (no TLS)", *carried);
            return;
        }
    }
    if (const auto* s = tls ? tls->sentinel_in(path_) : nullptr; s && !TlsInspector::may_inject(*s, host)) {
        refuse_secret("the request URL", *s);
        return;
    }
    // The body's first kBodyScan bytes are scanned for sentinels before anything is sent.
    bool hold = (head.chunked || head.content_length.value_or(0) > 0) && tls && !tls->secrets().empty();
    // Why cordon answers `100 Continue` itself while it holds the head: a client that sent
    // `Expect: 100-continue` sends no body before a 100 or its own timeout (curl's is 1 s, some clients wait
    // for ever), and the upstream that would answer it has not seen the head. The Expect header is dropped
    // from the forwarded head then: the body comes anyway, and the client gets one 100, not two.
    bool answer_continue = false;
    if (auto expect = head.header("expect"); hold && expect && iequals(*expect, "100-continue") &&
                                             head.version_major == 1 && head.version_minor >= 1)
        answer_continue = true;
    HttpHead out = head;
    if (tls) {
        auto tokens = connection_tokens(head);
        for (auto& [name, value] : out.headers) {
            if (is_hop_by_hop(name, tokens)) continue;  // never forwarded
            // Basic credentials carry a token base64-encoded (git over HTTPS: user:TOKEN): look inside them
            // too.
            if (iequals(name, "authorization") && value.size() > 6 &&
                iequals(std::string_view(value).substr(0, 6), "basic ")) {
                if (auto decoded = base64_decode(std::string_view(value).substr(6))) {
                    std::string plain = *decoded;
                    const auto* refused = substitute_sentinels(*tls, plain, host, name);
                    if (!refused && plain != *decoded) value = "Basic " + base64_encode(plain);
                    ::explicit_bzero(decoded->data(), decoded->size());
                    ::explicit_bzero(plain.data(), plain.size());
                    if (refused) {
                        refuse_secret("header " + name, *refused);
                        return;
                    }
                }
            }
            // Why credential headers only: a body or URL is data the program chose to send, and a server may
            // reflect any other header.
            if (const auto* refused = substitute_sentinels(*tls, value, host, name)) {
                refuse_secret("header " + name, *refused);
                return;
            }
        }
    }
    HttpForwarder::Out how;
    how.path = path_;
    how.close = !keep_alive_;
    how.drop_expect = answer_continue;
    if (hold) forwarder_.hold();
    bool sent = forwarder_.send_head(out, how, HttpForwarder::Response::AsSent);
    for (auto& [name, value] : out.headers)
        ::explicit_bzero(value.data(), value.size());
    if (!sent) return;
    if (hold) {
        request_ = Request::Hold;
        if (answer_continue) client_.write("HTTP/1.1 100 Continue\r\n\r\n");
        return;
    }
    request_ = Request::Body;
}

void InspectedRequests::body(std::string_view data) {
    switch (request_) {
        case Request::Body:
            forwarder_.body(data);
            return;
        case Request::Hold:
            scanned_.append(data.substr(0, kBodyScan - std::min(kBodyScan, scanned_.size())));
            forwarder_.body(data);  // held until release_hold()
            return;
        default:
            return;  // Skip: a refused request's body
    }
}

void InspectedRequests::release_hold() {
    const auto* s = p_.context().tls->sentinel_in(scanned_);
    std::string().swap(scanned_);
    if (s && !TlsInspector::may_inject(*s, p_.request().host)) {
        forwarder_.drop_held();
        refuse_secret("the request body", *s);
        return;
    }
    request_ = Request::Body;
    forwarder_.release();
}

void InspectedRequests::request_end() {
    if (request_ == Request::Hold) release_hold();
    if (p_.closed()) return;
    if (request_ == Request::Skip) {
        next_request();
        return;
    }
    if (!forwarder_.end_body()) return;
    request_ = Request::AwaitResponse;
}

void InspectedRequests::refuse_secret(const std::string& where, const Options::Secret& secret) {
    refuse(403, "blocked-by-secret-scope", "blocked-by-secret-scope",
           "cordon: " + where + " carries the sentinel of " + secret.name +
               ", which may go to its injectHosts only\n",
           "", "");
}

void InspectedRequests::refuse(int status, const std::string& x_proxy_error, const std::string& reason,
                               const std::string& body, const std::string& rule, const std::string& source) {
    rule_ = rule;
    source_ = source;
    client_.write(proxy_answer(status, x_proxy_error, body, keep_alive_, method_ == "HEAD"));
    conclude(false, reason, status, "");
    // The connection stays usable: the refused request's body is read and dropped (Skip), then the next
    // request once the parser says this one is complete.
    request_ = Request::Skip;
    if (!keep_alive_) next_request();
}

// ---- responses

bool InspectedRequests::upstream_bytes(std::string_view data) {
    if (data.empty()) return !p_.closed();
    if (request_ != Request::AwaitResponse && request_ != Request::Body && request_ != Request::Hold) {
        finish("upstream spoke out of turn");  // no request in flight
        return false;
    }
    auto relayed = forwarder_.relay(data);
    switch (relayed.status) {
        case HttpForwarder::Status::More:
            return !p_.closed();
        case HttpForwarder::Status::Broken:
            return false;  // the sink closed the connection
        case HttpForwarder::Status::Error:
            finish(forwarder_.error());
            return false;
        case HttpForwarder::Status::Refused: {
            // An inject host that encodes its answer anyway sends bytes the scrubber cannot read: none of
            // them pass, the client gets a 502 saying why.
            status_ = 502;
            std::string body =
                "cordon: " + url_ + " answered with Content-Encoding " + forwarder_.refusal() +
                ", in which cordon cannot replace the real value of a secret; nothing of it was "
                "passed on\n";
            client_.write(proxy_answer(502, "upstream-failure", body, false, method_ == "HEAD"));
            client_.flush();
            finish("upstream-content-encoding: " + forwarder_.refusal());
            return false;
        }
        case HttpForwarder::Status::Complete:
            break;
    }
    response_complete();
    return !p_.closed();
}

void InspectedRequests::upstream_closed() {
    if (request_ == Request::AwaitResponse && forwarder_.started()) {
        auto relayed = forwarder_.upstream_closed();
        if (relayed.status == HttpForwarder::Status::Complete) {
            keep_alive_ = false;
            response_complete();
            return;
        }
        if (relayed.status == HttpForwarder::Status::Broken) return;
    }
    finish(request_ == Request::AwaitResponse ? "upstream closed mid-response"
           : request_ == Request::Head        ? ""
                                              : "upstream closed mid-request");
}

void InspectedRequests::response_complete() {
    if (forwarder_.close_after() || !forwarder_.upstream_reusable()) keep_alive_ = false;
    conclude(true, "allowed", forwarder_.status(), "");
    if (request_ != Request::AwaitResponse) keep_alive_ = false;  // answered before the body ended
    next_request();
}

void InspectedRequests::next_request() {
    if (!client_.flush()) return;
    if (!keep_alive_ || client_eof_ || p_.context().draining) {
        finish("");
        return;
    }
    request_ = Request::Head;
    method_.clear();
    request_parser_.resume();
    read();
}

void InspectedRequests::end_in_flight(const std::string& error) {
    if (concluded_) return;
    if (!upstream_error_.empty()) {  // the client left before asking anything
        conclude(true, "allowed", 502, upstream_error_);
        return;
    }
    if (request_ != Request::Body && request_ != Request::Hold && request_ != Request::AwaitResponse) return;
    int status = status_ ? status_ : forwarder_.started() ? forwarder_.status() : 502;
    conclude(true, "allowed", status, error.empty() ? "closed mid-request" : error);
}

void InspectedRequests::conclude(bool allowed, const std::string& reason, int status,
                                 const std::string& error) {
    concluded_ = true;
    Pipeline::Exchange x;
    x.plain = plain_;
    x.method = method_;
    x.path = path_;
    x.url = url_;
    x.allowed = allowed;
    x.rule = rule_;
    x.source = source_;
    x.reason = reason;
    if (!allowed) x.reason_text = reason_text_;
    x.error = error;
    x.status = status;
    x.request_bytes = allowed ? forwarder_.sent_up() : 0;
    x.response_bytes = answered_ ? answered_ : allowed ? forwarder_.sent_down() : 0;
    p_.conclude(x);
}

}  // namespace cordon::proxy
