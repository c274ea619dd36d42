#!/usr/bin/python3
"""`cordon doctor` in each simulated locked-down host (hosts.py): it names the cause and its fix, says which jail
`cordon run` gets and exits with that jail's status (0 namespaces, 1 the namespace-free jail, 2 none); on this
host it finds the full jail; `--json` parses and has every layer. Needs root.

usage: test_doctor.py --cordon BINARY"""
import argparse
import json
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hosts  # noqa: E402

CORDON_SRC = None
CORDON = None  # a copy the test user can run
USER = None
BASE = None
LAYERS = ["user_namespace", "mount_namespace", "network_namespace", "pid_namespace", "ipc_uts_cgroup_namespaces",
          "nftables", "seccomp", "user_notification", "addfd", "pidfd_getfd", "run_tmpdir", "landlock", "landlock_network",
          "landlock_scoping", "cgroup", "apparmor"]


def setUpModule():
    global USER, BASE, CORDON
    BASE = tempfile.mkdtemp(prefix="cordon-doctor-test-", dir="/var/tmp")
    os.chmod(BASE, 0o755)
    CORDON = os.path.join(BASE, "cordon")
    shutil.copy2(CORDON_SRC, CORDON)
    os.chmod(CORDON, 0o755)
    USER = "cordondoc" + secrets.token_hex(3)
    subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
                    "--user-group", USER], check=True)


def tearDownModule():
    if USER:
        subprocess.run(["userdel", USER], check=False, stderr=subprocess.DEVNULL)
    if BASE:
        shutil.rmtree(BASE, ignore_errors=True)


class Direct(hosts.Host):
    name = "this host"

    def argv(self, cmd):
        return list(cmd)


class AsUser(hosts.Host):
    name = "this host, as a user"

    def argv(self, cmd):
        return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--", *cmd]


