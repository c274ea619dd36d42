#include "policy/protected_links.hpp"

#include <dirent.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_set>

#include "policy/path_components.hpp"

namespace cordon::policy {

namespace fs = std::filesystem;

namespace {

bool under(const std::string& path, const std::string& root) {
    if (root == "/") return !path.empty() && path[0] == '/';
    return path.compare(0, root.size(), root) == 0 &&
           (path.size() == root.size() || path[root.size()] == '/');
}

bool in_any(const std::vector<std::string>& roots, const std::string& path) {
    return std::any_of(roots.begin(), roots.end(), [&](const std::string& r) { return under(path, r); });
}

std::string joined(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
    std::string out;
    for (std::size_t i = from; i < to; ++i)
        out += "/" + parts[i];
    return out;
}

// Directories whose path is their own (no symlink, no `..` on the way), as resolve_recording found them: a
// resolution starts after the longest such prefix (thousands of links lie in the same few directories).
using RealDirs = std::unordered_set<std::string>;

// `path` (absolute) with every symlink on its way followed, as far as it exists (the rest taken as written),
// and each symlink met in `hops` (its own path, its directory resolved). A loop ends where it is found.
std::string resolve_recording(const std::string& path, std::vector<std::string>& hops, RealDirs& real) {
    std::string done;  // resolved so far ("" for /)
    std::size_t from = 0;
    for (std::size_t end = path.rfind('/'); end != std::string::npos && end > 0;
         end = path.rfind('/', end - 1))
        if (real.count(path.substr(0, end))) {
            done = path.substr(0, end);
            from = end;
            break;
        }
    std::vector<std::string> todo = path_components::split_non_empty(std::string_view(path).substr(from));
    std::reverse(todo.begin(), todo.end());  // the next component last
    bool missing = false, pure = true;
    int links = 0;
    while (!todo.empty()) {
        const std::string c = std::move(todo.back());
        todo.pop_back();
        if (c == ".") continue;
        if (c == "..") {
            // The directory left is on the way too: replaced by a symlink, its `..` lands elsewhere.
            if (!done.empty()) hops.push_back(done);
            done = done.substr(0, done.rfind('/'));
            pure = false;
            continue;
        }
        std::string next = done + "/" + c;
        struct stat st {};
        if (!missing && ::lstat(next.c_str(), &st) != 0) missing = true;
        if (!missing && S_ISLNK(st.st_mode)) {
            char buf[PATH_MAX];
            const ssize_t n = ::readlink(next.c_str(), buf, sizeof buf);
            if (n <= 0 || ++links > 40) return next;
            hops.push_back(next);
            const std::string to(buf, static_cast<std::size_t>(n));
            const std::vector<std::string> parts = path_components::split_non_empty(to);
            for (auto it = parts.rbegin(); it != parts.rend(); ++it)
                todo.push_back(*it);
            if (to[0] == '/') done.clear();
            pure = false;
            continue;
        }
        if (!missing && pure && S_ISDIR(st.st_mode)) real.insert(next);
        done = std::move(next);
    }
    return done.empty() ? "/" : done;
}

// The rests of the protected names after `named` (`commands`, `settings.json`, ... after `/w/.claude`):
// for each name whose first components are the last ones of `named`, the components after them.
std::vector<std::vector<std::string>> rests_after(const Policy& policy, const std::string& named) {
    const std::vector<std::string> path = path_components::split_non_empty(named);
    std::vector<std::string> names = policy.filesystem().always_read_only_names;
    for (const std::string& n : git_dir_names())
        names.push_back(n);
    for (const std::string& n : policy.filesystem().home_read_only_names)
        names.push_back(n);
    std::set<std::vector<std::string>> out;
    for (const std::string& name : names) {
        const std::vector<std::string> parts = path_components::split_non_empty(name);
        for (std::size_t j = 1; j < parts.size() && j <= path.size(); ++j) {
            const bool match =
                std::equal(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(j),
                           path.end() - static_cast<std::ptrdiff_t>(j),
                           [](const std::string& n, const std::string& p) { return n == "*" || n == p; });
            if (match) out.emplace(parts.begin() + static_cast<std::ptrdiff_t>(j), parts.end());
        }
    }
    return {out.begin(), out.end()};
}

// The components of the protected names (but `*`): any of them, and the last of each name. Looked up by view
// (std::set's strings do not move), once per symlink and per regular file of the writable areas.
struct NameWords {
    std::set<std::string> owned;
    std::unordered_set<std::string_view> any, last;
};

std::shared_ptr<const NameWords> name_words(const Policy& policy) {
    auto words = std::make_shared<NameWords>();
    std::vector<std::string> lasts;
    for (const auto* names : {&policy.filesystem().always_read_only_names, &git_dir_names(),
                              &policy.filesystem().home_read_only_names})
        for (const std::string& name : *names) {
            std::vector<std::string> parts = path_components::split_non_empty(name);
            if (!parts.empty()) lasts.push_back(parts.back());
            for (std::string& c : parts)
                if (c != "*") words->owned.insert(std::move(c));
        }
    for (const std::string& w : words->owned)
        words->any.insert(w);
    for (const std::string& l : lasts)
        if (auto it = words->owned.find(l); it != words->owned.end()) words->last.insert(*it);
    return words;
}

}  // namespace

std::function<bool(const std::string&)> ProtectedLinks::wanted(const Policy& policy) {
    // Asked of every symlink of the writable areas (node_modules/.bin holds thousands): most have no
    // component of a protected name and lead to no denied path, which a set lookup per component says.
    auto words = name_words(policy);
    std::vector<std::string> denied;  // a link above one (cordon's own directories) moves it
    for (const PathRule& rule : policy.filesystem().deny_write)
        if (!rule.glob) denied.push_back(rule.path.string());
    std::sort(denied.begin(), denied.end());
    return [&policy, words, denied = std::move(denied)](const std::string& path) {
        bool maybe = false;
        for (std::size_t start = 1; !maybe && start < path.size();) {
            std::size_t end = path.find('/', start);
            if (end == std::string::npos) end = path.size();
            maybe = words->any.count(std::string_view(path).substr(start, end - start)) > 0;
            start = end + 1;
        }
        if (!maybe) {  // a denied path below `path` (sorted: those below it follow `path/`)
            const std::string below = path + "/";
            const auto it = std::lower_bound(denied.begin(), denied.end(), below);
            maybe = it != denied.end() && it->compare(0, below.size(), below) == 0;
        }
        if (!maybe) return false;
        if (policy.holds_protected_names(path)) return true;
        const Decision d = policy.decide_write_resolved(path, [](const std::string&) { return true; });
        return d.reason == Reason::AlwaysReadOnly;
    };
}

std::function<bool(const std::string&, std::string_view)> ProtectedLinks::file_wanted(const Policy& policy) {
    // Asked of every regular file of the writable areas: the directory is looked at once (the walk lists a
    // directory's entries together), a name only where the directory or the name itself may be protected.
    struct State {
        std::function<bool(const std::string&)> want;
        std::shared_ptr<const NameWords> words;
        std::string dir;
        bool dir_may = false;
    };
    auto state = std::make_shared<State>();
    state->want = wanted(policy);
    state->words = name_words(policy);
    return [state](const std::string& dir, std::string_view name) {
        if (dir != state->dir) {
            state->dir = dir;
            state->dir_may = state->want(dir);
        }
        if (!state->dir_may && !state->words->last.count(name)) return false;
        return state->want((dir == "/" ? "" : dir) + "/" + std::string(name));
    };
}

void ProtectedLinks::add(Link link, const std::vector<std::string>& hops) {
    for (const std::string& hop : hops)
        places_.push_back(hop);
    places_.push_back(link.target);
    by_target_.emplace(link.target, links_.size());
    links_.push_back(std::move(link));
}

void ProtectedLinks::index() {
    std::sort(places_.begin(), places_.end());
    places_.erase(std::unique(places_.begin(), places_.end()), places_.end());
    std::sort(files_.begin(), files_.end());
    files_.erase(std::unique(files_.begin(), files_.end()), files_.end());
}

void ProtectedLinks::add_file(unsigned long long dev, unsigned long long ino) {
    files_.emplace_back(dev, ino);
}

bool ProtectedLinks::holds_file(unsigned long long dev, unsigned long long ino) const {
    return std::binary_search(files_.begin(), files_.end(), std::make_pair(dev, ino));
}

namespace {

// The trees of protected directories (and of what a protected name's link leads to), looked through for
// symlinks (each a candidate: it may lead into the writable areas) and for regular files with other names
// (hard links made before the run). Bounded, all trees together: past the bound what is left is unknown, and
// find() says so (ProtectedLinks::unsearched).
class Scanner {
  public:
    enum class Mode {
        Protected,  // a protected directory: every symlink, every file with other names
        GitDir,     // a git directory: its hooks (in every module and worktree) and its config files
        Hooks,      // a hooks directory (core.hooksPath): every symlink counts as a hook
    };
    Scanner(std::vector<std::string>& candidates, std::vector<char>& forced, ProtectedLinks& links)
        : candidates_(candidates), forced_(forced), links_(links) {}

