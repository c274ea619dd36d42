#include "proxy/http_parser.hpp"

#include <llhttp.h>
#include <strings.h>

#include <algorithm>
#include <cctype>

#include "policy/policy.hpp"
#include "policy/syntax.hpp"

namespace cordon::proxy {

bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && strncasecmp(a.data(), b.data(), a.size()) == 0;
}

std::optional<std::string_view> HttpHead::header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
        if (iequals(n, name)) return std::string_view(v);
    }
    return std::nullopt;
}

std::size_t HttpHead::header_count(std::string_view name) const {
    return static_cast<std::size_t>(
        std::count_if(headers.begin(), headers.end(), [&](const auto& h) { return iequals(h.first, name); }));
}

std::vector<std::string> connection_tokens(const HttpHead& head) {
    // Names a message cannot be forwarded without, whatever its Connection header says.
    auto protected_name = [](std::string_view t) {
        return iequals(t, "host") || iequals(t, "content-length") || iequals(t, "transfer-encoding");
    };
    std::vector<std::string> out;
    for (const auto& [n, v] : head.headers) {
        if (!iequals(n, "connection")) continue;
        std::size_t start = 0;
        while (start <= v.size()) {
            std::size_t comma = v.find(',', start);
            if (comma == std::string::npos) comma = v.size();
            std::string token = v.substr(start, comma - start);
            token.erase(0, token.find_first_not_of(" \t"));
            token.erase(token.find_last_not_of(" \t") + 1);
            if (!token.empty() && !protected_name(token)) out.push_back(token);
            start = comma + 1;
        }
    }
    return out;
}

bool host_header_names(std::string_view value, const std::string& host, std::uint16_t port) {
    auto parts = policy::split_host_port(value, policy::PortSpec::Optional);
    const auto* text = std::get_if<policy::HostPortText>(&parts);
    if (!text || (text->port && *text->port != port)) return false;
    auto normal = policy::parse_target_host(text->host, port);
    const auto* named = std::get_if<policy::HostPort>(&normal);
    return named && named->host == host;
}

std::string proxy_answer(int status, std::string_view x_proxy_error, std::string_view body, bool keep_alive,
                         bool head_only, std::string_view reason, std::string_view extra_headers) {
    std::string out = "HTTP/1.1 " + std::to_string(status) + " " +
                      std::string(reason.empty() ? std::string_view(reason_phrase(status)) : reason) +
                      "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(body.size()) +
                      "\r\n";
    if (!x_proxy_error.empty()) out += "X-Proxy-Error: " + std::string(x_proxy_error) + "\r\n";
    out += extra_headers;
    if (!keep_alive) out += "Connection: close\r\n";
    out += "\r\n";
    if (!head_only) out += body;
    return out;
}

const char* reason_phrase(int status) {
    switch (status) {
        case 400:
            return "Bad Request";
        case 403:
            return "Forbidden";
        case 407:
            return "Proxy Authentication Required";
        case 408:
            return "Request Timeout";
        case 414:
            return "URI Too Long";
        case 421:
            return "Misdirected Request";
        case 431:
            return "Request Header Fields Too Large";
        case 501:
            return "Not Implemented";
        case 502:
            return "Bad Gateway";
        case 503:
            return "Service Unavailable";
        case 504:
            return "Gateway Timeout";
    }
    return "Error";
}

bool is_hop_by_hop(std::string_view name, const std::vector<std::string>& tokens) {
    static const char* const kHop[] = {"connection",
                                       "keep-alive",
                                       "proxy-connection",
                                       "proxy-authorization",
                                       "proxy-authenticate",
                                       "te",
                                       "trailer",
                                       "transfer-encoding",
                                       "upgrade"};
    for (const char* h : kHop) {
        if (iequals(name, h)) return true;
    }
    for (const auto& t : tokens) {
        if (iequals(name, t)) return true;
    }
    return false;
}

struct HttpParser::Callbacks {
    static HttpParser* self(llhttp_t* p) { return static_cast<HttpParser*>(p->data); }

