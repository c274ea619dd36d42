#!/usr/bin/python3
"""Transparent proxying and the DNS stub (issue 12), through real `cordon run` jails, as root and as an
unprivileged user created for the run. Every proxy variable is removed inside the jail, so only the transparent
path can reach anything. Hermetic: a test host in a network namespace of our own (veth, IPv4 and IPv6) runs
HTTP, HTTPS and an sshd; our own DNS server on 127.0.0.1 counts every query it gets.

    python3 tests/jail/test_transparent.py --cordon build/cordon [-k pattern]
"""
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import PY, DnsServer, Env, NetnsHost, make_cert, make_git_repo, start_sshd  # noqa: E402

TAG = secrets.token_hex(3)
WEB = f"web-{TAG}.cordon-test.example"        # allowed on every port
SSH = f"ssh-{TAG}.cordon-test.example"        # allowed on the sshd's port only
SECRET = f"secret-{TAG}.cordon-test.example"  # *.SECRET denied
PROXY_VARIABLES = ("HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy GRPC_PROXY grpc_proxy "
                   "FTP_PROXY ftp_proxy RSYNC_PROXY NO_PROXY no_proxy DOCKER_HTTP_PROXY DOCKER_HTTPS_PROXY "
                   "CLOUDSDK_PROXY_TYPE CLOUDSDK_PROXY_ADDRESS CLOUDSDK_PROXY_PORT JAVA_TOOL_OPTIONS GIT_SSH_COMMAND")


