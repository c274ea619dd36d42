#include "jail/read_scope.hpp"

#include <dirent.h>
#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <string_view>

namespace cordon::jail {

namespace fs = std::filesystem;

PlanInput with_read_scope(const PlanInput& input) {
    PlanInput out = input;
    auto& fs = out.filesystem;
    const auto& scope = input.filesystem.read_scope;
    if (scope.scope != policy::ReadScope::Project) return out;

    std::vector<policy::PathRule> deny;
    // Why "/" as a mask and not a list of masks beside the scope: a list would have to name every top-level
    // directory and every sibling of the path down to the working directory (a home of thousands of
    // entries); one tmpfs hides them all, also what appears later. The planner recreates the symlinks of "/"
    // that lead into the scope (/bin -> usr/bin, /lib64 -> usr/lib64 on merged-/usr systems).
    // `allowRead: ["/"]` (or a writable /) puts everything in the scope but the secrets: nothing to mask.
    const bool everything = std::any_of(scope.include.begin(), scope.include.end(),
                                        [](const auto& rule) { return !rule.glob && rule.path == "/"; });
    if (!everything) deny.push_back(policy::PathRule{"/", false, scope.rule});
    std::vector<fs::path> hidden;
    // The secrets' globs name files of a few directories (/etc three times): each is listed once.
    std::map<std::string, std::vector<std::string>> listings;
    auto matches = [&](const fs::path& pattern) {
        const fs::path dir = pattern.parent_path();
        if (pattern.filename().string().find_first_of("*?[") == std::string::npos ||
            dir.string().find_first_of("*?[") != std::string::npos)
            return expand_glob(pattern);
        auto [it, fresh] = listings.try_emplace(dir.string());
        if (fresh)
            if (DIR* listing = ::opendir(dir.c_str())) {
                while (const dirent* entry = ::readdir(listing))
                    if (std::string_view(entry->d_name) != "." && std::string_view(entry->d_name) != "..")
                        it->second.emplace_back(entry->d_name);
                ::closedir(listing);
            }
        std::vector<fs::path> found;
        for (const std::string& name : it->second)
            if (::fnmatch(pattern.filename().c_str(), name.c_str(), 0) == 0) found.push_back(dir / name);
        return found;
    };
    for (const auto& rule : scope.hidden) {
        std::vector<fs::path> found = rule.glob ? matches(rule.path) : std::vector<fs::path>{rule.path};
        for (auto& p : found) {
            deny.push_back(policy::PathRule{p, false, rule.rule});
            hidden.push_back(std::move(p));
        }
    }
    for (const auto& rule : fs.deny_read)
        deny.push_back(rule);
    fs.deny_read = std::move(deny);

    std::vector<policy::PathRule> allow;
    for (const auto& rule : scope.include) {
        const std::string& p = rule.path.native();
        if (p == "/proc" || p == "/dev" || p == "/tmp") continue;  // the jail's own
        if (!rule.glob && std::any_of(hidden.begin(), hidden.end(),
                                      [&](const fs::path& h) { return within(rule.path, h); }))
            continue;  // a secret stays hidden, whatever allowRead says (as Policy::decide_read)
        allow.push_back(rule);
    }
    fs.allow_read = std::move(allow);
    return out;
}

std::vector<fs::path> shown_roots(const MountPlan& plan) {
    std::vector<fs::path> roots;
    const bool masked = std::any_of(plan.ops.begin(), plan.ops.end(), [](const MountOp& op) {
        return op.kind == MountKind::MaskDir && op.path == "/";
    });
    // Ops come shallow to deep: one below a root already listed adds nothing (Landlock rules hold for
    // everything beneath, mounts included).
    auto add = [&](const fs::path& p) {
        if (std::none_of(roots.begin(), roots.end(), [&](const fs::path& r) { return within(p, r); }))
            roots.push_back(p);
    };
    for (const auto& op : plan.ops) {
        switch (op.kind) {
            case MountKind::RootReadOnly:
                if (!masked) add(op.path);
                break;
            case MountKind::PrivateTmp:
            case MountKind::Writable:
            case MountKind::ReadOnly:
            case MountKind::ReadOnlyLink:
            case MountKind::Proc:
            case MountKind::Dev:
                add(op.path);
                break;
            default:
                break;
        }
    }
    return roots;
}

}  // namespace cordon::jail
