#!/usr/bin/python3
"""Integration tests for `cordon run --user`, `--pids` and `--memory`: real jailed commands, as root and as an
unprivileged user created for the run (removed afterwards). Needs root. No network traffic at all.

    python3 tests/jail/test_limits.py --cordon build/cordon [-k pattern]
"""
import argparse
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

CORDON_SRC = None  # the binary under test (copied where the test user can run it)
PY = "/usr/bin/python3"  # the system interpreter: readable by every user


class Env:
    """A base directory readable by the test user, the binary inside it, the user."""

    base = cordon = user = None
    uid = gid = None

    @classmethod
    def setup(cls):
        cls.base = tempfile.mkdtemp(prefix="cordon-limits-test-", dir="/var/tmp")
        os.chmod(cls.base, 0o755)
        cls.cordon = os.path.join(cls.base, "cordon")
        shutil.copy2(CORDON_SRC, cls.cordon)
        os.chmod(cls.cordon, 0o755)
        cls.user = "cordonlim" + secrets.token_hex(3)
        subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
                        "--user-group", cls.user], check=True)
        pw = pwd.getpwnam(cls.user)
        cls.uid, cls.gid = pw.pw_uid, pw.pw_gid

    @classmethod
    def teardown(cls):
        if cls.user:
            subprocess.run(["userdel", cls.user], check=False, stderr=subprocess.DEVNULL)
        if cls.base:
            shutil.rmtree(cls.base, ignore_errors=True)


class LimitsCase:
    """Mixed into a TestCase per identity: AS_USER False runs cordon as root, True as the test user."""

    AS_USER = False

    def setUp(self):
        self.cwd = tempfile.mkdtemp(prefix="case-", dir=Env.base)
        os.chmod(self.cwd, 0o755)
        if self.AS_USER:
            os.chown(self.cwd, Env.uid, Env.gid)

    def tearDown(self):
        shutil.rmtree(self.cwd, ignore_errors=True)

    def popen(self, args):
        identity = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if self.AS_USER else {}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.cwd, "LANG": "C.UTF-8"}
        return subprocess.Popen([Env.cordon, "run", "--no-discover", *args], cwd=self.cwd, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **identity)

    def run_jail(self, args, timeout=60):
        p = self.popen(args)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail(f"cordon run {args} timed out; stderr: {err}")
        return p.returncode, out, err


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

    def test_name_lookups_use_the_shared_glibc(self):
        # getpwnam & co come from the system's libc.so (NSS modules match it), not from a static copy.
        syms = subprocess.run(["readelf", "--dyn-syms", "--wide", Env.cordon], capture_output=True, text=True,
                              check=True).stdout
        self.assertRegex(syms, r"UND getpwnam@GLIBC")
        self.assertRegex(syms, r"UND getpwuid@GLIBC")


class AsUser(LimitsCase, unittest.TestCase):
    AS_USER = True

    def test_user_flag_needs_root(self):
        rc, _, err = self.run_jail(["--user", "0", "--", "/bin/true"])
        self.assertEqual(rc, 2)
        self.assertIn("--user needs root", err)


def main():
    global CORDON_SRC
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", required=True)
    args, rest = parser.parse_known_args()
    CORDON_SRC = os.path.abspath(args.cordon)
    if os.geteuid() != 0:
        print("limits integration tests need root (they create a user and cgroups)", file=sys.stderr)
        return 77
    Env.setup()
    try:
        prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
        return 0 if prog.result.wasSuccessful() else 1
    finally:
        Env.teardown()


if __name__ == "__main__":
    sys.exit(main())
