// Paths in the jail's view, for the supervisor's notifier (jail/notify.cpp): what a caller of the jail is
// (its credentials and ids, read from /proc/PID/status), a string of its memory, and where a path it names
// lands: made absolute from its working directory or a directory descriptor, then resolved from the jail's
// root with openat2(RESOLVE_IN_ROOT) (the jail's mounts apply), symlinks followed by the kernel, magic links
// and another process's /proc directory recognised on the path resolved. The notifier decides and performs
// the call on the directory descriptor found (Target), so a path changed after the decision changes nothing.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

namespace cordon::jail::detail {

// A descriptor closed when it goes out of scope.
struct Fd {
    int fd = -1;
    Fd() = default;
    explicit Fd(int f) : fd(f) {}
    Fd(const Fd&) = delete;
    Fd& operator=(const Fd&) = delete;
    Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
    Fd& operator=(Fd&& o) noexcept {
        if (this != &o) {
            reset();
            fd = o.fd;
            o.fd = -1;
        }
        return *this;
    }
    ~Fd() { reset(); }
    void reset() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
};

// What the kernel's /proc/PID/status says of the caller: its credentials for file system access, its umask,
// its ids in the jail's PID namespace (for /proc/self).
struct Caller {
    pid_t pid = 0;   // the thread, in our PID namespace
    long tgid = -1;  // the process, in our PID namespace
    long ns_tgid = -1, ns_pid = -1;
    uid_t fsuid = 0;
    gid_t fsgid = 0;
    std::vector<gid_t> groups;
    mode_t umask = 022;
};

// Reads the caller's status (thread `pid`, our PID namespace). False when it is gone.
bool read_caller(pid_t pid, Caller& c);

// Reads a NUL-terminated string of the caller's memory (page by page: a path may end just before an unmapped
// page). 0 or an errno (EFAULT, ENAMETOOLONG, ESRCH).
int read_string(pid_t pid, std::uint64_t addr, std::string& out);

// readlink(2) into a string; `err` 0 or the errno.
std::string readlink_str(const std::string& path, int& err);

// A path that reaches one of the caller's descriptors through a magic link (/dev/stdout, /dev/fd/N,
// /proc/self/fd/N, /proc/<own pid>/fd/N): the descriptor's number. -1: not such a path; -2: a path inside
// another process's /proc directory (refused: we would open it with our own rights, not the caller's).
long magic_descriptor(const std::vector<std::string>& parts, const Caller& c);

// What a path names for a call: the directory that holds its last component (opened, so the call lands in
// exactly the directory that was checked), that directory's path in the jail's view, and the name.
struct Target {
    Fd dir;
    std::string dir_path;
    std::string name;
    long magic = -1;  // a caller's descriptor reached through a magic link (see magic_descriptor)
    // Set with resolve's EACCES for a path inside another process's /proc directory (magic_descriptor -2).
    bool other_process = false;
    std::string path() const {
        if (name == ".") return dir_path;
        return dir_path == "/" ? "/" + name : dir_path + "/" + name;
    }
};

// The jail's root and the lookups from it.
class JailView {
  public:
    // The jail's root, opened once from the first caller (every process of the jail has it: the command can
    // neither chroot nor pivot_root). -1 when it cannot be opened.
    int root(pid_t pid);
    int root_fd() const { return root_.fd; }
    // The absolute path (jail view) of `path` relative to `dirfd` of the caller. 0 or an errno.
    int absolute(const Caller& c, int dirfd, const std::string& path, std::string& out) const;
    // Resolves `abs` in the jail's view to the directory holding its last component. `follow`: a symlink as
    // the last component is followed (open without O_NOFOLLOW, truncate). 0 or an errno.
    int resolve(const Caller& c, std::string abs, bool follow, Target& t);

  private:
    Fd root_;
};

}  // namespace cordon::jail::detail
