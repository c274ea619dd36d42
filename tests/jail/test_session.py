#!/usr/bin/env python3
"""Sessions (`cordon session start|stop|list`, `cordon run --session`): real jails, real servers, real clients.
A background server started by one command answers the next; exit status, stdin/stdout/stderr and a relayed
signal; `stop`, a SIGKILLed supervisor and --linger leave no process, mount, cgroup or socket; another user and
the jailed command itself are refused; a widening flag is refused; `list --json`. Needs root (a test user)."""
import json
import os
import pty
import shutil
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest

import jailtest
from jailtest import Env, JailFixtures, Upstream


def ns_of(pid, ns):
    try:
        return os.readlink(f"/proc/{pid}/ns/{ns}")
    except OSError:
        return None


def processes_in(ns_link, ns="pid"):
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and ns_of(entry, ns) == ns_link:
            out.append(int(entry))
    return out


def descendants(root):
    """Every live process below `root` (by PPid)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            pass
    found, todo = set(), [root]
    while todo:
        p = todo.pop()
        for child, parent in parents.items():
            if parent == p and child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cgroups_of(supervisor):
    prefix = f"cordon-{supervisor}-"
    found = []
    for top in ("/sys/fs/cgroup",):
        for dirpath, dirnames, _ in os.walk(top):
            found += [os.path.join(dirpath, d) for d in dirnames if d.startswith(prefix)]
            if dirpath.count("/") > 6:
                dirnames[:] = []
    return found


class SessionCase(JailFixtures):
    def setUp(self):
        super().setUp()
        self.xdg = self.mkdir("xdg")
        os.chmod(self.xdg, 0o700)
        self.sessions = []

    def tearDown(self):
        # A test that opened the modes up and failed: cordon refuses such a directory, stop could not run.
        for d in (self.xdg, os.path.join(self.xdg, "cordon")):
            if os.path.isdir(d):
                os.chmod(d, 0o700)
        for name in self.sessions:
            subprocess.run([Env.cordon, "session", "stop", name], env=self.env(), capture_output=True,
                           timeout=30, **self._identity())
        super().tearDown()

    def env(self):
        return {**super().env(), "XDG_RUNTIME_DIR": self.xdg}

    def cordon(self, *args, input=None, timeout=60, env=None, **kw):
        p = subprocess.run([Env.cordon, *args], cwd=self.cwd, env=env or self.env(), input=input,
                           capture_output=True, text=True, timeout=timeout, **self._identity(), **kw)
        return p.returncode, p.stdout, p.stderr

    def start(self, *flags, name=None):
        name = name or "t" + os.urandom(3).hex()
        t0 = time.monotonic()
        rc, out, err = self.cordon("session", "start", "--name", name, "--no-discover", *flags)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.strip(), name)
        self.assertLess(time.monotonic() - t0, 20, "start returns once the session serves")
        self.sessions.append(name)
        return name

    def join(self, name, script, input=None, timeout=60):
        return self.cordon("run", "--session", name, "-c", script, input=input, timeout=timeout)

    def status(self, name):
        rc, out, err = self.cordon("session", "list", "--json")
        self.assertEqual(rc, 0, err)
        for s in json.loads(out):
            if s["name"] == name:
                return s
        return None

    def jail_namespaces(self, name):
        rc, out, err = self.join(name, "readlink /proc/self/ns/pid /proc/self/ns/mnt /proc/self/ns/net")
        self.assertEqual(rc, 0, err)
        return out.split()

    def assert_all_gone(self, name, supervisor, spawned, pid_ns, mnt_ns, deadline=10):
        end = time.monotonic() + deadline
        while True:
            left = [p for p in spawned if alive(p)] + processes_in(pid_ns) + processes_in(mnt_ns, "mnt")
            cg = cgroups_of(supervisor)
            sock = os.path.exists(os.path.join(self.xdg, "cordon", name + ".sock"))
            if not left and not cg and not sock and not alive(supervisor):
                break
            if time.monotonic() > end:
                self.fail(f"left behind: processes {left}, cgroups {cg}, socket {sock}, "
                          f"supervisor alive {alive(supervisor)}")
            time.sleep(0.1)
        if name in self.sessions:
            self.sessions.remove(name)

    # --- what a session is for ---

    def test_background_server_answers_next_command(self):
        name = self.start()
        self.write(os.path.join(self.cwd, "marker.txt"), "served from the session\n")
        rc, out, err = self.join(name, "python3 -m http.server 3000 --bind 127.0.0.1 >/dev/null 2>&1 &")
        self.assertEqual(rc, 0, err)
        script = ("for i in $(seq 100); do curl -sf http://127.0.0.1:3000/marker.txt && exit 0; sleep 0.1; done;"
                  " exit 1")
        rc, out, err = self.join(name, script)
        self.assertEqual((rc, out), (0, "served from the session\n"), err)
        # And again: the server outlived the command that reached it.
        rc, out, err = self.join(name, "curl -sf http://localhost:3000/marker.txt")
        self.assertEqual((rc, out), (0, "served from the session\n"), err)
        # A jail of its own (plain `cordon run`) does not see it: the session's loopback is its own.
        rc, out, err = self.run_jail(["-c", "curl -sf --max-time 3 http://127.0.0.1:3000/marker.txt"])
        self.assertNotEqual(rc, 0, out)
        status = self.status(name)
        self.assertGreaterEqual(status["processes"], 1, status)
        self.assertEqual(status["commands"], 3, status)

    def test_published_port_reaches_a_server_started_by_a_command(self):
        # A session started with --publish: a server one command leaves running answers the host through the
        # published port, commands later; `stop` removes the listener.
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            host_port = s.getsockname()[1]
        name = self.start("--publish", f"{host_port}:3000")
        self.write(os.path.join(self.cwd, "marker.txt"), "published from the session\n")
        rc, out, err = self.join(name, f"{jailtest.PY} -m http.server 3000 --bind 127.0.0.1 >/dev/null 2>&1 &")
        self.assertEqual(rc, 0, err)
        rc, out, err = self.join(name, "for i in $(seq 100); do curl -sf http://127.0.0.1:3000/ >/dev/null && exit 0;"
                                       " sleep 0.1; done; exit 1")
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.join(name, "true")[0], 0)  # another command between: the server stays
        curl = subprocess.run(["curl", "-sS", "--max-time", "10", f"http://127.0.0.1:{host_port}/marker.txt"],
                              capture_output=True, text=True)
        self.assertEqual((curl.returncode, curl.stdout), (0, "published from the session\n"), curl.stderr)
        rc, out, err = self.cordon("session", "stop", name)
        self.assertEqual(rc, 0, err)
        self.sessions.remove(name)
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", host_port), timeout=5).close()

    def test_exit_status_stdin_stdout_stderr(self):
        name = self.start()
        self.assertEqual(self.join(name, "exit 7")[0], 7)
        rc, out, err = self.join(name, "cat; echo to-stderr >&2", input="hello through the session\n")
        self.assertEqual((rc, out, err), (0, "hello through the session\n", "to-stderr\n"))
        rc, out, err = self.join(name, "kill -9 $$")
        self.assertEqual(rc, 137, err)
        rc, out, err = self.cordon("run", "--session", name, "--", "/nonexistent/program")
        self.assertEqual(rc, 127, err)
        self.assertIn("/nonexistent/program", err)
        # The working directory is the caller's (in the session's view).
        sub = self.mkdir("project/sub")
        p = subprocess.run([Env.cordon, "run", "--session", name, "--", "pwd"], cwd=sub, env=self.env(),
                           capture_output=True, text=True, timeout=30, **self._identity())
        self.assertEqual((p.returncode, p.stdout.strip()), (0, sub), p.stderr)

    def test_signal_relayed(self):
        name = self.start()
        p = subprocess.Popen([Env.cordon, "run", "--session", name, "-c",
                              'trap "echo got TERM; exit 3" TERM; echo ready; while :; do sleep 0.05; done'],
                             cwd=self.cwd, env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, **self._identity())
        self.assertEqual(p.stdout.readline(), "ready\n")
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        self.assertEqual((p.returncode, out), (3, "got TERM\n"), err)

    def test_jail_and_policy_are_the_sessions(self):
        name = self.start()
        # The policy is the session's: no write outside the project, no network but the proxy.
        target = os.path.join(self.outside, "x")
        rc, out, err = self.join(name, f"echo no > {target}")
        self.assertNotEqual(rc, 0)
        self.assertFalse(os.path.exists(target))
        rc, out, err = self.join(name, "echo yes > written && cat written")
        self.assertEqual((rc, out), (0, "yes\n"), err)
        # The session's init is not the commands' to end or reach into.
        rc, out, err = self.join(name, "kill -TERM 1; kill -HUP 1; kill -INT 1; "
                                       "readlink /proc/1/fd/1000 || echo no-readlink; "
                                       "cat /proc/1/environ >/dev/null 2>&1 || echo no-environ")
        self.assertIn("no-environ", out, err)
        self.assertIn("no-readlink", out, err)
        self.assertNotIn("socket:", out)
        self.assertEqual(self.join(name, "echo alive")[1], "alive\n")
        rc, out, err = self.join(name, "echo $SANDBOX_RUNTIME $HTTP_PROXY")
        self.assertEqual(out.split()[0], "1", out)
        self.assertIn("127.0.0.1:", out)

    def test_widening_flags_refused(self):
        name = self.start()
        for flags in (["--allow-write", "/etc"], ["--allow-domain", "example.com"], ["--settings", "/x.json"],
                      ["--user", "root"], ["--no-discover"]):
            rc, out, err = self.cordon("run", "--session", name, *flags, "--", "true")
            self.assertEqual(rc, 2, err)
            self.assertIn(flags[0], err)
            self.assertIn("session", err)

    def test_stop_leaves_nothing(self):
        name = self.start("--pids", "200")
        pid_ns, mnt_ns, _ = self.jail_namespaces(name)
        self.assertEqual(self.join(name, "sleep 1000 >/dev/null 2>&1 & setsid sleep 1000 >/dev/null 2>&1 &")[0], 0)
        supervisor = self.status(name)["pid"]
        spawned = descendants(supervisor)
        self.assertGreaterEqual(len(processes_in(pid_ns)), 3)
        if os.geteuid() == 0 and not self.AS_USER:
            self.assertTrue(cgroups_of(supervisor), "--pids makes a cgroup as root")
        rc, out, err = self.cordon("session", "stop", name)
        self.assertEqual(rc, 0, err)
        # `stop` returns once everything is gone.
        self.assert_all_gone(name, supervisor, spawned, pid_ns, mnt_ns, deadline=0.5)
        rc, out, err = self.join(name, "true")
        self.assertEqual(rc, 125)
        self.assertIn("no session named", err)

    def test_sigkill_of_supervisor_leaves_nothing(self):
        name = self.start("--pids", "200")
        pid_ns, mnt_ns, _ = self.jail_namespaces(name)
        self.assertEqual(self.join(name, "sleep 1000 >/dev/null 2>&1 &")[0], 0)
        supervisor = self.status(name)["pid"]
        spawned = descendants(supervisor)
        os.kill(supervisor, signal.SIGKILL)
        self.assert_all_gone(name, supervisor, spawned, pid_ns, mnt_ns)

    def test_linger_ends_an_idle_session(self):
        name = self.start("--linger", "1")
        pid_ns, mnt_ns, _ = self.jail_namespaces(name)
        supervisor = self.status(name)["pid"]
        spawned = descendants(supervisor)
        # A command that runs longer than the linger keeps the session.
        rc, out, err = self.join(name, "sleep 2; echo still here")
        self.assertEqual((rc, out), (0, "still here\n"), err)
        self.assert_all_gone(name, supervisor, spawned, pid_ns, mnt_ns, deadline=8)

    # A server in the jail (127.0.0.1:3000) that answers each connection with one byte and keeps it open until
    # the client closes its end.
    HOLDING_SERVER = ("import socketserver\n"
                      "class Handler(socketserver.BaseRequestHandler):\n"
                      "    def handle(self):\n"
                      "        self.request.sendall(b'x')\n"
                      "        while self.request.recv(100):\n"
                      "            pass\n"
                      "class Server(socketserver.ThreadingTCPServer):\n"
                      "    allow_reuse_address = True\n"
                      "    daemon_threads = True\n"
                      "Server(('127.0.0.1', 3000), Handler).serve_forever()\n")

    def command_until_told(self, name, script):
        """Runs `script` in session `name` from a client whose stdin the test holds; returns the client once the
        script printed "ready" (it then waits for a line on stdin and ends)."""
        p = subprocess.Popen([Env.cordon, "run", "--session", name, "-c", script + "; read _ || :"], cwd=self.cwd,
                             env=self.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, **self._identity())
        self.addCleanup(lambda: p.poll() is None and p.kill())
        line = p.stdout.readline()
        self.assertEqual(line, "ready\n", p.stderr.read() if p.poll() is not None else line)
        return p

    def tell(self, p):
        out, err = p.communicate("\n", timeout=30)
        self.assertEqual(p.returncode, 0, err)

    def start_holding_server(self, name):
        server = self.write(os.path.join(self.dir, "hold.py"), self.HOLDING_SERVER)
        rc, out, err = self.join(name, f"{jailtest.PY} {server} </dev/null >/dev/null 2>&1 & "
                                       f"for i in $(seq 100); do {jailtest.PY} -c 'import socket; "
                                       "socket.create_connection((\"127.0.0.1\", 3000))' 2>/dev/null && exit 0;"
                                       " sleep 0.1; done; exit 1")
        self.assertEqual(rc, 0, err)

    def published_connection(self, host_port):
        c = socket.create_connection(("127.0.0.1", host_port), timeout=10)
        self.addCleanup(c.close)
        self.assertEqual(c.recv(1), b"x", "the published connection reached the jail's server")
        return c

    def test_linger_counts_a_published_connection(self):
        # A browser on the host using a published port is activity: the session stays while its connection is
        # open, although no command runs for longer than the linger, and ends once it closes.
        host_port = socket.create_server(("127.0.0.1", 0))
        port = host_port.getsockname()[1]
        host_port.close()
        name = self.start("--publish", f"{port}:3000", "--linger", "1")
        self.start_holding_server(name)
        pid_ns, mnt_ns, _ = self.jail_namespaces(name)
        supervisor = self.status(name)["pid"]
        spawned = descendants(supervisor)
        # The connection is open before the last command ends: no moment without activity.
        p = self.command_until_told(name, "echo ready")
        connection = self.published_connection(port)
        self.tell(p)
        time.sleep(3.5)
        status = self.status(name)
        self.assertIsNotNone(status, "the session lingered out with a published connection open")
        self.assertEqual((status["running"], status["connections"]), (0, 1), status)
        connection.close()
        self.assert_all_gone(name, supervisor, spawned, pid_ns, mnt_ns, deadline=8)

    def test_list_json_counts_every_connection(self):
        # `connections`: the proxy's (a command's client connected to $HTTP_PROXY) and a published port's.
        host_port = socket.create_server(("127.0.0.1", 0))
        port = host_port.getsockname()[1]
        host_port.close()
        name = self.start("--publish", f"{port}:3000")
        self.start_holding_server(name)
        self.assertEqual(self.status(name)["connections"], 0)
        p = self.command_until_told(
            name, f"{jailtest.PY} -c 'import os, socket, sys, urllib.parse; "
                  "u = urllib.parse.urlsplit(os.environ[\"HTTP_PROXY\"]); "
                  "s = socket.create_connection((u.hostname, u.port)); print(\"ready\", flush=True); "
                  "sys.stdin.readline()'")
        status = self.status(name)
        self.assertEqual((status["running"], status["connections"]), (1, 1), status)
        self.tell(p)
        connection = self.published_connection(port)
        end = time.monotonic() + 5
        while (status := self.status(name))["connections"] != 1 and time.monotonic() < end:
            time.sleep(0.1)
        self.assertEqual((status["running"], status["connections"]), (0, 1), status)
        connection.close()
        end = time.monotonic() + 5
        while (status := self.status(name))["connections"] != 0 and time.monotonic() < end:
            time.sleep(0.1)
        self.assertEqual(status["connections"], 0, status)

    def test_joined_commands_connections_reach_the_sessions_audit_log(self):
        audit = os.path.join(self.outside, "audit.jsonl")
        name = self.start("--audit-log", audit, "--allow-domain", Upstream.NAME, *Upstream.flags())
        rc, out, err = self.join(name, f"curl -sS --max-time 10 {Upstream.url('/index.html')}; "
                                       "curl -s -o /dev/null -w '%{http_code}\\n' --max-time 10 "
                                       "http://refused.cordon.example/")
        self.assertEqual((rc, out), (0, "hello from upstream\n403\n"), err)
        end = time.monotonic() + 5
        while True:
            with open(audit) as f:
                lines = [json.loads(line) for line in f if line.strip()]
            decisions = {(d["host"], d["decision"]) for d in lines if d.get("event") == "decision"}
            if {(Upstream.NAME, "allow"), ("refused.cordon.example", "deny")} <= decisions:
                break
            if time.monotonic() > end:
                self.fail(f"the joined command's connections are not in the session's audit log: {lines}")
            time.sleep(0.1)

    def test_list_json(self):
        name = self.start()
        self.join(name, "true")
        self.join(name, "sleep 1000 >/dev/null 2>&1 &")
        s = self.status(name)
        self.assertIsNotNone(s)
        for key in ("name", "pid", "age_seconds", "commands", "processes", "connections"):
            self.assertIn(key, s)
        self.assertEqual(s["commands"], 2, s)
        self.assertGreaterEqual(s["processes"], 1, s)
        self.assertEqual(s["connections"], 0, s)
        rc, out, err = self.cordon("session", "list")
        self.assertEqual(rc, 0, err)
        self.assertIn(name, out)
        # A socket nobody listens on (left by a machine that went down with a /tmp on disk) goes at the next list.
        stale = os.path.join(self.xdg, "cordon", "stale.sock")
        s = socket.socket(socket.AF_UNIX)
        s.bind(stale)
        s.close()
        self.own(stale)
        self.assertEqual([x["name"] for x in json.loads(self.cordon("session", "list", "--json")[1])], [name])
        self.assertFalse(os.path.exists(stale))

    def test_name_taken_and_bad(self):
        name = self.start()
        rc, out, err = self.cordon("session", "start", "--name", name, "--no-discover")
        self.assertEqual(rc, 125, err)
        self.assertIn("is running", err)
        rc, out, err = self.cordon("session", "start", "--name", "../x")
        self.assertEqual(rc, 2, err)
        rc, out, err = self.cordon("session", "start", "--name", "")
        self.assertEqual(rc, 2, err)
        self.assertIn("session name", err)

    def test_runtime_dir_of_others_not_used(self):
        # An $XDG_RUNTIME_DIR others can write to: the session directory goes where it would without one.
        uid = Env.uid if self.AS_USER else 0
        run_user = f"/run/user/{uid}"
        st = os.lstat(run_user) if os.path.isdir(run_user) else None
        fallback = (os.path.join(run_user, "cordon") if st and st.st_uid == uid and not st.st_mode & 0o022
                    else f"/tmp/cordon-{uid}")
        existed = os.path.exists(fallback)
        os.chmod(self.xdg, 0o777)
        name = None
        try:
            name = self.start()
            self.assertFalse(os.path.exists(os.path.join(self.xdg, "cordon")))
            self.assertTrue(os.path.exists(os.path.join(fallback, name + ".sock")))
            self.assertEqual(self.cordon("session", "stop", name)[0], 0)
            self.assertFalse(os.path.exists(os.path.join(fallback, name + ".sock")))
        finally:
            if name:  # found in the fallback only while the runtime directory is open to others
                self.cordon("session", "stop", name)
                self.sessions.remove(name)
            os.chmod(self.xdg, 0o700)
            if not existed:
                shutil.rmtree(fallback, ignore_errors=True)

    def test_socket_private_and_out_of_the_jails_view(self):
        settings = os.path.join(self.dir, "unix.json")
        with open(settings, "w") as f:
            json.dump({"sandbox": {"network": {"allowAllUnixSockets": True}}}, f)
        os.chmod(settings, 0o644)
        name = self.start("--settings", settings)
        sock = os.path.join(self.xdg, "cordon", name + ".sock")
        self.assertEqual(os.stat(sock).st_mode & 0o777, 0o600)
        self.assertEqual(os.stat(os.path.dirname(sock)).st_mode & 0o777, 0o700)
        # The jailed command (which may use Unix sockets here) finds no socket, and connecting fails.
        def probe(path):
            return (f"import socket, sys; s = socket.socket(socket.AF_UNIX); s.settimeout(3)\n"
                    f"try:\n    s.connect({path!r})\nexcept OSError as e:\n    print('unreachable', e); sys.exit()\n"
                    f"try:\n    s.sendall(b'L' + (2).to_bytes(4, sys.byteorder) + b'{{}}')\n"
                    f"except OSError:\n    pass\n"
                    f"n = int.from_bytes(s.recv(4), sys.byteorder); print('answer', s.recv(n).decode())\n")
        with open(os.path.join(self.dir, "probe.py"), "w") as f:
            f.write(probe(sock))
        rc, out, err = self.join(name, f"ls {self.xdg}/cordon; {jailtest.PY} {self.dir}/probe.py")
        self.assertNotIn(name + ".sock", out)
        self.assertIn("unreachable", out, err)
        # Reached all the same (a hard link of the socket where the jail sees it): the session refuses a
        # process of its own jail, although it has the session's uid.
        link = os.path.join(self.cwd, "link.sock")
        os.link(sock, link)
        with open(os.path.join(self.dir, "probe.py"), "w") as f:
            f.write(probe(link))
        rc, out, err = self.join(name, f"{jailtest.PY} {self.dir}/probe.py")
        # Refused either as a process of the session's own jail or as one outside the supervisor's pid
        # namespace: which check answers first depends on whether the peer's namespace could still be read.
        self.assertTrue(any(m in out for m in ("a process inside session", "serves only processes outside any jail")),
                        out + err)
        self.assertNotIn('"pid"', out)
        os.unlink(link)

    # A jailed command of another jail, whose policy lets it reach Unix sockets, finds the session's socket (the
    # session directory is masked only in the session's own view): it must neither run a command under the
    # session's (here wider) policy nor stop it.
    JOIN_PROBE = ("import array, json, os, socket, sys\n"
                  "if len(sys.argv) > 3:\n"
                  "    os.chdir(sys.argv[3])\n"
                  "for op in (b'J', b'S'):\n"
                  "    s = socket.socket(socket.AF_UNIX); s.settimeout(10)\n"
                  "    try:\n"
                  "        s.connect(sys.argv[1])\n"
                  "    except OSError as e:\n"
                  "        print('unreachable', e); continue\n"
                  "    body = json.dumps({'argv': ['/bin/sh', '-c', 'echo escaped > ' + sys.argv[2]],\n"
                  "                       'env': ['PATH=/usr/bin:/bin'], 'cwd': '/'}).encode()\n"
                  "    try:\n"
                  "        s.sendmsg([op], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [0, 1, 2]))]"
                  " if op == b'J' else [])\n"
                  "        s.sendall(len(body).to_bytes(4, sys.byteorder) + body)\n"
                  "    except OSError:\n"
                  "        pass\n"
                  "    while True:\n"
                  "        h = s.recv(4)\n"
                  "        if len(h) < 4: break\n"
                  "        print('answer', s.recv(int.from_bytes(h, sys.byteorder)).decode(), flush=True)\n")

    def another_jail_joins(self, *jail_flags):
        settings = os.path.join(self.dir, "unix.json")
        with open(settings, "w") as f:
            json.dump({"sandbox": {"network": {"allowAllUnixSockets": True}}}, f)
        os.chmod(settings, 0o644)
        # The session may write to outside/; the other jail may not.
        name = self.start("--allow-write", self.outside)
        probe = self.write(os.path.join(self.dir, "join_probe.py"), self.JOIN_PROBE)
        sessions = os.path.join(self.xdg, "cordon")
        sock = os.path.join(sessions, name + ".sock")
        target = os.path.join(self.outside, "escaped")
        # The socket under other names: a symlink and a hard link elsewhere, a path through the caller's
        # /proc/self/cwd, a path relative to its working directory.
        links = self.mkdir("links")
        os.symlink(sock, os.path.join(links, "symlink.sock"))
        os.link(sock, os.path.join(links, "hardlink.sock"))
        ways = [(sock,), (os.path.join(links, "symlink.sock"),), (os.path.join(links, "hardlink.sock"),),
                (f"/proc/self/cwd/{name}.sock", sessions), (f"{name}.sock", sessions)]
        for way in ways:
            rc, out, err = self.run_jail([*jail_flags, "--settings", settings, "--", jailtest.PY, probe, way[0],
                                          target, *way[1:]])
            self.assertFalse(os.path.exists(target),
                             f"a command of another jail ran in the session through {way}: " + out + err)
            self.assertNotIn('"started"', out, way)
            self.assertNotIn('"stopped"', out, way)
            self.assertIsNotNone(self.status(name), f"a command of another jail stopped the session through {way}")

    def test_another_jail_cannot_join_or_stop(self):
        self.another_jail_joins()

    def test_jail_without_namespaces_cannot_join_or_stop(self):
        self.another_jail_joins("--jail", "landlock")

    def probe_session(self, name, settings_doc, jail_flags, env=None, as_root_for_user=False):
        """Runs JOIN_PROBE in another jail against session `name`'s socket; True when it got in (ran a command in
        the session or stopped it). `as_root_for_user`: root runs that jail with --user (the test user)."""
        settings = os.path.join(self.dir, "probe_settings.json")
        with open(settings, "w") as f:
            json.dump(settings_doc, f)
        os.chmod(settings, 0o644)
        probe = self.write(os.path.join(self.dir, "join_probe.py"), self.JOIN_PROBE)
        sock = os.path.join(self.xdg, "cordon", name + ".sock")
        target = os.path.join(self.outside, "escaped")
        user = ["--user", Env.user] if self.USER_FLAG or as_root_for_user else []
        identity = {} if as_root_for_user else self._identity()
        p = subprocess.run([Env.cordon, "run", "--no-discover", *user, *jail_flags, "--settings", settings, "--",
                            jailtest.PY, probe, sock, target], cwd=self.cwd, env=env or self.env(),
                           capture_output=True, text=True, timeout=60, **identity)
        got_in = os.path.exists(target) or '"started"' in p.stdout or '"stopped"' in p.stdout or \
            self.status(name) is None
        return got_in, p.stdout + p.stderr

    def test_jail_without_namespaces_cannot_join_a_session_of_another_runtime_dir(self):
        # Review r27: the jail without namespaces finds session sockets only in the directories its own
        # supervisor knows ($XDG_RUNTIME_DIR/cordon of the run, /run/user/*/cordon, /tmp/cordon-*). A session
        # started with another XDG_RUNTIME_DIR (WSL's /mnt/wslg/runtime-dir, a custom one, or a run started
        # from cron, an IDE or sudo without the variable) keeps its socket elsewhere: the notifier performs the
        # connect from the run's supervisor, a host process with the session's uid, and the session takes it for
        # a client.
        name = self.start("--allow-write", self.outside)
        other = self.mkdir("other-xdg")
        os.chmod(other, 0o700)
        for env in ({**self.env(), "XDG_RUNTIME_DIR": other},
                    {k: v for k, v in self.env().items() if k != "XDG_RUNTIME_DIR"}):
            got_in, out = self.probe_session(name, {"sandbox": {"network": {"allowAllUnixSockets": True}}},
                                             ["--jail", "landlock"], env=env)
            self.assertFalse(got_in, f"the jail without namespaces joined or stopped the session "
                                     f"(XDG_RUNTIME_DIR={env.get('XDG_RUNTIME_DIR')}): {out}")

    def test_listed_session_socket_cannot_join_or_stop(self):
        # Review r27: allowUnixSockets naming a session's socket. The jail without namespaces refuses it
        # (host_rules::session_socket); the namespace jail's listed connect is performed by its supervisor (or
        # a connector of the caller's ids), a process of the host pid namespace: the session's peer check
        # takes it for a client, so the jailed command joins the session with its wider policy or stops it.
        for jail_flags in (["--jail", "landlock"], []):
            name = self.start("--allow-write", self.outside)
            sock = os.path.join(self.xdg, "cordon", name + ".sock")
            got_in, out = self.probe_session(name, {"sandbox": {"network": {"allowUnixSockets": [sock]}}},
                                             jail_flags)
            self.assertFalse(got_in, f"a listed session socket let {jail_flags or 'the namespace jail'} in: {out}")

    # A jailed command whose policy makes the host's /tmp (/run for root) and the session directory writable,
    # and lets it reach Unix sockets: it must not unregister the session's socket (the notifier refuses only
    # registered ones), move the registry away, or remove or move the socket (a socket of its own in its place
    # would receive the next joining command's descriptors and environment). Moves that succeed are undone
    # at once: the registry of root's sessions is shared with every other root session of the machine.
    ATTACK_PROBE = ("import os, sys\n"
                    "entry, sock, target, join_probe = sys.argv[1:5]\n"
                    "def attempt(what, f):\n"
                    "    try:\n"
                    "        f()\n"
                    "    except OSError as e:\n"
                    "        print(what, 'refused', e.errno, flush=True); return False\n"
                    "    print(what, 'done', flush=True); return True\n"
                    "def moved(what, path):\n"
                    "    if attempt(what, lambda: os.rename(path, path + '.moved')):\n"
                    "        os.rename(path + '.moved', path)\n"
                    "attempt('rm-entry', lambda: os.unlink(entry))\n"
                    "moved('rename-registry', os.path.dirname(entry))\n"
                    "moved('rename-session-dir', os.path.dirname(sock))\n"
                    "sys.argv = [join_probe, sock, target]\n"
                    "try:\n"
                    "    exec(open(join_probe).read())\n"
                    "except OSError as e:\n"
                    "    print('join refused', e.errno, flush=True)\n"
                    "attempt('rm-socket', lambda: os.unlink(sock))\n")

    def session_state_attack(self, jail_flags):
        settings = os.path.join(self.dir, "unix.json")
        with open(settings, "w") as f:
            json.dump({"sandbox": {"network": {"allowAllUnixSockets": True}}}, f)
        os.chmod(settings, 0o644)
        name = self.start("--allow-write", self.outside)
        supervisor = self.status(name)["pid"]
        # Unreachable once its socket is gone (a failing run): ended by its pid.
        self.addCleanup(lambda: alive(supervisor) and os.kill(supervisor, signal.SIGKILL))
        sock = os.path.join(self.xdg, "cordon", name + ".sock")
        st = os.stat(sock)
        registry = "/tmp/cordon-%d/sessions" % Env.uid if self.AS_USER else "/run/cordon/sessions"
        entry = os.path.join(registry, f"{st.st_dev}-{st.st_ino}")
        self.assertTrue(os.path.exists(entry), "the session is registered")
        target = os.path.join(self.outside, "escaped")
        join_probe = self.write(os.path.join(self.dir, "join_probe.py"), self.JOIN_PROBE)
        probe = self.write(os.path.join(self.dir, "attack_probe.py"), self.ATTACK_PROBE)
        # The registry's directory in a writable area: /run for root; the user's, as the namespace jail's /tmp is
        # its own (a writable root below the host's /tmp is the host's).
        writable = os.path.dirname(registry) if self.AS_USER else "/run"
        rc, out, err = self.run_jail([*jail_flags, "--settings", settings, "--allow-write", writable,
                                      "--allow-write", self.xdg, "--", jailtest.PY, probe, entry, sock, target,
                                      join_probe])
        what = " ".join(jail_flags) or "the namespace jail"
        # EACCES or EROFS from the rules; EBUSY where the namespace jail's read-only bind is the mount point.
        for step in ("rm-entry", "rename-registry", "rename-session-dir", "rm-socket"):
            self.assertRegex(out, f"{step} refused (13|16|30)", f"{what}: {step}: {out}{err}")
        self.assertTrue(os.path.exists(entry), f"{what} unregistered the session: {out}{err}")
        self.assertTrue(os.path.exists(sock), f"{what} removed the session's socket: {out}{err}")
        self.assertFalse(os.path.exists(target), f"{what} ran a command in the session: {out}{err}")
        self.assertNotIn('"started"', out)
        self.assertNotIn('"stopped"', out)
        self.assertIsNotNone(self.status(name), f"{what} stopped the session: {out}{err}")
        # Reported as never allowed, with its reason.
        self.assertIn("cordon's sessions", err)
        self.assertEqual(self.join(name, "echo still-serving")[1].strip(), "still-serving")

    def test_jail_cannot_unregister_or_replace_a_session(self):
        self.session_state_attack([])

    def test_jail_without_namespaces_cannot_unregister_or_replace_a_session(self):
        self.session_state_attack(["--jail", "landlock"])

    def test_terminal_not_readable_after_the_command(self):
        # The joining command gets a pty of the client's, not the client's terminal (a process it leaves
        # running, which a session keeps, would read what the user types into their shell after `cordon run
        # --session` returned): the client closes its master at the end, the process reads EIO or nothing.
        name = self.start()
        script = self.write(os.path.join(self.dir, "bg.py"),
                            "import os, time\n"
                            "os.read(0, 6)\n"
                            "r, w = os.pipe()\n"
                            "if os.fork() == 0:\n"
                            "    os.setsid(); os.write(w, b'x'); time.sleep(1.5)\n"
                            "    try:\n"
                            "        data = os.read(0, 100)\n"
                            "    except OSError:\n"
                            "        data = b''\n"
                            "    open('stolen', 'wb').write(data); os._exit(0)\n"
                            # out of the terminal's session before the command ends (its hangup would end it)
                            "os.read(r, 1)\n")
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen([Env.cordon, "run", "--session", name, "--", jailtest.PY, script], cwd=self.cwd,
                                 env=self.env(), stdin=slave, stdout=slave, stderr=slave, **self._identity())
            os.close(slave)
            slave = None
            time.sleep(0.5)
            os.write(master, b"first\n")
            self.assertEqual(p.wait(timeout=30), 0)
            os.write(master, b"typed-after-the-command\n")
            stolen = os.path.join(self.cwd, "stolen")
            end = time.monotonic() + 10
            while not os.path.exists(stolen) and time.monotonic() < end:
                time.sleep(0.1)
            time.sleep(0.2)
            # The background process ran and read (nothing, or an error), not what was typed.
            self.assertTrue(os.path.exists(stolen))
            with open(stolen, "rb") as f:
                self.assertNotIn(b"typed-after", f.read())
        finally:
            os.close(master)
            if slave is not None:
                os.close(slave)


    def on_terminal(self, name, command, typed=(), signal_client=None):
        """Runs `command` in session `name` from a client whose 0-2 are a fresh terminal (a pty of the test's);
        writes each of `typed` once the previous output has a prompt ('> '); optionally signals the client.
        Returns (status, output, the terminal's modes before, after)."""
        master, slave = pty.openpty()
        try:
            before = termios.tcgetattr(slave)
            p = subprocess.Popen([Env.cordon, "run", "--session", name, "--", *command], cwd=self.cwd,
                                 env=self.env(), stdin=slave, stdout=slave, stderr=slave, **self._identity())
            out, todo, end = b"", list(typed), time.monotonic() + 30
            while p.poll() is None and time.monotonic() < end:
                ready, _, _ = select.select([master], [], [], 0.1)
                if ready:
                    out += os.read(master, 4096)
                if out.endswith(b"> ") and todo:
                    item = todo.pop(0)
                    if isinstance(item, int):
                        p.send_signal(item)
                    else:
                        os.write(master, item)
                    out += b"|"  # a prompt answered once
            status = p.wait(timeout=30)
            while select.select([master], [], [], 0.2)[0]:
                out += os.read(master, 4096)
            return status, out, before, termios.tcgetattr(slave)
        finally:
            os.close(master)
            os.close(slave)

    def test_joined_command_has_a_terminal(self):
        name = self.start()
        # A terminal on 0-2, input typed reaches it, and its output reaches the user's terminal.
        status, out, before, after = self.on_terminal(
            name, ["/bin/sh", "-c", "test -t 0 && test -t 1 && test -t 2 && echo is-a-tty; "
                                    "printf '> '; read line; echo got:$line; exit 3"], [b"typed-in\r"])
        self.assertEqual(status, 3, out)
        self.assertIn(b"is-a-tty", out)
        self.assertIn(b"got:typed-in", out)
        self.assertEqual(before, after, "the user's terminal is restored")
        # ^C typed is the command's SIGINT (the pty is its controlling terminal); ^D its end of file.
        status, out, before, after = self.on_terminal(
            name, [jailtest.PY, "-c", "import sys, time; print('> ', end='', flush=True); time.sleep(30)"],
            [b"\x03"])
        self.assertEqual(status, 128 + signal.SIGINT, out)
        self.assertEqual(before, after)
        status, out, _, _ = self.on_terminal(name, ["/bin/sh", "-c", "printf '> '; cat; echo eof-seen"],
                                             [b"abc\r\x04"])
        self.assertEqual(status, 0, out)
        self.assertIn(b"eof-seen", out)
        # A signal to the client: relayed (SIGTERM), or the client's own end (SIGALRM); the terminal is
        # restored either way.
        for sig in (signal.SIGTERM, signal.SIGALRM):
            status, out, before, after = self.on_terminal(
                name, [jailtest.PY, "-c", "import time; print('> ', end='', flush=True); time.sleep(30)"], [sig])
            self.assertIn(status, (128 + sig, -sig), out)
            self.assertEqual(before, after, f"the terminal is left raw after {sig!r}")
        # Output redirected, input a terminal: the output is as before, the input still the pty's.
        master, slave = pty.openpty()
        try:
            p = subprocess.run([Env.cordon, "run", "--session", name, "--", "/bin/sh", "-c",
                                "test -t 0 && echo in-tty; test -t 1 || echo out-not-tty"], cwd=self.cwd,
                               env=self.env(), stdin=slave, capture_output=True, timeout=30, **self._identity())
        finally:
            os.close(master)
            os.close(slave)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), [b"in-tty", b"out-not-tty"])

