// The immutable Policy: built once from the collected rules, then only read. Domain decisions go through two
// DomainMatchers (deny, allow); filesystem decisions walk the (short) path rule lists.
#include "policy/policy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <unordered_set>
#include <utility>

#include "policy/domain_matcher.hpp"
#include "policy/inspection.hpp"
#include "policy/path_components.hpp"
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
        case Layer::Control:
            return "control";
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
        case Reason::OutsideReadScope:
            return "outside-read-scope";
    }
    return "unknown";
}

std::string_view to_string(ReadScope scope) {
    return scope == ReadScope::Project ? "project" : "all";
}

namespace {

constexpr const char* kPrivateTmpWhy =
    "read scope: the jail's private /tmp (the host's files there are not shown)";

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

// The home directory of `uid` in /etc/passwd (read directly: a statically linked glibc loads the host's NSS
// modules for getpwuid), or empty when it is not listed there.
std::string passwd_home(uid_t uid) {
    std::ifstream in("/etc/passwd");
    std::string line;
    const std::string id = std::to_string(uid);
    while (std::getline(in, line)) {
        // name:password:uid:gid:gecos:home:shell
        std::vector<std::string> fields;
        std::size_t start = 0;
        for (std::size_t i = 0; i <= line.size(); ++i)
            if (i == line.size() || line[i] == ':') {
                fields.push_back(line.substr(start, i - start));
                start = i + 1;
            }
        if (fields.size() >= 6 && fields[2] == id && !fields[5].empty() && fields[5][0] == '/')
            return detail::normal_path(fields[5]);
    }
    return {};
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

    // A refusal's deniedDomainReasons entry, the highest layer's among those whose pattern matches.
    Decision with_reason(Decision d, detail::HostKind kind, std::string_view host, std::uint16_t port) const {
        if (reasons_.size() == 0) return d;
        if (auto r = reasons_.match(kind, host, port); r != detail::DomainMatcher::kNone)
            d.reason_text =
                std::shared_ptr<const DomainReason>(shared_from_this(), &network_.denied_domain_reasons[r]);
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
        network_.host_ports = std::move(c.host_ports);
        network_.publish_ports = std::move(c.publish_ports);
        network_.allowed_domains = std::move(c.allow.rules);
        network_.denied_domains = std::move(c.deny.rules);
        network_.denied_domain_reasons = std::move(c.reasons);
        reasons_ = std::move(c.reason_matcher);
        network_.ignored_allows = std::move(c.ignored_allows);
        network_.inspection = std::make_shared<const InspectionPolicy>(std::move(c.inspection));
        network_.strict_allowlist = c.strict_allowlist.value_or(false);
        network_.report_only = c.report_only.value_or(false);
        network_.report_only_rule = std::move(c.report_only_rule);
        commands_ = std::move(c.commands);
        commands_.sandbox_enabled = c.sandbox_enabled.value_or(false);
        commands_.auto_allow_bash_if_sandboxed = c.auto_allow_bash.value_or(true);
        commands_.allow_unsandboxed_commands = c.allow_unsandboxed.value_or(true);
        allow_ = std::move(c.allow.matcher);
        deny_ = std::move(c.deny.matcher);

        // Defaults: the working directory (when it is a project, see WorkingDirectory) and the private temp
        // dir are writable; protected names and every settings file read are not.
        fs_.home = c.home;
        fs_.other_homes = c.other_homes;
        auto& wd = fs_.working_directory;
        wd.path = c.cwd;
        wd.refusal = working_directory_refusal(c.cwd, c.home);
        // $HOME may name another directory than the caller's own (a script sets it): that one counts too.
        if (wd.refusal.empty())
            if (std::string own = passwd_home(::getuid()); !own.empty() && own != c.home.string())
                wd.refusal = working_directory_refusal(c.cwd, own);
        if (wd.refusal.empty())
            fs_.allow_write.push_back(PathRule{
                c.cwd, false, Rule{c.cwd.string(), Source{Layer::Default, "", "working directory", 0}}});
        fs_.allow_write.push_back(
            PathRule{"/tmp", false, Rule{"/tmp", Source{Layer::Default, "", "private temp directory", 0}}});
        std::vector<bool> follow;
        for (const auto& rule : c.allow_write)
            follow.push_back(follow_allow_write(rule, c.allow_write));
        for (std::size_t i = 0; i < c.allow_write.size(); ++i)
            if (follow[i]) fs_.allow_write.push_back(std::move(c.allow_write[i]));
        if (!wd.refusal.empty()) {
            // `--allow-write .` (any allowWrite covering it) insists; otherwise writes below it are refused
            // with the reason, which `cordon check` shows and `cordon run` stops on.
            wd.writable =
                std::any_of(fs_.allow_write.begin(), fs_.allow_write.end(), [&](const PathRule& rule) {
                    return rule.rule.source.layer != Layer::Default &&
                           detail::path_covers(rule.path.string(), rule.glob, c.cwd.string());
                });
            cwd_refusal_rule_ =
                Rule{c.cwd.string(), Source{Layer::Default, "",
                                            "working directory not writable by default: " + wd.refusal +
                                                " (--allow-write . insists)",
                                            0}};
        }
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
        fs_.allow_bare_repositories = c.allow_bare_repositories.value_or(false);
        for (const std::string& name : always_read_only_names()) {
            // allowGitConfig (srt): git may write .git/config; .git/hooks stays protected.
            if (fs_.allow_git_config && name == ".git/config") continue;
            fs_.always_read_only_names.push_back(name);
            Rule rule{name, Source{Layer::Default, "", "always read-only", 0}};
            name_rules_.push_back(rule);
            name_components_.push_back(path_components::split_non_empty(name));
            fs_.deny_write.push_back(PathRule{c.cwd / name, false, rule});
        }
        for (const std::string& name : git_dir_names()) {
            name_rules_.push_back(
                Rule{name, Source{Layer::Default, "", "always read-only in a git directory", 0}});
            name_components_.push_back(path_components::split_non_empty(name));
        }
        for (const std::string& name : home_read_only_names()) {
            fs_.home_read_only_names.push_back(name);
            home_rules_.push_back(
                Rule{"~/" + name, Source{Layer::Default, "", "always read-only in a home", 0}});
            home_components_.push_back(path_components::split_non_empty(name));
            // No home (HOME=/): the names hold in /root and /home/* only (decide_write), not at the top of /.
            if (c.home != "/") fs_.deny_write.push_back(PathRule{c.home / name, false, home_rules_.back()});
        }
        home_components_of_home_ = path_components::split_non_empty(c.home.string());
        for (const fs::path& other : c.other_homes)
            other_home_components_.push_back(path_components::split_non_empty(other.string()));
        for (auto& rule : c.deny_write)
            fs_.deny_write.push_back(std::move(rule));
        // cordon's own secrets (the CA's directory): denyWrite for the mount plan, and always read-only where
        // the write is decided (decide), like the protected names: no allowWrite lifts them.
        for (const PathRule& rule : c.private_dirs)
            fs_.deny_write.push_back(rule);
        private_rules_ = std::move(c.private_dirs);
        fs_.deny_read = std::move(c.deny_read);
        fs_.allow_read = std::move(c.allow_read);
        if (c.read_scope_project) make_read_scope(std::move(*c.read_scope_project));
        fs_.jail = std::move(c.jail);
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
            return with_reason(make(Verdict::Deny, Reason::BlockedByDenylist, &network_.denied_domains[d]),
                               kind, normal, port);
        if (auto a = allow_.match(kind, normal, port); a != detail::DomainMatcher::kNone)
            return make(Verdict::Allow, Reason::AllowedByRule, &network_.allowed_domains[a]);
        return with_reason(make(Verdict::Deny, Reason::BlockedByAllowlist, nullptr), kind, normal, port);
    }

    std::shared_ptr<const DomainReason> reason_for(std::string_view host, std::uint16_t port) const override {
        if (reasons_.size() == 0) return nullptr;
        std::string normal;
        detail::HostKind kind = detail::normalise_host(host, normal);
        if (kind == detail::HostKind::Invalid) return nullptr;
        return with_reason(make(Verdict::Deny, Reason::BlockedByAllowlist, nullptr), kind, normal, port)
            .reason_text;
    }

    Decision decide_read(const fs::path& path) const override {
        const std::string p = normal(path);
        if (fs_.read_scope.scope == ReadScope::All) return decide_read_rules(p);
        // The project scope: the jail shows only the scope, so a read reaches its file only when the path,
        // every symlink looked up on the way and where they lead lie in it (and no deny rule hides them).
        const PathRule* first = nullptr;
        for (const std::string& step : lookup_chain(p)) {
            Decision d = decide_read_rules(step);
            if (!d.allowed()) return d;
            for (const PathRule& hidden : fs_.read_scope.hidden)
                if (detail::path_covers(hidden.path.string(), hidden.glob, step))
                    return make(Verdict::Deny, Reason::BlockedByDenylist, &hidden.rule);
            const PathRule* in = longest(fs_.read_scope.include, step);
            if (in == nullptr) return make(Verdict::Deny, Reason::OutsideReadScope, &fs_.read_scope.rule);
            // The jail's /tmp is its own: what the host has there is not shown (what the command makes is).
            struct stat st {};
            if (in->rule.source.where == kPrivateTmpWhy && step != "/tmp" && ::lstat(step.c_str(), &st) == 0)
                return make(Verdict::Deny, Reason::OutsideReadScope, &in->rule);
            if (first == nullptr) first = in;
        }
        return make(Verdict::Allow, Reason::AllowedByRule, &first->rule);
    }

    // A write goes where the path leads through symlinks: decided on the resolved path (`ua/src/x` with
    // `ua/src -> /etc` is a write to /etc/x), and a deny rule also holds at the path as written. Rules are
    // compared as written and resolved, as the jail binds them.
    Decision decide_write(const fs::path& path) const override {
        const std::string lexical = normal(path);
        return decide(lexical, resolve_existing(lexical), nullptr);
    }

    Decision decide_write_resolved(
        const std::string& path,
        const std::function<bool(const std::string&)>& git_dir_existed) const override {
        // The jail's supervisor passes normal paths (a directory's path from the kernel and a name).
        const bool plain = path.size() > 1 && path[0] == '/' && path.back() != '/' &&
                           path.find("//") == std::string::npos && path.find("/./") == std::string::npos &&
                           path.find("/../") == std::string::npos && !path.ends_with("/.") &&
                           !path.ends_with("/..");
        const std::string p = plain ? path : detail::normal_path(path);
        return decide(p, p, &git_dir_existed);
    }

    bool holds_protected_names(const std::string& path) const override {
        const std::vector<std::string> components =
            path_components::split_non_empty(detail::normal_path(path));
        auto tail_is_prefix = [&](const std::vector<std::string>& name) {
            for (std::size_t n = 1; n < name.size() && n <= components.size(); ++n)
                if (std::equal(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(n),
                               components.end() - static_cast<std::ptrdiff_t>(n),
                               [](const std::string& x, const std::string& p) { return x == "*" || x == p; }))
                    return true;
            return false;
        };
        for (const auto& name : name_components_)
            if (tail_is_prefix(name)) return true;
        for (const auto& name : home_components_) {
            for (std::size_t n = 1; n < name.size(); ++n) {
                std::vector<std::string> head(name.begin(), name.begin() + static_cast<std::ptrdiff_t>(n));
                if (in_a_home(components, head)) return true;
            }
        }
        // An ancestor of cordon's own directories (the CA's, the sessions'): moved away, the path would be
        // free to make again with the command's content (a socket of its own under a session's name).
        const std::string normal = detail::normal_path(path);
        for (const PathRule& rule : private_rules_)
            if (rule.path.native() != normal && detail::path_covers(normal, false, rule.path.native()))
                return true;
        return false;
    }

    // `git_dir_existed`: null for `cordon check` (every existing git directory counts), otherwise asked
    // about the git directory of a `.git/...` name.
    Decision decide(const std::string& lexical, const std::string& resolved,
                    const std::function<bool(const std::string&)>* git_dir_existed) const {
        resolve_write_rules();
        // The jail's supervisor passes one path as both (each call of it): the same rules once.
        const bool same = &lexical == &resolved || lexical == resolved;
        for (int pass = 0; pass < (same ? 1 : 2); ++pass) {
            const std::string* p = pass == 0 ? &lexical : &resolved;
            for (const PathRule& rule : settings_rules_)
                if (rule.path.native() == *p) return make(Verdict::Deny, Reason::AlwaysReadOnly, &rule.rule);
            const std::vector<std::string> components = path_components::split_non_empty(*p);
            // A name matches only where each of its words (not `*`) is one of the path's components.
            const bool may_name = name_without_word_ ||
                                  std::any_of(components.begin(), components.end(),
                                              [&](const std::string& c) { return name_words_.count(c) > 0; });
            for (std::size_t i = 0; may_name && i < name_components_.size(); ++i)
                if (matches_name(components, name_components_[i], git_dir_existed))
                    return make(Verdict::Deny, Reason::AlwaysReadOnly, &name_rules_[i]);
            for (std::size_t i = 0; i < home_components_.size(); ++i)
                if (in_a_home(components, home_components_[i]))
                    return make(Verdict::Deny, Reason::AlwaysReadOnly, &home_rules_[i]);
            for (const PathRule& rule : private_rules_)
                if (detail::path_covers(rule.path.native(), false, *p))
                    return make(Verdict::Deny, Reason::AlwaysReadOnly, &rule.rule);
            for (std::size_t i = 0; i < fs_.deny_write.size(); ++i) {
                const PathRule& rule = fs_.deny_write[i];
                if (rule.rule.source.layer == Layer::Default) continue;  // checked above
                if (detail::path_covers(rule.path.native(), rule.glob, *p) ||
                    detail::path_covers(deny_resolved_[i], rule.glob, *p))
                    return make(Verdict::Deny, Reason::BlockedByDenylist, &rule.rule);
            }
        }
        const PathRule* best = nullptr;
        std::size_t best_size = 0;
        for (std::size_t i = 0; i < fs_.allow_write.size(); ++i) {
            const PathRule& rule = fs_.allow_write[i];
            for (const std::string* r : {&rule.path.native(), &std::as_const(allow_resolved_)[i]})
                if (detail::path_covers(*r, rule.glob, resolved) && (!best || r->size() > best_size)) {
                    best = &rule;
                    best_size = r->size();
                }
        }
        if (best) return make(Verdict::Allow, Reason::AllowedByRule, &best->rule);
        if (!fs_.working_directory.writable && (detail::path_covers(cwd_.string(), false, lexical) ||
                                                detail::path_covers(cwd_.string(), false, resolved)))
            return make(Verdict::Deny, Reason::DefaultDeny, &cwd_refusal_rule_);
        return make(Verdict::Deny, Reason::DefaultDeny, nullptr);
    }

    const NetworkPolicy& network() const override { return network_; }
    const FilesystemPolicy& filesystem() const override { return fs_; }
    const CommandPolicy& commands() const override { return commands_; }
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
        // allowUnixSockets entries with the path the jail checks (`~` expanded; see jail/unix_sockets.hpp).
        json sockets = rules(network_.allow_unix_sockets);
        for (std::size_t i = 0; i < network_.allow_unix_sockets.size(); ++i) {
            std::string p = network_.allow_unix_sockets[i].text;
            if (p == "~" || p.compare(0, 2, "~/") == 0) p = fs_.home.string() + p.substr(1);
            sockets[i]["path"] = p;
        }
        json files = json::array();
        for (const fs::path& file : files_read_)
            files.push_back(file.string());
        json reasons = json::array();
        for (const DomainReason& r : network_.denied_domain_reasons)
            reasons.push_back(
                {{"pattern", r.pattern}, {"reason", r.text}, {"source", source_json(r.source)}});
        return json{
            {"network",
             {{"allowedDomains", rules(network_.allowed_domains)},
              {"deniedDomains", rules(network_.denied_domains)},
              {"deniedDomainReasons", reasons},
              {"ignoredAllowedDomains", rules(network_.ignored_allows)},
              {"allowedAddresses", rules(network_.allowed_addresses)},
              {"allowUnixSockets", sockets},
              {"allowAllUnixSockets", network_.allow_all_unix_sockets},
              {"allowManagedDomainsOnly", network_.allow_managed_domains_only},
              {"strictAllowlist", network_.strict_allowlist},
              {"reportOnly", network_.report_only},
              {"hostPorts", rules(network_.host_ports)},
              {"publishPorts", rules(network_.publish_ports)}}},
            {"filesystem",
             {{"allowWrite", paths(fs_.allow_write)},
              {"denyWrite", paths(fs_.deny_write)},
              {"denyRead", paths(fs_.deny_read)},
              {"allowRead", paths(fs_.allow_read)},
              {"alwaysReadOnlyNames", fs_.always_read_only_names},
              {"homeReadOnlyNames", fs_.home_read_only_names},
              {"gitDirectoryNames", git_dir_names()},
              {"workingDirectory",
               {{"path", fs_.working_directory.path.string()},
                {"writable", fs_.working_directory.writable},
                {"refusal", fs_.working_directory.refusal.empty() ? json(nullptr)
                                                                  : json(fs_.working_directory.refusal)}}},
              {"allowGitConfig", fs_.allow_git_config},
              {"allowBareRepositories", fs_.allow_bare_repositories},
              {"readScope",
               {{"scope", std::string(to_string(fs_.read_scope.scope))},
                {"source",
                 fs_.read_scope.scope == ReadScope::Project ? rule_json(fs_.read_scope.rule) : json(nullptr)},
                {"includes", paths(fs_.read_scope.include)},
                {"hidden", paths(fs_.read_scope.hidden)}}}}},
            {"filesRead", files},
            {"warnings", warnings_},
            {"inspection", inspection_json()},
        };
    }

