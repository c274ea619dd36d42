// Loading of every policy source (managed files, --settings files, discovered project/user files, flags) into
// one flat collection of rules in precedence order. Internal to the policy module; policy.cpp turns the
// collection into an immutable Policy.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "policy/domain_matcher.hpp"
#include "policy/host_name.hpp"
#include "policy/inspection.hpp"
#include "policy/policy.hpp"

namespace cordon::policy::detail {

// Domain rules go straight into the matchers as they are read (no intermediate list: a policy may hold
// 100,000 of them). Rule numbers are indexes into `allowed` / `denied`.
struct DomainRules {
    DomainMatcher matcher;
    std::vector<Rule> rules;
    void add(const DomainPattern& pattern, Rule rule) {
        matcher.add(pattern, static_cast<std::uint32_t>(rules.size()));
        rules.push_back(std::move(rule));
    }
};

struct Collected {
    std::filesystem::path cwd;                       // absolute, normal
    std::filesystem::path home;                      // absolute, normal
    std::vector<std::filesystem::path> other_homes;  // LoadOptions::other_homes, absolute and normal
    // Precedence order: managed first, flags last. Managed files are read first, so allowManagedDomainsOnly
    // is settled before any other allow entry arrives; those go to `ignored_allows` when it is on.
    DomainRules allow, deny;
    std::vector<Rule> ignored_allows;
    // deniedDomainReasons, precedence order; the matcher's rule numbers index `reasons`.
    DomainMatcher reason_matcher;
    std::vector<DomainReason> reasons;
    std::vector<Rule> addresses, unix_sockets;
    std::vector<Rule> host_ports, publish_ports;  // policy/ports.hpp
    std::vector<AddressRange> ranges;             // addresses, parsed
    std::vector<PathRule> allow_write, deny_write, deny_read, allow_read;
    // LoadOptions::private_dirs (each as given and where its symlinks lead): denied to reads (in deny_read)
    // and to writes, always read-only whatever allowWrite says; LoadOptions::session_dirs (the same way),
    // always read-only but readable.
    std::vector<PathRule> private_dirs;
    bool managed_only = false;
    // allowManagedReadPathsOnly from managed settings: allowRead entries of other layers are dropped (each
    // with a warning) once every source is read, since a read allowance is a widening the managed layer
    // forbade.
    bool managed_read_paths_only = false;
    std::optional<bool> allow_all_unix_sockets;
    Layer allow_all_unix_sockets_layer = Layer::Default;
    std::optional<bool> allow_git_config;
    Layer allow_git_config_layer = Layer::Default;
    std::optional<bool> allow_bare_repositories;
    Layer allow_bare_repositories_layer = Layer::Default;
    std::optional<bool> strict_allowlist;
    Layer strict_allowlist_layer = Layer::Default;
    std::optional<bool> report_only;  // managed or --settings only
    Layer report_only_layer = Layer::Default;
    std::optional<Rule> report_only_rule;
    // Bash rules and sandbox switches (for `cordon claude-hook`); the scalars' layers as above.
    CommandPolicy commands;
    std::optional<bool> sandbox_enabled, auto_allow_bash, allow_unsandboxed;
    Layer sandbox_enabled_layer = Layer::Default, auto_allow_bash_layer = Layer::Default,
          allow_unsandboxed_layer = Layer::Default;
    // The first (highest-precedence) entry that asked for readScope "project"; a restriction, so no other
    // layer lowers it (see policy.hpp ReadScope).
    std::optional<Rule> read_scope_project;
    // sandbox.jail ("auto", "namespaces", "landlock" as the rule's text): the highest layer's.
    std::optional<Rule> jail;
    Layer jail_layer = Layer::Default;
    std::vector<Rule> read_scope_all;  // entries that asked for "all": a warning each when "project" holds
    std::vector<std::filesystem::path> files_read;
    std::vector<std::string> warnings;
    InspectionPolicy inspection;  // issue 13's keys (inspection_loader.hpp)

    void add_domain(const DomainPattern& pattern, Rule rule, bool allow_rule) {
        if (!allow_rule) {
            deny.add(pattern, std::move(rule));
        } else if (managed_only && rule.source.layer != Layer::Managed) {
            ignored_allows.push_back(std::move(rule));
        } else {
            allow.add(pattern, std::move(rule));
        }
    }
};

// Reads every source of `options`. Returns an error naming the file, JSON path (or line:column) and entry.
std::optional<LoadError> collect(const LoadOptions& options, Collected& out);

}  // namespace cordon::policy::detail
