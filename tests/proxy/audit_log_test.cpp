#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <vector>

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

namespace {

// A temporary directory for one test, removed with everything in it.
struct TempDir {
    std::string path;
    TempDir() {
        char tmpl[] = "/tmp/cordon-audit-XXXXXX";
        REQUIRE(::mkdtemp(tmpl));
        path = tmpl;
    }
    ~TempDir() { std::filesystem::remove_all(path); }
};

DecisionEvent numbered(std::uint64_t i, std::size_t path_bytes = 0) {
    DecisionEvent e;
    e.id = i;
    e.proto = "http";
    e.host = "example.com";
    e.port = 80;
    e.method = "GET";
    e.path = "/" + std::string(path_bytes, 'p');
    e.decision = "allow";
    e.reason = "allowed";
    return e;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// Every line parses (none torn or interleaved) and ids only go up; returns the ids.
std::vector<std::uint64_t> ids_of(const std::string& text) {
    std::vector<std::uint64_t> ids;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        REQUIRE(end != std::string::npos);
        auto j = nlohmann::json::parse(text.substr(start, end - start));
        auto id = j["id"].get<std::uint64_t>();
        if (!ids.empty()) CHECK(id > ids.back());
        ids.push_back(id);
        start = end + 1;
    }
    return ids;
}

// Reads the pipe until it is empty for 200 ms.
std::string drain(int fd) {
    std::string out;
    char buf[65536];
    for (;;) {
        pollfd p{fd, POLLIN, 0};
        if (::poll(&p, 1, 200) <= 0) return out;
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n <= 0) return out;
        out.append(buf, static_cast<std::size_t>(n));
    }
}

}  // namespace

TEST_CASE("audit log writes every line whole and in order, flush waits for them", "[unit]") {
    TempDir dir;
    std::string path = dir.path + "/audit.jsonl";
    {
        AuditLog log(path, "sb");
        for (std::uint64_t i = 1; i <= 5000; ++i)
            log.decision(numbered(i));
        CHECK(log.flush());
        auto ids = ids_of(read_file(path));
        CHECK(ids.size() == 5000);
        CHECK(log.dropped_queue_full() == 0);
        CHECK(log.dropped_unwritten() == 0);
    }
    CHECK(ids_of(read_file(path)).size() == 5000);
}

TEST_CASE("audit log never blocks on a reader that stopped, drops only when the queue is full", "[unit]") {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    // The log opens the pipe by name, as `--audit-log /dev/stdout` would; nobody reads it for now.
    std::string target = "/proc/self/fd/" + std::to_string(fds[1]);
    {
        AuditLog log(target, "", 256 * 1024);
        // 20,000 lines of ~1 KiB: 20 MiB, far more than the pipe (64 KiB) and the queue (256 KiB) hold. The
        // old log blocked in write(2) on the first full pipe, here forever.
        for (std::uint64_t i = 1; i <= 20000; ++i)
            log.decision(numbered(i, 1000));
        CHECK(log.dropped_queue_full() > 0);
        CHECK(log.dropped_queue_full() < 20000);
        // A flush gives up on a stopped reader, and a second one does not wait long again.
        CHECK_FALSE(log.flush(std::chrono::milliseconds(200), std::chrono::milliseconds(1000)));
        auto t0 = std::chrono::steady_clock::now();
        CHECK_FALSE(log.flush(std::chrono::milliseconds(3000), std::chrono::milliseconds(5000)));
        CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500));

        // The reader comes back: everything queued arrives, whole and in order.
        std::string got;
        std::thread reader([&] { got = drain(fds[0]); });
        CHECK(log.flush());
        reader.join();
        auto ids = ids_of(got);
        CHECK(ids.size() + log.dropped_queue_full() == 20000);
        CHECK(ids.front() == 1);  // the first lines were queued, the drops came when the queue was full
        CHECK(log.dropped_unwritten() == 0);

        // Lines queued after the queue emptied are accepted again.
        log.decision(numbered(30000));
        CHECK(log.flush());
        CHECK(ids_of(drain(fds[0])) == std::vector<std::uint64_t>{30000});
    }
    ::close(fds[0]);
    ::close(fds[1]);
}

