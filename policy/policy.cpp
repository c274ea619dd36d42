// The immutable Policy: built once from the collected rules, then only read. Domain decisions go through two
// DomainMatchers (deny, allow); filesystem decisions walk the (short) path rule lists.
#include "policy/policy.hpp"

#include <array>
#include <nlohmann/json.hpp>

#include "policy/domain_matcher.hpp"
#include "policy/path_rules.hpp"
#include "policy/settings_loader.hpp"
#include "policy/syntax.hpp"

namespace cordon::policy {
namespace fs = std::filesystem;
using json = nlohmann::json;

std::string_view to_string(Layer layer) {
    switch (layer) {
        case Layer::Managed:
            return "managed";
        case Layer::Settings:
            return "settings";
        case Layer::Local:
            return "local";
        case Layer::Project:
            return "project";
        case Layer::User:
            return "user";
        case Layer::Flags:
            return "flags";
        case Layer::Default:
            return "default";
    }
    return "unknown";
}

std::string_view to_string(Verdict verdict) {
    return verdict == Verdict::Allow ? "allow" : "deny";
}

std::string_view to_string(Reason reason) {
    switch (reason) {
        case Reason::AllowedByRule:
            return "allowed";
        case Reason::BlockedByDenylist:
            return "blocked-by-denylist";
        case Reason::BlockedByAllowlist:
            return "blocked-by-allowlist";
        case Reason::DefaultAllow:
            return "default-allow";
        case Reason::DefaultDeny:
            return "default-deny";
        case Reason::AlwaysReadOnly:
            return "always-read-only";
    }
    return "unknown";
}

namespace {

json source_json(const Source& source) {
    return json{{"layer", std::string(to_string(source.layer))},
                {"file", source.file.empty() ? json(nullptr) : json(source.file)},
                {"line", source.line},
                {"where", source.where}};
}

json rule_json(const Rule& rule) {
    return json{{"rule", rule.text}, {"source", source_json(rule.source)}};
}

json path_rule_json(const PathRule& rule) {
    return json{{"rule", rule.rule.text},
                {"path", rule.path.string()},
                {"glob", rule.glob},
                {"source", source_json(rule.rule.source)}};
}

// The relative names that stay read-only wherever they appear (DESIGN.md "always read-only").
constexpr std::array<std::string_view, 15> kAlwaysReadOnly = {
    ".claude/settings.json",
    ".claude/settings.local.json",
    ".bashrc",
    ".bash_profile",
    ".zshrc",
    ".zprofile",
    ".profile",
    ".gitconfig",
    ".gitmodules",
    ".mcp.json",
    ".ripgreprc",
    ".git/hooks",
    ".git/config",
    ".vscode",
    ".idea",
};

// True when `sequence` occurs as consecutive components of `path` (".git/hooks" in /w/p/sub/.git/hooks/x).
bool contains_sequence(const std::vector<std::string>& path, const std::vector<std::string>& sequence) {
    if (sequence.empty() || sequence.size() > path.size()) return false;
    for (std::size_t i = 0; i + sequence.size() <= path.size(); ++i) {
        bool all = true;
        for (std::size_t k = 0; k < sequence.size() && all; ++k)
            all = path[i + k] == sequence[k];
        if (all) return true;
    }
    return false;
}

class PolicyImpl final : public Policy, public std::enable_shared_from_this<PolicyImpl> {
    // A decision points at a rule inside this policy and keeps the policy alive (aliasing shared_ptr): no
    // copy of the rule's strings on the lookup path.
    Decision make(Verdict verdict, Reason reason, const Rule* rule) const {
        Decision d;
        d.verdict = verdict;
        d.reason = reason;
        if (rule != nullptr) d.rule = std::shared_ptr<const Rule>(shared_from_this(), rule);
        return d;
    }

