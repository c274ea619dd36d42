// The real `cordon` binary: `cordon check` (text and --json, exit codes, error messages naming file, position
// and entry) and `cordon policy`. The binary's path comes from the build (CORDON_BINARY).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "policy/write_rules.hpp"
#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

using nlohmann::json;

struct Run {
    int status = -1;
    std::string out, err;
};

static std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// Runs build/cordon with `args` in directory `cwd`, HOME=`home`.
static Run cordon(const TempTree& tree, std::vector<std::string> args) {
    const fs::path out_file = tree.root() / "stdout", err_file = tree.root() / "stderr";
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int err = open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || dup2(out, 1) < 0 || dup2(err, 2) < 0 || chdir(tree.cwd().c_str()) != 0)
            _exit(127);
        setenv("HOME", tree.home().c_str(), 1);
        std::vector<char*> argv;
        std::string binary = CORDON_BINARY;
        argv.push_back(binary.data());
        for (auto& a : args)
            argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(binary.c_str(), argv.data());
        _exit(127);
    }
    int wstatus = 0;
    REQUIRE(waitpid(pid, &wstatus, 0) == pid);
    Run run;
    run.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
    run.out = slurp(out_file);
    run.err = slurp(err_file);
    return run;
}

// `cordon check` with the test's managed dir (never /etc/claude-code).
static Run check(const TempTree& tree, std::vector<std::string> args) {
    args.insert(args.begin(), {"check", "--managed-dir", tree.managed().string()});
    return cordon(tree, args);
}

static std::string first_line(const std::string& text) {
    return text.substr(0, text.find('\n'));
}

TEST_CASE("cordon check: allowed host prints allow, rule and source, exits 0", "[cli]") {
    TempTree tree;
    auto file =
        tree.project_settings("{\n \"permissions\": {\"allow\": [\n  \"WebFetch(domain:*.example.com)\"]}}");
    auto r = check(tree, {"api.example.com"});
    CHECK(r.status == 0);
    CHECK(first_line(r.out) == "allow");
    CHECK_THAT(r.out, Catch::Contains("reason: allowed"));
    CHECK_THAT(r.out, Catch::Contains("rule: WebFetch(domain:*.example.com)"));
    CHECK_THAT(r.out, Catch::Contains("source: project " + file.string() + ":3 permissions.allow[0]"));
}

TEST_CASE("cordon check: unknown host prints deny, exits 1", "[cli]") {
    TempTree tree;
    auto r = check(tree, {"example.com"});
    CHECK(r.status == 1);
    CHECK(first_line(r.out) == "deny");
    CHECK_THAT(r.out, Catch::Contains("reason: blocked-by-allowlist"));
    CHECK_THAT(r.out, Catch::Contains("rule: (none)"));
}

TEST_CASE("cordon check: denied host names the deny rule", "[cli]") {
    TempTree tree;
    auto r =
        check(tree, {"--allow-domain", "*.example.com", "--deny-domain=bad.example.com", "bad.example.com"});
    CHECK(r.status == 1);
    CHECK(first_line(r.out) == "deny");
    CHECK_THAT(r.out, Catch::Contains("reason: blocked-by-denylist"));
    CHECK_THAT(r.out, Catch::Contains("rule: bad.example.com"));
    CHECK_THAT(r.out, Catch::Contains("source: flags --deny-domain"));
}

TEST_CASE("cordon check: URLs, host:port and [v6]:port targets", "[cli]") {
    TempTree tree;
    std::vector<std::string> flags = {"--allow-domain", "example.com:443", "--allow-domain", "[::1]:8080"};
    auto run = [&](const std::string& target) {
        auto args = flags;
        args.push_back(target);
        return check(tree, args).status;
    };
    CHECK(run("https://example.com/path") == 0);
    CHECK(run("http://example.com/path") == 1);
    CHECK(run("example.com:443") == 0);
    CHECK(run("example.com:8443") == 1);
    CHECK(run("[::1]:8080") == 0);
    CHECK(run("http://[::1]:8080/") == 0);
    CHECK(run("[::1]:8081") == 1);
}

