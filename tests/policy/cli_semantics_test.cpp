// `cordon check` against every case of DESIGN.md's reference semantics, through the real binary: one settings
// tree (managed, project, user files and flags) and a table of targets with the expected decision and rule.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/policy/test_support.hpp"

namespace cordon::policy::test {

using nlohmann::json;

namespace {

struct Outcome {
    int status = -1;
    json body;
};

std::string read_all(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

Outcome check_json(const TempTree& tree, const std::vector<std::string>& extra, const std::string& target) {
    std::vector<std::string> args = {CORDON_BINARY, "check", "--json", "--managed-dir",
                                     tree.managed().string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.push_back(target);
    const fs::path out_file = tree.root() / "out.json";
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int out = open(out_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int devnull = open("/dev/null", O_WRONLY);
        if (out < 0 || devnull < 0 || dup2(out, 1) < 0 || dup2(devnull, 2) < 0 ||
            chdir(tree.cwd().c_str()) != 0)
            _exit(127);
        setenv("HOME", tree.home().c_str(), 1);
        std::vector<char*> argv;
        for (auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        execv(argv[0], argv.data());
        _exit(127);
    }
    int wstatus = 0;
    REQUIRE(waitpid(pid, &wstatus, 0) == pid);
    Outcome outcome;
    outcome.status = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1;
    const std::string text = read_all(out_file);
    if (!text.empty()) outcome.body = json::parse(text);
    return outcome;
}

struct Case {
    const char* target;
    const char* decision;  // "allow" / "deny"
    const char* reason;
    const char* rule;  // nullptr = no rule
};

void run_cases(const TempTree& tree, const std::vector<std::string>& flags, const std::vector<Case>& cases) {
    for (const Case& c : cases) {
        auto outcome = check_json(tree, flags, c.target);
        INFO("target " << c.target << " -> " << outcome.body.dump());
        CHECK(outcome.status == (std::string(c.decision) == "allow" ? 0 : 1));
        CHECK(outcome.body["decision"] == c.decision);
        CHECK(outcome.body["reason"] == c.reason);
        if (c.rule == nullptr) {
            CHECK(outcome.body["rule"].is_null());
        } else {
            CHECK(outcome.body["rule"] == c.rule);
        }
    }
}

}  // namespace

TEST_CASE("cordon check: domain reference semantics", "[cli][semantics]") {
    TempTree tree;
    tree.project_settings(R"J({
  "permissions": {
    "allow": ["WebFetch(domain:*.example.com)", "WebFetch(domain:Docs.Example.ORG)", "WebFetch(domain:bücher.de)",
              "WebFetch(domain:api.*.cloud.test)"],
    "deny": ["WebFetch(domain:evil.example.com)"]
  },
  "sandbox": {"network": {"allowedDomains": ["localhost", "192.0.2.7", "[::1]:8443", "pinned.test:8080"],
                          "deniedDomains": ["*.bad.example.com"]}}
})J");
    run_cases(tree, {},
              {
                  {"a.example.com", "allow", "allowed", "WebFetch(domain:*.example.com)"},
                  {"https://x.y.z.example.com/path", "allow", "allowed", "WebFetch(domain:*.example.com)"},
                  {"example.com", "deny", "blocked-by-allowlist", nullptr},
                  {"A.EXAMPLE.COM.", "allow", "allowed", "WebFetch(domain:*.example.com)"},
                  {"docs.example.org", "allow", "allowed", "WebFetch(domain:Docs.Example.ORG)"},
                  {"xn--bcher-kva.de", "allow", "allowed", "WebFetch(domain:bücher.de)"},
                  {"https://bücher.de/", "allow", "allowed", "WebFetch(domain:bücher.de)"},
                  {"api.eu.cloud.test", "allow", "allowed", "WebFetch(domain:api.*.cloud.test)"},
                  {"api.a.b.cloud.test", "deny", "blocked-by-allowlist", nullptr},
                  {"evil.example.com", "deny", "blocked-by-denylist", "WebFetch(domain:evil.example.com)"},
                  {"x.bad.example.com", "deny", "blocked-by-denylist", "*.bad.example.com"},
                  {"localhost", "allow", "allowed", "localhost"},
                  {"127.0.0.1", "deny", "blocked-by-allowlist", nullptr},
                  {"192.0.2.7:22", "allow", "allowed", "192.0.2.7"},
                  {"192.0.2.8", "deny", "blocked-by-allowlist", nullptr},
                  {"[::1]:8443", "allow", "allowed", "[::1]:8443"},
                  {"[0:0::1]:8443", "allow", "allowed", "[::1]:8443"},
                  {"[::1]:443", "deny", "blocked-by-allowlist", nullptr},
                  {"pinned.test:8080", "allow", "allowed", "pinned.test:8080"},
                  {"http://pinned.test/", "deny", "blocked-by-allowlist", nullptr},
                  {"unknown.net", "deny", "blocked-by-allowlist", nullptr},
              });
}

TEST_CASE("cordon check: WebFetch(domain:*) allows every name but no IP literal", "[cli][semantics]") {
    TempTree tree;
    tree.user_settings(R"J({"permissions": {"allow": ["WebFetch(domain:*)"]}})J");
    run_cases(tree, {},
              {
                  {"anything.invalid", "allow", "allowed", "WebFetch(domain:*)"},
                  {"10.0.0.1", "deny", "blocked-by-allowlist", nullptr},
                  {"[2001:db8::1]:443", "deny", "blocked-by-allowlist", nullptr},
              });
}

TEST_CASE("cordon check: allowManagedDomainsOnly and denies of every layer", "[cli][semantics]") {
    TempTree tree;
    tree.managed_settings(R"J({"sandbox": {"network": {"allowManagedDomainsOnly": true,
                                                      "allowedDomains": ["*.corp.example.com"]}}})J");
    tree.project_settings(R"J({"permissions": {"allow": ["WebFetch(domain:github.com)"],
                                               "deny": ["WebFetch(domain:hr.corp.example.com)"]}})J");
    run_cases(
        tree, {"--allow-domain", "pypi.org", "--deny-domain", "vault.corp.example.com"},
        {
            {"wiki.corp.example.com", "allow", "allowed", "*.corp.example.com"},
            {"github.com", "deny", "blocked-by-allowlist", nullptr},
            {"pypi.org", "deny", "blocked-by-allowlist", nullptr},
            {"hr.corp.example.com", "deny", "blocked-by-denylist", "WebFetch(domain:hr.corp.example.com)"},
            {"vault.corp.example.com", "deny", "blocked-by-denylist", "vault.corp.example.com"},
        });
}

