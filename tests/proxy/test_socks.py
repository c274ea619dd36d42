#!/usr/bin/env python3
"""cordon proxy, SOCKS5 front-end and tunnels: curl socks5h://, raw-socket edge cases, half-close, big tunnels."""

import hashlib
import os
import re
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import LOOPBACK, TempDirTest, recv_all, recv_until  # noqa: E402


def socks_request(host, port, cmd=1):
    try:
        packed = socket.inet_pton(socket.AF_INET, host)
        addr = b"\x01" + packed
    except OSError:
        try:
            addr = b"\x04" + socket.inet_pton(socket.AF_INET6, host)
        except OSError:
            addr = b"\x03" + bytes([len(host)]) + host.encode()
    return b"\x05" + bytes([cmd]) + b"\x00" + addr + struct.pack("!H", port)


def recv_exact(s, n):
    data = b""
    while len(data) < n:
        chunk = s.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


class SocksTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.up = self.upstream(name="web")
        self.echo = self.tcp("echo")
        self.count = self.tcp("count")
        self.dns_server = self.dns({"web.s.test": ["127.0.0.1"], "gone.s.test": "NXDOMAIN",
                                    "bad.s.test": ["127.0.0.1"], "v6.s.test": ["::1"]})
        self.p = self.proxy(["--allow-domain", "*.s.test", "--deny-domain", "bad.s.test", "--allow-domain", "127.0.0.1",
                             "--allow-domain", "[::1]", *LOOPBACK, "--allow-address", "::1/128"], dns=self.dns_server)

    def handshake(self, s):
        s.sendall(b"\x05\x01\x00")
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")

    def reply(self, s):
        head = recv_exact(s, 4)
        self.assertEqual(len(head), 4, "no SOCKS5 reply")
        atyp = head[3]
        rest = recv_exact(s, {1: 4, 4: 16}.get(atyp, 4) + 2)
        return head[1], rest

    def test_curl_socks5h(self):
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % self.p.port, "http://web.s.test:%d/via-socks" % self.up.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(b"/via-socks", r.stdout)
        d = self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l))
        self.assertEqual((d[0]["proto"], d[0]["host"], d[0]["decision"]), ("socks5", "web.s.test", "allow"))

    def test_policy_refusal_is_0x02(self):
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("bad.s.test", self.up.port))
        self.assertEqual(self.reply(s)[0], 0x02)
        s.close()
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("elsewhere.example", 80))
        self.assertEqual(self.reply(s)[0], 0x02)
        s.close()
        self.assertEqual(self.up.connections, 0)
        ds = [e for e in self.p.wait_audit(lambda l: sum(e["event"] == "decision" for e in l) >= 2)
              if e["event"] == "decision"]
        self.assertEqual([e["reason"] for e in ds], ["blocked-by-denylist", "blocked-by-allowlist"])

    def test_bind_udp_and_address_type(self):
        for cmd in (2, 3):
            s = self.p.connect()
            self.handshake(s)
            s.sendall(socks_request("web.s.test", 80, cmd))
            self.assertEqual(self.reply(s)[0], 0x07)
            s.close()
        s = self.p.connect()
        self.handshake(s)
        s.sendall(b"\x05\x01\x00\x09\x01\x02")
        self.assertEqual(recv_exact(s, 2), b"\x05\x08")
        s.close()
        s = self.p.connect()
        s.sendall(b"\x05\x01\x80")  # only a method we do not offer
        self.assertEqual(recv_exact(s, 2), b"\x05\xff")
        s.close()

    def test_nxdomain_and_refused(self):
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("gone.s.test", 80))
        self.assertEqual(self.reply(s)[0], 0x04)
        s.close()
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
        probe.close()
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("web.s.test", port))
        self.assertEqual(self.reply(s)[0], 0x05)
        s.close()

    def test_byte_at_a_time_client(self):
        s = self.p.connect()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for b in b"\x05\x01\x00":
            s.sendall(bytes([b]))
            time.sleep(0.005)
        self.assertEqual(recv_exact(s, 2), b"\x05\x00")
        for b in socks_request("web.s.test", self.echo.port) + b"ping":
            s.sendall(bytes([b]))
            time.sleep(0.005)
        code, bound = self.reply(s)
        self.assertEqual(code, 0)
        self.assertEqual(recv_exact(s, 4), b"ping")  # bytes sent behind the request reach the upstream
        s.close()

    def test_ip_literals_v4_and_v6(self):
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("127.0.0.1", self.echo.port))
        self.assertEqual(self.reply(s)[0], 0)
        s.sendall(b"v4")
        self.assertEqual(recv_exact(s, 2), b"v4")
        s.close()
        try:
            echo6 = self.tcp("echo", host="::1")
        except OSError:
            self.skipTest("no IPv6 loopback")
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("::1", echo6.port))
        self.assertEqual(self.reply(s)[0], 0)
        s.sendall(b"v6")
        self.assertEqual(recv_exact(s, 2), b"v6")
        s.close()
        # and a name with only an AAAA answer
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("v6.s.test", echo6.port))
        self.assertEqual(self.reply(s)[0], 0)
        s.close()

    def test_half_close_socks_and_connect(self):
        payload = os.urandom(300000)
        want = b"got %d %s" % (len(payload), hashlib.sha256(payload).hexdigest().encode())
        s = self.p.connect()
        self.handshake(s)
        s.sendall(socks_request("web.s.test", self.count.port))
        self.assertEqual(self.reply(s)[0], 0)
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)  # the upstream answers only after it sees EOF
        self.assertEqual(recv_all(s), want)
        s.close()
        s = self.p.connect()
        s.sendall(b"CONNECT web.s.test:%d HTTP/1.1\r\nHost: web.s.test:%d\r\n\r\n" % (self.count.port, self.count.port))
        self.assertIn(b" 200 ", recv_until(s))
        s.sendall(payload)
        s.shutdown(socket.SHUT_WR)
        self.assertEqual(recv_all(s), want)
        s.close()

    def test_big_tunnel_both_ways(self):
        size = 50 * 1024 * 1024
        s = self.p.connect(timeout=60)
        s.sendall(b"CONNECT web.s.test:%d HTTP/1.1\r\n\r\n" % self.echo.port)
        self.assertIn(b" 200 ", recv_until(s))
        block = os.urandom(1 << 20)
        import threading
        got = hashlib.sha256()
        received = [0]

        def reader():
            while received[0] < size:
                data = s.recv(1 << 20)
                if not data:
                    break
                got.update(data)
                received[0] += len(data)

        t = threading.Thread(target=reader)
        t.start()
        sent = hashlib.sha256()
        for _ in range(size // len(block)):
            s.sendall(block)
            sent.update(block)
        t.join(60)
        self.assertEqual(received[0], size)
        self.assertEqual(got.hexdigest(), sent.hexdigest())
        s.close()
        c = [e for e in self.p.wait_audit(lambda l: any(e["event"] == "close" for e in l)) if e["event"] == "close"]
        self.assertEqual((c[0]["bytes_up"], c[0]["bytes_down"]), (size, size))

    def test_garbage_never_crashes(self):
        import random
        rnd = random.Random(3)
        for i in range(200):
            s = self.p.connect()
            first = b"\x05" if i % 2 else b""
            s.sendall(first + bytes(rnd.getrandbits(8) for _ in range(rnd.randint(1, 300))))
            s.shutdown(socket.SHUT_WR)
            s.settimeout(5)
            try:
                recv_all(s)
            except OSError:
                pass
            s.close()
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % self.p.port, "http://web.s.test:%d/" % self.up.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIsNone(self.p.proc.poll())


class ListenTest(TempDirTest):
    def test_ipv6_and_two_listeners(self):
        up = self.upstream()
        dns = self.dns({"six.s.test": ["127.0.0.1"]})
        try:
            socket.create_server(("::1", 0), family=socket.AF_INET6).close()
        except OSError:
            self.skipTest("no IPv6 loopback")
        p = self.proxy(["--listen", "127.0.0.1:0", "--allow-domain", "six.s.test", *LOOPBACK], dns=dns,
                       listen="[::1]:0")
        deadline = time.time() + 5
        while True:  # the second listener is announced just after the first
            ports = [int(x) for x in re.findall(r"listening on [^\s]*:(\d+)", p.stderr())]
            if len(ports) == 2 or time.time() > deadline:
                break
            time.sleep(0.01)
        self.assertEqual(len(ports), 2)
        self.assertIn("listening on [::1]:", p.stderr())
        r = self.curl("-x", "http://[::1]:%d" % ports[0], "http://six.s.test:%d/" % up.port)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % ports[1], "http://six.s.test:%d/" % up.port)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
