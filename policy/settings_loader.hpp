// Loading of every policy source (managed files, --settings files, discovered project/user files, flags) into
// one flat collection of rules in precedence order. Internal to the policy module; policy.cpp turns the
// collection into an immutable Policy.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "policy/host_name.hpp"
#include "policy/policy.hpp"

namespace cordon::policy::detail {

struct DomainEntry {
    Rule rule;
    DomainPattern pattern;
};

struct Collected {
    std::filesystem::path cwd;             // absolute, normal
    std::filesystem::path home;            // absolute, normal
    std::vector<DomainEntry> allow, deny;  // precedence order: managed first, flags last
    std::vector<Rule> addresses, unix_sockets;
    std::vector<PathRule> allow_write, deny_write, deny_read, allow_read;
    bool managed_only = false;
    std::optional<bool> allow_all_unix_sockets;
    Layer allow_all_unix_sockets_layer = Layer::Default;
    std::vector<std::filesystem::path> files_read;
    std::vector<std::string> warnings;
};

// Reads every source of `options`. Returns an error naming the file, JSON path (or line:column) and entry.
std::optional<LoadError> collect(const LoadOptions& options, Collected& out);

}  // namespace cordon::policy::detail
