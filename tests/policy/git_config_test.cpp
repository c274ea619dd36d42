// Git config files as git reads them, for core.hooksPath and include targets (policy/git_config.hpp).
#include "policy/git_config.hpp"

#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "policy/casefold.hpp"

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
    const auto found =
        git_config::find_targets_below((t / "p/src").string(), (t / "home").string(), {}).targets;
    auto has = [](const std::vector<std::string>& v, const fs::path& p) {
        return std::find(v.begin(), v.end(), p.string()) != v.end();
    };
    CHECK(has(found.hook_dirs, t / "p/.githooks"));
    CHECK(has(found.files, t / "p/tools/a.conf"));
    CHECK(has(found.files, t / "p/tools/b.conf"));  // included by an included file
    CHECK(has(found.files, t / "home/g.conf"));
    fs::remove_all(t);
}

namespace {

struct Tree {
    fs::path t;
    Tree() {
        std::string pattern = (fs::temp_directory_path() / "cordon-git-nested-XXXXXX").string();
        t = ::mkdtemp(pattern.data());
    }
    ~Tree() { fs::remove_all(t); }
    void file(const std::string& rel, const std::string& text) {
        fs::create_directories((t / rel).parent_path());
        std::ofstream(t / rel) << text;
    }
    void repo(const std::string& rel) {  // a `.git` as `git init` makes it, as far as it counts here
        fs::create_directories(t / rel / ".git/objects");
        fs::create_directories(t / rel / ".git/refs");
        file(rel + "/.git/HEAD", "ref: refs/heads/main\n");
    }
    std::string s(const std::string& rel) const { return (t / rel).string(); }
};

bool has(const std::vector<std::string>& v, const std::string& p) {
    return std::find(v.begin(), v.end(), p) != v.end();
}

}  // namespace

TEST_CASE("git config targets below: every repository in the trees, each from its own top") {
    Tree tree;
    tree.repo("p");
    tree.repo("p/vendor/lib");  // nested, with a hooksPath and an include of its own
    tree.file("p/vendor/lib/.git/config",
              "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../../extra.cfg\n");
    tree.file("p/vendor/extra.cfg", "[core]\n\thooksPath = ../tools/hooks\n");  // included: from lib's top
    // A worktree's gitfile naming a git directory elsewhere, and a linked worktree's commondir.
    tree.file("p/wt/.git", "gitdir: ../gitdirs/wt\n");
    tree.file("p/gitdirs/wt/HEAD", "ref: refs/heads/x\n");
    tree.file("p/gitdirs/wt/commondir", "../../vendor/lib/.git\n");
    tree.file("p/gitdirs/wt/config.worktree", "[include]\n\tpath = /abs/wt.cfg\n");
    // A bare repository: hooksPath from itself; what it holds is not entered.
    fs::create_directories(tree.t / "p/remote.git/objects");
    tree.file("p/remote.git/HEAD", "ref: refs/heads/main\n");
    tree.file("p/remote.git/config", "[core]\n\thooksPath = custom\n");
    tree.repo("p/remote.git/objects/deep");  // inside a bare repository: not looked at
    tree.file("p/remote.git/objects/deep/.git/config", "[core]\n\thooksPath = never\n");
    // The user's relative hooksPath counts in every repository.
    tree.file("home/.gitconfig", "[core]\n\thooksPath = .husky/_\n");
    // A symlink to a tree is not followed.
    tree.repo("elsewhere/r");
    tree.file("elsewhere/r/.git/config", "[core]\n\thooksPath = linked\n");
    fs::create_directory_symlink(tree.t / "elsewhere", tree.t / "p/link");

    const auto found = git_config::find_targets_below(tree.s("p"), tree.s("home"), {tree.s("p")});
    const auto& t = found.targets;
    CHECK(has(t.hook_dirs, tree.s("p/vendor/lib/.githooks")));
    CHECK(has(t.files, tree.s("p/vendor/extra.cfg")));
    CHECK(has(t.hook_dirs, tree.s("p/vendor/tools/hooks")));
    CHECK(has(t.hook_dirs, tree.s("p/wt/.githooks")));  // the common config's, from the worktree's top
    CHECK(has(t.files, "/abs/wt.cfg"));
    CHECK(has(t.hook_dirs, tree.s("p/remote.git/custom")));
    CHECK_FALSE(has(t.hook_dirs, tree.s("p/remote.git/objects/deep/never")));
    CHECK_FALSE(has(t.hook_dirs, tree.s("p/link/r/linked")));
    for (const char* top : {"p", "p/vendor/lib", "p/wt", "p/remote.git"})
        CHECK(has(t.hook_dirs, tree.s(top) + "/.husky/_"));
    CHECK(found.repositories >= 4);
    CHECK(found.unsearched_count == 0);
    // The lookups the write rules make.
    CHECK(t.protects(tree.s("p/vendor/lib/.githooks/pre-commit")));
    CHECK(t.protects(tree.s("p/vendor/lib/.githooks")));
    CHECK_FALSE(t.protects(tree.s("p/vendor/lib/.githooksx")));
    CHECK_FALSE(t.protects(tree.s("p/vendor/lib/src.c")));
    CHECK(t.protects(tree.s("p/vendor/extra.cfg")));
    CHECK(t.below(tree.s("p/vendor")));
    CHECK_FALSE(t.below(tree.s("p/vendor/lib/.githooks")));
    CHECK(t.protects(casefold::fold(tree.s("p/vendor/lib/.githooks/x")), true));
}

