// The server name (SNI) of a TLS ClientHello, read from the first bytes a client sent without consuming them
// (the transparent front-end logs it, and refuses a mismatch with --strict-sni). A pure function on bytes,
// so a fuzz target can call it.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace cordon::proxy {

struct ClientHelloSni {
    enum class Status {
        NeedMore,  // the start of a TLS handshake, but not all of the ClientHello yet
        NotTls,    // not a TLS ClientHello (or a malformed one)
        TooLarge,  // a ClientHello over kMaxHello
        NoSni,     // a ClientHello without a server name
        Found,     // `name`: the first host_name, lower case
    };
    Status status = Status::NotTls;
    std::string name;
    static constexpr std::size_t kMaxHello = 64 * 1024;
};

// Reads the ClientHello from `bytes` (TLS records of type handshake; the ClientHello may span several). At
// most kMaxHello of handshake is looked at: a longer one is TooLarge.
ClientHelloSni client_hello_sni(std::span<const std::uint8_t> bytes);

}  // namespace cordon::proxy
