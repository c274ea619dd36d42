#include "proxy/audit_log.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <thread>

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
    if (e.inner) j["url"] = e.url;
    j["decision"] = e.decision;
    j["rule"] = e.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.rule);
    if (!e.source.empty()) j["source"] = e.source;
    j["reason"] = e.reason;
    if (!e.reason_text.empty()) j["reason_text"] = e.reason_text;
    if (!e.enforced) j["enforced"] = false;
    j["upstream_ip"] = e.upstream_ip.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.upstream_ip);
    if (!e.error.empty()) j["error"] = e.error;
    if (e.status != 0) j["status"] = e.status;
    if (e.inner) {
        j["bytes_up"] = e.request_bytes;
        j["bytes_down"] = e.response_bytes;
    }
    if (!e.original_dst.empty()) j["original_dst"] = e.original_dst;
    if (!e.sni.empty()) j["sni"] = e.sni;
    if (e.sni_mismatch) j["sni_mismatch"] = true;
    if (!e.sni_error.empty()) j["sni_error"] = e.sni_error;
    if (!e.client.empty()) j["client"] = e.client;
    return dump(j);
}

std::string format_dns(const DnsEvent& e, const std::string& sandbox,
                       std::chrono::system_clock::time_point now) {
    nlohmann::json j = common_fields("dns", e, sandbox, now);
    j["qtype"] = e.qtype;
    j["decision"] = e.decision;
    j["rule"] = e.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.rule);
    if (!e.source.empty()) j["source"] = e.source;
    j["reason"] = e.reason;
    j["rcode"] = e.rcode;
    j["answer"] = e.answer.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.answer);
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

std::string format_write(const WriteEvent& e, const std::string& sandbox,
                         std::chrono::system_clock::time_point now) {
    nlohmann::json j;
    j["ts"] = rfc3339_ms(now);
    j["event"] = "write";
    j["id"] = e.id;
    j["sandbox"] = sandbox;
    j["path"] = e.path;
    j["operation"] = e.operation;
    j["decision"] = "deny";
    j["reason"] = e.reason;
    j["rule"] = e.rule.empty() ? nlohmann::json(nullptr) : nlohmann::json(e.rule);
    if (!e.source.empty()) j["source"] = e.source;
    j["write_rule"] = e.write_rule;
    j["error"] = e.error;
    j["pid"] = e.pid;
    j["program"] = e.program;
    return dump(j);
}

// The queue between the loop thread (which formats and queues lines) and the writer thread (which writes
// them). Shared with the thread, so that a writer stuck in write(2) on a stopped reader can be left behind at
// exit without anything it touches going away under it.
struct AuditLog::Writer {
    std::mutex mu;
    std::condition_variable wake;      // the writer waits here for lines, a new descriptor, or the end
    std::condition_variable progress;  // flush() and the destructor wait here for lines written
    std::deque<std::string> queue;
    std::size_t pending_bytes = 0;  // queued or being written: what the bound counts
    std::size_t max_bytes = 0;
    std::uint64_t accepted = 0;  // lines queued
    std::uint64_t finished = 0;  // lines written, or failed
    std::uint64_t gave_up_at = ~std::uint64_t{0};
    int fd = -1;
    bool owned = false;
    int next_fd = -1;  // from reopen(): taken by the writer between batches
    bool idle = false;
    bool stop = false;
    bool exited = false;
    int last_errno = 0;
    bool torn = false;  // the last line written is incomplete: end it before the next (writer thread only)
    std::atomic<bool> abandon{false};  // give up on the reader: drop what is left, end after this write
    std::atomic<std::uint64_t> dropped_full{0};
    std::atomic<std::uint64_t> unwritten{0};
    std::thread thread;

    ~Writer() {
        if (owned && fd >= 0) ::close(fd);
        if (next_fd >= 0) ::close(next_fd);
    }
};

