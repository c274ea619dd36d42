// Git directories recognised by what they hold, not by their name (jail/git_dirs.hpp).
#include "jail/git_dirs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace cordon::jail;

namespace {

struct TempDir {
    fs::path path;
    TempDir() {
        std::string pattern = (fs::temp_directory_path() / "cordon-git-dirs-XXXXXX").string();
        path = ::mkdtemp(pattern.data());
    }
    ~TempDir() { fs::remove_all(path); }
};

bool signature(const fs::path& dir) {
    const int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    REQUIRE(fd >= 0);
    const bool out = git_dirs::holds_signature(fd);
    ::close(fd);
    return out;
}

}  // namespace

TEST_CASE("a git directory is HEAD next to objects, refs or commondir, whatever its name") {
    TempDir t;
    const fs::path d = t.path / ".bare";
    fs::create_directory(d);
    CHECK_FALSE(signature(d));
    std::ofstream(d / "HEAD") << "ref: refs/heads/main\n";
    CHECK_FALSE(signature(d));  // HEAD alone is any file
    for (const char* name : {"objects", "refs", "commondir"}) {
        const fs::path p = d / name;
        if (std::string(name) == "commondir")
            std::ofstream(p) << "../common\n";
        else
            fs::create_directory(p);
        CHECK(signature(d));
        fs::remove(p);
    }
    CHECK(git_dirs::is_signature_name("commondir"));
    CHECK_FALSE(git_dirs::is_signature_name("config"));
}
