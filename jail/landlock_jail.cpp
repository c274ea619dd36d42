// The jail without namespaces (see landlock_jail.hpp). The supervisor forks the command itself: it has no
// init (no PID namespace to be PID 1 of); the supervisor is the subreaper of everything the command starts
// and kills what is left when the command ends.
#include "jail/landlock_jail.hpp"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/securebits.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

#include "jail/cgroup.hpp"
#include "jail/detail/handover.hpp"
#include "jail/detail/landlock_abi.hpp"
#include "jail/detail/setup.hpp"

namespace cordon::jail {

namespace fs = std::filesystem;

std::optional<JailChoice> parse_jail_choice(std::string_view text) {
    if (text == "auto") return JailChoice::Auto;
    if (text == "namespaces") return JailChoice::Namespaces;
    if (text == "landlock") return JailChoice::Landlock;
    return std::nullopt;
}

std::string_view to_string(JailChoice choice) {
    switch (choice) {
        case JailChoice::Auto:
            return "auto";
        case JailChoice::Namespaces:
            return "namespaces";
        case JailChoice::Landlock:
            return "landlock";
    }
    return "auto";
}

namespace {

using namespace detail::landlock;

constexpr std::uint64_t kFileOnly = kExecute | kWriteFile | kReadFile | kTruncate | kIoctlDev;
constexpr std::uint64_t kReadRights = kReadFile | kReadDir | kExecute;

constexpr int kSetupFailed = 125;

std::uint64_t file_rights(int abi) {
    return kWriteFile | (abi >= 3 ? kTruncate : 0) | (abi >= 5 ? kIoctlDev : 0);
}

std::uint64_t dir_rights(int abi) {
    return file_rights(abi) | kRemoveDir | kRemoveFile | kMakeChar | kMakeDir | kMakeReg | kMakeSock |
           kMakeFifo | kMakeBlock | kMakeSym | (abi >= 2 ? kRefer : 0);
}

bool below(const fs::path& path, const fs::path& dir) {
    const std::string& p = path.native();
    const std::string& d = dir.native();
    if (d == "/") return p.size() > 1 && p[0] == '/';
    return p.size() > d.size() && p.compare(0, d.size(), d) == 0 && p[d.size()] == '/';
}

// The read grants: what the namespace jail's mounts would show. `shown` maps each mounted path to whether
// it is shown (a bind, /proc, /dev) or hidden (a denyRead mask); the deepest decides. A directory with
// nothing hidden below it is one grant; one that holds a hidden path is listed and its entries granted one
// by one (so it cannot itself be listed: a grant on it would cover the hidden path too).
class ReadGrants {
  public:
    ReadGrants(const std::map<fs::path, bool>& shown, std::vector<LandlockGrant>& out)
        : shown_(shown), out_(out) {}

    void grant(const fs::path& dir, bool hidden, int depth = 0) {
        if (depth > 64) return;  // a loop of bind paths cannot happen; a bound, never an open grant
        bool any_below = false, hidden_below = false;
        for (auto it = shown_.upper_bound(dir); it != shown_.end() && below(it->first, dir); ++it) {
            any_below = true;
            if (!it->second) hidden_below = true;
        }
        if (!hidden && !hidden_below) {
            out_.push_back({dir, kReadRights});
            return;
        }
        if (!any_below) return;
        if (hidden) {
            // Nothing here is shown but the mounts below: go to the shallowest of them.
            for (auto it = shown_.upper_bound(dir); it != shown_.end() && below(it->first, dir); ++it) {
                bool nested = false;
                for (auto up = shown_.upper_bound(dir); up != it; ++up)
                    if (below(it->first, up->first)) nested = true;
                if (!nested) grant(it->first, !it->second, depth + 1);
            }
            return;
        }
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr) return;  // not listed: nothing granted here (fails closed)
        while (const dirent* entry = ::readdir(d)) {
            const std::string name = entry->d_name;
            if (name == "." || name == "..") continue;
            const fs::path path = dir / name;
            auto at = shown_.find(path);
            const bool entry_hidden = at != shown_.end() ? !at->second : false;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0 || S_ISLNK(st.st_mode)) continue;  // a link's target counts
            if (S_ISDIR(st.st_mode))
                grant(path, entry_hidden, depth + 1);
            else if (!entry_hidden)
                out_.push_back({path, kReadFile | kExecute});
        }
        ::closedir(d);
    }

  private:
    const std::map<fs::path, bool>& shown_;
    std::vector<LandlockGrant>& out_;
};

}  // namespace

int landlock_abi() {
    return detail::landlock::abi_version();
}