TEST_CASE("cordon check --json prints one object", "[cli]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"sandbox": {"network": {"allowedDomains": ["example.com"]}}})J");
    auto r = check(tree, {"--json", "https://example.com/"});
    CHECK(r.status == 0);
    json j = json::parse(r.out);
    CHECK(j["decision"] == "allow");
    CHECK(j["reason"] == "allowed");
    CHECK(j["rule"] == "example.com");
    CHECK(j["source"]["layer"] == "project");
    CHECK(j["source"]["file"] == file.string());
    CHECK(j["source"]["line"] == 1);
    CHECK(j["source"]["where"] == "sandbox.network.allowedDomains[0]");
    CHECK(j["target"] == "example.com:443");
    auto deny = check(tree, {"other.org", "--json"});
    CHECK(deny.status == 1);
    json d = json::parse(deny.out);
    CHECK(d["decision"] == "deny");
    CHECK(d["rule"].is_null());
    CHECK(d["source"].is_null());
}

TEST_CASE("cordon check read: and write: targets", "[cli]") {
    TempTree tree;
    tree.project_settings(R"J({"permissions": {"deny": ["Read(./secrets)"]
}
})J");
    auto r = check(tree, {"read:secrets/key"});
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("rule: Read(./secrets)"));
    CHECK_THAT(r.out, Catch::Contains("target: read:" + (tree.cwd() / "secrets/key").string()));
    CHECK(check(tree, {"read:/etc/hostname"}).status == 0);
    CHECK(check(tree, {"write:src/main.c"}).status == 0);
    auto w = check(tree, {"--json", "write:.git/hooks/pre-commit"});
    CHECK(w.status == 1);
    CHECK(json::parse(w.out)["reason"] == "always-read-only");
    CHECK(check(tree, {"write:/etc/passwd"}).status == 1);
}

TEST_CASE("cordon check: each invalid pattern in a file names file, JSON path and entry", "[cli][reject]") {
    for (const char* bad :
         {"*.com", "*example.com", "exa mple.com", "host:0", "host:65536", "https://x.com"}) {
        TempTree tree;
        auto file = tree.project_settings(
            std::string("{\n  \"sandbox\": {\"network\": {\"deniedDomains\": [\n    \"") + bad + "\"]}}}");
        auto r = check(tree, {"example.com"});
        INFO(bad << ": " << r.err);
        CHECK(r.status == 2);
        CHECK(r.out.empty());
        CHECK_THAT(r.err, Catch::Contains(file.string() +
                                          ":3: sandbox.network.deniedDomains[0]: invalid domain "
                                          "pattern \"" +
                                          bad + "\""));
    }
}

TEST_CASE("cordon check: each invalid pattern in a flag names the flag and entry", "[cli][reject]") {
    for (const char* bad :
         {"*.com", "*example.com", "exa mple.com", "host:0", "host:65536", "https://x.com"}) {
        TempTree tree;
        auto r = check(tree, {"--allow-domain", bad, "example.com"});
        INFO(bad << ": " << r.err);
        CHECK(r.status == 2);
        CHECK_THAT(r.err,
                   Catch::Contains(std::string("--allow-domain \"") + bad + "\": invalid domain pattern"));
    }
}

TEST_CASE("cordon check: a file that is not JSON names line and column", "[cli][reject]") {
    TempTree tree;
    auto file = tree.write("bad.json", "{\n  \"sandbox\": {\n    \"network\": {]\n}}");
    auto r = check(tree, {"--settings", file.string(), "example.com"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains(file.string() + ":3:17: not valid JSON"));
}

TEST_CASE("cordon check: usage errors exit 2", "[cli][usage]") {
    TempTree tree;
    CHECK(check(tree, {}).status == 2);
    auto unknown = check(tree, {"--bogus", "x.com"});
    CHECK(unknown.status == 2);
    CHECK_THAT(unknown.err, Catch::Contains("unknown flag --bogus"));
    CHECK(check(tree, {"a.com", "b.com"}).status == 2);
    auto bad_target = check(tree, {"ftp://x.com"});
    CHECK(bad_target.status == 2);
    CHECK_THAT(bad_target.err, Catch::Contains("bad target"));
    CHECK(check(tree, {"x.com:99999"}).status == 2);
    CHECK(check(tree, {"--allow-domain"}).status == 2);
    CHECK(check(tree, {"read:"}).status == 2);
    CHECK(check(tree, {"--settings", (tree.root() / "missing.json").string(), "x.com"}).status == 2);
}

TEST_CASE("cordon check --help describes every flag", "[cli][usage]") {
    TempTree tree;
    auto r = cordon(tree, {"check", "--help"});
    CHECK(r.status == 0);
    for (const char* flag : {"--json", "--settings", "--managed-dir", "--no-discover", "--allow-domain",
                             "--deny-domain", "--allow-write", "--deny-write", "--allow-read", "--deny-read",
                             "--allow-address", "read:PATH", "write:PATH"})
        CHECK_THAT(r.out, Catch::Contains(flag));
}

TEST_CASE("cordon check discovers project settings from the working directory", "[cli]") {
    TempTree tree;
    tree.project_settings(R"J({"sandbox": {"network": {"allowedDomains": ["p.example.com"]}}})J");
    tree.user_settings(R"J({"sandbox": {"network": {"allowedDomains": ["u.example.com"]}}})J");
    CHECK(check(tree, {"p.example.com"}).status == 0);
    CHECK(check(tree, {"u.example.com"}).status == 0);
    CHECK(check(tree, {"--no-discover", "p.example.com"}).status == 1);
    CHECK(check(tree, {"--no-discover", "u.example.com"}).status == 1);
}

TEST_CASE("cordon check honours managed settings and allowManagedDomainsOnly", "[cli]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                     "allowedDomains": ["m.example.com"]}}})J");
    CHECK(check(tree, {"m.example.com"}).status == 0);
    CHECK(check(tree, {"--allow-domain", "f.example.com", "f.example.com"}).status == 1);
}

