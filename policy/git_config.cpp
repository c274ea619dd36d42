#include "policy/git_config.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <set>

#include "policy/casefold.hpp"

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

// The most of a config file the search reads. A file past it counts as one that cannot be read (what it says
// past the bound is unknown: fail closed), never as the part read.
constexpr std::size_t kMaxConfigBytes = std::size_t(16) << 20;

// A config file's text. Few system calls: thousands of repositories are read at start (a regular file's short
// read is its end). `denied` (if given) is set when the file is there but cannot be read, or is larger than
// kMaxConfigBytes: a mode the jailed command chose (a chmod of a protected file is a metadata change, not a
// write, and the search may run while the command's chmod does) hides what it says until the command, or the
// user, restores it.
std::string read_file(const std::string& path, bool* denied = nullptr) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        if (denied && errno != ENOENT && errno != ENOTDIR) *denied = true;
        return {};
    }
    constexpr std::size_t kChunk = 16384;
    std::string text;
    for (;;) {
        const std::size_t had = text.size();
        text.resize(had + kChunk);
        const ssize_t n = ::read(fd, text.data() + had, kChunk);
        text.resize(had + (n > 0 ? static_cast<std::size_t>(n) : 0));
        if (n < 0 && errno != EISDIR && denied) *denied = true;
        if (n < static_cast<ssize_t>(kChunk)) break;
        if (text.size() > kMaxConfigBytes) {
            if (denied) *denied = true;
            text.clear();
            break;
        }
    }
    ::close(fd);
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

// The home directory of the user `name` in /etc/passwd (read directly: a statically linked glibc loads the
// host's NSS modules for getpwnam), or empty when it is not listed there.
std::string passwd_home(const std::string& name) {
    if (name.empty()) return {};
    const std::string text = read_file("/etc/passwd");
    for (std::size_t start = 0; start < text.size();) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        // name:password:uid:gid:gecos:home:shell
        const std::string_view line(text.data() + start, end - start);
        start = end + 1;
        if (line.size() <= name.size() || line.compare(0, name.size(), name) != 0 || line[name.size()] != ':')
            continue;
        std::size_t at = 0;
        for (int field = 0; field < 5 && at != std::string_view::npos; ++field)
            at = line.find(':', at + (field ? 1 : 0));
        if (at == std::string_view::npos) return {};
        const std::size_t stop = line.find(':', at + 1);
        const std::string home(line.substr(at + 1, stop == std::string_view::npos ? stop : stop - at - 1));
        return !home.empty() && home[0] == '/' ? home : std::string();
    }
    return {};
}

// Where `path` (absolute, as written) has a component X followed by `..`, git opens it as written and the
// kernel follows X before going up: a symlink made at X (git skips the path while X is missing) leads `..`
// anywhere, where the path as normal() collapses it does not. Each such X, as normal() spells it, in `pivots`
// (protected by name: never made nor replaced), and the path as the kernel resolves it now in `physical`
// (where it differs: X is a symlink already).
void dotdot_reach(const std::string& path, std::vector<std::string>& pivots,
                  std::vector<std::string>& physical) {
    std::vector<std::string> stack;
    bool any = false;
    for (std::size_t start = 0; start <= path.size();) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        const std::string part = path.substr(start, end - start);
        start = end + 1;
        if (part.empty() || part == ".") continue;
        if (part != "..") {
            stack.push_back(part);
            continue;
        }
        if (stack.empty()) continue;
        std::string x;
        for (const std::string& c : stack)
            x += "/" + c;
        pivots.push_back(x);
        stack.pop_back();
        any = true;
    }
    if (!any) return;
    std::error_code ec;
    const std::string r = fs::weakly_canonical(path, ec).string();
    if (!ec && !r.empty()) physical.push_back(normal(r));
}

// What a resolve() with `reach` also protects (see dotdot_reach): `pivots` by name, `physical` as the path
// itself.
struct Reach {
    std::vector<std::string> pivots, physical;
};

