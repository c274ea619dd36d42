#!/usr/bin/env python3
"""cordon proxy under attack (issue 10): each test is one shape that once froze, desynchronised, bloated or went
unlogged, sent with raw sockets through a running `cordon proxy` to real upstreams on 127.0.0.1."""

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import LOOPBACK, wait_for, CORDON, TempDirTest, read_http_response, read_http_response_file, recv_until  # noqa: E402


class RawUpstream:
    """Accepts connections, records every byte each one sent, and writes `answer` once the first request head has
    arrived (then keeps the connection open until the peer closes)."""

    def __init__(self, answer):
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.received = []
        self.conns = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, c):
        data = b""
        answered = False
        idx = len(self.received)
        self.received.append(b"")
        try:
            while True:
                chunk = c.recv(65536)
                if not chunk:
                    return
                data += chunk
                self.received[idx] = data
                if not answered and b"\r\n\r\n" in data:
                    answered = True
                    c.sendall(self.answer)
        except OSError:
            pass

    def close(self):
        for c in self.conns:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


class AttackTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.up = self.upstream(name="web")
        self.dns_server = self.dns({"good.test": ["127.0.0.1"], "slow.test": ("DELAY", 1.0, ["127.0.0.1"])})

    def start(self, *extra):
        self.p = self.proxy(["--allow-domain", "good.test", "--allow-domain", "slow.test", *LOOPBACK, *extra],
                            dns=self.dns_server)
        return self.p

    def raw(self, answer):
        r = RawUpstream(answer)
        self.cleanups.append(r.close)
        return r

    def assert_alive(self):
        """The proxy still answers another client at once, and stops on SIGTERM."""
        s = self.p.connect(timeout=5)
        s.sendall(b"GET http://good.test:%d/alive HTTP/1.1\r\nHost: good.test:%d\r\n\r\n" % (self.up.port, self.up.port))
        self.assertEqual(read_http_response(s)[0], 200)
        s.close()

    # ---- defect 1: Upgrade and pipelined CONNECT froze the loop at 100% CPU

    def test_upgrade_request_is_refused_cleanly(self):
        self.start()
        s = self.p.connect(timeout=5)
        s.sendall(b"GET http://good.test:%d/hello HTTP/1.1\r\nHost: good.test:%d\r\nConnection: Upgrade\r\n"
                  b"Upgrade: websocket\r\n\r\nX" % (self.up.port, self.up.port))
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 501)
        self.assertIn(b"Upgrade", body)
        self.assertIn(b"CONNECT", body)
        self.assertEqual(s.recv(100), b"")  # then closed: what follows is not HTTP
        s.close()
        self.assert_alive()
        self.assertEqual(len(self.up.requests), 1)  # only the liveness probe reached the upstream
        d = self.p.wait_audit(lambda l: l)[0]
        self.assertEqual((d["decision"], d["reason"], d["status"]), ("deny", "bad-request", 501))
        self.assertEqual(self.p.stop(timeout=5), 0)

    def test_pipelined_connect_after_get(self):
        self.start()
        echo = self.tcp("echo")
        for target, expect in ((b"x.example:443", 403), (b"good.test:%d" % echo.port, 200)):
            s = self.p.connect(timeout=5)
            s.sendall(b"GET http://good.test:%d/a HTTP/1.1\r\nHost: good.test:%d\r\n\r\n"
                      b"CONNECT %s HTTP/1.1\r\n\r\nX" % (self.up.port, self.up.port, target))
            f = s.makefile("rb")
            self.assertEqual(read_http_response_file(f)[0], 200)
            line = f.readline()
            self.assertIn(b" %d " % expect, line)
            while f.readline() not in (b"\r\n", b""):
                pass
            if expect == 200:
                self.assertEqual(f.read(1), b"X")  # the byte behind CONNECT went through the tunnel
            f.close()
            s.close()
        self.assert_alive()
        self.assertEqual(self.p.stop(timeout=5), 0)

    def test_unrequested_101_is_named(self):
        self.start()
        r = self.raw(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\nraw")
        s = self.p.connect(timeout=5)
        s.sendall(b"GET http://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n\r\n" % (r.port, r.port))
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 502)
        self.assertIn(b"101", body)
        self.assertIn(b"switched protocols", body)
        self.assertNotIn(b"pause", body)
        s.close()

    # ---- defect 2: smuggling through Connection:

    def test_connection_content_length_does_not_unframe_the_body(self):
        self.start("--allow-domain", "denied-host.test")
        smuggled = b"GET /smuggled HTTP/1.1\r\nHost: denied.example\r\n\r\n"
        s = self.p.connect(timeout=5)
        s.sendall(b"POST http://good.test:%d/post HTTP/1.1\r\nHost: good.test:%d\r\nConnection: Content-Length\r\n"
                  b"Content-Length: %d\r\n\r\n%s" % (self.up.port, self.up.port, len(smuggled), smuggled))
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["length"], len(smuggled))
        s.close()
        time.sleep(0.2)
        self.assertEqual([r[1] for r in self.up.requests], ["/post"])

    def test_connection_host_keeps_host(self):
        self.start()
        s = self.p.connect(timeout=5)
        s.sendall(b"GET http://good.test:%d/h HTTP/1.1\r\nHost: good.test:%d\r\nConnection: Host, Transfer-Encoding\r\n"
                  b"\r\n" % (self.up.port, self.up.port))
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["host"], "good.test:%d" % self.up.port)
        s.close()

    def test_upstream_connection_content_length_does_not_desync_client(self):
        self.start()
        r = self.raw(b"HTTP/1.1 200 OK\r\nConnection: Content-Length\r\nContent-Length: 5\r\n\r\nhello"
                     b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nevil")
        s = self.p.connect(timeout=5)
        f = s.makefile("rb")
        s.sendall(b"GET http://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n\r\n" % (r.port, r.port))
        status, headers, body = read_http_response_file(f)
        self.assertEqual((status, body), (200, b"hello"))
        self.assertTrue("content-length" in headers or headers.get("transfer-encoding") == "chunked", headers)
        # The next request gets its own answer, not the upstream's stray bytes.
        s.sendall(b"GET http://good.test:%d/n HTTP/1.1\r\nHost: good.test:%d\r\n\r\n" % (self.up.port, self.up.port))
        status, headers, body = read_http_response_file(f)
        self.assertEqual(status, 200)
        self.assertEqual(json.loads(body)["path"], "/n")
        f.close()
        s.close()

    # ---- defect 3: the whole head is bounded

    def test_head_over_64k_is_431(self):
        self.start()
        s = self.p.connect(timeout=5)
        head = b"GET http://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n" % (self.up.port, self.up.port)
        head += b"".join(b"X-Fill-%d: %s\r\n" % (i, b"a" * 1000) for i in range(80))
        try:
            s.sendall(head + b"\r\n")
        except OSError:
            pass
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 431)
        self.assertIn(b"64 KiB", body)
        s.close()
        self.assertEqual(len(self.up.requests), 0)

    def test_many_half_read_heads_are_bounded_together(self):
        self.start()
        conns, refused = [], 0
        part = b"GET http://good.test/ HTTP/1.1\r\n" + b"".join(b"X-F%d: %s\r\n" % (i, b"b" * 1000) for i in range(60))
        for _ in range(320):  # 320 x 60 KiB is more than the 16 MiB all half-read heads may hold
            s = self.p.connect(timeout=5)
            s.sendall(part)
            conns.append(s)
        time.sleep(0.5)
        for s in conns:
            s.settimeout(0.05)
            try:
                data = s.recv(200)
                if data.startswith(b"HTTP/1.1 503"):
                    refused += 1
            except socket.timeout:
                pass
        self.assertGreater(refused, 0)
        self.assertLess(refused, 320)
        for s in conns:
            s.close()
        self.assert_alive()

    # ---- defect 5: audit gaps

    def test_tunnel_closed_by_idle_timeout_logs_its_bytes(self):
        self.start("--idle-timeout", "1", "--metrics", "127.0.0.1:0")
        echo = self.tcp("echo")
        s = self.p.connect()
        s.sendall(b"CONNECT good.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(s))
        s.sendall(b"y" * 1000)
        got = b""
        while len(got) < 1000:
            got += s.recv(4096)
        self.assertEqual(s.recv(10), b"")  # the idle timeout closed it
        s.close()
        lines = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l))
        c = [e for e in lines if e["event"] == "close"][0]
        self.assertEqual((c["error"], c["bytes_up"], c["bytes_down"]), ("idle-timeout", 1000, 1000))
        text = urllib.request.urlopen("http://127.0.0.1:%d/" % self.p.metrics_port, timeout=5).read().decode()
        self.assertIn('cordon_bytes_total{direction="up"} 1000', text)

    def test_tunnel_closed_by_drain_timeout_logs_its_bytes(self):
        self.start("--drain-timeout", "1")
        echo = self.tcp("echo")
        s = self.p.connect()
        s.sendall(b"CONNECT good.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(s))
        s.sendall(b"z" * 500)
        got = b""
        while len(got) < 500:
            got += s.recv(4096)
        self.assertEqual(self.p.stop(), 0)
        c = [e for e in self.p.audit() if e["event"] == "close"][0]
        self.assertEqual((c["bytes_up"], c["bytes_down"]), (500, 500))
        s.close()

    def test_407_on_keep_alive_carries_no_previous_rule(self):
        self.start("--auth-token", "s3cret")
        s = self.p.connect()
        s.sendall(b"GET http://good.test:%d/a HTTP/1.1\r\nHost: good.test:%d\r\nProxy-Authorization: Basic %s\r\n\r\n"
                  % (self.up.port, self.up.port, __import__("base64").b64encode(b"u:s3cret")))
        self.assertEqual(read_http_response(s)[0], 200)
        s.sendall(b"GET http://other.example/ HTTP/1.1\r\nHost: other.example\r\n\r\n")
        self.assertEqual(read_http_response(s)[0], 407)
        s.close()
        ds = self.p.wait_audit(lambda l: len([e for e in l if e["event"] == "decision"]) >= 2)
        ds = [e for e in ds if e["event"] == "decision"]
        self.assertEqual(ds[1]["reason"], "proxy-auth-required")
        self.assertEqual(ds[1]["host"], "other.example")
        self.assertIsNone(ds[1]["rule"])

    def test_every_malformed_request_and_socks_auth_failure_is_logged(self):
        self.start("--auth-token", "s3cret")
        auth = __import__("base64").b64encode(b"u:s3cret")
        s = self.p.connect()
        s.sendall(b"GET http://good.test:%d/a HTTP/1.1\r\nHost: good.test:%d\r\nProxy-Authorization: Basic %s\r\n\r\n"
                  % (self.up.port, self.up.port, auth))
        self.assertEqual(read_http_response(s)[0], 200)
        s.sendall(b"BROKEN REQUEST\r\n\r\n")
        self.assertEqual(read_http_response(s)[0], 400)
        s.close()
        s = self.p.connect()
        s.sendall(b"\x05\x01\x02")
        self.assertEqual(s.recv(2), b"\x05\x02")
        s.sendall(b"\x01\x01u\x03bad")
        self.assertEqual(s.recv(2), b"\x01\x01")
        s.close()
        lines = self.p.wait_audit(lambda l: len([e for e in l if e["event"] == "decision"]) >= 3)
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual([(e["proto"], e["reason"]) for e in ds],
                         [("http", "allowed"), ("http", "bad-request"), ("socks5", "proxy-auth-required")])
        self.assertEqual(ds[1]["status"], 400)
        self.assertEqual(ds[2]["status"], 1)

    # ---- defect 6: closed clients are noticed; no hold after a final answer; the metrics listener is bounded

    def test_client_closing_while_decided_is_noticed(self):
        self.start()
        sink = self.tcp("silent")
        s = self.p.connect()
        s.sendall(b"POST http://slow.test:%d/ HTTP/1.1\r\nHost: slow.test:%d\r\nContent-Length: 1000\r\n\r\nabc"
                  % (sink.port, sink.port))
        time.sleep(0.2)
        s.close()  # while the name is being resolved, with most of the body missing
        lines = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l), timeout=4)
        closes = [e for e in lines if e["event"] == "close"]
        self.assertTrue(closes, lines)
        self.assertIn("client closed", closes[0]["error"])
        # Its one decision line: allowed, and aborted before the dial finished.
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual(len(ds), 1, lines)
        self.assertEqual(ds[0]["decision"], "allow")
        self.assertTrue(ds[0]["error"].startswith("aborted"), ds[0])
        time.sleep(1.2)
        for c in sink.clients:  # any upstream connection made meanwhile is gone too
            c.settimeout(2)
            self.assertEqual(c.recv(10), b"")

    def test_socks5_client_closing_while_decided_is_noticed(self):
        self.start()
        sink = self.tcp("silent")
        s = self.p.connect()
        s.sendall(b"\x05\x01\x00")
        self.assertEqual(s.recv(2), b"\x05\x00")
        name = b"slow.test"
        s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + struct.pack(">H", sink.port))
        time.sleep(0.2)
        s.close()  # while the name is being resolved: no reply can reach it, no tunnel is worth making
        lines = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l), timeout=4)
        closes = [e for e in lines if e["event"] == "close"]
        self.assertTrue(closes, lines)
        self.assertIn("client closed", closes[0]["error"])
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual(len(ds), 1, lines)
        self.assertEqual((ds[0]["proto"], ds[0]["decision"]), ("socks5", "allow"))
        self.assertTrue(ds[0]["error"].startswith("aborted"), ds[0])
        time.sleep(1.2)
        for c in sink.clients:
            c.settimeout(2)
            self.assertEqual(c.recv(10), b"")
        self.assert_alive()

    def test_no_hold_after_400_and_407(self):
        self.start("--auth-token", "s3cret")
        for n, request in enumerate((b"BROKEN\r\n\r\n", b"GET http://good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n")):
            s = self.p.connect()
            s.sendall(request)
            self.assertIn(read_http_response(s)[0], (400, 407))
            # The client keeps its end open; the proxy closes its own (the close line) soon after the answer.
            lines = self.p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) > n, timeout=2.5)
            self.assertEqual(sum(e["event"] == "close" for e in lines), n + 1, lines)
            s.close()

    def test_client_gone_after_final_answer_is_closed_at_once(self):
        # A client that reads its 407 (or 400) and closes or resets: the proxy notices at once, instead of
        # holding the connection until its linger timer (which took 5 s under the default timeouts).
        self.start("--auth-token", "s3cret")
        requests = (b"GET http://good.test/ HTTP/1.1\r\nHost: good.test\r\n\r\n", b"BROKEN\r\n\r\n")
        for n, (request, reset) in enumerate([(r, reset) for r in requests for reset in (False, True)]):
            s = self.p.connect()
            s.sendall(request)
            self.assertIn(read_http_response(s)[0], (400, 407))
            if reset:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.close()
            lines = self.p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) > n, timeout=0.6)
            self.assertEqual(sum(e["event"] == "close" for e in lines), n + 1, (request, reset, lines))

    def test_sigterm_does_not_wait_for_a_lingering_client(self):
        self.start("--auth-token", "s3cret")
        s = self.p.connect()
        s.sendall(b"BROKEN\r\n\r\n")
        self.assertEqual(read_http_response(s)[0], 400)
        t = time.time()
        self.assertEqual(self.p.stop(), 0)
        self.assertLess(time.time() - t, 1.5)
        s.close()

    def test_metrics_listener_is_bounded(self):
        self.start("--metrics", "127.0.0.1:0")
        idle = []
        for _ in range(100):
            idle.append(socket.create_connection(("127.0.0.1", self.p.metrics_port), timeout=5))
        time.sleep(0.3)
        closed = 0
        for s in idle:
            s.settimeout(0.05)
            try:
                if s.recv(10) == b"":
                    closed += 1
            except socket.timeout:
                pass
        self.assertGreater(closed, 0)  # over the cap: closed at once
        # The idle ones are closed by the listener's idle timeout.
        for s in idle:
            s.settimeout(15)
            try:
                self.assertEqual(s.recv(10), b"")
            except ConnectionResetError:
                pass
            s.close()
        text = urllib.request.urlopen("http://127.0.0.1:%d/" % self.p.metrics_port, timeout=5).read().decode()
        self.assertIn("cordon_connections_active", text)

    # ---- defect 8: clear messages

    def test_more_than_256_headers_says_so(self):
        self.start()
        s = self.p.connect(timeout=5)
        head = b"GET http://good.test:%d/ HTTP/1.1\r\nHost: good.test:%d\r\n" % (self.up.port, self.up.port)
        head += b"".join(b"X-%d: 1\r\n" % i for i in range(300))
        s.sendall(head + b"\r\n")
        status, headers, body = read_http_response(s)
        self.assertEqual(status, 400)
        self.assertIn(b"more than 256 header lines", body)
        self.assertNotIn(b"callback", body)
        s.close()


class NoPolicyTest(TempDirTest):
    def test_start_without_any_policy_says_so(self):
        p = self.proxy([])
        self.assertTrue(wait_for(lambda: "no policy" in p.stderr()), p.stderr())
        self.assertIn("every request will be refused", p.stderr())


if __name__ == "__main__":
    unittest.main(verbosity=2)
