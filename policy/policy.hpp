// cordon's policy engine: loads Claude Code / srt settings and flags into one immutable Policy, and decides
// network targets (host, port) and filesystem accesses (read/write of a path), every decision carrying the
// rule that made it. Pure: no sockets, no threads, no global state. A reload builds a new Policy.
#pragma once

#include <array>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cordon::policy {

struct InspectionPolicy;  // inspection.hpp

// Where a rule came from, highest precedence first. Arrays merge across layers; scalars take the highest
// layer.
enum class Layer {
    Managed,   // /etc/claude-code/managed-settings.json and managed-settings.d/*.json
    Control,   // updates from a control channel (`cordon run --control-fd`, `cordon proxy --control`)
    Settings,  // files given with --settings
    Local,     // .claude/settings.local.json in the working directory
    Project,   // .claude/settings.json in the working directory
    User,      // ~/.claude/settings.json
    Flags,     // --allow-domain, --deny-read, ... (the highest non-managed layer)
    Default,   // cordon's embedded defaults (working directory, private temp dir, always-read-only paths)
};
std::string_view to_string(Layer layer);

// The origin of one rule: the layer, the file (empty for flags and defaults), the position inside it as a
// JSON path (e.g. `permissions.allow[3]`, or `--allow-domain` for a flag) and the 1-based line of the entry
// in the file (0 for flags and defaults).
struct Source {
    Layer layer = Layer::Default;
    std::string file;
    std::string where;
    int line = 0;
};

// One rule as the user wrote it (e.g. `WebFetch(domain:*.example.com)`, `*.example.com`, `Edit(/src/**)`).
struct Rule {
    std::string text;
    Source source;
};

enum class Verdict { Allow, Deny };
std::string_view to_string(Verdict verdict);

// Why a decision was taken, as stable words used by the proxy's X-Proxy-Error header and the audit log.
enum class Reason {
    AllowedByRule,       // an allow rule matched and no deny rule did
    BlockedByDenylist,   // a deny rule matched
    BlockedByAllowlist,  // no allow rule matched (unknown = deny)
    DefaultAllow,        // filesystem: reads are allowed unless denied
    DefaultDeny,         // filesystem: writes outside writable areas
    AlwaysReadOnly,      // filesystem: a protected path (settings, shell start-up files, .git/hooks, ...)
    OutsideReadScope,    // filesystem: a read outside the project read scope (--read-scope project)
};
std::string_view to_string(Reason reason);  // "allowed", "blocked-by-denylist", "blocked-by-allowlist", ...

// srt's `network.deniedDomainReasons` (and `sandbox.network.deniedDomainReasons` in Claude Code files): why a
// refused host is refused, in the policy author's words (`{"*.pastebin.com": "no paste sites: see
// wiki/egress"}`). Advisory only: a reason never changes a decision; it is shown with every refusal of a host
// its pattern matches (deniedDomains' pattern syntax), the highest layer's first.
struct DomainReason {
    std::string pattern;  // as written
    std::string text;     // the reason
    Source source;        // where: `network.deniedDomainReasons.PATTERN`
};

struct Decision {
    Verdict verdict = Verdict::Deny;
    Reason reason = Reason::BlockedByAllowlist;
    // The rule that decided; empty when none matched (BlockedByAllowlist, DefaultAllow). It shares ownership
    // of the Policy that holds it, so a decision needs no copy of the rule and outlives a policy reload.
    std::shared_ptr<const Rule> rule;
    // A refused connection's deniedDomainReasons entry (null when none matches, and for every allow).
    std::shared_ptr<const DomainReason> reason_text;
    bool allowed() const { return verdict == Verdict::Allow; }
    // One line for humans: "deny: blocked-by-denylist by `*.evil.com` (Managed, /etc/.../x.json at
    // sandbox.network.deniedDomains[0])", then `: "REASON"` with a reason_text.
    std::string explain() const;
    // {"decision","reason","rule","source":{"layer","file","where"}}, and "reason_text" with one.
    nlohmann::json to_json() const;
};

// A filesystem entry after path resolution: `path` is absolute and lexically normal; `glob` is true when the
// rule holds gitignore-style wildcards (`*`, `**`, `?`, `[...]`), which the jail can only apply to what
// exists.
struct PathRule {
    std::filesystem::path path;
    bool glob = false;
    Rule rule;
};

// What a jailed command may read (`--read-scope`, `sandbox.filesystem.readScope`). `All` (srt's behaviour,
// the default): everything but denyRead. `Project`: only `include` (the working directory, every writable
// root, the system paths of read_scope_system_paths(), the settings files read, cordon's own binary, every
// allowRead entry), minus `hidden` (read_scope_hidden_paths(): /etc/shadow & co) and denyRead.
//
// A restriction is never lowered: "project" from any layer (managed, --settings, project, local, user, the
// flag) holds, and "all" elsewhere, the flag included, does not undo it. `rule` names the highest layer that
// asked for "project".
enum class ReadScope { All, Project };
std::string_view to_string(ReadScope scope);  // "all", "project"

