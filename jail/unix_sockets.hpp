// allowUnixSockets: per-path Unix sockets through the seccomp user notification (see notify.hpp and
// jail/README.md). With a non-empty list the filter notifies connect and bind of every family (the address is
// in memory, which the filter cannot read). The supervisor copies the address once, takes the caller's
// socket (pidfd_getfd: the same open file) and performs the call itself with its copy, so another thread of
// the caller rewriting the address changes nothing. A filesystem address is resolved in the jail's view
// (symlinks followed): connect only when the socket file found is one of the listed paths (resolved the same
// when the run started: see Pinned), bind only where the write rules allow creating the name. Other addresses
// (AF_INET/AF_INET6, abstract and unnamed Unix addresses) are performed as given: the socket's own network
// namespace confines them.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "policy/policy.hpp"

namespace cordon::jail::unix_sockets {

// The listed paths, `~` and `~/...` expanded with `home`; entries that are still not absolute are dropped.
std::vector<std::string> listed_paths(const std::vector<policy::Rule>& rules, const std::string& home);

// Copies the caller's address (`len` bytes at `addr` of process `pid`). 0 or an errno (EINVAL as the kernel
// for a length over sizeof(sockaddr_storage), EFAULT).
int read_address(pid_t pid, std::uint64_t addr, std::uint64_t len, sockaddr_storage& out, socklen_t& out_len);

// A descriptor for the caller's descriptor `fd` (thread `tid` of process `tgid`, our PID namespace): the same
// open file. -1 with errno.
int take_socket(pid_t tid, pid_t tgid, int fd);

// The file system path of an AF_UNIX address; nothing for an unnamed or abstract address or another family.
std::optional<std::string> filesystem_path(const sockaddr_storage& addr, socklen_t len);

// The supervisor holds capabilities over the jail's network namespace (it owns it, or is root) that the
// command does not: what of an address performed for the caller would need them. 0, or the errno the kernel
// gives the command: EACCES for a port below 1024 (ip_unprivileged_port_start of a new namespace, which the
// command cannot change), EPERM for a netlink connect to a group or a port id, EPERM for families the jail
// never creates (a socket handed in).
int needs_privilege(const sockaddr_storage& addr, socklen_t len, bool connecting);

// A listed socket as the entry named it when the run started: the file, opened (O_PATH) in the
// supervisor's view with symlinks followed, and its identity. Why: a listed path inside a writable area can
// be renamed away and replaced by a symlink to any other socket; what the entry named at the start is what
// the user listed.
struct Pinned {
    std::string path;
    int fd = -1;  // owned by the notifier for the run
    dev_t dev = 0;
    ino_t ino = 0;
};
// The listed paths that are sockets now (the others are left out: nothing reaches them during the run).
std::vector<Pinned> pin_listed(const std::vector<std::string>& listed);

// Resolves `path` (absolute, jail view) in the jail's root `rootfd`, following symlinks, and when the file it
// reaches is one of `pinned` (same device and inode), sets `target` to a new O_PATH descriptor of that pinned
// file. 0, EPERM for any other file, or the lookup's errno for a listed path that does not resolve in the
// jail's view.
int open_listed(int rootfd, const std::string& path, const std::vector<Pinned>& pinned,
                const std::vector<std::string>& listed, int& target);

// Opens `path` (absolute, jail view) in the jail's root `rootfd`, O_PATH, following symlinks but no magic
// link (/proc/self there would be the supervisor). The descriptor, or -1 with errno.
int open_path(int rootfd, const std::string& path);

// SO_PASSRIGHTS (Linux 6.16; the number of x86, arm and the generic ABI where the headers lack it).
#ifdef SO_PASSRIGHTS
constexpr int kSoPassRights = SO_PASSRIGHTS;
#else
constexpr int kSoPassRights = 83;
#endif

// Turns off SO_PASSRIGHTS on `sock`: its peer's SCM_RIGHTS messages are refused (EPERM to the sender). Why: a
// descriptor handed in from outside the jail reaches what it points to whatever the jail's view, network and
// filter say; a Unix datagram socket among them would send to (sendto/sendmsg with an address, which lives
// in memory the filter cannot read, or connect) any socket file the command can see, and a socket of the
// host's network past the proxy. Set on each jailed socket before the supervisor connects it to a listed
// socket, and on the connected Unix sockets the command inherits on 0-2 (descriptors.cpp); the filter refuses
// the command's own SO_PASSRIGHTS. 0 or an errno (ENOPROTOOPT before Linux 6.16).
int refuse_descriptors(int sock);
// Whether this kernel has SO_PASSRIGHTS (Linux 6.16): without it a listed service can hand the jail
// descriptors (the run says so once; jail/README.md, limits). Probed once, on a socketpair of its own.
bool kernel_refuses_descriptors();

// connect(2) of `sock` to the socket file open as `target` (through /proc/self/fd: no sun_path length limit,
// and exactly the file that was checked). 0 or an errno (EINPROGRESS for a non-blocking socket).
int connect_to(int sock, int target);

// bind(2) of `sock` to `name` in the directory `dirfd`: the calling thread (its own file system context,
// unshare(CLONE_FS)) changes to the directory. 0 or an errno.
int bind_at(int sock, int dirfd, const std::string& name);

// The process that connects to listed sockets for one identity of the jail's callers (all its uids and gids
// the caller's, its groups the caller's). Why a process: a listener reads the peer's credentials from the
// connecting *process* (SO_PEERCRED's pid, SO_PEERPIDFD, then /proc/PID/status), not only the connecting
// thread's effective ids; a root supervisor that switched a thread's ids would still be a root process to a
// service that authorises by its peer's process (polkit's unix-process subject). The connector is forked by
// the supervisor when a caller whose ids differ from the supervisor's first connects to a listed socket, and
// lives as long as the run: a listener may look at /proc/PID after accept.
//   - It holds nothing but its end of a socketpair (every other descriptor closed at once), takes each
//     caller socket and the pinned socket file over SCM_RIGHTS, connects through /proc/self/fd (exactly the
//     file pinned at start), answers the errno and closes both.
//   - It cannot be ptraced or read by anyone but root: not dumpable (set after the id change, which resets
//     it anyway). The jailed command cannot name it: it lives in the host's PID namespace, outside the jail's
//     /proc; signals and ptrace from the jail are refused by the namespace (and seccomp, Landlock scoping).
//   - It dies with the run: the socketpair's end of file (the supervisor exited or dropped it, also after
//     SIGKILL) and PR_SET_PDEATHSIG (the forking thread is the notifier's receive thread, which lives as long
//     as the run).
//   - Each connect runs under a deadline (an interval timer, SIGALRM without SA_RESTART): a listener whose
//     backlog is full holds it for at most `deadline`, after which the connect is abandoned (EINTR) and may
//     be tried again. One request at a time.
class Connector {
  public:
    struct Identity {
        uid_t uid = 0;
        gid_t gid = 0;
        std::vector<gid_t> groups;
        bool operator==(const Identity&) const = default;
    };
    // Forks the connector. Null with errno when it could not be made.
    static std::shared_ptr<Connector> spawn(const Identity& who);
    ~Connector();
    Connector(const Connector&) = delete;
    Connector& operator=(const Connector&) = delete;

