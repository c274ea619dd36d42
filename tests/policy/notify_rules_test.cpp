// The policy's side of the protected names at the system-call boundary (issue 11): what the jail's supervisor
// asks for each call it performs (decide_write_resolved, holds_protected_names).
#include <nlohmann/json.hpp>
#include <string>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

TEST_CASE("decide_write_resolved: names at any depth, git names only in git directories that existed",
          "[notify]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    auto existed = [](const std::string&) { return true; };
    auto fresh = [](const std::string&) { return false; };
    CHECK(p->decide_write_resolved(cwd + "/src/x.c", existed).allowed());
    CHECK_FALSE(p->decide_write_resolved(cwd + "/a/b/c/.claude/settings.json", existed).allowed());
    CHECK_FALSE(p->decide_write_resolved(cwd + "/deep/er/.bashrc", fresh).allowed());
    CHECK_FALSE(p->decide_write_resolved(cwd + "/x/.vscode/tasks.json", fresh).allowed());
    // Inside a git directory born before the run: hooks, config, commondir, modules, worktrees' links.
    for (const char* rel : {"/.git/hooks/pre-commit", "/.git/config", "/.git/commondir",
                            "/.git/config.worktree", "/.git/modules/sub/config", "/.git/worktrees/w/gitdir",
                            "/.git/worktrees/w/commondir", "/sub/.git/hooks"}) {
        INFO(rel);
        CHECK_FALSE(p->decide_write_resolved(cwd + rel, existed).allowed());
        // A repository the run created works normally.
        CHECK(p->decide_write_resolved(cwd + rel, fresh).allowed());
    }
    // A linked worktree's own files (index, HEAD) stay writable.
    CHECK(p->decide_write_resolved(cwd + "/.git/worktrees/w/index", existed).allowed());
    CHECK(p->decide_write_resolved(cwd + "/.git/objects/ab/cd", existed).allowed());
    // Which git directory is asked about.
    std::string asked;
    p->decide_write_resolved(cwd + "/vendor/lib/.git/hooks/x", [&](const std::string& dir) {
        asked = dir;
        return true;
    });
    CHECK(asked == cwd + "/vendor/lib/.git");
    // Outside the writable areas: default deny.
    auto d = p->decide_write_resolved("/etc/passwd", existed);
    CHECK(d.reason == Reason::DefaultDeny);
    // The same list as `cordon check` and `cordon policy`.
    CHECK_FALSE(p->decide_write(tree.cwd() / ".git/commondir").allowed());
    CHECK(p->to_json()["filesystem"]["gitDirectoryNames"].size() == git_dir_names().size());
}

TEST_CASE("holds_protected_names: directories that would bring protected names along", "[notify]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    CHECK(p->holds_protected_names(cwd + "/.claude"));
    CHECK(p->holds_protected_names(cwd + "/sub/.claude"));
    CHECK(p->holds_protected_names(cwd + "/.git"));
    CHECK(p->holds_protected_names(cwd + "/.git/worktrees/w"));
    CHECK(p->holds_protected_names(tree.home().string() + "/.config"));
    CHECK_FALSE(p->holds_protected_names(cwd + "/src"));
    CHECK_FALSE(p->holds_protected_names(cwd + "/.config"));  // only in a home
}

}  // namespace cordon::policy::test
