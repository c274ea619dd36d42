#include "agent/read_only.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "agent/command_forms.hpp"

namespace cordon::agent {

namespace {

struct ReadOnly {
    std::string_view name;
    std::vector<std::string_view> refused_options;  // prefixes of options that write or execute
    bool text_operands = false;                     // operands are text, not paths (echo, printf, tr)
    bool no_operands = false;                       // hostname, date: an operand would set something
};

const std::vector<ReadOnly>& commands() {
    static const std::vector<ReadOnly> list = {
        {"ls", {}},
        {"cat", {}},
        {"head", {}},
        {"tail", {}},
        {"wc", {"--files0-from"}},
        {"grep", {}},
        {"rg", {"--pre", "--hostname-bin", "--search-zip", "-z"}},
        {"find",
         {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprintf", "-fls", "-fprint0"}},
        {"pwd", {}},
        {"echo", {}, true},
        {"printf", {"-v"}, true},
        {"true", {}},
        {"whoami", {}},
        {"id", {}},
        {"date", {"-s", "--set", "-f", "--file"}, false, true},
        {"uname", {}},
        {"ps", {}},
        {"df", {}},
        {"du", {}},
        {"file", {"-C", "--compile", "-m", "--magic-file"}},
        {"stat", {}},
        {"tree", {"-o", "-R"}},
        {"sort", {"-o", "--output", "-T", "--temporary-directory", "--compress-program"}},
        {"cut", {}},
        {"diff", {"--output"}},
        {"basename", {}, true},
        {"dirname", {}, true},
        {"realpath", {}},
        {"readlink", {}},
        {"test", {}, true},
        {"[", {}, true},
        {"seq", {}, true},
        {"sleep", {}, true},
        {"uptime", {}},
        {"hostname", {}, false, true},
        {"nproc", {}},
        {"free", {}},
        {"tr", {}, true},
        {"base64", {}},
        {"md5sum", {}},
        {"sha1sum", {}},
        {"sha256sum", {}},
        {"od", {}},
        {"strings", {}},
        {"column", {}},
        {"nl", {}},
        {"fold", {}},
        {"rev", {}},
        {"tac", {}},
        {"expand", {}},
        {"paste", {}},
        {"cmp", {}},
        {"which", {}, true},
        {"type", {}, true},
        {"jq", {"--rawfile", "--slurpfile", "-L"}, true},
        {"lsof", {}},
        {"netstat", {}},
        {"ss", {"-K", "--kill", "-D", "--diag"}},
        {"history", {"-"}, false, true},
    };
    return list;
}

// git subcommands Claude Code runs unprompted, with the options that would make them write.
const std::vector<ReadOnly>& git_commands() {
    static const std::vector<ReadOnly> list = {
        {"status", {}},
        {"log", {"--output", "--ext-diff", "--textconv"}},
        {"diff", {"--output", "--ext-diff", "--textconv", "--no-index"}},
        {"show", {"--output", "--ext-diff", "--textconv"}},
        {"rev-parse", {}},
        {"ls-files", {}},
        {"blame", {"--contents"}},
        {"grep", {"-O", "--open-files-in-pager", "--textconv"}},
    };
    return list;
}

bool safe_path(const std::string& word) {
    if (word.empty() || word[0] == '/' || word[0] == '~') return false;
    if (word.find_first_of("$`\\'\"{}[]\r\n") != std::string::npos) return false;
    // No `..` component: the operand stays inside the working directory.
    std::size_t start = 0;
    for (;;) {
        std::size_t slash = word.find('/', start);
        if (word.substr(start, slash - start) == "..") return false;
        if (slash == std::string::npos) return true;
        start = slash + 1;
    }
}

// Text operands may expand a variable (`echo $HOME`), nothing that runs a command.
bool safe_text(const std::string& word) {
    if (word.find_first_of("`\r") != std::string::npos) return false;
    for (std::size_t k = word.find('$'); k != std::string::npos; k = word.find('$', k + 1))
        if (k + 1 < word.size() && (word[k + 1] == '(' || word[k + 1] == '\'' || word[k + 1] == '{'))
            return false;
    return true;
}

bool refused(const ReadOnly& entry, const std::string& option) {
    return std::any_of(entry.refused_options.begin(), entry.refused_options.end(),
                       [&](std::string_view prefix) { return option.rfind(prefix, 0) == 0; });
}

bool operands_ok(const ReadOnly& entry, const std::vector<std::string>& words, std::size_t from) {
    for (std::size_t k = from; k < words.size(); ++k) {
        const std::string& word = words[k];
        if (word.size() > 1 && word[0] == '-') {
            if (refused(entry, word) || !safe_text(word)) return false;
            continue;
        }
        if (entry.no_operands) return false;
        if (entry.text_operands ? !safe_text(word) : !safe_path(word)) return false;
    }
    return true;
}

// The redirections of `part`: only to /dev/null or a descriptor (`2>&1`, `> /dev/null`), and input ones.
bool redirections_ok(std::string_view part) {
    for (std::size_t i = 0; i < part.size(); ++i) {
        char c = part[i];
        if (c == '\'' || c == '"' || c == '`' || c == '$') return part.find('>') == std::string_view::npos;
        if (c != '>') continue;
        std::size_t k = i + 1;
        if (k < part.size() && (part[k] == '>' || part[k] == '|')) ++k;
        if (k < part.size() && part[k] == '&') {
            ++k;
            if (k < part.size() && std::isdigit(static_cast<unsigned char>(part[k]))) continue;
            return false;
        }
        while (k < part.size() && part[k] == ' ')
            ++k;
        if (part.substr(k, 9) != "/dev/null") return false;
        std::size_t end = k + 9;
        if (end < part.size() && part[end] != ' ' && part[end] != '\t') return false;
        i = end - 1;
    }
    return true;
}

}  // namespace

bool read_only_command(std::string_view part) {
    // Claude Code asks for anything it cannot read plainly: a substitution, a leading assignment, \r.
    if (part.find_first_of("`\r") != std::string_view::npos || part.find("$(") != std::string_view::npos ||
        part.find("<(") != std::string_view::npos || part.find(">(") != std::string_view::npos)
        return false;
    if (!redirections_ok(part)) return false;
    std::vector<std::string> words = command_words(part);
    if (words.empty()) return false;
    const std::string& name = words[0];
    if (name.find('=') != std::string::npos) return false;
    if (name == "git") {
        if (words.size() < 2) return false;
        const std::string& sub = words[1];
        if (sub == "branch" || sub == "tag" || sub == "remote" || sub == "stash" || sub == "config") {
            // Listing only.
            if (sub == "stash") return words.size() == 3 && words[2] == "list";
            if (sub == "config") return words.size() == 4 && words[2] == "--get" && safe_text(words[3]);
            for (std::size_t k = 2; k < words.size(); ++k)
                if (words[k] != "-v" && words[k] != "-a" && words[k] != "-r" && words[k] != "--list" &&
                    words[k] != "-l" && words[k] != "-vv")
                    return false;
            return true;
        }
        auto it = std::find_if(git_commands().begin(), git_commands().end(),
                               [&](const ReadOnly& entry) { return entry.name == sub; });
        if (it == git_commands().end()) return false;
        // Operands of git's read commands are revisions and paths: text without expansions, no `-c`-like
        // options that would run programs.
        ReadOnly entry = *it;
        entry.text_operands = true;
        return operands_ok(entry, words, 2);
    }
    auto it = std::find_if(commands().begin(), commands().end(),
                           [&](const ReadOnly& entry) { return entry.name == name; });
    if (it == commands().end()) return false;
    return operands_ok(*it, words, 1);
}

}  // namespace cordon::agent
