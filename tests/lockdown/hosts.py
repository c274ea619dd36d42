#!/usr/bin/python3
"""Locked-down Linux hosts, simulated on this machine without a reboot and without changing a sysctl, so that a
test can run a command (cordon) where the namespace jail cannot be had. Each simulation is a Host whose argv(cmd)
is the command line that runs cmd there; the caller runs it as it likes (subprocess.run, Popen, its own env, cwd
and stdin). Needs root (the simulations drop what they must themselves).

  UsernsLimitHost(user)   an unprivileged user on a host where `user.max_user_namespaces` is 0: the command runs as
                          `user` inside a user namespace (identity-mapped) whose own max_user_namespaces is 0. The
                          limit is per user namespace and checked at every level, so creating one fails there with
                          ENOSPC, as on such a host; the host's value is never written.
  DockerHost()            root without CAP_SYS_ADMIN under a seccomp filter with Docker's default rules for the
                          calls a jail needs (moby's profiles/seccomp/default.json for a container without
                          CAP_SYS_ADMIN and CAP_SYS_PTRACE): unshare, setns, mount and the new mount API, clone
                          with a namespace flag (EPERM), clone3 (ENOSYS), pidfd_getfd, kcmp, keyctl, bpf, ...;
                          the capability bounding set is Docker's default one.
  BubblewrapHost(user, proxy)  Claude Code's sandbox: bwrap with the flags its sandbox runtime (srt) passes
                          (`--unshare-user --cap-drop ALL --unshare-net --unshare-pid --proc /proc --dev /dev
                          --ro-bind / / --disable-userns`, writable binds only where asked; --disable-userns
                          spends the user-namespace limit of the namespace above, so creating one fails with
                          ENOSPC while this one's own max_user_namespaces reads the default), a network namespace
                          whose only way out is the outer proxy (reached as srt does: HTTP on localhost:3128 and
                          SOCKS on localhost:1080 inside, bridged over Unix sockets bound into the sandbox), the
                          proxy variables srt sets, srt's TMPDIR (a writable directory of its own), and srt's seccomp
                          rule refusing socket(AF_UNIX) to the command.
                          CORDON_TEST_BWRAP names another bwrap binary.
  NoLandlockHost(within=None)  a kernel without Landlock: a filter makes landlock_create_ruleset, landlock_add_rule
                          and landlock_restrict_self fail with ENOSYS; as root on this host, or inside another Host.
  OldKernelHost(within=None)   a kernel without seccomp user notification (before 5.0): a filter refuses
                          SECCOMP_FILTER_FLAG_NEW_LISTENER with EINVAL, as such a kernel does.

`python3 hosts.py userns-limit|seccomp|bridge ...` are the helpers the argv()s run; x86_64 only (system call
numbers below), like tests/jail/probe.py."""
import atexit
import ctypes
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

PY = "/usr/bin/python3"
_copies = None


def readable_by_everyone(path):
    """`path`, or a copy of it that every user can read: the hosts run the probes and this file as a test user,
    who cannot reach into a checkout below root's mode-0700 home (/root/cordon, where the README's commands run
    on a fresh machine). The copies lie in a mode-0755 directory of their own below /tmp, removed at exit."""
    global _copies
    path = os.path.abspath(path)
    here, reachable = path, bool(os.stat(path).st_mode & 0o004)
    while reachable and here != "/":
        here = os.path.dirname(here)
        reachable = bool(os.stat(here).st_mode & 0o001)
    if reachable:
        return path
    if _copies is None:
        _copies = tempfile.mkdtemp(prefix="cordon-lockdown-")
        os.chmod(_copies, 0o755)
        atexit.register(shutil.rmtree, _copies, True)
    copy = os.path.join(_copies, os.path.basename(path))
    shutil.copyfile(path, copy)
    os.chmod(copy, 0o644)
    return copy


# Run by the hosts as a helper (`python3 hosts.py seccomp ...`): from the copy when imported by a test.
HOSTS_PY = readable_by_everyone(__file__) if __name__ != "__main__" else os.path.abspath(__file__)