// `value` as a path: `~/` is the home, `~name/` that user's; relative ones are taken from `base`. `reach`
// (if given) gets what git's open of the path as written may reach besides (dotdot_reach).
std::string resolve(std::string value, const std::string& base, const std::string& home,
                    Reach* reach = nullptr) {
    if (value.rfind(":(optional)", 0) == 0) value.erase(0, 11);
    if (value.empty()) return {};
    if (value == "~" || value.rfind("~/", 0) == 0) {
        if (home.empty()) return {};
        value = home + value.substr(1);
    } else if (value[0] == '~') {
        // `~name/...`: git expands it to that user's home (getpwnam), and runs the hooks there.
        const std::size_t slash = value.find('/');
        const std::string home_of =
            passwd_home(value.substr(1, slash == std::string::npos ? slash : slash - 1));
        if (home_of.empty()) return {};
        value = home_of + (slash == std::string::npos ? std::string() : value.substr(slash));
    } else if (value[0] != '/') {
        value = base + "/" + value;
    }
    if (reach) dotdot_reach(value, reach->pivots, reach->physical);
    return normal(value);
}

// The first line of a gitfile (`gitdir: PATH`), as a path from the gitfile's directory.
std::string gitfile_target(const std::string& gitfile, bool* denied = nullptr) {
    std::string text = read_file(gitfile, denied);
    if (text.rfind("gitdir:", 0) != 0) return {};
    text = text.substr(7, text.find('\n') == std::string::npos ? std::string::npos : text.find('\n') - 7);
    while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
        text.erase(0, 1);
    while (!text.empty() && (text.back() == '\r' || text.back() == ' '))
        text.pop_back();
    if (text.empty()) return {};
    return text[0] == '/' ? normal(text) : normal(fs::path(gitfile).parent_path().string() + "/" + text);
}

// A repository: its git directory and the directory a relative core.hooksPath is taken from (the working
// tree's top; a bare repository's git directory).
struct Repository {
    std::string git_dir;
    std::string top;
};

// The git directory of the working tree `top` when it holds a `.git` (a directory, or a gitfile), or `top`
// itself when it is a bare repository; nullopt otherwise (`denied`: a gitfile there could not be read).
std::optional<Repository> repository_at(const std::string& top, bool* denied = nullptr) {
    const std::string dot_git = top == "/" ? "/.git" : top + "/.git";
    if (is_dir(dot_git)) return Repository{dot_git, top};
    if (is_file(dot_git)) {
        std::string git_dir = gitfile_target(dot_git, denied);
        if (!git_dir.empty()) return Repository{std::move(git_dir), top};
        return std::nullopt;
    }
    const std::string at = top == "/" ? "" : top;
    if (is_file(at + "/HEAD") && (is_dir(at + "/objects") || is_file(at + "/commondir")))
        return Repository{top, top};  // a bare repository runs its hooks in itself
    return std::nullopt;
}

// The repository git finds from `dir`: the first upwards (a gitfile that cannot be read, in `unreadable`,
// ends the way up as it ends git's).
std::optional<Repository> repository_above(const std::string& dir, std::vector<std::string>& unreadable) {
    for (fs::path at = normal(dir);; at = at.parent_path()) {
        bool denied = false;
        if (auto repo = repository_at(at.string(), &denied)) return repo;
        if (denied) {
            unreadable.push_back((at == "/" ? std::string() : at.string()) + "/.git");
            return std::nullopt;
        }
        if (at == at.parent_path()) return std::nullopt;
    }
}

// What `reach` names, protected: its pivots by name (targets.files), its physical paths as `kind` (the
// resolved path's own list).
void keep(const Reach& reach, Targets& targets, std::vector<std::string>& kind) {
    targets.files.insert(targets.files.end(), reach.pivots.begin(), reach.pivots.end());
    kind.insert(kind.end(), reach.physical.begin(), reach.physical.end());
}

