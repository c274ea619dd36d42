#!/usr/bin/python3
"""Integration tests for per-path Unix sockets (sandbox.network.allowUnixSockets through the seccomp user
notification, issue 11): real jailed clients and listeners of ours, as root and as an unprivileged user created
for the run. Needs root.

    python3 tests/jail/test_unix_sockets.py --cordon build/cordon [-k pattern]
"""
import errno
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import Env, JailFixtures, Upstream  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lockdown"))
import hosts  # noqa: E402  (a simulated older kernel: a seccomp filter around cordon)


def _kernel_refuses_descriptors():
    a, b = socket.socketpair()
    try:
        a.setsockopt(socket.SOL_SOCKET, 83, 0)  # SO_PASSRIGHTS (Linux 6.16)
        return True
    except OSError:
        return False
    finally:
        a.close()
        b.close()


KERNEL_REFUSES_DESCRIPTORS = _kernel_refuses_descriptors()

# Runs in the jail: `connect PATH` exchanges a line with the listener; `nonblock PATH` does so from a
# non-blocking socket; `race LISTED UNLISTED` connects many times while another thread rewrites the address
# between the two paths; `bind NAME` binds a socket there. Prints "OK ..." or "ERR <errno name>".
CLIENT = r'''
import ctypes, errno, os, select, signal, socket, struct, sys, threading
mode = sys.argv[1]
def err(e):
    print("ERR", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
if mode == "connect":
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[2])
    except OSError as e:
        err(e)
    s.sendall(b"ping\n")
    print("OK", s.recv(100).decode().strip())
elif mode == "thread":
    # From a thread that is not the process's first one (whose descriptor table the supervisor reads).
    out = []
    def run():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[2])
        s.sendall(b"ping\n")
        out.append(s.recv(100).decode().strip())
    t = threading.Thread(target=run)
    t.start()
    t.join()
    print("OK", *out)
elif mode == "nonblock":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
    try:
        rc = s.connect_ex(sys.argv[2])
    except OSError as e:
        err(e)
    if rc not in (0, errno.EINPROGRESS, errno.EAGAIN):
        print("ERR", errno.errorcode.get(rc, rc)); sys.exit(0)
    select.select([], [s], [], 10)
    s.sendall(b"ping\n")
    select.select([s], [], [], 10)
    print("OK", s.recv(100).decode().strip(), "nonblocking" if not s.getblocking() else "blocking")
elif mode == "race":
    libc = ctypes.CDLL(None, use_errno=True)
    listed, unlisted = sys.argv[2].encode(), sys.argv[3].encode()
    class Addr(ctypes.Structure):
        _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
    addr = Addr(socket.AF_UNIX, listed)
    good, bad = bytes(Addr(socket.AF_UNIX, listed)), bytes(Addr(socket.AF_UNIX, unlisted))
    stop = False
    def flip():
        while not stop:
            ctypes.memmove(ctypes.addressof(addr), bad, len(bad))
            ctypes.memmove(ctypes.addressof(addr), good, len(good))
    t = threading.Thread(target=flip)
    t.start()
    ok = refused = 0
    for _ in range(300):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if libc.connect(s.fileno(), ctypes.byref(addr), ctypes.sizeof(addr)) == 0:
            ok += 1
        else:
            refused += 1
        s.close()
    stop = True
    t.join()
    print("OK", ok, refused)
elif mode == "bind":
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind(sys.argv[2])
    except OSError as e:
        err(e)
    print("OK bound")
elif mode == "pairbind":
    # A socketpair end needs no socket(AF_UNIX), but bind still names a path.
    a, b = socket.socketpair()
    try:
        a.bind(sys.argv[2])
    except OSError as e:
        err(e)
    print("OK bound")
elif mode == "pairdgram":
    # A datagram socketpair end could send to (or connect to) any datagram socket file of the host.
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC):
        try:
            a, b = socket.socketpair(socket.AF_UNIX, kind)
        except OSError as e:
            print("PAIR", errno.errorcode.get(e.errno, e.errno))
            continue
        try:
            a.sendto(b"leak", sys.argv[2]); print("SENT")
        except OSError as e:
            print("SEND", errno.errorcode.get(e.errno, e.errno))
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        a, b = socket.socketpair(socket.AF_UNIX, kind)
        try:
            a.sendto(b"leak", sys.argv[2])
        except OSError as e:
            pass
    print("OK done")
elif mode == "killpeer":
    # The listener answers with the peer process it sees (the connector with --user): the jailed command
    # tries to signal it and to find it in /proc, then connects again.
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[2])
    s.sendall(b"ping\n")
    pid = int(s.recv(100).decode().split()[-1])
    s.close()
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(pid, sig)
            print("SIGNALLED")
        except OSError as e:
            print("KILL", errno.errorcode.get(e.errno, e.errno))
    print("PROC", os.path.exists(f"/proc/{pid}"))
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[2])
    s.sendall(b"ping\n")
    print("OK", s.recv(100).decode().split()[0])
elif mode in ("handed", "inherited", "accepted"):
    # A Unix datagram socket handed in over SCM_RIGHTS, by a listed service (`handed LISTED TARGET`) or by
    # the peer of an inherited descriptor 0 (`inherited TARGET`): every way it could name a socket file.
    import array
    if mode == "handed":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sys.argv[2])
        target = sys.argv[3]
        # The jailed end may not take descriptors again once cordon refused them.
        try:
            s.setsockopt(socket.SOL_SOCKET, 83, 1)  # SO_PASSRIGHTS (Linux 6.16)
            print("PASSRIGHTS set")
        except OSError as e:
            print("PASSRIGHTS", errno.errorcode.get(e.errno, e.errno))
        s.sendall(b"ping\n")
    elif mode == "accepted":
        # A listening socket inherited on 0: a host process connects to it.
        target = sys.argv[2]
        print("READY", flush=True)
        try:
            listening = socket.socket(fileno=0)
        except OSError as e:
            print("NOSOCKET", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
        s, _ = listening.accept()
    else:
        target = sys.argv[2]
        print("READY", flush=True)
        try:
            s = socket.socket(fileno=0)
        except OSError as e:
            print("NOSOCKET", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
    s.settimeout(10)
    try:
        data, anc, flags, _ = s.recvmsg(100, socket.CMSG_SPACE(4 * 4))
    except OSError as e:
        print("RECV", errno.errorcode.get(e.errno, e.errno)); sys.exit(0)
    fds = []
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds += list(array.array("i", payload[:len(payload) - len(payload) % 4]))
    if not fds:
        print("NOFD", data.decode().strip()); sys.exit(0)
    d = socket.socket(fileno=fds[0])
    print("GOT", d.type == socket.SOCK_DGRAM)
    def attempt(name, call):
        try:
            call(); print(name, "SENT")
        except OSError as e:
            print(name, errno.errorcode.get(e.errno, e.errno))
    attempt("sendto", lambda: d.sendto(b"leak-sendto", target))
    attempt("sendmsg", lambda: d.sendmsg([b"leak-sendmsg"], [], 0, target))
    attempt("rights", lambda: d.sendmsg([b"leak-rights"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                                             array.array("i", [os.open("/dev/null", os.O_RDONLY)]))], 0, target))
    libc = ctypes.CDLL(None, use_errno=True)
    class Iov(ctypes.Structure):
        _fields_ = [("base", ctypes.c_char_p), ("len", ctypes.c_size_t)]
    class Msg(ctypes.Structure):
        _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint), ("iov", ctypes.POINTER(Iov)),
                    ("iovlen", ctypes.c_size_t), ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                    ("flags", ctypes.c_int), ("len", ctypes.c_uint)]
    class Addr(ctypes.Structure):
        _fields_ = [("family", ctypes.c_ushort), ("path", ctypes.c_char * 108)]
    addr = Addr(socket.AF_UNIX, target.encode())
    iov = Iov(b"leak-sendmmsg", 13)
    msg = Msg(ctypes.cast(ctypes.byref(addr), ctypes.c_void_p), ctypes.sizeof(addr), ctypes.pointer(iov), 1)
    n = libc.sendmmsg(d.fileno(), ctypes.byref(msg), 1, 0)
    print("sendmmsg", "SENT" if n == 1 else errno.errorcode.get(ctypes.get_errno(), n))
    attempt("connect", lambda: (d.connect(target), d.send(b"leak-connect")))
    print("OK done")
elif mode == "seqpacket":
    # `seqpacket UNLISTED_SEQPACKET_PATH DGRAM_PATH ABSTRACT_NAME`: a seqpacket socket of every flag
    # combination to an unlisted host seqpacket socket file; a seqpacket socketpair end connected or sent to
    # the paths; a stream and a seqpacket socket to a host abstract listener.
    unlisted, dgram, abstract = sys.argv[2], sys.argv[3], "\0" + sys.argv[4]
    def show(name, call):
        try:
            call(); print(name, "SENT")
        except OSError as e:
            print(name, errno.errorcode.get(e.errno, e.errno))
    for extra in (0, socket.SOCK_NONBLOCK, socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK):
        def one():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET | extra)
            if extra & socket.SOCK_NONBLOCK:
                rc = s.connect_ex(unlisted)
                if rc: raise OSError(rc, os.strerror(rc))
            else:
                s.connect(unlisted)
            s.send(b"leak-seqpacket")
        show("socket", one)
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    show("pairconnect", lambda: a.connect(unlisted))
    show("pairsendto", lambda: a.sendto(b"ignored", dgram))  # to the peer: the address is ignored
    b.close()  # the peer gone: the end stays connected
    show("orphanconnect", lambda: a.connect(dgram))
    for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
        def abs_one():
            s = socket.socket(socket.AF_UNIX, kind)
            s.connect(abstract + str(int(kind)))
            s.send(b"leak-abstract")
        show("abstract", abs_one)
    print("OK done")
elif mode == "highbits":
    # The type, family, level and option as 64-bit registers with the upper half set (the kernel reads ints).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    hi = 1 << 32
    L = ctypes.c_long
    SYS_socket, SYS_socketpair, SYS_setsockopt = 41, 53, 54
    r = libc.syscall(L(SYS_socket), L(hi | socket.AF_UNIX), L(hi | socket.SOCK_DGRAM), L(0))
    print("socket", r if r < 0 else "MADE", errno.errorcode.get(ctypes.get_errno(), "") if r < 0 else "")
    pair = (ctypes.c_int * 2)()
    r = libc.syscall(L(SYS_socketpair), L(hi | socket.AF_UNIX), L(hi | socket.SOCK_DGRAM), L(0), pair)
    print("socketpair", r if r < 0 else "MADE", errno.errorcode.get(ctypes.get_errno(), "") if r < 0 else "")
    a, b = socket.socketpair()
    one = ctypes.c_int(1)
    r = libc.syscall(L(SYS_setsockopt), L(a.fileno()), L(hi | socket.SOL_SOCKET), L(hi | 83), ctypes.byref(one), L(4))
    print("setsockopt", r if r < 0 else "SET", errno.errorcode.get(ctypes.get_errno(), "") if r < 0 else "")
elif mode == "peerpidfd":
    # `peerpidfd LISTED TARGET`: the listed service's process from SO_PEERPIDFD, and its descriptors taken
    # with pidfd_getfd (allowed with --allow-ptrace): a datagram socket of the service's to any socket file.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(sys.argv[2])
    try:
        pidfd = struct.unpack("i", s.getsockopt(socket.SOL_SOCKET, 77, 4))[0]  # SO_PEERPIDFD (Linux 6.5)
    except OSError as e:
        err(e)
    got = None
    first = None
    for n in range(3, 64):
        fd = libc.syscall(ctypes.c_long(438), ctypes.c_long(pidfd), ctypes.c_long(n), ctypes.c_long(0))
        if fd < 0:
            first = first or errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
            continue
        d = socket.socket(fileno=fd)
        if d.family == socket.AF_UNIX and d.type == socket.SOCK_DGRAM:
            got = d; break
    if got is None:
        print("GETFD", first); sys.exit(0)
    try:
        got.sendto(b"leak-getfd", sys.argv[3]); print("SENT")
    except OSError as e:
        err(e)
elif mode == "dgram":
    # SOCK_RAW is a datagram socket too for AF_UNIX; the flags must not hide the type.
    for kind in (socket.SOCK_DGRAM, socket.SOCK_RAW, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK):
        try:
            socket.socket(socket.AF_UNIX, kind)
        except OSError as e:
            err(e)
    print("OK dgram")
'''