  private:
    // Issue 13's keys: what is inspected, the request rules, the parent proxy, the credentials (names only).
    json inspection_json() const {
        const InspectionPolicy& i = *network_.inspection;
        // A parent proxy's password is never printed.
        auto redact = [](std::string url) {
            auto scheme = url.find("://");
            auto at = url.rfind('@');
            auto colon = url.find(':', scheme == std::string::npos ? 0 : scheme + 3);
            if (at != std::string::npos && colon != std::string::npos && colon < at)
                url.replace(colon + 1, at - colon - 1, "***");
            return url;
        };
        auto hosts = [](const std::vector<HostPattern>& list) {
            json out = json::array();
            for (const auto& h : list)
                out.push_back(rule_json(h.rule));
            return out;
        };
        json rules = json::array();
        for (const auto& r : i.request_rules)
            rules.push_back(rule_json(r.host.rule));
        json secrets = json::array();
        for (const auto& s : i.secrets)
            secrets.push_back({{"name", s.name},
                               {"mode", s.mask ? "mask" : "deny"},
                               {"injectHosts", s.inject_hosts},
                               {"headers", s.headers}});
        return json{{"inspect", hosts(i.inspect)},
                    {"terminateAll", i.terminate_all},
                    {"excludeDomains", hosts(i.exclude)},
                    {"refuseOpaqueTunnels", i.refuse_opaque_tunnels},
                    {"requestRules", rules},
                    {"parentProxy", i.parent_proxy.https.empty() && i.parent_proxy.http.empty()
                                        ? json(nullptr)
                                        : json{{"http", redact(i.parent_proxy.http)},
                                               {"https", redact(i.parent_proxy.https)},
                                               {"noProxy", i.parent_proxy.no_proxy}}},
                    {"credentials", secrets}};
    }

