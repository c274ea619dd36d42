// DNS messages for the jail's DNS stub: one query in, one answer out. Pure functions on bytes (no sockets),
// so the parser can be fuzzed and unit-tested with bad packets. Only what a stub needs: a standard query
// with one question (EDNS's OPT record in the additional section tolerated and ignored), no compression in
// the question; anything else is malformed and the caller drops it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace cordon::proxy::dns {

constexpr std::uint16_t kTypeA = 1;
constexpr std::uint16_t kTypeAAAA = 28;
constexpr std::uint16_t kClassIN = 1;
constexpr std::uint8_t kNoError = 0, kServFail = 2, kNxDomain = 3, kNotImp = 4, kRefused = 5;

struct Query {
    std::uint16_t id = 0;
    std::uint16_t flags = 0;  // as received (opcode, RD, ...)
    std::string name;         // lower case, labels joined by '.', no trailing dot; "" for the root
    std::uint16_t type = 0, klass = 0;
    std::vector<std::uint8_t> question;  // the question section as received, echoed in the answer
    std::uint8_t opcode() const { return static_cast<std::uint8_t>((flags >> 11) & 0x0f); }
};

// A DNS query message (UDP payload, or a TCP message without its length prefix). nullopt for anything
// malformed: shorter than a header, a response, not exactly one question, answer or authority records, more
// than one additional record, a label longer than 63 bytes or a name longer than 255, a compression pointer,
// a label holding '.' or a byte outside printable ASCII, trailing bytes after the records counted.
std::optional<Query> parse_dns_query(std::span<const std::uint8_t> bytes);

// The answer to `query`: its id, question and RD flag, AA and RA set, `rcode`, and one record per address
// in `addresses` (4 bytes for A, 16 for AAAA, of the query's type) with `ttl` seconds.
std::vector<std::uint8_t> make_dns_answer(const Query& query, std::uint8_t rcode,
                                          const std::vector<std::vector<std::uint8_t>>& addresses = {},
                                          std::uint32_t ttl = 0);

// "A", "AAAA", "MX", ... or "TYPE<n>" (the audit log's `qtype`).
std::string type_name(std::uint16_t type);

}  // namespace cordon::proxy::dns
