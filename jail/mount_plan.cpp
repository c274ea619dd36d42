#include "jail/mount_plan.hpp"

#include "jail/read_scope.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <system_error>
#include <unordered_map>
#include <unordered_set>

namespace cordon::jail {

namespace fs = std::filesystem;

std::string_view to_string(MountKind kind) {
    switch (kind) {
        case MountKind::RootReadOnly:
            return "root-read-only";
        case MountKind::PrivateTmp:
            return "private-tmp";
        case MountKind::Writable:
            return "writable";
        case MountKind::ReadOnly:
            return "read-only";
        case MountKind::MaskDir:
            return "mask-dir";
        case MountKind::MaskFile:
            return "mask-file";
        case MountKind::Proc:
            return "proc";
        case MountKind::Dev:
            return "dev";
        case MountKind::ReadOnlyLink:
            return "read-only-link";
        case MountKind::Symlink:
            return "symlink";
    }
    return "?";
}

bool within(const fs::path& p, const fs::path& root) {
    const std::string& ps = p.native();
    const std::string& rs = root.native();
    if (rs == "/") return true;
    return ps == rs || (ps.size() > rs.size() && ps.compare(0, rs.size(), rs) == 0 && ps[rs.size()] == '/');
}

namespace {

// The `why` of a directory bound over itself because it holds a protected path (see pin_ancestors).
constexpr std::string_view kPinnedWhy = "pinned: holds ";

// What lstat(2) or stat(2) said of a path: 0 and the mode, or the errno.
struct Stat {
    int err = 0;
    mode_t mode = 0;
};

// While a plan is computed, every path's lstat and stat are memoised: the planner asks about the same paths
// again and again (each protected name in each writable root, its parents, the settings files), and on a VM
// each system call costs microseconds. The plan only looks at the file system.
struct StatCache {
    std::unordered_map<std::string, Stat> lstat, stat;
};
thread_local StatCache* stat_cache = nullptr;

// An absolute path other than `/` with no "." or ".." component and no repeated or trailing separator: what
// lexically_normal() leaves as it is, told by one pass over the string.
bool plain_absolute(const std::string& s) {
    if (s.size() < 2 || s[0] != '/' || s.back() == '/') return false;
    std::size_t start = 1;
    while (start <= s.size()) {
        std::size_t end = s.find('/', start);
        if (end == std::string::npos) end = s.size();
        std::string_view part(s.data() + start, end - start);
        if (part.empty() || part == "." || part == "..") return false;
        start = end + 1;
    }
    return true;
}

Stat stat_of(const fs::path& p, bool follow);

// What the cache already implies of `p`, without a system call. A path whose parent (a plain absolute path
// with a real last component) does not exist, or is neither a directory nor a symlink, cannot exist either:
// the kernel stops at the parent with the same error (ENOENT, ENOTDIR), or ENOTDIR for a file. And stat(2)
// and lstat(2) walk the same ancestors and differ only when the last component is a symlink: stat is lstat
// unless lstat found a link. Protected names are asked for in missing directories (`.claude/*` in a project
// without one, a home that does not exist), and each name is asked for with and without following. Only
// while a plan is computed (with the cache).
std::optional<Stat> implied(const fs::path& p, bool follow) {
    if (follow) {
        Stat l = stat_of(p, false);
        if (l.err != 0 || !S_ISLNK(l.mode)) return l;
        return std::nullopt;
    }
    if (!plain_absolute(p.native())) return std::nullopt;
    // The parent is looked at first: resolve() looks at every ancestor of a path anyway.
    const Stat parent = stat_of(p.parent_path(), false);
    if (parent.err == ENOENT || parent.err == ENOTDIR) return Stat{parent.err, 0};
    if (parent.err == 0 && !S_ISDIR(parent.mode) && !S_ISLNK(parent.mode)) return Stat{ENOTDIR, 0};
    return std::nullopt;
}

Stat stat_of(const fs::path& p, bool follow) {
    std::unordered_map<std::string, Stat>* cache =
        stat_cache ? (follow ? &stat_cache->stat : &stat_cache->lstat) : nullptr;
    if (cache) {
        auto it = cache->find(p.native());
        if (it != cache->end()) return it->second;
        if (std::optional<Stat> known = implied(p, follow)) {
            cache->emplace(p.native(), *known);
            return *known;
        }
    }
    struct stat st {};
    Stat r;
    if ((follow ? ::stat(p.c_str(), &st) : ::lstat(p.c_str(), &st)) == 0)
        r.mode = st.st_mode;
    else
        r.err = errno;
    if (cache) cache->emplace(p.native(), r);
    return r;
}

bool exists_nofollow(const fs::path& p) {
    return stat_of(p, false).err == 0;
}

bool is_dir(const fs::path& p) {
    Stat r = stat_of(p, true);
    return r.err == 0 && S_ISDIR(r.mode);
}

bool is_dir_nofollow(const fs::path& p) {
    Stat r = stat_of(p, false);
    return r.err == 0 && S_ISDIR(r.mode);
}

bool is_link(const fs::path& p) {
    Stat r = stat_of(p, false);
    return r.err == 0 && S_ISLNK(r.mode);
}

// Resolves symlinks in the existing prefix of `p` (what a bind mount would follow) and normalises the rest.
fs::path resolve_uncached(const fs::path& p) {
    std::error_code ec;
    fs::path r = fs::weakly_canonical(p, ec);
    if (ec) return p.lexically_normal();
    std::string s = r.string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

// One plan resolves the same directories again and again (the working directory for each protected name,
// weakly_canonical stats every prefix and reads every component as a link): while a plan is computed,
// results are memoised, and a path's parent is resolved once. The plan only looks at the file system.
thread_local std::unordered_map<std::string, fs::path>* resolve_cache = nullptr;

fs::path resolve(const fs::path& p);

fs::path resolve_step(const fs::path& p) {
    // Only plain absolute paths take the short way: no "." or "..", no repeated or trailing separator.
    if (!plain_absolute(p.native())) return resolve_uncached(p);
    fs::path name = p.filename();
    fs::path candidate = resolve(p.parent_path()) / name;
    Stat st = stat_of(candidate, false);
    if (st.err == 0) return S_ISLNK(st.mode) ? resolve_uncached(candidate) : candidate;
    if (st.err == ENOENT || st.err == ENOTDIR) return candidate;  // the rest does not exist: normalised only
    return resolve_uncached(p);
}

fs::path resolve(const fs::path& p) {
    if (!resolve_cache) return resolve_uncached(p);
    auto it = resolve_cache->find(p.native());
    if (it != resolve_cache->end()) return it->second;
    fs::path r = resolve_step(p);
    resolve_cache->emplace(p.native(), r);
    return r;
}

int depth(const fs::path& p) {
    if (p.native() == "/") return 0;
    return static_cast<int>(std::count(p.native().begin(), p.native().end(), '/'));
}

int rank(MountKind kind) {
    switch (kind) {
        case MountKind::RootReadOnly:
            return 0;
        case MountKind::PrivateTmp:
            return 1;
        case MountKind::Writable:
            return 2;
        case MountKind::ReadOnly:
        case MountKind::ReadOnlyLink:
        case MountKind::Symlink:
            return 3;
        case MountKind::MaskDir:
        case MountKind::MaskFile:
            return 4;
        case MountKind::Proc:
        case MountKind::Dev:
            return 5;
    }
    return 5;
}

bool has_glob(const std::string& s) {
    return s.find_first_of("*?[") != std::string::npos;
}

void glob_walk(const fs::path& base, const std::vector<std::string>& parts, std::size_t i,
               std::vector<fs::path>& out, std::size_t& budget) {
    if (budget == 0) return;
    --budget;
    if (i == parts.size()) {
        if (exists_nofollow(base)) out.push_back(base);
        return;
    }
    const std::string& part = parts[i];
    if (part == "**") {
        glob_walk(base, parts, i + 1, out, budget);  // zero directories
        std::error_code ec;
        if (!is_dir(base)) return;
        for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->is_directory(ec) && !it->is_symlink(ec)) glob_walk(it->path(), parts, i, out, budget);
        }
        return;
    }
    if (!has_glob(part)) {
        glob_walk(base / part, parts, i + 1, out, budget);
        return;
    }
    std::error_code ec;
    if (!is_dir(base)) return;
    for (fs::directory_iterator it(base, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        if (fnmatch(part.c_str(), name.c_str(), 0) == 0) glob_walk(it->path(), parts, i + 1, out, budget);
    }
}

class Planner {
  public:
    explicit Planner(const PlanInput& in) : in_(in) {}

