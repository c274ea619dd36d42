// The forms of a secret's real value that the termination stage turns into its sentinel (secret_scrub.hpp).
#include "proxy/secret_scrub.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <iterator>
#include <random>
#include <string>

using cordon::proxy::longest_secret_form;
using cordon::proxy::scrub_secret;

namespace {

const std::string kValue = "ghp_R3al/T0ken+Value";
const std::string kSentinel = "ghp_Xq7z/B2yuv+Kwmpd";

std::string scrubbed(std::string text) {
    scrub_secret(text, kValue, kSentinel);
    return text;
}

std::string base64(const std::string& in) {
    static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                     (static_cast<unsigned char>(in[i + 1]) << 8) | static_cast<unsigned char>(in[i + 2]);
        for (int s = 18; s >= 0; s -= 6)
            out += k[(v >> s) & 63];
    }
    if (i < in.size()) {
        unsigned v = static_cast<unsigned char>(in[i]) << 16;
        if (i + 1 < in.size()) v |= static_cast<unsigned char>(in[i + 1]) << 8;
        out += k[(v >> 18) & 63];
        out += k[(v >> 12) & 63];
        out += i + 1 < in.size() ? k[(v >> 6) & 63] : '=';
        out += '=';
    }
    return out;
}

}  // namespace

TEST_CASE("scrub_secret: the literal value becomes the sentinel, the length kept", "[unit]") {
    CHECK(scrubbed("token " + kValue + " and " + kValue) == "token " + kSentinel + " and " + kSentinel);
    CHECK(scrubbed("nothing here") == "nothing here");
}

TEST_CASE("scrub_secret: percent-encoded and JSON-escaped forms become the sentinel in the same form",
          "[unit]") {
    // urllib.parse.quote(value, safe=""), upper and lower hex, and Python's default quote (safe="/").
    CHECK(scrubbed("auth=ghp_R3al%2FT0ken%2BValue&x") == "auth=ghp_Xq7z%2FB2yuv%2BKwmpd&x");
    CHECK(scrubbed("auth=ghp_R3al%2fT0ken%2bValue") == "auth=ghp_Xq7z%2fB2yuv%2bKwmpd");
    CHECK(scrubbed("auth=ghp_R3al/T0ken%2BValue") == "auth=ghp_Xq7z/B2yuv%2BKwmpd");
    // Every character encoded.
    CHECK(scrubbed("%67%68%70") == "%67%68%70");  // a prefix alone is not the value
    std::string all;
    for (char c : kValue) {
        char buf[4];
        std::snprintf(buf, sizeof buf, "%%%02X", static_cast<unsigned char>(c));
        all += buf;
    }
    std::string out = scrubbed("[" + all + "]");
    CHECK(out.size() == all.size() + 2);
    CHECK(out.find("%52%33") == std::string::npos);  // "R3" of the value
    // PHP's json_encode: `\/`; and \u escapes.
    CHECK(scrubbed(R"({"auth":"ghp_R3al\/T0ken+Value"})") == R"({"auth":"ghp_Xq7z\/B2yuv+Kwmpd"})");
    CHECK(scrubbed(R"("ghp_R3al\u002fT0ken\u002BValue")") == R"("ghp_Xq7z\u002fB2yuv\u002BKwmpd")");
}

TEST_CASE(
    "scrub_secret: base64 of the value at any alignment, either alphabet, becomes base64 of the sentinel",
    "[unit]") {
    for (std::string prefix : {"", "x", "x-", "x-access-token:"}) {
        std::string encoded = base64(prefix + kValue);
        std::string out = scrubbed("Basic " + encoded);
        REQUIRE(out.size() == encoded.size() + 6);
        CHECK(out.substr(6) != encoded);
        // What the client decodes no longer holds the value, and holds most of the sentinel.
        std::string sentinel_b64 = base64(prefix + kSentinel);
        std::size_t same = 0;
        for (std::size_t i = 0; i < encoded.size(); ++i)
            same += out[6 + i] == sentinel_b64[i];
        CHECK(same + 2 >= encoded.size());
    }
    std::string url = base64(kValue);
    for (auto& c : url)
        c = c == '+' ? '-' : c == '/' ? '_' : c;
    CHECK(scrubbed(url) != url);
}

