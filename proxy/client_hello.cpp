// A TLS ClientHello's server name (client_hello.hpp).
#include "proxy/client_hello.hpp"

#include <algorithm>
#include <vector>

namespace cordon::proxy {

namespace {

using Status = ClientHelloSni::Status;
// Why 64 KiB: larger than any real ClientHello (post-quantum key shares and padding stay under 16 KiB), so
// that a hello padded past one record still has its name read instead of passing as "not TLS".
constexpr std::size_t kMaxHandshake = ClientHelloSni::kMaxHello;
constexpr std::size_t kMaxRecord = 16 * 1024 + 2048;

struct Reader {
    std::span<const std::uint8_t> b;
    std::size_t pos = 0;
    bool ok = true;
    std::size_t left() const { return b.size() - pos; }
    std::uint32_t n(int bytes) {
        if (!ok || left() < static_cast<std::size_t>(bytes)) {
            ok = false;
            return 0;
        }
        std::uint32_t v = 0;
        for (int i = 0; i < bytes; ++i)
            v = v << 8 | b[pos++];
        return v;
    }
    void skip(std::size_t count) {
        if (!ok || left() < count) {
            ok = false;
            return;
        }
        pos += count;
    }
};

ClientHelloSni found(std::span<const std::uint8_t> name) {
    ClientHelloSni r{Status::Found, {}};
    if (name.empty() || name.size() > 255) return {Status::NotTls, {}};
    for (std::uint8_t c : name) {
        if (c <= 0x20 || c >= 0x7f) return {Status::NotTls, {}};
        r.name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
    }
    if (r.name.back() == '.') r.name.pop_back();
    if (r.name.empty()) return {Status::NotTls, {}};  // "." names no host (found by fuzz_client_hello)
    return r;
}

ClientHelloSni parse_hello(std::span<const std::uint8_t> body) {
    Reader r{body};
    r.skip(2 + 32);  // legacy_version, random
    r.skip(r.n(1));  // session id
    std::uint32_t suites = r.n(2);
    if (suites % 2 != 0) return {Status::NotTls, {}};
    r.skip(suites);
    r.skip(r.n(1));  // compression methods
    if (!r.ok) return {Status::NotTls, {}};
    if (r.left() == 0) return {Status::NoSni, {}};  // no extensions at all
    std::uint32_t extensions_length = r.n(2);
    if (!r.ok || r.left() != extensions_length) return {Status::NotTls, {}};
    while (r.left() > 0) {
        std::uint32_t type = r.n(2), length = r.n(2);
        if (!r.ok || r.left() < length) return {Status::NotTls, {}};
        if (type != 0) {
            r.skip(length);
            continue;
        }
        Reader sni{body.subspan(r.pos, length)};
        std::uint32_t list = sni.n(2);
        if (!sni.ok || list != sni.left()) return {Status::NotTls, {}};
        while (sni.left() > 0) {
            std::uint32_t kind = sni.n(1), name_length = sni.n(2);
            if (!sni.ok || sni.left() < name_length) return {Status::NotTls, {}};
            if (kind == 0) return found(sni.b.subspan(sni.pos, name_length));
            sni.skip(name_length);
        }
        return {Status::NoSni, {}};
    }
    return {Status::NoSni, {}};
}

}  // namespace

ClientHelloSni client_hello_sni(std::span<const std::uint8_t> bytes) {
    // Records: type 22 (handshake), version 3.x, length; their payloads concatenated hold the handshake
    // message: type 1 (ClientHello), 24-bit length, body.
    std::vector<std::uint8_t> handshake;
    std::size_t pos = 0;
    for (;;) {
        if (bytes.size() - pos < 5) {
            if (pos < bytes.size() && bytes[pos] != 22) return {Status::NotTls, {}};
            return {Status::NeedMore, {}};
        }
        if (bytes[pos] != 22 || bytes[pos + 1] != 3) return {Status::NotTls, {}};
        std::size_t length = static_cast<std::size_t>(bytes[pos + 3] << 8 | bytes[pos + 4]);
        if (length == 0 || length > kMaxRecord) return {Status::NotTls, {}};
        pos += 5;
        std::size_t have = std::min(length, bytes.size() - pos);
        handshake.insert(handshake.end(), bytes.begin() + static_cast<std::ptrdiff_t>(pos),
                         bytes.begin() + static_cast<std::ptrdiff_t>(pos + have));
        pos += have;
        if (handshake.size() >= 4) {
            if (handshake[0] != 1) return {Status::NotTls, {}};
            std::size_t body = static_cast<std::size_t>(handshake[1]) << 16 |
                               static_cast<std::size_t>(handshake[2]) << 8 | handshake[3];
            if (body > kMaxHandshake) return {Status::TooLarge, {}};
            if (handshake.size() - 4 >= body)
                return parse_hello(std::span<const std::uint8_t>(handshake).subspan(4, body));
        }
        if (have < length) return {Status::NeedMore, {}};
        if (handshake.size() > kMaxHandshake + 4) return {Status::TooLarge, {}};
    }
}

}  // namespace cordon::proxy
