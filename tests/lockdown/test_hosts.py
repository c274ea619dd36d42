#!/usr/bin/python3
"""Each simulated locked-down host of hosts.py really has the property it stands for (host_probe.py inside it),
and the host's own settings are what they were. Needs root."""
import errno
import http.server
import json
import os
import pwd
import secrets
import subprocess
import sys
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hosts  # noqa: E402

PROBE = hosts.readable_by_everyone(os.path.join(HERE, "host_probe.py"))
CAP_SYS_ADMIN, CAP_CHOWN = 21, 0
USER = None


def setUpModule():
    global USER
    USER = "cordonlkd" + secrets.token_hex(3)
    subprocess.run(["useradd", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/bin/sh",
                    "--user-group", USER], check=True)


def tearDownModule():
    if USER:
        subprocess.run(["userdel", USER], check=False, stderr=subprocess.DEVNULL)


def probe(host, *args):
    out = host.run([hosts.PY, PROBE, *args], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise AssertionError(f"probe in {host.name} exited {out.returncode}: {out.stderr}")
    return json.loads(out.stdout)


def host_sysctl():
    with open("/proc/sys/user/max_user_namespaces") as f:
        return f.read()


class OuterProxy:
    """Stands for Claude Code's proxy: answers every request it is sent with its own body."""

    def __enter__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = f"outer proxy: {self.path}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = self.server.server_address[1]
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


class HostsTest(unittest.TestCase):
    def test_this_host_has_what_the_simulations_take_away(self):
        r = probe(Direct())
        self.assertEqual(r["unshare_user"], 0)
        self.assertGreater(r["landlock_abi"], 0)
        self.assertEqual(r["seccomp"], 0)

    def test_userns_limit_refuses_user_namespaces_to_an_unprivileged_user(self):
        before = host_sysctl()
        r = probe(hosts.UsernsLimitHost(USER))
        self.assertEqual(r["uid"], pwd.getpwnam(USER).pw_uid)
        self.assertEqual(r["cap_eff"], 0)
        self.assertEqual(r["max_user_namespaces"], 0)
        self.assertEqual(r["unshare_user"], errno.ENOSPC)
        self.assertEqual(r["clone_newuser"], errno.ENOSPC)
        self.assertEqual(r["clone_plain"], 0)
        self.assertGreater(r["landlock_abi"], 0)
        self.assertEqual(host_sysctl(), before)

    def test_docker_is_root_without_cap_sys_admin_under_dockers_rules(self):
        r = probe(hosts.DockerHost())
        self.assertEqual(r["uid"], 0)
        self.assertFalse(r["cap_eff"] >> CAP_SYS_ADMIN & 1)
        self.assertTrue(r["cap_eff"] >> CAP_CHOWN & 1)
        self.assertEqual(r["seccomp"], 2)
        self.assertEqual(r["no_new_privs"], 0)
        for call in ("unshare_user", "unshare_mount", "unshare_net", "clone_newuser", "setns", "mount"):
            self.assertEqual(r[call], errno.EPERM, call)
        self.assertEqual(r["clone3"], errno.ENOSYS)
        self.assertEqual(r["clone_plain"], 0)
        self.assertGreater(r["landlock_abi"], 0)  # Docker's profile allows Landlock
        self.assertEqual(r["socket_unix"], 0)

    def test_no_landlock_answers_enosys(self):
        r = probe(hosts.NoLandlockHost())
        self.assertEqual(r["landlock"], errno.ENOSYS)
        self.assertEqual(r["unshare_user"], 0)

    def test_no_landlock_composes_with_another_host(self):
        r = probe(hosts.NoLandlockHost(hosts.UsernsLimitHost(USER)))
        self.assertEqual(r["landlock"], errno.ENOSYS)
        self.assertEqual(r["unshare_user"], errno.ENOSPC)
        self.assertEqual(r["uid"], pwd.getpwnam(USER).pw_uid)

    def test_old_kernel_has_no_seccomp_user_notification(self):
        self.assertEqual(probe(Direct())["seccomp_listener"], errno.EFAULT)
        r = probe(hosts.OldKernelHost(hosts.UsernsLimitHost(USER)))
        self.assertEqual(r["seccomp_listener"], errno.EINVAL)
        self.assertEqual(r["unshare_user"], errno.ENOSPC)

    def test_bubblewrap_has_claude_codes_restrictions_and_only_the_proxy_out(self):
        before = host_sysctl()
        with OuterProxy() as outer, hosts.BubblewrapHost(USER, proxy=("127.0.0.1", outer.port)) as host:
            r = probe(host, "--fetch", "http://example.test/x", "--direct", f"127.0.0.1:{outer.port}")
        self.assertEqual(r["uid"], pwd.getpwnam(USER).pw_uid)
        self.assertEqual(r["cap_eff"], 0)
        # --disable-userns spends the limit of the namespace above (this one's own value reads the default).
        self.assertEqual(r["unshare_user"], errno.ENOSPC)
        self.assertEqual(r["interfaces"], ["lo"])
        self.assertEqual(r["fetch"], "outer proxy: http://example.test/x")
        self.assertEqual(r["direct"], errno.ECONNREFUSED)
        self.assertEqual(r["socket_unix"], errno.EPERM)
        self.assertEqual(host_sysctl(), before)

    def test_bubblewrap_gives_a_writable_tmpdir_only(self):
        with hosts.BubblewrapHost(USER) as host:
            script = 'touch "$TMPDIR/x" && echo tmpdir-ok; touch /tmp/cordon-bwrap-probe 2>/dev/null || echo tmp-ro'
            r = host.run(["sh", "-c", script], capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout.split(), ["tmpdir-ok", "tmp-ro"], r.stderr)
        self.assertFalse(os.path.exists("/tmp/cordon-bwrap-probe"))

    def test_bubblewrap_as_root(self):
        with hosts.BubblewrapHost() as host:
            r = probe(host)
        self.assertEqual(r["uid"], 0)
        self.assertEqual(r["cap_eff"], 0)
        self.assertEqual(r["unshare_user"], errno.ENOSPC)
        self.assertEqual(r["interfaces"], ["lo"])


class Direct(hosts.Host):
    name = "this host"

    def argv(self, cmd):
        return list(cmd)


if __name__ == "__main__":
    if os.geteuid() != 0:
        print("test_hosts.py needs root (a test user, namespaces, seccomp filters)", file=sys.stderr)
        sys.exit(77)
    unittest.main(verbosity=2)
