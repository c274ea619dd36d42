// Policy -> Seatbelt profile (see profile.hpp). Seatbelt reads a profile top to bottom and the last rule that
// matches an operation decides it; a rule naming an operation exactly (`file-write-unlink`) beats one naming
// it through a wildcard (`file-write*`), whatever the order. Every section below is written with that in
// mind, and README.md says how each grant compares with srt's profile.
#include "seatbelt/profile.hpp"

#include <filesystem>
#include <optional>
#include <set>
#include <string_view>

#include "policy/path_components.hpp"

namespace cordon::seatbelt {
namespace {

namespace fs = std::filesystem;
using policy::PathRule;

// sandbox-exec refuses a string literal longer than 1025 bytes ("Error reading string") and with it the whole
// profile; srt keeps its regexes under 900 bytes, and so does cordon.
constexpr std::size_t kMaxString = 900;

// What programs need to start and run at all, as srt's profile lists it (sandbox-runtime 0.0.83,
// macos-sandbox-utils.ts): process basics, the Mach services, sysctls, IOKit classes and devices of Chrome's
// sandbox policy. Nothing here reads or writes a file or reaches the network.
constexpr const char* kBasics = R"((allow process-exec)
(allow process-fork)
(allow process-info* (target same-sandbox))
(allow signal (target same-sandbox))
(allow mach-priv-task-port (target same-sandbox))
(allow user-preference-read)
(allow mach-lookup
  (global-name "com.apple.audio.systemsoundserver")
  (global-name "com.apple.distributed_notifications@Uv3")
  (global-name "com.apple.FontObjectsServer")
  (global-name "com.apple.fonts")
  (global-name "com.apple.logd")
  (global-name "com.apple.lsd.mapdb")
  (global-name "com.apple.PowerManagement.control")
  (global-name "com.apple.system.logger")
  (global-name "com.apple.system.notification_center")
  (global-name "com.apple.system.opendirectoryd.libinfo")
  (global-name "com.apple.system.opendirectoryd.membership")
  (global-name "com.apple.bsd.dirhelper")
  (global-name "com.apple.securityd.xpc")
  (global-name "com.apple.coreservices.launchservicesd")
  (global-name "com.apple.SecurityServer"))
(allow ipc-posix-shm)
(allow ipc-posix-sem)
(allow iokit-open
  (iokit-registry-entry-class "IOSurfaceRootUserClient")
  (iokit-registry-entry-class "RootDomainUserClient")
  (iokit-user-client-class "IOSurfaceSendRight"))
(allow iokit-get-properties)
(allow system-socket (require-all (socket-domain AF_SYSTEM) (socket-protocol 2)))
(allow sysctl-read
  (sysctl-name "hw.activecpu")
  (sysctl-name "hw.busfrequency_compat")
  (sysctl-name "hw.byteorder")
  (sysctl-name "hw.cacheconfig")
  (sysctl-name "hw.cachelinesize_compat")
  (sysctl-name "hw.cpufamily")
  (sysctl-name "hw.cpufrequency")
  (sysctl-name "hw.cpufrequency_compat")
  (sysctl-name "hw.cputype")
  (sysctl-name "hw.l1dcachesize_compat")
  (sysctl-name "hw.l1icachesize_compat")
  (sysctl-name "hw.l2cachesize_compat")
  (sysctl-name "hw.l3cachesize_compat")
  (sysctl-name "hw.logicalcpu")
  (sysctl-name "hw.logicalcpu_max")
  (sysctl-name "hw.machine")
  (sysctl-name "hw.memsize")
  (sysctl-name "hw.ncpu")
  (sysctl-name "hw.nperflevels")
  (sysctl-name "hw.packages")
  (sysctl-name "hw.pagesize_compat")
  (sysctl-name "hw.pagesize")
  (sysctl-name "hw.physicalcpu")
  (sysctl-name "hw.physicalcpu_max")
  (sysctl-name "hw.tbfrequency_compat")
  (sysctl-name "hw.vectorunit")
  (sysctl-name "kern.argmax")
  (sysctl-name "kern.bootargs")
  (sysctl-name "kern.hostname")
  (sysctl-name "kern.maxfiles")
  (sysctl-name "kern.maxfilesperproc")
  (sysctl-name "kern.maxproc")
  (sysctl-name "kern.ngroups")
  (sysctl-name "kern.osproductversion")
  (sysctl-name "kern.osrelease")
  (sysctl-name "kern.ostype")
  (sysctl-name "kern.osvariant_status")
  (sysctl-name "kern.osversion")
  (sysctl-name "kern.secure_kernel")
  (sysctl-name "kern.tcsm_available")
  (sysctl-name "kern.tcsm_enable")
  (sysctl-name "kern.usrstack64")
  (sysctl-name "kern.version")
  (sysctl-name "kern.willshutdown")
  (sysctl-name "machdep.cpu.brand_string")
  (sysctl-name "machdep.ptrauth_enabled")
  (sysctl-name "security.mac.lockdown_mode_state")
  (sysctl-name "sysctl.proc_cputype")
  (sysctl-name "vm.loadavg")
  (sysctl-name-prefix "hw.optional.arm")
  (sysctl-name-prefix "hw.optional.arm.")
  (sysctl-name-prefix "hw.optional.armv8_")
  (sysctl-name-prefix "hw.perflevel")
  (sysctl-name-prefix "kern.proc.all")
  (sysctl-name-prefix "kern.proc.pgrp.")
  (sysctl-name-prefix "kern.proc.pid.")
  (sysctl-name-prefix "machdep.cpu.")
  (sysctl-name-prefix "net.routetable."))
(allow sysctl-write (sysctl-name "kern.tcsm_enable"))
(allow distributed-notification-post)
(allow file-ioctl
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/random")
  (literal "/dev/urandom")
  (literal "/dev/dtracehelper")
  (literal "/dev/tty"))
(allow file-ioctl file-read-data file-write-data
  (require-all (literal "/dev/null") (vnode-type CHARACTER-DEVICE)))
; The command shares the caller's terminal (as in the Linux jail).
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/ptmx") (regex "^/dev/ttys"))
(allow file-read* file-write* (literal "/dev/ptmx") (regex "^/dev/ttys"))
)";

// Devices every program writes to (srt's own write paths, its /tmp/claude aside).
constexpr const char* kWritableDevices[] = {"/dev/stdout", "/dev/stderr",       "/dev/null",
                                            "/dev/tty",    "/dev/dtracehelper", "/dev/autofs_nowait"};

// With the project read scope: what macOS itself needs to load and run a program, beside the system paths
// of policy::read_scope_system_paths() (written in their canonical spelling too: /etc is /private/etc).
constexpr const char* kMacSystemPaths[] = {"/System", "/Library", "/private/var/db/dyld",
                                           "/private/var/select"};

bool has_glob(std::string_view text) {
    return text.find_first_of("*?[") != std::string_view::npos;
}

std::string normal_path(const fs::path& path) {
    std::string s = path.lexically_normal().string();
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

std::string quote(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
        if (c == '"' || c == '\\') out += '\\';
        out += c;
    }
    return out + "\"";
}

// The bytes `text` takes inside a string literal (quote() escapes `"` and `\`): what Seatbelt's limit counts.
std::size_t escaped_size(std::string_view text) {
    std::size_t n = text.size();
    for (char c : text)
        if (c == '"' || c == '\\') ++n;
    return n;
}

bool has_control(std::string_view text) {
    for (char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return true;
    return false;
}

// A literal character in a regex. A control character (which no string literal here may hold) is matched by
// `.`: wider, so only where a wider match is safe (`wide`).
std::string regex_char(char c) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return ".";
    if (std::string_view(".[]()*+?^$|\\{}").find(c) != std::string_view::npos) return std::string("\\") + c;
    return std::string(1, c);
}

bool is_ascii_letter(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

char other_case(char c) {
    if (c >= 'a' && c <= 'z') return static_cast<char>(c - 'a' + 'A');
    if (c >= 'A' && c <= 'Z') return static_cast<char>(c - 'A' + 'a');
    return c;
}

// An ASCII letter in either case, and the two other characters Unicode case folding (which APFS applies)
// takes to an ASCII letter: the long s `ſ` (U+017F) is `s`, the Kelvin sign `K` (U+212A) is `k`; `.ſsh` is
// `.ssh` there. An alternation, not a set: Seatbelt's regexes match bytes, and these are several.
std::string letter_regex(char c) {
    const char lower = c >= 'a' ? c : other_case(c);
    const std::string set = std::string("[") + lower + other_case(lower) + "]";
    if (lower == 's') return "(" + set + "|\xC5\xBF)";
    if (lower == 'k') return "(" + set + "|\xE2\x84\xAA)";
    return set;
}

// Literal text as a regex. `fold` (for denies, which may match more but never less): the spellings macOS
// file systems take for the same name match too. They ignore letter case (`.AWS` is `.aws`), and APFS ignores
// Unicode normalisation (`é` composed is `e` and a combining accent decomposed), so each letter matches
// either case and each run of non-ASCII characters, with the ASCII letter before it (the base of a decomposed
// character), matches any characters of one component.
std::string literal_regex(std::string_view text, bool fold) {
    std::string out;
    std::size_t letter_at = std::string::npos;  // where the last token began, if it was a letter
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (fold && static_cast<unsigned char>(c) >= 0x80) {
            if (letter_at != std::string::npos) out.resize(letter_at);
            while (i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80)
                ++i;
            out += "[^/]*";
            letter_at = std::string::npos;
        } else if (fold && is_ascii_letter(c)) {
            letter_at = out.size();
            out += letter_regex(c);
        } else {
            letter_at = std::string::npos;
            out += regex_char(c);
        }
    }
    return out;
}

// A bracket set of a glob (its text between `[` and `]`, `!` or `^` first to negate) as a regex set. A set
// matches one character of a name, never `/`: a negated set says so, and a range across `/` is cut in two
// (an allowWrite of `~/cache/a[!x]b` must not reach `~/cache/a/b`). `fold`: a set that is not negated
// matches either case of its letters too.
std::string glob_set_regex(std::string_view set, bool fold) {
    const bool negated = !set.empty() && (set[0] == '!' || set[0] == '^');
    if (negated) set.remove_prefix(1);
    std::string chars;
    for (char s : set)
        if (s != '\\' && s != '/') chars += s;
    std::string items;
    for (std::size_t i = 0; i < chars.size(); ++i) {
        if (i + 2 < chars.size() && chars[i + 1] == '-') {
            const char lo = chars[i], hi = chars[i + 2];
            i += 2;
            if (lo < '/' && hi > '/') {
                items += std::string(1, lo) + "-.0-" + hi;
                continue;
            }
            items += std::string(1, lo) + "-" + hi;
            if (fold && !negated && is_ascii_letter(lo) && is_ascii_letter(hi) && (lo >= 'a') == (hi >= 'a'))
                items += std::string(1, other_case(lo)) + "-" + other_case(hi);
            continue;
        }
        items += chars[i];
        if (fold && !negated && is_ascii_letter(chars[i])) items += other_case(chars[i]);
    }
    // A `]` is a member only first in a set.
    if (items.find(']') != std::string::npos) {
        items.erase(items.find(']'), 1);
        items.insert(items.begin(), ']');
    }
    return negated ? "[^" + items + "/]" : "[" + items + "]";
}

// One component of a glob (fnmatch without flags, as policy/path_rules.cpp matches it) as a regex.
std::string glob_component_regex(std::string_view c, bool fold) {
    std::string out, pending;
    auto flush = [&]() {
        out += literal_regex(pending, fold);
        pending.clear();
    };
    for (std::size_t i = 0; i < c.size(); ++i) {
        if (c[i] == '*') {
            flush();
            out += "[^/]*";
        } else if (c[i] == '?') {
            flush();
            out += "[^/]";
        } else if (c[i] == '\\' && i + 1 < c.size()) {
            pending += c[++i];
        } else if (c[i] == '[') {
            std::size_t j = i + 1;
            if (j < c.size() && (c[j] == '!' || c[j] == '^')) ++j;
            if (j < c.size() && c[j] == ']') ++j;
            while (j < c.size() && c[j] != ']')
                ++j;
            if (j >= c.size()) {
                pending += '[';
                continue;
            }
            flush();
            out += glob_set_regex(c.substr(i + 1, j - i - 1), fold);
            i = j;
        } else {
            pending += c[i];
        }
    }
    flush();
    return out;
}

// A glob over a whole path as a regex body (no anchors): `**` any number of components (none too).
std::string glob_regex(std::string_view pattern, bool fold) {
    std::string out;
    for (const std::string& c : policy::path_components::split_non_empty(pattern))
        out += c == "**" ? std::string("(/[^/]+)*") : "/" + glob_component_regex(c, fold);
    return out;
}

// A protected name's components as a regex body matching either case of each letter: macOS file systems are
// case-insensitive by default, and `.GIT/hooks` is `.git/hooks` there. `*` is one component.
std::string name_regex(std::string_view name) {
    std::string out;
    for (const std::string& c : policy::path_components::split_non_empty(name)) {
        if (!out.empty()) out += "/";
        if (c == "*") {
            out += "[^/]+";
            continue;
        }
        for (char ch : c)
            out += is_ascii_letter(ch) ? letter_regex(ch) : regex_char(ch);
    }
    return out;
}

// The directories above `path` (absolute, normal), nearest first, `/` excluded.
std::vector<std::string> ancestors(const std::string& path) {
    std::vector<std::string> out;
    for (fs::path p = fs::path(path).parent_path(); p.string() != "/" && !p.empty(); p = p.parent_path())
        out.push_back(p.string());
    return out;
}

// The part of a glob before its first wildcard component: the directory it stays in.
std::string glob_base(const std::string& pattern) {
    std::string base;
    for (const std::string& c : policy::path_components::split_non_empty(pattern)) {
        if (has_glob(c)) break;
        base += "/" + c;
    }
    return base.empty() ? "/" : base;
}

struct Spelling {
    std::string path;
    bool glob = false;
};

class Builder {
  public:
    Builder(const policy::Policy& policy, const ProfileOptions& options)
        : policy_(policy), options_(options) {}

