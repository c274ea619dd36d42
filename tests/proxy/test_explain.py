#!/usr/bin/env python3
"""Explaining refusals (issue 28): srt's `deniedDomainReasons` (and Claude Code's `sandbox.network` twin) shown in
the 403 body, the audit line of a SOCKS5 refusal, `cordon check` and the end-of-run summary of `cordon run`; and the
proxy's report-only mode. Real sockets: curl and raw SOCKS5 through a real `cordon proxy` / `cordon run`."""

import json
import os
import socket
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, LOOPBACK, TempDirTest, recv_until  # noqa: E402

REASON = "paste sites leak code: see wiki/egress (NET-42)"
DENY_REASON = "known exfiltration host"


def socks_connect(port, host, target_port):
    """A SOCKS5 CONNECT to `host` (a name) through the proxy on `port`; returns the reply code."""
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    try:
        s.sendall(b"\x05\x01\x00")
        assert s.recv(2) == b"\x05\x00"
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + struct.pack("!H", target_port))
        reply = s.recv(10)
        return reply[1] if len(reply) > 1 else None
    finally:
        s.close()


class DenyReasonsTest(TempDirTest):
    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            json.dump(doc, f, indent=2)
        return path

    def srt_settings(self):
        return self.write("srt.json", {"network": {
            "allowedDomains": ["ok.r.test"],
            "deniedDomains": ["evil.r.test"],
            "deniedDomainReasons": {"*.paste.r.test": REASON, "evil.r.test": DENY_REASON,
                                    "bad pattern!": "skipped", "num.r.test": 7}}})

    def claude_settings(self):
        return self.write("claude.json", {"sandbox": {"network": {
            "allowedDomains": ["ok.r.test"],
            "deniedDomains": ["evil.r.test"],
            "deniedDomainReasons": {"*.paste.r.test": REASON, "evil.r.test": DENY_REASON}}}})

    def check(self, settings, target, *extra):
        return subprocess.run([CORDON, "check", "--no-discover", "--managed-dir", self.dir, "--settings", settings,
                               *extra, target], capture_output=True, text=True, timeout=30)

    def test_check_shows_the_reason_in_both_formats(self):
        for settings in (self.srt_settings(), self.claude_settings()):
            r = self.check(settings, "x.paste.r.test")
            self.assertEqual(r.returncode, 1, r.stderr)
            self.assertIn("reason: blocked-by-allowlist", r.stdout)
            self.assertIn("reason_text: " + REASON, r.stdout)
            self.assertIn("deniedDomainReasons.*.paste.r.test", r.stdout)
            r = self.check(settings, "evil.r.test", "--json")
            self.assertEqual(r.returncode, 1, r.stderr)
            out = json.loads(r.stdout)
            self.assertEqual((out["reason"], out["reason_text"]), ("blocked-by-denylist", DENY_REASON))
            # A reason never changes a decision, and an allowed host has none.
            r = self.check(settings, "ok.r.test", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertNotIn("reason_text", json.loads(r.stdout))

    def test_bad_entries_are_warned_about_and_skipped(self):
        r = self.check(self.srt_settings(), "x.paste.r.test")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn('network.deniedDomainReasons.bad pattern!: skipped: invalid domain pattern', r.stderr)
        self.assertIn("network.deniedDomainReasons.num.r.test: skipped: the reason must be a string, found number",
                      r.stderr)
        self.assertIn("reason_text: " + REASON, r.stdout)  # the good entries still apply
        bad = self.write("bad.json", {"network": {"deniedDomainReasons": ["not", "an", "object"]}})
        r = self.check(bad, "x.paste.r.test")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("network.deniedDomainReasons: skipped: must be an object", r.stderr)
        escape = self.write("esc.json", {"network": {"deniedDomainReasons": {"x.r.test": "a\x1b[31mred"}}})
        r = self.check(escape, "x.r.test")
        self.assertIn("skipped: the reason holds a control character", r.stderr)
        self.assertNotIn("\x1b", r.stdout)

    def test_http_403_body_and_socks5_audit_line(self):
        up = self.upstream()
        dns = self.dns({"ok.r.test": ["127.0.0.1"], "x.paste.r.test": ["127.0.0.1"], "evil.r.test": ["127.0.0.1"]})
        p = self.proxy(["--settings", self.claude_settings(), *LOOPBACK], dns=dns)
        r = self.curl("-x", p.url(), "-o", "/dev/stderr", "-w", "%{http_code}", "http://x.paste.r.test:%d/" % up.port)
        self.assertEqual(r.stdout, b"403")
        self.assertIn(("cordon: reason: " + REASON).encode(), r.stderr)
        # CONNECT is refused with the same body.
        s = p.connect()
        s.sendall(b"CONNECT evil.r.test:443 HTTP/1.1\r\nHost: evil.r.test:443\r\n\r\n")
        head = recv_until(s, b"known exfiltration host\n")
        s.close()
        self.assertIn(b" 403 ", head.split(b"\r\n")[0])
        self.assertIn(("cordon: reason: " + DENY_REASON).encode(), head)
        # SOCKS5: the client sees only a reply code; the audit line carries the reason.
        self.assertEqual(socks_connect(p.port, "x.paste.r.test", up.port), 2)
        lines = p.wait_audit(lambda ls: any(e.get("proto") == "socks5" for e in ls))
        socks = [e for e in lines if e["event"] == "decision" and e["proto"] == "socks5"]
        self.assertEqual(len(socks), 1, lines)
        self.assertEqual((socks[0]["decision"], socks[0]["reason"], socks[0]["reason_text"]),
                         ("deny", "blocked-by-allowlist", REASON))
        allowed = self.curl("-x", p.url(), "http://ok.r.test:%d/" % up.port)
        self.assertEqual(allowed.returncode, 0, allowed.stderr)
        ok = [e for e in p.decisions() if e["host"] == "ok.r.test"]
        self.assertTrue(ok and "reason_text" not in ok[0], ok)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunSummaryReasonTest(TempDirTest):
    def test_summary_shows_the_reason(self):
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work)
        os.makedirs(home)
        settings = os.path.join(self.dir, "s.json")
        with open(settings, "w") as f:
            json.dump({"network": {"deniedDomains": ["evil.r.test"],
                                   "deniedDomainReasons": {"*.paste.r.test": REASON, "evil.r.test": DENY_REASON}}},
                      f)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        curl = "curl -sS --max-time 10 -o /dev/null -w '%{http_code} '"
        r = subprocess.run([CORDON, "run", "--no-discover", "--settings", settings, "--", "sh", "-c",
                            f"{curl} http://x.paste.r.test/; {curl} http://evil.r.test/"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "403 403 ")
        self.assertIn("x.paste.r.test:80  x1  reason: " + REASON, r.stderr)
        self.assertIn("evil.r.test:80  x1  by `evil.r.test` from %s" % settings, r.stderr)
        self.assertIn("reason: " + DENY_REASON, r.stderr)


if __name__ == "__main__":
    unittest.main()
