#!/usr/bin/env python3
"""Explaining refusals (issue 28): srt's `deniedDomainReasons` (and Claude Code's `sandbox.network` twin) shown in
the 403 body, the audit line of a SOCKS5 refusal, `cordon check` and the end-of-run summary of `cordon run`; the
proxy's report-only mode; `cordon policy suggest` on the audit logs of real jailed curl and npm runs (npm against a
registry served here: never the internet). Real sockets: curl, npm and raw SOCKS5 through a real `cordon proxy` /
`cordon run`."""

import base64
import hashlib
import http.server
import io
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, LOOPBACK, TempDirTest, read_http_response, recv_until  # noqa: E402
from test_inspect import InspectBase  # noqa: E402

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
        self.assertIn("network.deniedDomainReasons.num.r.test: skipped: the reason must be a string, found a number",
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


API_REASON = "writes to the API go through the release bot (OPS-7)"


class RequestDenyReasonsBase(InspectBase):
    """InspectBase's upstream and rules (api.test: GET /repos/acme/**, GET|POST /public/*, deny /public/secret),
    with a reason for api.test and a denied evil.test with its own."""

    def setUp(self):
        super().setUp()
        with open(self.settings) as f:
            doc = json.load(f)
        doc["network"]["deniedDomains"] = ["evil.test"]
        doc["network"]["deniedDomainReasons"] = {"api.test": API_REASON, "evil.test": DENY_REASON}
        with open(self.settings, "w") as f:
            json.dump(doc, f)


class RequestDenyReasonsTest(RequestDenyReasonsBase):
    def test_refusals_inside_an_inspected_tunnel_and_of_plain_requests_carry_the_reason(self):
        plain = self.upstream(name="plain")
        p = self.start()
        t = self.tunnel(p, "api.test")
        port = self.up.port

        def ask(method, path, host="api.test:%d" % port):
            t.sendall(b"%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n" %
                      (method.encode(), path.encode(), host.encode()))
            return read_http_response(t)

        status, _, body = ask("GET", "/repos/acme/app")
        self.assertEqual(status, 200, body)
        # Refused by a request rule (none matches; a deny rule): the host's reason.
        status, headers, body = ask("POST", "/gists")
        self.assertEqual((status, headers["x-proxy-error"]), (403, "blocked-by-request-rule"))
        self.assertIn(("cordon: reason: " + API_REASON).encode(), body)
        status, _, body = ask("GET", "/public/secret")
        self.assertEqual(status, 403)
        self.assertIn(("cordon: reason: " + API_REASON).encode(), body)
        # A Host naming a host the policy denies (domain fronting through an allowed tunnel): still 421, with
        # the deny rule and that host's reason; the connection stays usable.
        status, headers, body = ask("GET", "/x", host="evil.test")
        self.assertEqual((status, headers["x-proxy-error"]), (421, "misdirected-request"))
        self.assertIn(b"the policy refuses evil.test:%d too (blocked-by-denylist by `evil.test`" % port, body)
        self.assertIn(("cordon: reason: " + DENY_REASON).encode(), body)
        # A Host naming an allowed host: 421, and no reason (nothing the policy author refused).
        status, _, body = ask("GET", "/x", host="other.test")
        self.assertEqual(status, 421)
        self.assertNotIn(b"reason", body)
        t.close()
        # Plain http:// refused by a request rule: the same reason in its 403.
        r = self.curl("-sS", "-i", "-x", p.url(), "http://api.test:%d/public/secret" % plain.port)
        self.assertIn(b" 403 ", r.stdout.split(b"\r\n")[0])
        self.assertIn(("cordon: reason: " + API_REASON).encode(), r.stdout)
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("event") == "decision") >= 7)
        inner = [e for e in lines if e.get("event") == "decision" and e.get("proto") in ("https", "http")]
        self.assertEqual([(e["proto"], e["method"], e["status"], e["decision"], e.get("reason_text"))
                          for e in inner],
                         [("https", "GET", 200, "allow", None),
                          ("https", "POST", 403, "deny", API_REASON),
                          ("https", "GET", 403, "deny", API_REASON),
                          ("https", "GET", 421, "deny", DENY_REASON),
                          ("https", "GET", 421, "deny", None),
                          ("http", "GET", 403, "deny", API_REASON)])
        self.assertIn("/public/secret", inner[2]["rule"])  # the deciding rule is the request rule
        self.assertIn("/public/secret", inner[5]["rule"])
        self.assertEqual(inner[5]["reason"], "blocked-by-request-rule")
        self.assertEqual([r[1] for r in self.up.requests], ["/repos/acme/app"])
        self.assertEqual(plain.requests, [])

    def test_check_shows_the_reason_a_request_rule_refusal_carries(self):
        def check(target, *extra):
            return subprocess.run([CORDON, "check", "--no-discover", "--managed-dir", self.dir, "--settings",
                                   self.settings, *extra, target], capture_output=True, text=True, timeout=30)

        r = check("api.test:443")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("request_reason_text: " + API_REASON, r.stdout)
        self.assertIn("deniedDomainReasons.api.test", r.stdout)
        self.assertNotIn("\nreason_text:", r.stdout)  # the connection itself is allowed
        out = json.loads(check("api.test:443", "--json").stdout)
        self.assertEqual(out["request_reason_text"], API_REASON)
        self.assertNotIn("reason_text", out)
        # A host without request rules: nothing a request rule could refuse.
        self.assertNotIn("request_reason_text", check("other.test:443").stdout)
        r = check("evil.test:443")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("reason_text: " + DENY_REASON, r.stdout)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunRequestDenyReasonsTest(RequestDenyReasonsBase):
    def test_summary_lists_request_refusals_with_their_reason(self):
        plain = self.upstream(name="plain")
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work)
        os.makedirs(home)
        url = "https://api.test:%d" % self.up.port
        curl = "curl -sS --max-time 10 -o /dev/null -w '%{http_code} '"
        script = (f"{curl} -X POST {url}/gists; {curl} {url}/public/secret; "
                  f"{curl} -H 'Host: evil.test' {url}/x; {curl} http://api.test:{plain.port}/public/secret")
        audit = os.path.join(self.dir, "run.jsonl")
        r = subprocess.run([CORDON, "run", "--no-discover", "--settings", self.settings, "--dns-server",
                            self.dns_server.address, "--upstream-ca", self.pki.cert, "--inspect", "api.test",
                            "--audit-log", audit, *LOOPBACK, "--", "sh", "-c", script],
                           cwd=work, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home,
                                          "XDG_CONFIG_HOME": os.path.join(self.dir, "xdg-empty")},
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "403 403 421 403 "), r.stderr)
        self.assertIn("cordon: refused 1 connection(s) and 3 request(s):", r.stderr)
        self.assertIn("  refused by a request rule:\n", r.stderr)
        self.assertIn("    api.test:%d  x2  " % self.up.port, r.stderr)
        self.assertIn("reason: " + API_REASON, r.stderr)
        self.assertIn("    api.test:%d  x1  by `" % plain.port, r.stderr)
        self.assertIn("    evil.test:%d  x1  by `evil.test` from settings %s:1 network.deniedDomains[0]  reason: %s"
                      % (self.up.port, self.settings, DENY_REASON), r.stderr)
        with open(audit) as f:
            refused = [json.loads(line) for line in f if '"deny"' in line]
        self.assertEqual(sorted(e.get("reason_text") for e in refused), sorted([API_REASON] * 3 + [DENY_REASON]))


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
        self.assertIn("evil.r.test:80  x1  by `evil.r.test` from settings %s:1 network.deniedDomains[0]  reason: %s"
                      % (settings, DENY_REASON), r.stderr)



