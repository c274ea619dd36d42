// The trials run in forked children whose findings land in a shared anonymous page, so that a child that
// hangs (a notification nobody answers) or dies still leaves what it found before; each is killed after a
// timeout. The caller is expected to be single-threaded (cordon doctor is).
#include "jail/probe.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

#include "jail/cgroup.hpp"
#include "jail/detail/setup.hpp"
#include "jail/notify.hpp"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_restrict_self 446
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

namespace cordon::jail {

namespace {

using namespace std::chrono_literals;

std::optional<std::string> read_text(const char* path) {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::optional<long> read_number(const char* path) {
    auto text = read_text(path);
    if (!text) return std::nullopt;
    char* end = nullptr;
    long v = std::strtol(text->c_str(), &end, 10);
    if (end == text->c_str()) return std::nullopt;
    return v;
}

std::string trim(std::string s) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0'))
        s.pop_back();
    return s;
}

// "Field:\tvalue" of /proc/self/status.
std::string status_field(const std::string& status, const std::string& field) {
    auto at = status.find("\n" + field + ":");
    if (at == std::string::npos) return "";
    at += field.size() + 2;
    auto end = status.find('\n', at);
    std::string v = status.substr(at, end - at);
    v.erase(0, v.find_first_not_of(" \t"));
    return v;
}

// Runs fn(T&) in a forked child with T in a page shared with us; returns T as the child left it (killed
// after `timeout`).
template <typename T>
T in_child(T initial, void (*fn)(T&), std::chrono::milliseconds timeout) {
    void* page = ::mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED) return initial;
    T* shared = new (page) T(initial);
    pid_t pid = ::fork();
    if (pid == 0) {
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        fn(*shared);
        ::_exit(0);
    }
    if (pid > 0) {
        // Polled rather than waited for: a child that hangs is killed at the deadline (pidfd_open may itself
        // be refused by a container's filter).
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        int st = 0;
        while (::waitpid(pid, &st, WNOHANG) == 0) {
            if (std::chrono::steady_clock::now() >= deadline) {
                ::kill(pid, SIGKILL);
                ::waitpid(pid, &st, 0);
                break;
            }
            std::this_thread::sleep_for(1ms);
        }
    }
    T out = *shared;
    shared->~T();
    ::munmap(page, sizeof(T));
    return out;
}

int err_of(long rc) {
    return rc < 0 ? errno : 0;
}

// The namespace jail's needs, in the order the jail meets them. Plain data: it crosses the shared page.
struct NamespaceTrial {
    uid_t uid;
    gid_t gid;
    int user_ns, id_maps, mount_ns, mounts, net_ns, loopback, nftables, other_ns, pid_ns, proc_mount;
    char mounts_step[64];
    char nftables_error[256];
};

bool write_file(const char* path, const std::string& text) {
    int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    int saved = errno;
    ::close(fd);
    errno = saved;
    return ok;
}

void copy_message(char* out, std::size_t size, const std::string& text) {
    std::snprintf(out, size, "%s", text.c_str());
}

void try_namespaces(NamespaceTrial& t) {
    if ((t.user_ns = err_of(::unshare(CLONE_NEWUSER))) != 0) return;
    // As the jail's init does for a caller without --user: this uid and gid become 0 inside.
    bool maps = write_file("/proc/self/setgroups", "deny") &&
                write_file("/proc/self/uid_map", "0 " + std::to_string(t.uid) + " 1\n") &&
                write_file("/proc/self/gid_map", "0 " + std::to_string(t.gid) + " 1\n");
    if ((t.id_maps = maps ? 0 : errno) != 0) return;

    if ((t.mount_ns = err_of(::unshare(CLONE_NEWNS))) == 0) {
        // Everything below happens in this child's own mount namespace, which nobody else sees.
        const char* dir = ::access("/tmp", F_OK) == 0 ? "/tmp" : "/";
        struct Step {
            const char* name;
            const char *source, *target, *type;
            unsigned long flags;
        } steps[] = {
            {"make / private", nullptr, "/", nullptr, MS_REC | MS_PRIVATE},
            {"mount a tmpfs", "tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV},
            {"bind mount", dir, dir, nullptr, MS_BIND},
            {"remount a bind read-only", nullptr, dir, nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY},
        };
        t.mounts = 0;
        for (const auto& s : steps) {
            if (::mount(s.source, s.target, s.type, s.flags, nullptr) != 0) {
                t.mounts = errno;
                copy_message(t.mounts_step, sizeof t.mounts_step, s.name);
                break;
            }
        }
    }

    if ((t.net_ns = err_of(::unshare(CLONE_NEWNET))) == 0) {
        JailConfig config;
        config.transparent_port = 9;  // any port: nothing connects
        detail::Context ctx{config, -1, {}, {}, -1, 63, {}, {}, {}, {}};
        detail::Result r = detail::bring_up_loopback(ctx);
        t.loopback = r ? (r->err ? r->err : EPERM) : 0;
        if (!r) {
            r = detail::redirect_to_proxy(ctx);
            t.nftables = r ? (r->err ? r->err : EPERM) : 0;
            if (r) copy_message(t.nftables_error, sizeof t.nftables_error, r->message());
        }
    }
    t.other_ns = err_of(::unshare(CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP));

    if ((t.pid_ns = err_of(::unshare(CLONE_NEWPID))) != 0) return;
    // The first child is the new namespace's init; it mounts the fresh /proc the jail gives its command.
    pid_t init = ::fork();
    if (init < 0) {
        t.pid_ns = errno;
        return;
    }
    if (init == 0) {
        int rc = t.mount_ns == 0
                     ? err_of(::mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr))
                     : kNotTried;
        ::_exit(rc < 0 ? 255 : rc);
    }
    int st = 0;
    if (::waitpid(init, &st, 0) == init && WIFEXITED(st))
        t.proc_mount = WEXITSTATUS(st) == 255 ? kNotTried : WEXITSTATUS(st);
}

// A filter that sends getppid to a listener, which another thread of the process (not under the filter)
// answers by injecting /dev/null: what the notifier does for every open it performs for the jail.
struct SeccompTrial {
    int filter, notif, addfd;
};

#if defined(__x86_64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kArch = AUDIT_ARCH_AARCH64;
#else
#error "add this architecture's AUDIT_ARCH"
#endif

long install(sock_filter* code, unsigned short len, unsigned flags) {
    sock_fprog prog{len, code};
    return ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

void try_seccomp(SeccompTrial& t) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        t.filter = errno;
        return;
    }
    sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    if ((t.filter = err_of(install(allow, 1, 0))) != 0) return;