struct ReadScopePolicy {
    ReadScope scope = ReadScope::All;
    Rule rule;                      // who asked for "project" (Default layer with All)
    std::vector<PathRule> include;  // Project: the readable paths (empty with All)
    std::vector<PathRule> hidden;   // Project: secrets hidden even where `include` covers them
};

// The system paths readable with the project scope: a program needs them to run (/usr, /bin, /sbin, /lib*,
// /etc, /opt) or the jail makes its own (/proc, /dev, /tmp).
const std::vector<std::string>& read_scope_system_paths();
// Secrets below those system paths, hidden with the project scope whatever allowRead says (gitignore globs).
const std::vector<std::string>& read_scope_hidden_paths();

struct FilesystemPolicy {
    std::vector<PathRule> allow_write;  // includes the working directory and the private temp dir (Default)
    std::vector<PathRule>
        deny_write;  // includes every always-read-only path (Default) and settings files read
    std::vector<PathRule> deny_read;
    std::vector<PathRule> allow_read;  // re-exposes paths inside deny_read
    // Relative names protected wherever they appear under a writable area (.bashrc, .git/hooks,
    // .claude/settings.json, ...), for the jail to bind read-only (or make uncreatable) inside each writable
    // root. always_read_only_names() lists them.
    std::vector<std::string> always_read_only_names;
    // Relative names protected in home directories (.ssh, .local/bin, .config/systemd, bin, .claude, ...): in
    // `home` and, where a writable area holds them, /root and /home/*. home_read_only_names() lists them.
    std::vector<std::string> home_read_only_names;
    std::filesystem::path home;  // the caller's home directory (absolute, normal)
    // Other homes whose protected names hold as in `home`'s (a `--user` run's user's).
    std::vector<std::filesystem::path> other_homes;

    // The working directory is writable by default only when it is a project: not `/`, a system directory
    // (/etc /usr /bin /sbin /lib* /boot /var /opt /srv /root /home /proc /sys /dev /run, or anything below
    // /etc /usr /bin /sbin /lib* /boot /proc /sys /dev), the home directory or an ancestor of it. For such a
    // directory `refusal` says why ("/ is the root directory") and `writable` is false, unless an allowWrite
    // rule covers it (`--allow-write .`: the user insists; the protected paths stay protected).
    struct WorkingDirectory {
        std::filesystem::path path;
        bool writable = true;
        std::string refusal;  // empty: a project directory
    } working_directory;

    ReadScopePolicy read_scope;

    // sandbox.jail: which jail `cordon run` uses ("auto", "namespaces", "landlock" as the rule's text; the
    // highest layer's); empty when no layer says (auto). `--jail` overrides it.
    std::optional<Rule> jail;

    // srt's `filesystem.allowGitConfig`: `.git/config` is then not in always_read_only_names (git can write
    // it: `git config`, `git remote add`); `.git/hooks` stays protected.
    bool allow_git_config = false;

    // `filesystem.allowBareRepositories`: the jail may make a directory that git reads as a repository
    // (`HEAD` next to `objects` or `refs`) outside a git directory the run created. Off by default: git reads
    // such a directory's `config` (core.fsmonitor, core.worktree) wherever it searches for a repository.
    bool allow_bare_repositories = false;
};

// A CIDR range of the address guard (see syntax.hpp parse_cidr): the network-order bytes of the address
// (4 used for IPv4), and the prefix length.
struct AddressRange {
    int family = 0;  // AF_INET or AF_INET6
    std::array<std::uint8_t, 16> bytes{};
    int prefix = 0;
    // True when the network-order bytes `address` of an address of `address_family` lie in the range.
    bool contains(int address_family, const std::uint8_t* address) const;
};

// The always-read-only names (DESIGN.md "always read-only"): relative paths protected in every writable area,
// and those protected in home directories. One list, used by Policy::decide_write and by the jail's mount
// plan.
const std::vector<std::string>& always_read_only_names();
const std::vector<std::string>& home_read_only_names();
// Inside a git directory that existed when the run started (besides `.git/hooks` and `.git/config` above):
// `commondir`, `config.worktree`, `modules` (each submodule's git directory), `worktrees/*/{commondir,gitdir,
// config.worktree}` (`*`: one component). Enforced only at the system-call boundary (jail/notify.cpp): no
// mount, no placeholder (an empty `commondir` would break git).
const std::vector<std::string>& git_dir_names();

// Why `cwd` must not be writable by default (see FilesystemPolicy::WorkingDirectory), or empty. Both paths
// absolute and normal.
std::string working_directory_refusal(const std::filesystem::path& cwd, const std::filesystem::path& home);

