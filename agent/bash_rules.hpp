// Claude Code's Bash permission rules, matched against one simple command (see shell_split.hpp):
//   `Bash`, `Bash(*)`          every command
//   `Bash(npm run build)`      exactly that command
//   `Bash(npm run test:*)`     the prefix, alone or followed by a space (word boundary: not `npm run tests`)
//   `Bash(git * main)`         `*` matches any characters (spaces included); `\*` is a literal star. A single
//                              trailing ` *` also matches the bare prefix: `Bash(ls *)` matches `ls` and
//                              `ls -la`, not `lsof`
// and sandbox.excludedCommands entries: the same forms, and a plain `docker` (no wildcard) also covers
// `docker ...` with any arguments.
#pragma once

#include <string_view>

namespace cordon::agent {

// True when the permission rule text (`Bash(...)` or `Bash`) matches `command`. A rule for another tool, or
// one that is not well formed, matches nothing.
bool bash_rule_matches(std::string_view rule, std::string_view command);

// The same for a specifier alone (the text inside `Bash(...)`).
bool specifier_matches(std::string_view specifier, std::string_view command);

// True when a sandbox.excludedCommands entry covers `command`.
bool excluded_command_matches(std::string_view entry, std::string_view command);

// `command` without its leading `NAME=value` assignments (`FOO=1 rm x` runs `rm x`; also `NAME+=value`,
// `NAME[SUBSCRIPT]=value`); unchanged when an assignment's value is quoted or holds an expansion.
std::string_view without_assignments(std::string_view command);

}  // namespace cordon::agent