TEST_CASE("git config targets below: bounded, what is left named, and a stop asked for") {
    Tree tree;
    for (int i = 0; i < 20; ++i)
        tree.repo("p/d" + std::to_string(i) + "/r");
    git_config::SearchLimits limits;
    limits.max_entries = 10;
    auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")}, limits);
    CHECK(found.entries >= 10);
    CHECK(found.unsearched_count > 0);
    CHECK_FALSE(found.unsearched.empty());
    CHECK(found.unsearched.size() <= 16);
    limits = {};
    limits.max_depth = 1;
    found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")}, limits);
    CHECK(found.unsearched_count == 20);  // p/dN/r is two levels down
    // Unknown past the bound: each directory left is protected as a whole (never open).
    CHECK(found.targets.protects(tree.s("p/d3/r")));
    CHECK(found.targets.protects(tree.s("p/d7/r/.githooks/pre-commit")));
    CHECK_FALSE(found.targets.protects(tree.s("p/elsewhere.txt")));
    limits = {};
    limits.stop = [] { return true; };
    found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")}, limits);
    CHECK(found.stopped);
    CHECK(found.repositories == 0);
}

TEST_CASE("git config targets below: a submodule's git directory in .git/modules without its working tree") {
    // `git submodule deinit` removes core.worktree and the gitfile: the working tree is .gitmodules' path
    // (and the name itself); a nested submodule's is found in its superproject's modules the same way.
    Tree tree;
    tree.repo("p");
    tree.file("p/.gitmodules", "[submodule \"libs/a\"]\n\tpath = third_party/a\n\turl = x\n");
    tree.file("p/.git/modules/libs/a/HEAD", "ref: refs/heads/main\n");
    tree.file("p/.git/modules/libs/a/config", "[core]\n\thooksPath = .husky\n");
    tree.file("p/.git/modules/w/HEAD", "ref: refs/heads/main\n");
    tree.file("p/.git/modules/w/config", "[core]\n\tworktree = ../../../elsewhere/w\n\thooksPath = h\n");
    tree.file("p/.git/modules/w/modules/in/HEAD", "ref: refs/heads/main\n");
    tree.file("p/.git/modules/w/modules/in/config", "[core]\n\thooksPath = ih\n");
    const auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    const auto& t = found.targets;
    CHECK(t.protects(tree.s("p/third_party/a/.husky/pre-commit")));
    CHECK(t.protects(tree.s("p/libs/a/.husky/pre-commit")));
    CHECK(t.protects(tree.s("p/elsewhere/w/h/pre-commit")));
    CHECK(t.protects(tree.s("p/elsewhere/w/in/ih/pre-commit")));
    CHECK_FALSE(t.protects(tree.s("p/third_party/a/src.c")));
}

TEST_CASE("git config targets below: a relative hooksPath from the working tree core.worktree names") {
    Tree tree;
    tree.repo("p/meta");
    tree.file("p/meta/.git/config", "[core]\n\tworktree = ../../site\n\thooksPath = .githooks\n");
    const auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    CHECK(found.targets.protects(tree.s("p/site/.githooks/pre-commit")));
    CHECK(found.targets.protects(tree.s("p/meta/.githooks/pre-commit")));
}

