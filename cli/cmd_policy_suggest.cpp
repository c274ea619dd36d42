// `cordon policy suggest --from AUDIT.jsonl [--format claude|srt]`: the smallest settings snippet that would
// have allowed what an audit log shows refused. Connections are suggested by host (and port, when not
// 80/443), grouped by registrable domain with the Public Suffix List (libpsl, Debian's `publicsuffix` data):
// three or more names below one registrable domain become `*.DOMAIN`, never a wildcard over a public suffix.
// Writes
// (`event: "write"`, run/write_refusals.hpp) outside every writable area are suggested by path. Refusals a
// settings entry cannot lift (a deny rule, the address guard, a protected path) are listed apart; so is every
// line that is not a whole JSON object.
#include <libpsl.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "certs/certs.hpp"
#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "policy/policy.hpp"
#include "policy/syntax.hpp"

namespace cordon::cli {
namespace {

constexpr const char* kSuggestHelp =
    "usage: cordon policy suggest --from AUDIT.jsonl [--format claude|srt]\n"
    "\n"
    "Reads an audit log (`--audit-log` of `cordon run` or `cordon proxy`) and prints on stdout the smallest\n"
    "settings that would have allowed what it shows refused: sandbox.network.allowedDomains (claude, the\n"
    "default) or network.allowedDomains (srt), and allowWrite for writes outside the writable areas\n"
    "(sandbox.filesystem.allowWrite as `//PATH`, srt: filesystem.allowWrite; a path that does not exist now\n"
    "as the nearest directory above it that does, since allowWrite makes writable what exists at start).\n"
    "Names are grouped by\n"
    "registrable domain (Public Suffix List): three or more below one become `*.DOMAIN`, never a wildcard\n"
    "over a public suffix; a port other than 80 and 443 is kept (`host:port`). On stderr: the counts, the\n"
    "refusals no settings entry here would lift (deny rules, the address guard, protected paths: `never\n"
    "allowed`) and every\n"
    "malformed or truncated line, by line number (skipped).\n"
    "Exit status: 0, 1 when the log cannot be read, 2 on a usage error.\n"
    "\n"
    "  --from FILE            the audit log (JSON lines)\n"
    "  --format claude|srt    the settings' shape (default claude: Claude Code's sandbox section)\n"
    "  -h, --help             print this help\n";

// Three or more names below one registrable domain are suggested as `*.DOMAIN`.
constexpr std::size_t kWildcardFrom = 3;

struct PslFree {
    void operator()(psl_ctx_t* psl) const { psl_free(psl); }
};

// Debian's `publicsuffix` data when installed (updated with the package), else libpsl's built-in list.
std::unique_ptr<psl_ctx_t, PslFree> load_psl() {
    for (const char* file : {"/usr/share/publicsuffix/public_suffix_list.dafsa",
                             "/usr/share/publicsuffix/public_suffix_list.dat"})
        if (psl_ctx_t* psl = psl_load_file(file)) return std::unique_ptr<psl_ctx_t, PslFree>(psl);
    return std::unique_ptr<psl_ctx_t, PslFree>(const_cast<psl_ctx_t*>(psl_builtin()), PslFree{});
}

bool is_ip_literal(const std::string& host) {
    return host.find(':') != std::string::npos || host.find_first_not_of("0123456789.") == std::string::npos;
}

// One refused target: how often, and over which ports.
struct Target {
    std::size_t count = 0;
    std::set<int> ports;
};

struct Apart {
    std::size_t count = 0;
    std::string why;
};

namespace fs = std::filesystem;

std::vector<std::string> components(const fs::path& path) {
    std::vector<std::string> out;
    for (const auto& part : path)
        if (part != "/" && !part.empty()) out.push_back(part.string());
    return out;
}

// True when `name`'s components (a protected name: `.git/hooks`) appear in `parts` from `from` on.
bool holds_name_at(const std::vector<std::string>& parts, std::size_t from, const std::string& name) {
    const std::vector<std::string> want = components(fs::path(name));
    if (want.empty() || from + want.size() > parts.size()) return false;
    return std::equal(want.begin(), want.end(), parts.begin() + static_cast<std::ptrdiff_t>(from));
}

bool within(const fs::path& path, const fs::path& dir) {
    const std::string p = path.string(), d = dir.string();
    return p.compare(0, d.size(), d) == 0 && (p.size() == d.size() || d == "/" || p[d.size()] == '/');
}

// A directory git would take for a repository (HEAD, objects, refs), as the write rule git-dirs-by-content.
bool git_dir_shape(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "HEAD", ec) && fs::is_directory(dir / "objects", ec) &&
           fs::is_directory(dir / "refs", ec);
}

// Why a write to `path` (absolute, normal) is never suggested, whatever the log line says of it (a line the
// jailed command could not forge is not needed: the suggestion is checked here against what no setting
// should open): a protected name (at any depth, a home's names in a home), a git directory (`.git`, or one
// by shape), cordon's CA, the audit log being read. Empty: it may be suggested.
std::string never_suggested(const fs::path& path, const fs::path& home, const fs::path& ca,
                            const fs::path& audit_log) {
    const std::vector<std::string> parts = components(path);
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i] == ".git") return "a git directory";
        for (const std::string& name : policy::always_read_only_names())
            if (holds_name_at(parts, i, name)) return "a protected name (" + name + ")";
    }
    // A home's names: in $HOME, /root and /home/*.
    std::vector<std::size_t> homes;
    if (!home.empty() && home != "/" && within(path, home)) homes.push_back(components(home).size());
    if (!parts.empty() && parts[0] == "root") homes.push_back(1);
    if (parts.size() > 1 && parts[0] == "home") homes.push_back(2);
    for (std::size_t at : homes)
        for (const std::string& name : policy::home_read_only_names())
            if (holds_name_at(parts, at, name)) return "a protected name in a home (~/" + name + ")";
    if (!ca.empty() && within(path, ca)) return "cordon's CA (" + ca.string() + ")";
    if (!audit_log.empty() && path == audit_log) return "the audit log";
    for (fs::path dir = path; dir.has_relative_path(); dir = dir.parent_path())
        if (git_dir_shape(dir)) return "a git directory (" + dir.string() + ")";
    return "";
}

