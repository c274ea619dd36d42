#include "proxy/socks5.hpp"

#include <arpa/inet.h>

#include <cstring>

namespace cordon::proxy::socks5 {

namespace {
std::uint8_t byte(std::string_view b, std::size_t i) {
    return static_cast<std::uint8_t>(b[i]);
}
}  // namespace

Greeting parse_greeting(std::string_view b) {
    Greeting g;
    if (b.size() < 2) return g;
    if (byte(b, 0) != kVersion) {
        g.state = Parse::Invalid;
        return g;
    }
    std::size_t n = byte(b, 1);
    if (n == 0) {
        g.state = Parse::Invalid;
        return g;
    }
    if (b.size() < 2 + n) return g;
    for (std::size_t i = 0; i < n; ++i)
        g.methods.push_back(byte(b, 2 + i));
    g.consumed = 2 + n;
    g.state = Parse::Complete;
    return g;
}

UserPass parse_userpass(std::string_view b) {
    UserPass u;
    if (b.empty()) return u;
    if (byte(b, 0) != 0x01) {
        u.state = Parse::Invalid;
        return u;
    }
    if (b.size() < 2) return u;
    std::size_t ulen = byte(b, 1);
    if (b.size() < 2 + ulen + 1) return u;
    std::size_t plen = byte(b, 2 + ulen);
    if (b.size() < 3 + ulen + plen) return u;
    u.user = std::string(b.substr(2, ulen));
    u.password = std::string(b.substr(3 + ulen, plen));
    u.consumed = 3 + ulen + plen;
    u.state = Parse::Complete;
    return u;
}

Request parse_request(std::string_view b) {
    Request r;
    if (b.size() < 4) return r;
    if (byte(b, 0) != kVersion) {
        r.state = Parse::Invalid;
        r.error = "not a SOCKS5 request";
        return r;
    }
    r.command = byte(b, 1);
    r.address_type = byte(b, 3);
    std::size_t addr_len = 0, offset = 4;
    switch (r.address_type) {
        case 0x01:
            addr_len = 4;
            break;
        case 0x04:
            addr_len = 16;
            break;
        case 0x03:
            if (b.size() < 5) return r;
            addr_len = byte(b, 4);
            offset = 5;
            break;
        default:
            r.state = Parse::Invalid;
            r.reply = kAddressTypeNotSupported;
            r.error = "unknown address type " + std::to_string(r.address_type);
            return r;
    }
    if (b.size() < offset + addr_len + 2) return r;
    r.consumed = offset + addr_len + 2;
    r.port = static_cast<std::uint16_t>(byte(b, offset + addr_len) << 8 | byte(b, offset + addr_len + 1));
    char text[INET6_ADDRSTRLEN] = {};
    if (r.address_type == 0x01) {
        inet_ntop(AF_INET, b.data() + offset, text, sizeof text);
        r.host = text;
    } else if (r.address_type == 0x04) {
        inet_ntop(AF_INET6, b.data() + offset, text, sizeof text);
        r.host = text;
    } else {
        r.host = std::string(b.substr(offset, addr_len));
    }
    if (r.command != 0x01) {
        r.state = Parse::Invalid;
        r.reply = kCommandNotSupported;
        r.error = r.command == 0x02   ? "BIND is not supported"
                  : r.command == 0x03 ? "UDP ASSOCIATE is not supported"
                                      : "unknown command " + std::to_string(r.command);
        return r;
    }
    if (r.host.empty() || r.host.find('\0') != std::string::npos) {
        r.state = Parse::Invalid;
        r.reply = kGeneralFailure;
        r.error = "empty or malformed domain name";
        return r;
    }
    if (r.port == 0) {
        r.state = Parse::Invalid;
        r.reply = kGeneralFailure;
        r.error = "port 0";
        return r;
    }
    r.state = Parse::Complete;
    return r;
}

std::string make_reply(std::uint8_t code, const std::string& bound_ip, std::uint16_t bound_port) {
    std::string out{static_cast<char>(kVersion), static_cast<char>(code), 0};
    in6_addr a6{};
    in_addr a4{};
    if (!bound_ip.empty() && inet_pton(AF_INET6, bound_ip.c_str(), &a6) == 1) {
        out.push_back(0x04);
        out.append(reinterpret_cast<const char*>(&a6), 16);
    } else {
        if (!bound_ip.empty()) inet_pton(AF_INET, bound_ip.c_str(), &a4);
        out.push_back(0x01);
        out.append(reinterpret_cast<const char*>(&a4), 4);
    }
    out.push_back(static_cast<char>(bound_port >> 8));
    out.push_back(static_cast<char>(bound_port & 0xff));
    return out;
}

}  // namespace cordon::proxy::socks5
