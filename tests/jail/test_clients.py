#!/usr/bin/python3
"""Real clients inside `cordon run` (issue 9): the environment srt sets for each client family, and a request
per client kind installed here (curl, python3, git over http, git over ssh through `cordon connect` to a test
sshd, java), all through the jail's proxy to an upstream on the host's loopback. Also the jail's side of the
policy: allowGitConfig lets `git config` write .git/config, and `Read(~/.ssh/**)` hides ~/.ssh as
`cordon check read:~/.ssh` says. Needs root. Hermetic: 127.0.0.1 only, port 0 everywhere.

    python3 tests/jail/test_clients.py --cordon build/cordon
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import Upstream, make_git_repo, start_sshd  # noqa: E402
from proxytest import can_connect, wait_for  # noqa: E402

NAME = Upstream.NAME


class Fixture:
    """For the clients, besides Upstream's page: a bare git repository in Upstream.srv (served by git's dumb HTTP
    protocol), and an sshd whose only key is ours."""

    base = sshd = None

    @classmethod
    def setup(cls):
        cls.base = tempfile.mkdtemp(prefix="cordon-clients-", dir="/var/tmp")
        # A bare repository with one commit.
        cls.repo = os.path.join(Upstream.srv, "repo.git")
        make_git_repo(cls.base, cls.repo, "hello from the repository\n")
        cls.sshd_port = None
        if shutil.which("sshd") or os.path.exists("/usr/sbin/sshd"):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
            s.close()
            cls.sshd, cls.ssh_key = start_sshd(os.path.join(cls.base, "ssh"), [f"127.0.0.1:{port}"])
            if not wait_for(lambda: can_connect("127.0.0.1", port), 10):
                raise RuntimeError("sshd did not come up")
            cls.sshd_port = port

    @classmethod
    def teardown(cls):
        if cls.sshd:
            cls.sshd.kill()
            cls.sshd.wait()
        if cls.base:
            shutil.rmtree(cls.base, ignore_errors=True)


class JailTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=Fixture.base)
        self.cwd = os.path.join(self.dir, "project")
        self.home = os.path.join(self.dir, "home")
        os.makedirs(self.cwd)
        os.makedirs(self.home)
        self.addCleanup(shutil.rmtree, self.dir, True)

    def run_jail(self, shell, *flags, env=None, timeout=60):
        e = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}
        e.update(env or {})
        return subprocess.run([jailtest.CORDON_SRC, "run", "--no-discover", "--quiet", *flags, "-c", shell], cwd=self.cwd,
                              env=e, capture_output=True, text=True, timeout=timeout)

    def net(self):
        return ["--allow-domain", NAME, *Upstream.flags()]


class Environment(JailTest):
    def test_every_client_family_finds_the_proxy(self):
        r = self.run_jail("env", env={"JAVA_TOOL_OPTIONS": "-Xmx64m", "GIT_SSH_COMMAND": "ssh -i /k"})
        self.assertEqual(r.returncode, 0, r.stderr)
        env = dict(line.split("=", 1) for line in r.stdout.splitlines() if "=" in line)
        http = "http://127.0.0.1:3128"
        for name in ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "GRPC_PROXY", "FTP_PROXY",
                     "ftp_proxy", "DOCKER_HTTP_PROXY", "DOCKER_HTTPS_PROXY"]:
            self.assertEqual(env.get(name), http, name)
        self.assertEqual(env["ALL_PROXY"], "socks5h://127.0.0.1:1080")
        self.assertEqual(env["RSYNC_PROXY"], "127.0.0.1:3128")
        self.assertEqual((env["CLOUDSDK_PROXY_TYPE"], env["CLOUDSDK_PROXY_ADDRESS"], env["CLOUDSDK_PROXY_PORT"]),
                         ("http", "127.0.0.1", "3128"))
        java = env["JAVA_TOOL_OPTIONS"].split()
        self.assertEqual(java[0], "-Xmx64m")  # the caller's options are kept
        for opt in ["-Dhttp.proxyHost=127.0.0.1", "-Dhttp.proxyPort=3128", "-Dhttps.proxyHost=127.0.0.1",
                    "-Dhttps.proxyPort=3128", "-DsocksProxyHost=127.0.0.1", "-DsocksProxyPort=1080"]:
            self.assertIn(opt, java)
        self.assertTrue(any(o.startswith("-Dhttp.nonProxyHosts=localhost|127.0.0.1") for o in java))
        self.assertTrue(env["GIT_SSH_COMMAND"].startswith("ssh -i /k -o ControlMaster=no -o ControlPath=none "
                                                          "-o ProxyCommand="), env["GIT_SSH_COMMAND"])
        self.assertIn("connect %h %p", env["GIT_SSH_COMMAND"])
        self.assertEqual(env["SANDBOX_RUNTIME"], "1")

    def test_no_network_sets_no_proxy_variables(self):
        r = self.run_jail("env", "--no-network", env={"FTP_PROXY": "http://elsewhere:1"})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("FTP_PROXY=", r.stdout)
        self.assertNotIn("GIT_SSH_COMMAND=", r.stdout)


class Clients(JailTest):
    def test_curl(self):
        r = self.run_jail(f"curl -sS --max-time 10 {Upstream.url()}", *self.net())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello from upstream\n")
        # The same request is refused when the name is not allowed: the proxy, not luck, let it through.
        r = self.run_jail(f"curl -sS --max-time 10 -o /dev/null -w '%{{http_code}}' {Upstream.url()}",
                          *Upstream.flags())
        self.assertEqual(r.stdout, "403")

    def test_python3(self):
        code = f"import urllib.request; print(urllib.request.urlopen('{Upstream.url()}', timeout=10).read().decode(), end='')"
        r = self.run_jail(f"/usr/bin/python3 -c \"{code}\"", *self.net())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello from upstream\n")

    def test_git_over_http(self):
        r = self.run_jail(f"git clone -q {Upstream.url('/repo.git')} clone && cat clone/hello.txt", *self.net())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello from the repository\n")

    def test_git_over_ssh_through_cordon_connect(self):
        if not Fixture.sshd_port:
            self.skipTest("sshd is not installed (scripts/setup installs openssh-server)")
        ssh = f"ssh -i {Fixture.ssh_key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes"
        r = self.run_jail(f"git clone -q ssh://root@{NAME}:{Fixture.sshd_port}{Fixture.repo} clone && "
                          "cat clone/hello.txt", *self.net(), env={"GIT_SSH_COMMAND": ssh})
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello from the repository\n")
        # Not allowed: `cordon connect` reports the proxy's refusal and git fails.
        r = self.run_jail(f"git clone -q ssh://root@{NAME}:{Fixture.sshd_port}{Fixture.repo} refused",
                          *Upstream.flags(), env={"GIT_SSH_COMMAND": ssh})
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("cordon connect: the proxy refused " + NAME, r.stderr)

    def test_java(self):
        if not shutil.which("java"):
            self.skipTest("java is not installed")
        src = os.path.join(self.cwd, "Fetch.java")
        with open(src, "w") as f:
            f.write("""