// Reads config files (and what they include) into `targets`. A relative core.hooksPath is taken from
// `hooks_base`; with none (the user's own configuration) it is kept in `relative_hooks`, to be taken from
// each repository's top. Bounded by the files read, not by the queue's length: git itself stops at a depth of
// 10 but reads any number of includes side by side (a config with 64 includes, the last including another,
// was read only up to the 64th, and the file the last one includes, which git reads, stayed writable).
void read_configs(std::vector<std::string> queue, const std::string& hooks_base, const std::string& home,
                  Targets& targets, std::vector<std::string>* relative_hooks,
                  std::vector<std::string>* worktrees = nullptr,
                  std::vector<std::string>* unreadable = nullptr) {
    constexpr std::size_t kMaxFiles = 1024;
    std::set<std::string> seen;
    for (std::size_t n = 0; n < queue.size() && seen.size() < kMaxFiles; ++n) {
        const std::string file = queue[n];
        if (!seen.insert(file).second) continue;
        bool denied = false;
        const std::string text = read_file(file, &denied);
        if (denied && unreadable) unreadable->push_back(file);
        if (text.empty()) continue;
        const std::string dir = fs::path(file).parent_path().string();
        for (const Entry& e : parse(text)) {
            if (e.key == "core.hookspath") {
                if (hooks_base.empty() && relative_hooks && !e.value.empty() && e.value[0] != '/' &&
                    e.value[0] != '~') {
                    relative_hooks->push_back(e.value);
                    continue;
                }
                Reach reach;
                const std::string p = resolve(e.value, hooks_base, home, &reach);
                if (!p.empty()) targets.hook_dirs.push_back(p);
                keep(reach, targets, targets.hook_dirs);
            } else if (e.key == "core.worktree" && worktrees) {
                worktrees->push_back(e.value);
            } else if (e.key == "include.path" || (e.key.rfind("includeif.", 0) == 0 && e.key.size() > 15 &&
                                                   e.key.compare(e.key.size() - 5, 5, ".path") == 0)) {
                Reach reach;
                const std::string p = resolve(e.value, dir, home, &reach);
                if (p.empty()) continue;
                targets.files.push_back(p);
                queue.push_back(p);
                keep(reach, targets, targets.files);
                queue.insert(queue.end(), reach.physical.begin(), reach.physical.end());
            }
        }
    }
}

// The configuration of one repository: its common directory's config (a worktree's `commondir` followed)
// and its own config.worktree, with what they include; a relative core.hooksPath (its own, the user's) from
// its top, and from the working tree core.worktree names too (relative: from the git directory): git runs
// the hooks there (`git init meta; git -C meta config core.worktree ../../site`: git in meta commits site,
// running site/.githooks).
void read_repository(const Repository& repo, const std::string& home,
                     const std::vector<std::string>& relative_hooks, Targets& targets,
                     std::vector<std::string>& unreadable_files) {
    std::string common = repo.git_dir;
    bool denied = false;
    const std::string commondir = read_file(repo.git_dir + "/commondir", &denied);
    if (!commondir.empty()) {
        const std::string c = commondir.substr(0, commondir.find('\n'));
        if (!c.empty()) common = resolve(c, repo.git_dir, "");
    }
    std::vector<std::string> relative = relative_hooks, worktrees, unreadable;
    read_configs({common + "/config", repo.git_dir + "/config.worktree"}, "", home, targets, &relative,
                 &worktrees, &unreadable);
    if (denied || !unreadable.empty()) {
        // What it configures is unknown (`chmod 000 .git/config` by an earlier run, restored by this one
        // after the search): the repository's working tree, git directories and the unreadable files'
        // directories are protected as a whole.
        for (const std::string& d : {repo.top, repo.git_dir, common})
            targets.hook_dirs.push_back(d);
        for (const std::string& f : unreadable)
            targets.hook_dirs.push_back(fs::path(f).parent_path().string());
        if (denied) unreadable_files.push_back(repo.git_dir + "/commondir");
        unreadable_files.insert(unreadable_files.end(), unreadable.begin(), unreadable.end());
    }
    std::vector<std::string> tops{repo.top};
    for (const std::string& w : worktrees)
        for (const std::string& base : {repo.git_dir, common}) {
            Reach reach;
            const std::string top = resolve(w, base, home, &reach);
            if (!top.empty()) tops.push_back(top);
            targets.files.insert(targets.files.end(), reach.pivots.begin(), reach.pivots.end());
            tops.insert(tops.end(), reach.physical.begin(), reach.physical.end());
        }
    for (const std::string& top : tops)
        for (const std::string& rel : relative) {
            Reach reach;
            targets.hook_dirs.push_back(resolve(rel, top, home, &reach));
            keep(reach, targets, targets.hook_dirs);
        }
}

