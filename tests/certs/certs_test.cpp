#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "certs/certs.hpp"

using namespace cordon::certs;
namespace fs = std::filesystem;

namespace {

std::shared_ptr<Authority> make_ca() {
    auto made = Authority::create("test CA");
    REQUIRE(std::holds_alternative<std::shared_ptr<Authority>>(made));
    return std::get<std::shared_ptr<Authority>>(made);
}

fs::path temp_dir() {
    char tmpl[] = "/tmp/cordon-certs-test-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    return tmpl;
}

// Verifies `leaf` against `ca` for `host` the way a TLS client does.
int verify(X509* ca, X509* leaf, const std::string& host) {
    X509_STORE* store = X509_STORE_new();
    X509_STORE_add_cert(store, ca);
    X509_STORE_CTX* ctx = X509_STORE_CTX_new();
    X509_STORE_CTX_init(ctx, store, leaf, nullptr);
    X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    if (host.find(':') != std::string::npos || host.find_first_not_of("0123456789.") == std::string::npos)
        X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str());
    else
        X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    int ok = X509_verify_cert(ctx);
    int error = ok == 1 ? 0 : X509_STORE_CTX_get_error(ctx);
    X509_STORE_CTX_free(ctx);
    X509_STORE_free(store);
    return error;
}

std::string key_id(const ASN1_OCTET_STRING* id) {
    return id ? std::string(reinterpret_cast<const char*>(ASN1_STRING_get0_data(id)),
                            static_cast<std::size_t>(ASN1_STRING_length(id)))
              : std::string();
}

}  // namespace

