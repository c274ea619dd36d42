// A secret's forms in a response (secret_scrub.hpp).
#include "proxy/secret_scrub.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

namespace cordon::proxy {

namespace {

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// How one character of the value was spelled in the text.
enum class Spelling : std::uint8_t { Literal, PercentUpper, PercentLower, JsonSlash, JsonUpper, JsonLower };

std::size_t spelled_size(Spelling s) {
    switch (s) {
        case Spelling::Literal:
            return 1;
        case Spelling::PercentUpper:
        case Spelling::PercentLower:
            return 3;
        case Spelling::JsonSlash:
            return 2;
        case Spelling::JsonUpper:
        case Spelling::JsonLower:
            return 6;
    }
    return 1;
}

bool has_lower_hex(std::string_view digits) {
    for (char c : digits)
        if (c >= 'a' && c <= 'f') return true;
    return false;
}

// Does `value` (from index `i`) appear at `text[at]`, each character in any spelling? Fills `spellings`.
// Backtracks only where a character of the value is itself `%` or `\`, which could be literal or begin an
// escape.
bool match_at(std::string_view text, std::size_t at, std::string_view value, std::size_t i,
              std::vector<Spelling>& spellings) {
    if (i == value.size()) return true;
    if (at >= text.size()) return false;
    char want = value[i];
    char c = text[at];
    if (c == '%' && at + 2 < text.size() && hex_value(text[at + 1]) >= 0 && hex_value(text[at + 2]) >= 0 &&
        hex_value(text[at + 1]) * 16 + hex_value(text[at + 2]) == static_cast<unsigned char>(want)) {
        spellings[i] =
            has_lower_hex(text.substr(at + 1, 2)) ? Spelling::PercentLower : Spelling::PercentUpper;
        if (match_at(text, at + 3, value, i + 1, spellings)) return true;
    }
    if (c == '\\' && at + 1 < text.size()) {
        if (want == '/' && text[at + 1] == '/') {
            spellings[i] = Spelling::JsonSlash;
            if (match_at(text, at + 2, value, i + 1, spellings)) return true;
        }
        if (text[at + 1] == 'u' && at + 5 < text.size()) {
            int code = 0;
            bool ok = true;
            for (std::size_t k = 2; k < 6 && ok; ++k) {
                int h = hex_value(text[at + k]);
                ok = h >= 0;
                code = code * 16 + h;
            }
            if (ok && code == static_cast<unsigned char>(want)) {
                spellings[i] =
                    has_lower_hex(text.substr(at + 2, 4)) ? Spelling::JsonLower : Spelling::JsonUpper;
                if (match_at(text, at + 6, value, i + 1, spellings)) return true;
            }
        }
    }
    if (c == want) {
        spellings[i] = Spelling::Literal;
        return match_at(text, at + 1, value, i + 1, spellings);
    }
    return false;
}

void spell(std::string& out, char c, Spelling s) {
    static const char kUpper[] = "0123456789ABCDEF";
    static const char kLower[] = "0123456789abcdef";
    auto byte = static_cast<unsigned char>(c);
    switch (s) {
        case Spelling::Literal:
            out += c;
            return;
        case Spelling::PercentUpper:
        case Spelling::PercentLower: {
            const char* digits = s == Spelling::PercentUpper ? kUpper : kLower;
            out += '%';
            out += digits[byte >> 4];
            out += digits[byte & 15];
            return;
        }
        case Spelling::JsonSlash:
            // The sentinel keeps the value's punctuation (run/inspection.cpp): a `/` stays a `/`.
            out += '\\';
            out += c == '/' ? '/' : c;
            return;
        case Spelling::JsonUpper:
        case Spelling::JsonLower: {
            const char* digits = s == Spelling::JsonUpper ? kUpper : kLower;
            out += "\\u00";
            out += digits[byte >> 4];
            out += digits[byte & 15];
            return;
        }
    }
}

// The next position at or after `from` where a form of a value starting with `first` may begin: `first`
// itself, or a `%` or `\` that may begin an escape of it. Three memchr scans (vectorised by libc), each kept
// until passed: a byte-by-byte test of every position cost a second per GiB of a scrubbed response.
class FormStarts {
  public:
    FormStarts(std::string_view text, char first) : text_(text), wanted_{first, '%', '\\'} {}
    std::size_t next(std::size_t from) {
        std::size_t best = text_.size();
        for (int k = 0; k < 3; ++k) {
            if (next_[k] < from || next_[k] == kUnknown) {
                const void* hit = from < text_.size()
                                      ? std::memchr(text_.data() + from, wanted_[k], text_.size() - from)
                                      : nullptr;
                next_[k] = hit ? static_cast<std::size_t>(static_cast<const char*>(hit) - text_.data())
                               : text_.size();
            }
            best = std::min(best, next_[k]);
        }
        return best;
    }

