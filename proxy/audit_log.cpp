#include "proxy/audit_log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cordon::proxy {

std::string rfc3339_ms(std::chrono::system_clock::time_point t) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
    std::time_t secs = static_cast<std::time_t>(ms / 1000);
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char buf[96];
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                  tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
    return buf;
}

namespace {

// Names arrive from the network: dump them with replacement of invalid UTF-8, never throw.
std::string dump(const nlohmann::json& j) {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The fields every event starts with, in the same order for `decision` and `close` lines.
template <typename Event>
nlohmann::json common_fields(const char* event, const Event& e, const std::string& sandbox,
                             std::chrono::system_clock::time_point now) {
    nlohmann::json j;
    j["ts"] = rfc3339_ms(now);
    j["event"] = event;
    j["id"] = e.id;
    j["sandbox"] = sandbox;
    j["proto"] = e.proto;
    j["host"] = e.host;
    j["port"] = e.port;
    return j;
}

}  // namespace

std::string format_decision(const DecisionEvent& e, const std::string& sandbox,
                            std::chrono::system_clock::time_point now) {
    nlohmann::json j = common_fields("decision", e, sandbox, now);
    if (!e.method.empty()) j["method"] = e.method;
    if (!e.path.empty()) j["path"] = e.path;
    j["decision"] = e.decision;
    j["rule"] = e.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.rule);
    if (!e.source.empty()) j["source"] = e.source;
    j["reason"] = e.reason;
    j["upstream_ip"] = e.upstream_ip.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.upstream_ip);
    if (!e.error.empty()) j["error"] = e.error;
    if (e.status != 0) j["status"] = e.status;
    return dump(j);
}

std::string format_close(const CloseEvent& e, const std::string& sandbox,
                         std::chrono::system_clock::time_point now) {
    nlohmann::json j = common_fields("close", e, sandbox, now);
    j["upstream_ip"] = e.upstream_ip.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.upstream_ip);
    j["bytes_up"] = e.bytes_up;
    j["bytes_down"] = e.bytes_down;
    j["duration_ms"] = e.duration.count();
    j["error"] = e.error.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.error);
    return dump(j);
}

AuditLog::AuditLog(const std::string& target, std::string sandbox) : sandbox_(std::move(sandbox)) {
    if (target.empty()) return;
    if (target == "-") {
        fd_ = STDOUT_FILENO;
        return;
    }
    fd_ = ::open(target.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd_ < 0) throw std::runtime_error("cannot open audit log '" + target + "': " + std::strerror(errno));
    owned_ = true;
}

AuditLog::~AuditLog() {
    flush();
    if (owned_) ::close(fd_);
}

void AuditLog::decision(const DecisionEvent& e) {
    if (fd_ < 0) return;
    write_line(format_decision(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::close(const CloseEvent& e) {
    if (fd_ < 0) return;
    write_line(format_close(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::write_line(std::string line) {
    line.push_back('\n');
    // One write per line: with O_APPEND the line lands whole, and it is in the kernel before we go on.
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd_, p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) continue;  // a non-blocking stdout pipe: the line must not be lost
            ++write_errors_;
            return;
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
}

void AuditLog::flush() {
    if (owned_ && fd_ >= 0) ::fdatasync(fd_);
}

}  // namespace cordon::proxy
