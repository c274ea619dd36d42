#include "policy/settings_loader.hpp"

#include <pwd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <system_error>

#include "policy/huge_pages.hpp"
#include "policy/inspection_loader.hpp"
#include "policy/json_positions.hpp"
#include "policy/path_rules.hpp"
#include "policy/ports.hpp"
#include "policy/syntax.hpp"

namespace cordon::policy::detail {
namespace fs = std::filesystem;
// The settings document; its large arrays (a 100,000-entry allowedDomains) go to huge-page-backed memory.
using json = nlohmann::basic_json<std::map, std::vector, std::string, bool, std::int64_t, std::uint64_t,
                                  double, HugePageAllocator>;

namespace {

// A user-fixable problem; caught in collect() and turned into a LoadError.
struct Failure {
    std::string message;
};

std::string json_quoted(std::string_view text) {
    return json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string type_name(const json& value) {
    switch (value.type()) {
        case json::value_t::null:
            return "null";
        case json::value_t::object:
            return "an object";
        case json::value_t::array:
            return "an array";
        case json::value_t::string:
            return "a string";
        case json::value_t::boolean:
            return "a boolean";
        case json::value_t::number_integer:
        case json::value_t::number_unsigned:
        case json::value_t::number_float:
            return "a number";
        default:
            return "an unsupported value";
    }
}

enum class Shape { ClaudeCode, Srt };

// What cordon makes of each key of the sections it reads: honoured, known (to srt or Claude Code) but not
// honoured, or Claude Code's own business. Any other key is unknown: a warning each, so a typo
// (`allowedDomain`) never vanishes silently.
enum class KeyUse { Honoured, NotHonoured, ClaudeCodeOnly };
struct KnownKey {
    std::string_view name;
    KeyUse use;
    std::string_view why;  // for NotHonoured: what cordon does instead
};

constexpr KnownKey kTopLevelSrtKeys[] = {
    {"network", KeyUse::Honoured, ""},
    {"filesystem", KeyUse::Honoured, ""},
    {"$schema", KeyUse::ClaudeCodeOnly, ""},
    {"ignoreViolations", KeyUse::NotHonoured, "cordon reports every refusal"},
    {"enableWeakerNestedSandbox", KeyUse::NotHonoured, "cordon's jail is never weakened"},
    {"enableWeakerNetworkIsolation", KeyUse::NotHonoured, "cordon's jail is never weakened"},
    {"ripgrep", KeyUse::NotHonoured, "cordon does not search with ripgrep"},
    {"mandatoryDenySearchDepth", KeyUse::NotHonoured, "cordon protects names at any depth"},
    {"allowPty", KeyUse::NotHonoured, "the jail shares the caller's terminal"},
    {"seccomp", KeyUse::NotHonoured, "cordon brings its own seccomp filter"},
    {"credentials", KeyUse::Honoured, ""},
};
// Claude Code's `sandbox` section: the same keys as an srt file, plus Claude Code's own (its settings schema,
// as of Claude Code 2.1.332).
constexpr KnownKey kSandboxKeys[] = {
    {"enabled", KeyUse::ClaudeCodeOnly, ""},
    {"autoAllowBashIfSandboxed", KeyUse::ClaudeCodeOnly, ""},
    {"excludedCommands", KeyUse::ClaudeCodeOnly, ""},
    {"allowUnsandboxedCommands", KeyUse::ClaudeCodeOnly, ""},
    {"enabledPlatforms", KeyUse::ClaudeCodeOnly, ""},
    {"failIfUnavailable", KeyUse::ClaudeCodeOnly, ""},
    {"bwrapPath", KeyUse::ClaudeCodeOnly, ""},
    {"socatPath", KeyUse::ClaudeCodeOnly, ""},
    {"backend", KeyUse::ClaudeCodeOnly, ""},
    {"windows", KeyUse::ClaudeCodeOnly, ""},
    {"allowAppleEvents", KeyUse::ClaudeCodeOnly, ""},
    {"allowNestedUserNamespaces", KeyUse::NotHonoured, "cordon's jail is never weakened"},
    {"jail", KeyUse::Honoured, ""},
};
constexpr KnownKey kNetworkKeys[] = {
    {"allowedDomains", KeyUse::Honoured, ""},
    {"deniedDomains", KeyUse::Honoured, ""},
    {"deniedDomainReasons", KeyUse::Honoured, ""},
    {"reportOnly", KeyUse::Honoured, ""},
    {"allowedAddresses", KeyUse::Honoured, ""},
    {"allowUnixSockets", KeyUse::Honoured, ""},
    {"allowAllUnixSockets", KeyUse::Honoured, ""},
    {"hostPorts", KeyUse::Honoured, ""},
    {"publishPorts", KeyUse::Honoured, ""},
    {"allowManagedDomainsOnly", KeyUse::Honoured, ""},
    {"strictAllowlist", KeyUse::Honoured, ""},
    {"allowLocalBinding", KeyUse::NotHonoured, "the jail's loopback is its own; binding there always works"},
    {"httpProxyPort", KeyUse::NotHonoured, "cordon's proxy listens on its own port inside the jail"},
    {"socksProxyPort", KeyUse::NotHonoured, "cordon's proxy listens on its own port inside the jail"},
    {"mitmProxy", KeyUse::NotHonoured, "no upstream MITM proxy is used"},
    {"allowMachLookup", KeyUse::NotHonoured, "macOS XPC services; cordon's jail reaches none"},
    {"parentProxy", KeyUse::Honoured, ""},
    {"inspect", KeyUse::Honoured, ""},
    {"tlsTerminate", KeyUse::Honoured, ""},
    {"requestRules", KeyUse::Honoured, ""},
};
// The longest deniedDomainReasons text (bytes).
constexpr std::size_t kMaxReasonBytes = 500;

constexpr KnownKey kFilesystemKeys[] = {
    {"allowWrite", KeyUse::Honoured, ""},
    {"denyWrite", KeyUse::Honoured, ""},
    {"denyRead", KeyUse::Honoured, ""},
    {"allowRead", KeyUse::Honoured, ""},
    {"allowGitConfig", KeyUse::Honoured, ""},
    {"readScope", KeyUse::Honoured, ""},
    {"allowManagedReadPathsOnly", KeyUse::Honoured, ""},
    {"allowBareRepositories", KeyUse::Honoured, ""},
};

template <std::size_t N>
const KnownKey* find_key(const KnownKey (&keys)[N], std::string_view name) {
    for (const KnownKey& key : keys)
        if (key.name == name) return &key;
    return nullptr;
}

// Claude Code's tools whose rules cordon reads, and the other tool names (whose rules are Claude Code's
// alone). A rule whose tool is neither but close to one cordon reads is most likely a typo.
constexpr std::string_view kReadTools[] = {"WebFetch", "Read", "Edit"};
constexpr std::string_view kOtherTools[] = {
    "Bash",         "Glob",         "Grep",         "LS",        "MultiEdit", "NotebookEdit",
    "NotebookRead", "Task",         "TodoWrite",    "WebSearch", "Write",     "Agent",
    "Skill",        "SlashCommand", "ExitPlanMode", "KillShell", "BashOutput"};

char lower(char c) {
    return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
}

// Case-insensitive edit distance, small strings only.
std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min(
                {row[j] + 1, row[j - 1] + 1, diagonal + (lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

// The tool cordon reads that `tool` is probably a misspelling of, or empty.
std::string_view misspelt_tool(std::string_view tool) {
    if (tool.size() > 40) return {};
    for (std::string_view other : kOtherTools)
        if (other == tool) return {};
    for (std::string_view known : kReadTools) {
        const std::size_t limit = known.size() > 4 ? 2 : 1;
        if (edit_distance(tool, known) <= limit) return known;
    }
    return {};
}

// Whether a hooks matcher selects the Bash tool, as Claude Code reads it: empty or `*` selects every tool;
// a plain list of names (`Bash|Edit`, `Bash, Edit`) selects those; anything else is a regular expression
// searched in the tool name. One that does not compile counts as selecting Bash: the safe side.
bool matcher_selects_bash(const std::string& matcher) {
    std::string_view m = matcher;
    while (!m.empty() && (m.front() == ' ' || m.front() == '\t'))
        m.remove_prefix(1);
    while (!m.empty() && (m.back() == ' ' || m.back() == '\t'))
        m.remove_suffix(1);
    if (m.empty() || m == "*" || m == ".*") return true;
    bool plain = std::all_of(m.begin(), m.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '|' || c == ',' || c == ' ';
    });
    if (plain) {
        std::size_t start = 0;
        for (;;) {
            std::size_t end = m.find_first_of("|,", start);
            std::string_view name = m.substr(start, end - start);
            while (!name.empty() && name.front() == ' ')
                name.remove_prefix(1);
            while (!name.empty() && name.back() == ' ')
                name.remove_suffix(1);
            if (name == "Bash") return true;
            if (end == std::string_view::npos) return false;
            start = end + 1;
        }
    }
    try {
        return std::regex_search("Bash", std::regex(std::string(m), std::regex::ECMAScript));
    } catch (const std::regex_error&) {
        return true;
    }
}

// One settings file being loaded: where it is, its layer, positions of its values, and the path conventions.
class FileLoader {
  public:
    FileLoader(const fs::path& file, Layer layer, std::string_view text, Collected& out)
        : file_(file.string()), layer_(layer), positions_(text), out_(out) {
        ctx_.cwd = out.cwd;
        ctx_.home = out.home;
        ctx_.settings_root = settings_root(file);
    }

    void load(json& root) {
        if (!root.is_object()) fail("", "the top level must be a JSON object, found " + type_name(root));
        const bool claude = root.contains("permissions") || root.contains("sandbox");
        const bool srt = root.contains("network") || root.contains("filesystem");
        shape_ = (!claude && srt) ? Shape::Srt : Shape::ClaudeCode;
        if (shape_ == Shape::Srt) {
            check_keys(root, "", kTopLevelSrtKeys);
            if (json* network = object_member(root, "network", "")) load_network(*network, "network");
            if (json* filesystem = object_member(root, "filesystem", ""))
                load_filesystem(*filesystem, "filesystem");
            inspection_key(root, "credentials", "");
            return;
        }
        if (json* permissions = object_member(root, "permissions", "")) load_permissions(*permissions);
        load_bash_hooks(root);
        if (json* sandbox = object_member(root, "sandbox", "")) {
            check_keys(*sandbox, "sandbox", kTopLevelSrtKeys, kSandboxKeys, std::size(kSandboxKeys));
            if (json* network = object_member(*sandbox, "network", "sandbox"))
                load_network(*network, "sandbox.network");
            if (json* filesystem = object_member(*sandbox, "filesystem", "sandbox"))
                load_filesystem(*filesystem, "sandbox.filesystem");
            inspection_key(*sandbox, "credentials", "sandbox");
            load_sandbox_switches(*sandbox);
        }
    }

  private:
    [[noreturn]] void fail(const std::string& where, const std::string& why) const {
        std::string message = file_;
        if (int line = positions_.line_of(where); line > 0) message += ":" + std::to_string(line);
        message += ": ";
        if (!where.empty()) message += where + ": ";
        throw Failure{message + why};
    }

    Source source(const std::string& where) const {
        return Source{layer_, file_, where, positions_.line_of(where)};
    }

    // A notice naming the file, line and JSON path; the load goes on.
    void warn(const std::string& where, const std::string& what) const {
        std::string message = file_;
        if (int line = positions_.line_of(where); line > 0) message += ":" + std::to_string(line);
        message += ": ";
        if (!where.empty()) message += where + ": ";
        out_.warnings.push_back(message + what);
    }

    // An entry cordon cannot interpret: a deny entry stops the load (it would otherwise be dropped, which
    // widens access); an allow entry is skipped with a warning (skipping never widens access).
    void refuse_entry(const std::string& where, const std::string& why, bool allow) const {
        if (!allow) fail(where, why);
        warn(where, "skipped: " + why);
    }

    // One warning per key of `section` that cordon does not honour or does not know.
    template <std::size_t N>
    void check_keys(const json& section, const std::string& base, const KnownKey (&keys)[N],
                    const KnownKey* more = nullptr, std::size_t more_count = 0) const {
        for (auto it = section.begin(); it != section.end(); ++it) {
            const KnownKey* key = find_key(keys, it.key());
            for (std::size_t i = 0; key == nullptr && i < more_count; ++i)
                if (more[i].name == it.key()) key = &more[i];
            const std::string where = append_key(base, it.key().c_str());
            if (key == nullptr) {
                warn(where, "unknown key; ignored (a typo?)");
            } else if (key->use == KeyUse::NotHonoured) {
                warn(where, "not honoured by cordon (" + std::string(key->why) + "); ignored");
            }
        }
    }

    json* object_member(json& parent, const char* key, const std::string& parent_path) const {
        auto it = parent.find(key);
        if (it == parent.end()) return nullptr;
        if (!it->is_object())
            fail(append_key(parent_path, key), "expected an object, found " + type_name(*it));
        return &*it;
    }

    // Calls `each(text, where)` for every string of the array at parent[key]. `text` may be moved from: the
    // document is discarded after loading, and rules take over its strings instead of copying them.
    template <typename Each>
    void strings(json& parent, const char* key, const std::string& parent_path, Each each) {
        auto it = parent.find(key);
        if (it == parent.end()) return;
        const std::string path = append_key(parent_path, key);
        if (!it->is_array()) fail(path, "expected an array of strings, found " + type_name(*it));
        // Large lists (100,000 domains) grow the rule vectors once, not by repeated doubling.
        if (it->size() > 1024 && std::string_view(key) == "allowedDomains") {
            out_.allow.rules.reserve(out_.allow.rules.size() + it->size());
            advise_huge_pages(out_.allow.rules.data(), out_.allow.rules.capacity() * sizeof(Rule));
            out_.allow.matcher.reserve(out_.allow.matcher.size() + it->size());
        }
        std::size_t index = 0;
        for (json& element : *it) {
            std::string where = append_index(path, index++);
            if (!element.is_string()) fail(where, "expected a string, found " + type_name(element));
            each(element.get_ref<std::string&>(), where);
            element = nullptr;  // frees the document's string now, for the next rule's allocations to reuse
        }
    }

    std::optional<bool> boolean(const json& parent, const char* key, const std::string& parent_path) const {
        auto it = parent.find(key);
        if (it == parent.end()) return std::nullopt;
        if (!it->is_boolean())
            fail(append_key(parent_path, key), "expected true or false, found " + type_name(*it));
        return it->get<bool>();
    }

    // Parses the pattern first: `pattern_text` may point into `rule_text`, which the rule then takes over.
    void domain(std::string& rule_text, std::string_view pattern_text, const std::string& where, bool allow,
                PatternDialect dialect) {
        auto parsed = parse_domain_pattern(pattern_text, dialect);
        if (auto* why = std::get_if<std::string>(&parsed)) {
            std::string message = "invalid domain pattern " + json_quoted(rule_text) + ": " + *why;
            if (dialect != PatternDialect::ClaudeCode)
                message +=
                    " (as in srt: a domain like \"example.com\", a wildcard like \"*.example.com\" or a "
                    "bracketed IPv6 literal like \"[::1]:443\", with an optional :port; overly broad "
                    "patterns "
                    "like \"*.com\" or \"*\" are not allowed)";
            refuse_entry(where, message, allow);
            return;
        }
        out_.add_domain(std::get<DomainPattern>(parsed), Rule{std::move(rule_text), source(where)}, allow);
    }

    void path(std::vector<PathRule>& into, std::string& rule_text, std::string_view path_text,
              const std::string& where, bool allow) {
        auto resolved =
            resolve_path(path_text, shape_ == Shape::Srt ? PathStyle::Plain : PathStyle::ClaudeCode, ctx_);
        if (auto* why = std::get_if<std::string>(&resolved)) {
            refuse_entry(where, "invalid path " + json_quoted(rule_text) + ": " + *why, allow);
            return;
        }
        auto& r = std::get<ResolvedPath>(resolved);
        into.push_back(PathRule{std::move(r.path), r.glob, Rule{std::move(rule_text), source(where)}});
    }

    // Scalars take the highest layer; within a layer the later file wins (drop-in order).
    void scalar(std::optional<bool>& into, Layer& into_layer, std::optional<bool> value) const {
        if (!value) return;
        if (!into || into_layer == layer_) {
            into = *value;
            into_layer = layer_;
        }
    }

    // Claude Code's own sandbox switches and excludedCommands: for `cordon claude-hook` only.
    // sandbox.jail: which jail `cordon run` uses. A value cordon cannot interpret stops the load: it may be
    // a demand for the namespace jail.
    void load_jail(const json& sandbox) {
        auto it = sandbox.find("jail");
        if (it == sandbox.end()) return;
        const std::string where = "sandbox.jail";
        if (!it->is_string())
            fail(where, "expected \"auto\", \"namespaces\" or \"landlock\", found " + type_name(*it));
        const std::string& value = it->get_ref<const std::string&>();
        if (value != "auto" && value != "namespaces" && value != "landlock")
            fail(where, "invalid jail " + json_quoted(value) +
                            ": expected \"auto\", \"namespaces\" or \"landlock\"");
        if (!out_.jail || out_.jail_layer == layer_) {
            out_.jail = Rule{value, source(where)};
            out_.jail_layer = layer_;
        }
    }

    void load_sandbox_switches(json& sandbox) {
        load_jail(sandbox);
        scalar(out_.sandbox_enabled, out_.sandbox_enabled_layer, boolean(sandbox, "enabled", "sandbox"));
        scalar(out_.auto_allow_bash, out_.auto_allow_bash_layer,
               boolean(sandbox, "autoAllowBashIfSandboxed", "sandbox"));
        scalar(out_.allow_unsandboxed, out_.allow_unsandboxed_layer,
               boolean(sandbox, "allowUnsandboxedCommands", "sandbox"));
        strings(sandbox, "excludedCommands", "sandbox", [&](std::string& text, const std::string& where) {
            if (text.empty()) {
                warn(where, "skipped: an empty command");
                return;
            }
            out_.commands.excluded_commands.push_back(Rule{std::move(text), source(where)});
        });
    }

    // hooks.PreToolUse entries that can run for the Bash tool. Claude Code's own business, except that such
    // a hook's updatedInput replaces the command `cordon claude-hook` wrapped: the hook must know of them.
    // Read leniently (Claude Code validates hooks itself), but a part cordon cannot read counts as a hook:
    // missing one would let a wrapped command run unjailed.
    void load_bash_hooks(const json& root) {
        auto hooks = root.find("hooks");
        if (hooks == root.end() || hooks->is_null()) return;
        const std::string base = "hooks.PreToolUse";
        auto unreadable = [&](const std::string& where) {
            out_.commands.bash_hooks.push_back(Rule{"(a hook cordon cannot read)", source(where)});
        };
        if (!hooks->is_object()) return unreadable("hooks");
        auto pre = hooks->find("PreToolUse");
        if (pre == hooks->end() || pre->is_null()) return;
        if (!pre->is_array()) return unreadable(base);
        std::size_t index = 0;
        for (const json& entry : *pre) {
            const std::string where = append_index(base, index++);
            if (!entry.is_object()) {
                unreadable(where);
                continue;
            }
            auto matcher = entry.find("matcher");
            if (matcher != entry.end() && !matcher->is_null() &&
                (!matcher->is_string() || !matcher_selects_bash(matcher->get<std::string>())))
                continue;
            auto list = entry.find("hooks");
            if (list == entry.end() || !list->is_array()) {
                unreadable(where);
                continue;
            }
            std::size_t k = 0;
            for (const json& hook : *list) {
                const std::string at = append_index(append_key(where, "hooks"), k++);
                auto command = hook.is_object() ? hook.find("command") : hook.end();
                auto type = hook.is_object() ? hook.find("type") : hook.end();
                if (command != hook.end() && command->is_string())
                    out_.commands.bash_hooks.push_back(Rule{command->get<std::string>(), source(at)});
                else if (type != hook.end() && type->is_string())
                    out_.commands.bash_hooks.push_back(Rule{"type: " + type->get<std::string>(), source(at)});
                else
                    unreadable(at);
            }
        }
    }

    // `Bash` and `Bash(...)` rules, kept whole for `cordon claude-hook` (agent/ matches them). A deny or ask
    // rule that is not well formed stops the load (dropping it would let the command through).
    void bash_rule(std::string& text, const std::string& where, std::vector<Rule>& into, bool allow) {
        if (text != "Bash" && text.back() != ')') {
            refuse_entry(where, "invalid rule " + json_quoted(text) + ": missing ')' at the end", allow);
            return;
        }
        into.push_back(Rule{std::move(text), source(where)});
    }

    // `Tool(specifier)` rules. WebFetch(domain:...), Read(...) and Edit(...) become network and filesystem
    // rules; every other tool's rules belong to Claude Code alone and are skipped. A tool name that looks
    // like a misspelt WebFetch/Read/Edit gets a warning (Claude Code would ignore the rule too).
    void permission_rule(std::string& text, const std::string& where, bool allow) {
        auto open = text.find('(');
        const std::string tool = text.substr(0, open);
        if (tool == "Bash") {
            bash_rule(text, where, allow ? out_.commands.allow : out_.commands.deny, allow);
            return;
        }
        if (tool != "WebFetch" && tool != "Read" && tool != "Edit") {
            if (std::string_view known = misspelt_tool(tool); !known.empty())
                warn(where, "rule " + json_quoted(text) + " names no tool cordon knows; did you mean " +
                                std::string(known) + "? (tool names are case-sensitive); ignored");
            return;
        }
        if (open == std::string::npos)
            return;  // a bare tool name (`WebFetch`, `Read`) grants no sandbox access
        if (text.back() != ')') {
            refuse_entry(where, "invalid rule " + json_quoted(text) + ": missing ')' at the end", allow);
            return;
        }
        std::string_view specifier = std::string_view(text).substr(open + 1, text.size() - open - 2);
        if (tool == "WebFetch") {
            constexpr std::string_view kPrefix = "domain:";
            if (specifier.substr(0, kPrefix.size()) != kPrefix) {
                refuse_entry(where,
                             "invalid rule " + json_quoted(text) + ": WebFetch rules take domain:PATTERN",
                             allow);
                return;
            }
            specifier.remove_prefix(kPrefix.size());
            domain(text, specifier, where, allow, PatternDialect::ClaudeCode);
            return;
        }
        if (specifier.empty()) {
            refuse_entry(where, "invalid rule " + json_quoted(text) + ": empty path", allow);
            return;
        }
        if (tool == "Read") {
            path(allow ? out_.allow_read : out_.deny_read, text, specifier, where, allow);
        } else {
            path(allow ? out_.allow_write : out_.deny_write, text, specifier, where, allow);
        }
    }

    void load_permissions(json& permissions) {
        strings(permissions, "allow", "permissions",
                [&](std::string& text, const std::string& where) { permission_rule(text, where, true); });
        strings(permissions, "deny", "permissions",
                [&](std::string& text, const std::string& where) { permission_rule(text, where, false); });
        // Ask rules: only the Bash tool's concern cordon (claude-hook); an ask that cannot be read asks
        // nothing, so it stops the load like a deny.
        strings(permissions, "ask", "permissions", [&](std::string& text, const std::string& where) {
            if (text.substr(0, text.find('(')) == "Bash") bash_rule(text, where, out_.commands.ask, false);
        });
    }

    // Issue 13's keys, read by inspection_loader.cpp (a plain nlohmann::json copy of a small subtree).
    void inspection_key(const json& parent, const char* key, const std::string& base) {
        auto it = parent.find(key);
        if (it == parent.end()) return;
        InspectionContext context;
        context.source = [this](const std::string& where) { return source(where); };
        context.fail = [this](const std::string& where, const std::string& why) { fail(where, why); };
        context.warn = [this](const std::string& where, const std::string& why) { warn(where, why); };
        context.deny_read = [this](std::string text, const std::string& where) {
            path(out_.deny_read, text, text, where, false);
        };
        load_inspection_key(nlohmann::json::parse(it->dump()), key, append_key(base, key), out_.inspection,
                            context);
    }

    void load_network(json& network, const std::string& base) {
        check_keys(network, base, kNetworkKeys);
        for (const char* key : {"inspect", "tlsTerminate", "requestRules", "parentProxy"})
            inspection_key(network, key, base);
        strings(network, "allowedDomains", base, [&](std::string& text, const std::string& where) {
            domain(text, text, where, true, PatternDialect::SrtAllowed);
        });
        strings(network, "deniedDomains", base, [&](std::string& text, const std::string& where) {
            domain(text, text, where, false, PatternDialect::SrtDenied);
        });
        load_denied_reasons(network, base);
        strings(network, "allowedAddresses", base, [&](std::string& text, const std::string& where) {
            auto range = parse_cidr(text);
            if (auto* why = std::get_if<std::string>(&range)) {
                refuse_entry(where, "invalid address " + json_quoted(text) + ": " + *why, true);
                return;
            }
            out_.ranges.push_back(std::get<AddressRange>(range));
            out_.addresses.push_back(Rule{std::move(text), source(where)});
        });
        strings(network, "allowUnixSockets", base, [&](std::string& text, const std::string& where) {
            if (text.empty()) fail(where, "invalid socket path \"\": empty path");
            if (text[0] != '/' && text != "~" && text.rfind("~/", 0) != 0) {
                refuse_entry(where, "invalid socket path " + json_quoted(text) + ": not absolute (nor ~/...)",
                             true);
                return;
            }
            out_.unix_sockets.push_back(Rule{std::move(text), source(where)});
        });
        load_ports(network, base);
        if (auto value = boolean(network, "allowAllUnixSockets", base)) {
            // Scalars take the highest layer; within a layer the later file wins (drop-in order).
            if (!out_.allow_all_unix_sockets || out_.allow_all_unix_sockets_layer == layer_) {
                out_.allow_all_unix_sockets = *value;
                out_.allow_all_unix_sockets_layer = layer_;
            }
        }
        scalar(out_.strict_allowlist, out_.strict_allowlist_layer, boolean(network, "strictAllowlist", base));
        if (auto value = boolean(network, "reportOnly", base)) {
            // A roll-out switch for the operator of `cordon proxy`: a project or user file must not turn
            // enforcement off.
            const std::string where = append_key(base, "reportOnly");
            if (layer_ != Layer::Managed && layer_ != Layer::Settings) {
                warn(where, "honoured only in managed settings or cordon proxy's --settings; ignored");
            } else if (!out_.report_only || out_.report_only_layer == layer_) {
                out_.report_only = *value;
                out_.report_only_layer = layer_;
                out_.report_only_rule = Rule{*value ? "true" : "false", source(where)};
            }
        }
        if (auto value = boolean(network, "allowManagedDomainsOnly", base)) {
            if (layer_ == Layer::Managed) {
                out_.managed_only = *value;
            } else if (*value) {
                warn(append_key(base, "allowManagedDomainsOnly"),
                     "honoured only in managed settings; ignored");
            }
        }
    }

    // hostPorts ([5432, 6379]) and publishPorts (["8080", "0.0.0.0:8080:3000", 3000]): `cordon run`'s port
    // forwards (policy/ports.hpp). Both open a way around the proxy, so they are allow entries: a bad one is
    // skipped with a warning, never a stop; with allowManagedDomainsOnly only the managed layer's count.
    // Never from the project's own files (.claude/settings.json, settings.local.json): a cloned repository
    // would give its jail the host's database or publish on every address; the user's settings, --settings
    // files, managed settings and the flags are the user's word.
    void load_ports(const json& network, const std::string& base) {
        for (const char* key : {"hostPorts", "publishPorts"}) {
            auto it = network.find(key);
            if (it == network.end()) continue;
            const std::string path = append_key(base, key);
            const bool host = std::string_view(key) == "hostPorts";
            if (layer_ == Layer::Project || layer_ == Layer::Local) {
                warn(path,
                     std::string("skipped: not taken from a project's settings (a cloned repository's "
                                 "file would open the host to its jail); give ") +
                         (host ? "--host-port" : "--publish") +
                         ", or put it in your user settings (~/.claude/settings.json) or a --settings file");
                continue;
            }
            if (!it->is_array()) {
                warn(path, std::string("skipped: expected an array of ") +
                               (host ? "port numbers" : "\"[ADDR:]PORT[:JAIL_PORT]\" strings or numbers") +
                               ", found " + type_name(*it));
                continue;
            }
            if (out_.managed_only && layer_ != Layer::Managed) {
                warn(path, "ignored: allowManagedDomainsOnly in managed settings");
                continue;
            }
            std::size_t index = 0;
            for (const json& element : *it) {
                const std::string where = append_index(path, index++);
                std::string text;
                if (element.is_number_unsigned())
                    text = std::to_string(element.get<std::uint64_t>());
                else if (element.is_string())
                    text = element.get<std::string>();
                else {
                    warn(where, "skipped: expected a port number or a string, found " + type_name(element));
                    continue;
                }
                std::string why;
                if (host) {
                    auto port = parse_host_port(text);
                    if (auto* w = std::get_if<std::string>(&port)) why = *w;
                } else {
                    auto port = parse_published_port(text);
                    if (auto* w = std::get_if<std::string>(&port)) why = *w;
                }
                if (!why.empty()) {
                    warn(where, "skipped: invalid " + std::string(host ? "host port " : "published port ") +
                                    json_quoted(text) + ": " + why);
                    continue;
                }
                (host ? out_.host_ports : out_.publish_ports).push_back(Rule{text, source(where)});
            }
        }
    }

    // deniedDomainReasons: {"pattern": "reason"}. A reason is advisory (it never changes a decision), so a
    // bad entry is skipped with a warning, never a stop.
    void load_denied_reasons(const json& network, const std::string& base) {
        auto it = network.find("deniedDomainReasons");
        if (it == network.end()) return;
        const std::string key = append_key(base, "deniedDomainReasons");
        if (!it->is_object()) {
            warn(key, "skipped: must be an object of \"pattern\": \"reason\", found " + type_name(*it));
            return;
        }
        struct Found {
            DomainPattern pattern;
            DomainReason reason;
        };
        std::vector<Found> found;
        for (auto entry = it->begin(); entry != it->end(); ++entry) {
            const std::string where = append_key(key, entry.key());
            if (!entry.value().is_string()) {
                warn(where, "skipped: the reason must be a string, found " + type_name(entry.value()));
                continue;
            }
            const std::string& text = entry.value().get_ref<const std::string&>();
            // Shown on terminals and in a 403 body: one line of printable text, of a readable length.
            if (std::any_of(text.begin(), text.end(),
                            [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; })) {
                warn(where, "skipped: the reason holds a control character (newline, escape, ...)");
                continue;
            }
            if (text.empty() || text.size() > kMaxReasonBytes) {
                warn(where, "skipped: the reason must be 1 to " + std::to_string(kMaxReasonBytes) +
                                " bytes long, found " + std::to_string(text.size()));
                continue;
            }
            auto parsed = parse_domain_pattern(entry.key(), PatternDialect::SrtDenied);
            if (auto* why = std::get_if<std::string>(&parsed)) {
                warn(where, "skipped: invalid domain pattern " + json_quoted(entry.key()) + ": " + *why);
                continue;
            }
            found.push_back(
                {std::get<DomainPattern>(parsed), DomainReason{entry.key(), text, source(where)}});
        }
        // The matcher answers the lowest index: within a file the most specific pattern first (a name, then
        // wildcards by depth, `*` last); files come in precedence order.
        auto rank = [](const std::string& pattern) {
            const bool wildcard = pattern.rfind('*', 0) == 0;
            const auto labels = std::count(pattern.begin(), pattern.end(), '.');
            return std::make_pair(pattern == "*" ? 2 : wildcard ? 1 : 0, -labels);
        };
        std::stable_sort(found.begin(), found.end(), [&](const Found& a, const Found& b) {
            return rank(a.reason.pattern) < rank(b.reason.pattern);
        });
        for (Found& f : found) {
            out_.reason_matcher.add(f.pattern, static_cast<std::uint32_t>(out_.reasons.size()));
            out_.reasons.push_back(std::move(f.reason));
        }
    }

    void load_filesystem(json& filesystem, const std::string& base) {
        check_keys(filesystem, base, kFilesystemKeys);
        auto into = [&](std::vector<PathRule>& rules, bool allow) {
            return [&, allow](std::string& text, const std::string& where) {
                path(rules, text, text, where, allow);
            };
        };
        strings(filesystem, "allowWrite", base, into(out_.allow_write, true));
        strings(filesystem, "denyWrite", base, into(out_.deny_write, false));
        strings(filesystem, "denyRead", base, into(out_.deny_read, false));
        strings(filesystem, "allowRead", base, into(out_.allow_read, true));
        if (auto value = boolean(filesystem, "allowManagedReadPathsOnly", base)) {
            if (layer_ == Layer::Managed) {
                out_.managed_read_paths_only = *value;
            } else if (*value) {
                warn(append_key(base, "allowManagedReadPathsOnly"),
                     "honoured only in managed settings; ignored");
            }
        }
        if (auto value = boolean(filesystem, "allowGitConfig", base)) {
            // A scalar: the highest layer wins; within a layer the later file.
            if (!out_.allow_git_config || out_.allow_git_config_layer == layer_) {
                out_.allow_git_config = *value;
                out_.allow_git_config_layer = layer_;
            }
        }
        if (auto value = boolean(filesystem, "allowBareRepositories", base)) {
            if (!out_.allow_bare_repositories || out_.allow_bare_repositories_layer == layer_) {
                out_.allow_bare_repositories = *value;
                out_.allow_bare_repositories_layer = layer_;
            }
        }
        read_scope(filesystem, base);
    }

    // readScope: "all" or "project". A restriction: a value cordon cannot interpret stops the load (never
    // fail open), and "project" holds whatever another layer says (the first one asked is the source).
    void read_scope(const json& filesystem, const std::string& base) {
        auto it = filesystem.find("readScope");
        if (it == filesystem.end()) return;
        const std::string where = append_key(base, "readScope");
        if (!it->is_string()) fail(where, "expected \"all\" or \"project\", found " + type_name(*it));
        const std::string& value = it->get_ref<const std::string&>();
        if (value == "project") {
            if (!out_.read_scope_project) out_.read_scope_project = Rule{"readScope: project", source(where)};
        } else if (value == "all") {
            out_.read_scope_all.push_back(Rule{"readScope: all", source(where)});
        } else {
            fail(where, "invalid read scope " + json_quoted(value) + ": expected \"all\" or \"project\"");
        }
    }

    std::string file_;
    Layer layer_;
    JsonPositions positions_;
    Collected& out_;
    PathContext ctx_;
    Shape shape_ = Shape::ClaudeCode;
};

// The bytes of a settings file (large lists land in huge-page-backed memory, see huge_pages.hpp).
using FileBytes = std::vector<char, HugePageAllocator<char>>;

FileBytes read_file(const fs::path& file) {
    std::error_code ec;
    if (fs::is_directory(file, ec)) throw Failure{file.string() + ": is a directory, not a settings file"};
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Failure{file.string() + ": cannot read: " + std::strerror(errno)};
    // One read into a buffer of the file's size (settings files can be megabytes), then whatever follows.
    FileBytes text;
    const auto size = fs::file_size(file, ec);
    if (!ec && size > 0) {
        text.resize(static_cast<std::size_t>(size));
        in.read(text.data(), static_cast<std::streamsize>(size));
        text.resize(static_cast<std::size_t>(in.gcount()));
    }
    std::array<char, 65536> chunk;
    while (in.read(chunk.data(), chunk.size()) || in.gcount() > 0)
        text.insert(text.end(), chunk.data(), chunk.data() + in.gcount());
    if (in.bad()) throw Failure{file.string() + ": cannot read: " + std::strerror(errno)};
    return text;
}

// nlohmann reports the last character it read; point at the start of that token instead (the opening quote of
// a string, the first character of a literal or number), which is where a user looks for the mistake.
std::size_t token_start(std::string_view text, std::size_t last) {
    if (last >= text.size()) return text.size();
    auto literal = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
               c == '-' || c == '+';
    };
    if (text[last] == '"') {
        for (std::size_t i = last; i-- > 0;) {
            if (text[i] == '\n') break;
            if (text[i] != '"') continue;
            std::size_t backslashes = 0;
            for (std::size_t k = i; k-- > 0 && text[k] == '\\';)
                ++backslashes;
            if (backslashes % 2 == 0) return i;
        }
        return last;
    }
    std::size_t start = last;
    while (start > 0 && literal(text[start]) && literal(text[start - 1]))
        --start;
    return start;
}

// The part of nlohmann's message after "line L, column C: ".
std::string parse_reason(const char* what) {
    std::string message(what);
    auto column = message.find("column ");
    if (column != std::string::npos) {
        auto colon = message.find(": ", column);
        if (colon != std::string::npos) return message.substr(colon + 2);
    }
    return message;
}

class Loader {
  public:
    explicit Loader(Collected& out) : out_(out) {}

    void load_file(const fs::path& file, Layer layer) {
        std::error_code ec;
        fs::path identity = fs::weakly_canonical(file, ec);
        if (ec) identity = file;
        if (std::find(seen_.begin(), seen_.end(), identity) != seen_.end()) return;
        seen_.push_back(identity);

        const FileBytes bytes = read_file(file);
        out_.files_read.push_back(file);
        load_text(file, std::string_view(bytes.data(), bytes.size()), layer);
    }

    // A settings object that is no file (a control channel's layer): `file` is then a name for messages and
    // sources, and nothing is added to files_read.
    void load_text(const fs::path& file, std::string_view text, Layer layer) {
        json root;
        try {
            root = json::parse(text.begin(), text.end());
        } catch (const json::parse_error& e) {
            std::size_t offset = token_start(text, e.byte > 0 ? e.byte - 1 : 0);
            LineColumn lc = line_column(text, offset);
            throw Failure{file.string() + ":" + std::to_string(lc.line) + ":" + std::to_string(lc.column) +
                          ": not valid JSON: " + parse_reason(e.what())};
        }
        FileLoader(file, layer, text, out_).load(root);
    }

    // Loads `file` when it exists; a missing discovered file is no error.
    void load_if_present(const fs::path& file, Layer layer) {
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(file, ec)) || ec) return;
        load_file(file, layer);
    }

  private:
    Collected& out_;
    std::vector<fs::path> seen_;
};

fs::path absolute_normal(const fs::path& path, const fs::path& base) {
    return fs::path(normal_path(path.is_absolute() ? path : base / path));
}

fs::path home_directory() {
    if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') return home;
    if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) return pw->pw_dir;
    return "/";
}

void load_flags(const LoadOptions& options, Collected& out) {
    auto flag_source = [](const char* flag) { return Source{Layer::Flags, "", flag, 0}; };
    auto domains = [&](const std::vector<std::string>& values, const char* flag, bool allow) {
        for (const std::string& text : values) {
            auto parsed = parse_domain_pattern(text);
            if (auto* why = std::get_if<std::string>(&parsed))
                throw Failure{std::string(flag) + " " + json_quoted(text) +
                              ": invalid domain pattern: " + *why};
            out.add_domain(std::get<DomainPattern>(parsed), Rule{text, flag_source(flag)}, allow);
        }
    };
    domains(options.allow_domains, "--allow-domain", true);
    domains(options.deny_domains, "--deny-domain", false);

    PathContext ctx{out.cwd, out.home, out.cwd};
    auto paths = [&](const std::vector<std::string>& values, const char* flag, std::vector<PathRule>& into) {
        for (const std::string& text : values) {
            auto resolved = resolve_path(text, PathStyle::Plain, ctx);
            if (auto* why = std::get_if<std::string>(&resolved))
                throw Failure{std::string(flag) + " " + json_quoted(text) + ": invalid path: " + *why};
            auto& r = std::get<ResolvedPath>(resolved);
            into.push_back(PathRule{std::move(r.path), r.glob, Rule{text, flag_source(flag)}});
        }
    };
    paths(options.allow_write, "--allow-write", out.allow_write);
    paths(options.deny_write, "--deny-write", out.deny_write);
    paths(options.allow_read, "--allow-read", out.allow_read);
    paths(options.deny_read, "--deny-read", out.deny_read);
    for (const fs::path& dir : options.private_dirs) {
        // A rule of cordon's own (Default layer): no settings key can lift it. The path as given and where
        // its symlinks lead (the jail decides on what it resolves).
        const Source own{Layer::Default, "", std::string(kPrivateDirWhere), 0};
        std::vector<fs::path> spellings{absolute_normal(dir, out.cwd)};
        std::error_code ec;
        fs::path target = fs::weakly_canonical(spellings.front(), ec);
        if (!ec && fs::path(normal_path(target)) != spellings.front())
            spellings.emplace_back(normal_path(target));
        for (const fs::path& p : spellings) {
            out.deny_read.push_back(PathRule{p, false, Rule{p.string(), own}});
            out.private_dirs.push_back(PathRule{p, false, Rule{p.string(), own}});
        }
    }
    for (const fs::path& dir : options.session_dirs) {
        // Read-only, not hidden: `ls` of a runtime directory keeps working, and reading names nothing the
        // notifier's refusal of a registered socket depends on.
        const Source own{Layer::Default, "", std::string(kSessionDirWhere), 0};
        std::vector<fs::path> spellings{absolute_normal(dir, out.cwd)};
        std::error_code ec;
        fs::path target = fs::weakly_canonical(spellings.front(), ec);
        if (!ec && fs::path(normal_path(target)) != spellings.front())
            spellings.emplace_back(normal_path(target));
        for (const fs::path& p : spellings)
            out.private_dirs.push_back(PathRule{p, false, Rule{p.string(), own}});
    }

    for (const std::string& text : options.inspect)
        if (std::string error = add_inspect_flag(text, out.inspection); !error.empty()) throw Failure{error};
    if (options.read_scope == "project" && !out.read_scope_project) {
        out.read_scope_project = Rule{"--read-scope project", flag_source("--read-scope")};
    } else if (options.read_scope == "all") {
        out.read_scope_all.push_back(Rule{"--read-scope all", flag_source("--read-scope")});
    } else if (!options.read_scope.empty() && options.read_scope != "all" &&
               options.read_scope != "project") {
        throw Failure{"--read-scope " + json_quoted(options.read_scope) + ": expected all or project"};
    }

    if (out.read_scope_project)
        for (const Rule& all : out.read_scope_all) {
            // As the loader words its warnings: file:line: JSON path (or the flag).
            std::string where = "--read-scope all";
            if (!all.source.file.empty())
                where = all.source.file +
                        (all.source.line > 0 ? ":" + std::to_string(all.source.line) : std::string()) + ": " +
                        all.source.where;
            out.warnings.push_back(where + ": read scope \"all\" does not lower \"project\" (" +
                                   format_source(out.read_scope_project->source) +
                                   "): a restriction from any source holds");
        }

    // Claude Code's allowManagedReadPathsOnly: only the managed layer may allow reads (allowRead, Read(...)
    // allow rules); the flag and every other file's entries are dropped, never silently: an allowance the
    // managed layer forbade must not widen what the jail may read.
    if (out.managed_read_paths_only) {
        std::vector<PathRule> kept;
        for (PathRule& rule : out.allow_read) {
            if (rule.rule.source.layer == Layer::Managed) {
                kept.push_back(std::move(rule));
                continue;
            }
            out.warnings.push_back(format_source(rule.rule.source) + ": allowRead " +
                                   json_quoted(rule.rule.text) +
                                   " ignored: allowManagedReadPathsOnly in managed settings");
        }
        out.allow_read = std::move(kept);
    }

    // Checked by `cordon run`'s flag parser already (a usage error there); a library caller's bad entry
    // stops.
    for (const std::string& text : options.host_ports) {
        auto port = parse_host_port(text);
        if (auto* why = std::get_if<std::string>(&port))
            throw Failure{"--host-port " + json_quoted(text) + ": " + *why};
        out.host_ports.push_back(Rule{text, flag_source("--host-port")});
    }
    for (const std::string& text : options.publish_ports) {
        auto port = parse_published_port(text);
        if (auto* why = std::get_if<std::string>(&port))
            throw Failure{"--publish " + json_quoted(text) + ": " + *why};
        out.publish_ports.push_back(Rule{text, flag_source("--publish")});
    }
    for (const std::string& text : options.allow_addresses) {
        auto range = parse_cidr(text);
        if (auto* why = std::get_if<std::string>(&range))
            throw Failure{"--allow-address " + json_quoted(text) + ": invalid address: " + *why};
        out.ranges.push_back(std::get<AddressRange>(range));
        out.addresses.push_back(Rule{text, flag_source("--allow-address")});
    }
}

}  // namespace

