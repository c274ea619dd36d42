// The jail's write rules, one list (policy/write_rules.hpp): each rule on the facts it is handed.
#include "policy/write_rules.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {
namespace {

// Facts as a test states them: nothing exists, nothing is old, no directory folds, unless said.
struct StatedFacts final : WriteFacts {
    JailKind kind = JailKind::Namespaces;
    std::string private_tmp;
    std::set<std::string> hidden, old_git_dirs, signatures, nocase_dirs, regular_files, entries, old_entries,
        cordon_files;
    std::vector<std::string> hook_dirs, config_files;
    std::vector<std::string> bare_noted;

    JailKind jail() const override { return kind; }
    bool in_private_tmp(const std::string& path) const override {
        return !private_tmp.empty() && path.rfind(private_tmp, 0) == 0;
    }
    bool hidden_by_read_rules(const std::string& path) override { return hidden.count(path) > 0; }
    bool git_dir_existed(const std::string& dir) override { return old_git_dirs.count(dir) > 0; }
    bool holds_git_signature(const std::string& dir) override { return signatures.count(dir) > 0; }
    bool compares_without_case(const std::string& dir) override { return nocase_dirs.count(dir) > 0; }
    bool is_regular_file(const std::string& dir, const std::string& name) override {
        return regular_files.count(dir + "/" + name) > 0;
    }
    bool has_entry(const std::string& dir, const std::string& name) override {
        return entries.count(dir + "/" + name) > 0;
    }
    bool existed_at_start(const std::string& dir, const std::string& name) override {
        return old_entries.count(dir + "/" + name) > 0;
    }
    bool is_cordon_file(const std::string& dir, const std::string& name) override {
        return cordon_files.count(dir + "/" + name) > 0;
    }
    git_config::Targets targets;
    const git_config::Targets& git_targets() override {
        targets.hook_dirs = hook_dirs;
        targets.files = config_files;
        targets.index();
        return targets;
    }
    void note_bare_repository(const std::string& dir) override { bare_noted.push_back(dir); }
    ProtectedLinks links;
    const ProtectedLinks& protected_links() override { return links; }
    std::set<std::string> protected_files;
    bool is_protected_file(const std::string& dir, const std::string& name) override {
        return protected_files.count(dir + "/" + name) > 0;
    }
    // A stated tree: directories (by path) and what each holds; symlinks; where a walk stops (an errno).
    std::map<std::string, std::vector<std::string>> directories;
    std::set<std::string> symlinks;
    int walk_error = 0;
    bool is_directory(const std::string& dir, const std::string& name) override {
        return directories.count(dir + "/" + name) > 0;
    }
    bool is_symlink(const std::string& dir, const std::string& name) override {
        return symlinks.count(dir + "/" + name) > 0;
    }
    class Stated final : public MovedDirectory {
      public:
        Stated(StatedFacts& f, std::string path, std::string lands_at)
            : f_(f), path_(std::move(path)), lands_at_(std::move(lands_at)) {}
        const std::string& lands_at() const override { return lands_at_; }
        const std::vector<std::string>& names() const override { return f_.directories[path_]; }
        bool compares_without_case() override { return f_.nocase_dirs.count(path_) > 0; }
        bool existed_at_start(const std::string& name) override {
            return name == "." ? f_.old_entries.count(path_) > 0
                               : f_.old_entries.count(path_ + "/" + name) > 0;
        }

      private:
        StatedFacts& f_;
        std::string path_, lands_at_;
    };
    int walk_tree(const std::string& dir, const std::string& name, const std::string& lands_at,
                  const std::function<int(MovedDirectory&)>& visit) override {
        if (walk_error) return walk_error;
        std::vector<std::pair<std::string, std::string>> stack{{dir + "/" + name, lands_at}};
        while (!stack.empty()) {
            auto [path, lands] = stack.back();
            stack.pop_back();
            Stated d(*this, path, lands);
            if (int e = visit(d)) return e;
            for (const std::string& entry : directories[path])
                if (directories.count(path + "/" + entry))
                    stack.emplace_back(path + "/" + entry, lands + "/" + entry);
        }
        return 0;
    }
};

std::string rule_of(const WriteDecision& d) {
    return d.rule ? std::string(d.rule->name) : "(none)";
}

}  // namespace

