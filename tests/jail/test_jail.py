#!/usr/bin/python3
"""Integration tests for `cordon run`: real jailed commands, as root and as an unprivileged user created for the
run (removed afterwards). Needs root (user creation, network namespaces). Hermetic: traffic only to 127.0.0.1
and to a network namespace the tests create.

    python3 tests/jail/test_jail.py --cordon build/cordon [-k pattern]
"""
import ctypes
import json
import os
import platform
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import PY, Env, JailFixtures, NetnsHost, Upstream  # noqa: E402


def without_syscalls(*numbers):
    """A preexec_fn: the process and everything it starts get ENOSYS from the given system calls (x86_64
    numbers), as on a kernel that lacks them."""
    def apply():
        libc = ctypes.CDLL(None, use_errno=True)

        class SockFilter(ctypes.Structure):
            _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte),
                        ("k", ctypes.c_uint)]

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

        ld_nr, jeq, ret = 0x20, 0x15, 0x06
        n = len(numbers)
        insns = [(ld_nr, 0, 0, 0)] + [(jeq, n - i, 0, nr) for i, nr in enumerate(numbers)]
        insns += [(ret, 0, 0, 0x7FFF0000), (ret, 0, 0, 0x00050000 | 38)]
        program = (SockFilter * len(insns))(*[SockFilter(*i) for i in insns])
        fprog = SockFprog(len(insns), program)
        if libc.prctl(38, 1, 0, 0, 0) != 0 or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
            os._exit(99)
    return apply


# open_tree, move_mount and mount_setattr: a kernel before 5.2.
without_new_mount_api = without_syscalls(428, 429, 442)
SYS_CLOSE_RANGE, SYS_GETDENTS64 = 436, 217


