#!/usr/bin/env python3
"""Attacks on the one HTTP/1.1 forwarder (proxy/http_forwarder.hpp) through an inspected tunnel, as a jailed
client and a hostile upstream would: pipelining past a request rule, a client that sends refused requests and
never reads the answers, an HTTP/1.0 request framed by chunks, Connection naming Host or Authorization,
Expect: 100-continue with a request behind it, responses whose framing a client may read otherwise. Each test
fails while its hole is open."""

import os
import socket
import ssl
import struct
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import proxytest  # noqa: E402
from proxytest import read_http_response, read_http_response_file, wait_for  # noqa: E402
import test_inspect  # noqa: E402
from test_inspect import InspectBase, ThreadedServer, tls_server_context  # noqa: E402


class RawTlsUpstream(ThreadedServer):
    """A TLS upstream that records every byte it reads (`received`, per connection) and answers each request
    head with `answer(head)` (bytes), read to the blank line; bodies are read by Content-Length only."""

    def __init__(self, context, answer):
        self.context = context
        self.answer = answer
        self.received = []
        super().__init__()

    def _serve(self, raw):
        try:
            conn = self.context.wrap_socket(raw, server_side=True)
            seen = bytearray()
            self.received.append(seen)
            conn.settimeout(5)
            buf = b""
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    seen += chunk
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                conn.sendall(self.answer(head))
        except (OSError, ssl.SSLError):
            pass


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class ForwarderReviewTest(InspectBase):
    def request(self, method, path, extra=b"", version=b"1.1"):
        return b"%s %s HTTP/%s\r\nHost: api.test:%d\r\n%s\r\n" % (
            method.encode(), path.encode(), version, self.up.port, extra)

    def test_a_denied_request_pipelined_behind_an_allowed_one_never_reaches_the_upstream(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.sendall(self.request("GET", "/repos/acme/a") + self.request("GET", "/public/secret") +
                  self.request("POST", "/public/x", b"Content-Length: 0\r\n"))
        f = t.makefile("rb")
        statuses = [read_http_response_file(f)[0] for _ in range(3)]
        self.assertEqual(statuses, [200, 403, 200])
        self.assertEqual([r[1] for r in self.up.requests], ["/repos/acme/a", "/public/x"])

    def test_ten_thousand_pipelined_refusals_each_answered_and_logged_once(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        n = 10000
        answers = []

        def read():
            f = t.makefile("rb")
            try:
                for _ in range(n):
                    answers.append(read_http_response_file(f)[0])
            except (OSError, EOFError, ValueError):
                pass

        reader = threading.Thread(target=read)
        reader.start()
        t.sendall(self.request("GET", "/public/secret") * n)
        reader.join(60)
        self.assertEqual(len(answers), n)
        self.assertEqual(set(answers), {403})
        self.assertEqual(p.proc.poll(), None)
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "https") >= n, timeout=20)
        self.assertEqual(sum(1 for e in lines if e.get("proto") == "https" and e["status"] == 403), n)
        self.assertEqual(self.up.requests, [])

    def test_a_client_that_never_reads_its_refusals_does_not_grow_the_proxy_without_bound(self):
        # The attack: pipelined refused requests (about 40 bytes each, answered by the proxy itself with about
        # 300) and never a byte read back. Were the client read while its answers queue up, the proxy's memory
        # would grow by several times what the client sends, for every client at once.
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.settimeout(2)
        before = rss_kib(p.proc.pid)
        one = self.request("GET", "/public/secret")
        batch = one * (1024 * 1024 // len(one))
        sent = 0
        try:
            for _ in range(64):  # up to 64 MiB of requests
                t.sendall(batch)
                sent += len(batch)
        except (socket.timeout, OSError, ssl.SSLError):
            pass  # the proxy stopped reading: what is wanted
        time.sleep(0.5)
        grown = rss_kib(p.proc.pid) - before
        self.assertLess(sent, 64 << 20, "the proxy read 64 MiB of requests whose answers nobody read")
        # An AddressSanitizer build keeps freed memory resident (its quarantine, 256 MiB): there the bound
        # above (the proxy stopped reading) is what says it; the memory bound holds for the release build.
        with open(proxytest.CORDON, "rb") as f:
            sanitized = b"AddressSanitizer" in f.read()
        if not sanitized:
            self.assertLess(grown, 64 * 1024, "sent %d MiB, the proxy grew by %d MiB" % (sent >> 20, grown >> 10))
        self.assertEqual(p.proc.poll(), None)

    def test_an_http10_request_with_chunked_framing_is_not_forwarded_as_http10_chunked(self):
        # RFC 9112 6.1: a server reading Transfer-Encoding in an HTTP/1.0 request treats its framing as faulty
        # (nginx answers 400, Go's net/http ignores it and reads the body as the next request). The proxy's
        # body framing is its own: it must not hand the upstream a framing the upstream reads otherwise.
        cert, key = self.pki.leaf(["api.test"])
        raw = RawTlsUpstream(tls_server_context(cert, key),
                             lambda head: b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
        self.cleanups.append(raw.close)
        p = self.start()
        t = self.tunnel_to(p, "api.test", raw.port)
        t.sendall(b"POST /public/x HTTP/1.0\r\nHost: api.test:%d\r\nConnection: keep-alive\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n" % raw.port)
        status, _, _ = read_http_response(t)
        t.close()
        time.sleep(0.2)
        sent = b"".join(bytes(r) for r in raw.received)
        if status == 400:
            self.assertEqual(sent, b"")
            return
        first = sent.split(b"\r\n", 1)[0]
        self.assertFalse(first.endswith(b"HTTP/1.0") and b"transfer-encoding: chunked" in sent.lower(),
                         sent[:300])

    def test_connection_naming_host_or_authorization_keeps_host(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        t.sendall(self.request("GET", "/repos/acme/a", b"Connection: host, authorization\r\n"
                                                      b"Authorization: Bearer x\r\n"))
        status, _, _ = read_http_response(t)
        self.assertEqual(status, 200)
        method, path, headers = self.up.requests[0]
        self.assertIn("Host", headers)
        self.assertNotIn("Authorization", headers)  # the client named it hop-by-hop: its own choice

    def test_expect_continue_then_a_denied_request_behind_the_body(self):
        p = self.start()
        t = self.tunnel(p, "api.test")
        body = b"hello"
        t.sendall(self.request("POST", "/public/x", b"Expect: 100-continue\r\nContent-Length: 5\r\n"))
        f = t.makefile("rb")
        line = f.readline()
        if b" 100 " in line:
            f.readline()
        t.sendall(body + self.request("GET", "/public/secret"))
        first = read_http_response_file(f)[0] if b" 100 " in line else int(line.split()[1])
        self.assertEqual(first, 200)
        self.assertEqual(read_http_response_file(f)[0], 403)
        self.assertEqual([r[1] for r in self.up.requests], ["/public/x"])

    def test_responses_with_bodies_they_may_not_have_do_not_answer_the_next_request(self):
        # A hostile upstream: HEAD and 204 answers carrying bytes that look like the next response.
        smuggled = b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled"

        def answer(head):
            if head.startswith(b"HEAD"):
                return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled
            return b"HTTP/1.1 204 No Content\r\nContent-Length: %d\r\n\r\n" % len(smuggled) + smuggled

        cert, key = self.pki.leaf(["api.test"])
        raw = RawTlsUpstream(tls_server_context(cert, key), answer)
        self.cleanups.append(raw.close)
        p = self.start()
        for method in ("HEAD", "GET"):
            t = self.tunnel_to(p, "api.test", raw.port)
            t.sendall(b"%s /repos/acme/a HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (method.encode(), raw.port) * 2)
            got = b""
            t.settimeout(3)
            try:
                while True:
                    chunk = t.recv(65536)
                    if not chunk:
                        break
                    got += chunk
            except (OSError, ssl.SSLError):
                pass
            self.assertNotIn(b"smuggled", got)

    def test_a_304_with_content_length_and_no_body_is_answered_at_once(self):
        # RFC 9110 8.6: a 304 may carry the Content-Length of the representation it stands for, and has no
        # body. Read with a body of that length, it would hold the answer and eat the next response.
        cert, key = self.pki.leaf(["api.test"])
        raw = RawTlsUpstream(tls_server_context(cert, key),
                             lambda head: b"HTTP/1.1 304 Not Modified\r\nContent-Length: 100\r\n\r\n")
        self.cleanups.append(raw.close)
        p = self.start()
        t = self.tunnel_to(p, "api.test", raw.port)
        t.settimeout(3)
        f = t.makefile("rb")
        for _ in range(2):
            t.sendall(b"GET /repos/acme/a HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % raw.port)
            self.assertEqual(f.readline().split()[1], b"304")
            while f.readline() not in (b"\r\n", b""):
                pass

    def test_smuggling_shapes_never_put_a_denied_request_before_the_upstream(self):
        # Each shape carries a request for the denied /public/secret where some parser might read one; cordon
        # either refuses the shape, reads the hidden request itself (and refuses it), or frames it again as
        # body. The upstream (Python's http.server) must never serve it.
        p = self.start()
        port = self.up.port
        hidden = b"GET /public/secret HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % port
        head = b"POST /public/x HTTP/1.1\r\nHost: api.test:%d\r\n" % port
        n = b"%x" % len(hidden)
        shapes = {
            "cl-te": head + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
            "te-cl": head + b"Transfer-Encoding: chunked\r\nContent-Length: 60\r\n\r\n0\r\n\r\n" + hidden,
            "te-space": head + b"Transfer-Encoding : chunked\r\n\r\n0\r\n\r\n" + hidden,
            "te-tab": head + b"Transfer-Encoding:\tchunked\r\n\r\n0\r\n\r\n" + hidden,
            "te-xchunked": head + b"Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n" + hidden,
            "te-list": head + b"Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n" + hidden,
            "te-two": head + b"Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n0\r\n\r\n" + hidden,
            "cl-dup": head + b"Content-Length: 0\r\nContent-Length: %d\r\n\r\n" % len(hidden) + hidden,
            "cl-plus": head + b"Content-Length: +%d\r\n\r\n" % len(hidden) + hidden,
            "cl-comma": head + b"Content-Length: 0, %d\r\n\r\n" % len(hidden) + hidden,
            "chunk-overflow": head + b"Transfer-Encoding: chunked\r\n\r\n1" + b"0" * 16 + b"%s\r\n" % n + hidden
                              + b"\r\n0\r\n\r\n",
            "chunk-ext-crlf": head + b"Transfer-Encoding: chunked\r\n\r\n%s;a=\"\r\n\"\r\n" % n + hidden
                              + b"\r\n0\r\n\r\n",
            "chunk-bare-lf": head + b"Transfer-Encoding: chunked\r\n\r\n%s\n" % n + hidden + b"\n0\n\n",
            "trailer-headers": head + b"Transfer-Encoding: chunked\r\n\r\n0\r\nContent-Length: %d\r\n\r\n"
                               % len(hidden) + hidden,
            "bare-lf-head": head.replace(b"\r\n", b"\n") + b"Content-Length: 0\n\n" + hidden,
            "obs-fold": head + b"X-A: a\r\n Content-Length: %d\r\nContent-Length: 0\r\n\r\n" % len(hidden)
                        + hidden,
            "zero-chunk-early": head + b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + hidden,
        }
        for name, data in shapes.items():
            t = self.tunnel(p, "api.test")
            t.settimeout(2)
            t.sendall(data)
            try:
                while t.recv(65536):
                    pass
            except (OSError, ssl.SSLError):
                pass
            t.close()
            self.assertNotIn("/public/secret", [r[1] for r in self.up.requests], name)

    def test_a_client_reset_mid_body_or_mid_response_leaves_one_line(self):
        p = self.start()
        port = self.up.port
        t = self.tunnel(p, "api.test")
        t.sendall(b"POST /public/mid-body HTTP/1.1\r\nHost: api.test:%d\r\nContent-Length: 100000\r\n\r\n" % port
                  + b"x" * 1000)
        self.assertTrue(wait_for(lambda: "/public/mid-body" in [r[1] for r in self.up.requests]))
        t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        t.close()
        t = self.tunnel(p, "api.test")
        t.sendall(b"GET /repos/acme/bytes/50000000 HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % port)
        got = 0
        while got < 200000:
            got += len(t.recv(65536))
        t.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        t.close()
        lines = p.wait_audit(lambda l: sum(1 for e in l if e.get("proto") == "https") >= 2)
        time.sleep(0.5)
        inner = [(e["path"], e["decision"]) for e in p.audit() if e.get("proto") == "https"]
        self.assertEqual(sorted(inner), [("/public/mid-body", "allow"), ("/repos/acme/bytes/50000000", "allow")],
                         lines)

    def test_a_head_sent_slowly_inside_the_tunnel_meets_the_header_timeout(self):
        # Slowloris inside the tunnel: a byte of a request head every 0.3 s keeps the idle timer from firing,
        # and the connection (its TLS state, the head so far) is held for as long as the client likes. The
        # plain path closes a client that takes --header-timeout to send a head.
        p = self.start("--header-timeout", "1", "--idle-timeout", "2")
        t = self.tunnel(p, "api.test")
        head = self.request("GET", "/repos/acme/a", b"X-Pad: " + b"a" * 200 + b"\r\n")
        closed_after = None
        start = time.time()
        try:
            for i in range(len(head) - 4):
                t.sendall(head[i:i + 1])
                time.sleep(0.3)
                if time.time() - start > 6:
                    break
        except (OSError, ssl.SSLError):
            closed_after = time.time() - start
        self.assertIsNotNone(closed_after, "a head sent slowly held the connection for 6 s")
        self.assertLess(closed_after, 4)


@unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
class ReflectedSecretTest(InspectBase):
    """An inject host that hands the real value back in every place a response has: a 103's header, the reason
    phrase, chunk extensions, a value split across one-byte chunks, trailers, a Content-Encoding the proxy
    refuses. The jail must see the sentinel only."""

    run_jail = test_inspect.RunInspectTest.run_jail
    REAL = "ghp_" + "R3alT0kenValue" * 3

    def test_the_real_value_comes_back_in_no_part_of_a_response(self):
        def answer(head):
            token = b""
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"authorization: token "):
                    token = line.split(b" ", 2)[2]
            if b"/encoded" in head.split(b"\r\n")[0]:
                return b"HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: 2\r\n\r\nok" % token
            body = b"".join(b"1;x=%s\r\n%s\r\n" % (token, token[i:i + 1]) for i in range(len(token)))
            return (b"HTTP/1.1 103 Early Hints\r\nLink: <%s>\r\n\r\n"
                    b"HTTP/1.1 200 %s\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n"
                    b"%s0\r\nX-T: %s\r\n\r\n" % (token, token, body, token))

        cert, key = self.pki.leaf(["api.test"])
        raw = RawTlsUpstream(tls_server_context(cert, key), answer)
        self.cleanups.append(raw.close)
        url = "https://api.test:%d/repos/acme/" % raw.port
        r = self.run_jail("curl -sS --max-time 10 -i --raw -H \"Authorization: token $GITHUB_TOKEN\" %sa; echo; "
                          "curl -sS --max-time 10 -i -H \"Authorization: token $GITHUB_TOKEN\" %sencoded"
                          % (url, url), "--inspect", "api.test", "--secret", "GITHUB_TOKEN=api.test",
                          env={"GITHUB_TOKEN": self.REAL})
        sent = b"".join(bytes(x) for x in raw.received)
        self.assertIn(self.REAL.encode(), sent)  # the upstream had it
        self.assertIn(" 200 ", r.stdout)
        self.assertNotIn(self.REAL, r.stdout + r.stderr)
        self.assertNotIn(self.REAL[:40], r.stdout + r.stderr)
        with open(self.audit_path) as f:
            self.assertNotIn(self.REAL[:40], f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