TEST_CASE("write rules: one list, each rule named, explained, and where it applies", "[write-rules]") {
    std::set<std::string> names;
    for (const WriteRule& rule : write_rules()) {
        INFO(rule.name);
        CHECK(names.insert(std::string(rule.name)).second);
        CHECK_FALSE(rule.decides.empty());
        CHECK_FALSE(rule.why.empty());
    }
    for (const char* name : {"devices", "proc-knobs", "path-rules", "shared-memory", "git-dirs-by-content",
                             "git-config-targets", "casefold", "cordon-files", "gitfile", "repository-shape"})
        CHECK_FALSE(write_rule(name).landlock_only);
    for (const char* name : {"read-rules-hide", "default-tmp", "private-tmpdir", "shared-memory-of-others"})
        CHECK(write_rule(name).landlock_only);
    CHECK(looked_up_where_it_lands("HEAD"));
    CHECK(looked_up_where_it_lands(".GIT"));
    CHECK_FALSE(looked_up_where_it_lands("main.c"));
    const auto json = write_rules_json();
    REQUIRE(json.size() == write_rules().size());
    CHECK(json[0]["name"] == "read-rules-hide");
    CHECK(json[0]["jail"] == "landlock");
}

TEST_CASE("write rules: devices and /proc knobs, per jail", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    StatedFacts ns;
    // The namespace jail: written, never created; what its /dev does not hold is not there.
    CHECK(decide_write(*p, "/dev/null", false, ns).allowed());
    auto sda = decide_write(*p, "/dev/sda", false, ns);
    CHECK(rule_of(sda) == "devices");
    CHECK(sda.error == 0);  // the supervisor lets the call find nothing
    CHECK(sda.jail_answers == ENOENT);
    CHECK_FALSE(sda.allowed());
    CHECK(decide_write(*p, "/dev/newnode", true, ns).error == EACCES);
    auto knob = decide_write(*p, "/proc/sys/kernel/core_pattern", false, ns);
    CHECK(rule_of(knob) == "proc-knobs");
    CHECK(knob.jail_answers == EROFS);
    CHECK(decide_write(*p, "/proc/self/oom_score_adj", false, ns).allowed());
    CHECK(decide_write(*p, "/proc/self/x", true, ns).error == EACCES);
    // Without namespaces: the host's devices, only the jail's list; the host's knobs, never.
    StatedFacts host;
    host.kind = JailKind::Landlock;
    CHECK(decide_write(*p, "/dev/sda", false, host).error == EACCES);
    CHECK(decide_write(*p, "/dev/console", false, host).error == EACCES);
    CHECK(decide_write(*p, "/dev/pts/3", false, host).allowed());
    CHECK(decide_write(*p, "/dev/urandom", false, host).allowed());
    CHECK(decide_write(*p, "/proc/sys/kernel/core_pattern", false, host).error == EACCES);
    CHECK(decide_write(*p, "/proc/sysrq-trigger", false, host).error == EACCES);
    CHECK(decide_write(*p, "/proc", false, host).error == EACCES);
    CHECK(decide_write(*p, "/proc/1234/oom_score_adj", false, host).allowed());
}

TEST_CASE("write rules: shared memory, the private /tmp and the run's TMPDIR", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    StatedFacts ns;
    auto shm = decide_write_entry(*p, "/dev/shm/seg", true, ns);
    CHECK(shm.allowed());
    CHECK(rule_of(shm) == "shared-memory");
    CHECK(decide_write(*p, "/tmp/x", true, ns).allowed());
    StatedFacts host;
    host.kind = JailKind::Landlock;
    host.private_tmp = "/var/tmp/cordon-tmp-abc123";
    host.old_entries.insert("/dev/shm/theirs");
    CHECK(decide_write_entry(*p, "/dev/shm/mine", true, host).allowed());
    auto theirs = decide_write_entry(*p, "/dev/shm/theirs", false, host);
    CHECK(theirs.error == EACCES);
    CHECK(rule_of(theirs) == "shared-memory-of-others");
    auto tmp = decide_write(*p, "/tmp/x", true, host);
    CHECK(tmp.error == EROFS);
    CHECK(rule_of(tmp) == "default-tmp");
    auto own = decide_write(*p, "/var/tmp/cordon-tmp-abc123/x", true, host);
    CHECK(own.allowed());
    CHECK(rule_of(own) == "private-tmpdir");
    CHECK(decide_write(*p, "/var/tmp/other", true, host).error == EROFS);
    // The read rules hide it: refused before anything else, only without namespaces.
    host.hidden.insert(tree.cwd().string() + "/secret");
    auto hidden = decide_write(*p, tree.cwd().string() + "/secret", false, host);
    CHECK(rule_of(hidden) == "read-rules-hide");
    CHECK(hidden.error == EACCES);
    ns.hidden = host.hidden;
    CHECK(decide_write(*p, tree.cwd().string() + "/secret", false, ns).allowed());
}