class JailCase(JailFixtures):
    """The tests of a jailed command, run per identity (AS_USER: JailFixtures)."""

    # --- process model ------------------------------------------------------------------------------------

    def test_exit_codes(self):
        self.assertEqual(self.run_jail(["--", "/bin/true"])[0], 0)
        self.assertEqual(self.run_jail(["--", "/bin/false"])[0], 1)
        self.assertEqual(self.run_jail(["-c", "exit 7"])[0], 7)
        self.assertEqual(self.run_jail(["-c", "kill -TERM $$"])[0], 128 + signal.SIGTERM)
        self.assertEqual(self.run_jail(["-c", "kill -KILL $$"])[0], 128 + signal.SIGKILL)
        rc, _, err = self.run_jail(["--", "/nonexistent/command"])
        self.assertEqual(rc, 127)
        self.assertIn("cannot run /nonexistent/command", err)

    def test_usage_errors(self):
        for args in (["--bogus", "--", "true"], [], ["--timeout", "x", "--", "true"], ["--memory", "12Q", "--",
                                                                                        "true"]):
            rc, _, err = self.run_jail(args)
            self.assertEqual(rc, 2, args)
            self.assertIn("cordon run", err)
        rc, out, _ = self.run_jail(["--help"])
        self.assertEqual(rc, 0)
        for flag in ("--strict", "--best-effort", "--allow-ptrace", "--memory", "--pids", "--timeout", "--quiet",
                     "-c", "--allow-write", "--deny-read", "--user"):
            self.assertIn(flag, out)

    def test_identity_and_environment(self):
        out, _ = self.sh("id -u; hostname; echo $HTTP_PROXY $HTTPS_PROXY $ALL_PROXY; echo $NO_PROXY; "
                         "echo $SANDBOX_RUNTIME $GRPC_PROXY $http_proxy $all_proxy")
        lines = out.splitlines()
        self.assertEqual(lines[0], str(Env.uid if self.AS_USER else 0))
        self.assertEqual(lines[1], "cordon")
        self.assertEqual(lines[2], "http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:1080")
        self.assertEqual(lines[3], "localhost,127.0.0.1,::1")
        self.assertEqual(lines[4], "1 http://127.0.0.1:3128 http://127.0.0.1:3128 socks5h://127.0.0.1:1080")

    def test_capabilities_and_no_new_privs(self):
        out, _ = self.sh("cat /proc/self/status")
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
            self.assertEqual(int(fields[cap].strip(), 16), 0, cap)
        self.assertEqual(fields["NoNewPrivs"].strip(), "1")
        self.assertEqual(fields["Seccomp"].strip(), "2")

    def test_proc_shows_only_the_jail(self):
        out, _ = self.sh("ls /proc | grep -E '^[0-9]+$'")
        pids = [int(p) for p in out.split()]
        self.assertIn(1, pids)
        self.assertLessEqual(len(pids), 5, pids)
        out, _ = self.sh("cat /proc/1/cmdline | tr '\\0' ' '")
        self.assertIn("cordon", out)
        # The jail's init (which set the jail up) is out of reach: not dumpable from the start, and only CAP_KILL
        # left once it has dropped the rest (right after the command starts: polled, not raced).
        out, err = self.sh("cat /proc/1/environ >/dev/null && echo ENV; dd if=/proc/1/mem bs=1 count=1 "
                           "2>/dev/null && echo MEM; for i in $(seq 100); do grep -q 'CapEff:.*0000000000000020' /proc/1/status "
                           "&& break; sleep 0.02; done; grep CapEff /proc/1/status", expect=None)
        self.assertNotIn("ENV", out)
        self.assertNotIn("MEM", out)
        self.assertIn("0000000000000020", out)

    def test_proc_sys_read_only(self):
        # Writes the value it already has, so a failure of the jail would change nothing on the host.
        _, err = self.sh("v=$(cat /proc/sys/vm/overcommit_memory); echo $v > /proc/sys/vm/overcommit_memory "
                         "&& echo WROTE", expect=None)
        self.assertIn("Read-only file system", err)
        out, _ = self.sh("grep ' /proc/sys ' /proc/self/mountinfo")
        self.assertIn(" ro,", out)
        # Nothing writable to sysfs either.
        _, err = self.sh("echo x > /sys/kernel/uevent_helper", expect=None)
        self.assertRegex(err, "Read-only file system|Permission denied|No such file")

    def test_inherited_fds_closed(self):
        fd = os.open(self.outside, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.set_inheritable(fd, True)
            rc, out, err = self.run_jail(["--", "/bin/ls", "/proc/self/fd"], pass_fds=(fd,))
        finally:
            os.close(fd)
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(int(x) for x in out.split()), [0, 1, 2, 3])  # 3: ls's own directory fd

    def test_signal_forwarding(self):
        for sig, code in ((signal.SIGTERM, 42), (signal.SIGINT, 43), (signal.SIGHUP, 44), (signal.SIGUSR1, 45),
                          (signal.SIGUSR2, 46), (signal.SIGQUIT, 47)):
            name = signal.Signals(sig).name[3:]
            p = self.popen(["-c", f"trap 'echo got {name}; exit {code}' {name}; echo ready; "
                                  "while :; do sleep 0.05; done"])
            self.assertEqual(p.stdout.readline().strip(), "ready")
            p.send_signal(sig)
            out, err = p.communicate(timeout=10)
            self.assertEqual(p.returncode, code, f"{name}: {out} {err}")
            self.assertIn(f"got {name}", out)
        # SIGWINCH has no default action: the trap shows it arrived.
        p = self.popen(["-c", "trap 'echo got WINCH; exit 48' WINCH; echo ready; while :; do sleep 0.05; done"])
        self.assertEqual(p.stdout.readline().strip(), "ready")
        p.send_signal(signal.SIGWINCH)
        out, _ = p.communicate(timeout=10)
        self.assertEqual(p.returncode, 48)

    def _alive(self, marker):
        return subprocess.run(["pgrep", "-f", marker], stdout=subprocess.PIPE).returncode == 0

    def test_orphans_killed_when_command_exits(self):
        marker = f"{1000 + secrets.randbelow(9000)}.{secrets.randbelow(1000)}"
        rc, _, err = self.run_jail(["-c", f"(setsid sleep {marker} &) ; sleep {marker} & exit 0"])
        self.assertEqual(rc, 0, err)
        # Gone by the time cordon has exited: the init kills and reaps everything before it reports.
        self.assertFalse(self._alive(f"sleep {marker}"))

    def test_invalid_settings_stop_the_jail_started_early(self):
        # The jail's namespaces are created while the policy loads: a policy that does not load must leave
        # nothing behind (no jail process, no placeholder), with the policy's error and exit 2.
        bad = os.path.join(self.home, f"bad-{secrets.randbelow(10**9)}.json")
        self.write(bad, '{"sandbox": {"network": {"allowedDomains": "not a list"}}}')
        rc, _, err = self.run_jail(["--settings", bad, "--", "/bin/true"])
        self.assertEqual(rc, 2, err)
        self.assertIn(bad, err)
        self.assertFalse(self._alive(bad))
        self.assertEqual(sorted(os.listdir(self.cwd)), [])

    def test_supervisor_killed_jail_gone(self):
        marker = f"{1000 + secrets.randbelow(9000)}.{secrets.randbelow(1000)}"
        p = self.popen(["-c", f"echo ready; sleep {marker}"])
        self.assertEqual(p.stdout.readline().strip(), "ready")
        self.assertTrue(self._alive(f"sleep {marker}"))
        p.kill()
        p.communicate()
        deadline = time.time() + 5
        while self._alive(f"sleep {marker}") and time.time() < deadline:
            time.sleep(0.05)
        self.assertFalse(self._alive(f"sleep {marker}"))

    def test_timeout(self):
        t = time.time()
        rc, _, err = self.run_jail(["--timeout", "0.5", "--", "/bin/sleep", "30"])
        self.assertEqual(rc, 124, err)
        self.assertLess(time.time() - t, 10)

    def test_memory_limit(self):
        rc, out, err = self.run_jail(["--memory", "64M", "--", PY, "-c", "b = bytearray(256 << 20); print('big')"])
        self.assertNotEqual(rc, 0)
        self.assertNotIn("big", out)
        self.assertRegex(err, "rlimit|cgroup")
        rc, out, _ = self.run_jail(["--memory", "1G", "--", PY, "-c", "b = bytearray(16 << 20); print('ok')"])
        self.assertEqual((rc, out.strip()), (0, "ok"))

    def test_terminal_kept_and_ctrl_c_delivered_once(self):
        import pty
        import select
        script = ("import signal, time, os\n"
                  "n = [0]\n"
                  "signal.signal(signal.SIGINT, lambda *a: n.__setitem__(0, n[0] + 1))\n"
                  "print('tty', os.ttyname(0), os.isatty(1), flush=True)\n"
                  "print('ready', flush=True)\n"
                  "time.sleep(1.5)\n"
                  "print('count', n[0], flush=True)\n")
        pid, fd = pty.fork()
        if pid == 0:
            if self.AS_USER:
                os.setgroups([])
                os.setgid(Env.gid)
                os.setuid(Env.uid)
            os.chdir(self.cwd)
            os.execve(Env.cordon, [Env.cordon, "run", "--no-discover", "--", PY, "-c", script], self.env())
        out = b""
        sent = False
        deadline = time.time() + 15
        try:
            while time.time() < deadline:
                r, _, _ = select.select([fd], [], [], 0.2)
                if not r:
                    continue
                try:
                    chunk = os.read(fd, 4096)
                except OSError:
                    break
                if not chunk:
                    break
                out += chunk
                if b"ready" in out and not sent:
                    os.write(fd, b"\x03")  # Ctrl-C: the terminal signals the foreground process group
                    sent = True
        finally:
            _, status = os.waitpid(pid, 0)
            os.close(fd)
        text = out.decode(errors="replace")
        self.assertEqual(os.waitstatus_to_exitcode(status), 0, text)
        self.assertIn("tty /dev/console", text)
        self.assertIn("True", text)
        self.assertIn("count 1", text)  # once, not relayed a second time

    def test_shared_memory(self):
        out, err = self.sh(f"{PY} -c 'from multiprocessing import shared_memory as s; m = s.SharedMemory("
                           f"create=True, size=64); m.buf[0] = 7; print(m.buf[0]); m.close(); m.unlink()'")
        self.assertEqual(out.strip(), "7", err)

    # --- filesystem -----------------------------------------------------------------------------------------

    def test_writes_inside_and_outside(self):
        target = self.write(os.path.join(self.outside, "file"))
        allowed = self.mkdir("allowed")
        out, err = self.sh(f"echo in > new && echo ok1; echo t > /tmp/t && echo ok2; "
                           f"echo x > {target} || echo denied1; echo x > {self.outside}/new || echo denied2; "
                           f"echo y > {allowed}/f && echo ok3; echo z > /etc/cordon-test || echo denied3; "
                           f"echo h > {self.home}/f || echo denied4",
                           "--allow-write", allowed)
        for word in ("ok1", "ok2", "ok3", "denied1", "denied2", "denied3", "denied4"):
            self.assertIn(word, out, err)
        self.assertEqual(self.read(os.path.join(self.cwd, "new")), "in\n")
        self.assertEqual(self.read(os.path.join(allowed, "f")), "y\n")
        self.assertEqual(self.read(target), "original\n")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "new")))
        self.assertFalse(os.path.exists("/etc/cordon-test"))
        self.assertIn("Read-only file system", err)

    def test_allow_write_symlink_within_its_own_directory_is_followed(self):
        # srt parity: an allowWrite entry that is a symlink resolving within its own directory (a `current`
        # link to a versioned directory) is followed when the link lies where the command could not have made
        # it, as root, as a user and with --user; a link the command could have made (in the project, a
        # writable area) is not followed out of it.
        data = os.path.join(self.dir, "data")  # outside every writable area
        os.makedirs(os.path.join(data, "v2"))
        os.chmod(os.path.join(data, "v2"), 0o777)  # whoever the command runs as
        link = os.path.join(data, "current")
        os.symlink("v2", link)
        runs = [[]] + ([] if self.AS_USER else [["--user", Env.user]])
        for flags in runs:
            name = f"f{len(flags)}"
            out, err = self.sh(f"echo hi > {link}/{name} && echo WROTE; echo x > {data}/beside || echo REFUSED",
                               *flags, "--allow-write", link)
            self.assertIn("WROTE", out, (flags, err))
            self.assertIn("REFUSED", out, (flags, err))
            self.assertEqual(self.read(os.path.join(data, "v2", name)), "hi\n")
            self.assertFalse(os.path.exists(os.path.join(data, "beside")))
        target = os.path.join(self.outside, "target")
        os.makedirs(target)
        os.chmod(target, 0o777)
        planted = os.path.join(self.cwd, "out")
        os.symlink(target, planted)
        out, err = self.sh(f"echo x > {planted}/f && echo WROTE2 || echo REFUSED2", "--allow-write", planted,
                           expect=None)
        self.assertNotIn("WROTE2", out, err)
        self.assertFalse(os.path.exists(os.path.join(target, "f")))

    def test_private_tmp(self):
        name = "cordon-private-" + secrets.token_hex(4)
        self.sh(f"echo x > /tmp/{name} && ls /tmp")
        self.assertFalse(os.path.exists(f"/tmp/{name}"))

    PROTECTED_FILES = [".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".gitconfig", ".gitmodules",
                       ".mcp.json", ".ripgreprc", ".git/config", ".claude/settings.json",
                       ".claude/settings.local.json", ".git/hooks/pre-commit", ".vscode/settings.json",
                       ".idea/workspace.xml", ".claude/commands/deploy.md", ".claude/agents/a.md",
                       ".claude/skills/s/SKILL.md", ".claude/hooks/h.sh", ".claude/workflows/w.md",
                       ".claude/scheduled_tasks.json", ".credentials.json"]

    def test_always_read_only_existing(self):
        for rel in self.PROTECTED_FILES:
            self.write(os.path.join(self.cwd, rel))
        script = []
        for rel in self.PROTECTED_FILES:
            d = os.path.dirname(rel) or "."
            script.append(f"echo evil >> {rel} && echo WROTE {rel}; rm -f {rel} && echo REMOVED {rel}; "
                          f"mv {rel} {rel}.moved 2>/dev/null && echo MOVED {rel}; "
                          f"echo x > {d}/new-in-dir 2>/dev/null && echo CREATED-IN {d}")
        # Directories themselves: new files inside protected directories.
        script.append("echo x > .git/hooks/post-checkout && echo CREATED hook")
        script.append("echo x > .vscode/tasks.json && echo CREATED vscode")
        out, err = self.sh("; ".join(script), expect=None)
        for rel in self.PROTECTED_FILES:
            self.assertEqual(self.read(os.path.join(self.cwd, rel)), "original\n", rel)
            self.assertNotIn(f"WROTE {rel}", out)
            self.assertNotIn(f"REMOVED {rel}", out)
            self.assertNotIn(f"MOVED {rel}", out)
        self.assertNotIn("CREATED hook", out)
        self.assertNotIn("CREATED vscode", out)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git/hooks/post-checkout")))
        # The rest of the working directory stays writable, .git included.
        self.sh("echo ok > .git/HEAD && echo ok > normal")
        self.assertEqual(self.read(os.path.join(self.cwd, ".git/HEAD")), "ok\n")

    def test_always_read_only_not_yet_existing(self):
        attempts = {
            ".bashrc": "echo evil > .bashrc",
            ".profile": "echo evil > .profile",
            ".gitconfig": "echo evil > .gitconfig",
            ".mcp.json": "echo '{}' > .mcp.json",
            ".claude/settings.json": "mkdir -p .claude && echo '{}' > .claude/settings.json",
            ".vscode": "mkdir -p .vscode && echo x > .vscode/settings.json",
            ".idea": "mkdir -p .idea && echo x > .idea/x",
        }
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE {name}" for name, cmd in attempts.items())
        out, err = self.sh(script + "; ln -s /etc/passwd .bashrc 2>/dev/null && echo LINKED; true")
        for name in attempts:
            self.assertNotIn(f"MADE {name}", out, err)
        self.assertNotIn("LINKED", out)
        # After the run: only the empty directory the attempts made (no placeholder was ever created).
        self.assertEqual(sorted(os.listdir(self.cwd)), [".claude"])
        self.assertEqual(os.listdir(os.path.join(self.cwd, ".claude")), [])

    def test_git_hooks_missing_in_existing_repo(self):
        self.write(os.path.join(self.cwd, ".git/HEAD"), "ref: refs/heads/main\n")
        out, _ = self.sh("mkdir .git/hooks 2>/dev/null && echo MADE; echo x > .git/hooks/pre-commit 2>/dev/null "
                         "&& echo HOOK; echo y > .git/description && echo DESC")
        self.assertNotIn("MADE", out)
        self.assertNotIn("HOOK", out)
        self.assertIn("DESC", out)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git/hooks")))
        self.assertEqual(sorted(os.listdir(os.path.join(self.cwd, ".git"))), ["HEAD", "description"])

    def test_git_hooks_missing_in_a_nested_repository(self):
        # A repository below the working directory without a hooks directory: hooks cannot be planted there
        # either, and after the run its .git holds exactly what it held before.
        self.write(os.path.join(self.cwd, "vendor/lib/.git/HEAD"), "ref: refs/heads/main\n")
        out, _ = self.sh("cd vendor/lib; mkdir .git/hooks 2>/dev/null && echo MADE; "
                         "echo x > .git/hooks/pre-commit 2>/dev/null && echo HOOK; "
                         "echo x > .git/config 2>/dev/null && echo CONFIG; echo y > .git/description && echo DESC; "
                         "mv .git git2 2>/dev/null && echo MOVED; true")
        for word in ("MADE", "HOOK", "CONFIG", "MOVED"):
            self.assertNotIn(word, out)
        self.assertIn("DESC", out)
        self.assertEqual(sorted(os.listdir(os.path.join(self.cwd, "vendor/lib/.git"))), ["HEAD", "description"])

    def test_symlinked_dotfiles(self):
        # Dotfile managers link .bashrc to a file elsewhere; a link may also dangle. Neither the link nor its
        # target can be replaced or written, the content stays readable, and the jail starts.
        target = self.write(os.path.join(self.cwd, "dotfiles/bashrc"), "export ORIGINAL=1\n")
        os.symlink("dotfiles/bashrc", os.path.join(self.cwd, ".bashrc"))
        os.symlink(os.path.join(self.outside, "missing-zshrc"), os.path.join(self.cwd, ".zshrc"))
        if self.AS_USER:
            for name in (".bashrc", ".zshrc"):
                os.lchown(os.path.join(self.cwd, name), Env.uid, Env.gid)
        out, err = self.sh("cat .bashrc; rm -f .bashrc && echo GONE; echo evil > .bashrc && echo WROTE; "
                           "echo evil > dotfiles/bashrc && echo TARGET; mv .bashrc x 2>/dev/null && echo MOVED; "
                           "rm -f .zshrc && echo ZGONE; echo evil > .zshrc && echo ZWROTE; true")
        self.assertIn("export ORIGINAL=1", out, err)
        for word in ("GONE", "WROTE", "TARGET", "MOVED", "ZGONE", "ZWROTE"):
            self.assertNotIn(word, out.replace("export ORIGINAL=1", ""), err)
        self.assertEqual(os.readlink(os.path.join(self.cwd, ".bashrc")), "dotfiles/bashrc")
        self.assertEqual(self.read(target), "export ORIGINAL=1\n")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "missing-zshrc")))

    @unittest.skipUnless(platform.machine() == "x86_64", "system call numbers of x86_64")
    def test_kernel_without_the_new_mount_api(self):
        # Before Linux 5.12 there is no mount_setattr: the read-only copy of the root is remounted mount by
        # mount instead. Before 5.2 there is no open_tree/move_mount: a symlinked dotfile cannot be protected
        # at the link, which stops the run unless --best-effort (its target stays protected either way).
        self.sh("touch ok; echo x > " + os.path.join(self.outside, "f") + " 2>/dev/null && echo LEAK; true",
                preexec_fn=without_new_mount_api)
        self.assertTrue(os.path.exists(os.path.join(self.cwd, "ok")))
        self.assertFalse(os.path.exists(os.path.join(self.outside, "f")))
        self.write(os.path.join(self.cwd, "dotfiles/bashrc"), "export ORIGINAL=1\n")
        os.symlink("dotfiles/bashrc", os.path.join(self.cwd, ".bashrc"))
        rc, _, err = self.run_jail(["--", "/bin/true"], preexec_fn=without_new_mount_api)
        self.assertEqual(rc, 125, err)
        self.assertIn("--best-effort runs without that", err)
        out, err = self.sh("cat .bashrc; echo evil > dotfiles/bashrc || echo TARGET-SAFE", "--best-effort",
                           preexec_fn=without_new_mount_api)
        self.assertIn("itself is not protected", err)
        self.assertIn("export ORIGINAL=1", out)
        self.assertIn("TARGET-SAFE", out)

    def test_git_works_in_a_subdirectory_of_a_repository(self):
        # The working directory is a subdirectory of a repository and has no .git: the placeholder that keeps
        # .git from being created (a FIFO) must not stop git's discovery of the repository above it.
        repo = self.mkdir("repo")
        sub = self.mkdir("repo/sub")
        env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": self.home}
        subprocess.run(["git", "init", "-q", repo], check=True, env=env, **self._identity())
        out, err = self.sh("test -e .git || echo NO-DOTGIT; git rev-parse --show-toplevel && git status --porcelain "
                           "&& echo GIT-OK", cwd=sub)
        self.assertIn("NO-DOTGIT", out, err)
        self.assertIn(repo, out, err)
        self.assertIn("GIT-OK", out, err)
        self.assertEqual(os.listdir(sub), [])

    def test_symlink_tricks(self):
        target = self.write(os.path.join(self.outside, "target"))
        os.symlink(target, os.path.join(self.cwd, "pre-made-link"))
        os.lchown(os.path.join(self.cwd, "pre-made-link"), Env.uid if self.AS_USER else 0,
                  Env.gid if self.AS_USER else 0)
        out, err = self.sh(f"echo a > pre-made-link && echo W1; ln -s {target} new-link && echo LINKED; "
                           f"echo b > new-link && echo W2; ln -s {self.outside} dirlink; echo c > dirlink/x && "
                           f"echo W3; ln -s /etc/passwd .bashrc2; echo d >> .bashrc2 && echo W4; true")
        self.assertIn("LINKED", out)  # creating a link is fine; writing through it is not
        for w in ("W1", "W2", "W3", "W4"):
            self.assertNotIn(w, out, err)
        self.assertEqual(self.read(target), "original\n")
        self.assertFalse(os.path.exists(os.path.join(self.outside, "x")))

    def test_hard_link_and_rename_tricks(self):
        self.write(os.path.join(self.cwd, ".bashrc"))
        self.write(os.path.join(self.cwd, ".git/hooks/pre-commit"))
        self.write(os.path.join(self.cwd, ".claude/settings.json"))
        outside_file = self.write(os.path.join(self.outside, "secret"))
        out, err = self.sh(f"ln .bashrc hl && echo HL1; ln .git/hooks/pre-commit hl2 && echo HL2; "
                           f"ln {outside_file} hl3 && echo HL3; mv .bashrc moved && echo MV1; "
                           f"mv .git/hooks hooks2 && echo MV2; mv .git git2 && echo MV3; mv .claude c2 && echo MV5; "
                           f"cp .bashrc copy && echo evil >> copy && mv copy .bashrc && echo MV4; true")
        for w in ("HL1", "HL2", "HL3", "MV1", "MV2", "MV3", "MV4", "MV5"):
            self.assertNotIn(w, out, err)
        self.assertEqual(self.read(os.path.join(self.cwd, ".bashrc")), "original\n")
        self.assertEqual(self.read(os.path.join(self.cwd, ".git/hooks/pre-commit")), "original\n")
        self.assertEqual(self.read(outside_file), "original\n")

    def test_deny_write_settings_read_and_globs(self):
        locked = self.mkdir("project/locked")
        self.write(os.path.join(locked, "f"))
        settings = self.write(os.path.join(self.cwd, "my-settings.json"), json.dumps({"network": {}}))
        self.write(os.path.join(self.cwd, "a.key"), "KEY\n")
        self.write(os.path.join(self.cwd, "sub/b.key"), "KEY\n")
        out, err = self.sh("echo x > locked/f && echo W1; echo x > locked/new && echo W2; "
                           "echo '{}' > my-settings.json && echo W3; cat a.key sub/b.key; echo y > ok && echo OK",
                           "--deny-write", locked, "--settings", settings, "--deny-read", "./**/*.key")
        for w in ("W1", "W2", "W3"):
            self.assertNotIn(w, out, err)
        self.assertNotIn("KEY", out)
        self.assertIn("OK", out)
        self.assertIn("enforced on the 2 path(s) that exist now", err)
        self.assertEqual(self.read(settings), json.dumps({"network": {}}))

    def test_deny_read_with_allow_read_inside(self):
        secret_dir = self.mkdir("secrets")
        self.write(os.path.join(secret_dir, "key"), "TOPSECRET\n")
        self.write(os.path.join(secret_dir, "public/readme"), "public\n")
        token = self.write(os.path.join(self.outside, "token"), "TOKEN\n")
        out, err = self.sh(f"cat {secret_dir}/key; ls {secret_dir}; cat {secret_dir}/public/readme; "
                           f"echo \"[$(cat {token})]\"; echo x > {secret_dir}/new && echo W; true",
                           "--deny-read", secret_dir, "--allow-read", os.path.join(secret_dir, "public"),
                           "--deny-read", token)
        self.assertNotIn("TOPSECRET", out)
        self.assertNotIn("key", out)
        self.assertIn("public\n", out)
        self.assertIn("[]", out)
        self.assertNotIn("TOKEN", out)
        self.assertNotIn("W\n", out)

    # --- the jail issue: attacks that must fail -----------------------------------------------------------------

    def check(self, target, *flags, cwd=None):
        r = subprocess.run([Env.cordon, "check", "--no-discover", *flags, target], cwd=cwd or self.cwd,
                           env=self.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           **self._identity())
        return r.returncode, r.stdout + r.stderr

    def test_running_from_root_or_a_system_directory_stops(self):
        name = "cordon-x-" + secrets.token_hex(4)
        self.addCleanup(lambda: os.path.exists(f"/etc/{name}") and os.unlink(f"/etc/{name}"))
        for cwd, why in (("/", "/ is the root directory"), ("/etc", "/etc is a system directory"),
                         ("/usr/share", "/usr/share is inside the system directory /usr"),
                         ("/var", "/var is a system directory")):
            rc, out, err = self.run_jail(["-c", f"touch /etc/{name}; touch {name}"], cwd=cwd)
            self.assertEqual(rc, 125, err)
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertIn(why, err)
            self.assertIn("--allow-write .", err)
            self.assertFalse(os.path.exists(f"/etc/{name}"))
        rc, out = self.check("write:/etc/passwd", cwd="/")
        self.assertEqual(rc, 1, out)
        self.assertTrue(out.startswith("deny"), out)
        self.assertIn("/ is the root directory", out)

    def test_running_from_the_home_directory(self):
        self.write(os.path.join(self.home, ".ssh/authorized_keys"), "ssh-ed25519 AAAA original\n")
        self.write(os.path.join(self.home, ".config/systemd/user/keep.service"))
        self.mkdir("home/.local")
        before = sorted(os.listdir(self.home))
        for cwd, why in ((self.home, "is the home directory"), (self.dir, "holds the home directory")):
            rc, _, err = self.run_jail(["-c", "touch x"], cwd=cwd)
            self.assertEqual(rc, 125, err)
            self.assertIn(why, err)
            self.assertIn("--allow-write .", err)
        rc, out = self.check("write:.ssh/authorized_keys", cwd=self.home)
        self.assertEqual(rc, 1, out)
        # Insisting makes the home writable, with every way to run code there later still closed.
        attempts = {
            "authorized_keys": "echo evil >> .ssh/authorized_keys",
            "ssh-new": "echo evil > .ssh/rc",
            "local-bin": "mkdir -p .local/bin && echo evil > .local/bin/ls",
            "systemd": "mkdir -p .config/systemd/user && echo evil > .config/systemd/user/evil.service",
            "autostart": "mkdir -p .config/autostart && echo evil > .config/autostart/evil.desktop",
            "git": "mkdir -p .config/git && echo evil > .config/git/config",
            "bin": "mkdir -p bin && echo evil > bin/ls",
            "zshenv": "echo evil > .zshenv",
            "zlogin": "echo evil > .zlogin",
            "bash_login": "echo evil > .bash_login",
            "bash_logout": "echo evil > .bash_logout",
            "claude": "mkdir -p .claude && echo '{}' > .claude/settings.json",
            "claude-json": "echo '{}' > .claude.json",
            "bashrc": "echo evil > .bashrc",
        }
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; echo ok > notes.txt && echo NOTES", "--allow-write", ".", cwd=self.home)
        for key in attempts:
            self.assertNotIn(f"MADE-{key}", out, err)
        self.assertIn("NOTES", out)
        self.assertEqual(self.read(os.path.join(self.home, ".ssh/authorized_keys")), "ssh-ed25519 AAAA original\n")
        # Nothing left behind but what the command was allowed to write.
        self.assertEqual(sorted(os.listdir(self.home)), sorted(before + ["notes.txt"]))

    def test_claude_code_protected_paths_missing(self):
        self.mkdir("project/.claude")
        attempts = {name: f"mkdir -p .claude/{name} && echo x > .claude/{name}/x"
                    for name in ("commands", "agents", "skills", "hooks", "workflows")}
        attempts["scheduled"] = "echo '[]' > .claude/scheduled_tasks.json"
        attempts["credentials"] = "echo '{}' > .credentials.json"
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; echo x > .claude/notes.md && echo NOTES")
        for key in attempts:
            self.assertNotIn(f"MADE-{key}", out, err)
        self.assertIn("NOTES", out)
        self.assertEqual(sorted(os.listdir(os.path.join(self.cwd, ".claude"))), ["notes.md"])

    def test_cordon_binary_read_only_and_visible(self):
        # Run from a checkout (`./build/cordon run`): the command must not replace the binary the user runs next
        # on the host (the old jail let `rm cordon && cp evil cordon` through). Below /tmp, which the jail
        # replaces with its own, the binary stays visible: GIT_SSH_COMMAND runs it as `cordon connect`.
        # (ASAN_OPTIONS: LeakSanitizer needs ptrace, which the jail refuses, when scripts/test runs this on the
        # sanitized build.)
        local = os.path.join(self.cwd, "cordon")
        tmpdir = tempfile.mkdtemp(prefix="cordon-bin-", dir="/tmp")
        try:
            os.chmod(tmpdir, 0o755)
            in_tmp = os.path.join(tmpdir, "cordon")
            for path in (local, in_tmp):
                shutil.copy2(Env.cordon, path)
                os.chmod(path, 0o755)
                if self.AS_USER:
                    os.chown(path, Env.uid, Env.gid)
            r = subprocess.run([local, "run", "--no-discover", "-c",
                                "(echo x >> cordon) 2>/dev/null && echo WROTE; rm -f cordon 2>/dev/null && echo REMOVED; "
                                "mv cordon c2 2>/dev/null && echo MOVED; ASAN_OPTIONS=detect_leaks=0 ./cordon --version"],
                               cwd=self.cwd, env=self.env(), capture_output=True, text=True, **self._identity())
            self.assertEqual(r.returncode, 0, r.stderr)
            for word in ("WROTE", "REMOVED", "MOVED"):
                self.assertNotIn(word, r.stdout)
            self.assertIn("cordon ", r.stdout)
            with open(local, "rb") as a, open(Env.cordon, "rb") as b:
                self.assertEqual(a.read(), b.read())
            r = subprocess.run([in_tmp, "run", "--no-discover", "-c",
                                f"ASAN_OPTIONS=detect_leaks=0 {in_tmp} --version && echo \"$GIT_SSH_COMMAND\"; ls /tmp"],
                               cwd=self.cwd, env=self.env(), capture_output=True, text=True, **self._identity())
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("cordon ", r.stdout)
            self.assertIn(in_tmp, r.stdout)
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
            if os.path.exists(local):
                os.unlink(local)

    def test_audit_log_cannot_be_erased_or_forged(self):
        for rel in ("audit.jsonl", "logs/audit.jsonl"):
            self.mkdir("project/logs")
            audit = os.path.join(self.cwd, rel)
            d = os.path.dirname(rel) or "."
            script = (f"curl -sS --max-time 10 {Upstream.url()} >/dev/null; (: > {rel}) && echo TRUNCATED; "
                      f"(echo forged >> {rel}) && echo APPENDED; rm -f {rel} && echo REMOVED; "
                      f"mv {rel} moved 2>/dev/null && echo MOVED; "
                      f"[ {d} != . ] && mv {d} d2 2>/dev/null && mkdir {d} && echo forged > {rel} && echo DIRMOVED; "
                      f"true")
            out, err = self.sh(script, *Upstream.flags(), "--allow-domain", Upstream.NAME, "--audit-log", rel)
            for word in ("TRUNCATED", "APPENDED", "REMOVED", "MOVED", "DIRMOVED"):
                self.assertNotIn(word, out, f"{rel}: {err}")
            with open(audit) as f:
                lines = [json.loads(line) for line in f]
            self.assertTrue(lines, rel)
            self.assertTrue(any(line.get("host") == Upstream.NAME for line in lines), lines)
            self.assertNotIn("forged", self.read(audit))
            shutil.rmtree(os.path.join(self.cwd, "logs"))
            os.unlink(audit) if os.path.exists(audit) else None

    def test_stdin_opened_for_reading_cannot_be_written(self):
        target = self.write(os.path.join(self.outside, "input"), "original\n")
        out_file = self.write(os.path.join(self.outside, "output"), "")
        with open(target) as stdin, open(out_file, "w") as stdout:
            if self.AS_USER:
                os.chown(out_file, Env.uid, Env.gid)
            r = subprocess.run([Env.cordon, "run", "--no-discover", "-c",
                                "cat; echo X > /proc/self/fd/0 || echo DENIED >&2; echo X >> /dev/stdin 2>/dev/null; "
                                "echo Y > /proc/self/fd/1"],
                               cwd=self.cwd, env=self.env(), stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                               text=True, **self._identity())
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("DENIED", r.stderr)
        self.assertEqual(self.read(target), "original\n")
        self.assertEqual(self.read(out_file), "Y\n")  # open for writing: reopening it for writing still works

    def test_directory_on_stdin_is_replaced(self):
        self.write(os.path.join(self.home, ".ssh/id_rsa"), "PRIVATE-KEY\n")
        for flags in (os.O_RDONLY | os.O_DIRECTORY, os.O_PATH):
            fd = os.open(self.home, flags)
            try:
                rc, out, err = self.run_jail(["--deny-read", os.path.join(self.home, ".ssh"), "-c",
                                              "cat /proc/self/fd/0/.ssh/id_rsa; exec 5<&0; "
                                              "cat /proc/self/fd/5/.ssh/id_rsa; cat; ls -l /proc/self/fd/0; "
                                              f"cat {self.home}/.ssh/id_rsa; true"], stdin=fd)
            finally:
                os.close(fd)
            self.assertEqual(rc, 0, err)
            self.assertNotIn("PRIVATE-KEY", out)
            self.assertIn("/dev/null", out)
            self.assertIn("descriptor 0 is a directory", err)
            self.assertEqual(len([l for l in err.splitlines() if "descriptor 0" in l]), 1, err)

    def test_socket_reaching_past_the_jail_on_stdin_is_replaced(self):
        # A socket made outside the jail keeps the network namespace (or, for a Unix socket, the reach) it was
        # made in: an unconnected TCP socket, a UDP socket (even a connected one takes another address in
        # sendto) or a Unix datagram socket (sendto any socket file the jail can see) on 0-2 would send past
        # the jail's network and the proxy. Here each tries to reach a listener of this (the host's) network
        # namespace on 127.0.0.1, which the jail's own loopback cannot reach.
        udp_in = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tcp_in = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        unix_in = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        unix_path = os.path.join(self.outside, "host-dgram.sock")
        try:
            udp_in.bind(("127.0.0.1", 0))
            tcp_in.bind(("127.0.0.1", 0))
            tcp_in.listen(4)
            unix_in.bind(unix_path)
            os.chmod(unix_path, 0o777)
            for sock in (udp_in, tcp_in, unix_in):
                sock.settimeout(0.5)
            udp_port, tcp_port = udp_in.getsockname()[1], tcp_in.getsockname()[1]
            attempts = {
                "udp": (socket.AF_INET, socket.SOCK_DGRAM, f"s.sendto(b'ESCAPED', ('127.0.0.1', {udp_port}))"),
                "tcp": (socket.AF_INET, socket.SOCK_STREAM, f"s.connect(('127.0.0.1', {tcp_port})); s.send(b'E')"),
                "unix": (socket.AF_UNIX, socket.SOCK_DGRAM, f"s.sendto(b'ESCAPED', {unix_path!r})"),
            }
            for name, (family, kind, send) in attempts.items():
                with self.subTest(name), socket.socket(family, kind) as given:
                    code = f"import socket\ns = socket.socket(fileno=0)\n{send}\nprint('SENT')"
                    rc, out, err = self.run_jail(["--", PY, "-c", code], stdin=given.fileno())
                    self.assertNotIn("SENT", out, err)
                    self.assertIn("descriptor 0 is a socket", err)
            self.assertRaises(socket.timeout, udp_in.recv, 64)
            self.assertRaises(socket.timeout, tcp_in.accept)
            self.assertRaises(socket.timeout, unix_in.recv, 64)
        finally:
            for sock in (udp_in, tcp_in, unix_in):
                sock.close()
        # A connected Unix stream socket (what libuv, and so node, gives a child for its stdio) stays.
        a, b = socket.socketpair()
        with a, b:
            b.sendall(b"THROUGH-THE-PAIR\n")
            b.shutdown(socket.SHUT_WR)
            rc, out, err = self.run_jail(["-c", "cat"], stdin=a.fileno())
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "THROUGH-THE-PAIR\n")
        self.assertNotIn("descriptor 0", err)

    @unittest.skipUnless(platform.machine() == "x86_64", "system call numbers of x86_64")
    def test_without_close_range(self):
        # A kernel without close_range: inherited descriptors are closed by walking /proc/self/fd; when that
        # cannot be read either, the jail does not start.
        fd = os.open(self.outside, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.set_inheritable(fd, True)
            rc, out, err = self.run_jail(["--", "/bin/ls", "/proc/self/fd"], pass_fds=(fd,),
                                         preexec_fn=without_syscalls(SYS_CLOSE_RANGE))
            self.assertEqual(rc, 0, err)
            self.assertEqual(sorted(int(x) for x in out.split()), [0, 1, 2, 3])
            # Without getdents64 LeakSanitizer cannot list the threads at exit (the sanitized build scripts/test
            # drives): it would turn the exit status into 1.
            self.env = lambda: {**type(self).env(self), "ASAN_OPTIONS": "detect_leaks=0"}
            rc, out, err = self.run_jail(["--", "/bin/echo", "RAN"], pass_fds=(fd,),
                                         preexec_fn=without_syscalls(SYS_CLOSE_RANGE, SYS_GETDENTS64))
        finally:
            os.close(fd)
        self.assertEqual(rc, 125, err)
        self.assertNotIn("RAN", out)
        self.assertIn("close the inherited descriptors", err)
        # The failure names its step and the source line that failed.
        self.assertRegex(err, r"cannot set up the jail: inherited descriptors: close the inherited descriptors"
                              r"[^\n]*\([^)\n]*jail\.cpp:\d+\)")

    def test_allow_write_symlink_out_of_the_writable_areas(self):
        ua = self.mkdir("project/ua")
        os.symlink(self.outside, os.path.join(ua, "src"))
        os.symlink("/etc", os.path.join(ua, "etc"))
        for link in ("src", "etc"):
            os.lchown(os.path.join(ua, link), Env.uid if self.AS_USER else 0, Env.gid if self.AS_USER else 0)
        name = "cordon-x-" + secrets.token_hex(4)
        self.addCleanup(lambda: os.path.exists(f"/etc/{name}") and os.unlink(f"/etc/{name}"))
        # allowWrite: [ua]: what lies behind a link inside it stays as it was.
        out, err = self.sh(f"touch ua/src/x && echo W1; touch ua/etc/{name} && echo W2; touch ua/ok && echo OK",
                           "--allow-write", "ua")
        self.assertNotIn("W1", out, err)
        self.assertNotIn("W2", out, err)
        self.assertIn("OK", out)
        for target in ("write:ua/src/x", f"write:ua/etc/{name}"):
            rc, text = self.check(target, "--allow-write", "ua")
            self.assertEqual(rc, 1, text)
            self.assertTrue(text.startswith("deny"), text)
        # allowWrite: [ua/src] (the link itself): skipped with a notice, not followed.
        out, err = self.sh(f"touch ua/src/x && echo W1; touch ua/etc/{name} && echo W2; true",
                           "--allow-write", "ua/src", "--allow-write", "ua/etc")
        self.assertNotIn("W1", out, err)
        self.assertNotIn("W2", out, err)
        self.assertIn("outside every writable area", err)
        self.assertFalse(os.path.exists(os.path.join(self.outside, "x")))
        self.assertFalse(os.path.exists(f"/etc/{name}"))
        rc, text = self.check("write:ua/src/x", "--allow-write", "ua/src")
        self.assertEqual(rc, 1, text)
        # A glob matching the link: the same.
        out, err = self.sh(f"touch ua/src/x && echo W1; touch ua/etc/{name} && echo W2; true", "--allow-write", "ua/*")
        self.assertNotIn("W1", out, err)
        self.assertNotIn("W2", out, err)
        self.assertIn("not followed", err)
        self.assertFalse(os.path.exists(os.path.join(self.outside, "x")))
        rc, text = self.check("write:ua/src/x", "--allow-write", "ua/*")
        self.assertEqual(rc, 1, text)

    def test_dangling_allow_write_symlink_is_skipped(self):
        os.symlink(os.path.join(self.outside, "missing"), os.path.join(self.cwd, "dangling"))
        out, err = self.sh("echo ran", "--allow-write", "dangling")
        self.assertIn("ran", out)
        self.assertIn("dangling symlink", err)
        self.assertFalse(os.path.exists(os.path.join(self.outside, "missing")))

    def test_deny_rule_in_a_symlink_loop_stops(self):
        os.symlink("loop", os.path.join(self.cwd, "loop"))
        for flag in ("--deny-read", "--deny-write"):
            rc, out, err = self.run_jail([flag, "loop/secret", "--", "/bin/echo", "RAN"])
            self.assertEqual(rc, 125, err)
            self.assertNotIn("RAN", out)
            self.assertIn(os.path.join(self.cwd, "loop/secret"), err)
            self.assertIn("symlink loop", err)

    def test_deny_read_root_with_allow_read_carve_outs(self):
        self.write(os.path.join(self.outside, "secret"), "SECRET\n")
        rc, out, err = self.run_jail(["--deny-read", "/", "--allow-read", "/usr", "--allow-read", "/etc", "--",
                                      "ls", "/"])
        self.assertEqual(rc, 0, err)
        names = out.split()
        for name in ("bin", "usr", "etc"):
            self.assertIn(name, names)
        out, err = self.sh(f"/bin/ls /usr >/dev/null && echo BIN; cat /etc/hostname >/dev/null && echo ETC; "
                           f"ls {self.outside} 2>/dev/null | grep -q . && echo LEAK; ls /root 2>/dev/null | grep -q . "
                           f"&& echo ROOT; echo x > here && echo CWD; true",
                           "--deny-read", "/", "--allow-read", "/usr", "--allow-read", "/etc")
        for word in ("BIN", "ETC", "CWD"):
            self.assertIn(word, out, err)
        self.assertNotIn("LEAK", out)
        self.assertNotIn("ROOT", out)

    # --- process restrictions ---------------------------------------------------------------------------------

    def probe(self, what, *flags):
        out, err = self.sh(f"{PY} {Env.probe} {what}", *flags)
        return json.loads(out)

    def test_seccomp_refusals(self):
        import errno as E
        r = self.probe("seccomp")
        self.assertEqual(r["socket_unix"], E.EPERM)
        self.assertEqual(r["socket_unix_high_bits"], E.EPERM)
        self.assertEqual(r["socketpair"], 0)
        self.assertEqual(r["socket_inet"], 0)
        self.assertEqual(r["socket_inet6"], 0)
        self.assertEqual(r["socket_netlink_route"], 0)
        for name in ("socket_packet", "socket_vsock", "socket_alg"):
            self.assertEqual(r[name], E.EAFNOSUPPORT, name)
        self.assertEqual(r["socket_netlink_audit"], E.EPROTONOSUPPORT)
        self.assertEqual(r["clone3"], E.ENOSYS)
        for name in ("unshare_user", "clone_newuser", "mount", "umount2", "pivot_root", "open_tree",
                     "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "add_key", "request_key", "keyctl",
                     "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "ptrace_traceme"):
            self.assertEqual(r[name], E.EPERM, name)

    def test_x32_syscalls_killed(self):
        # The x32 ABI reuses the x86_64 audit arch with high syscall numbers: the filter kills the process
        # rather than let socket(AF_UNIX) through under another number.
        rc, out, err = self.run_jail(["--", PY, "-c", "import ctypes; l = ctypes.CDLL(None); "
                                      "l.syscall(ctypes.c_long(0x40000000 + 41), 1, 1, 0); print('ALIVE')"])
        self.assertEqual(rc, 128 + signal.SIGSYS, err)
        self.assertNotIn("ALIVE", out)

    def test_strict_and_best_effort(self):
        rc, _, err = self.run_jail(["--strict", "--best-effort", "--", "/bin/true"])
        self.assertEqual(rc, 2)
        self.assertIn("contradict", err)
        # This kernel has Landlock with scoping (ABI >= 6): --strict runs; without it, it would refuse.
        rc, _, err = self.run_jail(["--strict", "--", "/bin/true"])
        self.assertEqual(rc, 0, err)
        rc, _, err = self.run_jail(["--best-effort", "--", "/bin/true"])
        self.assertEqual((rc, err), (0, ""))

    def test_allow_ptrace(self):
        r = self.probe("seccomp", "--allow-ptrace")
        self.assertEqual(r["ptrace_traceme"], 0)

    def test_taking_another_process_descriptor_needs_allow_ptrace(self):
        # pidfd_getfd takes a descriptor out of another process under ptrace's access check: refused with
        # ptrace. Without it a jailed process takes its sibling's descriptors, and where Landlock is missing
        # (its ptrace scoping stops the rest) those of a host process of the same user whose pidfd it got
        # from a listed socket's SO_PEERPIDFD.
        code = ("import ctypes, os, time\n"
                "libc = ctypes.CDLL(None, use_errno=True)\n"
                "r, w = os.pipe()\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os.dup2(os.open('/etc/hostname', os.O_RDONLY), 9); os.write(w, b'x'); time.sleep(10); os._exit(0)\n"
                "os.read(r, 1)\n"
                "got = libc.syscall(438, os.pidfd_open(pid), 9, 0)\n"
                "print('GOT' if got >= 0 else 'ERR%d' % ctypes.get_errno())\n"
                "os.kill(pid, 9)\n")
        import errno as E
        out, err = self.sh(f"{PY} -c \"{code}\"")
        self.assertEqual(out.strip(), f"ERR{E.EPERM}", err)
        out, err = self.sh(f"{PY} -c \"{code}\"", "--allow-ptrace")
        self.assertEqual(out.strip(), "GOT", err)

    def test_allow_all_unix_sockets(self):
        settings = self.write(os.path.join(self.dir, "srt.json"),
                              json.dumps({"network": {"allowAllUnixSockets": True}}))
        r = self.probe("seccomp", "--settings", settings)
        self.assertEqual(r["socket_unix"], 0)

    def test_terminal_injection_refused(self):
        import errno as E
        r = self.probe("tty")
        self.assertEqual(r["tiocsti"], E.EPERM)
        self.assertEqual(r["tiocsti_high_bits"], E.EPERM)
        self.assertEqual(r["tioclinux"], E.EPERM)
        self.assertEqual(r["tcgetattr"], 0)

    # --- network ------------------------------------------------------------------------------------------

    def curl(self, *curl_args, flags=(), expect=0):
        args = " ".join(f"'{a}'" for a in curl_args)
        # Response headers to stderr through a file: reopening /dev/stderr fails for a pipe owned by root.
        return self.sh(f"curl -sS --max-time 10 -D headers {args}; rc=$?; cat headers >&2; exit $rc",
                       *Upstream.flags(), *flags, expect=expect)

    def test_allowed_host_via_http_proxy(self):
        audit = os.path.join(self.dir, "audit.log")
        self.own(self.dir)
        out, err = self.curl(Upstream.url(), flags=["--allow-domain", Upstream.NAME, "--audit-log", audit])
        self.assertEqual(out, "hello from upstream\n", err)
        with open(audit) as f:
            lines = [json.loads(line) for line in f]
        decisions = [line for line in lines if line["event"] == "decision"]
        self.assertEqual(len(decisions), 1, lines)
        self.assertEqual(decisions[0]["decision"], "allow")
        self.assertEqual(decisions[0]["host"], Upstream.NAME)
        self.assertRegex(decisions[0]["sandbox"], r"^cordon-\d+-[0-9a-f]+$")
        self.assertTrue(all(line["sandbox"] == decisions[0]["sandbox"] for line in lines))
        self.assertNotIn("refused", err)

    def test_allowed_host_via_connect_and_socks(self):
        flags = ["--allow-domain", Upstream.NAME]
        out, err = self.curl("--proxytunnel", Upstream.url(), flags=flags)  # CONNECT through HTTPS_PROXY's port
        self.assertEqual(out, "hello from upstream\n", err)
        out, err = self.sh(f"curl -sS --max-time 10 --proxy \"$ALL_PROXY\" {Upstream.url()}",
                           *Upstream.flags(), *flags)
        self.assertEqual(out, "hello from upstream\n", err)

    def test_denied_host_gets_403(self):
        out, err = self.curl("-w", "%{http_code}", Upstream.url(), flags=["--allow-domain", "other.example"])
        self.assertTrue(out.endswith("403"), out)
        self.assertIn("X-Proxy-Error: blocked-by-allowlist", err)
        self.assertIn(Upstream.NAME, out)
        # The end-of-run summary names the host; --quiet drops it.
        self.assertIn(f"refused 1 connection(s)", err)
        self.assertIn(f"{Upstream.NAME}:{Upstream.http_port}", err)
        out, err = self.curl("-w", "%{http_code}", Upstream.url(),
                             flags=["--allow-domain", Upstream.NAME, "--deny-domain", "*.cordon.example", "--quiet"])
        self.assertTrue(out.endswith("403"), out)
        self.assertIn("X-Proxy-Error: blocked-by-denylist", err)
        self.assertNotIn("refused", err)

    def test_empty_allowed_domains_allows_nothing(self):
        settings = self.write(os.path.join(self.dir, "settings.json"),
                              json.dumps({"network": {"allowedDomains": [], "deniedDomains": []}}))
        out, err = self.curl("-w", "%{http_code}", Upstream.url(), flags=["--settings", settings])
        self.assertTrue(out.endswith("403"), out)
        out, err = self.sh("curl -sS --max-time 5 -w '%{http_code}' http://example.com/", "--settings", settings,
                           *Upstream.flags())
        self.assertTrue(out.endswith("403"), out)

    def test_test_host_reachable_only_through_the_proxy(self):
        url = f"http://{TestHost.addr}:{TestHost.port}/"
        out, err = self.sh(f"curl -sS --max-time 5 {url}", "--allow-domain", TestHost.addr, "--allow-address",
                           "10.202.0.0/16")
        self.assertEqual(out, "test-host\n", err)
        # Without transparent proxying, a program that ignores the proxy variables reaches nothing.
        out, err = self.sh(f"curl -sS --noproxy '*' --max-time 3 {url} && echo REACHED; true", "--allow-domain",
                           TestHost.addr, "--allow-address", "10.202.0.0/16", "--no-transparent")
        self.assertNotIn("REACHED", out)
        # With it (the default), the same connection is redirected to the proxy, which decides it: allowed
        # by the rule naming the address, it goes through the proxy (proto "transparent" in the audit log).
        audit = os.path.join(self.dir, "audit-transparent.log")
        self.own(self.dir)
        out, err = self.sh(f"curl -sS --noproxy '*' --max-time 3 {url} && echo REACHED; true", "--allow-domain",
                           TestHost.addr, "--allow-address", "10.202.0.0/16", "--audit-log", audit)
        self.assertIn("REACHED", out, err)
        with open(audit) as f:
            decisions = [json.loads(line) for line in f if '"decision"' in line]
        self.assertEqual([(d["proto"], d["decision"], d["host"]) for d in decisions if d["event"] == "decision"],
                         [("transparent", "allow", TestHost.addr)])

    def test_no_network_flag(self):
        out, err = self.sh("curl -sS --max-time 3 http://example.com/ && echo REACHED; echo ${HTTP_PROXY:-none}",
                           "--no-network")
        self.assertNotIn("REACHED", out)
        self.assertIn("none", out)

    def test_direct_connection_to_test_host_fails(self):
        out, err = self.sh(f"curl -sS --noproxy '*' --max-time 3 http://{TestHost.addr}:{TestHost.port}/ "
                           f"&& echo REACHED; curl -sS --noproxy '*' --max-time 3 "
                           f"http://127.0.0.1:{TestHost.port}/ && echo REACHED2; true")
        self.assertNotIn("REACHED", out, err)
        # Sanity: the host itself reaches the test host.
        r = subprocess.run(["curl", "-sS", "--noproxy", "*", "--max-time", "3",
                            f"http://{TestHost.addr}:{TestHost.port}/"], stdout=subprocess.PIPE, text=True)
        self.assertIn("test-host", r.stdout)


class TestHost:
    """A test host (NetnsHost) with an HTTP server: an address the jail must not reach."""

    host = None
    addr = None
    port = 8080

    @classmethod
    def setup(cls):
        cls.host = NetnsHost(f"10.202.{1 + secrets.randbelow(250)}")
        cls.addr = cls.host.v4
        root = tempfile.mkdtemp(prefix="cordon-th-", dir=Env.base)
        with open(os.path.join(root, "index.html"), "w") as f:
            f.write("test-host\n")
        cls.host.start([PY, "-m", "http.server", "--bind", cls.addr, str(cls.port), "--directory", root],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cls.host.wait_for_ports(cls.port, timeout=10)

    @classmethod
    def teardown(cls):
        if cls.host:
            cls.host.close()



class AsRoot(JailCase, unittest.TestCase):
    AS_USER = False

    def test_run_as_other_user(self):
        out, _ = self.sh("id -u; id -g; id -G; cat /proc/self/status | grep CapEff", "--user", f"{Env.uid}:{Env.gid}")
        self.assertEqual(out.splitlines()[:3], [str(Env.uid), str(Env.gid), str(Env.gid)])  # no root groups
        self.assertIn("0000000000000000", out)


    def test_root_in_another_users_home(self):
        # Started by root in /home/bob: bob's home is the working directory (not root's home, so writable), and
        # what would run code as bob later stays closed.
        bob = tempfile.mkdtemp(prefix="cordontest-", dir="/home")
        self.addCleanup(shutil.rmtree, bob, True)
        out, err = self.sh("mkdir -p .ssh && echo k > .ssh/authorized_keys && echo SSH; mkdir -p .local/bin && "
                           "echo x > .local/bin/ls && echo BIN; echo x > .zshenv && echo ZSHENV; "
                           "echo ok > notes && echo NOTES", cwd=bob, expect=None)
        self.assertIn("NOTES", out, err)
        for word in ("SSH", "BIN", "ZSHENV"):
            self.assertNotIn(word, out, err)
        # `mkdir -p .local/bin` made `.local` (empty); nothing that runs code.
        self.assertEqual(sorted(os.listdir(bob)), [".local", "notes"])
        self.assertEqual(os.listdir(os.path.join(bob, ".local")), [])


class AsUser(JailCase, unittest.TestCase):
    AS_USER = True

    def test_user_cannot_use_user_flag(self):
        rc, _, err = self.run_jail(["--user", "0", "--", "/bin/true"])
        self.assertEqual(rc, 2)
        self.assertIn("--user needs root", err)

    def test_own_home_refused_when_HOME_names_another(self):
        # $HOME points elsewhere (a script set it): the home directory of the password database counts too.
        real = self.mkdir("realhome")
        subprocess.run(["usermod", "--home", real, Env.user], check=True)
        self.addCleanup(subprocess.run, ["usermod", "--home", "/nonexistent", Env.user], check=False)
        rc, _, err = self.run_jail(["-c", "touch x"], cwd=real)
        self.assertEqual(rc, 125, err)
        self.assertIn(f"{real} is the home directory", err)
        self.assertEqual(os.listdir(real), [])

    def test_read_only_working_directory(self):
        # A directory the user cannot write: no placeholders needed (or possible); the command runs.
        ro = self.mkdir("readonly")
        os.chown(ro, 0, 0)
        os.chmod(ro, 0o755)
        out, err = self.sh("echo x > f || echo DENIED; echo ok", cwd=ro)
        self.assertIn("DENIED", out)
        self.assertIn("ok", out)
        self.assertEqual(os.listdir(ro), [])

    def test_pids_limit(self):
        out, err = self.sh("for i in 1 2 3 4 5 6 7 8; do sleep 2 & done 2>&1; wait; echo done", "--pids", "4",
                           expect=None)
        self.assertRegex(out + err, "fork|Resource temporarily unavailable|Cannot fork")


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env, Upstream, TestHost], "they create a user and network namespaces"))
