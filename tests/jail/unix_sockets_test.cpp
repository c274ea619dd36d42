// The pieces of per-path Unix sockets that need no jail: the listed paths, the address copy and its path,
// the check of a path against the list (in a root of our own), and the connector process. The jail itself:
// test_unix_sockets.py.
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "jail/unix_sockets.hpp"

namespace us = cordon::jail::unix_sockets;

TEST_CASE("listed Unix socket paths expand ~ and drop relative ones") {
    std::vector<cordon::policy::Rule> rules{
        {"/var/run/docker.sock", {}}, {"~/.ssh/agent.sock", {}}, {"relative.sock", {}}, {"~", {}}};
    CHECK(us::listed_paths(rules, "/home/u") ==
          std::vector<std::string>{"/var/run/docker.sock", "/home/u/.ssh/agent.sock", "/home/u"});
}

TEST_CASE("the address is copied as the kernel reads it") {
    sockaddr_un un{};
    un.sun_family = AF_UNIX;
    std::strcpy(un.sun_path, "/run/x.sock");
    sockaddr_storage out{};
    socklen_t len = 0;
    const auto addr = reinterpret_cast<std::uint64_t>(&un);
    REQUIRE(us::read_address(::getpid(), addr, sizeof un, out, len) == 0);
    CHECK(len == sizeof un);
    CHECK(us::filesystem_path(out, len) == std::optional<std::string>("/run/x.sock"));
    // No NUL within the length: the path ends there.
    const auto short_len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 4);
    CHECK(us::filesystem_path(out, short_len) == std::optional<std::string>("/run"));
    CHECK(us::read_address(::getpid(), addr, sizeof(sockaddr_storage) + 1, out, len) == EINVAL);
    CHECK(us::read_address(::getpid(), addr, 0xffffffffULL, out, len) == EINVAL);  // -1 as an int
    CHECK(us::read_address(::getpid(), 0, sizeof un, out, len) == EFAULT);
    // Abstract, unnamed and other families have no path.
    un.sun_path[0] = '\0';
    REQUIRE(us::read_address(::getpid(), addr, sizeof un, out, len) == 0);
    CHECK_FALSE(us::filesystem_path(out, len));
    CHECK_FALSE(us::filesystem_path(out, static_cast<socklen_t>(offsetof(sockaddr_un, sun_path))));
    out.ss_family = AF_INET;
    CHECK_FALSE(us::filesystem_path(out, sizeof out));
}

TEST_CASE("a path is checked by the file it leads to, symlinks followed in the root") {
    char tmpl[] = "/tmp/cordon-us-XXXXXX";
    REQUIRE(::mkdtemp(tmpl) != nullptr);
    const std::filesystem::path dir(tmpl);
    int a = ::socket(AF_UNIX, SOCK_STREAM, 0), b = ::socket(AF_UNIX, SOCK_STREAM, 0);
    auto bind_to = [](int s, const std::filesystem::path& p) {
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        std::strncpy(un.sun_path, p.c_str(), sizeof un.sun_path - 1);
        return ::bind(s, reinterpret_cast<sockaddr*>(&un), sizeof un) == 0 && ::listen(s, 4) == 0;
    };
    REQUIRE(bind_to(a, dir / "listed.sock"));
    REQUIRE(bind_to(b, dir / "other.sock"));
    std::filesystem::create_symlink("listed.sock", dir / "to-listed");
    std::filesystem::create_symlink(dir / "other.sock", dir / "to-other");
    // The root is our own "/": paths are the real ones.
    int root = ::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
    const std::vector<std::string> listed{(dir / "listed.sock").string(), (dir / "missing.sock").string()};
    const std::vector<us::Pinned> pinned = us::pin_listed(listed);
    REQUIRE(pinned.size() == 1);  // the missing one is left out
    int target = -1;
    CHECK(us::open_listed(root, (dir / "to-listed").string(), pinned, listed, target) == 0);
    REQUIRE(target >= 0);
    int c = ::socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(us::connect_to(c, target) == 0);
    ::close(c);
    ::close(target);
    CHECK(us::open_listed(root, (dir / "to-other").string(), pinned, listed, target) == EPERM);
    CHECK(us::open_listed(root, (dir / "other.sock").string(), pinned, listed, target) == EPERM);
    CHECK(us::open_listed(root, (dir / "nothing").string(), pinned, listed, target) == EPERM);
    CHECK(us::open_listed(root, (dir / "missing.sock").string(), pinned, listed, target) == ENOENT);
    // The listed path swapped for a symlink to another socket: what it named at the start is what counts.
    std::filesystem::rename(dir / "listed.sock", dir / "listed.real");
    std::filesystem::create_symlink(dir / "other.sock", dir / "listed.sock");
    CHECK(us::open_listed(root, (dir / "listed.sock").string(), pinned, listed, target) == EPERM);
    CHECK(us::open_listed(root, (dir / "listed.real").string(), pinned, listed, target) == 0);
    ::close(target);
    for (const auto& p : pinned)
        ::close(p.fd);
    ::close(root);
    ::close(a);
    ::close(b);
    std::filesystem::remove_all(dir);
}

