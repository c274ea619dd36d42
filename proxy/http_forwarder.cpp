// The one HTTP/1.1 forwarder (http_forwarder.hpp).
#include "proxy/http_forwarder.hpp"

#include <algorithm>
#include <cstdio>

namespace cordon::proxy {

namespace {

void append_chunk(std::string& out, std::string_view data) {
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    out += size;
    out += data;
    out += "\r\n";
}

// A message's end-to-end headers, then its framing, which is the proxy's own: chunked or the Content-Length
// it parsed, whatever headers the sender listed in Connection.
void append_forwarded_headers(std::string& out, const HttpHead& head, bool chunked, bool drop_expect = false,
                              bool drop_accept_encoding = false) {
    auto tokens = connection_tokens(head);
    for (const auto& [name, value] : head.headers) {
        if (is_hop_by_hop(name, tokens) || iequals(name, "content-length")) continue;
        if (drop_expect && iequals(name, "expect")) continue;
        if (drop_accept_encoding && iequals(name, "accept-encoding")) continue;
        out += name;
        out += ": ";
        out += value;
        out += "\r\n";
    }
    if (chunked)
        out += "Transfer-Encoding: chunked\r\n";
    else if (head.content_length)
        out += "Content-Length: " + std::to_string(*head.content_length) + "\r\n";
}

}  // namespace

HttpForwarder::HttpForwarder(ByteSink& client, ByteSink& upstream) : client_(client), upstream_(upstream) {
    sink_.f = this;
}

HttpForwarder::~HttpForwarder() = default;

void HttpForwarder::scrub(std::vector<SecretForms> secrets, std::size_t keep) {
    scrub_ = std::move(secrets);
    scrub_keep_ = keep;
}

void HttpForwarder::reset() {
    parser_.reset();
    std::string().swap(head_);
    std::string().swap(carry_);
    std::string().swap(held_);
    holding_ = false;
}

bool HttpForwarder::up(std::string_view data) {
    if (holding_) {
        held_.append(data);
        return true;
    }
    if (broken_) return false;
    up_ += data.size();
    if (!upstream_.write(data)) broken_ = true;
    return !broken_;
}

bool HttpForwarder::down(std::string_view data) {
    if (broken_) return false;
    down_ += data.size();
    if (!client_.write(data)) broken_ = true;
    return !broken_;
}

// ---- the request

bool HttpForwarder::send_head(const HttpHead& head, const Out& out, Response response) {
    if (!parser_) parser_ = std::make_unique<HttpParser>(HttpParser::Kind::Response, &sink_);
    parser_->set_no_body(head.method == "HEAD");
    response_ = scrubbing() ? Response::Rewrite : response;
    head_request_ = head.method == "HEAD";
    client_11_ = head.version_major == 1 && head.version_minor >= 1;
    close_after_ = upstream_done_ = out.close;
    started_ = body_ = refused_ = broken_ = head_seen_ = false;
    head_.clear();
    status_ = 0;
    error_.clear();
    refusal_.clear();
    carry_.clear();
    up_ = down_ = 0;
    chunk_request_ = head.chunked;

    std::string line;
    line.reserve(512);
    line += head.method;
    line += ' ';
    line += out.path;
    // Why the client's version when the response passes as sent: an HTTP/1.0 client cannot read the chunked
    // answer an upstream may give a 1.1 request. A rewritten response is framed for the client's version.
    if (response_ == Response::AsSent)
        line += " HTTP/1." + std::to_string(head.version_minor) + "\r\n";
    else
        line += " HTTP/1.1\r\n";
    if (!out.host.empty() && !head.header("host")) {
        line += "Host: ";
        line += out.host;
        line += "\r\n";
    }
    append_forwarded_headers(line, head, chunk_request_, out.drop_expect, scrubbing());
    // Why an inject host is asked for identity: the scrubber reads the bytes as sent, and a compressed body
    // (gzip, br) would carry the real value past it, for the client to inflate.
    if (scrubbing()) line += "Accept-Encoding: identity\r\n";
    if (out.close)
        line += "Connection: close\r\n";
    else if (response_ == Response::AsSent && !client_11_ && head.keep_alive)
        line += "Connection: keep-alive\r\n";  // the answer passes as sent: it must say keep-alive itself
    line += "\r\n";
    return up(line);
}

bool HttpForwarder::release() {
    holding_ = false;
    std::string held;
    held.swap(held_);
    if (held.empty() || broken_) return !broken_;
    up_ += held.size();
    if (!upstream_.write(held)) broken_ = true;
    return !broken_;
}

void HttpForwarder::drop_held() {
    holding_ = false;
    std::string().swap(held_);
}

bool HttpForwarder::body(std::string_view data) {
    if (data.empty()) return !broken_;
    if (!chunk_request_) return up(data);
    std::string framed;
    framed.reserve(data.size() + 16);
    append_chunk(framed, data);
    return up(framed);
}

bool HttpForwarder::end_body() {
    return chunk_request_ ? up("0\r\n\r\n") : !broken_;
}

// ---- the response

HttpForwarder::Relayed HttpForwarder::relay(std::string_view bytes) {
    if (!parser_) {
        error_ = "upstream spoke before any request";
        return {Status::Error};
    }
    while (!bytes.empty()) {
        auto result = parser_->feed(bytes);
        if (broken_) return {Status::Broken};
        if (refused_) return {Status::Refused};
        if (result.status == HttpParser::Status::Error) {
            error_ = "bad response from upstream: " + parser_->error();
            return {Status::Error};
        }
        std::size_t used = result.status == HttpParser::Status::Ok ? bytes.size() : result.consumed;
        if (response_ == Response::AsSent && !pass(bytes.substr(0, used))) return {Status::Broken};
        bytes.remove_prefix(used);
        if (result.status != HttpParser::Status::MessageComplete) continue;
        head_seen_ = false;  // the next message's head (after an interim response) is held again
        if (parser_->interim()) {
            parser_->resume();
            continue;
        }
        return complete(!bytes.empty());
    }
    return {Status::More};
}

bool HttpForwarder::pass(std::string_view bytes) {
    // Why a head is held until it parsed: bytes of a head that turns out malformed or over the limit would
    // reach the client as the start of an answer the proxy then cuts off. Bounded by HttpParser::kMaxHead.
    if (!head_seen_) {
        head_.append(bytes);
        return true;
    }
    if (!head_.empty()) {
        std::string head;
        head.swap(head_);
        if (!down(head)) return false;
    }
    return down(bytes);
}

HttpForwarder::Relayed HttpForwarder::upstream_closed() {
    if (started_ && parser_ && parser_->finish()) {
        if (broken_) return {Status::Broken};
        upstream_done_ = true;
        return complete(false);
    }
    upstream_done_ = true;
    error_ = started_ ? "upstream closed mid-response" : "upstream closed without answering";
    return {Status::Error};
}

HttpForwarder::Relayed HttpForwarder::complete(bool trailing) {
    end_response_body();
    if (broken_) return {Status::Broken};
    if (!parser_->should_keep_alive() || trailing) upstream_done_ = true;
    parser_->resume();
    return {Status::Complete, trailing};
}

void HttpForwarder::response_head(const HttpHead& head) {
    status_ = head.status;
    head_seen_ = true;
    if (head.status < 200) {
        if (response_ == Response::AsSent) return;  // relayed with the bytes
        if (head.status == 101 || !client_11_)
            return;  // no upgrades (Upgrade is hop-by-hop); 1.0 knows no 1xx
        std::string out = "HTTP/1.1 " + std::to_string(head.status) + " " + head.reason + "\r\n";
        for (const auto& [name, value] : head.headers)
            out += name + ": " + value + "\r\n";
        out += "\r\n";
        for (const auto& s : scrub_)
            s.scrub(out);
        down(out);
        return;
    }
    started_ = true;
    if (response_ == Response::AsSent) return;
    // An inject host that encodes its answer anyway (it ignored `Accept-Encoding: identity`) sends bytes the
    // scrubber cannot read: none of them pass.
    if (auto encoding = head.header("content-encoding");
        scrubbing() && encoding && !iequals(*encoding, "identity")) {
        refused_ = true;
        // Why scrubbed whole before it is cut: the value goes into the client's 502 and the audit line, and
        // an inject host may have put the real value there; a cut value would no longer match.
        refusal_ = std::string(*encoding);
        for (const auto& s : scrub_)
            s.scrub(refusal_);
        refusal_.resize(std::min<std::size_t>(refusal_.size(), 64));
        return;
    }
    bool no_body = head_request_ || head.status == 204 || head.status == 304;
    chunk_response_ = false;
    if (!no_body && (head.chunked || !head.content_length)) {
        // Chunked, or delimited by the upstream closing: framed as chunks for a 1.1 client so its connection
        // can stay; a 1.0 client reads to the close.
        if (client_11_)
            chunk_response_ = true;
        else
            close_after_ = true;
    }
    std::string out;
    out.reserve(512);
    out += "HTTP/1.1 " + std::to_string(head.status) + " " + head.reason + "\r\n";
    // (For HEAD, 204 and 304 a Content-Length only informs.)
    append_forwarded_headers(out, head, chunk_response_);
    if (close_after_)
        out += "Connection: close\r\n";
    else if (!client_11_)
        out += "Connection: keep-alive\r\n";
    out += "\r\n";
    for (const auto& s : scrub_)
        s.scrub(out);
    body_ = !no_body;
    down(out);
}

void HttpForwarder::response_body(std::string_view data) {
    if (response_ == Response::AsSent || !body_ || refused_) return;
    if (scrub_.empty()) {
        body_down(data);
        return;
    }
    // The body is written again from what the parser de-chunked, so that a value split across chunks is
    // found; the bytes that may be the start of a value whose rest has not arrived are kept back.
    carry_.append(data);
    for (const auto& s : scrub_)
        s.scrub(carry_);
    if (carry_.size() <= scrub_keep_) return;
    std::size_t emit = carry_.size() - scrub_keep_;
    body_down(std::string_view(carry_).substr(0, emit));
    carry_.erase(0, emit);
}

void HttpForwarder::end_response_body() {
    if (!body_) return;
    body_ = false;
    if (!carry_.empty()) body_down(carry_);
    std::string().swap(carry_);
    if (chunk_response_) down("0\r\n\r\n");  // trailers are dropped
}

void HttpForwarder::body_down(std::string_view data) {
    if (data.empty()) return;  // an empty chunk would end the body
    if (!chunk_response_) {
        down(data);
        return;
    }
    std::string framed;
    framed.reserve(data.size() + 16);
    append_chunk(framed, data);
    down(framed);
}

}  // namespace cordon::proxy