std::string without_namespaces_lacks(int abi) {
    std::string lacks =
        "no PID namespace (host processes visible in /proc), the host's /tmp and /dev/shm (TMPDIR is "
        "private), the host's /dev/pts (the user's other terminals neither written nor read), no "
        "transparent proxying (programs that ignore the proxy variables are refused), no cgroup "
        "unless delegated";
    if (abi < 1)
        lacks +=
            ", no Landlock (no read rules, the user's other terminals readable, writes kept by the notifier "
            "alone, host processes of the same user reachable through /proc and signals)";
    else if (abi < 6)
        lacks += ", Landlock ABI " + std::to_string(abi) + " (signals to host processes not scoped)";
    if (abi >= 1 && abi < 4) lacks += ", no Landlock TCP rules (the notifier alone keeps connect)";
    return lacks;
}

LandlockGrants landlock_grants(const MountPlan& plan, const fs::path& private_tmp, int abi) {
    LandlockGrants out;
    out.handled = dir_rights(abi);
    std::map<fs::path, bool> shown;
    for (const MountOp& op : plan.ops) {
        switch (op.kind) {
            case MountKind::MaskDir:
            case MountKind::MaskFile:
                shown[op.path] = false;
                out.read_rules.push_back(op.path.string() + " (" + op.why + ")");
                break;
            case MountKind::PrivateTmp:
                if (!private_tmp.empty()) shown[private_tmp] = true;
                break;
            case MountKind::Symlink:
            case MountKind::ReadOnlyLink:
                break;
            default:
                shown[op.path] = true;
        }
    }
    out.reads = std::any_of(shown.begin(), shown.end(), [](const auto& entry) { return !entry.second; });
    // Why: the host's /dev/pts holds the user's other terminals (a shell's, an editor's, the one where sudo
    // asks for a password), where the namespace jail has a devpts of its own. An open for reading is not
    // notified, so Landlock refuses it: /dev/pts is hidden from reads, and the command's own terminals (its
    // controlling terminal, those of fds 0-2) are granted one by one when it starts (HostJail::configure).
    // An open for writing goes to the notifier (host_rules::terminal), which also lets the run open the
    // terminals it makes itself.
    if (abi >= 1) {
        std::map<fs::path, bool> readable = shown;
        readable["/dev/pts"] = false;
        out.handled |= kReadRights;
        auto root = readable.find("/");
        ReadGrants(readable, out.grants).grant("/", root != readable.end() && !root->second);
        // Directories stay listable where no read rule hides a name (`ls /`, `ls /dev`: their entries are
        // granted one by one); /dev/pts's names are no secret.
        if (!out.reads) out.grants.push_back({"/", kReadDir});
        out.grants.push_back({"/dev/pts", kReadDir});
        out.grants.push_back({"/dev/pts/ptmx", kReadFile});  // where /dev/ptmx links to it (Docker)
    }
    if (out.reads)
        for (const auto& [path, visible] : shown)
            out.shown.emplace(path.string(), visible);
    for (const fs::path& root : plan.writable_roots)
        out.grants.push_back({root == "/tmp" ? private_tmp : root, dir_rights(abi)});
    // The devices every jail has, and the terminals; POSIX shared memory (the host's /dev/shm).
    for (const char* device :
         {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"})
        out.grants.push_back({device, file_rights(abi)});
    out.grants.push_back({"/dev/pts", file_rights(abi)});
    out.grants.push_back({"/dev/shm", dir_rights(abi)});
    return out;
}

namespace detail {
namespace {

// Closes (or marks close-on-exec) every descriptor from `first` on. False when it cannot.
bool close_from(unsigned first) {
    return ::syscall(SYS_close_range, first, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) == 0;
}

// No capability in any set, and none to be had again: securebits and the bounding set where we hold
// CAP_SETPCAP (root, or a container's root), the requested user, then every set emptied and no_new_privs.
// Unlike the namespace jail's drop_privileges, the caller may lack CAP_SETPCAP: an unprivileged caller has
// nothing in its bounding set that no_new_privs would let an execve grant.
Result drop_host_privileges(Context& ctx) {
    __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
    __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capget, &header, data) != 0) return fail("read capabilities");
    const bool setpcap = (data[0].effective & (1U << CAP_SETPCAP)) != 0;
    if (setpcap) {
        unsigned long bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                             SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED;
        if (::prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) != 0) return fail("set securebits");
        for (int cap = 0; cap <= ctx.last_cap; ++cap)
            if (::prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL)
                return fail("drop capability " + std::to_string(cap) + " from the bounding set");
    }
    if (::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno != EINVAL)
        return fail("clear ambient capabilities");
    if (ctx.config.run_as) {
        auto [uid, gid] = *ctx.config.run_as;
        if (::setgroups(0, nullptr) != 0) return fail("clear supplementary groups");
        if (::setresgid(gid, gid, gid) != 0) return fail("setresgid " + std::to_string(gid));
        if (::setresuid(uid, uid, uid) != 0) return fail("setresuid " + std::to_string(uid));
    }
    __user_cap_data_struct none[_LINUX_CAPABILITY_U32S_3] = {};
    if (::syscall(SYS_capset, &header, none) != 0) return fail("clear capabilities");
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("set no_new_privs");
    return std::nullopt;
}

// The path of this process's controlling terminal when it is a pseudo-terminal (/dev/pts/N: majors 136 to
// 143, /proc/self/stat's tty_nr), checked against the device there.
std::optional<fs::path> controlling_pty() {
    std::ifstream in("/proc/self/stat");
    std::string line;
    if (!std::getline(in, line)) return std::nullopt;
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos || close + 2 >= line.size()) return std::nullopt;
    std::istringstream fields(line.substr(close + 2));
    std::string state;
    long ppid = 0, pgrp = 0, session = 0;
    unsigned long tty = 0;
    if (!(fields >> state >> ppid >> pgrp >> session >> tty) || tty == 0) return std::nullopt;
    const unsigned major = (tty >> 8) & 0xfff, minor = (tty & 0xff) | ((tty >> 12) & 0xfff00);
    if (major < 136 || major > 143) return std::nullopt;
    const fs::path path = "/dev/pts/" + std::to_string((major - 136) * 256 + minor);
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISCHR(st.st_mode) || st.st_rdev != ::makedev(major, minor))
        return std::nullopt;
    return path;
}