namespace {

int open_log(const std::string& path) {
    return ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
}

// Part of a line was written, then the write failed (ENOSPC after a short write): the file must not keep a
// line that does not parse, nor glue the next record to it. A regular file is cut back to where the line
// began (freeing space never fails for want of it); anything else gets a newline before the next line.
void untear(AuditLog::Writer& w, int fd, std::size_t written) {
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        off_t end = ::lseek(fd, 0, SEEK_END);
        if (end >= static_cast<off_t>(written) && ::ftruncate(fd, end - static_cast<off_t>(written)) == 0)
            return;
    }
    w.torn = true;
}

// One write(2) for the whole line (more only if the kernel takes part of it). A descriptor someone else made
// non-blocking (stdout is shared) is waited on with poll, here on the writer thread, never on the loop.
bool write_whole(AuditLog::Writer& w, int fd, const std::string& line, int& error) {
    // A line cut short before (a full disk that could not be trimmed) is ended first, so that this one starts
    // a line of its own.
    if (w.torn) {
        if (::write(fd, "\n", 1) != 1) {
            error = errno;
            return false;
        }
        w.torn = false;
    }
    const char* p = line.data();
    std::size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(fd, p, left);
        if (n >= 0) {
            p += n;
            left -= static_cast<std::size_t>(n);
            continue;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            pollfd pfd{fd, POLLOUT, 0};
            ::poll(&pfd, 1, 100);
            if (!w.abandon) continue;
            errno = EAGAIN;
        }
        error = errno;
        if (left < line.size()) untear(w, fd, line.size() - left);
        errno = error;
        return false;
    }
    return true;
}

void run_writer(std::shared_ptr<AuditLog::Writer> self) {
    AuditLog::Writer& w = *self;
    std::unique_lock<std::mutex> lock(w.mu);
    for (;;) {
        if (w.next_fd >= 0) {  // reopened: later lines go to the new file
            if (w.owned) ::close(w.fd);
            w.fd = w.next_fd;
            w.owned = true;
            w.next_fd = -1;
            w.torn = false;
        }
        if (w.queue.empty() || w.abandon) {
            if (w.stop || w.abandon) break;
            w.idle = true;
            w.wake.wait(lock);
            w.idle = false;
            continue;
        }
        std::deque<std::string> batch;
        batch.swap(w.queue);
        const int fd = w.fd;
        lock.unlock();
        for (const std::string& line : batch) {
            int error = 0;
            bool ok = write_whole(w, fd, line, error);
            lock.lock();
            if (w.abandon) break;  // the destructor counted this batch as lost
            w.pending_bytes -= line.size();
            ++w.finished;
            if (!ok) {
                ++w.unwritten;
                w.last_errno = error;
            }
            w.progress.notify_all();
            lock.unlock();
        }
        if (!lock.owns_lock()) {
            batch.clear();  // freed outside the lock, which the loop thread takes for every line
            lock.lock();
        }
    }
    w.exited = true;
    w.progress.notify_all();
}

}  // namespace

AuditLog::AuditLog(const std::string& target, std::string sandbox, std::size_t max_queue_bytes)
    : target_(target), sandbox_(std::move(sandbox)) {
    if (target.empty()) return;
    auto w = std::make_shared<Writer>();
    w->max_bytes = max_queue_bytes;
    if (target == "-") {
        w->fd = STDOUT_FILENO;
    } else {
        w->fd = open_log(target);
        if (w->fd < 0)
            throw std::runtime_error("cannot open audit log '" + target + "': " + std::strerror(errno));
        w->owned = true;
    }
    // The writer takes no signals: they stay with the loop thread (uv_signal, the jail's signalfd), and a
    // reader that goes away gives EPIPE, not SIGPIPE.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    w->thread = std::thread(run_writer, w);
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    writer_ = std::move(w);
}