    MountPlan build() {
        add({MountKind::RootReadOnly, "/", "read-only view of /"});
        add({MountKind::PrivateTmp, "/tmp", "private temporary directory"});
        add_writable_roots();
        add_masks();
        add_reexposed();
        add_links_in_masks();
        add_protections();
        add_self();
        add({MountKind::Proc, "/proc", "fresh /proc of the jail's PID namespace"});
        add({MountKind::Dev, "/dev", "minimal /dev"});
        // Why: shallower mounts first, so that nothing a rule mounts is hidden by a later mount above it.
        // /proc and /dev are mounted in their place by depth too: a project below /dev/shm (a scratch tmpfs,
        // the jail has its own) is bound onto the jail's /dev after it exists, and a mask below /dev applies.
        std::stable_sort(plan_.ops.begin(), plan_.ops.end(), [](const MountOp& a, const MountOp& b) {
            if (depth(a.path) != depth(b.path)) return depth(a.path) < depth(b.path);
            return rank(a.kind) < rank(b.kind);
        });
        return std::move(plan_);
    }

  private:
    // Paths in ops are normal (resolved): equal as strings when equal as paths.
    void add(MountOp op) {
        for (const auto& o : plan_.ops)
            if (o.kind == op.kind && o.path.native() == op.path.native()) return;
        plan_.ops.push_back(std::move(op));
    }

