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

// Whether `option` may be one of the entry's refused options, read as the programs' option parsers read
// them: `--output=g`, an unambiguous abbreviation (`--compress-prog=sh` for --compress-program: getopt_long
// and git both take those), and a short option anywhere in a cluster (`-uo g` is `-u -o g`). A letter that
// is really the value of an earlier option (`-t-o`) is counted too: asking is the safe side.
bool refused(const ReadOnly& entry, const std::string& option) {
    const bool long_option = option.rfind("--", 0) == 0;
    const std::string name = option.substr(0, option.find('='));
    return std::any_of(
        entry.refused_options.begin(), entry.refused_options.end(), [&](std::string_view refused) {
            if (option.rfind(refused, 0) == 0) return true;
            if (long_option)
                return refused.rfind("--", 0) == 0 && name.size() > 2 && refused.rfind(name, 0) == 0;
            return refused.size() == 2 && refused[0] == '-' &&
                   option.find(refused[1], 1) != std::string::npos;
        });
}

// A path-like part of an option (`-f/etc/x`, `--file=../x`, `-f~/x`): inside the working directory.
bool option_value_ok(const std::string& option) {
    std::size_t equals = option.find('=');
    if (option.rfind("--", 0) == 0) {
        if (equals == std::string::npos) return true;
        std::string value = option.substr(equals + 1);
        bool path_like = value.find_first_of("/~") != std::string::npos || value.rfind("..", 0) == 0;
        return !path_like || safe_path(value);
    }
    // A short cluster: its value, if any, is attached; whatever holds a path must stay inside.
    std::size_t path = option.find_first_of("/~");
    if (path != std::string::npos || option.find("..") != std::string::npos) {
        std::size_t start = std::min(path, option.find(".."));
        return safe_path(option.substr(start));
    }
    return true;
}

// A git operand: a revision or a path. A path outside the repository (`/etc/x`, `~/x`, `../x`) makes
// `git diff` compare files outside it (--no-index is implied) and is what Claude Code asks about.
bool git_operand_ok(const std::string& word) {
    if (!safe_text(word)) return false;
    if (word[0] == '/' || word[0] == '~') return false;
    std::size_t start = 0;
    for (;;) {
        std::size_t slash = word.find('/', start);
        if (word.substr(start, slash - start) == "..") return false;
        if (slash == std::string::npos) return true;
        start = slash + 1;
    }
}

bool operands_ok(const ReadOnly& entry, const std::vector<std::string>& words, std::size_t from, bool git) {
    bool options = true;
    for (std::size_t k = from; k < words.size(); ++k) {
        const std::string& word = words[k];
        if (options && word == "--") {
            options = false;
            continue;
        }
        if (options && word.size() > 1 && word[0] == '-') {
            if (refused(entry, word) || !safe_text(word) || !option_value_ok(word)) return false;
            continue;
        }
        if (entry.no_operands) return false;
        if (git ? !git_operand_ok(word) : entry.text_operands ? !safe_text(word) : !safe_path(word))
            return false;
    }
    return true;
}

// The redirections of `part`: output only to /dev/null or a descriptor (`2>&1`, `> /dev/null`); input from
// a descriptor, a here-document or here-string, /dev/null, or a file inside the working directory
// (`cat </etc/x` reads outside it, which Claude Code asks about). Past a quote or an expansion the words
// cannot be told apart here: then no redirection at all.
bool redirections_ok(std::string_view part) {
    for (std::size_t i = 0; i < part.size(); ++i) {
        char c = part[i];
        if (c == '\'' || c == '"' || c == '`' || c == '$' || c == '\\')
            return part.find_first_of("<>", i) == std::string_view::npos;
        if (c == '<') {
            std::size_t k = i + 1;
            if (k < part.size() && part[k] == '<') {  // << and <<<: text in the command itself
                i = part.find_first_not_of('<', k) - 1;
                continue;
            }
            if (k < part.size() && part[k] == '>') return false;  // <> opens for writing
            if (k < part.size() && part[k] == '&') {
                ++k;
                if (k < part.size() && (std::isdigit(static_cast<unsigned char>(part[k])) || part[k] == '-'))
                    continue;
                return false;
            }
            while (k < part.size() && (part[k] == ' ' || part[k] == '\t'))
                ++k;
            std::size_t end = part.find_first_of(" \t;&|<>()", k);
            if (end == std::string_view::npos) end = part.size();
            std::string target(part.substr(k, end - k));
            if (target != "/dev/null" && !safe_path(target)) return false;
            i = end - 1;
            continue;
        }
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
        return operands_ok(*it, words, 2, true);
    }
    auto it = std::find_if(commands().begin(), commands().end(),
                           [&](const ReadOnly& entry) { return entry.name == name; });
    if (it == commands().end()) return false;
    return operands_ok(*it, words, 1, false);
}

}  // namespace cordon::agent