    // The tree of `dir`, which the host reads as `named`.
    void scan(const std::string& dir, const std::string& named, Mode mode) {
        if (!scanned_.insert(dir).second) return;
        const std::size_t slash = named.rfind('/');
        const bool claude = named.compare(slash + 1, std::string::npos, ".claude") == 0;
        walk(dir, 0, mode == Mode::Protected && claude, mode != Mode::Protected, mode == Mode::Hooks, false);
    }
    const std::vector<std::string>& unsearched() const { return unsearched_; }

  private:
    void stop_at(const std::string& dir) {
        if (unsearched_.size() < 16) unsearched_.push_back(dir);
    }

    // `links_only`: symlinks only, no look at files' other names (~/.claude's transcripts: thousands).
    void walk(const std::string& dir, int depth, bool claude, bool git, bool in_hooks, bool links_only) {
        if (budget_ == 0 || depth > 64) {
            stop_at(dir);
            return;
        }
        DIR* listing = ::opendir(dir.c_str());
        if (!listing) {
            // One of our own that cannot be listed (mode 0: its owner, the command too, can chmod it back):
            // what it holds is unknown. Another user's (a home in /home) is not ours to read, nor the
            // command's to write.
            struct stat st {};
            if (errno != ENOENT && errno != ENOTDIR && ::lstat(dir.c_str(), &st) == 0 &&
                st.st_uid == ::geteuid())
                stop_at(dir);
            return;
        }
        std::vector<std::string> subdirs;
        bool head = false, git_part = false;  // HEAD, and objects, refs or commondir: a git directory
        while (const dirent* e = ::readdir(listing)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            if (budget_ == 0) {
                stop_at(dir);
                break;
            }
            --budget_;
            head = head || name == "HEAD";
            git_part = git_part || name == "objects" || name == "refs" || name == "commondir";
            const std::string path = (dir == "/" ? "" : dir) + "/" + name;
            // In a git directory: the hooks, and the files git reads as configuration (a worktree's
            // config.worktree, a module's config).
            const bool git_config = git && (name == "config" || name == "config.worktree" ||
                                            name == "commondir" || name == "gitdir");
            const bool sample = in_hooks && name.ends_with(".sample");  // git never runs those
            const bool looked = !git || in_hooks || git_config || depth == 0;
            unsigned char type = e->d_type;
            if (type == DT_UNKNOWN || (type == DT_REG && looked && !sample && !links_only)) {
                struct stat st {};
                if (::lstat(path.c_str(), &st) != 0) continue;
                type = S_ISLNK(st.st_mode) ? DT_LNK : S_ISDIR(st.st_mode) ? DT_DIR : DT_REG;
                if (S_ISREG(st.st_mode) && st.st_nlink > 1 && !links_only)
                    links_.add_file(st.st_dev, st.st_ino);
            }
            if (type == DT_LNK && looked) {
                candidates_.push_back(path);
                forced_.push_back(git && (in_hooks || git_config) ? 1 : 0);
            }
            if (type == DT_DIR) subdirs.push_back(name);
        }
        ::closedir(listing);
        head =
            head && git_part;  // (a HEAD alone is any file: a command could make one to hide what is below)
        // Claude Code's own data in ~/.claude (transcripts, to-dos, snapshots): thousands of files; a symlink
        // there still counts (shell snapshots are sourced, memory files read into the agent's context).
        // (Not shell-snapshots nor session-env: Claude Code sources those; a few files.)
        static const std::set<std::string> kData = {"projects", "todos", "statsig", "file-history", "debug",
                                                    "logs",     "cache", "ide",     "telemetry"};
        for (const std::string& sub : subdirs) {
            // A git directory's objects, refs and logs: what git reads as data.
            if ((git || head) && (sub == "objects" || sub == "refs" || sub == "logs" || sub == "lfs"))
                continue;
            walk((dir == "/" ? "" : dir) + "/" + sub, depth + 1, false, git || head,
                 in_hooks || sub == "hooks", links_only || (depth == 0 && claude && kData.count(sub) > 0));
        }
    }

