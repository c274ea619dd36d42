"""Shared fixtures of the jail integration tests (the test files import this module as tests/proxy's import
proxytest): the binary and a test user (Env), the fixture methods of a jailed-command test case (JailFixtures), an
upstream and its DNS server on loopback (Upstream), a git repository and an sshd for clients in a jail, and
run_main, every test file's main(). Test hosts (NetnsHost) and DNS servers are proxytest's."""
import argparse
import contextlib
import os
import pwd
import secrets
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "proxy"))
from proxytest import DnsServer, NetnsHost, make_cert  # noqa: E402,F401  (for the test files too)

CORDON_SRC = None  # the binary under test (--cordon); Env copies it where the test user can run it


def sanitized():
    """Whether the binary under test is an AddressSanitizer build: its allocator keeps freed memory resident (the
    quarantine), so bounds on the supervisor's memory say nothing there; bounds on threads and descriptors do."""
    with open(CORDON_SRC, "rb") as f:
        return b"AddressSanitizer" in f.read()
PY = "/usr/bin/python3"  # the system interpreter: readable by every user


def run_main(fixtures, needs):
    """A test file's main(): `--cordon BINARY` (the other arguments go to unittest), exit 77 unless root (`needs`
    says what for), then each fixture's setup() in order, the tests of __main__, and the teardown() of every
    fixture whose setup() was called, in reverse order, also when a setup() or a test failed: a teardown() cleans
    up whatever part of its fixture was made."""
    global CORDON_SRC
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", required=True)
    args, rest = parser.parse_known_args()
    CORDON_SRC = os.path.abspath(args.cordon)
    if os.geteuid() != 0:
        print(f"{os.path.basename(sys.argv[0])} needs root ({needs})", file=sys.stderr)
        return 77
    with contextlib.ExitStack() as stack:
        for fixture in fixtures:
            stack.callback(fixture.teardown)
            fixture.setup()
        prog = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
        return 0 if prog.result.wasSuccessful() else 1


class Env:
    """A base directory readable by the test user, the binary and probe inside it, the user (removed at the end)."""

    base = None
    cordon = None
    probe = None
    user = None
    uid = gid = None

    @classmethod
    def setup(cls):
        cls.base = tempfile.mkdtemp(prefix="cordon-jail-test-", dir="/var/tmp")
        os.chmod(cls.base, 0o755)
        bindir = os.path.join(cls.base, "bin")
        os.mkdir(bindir, 0o755)
        cls.cordon = os.path.join(bindir, "cordon")
        shutil.copy2(CORDON_SRC, cls.cordon)
        os.chmod(cls.cordon, 0o755)
        jail = os.environ.get("CORDON_TEST_JAIL")
        if jail:
            # The suites against another jail (`--jail landlock`): `cordon run` through a wrapper that says so.
            real = cls.cordon + ".real"
            os.rename(cls.cordon, real)
            with open(cls.cordon, "w") as f:
                f.write(f'#!/bin/sh\nif [ "$1" = run ]; then shift; exec {real} run --jail {jail} "$@"; fi\n'
                        f'exec {real} "$@"\n')
            os.chmod(cls.cordon, 0o755)
        cls.probe = os.path.join(bindir, "probe.py")
        shutil.copy2(os.path.join(HERE, "probe.py"), cls.probe)
        os.chmod(cls.probe, 0o644)
        cls.user = "cordontest" + secrets.token_hex(3)
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


class JailFixtures:
    """Mixed into a TestCase per identity: AS_USER False runs as root, True as the unprivileged test user. Each
    case gets a directory below Env.base with project/ (the working directory), outside/ and home/."""

    AS_USER = False
    USER_FLAG = False  # root runs cordon with `--user` (the test user); the case's files are the user's

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=Env.base)
        os.chmod(self.dir, 0o755)
        self.cwd = self.mkdir("project")
        self.outside = self.mkdir("outside")
        self.home = self.mkdir("home")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def own(self, path):
        if self.AS_USER or self.USER_FLAG:
            os.lchown(path, Env.uid, Env.gid)
        return path

    def mkdir(self, rel):
        path = os.path.join(self.dir, rel)
        os.makedirs(path, exist_ok=True)
        for p in [path] + [os.path.join(self.dir, rel.split("/")[0])]:
            self.own(p)
        return path

    def write(self, path, content="original\n"):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        d = os.path.dirname(path)
        while d.startswith(self.dir) and d != self.dir:
            self.own(d)
            d = os.path.dirname(d)
        with open(path, "w") as f:
            f.write(content)
        self.own(path)
        return path

    def read(self, path):
        with open(path) as f:
            return f.read()

    def _identity(self):
        if not self.AS_USER:
            return {}
        return {"user": Env.uid, "group": Env.gid, "extra_groups": []}

    def env(self):
        return {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}

    def popen(self, args, cwd=None, prefix=(), **kw):
        """`cordon run` with args (after `prefix`, a command that runs it, if any)."""
        user = ["--user", Env.user] if self.USER_FLAG else []
        return subprocess.Popen([*prefix, Env.cordon, "run", "--no-discover", *user, *args], cwd=cwd or self.cwd,
                                env=self.env(),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **self._identity(),
                                **kw)

    def run_jail(self, args, cwd=None, timeout=30, **kw):
        p = self.popen(args, cwd=cwd, **kw)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            self.fail(f"cordon run {args} timed out; stderr: {err}")
        return p.returncode, out, err

    def sh(self, script, *flags, expect=0, **kw):
        rc, out, err = self.run_jail([*flags, "-c", script], **kw)
        if expect is not None:
            self.assertEqual(rc, expect, f"script: {script}\nstdout: {out}\nstderr: {err}")
        return out, err


