// What every inspected connection of one proxy shares (inspect.hpp): the TLS context towards clients (leaves
// minted per host from the CA, ALPN http/1.1 only), the TLS context towards upstreams (verified against the
// system store plus --upstream-ca / extraCaCertPaths, hostname checked), the leaf cache, and the secrets'
// sentinels. Internal to proxy/.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "certs/certs.hpp"
#include "proxy/proxy.hpp"

typedef struct ssl_ctx_st SSL_CTX;

namespace cordon::proxy {

class TlsInspector {
  public:
    // An error names the file that could not be read.
    static std::variant<std::unique_ptr<TlsInspector>, std::string> create(
        std::shared_ptr<const certs::Authority> ca, const std::vector<std::string>& upstream_ca,
        std::vector<Options::Secret> secrets);
    ~TlsInspector();

    SSL_CTX* client_side() const { return to_client_; }      // cordon is the server
    SSL_CTX* upstream_side() const { return to_upstream_; }  // cordon is the client
    certs::LeafCache& leaves() { return leaves_; }

    // Secrets (Options::Secret). The first secret whose sentinel occurs in `text`, or null.
    const Options::Secret* sentinel_in(std::string_view text) const;
    static bool may_inject(const Options::Secret& secret, std::string_view host);
    // Whether the request header `name` is one the secret's real value is put into: Authorization, Cookie,
    // `*-api-key`, `*-token` (any case), and the secret's own `headers`.
    static bool carries_credentials(const Options::Secret& secret, std::string_view name);
    const std::vector<Options::Secret>& secrets() const { return secrets_; }
    // The longest sentinel (how much of a body is kept to scan across chunk boundaries).
    std::size_t longest_sentinel() const { return longest_; }

  private:
    TlsInspector(std::shared_ptr<const certs::Authority> ca) : leaves_(std::move(ca)) {}
    SSL_CTX* to_client_ = nullptr;
    SSL_CTX* to_upstream_ = nullptr;
    certs::LeafCache leaves_;
    std::vector<Options::Secret> secrets_;
    std::size_t longest_ = 0;
};

}  // namespace cordon::proxy
