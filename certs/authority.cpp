// The interception CA (certs.hpp): creation, loading, saving.
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "certs/certs.hpp"
#include "certs/detail.hpp"

namespace cordon::certs {

namespace detail {

std::string openssl_error(const std::string& what) {
    unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return what;
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    return what + ": " + buf;
}

EVP_PKEY* new_p256_key() {
    return EVP_EC_gen("P-256");
}

bool random_serial(X509* cert) {
    unsigned char bytes[16];
    if (RAND_bytes(bytes, sizeof bytes) != 1) return false;
    bytes[0] &= 0x7f;  // positive
    bytes[0] |= 0x01;  // and never shorter than 16 bytes... or zero
    BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
    if (!bn) return false;
    bool ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != nullptr;
    BN_free(bn);
    return ok;
}

bool add_extension(X509* cert, X509* issuer, int nid, const char* value) {
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (!ext) return false;
    bool ok = X509_add_ext(cert, ext, -1) == 1;
    X509_EXTENSION_free(ext);
    return ok;
}

std::string read_text(const std::filesystem::path& path, std::string& error) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) {
        error = path.string() + ": " + std::strerror(errno);
        return {};
    }
    std::string text;
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
        text.append(buf, n);
    bool bad = std::ferror(f) != 0;
    std::fclose(f);
    if (bad) error = path.string() + ": read error";
    return text;
}

}  // namespace detail

using namespace detail;

Authority::~Authority() {
    X509_free(cert_);
    EVP_PKEY_free(key_);
}

Result<std::shared_ptr<Authority>> Authority::create(const std::string& common_name) {
    EVP_PKEY* key = new_p256_key();
    if (!key) return openssl_error("cannot make an ECDSA P-256 key");
    X509* cert = X509_new();
    auto fail = [&](const std::string& what) -> Result<std::shared_ptr<Authority>> {
        X509_free(cert);
        EVP_PKEY_free(key);
        return openssl_error(what);
    };
    if (!cert || X509_set_version(cert, 2) != 1 || !random_serial(cert)) return fail("cannot make the CA");
    // One hour back: a client whose clock is a little behind still accepts it.
    X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert), 3650L * 24 * 3600);
    X509_NAME* name = X509_get_subject_name(cert);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                               reinterpret_cast<const unsigned char*>(common_name.c_str()), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char*>("cordon"), -1,
                               -1, 0);
    X509_set_issuer_name(cert, name);
    X509_set_pubkey(cert, key);
    // Why pathlen:0: this CA signs leaves only; a leaf that tried to act as a CA is refused by every client.
    if (!add_extension(cert, cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
        !add_extension(cert, cert, NID_key_usage, "critical,keyCertSign,cRLSign") ||
        !add_extension(cert, cert, NID_subject_key_identifier, "hash"))
        return fail("cannot add the CA's extensions");
    if (X509_sign(cert, key, EVP_sha256()) == 0) return fail("cannot sign the CA");
    return std::shared_ptr<Authority>(new Authority(cert, key));
}

