#!/usr/bin/env python3
"""cordon proxy, HTTP front-end: real curl and raw sockets through a running `cordon proxy`."""

import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import LOOPBACK, NetnsHost, TempDirTest, make_cert, read_http_response, read_http_response_file, recv_until  # noqa: E402


class HttpProxyTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.up = self.upstream(name="web")
        self.dns_server = self.dns({
            "allowed.test": ["127.0.0.1"],
            "bad.wild.test": ["127.0.0.1"],
            "a.wild.test": ["127.0.0.1"],
            "deep.a.wild.test": ["127.0.0.1"],
            "wild.test": ["127.0.0.1"],
            "port.test": ["127.0.0.1"],
            "gone.wild.test": "NXDOMAIN",
        })
        self.p = self.proxy(["--allow-domain", "allowed.test", "--allow-domain", "*.wild.test",
                             "--deny-domain", "bad.wild.test", "--allow-domain", "port.test:%d" % self.up.port,
                             "--allow-domain", "127.0.0.1", *LOOPBACK], dns=self.dns_server)

    def get(self, host, path="/", port=None, extra=()):
        port = port or self.up.port
        return self.curl("-i", "-x", self.p.url(), "http://%s:%d%s" % (host, port, path), *extra)

    def test_allow_forwards_and_logs(self):
        r = self.get("allowed.test", "/hello?x=1")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"200 OK", r.stdout)
        body = json.loads(r.stdout.split(b"\r\n\r\n", 1)[1])
        self.assertEqual(body["path"], "/hello?x=1")  # origin-form upstream
        self.assertNotIn("proxy-connection", body["headers"])  # hop-by-hop removed
        lines = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l))
        d = [e for e in lines if e["event"] == "decision"][0]
        self.assertEqual((d["decision"], d["proto"], d["host"], d["port"], d["method"], d["path"]),
                         ("allow", "http", "allowed.test", self.up.port, "GET", "/hello?x=1"))
        self.assertEqual(d["upstream_ip"], "127.0.0.1")
        self.assertEqual(d["rule"], "allowed.test")
        self.assertRegex(d["ts"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        c = [e for e in lines if e["event"] == "close"][0]
        self.assertEqual(c["id"], d["id"])
        self.assertGreater(c["bytes_down"], 0)
        self.assertIn("duration_ms", c)

    def test_deny_by_allowlist_before_dns(self):
        r = self.curl("-i", "-x", self.p.url(), "http://unknown.example:%d/" % self.up.port)
        self.assertIn(b"403 Forbidden", r.stdout)
        self.assertIn(b"X-Proxy-Error: blocked-by-allowlist", r.stdout)
        self.assertIn(b"Connection blocked by network allowlist", r.stdout)  # srt's phrase, which tools look for
        self.assertIn(b"Content-Type: text/plain", r.stdout)
        self.assertIn(b"unknown.example", r.stdout)
        self.assertEqual(self.dns_server.count("unknown.example"), 0, "policy must decide before DNS")
        self.assertEqual(self.up.connections, 0)
        d = self.p.wait_audit(lambda l: l)[0]
        self.assertEqual((d["decision"], d["reason"]), ("deny", "blocked-by-allowlist"))

    def test_deny_by_denylist_names_rule(self):
        r = self.get("bad.wild.test")
        self.assertIn(b"403 Forbidden", r.stdout)
        self.assertIn(b"X-Proxy-Error: blocked-by-denylist", r.stdout)
        self.assertIn(b"bad.wild.test", r.stdout.split(b"\r\n\r\n", 1)[1])
        self.assertIn(b"--deny-domain", r.stdout)  # the rule's source
        self.assertEqual(self.up.connections, 0)
        d = self.p.wait_audit(lambda l: l)[0]
        self.assertEqual((d["decision"], d["reason"], d["rule"]), ("deny", "blocked-by-denylist", "bad.wild.test"))

    def test_wildcard_and_port_rules(self):
        self.assertIn(b"200 OK", self.get("a.wild.test").stdout)
        self.assertIn(b"200 OK", self.get("deep.a.wild.test").stdout)
        self.assertIn(b"blocked-by-allowlist", self.get("wild.test").stdout)  # *.x does not match x
        self.assertIn(b"200 OK", self.get("port.test").stdout)
        # port.test is allowed only on the upstream's port
        r = self.curl("-i", "-x", self.p.url(), "http://port.test:1/")
        self.assertIn(b"403", r.stdout)

    def test_ip_literal_needs_rule_naming_it(self):
        self.assertIn(b"200 OK", self.get("127.0.0.1").stdout)
        r = self.get("127.0.0.2")  # only a rule naming the IP allows it
        self.assertIn(b"blocked-by-allowlist", r.stdout)

    def test_nxdomain_is_502(self):
        r = self.get("gone.wild.test")
        self.assertIn(b"502 Bad Gateway", r.stdout)
        self.assertIn(b"gone.wild.test", r.stdout)
        d = self.p.wait_audit(lambda l: l)[0]
        self.assertEqual((d["decision"], d["error"]), ("allow", "nxdomain"))

    def test_bad_upstream_responses_are_502(self):
        for answer in (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw",
                       b"NOT HTTP AT ALL\r\n\r\n", b""):
            srv = socket.socket()
            srv.bind(("127.0.0.1", 0))
            srv.listen(1)
            self.cleanups.append(srv.close)

            def serve(srv=srv, answer=answer):
                c, _ = srv.accept()
                c.recv(4096)
                c.sendall(answer)
                c.close()

            threading.Thread(target=serve, daemon=True).start()
            r = self.curl("-i", "-x", self.p.url(), "http://allowed.test:%d/" % srv.getsockname()[1])
            self.assertIn(b"502 Bad Gateway", r.stdout, answer)

    def test_refused_is_502(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        r = self.curl("-i", "-x", self.p.url(), "http://allowed.test:%d/" % port)
        self.assertIn(b"502 Bad Gateway", r.stdout)
        d = self.p.wait_audit(lambda l: l)[0]
        self.assertEqual(d["error"], "connect-refused")

    def test_keep_alive_decides_each_request(self):
        s = self.p.connect()
        results = []
        for host in ("allowed.test", "bad.wild.test", "a.wild.test", "nope.example"):
            s.sendall(b"GET http://%s:%d/k HTTP/1.1\r\nHost: %s:%d\r\n\r\n" %
                      (host.encode(), self.up.port, host.encode(), self.up.port))
            status, headers, body = read_http_response(s)
            results.append(status)
        self.assertEqual(results, [200, 403, 200, 403])
        s.close()
        lines = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l))
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual([e["decision"] for e in ds], ["allow", "deny", "allow", "deny"])
        self.assertEqual(len({e["id"] for e in ds}), 1)

    def test_host_header_without_port(self):
        s = self.p.connect()
        s.sendall(b"GET http://ALLOWED.test.:%d/p HTTP/1.1\r\nHost: allowed.test\r\n\r\n" % self.up.port)
        self.assertEqual(read_http_response(s)[0], 200)
        s.close()

    def test_upstream_keep_alive_reused(self):
        s = self.p.connect()
        for _ in range(3):
            s.sendall(b"GET http://allowed.test:%d/r HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" %
                      (self.up.port, self.up.port))
            self.assertEqual(read_http_response(s)[0], 200)
        s.close()
        self.assertEqual(self.up.connections, 1)
        ds = [e for e in self.p.wait_audit(lambda l: len(l) >= 4) if e["event"] == "decision"]
        self.assertEqual(len(ds), 3)

    def test_pipelined_requests(self):
        s = self.p.connect()
        req = b"GET http://allowed.test:%d/p HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" % (self.up.port, self.up.port)
        s.sendall(req * 3)
        f = s.makefile("rb")
        for _ in range(3):
            self.assertEqual(read_http_response_file(f)[0], 200)
        f.close()
        s.close()

    def test_http10_client_and_head(self):
        s = self.p.connect()
        s.sendall(b"GET http://allowed.test:%d/ten HTTP/1.0\r\n\r\n" % self.up.port)  # no Host: added upstream
        data = recv_until(s, b"\x00")  # until the proxy closes
        self.assertTrue(data.startswith(b"HTTP/1.1 200"), data)
        self.assertIn(b"Connection: close", data)
        body = json.loads(data.split(b"\r\n\r\n", 1)[1])
        self.assertEqual(body["host"], "allowed.test:%d" % self.up.port)
        s.close()
        s = self.p.connect()
        f = s.makefile("rb")
        for method in (b"HEAD", b"GET", b"HEAD"):
            s.sendall(b"%s http://allowed.test:%d/h HTTP/1.1\r\nHost: allowed.test:%d\r\n\r\n" %
                      (method, self.up.port, self.up.port))
            status, headers, body = read_http_response_file(f) if method == b"GET" else (None, None, None)
            if method == b"HEAD":
                line = f.readline()
                self.assertIn(b"200", line)
                while f.readline() not in (b"\r\n", b""):
                    pass
            else:
                self.assertEqual(status, 200)
                self.assertTrue(body)
        f.close()
        s.close()

    def test_thousands_of_pipelined_refusals(self):
        # Each refusal is answered on the same connection; the proxy must neither recurse nor buffer without end.
        n = 3000
        s = self.p.connect(timeout=30)
        req = b"GET http://nope.example/ HTTP/1.1\r\nHost: nope.example\r\n\r\n"
        sender = threading.Thread(target=lambda: s.sendall(req * n))
        sender.start()
        f = s.makefile("rb")
        count = 0
        while count < n:
            status, _, _ = read_http_response_file(f)
            self.assertEqual(status, 403)
            count += 1
        sender.join()
        f.close()
        s.close()
        self.assertIsNone(self.p.proc.poll())
        self.assertEqual(len(self.p.wait_audit(lambda l: len(l) >= n + 1)), n + 1)

    def test_chunked_and_eof_delimited_responses(self):
        r = self.get("allowed.test", "/chunked")
        self.assertTrue(r.stdout.endswith(b"hello chunked world"), r.stdout)
        r = self.get("allowed.test", "/eof")
        self.assertTrue(r.stdout.endswith(b"until-eof"), r.stdout)
        r = self.curl("-I", "-x", self.p.url(), "http://allowed.test:%d/" % self.up.port)
        self.assertIn(b"200 OK", r.stdout)

    def test_large_bodies_both_ways(self):
        size = 50 * 1024 * 1024
        path = os.path.join(self.dir, "big")
        block = os.urandom(1 << 20)
        with open(path, "wb") as f:
            for _ in range(size // len(block)):
                f.write(block)
        with open(path, "rb") as f:
            want = hashlib.sha256(f.read()).hexdigest()
        url = "http://allowed.test:%d/echo" % self.up.port
        r = self.curl("-x", self.p.url(), "--data-binary", "@" + path, url, timeout=60)
        self.assertEqual(json.loads(r.stdout), {"sha256": want, "length": size}, r.stderr)
        r = self.curl("-x", self.p.url(), "-H", "Transfer-Encoding: chunked", "--data-binary", "@" + path, url,
                      timeout=60)
        self.assertEqual(json.loads(r.stdout), {"sha256": want, "length": size}, r.stderr)
        out = os.path.join(self.dir, "down")
        r = self.curl("-x", self.p.url(), "-o", out, "http://allowed.test:%d/size/%d" % (self.up.port, size),
                      timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.path.getsize(out), size)
        c = [e for e in self.p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) >= 3)
             if e["event"] == "close"]
        self.assertGreaterEqual(max(e["bytes_up"] for e in c), size)
        self.assertGreaterEqual(max(e["bytes_down"] for e in c), size)