    static int on_message_begin(llhttp_t* p) {
        auto* s = self(p);
        s->head_ = HttpHead{};
        s->field_.clear();
        s->value_.clear();
        s->in_message_ = true;
        s->head_done_ = false;
        s->head_size_ = 0;
        return 0;
    }
    // Every piece of a head counts against kMaxHead (plus its line ends, roughly: 2 per callback).
    static int grow(llhttp_t* p, size_t n) {
        auto* s = self(p);
        s->head_size_ += n;
        if (s->head_size_ > kMaxHead) {
            s->error_status_ = s->kind_ == Kind::Request ? 431 : 502;
            return fail(p, s->kind_ == Kind::Request ? "request head larger than 64 KiB"
                                                     : "response head larger than 64 KiB");
        }
        return 0;
    }
    static int on_method(llhttp_t* p, const char* at, size_t n) {
        self(p)->head_.method.append(at, n);
        return grow(p, n);
    }
    static int on_url(llhttp_t* p, const char* at, size_t n) {
        auto* s = self(p);
        if (s->head_.target.size() + n > 16 * 1024) {
            s->error_status_ = 414;
            return fail(p, "request target longer than 16 KiB");
        }
        s->head_.target.append(at, n);
        return grow(p, n);
    }
    static int on_status(llhttp_t* p, const char* at, size_t n) {
        self(p)->head_.reason.append(at, n);
        return grow(p, n);
    }
    static int on_header_field(llhttp_t* p, const char* at, size_t n) {
        self(p)->field_.append(at, n);
        return grow(p, n);
    }
    static int on_header_value(llhttp_t* p, const char* at, size_t n) {
        self(p)->value_.append(at, n);
        return grow(p, n);
    }
    static int on_header_value_complete(llhttp_t* p) {
        auto* s = self(p);
        if (s->head_.headers.size() >= 256) return fail(p, "more than 256 header lines");
        if (int rc = grow(p, 4)) return rc;  // ": " and CRLF
        // A proxy and the server behind it must agree on where each header ends; shapes that parsers disagree
        // on are refused: whitespace before the colon, characters outside the token set, obsolete line
        // folding.
        for (char c : s->field_) {
            auto u = static_cast<unsigned char>(c);
            bool tchar =
                std::isalnum(u) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
            if (!tchar)
                return fail(p, c == ' ' || c == '\t' ? "whitespace before the colon in a header"
                                                     : "bad character in a header name");
        }
        if (s->field_.empty()) return fail(p, "empty header name");
        if (s->value_.find_first_of("\r\n") != std::string::npos)
            return fail(p, "obsolete header line folding");
        // Trailing whitespace is not part of the value (llhttp keeps it).
        while (!s->value_.empty() && (s->value_.back() == ' ' || s->value_.back() == '\t'))
            s->value_.pop_back();
        s->head_.headers.emplace_back(std::move(s->field_), std::move(s->value_));
        s->field_.clear();
        s->value_.clear();
        return 0;
    }
    static int on_headers_complete(llhttp_t* p) {
        auto* s = self(p);
        if (!s->field_.empty()) {
            if (int rc = on_header_value_complete(p)) return rc;
        }
        s->head_done_ = true;
        HttpHead& h = s->head_;
        h.version_major = p->http_major;
        h.version_minor = p->http_minor;
        h.chunked = (p->flags & F_CHUNKED) != 0;
        if (p->flags & F_CONTENT_LENGTH) h.content_length = p->content_length;
        h.keep_alive = llhttp_should_keep_alive(p) != 0;
        if (s->kind_ == Kind::Request) {
            h.status = 0;
            // llhttp's own upgrade flag (set just before this callback): for CONNECT the rest is a tunnel,
            // for any other request the client asks to switch protocols, which the front-end refuses.
            h.upgrade = p->upgrade && p->method != HTTP_CONNECT;
            // Smuggling shapes llhttp lets through: say no before anything is forwarded.
            if (h.header_count("content-length") > 1) return fail(p, "duplicate Content-Length header");
            if (h.header_count("host") > 1) return fail(p, "duplicate Host header");
            if (h.header_count("transfer-encoding") > 0 && h.header_count("content-length") > 0)
                return fail(p, "both Content-Length and Transfer-Encoding");
            // Why exactly `chunked` and nothing else (not `gzip, chunked`, not two headers): servers disagree
            // on which coding frames the body when there are several, and a body one of them frames
            // differently from cordon is a request cordon never saw.
            if (h.header_count("transfer-encoding") > 1)
                return fail(p, "more than one Transfer-Encoding header");
            if (auto te = h.header("transfer-encoding"); te && !iequals(*te, "chunked"))
                return fail(p, "Transfer-Encoding other than chunked");
            if (h.header_count("transfer-encoding") > 0 && !h.chunked)
                return fail(p, "Transfer-Encoding other than chunked");
            // RFC 9112 6.1: a server reads Transfer-Encoding in an HTTP/1.0 request as faulty framing (nginx
            // refuses it, Go's net/http ignores it and reads the body as the next request).
            if (h.header_count("transfer-encoding") > 0 && h.version_major == 1 && h.version_minor == 0)
                return fail(p, "Transfer-Encoding in an HTTP/1.0 request");
            s->pause_ = Status::HeadComplete;
            return HPE_PAUSED;
        }
        h.status = p->status_code;
        if (h.header_count("content-length") > 1)
            return fail(p, "duplicate Content-Length header in response");
        s->sink_->on_head(h);
        // 1 = no body: HEAD responses, and 204 and 304 whatever their Content-Length says (llhttp reads a
        // body of that length, which a client reads as the next response).
        return s->no_body_ || h.status == 204 || h.status == 304 ? 1 : 0;
    }
    static int fail(llhttp_t* p, const char* why) {
        if (!self(p)->error_.empty()) return HPE_USER;  // the first reason stands
        self(p)->error_ = why;
        llhttp_set_error_reason(p, why);
        return HPE_USER;
    }
    static int on_body(llhttp_t* p, const char* at, size_t n) {
        self(p)->sink_->on_body(std::string_view(at, n));
        return 0;
    }
    static int on_message_complete(llhttp_t* p) {
        auto* s = self(p);
        s->in_message_ = false;
        s->scanning_head_ = true;
        s->seen_line_ = false;
        s->last_ = 0;
        s->pause_ = Status::MessageComplete;
        return HPE_PAUSED;
    }