  public:
    explicit PolicyImpl(detail::Collected&& c) : cwd_(c.cwd), files_read_(std::move(c.files_read)) {
        warnings_ = std::move(c.warnings);
        network_.allow_managed_domains_only = c.managed_only;
        network_.allow_all_unix_sockets = c.allow_all_unix_sockets.value_or(false);
        network_.allowed_addresses = std::move(c.addresses);
        network_.allowed_ranges = std::move(c.ranges);
        network_.allow_unix_sockets = std::move(c.unix_sockets);
        network_.allowed_domains = std::move(c.allow.rules);
        network_.denied_domains = std::move(c.deny.rules);
        network_.ignored_allows = std::move(c.ignored_allows);
        allow_ = std::move(c.allow.matcher);
        deny_ = std::move(c.deny.matcher);

        // Defaults: the working directory and the private temp dir are writable; protected names and every
        // settings file read are not.
        fs_.allow_write.push_back(
            PathRule{c.cwd, false, Rule{c.cwd.string(), Source{Layer::Default, "", "working directory", 0}}});
        fs_.allow_write.push_back(
            PathRule{"/tmp", false, Rule{"/tmp", Source{Layer::Default, "", "private temp directory", 0}}});
        for (auto& rule : c.allow_write)
            fs_.allow_write.push_back(std::move(rule));
        for (const fs::path& file : files_read_) {
            Rule rule{file.string(), Source{Layer::Default, file.string(), "settings file read", 0}};
            settings_rules_.push_back(PathRule{fs::path(detail::normal_path(file)), false, rule});
            fs_.deny_write.push_back(settings_rules_.back());
            // A settings file reached through a symlink is protected at its target too.
            std::error_code ec;
            fs::path target = fs::weakly_canonical(file, ec);
            if (!ec && detail::normal_path(target) != settings_rules_.back().path.string()) {
                settings_rules_.push_back(PathRule{fs::path(detail::normal_path(target)), false, rule});
                fs_.deny_write.push_back(settings_rules_.back());
            }
        }
        fs_.allow_git_config = c.allow_git_config.value_or(false);
        for (std::string_view name : kAlwaysReadOnly) {
            // allowGitConfig (srt): git may write .git/config; .git/hooks stays protected.
            if (fs_.allow_git_config && name == ".git/config") continue;
            fs_.always_read_only_names.emplace_back(name);
            Rule rule{std::string(name), Source{Layer::Default, "", "always read-only", 0}};
            name_rules_.push_back(rule);
            name_components_.push_back(detail::split_components(name));
            fs_.deny_write.push_back(PathRule{c.cwd / std::string(name), false, rule});
        }
        for (auto& rule : c.deny_write)
            fs_.deny_write.push_back(std::move(rule));
        fs_.deny_read = std::move(c.deny_read);
        fs_.allow_read = std::move(c.allow_read);
    }

    Decision decide_connect(std::string_view host, std::uint16_t port) const override {
        // Plain ASCII names (the common case) are normalised into a stack buffer; IP literals, IDN and
        // invalid input take the general path.
        std::array<char, 256> buffer;
        std::string_view normal;
        std::string general;
        detail::HostKind kind = detail::HostKind::Name;
        if (!detail::normalise_plain_name(host, buffer, normal)) {
            kind = detail::normalise_host(host, general);
            if (kind == detail::HostKind::Invalid)
                return make(Verdict::Deny, Reason::BlockedByAllowlist, nullptr);
            normal = general;
        }
        if (auto d = deny_.match(kind, normal, port); d != detail::DomainMatcher::kNone)
            return make(Verdict::Deny, Reason::BlockedByDenylist, &network_.denied_domains[d]);
        if (auto a = allow_.match(kind, normal, port); a != detail::DomainMatcher::kNone)
            return make(Verdict::Allow, Reason::AllowedByRule, &network_.allowed_domains[a]);
        return make(Verdict::Deny, Reason::BlockedByAllowlist, nullptr);
    }

    Decision decide_read(const fs::path& path) const override {
        const std::string p = normal(path);
        const PathRule* deny = longest(fs_.deny_read, p);
        if (deny == nullptr) return make(Verdict::Allow, Reason::DefaultAllow, nullptr);
        const PathRule* allow = longest(fs_.allow_read, p);
        if (allow != nullptr && allow->path.string().size() > deny->path.string().size())
            return make(Verdict::Allow, Reason::AllowedByRule, &allow->rule);
        return make(Verdict::Deny, Reason::BlockedByDenylist, &deny->rule);
    }