    std::atomic<int> listener{-1};
    std::atomic<bool> give_up{false};
    std::thread answer([&] {
        int fd;
        while ((fd = listener.load()) < 0) {
            if (give_up.load()) return;
            std::this_thread::yield();
        }
        seccomp_notif req{};
        if (::ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return;
        int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        seccomp_notif_addfd add{};
        add.id = req.id;
        add.flags = SECCOMP_ADDFD_FLAG_SEND;
        add.srcfd = static_cast<__u32>(devnull);
        if (::ioctl(fd, SECCOMP_IOCTL_NOTIF_ADDFD, &add) < 0) {
            t.addfd = errno;
            seccomp_notif_resp resp{};
            resp.id = req.id;
            resp.error = -ENOSYS;
            ::ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
        }
        ::close(devnull);
    });
    sock_filter notify[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kArch, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    long fd = install(notify, sizeof notify / sizeof notify[0], SECCOMP_FILTER_FLAG_NEW_LISTENER);
    t.notif = fd < 0 ? errno : 0;
    if (fd < 0) {
        give_up = true;
        answer.join();
        return;
    }
    listener = static_cast<int>(fd);
    long got = ::syscall(SYS_getppid);  // answered by the thread: the injected descriptor
    struct stat st {};
    if (got >= 0 && ::fstat(static_cast<int>(got), &st) == 0 && S_ISCHR(st.st_mode) &&
        st.st_rdev == makedev(1, 3))
        t.addfd = 0;
    else if (t.addfd == kNotTried)
        t.addfd = got < 0 ? errno : EINVAL;
    answer.join();
}

struct LandlockTrial {
    int restrict_self;
};

void try_landlock(LandlockTrial& t) {
    if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        t.restrict_self = errno;
        return;
    }
    // The first ABI's attribute: every later kernel accepts it.
    std::uint64_t handled = LANDLOCK_ACCESS_FS_READ_FILE;
    long fd = ::syscall(SYS_landlock_create_ruleset, &handled, sizeof handled, 0);
    if (fd < 0) {
        t.restrict_self = errno;
        return;
    }
    t.restrict_self = err_of(::syscall(SYS_landlock_restrict_self, fd, 0));
}

// pidfd_getfd of a child's descriptor, as the notifier takes a jailed process's socket.
int try_pidfd_getfd() {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) return errno;
    pid_t child = ::fork();
    if (child == 0) {
        ::close(p[1]);
        char c;
        while (::read(p[0], &c, 1) < 0 && errno == EINTR) {
        }
        ::_exit(0);
    }
    int result = child < 0 ? errno : 0;
    if (child > 0) {
        int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, child, 0));
        if (pidfd < 0) {
            result = errno;
        } else {
            long fd = ::syscall(SYS_pidfd_getfd, pidfd, p[0], 0);
            result = fd < 0 ? errno : 0;
            if (fd >= 0) ::close(static_cast<int>(fd));
            ::close(pidfd);
        }
    }
    ::close(p[1]);
    ::close(p[0]);
    if (child > 0) ::waitpid(child, nullptr, 0);
    return result;
}

