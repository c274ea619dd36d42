#!/usr/bin/env python3
"""Request rules against the servers that resolve paths: nginx, Apache, Node (a static server as serve-static
resolves paths), Python's http.server and Go's net/http (a ServeMux route and its FileServer). Each serves a tree
with a denied file; every spelling of a request path that some server answers with that file's content must be
refused by cordon inside an inspected connection (400 or 403, and nothing reaches the upstream), while the
allowed file stays reachable."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from proxytest import can_connect, read_http_response, wait_for  # noqa: E402
from test_inspect import InspectBase  # noqa: E402

DENIED = b"DENIED-RESOURCE\n"
ALLOWED = b"ALLOWED-RESOURCE\n"

SPELLINGS = [
    "/repos/acme/secrets/x", "/repos/acme//secrets/x", "//repos/acme/secrets/x", "/repos//acme/secrets//x",
    "/repos/acme/secrets//x", "/repos/acme/%2fsecrets/x", "/repos/acme/%2Fsecrets/x", "/repos/acme%2fsecrets/x",
    "/repos/acme/secrets%2fx", "/repos/acme/%5csecrets/x", "/repos/acme\\secrets/x", "/repos/acme/%73ecrets/x",
    "/repos/%61cme/secrets/%78", "/repos/acme/secrets/x/", "/repos/acme/secrets/x?a=b", "/repos/acme/secrets/x#f",
    "/repos/acme/secrets/x%23", "/repos/acme/secrets/x%3f", "/repos/acme/./secrets/x", "/./repos/acme/secrets/x",
    "/repos/acme/y/../secrets/x", "/repos/acme/%2e/secrets/x", "/repos/acme/y/%2e%2e/secrets/x",
    "/repos/acme/secrets/x;", "/repos/acme/secrets/x;a=b", "/repos/acme/SECRETS/x", "/repos/acme/secrets/x%00",
    "https://api.test/repos/acme/secrets/x", "/repos/acme/%2f/secrets/x", "/repos/acme/%252fsecrets/x",
]

NODE_SERVER = r"""
const http = require('http'), fs = require('fs'), path = require('path');
const root = process.argv[2];
http.createServer((req, res) => {
  let p;
  try { p = decodeURIComponent(new URL(req.url, 'http://localhost').pathname); }
  catch (e) { res.writeHead(400); return res.end(); }
  if (p.indexOf('\0') !== -1) { res.writeHead(400); return res.end(); }
  const file = path.normalize(path.join(root, p));
  if (!file.startsWith(root + path.sep)) { res.writeHead(403); return res.end(); }
  fs.readFile(file, (err, data) => {
    if (err) { res.writeHead(404); return res.end(); }
    res.writeHead(200); res.end(data);
  });
}).listen(0, '127.0.0.1', function () { console.log(this.address().port); });
"""

GO_SERVER = r"""
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	root := os.Args[1]
	mux := http.NewServeMux()
	mux.HandleFunc("/repos/acme/secrets/x", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("DENIED-RESOURCE\n"))
	})
	mux.Handle("/", http.FileServer(http.Dir(root)))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	http.Serve(l, mux)
}
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def raw_get(port, target):
    """The status and body a server answers `target` with, sent exactly as written."""
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(b"GET %s HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n" % target.encode("latin-1"))
        status, _, body = read_http_response(s)
        s.close()
        return status, body
    except (OSError, EOFError, ValueError, IndexError):
        return None, b""


