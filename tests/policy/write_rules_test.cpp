// The jail's write rules, one list (policy/write_rules.hpp): each rule on the facts it is handed.
#include "policy/write_rules.hpp"

#include <cerrno>
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

}  // namespace cordon::policy::test
