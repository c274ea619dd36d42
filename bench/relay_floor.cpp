// The floor of a relayed TCP transfer on this machine: the least a user-space relay can do per byte. One
// connection at a time: accept on 127.0.0.1:LISTEN, connect to 127.0.0.1:TARGET, then one thread per
// direction moving bytes with blocking splice() through a pipe of the same size cordon's relay asks for (512
// KiB). No event loop, no policy, no accounting: what is left is the kernel's work for the second TCP
// connection and the pipe, which any relay (cordon's, socat's, a proxy's) pays. bench/ports.py measures it
// beside cordon's.
//
//   relay_floor LISTEN TARGET READY    (touches READY once listening; runs until killed)
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <thread>

namespace {

sockaddr_in loopback(int port) {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<std::uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    return a;
}

void pump(int from, int to) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return;
    ::fcntl(p[1], F_SETPIPE_SZ, 512 * 1024);
    for (;;) {
        ssize_t n = ::splice(from, nullptr, p[1], nullptr, 512 * 1024, SPLICE_F_MOVE);
        if (n <= 0) break;
        while (n > 0) {
            ssize_t m = ::splice(p[0], nullptr, to, nullptr, static_cast<std::size_t>(n), SPLICE_F_MOVE);
            if (m <= 0) {
                n = -1;
                break;
            }
            n -= m;
        }
        if (n < 0) break;
    }
    ::shutdown(to, SHUT_WR);
    ::close(p[0]);
    ::close(p[1]);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: relay_floor LISTEN TARGET READY\n");
        return 2;
    }
    const int target = std::atoi(argv[2]);
    int l = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    ::setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = loopback(std::atoi(argv[1]));
    if (::bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(l, 16) != 0) {
        std::perror("relay_floor: listen");
        return 1;
    }
    if (FILE* f = std::fopen(argv[3], "w")) std::fclose(f);
    for (;;) {
        int c = ::accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
        if (c < 0) continue;
        int u = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in t = loopback(target);
        if (::connect(u, reinterpret_cast<sockaddr*>(&t), sizeof t) != 0) {
            ::close(c);
            ::close(u);
            continue;
        }
        std::thread up(pump, c, u);
        pump(u, c);
        up.join();
        ::close(c);
        ::close(u);
    }
}