    // The paths a rule names: itself, or what its glob matches now (with a notice that later paths are not
    // covered).
    std::vector<fs::path> expand(const policy::PathRule& rule, std::string_view what) {
        if (!rule.glob) return {rule.path};
        auto found = expand_glob(rule.path);
        plan_.notices.push_back(std::string(what) + " glob `" + rule.rule.text + "` (" + rule.path.string() +
                                ") is enforced on the " + std::to_string(found.size()) +
                                " path(s) that exist now; paths created later are not covered");
        return found;
    }

    // The effective state of `p` given the ops so far: the deepest op covering it wins; at equal depth the
    // higher rank.
    const MountOp* covering(const fs::path& p) const {
        const MountOp* best = nullptr;
        int best_depth = -1;
        for (const auto& op : plan_.ops) {
            if (!within(p, op.path)) continue;
            const int d = depth(op.path);
            if (!best || d > best_depth || (d == best_depth && rank(op.kind) > rank(best->kind))) {
                best = &op;
                best_depth = d;
            }
        }
        return best;
    }

    // As the policy does (policy.cpp, follow_allow_write), checked again where the bind is made: an
    // allowWrite path reached through a symlink the command could have planted (the path itself, or a link
    // inside a writable area: `ua/src -> /etc`, also matched by a glob `ua/*`) is followed only into a plain
    // writable area and never to an ancestor of the path. The path itself as a link that lies where the
    // command cannot write and resolves within its own directory (`data/current -> v2`) is the user's own
    // and followed, as srt follows it. Returns why not, or nothing when it may be bound.
    std::optional<std::string> planted_link(const fs::path& raw, const std::vector<fs::path>& plain) {
        const fs::path p = raw.lexically_normal();
        auto in_plain = [&](const fs::path& x) {
            return std::any_of(plain.begin(), plain.end(),
                               [&](const fs::path& root) { return within(x, root); });
        };
        bool suspect = false;
        fs::path at = "/";
        const fs::path relative = p.relative_path();
        std::vector<fs::path> parts(relative.begin(), relative.end());
        for (std::size_t i = 0; i < parts.size(); ++i) {
            fs::path next = at / parts[i];
            if (!exists_nofollow(next)) break;
            if (!is_link(next)) {
                at = next;
                continue;
            }
            const fs::path target = resolve(next);
            if (in_plain(at) || (i + 1 == parts.size() && !within(target, at))) suspect = true;
            at = target;
        }
        if (!suspect) return std::nullopt;
        fs::path r = resolve(p);
        if (is_link(r)) return std::nullopt;  // dangling or a loop: add_root says so
        if (within(p, r)) return "leads through a symlink to " + r.string() + ", above it";
        if (!in_plain(r)) return "leads through a symlink to " + r.string() + ", outside the writable areas";
        return std::nullopt;
    }

