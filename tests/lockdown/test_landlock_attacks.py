#!/usr/bin/python3
"""Attacks on the jail without namespaces (`cordon run --jail landlock`, and auto's fallback in the simulated hosts
of hosts.py) that its own suite (test_landlock_jail.py) does not make. ReadRuleCases: the supervisor performs the
notified calls outside the command's Landlock domain, so whatever it opens, renames or links on the command's
behalf must not reach what the read rules hide (denyRead, the read scope), which no mount hides here.
HostReachCases: what the host shares with the command when no namespace separates them (other programs' shared
memory in /dev/shm, the user's other terminals in /dev/pts, host processes' resource limits, and for root's
command the host's system files, whose ACLs are modes).

python3 test_landlock_attacks.py --cordon BUILD/cordon (root: the simulations and the test user)."""
import fcntl
import os
import struct
import subprocess
import sys
import termios
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jail"))
sys.path.insert(0, HERE)
import hosts  # noqa: E402
import test_landlock_jail  # noqa: E402
from jailtest import PY, Env, Upstream, run_main  # noqa: E402

SECRET = "s3cret-value"

# A jailed python that tries each way around the read rules through a notified call, and prints one line per
# way: "leak" when the secret came back, else what it got (an errno's name, or "no-secret").
READ_PROBE = r"""
import ctypes, errno, os, sys
secret = sys.argv[1].encode()
libc = ctypes.CDLL(None, use_errno=True)

class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]

def openat2(path, flags):
    how = OpenHow(flags, 0, 0)
    fd = libc.syscall(437, -100, path.encode(), ctypes.byref(how), ctypes.sizeof(how))
    if fd < 0:
        raise OSError(ctypes.get_errno(), path)
    return fd

def read_fd(fd):
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)

def read_path(path):
    return read_fd(os.open(path, os.O_RDONLY))

def attempt(name, how):
    try:
        data = how()
        print(name, "leak" if secret in data else "no-secret")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e)))

inside, inside_dir, outside = sys.argv[2:5]
attempt("open-rdwr", lambda: read_fd(os.open(inside, os.O_RDWR)))
attempt("open-append", lambda: read_fd(os.open(inside, os.O_RDWR | os.O_APPEND)))
attempt("open-rdwr-dir", lambda: read_fd(os.open(os.path.join(inside_dir, "id"), os.O_RDWR)))
attempt("open-creat", lambda: read_fd(os.open(inside, os.O_RDWR | os.O_CREAT, 0o600)))
attempt("openat2-inside", lambda: read_fd(openat2(inside, os.O_RDONLY)))
attempt("openat2-outside", lambda: read_fd(openat2(outside, os.O_RDONLY)))
attempt("openat2-dir", lambda: read_fd(openat2(os.path.join(inside_dir, "id"), os.O_RDONLY)))
def linked():
    os.link(inside, "linked")
    return read_path("linked")
attempt("link", linked)
def renamed():
    os.rename(inside, "renamed")
    return read_path("renamed")
attempt("rename", renamed)
def renamed_dir():
    os.rename(inside_dir, "renamed-dir")
    return read_path("renamed-dir/id")
attempt("rename-dir", renamed_dir)
"""


# test_landlock_jail.Cases's hosts, identities and `cordon run` wrapper, without its cases.
Base = type("Base", test_landlock_jail.Cases.__bases__,
            {k: v for k, v in vars(test_landlock_jail.Cases).items() if not k.startswith(("test_", "__"))})


class ReadRuleCases(Base):

    def test_notified_calls_do_not_reach_what_read_rules_hide(self):
        if not self.HAS_LANDLOCK:
            self.skipTest("does not apply: without Landlock a read rule stops the run "
                          "(test_landlock_jail: test_deny_read_holds_or_the_run_stops)")
        inside = self.write(os.path.join(self.cwd, "secret.env"), SECRET + "\n")
        key = self.write(os.path.join(self.cwd, "keys", "id"), SECRET + "\n")
        outside = self.write(os.path.join(self.outside, "secret"), SECRET + "\n")
        rc, out, err = self.run_jail(["--deny-read", inside, "--deny-read", os.path.dirname(key), "--deny-read",
                                      outside, "--", PY, "-c", READ_PROBE, SECRET, inside, os.path.dirname(key),
                                      outside])
        self.assertEqual(rc, 0, err)
        got = dict(line.split(" ", 1) for line in out.splitlines())
        self.assertEqual(len(got), 10, out)
        leaks = [name for name, what in got.items() if what == "leak"]
        self.assertEqual(leaks, [], out)
        # What the read rules hide stays where it was: nothing renamed or linked out of the hidden paths.
        for name in ("linked", "renamed", "renamed-dir"):
            self.assertFalse(os.path.exists(os.path.join(self.cwd, name)), out)
        self.assertEqual(self.read(inside), SECRET + "\n")