// Entered as the command (after the privilege drop): root without capabilities cannot enter another user's
// mode-0700 project, as in the namespace jail.
Result enter_working_directory(Context& ctx) {
    if (::chdir(ctx.config.cwd.c_str()) != 0) return fail("enter " + ctx.config.cwd.string());
    return std::nullopt;
}

Result restrict_with_landlock(Context& ctx) {
    if (ctx.landlock_ruleset < 0) return std::nullopt;
    // The command's own /proc/PID knobs (oom_score_adj, comm): its pid is known only here.
    const int abi = landlock_abi();
    PathBeneath own{abi >= 1 ? file_rights(abi) : 0, ::open("/proc/self", O_PATH | O_CLOEXEC)};
    if (own.parent_fd >= 0) ::syscall(SYS_landlock_add_rule, ctx.landlock_ruleset, kRulePathBeneath, &own, 0);
    if (::syscall(SYS_landlock_restrict_self, ctx.landlock_ruleset, 0) != 0) return fail("enforce Landlock");
    return std::nullopt;
}

// A descriptor inherited from the caller reaches whatever it points to: only 0-2 survive exec.
Result close_inherited(Context&) {
    if (!close_from(3)) return fail("close the inherited descriptors");
    return std::nullopt;
}

// The command of the jail without namespaces, forked by the keeper (a copy of the supervisor, which may have
// threads: system calls on prepared data only) once the supervisor's word came, in its order: the same shape
// as the namespace jail's kCommandSteps, with no init before it. Everything is mandatory here but the limits
// (--best-effort runs without them, with a warning).
constexpr Step kHostCommandSteps[] = {
    {"signals", reset_signals, false, "the keeper's blocked signals; a command outliving the keeper"},
    {"resource limits", apply_limits, true, "--memory and --pids where no cgroup holds them (limits.cpp)"},
    {"privilege drop", drop_host_privileges, false,
     "capabilities and setuid gains: securebits and the bounding set where held, uid, no_new_privs"},
    {"working directory", enter_working_directory, false,
     "a command started somewhere else; root entering another user's private project"},
    {"Landlock", restrict_with_landlock, false,
     "writes outside the writable roots and reads the read rules hide (no mounts here)"},
    {"seccomp filter", enforce_seccomp, false,
     "connects around the proxy, the kernel's attack surface; names and connects notified (seccomp.cpp)"},
    {"seccomp listener hand-over", hand_over_listener, false, "a notified call nobody answers"},
    {"inherited descriptors", close_inherited, false, "a descriptor reaching past Landlock"},
};

void add_grant(int ruleset, const LandlockGrant& grant) {
    int fd = ::open(grant.path.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) return;  // gone since: nothing to grant
    struct stat st {};
    std::uint64_t access = grant.access;
    if (::fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) access &= kFileOnly;
    PathBeneath rule{access, fd};
    // A grant that fails only narrows what the command may do.
    ::syscall(SYS_landlock_add_rule, ruleset, kRulePathBeneath, &rule, 0);
    ::close(fd);
}