    void add_writable_roots() {
        auto add_root = [&](const fs::path& raw, const std::string& why) {
            fs::path p = resolve(raw);
            if (p == "/tmp") return;  // the private tmpfs
            if (!exists_nofollow(p)) {
                plan_.notices.push_back("allowWrite " + raw.string() + " does not exist; not made writable");
                return;
            }
            // Still a symlink after resolution: dangling, or a loop. A bind would follow it and fail.
            if (is_link(p)) {
                plan_.notices.push_back("allowWrite " + raw.string() +
                                        " is a dangling symlink (or a loop); not made writable");
                return;
            }
            add({MountKind::Writable, p, why});
        };
        if (!in_.cwd.empty() && in_.cwd_writable) add_root(in_.cwd, "working directory");
        // The writable areas no symlink leads to: the working directory and the plain allowWrite entries.
        std::vector<fs::path> plain;
        if (!in_.cwd.empty() && in_.cwd_writable) plain.push_back(resolve(in_.cwd));
        for (const auto& rule : in_.filesystem.allow_write)
            if (!rule.glob && resolve(rule.path) == rule.path.lexically_normal()) plain.push_back(rule.path);
        for (const auto& rule : in_.filesystem.allow_write) {
            for (const auto& p : expand(rule, "allowWrite")) {
                if (auto why = planted_link(p, plain)) {
                    plan_.notices.push_back("allowWrite `" + rule.rule.text + "`: " + p.string() + " " +
                                            *why + "; not followed");
                    continue;
                }
                add_root(p, rule.rule.text);
            }
        }
        plan_.writable_roots.push_back("/tmp");
        for (const auto& op : plan_.ops)
            if (op.kind == MountKind::Writable) plan_.writable_roots.push_back(op.path);
    }

    // A deny rule that cannot be resolved cannot be enforced: the run stops (never drop a deny silently).
    bool unresolvable(const fs::path& raw, const policy::PathRule& rule, std::string_view what) {
        if (stat_of(raw, true).err != ELOOP) return false;
        plan_.errors.push_back(std::string(what) + " `" + rule.rule.text + "`: " + raw.string() +
                               " cannot be resolved (a symlink loop), so it cannot be enforced");
        return true;
    }

    void add_masks() {
        for (const auto& rule : in_.filesystem.deny_read) {
            for (const auto& raw : expand(rule, "denyRead")) {
                if (unresolvable(raw, rule, "denyRead")) continue;
                fs::path p = resolve(raw);
                if (!exists_nofollow(p)) continue;  // nothing to hide
                add({is_dir(p) ? MountKind::MaskDir : MountKind::MaskFile, p, rule.rule.text});
            }
        }
    }

    void add_reexposed() {
        for (const auto& rule : in_.filesystem.allow_read) {
            for (const auto& raw : expand(rule, "allowRead")) {
                fs::path p = resolve(raw);
                if (!exists_nofollow(p)) continue;
                const MountOp* cover = covering(p);
                if (cover && (cover->kind == MountKind::MaskDir || cover->kind == MountKind::MaskFile) &&
                    cover->path != p)
                    add({MountKind::ReadOnly, p, rule.rule.text});
            }
        }
    }

