// --watch's PolicyWatch on a real libuv loop and real inotify: which directories a policy's sources live in,
// one debounced call per burst of changes, rename-over seen, a directory that appears later seen through its
// parent, and no call when nothing changed.
#include <uv.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "policy/policy.hpp"
#include "proxy/policy_watch.hpp"

namespace fs = std::filesystem;
using namespace cordon;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string tmpl = (fs::temp_directory_path() / "cordon-watch-XXXXXX").string();
        path = ::mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
};

void write(const fs::path& file, const std::string& text) {
    std::ofstream(file) << text;
}

policy::PolicyPtr load(const policy::LoadOptions& options) {
    auto result = policy::load_policy(options);
    REQUIRE(std::holds_alternative<policy::PolicyPtr>(result));
    return std::get<policy::PolicyPtr>(result);
}

// Runs the loop until `calls` reaches `want` or `ms` pass.
void run_for(uv_loop_t* loop, int& calls, int want, int ms) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (calls < want && std::chrono::steady_clock::now() < deadline)
        uv_run(loop, UV_RUN_NOWAIT), uv_sleep(5);
}

}  // namespace

TEST_CASE("policy_source_directories lists where every source lives") {
    TempDir dir;
    fs::create_directories(dir.path / "conf");
    fs::create_directories(dir.path / "real");
    write(dir.path / "real" / "s.json", R"({"network": {"allowedDomains": ["a.test"]}})");
    fs::create_symlink(dir.path / "real" / "s.json", dir.path / "conf" / "s.json");
    policy::LoadOptions options;
    options.managed_dir = dir.path / "managed";
    options.discover = true;
    options.cwd = dir.path / "project";
    options.home = dir.path / "home";
    options.settings_files = {dir.path / "conf" / "s.json"};
    auto policy = load(options);
    auto dirs = proxy::policy_source_directories(options, *policy);
    for (const auto& want :
         {dir.path / "managed", dir.path / "managed" / "managed-settings.d", dir.path / "conf",
          dir.path / "real", dir.path / "project" / ".claude", dir.path / "home" / ".claude"})
        CHECK(std::find(dirs.begin(), dirs.end(), want) != dirs.end());
}

TEST_CASE("PolicyWatch calls once per burst, sees rename-over and new directories") {
    TempDir dir;
    fs::create_directories(dir.path / "managed");
    write(dir.path / "s.json", R"({"network": {"allowedDomains": ["a.test"]}})");
    policy::LoadOptions options;
    options.managed_dir = dir.path / "managed";
    options.discover = false;
    options.settings_files = {dir.path / "s.json"};
    auto policy = load(options);

    uv_loop_t loop;
    uv_loop_init(&loop);
    int calls = 0;
    {
        auto watch = proxy::PolicyWatch::create(
            &loop, [&calls] { ++calls; }, std::chrono::milliseconds(200));
        CHECK(watch->arm(options, *policy).empty());

        run_for(&loop, calls, 1, 200);
        CHECK(calls == 0);  // nothing changed

        // Three writes in a row: one call.
        for (int i = 0; i < 3; ++i)
            write(dir.path / "s.json", R"({"network": {"allowedDomains": ["b.test"]}})");
        run_for(&loop, calls, 1, 3000);
        CHECK(calls == 1);
        run_for(&loop, calls, 2, 200);
        CHECK(calls == 1);

        // Rename-over.
        write(dir.path / "s.json.tmp", R"({"network": {"allowedDomains": ["c.test"]}})");
        fs::rename(dir.path / "s.json.tmp", dir.path / "s.json");
        run_for(&loop, calls, 2, 3000);
        CHECK(calls == 2);

        // managed-settings.d does not exist: its parent is watched, and after re-arming, the new directory.
        CHECK(watch->arm(options, *policy).empty());
        fs::create_directories(dir.path / "managed" / "managed-settings.d");
        run_for(&loop, calls, 3, 3000);
        CHECK(calls == 3);
        CHECK(watch->arm(options, *policy).empty());
        auto dirs = watch->directories();
        CHECK(std::find(dirs.begin(), dirs.end(), dir.path / "managed" / "managed-settings.d") != dirs.end());
        write(dir.path / "managed" / "managed-settings.d" / "10.json", "{}");
        run_for(&loop, calls, 4, 3000);
        CHECK(calls == 4);

        // Re-arming the same set is no change.
        CHECK(watch->arm(options, *policy).empty());
        run_for(&loop, calls, 5, 300);
        CHECK(calls == 4);
    }
    uv_run(&loop, UV_RUN_NOWAIT);  // close callbacks
    CHECK(uv_loop_close(&loop) == 0);
}
