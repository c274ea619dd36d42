#!/usr/bin/env python3
"""The audit log never holds the proxy up (a reader that stops costs lines, counted and reported, not service),
SIGHUP reopens it for logrotate, and the address guard refuses IPv4-translated answers (issue 10, defects 4
and 7)."""

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
from proxytest import LOOPBACK, wait_for, CORDON, TempDirTest, read_http_response_file  # noqa: E402


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


class StoppedReaderTest(TempDirTest):
    def test_clients_served_while_audit_reader_stopped(self):
        """`--audit-log -` into a pipe nobody reads: every request is still answered; the lines that did not fit
        are counted in cordon_audit_dropped_total and reported at exit, and every line that was written is
        whole. The old log blocked the loop in write(2) once the pipe was full (after ~256 requests)."""
        up = self.upstream()
        dns = self.dns({"ok.a.test": ["127.0.0.1"]})
        managed = os.path.join(self.dir, "managed")
        os.makedirs(managed)
        stderr_path = os.path.join(self.dir, "stderr")
        stderr = open(stderr_path, "w+b")
        self.cleanups.append(stderr.close)
        proc = subprocess.Popen([CORDON, "proxy", "--listen", "127.0.0.1:0", "--no-discover", "--managed-dir",
                                 managed, "--dns-server", dns.address, "--allow-domain", "ok.a.test", *LOOPBACK,
                                 "--metrics", "127.0.0.1:0", "--audit-log", "-"],
                                stdout=subprocess.PIPE, stderr=stderr)
        self.cleanups.append(lambda: proc.poll() is None and proc.kill())
        read_err = lambda: read(stderr_path, "rb").decode(errors="replace")
        self.assertTrue(wait_for(lambda: "metrics on" in read_err()), read_err())
        port = int(re.search(r"listening on [^\s]*:(\d+)", read_err()).group(1))
        metrics_port = int(re.search(r"metrics on [^\s]*:(\d+)", read_err()).group(1))

        # 4 keep-alive connections x 500 refused requests with a 3 KiB path each (~3.3 KiB per decision line,
        # 6.5 MiB in all: more than the pipe and the 4 MiB queue hold), then allowed requests to an upstream.
        path = b"/" + b"p" * 3000
        clients, per_client = 4, 500
        answered = [0] * clients
        errors = []

        def client(n):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=15)
                f = s.makefile("rb")
                req = b"GET http://denied.a.test%s HTTP/1.1\r\nHost: denied.a.test\r\n\r\n" % path
                for _ in range(per_client):
                    s.sendall(req)
                    status, _, _ = read_http_response_file(f)
                    if status != 403:
                        raise AssertionError("status %d" % status)
                    answered[n] += 1
                f.close()
                s.close()
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(repr(e))

        threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        self.assertEqual(errors, [])
        self.assertEqual(sum(answered), clients * per_client)
        # Allowed traffic is served too.
        s = socket.create_connection(("127.0.0.1", port), timeout=15)
        f = s.makefile("rb")
        for _ in range(5):
            s.sendall(b"GET http://ok.a.test:%d/x HTTP/1.1\r\nHost: ok.a.test:%d\r\n\r\n" % (up.port, up.port))
            self.assertEqual(read_http_response_file(f)[0], 200)
        f.close()
        s.close()
        self.assertEqual(len(up.requests), 5)

        text = urllib.request.urlopen("http://127.0.0.1:%d/metrics" % metrics_port, timeout=10).read().decode()
        self.assertIn("# TYPE cordon_audit_dropped_total counter", text)
        dropped = int(re.search(r'cordon_audit_dropped_total\{reason="queue-full"\} (\d+)', text).group(1))
        self.assertGreater(dropped, 0, text)

        # SIGTERM: the proxy gives up on the stopped reader in bounded time, exits 0 and says what it lost.
        proc.send_signal(signal.SIGTERM)
        self.assertEqual(proc.wait(30), 0, read_err())
        report = [l for l in read_err().splitlines() if "line(s) dropped" in l]
        self.assertEqual(len(report), 1, read_err())
        self.assertIn("cordon: audit log on stdout: ", report[0])
        lost = int(re.search(r": (\d+) line\(s\) dropped", report[0]).group(1))
        self.assertGreaterEqual(lost, dropped)

        # What reached the pipe is whole lines; with the lost ones they account for every event.
        out = proc.stdout.read()
        proc.stdout.close()
        self.assertTrue(out.endswith(b"\n"))
        events = [json.loads(l) for l in out.decode().splitlines()]
        expected = clients * per_client + 5 + clients + 1  # decisions, then a close line per connection
        self.assertEqual(len(events) + lost, expected, report[0])
        self.assertEqual(events[0]["event"], "decision")
        self.assertEqual(events[0]["path"], path.decode())