    // A mask hides symlinks with everything else. Those directly inside a masked directory that lead to what
    // the jail shows (a re-exposed allowRead path, a writable root) are recreated in the mask: merged-/usr
    // systems reach /usr/bin through /bin and the dynamic loader through /lib64.
    void add_links_in_masks() {
        std::vector<fs::path> masks;
        for (const auto& op : plan_.ops)
            if (op.kind == MountKind::MaskDir) masks.push_back(op.path);
        for (const auto& mask : masks) {
            DIR* listing = ::opendir(mask.c_str());
            if (!listing) continue;
            std::vector<fs::path> links;
            while (const dirent* entry = ::readdir(listing))
                if (entry->d_type == DT_LNK || (entry->d_type == DT_UNKNOWN && is_link(mask / entry->d_name)))
                    links.push_back(mask / entry->d_name);
            ::closedir(listing);
            for (const auto& link : links) {
                const MountOp* cover = covering(link_target(link));
                if (!cover || (cover->kind != MountKind::ReadOnly && cover->kind != MountKind::Writable &&
                               cover->kind != MountKind::PrivateTmp))
                    continue;
                std::error_code ec;
                fs::path text = fs::read_symlink(link, ec);
                if (!ec) add({MountKind::Symlink, link, "symlink into a shown path", text});
            }
        }
    }

    // A path needs protection only where it would otherwise be writable.
    bool writable_here(const fs::path& p) const {
        const MountOp* cover = covering(p);
        return cover && cover->kind == MountKind::Writable;
    }

    // Why: a command that could rewrite cordon's binary (`./build/cordon run` from a checkout) would run its
    // code on the host with the next `cordon run`; and `cordon connect` (ssh's ProxyCommand inside) must be
    // found at the path the environment names, also when that lies below the private /tmp.
    void add_self() {
        if (in_.self_exe.empty()) return;
        fs::path p = resolve(in_.self_exe);
        if (!exists_nofollow(p) || is_link(p)) return;
        const MountOp* cover = covering(p);
        if (!cover) return;
        if (cover->kind == MountKind::Writable)
            protect_existing(p, "cordon's own binary");
        else if (cover->kind == MountKind::PrivateTmp)
            add({MountKind::ReadOnly, p, "cordon's own binary (cordon connect)"});
    }

    void protect_existing(const fs::path& raw, const std::string& why) {
        fs::path p = resolve(raw);
        if (!exists_nofollow(p) || !writable_here(p)) return;
        // Still a symlink after resolution: a dangling one (or a loop). A bind mount would follow it and
        // fail; the link itself is protected instead.
        if (is_link(p)) {
            protect_link(p, why);
            return;
        }
        pin_ancestors(p, why);
        add({MountKind::ReadOnly, p, why});
    }

    // Why: a mount point cannot be renamed or removed (EBUSY), but its parent directory can, and the mount
    // moves with it. `mv .git x && mkdir -p .git/hooks` would leave the read-only hooks under `x` and let the
    // command plant new ones. So every directory between the writable root and a protected path is bound
    // read-write over itself: its contents stay writable, the directory itself can no longer be moved away.
    void pin_ancestors(const fs::path& p, const std::string& why) {
        const MountOp* cover = covering(p);
        if (!cover || cover->kind != MountKind::Writable) return;
        const fs::path root = cover->path;
        for (fs::path a = p.parent_path(); a != root && within(a, root) && a.has_relative_path();
             a = a.parent_path()) {
            const MountOp* c = covering(a);
            if (c && c->kind == MountKind::Writable && c->path != a)
                add({MountKind::Writable, a, std::string(kPinnedWhy) + why});
        }
    }

