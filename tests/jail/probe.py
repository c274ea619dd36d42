#!/usr/bin/python3
"""Runs inside a jail: tries the system calls cordon's seccomp filter refuses (and a few it must allow) and
prints {"name": errno} as JSON (0 = the call succeeded). x86_64 syscall numbers."""
import ctypes
import errno
import json
import os
import socket
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

SYS = {
    "pivot_root": 155, "umount2": 166, "mount": 165, "add_key": 248, "request_key": 249, "keyctl": 250,
    "unshare": 272, "perf_event_open": 298, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "clone3": 435, "ptrace": 101, "clone": 56, "ioctl": 16,
}
CLONE_NEWUSER = 0x10000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C


def call(name, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(SYS[name]), *[ctypes.c_long(a) for a in args])
    return 0 if rc >= 0 else ctypes.get_errno()


def sock(family, kind=socket.SOCK_STREAM, proto=0):
    try:
        socket.socket(family, kind, proto).close()
        return 0
    except OSError as e:
        return e.errno


def raw_socket(family_value):
    """socket() with the family in a 64-bit register whose upper half is set."""
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(41), ctypes.c_long(family_value), ctypes.c_long(1), ctypes.c_long(0))
    return 0 if rc >= 0 else ctypes.get_errno()


def seccomp():
    r = {}
    r["socket_unix"] = sock(socket.AF_UNIX)
    r["socket_unix_high_bits"] = raw_socket((1 << 32) | socket.AF_UNIX)
    try:
        a, b = socket.socketpair()
        a.close(), b.close()
        r["socketpair"] = 0
    except OSError as e:
        r["socketpair"] = e.errno
    r["socket_inet"] = sock(socket.AF_INET)
    r["socket_inet6"] = sock(socket.AF_INET6)
    r["socket_packet"] = sock(17, socket.SOCK_RAW)
    r["socket_vsock"] = sock(40)
    r["socket_netlink_route"] = sock(16, socket.SOCK_RAW, 0)
    r["socket_netlink_audit"] = sock(16, socket.SOCK_RAW, 9)
    r["socket_alg"] = sock(38, socket.SOCK_SEQPACKET)
    r["unshare_user"] = call("unshare", CLONE_NEWUSER)
    # clone(CLONE_NEWUSER) would fork on success: only a refusal is safe to try; success is reported as 0.
    r["clone_newuser"] = call("clone", CLONE_NEWUSER | 17, 0, 0, 0, 0)
    r["clone3"] = call("clone3", 0, 0)
    r["mount"] = call("mount", 0, 0, 0, 0, 0)
    r["umount2"] = call("umount2", 0, 0)
    r["pivot_root"] = call("pivot_root", 0, 0)
    for name in ("open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick"):
        r[name] = call(name, 0, 0, 0, 0, 0)
    for name in ("add_key", "request_key", "keyctl", "bpf", "perf_event_open", "userfaultfd", "io_uring_setup"):
        r[name] = call(name, 0, 0, 0, 0, 0)
    r["ptrace_traceme"] = call("ptrace", 0, 0, 0, 0)
    return r


def tty():
    r = {}
    master, slave = os.openpty()
    c = ctypes.c_char(b"x")
    for name, req in (("tiocsti", TIOCSTI), ("tiocsti_high_bits", (1 << 32) | TIOCSTI), ("tioclinux", TIOCLINUX)):
        r[name] = call("ioctl", slave, req, ctypes.addressof(c))
    # A harmless terminal ioctl still works.
    import termios
    try:
        termios.tcgetattr(slave)
        r["tcgetattr"] = 0
    except OSError as e:
        r["tcgetattr"] = e.errno
    return r


if __name__ == "__main__":
    what = sys.argv[1]
    out = {"seccomp": seccomp, "tty": tty}[what]()
    print(json.dumps(out))
