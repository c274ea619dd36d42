// The Seatbelt profile made from a Policy (seatbelt/profile.hpp): what each section grants, checked on the
// text; test_srt_profiles.py compares whole profiles with srt's by evaluating them.
#include "seatbelt/profile.hpp"

#include <catch2/catch.hpp>
#include <cctype>
#include <regex>

#include "tests/policy/test_support.hpp"

namespace cordon::seatbelt {
namespace {

using policy::test::TempTree;

policy::PolicyPtr load(const TempTree& tree, policy::LoadOptions options) {
    options.cwd = tree.cwd();
    options.home = tree.home();
    options.managed_dir = tree.managed();
    options.discover = false;
    auto loaded = policy::load_policy(options);
    REQUIRE(std::holds_alternative<policy::PolicyPtr>(loaded));
    return std::get<policy::PolicyPtr>(loaded);
}

std::vector<std::string> strings(const std::string& profile) {
    std::vector<std::string> out;
    const std::regex literal(R"re("((?:[^"\\]|\\.)*)")re");
    for (auto it = std::sregex_iterator(profile.begin(), profile.end(), literal);
         it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1].str());
    return out;
}

// A path as the profile writes it in a deny: a regex matching either case of each letter (macOS file systems
// ignore case), as it reads inside the profile's string (`\\.` for a dot).
std::string folded(const std::string& path) {
    std::string out;
    for (char c : path) {
        const char lower = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (lower == 's')
            out += "([sS]|\xC5\xBF)";  // the long s, which APFS's case folding takes to `s`
        else if (lower == 'k')
            out += "([kK]|\xE2\x84\xAA)";  // the Kelvin sign, `k` there
        else if (std::isalpha(static_cast<unsigned char>(c)))
            out += std::string("[") + lower + static_cast<char>(std::toupper(c)) + "]";
        else if (c == '.')
            out += "\\\\.";
        else
            out += c;
    }
    return out;
}

TEST_CASE("the profile denies by default and reaches only the proxy's ports") {
    TempTree tree;
    auto policy = load(tree, {});
    ProfileOptions options;
    options.proxy_ports = {3128, 1080};
    const std::string text = make_profile(*policy, options).text;
    CHECK(text.starts_with("(version 1)\n(deny default)\n"));
    CHECK(text.find("(remote ip \"localhost:3128\")") != std::string::npos);
    CHECK(text.find("(remote ip \"localhost:1080\")") != std::string::npos);
    CHECK(text.find("network*") == std::string::npos);
    CHECK(text.find("network-bind") == std::string::npos);  // no Unix socket listed: none at all
    CHECK(text.find("socket-domain AF_UNIX") == std::string::npos);

    const std::string none = make_profile(*policy, ProfileOptions{}).text;
    CHECK(none.find("network-outbound") == std::string::npos);
}

TEST_CASE("protected names are denied at any depth in either case, and their parents cannot be moved") {
    TempTree tree;
    auto policy = load(tree, {});
    const std::string text = make_profile(*policy, ProfileOptions{}).text;
    CHECK(text.find("[gG][iI][tT]/[hH][oO][oO]([kK]|\xE2\x84\xAA)([sS]|\xC5\xBF)") != std::string::npos);
    // `.git` itself (the parent of .git/hooks) is neither removed nor created by a rename, at any depth.
    CHECK(text.find(R"(^(.*/)?(\\.[cC][lL][aA][uU][dD][eE]|\\.[gG][iI][tT]|)") != std::string::npos);
    // The working directory itself stays where it is (the parent of its protected names), in any case.
    CHECK(text.find("(regex \"^" + folded(tree.cwd().string()) + "$\")") != std::string::npos);
}

TEST_CASE("a read deny with a longer allow inside is written as the deny minus the allow") {
    TempTree tree;
    policy::LoadOptions options;
    options.deny_read = {tree.home().string()};
    options.allow_read = {tree.home().string() + "/docs"};
    auto policy = load(tree, options);
    const std::string text = make_profile(*policy, ProfileOptions{}).text;
    // The deny matches the home in any case; the allow cut out of it only as written (never wider).
    const std::string expected = "(require-all (regex \"^" + folded(tree.home().string()) +
                                 "(/.*)?$\") (require-not (subpath \"" + tree.home().string() + "/docs\")))";
    CHECK(text.find(expected) != std::string::npos);
    CHECK(text.find("(allow file-read-metadata (vnode-type DIRECTORY))") != std::string::npos);
}

TEST_CASE("strings longer than Seatbelt reads are split for a deny and left out for an allow") {
    TempTree tree;
    std::string deep = tree.cwd().string();
    for (int i = 0; i < 20; ++i)
        deep += "/" + std::string(60, 'd');
    policy::LoadOptions options;
    options.deny_read = {deep};
    options.allow_write = {tree.home().string() + "/" + std::string(200, 'w') + "/" + std::string(200, 'w') +
                           "/" + std::string(200, 'w') + "/" + std::string(200, 'w') + "/" +
                           std::string(200, 'w')};
    auto policy = load(tree, options);
    const Profile profile = make_profile(*policy, ProfileOptions{});
    for (const std::string& s : strings(profile.text))
        CHECK(s.size() <= 900);
    CHECK(profile.text.find("(require-all (regex \"^") != std::string::npos);
    REQUIRE(profile.warnings.size() == 1);
    CHECK(profile.warnings[0].find("not granted") != std::string::npos);
    CHECK(profile.text.find(std::string(200, 'w')) == std::string::npos);
}

TEST_CASE("Unix sockets: listed paths with ~ expanded, or all of them") {
    TempTree tree;
    tree.write("settings.json", R"({"network": {"allowUnixSockets": ["~/agent.sock"]}})");
    policy::LoadOptions options;
    options.settings_files = {tree.root() / "settings.json"};
    auto policy = load(tree, options);
    const std::string text = make_profile(*policy, ProfileOptions{}).text;
    CHECK(text.find("(allow system-socket (socket-domain AF_UNIX))") != std::string::npos);
    CHECK(text.find("(remote unix-socket (subpath \"" + tree.home().string() + "/agent.sock\"))") !=
          std::string::npos);
}

TEST_CASE("the temporary directory replaces the Linux jail's private /tmp, the audit log is never written") {
    TempTree tree;
    auto policy = load(tree, {});
    ProfileOptions options;
    options.temp_dir = tree.root().string() + "/private-tmp";
    options.audit_log = tree.cwd().string() + "/audit.jsonl";
    const std::string text = make_profile(*policy, options).text;
    CHECK(text.find("(subpath \"/tmp\")") == std::string::npos);
    CHECK(text.find("(subpath \"" + options.temp_dir + "\")") != std::string::npos);
    const auto deny = text.find("(deny file-write*");
    REQUIRE(deny != std::string::npos);
    CHECK(text.find("(regex \"^" + folded(options.audit_log) + "(/.*)?$\")", deny) != std::string::npos);
}

TEST_CASE("each path rule is written in the kernel's spelling too") {
    TempTree tree;
    policy::LoadOptions options;
    options.deny_read = {"/tmp/x-secret"};
    auto policy = load(tree, options);
    ProfileOptions profile_options;
    profile_options.canonical = [](const std::string& p) {
        return p.starts_with("/tmp") ? "/private" + p : p;
    };
    const std::string text = make_profile(*policy, profile_options).text;
    CHECK(text.find("(regex \"^" + folded("/tmp/x-secret") + "(/.*)?$\")") != std::string::npos);
    CHECK(text.find("(regex \"^" + folded("/private/tmp/x-secret") + "(/.*)?$\")") != std::string::npos);
}

}  // namespace
}  // namespace cordon::seatbelt

namespace cordon::seatbelt {
namespace {

TEST_CASE("the project read scope reads only the scope, minus the hidden secrets") {
    TempTree tree;
    policy::LoadOptions options;
    options.read_scope = "project";
    auto policy = load(tree, options);
    const std::string text = make_profile(*policy, ProfileOptions{}).text;
    CHECK(text.find("(allow file-read*)\n") == std::string::npos);
    const auto scope = text.find("(allow file-read*\n");
    REQUIRE(scope != std::string::npos);
    CHECK(text.find("(subpath \"" + tree.cwd().string() + "\")", scope) != std::string::npos);
    CHECK(text.find("(subpath \"/usr\")", scope) != std::string::npos);
    CHECK(text.find("(subpath \"/System\")", scope) != std::string::npos);
    const auto hidden = text.find("(regex \"^" + folded("/etc/shadow") + "[^/]*(/.*)?$\")");  // a glob, after
    REQUIRE(hidden != std::string::npos);
    CHECK(hidden > scope);
    CHECK(text.rfind("(deny file-read*", hidden) > scope);
    CHECK(text.find("(allow file-read* (literal \"/\"))") != std::string::npos);
}

}  // namespace
}  // namespace cordon::seatbelt
