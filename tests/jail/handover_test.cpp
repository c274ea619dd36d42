// The one SCM_RIGHTS message of jail/handover.cpp (send_fds, receive_fds), on real socketpairs with real
// pipes as the descriptors passed: a descriptor counts as closed when its pipe's write end gets EPIPE.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cerrno>
#include <cstring>
#include <vector>

#include "jail/detail/handover.hpp"

namespace detail = cordon::jail::detail;

namespace {

struct Pipe {
    int read = -1, write = -1;
    Pipe() {
        int p[2];
        REQUIRE(::pipe2(p, O_CLOEXEC) == 0);
        read = p[0];
        write = p[1];
    }
    ~Pipe() {
        if (read >= 0) ::close(read);
        if (write >= 0) ::close(write);
    }
    void close_read() {
        ::close(read);
        read = -1;
    }
    // True while some descriptor for the read end is still open somewhere in this process.
    bool read_end_open() const {
        ::signal(SIGPIPE, SIG_IGN);
        return ::write(write, "x", 1) == 1;
    }
};

struct Pair {
    int a = -1, b = -1;
    explicit Pair(int type = SOCK_SEQPACKET) {
        int sv[2];
        REQUIRE(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) == 0);
        a = sv[0];
        b = sv[1];
    }
    ~Pair() {
        if (a >= 0) ::close(a);
        if (b >= 0) ::close(b);
    }
};

// What `fd` (a pipe's read end) reads once `p` wrote `what` into the pipe.
std::string through(int fd, Pipe& p, const char* what) {
    REQUIRE(::write(p.write, what, std::strlen(what)) == static_cast<ssize_t>(std::strlen(what)));
    char buf[64] = {};
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

}  // namespace

TEST_CASE("one descriptor passes, close-on-exec, with the data") {
    Pair pair;
    Pipe p;
    const int tag = 42;
    REQUIRE(detail::send_fds(pair.a, &tag, sizeof tag, &p.read, 1) == static_cast<ssize_t>(sizeof tag));
    p.close_read();
    int got = 0, fd = -1;
    std::size_t nfds = 0;
    REQUIRE(detail::receive_fds(pair.b, &got, sizeof got, &fd, 1, nfds) == static_cast<ssize_t>(sizeof got));
    CHECK(got == 42);
    REQUIRE(nfds == 1);
    CHECK((::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0);
    CHECK(through(fd, p, "one") == "one");
    ::close(fd);
    CHECK_FALSE(p.read_end_open());
}

TEST_CASE("several descriptors pass in their order") {
    Pair pair(SOCK_STREAM);
    Pipe p[3];
    const int fds[3] = {p[0].read, p[1].read, p[2].read};
    const char names[] = "abc";
    REQUIRE(detail::send_fds(pair.a, names, sizeof names, fds, 3) == static_cast<ssize_t>(sizeof names));
    for (auto& x : p)
        x.close_read();
    char got[8] = {};
    int in[detail::kMaxPassedFds];
    std::size_t nfds = 0;
    REQUIRE(detail::receive_fds(pair.b, got, sizeof got, in, detail::kMaxPassedFds, nfds) ==
            static_cast<ssize_t>(sizeof names));
    CHECK(std::string(got) == "abc");
    REQUIRE(nfds == 3);
    CHECK(through(in[0], p[0], "zero") == "zero");
    CHECK(through(in[1], p[1], "one") == "one");
    CHECK(through(in[2], p[2], "two") == "two");
    for (std::size_t i = 0; i < nfds; ++i)
        ::close(in[i]);
}

TEST_CASE("a message with more descriptors than asked for is refused and every one it brought closed") {
    Pair pair;
    Pipe p[3];
    const int fds[3] = {p[0].read, p[1].read, p[2].read};
    const int tag = 7;
    REQUIRE(detail::send_fds(pair.a, &tag, sizeof tag, fds, 3) == static_cast<ssize_t>(sizeof tag));
    for (auto& x : p)
        x.close_read();
    for (auto& x : p)
        REQUIRE(x.read_end_open());  // in flight: the message holds them
    int got = 0;
    int in[2] = {-1, -1};
    std::size_t nfds = 99;
    errno = 0;
    CHECK(detail::receive_fds(pair.b, &got, sizeof got, in, 2, nfds) == -1);
    CHECK(errno == EBADMSG);
    CHECK(nfds == 0);
    for (auto& x : p)
        CHECK_FALSE(x.read_end_open());
}

TEST_CASE("a message whose descriptors did not fit is refused and those that arrived are closed") {
    // Sent by hand: send_fds itself refuses more than kMaxPassedFds.
    Pair pair;
    constexpr std::size_t kMany = detail::kMaxPassedFds + 4;
    std::vector<Pipe> p(kMany);
    int fds[kMany];
    for (std::size_t i = 0; i < kMany; ++i)
        fds[i] = p[i].read;
    CHECK(detail::send_fds(pair.a, "x", 1, fds, kMany) == -1);
    CHECK(errno == EINVAL);
    char data = 'x';
    iovec iov{&data, 1};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof fds);
    std::memcpy(CMSG_DATA(c), fds, sizeof fds);
    REQUIRE(::sendmsg(pair.a, &msg, 0) == 1);
    for (auto& x : p)
        x.close_read();
    int in[detail::kMaxPassedFds];
    std::size_t nfds = 0;
    CHECK(detail::receive_fds(pair.b, &data, 1, in, detail::kMaxPassedFds, nfds) == -1);
    CHECK(errno == EBADMSG);
    CHECK(nfds == 0);
    for (auto& x : p)
        CHECK_FALSE(x.read_end_open());
}

