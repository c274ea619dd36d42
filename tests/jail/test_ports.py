#!/usr/bin/python3
"""Integration tests for cordon run's port forwards (issue 27, parts 1 and 2): `--host-port` (a database-like
line server on the host's loopback reached from a jailed client through 127.0.0.1 and ::1, a second host port
that is not listed refused, the audit lines) and `--publish` (a `python3 -m http.server` in the jail reached by
curl on the host; on 0.0.0.0 and [::], bound there and reached through 127.0.0.1, 127.0.0.2 and ::1), a taken
host port (125), bad flags (2), bad settings entries (a warning each, skipped); in the namespace jail and the
jail without namespaces, as root and as an unprivileged user created for the run.
Needs root.

    python3 tests/jail/test_ports.py --cordon build/cordon [-k pattern]
"""
import json
import os
import socket
import socketserver
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import PY, Env, JailFixtures  # noqa: E402

# Runs in the jail: for each HOST:PORT argument, connects, sends "PING" and "GET answer", prints
# "HOST PORT +PONG 42" or "HOST PORT ERR <errno name>".
CLIENT = r'''
import errno, socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    try:
        s = socket.create_connection((host.strip("[]"), int(port)), timeout=5)
        s.sendall(b"PING\nGET answer\n")
        f = s.makefile("rb")
        print(host, port, f.readline().decode().strip(), f.readline().decode().strip())
    except OSError as e:
        print(host, port, "ERR", errno.errorcode.get(e.errno, e.errno))
'''


