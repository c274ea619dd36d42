// `cordon check [policy flags] [--json] TARGET`: the decision for one network target or path, with the rule
// that made it. Exit 0 allow, 1 deny, 2 usage or settings error.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>
#ifdef __linux__
#include <linux/fs.h>
#endif

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "certs/certs.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/git_config.hpp"
#include "policy/syntax.hpp"
#include "policy/write_rules.hpp"
#include "proxy/address_guard.hpp"
#include "proxy/request_rules.hpp"
#include "proxy/resolver.hpp"
#ifdef CORDON_LINUX_JAIL
#include "run/session.hpp"
#endif

namespace cordon::cli {
namespace {

constexpr const char* kCheckHelp =
    "usage: cordon check [policy flags] [--json] TARGET\n"
    "\n"
    "Prints the policy decision for TARGET and the rule that made it (layer, file:line, JSON path).\n"
    "TARGET is one of:\n"
    "  https://host[:port]/path   a URL (port defaults to 443 for https, 80 for http)\n"
    "  host | host:port           a name or IPv4 address (port defaults to 443)\n"
    "  [v6]:port | v6             an IPv6 address\n"
    "  read:PATH | write:PATH     a filesystem access (PATH absolute, ~/..., or relative to the working\n"
    "                             directory)\n"
    "  unix:PATH                  a connect to a Unix socket (allowUnixSockets, symlinks followed, or\n"
    "                             allowAllUnixSockets)\n"
    "  move:FROM TO               a rename of FROM to the name TO (rename(2), as `mv FROM TO` when TO is\n"
    "                             no directory): the write of both names, then the protected-moves rule\n"
    "                             (a directory holding protected names, a symlink into their place, a\n"
    "                             tree holding a git directory)\n"
    "  remove:PATH | symlink:PATH the removal of PATH (rm, rmdir), a symlink made at PATH (ln -s)\n"
    "\n"
    "Output: the first line is `allow` or `deny`, then the reason, the rule and its source.\n"
    "Exit status: 0 allow, 1 deny, 2 usage or settings error.\n"
    "\n"
    "A write:PATH is decided by the jail's write rules (`cordon policy --write-rules` lists them), on PATH\n"
    "resolved as the file system is now: the line `write rule:` names the rule that decided, and which jail\n"
    "it applies to. A fact only the running jail knows (a git directory or a /dev/shm entry that existed "
    "when\n"
    "the run started, the run's TMPDIR) is assumed from what exists now; an `assumed:` line says so.\n"
    "move:, remove: and symlink: are decided the same way; their last name is never followed.\n"
    "\n"
    "  --json                 print one JSON object: "
    "{\"decision\",\"reason\",\"rule\",\"source\",\"target\"}\n"
    "                         (write:, move:, remove:, symlink: also \"writeRule\", \"jail\",\n"
    "                         \"assumed\")\n"
    "  --jail namespaces|landlock\n"
    "                         write: the jail to decide for (default: sandbox.jail, auto meaning\n"
    "                         namespaces); the other jail's answer is printed too where it differs\n"
    "  --resolve              for a network target the policy allows, also resolve the name (as the proxy\n"
    "                         does, with --dns-server) and apply the address guard (--allow-address): the\n"
    "                         answer is what the proxy would do. Adds \"addresses\" to --json.\n"
    "  --dns-server IP[:PORT] the DNS server for --resolve (repeatable; default /etc/resolv.conf)\n"
    "  --ca-dir DIR           the CA directory of the run to decide for (default: `cordon ca`'s): no jailed\n"
    "                         command reads or writes it\n"
    "  -h, --help             print this help\n"
    "\n"
    "\n";

// The proxy's view of an allowed target: the addresses the name resolves to (an IP literal is its own
// address) and, for each, the address guard's class when it refuses it.
struct Guarded {
    std::string error;                                           // "nxdomain", "dns-failure", ...
    std::vector<std::pair<std::string, std::string>> addresses;  // ip, refusing class ("" = passes)
    bool allowed() const {
        if (!error.empty()) return false;
        for (const auto& a : addresses)
            if (a.second.empty()) return true;
        return false;
    }
};

// Resolves with the proxy's own resolver (c-ares, the same --dns-server flags) and applies the proxy's
// address guard with the policy's allowed ranges, in the order decision.cpp does.
Guarded resolve_and_guard(const policy::Policy& policy, const policy::HostPort& target,
                          const std::vector<std::string>& dns_servers) {
    std::vector<proxy::Cidr> ranges;
    for (const auto& range : policy.network().allowed_ranges)
        ranges.push_back(proxy::Cidr::from(range));
    const proxy::AddressGuard guard(std::move(ranges));
    Guarded out;
    std::vector<proxy::Address> found;
    if (auto literal = proxy::Address::parse(target.host)) {
        found.push_back(*literal);
    } else {
        uv_loop_t loop;
        uv_loop_init(&loop);
        {
            auto resolver = proxy::Resolver::create(&loop, dns_servers);
            proxy::ResolveResult result;
            auto token =
                resolver->resolve(target.host, [&](proxy::ResolveResult r) { result = std::move(r); });
            uv_run(&loop, UV_RUN_DEFAULT);
            if (result.error != proxy::ResolveError::None) out.error = proxy::to_string(result.error);
            found = std::move(result.addresses);
            resolver->close();
            uv_run(&loop, UV_RUN_DEFAULT);
        }
        uv_loop_close(&loop);
    }
    for (proxy::Address a : found) {
        a = a.unmapped();
        a.set_port(target.port);
        auto why = guard.check(a);
        out.addresses.emplace_back(a.ip(), why.value_or(""));
    }
    return out;
}

}  // namespace

namespace {

// unix:PATH: what the jail decides for a connect (jail/unix_sockets.hpp), in the host's view: the socket file
// PATH leads to (symlinks followed) is one of the listed ones (`~` expanded), or allowAllUnixSockets.
policy::Decision decide_unix_socket(const policy::Policy& policy, const std::filesystem::path& path) {
    policy::Decision d;
    const auto& net = policy.network();
    if (net.allow_all_unix_sockets) {
        d.verdict = policy::Verdict::Allow;
        d.reason = policy::Reason::AllowedByRule;
        d.rule = std::make_shared<const policy::Rule>(policy::Rule{"allowAllUnixSockets: true", {}});
        return d;
    }
    std::error_code ec;
    const auto target = std::filesystem::weakly_canonical(path, ec);
    for (const auto& rule : net.allow_unix_sockets) {
        std::string listed = rule.text;
        if (listed == "~" || listed.rfind("~/", 0) == 0)
            listed = policy.filesystem().home.string() + listed.substr(1);
        if (listed.empty() || listed[0] != '/') continue;
        std::error_code lec;
        if (!ec && std::filesystem::weakly_canonical(listed, lec) == target && !lec) {
            d.verdict = policy::Verdict::Allow;
            d.reason = policy::Reason::AllowedByRule;
            d.rule = std::make_shared<const policy::Rule>(rule);
            return d;
        }
    }
    return d;  // deny, blocked-by-allowlist
}

// The write rules' facts (policy/write_rules.hpp) from the host's file system as it is now. What only the
// running jail knows is assumed and named in `assumed`: a git directory or a /dev/shm entry that exists now
// existed when the run started; a run's TMPDIR is `cordon-tmp-XXXXXX` below $TMPDIR or /tmp.
// The entry `name` of `dir` as a path (`.`: the directory itself).
std::string join(const std::string& dir, const std::string& name) {
    return name == "." ? dir : dir == "/" ? "/" + name : dir + "/" + name;
}

// Whether the directory open as `fd` compares names without case (ext4 chattr +F, tmpfs -o casefold).
bool casefold_flag(int fd) {
#ifdef __linux__
    constexpr unsigned kCasefold = 0x40000000;  // FS_CASEFOLD_FL
    unsigned flags = 0;
    return ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0 && (flags & kCasefold);
#else
    (void)fd;
    return false;  // the Mac's case-insensitive volumes: not a rule of the Linux jail
#endif
}

// The type bits of the entry `name` of `dir`, never followed; 0 when there is none.
mode_t type_of(const std::string& dir, const std::string& name) {
    struct stat st {};
    return ::lstat(join(dir, name).c_str(), &st) == 0 ? (st.st_mode & S_IFMT) : 0;
}

class FileSystemFacts final : public policy::WriteFacts {
  public:
    FileSystemFacts(const policy::Policy& policy, policy::JailKind jail) : policy_(policy), jail_(jail) {}
    policy::JailKind jail() const override { return jail_; }
    bool in_private_tmp(const std::string& path) const override {
        std::string base = "/tmp";
        if (const char* t = std::getenv("TMPDIR"); t != nullptr && t[0] == '/') {
            std::error_code ec;
            const auto canonical = std::filesystem::weakly_canonical(t, ec);
            if (!ec && std::filesystem::is_directory(canonical, ec)) base = canonical.string();
        }
        const std::string prefix = (base == "/" ? "" : base) + "/cordon-tmp-";
        if (path.compare(0, prefix.size(), prefix) != 0) return false;
        const std::size_t end = path.find('/', prefix.size());
        if ((end == std::string::npos ? path.size() : end) != prefix.size() + 6) return false;
        assume("a run's TMPDIR is cordon-tmp-XXXXXX below $TMPDIR or /tmp");
        return true;
    }
    bool hidden_by_read_rules(const std::string& path) override {
        if (!policy_.decide_read(path).allowed()) return true;
        const std::string prefix = path == "/" ? "/" : path + "/";
        for (const auto& rule : policy_.filesystem().deny_read)
            if (rule.path.string().compare(0, prefix.size(), prefix) == 0 &&
                !policy_.decide_read(rule.path).allowed())
                return true;
        return false;
    }
    bool git_dir_existed(const std::string& dir) override {
        struct stat st {};
        if (::lstat(dir.c_str(), &st) != 0) return errno != ENOENT && errno != ENOTDIR;
        assume("the git directory " + dir + " existed when the run started (it exists now)");
        return true;
    }
    bool holds_git_signature(const std::string& dir) override {
        auto has = [&](const char* name) { return has_entry(dir, name); };
        return has("HEAD") && (has("objects") || has("refs") || has("commondir"));
    }
    bool compares_without_case(const std::string& dir) override {
#ifndef __linux__
        (void)dir;
        return false;  // the Mac's case-insensitive volumes: not a rule of the Linux jail
#endif
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return errno != ENOENT && errno != ENOTDIR;  // missing: the write finds nothing anyway
        const bool nocase = casefold_flag(fd);
        ::close(fd);
        return nocase;
    }
    bool is_regular_file(const std::string& dir, const std::string& name) override {
        return type_of(dir, name) == S_IFREG;
    }
    bool has_entry(const std::string& dir, const std::string& name) override {
        return type_of(dir, name) != 0;
    }
    bool existed_at_start(const std::string& dir, const std::string& name) override {
        if (!has_entry(dir, name)) return false;
        assume(join(dir, name) + " existed when the run started (it exists now)");
        return true;
    }
    const policy::git_config::Targets& git_targets() override {
        return targets();
    }
    const policy::ProtectedLinks& protected_links() override {
        targets();
        return links_;
    }
    bool is_protected_file(const std::string& dir, const std::string& name) override {
        struct stat st {};
        return ::lstat(join(dir, name).c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
               protected_links().holds_file(st.st_dev, st.st_ino);
    }
    bool is_directory(const std::string& dir, const std::string& name) override {
        return type_of(dir, name) == S_IFDIR;
    }
    bool is_symlink(const std::string& dir, const std::string& name) override {
        return type_of(dir, name) == S_IFLNK;
    }
    int walk_tree(const std::string& dir, const std::string& name, const std::string& lands_at,
                  const std::function<int(policy::MovedDirectory&)>& visit) override {
        const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0) return EACCES;
        const std::string top = join(dir, name);
        // What is there now stands for what was there when the run started.
        const std::function<bool(int, const std::string&)> existed = [&](int, const std::string& entry) {
            assume(entry == "."
                       ? "the git directories " + top + " holds existed when the run started (as now)"
                       : "the " + entry + " entries " + top + " holds existed when the run started (as now)");
            return true;
        };
        const std::function<bool(int)> nocase = casefold_flag;
        const int err = policy::walk_tree_at(fd, name, lands_at, existed, nocase, visit);
        ::close(fd);
        return err;
    }
    const std::vector<std::string>& assumed() const {
        return assumed_;
    }

