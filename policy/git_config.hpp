// Where git's configuration sends it outside a git directory: `core.hooksPath` (the hooks git runs instead of
// `.git/hooks`: husky's `.husky/_`, a project's `.githooks`) and `include.path` / `includeIf.*.path` (files
// read as configuration). Read when the run starts from the configuration of the repository that holds the
// working directory, of every repository in the writable areas and the user's (global and system), so that
// the supervisor (jail/notify.cpp, through policy/write_rules.hpp) and `cordon check` protect those targets
// as it protects `.git/hooks` and
// `.git/config`.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"
#include "policy/protected_links.hpp"

namespace cordon::policy::git_config {

// One `key = value` of a git config file: the key as git names it (`core.hookspath`, `include.path`,
// `includeif.gitdir:~/x/.path`: section and name in lower case, a subsection as written).
struct Entry {
    std::string key;
    std::string value;
};

// Parses the text of a git config file as git does (sections `[core]`, `[includeIf "gitdir:x"]`, the old
// `[section.sub]`, comments, quotes, escapes, continued lines, a key after the header on its line). What it
// cannot parse ends the parse (the entries before it are kept).
std::vector<Entry> parse(std::string_view text);

// The targets, absolute and lexically normal.
struct Targets {
    std::vector<std::string> hook_dirs;  // core.hooksPath: the directory and everything in it
    std::vector<std::string> files;      // include.path, includeIf.*.path: the file

    // Sorts and deduplicates both lists and keeps their case-folded copies (policy/casefold.hpp): the
    // lookups below are binary searches (a write is decided against thousands of targets where a project
    // holds that many nested repositories).
    void index();
    // Whether `path` is a hooks directory or lies in one, or is an included file (`folded`: `path` is
    // case-folded and compared with the folded targets). After index().
    bool protects(const std::string& path, bool folded = false) const;
    // Whether a target lies strictly below the directory `dir` (moving or replacing `dir` would move it).
    bool below(const std::string& dir, bool folded = false) const;

  private:
    std::vector<std::string> hook_dirs_folded_, files_folded_, all_sorted_, all_folded_;
};

// How far find_targets_below looks.
struct SearchLimits {
    std::size_t max_entries = 1000000;  // directory entries looked at, all trees together
    int max_depth = 64;                 // directories below a root
    std::function<bool()> stop;         // asked before each directory: true ends the search
    // Every symlink the walk meets kept in Search::symlinks.
    bool keep_links = false;
    // Asked of each regular file the walk meets (its directory and name): true looks at its other names (a
    // hard link), kept in Search::hard_linked when it has some.
    std::function<bool(const std::string&, std::string_view)> keep_file;
};

struct Search {
    Targets targets;               // as configured and, where it differs, resolved through symlinks; indexed
    std::size_t repositories = 0;  // git directories whose configuration was read
    std::size_t entries = 0;       // directory entries looked at
    // Directories left unsearched past the limits (the first 16): each is in targets.hook_dirs (protected as
    // a whole), as the unlisted ones below.
    std::vector<std::string> unsearched;
    std::size_t unsearched_count = 0;
    // Directories the search could not open or list (the first 16): a repository below one is unknown, so
    // each is in targets.hook_dirs (protected as a whole).
    std::vector<std::string> unlisted;
    std::size_t unlisted_count = 0;
    // Configuration the search had to read but could not (the first 16, sorted): a config, an included file,
    // a gitfile or commondir that is there but unreadable (or larger than 16 MiB), a directory of the
    // searching user's own that it could not list. What they say is unknown (a core.hooksPath or include
    // anywhere), so find_targets_for protects every writable area as a whole.
    std::vector<std::string> unreadable;
    std::size_t unreadable_count = 0;
    bool stopped = false;               // `stop` said so
    std::vector<std::string> symlinks;  // with keep_links
    // The git directories the walk did not enter: below the roots, and those a gitfile, a commondir or a
    // submodule names (for ProtectedLinks: their hooks).
    std::vector<std::string> unentered;
    std::vector<std::pair<unsigned long long, unsigned long long>> hard_linked;  // keep_file's (dev, ino)
    // find_targets_for: the symlinks standing at protected names, and where they lead.
    ProtectedLinks protected_links;
};

// Reads the configuration git would read in `cwd` and in each of `roots` (the repository found from it
// upwards, its common directory's config and config.worktree), of every repository below each root, and the
// user's (the global config under `home`, /etc/gitconfig), with every file it includes (bounded), and
// returns where it points. The repositories below a root: a `.git` (a directory, or a gitfile and the git
// directory it names, its `commondir` followed) or a bare repository (HEAD next to objects or commondir),
// found by a walk of the trees (symlinks not followed, git directories not entered) within `limits`. A
// relative core.hooksPath of the user's configuration counts in every repository found. Each target as
// configured and resolved.
Search find_targets_below(const std::string& cwd, const std::string& home,
                          const std::vector<std::string>& roots, const SearchLimits& limits = {});

// find_targets_below for a run under `policy` (its working directory, home and search_roots), failing closed:
// where the search could not read what it had to (Search::unreadable), every writable area (writable_areas)
// and /dev/shm are in targets.hook_dirs, protected as a whole: the run writes nothing there that outlives it.
Search find_targets_for(const Policy& policy, const SearchLimits& limits = {});

// Every allowWrite path (a glob's literal directories), files too, but the jail's own /tmp, /dev (not
// /dev/shm) and /proc, sorted.
std::vector<std::string> writable_areas(const Policy& policy);

// The trees find_targets_below searches for a run under `policy`: the writable roots (allowWrite, globs from
// their literal part, the working directory when it is writable) but the jail's own /tmp, /dev (a project
// below /dev/shm is searched) and /proc,
// without those inside another.
std::vector<std::string> search_roots(const Policy& policy);

}  // namespace cordon::policy::git_config