@unittest.skipUnless(os.geteuid() == 0, "mounting a small tmpfs needs root")
class FullDiskTest(TempDirTest):
    def test_a_full_disk_leaves_no_torn_line(self):
        """The audit log on a 64 KiB tmpfs: lines that do not fit are lost and counted, the file stays valid
        JSON lines (a write cut short by ENOSPC leaves no partial line for the next record to be glued to), and
        once there is room again lines are written whole."""
        disk = os.path.join(self.dir, "disk")
        os.mkdir(disk)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", disk], check=True)
        self.cleanups.append(lambda: subprocess.run(["umount", "-l", disk], check=False))
        log = os.path.join(disk, "audit.jsonl")
        filler = os.path.join(disk, "filler")
        with open(filler, "wb") as f:
            f.write(b"x" * (40 * 1024))
        p = self.proxy(["--deny-domain", "denied.test", "--audit-log", log, "--metrics", "127.0.0.1:0"],
                       audit=False)

        def deny(n, tag):
            for i in range(n):
                s = p.connect()
                s.sendall(b"CONNECT %s-%d.denied.test:443 HTTP/1.1\r\n\r\n" % (tag, i))
                self.assertIn(b" 403 ", s.recv(4096))
                s.close()

        def lines():
            with open(log, "rb") as f:
                data = f.read()
            self.assertTrue(data == b"" or data.endswith(b"\n"), data[-200:])
            return [json.loads(line) for line in data.splitlines()]  # every line parses

        deny(300, b"a")
        metrics = "http://127.0.0.1:%d/metrics" % p.metrics_port
        self.assertTrue(wait_for(lambda: 'reason="unwritten"} 0' not in
                                 urllib.request.urlopen(metrics).read().decode()))
        time.sleep(0.3)
        first = lines()
        self.assertLess(len(first), 600)
        os.unlink(filler)
        deny(20, b"b")
        self.assertTrue(wait_for(lambda: sum(1 for e in lines() if e.get("host", "").startswith("b-")) >= 40))
        hosts = [e["host"] for e in lines() if e["host"].startswith("b-")]
        self.assertEqual(hosts, [h for i in range(20) for h in ["b-%d.denied.test" % i] * 2])