  private:
    static constexpr std::size_t kUnknown = static_cast<std::size_t>(-1);
    std::string_view text_;
    char wanted_[3];
    std::size_t next_[3] = {kUnknown, kUnknown, kUnknown};
};

void scrub_spelled(std::string& text, std::string_view value, std::string_view sentinel) {
    if (value.empty()) return;
    std::vector<Spelling> spellings(value.size());
    std::string replacement;
    // A replacement keeps the text's length and place (the view stays valid) and is skipped past, so a start
    // found before it and lying after it still holds.
    FormStarts starts(text, value[0]);
    for (std::size_t at = starts.next(0); at < text.size(); at = starts.next(at + 1)) {
        if (!match_at(text, at, value, 0, spellings)) continue;
        replacement.clear();
        for (std::size_t i = 0; i < value.size(); ++i)
            spell(replacement, sentinel[i], spellings[i]);
        std::size_t length = 0;
        for (auto s : spellings)
            length += spelled_size(s);
        if (replacement.size() != length) continue;  // cannot happen: every spelling keeps its size
        text.replace(at, length, replacement);
        at += length - 1;
    }
}

// The base64 characters of `bytes` placed `align` bytes into a stream that only those bytes determine.
std::string base64_run(std::string_view bytes, std::size_t align, bool url) {
    static const char kStd[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const char* alphabet = url ? kUrl : kStd;
    std::size_t first_bit = 8 * align, end_bit = 8 * (align + bytes.size());
    auto bit = [&](std::size_t b) {
        std::size_t byte = b / 8 - align;
        return (static_cast<unsigned char>(bytes[byte]) >> (7 - b % 8)) & 1;
    };
    std::string out;
    for (std::size_t start = (first_bit + 5) / 6 * 6; start + 6 <= end_bit; start += 6) {
        int v = 0;
        for (std::size_t b = start; b < start + 6; ++b)
            v = v * 2 + bit(b);
        out += alphabet[v];
    }
    return out;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
    if (from.size() < 8 || from.size() != to.size()) return;  // a short run would match unrelated text
    // memmem, not std::string::find: find stops at every byte equal to the run's first character and calls
    // memcmp there, which on base64-like text (one byte in 64) was the scrubber's largest cost.
    std::size_t at = 0;
    while (at + from.size() <= text.size()) {
        const void* hit = ::memmem(text.data() + at, text.size() - at, from.data(), from.size());
        if (!hit) return;
        at = static_cast<std::size_t>(static_cast<const char*>(hit) - text.data());
        text.replace(at, from.size(), to);
        at += to.size();
    }
}

}  // namespace

SecretForms::SecretForms(std::string_view value, std::string_view sentinel)
    : value_(value.size() == sentinel.size() ? value : std::string_view()), sentinel_(sentinel) {
    if (value_.empty()) return;
    // Why base64 too: cordon puts the real value into Basic credentials (git over HTTPS sends user:TOKEN),
    // and a server that echoes the Authorization header (a debug endpoint, an error page) hands it back
    // base64-encoded. The one or two characters at each end of a run mix the value's bits with its
    // neighbours' and stay as they are. The runs are computed once per secret, not per piece of a body.
    for (bool url : {false, true})
        for (std::size_t align = 0; align < 3; ++align)
            base64_.emplace_back(base64_run(value_, align, url), base64_run(sentinel_, align, url));
}

SecretForms::~SecretForms() {
    ::explicit_bzero(value_.data(), value_.size());
    for (auto& [from, to] : base64_)
        ::explicit_bzero(from.data(), from.size());
}

void SecretForms::scrub(std::string& text) const {
    if (value_.empty()) return;
    scrub_spelled(text, value_, sentinel_);
    for (const auto& [from, to] : base64_)
        replace_all(text, from, to);
}

void scrub_secret(std::string& text, std::string_view value, std::string_view sentinel) {
    SecretForms(value, sentinel).scrub(text);
}

std::size_t longest_secret_form(std::size_t size) {
    return 6 * size;  // every character as `\u00XX`
}

}  // namespace cordon::proxy
