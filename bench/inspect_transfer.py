#!/usr/bin/env python3
"""Benchmark 9: a 1 GiB download and a 1 GiB upload through an inspected host against the same through a CONNECT
tunnel (TLS end to end, spliced by cordon), same client, same upstream, checksums compared every time.

    bench/inspect_transfer.py [CORDON_BINARY] [ROUNDS]

Sets up what tests/proxy/test_inspect.py sets up (a test CA and HTTPS upstream on 127.0.0.1, cordon's CA, a DNS
server), `cordon proxy --inspect api.test` with `tunnel.test` (the same upstream) not inspected, then runs
tests/proxy/transfer.py's client in ROUNDS interleaved rounds (default 3). Prints one line per transfer (its
rate, and the CPU time cordon spent on it), the best rate of each, and the ratios inspected / tunnel. As root it
also runs each transfer inside `cordon run --inspect api.test --secret GITHUB_TOKEN=api.test` (`api.test+secret`):
the client sends `Authorization: token <sentinel>`, cordon puts the real value in, holds and scans the upload's
first 64 KiB for sentinels and scrubs the real value out of every byte of the download. The client
and the upstream are Python (OpenSSL underneath): they bound both paths alike. cordon's CPU seconds per GiB are
what its own ceiling is on one core, whatever else the machine runs."""

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "proxy"))
import proxytest  # noqa: E402
from test_inspect import TestPki, tls_server_context  # noqa: E402
import transfer  # noqa: E402

GIB = 1 << 30


def cpu_seconds(pid):
    """The user + system CPU time of process `pid` so far."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "cordon")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    proxytest.CORDON = os.path.abspath(binary)
    work = tempfile.mkdtemp(prefix="cordon-bench9-")
    pki = TestPki(work)
    cert, key = pki.leaf(["api.test", "tunnel.test"])
    up = proxytest.HttpUpstream(name="api", tls=tls_server_context(cert, key))
    ca_dir = os.path.join(work, "cordon-ca")
    subprocess.run([proxytest.CORDON, "ca", "init", "--dir", ca_dir], check=True, capture_output=True)
    dns = proxytest.DnsServer({"api.test": ["127.0.0.1"], "tunnel.test": ["127.0.0.1"]})
    p = proxytest.Proxy(work, ["--allow-domain", "api.test", "--allow-domain", "tunnel.test", "--ca-dir", ca_dir,
                               "--upstream-ca", pki.cert, "--inspect", "api.test", *proxytest.LOOPBACK], dns=dns)
    settings = os.path.join(work, "settings.json")
    with open(settings, "w") as f:
        json.dump({"network": {"allowedDomains": ["api.test", "tunnel.test"]}}, f)
    for d in ("home", "tmp", "run"):
        os.makedirs(os.path.join(work, d))
    paths = [("tunnel.test", pki.cert), ("api.test", os.path.join(ca_dir, "ca.pem"))]
    if os.geteuid() == 0:
        paths.append(("api.test+secret", None))

    def with_secret(direction):
        """One transfer inside cordon run with a masked secret; (result, cordon's CPU seconds)."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.path.join(work, "home"),
               "TMPDIR": os.path.join(work, "tmp"), "XDG_CONFIG_HOME": os.path.join(work, "xdg-empty"),
               "GITHUB_TOKEN": "ghp_" + "R3alT0kenValue" * 3}
        script = "python3 %s \"$HTTPS_PROXY\" \"$SSL_CERT_FILE\" api.test %d %s %d \"token $GITHUB_TOKEN\"" % (
            os.path.join(HERE, "..", "tests", "proxy", "transfer.py"), up.port, direction, GIB)
        run = subprocess.Popen([proxytest.CORDON, "run", "--no-discover", "--settings", settings, "--dns-server",
                                dns.address, "--upstream-ca", pki.cert, *proxytest.LOOPBACK, "--inspect", "api.test",
                                "--secret", "GITHUB_TOKEN=api.test", "--", "sh", "-c", script],
                               cwd=os.path.join(work, "run"), env=env, stdout=subprocess.PIPE, text=True)
        cpu = 0.0
        while run.poll() is None:  # cordon's own CPU time, read until just before it exits
            try:
                cpu = cpu_seconds(run.pid)
            except OSError:
                break
            time.sleep(0.2)
        out = run.communicate()[0]
        return json.loads(out.splitlines()[-1]), cpu

    best, cpus = {}, {}
    try:
        for _ in range(rounds):
            for direction in ("down", "up"):
                for host, cafile in paths:
                    if cafile is None:
                        r, cpu = with_secret(direction)
                    else:
                        before = cpu_seconds(p.proc.pid)
                        r = transfer.transfer(p.url(), cafile, host, up.port, direction, GIB)
                        cpu = cpu_seconds(p.proc.pid) - before
                    ok = r["status"] == 200 and r["length"] == GIB and r["sha256"] == r["expected"]
                    rate = GIB / r["seconds"] / 1e6
                    print("%-6s %-11s %7.1f MB/s  cordon CPU %.2f s/GiB  %s" %
                          (direction, host, rate, cpu, "sha256 ok" if ok else "MISMATCH %r" % r), flush=True)
                    cpus.setdefault((direction, host), []).append(cpu)
                    if not ok:
                        return 1
                    key_ = (direction, host)
                    best[key_] = max(best.get(key_, 0), rate)
        for direction in ("down", "up"):
            t, i = best[(direction, "tunnel.test")], best[(direction, "api.test")]
            ct, ci = min(cpus[(direction, "tunnel.test")]), min(cpus[(direction, "api.test")])
            print("BENCH %s tunnel=%.1f inspected=%.1f ratio=%.2f cpu_tunnel=%.2f cpu_inspected=%.2f" %
                  (direction, t, i, i / t, ct, ci))
            if (direction, "api.test+secret") in best:
                s, cs = best[(direction, "api.test+secret")], min(cpus[(direction, "api.test+secret")])
                print("BENCH %s tunnel=%.1f inspected_secret=%.1f ratio=%.2f cpu_inspected_secret=%.2f" %
                      (direction, t, s, s / t, cs))
    finally:
        p.stop()
        up.close()
        dns.close()
        subprocess.run(["rm", "-rf", work])
    return 0


if __name__ == "__main__":
    sys.exit(main())