    // Connects `sock` to the socket file open as `target`, in the connector, within `deadline`; waits at
    // most `queue` for a request before this one to finish. 0 or the connect's errno; EINTR when the
    // deadline or the queue wait passed (nothing connected; may be tried again); ECONNREFUSED when the
    // connector is gone (it is not replaced by this call: see alive()). A request that `Yields` (a blocking
    // connect's retry, which a full backlog may keep coming back) steps aside, EINTR at once, while one that
    // does not (a non-blocking connect, answered on the supervisor's receive thread) waits for its turn: on a
    // loaded machine the retries' turns otherwise kept a connect to a free listener waiting past its queue
    // wait, answered EAGAIN where the kernel connects at once.
    enum class Turn { Waits, Yields };
    int connect(int sock, int target, std::chrono::nanoseconds deadline, std::chrono::nanoseconds queue,
                Turn turn);
    bool alive() const;
    pid_t pid() const { return pid_; }
    const Identity& identity() const { return who_; }

  private:
    Connector(Identity who, pid_t pid, int fd) : who_(std::move(who)), pid_(pid), fd_(fd) {}
    void fail();  // kills and reaps it: a connector that does not answer is not trusted again
    Identity who_;
    pid_t pid_ = -1;
    int fd_ = -1;
    std::timed_mutex mutex_;  // one request at a time
    std::atomic<bool> dead_{false};
    std::atomic<int> waiting_{0};  // requests with Turn::Waits waiting for the mutex
};

}  // namespace cordon::jail::unix_sockets
