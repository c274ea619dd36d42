// Leaf minting and the leaf cache (certs.hpp).
#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <algorithm>

#include "certs/certs.hpp"
#include "certs/detail.hpp"

namespace cordon::certs {

using namespace detail;

Leaf::~Leaf() {
    X509_free(cert);
}

Result<std::unique_ptr<Leaf>> mint_leaf(const Authority& ca, EVP_PKEY* leaf_key, const std::string& host,
                                        std::chrono::system_clock::time_point now) {
    if (host.empty() || host.size() > 253) return "cannot mint a certificate for '" + host + "': bad host";
    unsigned char ip[16];
    bool is_ip = inet_pton(AF_INET, host.c_str(), ip) == 1 || inet_pton(AF_INET6, host.c_str(), ip) == 1;
    if (!is_ip && host.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-._") != std::string::npos)
        return "cannot mint a certificate for '" + host + "': not a normalised host name";
    const auto ca_end = ca.not_after();
    if (ca_end <= now) return "the CA has expired";
    const auto start = now - std::chrono::hours(1);
    const auto end = std::min(now + std::chrono::hours(24 * 90), ca_end);

    auto leaf = std::make_unique<Leaf>();
    leaf->cert = X509_new();
    leaf->key = leaf_key;
    X509* cert = leaf->cert;
    if (!cert || X509_set_version(cert, 2) != 1 || !random_serial(cert))
        return openssl_error("cannot make a leaf for " + host);
    std::time_t start_t = std::chrono::system_clock::to_time_t(start);
    X509_time_adj_ex(X509_getm_notBefore(cert), 0, 0, &start_t);
    std::time_t end_t = std::chrono::system_clock::to_time_t(end);
    X509_time_adj_ex(X509_getm_notAfter(cert), 0, 0, &end_t);
    X509_NAME* name = X509_get_subject_name(cert);
    std::string cn = host.substr(0, 64);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>(cn.c_str()),
                               -1, -1, 0);
    X509_set_issuer_name(cert, X509_get_subject_name(ca.cert()));
    X509_set_pubkey(cert, leaf_key);
    std::string san = (is_ip ? "IP:" : "DNS:") + host;
    // Why AKI = the CA's SKI: clients build the chain by it; a leaf without it fails with some (Go, Java).
    if (!add_extension(cert, ca.cert(), NID_basic_constraints, "critical,CA:FALSE") ||
        !add_extension(cert, ca.cert(), NID_key_usage, "critical,digitalSignature") ||
        !add_extension(cert, ca.cert(), NID_ext_key_usage, "serverAuth") ||
        !add_extension(cert, ca.cert(), NID_subject_alt_name, san.c_str()) ||
        !add_extension(cert, ca.cert(), NID_subject_key_identifier, "hash") ||
        !add_extension(cert, ca.cert(), NID_authority_key_identifier, "keyid:always"))
        return openssl_error("cannot add a leaf's extensions for " + host);
    if (X509_sign(cert, ca.key(), EVP_sha256()) == 0) return openssl_error("cannot sign a leaf for " + host);
    return leaf;
}

LeafCache::LeafCache(std::shared_ptr<const Authority> ca, std::size_t capacity)
    : ca_(std::move(ca)), key_(new_p256_key()), capacity_(std::max<std::size_t>(capacity, 1)) {}

LeafCache::~LeafCache() {
    entries_.clear();
    EVP_PKEY_free(key_);
}

Result<std::shared_ptr<const Leaf>> LeafCache::get(const std::string& host) {
    // Minting holds the lock (well under a millisecond): concurrent first requests for one host wait for
    // the one minting instead of each minting its own.
    std::lock_guard<std::mutex> lock(mu_);
    if (!key_) return std::string("cannot make the leaves' key");
    if (auto it = entries_.find(host); it != entries_.end()) {
        order_.splice(order_.begin(), order_, it->second.position);
        return it->second.leaf;
    }
    auto minted = mint_leaf(*ca_, key_, host, std::chrono::system_clock::now());
    if (auto* error = std::get_if<std::string>(&minted)) return *error;
    std::shared_ptr<const Leaf> leaf = std::move(std::get<std::unique_ptr<Leaf>>(minted));
    ++minted_;
    if (entries_.size() >= capacity_) {
        entries_.erase(order_.back());
        order_.pop_back();
    }
    order_.push_front(host);
    entries_.emplace(host, Entry{leaf, order_.begin()});
    return leaf;
}

std::uint64_t LeafCache::minted() const {
    std::lock_guard<std::mutex> lock(mu_);
    return minted_;
}

std::size_t LeafCache::size() const {
    std::lock_guard<std::mutex> lock(mu_);
    return entries_.size();
}

}  // namespace cordon::certs
