// Git directories recognised as git recognises them, whatever their name (jail/notify.cpp): a `.git`, the
// `.bare` of `git init --separate-git-dir` (a gitfile `.git: gitdir: ./.bare` points to it), a bare
// repository such as a local remote `origin.git`, a worktree's git directory.
#pragma once

#include <string>

namespace cordon::jail::git_dirs {

// Whether the directory open as `dirfd` holds what makes git take it for a git directory: `HEAD` next to
// `objects`, `refs` or `commondir` (git's is_git_directory() looks for `objects` and `refs` in the directory
// a `commondir` names; any of the three counts, the safe side).
bool holds_signature(int dirfd);

// Whether `name` is one of the names a git directory is recognised by (`HEAD`, `objects`, `refs`,
// `commondir`): creating one next to another plants a repository.
bool is_signature_name(const std::string& name);

}  // namespace cordon::jail::git_dirs
