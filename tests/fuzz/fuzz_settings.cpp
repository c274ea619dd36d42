// The settings loader (policy/settings_loader.cpp) and the rule strings in it: a fuzzed file read as a
// --settings file, a managed file or a project's .claude/settings.json (Claude Code or srt shape: WebFetch /
// Read / Edit rules, domain lists, paths, addresses). A file that loads must give a policy that decides and
// prints; one that does not must say why.
//
// Input: byte 0 = where the file goes (mod 3: --settings, managed-settings.json, .claude/settings.json), then
// the file's bytes.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "policy/policy.hpp"

namespace fs = std::filesystem;

namespace {

void check(bool ok) {
    if (!ok) std::abort();
}

struct Dirs {
    fs::path root, project, home, managed;
    Dirs() {
        char tmpl[] = "/tmp/cordon-fuzz-settings-XXXXXX";
        root = ::mkdtemp(tmpl);
        project = root / "project";
        home = root / "home";
        managed = root / "managed";
        fs::create_directories(project / ".claude");
        fs::create_directories(home);
        fs::create_directories(managed);
    }
    ~Dirs() {
        std::error_code ec;
        fs::remove_all(root, ec);
    }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static Dirs dirs;
    if (size == 0) return 0;
    const int where = data[0] % 3;
    const fs::path files[] = {dirs.root / "settings.json", dirs.managed / "managed-settings.json",
                              dirs.project / ".claude" / "settings.json"};
    for (const auto& f : files)
        fs::remove(f);
    {
        std::ofstream out(files[where], std::ios::binary);
        out.write(reinterpret_cast<const char*>(data + 1), static_cast<std::streamsize>(size - 1));
    }

    cordon::policy::LoadOptions o;
    o.cwd = dirs.project;
    o.home = dirs.home;
    o.managed_dir = dirs.managed;
    o.discover = where == 2;
    if (where == 0) o.settings_files = {files[0]};
    auto loaded = cordon::policy::load_policy(o);
    if (auto* error = std::get_if<cordon::policy::LoadError>(&loaded)) {
        check(!error->message.empty());
        return 0;
    }
    const auto& policy = *std::get<cordon::policy::PolicyPtr>(loaded);
    (void)policy.to_json().dump();
    for (const char* host : {"example.com", "a.b.example.org", "127.0.0.1", "::1", "xn--bcher-kva.example"}) {
        auto d = policy.decide_connect(host, 443);
        (void)d.explain();
        (void)d.to_json();
    }
    (void)policy.decide_read(dirs.home / ".ssh" / "id_rsa").explain();
    (void)policy.decide_write(dirs.project / "src" / "main.c").explain();
    (void)policy.decide_write("/etc/passwd").explain();
    return 0;
}
