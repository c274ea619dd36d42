"""Load and fault tests for cordon (issue 15): many concurrent connections through `cordon proxy`, slowloris,
upstream faults, client faults, jail faults, an audit log on a full disk. Everything runs on loopback against
upstreams and a DNS server this file starts; the jail tests need root.

    python3 tests/stress/test_stress.py            # small bounds (what ctest runs)
    python3 tests/stress/test_stress.py --large    # 10,000 concurrent connections, more rounds
    python3 tests/stress/test_stress.py LoadTest   # one class (unittest's usual arguments)

CORDON_BIN names the binary (ctest passes the build's, the sanitized one in build-asan)."""

import asyncio
import multiprocessing
import os
import re
import resource
import secrets
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "proxy"))
from proxytest import (CORDON, LOOPBACK, TempDirTest, read_http_response, recv_all,  # noqa: E402
                       recv_until, wait_for)

LARGE = "--large" in sys.argv
if LARGE:
    sys.argv.remove("--large")

CONNECTIONS = 10_000 if LARGE else 600  # held open at once, a third each HTTP keep-alive, CONNECT, SOCKS5
ROUNDS = 4 if LARGE else 3
WORKERS = 4 if LARGE else 2  # client processes (each holds CONNECTIONS / WORKERS sockets)
PROXIES = 2  # proxy processes (the workers are spread over them)
REQUESTS = 3  # per keep-alive connection, per round


def _sanitized():
    try:
        with open(CORDON, "rb") as f:
            return b"__asan_init" in f.read()
    except OSError:
        return False


SANITIZED = _sanitized()


def raise_fd_limit(want):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want), max(hard, want)))  # root may raise both
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metric(proxy, name):
    text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % proxy.metrics_port, timeout=10).read().decode()
    m = re.search(r"^%s(?:\{[^}]*\})? (\d+)" % re.escape(name), text, re.M)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------------------------------------------- upstreams

def _upstream_main(queue, stop):
    """An asyncio process: an HTTP/1.1 keep-alive server answering each request with its path, and an echo
    server. Puts (http_port, echo_port) on `queue`, serves until `stop` is set."""
    raise_fd_limit(4 * CONNECTIONS + 1000)

    async def http(reader, writer):
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                path = line.split()[1]
                while (await reader.readline()) not in (b"\r\n", b""):
                    pass
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(path), path))
                await writer.drain()
        except (OSError, IndexError, asyncio.IncompleteReadError):
            pass
        writer.close()

    async def echo(reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        writer.close()

    async def main():
        h = await asyncio.start_server(http, "127.0.0.1", 0, backlog=4096)
        e = await asyncio.start_server(echo, "127.0.0.1", 0, backlog=4096)
        queue.put((h.sockets[0].getsockname()[1], e.sockets[0].getsockname()[1]))
        while not stop.is_set():
            await asyncio.sleep(0.1)
        h.close()
        e.close()

    asyncio.run(main())


# ---------------------------------------------------------------------------------------------------- clients

async def _read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split()[1])
    m = re.search(rb"(?i)content-length: *(\d+)", head)
    body = await reader.readexactly(int(m.group(1))) if m else b""
    return status, body


async def _one(kind, idx, ports, sem, opened, go, bad):
    """One client connection: open it and do one exchange (at most `sem` at a time: thousands of SYNs at once
    overflow the accept queue), report `opened`, wait until every connection is open (`go`), do more
    exchanges, close. Appends what went wrong to `bad`."""
    proxy_port, http_port, echo_port = ports
    w = None
    what = ("http", "connect", "socks")[kind]
    try:
        async with sem:
            r, w = await asyncio.open_connection("127.0.0.1", proxy_port)
            if kind == 0:  # HTTP keep-alive
                async def get(k):
                    path = b"/c%d-%d" % (idx, k)
                    w.write(b"GET http://up.test:%d%s HTTP/1.1\r\nHost: up.test:%d\r\n\r\n"
                            % (http_port, path, http_port))
                    status, body = await _read_response(r)
                    if (status, body) != (200, path):
                        raise ValueError("%r %r" % (status, body[:80]))
            else:
                if kind == 1:  # CONNECT
                    w.write(b"CONNECT up.test:%d HTTP/1.1\r\nHost: up.test:%d\r\n\r\n" % (echo_port, echo_port))
                    head = await r.readuntil(b"\r\n\r\n")
                    if not head.startswith(b"HTTP/1.1 200"):
                        raise ValueError(head[:80])
                else:  # SOCKS5 by name
                    w.write(b"\x05\x01\x00")
                    if await r.readexactly(2) != b"\x05\x00":
                        raise ValueError("greeting")
                    w.write(b"\x05\x01\x00\x03\x07up.test" + struct.pack(">H", echo_port))
                    reply = await r.readexactly(10)
                    if reply[1] != 0:
                        raise ValueError("reply %d" % reply[1])

                async def get(k):
                    msg = b"tunnel %d %d " % (idx, k) * 8
                    w.write(msg)
                    if await r.readexactly(len(msg)) != msg:
                        raise ValueError("wrong echo")
            await get(0)
        opened()
        await go.wait()
        for k in range(1, REQUESTS):
            await get(k)
    except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
        bad.append("%s %d: %r" % (what, idx, e))
        if not go.is_set():
            opened()
    finally:
        if w is not None:
            w.close()


