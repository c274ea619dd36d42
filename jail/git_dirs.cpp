#include "jail/git_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

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

}  // namespace cordon::jail::git_dirs