    // denyRead / allowRead alone (srt's semantics: everything readable but denyRead).
    Decision decide_read_rules(const std::string& p) const {
        const PathRule* deny = longest(fs_.deny_read, p);
        if (deny == nullptr) return make(Verdict::Allow, Reason::DefaultAllow, nullptr);
        const PathRule* allow = longest(fs_.allow_read, p);
        if (allow != nullptr && allow->path.string().size() > deny->path.string().size())
            return make(Verdict::Allow, Reason::AllowedByRule, &allow->rule);
        return make(Verdict::Deny, Reason::BlockedByDenylist, &deny->rule);
    }

    // The paths a lookup of `path` (absolute, normal) visits that the jail must show: the path as written,
    // every symlink met on the way (at its own place), and the path it leads to. Missing components are
    // taken as written.
    static std::vector<std::string> lookup_chain(const std::string& path) {
        std::vector<std::string> chain{path};
        std::vector<std::string> rest = path_components::split_non_empty(path);
        std::reverse(rest.begin(), rest.end());  // a stack: the next component last
        std::string at;                          // resolved so far ("" is /)
        int links = 0;
        bool missing = false;
        while (!rest.empty()) {
            std::string part = std::move(rest.back());
            rest.pop_back();
            if (part == ".") continue;
            if (part == "..") {
                at = at.substr(0, at.rfind('/'));
                continue;
            }
            std::string next = at + "/" + part;
            struct stat st {};
            if (!missing && ::lstat(next.c_str(), &st) != 0) missing = true;
            if (missing || !S_ISLNK(st.st_mode) || ++links > 40) {
                at = std::move(next);
                continue;
            }
            chain.push_back(next);
            std::error_code ec;
            const std::string target = fs::read_symlink(next, ec).string();
            if (ec || target.empty()) {
                at = std::move(next);
                continue;
            }
            if (target.front() == '/') at.clear();
            std::vector<std::string> parts = path_components::split_non_empty(target);
            for (auto it = parts.rbegin(); it != parts.rend(); ++it)
                rest.push_back(std::move(*it));
        }
        std::string end = at.empty() ? "/" : at;
        if (end != path) chain.push_back(std::move(end));
        return chain;
    }