// Why the directory `dir` (absolute, normal, existing) is not to be suggested as a whole: `/`, a system
// directory, or a home directory or an ancestor of one (what cordon does not make writable by default even as
// the working directory). Empty: it may be. Why /home/NAME as well as $HOME: whoever reads the log is not
// always whose run it was (sudo sets HOME=/root), and a fresh home's first refusal (npm's ~/.npm) would
// otherwise be suggested as the whole home.
std::string never_suggested_root(const fs::path& dir, const fs::path& home) {
    if (std::string why = policy::working_directory_refusal(dir, home.empty() ? fs::path("/") : home);
        !why.empty())
        return why;
    const std::vector<std::string> parts = components(dir);
    if (parts.size() == 2 && parts[0] == "home") return dir.string() + " is a home directory";
    return "";
}

}  // namespace

int cmd_policy_suggest(int argc, char** argv) {
    ArgCursor args(argc, argv, 0);
    std::string from, format = "claude";
    while (!args.done()) {
        if (args.peek() == "--help" || args.peek() == "-h") {
            std::cout << kSuggestHelp;
            return 0;
        }
        if (args.flag("--from")) {
            from = args.value();
        } else if (args.flag("--format")) {
            format = args.value();
            if (format != "claude" && format != "srt")
                throw UsageError("--format is claude or srt, not '" + format + "'");
        } else {
            throw UsageError("unexpected argument " + args.peek());
        }
    }
    if (from.empty()) throw UsageError("--from AUDIT.jsonl is required");
    std::ifstream in(from, std::ios::binary);
    if (!in) {
        std::cerr << "cordon policy suggest: cannot read " << from << "\n";
        return 1;
    }

    // What no suggestion opens, whatever a line says (see never_suggested).
    std::error_code path_ec;
    const char* home_env = std::getenv("HOME");
    const fs::path home = home_env && *home_env ? fs::path(home_env).lexically_normal() : fs::path();
    fs::path ca = certs::default_ca_dir();
    ca = fs::weakly_canonical(ca, path_ec);
    if (path_ec) ca = certs::default_ca_dir().lexically_normal();
    fs::path audit_log = fs::weakly_canonical(fs::absolute(from, path_ec), path_ec);
    if (path_ec) audit_log.clear();
    std::map<std::string, Target> hosts;  // refused as unknown: to allow
    std::map<std::string, std::size_t> writes;
    std::map<std::string, Apart> apart;  // "host:port" or a path: what no entry here lifts
    std::size_t lines = 0, malformed = 0, refusals = 0;
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        ++lines;
        if (line.empty()) continue;
        nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string()) {
            ++malformed;
            std::cerr << "cordon policy suggest: " << from << ":" << number << ": "
                      << (in.eof() ? "truncated" : "malformed") << " line skipped (not a JSON audit event)\n";
            continue;
        }
        const std::string event = j["event"];
        auto text = [&](const char* key) {
            auto it = j.find(key);
            return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
        };
        if (text("decision") != "deny") continue;
        const std::string reason = text("reason");
        if (event == "write") {
            const std::string path = text("path");
            if (path.empty() || path[0] != '/') {
                ++malformed;
                std::cerr << "cordon policy suggest: " << from << ":" << number
                          << ": a write event without an absolute path, skipped\n";
                continue;
            }
            ++refusals;
            // allowWrite lifts a path outside every writable area (write rule path-rules, or default-tmp:
            // the host's /tmp without namespaces); nothing here lifts a deny rule or a protected path.
            const std::string write_rule = text("write_rule");
            const bool liftable =
                reason == "default-deny" &&
                (write_rule.empty() || write_rule == "path-rules" || write_rule == "default-tmp");
            if (liftable) {
                const fs::path normal = fs::path(path).lexically_normal();
                if (std::string why = never_suggested(normal, home, ca, audit_log); !why.empty()) {
                    auto& a = apart[normal.string()];
                    ++a.count;
                    a.why = "never allowed: " + why;
                    continue;
                }
                ++writes[normal.string()];
                continue;
            }
            auto& a = apart[path];
            ++a.count;
            const std::string rule = text("rule"), source = text("source");
            if (reason == "blocked-by-denylist")
                a.why = "a deny rule: `" + rule + "`" + (source.empty() ? "" : " from " + source) +
                        "; remove it to write here";
            else
                a.why = "never allowed: " + reason + (rule.empty() ? "" : " by `" + rule + "`") +
                        (write_rule.empty() || rule == "write rule " + write_rule
                             ? ""
                             : " (write rule " + write_rule + ")");
            continue;
        }
        if (event != "decision" && event != "dns") continue;
        const std::string host = text("host");
        auto port = j.find("port");
        if (host.empty() || port == j.end() || !port->is_number_integer() || port->get<int>() < 0 ||
            port->get<int>() > 65535) {
            ++malformed;
            std::cerr << "cordon policy suggest: " << from << ":" << number
                      << ": a refusal without host or port, skipped\n";
            continue;
        }
        ++refusals;
        const int p = port->get<int>();
        if (reason == "blocked-by-allowlist") {
            auto& t = hosts[host];
            ++t.count;
            if (event == "decision") t.ports.insert(p);  // a DNS lookup names no port
        } else {
            auto& a = apart[(host.find(':') != std::string::npos ? "[" + host + "]" : host) +
                            (event == "dns" ? " (DNS)" : ":" + std::to_string(p))];
            ++a.count;
            if (reason == "blocked-by-denylist")
                a.why = "a deny rule: `" + text("rule") + "`" +
                        (text("source").empty() ? "" : " from " + text("source"));
            else if (reason == "blocked-by-address-guard")
                a.why = "the address guard: " + text("upstream_ip") + " (" + text("error") +
                        "); only --allow-address / allowedAddresses lifts it";
            else
                a.why = reason;
        }
    }

    // Group by registrable domain.
    auto psl = load_psl();
    std::map<std::string, std::vector<std::string>> groups;  // registrable domain (or the host) -> hosts
    for (const auto& [host, target] : hosts) {
        const char* registrable =
            is_ip_literal(host) ? nullptr : psl_registrable_domain(psl.get(), host.c_str());
        groups[registrable ? std::string(registrable) : host].push_back(host);
    }
    nlohmann::json allowed = nlohmann::json::array();
    std::string report;
    for (const auto& [domain, names] : groups) {
        std::size_t count = 0, below = 0;
        for (const auto& name : names) {
            count += hosts[name].count;
            below += name != domain ? 1 : 0;
        }
        report += "  " + domain + "  x" + std::to_string(count) + ":";
        for (const auto& name : names)
            report += " " + name;
        report += "\n";
        // A wildcard only below a registrable domain (never a public suffix), and only over plain ports.
        bool plain = true;
        for (const auto& name : names)
            for (int p : hosts[name].ports)
                plain = plain && (p == 80 || p == 443);
        const bool wildcard = below >= kWildcardFrom && plain && !is_ip_literal(domain) &&
                              !psl_is_public_suffix(psl.get(), domain.c_str());
        if (wildcard) {
            if (hosts.count(domain)) allowed.push_back(domain);
            allowed.push_back("*." + domain);
            continue;
        }
        for (const auto& name : names) {
            const std::string shown = name.find(':') != std::string::npos ? "[" + name + "]" : name;
            const auto& ports = hosts[name].ports;
            bool only_plain = true;
            for (int p : ports)
                only_plain = only_plain && (p == 80 || p == 443);
            if (only_plain) {
                allowed.push_back(shown);
                continue;
            }
            for (int p : ports)
                allowed.push_back(shown + ":" + std::to_string(p));
        }
    }
    nlohmann::json network = {{"allowedDomains", allowed}};
    // allowWrite makes writable what exists when the run starts (the jail binds it, or grants it to
    // Landlock; jail/mount_plan.cpp): a refused creation (a new file, a new directory) is suggested as the
    // nearest directory above it that exists now. A path below another suggested one adds nothing.
    std::set<std::string> roots;
    std::string made;  // the creations suggested by their directory, for stderr
    for (const auto& [path, count] : writes) {
        std::filesystem::path at(path);
        std::error_code ec;
        while (at.has_relative_path() && !std::filesystem::exists(std::filesystem::symlink_status(at, ec)))
            at = at.parent_path();
        // Never `/`, a system directory or a home directory (never_suggested_root): a creation there is
        // listed apart.
        if (std::string why = never_suggested_root(at, home); !why.empty()) {
            auto& a = apart[path];
            a.count += count;
            a.why = "never suggested: " +
                    (at.string() == path ? std::string() : "its nearest existing directory ") + at.string() +
                    " is not to be made writable (" + why +
                    "); create the directory it needs first, or allow a narrower path by hand";
            continue;
        }
        roots.insert(at.string());
        if (at.string() != path)
            made += "  write " + policy::printable(path) + ": does not exist, suggested as " +
                    policy::printable(at.string()) + "\n";
    }
    nlohmann::json filesystem = {{"allowWrite", nlohmann::json::array()}};
    std::vector<std::string> kept;
    for (const std::string& root : roots) {
        const bool below = std::any_of(kept.begin(), kept.end(), [&](const std::string& dir) {
            return root.compare(0, dir.size(), dir) == 0 && (dir == "/" || root[dir.size()] == '/');
        });
        if (below) continue;
        // Claude Code's files read `/path` relative to the file's own directory: an absolute path is
        // `//path`.
        filesystem["allowWrite"].push_back(format == "claude" ? "/" + root : root);
        kept.push_back(root);
    }
    nlohmann::json out = nlohmann::json::object();
    nlohmann::json& section = format == "claude" ? out["sandbox"] : out;
    section["network"] = network;
    if (!writes.empty()) section["filesystem"] = filesystem;
    std::cout << out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";

    std::cerr << "cordon policy suggest: " << lines << " line(s), " << refusals << " refusal(s)";
    if (malformed > 0) std::cerr << ", " << malformed << " line(s) skipped";
    std::cerr << "\n";
    if (!report.empty()) std::cerr << "allowed by the suggestion, by registrable domain:\n" << report;
    for (const auto& [path, count] : writes)
        if (!apart.count(path)) std::cerr << "  write " << policy::printable(path) << "  x" << count << "\n";
    std::cerr << made;
    if (!apart.empty()) {
        std::cerr << "not lifted by the suggestion:\n";
        for (const auto& [what, a] : apart)
            std::cerr << "  " << policy::printable(what) << "  x" << a.count << "  "
                      << policy::printable(a.why) << "\n";
    }
    return 0;
}

}  // namespace cordon::cli