// Kills every child of this process, round by round until none is left, and reaps them (`reaped` is told each
// pid and wait status). Why rounds: without a PID namespace nothing dies with the command, but whoever calls
// this is the subreaper of all it started: every process left, however deep or detached (setsid, double
// fork), is a child of ours once its parent is gone. Bounded: a process forking as fast as it can is caught
// within a few rounds, its children being ours the moment it dies.
template <class Reaped>
void kill_children(Reaped reaped) {
    const pid_t self = ::getpid();
    for (int round = 0; round < 1000; ++round) {
        // No child at all (the common case): nothing is left; no /proc walk.
        siginfo_t info{};
        if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 && errno == ECHILD) return;
        bool any = false;
        DIR* proc = ::opendir("/proc");
        if (proc == nullptr) return;
        while (const dirent* entry = ::readdir(proc)) {
            const char* name = entry->d_name;
            if (*name < '1' || *name > '9') continue;
            std::ifstream stat(std::string("/proc/") + name + "/stat");
            std::string line;
            if (!std::getline(stat, line)) continue;
            const std::size_t close = line.rfind(')');
            if (close == std::string::npos || close + 4 >= line.size()) continue;
            long ppid = std::strtol(line.c_str() + close + 4, nullptr, 10);
            if (ppid != self) continue;
            any = true;
            // Zombies too: a thread group's leader that ended stays a zombie while its other threads run
            // (the main thread's pthread_exit), and SIGKILL to its pid ends them; a true zombie ignores it.
            ::kill(static_cast<pid_t>(std::strtol(name, nullptr, 10)), SIGKILL);
        }
        ::closedir(proc);
        for (;;) {
            int st = 0;
            pid_t r = ::waitpid(-1, &st, WNOHANG);
            if (r <= 0) break;
            reaped(r, st);
        }
        if (!any) return;
        ::usleep(round < 10 ? 200 : 2000);
    }
}

// What the keeper receives when the supervisor dies (PR_SET_PDEATHSIG): a signal nobody else sends it.
int supervisor_gone_signal() {
    return SIGRTMIN + 3;
}

// The keeper: the supervisor's child, the command's parent and the subreaper of every process the command
// starts. Why: without a PID namespace nothing ends with the supervisor. The command has PR_SET_PDEATHSIG,
// but what it started in the background or in a session of its own would go on (its calls failing closed
// with ENOSYS once the notifier is gone) and the run's TMPDIR would stay: a supervisor killed with SIGKILL
// runs no destructor. When the supervisor goes (its PR_SET_PDEATHSIG, or seen by getppid within a second),
// the keeper kills them all and removes the TMPDIR. While the supervisor lives, the keeper relays the
// supervisor's signals to the command and, when the command ends, kills what it left and ends with its
// status (the supervisor's own round of kill_children then finds nothing).
[[noreturn]] void keep(pid_t command, pid_t supervisor, const fs::path& private_tmp) {
    sigset_t set = detail::forwarded_signals(true);
    sigaddset(&set, supervisor_gone_signal());
    std::optional<int> status;
    auto note = [&](pid_t pid, int st) {
        if (pid == command && !status) status = exit_status(st);
    };
    for (;;) {
        siginfo_t info{};
        const timespec tick{1, 0};
        const int sig = ::sigtimedwait(&set, &info, &tick);
        if (::getppid() != supervisor) {
            kill_children([](pid_t, int) {});
            std::error_code ec;
            fs::remove_all(private_tmp, ec);  // never follows a symlink planted inside
            ::_exit(kSetupFailed);
        }
        if (sig > 0 && sig != SIGCHLD && sig != supervisor_gone_signal()) {
            // Only what the supervisor relays: the terminal's signals reached the command's process group.
            if ((info.si_code == SI_USER || info.si_code == SI_QUEUE) && info.si_pid == supervisor)
                ::kill(command, sig);
            continue;
        }
        int st = 0;
        pid_t r;
        while ((r = ::waitpid(-1, &st, WNOHANG)) > 0)
            note(r, st);
        if (status) {
            kill_children(note);
            ::_exit(*status);
        }
    }
}

