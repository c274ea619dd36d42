// How a case-insensitive directory compares names (policy/casefold.hpp): the folding, and the completeness of
// its table of non-ASCII code points that fold to ASCII, derived again from Debian's Unicode data.
#include "policy/casefold.hpp"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace cordon::policy::test {

using casefold::fold;
using casefold::folds;

TEST_CASE("casefold: capitals and the non-ASCII characters that fold to ASCII", "[casefold]") {
    CHECK(fold("/p/.BASHRC") == "/p/.bashrc");
    CHECK(fold("/p/.ba\u017Fhrc") == "/p/.bashrc");  // LATIN SMALL LETTER LONG S
    CHECK(fold("/p/.Git/Hooks/pre-commit") == "/p/.git/hooks/pre-commit");
    CHECK(fold("/p/.git/\u212Aey") == "/p/.git/key");       // KELVIN SIGN
    CHECK(fold("/p/.git/con\uFB01g") == "/p/.git/config");  // LATIN SMALL LIGATURE FI
    CHECK(fold("/p/.claude/setting\u017F.json") == "/p/.claude/settings.json");
    CHECK(fold("/p/.claude/\u1E9Eettings.json") == "/p/.claude/ssettings.json");
    CHECK(fold("/p/\u00E9t\u00E9/\u00C9") == "/p/\u00E9t\u00E9/\u00C9");  // other letters: as they are
    // Invalid and overlong UTF-8 stay bytes (the kernel compares such names byte by byte).
    CHECK(fold(std::string("/p/\xC5", 4)) == std::string("/p/\xC5", 4));
    CHECK(fold("/p/\xE0\x85\xBF") == "/p/\xE0\x85\xBF");
    CHECK(fold("/p/\xC5\xBF\xC5") == "/p/s\xC5");
    // Components stay where they were.
    CHECK(fold("/A/\u017F/\u212A") == "/a/s/k");
}

TEST_CASE("casefold: folds() says whether fold() changes anything", "[casefold]") {
    CHECK_FALSE(folds("/home/u/project/src/main.c"));
    CHECK_FALSE(folds("/p/\u00E9t\u00E9"));
    CHECK(folds("/p/Makefile"));
    CHECK(folds("/p/.ba\u017Fhrc"));
    CHECK(folds("/p/\uFB06"));
    for (const auto& t : casefold::kToAscii) {
        std::string utf8;
        const auto cp = static_cast<unsigned>(t.code_point);
        if (cp < 0x800)
            utf8 = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
        else
            utf8 = {static_cast<char>(0xE0 | (cp >> 12)), static_cast<char>(0x80 | ((cp >> 6) & 0x3F)),
                    static_cast<char>(0x80 | (cp & 0x3F))};
        CHECK(folds(utf8));
        CHECK(fold(utf8) == t.ascii);
    }
}

// The kernels that brought casefolding (ext4 from 5.2, tmpfs from 6.13 until the change that kept them)
// drop every Default_Ignorable_Code_Point before comparing: `.git\u200B` is the repository's `.git` there,
// and `.git\u200B/hooks/pre-commit` a hook git runs on the host.
TEST_CASE("casefold: ignorable code points are dropped as the kernel drops them", "[casefold]") {
    CHECK(fold("/p/.git\u200B/hooks/pre-commit") == "/p/.git/hooks/pre-commit");  // ZERO WIDTH SPACE
    CHECK(fold("/p/.bash\u00ADrc") == "/p/.bashrc");                              // SOFT HYPHEN
    CHECK(fold("/p/.g\u034Fit/config") == "/p/.git/config");                      // COMBINING GRAPHEME JOINER
    CHECK(fold("/p/.Git\uFEFF/Hooks") == "/p/.git/hooks");                        // ZERO WIDTH NO-BREAK SPACE
    CHECK(fold("/p/.git/con\uFB01g\u200D") == "/p/.git/config");                  // with a ligature
    CHECK(fold("/p/.claude\U000E0041/settings.json") == "/p/.claude/settings.json");  // TAG LATIN CAPITAL A
    CHECK(fold("/p/.bashrc\U000E01EF") == "/p/.bashrc");  // VARIATION SELECTOR-256
    CHECK(folds("/p/.git\u200C"));
    CHECK(folds("/p/.git\U000E0020"));
    // A component of ignorables alone stays as it is (no name folds to an empty one); others are no
    // ignorables (U+200A HAIR SPACE, U+2010 HYPHEN), nor are invalid or surrogate sequences.
    CHECK(fold("/p/\u200B/x") == "/p/\u200B/x");
    CHECK_FALSE(folds("/p/a\u200Ab\u2010c"));
    CHECK_FALSE(folds("/p/\xED\xA0\x80"));
    CHECK_FALSE(folds(std::string("/p/\xF3\xA0\x80", 6)));
}

namespace {

using Seq = std::vector<char32_t>;

std::vector<std::string> fields(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line);
    std::string f;
    while (std::getline(in, f, ';'))
        out.push_back(f);
    return out;
}

