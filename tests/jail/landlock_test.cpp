// The Landlock layer on its own (no mounts involved): in a forked child, only the writable roots accept
// writes. Landlock needs no privileges (no_new_privs suffices), so this is a unit test.
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/landlock.h>
#include <catch2/catch.hpp>
#include <filesystem>

#include "jail/detail/setup.hpp"

namespace fs = std::filesystem;

namespace {

bool landlock_available() {
    return ::syscall(444 /* landlock_create_ruleset */, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION) >= 1;
}

fs::path make_dir(const char* name) {
    std::string tmpl = (fs::temp_directory_path() / name).string() + "-XXXXXX";
    return ::mkdtemp(tmpl.data());
}

// 0: created, else errno.
int try_create(const fs::path& p) {
    int fd = ::open(p.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) return errno;
    ::close(fd);
    return 0;
}

}  // namespace

TEST_CASE("Landlock: writes only below the writable roots") {
    if (!landlock_available()) {
        WARN("Landlock not available in this kernel: skipped");
        return;
    }
    fs::path inside = make_dir("cordon-ll-in"), outside = make_dir("cordon-ll-out");
    int pipefd[2];
    REQUIRE(::pipe(pipefd) == 0);
    pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
        cordon::jail::JailConfig config;
        cordon::jail::detail::Context ctx{config, -1, {}, {}, -1, 63, {}, {}, {}, {}};
        ctx.plan.writable_roots = {inside};
        int results[3] = {-1, -1, -1};
        results[0] =
            (cordon::jail::detail::prepare_landlock(ctx) || cordon::jail::detail::enforce_landlock(ctx)) ? 1
                                                                                                         : 0;
        results[1] = try_create(inside / "ok");
        results[2] = try_create(outside / "denied");
        ssize_t n = ::write(pipefd[1], results, sizeof results);
        ::_exit(n == sizeof results ? 0 : 1);
    }
    ::close(pipefd[1]);
    int results[3] = {};
    REQUIRE(::read(pipefd[0], results, sizeof results) == sizeof results);
    ::close(pipefd[0]);
    int status = 0;
    ::waitpid(pid, &status, 0);
    CHECK(results[0] == 0);       // applied without error
    CHECK(results[1] == 0);       // inside a writable root
    CHECK(results[2] == EACCES);  // outside: refused by Landlock alone
    CHECK(fs::exists(inside / "ok"));
    CHECK_FALSE(fs::exists(outside / "denied"));
    fs::remove_all(inside);
    fs::remove_all(outside);
}
