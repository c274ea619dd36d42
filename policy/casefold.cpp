// Case folding as a case-insensitive directory compares names (see casefold.hpp).
#include "policy/casefold.hpp"

#include <algorithm>

namespace cordon::policy::casefold {

// Derived from Unicode 15's CaseFolding.txt (statuses C and F: the kernel's utf8nfdicf folds fully) and
// UnicodeData.txt's canonical decompositions; the test derives it again.
const ToAscii kToAscii[13] = {
    {0x00DF, "ss"},   // LATIN SMALL LETTER SHARP S
    {0x017F, "s"},    // LATIN SMALL LETTER LONG S
    {0x037E, ";"},    // GREEK QUESTION MARK (NFD: a singleton decomposition)
    {0x1E9E, "ss"},   // LATIN CAPITAL LETTER SHARP S
    {0x1FEF, "`"},    // GREEK VARIA (NFD)
    {0x212A, "k"},    // KELVIN SIGN (NFD to K, folded to k)
    {0xFB00, "ff"},   // LATIN SMALL LIGATURE FF
    {0xFB01, "fi"},   // LATIN SMALL LIGATURE FI
    {0xFB02, "fl"},   // LATIN SMALL LIGATURE FL
    {0xFB03, "ffi"},  // LATIN SMALL LIGATURE FFI
    {0xFB04, "ffl"},  // LATIN SMALL LIGATURE FFL
    {0xFB05, "st"},   // LATIN SMALL LIGATURE LONG S T
    {0xFB06, "st"},   // LATIN SMALL LIGATURE ST
};

namespace {

// The code point of a well-formed 2- or 3-byte UTF-8 sequence at `text[i]` (every entry of kToAscii is one)
// and its length; 0 for anything else.
std::size_t decode(std::string_view text, std::size_t i, char32_t& cp) {
    auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    auto cont = [&](std::size_t k) { return k < text.size() && (byte(k) & 0xC0) == 0x80; };
    const unsigned char b = byte(i);
    if (b >= 0xC2 && b <= 0xDF && cont(i + 1)) {
        cp = static_cast<char32_t>(((b & 0x1F) << 6) | (byte(i + 1) & 0x3F));
        return 2;
    }
    if (b >= 0xE0 && b <= 0xEF && cont(i + 1) && cont(i + 2)) {
        cp = static_cast<char32_t>(((b & 0x0F) << 12) | ((byte(i + 1) & 0x3F) << 6) | (byte(i + 2) & 0x3F));
        return cp >= 0x800 ? 3 : 0;  // overlong forms are no character
    }
    return 0;
}

const char* to_ascii(char32_t cp) {
    const auto* end = std::end(kToAscii);
    const auto* it =
        std::find_if(std::begin(kToAscii), end, [&](const ToAscii& t) { return t.code_point == cp; });
    return it == end ? nullptr : it->ascii;
}

}  // namespace

std::string fold(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        const char ch = text[i];
        if (ch >= 'A' && ch <= 'Z') {
            out += static_cast<char>(ch - 'A' + 'a');
            ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t n = static_cast<unsigned char>(ch) >= 0x80 ? decode(text, i, cp) : 0;
        if (const char* ascii = n ? to_ascii(cp) : nullptr) {
            out += ascii;
            i += n;
            continue;
        }
        out += ch;
        ++i;
    }
    return out;
}

bool folds(std::string_view text) {
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (ch >= 'A' && ch <= 'Z') return true;
        char32_t cp = 0;
        if (static_cast<unsigned char>(ch) >= 0x80 && decode(text, i, cp) && to_ascii(cp)) return true;
    }
    return false;
}

}  // namespace cordon::policy::casefold
