// Helpers for the policy tests: a temporary directory tree (cwd, home, managed dir) removed at the end of
// each test, settings files written into it, and loading with everything pointed inside it.
#pragma once

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <variant>

#include "policy/policy.hpp"

namespace cordon::policy::test {

namespace fs = std::filesystem;

class TempTree {
  public:
    TempTree() {
        std::string tmpl = (fs::temp_directory_path() / "cordon-policy-test-XXXXXX").string();
        if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        root_ = tmpl;
        fs::create_directories(cwd());
        fs::create_directories(home());
        fs::create_directories(managed());
    }
    ~TempTree() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    TempTree(const TempTree&) = delete;
    TempTree& operator=(const TempTree&) = delete;

    fs::path root() const { return root_; }
    fs::path cwd() const { return root_ / "project"; }
    fs::path home() const { return root_ / "home"; }
    fs::path managed() const { return root_ / "managed"; }

    // Writes `text` to `path` (relative paths are under the root), creating directories. Returns the full
    // path.
    fs::path write(const fs::path& path, const std::string& text) const {
        fs::path full = path.is_absolute() ? path : root_ / path;
        fs::create_directories(full.parent_path());
        std::ofstream(full, std::ios::binary) << text;
        return full;
    }
    fs::path project_settings(const std::string& text) const {
        return write(cwd() / ".claude/settings.json", text);
    }
    fs::path local_settings(const std::string& text) const {
        return write(cwd() / ".claude/settings.local.json", text);
    }
    fs::path user_settings(const std::string& text) const {
        return write(home() / ".claude/settings.json", text);
    }
    fs::path managed_settings(const std::string& text) const {
        return write(managed() / "managed-settings.json", text);
    }

    LoadOptions options() const {
        LoadOptions o;
        o.cwd = cwd();
        o.home = home();
        o.managed_dir = managed();
        return o;
    }

  private:
    fs::path root_;
};

inline PolicyPtr load_ok(const LoadOptions& options) {
    auto result = load_policy(options);
    if (auto* error = std::get_if<LoadError>(&result)) FAIL("unexpected load error: " << error->message);
    return std::get<PolicyPtr>(result);
}

inline std::string load_error(const LoadOptions& options) {
    auto result = load_policy(options);
    if (std::holds_alternative<PolicyPtr>(result)) FAIL("expected a load error, policy loaded");
    return std::get<LoadError>(result).message;
}

// A policy from flags only.
inline PolicyPtr flags_policy(const std::vector<std::string>& allow,
                              const std::vector<std::string>& deny = {}) {
    TempTree tree;
    LoadOptions o = tree.options();
    o.allow_domains = allow;
    o.deny_domains = deny;
    return load_ok(o);
}

inline bool allows(const PolicyPtr& policy, std::string_view host, std::uint16_t port = 443) {
    return policy->decide_connect(host, port).allowed();
}

// A settings file holding `sandbox.network.allowedDomains` = the given JSON array text.
inline std::string allowed_domains_json(const std::string& array) {
    return R"({"sandbox": {"network": {"allowedDomains": )" + array + "}}}";
}

}  // namespace cordon::policy::test