TEST_CASE("cordon check prints warnings to stderr", "[cli]") {
    TempTree tree;
    auto file = tree.project_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true}}})J");
    auto r = check(tree, {"x.com"});
    CHECK(r.status == 1);
    CHECK_THAT(r.err, Catch::Contains("warning") && Catch::Contains(file.string()));
}

TEST_CASE("cordon policy prints the merged policy as JSON", "[cli]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                     "allowedDomains": ["m.example.com"]}}})J");
    auto file = tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:p.example.com)"],
                                                         "deny": ["Read(~/.ssh)"]
}
})J");
    auto r = cordon(tree, {"policy", "--managed-dir", tree.managed().string(), "--deny-domain",
                           "evil.example.com", "--allow-write", "out"});
    REQUIRE(r.status == 0);
    json j = json::parse(r.out);
    CHECK(j["network"]["allowedDomains"][0]["rule"] == "m.example.com");
    CHECK(j["network"]["ignoredAllowedDomains"][0]["rule"] == "WebFetch(domain:p.example.com)");
    CHECK(j["network"]["ignoredAllowedDomains"][0]["source"]["file"] == file.string());
    CHECK(j["network"]["deniedDomains"][0]["source"]["where"] == "--deny-domain");
    CHECK(j["network"]["allowManagedDomainsOnly"] == true);
    CHECK(j["filesystem"]["denyRead"][0]["path"] == (tree.home() / ".ssh").string());
    CHECK(j["filesystem"]["allowWrite"].back()["path"] == (tree.cwd() / "out").string());
    CHECK(j["filesRead"].size() == 2);
    CHECK(j["warnings"].is_array());
}

TEST_CASE("cordon policy with no settings is the embedded default", "[cli]") {
    TempTree tree;
    auto r = cordon(tree, {"policy", "--managed-dir", tree.managed().string()});
    REQUIRE(r.status == 0);
    json j = json::parse(r.out);
    CHECK(j["network"]["allowedDomains"].empty());
    CHECK(j["filesystem"]["allowWrite"].size() == 2);
    CHECK(j["filesystem"]["allowWrite"][0]["path"] == tree.cwd().string());
    CHECK(j["filesystem"]["allowWrite"][1]["path"] == "/tmp");
    CHECK(j["filesRead"].empty());
}

TEST_CASE("cordon policy errors and help", "[cli][usage]") {
    TempTree tree;
    tree.project_settings("{\"sandbox\": {\"network\": {\"deniedDomains\": [\"*.com\"]}}}");
    auto r = cordon(tree, {"policy", "--managed-dir", tree.managed().string()});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("sandbox.network.deniedDomains[0]"));
    CHECK(cordon(tree, {"policy", "extra"}).status == 2);
    auto help = cordon(tree, {"policy", "--help"});
    CHECK(help.status == 0);
    CHECK_THAT(help.out, Catch::Contains("--settings") && Catch::Contains("ignoredAllowedDomains"));
}