    Decision decide_write(const fs::path& path) const override {
        const std::string p = normal(path);
        for (const PathRule& rule : settings_rules_)
            if (rule.path.string() == p) return make(Verdict::Deny, Reason::AlwaysReadOnly, &rule.rule);
        const std::vector<std::string> components = detail::split_components(p);
        for (std::size_t i = 0; i < name_components_.size(); ++i)
            if (contains_sequence(components, name_components_[i]))
                return make(Verdict::Deny, Reason::AlwaysReadOnly, &name_rules_[i]);
        for (const PathRule& rule : fs_.deny_write) {
            if (rule.rule.source.layer == Layer::Default) continue;  // checked above
            if (detail::path_covers(rule.path.string(), rule.glob, p))
                return make(Verdict::Deny, Reason::BlockedByDenylist, &rule.rule);
        }
        if (const PathRule* allow = longest(fs_.allow_write, p))
            return make(Verdict::Allow, Reason::AllowedByRule, &allow->rule);
        return make(Verdict::Deny, Reason::DefaultDeny, nullptr);
    }

    const NetworkPolicy& network() const override { return network_; }
    const FilesystemPolicy& filesystem() const override { return fs_; }
    const std::vector<fs::path>& files_read() const override { return files_read_; }
    const std::vector<std::string>& warnings() const override { return warnings_; }

    json to_json() const override {
        auto rules = [](const std::vector<Rule>& list) {
            json out = json::array();
            for (const Rule& rule : list)
                out.push_back(rule_json(rule));
            return out;
        };
        auto paths = [](const std::vector<PathRule>& list) {
            json out = json::array();
            for (const PathRule& rule : list)
                out.push_back(path_rule_json(rule));
            return out;
        };
        json files = json::array();
        for (const fs::path& file : files_read_)
            files.push_back(file.string());
        return json{
            {"network",
             {{"allowedDomains", rules(network_.allowed_domains)},
              {"deniedDomains", rules(network_.denied_domains)},
              {"ignoredAllowedDomains", rules(network_.ignored_allows)},
              {"allowedAddresses", rules(network_.allowed_addresses)},
              {"allowUnixSockets", rules(network_.allow_unix_sockets)},
              {"allowAllUnixSockets", network_.allow_all_unix_sockets},
              {"allowManagedDomainsOnly", network_.allow_managed_domains_only}}},
            {"filesystem",
             {{"allowWrite", paths(fs_.allow_write)},
              {"denyWrite", paths(fs_.deny_write)},
              {"denyRead", paths(fs_.deny_read)},
              {"allowRead", paths(fs_.allow_read)},
              {"alwaysReadOnlyNames", fs_.always_read_only_names},
              {"allowGitConfig", fs_.allow_git_config}}},
            {"filesRead", files},
            {"warnings", warnings_},
        };
    }

  private:
    std::string normal(const fs::path& path) const {
        return detail::normal_path(path.is_absolute() ? path : cwd_ / path);
    }

    // The most specific (longest) rule of `rules` that covers `path`.
    static const PathRule* longest(const std::vector<PathRule>& rules, const std::string& path) {
        const PathRule* best = nullptr;
        for (const PathRule& rule : rules) {
            if (!detail::path_covers(rule.path.string(), rule.glob, path)) continue;
            if (best == nullptr || rule.path.string().size() > best->path.string().size()) best = &rule;
        }
        return best;
    }

    fs::path cwd_;
    NetworkPolicy network_;
    FilesystemPolicy fs_;
    std::vector<fs::path> files_read_;
    std::vector<std::string> warnings_;
    detail::DomainMatcher allow_, deny_;
    std::vector<PathRule> settings_rules_;
    std::vector<Rule> name_rules_;
    std::vector<std::vector<std::string>> name_components_;
};

}  // namespace

std::string Decision::explain() const {
    std::string out = std::string(to_string(verdict)) + ": " + std::string(to_string(reason));
    if (rule) out += " by `" + rule->text + "` (" + format_source(rule->source) + ")";
    return out;
}

json Decision::to_json() const {
    return json{{"decision", std::string(to_string(verdict))},
                {"reason", std::string(to_string(reason))},
                {"rule", rule ? json(rule->text) : json(nullptr)},
                {"source", rule ? source_json(rule->source) : json(nullptr)}};
}

std::variant<PolicyPtr, LoadError> load_policy(const LoadOptions& options) {
    detail::Collected collected;
    if (auto error = detail::collect(options, collected)) return *error;
    try {
        return PolicyPtr(std::make_shared<PolicyImpl>(std::move(collected)));
    } catch (const std::exception& e) {
        return LoadError{std::string("cannot build the policy: ") + e.what()};
    }
}

}  // namespace cordon::policy
