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

}  // namespace cordon::policy::test