TEST_CASE("write rules: the path rules, named with the policy's rule", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts facts;
    auto outside = decide_write(*p, "/etc/passwd", false, facts);
    CHECK(outside.error == EROFS);
    CHECK(rule_of(outside) == "path-rules");
    CHECK(outside.path_rule.reason == Reason::DefaultDeny);
    auto bashrc = decide_write(*p, cwd + "/.bashrc", false, facts);
    CHECK(bashrc.error == EACCES);
    CHECK(bashrc.path_rule.reason == Reason::AlwaysReadOnly);
    CHECK(decide_write(*p, cwd + "/src/main.c", true, facts).allowed());
    // .git/hooks only where that .git existed when the run started.
    CHECK(decide_write(*p, cwd + "/.git/hooks/pre-commit", true, facts).allowed());
    facts.old_git_dirs.insert(cwd + "/.git");
    CHECK(decide_write(*p, cwd + "/.git/hooks/pre-commit", true, facts).error == EACCES);
}

TEST_CASE("write rules: cordon's CA directory is always read-only, outside or inside the writable areas",
          "[write-rules]") {
    TempTree tree;
    const std::string cwd = tree.cwd().string();
    for (const std::string& ca : {std::string("/srv/cordon-ca"), cwd + "/ca"}) {
        auto options = tree.options();
        options.private_dirs.push_back(ca);
        auto p = load_ok(options);
        StatedFacts facts;
        // Not "outside the writable areas" (EROFS, lifted by allowWrite), nor written inside the project.
        auto d = decide_write(*p, ca + "/ca.key", false, facts);
        CHECK(d.error == EACCES);
        CHECK(rule_of(d) == "path-rules");
        CHECK(d.path_rule.reason == Reason::AlwaysReadOnly);
        REQUIRE(d.path_rule.rule);
        CHECK(d.path_rule.rule->text == ca);
        CHECK(d.path_rule.rule->source.where == kPrivateDirWhere);
        CHECK(decide_write(*p, ca, false, facts).path_rule.reason == Reason::AlwaysReadOnly);
        // Without namespaces the read rules hide it too: the CA's own rule still says why.
        StatedFacts landlock;
        landlock.kind = JailKind::Landlock;
        landlock.hidden.insert(ca + "/ca.key");
        auto hidden = decide_write(*p, ca + "/ca.key", false, landlock);
        CHECK(rule_of(hidden) == "path-rules");
        CHECK(hidden.error == EACCES);
        CHECK(hidden.path_rule.reason == Reason::AlwaysReadOnly);
        CHECK(p->decide_write(ca + "/new").reason == Reason::AlwaysReadOnly);
        CHECK_FALSE(p->decide_read(ca + "/ca.key").allowed());
        // --allow-write on it changes nothing.
        options.allow_write.push_back(ca);
        CHECK(decide_write(*load_ok(options), ca + "/x", true, facts).path_rule.reason ==
              Reason::AlwaysReadOnly);
    }
}

TEST_CASE("write rules: git directories by content, git's configured targets, gitfiles", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts facts;
    facts.signatures.insert(cwd + "/.bare");
    CHECK(decide_write(*p, cwd + "/.bare/hooks/pre-commit", true, facts).allowed());  // made by the run
    facts.old_git_dirs.insert(cwd + "/.bare");
    auto bare = decide_write(*p, cwd + "/.bare/hooks/pre-commit", true, facts);
    CHECK(bare.error == EACCES);
    CHECK(rule_of(bare) == "git-dirs-by-content");
    CHECK(decide_write(*p, cwd + "/.bare/objects/ab", true, facts).allowed());

    facts.hook_dirs.push_back(cwd + "/.husky");
    facts.config_files.push_back(cwd + "/extra.gitconfig");
    CHECK(rule_of(decide_write(*p, cwd + "/.husky/pre-commit", true, facts)) == "git-config-targets");
    CHECK(decide_write(*p, cwd + "/extra.gitconfig", false, facts).error == EACCES);
    CHECK(decide_write(*p, cwd + "/extra.gitconfig.bak", false, facts).allowed());

    facts.regular_files.insert(cwd + "/sub/.git");
    auto gitfile = decide_write_entry(*p, cwd + "/sub/.git", false, facts);
    CHECK(gitfile.error == EACCES);
    CHECK(rule_of(gitfile) == "gitfile");
    // The run's audit log (the running jail knows it; `cordon check` does not).
    CHECK(decide_write_entry(*p, cwd + "/logs/audit.jsonl", false, facts).allowed());
    facts.cordon_files.insert(cwd + "/logs/audit.jsonl");
    auto audit = decide_write_entry(*p, cwd + "/logs/audit.jsonl", false, facts);
    CHECK(audit.error == EACCES);
    CHECK(rule_of(audit) == "cordon-files");
    CHECK(
        decide_write_entry(*p, cwd + "/other/.git", true, facts).allowed());  // none there: a new repository
}

