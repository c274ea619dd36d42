#!/usr/bin/python3
"""Runs inside a simulated host (hosts.py) and prints what a jail would meet there as JSON: the identity and
capabilities, the seccomp mode, the errno of each call a namespace jail or the namespace-free jail makes (0 = it
succeeded), max_user_namespaces, the network interfaces, and, given `--fetch URL --direct HOST:PORT`, whether an
HTTP request through the proxy variables and a direct connection get through. x86_64 system call numbers."""
import argparse
import ctypes
import json
import os
import socket
import urllib.request

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
SIGCHLD = 17
CLONE_NEWUSER, CLONE_NEWNS, CLONE_NEWNET, CLONE_NEWPID = 0x10000000, 0x20000, 0x40000000, 0x20000000


def errno_of(nr, *args):
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    if rc == 0 and nr == 56:  # a clone that worked: the child leaves at once
        os._exit(0)
    if rc > 0 and nr == 56:
        os.waitpid(rc, 0)
    return 0 if rc >= 0 else ctypes.get_errno()


def in_child(nr, *args):
    """The call made in a forked child, so that a namespace it enters does not change this process."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.write(w, str(errno_of(nr, *args)).encode())
        os._exit(0)
    os.close(w)
    out = os.read(r, 16)
    os.waitpid(pid, 0)
    return int(out or b"-1")


def status(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return line.split()[1]
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fetch")
    parser.add_argument("--direct")
    args = parser.parse_args()
    r = {"uid": os.getuid(), "cap_eff": int(status("CapEff"), 16), "seccomp": int(status("Seccomp")),
         "no_new_privs": int(status("NoNewPrivs"))}
    with open("/proc/sys/user/max_user_namespaces") as f:
        r["max_user_namespaces"] = int(f.read())
    r["unshare_user"] = in_child(272, CLONE_NEWUSER)
    r["unshare_mount"] = in_child(272, CLONE_NEWNS)
    r["unshare_net"] = in_child(272, CLONE_NEWNET)
    r["clone_newuser"] = in_child(56, SIGCHLD | CLONE_NEWUSER, 0, 0, 0, 0)
    r["clone_plain"] = in_child(56, SIGCHLD, 0, 0, 0, 0)
    r["clone3"] = in_child(435, 0, 0)  # a null argument: EFAULT where clone3 is there, ENOSYS where it is not
    r["setns"] = errno_of(308, -1, 0)  # EBADF where setns is there
    r["mount"] = errno_of(165, 0, 0, 0, 0, 0)
    r["landlock"] = errno_of(444, 0, 0, 1)  # LANDLOCK_CREATE_RULESET_VERSION: the ABI, or an errno
    r["landlock_abi"] = libc.syscall(ctypes.c_long(444), ctypes.c_long(0), ctypes.c_long(0), ctypes.c_long(1))
    try:
        socket.socket(socket.AF_UNIX).close()
        r["socket_unix"] = 0
    except OSError as e:
        r["socket_unix"] = e.errno
    r["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    if args.fetch:
        try:
            with urllib.request.urlopen(args.fetch, timeout=10) as resp:
                r["fetch"] = resp.read().decode()
        except OSError as e:
            r["fetch"] = f"error: {e}"
    if args.direct:
        host, port = args.direct.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=5).close()
            r["direct"] = 0
        except OSError as e:
            r["direct"] = e.errno or -1
    print(json.dumps(r))


if __name__ == "__main__":
    main()