    // The project read scope (see policy.hpp ReadScope): what the jail shows, each entry with why.
    void make_read_scope(Rule asked) {
        auto& scope = fs_.read_scope;
        scope.scope = ReadScope::Project;
        scope.rule = std::move(asked);
        auto add = [&](const fs::path& path, bool glob, const std::string& text, const std::string& why) {
            scope.include.push_back(PathRule{path, glob, Rule{text, Source{Layer::Default, "", why, 0}}});
        };
        for (const std::string& system : read_scope_system_paths()) {
            struct stat st {};
            if (system == "/tmp")
                add(system, false, system, kPrivateTmpWhy);
            else if (::lstat(system.c_str(), &st) == 0)  // /lib32, /libx32: where they exist
                add(system, false, system, "read scope: system path");
        }
        // A resolv.conf managed elsewhere (systemd-resolved: /run/systemd/resolve/stub-resolv.conf).
        std::error_code ec;
        if (fs::is_symlink("/etc/resolv.conf", ec)) {
            fs::path target = fs::weakly_canonical("/etc/resolv.conf", ec);
            if (!ec) add(target, false, target.string(), "read scope: where /etc/resolv.conf leads");
        }
        // cordon's own binary: the jail's GIT_SSH_COMMAND runs it as `cordon connect`.
        fs::path self = fs::read_symlink("/proc/self/exe", ec);
        if (!ec && self.is_absolute()) add(self, false, self.string(), "read scope: cordon's own binary");
        for (const PathRule& rule : fs_.allow_write) {
            if (rule.rule.source.layer == Layer::Default && rule.path == "/tmp") continue;  // above
            PathRule in = rule;
            in.rule.source.where = "read scope: writable (" + rule.rule.source.where + ")";
            if (rule.rule.source.layer != Layer::Default) in.rule = rule.rule;
            scope.include.push_back(std::move(in));
        }
        // Below the host's /tmp the jail shows only writable roots and cordon's binary (its /tmp is its own).
        auto below_tmp = [](const fs::path& p) {
            return p != "/tmp" && detail::path_covers("/tmp", false, p.string());
        };
        for (const PathRule& rule : settings_rules_)
            if (!below_tmp(rule.path))
                add(rule.path, false, rule.path.string(), "read scope: settings file read");
        for (const PathRule& rule : fs_.allow_read)
            if (!below_tmp(rule.path)) scope.include.push_back(rule);
        for (const std::string& hidden : read_scope_hidden_paths())
            scope.hidden.push_back(
                PathRule{hidden, detail::has_glob(hidden),
                         Rule{hidden, Source{Layer::Default, "", "read scope: secret", 0}}});
    }

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