    Profile build() {
        line("(version 1)");
        line("(deny default)");
        line("");
        line("; Process basics");
        text_ += kBasics;
        network();
        reads();
        writes();
        return Profile{std::move(text_), std::move(warnings_)};
    }

  private:
    void line(const std::string& text) { text_ += text + "\n"; }

    // `(action operations filters...)`, nothing when there is no filter (a rule without one matches all).
    void rule(const std::string& action, const std::string& operations,
              const std::vector<std::string>& filters) {
        if (filters.empty()) return;
        std::string out = "(" + action + " " + operations;
        std::set<std::string> seen;
        for (const std::string& f : filters)
            if (seen.insert(f).second) out += "\n  " + f;
        line(out + ")");
    }

    std::string canonical(const std::string& path) const {
        return options_.canonical ? options_.canonical(path) : path;
    }

    // A path rule as written and, where it differs, in the kernel's spelling. Of a glob, the directory it
    // starts from is resolved.
    std::vector<Spelling> spellings(const std::string& path, bool glob) const {
        std::vector<Spelling> out{{path, glob}};
        const std::string base = glob ? glob_base(path) : path;
        const std::string resolved = canonical(base);
        if (resolved != base && resolved != "/" && !resolved.empty())
            out.push_back({resolved + path.substr(base == "/" ? 0 : base.size()), glob});
        return out;
    }

