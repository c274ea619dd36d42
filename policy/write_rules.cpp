#include "policy/write_rules.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "policy/casefold.hpp"
#include "policy/path_components.hpp"

namespace cordon::policy {

std::string_view to_string(JailKind kind) {
    return kind == JailKind::Landlock ? "landlock" : "namespaces";
}

const std::vector<WriteRule>& write_rules() {
    static const std::vector<WriteRule> rules = {
        {"read-rules-hide", true,
         "a write to a path the read rules hide (denyRead, the project read scope), or to a directory that "
         "holds one, is refused (EACCES)",
         "without namespaces no mask hides it from the supervisor, which performs the write with its own "
         "view",
         "the namespace jail's masks are mount points (EBUSY, an empty mask): the same refusal by other "
         "means"},
        {"devices", false,
         "/dev (but /dev/shm): device files are written, never created (EACCES). The namespace jail's /dev "
         "holds null, zero, full, random, urandom, tty, ptmx, pts/*, console, fd, stdin, stdout, stderr and "
         "shm (any other name is not there: ENOENT); without namespaces only null, zero, full, random, "
         "urandom, tty, ptmx and pts/* are written (EACCES otherwise)",
         "without namespaces /dev is the host's: a disk, /dev/mem or a console that root's command could "
         "open "
         "by its mode bits",
         "console exists in the namespace jail only when it was started on a terminal; a terminal of another "
         "session (pts/*) is refused when opened (a fact of the running jail)"},
        {"proc-knobs", false,
         "/proc: written, never created (EACCES). In the namespace jail /proc/sys, /proc/sysrq-trigger, "
         "/proc/irq and /proc/bus are read-only mounts (EROFS); without namespaces only a process's own "
         "directory (/proc/PID/..., self, thread-self) is written (EACCES otherwise)",
         "a command running as (mapped) root could write the host's kernel knobs (core_pattern, sysrq)",
         "another process's /proc/PID is refused on the path resolved in the jail (magic-links); what "
         "a file's own mode refuses is the kernel's"},
        {"magic-links", false,
         "a magic link to a descriptor of the caller's (/dev/stdout, /dev/fd/N, /proc/self/fd/N, "
         "/proc/<own pid>/fd/N) is reopened for writing only when that descriptor is open for writing and no "
         "directory, and is never made, removed, renamed or linked over; a path inside another process's "
         "/proc/PID is never written (EACCES)",
         "the supervisor opens what the caller names with its own rights: `< file` reopened through "
         "/proc/self/fd/0 would become a writable descriptor of a file the command may only read, and "
         "another "
         "process's /proc/PID/mem would be opened read-write whatever ptrace allows",
         "`cordon check` knows neither the caller's descriptors nor its PID: it decides such a path as the "
         "rest of /dev and /proc"},
        {"path-rules", false,
         "allowWrite, denyWrite, the private temporary directory, the protected names (.bashrc, .git/hooks, "
         ".claude/settings.json, ...), the settings files read, cordon's CA directory and its sessions' "
         "registries, sockets and directories: "
         "Policy::decide_write_resolved; outside the writable areas EROFS, a protected path EACCES",
         "the user's rules and the protected names, decided where the write lands (symlinks resolved in the "
         "jail's view); the names inside a .git count only where it existed when the run started",
         "`cordon check` takes a .git that exists now for one that existed when the run started"},
        {"default-tmp", true,
         "the default \"/tmp\" rule allows only the run's own TMPDIR (EROFS elsewhere in the host's /tmp)",
         "without namespaces /tmp is the host's, shared with the user's other programs",
         "`cordon check` knows a run's TMPDIR by its name (TMPDIR or /tmp, then cordon-tmp-XXXXXX)"},
        {"shared-memory", false,
         "/dev/shm is writable where the path rules deny only by default (a project bound below it keeps its "
         "protected names)",
         "POSIX shared memory and semaphores: the namespace jail's /dev/shm is its own tmpfs",
         "without namespaces /dev/shm is the host's: see shared-memory-of-others"},
        {"private-tmpdir", true, "the run's own TMPDIR is writable wherever it was made",
         "it stands for the namespace jail's private /tmp",
         "`cordon check` knows a run's TMPDIR by its name (TMPDIR or /tmp, then cordon-tmp-XXXXXX)"},
        {"shared-memory-of-others", true,
         "an entry of /dev/shm that existed when the run started is neither written, truncated, replaced, "
         "moved nor removed (EACCES)",
         "it is another program's shared memory or semaphore (the same user's, or root's for root's command)",
         "`cordon check` takes an entry that exists now for one that existed when the run started"},
        {"protected-links", false,
         "a write below where a symlink at a protected name led when the run started (.claude -> dotclaude, "
         ".vscode -> editor, .git/hooks -> ../githooks, a home's .config -> dotfiles/config), through each "
         "link on its way, is decided as the same write at the protected name too: dotclaude/settings.json "
         "is .claude/settings.json (EACCES)",
         "Claude Code, git and the editors follow the link: a settings.local.json, a command or a hook "
         "written "
         "at the target steers the agent or runs on the host, though its own path holds no protected name. "
         "The links on the way and the target are kept in place (protected-moves)",
         "the links are found by the start-time walk of the writable areas (git-config-targets' bounds), "
         "at the protected names of the homes (the user's, /root, /home/*) and of each ancestor of a "
         "writable "
         "area, and in the trees of the protected directories, the links' targets, the git directories' and "
         "git's hooks directories (200,000 entries in all; past that every writable area is read-only); a "
         "bind "
         "mount of a protected directory or a home in the writable areas counts as a link; a regular file at "
         "a protected name that has other names (a hard link made before the run) is refused by any of them, "
         "but not in ~/.claude's data (projects, todos, ...), where only links are looked for; `cordon "
         "check` "
         "follows the links as they are now"},
        {"git-dirs-by-content", false,
         "inside a git directory of any name (HEAD next to objects, refs or commondir: `.bare`, "
         "`origin.git`, "
         "a worktree's) that existed when the run started, the names protected inside a .git are refused "
         "(EACCES)",
         "git reads the config and runs the hooks of a git directory a gitfile points to, and of a bare "
         "repository, exactly as those of a .git",
         "`cordon check` takes a git directory that exists now for one that existed when the run started"},
        {"git-config-targets", false,
         "core.hooksPath directories and the files include.path / includeIf.*.path name, in the repository "
         "of the working directory, in every repository in the writable areas (a nested one, a worktree's, "
         "a bare one, a submodule's kept in .git/modules) and in the user's configuration, are refused "
         "(EACCES)",
         "they usually point into the writable working tree: a hook or an included core.fsmonitor there runs "
         "on the host at the user's next commit or status",
         "read when the run starts (`cordon check`: now), as written and resolved; the writable areas are "
         "searched for repositories up to 1,000,000 entries and 64 levels (past that the directories left "
         "are named, and a repository there keeps its own targets writable); a directory there the search "
         "cannot "
         "open or list (mode -wx: a repository below it is still reached by name) is protected as a whole; "
         "a config, include, gitfile or commondir that is there but cannot be read (or is larger than 16 "
         "MiB), or such a directory of the searching user's own, makes every writable area read-only "
         "(what it names is unknown)"},
        {"casefold", false,
         "in a directory that compares names without case (ext4 chattr +F, tmpfs -o casefold) a name that "
         "folds to a protected one is that one (.BASHRC, .Git/Hooks) (EACCES)",
         "the kernel compares the names' case-folded NFD forms there (policy/casefold.hpp)",
         "a directory that cannot be looked at counts as case-insensitive"},
        {"cordon-files", false,
         "cordon's own files (the run's audit log, the cordon binary that runs) are never written, "
         "truncated, "
         "replaced, linked, moved or removed (EACCES), nor is a directory that holds one moved",
         "the audit log records what the command did (it must not forge or erase it); a binary replaced in a "
         "writable area would run the command's program on the host at the user's next `cordon`. The "
         "namespace jail also binds them read-only; the jail without namespaces has no such mount",
         "`cordon check` does not know a run's audit log (it is a flag of `cordon run`)"},
        {"gitfile", false,
         "an existing `.git` that is a file (gitdir: ...) is never written, replaced or removed",
         "it says which git directory git reads (config, hooks) for the working tree", ""},
        {"repository-shape", false,
         "`HEAD` next to `objects`, `refs` or `commondir` is not made (nor the reverse) outside a git "
         "directory (`.../.git`, or inside one the run created), unless allowBareRepositories (EACCES)",
         "git takes such a directory for a repository at every level it searches and reads its config "
         "(core.fsmonitor, core.worktree): planted in src/, it runs a command at the host's next git status",
         "moving a directory of that shape into place is decided by protected-moves (`cordon check "
         "move:FROM TO`)"},
        {"protected-moves", false,
         "a directory that holds protected names (a .git that existed when the run started, .claude, a "
         "home's "
         ".config, an ancestor of git's configured targets or of cordon's own files and directories) is "
         "neither "
         "moved nor "
         "removed, no symlink is put where one would be, and no tree holding an old git directory, or one "
         "that would plant a repository, is moved (EACCES)",
         "moving or replacing an ancestor would launder what the names protect: move the old .git away and "
         "put a prepared one (config, hooks) in its place",
         "`cordon check move:FROM TO`, `remove:PATH` and `symlink:PATH` decide it on the file system as it "
         "is now (what is there taken for what was there when the run started); a tree too large to look "
         "through (100,000 entries, 64 levels) is answered EXDEV (`mv` then copies, each file decided)"},
    };
    return rules;
}

const WriteRule& write_rule(std::string_view name) {
    for (const WriteRule& rule : write_rules())
        if (rule.name == name) return rule;
    throw std::logic_error("no write rule " + std::string(name));
}

nlohmann::json write_rules_json() {
    nlohmann::json out = nlohmann::json::array();
    for (const WriteRule& rule : write_rules())
        out.push_back({{"name", rule.name},
                       {"jail", rule.landlock_only ? "landlock" : "all"},
                       {"decides", rule.decides},
                       {"why", rule.why},
                       {"limit", rule.limit}});
    return out;
}

std::vector<std::size_t> git_dir_candidates(const std::vector<std::string>& components) {
    static constexpr std::array<std::string_view, 6> kInside = {"hooks",           "config",  "commondir",
                                                                "config.worktree", "modules", "worktrees"};
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i + 1 < components.size(); ++i) {
        if (components[i] == ".git") continue;
        for (std::string_view name : kInside)
            if (components[i + 1] == name) {
                out.push_back(i);
                break;
            }
    }
    return out;
}