  private:
    void assume(const std::string& what) const {
        if (std::find(assumed_.begin(), assumed_.end(), what) == assumed_.end()) assumed_.push_back(what);
    }
    // As the jail's supervisor reads them when the run starts (the working directory's repository, every
    // repository in the writable areas, the user's configuration): as written and resolved.
    const policy::git_config::Targets& targets() {
        if (!targets_) {
            const policy::git_config::SearchLimits limits;
            auto search = policy::git_config::find_targets_for(policy_, limits);
            if (search.unreadable_count > 0)
                assume(search.unreadable.front() +
                       (search.unreadable_count > 1
                            ? " (and " + std::to_string(search.unreadable_count - 1) + " more)"
                            : std::string()) +
                       " cannot be read, so every writable area is read-only (the git configuration there is "
                       "unknown)");
            if (search.unsearched_count > 0)
                assume(search.unsearched.front() +
                       (search.unsearched_count > 1
                            ? " (and " + std::to_string(search.unsearched_count - 1) + " more directories)"
                            : std::string()) +
                       " not searched for git repositories, so every writable area is read-only (a "
                       "repository there may name any hooks directory; the writable areas hold more than " +
                       std::to_string(limits.max_entries) + " entries or " +
                       std::to_string(limits.max_depth) + " levels: the jail does not search past that)");
            if (!search.protected_links.unsearched().empty())
                assume(search.protected_links.unsearched().front() +
                       " not looked through for links (a directory of yours that cannot be listed, or "
                       "past 200000 entries in all), so every writable area is read-only");
            targets_ = std::move(search.targets);
            links_ = std::move(search.protected_links);
        }
        return *targets_;
    }
    const policy::Policy& policy_;
    policy::JailKind jail_;
    std::optional<policy::git_config::Targets> targets_;
    policy::ProtectedLinks links_;  // with targets_
    mutable std::vector<std::string> assumed_;
};

// write:PATH in one jail: the write rules on PATH resolved as the file system is now (where the write would
// land), and the path rules on PATH as spelt too (Policy::decide_write: both spellings), the stricter first.
struct WriteAnswer {
    policy::Decision decision;  // what `reason`, `rule` and `source` print
    const policy::WriteRule* rule = nullptr;
    std::vector<std::string> assumed;
};

WriteAnswer decide_write_target(const policy::Policy& policy, const std::filesystem::path& path,
                                policy::JailKind jail) {
    FileSystemFacts facts(policy, jail);
    std::error_code ec;
    std::filesystem::path resolved = std::filesystem::weakly_canonical(path, ec);
    if (ec) resolved = path;
    std::string where = resolved.lexically_normal().string();
    if (where.size() > 1 && where.back() == '/') where.pop_back();
    struct stat st {};
    const bool creates = ::lstat(where.c_str(), &st) != 0;
    const policy::WriteDecision wd = policy::decide_write_entry(policy, where, creates, facts);
    WriteAnswer out{policy.decide_write(path), wd.rule, facts.assumed()};
    if (wd.rule->name == "path-rules") {
        if (out.decision.allowed() && !wd.allowed()) out.decision = wd.path_rule;
        return out;
    }
    if (!out.decision.allowed() && wd.allowed()) {
        // The lexical spelling is refused by the path rules although where it lands is not: the stricter.
        if (out.decision.reason != policy::Reason::DefaultDeny) {
            out.rule = &policy::write_rule("path-rules");
            return out;
        }
    }
    out.decision = policy::explain_write(wd);
    return out;
}

// An entry named without following it (a rename, a removal, a symlink made): its directory resolved as the
// file system is now, its last name as spelt.
std::pair<std::string, std::string> entry_of(const std::filesystem::path& path) {
    std::error_code ec;
    std::filesystem::path dir = std::filesystem::weakly_canonical(path.parent_path(), ec);
    if (ec) dir = path.parent_path();
    std::string d = dir.lexically_normal().string();
    if (d.size() > 1 && d.back() == '/') d.pop_back();
    std::string name = path.filename().string();
    if (name.empty() || path == "/") name = ".";
    return {d.empty() ? "/" : d, name};
}

// The first refusal of an entry's own write (decide_write_at), or none.
std::optional<WriteAnswer> refused_entry(const policy::Policy& policy, const std::string& dir,
                                         const std::string& name, bool creates, FileSystemFacts& facts) {
    const policy::WriteDecision wd = policy::decide_write_at(policy, dir, name, creates, facts);
    if (wd.allowed()) return std::nullopt;
    return WriteAnswer{policy::explain_write(wd), wd.rule, facts.assumed()};
}

enum class Change { Move, Remove, Symlink };

// move:FROM TO, remove:PATH, symlink:PATH in one jail: the write of each name the call changes, then the
// protected-moves rule (policy::decide_rename, decide_removal, decide_symlink), as the supervisor decides
// them.
WriteAnswer decide_change(const policy::Policy& policy, Change change, const std::filesystem::path& path,
                          const std::filesystem::path& to, policy::JailKind jail) {
    FileSystemFacts facts(policy, jail);
    const auto [dir, name] = entry_of(path);
    if (name == "." || name == "..") {
        // The kernel's answer before any rule: a directory's own "." is never renamed nor removed.
        policy::WriteDecision wd;
        wd.error = EBUSY;
        wd.rule = &policy::write_rule("protected-moves");
        return WriteAnswer{policy::explain_write(wd), wd.rule, {}};
    }
    policy::MoveDecision md;
    if (change == Change::Symlink) {
        if (auto refused = refused_entry(policy, dir, name, true, facts)) return *refused;
        md = policy::decide_symlink(policy, join(dir, name), facts);
    } else if (change == Change::Remove) {
        if (auto refused = refused_entry(policy, dir, name, false, facts)) return *refused;
        md = policy::decide_removal(policy, dir, name, facts);
    } else {
        const auto [to_dir, to_name] = entry_of(to);
        if (auto refused = refused_entry(policy, dir, name, false, facts)) return *refused;
        if (auto refused = refused_entry(policy, to_dir, to_name, !facts.has_entry(to_dir, to_name), facts))
            return *refused;
        md = policy::decide_rename(policy, dir, name, to_dir, to_name, false, facts);
    }
    policy::WriteDecision wd = md;
    WriteAnswer out{{}, md.rule, facts.assumed()};
    if (md.error == EXDEV) {
        wd.error = 0;
        out.assumed.push_back("the tree is too large to look through (" +
                              std::to_string(policy::kMaxMovedEntries) + " entries or " +
                              std::to_string(policy::kMaxMovedDepth) +
                              " levels): the jail answers EXDEV, and `mv` then copies it, each file decided");
    }
    out.decision = policy::explain_write(wd);
    return out;
}

policy::JailKind default_jail(const policy::Policy& policy) {
    const auto& jail = policy.filesystem().jail;
    return jail && jail->text == "landlock" ? policy::JailKind::Landlock : policy::JailKind::Namespaces;
}

}  // namespace

int cmd_check(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    policy::LoadOptions options;
    bool as_json = false;
    bool resolve = false;
    std::vector<std::string> dns_servers;
    std::optional<std::string> target, move_to;
    std::optional<policy::JailKind> jail;
    std::string ca_dir;
    bool only_positional = false;
    while (!args.done()) {
        if (!only_positional) {
            if (args.peek() == "--") {
                args.next();
                only_positional = true;
                continue;
            }
            if (args.peek() == "--help" || args.peek() == "-h") {
                std::cout << kCheckHelp << kPolicyFlagsHelp;
                return 0;
            }
            if (args.flag("--json")) {
                as_json = true;
                continue;
            }
            if (args.flag("--jail")) {
                const std::string kind = args.value();
                if (kind != "namespaces" && kind != "landlock")
                    throw UsageError("--jail takes namespaces or landlock, not '" + kind + "'");
                jail = kind == "landlock" ? policy::JailKind::Landlock : policy::JailKind::Namespaces;
                continue;
            }
            if (args.flag("--resolve")) {
                resolve = true;
                continue;
            }
            if (args.flag("--ca-dir")) {
                ca_dir = args.value();
                continue;
            }
            if (args.flag("--dns-server")) {
                std::string value = args.value();
                if (proxy::dns_server_to_csv(value).empty())
                    throw UsageError("--dns-server needs IP or IP:PORT ([v6]:PORT), got '" + value + "'");
                dns_servers.push_back(value);
                continue;
            }
            if (parse_policy_flag(args, options)) continue;
            if (args.peek().size() > 1 && args.peek()[0] == '-')
                throw UsageError("unknown flag " + args.peek());
        }
        if (target && target->rfind("move:", 0) == 0 && !move_to) {
            move_to = args.next();  // move:FROM TO
            continue;
        }
        if (target) throw UsageError("more than one TARGET ('" + *target + "' and '" + args.peek() + "')");
        target = args.next();
    }
    if (!target) throw UsageError("missing TARGET");
    if (target->rfind("move:", 0) == 0 && !move_to)
        throw UsageError("move:FROM needs the name it is moved to: cordon check move:FROM TO");
    // As `cordon run` decides: the CA's directory is never read nor written by the jailed command.
    options.private_dirs.push_back(ca_dir.empty() ? certs::default_ca_dir() : std::filesystem::path(ca_dir));
#ifdef CORDON_LINUX_JAIL
    // And no jailed command writes cordon's sessions (their registry, sockets and directories).
    options.session_dirs = run::session_state_directories({::getuid()});
#endif

    auto policy = load_policy_or_report(options);
    if (!policy) return 2;

    std::error_code ec;
    const std::filesystem::path cwd =
        options.cwd.empty() ? std::filesystem::current_path(ec) : std::filesystem::absolute(options.cwd, ec);
    policy::Decision decision;
    std::string shown;
    std::optional<Guarded> guarded;
    std::optional<WriteAnswer> written, other;  // write: the jail decided for, and the other one's answer
    std::shared_ptr<const policy::DomainReason>
        request_reason;  // an allowed host's, for what its rules refuse
    const bool unix_socket = target->rfind("unix:", 0) == 0;
    // A file-system change other than a write: move:FROM TO, remove:PATH, symlink:PATH.
    std::optional<Change> change;
    for (const auto& [prefix, kind] :
         {std::pair{"move:", Change::Move}, {"remove:", Change::Remove}, {"symlink:", Change::Symlink}})
        if (target->rfind(prefix, 0) == 0) change = kind;
    auto path_of = [&](const std::string& text) {
        if (text.empty()) throw UsageError("empty path in '" + *target + "'");
        std::filesystem::path path(text);
        if (text == "~" || text.rfind("~/", 0) == 0) {
            const char* home = std::getenv("HOME");
            path = std::filesystem::path(home != nullptr ? home : "/") / text.substr(text.size() > 1 ? 2 : 1);
        }
        if (path.is_relative()) path = cwd / path;
        return path.lexically_normal();
    };
    if (change) {
        if (resolve) throw UsageError("--resolve applies to network targets, not to '" + *target + "'");
        const std::string prefix = target->substr(0, target->find(':') + 1);
        const std::filesystem::path path = path_of(target->substr(prefix.size()));
        const std::filesystem::path to = move_to ? path_of(*move_to) : std::filesystem::path();
        shown = prefix + path.string() + (move_to ? " " + to.string() : std::string());
        const policy::JailKind kind = jail.value_or(default_jail(*policy));
        written = decide_change(*policy, *change, path, to, kind);
        decision = written->decision;
        other = decide_change(
            *policy, *change, path, to,
            kind == policy::JailKind::Landlock ? policy::JailKind::Namespaces : policy::JailKind::Landlock);
        if (other->decision.allowed() == decision.allowed() && other->rule == written->rule) other.reset();
    } else if (unix_socket || target->rfind("read:", 0) == 0 || target->rfind("write:", 0) == 0) {
        if (resolve) throw UsageError("--resolve applies to network targets, not to '" + *target + "'");
        const bool write = (*target)[0] == 'w';
        const std::filesystem::path path = path_of(target->substr(write ? 6 : 5));  // "read:", "unix:" alike
        if (unix_socket) {
            shown = "unix:" + path.string();
            decision = decide_unix_socket(*policy, path);
        } else {
            shown = (write ? "write:" : "read:") + path.string();
            if (write) {
                const policy::JailKind kind = jail.value_or(default_jail(*policy));
                written = decide_write_target(*policy, path, kind);
                decision = written->decision;
                other = decide_write_target(*policy, path,
                                            kind == policy::JailKind::Landlock ? policy::JailKind::Namespaces
                                                                               : policy::JailKind::Landlock);
                if (other->decision.allowed() == decision.allowed() && other->rule == written->rule)
                    other.reset();
            } else {
                decision = policy->decide_read(path);
            }
        }
    } else {
        auto parsed = policy::parse_target(*target);
        if (auto* why = std::get_if<std::string>(&parsed)) {
            std::cerr << "cordon check: bad target '" << *target << "': " << *why << "\n";
            return 2;
        }
        const auto& hp = std::get<policy::HostPort>(parsed);
        const bool v6 = hp.host.find(':') != std::string::npos;
        shown = (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
        decision = policy->decide_connect(hp.host, hp.port);
        // An allowed host with request rules: a request they refuse carries the host's deny reason (the
        // proxy's RequestRuling), so the reason it would show is part of what this host's policy says.
        if (decision.allowed() && proxy::has_request_rules(*policy->network().inspection, hp.host, hp.port))
            request_reason = policy->reason_for(hp.host, hp.port);
        if (resolve && decision.allowed()) {
            try {
                guarded = resolve_and_guard(*policy, hp, dns_servers);
            } catch (const std::exception& e) {
                std::cerr << "cordon check: " << e.what() << "\n";
                return 2;
            }
        }
    }

    // With --resolve, an allowed name is refused when it does not resolve or every answer is refused by the
    // address guard (the proxy then answers 502 / 403 blocked-by-address-guard).
    const bool allowed = decision.allowed() && (!guarded || guarded->allowed());
    std::string reason(policy::to_string(decision.reason));
    if (guarded && !guarded->error.empty()) reason = guarded->error;
    if (guarded && guarded->error.empty() && !guarded->allowed()) reason = "blocked-by-address-guard";
    if (as_json) {
        nlohmann::json out = decision.to_json();
        out["target"] = shown;
        if (guarded) {
            out["decision"] = allowed ? "allow" : "deny";
            out["reason"] = reason;
            nlohmann::json addresses = nlohmann::json::array();
            for (const auto& [ip, refused] : guarded->addresses)
                addresses.push_back(
                    {{"address", ip},
                     {"guard", refused.empty() ? nlohmann::json(nullptr) : nlohmann::json(refused)}});
            out["addresses"] = addresses;
        }
        if (request_reason) {
            policy::Decision shown_reason;  // its JSON form, as reason_text's
            shown_reason.reason_text = request_reason;
            const auto j = shown_reason.to_json();
            out["request_reason_text"] = j["reason_text"];
            out["request_reason_source"] = j["reason_source"];
        }
        if (written) {
            out["writeRule"] = written->rule->name;
            out["jail"] = to_string(jail.value_or(default_jail(*policy)));
            out["assumed"] = written->assumed;
            if (other)
                out["otherJail"] = {
                    {"jail", to_string(jail.value_or(default_jail(*policy)) == policy::JailKind::Landlock
                                           ? policy::JailKind::Namespaces
                                           : policy::JailKind::Landlock)},
                    {"decision", other->decision.allowed() ? "allow" : "deny"},
                    {"writeRule", other->rule->name}};
        }
        std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
    } else {
        std::cout << (allowed ? "allow" : "deny") << "\n"
                  << "target: " << shown << "\n"
                  << "reason: " << reason << "\n";
        if (decision.rule) {
            std::cout << "rule: " << decision.rule->text << "\n"
                      << "source: " << policy::format_source(decision.rule->source) << "\n";
        } else {
            std::cout << "rule: (none)\n";
        }
        if (decision.reason_text)
            std::cout << "reason_text: " << decision.reason_text->text << "\n"
                      << "reason_source: " << policy::format_source(decision.reason_text->source) << "\n";
        if (request_reason)
            std::cout << "request_reason_text: " << request_reason->text
                      << " (shown with a request this host's request rules refuse)\n"
                      << "request_reason_source: " << policy::format_source(request_reason->source) << "\n";
        if (written) {
            const policy::JailKind kind = jail.value_or(default_jail(*policy));
            std::cout << "write rule: " << written->rule->name << " ("
                      << (written->rule->landlock_only ? "the jail without namespaces, --jail landlock"
                                                       : "every jail")
                      << "); decided for the jail: " << to_string(kind) << "\n";
            std::cout << "decides: " << written->rule->decides << "\n";
            for (const std::string& a : written->assumed)
                std::cout << "assumed: " << a << "\n";
            if (other)
                std::cout << (kind == policy::JailKind::Landlock
                                  ? "in the namespace jail"
                                  : "in the jail without namespaces (--jail landlock)")
                          << ": " << (other->decision.allowed() ? "allow" : "deny") << " by the write rule "
                          << other->rule->name << "\n";
        }
        if (guarded) {
            for (const auto& [ip, refused] : guarded->addresses)
                std::cout << "address: " << ip
                          << (refused.empty() ? std::string(" (passes the address guard)")
                                              : " (refused by the address guard: " + refused +
                                                    "; allow it with --allow-address)")
                          << "\n";
        }
    }
    return allowed ? 0 : 1;
}

}  // namespace cordon::cli
