// DNS query parsing and answers for the stub (dns_message.hpp).
#include "proxy/dns_message.hpp"

namespace cordon::proxy::dns {

namespace {

std::uint16_t u16(std::span<const std::uint8_t> b, std::size_t at) {
    return static_cast<std::uint16_t>(b[at] << 8 | b[at + 1]);
}

void put16(std::vector<std::uint8_t>& out, std::uint16_t v) {
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v));
}

// Skips one resource record (the additional section's OPT); false when it does not fit. Its name must be
// uncompressed labels (OPT's is the root).
bool skip_record(std::span<const std::uint8_t> b, std::size_t& pos) {
    for (int labels = 0;; ++labels) {
        if (pos >= b.size() || labels > 127) return false;
        std::uint8_t len = b[pos++];
        if (len == 0) break;
        if (len > 63 || b.size() - pos < len) return false;
        pos += len;
    }
    if (b.size() - pos < 10) return false;
    std::uint16_t rdlength = u16(b, pos + 8);
    pos += 10;
    if (b.size() - pos < rdlength) return false;
    pos += rdlength;
    return true;
}

}  // namespace

std::optional<Query> parse_dns_query(std::span<const std::uint8_t> b) {
    constexpr std::size_t kHeader = 12;
    if (b.size() < kHeader || b.size() > 65535) return std::nullopt;
    Query q;
    q.id = u16(b, 0);
    q.flags = u16(b, 2);
    if (q.flags & 0x8000) return std::nullopt;  // a response
    if (u16(b, 4) != 1 || u16(b, 6) != 0 || u16(b, 8) != 0 || u16(b, 10) > 1) return std::nullopt;
    std::size_t pos = kHeader;
    std::size_t name_length = 0;
    for (;;) {
        if (pos >= b.size()) return std::nullopt;
        std::uint8_t len = b[pos++];
        if (len == 0) break;
        // A query has no reason to compress its only name: 0xc0 (a pointer) and 0x40/0x80 (reserved) are out.
        if (len > 63 || b.size() - pos < len) return std::nullopt;
        name_length += len + 1u;
        if (name_length > 254) return std::nullopt;
        if (!q.name.empty()) q.name.push_back('.');
        for (std::size_t i = 0; i < len; ++i) {
            std::uint8_t c = b[pos + i];
            if (c <= 0x20 || c >= 0x7f || c == '.') return std::nullopt;
            q.name.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c));
        }
        pos += len;
    }
    if (b.size() - pos < 4) return std::nullopt;
    q.type = u16(b, pos);
    q.klass = u16(b, pos + 2);
    pos += 4;
    q.question.assign(b.begin() + kHeader, b.begin() + static_cast<std::ptrdiff_t>(pos));
    if (u16(b, 10) == 1 && !skip_record(b, pos)) return std::nullopt;
    if (pos != b.size()) return std::nullopt;
    return q;
}

std::vector<std::uint8_t> make_dns_answer(const Query& query, std::uint8_t rcode,
                                          const std::vector<std::vector<std::uint8_t>>& addresses,
                                          std::uint32_t ttl) {
    std::vector<std::uint8_t> out;
    out.reserve(12 + query.question.size() + addresses.size() * 28);
    put16(out, query.id);
    // QR, the query's opcode, AA, the query's RD, RA, rcode.
    std::uint16_t flags = static_cast<std::uint16_t>(0x8000 | (query.flags & 0x7800) | 0x0400 |
                                                     (query.flags & 0x0100) | 0x0080 | (rcode & 0x0f));
    put16(out, flags);
    put16(out, 1);
    put16(out, static_cast<std::uint16_t>(addresses.size()));
    put16(out, 0);
    put16(out, 0);
    out.insert(out.end(), query.question.begin(), query.question.end());
    for (const auto& a : addresses) {
        put16(out, 0xc00c);  // the question's name
        put16(out, query.type);
        put16(out, kClassIN);
        put16(out, static_cast<std::uint16_t>(ttl >> 16));
        put16(out, static_cast<std::uint16_t>(ttl));
        put16(out, static_cast<std::uint16_t>(a.size()));
        out.insert(out.end(), a.begin(), a.end());
    }
    return out;
}

std::string type_name(std::uint16_t type) {
    switch (type) {
        case 1:
            return "A";
        case 2:
            return "NS";
        case 5:
            return "CNAME";
        case 6:
            return "SOA";
        case 12:
            return "PTR";
        case 15:
            return "MX";
        case 16:
            return "TXT";
        case 28:
            return "AAAA";
        case 33:
            return "SRV";
        case 64:
            return "SVCB";
        case 65:
            return "HTTPS";
        case 255:
            return "ANY";
    }
    return "TYPE" + std::to_string(type);
}

}  // namespace cordon::proxy::dns
