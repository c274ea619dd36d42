#include "policy/path_components.hpp"

namespace cordon::policy::path_components {

std::vector<std::string> split(const std::string& path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= path.size()) {
        std::size_t end = path.find('/', start);
        if (end == std::string::npos) end = path.size();
        std::string part = path.substr(start, end - start);
        if (!part.empty() && part != ".") out.push_back(std::move(part));
        start = end + 1;
    }
    return out;
}

std::vector<std::string> split_non_empty(std::string_view path) {
    std::vector<std::string> out;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= path.size(); ++i) {
        if (i == path.size() || path[i] == '/') {
            if (i > start) out.emplace_back(path.substr(start, i - start));
            start = i + 1;
        }
    }
    return out;
}

std::string join(const std::vector<std::string>& parts, std::size_t count) {
    std::string out;
    for (std::size_t i = 0; i < count && i < parts.size(); ++i)
        out += "/" + parts[i];
    return out.empty() ? "/" : out;
}

}  // namespace cordon::policy::path_components
