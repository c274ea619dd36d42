// What a deny or ask rule is matched against: the forms of one simple command (see shell_split.hpp) that
// Claude Code also matches, so that installing the hook (whose `cordon run` wrapper hides the command from
// Claude Code's own check) never lets through a command Claude Code would refuse or ask about:
//   - the words with quotes and escapes removed (`r'm'`, `\rm` -> `rm`), redirections dropped wherever they
//     stand (`>/dev/null rm`, `rm>/dev/null -rf` -> `rm -rf`), leading `NAME=value` assignments dropped
//     whatever their value (`X='' rm`);
//   - a command named by a path as its base name (`/bin/rm` -> `rm`);
//   - the command a wrapper runs: `timeout`, `env`, `command`, `nohup`, `nice`, `exec`, `sudo`, `doas`,
//     `time`, `xargs`, `stdbuf`, `setsid`, `ionice`, `taskset`, `chrt`, `flock`, `watch`, `unbuffer`,
//     `chroot`, `unshare`, `nsenter`, `setpriv`, `runuser` with their options skipped, again and again
//     (`sudo env X=1 nice -n 5 rm`);
//   - the commands of a shell's `-c` script (`bash -c`, `sh -lc`, `bash -o pipefail -c`, `bash -c --`, …),
//     of `flock`/`su`/`runuser`/`script`'s `-c`/`--command`, and of `eval`'s arguments, split again.
// A command name that is an expansion (`$x`, `"$x"`, a glob) cannot be matched: the command is unsure.
// Matching more forms is the safe side for deny and ask rules; these forms are never used to allow.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cordon::agent {

struct CommandForms {
    std::vector<std::string> forms;  // every form, the command as written first
    // Set when a part of the command could not be read (a `-c` script or `env -S` string that does not
    // split, a wrapper whose options are not understood): the caller must not allow without asking.
    std::string unsure;
};

CommandForms command_forms(std::string_view simple_command);

// The words of a simple command as bash would pass them (quotes and escapes removed, expansions kept as
// written), its redirections dropped. For tests and for command_forms().
std::vector<std::string> command_words(std::string_view simple_command);

}  // namespace cordon::agent
