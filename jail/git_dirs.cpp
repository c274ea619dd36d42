#include "jail/git_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <array>
#include <string_view>

namespace cordon::jail::git_dirs {

bool holds_signature(int dirfd) {
    struct stat st {};
    auto has = [&](const char* name) { return ::fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0; };
    return has("HEAD") && (has("objects") || has("refs") || has("commondir"));
}

bool is_signature_name(const std::string& name) {
    return name == "HEAD" || name == "objects" || name == "refs" || name == "commondir";
}

std::vector<std::size_t> candidate_dirs(const std::vector<std::string>& components) {
    static constexpr std::array<std::string_view, 6> kInside = {"hooks",           "config",  "commondir",
                                                                "config.worktree", "modules", "worktrees"};
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i + 1 < components.size(); ++i) {
        if (components[i] == ".git") continue;
        for (std::string_view name : kInside)
            if (components[i + 1] == name) {
                out.push_back(i);
                break;
            }
    }
    return out;
}

}  // namespace cordon::jail::git_dirs