libc = ctypes.CDLL(None, use_errno=True)

# x86_64 system call numbers (asm/unistd_64.h).
NR = {
    "socket": 41, "setsockopt": 54, "clone": 56, "syslog": 103, "pivot_root": 155, "mount": 165, "umount2": 166,
    "sethostname": 170, "setdomainname": 171, "quotactl": 179, "lookup_dcookie": 212, "add_key": 248,
    "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298, "fanotify_init": 300,
    "setns": 308, "kcmp": 312, "bpf": 321, "userfaultfd": 323, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "clone3": 435, "pidfd_getfd": 438,
    "process_madvise": 440, "mount_setattr": 442, "quotactl_fd": 443, "landlock_create_ruleset": 444,
    "landlock_add_rule": 445, "landlock_restrict_self": 446, "seccomp": 317,
}
EPERM, EINVAL, ENOSYS = 1, 22, 38
SECCOMP_FILTER_FLAG_NEW_LISTENER = 8
AF_UNIX, AF_VSOCK = 1, 40
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET: Docker's mask (2114060288) for clone.
CLONE_NAMESPACE_FLAGS = 0x7E020000

# Docker's default capability set (moby oci/caps/defaults.go): everything else is dropped from the bounding set.
DOCKER_CAPS = ["chown", "dac_override", "fsetid", "fowner", "mknod", "net_raw", "setgid", "setuid", "setfcap",
               "setpcap", "net_bind_service", "sys_chroot", "kill", "audit_write"]
CAP_NUMBERS = {"chown": 0, "dac_override": 1, "fowner": 3, "fsetid": 4, "kill": 5, "setgid": 6, "setuid": 7,
               "setpcap": 8, "net_bind_service": 10, "net_raw": 13, "sys_chroot": 18, "mknod": 27,
               "audit_write": 29, "setfcap": 31}
CAP_LAST = 40  # CAP_CHECKPOINT_RESTORE; higher numbers are skipped (EINVAL) on an older kernel

# Filters, as (system call, errno, condition): condition None always, ("argN", value) when argument N's low 32
# bits equal value, ("argN&", mask) when they share a bit with mask.
FILTERS = {
    # Docker's default profile without CAP_SYS_ADMIN and CAP_SYS_PTRACE: the calls it allows only with those
    # capabilities (EPERM, its default action), the ones it never lists (keyctl, add_key, request_key,
    # userfaultfd, pivot_root: EPERM), clone with a namespace flag (EPERM), clone3 (ENOSYS, so that libc falls
    # back to clone, whose flags a filter can see) and socket(AF_VSOCK).
    "docker": [(name, EPERM, None) for name in (
        "bpf", "fanotify_init", "fsconfig", "fsmount", "fsopen", "fspick", "lookup_dcookie", "mount",
        "mount_setattr", "move_mount", "open_tree", "perf_event_open", "quotactl", "quotactl_fd",
        "setdomainname", "sethostname", "setns", "syslog", "umount2", "unshare", "pivot_root", "kcmp",
        "pidfd_getfd", "process_madvise", "keyctl", "add_key", "request_key", "userfaultfd")]
    + [("clone", EPERM, ("arg0&", CLONE_NAMESPACE_FLAGS)), ("clone3", ENOSYS, None),
       ("socket", EPERM, ("arg0", AF_VSOCK))],
    # A kernel built without Landlock answers its calls with ENOSYS.
    "no-landlock": [(name, ENOSYS, None) for name in (
        "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self")],
    # srt's apply-seccomp "unix" filter: no new Unix socket (a socket inherited or received still works).
    "srt-unix": [("socket", EPERM, ("arg0", AF_UNIX))],
    # A kernel before 6.16 (no SO_PASSRIGHTS): setsockopt of option 83 answers ENOPROTOOPT as there.
    "no-passrights": [("setsockopt", 92, ("arg2", 83))],
    # A kernel before 5.0 (no seccomp user notification): a filter asking for a listener is refused as there.
    "no-user-notif": [("seccomp", EINVAL, ("arg1&", SECCOMP_FILTER_FLAG_NEW_LISTENER))],
}


