// Symlinks that stand at a protected name when the run starts (`.claude -> dotclaude`, `.vscode -> editor`,
// a home's `.config -> dotfiles/config`, `.git -> realgit` of a --separate-git-dir repository), and where
// they lead. Claude Code, git and the editors follow such a link: `dotclaude/settings.local.json` is the
// project's local settings and `dotclaude/commands/x.md` a command of the agent's, though neither path holds
// a protected name. The write rules decide a write below a link's target as the same write at the protected
// name too (write rule protected-links), and keep the link, each link it passes through and the target in
// place (protected-moves), so that the path the link names cannot be swapped for another.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::policy {

class ProtectedLinks {
  public:
    struct Link {
        std::string named;   // the protected name's path: `/w/.claude`, `/w/.claude/commands`
        std::string target;  // where it led when the run started, resolved as far as it existed
    };

    // What the start-time walk of the writable areas found (policy/git_config.cpp).
    struct Sources {
        std::vector<std::string> symlinks;  // every symlink it met
        std::vector<std::string> roots;     // the writable areas it walked
        // The git directories it did not look into (below the roots, and those gitfiles, commondirs and
        // submodules name): their hooks are looked through.
        std::vector<std::string> git_dirs;
        // Regular files at protected names with other names (device, inode).
        std::vector<std::pair<unsigned long long, unsigned long long>> files;
        // git's configured targets (core.hooksPath directories, included files): looked through as hooks.
        std::vector<std::string> hook_dirs, included;
    };

    // The links that lead from a protected name, found among the walk's symlinks and at the protected names
    // outside the writable areas where the host reads (the homes, each ancestor of a root: git and Claude
    // Code look upwards), with what those protected directories, the links' targets, the git directories'
    // hooks and git's hooks directories hold. A symlink counts when its path, or its path as a link found
    // already names it (`githooks/pre-commit` for `.git/hooks -> githooks`), is a protected name or holds
    // one; each is followed through every link and every directory left by `..` on its way; inside a target,
    // the links where the protected names go on are followed as well. A bind mount in the writable areas of
    // a protected directory (or of a home) counts as a link to it.
    static ProtectedLinks find(const Policy& policy, const Sources& sources);

    // Whether a symlink at a path is a protected name's or holds one (a first, cheap look).
    static std::function<bool(const std::string&)> wanted(const Policy& policy);
    // Whether the regular file `name` of the directory `dir` is looked at for other names (a cheap look
    // first, then the policy): its path is a protected name or lies in one.
    static std::function<bool(const std::string& dir, std::string_view name)> file_wanted(
        const Policy& policy);

    // The writable areas shown at other paths by bind mounts, as find() found them: (the other path, the
    // root).
    const std::vector<std::pair<std::string, std::string>>& elsewhere() const { return elsewhere_; }
    // `path` below `from`, moved below `to`.
    static std::string rebase(const std::string& path, const std::string& from, const std::string& to);

    // `path` (absolute, normal) as each protected name whose target holds it names it: `/w/.claude/x` for
    // `/w/dotclaude/x`. Empty for most paths.
    std::vector<std::string> named_as(const std::string& path) const;
    // Whether `dir` is a link on the way, a directory left by `..` on the way, a target, or an ancestor of
    // one (moving or replacing it changes where the protected name leads). After index().
    bool holds(const std::string& dir) const;
    bool empty() const { return links_.empty(); }
    // The directories find() could not look through (one of the caller's own that cannot be listed, or past
    // its bound of 200,000 entries): a link or a hard link there is unknown (find_targets_for then protects
    // every writable area as a whole).
    const std::vector<std::string>& unsearched() const { return unsearched_; }
    // Links whose target holds a writable area (`.vscode -> /`, `.claude/commands/all -> ../..`): every write
    // there is decided as at the name, said when the run starts.
    const std::vector<std::string>& notices() const { return notices_; }
    const std::vector<Link>& links() const { return links_; }

    // The regular files at protected names that had other names (hard links) when the run started, by
    // device and inode: written through any name, each is the protected file.
    bool holds_file(unsigned long long dev, unsigned long long ino) const;
    bool has_files() const { return !files_.empty(); }
    void add_file(unsigned long long dev, unsigned long long ino);

    // Adds a link and the places it passes through (`hops`); index() before holds().
    void add(Link link, const std::vector<std::string>& hops);
    void index();

  private:
    std::vector<Link> links_;
    std::unordered_multimap<std::string, std::size_t> by_target_;  // target -> index in links_
    std::vector<std::string> places_;                              // every hop and target, sorted by index()
    std::vector<std::pair<unsigned long long, unsigned long long>> files_;  // sorted by index()
    std::vector<std::string> unsearched_, notices_;
    std::vector<std::pair<std::string, std::string>> elsewhere_;
};

}  // namespace cordon::policy