    // Whether a symlink on the way to `path` lies inside a writable root (its resolved spelling), where the
    // command could have planted it.
    bool planted_link(const std::string& path) const {
        std::vector<std::string> writable;
        for (const PathRule& root : policy_.filesystem().allow_write)
            if (!root.glob) writable.push_back(canonical(local_path(root)));
        auto inside = [&](const std::string& dir) {
            for (const std::string& root : writable)
                if (dir == root || dir.starts_with(root == "/" ? root : root + "/")) return true;
            return false;
        };
        std::string at = "/";  // resolved so far
        for (const std::string& c : policy::path_components::split_non_empty(path)) {
            const std::string next = (at == "/" ? "" : at) + "/" + c;
            const std::string resolved = canonical(next);
            if (resolved != next && inside(at)) return true;
            at = resolved;
        }
        return false;
    }

    // A regex filter from a body; split when too long: a deny into a wider require-all of anchored pieces,
    // an allow not at all (nullopt).
    std::optional<std::string> regex_filter(const std::string& anchored, bool wide, const std::string& what) {
        if (escaped_size(anchored) <= kMaxString) return "(regex " + quote(anchored) + ")";
        if (!wide) {
            warnings_.push_back(what + ": longer than a Seatbelt string holds; not granted");
            return std::nullopt;
        }
        // Every piece is a regex that the full match also matches: the start anchored, the end anchored, the
        // middle anywhere. Cut only between whole characters of the regex (never inside `\.` or `[xX]`).
        std::vector<std::string> pieces;
        std::string piece;
        for (std::size_t i = 0; i < anchored.size();) {
            std::size_t len = 1;
            if (anchored[i] == '\\') {
                len = 2;
            } else if (anchored[i] == '[') {
                // A set's first `]` (after `^`) is a member, not its end; a quantifier stays with its set.
                std::size_t end = i + 1;
                if (end < anchored.size() && anchored[end] == '^') ++end;
                len = anchored.find(']', end + 1) - i + 1;
                if (i + len < anchored.size() && (anchored[i + len] == '*' || anchored[i + len] == '?'))
                    ++len;
            } else if (anchored[i] == '(') {
                // To the matching `)`: groups nest (an alternation of names holds `(s|ſ)`).
                int depth = 0;
                for (std::size_t j = i; j < anchored.size(); ++j) {
                    if (anchored[j] == '\\') {
                        ++j;
                    } else if (anchored[j] == '[') {
                        const std::size_t end = anchored.find(']', j + (anchored[j + 1] == '^' ? 3 : 2));
                        if (end == std::string::npos) break;
                        j = end;
                    } else if (anchored[j] == '(') {
                        ++depth;
                    } else if (anchored[j] == ')' && --depth == 0) {
                        len = j - i + 1;
                        break;
                    }
                }
                if (i + len < anchored.size() && (anchored[i + len] == '*' || anchored[i + len] == '?'))
                    ++len;
            }
            if (escaped_size(piece) + escaped_size(anchored.substr(i, len)) > kMaxString / 2) {
                pieces.push_back(piece);
                piece.clear();
            }
            piece += anchored.substr(i, len);
            i += len;
        }
        pieces.push_back(piece);
        std::string out = "(require-all";
        for (const std::string& p : pieces)
            out += " (regex " + quote(p) + ")";
        return out + ")";
    }