// As the namespace-free jail chooses the base of the run's temporary directory.
std::string run_tmp_base() {
    namespace fs = std::filesystem;
    const char* tmpdir = std::getenv("TMPDIR");
    if (tmpdir == nullptr || tmpdir[0] != '/') return "/tmp";
    std::error_code ec;
    const fs::path candidate = fs::weakly_canonical(tmpdir, ec);
    const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
    if (ec || !fs::is_directory(candidate, ec) || candidate == cwd) return "/tmp";
    const std::string c = candidate.string(), w = cwd.string();
    if (c.size() > w.size() && c.compare(0, w.size(), w) == 0 && (w == "/" || c[w.size()] == '/'))
        return "/tmp";
    return c;
}

bool identity_map(const std::string& uid_map) {
    std::istringstream in(uid_map);
    unsigned long inside = 1, outside = 1, count = 0;
    in >> inside >> outside >> count;
    return inside == 0 && outside == 0 && count == 4294967295UL;
}

void read_cgroups(HostFacts& f) {
    std::error_code ec;
    if (std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers", ec)) {
        f.cgroup_version = 2;
    } else if (std::filesystem::exists("/sys/fs/cgroup/memory", ec)) {
        f.cgroup_version = 1;
    }
    CgroupDirs dirs = read_cgroup_dirs();
    if (f.cgroup_version == 2 && !dirs.unified.empty()) {
        f.cgroup_dir = dirs.unified.string();
        std::string offered = read_text((dirs.unified / "cgroup.controllers").c_str()).value_or("");
        bool both = offered.find("memory") != std::string::npos && offered.find("pids") != std::string::npos;
        f.cgroup_delegated = both && ::access(dirs.unified.c_str(), W_OK) == 0;
    } else if (f.cgroup_version == 1) {
        f.cgroup_dir = dirs.v1_memory.string();
        f.cgroup_delegated = !dirs.v1_memory.empty() && ::access(dirs.v1_memory.c_str(), W_OK) == 0;
    }
}

}  // namespace

