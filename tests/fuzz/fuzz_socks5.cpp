// The SOCKS5 handshake parsers (proxy/socks5.cpp) as the front-end drives them: greeting, username/password,
// request, each re-parsed as bytes trickle in. Checks that a parse never claims more bytes than it saw, that
// a complete message stays complete (with the same length) when more bytes follow, and that a prefix of a
// complete message is never called invalid.
//
// Input: the bytes a client sends (greeting, then auth when it offered 0x02, then the request).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/socks5.hpp"

namespace socks5 = cordon::proxy::socks5;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

// Parses `input` with `parse` as the front-end does (one byte more each time until it is not Incomplete).
// Returns the bytes the message took, 0 when it is invalid or incomplete.
template <typename Parse>
std::size_t step(std::string_view input, Parse parse) {
    for (std::size_t n = 0; n <= input.size(); ++n) {
        auto r = parse(input.substr(0, n));
        if (r.state == socks5::Parse::Incomplete) continue;
        if (r.state == socks5::Parse::Invalid) {
            // Invalid is final: more bytes never make it valid.
            check(parse(input).state == socks5::Parse::Invalid);
            return 0;
        }
        check(r.consumed > 0 && r.consumed <= n);
        auto whole = parse(input);
        check(whole.state == socks5::Parse::Complete && whole.consumed == r.consumed);
        return r.consumed;
    }
    return 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size > 1024) return 0;  // the messages are at most 515 bytes; byte-by-byte re-parsing is quadratic
    std::string_view input(reinterpret_cast<const char*>(data), size);

    bool wants_auth = false;
    std::size_t used = step(input, [&](std::string_view b) {
        auto g = socks5::parse_greeting(b);
        if (g.state == socks5::Parse::Complete)
            for (auto m : g.methods)
                wants_auth = wants_auth || m == socks5::kMethodUserPass;
        return g;
    });
    if (used == 0) return 0;
    input.remove_prefix(used);
    if (wants_auth) {
        used = step(input, [](std::string_view b) {
            auto u = socks5::parse_userpass(b);
            if (u.state == socks5::Parse::Complete) check(u.user.size() <= 255 && u.password.size() <= 255);
            return u;
        });
        if (used == 0) return 0;
        input.remove_prefix(used);
    }
    step(input, [](std::string_view b) {
        auto r = socks5::parse_request(b);
        if (r.state == socks5::Parse::Complete) check(!r.host.empty() || r.address_type != 0x03);
        if (r.state == socks5::Parse::Invalid) check(r.reply != socks5::kSucceeded);
        if (r.state == socks5::Parse::Complete) (void)socks5::make_reply(socks5::kSucceeded, r.host, r.port);
        return r;
    });
    return 0;
}
