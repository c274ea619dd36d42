#include "cli/policy_reload.hpp"

#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace cordon::cli {

namespace fs = std::filesystem;

PolicyReloader::PolicyReloader(std::string who, policy::LoadOptions load, proxy::Proxy* proxy,
                               policy::PolicyPtr current, bool jail)
    : who_(std::move(who)), load_(std::move(load)), proxy_(proxy), current_(current) {
    if (jail) jail_policy_ = current;
}

void PolicyReloader::reload_now(const char* why) {
    reload(why, false);
}

void PolicyReloader::watch(uv_loop_s* loop) {
    watch_ = proxy::PolicyWatch::create(loop, [this] {
        reload("--watch", true);
        // New files and directories may have appeared.
        for (const auto& error : watch_->arm(load_, *current_))
            std::cerr << who_ << ": warning: --watch: " << error << "; changes there are not seen\n";
    });
    // At start, a source that cannot be watched stops the command: --watch would silently not apply.
    auto errors = watch_->arm(load_, *current_);
    if (!errors.empty()) throw std::runtime_error("--watch: " + errors.front());
}

namespace {

// Whether the jail built from `jail` lets its command create or replace `file`: the file itself writable, or
// its directory (a new file, a rename-over).
std::optional<std::string> jail_writable(const policy::Policy& jail, const fs::path& file) {
    auto writable = [&jail](const fs::path& path) {
        auto decision = jail.decide_write(path);
        // The jail's /tmp is its own empty tmpfs: the host's /tmp is out of its reach.
        return decision.allowed() &&
               !(decision.rule && decision.rule->source.layer == policy::Layer::Default &&
                 decision.rule->text == "/tmp");
    };
    if (writable(file)) return file.string() + " can be written from inside the jail";
    if (writable(file.parent_path() / ".cordon-watch-probe"))
        return file.string() + " lies in " + file.parent_path().string() +
               ", where the jailed command can create and rename files";
    return std::nullopt;
}

}  // namespace

std::optional<std::string> PolicyReloader::writable_source() const {
    if (!jail_policy_) return std::nullopt;
    // Every file this policy was read from, and managed-settings.d, where any new *.json is read.
    std::error_code ec;
    fs::path managed =
        load_.managed_dir.is_absolute() ? load_.managed_dir : fs::current_path(ec) / load_.managed_dir;
    std::vector<fs::path> sources(current_->files_read().begin(), current_->files_read().end());
    sources.push_back(managed.lexically_normal() / "managed-settings.d" / "new.json");
    sources.push_back(managed.lexically_normal() / "managed-settings.json");
    for (const auto& file : sources) {
        fs::path full = file.is_absolute() ? file : fs::current_path(ec) / file;
        if (auto why = jail_writable(*jail_policy_, full.lexically_normal())) return why;
    }
    return std::nullopt;
}

void PolicyReloader::reload(const char* why, bool quiet_when_unchanged) {
    auto result = policy::load_policy(load_);
    std::string error;
    policy::PolicyPtr next;
    if (auto* load_error = std::get_if<policy::LoadError>(&result)) {
        error = load_error->message;
    } else {
        next = std::get<policy::PolicyPtr>(std::move(result));
        if (jail_policy_) {
            // The jail's command must not be able to widen its own network policy: a source it could write
            // (or create) is refused, whatever it says.
            for (const auto& file : next->files_read()) {
                if (auto writable = jail_writable(*jail_policy_, file)) {
                    error = *writable + "; a jailed command could change its own policy";
                    break;
                }
            }
        }
    }
    if (!error.empty()) {
        if (quiet_when_unchanged && error == last_error_) return;  // still the same broken file
        proxy_->count_policy_reload(false);
        last_error_ = error;
        std::cerr << who_ << ": " << why << ": " << error << "\n"
                  << who_ << ": " << why << ": the new policy is invalid; keeping the old one\n";
        return;
    }
    last_error_.clear();
    auto view = [this](const policy::Policy& p) {
        return jail_policy_ ? p.to_json()["network"] : p.to_json();
    };
    if (quiet_when_unchanged && view(*next) == view(*current_))
        return;  // an unrelated file, or the same rules
    for (const auto& warning : next->warnings())
        std::cerr << who_ << ": warning: " << warning << "\n";
    current_ = next;
    proxy_->set_policy(next);
    proxy_->count_policy_reload(true);
    std::cerr << who_ << ": " << why << ": " << (jail_policy_ ? "network policy" : "policy") << " reloaded\n";
}

}  // namespace cordon::cli
