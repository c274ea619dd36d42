// OpenSSL helpers shared by the certs module's files. Internal.
#pragma once

#include <openssl/rand.h>

#include <filesystem>
#include <string>

typedef struct x509_st X509;
typedef struct evp_pkey_st EVP_PKEY;

namespace cordon::certs::detail {

// `what`, then OpenSSL's first queued error (the queue is cleared).
std::string openssl_error(const std::string& what);
EVP_PKEY* new_p256_key();
bool random_serial(X509* cert);
// Adds an extension in `openssl x509` config syntax; `issuer` supplies the AKI.
bool add_extension(X509* cert, X509* issuer, int nid, const char* value);
std::string read_text(const std::filesystem::path& path, std::string& error);

}  // namespace cordon::certs::detail