import java.io.*; import java.net.*;
public class Fetch {
  public static void main(String[] a) throws Exception {
    // HttpURLConnection reads no *_PROXY variable: only JAVA_TOOL_OPTIONS gets it to the proxy.
    HttpURLConnection c = (HttpURLConnection) new URL(a[0]).openConnection();
    try (InputStream in = c.getInputStream()) { System.out.print(new String(in.readAllBytes())); }
    System.out.println("socks=" + System.getProperty("socksProxyHost") + ":" + System.getProperty("socksProxyPort"));
  }
}
""")
        r = self.run_jail(f"java Fetch.java {Upstream.url()}", *self.net(), timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "hello from upstream\nsocks=127.0.0.1:1080\n")


class PolicyInTheJail(JailTest):
    def git(self, *args):
        subprocess.run(["git", *args], cwd=self.cwd, check=True, capture_output=True,
                       env={"PATH": "/usr/bin:/bin", "HOME": self.home, "GIT_CONFIG_NOSYSTEM": "1"})

    def test_allow_git_config_lets_git_config_write(self):
        self.git("init", "-q")
        settings = os.path.join(self.dir, "srt.json")
        with open(settings, "w") as f:
            json.dump({"filesystem": {"allowGitConfig": True}}, f)
        cmd = "git config cordon.test yes && git config cordon.test"
        r = self.run_jail(cmd, "--settings", settings)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "yes\n")
        with open(os.path.join(self.cwd, ".git", "config")) as f:
            self.assertIn("[cordon]", f.read())
        # Hooks stay protected.
        r = self.run_jail("echo x > .git/hooks/pre-commit", "--settings", settings)
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git", "hooks", "pre-commit")))

    def test_without_allow_git_config_git_config_fails(self):
        self.git("init", "-q")
        r = self.run_jail("git config cordon.test yes")
        self.assertNotEqual(r.returncode, 0)
        with open(os.path.join(self.cwd, ".git", "config")) as f:
            self.assertNotIn("[cordon]", f.read())

    def test_read_ssh_glob_hides_ssh_as_check_says(self):
        ssh = os.path.join(self.home, ".ssh")
        os.makedirs(ssh)
        with open(os.path.join(ssh, "id_test"), "w") as f:
            f.write("secret\n")
        settings = os.path.join(self.dir, "cc.json")
        with open(settings, "w") as f:
            json.dump({"permissions": {"deny": ["Read(~/.ssh/**)"]}}, f)
        r = subprocess.run([jailtest.CORDON_SRC, "check", "--no-discover", "--settings", settings, "read:~/.ssh"],
                           cwd=self.cwd, env={"HOME": self.home, "PATH": "/usr/bin:/bin"}, capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        r = self.run_jail("ls ~/.ssh; cat ~/.ssh/id_test", "--settings", settings)
        self.assertNotIn("id_test", r.stdout)
        self.assertNotIn("secret", r.stdout)


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Upstream, Fixture], "they start an sshd and jails as root"))
