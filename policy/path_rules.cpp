#include "policy/path_rules.hpp"

#include <fnmatch.h>

#include <vector>

#include "policy/path_components.hpp"

namespace cordon::policy::detail {
namespace fs = std::filesystem;
namespace {

bool component_matches(const std::string& pattern, const std::string& name) {
    return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

// Matches pattern components [pi..] against path components [si..]. The path may go on after the pattern
// ends: a pattern that names a directory covers everything inside it (gitignore semantics).
bool glob_components(const std::vector<std::string>& pattern, std::size_t pi,
                     const std::vector<std::string>& path, std::size_t si) {
    if (pi == pattern.size()) return true;
    // `**` also matches zero components: `~/.ssh/**` covers `~/.ssh` itself, as the jail (which hides
    // what the glob matches, the directory included) enforces it.
    if (pattern[pi] == "**") {
        for (std::size_t k = si; k <= path.size(); ++k)
            if (glob_components(pattern, pi + 1, path, k)) return true;
        return false;
    }
    if (si == path.size()) return false;
    return component_matches(pattern[pi], path[si]) && glob_components(pattern, pi + 1, path, si + 1);
}

}  // namespace

std::string normal_path(const fs::path& path) {
    std::string s = path.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

bool has_glob(std::string_view pattern) {
    return pattern.find_first_of("*?[") != std::string_view::npos;
}

fs::path settings_root(const fs::path& settings_file) {
    fs::path dir = settings_file.parent_path();
    if (dir.filename() == ".claude") return dir.parent_path();
    return dir;
}

std::variant<ResolvedPath, std::string> resolve_path(std::string_view text, PathStyle style,
                                                     const PathContext& ctx) {
    if (text.empty()) return std::string("empty path");
    if (text.find('\0') != std::string_view::npos) return std::string("path contains a NUL byte");
    fs::path full;
    if (text == "~" || text.substr(0, 2) == "~/") {
        full = ctx.home / std::string(text.substr(text.size() > 1 ? 2 : 1));
    } else if (style == PathStyle::ClaudeCode && text.substr(0, 2) == "//") {
        full = fs::path(std::string(text.substr(1)));
    } else if (text.front() == '/') {
        full = style == PathStyle::ClaudeCode ? ctx.settings_root / std::string(text.substr(1))
                                              : fs::path(std::string(text));
    } else {
        full = ctx.cwd / std::string(text);
    }
    ResolvedPath out;
    out.path = normal_path(full);
    out.glob = has_glob(out.path.string());
    return out;
}

bool path_covers(std::string_view rule, bool glob, std::string_view path) {
    if (!glob) {
        if (rule == "/") return !path.empty() && path.front() == '/';
        if (path.size() < rule.size() || path.substr(0, rule.size()) != rule) return false;
        return path.size() == rule.size() || path[rule.size()] == '/';
    }
    return glob_components(path_components::split_non_empty(rule), 0, path_components::split_non_empty(path),
                           0);
}

}  // namespace cordon::policy::detail