    // Resolves symlinks in the existing prefix of an absolute, normal path (what a write would follow).
    static std::string resolve_existing(const std::string& path) {
        std::error_code ec;
        fs::path r = fs::weakly_canonical(path, ec);
        return ec ? path : detail::normal_path(r);
    }

    static std::string resolved_rule_path(const PathRule& rule) {
        return rule.glob ? rule.path.string() : resolve_existing(rule.path.string());
    }

    // The write rules' paths resolved through symlinks, for decide_write only (`cordon check`): `cordon run`
    // never asks, and resolving them (a stat and a readlink per component) would lengthen its start-up.
    // The defaults are matched by name; resolving them would only cost time.
    void resolve_write_rules() const {
        std::call_once(write_rules_resolved_, [this] {
            for (const auto& name : name_components_) {
                bool word = false;
                for (const std::string& c : name)
                    if (c != "*") {
                        name_words_.insert(c);
                        word = true;
                    }
                if (!word) name_without_word_ = true;
            }
            for (const PathRule& rule : fs_.allow_write)
                allow_resolved_.push_back(resolved_rule_path(rule));
            for (const PathRule& rule : fs_.deny_write)
                deny_resolved_.push_back(rule.rule.source.layer == Layer::Default ? std::string()
                                                                                  : resolved_rule_path(rule));
        });
    }

