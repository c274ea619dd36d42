#!/usr/bin/python3
"""Integration tests for `cordon run --user`, `--pids` and `--memory`: real jailed commands, as root and as an
unprivileged user created for the run (removed afterwards). Needs root. No network traffic at all.

    python3 tests/jail/test_limits.py --cordon build/cordon [-k pattern]
"""
import os
import secrets
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import PY, Env, JailFixtures  # noqa: E402


def cgroup_dirs():
    """This process's cgroup directory per v1 controller ('memory', 'pids') and for v2 ('unified'), from
    /proc/self/cgroup and /proc/self/mountinfo (what cordon, started from here, sits in too)."""
    paths = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            ident, controllers, path = line.rstrip("\n").split(":", 2)
            if ident == "0" and not controllers:
                paths["unified"] = path
            for c in controllers.split(","):
                paths[c] = path
    dirs = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            dash = fields.index("-")
            root, mount_point, fstype, options = fields[3], fields[4], fields[dash + 1], fields[dash + 3]
            keys = ["unified"] if fstype == "cgroup2" else options.split(",") if fstype == "cgroup" else []
            for key in keys:
                if key in paths and key not in dirs and paths[key].startswith(root):
                    dirs[key] = os.path.join(mount_point, os.path.relpath(paths[key], root))
    return dirs


def cgroups_usable():
    """Whether root can make a cgroup with the pids controller here (so cordon must use one)."""
    dirs = cgroup_dirs()
    if "pids" in dirs:
        probe = os.path.join(dirs["pids"], "cordon-probe-" + secrets.token_hex(4))
        try:
            os.mkdir(probe)
            os.rmdir(probe)
            return True
        except OSError:
            pass
    if "unified" in dirs:
        try:
            with open(os.path.join(dirs["unified"], "cgroup.controllers")) as f:
                return "pids" in f.read().split()
        except OSError:
            pass
    return False


# A command that forks sleepers until the kernel refuses, and says how many it made (at most 200).
FORK_COUNTER = """
import os, time
n = 0
for i in range(200):
    try:
        pid = os.fork()
    except OSError as e:
        print("refused", e.errno)
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    n += 1
print("forked", n)
"""

# Four children that each hold 150 MB (bytearray zero-fills: every page is touched) for two seconds.
FOUR_TIMES_150MB = """
import os, time
kids = []
for i in range(4):
    pid = os.fork()
    if pid == 0:
        try:
            b = bytearray(150 << 20)
            time.sleep(2)
            os._exit(0)
        except MemoryError:
            os._exit(3)
    kids.append(pid)
lived = 0
for pid in kids:
    _, status = os.waitpid(pid, 0)
    lived += os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
print("lived", lived)
"""

# Runs the rest of the command line in a private mount namespace without any cgroup file system.
WITHOUT_CGROUPS = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                   "umount -l /sys/fs/cgroup 2>/dev/null; "
                   "for m in $(awk '$9 ~ /^cgroup/ {print $5}' /proc/self/mountinfo | sort -r); do umount -l $m; "
                   "done; exec \"$@\"", "sh"]


class LimitsCase(JailFixtures):
    """The jail tests' fixtures, with a minute per run by default (forks and memory take their time)."""

    def run_jail(self, args, timeout=60, prefix=()):
        return super().run_jail(args, timeout=timeout, prefix=prefix)


