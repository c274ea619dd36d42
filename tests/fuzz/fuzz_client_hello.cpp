// The transparent front-end's ClientHello reader (proxy/client_hello.cpp): the first bytes a jailed program
// sends on a redirected connection. Checks that a found name is lower case and bounded, and that a name found
// in a prefix of the input is the name found in the whole.
//
// Input: the client's first bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "proxy/client_hello.hpp"

using cordon::proxy::client_hello_sni;
using Status = cordon::proxy::ClientHelloSni::Status;

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::span<const std::uint8_t> bytes(data, size);
    auto whole = client_hello_sni(bytes);
    if (whole.status == Status::Found) {
        check(!whole.name.empty() && whole.name.size() <= 255);
        for (char c : whole.name)
            check(!(c >= 'A' && c <= 'Z'));
    }
    if (size > 0) {
        auto prefix = client_hello_sni(bytes.first(size / 2));
        if (prefix.status == Status::Found) check(whole.status == Status::Found && whole.name == prefix.name);
    }
    return 0;
}