std::optional<LoadError> collect(const LoadOptions& options, Collected& out) {
    try {
        std::error_code ec;
        fs::path process_cwd = fs::current_path(ec);
        if (ec) process_cwd = "/";
        out.cwd = absolute_normal(options.cwd.empty() ? process_cwd : options.cwd, process_cwd);
        out.home = absolute_normal(options.home.empty() ? home_directory() : options.home, process_cwd);
        for (const fs::path& other : options.other_homes)
            if (other.is_absolute()) out.other_homes.push_back(absolute_normal(other, process_cwd));

        Loader loader(out);
        const fs::path managed_dir = absolute_normal(options.managed_dir, process_cwd);
        loader.load_if_present(managed_dir / "managed-settings.json", Layer::Managed);
        std::vector<fs::path> drop_ins;
        for (fs::directory_iterator it(managed_dir / "managed-settings.d", ec), end; !ec && it != end;
             it.increment(ec)) {
            const std::string name = it->path().filename().string();
            std::error_code type_ec;
            if (name.size() > 5 && name.front() != '.' && name.substr(name.size() - 5) == ".json" &&
                !it->is_directory(type_ec))
                drop_ins.push_back(it->path());
        }
        std::sort(drop_ins.begin(), drop_ins.end(), [](const fs::path& a, const fs::path& b) {
            return a.filename().string() < b.filename().string();
        });
        for (const fs::path& file : drop_ins)
            loader.load_file(file, Layer::Managed);
        for (std::size_t i = 0; i < options.control_settings.size(); ++i)
            loader.load_text(options.control_settings.size() == 1
                                 ? std::string("control channel")
                                 : "control channel " + std::to_string(i + 1),
                             options.control_settings[i], Layer::Control);

        for (const fs::path& file : options.settings_files) {
            const fs::path full = absolute_normal(file, process_cwd);
            std::error_code exists_ec;
            if (!fs::exists(full, exists_ec)) throw Failure{full.string() + ": no such settings file"};
            loader.load_file(full, Layer::Settings);
        }
        if (options.discover) {
            loader.load_if_present(out.cwd / ".claude" / "settings.local.json", Layer::Local);
            // The project's file may be the user's own (the working directory is the home directory, or the
            // project's .claude is a link to ~/.claude): then it is the user's settings, at the user's layer
            // (a project's file could not give host ports, published ports, ...).
            const fs::path project = out.cwd / ".claude" / "settings.json";
            const fs::path user = out.home / ".claude" / "settings.json";
            std::error_code same_ec;
            if (!fs::equivalent(project, user, same_ec)) loader.load_if_present(project, Layer::Project);
            loader.load_if_present(user, Layer::User);
        }
        load_flags(options, out);
    } catch (const Failure& failure) {
        return LoadError{failure.message};
    } catch (const std::exception& e) {
        // Filesystem errors (e.g. an unreadable managed directory) are user-fixable too.
        return LoadError{e.what()};
    }
    return std::nullopt;
}

}  // namespace cordon::policy::detail