class AsRoot(LimitsCase, unittest.TestCase):
    AS_USER = False

    # --- --user (issue 8 §5) -------------------------------------------------------------------------------

    def test_unknown_user_is_refused_without_crashing(self):
        # A statically linked glibc loaded the host's NSS modules here and died with SIGSEGV.
        name = "nosuchuser" + secrets.token_hex(3)
        rc, out, err = self.run_jail(["--user", name, "--", "id"])
        self.assertEqual(rc, 2, err)
        self.assertIn(f"no such user '{name}'", err)
        self.assertEqual(out, "")

    def test_user_by_name(self):
        rc, out, err = self.run_jail(["--user", Env.user, "--", "sh", "-c", "id -u; id -g; id -G"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split(), [str(Env.uid), str(Env.gid), str(Env.gid)])

    def test_user_root_by_name_and_number(self):
        # Failed with "clear supplementary groups: Operation not permitted".
        for user in ("root", "0", "0:0"):
            rc, out, err = self.run_jail(["--user", user, "--", "sh", "-c",
                                          "id -u; id -g; id -G; grep CapEff /proc/self/status"])
            self.assertEqual(rc, 0, f"--user {user}: {err}")
            lines = out.splitlines()
            self.assertEqual(lines[:3], ["0", "0", "0"], user)
            self.assertIn("0000000000000000", lines[3])

    def test_user_root_with_another_group(self):
        rc, out, err = self.run_jail(["--user", f"0:{Env.gid}", "--", "sh", "-c", "id -u; id -g; id -G"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split(), ["0", str(Env.gid), str(Env.gid)])

    # --- exit status of set-up failures (issue 10) ----------------------------------------------------------

    def test_audit_log_that_cannot_be_opened_is_a_setup_failure(self):
        # Exited 2, the status of usage errors.
        missing = os.path.join(self.cwd, "no-such-dir", "audit.jsonl")
        rc, out, err = self.run_jail(["--audit-log", missing, "--", "/bin/echo", "ran"])
        self.assertEqual((rc, out), (125, ""), err)
        self.assertRegex(err, "cannot open (the )?audit log")

    def test_name_lookups_use_the_shared_glibc(self):
        # getpwnam & co come from the system's libc.so (NSS modules match it), not from a static copy.
        syms = subprocess.run(["readelf", "--dyn-syms", "--wide", Env.cordon], capture_output=True, text=True,
                              check=True).stdout
        if "__asan_init" in syms:
            self.skipTest("the sanitized build (scripts/test) intercepts getpwnam & co in its ASan runtime")
        self.assertRegex(syms, r"UND getpwnam@GLIBC")
        self.assertRegex(syms, r"UND getpwuid@GLIBC")

    # --- --pids and --memory (issue 8 §6) ------------------------------------------------------------------

    def require_cgroup(self, rc, err):
        """Where root can make no cgroup (a container without delegation), cordon refuses --pids for root: that
        refusal is checked by test_pids_refused_for_root_without_cgroups; the cgroup tests have nothing to run."""
        if not cgroups_usable() and rc == 125 and "RLIMIT_NPROC does not apply to the host's root" in err:
            self.skipTest("no usable cgroup on this machine: " + err.strip())

    def test_fork_bomb_is_contained(self):
        # As root, RLIMIT_NPROC limited nothing: the command forked all 200.
        rc, out, err = self.run_jail(["--pids", "50", "--", PY, "-c", FORK_COUNTER])
        self.require_cgroup(rc, err)
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"--pids 50 for the whole jail \(cgroup v[12]\)")
        forked = int(out.split("forked")[1])
        # 50 processes in the jail: its init and the counter included.
        self.assertLessEqual(forked, 48, out)
        self.assertGreater(forked, 10, out)

    def test_fork_bomb_ends(self):
        start = time.monotonic()
        rc, _, err = self.run_jail(["--pids", "50", "--timeout", "3", "-c", "b() { b & b & wait; }; b"])
        self.require_cgroup(rc, err)
        self.assertIn("--pids 50 for the whole jail", err)
        # The shells give up when they cannot fork (the top one exits 0 or 2 depending on where it was refused),
        # or the timeout ends them (124): either way the jail ends, and run_jail would have failed otherwise.
        self.assertIn("Cannot fork", err)
        self.assertLess(time.monotonic() - start, 30)

    def test_memory_limit_holds_for_the_whole_jail(self):
        # As RLIMIT_AS (per process) all four lived.
        rc, out, err = self.run_jail(["--memory", "200M", "--", PY, "-c", FOUR_TIMES_150MB])
        if "rlimit RLIMIT_AS" in err and not cgroups_usable():
            self.skipTest("no usable memory cgroup on this machine: " + err.strip())
        self.assertEqual(rc, 0, err)
        self.assertRegex(err, r"--memory 200M for the whole jail \(cgroup v[12]\)")
        self.assertLess(int(out.split("lived")[1]), 4, out)

    def start_sleeping_jail(self):
        """A jail that prints its cgroups and sleeps; returns (process, {controller: host directory})."""
        p = self.popen(["--pids", "50", "--memory", "100M", "-c", "cat /proc/self/cgroup; echo END; exec sleep 60"])
        seen = {}
        for line in p.stdout:
            if line.strip() == "END":
                break
            ident, controllers, path = line.rstrip("\n").split(":", 2)
            for c in (["unified"] if ident == "0" and not controllers else controllers.split(",")):
                seen[c] = path
        if p.poll() is not None:
            err = p.stderr.read()
            self.require_cgroup(p.returncode, err)
            self.fail(f"the jail ended early: {err}")
        mine = cgroup_dirs()
        dirs = {}
        for c in ("memory", "pids", "unified"):
            # Inside, the jail's cgroup namespace is rooted at the supervisor's cgroup (ours).
            if c in seen and os.path.basename(seen[c]).startswith("cordon-") and c in mine:
                dirs[c] = os.path.join(mine[c], os.path.basename(seen[c]))
        if not dirs:
            p.kill()
            _, err = p.communicate()
            if cgroups_usable():
                self.fail(f"the jail has no cgroup although root can make one here: {err}")
            self.skipTest("the jail has no cgroup here")
        return p, dirs

    def test_cgroup_is_made_and_removed_at_the_end(self):
        p, dirs = self.start_sleeping_jail()
        try:
            for c, d in dirs.items():
                self.assertTrue(os.path.isdir(d), d)
            if "pids" in dirs:
                with open(os.path.join(dirs["pids"], "pids.max")) as f:
                    self.assertEqual(f.read().strip(), "50")
            if "memory" in dirs:
                with open(os.path.join(dirs["memory"], "memory.limit_in_bytes")) as f:
                    self.assertEqual(int(f.read()), 100 << 20)
        finally:
            p.send_signal(signal.SIGTERM)
            p.communicate(timeout=30)
        self.assertEqual(p.returncode, 128 + signal.SIGTERM)
        for d in dirs.values():
            self.assertFalse(os.path.exists(d), d)

    def test_command_cannot_raise_its_limit_or_leave_its_cgroup(self):
        if not cgroups_usable():
            self.skipTest("no usable cgroup on this machine")
        # The jail's root (the host's uid 0, no capabilities) sees the cgroup file systems read-only.
        script = ("for d in /sys/fs/cgroup/pids /sys/fs/cgroup/memory /sys/fs/cgroup; do "
                  "  g=$(awk -F: '$2 ~ /(^|,)pids(,|$)/ || $1 == 0 {print $3; exit}' /proc/self/cgroup); "
                  "  [ -d \"$d$g\" ] && { echo 100000 > \"$d$g/pids.max\" && echo RAISED; }; "
                  "  [ -d \"$d\" ] && { echo $$ > \"$d/cgroup.procs\" && echo MOVED; }; "
                  "done; grep -q cordon- /proc/self/cgroup && echo STILL-INSIDE")
        rc, out, err = self.run_jail(["--pids", "50", "-c", script])
        self.assertEqual(rc, 0, err)
        self.assertNotIn("RAISED", out)
        self.assertNotIn("MOVED", out)
        self.assertIn("STILL-INSIDE", out)

    def test_cgroup_of_a_killed_supervisor_is_removed_by_the_next_run(self):
        p, dirs = self.start_sleeping_jail()
        p.kill()
        p.communicate(timeout=30)
        # The jail dies with its supervisor (PR_SET_PDEATHSIG); then its cgroup is empty, and left behind.
        deadline = time.monotonic() + 10
        for d in dirs.values():
            while os.path.isdir(d) and time.monotonic() < deadline:
                with open(os.path.join(d, "cgroup.procs")) as f:
                    if not f.read().strip():
                        break
                time.sleep(0.05)
        rc, _, err = self.run_jail(["--pids", "50", "--", "/bin/true"])
        self.assertEqual(rc, 0, err)
        for d in dirs.values():
            self.assertFalse(os.path.exists(d), d)

    def test_pids_refused_for_root_without_cgroups(self):
        # Never fail open: RLIMIT_NPROC does not bind the host's root, so without a cgroup --pids cannot hold.
        rc, out, err = self.run_jail(["--pids", "50", "--", "/bin/echo", "ran"], prefix=WITHOUT_CGROUPS)
        self.assertEqual((rc, out), (125, ""), err)
        self.assertIn("--pids: no cgroup can limit the jail's processes", err)
        self.assertIn("--best-effort", err)
        rc, out, err = self.run_jail(["--pids", "50", "--best-effort", "--", "/bin/echo", "ran"],
                                     prefix=WITHOUT_CGROUPS)
        self.assertEqual((rc, out), (0, "ran\n"), err)
        self.assertIn("warning: --best-effort: running without a process limit", err)
        # Run as another user, the rlimit applies.
        rc, out, err = self.run_jail(["--pids", "4", "--user", Env.user, "-c",
                                      "for i in 1 2 3 4 5 6; do sleep 2 & done; wait; echo done"],
                                     prefix=WITHOUT_CGROUPS)
        self.assertIn("--pids 4 processes of the user (rlimit RLIMIT_NPROC", err)
        self.assertRegex(err, "fork|Resource temporarily unavailable")

    def test_memory_falls_back_to_rlimit_without_cgroups(self):
        rc, out, err = self.run_jail(["--memory", "64M", "--", PY, "-c", "b = bytearray(256 << 20); print('big')"],
                                     prefix=WITHOUT_CGROUPS)
        self.assertNotEqual(rc, 0)
        self.assertNotIn("big", out)
        self.assertIn("--memory 64M per process (rlimit RLIMIT_AS", err)
        self.assertEqual(len([l for l in err.splitlines() if "limits in force" in l]), 1, err)


class AsUser(LimitsCase, unittest.TestCase):
    AS_USER = True

    def test_user_flag_needs_root(self):
        rc, _, err = self.run_jail(["--user", "0", "--", "/bin/true"])
        self.assertEqual(rc, 2)
        self.assertIn("--user needs root", err)

    def test_limits_say_which_holds(self):
        rc, out, err = self.run_jail(["--pids", "20", "--memory", "1G", "--", "/bin/echo", "ran"])
        self.assertEqual((rc, out), (0, "ran\n"), err)
        notes = [l for l in err.splitlines() if "limits in force" in l]
        self.assertEqual(len(notes), 1, err)
        # A user may create cgroups only in a v2 subtree delegated to it; otherwise the rlimits hold.
        self.assertRegex(notes[0], r"--pids 20 (for the whole jail \(cgroup v2\)|processes of the user \(rlimit)")
        self.assertRegex(notes[0], r"--memory 1G (for the whole jail \(cgroup v2\)|per process \(rlimit)")


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user and cgroups"))