TEST_CASE("write rules: the bare-repository shape at any depth", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts facts;
    facts.entries.insert(cwd + "/src/objects");
    auto head = decide_write_entry(*p, cwd + "/src/HEAD", true, facts);
    CHECK(head.error == EACCES);
    CHECK(rule_of(head) == "repository-shape");
    CHECK(decide_write_entry(*p, cwd + "/src/HEAD", false, facts).allowed());  // written, not made
    CHECK(decide_write_entry(*p, cwd + "/lib/HEAD", true, facts).allowed());   // no objects there
    facts.entries.insert(cwd + "/a/b/HEAD");
    CHECK(rule_of(decide_write_entry(*p, cwd + "/a/b/refs", true, facts)) == "repository-shape");
    // A git directory itself, and inside one the run created.
    facts.entries.insert(cwd + "/.git/objects");
    CHECK(decide_write_entry(*p, cwd + "/.git/HEAD", true, facts).allowed());
    facts.entries.insert(cwd + "/.git/modules/m/objects");
    CHECK(decide_write_entry(*p, cwd + "/.git/modules/m/HEAD", true, facts).allowed());
    facts.old_git_dirs.insert(cwd + "/.git");
    CHECK(decide_write_entry(*p, cwd + "/.git/modules/m/HEAD", true, facts).error == EACCES);
    CHECK(facts.bare_noted.empty());

    TempTree allowing;
    allowing.project_settings(R"({"sandbox": {"filesystem": {"allowBareRepositories": true}}})");
    auto q = load_ok(allowing.options());
    StatedFacts bare;
    bare.entries.insert(allowing.cwd().string() + "/origin.git/objects");
    CHECK(decide_write_entry(*q, allowing.cwd().string() + "/origin.git/HEAD", true, bare).allowed());
    CHECK(bare.bare_noted == std::vector<std::string>{allowing.cwd().string() + "/origin.git"});
}

TEST_CASE("write rules: protected names compared as a case-insensitive directory compares", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts facts;
    CHECK(decide_write(*p, cwd + "/.BASHRC", false, facts).allowed());
    facts.nocase_dirs.insert(cwd);
    auto folded = decide_write(*p, cwd + "/.BASHRC", false, facts);
    CHECK(folded.error == EACCES);
    CHECK(rule_of(folded) == "casefold");
    CHECK(decide_write(*p, cwd + "/.Git/Hooks/x", true, facts).allowed());  // a .git made by the run
    // The git directory is asked about as the call spells it (the case-insensitive directory finds `.git`).
    facts.old_git_dirs.insert(cwd + "/.Git");
    CHECK(decide_write(*p, cwd + "/.Git/Hooks/x", true, facts).error == EACCES);
    // A gitfile spelt otherwise in such a directory.
    facts.regular_files.insert(cwd + "/.GIT");
    CHECK(rule_of(decide_write_entry(*p, cwd + "/.GIT", false, facts)) == "gitfile");
}

