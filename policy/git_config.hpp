// Where git's configuration sends it outside a git directory: `core.hooksPath` (the hooks git runs instead of
// `.git/hooks`: husky's `.husky/_`, a project's `.githooks`) and `include.path` / `includeIf.*.path` (files
// read as configuration). Read when the run starts from the configuration of the repository that holds the
// working directory and the user's (global and system), so that the supervisor (jail/notify.cpp, through
// policy/write_rules.hpp) and `cordon check` protect those targets as it protects `.git/hooks` and
// `.git/config`.
#pragma once

#include <string>
#include <string_view>
#include <vector>

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
};

// Reads the configuration git would read in `cwd` (the repository found from it upwards, its common
// directory's config and config.worktree, the user's global config under `home`, /etc/gitconfig) and every
// file it includes (bounded), and returns where it points.
Targets find_targets(const std::string& cwd, const std::string& home);

// find_targets(), each path as configured and, where it differs, resolved through symlinks as well (the jail
// shows the host's paths where they are; a write names either).
Targets find_targets_both_ways(const std::string& cwd, const std::string& home);

}  // namespace cordon::policy::git_config
