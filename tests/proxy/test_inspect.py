#!/usr/bin/env python3
"""cordon proxy, TLS termination (issue 13): a test HTTPS upstream with a CA made here (--upstream-ca), cordon's
own CA made with `cordon ca init`, real curl and Python TLS clients through CONNECT and SOCKS5."""

import hashlib
import json
import os
import shutil
import socket
import ssl
import stat
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import CORDON, LOOPBACK, TempDirTest, read_http_response, recv_until, wait_for  # noqa: E402


def openssl(*args, cwd=None):
    subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=cwd)


class TestPki:
    """A test CA and leaves it signs, with the openssl CLI (EC keys: fast)."""

    def __init__(self, directory, name="test-ca"):
        self.dir = os.path.join(directory, name)
        os.makedirs(self.dir)
        self.cert = os.path.join(self.dir, "ca.pem")
        self.key = os.path.join(self.dir, "ca.key")
        openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout",
                self.key, "-out", self.cert, "-days", "3", "-subj", "/CN=" + name,
                "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")

    def leaf(self, names, expired=False):
        base = os.path.join(self.dir, "leaf-%s%s" % (names[0], "-expired" if expired else ""))
        key, csr, cert, ext = base + ".key", base + ".csr", base + ".pem", base + ".ext"
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out",
                csr, "-subj", "/CN=" + names[0])
        with open(ext, "w") as f:
            f.write("subjectAltName=" + ",".join(("IP:" if n[0].isdigit() else "DNS:") + n for n in names) +
                    "\nextendedKeyUsage=serverAuth\n")
        if expired:
            # Valid until yesterday (OpenSSL 3.0's x509 has no -not_before / -not_after).
            openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key, "-CAcreateserial",
                    "-out", cert, "-extfile", ext, "-days", "-1")
        else:
            openssl("x509", "-req", "-in", csr, "-CA", self.cert, "-CAkey", self.key, "-CAcreateserial",
                    "-out", cert, "-days", "2", "-extfile", ext)
        return cert, key


def tls_server_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


class ThreadedServer:
    """A server on 127.0.0.1:0 (`port`) that serves each connection in a thread of its own with `_serve(conn)`.
    Subclasses set their own state before calling `__init__`, which starts accepting."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def close(self):
        self.sock.close()


class ScriptedTlsUpstream(ThreadedServer):
    """A TLS upstream that misbehaves by path: /repos/acme/hang reads the request and never answers,
    /repos/acme/bighead answers with a head over 64 KiB, /repos/acme/cut sends 10 bytes of a 1000-byte body and
    closes, /repos/acme/reset does so with a reset. `seen` lists the paths that arrived."""

    def __init__(self, context):
        self.context = context
        self.seen = []
        self.conns = []
        super().__init__()

    def _serve(self, raw):
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            self.conns.append(conn)
            head = recv_until(conn)
            path = head.split(b" ")[1].decode()
            self.seen.append(path)
            if path.endswith("/bighead"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * (70 * 1024) + b"\r\n\r\n")
            elif path.endswith("/cut") or path.endswith("/reset"):
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")
                time.sleep(0.2)
                if path.endswith("/reset"):
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                conn.close()  # without close_notify
        except (OSError, ssl.SSLError, IndexError):
            pass

    def close(self):
        self.sock.close()
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass


class InspectBase(TempDirTest):
    def setUp(self):
        super().setUp()
        self.pki = TestPki(self.dir)
        cert, key = self.pki.leaf(["api.test", "other.test"])
        self.up = self.upstream(name="api", tls=tls_server_context(cert, key))
        self.ca_dir = os.path.join(self.dir, "cordon-ca")
        r = subprocess.run([CORDON, "ca", "init", "--dir", self.ca_dir], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.cordon_ca = os.path.join(self.ca_dir, "ca.pem")
        self.dns_server = self.dns({"api.test": ["127.0.0.1"], "plain.test": ["127.0.0.1"],
                                    "other.test": ["127.0.0.1"], "wrongname.test": ["127.0.0.1"],
                                    "expired.test": ["127.0.0.1"], "unknown.test": ["127.0.0.1"]})
        self.settings = os.path.join(self.dir, "settings.json")
        with open(self.settings, "w") as f:
            json.dump({"network": {
                "allowedDomains": ["api.test", "plain.test", "other.test", "wrongname.test", "expired.test",
                                   "unknown.test"],
                "requestRules": [
                    {"host": "api.test", "methods": ["GET"], "paths": ["/repos/acme/**"], "action": "allow"},
                    {"host": "api.test", "methods": ["GET", "POST"], "paths": ["/public/*"], "action": "allow"},
                    {"host": "api.test", "paths": ["/public/secret"], "action": "deny"},
                ]}}, f)

    def start(self, *extra):
        return self.proxy(["--settings", self.settings, "--ca-dir", self.ca_dir, "--upstream-ca", self.pki.cert,
                           "--inspect", "api.test", "--inspect", "wrongname.test", "--inspect", "expired.test",
                           "--inspect", "unknown.test", *LOOPBACK, *extra], dns=self.dns_server)

    def curl_https(self, p, url, *extra):
        return self.curl("-sS", "-i", "-x", p.url(), "--cacert", self.cordon_ca, url, *extra)

    def tunnel(self, p, host):
        """A TLS socket to `host` through CONNECT, trusting cordon's CA only."""
        return self.tunnel_to(p, host, self.up.port)

    def tunnel_to(self, p, host, port):
        s = p.connect()
        s.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
        head = b""
        while b"\r\n\r\n" not in head:
            head += s.recv(1)
        self.assertIn(b" 200 ", head.split(b"\r\n")[0])
        ctx = ssl.create_default_context(cafile=self.cordon_ca)
        ctx.set_alpn_protocols(["h2", "http/1.1"])
        return ctx.wrap_socket(s, server_hostname=host)

    def metrics_text(self, p):
        return self.curl("-sS", "http://127.0.0.1:%d/metrics" % p.metrics_port).stdout.decode()


