// The notifier's pure parts: whether a git directory existed when the run started, from its birth time.
#include "jail/notify.hpp"

#include <catch2/catch.hpp>

using cordon::jail::existed_before;
using cordon::jail::RunStart;

namespace {

// A run started at 100.010 s by the fine clock, 100.006 s by the coarse one (a tick behind).
RunStart start() {
    RunStart s;
    s.coarse = {100, 6'000'000};
    s.fine = {100, 10'000'000};
    return s;
}

}  // namespace

TEST_CASE("a birth time before the coarse start is older than the run, after the fine start younger") {
    CHECK(existed_before(start(), {99, 999'000'000}, false));
    CHECK(existed_before(start(), {100, 5'999'999}, true));  // even if the run says it made it (it cannot)
    CHECK_FALSE(existed_before(start(), {100, 10'000'001}, false));
    CHECK_FALSE(existed_before(start(), {101, 0}, false));
}

TEST_CASE("a birth time within the start's tick counts as the run's only when the run made the directory") {
    // The file systems stamp with the coarse clock: a repository the command creates in its first
    // milliseconds can read as born before the fine start (git init then failed on its own hooks), and one
    // the user made just before the run as born after the coarse start.
    for (long ns : {6'000'000L, 8'000'000L, 10'000'000L}) {
        CHECK_FALSE(existed_before(start(), {100, ns}, true));
        CHECK(existed_before(start(), {100, ns}, false));
    }
}