// The janitor: a child that makes the run's TMPDIR (mkdtemp of `tmpl`), sends its path (or "!" and the errno)
// on `sock`, and removes it again if the supervisor goes before the keeper (keep()) has taken that over
// (`sock` says "k"). Why: the supervisor makes the TMPDIR at start and forks the keeper only in configure,
// after the policy loads; a supervisor killed with SIGKILL in between ran no destructor and left the empty
// TMPDIR behind. Made by a child that watches, it has a remover from its first instant.
[[noreturn]] void tend_private_tmp(int sock, pid_t supervisor, std::string tmpl) {
    sigset_t all;  // the terminal's signals reach the supervisor's process group: they are not the janitor's
    sigfillset(&all);
    ::sigprocmask(SIG_BLOCK, &all, nullptr);
    ::syscall(SYS_close_range, 0U, static_cast<unsigned>(sock) - 1U, 0U);
    ::syscall(SYS_close_range, static_cast<unsigned>(sock) + 1U, ~0U, 0U);
    if (::getppid() != supervisor) ::_exit(kSetupFailed);
    if (::mkdtemp(tmpl.data()) == nullptr) {
        const std::string failed = "!" + std::to_string(errno);
        (void)!::write(sock, failed.data(), failed.size());
        ::_exit(kSetupFailed);
    }
    if (::send(sock, tmpl.data(), tmpl.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(tmpl.size())) {
        for (;;) {
            pollfd p{sock, POLLIN, 0};
            const int ready = ::poll(&p, 1, 200);
            if (::getppid() != supervisor) break;  // its end may live on in a child it forked
            if (ready <= 0) continue;
            char word = 0;
            const ssize_t n = ::read(sock, &word, 1);
            if (n == 1 && word == 'k') ::_exit(0);
            if (n == 0 || (n < 0 && errno != EINTR)) break;
        }
    }
    std::error_code ec;
    fs::remove_all(tmpl, ec);  // never follows a symlink planted inside
    ::_exit(0);
}

class HostJail final : public Jail {
  public:
    ~HostJail() override {
        if (pid_ > 0 && !reaped_) {
            ::kill(pid_, SIGKILL);
            wait();
        }
        kill_descendants();
        limits_.remove();
        remove_private_tmp();
        for (auto& l : listeners_)
            if (l.fd >= 0) ::close(l.fd);
        for (int fd : {sigfd_, report_, notify_sock_, ruleset_, janitor_sock_})
            if (fd >= 0) ::close(fd);
        ::prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        ::sigprocmask(SIG_SETMASK, &old_mask_, nullptr);
    }

    bool start(const JailConfig& config, std::string& error);
    std::optional<std::string> configure(MountPlan plan, UnixSockets unix_sockets) override;

    pid_t pid() const override { return pid_; }
    std::vector<Listener> take_listeners() override { return std::move(listeners_); }
    int signal_fd() const override { return sigfd_; }
    int report_fd() const override { return report_; }
    std::optional<int> read_report(bool& closed) override {
        closed = true;  // the command's end comes as SIGCHLD (no init to report it)
        return std::nullopt;
    }
    int notify_socket() const override { return notify_sock_; }
    int take_notify_fd() override { return detail::take_notify_fd(notify_sock_); }
    std::vector<std::uint16_t> listener_ports() const override { return ports_; }
    std::shared_ptr<const HostView> host_view() const override { return view_; }

    std::optional<int> handle_signals() override {
        signalfd_siginfo info{};
        while (::read(sigfd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
            int sig = static_cast<int>(info.ssi_signo);
            if (sig == SIGCHLD || info.ssi_code == SI_KERNEL) continue;
            if (pid_ > 0 && !reaped_) ::kill(pid_, sig);
        }
        reap(WNOHANG);
        if (reaped_) kill_descendants();
        return status_;
    }

    void kill() override {
        if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
        kill_descendants();
    }

    int wait() override {
        while (pid_ > 0 && !reaped_)
            reap(0);
        return status_.value_or(kSetupFailed);
    }

  private:
    void reap(int options) {
        if (pid_ <= 0 || reaped_) return;
        int st = 0;
        pid_t r = ::waitpid(pid_, &st, options);
        if (r == pid_) {
            reaped_ = true;
            if (!status_) status_ = exit_status(st);
        } else if (r < 0 && errno != EINTR) {
            reaped_ = true;
            if (!status_) status_ = kSetupFailed;
        }
    }

    // Everything left that the command started (kill_children): the keeper's orphans when it was killed.
    void kill_descendants() {
        kill_children([this](pid_t pid, int st) {
            if (pid == pid_ && !reaped_) {
                reaped_ = true;
                if (!status_) status_ = exit_status(st);
            }
        });
    }

    void remove_private_tmp() {
        if (private_tmp_.empty()) return;
        std::error_code ec;
        fs::remove_all(private_tmp_, ec);  // never follows a symlink planted inside
        private_tmp_.clear();
    }

    bool make_listeners(const JailConfig& config, std::string& error);

    JailConfig config_;
    pid_t pid_ = -1;
    int sigfd_ = -1, report_ = -1, notify_sock_ = -1, ruleset_ = -1;
    sigset_t old_mask_{};
    std::optional<int> status_;
    bool reaped_ = false;
    std::vector<Listener> listeners_;
    std::vector<std::uint16_t> ports_;
    std::shared_ptr<HostView> view_ = std::make_shared<HostView>();
    fs::path private_tmp_;
    pid_t janitor_ = -1;  // tend_private_tmp() until the keeper takes the TMPDIR over
    int janitor_sock_ = -1;
    JailLimits limits_;
};

bool HostJail::make_listeners(const JailConfig& config, std::string& error) {
    // Each asked-for port becomes one the kernel picks on 127.0.0.1, and the same port on ::1 where free.
    for (std::size_t i = 0; i < config.listen_ports.size() && config.network; ++i) {
        std::uint16_t port = 0;
        for (int family : {AF_INET, AF_INET6}) {
            int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
            if (fd < 0) {
                if (family == AF_INET6) continue;
                error = std::string("cannot create the proxy's listener: ") + std::strerror(errno);
                return false;
            }
            sockaddr_storage addr{};
            socklen_t len = 0;
            if (family == AF_INET) {
                auto& in = reinterpret_cast<sockaddr_in&>(addr);
                in.sin_family = AF_INET;
                in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
                in.sin_port = htons(port);
                len = sizeof in;
            } else {
                int only = 1;
                ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof only);
                auto& in6 = reinterpret_cast<sockaddr_in6&>(addr);
                in6.sin6_family = AF_INET6;
                in6.sin6_addr = in6addr_loopback;
                in6.sin6_port = htons(port);
                len = sizeof in6;
            }
            if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1024) != 0) {
                const int err = errno;
                ::close(fd);
                if (family == AF_INET6) continue;  // no IPv6 loopback, or the port is taken there
                error =
                    std::string("cannot listen on the host's loopback for the proxy: ") + std::strerror(err);
                return false;
            }
            len = sizeof addr;
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
            char text[INET6_ADDRSTRLEN] = {};
            if (family == AF_INET) {
                auto& in = reinterpret_cast<sockaddr_in&>(addr);
                port = ntohs(in.sin_port);
                ::inet_ntop(AF_INET, &in.sin_addr, text, sizeof text);
                listeners_.push_back(
                    {std::string(text) + ":" + std::to_string(port), fd, Listener::Kind::Proxy});
            } else {
                listeners_.push_back({"[::1]:" + std::to_string(port), fd, Listener::Kind::Proxy});
            }
            view_->proxy.emplace_back(addr, len);
        }
        ports_.push_back(port);
    }
    return true;
}

