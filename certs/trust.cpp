// The upstream verification store and the jail's trust bundle (certs.hpp).
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "certs/certs.hpp"
#include "certs/detail.hpp"

namespace cordon::certs {

using namespace detail;

Result<X509_STORE*> upstream_store(const std::vector<std::filesystem::path>& extra) {
    X509_STORE* store = X509_STORE_new();
    if (!store) return openssl_error("cannot make a certificate store");
    X509_STORE_set_default_paths(store);
    ERR_clear_error();  // a missing default directory is no error
    for (const auto& file : extra) {
        std::string error;
        std::string text = read_text(file, error);
        if (!error.empty()) {
            X509_STORE_free(store);
            return "cannot read the upstream CA file " + error;
        }
        BIO* b = BIO_new_mem_buf(text.data(), static_cast<int>(text.size()));
        int count = 0;
        while (X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr)) {
            X509_STORE_add_cert(store, cert);
            X509_free(cert);
            ++count;
        }
        BIO_free(b);
        ERR_clear_error();
        if (count == 0) {
            X509_STORE_free(store);
            return file.string() + ": no PEM certificate in it";
        }
    }
    return store;
}

std::filesystem::path system_bundle_path() {
    for (const char* p :
         {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}) {
        std::error_code ec;
        if (std::filesystem::is_regular_file(p, ec)) return p;
    }
    return {};
}

Result<Bundle> trust_bundle(const Authority& ca) {
    std::string text;
    if (auto system = system_bundle_path(); !system.empty()) {
        std::string error;
        text = read_text(system, error);
        if (!error.empty()) return "cannot read the system CA bundle " + error;
        if (!text.empty() && text.back() != '\n') text += '\n';
    }
    text += "# cordon's interception CA: " + ca.subject() + "\n";
    return Bundle{text + ca.cert_pem()};
}

}  // namespace cordon::certs
