// The audit log: one JSON object per line for every decision and every closed connection (DESIGN.md, "Audit
// log"). Each line is written with a single write(2) as soon as it is known, so a SIGTERM loses nothing
// decided.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace cordon::proxy {

// Field names are the log's contract with its readers; they live here and nowhere else.
struct DecisionEvent {
    std::uint64_t id = 0;  // connection id; every request of a keep-alive connection shares it
    std::string proto;     // "http" | "connect" | "socks5"
    std::string host;
    std::uint16_t port = 0;
    std::string method;    // http only
    std::string path;      // http only
    std::string decision;  // "allow" | "deny"
    std::string rule;      // the rule's text, empty when none matched
    std::string source;    // where the rule came from: "file:line" or the flag
    std::string
        reason;  // "allowed", "blocked-by-allowlist", "blocked-by-denylist", "blocked-by-address-guard",
                 // "bad-request", "auth-required", "over-connection-limit"
    std::string upstream_ip;
    std::string
        error;       // upstream failure for an allowed request: "nxdomain", "connect-refused", "timeout", ...
    int status = 0;  // the HTTP status / SOCKS reply code sent to the client when the proxy answered itself
};

struct CloseEvent {
    std::uint64_t id = 0;
    std::string proto;
    std::string host;
    std::uint16_t port = 0;
    std::string upstream_ip;
    std::uint64_t bytes_up = 0;    // client -> upstream
    std::uint64_t bytes_down = 0;  // upstream -> client
    std::chrono::milliseconds duration{0};
    std::string error;
};

// Formats one line (without the newline). `now` is the wall-clock time written as `ts`.
std::string format_decision(const DecisionEvent& e, const std::string& sandbox,
                            std::chrono::system_clock::time_point now);
std::string format_close(const CloseEvent& e, const std::string& sandbox,
                         std::chrono::system_clock::time_point now);
// RFC 3339 UTC with milliseconds: 2026-11-29T19:30:00.123Z
std::string rfc3339_ms(std::chrono::system_clock::time_point t);

class AuditLog {
  public:
    // `target`: a file path (appended to, created 0640), "-" for stdout, empty for no log. Throws
    // std::runtime_error naming the file when it cannot be opened.
    AuditLog(const std::string& target, std::string sandbox);
    ~AuditLog();
    AuditLog(const AuditLog&) = delete;
    AuditLog& operator=(const AuditLog&) = delete;

    void decision(const DecisionEvent& e);
    void close(const CloseEvent& e);
    // fsync for files (the lines are already in the kernel; this makes them durable).
    void flush();
    bool enabled() const { return fd_ >= 0; }
    std::uint64_t write_errors() const { return write_errors_; }

  private:
    void write_line(std::string line);

    int fd_ = -1;
    bool owned_ = false;
    std::string sandbox_;
    std::uint64_t write_errors_ = 0;
};

}  // namespace cordon::proxy
