#include "agent/shell_split.hpp"

#include <algorithm>
#include <array>

namespace cordon::agent {

// Not \r: to bash a carriage return is an ordinary character of a word, so `a\r#$(b)` is one word whose
// substitution runs, not a word and a comment.
bool shell_space(char c) {
    return c == ' ' || c == '\t' || c == '\n';
}

std::string_view trim_shell_space(std::string_view text) {
    while (!text.empty() && shell_space(text.front()))
        text.remove_prefix(1);
    while (!text.empty() && shell_space(text.back()))
        text.remove_suffix(1);
    return text;
}

namespace {

bool blank(char c) {
    return c == ' ' || c == '\t';
}
// Characters that end an unquoted word.
bool word_end(char c) {
    return shell_space(c) || c == ';' || c == '&' || c == '|' || c == '<' || c == '>' || c == '(' || c == ')';
}

std::string_view first_word(std::string_view text) {
    std::size_t end = 0;
    while (end < text.size() && !shell_space(text[end]))
        ++end;
    return text.substr(0, end);
}

// Reserved words that only introduce or close the command after them: `if a; then b; fi` runs a and b.
constexpr std::array<std::string_view, 12> kLeadingKeywords = {"if", "then", "else", "elif", "while", "until",
                                                               "do", "!",    "time", "{",    "}",     "fi"};
// Reserved words whose syntax this splitter does not read: the command cannot be split safely.
constexpr std::array<std::string_view, 6> kUnsupported = {"case",   "esac",     "for",
                                                          "select", "function", "coproc"};

// Removes leading reserved words (and a lone `done`) from a simple command's text.
std::string_view strip_keywords(std::string_view text) {
    for (;;) {
        text = trim_shell_space(text);
        std::string_view word = first_word(text);
        bool keyword = word == "done" || std::find(kLeadingKeywords.begin(), kLeadingKeywords.end(), word) !=
                                             kLeadingKeywords.end();
        if (!keyword || word.empty()) return text;
        text.remove_prefix(word.size());
        // `time -p CMD`: -p belongs to the reserved word, CMD is the command.
        if (word == "time" && first_word(trim_shell_space(text)) == "-p")
            text = trim_shell_space(text).substr(2);
    }
}

struct Failure {
    std::string why;
};

class Splitter {
  public:
    Splitter(std::string_view text, std::vector<std::string>& out) : s_(text), out_(out) {}

    void run() {
        // bash removes a backslash-newline before it reads tokens, so `$\<newline>(a)` is `$(a)`. Where one
        // would join an expansion or a redirection to what follows, the command is not split.
        for (std::size_t k = s_.find("\\\n"); k != std::string_view::npos; k = s_.find("\\\n", k + 1)) {
            if (escaped(k)) continue;
            char before = k > 0 ? s_[k - 1] : '\0', after = at(k + 2);
            if (before == '$' || before == '<' || before == '>' || before == '`' || after == '(' ||
                after == '\\')
                throw Failure{"a line continuation inside an expansion or operator"};
        }
        list('\0');
        if (!heredocs_.empty())
            throw Failure{"unterminated here-document (<<" + heredocs_.front().delimiter + ")"};
    }

  private:
    struct Heredoc {
        std::string delimiter;
        bool strip_tabs = false;
        bool expands = false;  // unquoted delimiter: $( ) and backticks in the body run
    };

    char at(std::size_t k) const { return k < s_.size() ? s_[k] : '\0'; }

    // Whether the character at `k` (outside quotes) is escaped: an odd number of backslashes before it.
    bool escaped(std::size_t k) const {
        std::size_t n = 0;
        while (k > 0 && s_[k - 1] == '\\') {
            ++n;
            --k;
        }
        return n % 2 == 1;
    }