namespace {

std::string joined(const std::string& dir, const std::string& name) {
    return name == "." ? dir : dir == "/" ? "/" + name : dir + "/" + name;
}

bool under(const std::string& path, std::string_view root) {
    return path.compare(0, root.size(), root) == 0 &&
           (path.size() == root.size() || path[root.size()] == '/');
}

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

WriteDecision by(std::string_view rule, int error, int jail_answers = 0) {
    WriteDecision d;
    d.error = error;
    d.rule = &write_rule(rule);
    d.jail_answers = jail_answers;
    return d;
}

// The jail's own areas: /dev (but /dev/shm) and /proc.
WriteDecision decide_own_areas(const std::string& path, bool creates, JailKind jail) {
    const bool dev = under(path, "/dev");
    const std::string_view rule = dev ? "devices" : "proc-knobs";
    if (creates) return by(rule, EACCES);
    if (dev) {
        static const char* const kDevices[] = {"/dev/null",    "/dev/zero", "/dev/full", "/dev/random",
                                               "/dev/urandom", "/dev/tty",  "/dev/ptmx"};
        const bool listed = std::any_of(std::begin(kDevices), std::end(kDevices),
                                        [&](const char* device) { return path == device; });
        const bool pts = under(path, "/dev/pts") && path != "/dev/pts";
        if (jail == JailKind::Landlock) return by(rule, listed || pts ? 0 : EACCES);
        // The namespace jail's minimal /dev (jail/mounts.cpp mount_dev): any other name is not there.
        static const char* const kJailDev[] = {"/dev",       "/dev/pts",    "/dev/console", "/dev/fd",
                                               "/dev/stdin", "/dev/stdout", "/dev/stderr"};
        const bool present =
            listed || pts || std::any_of(std::begin(kJailDev), std::end(kJailDev), [&](auto n) {
                return path == n || (std::strcmp(n, "/dev/fd") == 0 && under(path, n));
            });
        return by(rule, 0, present ? 0 : ENOENT);
    }
    // /proc: a process's own directory, or (without namespaces) nothing else.
    const std::size_t end = path.find('/', 6);
    const std::string who = path.size() > 6
                                ? path.substr(6, end == std::string::npos ? std::string::npos : end - 6)
                                : std::string();
    const bool own = end != std::string::npos && (all_digits(who) || who == "self" || who == "thread-self");
    if (jail == JailKind::Landlock) return by(rule, own ? 0 : EACCES);
    // The namespace jail binds these read-only over themselves (jail/mounts.cpp mount_proc).
    for (const char* part : {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq", "/proc/bus"})
        if (under(path, part)) return by(rule, 0, EROFS);
    return by(rule, 0);
}

// The path rules and what stands in for the jail's private areas, on `path` as spelt; `original` is the path
// as the call names it (the same, or `path` folded: the git directories looked up are taken from it,
// component for component, as folding may change a component's length but never where a `/` is).
WriteDecision decide_exact(const Policy& policy, const std::string& path, bool creates,
                           const std::string& original, WriteFacts& facts) {
    const JailKind jail = facts.jail();
    if (!under(path, "/dev/shm") && (under(path, "/dev") || under(path, "/proc")))
        return decide_own_areas(path, creates, jail);
    const Decision d = policy.decide_write_resolved(path, [&](const std::string& dir) {
        if (&original == &path) return facts.git_dir_existed(dir);
        const auto n = static_cast<std::size_t>(std::count(dir.begin(), dir.end(), '/'));
        return facts.git_dir_existed(dir == "/" ? dir
                                                : path_components::join(path_components::split(original), n));
    });
    WriteDecision out = by("path-rules", 0);
    out.path_rule = d;
    if (d.allowed()) {
        // Without namespaces the policy's default "/tmp" means the jail's private /tmp: the run's TMPDIR.
        const bool default_tmp = d.rule && d.rule->source.layer == Layer::Default && d.rule->text == "/tmp";
        if (jail == JailKind::Landlock && !under(path, "/dev/shm") && default_tmp &&
            !facts.in_private_tmp(path)) {
            out.rule = &write_rule("default-tmp");
            out.error = EROFS;
        }
        return out;
    }
    // The jail's /dev/shm is its own tmpfs (POSIX shared memory), free to write, except a project bound below
    // it (a writable root there): its protected names are refused like anywhere else.
    if (under(path, "/dev/shm") && d.reason == Reason::DefaultDeny) {
        out.rule = &write_rule("shared-memory");
        return out;
    }
    // The run's TMPDIR without namespaces stands for the private /tmp, wherever it was made.
    if (jail == JailKind::Landlock && d.reason == Reason::DefaultDeny && facts.in_private_tmp(path)) {
        out.rule = &write_rule("private-tmpdir");
        return out;
    }
    out.error = d.reason == Reason::DefaultDeny ? EROFS : EACCES;
    return out;
}

// The names protected inside a `.git` that existed when the run started, inside any other git directory of
// that age, recognised by what it holds. Looked up only where the path names something inside a git
// directory (`hooks`, `config`, ...): most paths cost nothing.
// `original`: the path as the call spells it (the same, or `path` folded): the directories are looked at as
// spelt, component for component.
bool in_old_git_dir(const Policy& policy, const std::string& path, WriteFacts& facts,
                    const std::string& original) {
    const std::vector<std::string> parts = path_components::split(path);
    const std::vector<std::string> spelt = path_components::split(original);
    for (std::size_t i : git_dir_candidates(parts)) {
        const std::string dir = path_components::join(spelt.size() == parts.size() ? spelt : parts, i + 1);
        if (!facts.holds_git_signature(dir) || !facts.git_dir_existed(dir)) continue;
        std::string inside = "/.git";
        for (std::size_t k = i + 1; k < parts.size(); ++k)
            inside += "/" + parts[k];
        const Decision d = policy.decide_write_resolved(inside, [](const std::string&) { return true; });
        if (d.reason == Reason::AlwaysReadOnly) return true;
    }
    return false;
}

// `folded`: compare folded (`path` is folded): the target as a case-insensitive directory finds it.
bool git_config_target(const std::string& path, WriteFacts& facts, bool folded = false) {
    return facts.git_targets().protects(path, folded);
}

// Whether `name` in `dir` is `what`: exactly, or in another case in a directory that compares without case.
bool name_is(const std::string& dir, const std::string& name, const char* what, WriteFacts& facts) {
    if (name == what) return true;
    return casefold::fold(name) == casefold::fold(what) && facts.compares_without_case(dir);
}

bool inside_git_dir(const std::string& dir) {
    return (dir.size() >= 5 && dir.compare(dir.size() - 5, 5, "/.git") == 0) ||
           dir.find("/.git/") != std::string::npos;
}

}  // namespace

// Whether a component of `path` that folds lies in a directory that compares without case.
bool casefold_on_the_way(const std::string& path, WriteFacts& facts) {
    std::size_t start = 1;
    while (start < path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        if (casefold::folds(std::string_view(path).substr(start, end - start)) &&
            facts.compares_without_case(start == 1 ? "/" : path.substr(0, start - 1)))
            return true;
        start = end + 1;
    }
    return false;
}

// Whether `dir` may hold what git reads as a repository: a git directory itself (`.../.git`), anything inside
// a git directory the run created (submodules, `git clone --mirror` into `.git/...`), and with
// allowBareRepositories anywhere.
bool repository_place_allowed(const Policy& policy, const std::string& dir, WriteFacts& facts) {
    if (dir.size() >= 5 && dir.compare(dir.size() - 5, 5, "/.git") == 0) return true;
    const std::size_t at = dir.rfind("/.git/");
    if (at != std::string::npos && !facts.git_dir_existed(dir.substr(0, at + 5))) return true;
    return policy.filesystem().allow_bare_repositories;
}

Decision explain_write(const WriteDecision& wd) {
    if (wd.rule && wd.rule->name == "path-rules") return wd.path_rule;
    Decision d;
    d.verdict = wd.allowed() ? Verdict::Allow : Verdict::Deny;
    d.reason = wd.allowed() ? Reason::AllowedByRule
               : wd.error == EROFS || wd.jail_answers == EROFS || wd.jail_answers == ENOENT
                   ? Reason::DefaultDeny
                   : Reason::AlwaysReadOnly;
    Rule rule{"write rule " + std::string(wd.rule ? wd.rule->name : "(none)"), {}};
    rule.source.where = "cordon's write rules (cordon policy --write-rules)";
    d.rule = std::make_shared<const Rule>(std::move(rule));
    return d;
}

WriteDecision decide_write_exact(const Policy& policy, const std::string& path, bool creates,
                                 WriteFacts& facts) {
    return decide_exact(policy, path, creates, path, facts);
}

WriteDecision decide_write(const Policy& policy, const std::string& path, bool creates, WriteFacts& facts) {
    // Without namespaces no mask hides what the read rules hide from the supervisor's own call.
    if (facts.jail() == JailKind::Landlock && facts.hidden_by_read_rules(path)) {
        // cordon's own private directory (the CA's) is hidden too, and says why itself, as in the namespace
        // jail.
        WriteDecision exact = decide_exact(policy, path, creates, path, facts);
        if (exact.error && exact.path_rule.rule && exact.path_rule.rule->source.where == kPrivateDirWhere)
            return exact;
        return by("read-rules-hide", EACCES);
    }
    WriteDecision out = decide_exact(policy, path, creates, path, facts);
    if (out.error) return out;
    for (const std::string& named : facts.protected_links().named_as(path)) {
        WriteDecision as = decide_exact(policy, named, creates, named, facts);
        // (A bare repository's hooks are known by its content: git-dirs-by-content's test.)
        // Refused there for a protection (EACCES), not for lying outside the writable areas (EROFS: a bind
        // mount's other path may be anywhere).
        if (as.error != EACCES && !in_old_git_dir(policy, named, facts, named) &&
            !git_config_target(named, facts))
            continue;
        as.error = EACCES;
        as.rule = &write_rule("protected-links");
        return as;
    }
    if (in_old_git_dir(policy, path, facts, path)) return by("git-dirs-by-content", EACCES);
    // The run's own TMPDIR without namespaces (made in the host's /tmp, removed at the end, no config names
    // it): writable even where the fail-closed search protects a writable /tmp as a whole.
    const bool own_tmp = facts.jail() == JailKind::Landlock && facts.in_private_tmp(path);
    if (!own_tmp && git_config_target(path, facts)) return by("git-config-targets", EACCES);
    // Case-insensitive directories: there `.BASHRC` is bash's `.bashrc`, `.Git/Hooks` git's `.git/hooks`,
    // `.bare/HOOKS` an old bare repository's hooks and `.HUSKY` the core.hooksPath directory `.husky`. A path
    // that folds to another and that the rules allow is decided again folded (the protected names, the names
    // inside a git directory and the usual deny rules are lower-case ASCII; git's targets are compared
    // folded); a protection found so holds where a directory on the way compares without case. Paths without
    // capitals or such characters (most) cost one scan more.
    if (!casefold::folds(path)) return out;
    const std::string fold = casefold::fold(path);
    WriteDecision folded = decide_exact(policy, fold, creates, path, facts);
    if (folded.error != EACCES && !in_old_git_dir(policy, fold, facts, path) &&
        (own_tmp || !git_config_target(fold, facts, true)))
        return out;
    if (!casefold_on_the_way(path, facts)) return out;
    if (folded.error != EACCES) folded = by("casefold", EACCES);
    folded.rule = &write_rule("casefold");
    return folded;
}

WriteDecision decide_write_at(const Policy& policy, const std::string& dir, const std::string& name,
                              bool creates, WriteFacts& facts) {
    const std::string path = joined(dir, name);
    WriteDecision out = decide_write(policy, path, creates, facts);
    if (out.error) return out;
    // Without namespaces /dev/shm is the host's: an entry there that existed before the run is another
    // program's POSIX shared memory or semaphore. Those the run makes are its own.
    if (facts.jail() == JailKind::Landlock && path.compare(0, 9, "/dev/shm/") == 0 && name != "." &&
        facts.existed_at_start(dir, name))
        return decide_shared_memory_entry(facts.jail(), path, true);
    if (name != "." && facts.is_cordon_file(dir, name)) return by("cordon-files", EACCES);
    if (name != "." && facts.protected_links().has_files() && facts.is_protected_file(dir, name))
        return by("protected-links", EACCES);
    if (!looked_up_where_it_lands(name)) return out;
    if (name_is(dir, name, ".git", facts) && facts.is_regular_file(dir, name)) return by("gitfile", EACCES);
    const bool head = name_is(dir, name, "HEAD", facts);
    if (creates && (head || name_is(dir, name, "objects", facts) || name_is(dir, name, "refs", facts) ||
                    name_is(dir, name, "commondir", facts))) {
        // (A directory that compares without case finds `OBJECTS` for `objects` itself.)
        auto has = [&](const char* entry) { return facts.has_entry(dir, entry); };
        if (head ? (has("objects") || has("refs") || has("commondir")) : has("HEAD")) {
            if (!repository_place_allowed(policy, dir, facts)) return by("repository-shape", EACCES);
            if (!inside_git_dir(dir)) facts.note_bare_repository(dir);  // allowed by the setting: named
        }
    }
    return out;
}

bool holds_protected_names(const Policy& policy, const std::string& path, WriteFacts& facts) {
    if (facts.holds_cordon_file(path)) return true;  // a directory that holds the audit log
    if (facts.git_targets().below(path)) return true;
    if (facts.protected_links().holds(path))
        return true;  // a link on the way to a protected name, its target
    const std::string folded = casefold::fold(path);
    // (`TOOLS` for the core.hooksPath `tools/hooks` where names fold.)
    const bool folded_holds =
        path != folded && (policy.holds_protected_names(folded) || facts.git_targets().below(folded, true));
    return policy.holds_protected_names(path) || (folded_holds && casefold_on_the_way(path, facts));
}

namespace {

MoveDecision move_by(const std::string& path, int error) {
    MoveDecision d;
    d.error = error;
    d.rule = &write_rule("protected-moves");
    d.path = path;
    return d;
}

// The directory `name` of `dir` leaving or taking the place `place`: refused where `place` holds protected
// names. A `.git` counts only when the directory itself (not the path: whatever was last moved there)
// existed when the run started: a repository the run created may go, and a new one may be moved in.
int directory_move(const Policy& policy, const std::string& place, const std::string& dir,
                   const std::string& name, WriteFacts& facts) {
    if (!holds_protected_names(policy, place, facts)) return 0;
    // A symlink that stood there when the run started (`.git -> realgit` of a --separate-git-dir repository,
    // `.claude -> dotclaude`) says where git and Claude Code read, as a gitfile does: it stays.
    if (facts.is_symlink(dir, name)) return facts.existed_at_start(dir, name) ? EACCES : 0;
    if (!facts.is_directory(dir, name)) return 0;
    const std::size_t slash = place.rfind('/');
    if (place.compare(slash + 1, std::string::npos, ".git") == 0 && !facts.existed_at_start(dir, name))
        return 0;
    return EACCES;
}

// A symlink put at `to`: a directory moved into place for whoever follows it (`ln -s evil .claude` makes
// Claude Code on the host read `evil/settings.json` as the project's settings; `ln -s prep ~/.config` gives
// git a global config of the command's): refused where `to` holds protected names, as the move is.
int symlink_into_place(const Policy& policy, bool is_link, const std::string& to, WriteFacts& facts) {
    return is_link && holds_protected_names(policy, to, facts) ? EACCES : 0;
}

// The directory `name` of `dir` moved to `to`: refused when it holds, at any depth, a `.git` that existed
// when the run started, or a directory git would read as a repository that existed then or that would land
// where none may be (repository_place_allowed). Why: moving an ancestor would launder a git directory, and
// moving a prepared directory out of a new `.git` would plant a repository where git searches.
int moved_tree(const Policy& policy, const std::string& dir, const std::string& name, const std::string& to,
               WriteFacts& facts) {
    if (!facts.is_directory(dir, name)) return 0;
    return facts.walk_tree(dir, name, to, [&](MovedDirectory& d) {
        int nocase = -1;  // asked once, where a name is the wanted one in another case
        auto is = [&](const std::string& entry, const char* what, const char* folded_what) {
            if (entry == what) return true;
            const bool plain = !casefold::folds(entry);  // (most names: one scan, no folding)
            if (plain && entry != folded_what) return false;
            if (nocase < 0) nocase = d.compares_without_case() ? 1 : 0;
            return nocase == 1 && (plain || casefold::fold(entry) == folded_what);
        };
        bool head = false, objects = false, refs = false, commondir = false;
        for (const std::string& entry : d.names()) {
            if (is(entry, ".git", ".git") && d.existed_at_start(entry)) return EACCES;
            head = head || is(entry, "HEAD", "head");
            objects = objects || is(entry, "objects", "objects");
            refs = refs || is(entry, "refs", "refs");
            commondir = commondir || is(entry, "commondir", "commondir");
        }
        if (head && (objects || refs || commondir) &&
            (d.existed_at_start(".") || !repository_place_allowed(policy, d.lands_at(), facts)))
            return EACCES;
        return 0;
    });
}

// One directory of walk_tree_at's, open.
class ListedDirectory final : public MovedDirectory {
  public:
    ListedDirectory(int fd, std::string lands_at, const std::function<bool(int, const std::string&)>& existed,
                    const std::function<bool(int)>& nocase)
        : fd_(fd), lands_at_(std::move(lands_at)), existed_(existed), nocase_(nocase) {}
    ListedDirectory(const ListedDirectory&) = delete;
    ListedDirectory& operator=(const ListedDirectory&) = delete;
    ~ListedDirectory() override {
        if (fd_ >= 0) ::close(fd_);
    }
    const std::string& lands_at() const override { return lands_at_; }
    const std::vector<std::string>& names() const override { return names_; }
    bool compares_without_case() override { return nocase_(fd_); }
    bool existed_at_start(const std::string& name) override { return existed_(fd_, name); }
    std::vector<std::string>& entries() { return names_; }

  private:
    int fd_;
    std::string lands_at_;
    std::vector<std::string> names_;
    const std::function<bool(int, const std::string&)>& existed_;
    const std::function<bool(int)>& nocase_;
};

// walk_tree_at's walk from the directory open as `fd` (taken), depth first: at most kMaxMovedDepth
// descriptors open at once, whatever the tree holds.
int walk_from(int fd, std::string lands_at, int depth, std::size_t& entries,
              const std::function<bool(int, const std::string&)>& existed,
              const std::function<bool(int)>& nocase, const std::function<int(MovedDirectory&)>& visit) {
    ListedDirectory listed(fd, std::move(lands_at), existed, nocase);
    std::vector<std::string> subdirectories;
    const int listing = ::dup(fd);  // (closedir closes the descriptor it was given)
    DIR* d = listing >= 0 ? ::fdopendir(listing) : nullptr;
    if (d == nullptr) {
        if (listing >= 0) ::close(listing);
        return EACCES;
    }
    int error = 0;
    for (;;) {
        errno = 0;
        const struct dirent* e = ::readdir(d);
        if (e == nullptr) {
            if (errno != 0) error = EACCES;  // the listing failed: what it holds is unknown
            break;
        }
        const std::string entry = e->d_name;
        if (entry == "." || entry == "..") continue;
        if (++entries > kMaxMovedEntries) {
            error = EXDEV;
            break;
        }
        listed.entries().push_back(entry);
        bool directory = e->d_type == DT_DIR;
        if (e->d_type == DT_UNKNOWN) {
            struct stat st {};
            if (::fstatat(fd, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
                error = EACCES;
                break;
            }
            directory = S_ISDIR(st.st_mode);
        }
        if (directory) subdirectories.push_back(entry);
    }
    ::closedir(d);
    if (error) return error;
    if (!subdirectories.empty() && depth + 1 > kMaxMovedDepth) return EXDEV;
    if ((error = visit(listed))) return error;
    for (const std::string& entry : subdirectories) {
        const int sub = ::openat(fd, entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) return EACCES;
        if ((error =
                 walk_from(sub, listed.lands_at() + "/" + entry, depth + 1, entries, existed, nocase, visit)))
            return error;
    }
    return 0;
}

}  // namespace

int walk_tree_at(int at, const std::string& name, const std::string& lands_at,
                 const std::function<bool(int dirfd, const std::string& name)>& existed,
                 const std::function<bool(int dirfd)>& nocase,
                 const std::function<int(MovedDirectory&)>& visit) {
    const int top = ::openat(at, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (top < 0) return EACCES;
    std::size_t entries = 0;
    return walk_from(top, lands_at, 0, entries, existed, nocase, visit);
}

MoveDecision decide_removal(const Policy& policy, const std::string& dir, const std::string& name,
                            WriteFacts& facts) {
    const std::string path = joined(dir, name);
    return move_by(path, directory_move(policy, path, dir, name, facts));
}

MoveDecision decide_rename(const Policy& policy, const std::string& from_dir, const std::string& from_name,
                           const std::string& to_dir, const std::string& to_name, bool exchange,
                           WriteFacts& facts) {
    const std::string from = joined(from_dir, from_name), to = joined(to_dir, to_name);
    // The directory moved leaves its place and takes the target's; the one replaced leaves its place (with
    // RENAME_EXCHANGE it takes the source's).
    if (int e = directory_move(policy, from, from_dir, from_name, facts)) return move_by(from, e);
    if (int e = directory_move(policy, to, from_dir, from_name, facts)) return move_by(to, e);
    if (int e = directory_move(policy, to, to_dir, to_name, facts)) return move_by(to, e);
    if (exchange)
        if (int e = directory_move(policy, from, to_dir, to_name, facts)) return move_by(from, e);
    if (int e = symlink_into_place(policy, facts.is_symlink(from_dir, from_name), to, facts))
        return move_by(to, e);
    if (exchange)
        if (int e = symlink_into_place(policy, facts.is_symlink(to_dir, to_name), from, facts))
            return move_by(from, e);
    if (int e = moved_tree(policy, from_dir, from_name, to, facts)) return move_by(from, e);
    if (exchange)
        if (int e = moved_tree(policy, to_dir, to_name, from, facts)) return move_by(to, e);
    return move_by(to, 0);
}

MoveDecision decide_link(const Policy& policy, const std::string& from_dir, const std::string& from_name,
                         const std::string& to, WriteFacts& facts) {
    return move_by(to, symlink_into_place(policy, facts.is_symlink(from_dir, from_name), to, facts));
}

MoveDecision decide_symlink(const Policy& policy, const std::string& to, WriteFacts& facts) {
    return move_by(to, symlink_into_place(policy, true, to, facts));
}

ReopenDecision decide_reopen(int wanted, int had, bool directory) {
#ifdef O_PATH
    const int path_only = O_PATH;
#else
    const int path_only = 0;
#endif
    // Why: a reopen never widens the descriptor's access: `2>>outside/log` must not become a way to read the
    // log (the read scope), nor `< file` a way to write the file.
    const int want = (wanted & path_only) ? -1 : (wanted & O_ACCMODE);
    const int has = (had & path_only) ? -1 : (had & O_ACCMODE);
    ReopenDecision d;
    d.rule = &write_rule("magic-links");
    d.writes = want == O_WRONLY || want == O_RDWR || (wanted & O_TRUNC);
    const bool reads = want == O_RDONLY || want == O_RDWR;
    if ((d.writes && ((has != O_WRONLY && has != O_RDWR) || directory)) ||
        (reads && has != O_RDONLY && has != O_RDWR))
        d.error = EACCES;
    return d;
}

WriteDecision decide_shared_memory_entry(JailKind jail, const std::string& path, bool existed) {
    const bool others = jail == JailKind::Landlock && path.compare(0, 9, "/dev/shm/") == 0 && existed;
    return by("shared-memory-of-others", others ? EACCES : 0);
}

WriteDecision decide_magic_link_entry() {
    return by("magic-links", EACCES);
}

WriteDecision decide_other_process(int error) {
    return by("magic-links", error);
}

bool looked_up_where_it_lands(const std::string& name) {
    const std::string n = casefold::fold(name);
    return n == ".git" || n == "head" || n == "objects" || n == "refs" || n == "commondir";
}

WriteDecision decide_write_entry(const Policy& policy, const std::string& path, bool creates,
                                 WriteFacts& facts) {
    const std::size_t slash = path.rfind('/');
    if (path == "/" || slash == std::string::npos) return decide_write_at(policy, "/", ".", creates, facts);
    return decide_write_at(policy, slash == 0 ? "/" : path.substr(0, slash), path.substr(slash + 1), creates,
                           facts);
}

}  // namespace cordon::policy