TEST_CASE("git config targets below: a git directory spelt as a case-insensitive directory finds it") {
    // `.GIT` and `.git` with a zero-width space are `.git` to git on a case-insensitive directory (ext4 +F,
    // tmpfs casefold): their configurations are read too (here, on a case-sensitive one, that protects what
    // git would not read, never less).
    Tree tree;
    tree.repo("p");
    for (const std::string spelt : {".GIT", ".git\u200B"}) {
        const std::string top = "p/v" + std::to_string(spelt.size());
        fs::create_directories(tree.t / top / spelt / "objects");
        tree.file(top + "/" + spelt + "/HEAD", "ref: refs/heads/main\n");
        tree.file(top + "/" + spelt + "/config", "[core]\n\thooksPath = .githooks\n");
    }
    auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    CHECK(found.targets.protects(tree.s("p/v4/.githooks/pre-commit")));
    CHECK(found.targets.protects(tree.s("p/v7/.githooks/pre-commit")));
}

TEST_CASE("git config targets: a config is read whole up to 16 MiB, a larger one cannot be read") {
    Tree tree;
    tree.repo("p");
    const std::string filler =
        "[alias]\n" + std::string(1 << 20, '#') + "\n";  // a megabyte of comment before the hooksPath
    tree.file("p/.git/config", filler + "[core]\n\thooksPath = .githooks\n");
    auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    CHECK(has(found.targets.hook_dirs, tree.s("p/.githooks")));
    CHECK(found.unreadable_count == 0);

    tree.file("p/.git/config",
              "[alias]\n" + std::string(std::size_t(17) << 20, '#') + "\n[core]\n\thooksPath = .githooks\n");
    found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    REQUIRE(found.unreadable_count == 1);
    CHECK(found.unreadable.front() == tree.s("p/.git/config"));
}

TEST_CASE("git config targets: ~name/ is that user's home from /etc/passwd, an unknown name is skipped") {
    std::ifstream passwd("/etc/passwd");
    std::string line, root_home;
    while (std::getline(passwd, line) && root_home.empty()) {
        if (line.rfind("root:", 0) != 0) continue;
        std::size_t at = 0;
        for (int colon = 0; colon < 5 && at != std::string::npos; ++colon)
            at = line.find(':', at + (colon ? 1 : 0));  // name:password:uid:gid:gecos:home:shell
        if (at != std::string::npos) root_home = line.substr(at + 1, line.find(':', at + 1) - at - 1);
    }
    if (root_home.empty() || root_home[0] != '/') {
        WARN("no root in /etc/passwd");
        return;
    }
    Tree tree;
    tree.repo("p");
    tree.file("p/.git/config",
              "[core]\n\thooksPath = ~root/hooks\n[include]\n\tpath = ~nosuchuser-x/a.cfg\n");
    const auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    CHECK(has(found.targets.hook_dirs, (fs::path(root_home) / "hooks").lexically_normal().string()));
    CHECK(found.targets.files.empty());
}

TEST_CASE("git config targets: X/.. in a relative path protects X by name, and where X leads now") {
    // git opens the path as written: the kernel follows X before `..`. X missing (git skips the include), a
    // symlink made there led `..` elsewhere while the search had collapsed it on the string.
    Tree tree;
    tree.repo("p");
    fs::create_directories(tree.t / "elsewhere/deep");
    fs::create_directory_symlink(tree.t / "elsewhere/deep", tree.t / "p/link");
    tree.file("p/.git/config",
              "[include]\n\tpath = sub/../extra.cfg\n[core]\n\thooksPath = tools/../hooks\n"
              "[include]\n\tpath = ../link/../x.cfg\n");
    const auto found = git_config::find_targets_below(tree.s("p"), "", {tree.s("p")});
    CHECK(found.targets.protects(tree.s("p/.git/extra.cfg")));
    CHECK(found.targets.protects(tree.s("p/.git/sub")));          // never made: git would follow it
    CHECK_FALSE(found.targets.protects(tree.s("p/.git/sub/x")));  // by name only
    CHECK(found.targets.protects(tree.s("p/tools")));
    CHECK(found.targets.protects(tree.s("p/hooks/pre-commit")));
    CHECK(found.targets.protects(tree.s("elsewhere/x.cfg")));  // where the kernel leads it now
}
