#!/usr/bin/env python3
"""Runs inside `cordon run` (bench/run, benchmark 6): the same client through the transparent path and through the
jail's CONNECT proxy, to an upstream named NAME (the bench's nginx on the host's loopback).

    transparent.py setup transparent|connect NAME PORT N   -> median and p90 connection set-up, ms
    transparent.py bulk  transparent|connect NAME PORT PATH -> bytes/s of one GET

Set-up is the time from connect() to the first byte of the upstream's answer to a HEAD request: for CONNECT
that includes the CONNECT exchange, for the transparent path the DNS stub's fake address was looked up once
before (a program resolves a name once, then connects)."""
import socket
import statistics
import struct
import sys
import time


def fake_address(name):
    """The DNS stub's A answer for NAME, asked directly (the jail's /etc/hosts would answer `localhost`)."""
    q = struct.pack("!HHHHHH", 1, 0x0100, 1, 0, 0, 0) + b"".join(
        bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0" + struct.pack("!HH", 1, 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(q, ("127.0.0.1", 53))
    r = s.recv(512)
    if r[3] & 15 or struct.unpack("!H", r[6:8])[0] != 1:
        sys.exit(f"the stub refused {name}")
    return socket.inet_ntoa(r[-4:])


def open_to(mode, name, port, target):
    if mode == "transparent":
        return socket.create_connection((target, port))
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(f"CONNECT {name}:{port} HTTP/1.1\r\nHost: {name}:{port}\r\n\r\n".encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(4096)
        if not chunk:
            sys.exit("the proxy closed during CONNECT")
        head += chunk
    if not head.startswith(b"HTTP/1.1 200"):
        sys.exit(head.split(b"\r\n")[0].decode())
    return s


def main():
    what, mode, name, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    target = fake_address(name) if mode == "transparent" else None
    if what == "setup":
        times = []
        for _ in range(int(sys.argv[5])):
            start = time.perf_counter()
            s = open_to(mode, name, port, target)
            s.sendall(f"HEAD / HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
            if not s.recv(1):
                sys.exit("no answer")
            times.append(time.perf_counter() - start)
            s.close()
        times.sort()
        print(f"{statistics.median(times) * 1000:.3f} {times[int(len(times) * 0.9)] * 1000:.3f}")
        return
    s = open_to(mode, name, port, target)
    start = time.perf_counter()
    s.sendall(f"GET {sys.argv[5]} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n".encode())
    buf = bytearray(1 << 20)
    total = 0
    while True:
        n = s.recv_into(buf)
        if n == 0:
            break
        total += n
    print(f"{total / (time.perf_counter() - start):.0f} {total}")


main()
