#!/usr/bin/python3
"""Attack review of issue 26's new parts of the jail without namespaces (`cordon run --jail landlock`, and auto's
fallback in the simulated hosts of hosts.py), made as an untrusted jailed command would: root's chmod family
decided by the write rules and performed by the supervisor (ChmodCases), the keeper that ends the run's processes
and removes its TMPDIR (KeeperCases).

python3 test_landlock_review26.py --cordon BUILD/cordon (root: the simulations and the test user)."""
import json
import os
import signal
import stat
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jail"))
sys.path.insert(0, HERE)
import hosts  # noqa: E402
import test_landlock_jail  # noqa: E402
from jailtest import PY, Env, Upstream, run_main  # noqa: E402

# test_landlock_jail.Cases's hosts, identities and `cordon run` wrapper, without its cases.
Base = type("Base", test_landlock_jail.Cases.__bases__,
            {k: v for k, v in vars(test_landlock_jail.Cases).items() if not k.startswith(("test_", "__"))})

# A jailed python that tries each chmod given as NAME=PATH:MODE (octal) through the call the name says, and
# prints one line per attempt: "NAME changed" when the call returned 0, else "NAME ERRNO".
CHMOD_PROBE = r"""
import ctypes, errno, os, sys
libc = ctypes.CDLL(None, use_errno=True)

def fchmodat2(path, mode, flags):
    if libc.syscall(452, -100, path.encode(), mode, flags) != 0:
        raise OSError(ctypes.get_errno(), path)

def via_fd(path, mode, flags):
    fd = os.open(path, flags)
    try:
        os.chmod(f"/proc/self/fd/{fd}", mode)
    finally:
        os.close(fd)

def fchmod(path, mode, flags):
    fd = os.open(path, flags)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)

calls = {
    "chmod": lambda p, m: os.chmod(p, m),
    "fchmod": lambda p, m: fchmod(p, m, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY),
    "fchmod-path": lambda p, m: fchmod(p, m, os.O_PATH),
    "procfd": lambda p, m: via_fd(p, m, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY),
    "procfd-path": lambda p, m: via_fd(p, m, os.O_PATH),
    "fchmodat2": lambda p, m: fchmodat2(p, m, 0),
}
for arg in sys.argv[1:]:
    name, rest = arg.split("=", 1)
    path, mode = rest.rsplit(":", 1)
    try:
        calls[name.split("/")[0]](path, int(mode, 8))
        print(name, "changed")
    except OSError as e:
        print(name, errno.errorcode.get(e.errno, str(e)))
"""