class LineServer:
    """A database-like server on the host's loopback: a line protocol (PING -> +PONG, GET KEY -> the value)."""

    def __init__(self, host="127.0.0.1"):
        class Handler(socketserver.StreamRequestHandler):
            def handle(self):
                for line in self.rfile:
                    words = line.decode().split()
                    if words == ["PING"]:
                        self.wfile.write(b"+PONG\n")
                    elif len(words) == 2 and words[0] == "GET":
                        self.wfile.write(b"42\n" if words[1] == "answer" else b"(nil)\n")
                    self.wfile.flush()
                # The client's end of file (a half-close) gets a last line: the other direction stays open.
                try:
                    self.wfile.write(b"BYE\n")
                    self.wfile.flush()
                except OSError:
                    pass

        family = socket.AF_INET6 if ":" in host else socket.AF_INET

        class Server(socketserver.ThreadingTCPServer):
            address_family = family
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((host, 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def free_port(host="127.0.0.1"):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def listening_addresses(port):
    """The host's addresses a TCP listener on `port` is bound to (/proc/net/tcp and tcp6, state LISTEN)."""
    found = set()
    for name, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open(f"/proc/net/{name}") as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, hex_port = local.split(":")
                if state != "0A" or int(hex_port, 16) != port:
                    continue
                raw = bytes.fromhex(address)
                # The kernel prints each 32-bit word in host order.
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
                found.add(socket.inet_ntop(family, raw))
    return found


class PortsCase(JailFixtures):
    JAIL = []  # extra flags: the jail without namespaces adds --jail landlock

    def setUp(self):
        super().setUp()
        self.db = LineServer()
        self.other = LineServer()  # a second host port, never listed
        self.addCleanup(self.db.close)
        self.addCleanup(self.other.close)
        self.audit = os.path.join(self.outside, "audit.jsonl")
        self.own(self.outside)

    def audit_lines(self):
        if not os.path.exists(self.audit):
            return []
        with open(self.audit) as f:
            return [json.loads(line) for line in f if line.strip()]

    def wait_for_audit(self, done, timeout=20):
        # The audit log is written by a thread of its own, after the connection's events: a line the test
        # expects may still be queued when the client has its answer, and SIGKILL drops what is queued.
        # Wait until the lines are there before the run is killed.
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if done(self.audit_lines()):
                    return
            except json.JSONDecodeError:  # a line being written
                pass
            time.sleep(0.05)

    def client(self, flags, *targets):
        rc, out, err = self.run_jail([*self.JAIL, "--audit-log", self.audit, *flags, "--", PY, "-c", CLIENT,
                                      *targets])
        self.assertEqual(rc, 0, f"stdout: {out}\nstderr: {err}")
        return {tuple(line.split()[:2]): line.split()[2:] for line in out.splitlines()}, err

    def test_host_port_reached_through_both_loopbacks(self):
        p, q = self.db.port, self.other.port
        got, _ = self.client(["--host-port", str(p)], f"127.0.0.1:{p}", f"[::1]:{p}", f"127.0.0.1:{q}",
                             f"[::1]:{q}")
        self.assertEqual(got[("127.0.0.1", str(p))], ["+PONG", "42"])
        self.assertEqual(got[("[::1]", str(p))], ["+PONG", "42"])
        # Not listed: the namespace jail has no listener there (refused); the jail without namespaces refuses
        # the connect itself (EPERM), as every other address of the host.
        refused = ["ERR", "EPERM"] if self.JAIL else ["ERR", "ECONNREFUSED"]
        self.assertEqual(got[("127.0.0.1", str(q))], refused)
        self.assertEqual(got[("[::1]", str(q))], refused)
        lines = self.audit_lines()
        decisions = [line for line in lines if line["event"] == "decision" and line["proto"] == "host-port"]
        self.assertEqual(len(decisions), 2, lines)
        for d in decisions:
            self.assertEqual((d["decision"], d["port"], d["host"], d["rule"], d["source"]),
                             ("allow", p, "127.0.0.1", str(p), "flags --host-port"), d)
            self.assertIn("client", d)
        closes = [line for line in lines if line["event"] == "close" and line["proto"] == "host-port"]
        self.assertEqual(len(closes), 2, lines)
        for c in closes:
            self.assertEqual(c["bytes_up"], len(b"PING\nGET answer\n"), c)
            # The answers, and the server's last line when it reached the client's socket before it closed.
            self.assertIn(c["bytes_down"], (len(b"+PONG\n42\n"), len(b"+PONG\n42\nBYE\n")), c)
        self.assertFalse([line for line in lines if line.get("port") == q], lines)

    def test_host_port_leads_only_to_its_port(self):
        # Other loopback addresses, other ports, the host's Unix sockets: nothing of them through a host port.
        p = self.db.port
        sock_path = os.path.join(self.outside, "db.sock")
        unix = socket.socket(socket.AF_UNIX)
        self.addCleanup(unix.close)
        unix.bind(sock_path)
        os.chmod(sock_path, 0o777)
        unix.listen()
        script = ("import socket, errno\n"
                  f"try:\n s = socket.socket(socket.AF_UNIX); s.connect({sock_path!r}); print('unix OK')\n"
                  "except OSError as e: print('unix ERR', errno.errorcode[e.errno])\n")
        rc, out, err = self.run_jail([*self.JAIL, "--host-port", str(p), "--", PY, "-c", script])
        self.assertEqual((rc, out.strip()), (0, "unix ERR EPERM"), err)
        got, _ = self.client(["--host-port", str(p)], f"127.0.0.2:{p}", f"127.0.0.1:{p + 1 if p < 65535 else 1}")
        for target, answer in got.items():
            self.assertEqual(answer[0], "ERR", target)

    def test_host_port_half_close(self):
        # The client shuts its sending side down; the server's answer to that end of file still arrives.
        p = self.db.port
        script = ("import socket\n"
                  f"s = socket.create_connection(('127.0.0.1', {p}), timeout=5)\n"
                  "s.sendall(b'PING\\n'); s.shutdown(socket.SHUT_WR)\n"
                  "data = b''\n"
                  "while True:\n"
                  "    chunk = s.recv(100)\n"
                  "    if not chunk: break\n"
                  "    data += chunk\n"
                  "print(data.decode().split())\n")
        rc, out, err = self.run_jail([*self.JAIL, "--host-port", str(p), "--", PY, "-c", script])
        self.assertEqual((rc, out.strip()), (0, "['+PONG', 'BYE']"), err)

    def test_publish_reaches_a_server_in_the_jail(self):
        if self.JAIL:
            self.skipTest("the jail without namespaces publishes nothing (test_publish_is_a_note)")
        host_port = free_port()
        jail_port = 8000
        self.write(os.path.join(self.cwd, "index.html"), "hello from the jail\n")
        ready = os.path.join(self.cwd, "ready")
        script = (f"{PY} -m http.server {jail_port} --bind 127.0.0.1 >/dev/null 2>&1 & "
                  f"while ! {PY} -c 'import socket; socket.create_connection((\"127.0.0.1\", {jail_port}))' "
                  f"2>/dev/null; do sleep 0.05; done; touch {ready}; sleep 30")
        p = self.popen([*self.JAIL, "--audit-log", self.audit, "--publish", f"{host_port}:{jail_port}",
                        "--publish", f"[::1]:{host_port}:{jail_port}", "-c", script])
        try:
            deadline = time.time() + 20
            while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(ready), p.stderr.read() if p.poll() is not None else "not ready")
            for url in (f"http://127.0.0.1:{host_port}/", f"http://[::1]:{host_port}/"):
                curl = subprocess.run(["curl", "-sS", "-g", "--max-time", "10", url], capture_output=True,
                                      text=True)
                self.assertEqual((curl.returncode, curl.stdout), (0, "hello from the jail\n"), curl.stderr)
            # Nothing listens on the host's other addresses for it.
            with self.assertRaises(OSError):
                socket.create_connection(("127.0.0.2", host_port), timeout=2).close()
            self.wait_for_audit(lambda lines: any(line["event"] == "close" and line["proto"] == "publish" and
                                                  line["bytes_down"] > 0 for line in lines) and
                                sum(line["event"] == "decision" and line["proto"] == "publish"
                                    for line in lines) >= 2)
        finally:
            p.kill()
            _, err = p.communicate()
        lines = self.audit_lines()
        decisions = [line for line in lines if line["event"] == "decision" and line["proto"] == "publish"]
        self.assertEqual(len(decisions), 2, lines)
        self.assertEqual({d["rule"] for d in decisions}, {f"{host_port}:{jail_port}",
                                                           f"[::1]:{host_port}:{jail_port}"})
        for d in decisions:
            self.assertEqual((d["decision"], d["port"], d["host"]), ("allow", jail_port, "127.0.0.1"), d)
        self.assertTrue(any(line["event"] == "close" and line["proto"] == "publish" and line["bytes_down"] > 0
                            for line in lines), lines)

    def test_publish_on_a_named_address(self):
        # ADDR other than the default loopback: 0.0.0.0 (every IPv4 address of the host, so also 127.0.0.1) and
        # [::] (every IPv6 address, so also ::1); the audit line's rule is the entry as given.
        if self.JAIL:
            self.skipTest("the jail without namespaces publishes nothing")
        v4, v6 = free_port("0.0.0.0"), free_port("::")
        jail_port = 8000
        self.write(os.path.join(self.cwd, "index.html"), "hello from the jail\n")
        ready = os.path.join(self.cwd, "ready")
        script = (f"{PY} -m http.server {jail_port} --bind 127.0.0.1 >/dev/null 2>&1 & "
                  f"while ! {PY} -c 'import socket; socket.create_connection((\"127.0.0.1\", {jail_port}))' "
                  f"2>/dev/null; do sleep 0.05; done; touch {ready}; sleep 30")
        rules = [f"0.0.0.0:{v4}:{jail_port}", f"[::]:{v6}:{jail_port}"]
        p = self.popen([*self.JAIL, "--audit-log", self.audit, "--publish", rules[0], "--publish", rules[1],
                        "-c", script])
        try:
            deadline = time.time() + 20
            while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(ready), p.stderr.read() if p.poll() is not None else "not ready")
            # Bound where ADDR says (not on loopback alone), and reached there: 127.0.0.2 for 0.0.0.0, which
            # the default loopback listener does not serve.
            self.assertEqual(listening_addresses(v4), {"0.0.0.0"})
            self.assertEqual(listening_addresses(v6), {"::"})
            for url in (f"http://127.0.0.1:{v4}/", f"http://127.0.0.2:{v4}/", f"http://[::1]:{v6}/"):
                curl = subprocess.run(["curl", "-sS", "-g", "--max-time", "10", url], capture_output=True,
                                      text=True)
                self.assertEqual((curl.returncode, curl.stdout), (0, "hello from the jail\n"),
                                 f"{url}: {curl.stderr}")
            self.wait_for_audit(lambda lines: sum(line["event"] == "decision" and line["proto"] == "publish"
                                                  for line in lines) >= 3)
        finally:
            p.kill()
            p.communicate()
        decisions = [line for line in self.audit_lines() if line["event"] == "decision" and line["proto"] == "publish"]
        self.assertEqual(sorted(d["rule"] for d in decisions), [rules[0], rules[0], rules[1]], decisions)
        for d in decisions:
            self.assertEqual((d["decision"], d["port"], d["host"]), ("allow", jail_port, "127.0.0.1"), d)

    def test_publish_honours_max_connections(self):
        # A published port is reachable by every local user (and the network, with ADDR): its connections count
        # against --max-connections like the proxy's, or anyone could hold unbounded descriptors of the
        # supervisor and sockets of the jail.
        if self.JAIL:
            self.skipTest("the jail without namespaces publishes nothing")
        host_port = free_port()
        ready = os.path.join(self.cwd, "ready")
        server = ("import socket\n"
                  "s = socket.socket(); s.bind(('127.0.0.1', 8000)); s.listen(100)\n"
                  f"open({ready!r}, 'w').close()\n"
                  "held = []\n"
                  "while True:\n"
                  "    c, _ = s.accept(); held.append(c); c.sendall(b'x')\n")
        p = self.popen([*self.JAIL, "--max-connections", "3", "--publish", f"{host_port}:8000", "--", PY, "-c",
                        server])
        clients = []
        try:
            deadline = time.time() + 20
            while not os.path.exists(ready) and time.time() < deadline and p.poll() is None:
                time.sleep(0.05)
            self.assertTrue(os.path.exists(ready), p.stderr.read() if p.poll() is not None else "not ready")
            answered = 0
            for _ in range(10):
                c = socket.create_connection(("127.0.0.1", host_port), timeout=5)
                clients.append(c)
                try:
                    if c.recv(1) == b"x":
                        answered += 1
                except OSError:
                    pass
            self.assertEqual(answered, 3)
        finally:
            for c in clients:
                c.close()
            p.kill()
            p.communicate()

    def test_publish_of_a_host_port_stops_the_run(self):
        # --host-port P --publish P:P: a connection to the jail's P goes to the host's P, the published
        # listener, which connects to the jail's P again: one connect made connections until no descriptor was
        # left. Publishing a host port (--publish 0.0.0.0:X:P) would also open the host's loopback service to
        # the network. Either is refused before the command starts.
        if self.JAIL:
            self.skipTest("the jail without namespaces publishes nothing")
        p = free_port()
        for flags in (["--host-port", str(p), "--publish", f"{p}:{p}"],
                      ["--host-port", str(self.db.port), "--publish", f"{p}:{self.db.port}"]):
            rc, out, err = self.run_jail([*self.JAIL, *flags, "--", PY, "-c", CLIENT, f"127.0.0.1:{p}"], timeout=20)
            self.assertEqual((rc, out), (125, ""), f"{flags}: {err}")  # the client never ran
            self.assertIn("leads to host port", err)

    def test_publish_taken_port_stops_the_run(self):
        if self.JAIL:
            self.skipTest("the jail without namespaces publishes nothing")
        taken = socket.socket()
        self.addCleanup(taken.close)
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        marker = os.path.join(self.cwd, "ran")
        rc, out, err = self.run_jail([*self.JAIL, "--publish", str(port), "-c", f"touch {marker}"])
        self.assertEqual(rc, 125, err)
        self.assertIn(f"127.0.0.1:{port}", err)
        self.assertIn("Address already in use", err)
        self.assertFalse(os.path.exists(marker), "the command ran")

    def test_publish_is_a_note_without_namespaces(self):
        if not self.JAIL:
            self.skipTest("the namespace jail publishes")
        port = free_port()
        rc, out, err = self.run_jail([*self.JAIL, "--publish", str(port), "-c", "echo ran"])
        self.assertEqual((rc, out), (0, "ran\n"), err)
        self.assertIn("means nothing in the jail without namespaces", err)
        with self.assertRaises(OSError):  # nothing was made to listen
            socket.create_connection(("127.0.0.1", port), timeout=2).close()

    def test_bad_flags_are_usage_errors(self):
        for flags, words in (
                (["--host-port", "0"], "--host-port '0'"),
                (["--host-port", "65536"], "--host-port '65536'"),
                (["--host-port", "db"], "--host-port 'db'"),
                (["--host-port", "3128"], "one of the jail's own"),
                (["--publish", "x"], "--publish 'x'"),
                (["--publish", "1.2.3:80"], "invalid address"),
                (["--publish", "::1:80"], "--publish '::1:80'"),
                (["--publish", "[::1]8080"], "--publish '[::1]8080'"),
                (["--publish", "80:99999"], "JAIL_PORT"),
                (["--publish", "localhost:8080"], "invalid address"),
                (["--publish", "1:2:3:4"], "too many"),
                (["--publish", "8080:53"], "one of the jail's own"),
                (["--no-network", "--host-port", "5432"], "--no-network"),
        ):
            rc, out, err = self.run_jail([*self.JAIL, *flags, "-c", "echo ran"])
            self.assertEqual((rc, out), (2, ""), f"{flags}: {err}")
            self.assertIn(words, err, flags)

    def test_bad_settings_entries_are_skipped_with_a_warning(self):
        p = self.db.port
        settings = self.write(os.path.join(self.outside, "settings.json"), json.dumps({
            "sandbox": {"network": {"hostPorts": [p, "db", 0, 3128, {"port": 1}, -5],
                                    "publishPorts": ["not a port", 70000, "[::1]:x"]}}}))
        got, err = self.client(["--settings", settings], f"127.0.0.1:{p}")
        self.assertEqual(got[("127.0.0.1", str(p))], ["+PONG", "42"])
        for index in range(1, 6):
            self.assertIn(f"sandbox.network.hostPorts[{index}]: skipped", err)
        for index in range(3):
            self.assertIn(f"sandbox.network.publishPorts[{index}]: skipped", err)
        d = [line for line in self.audit_lines() if line["event"] == "decision"]
        self.assertEqual(len(d), 1, d)
        self.assertEqual((d[0]["rule"], d[0]["proto"]), (str(p), "host-port"))
        self.assertIn("settings.json", d[0]["source"])
        # Not an array: one warning, the run goes on.
        self.write(settings, json.dumps({"sandbox": {"network": {"hostPorts": "5432"}}}))
        rc, out, err = self.run_jail([*self.JAIL, "--settings", settings, "-c", "echo ran"])
        self.assertEqual((rc, out), (0, "ran\n"), err)
        self.assertIn("sandbox.network.hostPorts: skipped", err)

    def test_project_settings_cannot_open_ports(self):
        # A cloned repository's .claude/settings.json or settings.local.json must not give its jail the host's
        # database nor publish on every address: skipped with a warning naming the file and the key. The user's
        # own settings may.
        p = self.db.port
        publish = free_port()
        for name in ("settings.json", "settings.local.json"):
            self.write(os.path.join(self.cwd, ".claude", name), json.dumps(
                {"sandbox": {"network": {"hostPorts": [p], "publishPorts": [f"0.0.0.0:{publish}:3000"]}}}))
        user = ["--user", Env.user] if self.USER_FLAG else []

        def run():
            r = subprocess.run([Env.cordon, "run", *user, *self.JAIL, "--", PY, "-c", CLIENT, f"127.0.0.1:{p}"],
                               cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=60,
                               **self._identity())
            self.assertEqual(r.returncode, 0, r.stderr)
            return r.stdout.split()[2:], r.stderr

        got, err = run()
        self.assertEqual(got, ["ERR", "EPERM"] if self.JAIL else ["ERR", "ECONNREFUSED"], err)
        for name in ("settings.json", "settings.local.json"):
            for key in ("hostPorts", "publishPorts"):
                line = [w for w in err.splitlines()
                        if f"/.claude/{name}:" in w and f"sandbox.network.{key}:" in w]
                self.assertEqual(len(line), 1, err)
                self.assertIn("skipped: not taken from a project's settings", line[0])
                self.assertIn("--host-port" if key == "hostPorts" else "--publish", line[0])
                self.assertIn("user settings", line[0])
        self.assertNotIn(str(publish), err.replace(f"0.0.0.0:{publish}:3000", ""))  # nothing published
        self.write(os.path.join(self.home, ".claude", "settings.json"),
                   json.dumps({"sandbox": {"network": {"hostPorts": [p]}}}))
        got, err = run()
        self.assertEqual(got, ["+PONG", "42"], err)

    def test_user_settings_from_the_home_directory_open_ports(self):
        # Run from the home directory, the project's .claude/settings.json is the user's own
        # ~/.claude/settings.json: user settings, whose host ports count (it was skipped as a project's file).
        p = self.db.port
        self.write(os.path.join(self.home, ".claude", "settings.json"),
                   json.dumps({"sandbox": {"network": {"hostPorts": [p]}}}))
        user = ["--user", Env.user] if self.USER_FLAG else []
        # (--allow-write .: the home directory is not made writable unless asked; the run stops otherwise.)
        r = subprocess.run([Env.cordon, "run", *user, *self.JAIL, "--allow-write", ".", "--", PY, "-c", CLIENT,
                            f"127.0.0.1:{p}"], cwd=self.home, env=self.env(), capture_output=True, text=True, timeout=60,
                           **self._identity())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("not taken from a project's settings", r.stderr)
        self.assertEqual(r.stdout.split()[2:], ["+PONG", "42"], r.stderr)

    def test_many_host_ports(self):
        # More host ports than one hand-over message carries (16 descriptors: two listeners a port).
        servers = [LineServer() for _ in range(20)]
        for s in servers:
            self.addCleanup(s.close)
        flags = [f for s in servers for f in ("--host-port", str(s.port))]
        got, err = self.client(flags, *[f"127.0.0.1:{s.port}" for s in servers], f"[::1]:{servers[-1].port}")
        for s in servers:
            self.assertEqual(got[("127.0.0.1", str(s.port))], ["+PONG", "42"], s.port)
        self.assertEqual(got[("[::1]", str(servers[-1].port))], ["+PONG", "42"])
        if self.JAIL:
            return  # no hand-over there: a forward on the host's loopback per port
        # The bound, named.
        flags = [f for port in range(20000, 20257) for f in ("--host-port", str(port))]
        rc, out, err = self.run_jail([*flags, "-c", "echo ran"])
        self.assertEqual((rc, out), (125, ""), err)
        self.assertIn("at most 256 host ports (257 named", err)

    def test_policy_shows_the_ports(self):
        settings = self.write(os.path.join(self.outside, "settings.json"), json.dumps({
            "sandbox": {"network": {"hostPorts": [5432], "publishPorts": ["0.0.0.0:8080:3000", 3000]}}}))
        out = subprocess.run([Env.cordon, "policy", "--no-discover", "--settings", settings], capture_output=True,
                             text=True, check=True).stdout
        net = json.loads(out)["network"]
        self.assertEqual([r["rule"] if "rule" in r else r.get("text") for r in net["hostPorts"]], ["5432"])
        self.assertEqual(len(net["publishPorts"]), 2)


class AsRoot(PortsCase, unittest.TestCase):
    AS_USER = False


class AsUser(PortsCase, unittest.TestCase):
    AS_USER = True


class WithUserFlag(PortsCase, unittest.TestCase):
    USER_FLAG = True


class LandlockAsRoot(PortsCase, unittest.TestCase):
    AS_USER = False
    JAIL = ["--jail", "landlock"]


class LandlockAsUser(PortsCase, unittest.TestCase):
    AS_USER = True
    JAIL = ["--jail", "landlock"]


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
