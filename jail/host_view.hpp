// What the supervisor's notifier must know when the command runs without namespaces (the namespace-free
// jail, landlock_jail.hpp): it then shares the host's mount and network namespaces with the command, so the
// jail's private /tmp, /dev and /proc and its network namespace no longer confine what it performs.
#pragma once

#include <sys/socket.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace cordon::jail {

struct HostView {
    // The run's own temporary directory (the command's TMPDIR): the one part of the host's /tmp it may
    // write. The policy's default "/tmp" rule means the jail's private /tmp, which this replaces.
    std::string private_tmp;
    // The proxy's listeners: the only AF_INET/AF_INET6 addresses the supervisor connects a caller's socket
    // to (an address of the host's network, which no namespace confines any more).
    std::vector<std::pair<sockaddr_storage, socklen_t>> proxy;
    // Host ports (`--host-port`): a connect to `from` (127.0.0.1:PORT or [::1]:PORT of a listed port) is made
    // to `to` instead, the supervisor's forward on the host's loopback, which relays it to `from` and writes
    // its audit lines (run/ports.cpp). Nothing else of the host's loopback is reachable.
    struct Redirect {
        sockaddr_storage from{}, to{};
    };
    std::vector<Redirect> host_ports;
    // allowAllUnixSockets: a Unix connect is performed as asked (abstract addresses included), but to a
    // session's control socket.
    bool all_unix_sockets = false;
    // Where read rules apply (denyRead, the project read scope): the paths the namespace jail would mount,
    // shown (true) or hidden (false), the deepest at or above a path deciding (LandlockGrants::shown).
    // Empty: nothing is hidden. The command's Landlock domain hides the rest from its own calls, not from
    // the supervisor's.
    std::map<std::string, bool> read_view;
};

// The notifier's rules for that view (jail/host_rules.cpp), each 0 when the call may go on, else the errno.
// Its write rules are entries of policy/write_rules.hpp (the landlock ones).
namespace host_rules {

// An open for writing of the pseudo-terminal `pty` (its device number) by process `caller`: the host's
// /dev/pts holds the user's other terminals (a shell's, an editor's, sudo's prompt), where the namespace
// jail has a devpts of its own. Allowed when it is the caller's own controlling terminal, or no process's
// (one the run just made, before a session takes it); EACCES when it is another session's terminal.
int terminal(pid_t caller, dev_t pty);

// Whether a notified call may not touch `path` (resolved, absolute) for the read rules: it lies in what they
// hide, or it is a directory holding something they hide (moved or linked elsewhere, that would be shown).
// The namespace jail's masks are mount points there (EBUSY, and an open finds the empty mask).
bool hidden(const HostView& view, const std::string& path);

// connect(2) of an AF_INET/AF_INET6/AF_UNIX address that names no file: only to the proxy's listeners
// (AF_UNSPEC dissolves an association and is allowed), or to a listed host port, whose address is then
// rewritten to its forward (HostView::host_ports); EPERM otherwise, as the namespace jail's firewall.
int connect(const HostView& view, sockaddr_storage& addr, socklen_t len);

// Sessions' registry: whatever its XDG_RUNTIME_DIR, every session of `uid` makes an entry named
// session_registry_entry(its socket's device and inode) in session_registry(uid) before its socket accepts a
// connection (run/session.cpp), and removes it after the socket is gone. `/run/cordon/sessions` for root,
// `/tmp/cordon-UID/sessions` for any other uid: fixed paths, so that a run finds every session of a uid
// whatever its own environment says, and reads one name there instead of listing directories.
std::string session_registry(uid_t uid);
std::string session_registry_entry(dev_t dev, ino_t ino);

// A connect performed with the effective uid `as` (the caller's) to the socket file open as `fd` (O_PATH):
// EACCES when it is a registered session's control socket, or when the registry cannot tell (fail closed);
// else 0. Why: a session serves any process of the host with its uid (SO_PEERCRED and the pid namespace are
// all it can see), and the supervisor or connector performing a jailed command's connect is one; by device
// and inode, so a rename, hard link, symlink or /proc path elsewhere is no way around it.
int session_socket(int fd, uid_t as);

// bind(2) of an AF_INET/AF_INET6 address: only loopback (127.0.0.0/8, ::1), as in the namespace jail whose
// network has nothing else; EADDRNOTAVAIL otherwise. Other families: 0.
int bind(const sockaddr_storage& addr, socklen_t len);

// listen(2) on the socket `fd` (the caller's, taken over): an AF_INET/AF_INET6 socket only when bound to
// loopback (an unbound one would be bound to every address by listen itself); EADDRNOTAVAIL otherwise.
int listen(int fd);

// unix_sockets::take_socket, with CAP_SYS_PTRACE effective for the call where the thread holds it in its
// permitted set: the notifier's threads act with the caller's rights otherwise, and a command run as another
// user (--user) is not ours to take a descriptor from without it.
int take_socket(pid_t tid, pid_t tgid, int fd);

// Where pidfd_getfd is refused to the supervisor (Docker's default seccomp profile): the file that descriptor
// `fd` of process `pid` names, opened O_PATH through its /proc/PID/fd magic link (the same file, not the
// same open file description). The descriptor or -1 (errno).
int reopen_descriptor(pid_t pid, int fd);

// The file status flags of descriptor `fd` of process `pid` (its /proc/PID/fdinfo), or -1.
int descriptor_flags(pid_t pid, int fd);

// A connect that connect() allowed, where the caller's socket cannot be taken (pidfd_getfd refused, as by
// Docker's default seccomp profile without CAP_SYS_ADMIN): a new socket of the supervisor's, connected to
// `addr`, replaces the caller's descriptor `fd` (SECCOMP_IOCTL_NOTIF_ADDFD with SETFD, the caller's
// O_NONBLOCK and close-on-exec kept) for the notification `id` of process `pid` on `listener`. 0 (answer
// the connect with success) or an errno.
int connect_by_replacement(int listener, std::uint64_t id, pid_t pid, int fd, const sockaddr_storage& addr,
                           socklen_t len);

}  // namespace host_rules

}  // namespace cordon::jail
