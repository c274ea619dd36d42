#include "proxy/control_line.hpp"

#include <catch2/catch.hpp>

using namespace cordon::proxy;
using nlohmann::json;

TEST_CASE("control lines: settings updates in both shapes") {
    auto m = parse_control_line(R"({"network": {"allowedDomains": ["a.test"]}})");
    REQUIRE(std::holds_alternative<ControlUpdate>(m));
    CHECK(std::get<ControlUpdate>(m).settings ==
          json::parse(R"({"sandbox": {"network": {"allowedDomains": ["a.test"]}}})"));
    CHECK_FALSE(std::get<ControlUpdate>(m).filesystem);
    m = parse_control_line(
        R"({"sandbox": {"network": {"deniedDomains": []}, "filesystem": {"allowWrite": ["/x"]}}})");
    REQUIRE(std::holds_alternative<ControlUpdate>(m));
    CHECK(std::get<ControlUpdate>(m).filesystem);
    m = parse_control_line(R"J({"permissions": {"deny": ["Edit(/x)"]}})J");
    REQUIRE(std::holds_alternative<ControlUpdate>(m));
    CHECK(std::get<ControlUpdate>(m).filesystem);
    CHECK(std::get<ControlUpdate>(parse_control_line(R"({"filesystem": {}})")).filesystem);
}

TEST_CASE("control lines: answers") {
    auto m = parse_control_line(R"({"answer": {"id": 7, "decision": "allow", "remember": true}})");
    REQUIRE(std::holds_alternative<ControlAnswer>(m));
    CHECK(std::get<ControlAnswer>(m).id == 7);
    CHECK(std::get<ControlAnswer>(m).allow);
    CHECK(std::get<ControlAnswer>(m).remember);
    m = parse_control_line(R"({"answer": {"id": 1, "decision": "deny"}})");
    REQUIRE(std::holds_alternative<ControlAnswer>(m));
    CHECK_FALSE(std::get<ControlAnswer>(m).allow);
    CHECK_FALSE(std::get<ControlAnswer>(m).remember);
}

TEST_CASE("control lines: malformed ones are errors with a message") {
    const char* bad[] = {
        "",
        "not json",
        "[1]",
        "{}",
        R"({"bogus": 1})",
        R"({"network": [1]})",
        R"({"network": {}, "sandbox": {}})",
        R"({"answer": {"id": -1, "decision": "allow"}})",
        R"({"answer": {"id": "1", "decision": "allow"}})",
        R"({"answer": {"id": 1, "decision": "maybe"}})",
        R"({"answer": {"id": 1, "decision": "allow", "remember": "yes"}})",
        R"({"answer": {"id": 1, "decision": "allow", "extra": 1}})",
        R"({"answer": {"id": 1, "decision": "allow"}, "network": {}})",
        R"({"answer": 3})",
        "{\"network\": {\"allowedDomains\": [\"\xff\"]}",
    };
    for (const char* line : bad) {
        INFO(line);
        auto m = parse_control_line(line);
        REQUIRE(std::holds_alternative<ControlError>(m));
        CHECK_FALSE(std::get<ControlError>(m).message.empty());
    }
}

TEST_CASE("control lines: random bytes are an error or a message, never a crash") {
    const std::string alphabet = "{}[]\":,0123 answerdcllowynetk\\\xff";
    std::uint32_t state = 777;
    auto next = [&] {
        state = state * 1664525u + 1013904223u;
        return state >> 8;
    };
    for (int n = 0; n < 20000; ++n) {
        std::string line;
        const std::size_t size = next() % 48;
        for (std::size_t i = 0; i < size; ++i)
            line += alphabet[next() % alphabet.size()];
        auto m = parse_control_line(line);
        if (auto* e = std::get_if<ControlError>(&m)) CHECK_FALSE(e->message.empty());
    }
}