    // Reads commands until `terminator` (')' for a subshell or $( ), '\0' for the end).
    // Returns with i_ at the terminator (not consumed).
    void list(char terminator) {
        std::size_t start = i_;
        // Where a word may start: after a blank or an operator that ends a command. A `#` there begins a
        // comment; anywhere else (`$((1))#`, `$(a)#`, `\ #`, `\;#`) it is part of a word, and what follows
        // runs.
        std::size_t word_may_start = i_;
        bool compound = false;  // the command is a ( subshell ): its own text is not a simple command
        auto end_command = [&](std::size_t end) {
            if (!compound) emit(s_.substr(start, end - start));
            compound = false;
        };
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (c == terminator && terminator != '\0') {
                end_command(i_);
                return;
            }
            switch (c) {
                case '\\':
                    if (i_ + 1 >= s_.size()) throw Failure{"a backslash at the end"};
                    i_ += 2;
                    continue;
                case '\'':
                    single_quoted();
                    continue;
                case '"':
                    double_quoted();
                    continue;
                case '`':
                    backquoted(false);
                    continue;
                case '$':
                    dollar();
                    continue;
                case '#':
                    if (i_ == word_may_start) {
                        while (i_ < s_.size() && s_[i_] != '\n')
                            ++i_;
                        continue;
                    }
                    ++i_;
                    continue;
                case '\n':
                    end_command(i_);
                    ++i_;
                    here_documents();
                    start = word_may_start = i_;
                    continue;
                case ';':
                    if (at(i_ + 1) == ';' || at(i_ + 1) == '&')
                        throw Failure{"`;;` or `;&` (a case statement)"};
                    end_command(i_);
                    start = word_may_start = ++i_;
                    continue;
                case '&':
                    if (at(i_ + 1) == '>') {  // &> FILE: a redirection
                        i_ += 2;
                        continue;
                    }
                    if (i_ > 0 && (s_[i_ - 1] == '>' || s_[i_ - 1] == '<')) {  // 2>&1, <&3
                        // bash expands a quoted word after >& once more (`>&1'$(p)'` runs p): only plain
                        // descriptors and names are read.
                        std::size_t k = i_ + 1;
                        while (k < s_.size() && !word_end(s_[k])) {
                            if (s_[k] == '\'' || s_[k] == '"' || s_[k] == '$' || s_[k] == '`' ||
                                s_[k] == '\\')
                                throw Failure{"a quoted or expanded word after >& or <&"};
                            ++k;
                        }
                        ++i_;
                        continue;
                    }
                    end_command(i_);
                    i_ += at(i_ + 1) == '&' ? 2 : 1;
                    start = word_may_start = i_;
                    continue;
                case '|':
                    end_command(i_);
                    i_ += (at(i_ + 1) == '|' || at(i_ + 1) == '&') ? 2 : 1;
                    start = word_may_start = i_;
                    continue;
                case '<':
                case '>':
                    if (at(i_ + 1) == '(') {  // process substitution
                        i_ += 2;
                        nested(')');
                        continue;
                    }
                    if (c == '<' && at(i_ + 1) == '<') {
                        if (at(i_ + 2) == '<') {  // here-string: a word
                            i_ += 3;
                            continue;
                        }
                        here_document_operator();
                        continue;
                    }
                    ++i_;
                    continue;
                case '(':
                    if (!strip_keywords(s_.substr(start, i_ - start)).empty())
                        throw Failure{"`(` inside a command (a function definition?)"};
                    ++i_;
                    nested(')');
                    compound = true;
                    continue;
                case ')':
                    throw Failure{"unbalanced `)`"};
                default:
                    ++i_;
                    if (blank(c)) word_may_start = i_;
                    continue;
            }
        }
        if (terminator != '\0')
            throw Failure{std::string("unterminated ") + (terminator == ')' ? "`(`" : "`")};
        end_command(i_);
    }

    // A list up to and including `close`.
    void nested(char close) {
        if (++depth_ > 64) throw Failure{"nested too deeply"};
        list(close);
        if (at(i_) != close) throw Failure{std::string("unterminated `") + close + "`"};
        ++i_;
        --depth_;
    }