TEST_CASE("scrub_secret: how much of a stream to hold back covers the longest form", "[unit]") {
    CHECK(longest_secret_form(kValue.size()) >= 6 * kValue.size());
}

TEST_CASE("scrub_secret: every form among look-alikes, back to back and at either end, becomes the sentinel",
          "[unit]") {
    // Texts of random fragments: the value spelled a random way (each character literal, %XX in either case,
    // \u00XX, or \/ for '/'), next to bytes that begin a form without being one. The expected text has the
    // sentinel spelled the same way in place of each value. Starts of forms are found by scanning for their
    // first bytes; this checks none is skipped, also right after a replacement.
    std::mt19937 random(24);
    auto hex = [](unsigned char c, bool lower) {
        char out[3];
        std::snprintf(out, sizeof out, lower ? "%02x" : "%02X", c);
        return std::string(out);
    };
    auto has_letter = [](const std::string& digits) {
        return digits.find_first_of("abcdefABCDEF") != std::string::npos;
    };
    const std::string decoys[] = {"g",     "gh",      "%", "%6",       "%67", "\\",
                                  "\\u00", "\\u0067", "x", "ghp_R3al", " "};
    for (int round = 0; round < 2000; ++round) {
        std::string text, expected;
        int pieces = 1 + static_cast<int>(random() % 8);
        for (int p = 0; p < pieces; ++p) {
            if (random() % 2) {
                const std::string& d = decoys[random() % std::size(decoys)];
                text += d;
                expected += d;
                continue;
            }
            for (std::size_t i = 0; i < kValue.size(); ++i) {
                auto v = static_cast<unsigned char>(kValue[i]), s = static_cast<unsigned char>(kSentinel[i]);
                switch (random() % (kValue[i] == '/' ? 5 : 4)) {
                    case 0:
                        text += kValue[i];
                        expected += kSentinel[i];
                        break;
                    case 1:
                    case 2: {
                        // A value byte whose hex has no letter reads as upper case: the sentinel follows it.
                        bool lower = random() % 2 && has_letter(hex(v, true));
                        text += "%" + hex(v, lower);
                        expected += "%" + hex(s, lower);
                        break;
                    }
                    case 3: {
                        bool lower = random() % 2 && has_letter(hex(v, true));
                        text += "\\u00" + hex(v, lower);
                        expected += "\\u00" + hex(s, lower);
                        break;
                    }
                    default:
                        text += "\\/";
                        expected += "\\/";
                        break;
                }
            }
        }
        INFO(text);
        CHECK(scrubbed(text) == expected);
    }
}

TEST_CASE("scrub_secret: one SecretForms scrubs piece after piece as scrub_secret does", "[unit]") {
    const cordon::proxy::SecretForms forms(kValue, kSentinel);
    const std::string pieces[] = {"token " + kValue,
                                  "Basic " + base64("x:" + kValue),
                                  "Basic " + base64("xy:" + kValue) + " " + kValue,
                                  "%67hp_R3al%2fT0ken+Value",
                                  "nothing",
                                  "",
                                  base64(kValue) + base64(kValue)};
    for (const auto& piece : pieces) {
        INFO(piece);
        std::string text = piece;
        forms.scrub(text);
        CHECK(text == scrubbed(piece));
        CHECK(text.size() == piece.size());
        if (piece.find(kValue) != std::string::npos) CHECK(text.find(kValue) == std::string::npos);
    }
    // Sizes that differ: nothing is touched (the framing would break).
    std::string text = "token " + kValue;
    cordon::proxy::SecretForms("short", "longer!").scrub(text);
    CHECK(text == "token " + kValue);
}