Result<std::shared_ptr<Authority>> Authority::load(const std::filesystem::path& cert_path,
                                                   const std::filesystem::path& key_path) {
    std::string error;
    std::string cert_text = read_text(cert_path, error);
    if (!error.empty()) return "cannot read the CA certificate " + error;
    std::string key_text = read_text(key_path, error);
    if (!error.empty()) return "cannot read the CA key " + error;
    BIO* b = BIO_new_mem_buf(cert_text.data(), static_cast<int>(cert_text.size()));
    X509* cert = PEM_read_bio_X509(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    if (!cert) return openssl_error(cert_path.string() + ": not a PEM certificate");
    b = BIO_new_mem_buf(key_text.data(), static_cast<int>(key_text.size()));
    EVP_PKEY* key = PEM_read_bio_PrivateKey(b, nullptr, nullptr, nullptr);
    BIO_free(b);
    OPENSSL_cleanse(key_text.data(), key_text.size());
    if (!key) {
        X509_free(cert);
        return openssl_error(key_path.string() +
                             ": not a PEM private key (an encrypted key is not supported)");
    }
    auto authority = std::shared_ptr<Authority>(new Authority(cert, key));
    if (X509_check_private_key(cert, key) != 1)
        return key_path.string() + ": the key does not belong to " + cert_path.string();
    if (X509_check_ca(cert) == 0) return cert_path.string() + ": not a CA certificate";
    if (X509_cmp_current_time(X509_get0_notAfter(cert)) <= 0)
        return cert_path.string() + ": the CA has expired";
    return authority;
}

Result<std::shared_ptr<Authority>> Authority::load_dir(const std::filesystem::path& dir) {
    return load(dir / kCertFile, dir / kKeyFile);
}

namespace {

// Writes `text` to `path` with `mode`, through a temporary file renamed into place (never a half file).
std::string write_file(const std::filesystem::path& path, const std::string& text, mode_t mode) {
    std::string tmp = path.string() + ".tmp" + std::to_string(::getpid());
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) return tmp + ": " + std::strerror(errno);
    ::fchmod(fd, mode);  // whatever the umask says
    std::size_t off = 0;
    while (off < text.size()) {
        ssize_t n = ::write(fd, text.data() + off, text.size() - off);
        if (n < 0) {
            if (errno == EINTR) continue;
            std::string e = tmp + ": " + std::strerror(errno);
            ::close(fd);
            ::unlink(tmp.c_str());
            return e;
        }
        off += static_cast<std::size_t>(n);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
        std::string e = path.string() + ": " + std::strerror(errno);
        ::unlink(tmp.c_str());
        return e;
    }
    return {};
}

// What `write` writes into a memory BIO (PEM, a printed name).
template <typename Write>
std::string bio_text(Write write) {
    BIO* b = BIO_new(BIO_s_mem());
    if (!b) return {};
    write(b);
    char* data = nullptr;
    long n = BIO_get_mem_data(b, &data);
    std::string out = n > 0 ? std::string(data, static_cast<std::size_t>(n)) : std::string();
    BIO_free(b);  // a memory BIO's buffer is cleansed when freed (the key's PEM)
    return out;
}

}  // namespace

std::string Authority::save(const std::filesystem::path& dir, bool force) const {
    std::error_code ec;
    bool made = std::filesystem::create_directories(dir, ec);
    if (ec) return dir.string() + ": " + ec.message();
    if (made) ::chmod(dir.c_str(), 0700);
    const auto cert_path = dir / kCertFile, key_path = dir / kKeyFile;
    if (!force && (std::filesystem::exists(cert_path, ec) || std::filesystem::exists(key_path, ec)))
        return "a CA exists already in " + dir.string() + " (--force replaces it)";
    std::string key_text =
        bio_text([&](BIO* b) { PEM_write_bio_PrivateKey(b, key_, nullptr, nullptr, 0, nullptr, nullptr); });
    // Why the key first and 0600: whoever reads it can mint certificates every program in a jail trusts.
    std::string error = write_file(key_path, key_text, 0600);
    OPENSSL_cleanse(key_text.data(), key_text.size());
    if (!error.empty()) return error;
    return write_file(cert_path, cert_pem(), 0644);
}

std::string Authority::cert_pem() const {
    return bio_text([&](BIO* b) { PEM_write_bio_X509(b, cert_); });
}

std::string Authority::subject() const {
    return bio_text([&](BIO* b) {
        X509_NAME_print_ex(b, X509_get_subject_name(cert_), 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
    });
}

std::string Authority::fingerprint_sha256() const {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    X509_digest(cert_, EVP_sha256(), md, &len);
    std::string out;
    char hex[4];
    for (unsigned int i = 0; i < len; ++i) {
        std::snprintf(hex, sizeof hex, i ? ":%02X" : "%02X", md[i]);
        out += hex;
    }
    return out;
}

std::chrono::system_clock::time_point Authority::not_after() const {
    struct tm tm {};
    ASN1_TIME_to_tm(X509_get0_notAfter(cert_), &tm);
    return std::chrono::system_clock::from_time_t(timegm(&tm));
}

std::filesystem::path default_ca_dir() {
    if (const char* xdg = std::getenv("XDG_CONFIG_HOME"); xdg && xdg[0] == '/')
        return std::filesystem::path(xdg) / "cordon" / "ca";
    const char* home = std::getenv("HOME");
    return std::filesystem::path(home && home[0] == '/' ? home : "/") / ".config" / "cordon" / "ca";
}

}  // namespace cordon::certs