    std::vector<std::string>& candidates_;
    std::vector<char>& forced_;
    ProtectedLinks& links_;
    std::set<std::string> scanned_;
    std::vector<std::string> unsearched_;
    std::size_t budget_ = 200000;
};

// The homes whose protected names are looked at: the user's, /root's, those in /home and those of the
// system's users (root and uid 1000 up: a `--user` run's user may have one anywhere), bounded.
std::vector<std::string> homes_of(const Policy& policy) {
    std::vector<std::string> homes;
    const std::string home = policy.filesystem().home.lexically_normal().string();
    if (!home.empty() && home != "/") homes.push_back(home);
    homes.push_back("/root");
    for (const fs::path& other : policy.filesystem().other_homes)
        homes.push_back(other.lexically_normal().string());
    if (FILE* f = std::fopen("/etc/passwd", "re")) {
        while (const passwd* pw = ::fgetpwent(f)) {
            if (homes.size() >= 256) break;
            const std::string dir = pw->pw_dir ? pw->pw_dir : "";
            if ((pw->pw_uid == 0 || pw->pw_uid >= 1000) && dir.size() > 1 && dir[0] == '/' &&
                dir != "/nonexistent")
                homes.push_back(fs::path(dir).lexically_normal().string());
        }
        std::fclose(f);
    }
    if (DIR* listing = ::opendir("/home")) {
        while (const dirent* e = ::readdir(listing)) {
            const std::string name = e->d_name;
            if (name == "." || name == "..") continue;
            if (homes.size() >= 256) break;
            homes.push_back("/home/" + name);
        }
        ::closedir(listing);
    }
    std::sort(homes.begin(), homes.end());
    homes.erase(std::unique(homes.begin(), homes.end()), homes.end());
    return homes;
}

// The protected names where the host reads outside the writable areas `roots`: in the homes and in each
// ancestor of a root (git looks upwards for .git, Claude Code for .claude). A symlink at a name, or at the
// start of one, is a candidate; a protected directory found there is scanned (a real ~/.ssh holding
// `authorized_keys -> ~/dotfiles/keys`, a real .git/hooks holding `pre-commit -> ../../scripts/pre-commit`),
// which the walk of the writable areas does not see.
void outside_candidates(const Policy& policy, const std::vector<std::string>& roots,
                        std::vector<std::string>& out, ProtectedLinks& links, Scanner& scanner) {
    auto in_roots = [&](const std::string& p) { return in_any(roots, p); };
    std::vector<std::string> dirs;
    for (const std::string& root : roots)
        for (std::string a = root; a.size() > 1;) {
            a = a.substr(0, a.rfind('/'));
            if (a.empty()) a = "/";
            dirs.push_back(a);
        }
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    std::vector<std::string> names = policy.filesystem().always_read_only_names;
    for (const std::string& n : git_dir_names())
        names.push_back(n);
    auto look = [&](const std::string& dir, const std::vector<std::string>& list) {
        if (in_roots(dir)) return;  // the walk's
        for (const std::string& name : list) {
            std::string p = dir == "/" ? "" : dir;
            for (const std::string& c : path_components::split_non_empty(name)) {
                if (c == "*") break;
                p += "/" + c;
                struct stat st {};
                if (::lstat(p.c_str(), &st) != 0) break;
                if (S_ISLNK(st.st_mode)) {
                    out.push_back(p);
                    break;
                }
                if (S_ISREG(st.st_mode) && st.st_nlink > 1) links.add_file(st.st_dev, st.st_ino);
                if (!S_ISDIR(st.st_mode)) break;
            }
            // A protected directory itself (.git/hooks, .vscode, .ssh): what it holds.
            struct stat st {};
            const std::string whole = (dir == "/" ? "" : dir) + "/" + name;
            if (name.find('*') == std::string::npos && ::lstat(whole.c_str(), &st) == 0 &&
                S_ISDIR(st.st_mode))
                scanner.scan(whole, whole, Scanner::Mode::Protected);
        }
        // The repository there (git looks upwards): its hooks, its modules' hooks.
        struct stat st {};
        const std::string git = (dir == "/" ? "" : dir) + "/.git";
        if (::lstat(git.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
            scanner.scan(git, git, Scanner::Mode::GitDir);
    };
    for (const std::string& d : dirs)
        look(d, names);
    for (const std::string& home : homes_of(policy)) {
        if (in_roots(home)) continue;
        look(home, names);
        look(home, policy.filesystem().home_read_only_names);
    }
}

// A mount as /proc/self/mountinfo lists it: the file system's device, the path inside it that the mount
// shows, and where it shows it.
struct Mount {
    std::string dev, root, point;
};

std::string unescaped(std::string_view raw) {  // mountinfo's octal escapes (\040 for a space)
    std::string out;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] == '\\' && i + 3 < raw.size()) {
            out += static_cast<char>((raw[i + 1] - '0') * 64 + (raw[i + 2] - '0') * 8 + (raw[i + 3] - '0'));
            i += 3;
        } else {
            out += raw[i];
        }
    }
    return out;
}

std::vector<Mount> mounts() {
    std::vector<Mount> out;
    FILE* f = std::fopen("/proc/self/mountinfo", "re");
    if (!f) return out;
    char* line = nullptr;
    std::size_t cap = 0;
    while (::getline(&line, &cap, f) > 0) {
        std::vector<std::string_view> fields;
        std::string_view l = line;
        for (std::size_t at = 0; fields.size() < 5 && at < l.size();) {
            const std::size_t end = l.find_first_of(" \n", at);
            fields.push_back(l.substr(at, (end == std::string_view::npos ? l.size() : end) - at));
            if (end == std::string_view::npos) break;
            at = end + 1;
        }
        if (fields.size() == 5)
            out.push_back({std::string(fields[2]), unescaped(fields[3]), unescaped(fields[4])});
    }
    std::free(line);
    std::fclose(f);
    return out;
}

std::string rebased(const std::string& path, const std::string& from, const std::string& to) {
    const std::string rest = from == "/" ? path : path.substr(from.size());
    if (rest.empty()) return to;
    return to == "/" ? rest : to + rest;
}

// Where a path shows up again through bind mounts: for each other mount of the same file system that shows
// the same place, the other path. (`/data/proj` bind-mounted at `~/code/proj`; `~/.config` bind-mounted into
// the project.)
std::vector<std::string> other_paths(const std::vector<Mount>& all, const std::string& path) {
    const Mount* own = nullptr;
    for (const Mount& m : all)
        if (under(path, m.point) && (!own || m.point.size() >= own->point.size())) own = &m;
    std::vector<std::string> out;
    if (!own) return out;
    const std::string inside = rebased(path, own->point, own->root);  // the path inside its file system
    for (const Mount& m : all) {
        if (&m == own || m.dev != own->dev || !under(inside, m.root)) continue;
        const std::string there = rebased(inside, m.root, m.point);
        if (there != path) out.push_back(there);
    }
    return out;
}

}  // namespace