TEST_CASE("data without descriptors, and the end of file") {
    Pair pair;
    const int tag = 3;
    REQUIRE(detail::send_fds(pair.a, &tag, sizeof tag, nullptr, 0) == static_cast<ssize_t>(sizeof tag));
    int got = 0, fd = -1;
    std::size_t nfds = 1;
    CHECK(detail::receive_fds(pair.b, &got, sizeof got, &fd, 1, nfds) == static_cast<ssize_t>(sizeof got));
    CHECK(got == 3);
    CHECK(nfds == 0);
    CHECK(detail::receive_fds(pair.b, &got, sizeof got, &fd, 1, nfds, MSG_DONTWAIT) == -1);
    CHECK(errno == EAGAIN);
    ::close(pair.a);
    pair.a = -1;
    CHECK(detail::receive_fds(pair.b, &got, sizeof got, &fd, 1, nfds) == 0);
}

TEST_CASE("the seccomp listener's message takes one descriptor with its tag and nothing else") {
    Pair pair(SOCK_STREAM);
    Pipe p;
    REQUIRE(detail::send_notify_fd(pair.a, p.read));
    p.close_read();
    bool again = true;
    const int fd = detail::receive_notify_fd(pair.b, again);
    CHECK_FALSE(again);
    REQUIRE(fd >= 0);
    CHECK(through(fd, p, "listener") == "listener");
    ::close(fd);
    // Another message with a descriptor but not the tag: refused, the descriptor closed.
    Pipe q;
    const int wrong = 1;
    REQUIRE(detail::send_fds(pair.a, &wrong, sizeof wrong, &q.read, 1) == static_cast<ssize_t>(sizeof wrong));
    q.close_read();
    CHECK(detail::receive_notify_fd(pair.b, again) == -1);
    CHECK_FALSE(again);
    CHECK_FALSE(q.read_end_open());
    CHECK(detail::receive_notify_fd(pair.b, again) == -1);
    CHECK(again);
}

// The plan carries the port forwards (MountPlan::host_ports, jail_sockets) to the init.
TEST_CASE("the plan carries the host ports and the socket source", "[handover][ports]") {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) == 0);
    cordon::jail::MountPlan plan;
    plan.env = {"A=1"};
    plan.host_ports = {5432, 6379};
    plan.jail_sockets = true;
    REQUIRE(detail::send_plan(pair[0], plan));
    cordon::jail::MountPlan got;
    REQUIRE(detail::receive_plan(pair[1], got));
    CHECK(got.host_ports == std::vector<std::uint16_t>{5432, 6379});
    CHECK(got.jail_sockets);
    CHECK(got.env == std::vector<std::string>{"A=1"});
    ::close(pair[0]);
    ::close(pair[1]);
}