TEST_CASE("audit log on a non-blocking stdout that is full neither blocks nor spins", "[unit]") {
    // stdout is shared (the shell, or the jailed command in `cordon run`); someone made it O_NONBLOCK. The
    // old log retried EAGAIN in a loop on the caller's thread.
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0);
    std::fflush(stdout);
    int saved = ::dup(STDOUT_FILENO);
    REQUIRE(saved >= 0);
    ::dup2(fds[1], STDOUT_FILENO);
    std::uint64_t dropped = 0;
    bool gave_up = false, flushed = false;
    double cpu_ms = 0;
    std::string got;
    {
        AuditLog log("-", "", 2 << 20);
        for (std::uint64_t i = 1; i <= 1000; ++i)
            log.decision(numbered(i, 1000));
        dropped = log.dropped_queue_full();
        // The writer waits in poll(2) for the pipe, it does not spin: a spin would burn the whole 500 ms.
        timespec a{}, b{};
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
        gave_up = !log.flush(std::chrono::milliseconds(500), std::chrono::milliseconds(1000));
        ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
        cpu_ms =
            static_cast<double>(b.tv_sec - a.tv_sec) * 1e3 + static_cast<double>(b.tv_nsec - a.tv_nsec) / 1e6;
        std::thread reader([&] { got = drain(fds[0]); });
        flushed = log.flush();
        reader.join();
    }
    ::dup2(saved, STDOUT_FILENO);
    ::close(saved);
    ::close(fds[0]);
    ::close(fds[1]);
    CHECK(dropped == 0);  // 1000 lines of ~1.2 KiB fit the 2 MiB queue
    CHECK(gave_up);
    CHECK(cpu_ms < 100);
    CHECK(flushed);
    auto ids = ids_of(got);
    CHECK(ids.size() == 1000);
}

TEST_CASE("audit log gives up on a stopped reader at exit and says how many lines it lost", "[unit]") {
    int fds[2];
    REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
    std::string target = "/proc/self/fd/" + std::to_string(fds[1]);
    // Capture stderr for the report.
    TempDir dir;
    std::string err_path = dir.path + "/stderr";
    int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    REQUIRE(err >= 0);
    int saved = ::dup(STDERR_FILENO);
    ::dup2(err, STDERR_FILENO);
    auto t0 = std::chrono::steady_clock::now();
    {
        AuditLog log(target, "", 1 << 20);
        for (std::uint64_t i = 1; i <= 2000; ++i)
            log.decision(numbered(i, 1000));
        CHECK(log.dropped_queue_full() > 0);
        CHECK_FALSE(log.flush(std::chrono::milliseconds(200), std::chrono::milliseconds(1000)));
    }  // the destructor does not wait again: the writer is left inside write(2)
    auto waited = std::chrono::steady_clock::now() - t0;
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    ::close(err);
    CHECK(waited < std::chrono::seconds(5));
    std::string report = read_file(err_path);
    INFO(report);
    CHECK(report.find("cordon: audit log '" + target + "': ") == 0);
    CHECK(report.find("line(s) dropped") != std::string::npos);
    CHECK(report.find("with the queue full") != std::string::npos);
    CHECK(report.find("its reader stopped taking lines") != std::string::npos);
    CHECK(std::count(report.begin(), report.end(), '\n') == 1);
    // The reader goes away: the writer's write(2) fails with EPIPE (no SIGPIPE) and the thread ends.
    ::close(fds[0]);
    ::close(fds[1]);
}

TEST_CASE("audit log reopen: lines after it go to a new file of the same name (logrotate)", "[unit]") {
    TempDir dir;
    std::string path = dir.path + "/audit.jsonl";
    AuditLog log(path, "");
    log.decision(numbered(1));
    log.decision(numbered(2));
    REQUIRE(log.flush());
    std::filesystem::rename(path, path + ".1");
    CHECK_FALSE(log.reopen());
    log.decision(numbered(3));
    REQUIRE(log.flush());
    CHECK(ids_of(read_file(path + ".1")) == std::vector<std::uint64_t>{1, 2});
    CHECK(ids_of(read_file(path)) == std::vector<std::uint64_t>{3});
    CHECK((std::filesystem::status(path).permissions() & std::filesystem::perms::others_read) ==
          std::filesystem::perms::none);
    // A reopen that cannot happen says why and keeps the file in use.
    std::filesystem::remove(path);
    std::filesystem::remove(path + ".1");
    std::filesystem::remove(dir.path);
    auto error = log.reopen();
    REQUIRE(error);
    CHECK(error->find(path) != std::string::npos);
    log.decision(numbered(4));
    CHECK(log.flush());
    CHECK(log.dropped_unwritten() == 0);
    std::filesystem::create_directory(dir.path);
    AuditLog none("", "");
    CHECK_FALSE(none.enabled());
    CHECK_FALSE(none.reopen());
    CHECK(none.flush());
}
