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
#include <vector>

#include "policy/policy.hpp"

namespace cordon::policy {

class ProtectedLinks {
  public:
    struct Link {
        std::string named;   // the protected name's path: `/w/.claude`, `/w/.claude/commands`
        std::string target;  // where it led when the run started, resolved as far as it existed
    };

    // The links among `symlinks` (absolute normal paths of symlinks the start-time walk met, see
    // git_config::SearchLimits::keep_link) whose path is or holds a protected name of `policy`, followed
    // through every link on their way; then, inside each target, the links where the protected names go on
    // (`dotclaude/commands -> ../cmds` for `.claude/commands`).
    static ProtectedLinks find(const Policy& policy, const std::vector<std::string>& symlinks);

    // Whether a symlink at a path is one find() looks for: the path is a protected name or holds one.
    static std::function<bool(const std::string&)> wanted(const Policy& policy);

    // `path` (absolute, normal) as each protected name whose target holds it names it: `/w/.claude/x` for
    // `/w/dotclaude/x`. Empty for most paths.
    std::vector<std::string> named_as(const std::string& path) const;
    // Whether `dir` is a link on the way, a target, or an ancestor of one (moving or replacing it changes
    // where the protected name leads).
    bool holds(const std::string& dir) const;
    bool empty() const { return links_.empty(); }
    const std::vector<Link>& links() const { return links_; }

    // Adds a link and the places it passes through (for find() and tests).
    void add(Link link, const std::vector<std::string>& hops);

  private:
    std::vector<Link> links_;
    std::vector<std::string> places_;  // every hop and target
};

}  // namespace cordon::policy
