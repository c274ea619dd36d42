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

// Unicode 15's DerivedCoreProperties.txt, Default_Ignorable_Code_Point; the test derives it again.
const Range kIgnorable[27] = {
    {0x00AD, 0x00AD},   {0x034F, 0x034F},   {0x061C, 0x061C},   {0x115F, 0x1160},   {0x17B4, 0x17B5},
    {0x180B, 0x180D},   {0x180E, 0x180E},   {0x180F, 0x180F},   {0x200B, 0x200F},   {0x202A, 0x202E},
    {0x2060, 0x2064},   {0x2065, 0x2065},   {0x2066, 0x206F},   {0x3164, 0x3164},   {0xFE00, 0xFE0F},
    {0xFEFF, 0xFEFF},   {0xFFA0, 0xFFA0},   {0xFFF0, 0xFFF8},   {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A},
    {0xE0000, 0xE0000}, {0xE0001, 0xE0001}, {0xE0002, 0xE001F}, {0xE0020, 0xE007F}, {0xE0080, 0xE00FF},
    {0xE0100, 0xE01EF}, {0xE01F0, 0xE0FFF},
};

namespace {

// The code point of a well-formed 2-, 3- or 4-byte UTF-8 sequence at `text[i]` and its length; 0 for
// anything else (ASCII, invalid, overlong or surrogate sequences: the kernel compares such names byte by
// byte).
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
        return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) ? 3 : 0;  // overlong forms are no character
    }
    if (b >= 0xF0 && b <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
        cp = static_cast<char32_t>(((b & 0x07) << 18) | ((byte(i + 1) & 0x3F) << 12) |
                                   ((byte(i + 2) & 0x3F) << 6) | (byte(i + 3) & 0x3F));
        return cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

bool ignorable(char32_t cp) {
    return std::any_of(std::begin(kIgnorable), std::end(kIgnorable),
                       [&](const Range& r) { return cp >= r.first && cp <= r.last; });
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
    std::size_t in_start = 0, out_start = 0;  // where the current component begins, in `text` and in `out`
    for (std::size_t i = 0; i <= text.size();) {
        if (i == text.size() || text[i] == '/') {
            // A component of ignorable code points alone stays as it is: no name folds to an empty one.
            if (out.size() == out_start && i > in_start) out.append(text.substr(in_start, i - in_start));
            if (i == text.size()) break;
            out += '/';
            in_start = ++i;
            out_start = out.size();
            continue;
        }
        const char ch = text[i];
        if (ch >= 'A' && ch <= 'Z') {
            out += static_cast<char>(ch - 'A' + 'a');
            ++i;
            continue;
        }
        char32_t cp = 0;
        const std::size_t n = static_cast<unsigned char>(ch) >= 0x80 ? decode(text, i, cp) : 0;
        if (n && ignorable(cp)) {
            i += n;
            continue;
        }
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
        if (static_cast<unsigned char>(ch) >= 0x80 && decode(text, i, cp) && (to_ascii(cp) || ignorable(cp)))
            return true;
    }
    return false;
}

}  // namespace cordon::policy::casefold
