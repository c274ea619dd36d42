#!/usr/bin/env python3
"""Benchmark 10: cordon run's port forwards (issue 27) against a direct loopback connection, in one run.

    bench/ports.py [CORDON] [ROUNDS]     (default build/cordon, 5 rounds; run as root or a user)

Each round moves 1 GiB three ways, interleaved (a burst of load from elsewhere hits all alike):
  direct     a client on the host reads 1 GiB from a server on the host's loopback
  host-port  the same client inside `cordon run --host-port PORT` reads from the same host server through
             127.0.0.1:PORT of the jail (the jail's listener, the supervisor's relay, the host's loopback)
  publish    the same server inside `cordon run --publish P:PORT`, the same client on the host reading from
             127.0.0.1:P (the host listener, the relay, a socket made in the jail's namespace)
and, as a control, the same client through `cordon proxy` with CONNECT to the host's server (the same relay:
benchmark 1's path), so that what load does to a relayed transfer on this machine shows beside the forwards;
and the floor: the same client through bench/relay_floor (build/bench/relay_floor, the least a user-space relay
does: blocking splice() through a pipe, a thread per direction) to the same server. Every relayed path pays a
second TCP connection's kernel work, which direct does not: the forwards' ratio to the floor is cordon's share.
The server answers any request with a 1 GiB sparse file (an HTTP response, sendfile(2)); the client is curl
(`%{time_total}`: from connect to the last byte), as in benchmark 1. Best round is the headline (other load only slows a transfer down), with the median;
the ratios are to direct's best. The helpers are this file's own modes:
    ports.py serve PORT FILE READY   serve FILE to every connection on 127.0.0.1:PORT; touch READY once listening
    ports.py fetch HOST PORT          curl, prints "BYTES SECONDS"
"""
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time

SIZE = 1 << 30
HERE = os.path.dirname(os.path.abspath(__file__))


def serve(port, path, ready):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", port))
    s.listen(16)
    open(ready, "w").close()
    with open(path, "rb") as f:
        while True:
            c, _ = s.accept()
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = c.recv(4096)
                if not chunk:
                    break
                head += chunk
            c.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n".encode())
            c.sendfile(f, 0)
            c.close()