class Upstream:
    """A test upstream on the host's loopback: an HTTP server for the files in `srv` (index.html says "hello from
    upstream"), and a DNS server that resolves test.cordon.example (and only that) to 127.0.0.1."""

    NAME = "test.cordon.example"
    srv = None
    http = None
    http_port = None
    dns = None
    dns_port = None

    @classmethod
    def setup(cls):
        import http.server
        import threading

        cls.srv = srv = tempfile.mkdtemp(prefix="cordon-upstream-", dir="/var/tmp")
        with open(os.path.join(srv, "index.html"), "w") as f:
            f.write("hello from upstream\n")

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=srv, **kw)

            def log_message(self, *args):
                pass

        cls.http = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        cls.http_port = cls.http.server_address[1]
        threading.Thread(target=cls.http.serve_forever, daemon=True).start()
        cls.dns = DnsServer({cls.NAME: ["127.0.0.1"]})
        cls.dns_port = cls.dns.port

    @classmethod
    def teardown(cls):
        if cls.http:
            cls.http.shutdown()
            cls.http.server_close()
        if cls.dns:
            cls.dns.close()
        if cls.srv:
            shutil.rmtree(cls.srv, ignore_errors=True)

    @classmethod
    def url(cls, path="/"):
        return f"http://{cls.NAME}:{cls.http_port}{path}"

    @classmethod
    def flags(cls):
        return ["--dns-server", f"127.0.0.1:{cls.dns_port}", "--allow-address", "127.0.0.0/8"]


def make_git_repo(base, bare, text):
    """A bare repository at `bare` with one commit of hello.txt (`text`), made in base/work; served by git's
    dumb HTTP protocol too."""
    work = os.path.join(base, "work")
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t", HOME=base, GIT_CONFIG_NOSYSTEM="1")
    subprocess.run(["git", "init", "-q", work], check=True, env=env)
    with open(os.path.join(work, "hello.txt"), "w") as f:
        f.write(text)
    subprocess.run(["git", "-C", work, "add", "hello.txt"], check=True, env=env)
    subprocess.run(["git", "-C", work, "commit", "-qm", "one"], check=True, env=env)
    subprocess.run(["git", "clone", "-q", "--bare", work, bare], check=True, env=env)
    subprocess.run(["git", "-C", bare, "update-server-info"], check=True, env=env)


def start_sshd(directory, listen, start=subprocess.Popen):
    """Starts an sshd on the ListenAddress values in `listen` (wait for its port before use) that lets root in
    with a key of its own only; its keys and configuration go to `directory` (made here). `start` starts the
    process (NetnsHost.start for one on a test host). Returns (process, the client's private key)."""
    os.mkdir(directory, 0o700)
    for key in ("host", "client"):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", os.path.join(directory, key)],
                       check=True)
    shutil.copy(os.path.join(directory, "client.pub"), os.path.join(directory, "authorized_keys"))
    config = os.path.join(directory, "sshd_config")
    with open(config, "w") as f:
        f.write("".join(f"ListenAddress {a}\n" for a in listen) +
                f"HostKey {directory}/host\nAuthorizedKeysFile {directory}/authorized_keys\nStrictModes no\n"
                "UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
                "PermitRootLogin prohibit-password\nPidFile none\n")
    os.makedirs("/run/sshd", exist_ok=True)
    proc = start(["/usr/sbin/sshd", "-D", "-e", "-f", config], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return proc, os.path.join(directory, "client")