class ReportOnlyTest(TempDirTest):
    def get(self, port, path):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path).encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        s.close()
        return data.decode()

    def test_lets_refusals_through_logs_and_counts_them_but_the_guard_holds(self):
        up = self.upstream()
        dns = self.dns({"ok.r.test": ["127.0.0.1"], "x.r.test": ["127.0.0.1"], "evil.r.test": ["127.0.0.1"],
                        "inside.r.test": ["10.20.30.40"], "meta.r.test": ["169.254.169.254"]})
        settings = os.path.join(self.dir, "reasons.json")
        with open(settings, "w") as f:
            json.dump({"network": {"deniedDomainReasons": {"evil.r.test": DENY_REASON}}}, f)
        p = self.proxy(["--report-only", "--settings", settings, "--allow-domain", "ok.r.test", "--deny-domain",
                        "evil.r.test", *LOOPBACK, "--metrics", "127.0.0.1:0"], dns=dns)
        self.assertIn("REPORT-ONLY (--report-only)", p.stderr())
        for host in ("ok.r.test", "x.r.test", "evil.r.test"):
            r = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://%s:%d/" % (host, up.port))
            self.assertEqual(r.stdout, b"200", (host, r.stderr))
        self.assertEqual(socks_connect(p.port, "x.r.test", up.port), 0)
        # The address guard's classes are never lifted: private and metadata addresses stay refused.
        for host in ("inside.r.test", "meta.r.test"):
            r = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://%s/" % host)
            self.assertEqual(r.stdout, b"403", host)
        lines = p.wait_audit(lambda ls: sum(e["event"] == "decision" for e in ls) >= 6)
        by = {(e["host"], e["proto"]): e for e in lines if e["event"] == "decision"}
        self.assertEqual(by[("ok.r.test", "http")]["decision"], "allow")
        self.assertNotIn("enforced", by[("ok.r.test", "http")])
        x = by[("x.r.test", "http")]
        self.assertEqual((x["decision"], x["enforced"], x["reason"], x["status"] if "status" in x else None),
                         ("deny", False, "blocked-by-allowlist", None))
        self.assertEqual(x["upstream_ip"], "127.0.0.1")
        evil = by[("evil.r.test", "http")]
        self.assertEqual((evil["decision"], evil["enforced"], evil["reason"], evil["rule"], evil["reason_text"]),
                         ("deny", False, "blocked-by-denylist", "evil.r.test", DENY_REASON))
        self.assertEqual((by[("x.r.test", "socks5")]["decision"], by[("x.r.test", "socks5")]["enforced"]),
                         ("deny", False))
        for host in ("inside.r.test", "meta.r.test"):
            g = by[(host, "http")]
            self.assertEqual((g["decision"], g["reason"]), ("deny", "blocked-by-address-guard"))
            self.assertNotIn("enforced", g)
        self.assertEqual(len(up.requests), 3)
        metrics = self.get(p.metrics_port, "/metrics")
        self.assertIn('cordon_would_refuse_total{reason="blocked-by-allowlist"} 2', metrics)
        self.assertIn('cordon_would_refuse_total{reason="blocked-by-denylist"} 1', metrics)
        self.assertNotIn('cordon_would_refuse_total{reason="blocked-by-address-guard"}', metrics)
        readyz = self.get(p.metrics_port, "/readyz")
        self.assertIn(" 200 ", readyz.split("\r\n")[0])
        self.assertIn("report-only", readyz)

    def test_enforcing_proxy_says_nothing_of_report_only(self):
        up = self.upstream()
        dns = self.dns({"x.r.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "ok.r.test", *LOOPBACK, "--metrics", "127.0.0.1:0"], dns=dns)
        r = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://x.r.test:%d/" % up.port)
        self.assertEqual(r.stdout, b"403")
        self.assertNotIn("REPORT-ONLY", p.stderr())
        self.assertEqual(self.get(p.metrics_port, "/readyz").split("\r\n\r\n", 1)[1], "ready\n")
        self.assertNotIn("cordon_would_refuse_total{", self.get(p.metrics_port, "/metrics"))

    def test_settings_key_only_from_managed_or_proxy_settings(self):
        up = self.upstream()
        dns = self.dns({"x.r.test": ["127.0.0.1"]})
        on = os.path.join(self.dir, "on.json")
        with open(on, "w") as f:
            json.dump({"sandbox": {"network": {"reportOnly": True, "allowedDomains": ["ok.r.test"]}}}, f)
        p = self.proxy(["--settings", on, *LOOPBACK], dns=dns)
        self.assertIn("REPORT-ONLY (sandbox.network.reportOnly from settings %s:1" % on, p.stderr())
        r = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://x.r.test:%d/" % up.port)
        self.assertEqual(r.stdout, b"200")
        p.stop()
        # Managed settings saying false win over --settings saying true.
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed, exist_ok=True)
        with open(os.path.join(managed, "managed-settings.json"), "w") as f:
            json.dump({"sandbox": {"network": {"reportOnly": False}}}, f)
        p = self.proxy(["--settings", on, *LOOPBACK], dns=dns)
        self.assertNotIn("REPORT-ONLY", p.stderr())
        r = self.curl("-x", p.url(), "-o", "/dev/null", "-w", "%{http_code}", "http://x.r.test:%d/" % up.port)
        self.assertEqual(r.stdout, b"403")
        p.stop()
        # A project's own file cannot turn enforcement off: a warning, and the key is ignored.
        project = os.path.join(self.dir, "project")
        os.makedirs(os.path.join(project, ".claude"))
        with open(os.path.join(project, ".claude", "settings.json"), "w") as f:
            json.dump({"sandbox": {"network": {"reportOnly": True}}}, f)
        r = subprocess.run([CORDON, "policy", "--managed-dir", os.path.join(self.dir, "none")], cwd=project,
                           env=dict(os.environ, HOME=self.dir), capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sandbox.network.reportOnly: honoured only in managed settings or cordon proxy's --settings; "
                      "ignored", r.stdout + r.stderr)
        self.assertFalse(json.loads(r.stdout)["network"]["reportOnly"])

    def test_cordon_run_report_only_is_a_usage_error(self):
        r = subprocess.run([CORDON, "run", "--report-only", "--", "true"], capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--report-only is for `cordon proxy` only", r.stderr)

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_cordon_run_warns_of_managed_report_only_and_still_enforces(self):
        # Managed settings (a test directory through --managed-dir, never /etc) saying reportOnly: `cordon run`
        # says it is ignored and refuses as the policy says; the host resolves and serves, so a run that let it
        # through would get 200.
        up = self.upstream()
        dns = self.dns({"x.r.test": ["127.0.0.1"], "ok.r.test": ["127.0.0.1"]})
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed)
        managed_file = os.path.join(managed, "managed-settings.json")
        with open(managed_file, "w") as f:
            json.dump({"sandbox": {"network": {"reportOnly": True, "allowedDomains": ["ok.r.test"]}}}, f)
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work)
        os.makedirs(home)
        audit = os.path.join(self.dir, "run.jsonl")
        curl = "curl -sS --max-time 10 -o /dev/null -w '%%{http_code} ' http://%s:%d/"
        r = subprocess.run([CORDON, "run", "--no-discover", "--managed-dir", managed, "--dns-server", dns.address,
                            *LOOPBACK, "--audit-log", audit, "--", "sh", "-c",
                            (curl % ("x.r.test", up.port)) + "; " + (curl % ("ok.r.test", up.port))],
                           cwd=work, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home},
                           capture_output=True, text=True, timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "403 200 "), r.stderr)
        self.assertIn("cordon: sandbox.network.reportOnly (managed %s:1" % managed_file, r.stderr)
        self.assertIn("is for `cordon proxy` only: `cordon run` enforces its policy", r.stderr)
        self.assertNotIn("REPORT-ONLY", r.stderr)
        self.assertIn("x.r.test:%d  x1" % up.port, r.stderr)  # in the summary as any refusal
        with open(audit) as f:
            denied = [json.loads(line) for line in f if '"x.r.test"' in line and '"decision"' in line]
        self.assertEqual([(e["decision"], e.get("enforced", True)) for e in denied], [("deny", True)])
        self.assertEqual([path for _, path, _ in up.requests], ["/"])  # ok.r.test's only