Seq code_points(const std::string& text) {
    Seq out;
    std::stringstream in(text);
    std::string word;
    while (in >> word)
        if (word[0] != '<') out.push_back(static_cast<char32_t>(std::stoul(word, nullptr, 16)));
    return out;
}

}  // namespace

// The kernel's casefold (fs/unicode: utf8nfdicf) is NFD with full case folding (CaseFolding.txt's C and F
// lines). Every code point of UnicodeData.txt is folded and decomposed until nothing changes; those that end
// as ASCII must be kToAscii's, and kToAscii must hold no other.
TEST_CASE("casefold: kToAscii is every non-ASCII code point that folds to ASCII (Unicode data)",
          "[casefold]") {
    const std::filesystem::path dir = "/usr/share/unicode";
    std::ifstream folding(dir / "CaseFolding.txt"), data(dir / "UnicodeData.txt");
    if (!folding || !data) {
        WARN("skipped: Debian's unicode-data is not installed (scripts/setup --test installs it)");
        return;
    }
    std::map<char32_t, Seq> fold_map, nfd_map;
    std::vector<char32_t> all;
    for (std::string line; std::getline(folding, line);) {
        if (line.empty() || line[0] == '#') continue;
        auto f = fields(line);
        REQUIRE(f.size() >= 3);
        const std::string status = f[1].substr(f[1].find_first_not_of(' '));
        if (status != "C" && status != "F") continue;
        fold_map[static_cast<char32_t>(std::stoul(f[0], nullptr, 16))] = code_points(f[2]);
    }
    for (std::string line; std::getline(data, line);) {
        auto f = fields(line);
        REQUIRE(f.size() >= 6);
        const auto cp = static_cast<char32_t>(std::stoul(f[0], nullptr, 16));
        all.push_back(cp);
        if (!f[5].empty() && f[5][0] != '<') nfd_map[cp] = code_points(f[5]);  // canonical only
    }
    REQUIRE(all.size() > 30000);
    REQUIRE(fold_map.size() > 1000);
    auto apply = [](const std::map<char32_t, Seq>& m, const Seq& in) {
        Seq out;
        for (char32_t c : in) {
            auto it = m.find(c);
            if (it == m.end())
                out.push_back(c);
            else
                out.insert(out.end(), it->second.begin(), it->second.end());
        }
        return out;
    };
    std::map<char32_t, std::string> derived;
    for (char32_t cp : all) {
        if (cp < 0x80) continue;
        Seq s{cp};
        for (int round = 0; round < 8; ++round) {
            Seq next = apply(nfd_map, apply(fold_map, s));
            if (next == s) break;
            s = std::move(next);
        }
        std::string ascii;
        for (char32_t c : s)
            if (c < 0x80) ascii += static_cast<char>(c);
        if (ascii.size() == s.size()) derived[cp] = ascii;
    }
    std::map<char32_t, std::string> table;
    for (const auto& t : casefold::kToAscii)
        table[t.code_point] = t.ascii;
    CHECK(derived == table);
}

// kIgnorable is every Default_Ignorable_Code_Point range of DerivedCoreProperties.txt, and each folds away.
TEST_CASE("casefold: kIgnorable is the Default_Ignorable_Code_Point list (Unicode data)", "[casefold]") {
    std::ifstream props("/usr/share/unicode/DerivedCoreProperties.txt");
    if (!props) {
        WARN("skipped: Debian's unicode-data is not installed (scripts/setup --test installs it)");
        return;
    }
    std::vector<std::pair<char32_t, char32_t>> derived, table;
    for (std::string line; std::getline(props, line);) {
        if (line.empty() || line[0] == '#') continue;
        auto f = fields(line.substr(0, line.find('#')));
        if (f.size() < 2 || f[1].find("Default_Ignorable_Code_Point") == std::string::npos) continue;
        const auto dots = f[0].find("..");
        const auto first = static_cast<char32_t>(std::stoul(f[0].substr(0, dots), nullptr, 16));
        const auto last = dots == std::string::npos
                              ? first
                              : static_cast<char32_t>(std::stoul(f[0].substr(dots + 2), nullptr, 16));
        derived.emplace_back(first, last);
    }
    for (const auto& r : casefold::kIgnorable)
        table.emplace_back(r.first, r.last);
    CHECK(derived == table);
    for (const auto& [first, last] : table)
        for (char32_t cp : {first, last}) {
            std::string utf8;
            const auto c = static_cast<unsigned>(cp);
            if (c < 0x800)
                utf8 = {static_cast<char>(0xC0 | (c >> 6)), static_cast<char>(0x80 | (c & 0x3F))};
            else if (c < 0x10000)
                utf8 = {static_cast<char>(0xE0 | (c >> 12)), static_cast<char>(0x80 | ((c >> 6) & 0x3F)),
                        static_cast<char>(0x80 | (c & 0x3F))};
            else
                utf8 = {static_cast<char>(0xF0 | (c >> 18)), static_cast<char>(0x80 | ((c >> 12) & 0x3F)),
                        static_cast<char>(0x80 | ((c >> 6) & 0x3F)), static_cast<char>(0x80 | (c & 0x3F))};
            CHECK(fold("a" + utf8 + "b") == "ab");
        }
}

}  // namespace cordon::policy::test
