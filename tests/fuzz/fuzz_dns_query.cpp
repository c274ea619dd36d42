// The DNS stub's query parser (proxy/dns_message.cpp): any bytes a jailed program sends to 127.0.0.1:53.
// Checks that a parsed query's name obeys the limits the parser promises and that an answer built from it
// (NXDOMAIN, and one fake address of the query's type) is a well-formed message the parser then refuses as a
// query (it is a response).
//
// Input: the UDP payload (or one TCP message without its length prefix).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "proxy/dns_message.hpp"

namespace dns = cordon::proxy::dns;

namespace {
void check(bool ok) {
    if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    auto query = dns::parse_dns_query(std::span<const std::uint8_t>(data, size));
    if (!query) return 0;
    check(query->name.size() <= 255);
    for (char c : query->name)
        check(c >= 0x20 && c < 0x7f && !(c >= 'A' && c <= 'Z'));
    auto nx = dns::make_dns_answer(*query, dns::kNxDomain);
    check(nx.size() >= 12 && nx[0] == data[0] && nx[1] == data[1]);
    check(!dns::parse_dns_query(nx));  // a response is never taken for a query
    std::vector<std::vector<std::uint8_t>> fake;
    if (query->type == dns::kTypeA) fake.push_back({198, 18, 0, 1});
    if (query->type == dns::kTypeAAAA) fake.push_back(std::vector<std::uint8_t>(16, 0xfd));
    auto answer = dns::make_dns_answer(*query, dns::kNoError, fake, 1);
    check(answer.size() >= nx.size());
    return 0;
}