// The user's own configuration: ~/.gitconfig, $XDG_CONFIG_HOME/git/config (or ~/.config/git/config),
// /etc/gitconfig.
void read_user_configs(const std::string& home, Targets& targets, std::vector<std::string>& relative_hooks,
                       std::vector<std::string>& unreadable) {
    std::vector<std::string> queue;
    if (!home.empty()) {
        queue.push_back(home + "/.gitconfig");
        const char* xdg = std::getenv("XDG_CONFIG_HOME");
        queue.push_back((xdg && *xdg == '/' ? std::string(xdg) : home + "/.config") + "/git/config");
    }
    queue.push_back("/etc/gitconfig");
    // The environment the user's git runs in (cordon's: the user's shell's) may name other files, each read
    // as well (a superset: git reads them instead) and protected itself (unlike ~/.gitconfig no protected
    // name covers it), and set entries of its own.
    for (const char* name : {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"}) {
        const char* v = std::getenv(name);
        if (!v || !*v || std::string_view(v) == "/dev/null") continue;
        std::error_code ec;
        const std::string p = normal(fs::absolute(v, ec).string());
        if (ec || p.empty()) continue;
        queue.push_back(p);
        targets.files.push_back(p);
    }
    if (const char* count = std::getenv("GIT_CONFIG_COUNT")) {
        const long n = std::strtol(count, nullptr, 10);
        for (long i = 0; i < n && i < 4096; ++i) {
            const char* key = std::getenv(("GIT_CONFIG_KEY_" + std::to_string(i)).c_str());
            const char* value = std::getenv(("GIT_CONFIG_VALUE_" + std::to_string(i)).c_str());
            if (!key || !value || !*value) continue;
            const std::string k = lower(key);
            const bool include = k == "include.path" || (k.rfind("includeif.", 0) == 0 && k.size() > 15 &&
                                                         k.compare(k.size() - 5, 5, ".path") == 0);
            if (k == "core.hookspath" && value[0] != '/' && value[0] != '~') {
                relative_hooks.push_back(value);
                continue;
            }
            if (k != "core.hookspath" && !include) continue;
            Reach reach;
            const std::string p = resolve(value, "/", home, &reach);  // relative includes: refused by git
            if (p.empty()) continue;
            if (include) {
                targets.files.push_back(p);
                queue.push_back(p);
                keep(reach, targets, targets.files);
            } else {
                targets.hook_dirs.push_back(p);
                keep(reach, targets, targets.hook_dirs);
            }
        }
    }
    read_configs(std::move(queue), "", home, targets, &relative_hooks, nullptr, &unreadable);
}

bool covers(const std::string& dir, const std::string& path) {
    return path.size() >= dir.size() && path.compare(0, dir.size(), dir) == 0 &&
           (path.size() == dir.size() || dir == "/" || path[dir.size()] == '/');
}

void sort_unique(std::vector<std::string>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

}  // namespace

void Targets::index() {
    sort_unique(hook_dirs);
    sort_unique(files);
    hook_dirs_folded_.clear();
    files_folded_.clear();
    for (const std::string& d : hook_dirs)
        hook_dirs_folded_.push_back(casefold::fold(d));
    for (const std::string& f : files)
        files_folded_.push_back(casefold::fold(f));
    sort_unique(hook_dirs_folded_);
    sort_unique(files_folded_);
    all_sorted_ = hook_dirs;
    all_sorted_.insert(all_sorted_.end(), files.begin(), files.end());
    sort_unique(all_sorted_);
    all_folded_ = hook_dirs_folded_;
    all_folded_.insert(all_folded_.end(), files_folded_.begin(), files_folded_.end());
    sort_unique(all_folded_);
}

bool Targets::protects(const std::string& path, bool folded) const {
    const auto& dirs = folded ? hook_dirs_folded_ : hook_dirs;
    const auto& fls = folded ? files_folded_ : files;
    if (std::binary_search(fls.begin(), fls.end(), path)) return true;
    // `path` itself and each of its ancestors.
    for (std::string p = path; !dirs.empty();) {
        if (std::binary_search(dirs.begin(), dirs.end(), p)) return true;
        const std::size_t slash = p.rfind('/');
        if (p == "/" || slash == std::string::npos) break;
        p = slash == 0 ? "/" : p.substr(0, slash);
    }
    return false;
}

bool Targets::below(const std::string& dir, bool folded) const {
    const auto& all = folded ? all_folded_ : all_sorted_;
    const std::string prefix = dir == "/" ? "/" : dir + "/";
    auto it = std::lower_bound(all.begin(), all.end(), prefix);
    for (; it != all.end() && it->compare(0, prefix.size(), prefix) == 0; ++it)
        if (*it != dir) return true;
    return false;
}

namespace {

std::string at_path(const std::string& dir, std::string_view name) {
    return (dir == "/" ? "" : dir) + "/" + std::string(name);
}

// The walk of find_targets_below: depth first, each directory opened from its parent's descriptor (one
// component to look up: thousands of directories are opened at start), at most max_depth + 1 descriptors
// open; symlinks not followed, git directories not entered (their objects are most of a repository's files;
// the git directories of submodules and worktrees are found through the gitfiles that name them).
class TreeSearch {
  public:
    TreeSearch(const SearchLimits& limits, Search& out) : limits_(limits), out_(out) {}

    // Every repository at or below `root`, in `found`.
    void walk(const std::string& root, std::vector<Repository>& found) {
        const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT && errno != ENOTDIR) unlisted(root);
            return;
        }
        walk_dir(fd, root, 0, found);
    }

  private:
    // Looks at the directory open as `fd` (closed here), then below it.
    void walk_dir(int fd, const std::string& dir, int depth, std::vector<Repository>& found) {
        if (out_.stopped || (limits_.stop && limits_.stop())) {
            out_.stopped = true;
            ::close(fd);
            return;
        }
        bool git = false, git_dir = false, head = false, objects = false, commondir = false;
        std::string git_name = ".git";  // as the directory spells it
        std::vector<std::string> subdirs;
        alignas(8) char buf[32768];
        for (;;) {
            const long n = ::syscall(SYS_getdents64, fd, buf, sizeof buf);
            if (n < 0) unlisted(dir);
            if (n <= 0) break;
            for (long off = 0; off < n;) {
                const auto* e = reinterpret_cast<const struct dirent64*>(buf + off);
                off += e->d_reclen;
                const std::string_view raw = e->d_name;
                if (raw == "." || raw == "..") continue;
                ++out_.entries;
                // A case-insensitive directory finds `.GIT` (or `.git` with an ignorable code point) where
                // git looks up `.git`, and `head` for `HEAD`: such names count as theirs (on another
                // directory that protects at most what git does not read there).
                std::string folded;
                if (casefold::folds(raw)) folded = casefold::fold(raw);
                const std::string_view name = folded.empty() ? raw : std::string_view(folded);
                if ((e->d_type == DT_LNK || e->d_type == DT_UNKNOWN) && limits_.keep_links) {
                    struct stat st {};
                    if (e->d_type == DT_LNK ||
                        (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)))
                        out_.symlinks.push_back(at_path(dir, raw));
                }
                if (name == ".git") {
                    git = true;
                    git_dir = e->d_type == DT_DIR;
                    git_name = raw;
                    continue;  // a git directory is not entered
                }
                head = head || name == "HEAD" || name == "head";
                objects = objects || name == "objects";
                commondir = commondir || name == "commondir";
                unsigned char type = e->d_type;
                if (type == DT_UNKNOWN) {
                    struct stat st {};
                    if (::fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
                    type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
                }
                if (type == DT_REG && limits_.keep_file && limits_.keep_file(dir, raw))
                    hard_link(fd, e->d_name);
                if (type == DT_DIR) subdirs.emplace_back(raw);
            }
        }
        const std::string at = dir == "/" ? "" : dir;
        if (git_dir) {
            found.push_back(Repository{at + "/" + git_name, dir});
            out_.unentered.push_back(at + "/" + git_name);
            // (Not entered: ProtectedLinks looks through its hooks and config, Search::unentered.)
        } else if (git || (head && (objects || commondir))) {
            if (auto repo = repository_at(dir)) {
                const bool bare = repo->git_dir == dir;
                found.push_back(std::move(*repo));
                if (bare) {  // its objects and refs are not entered
                    subdirs.clear();
                    out_.unentered.push_back(dir);
                }
            } else if (git) {
                bool denied = false;
                read_file(at + "/.git", &denied);
                if (denied) {  // a gitfile that cannot be read: its repository is unknown
                    unlisted(dir);
                    out_.unreadable.push_back(at + "/.git");
                }
            }
        }
        for (std::size_t i = 0; i < subdirs.size(); ++i) {
            if (out_.stopped) break;
            if (out_.entries >= limits_.max_entries || depth + 1 > limits_.max_depth) {
                for (; i < subdirs.size(); ++i)
                    unsearched(at + "/" + subdirs[i]);
                break;
            }
            // The kernel's own trees (an allowWrite of `/`): no repository there, and /proc shows every
            // process's files again.
            if (dir == "/" && (subdirs[i] == "proc" || subdirs[i] == "sys" || subdirs[i] == "dev")) continue;
            const int sub = ::openat(fd, subdirs[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                // Not ours to list (mode -wx, or 0: its owner, the command too, can chmod it back, and
                // execute permission alone reaches a repository below it by name, for the command and the
                // host's git): a repository there is unknown, so the directory is protected as a whole.
                if (errno != ENOENT) unlisted(at + "/" + subdirs[i]);
                continue;
            }
            walk_dir(sub, at + "/" + subdirs[i], depth + 1, found);
        }
        ::close(fd);
    }

    // The regular file `name` of the directory open as `fd`, when it has other names (a hard link made before
    // the run): each name writes the protected file.
    void hard_link(int fd, const char* name) {
        struct stat st {};
        if (::fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) && st.st_nlink > 1)
            out_.hard_linked.emplace_back(st.st_dev, st.st_ino);
    }

    // A directory it could not list is protected as a whole, and may hide a repository whose targets lie
    // elsewhere: one that could not be read (see hidden_by_its_owner).
    void unlisted(const std::string& dir) {
        out_.unreadable.push_back(dir);
        out_.targets.hook_dirs.push_back(dir);
        if (out_.unlisted.size() < 16) out_.unlisted.push_back(dir);
        ++out_.unlisted_count;
    }
    // Past the limits a repository is unknown, as in a directory that cannot be listed: protected as a whole
    // (never open: a command can fill the tree in one run so that the next run's search stops early).
    void unsearched(const std::string& dir) {
        out_.targets.hook_dirs.push_back(dir);
        if (out_.unsearched.size() < 16) out_.unsearched.push_back(dir);
        ++out_.unsearched_count;
    }
    const SearchLimits& limits_;
    Search& out_;
};

