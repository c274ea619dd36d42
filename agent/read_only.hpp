// Commands Claude Code runs without asking in its default permission mode because they only read (measured
// with Claude Code 2.1.332: `ls`, `cat f`, `git status --short`, `grep -r x .`, `ls | wc -l`, …), so that
// the hook, which wraps them in cordon's jail, asks no more often than Claude Code alone. Deliberately a
// subset of Claude Code's: a command is read-only here only when its name is on the list, its options are
// not ones that write or run other programs (`find -delete`, `sort -o`, `rg --pre`, `git branch -D`), its
// operands are relative paths inside the working directory (no `/`, `..`, `~`, `$`, backticks), and its only
// redirections go to /dev/null or a descriptor. Anything else is not read-only and follows the rules.
#pragma once

#include <string_view>

namespace cordon::agent {

// True when the simple command `part` (see shell_split.hpp) is one that Claude Code runs unprompted.
bool read_only_command(std::string_view part);

}  // namespace cordon::agent