    // True when `name` occurs in `path`; a name inside a git directory (`.git/hooks`) only where that git
    // directory existed when the run started (asked of `git_dir_existed`, when given).
    static bool matches_name(const std::vector<std::string>& path, const std::vector<std::string>& name,
                             const std::function<bool(const std::string&)>* git_dir_existed) {
        if (name.empty() || name.size() > path.size()) return false;
        for (std::size_t i = 0; i + name.size() <= path.size(); ++i) {
            if (!std::equal(name.begin(), name.end(), path.begin() + static_cast<std::ptrdiff_t>(i),
                            [](const std::string& n, const std::string& p) { return n == "*" || n == p; }))
                continue;
            if (!git_dir_existed || !*git_dir_existed || name[0] != ".git" || name.size() < 2) return true;
            std::string dir;
            for (std::size_t k = 0; k <= i; ++k)
                dir += "/" + path[k];
            if ((*git_dir_existed)(dir)) return true;
        }
        return false;
    }

    // True when `path` is `name` (components) inside a home: the caller's, /root or /home/*.
    bool in_a_home(const std::vector<std::string>& path, const std::vector<std::string>& name) const {
        auto at = [&](std::size_t start) {
            if (path.size() < start + name.size()) return false;
            return std::equal(name.begin(), name.end(), path.begin() + static_cast<std::ptrdiff_t>(start));
        };
        auto in = [&](const std::vector<std::string>& home) {
            return !home.empty() && path.size() >= home.size() &&
                   std::equal(home.begin(), home.end(), path.begin()) && at(home.size());
        };
        if (in(home_components_of_home_)) return true;
        for (const auto& other : other_home_components_)
            if (in(other)) return true;
        if (!path.empty() && path[0] == "root" && at(1)) return true;
        return path.size() > 1 && path[0] == "home" && at(2);
    }

