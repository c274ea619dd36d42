#!/usr/bin/env python3
"""Policy parity through the real `cordon proxy` (issue 9): IPv4 literals in any inet_aton spelling reach the
rule written as a dotted quad in CONNECT, absolute-form and SOCKS5; `cordon check --resolve` agrees with the
proxy's resolver and address guard; an invalid --allow-address is an error; the rule's source reads the same
in the 403 body, the audit log and `cordon check`. Hermetic: 127.0.0.1 only, port 0, a test DNS server."""

import json
import os
import socket
import struct
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proxy"))
from proxytest import CORDON, TempDirTest, read_http_response, recv_until  # noqa: E402

LOOPBACK = ["--allow-address", "127.0.0.0/8"]
SPELLINGS = ["0x7f.1", "0x7f.0.0.1", "2130706433", "0177.0.0.1", "127.1"]


def socks_connect(proxy, host, port):
    s = proxy.connect()
    s.sendall(b"\x05\x01\x00")
    assert s.recv(2) == b"\x05\x00"
    s.sendall(b"\x05\x01\x00\x03" + bytes([len(host)]) + host.encode() + struct.pack("!H", port))
    reply = b""
    while len(reply) < 10:
        chunk = s.recv(10 - len(reply))
        if not chunk:
            break
        reply += chunk
    return s, reply


class Ipv4Spellings(TempDirTest):
    def test_connect_in_any_spelling_reaches_the_dotted_quad_rule(self):
        echo = self.tcp("echo")
        p = self.proxy(["--allow-domain", "127.0.0.1"] + LOOPBACK)
        for spelling in SPELLINGS:
            with self.subTest(spelling=spelling):
                s = p.connect()
                s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                          (spelling.encode(), echo.port, spelling.encode(), echo.port))
                head = recv_until(s)
                self.assertTrue(head.startswith(b"HTTP/1.1 200"), head)
                s.sendall(b"ping")
                self.assertEqual(s.recv(4), b"ping")
                s.close()
        hosts = [d["host"] for d in p.wait_audit(lambda ls: len([e for e in ls if e["event"] == "decision"])
                                                  >= len(SPELLINGS)) if d["event"] == "decision"]
        self.assertEqual(set(hosts), {"127.0.0.1"})

    def test_absolute_form_in_any_spelling(self):
        up = self.upstream()
        p = self.proxy(["--allow-domain", "127.0.0.1"] + LOOPBACK)
        for spelling in SPELLINGS:
            with self.subTest(spelling=spelling):
                r = self.curl("-x", p.url(), "http://%s:%d/hello" % (spelling, up.port))
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertEqual(json.loads(r.stdout)["path"], "/hello")

    def test_socks5_domain_in_any_spelling(self):
        echo = self.tcp("echo")
        p = self.proxy(["--allow-domain", "127.0.0.1"] + LOOPBACK)
        for spelling in SPELLINGS:
            with self.subTest(spelling=spelling):
                s, reply = socks_connect(p, spelling, echo.port)
                self.assertEqual(reply[:2], b"\x05\x00", reply)
                s.sendall(b"pong")
                data = b""
                while len(data) < 4:
                    chunk = s.recv(4)
                    if not chunk:
                        break
                    data += chunk
                self.assertTrue(data.endswith(b"pong"), data)
                s.close()

    def test_a_denied_address_is_denied_in_every_spelling(self):
        echo = self.tcp("echo")
        p = self.proxy(["--allow-domain", "*", "--deny-domain", "127.0.0.1"] + LOOPBACK)
        for spelling in SPELLINGS:
            with self.subTest(spelling=spelling):
                s = p.connect()
                s.sendall(b"CONNECT %s:%d HTTP/1.1\r\n\r\n" % (spelling.encode(), echo.port))
                status, headers, body = read_http_response(s)
                self.assertEqual(status, 403)
                self.assertIn(b"--deny-domain", body)
                s.close()

    def test_a_name_whose_last_label_is_a_number_is_refused_not_resolved(self):
        dns = self.dns({"evil.0x7f": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "*"] + LOOPBACK, dns=dns)
        s = p.connect()
        s.sendall(b"CONNECT evil.0x7f:80 HTTP/1.1\r\n\r\n")
        status, _, _ = read_http_response(s)
        s.close()
        self.assertEqual(status, 400)
        self.assertEqual(dns.count("evil.0x7f"), 0)


