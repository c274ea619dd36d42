// The termination stage (inspect.hpp).
#include "proxy/inspect.hpp"

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <strings.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "policy/inspection.hpp"
#include "policy/syntax.hpp"
#include "proxy/auth.hpp"
#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/request_rules.hpp"
#include "proxy/secret_scrub.hpp"
#include "proxy/tls_inspector.hpp"

namespace cordon::proxy {

namespace {

constexpr std::size_t kHighWater = 1024 * 1024;  // stop reading one side while the other has this much queued
constexpr std::size_t kBodyScan = 64 * 1024;     // how much of a request body is scanned for sentinels
constexpr std::size_t kMaxPending = 256 * 1024;  // client bytes held while a request is answered

bool is_ip_literal(const std::string& host) {
    unsigned char buf[16];
    return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string openssl_reason() {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "handshake failed";
    const char* r = ERR_reason_error_string(e);
    return r ? r : "handshake failed";
}

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

// Every real value of `secrets` in `text`, in every form scrub_secret() knows, becomes its sentinel in the
// same form (the same length: framing stays valid).
void unsubstitute(const std::vector<SecretForms>& secrets, std::string& text) {
    for (const auto& s : secrets)
        s.scrub(text);
}

}  // namespace

InspectedTunnel::InspectedTunnel(Pipeline& pipeline) : p_(pipeline) {
    request_sink_.t = this;
    response_sink_.t = this;
}

InspectedTunnel::~InspectedTunnel() {
    SSL_free(up_);
    SSL_free(down_);
}

void InspectedTunnel::start() {
    p_.client_socket().set_owner(this);
    p_.upstream_socket().set_owner(this);
    client_cipher_.swap(p_.input());
    std::string().swap(p_.input());
    p_.upstream_socket().want_read(false);
    p_.client_socket().want_read(true);
    if (!client_cipher_.empty()) peek();
}

// ---- the client's first bytes: TLS or not

void InspectedTunnel::peek() {
    // A TLS record of type handshake (22) opens every TLS connection; anything else is another protocol.
    if (static_cast<unsigned char>(client_cipher_[0]) != 0x16) {
        opaque();
        return;
    }
    begin_upstream();
}

void InspectedTunnel::opaque() {
    const auto& inspection = *p_.context().policy->network().inspection;
    if (inspection.refuse_opaque_tunnels) {
        finish("opaque-tunnel-refused: the client did not start TLS to an inspected host");
        return;
    }
    // Why plain bytes to a host with request rules are read as HTTP rather than relayed: the rules are the
    // user's word on that host whatever the scheme, and `http://` to it (through a CONNECT tunnel, SOCKS5 or
    // the transparent front-end) would otherwise reach every path they deny. What does not parse as HTTP
    // gets a 400 and the connection closes.
    if (has_request_rules(inspection, p_.request().host, p_.request().port)) {
        read_plain_http();
        return;
    }
    // Not TLS: the pipeline's splice relay takes the tunnel (start_tunnel sees declined()).
    declined_ = true;
    state_ = State::Done;
    p_.input().swap(client_cipher_);
    p_.take_back_sockets();
    p_.start_tunnel();
}

void InspectedTunnel::read_plain_http() {
    plain_ = true;
    state_ = State::Open;
    req_in_.swap(client_cipher_);
    std::string().swap(client_cipher_);
    request_parser_ = std::make_unique<HttpParser>(HttpParser::Kind::Request, &request_sink_);
    update_interest();
    process_requests();
    if (!p_.closed()) flush();
}

// ---- the upstream's handshake, first: no leaf before the upstream proved itself

void InspectedTunnel::begin_upstream() {
    state_ = State::UpstreamHandshake;
    up_ = SSL_new(p_.context().tls->upstream_side());
    if (!up_) {
        finish("tls: " + openssl_reason());
        return;
    }
    SSL_set_bio(up_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_connect_state(up_);
    const std::string& host = p_.request().host;
    if (is_ip_literal(host)) {
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(up_), host.c_str());
    } else {
        SSL_ctrl(up_, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,
                 const_cast<char*>(host.c_str()));
        SSL_set1_host(up_, host.c_str());
        // A certificate for *.example.com covers a.example.com only, never a.b.example.com.
        SSL_set_hostflags(up_, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    }
    static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
    SSL_set_alpn_protos(up_, kAlpn, sizeof kAlpn);
    update_interest();
    continue_upstream();
}

void InspectedTunnel::continue_upstream() {
    int r = SSL_do_handshake(up_);
    if (!flush()) return;
    if (r == 1) {
        begin_client();
        return;
    }
    int e = SSL_get_error(up_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    long verify = SSL_get_verify_result(up_);
    if (verify != X509_V_OK)
        upstream_refused(std::string("upstream-certificate: ") + X509_verify_cert_error_string(verify));
    else
        upstream_refused("upstream-tls: " + openssl_reason());
}

void InspectedTunnel::upstream_refused(const std::string& error) {
    // Why the client still gets cordon's TLS: a bare alert tells an agent or a person nothing, while a 502
    // whose body names the reason (expired, wrong name, unknown CA) is read. The leaf is for the name the
    // policy allowed, and no byte of the upstream that failed ever passes: its TLS is dropped and its socket
    // no longer read. The one request answered is that 502, logged with the error; then the connection
    // closes.
    upstream_error_ = error;
    SSL_free(up_);
    up_ = nullptr;
    p_.upstream_socket().want_read(false);
    Verdict v{Verdict::Kind::Failed, "allowed", error, 502, ""};
    p_.count_refusal(v);
    method_.clear();
    path_.clear();
    url_ = "https://" + p_.request().host +
           (p_.request().port == 443 ? "" : ":" + std::to_string(p_.request().port));
    rule_ = rule_text(p_.decision());
    source_ = rule_source(p_.decision());
    response_status_ = 502;
    logged_ = false;  // logged with the request that gets the 502, or when the client leaves without one
    begin_client();
}

void InspectedTunnel::answer_upstream_failure() {
    keep_alive_ = false;
    std::string body =
        "cordon: " + url_ + " failed TLS verification, nothing was sent to it: " + upstream_error_ + "\n";
    std::string out = proxy_answer(502, "upstream-failure", body, false, method_ == "HEAD");
    if (!write_client(out)) return;
    response_bytes_ = out.size();
    log_request("allow", "allowed", 502, upstream_error_);
    request_ = Request::Skip;
    next_request();
}

// ---- the client's handshake, with a leaf for the host

void InspectedTunnel::begin_client() {
    auto leaf = p_.context().tls->leaves().get(p_.request().host);
    if (auto* error = std::get_if<std::string>(&leaf)) {
        finish("tls: " + *error);
        return;
    }
    const auto& l = *std::get<std::shared_ptr<const certs::Leaf>>(leaf);
    // Why responses of an inject host are rewritten: it holds the real value of a secret and may send it
    // back (a reflected header, an echo endpoint, an error page); the jail only ever sees the sentinel.
    for (const auto& s : p_.context().tls->secrets())
        if (!s.value.empty() && s.value.size() == s.sentinel.size() &&
            TlsInspector::may_inject(s, p_.request().host)) {
            scrub_.emplace_back(s.value, s.sentinel);
            scrub_keep_ = std::max(scrub_keep_, longest_secret_form(s.value.size()) - 1);
        }
    p_.context().metrics.tls_leaves_minted = p_.context().tls->leaves().minted();
    state_ = State::ClientHandshake;
    down_ = SSL_new(p_.context().tls->client_side());
    if (!down_ || SSL_use_certificate(down_, l.cert) != 1 || SSL_use_PrivateKey(down_, l.key) != 1) {
        finish("tls: " + openssl_reason());
        return;
    }
    SSL_set_bio(down_, BIO_new(BIO_s_mem()), BIO_new(BIO_s_mem()));
    SSL_set_accept_state(down_);
    BIO_write(SSL_get_rbio(down_), client_cipher_.data(), static_cast<int>(client_cipher_.size()));
    std::string().swap(client_cipher_);
    update_interest();
    continue_client();
}

void InspectedTunnel::continue_client() {
    int r = SSL_do_handshake(down_);
    if (!flush()) return;
    if (r == 1) {
        state_ = State::Open;
        request_parser_ = std::make_unique<HttpParser>(HttpParser::Kind::Request, &request_sink_);
        read_client_plaintext();
        return;
    }
    int e = SSL_get_error(down_, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return;
    finish("client-tls: " + openssl_reason());
}

// ---- socket events

void InspectedTunnel::on_readable(Socket& socket) {
    if (p_.closed()) return;
    bool client = &socket == &p_.client_socket();
    char* buf = p_.scratch();
    long n = socket.read(buf, p_.scratch_size());
    if (n == -1) return;
    if (!client && !upstream_error_.empty()) {  // the upstream that failed: nothing it sends matters
        socket.want_read(false);
        return;
    }
    if (n == -2) {
        finish(std::string(client ? "client: " : "upstream: ") + std::strerror(socket.error()));
        return;
    }
    p_.touch();
    if (n == 0) {
        socket.want_read(false);
        if (client) {
            client_eof_ = true;
            // Between requests (or before TLS): nothing more will come.
            if (state_ != State::Open || (request_ == Request::Head && req_in_.empty())) finish("");
            return;
        }
        if (state_ == State::UpstreamHandshake) {
            upstream_refused("upstream-tls: the upstream closed during the handshake");
            return;
        }
        if (response_parser_ && response_parser_->finish() && request_ == Request::AwaitResponse) {
            keep_alive_ = false;
            response_complete();
            return;
        }
        finish(request_ == Request::AwaitResponse ? "upstream closed mid-response"
               : request_ == Request::Head        ? ""
                                                  : "upstream closed mid-request");
        return;
    }
    std::string_view data(buf, static_cast<std::size_t>(n));
    if (client) {
        switch (state_) {
            case State::Peek:
                client_cipher_.append(data);
                peek();
                return;
            case State::UpstreamHandshake:
                client_cipher_.append(data);  // the rest of a long ClientHello; bounded by update_interest
                update_interest();
                return;
            case State::ClientHandshake:
                BIO_write(SSL_get_rbio(down_), data.data(), static_cast<int>(data.size()));
                continue_client();
                return;
            case State::Open:
                if (plain_) {
                    req_in_.append(data);
                    process_requests();
                    if (!p_.closed()) flush();
                    return;
                }
                BIO_write(SSL_get_rbio(down_), data.data(), static_cast<int>(data.size()));
                read_client_plaintext();
                return;
            case State::Done:
                return;
        }
    }
    if (plain_) {
        if (upstream_plaintext(data)) flush();
        return;
    }
    if (!up_) return;
    BIO_write(SSL_get_rbio(up_), data.data(), static_cast<int>(data.size()));
    if (state_ == State::UpstreamHandshake)
        continue_upstream();
    else if (state_ == State::Open)
        read_upstream_plaintext();
}

void InspectedTunnel::on_drained(Socket&) {
    if (p_.closed() || state_ == State::Done) return;
    update_interest();
}

void InspectedTunnel::on_error(Socket& socket, int error) {
    if (p_.closed()) return;
    bool client = &socket == &p_.client_socket();
    if (!client && !upstream_error_.empty()) return;  // the upstream that failed
    finish(std::string(client ? "client: " : "upstream: ") + std::strerror(error));
}

void InspectedTunnel::update_interest() {
    if (p_.closed() || state_ == State::Done) return;
    std::size_t client_q = p_.client_socket().queued(), upstream_q = p_.upstream_socket().queued();
    bool read_client = !client_eof_ && upstream_q < kHighWater;
    if (state_ == State::UpstreamHandshake) read_client = client_cipher_.size() < kMaxPending;
    if (state_ == State::Open) read_client = read_client && req_in_.size() < kMaxPending;
    p_.client_socket().want_read(read_client);
    p_.upstream_socket().want_read(state_ != State::Peek && upstream_error_.empty() && client_q < kHighWater);
}

bool InspectedTunnel::flush() {
    if (p_.closed()) return false;
    for (bool client : {true, false}) {
        SSL* ssl = client ? down_ : up_;
        if (!ssl) continue;
        Socket* socket = client ? &p_.client_socket() : &p_.upstream_socket();
        // Everything TLS wrote, in one send from the memory BIO's own buffer (then emptied): no copy and no
        // syscall per record on the way out.
        BIO* out = SSL_get_wbio(ssl);
        char* data = nullptr;
        long n = BIO_get_mem_data(out, &data);
        if (n <= 0) continue;
        bool sent = socket->send(std::string_view(data, static_cast<std::size_t>(n)));
        (void)BIO_reset(out);
        if (!sent) {
            finish(std::string(client ? "client: " : "upstream: ") + std::strerror(socket->error()));
            return false;
        }
    }
    update_interest();
    return true;
}

bool InspectedTunnel::write_client(std::string_view data) {
    if (!(plain_ ? write_plain(p_.client_socket(), data, "client: ")
                 : write_all(down_, data, "client-tls: ")))
        return false;
    bytes_down_ += data.size();
    return true;
}

bool InspectedTunnel::write_upstream(std::string_view data) {
    if (!(plain_ ? write_plain(p_.upstream_socket(), data, "upstream: ")
                 : write_all(up_, data, "upstream-tls: ")))
        return false;
    bytes_up_ += data.size();
    request_bytes_ += data.size();
    return true;
}

bool InspectedTunnel::write_plain(Socket& socket, std::string_view data, const char* side) {
    if (p_.closed()) return false;
    if (!socket.send(data)) {
        finish(side + std::string(std::strerror(socket.error())));
        return false;
    }
    return true;
}

bool InspectedTunnel::write_all(SSL* ssl, std::string_view data, const char* side) {
    if (p_.closed()) return false;
    // Why a loop: SSL_write may take less than it was given (one record at a time), and every byte not taken
    // here would be lost from the stream. A dropped piece of a request head turns what follows (its body,
    // chosen by the client) into the next request the upstream reads: a request no rule and no audit line
    // saw. The memory BIO takes everything, so anything but progress is a broken connection.
    while (!data.empty()) {
        int chunk = static_cast<int>(std::min<std::size_t>(data.size(), 1 << 30));
        int n = SSL_write(ssl, data.data(), chunk);
        if (n <= 0) {
            finish(side + openssl_reason());
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void InspectedTunnel::finish(const std::string& error) {
    if (p_.closed()) return;
    state_ = State::Done;
    p_.close(error);
}

// ---- HTTP/1.1 inside

void InspectedTunnel::read_client_plaintext() {
    char buf[16384];
    for (;;) {
        int n = SSL_read(down_, buf, sizeof buf);
        if (n > 0) {
            req_in_.append(buf, static_cast<std::size_t>(n));
            continue;
        }
        int e = SSL_get_error(down_, n);
        if (e == SSL_ERROR_ZERO_RETURN) {
            client_eof_ = true;  // close_notify
            break;
        }
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        finish("client-tls: " + openssl_reason());
        return;
    }
    process_requests();
    if (p_.closed()) return;
    if (!flush()) return;
    if (client_eof_ && request_ == Request::Head && req_in_.empty()) finish("");
}

void InspectedTunnel::process_requests() {
    while (!p_.closed() && !req_in_.empty() && request_ != Request::AwaitResponse) {
        auto result = request_parser_->feed(req_in_);
        switch (result.status) {
            case HttpParser::Status::Ok:
                if (request_ != Request::Head) request_bytes(req_in_);
                req_in_.clear();
                break;
            case HttpParser::Status::HeadComplete: {
                req_in_.erase(0, result.consumed);
                request_head();
                if (p_.closed()) return;
                // A body-less request completes at its head: let the parser say so.
                auto end = request_parser_->feed(std::string_view());
                if (end.status == HttpParser::Status::MessageComplete) request_end();
                break;
            }
            case HttpParser::Status::MessageComplete:
                request_bytes(std::string_view(req_in_).substr(0, result.consumed));
                req_in_.erase(0, result.consumed);
                request_end();
                break;
            case HttpParser::Status::Error: {
                std::string why = request_parser_->error();
                keep_alive_ = false;
                if (request_ == Request::Body || request_ == Request::Skip) {
                    bad_body(why);
                    return;
                }
                refuse(request_parser_->error_status(), "bad-request", "bad-request",
                       "cordon: bad request: " + why + "\n", "", "");
                if (!p_.closed()) {
                    flush();
                    finish("bad-request: " + why);
                }
                return;
            }
        }
    }
}

void InspectedTunnel::bad_body(const std::string& why) {
    std::string error = "bad-request: " + why;
    if (request_ == Request::Skip) {  // a refused request's body: it has its line, and nothing was sent
        finish(error);
        return;
    }
    // Why `allow`: the head (and part of the body) reached the upstream, which holds the request; its line
    // says it was forwarded and how it ended. The client gets the 400 unless a response has begun.
    int status = response_status_ ? response_status_ : 502;
    if (response_bytes_ == 0) {
        status = request_parser_->error_status();
        std::string out = proxy_answer(status, "bad-request", "cordon: bad request: " + why + "\n", false,
                                       method_ == "HEAD");
        if (!write_client(out)) return;
        response_bytes_ = out.size();
    }
    log_request("allow", "allowed", status, error);
    if (flush()) finish(error);
}

void InspectedTunnel::request_head() {
    const HttpHead& head = request_parser_->head();
    const std::string& host = p_.request().host;
    const std::uint16_t port = p_.request().port;
    const TlsInspector& tls = *p_.context().tls;
    method_ = head.method;
    path_ = head.target;
    logged_ = false;
    keep_alive_ = head.keep_alive && !p_.context().draining;
    request_bytes_ = response_bytes_ = 0;
    response_status_ = 0;
    scanned_.clear();
    scan_done_ = false;
    hold_.clear();
    head_out_.clear();
    bool v6 = host.find(':') != std::string::npos;
    std::string authority =
        (v6 ? "[" + host + "]" : host) + (port == (plain_ ? 80 : 443) ? "" : ":" + std::to_string(port));
    url_ = (plain_ ? "http://" : "https://") + authority + path_;
    const policy::Decision& d = p_.decision();
    rule_ = rule_text(d);
    source_ = rule_source(d);
    request_parser_->resume();
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
        refuse(421, "misdirected-request", "misdirected-request",
               "cordon: this connection is for " + authority + "; the Host header names '" + std::string(*h) +
                   "'\n",
               "", "");
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
        refuse(ruling.status, ruling.reason, ruling.reason, ruling.message, ruling.rule, ruling.source);
        return;
    }
    // Secrets: never towards a host that may not have them. The refusal names the variable, never a value.
    // Why no real value goes into plain HTTP, even to an inject host: anyone on the path would read it.
    if (plain_) {
        const Options::Secret* carried = tls.sentinel_in(path_);
        for (const auto& [name, value] : head.headers)
            if (!carried) carried = tls.sentinel_in(value);
        if (carried) {
            refuse_secret("a plain-HTTP request (no TLS)", *carried);
            return;
        }
    }
    if (const auto* s = tls.sentinel_in(path_); s && !TlsInspector::may_inject(*s, host)) {
        refuse_secret("the request URL", *s);
        return;
    }
    // The body's first kBodyScan bytes are scanned for sentinels before anything is sent.
    bool hold = (head.chunked || head.content_length.value_or(0) > 0) && !tls.secrets().empty();
    // Why cordon answers `100 Continue` itself while it holds the head: a client that sent
    // `Expect: 100-continue` sends no body before a 100 or its own timeout (curl's is 1 s, some clients wait
    // for ever), and the upstream that would answer it has not seen the head. The Expect header is dropped
    // from the forwarded head then: the body comes anyway, and the client gets one 100, not two.
    bool answer_continue = false;
    if (auto expect = head.header("expect"); hold && expect && iequals(*expect, "100-continue") &&
                                             head.version_major == 1 && head.version_minor >= 1)
        answer_continue = true;
    std::string out = method_ + " " + path_ + " HTTP/" + std::to_string(head.version_major) + "." +
                      std::to_string(head.version_minor) + "\r\n";
    for (const auto& [name, value] : head.headers) {
        if (iequals(name, "proxy-authorization") || iequals(name, "proxy-connection")) continue;
        if (answer_continue && iequals(name, "expect")) continue;
        if (!scrub_.empty() && iequals(name, "accept-encoding")) continue;
        std::string v = value;
        // Basic credentials carry a token base64-encoded (git over HTTPS: user:TOKEN): look inside them too.
        if (iequals(name, "authorization") && v.size() > 6 &&
            iequals(std::string_view(v).substr(0, 6), "basic ")) {
            if (auto decoded = base64_decode(std::string_view(v).substr(6))) {
                std::string plain = *decoded;
                const auto* refused = substitute_sentinels(tls, plain, host, name);
                if (!refused && plain != *decoded) v = "Basic " + base64_encode(plain);
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
        if (const auto* refused = substitute_sentinels(tls, v, host, name)) {
            refuse_secret("header " + name, *refused);
            return;
        }
        out += name + ": " + v + "\r\n";
    }
    // Why an inject host is asked for identity: the scrubber reads the bytes as sent, and a compressed body
    // (gzip, br) would carry the real value past it, for the client to inflate.
    if (!scrub_.empty()) out += "Accept-Encoding: identity\r\n";
    out += "\r\n";
    if (!response_parser_)
        response_parser_ = std::make_unique<HttpParser>(HttpParser::Kind::Response, &response_sink_);
    response_parser_->set_no_body(method_ == "HEAD");
    if (hold) {
        head_out_ = std::move(out);
        request_ = Request::Hold;
        if (answer_continue) write_client("HTTP/1.1 100 Continue\r\n\r\n");
        return;
    }
    write_upstream(out);
    request_ = Request::Body;
}

void InspectedTunnel::scan_body(std::string_view data) {
    if (request_ != Request::Hold || scan_done_) return;
    scanned_.append(data.substr(0, kBodyScan - std::min(kBodyScan, scanned_.size())));
}

void InspectedTunnel::request_bytes(std::string_view raw) {
    switch (request_) {
        case Request::Body:
            write_upstream(raw);
            return;
        case Request::Hold:
            hold_.append(raw);
            if (scanned_.size() >= kBodyScan) release_hold();
            return;
        default:
            return;  // Skip: a refused request's body
    }
}

void InspectedTunnel::release_hold() {
    scan_done_ = true;
    const auto* s = p_.context().tls->sentinel_in(scanned_);
    std::string().swap(scanned_);
    if (s && !TlsInspector::may_inject(*s, p_.request().host)) {
        std::string().swap(hold_);
        std::string().swap(head_out_);
        refuse_secret("the request body", *s);
        return;
    }
    if (write_upstream(head_out_)) write_upstream(hold_);
    std::string().swap(head_out_);
    std::string().swap(hold_);
    request_ = Request::Body;
}

void InspectedTunnel::request_end() {
    if (request_ == Request::Hold) release_hold();
    if (p_.closed()) return;
    if (request_ == Request::Skip) {
        next_request();
        return;
    }
    request_ = Request::AwaitResponse;
    flush();
}

void InspectedTunnel::refuse_secret(const std::string& where, const Options::Secret& secret) {
    refuse(403, "blocked-by-secret-scope", "blocked-by-secret-scope",
           "cordon: " + where + " carries the sentinel of " + secret.name +
               ", which may go to its injectHosts only\n",
           "", "");
}

void InspectedTunnel::refuse(int status, const std::string& x_proxy_error, const std::string& reason,
                             const std::string& body, const std::string& rule, const std::string& source) {
    rule_ = rule;
    source_ = source;
    std::string out = proxy_answer(status, x_proxy_error, body, keep_alive_, method_ == "HEAD");
    write_client(out);
    log_request("deny", reason, status, "");
    // The connection stays usable: the refused request's body is read and dropped (Skip), then the next
    // request once the parser says this one is complete.
    request_ = Request::Skip;
    if (!keep_alive_) next_request();
}

void InspectedTunnel::read_upstream_plaintext() {
    char buf[16384];
    for (;;) {
        int n = SSL_read(up_, buf, sizeof buf);
        if (n <= 0) {
            int e = SSL_get_error(up_, n);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
            if (e == SSL_ERROR_ZERO_RETURN) {
                if (response_parser_ && response_parser_->finish() && request_ == Request::AwaitResponse) {
                    keep_alive_ = false;
                    response_complete();
                } else {
                    finish(request_ == Request::AwaitResponse ? "upstream closed mid-response"
                           : request_ == Request::Head        ? ""
                                                              : "upstream closed mid-request");
                }
                return;
            }
            finish("upstream-tls: " + openssl_reason());
            return;
        }
        if (!upstream_plaintext(std::string_view(buf, static_cast<std::size_t>(n)))) return;
    }
    flush();
}

bool InspectedTunnel::upstream_plaintext(std::string_view view) {
    if (request_ != Request::AwaitResponse && request_ != Request::Body && request_ != Request::Hold) {
        finish("upstream spoke out of turn");  // no request in flight
        return false;
    }
    while (!view.empty() && !p_.closed()) {
        auto result = response_parser_->feed(view);
        if (p_.closed()) return false;  // closed from a callback: the request has its line already
        if (result.status == HttpParser::Status::Error) {
            finish("bad response from upstream: " + response_parser_->error());
            return false;
        }
        std::size_t used = result.status == HttpParser::Status::Ok ? view.size() : result.consumed;
        if (scrub_.empty()) {
            write_client(view.substr(0, used));
            response_bytes_ += used;
        }
        view.remove_prefix(used);
        if (result.status == HttpParser::Status::MessageComplete) {
            end_scrubbed_body();
            if (response_parser_->interim()) {
                response_parser_->resume();
                continue;
            }
            if (!view.empty()) keep_alive_ = false;  // bytes after the response: out of step
            if (!response_parser_->should_keep_alive()) keep_alive_ = false;
            response_complete();
            break;
        }
    }
    return !p_.closed();
}

void InspectedTunnel::response_head(const HttpHead& head) {
    response_status_ = head.status;
    if (scrub_.empty()) return;
    // An inject host that encodes its answer anyway (it ignored `Accept-Encoding: identity`) sends bytes the
    // scrubber cannot read: none of them pass, the client gets a 502 saying why.
    if (auto encoding = head.header("content-encoding");
        encoding && !iequals(*encoding, "identity") && head.status >= 200) {
        std::string coding(encoding->substr(0, 64));
        scrub_body_ = false;
        response_status_ = 502;
        std::string body = "cordon: " + url_ + " answered with Content-Encoding " + coding +
                           ", in which cordon cannot replace the real value of a secret; nothing of it was "
                           "passed on\n";
        write_client(proxy_answer(502, "upstream-failure", body, false, method_ == "HEAD"));
        response_bytes_ = 0;
        flush();
        finish("upstream-content-encoding: " + coding);
        return;
    }
    std::string out = "HTTP/" + std::to_string(head.version_major) + "." +
                      std::to_string(head.version_minor) + " " + std::to_string(head.status) + " " +
                      head.reason + "\r\n";
    for (const auto& [name, value] : head.headers)
        out += name + ": " + value + "\r\n";
    out += "\r\n";
    unsubstitute(scrub_, out);
    scrub_carry_.clear();
    // The body is written again from what the parser de-chunked, so that a value split across chunks is
    // found; a chunked body is chunked again (its trailers are dropped).
    bool interim = head.status >= 100 && head.status < 200;
    scrub_body_ = !interim && method_ != "HEAD" && head.status != 204 && head.status != 304;
    scrub_chunked_ = scrub_body_ && head.chunked;
    write_scrubbed(out);
}

void InspectedTunnel::response_body(std::string_view data) {
    if (scrub_.empty() || !scrub_body_) return;
    scrub_carry_.append(data);
    unsubstitute(scrub_, scrub_carry_);
    // Kept back: the bytes that may be the start of a value whose rest has not arrived.
    if (scrub_carry_.size() <= scrub_keep_) return;
    std::size_t emit = scrub_carry_.size() - scrub_keep_;
    write_scrubbed_body(std::string_view(scrub_carry_).substr(0, emit));
    scrub_carry_.erase(0, emit);
}

void InspectedTunnel::end_scrubbed_body() {
    if (scrub_.empty() || !scrub_body_) return;
    scrub_body_ = false;
    write_scrubbed_body(scrub_carry_);
    std::string().swap(scrub_carry_);
    if (scrub_chunked_) write_scrubbed("0\r\n\r\n");
}

void InspectedTunnel::write_scrubbed_body(std::string_view data) {
    if (data.empty()) return;
    if (!scrub_chunked_) {
        write_scrubbed(data);
        return;
    }
    char size[24];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    write_scrubbed(size);
    write_scrubbed(data);
    write_scrubbed("\r\n");
}

void InspectedTunnel::write_scrubbed(std::string_view data) {
    if (write_client(data)) response_bytes_ += data.size();
}

void InspectedTunnel::response_complete() {
    end_scrubbed_body();  // a body delimited by the upstream's close
    log_request("allow", "allowed", response_status_, "");
    if (request_ != Request::AwaitResponse) keep_alive_ = false;  // answered before the body ended
    response_parser_->resume();
    next_request();
}

void InspectedTunnel::next_request() {
    if (!flush()) return;
    if (!keep_alive_ || client_eof_ || p_.context().draining) {
        finish("");
        return;
    }
    request_ = Request::Head;
    method_.clear();
    request_parser_->resume();
    process_requests();
    if (!p_.closed()) flush();
}

void InspectedTunnel::end_in_flight(const std::string& error) {
    if (logged_) return;
    if (!upstream_error_.empty()) {  // the client left before asking anything
        log_request("allow", "allowed", 502, upstream_error_);
        return;
    }
    if (request_ != Request::Body && request_ != Request::Hold && request_ != Request::AwaitResponse) return;
    log_request("allow", "allowed", response_status_ ? response_status_ : 502,
                error.empty() ? "closed mid-request" : error);
}

void InspectedTunnel::log_request(const std::string& decision, const std::string& reason, int status,
                                  const std::string& error) {
    logged_ = true;
    DecisionEvent e;
    e.id = p_.id();
    e.proto = plain_ ? "http" : "https";
    e.host = p_.request().host;
    e.port = p_.request().port;
    e.method = method_;
    e.path = path_;
    e.url = url_;
    e.decision = decision;
    e.rule = rule_;
    e.source = source_;
    e.reason = reason;
    e.upstream_ip = p_.request().upstream_ip;
    e.error = error;
    e.status = status;
    e.request_bytes = request_bytes_;
    e.response_bytes = response_bytes_;
    e.inner = true;
    p_.record_decision(e);
}

}  // namespace cordon::proxy
