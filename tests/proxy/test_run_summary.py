#!/usr/bin/env python3
"""What a refused user sees (issue 9) through a real `cordon run`: the 403 body and the end-of-run summary, which
tells apart hosts not in the allow list, hosts a deny rule refused, names the address guard refused and upstream
failures, each with its own advice. Needs root (the jail)."""

import os
import socket
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, TempDirTest  # noqa: E402


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunSummaryTest(TempDirTest):
    def run_jail(self, script, *flags):
        # The working directory is a project beside the home directory: cordon refuses to make a home directory
        # (or one holding it) writable by default.
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work, exist_ok=True)
        os.makedirs(home, exist_ok=True)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        return subprocess.run([CORDON, "run", "--no-discover", *flags, "--", "sh", "-c", script], cwd=work,
                              env=env, capture_output=True, text=True, timeout=60)

    def test_summary_tells_reasons_apart(self):
        up = self.upstream()
        dns = self.dns({"ok.test": ["127.0.0.1"], "inside.test": ["10.20.30.40"], "gone.test": "NXDOMAIN",
                        "closed.test": ["127.0.0.1"]})
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        closed_port = s.getsockname()[1]
        s.close()  # nothing listens there
        curl = "curl -sS --max-time 10 -o /dev/null -w '%{http_code} '"
        r = self.run_jail(
            f"{curl} http://ok.test:{up.port}/; {curl} http://elsewhere.test/; {curl} http://bad.ok.test/; "
            f"{curl} http://inside.test/; {curl} http://gone.test/; {curl} http://closed.test:{closed_port}/; "
            "curl -sS --max-time 10 http://bad.ok.test/",
            "--dns-server", dns.address, "--allow-address", "127.0.0.0/8", "--allow-domain", "ok.test",
            "--allow-domain", "*.ok.test", "--deny-domain", "bad.ok.test", "--allow-domain", "inside.test",
            "--allow-domain", "gone.test", "--allow-domain", "closed.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(r.stdout.startswith("200 403 403 403 502 502 "), r.stdout)
        # The 403 body: srt's phrase, and the rule with its source.
        self.assertIn("Connection blocked by network allowlist", r.stdout)
        self.assertIn("`bad.ok.test` from flags --deny-domain", r.stdout)

        err = r.stderr
        sections = {}
        current = None
        for line in err.splitlines():
            if line.startswith("  ") and not line.startswith("    "):
                current = line.strip().rstrip(":")
                sections[current] = ""
            elif current and line.startswith("    "):
                sections[current] += line + "\n"
        self.assertIn("refused 4 connection(s)", err)
        allow = sections["not in the allow list"]
        self.assertIn("elsewhere.test:80", allow)
        self.assertIn("--allow-domain", allow)
        self.assertIn("sandbox.network.allowedDomains", allow)
        deny = sections["denied by a deny rule"]
        self.assertIn("bad.ok.test:80  x2  by `bad.ok.test` from flags --deny-domain", deny)
        self.assertNotIn("--allow-domain", deny)
        guard = sections["refused by the address guard"]
        self.assertIn("inside.test:80  x1  resolves to 10.20.30.40 (", guard)
        self.assertIn("--allow-address 10.20.30.40/32", guard)
        self.assertNotIn("--allow-domain", guard)
        self.assertIn("2 allowed connection(s) failed upstream", err)
        failed = sections["upstream failures"]
        self.assertIn("gone.test:80  x1  DNS: no such name (NXDOMAIN)", failed)
        self.assertIn("closed.test:%d  x1  connection refused by the server" % closed_port, failed)
        self.assertNotIn("ok.test:%d" % up.port, err)  # the request that went through is no refusal

    def test_quiet_run_with_nothing_refused_prints_nothing(self):
        r = self.run_jail("true", "--allow-domain", "ok.test")
        self.assertEqual(r.returncode, 0)
        self.assertNotIn("refused", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