TEST_CASE("cordon check: path conventions and filesystem defaults", "[cli][semantics]") {
    TempTree tree;
    tree.project_settings(
        R"J({"permissions": {"allow": ["Edit(/gen/**)", "Edit(//srv/out)", "Read(~/.aws/config)"],
                                               "deny": ["Read(~/.aws)", "Read(./.env)", "Edit(/gen/keep)"]}})J");
    const std::string cwd = tree.cwd().string(), home = tree.home().string();
    const std::vector<std::string> targets = {"write:gen/a/b.c",
                                              "write:/srv/out/x",
                                              "write:/srv/other",
                                              "read:" + home + "/.aws/credentials",
                                              "read:" + home + "/.aws/config",
                                              "read:.env",
                                              "write:gen/keep/x",
                                              "write:" + cwd + "/.bashrc",
                                              "write:sub/.git/hooks/pre-commit",
                                              "write:" + cwd + "/.claude/settings.json",
                                              "read:/etc/hostname",
                                              "write:/etc/hostname",
                                              "write:/tmp/scratch",
                                              "write:src/main.c"};
    const std::vector<Case> cases = {
        {targets[0].c_str(), "allow", "allowed", "Edit(/gen/**)"},
        {targets[1].c_str(), "allow", "allowed", "Edit(//srv/out)"},
        {targets[2].c_str(), "deny", "default-deny", nullptr},
        {targets[3].c_str(), "deny", "blocked-by-denylist", "Read(~/.aws)"},
        {targets[4].c_str(), "allow", "allowed", "Read(~/.aws/config)"},
        {targets[5].c_str(), "deny", "blocked-by-denylist", "Read(./.env)"},
        {targets[6].c_str(), "deny", "blocked-by-denylist", "Edit(/gen/keep)"},
        {targets[7].c_str(), "deny", "always-read-only", ".bashrc"},
        {targets[8].c_str(), "deny", "always-read-only", ".git/hooks"},
        {targets[9].c_str(), "deny", "always-read-only",
         nullptr},  // the settings file read (rule = its path)
        {targets[10].c_str(), "allow", "default-allow", nullptr},
        {targets[11].c_str(), "deny", "default-deny", nullptr},
        {targets[12].c_str(), "allow", "allowed", "/tmp"},
        {targets[13].c_str(), "allow", "allowed", nullptr},  // the working directory (rule = its path)
    };
    for (const Case& c : cases) {
        auto outcome = check_json(tree, {}, c.target);
        INFO("target " << c.target << " -> " << outcome.body.dump());
        CHECK(outcome.status == (std::string(c.decision) == "allow" ? 0 : 1));
        CHECK(outcome.body["decision"] == c.decision);
        CHECK(outcome.body["reason"] == c.reason);
        if (c.rule != nullptr) CHECK(outcome.body["rule"] == c.rule);
    }
    auto settings = check_json(tree, {}, targets[9]);
    CHECK(settings.body["rule"] == (tree.cwd() / ".claude/settings.json").string());
    auto workdir = check_json(tree, {}, targets[13]);
    CHECK(workdir.body["rule"] == tree.cwd().string());
    CHECK(workdir.body["source"]["layer"] == "default");
    auto tilde = check_json(tree, {}, "read:~/.aws/credentials");
    CHECK(tilde.body["decision"] == "deny");
}

}  // namespace cordon::policy::test
