#include "agent/bash_rules.hpp"

#include <string>
#include <vector>

#include "agent/shell_split.hpp"

namespace cordon::agent {

namespace {

// A pattern of literal pieces joined by `*` (any characters). `\*` and `\\` are literals.
struct Wildcard {
    std::vector<std::string> pieces;  // pieces.size() - 1 stars
};

Wildcard parse_wildcard(std::string_view pattern) {
    Wildcard w;
    w.pieces.emplace_back();
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        char c = pattern[i];
        if (c == '\\' && i + 1 < pattern.size() && (pattern[i + 1] == '*' || pattern[i + 1] == '\\')) {
            w.pieces.back().push_back(pattern[++i]);
        } else if (c == '*') {
            w.pieces.emplace_back();
        } else {
            w.pieces.back().push_back(c);
        }
    }
    return w;
}

bool wildcard_matches(const Wildcard& w, std::string_view text) {
    const auto& p = w.pieces;
    if (p.size() == 1) return text == p[0];
    if (text.substr(0, p.front().size()) != p.front()) return false;
    std::size_t pos = p.front().size();
    for (std::size_t k = 1; k + 1 < p.size(); ++k) {
        std::size_t found = text.find(p[k], pos);
        if (found == std::string_view::npos) return false;
        pos = found + p[k].size();
    }
    const std::string& last = p.back();
    return text.size() >= pos + last.size() && text.substr(text.size() - last.size()) == last;
}

bool has_unescaped_star(std::string_view pattern) {
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] == '\\') {
            ++i;
        } else if (pattern[i] == '*') {
            return true;
        }
    }
    return false;
}

bool prefix_matches(std::string_view prefix, std::string_view command) {
    if (command.substr(0, prefix.size()) != prefix) return false;
    return command.size() == prefix.size() || shell_space(command[prefix.size()]);
}

}  // namespace

bool specifier_matches(std::string_view specifier, std::string_view command) {
    command = trim_shell_space(command);
    specifier = trim_shell_space(specifier);
    if (specifier.empty() || specifier == "*") return true;
    if (specifier.size() > 2 && specifier.substr(specifier.size() - 2) == ":*" &&
        !has_unescaped_star(specifier.substr(0, specifier.size() - 2)))
        return prefix_matches(specifier.substr(0, specifier.size() - 2), command);
    if (!has_unescaped_star(specifier)) return parse_wildcard(specifier).pieces[0] == command;
    Wildcard w = parse_wildcard(specifier);
    if (wildcard_matches(w, command)) return true;
    // `ls *`: one trailing ` *` is optional, so the bare `ls` matches too.
    if (w.pieces.size() == 2 && w.pieces[1].empty() && !w.pieces[0].empty() && w.pieces[0].back() == ' ')
        return command == trim_shell_space(w.pieces[0]);
    return false;
}

bool bash_rule_matches(std::string_view rule, std::string_view command) {
    if (rule == "Bash") return true;
    constexpr std::string_view kOpen = "Bash(";
    if (rule.size() < kOpen.size() + 1 || rule.substr(0, kOpen.size()) != kOpen || rule.back() != ')')
        return false;
    return specifier_matches(rule.substr(kOpen.size(), rule.size() - kOpen.size() - 1), command);
}

bool excluded_command_matches(std::string_view entry, std::string_view command) {
    entry = trim_shell_space(entry);
    if (entry.size() > 6 && entry.substr(0, 5) == "Bash(" && entry.back() == ')')
        entry = entry.substr(5, entry.size() - 6);
    if (has_unescaped_star(entry)) return specifier_matches(entry, command);
    return prefix_matches(entry, trim_shell_space(command));
}

std::string_view without_assignments(std::string_view command) {
    command = trim_shell_space(command);
    for (;;) {
        std::size_t k = 0;
        auto name_char = [](char c, bool first) {
            return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                   (!first && c >= '0' && c <= '9');
        };
        while (k < command.size() && name_char(command[k], k == 0))
            ++k;
        if (k == 0 || k >= command.size()) return command;
        if (command[k] == '[') {  // an array element: a[0]=1
            std::size_t close = command.find(']', k + 1);
            if (close == std::string_view::npos ||
                command.substr(k + 1, close - k - 1).find_first_of(" \t\n'\"$`\\") != std::string_view::npos)
                return command;
            k = close + 1;
        }
        if (k < command.size() && command[k] == '+') ++k;
        if (k >= command.size() || command[k] != '=') return command;
        std::size_t end = k + 1;
        while (end < command.size() && !shell_space(command[end])) {
            char c = command[end];
            if (c == '\'' || c == '"' || c == '$' || c == '`' || c == '\\') return command;
            ++end;
        }
        if (end >= command.size()) return command;  // only assignments: nothing runs
        command = trim_shell_space(command.substr(end));
    }
}

}  // namespace cordon::agent