    void protect(const fs::path& raw, const std::string& why) {
        // A second call for the same path changes nothing (its read-only op or placeholder is there, or it
        // could not be protected and still cannot: the ops added since only pin directories that were
        // writable already), and every always-read-only name in the working directory comes twice: as a
        // deny rule of the policy and as a name of a writable root.
        if (!protected_.insert(raw.native()).second) return;
        fs::path p = resolve(raw);
        if (exists_nofollow(p)) {
            protect_existing(p, why);
            return;
        }
        if (!in_.placeholders) return;  // enforced by the supervisor (jail/notify.cpp)
        // Find the first missing component: its parent exists.
        fs::path first = p;
        fs::path parent = first.parent_path();
        while (first.has_parent_path() && parent.native() != first.native() && !exists_nofollow(parent)) {
            first = std::move(parent);
            parent = first.parent_path();
        }
        if (!is_dir(parent) || !writable_here(first)) return;  // cannot be created anyway
        // A file blocks creating a file or a directory of that name just as well, and removing it afterwards
        // is much cheaper than removing a directory. Only `.git` is a FIFO (see Placeholder).
        bool fifo = first.filename() == ".git";
        for (const auto& ph : plan_.placeholders)
            if (ph.path.native() == first.native()) return;
        pin_ancestors(first, why);
        plan_.placeholders.push_back({first, fifo, why});
        add({MountKind::ReadOnly, first, why + " (not existing: placeholder)"});
    }

    // A symlinked protected name (dotfile managers): what it points to is protected by protect(); the link
    // itself sits in a writable directory, where `rm .bashrc && echo ... > .bashrc` would replace it. A
    // read-only file mounted on the link keeps the name. Only for links to files (a directory cannot be
    // mounted on a symlink) whose parent holds no symlink (the mount goes on the link's own name).
    void protect_link(const fs::path& link, const std::string& why) {
        if (!links_seen_.insert(link).second) return;  // a loop of links
        fs::path target = link_target(link);
        // A dangling link: what it points to must not appear either (written through the link or directly).
        if (target != link && !exists_nofollow(target)) protect(target, why);
        if (resolve(link.parent_path()) != link.parent_path() || is_dir(target) || !writable_here(link)) {
            // With the supervisor (no placeholders) the link stays and what it leads to is protected as the
            // name (write rules protected-moves and protected-links).
            if (in_.placeholders)
                plan_.notices.push_back(link.string() +
                                        " is a symlink; its target is protected, the link is not");
            return;
        }
        // Shown read-only as the jail would see the target; nothing when that is hidden or missing.
        const MountOp* cover = covering(target);
        bool hidden = cover && (cover->kind == MountKind::MaskDir || cover->kind == MountKind::MaskFile);
        fs::path source = exists_nofollow(target) && !is_link(target) && !hidden ? target : fs::path();
        add({MountKind::ReadOnlyLink, link, why + " (a symlink: the link itself)", source});
    }

    // Where a symlink points, absolute and resolved as far as it exists (also for a dangling link, which
    // resolve() leaves as it is).
    fs::path link_target(const fs::path& link) {
        std::error_code ec;
        fs::path to = fs::read_symlink(link, ec);
        if (ec) return link;
        if (to.is_relative()) to = link.parent_path() / to;
        return resolve(to.lexically_normal());
    }

