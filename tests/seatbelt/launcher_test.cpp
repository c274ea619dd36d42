// What `cordon run` starts on macOS (seatbelt/launcher.hpp), computed on any platform.
#include "seatbelt/launcher.hpp"

#include <algorithm>
#include <catch2/catch.hpp>

namespace cordon::seatbelt {
namespace {

TEST_CASE(
    "the launch runs the command under sandbox-exec with the proxy's variables in place of the caller's") {
    std::string home = "HOME=/Users/me", proxy = "HTTP_PROXY=http://corp:8080", runtime = "SANDBOX_RUNTIME=0",
                tmpdir = "TMPDIR=/var/folders/x", path = "PATH=/usr/bin";
    char* env[] = {home.data(), proxy.data(), runtime.data(), tmpdir.data(), path.data(), nullptr};
    const Launch launch = plan_launch("(version 1)", {"/bin/sh", "-c", "echo hi"}, env,
                                      {{"HTTP_PROXY", "http://127.0.0.1:4321"}, {"NO_PROXY", "localhost"}},
                                      "/private/var/folders/x/cordon-run-1");
    CHECK(launch.argv ==
          std::vector<std::string>{kSandboxExec, "-p", "(version 1)", "/bin/sh", "-c", "echo hi"});
    CHECK(launch.env == std::vector<std::string>{"HOME=/Users/me", "PATH=/usr/bin",
                                                 "HTTP_PROXY=http://127.0.0.1:4321", "NO_PROXY=localhost",
                                                 "SANDBOX_RUNTIME=1",
                                                 "TMPDIR=/private/var/folders/x/cordon-run-1"});
}

TEST_CASE("with no proxy (--no-network) the environment only gains SANDBOX_RUNTIME") {
    std::string path = "PATH=/usr/bin";
    char* env[] = {path.data(), nullptr};
    const Launch launch = plan_launch("p", {"true"}, env, {}, "");
    CHECK(launch.env == std::vector<std::string>{"PATH=/usr/bin", "SANDBOX_RUNTIME=1"});
}

}  // namespace
}  // namespace cordon::seatbelt