def fetch(host, port, proxy=None):
    via = ["-p", "-x", f"http://{proxy}"] if proxy else ["--noproxy", "*"]
    out = subprocess.run(["curl", "-sS", *via, "-o", "/dev/null", "-w", "%{size_download} %{time_total}",
                          f"http://{host}:{port}/big.bin"], capture_output=True, text=True, check=True).stdout
    print(out)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(path, proc, what):
    deadline = time.time() + 20
    while not os.path.exists(path):
        if proc.poll() is not None or time.time() > deadline:
            sys.exit(f"{what} did not start: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.02)


def parse(out, what):
    got, seconds = out.split()
    if int(got) != SIZE:
        sys.exit(f"{what}: {got} bytes, not {SIZE}")
    return SIZE / float(seconds)


def main():
    cordon = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "build", "cordon"))
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    me = os.path.abspath(__file__)
    work = tempfile.mkdtemp(prefix="cordon-bench-ports-", dir="/var/tmp")
    os.chmod(work, 0o755)
    data = os.path.join(work, "big.bin")
    with open(data, "wb") as f:
        f.truncate(SIZE)
    procs = []
    try:
        # The host's server, for direct and host-port.
        host_port = free_port()
        ready = os.path.join(work, "host.ready")
        host = subprocess.Popen([sys.executable, me, "serve", str(host_port), data, ready],
                                stderr=subprocess.PIPE, text=True)
        procs.append(host)
        wait_for(ready, host, "the host's server")
        # The same server in a jail, published.
        pub_port, jail_port = free_port(), 18000
        jready = os.path.join(work, "jail.ready")
        jailed = subprocess.Popen([cordon, "run", "--no-discover", "--allow-write", work, "--publish",
                                   f"{pub_port}:{jail_port}", "--quiet", "--", sys.executable, me, "serve",
                                   str(jail_port), data, jready], cwd=work, stderr=subprocess.PIPE, text=True)
        procs.append(jailed)
        wait_for(jready, jailed, "the jailed server")
        # The control: the same client through `cordon proxy` with CONNECT (the same relay, benchmark 1's path).
        proxy_port = free_port()
        proxy = subprocess.Popen([cordon, "proxy", "--listen", f"127.0.0.1:{proxy_port}", "--allow-domain",
                                  "127.0.0.1", "--allow-address", "127.0.0.0/8", "--no-discover"],
                                 stderr=subprocess.DEVNULL)
        procs.append(proxy)
        deadline = time.time() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", proxy_port), timeout=1).close()
                break
            except OSError:
                if time.time() > deadline:
                    sys.exit("cordon proxy did not start")
                time.sleep(0.05)
        # The floor: a relay with nothing of cordon in it, between the same client and server.
        floor_bin = os.path.join(os.path.dirname(cordon), "bench", "relay_floor")
        floor_port = None
        if os.access(floor_bin, os.X_OK):
            floor_port = free_port()
            fready = os.path.join(work, "floor.ready")
            floor = subprocess.Popen([floor_bin, str(floor_port), str(host_port), fready], stderr=subprocess.PIPE,
                                     text=True)
            procs.append(floor)
            wait_for(fready, floor, "the floor relay")
        results = {"direct": [], "host-port": [], "publish": [], "CONNECT (control)": []}
        if floor_port:
            results["floor (relay_floor)"] = []
        for _ in range(rounds):
            out = subprocess.run([sys.executable, me, "fetch", "127.0.0.1", str(host_port)], capture_output=True,
                                 text=True, check=True).stdout
            results["direct"].append(parse(out, "direct"))
            out = subprocess.run([cordon, "run", "--no-discover", "--quiet", "--host-port", str(host_port), "--",
                                  sys.executable, me, "fetch", "127.0.0.1", str(host_port)], cwd=work,
                                 capture_output=True, text=True, check=True).stdout
            results["host-port"].append(parse(out, "host-port"))
            out = subprocess.run([sys.executable, me, "fetch", "127.0.0.1", str(pub_port)], capture_output=True,
                                 text=True, check=True).stdout
            results["publish"].append(parse(out, "publish"))
            out = subprocess.run([sys.executable, me, "fetch", "127.0.0.1", str(host_port), f"127.0.0.1:{proxy_port}"],
                                 capture_output=True, text=True, check=True).stdout
            results["CONNECT (control)"].append(parse(out, "CONNECT"))
            if floor_port:
                out = subprocess.run([sys.executable, me, "fetch", "127.0.0.1", str(floor_port)],
                                     capture_output=True, text=True, check=True).stdout
                results["floor (relay_floor)"].append(parse(out, "floor"))
        best_direct = max(results["direct"])
        print("| path | best MB/s | median MB/s | best / direct's best | per-round ratio to direct (median) | "
              "all runs (MB/s) | best / the floor's best | target |")
        print("|---|---|---|---|---|---|---|---|")
        best_floor = max(results["floor (relay_floor)"]) if floor_port else None
        for name, values in results.items():
            target = "≥ 0.8" if name in ("host-port", "publish") else ""
            ratio = statistics.median(v / d for v, d in zip(values, results["direct"]))
            runs = " ".join(f"{v / 1e6:.0f}" for v in values)
            to_floor = f"{max(values) / best_floor:.2f}" if best_floor and name != "direct" else ""
            print(f"| {name} | {max(values) / 1e6:,.0f} | {statistics.median(values) / 1e6:,.0f} | "
                  f"{max(values) / best_direct:.2f} | {ratio:.2f} | {runs} | {to_floor} | {target} |")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        subprocess.run(["rm", "-rf", work], check=False)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "serve":
        serve(int(sys.argv[2]), sys.argv[3], sys.argv[4])
    elif len(sys.argv) > 1 and sys.argv[1] == "fetch":
        fetch(sys.argv[2], int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        main()