class ChmodCases(Base):
    """Root's chmod family without namespaces: the supervisor decides it by the write rules and performs it."""

    def root_only(self):
        if self.runs_as_user():
            self.skipTest("does not apply: a user's chmod of its own files is not notified (README)")

    def chmod(self, *attempts):
        rc, out, err = self.run_jail(["--", PY, "-c", CHMOD_PROBE, *attempts])
        self.assertEqual(rc, 0, err)
        got = dict(line.split(" ", 1) for line in out.splitlines())
        self.assertEqual(len(got), len(attempts), out)
        return got

    def test_files_outside_and_protected_names_keep_their_modes(self):
        self.root_only()
        outside = self.write(os.path.join(self.outside, "system"))
        os.chmod(outside, 0o644)
        os.mkdir(os.path.join(self.outside, "dir"), 0o755)
        protected = [self.write(os.path.join(self.cwd, rel)) for rel in
                     (".bashrc", ".git/hooks/pre-commit", ".claude/settings.json")]
        for path in protected:
            os.chmod(path, 0o644)
        # A symlink in the project to the file outside, and one to a protected name.
        os.symlink(outside, os.path.join(self.cwd, "link"))
        os.symlink(protected[0], os.path.join(self.cwd, "link-bashrc"))
        attempts = [f"{call}/outside={outside}:666" for call in
                    ("chmod", "fchmod", "procfd", "fchmodat2", "procfd-path")]
        attempts += [f"chmod/dir={self.outside}/dir:777", f"chmod/link={self.cwd}/link:666",
                     f"chmod/link-bashrc={self.cwd}/link-bashrc:666", f"fchmod-path/outside={outside}:666"]
        attempts += [f"{call}/{os.path.basename(p)}={p}:777" for p in protected for call in ("chmod", "fchmod")]
        got = self.chmod(*attempts)
        self.assertEqual([name for name, what in got.items() if what == "changed"], [], got)
        self.assertEqual(got["fchmod-path/outside"], "EBADF", got)
        self.assertEqual(oct(os.stat(outside).st_mode & 0o7777), oct(0o644))
        self.assertEqual(oct(os.stat(os.path.join(self.outside, "dir")).st_mode & 0o7777), oct(0o755))
        for path in protected:
            self.assertEqual(oct(os.stat(path).st_mode & 0o7777), oct(0o644), path)

    def test_set_id_bits_are_not_set(self):
        self.root_only()
        program = self.write(os.path.join(self.cwd, "program"))
        os.chmod(program, 0o755)
        got = self.chmod(f"chmod/suid={program}:4755", f"fchmodat2/suid={program}:4755",
                         f"fchmod/sgid={program}:2755", f"chmod/sgid={program}:2755")
        self.assertEqual([name for name, what in got.items() if what == "changed"], [], got)
        self.assertEqual(oct(os.stat(program).st_mode & 0o7777), oct(0o755))

    def test_host_device_nodes_keep_their_modes(self):
        # The host's /dev is the command's here (the namespace jail has its own): root's command owns its device
        # nodes, and the devices it may write (null, zero, full, tty, ptmx, its terminal) are the host's files,
        # whose modes every program on the host relies on (`chmod 600 /dev/null` breaks every other user's
        # shell; `chmod 666` on root's other terminal lets every user read what is typed there). Each attempt
        # sets the mode the node already has, so a hole changes nothing on this machine but says "changed".
        self.root_only()
        master, slave = os.openpty()
        try:
            other = os.ttyname(slave)  # root's, no process's terminal: owned by root, mode 0620
            attempts = []
            for dev in ("/dev/null", "/dev/full", "/dev/zero", "/dev/tty", other):
                mode = oct(os.stat(dev).st_mode & 0o7777)[2:]
                attempts += [f"chmod/{dev}={dev}:{mode}", f"fchmod/{dev}={dev}:{mode}"]
            got = self.chmod(*attempts)
            changed = [name for name, what in got.items() if what == "changed"]
            self.assertEqual(changed, [], got)
        finally:
            os.close(master)
            os.close(slave)

    def test_the_project_stays_chmoddable(self):
        # What git does as root (lock files and config in the project): not refused by the cases above.
        self.root_only()
        mine = self.write(os.path.join(self.cwd, "mine"))
        os.chmod(mine, 0o644)
        got = self.chmod(f"chmod/mine={mine}:600", f"fchmod/mine={mine}:640")
        self.assertEqual(set(got.values()), {"changed"}, got)
        self.assertEqual(oct(os.stat(mine).st_mode & 0o7777), oct(0o640))


# A jailed python that leaves a process behind whose main thread has ended while another thread runs (a
# thread group's leader stays a zombie until its last thread ends): it writes its pid into the project first.
LEADER_EXIT = r"""
import ctypes, os, sys, threading, time
if os.fork() == 0:
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    with open(sys.argv[1], "w") as f:
        f.write(str(os.getpid()))
    threading.Thread(target=lambda: time.sleep(300)).start()
    time.sleep(0.2)
    ctypes.CDLL(None).pthread_exit(None)
time.sleep(1)
"""


