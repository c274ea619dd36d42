#!/usr/bin/python3
"""The jail without namespaces (`cordon run --jail landlock`, and `--jail auto`'s fallback) in each simulated
locked-down host of hosts.py, with real jailed processes: the fallback is taken (one stderr line), writes outside
the writable roots are refused, protected names and git rules hold, denyRead holds (or the run stops where Landlock
is missing), only the proxy reaches the network with the domain policy (allowed -> upstream, denied -> 403, a
direct connect to an IP or to a host loopback service and UDP refused), exit codes, the audit log, the private
TMPDIR, host processes out of reach; and the namespace jail is still chosen where it works.

python3 test_landlock_jail.py --cordon BUILD/cordon (root: the simulations and the test user)."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "jail"))
sys.path.insert(0, HERE)
import hosts  # noqa: E402
import jailtest  # noqa: E402
from jailtest import PY, Env, JailFixtures, Upstream, run_main  # noqa: E402

FALLBACK = "running the jail without namespaces"


def landlock_abi():
    import ctypes
    v = ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1)
    return max(v, 0)


# A jailed python that reports what a network call did: "ok ...", or the errno's name.
NET_PROBE = r"""
import errno, socket, sys, urllib.request, urllib.error
what = sys.argv[1]
try:
    if what == "get":
        print("ok", urllib.request.urlopen(sys.argv[2], timeout=10).read().decode().strip())
    elif what == "tcp":
        s = socket.socket(socket.AF_INET6 if ":" in sys.argv[2] else socket.AF_INET)
        s.settimeout(5)
        s.connect((sys.argv[2], int(sys.argv[3])))
        print("ok connected")
    elif what == "udp":
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.sendto(b"x", (sys.argv[2], int(sys.argv[3])))
        print("ok sent")
    elif what == "listen":
        s = socket.socket(socket.AF_INET6 if ":" in sys.argv[2] else socket.AF_INET)
        if sys.argv[2] != "unbound":
            s.bind((sys.argv[2], 0))
        s.listen()
        print("ok listening")
    elif what == "fastopen":
        s = socket.socket(socket.AF_INET)
        s.sendto(b"GET / HTTP/1.0\r\n\r\n", 0x20000000, (sys.argv[2], int(sys.argv[3])))
        print("ok sent")
except urllib.error.HTTPError as e:
    print("http", e.code, e.headers.get("X-Proxy-Error"))
except OSError as e:
    print(errno.errorcode.get(e.errno, str(e)))