ProtectedLinks ProtectedLinks::find(const Policy& policy, const Sources& sources) {
    const std::vector<std::string>& roots = sources.roots;
    ProtectedLinks out;
    std::set<std::string> seen;
    RealDirs real;
    std::vector<std::string> candidates = sources.symlinks;
    std::vector<char> forced(candidates.size(), 0);  // found among git's hooks: counts as one
    Scanner scanner(candidates, forced, out);
    auto keep = [&](const std::string& named, const std::string& target,
                    const std::vector<std::string>& hops) {
        struct stat st {};
        const bool there = ::stat(target.c_str(), &st) == 0;
        if (there && S_ISREG(st.st_mode) && st.st_nlink > 1) out.add_file(st.st_dev, st.st_ino);
        // A target that holds a writable area (`.vscode -> /`): every write there is decided as at the name
        // already, and looking through it would walk the whole tree.
        const auto held =
            std::find_if(roots.begin(), roots.end(), [&](const std::string& r) { return under(r, target); });
        if (held != roots.end()) {
            if (out.notices_.size() < 16)
                out.notices_.push_back(named + " leads to " + target + ", which holds the writable area " +
                                       *held + ": every write there is decided as a write at " + named +
                                       " (write rule protected-links)");
        } else if (there && S_ISDIR(st.st_mode)) {
            // What a linked protected directory holds: its symlinks (named through this link) and its files
            // with other names (`dotclaude/commands/x.md` hard-linked to `docs/x.md`).
            scanner.scan(target, named, Scanner::Mode::Protected);
        }
        out.add({named, target}, hops);
    };
    // Inside a target, where the protected names go on: a link there (`dotclaude/commands -> ../cmds`) is
    // followed as the first was. Bounded: a link may lead back into itself.
    std::function<void(const std::string&, const std::string&, int)> go_on = [&](const std::string& named,
                                                                                 const std::string& target,
                                                                                 int depth) {
        if (depth > 8) return;
        for (const std::vector<std::string>& rest : rests_after(policy, named)) {
            for (std::size_t i = 1; i <= rest.size(); ++i) {
                if (rest[i - 1] == "*") break;
                const std::string tail = joined(rest, 0, i);
                std::vector<std::string> hops;
                const std::string to = resolve_recording((target == "/" ? "" : target) + tail, hops, real);
                if (hops.empty()) continue;  // no link on the way: the name's own path
                const std::string deeper = named + tail;
                if (seen.insert(deeper).second) {
                    keep(deeper, to, hops);
                    go_on(deeper, to, depth + 1);
                }
                break;
            }
        }
    };
    for (const auto& [dev, ino] : sources.files)
        out.add_file(dev, ino);
    outside_candidates(policy, roots, candidates, out, scanner);
    forced.resize(candidates.size(), 0);
    // Every git directory: its hooks (and its modules' and worktrees'), which the walk did not enter. git's
    // hooks directories (core.hooksPath, the user's too): each link there is a hook; its included files.
    for (const std::string& dir : sources.git_dirs) {
        // A gitfile's `gitdir: ../gits/app` through a link (`gits -> store`): the links on the way say which
        // git directory git reads, as the gitfile does; they stay.
        std::vector<std::string> hops;
        const std::string resolved = resolve_recording(dir, hops, real);
        if (!hops.empty() && seen.insert(dir).second) out.add({dir, resolved}, hops);
        scanner.scan(resolved, dir, Scanner::Mode::GitDir);
    }
    for (const std::string& dir : sources.hook_dirs)
        scanner.scan(dir, dir, Scanner::Mode::Hooks);
    for (const std::string& file : sources.included) {
        struct stat st {};
        if (::lstat(file.c_str(), &st) != 0) continue;
        if (S_ISREG(st.st_mode) && st.st_nlink > 1) out.add_file(st.st_dev, st.st_ino);
        if (S_ISLNK(st.st_mode)) {
            candidates.push_back(file);
            forced.push_back(1);
        }
    }
    // Bind mounts. One inside the writable areas (a devcontainer's `-v ~/.claude:/work/.claude-home`, a file
    // `~/.gitconfig`, a parent `~/.config`): the host's other path for it is named by it, as a link's would
    // be (a write there is refused only where that path is protected). And the writable areas shown elsewhere
    // too
    // (`/data/proj` at `~/code/proj`): a link to the other path leads into them.
    const std::vector<Mount> all_mounts = mounts();
    for (const std::string& root : roots)
        for (const std::string& other : other_paths(all_mounts, root))
            out.elsewhere_.emplace_back(other, root);
    auto in_roots = [&](const std::string& p) { return in_any(roots, p); };
    for (const Mount& m : all_mounts) {
        const bool inside = in_roots(m.point);
        if (inside && std::find(roots.begin(), roots.end(), m.point) != roots.end()) continue;
        for (const std::string& other : other_paths(all_mounts, m.point)) {
            // Inside, shown elsewhere: named there. Outside (`mount --bind proj/cmds ~/.claude/commands`),
            // showing a part of the writable areas: that part is named by the mount's path.
            if (inside == in_roots(other)) continue;
            const std::string& named = inside ? other : m.point;
            const std::string& target = inside ? m.point : other;
            if (seen.insert(target + "\n" + named).second) out.add({named, target}, {});
        }
    }
    const auto want = wanted(policy);
    // Until no link is found: one found may name others (a symlink inside its target), and a target scanned
    // brings its own.
    std::vector<char> taken;
    for (bool found = true; found;) {
        found = false;
        for (std::size_t i = 0; i < candidates.size(); ++i) {
            taken.resize(candidates.size(), 0);
            forced.resize(candidates.size(), 0);
            if (taken[i]) continue;
            const std::string link = candidates[i];  // (a copy: scanning a target adds candidates)
            // Its own path first; then as the links found name it (none for most).
            std::vector<std::string> names;
            if (forced[i] || want(link))
                names.push_back(link);
            else
                names = out.named_as(link);
            for (const std::string& named : names) {
                if (!forced[i] && !want(named)) continue;
                taken[i] = 1;
                found = true;
                if (!seen.insert(named).second) break;
                std::vector<std::string> hops;
                const std::string target = resolve_recording(link, hops, real);
                keep(named, target, hops);
                go_on(named, target, 0);
                break;
            }
        }
    }
    // A link to the writable areas' other path (`~/.claude -> /data/proj/dotclaude` while the run is in
    // `~/code/proj`): its target there.
    const std::vector<Link> found_links = out.links_;
    for (const Link& link : found_links)
        for (const auto& [other, root] : out.elsewhere_)
            if (under(link.target, other)) out.add({link.named, rebased(link.target, other, root)}, {});
    out.unsearched_ = scanner.unsearched();
    out.index();
    return out;
}