// Whether `path`, which the search could not read or list, may hide what it says from the search only: the
// searching user's own (a mode its owner chose: the jailed command's chmod or ACL, which the user restores,
// after which git reads it), one that cannot even be looked at (a directory on the way made unsearchable), or
// one the search may read but did not read whole (larger than kMaxConfigBytes). Another user's file or
// directory that the searching user cannot read is not: the command, running as that user or as one without
// capabilities, cannot have chosen its mode, and the user's git cannot read it either.
bool hidden_by_its_owner(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return true;
    return st.st_uid == ::geteuid() || ::faccessat(AT_FDCWD, path.c_str(), R_OK, AT_EACCESS) == 0;
}

// Each path as configured and, where it differs, resolved through symlinks as well (the jail shows the
// host's paths where they are; a write names either).
void both_ways(std::vector<std::string>& paths) {
    const std::size_t n = paths.size();
    for (std::size_t i = 0; i < n; ++i) {
        std::error_code ec;
        const std::string r = fs::weakly_canonical(paths[i], ec).string();
        if (!ec && !r.empty() && r != paths[i]) paths.push_back(r);
    }
}

// The common directory of the git directory `git_dir` (a worktree's `commondir` followed).
std::string common_dir(const std::string& git_dir) {
    const std::string commondir = read_file(git_dir + "/commondir");
    const std::string c = commondir.substr(0, commondir.find('\n'));
    return c.empty() ? git_dir : resolve(c, git_dir, "");
}