class Host:
    """A test host (NetnsHost, IPv4 and IPv6): HTTP on 8080, HTTPS on 8443 (a certificate for WEB), sshd on 2222;
    plus the DNS server (A and AAAA for WEB and SSH, NXDOMAIN otherwise; it counts every query)."""

    net = None
    dns = None

    @classmethod
    def setup(cls):
        cls.base = tempfile.mkdtemp(prefix="host-", dir=Env.base)
        os.chmod(cls.base, 0o755)
        octet = 1 + secrets.randbelow(250)
        cls.net = NetnsHost(f"10.203.{octet}", f"fdcd:{octet:x}::")
        cls.v4, cls.v6 = cls.net.v4, cls.net.v6
        srv = os.path.join(cls.base, "srv")
        os.mkdir(srv)
        with open(os.path.join(srv, "index.html"), "w") as f:
            f.write("transparent test host\n")
        cls.cert, key = make_cert(cls.base, [WEB])
        os.chmod(cls.cert, 0o644)
        server = os.path.join(cls.base, "server.py")
        with open(server, "w") as f:
            f.write(f"""
import http.server, socket, ssl, sys, threading
class H(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *a, **kw): super().__init__(*a, directory={srv!r}, **kw)
    def log_message(self, *a): pass
class S(http.server.ThreadingHTTPServer):
    address_family = socket.AF_INET6
    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()
plain = S(("::", 8080), H)
tls = S(("::", 8443), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain({cls.cert!r}, {key!r})
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
threading.Thread(target=tls.serve_forever, daemon=True).start()
plain.serve_forever()
""")
        cls.net.start([PY, server], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.repo = os.path.join(cls.base, "repo.git")
        make_git_repo(cls.base, cls.repo, "hello over ssh\n")
        _, cls.client_key = start_sshd(os.path.join(cls.base, "ssh"), ["0.0.0.0:2222", "[::]:2222"], cls.net.start)
        cls.dns = DnsServer({WEB: [cls.v4, cls.v6], SSH: [cls.v4, cls.v6]})
        cls.net.wait_for_ports(8080, 8443, 2222)

    @classmethod
    def teardown(cls):
        if cls.net:
            cls.net.close()
        if cls.dns:
            cls.dns.close()


class Transparent:
    AS_USER = False

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="case-", dir=Env.base)
        os.chmod(self.dir, 0o755)
        self.cwd = os.path.join(self.dir, "project")
        self.home = os.path.join(self.dir, "home")
        self.own(self.dir)
        for d in (self.cwd, self.home):
            os.mkdir(d)
            self.own(d)
        self.audit = os.path.join(self.dir, "audit.log")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def own(self, path):
        if self.AS_USER:
            os.chown(path, Env.uid, Env.gid)

    def jail(self, script, *flags, rules=None, timeout=60):
        """Runs `script` with every proxy variable removed; returns (rc, stdout, stderr)."""
        if rules is None:
            rules = ["--allow-domain", WEB, "--allow-domain", f"{SSH}:2222", "--deny-domain", f"*.{SECRET}"]
        args = [Env.cordon, "run", "--no-discover", "--dns-server", f"127.0.0.1:{Host.dns.port}",
                "--allow-address", "10.203.0.0/16", "--allow-address", "fdcd::/16", "--audit-log", self.audit,
                *rules, *flags, "-c", f"unset {PROXY_VARIABLES}; {script}"]
        identity = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if self.AS_USER else {}
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": self.home, "LANG": "C.UTF-8"}
        r = subprocess.run(args, cwd=self.cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           timeout=timeout, **identity)
        return r.returncode, r.stdout, r.stderr

    def events(self, kind="decision"):
        with open(self.audit) as f:
            return [e for e in map(json.loads, f) if e["event"] == kind]

    # --- by name, through the DNS stub's fake addresses --------------------------------------------------------

    def test_http_and_https_by_name(self):
        rc, out, err = self.jail(f"curl -sS --noproxy '*' --max-time 10 http://{WEB}:8080/ && "
                                 f"curl -sS --noproxy '*' --max-time 10 --cacert {Host.cert} https://{WEB}:8443/")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "transparent test host\n" * 2, err)
        decisions = self.events()
        self.assertEqual([(d["proto"], d["host"], d["port"], d["decision"]) for d in decisions],
                         [("transparent", WEB, 8080, "allow"), ("transparent", WEB, 8443, "allow")])
        self.assertRegex(decisions[0]["original_dst"], r"^198\.1[89]\.\d+\.\d+:8080$")
        self.assertEqual(decisions[0]["upstream_ip"], Host.v4)
        self.assertNotIn("sni", decisions[0])
        self.assertEqual(decisions[1]["sni"], WEB)
        self.assertNotIn("sni_mismatch", decisions[1])
        dns = self.events("dns")
        self.assertTrue(dns and all(e["host"] == WEB and e["decision"] == "allow" for e in dns), dns)
        self.assertTrue(any(e["qtype"] == "A" and e["answer"].startswith("198.1") for e in dns), dns)
        closes = self.events("close")
        self.assertEqual([c["proto"] for c in closes], ["transparent", "transparent"])
        self.assertGreater(closes[0]["bytes_down"], 0)

    def test_node_fetch(self):
        if not shutil.which("node"):
            self.skipTest("node is not installed")
        rc, out, err = self.jail(f"node -e 'fetch(\"http://{WEB}:8080/\").then(r => r.text())"
                                 ".then(t => process.stdout.write(t))'")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "transparent test host\n")

    def test_ssh_and_git_over_ssh(self):
        key = os.path.join(self.dir, "key")
        shutil.copy(Host.client_key, key)
        os.chmod(key, 0o600)
        self.own(key)
        ssh = f"ssh -i {key} -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes -p 2222"
        rc, out, err = self.jail(f"{ssh} root@{SSH} echo over-ssh && GIT_SSH_COMMAND='{ssh}' git clone -q "
                                 f"ssh://root@{SSH}:2222{Host.repo} clone && cat clone/hello.txt")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "over-ssh\nhello over ssh\n")
        self.assertTrue(all(d["proto"] == "transparent" and d["host"] == SSH and d["decision"] == "allow"
                            for d in self.events()))

    def test_denied_port_and_ip_literals_refused(self):
        # SSH is allowed on 2222 only: nc to its HTTP port is refused, at once.
        start = time.monotonic()
        # (The kernel completes the handshake before the proxy sees the destination: a refusal is a reset right
        # after connect, so `nc -z` would report success; a request gets nothing but the reset.)
        rc, out, err = self.jail(f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {SSH} 8080 | grep -q 'test host' "
                                 "&& echo REACHED; "
                                 f"curl -sS --noproxy '*' --max-time 5 http://{Host.v4}:8080/ && echo REACHED-IP; "
                                 f"curl -sS --noproxy '*' --max-time 5 -g http://[{Host.v6}]:8080/ && echo REACHED-IP6;"
                                 " true")
        self.assertLess(time.monotonic() - start, 20)
        self.assertNotIn("REACHED", out, err)
        decisions = {(d["host"], d["port"]): d for d in self.events()}
        self.assertEqual(decisions[(SSH, 8080)]["decision"], "deny")
        self.assertEqual(decisions[(Host.v4, 8080)]["reason"], "blocked-by-allowlist")
        self.assertEqual(decisions[(Host.v4, 8080)]["original_dst"], f"{Host.v4}:8080")
        self.assertEqual(decisions[(Host.v6, 8080)]["decision"], "deny")
        self.assertIn(f"{Host.v4}:8080", err)  # the end-of-run summary counts transparent refusals
        # A rule naming the IP literal allows it (and the address guard's --allow-address lets it through).
        rc, out, err = self.jail(f"curl -sS --noproxy '*' --max-time 5 http://{Host.v4}:8080/", "--allow-domain",
                                 Host.v4)
        self.assertEqual((rc, out), (0, "transparent test host\n"), err)

    def test_deny_reason_in_the_refusal_audit_line(self):
        # srt's deniedDomainReasons (issue 28): a transparent refusal's audit line and the summary carry it.
        settings = os.path.join(self.dir, "reasons.json")
        with open(settings, "w") as f:
            json.dump({"network": {"deniedDomainReasons": {SSH: "ssh host: port 2222 only (NET-7)"}}}, f)
        os.chmod(settings, 0o644)
        rc, out, err = self.jail(f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 5 {SSH} 8080; true",
                                 "--settings", settings)
        decisions = {(d["host"], d["port"]): d for d in self.events()}
        d = decisions[(SSH, 8080)]
        self.assertEqual((d["proto"], d["decision"], d["reason_text"]),
                         ("transparent", "deny", "ssh host: port 2222 only (NET-7)"), err)
        self.assertIn("reason: ssh host: port 2222 only (NET-7)", err)

    def test_denied_names_answered_locally_never_forwarded(self):
        label = secrets.token_hex(24)
        name = f"{label}.{SECRET}"
        rc, out, err = self.jail(f"getent hosts {name} && echo RESOLVED; getent hosts unknown-{label}.example "
                                 f"&& echo RESOLVED2; curl -sS --noproxy '*' --max-time 5 http://{name}/ && "
                                 "echo REACHED; true")
        self.assertNotIn("RESOLVED", out)
        self.assertNotIn("REACHED", out)
        self.assertEqual([q for q, _ in Host.dns.queries if label in q], [])  # never left the jail's stub
        dns = [e for e in self.events("dns") if label in e["host"]]
        self.assertTrue(dns, self.events("dns"))
        self.assertTrue(all(e["rcode"] == "NXDOMAIN" and e["decision"] == "deny" for e in dns), dns)
        self.assertTrue(any(e["reason"] == "blocked-by-denylist" and e["rule"] == f"*.{SECRET}" for e in dns))
        self.assertIn(f"{name} (DNS)", err)

    def test_stub_over_tcp_and_malformed_queries(self):
        script = f"""
import socket, struct
def q(name, qtype):
    return struct.pack("!HHHHHH", 7, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(l)]) + l.encode() for l in name.split(".")) + b"\\0" + struct.pack("!HH", qtype, 1)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.settimeout(1)
u.sendto(b"\\x00\\x01garbage", ("127.0.0.1", 53))
try: u.recv(512); print("ANSWERED-GARBAGE")
except socket.timeout: print("dropped")
u.sendto(q("{WEB}", 15), ("127.0.0.1", 53)); r = u.recv(512)
print("mx", r[3] & 15, struct.unpack("!H", r[6:8])[0])
t = socket.create_connection(("127.0.0.1", 53), timeout=3)
m = q("{WEB}", 1); t.sendall(struct.pack("!H", len(m)) + m)
n = struct.unpack("!H", t.recv(2))[0]; r = t.recv(n)
print("tcp", r[3] & 15, socket.inet_ntoa(r[-4:]))
# DNS sent to another server (the test host, which runs none) is answered by the stub too: never forwarded.
for family, server in ((socket.AF_INET, "{Host.v4}"), (socket.AF_INET6, "{Host.v6}")):
    u = socket.socket(family, socket.SOCK_DGRAM); u.settimeout(2)
    u.sendto(q("{WEB}", 1), (server, 53)); r = u.recv(512)
    print("elsewhere", r[3] & 15, socket.inet_ntoa(r[-4:]))
t = socket.create_connection(("{Host.v4}", 53), timeout=3)
m = q("{WEB}", 1); t.sendall(struct.pack("!H", len(m)) + m)
n = struct.unpack("!H", t.recv(2))[0]; r = t.recv(n)
print("elsewhere-tcp", r[3] & 15, socket.inet_ntoa(r[-4:]))
"""
        path = os.path.join(self.dir, "q.py")
        with open(path, "w") as f:
            f.write(script)
        rc, out, err = self.jail(f"{PY} {path}")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(lines[0], "dropped")
        self.assertEqual(lines[1], "mx 0 0")  # other types: an empty answer
        self.assertRegex(lines[2], r"^tcp 0 198\.1[89]\.")
        for line in lines[3:6]:
            self.assertRegex(line, r"^elsewhere(-tcp)? 0 198\.1[89]\.")
        self.assertEqual(len(lines), 6, out)

    def test_udp_and_other_protocols_fail_at_once(self):
        script = f"""
import socket, time
for family, addr in ((socket.AF_INET, "{Host.v4}"), (socket.AF_INET6, "{Host.v6}"), (socket.AF_INET, "198.18.0.1")):
    s = socket.socket(family, socket.SOCK_DGRAM)
    start = time.monotonic()
    try:
        s.sendto(b"x", (addr, 443)); print("SENT", addr)
    except OSError as e:
        print(e.errno, "at once" if time.monotonic() - start < 1 else "late")
"""
        path = os.path.join(self.dir, "u.py")
        with open(path, "w") as f:
            f.write(script)
        rc, out, err = self.jail(f"{PY} {path}; ping -c 1 -W 2 {Host.v4} >/dev/null 2>&1 && echo PINGED; true")
        # EPERM, at once: not after a timeout (within a second also on a machine whose cores are all busy).
        self.assertEqual(out.splitlines()[:3], ["1 at once"] * 3, err)
        self.assertNotIn("PINGED", out)

    def test_ipv6_by_name(self):
        rc, out, err = self.jail(f"curl -6 -sS --noproxy '*' --max-time 10 http://{WEB}:8080/")
        self.assertEqual((rc, out), (0, "transparent test host\n"), err)
        d = self.events()[0]
        self.assertTrue(d["original_dst"].startswith("[fd63:6f72:646f:6e00::"), d)
        self.assertEqual(d["host"], WEB)

    def test_sni_mismatch_logged_and_refused_when_strict(self):
        script = f"""
import socket, ssl, sys
ctx = ssl.create_default_context(); ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
s = socket.create_connection(("{WEB}", 8443), timeout=5)
try:
    t = ctx.wrap_socket(s, server_hostname="other-{TAG}.example"); print("HANDSHAKE")
except OSError as e:
    print("refused", type(e).__name__)
"""
        path = os.path.join(self.dir, "sni.py")
        with open(path, "w") as f:
            f.write(script)
        rc, out, err = self.jail(f"{PY} {path}")
        self.assertIn("HANDSHAKE", out, err)
        d = self.events()[0]
        self.assertEqual((d["sni"], d.get("sni_mismatch"), d["decision"]), (f"other-{TAG}.example", True, "allow"))
        os.unlink(self.audit)
        rc, out, err = self.jail(f"{PY} {path}", "--strict-sni")
        self.assertIn("refused", out, err)
        d = self.events()[0]
        self.assertEqual((d["decision"], d["reason"]), ("deny", "sni-mismatch"))

    def test_strict_sni_reads_slow_and_padded_client_hellos(self):
        # The evasions: a ClientHello sent slowly (3 bytes, a pause, the rest) or padded past 16 KiB was decided
        # without its server name, so the handshake to the allowed address could name any host.
        script = f"""
import socket, struct, sys, time
def hello(sni, pad):
    body = b"\\x03\\x03" + b"\\x11" * 32 + b"\\x20" + b"\\x22" * 32 + struct.pack("!H", 4) + b"\\x13\\x01\\x13\\x02\\x01\\x00"
    ext = struct.pack("!HH", 0x15, pad) + bytes(pad) if pad else b""
    name = sni.encode()
    ext += struct.pack("!HHHBH", 0, len(name) + 5, len(name) + 3, 0, len(name)) + name
    body += struct.pack("!H", len(ext)) + ext
    hs = b"\\x01" + struct.pack("!I", len(body))[1:] + body
    return b"".join(b"\\x16\\x03\\x01" + struct.pack("!H", len(hs[i:i + 16384])) + hs[i:i + 16384]
                    for i in range(0, len(hs), 16384))
for case in sys.argv[1:]:
    sni, pad, pause = case.split(",")
    data = hello(sni, int(pad))
    s = socket.create_connection(("{WEB}", 8443), timeout=15)
    s.sendall(data[:3])
    time.sleep(float(pause))
    try:
        s.sendall(data[3:])
        print("OPEN" if s.recv(100) else "CLOSED")
    except OSError as e:
        print("RESET")
    s.close()
"""
        path = os.path.join(self.dir, "hello.py")
        with open(path, "w") as f:
            f.write(script)
        other = f"other-{TAG}.example"
        cases = f"{other},20000,0 {other},0,2 {WEB},0,6"
        rc, out, err = self.jail(f"{PY} {path} {cases}", "--strict-sni", timeout=90)
        self.assertEqual(out.split(), ["RESET"] * 3, err)
        d = self.events()
        self.assertEqual([(e["decision"], e["reason"], e.get("sni"), e.get("sni_error")) for e in d],
                         [("deny", "sni-mismatch", other, None), ("deny", "sni-mismatch", other, None),
                          ("deny", "sni-unreadable", None, "ClientHello incomplete after 5000 ms")])
        # Without --strict-sni the line says what the hello named, or why it names nothing.
        os.unlink(self.audit)
        rc, out, err = self.jail(f"{PY} {path} {other},20000,0 {WEB},0,1", timeout=90)
        d = self.events()
        self.assertEqual([(e["decision"], e.get("sni"), e.get("sni_mismatch"), e.get("sni_error")) for e in d],
                         [("allow", other, True, None), ("allow", None, None, "ClientHello incomplete after 50 ms")])

    def test_no_transparent_is_todays_behaviour(self):
        rc, out, err = self.jail(f"cat /etc/resolv.conf; curl -sS --noproxy '*' --max-time 5 http://{Host.v4}:8080/ "
                                 "&& echo REACHED; true", "--no-transparent", "--allow-domain", Host.v4)
        self.assertNotIn("REACHED", out)
        self.assertNotIn("the jail's DNS stub", out)  # /etc/resolv.conf is the host's
        self.assertFalse(os.path.exists(self.audit) and self.events())


class AsRoot(Transparent, unittest.TestCase):
    AS_USER = False


class AsUser(Transparent, unittest.TestCase):
    AS_USER = True


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env, Host], "they create a user and network namespaces"))
