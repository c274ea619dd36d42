// The TLS contexts of inspected connections (tls_inspector.hpp).
#include "proxy/tls_inspector.hpp"

#include <openssl/ssl.h>

#include "policy/inspection.hpp"
#include "proxy/http_parser.hpp"

#include <algorithm>
#include <cstring>

namespace cordon::proxy {

namespace {

// ALPN towards the client: http/1.1 when offered, else none (the client then speaks HTTP/1.1 anyway). Never
// h2: the inspection parses HTTP/1.1.
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void*) {
    static const unsigned char kHttp11[] = {'h', 't', 't', 'p', '/', '1', '.', '1'};
    for (unsigned int i = 0; i < inlen;) {
        unsigned int n = in[i];
        if (i + 1 + n > inlen) break;
        if (n == sizeof kHttp11 && std::memcmp(in + i + 1, kHttp11, n) == 0) {
            *out = in + i + 1;
            *outlen = static_cast<unsigned char>(n);
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + n;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

}  // namespace

std::variant<std::unique_ptr<TlsInspector>, std::string> TlsInspector::create(
    std::shared_ptr<const certs::Authority> ca, const std::vector<std::string>& upstream_ca,
    std::vector<Options::Secret> secrets) {
    std::unique_ptr<TlsInspector> self(new TlsInspector(std::move(ca)));
    std::vector<std::filesystem::path> extra(upstream_ca.begin(), upstream_ca.end());
    auto store = certs::upstream_store(extra);
    if (auto* error = std::get_if<std::string>(&store)) return *error;

    self->to_upstream_ = SSL_CTX_new(TLS_client_method());
    self->to_client_ = SSL_CTX_new(TLS_server_method());
    if (!self->to_upstream_ || !self->to_client_) {
        X509_STORE_free(std::get<X509_STORE*>(store));
        return std::string("cannot make a TLS context");
    }
    SSL_CTX_set_cert_store(self->to_upstream_, std::get<X509_STORE*>(store));  // the context owns it now
    // Why verify here and never skip it: a leaf minted for a host says "cordon vouches for this host" to the
    // client; only an upstream that proved itself to cordon may get one.
    SSL_CTX_set_verify(self->to_upstream_, SSL_VERIFY_PEER, nullptr);
    SSL_CTX_set_min_proto_version(self->to_upstream_, TLS1_2_VERSION);
    SSL_CTX_set_min_proto_version(self->to_client_, TLS1_2_VERSION);
    SSL_CTX_set_alpn_select_cb(self->to_client_, select_alpn, nullptr);
    // One connection, one session: no tickets to keep (a resumed session would skip nothing we need).
    SSL_CTX_set_options(self->to_client_, SSL_OP_NO_TICKET);
    SSL_CTX_set_session_cache_mode(self->to_client_, SSL_SESS_CACHE_OFF);
    SSL_CTX_set_mode(self->to_client_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_mode(self->to_upstream_, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    self->secrets_ = std::move(secrets);
    for (const auto& s : self->secrets_)
        self->longest_ = std::max(self->longest_, s.sentinel.size());
    return self;
}

TlsInspector::~TlsInspector() {
    SSL_CTX_free(to_client_);
    SSL_CTX_free(to_upstream_);
}

const Options::Secret* TlsInspector::sentinel_in(std::string_view text) const {
    for (const auto& s : secrets_)
        if (!s.sentinel.empty() && text.find(s.sentinel) != std::string_view::npos) return &s;
    return nullptr;
}

bool TlsInspector::carries_credentials(const Options::Secret& secret, std::string_view name) {
    auto iends = [&](std::string_view suffix) {
        return name.size() >= suffix.size() && iequals(name.substr(name.size() - suffix.size()), suffix);
    };
    if (iequals(name, "authorization") || iequals(name, "cookie") || iequals(name, "api-key") ||
        iequals(name, "token") || iends("-api-key") || iends("-token"))
        return true;
    for (const auto& h : secret.headers)
        if (iequals(name, h)) return true;
    return false;
}

bool TlsInspector::may_inject(const Options::Secret& secret, std::string_view host) {
    return std::find(secret.inject_hosts.begin(), secret.inject_hosts.end(), host) !=
           secret.inject_hosts.end();
}

std::variant<std::shared_ptr<const certs::Authority>, std::string> select_ca(const Options& options,
                                                                             const policy::Policy& policy,
                                                                             bool ephemeral) {
    using Out = std::variant<std::shared_ptr<const certs::Authority>, std::string>;
    const auto& inspection = *policy.network().inspection;
    if (!inspection.enabled()) return Out{std::shared_ptr<const certs::Authority>()};
    auto take = [](certs::Result<std::shared_ptr<certs::Authority>> r) -> Out {
        if (auto* error = std::get_if<std::string>(&r)) return *error;
        return std::shared_ptr<const certs::Authority>(std::get<std::shared_ptr<certs::Authority>>(r));
    };
    if (!options.ca_dir.empty()) return take(certs::Authority::load_dir(options.ca_dir));
    if (!inspection.ca_cert_path.empty() || !inspection.ca_key_path.empty()) {
        if (inspection.ca_cert_path.empty() || inspection.ca_key_path.empty())
            return std::string("tlsTerminate needs both caCertPath and caKeyPath");
        return take(certs::Authority::load(inspection.ca_cert_path, inspection.ca_key_path));
    }
    const auto dir = certs::default_ca_dir();
    std::error_code ec;
    if (std::filesystem::exists(dir / certs::Authority::kCertFile, ec))
        return take(certs::Authority::load_dir(dir));
    if (ephemeral) return take(certs::Authority::create("cordon ephemeral CA"));
    return "the policy inspects hosts but there is no CA in " + dir.string() +
           ": create one with `cordon ca init`, or give --ca-dir DIR";
}

}  // namespace cordon::proxy