class HostReachCases(Base):
    """What the host shares with the command when no namespace separates them."""

    def test_host_shared_memory_is_not_written(self):
        # Another program's POSIX shared memory (the host's /dev/shm, no private one here): made before the run
        # by the command's own user, it is that program's, not the run's; the run's own segments stay free.
        name = "/dev/shm/cordon-host-" + os.urandom(4).hex()
        try:
            self.write(name, "original\n")
            self.sh(f"! echo evil > {name} && ! echo evil >> {name} && ! truncate -s0 {name} && ! rm -f {name} "
                    f"&& ! mv {name} {name}.moved && ! ln {name} {name}.linked "
                    f"&& echo mine > /dev/shm/cordon-run-$$ && echo again >> /dev/shm/cordon-run-$$ "
                    f"&& mv /dev/shm/cordon-run-$$ /dev/shm/cordon-run2-$$ && rm /dev/shm/cordon-run2-$$")
            self.assertEqual(self.read(name), "original\n")
            self.assertFalse(os.path.exists(name + ".moved") or os.path.exists(name + ".linked"))
            # POSIX semaphores and shared memory made by the run (sem_open links a temporary file into place).
            self.sh(f"{PY} -c 'import multiprocessing as m; l = m.Lock(); l.acquire(); l.release(); "
                    f"from multiprocessing import shared_memory as s; x = s.SharedMemory(create=True, size=64); "
                    f"y = s.SharedMemory(x.name); y.buf[0] = 1; y.close(); x.close(); x.unlink()'")
        finally:
            for leftover in (name, name + ".moved", name + ".linked"):
                if os.path.exists(leftover):
                    os.unlink(leftover)


    def test_other_terminals_are_neither_written_nor_read(self):
        # The user's other terminal (a pseudo-terminal that a host shell has as its controlling terminal, where
        # the next line typed may be sudo's password): the host's /dev/pts is the command's /dev/pts here.
        master, slave = os.openpty()
        own_master, own_slave = os.openpty()
        name = os.ttyname(slave)
        for tty in (name, os.ttyname(own_slave)):
            os.chown(tty, Env.uid if self.runs_as_user() else 0, -1)
        shell = subprocess.Popen(["sleep", "60"], stdin=slave, start_new_session=True,
                                 preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        opener = self.write(os.path.join(self.outside, "opener.py"),
                            "import os, sys\n"
                            "for path in sys.argv[1:]:\n"
                            "    try:\n"
                            "        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)\n"
                            "    except OSError:\n"
                            "        print('refused', path)\n"
                            "        continue\n"
                            "    try:\n"
                            "        print('read', path, os.read(fd, 100))\n"
                            "    except OSError:\n"
                            "        print('read', path)\n")
        rdev = os.stat(name).st_rdev
        alias = f"/dev/char/{os.major(rdev)}:{os.minor(rdev)}"
        try:
            # What the user types there is not the command's to read (by name, or by /dev/char's alias); the
            # run's own terminals stay usable: the one it inherits (stdin here) is opened again, and one it
            # makes (script allocates a pty and opens its slave) works.
            os.write(master, b"typed-secret\n")
            out, _ = self.sh(f"! echo evil > {name} && ! printf evil >> {name} && "
                             f"{PY} {opener} {name} {alias} $(tty) && script -qec 'echo made' /dev/null",
                             stdin=own_slave)
            lines = out.splitlines()
            if self.HAS_LANDLOCK:
                self.assertIn(f"refused {name}", lines)
                self.assertNotIn("typed-secret", out)
                if os.path.exists(alias):
                    self.assertIn(f"refused {alias}", lines)
            self.assertIn(f"read {os.ttyname(own_slave)}", " ".join(lines))
            self.assertIn("made", out)
            os.set_blocking(master, False)
            try:
                got = os.read(master, 100)
            except BlockingIOError:
                got = b""
            self.assertNotIn(b"evil", got)
        finally:
            shell.kill()
            shell.wait()
            for fd in (master, slave, own_master, own_slave):
                os.close(fd)


    def test_root_command_cannot_widen_modes_by_acl(self):
        # Root's command owns the host's system files and no read-only mount stands in front of them: chmod is
        # refused to it, and a POSIX ACL is a mode by another name (an owner may set it). The user's own files
        # are not at stake here (the namespace-free jail does not refuse a user's chmod: README).
        if self.runs_as_user():
            self.skipTest("does not apply: a user's own files (chmod not refused either, as README says)")
        system = self.write(os.path.join(self.outside, "passwd"))
        os.chmod(system, 0o644)
        # version 2; ACL_USER_OBJ rw-, ACL_GROUP_OBJ r--, ACL_OTHER rw-: mode 0646 for everyone else's writes.
        acl = struct.pack("<I", 2) + b"".join(struct.pack("<HHI", tag, perm, 0xFFFFFFFF)
                                               for tag, perm in ((1, 6), (4, 4), (0x20, 6)))
        probe = ("import os, sys\n"
                 "for call in (lambda: os.setxattr(sys.argv[1], 'system.posix_acl_access', bytes.fromhex(sys.argv[2])),"
                 " lambda: os.chmod(sys.argv[1], 0o666), lambda: os.setxattr(sys.argv[1], 'user.x', b'1'),"
                 " lambda: os.removexattr(sys.argv[1], 'system.posix_acl_access')):\n"
                 "    try:\n        call(); print('changed')\n"
                 "    except OSError as e:\n        print(e.strerror)\n")
        rc, out, err = self.run_jail(["--", PY, "-c", probe, system, acl.hex()])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("changed", out)
        self.assertEqual(oct(os.stat(system).st_mode & 0o7777), oct(0o644))


    def test_host_processes_keep_their_limits(self):
        # A host process of the same user (root's command: of root) is visible without a PID namespace; its
        # resource limits are its own (RLIMIT_FSIZE 0 would cut its next write short). The command's own stay
        # settable.
        identity = {"user": Env.uid, "group": Env.gid} if self.runs_as_user() else {}
        sleeper = subprocess.Popen(["sleep", "60"], **identity)
        try:
            probe = ("import resource, sys\n"
                     "try:\n    resource.prlimit(int(sys.argv[1]), resource.RLIMIT_NOFILE, (3, 3)); print('set')\n"
                     "except OSError as e:\n    print(e.strerror)\n"
                     "resource.setrlimit(resource.RLIMIT_CORE, (0, 0)); print('own', resource.getrlimit(4))\n"
                     "print('read', resource.prlimit(int(sys.argv[1]), resource.RLIMIT_NOFILE)[0] > 3)\n")
            rc, out, err = self.run_jail(["--", PY, "-c", probe, str(sleeper.pid)])
            self.assertEqual(rc, 0, err)
            with open(f"/proc/{sleeper.pid}/limits") as f:
                limits = [line.split()[3] for line in f if line.startswith("Max open files")]
            self.assertNotEqual(limits, ["3"], out)
            self.assertEqual(out.split("\n")[1:3], ["own (0, 0)", "read True"], out)
        finally:
            sleeper.kill()
            sleeper.wait()


class ForcedAsRoot(ReadRuleCases, HostReachCases, unittest.TestCase):
    pass


class ForcedAsUser(ReadRuleCases, HostReachCases, unittest.TestCase):
    AS_USER = True


class ForcedWithUserFlag(ReadRuleCases, HostReachCases, unittest.TestCase):
    USER_FLAG = True


class UsernsLimitHost(ReadRuleCases, HostReachCases, unittest.TestCase):
    FLAGS = ()
    AS_USER = True
    HOST_DROPS = True

    @classmethod
    def make_host(cls):
        return hosts.UsernsLimitHost(Env.user)


class DockerHost(ReadRuleCases, HostReachCases, unittest.TestCase):
    FLAGS = ()
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.DockerHost()


class NoLandlockHost(ReadRuleCases, HostReachCases, unittest.TestCase):
    FLAGS = ()
    HAS_LANDLOCK = False
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.NoLandlockHost(within=hosts.DockerHost())


if __name__ == "__main__":
    sys.exit(run_main([Env, Upstream], "the host simulations and a test user"))
