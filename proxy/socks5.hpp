// SOCKS5 (RFC 1928, RFC 1929) message parsing. Each parser looks at the bytes received so far and says
// whether the message is complete; the connection keeps calling it as bytes trickle in (clients may send one
// at a time).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cordon::proxy::socks5 {

inline constexpr std::uint8_t kVersion = 0x05;
inline constexpr std::uint8_t kMethodNoAuth = 0x00;
inline constexpr std::uint8_t kMethodUserPass = 0x02;
inline constexpr std::uint8_t kMethodNone = 0xff;

// Reply codes.
inline constexpr std::uint8_t kSucceeded = 0x00;
inline constexpr std::uint8_t kGeneralFailure = 0x01;
inline constexpr std::uint8_t kNotAllowed = 0x02;
inline constexpr std::uint8_t kNetworkUnreachable = 0x03;
inline constexpr std::uint8_t kHostUnreachable = 0x04;
inline constexpr std::uint8_t kConnectionRefused = 0x05;
inline constexpr std::uint8_t kTtlExpired = 0x06;
inline constexpr std::uint8_t kCommandNotSupported = 0x07;
inline constexpr std::uint8_t kAddressTypeNotSupported = 0x08;

enum class Parse { Incomplete, Complete, Invalid };

struct Greeting {
    Parse state = Parse::Incomplete;
    std::size_t consumed = 0;
    std::vector<std::uint8_t> methods;
};
Greeting parse_greeting(std::string_view bytes);

struct UserPass {
    Parse state = Parse::Incomplete;
    std::size_t consumed = 0;
    std::string user, password;
};
UserPass parse_userpass(std::string_view bytes);

struct Request {
    Parse state = Parse::Incomplete;
    std::size_t consumed = 0;
    std::uint8_t command = 0;
    std::uint8_t address_type = 0;
    std::string host;  // a name, or an IPv4/IPv6 literal (no brackets)
    std::uint16_t port = 0;
    // When Invalid: the reply code to send (0x07 unsupported command, 0x08 address type, 0x01 otherwise) and
    // why.
    std::uint8_t reply = kGeneralFailure;
    std::string error;
};
Request parse_request(std::string_view bytes);

// A reply: VER REP RSV ATYP BND.ADDR BND.PORT. `bound_ip` may be empty (0.0.0.0:0).
std::string make_reply(std::uint8_t code, const std::string& bound_ip = {}, std::uint16_t bound_port = 0);

}  // namespace cordon::proxy::socks5
