#include "cli/args.hpp"

#include <iostream>

namespace cordon::cli {

ArgCursor::ArgCursor(int argc, char** argv, int first) {
    for (int i = first; i < argc; ++i)
        args_.emplace_back(argv[i]);
}

ArgCursor::ArgCursor(std::vector<std::string> args) : args_(std::move(args)) {}

std::vector<std::string> ArgCursor::rest() {
    std::vector<std::string> out(args_.begin() + static_cast<std::ptrdiff_t>(pos_), args_.end());
    pos_ = args_.size();
    return out;
}

bool ArgCursor::flag(std::string_view name) {
    if (done()) return false;
    const std::string& arg = args_[pos_];
    if (arg == name) {
        inline_value_.reset();
    } else if (arg.size() > name.size() && arg.compare(0, name.size(), name) == 0 &&
               arg[name.size()] == '=') {
        inline_value_ = arg.substr(name.size() + 1);
    } else {
        return false;
    }
    current_flag_ = std::string(name);
    ++pos_;
    return true;
}

std::string ArgCursor::value() {
    if (inline_value_) {
        std::string v = std::move(*inline_value_);
        inline_value_.reset();
        return v;
    }
    if (done()) throw UsageError(current_flag_ + " needs a value");
    // `--audit-log -- curl` must not write a file named `--`: a value never is `--` or another flag (a lone
    // `-` is a value: stdout). A value that starts with `-` is written `--flag=-value`.
    const std::string& candidate = peek();
    if (candidate == "--" || (candidate.size() > 1 && candidate[0] == '-'))
        throw UsageError(current_flag_ + " needs a value, not '" + candidate + "' (write " + current_flag_ +
                         "=VALUE for a value that starts with '-')");
    return next();
}

bool parse_policy_flag(ArgCursor& args, policy::LoadOptions& options) {
    if (args.flag("--settings")) {
        options.settings_files.emplace_back(args.value());
    } else if (args.flag("--managed-dir")) {
        options.managed_dir = args.value();
    } else if (args.flag("--no-discover")) {
        options.discover = false;
    } else if (args.flag("--allow-domain")) {
        options.allow_domains.push_back(args.value());
    } else if (args.flag("--deny-domain")) {
        options.deny_domains.push_back(args.value());
    } else if (args.flag("--allow-write")) {
        options.allow_write.push_back(args.value());
    } else if (args.flag("--deny-write")) {
        options.deny_write.push_back(args.value());
    } else if (args.flag("--allow-read")) {
        options.allow_read.push_back(args.value());
    } else if (args.flag("--deny-read")) {
        options.deny_read.push_back(args.value());
    } else if (args.flag("--allow-address")) {
        options.allow_addresses.push_back(args.value());
    } else if (args.flag("--read-scope")) {
        options.read_scope = args.value();
        if (options.read_scope != "all" && options.read_scope != "project")
            throw UsageError("--read-scope needs all or project, got '" + options.read_scope + "'");
    } else {
        return false;
    }
    return true;
}

const char* const kPolicyFlagsHelp =
    "Policy flags (every command):\n"
    "  --settings FILE        a Claude Code or srt settings file (repeatable; shape detected)\n"
    "  --managed-dir DIR      managed settings directory (default /etc/claude-code)\n"
    "  --no-discover          do not read .claude/settings*.json or ~/.claude/settings.json\n"
    "  --allow-domain PATTERN allow a domain (`example.com`, `*.example.com`, `host:443`, `[::1]:80`)\n"
    "  --deny-domain PATTERN  deny a domain (deny beats allow)\n"
    "  --allow-write PATH     make PATH writable\n"
    "  --deny-write PATH      keep PATH read-only inside writable areas\n"
    "  --deny-read PATH       hide PATH\n"
    "  --allow-read PATH      re-expose PATH inside a denied one\n"
    "  --allow-address CIDR   let the proxy's address guard pass this range\n"
    "  --read-scope all|project  what the command may read: all but denyRead (default), or only the\n"
    "                         project: the working directory, writable roots, system paths (/usr /bin\n"
    "                         /sbin /lib* /etc minus secrets /opt /proc /dev /tmp), settings files read and\n"
    "                         allowRead (sandbox.filesystem.readScope; \"project\" from any source holds)\n"
    "\n"
    "Paths in flags are plain: absolute, ~/..., or relative to the working directory. Paths in Claude\n"
    "Code settings files: //path is absolute; /path is relative to the settings file's root (the\n"
    "directory holding .claude/ for project, local and user settings, else the file's own directory);\n"
    "~/path is in the home directory; path or ./path is relative to the working directory. srt files use\n"
    "plain paths.\n";

policy::PolicyPtr load_policy_or_report(const policy::LoadOptions& options) {
    auto result = policy::load_policy(options);
    if (auto* error = std::get_if<policy::LoadError>(&result)) {
        std::cerr << "cordon: " << error->message << "\n";
        return nullptr;
    }
    auto policy = std::get<policy::PolicyPtr>(std::move(result));
    for (const auto& warning : policy->warnings())
        std::cerr << "cordon: warning: " << warning << "\n";
    return policy;
}

}  // namespace cordon::cli
