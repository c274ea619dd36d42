// `cordon claude-hook --install` / `--uninstall`: adds or removes cordon's PreToolUse entry in a Claude Code
// settings file as a text edit, so every other byte (other hooks, key order, indentation, spacing) stays as
// it was; uninstalling after installing gives the original text back.
//
// The entry: {"matcher": "Bash", "hooks": [{"type": "command", "command": "<cordon> claude-hook ..."}]} in
// hooks.PreToolUse. It is recognised by its command (first word a file named `cordon`, second word
// `claude-hook`). Pure: text in, text out.
#pragma once

#include <string>
#include <string_view>

namespace cordon::agent {

struct SettingsEdit {
    std::string text;      // the new file content
    bool changed = false;  // false: nothing to do (already installed / not installed)
    std::string error;     // non-empty: the file is not a settings object cordon can edit; nothing changed
};

// Adds the entry running `hook_command` (or updates cordon's entry in place when its command differs). An
// empty `text` is a new file. `event`: hooks.PreToolUse (matcher Bash), or hooks.SessionEnd (no matcher:
// `claude-hook --session` stops the Claude Code session's cordon session there).
SettingsEdit install_hook(std::string_view text, const std::string& hook_command,
                          std::string_view event = "PreToolUse");
// Removes cordon's entry, and hooks.EVENT / hooks when that leaves them empty.
SettingsEdit uninstall_hook(std::string_view text, std::string_view event = "PreToolUse");

// True when a hook command runs `cordon claude-hook`.
bool is_cordon_hook_command(std::string_view command);

}  // namespace cordon::agent
