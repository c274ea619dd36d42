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
#include "proxy/context.hpp"
#include "proxy/decision.hpp"
#include "proxy/inspected_requests.hpp"
#include "proxy/pipeline.hpp"
#include "proxy/tls_inspector.hpp"

namespace cordon::proxy {

namespace {

constexpr std::size_t kHighWater = 1024 * 1024;  // stop reading one side while the other has this much queued
constexpr std::size_t kMaxPending = InspectedRequests::kMaxPending;

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

}  // namespace

InspectedTunnel::InspectedTunnel(Pipeline& pipeline)
    : p_(pipeline), client_side_(*this, true), upstream_side_(*this, false) {}

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
    requests_ = std::make_unique<InspectedRequests>(p_, client_side_, upstream_side_, true);
    requests_->receive(client_cipher_);
    std::string().swap(client_cipher_);
    update_interest();
    requests_->read();
    if (!p_.closed()) flush();
}

// ---- the upstream's handshake, first: no leaf before the upstream proved itself

void InspectedTunnel::begin_upstream() {
    state_ = State::UpstreamHandshake;
    requests_ = std::make_unique<InspectedRequests>(p_, client_side_, upstream_side_, false);
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
    requests_->upstream_failed(error);
    begin_client();
}

// ---- the client's handshake, with a leaf for the host

void InspectedTunnel::begin_client() {
    auto leaf = p_.context().tls->leaves().get(p_.request().host);
    if (auto* error = std::get_if<std::string>(&leaf)) {
        finish("tls: " + *error);
        return;
    }
    const auto& l = *std::get<std::shared_ptr<const certs::Leaf>>(leaf);
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
            // Before TLS: nothing more will come; between requests, the requests end.
            if (state_ != State::Open)
                finish("");
            else
                requests_->client_closed();
            return;
        }
        if (state_ == State::UpstreamHandshake) {
            upstream_refused("upstream-tls: the upstream closed during the handshake");
            return;
        }
        if (state_ == State::Open) {
            requests_->upstream_closed();
            if (!p_.closed()) flush();
        } else {
            finish("");
        }
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
                    requests_->receive(data);
                    requests_->read();
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
        if (state_ == State::Open && requests_->upstream_bytes(data)) flush();
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
    // Why the client's own queue counts too: refusals and the proxy's answers are written without the
    // upstream, and a client that pipelines refused requests without reading would grow that queue for ever.
    if (state_ == State::Open)
        read_client = read_client && requests_->wants_client() && client_q < kHighWater;
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
    char* buf = p_.scratch();
    int size = static_cast<int>(std::min<std::size_t>(p_.scratch_size(), 1 << 30));
    for (;;) {
        int n = SSL_read(down_, buf, size);
        if (n > 0) {
            requests_->receive(std::string_view(buf, static_cast<std::size_t>(n)));
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
    requests_->read();
    if (p_.closed()) return;
    if (client_eof_) requests_->client_closed();
    if (!p_.closed()) flush();
}

void InspectedTunnel::read_upstream_plaintext() {
    char* buf = p_.scratch();
    int size = static_cast<int>(std::min<std::size_t>(p_.scratch_size(), 1 << 30));
    for (;;) {
        int n = SSL_read(up_, buf, size);
        if (n <= 0) {
            int e = SSL_get_error(up_, n);
            if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
            if (e == SSL_ERROR_ZERO_RETURN) {
                requests_->upstream_closed();
                if (!p_.closed()) flush();
                return;
            }
            finish("upstream-tls: " + openssl_reason());
            return;
        }
        if (!requests_->upstream_bytes(std::string_view(buf, static_cast<std::size_t>(n)))) return;
    }
    flush();
}

void InspectedTunnel::end_in_flight(const std::string& error) {
    if (requests_) requests_->end_in_flight(error);
}

}  // namespace cordon::proxy
