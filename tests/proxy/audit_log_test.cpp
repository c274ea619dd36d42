#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "proxy/audit_log.hpp"

using namespace cordon::proxy;

TEST_CASE("audit decision lines carry the DESIGN.md fields", "[unit]") {
    DecisionEvent e;
    e.id = 7;
    e.proto = "http";
    e.host = "example.com";
    e.port = 80;
    e.method = "GET";
    e.path = "/x";
    e.decision = "deny";
    e.rule = "*.example.com";
    e.source = "/etc/claude-code/managed-settings.json:4 (sandbox.network.deniedDomains[0])";
    e.reason = "blocked-by-denylist";
    auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(1764444600123LL));
    std::string line = format_decision(e, "sb1", t);
    CHECK(line.find('\n') == std::string::npos);
    auto j = nlohmann::json::parse(line);
    CHECK(j["ts"] == "2025-11-29T19:30:00.123Z");
    CHECK(j["event"] == "decision");
    CHECK(j["id"] == 7);
    CHECK(j["sandbox"] == "sb1");
    CHECK(j["proto"] == "http");
    CHECK(j["host"] == "example.com");
    CHECK(j["port"] == 80);
    CHECK(j["method"] == "GET");
    CHECK(j["path"] == "/x");
    CHECK(j["decision"] == "deny");
    CHECK(j["rule"] == "*.example.com");
    CHECK(j["reason"] == "blocked-by-denylist");
    CHECK(j["upstream_ip"].is_null());
}

TEST_CASE("audit close lines and hostile names", "[unit]") {
    CloseEvent c;
    c.id = 3;
    c.proto = "connect";
    c.host = "bad\xff\"name\n";
    c.bytes_up = 10;
    c.bytes_down = 20;
    c.duration = std::chrono::milliseconds(1500);
    c.error = "idle-timeout";
    std::string line = format_close(c, "", std::chrono::system_clock::now());
    CHECK(line.find('\n') == std::string::npos);
    auto j = nlohmann::json::parse(line);
    CHECK(j["event"] == "close");
    CHECK(j["bytes_up"] == 10);
    CHECK(j["bytes_down"] == 20);
    CHECK(j["duration_ms"] == 1500);
    CHECK(j["error"] == "idle-timeout");
}

TEST_CASE("rfc3339 timestamps have milliseconds", "[unit]") {
    auto t = std::chrono::system_clock::time_point(std::chrono::milliseconds(5));
    CHECK(rfc3339_ms(t) == "1970-01-01T00:00:00.005Z");
}
