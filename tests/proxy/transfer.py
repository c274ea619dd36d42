#!/usr/bin/env python3
"""A byte-for-byte transfer through a proxy: CONNECT, TLS (trusting one CA file), one HTTP/1.1 request that
uploads (POST) or downloads (GET /bytes/N) `size` bytes of pattern(), streamed, never held whole. Prints one JSON
line: the status, the length and sha256 of what arrived (the upstream's count for an upload), the expected sha256
and the seconds the transfer took. Self-contained so that it also runs inside a jail (cordon run), where the
proxy comes from HTTPS_PROXY.

    transfer.py PROXY_URL CA_FILE HOST PORT up|down SIZE [AUTHORIZATION]
"""

import hashlib
import json
import random
import socket
import ssl
import sys
import time
import urllib.parse

# A prime-length block of fixed random bytes, repeated: a lost, doubled or reordered piece changes the sum.
BLOCK = random.Random(24).randbytes(65521)


def pattern(size):
    """Yields `size` bytes of the pattern in pieces of at most 1 MiB."""
    big = BLOCK * 17  # ~1.06 MiB, also a whole number of blocks
    while size > 0:
        n = min(size, len(big))
        yield big[:n]
        size -= n


def pattern_sha256(size):
    h = hashlib.sha256()
    for piece in pattern(size):
        h.update(piece)
    return h.hexdigest()


def read_head(f):
    status = int(f.readline().split()[1])
    headers = {}
    while True:
        line = f.readline()
        if line in (b"\r\n", b"\n", b""):
            return status, headers
        k, v = line.decode("latin-1").split(":", 1)
        headers[k.strip().lower()] = v.strip()


def transfer(proxy, cafile, host, port, direction, size, authorization=None, timeout=600):
    p = urllib.parse.urlsplit(proxy)
    raw = socket.create_connection((p.hostname, p.port), timeout=timeout)
    raw.sendall(b"CONNECT %s:%d HTTP/1.1\r\nHost: %s:%d\r\n\r\n" % (host.encode(), port, host.encode(), port))
    head = b""
    while b"\r\n\r\n" not in head:
        c = raw.recv(1)
        if not c:
            raise EOFError("the proxy closed during CONNECT")
        head += c
    if b" 200 " not in head.split(b"\r\n")[0]:
        raise RuntimeError("CONNECT refused: %r" % head)
    ctx = ssl.create_default_context(cafile=cafile)
    s = ctx.wrap_socket(raw, server_hostname=host)
    auth = b"Authorization: %s\r\n" % authorization.encode() if authorization else b""
    start = time.monotonic()
    if direction == "up":
        s.sendall(b"POST /public/upload HTTP/1.1\r\nHost: %s:%d\r\n%sContent-Length: %d\r\n\r\n" %
                  (host.encode(), port, auth, size))
        for piece in pattern(size):
            s.sendall(piece)
        f = s.makefile("rb")
        status, headers = read_head(f)
        body = json.loads(f.read(int(headers["content-length"])))
        got_len, got_sha = body.get("length"), body.get("sha256")
    else:
        s.sendall(b"GET /repos/acme/bytes/%d HTTP/1.1\r\nHost: %s:%d\r\n%s\r\n" % (size, host.encode(), port, auth))
        f = s.makefile("rb")
        status, headers = read_head(f)
        left = int(headers.get("content-length", "0"))
        h, got_len = hashlib.sha256(), 0
        while left:
            chunk = f.read(min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            got_len += len(chunk)
            left -= len(chunk)
        got_sha = h.hexdigest()
    seconds = time.monotonic() - start
    s.close()
    return {"status": status, "length": got_len, "sha256": got_sha, "expected": pattern_sha256(size),
            "seconds": seconds}


if __name__ == "__main__":
    a = sys.argv[1:]
    print(json.dumps(transfer(a[0], a[1], a[2], int(a[3]), a[4], int(a[5]), a[6] if len(a) > 6 else None)))