// The submodules' git directories kept in `git_dir`/modules (a submodule's name may hold slashes; its own
// submodules are in its `modules`), each with its working tree: core.worktree, from the git directory; or,
// where `git submodule deinit` removed that and the working tree's gitfile (how the walk finds the others),
// the path .gitmodules gives the name in the superproject's working tree `top` (and the name itself, git's
// default path). `git submodule update --init` brings it back under the configuration kept here. Bounded.
void submodules_of(const std::string& git_dir, const std::string& top, const std::string& home,
                   std::vector<Repository>& found, Targets& targets, std::size_t& budget, int depth = 0) {
    if (depth > 10) return;
    const std::string modules = git_dir + "/modules";
    std::vector<Entry> gitmodules;
    if (!top.empty()) gitmodules = parse(read_file(top + "/.gitmodules"));
    std::vector<std::string> stack{modules};
    // Each submodule .gitmodules names, by name too (`chmod 311 .git/modules` hides a listing, not a name;
    // git looks it up by name); one that cannot be looked up is unknown: its working tree is protected.
    const std::string prefix = "submodule.", suffix = ".path";
    for (const Entry& e : gitmodules) {
        if (e.key.size() <= prefix.size() + suffix.size() || e.key.rfind(prefix, 0) != 0 ||
            e.key.compare(e.key.size() - suffix.size(), suffix.size(), suffix) != 0)
            continue;
        const std::string name = e.key.substr(prefix.size(), e.key.size() - prefix.size() - suffix.size());
        const std::string dir = modules + "/" + name;
        struct stat st {};
        if (::stat((dir + "/config").c_str(), &st) == 0) {
            stack.push_back(dir);
        } else if (errno != ENOENT && errno != ENOTDIR) {
            const std::string t = resolve(e.value, top, "");
            if (!t.empty()) targets.hook_dirs.push_back(t);
        }
    }
    while (!stack.empty() && budget > 0) {
        const std::string dir = std::move(stack.back());
        stack.pop_back();
        --budget;
        if (dir != modules && is_file(dir + "/HEAD") && is_file(dir + "/config")) {
            std::vector<std::string> tops;
            for (const Entry& e : parse(read_file(dir + "/config")))
                if (e.key == "core.worktree") tops = {resolve(e.value, dir, home)};
            if (tops.empty() && !top.empty()) {
                const std::string name = dir.substr(modules.size() + 1);
                tops.push_back(resolve(name, top, ""));
                for (const Entry& e : gitmodules)
                    if (e.key == "submodule." + name + ".path") tops.push_back(resolve(e.value, top, ""));
            }
            for (const std::string& t : tops)
                if (!t.empty()) found.push_back(Repository{dir, t});
            submodules_of(dir, tops.empty() ? std::string() : tops.back(), home, found, targets, budget,
                          depth + 1);
            continue;
        }
        std::error_code ec;
        for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
            if (it->symlink_status(ec).type() == fs::file_type::directory)
                stack.push_back(it->path().string());
    }
}

}  // namespace

