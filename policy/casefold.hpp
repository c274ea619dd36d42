// How a case-insensitive directory (ext4 `chattr +F`, tmpfs `-o casefold`) compares names, as far as the
// protected names need it: the kernel compares the names' UTF-8 NFD forms after full case folding
// (fs/unicode, utf8nfdicf), so `.BASHRC`, `.ba\u017Fhrc` (U+017F LATIN SMALL LETTER LONG S) and
// `\u212Aey` (U+212A KELVIN SIGN) are `.bashrc` and `key` there. And the kernels that brought casefolding
// (ext4 since 5.2, tmpfs 6.13) drop every Default_Ignorable_Code_Point from both names before comparing:
// `.git\u200B` (ZERO WIDTH SPACE) is `.git` there, `.bash\u00ADrc` (SOFT HYPHEN) `.bashrc` (newer kernels
// keep them; dropping them here refuses at most a name nobody types). The protected names and the usual rules
// are ASCII: what matters is every name that folds to an ASCII one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace cordon::policy::casefold {

// `text` with every character that case folding and NFD turn into ASCII replaced by that ASCII: A-Z by a-z,
// and the non-ASCII code points of kToAscii (U+017F by `s`, U+212A by `k`, U+FB01 by `fi`, U+00DF by
// `ss`...), and the ignorable code points of kIgnorable dropped (a component of nothing else stays as it
// is). Everything else (other UTF-8, invalid sequences, `/`) is kept as it is, so the components of a path
// stay where they were (their lengths may change).
std::string fold(std::string_view text);

// Whether fold(text) may differ from `text` (a capital, one of kToAscii's or kIgnorable's code points): most
// paths do not, and cost one scan.
bool folds(std::string_view text);

// The non-ASCII code points whose full case folding followed by NFD (or the reverse) is all ASCII, with what
// they become. Complete for Unicode 15 (Debian's unicode-data): tests/policy/casefold_test.cpp derives the
// list from CaseFolding.txt and UnicodeData.txt and compares.
struct ToAscii {
    char32_t code_point;
    const char* ascii;
};
extern const ToAscii kToAscii[13];

// The Default_Ignorable_Code_Point ranges of Unicode 15 (Debian's unicode-data), which the kernel's
// utf8nfdicf maps to nothing; tests/policy/casefold_test.cpp derives them from DerivedCoreProperties.txt.
struct Range {
    char32_t first, last;
};
extern const Range kIgnorable[27];

}  // namespace cordon::policy::casefold
