#include "policy/protected_links.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <functional>
#include <memory>
#include <set>
#include <string_view>
#include <unordered_set>

#include "policy/path_components.hpp"

namespace cordon::policy {

namespace {

bool under(const std::string& path, const std::string& root) {
    if (root == "/") return !path.empty() && path[0] == '/';
    return path.compare(0, root.size(), root) == 0 &&
           (path.size() == root.size() || path[root.size()] == '/');
}

std::string joined(const std::vector<std::string>& parts, std::size_t from, std::size_t to) {
    std::string out;
    for (std::size_t i = from; i < to; ++i)
        out += "/" + parts[i];
    return out;
}

// `path` (absolute) with every symlink on its way followed, as far as it exists (the rest taken as written),
// and each symlink met in `hops` (its own path, its directory resolved). A loop ends where it is found.
std::string resolve_recording(const std::string& path, std::vector<std::string>& hops) {
    std::vector<std::string> todo = path_components::split_non_empty(path);
    std::reverse(todo.begin(), todo.end());  // the next component last
    std::string done;                        // resolved so far ("" for /)
    bool missing = false;
    int links = 0;
    while (!todo.empty()) {
        const std::string c = std::move(todo.back());
        todo.pop_back();
        if (c == ".") continue;
        if (c == "..") {
            done = done.substr(0, done.rfind('/'));
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
            continue;
        }
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

}  // namespace

std::function<bool(const std::string&)> ProtectedLinks::wanted(const Policy& policy) {
    // Asked of every symlink of the writable areas (node_modules/.bin holds thousands): most have no
    // component of a protected name and lead to no denied path, which a set lookup per component says.
    struct Words {
        std::set<std::string> owned;
        std::unordered_set<std::string_view> set;  // views of `owned`
    };
    auto words = std::make_shared<Words>();
    auto add_words = [&](const std::vector<std::string>& names) {
        for (const std::string& name : names)
            for (std::string& c : path_components::split_non_empty(name))
                if (c != "*") words->owned.insert(std::move(c));
    };
    add_words(policy.filesystem().always_read_only_names);
    add_words(git_dir_names());
    add_words(policy.filesystem().home_read_only_names);
    for (const std::string& w : words->owned)
        words->set.insert(w);
    std::vector<std::string> denied;  // a link above one (cordon's own directories) moves it
    for (const PathRule& rule : policy.filesystem().deny_write)
        if (!rule.glob) denied.push_back(rule.path.string());
    std::sort(denied.begin(), denied.end());
    return [&policy, words, denied = std::move(denied)](const std::string& path) {
        bool maybe = false;
        for (std::size_t start = 1; !maybe && start < path.size();) {
            std::size_t end = path.find('/', start);
            if (end == std::string::npos) end = path.size();
            maybe = words->set.count(std::string_view(path).substr(start, end - start)) > 0;
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

void ProtectedLinks::add(Link link, const std::vector<std::string>& hops) {
    for (const std::string& hop : hops)
        places_.push_back(hop);
    places_.push_back(link.target);
    links_.push_back(std::move(link));
}

ProtectedLinks ProtectedLinks::find(const Policy& policy, const std::vector<std::string>& symlinks) {
    ProtectedLinks out;
    std::set<std::string> seen;
    // Inside a target, where the protected names go on: a link there (`dotclaude/commands -> ../cmds`) is
    // followed as the first was. Bounded: a link may lead back into itself.
    std::function<void(const std::string&, const std::string&, int)> go_on =
        [&](const std::string& named, const std::string& target, int depth) {
            if (depth > 8) return;
            for (const std::vector<std::string>& rest : rests_after(policy, named)) {
                for (std::size_t i = 1; i <= rest.size(); ++i) {
                    if (rest[i - 1] == "*") break;
                    const std::string tail = joined(rest, 0, i);
                    std::vector<std::string> hops;
                    const std::string to = resolve_recording((target == "/" ? "" : target) + tail, hops);
                    if (hops.empty()) continue;  // no link on the way: the name's own path
                    const std::string deeper = named + tail;
                    if (seen.insert(deeper).second) {
                        out.add({deeper, to}, hops);
                        go_on(deeper, to, depth + 1);
                    }
                    break;
                }
            }
        };
    const auto want = wanted(policy);
    for (const std::string& link : symlinks) {
        if (!want(link) || !seen.insert(link).second) continue;
        std::vector<std::string> hops;
        const std::string target = resolve_recording(link, hops);
        out.add({link, target}, hops);
        go_on(link, target, 0);
    }
    return out;
}

std::vector<std::string> ProtectedLinks::named_as(const std::string& path) const {
    std::vector<std::string> out;
    for (const Link& link : links_) {
        if (link.target == link.named || !under(path, link.target)) continue;
        out.push_back(link.named + (link.target == "/" ? path : path.substr(link.target.size())));
    }
    return out;
}

bool ProtectedLinks::holds(const std::string& dir) const {
    return std::any_of(places_.begin(), places_.end(), [&](const std::string& p) { return under(p, dir); });
}

}  // namespace cordon::policy