class PathServers:
    """The real servers, each on 127.0.0.1, serving `root`."""

    def __init__(self, workdir, root):
        self.workdir, self.root = workdir, root
        self.procs, self.ports = [], {}

    def close(self):
        # Each server leads a process group of its own: Apache's workers outlive a killed parent (they were
        # left running after the suite), so the whole group goes.
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
            p.stdout.close()

    def _spawn(self, name, argv, port=None, **kw):
        log = os.path.join(self.workdir, name + ".stderr")
        with open(log, "wb") as err:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, start_new_session=True, **kw)
        self.procs.append(p)
        if port is None:
            port = int(p.stdout.readline().decode().strip() or 0)
        if not port or not wait_for(lambda: can_connect("127.0.0.1", port), 20):
            with open(log, "rb") as f:
                raise RuntimeError("%s did not start: %s" % (name, f.read()[-4000:]))
        self.ports[name] = port

    def nginx(self):
        prefix = os.path.join(self.workdir, "nginx")
        os.makedirs(prefix)
        port = free_port()
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w") as f:
            f.write("daemon off; master_process off; pid %s/nginx.pid; error_log %s/error.log;\n"
                    "events {}\nhttp { access_log off; client_body_temp_path %s/body; proxy_temp_path %s/proxy;\n"
                    "  fastcgi_temp_path %s/f; uwsgi_temp_path %s/u; scgi_temp_path %s/s;\n"
                    "  server { listen 127.0.0.1:%d; root %s; } }\n" % ((prefix,) * 7 + (port, self.root)))
        self._spawn("nginx", ["nginx", "-p", prefix, "-c", conf, "-e", os.path.join(prefix, "error.log")], port)

    def apache(self):
        prefix = os.path.join(self.workdir, "apache")
        os.makedirs(prefix)
        port = free_port()
        conf = os.path.join(prefix, "apache.conf")
        mods = "/usr/lib/apache2/modules"
        with open(conf, "w") as f:
            f.write("ServerRoot %s\nLoadModule mpm_event_module %s/mod_mpm_event.so\n"
                    "LoadModule authz_core_module %s/mod_authz_core.so\n"
                    "User nobody\nGroup nogroup\nListen 127.0.0.1:%d\nServerName localhost\nPidFile %s/httpd.pid\n"
                    "ErrorLog %s/error.log\nDocumentRoot %s\n<Directory %s>\n  Require all granted\n</Directory>\n"
                    % (prefix, mods, mods, port, prefix, prefix, self.root, self.root))
        self._spawn("apache", ["apache2", "-f", conf, "-DFOREGROUND"], port)

    def node(self):
        script = os.path.join(self.workdir, "server.js")
        with open(script, "w") as f:
            f.write(NODE_SERVER)
        self._spawn("node", ["node", script, self.root])

    def python(self):
        port = free_port()
        self._spawn("python", [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory", self.root,
                               str(port)], port)

    def go(self):
        src = os.path.join(self.workdir, "server.go")
        with open(src, "w") as f:
            f.write(GO_SERVER)
        binary = os.path.join(self.workdir, "goserver")
        # The build cache outlives the test (outside the user's directories) so that net/http compiles once.
        env = dict(os.environ, GOCACHE=os.path.join(tempfile.gettempdir(), "cordon-test-gocache"),
                   GOPATH=os.path.join(self.workdir, "gopath"), GO111MODULE="off")
        r = subprocess.run(["go", "build", "-o", binary, src], env=env, capture_output=True, text=True,
                           timeout=600)
        if r.returncode != 0:
            raise RuntimeError("go build: " + r.stderr)
        self._spawn("go", [binary, self.root])


class PathTest(InspectBase):
    def setUp(self):
        super().setUp()
        with open(self.settings) as f:
            settings = json.load(f)
        settings["network"]["requestRules"] = [
            {"host": "api.test", "paths": ["/repos/acme/**"], "action": "allow"},
            {"host": "api.test", "paths": ["/repos/acme/secrets/x"], "action": "deny"}]
        with open(self.settings, "w") as f:
            json.dump(settings, f)

    def test_a_deny_rule_holds_for_every_spelling_a_server_serves_as_the_denied_path(self):
        missing = [b for b in ("nginx", "apache2", "node", "go") if not shutil.which(b)]
        self.assertEqual(missing, [], "scripts/setup installs the path test's servers")
        root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(root, "repos", "acme", "secrets"))
        os.makedirs(os.path.join(root, "repos", "acme", "y"))
        with open(os.path.join(root, "repos", "acme", "secrets", "x"), "wb") as f:
            f.write(DENIED)
        with open(os.path.join(root, "repos", "acme", "ok"), "wb") as f:
            f.write(ALLOWED)
        for d, _, files in os.walk(self.dir):  # Apache's workers run as nobody
            os.chmod(d, 0o755)
            for name in files:
                os.chmod(os.path.join(d, name), 0o644)
        servers = PathServers(self.dir, root)
        self.cleanups.append(servers.close)
        for start in (servers.nginx, servers.apache, servers.node, servers.python, servers.go):
            start()

        served = {}  # spelling -> the servers that answer it with the denied file
        for name, port in servers.ports.items():
            self.assertEqual(raw_get(port, "/repos/acme/ok"), (200, ALLOWED), name)
            for spelling in SPELLINGS:
                status, body = raw_get(port, spelling)
                if status == 200 and body == DENIED:
                    served.setdefault(spelling, []).append(name)
        # What the servers are known to do (so that this test checks something): nginx merges slashes and
        # decodes %2F, Go's ServeMux routes on the decoded path, Python cuts at '#'.
        self.assertIn("nginx", served["/repos/acme//secrets/x"])
        self.assertIn("nginx", served["/repos/acme/%2fsecrets/x"])
        self.assertIn("go", served["/repos/acme%2fsecrets/x"])
        self.assertIn("python", served["/repos/acme/secrets/x#f"])

        print("\nspellings served as the denied path: %s" % json.dumps(served, indent=1), file=sys.stderr)
        p = self.start()
        port = self.up.port
        results = {}
        for spelling in sorted(served) + ["/repos/acme/ok"]:
            t = self.tunnel(p, "api.test")
            t.sendall(b"GET %s HTTP/1.1\r\nHost: api.test:%d\r\n\r\n" % (spelling.encode("latin-1"), port))
            results[spelling] = read_http_response(t)[0]
            t.close()
        self.assertEqual(results.pop("/repos/acme/ok"), 200)
        self.assertEqual({s: st for s, st in results.items() if st not in (400, 403)}, {},
                         "spellings served as the denied path by %s" % served)
        self.assertEqual([path for _, path, _ in self.up.requests], ["/repos/acme/ok"])


if __name__ == "__main__":
    unittest.main()
