// Command-line parsing shared by every `cordon` command: a cursor over argv that understands `--flag VALUE`,
// `--flag=VALUE` and `--`, and the policy flags every command takes.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::cli {

// A usage error: printed with the command's name, exit status 2.
struct UsageError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class ArgCursor {
  public:
    ArgCursor(int argc, char** argv, int first);
    explicit ArgCursor(std::vector<std::string> args);

    bool done() const { return pos_ >= args_.size(); }
    const std::string& peek() const { return args_.at(pos_); }
    std::string next() { return args_.at(pos_++); }
    // Everything not yet consumed (after `--`, for `cordon run`).
    std::vector<std::string> rest();

    // True and consumes the flag when the current argument is `name` or `name=...`.
    bool flag(std::string_view name);
    // The value of the flag just matched by flag(): the `=...` part or the next argument. UsageError if
    // missing.
    std::string value();

  private:
    std::vector<std::string> args_;
    std::size_t pos_ = 0;
    std::optional<std::string> inline_value_;
    std::string current_flag_;
};

// Consumes one policy flag (--settings, --managed-dir, --no-discover, --allow-domain, --deny-domain,
// --allow-write, --deny-write, --allow-read, --deny-read, --allow-address) into `options`. Returns false when
// the current argument is not a policy flag.
bool parse_policy_flag(ArgCursor& args, policy::LoadOptions& options);

// The help text for the policy flags, for each command's --help.
extern const char* const kPolicyFlagsHelp;

// Loads the policy, printing warnings to stderr. On a LoadError prints it and returns nullptr (exit status
// 2).
policy::PolicyPtr load_policy_or_report(const policy::LoadOptions& options);

}  // namespace cordon::cli
