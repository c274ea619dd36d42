#include "policy/git_config.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace cordon::policy::git_config {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
    for (char& c : s)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

// `p` (absolute) without `.`, `..`, doubled or trailing slashes.
std::string normal(const std::string& p) {
    std::string out = fs::path(p).lexically_normal().string();
    while (out.size() > 1 && out.back() == '/')
        out.pop_back();
    return out;
}

bool is_key_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-';
}

// A value from `i` (after `=` and blanks) to its end of line: quotes, escapes, comments, continuations.
bool parse_value(std::string_view t, std::size_t& i, std::string& out) {
    bool quoted = false;
    std::size_t keep = 0;  // out's length up to its last character that is not trailing blank outside quotes
    out.clear();
    while (i < t.size()) {
        const char c = t[i++];
        if (c == '\n') {
            if (quoted) return false;
            break;
        }
        if (!quoted && (c == '#' || c == ';')) {
            while (i < t.size() && t[i] != '\n')
                ++i;
            continue;
        }
        if (c == '"') {
            quoted = !quoted;
            keep = out.size();
            continue;
        }
        if (c == '\\') {
            if (i >= t.size()) return false;
            const char e = t[i++];
            if (e == '\n') continue;  // a continued line
            if (e == 'n')
                out += '\n';
            else if (e == 't')
                out += '\t';
            else if (e == 'b')
                out += '\b';
            else if (e == '\\' || e == '"')
                out += e;
            else
                return false;
            keep = out.size();
            continue;
        }
        out += c;
        if (quoted || (c != ' ' && c != '\t' && c != '\r')) keep = out.size();
    }
    if (quoted) return false;
    out.resize(keep);
    return true;
}

}  // namespace

std::vector<Entry> parse(std::string_view t) {
    std::vector<Entry> out;
    std::string section;  // "core", "includeif.gitdir:x"
    std::size_t i = 0;
    if (t.substr(0, 3) == "\xEF\xBB\xBF") i = 3;  // a UTF-8 byte order mark
    while (i < t.size()) {
        const char c = t[i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            ++i;
            continue;
        }
        if (c == '#' || c == ';') {
            while (i < t.size() && t[i] != '\n')
                ++i;
            continue;
        }
        if (c == '[') {
            ++i;
            std::string name;
            while (i < t.size() && (is_key_char(t[i]) || t[i] == '.'))
                name += t[i++];
            if (name.empty()) return out;
            name = lower(name);
            if (i < t.size() && (t[i] == ' ' || t[i] == '\t')) {
                while (i < t.size() && (t[i] == ' ' || t[i] == '\t'))
                    ++i;
                if (i >= t.size() || t[i] != '"') return out;
                ++i;
                std::string sub;
                while (i < t.size() && t[i] != '"') {
                    if (t[i] == '\n') return out;
                    if (t[i] == '\\' && i + 1 < t.size()) ++i;
                    sub += t[i++];
                }
                if (i >= t.size()) return out;
                ++i;  // the closing quote
                name += "." + sub;
            }
            if (i >= t.size() || t[i] != ']') return out;
            ++i;
            section = name;
            continue;
        }
        if (!std::isalpha(static_cast<unsigned char>(c)) || section.empty()) return out;
        std::string name;
        while (i < t.size() && is_key_char(t[i]))
            name += t[i++];
        while (i < t.size() && (t[i] == ' ' || t[i] == '\t'))
            ++i;
        std::string value;
        if (i < t.size() && t[i] == '=') {
            ++i;
            while (i < t.size() && (t[i] == ' ' || t[i] == '\t'))
                ++i;
            if (!parse_value(t, i, value)) return out;
        } else if (i < t.size() && t[i] != '\n' && t[i] != '\r' && t[i] != '#' && t[i] != ';') {
            return out;
        }
        out.push_back(Entry{section + "." + lower(name), value});
    }
    return out;
}

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return {};
    std::ostringstream s;
    s << in.rdbuf();
    std::string text = s.str();
    if (text.size() > (1u << 20)) text.resize(1u << 20);  // bounded: a config is small
    return text;
}