def _client_main(first, count, ports, barrier, results):
    raise_fd_limit(2 * count + 1000)

    async def main():
        loop = asyncio.get_running_loop()
        go, all_open = asyncio.Event(), asyncio.Event()
        bad = []
        state = {"opened": 0}

        def opened():
            state["opened"] += 1
            if state["opened"] >= count:
                all_open.set()

        sem = asyncio.Semaphore(256)
        tasks = [asyncio.ensure_future(_one(i % 3, i, ports, sem, opened, go, bad))
                 for i in range(first, first + count)]
        await all_open.wait()
        # Every connection of every worker is open: the test reads the proxy's counters, then lets them go on.
        await loop.run_in_executor(None, barrier.wait)
        await loop.run_in_executor(None, barrier.wait)
        go.set()
        await asyncio.gather(*tasks)
        results.put((count - len(bad), bad[:20], len(bad)))

    asyncio.run(main())


class LoadTest(TempDirTest):
    """CONNECTIONS concurrent connections (HTTP keep-alive, CONNECT, SOCKS5), ROUNDS times: every answer right,
    every connection open at once, and the proxy's descriptors and memory back where they were."""

    def test_concurrent_connections_hold_and_leak_nothing(self):
        raise_fd_limit(4 * CONNECTIONS + 1000)
        ctx = multiprocessing.get_context("fork")
        queue, stop = ctx.Queue(), ctx.Event()
        upstream = ctx.Process(target=_upstream_main, args=(queue, stop), daemon=True)
        upstream.start()
        self.cleanups.append(lambda: (stop.set(), upstream.join(5), upstream.kill()))
        http_port, echo_port = queue.get(timeout=30)
        dns = self.dns({"up.test": ["127.0.0.1"]})
        # One proxy holds two descriptors per connection (client, upstream): with the usual hard limit of
        # 20,000 open files (which root in a container cannot raise) 10,000 need two proxies, as two jails
        # would have. The rounds and checks are per proxy.
        proxies = [self.proxy(["--allow-domain", "up.test", *LOOPBACK, "--metrics", "127.0.0.1:0",
                               "--max-connections", str(CONNECTIONS + 100), "--idle-timeout", "120"], dns=dns)
                   for _ in range(PROXIES)]
        samples = {p.proc.pid: [] for p in proxies}
        share = CONNECTIONS // WORKERS
        per_proxy = share * WORKERS // PROXIES
        for round_ in range(ROUNDS):
            barrier = ctx.Barrier(WORKERS + 1)
            results = ctx.Queue()
            workers = [ctx.Process(target=_client_main, daemon=True,
                                   args=(w * share, share, (proxies[w % PROXIES].port, http_port, echo_port),
                                         barrier, results))
                       for w in range(WORKERS)]
            for w in workers:
                w.start()
            barrier.wait(timeout=600)
            active = [metric(p, "cordon_connections_active") for p in proxies]
            peak_fds = [fd_count(p.proc.pid) for p in proxies]
            barrier.wait(timeout=60)
            totals = [results.get(timeout=600) for _ in workers]
            for w in workers:
                w.join(60)
            opened = sum(t[0] for t in totals)
            failures = [b for t in totals for b in t[1]]
            if any(t[2] for t in totals):
                errors = sorted({(e["proto"], e.get("error", "")) for p in proxies for e in p.decisions()
                                 if e.get("error")})
                self.fail("%d failed: %s; audit errors: %s" % (sum(t[2] for t in totals), failures, errors))
            self.assertEqual(opened, share * WORKERS)
            # All of them at once: each client connection was open in its proxy, with its upstream connection.
            self.assertGreaterEqual(sum(active), share * WORKERS, "round %d: %s" % (round_, active))
            self.assertGreaterEqual(min(peak_fds), 2 * per_proxy, peak_fds)
            for p in proxies:
                pid = p.proc.pid
                self.assertTrue(wait_for(lambda: metric(p, "cordon_connections_active") == 0, 60),
                                metric(p, "cordon_connections_active"))
                if samples[pid]:
                    first = samples[pid][0][0]
                    self.assertTrue(wait_for(lambda: fd_count(pid) <= first, 10), (fd_count(pid), samples))
                samples[pid].append((fd_count(pid), rss_kb(pid)))
        for pid, series in samples.items():
            fds = [s[0] for s in series]
            rss = [s[1] for s in series]
            # Descriptors: never above where the first round left them (a closing socket may still be counted
            # then). Memory: no growth after the first round has sized the allocator's pools (a leak of 1 KB per
            # connection would add CONNECTIONS KB per round).
            self.assertLessEqual(max(fds[1:]), fds[0], samples)
            if not SANITIZED:  # ASan's quarantine holds freed memory: there LeakSanitizer checks at exit instead
                self.assertLess(rss[-1] - rss[1], max(8 * 1024, rss[1] // 8), samples)
        for p in proxies:
            self.assertEqual([e for e in p.decisions() if e["decision"] != "allow"], [])
        print("\nload: %d concurrent connections (%d proxies, %s at the peak, %s descriptors) x %d rounds; "
              "after each round, descriptors %s, RSS KB %s"
              % (share * WORKERS, PROXIES, active, peak_fds, ROUNDS,
                 [[s[0] for s in v] for v in samples.values()], [[s[1] for s in v] for v in samples.values()]),
              file=sys.stderr)


# ---------------------------------------------------------------------------------------------------- slowloris

class SlowlorisTest(TempDirTest):
    def test_slow_heads_are_cut_off_while_others_are_served(self):
        up = self.upstream()
        dns = self.dns({"up.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "up.test", *LOOPBACK, "--header-timeout", "1"], dns=dns)
        slow = []
        for _ in range(50 if not LARGE else 2000):
            s = p.connect()
            s.sendall(b"GET http://up.test:%d/ HTTP/1.1\r\n" % up.port)
            slow.append(s)
        stop = threading.Event()

        def drip():
            while not stop.is_set():
                for s in slow:
                    try:
                        s.send(b"X")
                    except OSError:
                        pass
                time.sleep(0.2)
        t = threading.Thread(target=drip, daemon=True)
        t.start()
        try:
            # Normal clients are served while the slow ones hang on.
            served = 0
            deadline = time.time() + 1.5
            while time.time() < deadline:
                s = p.connect()
                s.sendall(b"GET http://up.test:%d/ok HTTP/1.1\r\nHost: up.test:%d\r\nConnection: close\r\n\r\n"
                          % (up.port, up.port))
                self.assertEqual(read_http_response(s)[0], 200)
                s.close()
                served += 1
            self.assertGreater(served, 5)
            # Every slow client is cut off by the header timeout: 408 then the close, though it keeps sending.
            for s in slow:
                s.settimeout(5)
                data = recv_all(s)
                self.assertTrue(data.startswith(b"HTTP/1.1 408"), data[:60])
        finally:
            stop.set()
            t.join()
            for s in slow:
                s.close()
        lines = p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) >= len(slow) + served, timeout=10)
        self.assertEqual(sum(e["event"] == "close" and e["error"] == "header-timeout" for e in lines), len(slow))


# ---------------------------------------------------------------------------------------------------- upstream faults

class FaultyUpstream:
    """A raw TCP server that reads a request head, then per `mode`: "reset-before" resets at once,
    "reset-mid" sends a head and half the body, then resets."""

    def __init__(self, mode):
        self.mode = mode
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            try:
                data = b""
                while b"\r\n\r\n" not in data:
                    chunk = c.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                if self.mode == "reset-mid":
                    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n" + b"x" * 50000)
                    time.sleep(0.1)
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
            c.close()

    def close(self):
        self.sock.close()


class UpstreamFaultTest(TempDirTest):
    def setUp(self):
        super().setUp()
        self.records = {}

    def start(self, records, *extra, ttl=60):
        warm = self.upstream()
        self.dnsd = self.dns(dict(records, **{"warm.test": ["127.0.0.1"]}), ttl=ttl)
        self.p = self.proxy(["--allow-domain", "*", *LOOPBACK, *extra], dns=self.dnsd)
        # One request first: the resolver's socket stays open from then on.
        self.assertEqual(self.get(b"warm.test", warm.port)[0], 200)
        self.assertTrue(wait_for(lambda: any(e["event"] == "close" for e in self.p.audit())))
        self.fds = fd_count(self.p.proc.pid)

    def audit(self, event=None):
        return [e for e in self.p.audit() if e["host"] != "warm.test" and event in (None, e["event"])]

    def wait_audit(self, event, n, timeout=5):
        wait_for(lambda: len(self.audit(event)) >= n, timeout)
        return self.audit(event)

    def get(self, host, port, path=b"/"):
        s = self.p.connect()
        s.sendall(b"GET http://%s:%d%s HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, port, path, host, port))
        try:
            return read_http_response(s)
        finally:
            s.close()

    def assert_nothing_leaked(self):
        self.assertTrue(wait_for(lambda: fd_count(self.p.proc.pid) <= self.fds, 10),
                        (fd_count(self.p.proc.pid), self.fds))

    def test_reset_before_the_response_is_a_502(self):
        up = FaultyUpstream("reset-before")
        self.cleanups.append(up.close)
        self.start({"up.test": ["127.0.0.1"]})
        for _ in range(20):
            self.assertEqual(self.get(b"up.test", up.port)[0], 502)
        closes = self.wait_audit("close", 20)
        self.assertEqual(len(closes), 20)
        self.assertTrue(all(e["error"] == "upstream-reset" for e in closes), closes)
        self.assert_nothing_leaked()

    def test_reset_mid_response_cuts_the_client(self):
        up = FaultyUpstream("reset-mid")
        self.cleanups.append(up.close)
        self.start({"up.test": ["127.0.0.1"]})
        for _ in range(10):
            s = self.p.connect()
            s.sendall(b"GET http://up.test:%d/ HTTP/1.1\r\nHost: up.test\r\n\r\n" % up.port)
            data = b""
            try:
                data = recv_all(s)
            except ConnectionResetError:
                pass
            s.close()
            # The head was forwarded; the body stops short and the connection ends: never a complete message.
            self.assertTrue(data.startswith(b"HTTP/1.1 200") or data == b"", data[:40])
            self.assertLess(len(data), 100000)
        closes = self.wait_audit("close", 10)
        self.assertEqual(len(closes), 10)
        self.assertTrue(all(e["error"].startswith("upstream") for e in closes), closes)
        self.assert_nothing_leaked()

    def test_refused_connection(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        self.start({"up.test": ["127.0.0.1"]})
        for _ in range(20):
            self.assertEqual(self.get(b"up.test", port)[0], 502)
        ds = self.wait_audit("decision", 20)
        self.assertEqual({e["error"] for e in ds}, {"connect-refused"})
        self.assert_nothing_leaked()

    def test_dns_timeout(self):
        self.start({"mute.test": "DROP"})
        results = []

        def one():
            results.append(self.get(b"mute.test", 80)[0])
        threads = [threading.Thread(target=one) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        self.assertEqual(results, [504] * 10)
        ds = self.wait_audit("decision", 10)
        self.assertEqual({e["error"] for e in ds}, {"dns-timeout"})
        self.assert_nothing_leaked()

    def test_answers_that_change_between_lookups(self):
        # A short TTL, and the name moves: from one upstream to another, then to an address the guard refuses
        # (a DNS rebinding attempt), then to nothing.
        a, b = self.upstream(name="a"), self.upstream(name="b", host="127.0.0.2")
        records = {"moving.test": ["127.0.0.1"]}
        self.start(records, ttl=1)
        port_for = {"127.0.0.1": a.port, "127.0.0.2": b.port}
        # Each upstream listens on its own port: the name stays on the port of `a`; `b` is found by its address.
        status, _, body = self.get(b"moving.test", a.port)
        self.assertEqual((status, b'"name": "a"' in body), (200, True))
        self.dnsd.records["moving.test"] = ["10.1.2.3"]
        time.sleep(1.3)
        status, _, _ = self.get(b"moving.test", a.port)
        self.assertEqual(status, 403)
        self.dnsd.records["moving.test"] = "NXDOMAIN"
        time.sleep(1.3)
        self.assertEqual(self.get(b"moving.test", a.port)[0], 502)
        self.dnsd.records["moving.test"] = ["127.0.0.2"]
        time.sleep(1.3)
        status, _, body = self.get(b"moving.test", port_for["127.0.0.2"])
        self.assertEqual((status, b'"name": "b"' in body), (200, True))
        ds = self.wait_audit("decision", 4)
        self.assertEqual([e["decision"] for e in ds], ["allow", "deny", "allow", "allow"], ds)
        self.assertEqual([e.get("error", "") for e in ds][2:], ["nxdomain", ""], ds)
        self.assertEqual(ds[1]["reason"], "blocked-by-address-guard")
        self.assertTrue(ds[1].get("error", "").startswith("address-guard"), ds[1])
        self.assertEqual([e["upstream_ip"] for e in ds][::3], ["127.0.0.1", "127.0.0.2"])
        self.assertEqual(ds[1]["upstream_ip"], "10.1.2.3")
        self.assert_nothing_leaked()


# ---------------------------------------------------------------------------------------------------- client faults

class ClientFaultTest(TempDirTest):
    def start(self, *extra):
        self.echo = self.tcp("echo")
        self.dnsd = self.dns({"up.test": ["127.0.0.1"]})
        self.p = self.proxy(["--allow-domain", "up.test", *LOOPBACK, *extra], dns=self.dnsd)
        # One tunnel first: the resolver's socket stays open from then on.
        s = self.p.connect()
        s.sendall(b"\x05\x01\x02\x01\x01x\x06s3cret\x05\x01\x00\x03\x07up.test" + struct.pack(">H", self.echo.port))
        self.assertEqual(recv_until(s, b"\x00\x01", 12)[:4], b"\x05\x02\x01\x00")
        s.close()
        self.assertTrue(wait_for(lambda: any(e["event"] == "close" for e in self.p.audit())))
        self.fds = fd_count(self.p.proc.pid)

    def vanish(self, s):
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        s.close()

    def closes(self, n, timeout=0.8):
        # Well below the proxy's own timeouts (header 30 s, idle 300 s, linger 1 s): noticed at once.
        lines = self.p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) >= n + 1, timeout=timeout)
        return [e for e in lines if e["event"] == "close"][1:]

    def test_vanishing_clients_are_noticed_at_once(self):
        self.start("--auth-token", "s3cret")
        auth = b"Proxy-Authorization: Basic " + __import__("base64").b64encode(b"x:s3cret") + b"\r\n"
        cases = [
            ("mid-tunnel", b"CONNECT up.test:%d HTTP/1.1\r\n" % self.echo.port + auth + b"\r\nping", b"ping"),
            ("mid-request head", b"GET http://up.test:%d/ HTTP/1.1\r\nHost: up" % self.echo.port, None),
            ("mid-request body", b"POST http://up.test:%d/ HTTP/1.1\r\nHost: up.test\r\n" % self.echo.port + auth +
             b"Content-Length: 100\r\n\r\nabc", None),
            ("mid-handshake", b"\x05\x02\x00", None),
            ("mid-handshake auth", b"\x05\x01\x02\x01\x01x", None),
            ("after 407", b"GET http://up.test/ HTTP/1.1\r\nHost: up.test\r\n\r\n", b"HTTP/1.1 407"),
        ]
        for n, (what, data, expect) in enumerate(cases * 2):
            s = self.p.connect()
            s.sendall(data)
            if expect:
                got = recv_until(s, expect)
                self.assertIn(expect, got, what)
            else:
                time.sleep(0.1)
            if n < len(cases):
                self.vanish(s)  # a reset
            else:
                s.close()  # an orderly close
            closes = self.closes(n + 1)
            self.assertEqual(len(closes), n + 1, (what, closes))
        self.assertTrue(wait_for(lambda: fd_count(self.p.proc.pid) <= self.fds, 5), (fd_count(self.p.proc.pid), self.fds))


# ---------------------------------------------------------------------------------------------------- audit log

@unittest.skipUnless(os.geteuid() == 0, "mounts a tmpfs: needs root")
class AuditFullDiskTest(TempDirTest):
    def test_full_audit_disk_neither_blocks_nor_spins(self):
        mnt = tempfile.mkdtemp(prefix="cordon-stress-tmpfs-")
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mnt], check=True)
        self.cleanups.append(lambda: (subprocess.run(["umount", "-l", mnt]), os.rmdir(mnt)))
        up = self.upstream()
        dns = self.dns({"up.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "up.test", *LOOPBACK, "--audit-log", os.path.join(mnt, "audit.log")],
                       dns=dns, audit=False)
        # Far more lines than 64 KB holds: every request is still answered, promptly.
        s = p.connect()
        f = s.makefile("rb")
        n = 1500 if not LARGE else 5000
        start = time.time()
        for i in range(n):
            s.sendall(b"GET http://up.test:%d/%d HTTP/1.1\r\nHost: up.test\r\n\r\n" % (up.port, i))
            from proxytest import read_http_response_file
            self.assertEqual(read_http_response_file(f)[0], 200)
        elapsed = time.time() - start
        s.close()
        self.assertGreaterEqual(os.statvfs(mnt).f_bfree, 0)
        # Idle with the disk full: the loop does not spin (nor does the writer thread).
        time.sleep(0.5)
        before = cpu_seconds(p.proc.pid)
        time.sleep(1.5)
        self.assertLess(cpu_seconds(p.proc.pid) - before, 0.3)
        self.assertEqual(p.stop(), 0)
        err = p.stderr()
        m = re.search(r"(\d+) line\(s\) dropped", err)
        self.assertTrue(m, (err, os.statvfs(mnt), os.listdir(mnt), [os.path.getsize(os.path.join(mnt, f)) for f in os.listdir(mnt)]))
        self.assertGreater(int(m.group(1)), 0)
        print("\naudit on a full 64 KB tmpfs: %d requests in %.1f s, %s lines dropped, reported on exit"
              % (n, elapsed, m.group(1)), file=sys.stderr)


# ---------------------------------------------------------------------------------------------------- jail faults

@unittest.skipUnless(os.geteuid() == 0, "jails with cgroups: needs root")
class JailFaultTest(unittest.TestCase):
    """A jail's end leaves nothing: no process, no cgroup, no mount on the host, whatever the command did."""

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="cordon-stress-jail-", dir="/var/tmp")
        os.chmod(self.base, 0o755)
        self.cwd = os.path.join(self.base, "work")
        self.home = os.path.join(self.base, "home")
        os.makedirs(self.cwd)
        os.makedirs(self.home)
        # `sleep` under a name of its own: every process of this test carries it in its command line.
        self.marker = "cordonstress" + secrets.token_hex(4)
        self.sleep = os.path.join(self.base, self.marker)
        subprocess.run(["cp", "/bin/sleep", self.sleep], check=True)
        self.supervisors = []
        self.mounts = self.host_mounts()
        self.addCleanup(self.cleanup)

    def cleanup(self):
        for pid in self.survivors():
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        subprocess.run(["rm", "-rf", self.base])

    def host_mounts(self):
        # Only what concerns this test (other tests may mount things meanwhile).
        with open("/proc/self/mountinfo") as f:
            return sorted(line for line in f if self.base in line)

    def survivors(self):
        out = []
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                with open("/proc/%s/cmdline" % d, "rb") as f:
                    if self.marker.encode() in f.read():
                        out.append(int(d))
            except OSError:
                pass
        return out

    def cgroups(self):
        """The cgroups of this test's supervisors (cordon-PID-RANDOM)."""
        names = tuple("cordon-%d-" % pid for pid in self.supervisors)
        found = []
        for root, dirs, _ in os.walk("/sys/fs/cgroup"):
            found += [os.path.join(root, d) for d in dirs if names and d.startswith(names)]
        return found

    def popen(self, args):
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}
        p = subprocess.Popen([CORDON, "run", "--no-discover", *args], cwd=self.cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.supervisors.append(p.pid)
        return p

    def run_jail(self, args, timeout=90):
        p = self.popen(args)
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err

    def assert_nothing_left(self):
        self.assertTrue(wait_for(lambda: not self.survivors(), 10), self.survivors())
        self.assertTrue(wait_for(lambda: not self.cgroups(), 10), self.cgroups())
        self.assertEqual(self.host_mounts(), self.mounts)
        self.assertEqual(os.listdir(self.cwd), [])

    def skip_without_cgroup(self, rc, err):
        if rc == 125 and "cgroup" in err:
            self.skipTest("no usable cgroup: " + err.strip())

    def test_fork_bomb_under_pids(self):
        start = time.monotonic()
        # The bomb runs beside a command that never ends by itself. (Run as the command, the bomb's
        # own top shell could meet the limit first and exit 2: "Cannot fork" is fatal to dash.)
        bomb = "b() { %s 300 & b & b & wait; }; b" % self.sleep
        rc, _, err = self.run_jail(["--pids", "64", "--timeout", "5", "-c",
                                    "(%s) & exec %s 300" % (bomb, self.sleep)])
        self.skip_without_cgroup(rc, err)
        self.assertIn("--pids 64 for the whole jail", err)
        self.assertIn("Cannot fork", err)  # the bomb met the limit
        self.assertEqual(rc, 124, err)  # the timeout ends the command and the bomb, all of it
        self.assertLess(time.monotonic() - start, 60)
        self.assert_nothing_left()

    def test_memory_under_memory_limit(self):
        rc, _, err = self.run_jail(["--memory", "64M", "--", sys.executable, "-c",
                                    "b = []\nwhile True: b.append(bytearray(1 << 20))"])
        self.skip_without_cgroup(rc, err)
        # The OOM killer ends the hog (SIGKILL) or its allocation fails (MemoryError, exit 1).
        self.assertIn(rc, (1, 128 + 9), err)
        self.assert_nothing_left()

    def test_sigterm_ignored_and_double_forked_daemons(self):
        # Every process ignores SIGTERM (inherited); two daemons left the shell's process group.
        script = "trap '' TERM; (setsid %s 300 &); (%s 300 &); %s 1000" % ((self.sleep,) * 3)
        start = time.monotonic()
        rc, _, err = self.run_jail(["--timeout", "2", "-c", script])
        self.assertEqual(rc, 124, err)
        self.assertLess(time.monotonic() - start, 30)
        self.assert_nothing_left()

    def test_daemons_left_by_a_command_that_exits(self):
        rc, _, err = self.run_jail(["-c", "(setsid %s 300 &); (%s 300 &); exit 7" % (self.sleep, self.sleep)])
        self.assertEqual(rc, 7, err)
        self.assert_nothing_left()

    def test_sigkill_of_the_supervisor(self):
        p = self.popen(["--pids", "64", "-c", "(setsid %s 300 &); echo READY; exec %s 300" % ((self.sleep,) * 2)])
        line = p.stdout.readline().strip()
        if line != "READY":
            err = p.stderr.read()
            self.skip_without_cgroup(p.wait(), err)
            self.fail(err)
        self.assertTrue(wait_for(lambda: len(self.survivors()) >= 2, 10), self.survivors())
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
        self.assertEqual(p.returncode, -signal.SIGKILL)
        # The jail's init dies with its parent; the kernel then ends every process of its PID namespace.
        self.assertTrue(wait_for(lambda: not self.survivors(), 10), self.survivors())
        # The cgroup the killed supervisor could not remove goes with the next run that sets a limit.
        rc, _, err = self.run_jail(["--pids", "64", "--", "true"])
        self.assertEqual(rc, 0, err)
        self.assertTrue(wait_for(lambda: not self.cgroups(), 10), self.cgroups())
        self.assertEqual(self.host_mounts(), self.mounts)

    def test_sigkill_of_the_supervisor_leaves_no_placeholders(self):
        # The working directory stays empty even when the supervisor cannot clean up (before issue 11 the
        # placeholders of missing protected names, .bashrc, .git, .vscode, ..., stayed behind).
        p = self.popen(["-c", "echo READY; exec %s 300" % self.sleep])
        self.assertEqual(p.stdout.readline().strip(), "READY")
        p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
        self.assertTrue(wait_for(lambda: not self.survivors(), 10), self.survivors())
        self.assertEqual(os.listdir(self.cwd), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
