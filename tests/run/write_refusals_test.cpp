// run/write_refusals.hpp: refused writes counted by path and rule, bounded, handed to the loop, summarised.
#include "run/write_refusals.hpp"

#include <uv.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cerrno>
#include <string>
#include <vector>

#include "policy/write_rules.hpp"

using cordon::run::format_write_refusals;
using cordon::run::WriteRefusals;

namespace {

cordon::jail::RefusedWrite refusal(const std::string& path, const char* rule, int error,
                                   cordon::policy::Reason reason = cordon::policy::Reason::DefaultDeny) {
    cordon::jail::RefusedWrite w;
    w.path = path;
    w.operation = "open";
    w.error = error;
    w.rule = &cordon::policy::write_rule(rule);
    w.path_rule.reason = reason;
    w.pid = 42;
    w.program = "sh";
    return w;
}

struct Loop {
    uv_loop_t loop{};
    Loop() { uv_loop_init(&loop); }
    ~Loop() {
        uv_run(&loop, UV_RUN_NOWAIT);
        uv_loop_close(&loop);
    }
};

}  // namespace

TEST_CASE("refused writes: grouped by path and rule, each kind with its advice", "[run][write-refusals]") {
    Loop l;
    std::vector<cordon::proxy::WriteEvent> seen;
    WriteRefusals writes(&l.loop, [&](const cordon::proxy::WriteEvent& e) { seen.push_back(e); });
    writes.add(refusal("/srv/out.txt", "path-rules", EROFS));
    writes.add(refusal("/srv/out.txt", "path-rules", EROFS));
    writes.add(refusal("/p/old.git/hooks/x", "git-dirs-by-content", EACCES));
    writes.add(refusal("/p/HEAD", "repository-shape", EACCES));
    writes.add(refusal("/proc/sys/kernel/x", "proc-knobs", EROFS));
    uv_run(&l.loop, UV_RUN_NOWAIT);  // the loop's turn: each refusal reported once, in order
    REQUIRE(seen.size() == 5);
    CHECK(seen[0].id == 1);
    CHECK(seen[4].id == 5);
    CHECK(seen[0].reason == "default-deny");
    CHECK(seen[0].error == "EROFS");
    CHECK(seen[2].rule == "write rule git-dirs-by-content");
    CHECK(seen[2].reason == "always-read-only");
    writes.drain(true);
    const std::string text = format_write_refusals(writes.summary(), true);
    CHECK_THAT(text, Catch::Contains("cordon: refused 5 write(s):"));
    CHECK_THAT(text, Catch::Contains("  outside the writable areas:\n    /srv/out.txt  x2  (open by sh)\n"));
    // A read-only part of /proc is no path allowWrite lifts, though the kernel says EROFS.
    const auto never = text.substr(text.find("never allowed"));
    CHECK_THAT(never, Catch::Contains("/proc/sys/kernel/x  x1  write rule proc-knobs"));
    CHECK_THAT(never, Catch::Contains("/p/old.git/hooks/x  x1  write rule git-dirs-by-content"));
    CHECK_THAT(never, Catch::Contains("allowBareRepositories lifts it"));
    CHECK(format_write_refusals(cordon::run::WriteRefusalSummary{}, true).empty());
}

TEST_CASE("refused writes: a flood keeps the groups, the queue and the summary bounded",
          "[run][write-refusals]") {
    Loop l;
    std::size_t reported = 0;
    WriteRefusals writes(&l.loop, [&](const cordon::proxy::WriteEvent&) { ++reported; });
    // The loop does not run meanwhile (a busy supervisor): the queue stops at its bound.
    for (int i = 0; i < 20000; ++i)
        writes.add(refusal("/out/f" + std::to_string(i), "path-rules", EROFS));
    writes.drain(true);
    for (int i = 0; i < 10; ++i)  // after the end: counted, not queued
        writes.add(refusal("/out/late", "path-rules", EROFS));
    const auto summary = writes.summary();
    CHECK(summary.total == 20010);
    CHECK(summary.groups.size() == WriteRefusals::kMaxPaths);
    CHECK(summary.beyond == 20010 - WriteRefusals::kMaxPaths);
    CHECK(reported == WriteRefusals::kMaxQueued);
    CHECK(summary.unlogged == 20000 - WriteRefusals::kMaxQueued);
    const std::string text = format_write_refusals(summary, true);
    CHECK_THAT(text, Catch::Contains("    ... and 985 more path(s)\n"));
    CHECK_THAT(text, Catch::Contains(
                         "... and 19010 more refused write(s) to other paths (past 1000 paths counted)"));
    CHECK_THAT(text, Catch::Contains("(15904 of them not in the audit log nor on the control channel"));
    CHECK(std::count(text.begin(), text.end(), '\n') < 25);
}

