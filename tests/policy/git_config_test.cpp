// Git config files as git reads them, for core.hooksPath and include targets (policy/git_config.hpp).
#include "policy/git_config.hpp"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace cordon::policy;

namespace {

std::string value_of(const std::vector<git_config::Entry>& entries, const std::string& key) {
    std::string out = "<none>";
    for (const auto& e : entries)
        if (e.key == key) out = e.value;
    return out;
}

}  // namespace

TEST_CASE("git config: sections, subsections, case, quotes, escapes, comments and a key after the header") {
    const auto e = git_config::parse(
        "# comment\n"
        "[core] hooksPath = .githooks ; trailing comment\n"
        "[CORE]\n\tHooksPath = \"spaced path\\\\x\" \n"
        "[include]\n\tpath = ../tools/git.conf\n"
        "[includeIf \"gitdir:~/Work/\"]\n\tpath = \"~/w.conf\"\n"
        "[alias]\n\tst = status \\\n  -s\n"
        "[bool]\n\tflag\n");
    CHECK(value_of(e, "core.hookspath") == "spaced path\\x");  // the last one wins, as in git
    CHECK(value_of(e, "include.path") == "../tools/git.conf");
    CHECK(value_of(e, "includeif.gitdir:~/Work/.path") == "~/w.conf");
    CHECK(value_of(e, "alias.st") == "status   -s");
    CHECK(value_of(e, "bool.flag").empty());
}

TEST_CASE("git config: what cannot be parsed ends the parse, keeping the entries before it") {
    const auto e = git_config::parse("[core]\n\thooksPath = a\n[broken\n[core]\n\thooksPath = b\n");
    CHECK(value_of(e, "core.hookspath") == "a");
    CHECK(git_config::parse("key = outside a section\n").empty());
}

TEST_CASE("git config targets: the repository's hooksPath from its top, includes from the including file") {
    std::string pattern = (fs::temp_directory_path() / "cordon-git-config-XXXXXX").string();
    const fs::path t = ::mkdtemp(pattern.data());
    fs::create_directories(t / "p/.git");
    fs::create_directories(t / "p/src");
    fs::create_directories(t / "home");
    std::ofstream(t / "p/.git/config")
        << "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../tools/a.conf\n";
    fs::create_directories(t / "p/tools");
    std::ofstream(t / "p/tools/a.conf") << "[include]\n\tpath = b.conf\n";
    std::ofstream(t / "home/.gitconfig") << "[include]\n\tpath = ~/g.conf\n";
    const auto found = git_config::find_targets((t / "p/src").string(), (t / "home").string());
    auto has = [](const std::vector<std::string>& v, const fs::path& p) {
        return std::find(v.begin(), v.end(), p.string()) != v.end();
    };
    CHECK(has(found.hook_dirs, t / "p/.githooks"));
    CHECK(has(found.files, t / "p/tools/a.conf"));
    CHECK(has(found.files, t / "p/tools/b.conf"));  // included by an included file
    CHECK(has(found.files, t / "home/g.conf"));
    fs::remove_all(t);
}
