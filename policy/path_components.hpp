// A path as its components and back: what the write rules (policy/write_rules.cpp) and the jail's resolution
// of a caller's path (jail/jail_view.cpp) both take apart and put together, one component at a time.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace cordon::policy::path_components {

// Splits on '/', dropping empty and "." components ("a//./b" = a, b); ".." stays (symlinks decide it).
std::vector<std::string> split(const std::string& path);

// The non-empty components of a slash-separated path ("/a//b/" -> {"a", "b"}; "." stays one): patterns and
// paths that are already normal (the policy's rules, the Seatbelt profile's globs).
std::vector<std::string> split_non_empty(std::string_view path);

// "/" + the first `count` components joined with '/' ("/" for none; at most all of them).
std::string join(const std::vector<std::string>& parts, std::size_t count);

}  // namespace cordon::policy::path_components
