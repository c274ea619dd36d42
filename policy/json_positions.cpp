#include "policy/json_positions.hpp"

#include <algorithm>

namespace cordon::policy::detail {
namespace {

// A recursive-descent walk over valid JSON that records the line where each value starts.
class Scanner {
  public:
    Scanner(std::string_view text, std::unordered_map<std::string, int>& lines,
            std::unordered_map<std::string, std::vector<int>>& arrays)
        : text_(text), lines_(lines), arrays_(arrays) {}

    void run() {
        if (text_.substr(0, 3) == "\xEF\xBB\xBF")
            pos_ = 3;  // a UTF-8 byte order mark, which nlohmann skips too
        skip_space();
        if (pos_ < text_.size()) value(std::string());
    }

  private:
    void skip_space() {
        while (pos_ < text_.size()) {
            char c = text_[pos_];
            if (c == '\n') {
                ++line_;
            } else if (c != ' ' && c != '\t' && c != '\r') {
                return;
            }
            ++pos_;
        }
    }

    void value(const std::string& path, std::vector<int>* element_lines = nullptr) {
        if (element_lines != nullptr) {
            element_lines->push_back(line_);
        } else {
            lines_[path] = line_;
        }
        if (pos_ >= text_.size()) return;
        switch (text_[pos_]) {
            case '{':
            case '[':
                // Settings keys sit a few levels deep; deeper containers (in keys cordon ignores) are skipped
                // without recursion, so a hostile file cannot exhaust the stack.
                if (depth_ >= kMaxDepth) {
                    skip_container();
                } else {
                    ++depth_;
                    if (text_[pos_] == '{') {
                        object(path);
                    } else {
                        array(path);
                    }
                    --depth_;
                }
                break;
            case '"':
                string();
                break;
            default:
                while (pos_ < text_.size() &&
                       std::string_view(",]} \t\r\n").find(text_[pos_]) == std::string_view::npos)
                    ++pos_;
        }
    }

    // Skips a whole container iteratively (strings may hold brackets), counting lines.
    void skip_container() {
        std::size_t open = 0;
        while (pos_ < text_.size()) {
            const char c = text_[pos_];
            if (c == '"') {
                string();
                continue;
            }
            ++pos_;
            if (c == '\n') {
                ++line_;
            } else if (c == '{' || c == '[') {
                ++open;
            } else if ((c == '}' || c == ']') && --open == 0) {
                return;
            }
        }
    }

    void object(const std::string& path) {
        ++pos_;  // '{'
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == '}') {
            ++pos_;
            return;
        }
        while (pos_ < text_.size()) {
            skip_space();
            std::string key = string();
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ':') ++pos_;
            skip_space();
            value(append_key(path, key));
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < text_.size()) ++pos_;  // '}'
            return;
        }
    }

    void array(const std::string& path) {
        ++pos_;  // '['
        skip_space();
        if (pos_ < text_.size() && text_[pos_] == ']') {
            ++pos_;
            return;
        }
        std::vector<int>& lines = arrays_[path];
        for (std::size_t index = 0; pos_ < text_.size(); ++index) {
            skip_space();
            // Scalars need no path of their own; containers do (their members are recorded by path).
            const char c = pos_ < text_.size() ? text_[pos_] : '\0';
            if (c == '{' || c == '[') {
                lines.push_back(line_);
                value(append_index(path, index));
            } else {
                value(std::string(), &lines);
            }
            skip_space();
            if (pos_ < text_.size() && text_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (pos_ < text_.size()) ++pos_;  // ']'
            return;
        }
    }

    static void put_utf8(std::string& out, unsigned cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xc0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xe0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (cp & 0x3f));
        }
    }

    unsigned hex4() {
        unsigned v = 0;
        for (int i = 0; i < 4 && pos_ < text_.size(); ++i, ++pos_) {
            char c = text_[pos_];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f')
                v |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F')
                v |= static_cast<unsigned>(c - 'A' + 10);
        }
        return v;
    }

    // Reads a string literal, decoding escapes (keys become path components exactly as nlohmann decodes
    // them).
    std::string string() {
        std::string out;
        if (pos_ >= text_.size() || text_[pos_] != '"') return out;
        ++pos_;
        while (pos_ < text_.size()) {
            char c = text_[pos_++];
            if (c == '"') break;
            if (c != '\\' || pos_ >= text_.size()) {
                out += c;
                continue;
            }
            char e = text_[pos_++];
            switch (e) {
                case 'b':
                    out += '\b';
                    break;
                case 'f':
                    out += '\f';
                    break;
                case 'n':
                    out += '\n';
                    break;
                case 'r':
                    out += '\r';
                    break;
                case 't':
                    out += '\t';
                    break;
                case 'u': {
                    unsigned cp = hex4();
                    if (cp >= 0xd800 && cp < 0xdc00 && pos_ + 1 < text_.size() && text_[pos_] == '\\' &&
                        text_[pos_ + 1] == 'u') {
                        pos_ += 2;
                        unsigned low = hex4();
                        cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
                    }
                    put_utf8(out, cp);
                    break;
                }
                default:
                    out += e;
            }
        }
        return out;
    }

    std::string_view text_;
    std::unordered_map<std::string, int>& lines_;
    std::unordered_map<std::string, std::vector<int>>& arrays_;
    static constexpr int kMaxDepth = 64;
    std::size_t pos_ = 0;
    int line_ = 1;
    int depth_ = 0;
};

}  // namespace

JsonPositions::JsonPositions(std::string_view text) {
    Scanner(text, lines_, arrays_).run();
}

int JsonPositions::line_of(const std::string& path) const {
    if (!path.empty() && path.back() == ']') {
        auto open = path.rfind('[');
        if (open != std::string::npos) {
            auto array = arrays_.find(path.substr(0, open));
            if (array != arrays_.end()) {
                std::size_t index = 0;
                for (std::size_t i = open + 1; i + 1 < path.size(); ++i) {
                    if (path[i] < '0' || path[i] > '9') return 0;
                    index = index * 10 + static_cast<std::size_t>(path[i] - '0');
                }
                return index < array->second.size() ? array->second[index] : 0;
            }
        }
    }
    auto it = lines_.find(path);
    return it == lines_.end() ? 0 : it->second;
}

LineColumn line_column(std::string_view text, std::size_t offset) {
    offset = std::min(offset, text.size());
    LineColumn lc;
    std::size_t line_start = 0;
    for (std::size_t i = 0; i < offset; ++i) {
        if (text[i] == '\n') {
            ++lc.line;
            line_start = i + 1;
        }
    }
    lc.column = static_cast<int>(offset - line_start) + 1;
    return lc;
}

std::string append_key(const std::string& path, std::string_view key) {
    if (path.empty()) return std::string(key);
    std::string out;
    out.reserve(path.size() + 1 + key.size());
    out.append(path).append(".").append(key);
    return out;
}

std::string append_index(const std::string& path, std::size_t index) {
    return path + "[" + std::to_string(index) + "]";
}

}  // namespace cordon::policy::detail