class SmugglingTest(TempDirTest):
    """Request shapes that let a front and a back parser disagree: 400 with a reason, nothing forwarded."""

    def setUp(self):
        super().setUp()
        self.up = self.upstream()
        self.dns_server = self.dns({"allowed.test": ["127.0.0.1"]})
        self.p = self.proxy(["--allow-domain", "allowed.test", *LOOPBACK], dns=self.dns_server)

    def send(self, raw):
        s = self.p.connect()
        s.sendall(raw)
        status, headers, body = read_http_response(s)
        s.close()
        return status, headers, body

    def check(self, raw, why):
        status, headers, body = self.send(raw)
        self.assertEqual(status, 400, body)
        self.assertIn(why, body.decode().lower())
        self.assertEqual(headers.get("connection"), "close")

    def test_shapes(self):
        h = b"POST http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:%d\r\n" % (self.up.port, self.up.port)
        self.check(h + b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", "transfer-encoding")
        self.check(h + b"Content-Length: 3\r\nContent-Length: 4\r\n\r\nabcd", "content-length")
        self.check(h + b"Content-Length: 3\r\nContent-Length: 3\r\n\r\nabc", "content-length")
        self.check(h + b"Content-Length: 3x\r\n\r\nabc", "content-length")
        self.check(h + b"Content-Length : 3\r\n\r\nabc", "header")
        self.check(h + b"X-Thing : 3\r\n\r\n", "whitespace before the colon")
        self.check(h + b"X-A\x01: b\r\n\r\n", "header")
        self.check(h + b"X-A: b\x7f\r\n\r\n", "header")
        self.check(h + b"X-A: a\r\n folded\r\n\r\n", "folding")
        self.check(h + b"Transfer-Encoding: gzip\r\n\r\nabc", "transfer-encoding")
        self.check(b"GET http://allowed.test:%d/ HTTP/1.1\r\nHost: evil.example\r\n\r\n" % self.up.port,
                   "names another host")
        self.check(b"GET http://allowed.test:%d/ HTTP/1.1\r\nHost: allowed.test:1\r\n\r\n" % self.up.port,
                   "names another host")
        self.check(b"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n", "origin-form")
        self.check(b"GARBAGE\r\n\r\n", "bad request")
        self.assertEqual(self.up.requests, [])

    def test_mutated_requests_never_crash(self):
        import random
        rnd = random.Random(7)
        base = (b"POST http://allowed.test:%d/echo HTTP/1.1\r\nHost: allowed.test:%d\r\nContent-Length: 5\r\n"
                b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" % (self.up.port, self.up.port))
        for i in range(300):
            data = bytearray(base)
            for _ in range(rnd.randint(1, 8)):
                op = rnd.randint(0, 2)
                pos = rnd.randrange(len(data))
                if op == 0:
                    data[pos] = rnd.getrandbits(8)
                elif op == 1:
                    del data[pos:pos + rnd.randint(1, 10)]
                else:
                    data[pos:pos] = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 10)))
            s = self.p.connect(timeout=5)
            try:
                s.sendall(bytes(data))
                s.shutdown(socket.SHUT_WR)
                while s.recv(65536):
                    pass
            except OSError:
                pass
            s.close()
        self.assertIsNone(self.p.proc.poll())
        r = self.curl("-i", "-x", self.p.url(), "http://allowed.test:%d/" % self.up.port)
        self.assertIn(b"200 OK", r.stdout)


