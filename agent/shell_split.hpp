// Splits a shell command string into the simple commands it runs, for matching Claude Code's Bash permission
// rules one command at a time (`a && b`, `a; b`, `a | b`, `a || b`, `a & b`, newlines, `( subshells )`,
// `{ groups; }`, and the commands inside `$( )`, backticks and `<( )`). Quotes, backslash escapes and here-
// documents are respected; the text of each command is returned as written (quotes included), trimmed.
//
// Pure and conservative: whatever it cannot read with certainty (an unterminated quote, unbalanced
// parentheses, `case`, `for`, `select`, function definitions, an unterminated here-document) is an error, and
// the caller then must not auto-allow the command.
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cordon::agent {

// The simple commands of `command`, in order (those inside substitutions after the command that holds
// them), or why the command cannot be split safely.
std::variant<std::vector<std::string>, std::string> split_command(std::string_view command);

// Quotes `text` for a POSIX shell as one word: single quotes, each `'` written as '\''. Everything else
// (newlines, `$( )`, backslashes, here-document bodies) survives exactly.
std::string shell_quote(std::string_view text);

// What the splitter and the Bash rules both skip: a space, tab, newline or carriage return, and `text`
// without them at either end.
bool shell_space(char c);
std::string_view trim_shell_space(std::string_view text);

}  // namespace cordon::agent