class AsRoot(SessionCase, unittest.TestCase):
    def test_another_user_is_refused(self):
        name = self.start()
        other = {"user": Env.uid, "group": Env.gid, "extra_groups": []}
        env = {**self.env(), "HOME": "/nonexistent"}
        # Through cordon: the directory is not the user's.
        for args in (["session", "stop", name], ["run", "--session", name, "--", "true"]):
            p = subprocess.run([Env.cordon, *args], cwd="/", env=env, capture_output=True, text=True, timeout=30,
                               **other)
            self.assertNotEqual(p.returncode, 0, p.stderr)
        # Past the file modes (as if they were opened up): SO_PEERCRED still refuses join and stop.
        sock = os.path.join(self.xdg, "cordon", name + ".sock")
        os.chmod(self.xdg, 0o755)
        os.chmod(os.path.dirname(sock), 0o755)
        os.chmod(sock, 0o777)
        script = ("import socket, sys, json\n"
                  "for op in (b'S', b'J', b'L'):\n"
                  "    s = socket.socket(socket.AF_UNIX); s.settimeout(5); s.connect(sys.argv[1])\n"
                  "    body = json.dumps({'argv': ['true'], 'env': [], 'cwd': '/'}).encode()\n"
                  "    try:\n"
                  "        s.sendall(op + len(body).to_bytes(4, sys.byteorder) + body)\n"
                  "    except BrokenPipeError:\n"
                  "        pass  # refused before the request was read: the answer is waiting\n"
                  "    n = int.from_bytes(s.recv(4), sys.byteorder); print(s.recv(n).decode())\n")
        p = subprocess.run([jailtest.PY, "-c", script, sock], capture_output=True, text=True, timeout=30, **other)
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 3, p.stdout)
        for line in lines:
            self.assertIn("belongs to uid 0", json.loads(line)["error"])
        # cordon itself refuses a session directory others can enter; closed again, the session runs on.
        self.assertEqual(self.cordon("session", "list")[0], 1)
        os.chmod(os.path.dirname(sock), 0o700)
        os.chmod(self.xdg, 0o700)
        self.assertIsNotNone(self.status(name), "the session runs on")
        self.assertEqual(self.join(name, "true")[0], 0)