    // An allowWrite entry reached through a symlink that a command could have planted (the entry itself, or
    // a link inside a writable area: the working directory or another entry) is followed only to a place
    // that is already inside another writable area, and never to an ancestor of the entry; otherwise
    // `ln -s /etc ua/src` with `allowWrite: [ua/src]` would make /etc writable. The entry itself as a link
    // that lies where the jailed command cannot write and resolves within its own directory
    // (`/data/current -> v2`, /data writable by no rule) is the user's own and followed, as srt follows it.
    // A dangling link or a loop is skipped too. Each skip is a warning.
    bool follow_allow_write(const PathRule& rule, const std::vector<PathRule>& all) {
        if (rule.glob) return true;
        const std::string lexical = rule.path.string();
        auto skip = [&](const std::string& why) {
            // As the loader words its warnings: file:line: JSON path (or the flag): what.
            const Source& src = rule.rule.source;
            std::string where = src.file;
            if (!where.empty() && src.line > 0) where += ":" + std::to_string(src.line);
            where += (where.empty() ? "" : ": ") + src.where;
            warnings_.push_back(where + ": allowWrite `" + rule.rule.text + "`: " + why + "; skipped");
            return false;
        };
        // The writable areas other than this entry, as the jail binds them (resolved).
        std::vector<std::string> areas;
        if (fs_.working_directory.refusal.empty()) areas.push_back(resolve_existing(cwd_.string()));
        // Entries reached through a symlink are no areas here: one such entry would vouch for another.
        for (const PathRule& other : all)
            if (&other != &rule && !other.glob &&
                resolve_existing(other.path.string()) == other.path.string())
                areas.push_back(other.path.string());
        // (Not /tmp: the jail's is its own, the command plants no link in the host's.)
        auto inside_area = [&](const std::string& p) {
            for (const std::string& area : areas)
                if (detail::path_covers(area, false, p)) return true;
            return false;
        };
        // Walk the entry's components; a symlink is suspect when it lies in a writable area or is the entry
        // itself leading out of its own directory (a system link such as /var/run -> /run is followed as it
        // is).
        bool suspect = false;
        fs::path at = "/";
        const std::vector<std::string> parts = path_components::split_non_empty(lexical);
        for (std::size_t i = 0; i < parts.size(); ++i) {
            fs::path next = at / parts[i];
            struct stat st {};
            if (::lstat(next.c_str(), &st) != 0) break;  // the rest does not exist: nothing to follow
            if (!S_ISLNK(st.st_mode)) {
                at = next;
                continue;
            }
            std::error_code ec;
            fs::path target = fs::canonical(next, ec);
            if (ec) {
                if (ec == std::errc::too_many_symbolic_link_levels)
                    return skip(next.string() + " is a symlink loop");
                return skip(next.string() + " is a dangling symlink");
            }
            if (inside_area(at.string()) ||
                (i + 1 == parts.size() && !detail::path_covers(at.string(), false, target.string())))
                suspect = true;
            at = target;
        }
        if (!suspect) return true;
        const std::string resolved = resolve_existing(lexical);
        if (detail::path_covers(resolved, false, lexical))
            return skip(lexical + " leads through a symlink to " + resolved +
                        ", above the entry; not followed");
        if (!inside_area(resolved))
            return skip(lexical + " leads through a symlink to " + resolved +
                        ", outside every writable area; not followed");
        return true;
    }

    fs::path cwd_;
    NetworkPolicy network_;
    FilesystemPolicy fs_;
    std::vector<fs::path> files_read_;
    std::vector<std::string> warnings_;
    CommandPolicy commands_;
    detail::DomainMatcher allow_, deny_, reasons_;
    std::vector<PathRule> settings_rules_;
    std::vector<PathRule> private_rules_;  // LoadOptions::private_dirs, as given and resolved
    std::vector<Rule> name_rules_;
    std::vector<std::vector<std::string>> name_components_;
    std::vector<Rule> home_rules_;
    std::vector<std::vector<std::string>> home_components_;
    std::vector<std::string> home_components_of_home_;
    std::vector<std::vector<std::string>> other_home_components_;  // FilesystemPolicy::other_homes
    mutable std::once_flag write_rules_resolved_;
    mutable std::vector<std::string> deny_resolved_, allow_resolved_;  // per rule of deny_write / allow_write
    mutable std::unordered_set<std::string> name_words_;               // every component of the names but `*`
    mutable bool name_without_word_ = false;  // a name of `*` only (matched everywhere)
    Rule cwd_refusal_rule_;
};

}  // namespace

