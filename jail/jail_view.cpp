// Paths in the jail's view (see detail/jail_view.hpp).
#include "jail/detail/jail_view.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "policy/path_components.hpp"

namespace cordon::jail::detail {

namespace path_components = policy::path_components;

namespace {

bool all_digits(const std::string& s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

}  // namespace

bool read_caller(pid_t pid, Caller& c) {
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/status", static_cast<int>(pid));
    Fd fd(::open(path, O_RDONLY | O_CLOEXEC));
    if (fd.fd < 0) return false;
    char buf[4096];
    ssize_t n = ::read(fd.fd, buf, sizeof buf - 1);
    if (n <= 0) return false;
    buf[n] = '\0';
    c.pid = pid;
    auto last_number = [](const char* line) {
        long v = -1;
        const char* p = line;
        while (*p && *p != '\n') {
            while (*p == ' ' || *p == '\t')
                ++p;
            if (*p >= '0' && *p <= '9') {
                v = std::strtol(p, const_cast<char**>(&p), 10);
            } else if (*p && *p != '\n') {
                ++p;
            }
        }
        return v;
    };
    bool uid = false, gid = false;
    for (char* line = buf; line && *line; line = std::strchr(line, '\n'), line = line ? line + 1 : nullptr) {
        if (std::strncmp(line, "Umask:", 6) == 0) {
            c.umask = static_cast<mode_t>(std::strtoul(line + 6, nullptr, 8));
        } else if (std::strncmp(line, "Uid:", 4) == 0) {
            c.fsuid = static_cast<uid_t>(last_number(line + 4));
            uid = true;
        } else if (std::strncmp(line, "Gid:", 4) == 0) {
            c.fsgid = static_cast<gid_t>(last_number(line + 4));
            gid = true;
        } else if (std::strncmp(line, "Groups:", 7) == 0) {
            const char* p = line + 7;
            while (*p && *p != '\n') {
                char* end = nullptr;
                unsigned long g = std::strtoul(p, &end, 10);
                if (end == p) {
                    ++p;
                    continue;
                }
                c.groups.push_back(static_cast<gid_t>(g));
                p = end;
            }
        } else if (std::strncmp(line, "Tgid:", 5) == 0) {
            c.tgid = std::strtol(line + 5, nullptr, 10);
        } else if (std::strncmp(line, "NStgid:", 7) == 0) {
            c.ns_tgid = last_number(line + 7);
        } else if (std::strncmp(line, "NSpid:", 6) == 0) {
            c.ns_pid = last_number(line + 6);
        }
    }
    return uid && gid;
}

// Reads a NUL-terminated string of the caller's memory (page by page: a path may end just before an unmapped
// page). 0 or an errno (EFAULT, ENAMETOOLONG).
int read_string(pid_t pid, std::uint64_t addr, std::string& out) {
    out.clear();
    const std::size_t page = 4096;
    char buf[4096];
    while (out.size() <= PATH_MAX) {
        std::size_t chunk = page - (addr % page);
        iovec local{buf, chunk};
        iovec remote{reinterpret_cast<void*>(addr), chunk};
        ssize_t n = ::process_vm_readv(pid, &local, 1, &remote, 1, 0);
        if (n <= 0) return errno == ESRCH ? ESRCH : EFAULT;
        const char* nul = static_cast<const char*>(std::memchr(buf, '\0', static_cast<std::size_t>(n)));
        if (nul) {
            out.append(buf, static_cast<std::size_t>(nul - buf));
            return out.size() >= PATH_MAX ? ENAMETOOLONG : 0;
        }
        out.append(buf, static_cast<std::size_t>(n));
        addr += static_cast<std::uint64_t>(n);
    }
    return ENAMETOOLONG;
}

std::string readlink_str(const std::string& path, int& err) {
    char buf[PATH_MAX + 1];
    ssize_t n = ::readlink(path.c_str(), buf, PATH_MAX);
    if (n < 0) {
        err = errno;
        return {};
    }
    err = 0;
    return std::string(buf, static_cast<std::size_t>(n));
}

// A path that reaches one of the caller's descriptors through a magic link (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N, /proc/<own pid>/fd/N): the descriptor's number. -1: not such a path; -2: a path inside
// another process's /proc directory (refused: we would open it with our own rights, not the caller's).
long magic_descriptor(const std::vector<std::string>& parts, const Caller& c) {
    if (parts.size() == 2 && parts[0] == "dev") {
        if (parts[1] == "stdin") return 0;
        if (parts[1] == "stdout") return 1;
        if (parts[1] == "stderr") return 2;
    }
    if (parts.size() == 3 && parts[0] == "dev" && parts[1] == "fd" && all_digits(parts[2]))
        return std::strtol(parts[2].c_str(), nullptr, 10);
    if (parts.size() < 2 || parts[0] != "proc") return -1;
    std::size_t i = 1;
    const std::string& who = parts[1];
    if (who == "self" || who == "thread-self") {
        i = 2;
    } else if (all_digits(who)) {
        long n = std::strtol(who.c_str(), nullptr, 10);
        if (n != c.ns_tgid && n != c.ns_pid) return -2;
        i = 2;
    } else {
        return -1;
    }
    if (i + 1 < parts.size() && parts[i] == "task" && all_digits(parts[i + 1])) i += 2;
    if (i + 2 == parts.size() && parts[i] == "fd" && all_digits(parts[i + 1]))
        return std::strtol(parts[i + 1].c_str(), nullptr, 10);
    return -1;
}

// The jail's root, opened once (every process of the jail has it: the command can neither chroot nor
// pivot_root).
int JailView::root(pid_t pid) {
    if (root_.fd < 0) {
        char path[64];
        std::snprintf(path, sizeof path, "/proc/%d/root", static_cast<int>(pid));
        root_ = Fd(::open(path, O_PATH | O_DIRECTORY | O_CLOEXEC));
    }
    return root_.fd;
}

// The absolute path (jail view) of `path` relative to `dirfd` of the caller. 0 or an errno.
int JailView::absolute(const Caller& c, int dirfd, const std::string& path, std::string& out) const {
    if (path.empty()) return ENOENT;
    if (path[0] == '/') {
        out = path;
        return 0;
    }
    char link[64];
    if (dirfd == AT_FDCWD)
        std::snprintf(link, sizeof link, "/proc/%d/cwd", static_cast<int>(c.pid));
    else
        std::snprintf(link, sizeof link, "/proc/%d/fd/%d", static_cast<int>(c.pid), dirfd);
    int err = 0;
    std::string base = readlink_str(link, err);
    if (err) return err == ENOENT && dirfd != AT_FDCWD ? EBADF : err;
    if (base.empty() || base[0] != '/') return ENOTDIR;  // a pipe, a socket, an anonymous inode
    static const std::string deleted = " (deleted)";
    if (base.size() > deleted.size() &&
        base.compare(base.size() - deleted.size(), deleted.size(), deleted) == 0)
        return ENOENT;
    out = base + "/" + path;
    return 0;
}

// Resolves `abs` in the jail's view to the directory holding its last component. `follow`: a symlink as
// the last component is followed (open without O_NOFOLLOW, truncate). 0 or an errno.
int JailView::resolve(const Caller& c, std::string abs, bool follow, Target& t) {
    int rootfd = root(c.pid);
    if (rootfd < 0) return EACCES;
    for (int hops = 0; hops < 40; ++hops) {
        std::vector<std::string> parts = path_components::split(abs);
        const bool has_dotdot = std::find(parts.begin(), parts.end(), "..") != parts.end();
        if (!has_dotdot) {
            long m = magic_descriptor(parts, c);
            if (m == -2) {
                t.other_process = true;
                return EACCES;
            }
            if (m >= 0) {
                t.magic = m;
                return 0;
            }
            // /proc/self names the caller, not us (we have no PID in the jail's namespace).
            if (parts.size() >= 2 && parts[0] == "proc" &&
                (parts[1] == "self" || parts[1] == "thread-self")) {
                if (parts[1] == "thread-self") {
                    parts[1] = std::to_string(c.ns_tgid);
                    parts.insert(parts.begin() + 2, {"task", std::to_string(c.ns_pid)});
                } else {
                    parts[1] = std::to_string(c.ns_tgid);
                }
            }
        }
        std::string parent;
        if (parts.empty()) {
            parent = "/";
            t.name = ".";
        } else if (parts.back() == "..") {
            parent = path_components::join(parts, parts.size());
            t.name = ".";
        } else {
            parent = path_components::join(parts, parts.size() - 1);
            t.name = parts.back();
        }
        open_how how{};
        how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
        // Without a symlink or ".." on the way, the directory's path is the one asked for: the kernel
        // need not be asked for it (most calls).
        how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_SYMLINKS;
        Fd dir;
        if (!has_dotdot) {
            dir = Fd(static_cast<int>(::syscall(SYS_openat2, rootfd, parent.c_str(), &how, sizeof how)));
            if (dir.fd < 0 && errno != ELOOP) return errno;
        }
        if (dir.fd >= 0) {
            t.dir_path = parent;
        } else {
            how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
            dir = Fd(static_cast<int>(::syscall(SYS_openat2, rootfd, parent.c_str(), &how, sizeof how)));
            if (dir.fd < 0) return errno;
            char self[64];
            std::snprintf(self, sizeof self, "/proc/self/fd/%d", dir.fd);
            int err = 0;
            t.dir_path = readlink_str(self, err);
            if (err) return err;
        }
        if (t.dir_path.empty() || t.dir_path[0] != '/') return EACCES;
        t.dir = std::move(dir);
        // Why: decided on the path resolved, not on its spelling: `/proc/1/../PID/mem` or a symlink to
        // `/proc/PID` reach another process's directory, which we would open with our own rights
        // (its memory read-write, whatever ptrace would allow), and `/proc/PID/fd/N` of the caller's own
        // is a magic link to reopen as its descriptor.
        if (t.dir_path == "/proc" || t.dir_path.compare(0, 6, "/proc/") == 0) {
            const long m = magic_descriptor(path_components::split(t.path()), c);
            if (m == -2) {
                t.other_process = true;
                return EACCES;
            }
            if (m >= 0) {
                t.magic = m;
                t.dir.reset();
                return 0;
            }
        }
        if (!follow || t.name == ".") return 0;
        char target[PATH_MAX + 1];
        ssize_t n = ::readlinkat(t.dir.fd, t.name.c_str(), target, PATH_MAX);
        if (n < 0) return 0;  // not a link (EINVAL), or missing (ENOENT): the call says
        std::string to(target, static_cast<std::size_t>(n));
        abs = to[0] == '/' ? to : (t.dir_path == "/" ? "" : t.dir_path) + "/" + to;
    }
    return ELOOP;
}

}  // namespace cordon::jail::detail