HostFacts probe_host() {
    HostFacts f;
    utsname u{};
    if (::uname(&u) == 0) f.kernel = u.release;
    f.euid = ::geteuid();
    std::string status = read_text("/proc/self/status").value_or("");
    f.cap_effective = std::strtoull(status_field(status, "CapEff").c_str(), nullptr, 16);
    f.cap_bounding = std::strtoull(status_field(status, "CapBnd").c_str(), nullptr, 16);
    f.seccomp_mode = std::atoi(status_field(status, "Seccomp").c_str());
    f.no_new_privs = status_field(status, "NoNewPrivs") == "1";
    f.nested_user_namespace = !identity_map(read_text("/proc/self/uid_map").value_or(""));
    f.pid1 = trim(read_text("/proc/1/comm").value_or(""));
    const char* srt = std::getenv("SANDBOX_RUNTIME");
    f.sandbox_runtime = srt && std::string(srt) == "1";
    std::error_code ec;
    f.container = std::filesystem::exists("/.dockerenv", ec) ||
                  std::filesystem::exists("/run/.containerenv", ec) || std::getenv("container") != nullptr;
    f.unprivileged_userns_clone = read_number("/proc/sys/kernel/unprivileged_userns_clone");
    f.max_user_namespaces = read_number("/proc/sys/user/max_user_namespaces");
    f.apparmor_restrict_userns = read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    f.apparmor_enabled = trim(read_text("/sys/module/apparmor/parameters/enabled").value_or("")) == "Y";
    auto label = read_text("/proc/self/attr/apparmor/current");
    if (!label) label = read_text("/proc/self/attr/current");
    f.apparmor_label = trim(label.value_or(""));
    f.self_exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
    f.apparmor_profile_installed = std::filesystem::exists("/etc/apparmor.d/cordon", ec);

    NamespaceTrial nt{};
    nt.uid = ::geteuid();
    nt.gid = ::getegid();
    for (int* v : {&nt.user_ns, &nt.id_maps, &nt.mount_ns, &nt.mounts, &nt.net_ns, &nt.loopback, &nt.nftables,
                   &nt.other_ns, &nt.pid_ns, &nt.proc_mount})
        *v = kNotTried;
    nt = in_child(nt, try_namespaces, 5000ms);
    f.user_ns = nt.user_ns;
    f.id_maps = nt.id_maps;
    f.mount_ns = nt.mount_ns;
    f.mounts = nt.mounts;
    f.mounts_step = nt.mounts_step;
    f.net_ns = nt.net_ns;
    f.loopback = nt.loopback;
    f.nftables = nt.nftables;
    f.nftables_error = nt.nftables_error;
    f.ipc_uts_cgroup_ns = nt.other_ns;
    f.pid_ns = nt.pid_ns;
    f.proc_mount = nt.proc_mount;

    SeccompTrial st = in_child(SeccompTrial{kNotTried, kNotTried, kNotTried}, try_seccomp, 2000ms);
    f.seccomp_filter = st.filter;
    f.user_notif = st.notif;
    f.addfd = st.addfd;
    f.notify_switched_off = !user_notification_supported();
    f.pidfd_getfd = try_pidfd_getfd();

    long abi = ::syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    f.landlock_abi = abi < 0 ? 0 : static_cast<int>(abi);
    f.landlock_errno = abi < 0 ? errno : 0;
    if (f.landlock_abi > 0)
        f.landlock_restrict = in_child(LandlockTrial{kNotTried}, try_landlock, 2000ms).restrict_self;

    f.run_tmp_base = run_tmp_base();
    std::string tmpl = f.run_tmp_base + "/cordon-doctor-XXXXXX";
    f.run_tmp = ::mkdtemp(tmpl.data()) == nullptr ? errno : 0;
    if (f.run_tmp == 0) ::rmdir(tmpl.c_str());

    read_cgroups(f);
    return f;
}

}  // namespace cordon::jail