    // The path and everything below it. `wide`: a deny, which may match more than asked but never less; an
    // allow (or an exception cut out of a deny) may match less but never more.
    std::optional<std::string> subtree(const Spelling& s, bool wide, const std::string& what) {
        // A deny is always a regex: it matches every spelling of the path the file system takes as the same
        // (letter case, Unicode normalisation), which a `subpath` literal cannot.
        if (!wide && !s.glob && !has_control(s.path) && escaped_size(s.path) <= kMaxString)
            return "(subpath " + quote(s.path) + ")";
        if (!s.glob && has_control(s.path) && !wide) {
            warnings_.push_back(what + ": a control character in the path; not granted");
            return std::nullopt;
        }
        const std::string body = s.glob ? glob_regex(s.path, wide) : literal_regex(s.path, wide);
        // The root's subtree is every path.
        if (body.empty() || body == "/") return regex_filter("^/", wide, what);
        return regex_filter("^" + body + "(/.*)?$", wide, what);
    }

    // The one directory entry (its vnode), nothing below: always a deny (moving, removing), in every
    // spelling of the path.
    std::optional<std::string> exact(const std::string& path) {
        return regex_filter("^" + literal_regex(path, true) + "$", true, path);
    }

    void add(std::vector<std::string>& out, const std::optional<std::string>& filter) {
        if (filter) out.push_back(*filter);
    }

