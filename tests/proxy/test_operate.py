#!/usr/bin/env python3
"""Operating cordon proxy (issue 16): --watch reloads the policy when a settings file is written, renamed over
(configuration tools), swapped as a Kubernetes ConfigMap does (`..data` symlink), or a file appears in
managed-settings.d; a broken change is refused and the proxy keeps serving; /healthz and /readyz (on --metrics
and --health) and /readyz flipping to 503 while draining. Real traffic through a real proxy on 127.0.0.1."""

import ctypes
import json
import os
import select
import socket
import signal
import struct
import subprocess
import sys
import threading
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, LOOPBACK, wait_for, TempDirTest, recv_until  # noqa: E402


def allow(*hosts):
    return '{"sandbox": {"network": {"allowedDomains": [%s]}}}' % ", ".join('"%s"' % h for h in hosts)


def http_get(port, path):
    """(status, body) of GET http://127.0.0.1:port/path."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def count_opens(path, seconds):
    """How many times `path` is opened during `seconds` (inotify IN_OPEN, through libc)."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(os.O_NONBLOCK)
    assert fd >= 0
    try:
        assert libc.inotify_add_watch(fd, path.encode(), 0x20) >= 0  # IN_OPEN
        opens, deadline = 0, time.time() + seconds
        while time.time() < deadline:
            select.select([fd], [], [], max(0, deadline - time.time()))
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            at = 0
            while at + 16 <= len(data):
                wd, mask, cookie, length = struct.unpack_from("iIII", data, at)
                opens += 1 if mask & 0x20 else 0
                at += 16 + length
        return opens
    finally:
        os.close(fd)


class WatchTest(TempDirTest):
    def start(self, settings_args, extra=()):
        self.up = self.upstream()
        self.dns_server = self.dns({"a.w.test": ["127.0.0.1"], "b.w.test": ["127.0.0.1"], "c.w.test": ["127.0.0.1"]})
        self.p = self.proxy([*settings_args, *LOOPBACK, "--watch", "--metrics", "127.0.0.1:0", *extra],
                            dns=self.dns_server)

    def status(self, host):
        out = self.curl("-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", self.p.url(),
                        "http://%s:%d/" % (host, self.up.port)).stdout
        return out.decode()

    def wait_status(self, host, status):
        self.assertTrue(wait_for(lambda: self.status(host) == status, timeout=10),
                        "%s never got %s; stderr:\n%s" % (host, status, self.p.stderr()))

    def reloads(self):
        return self.p.stderr().count("--watch: policy reloaded")

    def test_write_rename_over_and_broken_file(self):
        settings = os.path.join(self.dir, "conf", "egress.json")
        os.makedirs(os.path.dirname(settings))
        with open(settings, "w") as f:
            f.write(allow("a.w.test"))
        self.start(["--settings", settings])
        self.assertEqual(self.status("a.w.test"), "200")
        self.assertEqual(self.status("b.w.test"), "403")

        # Written in place.
        with open(settings, "w") as f:
            f.write(allow("b.w.test"))
        self.wait_status("b.w.test", "200")
        self.assertEqual(self.status("a.w.test"), "403")
        self.assertEqual(self.reloads(), 1)
        # Once the change is applied the proxy is quiet: no reload loop (re-arming the watches is no change).
        self.assertEqual(count_opens(settings, 1.5), 0)

        # A new file renamed over the old one (what editors and configuration tools do).
        tmp = settings + ".tmp"
        with open(tmp, "w") as f:
            f.write(allow("c.w.test"))
        os.rename(tmp, settings)
        self.wait_status("c.w.test", "200")
        self.assertEqual(self.status("b.w.test"), "403")

        # A broken file: refused, reported with its name, the old policy keeps serving (an open tunnel too).
        echo = self.tcp("echo")
        tunnel = self.p.connect()
        tunnel.sendall(b"CONNECT c.w.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(tunnel))
        with open(tmp, "w") as f:
            f.write('{"sandbox": {"network": {"allowedDomains": [ broken')
        os.rename(tmp, settings)
        self.assertTrue(wait_for(lambda: "keeping the old one" in self.p.stderr()), self.p.stderr())
        self.assertIn("egress.json", self.p.stderr())
        self.assertEqual(self.status("c.w.test"), "200")
        self.assertEqual(self.status("a.w.test"), "403")
        tunnel.sendall(b"still there")
        self.assertEqual(tunnel.recv(100), b"still there")
        tunnel.close()
        self.assertIsNone(self.p.proc.poll())

        # An unrelated file in the same directory reloads nothing.
        before = self.reloads()
        with open(os.path.join(self.dir, "conf", "notes.txt"), "w") as f:
            f.write("x")
        time.sleep(1)
        self.assertEqual(self.reloads(), before)

        # Fixed again: applies.
        with open(tmp, "w") as f:
            f.write(allow("a.w.test"))
        os.rename(tmp, settings)
        self.wait_status("a.w.test", "200")
        metrics = http_get(self.p.metrics_port, "/metrics")[1]
        self.assertIn('cordon_policy_reloads_total{result="ok"} 3', metrics)
        self.assertIn('cordon_policy_reloads_total{result="error"} 1', metrics)

    def test_managed_settings_d_new_file_and_configmap_swap(self):
        # The Proxy helper passes --managed-dir DIR/managed; the directory managed-settings.d does not exist yet.
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed, exist_ok=True)
        self.start([])
        self.assertEqual(self.status("a.w.test"), "403")

        # managed-settings.d appears, then a file in it.
        drop_in = os.path.join(managed, "managed-settings.d")
        os.makedirs(drop_in)
        with open(os.path.join(drop_in, "10-a.json"), "w") as f:
            f.write(allow("a.w.test"))
        self.wait_status("a.w.test", "200")

        # A ConfigMap volume: managed-settings.json -> ..data/managed-settings.json, ..data -> a timestamped
        # directory; an update writes a new directory and renames a new ..data symlink over the old one.
        def configmap_version(name, text):
            version = os.path.join(managed, name)
            os.makedirs(version)
            with open(os.path.join(version, "managed-settings.json"), "w") as f:
                f.write(text)
            os.symlink(name, os.path.join(managed, "..data_tmp"))
            os.rename(os.path.join(managed, "..data_tmp"), os.path.join(managed, "..data"))

        configmap_version("..2026_12_01_v1", allow("b.w.test"))
        os.symlink("..data/managed-settings.json", os.path.join(managed, "managed-settings.json"))
        self.wait_status("b.w.test", "200")
        configmap_version("..2026_12_01_v2", allow("c.w.test"))
        self.wait_status("c.w.test", "200")
        self.assertEqual(self.status("b.w.test"), "403")
        self.assertEqual(self.status("a.w.test"), "200")  # the drop-in still applies