class InspectTest(InspectBase):
    def test_request_rules_inside_the_tunnel_and_full_urls_in_the_audit_log(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        self.assertIn(t.selected_alpn_protocol(), (None, "http/1.1"))  # never h2
        port = self.up.port

        def ask(method, path, body=b""):
            t.sendall(b"%s %s HTTP/1.1\r\nHost: api.test:%d\r\nContent-Length: %d\r\n\r\n%s" %
                      (method.encode(), path.encode(), port, len(body), body))
            return read_http_response(t)

        status, headers, body = ask("GET", "/repos/acme/app")
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body)["path"], "/repos/acme/app")
        status, headers, body = ask("POST", "/gists", b"x")  # no rule allows it: the host has rules
        self.assertEqual(status, 403)
        self.assertEqual(headers["x-proxy-error"], "blocked-by-request-rule")
        status, headers, body = ask("DELETE", "/repos/acme/app")  # method not allowed
        self.assertEqual(status, 403)
        status, headers, body = ask("GET", "/public/secret")  # deny wins over the /public/* allow
        self.assertEqual(status, 403)
        self.assertIn(b"/public/secret", body)
        # The same connection stays usable after each refusal.
        status, headers, body = ask("POST", "/public/x", b"hello")
        self.assertEqual(status, 200, body)
        t.close()
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "https") >= 5)
        inner = [e for e in lines if e.get("proto") == "https"]
        self.assertEqual([(e["method"], e["status"], e["decision"]) for e in inner],
                         [("GET", 200, "allow"), ("POST", 403, "deny"), ("DELETE", 403, "deny"),
                          ("GET", 403, "deny"), ("POST", 200, "allow")])
        self.assertEqual(inner[0]["url"], "https://api.test:%d/repos/acme/app" % port)
        self.assertIn("/repos/acme/**", inner[0]["rule"])
        self.assertIn("settings.json", inner[0]["source"])
        self.assertGreater(inner[0]["bytes_down"], 0)
        self.assertEqual(inner[1]["reason"], "blocked-by-request-rule")
        self.assertIn('"deny"', inner[3]["rule"])
        # Only the upstream-visible requests reached it.
        self.assertEqual([r[1] for r in self.up.requests], ["/repos/acme/app", "/public/x"])

    def test_a_head_over_one_tls_record_reaches_the_upstream_whole(self):
        # The attack: an allowed request whose head is larger than one TLS record (16 KiB), with its framing
        # after the first record and a second request in its body. Were the rest of the head lost, the
        # upstream would read the body as a request to a path a deny rule covers.
        p = self.start()
        port = self.up.port
        hidden = b"\r\n\r\nGET /public/secret HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % port
        t = self.tunnel(p, "api.test")
        t.sendall(b"POST /public/x HTTP/1.1\r\nHost: api.test:%d\r\nX-Pad: %s\r\nContent-Length: %d\r\n\r\n%s" %
                  (port, b"a" * 20000, len(hidden), hidden))
        status, headers, body = read_http_response(t)
        self.assertEqual(status, 200, body)
        self.assertEqual(json.loads(body), {"sha256": hashlib.sha256(hidden).hexdigest(), "length": len(hidden)})
        t.close()
        self.assertEqual([(m, path, len(h.get("X-Pad", ""))) for m, path, h in self.up.requests],
                         [("POST", "/public/x", 20000)])
        lines = p.wait_audit(lambda l: any(e.get("proto") == "https" for e in l))
        self.assertEqual([(e["path"], e["status"]) for e in lines if e.get("proto") == "https"],
                         [("/public/x", 200)])

    def test_every_forwarded_request_has_one_line_however_the_exchange_ends(self):
        cert, key = self.pki.leaf(["api.test"])
        bad = ScriptedTlsUpstream(tls_server_context(cert, key))
        self.cleanups.append(bad.close)
        p = self.start()
        for name in ("hang", "bighead", "cut", "reset"):
            t = self.tunnel_to(p, "api.test", bad.port)
            t.sendall(b"GET /repos/acme/%s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (name.encode(), bad.port))
            if name == "hang":
                # The client vanishes (a reset) once its request reached the upstream.
                self.assertTrue(wait_for(lambda: "/repos/acme/hang" in bad.seen))
                t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                try:
                    while t.recv(65536):
                        pass
                except (OSError, ssl.SSLError):
                    pass
            t.close()
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "https") >= 4)
        time.sleep(0.3)  # nothing more comes
        inner = {}
        for e in p.audit():
            if e.get("proto") == "https":
                inner.setdefault(e["path"].rsplit("/", 1)[1], []).append(e)
        self.assertEqual(sorted(inner), ["bighead", "cut", "hang", "reset"], lines)
        for name, entries in inner.items():
            self.assertEqual(len(entries), 1, entries)
        self.assertEqual(inner["hang"][0]["status"], 502)
        self.assertIn("client", inner["hang"][0]["error"])
        self.assertEqual(inner["bighead"][0]["status"], 502)
        self.assertIn("bad response from upstream", inner["bighead"][0]["error"])
        for name in ("cut", "reset"):
            self.assertEqual(inner[name][0]["status"], 200)
            self.assertIn("upstream", inner[name][0]["error"])

    def test_paths_are_matched_as_a_server_reads_them(self):
        # The attack: a path that matches an allow rule as written, and another resource once the server
        # resolves its dot segments or decodes it.
        p = self.start()
        port = self.up.port
        for path, status in [("/repos/acme/../../gists", 400), ("/repos/acme/%2e%2e/%2E%2E/gists", 400),
                             ("/public/%73ecret", 403), ("/public\\secret", 403)]:
            t = self.tunnel(p, "api.test")
            t.sendall(b"GET %s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (path.encode(), port))
            got, headers, body = read_http_response(t)
            self.assertEqual(got, status, (path, body))
            t.close()
        self.assertEqual(self.up.requests, [])

    def test_curl_through_connect_and_socks5(self):
        p = self.start()
        r = self.curl_https(p, "https://api.test:%d/repos/acme/x" % self.up.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"HTTP/1.1 200", r.stdout)
        r = self.curl("-sS", "-i", "--socks5-hostname", "127.0.0.1:%d" % p.port, "--cacert", self.cordon_ca,
                      "https://api.test:%d/gists" % self.up.port)
        self.assertIn(b"403", r.stdout, r.stderr)
        self.assertIn(b"blocked-by-request-rule", r.stdout)

    def test_host_header_must_name_the_tunnels_host(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.sendall(b"GET /repos/acme/app HTTP/1.1\r\nHost: other.test\r\n\r\n")
        status, headers, body = read_http_response(t)
        self.assertEqual(status, 421)
        self.assertEqual(headers["x-proxy-error"], "misdirected-request")
        self.assertEqual(self.up.requests, [])
        t.close()

    def test_refusals_inside_the_tunnel_have_their_reason_phrases(self):
        # One table for both front-ends: inside a tunnel 431 and 414 were "Error".
        p = self.start()
        cases = [(b"GET /repos/acme/app HTTP/1.1\r\nHost: other.test\r\n\r\n", b"421 Misdirected Request"),
                 (b"GET /repos/acme/app HTTP/1.1\r\nX: " + b"a" * (70 * 1024) + b"\r\n\r\n",
                  b"431 Request Header Fields Too Large"),
                 (b"GET /" + b"a" * (17 * 1024) + b" HTTP/1.1\r\n\r\n", b"414 URI Too Long"),
                 (b"GET repos HTTP/1.1\r\n\r\n", b"400 Bad Request")]
        for request, status_line in cases:
            t = self.tunnel(p, "api.test")
            t.sendall(request)
            self.assertEqual(recv_until(t, b"\r\n").split(b"\r\n")[0], b"HTTP/1.1 " + status_line)
            t.close()
        self.assertEqual(self.up.requests, [])

    def test_bad_upstream_certificates_are_a_502_inside_cordons_tls(self):
        cases = {"wrongname.test": None, "expired.test": self.pki.leaf(["expired.test"], expired=True),
                 "unknown.test": TestPki(self.dir, "other-ca").leaf(["unknown.test"])}
        ups = {}
        for host, pair in cases.items():
            if pair is None:
                ups[host] = self.up  # its certificate names api.test and other.test
            else:
                ups[host] = self.upstream(name=host, tls=tls_server_context(*pair))
        p = self.start("--metrics", "127.0.0.1:0")
        bodies = {}
        for host, up in ups.items():
            t = self.tunnel_to(p, host, up.port)  # cordon's TLS, with a leaf for the allowed name
            t.sendall(b"GET /repos/acme/x HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), up.port))
            status, headers, body = read_http_response(t)
            self.assertEqual((status, headers["x-proxy-error"], headers["connection"]),
                             (502, "upstream-failure", "close"))
            bodies[host] = body.decode()
            self.assertEqual(t.recv(100), b"")  # then the connection closes
            t.close()
        self.assertIn("hostname mismatch", bodies["wrongname.test"])
        self.assertIn("expired", bodies["expired.test"])
        self.assertIn("unable to get local issuer", bodies["unknown.test"])
        # No byte went to (or came from) an upstream that failed: none of them got a request.
        self.assertEqual([u.requests for u in ups.values()], [[], [], []])
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("status") == 502) >= 3)
        failed = {e["host"]: e for e in lines if e.get("status") == 502}
        self.assertEqual(set(failed), set(cases))
        for host, e in failed.items():
            self.assertEqual((e["method"], e["path"], e["decision"]), ("GET", "/repos/acme/x", "allow"))
            self.assertIn(e["error"].split(": ", 1)[1], bodies[host])
        # A client that leaves without a request still leaves its line.
        s = p.connect()
        s.sendall(b"CONNECT expired.test:%d HTTP/1.1\r\n\r\n" % ups["expired.test"].port)
        self.assertIn(b" 200 ", s.recv(4096))
        ctx = ssl.create_default_context(cafile=self.cordon_ca)
        ctx.wrap_socket(s, server_hostname="expired.test").close()
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("status") == 502) >= 4)
        self.assertEqual(sum(1 for e in lines if e.get("status") == 502 and e["host"] == "expired.test"), 2)

    def test_single_minting_under_concurrent_first_requests(self):
        p = self.start("--metrics", "127.0.0.1:0")
        results = []

        def one():
            r = self.curl_https(p, "https://api.test:%d/repos/acme/%d" % (self.up.port, threading.get_ident()))
            results.append(r.returncode)

        threads = [threading.Thread(target=one) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [0] * 12)
        self.assertIn("cordon_tls_leaves_minted_total 1\n", self.metrics_text(p))

    def test_non_tls_payload_is_relayed_opaquely_unless_refused(self):
        # To an inspected host without request rules: relayed as it is.
        echo = self.tcp("echo")
        p = self.start()
        s = p.connect()
        s.sendall(b"CONNECT wrongname.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", s.recv(4096))
        s.sendall(b"SSH-2.0-test\r\n")
        self.assertEqual(s.recv(4096), b"SSH-2.0-test\r\n")
        s.close()
        # To a host with request rules, plain bytes are read as HTTP: what is not HTTP is a 400, and closed.
        s = p.connect()
        s.sendall(b"CONNECT api.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", s.recv(4096))
        s.sendall(b"SSH-2.0-test\r\n")
        answer = recv_until(s)
        self.assertTrue(answer.startswith(b"HTTP/1.1 400 "), answer)
        self.assertEqual(s.recv(4096), b"")
        s.close()
        # Plain HTTP to it meets its request rules, and what they allow is forwarded.
        plain = self.upstream(name="plain")
        s = p.connect()
        s.sendall(b"CONNECT api.test:%d HTTP/1.1\r\n\r\n" % plain.port)
        self.assertIn(b" 200 ", s.recv(4096))
        s.sendall(b"GET /public/secret HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % plain.port)
        self.assertEqual(read_http_response(s)[0], 403)
        s.sendall(b"GET /public/x HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % plain.port)
        self.assertEqual(read_http_response(s)[0], 200)
        s.close()
        self.assertEqual([path for _, path, _ in plain.requests], ["/public/x"])
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "http" and e.get("path")) >= 2)
        inner = [(e["path"], e["decision"], e["reason"]) for e in lines if e.get("proto") == "http" and e.get("path")]
        self.assertEqual(inner, [("/public/secret", "deny", "blocked-by-request-rule"),
                                 ("/public/x", "allow", "allowed")])
        with open(self.settings) as f:
            settings = json.load(f)
        settings["network"]["tlsTerminate"] = {"refuseOpaqueTunnels": True, "excludeDomains": ["plain.test"]}
        with open(self.settings, "w") as f:
            json.dump(settings, f)
        p2 = self.start()
        s = p2.connect()
        s.sendall(b"CONNECT api.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", s.recv(4096))
        s.sendall(b"SSH-2.0-test\r\n")
        self.assertEqual(s.recv(4096), b"")
        # excludeDomains: tunnelled untouched (the upstream's own certificate, not cordon's).
        r = self.curl("-sS", "-x", p2.url(), "--cacert", self.pki.cert, "https://plain.test:%d/x" % self.up.port)
        self.assertNotEqual(r.returncode, 0)  # the test leaf does not name plain.test...
        self.assertIn(b"plain.test", r.stderr)  # ...and curl saw the upstream's certificate, not a cordon leaf

    def test_plain_http_request_meets_request_rules_with_the_rule_in_its_line(self):
        plain = self.upstream(name="plain")
        p = self.start()
        r = self.curl("-sS", "-i", "-x", p.url(), "http://api.test:%d/public/secret" % plain.port)
        self.assertIn(b" 403 ", r.stdout.split(b"\r\n")[0])
        self.assertIn(b"X-Proxy-Error: blocked-by-request-rule", r.stdout)
        self.assertIn(b"/public/secret", r.stdout)
        r = self.curl("-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", p.url(),
                      "http://api.test:%d/public/x" % plain.port)
        self.assertEqual(r.stdout, b"200")
        self.assertEqual([path for _, path, _ in plain.requests], ["/public/x"])
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("event") == "decision") >= 2)
        denied = [e for e in lines if e.get("path") == "/public/secret"]
        self.assertEqual(len(denied), 1, lines)
        self.assertEqual((denied[0]["proto"], denied[0]["decision"], denied[0]["reason"], denied[0]["status"]),
                         ("http", "deny", "blocked-by-request-rule", 403))
        self.assertIn("/public/secret", denied[0]["rule"])
        self.assertTrue(denied[0]["source"])

    def test_ca_files_and_modes(self):
        mode = stat.S_IMODE(os.stat(os.path.join(self.ca_dir, "ca.key")).st_mode)
        self.assertEqual(mode, 0o600)
        r = subprocess.run([CORDON, "ca", "init", "--dir", self.ca_dir], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("--force", r.stderr)
        show = subprocess.run([CORDON, "ca", "show", "--dir", self.ca_dir], capture_output=True, text=True)
        self.assertEqual(show.returncode, 0)
        self.assertRegex(show.stdout, r"sha256: ([0-9A-F]{2}:){31}[0-9A-F]{2}")
        self.assertIn(os.path.join(self.ca_dir, "ca.pem"), show.stdout)
        export = subprocess.run([CORDON, "ca", "export", "--dir", self.ca_dir], capture_output=True, text=True)
        with open(self.cordon_ca) as f:
            self.assertEqual(export.stdout, f.read())
        # The default directory follows XDG_CONFIG_HOME.
        xdg = os.path.join(self.dir, "xdg")
        r = subprocess.run([CORDON, "ca", "init"], capture_output=True, text=True,
                           env=dict(os.environ, XDG_CONFIG_HOME=xdg))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.exists(os.path.join(xdg, "cordon", "ca", "ca.key")))

    def test_inspecting_without_a_ca_stops_the_proxy(self):
        r = subprocess.run([CORDON, "proxy", "--listen", "127.0.0.1:0", "--no-discover", "--inspect", "x.test"],
                           capture_output=True, text=True, env=dict(os.environ, XDG_CONFIG_HOME=self.dir),
                           timeout=10)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cordon ca init", r.stderr)