class RotateTest(TempDirTest):
    def test_sighup_reopens_the_audit_log(self):
        """logrotate without copytruncate: `mv audit.jsonl audit.jsonl.1`, SIGHUP, and new lines go to a new
        audit.jsonl (before, they went on into the rotated file)."""
        p = self.proxy(["--allow-domain", "nothing.r.test"])
        r = self.curl("-i", "-x", p.url(), "http://first.r.test/")
        self.assertIn(b"403", r.stdout)
        self.assertTrue(wait_for(lambda: len(p.audit()) >= 2), p.audit())  # decision + close
        rotated = p.audit_path + ".1"
        os.rename(p.audit_path, rotated)
        p.signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: "policy reloaded" in p.stderr()), p.stderr())
        r = self.curl("-i", "-x", p.url(), "http://second.r.test/")
        self.assertIn(b"403", r.stdout)
        self.assertTrue(wait_for(lambda: len(p.audit()) >= 2), p.stderr())
        new = p.audit()
        self.assertEqual({e["host"] for e in new}, {"second.r.test"})
        with open(rotated) as f:
            old = [json.loads(l) for l in f]
        self.assertEqual({e["host"] for e in old}, {"first.r.test"})
        self.assertEqual(os.stat(p.audit_path).st_mode & 0o777, 0o640)
        # A reopen that fails says why and keeps writing to the file it has.
        os.rename(p.audit_path, rotated + "2")
        os.mkdir(p.audit_path)
        p.signal(signal.SIGHUP)
        self.assertTrue(wait_for(lambda: p.stderr().count("policy reloaded") == 2), p.stderr())
        self.assertIn("cannot reopen audit log '%s': Is a directory" % p.audit_path, p.stderr())
        self.curl("-x", p.url(), "http://third.r.test/")
        self.assertTrue(wait_for(lambda: "third.r.test" in read(rotated + "2")), read(rotated + "2"))
        self.assertEqual(p.stop(), 0)
        self.assertNotIn("dropped", p.stderr())


def in_private_netns(test):
    """Runs the test again in a fresh network namespace (only `lo`, no route out), so that a proxy that wrongly
    dials what the test DNS server answers cannot send a packet off this machine."""

    def wrapper(self):
        if os.environ.get("CORDON_TEST_PRIVATE_NETNS") == "1":
            return test(self)
        unshare = ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
        name = "%s.%s" % (type(self).__name__, test.__name__)
        r = subprocess.run(unshare + ["sh", "-c", 'ip link set lo up && exec "$0" "$@"', sys.executable,
                                      os.path.abspath(__file__), name],
                           env=dict(os.environ, CORDON_TEST_PRIVATE_NETNS="1"), capture_output=True, timeout=120)
        if r.returncode != 0 and b"unshare failed" in r.stderr and b"Operation not permitted" in r.stderr:
            self.skipTest("cannot create a network namespace here: " + r.stderr.decode(errors="replace"))
        output = (r.stdout + r.stderr).decode(errors="replace")
        self.assertEqual(r.returncode, 0, output)
        self.assertIn("Ran 1 test", output)

    wrapper.__name__ = test.__name__
    return wrapper


class TranslatedAddressTest(TempDirTest):
    @in_private_netns
    def test_siit_answer_is_refused(self):
        """An AAAA answer of ::ffff:0:7f00:1 (IPv4-translated 127.0.0.1) is refused by the address guard, over
        HTTP and SOCKS5; it used to be dialled."""
        up = self.upstream()
        dns = self.dns({"siit.g.test": ["::ffff:0:7f00:1"], "nat64.g.test": ["64:ff9b::7f00:1"]})
        p = self.proxy(["--allow-domain", "*.g.test"], dns=dns)
        for host in ("siit.g.test", "nat64.g.test"):
            r = self.curl("-i", "-x", p.url(), "http://%s:%d/" % (host, up.port))
            self.assertIn(b"403 Forbidden", r.stdout, host)
            self.assertIn(b"X-Proxy-Error: blocked-by-address-guard", r.stdout, host)
        r = self.curl("-x", "socks5h://127.0.0.1:%d" % p.port, "http://siit.g.test:%d/" % up.port)
        self.assertNotEqual(r.returncode, 0)
        lines = p.wait_audit(lambda l: sum(e["event"] == "decision" for e in l) >= 3)
        ds = [e for e in lines if e["event"] == "decision"]
        self.assertEqual([(e["proto"], e["reason"], e["upstream_ip"], e["error"]) for e in ds],
                         [("http", "blocked-by-address-guard", "::ffff:0:7f00:1", "address-guard: ipv4-embedded"),
                          ("http", "blocked-by-address-guard", "64:ff9b::7f00:1", "address-guard: ipv4-embedded"),
                          ("socks5", "blocked-by-address-guard", "::ffff:0:7f00:1", "address-guard: ipv4-embedded")])
        self.assertEqual(up.connections, 0)


if __name__ == "__main__":
    unittest.main()