def bpf_program(rules):
    """A classic BPF seccomp program: foreign architectures and the x32 ABI get ENOSYS (so that no rule is
    bypassed through them), each rule's call its errno, everything else is allowed."""
    LD_ABS, JEQ, JGE, JSET, RET = 0x20, 0x15, 0x35, 0x45, 0x06
    ALLOW, ERRNO = 0x7FFF0000, 0x00050000
    AUDIT_ARCH_X86_64, X32_BIT = 0xC000003E, 0x40000000
    prog = [(LD_ABS, 0, 0, 4), (JEQ, 1, 0, AUDIT_ARCH_X86_64), (RET, 0, 0, ERRNO | ENOSYS),
            (LD_ABS, 0, 0, 0), (JGE, 0, 1, X32_BIT), (RET, 0, 0, ERRNO | ENOSYS)]
    for name, errno, cond in rules:
        # Each block reloads the call number, since a condition loads an argument into the accumulator.
        prog.append((LD_ABS, 0, 0, 0))
        if cond is None:
            prog += [(JEQ, 0, 1, NR[name]), (RET, 0, 0, ERRNO | errno)]
            continue
        kind, value = cond
        index = int(kind[3])
        prog += [(JEQ, 0, 3, NR[name]), (LD_ABS, 0, 0, 16 + 8 * index),  # args[N], low half (little-endian)
                 (JSET if kind.endswith("&") else JEQ, 0, 1, value), (RET, 0, 0, ERRNO | errno)]
    prog.append((RET, 0, 0, ALLOW))
    return b"".join(struct.pack("=HBBI", *insn) for insn in prog), len(prog)


def install_filter(profile):
    """Installs FILTERS[profile] on this process (and so on everything it executes). Without CAP_SYS_ADMIN the
    kernel asks for no_new_privs first; with it (root), none is set, as Docker sets none."""
    code, count = bpf_program(FILTERS[profile])
    buf = ctypes.create_string_buffer(code, len(code))

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = SockFprog(count, ctypes.addressof(buf))
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if not has_cap(21):  # CAP_SYS_ADMIN
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), f"seccomp filter {profile}")


def has_cap(number):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) >> number & 1)
    return False


def drop_bounding_set(keep):
    """Drops every capability but `keep` from the bounding set: root's next execve gets only those."""
    PR_CAPBSET_DROP = 24
    for cap in range(CAP_LAST + 1):
        if cap not in keep and libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() != 22:  # EINVAL: this kernel has no such capability
                raise OSError(ctypes.get_errno(), f"PR_CAPBSET_DROP {cap}")


def userns_limit_main(user, cmd):
    """Enters a new user namespace mapping every id to itself, sets its max_user_namespaces to 0, becomes `user`
    (which drops every capability) and executes cmd. The maps must be written from the parent namespace: a child
    forked before the unshare (still there, as root) writes them."""
    import pwd
    pw = pwd.getpwnam(user)
    ready_r, ready_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(ready_w)
        os.read(ready_r, 1)
        parent = os.getppid()
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{parent}/{name}", "w") as f:
                f.write("0 0 4294967295\n")
        os._exit(0)
    os.close(ready_r)
    CLONE_NEWUSER = 0x10000000
    if libc.unshare(CLONE_NEWUSER) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWUSER)")
    os.write(ready_w, b"x")
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0:
        sys.exit("hosts.py: could not write the user namespace's id maps")
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0\n")
    os.setgroups(os.getgrouplist(user, pw.pw_gid))
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)
    os.execvp(cmd[0], cmd)


def seccomp_main(profiles, docker_caps, cmd):
    for profile in profiles:
        install_filter(profile)
    if docker_caps:
        drop_bounding_set({CAP_NUMBERS[c] for c in DOCKER_CAPS})
    os.execvp(cmd[0], cmd)