TEST_CASE("addresses the supervisor performs need no privilege the command lacks") {
    sockaddr_storage s{};
    auto* in = reinterpret_cast<sockaddr_in*>(&s);
    in->sin_family = AF_INET;
    in->sin_port = htons(80);
    CHECK(us::needs_privilege(s, sizeof(sockaddr_in), false) == EACCES);
    CHECK(us::needs_privilege(s, sizeof(sockaddr_in), true) == 0);
    in->sin_port = htons(1024);
    CHECK(us::needs_privilege(s, sizeof(sockaddr_in), false) == 0);
    in->sin_port = 0;
    CHECK(us::needs_privilege(s, sizeof(sockaddr_in), false) == 0);
    s = {};
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&s);
    in6->sin6_family = AF_INET6;
    in6->sin6_port = htons(443);
    CHECK(us::needs_privilege(s, sizeof(sockaddr_in6), false) == EACCES);
    s = {};
    auto* nl = reinterpret_cast<sockaddr_nl*>(&s);
    nl->nl_family = AF_NETLINK;
    CHECK(us::needs_privilege(s, sizeof(sockaddr_nl), true) == 0);
    nl->nl_groups = 1;
    CHECK(us::needs_privilege(s, sizeof(sockaddr_nl), true) == EPERM);
    CHECK(us::needs_privilege(s, sizeof(sockaddr_nl), false) == 0);
    s = {};
    s.ss_family = AF_PACKET;
    CHECK(us::needs_privilege(s, sizeof s, true) == EPERM);
    s.ss_family = AF_UNSPEC;
    CHECK(us::needs_privilege(s, sizeof s, true) == 0);
}

namespace {

// A listener of ours in a fresh directory; `backlog` 0 with fillers makes connects wait.
struct TestListener {
    std::filesystem::path dir, path;
    int fd = -1;
    explicit TestListener(int backlog = 8) {
        char tmpl[] = "/tmp/cordon-connector-test-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        dir = tmpl;
        path = dir / "l.sock";
        fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        std::strncpy(un.sun_path, path.c_str(), sizeof un.sun_path - 1);
        REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&un), sizeof un) == 0);
        ::chmod(path.c_str(), 0777);
        ::chmod(dir.c_str(), 0755);
        REQUIRE(::listen(fd, backlog) == 0);
    }
    ~TestListener() {
        ::close(fd);
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    int target() const { return ::open(path.c_str(), O_PATH | O_CLOEXEC); }
};

// The identity the connector takes: nobody's (it exists for a root supervisor and a caller of another
// identity; unprivileged, the supervisor connects itself).
us::Connector::Identity identity() {
    return {65534, 65534, {}};
}

}  // namespace