TEST_CASE("cordon check write: names the write rule and the jail, cordon policy lists the rules", "[cli]") {
    TempTree tree;
    fs::create_directories(tree.cwd() / "repo/objects");
    auto shape = check(tree, {"--json", "write:repo/HEAD"});
    CHECK(shape.status == 1);
    auto answer = json::parse(shape.out);
    CHECK(answer["writeRule"] == "repository-shape");
    CHECK(answer["jail"] == "namespaces");
    auto null = check(tree, {"write:/dev/null"});
    CHECK(null.status == 0);
    CHECK_THAT(null.out, Catch::Contains("write rule: devices (every jail)"));
    // The host's /tmp without namespaces: only the run's own TMPDIR.
    auto tmp = check(tree, {"--jail", "landlock", "--json", "write:/tmp/x"});
    CHECK(tmp.status == 1);
    CHECK(json::parse(tmp.out)["writeRule"] == "default-tmp");
    CHECK_THAT(check(tree, {"write:/tmp/x"}).out,
               Catch::Contains(
                   "in the jail without namespaces (--jail landlock): deny by the write rule default-tmp"));
    CHECK(check(tree, {"--jail", "chroot", "write:/tmp/x"}).status == 2);
    auto list = cordon(tree, {"policy", "--write-rules"});
    CHECK(list.status == 0);
    CHECK_THAT(list.out, Catch::Contains("repository-shape (every jail)") &&
                             Catch::Contains("default-tmp (the jail without namespaces, --jail landlock)"));
    auto policy = cordon(tree, {"policy", "--managed-dir", tree.managed().string()});
    REQUIRE(policy.status == 0);
    CHECK(json::parse(policy.out)["filesystem"]["writeRules"].size() == cordon::policy::write_rules().size());
    CHECK(cordon(tree, {"policy", "--write-rules", "--format", "sbpl"}).status == 2);
}

TEST_CASE("cordon check move:, remove:, symlink: decide by protected-moves, the last name not followed",
          "[cli]") {
    TempTree tree;
    fs::create_directories(tree.cwd() / ".claude");
    fs::create_directories(tree.cwd() / "src");
    fs::create_directories(tree.cwd() / "vendor/lib/.git");
    fs::create_directory_symlink(tree.cwd() / "src", tree.cwd() / "link");
    auto away = check(tree, {"--json", "move:.claude", "elsewhere"});
    CHECK(away.status == 1);
    auto answer = json::parse(away.out);
    CHECK(answer["writeRule"] == "protected-moves");
    CHECK(answer["target"] ==
          "move:" + (tree.cwd() / ".claude").string() + " " + (tree.cwd() / "elsewhere").string());
    CHECK(check(tree, {"move:src", "lib"}).status == 0);
    // A tree holding a .git that exists now (taken for one older than the run, and said so).
    auto tree_move = check(tree, {"move:vendor", "third_party"});
    CHECK(tree_move.status == 1);
    CHECK_THAT(tree_move.out, Catch::Contains("write rule: protected-moves") && Catch::Contains("assumed: "));
    // The symlink itself moves into a protected name's place (not what it points to).
    CHECK(check(tree, {"move:link", "sub/.claude"}).status == 1);
    CHECK(check(tree, {"move:link", "link2"}).status == 0);
    CHECK(check(tree, {"remove:.claude"}).status == 1);
    CHECK(check(tree, {"remove:src"}).status == 0);
    CHECK(check(tree, {"symlink:sub/.git"}).status == 1);
    CHECK(check(tree, {"symlink:src/l"}).status == 0);
    // The names' own writes come first: outside the writable areas the path rules refuse.
    auto outside = check(tree, {"--json", "move:src", "/etc/cordon-moved"});
    CHECK(outside.status == 1);
    CHECK(json::parse(outside.out)["writeRule"] == "path-rules");
    auto missing = check(tree, {"move:src"});
    CHECK(missing.status == 2);
    CHECK_THAT(missing.err, Catch::Contains("move:FROM needs the name it is moved to"));
    CHECK(check(tree, {"remove:src", "extra"}).status == 2);
    CHECK(check(tree, {"remove:"}).status == 2);
}

