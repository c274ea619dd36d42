// cordon's certificates (OpenSSL): the interception CA (create, load, save), the leaves minted from it for
// inspected hosts (one ECDSA key for all leaves, a bounded LRU cache, one minting per host however many ask
// at once), the store upstream certificates are verified against, and the trust bundle the jail sees.
//
// Errors: every call a user's input can make fail returns std::variant<T, std::string>, the string saying
// what went wrong and naming the file involved. Nothing here throws on bad input.
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;
typedef struct x509_store_st X509_STORE;

namespace cordon::certs {

template <typename T>
using Result = std::variant<T, std::string>;

// A CA certificate and its private key.
class Authority {
  public:
    static constexpr const char* kCertFile = "ca.pem";
    static constexpr const char* kKeyFile = "ca.key";

    // A new CA: ECDSA P-256, valid from one hour back for ten years.
    static Result<std::shared_ptr<Authority>> create(const std::string& common_name);
    // Loads a PEM certificate and its PEM private key (which must belong to it and be a CA certificate).
    static Result<std::shared_ptr<Authority>> load(const std::filesystem::path& cert,
                                                   const std::filesystem::path& key);
    // Loads `dir`/ca.pem and `dir`/ca.key.
    static Result<std::shared_ptr<Authority>> load_dir(const std::filesystem::path& dir);
    // Writes ca.pem (0644) and ca.key (0600) into `dir` (created 0700). An existing CA there is kept and
    // reported unless `force`. Returns an empty string on success.
    std::string save(const std::filesystem::path& dir, bool force) const;

    ~Authority();
    Authority(const Authority&) = delete;
    Authority& operator=(const Authority&) = delete;

    X509* cert() const { return cert_; }
    EVP_PKEY* key() const { return key_; }
    std::string cert_pem() const;
    std::string subject() const;             // "CN=..., O=cordon"
    std::string fingerprint_sha256() const;  // "AB:CD:..."
    std::chrono::system_clock::time_point not_after() const;

  private:
    Authority(X509* cert, EVP_PKEY* key) : cert_(cert), key_(key) {}
    X509* cert_;
    EVP_PKEY* key_;
};

// $XDG_CONFIG_HOME/cordon/ca, or ~/.config/cordon/ca.
std::filesystem::path default_ca_dir();

// A minted leaf: its certificate and the key every leaf shares.
struct Leaf {
    X509* cert = nullptr;
    EVP_PKEY* key = nullptr;  // owned by the LeafCache
    ~Leaf();
};

// Mints one leaf for `host` (a DNS name, or an IPv4/IPv6 literal without brackets) signed by `ca`:
// SAN = the host (an IP SAN for literals), AKI = the CA's SKI, valid from one hour back for at most 90 days
// and never past the CA's own end, a random 128-bit serial, serverAuth.
Result<std::unique_ptr<Leaf>> mint_leaf(const Authority& ca, EVP_PKEY* leaf_key, const std::string& host,
                                        std::chrono::system_clock::time_point now);

// Leaves by host, minted on first use. Thread-safe; concurrent first requests for one host mint once.
class LeafCache {
  public:
    static constexpr std::size_t kDefaultCapacity = 4096;
    explicit LeafCache(std::shared_ptr<const Authority> ca, std::size_t capacity = kDefaultCapacity);
    ~LeafCache();
    Result<std::shared_ptr<const Leaf>> get(const std::string& host);
    std::uint64_t minted() const;
    std::size_t size() const;
    const Authority& authority() const { return *ca_; }

  private:
    std::shared_ptr<const Authority> ca_;
    EVP_PKEY* key_;
    std::size_t capacity_;
    mutable std::mutex mu_;
    std::list<std::string> order_;  // most recent first
    struct Entry {
        std::shared_ptr<const Leaf> leaf;
        std::list<std::string>::iterator position;
    };
    std::unordered_map<std::string, Entry> entries_;
    std::uint64_t minted_ = 0;
};

// The store upstream certificates are verified against: the system's default store plus every PEM file of
// `extra` (--upstream-ca, srt's extraCaCertPaths). The caller owns the store (X509_STORE_free).
Result<X509_STORE*> upstream_store(const std::vector<std::filesystem::path>& extra);

// Where the system's CA bundle is (/etc/ssl/certs/ca-certificates.crt on Debian), or empty.
std::filesystem::path system_bundle_path();
// The system bundle's text followed by the CA's certificate: what programs in the jail trust.
struct Bundle {
    std::string pem;
};
Result<Bundle> trust_bundle(const Authority& ca);

}  // namespace cordon::certs
