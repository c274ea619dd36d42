// Positions inside a settings file: the line of every JSON value by its JSON path (`sandbox.network.
// allowedDomains[2]`), found by a small scan of the already-validated text, and line/column of a byte offset
// (for parse errors). Internal to the policy module.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace cordon::policy::detail {

class JsonPositions {
  public:
    // `text` must be valid JSON (nlohmann accepted it).
    explicit JsonPositions(std::string_view text);
    // 1-based line of the value at `path`, or 0 when unknown.
    int line_of(const std::string& path) const;

  private:
    // Lines of values that are not array elements, by path; lines of array elements, by the array's path (a
    // settings file may hold 100,000 entries: one vector per array keeps the scan cheap).
    std::unordered_map<std::string, int> lines_;
    std::unordered_map<std::string, std::vector<int>> arrays_;
};

struct LineColumn {
    int line = 1;
    int column = 1;
};
// The 1-based line and column of the byte at `offset` (0-based) in `text`.
LineColumn line_column(std::string_view text, std::size_t offset);

// Joins a JSON path: append_key("sandbox", "network") = "sandbox.network"; append_index("a", 2) = "a[2]".
std::string append_key(const std::string& path, std::string_view key);
std::string append_index(const std::string& path, std::size_t index);

}  // namespace cordon::policy::detail