    // Where a rule of the Default layer stands for the Linux jail's private /tmp, the launcher's own
    // temporary directory.
    std::string local_path(const PathRule& r) const {
        if (!options_.temp_dir.empty() && r.rule.source.layer == policy::Layer::Default && r.path == "/tmp")
            return options_.temp_dir;
        return r.path.string();
    }

    void network() {
        const auto& net = policy_.network();
        line("");
        line("; Network: cordon's proxy on loopback, named host ports, allowed Unix sockets");
        std::set<std::uint16_t> ports(options_.proxy_ports.begin(), options_.proxy_ports.end());
        ports.insert(options_.host_ports.begin(), options_.host_ports.end());
        std::vector<std::string> remote;
        for (std::uint16_t port : ports)
            remote.push_back("(remote ip \"localhost:" + std::to_string(port) + "\")");
        rule("allow", "network-outbound", remote);
        if (net.allow_all_unix_sockets) {
            line("(allow system-socket (socket-domain AF_UNIX))");
            line("(allow network-bind (local unix-socket (regex \"^/\")))");
            line("(allow network-outbound (remote unix-socket (regex \"^/\")))");
            return;
        }
        std::vector<std::string> bind, connect;
        for (const policy::Rule& socket : net.allow_unix_sockets) {
            std::string path = socket.text;
            if (path == "~" || path.starts_with("~/"))
                path = policy_.filesystem().home.string() + path.substr(1);
            if (path.empty() || path[0] != '/') {
                warnings_.push_back("allowUnixSockets " + socket.text +
                                    ": not an absolute path; not granted");
                continue;
            }
            for (const Spelling& s : spellings(normal_path(path), false))
                if (auto f = subtree(s, false, "allowUnixSockets " + socket.text)) {
                    bind.push_back("(local unix-socket " + *f + ")");
                    connect.push_back("(remote unix-socket " + *f + ")");
                }
        }
        if (bind.empty()) return;
        line("(allow system-socket (socket-domain AF_UNIX))");
        rule("allow", "network-bind", bind);
        rule("allow", "network-outbound", connect);
    }