TEST_CASE("write rules: git directories by content and git's targets, spelt otherwise where names fold",
          "[write-rules]") {
    // Attack review (issue 23): in a case-insensitive directory `.bare/HOOKS/x` is the old bare repository's
    // `hooks/x` and `.HUSKY/pre-commit` the core.hooksPath directory's hook; the rules looked only for the
    // exact spelling (`hooks`, the target as configured) and let both through.
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts facts;
    facts.signatures.insert(cwd + "/.bare");
    facts.old_git_dirs.insert(cwd + "/.bare");
    facts.hook_dirs.push_back(cwd + "/.husky");
    facts.config_files.push_back(cwd + "/extra.gitconfig");
    // A directory that compares with case: other names, other files.
    CHECK(decide_write(*p, cwd + "/.bare/HOOKS/pre-receive", true, facts).allowed());
    CHECK(decide_write(*p, cwd + "/.HUSKY/pre-commit", true, facts).allowed());
    CHECK(decide_write(*p, cwd + "/EXTRA.gitconfig", false, facts).allowed());
    facts.nocase_dirs.insert(cwd);
    facts.nocase_dirs.insert(cwd + "/.bare");
    auto hook = decide_write(*p, cwd + "/.bare/HOOKS/pre-receive", true, facts);
    CHECK(hook.error == EACCES);
    CHECK(rule_of(hook) == "casefold");
    CHECK(decide_write(*p, cwd + "/.bare/Config", false, facts).error == EACCES);
    CHECK(decide_write(*p, cwd + "/.bare/Objects/ab", true, facts).allowed());
    CHECK(decide_write(*p, cwd + "/.HUSKY/pre-commit", true, facts).error == EACCES);
    CHECK(decide_write(*p, cwd + "/EXTRA.gitconfig", false, facts).error == EACCES);
    CHECK(decide_write(*p, cwd + "/EXTRA.gitconfig.bak", false, facts).allowed());
}

TEST_CASE("write rules: protected-moves decides removals, renames, links and symlinks", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts f;
    f.directories[cwd + "/.claude"] = {};
    f.directories[cwd + "/src"] = {"main.c"};
    f.directories[cwd + "/.git"] = {"config", "hooks"};
    f.directories[cwd + "/.git/hooks"] = {};
    // A directory holding protected names is neither removed nor moved; one holding none is.
    auto removed = decide_removal(*p, cwd, ".claude", f);
    CHECK(removed.error == EACCES);
    CHECK(rule_of(removed) == "protected-moves");
    CHECK(removed.path == cwd + "/.claude");
    CHECK(decide_removal(*p, cwd, "src", f).error == 0);
    CHECK(decide_removal(*p, cwd, "notes.txt", f).error == 0);  // no directory
    CHECK(decide_rename(*p, cwd, "src", cwd, "lib", false, f).error == 0);
    auto away = decide_rename(*p, cwd, ".claude", cwd, "c2", false, f);
    CHECK(away.error == EACCES);
    CHECK(away.path == cwd + "/.claude");
    // A .git counts only when the directory itself existed when the run started (whatever its path).
    CHECK(decide_rename(*p, cwd, ".git", cwd, "old", false, f).error == 0);
    f.old_entries.insert(cwd + "/.git");
    auto old_git = decide_rename(*p, cwd, ".git", cwd, "old", false, f);
    CHECK(old_git.error == EACCES);
    CHECK(old_git.path == cwd + "/.git");
    // A new one of git's shape moved out of its place would plant a repository where it lands.
    f.directories[cwd + "/sub/.git"] = {"HEAD", "objects"};
    f.directories[cwd + "/sub/.git/objects"] = {};
    auto planted = decide_rename(*p, cwd + "/sub", ".git", cwd, "old", false, f);
    CHECK(planted.error == EACCES);
    CHECK(planted.path == cwd + "/sub/.git");
    CHECK(decide_rename(*p, cwd + "/sub", ".git", cwd + "/other", ".git", false, f).error == 0);
    // Moving an old directory into a .git's place launders it; a new one may go there.
    f.directories[cwd + "/prep"] = {"config"};
    CHECK(decide_rename(*p, cwd, "prep", cwd + "/sub", ".git", false, f).error == 0);
    f.old_entries.insert(cwd + "/prep");
    CHECK(decide_rename(*p, cwd, "prep", cwd + "/sub", ".git", false, f).error == EACCES);
    // What is replaced leaves its place too; with RENAME_EXCHANGE each takes the other's.
    CHECK(decide_rename(*p, cwd, "src", cwd, ".claude", false, f).error == EACCES);
    f.directories[cwd + "/x"] = {};
    CHECK(decide_rename(*p, cwd, "x", cwd, "src", false, f).error == 0);
    CHECK(decide_rename(*p, cwd, "src", cwd, "x", true, f).error == 0);
    // A symlink put where protected names would be: renamed, linked or made there.
    f.symlinks.insert(cwd + "/lnk");
    auto placed = decide_rename(*p, cwd, "lnk", cwd + "/a", ".claude", false, f);
    CHECK(placed.error == EACCES);
    CHECK(placed.path == cwd + "/a/.claude");
    CHECK(decide_rename(*p, cwd, "lnk", cwd, "lnk2", false, f).error == 0);
    // A symlink standing at a protected name when the run started stays (`.git -> realgit`); a new one may
    // go.
    f.symlinks.insert(cwd + "/w/.git");
    CHECK(decide_removal(*p, cwd + "/w", ".git", f).error == 0);
    f.old_entries.insert(cwd + "/w/.git");
    CHECK(decide_removal(*p, cwd + "/w", ".git", f).error == EACCES);
    CHECK(decide_rename(*p, cwd + "/w", ".git", cwd + "/w", "old", false, f).error == EACCES);
    CHECK(decide_rename(*p, cwd, "x", cwd + "/w", ".git", false, f).error == EACCES);  // replaced
    CHECK(decide_link(*p, cwd, "lnk", cwd + "/.claude", f).error == EACCES);
    CHECK(decide_link(*p, cwd, "file", cwd + "/.claude", f).error ==
          0);  // a hard link of a file: its own rules
    CHECK(decide_symlink(*p, cwd + "/b/.git", f).error == EACCES);
    CHECK(decide_symlink(*p, cwd + "/b/link", f).error == 0);
    // With RENAME_EXCHANGE the symlink lands at the source's name.
    CHECK(decide_rename(*p, cwd + "/a", ".claude", cwd, "lnk", true, f).error == EACCES);
}