std::string ProtectedLinks::rebase(const std::string& path, const std::string& from, const std::string& to) {
    return rebased(path, from, to);
}

std::vector<std::string> ProtectedLinks::named_as(const std::string& path) const {
    std::vector<std::string> out;
    if (by_target_.empty() || path.empty() || path[0] != '/') return out;
    // The targets that hold `path`: `path` itself and each of its ancestors, looked up.
    for (std::size_t end = path.size();;) {
        const std::string prefix = end == 0 ? "/" : path.substr(0, end);
        auto [first, last] = by_target_.equal_range(prefix);
        for (auto it = first; it != last; ++it) {
            const Link& link = links_[it->second];
            if (link.target == link.named) continue;
            out.push_back(link.named + (prefix == "/" ? path : path.substr(prefix.size())));
        }
        if (end == 0) break;
        end = path.rfind('/', end - 1);
    }
    return out;
}

bool ProtectedLinks::holds(const std::string& dir) const {
    if (places_.empty()) return false;
    if (dir == "/") return true;
    if (std::binary_search(places_.begin(), places_.end(), dir)) return true;
    const std::string below = dir + "/";
    const auto it = std::lower_bound(places_.begin(), places_.end(), below);
    return it != places_.end() && it->compare(0, below.size(), below) == 0;
}

}  // namespace cordon::policy