def alive(pid):
    """Whether any thread of `pid` still runs (its leader may be a zombie)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                line = f.read()
        except OSError:
            continue
        if line[line.rfind(")") + 2] not in "ZX":
            return True
    return False


class KeeperCases(Base):
    """The keeper: the run's processes end with it, and it removes the run's TMPDIR and nothing else."""

    def test_a_process_whose_leader_thread_ended_does_not_outlive_the_run(self):
        pidfile = os.path.join(self.cwd, "pid")
        rc, out, err = self.run_jail(["--", PY, "-c", LEADER_EXIT, pidfile])
        self.assertEqual(rc, 0, err)
        with open(pidfile) as f:
            pid = int(f.read())
        try:
            for _ in range(100):
                if not alive(pid):
                    break
                time.sleep(0.05)
            self.assertFalse(alive(pid), "a process of the run (its leader thread ended) outlived the run")
        finally:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

    def test_tmpdir_replaced_by_a_link_to_the_project(self):
        # The keeper and the supervisor remove the run's TMPDIR: swapped for a symlink to the project (or holding
        # one), only the link may go.
        keep = self.write(os.path.join(self.cwd, "keep"))
        out, _ = self.sh(f'ln -s {self.cwd} "$TMPDIR/inner"; '
                         f'mv "$TMPDIR" "$TMPDIR.away" 2>/dev/null || rmdir "$TMPDIR" 2>/dev/null; '
                         f'ln -s {self.cwd} "$TMPDIR" 2>/dev/null; echo "$TMPDIR"', expect=None)
        tmpdir = out.split()[-1]
        self.assertEqual(self.read(keep), "original\n")
        self.assertTrue(os.path.isdir(self.cwd))
        for leftover in (tmpdir, tmpdir + ".away"):
            self.assertFalse(os.path.lexists(leftover), leftover)


class EarlyKillCases(Base):
    """A supervisor killed with SIGKILL before the keeper exists (while the policy loads)."""

    caller_tmp = None

    def env(self):
        env = super().env()
        if self.caller_tmp:
            env["TMPDIR"] = self.caller_tmp  # the run's TMPDIR is made below it: leftovers are found here
        return env

    def test_supervisor_killed_early_leaves_no_tmpdir(self):
        # The run's TMPDIR is made at start, the keeper forked only after the policy loads: a SIGKILL in
        # between, or while the keeper waits for the supervisor's word, left the empty TMPDIR behind (below the
        # caller's TMPDIR, else /tmp). The janitor that makes it removes it; the keeper leaves with the
        # supervisor.
        if self.host:
            self.skipTest("the supervisor is the process started here only without a simulated host")
        self.caller_tmp = self.mkdir("outside/tmp")
        # The window made wide by a long policy to load: killed as soon as the TMPDIR is there.
        settings = self.write(os.path.join(self.outside, "big.json"), json.dumps(
            {"network": {"allowedDomains": [], "deniedDomains": [f"d{i}.example" for i in range(100000)]}}))
        for _ in range(5):
            p = self.popen(["--settings", settings, "--", "sleep", "5"])
            while not os.listdir(self.caller_tmp) and p.poll() is None:
                time.sleep(0.001)
            p.kill()
            p.communicate(timeout=30)
            self.assertTrue(p.returncode == -signal.SIGKILL, "the run ended before its TMPDIR was made")
            for _ in range(500):  # removed by then, or the next round would see this one's
                if not os.listdir(self.caller_tmp):
                    break
                time.sleep(0.01)
            self.assertEqual(os.listdir(self.caller_tmp), [])
        for delay in [i * 0.004 for i in range(75)]:  # and at every moment of a short one
            p = self.popen(["--", "sleep", "5"])
            time.sleep(delay)
            p.kill()
            p.communicate(timeout=30)
        time.sleep(2)
        self.assertEqual(os.listdir(self.caller_tmp), [])


class ForcedAsRoot(ChmodCases, KeeperCases, EarlyKillCases, unittest.TestCase):
    pass


class ForcedAsUser(ChmodCases, KeeperCases, EarlyKillCases, unittest.TestCase):
    AS_USER = True


class DockerHost(ChmodCases, KeeperCases, unittest.TestCase):
    FLAGS = ()
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.DockerHost()


class NoLandlockHost(ChmodCases, KeeperCases, unittest.TestCase):
    FLAGS = ()
    HAS_LANDLOCK = False
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.NoLandlockHost(within=hosts.DockerHost())


if __name__ == "__main__":
    sys.exit(run_main([Env, Upstream], "the host simulations and a test user"))