class ConnectTlsTest(TempDirTest):
    def test_curl_https_through_connect(self):
        cert, key = make_cert(self.dir, ["tls.test"])
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(cert, key)
        up = self.upstream(name="tls", tls=ctx)
        dns = self.dns({"tls.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "tls.test", *LOOPBACK], dns=dns)
        r = self.curl("-x", p.url(), "--cacert", cert, "https://tls.test:%d/secure" % up.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(json.loads(r.stdout)["path"], "/secure")
        d = p.wait_audit(lambda l: any(e["event"] == "close" for e in l))
        self.assertEqual(d[0]["proto"], "connect")
        self.assertEqual(d[0]["method"], "CONNECT")
        # denied CONNECT
        r = self.curl("-i", "-x", p.url(), "--cacert", cert, "https://other.test:%d/" % up.port)
        self.assertIn(b"403", r.stdout + r.stderr)


class GuardTest(TempDirTest):
    """Names that resolve to the host or its networks are refused unless --allow-address covers the address."""

    def setUp(self):
        super().setUp()
        self.up = self.upstream()
        self.dns_server = self.dns({
            "rebind.g.test": ["127.0.0.1"],
            "metadata.g.test": ["169.254.169.254"],
            "private.g.test": ["10.1.2.3"],
            "mapped.g.test": ["::ffff:127.0.0.1"],
            "mixed.g.test": ["169.254.169.254", "127.0.0.1"],
            "fallback.g.test": ["127.0.0.2", "127.0.0.1"],
        })

    def test_rebinding_to_loopback_and_metadata_refused(self):
        p = self.proxy(["--allow-domain", "*.g.test"], dns=self.dns_server)
        for host in ("rebind.g.test", "metadata.g.test", "private.g.test", "mapped.g.test"):
            r = self.curl("-i", "-x", p.url(), "http://%s:%d/" % (host, self.up.port))
            self.assertIn(b"403 Forbidden", r.stdout, host)
            self.assertIn(b"X-Proxy-Error: blocked-by-address-guard", r.stdout, host)
        self.assertEqual(self.up.connections, 0, "the upstream must never see a connection")
        # SOCKS5 too
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % p.port, "http://rebind.g.test:%d/" % self.up.port)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(self.up.connections, 0)
        ds = p.wait_audit(lambda l: sum(e["event"] == "decision" for e in l) >= 5)
        ds = [e for e in ds if e["event"] == "decision"]
        self.assertTrue(all(e["reason"] == "blocked-by-address-guard" for e in ds), ds)
        self.assertEqual((ds[0]["upstream_ip"], ds[0]["error"]), ("127.0.0.1", "address-guard: loopback"))
        self.assertEqual((ds[1]["upstream_ip"], ds[1]["error"]), ("169.254.169.254", "address-guard: link-local"))
        # An IP literal allowed by a rule naming it is still guarded.
        p2 = self.proxy(["--allow-domain", "127.0.0.1"], dns=self.dns_server)
        r = self.curl("-i", "-x", p2.url(), "http://127.0.0.1:%d/" % self.up.port)
        self.assertIn(b"blocked-by-address-guard", r.stdout)
        self.assertEqual(self.up.connections, 0)

    def test_mixed_answers_use_only_good_addresses(self):
        p = self.proxy(["--allow-domain", "*.g.test", "--allow-address", "127.0.0.1/32"], dns=self.dns_server)
        r = self.curl("-i", "-x", p.url(), "http://mixed.g.test:%d/" % self.up.port)
        self.assertIn(b"200 OK", r.stdout)
        d = p.wait_audit(lambda l: l)[0]
        self.assertEqual(d["upstream_ip"], "127.0.0.1")
        # 127.0.0.2 is guarded (only 127.0.0.1/32 allowed): dial goes to 127.0.0.1 only.
        r = self.curl("-i", "-x", p.url(), "http://fallback.g.test:%d/" % self.up.port)
        self.assertIn(b"200 OK", r.stdout)

    def test_dial_falls_back_to_next_good_address(self):
        p = self.proxy(["--allow-domain", "*.g.test", *LOOPBACK], dns=self.dns_server)
        r = self.curl("-i", "-x", p.url(), "http://fallback.g.test:%d/" % self.up.port)  # 127.0.0.2 refuses
        self.assertIn(b"200 OK", r.stdout)

    def test_proxy_itself_refused(self):
        p = self.proxy(["--allow-domain", "127.0.0.1", *LOOPBACK], dns=self.dns_server)
        r = self.curl("-i", "-x", p.url(), "http://127.0.0.1:%d/" % p.port)
        self.assertIn(b"403", r.stdout)
        self.assertIn(b"proxy-itself", r.stdout)


class TestHostTest(TempDirTest):
    """An upstream on a private address of a test host (a network namespace behind a veth pair): refused by the
    address guard unless --allow-address covers its range."""

    def setUp(self):
        super().setUp()
        if os.geteuid() != 0:
            self.skipTest("needs root for a network namespace")
        self.net = "10.201.%d" % (os.getpid() % 200 + 20)
        self.host = NetnsHost(self.net)
        self.cleanups.append(self.host.close)
        self.log = os.path.join(self.dir, "server.log")
        log_file = open(self.log, "ab")
        self.cleanups.append(log_file.close)
        self.host.start([sys.executable, "-m", "http.server", "--bind", self.net + ".2", "8080"], cwd=self.dir,
                        stdout=subprocess.DEVNULL, stderr=log_file)
        self.host.wait_for_ports(8080, timeout=10)
        time.sleep(0.1)
        self.log_start = os.path.getsize(self.log)  # after the readiness probe

    def test_private_upstream_needs_allow_address(self):
        dns = self.dns({"private.n.test": [self.net + ".2"]})
        p = self.proxy(["--allow-domain", "private.n.test"], dns=dns)
        r = self.curl("-i", "-x", p.url(), "http://private.n.test:8080/")
        self.assertIn(b"blocked-by-address-guard", r.stdout)
        self.assertIn(b"private", r.stdout)
        time.sleep(0.2)
        with open(self.log) as f:
            f.seek(self.log_start)
            self.assertEqual(f.read(), "", "the test host must see no request")
        p2 = self.proxy(["--allow-domain", "private.n.test", "--allow-address", self.net + ".0/24"], dns=dns)
        r = self.curl("-i", "-x", p2.url(), "http://private.n.test:8080/")
        self.assertIn(b"200 OK", r.stdout, r.stderr)
        time.sleep(0.2)
        with open(self.log) as f:
            f.seek(self.log_start)
            self.assertIn('"GET / HTTP/1.1" 200', f.read())  # the log does show requests that got through
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % p2.port, "http://private.n.test:8080/")
        self.assertEqual(r.returncode, 0, r.stderr)
        d = p2.wait_audit(lambda l: l)[0]
        self.assertEqual(d["upstream_ip"], self.net + ".2")
        # sandbox.network.allowedAddresses in a settings file does the same
        settings = os.path.join(self.dir, "s.json")
        with open(settings, "w") as f:
            json.dump({"sandbox": {"network": {"allowedDomains": ["private.n.test"],
                                               "allowedAddresses": [self.net + ".0/24"]}}}, f)
        p3 = self.proxy(["--settings", settings], dns=dns)
        r = self.curl("-i", "-x", p3.url(), "http://private.n.test:8080/")
        self.assertIn(b"200 OK", r.stdout, r.stderr)


class TimeoutTest(TempDirTest):
    def test_slow_upstream_is_504(self):
        silent = self.tcp("silent")
        dns = self.dns({"slow.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "slow.test", *LOOPBACK, "--idle-timeout", "1"], dns=dns)
        t = time.time()
        r = self.curl("-i", "-x", p.url(), "http://slow.test:%d/" % silent.port)
        self.assertIn(b"504 Gateway Timeout", r.stdout)
        self.assertLess(time.time() - t, 5)

    def test_dns_timeout_is_504(self):
        dns = self.dns({"mute.test": "DROP"})
        p = self.proxy(["--allow-domain", "mute.test"], dns=dns)
        r = self.curl("-i", "-x", p.url(), "http://mute.test/")
        self.assertIn(b"504 Gateway Timeout", r.stdout)
        d = p.wait_audit(lambda l: l)[0]
        self.assertEqual(d["error"], "dns-timeout")

    def test_connect_timeout_is_504(self):
        # A listener whose accept queue is full drops SYNs: connect() hangs.
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen(0)
        self.cleanups.append(s.close)
        fillers = []
        for _ in range(4):
            f = socket.socket()
            f.setblocking(False)
            try:
                f.connect(s.getsockname())
            except BlockingIOError:
                pass
            fillers.append(f)
            self.cleanups.append(f.close)
        time.sleep(0.2)
        dns = self.dns({"hang.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "hang.test", *LOOPBACK, "--connect-timeout", "1"], dns=dns)
        r = self.curl("-i", "-x", p.url(), "http://hang.test:%d/" % s.getsockname()[1])
        self.assertIn(b"504 Gateway Timeout", r.stdout)
        d = p.wait_audit(lambda l: l)[0]
        self.assertEqual(d["error"], "connect-timeout")


if __name__ == "__main__":
    unittest.main(verbosity=2)