TEST_CASE("refused writes: a flood after a refusal does not push it out of the summary",
          "[run][write-refusals]") {
    Loop l;
    {
        // One refusal, then 10,000 of other paths that sort before it and are refused as often: it stays.
        WriteRefusals writes(&l.loop, nullptr);
        writes.add(refusal("/srv/first.txt", "path-rules", EROFS));
        for (int i = 0; i < 10000; ++i)
            writes.add(refusal("/out/f" + std::to_string(i), "path-rules", EROFS));
        const std::string text = format_write_refusals(writes.summary(), false);
        // First seen first; the page ends where it did.
        CHECK_THAT(text, Catch::Contains("outside the writable areas:\n    /srv/first.txt  x1  (open by sh)\n"
                                         "    /out/f0  x1"));
        CHECK_THAT(text, Catch::Contains("    ... and 985 more path(s)\n"));
    }
    {
        // 30 refusals by one rule, then one by another, then one path refused 500 times: each keeps a line.
        WriteRefusals writes(&l.loop, nullptr);
        for (int i = 0; i < 30; ++i)
            writes.add(refusal("/p/old.git/hooks/h" + std::to_string(i), "git-dirs-by-content", EACCES));
        writes.add(refusal("/proc/sys/kernel/x", "proc-knobs", EROFS));
        for (int i = 0; i < 500; ++i)
            writes.add(refusal("/p/HEAD", "repository-shape", EACCES));
        const std::string text = format_write_refusals(writes.summary(), false);
        CHECK_THAT(text, Catch::Contains("/proc/sys/kernel/x  x1  write rule proc-knobs"));
        CHECK_THAT(text, Catch::Contains("/p/HEAD  x500  write rule repository-shape"));
        CHECK_THAT(text, Catch::Contains("/p/old.git/hooks/h0  x1"));
        CHECK_THAT(text, Catch::Contains("/p/old.git/hooks/h12  x1"));
        CHECK(text.find("/p/old.git/hooks/h13 ") == std::string::npos);
        CHECK_THAT(text, Catch::Contains("    ... and 17 more path(s)\n"));
    }
}

TEST_CASE("refused writes: cordon's CA directory is never allowed, with the reason",
          "[run][write-refusals]") {
    Loop l;
    WriteRefusals writes(&l.loop, nullptr);
    auto ca =
        refusal("/root/.config/cordon/ca/new", "path-rules", EACCES, cordon::policy::Reason::AlwaysReadOnly);
    ca.path_rule.verdict = cordon::policy::Verdict::Deny;
    ca.path_rule.rule = std::make_shared<const cordon::policy::Rule>(cordon::policy::Rule{
        "/root/.config/cordon/ca", cordon::policy::Source{cordon::policy::Layer::Default, "",
                                                          std::string(cordon::policy::kPrivateDirWhere), 0}});
    writes.add(std::move(ca));
    const std::string text = format_write_refusals(writes.summary(), false);
    CHECK(text.find("outside the writable areas") == std::string::npos);
    CHECK(text.find("allow with --allow-write") == std::string::npos);
    const auto never = text.substr(text.find("never allowed"));
    CHECK_THAT(never, Catch::Contains("/root/.config/cordon/ca/new  x1  by `/root/.config/cordon/ca`"));
    CHECK_THAT(never, Catch::Contains("cordon's CA directory holds the private key"));
    CHECK(never.find("the protected names") == std::string::npos);
}