# int 0x80 (socketcall, and socket by its i386 number) and an x32 socket: each makes a Unix datagram socket
# unless the filter kills it (prints MADE if the socket was made).
COMPAT_C = r"""
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
static long int80(long nr, long a, long b, long c) {
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}
int main(int argc, char** argv) {
    uint32_t* args = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    args[0] = AF_UNIX, args[1] = SOCK_DGRAM, args[2] = 0;
    long r = -1;
    if (argc > 1 && !strcmp(argv[1], "socketcall")) r = int80(102, 1, (long)(uintptr_t)args, 0);
    if (argc > 1 && !strcmp(argv[1], "i386")) r = int80(359, AF_UNIX, SOCK_DGRAM, 0);
    if (argc > 1 && !strcmp(argv[1], "x32")) r = syscall(0x40000000 + 41, AF_UNIX, SOCK_DGRAM, 0);
    if (r >= 0) printf("MADE %ld\n", r);
    return 0;
}
"""


class UnixServer:
    """A Unix stream socket of ours at `path`, open to every user, served by `_serve` on a thread."""

    def listen(self, path, backlog):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(path)
        os.chmod(path, 0o777)
        self.sock.listen(backlog)
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()


class Listener(UnixServer):
    """A Unix stream listener of ours that answers each line with "pong <name>" and counts connections."""

    def __init__(self, path, name, answer_pid=False):
        self.path, self.name, self.count, self.peers = path, name, 0, []
        # The peer process as the listener can read it at accept: its four uids (/proc/PID/status) and the
        # owner of /proc/PID/environ (root for a process that is not dumpable).
        self.processes = []
        self.answer_pid = answer_pid
        self.listen(path, 64)

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.count += 1
            creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            self.peers.append(struct.unpack("3i", creds))  # pid, uid, gid
            pid = self.peers[-1][0]
            try:
                with open(f"/proc/{pid}/status") as f:
                    uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
                self.processes.append((pid, [int(u) for u in uids], os.stat(f"/proc/{pid}/environ").st_uid))
            except OSError:
                self.processes.append((pid, None, None))
            threading.Thread(target=self._answer, args=(conn, pid), daemon=True).start()

    def _answer(self, conn, pid):
        with conn:
            try:
                conn.settimeout(10)
                if conn.recv(100):
                    conn.sendall(f"pong {self.name}{f' {pid}' if self.answer_pid else ''}\n".encode())
            except OSError:
                pass

    def close(self):
        self.sock.close()