struct NetworkPolicy {
    std::vector<Rule> allowed_domains;  // effective allow entries (after allowManagedDomainsOnly)
    std::vector<Rule> denied_domains;
    // deniedDomainReasons, in precedence order (managed first).
    std::vector<DomainReason> denied_domain_reasons;
    std::vector<Rule> ignored_allows;          // allow entries dropped by allowManagedDomainsOnly
    std::vector<Rule> allowed_addresses;       // CIDRs the proxy's address guard lets through
    std::vector<AddressRange> allowed_ranges;  // the same, parsed (one per allowed_addresses entry)
    std::vector<Rule> allow_unix_sockets;
    bool allow_all_unix_sockets = false;
    bool allow_managed_domains_only = false;
    // Termination, request rules, parent proxy, credentials (inspection.hpp). Never null.
    std::shared_ptr<const InspectionPolicy> inspection;
    // srt's / Claude Code's `strictAllowlist`: a host in neither list is refused, never asked about.
    bool strict_allowlist = false;
    // `sandbox.network.reportOnly` (issue 28), honoured only from managed settings and --settings files (the
    // highest of them wins); elsewhere a warning. Only `cordon proxy` acts on it (`cordon run` always
    // enforces and warns). `report_only_rule` names the entry that set it.
    bool report_only = false;
    std::optional<Rule> report_only_rule;
    // `cordon run`'s port forwards (policy/ports.hpp): hostPorts (the host's loopback ports reachable inside
    // the jail) and publishPorts (host listeners into the jail's loopback), from --host-port / --publish and
    // every layer's `sandbox.network.hostPorts` / `publishPorts`; each rule's text is the entry as written
    // (a number or `[ADDR:]PORT[:JAIL_PORT]`), already checked by the loader.
    std::vector<Rule> host_ports, publish_ports;
};

// Claude Code's Bash permission rules and sandbox switches, for `cordon claude-hook` (agent/); the proxy and
// the jail do not use them. Each rule keeps its full text (`Bash(npm run test:*)`, or `Bash` alone).
struct CommandPolicy {
    std::vector<Rule> allow, ask, deny;   // permissions.allow / ask / deny rules for the Bash tool
    std::vector<Rule> excluded_commands;  // sandbox.excludedCommands
    // hooks.PreToolUse hooks whose matcher can select the Bash tool (cordon's own included): each hook's
    // command, or `type: TYPE` for a hook that is not a command. Such a hook can answer with updatedInput,
    // which replaces the command cordon's hook wrapped in its jail.
    std::vector<Rule> bash_hooks;
    // Scalars: the highest layer that sets them wins (managed first). Claude Code's defaults.
    bool sandbox_enabled = false;              // sandbox.enabled
    bool auto_allow_bash_if_sandboxed = true;  // sandbox.autoAllowBashIfSandboxed
    bool allow_unsandboxed_commands = true;    // sandbox.allowUnsandboxedCommands
};

// What to load. Paths default to the process's working directory and $HOME.
struct LoadOptions {
    std::filesystem::path cwd;                               // project root; empty = current directory
    std::filesystem::path home;                              // empty = $HOME
    std::filesystem::path managed_dir = "/etc/claude-code";  // --managed-dir
    bool discover = true;                                    // false with --no-discover
    std::vector<std::filesystem::path> settings_files;       // --settings, in the order given
    std::vector<std::string> allow_domains, deny_domains;    // --allow-domain, --deny-domain
    std::vector<std::string> allow_write, deny_write;        // --allow-write, --deny-write
    std::vector<std::string> allow_read, deny_read;          // --allow-read, --deny-read
    std::vector<std::string> allow_addresses;                // --allow-address (CIDR)
    std::vector<std::string> host_ports, publish_ports;      // cordon run's --host-port, --publish
    std::vector<std::string> inspect;                        // --inspect PATTERN
    // Partial settings objects (JSON text, Claude Code or srt shape) from a control channel, loaded as the
    // Control layer, right below managed settings.
    std::vector<std::string> control_settings;
    std::string read_scope;  // --read-scope: "", "all" or "project"
    // cordon's own secrets (the CA directory, whose private key signs what inspected clients trust): denied
    // to reads and writes in every jail, whatever the settings allow (`cordon run` and `cordon check` add
    // them). A write there is always read-only (Reason::AlwaysReadOnly), its rule's source kPrivateDirWhere.
    std::vector<std::filesystem::path> private_dirs;
    // cordon's sessions (the sessions' registries and the directories of their control sockets): always
    // read-only in every jail, whatever the settings allow (`cordon run` and `cordon check` add them), but
    // readable. Why: a jailed command that could remove a session's registry entry would connect to its
    // socket (the notifier refuses only registered ones) and run under the session's wider policy; one that
    // could replace a socket would receive the next joining command's descriptors and environment. A write
    // there is Reason::AlwaysReadOnly, its rule's source kSessionDirWhere.
    std::vector<std::filesystem::path> session_dirs;
    // Homes whose protected names hold as in `home` (`cordon run --user U`: U's home, from /etc/passwd).
    std::vector<std::filesystem::path> other_homes;
};