def relay(a, b):
    done = threading.Semaphore(0)

    def pump(src, dst):
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if not done.acquire(blocking=False):  # the first to finish leaves the closing to the second
            done.release()
            return
        a.close()
        b.close()
    threading.Thread(target=pump, args=(a, b), daemon=True).start()
    threading.Thread(target=pump, args=(b, a), daemon=True).start()


def serve(listener, connect):
    """Accepts on listener forever (a daemon thread), relaying each connection to a new one from connect()."""
    def loop():
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                relay(client, connect())
            except OSError:
                client.close()
    threading.Thread(target=loop, daemon=True).start()


def bridge_main(pairs, cmd):
    """Inside the sandbox: listens on each 127.0.0.1:PORT and relays to its Unix socket (srt runs socat for
    this), then runs cmd under srt's Unix-socket rule and exits with its status."""
    for port, path in pairs:
        listener = socket.create_server(("127.0.0.1", port))
        serve(listener, lambda path=path: _unix_connect(path))
    child = subprocess.Popen([PY, HOSTS_PY, "seccomp", "srt-unix", "--", *cmd])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda s, _f: child.send_signal(s))
    code = child.wait()
    sys.exit(128 - code if code < 0 else code)


def _unix_connect(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s


class Host:
    """A simulated host. `argv(cmd)` is the command line that runs cmd there; `setup()`/`teardown()` make and
    remove what it needs (teardown is safe after a partial setup). Usable as a context manager."""

    name = ""

    def argv(self, cmd):
        raise NotImplementedError

    def setup(self):
        return self

    def teardown(self):
        pass

    def __enter__(self):
        return self.setup()

    def __exit__(self, *exc):
        self.teardown()

    def run(self, cmd, **kw):
        return subprocess.run(self.argv(cmd), **kw)

    def popen(self, cmd, **kw):
        return subprocess.Popen(self.argv(cmd), **kw)


class UsernsLimitHost(Host):
    name = "userns-limit"

    def __init__(self, user):
        self.user = user

    def argv(self, cmd):
        return [PY, HOSTS_PY, "userns-limit", self.user, "--", *cmd]


class DockerHost(Host):
    name = "docker"

    def argv(self, cmd):
        return [PY, HOSTS_PY, "seccomp", "docker", "--docker-caps", "--", *cmd]


class FilteredHost(Host):
    """A filter of FILTERS (PROFILE) around this host or another one."""

    profile = ""

    def __init__(self, within=None):
        self.within = within
        self.name = self.profile if within is None else f"{within.name}+{self.profile}"

    def argv(self, cmd):
        inner = self.within.argv(cmd) if self.within else list(cmd)
        return [PY, HOSTS_PY, "seccomp", self.profile, "--", *inner]

    def setup(self):
        if self.within:
            self.within.setup()
        return self

    def teardown(self):
        if self.within:
            self.within.teardown()


class NoLandlockHost(FilteredHost):
    profile = "no-landlock"


class OldKernelHost(FilteredHost):
    """A kernel without seccomp user notification (before 5.0), where the namespace-free jail is impossible."""

    profile = "no-user-notif"


class BubblewrapHost(Host):
    """proxy: (host, port) of the outer proxy on this host's loopback (HTTP and SOCKS5 on one port, as `cordon
    proxy`; socks_proxy another for SOCKS). writable: directories bound writable (srt's write allowances); the
    rest of / is read-only. user: run as this user (None: as root, which bwrap maps to uid 0 in its namespace)."""

    name = "bubblewrap"
    HTTP_PORT, SOCKS_PORT = 3128, 1080

    def __init__(self, user=None, proxy=None, socks_proxy=None, writable=(), bwrap=os.environ.get("CORDON_TEST_BWRAP", "bwrap")):
        self.user, self.proxy, self.socks_proxy = user, proxy, socks_proxy or proxy
        self.writable, self.bwrap = list(writable), bwrap
        self.dir = None
        self.listeners = []

    def setup(self):
        if shutil.which(self.bwrap) is None:
            raise RuntimeError("bubblewrap is not installed (scripts/setup --test installs it)")
        self.dir = tempfile.mkdtemp(prefix="cordon-bwrap-")
        os.chmod(self.dir, 0o755)
        # srt's TMPDIR (/tmp/claude there): the one writable place it gives besides the write allowances.
        os.mkdir(self.tmpdir())
        if self.user:
            import pwd
            pw = pwd.getpwnam(self.user)
            os.chown(self.tmpdir(), pw.pw_uid, pw.pw_gid)
        if self.proxy:
            for kind, target in (("http", self.proxy), ("socks", self.socks_proxy)):
                path = os.path.join(self.dir, f"{kind}.sock")
                listener = socket.socket(socket.AF_UNIX)
                listener.bind(path)
                os.chmod(path, 0o777)
                listener.listen(64)
                self.listeners.append(listener)
                serve(listener, lambda target=target: socket.create_connection(target))
        return self

    def teardown(self):
        for listener in self.listeners:
            listener.close()
        self.listeners = []
        if self.dir:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def tmpdir(self):
        return os.path.join(self.dir, "tmp")

    def proxy_env(self):
        """The variables srt sets in the sandbox (generateProxyEnvVars)."""
        http, socks = f"http://localhost:{self.HTTP_PORT}", f"socks5h://localhost:{self.SOCKS_PORT}"
        env = {"NO_PROXY": "localhost,127.0.0.1,::1,*.local,.local,169.254.0.0/16,10.0.0.0/8,172.16.0.0/12,"
                           "192.168.0.0/16", "HTTP_PROXY": http, "HTTPS_PROXY": http, "ALL_PROXY": socks,
               "SANDBOX_RUNTIME": "1"}
        env.update({k.lower(): v for k, v in env.items() if k != "SANDBOX_RUNTIME"})
        return env

    def argv(self, cmd):
        args = [self.bwrap, "--new-session", "--die-with-parent", "--unshare-net"]
        pairs = []
        if self.proxy:
            for kind, port in (("http", self.HTTP_PORT), ("socks", self.SOCKS_PORT)):
                path = os.path.join(self.dir, f"{kind}.sock")
                args += ["--bind", path, path]
                pairs += ["--tcp", f"{port}={path}"]
            for k, v in self.proxy_env().items():
                args += ["--setenv", k, v]
        args += ["--setenv", "TMPDIR", self.tmpdir(), "--ro-bind", "/", "/", "--bind", self.tmpdir(), self.tmpdir()]
        for d in self.writable:
            args += ["--bind", d, d]
        args += ["--dev", "/dev", "--unshare-pid", "--unshare-user", "--cap-drop", "ALL", "--proc", "/proc",
                 "--disable-userns", "--", PY, HOSTS_PY, "bridge", *pairs, "--", *cmd]
        if self.user:
            args = ["setpriv", f"--reuid={self.user}", f"--regid={self.user}", "--init-groups", "--", *args]
        return args


def main(argv):
    if len(argv) >= 2 and "--" in argv:
        sep = argv.index("--")
        head, cmd = argv[1:sep], argv[sep + 1:]
        if head[0] == "userns-limit" and len(head) == 2 and cmd:
            return userns_limit_main(head[1], cmd)
        if head[0] == "seccomp" and cmd:
            profiles = [p for p in head[1:] if p != "--docker-caps"]
            if all(p in FILTERS for p in profiles):
                return seccomp_main(profiles, "--docker-caps" in head, cmd)
        if head[0] == "bridge" and cmd and len(head) % 2 == 1 and all(h == "--tcp" for h in head[1::2]):
            pairs = [(int(p.split("=", 1)[0]), p.split("=", 1)[1]) for p in head[2::2]]
            return bridge_main(pairs, cmd)
    sys.exit("usage: hosts.py userns-limit USER -- CMD... | seccomp PROFILE... [--docker-caps] -- CMD... | "
             "bridge [--tcp PORT=UNIX_PATH]... -- CMD...")


if __name__ == "__main__":
    main(sys.argv)
