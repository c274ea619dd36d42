// The jail's write rules, one list: the jail's supervisor (jail/notify.cpp) decides every write it performs
// for the command with it, `cordon check write:PATH` decides with it and names the rule, `cordon policy`
// prints it. Policy::decide_write_resolved (allowWrite, denyWrite, the protected names) is one entry; the
// others are what the path rules alone cannot say: the jail's own /dev and /proc, POSIX shared memory, the
// run's TMPDIR without namespaces, git directories known by content or by age, git's configured hook and
// include targets, gitfiles, the bare-repository shape, case-insensitive directories.
//
// Pure: the rules that need file-system facts get them through WriteFacts, which the supervisor implements
// from the jail's view and `cordon check` from the host's file system as it is now.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "policy/git_config.hpp"
#include "policy/policy.hpp"

namespace cordon::policy {

// Which jail runs the command: the namespace jail, or the jail without namespaces (`--jail landlock`), where
// the command shares the host's /dev, /proc and /tmp.
enum class JailKind { Namespaces, Landlock };
std::string_view to_string(JailKind kind);  // "namespaces", "landlock"

struct WriteRule {
    std::string_view name;  // stable: what `cordon check` prints and --json says ("devices", "gitfile", ...)
    bool landlock_only;     // applies only to the jail without namespaces
    std::string_view decides;
    std::string_view why;
    std::string_view limit;  // what `cordon check` cannot know, or where the rule stops
};

// Every rule, in the order they are applied: the first that refuses decides (the errno of its
// WriteDecision); an allowed write names the rule that let it through.
const std::vector<WriteRule>& write_rules();
const WriteRule& write_rule(std::string_view name);  // one of write_rules(), by name (a bad name throws)
nlohmann::json write_rules_json();                   // [{"name","jail","decides","why","limit"}]

// One directory of a tree being moved, as WriteFacts::walk_tree finds it.
class MovedDirectory {
  public:
    virtual const std::string& lands_at() const = 0;            // its path once the move is made
    virtual const std::vector<std::string>& names() const = 0;  // its entries (no `.` nor `..`)
    virtual bool compares_without_case() = 0;
    // Whether its entry `name` (`.`: the directory itself) existed when the run started; one that cannot be
    // looked at counts as old.
    virtual bool existed_at_start(const std::string& name) = 0;
    virtual ~MovedDirectory() = default;
};

// How far protected-moves looks through a tree being moved: past these, the move is answered EXDEV (the
// kernel's answer for a move it cannot make in place: `mv` then copies, and every file of the copy is
// decided as it is made).
constexpr std::size_t kMaxMovedEntries = 100000;
constexpr int kMaxMovedDepth = 64;

// The file-system facts some rules need. Paths are absolute and normal, in the jail's view.
class WriteFacts {
  public:
    virtual JailKind jail() const = 0;
    // Without namespaces: whether `path` lies in the run's own TMPDIR (the private /tmp there).
    virtual bool in_private_tmp(const std::string& path) const = 0;
    // Without namespaces: whether the read rules hide `path`, or something below it (moved or linked
    // elsewhere, it would be shown).
    virtual bool hidden_by_read_rules(const std::string& path) = 0;
    // Whether the git directory `dir` existed when the run started (known by its identity: device, inode and
    // birth time; missing: false, unreadable: true).
    virtual bool git_dir_existed(const std::string& dir) = 0;
    // Whether the directory `dir` holds `HEAD` next to `objects`, `refs` or `commondir` (git reads it as a
    // git directory).
    virtual bool holds_git_signature(const std::string& dir) = 0;
    // Whether the directory `dir` compares names without case (ext4 `chattr +F`, tmpfs `-o casefold`); one
    // that cannot be looked at counts as one (the protection holds).
    virtual bool compares_without_case(const std::string& dir) = 0;
    // The entry `name` of the directory `dir` (the one the write lands in): a regular file; there at all;
    // there and older than the run.
    virtual bool is_regular_file(const std::string& dir, const std::string& name) = 0;
    virtual bool has_entry(const std::string& dir, const std::string& name) = 0;
    virtual bool existed_at_start(const std::string& dir, const std::string& name) = 0;
    // Where git's configuration sends git (policy/git_config.hpp): core.hooksPath directories and included
    // files of the working directory's repository, of every repository in the writable areas and of the
    // user's configuration, as written and resolved (indexed).
    virtual const git_config::Targets& git_targets() = 0;
    // The symlinks that stood at protected names when the run started (`.claude -> dotclaude`), found by the
    // same walk (policy/protected_links.hpp).
    virtual const ProtectedLinks& protected_links() = 0;
    // Whether the entry `name` of `dir` is a regular file that ProtectedLinks holds by identity (another name
    // of a protected file, made before the run).
    virtual bool is_protected_file(const std::string& dir, const std::string& name) = 0;
    // Whether the entry `name` of `dir` is one of cordon's own files (the run's audit log, the cordon binary
    // that runs), by identity (a hard link of it too) or by the path it had when the run started.
    virtual bool is_cordon_file(const std::string& dir, const std::string& name) {
        (void)dir;
        (void)name;
        return false;
    }
    // Whether the directory `path` holds one of cordon's own files or directories (below it, at any depth).
    virtual bool holds_cordon_file(const std::string& path) {
        (void)path;
        return false;
    }
    // A bare repository that allowBareRepositories lets the run make in `dir` (for the end-of-run summary).
    virtual void note_bare_repository(const std::string& dir) { (void)dir; }
    // The entry `name` of `dir`, never followed: a directory; a symlink.
    virtual bool is_directory(const std::string& dir, const std::string& name) = 0;
    virtual bool is_symlink(const std::string& dir, const std::string& name) = 0;
    // The tree of the directory `name` of `dir`, each directory handed to `visit` (the first, the directory
    // itself, lands at `lands_at`), until `visit` answers an errno. Returns that errno, 0 when every
    // directory was visited, EACCES when one cannot be opened or listed (what it holds is unknown), EXDEV
    // past kMaxMovedEntries entries or kMaxMovedDepth levels.
    virtual int walk_tree(const std::string& dir, const std::string& name, const std::string& lands_at,
                          const std::function<int(MovedDirectory&)>& visit) = 0;
    virtual ~WriteFacts() = default;
};

struct WriteDecision {
    int error = 0;                    // 0 allowed, else the errno: EROFS outside the writable areas, EACCES
    const WriteRule* rule = nullptr;  // the rule that decided
    Decision path_rule;               // the path rules' decision, where they were asked (its rule and source)
    // Allowed by the rules, and the jail's own file system answers the call with this errno: ENOENT for a
    // device node the namespace jail's /dev does not hold, EROFS for its read-only parts of /proc. The
    // supervisor lets such a call go on (the kernel answers it); `cordon check` says deny.
    int jail_answers = 0;
    bool allowed() const { return error == 0 && jail_answers == 0; }
};

// A write decision as `cordon check write:PATH`, the end-of-run summary and the audit log name it: the path
// rules' own decision (reason, rule, source) when path-rules decided; otherwise "write rule NAME" from
// cordon's write rules, default-deny where the rule answers EROFS (or the jail's file system would answer
// EROFS or ENOENT), always-read-only for its other refusals.
Decision explain_write(const WriteDecision& decision);

// A write to `path` (absolute, normal, where the write lands in the jail's view). `creates`: the call makes
// the name. The rules of the path alone: what the supervisor asks of a directory it writes in.
WriteDecision decide_write(const Policy& policy, const std::string& path, bool creates, WriteFacts& facts);

// A call that writes, makes, replaces or removes the entry `name` of the directory `dir` (`.`: the directory
// itself): decide_write on its path, then the rules that look at that directory (a gitfile there, the
// bare-repository shape, another program's shared memory, cordon's own files).
WriteDecision decide_write_at(const Policy& policy, const std::string& dir, const std::string& name,
                              bool creates, WriteFacts& facts);

// Whether decide_write_at looks at the directory for an entry of this name (`.git`, `HEAD`, `objects`,
// `refs`, `commondir`, in any case): a call making one takes the supervisor's full path, never its one-call
// fast path.
bool looked_up_where_it_lands(const std::string& name);

// decide_write_at for an absolute normal path, split into its directory and last name.
WriteDecision decide_write_entry(const Policy& policy, const std::string& path, bool creates,
                                 WriteFacts& facts);

// The path rules and the jail's own areas alone (devices, proc-knobs, path-rules, default-tmp,
// shared-memory, private-tmpdir): what the supervisor asks of a directory whose mode it changes.
WriteDecision decide_write_exact(const Policy& policy, const std::string& path, bool creates,
                                 WriteFacts& facts);

// The repository-shape rule's place test: whether `dir` may hold what git reads as a repository (a git
// directory itself, anything inside one the run created, anywhere with allowBareRepositories). The
// supervisor asks it too of a directory moved into place.
bool repository_place_allowed(const Policy& policy, const std::string& dir, WriteFacts& facts);

// WriteFacts::walk_tree over descriptors, for the facts that hold them: the directory `name` of the one open
// as `at`, never following a symlink. `existed(dirfd, name)`: the facts' age of an entry (`.`: the
// directory open as dirfd); `nocase(dirfd)`: whether that directory compares names without case.
int walk_tree_at(int at, const std::string& name, const std::string& lands_at,
                 const std::function<bool(int dirfd, const std::string& name)>& existed,
                 const std::function<bool(int dirfd)>& nocase,
                 const std::function<int(MovedDirectory&)>& visit);

// protected-moves: what a removal, a rename, a link or a symlink takes away or puts in place beyond the
// write of each name (decide_write_at decides those first). A decision's `path` is the name it concerns.
struct MoveDecision : WriteDecision {
    std::string path;
};
// Whether the directory `path` holds or would hold protected names (`.claude`, `.git`, a home's `.config`,
// an ancestor of git's configured targets or of cordon's own files), as the directory that would hold them
// compares names.
bool holds_protected_names(const Policy& policy, const std::string& path, WriteFacts& facts);
// The entry `name` of `dir` removed (unlink, rmdir).
MoveDecision decide_removal(const Policy& policy, const std::string& dir, const std::string& name,
                            WriteFacts& facts);
// The entry `from_name` of `from_dir` renamed to `to_name` of `to_dir` (`exchange`: RENAME_EXCHANGE, each
// takes the other's place).
MoveDecision decide_rename(const Policy& policy, const std::string& from_dir, const std::string& from_name,
                           const std::string& to_dir, const std::string& to_name, bool exchange,
                           WriteFacts& facts);
// The entry `from_name` of `from_dir` given a second name, `to` (link).
MoveDecision decide_link(const Policy& policy, const std::string& from_dir, const std::string& from_name,
                         const std::string& to, WriteFacts& facts);
// A symlink made at `to`.
MoveDecision decide_symlink(const Policy& policy, const std::string& to, WriteFacts& facts);

// shared-memory-of-others on its own: the entry `path` of the host's /dev/shm (the jail without namespaces),
// `existed` whether it existed when the run started (decide_write_at asks it; the supervisor too for a file
// it holds open, a chmod's).
WriteDecision decide_shared_memory_entry(JailKind jail, const std::string& path, bool existed);

// magic-links: what only the running jail knows (the caller's descriptors and PID), decided here.
// A reopen of the caller's descriptor through a magic link (/proc/self/fd/N, /dev/stdout): `wanted` the
// open's flags, `had` the descriptor's (F_GETFL), `directory` whether it is one. Never wider than the
// descriptor: a write only through one open for writing and no directory (EACCES), a read only through one
// open for reading (EACCES).
struct ReopenDecision : WriteDecision {
    bool writes = false;  // the open asks to write: a refusal is a refused write (reported as one)
};
ReopenDecision decide_reopen(int wanted, int had, bool directory);
// A magic link itself made, removed, renamed or linked over (EACCES), or a path inside another process's
// /proc/PID written (`error`: what the jail's view answered for it, EACCES).
WriteDecision decide_magic_link_entry();
WriteDecision decide_other_process(int error);

// The casefold rule's test: whether a component of `path` that folds lies in a directory that compares
// names without case.
bool casefold_on_the_way(const std::string& path, WriteFacts& facts);

// The git directories other than `.git` that a path may name something inside of: for its components, the
// indexes i such that component i + 1 is `hooks`, `config`, `commondir`, `config.worktree`, `modules` or
// `worktrees` (what git_dir_names() protects) and component i is no `.git` (the path rules know it by name).
std::vector<std::size_t> git_dir_candidates(const std::vector<std::string>& components);

}  // namespace cordon::policy