// The `where` of the rule that keeps a private directory (LoadOptions::private_dirs) read-only.
inline constexpr std::string_view kPrivateDirWhere = "cordon's CA (its private key)";
// The `where` of the rule that keeps a session directory (LoadOptions::session_dirs) read-only.
inline constexpr std::string_view kSessionDirWhere = "cordon's sessions (their registry and sockets)";

// A settings or flag error a user can fix: names the file, the JSON path (or line:column for bad JSON) and
// the entry.
struct LoadError {
    std::string message;
};

class Policy {
  public:
    // Decides a connection to `host` (a name, an IPv4 literal or an IPv6 literal with or without brackets)
    // and port, before any DNS. Names are normalised (case, trailing dot, IDN to punycode). Cost does not
    // depend on the number of rules.
    virtual Decision decide_connect(std::string_view host, std::uint16_t port) const = 0;
    // The deniedDomainReasons entry a refusal of `host:port` carries (decide_connect's reason_text), or null:
    // for a request its host's request rules refuse, where the connection itself was allowed.
    virtual std::shared_ptr<const DomainReason> reason_for(std::string_view host,
                                                           std::uint16_t port) const = 0;
    // Decides access to an absolute path (lexically normalised, not resolved through symlinks; with the
    // project read scope also every symlink on the way and where it leads must lie in the scope, as in the
    // jail, where whatever is outside does not exist).
    virtual Decision decide_read(const std::filesystem::path& path) const = 0;
    virtual Decision decide_write(const std::filesystem::path& path) const = 0;
    // The jail's supervisor (jail/notify.cpp) decides a write it performs for the command on `path`, an
    // absolute normal path already resolved in the jail's view (where the write lands): decide_write without
    // resolving again on the host. The names inside a git directory (`.git/hooks`, `.git/config`) hold only
    // where `git_dir_existed(dir)` says that git directory (`.../.git`) existed when the run started: a
    // repository created during the run (`git init`, `git clone`) works normally.
    virtual Decision decide_write_resolved(
        const std::string& path, const std::function<bool(const std::string&)>& git_dir_existed) const = 0;
    // True when the directory `path` (absolute, normal) holds or would hold protected names: its last
    // components are a proper prefix of one (`.claude` for `.claude/settings.json`, `.git` for `.git/hooks`,
    // `~/.config` for `.config/git`). Such a directory is neither renamed nor linked into place or away: `mv
    // x .claude` would bring a prepared `settings.json` along. So is an ancestor of cordon's own directories
    // (LoadOptions::private_dirs, session_dirs).
    virtual bool holds_protected_names(const std::string& path) const = 0;

    virtual const NetworkPolicy& network() const = 0;
    virtual const FilesystemPolicy& filesystem() const = 0;
    virtual const CommandPolicy& commands() const = 0;
    // Every file that was read to build this policy (they are always read-only inside the jail).
    virtual const std::vector<std::filesystem::path>& files_read() const = 0;
    // Non-fatal notices (e.g. allowManagedDomainsOnly outside the managed layer), one line each.
    virtual const std::vector<std::string>& warnings() const = 0;
    // The effective merged policy, each entry with its source (`cordon policy`).
    virtual nlohmann::json to_json() const = 0;

    virtual ~Policy() = default;
};

using PolicyPtr = std::shared_ptr<const Policy>;

// Loads every source in LoadOptions. Never throws for user input: a bad file or flag is a LoadError.
std::variant<PolicyPtr, LoadError> load_policy(const LoadOptions& options);

// Parses a network target for `cordon check` and the proxy: `host`, `host:port`, `[v6]:port`, `v6`, or a URL
// (`scheme://host[:port]/...`, default port from the scheme). Returns an error message for malformed input.
struct HostPort {
    std::string host;  // normalised; IPv6 without brackets
    std::uint16_t port = 0;
};
std::variant<HostPort, std::string> parse_target(std::string_view text, std::uint16_t default_port = 443);
// The host of a request target that arrives without its port (a CONNECT authority or Host header already
// split, a SOCKS5 domain name): normalised as parse_target does (case, trailing dot, IDN, IPv4 in any
// spelling, IPv6 with or without brackets). URL characters (`@/?#\`, spaces) are an error: they never name a
// host.
std::variant<HostPort, std::string> parse_target_host(std::string_view host, std::uint16_t port);

}  // namespace cordon::policy