const std::vector<std::string>& always_read_only_names() {
    static const std::vector<std::string> names = {
        ".claude/settings.json",
        ".claude/settings.local.json",
        // Claude Code's documented protected paths: they steer the agent or run later.
        ".claude/commands",
        ".claude/agents",
        ".claude/skills",
        ".claude/hooks",
        ".claude/workflows",
        ".claude/scheduled_tasks.json",
        ".credentials.json",
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
    return names;
}

const std::vector<std::string>& git_dir_names() {
    static const std::vector<std::string> names = {
        ".git/commondir",
        ".git/config.worktree",
        ".git/modules",
        ".git/worktrees/*/commondir",
        ".git/worktrees/*/gitdir",
        ".git/worktrees/*/config.worktree",
    };
    return names;
}

const std::vector<std::string>& home_read_only_names() {
    // Each a way to run code on the host later: ssh keys and authorized_keys, login and logout scripts, git's
    // own config directory, systemd user units, autostart entries, the directories on most users' PATH, and
    // Claude Code's settings, credentials and hooks.
    static const std::vector<std::string> names = {
        ".ssh",         ".zshenv",     ".zlogin",         ".bash_login",
        ".bash_logout", ".config/git", ".config/systemd", ".config/autostart",
        ".local/bin",   "bin",         ".claude",         ".claude.json",
    };
    return names;
}

const std::vector<std::string>& read_scope_system_paths() {
    static const std::vector<std::string> paths = {"/usr",    "/bin", "/sbin", "/lib",  "/lib32", "/lib64",
                                                   "/libx32", "/etc", "/opt",  "/proc", "/dev",   "/tmp"};
    return paths;
}

const std::vector<std::string>& read_scope_hidden_paths() {
    // Password hashes and their backups, sudo's rules, ssh host keys, TLS private keys, old passwords.
    static const std::vector<std::string> paths = {"/etc/shadow*",     "/etc/gshadow*",
                                                   "/etc/sudoers*",    "/etc/ssh/*_key",
                                                   "/etc/ssl/private", "/etc/security/opasswd"};
    return paths;
}

std::string working_directory_refusal(const fs::path& cwd, const fs::path& home) {
    const std::string c = detail::normal_path(cwd);
    if (c == "/") return "/ is the root directory";
    const std::vector<std::string> parts = path_components::split_non_empty(c);
    const std::string& top = parts.front();
    // /lib, /lib32, /lib64, /libx32 (not /library).
    const bool lib =
        top.rfind("lib", 0) == 0 &&
        (top.size() == 3 || top == "libx32" || top.find_first_not_of("0123456789", 3) == std::string::npos);
    // Directories that hold nothing but the system: refused with everything below them. The others (/var
    // /opt /srv /root /home /run) only themselves: /var/tmp/x or /srv/project may well be a project.
    static const std::array<std::string_view, 8> kTrees = {"etc",  "usr",  "bin", "sbin",
                                                           "boot", "proc", "sys", "dev"};
    static const std::array<std::string_view, 6> kOnly = {"var", "opt", "srv", "root", "home", "run"};
    // /dev/shm is a scratch tmpfs like /tmp, not the system's: a project may live below it.
    const bool scratch = top == "dev" && parts.size() >= 2 && parts[1] == "shm";
    const bool tree = !scratch && (lib || std::find(kTrees.begin(), kTrees.end(), top) != kTrees.end());
    if (parts.size() == 1 && (tree || std::find(kOnly.begin(), kOnly.end(), top) != kOnly.end()))
        return c + " is a system directory";
    if (tree) return c + " is inside the system directory /" + top;
    const std::string h = home.empty() ? std::string() : detail::normal_path(home);
    if (!h.empty() && c == h) return c + " is the home directory";
    if (!h.empty() && detail::path_covers(c, false, h)) return c + " holds the home directory " + h;
    return {};
}

std::string Decision::explain() const {
    std::string out = std::string(to_string(verdict)) + ": " + std::string(to_string(reason));
    if (rule) out += " by `" + rule->text + "` (" + format_source(rule->source) + ")";
    if (reason_text) out += ": " + json(reason_text->text).dump();
    return out;
}

json Decision::to_json() const {
    json out{{"decision", std::string(to_string(verdict))},
             {"reason", std::string(to_string(reason))},
             {"rule", rule ? json(rule->text) : json(nullptr)},
             {"source", rule ? source_json(rule->source) : json(nullptr)}};
    if (reason_text) {
        out["reason_text"] = reason_text->text;
        out["reason_source"] = source_json(reason_text->source);
    }
    return out;
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
