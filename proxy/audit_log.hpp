// The audit log: one JSON object per line for every decision and every closed connection (DESIGN.md, "Audit
// log"). Each line is written with a single write(2) as soon as the writer thread gets to it; a SIGTERM drain
// flushes the queue, so nothing decided is lost while the log's reader keeps up.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
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
    // A refusal's deniedDomainReasons text (policy.hpp DomainReason), empty when none applies.
    std::string reason_text;
    // false: the policy refused it but report-only let it through (the line says `enforced: false`).
    bool enforced = true;
    std::string upstream_ip;
    std::string
        error;       // upstream failure for an allowed request: "nxdomain", "connect-refused", "timeout", ...
    int status = 0;  // the HTTP status / SOCKS reply code sent to the client when the proxy answered itself
    // A request inside an inspected connection (proto "https"): its full URL and the bytes of the request
    // (head and body as forwarded) and of the response.
    bool inner = false;
    std::string url;
    std::uint64_t request_bytes = 0, response_bytes = 0;
    // proto "transparent": where the client connected ("198.18.0.7:443"), and the TLS ClientHello's server
    // name when it sent one (`sni_mismatch` when it names another host than `host`).
    std::string original_dst;
    std::string sni;
    bool sni_mismatch = false;
    std::string sni_error;  // a TLS client's connection without `sni`: why
    // proto "host-port" / "publish" (forward.hpp): the address the connection came from ("127.0.0.1:40312").
    std::string client;
};

// One query to the jail's DNS stub. `host` is the name asked for, `port` 53.
struct DnsEvent {
    std::uint64_t id = 0;
    std::string proto;  // "udp" | "tcp"
    std::string host;   // the name (lower case, no trailing dot)
    std::uint16_t port = 53;
    std::string qtype;     // "A", "AAAA", "MX", ...
    std::string decision;  // "allow" | "deny"
    std::string rule, source, reason;
    std::string rcode;   // "NOERROR" | "NXDOMAIN" | "SERVFAIL" | "NOTIMP"
    std::string answer;  // the fake address given, empty for none
};

// A write the jail refused (cordon run: jail/notify.hpp RefusedWrite), explained as `cordon check write:PATH`
// explains it.
struct WriteEvent {
    std::uint64_t id = 0;    // the refusal's number in the run (1, 2, ...)
    std::string path;        // where the write lands, in the jail's view
    std::string operation;   // "open", "mkdir", "remove", "rename", ...
    std::string reason;      // "default-deny" (outside the writable areas), "blocked-by-denylist" (a deny
                             // rule), "always-read-only" (a protected path, or another write rule)
    std::string rule;        // the rule's text (`.bashrc`, a denyWrite entry, "write rule gitfile"); empty:
                             // none (outside every writable area)
    std::string source;      // where the rule came from
    std::string write_rule;  // the write rule that refused (policy/write_rules.hpp): "path-rules", ...
    std::string error;       // what the caller got: "EROFS", "EACCES"
    std::int64_t pid = 0;    // the caller, in the supervisor's PID namespace
    std::string program;     // its name (comm), empty when it was gone
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
std::string format_dns(const DnsEvent& e, const std::string& sandbox,
                       std::chrono::system_clock::time_point now);
std::string format_close(const CloseEvent& e, const std::string& sandbox,
                         std::chrono::system_clock::time_point now);
std::string format_write(const WriteEvent& e, const std::string& sandbox,
                         std::chrono::system_clock::time_point now);
// RFC 3339 UTC with milliseconds: 2026-11-29T19:30:00.123Z
std::string rfc3339_ms(std::chrono::system_clock::time_point t);

// Writes the lines on a writer thread, so that a slow or stopped reader (a full pipe, a stuck disk) never
// blocks or spins the proxy's loop. Lines wait in a queue bounded in bytes; a line that finds it full is
// dropped and counted (cordon_audit_dropped_total), and the count is reported on stderr when the log closes.
// Each line leaves with one write(2) of the whole line, in order. The descriptor's flags are never changed
// (`-` shares stdout with the jailed command in `cordon run`).
class AuditLog {
  public:
    // Bytes of formatted lines that may wait for the writer (about 14,000 typical lines).
    static constexpr std::size_t kDefaultQueueBytes = 4u << 20;

    // `target`: a file path (appended to, created 0640), "-" for stdout, empty for no log. Throws
    // std::runtime_error naming the file when it cannot be opened.
    AuditLog(const std::string& target, std::string sandbox,
             std::size_t max_queue_bytes = kDefaultQueueBytes);
    // Writes what is queued (see flush), reports dropped lines on stderr, stops the writer.
    ~AuditLog();
    AuditLog(const AuditLog&) = delete;
    AuditLog& operator=(const AuditLog&) = delete;

    void decision(const DecisionEvent& e);
    void close(const CloseEvent& e);
    void dns(const DnsEvent& e);
    void write(const WriteEvent& e);
    // Waits until every line queued so far is written, then fdatasync for files. Bounded: gives up when the
    // reader has taken nothing for `stall` or after `limit` in all (the rest is counted as dropped), and
    // waits only 100 ms more when a previous flush gave up and nothing moved since. True when everything was
    // written.
    bool flush(std::chrono::milliseconds stall = std::chrono::milliseconds(2000),
               std::chrono::milliseconds limit = std::chrono::milliseconds(5000));
    // Opens the file again by its name (SIGHUP, for logrotate without copytruncate): lines after this go to
    // the new file. No-op for stdout or no log. Returns an error message (the old file stays in use).
    std::optional<std::string> reopen();

    bool enabled() const { return writer_ != nullptr; }
    // Lines refused because the queue was full.
    std::uint64_t dropped_queue_full() const;
    // Lines that a write(2) failed for, or that were still queued when the log gave up on its reader.
    std::uint64_t dropped_unwritten() const;

    struct Writer;  // the queue and the thread (audit_log.cpp)

  private:
    void enqueue(std::string line);

    std::string target_;
    std::string sandbox_;
    std::shared_ptr<Writer> writer_;
};

}  // namespace cordon::proxy
