// policy/ports.hpp: the grammar of --host-port and --publish (and their settings entries).
#include "policy/ports.hpp"

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

static PublishedPort published(std::string_view text) {
    auto result = parse_published_port(text);
    if (auto* error = std::get_if<std::string>(&result))
        FAIL("unexpected error for " << text << ": " << *error);
    return std::get<PublishedPort>(result);
}

static std::string published_error(std::string_view text) {
    auto result = parse_published_port(text);
    if (std::holds_alternative<PublishedPort>(result)) FAIL("expected an error for " << text);
    return std::get<std::string>(result);
}

TEST_CASE("a published port: PORT, PORT:JAIL_PORT, ADDR:PORT, ADDR:PORT:JAIL_PORT", "[ports]") {
    auto p = published("8080");
    CHECK((p.address == "127.0.0.1" && p.port == 8080 && p.jail_port == 8080 && p.loopback()));
    p = published("8080:3000");
    CHECK((p.address == "127.0.0.1" && p.port == 8080 && p.jail_port == 3000));
    p = published("0.0.0.0:8080");
    CHECK((p.address == "0.0.0.0" && p.port == 8080 && p.jail_port == 8080 && !p.loopback()));
    p = published("192.168.1.5:8080:3000");
    CHECK((p.address == "192.168.1.5" && p.port == 8080 && p.jail_port == 3000));
    p = published("[::1]:8080:3000");
    CHECK((p.address == "::1" && p.port == 8080 && p.jail_port == 3000 && p.loopback()));
    CHECK(p.listen_text() == "[::1]:8080");
    p = published("[0:0::1]:9000");
    CHECK((p.address == "::1" && p.jail_port == 9000));
}

TEST_CASE("a published port that is not one", "[ports]") {
    CHECK_THAT(published_error("localhost:8080"), Catch::Matchers::Contains("invalid address"));
    CHECK_THAT(published_error("1.2.3:80"), Catch::Matchers::Contains("invalid address"));
    CHECK_THAT(published_error("[1.2.3.4]:80"), Catch::Matchers::Contains("invalid address"));
    CHECK_THAT(published_error("::1:80"), Catch::Matchers::Contains("too many"));
    CHECK_THAT(published_error("[::1]80"), Catch::Matchers::Contains("]"));
    CHECK_THAT(published_error("[::1]:1:2:3"), Catch::Matchers::Contains("too many"));
    CHECK_THAT(published_error("0"), Catch::Matchers::Contains("PORT"));
    CHECK_THAT(published_error("80:65536"), Catch::Matchers::Contains("JAIL_PORT"));
    CHECK_THAT(published_error("8080:3128"), Catch::Matchers::Contains("jail's own"));
    CHECK_THAT(published_error(""), Catch::Matchers::Contains("PORT"));
    CHECK_THAT(published_error("080"), Catch::Matchers::Contains("PORT"));
}

TEST_CASE("a host port", "[ports]") {
    CHECK(std::get<std::uint16_t>(parse_host_port("5432")) == 5432);
    for (const char* bad : {"0", "65536", "-1", "db", "", "5432 ", "53", "1080", "3128", "3129"})
        CHECK(std::holds_alternative<std::string>(parse_host_port(bad)));
}

}  // namespace cordon::policy::test
