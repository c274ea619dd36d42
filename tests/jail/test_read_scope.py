#!/usr/bin/python3
"""Integration tests for `cordon run --read-scope project` (issue 17): real jailed commands, as root and as an
unprivileged user created for the run (removed afterwards), and `cordon check read:PATH` on the same paths.
Needs root (user creation). Hermetic: no network at all.

    python3 tests/jail/test_read_scope.py --cordon build/cordon [-k pattern]
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import Env, JailFixtures  # noqa: E402


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return max(0, libc.syscall(444, None, 0, 1))  # landlock_create_ruleset(NULL, 0, VERSION)


class ScopeCase(JailFixtures):
    """Mixed into a TestCase per identity: AS_USER False runs as root, True as the unprivileged test user."""

    def setUp(self):
        # Below /var/tmp (as Env.base): the host's /tmp is not the jail's.
        self.dir = tempfile.mkdtemp(prefix="scope-", dir=Env.base)
        os.chmod(self.dir, 0o755)
        self.cwd = self.mkdir("project")
        self.sibling = self.mkdir("sibling")
        self.home = self.mkdir("home")
        self.write(os.path.join(self.cwd, "notes.txt"), "PROJECT\n")
        self.write(os.path.join(self.sibling, "other.txt"), "SIBLING\n")
        self.write(os.path.join(self.home, "secret.txt"), "HOME\n")
        self.write(os.path.join(self.home, ".gitconfig"), "[user]\n\tname = Scope Tester\n\temail = t@example.invalid\n")

    def cordon(self, args, stdin=None, stdout=subprocess.PIPE, timeout=60):
        p = subprocess.run([Env.cordon, *args], cwd=self.cwd, env=self.env(), stdin=stdin, stdout=stdout,
                           stderr=subprocess.PIPE, text=True, timeout=timeout, **self._identity())
        return p.returncode, p.stdout, p.stderr

    def run_scoped(self, script, *flags, stdin=None, stdout=subprocess.PIPE):
        return self.cordon(["run", "--no-discover", "--read-scope", "project", *flags, "-c", script], stdin=stdin,
                           stdout=stdout)

    def readable_in_jail(self, path, *flags):
        # A hidden file is missing, or empty where a mask covers it (denyRead, the secrets of /etc).
        rc, out, err = self.run_scoped(f"head -c 1 {path} 2>/dev/null | wc -c", *flags)
        self.assertEqual(rc, 0, err)
        return out.strip() == "1"

    def check(self, path, *flags):
        rc, out, err = self.cordon(["check", "--no-discover", "--read-scope", "project", *flags, "--json",
                                    f"read:{path}"])
        self.assertIn(rc, (0, 1), err)
        return rc == 0, json.loads(out)

    # --- what is readable -------------------------------------------------------------------------------

    def test_scope_and_check_agree(self):
        paths = {
            os.path.join(self.cwd, "notes.txt"): True,
            "/usr/bin/env": True,
            "/etc/hostname": True,
            os.path.join(self.sibling, "other.txt"): False,
            os.path.join(self.home, "secret.txt"): False,
            os.path.join(self.home, ".gitconfig"): False,
        }
        if os.path.exists("/etc/shadow") and not self.AS_USER:
            paths["/etc/shadow"] = False  # readable by root without the scope
        for path, expected in paths.items():
            with self.subTest(path=path):
                self.assertEqual(self.readable_in_jail(path), expected)
                allowed, decision = self.check(path)
                self.assertEqual(allowed, expected, decision)
                if not expected and path != "/etc/shadow":
                    self.assertEqual(decision["reason"], "outside-read-scope")

    def test_default_scope_reads_outside_the_project(self):
        # The same paths without the flag: srt's behaviour, everything but denyRead.
        rc, out, err = self.cordon(["run", "--no-discover", "-c",
                                    f"cat {self.sibling}/other.txt {self.home}/secret.txt"])
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "SIBLING\nHOME\n")

    def test_listing_hides_the_rest(self):
        rc, out, err = self.run_scoped(f"ls {self.dir}; ls {self.home} 2>&1 | head -1; ls /; cat notes.txt")
        self.assertEqual(rc, 0, err)
        listed = out.split()
        self.assertIn("project", listed)
        self.assertNotIn("sibling", listed)
        self.assertNotIn("secret.txt", out)
        for name in ("usr", "etc", "bin", "tmp", "proc", "dev"):
            self.assertIn(name, listed)
        self.assertNotIn("root", listed)
        self.assertIn("PROJECT", out)

    def test_shadow_and_host_keys_hidden(self):
        for secret in ("/etc/shadow", "/etc/gshadow", "/etc/ssh/ssh_host_ed25519_key"):
            if not os.path.exists(secret):
                continue
            with self.subTest(secret=secret):
                rc, out, err = self.run_scoped(f"cat {secret} 2>/dev/null | wc -c")
                self.assertEqual(rc, 0, err)
                self.assertEqual(out.strip(), "0")
                allowed, _ = self.check(secret)
                self.assertFalse(allowed)
        self.assertTrue(self.readable_in_jail("/etc/passwd"))

    def test_allow_read_gitconfig(self):
        out_without = self.run_scoped("git config --global -l; true")[1]
        self.assertNotIn("user.name=Scope Tester", out_without)
        gitconfig = os.path.join(self.home, ".gitconfig")
        rc, out, err = self.run_scoped("git config --global -l", "--allow-read", gitconfig)
        self.assertEqual(rc, 0, err)
        self.assertIn("user.name=Scope Tester", out)
        self.assertTrue(self.check(gitconfig, "--allow-read", gitconfig)[0])
        # Only that file: the rest of the home stays hidden.
        self.assertFalse(self.readable_in_jail(os.path.join(self.home, "secret.txt"), "--allow-read", gitconfig))

    def test_allow_read_in_settings_file(self):
        settings = self.write(os.path.join(self.dir, "settings.json"), json.dumps(
            {"sandbox": {"filesystem": {"readScope": "project", "allowRead": ["~/.gitconfig"]}}}))
        rc, out, err = self.cordon(["run", "--no-discover", "--settings", settings, "-c",
                                    f"git config --global -l; cat {self.sibling}/other.txt"])
        self.assertNotEqual(rc, 0)
        self.assertIn("user.name=Scope Tester", out)
        self.assertNotIn("SIBLING", out)
        self.assertIn("the read scope is project", err)
        # A lower flag does not lower it.
        rc, out, err = self.cordon(["run", "--no-discover", "--settings", settings, "--read-scope", "all", "-c",
                                    f"cat {self.sibling}/other.txt"])
        self.assertNotEqual(rc, 0)
        self.assertNotIn("SIBLING", out)
        self.assertIn("--read-scope all", err)

    def test_example_settings(self):
        # examples/read-scope.json: the home paths users commonly need, as a documented example.
        example = os.path.join(os.path.dirname(os.path.dirname(jailtest.HERE)), "examples", "read-scope.json")
        settings = self.write(os.path.join(self.dir, "example.json"), open(example).read())
        rc, out, err = self.cordon(["policy", "--no-discover", "--settings", settings])
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["warnings"], [])
        rc, out, err = self.cordon(["run", "--no-discover", "--settings", settings, "-c",
                                    "git config --global -l; cat ~/secret.txt 2>/dev/null; true"])
        self.assertEqual(rc, 0, err)
        self.assertIn("user.name=Scope Tester", out)
        self.assertNotIn("HOME", out)

    def test_bad_read_scope_stops(self):
        settings = self.write(os.path.join(self.dir, "bad.json"),
                              '{"sandbox": {"filesystem": {\n"readScope": "everything"}}}')
        rc, out, err = self.cordon(["run", "--no-discover", "--settings", settings, "--", "/bin/echo", "RAN"])
        self.assertEqual(rc, 2)
        self.assertNotIn("RAN", out)
        self.assertIn(f"{settings}:2", err)
        rc, _, err = self.cordon(["run", "--read-scope", "home", "--", "/bin/true"])
        self.assertEqual(rc, 2)
        self.assertIn("--read-scope", err)

    def test_deny_read_still_wins_inside(self):
        env_file = self.write(os.path.join(self.cwd, ".env"), "TOKEN=1\n")
        self.assertTrue(self.readable_in_jail(env_file))
        self.assertFalse(self.readable_in_jail(env_file, "--deny-read", ".env"))
        allowed, decision = self.check(env_file, "--deny-read", ".env")
        self.assertFalse(allowed)
        self.assertEqual(decision["reason"], "blocked-by-denylist")

    def test_a_glob_match_gone_before_its_mask_is_no_failure(self):
        # `/etc/shadow*` matched the /etc/shadow.lock a concurrent useradd held for a moment: gone before its
        # mask was mounted, the run failed (exit 125, "create mount point ... Read-only file system"). Here a
        # thread makes and removes a matching file while the runs start (1 run in 4 failed before).
        import threading
        churn = os.path.join(self.sibling, "s.lock")
        stop = threading.Event()

        def flap():
            while not stop.is_set():
                open(churn, "w").close()
                os.unlink(churn)

        t = threading.Thread(target=flap)
        t.start()
        try:
            failed = []
            for _ in range(40):
                rc, _, err = self.cordon(["run", "--no-discover", "--deny-read", os.path.join(self.sibling, "s*"),
                                          "--", "/bin/true"])
                if rc != 0:
                    failed.append(err)
        finally:
            stop.set()
            t.join()
        self.assertEqual(failed, [])

    def test_symlink_out_of_the_project(self):
        os.symlink(os.path.join(self.sibling, "other.txt"), os.path.join(self.cwd, "link"))
        self.assertFalse(self.readable_in_jail("link"))
        self.assertFalse(self.check("link")[0])

    # --- tools ----------------------------------------------------------------------------------------------

    def test_tools_work_inside_the_project(self):
        script = ("set -e; echo $((6*7)); "
                  "git init -q repo && cd repo && echo hi > f && git add f && "
                  "git -c user.name=t -c user.email=t@example.invalid commit -qm m && git log --oneline | wc -l; "
                  "cd ..; python3 -c 'import json, ssl; print(json.dumps([1]))'; "
                  "ssh -G example.invalid | grep -c '^hostname'")
        rc, out, err = self.run_scoped(script)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.split()[:4], ["42", "1", "[1]", "1"])
        if shutil.which("node"):
            rc, out, err = self.run_scoped("node -e 'console.log(require(\"os\").platform())'")
            self.assertEqual((rc, out.strip()), (0, "linux"), err)
        if shutil.which("cc"):
            self.write(os.path.join(self.cwd, "t.c"), "#include <stdio.h>\nint main(void){puts(\"built\");}\n")
            rc, out, err = self.run_scoped("cc -o t t.c && ./t")
            self.assertEqual((rc, out.strip()), (0, "built"), err)

    def test_stdin_from_outside_still_readable(self):
        # A file given on stdin from outside the scope: read through fd 0 and reopened as /dev/stdin.
        with open(os.path.join(self.sibling, "other.txt")) as f:
            rc, out, err = self.run_scoped("cat; cat /dev/stdin", stdin=f)
        self.assertEqual(rc, 0, err)
        self.assertIn("SIBLING", out)

    @unittest.skipUnless(landlock_abi() >= 1, "no Landlock in this kernel")
    def test_landlock_refuses_reads_outside_what_is_shown(self):
        # A file outside the scope reached through a descriptor (/proc/self/fd leads to the host's file whatever
        # the mounts say): given for writing only, Landlock refuses reading it back; without the scope it works.
        out_file = self.write(os.path.join(self.sibling, "out.txt"), "")
        script = "exec 3>&1; if cat /proc/self/fd/3 >/dev/null 2>&1; then echo READ >&2; else echo DENIED >&2; fi"
        with open(out_file, "w") as f:
            rc, _, err = self.run_scoped(script, stdout=f)
        self.assertEqual(rc, 0, err)
        self.assertIn("DENIED", err)
        with open(out_file, "w") as f:
            rc, _, err = self.cordon(["run", "--no-discover", "-c", script], stdout=f)
        self.assertIn("READ", err)

    def test_policy_shows_the_scope(self):
        rc, out, err = self.cordon(["policy", "--no-discover", "--read-scope", "project"])
        self.assertEqual(rc, 0, err)
        scope = json.loads(out)["filesystem"]["readScope"]
        self.assertEqual(scope["scope"], "project")
        self.assertEqual(scope["source"]["source"]["where"], "--read-scope")
        paths = [entry["path"] for entry in scope["includes"]]
        self.assertIn(self.cwd, paths)
        self.assertIn("/usr", paths)
        self.assertIn("/etc/shadow*", [entry["path"] for entry in scope["hidden"]])


class AsRoot(ScopeCase, unittest.TestCase):
    AS_USER = False


class AsUser(ScopeCase, unittest.TestCase):
    AS_USER = True


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