    // At a backquote. bash ends the substitution at the first backquote that no backslash escapes, quotes
    // or not, then removes the backslash before `$`, a backquote or a backslash (and before `"` when the
    // substitution stands inside double quotes) and parses the rest as a script of its own: an escaped
    // backquote inside backquotes opens a nested substitution, and what it holds runs. The same here: the
    // text is unescaped as bash does and split again.
    void backquoted(bool in_double_quotes) {
        std::string inner;
        std::size_t k = i_ + 1;
        for (; k < s_.size() && s_[k] != '`'; ++k) {
            if (s_[k] == '\\' && k + 1 < s_.size()) {
                char next = s_[k + 1];
                if (next != '$' && next != '`' && next != '\\' && !(in_double_quotes && next == '"'))
                    inner.push_back('\\');
                inner.push_back(next);
                ++k;
                continue;
            }
            inner.push_back(s_[k]);
        }
        if (k >= s_.size()) throw Failure{"unterminated `"};
        if (depth_ + 1 > 64) throw Failure{"nested too deeply"};
        Splitter nested(inner, out_);
        nested.depth_ = depth_ + 1;
        nested.run();
        i_ = k + 1;
    }

    void single_quoted() {
        std::size_t end = s_.find('\'', i_ + 1);
        if (end == std::string_view::npos) throw Failure{"unterminated '"};
        i_ = end + 1;
    }

    void double_quoted() {
        ++i_;
        while (i_ < s_.size()) {
            char c = s_[i_];
            if (c == '"') {
                ++i_;
                return;
            }
            if (c == '\\') {
                i_ += 2;
            } else if (c == '`') {
                backquoted(true);
            } else if (c == '$' && at(i_ + 1) == '\'') {
                ++i_;  // no ANSI-C quoting inside double quotes: `$'` is a dollar and a quote character
            } else if (c == '$') {
                dollar();
            } else {
                ++i_;
            }
        }
        throw Failure{"unterminated \""};
    }

    // At a `$`: $( ), $(( )), ${ }, $' ', or a plain parameter.
    void dollar() {
        char next = at(i_ + 1);
        if (next == '(' && at(i_ + 2) == '(') {
            // Arithmetic only when the parenthesis that closes `$((` is followed at once by another: bash
            // reads `$((a) )` as a command substitution of the subshell `(a)`.
            std::size_t k = i_ + 3;
            int open = 2;
            bool arithmetic = false;
            for (; k < s_.size(); ++k) {
                if (s_[k] == '(') ++open;
                if (s_[k] == '$' && at(k + 1) == '(') throw Failure{"a command substitution inside $(( ))"};
                if (s_[k] == '`') throw Failure{"a command substitution inside $(( ))"};
                if (s_[k] == ')' && --open == 1) {
                    arithmetic = at(k + 1) == ')';
                    break;
                }
            }
            if (k >= s_.size()) throw Failure{"unterminated $(("};
            if (arithmetic) {
                i_ = k + 2;
                return;
            }
            i_ += 2;
            nested(')');
            return;
        }
        if (next == '(') {
            i_ += 2;
            nested(')');
            return;
        }
        if (next == '{') {
            std::size_t k = i_ + 2;
            int open = 1;
            for (; k < s_.size() && open > 0; ++k) {
                char c = s_[k];
                if (c == '{') ++open;
                if (c == '}') --open;
                // `$(`, backticks and `<(`/`>(` inside run commands; quotes and parentheses are beyond this
                // reader: not split.
                if (c == '`' || c == '(' || c == '\'' || c == '"' || c == '\\')
                    throw Failure{"quotes, parentheses or a substitution inside ${ }"};
            }
            if (open != 0) throw Failure{"unterminated ${"};
            i_ = k;
            return;
        }
        if (next == '\'') {  // ANSI-C quoting: backslash escapes, then '
            std::size_t k = i_ + 2;
            while (k < s_.size() && s_[k] != '\'')
                k += s_[k] == '\\' ? 2 : 1;
            if (k >= s_.size()) throw Failure{"unterminated $'"};
            i_ = k + 1;
            return;
        }
        ++i_;
    }