    // The read rules as Policy::decide_read_rules decides: the longest matching rule wins, a deny on a tie.
    // Written without relying on order: each deny minus the longer allows inside it.
    std::vector<std::string> read_denies() {
        const auto& fsp = policy_.filesystem();
        std::vector<std::string> out;
        for (const PathRule& deny : fsp.deny_read) {
            std::vector<std::string> exceptions;
            for (const PathRule& allow : fsp.allow_read)
                if (allow.path.string().size() > deny.path.string().size())
                    for (const Spelling& s : spellings(allow.path.string(), allow.glob))
                        if (auto f = subtree(s, false, "allowRead " + allow.rule.text))
                            exceptions.push_back("(require-not " + *f + ")");
            for (const Spelling& s : spellings(deny.path.string(), deny.glob)) {
                auto f = subtree(s, true, "denyRead " + deny.rule.text);
                if (!f) continue;
                if (exceptions.empty()) {
                    out.push_back(*f);
                    continue;
                }
                std::string all = "(require-all " + *f;
                for (const std::string& e : exceptions)
                    all += " " + e;
                out.push_back(all + ")");
            }
        }
        return out;
    }

    void reads() {
        const auto& fsp = policy_.filesystem();
        line("");
        line("; File read");
        const std::vector<std::string> denies = read_denies();
        bool root_denied = false;
        for (const PathRule& deny : fsp.deny_read)
            root_denied =
                root_denied || deny.path == "/" || (deny.glob && glob_base(deny.path.string()) == "/");
        if (fsp.read_scope.scope == policy::ReadScope::All) {
            line("(allow file-read*)");
        } else {
            std::vector<std::string> scope;
            for (const PathRule& in : fsp.read_scope.include)
                for (const Spelling& s : spellings(local_path(in), in.glob))
                    add(scope, subtree(s, false, "read scope " + in.rule.text));
            for (const char* path : kMacSystemPaths)
                add(scope, subtree(Spelling{path, false}, false, path));
            rule("allow", "file-read*", scope);
            root_denied = true;
        }
        rule("deny", "file-read*", denies);
        if (fsp.read_scope.scope == policy::ReadScope::Project) {
            std::vector<std::string> hidden;
            for (const PathRule& h : fsp.read_scope.hidden)
                for (const Spelling& s : spellings(h.path.string(), h.glob))
                    add(hidden, subtree(s, true, "hidden " + h.rule.text));
            rule("deny", "file-read*", hidden);
        }
        if (!denies.empty() || fsp.read_scope.scope == policy::ReadScope::Project) {
            // realpath() lstat()s every directory on the way to an allowed path, denied ones included (srt
            // does the same): names and attributes of directories, never their listing or a file.
            line("(allow file-read-metadata (vnode-type DIRECTORY))");
        }
        // Without the root directory itself dyld stops before the program starts.
        if (root_denied) line("(allow file-read* (literal \"/\"))");
        // A read-denied path moved elsewhere would be readable there: no rename (nor removal) of it, nor
        // of a directory above it.
        std::vector<std::string> keep = denies;
        for (const PathRule& deny : fsp.deny_read)
            for (const Spelling& s : spellings(deny.path.string(), deny.glob)) {
                const std::string base = s.glob ? glob_base(s.path) : s.path;
                if (s.glob && base != "/") add(keep, exact(base));
                for (const std::string& dir : ancestors(base))
                    add(keep, exact(dir));
            }
        rule("deny", "file-write-unlink", keep);
    }

