#include "agent/command_forms.hpp"

#include <algorithm>
#include <array>

#include "agent/bash_rules.hpp"
#include "agent/shell_split.hpp"

namespace cordon::agent {

namespace {

bool blank_or_newline(char c) {
    return c == ' ' || c == '\t' || c == '\n';
}

// Copies a `$( )`, `$(( ))` or `${ }` starting at text[i] (the `$`) into `out` as written; returns the index
// after it. Quotes inside are skipped over so that a `)` in them does not close it.
std::size_t copy_expansion(std::string_view text, std::size_t i, std::string& out) {
    char open = text[i + 1], close = open == '(' ? ')' : '}';
    int depth = 0;
    std::size_t k = i + 1;
    for (; k < text.size(); ++k) {
        char c = text[k];
        if (c == '\\') {
            ++k;
            continue;
        }
        if (c == '\'' || c == '"') {
            std::size_t end = text.find(c, k + 1);
            if (end == std::string_view::npos) break;
            k = end;
            continue;
        }
        if (c == open) ++depth;
        if (c == close && --depth == 0) break;
    }
    std::size_t end = std::min(k + 1, text.size());
    out.append(text.substr(i, end - i));
    return end;
}

}  // namespace

std::vector<std::string> command_words(std::string_view text) {
    std::vector<std::string> words;
    std::string word;
    bool in_word = false, quoted = false;
    bool skip_next_word = false;  // the target of a redirection
    auto finish = [&] {
        if (in_word) {
            if (skip_next_word)
                skip_next_word = false;
            else
                words.push_back(word);
        }
        word.clear();
        in_word = quoted = false;
    };
    std::size_t i = 0;
    while (i < text.size()) {
        char c = text[i];
        if (blank_or_newline(c)) {
            finish();
            ++i;
        } else if (c == '<' || c == '>' || (c == '&' && i + 1 < text.size() && text[i + 1] == '>')) {
            // A redirection ends the word before it; a word of digits there (2>x) is its descriptor.
            bool fd = in_word && !quoted && !word.empty() &&
                      std::all_of(word.begin(), word.end(), [](char d) { return d >= '0' && d <= '9'; });
            if (fd) {
                word.clear();
                in_word = false;
            }
            finish();
            while (i < text.size() && (text[i] == '<' || text[i] == '>' || text[i] == '&' || text[i] == '|'))
                ++i;
            if (i < text.size() && text[i] == '-') ++i;  // <<- and >&-
            while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
                ++i;
            skip_next_word = true;
        } else if (c == '\\') {
            if (i + 1 < text.size() && text[i + 1] != '\n') word += text[i + 1];
            in_word = quoted = true;
            i += 2;
        } else if (c == '\'') {
            std::size_t end = text.find('\'', i + 1);
            if (end == std::string_view::npos) end = text.size();
            word.append(text.substr(i + 1, end - i - 1));
            in_word = quoted = true;
            i = end + 1;
        } else if (c == '$' && i + 1 < text.size() && text[i + 1] == '\'') {
            std::size_t k = i + 2;
            while (k < text.size() && text[k] != '\'')
                k += text[k] == '\\' ? 2 : 1;
            word.append(text.substr(i + 2, std::min(k, text.size()) - i - 2));
            in_word = quoted = true;
            i = k + 1;
        } else if (c == '"') {
            ++i;
            while (i < text.size() && text[i] != '"') {
                if (text[i] == '\\' && i + 1 < text.size() &&
                    (text[i + 1] == '"' || text[i + 1] == '\\' || text[i + 1] == '$' || text[i + 1] == '`')) {
                    word += text[i + 1];
                    i += 2;
                } else if (text[i] == '$' && i + 1 < text.size() &&
                           (text[i + 1] == '(' || text[i + 1] == '{')) {
                    i = copy_expansion(text, i, word);
                } else {
                    word += text[i++];
                }
            }
            ++i;
            in_word = quoted = true;
        } else if (c == '$' && i + 1 < text.size() && (text[i + 1] == '(' || text[i + 1] == '{')) {
            i = copy_expansion(text, i, word);
            in_word = true;
        } else if (c == '`') {
            std::size_t end = text.find('`', i + 1);
            if (end == std::string_view::npos) end = text.size() - 1;
            word.append(text.substr(i, end + 1 - i));
            in_word = true;
            i = end + 1;
        } else {
            word += c;
            in_word = true;
            ++i;
        }
    }
    finish();
    return words;
}

namespace {

// `NAME=value`, `NAME+=value`, and an array element's `NAME[SUBSCRIPT]=value` / `+=` (`a[0]=1 rm x` runs
// rm as surely as `A=1 rm x` does).
bool assignment(const std::string& word) {
    std::size_t k = 0;
    while (k < word.size() && (word[k] == '_' || std::isalpha(static_cast<unsigned char>(word[k])) ||
                               (k > 0 && std::isdigit(static_cast<unsigned char>(word[k])))))
        ++k;
    if (k == 0 || k >= word.size()) return false;
    if (word[k] == '[') {
        std::size_t close = word.find(']', k + 1);
        if (close == std::string::npos) return false;
        k = close + 1;
        if (k >= word.size()) return false;
    }
    return word[k] == '=' || (word[k] == '+' && k + 1 < word.size() && word[k + 1] == '=');
}

// A wrapper that runs the command after its options: which of its options take a value (as the next word when
// not attached), and how many operands come before the command.
struct WrapperForm {
    std::string_view name;
    std::string_view short_with_value;              // letters: `-n 5`, `-n5`
    std::vector<std::string_view> long_with_value;  // `--adjustment 5` (and `--adjustment=5`)
    int operands = 0;                               // words before the command (timeout's duration)
    bool assignments = false;                       // env: NAME=value words before the command
    bool dash_number = false;                       // nice -5
};

const std::vector<WrapperForm>& wrappers() {
    static const std::vector<WrapperForm> list = {
        {"timeout", "sk", {"--signal", "--kill-after"}, 1},
        {"env",
         "uCSP",
         {"--unset", "--chdir", "--split-string", "--default-signal", "--ignore-signal", "--block-signal"},
         0,
         true},
        {"command", "", {}},
        {"builtin", "", {}},
        {"nohup", "", {}},
        {"nice", "n", {"--adjustment"}, 0, false, true},
        {"exec", "a", {}},
        {"sudo",
         "CDghpRrTtUu",
         {"--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type",
          "--command-timeout", "--other-user", "--user"},
         0,
         true},
        {"doas", "Cu", {}},
        {"time", "fo", {"--format", "--output"}},
        {"xargs",
         "aEedIiLlnPs",
         {"--arg-file", "--delimiter", "--eof", "--replace", "--max-lines", "--max-args", "--max-procs",
          "--max-chars", "--process-slot-var"}},
        {"stdbuf", "ioe", {"--input", "--output", "--error"}},
        {"setsid", "", {}},
        {"ionice", "cnpP", {"--class", "--classdata", "--pid", "--pgid", "--uid"}},
        {"taskset", "", {}, 1},
        {"chrt", "T", {"--sched-runtime", "--sched-period", "--sched-deadline"}, 1},
        {"flock", "wEc", {"--timeout", "--conflict-exit-code", "--command"}, 1},
        {"unshare",
         "RwSG",
         {"--propagation", "--setgroups", "--root", "--wd", "--setuid", "--setgid", "--map-user",
          "--map-group", "--map-users", "--map-groups", "--monotonic", "--boottime"}},
        {"nsenter", "tSG", {"--target", "--setuid", "--setgid"}},
        {"setpriv",
         "",
         {"--reuid", "--regid", "--groups", "--inh-caps", "--ambient-caps", "--bounding-set", "--securebits",
          "--pdeathsig", "--selinux-label", "--apparmor-profile", "--landlock-access", "--landlock-rule",
          "--ruid", "--euid", "--rgid", "--egid"}},
        {"runuser", "ugw", {"--user", "--group", "--supp-group", "--whitelist-environment"}},
        {"watch", "nd", {"--interval", "--differences"}},
        {"unbuffer", "", {}},
        {"chroot", "", {"--userspec", "--groups"}, 1},
        {"caffeinate", "", {}},
        {"catchsegv", "", {}},
        {"fakeroot", "", {}},
        {"proxychains", "f", {}},
        {"torsocks", "", {}},
        {"strace", "abeEIoOpPsSuX", {}},
        {"ltrace", "aAeEnopsSu", {}},
    };
    return list;
}

constexpr std::array<std::string_view, 18> kShells = {"bash", "sh",      "dash", "zsh",   "ksh",  "mksh",
                                                      "ash",  "busybox", "fish", "tcsh",  "csh",  "rbash",
                                                      "rzsh", "rksh",    "lksh", "pdksh", "yash", "posh"};

std::string base_name(const std::string& word) {
    std::size_t slash = word.rfind('/');
    return slash == std::string::npos || slash + 1 == word.size() ? word : word.substr(slash + 1);
}

std::string joined(const std::vector<std::string>& words, std::size_t from) {
    std::string out;
    for (std::size_t k = from; k < words.size(); ++k) {
        if (!out.empty()) out += ' ';
        out += words[k];
    }
    return out;
}

// The index of the command a wrapper runs (words[at] is the wrapper), or words.size() when there is none, or
// npos when its options cannot be read.
std::size_t wrapped_command(const WrapperForm& w, const std::vector<std::string>& words, std::size_t at) {
    std::size_t k = at + 1;
    bool options = true;
    while (k < words.size()) {
        const std::string& word = words[k];
        if (options && word == "--") {
            options = false;
            ++k;
            continue;
        }
        if (options && word.size() > 1 && word[0] == '-') {
            if (w.dash_number && std::isdigit(static_cast<unsigned char>(word[1]))) {
                ++k;
                continue;
            }
            if (word.rfind("--", 0) == 0) {
                std::string name = word.substr(0, word.find('='));
                bool takes = std::find(w.long_with_value.begin(), w.long_with_value.end(), name) !=
                             w.long_with_value.end();
                k += (takes && word.find('=') == std::string::npos) ? 2 : 1;
                continue;
            }
            // Clustered short options: the first one that takes a value takes the rest of the word or the
            // next word.
            std::size_t step = 1;
            for (std::size_t c = 1; c < word.size(); ++c)
                if (w.short_with_value.find(word[c]) != std::string_view::npos) {
                    if (c + 1 == word.size()) step = 2;
                    break;
                }
            k += step;
            continue;
        }
        if (w.assignments && assignment(word)) {
            ++k;
            continue;
        }
        break;
    }
    k += static_cast<std::size_t>(w.operands);
    return std::min(k, words.size());
}

void collect(std::vector<std::string> words, CommandForms& out, int depth);

// Whether bash may run something else than the command word as written: a parameter or command
// substitution, a backslash left from ANSI-C quoting (`$'\x72m'`), a glob, a brace expansion. `[` and `[[`
// are commands of their own.
bool expanded_name(const std::string& word) {
    if (word == "[" || word == "[[") return false;
    return word.find_first_of("$`\\*?[") != std::string::npos ||
           (word.find('{') != std::string::npos && word.size() > 1);
}

// The commands of a shell script given as text (a `-c` script, `eval`'s words, `env -S`).
void collect_script(const std::string& script, CommandForms& out, int depth) {
    auto split = split_command(script);
    if (auto* error = std::get_if<std::string>(&split)) {
        if (out.unsure.empty())
            out.unsure = "a shell script inside the command cannot be split (" + *error + ")";
        collect(command_words(script), out, depth + 1);
        return;
    }
    for (const std::string& part : std::get<std::vector<std::string>>(split)) {
        out.forms.push_back(part);
        collect(command_words(part), out, depth + 1);
    }
}

// `SHELL [options] -c SCRIPT [NAME [ARGS]]`: the script's commands, read as the shells read their options.
// `-c` sets a mode, and the script is the first word that is not an option or an option's value, wherever
// `-c` stood (`bash -c -- 'rm x'`, `bash -o pipefail -c 'rm x'`, `bash -c -e 'rm x'`); `-o`/`+o`/`-O`/`+O`
// take the next word, clustered too (`-euo pipefail`), as do `--rcfile` and `--init-file`; `--` or `-`
// ends the options. fish's `-c`/`-C` and `--command`/`--init-command` take the script as their value.
// Without `-c` the first operand is a script file, which no rule can see. An option the shell would read
// but cordon cannot (an expansion, which may become `-c`) leaves the command unsure.
void shell_script(const std::vector<std::string>& words, std::size_t at, CommandForms& out, int depth) {
    const bool fish = base_name(words[at]) == "fish";
    bool script_mode = false;
    int values = 0;  // option values still to skip
    auto unsure = [&](const std::string& why) {
        if (out.unsure.empty()) out.unsure = why;
    };
    for (std::size_t k = at + 1; k < words.size(); ++k) {
        const std::string& word = words[k];
        if (values > 0) {
            --values;
            continue;
        }
        if (word.find_first_of("$`") != std::string::npos) {
            unsure("a shell's options hold an expansion (`" + word + "`)");
            return;
        }
        if (fish && (word.rfind("--command=", 0) == 0 || word.rfind("--init-command=", 0) == 0)) {
            collect_script(word.substr(word.find('=') + 1), out, depth);
            continue;
        }
        if (fish && (word == "--command" || word == "--init-command")) {
            if (k + 1 < words.size()) collect_script(words[++k], out, depth);
            continue;
        }
        if (word == "--" || word == "-") {
            if (script_mode && k + 1 < words.size()) collect_script(words[k + 1], out, depth);
            return;
        }
        if (word.rfind("--", 0) == 0) {
            if (word == "--rcfile" || word == "--init-file") ++values;
            continue;
        }
        if (word.size() > 1 && (word[0] == '-' || word[0] == '+')) {
            for (std::size_t c = 1; c < word.size(); ++c) {
                char letter = word[c];
                if (letter == 'c' && word[0] == '-') script_mode = true;
                if (letter == 'o' || letter == 'O') ++values;
                if (fish && (letter == 'c' || letter == 'C') && word[0] == '-') {
                    // fish: -c SCRIPT, -cSCRIPT
                    if (c + 1 < word.size()) {
                        collect_script(word.substr(c + 1), out, depth);
                    } else if (k + 1 < words.size()) {
                        collect_script(words[++k], out, depth);
                    }
                    script_mode = false;
                    break;
                }
            }
            continue;
        }
        // The first operand: the script with -c, else a script file the rules cannot see.
        if (script_mode) collect_script(word, out, depth);
        return;
    }
}

// `flock FILE -c SCRIPT`, `flock -c SCRIPT FILE`, `flock --command SCRIPT FILE`, `su -c SCRIPT USER`,
// `runuser -c`, `script -c`: a shell runs SCRIPT. flock reads `-c` after its lock file too, so every word
// is looked at; a cluster ending in `c` (`-oc`) takes the next word, `-cSCRIPT` the rest. Taking a word
// that is not the script only adds forms, which deny and ask rules may match: the safe side.
void command_option_scripts(const std::vector<std::string>& words, std::size_t at, CommandForms& out,
                            int depth) {
    for (std::size_t k = at + 1; k < words.size(); ++k) {
        const std::string& word = words[k];
        if (word == "--command" || word == "--session-command") {
            if (k + 1 < words.size()) collect_script(words[k + 1], out, depth);
        } else if (word.rfind("--command=", 0) == 0 || word.rfind("--session-command=", 0) == 0) {
            collect_script(word.substr(word.find('=') + 1), out, depth);
        } else if (word.size() > 1 && word[0] == '-' && word[1] != '-') {
            std::size_t c = word.find('c');
            if (c == std::string::npos) continue;
            if (c + 1 < word.size()) collect_script(word.substr(c + 1), out, depth);
            if (k + 1 < words.size()) collect_script(words[k + 1], out, depth);
        }
    }
}

void collect(std::vector<std::string> words, CommandForms& out, int depth) {
    if (depth > 16) {
        out.unsure = "commands nested too deeply";
        return;
    }
    std::size_t at = 0;
    for (;;) {
        while (at < words.size() && assignment(words[at]))
            ++at;
        if (at >= words.size()) return;
        out.forms.push_back(joined(words, at));
        if (expanded_name(words[at])) {
            // `x=rm; $x -f v`, `"$x"`, `env $x`, `r?`, `{rm,-f,v}`: bash runs what the expansion becomes,
            // which no rule can match here; Claude Code refuses or asks. So must the hook, when any deny or
            // ask rule exists.
            if (out.unsure.empty())
                out.unsure = "the command name `" + words[at] + "` is an expansion cordon cannot read";
            return;
        }
        std::string name = base_name(words[at]);
        if (name != words[at]) {
            words[at] = name;
            out.forms.push_back(joined(words, at));
        }
        if (name == "eval") {
            collect_script(joined(words, at + 1), out, depth);
            return;
        }
        if (name == "trap") {  // trap ACTION SIGNAL...: the shell runs ACTION as a script later
            std::size_t k = at + 1;
            while (k < words.size() && (words[k] == "--" || words[k] == "-p" || words[k] == "-l"))
                ++k;
            if (k < words.size()) collect_script(words[k], out, depth);
            return;
        }
        if (std::find(kShells.begin(), kShells.end(), name) != kShells.end()) {
            if (name == "busybox" && at + 1 < words.size()) {  // busybox APPLET ...
                ++at;
                continue;
            }
            shell_script(words, at, out, depth);
            return;
        }
        if (name == "su" || name == "script") {
            command_option_scripts(words, at, out, depth);
            return;
        }
        auto w = std::find_if(wrappers().begin(), wrappers().end(),
                              [&](const WrapperForm& candidate) { return candidate.name == name; });
        if (w == wrappers().end()) return;
        if (name == "env")
            for (std::size_t k = at + 1; k < words.size(); ++k) {
                const std::string& word = words[k];
                if (word == "-S" || word == "--split-string") {
                    if (k + 1 < words.size()) collect_script(words[k + 1], out, depth);
                } else if (word.rfind("-S", 0) == 0 && word.size() > 2) {
                    collect_script(word.substr(2), out, depth);
                } else if (word.rfind("--split-string=", 0) == 0) {
                    collect_script(word.substr(15), out, depth);
                }
            }
        if (name == "flock" || name == "runuser") command_option_scripts(words, at, out, depth);
        if (name == "command" && at + 1 < words.size() && (words[at + 1] == "-v" || words[at + 1] == "-V"))
            return;  // only names the command
        std::size_t next = wrapped_command(*w, words, at);
        if (next >= words.size()) return;
        at = next;
    }
}

}  // namespace

CommandForms command_forms(std::string_view simple_command) {
    CommandForms out;
    out.forms.emplace_back(trim_shell_space(simple_command));
    out.forms.emplace_back(without_assignments(simple_command));
    collect(command_words(simple_command), out, 0);
    std::sort(out.forms.begin() + 1, out.forms.end());
    out.forms.erase(std::unique(out.forms.begin() + 1, out.forms.end()), out.forms.end());
    return out;
}

}  // namespace cordon::agent