class WatchFlagTest(unittest.TestCase):
    def test_usage_errors(self):
        r = subprocess.run([CORDON, "run", "--watch", "--no-network", "--", "true"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--no-network", r.stderr)
        r = subprocess.run([CORDON, "proxy", "--listen", "127.0.0.1:0", "--health", "nowhere"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("bad --health address 'nowhere'", r.stderr)


class HealthTest(TempDirTest):
    def test_healthz_readyz_and_drain(self):
        echo = self.tcp("echo")
        dns = self.dns({"t.h.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "t.h.test", *LOOPBACK, "--drain-timeout", "30",
                        "--metrics", "127.0.0.1:0", "--health", "127.0.0.1:0"], dns=dns)
        self.assertTrue(wait_for(lambda: "health on" in p.stderr()), p.stderr())
        import re
        health_port = int(re.search(r"health on [^\s]*:(\d+)", p.stderr()).group(1))
        for port in (p.metrics_port, health_port):
            self.assertEqual(http_get(port, "/healthz"), (200, "ok\n"))
            self.assertEqual(http_get(port, "/readyz"), (200, "ready\n"))
        self.assertEqual(http_get(health_port, "/metrics")[0], 404)  # --health serves only the two
        self.assertIn("cordon_requests_total", http_get(p.metrics_port, "/metrics")[1])

        # An open tunnel keeps the drain going: not ready, still healthy, the tunnel still works.
        s = p.connect()
        s.sendall(b"CONNECT t.h.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(s))
        p.signal(signal.SIGTERM)
        self.assertTrue(wait_for(lambda: "draining" in p.stderr()), p.stderr())
        for port in (p.metrics_port, health_port):
            self.assertEqual(http_get(port, "/readyz"), (503, "draining\n"))
            self.assertEqual(http_get(port, "/healthz"), (200, "ok\n"))
        s.sendall(b"ping")
        self.assertEqual(s.recv(100), b"ping")
        s.close()
        self.assertEqual(p.proc.wait(15), 0)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunWatchTest(TempDirTest):
    def jail(self, flags, script, managed):
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work, exist_ok=True)
        os.makedirs(home, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        cmd = [CORDON, "run", "--no-discover", "--managed-dir", managed, *flags, "--", "sh", "-c", script]
        return subprocess.Popen(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_new_managed_file_reloads_the_jails_network_policy(self):
        up = self.upstream()
        dns = self.dns({"a.r.test": ["127.0.0.1"]})
        managed = os.path.join(self.dir, "managed")  # outside the jail's reach (the jail has its own /tmp)
        os.makedirs(os.path.join(managed, "managed-settings.d"))
        curl = "curl -s -o /dev/null -w '%%{http_code}' --max-time 5 http://a.r.test:%d/" % up.port
        script = ("%s; echo; touch ready; while [ ! -e go ]; do sleep 0.05; done; "
                  "for i in $(seq 200); do c=$(%s); [ \"$c\" = 200 ] && break; sleep 0.05; done; echo $c"
                  % (curl, curl))
        p = self.jail(["--watch", "--dns-server", dns.address, *LOOPBACK], script, managed)
        try:
            self.assertTrue(wait_for(lambda: os.path.exists(os.path.join(self.dir, "work", "ready")), 30))
            with open(os.path.join(managed, "managed-settings.d", "10-a.json"), "w") as f:
                f.write(allow("a.r.test"))
            open(os.path.join(self.dir, "work", "go"), "w").close()
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.assertEqual(p.returncode, 0, err)
        self.assertEqual(out.split(), ["403", "200"], err)
        self.assertIn("--watch: network policy reloaded", err)

    def test_source_the_jail_could_write_is_refused(self):
        # A managed directory inside the working directory: the jailed command could add a file that allows
        # whatever it likes. --watch refuses to start; without --watch the policy is read once, as always.
        managed = os.path.join(self.dir, "work", "managed")
        os.makedirs(os.path.join(managed, "managed-settings.d"))
        p = self.jail(["--watch"], "echo ran", managed)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 2, err)
        self.assertNotIn("ran", out)
        self.assertIn("could change its own network policy", err)
        p = self.jail([], "echo ran", managed)
        out, err = p.communicate(timeout=60)
        self.assertEqual((p.returncode, out), (0, "ran\n"), err)


class ManagedOnlyAskTest(TempDirTest):
    def test_asking_never_widens_past_managed_only(self):
        """allowManagedDomainsOnly in managed settings: a host the managed layer does not list is refused without
        a question, a control update that allows it is ignored and says so in its reply's warnings."""
        up = self.upstream()
        dns = self.dns({"managed.test": ["127.0.0.1"], "asked.test": ["127.0.0.1"]})
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed, exist_ok=True)
        with open(os.path.join(managed, "managed-settings.json"), "w") as f:
            json.dump({"sandbox": {"network": {"allowManagedDomainsOnly": True,
                                               "allowedDomains": ["managed.test"]}}}, f)
        path = os.path.join(self.dir, "control.sock")
        p = self.proxy([*LOOPBACK, "--control", "unix:" + path, "--ask", "--ask-timeout", "5"], dns=dns)
        self.assertTrue(wait_for(lambda: os.path.exists(path)))
        peer = socket.socket(socket.AF_UNIX)
        peer.connect(path)
        self.addCleanup(peer.close)
        reader = peer.makefile("rb")

        def curl(host):
            return self.curl("-s", "-o", "/dev/null", "-w", "%{http_code}", "-x", p.url(),
                             "http://%s:%d/" % (host, up.port)).stdout

        self.assertEqual(curl("managed.test"), b"200")
        # A peer that would answer allow to every question: none is asked.
        answered = []

        def answer_all():
            for line in reader:
                msg = json.loads(line)
                if "ask" in msg:
                    answered.append(msg["ask"]["host"])
                    peer.sendall(json.dumps({"answer": {"id": msg["ask"]["id"], "decision": "allow"}}).encode()
                                 + b"\n")
                elif "updated" in msg or "error" in msg:
                    replies.append(msg)

        replies = []
        threading.Thread(target=answer_all, daemon=True).start()
        # Refused without a question: a question would have been answered "allow" by the peer (and seen here).
        self.assertEqual(curl("asked.test"), b"403", (answered, p.decisions(), p.stderr()))
        self.assertEqual(answered, [])
        # An update that allows it: ignored, and the reply says so.
        peer.sendall(json.dumps({"sandbox": {"network": {"allowedDomains": ["asked.test"]}}}).encode() + b"\n")
        self.assertTrue(wait_for(lambda: replies))
        self.assertIn("updated", replies[0], replies)
        self.assertTrue(any("asked.test" in w and "allowManagedDomainsOnly" in w
                            for w in replies[0]["updated"]["warnings"]), replies)
        self.assertEqual(curl("asked.test"), b"403")
        self.assertEqual(answered, [])
        # The audit log is written behind the answers (it never holds one up): wait for both lines.
        self.assertTrue(wait_for(lambda: len([e for e in p.decisions() if e["host"] == "asked.test"]) >= 2),
                        p.decisions())
        denied = [e for e in p.decisions() if e["host"] == "asked.test"]
        self.assertEqual([e["reason"] for e in denied], ["blocked-by-allowlist"] * 2)


if __name__ == "__main__":
    unittest.main()
