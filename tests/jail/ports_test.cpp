// The socket source of published ports (jail/ports.hpp): the init's side (serve_socket_request) answering the
// supervisor's requests on a real SOCK_SEQPACKET socketpair, in order, with TCP sockets of the asked family.
#include "jail/ports.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <catch2/catch.hpp>

#include <cerrno>

#include "jail/detail/setup.hpp"

namespace {

int family_of(int fd) {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
    int type = 0;
    socklen_t tlen = sizeof type;
    REQUIRE(::getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tlen) == 0);
    CHECK(type == SOCK_STREAM);
    return a.ss_family;
}

}  // namespace

TEST_CASE("the socket source answers each request with a socket of its family, in order", "[ports]") {
    int pair[2];
    REQUIRE(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) == 0);
    const int supervisor = pair[0], init = pair[1];
    CHECK(cordon::jail::receive_jail_socket(supervisor) == -EAGAIN);  // nothing asked yet
    REQUIRE(cordon::jail::ask_jail_socket(supervisor, AF_INET));
    REQUIRE(cordon::jail::ask_jail_socket(supervisor, AF_INET6));
    cordon::jail::detail::serve_socket_request(init);
    cordon::jail::detail::serve_socket_request(init);
    const int v4 = cordon::jail::receive_jail_socket(supervisor);
    const int v6 = cordon::jail::receive_jail_socket(supervisor);
    REQUIRE(v4 >= 0);
    CHECK(family_of(v4) == AF_INET);
    if (v6 >= 0) {
        CHECK(family_of(v6) == AF_INET6);
        ::close(v6);
    } else {
        CHECK(v6 == -EAFNOSUPPORT);  // a kernel without IPv6
    }
    ::close(v4);
    // A request that is no family gets an error, not a descriptor.
    const char bogus = 'x';
    REQUIRE(::send(supervisor, &bogus, 1, 0) == 1);
    cordon::jail::detail::serve_socket_request(init);
    CHECK(cordon::jail::receive_jail_socket(supervisor) == -EAFNOSUPPORT);
    // The init gone: the source says so.
    ::close(init);
    CHECK(cordon::jail::receive_jail_socket(supervisor) == -EPIPE);
    ::close(supervisor);
}