class AsUser(SessionCase, unittest.TestCase):
    AS_USER = True

    def test_root_run_with_user_without_namespaces_cannot_join_a_session_of_another_runtime_dir(self):
        # Review r27, the --user variant: the user's session keeps its socket in the user's XDG_RUNTIME_DIR;
        # root runs the jail without namespaces with --user (that user) and another XDG_RUNTIME_DIR or none.
        # The root supervisor performs the command's connect as the user: the session would take it for one
        # of its clients. Nothing of the user's directories is listed by the run (a registry by uid).
        name = self.start("--allow-write", self.outside)
        other = tempfile.mkdtemp(prefix="root-xdg-", dir=Env.base)
        self.addCleanup(shutil.rmtree, other, ignore_errors=True)
        os.chmod(other, 0o700)
        root_env = {**self.env(), "XDG_RUNTIME_DIR": other}
        for env in (root_env, {k: v for k, v in root_env.items() if k != "XDG_RUNTIME_DIR"}):
            got_in, out = self.probe_session(name, {"sandbox": {"network": {"allowAllUnixSockets": True}}},
                                             ["--jail", "landlock"], env=env, as_root_for_user=True)
            self.assertFalse(got_in, f"root's jail without namespaces (--user) joined or stopped the user's "
                                     f"session (XDG_RUNTIME_DIR={env.get('XDG_RUNTIME_DIR')}): {out}")
            # Refused by the notifier (EACCES), not only by the session's peer check (which cannot read the
            # root supervisor's pid namespace and refuses it for that).
            self.assertEqual(out.count("unreachable [Errno 13]"), 2, out)


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env, Upstream], "a test user"))