AuditLog::~AuditLog() {
    if (!writer_) return;
    Writer& w = *writer_;
    bool complete = flush();
    std::uint64_t lost = 0;
    bool exited = false;
    int last_errno = 0;
    {
        std::unique_lock<std::mutex> lock(w.mu);
        w.stop = true;
        if (!complete) {
            // The reader stopped taking lines: what is queued or in the writer's hands is lost.
            lost = w.accepted - w.finished;
            w.unwritten += lost;
            w.queue.clear();
            w.abandon = true;
        }
        w.wake.notify_all();
        exited = w.progress.wait_for(lock, std::chrono::milliseconds(200), [&] { return w.exited; });
        last_errno = w.last_errno;
    }
    // A writer still inside write(2) on a full pipe holds its own reference to the queue: leave it there, it
    // ends when the write returns (or with the process).
    if (exited)
        w.thread.join();
    else
        w.thread.detach();

    std::uint64_t full = w.dropped_full, unwritten = w.unwritten;
    if (full + unwritten > 0) {
        std::string why;
        if (full) why += std::to_string(full) + " with the queue full";
        if (unwritten) {
            if (!why.empty()) why += ", ";
            why += std::to_string(unwritten) + " not written (";
            why += lost ? "its reader stopped taking lines" : std::strerror(last_errno);
            why += ")";
        }
        std::string line = "cordon: audit log " +
                           (target_ == "-" ? std::string("on stdout") : "'" + target_ + "'") + ": " +
                           std::to_string(full + unwritten) + " line(s) dropped: " + why +
                           "; see cordon_audit_dropped_total\n";
        ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
        (void)ignored;
    }
}

void AuditLog::decision(const DecisionEvent& e) {
    if (!writer_) return;
    enqueue(format_decision(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::dns(const DnsEvent& e) {
    if (!writer_) return;
    enqueue(format_dns(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::write(const WriteEvent& e) {
    if (!writer_) return;
    enqueue(format_write(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::close(const CloseEvent& e) {
    if (!writer_) return;
    enqueue(format_close(e, sandbox_, std::chrono::system_clock::now()));
}

void AuditLog::enqueue(std::string line) {
    line.push_back('\n');
    Writer& w = *writer_;
    bool wake = false;
    {
        std::lock_guard<std::mutex> lock(w.mu);
        if (w.abandon || w.pending_bytes + line.size() > w.max_bytes) {
            ++w.dropped_full;
            return;
        }
        w.pending_bytes += line.size();
        w.queue.push_back(std::move(line));
        ++w.accepted;
        wake = w.idle;
    }
    if (wake) w.wake.notify_one();
}

bool AuditLog::flush(std::chrono::milliseconds stall, std::chrono::milliseconds limit) {
    if (!writer_) return true;
    Writer& w = *writer_;
    std::unique_lock<std::mutex> lock(w.mu);
    const std::uint64_t target = w.accepted;
    // Stuck where a previous flush gave up (shutdown flushes more than once): a short look is enough.
    if (w.gave_up_at == w.finished) stall = std::min(stall, std::chrono::milliseconds(100));
    using Clock = std::chrono::steady_clock;
    const auto start = Clock::now();
    auto last_move = start;
    std::uint64_t seen = w.finished;
    while (w.finished < target && !w.exited) {
        auto until = std::min(start + limit, last_move + stall);
        if (Clock::now() >= until) {
            w.gave_up_at = w.finished;
            return false;
        }
        w.progress.wait_until(lock, until);
        if (w.finished != seen) {
            seen = w.finished;
            last_move = Clock::now();
        }
    }
    // The lines are in the kernel; for a file, make them durable too.
    if (w.owned && w.fd >= 0) ::fdatasync(w.fd);
    return w.finished >= target;
}

std::optional<std::string> AuditLog::reopen() {
    if (!writer_ || target_ == "-") return std::nullopt;
    int fd = open_log(target_);
    if (fd < 0) return "cannot reopen audit log '" + target_ + "': " + std::strerror(errno);
    Writer& w = *writer_;
    bool wake = false;
    {
        std::lock_guard<std::mutex> lock(w.mu);
        if (w.next_fd >= 0) ::close(w.next_fd);
        w.next_fd = fd;
        wake = w.idle;
    }
    if (wake) w.wake.notify_one();
    return std::nullopt;
}

std::uint64_t AuditLog::dropped_queue_full() const {
    return writer_ ? writer_->dropped_full.load() : 0;
}

std::uint64_t AuditLog::dropped_unwritten() const {
    return writer_ ? writer_->unwritten.load() : 0;
}

}  // namespace cordon::proxy