TEST_CASE("a new CA is ECDSA P-256, a CA for ten years, and saved with its key at 0600") {
    auto ca = make_ca();
    CHECK(X509_check_ca(ca->cert()) != 0);
    CHECK(EVP_PKEY_get_id(ca->key()) == EVP_PKEY_EC);
    CHECK(EVP_PKEY_get_bits(ca->key()) == 256);
    auto years =
        std::chrono::duration_cast<std::chrono::hours>(ca->not_after() - std::chrono::system_clock::now());
    CHECK(years.count() > 24 * 3649);
    CHECK(years.count() <= 24 * 3650);

    fs::path dir = temp_dir() / "ca";
    REQUIRE(ca->save(dir, false).empty());
    struct stat st {};
    REQUIRE(::stat((dir / "ca.key").c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0600);
    REQUIRE(::stat(dir.c_str(), &st) == 0);
    CHECK((st.st_mode & 0777) == 0700);
    // Never overwritten without force.
    auto other = make_ca();
    CHECK(other->save(dir, false).find("exists already") != std::string::npos);
    auto loaded = Authority::load_dir(dir);
    REQUIRE(std::holds_alternative<std::shared_ptr<Authority>>(loaded));
    CHECK(std::get<std::shared_ptr<Authority>>(loaded)->fingerprint_sha256() == ca->fingerprint_sha256());
    CHECK(other->save(dir, true).empty());
    loaded = Authority::load_dir(dir);
    REQUIRE(std::holds_alternative<std::shared_ptr<Authority>>(loaded));
    CHECK(std::get<std::shared_ptr<Authority>>(loaded)->fingerprint_sha256() == other->fingerprint_sha256());
    fs::remove_all(dir.parent_path());
}

TEST_CASE("loading refuses a key that is not the certificate's, and missing files, by name") {
    auto a = make_ca(), b = make_ca();
    fs::path dir = temp_dir();
    REQUIRE(a->save(dir / "a", false).empty());
    REQUIRE(b->save(dir / "b", false).empty());
    auto mixed = Authority::load(dir / "a" / "ca.pem", dir / "b" / "ca.key");
    REQUIRE(std::holds_alternative<std::string>(mixed));
    CHECK(std::get<std::string>(mixed).find("does not belong") != std::string::npos);
    auto missing = Authority::load_dir(dir / "none");
    REQUIRE(std::holds_alternative<std::string>(missing));
    CHECK(std::get<std::string>(missing).find((dir / "none" / "ca.pem").string()) != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("a leaf names its host, chains to the CA by AKI, and is valid from an hour back for <= 90 days") {
    auto ca = make_ca();
    LeafCache cache(ca);
    for (std::string host : {"api.example.com", "127.0.0.1", "::1"}) {
        auto got = cache.get(host);
        REQUIRE(std::holds_alternative<std::shared_ptr<const Leaf>>(got));
        X509* leaf = std::get<std::shared_ptr<const Leaf>>(got)->cert;
        CHECK(verify(ca->cert(), leaf, host) == 0);
        CHECK(verify(ca->cert(), leaf, "other.example.com") != 0);
        CHECK(key_id(X509_get0_authority_key_id(leaf)) == key_id(X509_get0_subject_key_id(ca->cert())));
        std::time_t now = std::time(nullptr);
        std::time_t before = now - 3500, after91 = now + 91L * 24 * 3600, after89 = now + 89L * 24 * 3600;
        CHECK(X509_cmp_time(X509_get0_notBefore(leaf), &before) < 0);
        CHECK(X509_cmp_time(X509_get0_notAfter(leaf), &after91) < 0);
        CHECK(X509_cmp_time(X509_get0_notAfter(leaf), &after89) > 0);
        CHECK(X509_check_ca(leaf) == 0);
    }
    // One key for every leaf; distinct random serials.
    auto a = std::get<std::shared_ptr<const Leaf>>(cache.get("a.example"));
    auto b = std::get<std::shared_ptr<const Leaf>>(cache.get("b.example"));
    CHECK(a->key == b->key);
    CHECK(ASN1_INTEGER_cmp(X509_get0_serialNumber(a->cert), X509_get0_serialNumber(b->cert)) != 0);
    CHECK(ASN1_STRING_length(X509_get0_serialNumber(a->cert)) >= 15);
}

TEST_CASE("a leaf never outlives its CA") {
    auto ca = make_ca();
    auto soon = ca->not_after() - std::chrono::hours(24);  // "now" a day before the CA ends
    EVP_PKEY* key = EVP_EC_gen("P-256");
    auto got = mint_leaf(*ca, key, "x.example", soon);
    REQUIRE(std::holds_alternative<std::unique_ptr<Leaf>>(got));
    X509* leaf = std::get<std::unique_ptr<Leaf>>(got)->cert;
    CHECK(ASN1_TIME_compare(X509_get0_notAfter(leaf), X509_get0_notAfter(ca->cert())) <= 0);
    auto late = mint_leaf(*ca, key, "x.example", ca->not_after() + std::chrono::hours(1));
    CHECK(std::holds_alternative<std::string>(late));
    auto bad = mint_leaf(*ca, key, "bad host/", soon);
    CHECK(std::holds_alternative<std::string>(bad));
    EVP_PKEY_free(key);
}

TEST_CASE("the cache is bounded (least recently used goes) and mints once per host under concurrency") {
    auto ca = make_ca();
    LeafCache cache(ca, 3);
    for (std::string h : {"a.test", "b.test", "c.test"})
        REQUIRE(std::holds_alternative<std::shared_ptr<const Leaf>>(cache.get(h)));
    cache.get("a.test");  // a is now the most recent; b the least
    cache.get("d.test");
    CHECK(cache.size() == 3);
    CHECK(cache.minted() == 4);
    cache.get("a.test");
    CHECK(cache.minted() == 4);
    cache.get("b.test");  // evicted: minted again
    CHECK(cache.minted() == 5);

    LeafCache shared(ca);
    std::atomic<int> go{0};
    std::vector<std::thread> threads;
    std::vector<X509*> seen(16);
    for (int i = 0; i < 16; ++i)
        threads.emplace_back([&, i] {
            while (!go) {
            }
            seen[static_cast<std::size_t>(i)] =
                std::get<std::shared_ptr<const Leaf>>(shared.get("same.example"))->cert;
        });
    go = 1;
    for (auto& t : threads)
        t.join();
    CHECK(shared.minted() == 1);
    for (X509* c : seen)
        CHECK(c == seen[0]);
}

TEST_CASE("the upstream store adds --upstream-ca files and refuses a file without certificates") {
    auto ca = make_ca();
    fs::path dir = temp_dir();
    std::ofstream(dir / "ca.pem") << ca->cert_pem();
    std::ofstream(dir / "junk.pem") << "not a certificate\n";
    auto store = upstream_store({dir / "ca.pem"});
    REQUIRE(std::holds_alternative<X509_STORE*>(store));
    X509_STORE_free(std::get<X509_STORE*>(store));
    auto junk = upstream_store({dir / "junk.pem"});
    REQUIRE(std::holds_alternative<std::string>(junk));
    CHECK(std::get<std::string>(junk).find("junk.pem") != std::string::npos);
    auto bundle = trust_bundle(*ca);
    REQUIRE(std::holds_alternative<Bundle>(bundle));
    CHECK(std::get<Bundle>(bundle).pem.find(ca->cert_pem()) != std::string::npos);
    fs::remove_all(dir);
}