Search find_targets_below(const std::string& cwd, const std::string& home,
                          const std::vector<std::string>& roots, const SearchLimits& limits) {
    Search out;
    std::vector<std::string> relative_hooks;
    read_user_configs(home, out.targets, relative_hooks, out.unreadable);
    std::vector<Repository> found;
    if (auto repo = repository_above(cwd, out.unreadable)) found.push_back(std::move(*repo));
    TreeSearch search(limits, out);
    for (const std::string& root : roots) {
        if (auto repo = repository_above(root, out.unreadable)) found.push_back(std::move(*repo));
        search.walk(normal(root), found);
    }
    std::set<std::string> commons;
    std::size_t budget = 100000;
    for (std::size_t i = 0, n = found.size(); i < n; ++i) {
        const std::string common = common_dir(found[i].git_dir);
        const std::string top = found[i].top;  // (a copy: `found` grows)
        if (commons.insert(common).second) submodules_of(common, top, home, found, out.targets, budget);
    }
    for (const Repository& repo : found) {
        out.unentered.push_back(repo.git_dir);  // (a gitfile's, a submodule's: outside the walk too)
        out.unentered.push_back(common_dir(repo.git_dir));
    }
    sort_unique(out.unentered);
    std::set<std::pair<std::string, std::string>> read;
    for (const Repository& repo : found) {
        if (limits.stop && limits.stop()) {
            out.stopped = true;
            break;
        }
        if (!read.emplace(repo.git_dir, repo.top).second) continue;
        read_repository(repo, home, relative_hooks, out.targets, out.unreadable);
    }
    sort_unique(out.unreadable);
    out.unreadable.erase(std::remove_if(out.unreadable.begin(), out.unreadable.end(),
                                        [](const std::string& p) { return !hidden_by_its_owner(p); }),
                         out.unreadable.end());
    out.unreadable_count = out.unreadable.size();
    if (out.unreadable.size() > 16) out.unreadable.resize(16);
    out.repositories = read.size();
    if (found.empty())
        for (const std::string& rel : relative_hooks) {
            Reach reach;
            out.targets.hook_dirs.push_back(resolve(rel, normal(cwd), home, &reach));
            keep(reach, out.targets, out.targets.hook_dirs);
        }
    out.targets.index();  // duplicates gone before each is resolved
    both_ways(out.targets.hook_dirs);
    both_ways(out.targets.files);
    out.targets.index();
    return out;
}

