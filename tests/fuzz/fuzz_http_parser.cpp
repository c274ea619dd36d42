// The HTTP parser (proxy/http_parser.cpp, llhttp plus the proxy's smuggling checks) as the front-end drives
// it: requests (pipelined, chunked or Content-Length bodies) and responses, fed in slices of a fuzzed size,
// resumed after each pause, finished at EOF. Checks the parser's promises: it consumes no more than it was
// given, always progresses, and stays in Error once there.
//
// Input: byte 0 = flags (bit 0: response parser, bit 1: the response answers HEAD, bits 2-7: slice size - 1),
// then the bytes a peer sends.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "proxy/http_parser.hpp"

namespace {

using cordon::proxy::HttpHead;
using cordon::proxy::HttpParser;

struct Sink final : HttpParser::Sink {
    std::size_t heads = 0, body = 0;
    void on_head(const HttpHead& head) override {
        ++heads;
        (void)head.header("content-length");
    }
    void on_body(std::string_view data) override { body += data.size(); }
};

void check(bool ok) {
    if (!ok) std::abort();
}

// What the front-end does with a complete head: hop-by-hop filtering and framing questions.
void inspect(const HttpParser& parser) {
    const HttpHead& head = parser.head();
    auto tokens = cordon::proxy::connection_tokens(head);
    for (const auto& [name, value] : head.headers)
        (void)cordon::proxy::is_hop_by_hop(name, tokens);
    (void)head.header_count("host");
    (void)parser.is_connect();
    (void)parser.should_keep_alive();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::uint8_t flags = data[0];
    const bool response = (flags & 1) != 0;
    const std::size_t slice = static_cast<std::size_t>(flags >> 2) + 1;
    std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);

    Sink sink;
    HttpParser parser(response ? HttpParser::Kind::Response : HttpParser::Kind::Request, &sink);
    if (response) parser.set_no_body((flags & 2) != 0);
    bool failed = false;
    std::size_t steps = 0;
    while (!input.empty() && !failed) {
        std::string_view chunk = input.substr(0, slice);
        input.remove_prefix(chunk.size());
        while (!chunk.empty()) {
            check(++steps < 4 * size + 16);  // every pause is a message's head or end: it must progress
            auto r = parser.feed(chunk);
            check(r.consumed <= chunk.size());
            if (r.status == HttpParser::Status::Error) {
                check(!parser.error().empty());
                check(parser.error_status() >= 400 && parser.error_status() < 600);
                check(parser.feed("GET / HTTP/1.1\r\n\r\n").status == HttpParser::Status::Error);
                failed = true;
                break;
            }
            if (r.status == HttpParser::Status::Ok) {
                check(r.consumed == chunk.size());
                break;
            }
            if (r.status == HttpParser::Status::HeadComplete) {
                inspect(parser);
                if (parser.is_connect()) return 0;  // the rest is a tunnel's, not HTTP
            }
            chunk.remove_prefix(r.consumed);
            parser.resume();
        }
    }
    if (!failed) (void)parser.finish();
    return 0;
}