    static const llhttp_settings_t& settings() {
        static const llhttp_settings_t kSettings = [] {
            llhttp_settings_t st;
            llhttp_settings_init(&st);
            st.on_message_begin = on_message_begin;
            st.on_method = on_method;
            st.on_url = on_url;
            st.on_status = on_status;
            st.on_header_field = on_header_field;
            st.on_header_value = on_header_value;
            st.on_header_value_complete = on_header_value_complete;
            st.on_headers_complete = on_headers_complete;
            st.on_body = on_body;
            st.on_message_complete = on_message_complete;
            return st;
        }();
        return kSettings;
    }
};

HttpParser::HttpParser(Kind kind, Sink* sink)
    : kind_(kind), sink_(sink), parser_(std::make_unique<llhttp_t>()) {
    llhttp_init(parser_.get(), kind == Kind::Request ? HTTP_REQUEST : HTTP_RESPONSE, &Callbacks::settings());
    parser_->data = this;
}

HttpParser::~HttpParser() = default;

HttpParser::Result HttpParser::feed(std::string_view data) {
    if (failed_) return {Status::Error, 0};
    pause_ = Status::Ok;
    if (kind_ == Kind::Request && scanning_head_) {
        // llhttp joins folded header lines silently; a server behind us might not. Look at the raw head.
        for (std::size_t i = 0; i < data.size() && scanning_head_; ++i) {
            char c = data[i];
            if (last_ == '\n' && (c == ' ' || c == '\t')) {
                failed_ = true;
                error_ = "obsolete header line folding";
                return {Status::Error, i};
            }
            if (last_ == '\n' && (c == '\r' || c == '\n') && seen_line_) scanning_head_ = false;
            if (c == '\n') seen_line_ = true;
            last_ = c;
        }
    }
    // llhttp computes `data + len`: an empty view's null data would be undefined behaviour (found by
    // tests/fuzz/fuzz_proxy: an answered request's empty body is fed to complete it).
    static const char kNothing = 0;
    const char* begin = data.empty() ? &kNothing : data.data();
    llhttp_errno_t err = llhttp_execute(parser_.get(), begin, data.size());
    if (err == HPE_OK) return {Status::Ok, data.size()};
    std::size_t consumed = data.size();
    if (const char* pos = llhttp_get_error_pos(parser_.get()); pos && pos >= begin) {
        consumed = std::min(data.size(), static_cast<std::size_t>(pos - begin));
    }
    if (err == HPE_PAUSED && pause_ != Status::Ok) return {pause_, consumed};
    failed_ = true;
    if (err == HPE_PAUSED_UPGRADE) {
        // Bytes after a CONNECT head, an Upgrade request or a 101 are another protocol: the front-end never
        // feeds them here. Terminal, never a pause: a pause here would come back on every feed().
        error_ = "bytes after a protocol switch are not HTTP";
        return {Status::Error, consumed};
    }
    if (!error_.empty()) return {Status::Error, consumed};  // one of our own checks
    const char* reason = llhttp_get_error_reason(parser_.get());
    error_ = reason && *reason ? reason : llhttp_errno_name(err);
    return {Status::Error, consumed};
}

void HttpParser::resume() {
    if (llhttp_get_errno(parser_.get()) == HPE_PAUSED)
        llhttp_resume(parser_.get());
    else if (llhttp_get_errno(parser_.get()) == HPE_PAUSED_UPGRADE)
        llhttp_resume_after_upgrade(parser_.get());
}

bool HttpParser::finish() {
    pause_ = Status::Ok;
    llhttp_errno_t err = llhttp_finish(parser_.get());
    return err == HPE_OK || (err == HPE_PAUSED && pause_ == Status::MessageComplete);
}

bool HttpParser::is_connect() const {
    return parser_->method == HTTP_CONNECT;
}

bool HttpParser::should_keep_alive() const {
    return llhttp_should_keep_alive(parser_.get()) != 0;
}

}  // namespace cordon::proxy