bool HostJail::start(const JailConfig& config, std::string& error) {
    config_ = config;
    config_.without_namespaces = true;
    if (!config_.user_notify) {
        error = "the jail without namespaces needs seccomp user notification with ADDFD (Linux 5.14)";
        return false;
    }
    // As in the namespace jail: what of 0-2 reaches past the jail (a Unix datagram socket, a socket of the
    // host's network) becomes /dev/null, and a Unix socket that stays takes no descriptors from its peer.
    if (!detail::replace_reaching_descriptors(error)) return false;
    if (!make_listeners(config_, error)) return false;
    // The run's own temporary directory (the command's TMPDIR, the one part of /tmp the notifier lets it
    // write, removed after the run): below the caller's TMPDIR where that is a directory outside the working
    // directory (another sandbox around cordon gives one; its /tmp may be read-only), else below /tmp; never
    // in the user's project.
    fs::path base = "/tmp";
    if (const char* tmpdir = std::getenv("TMPDIR"); tmpdir != nullptr && tmpdir[0] == '/') {
        std::error_code ec;
        const fs::path candidate = fs::weakly_canonical(tmpdir, ec);
        const fs::path cwd = fs::weakly_canonical(config_.cwd, ec);
        if (!ec && fs::is_directory(candidate, ec) && candidate != cwd && !below(candidate, cwd))
            base = candidate;
    }
    std::string tmpl = (base / "cordon-tmp-XXXXXX").string();
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        error = std::string("socketpair: ") + std::strerror(errno);
        return false;
    }
    const pid_t supervisor = ::getpid();
    janitor_ = ::fork();
    if (janitor_ == 0) tend_private_tmp(pair[1], supervisor, tmpl);
    ::close(pair[1]);
    janitor_sock_ = pair[0];
    if (janitor_ < 0) {
        error = std::string("fork: ") + std::strerror(errno);
        return false;
    }
    std::string tended(tmpl.size() + 16, '\0');
    ssize_t n;
    do
        n = ::read(janitor_sock_, tended.data(), tended.size());
    while (n < 0 && errno == EINTR);
    if (n != static_cast<ssize_t>(tmpl.size()) || tended[0] != '/') {
        const int err = n > 1 && tended[0] == '!' ? std::atoi(tended.c_str() + 1) : EIO;
        error = "cannot make the run's temporary directory in " + base.string() + ": " + std::strerror(err);
        return false;
    }
    tended.resize(tmpl.size());
    tmpl = tended;
    private_tmp_ = tmpl;
    if (config_.run_as && ::chown(tmpl.c_str(), config_.run_as->first, config_.run_as->second) != 0) {
        error = std::string("cannot give the run's temporary directory to the command's user: ") +
                std::strerror(errno);
        return false;
    }
    view_->private_tmp = private_tmp_.string();
    auto& env = config_.env;
    env.erase(std::remove_if(env.begin(), env.end(),
                             [](const std::string& e) { return e.compare(0, 7, "TMPDIR=") == 0; }),
              env.end());
    env.push_back("TMPDIR=" + private_tmp_.string());

    sigset_t set = detail::forwarded_signals(true);
    ::sigprocmask(SIG_BLOCK, &set, &old_mask_);
    sigfd_ = ::signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    report_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);  // never written: no init reports here
    if (sigfd_ < 0 || report_ < 0) {
        error = std::string("signalfd: ") + std::strerror(errno);
        return false;
    }
    // Why: no PID namespace hides the supervisor from the command, which runs as the same user: its
    // /proc/PID/mem, environ and fd (the secrets of --secret, the audit log) would be readable wherever
    // Landlock does not limit ptrace access. A process that is not dumpable is out of reach of another
    // without CAP_SYS_PTRACE.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        error =
            std::string("cannot become the subreaper of the command's processes: ") + std::strerror(errno);
        return false;
    }
    if (config.memory_bytes || config.max_pids) {
        LimitRequest request;
        request.memory_bytes = config.memory_bytes;
        // The keeper (keep()) is in the command's cgroup too: one process more than the command's.
        if (config.max_pids) request.max_pids = *config.max_pids + 1;
        request.command_is_host_root = ::getuid() == 0 && (!config.run_as || config.run_as->first == 0);
        request.best_effort = config.best_effort;
        auto made =
            JailLimits::create(request, read_cgroup_dirs(), config.id.empty() ? "cordon-jail" : config.id);
        if (auto* message = std::get_if<std::string>(&made)) {
            error = *message;
            return false;
        }
        limits_ = std::move(std::get<JailLimits>(made));
        if (!limits_.notice.empty()) say(limits_.notice);
    }
    return true;
}

