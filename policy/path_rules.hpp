// Filesystem rule paths: the path conventions of Claude Code settings (`//abs`, `/rel-to-settings`, `~/home`,
// `rel-to-cwd`) and of srt settings and flags (absolute, `~/`, relative to the working directory), lexical
// normalisation, and gitignore-style glob matching. Internal to the policy module.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cordon::policy::detail {

enum class PathStyle {
    ClaudeCode,  // `//path` absolute, `/path` relative to the settings root, `~/path`, `path` / `./path`
    Plain,       // srt files and flags: absolute, `~/path`, relative to the working directory
};

struct PathContext {
    std::filesystem::path cwd;            // absolute
    std::filesystem::path home;           // absolute
    std::filesystem::path settings_root;  // absolute: where `/path` of a Claude Code file starts
};

struct ResolvedPath {
    std::filesystem::path path;  // absolute, lexically normal, no trailing slash
    bool glob = false;
};

// Resolves `text` by the conventions of `style`. Returns an error message for an empty path or a NUL byte.
std::variant<ResolvedPath, std::string> resolve_path(std::string_view text, PathStyle style,
                                                     const PathContext& ctx);

// The directory `/path` rules of a settings file are relative to: the file's directory, except for files
// inside a
// `.claude` directory (project, local and user settings), whose root is the directory holding `.claude`.
std::filesystem::path settings_root(const std::filesystem::path& settings_file);

// Lexically normal absolute form without a trailing slash ("/a/b/../c/" -> "/a/c").
std::string normal_path(const std::filesystem::path& path);

// True when `pattern` holds gitignore-style wildcards (`*`, `?`, `[`).
bool has_glob(std::string_view pattern);

// True when `path` (normal, absolute) is `rule` or lies below it. For a glob rule: when the glob matches
// `path` or one of its ancestors (`/src/**` covers `/src/a/b.c`; `/p/*.env` covers `/p/.env` and
// `/p/x.env/y`).
bool path_covers(std::string_view rule, bool glob, std::string_view path);

}  // namespace cordon::policy::detail