class DoctorTest(unittest.TestCase):
    def doctor(self, host, *args, cwd=None, env=None):
        with host:
            r = host.run([CORDON, "doctor", *args], capture_output=True, text=True, timeout=120, cwd=cwd or BASE,
                         env=env)
        self.assertEqual(r.stderr, "", f"doctor in {host.name} wrote to stderr")
        return r

    def report(self, host, **kw):
        r = self.doctor(host, "--json", **kw)
        report = json.loads(r.stdout)
        self.assertEqual(r.returncode, report["exit_status"])
        self.assertEqual(sorted(report["layers"]), sorted(LAYERS))
        return r.returncode, report

    def assert_text_names(self, host, status, *parts):
        r = self.doctor(host)
        self.assertEqual(r.returncode, status, r.stdout)
        for part in parts:
            self.assertIn(part, r.stdout)
        return r.stdout

    def test_this_host_has_the_namespace_jail(self):
        for host in (Direct(), AsUser()):
            with self.subTest(host.name):
                status, report = self.report(host)
                self.assertEqual((status, report["jail"], report["blocker"]), (0, "namespaces", ""))
                for key in ("user_namespace", "mount_namespace", "network_namespace", "pid_namespace", "nftables",
                            "seccomp", "user_notification", "addfd", "landlock"):
                    self.assertTrue(report["layers"][key]["available"], (key, report["layers"][key]))
                self.assert_text_names(host, 0, "jail: namespaces")

    def test_max_user_namespaces_zero(self):
        host = hosts.UsernsLimitHost(USER)
        status, report = self.report(host)
        self.assertEqual((status, report["jail"], report["blocker"]), (1, "landlock", "user_namespace"))
        user = report["layers"]["user_namespace"]
        self.assertIn("ENOSPC", user["detail"])
        self.assertIn("user.max_user_namespaces is 0", user["cause"])
        self.assertIn("sudo sysctl -w user.max_user_namespaces=", user["fix"])
        self.assertTrue(report["layers"]["landlock"]["available"])
        self.assertTrue(any("PID namespace" in lack for lack in report["lacks"]))
        self.assert_text_names(host, 1, "jail: landlock", "user.max_user_namespaces is 0",
                               "fix: sudo sysctl -w user.max_user_namespaces=")

    def test_docker_default_seccomp_without_cap_sys_admin(self):
        host = hosts.DockerHost()
        status, report = self.report(host)
        self.assertEqual((status, report["jail"], report["blocker"]), (1, "landlock", "user_namespace"))
        user = report["layers"]["user_namespace"]
        self.assertIn("EPERM", user["detail"])
        self.assertIn("seccomp filter refuses unshare", user["cause"])
        self.assertIn("docker run --security-opt seccomp=unconfined", user["fix"])
        getfd = report["layers"]["pidfd_getfd"]
        self.assertFalse(getfd["available"])
        self.assertIn("--cap-add SYS_PTRACE", getfd["fix"])
        self.assertTrue(any("pidfd_getfd" in lack for lack in report["lacks"]), report["lacks"])
        self.assert_text_names(host, 1, "jail: landlock", "docker run --security-opt seccomp=unconfined")

    def test_inside_claude_codes_bubblewrap(self):
        host = hosts.BubblewrapHost(USER)
        status, report = self.report(host)
        self.assertEqual((status, report["jail"], report["blocker"]), (1, "landlock", "user_namespace"))
        user = report["layers"]["user_namespace"]
        self.assertIn("another sandbox", user["cause"])
        self.assertIn("allowNestedUserNamespaces", user["fix"])
        self.assert_text_names(hosts.BubblewrapHost(USER), 1, "jail: landlock", "\"enabled\": false")

    def test_no_landlock(self):
        # Namespaces still work: the full jail, which then lacks its Landlock layer.
        status, report = self.report(hosts.NoLandlockHost())
        self.assertEqual((status, report["jail"]), (0, "namespaces"))
        landlock = report["layers"]["landlock"]
        self.assertFalse(landlock["available"])
        self.assertIn("ENOSYS", landlock["detail"])
        self.assertIn("a kernel with Landlock", landlock["fix"])
        self.assertTrue(any("Landlock" in lack for lack in report["lacks"]))
        # Without namespaces either: the namespace-free jail, whose runs with read rules stop.
        status, report = self.report(hosts.NoLandlockHost(hosts.UsernsLimitHost(USER)))
        self.assertEqual((status, report["jail"]), (1, "landlock"))
        self.assertTrue(any("read rules" in lack for lack in report["lacks"]), report["lacks"])

    def test_no_jail_possible(self):
        host = hosts.OldKernelHost(hosts.UsernsLimitHost(USER))
        status, report = self.report(host)
        self.assertEqual((status, report["jail"]), (2, "none"))
        notif = report["layers"]["user_notification"]
        self.assertIn("EINVAL", notif["detail"])
        self.assertIn("5.14", notif["fix"])
        self.assert_text_names(hosts.OldKernelHost(hosts.UsernsLimitHost(USER)), 2, "jail: none")

    def test_doctor_agrees_with_cordon_run(self):
        """In each host, `cordon run` uses the jail doctor names: the namespace jail (no fallback line), the one
        without namespaces (its line on stderr), or none (exit 125)."""
        if "--jail" not in subprocess.run([CORDON, "run", "--help"], capture_output=True, text=True).stdout:
            self.skipTest("this cordon has no jail without namespaces (`cordon run --jail`)")
        # A project and a temporary directory outside it (Claude Code's sandbox gives one: its /tmp is read-only),
        # both writable in bubblewrap.
        work = tempfile.mkdtemp(prefix="run-", dir=BASE)
        project, tmp = os.path.join(work, "project"), os.path.join(work, "tmp")
        entry = pwd.getpwnam(USER)
        for d in (work, project, tmp):
            os.makedirs(d, exist_ok=True)
            os.chown(d, entry.pw_uid, entry.pw_gid)
        for host in (Direct(), AsUser(), hosts.UsernsLimitHost(USER), hosts.DockerHost(),
                     hosts.BubblewrapHost(USER, writable=[work]), hosts.OldKernelHost(hosts.UsernsLimitHost(USER))):
            with self.subTest(host.name):
                status, report = self.report(host, cwd=project, env=dict(os.environ, TMPDIR=tmp))
                env = dict(os.environ, TMPDIR=tmp)
                with host:
                    run = host.run([CORDON, "run", "--no-discover", "--", "/bin/true"], cwd=project, env=env,
                                   capture_output=True, text=True, timeout=120)
                fallback = "running the jail without namespaces" in run.stderr
                if status == 2:
                    self.assertEqual(run.returncode, 125, run.stderr)
                else:
                    self.assertEqual((run.returncode, fallback), (0, status == 1), run.stderr)

    def test_usage_error(self):
        r = subprocess.run([CORDON, "doctor", "--bogus"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("unexpected argument --bogus", r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", required=True)
    args, rest = parser.parse_known_args()
    CORDON_SRC = os.path.abspath(args.cordon)
    if os.geteuid() != 0:
        print("test_doctor.py needs root (a test user, namespaces, seccomp filters)", file=sys.stderr)
        sys.exit(77)
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
