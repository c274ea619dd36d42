// `cordon connect [--proxy ADDR:PORT] HOST PORT`: a SOCKS5 client for ssh's ProxyCommand. Inside a jail,
// GIT_SSH_COMMAND runs `ssh -o ProxyCommand='cordon connect %h %p'`, so ssh reaches HOST:PORT through the
// jail's proxy (which decides on the name, as for every other client) and needs nothing but cordon itself.
// Relays stdin to the connection and the connection to stdout until both sides are done.
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/syntax.hpp"
#include "proxy/address_guard.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kConnectHelp =
    "usage: cordon connect [--proxy ADDR:PORT] HOST PORT\n"
    "\n"
    "Connects to HOST:PORT through a SOCKS5 proxy (default the jail's, 127.0.0.1:1080) and relays stdin and\n"
    "stdout: an ssh ProxyCommand (`ssh -o ProxyCommand='cordon connect %h %p' host`). The proxy decides on\n"
    "HOST by name; a refusal is reported on stderr.\n"
    "Exit status: 0 when the connection ends, 1 when the proxy refuses or cannot be reached, 2 usage error.\n"
    "\n"
    "  --proxy ADDR:PORT      the SOCKS5 proxy ([v6]:PORT for IPv6)\n"
    "  -h, --help             print this help\n";

const char* socks_reply_text(unsigned code) {
    switch (code) {
        case 0x01:
            return "general failure";
        case 0x02:
            return "not allowed by the policy";
        case 0x03:
            return "network unreachable";
        case 0x04:
            return "host unreachable";
        case 0x05:
            return "connection refused";
        case 0x06:
            return "timed out";
        case 0x07:
            return "command not supported";
        case 0x08:
            return "address type not supported";
    }
    return "unknown reply";
}

bool write_all(int fd, const char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::write(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

bool read_exact(int fd, unsigned char* data, std::size_t size) {
    while (size > 0) {
        ssize_t n = ::read(fd, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// The SOCKS5 handshake (no authentication, CONNECT by domain name so the proxy decides on the name).
// Empty on success, else what went wrong.
std::string socks5_connect(int fd, const std::string& host, std::uint16_t port) {
    const unsigned char hello[] = {0x05, 0x01, 0x00};
    unsigned char reply[4];
    if (!write_all(fd, reinterpret_cast<const char*>(hello), sizeof hello) || !read_exact(fd, reply, 2))
        return "the proxy closed the connection";
    if (reply[0] != 0x05 || reply[1] != 0x00) return "the proxy wants authentication";
    std::string request = {0x05, 0x01, 0x00, 0x03, static_cast<char>(host.size())};
    request += host;
    request += static_cast<char>(port >> 8);
    request += static_cast<char>(port & 0xff);
    if (!write_all(fd, request.data(), request.size()) || !read_exact(fd, reply, 4))
        return "the proxy closed the connection";
    if (reply[1] != 0x00)
        return "the proxy refused " + host + ":" + std::to_string(port) + " (SOCKS5 reply " +
               std::to_string(reply[1]) + ": " + socks_reply_text(reply[1]) + ")";
    std::size_t rest = 0;
    if (reply[3] == 0x01) {
        rest = 4 + 2;
    } else if (reply[3] == 0x04) {
        rest = 16 + 2;
    } else if (reply[3] == 0x03) {
        unsigned char length = 0;
        if (!read_exact(fd, &length, 1)) return "the proxy closed the connection";
        rest = length + 2u;
    } else {
        return "malformed SOCKS5 reply";
    }
    std::array<unsigned char, 300> bound{};
    if (!read_exact(fd, bound.data(), rest)) return "the proxy closed the connection";
    return {};
}

// Copies stdin -> fd and fd -> stdout until the remote side closes (stdin's end is passed on as a
// half-close).
int relay(int fd) {
    std::array<char, 65536> buffer;
    bool stdin_open = true;
    while (true) {
        pollfd fds[2] = {{fd, POLLIN, 0}, {0, static_cast<short>(stdin_open ? POLLIN : 0), 0}};
        if (::poll(fds, stdin_open ? 2 : 1, -1) < 0) {
            if (errno == EINTR) continue;
            return 1;
        }
        if (fds[0].revents != 0) {
            ssize_t n = ::read(fd, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return 0;
            if (!write_all(1, buffer.data(), static_cast<std::size_t>(n))) return 1;
        }
        if (stdin_open && fds[1].revents != 0) {
            ssize_t n = ::read(0, buffer.data(), buffer.size());
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {
                stdin_open = false;
                ::shutdown(fd, SHUT_WR);
                continue;
            }
            if (!write_all(fd, buffer.data(), static_cast<std::size_t>(n))) return 1;
        }
    }
}

}  // namespace

int cmd_connect(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    std::string proxy_address = "127.0.0.1:1080";
    std::vector<std::string> positional;
    while (!args.done()) {
        if (args.peek() == "--help" || args.peek() == "-h") {
            std::cout << kConnectHelp;
            return 0;
        }
        if (args.flag("--proxy")) {
            proxy_address = args.value();
            continue;
        }
        if (args.peek() == "--") {
            args.next();
            for (auto& a : args.rest())
                positional.push_back(a);
            break;
        }
        if (args.peek().size() > 1 && args.peek()[0] == '-') throw UsageError("unknown flag " + args.peek());
        positional.push_back(args.next());
    }
    if (positional.size() != 2) throw UsageError("expected HOST PORT");
    const std::string& host = positional[0];
    if (host.empty() || host.size() > 255) throw UsageError("HOST must be 1 to 255 characters");
    auto port = policy::parse_port(positional[1]);
    if (auto* why = std::get_if<std::string>(&port)) throw UsageError(*why);

    auto proxy_parts = policy::split_host_port(proxy_address, policy::PortSpec::Required);
    if (auto* why = std::get_if<std::string>(&proxy_parts)) throw UsageError("--proxy: " + *why);
    const auto& hp = std::get<policy::HostPortText>(proxy_parts);
    auto address = proxy::Address::parse(hp.host, *hp.port);
    if (!address) throw UsageError("--proxy needs an IP address and port, got '" + proxy_address + "'");

    int fd = ::socket(address->family(), SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || ::connect(fd, address->sa(), address->length) != 0) {
        std::cerr << "cordon connect: cannot reach the proxy at " << address->to_string() << ": "
                  << std::strerror(errno) << "\n";
        return 1;
    }
    if (std::string error = socks5_connect(fd, host, std::get<std::uint16_t>(port)); !error.empty()) {
        std::cerr << "cordon connect: " << error << "\n";
        ::close(fd);
        return 1;
    }
    int status = relay(fd);
    ::close(fd);
    return status;
}

}  // namespace cordon::cli
