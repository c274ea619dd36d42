"""Helpers for cordon's integration tests (the proxy's, and the jail's, agent's, policy's and stress tests'): a DNS
server, upstream servers (HTTP, TLS, raw TCP), a test host in a network namespace, and a running `cordon proxy`.
Everything binds port 0 (on 127.0.0.1 or a test host's address) and is torn down by the test that made it."""

import hashlib
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import socketserver
import ssl
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import transfer

CORDON = os.environ.get("CORDON_BIN") or os.path.join(os.path.dirname(__file__), "..", "..", "build", "cordon")

# The test upstreams and DNS answers live on 127.0.0.0/8, which the address guard refuses unless allowed.
LOOPBACK = ["--allow-address", "127.0.0.0/8"]


def wait_for(predicate, timeout=10):
    """Polls `predicate` until it is true (True) or `timeout` seconds pass (False)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


# ---------------------------------------------------------------------------------------------------- DNS server

class DnsServer:
    """Answers A/AAAA queries from `records`: name -> list of IPs, or "NXDOMAIN", or "DROP" (never answers), or
    ("DELAY", seconds, [IPs]) (answers late). Counts queries per name."""

    def __init__(self, records=None, ttl=60):
        self.records = dict(records or {})
        self.ttl = ttl
        self.queries = []
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.running = True
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self):
        return "127.0.0.1:%d" % self.port

    def close(self):
        self.running = False
        self.sock.close()

    def _serve(self):
        while self.running:
            try:
                data, peer = self.sock.recvfrom(2048)
            except OSError:
                return
            try:
                reply = self._answer(data)
            except Exception:  # a malformed query: ignore it
                continue
            if isinstance(reply, tuple):  # answer later
                delay, reply = reply
                threading.Timer(delay, self._send_late, args=(reply, peer)).start()
                continue
            try:
                self.sock.sendto(reply, peer)
            except OSError:
                return

    def _answer(self, data):
        qid, flags, qd = struct.unpack("!HHH", data[:6])
        pos, labels = 12, []
        while data[pos]:
            n = data[pos]
            labels.append(data[pos + 1:pos + 1 + n].decode())
            pos += 1 + n
        pos += 1
        qtype, qclass = struct.unpack("!HH", data[pos:pos + 4])
        question = data[12:pos + 4]
        name = ".".join(labels).lower()
        self.queries.append((name, qtype))
        entry = self.records.get(name)
        if entry == "DROP":
            raise ValueError("no answer")  # a resolver that never answers
        delay = None
        if isinstance(entry, tuple) and entry[0] == "DELAY":
            delay, entry = entry[1], entry[2]
        answers = []
        rcode = 0
        if entry is None or entry == "NXDOMAIN":
            rcode = 3
        else:
            for ip in entry:
                if qtype == 1 and ":" not in ip:
                    answers.append(struct.pack("!HHHIH", 0xC00C, 1, 1, self.ttl, 4) + socket.inet_aton(ip))
                elif qtype == 28 and ":" in ip:
                    answers.append(struct.pack("!HHHIH", 0xC00C, 28, 1, self.ttl, 16) +
                                   socket.inet_pton(socket.AF_INET6, ip))
        header = struct.pack("!HHHHHH", qid, 0x8180 | rcode, 1, len(answers), 0, 0)
        reply = header + question + b"".join(answers)
        return (delay, reply) if delay else reply

    def _send_late(self, reply, peer):
        if not self.running:
            return
        try:
            self.sock.sendto(reply, peer)
        except OSError:
            pass

    def count(self, name):
        return sum(1 for n, _ in self.queries if n == name)


# ---------------------------------------------------------------------------------------------------- upstreams

class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(data)
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        h = hashlib.sha256()
        left = n
        while left:
            chunk = self.rfile.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
        self._sha = h.hexdigest()
        self._len = n - left
        return None

    def _reply(self, status, body, headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        server = self.server
        server.requests.append((self.command, self.path, dict(self.headers)))
        if self.path.startswith("/size/"):
            n = int(self.path.split("/")[2])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            block = b"x" * 65536
            while n > 0:
                self.wfile.write(block[:min(n, len(block))])
                n -= min(n, len(block))
            return
        if "/bytes/" in self.path:  # N bytes of transfer.pattern(), streamed
            n = int(self.path.rsplit("/", 1)[1])
            self.send_response(200)
            self.send_header("Content-Length", str(n))
            self.end_headers()
            for piece in transfer.pattern(n):
                self.wfile.write(piece)
            return
        if "/reflect" in self.path:
            # CORS middleware's habit (Origin echoed) and the request's credentials echoed in a header and in a
            # chunked body, split across chunks at every position.
            auth = (self.headers.get("Authorization") or "").encode()
            self.send_response(200)
            self.send_header("Access-Control-Allow-Origin", self.headers.get("Origin") or "*")
            self.send_header("X-Echo-Authorization", auth.decode())
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            parts = [b"auth=" + auth + b"\n"]
            for i in range(1, len(auth)):
                parts += [auth[:i], auth[i:] + b"\n"]
            for part in parts:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        if self.path == "/slow":
            time.sleep(5)
        if self.path == "/eof":
            # A response delimited by closing the connection.
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until-eof")
            self.close_connection = True
            return
        if self.path == "/chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in (b"hello ", b"chunked ", b"world"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return
        body = json.dumps({"name": server.name, "path": self.path, "host": self.headers.get("Host"),
                           "headers": {k.lower(): v for k, v in self.headers.items()}}).encode()
        self._reply(200, body, [("Content-Type", "application/json")])

    def do_POST(self):
        self.server.requests.append((self.command, self.path, dict(self.headers)))
        data = self._body()
        if data is not None:
            self._sha, self._len = hashlib.sha256(data).hexdigest(), len(data)
        self._reply(200, json.dumps({"sha256": self._sha, "length": self._len}).encode())


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, name, tls=None):
        self.name = name
        self.requests = []
        self.connections = 0
        self.tls = tls
        super().__init__(addr, _Handler)

    def get_request(self):
        sock, addr = super().get_request()
        self.connections += 1
        if self.tls:
            sock = self.tls.wrap_socket(sock, server_side=True)
        return sock, addr


class HttpUpstream:
    """A threaded HTTP/1.1 server on `host`:0 (TLS when `tls` is an SSLContext)."""

    def __init__(self, name="upstream", host="127.0.0.1", tls=None):
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        _Server.address_family = family
        self.server = _Server((host, 0), name, tls)
        _Server.address_family = socket.AF_INET
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def connections(self):
        return self.server.connections

    @property
    def requests(self):
        return self.server.requests

    def close(self):
        self.server.shutdown()
        self.server.server_close()


class TcpUpstream:
    """Raw TCP: `mode` "echo" echoes; "count" reads until EOF then sends b"got N sha" and closes;
    "silent" accepts and never answers; "sink" reads and discards, then sends back the count on EOF."""

    def __init__(self, mode="echo", host="127.0.0.1", backlog=64):
        self.mode = mode
        self.sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(backlog)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.clients = []
        self.running = True
        if mode != "backlog":
            threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while self.running:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            self.clients.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        try:
            if self.mode == "echo":
                while True:
                    data = conn.recv(1 << 16)
                    if not data:
                        conn.shutdown(socket.SHUT_WR)
                        return
                    conn.sendall(data)
            elif self.mode == "count":
                h, n = hashlib.sha256(), 0
                while True:
                    data = conn.recv(1 << 16)
                    if not data:
                        break
                    h.update(data)
                    n += len(data)
                conn.sendall(b"got %d %s" % (n, h.hexdigest().encode()))
                conn.shutdown(socket.SHUT_WR)
            elif self.mode == "silent":
                while conn.recv(1 << 16):
                    pass
        except OSError:
            pass

    def close(self):
        self.running = False
        for c in self.clients:
            try:
                c.close()
            except OSError:
                pass
        self.sock.close()


def make_cert(directory, names):
    """A self-signed certificate for `names` (DNS SANs), made with the openssl CLI. Returns (cert, key)."""
    cert, key = os.path.join(directory, "cert.pem"), os.path.join(directory, "key.pem")
    san = ",".join("DNS:" + n for n in names)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "2", "-subj", "/CN=" + names[0], "-addext", "subjectAltName=" + san],
                   check=True, capture_output=True)
    return cert, key


# ---------------------------------------------------------------------------------------------------- test hosts

def can_connect(host, port):
    """Whether a TCP connection to host:port is accepted within a second."""
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


class NetnsHost:
    """A test host (needs root): a network namespace of its own behind a veth pair. `subnet` is an IPv4 /24 of
    our choosing ("10.202.7"), `subnet6` optionally an IPv6 /64 ("fdcd:7::"); the host's side is .1 (::1), the
    namespace's .2 (::2) = `v4` (`v6`). start() runs a process inside; close() ends those and removes the
    namespace and the veth pair (also after a failed set-up)."""

    def __init__(self, subnet, subnet6=None):
        tag = secrets.token_hex(3)
        self.ns = "cordon-th-" + tag
        self.host_if, ns_if = "cth%sa" % tag, "cth%sb" % tag
        self.v4 = subnet + ".2"
        self.v6 = subnet6 + "2" if subnet6 else None
        self.procs = []
        cmds = [["ip", "netns", "add", self.ns],
                ["ip", "link", "add", self.host_if, "type", "veth", "peer", "name", ns_if],
                ["ip", "link", "set", ns_if, "netns", self.ns],
                ["ip", "addr", "add", subnet + ".1/24", "dev", self.host_if]]
        if subnet6:
            cmds.append(["ip", "addr", "add", subnet6 + "1/64", "dev", self.host_if, "nodad"])
        cmds += [["ip", "link", "set", self.host_if, "up"],
                 ["ip", "-n", self.ns, "addr", "add", self.v4 + "/24", "dev", ns_if]]
        if subnet6:
            cmds.append(["ip", "-n", self.ns, "addr", "add", self.v6 + "/64", "dev", ns_if, "nodad"])
        cmds += [["ip", "-n", self.ns, "link", "set", ns_if, "up"],
                 ["ip", "-n", self.ns, "link", "set", "lo", "up"]]
        try:
            for c in cmds:
                subprocess.run(c, check=True, capture_output=True)
        except BaseException:
            self.close()
            raise

    def start(self, argv, **kw):
        """Starts argv inside the namespace (ended by close())."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *argv], **kw)
        self.procs.append(p)
        return p

    def wait_for_ports(self, *ports, timeout=15):
        """Waits until every port accepts connections on `v4`; raises RuntimeError if one does not in time."""
        if not wait_for(lambda: all(can_connect(self.v4, p) for p in ports), timeout):
            raise RuntimeError("the test host %s did not come up on %s" % (self.v4, ports))

    def close(self):
        for p in self.procs:
            p.kill()
            p.wait()
        self.procs = []
        subprocess.run(["ip", "netns", "del", self.ns], check=False, capture_output=True)
        subprocess.run(["ip", "link", "del", self.host_if], check=False, capture_output=True)