class Handing(UnixServer):
    """A listed service of ours that hands each client a Unix datagram socket over SCM_RIGHTS (as any service
    that passes descriptors could: D-Bus relays other clients' ones) and notes whether the kernel took it."""

    def __init__(self, path):
        self.path, self.results = path, []
        self.dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.listen(path, 8)

    def _serve(self):
        import array
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(10)
                    conn.recv(100)
                    conn.sendmsg([b"fd\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                              array.array("i", [self.dgram.fileno()]))])
                    self.results.append("sent")
                except OSError as e:
                    self.results.append(errno.errorcode.get(e.errno, str(e.errno)))
                    try:
                        conn.sendall(b"nofd\n")
                    except OSError:
                        pass

    def close(self):
        self.sock.close()
        self.dgram.close()


class UnixSocketCase(JailFixtures):
    """The fixtures of the jail tests (JailFixtures), with our Unix socket listeners."""

    def listeners(self):
        self.listed = Listener(os.path.join(self.outside, "listed.sock"), "listed")
        self.unlisted = Listener(os.path.join(self.outside, "unlisted.sock"), "unlisted")
        self.agent = Listener(os.path.join(self.home, "agent.sock"), "agent")
        for listener in (self.listed, self.unlisted, self.agent):
            self.addCleanup(listener.close)
        self.settings = self.write(os.path.join(self.dir, "srt.json"), json.dumps(
            {"network": {"allowUnixSockets": [self.listed.path, "~/agent.sock"]}}))
        self.client = self.write(os.path.join(self.dir, "client.py"), CLIENT)

    def jailed(self, *args, flags=()):
        out, err = self.sh(" ".join(["python3", self.client, *[f"'{a}'" for a in args]]), "--settings",
                           self.settings, *flags)
        return out.strip()

    def test_listed_path_connects_and_exchanges(self):
        self.listeners()
        self.assertEqual(self.jailed("connect", self.listed.path), "OK pong listed")
        self.assertEqual(self.jailed("connect", os.path.join(self.home, "agent.sock")), "OK pong agent")
        self.assertEqual(self.jailed("thread", self.listed.path), "OK pong listed")

    def test_unlisted_path_refused(self):
        self.listeners()
        self.assertEqual(self.jailed("connect", self.unlisted.path), "ERR EPERM")
        self.assertEqual(self.unlisted.count, 0)
        self.assertEqual(self.jailed("connect", os.path.join(self.outside, "missing.sock")), "ERR EPERM")

    def test_symlinks_followed_and_target_checked(self):
        self.listeners()
        to_unlisted = os.path.join(self.cwd, "to-unlisted")
        to_listed = os.path.join(self.cwd, "to-listed")
        os.symlink(self.unlisted.path, to_unlisted)
        os.symlink(os.path.relpath(self.listed.path, self.cwd), to_listed)
        self.assertEqual(self.jailed("connect", "to-unlisted"), "ERR EPERM")
        self.assertEqual(self.unlisted.count, 0)
        self.assertEqual(self.jailed("connect", "to-listed"), "OK pong listed")
        # `cordon check unix:PATH` says the same.
        for rel, rc in (("to-listed", 0), ("to-unlisted", 1)):
            r = subprocess.run([Env.cordon, "check", "--no-discover", "--settings", self.settings, f"unix:{rel}"],
                               cwd=self.cwd, env=self.env(), capture_output=True, text=True)
            self.assertEqual(r.returncode, rc, r.stdout + r.stderr)

    def test_nonblocking_connect(self):
        self.listeners()
        self.assertEqual(self.jailed("nonblock", self.listed.path), "OK pong listed nonblocking")
        self.assertEqual(self.jailed("nonblock", self.unlisted.path), "ERR EPERM")

    def test_blocking_connect_waits_without_holding_up_other_calls(self):
        self.listeners()
        # A listener whose backlog is full: a blocking connect to it waits.
        full = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        full_path = os.path.join(self.outside, "full.sock")
        full.bind(full_path)
        os.chmod(full_path, 0o777)
        full.listen(0)
        fillers = []
        while True:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
            if c.connect_ex(full_path) != 0:
                c.close()
                break
            fillers.append(c)
        self.addCleanup(lambda: [c.close() for c in fillers + [full]])
        self.settings = self.write(os.path.join(self.dir, "srt.json"), json.dumps(
            {"network": {"allowUnixSockets": [self.listed.path, full_path]}}))
        out, err = self.sh(f"python3 {self.client} connect {full_path} & sleep 0.5; mkdir made && echo MADE; "
                           f"python3 {self.client} connect {self.listed.path}; kill $!", "--settings", self.settings)
        self.assertEqual(out.split("\n")[:2], ["MADE", "OK pong listed"], err)

    def test_racing_thread_cannot_reach_unlisted_path(self):
        self.listeners()
        out = self.jailed("race", self.listed.path, self.unlisted.path)
        self.assertTrue(out.startswith("OK "), out)
        time.sleep(0.3)  # connections still in the backlog would be accepted by now
        self.assertEqual(self.unlisted.count, 0, out)

    def test_tcp_to_the_proxy_still_works(self):
        self.listeners()
        out, err = self.sh(f"curl -sS --max-time 10 {Upstream.url()}", *Upstream.flags(), "--allow-domain",
                           Upstream.NAME, "--settings", self.settings)
        self.assertEqual(out, "hello from upstream\n", err)
        # A CONNECT tunnel, as for an https URL through HTTPS_PROXY.
        out, err = self.sh(f"curl -sS -p -x \"$HTTPS_PROXY\" --max-time 10 {Upstream.url()}", *Upstream.flags(),
                           "--allow-domain", Upstream.NAME, "--settings", self.settings)
        self.assertEqual(out, "hello from upstream\n", err)
        # A blocking connect (urllib) through the proxy from HTTP_PROXY.
        script = f"import urllib.request; print(urllib.request.urlopen('{Upstream.url()}', timeout=10).read().decode())"
        out, err = self.sh(f"python3 -c \"{script}\"", *Upstream.flags(), "--allow-domain", Upstream.NAME,
                           "--settings", self.settings)
        self.assertEqual(out.strip(), "hello from upstream", err)

    def test_bind_follows_the_write_rules(self):
        self.listeners()
        self.assertEqual(self.jailed("bind", "made.sock"), "OK bound")
        made = os.path.join(self.cwd, "made.sock")
        self.assertTrue(stat.S_ISSOCK(os.lstat(made).st_mode))
        self.assertEqual(os.lstat(made).st_uid, Env.uid if self.AS_USER or self.USER_FLAG else 0)
        self.assertEqual(self.jailed("bind", ".bashrc"), "ERR EACCES")
        self.assertFalse(os.path.lexists(os.path.join(self.cwd, ".bashrc")))
        self.assertEqual(self.jailed("bind", os.path.join(self.outside, "x.sock")), "ERR EROFS")
        self.assertFalse(os.path.lexists(os.path.join(self.outside, "x.sock")))

    def test_inet_bind_keeps_the_callers_rights(self):
        # The supervisor performs bind for every family: with the caller's rights (no CAP_NET_BIND_SERVICE).
        self.listeners()
        script = ("import errno, socket; s = socket.socket()\n"
                  "try:\n    s.bind(('127.0.0.1', 80)); print('bound')\n"
                  "except OSError as e:\n    print(errno.errorcode[e.errno])\n"
                  "t = socket.socket(); t.bind(('127.0.0.1', 0)); t.listen(); print(t.getsockname()[1] > 1024)")
        path = self.write(os.path.join(self.dir, "bind80.py"), script)
        out, _ = self.sh(f"python3 {path}", "--settings", self.settings)
        self.assertEqual(out.split(), ["EACCES", "True"])

    def test_datagram_unix_sockets_refused_in_per_path_mode(self):
        self.listeners()
        self.assertEqual(self.jailed("dgram"), "ERR EPERM")
        # One at a time: each is refused on its own.
        for kind in ("SOCK_RAW", "SOCK_DGRAM | socket.SOCK_CLOEXEC"):
            _, err = self.sh(f"python3 -c 'import socket; socket.socket(socket.AF_UNIX, socket.{kind})'",
                             "--settings", self.settings, expect=1)
            self.assertIn("PermissionError", err)

    def test_without_list_unix_sockets_stay_refused(self):
        self.listeners()
        out, _ = self.sh(f"python3 {self.client} connect {self.listed.path}", "--settings", self.write(
            os.path.join(self.dir, "none.json"), json.dumps({"network": {"allowUnixSockets": []}})))
        self.assertEqual(out.strip(), "ERR EPERM")


    # What the second attack on the jail found.
    def test_swapped_listed_path_reaches_nothing_else(self):
        # A listed socket inside a writable area, renamed away and replaced by a symlink to an unlisted one:
        # what the entry named when the run started is what counts.
        self.listeners()
        ok = Listener(os.path.join(self.cwd, "ok.sock"), "ok")
        self.addCleanup(ok.close)
        self.own(ok.path)
        settings = self.write(os.path.join(self.dir, "ok.json"), json.dumps(
            {"network": {"allowUnixSockets": [ok.path]}}))
        out, err = self.sh(f"mv ok.sock ok.real && ln -s {self.unlisted.path} ok.sock && "
                           f"python3 {self.client} connect ok.sock; python3 {self.client} connect ok.real",
                           "--settings", settings)
        self.assertEqual(out.split("\n")[:2], ["ERR EPERM", "OK pong ok"], err)
        self.assertEqual(self.unlisted.count, 0)

    def test_listener_sees_the_callers_credentials(self):
        self.listeners()
        self.assertEqual(self.jailed("connect", self.listed.path), "OK pong listed")
        self.assertEqual(self.jailed("nonblock", self.listed.path), "OK pong listed nonblocking")
        uid, gid = (Env.uid, Env.gid) if self.AS_USER or self.USER_FLAG else (0, 0)
        self.assertEqual([(p[1], p[2]) for p in self.listed.peers], [(uid, gid)] * 2)

    def test_listener_sees_the_callers_process(self):
        # Not only the ids of the connecting thread: the peer process (SO_PEERCRED's pid, /proc/PID/status)
        # has every uid of the caller. With --user it is a connector process of the supervisor's, which is
        # not dumpable (/proc/PID/environ belongs to root: no ptrace, no /proc/PID/mem for the caller's user).
        self.listeners()
        self.assertEqual(self.jailed("connect", self.listed.path), "OK pong listed")
        self.assertEqual(self.jailed("nonblock", self.listed.path), "OK pong listed nonblocking")
        self.assertEqual(self.jailed("thread", self.listed.path), "OK pong listed")
        uid = Env.uid if self.AS_USER or self.USER_FLAG else 0
        self.assertEqual([p[1] for p in self.listed.processes], [[uid] * 4] * 3, self.listed.processes)
        if self.USER_FLAG:
            self.assertEqual({p[2] for p in self.listed.processes}, {0}, "the connector is dumpable")
            # A connector per run: three runs, three processes.
            self.assertEqual(len({p[0] for p in self.listed.processes}), 3)

    def test_connector_dies_with_the_run(self):
        # The peer process the listener saw is gone when `cordon run` has returned, also when the supervisor
        # was killed (SIGKILL: the connector sees its socketpair's end of file, and its parent-death signal).
        self.listeners()
        self.assertEqual(self.jailed("connect", self.listed.path), "OK pong listed")
        proc = self.popen(["--settings", self.settings, "-c",
                           f"python3 {self.client} connect {self.listed.path}; sleep 60"])
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        deadline = time.monotonic() + 20
        while len(self.listed.peers) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(len(self.listed.peers), 2)
        proc.kill()
        proc.wait()
        for pid, _, _ in self.listed.processes:
            deadline = time.monotonic() + 5
            while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
                time.sleep(0.05)
            state = ""
            if os.path.exists(f"/proc/{pid}/stat"):
                with open(f"/proc/{pid}/stat") as f:
                    state = f.read().rsplit(")", 1)[1].split()[0]
            self.assertIn(state, ("", "Z"), f"peer process {pid} outlived the run")

    def test_jailed_command_cannot_signal_the_connector(self):
        # The attacker knows the peer process's pid (a listener may tell it): it can neither signal it nor
        # find it in its /proc, and its next connect works (the connector was not stopped or killed).
        self.listeners()
        pids = Listener(os.path.join(self.outside, "pids.sock"), "pids", answer_pid=True)
        self.addCleanup(pids.close)
        settings = self.write(os.path.join(self.dir, "pids.json"), json.dumps(
            {"network": {"allowUnixSockets": [pids.path]}}))
        out, err = self.sh(f"python3 {self.client} killpeer {pids.path}", "--settings", settings)
        if os.environ.get("CORDON_TEST_JAIL") == "landlock":
            # No PID namespace: the connector is in the command's /proc, and the kernel refuses the signal
            # (another user's process, or Landlock's signal scope).
            expected = ["KILL EPERM", "KILL EPERM", "PROC True", "OK pong"]
        else:
            expected = ["KILL ESRCH", "KILL ESRCH", "PROC False", "OK pong"]
        self.assertEqual(out.split("\n")[:4], expected, err)
        self.assertEqual(len({p[0] for p in pids.peers}), 1, pids.peers)  # the same process, still there

    def test_connector_is_not_exhausted_by_waiting_connects(self):
        # Ten blocking connects wait on a listener whose backlog is full (each tried again and again through
        # the one connector with --user): a connect to another listed socket still gets through.
        self.listeners()
        full = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        full_path = os.path.join(self.outside, "full.sock")
        full.bind(full_path)
        os.chmod(full_path, 0o777)
        full.listen(0)
        fillers = []
        while True:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_NONBLOCK)
            if c.connect_ex(full_path) != 0:
                c.close()
                break
            fillers.append(c)
        self.addCleanup(lambda: [c.close() for c in fillers + [full]])
        settings = self.write(os.path.join(self.dir, "full.json"), json.dumps(
            {"network": {"allowUnixSockets": [self.listed.path, full_path]}}))
        started = time.monotonic()
        out, err = self.sh(f"for i in 1 2 3 4 5 6 7 8 9 10; do python3 {self.client} connect {full_path} & "
                           "pids=\"$pids $!\"; done; "
                           f"sleep 1; python3 {self.client} connect {self.listed.path}; "
                           f"python3 {self.client} nonblock {self.listed.path}; kill $pids",
                           "--settings", settings)
        self.assertEqual(out.split("\n")[:2], ["OK pong listed", "OK pong listed nonblocking"], err)
        self.assertLess(time.monotonic() - started, 30)

    def test_bind_on_a_socketpair_follows_the_write_rules(self):
        self.listeners()
        for flags in ([], ["--settings", self.settings]):
            for name in (".mcp.json", ".vscode", ".gitmodules"):
                out, _ = self.sh(f"python3 {self.client} pairbind {name}", *flags)
                self.assertEqual(out.strip(), "ERR EACCES", (flags, name))
                self.assertFalse(os.path.lexists(os.path.join(self.cwd, name)))
            out, _ = self.sh(f"python3 {self.client} pairbind {self.outside}/x.sock", *flags)
            self.assertEqual(out.strip(), "ERR EROFS")
            out, _ = self.sh(f"rm -f made.sock; python3 {self.client} pairbind made.sock", *flags)
            self.assertEqual(out.strip(), "OK bound")
            self.assertTrue(stat.S_ISSOCK(os.lstat(os.path.join(self.cwd, "made.sock")).st_mode))

    def test_datagram_socketpair_cannot_reach_host_sockets(self):
        self.listeners()
        path = os.path.join(self.outside, "dgram.sock")
        host = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(host.close)
        host.bind(path)
        os.chmod(path, 0o777)
        host.setblocking(False)
        for flags in ([], ["--settings", self.settings]):
            out, _ = self.sh(f"python3 {self.client} pairdgram {path}", *flags)
            self.assertEqual(out.split(), ["PAIR", "EPERM"] * 3 + ["OK", "done"], flags)
        with self.assertRaises(BlockingIOError):
            host.recv(100)


    # Issue 23, item 9: a datagram socket that cordon did not make (handed in over SCM_RIGHTS) must not name a
    # socket file of the host either: a listed service, or the peer of an inherited descriptor, cannot hand
    # the jail a descriptor at all (SO_PASSRIGHTS off on the jail's end), and the jail cannot turn that back.
    def host_dgram(self):
        path = os.path.join(self.outside, "dgram.sock")
        host = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.addCleanup(host.close)
        host.bind(path)
        os.chmod(path, 0o777)
        host.setblocking(False)
        return path, host

    def assert_nothing_arrived(self, host, out):
        try:
            got = host.recv(100)
        except BlockingIOError:
            return
        self.fail(f"the host's datagram socket received {got!r}: {out}")

    @unittest.skipUnless(KERNEL_REFUSES_DESCRIPTORS, "the kernel lacks SO_PASSRIGHTS (Linux 6.16)")
    def test_handed_datagram_socket_cannot_reach_host_sockets(self):
        self.listeners()
        target, host = self.host_dgram()
        handing = Handing(os.path.join(self.outside, "handing.sock"))
        self.addCleanup(handing.close)
        settings = self.write(os.path.join(self.dir, "handing.json"), json.dumps(
            {"network": {"allowUnixSockets": [handing.path]}}))
        out, err = self.sh(f"python3 {self.client} handed {handing.path} {target}", "--settings", settings)
        self.assertNotIn("SENT", out, err)
        self.assert_nothing_arrived(host, out)
        self.assertEqual(out.split("\n")[:2], ["PASSRIGHTS EPERM", "NOFD nofd"], err)
        self.assertEqual(handing.results, ["EPERM"])

    @unittest.skipUnless(KERNEL_REFUSES_DESCRIPTORS, "the kernel lacks SO_PASSRIGHTS (Linux 6.16)")
    def test_inherited_socket_peer_cannot_hand_in_a_datagram_socket(self):
        self.listeners()
        target, host = self.host_dgram()
        import array
        for flags in ([], ["--settings", self.settings]):
            ours, theirs = socket.socketpair()
            self.addCleanup(ours.close)
            p = self.popen([*flags, "--", "python3", self.client, "inherited", target], stdin=theirs.fileno())
            theirs.close()
            try:
                self.assertEqual(p.stdout.readline(), "READY\n")
                dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                try:
                    ours.sendmsg([b"fd\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                              array.array("i", [dgram.fileno()]))])
                    sent = "sent"
                except OSError as e:
                    sent = errno.errorcode.get(e.errno, str(e.errno))
                    ours.sendall(b"nofd\n")
                dgram.close()
                out, err = p.communicate(timeout=30)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.communicate()
            self.assertNotIn("SENT", out, (flags, err))
            self.assert_nothing_arrived(host, out)
            self.assertEqual((sent, out.split("\n")[0]), ("EPERM", "NOFD nofd"), (flags, out, err))

    def test_before_so_passrights_a_listed_socket_works_and_the_run_says_what_it_lacks(self):
        # A kernel before Linux 6.16 (simulated: a filter around cordon answers SO_PASSRIGHTS with ENOPROTOOPT
        # as such a kernel does): the listed connect still works, since the user listed that service, and the
        # run says at its start that the service can hand the command descriptors (jail/README.md, limits).
        self.listeners()
        target, _ = self.host_dgram()
        handing = Handing(os.path.join(self.outside, "handing.sock"))
        self.addCleanup(handing.close)
        settings = self.write(os.path.join(self.dir, "handing-old.json"), json.dumps(
            {"network": {"allowUnixSockets": [handing.path]}}))
        old_kernel = [hosts.PY, hosts.HOSTS_PY, "seccomp", "no-passrights", "--"]
        out, err = self.sh(f"python3 {self.client} handed {handing.path} {target}", "--settings", settings,
                           prefix=old_kernel)
        self.assertIn("lacks SO_PASSRIGHTS", err)
        self.assertIn("GOT True", out, err)  # the documented limit: the listed service handed one in
        # Without a listed socket the note is not printed.
        _, err = self.sh("true", prefix=old_kernel)
        self.assertNotIn("SO_PASSRIGHTS", err)


    # A third attack on item 9 (the descriptors that could come from outside, and the ways to make or reach a
    # socket the filter would not see).
    def hand_in(self, sock, what=None):
        """Sends a fresh Unix datagram socket over `sock` (SCM_RIGHTS); the errno name, or "sent"."""
        import array
        dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.sendmsg([b"fd\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [dgram.fileno()]))])
            return "sent"
        except OSError as e:
            sock.sendall(b"nofd\n")
            return errno.errorcode.get(e.errno, str(e.errno))
        finally:
            dgram.close()

    def run_inherited(self, mode, stdin, target, before=None, after=None, flags=()):
        p = self.popen([*flags, "--", "python3", self.client, mode, target], stdin=stdin.fileno())
        stdin.close()
        # Read through the same buffered reader as the READY line (communicate would read the pipes' raw
        # descriptors and lose what that reader took in after READY); killed if it hangs.
        killer = threading.Timer(30, p.kill)
        killer.start()
        try:
            self.assertEqual(p.stdout.readline(), "READY\n")
            sent = after() if after else None
            out = p.stdout.read()
            err = p.stderr.read()
            p.wait()
        finally:
            killer.cancel()
            if p.poll() is None:
                p.kill()
                p.communicate()
        return sent, out, err

    @unittest.skipUnless(KERNEL_REFUSES_DESCRIPTORS, "the kernel lacks SO_PASSRIGHTS (Linux 6.16)")
    def test_descriptor_queued_before_the_run_on_an_inherited_socket(self):
        # SO_PASSRIGHTS is checked when a message is sent, not when it is received: a descriptor the peer of an
        # inherited socket queued before cordon turned it off would still arrive (a Unix datagram socket that
        # sends to any host socket file). cordon looks through what is queued: such a socket becomes
        # /dev/null, with a note; behind plain data too.
        self.listeners()
        target, host = self.host_dgram()
        for flags in ([], ["--settings", self.settings]):
            for lead in (b"", b"x" * 50000):
                ours, theirs = socket.socketpair()
                self.addCleanup(ours.close)
                ours.sendall(lead)
                self.assertEqual(self.hand_in(ours), "sent")  # queued before the run
                _, out, err = self.run_inherited("inherited", theirs, target, flags=flags)
                self.assertNotIn("SENT", out, (flags, err))
                self.assertNotIn("GOT", out, (flags, err))
                self.assert_nothing_arrived(host, out)
                self.assertIn("holding descriptors its peer sent before the run", err)
                self.assertIn("NOSOCKET", out, (flags, len(lead), out, err))

    def test_queued_data_without_descriptors_stays_readable(self):
        # What a caller such as node writes to a child's stdio socketpair before it runs stays the command's.
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        ours.sendall(b"queued before the run\n")
        ours.shutdown(socket.SHUT_WR)
        p = self.popen(["--", "cat"], stdin=theirs.fileno())
        theirs.close()
        out, err = p.communicate(timeout=30)
        self.assertEqual((p.returncode, out), (0, "queued before the run\n"), err)
        self.assertNotIn("/dev/null instead", err)

    @unittest.skipUnless(KERNEL_REFUSES_DESCRIPTORS, "the kernel lacks SO_PASSRIGHTS (Linux 6.16)")
    def test_session_join_descriptor_queued_before_the_join(self):
        # As above, through `cordon run --session`: a descriptor already queued on the client's stdin never
        # reaches the session's command.
        if os.environ.get("CORDON_TEST_JAIL"):
            self.skipTest("the wrapper adds --jail to run, which `run --session` refuses")
        self.listeners()
        target, host = self.host_dgram()
        name = f"atk23-{os.getpid()}-{type(self).__name__}"
        user = ["--user", Env.user] if self.USER_FLAG else []
        kw = dict(cwd=self.cwd, env=self.env(), capture_output=True, text=True, **self._identity())
        r = subprocess.run([Env.cordon, "session", "start", "--name", name, "--no-discover", *user], **kw)
        self.assertEqual(r.returncode, 0, r.stderr)
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        self.assertEqual(self.hand_in(ours), "sent")  # queued before the join
        p = None
        try:
            p = subprocess.Popen([Env.cordon, "run", "--session", name, "--", "python3", self.client, "inherited",
                                  target], stdin=theirs.fileno(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True, cwd=self.cwd, env=self.env(), **self._identity())
            theirs.close()
            out, err = p.communicate(timeout=30)
        finally:
            if p and p.poll() is None:
                p.kill()
                p.communicate()
            # Here, not in a cleanup: tearDown removes the case's home, where the user's session is found.
            subprocess.run([Env.cordon, "session", "stop", name], **kw)
        self.assertNotIn("SENT", out, err)
        self.assert_nothing_arrived(host, out)

    def test_inherited_listener_becomes_dev_null(self):
        # A listening socket on 0: the server end of a client that connected before the run took the
        # listener's SO_PASSRIGHTS when it connected, so that client could hand the command a Unix datagram
        # socket once accepted. A listener on 0-2 becomes /dev/null (with a note): neither a client from before
        # the run nor a later one reaches the command.
        self.listeners()
        target, host = self.host_dgram()
        path = os.path.join(self.outside, "inherited-listener.sock")
        listening = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listening.bind(path)
        listening.listen(4)
        early = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(early.close)
        early.connect(path)  # before the run
        self.hand_in(early)
        _, out, err = self.run_inherited("accepted", listening, target)
        self.assertNotIn("SENT", out, err)
        self.assertNotIn("GOT", out, err)
        self.assert_nothing_arrived(host, out)
        self.assertIn("NOSOCKET", out, err)
        self.assertIn("a listening socket (Unix)", err)

    def test_seqpacket_and_abstract_sockets_reach_no_host_socket(self):
        # A seqpacket socket (allowed by socket() in per-path mode) to an unlisted host seqpacket socket file,
        # with every flag; a seqpacket socketpair end (connected: connect and an address do nothing), also
        # once its peer is gone; stream and seqpacket connects to host abstract listeners (the host's network
        # namespace holds them: reached only without namespaces, where the supervisor makes the connect).
        self.listeners()
        target, host = self.host_dgram()
        seq_path = os.path.join(self.outside, "seq.sock")
        seq = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.addCleanup(seq.close)
        seq.bind(seq_path)
        os.chmod(seq_path, 0o777)
        seq.listen(8)
        seq.setblocking(False)
        name = f"cordon-attack-{os.getpid()}-{self.id().rsplit('.', 1)[-1]}"
        abstracts = []
        for kind in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
            a = socket.socket(socket.AF_UNIX, kind)
            self.addCleanup(a.close)
            a.bind("\0" + name + str(int(kind)))
            a.listen(8)
            a.setblocking(False)
            abstracts.append(a)
        for flags in ([], ["--settings", self.settings]):
            out, err = self.sh(f"python3 {self.client} seqpacket {seq_path} {target} {name}", *flags)
            self.assertNotIn("SENT", out.replace("pairsendto SENT", ""), (flags, err))
            self.assertTrue(out.strip().endswith("OK done"), (flags, out, err))
            self.assert_nothing_arrived(host, out)
            for listener in (seq, *abstracts):
                with self.assertRaises(BlockingIOError, msg=(flags, out)):
                    listener.accept()

    def test_upper_register_bits_hide_no_datagram_socket_nor_so_passrights(self):
        self.listeners()
        out, err = self.sh(f"python3 {self.client} highbits", "--settings", self.settings)
        self.assertEqual(out.split("\n")[:3], ["socket -1 EPERM", "socketpair -1 EPERM", "setsockopt -1 EPERM"],
                         err)

    def test_compat_system_calls_make_no_datagram_socket(self):
        # socketcall and socket through int 0x80 (the i386 ABI: the filter's architecture check), and x32.
        import shutil
        if not shutil.which("gcc"):
            self.skipTest("no gcc")
        self.listeners()
        src = self.write(os.path.join(self.dir, "compat.c"), COMPAT_C)
        exe = os.path.join(self.dir, "compat")
        subprocess.run(["gcc", "-O1", "-o", exe, src], check=True)
        os.chmod(exe, 0o755)
        for flags in ([], ["--settings", self.settings]):
            for which in ("socketcall", "i386", "x32"):
                out, err = self.sh(f"{exe} {which}; echo rc=$?", *flags)
                self.assertNotIn("MADE", out, (flags, which, err))
                self.assertIn("rc=159", out, (flags, which, out, err))  # SIGSYS: killed by the filter

    def test_allow_ptrace_takes_no_descriptor_of_the_listed_service(self):
        # With --allow-ptrace pidfd_getfd is allowed; SO_PEERPIDFD of a listed socket names the service, a
        # host process (as root, of the same uid as root's command). Its descriptors (a datagram socket among
        # them) stay out of reach: Landlock's ptrace scope, another uid, or the filter without namespaces.
        self.listeners()
        target, host = self.host_dgram()
        handing = Handing(os.path.join(self.outside, "handing.sock"))
        self.addCleanup(handing.close)
        settings = self.write(os.path.join(self.dir, "handing.json"), json.dumps(
            {"network": {"allowUnixSockets": [handing.path]}}))
        out, err = self.sh(f"python3 {self.client} peerpidfd {handing.path} {target}", "--settings", settings,
                           "--allow-ptrace")
        self.assertNotIn("SENT", out, err)
        self.assert_nothing_arrived(host, out)
        self.assertTrue(out.startswith("GETFD E"), (out, err))




class AsRoot(UnixSocketCase, unittest.TestCase):
    AS_USER = False


class AsUser(UnixSocketCase, unittest.TestCase):
    AS_USER = True


class WithUserFlag(UnixSocketCase, unittest.TestCase):
    USER_FLAG = True


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env, Upstream], "they create a user"))