TEST_CASE("the shipped example settings file loads and decides", "[cli][example]") {
    TempTree tree;
    const std::string example = CORDON_SOURCE_DIR "/examples/settings.json";
    auto r = check(tree, {"--settings", example, "--json", "https://api.github.com/"});
    INFO(r.err);
    CHECK(r.status == 0);
    CHECK(json::parse(r.out)["source"]["file"] == example);
    CHECK(check(tree, {"--settings", example, "https://example.org/"}).status == 1);
    auto p = cordon(tree, {"policy", "--managed-dir", tree.managed().string(), "--settings", example});
    CHECK(p.status == 0);
}

}  // namespace cordon::policy::test

namespace cordon::policy::test {

TEST_CASE("invalid UTF-8 in flags gives clean output, not a crash", "[cli]") {
    TempTree tree;
    auto policy =
        cordon(tree, {"policy", "--managed-dir", tree.managed().string(), "--allow-write", "out\xff"});
    CHECK(policy.status == 0);
    CHECK_NOTHROW(json::parse(policy.out));
    auto bad_domain = check(tree, {"--allow-domain", "\xff.example.com", "x.com"});
    CHECK(bad_domain.status == 2);
    CHECK_THAT(bad_domain.err, Catch::Contains("--allow-domain"));
    auto write = check(tree, {"--json", "write:out\xff/x"});
    CHECK(write.status == 0);
    CHECK_NOTHROW(json::parse(write.out));
}

TEST_CASE("cordon check expands ~/ in read: and write: paths", "[cli]") {
    TempTree tree;
    auto r = check(tree, {"--deny-read", "~/.ssh", "--json", "read:~/.ssh/id_ed25519"});
    CHECK(r.status == 1);
    CHECK(json::parse(r.out)["target"] == "read:" + (tree.home() / ".ssh/id_ed25519").string());
}

// ---- issue 9: never fail open, srt and Claude Code parity, through the real binary
// ----------------------------

TEST_CASE("cordon check --allow-domain '*.' is a usage error, not allow-everything", "[cli][parity]") {
    TempTree tree;
    auto r = check(tree, {"--allow-domain", "*.", "x.example.com"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--allow-domain \"*.\"") && Catch::Contains("overly broad"));
    CHECK(r.out.empty());
}

TEST_CASE("cordon check: an uninterpretable allow entry is skipped with a warning, the file still works",
          "[cli][parity]") {
    TempTree tree;
    auto file = tree.project_settings(
        "{\"permissions\": {\"allow\": [\n \"WebFetch(domain:example.*)\",\n \"WebFetch(domain:*.)\",\n"
        " \"WebFetch(domain:ok.example.com)\"]}}");
    auto r = check(tree, {"example.org"});
    CHECK(r.status == 0);
    CHECK_THAT(r.out, Catch::Contains("rule: WebFetch(domain:example.*)"));
    CHECK_THAT(r.err,
               Catch::Contains("cordon: warning: " + file.string() + ":3: permissions.allow[1]: skipped"));
    CHECK(check(tree, {"example.evil.com"}).status == 1);
    CHECK(check(tree, {"x.example.com"}).status == 1);  // `*.` was not read as every host
    CHECK(check(tree, {"ok.example.com"}).status == 0);
}

TEST_CASE("cordon check: an invalid deny entry exits 2 naming file:line", "[cli][parity]") {
    TempTree tree;
    auto file = tree.project_settings("{\"permissions\": {\"deny\": [\n\"WebFetch(domain:*.)\"]}}");
    auto r = check(tree, {"example.org"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::StartsWith("cordon: " + file.string() + ":2: permissions.deny[0]: "));
}

TEST_CASE("cordon check canonicalises IPv4 spellings", "[cli][parity]") {
    TempTree tree;
    for (const char* spelling :
         {"0x0a.203.0.2", "10.203.2", "181075970", "012.203.0.2", "http://0xa.203.0.2:80/"}) {
        auto r = check(tree, {"--allow-domain", "10.203.0.2", "--json", spelling});
        INFO(spelling << ": " << r.err);
        CHECK(r.status == 0);
        CHECK_THAT(r.out, Catch::Contains("\"target\": \"10.203.0.2:"));
    }
}

TEST_CASE("cordon policy lists unknown and unhonoured keys under warnings", "[cli][parity]") {
    TempTree tree;
    auto file = tree.write("srt.json",
                           "{\"network\": {\"allowedDomains\": [\"a.example.com\"],\n"
                           " \"httpProxyPort\": 1}, \"filesystem\": {\"allowGitConfig\": true, "
                           "\"allowBareRepositories\": true},\n"
                           " \"enableWeakerNestedSandbox\": true, \"netwrok\": {}}");
    auto r = cordon(tree, {"policy", "--managed-dir", tree.managed().string(), "--settings", file.string()});
    INFO(r.err);
    REQUIRE(r.status == 0);
    auto j = json::parse(r.out);
    REQUIRE(j["warnings"].size() == 3);
    std::string warnings;
    for (const auto& w : j["warnings"])
        warnings += w.get<std::string>() + "\n";
    CHECK_THAT(warnings, Catch::Contains(file.string() + ":2: network.httpProxyPort: not honoured by cordon "
                                                         "(cordon's proxy listens on its own port inside the "
                                                         "jail); ignored\n"));
    CHECK_THAT(warnings, Catch::Contains(":3: enableWeakerNestedSandbox: not honoured"));
    CHECK_THAT(warnings, Catch::Contains(":3: netwrok: unknown key"));
    CHECK(j["filesystem"]["allowGitConfig"] == true);
    CHECK(j["filesystem"]["allowBareRepositories"] == true);  // honoured: no warning
    for (const auto& name : j["filesystem"]["alwaysReadOnlyNames"])
        CHECK(name != ".git/config");
    CHECK_THAT(r.err, Catch::Contains("cordon: warning: " + file.string() + ":2: network.httpProxyPort"));
}

TEST_CASE("cordon check read:~/.ssh agrees with the jail for Read(~/.ssh/**)", "[cli][parity]") {
    TempTree tree;
    tree.project_settings("{\"permissions\": {\"deny\": [\"Read(~/.ssh/**)\"]}}");
    auto r = check(tree, {"read:~/.ssh"});
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("rule: Read(~/.ssh/**)"));
    CHECK(check(tree, {"read:~/.ssh/id_ed25519"}).status == 1);
    CHECK(check(tree, {"read:~/.sshrc"}).status == 0);
}

TEST_CASE("a flag that takes a value never takes -- or another flag", "[cli][args]") {
    TempTree tree;
    auto r = check(tree, {"--settings", "--json", "x.example.com"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--settings needs a value, not '--json'"));
    r = check(tree, {"--allow-domain", "--", "x.example.com"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--allow-domain needs a value, not '--'"));
    // `--audit-log -- curl` must not write a file named `--`.
    r = cordon(tree, {"run", "--no-discover", "--audit-log", "--", "/bin/true"});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, Catch::Contains("--audit-log needs a value, not '--'"));
    CHECK_FALSE(fs::exists(tree.cwd() / "--"));
    r = cordon(tree, {"proxy", "--listen", "127.0.0.1:0", "--audit-log", "--dns-server", "127.0.0.1"});
    CHECK(r.status == 2);
    CHECK_FALSE(fs::exists(tree.cwd() / "--dns-server"));
    // `-` alone is a value (stdout), and `--flag=-x` passes a value that starts with `-`.
    r = check(tree, {"--allow-domain=-bad.example", "--json", "x.example.com"});
    CHECK(r.status == 1);
    CHECK(r.err.empty());
}

TEST_CASE("cordon check --resolve applies the address guard to IP literals", "[cli][resolve]") {
    TempTree tree;
    auto r = check(tree, {"--resolve", "--allow-domain", "127.0.0.1", "127.0.0.1:8080"});
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("reason: blocked-by-address-guard") &&
                          Catch::Contains("address: 127.0.0.1 (refused by the address guard: loopback"));
    r = check(tree, {"--resolve", "--allow-domain", "127.0.0.1", "--allow-address", "127.0.0.0/8", "--json",
                     "0x7f.1:8080"});
    CHECK(r.status == 0);
    auto j = json::parse(r.out);
    CHECK(j["decision"] == "allow");
    CHECK(j["addresses"][0]["address"] == "127.0.0.1");
    CHECK(j["addresses"][0]["guard"].is_null());
    // A target the policy refuses is refused before any DNS.
    r = check(tree, {"--resolve", "--dns-server", "127.0.0.1:9", "not-allowed.example"});
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::Contains("blocked-by-allowlist"));
    CHECK(check(tree, {"--resolve", "read:/etc"}).status == 2);
    CHECK(check(tree, {"--dns-server", "nonsense", "--resolve", "x.example"}).status == 2);
}

}  // namespace cordon::policy::test
