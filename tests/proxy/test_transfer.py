#!/usr/bin/env python3
"""Uploads and downloads through an inspected host, byte for byte (sha256 of a non-repeating-looking pattern):
every size around a TLS record (16 KiB) and past the body scan (64 KiB), through `cordon proxy` (no secrets)
and through `cordon run` with a masked secret (the body held and scanned, the header substituted).

CORDON_TRANSFER_SIZES (comma-separated byte counts) replaces the default sizes: the suite's
proxy_integration_transfer_1g runs this file with 1 GiB."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, LOOPBACK  # noqa: E402
from test_inspect import InspectBase  # noqa: E402
import transfer  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SIZES = [0, 1, 16 * 1024 - 1, 16 * 1024, 16 * 1024 + 1, 64 * 1024, 300 * 1000, 10 * 1024 * 1024]
SIZES = [int(s) for s in os.environ["CORDON_TRANSFER_SIZES"].split(",")] if os.environ.get(
    "CORDON_TRANSFER_SIZES") else DEFAULT_SIZES
TIMEOUT = 60 + max(SIZES) // (2 * 1024 * 1024)  # at least 2 MiB/s


class TransferTest(InspectBase):
    def check(self, results, expected_requests):
        for (direction, size), r in results:
            with self.subTest(direction=direction, size=size):
                self.assertEqual(r["status"], 200, r)
                self.assertEqual(r["length"], size, r)
                self.assertEqual(r["sha256"], r["expected"], r)
        self.assertEqual(len(expected_requests), len(results))

    def test_without_secrets(self):
        p = self.start()
        results = []
        for size in SIZES:
            for direction in ("up", "down"):
                r = transfer.transfer(p.url(), self.cordon_ca, "api.test", self.up.port, direction, size,
                                      timeout=TIMEOUT)
                results.append(((direction, size), r))
        self.check(results, self.up.requests)
        # One decision line per request, with what was forwarded (the response's body and more).
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "https") >= len(results))
        inner = [e for e in lines if e.get("proto") == "https"]
        self.assertEqual([(e["method"], e["status"]) for e in inner],
                         [("POST" if d == "up" else "GET", 200) for (d, _), _ in results])
        for ((direction, size), _), e in zip(results, inner):
            self.assertGreaterEqual(e["bytes_up" if direction == "up" else "bytes_down"], size)

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_with_a_masked_secret(self):
        real = "ghp_" + "R3alT0kenValue" * 3
        work, home, tmp = (os.path.join(self.dir, d) for d in ("work", "home", "tmp"))
        for d in (work, home, tmp):
            os.makedirs(d)
        script = "; ".join(
            "python3 %s \"$HTTPS_PROXY\" \"$SSL_CERT_FILE\" api.test %d %s %d \"token $GITHUB_TOKEN\"" %
            (os.path.join(HERE, "transfer.py"), self.up.port, direction, size)
            for size in SIZES for direction in ("up", "down"))
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": tmp,
               "XDG_CONFIG_HOME": os.path.join(self.dir, "xdg-empty"), "GITHUB_TOKEN": real}
        r = subprocess.run([CORDON, "run", "--no-discover", "--settings", self.settings, "--dns-server",
                            self.dns_server.address, "--upstream-ca", self.pki.cert, *LOOPBACK,
                            "--inspect", "api.test", "--secret", "GITHUB_TOKEN=api.test", "--", "sh", "-c", script],
                           cwd=work, env=env, capture_output=True, text=True, timeout=TIMEOUT * 2 * len(SIZES))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        cases = [(direction, size) for size in SIZES for direction in ("up", "down")]
        self.assertEqual(len(lines), len(cases), r.stdout + r.stderr)
        self.check(list(zip(cases, (json.loads(line) for line in lines))), self.up.requests)
        # The sentinel became the real value on the way to the upstream, every time.
        self.assertEqual({h.get("Authorization") for _, _, h in self.up.requests}, {"token " + real})
        self.assertNotIn(real, r.stdout)


if __name__ == "__main__":
    unittest.main()