TEST_CASE("write rules: protected-moves looks through a tree being moved", "[write-rules]") {
    TempTree tree;
    auto p = load_ok(tree.options());
    const std::string cwd = tree.cwd().string();
    StatedFacts f;
    f.directories[cwd + "/vendor"] = {"lib", "README"};
    f.directories[cwd + "/vendor/lib"] = {".git", "a.c"};
    f.directories[cwd + "/vendor/lib/.git"] = {};
    // A .git the run made moves with its tree; one that existed does not (moving the ancestor launders it).
    CHECK(decide_rename(*p, cwd, "vendor", cwd, "third_party", false, f).error == 0);
    f.old_entries.insert(cwd + "/vendor/lib/.git");
    auto tree_move = decide_rename(*p, cwd, "vendor", cwd, "third_party", false, f);
    CHECK(tree_move.error == EACCES);
    CHECK(tree_move.path == cwd + "/vendor");
    CHECK(rule_of(tree_move) == "protected-moves");
    // In a directory that compares names without case, `.GIT` is that .git.
    StatedFacts g;
    g.directories[cwd + "/v"] = {".GIT"};
    g.directories[cwd + "/v/.GIT"] = {};
    g.old_entries.insert(cwd + "/v/.GIT");
    CHECK(decide_rename(*p, cwd, "v", cwd, "w", false, g).error == 0);
    g.nocase_dirs.insert(cwd + "/v");
    CHECK(decide_rename(*p, cwd, "v", cwd, "w", false, g).error == EACCES);
    // A directory of git's shape lands only where a repository may be: inside a git directory the run made,
    // or anywhere with allowBareRepositories; one that existed never moves.
    StatedFacts s;
    s.directories[cwd + "/.git"] = {"prep"};
    s.directories[cwd + "/.git/prep"] = {"HEAD", "objects"};
    s.directories[cwd + "/.git/prep/objects"] = {};
    CHECK(decide_rename(*p, cwd + "/.git", "prep", cwd + "/src", "prep", false, s).error == EACCES);
    CHECK(decide_rename(*p, cwd + "/.git", "prep", cwd + "/.git/modules", "prep", false, s).error == 0);
    s.nocase_dirs.insert(cwd + "/.git/prep");
    s.directories[cwd + "/.git/prep"] = {"head", "OBJECTS"};  // its case in a case-insensitive directory
    CHECK(decide_rename(*p, cwd + "/.git", "prep", cwd + "/src", "prep", false, s).error == EACCES);
    TempTree allowing;
    allowing.project_settings(R"({"sandbox": {"filesystem": {"allowBareRepositories": true}}})");
    auto q = load_ok(allowing.options());
    const std::string acwd = allowing.cwd().string();
    StatedFacts b;
    b.directories[acwd + "/prep"] = {"HEAD", "refs"};
    b.directories[acwd + "/prep/refs"] = {};
    CHECK(decide_rename(*q, acwd, "prep", acwd, "origin.git", false, b).error == 0);
    b.old_entries.insert(acwd + "/prep");
    CHECK(decide_rename(*q, acwd, "prep", acwd, "origin.git", false, b).error == EACCES);
    // What the walk answers (a tree too large: EXDEV; one it cannot list: EACCES) is the answer.
    StatedFacts big;
    big.directories[cwd + "/huge"] = {};
    big.walk_error = EXDEV;
    CHECK(decide_rename(*p, cwd, "huge", cwd, "huge2", false, big).error == EXDEV);
}