class NpmRegistry:
    """A one-package npm registry on 127.0.0.1:0, named `host` (the test DNS server answers it): the packument at
    `/NAME` and its tarball (package/package.json, package/index.js) at `/NAME/-/NAME-1.0.0.tgz`; anything else
    404. Every request's Host header and path are kept in `requests`."""

    NAME = "cordon-tiny"

    def __init__(self, host):
        self.host = host
        self.requests = []
        self.tarball = self._pack()
        registry = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                registry.requests.append((self.headers.get("Host"), self.path))
                status, body = registry.answer(self.path)
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if body[:1] == b"{" else
                                 "application/octet-stream")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.url = "http://%s:%d/" % (host, self.port)
        self.tarball_path = "/%s/-/%s-1.0.0.tgz" % (self.NAME, self.NAME)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def _pack(self):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tar:
            for name, data in (("package/package.json", json.dumps({"name": self.NAME, "version": "1.0.0",
                                                                    "main": "index.js"}).encode()),
                               ("package/index.js", b"module.exports = 42;\n")):
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        return buf.getvalue()

    def answer(self, path):
        if path == "/" + self.NAME:
            dist = {"tarball": self.url.rstrip("/") + self.tarball_path,
                    "shasum": hashlib.sha1(self.tarball).hexdigest(),
                    "integrity": "sha512-" + base64.b64encode(hashlib.sha512(self.tarball).digest()).decode()}
            return 200, json.dumps({"name": self.NAME, "dist-tags": {"latest": "1.0.0"}, "versions": {
                "1.0.0": {"name": self.NAME, "version": "1.0.0", "dist": dist}}}).encode()
        if path == self.tarball_path:
            return 200, self.tarball
        return 404, b"{}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class SuggestTest(TempDirTest):
    def suggest(self, log, *extra):
        return subprocess.run([CORDON, "policy", "suggest", "--from", log, *extra], capture_output=True, text=True,
                              timeout=30)

    def test_groups_by_registrable_domain_never_over_a_public_suffix(self):
        log = os.path.join(self.dir, "audit.jsonl")
        out_dir = os.path.join(self.dir, "srv", "out")  # exists; out/x.txt does not: suggested as out/
        os.makedirs(out_dir)
        old = os.path.join(self.dir, "old.txt")  # exists: suggested as itself
        open(old, "w").close()
        deny = {"event": "decision", "proto": "connect", "decision": "deny", "reason": "blocked-by-allowlist"}
        events = [dict(deny, host=h, port=443) for h in ("a.example.com", "b.example.com", "c.example.com",
                                                       "example.com", "a.github.io", "b.github.io",
                                                       "c.github.io", "d.github.io")]
        events += [dict(deny, host="x.example.co.uk", port=443), dict(deny, host="x.example.co.uk", port=443),
                   dict(deny, host="db.example.org", port=5432), dict(deny, host="10.1.2.3", port=22),
                   dict(deny, host="bad.example.net", port=443, reason="blocked-by-denylist", rule="bad.example.net",
                        source="flags --deny-domain"),
                   dict(deny, host="inside.example.net", port=80, reason="blocked-by-address-guard",
                        upstream_ip="10.0.0.5", error="address-guard: private"),
                   {"event": "decision", "proto": "http", "decision": "allow", "host": "ok.example.net", "port": 80},
                   {"event": "write", "decision": "deny", "reason": "default-deny", "path": out_dir + "/x.txt",
                    "write_rule": "path-rules"},
                   {"event": "write", "decision": "deny", "reason": "default-deny", "path": out_dir + "/new/y.txt"},
                   {"event": "write", "decision": "deny", "reason": "default-deny", "path": old},
                   {"event": "write", "decision": "deny", "reason": "default-deny", "path": "/proc/sys/kernel/x",
                    "write_rule": "proc-knobs", "rule": "write rule proc-knobs"},
                   {"event": "write", "decision": "deny", "reason": "always-read-only", "rule": ".git/hooks",
                    "path": "/p/.git/hooks/pre-commit"}]
        with open(log, "w") as f:
            for e in events[:3]:
                f.write(json.dumps(e) + "\n")
            f.write("{not json\n")
            for e in events[3:]:
                f.write(json.dumps(e) + "\n")
            f.write('{"event": "decision", "host": "cut.exa')  # truncated last line
        r = self.suggest(log)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = json.loads(r.stdout)
        allowed = out["sandbox"]["network"]["allowedDomains"]
        self.assertEqual(sorted(allowed), sorted(["example.com", "*.example.com", "a.github.io", "b.github.io",
                                                  "c.github.io", "d.github.io", "x.example.co.uk",
                                                  "db.example.org:5432", "10.1.2.3:22"]))
        self.assertNotIn("*.github.io", allowed)
        # Claude Code's files read `/path` relative to the file: absolute paths are `//path` there.
        self.assertEqual(out["sandbox"]["filesystem"]["allowWrite"], ["/" + old, "/" + out_dir])
        self.assertIn(f"write {out_dir}/x.txt: does not exist, suggested as {out_dir}", r.stderr)
        self.assertIn(":4: malformed line skipped", r.stderr)
        self.assertIn(":%d: truncated line skipped" % (len(events) + 2), r.stderr)
        self.assertIn("example.co.uk  x2: x.example.co.uk", r.stderr)
        apart = r.stderr.split("not lifted by the suggestion:\n", 1)[1]
        self.assertIn("bad.example.net:443  x1  a deny rule: `bad.example.net` from flags --deny-domain", apart)
        self.assertIn("inside.example.net:80  x1  the address guard: 10.0.0.5", apart)
        self.assertIn("/p/.git/hooks/pre-commit  x1  never allowed: always-read-only by `.git/hooks`", apart)
        self.assertIn("/proc/sys/kernel/x  x1  never allowed: default-deny by `write rule proc-knobs`", apart)
        srt = json.loads(self.suggest(log, "--format", "srt").stdout)
        self.assertEqual(sorted(srt["network"]["allowedDomains"]), sorted(allowed))
        self.assertEqual(srt["filesystem"]["allowWrite"], [old, out_dir])
        self.assertEqual(self.suggest(log, "--format", "yaml").returncode, 2)
        self.assertEqual(self.suggest(os.path.join(self.dir, "missing")).returncode, 1)

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_suggestion_makes_the_same_jailed_run_pass(self):
        up = self.upstream()
        names = ["a.svc.r.test", "b.svc.r.test", "pkg.r2.test"]
        dns = self.dns({n: ["127.0.0.1"] for n in names})
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work)
        os.makedirs(home)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        script = "; ".join("curl -sS --max-time 10 -o /dev/null -w '%%{http_code} ' http://%s:%d/" % (n, up.port)
                           for n in names)

        def run(log, *flags):
            return subprocess.run([CORDON, "run", "--no-discover", "--dns-server", dns.address, *LOOPBACK,
                                   "--audit-log", log, *flags, "--", "sh", "-c", script], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=60)

        first = os.path.join(self.dir, "first.jsonl")
        r = run(first)
        self.assertEqual((r.returncode, r.stdout), (0, "403 403 403 "), r.stderr)
        s = self.suggest(first)
        self.assertEqual(s.returncode, 0, s.stderr)
        settings = os.path.join(self.dir, "suggested.json")
        with open(settings, "w") as f:
            f.write(s.stdout)
        self.assertEqual(sorted(json.loads(s.stdout)["sandbox"]["network"]["allowedDomains"]),
                         sorted("%s:%d" % (n, up.port) for n in names))
        second = os.path.join(self.dir, "second.jsonl")
        r = run(second, "--settings", settings)
        self.assertEqual((r.returncode, r.stdout), (0, "200 200 200 "), r.stderr)
        self.assertNotIn("refused", r.stderr)
        with open(second) as f:
            decisions = [json.loads(line) for line in f if '"decision"' in line]
        self.assertTrue(decisions)
        self.assertEqual({d["decision"] for d in decisions if d["event"] == "decision"}, {"allow"})

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    @unittest.skipUnless(shutil.which("git"), "git is not installed")
    def test_suggestion_makes_the_same_jailed_git_clone_pass(self):
        # A real `git clone http://git.r.test:PORT/repo.git` (git's dumb HTTP protocol: a bare repository after
        # `git update-server-info`, served by http.server on 127.0.0.1, named by the test DNS), jailed, through
        # cordon's proxy: refused, nothing fetched; the suggestion (both formats) given back makes the same clone
        # pass with no refusal.
        git_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(self.dir, "home"),
                   "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0", "GIT_AUTHOR_NAME": "t",
                   "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
        os.makedirs(git_env["HOME"])
        served = os.path.join(self.dir, "served")
        source = os.path.join(self.dir, "source")
        os.makedirs(served)
        for args in (["init", "-q", source], ["-C", source, "commit", "-q", "--allow-empty", "-m", "first"]):
            subprocess.run(["git", *args], check=True, capture_output=True, env=git_env)
        with open(os.path.join(source, "README"), "w") as f:
            f.write("cloned through cordon\n")
        for args in (["-C", source, "add", "README"], ["-C", source, "commit", "-q", "-m", "readme"],
                     ["clone", "-q", "--bare", source, os.path.join(served, "repo.git")],
                     ["-C", os.path.join(served, "repo.git"), "update-server-info"]):
            subprocess.run(["git", *args], check=True, capture_output=True, env=git_env)

        seen = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=served, **kwargs)

            def log_message(self, *args):
                pass

            def do_GET(self):
                seen.append((self.headers.get("Host"), self.path))
                super().do_GET()

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.cleanups.append(server.server_close)
        self.cleanups.append(server.shutdown)
        host = "git.r.test"
        target = "%s:%d" % (host, server.server_address[1])
        dns = self.dns({host: ["127.0.0.1"]})

        def run(log, *flags):
            work = tempfile.mkdtemp(prefix="work-", dir=self.dir)
            r = subprocess.run([CORDON, "run", "--no-discover", "--dns-server", dns.address, *LOOPBACK,
                                "--audit-log", log, *flags, "--", "git", "clone", "-q", "http://%s/repo.git" % target,
                                "clone"], cwd=work, env=git_env, capture_output=True, text=True, timeout=120)
            with open(log) as f:
                lines = [json.loads(line) for line in f]
            # git talked to our server only.
            self.assertEqual({line["host"] for line in lines if "host" in line}, {host}, lines)
            return r, os.path.join(work, "clone"), lines

        first = os.path.join(self.dir, "first.jsonl")
        r, clone, lines = run(first)
        self.assertNotEqual(r.returncode, 0, r.stderr)
        self.assertIn("403", r.stderr)
        self.assertIn("%s  x" % target, r.stderr)  # the summary names it
        self.assertFalse(os.path.exists(os.path.join(clone, "README")))
        self.assertEqual(seen, [])
        self.assertEqual({(d["decision"], d["reason"]) for d in lines if d["event"] == "decision"},
                         {("deny", "blocked-by-allowlist")})
        claude, srt = self.suggest(first), self.suggest(first, "--format", "srt")
        self.assertEqual((claude.returncode, srt.returncode), (0, 0), claude.stderr + srt.stderr)
        self.assertEqual(json.loads(claude.stdout), {"sandbox": {"network": {"allowedDomains": [target]}}})
        self.assertEqual(json.loads(srt.stdout), {"network": {"allowedDomains": [target]}})
        for fmt, suggestion in (("claude", claude.stdout), ("srt", srt.stdout)):
            with self.subTest(format=fmt):
                settings = os.path.join(self.dir, "suggested-%s.json" % fmt)
                with open(settings, "w") as f:
                    f.write(suggestion)
                del seen[:]
                r, clone, lines = run(os.path.join(self.dir, "%s.jsonl" % fmt), "--settings", settings)
                self.assertEqual(r.returncode, 0, fmt + ": " + r.stderr)
                self.assertNotIn("cordon: refused", r.stderr)
                with open(os.path.join(clone, "README")) as f:
                    self.assertEqual(f.read(), "cloned through cordon\n")
                decisions = [d for d in lines if d["event"] == "decision"]
                self.assertTrue(decisions)
                self.assertEqual({d["decision"] for d in decisions}, {"allow"})
                self.assertEqual([line for line in lines if line["event"] == "write"], [])
                self.assertIn((target, "/repo.git/info/refs?service=git-upload-pack"), seen)

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    @unittest.skipUnless(shutil.which("npm"), "npm is not installed (scripts/setup --test installs it)")
    def test_suggestion_makes_the_same_jailed_npm_install_pass(self):
        # A real `npm install` from a registry the run does not allow, with npm's cache in the home directory
        # (not writable in the jail): refused connection and refused writes; the suggestion (both formats) given
        # back makes the same install pass with no refusal of either kind. npm talks to our registry only: it
        # is named on the command line, and every host in every audit log is checked to be it.
        registry = NpmRegistry("registry.npm.r.test")
        self.cleanups.append(registry.close)
        dns = self.dns({registry.host: ["127.0.0.1"]})
        # Under /var/tmp: the namespace jail has a private /tmp. The home where a home is, /home/NAME.
        base = tempfile.mkdtemp(prefix="cordon-suggest-npm-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, base, True)
        home = tempfile.mkdtemp(prefix="cordon-suggest-npm-", dir="/home")
        self.addCleanup(shutil.rmtree, home, True)
        work = os.path.join(base, "work")
        npm_cache = os.path.join(home, ".npm")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
        installed = os.path.join(work, "node_modules", NpmRegistry.NAME, "package.json")

        def fresh():
            for d in (work, npm_cache):
                shutil.rmtree(d, ignore_errors=True)
            os.makedirs(work)
            os.makedirs(home, exist_ok=True)

        def run(jail, log, *flags):
            return subprocess.run([CORDON, "run", "--no-discover", "--jail", jail, "--dns-server", dns.address,
                                   *LOOPBACK, "--audit-log", log, *flags, "--",
                                   "npm", "install", NpmRegistry.NAME, "--registry", registry.url, "--no-audit",
                                   "--no-fund", "--no-update-notifier"],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=180)

        def audit(log):
            with open(log) as f:
                lines = [json.loads(line) for line in f]
            self.assertEqual({line["host"] for line in lines if "host" in line}, {registry.host}, lines)
            return lines

        def suggest(log, *extra, home=home):  # as the user whose home it is, unless told
            return subprocess.run([CORDON, "policy", "suggest", "--from", log, *extra], capture_output=True,
                                  text=True, timeout=30, env=dict(env, HOME=home))

        jails = ["namespaces"]
        if subprocess.run([CORDON, "run", "--no-discover", "--jail", "landlock", "--", "/bin/true"], cwd=base,
                          capture_output=True, timeout=60).returncode == 0:
            jails.append("landlock")
        for jail in jails:
            with self.subTest(jail=jail):
                # A home where npm never ran: ~/.npm does not exist, and suggest will not make the home
                # directory writable to let npm create it; it says so, and still suggests the registry. The
                # same when someone else reads the log (sudo sets HOME=/root): a home is a home.
                fresh()
                log = os.path.join(base, jail + "-fresh.jsonl")
                r = run(jail, log)
                self.assertNotEqual(r.returncode, 0, r.stderr)
                self.assertIn("registry.npm.r.test:%d  x1" % registry.port, r.stderr)
                self.assertIn("    %s  x" % npm_cache, r.stderr)
                self.assertFalse(os.path.exists(npm_cache))
                lines = audit(log)
                self.assertIn(npm_cache, {line["path"] for line in lines if line["event"] == "write"})
                s = suggest(log)
                self.assertEqual(s.returncode, 0, s.stderr)
                out = json.loads(s.stdout)["sandbox"]
                self.assertEqual(out["network"]["allowedDomains"], ["registry.npm.r.test:%d" % registry.port])
                self.assertEqual(out["filesystem"]["allowWrite"], [])
                self.assertIn(f"its nearest existing directory {home} is not to be made writable", s.stderr)
                self.assertIn("create the directory it needs first", s.stderr)
                s = suggest(log, home="/root")
                self.assertEqual(s.returncode, 0, s.stderr)
                self.assertEqual(json.loads(s.stdout)["sandbox"]["filesystem"]["allowWrite"], [], s.stderr)
                self.assertIn(f"({home} is a home directory)", s.stderr)

                # Once ~/.npm exists (as after any earlier npm use), the same run's suggestion lifts it all.
                fresh()
                os.makedirs(npm_cache)
                log = os.path.join(base, jail + "-first.jsonl")
                r = run(jail, log)
                self.assertNotEqual(r.returncode, 0, r.stderr)
                self.assertIn("E403", r.stderr)
                self.assertIn("outside the writable areas", r.stderr)
                self.assertFalse(os.path.exists(installed))
                lines = audit(log)
                self.assertEqual({(d["decision"], d["reason"]) for d in lines if d["event"] == "decision"},
                                 {("deny", "blocked-by-allowlist")})
                self.assertTrue(all(w["path"].startswith(npm_cache) for w in lines if w["event"] == "write"),
                                lines)
                claude, srt = suggest(log), suggest(log, "--format", "srt")
                self.assertEqual((claude.returncode, srt.returncode), (0, 0), claude.stderr + srt.stderr)
                self.assertEqual(json.loads(claude.stdout), {"sandbox": {
                    "filesystem": {"allowWrite": ["/" + npm_cache]},  # `//abs` in Claude Code's files
                    "network": {"allowedDomains": ["registry.npm.r.test:%d" % registry.port]}}})
                self.assertEqual(json.loads(srt.stdout), {
                    "filesystem": {"allowWrite": [npm_cache]},
                    "network": {"allowedDomains": ["registry.npm.r.test:%d" % registry.port]}})
                self.assertNotIn("not lifted by the suggestion", claude.stderr)

                for fmt, suggestion in (("claude", claude.stdout), ("srt", srt.stdout)):
                    fresh()
                    os.makedirs(npm_cache)
                    settings = os.path.join(base, "%s-%s.json" % (jail, fmt))
                    with open(settings, "w") as f:
                        f.write(suggestion)
                    del registry.requests[:]
                    log = os.path.join(base, "%s-%s.jsonl" % (jail, fmt))
                    r = run(jail, log, "--settings", settings)
                    self.assertEqual(r.returncode, 0, fmt + ": " + r.stderr)
                    self.assertIn("added 1 package", r.stdout)
                    self.assertNotIn("cordon: refused", r.stderr)
                    lines = audit(log)
                    self.assertEqual([line for line in lines if line["event"] == "write"], [])
                    decisions = [d for d in lines if d["event"] == "decision"]
                    self.assertTrue(decisions)
                    self.assertEqual({d["decision"] for d in decisions}, {"allow"})
                    with open(installed) as f:
                        self.assertEqual(json.load(f)["version"], "1.0.0")
                    self.assertTrue(os.listdir(npm_cache))  # the cache was written where npm keeps it
                    host = "%s:%d" % (registry.host, registry.port)
                    self.assertEqual(sorted(registry.requests),
                                     [(host, "/" + NpmRegistry.NAME), (host, registry.tarball_path)])


if __name__ == "__main__":
    unittest.main()
