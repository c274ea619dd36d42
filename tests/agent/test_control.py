#!/usr/bin/env python3
"""The control channel, live: settings updates and answers for a running `cordon run --control-fd N` (real
traffic from the jail to a test upstream on 127.0.0.1) and for `cordon proxy --control unix:PATH`; asks
answered and timing out; malformed lines. Needs root for the jail."""

import json
import os
import signal
import socket
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "proxy"))
from proxytest import CORDON, LOOPBACK, TempDirTest, wait_for  # noqa: E402

# The jailed command: for each step i, waits for the file go<i> (holding host:port), fetches it and writes the
# HTTP status to r<i>. The test drives it step by step, changing the policy in between.
JAILED = ('i=1; while [ $i -le 8 ]; do while [ ! -e go$i ]; do sleep 0.02; done; '
          'curl -s -o /dev/null -w "%{http_code}" --max-time 30 "http://$(cat go$i)/" > r$i.tmp; '
          'mv r$i.tmp r$i; i=$((i+1)); done')


class Channel:
    """JSON lines over a socket: send() a line, expect() the next line holding a key."""

    def __init__(self, sock):
        self.sock = sock
        self.buffer = b""
        self.lines = []

    def send(self, obj_or_text):
        text = obj_or_text if isinstance(obj_or_text, str) else json.dumps(obj_or_text)
        self.sock.sendall(text.encode() + b"\n")

    def _read(self, timeout):
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(65536)
        except socket.timeout:
            return
        if not data:
            raise AssertionError("control channel closed")
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self.lines.append(json.loads(line))

    def expect(self, key, timeout=15):
        deadline = time.time() + timeout
        while True:
            for i, line in enumerate(self.lines):
                if key in line:
                    return self.lines.pop(i)[key]
            if time.time() > deadline:
                raise AssertionError(f"no {key!r} line; got {self.lines}")
            self._read(0.2)

    def none(self, key, wait=0.5):
        deadline = time.time() + wait
        while time.time() < deadline:
            self._read(0.1)
        return not any(key in line for line in self.lines)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunControlTest(TempDirTest):
    def start(self, *flags):
        self.up = self.upstream()
        self.dns_server = self.dns({"ok.test": ["127.0.0.1"], "other.test": ["127.0.0.1"],
                                    "third.test": ["127.0.0.1"]})
        self.work = os.path.join(self.dir, "work")
        home = os.path.join(self.dir, "home")
        os.makedirs(self.work)
        os.makedirs(home)
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        self.proc = subprocess.Popen(
            [CORDON, "run", "--no-discover", "--quiet", "--dns-server", self.dns_server.address, *LOOPBACK,
             "--allow-domain", "ok.test", "--control-fd", str(theirs.fileno()), *flags, "--", "sh", "-c", JAILED],
            cwd=self.work, env=env, pass_fds=[theirs.fileno()], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        theirs.close()
        self.cleanups.append(self._stop)
        self.channel = Channel(ours)
        self.step = 0

    def _stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)

    def fetch(self, host, timeout=40):
        """Has the jailed command fetch host (at the upstream's port); returns the HTTP status it got."""
        self.step += 1
        result = os.path.join(self.work, f"r{self.step}")
        with open(os.path.join(self.work, f"go{self.step}.tmp"), "w") as f:
            f.write(f"{host}:{self.up.port}")
        os.rename(os.path.join(self.work, f"go{self.step}.tmp"), os.path.join(self.work, f"go{self.step}"))
        self.assertTrue(wait_for(lambda: os.path.exists(result), timeout), f"step {self.step} did not finish")
        with open(result) as f:
            return f.read()

    def update(self, obj):
        self.channel.send(obj)
        return self.channel.expect("updated")

    def test_allow_to_deny_and_back_live(self):
        self.start()
        self.assertEqual(self.fetch("ok.test"), "200")
        self.update({"network": {"deniedDomains": ["ok.test"]}})
        self.assertEqual(self.fetch("ok.test"), "403")
        refused = self.channel.expect("refused")
        self.assertEqual((refused["host"], refused["reason"], refused["rule"]),
                         ("ok.test", "blocked-by-denylist", "ok.test"))
        self.assertIn("control", refused["source"])
        # deny -> allow: the update replaces the list (merge patch), and an unknown host becomes allowed
        self.update({"network": {"deniedDomains": []}})
        self.assertEqual(self.fetch("ok.test"), "200")
        self.assertEqual(self.fetch("other.test"), "403")
        self.assertEqual(self.channel.expect("refused")["reason"], "blocked-by-allowlist")
        updated = self.update({"sandbox": {"network": {"allowedDomains": ["other.test"]}}})
        self.assertEqual(updated["allowedDomains"], 2)
        self.assertEqual(self.fetch("other.test"), "200")
        # malformed lines: one error line each, the channel stays open
        self.channel.send("not json")
        self.assertIn("JSON", self.channel.expect("error"))
        self.channel.send({"bogus": 1})
        self.assertIn("bogus", self.channel.expect("error"))
        # a deny entry cordon cannot read stops the update (never fail open); an allow entry is skipped
        self.channel.send({"network": {"deniedDomains": ["not a domain!"]}})
        self.assertIn("refused", self.channel.expect("error"))
        self.assertTrue(self.update({"network": {"allowedDomains": ["*.com", "other.test"]}})["warnings"])
        self.channel.send({"answer": {"id": 99, "decision": "allow"}})
        self.assertIn("99", self.channel.expect("error"))
        self.channel.send("x" * (2 << 20))
        self.assertIn("1 MiB", self.channel.expect("error"))
        updated = self.update({"network": {"deniedDomains": ["other.test"]}, "filesystem": {"allowWrite": ["/"]}})
        self.assertIn("filesystem", updated["note"])
        self.assertEqual(self.fetch("other.test"), "403")
        self.assertEqual(self.fetch("ok.test"), "200")

    def test_ask_answered_and_timing_out(self):
        self.start("--ask", "--ask-timeout", "1.5")
        # a host in neither list: asked about, answered allow (not remembered)
        self.channel.send({"network": {"allowedDomains": ["ok.test"]}})
        self.channel.expect("updated")
        with open(os.path.join(self.work, "go1"), "w") as f:
            f.write(f"other.test:{self.up.port}")
        self.step = 1
        ask = self.channel.expect("ask")
        self.assertEqual((ask["host"], ask["port"], ask["proto"]), ("other.test", self.up.port, "http"))
        self.channel.send({"answer": {"id": ask["id"], "decision": "allow", "remember": False}})
        self.assertTrue(wait_for(lambda: os.path.exists(os.path.join(self.work, "r1")), 30))
        with open(os.path.join(self.work, "r1")) as f:
            self.assertEqual(f.read(), "200")
        # no answer: refused as unknown after --ask-timeout
        started = time.time()
        self.assertEqual(self.fetch("third.test"), "403")
        self.assertGreaterEqual(time.time() - started, 1.4)
        self.assertEqual(self.channel.expect("ask")["host"], "third.test")
        refused = self.channel.expect("refused")
        self.assertEqual((refused["host"], refused["error"]), ("third.test", "ask: timeout"))
        # denied and remembered: refused, and not asked again
        with open(os.path.join(self.work, "go3"), "w") as f:
            f.write(f"other.test:{self.up.port}")
        self.step = 3
        ask = self.channel.expect("ask")
        self.channel.send({"answer": {"id": ask["id"], "decision": "deny", "remember": True}})
        self.assertTrue(wait_for(lambda: os.path.exists(os.path.join(self.work, "r3")), 30))
        with open(os.path.join(self.work, "r3")) as f:
            self.assertEqual(f.read(), "403")
        self.channel.expect("updated")  # remembering is an update of the control layer
        self.assertEqual(self.fetch("other.test"), "403")
        self.assertTrue(self.channel.none("ask"))
        # strictAllowlist: no asking at all
        self.update({"network": {"strictAllowlist": True}})
        started = time.time()
        self.assertEqual(self.fetch("third.test"), "403")
        self.assertLess(time.time() - started, 1.4)
        self.assertTrue(self.channel.none("ask"))


