#!/usr/bin/env python3
"""cordon proxy as a service: SIGHUP reloads, SIGTERM drains without losing a decided line, connection limit,
authentication, metrics, and flag errors."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import LOOPBACK, wait_for, CORDON, TempDirTest, read_http_response, recv_until  # noqa: E402


def open_tunnel(case, drain_timeout):
    """A proxy with --drain-timeout and one CONNECT tunnel open through it to an echo server: (proxy, socket)."""
    echo = case.tcp("echo")
    dns = case.dns({"t.l.test": ["127.0.0.1"]})
    p = case.proxy(["--allow-domain", "t.l.test", *LOOPBACK, "--drain-timeout", drain_timeout], dns=dns)
    s = p.connect()
    s.sendall(b"CONNECT t.l.test:%d HTTP/1.1\r\n\r\n" % echo.port)
    case.assertIn(b" 200 ", recv_until(s))
    return p, s


class ReloadTest(TempDirTest):
    def write_settings(self, text):
        with open(self.settings, "w") as f:
            f.write(text)

    def test_sighup_valid_then_invalid(self):
        up = self.upstream()
        echo = self.tcp("echo")
        dns = self.dns({"a.h.test": ["127.0.0.1"], "b.h.test": ["127.0.0.1"]})
        self.settings = os.path.join(self.dir, "settings.json")
        self.write_settings('{"sandbox": {"network": {"allowedDomains": ["a.h.test"]}}}')
        p = self.proxy(["--settings", self.settings, *LOOPBACK, "--metrics", "127.0.0.1:0"], dns=dns)
        get = lambda host: self.curl("-i", "-x", p.url(), "http://%s:%d/" % (host, up.port)).stdout
        self.assertIn(b"200 OK", get("a.h.test"))
        self.assertIn(b"403", get("b.h.test"))
        tunnel = p.connect()
        tunnel.sendall(b"CONNECT a.h.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(tunnel))

        self.write_settings('{"permissions": {"allow": ["WebFetch(domain:b.h.test)"]}}')
        p.signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "policy reloaded" in p.stderr()), p.stderr())
        self.assertIn(b"200 OK", get("b.h.test"))
        self.assertIn(b"403", get("a.h.test"))  # new requests use the new policy
        tunnel.sendall(b"still open")  # the open tunnel continues
        self.assertEqual(tunnel.recv(100), b"still open")

        self.write_settings('{"permissions": {"allow": [ broken')
        p.signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "keeping the old one" in p.stderr()), p.stderr())
        self.assertIn("settings.json", p.stderr())  # the message names the file
        self.assertIn(b"200 OK", get("b.h.test"))
        self.assertIsNone(p.proc.poll())
        tunnel.close()
        metrics = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % p.metrics_port, timeout=5).read().decode()
        self.assertIn('cordon_policy_reloads_total{result="ok"} 1', metrics)
        self.assertIn('cordon_policy_reloads_total{result="error"} 1', metrics)


class DrainTest(TempDirTest):
    def test_sigterm_under_load_logs_every_decision(self):
        up = self.upstream()
        dns = self.dns({"ok.l.test": ["127.0.0.1"], "no.l.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "ok.l.test", *LOOPBACK, "--drain-timeout", "5"], dns=dns)
        received = {"allow": 0, "deny": 0}
        lock = threading.Lock()
        stop = threading.Event()

        def client(n):
            while not stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", p.port), timeout=5)
                except OSError:
                    return  # the listener is gone: shutdown
                try:
                    for i in range(20):
                        host = b"ok.l.test" if (i + n) % 3 else b"no.l.test"
                        s.sendall(b"GET http://%s:%d/x HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host, up.port, host, up.port))
                        status, headers, _ = read_http_response(s)
                        with lock:
                            received["allow" if status == 200 else "deny"] += 1
                        if headers.get("connection") == "close":
                            break
                except (OSError, EOFError, ValueError, IndexError):
                    pass
                finally:
                    s.close()

        threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        time.sleep(1.0)
        p.signal(signal.SIGTERM)
        rc = p.proc.wait(15)
        stop.set()
        for t in threads:
            t.join(10)
        self.assertEqual(rc, 0, p.stderr())
        self.assertIn("draining", p.stderr())
        lines = p.audit()  # every line parses: none was cut
        decisions = [e for e in lines if e["event"] == "decision"]
        allow = sum(1 for e in decisions if e["decision"] == "allow")
        deny = sum(1 for e in decisions if e["decision"] == "deny")
        print("received", received, "logged allow", allow, "deny", deny, file=sys.stderr)
        self.assertGreater(received["allow"], 20)
        self.assertGreaterEqual(allow, received["allow"])
        self.assertGreaterEqual(deny, received["deny"])
        # every connection that decided something also has its close line
        ids = {e["id"] for e in decisions}
        closed = {e["id"] for e in lines if e["event"] == "close"}
        self.assertEqual(ids - closed, set())

    def test_drain_timeout_closes_idle_tunnels(self):
        p, s = open_tunnel(self, "1")
        t = time.time()
        p.signal(signal.SIGINT)
        self.assertEqual(p.proc.wait(10), 0)
        self.assertLess(time.time() - t, 4)
        close = [e for e in p.audit() if e["event"] == "close"]
        self.assertEqual(len(close), 1)
        self.assertIn("drain", close[0]["error"])
        s.close()


class SecondSignalTest(TempDirTest):
    def test_second_signal_exits_at_once(self):
        p, s = open_tunnel(self, "60")
        p.signal(signal.SIGTERM)
        self.assertTrue(wait_for(lambda: "draining" in p.stderr()))
        t = time.time()
        p.signal(signal.SIGINT)
        self.assertEqual(p.proc.wait(10), 0)
        self.assertLess(time.time() - t, 3)
        self.assertEqual([e["decision"] for e in p.audit() if e["event"] == "decision"], ["allow"])
        s.close()


class TimeoutsTest(TempDirTest):
    def test_header_and_idle_timeouts(self):
        echo = self.tcp("echo")
        dns = self.dns({"i.l.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "i.l.test", *LOOPBACK, "--header-timeout", "1", "--idle-timeout", "1"],
                       dns=dns)
        slow = p.connect()
        slow.sendall(b"GET http://i.l.test/ HTTP/1.1\r\nHost: i.l")  # never finishes its head
        t = time.time()
        status, headers, body = read_http_response(slow)
        self.assertEqual(status, 408)
        self.assertLess(time.time() - t, 4)
        slow.close()
        tunnel = p.connect()
        tunnel.sendall(b"CONNECT i.l.test:%d HTTP/1.1\r\n\r\n" % echo.port)
        self.assertIn(b" 200 ", recv_until(tunnel))
        tunnel.sendall(b"x")
        self.assertEqual(tunnel.recv(1), b"x")
        t = time.time()
        self.assertEqual(tunnel.recv(10), b"")  # closed by the idle timeout
        self.assertLess(time.time() - t, 4)
        tunnel.close()
        closes = [e for e in p.wait_audit(lambda l: sum(e["event"] == "close" for e in l) >= 2) if e["event"] == "close"]
        self.assertEqual(sorted(e["error"] for e in closes), ["header-timeout", "idle-timeout"])


class LimitTest(TempDirTest):
    def test_connection_limit(self):
        up = self.upstream()
        echo = self.tcp("echo")
        dns = self.dns({"c.l.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "c.l.test", *LOOPBACK, "--max-connections", "2"], dns=dns)
        tunnels = []
        for _ in range(2):
            s = p.connect()
            s.sendall(b"CONNECT c.l.test:%d HTTP/1.1\r\n\r\n" % echo.port)
            self.assertIn(b" 200 ", recv_until(s))
            tunnels.append(s)
        r = self.curl("-i", "-x", p.url(), "http://c.l.test:%d/" % up.port)
        self.assertIn(b"503 Service Unavailable", r.stdout)
        s = p.connect()
        s.sendall(b"\x05\x01\x00")
        self.assertEqual(s.recv(2), b"\x05\x00")
        s.sendall(b"\x05\x01\x00\x03\x08c.l.test" + echo.port.to_bytes(2, "big"))
        self.assertEqual(s.recv(2), b"\x05\x01")
        s.close()
        # a flood over the limit is answered or closed, never a crash
        flood = [socket.create_connection(("127.0.0.1", p.port)) for _ in range(300)]
        for f in flood:
            f.close()
        tunnels[0].sendall(b"alive")
        self.assertEqual(tunnels[0].recv(10), b"alive")
        for t in tunnels:
            t.close()
        self.assertTrue(wait_for(lambda: b"200 OK" in self.curl("-i", "-x", p.url(),
                                                                  "http://c.l.test:%d/" % up.port).stdout))
        self.assertIsNone(p.proc.poll())


class AuthTest(TempDirTest):
    def test_http_and_socks_auth(self):
        up = self.upstream()
        dns = self.dns({"x.l.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "x.l.test", *LOOPBACK, "--auth-token", "s3cret"], dns=dns)
        url = "http://x.l.test:%d/" % up.port
        r = self.curl("-i", "-x", p.url(), url)
        self.assertIn(b"407 Proxy Authentication Required", r.stdout)
        self.assertIn(b'Proxy-Authenticate: Basic realm="cordon"', r.stdout)
        self.assertIn(b"200 OK", self.curl("-i", "-x", p.url(), "-U", "anyone:s3cret", url).stdout)
        self.assertIn(b"407", self.curl("-i", "-x", p.url(), "-U", "anyone:wrong", url).stdout)
        self.assertIn(b"200 OK", self.curl("-i", "-p", "-x", p.url(), "-U", "u:s3cret", url).stdout)
        ok = self.curl("-x", "socks5h://u:s3cret@127.0.0.1:%d" % p.port, url)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertNotEqual(self.curl("-x", "socks5h://u:bad@127.0.0.1:%d" % p.port, url).returncode, 0)
        self.assertNotEqual(self.curl("-x", "socks5h://127.0.0.1:%d" % p.port, url).returncode, 0)
        self.assertEqual(up.requests.__len__(), 3)


class MetricsTest(TempDirTest):
    def test_prometheus_text(self):
        up = self.upstream()
        dns = self.dns({"m.l.test": ["127.0.0.1"]})
        p = self.proxy(["--allow-domain", "m.l.test", *LOOPBACK, "--metrics", "127.0.0.1:0"], dns=dns)
        self.curl("-x", p.url(), "http://m.l.test:%d/" % up.port)
        self.curl("-x", p.url(), "http://m.l.test:%d/" % up.port)
        self.curl("-x", p.url(), "http://denied.example/")
        self.curl("-x", "socks5h://127.0.0.1:%d" % p.port, "http://m.l.test:%d/" % up.port)
        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % p.metrics_port, timeout=5).read().decode()
        self.assertIn('cordon_requests_total{proto="http",decision="allow",reason="allowed"} 2', text)
        self.assertIn('cordon_requests_total{proto="http",decision="deny",reason="blocked-by-allowlist"} 1', text)
        self.assertIn('cordon_requests_total{proto="socks5",decision="allow",reason="allowed"} 1', text)
        self.assertRegex(text, r"cordon_connections_active \d+")
        self.assertRegex(text, r'cordon_bytes_total\{direction="down"\} [1-9]\d*')
        self.assertIn("cordon_dns_lookup_seconds_count 1", text)  # the other lookups hit the cache
        self.assertIn("cordon_dns_cache_hits_total 2", text)
        self.assertIn("# TYPE cordon_dns_lookup_seconds histogram", text)


class FlagsTest(TempDirTest):
    def run_cordon(self, *args):
        return subprocess.run([CORDON, "proxy", *args], capture_output=True, timeout=10)

    def test_audit_log_to_stdout(self):
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed)
        proc = subprocess.Popen([CORDON, "proxy", "--listen", "127.0.0.1:0", "--no-discover", "--managed-dir", managed,
                                 "--audit-log", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.cleanups.append(lambda: proc.kill())
        line = proc.stderr.readline().decode()
        while "listening on" not in line:  # after the warning that no policy allows anything
            self.assertTrue(line, "cordon proxy exited")
            line = proc.stderr.readline().decode()
        port = int(re.search(r":(\d+)$", line.strip()).group(1))
        r = self.curl("-i", "-x", "http://127.0.0.1:%d" % port, "http://nowhere.example/")
        self.assertIn(b"403", r.stdout)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=10)
        self.assertEqual(proc.returncode, 0)
        events = [json.loads(l) for l in out.decode().splitlines()]
        self.assertEqual([e["event"] for e in events], ["decision", "close"])
        self.assertEqual(events[0]["host"], "nowhere.example")

    def test_errors_are_clear(self):
        r = self.run_cordon("--no-discover")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--listen", r.stderr)
        r = self.run_cordon("--listen", "127.0.0.1:0", "--no-discover", "--dns-server", "nonsense")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"--dns-server", r.stderr)
        r = self.run_cordon("--listen", "nonsense", "--no-discover")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"listen address", r.stderr)
        r = self.run_cordon("--listen", "127.0.0.1:0", "--no-discover", "--audit-log", "/nonexistent/dir/log")
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"/nonexistent/dir/log", r.stderr)
        r = self.run_cordon("--listen", "127.0.0.1:0", "--frobnicate")
        self.assertEqual(r.returncode, 2)
        r = self.run_cordon("--listen", "127.0.0.1:0", "--idle-timeout", "-1")
        self.assertEqual(r.returncode, 2)
        r = self.run_cordon("--help")
        self.assertEqual(r.returncode, 0)
        for flag in (b"--listen", b"--dns-server", b"--allow-address", b"--audit-log", b"--metrics", b"--auth-token",
                     b"--drain-timeout", b"--max-connections"):
            self.assertIn(flag, r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