TEST_CASE("write rules: walk_tree_at lists a real tree, bounded, never following a symlink",
          "[write-rules]") {
    TempTree tree;
    const std::filesystem::path root = tree.cwd() / "t";
    std::filesystem::create_directories(root / "a" / "b");
    std::filesystem::create_directories(tree.cwd() / "elsewhere" / "deep");
    std::filesystem::create_directory_symlink(tree.cwd() / "elsewhere", root / "a" / "link");
    { std::ofstream(root / "a" / "b" / "f") << "x"; }
    const int at = ::open(tree.cwd().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(at >= 0);
    std::vector<std::string> seen;
    const std::function<bool(int, const std::string&)> existed = [](int, const std::string&) {
        return false;
    };
    const std::function<bool(int)> nocase = [](int) { return false; };
    CHECK(walk_tree_at(at, "t", "/to", existed, nocase, [&](MovedDirectory& d) {
              seen.push_back(d.lands_at());
              return 0;
          }) == 0);
    std::sort(seen.begin(), seen.end());
    CHECK(seen == std::vector<std::string>{"/to", "/to/a", "/to/a/b"});  // link/ not followed
    CHECK(walk_tree_at(at, "t", "/to", existed, nocase,
                       [](MovedDirectory& d) { return d.lands_at() == "/to/a" ? EACCES : 0; }) == EACCES);
    CHECK(walk_tree_at(at, "missing", "/to", existed, nocase, [](MovedDirectory&) { return 0; }) == EACCES);
    // Deeper than kMaxMovedDepth levels: EXDEV (`mv` copies).
    std::filesystem::path deep = tree.cwd() / "deep";
    for (int i = 0; i <= kMaxMovedDepth; ++i)
        deep /= "d";
    std::filesystem::create_directories(deep);
    CHECK(walk_tree_at(at, "deep", "/to", existed, nocase, [](MovedDirectory&) { return 0; }) == EXDEV);
    ::close(at);
}

TEST_CASE("write rules: a symlink at a protected name protects where it leads, and stays", "[write-rules]") {
    // The attack review (issue 23): with `.claude -> dotclaude`, `dotclaude/settings.local.json`,
    // `dotclaude/commands/x.md` and (without namespaces) `dotclaude/settings.json` were written: Claude Code
    // follows the link. So for `.vscode -> hop -> editor` (each link on the way), a link inside a target
    // (`dotclaude/commands -> ../cmds`) and `.git/hooks -> ../githooks`.
    TempTree tree;
    namespace fs = std::filesystem;
    const fs::path w = tree.cwd();
    for (const char* d : {"dotclaude", "editor", "cmds", "githooks", ".git", "src"})
        fs::create_directories(w / d);
    { std::ofstream(w / "dotclaude" / "settings.json") << "{}"; }
    fs::create_directory_symlink("dotclaude", w / ".claude");
    fs::create_directory_symlink("../cmds", w / "dotclaude" / "commands");
    fs::create_directory_symlink("hop", w / ".vscode");
    fs::create_directory_symlink("editor", w / "hop");
    fs::create_directory_symlink("../githooks", w / ".git" / "hooks");
    { std::ofstream(w / ".git" / "HEAD") << "ref: refs/heads/main\n"; }
    fs::create_directories(w / ".git" / "objects");
    fs::create_directories(w / ".git" / "refs");
    fs::create_directory_symlink("src", w / "plain-link");  // no protected name: nothing to follow
    auto p = load_ok(tree.options());
    const std::string cwd = w.string();
    const auto search = git_config::find_targets_for(*p);
    const ProtectedLinks& links = search.protected_links;
    std::set<std::pair<std::string, std::string>> found;
    for (const auto& link : links.links())
        found.emplace(link.named, link.target);
    CHECK(found == std::set<std::pair<std::string, std::string>>{
                       {cwd + "/.claude", cwd + "/dotclaude"},
                       {cwd + "/.claude/commands", cwd + "/cmds"},
                       {cwd + "/.vscode", cwd + "/editor"},
                       {cwd + "/.git/hooks", cwd + "/githooks"},
                   });
    CHECK(links.named_as(cwd + "/dotclaude/settings.local.json") ==
          std::vector<std::string>{cwd + "/.claude/settings.local.json"});
    CHECK(links.named_as(cwd + "/src/main.c").empty());
    CHECK(links.named_as(cwd + "/dotclaudex").empty());

    StatedFacts f;
    f.links = links;
    f.old_entries.insert(cwd + "/.git");
    f.old_git_dirs.insert(cwd + "/.git");
    // (dotclaude/settings.json is also a settings file cordon read, through the link: path-rules.)
    CHECK(decide_write(*p, cwd + "/dotclaude/settings.json", false, f).error == EACCES);
    for (const char* path : {"/dotclaude/settings.local.json", "/dotclaude/agents", "/cmds/evil.md",
                             "/editor/tasks.json", "/githooks/pre-commit"}) {
        INFO(path);
        const WriteDecision d = decide_write(*p, cwd + path, true, f);
        CHECK(d.error == EACCES);
        CHECK(rule_of(d) == "protected-links");
    }
    // What the protected names do not name stays writable at the target, as at the name.
    CHECK(decide_write(*p, cwd + "/dotclaude/notes.md", true, f).allowed());
    CHECK(decide_write(*p, cwd + "/src/main.c", true, f).allowed());
    // The target, each link on the way and their ancestors stay in place; a new symlink may not stand in.
    f.directories[cwd + "/dotclaude"] = {"settings.json", "commands"};
    f.directories[cwd + "/editor"] = {};
    f.symlinks = {cwd + "/hop", cwd + "/dotclaude/commands"};
    f.old_entries.insert(cwd + "/hop");
    f.old_entries.insert(cwd + "/dotclaude/commands");
    CHECK(decide_rename(*p, cwd, "dotclaude", cwd, "away", false, f).error == EACCES);
    CHECK(decide_removal(*p, cwd, "editor", f).error == EACCES);
    CHECK(rule_of(decide_removal(*p, cwd, "hop", f)) == "protected-moves");
    CHECK(decide_removal(*p, cwd, "hop", f).error == EACCES);
    CHECK(decide_removal(*p, cwd + "/dotclaude", "commands", f).error == EACCES);
    CHECK(decide_symlink(*p, cwd + "/hop", f).error == EACCES);
    CHECK(decide_removal(*p, cwd, "plain-link", f).error == 0);
    // Another name of a protected file, made before the run (a hard link): written, it is that file.
    f.links.add_file(1, 2);
    f.protected_files.insert(cwd + "/bk.json");
    const WriteDecision hard = decide_write_at(*p, cwd, "bk.json", false, f);
    CHECK(hard.error == EACCES);
    CHECK(rule_of(hard) == "protected-links");
    CHECK(decide_write_at(*p, cwd, "other.json", false, f).allowed());
}

TEST_CASE("write rules: magic-links never reopen wider than the descriptor", "[write-rules]") {
    CHECK(decide_reopen(O_WRONLY, O_WRONLY, false).error == 0);
    CHECK(decide_reopen(O_WRONLY | O_APPEND, O_RDWR, false).error == 0);
    auto widened = decide_reopen(O_WRONLY, O_RDONLY, false);  // `< file` reopened to write
    CHECK(widened.error == EACCES);
    CHECK(widened.writes);
    CHECK(rule_of(widened) == "magic-links");
    CHECK(decide_reopen(O_RDONLY | O_TRUNC, O_RDONLY, false).error == EACCES);
    CHECK(decide_reopen(O_WRONLY, O_RDWR, true).error == EACCES);  // a directory
#ifdef O_PATH
    CHECK(decide_reopen(O_WRONLY, O_PATH, false).error == EACCES);  // an O_PATH descriptor writes nothing
    CHECK(decide_reopen(O_PATH, O_WRONLY, false).error == 0);
#endif
    auto read = decide_reopen(O_RDONLY, O_WRONLY, false);  // `2>>log` reopened to read
    CHECK(read.error == EACCES);
    CHECK_FALSE(read.writes);
    CHECK(decide_reopen(O_RDONLY, O_RDONLY, false).error == 0);
    CHECK(decide_magic_link_entry().error == EACCES);
    CHECK(rule_of(decide_other_process(EACCES)) == "magic-links");
    CHECK(decide_shared_memory_entry(JailKind::Landlock, "/dev/shm/theirs", true).error == EACCES);
    CHECK(decide_shared_memory_entry(JailKind::Landlock, "/dev/shm/mine", false).error == 0);
    CHECK(decide_shared_memory_entry(JailKind::Namespaces, "/dev/shm/theirs", true).error == 0);
}

}  // namespace cordon::policy::test