std::vector<std::string> writable_areas(const Policy& policy) {
    const auto& f = policy.filesystem();
    std::vector<std::string> areas;
    for (const PathRule& rule : f.allow_write) {
        std::string p = rule.path.string();
        if (rule.rule.source.layer == Layer::Default && p == "/tmp") continue;  // the jail's own
        if (rule.glob) {
            // The literal directories before the first glob character.
            const std::size_t g = p.find_first_of("*?[");
            p = g == std::string::npos ? p : p.substr(0, p.rfind('/', g));
            if (p.empty()) p = "/";
        }
        p = normal(p);
        if ((covers("/dev", p) && !covers("/dev/shm", p)) || covers("/proc", p)) continue;
        areas.push_back(p);
    }
    sort_unique(areas);
    return areas;
}

std::vector<std::string> search_roots(const Policy& policy) {
    std::vector<std::string> roots;
    for (const std::string& p : writable_areas(policy))
        if (is_dir(p)) roots.push_back(p);
    std::vector<std::string> out;
    for (const std::string& r : roots)
        if (out.empty() || !covers(out.back(), r)) out.push_back(r);
    return out;
}

Search find_targets_for(const Policy& policy, const SearchLimits& limits) {
    const auto& f = policy.filesystem();
    // Symlinks at protected names (`.claude -> dotclaude`): found by the same walk. Every symlink: one that
    // names no protected name may lie inside the target of one that does.
    SearchLimits with_links = limits;
    with_links.keep_links = true;
    with_links.keep_file = ProtectedLinks::file_wanted(policy);
    ProtectedLinks::Sources sources;
    sources.roots = search_roots(policy);
    Search search =
        find_targets_below(f.working_directory.path.string(), f.home.string(), sources.roots, with_links);
    sources.symlinks = std::move(search.symlinks);
    sources.git_dirs = search.unentered;
    sources.files = search.hard_linked;
    if (search.unsearched_count == 0) {  // (past the walk's bound every writable area is protected anyway)
        sources.hook_dirs = search.targets.hook_dirs;
        sources.included = search.targets.files;
    }
    search.protected_links = ProtectedLinks::find(policy, sources);
    // git's targets named by the writable areas' other path (`core.hooksPath = /data/proj/githooks` while
    // the run is in `~/code/proj`, a bind mount of it): also where the run writes them.
    const auto& elsewhere = search.protected_links.elsewhere();
    if (!elsewhere.empty()) {
        for (auto* list : {&search.targets.hook_dirs, &search.targets.files}) {
            const std::vector<std::string> given = *list;
            for (const std::string& t : given)
                for (const auto& [other, root] : elsewhere)
                    if (covers(other, t)) list->push_back(ProtectedLinks::rebase(t, other, root));
        }
        search.targets.index();
    }
    if (search.unreadable_count > 0 || search.unsearched_count > 0 ||
        !search.protected_links.unsearched().empty()) {
        // Why: an unreadable config may name any directory as core.hooksPath, or include any file, and the
        // user's git reads it again once its mode is restored; protecting only what lies near it left an
        // absolute hooksPath, an include's own includes, the targets of ~/.gitconfig writable. The same for
        // a repository past the search's bound: the bound is the command's to reach (a million files made
        // in an earlier run), and protecting only the directories past it left their configs' absolute
        // hooksPath writable.
        for (const std::string& area : writable_areas(policy))
            search.targets.hook_dirs.push_back(area);
        search.targets.hook_dirs.push_back("/dev/shm");  // the host's without namespaces: outlives the run
        search.targets.index();
    }
    return search;
}

}  // namespace cordon::policy::git_config