    void add_protections() {
        for (const auto& rule : in_.filesystem.deny_write) {
            if (rule.glob) {
                for (const auto& p : expand(rule, "denyWrite"))
                    if (!unresolvable(p, rule, "denyWrite")) protect_existing(p, rule.rule.text);
            } else if (!unresolvable(rule.path, rule, "denyWrite")) {
                protect(rule.path, rule.rule.text);
            }
        }
        for (const auto& f : in_.files_read)
            protect_existing(f, "settings file read by cordon");
        for (const auto& f : in_.supervisor_files)
            protect_existing(f, "audit log written by cordon");

        // The writable roots the user asked for. Directories pinned over themselves (a `.git` that holds
        // protected hooks) are writable ops too, but not roots: protected names directly inside them
        // (`.git/.bashrc`, `.git/.git`) mean nothing, and scanning them walks every `.git/objects` directory.
        std::vector<fs::path> roots;
        for (const auto& op : plan_.ops)
            if (op.kind == MountKind::Writable && op.why.rfind(kPinnedWhy, 0) != 0 && is_dir(op.path))
                roots.push_back(op.path);
        for (const auto& root : roots) {
            for (const auto& name : in_.filesystem.always_read_only_names)
                protect_name(root, name);
            if (in_.placeholders) scan_nested(root);
        }
        // Home directories inside a writable area (`cd ~ && cordon run --allow-write .`, a writable /home or
        // /): their own names (.ssh, .local/bin, .config/systemd, bin, .claude, ...) and the common ones.
        for (const auto& home : homes_in(roots)) {
            for (const auto& name : in_.filesystem.home_read_only_names)
                protect_name(home, name);
            for (const auto& name : in_.filesystem.always_read_only_names)
                protect_name(home, name);
        }
    }

    void protect_name(const fs::path& dir, const std::string& name) {
        fs::path p = dir / name;
        if (is_link(p)) protect_link(p, "always read-only: " + name);
        protect(p, "always read-only: " + name);
    }

    // The caller's home, /root and /home/*, where a writable root holds them.
    std::vector<fs::path> homes_in(const std::vector<fs::path>& roots) {
        auto writable = [&](const fs::path& p) {
            return std::any_of(roots.begin(), roots.end(), [&](const fs::path& r) { return within(p, r); });
        };
        std::vector<fs::path> homes;
        auto consider = [&](const fs::path& raw) {
            fs::path p = resolve(raw);
            if (is_dir_nofollow(p) && writable(p) && std::find(homes.begin(), homes.end(), p) == homes.end())
                homes.push_back(p);
        };
        if (!in_.home.empty() && in_.home != "/") consider(in_.home);
        consider("/root");
        // A writable /home or /, or a writable root that is someone's home (root started in /home/bob).
        const bool any = writable("/home") || std::any_of(roots.begin(), roots.end(), [](const fs::path& r) {
                             return within(r, "/home") && r != "/home";
                         });
        if (any) {
            if (DIR* listing = ::opendir("/home")) {
                while (const dirent* entry = ::readdir(listing)) {
                    std::string name = entry->d_name;
                    if (name != "." && name != "..") consider(fs::path("/home") / name);
                }
                ::closedir(listing);
            }
        }
        return homes;
    }

    // Existing always-read-only names below a writable root (a nested repository's .git/hooks, a
    // sub-project's .claude/settings.json), to a bounded depth and entry count.
    void scan_nested(const fs::path& root) {
        // One pass over each directory's entries: a name is looked up only when its first component (".git",
        // ".claude", ".bashrc", ...) is among the entries.
        std::set<std::string> firsts;
        for (const auto& name : in_.filesystem.always_read_only_names)
            firsts.insert(fs::path(name).begin()->string());
        std::size_t budget = 20000;
        std::vector<std::pair<fs::path, int>> stack{{root, 0}};
        while (!stack.empty() && budget > 0) {
            auto [dir, d] = stack.back();
            stack.pop_back();
            // readdir's d_type says what an entry is without a stat (directory_iterator's is_directory() and
            // is_symlink() stat each entry; a checkout has thousands).
            DIR* listing = ::opendir(dir.c_str());
            if (!listing) continue;
            while (budget > 0) {
                const dirent* entry = ::readdir(listing);
                if (!entry) break;
                std::string name = entry->d_name;
                if (name == "." || name == "..") continue;
                --budget;
                bool directory = entry->d_type == DT_DIR;  // a symlink (DT_LNK) is not followed
                if (entry->d_type == DT_UNKNOWN) directory = is_dir_nofollow(dir / name);
                if (d > 0 && firsts.count(name)) {
                    // A nested directory holds a protected name's first component: a nested repository's
                    // .git, a sub-project's .claude. What exists below it is protected; what does not
                    // (.git/hooks of a repository that has none yet) gets a placeholder, as at the top: git
                    // would run hooks planted there. A nested name of one component (.bashrc) is protected
                    // where it exists: nothing reads a shell start-up file from a subdirectory.
                    for (const auto& protected_name : in_.filesystem.always_read_only_names) {
                        fs::path rel(protected_name);
                        if (rel.begin()->string() != name) continue;
                        bool nested = std::next(rel.begin()) != rel.end();
                        if (nested && directory)
                            protect(dir / rel, "always read-only: " + protected_name);
                        else if (exists_nofollow(dir / rel))
                            protect_existing(dir / rel, "always read-only: " + protected_name);
                    }
                }
                if (d >= in_.scan_depth || !directory) continue;
                if (name == ".git" || name == "node_modules") continue;
                stack.emplace_back(dir / name, d + 1);
            }
            ::closedir(listing);
        }
        if (budget == 0)
            plan_.notices.push_back("stopped looking for protected files below " + root.string() +
                                    " after 20000 entries; deeper ones are not protected");
    }