class FlagsTest(TempDirTest):
    def test_bad_control_flags_are_usage_errors(self):
        def run(*args, **kw):
            return subprocess.run([CORDON, *args], capture_output=True, text=True, timeout=30, **kw)
        self.assertEqual(run("run", "--ask", "--", "true").returncode, 2)
        self.assertEqual(run("proxy", "--listen", "127.0.0.1:0", "--ask").returncode, 2)
        self.assertEqual(run("proxy", "--listen", "127.0.0.1:0", "--control", "/no/scheme").returncode, 2)
        with open(os.path.join(self.dir, "file"), "w") as f:
            r = run("run", "--control-fd", str(f.fileno()), "--", "true", pass_fds=[f.fileno()])
        self.assertEqual(r.returncode, 2)
        self.assertIn("not a socket or a pipe", r.stderr)
        r = run("run", "--control-fd", "1", "--", "true")
        self.assertEqual(r.returncode, 2)


class ProxyControlTest(TempDirTest):
    def test_proxy_control_socket(self):
        up = self.upstream()
        dns = self.dns({"ok.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
        path = os.path.join(self.dir, "control.sock")
        proxy = self.proxy([*LOOPBACK, "--control", "unix:" + path, "--ask", "--ask-timeout", "5"], dns=dns)
        self.assertTrue(wait_for(lambda: os.path.exists(path)))
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        sock = socket.socket(socket.AF_UNIX)
        sock.connect(path)
        self.addCleanup(sock.close)
        channel = Channel(sock)
        curl = lambda: subprocess.run(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20", "-x", proxy.url(),
             f"http://ok.test:{up.port}/"], capture_output=True, text=True, timeout=30)
        # asked; answered allow with remember: allowed now and later without a question
        pending = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                                    "-x", proxy.url(), f"http://ok.test:{up.port}/"], stdout=subprocess.PIPE,
                                   text=True)
        ask = channel.expect("ask")
        channel.send({"answer": {"id": ask["id"], "decision": "allow", "remember": True}})
        self.assertEqual(pending.communicate(timeout=30)[0], "200")
        channel.expect("updated")
        self.assertEqual(curl().stdout, "200")
        self.assertTrue(channel.none("ask"))
        channel.send({"sandbox": {"network": {"deniedDomains": ["ok.test"]}}})
        channel.expect("updated")
        self.assertEqual(curl().stdout, "403")
        self.assertEqual(channel.expect("refused")["reason"], "blocked-by-denylist")
        # SIGHUP re-reads the files and keeps the control layer
        proxy.signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "policy reloaded" in proxy.stderr()))
        self.assertEqual(curl().stdout, "403")
        channel.expect("refused")
        # a peer that goes away: its open asks are refused at once rather than at the timeout
        pending = subprocess.Popen(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "20",
                                    "-x", proxy.url(), f"http://other.test:{up.port}/"], stdout=subprocess.PIPE,
                                   text=True)
        self.assertEqual(channel.expect("ask")["host"], "other.test")
        started = time.time()
        sock.close()
        self.assertEqual(pending.communicate(timeout=30)[0], "403")
        self.assertLess(time.time() - started, 4)
        # without a peer nobody is asked: refused at once
        started = time.time()
        self.assertEqual(curl().stdout, "403")
        self.assertLess(time.time() - started, 4)


if __name__ == "__main__":
    unittest.main()
