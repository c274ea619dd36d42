#!/usr/bin/env python3
"""Attacks on TLS inspection from outside its own tests: request-rule spellings a real server (Node's URL parser,
Express's router) resolves to a denied route, HEAD for a GET rule, plain HTTP to a host with request rules, the
real value of a secret reaching the jail in a form a byte matcher does not see (compressed, base64,
percent-encoded, JSON-escaped), a held request head that a 100-continue client waits on, and the audit line of a
request that reached the upstream. Each test fails while its hole is open (but the control case
test_the_spellings_cordon_refuses_today)."""

import base64
import gzip
import json
import os
import shutil
import socket
import ssl
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import read_http_response, recv_until  # noqa: E402
import test_inspect  # noqa: E402
from test_inspect import InspectBase, ThreadedServer, tls_server_context  # noqa: E402
from test_paths import DENIED, ALLOWED, PathServers, raw_get  # noqa: E402


class PathBypassTest(InspectBase):
    """A host whose rules allow everything but one path: the spellings Node's WHATWG URL parser (what
    `new URL(req.url, base)` in a Node server, the developer's own fixture, reads) resolves to the denied path."""

    def setUp(self):
        super().setUp()
        with open(self.settings) as f:
            settings = json.load(f)
        settings["network"]["requestRules"] = [
            {"host": "api.test", "paths": ["/**"], "action": "allow"},
            {"host": "api.test", "paths": ["/repos/acme/secrets/x"], "action": "deny"}]
        with open(self.settings, "w") as f:
            json.dump(settings, f)

    def test_a_leading_double_slash_is_an_authority_to_node(self):
        self.assertTrue(shutil.which("node"), "scripts/setup installs node")
        root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(root, "repos", "acme", "secrets"))
        with open(os.path.join(root, "repos", "acme", "secrets", "x"), "wb") as f:
            f.write(DENIED)
        with open(os.path.join(root, "ok"), "wb") as f:
            f.write(ALLOWED)
        servers = PathServers(self.dir, root)
        self.cleanups.append(servers.close)
        servers.node()
        node = servers.ports["node"]
        # `//evil/...` and `/\evil/...` are network-path references: the first segment is a host name and the
        # path is what follows it. cordon merges the slashes and sees `/evil/repos/acme/secrets/x`.
        spellings = ["//evil/repos/acme/secrets/x", "/\\evil/repos/acme/secrets/x",
                     "//a@evil/repos/acme/secrets/x"]
        for spelling in spellings:
            self.assertEqual(raw_get(node, spelling), (200, DENIED), spelling)

        p = self.start()
        results = {}
        for spelling in spellings + ["/repos/acme/secrets/x", "/ok"]:
            t = self.tunnel(p, "api.test")
            t.sendall(b"GET %s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (spelling.encode(), self.up.port))
            results[spelling] = read_http_response(t)[0]
            t.close()
        self.assertEqual(results.pop("/ok"), 200)
        self.assertEqual({s: st for s, st in results.items() if st not in (400, 403)}, {},
                         "spellings Node serves as the denied path")
        self.assertEqual([path for _, path, _ in self.up.requests], ["/ok"])


EXPRESS_SERVER = r"""
const express = require('express');
const app = express();
app.get('/repos/:owner/secrets', (req, res) => res.send('DENIED-RESOURCE\n'));
app.get('/admin', (req, res) => res.send('DENIED-RESOURCE\n'));
app.get('/report', (req, res) => { res.set('X-Report', 'DENIED-RESOURCE'); res.send('DENIED-RESOURCE\n'); });
app.use((req, res) => res.send('ALLOWED-RESOURCE\n'));
const server = app.listen(0, '127.0.0.1', () => console.log(server.address().port));
"""


class ExpressRouteTest(InspectBase):
    """Express (Debian's node-express, default settings) routes on the encoded path and matches routes
    without regard to case: deny rules for `/repos/*/secrets` and `/admin` must hold for what it serves there."""

    def setUp(self):
        super().setUp()
        with open(self.settings) as f:
            settings = json.load(f)
        settings["network"]["requestRules"] = [
            {"host": "api.test", "paths": ["/**"], "action": "allow"},
            {"host": "api.test", "paths": ["/repos/*/secrets"], "action": "deny"},
            {"host": "api.test", "paths": ["/admin"], "action": "deny"},
            {"host": "api.test", "methods": ["GET"], "paths": ["/report"], "action": "deny"}]
        with open(self.settings, "w") as f:
            json.dump(settings, f)

    def check(self, spellings):
        self.assertTrue(os.path.isdir("/usr/share/nodejs/express"), "scripts/setup installs node-express")
        script = os.path.join(self.dir, "express.js")
        with open(script, "w") as f:
            f.write(EXPRESS_SERVER)
        servers = self.servers = PathServers(self.dir, self.dir)
        self.cleanups.append(servers.close)
        servers._spawn("express", ["node", script], env=dict(os.environ, NODE_PATH="/usr/share/nodejs"))
        express = servers.ports["express"]
        self.assertEqual(raw_get(express, "/ok"), (200, ALLOWED))
        for spelling in spellings:
            self.assertEqual(raw_get(express, spelling), (200, DENIED), spelling)
        p = self.start()
        results = {}
        for spelling in spellings + ["/ok"]:
            t = self.tunnel(p, "api.test")
            t.sendall(b"GET %s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (spelling.encode(), self.up.port))
            results[spelling] = read_http_response(t)[0]
            t.close()
        self.assertEqual(results.pop("/ok"), 200)
        self.assertEqual({s: st for s, st in results.items() if st not in (400, 403)}, {},
                         "spellings Express serves as a denied route")
        self.assertEqual([path for _, path, _ in self.up.requests], ["/ok"])

    def test_the_spellings_cordon_refuses_today(self):
        # So that the two tests below fail for their own reason only.
        self.check(["/repos/acme/secrets", "/admin", "/admin/"])

    def test_an_encoded_slash_inside_one_segment(self):
        # `:owner` matches `acme%2fx` (one segment, decoded to "acme/x" for the handler); cordon reads the %2f
        # as a separator and sees /repos/acme/x/secrets, which `/repos/*/secrets` does not match.
        self.check(["/repos/acme%2fx/secrets", "/repos/acme%2Fx/secrets", "/repos/acme%5cx/secrets"])

    def test_routes_match_without_regard_to_case(self):
        # Express's default `case sensitive routing` is off: /ADMIN is the /admin route.
        self.check(["/ADMIN", "/Admin", "/REPOS/acme/SECRETS"])

    def test_head_runs_the_get_route(self):
        # Express (like most frameworks, and as HTTP says HEAD is GET without the body) answers HEAD with the
        # GET handler: it runs, and its headers reach the client. A rule that denies GET must cover HEAD.
        self.check([])
        express = self.servers.ports["express"]
        s = socket.create_connection(("127.0.0.1", express), timeout=5)
        s.sendall(b"HEAD /report HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        self.assertIn(b"X-Report: DENIED-RESOURCE", recv_until(s))
        s.close()
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.sendall(b"GET /report HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % self.up.port)
        self.assertEqual(read_http_response(t)[0], 403)
        t.sendall(b"HEAD /report HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % self.up.port)
        head = recv_until(t)
        t.close()
        self.assertIn(head.split(b" ")[1], (b"403", b"405"), head)
        self.assertNotIn("/report", [path for _, path, _ in self.up.requests])


class PlainHttpTest(InspectBase):
    """The request rules for api.test (deny /public/secret, only GET under /repos/acme/**) are the user's word on
    that host; cordon reads a plain-HTTP request to it in clear, with no TLS to terminate."""

    def test_an_absolute_form_request_meets_the_hosts_request_rules(self):
        plain = self.upstream(name="plain")
        p = self.start()
        for method, path in (("GET", "/public/secret"), ("DELETE", "/repos/acme/app"), ("POST", "/gists")):
            r = self.curl("-sS", "-i", "-X", method, "-x", p.url(), "http://api.test:%d%s" % (plain.port, path))
            self.assertIn(b" 403 ", r.stdout.split(b"\r\n")[0], (method, path, r.stdout[:200]))
            self.assertIn(b"X-Proxy-Error: blocked-by-request-rule", r.stdout)
        self.assertEqual(plain.requests, [])

    def test_plain_http_inside_a_connect_tunnel_meets_the_hosts_request_rules(self):
        # The client does not start TLS: the tunnel is relayed opaquely, and no rule sees the requests in it.
        plain = self.upstream(name="plain")
        p = self.start()
        s = p.connect()
        s.sendall(b"CONNECT api.test:%d HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (plain.port, plain.port))
        head = b""
        while b"\r\n\r\n" not in head:
            c = s.recv(1)
            if not c:
                break
            head += c
        if b" 200 " in head.split(b"\r\n")[0]:
            s.sendall(b"GET /public/secret HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % plain.port)
            try:
                status = read_http_response(s)[0]
            except (OSError, EOFError, ValueError, IndexError):
                status = None
            self.assertNotEqual(status, 200, "a denied path served through an opaque tunnel")
        s.close()
        time.sleep(0.3)
        self.assertEqual(plain.requests, [])


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class PlainHttpJailTest(InspectBase):
    run_jail = test_inspect.RunInspectTest.run_jail

    def test_a_jailed_program_gets_a_denied_path_over_plain_http(self):
        # Through HTTP_PROXY (the HTTP front-end) and without it (the transparent front-end).
        plain = self.upstream(name="plain")
        url = "http://api.test:%d/public/secret" % plain.port
        r = self.run_jail("curl -sS --max-time 10 -o /dev/null -w '%%{http_code} ' %s; "
                          "curl -sS --noproxy '*' --max-time 10 -o /dev/null -w '%%{http_code}' %s" % (url, url),
                          "--inspect", "api.test")
        self.assertEqual(r.stdout.split(), ["403", "403"], r.stderr)
        self.assertEqual(plain.requests, [])


class ReflectingUpstream(ThreadedServer):
    """A TLS upstream that reflects the request's Authorization header the ways real servers encode things:
    /gzip in a gzip-encoded body when the client accepts gzip (compression middleware), /location percent-encoded in a redirect's query
    (an OAuth-style callback), /json in JSON with escaped slashes (PHP's json_encode default)."""

    def __init__(self, context):
        self.context = context
        self.seen = []
        self.accept_encodings = []
        super().__init__()

    def _serve(self, raw):
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            head = recv_until(conn).decode("latin-1")
            lines = head.split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            auth = headers.get("authorization", "")
            self.seen.append((path, auth))
            self.accept_encodings.append(headers.get("accept-encoding"))
            extra = b""
            if path.endswith("/gzip") or path.endswith("/always-gzip"):
                # As compression middleware does: only for a client that accepts it (or, misconfigured, always).
                body = b"auth=" + auth.encode()
                if "gzip" in headers.get("accept-encoding", "") or path.endswith("/always-gzip"):
                    body = gzip.compress(body)
                    extra = b"Content-Encoding: gzip\r\n"
            elif path.endswith("/location"):
                body = b"moved\n"
                extra = b"Location: https://app.test/callback?auth=%s\r\n" % urllib.parse.quote(auth, safe="").encode()
                conn.sendall(b"HTTP/1.1 302 Found\r\n" + extra + b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                             % (len(body), body))
                conn.close()
                return
            else:
                body = json.dumps({"auth": auth}).replace("/", "\\/").encode()
            conn.sendall(b"HTTP/1.1 200 OK\r\n" + extra + b"Content-Length: %d\r\nConnection: close\r\n\r\n%s"
                         % (len(body), body))
            conn.close()
        except (OSError, ssl.SSLError, IndexError):
            pass


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class SecretLeakTest(InspectBase):
    """The jail holds the sentinel; the inject host's response must never give it the real value, in any
    form the jail can decode."""

    run_jail = test_inspect.RunInspectTest.run_jail
    # A token with characters that encodings change (AWS-style secret keys carry '/' and '+').
    REAL = "ghp_" + "R3al/T0ken+Value" * 3

    def setUp(self):
        super().setUp()
        base = os.path.join(self.pki.dir, "leaf-api.test")
        self.reflector = ReflectingUpstream(tls_server_context(base + ".pem", base + ".key"))
        self.cleanups.append(self.reflector.close)

    def jail(self, script):
        r = self.run_jail(script + "; echo; echo \"sentinel=$GITHUB_TOKEN\"", "--inspect", "api.test",
                          "--secret", "GITHUB_TOKEN=api.test", env={"GITHUB_TOKEN": self.REAL})
        self.assertEqual(r.returncode, 0, r.stderr)
        sentinel = r.stdout.rsplit("sentinel=", 1)[1].strip()
        self.assertEqual(len(sentinel), len(self.REAL))
        self.assertNotEqual(sentinel, self.REAL)
        return r.stdout

    def assert_only_sentinel(self, out, decoded):
        """`decoded` is what the jail reads out of `out` with one ordinary decoding step."""
        self.assertNotIn(self.REAL, out)
        self.assertNotIn(self.REAL, decoded, "the real value reached the jail in an encoded form")
        with open(self.audit_path) as f:
            self.assertNotIn(self.REAL, f.read())

    def test_a_gzip_encoded_body_does_not_carry_the_real_value(self):
        # curl --compressed sends Accept-Encoding and inflates: the bytes cordon scrubbed were deflate output.
        out = self.jail("curl -sS --max-time 10 --compressed -H \"Authorization: token $GITHUB_TOKEN\" "
                        "https://api.test:%d/repos/acme/gzip" % self.reflector.port)
        self.assertEqual(self.reflector.seen, [("/repos/acme/gzip", "token " + self.REAL)])
        self.assertIn("auth=token ", out)
        self.assert_only_sentinel(out, out)

    def test_an_inject_host_is_asked_for_identity_and_a_compressed_answer_is_a_502(self):
        # cordon cannot find the real value in compressed bytes: it asks for none, and passes none on.
        out = self.jail("curl -sS --max-time 10 --compressed -H \"Authorization: token $GITHUB_TOKEN\" "
                        "-o /dev/null -w '%%{http_code}' https://api.test:%d/repos/acme/gzip; echo; "
                        "curl -sS --max-time 10 --compressed -H \"Authorization: token $GITHUB_TOKEN\" "
                        "https://api.test:%d/repos/acme/always-gzip" % (self.reflector.port, self.reflector.port))
        self.assertEqual(self.reflector.accept_encodings, ["identity", "identity"])
        self.assertEqual(out.splitlines()[0], "200")
        self.assertIn("answered with Content-Encoding gzip", out)
        self.assert_only_sentinel(out, out)
        with open(self.audit_path) as f:
            lines = [json.loads(line) for line in f if '"path"' in line]
        gz = [e for e in lines if e.get("path") == "/repos/acme/always-gzip"]
        self.assertEqual([(e["decision"], e["status"]) for e in gz], [("allow", 502)], gz)
        self.assertIn("content-encoding", gz[0]["error"])

    def test_reflected_basic_credentials_do_not_carry_the_real_value(self):
        # git over HTTPS sends user:TOKEN as Basic credentials, and cordon substitutes inside the base64; an
        # upstream that echoes the Authorization header hands back base64 of the real value.
        out = self.jail("curl -sS --max-time 10 -i -u \"x-access-token:$GITHUB_TOKEN\" "
                        "https://api.test:%d/repos/acme/reflect" % self.up.port)
        echoed = [line for line in out.splitlines() if line.lower().startswith("x-echo-authorization: basic ")]
        self.assertEqual(len(echoed), 1, out)
        decoded = base64.b64decode(echoed[0].split()[-1]).decode("latin-1")
        self.assertTrue(decoded.startswith("x-access-token:"), decoded)
        self.assert_only_sentinel(out, decoded)

    def test_a_percent_encoded_redirect_does_not_carry_the_real_value(self):
        out = self.jail("curl -sS --max-time 10 -i -H \"Authorization: token $GITHUB_TOKEN\" "
                        "https://api.test:%d/repos/acme/location" % self.reflector.port)
        self.assertIn("Location: https://app.test/callback?auth=token%20ghp_", out)
        self.assert_only_sentinel(out, urllib.parse.unquote(out))

    def test_a_json_escaped_body_does_not_carry_the_real_value(self):
        out = self.jail("curl -sS --max-time 10 -H \"Authorization: token $GITHUB_TOKEN\" "
                        "https://api.test:%d/repos/acme/json" % self.reflector.port)
        body = json.loads(out.splitlines()[0])
        self.assertTrue(body["auth"].startswith("token ghp_"), body)
        self.assert_only_sentinel(out, body["auth"])


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class ExpectContinueTest(InspectBase):
    run_jail = test_inspect.RunInspectTest.run_jail

    def test_a_client_that_waits_for_100_continue_is_not_held(self):
        # With a secret configured, a request with a body is held until cordon has scanned 64 KiB of it or its
        # end; a client that sends `Expect: 100-continue` sends nothing before a 100 or its own timeout (curl:
        # 1 s by default, here 10 s; some clients wait for ever). The upstream answers 100 at once.
        r = self.run_jail("curl -sS --max-time 30 --expect100-timeout 10 -H 'Expect: 100-continue' "
                          "--data-binary hello -o /dev/null -w '%%{http_code} %%{time_total}' "
                          "https://api.test:%d/public/x" % self.up.port,
                          "--inspect", "api.test", "--secret", "GITHUB_TOKEN=api.test",
                          env={"GITHUB_TOKEN": "ghp_" + "R3alT0kenValue" * 3})
        self.assertEqual(r.returncode, 0, r.stderr)
        status, seconds = r.stdout.split()
        self.assertEqual(status, "200")
        self.assertLess(float(seconds), 5, "the request waited for the client's 100-continue timeout")


class AuditTest(InspectBase):
    def test_a_request_the_upstream_received_is_not_logged_as_denied(self):
        # A chunked POST: its head and first chunk go to the upstream at once; a malformed second chunk makes
        # cordon answer 400. The upstream has the request; its one line must say it was allowed and forwarded
        # (with the error), not that it was refused.
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.sendall(b"POST /public/x HTTP/1.1\r\nHost: api.test:%d\r\nTransfer-Encoding: chunked\r\n\r\n"
                  b"5\r\nhello\r\n" % self.up.port)
        deadline = time.time() + 5
        while not self.up.requests and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual([(m, path) for m, path, _ in self.up.requests], [("POST", "/public/x")])
        t.sendall(b"zz\r\nworld\r\n0\r\n\r\n")
        status, _, _ = read_http_response(t)
        t.close()
        lines = p.wait_audit(lambda l: any(e.get("proto") == "https" for e in l))
        time.sleep(0.3)
        inner = [e for e in p.audit() if e.get("proto") == "https"]
        self.assertEqual(len(inner), 1, inner)
        self.assertEqual((inner[0]["path"], inner[0]["decision"]), ("/public/x", "allow"),
                         "the request reached the upstream (answered %d to the client): %s" % (status, inner[0]))
        self.assertTrue(inner[0].get("error"), inner[0])


class FramingTest(InspectBase):
    """Shapes servers read differently, refused inside an inspected tunnel before anything is forwarded."""

    def test_transfer_encoding_other_than_exactly_chunked_http09_and_no_host(self):
        p = self.start()
        port = self.up.port
        heads = [
            b"POST /public/x HTTP/1.1\r\nHost: api.test:%d\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
            b"POST /public/x HTTP/1.1\r\nHost: api.test:%d\r\nTransfer-Encoding: chunked\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            b"GET /public/x HTTP/1.1\r\n\r\n",
            b"GET /public/x HTTP/1.0\r\n\r\n",
        ]
        for head in heads:
            t = self.tunnel(p, "api.test")
            t.sendall(head % port if b"%d" in head else head)
            status = read_http_response(t)[0]
            t.close()
            self.assertEqual(status, 400, head)
        # HTTP/0.9: a bare request line; no answer it could read, nothing forwarded.
        t = self.tunnel(p, "api.test")
        t.sendall(b"GET /public/x\r\n\r\n")
        answer = recv_until(t)
        t.close()
        self.assertFalse(answer.startswith(b"HTTP/1.1 200"), answer)
        # Absolute-form through the HTTP front-end too.
        s = p.connect()
        s.sendall(b"POST http://api.test:%d/public/x HTTP/1.1\r\nHost: api.test:%d\r\n"
                  b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n" % (port, port))
        self.assertEqual(read_http_response(s)[0], 400)
        s.close()
        t = self.tunnel(p, "api.test")
        t.sendall(b"GET /public/x HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % port)
        self.assertEqual(read_http_response(t)[0], 200)
        t.close()
        self.assertEqual([path for _, path, _ in self.up.requests], ["/public/x"])


if __name__ == "__main__":
    unittest.main()