TEST_CASE("the connector connects as a process of the caller's identity and ends with its owner") {
    if (::geteuid() != 0) {
        WARN("not root: skipped (only a root supervisor forks connectors)");
        return;
    }
    TestListener l;
    auto who = identity();
    pid_t pid = -1;
    {
        auto c = us::Connector::spawn(who);
        REQUIRE(c);
        pid = c->pid();
        for (int round = 0; round < 2; ++round) {  // one process for every connect
            int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int target = l.target();
            CHECK(c->connect(sock, target, std::chrono::milliseconds(5), std::chrono::milliseconds(5),
                             us::Connector::Turn::Waits) == 0);
            int conn = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
            REQUIRE(conn >= 0);
            ucred cred{};
            socklen_t len = sizeof cred;
            REQUIRE(::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0);
            CHECK(cred.pid == pid);
            CHECK(cred.uid == who.uid);
            CHECK(cred.gid == who.gid);
            ::close(conn);
            ::close(sock);
            ::close(target);
        }
        // Something that is not a socket file: the connect's own errno.
        int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        const auto plain = l.dir / "plain";
        ::close(::open(plain.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0666));
        ::chmod(plain.c_str(), 0666);
        int file = ::open(plain.c_str(), O_PATH | O_CLOEXEC);
        CHECK(c->connect(sock, file, std::chrono::milliseconds(5), std::chrono::milliseconds(5),
                         us::Connector::Turn::Waits) == ECONNREFUSED);
        ::close(file);
        ::close(sock);
        CHECK(c->alive());
    }
    // Gone (and reaped) with its owner.
    CHECK(::kill(pid, 0) != 0);
    CHECK(errno == ESRCH);
}

TEST_CASE("the connector's connect to a full backlog ends at its deadline, a killed connector refuses") {
    if (::geteuid() != 0) {
        WARN("not root: skipped (only a root supervisor forks connectors)");
        return;
    }
    TestListener l(0);
    std::vector<int> fillers;
    for (;;) {
        int f = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        std::strncpy(un.sun_path, l.path.c_str(), sizeof un.sun_path - 1);
        if (::connect(f, reinterpret_cast<const sockaddr*>(&un), sizeof un) != 0) {
            ::close(f);
            break;
        }
        fillers.push_back(f);
    }
    auto c = us::Connector::spawn(identity());
    REQUIRE(c);
    int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // blocking: the connect would wait
    int target = l.target();
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(c->connect(sock, target, std::chrono::milliseconds(20), std::chrono::milliseconds(5),
                     us::Connector::Turn::Waits) == EINTR);
    CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1));
    // Killed behind our back (by the caller's user on the host): refused, and known to be gone.
    REQUIRE(::kill(c->pid(), SIGKILL) == 0);
    CHECK(c->connect(sock, target, std::chrono::milliseconds(5), std::chrono::milliseconds(5),
                     us::Connector::Turn::Waits) == ECONNREFUSED);
    CHECK_FALSE(c->alive());
    ::close(sock);
    ::close(target);
    for (int f : fillers)
        ::close(f);
}

TEST_CASE("a connect that waits for its turn gets it while retries keep coming") {
    if (::geteuid() != 0) {
        WARN("not root: skipped (only a root supervisor forks connectors)");
        return;
    }
    // Retries of connects to a full backlog (a millisecond each, back to back, from four threads) and one
    // connect to a free listener, as a non-blocking connect asks: it is answered by the kernel's result, not
    // EINTR after its queue wait.
    TestListener full(0);
    std::vector<int> fillers;
    for (;;) {
        int f = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_un un{};
        un.sun_family = AF_UNIX;
        std::strncpy(un.sun_path, full.path.c_str(), sizeof un.sun_path - 1);
        if (::connect(f, reinterpret_cast<const sockaddr*>(&un), sizeof un) != 0) {
            ::close(f);
            break;
        }
        fillers.push_back(f);
    }
    TestListener free_listener;
    auto c = us::Connector::spawn(identity());
    REQUIRE(c);
    std::atomic<bool> stop{false};
    std::vector<std::thread> retries;
    for (int t = 0; t < 4; ++t)
        retries.emplace_back([&] {
            int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            int target = full.target();
            while (!stop.load())
                c->connect(sock, target, std::chrono::milliseconds(1), std::chrono::milliseconds(50),
                           us::Connector::Turn::Yields);
            ::close(target);
            ::close(sock);
        });
    int refused = 0;
    for (int round = 0; round < 20; ++round) {
        int sock = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        int target = free_listener.target();
        const int err = c->connect(sock, target, std::chrono::milliseconds(5), std::chrono::milliseconds(50),
                                   us::Connector::Turn::Waits);
        if (err != 0) ++refused;
        if (err == 0) ::close(::accept4(free_listener.fd, nullptr, nullptr, SOCK_CLOEXEC));
        ::close(target);
        ::close(sock);
    }
    stop = true;
    for (auto& t : retries)
        t.join();
    CHECK(refused == 0);
    for (int f : fillers)
        ::close(f);
}