class RuleSource(TempDirTest):
    def test_403_body_audit_log_and_check_print_the_same_source(self):
        settings = os.path.join(self.dir, "s.json")
        with open(settings, "w") as f:
            f.write('{"permissions": {\n  "deny": ["WebFetch(domain:blocked.example)"],\n'
                    '  "allow": ["WebFetch(domain:*.example)"]}}\n')
        p = self.proxy(["--settings", settings])
        s = p.connect()
        s.sendall(b"CONNECT blocked.example:443 HTTP/1.1\r\n\r\n")
        status, _, body = read_http_response(s)
        s.close()
        self.assertEqual(status, 403)
        expected = "settings %s:2 permissions.deny[0]" % settings
        self.assertIn(expected.encode(), body)
        lines = p.wait_audit(lambda ls: any(e["event"] == "decision" for e in ls))
        self.assertEqual([e["source"] for e in lines if e["event"] == "decision"], [expected])
        r = subprocess.run([CORDON, "check", "--no-discover", "--managed-dir", self.dir, "--settings", settings,
                            "blocked.example"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 1)
        self.assertIn("source: " + expected + "\n", r.stdout)


class AllowAddress(TempDirTest):
    def test_an_invalid_allow_address_is_an_error_not_dropped(self):
        for bad in ["10/8", "127.0.0.0/33", "0x7f.0.0.1/8", "nonsense"]:
            with self.subTest(bad=bad):
                r = subprocess.run([CORDON, "proxy", "--listen", "127.0.0.1:0", "--no-discover", "--managed-dir",
                                    self.dir, "--allow-address", bad], capture_output=True, text=True, timeout=10)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertIn('--allow-address "%s"' % bad, r.stderr)

    def test_an_invalid_allowed_addresses_entry_is_skipped_with_a_warning_and_not_allowed(self):
        settings = os.path.join(self.dir, "s.json")
        with open(settings, "w") as f:
            f.write('{"network": {"allowedDomains": ["localhost"],\n "allowedAddresses": ["127.0.0.0/99"]}}\n')
        echo = self.tcp("echo")
        p = self.proxy(["--settings", settings, "--allow-domain", "127.0.0.1"])
        self.assertIn("%s:2: network.allowedAddresses[0]: skipped" % settings, p.stderr())
        s = p.connect()
        s.sendall(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\n\r\n" % echo.port)
        status, headers, _ = read_http_response(s)
        s.close()
        self.assertEqual(status, 403)
        self.assertEqual(headers.get("x-proxy-error"), "blocked-by-address-guard")


class CheckResolve(TempDirTest):
    """`cordon check --resolve` and the proxy agree: same resolver flags, same address guard."""

    def check(self, *args):
        return subprocess.run([CORDON, "check", "--no-discover", "--managed-dir", self.dir, *args],
                              capture_output=True, text=True, timeout=20)

    def test_check_and_proxy_agree_on_a_name_resolving_to_loopback(self):
        dns = self.dns({"inside.t.example": ["127.0.0.1"], "public.t.example": ["203.0.114.7"],
                        "gone.t.example": "NXDOMAIN"})
        up = self.upstream()
        base = ["--allow-domain", "*.t.example", "--dns-server", dns.address]
        # Without --allow-address: the guard refuses loopback, in check and in the proxy.
        r = self.check("--resolve", *base, "--json", "inside.t.example:%d" % up.port)
        self.assertEqual(r.returncode, 1, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["decision"], "deny")
        self.assertEqual(j["reason"], "blocked-by-address-guard")
        self.assertEqual(j["addresses"], [{"address": "127.0.0.1", "guard": "loopback"}])
        p = self.proxy(["--allow-domain", "*.t.example"], dns=dns)
        c = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://inside.t.example:%d/" % up.port)
        self.assertEqual(c.stdout, b"403")
        # With it: both allow.
        r = self.check("--resolve", *base, *LOOPBACK, "inside.t.example:%d" % up.port)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("address: 127.0.0.1 (passes the address guard)", r.stdout)
        q = self.proxy(["--allow-domain", "*.t.example"] + LOOPBACK, dns=dns)
        c = self.curl("-x", q.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://inside.t.example:%d/" % up.port)
        self.assertEqual(c.stdout, b"200")
        # A public address passes the guard; a name that does not resolve is refused with the DNS error.
        r = self.check("--resolve", *base, "public.t.example")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        r = self.check("--resolve", *base, "gone.t.example")
        self.assertEqual(r.returncode, 1)
        self.assertIn("reason: nxdomain", r.stdout)
        # Without --resolve, check decides on the name alone (as before).
        self.assertEqual(self.check(*base, "inside.t.example").returncode, 0)


if __name__ == "__main__":
    unittest.main()