class TestParentProxy(ThreadedServer):
    """A CONNECT-only parent proxy on 127.0.0.1:0 that records each CONNECT line and Proxy-Authorization and
    resolves the test names itself (to 127.0.0.1): cordon must pass names on unresolved."""

    def __init__(self, names):
        self.names = names
        self.seen = []
        super().__init__()

    def _serve(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(1)
            if not chunk:
                return
            head += chunk
        lines = head.decode().split("\r\n")
        auth = [l.split(":", 1)[1].strip() for l in lines if l.lower().startswith("proxy-authorization:")]
        target = lines[0].split()[1]
        self.seen.append((lines[0], auth[0] if auth else None))
        host, port = target.rsplit(":", 1)
        if host not in self.names:
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
            conn.close()
            return
        up = socket.create_connection(("127.0.0.1", int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

        def pump(a, b):
            try:
                while True:
                    data = a.recv(65536)
                    if not data:
                        b.shutdown(socket.SHUT_WR)
                        return
                    b.sendall(data)
            except OSError:
                pass

        threading.Thread(target=pump, args=(up, conn), daemon=True).start()
        pump(conn, up)


class ParentProxyTest(InspectBase):
    def test_allowed_connections_chain_through_the_parent_unresolved(self):
        parent = TestParentProxy({"api.test", "chained.test"})
        self.cleanups.append(parent.close)
        plain = self.upstream(name="plain")
        with open(self.settings) as f:
            settings = json.load(f)
        settings["network"]["allowedDomains"] += ["chained.test", "direct.test"]
        settings["network"]["parentProxy"] = {"https": "http://alice:s%%40cret@127.0.0.1:%d" % parent.port,
                                              "noProxy": "direct.test"}
        with open(self.settings, "w") as f:
            json.dump(settings, f)
        self.dns_server.records["direct.test"] = ["127.0.0.1"]
        p = self.start()
        # chained.test is unknown to cordon's DNS: only the parent can resolve it.
        r = self.curl("-sS", "-x", p.url(), "http://chained.test:%d/via-parent" % plain.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["path"], "/via-parent")
        # An inspected host through the parent: TLS is terminated by cordon, the tunnel goes via the parent.
        r = self.curl_https(p, "https://api.test:%d/repos/acme/x" % self.up.port)
        self.assertIn(b"HTTP/1.1 200", r.stdout, r.stderr)
        # noProxy: direct. A denied host never reaches the parent.
        r = self.curl("-sS", "-x", p.url(), "http://direct.test:%d/direct" % plain.port)
        self.assertEqual(json.loads(r.stdout)["path"], "/direct")
        r = self.curl("-sS", "-i", "-x", p.url(), "http://denied.test:%d/" % plain.port)
        self.assertIn(b"403", r.stdout)
        basic = "Basic " + __import__("base64").b64encode(b"alice:s@cret").decode()
        self.assertEqual(parent.seen, [("CONNECT chained.test:%d HTTP/1.1" % plain.port, basic),
                                       ("CONNECT api.test:%d HTTP/1.1" % self.up.port, basic)])
        self.assertEqual(self.dns_server.count("chained.test"), 0)
        # A parent that refuses: 502 naming it.
        r = self.curl("-sS", "-i", "-x", p.url(), "http://other.test:%d/" % plain.port)
        self.assertIn(b"502", r.stdout)
        self.assertIn(b"parent", r.stdout)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class RunInspectTest(InspectBase):
    """A jailed curl with no flags trusts the inspected connection; secrets reach only their hosts."""

    def run_jail(self, script, *flags, env=None, wrap=()):
        work, home = os.path.join(self.dir, "work"), os.path.join(self.dir, "home")
        os.makedirs(work, exist_ok=True)
        os.makedirs(home, exist_ok=True)
        self.tmp = os.path.join(self.dir, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        full_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": self.tmp,
                    "XDG_CONFIG_HOME": os.path.join(self.dir, "xdg-empty")}
        full_env.update(env or {})
        self.audit_path = os.path.join(self.dir, "run-audit.log")
        return subprocess.run([*wrap, CORDON, "run", "--no-discover", "--settings", self.settings, "--dns-server",
                               self.dns_server.address, "--upstream-ca", self.pki.cert, "--audit-log",
                               self.audit_path, *LOOPBACK, *flags, "--", "sh", "-c", script],
                              cwd=work, env=full_env, capture_output=True, text=True, timeout=60)

    def run_audit(self):
        with open(self.audit_path) as f:
            return [json.loads(line) for line in f if line.strip()]

    def test_jailed_curl_trusts_the_inspected_connection_without_flags(self):
        url = "https://api.test:%d" % self.up.port
        r = self.run_jail("curl -sS --max-time 10 %s/repos/acme/app && echo; "
                          "curl -sS --max-time 10 -o /dev/null -w '%%{http_code}' %s/gists; echo; "
                          "echo \"$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE $CURL_CA_BUNDLE "
                          "$GIT_SSL_CAINFO\"; grep -c 'BEGIN CERTIFICATE' /etc/ssl/certs/ca-certificates.crt; "
                          "ls /tmp" % (url, url), "--inspect", "api.test")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(json.loads(lines[0])["path"], "/repos/acme/app")
        self.assertEqual(lines[1], "403")
        self.assertEqual(lines[2], " ".join(["/etc/ssl/certs/ca-certificates.crt"] * 5))
        with open("/etc/ssl/certs/ca-certificates.crt") as f:
            system_count = f.read().count("BEGIN CERTIFICATE")
        self.assertEqual(int(lines[3]), system_count + 1)  # the system's CAs and cordon's (ephemeral) one
        # The bundle's run-private directory is gone, and nothing was left in the user's directories.
        self.assertEqual(os.listdir(self.tmp), [])
        self.assertEqual(os.listdir(os.path.join(self.dir, "work")), [])
        self.assertFalse(os.path.exists(os.path.join(self.dir, "xdg-empty")))
        inner = [e for e in self.run_audit() if e.get("proto") == "https"]
        self.assertEqual([(e["url"], e["status"]) for e in inner],
                         [(url + "/repos/acme/app", 200), (url + "/gists", 403)])

    def test_without_a_system_bundle_the_jail_trusts_cordons_ca_alone(self):
        # A minimal container without ca-certificates: every path cordon looks for the system bundle at is
        # hidden (/dev/null bound over it, in a mount namespace of this test's own).
        hide = [p for p in ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                            "/etc/ssl/cert.pem"] if os.path.isfile(p)]
        url = "https://api.test:%d" % self.up.port
        script = ("curl -sS --max-time 10 %s/repos/acme/app && echo; echo \"$SSL_CERT_FILE $CURL_CA_BUNDLE\"; "
                  "grep -c 'BEGIN CERTIFICATE' \"$SSL_CERT_FILE\"; test -s /etc/ssl/certs/ca-certificates.crt "
                  "|| echo no-system-bundle" % url)
        mounts = "".join("mount --bind /dev/null %s && " % p for p in hide)
        r = self.run_jail(script, "--inspect", "api.test",
                          wrap=["unshare", "--mount", "--propagation", "private", "sh", "-c",
                                mounts + 'exec "$@"', "sh"])
        self.assertEqual(r.returncode, 0, r.stderr)
        notes = [line for line in r.stderr.splitlines() if "system CA bundle" in line]
        self.assertEqual(notes, ["cordon: note: no system CA bundle (looked for /etc/ssl/certs/ca-certificates.crt): "
                                 "the jail trusts cordon's CA alone, named by SSL_CERT_FILE and the other trust "
                                 "variables"])
        lines = r.stdout.splitlines()
        self.assertEqual(json.loads(lines[0])["path"], "/repos/acme/app")
        bundle = lines[1].split()[0]
        self.assertEqual(lines[1], bundle + " " + bundle)
        self.assertTrue(bundle.startswith(self.tmp + "/cordon-trust-"), bundle)  # not in the user's directories
        self.assertEqual(lines[2], "1")  # cordon's CA and nothing else
        self.assertEqual(lines[3], "no-system-bundle")
        # The run-private directory is gone, nothing was left in the working directory.
        self.assertEqual(os.listdir(self.tmp), [])
        self.assertEqual(os.listdir(os.path.join(self.dir, "work")), [])

    def test_the_jailed_command_neither_reads_nor_replaces_cordons_ca(self):
        # cordon's CA key signs what the jail's clients trust, and what a user who exported the CA trusts on the
        # host: a jailed command that read it could mint certificates for any name (and carry the key out to an
        # allowed host); one that replaced it would be trusted next time. In the default place
        # ($XDG_CONFIG_HOME/cordon/ca) and with --ca-dir inside the writable project, in both jails.
        url = "https://api.test:%d" % self.up.port
        xdg = os.path.join(self.dir, "xdg")
        work = os.path.join(self.dir, "work")
        own = os.path.join(work, "own-ca")
        for flags, ca, env in ((["--ca-dir", own], own, None),
                               ([], os.path.join(xdg, "cordon", "ca"), {"XDG_CONFIG_HOME": xdg})):
            init = subprocess.run([CORDON, "ca", "init", "--dir", ca], capture_output=True, text=True)
            self.assertEqual(init.returncode, 0, init.stderr)
            with open(os.path.join(ca, "ca.key")) as f:
                key = f.read()
            for jail in ("namespaces", "landlock"):
                with self.subTest(ca=ca, jail=jail):
                    script = ("curl -sS --max-time 10 %s/repos/acme/app >/dev/null && echo inspected; "
                              "cat %s/ca.key 2>/dev/null | head -c 60; echo; "
                              "echo planted > %s/ca.pem 2>/dev/null && echo replaced; "
                              "touch %s/new 2>/dev/null && echo created; "
                              "mv %s %s.old 2>/dev/null && echo moved; "
                              "cp /dev/null %s/ca.key 2>/dev/null && echo emptied; true"
                              % (url, ca, ca, ca, ca, ca, ca))
                    r = self.run_jail(script, "--inspect", "api.test", "--jail", jail, *flags, env=env)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    lines = r.stdout.splitlines()
                    self.assertEqual(lines[0], "inspected", r.stdout + r.stderr)  # the proxy still uses it
                    self.assertNotIn("PRIVATE KEY", r.stdout)
                    self.assertNotIn(key.splitlines()[1][:40], r.stdout)
                    for verb in ("replaced", "created", "moved", "emptied"):
                        self.assertNotIn(verb, lines)
                    with open(os.path.join(ca, "ca.key")) as f:
                        self.assertEqual(f.read(), key)
                    self.assertEqual(sorted(os.listdir(ca)), ["ca.key", "ca.pem"])
            shutil.rmtree(ca)

    def test_masked_secret_reaches_only_its_host(self):
        self.plain = self.upstream(name="plain")
        real = "ghp_" + "R3alT0kenValue" * 3
        url = "https://api.test:%d" % self.up.port
        other = "https://other.test:%d" % self.up.port
        with open(self.settings) as f:
            settings = json.load(f)
        settings["credentials"] = {"envVars": [{"name": "DENIED_TOKEN", "mode": "deny"}]}
        with open(self.settings, "w") as f:
            json.dump(settings, f)
        r = self.run_jail(
            "echo \"seen=$GITHUB_TOKEN denied=${DENIED_TOKEN:-unset}\"; "
            "curl -sS --max-time 10 -o /dev/null -H \"Authorization: token $GITHUB_TOKEN\" "
            "%s/repos/acme/app; echo; "
            "curl -sS --max-time 10 -i -H \"Authorization: token $GITHUB_TOKEN\" %s/public/x; echo; "
            "curl -sS --max-time 10 -i %s/public/x?t=$GITHUB_TOKEN; echo; "
            "curl -sS --max-time 10 -i --data \"token=$GITHUB_TOKEN\" %s/public/x; echo; "
            "curl -sS --max-time 10 -i -H \"X-T: $GITHUB_TOKEN\" http://other.test:%d/; echo; "
            "curl -sS --max-time 10 \"%s/repos/acme/echo?t=$GITHUB_TOKEN\"; echo; "
            "curl -sS --max-time 10 -o /dev/null -u \"x-access-token:$GITHUB_TOKEN\" %s/repos/acme/basic; "
            "curl -sS --max-time 10 -i -u \"x:$GITHUB_TOKEN\" %s/public/basic; echo"
            % (url, other, other, other, self.plain.port, url, url, other),
            "--inspect", "api.test", "--inspect", "other.test", "--secret", "GITHUB_TOKEN=api.test",
            env={"GITHUB_TOKEN": real, "DENIED_TOKEN": "d3n13d"})
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        seen = out.splitlines()[0]
        sentinel = seen.split()[0][len("seen="):]
        self.assertEqual(len(sentinel), len(real))
        self.assertTrue(sentinel.startswith("ghp_"))
        self.assertNotEqual(sentinel, real)
        self.assertIn("denied=unset", seen)
        self.assertNotIn(real, out)
        # The upstream got the real value for api.test (in the header only), and nothing from the refused
        # requests; the sentinel it echoed back (from the URL) reached the jail as the sentinel.
        auth = [h.get("Authorization") for m, path, h in self.up.requests]
        basic = "Basic " + __import__("base64").b64encode(("x-access-token:" + real).encode()).decode()
        self.assertEqual(auth, ["token " + real, None, basic])  # Basic credentials (git) substituted too
        echo = [line for line in out.splitlines() if line.startswith("{")][-1]
        self.assertEqual(json.loads(echo)["path"], "/repos/acme/echo?t=" + sentinel)
        # Header, URL, body, Basic credentials inside inspected connections; a header of a plain http:// request.
        self.assertEqual(out.count("X-Proxy-Error: blocked-by-secret-scope"), 5)
        tail = " carries the sentinel of GITHUB_TOKEN, which may go to its injectHosts only\n"
        self.assertEqual(out.count("cordon: header Authorization" + tail), 2, out)  # a token, Basic credentials
        self.assertEqual(out.count("cordon: the request URL" + tail), 1, out)
        self.assertEqual(out.count("cordon: the request body" + tail), 1, out)
        self.assertEqual(out.count("cordon: the request" + tail), 1, out)  # the plain http:// request
        self.assertEqual(self.plain.requests, [])
        with open(self.audit_path) as f:
            self.assertNotIn(real, f.read())

    def test_the_trust_bundle_directory_is_private(self):
        work, home, tmp = (os.path.join(self.dir, d) for d in ("work", "home", "tmp"))
        for d in (work, home, tmp):
            os.makedirs(d)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home, "TMPDIR": tmp,
               "XDG_CONFIG_HOME": os.path.join(self.dir, "xdg-empty")}
        run = subprocess.Popen([CORDON, "run", "--no-discover", "--settings", self.settings, "--inspect", "api.test",
                                "--user", "nobody", "--", "sh", "-c",
                                "grep -c 'BEGIN CERTIFICATE' $SSL_CERT_FILE; while [ ! -e go ]; do sleep 0.05; done"],
                               cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            self.assertTrue(wait_for(lambda: os.listdir(tmp)), run.stderr.read() if run.poll() is not None else "")
            (name,) = os.listdir(tmp)
            self.assertTrue(name.startswith("cordon-trust-"))
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(tmp, name)).st_mode), 0o700)
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(tmp, name, "ca-bundle.pem")).st_mode), 0o644)
        finally:
            with open(os.path.join(work, "go"), "w"):
                pass
            out, err = run.communicate(timeout=30)
        # An unprivileged --user still reads the bundle (through the bind of the file).
        self.assertEqual(run.returncode, 0, err)
        with open("/etc/ssl/certs/ca-certificates.crt") as f:
            self.assertEqual(int(out), f.read().count("BEGIN CERTIFICATE") + 1)
        self.assertEqual(os.listdir(tmp), [])

    def test_the_real_value_never_comes_back(self):
        real = "ghp_" + "R3alT0kenValue" * 3
        url = "https://api.test:%d" % self.up.port
        r = self.run_jail(
            "curl -sS --max-time 10 -i -H \"Origin: https://$GITHUB_TOKEN\" -H \"Authorization: token $GITHUB_TOKEN\" "
            "%s/repos/acme/reflect; echo; "
            "curl -sS --max-time 10 -H \"X-Api-Key: $GITHUB_TOKEN\" -H \"Cookie: t=$GITHUB_TOKEN\" "
            "-H \"X-Other: $GITHUB_TOKEN\" %s/repos/acme/echo; echo; echo \"sentinel=$GITHUB_TOKEN\"" % (url, url),
            "--inspect", "api.test", "--secret", "GITHUB_TOKEN=api.test", env={"GITHUB_TOKEN": real})
        self.assertEqual(r.returncode, 0, r.stderr)
        out = r.stdout
        sentinel = out.rsplit("sentinel=", 1)[1].strip()
        self.assertEqual(len(sentinel), len(real))
        self.assertNotIn(real, out)
        # Into credential headers only: Origin and X-Other reach the upstream as the sentinel.
        reflect, echo = self.up.requests
        self.assertEqual(reflect[2]["Authorization"], "token " + real)
        self.assertEqual(reflect[2]["Origin"], "https://" + sentinel)
        self.assertEqual((echo[2]["X-Api-Key"], echo[2]["Cookie"], echo[2]["X-Other"]),
                         (real, "t=" + real, sentinel))
        # The responses carry the sentinel where the upstream put the real value: a header, a chunked body with
        # the value split across chunks at every position, an echoed JSON body.
        self.assertIn("Access-Control-Allow-Origin: https://%s\n" % sentinel, out)
        self.assertIn("X-Echo-Authorization: token %s\n" % sentinel, out)
        self.assertEqual(out.count("token " + sentinel + "\n"), 1 + len("token " + real))  # the header, the body
        headers = json.loads([line for line in out.splitlines() if line.startswith("{")][-1])["headers"]
        self.assertEqual((headers["x-api-key"], headers["cookie"]), (sentinel, "t=" + sentinel))


if __name__ == "__main__":
    unittest.main()
