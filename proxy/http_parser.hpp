// HTTP/1.x message parsing for the proxy's HTTP front-end (requests from clients) and its upstream side
// (responses), on llhttp in strict mode plus the checks a proxy needs against request smuggling. A message
// head is delivered whole; bodies are streamed as they arrive, without their framing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct llhttp__internal_s;

namespace cordon::proxy {

struct HttpHead {
    // Request: method and target as sent. Response: status code and reason.
    std::string method;
    std::string target;
    int status = 0;
    std::string reason;
    int version_major = 1, version_minor = 1;
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
    bool chunked = false;
    std::optional<std::uint64_t> content_length;
    bool keep_alive = true;  // what the sender asked for (HTTP/1.0 default close)
    bool upgrade =
        false;  // a request (not CONNECT) asking to switch protocols: Upgrade + Connection: upgrade

    // The first value of a header (case-insensitive name), if present.
    std::optional<std::string_view> header(std::string_view name) const;
    std::size_t header_count(std::string_view name) const;
};

class HttpParser {
  public:
    enum class Kind { Request, Response };
    enum class Status {
        Ok,               // every byte consumed
        HeadComplete,     // paused after a head (request parsers): `consumed` bytes were used, the rest wait
        MessageComplete,  // paused after a message: `consumed` bytes were used, the rest belong to the next
                          // one
        Error,            // malformed: `error` says why, `error_status` what to answer (400 or 431)
    };
    // Every feed() that does not consume all its bytes either ends in a terminal state (Error, after which
    // every feed() returns Error at once) or stops at one of the two pauses each message passes exactly once
    // (its head, its end). The message after a CONNECT head, an Upgrade or a 101 is not HTTP: the parser
    // refuses it (Error) instead of pausing again. So a caller's loop that resumes after each pause always
    // progresses.
    static constexpr std::size_t kMaxHead = 64 * 1024;  // request line / status line and headers together
    struct Result {
        Status status = Status::Ok;
        std::size_t consumed = 0;
    };

    // Receives body bytes (already de-chunked) and, for response parsers, heads.
    struct Sink {
        virtual void on_head(const HttpHead& head) = 0;  // response parsers only (requests pause instead)
        virtual void on_body(std::string_view data) = 0;
        virtual ~Sink() = default;
    };

    HttpParser(Kind kind, Sink* sink);
    ~HttpParser();
    HttpParser(const HttpParser&) = delete;
    HttpParser& operator=(const HttpParser&) = delete;

    Result feed(std::string_view data);
    // Continue after HeadComplete or MessageComplete.
    void resume();
    // The peer closed: completes a message delimited by EOF. False when a message was cut short.
    bool finish();
    // For a response parser: the next response answers HEAD (no body whatever its headers say).
    void set_no_body(bool no_body) { no_body_ = no_body; }

    const HttpHead& head() const { return head_; }
    const std::string& error() const { return error_; }
    int error_status() const { return error_status_; }
    // True between the first byte of a message and its end.
    bool in_message() const { return in_message_; }
    // Bytes of the head being read (0 once it is complete): what a half-read head holds in memory.
    std::size_t head_size() const { return in_message_ && !head_done_ ? head_size_ : 0; }
    bool is_connect() const;
    bool should_keep_alive() const;
    // After MessageComplete on a response parser: was it an interim (1xx) response?
    bool interim() const { return head_.status >= 100 && head_.status < 200 && head_.status != 101; }

  private:
    struct Callbacks;
    Kind kind_;
    Sink* sink_;
    std::unique_ptr<::llhttp__internal_s> parser_;
    HttpHead head_;
    std::string field_, value_;
    bool in_message_ = false;
    bool no_body_ = false;
    Status pause_ = Status::Ok;
    bool failed_ = false;
    bool scanning_head_ = true, seen_line_ = false;
    std::size_t head_size_ = 0;  // bytes of the current head so far
    bool head_done_ = false;
    int error_status_ = 400;
    char last_ = 0;
    std::string error_;
};

// Hop-by-hop headers (RFC 9110 7.6.1 plus Proxy-*), never forwarded. `connection_tokens` are the names listed
// in the message's Connection header, also hop-by-hop, except the ones the message cannot be forwarded
// without (Host, Content-Length, Transfer-Encoding): the proxy writes the framing itself and keeps Host, so
// `Connection: Content-Length` cannot unframe a body.
bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& connection_tokens);
std::vector<std::string> connection_tokens(const HttpHead& head);
bool iequals(std::string_view a, std::string_view b);

// Whether a Host header's value names `host` (normalised, IPv6 without brackets) and `port`. The value is
// `name`, `name:port`, `[v6]`, `[v6]:port` or a bare IPv6 literal, its name normalised as the policy does
// (policy::parse_target_host); without a port it names the host on whatever port the request is for. Both
// HTTP front-ends (absolute-form requests, and requests inside an inspected tunnel) refuse a request whose
// Host names anything else.
bool host_header_names(std::string_view value, const std::string& host, std::uint16_t port);

// The reason phrase of a status the proxy answers with itself ("Error" for others).
const char* reason_phrase(int status);

// An answer the proxy gives itself, whatever front-end or stage gives it (absolute-form requests, requests
// inside an inspected connection): a plain-text `body`, `X-Proxy-Error` when not empty, `Connection: close`
// unless `keep_alive`, no body bytes for a HEAD request (`head_only`). `reason` replaces the status's phrase;
// `extra_headers` (whole lines, each ending in CRLF) are added, such as a 407's Proxy-Authenticate.
std::string proxy_answer(int status, std::string_view x_proxy_error, std::string_view body, bool keep_alive,
                         bool head_only, std::string_view reason = {}, std::string_view extra_headers = {});

}  // namespace cordon::proxy