# ---------------------------------------------------------------------------------------------------- the proxy

class Proxy:
    """A running `cordon proxy` on 127.0.0.1:0 with an audit log in `workdir`."""

    def __init__(self, workdir, args, dns=None, audit=True, extra_env=None, listen="127.0.0.1:0"):
        self.workdir = workdir
        self.audit_path = os.path.join(workdir, "audit-%d.log" % id(self))
        managed = os.path.join(workdir, "managed")
        os.makedirs(managed, exist_ok=True)
        cmd = [CORDON, "proxy", "--listen", listen, "--no-discover", "--managed-dir", managed]
        if dns:
            cmd += ["--dns-server", dns.address]
        if audit:
            cmd += ["--audit-log", self.audit_path]
        cmd += list(args)
        env = dict(os.environ, HOME=workdir)
        env.update(extra_env or {})
        self.stderr_path = os.path.join(workdir, "stderr-%d.log" % id(self))
        self.stderr_file = open(self.stderr_path, "w+b")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.stderr_file, cwd=workdir, env=env)
        self.port = None
        self.metrics_port = None
        deadline = time.time() + 10
        while time.time() < deadline:
            text = self.stderr()
            m = re.search(r"listening on [^\s]*:(\d+)", text)
            if m:
                self.port = int(m.group(1))
                mm = re.search(r"metrics on [^\s]*:(\d+)", text)
                if "--metrics" in args and not mm:
                    time.sleep(0.01)
                    continue
                if mm:
                    self.metrics_port = int(mm.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError("cordon proxy exited %d: %s" % (self.proc.returncode, text))
            time.sleep(0.01)
        if self.port is None:
            raise RuntimeError("cordon proxy did not start: " + self.stderr())

    def stderr(self):
        with open(self.stderr_path, "rb") as f:
            return f.read().decode(errors="replace")

    def url(self, scheme="http"):
        return "%s://127.0.0.1:%d" % (scheme, self.port)

    def audit(self):
        if not os.path.exists(self.audit_path):
            return []
        with open(self.audit_path) as f:
            text = f.read()
        # The log is written behind the answers: a line being written is read up to its newline or not at all.
        return [json.loads(line) for line in text.split("\n")[:-1] if line.strip()]

    def decisions(self):
        return [e for e in self.audit() if e["event"] == "decision"]

    def wait_audit(self, predicate, timeout=5):
        deadline = time.time() + timeout
        while time.time() < deadline:
            lines = self.audit()
            if predicate(lines):
                return lines
            time.sleep(0.02)
        return self.audit()

    def signal(self, sig):
        self.proc.send_signal(sig)

    def stop(self, timeout=15):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr_file.close()
        text = self.stderr()
        if "Sanitizer" in text or "runtime error:" in text:
            raise AssertionError("sanitizer report from cordon proxy:\n" + text[-4000:])
        return self.proc.returncode

    def connect(self, timeout=10):
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return s


def recv_until(sock, marker=b"\r\n\r\n", limit=1 << 20):
    data = b""
    while marker not in data and len(data) < limit:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def recv_all(sock, limit=1 << 30):
    data = bytearray()
    while len(data) < limit:
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        data += chunk
    return bytes(data)


def read_http_response_file(f):
    """Reads one HTTP response from a buffered file (sock.makefile("rb")), leaving what follows unread."""
    line = f.readline()
    if not line:
        raise EOFError("connection closed before a response head")
    status = int(line.split()[1])
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        k, v = line.decode("latin-1").split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        return status, headers, f.read(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            size = int(f.readline().split(b";")[0], 16)
            if size == 0:
                f.readline()
                return status, headers, body
            body += f.read(size)
            f.readline()
    return status, headers, f.read()


def read_http_response(sock):
    """Reads one HTTP response (Content-Length or chunked or until EOF). Returns (status, headers, body).
    Bytes after the response are lost: for pipelining use read_http_response_file."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("connection closed before a response head: %r" % buf)
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {}
    for line in lines[1:]:
        k, v = line.split(":", 1)
        headers[k.strip().lower()] = v.strip()
    if "content-length" in headers:
        n = int(headers["content-length"])
        while len(rest) < n:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        return status, headers, rest[:n]
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while True:
            while b"\r\n" not in rest:
                rest += sock.recv(65536)
            line, rest = rest.split(b"\r\n", 1)
            size = int(line.split(b";")[0], 16)
            while len(rest) < size + 2:
                rest += sock.recv(65536)
            if size == 0:
                break
            body += rest[:size]
            rest = rest[size + 2:]
        return status, headers, body
    return status, headers, rest + recv_all(sock)


class TempDirTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="cordon-proxy-test-")
        self.cleanups = []
        # addCleanup runs even when setUp fails or skips, unlike tearDown.
        self.addCleanup(self._clean_up)

    def _clean_up(self):
        failures = []
        for fn in reversed(self.cleanups):
            try:
                fn()
            except AssertionError as e:
                failures.append(str(e))
            except Exception:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)
        if failures:
            self.fail("\n".join(failures))

    def dns(self, records, ttl=60):
        d = DnsServer(records, ttl)
        self.cleanups.append(d.close)
        return d

    def upstream(self, **kw):
        u = HttpUpstream(**kw)
        self.cleanups.append(u.close)
        return u

    def tcp(self, mode="echo", **kw):
        t = TcpUpstream(mode, **kw)
        self.cleanups.append(t.close)
        return t

    def proxy(self, args, dns=None, **kw):
        p = Proxy(self.dir, args, dns=dns, **kw)
        self.cleanups.append(p.stop)
        return p

    def curl(self, *args, timeout=30):
        env = {k: v for k, v in os.environ.items() if "proxy" not in k.lower()}
        return subprocess.run(["curl", "-sS", "--max-time", str(timeout), *args], capture_output=True, env=env)