bool is_dir(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool is_file(const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// `value` as a path: `~/` is the home; relative ones are taken from `base`.
std::string resolve(std::string value, const std::string& base, const std::string& home) {
    if (value.rfind(":(optional)", 0) == 0) value.erase(0, 11);
    if (value.empty()) return {};
    if (value == "~" || value.rfind("~/", 0) == 0) {
        if (home.empty()) return {};
        value = home + value.substr(1);
    } else if (value[0] == '~') {
        return {};  // another user's home: not the user's to be fooled by
    } else if (value[0] != '/') {
        value = base + "/" + value;
    }
    return normal(value);
}

// The first line of a gitfile (`gitdir: PATH`), as a path from the gitfile's directory.
std::string gitfile_target(const std::string& gitfile) {
    std::string text = read_file(gitfile);
    if (text.rfind("gitdir:", 0) != 0) return {};
    text = text.substr(7, text.find('\n') == std::string::npos ? std::string::npos : text.find('\n') - 7);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.erase(0, 1);
    while (!text.empty() && (text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (text.empty()) return {};
    return text[0] == '/' ? normal(text) : normal(fs::path(gitfile).parent_path().string() + "/" + text);
}

}  // namespace

Targets find_targets(const std::string& cwd, const std::string& home) {
    Targets targets;
    // The repository git finds from cwd: the first `.git` (a directory or a gitfile) upwards, or cwd itself
    // when it is a bare repository.
    std::string git_dir, hooks_base;
    for (fs::path at = normal(cwd);; at = at.parent_path()) {
        const std::string dot_git = (at / ".git").string();
        if (is_dir(dot_git)) {
            git_dir = dot_git;
        } else if (is_file(dot_git)) {
            git_dir = gitfile_target(dot_git);
        } else if (is_file((at / "HEAD").string()) &&
                   (is_dir((at / "objects").string()) || is_file((at / "commondir").string()))) {
            git_dir = at.string();
            hooks_base = git_dir;  // a bare repository runs its hooks in itself
        }
        if (!git_dir.empty()) {
            if (hooks_base.empty()) hooks_base = at.string();  // the working tree's top
            break;
        }
        if (at == at.parent_path()) break;
    }
    std::vector<std::string> queue;
    if (!git_dir.empty()) {
        std::string common = git_dir;
        const std::string commondir = read_file(git_dir + "/commondir");
        if (!commondir.empty()) {
            std::string c = commondir.substr(0, commondir.find('\n'));
            common = c.empty() ? git_dir : resolve(c, git_dir, "");
        }
        queue.push_back(common + "/config");
        queue.push_back(git_dir + "/config.worktree");
    }
    if (!home.empty()) {
        queue.push_back(home + "/.gitconfig");
        const char* xdg = std::getenv("XDG_CONFIG_HOME");
        queue.push_back((xdg && *xdg == '/' ? std::string(xdg) : home + "/.config") + "/git/config");
    }
    queue.push_back("/etc/gitconfig");
    // Included files are read in turn (bounded: git itself stops at a depth of 10).
    std::set<std::string> seen;
    for (std::size_t n = 0; n < queue.size() && n < 64; ++n) {
        const std::string file = queue[n];
        if (!seen.insert(file).second) continue;
        const std::string dir = fs::path(file).parent_path().string();
        for (const Entry& e : parse(read_file(file))) {
            if (e.key == "core.hookspath") {
                const std::string p = resolve(e.value, hooks_base.empty() ? cwd : hooks_base, home);
                if (!p.empty()) targets.hook_dirs.push_back(p);
            } else if (e.key == "include.path" || (e.key.rfind("includeif.", 0) == 0 && e.key.size() > 15 &&
                                                   e.key.compare(e.key.size() - 5, 5, ".path") == 0)) {
                const std::string p = resolve(e.value, dir, home);
                if (p.empty()) continue;
                targets.files.push_back(p);
                queue.push_back(p);
            }
        }
    }
    return targets;
}

Targets find_targets_both_ways(const std::string& cwd, const std::string& home) {
    const Targets found = find_targets(cwd, home);
    Targets out;
    auto both = [](std::vector<std::string>& into, const std::vector<std::string>& paths) {
        for (const std::string& p : paths) {
            into.push_back(p);
            std::error_code ec;
            const std::string r = std::filesystem::weakly_canonical(p, ec).string();
            if (!ec && !r.empty() && r != p) into.push_back(r);
        }
    };
    both(out.hook_dirs, found.hook_dirs);
    both(out.files, found.files);
    return out;
}

}  // namespace cordon::policy::git_config