    // At `<<` (not `<<<`): reads the delimiter word; the body follows the next newline.
    void here_document_operator() {
        i_ += 2;
        Heredoc doc;
        if (at(i_) == '-') {
            doc.strip_tabs = true;
            ++i_;
        }
        while (blank(at(i_)))
            ++i_;
        bool quoted = false;
        while (i_ < s_.size() && !word_end(s_[i_])) {
            char c = s_[i_];
            if (c == '\'' || c == '"') {
                quoted = true;
                std::size_t end = s_.find(c, i_ + 1);
                if (end == std::string_view::npos)
                    throw Failure{"unterminated quote in a here-document word"};
                doc.delimiter.append(s_.substr(i_ + 1, end - i_ - 1));
                i_ = end + 1;
            } else if (c == '\\') {
                quoted = true;
                if (i_ + 1 < s_.size()) doc.delimiter.push_back(s_[i_ + 1]);
                i_ += 2;
            } else if (c == '$' || c == '`') {
                throw Failure{"an expansion in a here-document word"};
            } else {
                doc.delimiter.push_back(c);
                ++i_;
            }
        }
        if (doc.delimiter.empty()) throw Failure{"a here-document without a delimiter"};
        doc.expands = !quoted;
        heredocs_.push_back(std::move(doc));
    }

    // After a newline: the bodies of the here-documents opened on the line before, in order.
    void here_documents() {
        while (!heredocs_.empty()) {
            Heredoc doc = std::move(heredocs_.front());
            heredocs_.erase(heredocs_.begin());
            bool found = false;
            while (i_ < s_.size()) {
                std::size_t eol = s_.find('\n', i_);
                std::size_t end = eol == std::string_view::npos ? s_.size() : eol;
                std::string_view line = s_.substr(i_, end - i_);
                if (doc.strip_tabs)
                    while (!line.empty() && line.front() == '\t')
                        line.remove_prefix(1);
                std::size_t body_start = i_;
                i_ = eol == std::string_view::npos ? s_.size() : eol + 1;
                if (line == doc.delimiter) {
                    found = true;
                    break;
                }
                if (doc.expands) body_substitutions(s_.substr(body_start, end - body_start));
            }
            if (!found) throw Failure{"unterminated here-document (<<" + doc.delimiter + ")"};
        }
    }

    // An expanding here-document line: the commands of its $( ) and backticks run.
    void body_substitutions(std::string_view line) {
        for (std::size_t k = 0; k < line.size(); ++k) {
            if (line[k] == '\\') {
                ++k;
            } else if ((line[k] == '$' && k + 1 < line.size() && line[k + 1] == '(') || line[k] == '`') {
                throw Failure{"a command substitution inside a here-document"};
            }
        }
    }

    void emit(std::string_view text) {
        std::string_view command = strip_keywords(text);
        if (command.empty()) return;
        std::string_view word = first_word(command);
        if (std::find(kUnsupported.begin(), kUnsupported.end(), word) != kUnsupported.end())
            throw Failure{"`" + std::string(word) + "` is not read by cordon's splitter"};
        out_.emplace_back(command);
    }

    std::string_view s_;
    std::vector<std::string>& out_;
    std::size_t i_ = 0;
    int depth_ = 0;
    std::vector<Heredoc> heredocs_;
};

}  // namespace

std::variant<std::vector<std::string>, std::string> split_command(std::string_view command) {
    std::vector<std::string> out;
    try {
        Splitter(command, out).run();
    } catch (const Failure& failure) {
        return failure.why;
    }
    return out;
}

std::string shell_quote(std::string_view text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'')
            out += "'\\''";
        else
            out += c;
    }
    out += "'";
    return out;
}

}  // namespace cordon::agent
