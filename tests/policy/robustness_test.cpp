// Robustness: arbitrary bytes as patterns, hosts, targets, paths and settings files never crash (run under
// AddressSanitizer/UBSan in CI), and every rejection comes back as an error message.
#include <random>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

namespace {

std::string random_text(std::mt19937& rng, std::size_t max_length) {
    static const std::string alphabet = "abcXYZ019.-_*:[]/@ \t\xc3\xbc\xff\x80%";
    std::string out(rng() % (max_length + 1), ' ');
    for (char& c : out)
        c = alphabet[rng() % alphabet.size()];
    return out;
}

}  // namespace

TEST_CASE("random domain patterns load or fail with a message", "[robustness]") {
    std::mt19937 rng(1234);
    TempTree tree;
    for (int i = 0; i < 3000; ++i) {
        LoadOptions o = tree.options();
        o.allow_domains = {random_text(rng, 24)};
        auto result = load_policy(o);
        if (auto* error = std::get_if<LoadError>(&result)) {
            CHECK_THAT(error->message, Catch::StartsWith("--allow-domain "));
        } else {
            auto p = std::get<PolicyPtr>(result);
            CHECK(p->network().allowed_domains.size() == 1);
        }
    }
}

TEST_CASE("random hosts are decided without crashing", "[robustness]") {
    std::mt19937 rng(99);
    auto p = flags_policy({"*", "*.example.com", "api.*.example.com", "[::1]", "10.0.0.1:22"},
                          {"bad.example.com"});
    int allowed = 0;
    for (int i = 0; i < 20000; ++i) {
        const std::string host = random_text(rng, 40);
        auto d = p->decide_connect(host, static_cast<std::uint16_t>(rng()));
        allowed += d.allowed() ? 1 : 0;
        if (d.allowed()) CHECK(d.rule);
    }
    CHECK(allowed > 0);
    CHECK_FALSE(p->decide_connect(std::string(5000, 'a'), 443).allowed());
    CHECK_FALSE(p->decide_connect(std::string(300, '.'), 443).allowed());
    std::string many_labels;
    for (int i = 0; i < 200; ++i)
        many_labels += "a.";
    CHECK_FALSE(p->decide_connect(many_labels + "example.com", 443).allowed());
}

TEST_CASE("random targets parse or fail with a message", "[robustness]") {
    std::mt19937 rng(7);
    for (int i = 0; i < 20000; ++i) {
        const std::string text = random_text(rng, 30);
        auto result = parse_target(text);
        if (auto* error = std::get_if<std::string>(&result)) {
            CHECK_FALSE(error->empty());
        } else {
            CHECK(std::get<HostPort>(result).port != 0);
        }
    }
}

TEST_CASE("random paths are decided without crashing", "[robustness]") {
    std::mt19937 rng(5);
    TempTree tree;
    LoadOptions o = tree.options();
    o.deny_read = {"/a/**/b*", "/x/[a-"};
    o.allow_write = {"/w/*/?"};
    auto p = load_ok(o);
    for (int i = 0; i < 5000; ++i) {
        std::string path = "/" + random_text(rng, 30);
        (void)p->decide_read(path);
        (void)p->decide_write(path);
    }
    SUCCEED();
}

TEST_CASE("truncated settings files fail with a position", "[robustness]") {
    const std::string text = R"J({"permissions": {"allow": ["WebFetch(domain:a.example.com)"]},
 "sandbox": {"network": {"allowedDomains": ["b.example.com"], "allowAllUnixSockets": true}}})J";
    for (std::size_t cut = 0; cut < text.size(); ++cut) {
        TempTree tree;
        auto file = tree.project_settings(text.substr(0, cut));
        auto result = load_policy(tree.options());
        REQUIRE(std::holds_alternative<LoadError>(result));
        CHECK_THAT(std::get<LoadError>(result).message, Catch::StartsWith(file.string() + ":"));
    }
}

}  // namespace cordon::policy::test