    void writes() {
        const auto& fsp = policy_.filesystem();
        line("");
        line("; File write");
        std::vector<std::string> roots;
        for (const PathRule& root : fsp.allow_write) {
            std::vector<Spelling> all = spellings(local_path(root), root.glob);
            // A glob's matches are granted where its directory leads only when no symlink on the way lies
            // where the command writes: Policy vets a plain entry's links when it loads (follow_allow_write),
            // a glob's the Linux jail vets at each match, and here only the profile can. Otherwise a
            // `cache -> ~/Library/LaunchAgents` planted by an earlier command turns `allowWrite: ["cache/*"]`
            // into a grant of LaunchAgents (Seatbelt sees the resolved path).
            if (root.glob && all.size() > 1 && planted_link(glob_base(local_path(root)))) {
                warnings_.push_back("allowWrite " + root.rule.text +
                                    ": its directory is reached through a symlink in a writable area; not "
                                    "followed");
                all.resize(1);
            }
            for (const Spelling& s : all)
                add(roots, subtree(s, false, "allowWrite " + root.rule.text));
        }
        rule("allow", "file-write*", roots);
        // A read-denied path is not written either, unless a longer writable root lies inside it: the Linux
        // jail masks it with an empty read-only file system and binds the deeper roots over the mask. Without
        // this, `~/.aws` read-denied in a writable home would take a planted `~/.aws/config` (whose
        // credential_process the user's next `aws` runs).
        std::vector<std::string> unwritable;
        for (const PathRule& deny : fsp.deny_read) {
            std::vector<std::string> exceptions;
            for (const PathRule& root : fsp.allow_write)
                if (local_path(root).size() > deny.path.string().size())
                    for (const Spelling& s : spellings(local_path(root), root.glob))
                        if (auto f = subtree(s, false, "allowWrite " + root.rule.text))
                            exceptions.push_back("(require-not " + *f + ")");
            for (const Spelling& s : spellings(deny.path.string(), deny.glob)) {
                auto f = subtree(s, true, "denyRead " + deny.rule.text);
                if (!f) continue;
                std::string all = exceptions.empty() ? *f : "(require-all " + *f;
                for (const std::string& e : exceptions)
                    all += " " + e;
                unwritable.push_back(exceptions.empty() ? all : all + ")");
            }
        }
        rule("deny", "file-write*", unwritable);
        // The devices every program writes stay writable under a read-denied `/` (the Linux jail mounts its
        // own /dev), the caller's terminal too.
        std::vector<std::string> devices;
        for (const char* device : kWritableDevices)
            devices.push_back("(literal " + quote(device) + ")");
        if (!unwritable.empty()) {
            devices.push_back("(literal \"/dev/ptmx\")");
            devices.push_back("(regex \"^/dev/ttys\")");
        }
        rule("allow", "file-write*", devices);

        // What is never written: denyWrite, every settings file read, the audit log, and the protected names
        // at any depth (the jail protects them wherever they appear).
        std::vector<std::string> denies, moves;
        auto deny_path = [&](const std::string& path, bool glob, const std::string& what, bool filter) {
            for (const Spelling& s : spellings(path, glob)) {
                if (filter) add(denies, subtree(s, true, what));
                const std::string base = s.glob ? glob_base(s.path) : s.path;
                if (s.glob && base != "/") add(moves, exact(base));
                for (const std::string& dir : ancestors(base))
                    add(moves, exact(dir));
            }
        };
        for (const PathRule& deny : fsp.deny_write) {
            // The protected names' entries in the working directory and the home: the any-depth regexes
            // below cover the names themselves; their directories above are kept in place here.
            const bool named = deny.rule.source.layer == policy::Layer::Default &&
                               deny.rule.source.where.starts_with("always read-only");
            deny_path(deny.path.string(), deny.glob, "denyWrite " + deny.rule.text, !named);
        }
        if (!options_.audit_log.empty() && options_.audit_log != "-")
            deny_path(normal_path(options_.audit_log), false, "audit log", true);

        // Protected names at any depth, and (for the moves) every directory whose last components start
        // such a name: `.git` for `.git/hooks`, so that `mv .git x` or `mv prepared .git` cannot get around
        // them.
        std::vector<std::string> names = fsp.always_read_only_names;
        for (const std::string& name : policy::git_dir_names())
            names.push_back(name);
        std::vector<std::string> name_bodies, prefix_bodies;
        for (const std::string& name : names) {
            name_bodies.push_back(name_regex(name));
            const auto parts = policy::path_components::split_non_empty(name);
            std::string prefix;
            for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
                prefix += (i ? "/" : "") + parts[i];
                prefix_bodies.push_back(name_regex(prefix));
            }
        }
        alternation(denies, "^(.*/)?(", name_bodies, ")(/.*)?$");
        alternation(moves, "^(.*/)?(", prefix_bodies, ")$");
        // The names protected in home directories: the caller's, and every user's on macOS and Linux.
        std::vector<std::string> homes;
        if (fsp.home != "/" && !fsp.home.empty())
            for (const Spelling& s : spellings(fsp.home.string(), false))
                homes.push_back(literal_regex(s.path, true));
        for (const char* other : {"/Users", "/var/root", "/private/var/root", "/root", "/home"}) {
            const std::string dir = literal_regex(other, true);
            homes.push_back(std::string_view(other).ends_with("root") ? dir : dir + "/[^/]+");
        }
        std::vector<std::string> home_bodies, home_prefixes;
        for (const std::string& name : fsp.home_read_only_names) {
            home_bodies.push_back(name_regex(name));
            const auto parts = policy::path_components::split_non_empty(name);
            std::string prefix;
            for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
                prefix += (i ? "/" : "") + parts[i];
                home_prefixes.push_back(name_regex(prefix));
            }
        }
        for (const std::string& home : homes) {
            alternation(denies, "^" + home + "/(", home_bodies, ")(/.*)?$");
            alternation(moves, "^" + home + "/(", home_prefixes, ")$");
        }
        rule("deny", "file-write*", denies);
        for (const std::string& d : denies)
            moves.push_back(d);
        rule("deny", "file-write-unlink file-write-create", moves);
    }

    // `head (a|b|c) tail` as few regexes as fit Seatbelt's strings.
    void alternation(std::vector<std::string>& out, const std::string& head,
                     const std::vector<std::string>& bodies, const std::string& tail) {
        std::string group;
        auto flush = [&]() {
            if (!group.empty()) add(out, regex_filter(head + group + tail, true, head));
            group.clear();
        };
        std::set<std::string> seen;
        for (const std::string& body : bodies) {
            if (!seen.insert(body).second) continue;
            if (!group.empty() &&
                escaped_size(head) + escaped_size(group) + escaped_size(body) + 1 + escaped_size(tail) >
                    kMaxString)
                flush();
            group += (group.empty() ? "" : "|") + body;
        }
        flush();
    }

    const policy::Policy& policy_;
    const ProfileOptions& options_;
    std::string text_;
    std::vector<std::string> warnings_;
};

}  // namespace

Profile make_profile(const policy::Policy& policy, const ProfileOptions& options) {
    return Builder(policy, options).build();
}

std::string canonical_path(const std::string& path) {
    fs::path existing = path, rest;
    std::error_code ec;
    while (!existing.empty() && existing != existing.root_path() &&
           !fs::exists(fs::symlink_status(existing, ec))) {
        rest = existing.filename() / rest;
        existing = existing.parent_path();
    }
    fs::path resolved = fs::canonical(existing, ec);
    if (ec) return path;
    return normal_path(rest.empty() ? resolved : resolved / rest);
}

}  // namespace cordon::seatbelt