"""


class Cases(JailFixtures):
    """Every case, run through `cordon run` in HOST (None: this machine) with FLAGS."""

    HOST = None
    FLAGS = ("--jail", "landlock")
    HOST_DROPS = False  # the host's argv becomes the test user itself (root launches it)
    HAS_LANDLOCK = True
    TAKES_SOCKETS = True  # pidfd_getfd works for the supervisor (not under Docker's profile)

    @classmethod
    def setUpClass(cls):
        cls.host = cls.make_host()
        if cls.host:
            cls.host.setup()

    @classmethod
    def tearDownClass(cls):
        if cls.host:
            cls.host.teardown()

    @classmethod
    def make_host(cls):
        return None

    def popen(self, args, cwd=None, prefix=(), **kw):
        user = ["--user", Env.user] if self.USER_FLAG else []
        cmd = [Env.cordon, "run", "--no-discover", *self.FLAGS, *user, *args]
        argv = self.host.argv(cmd) if self.host else cmd
        identity = {} if self.HOST_DROPS else self._identity()
        return subprocess.Popen(argv, cwd=cwd or self.cwd, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, **identity, **kw)

    def net(self, *args, flags=()):
        """The probe's answer for one network call from inside the jail, and the run's stderr."""
        rc, out, err = self.run_jail([*flags, "--", PY, "-c", NET_PROBE, *args])
        self.assertEqual(rc, 0, err)
        return out.strip(), err

    def test_the_jail_without_namespaces_runs_and_says_so(self):
        rc, out, err = self.run_jail(["--", "/bin/true"])
        self.assertEqual(rc, 0, err)
        lines = [line for line in err.splitlines() if FALLBACK in line]
        self.assertEqual(len(lines), 1, err)
        # One line and nothing else: which jail, why (the flag, or the namespace jail's failure) and its lacks.
        self.assertEqual(err.splitlines(), lines, err)
        self.assertRegex(lines[0], r"^cordon: running the jail without namespaces \((--jail landlock|"
                                   r"cannot create the jail's namespaces: .+|the namespace jail could not be set "
                                   r"up: .+)\); it lacks: ")
        self.assertIn("no PID namespace", lines[0])
        self.assertIn("no transparent proxying", lines[0])

    def test_exit_codes(self):
        self.sh("exit 7", expect=7)
        self.sh("kill -9 $$", expect=137)
        rc, _, err = self.run_jail(["--", "/nonexistent/cmd"])
        self.assertEqual(rc, 127, err)

    def test_writes_outside_the_writable_roots_are_refused(self):
        outside = self.write(os.path.join(self.outside, "f"))
        self.sh(f"echo new > inside.txt && ! echo x > {outside} && ! echo x >> {outside} && ! rm -f {outside} "
                f"&& ! mkdir {self.outside}/d && ! ln -s /etc {self.outside}/l && ! truncate -s0 {outside} "
                f"&& ! echo x > /tmp/cordon-outside-$$ && ! echo x > /dev/shm/../cordon-x")
        self.assertEqual(self.read(outside), "original\n")
        self.assertEqual(self.read(os.path.join(self.cwd, "inside.txt")), "new\n")
        self.assertEqual(sorted(os.listdir(self.outside)), ["f"])

    def test_private_tmpdir_is_writable_and_removed(self):
        out, _ = self.sh('echo x > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "$TMPDIR"')
        lines = out.split()
        self.assertEqual(lines[0], "x")
        tmpdir = lines[1]
        self.assertTrue(os.path.basename(tmpdir).startswith("cordon-tmp-"), tmpdir)
        self.assertFalse(tmpdir.startswith(self.cwd))
        self.assertFalse(os.path.exists(tmpdir), "the run's TMPDIR stays after the run")

    def test_protected_names_and_git_rules_hold(self):
        bashrc = self.write(os.path.join(self.cwd, ".bashrc"))
        config = self.write(os.path.join(self.cwd, ".git", "config"), "[core]\n")
        self.write(os.path.join(self.cwd, ".git", "HEAD"), "ref: refs/heads/main\n")
        self.mkdir("project/.git/hooks")
        self.mkdir("project/.git/objects")
        self.sh("! echo evil >> .bashrc && ! echo x > .git/hooks/pre-commit && ! echo x >> .git/config "
                "&& ! mv .git g && ! echo x > .mcp.json && ! mkdir -p .claude/commands")
        self.assertEqual(self.read(bashrc), "original\n")
        self.assertEqual(self.read(config), "[core]\n")
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git", "hooks", "pre-commit")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".mcp.json")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".claude", "commands")))

    def test_deny_read_holds_or_the_run_stops(self):
        secret = self.write(os.path.join(self.outside, "secret"), "s3cret\n")
        self.write(os.path.join(self.outside, "other"), "other\n")
        rc, out, err = self.run_jail(["--deny-read", secret, "-c",
                                      f"cat {secret}; cat {self.outside}/other; cat /etc/hostname >/dev/null "
                                      f"&& echo sys-ok"])
        self.assertNotIn("s3cret", out)
        if not self.HAS_LANDLOCK:
            self.assertEqual(rc, 125, err)
            self.assertIn(secret, err)
            return
        self.assertIn("other", out)
        self.assertIn("sys-ok", out)

    def test_deny_read_of_a_directory(self):
        if not self.HAS_LANDLOCK:
            self.skipTest("does not apply: without Landlock the run stops (test_deny_read_holds_or_the_run_stops)")
        secret = self.write(os.path.join(self.outside, "keys", "id"), "s3cret\n")
        out, _ = self.sh(f"cat {secret}; ls {self.outside}/keys; cat {self.outside}/keys/../keys/id; echo done",
                         "--deny-read", os.path.dirname(secret))
        self.assertNotIn("s3cret", out)
        self.assertNotIn("id\n", out.replace("done", ""))

    def test_only_the_proxy_reaches_the_network(self):
        flags = ["--allow-domain", Upstream.NAME, *Upstream.flags()]
        out, _ = self.net("get", Upstream.url(), flags=flags)
        self.assertEqual(out, "ok hello from upstream")
        out, _ = self.net("get", f"http://denied.cordon.example:{Upstream.http_port}/", flags=flags)
        self.assertEqual(out, "http 403 blocked-by-allowlist")
        # Around the proxy: a host loopback service, an address of the host's network, UDP, TCP fast open.
        for args in (("tcp", "127.0.0.1", str(Upstream.http_port)), ("tcp", "192.0.2.1", "80"),
                     ("tcp", "::1", "22"), ("udp", "127.0.0.1", str(Upstream.dns_port)),
                     ("fastopen", "127.0.0.1", str(Upstream.http_port))):
            out, _ = self.net(*args, flags=flags)
            self.assertIn(out, ("EPERM", "EACCES"), args)
        # Listening: on loopback as in the namespace jail, never on the host's other addresses.
        # (Where the supervisor may not take a caller's socket, Docker's profile, a bind or listen is refused.)
        self.assertEqual(self.net("listen", "127.0.0.1")[0], "ok listening" if self.TAKES_SOCKETS else "EPERM")
        for address in ("0.0.0.0", "::", "unbound"):
            self.assertIn(self.net("listen", address)[0], ("EADDRNOTAVAIL", "EPERM"), address)

    def test_the_audit_log(self):
        audit = os.path.join(self.outside, "audit.jsonl")
        self.own(self.outside)
        self.net("get", Upstream.url(), flags=["--allow-domain", Upstream.NAME, *Upstream.flags(),
                                               "--audit-log", audit])
        with open(audit) as f:
            events = [json.loads(line) for line in f if line.strip()]
        decisions = [e for e in events if e.get("event") == "decision"]
        self.assertTrue(any(e["host"] == Upstream.NAME and e["decision"] == "allow" for e in decisions), events)
        self.assertTrue(all(e.get("sandbox", "").startswith("cordon-") for e in decisions))
        # The log is out of the command's reach.
        self.sh(f"! echo forged >> {audit}", "--allow-domain", Upstream.NAME, "--audit-log", audit)

    def test_host_processes_are_out_of_reach(self):
        if not self.HAS_LANDLOCK or landlock_abi() < 6:
            self.skipTest("does not apply: signal scoping needs Landlock ABI 6 (the one line says so)")
        sleeper = subprocess.Popen(["sleep", "60"], **({"user": Env.uid, "group": Env.gid} if self.runs_as_user()
                                                        else {}))
        try:
            out, _ = self.sh(f"kill -0 {sleeper.pid} 2>/dev/null && echo signalled; "
                             f"cat /proc/{sleeper.pid}/environ >/dev/null 2>&1 && echo read-environ; "
                             f"echo x > /proc/{sleeper.pid}/comm 2>/dev/null && echo wrote-comm; echo done")
            self.assertEqual(out.split(), ["done"])
            self.assertIsNone(sleeper.poll())
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_host_kernel_knobs_and_devices_are_refused(self):
        self.sh("! echo 1 > /proc/sys/kernel/sysrq && ! echo x > /dev/kmsg 2>/dev/null && echo ok > /dev/null")

    def test_git_works_and_chmod_follows_the_write_rules(self):
        """git init, a clone of a local repository and a commit in the project succeed (git chmods its lock
        files and its config: refused outright to root's command before); root's chmod keeps to the writable
        roots: /etc/passwd, a file outside them, one through a symlink out of them, a denyWrite path and
        set-id bits stay refused, by path and by descriptor."""
        git = "git -c user.name=t -c user.email=t@example.invalid -c init.defaultBranch=main"
        source = os.path.join(self.outside, "source")
        subprocess.run(f"{git} init -q {source} && {git} -C {source} commit -q --allow-empty -m first",
                       shell=True, check=True)
        if self.runs_as_user():
            subprocess.run(["chown", "-R", f"{Env.uid}:{Env.gid}", source], check=True)
        self.write(os.path.join(self.cwd, "existing", "f"), "tracked\n")
        host_git = f"{git} -c safe.directory=* -C {self.cwd}/existing"
        subprocess.run(f"{host_git} init -q && {host_git} add f && {host_git} commit -q -m first", shell=True,
                       check=True)
        if self.runs_as_user():
            subprocess.run(["chown", "-R", f"{Env.uid}:{Env.gid}", os.path.join(self.cwd, "existing")], check=True)
        out, _ = self.sh(f"{git} init -q new && {git} clone -q {source} clone && "
                         f"echo change >> existing/f && {git} -C existing commit -q -am second && "
                         f"{git} -C clone log --oneline | wc -l && {git} -C existing log --oneline | wc -l && "
                         f"echo x > mode && chmod 600 mode && stat -c %a mode")
        self.assertEqual(out.split(), ["1", "2", "600"])
        self.assertTrue(os.path.isfile(os.path.join(self.cwd, "new", ".git", "HEAD")))
        if self.runs_as_user():
            return  # the user's own files outside the roots: not refused here (jail/README.md)
        outside = self.write(os.path.join(self.outside, "f"))
        os.chmod(outside, 0o644)
        os.symlink(outside, os.path.join(self.cwd, "link"))
        locked = self.write(os.path.join(self.cwd, "locked"))
        os.chmod(locked, 0o644)
        program = os.path.join(self.cwd, "program")
        passwd = os.stat("/etc/passwd").st_mode
        fchmod = self.write(os.path.join(self.outside, "fchmod.py"),
                            "import os, sys\nfd = os.open(sys.argv[1], os.O_RDONLY)\n"
                            "try:\n    os.fchmod(fd, int(sys.argv[2], 8)); print('changed')\n"
                            "except OSError:\n    print('refused')\n")
        try:
            out, _ = self.sh(
                f"! chmod 666 /etc/passwd && ! chmod 666 {outside} && ! chmod 666 link && ! chmod 666 locked "
                f"&& cp /bin/true program && ! chmod 4755 program && ! chmod u+s program && ! chmod 2755 program "
                f"&& {PY} {fchmod} /etc/passwd 666 && {PY} {fchmod} {outside} 666 && "
                f"{PY} {fchmod} locked 666 && {PY} {fchmod} program 4755 && {PY} {fchmod} mode 640",
                "--deny-write", locked)
            self.assertEqual(out.split(), ["refused"] * 4 + ["changed"])
        finally:
            os.chmod("/etc/passwd", passwd & 0o7777)
        self.assertEqual(os.stat("/etc/passwd").st_mode, passwd)
        for path in (outside, locked):
            self.assertEqual(os.stat(path).st_mode & 0o7777, 0o644, path)
        self.assertEqual(os.stat(program).st_mode & 0o7000, 0)
        self.assertEqual(os.stat(os.path.join(self.cwd, "mode")).st_mode & 0o777, 0o640)

    def test_background_processes_end_with_the_run(self):
        marker = "cordon-bg-" + os.urandom(4).hex()
        self.sh(f"(setsid sh -c 'exec -a {marker} sleep 300' &) ; sleep 0.2; exit 3", expect=3)
        left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
        self.assertEqual(left, "", "a process of the run outlived it")

    def test_supervisor_killed_leaves_no_process_and_no_tmpdir(self):
        # Without a PID namespace nothing dies with the jail: a process of the run (in the background, or in a
        # session of its own) and the run's TMPDIR would outlive a supervisor killed with SIGKILL.
        marker = "300.%d" % int.from_bytes(os.urandom(3), "big")  # sleep's argument names the run's sleeps
        p = self.popen(["-c", f'echo x > "$TMPDIR/f" && echo "$TMPDIR" && (sleep {marker} &) && '
                              f'(setsid sleep {marker} &); sleep 300'])
        left = []
        try:
            tmpdir = p.stdout.readline().strip()
            self.assertTrue(os.path.isfile(os.path.join(tmpdir, "f")), tmpdir)
            for _ in range(100):
                if len(self.pids_of(marker)) == 2:
                    break
                time.sleep(0.05)
            self.assertEqual(len(self.pids_of(marker)), 2)
            supervisor = self.supervisor_of(p.pid)
            self.assertIsNotNone(supervisor)
            os.kill(supervisor, signal.SIGKILL)
            p.wait(timeout=30)
            for _ in range(100):
                left = self.pids_of(marker)
                if not left and not os.path.exists(tmpdir):
                    break
                time.sleep(0.05)
            self.assertEqual(left, [], "a process of the run outlived its supervisor")
            self.assertFalse(os.path.exists(tmpdir), "the run's TMPDIR outlived its supervisor")
        finally:
            for pid in self.pids_of(marker):
                os.kill(pid, signal.SIGKILL)
            if p.poll() is None:
                p.kill()
            p.communicate(timeout=30)

    @staticmethod
    def pids_of(marker):
        """The processes that run `sleep MARKER`."""
        pids = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if f.read() == b"sleep\0" + marker.encode() + b"\0":
                        pids.append(int(pid))
            except OSError:
                continue
        return pids

    @staticmethod
    def supervisor_of(root):
        """The first `cordon` process at or below `root` (the host's wrapper may come first)."""
        todo = [root]
        while todo:
            pid = todo.pop(0)
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "cordon":
                        return pid
                with open(f"/proc/{pid}/task/{pid}/children") as f:
                    todo += [int(c) for c in f.read().split()]
            except OSError:
                continue
        return None

    def runs_as_user(self):
        return self.AS_USER or self.USER_FLAG


# --jail landlock on this machine (everything available), as root and as a user.
class ForcedAsRoot(Cases, unittest.TestCase):
    pass


class ForcedAsUser(Cases, unittest.TestCase):
    AS_USER = True


class ForcedWithUserFlag(Cases, unittest.TestCase):
    USER_FLAG = True


# (a) an unprivileged user where max_user_namespaces is 0: auto falls back.
class UsernsLimitHost(Cases, unittest.TestCase):
    FLAGS = ()
    AS_USER = True
    HOST_DROPS = True

    @classmethod
    def make_host(cls):
        return hosts.UsernsLimitHost(Env.user)


# (b) root without CAP_SYS_ADMIN under Docker's default seccomp rules: auto falls back.
class DockerHost(Cases, unittest.TestCase):
    FLAGS = ()
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.DockerHost()


# (d) no Landlock (and no user namespaces: inside the Docker simulation): auto falls back, read rules stop it.
class NoLandlockHost(Cases, unittest.TestCase):
    FLAGS = ()
    HAS_LANDLOCK = False
    TAKES_SOCKETS = False

    @classmethod
    def make_host(cls):
        return hosts.NoLandlockHost(within=hosts.DockerHost())


# (c) and item 4: inside Claude Code's sandbox (bubblewrap with srt's flags, network only through its proxy),
# auto falls back and cordon's proxy chains to the outer one (--parent-proxy-from-env).
class BubblewrapHost(JailFixtures, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import proxytest
        proxytest.CORDON = Env.cordon
        cls.tmp = tempfile.mkdtemp(prefix="bwrap-tmp-", dir=Env.base)
        os.chmod(cls.tmp, 0o777)
        cls.outer = proxytest.Proxy(cls.tmp, ["--allow-domain", Upstream.NAME, "--allow-domain",
                                              f"denied-by-cordon.{Upstream.NAME}", "--allow-address", "127.0.0.0/8"],
                                    dns=Upstream.dns)
        cls.host = hosts.BubblewrapHost(proxy=("127.0.0.1", cls.outer.port), writable=[Env.base]).setup()

    @classmethod
    def tearDownClass(cls):
        cls.host.teardown()
        cls.outer.proc.terminate()
        cls.outer.proc.wait()

    def env(self):
        return dict(super().env(), TMPDIR=self.tmp)

    def probe(self, *args):
        cmd = [Env.cordon, "run", "--no-discover", "--parent-proxy-from-env", "--allow-domain", Upstream.NAME,
               "--", PY, "-c", NET_PROBE, *args]
        p = subprocess.run(self.host.argv(cmd), cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return p.stdout.strip(), p.stderr

    def test_falls_back_and_chains_to_the_outer_proxy(self):
        out, err = self.probe("get", Upstream.url("/index.html"))
        self.assertEqual(out, "ok hello from upstream", err)
        self.assertEqual(sum(FALLBACK in line for line in err.splitlines()), 1, err)
        self.assertIn(Upstream.NAME, [e.get("host") for e in self.outer.audit()])
        # The outer proxy would allow this one; cordon's policy does not.
        out, _ = self.probe("get", f"http://denied-by-cordon.{Upstream.NAME}:{Upstream.http_port}/")
        self.assertEqual(out, "http 403 blocked-by-allowlist")
        for args in (("tcp", "127.0.0.1", str(self.host.HTTP_PORT)), ("udp", "127.0.0.1", "53")):
            out, _ = self.probe(*args)
            self.assertIn(out, ("EPERM", "EACCES"), args)

    def test_writes_and_exit_codes(self):
        outside = self.write(os.path.join(self.outside, "f"))
        cmd = [Env.cordon, "run", "--no-discover", "-c", f"! echo x > {outside} && echo y > here && exit 5"]
        p = subprocess.run(self.host.argv(cmd), cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                           timeout=60)
        self.assertEqual(p.returncode, 5, p.stderr)
        self.assertEqual(self.read(outside), "original\n")
        self.assertEqual(self.read(os.path.join(self.cwd, "here")), "y\n")


class NamespaceJailStillChosen(JailFixtures, unittest.TestCase):
    """Where user namespaces work, auto keeps the namespace jail (no fallback line), and --jail namespaces
    refuses the fallback where they do not."""

    def test_auto_uses_the_namespace_jail_here(self):
        rc, out, err = self.run_jail(["-c", "echo $TMPDIR; cat /proc/1/comm"])
        self.assertEqual(rc, 0, err)
        self.assertNotIn(FALLBACK, err)
        self.assertEqual(out.split()[-1], "cordon")  # PID 1 is the jail's init

    def test_namespaces_and_strict_refuse_the_fallback(self):
        docker = hosts.DockerHost()
        for flags in (["--jail", "namespaces"], ["--strict"]):
            cmd = [Env.cordon, "run", "--no-discover", *flags, "--", "/bin/true"]
            p = subprocess.run(docker.argv(cmd), cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                               timeout=30)
            self.assertEqual(p.returncode, 125, p.stderr)
            self.assertNotIn(FALLBACK, p.stderr)

    def test_settings_key_chooses_the_jail(self):
        settings = self.write(os.path.join(self.outside, "s.json"), json.dumps({"sandbox": {"jail": "landlock"}}))
        rc, out, err = self.run_jail(["--settings", settings, "--", "/bin/true"])
        self.assertEqual(rc, 0, err)
        self.assertIn(FALLBACK, err)
        self.assertIn("sandbox.jail landlock", err)
        bad = self.write(os.path.join(self.outside, "b.json"), json.dumps({"sandbox": {"jail": "chroot"}}))
        rc, out, err = self.run_jail(["--settings", bad, "--", "/bin/true"])
        self.assertEqual(rc, 2, err)
        self.assertIn("sandbox.jail", err)


if __name__ == "__main__":
    sys.exit(run_main([Env, Upstream], "the host simulations and a test user"))
