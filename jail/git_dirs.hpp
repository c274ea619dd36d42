// Git directories recognised as git recognises them, whatever their name (jail/notify.cpp): a `.git`, the
// `.bare` of `git init --separate-git-dir` (a gitfile `.git: gitdir: ./.bare` points to it), a bare
// repository such as a local remote `origin.git`, a worktree's git directory.
#pragma once

#include <string>
#include <vector>

namespace cordon::jail::git_dirs {

// Whether the directory open as `dirfd` holds what makes git take it for a git directory: `HEAD` next to
// `objects`, `refs` or `commondir` (git's is_git_directory() looks for `objects` and `refs` in the directory
// a `commondir` names; any of the three counts, the safe side).
bool holds_signature(int dirfd);

// Whether `name` is one of the names a git directory is recognised by (`HEAD`, `objects`, `refs`,
// `commondir`): creating one next to another plants a repository.
bool is_signature_name(const std::string& name);

// The names inside a git directory that are protected where the directory existed when the run started
// (`hooks`, `config`, `commondir`, `config.worktree`, `modules`, `worktrees`: the first components of
// `.git/...` protected names). For a path (components, absolute, normal), the indexes `i` such that
// components [0, i] may be such a directory other than `.git` (which the policy knows by name): component
// i + 1 is one of these names.
std::vector<std::size_t> candidate_dirs(const std::vector<std::string>& components);

}  // namespace cordon::jail::git_dirs
