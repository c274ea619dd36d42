#!/usr/bin/env python3
"""The address guard refuses IPv4-translated answers (issue 10, defect 7)."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import TempDirTest  # noqa: E402

def in_private_netns(test):
    """Runs the test again in a fresh network namespace (only `lo`, no route out), so that a proxy that wrongly
    dials what the test DNS server answers cannot send a packet off this machine."""

    def wrapper(self):
        if os.environ.get("CORDON_TEST_PRIVATE_NETNS") == "1":
            return test(self)
        unshare = ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
        name = "%s.%s" % (type(self).__name__, test.__name__)
        r = subprocess.run(unshare + ["sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
                                      os.path.abspath(__file__), name],
                           env=dict(os.environ, CORDON_TEST_PRIVATE_NETNS="1"), capture_output=True, timeout=120)
        if r.returncode != 0 and b"unshare failed" in r.stderr and b"Operation not permitted" in r.stderr:
            self.skipTest("cannot create a network namespace here: " + r.stderr.decode(errors="replace"))
        output = (r.stdout + r.stderr).decode(errors="replace")
        self.assertEqual(r.returncode, 0, output)
        self.assertIn("Ran 1 test", output)

    wrapper.__name__ = test.__name__
    return wrapper


class TranslatedAddressTest(TempDirTest):
    @in_private_netns
    def test_siit_answer_is_refused(self):
        """An AAAA answer of ::ffff:0:7f00:1 (IPv4-translated 127.0.0.1) is refused by the address guard, over
        HTTP and SOCKS5; it used to be dialled."""
        up = self.upstream()
        dns = self.dns({"siit.g.test": ["::ffff:0:7f00:1"], "nat64.g.test": ["64:ff9b::7f00:1"]})
        p = self.proxy(["--allow-domain", "*.g.test"], dns=dns)
        for host in ("siit.g.test", "nat64.g.test"):
            r = self.curl("-i", "-x", p.url(), "http://%s:%d/" % (host, up.port))
            self.assertIn(b"403 Forbidden", r.stdout, host)
            self.assertIn(b"X-Proxy-Error: blocked-by-address-guard", r.stdout, host)
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % p.port, "http://siit.g.test:%d/" % up.port)
        self.assertNotEqual(r.returncode, 0)
        lines = p.wait_audit(lambda l: sum(e["event"] == "decision" for e in l) >= 3)
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual([(e["proto"], e["reason"], e["upstream_ip"], e["error"]) for e in ds],
                         [("http", "blocked-by-address-guard", "::ffff:0:7f00:1", "address-guard: ipv4-embedded"),
                          ("http", "blocked-by-address-guard", "64:ff9b::7f00:1", "address-guard: ipv4-embedded"),
                          ("socks5", "blocked-by-address-guard", "::ffff:0:7f00:1", "address-guard: ipv4-embedded")])
        self.assertEqual(up.connections, 0)


if __name__ == "__main__":
    unittest.main()