std::optional<std::string> HostJail::configure(MountPlan plan, UnixSockets unix_sockets) {
    view_->all_unix_sockets = unix_sockets == UnixSockets::All;
    // The plan's environment changes; a file the namespace jail would mount over a system path (the trust
    // bundle over the system's CA file) is named by its own path instead.
    std::vector<std::string>& env = config_.env;
    for (const std::string& change : plan.env) {
        const std::size_t eq = change.find('=');
        const std::string name = change.substr(0, eq);
        env.erase(std::remove_if(
                      env.begin(), env.end(),
                      [&](const std::string& e) { return e.compare(0, name.size() + 1, name + "=") == 0; }),
                  env.end());
        if (eq != std::string::npos) env.push_back(change);
    }
    for (const MountOp& op : plan.ops)
        if (op.kind == MountKind::ReadOnlyLink && !op.source.empty())
            for (std::string& e : env)
                if (const std::size_t eq = e.find('=');
                    eq != std::string::npos && e.substr(eq + 1) == op.path.native())
                    e = e.substr(0, eq + 1) + op.source.string();

    // Landlock, built here (the child only restricts itself): the grants of the plan.
    const int abi = landlock_abi();
    const LandlockGrants grants = landlock_grants(plan, private_tmp_, abi);
    // Why: the supervisor performs the notified calls outside the command's Landlock domain, where nothing
    // is hidden: an open for writing (or any openat2) of a denyRead file, a rename or a link of it to a name
    // Landlock shows, would hand the command what the read rules hide (host_rules::hidden).
    if (grants.reads) view_->read_view = grants.shown;
    if (abi < 1 && grants.reads) {
        std::string rules;
        for (const auto& rule : grants.read_rules)
            rules += (rules.empty() ? "" : "; ") + rule;
        if (!config_.best_effort)
            return "the jail without namespaces enforces read rules with Landlock, which this kernel does "
                   "not "
                   "offer: cannot hide " +
                   rules + " (--best-effort runs without them)";
        say("warning: --best-effort: no Landlock: running without the read rules: " + rules);
    }
    if (abi >= 1) {
        RulesetAttr attr{grants.handled, 0, 0};
        std::size_t size = sizeof(std::uint64_t);
        if (abi >= 4) {
            // Every TCP connect and bind the command makes itself is refused: the supervisor makes those
            // the policy allows, on the caller's socket, outside the command's domain.
            attr.handled_access_net = kNetBindTcp | kNetConnectTcp;
            size = 2 * sizeof(std::uint64_t);
        }
        if (abi >= 6) {
            attr.scoped = kScopeAbstractUnix | kScopeSignal;
            size = sizeof attr;
        }
        ruleset_ = static_cast<int>(::syscall(SYS_landlock_create_ruleset, &attr, size, 0));
        if (ruleset_ < 0) return std::string("cannot create the Landlock ruleset: ") + std::strerror(errno);
        for (const LandlockGrant& grant : grants.grants)
            add_grant(ruleset_, grant);
        // The files behind fds 0-2 (a pty, a log file), reopened through /dev/stdout & co: written when
        // open for writing, read when open for reading (never more than the descriptor gives).
        for (int fd = 0; fd <= 2; ++fd) {
            int flags = ::fcntl(fd, F_GETFL);
            struct stat st {};
            if (flags < 0 || (flags & O_PATH) || ::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) continue;
            const int mode = flags & O_ACCMODE;
            std::uint64_t rights = mode == O_RDONLY ? 0 : file_rights(abi);
            if (mode != O_WRONLY) rights |= kReadFile;
            if (rights) add_grant(ruleset_, {"/proc/self/fd/" + std::to_string(fd), rights});
        }
        // The controlling terminal the command inherits, where none of fds 0-2 is it (`cmd < file`).
        if (auto tty = controlling_pty()) add_grant(ruleset_, {*tty, kReadFile | file_rights(abi)});
    } else if (config_.strict) {
        return std::string("this kernel has no Landlock (--strict)");
    }
    if (abi >= 1 && abi < 6 && config_.strict)
        return "Landlock ABI " + std::to_string(abi) +
               " has no signal and abstract-socket scoping (needs 6; --strict)";

    detail::Context ctx{config_, -1, {}, {}, ruleset_, detail::read_last_cap(), {}, {}, {}, {}};
    ctx.rlimit_as = limits_.rlimit_as;
    ctx.rlimit_nproc = limits_.rlimit_nproc;
    if (auto r = detail::compile_seccomp(config_, unix_sockets, ctx.seccomp))
        return "cannot build the seccomp filter: " + r->message();
    for (const std::string& a : config_.argv)
        ctx.argv.push_back(const_cast<char*>(a.c_str()));
    ctx.argv.push_back(nullptr);
    for (const std::string& e : env)
        ctx.envp.push_back(const_cast<char*>(e.c_str()));
    ctx.envp.push_back(nullptr);
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0)
        return std::string("socketpair: ") + std::strerror(errno);
    notify_sock_ = pair[0];
    ctx.notify_sock = pair[1];
    const pid_t parent = ::getpid();

    const fs::path private_tmp = private_tmp_;
    pid_t keeper = ::fork();
    if (keeper < 0) return std::string("fork: ") + std::strerror(errno);
    if (keeper == 0) {
        // The keeper (keep()): its signals stay blocked (the forwarded ones and SIGCHLD, as the
        // supervisor's), the one that says the supervisor is gone too, before it is asked for.
        sigset_t gone;
        sigemptyset(&gone);
        sigaddset(&gone, supervisor_gone_signal());
        ::sigprocmask(SIG_BLOCK, &gone, nullptr);
        ::prctl(PR_SET_PDEATHSIG, supervisor_gone_signal(), 0, 0, 0);
        // The supervisor's end: the read below ends (EOF) when the supervisor is gone before its word.
        ::close(notify_sock_);
        // The janitor may have been told that the keeper holds the TMPDIR as soon as the word was written
        // (before this process ran): a supervisor gone by then leaves its removal to the keeper.
        auto abandon = [&private_tmp]() {
            std::error_code ec;
            fs::remove_all(private_tmp, ec);
            ::_exit(kSetupFailed);
        };
        if (::getppid() != parent) abandon();
        if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) abandon();
        // Wait for the supervisor's word: the keeper's cgroup (--memory, --pids) is entered first, and the
        // command, forked after, is in it too.
        char go = 0;
        if (::read(ctx.notify_sock, &go, 1) != 1) abandon();
        const pid_t self = ::getpid();
        const pid_t command = ::fork();
        if (command < 0) abandon();
        if (command > 0) {
            // Nothing of the supervisor's stays open here (its listeners, the audit log, the terminal).
            ::syscall(SYS_close_range, 0U, ~0U, 0U);
            keep(command, parent, private_tmp);
        }
        // The command: system calls on prepared data only (the supervisor may have threads).
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (::getppid() != self) ::_exit(kSetupFailed);
        if (!run_steps(ctx, kHostCommandSteps)) ::_exit(kSetupFailed);
        ::execvpe(ctx.argv[0], ctx.argv.data(), ctx.envp.data());
        int err = errno;
        say("cannot run " + config_.argv[0] + ": " + std::strerror(err));
        ::_exit(err == ENOENT ? 127 : 126);
    }
    pid_ = keeper;
    ::close(pair[1]);
    if (auto message = limits_.enter(pid_)) {
        ::kill(pid_, SIGKILL);
        return *message;
    }
    const char go = 'g';
    if (::write(notify_sock_, &go, 1) != 1) {
        ::kill(pid_, SIGKILL);
        return std::string("cannot start the command: ") + std::strerror(errno);
    }
    // The keeper removes the TMPDIR from here on: the janitor ends without removing it.
    const char kept = 'k';
    if (::send(janitor_sock_, &kept, 1, MSG_NOSIGNAL) == 1) {
        int st = 0;
        while (::waitpid(janitor_, &st, 0) < 0 && errno == EINTR) {
        }
    }
    ::close(janitor_sock_);
    janitor_sock_ = -1;
    return std::nullopt;
}

}  // namespace
}  // namespace detail

std::variant<std::unique_ptr<Jail>, std::string> start_without_namespaces(const JailConfig& config) {
    auto jail = std::make_unique<detail::HostJail>();
    std::string error;
    if (!jail->start(config, error)) return error;
    return std::unique_ptr<Jail>(std::move(jail));
}

}  // namespace cordon::jail