    const PlanInput& in_;
    MountPlan plan_;
    std::set<fs::path> links_seen_;
    std::unordered_set<std::string> protected_;  // the paths protect() was given
};

}  // namespace

std::vector<fs::path> expand_glob(const fs::path& pattern) {
    std::vector<std::string> parts;
    for (const auto& part : pattern.relative_path())
        parts.push_back(part.string());
    std::vector<fs::path> out;
    std::size_t budget = 100000;
    glob_walk(pattern.root_path().empty() ? fs::path("/") : pattern.root_path(), parts, 0, out, budget);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

MountPlan make_mount_plan(const PlanInput& input) {
    std::unordered_map<std::string, fs::path> cache;
    StatCache stats;
    struct Guard {
        Guard(std::unordered_map<std::string, fs::path>* c, StatCache* s) {
            resolve_cache = c;
            stat_cache = s;
        }
        ~Guard() {
            resolve_cache = nullptr;
            stat_cache = nullptr;
        }
        Guard(const Guard&) = delete;
        Guard& operator=(const Guard&) = delete;
    } guard(&cache, &stats);
    if (input.filesystem.read_scope.scope != policy::ReadScope::Project) return Planner(input).build();
    // The project read scope (read_scope.cpp): "/" masked, the scope re-exposed.
    const PlanInput scoped = with_read_scope(input);
    MountPlan plan = Planner(scoped).build();
    plan.read_scope = true;
    plan.readable_roots = shown_roots(plan);
    return plan;
}

MountPlan make_mount_plan(const policy::Policy& policy, const fs::path& cwd, const fs::path& home,
                          const std::vector<fs::path>& supervisor_files, const fs::path& self_exe,
                          bool placeholders) {
    const auto& wd = policy.filesystem().working_directory;
    PlanInput input;
    input.filesystem = policy.filesystem();
    input.files_read = policy.files_read();
    input.cwd = cwd;
    input.home = home;
    input.cwd_writable = wd.refusal.empty() || wd.writable;
    input.supervisor_files = supervisor_files;
    input.self_exe = self_exe;
    input.placeholders = placeholders;
    MountPlan plan = make_mount_plan(input);
    if (!input.cwd_writable)
        plan.errors.insert(
            plan.errors.begin(),
            "the working directory is not made writable: " + wd.refusal +
                ". Run from a project directory, or insist with --allow-write . (the protected "
                "paths stay read-only)");
    return plan;
}

std::variant<fs::path, std::string> prepare_audit_log(const fs::path& path) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
    if (fd < 0) return "cannot open the audit log " + path.string() + ": " + std::strerror(errno);
    ::close(fd);
    std::error_code ec;
    fs::path resolved = fs::canonical(path, ec);
    if (ec) return "cannot resolve the audit log " + path.string() + ": " + ec.message();
    return resolved;
}

}  // namespace cordon::jail
