#!/usr/bin/python3
"""A security review of the jail's protected names, its per-path Unix sockets and its supervisor: attacks an
untrusted command in `cordon run` can make, as root, as an unprivileged user and as root with `--user`. Each test
says what it proves; those marked "holds" document an attack that failed, the others a hole (they fail until it
is closed). Needs root.

    python3 tests/jail/test_attack_review.py --cordon build/cordon [-k pattern]
"""
import json
import os
import socket
import stat
import struct
import subprocess
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import Env  # noqa: E402
from test_notify import GIT_ENV, GitFixtures  # noqa: E402


class ReviewCase(GitFixtures):
    def attempts(self, attempts, *flags, tail="", **kw):
        """Runs each attempt in one jail; returns the keys that succeeded (MADE-key printed)."""
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; " + (tail or "true"), *flags, expect=None, **kw)
        return [key for key in attempts if f"MADE-{key}" in out], out, err

    def host_git(self, *args, cwd):
        """git on the host as the project's owner would run it, never searching above `cwd`'s parent."""
        env = {**os.environ, **GIT_ENV, "HOME": self.home, "GIT_CEILING_DIRECTORIES": os.path.dirname(cwd)}
        who = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if (self.USER_FLAG or self.AS_USER) else {}
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, env=env, **who)

    # HOLE. A git directory that is not named `.git`: the repository of a project whose `.git` is a gitfile
    # (`git init --separate-git-dir`, `git clone --separate-git-dir`, the `.bare` layout of worktree users:
    # `gitdir: ./.bare`). git reads its config and runs its hooks exactly as those of a `.git` directory, but
    # the write rules know git directories only by the name `.git`, so the command writes core.fsmonitor into
    # its config and a pre-commit hook, and the user's next `git status` / `git commit` on the host runs them.
    def test_git_directory_behind_a_gitfile_is_protected(self):
        self.git("init", "-q", "--separate-git-dir", os.path.join(self.cwd, ".bare"), self.cwd)
        time.sleep(0.02)  # born before the run (coarse file-system clock)
        config = self.read(os.path.join(self.cwd, ".bare/config"))
        made, out, err = self.attempts({
            "config": "git config core.fsmonitor 'touch /tmp/pwned'",
            "config-direct": "echo '[core] hooksPath = /tmp' >> .bare/config",
            "hook": "mkdir -p .bare/hooks && echo 'touch /tmp/pwned' > .bare/hooks/pre-commit && "
                    "chmod +x .bare/hooks/pre-commit",
            "commondir": "echo ../elsewhere > .bare/commondir",
        })
        self.assertEqual(made, [], out + err)
        self.assertEqual(self.read(os.path.join(self.cwd, ".bare/config")), config)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".bare/hooks/pre-commit")))
        self.assertEqual(self.host_git("config", "--get", "core.fsmonitor", cwd=self.cwd).stdout, "")

    # HOLE. A bare repository that existed before the run (a local remote `origin.git` in the project): its
    # hooks run on the host at the user's next `git push` to it, its config at any git command in it. It is
    # a git directory born before the run, as protected as a `.git`.
    def test_existing_bare_repository_is_protected(self):
        bare = os.path.join(self.cwd, "origin.git")
        self.git("init", "-q", "--bare", bare)
        time.sleep(0.02)
        config = self.read(os.path.join(bare, "config"))
        made, out, err = self.attempts({
            "hook": "echo 'touch /tmp/pwned' > origin.git/hooks/post-receive && chmod +x origin.git/hooks/post-receive",
            "config": "git -C origin.git config core.fsmonitor 'touch /tmp/pwned'",
        })
        self.assertEqual(made, [], out + err)
        self.assertEqual(self.read(os.path.join(bare, "config")), config)
        self.assertFalse(os.path.exists(os.path.join(bare, "hooks/post-receive")))

    # HOLE. A repository planted at any depth without `objects`/`refs` next to `HEAD`: git's
    # is_git_directory() looks for them in the directory a `commondir` file names. `src/HEAD` and
    # `src/commondir` (-> `common`, which holds `objects`, `refs` and a `config` with core.fsmonitor and
    # core.worktree) make `src` a repository to git on the host, and no rule refuses or names it: HEAD is
    # refused only next to `objects`/`refs`, and `commondir` only inside a `.git`.
    def test_repository_through_commondir_at_any_depth(self):
        self.mkdir("project/src")
        pwned = os.path.join(self.dir, "pwned")
        plant = ("mkdir -p src/common/objects src/common/refs && "
                 f"printf '[core]\\n\\trepositoryformatversion = 0\\n\\tbare = false\\n"
                 f"\\tworktree = ..\\n\\tfsmonitor = touch {pwned}\\n' > src/common/config && "
                 "echo common > src/commondir && echo 'ref: refs/heads/main' > src/HEAD")
        made, out, err = self.attempts({"plant": plant})
        # Either the plant is refused, or git on the host does not take src for a repository, or the run named
        # it (the user was told a repository was created).
        probe = self.host_git("rev-parse", "--absolute-git-dir", cwd=os.path.join(self.cwd, "src"))
        is_repo = probe.returncode == 0
        named = os.path.join(self.cwd, "src") in err
        if is_repo:
            self.host_git("status", cwd=os.path.join(self.cwd, "src"))  # what the user's prompt runs
        self.assertFalse(is_repo and not named,
                         f"git sees a planted repository at {probe.stdout.strip()} that the run did not name; "
                         f"fsmonitor ran on the host: {os.path.exists(pwned)}\n{out}{err}")

    # HOLE. The supervisor's receive thread reopens a caller's descriptor through /proc/self/fd (reopen()) in
    # place, not on a thread of its own as a FIFO's open by name: a FIFO open for reading with O_NONBLOCK (not
    # notified), reopened through /proc/self/fd/N with O_RDONLY|O_CREAT (notified for O_CREAT, allowed: the
    # descriptor reads) makes the supervisor wait for a writer that never comes. Every notified call of every
    # jailed process (each file created, renamed, removed) then waits behind it for the rest of the run, also
    # after the opener is killed: the run's file system is frozen by one call.
    def test_reopened_fifo_does_not_stall_the_supervisor(self):
        script = ("import os, signal, sys, time\n"
                  "os.mkfifo('f')\n"
                  "fd = os.open('f', os.O_RDONLY | os.O_NONBLOCK)\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    os.open('/proc/self/fd/%d' % fd, os.O_RDONLY | os.O_CREAT)\n"
                  "    os._exit(0)\n"
                  # Bounded: until the child waits in its openat (or 5 s).
                  "for _ in range(500):\n"
                  "    try:\n"
                  "        if open('/proc/%d/syscall' % pid).read().split()[0] == '257': break\n"
                  "    except (OSError, IndexError):\n"
                  "        pass\n"
                  "    time.sleep(0.01)\n"
                  "os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)\n"
                  "def late(*a): raise TimeoutError()\n"
                  "signal.signal(signal.SIGALRM, late); signal.alarm(10)\n"
                  "try:\n"
                  "    os.close(os.open('made', os.O_CREAT | os.O_WRONLY, 0o644)); print('CREATED')\n"
                  "except TimeoutError:\n"
                  "    print('STALLED')\n")
        path = self.write(os.path.join(self.cwd, "stall.py"), script)
        rc, out, err = self.run_jail(["--", jailtest.PY, path], timeout=60)
        self.assertIn("CREATED", out, err)
        self.assertEqual(rc, 0, err)


    # HOLE. A connect notified in the per-path mode (allowUnixSockets) is performed on the receive thread when
    # the socket was non-blocking at the supervisor's F_GETFL, and on a bounded thread of its own otherwise.
    # The socket's open file is shared with the caller: another thread of the command clears O_NONBLOCK
    # between that F_GETFL and the supervisor's connect(), and the receive thread waits in the kernel for room
    # in a listener's full backlog (its own abstract listener here), for good. Every later notified call of
    # the jail then waits. Bounded: up to 100,000 connects (each interrupted one is followed by a file creation
    # that must succeed) or 60 s; it takes a few thousand here. A closed hole passes whatever the timing.
    # (Bounded by time too: each connect that waits, as the caller's flag allows, costs the 2 s alarm.)
    def test_connect_nonblocking_flag_race_does_not_stall_the_supervisor(self):
        src = self.write(os.path.join(self.dir, "race.c"), RACE_C)
        binary = os.path.join(self.cwd, "race")
        subprocess.run(["cc", "-O2", "-pthread", "-o", binary, src], check=True)
        self.own(binary)
        settings = self.write(os.path.join(self.dir, "sockets.json"),
                              '{"network": {"allowUnixSockets": ["/nonexistent/agent.sock"]}}')
        rc, out, err = self.run_jail(["--settings", settings, "--", binary], timeout=120)
        self.assertIn("CREATED", out, err)
        self.assertEqual(rc, 0, err)


    # HOLE. The receive thread opens an existing file for writing in place (do_open), and an open for writing
    # breaks a lease first, waiting for its holder up to /proc/sys/fs/lease-break-time (45 s by default): a
    # jailed process that holds a read lease (F_SETLEASE, on a file it owns) and a second one that opens the
    # file for writing stall every notified call of the jail for that long, also after the opener is killed,
    # and again each time the lease is taken anew. An open that waits belongs on a thread of its own (as a
    # FIFO's): O_NONBLOCK makes the kernel answer EWOULDBLOCK instead of waiting.
    def test_lease_break_does_not_stall_the_supervisor(self):
        script = ("import fcntl, os, signal, time\n"
                  "open('leased', 'w').close()\n"
                  "fd = os.open('leased', os.O_RDONLY)\n"
                  "signal.signal(signal.SIGIO, signal.SIG_IGN)\n"
                  # The supervisor's copy of the descriptor that created the file may be closed an instant
                  # after the creator resumed (a writer: no read lease meanwhile).
                  "for _ in range(200):\n"
                  "    try:\n"
                  "        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_RDLCK); break\n"
                  "    except BlockingIOError:\n"
                  "        time.sleep(0.01)\n"
                  "pid = os.fork()\n"
                  "if pid == 0:\n"
                  "    os.open('leased', os.O_WRONLY)\n"
                  "    os._exit(0)\n"
                  # Bounded: until the child waits in its openat (or 5 s).
                  "for _ in range(500):\n"
                  "    try:\n"
                  "        if open('/proc/%d/syscall' % pid).read().split()[0] == '257': break\n"
                  "    except (OSError, IndexError):\n"
                  "        pass\n"
                  "    time.sleep(0.01)\n"
                  "def late(*a): raise TimeoutError()\n"
                  "signal.signal(signal.SIGALRM, late); signal.alarm(10)\n"
                  "try:\n"
                  "    os.close(os.open('made', os.O_CREAT | os.O_WRONLY, 0o644)); print('CREATED')\n"
                  "except TimeoutError:\n"
                  "    print('STALLED')\n"
                  "signal.alarm(0)\n"
                  "os.kill(pid, signal.SIGKILL); os.waitpid(pid, 0)\n")
        path = self.write(os.path.join(self.cwd, "lease.py"), script)
        rc, out, err = self.run_jail(["--", jailtest.PY, path], timeout=120)
        self.assertIn("CREATED", out, err)
        self.assertEqual(rc, 0, err)

    # HOLE where the kernel has casefolding (CONFIG_UNICODE; skipped elsewhere, as on this machine's kernel):
    # in a case-insensitive directory (tmpfs -o casefold, ext4 chattr +F) `.CLAUDE/SETTINGS.JSON` is the file
    # Claude Code reads as `.claude/settings.json` (hooks: commands run on the host), `.MCP.JSON` its
    # `.mcp.json`, `.Git/Hooks` git's `.git/hooks`; the write rules compare names byte for byte, and no code
    # in jail/ or policy/ asks the directory how it compares.
    def test_protected_names_in_a_case_insensitive_directory(self):
        mnt = os.path.join(self.dir, "cf")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "casefold,mode=0755", "tmpfs", mnt],
                          stderr=subprocess.DEVNULL).returncode != 0:
            self.skipTest("no casefold tmpfs on this kernel (CONFIG_UNICODE)")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], check=False)
        project = os.path.join(mnt, "project")
        os.mkdir(project)
        subprocess.run(["chattr", "+F", project], stderr=subprocess.DEVNULL, check=False)
        open(os.path.join(project, "Probe"), "w").close()
        if not os.path.exists(os.path.join(project, "probe")):
            self.skipTest("the casefold tmpfs does not fold this directory")
        os.unlink(os.path.join(project, "Probe"))
        self.own(project)
        made, out, err = self.attempts({
            "claude-settings": "mkdir -p .CLAUDE && echo '{}' > .CLAUDE/SETTINGS.JSON",
            "mcp": "echo '{}' > .MCP.JSON",
            "bashrc": "echo x > .BASHRC",
        }, cwd=project)
        for name in (".claude/settings.json", ".mcp.json", ".bashrc"):
            self.assertFalse(os.path.exists(os.path.join(project, name)), f"{name}: {out}{err}")
        self.assertEqual(made, [], out + err)

    # HOLE. Set-id executables left in the user's tree. Started by root, the command is uid 0 without
    # capabilities, but the owner of what it creates: chmod 4755 (not notified, not a Landlock right) or a
    # creation's mode 06755 (notified, performed with the mode as given) leaves a set-user-ID-root program in
    # the project, and every local user who can reach it is root on the host after the run (the host's mount
    # has no nosuid; a copy of id(1) says euid=0). With --user or unprivileged it is a set-id program of the
    # caller: every local user becomes them. The bits to refuse are in registers (chmod's mode, the
    # creations' modes the supervisor already reads).
    def test_no_set_id_program_is_left_in_the_tree(self):
        script = ("cp /usr/bin/id sx && chmod 4755 sx; cp /usr/bin/id sg && chmod 2755 sg; "
                  "python3 -c \"import os; os.close(os.open('sc', os.O_CREAT | os.O_WRONLY, 0o6755))\"; "
                  "mkdir -m 2755 sd; true")
        self.sh(script)
        left = []
        for name in ("sx", "sg", "sc"):
            path = os.path.join(self.cwd, name)
            if os.path.exists(path):
                mode = os.stat(path).st_mode
                if mode & 0o4000 or (mode & 0o2000 and mode & 0o010):
                    left.append(f"{name} {oct(mode)}")
        euid = ""
        if "sx " + oct(0o104755) in left and not (self.AS_USER or self.USER_FLAG):
            euid = subprocess.run([os.path.join(self.cwd, "sx")], capture_output=True, text=True,
                                  user=Env.uid, group=Env.gid, extra_groups=[]).stdout
        self.assertEqual(left, [], f"set-id programs left by the jail; the test user runs sx: {euid}")

    # A directory's S_ISGID (`chmod g+s`: new files take the directory's group) is no set-id program: allowed
    # through every spelling (chmod, a symlink to the directory, fchmod, fchmodat), while a file's stays
    # refused through the same spellings. Attacks on the supervisor that performs it: a name swapped between
    # a directory and a file while chmod runs on it (never a set-group-ID file), a directory outside the
    # writable areas (read-only in the jail, but not in the host's mount namespace where the supervisor
    # works: unchanged), an O_PATH descriptor (EBADF, as the kernel).
    def test_set_group_id_directories_allowed_files_refused(self):
        ro = self.mkdir("outside/ro")
        os.chmod(ro, 0o755)
        script = r"""
import ctypes, os, sys, threading
libc = ctypes.CDLL(None, use_errno=True)
def attempt(key, fn):
    try:
        fn(); print('MADE-' + key)
    except OSError as e:
        print('REFUSED-' + key, e.errno)
os.mkdir('d'); os.mkdir('e'); os.mkdir('f'); os.mkdir('g')
open('file', 'w').close(); os.chmod('file', 0o755)
os.symlink('e', 'link-to-dir'); os.symlink('file', 'link-to-file')
attempt('chmod-dir', lambda: os.chmod('d', 0o2775))
attempt('chmod-link-to-dir', lambda: os.chmod('link-to-dir', 0o2755))
fd = os.open('f', os.O_RDONLY | os.O_DIRECTORY)
attempt('fchmod-dir', lambda: os.fchmod(fd, 0o2750))
attempt('fchmodat-dir', lambda: os.chmod('g', 0o2755, dir_fd=os.open('.', os.O_RDONLY)))
attempt('chmod-file', lambda: os.chmod('file', 0o2755))
attempt('chmod-link-to-file', lambda: os.chmod('link-to-file', 0o2755))
ffd = os.open('file', os.O_RDONLY)
attempt('fchmod-file', lambda: os.fchmod(ffd, 0o2755))
pfd = os.open('d', os.O_PATH)
attempt('fchmod-opath', lambda: os.fchmod(pfd, 0o2755))
attempt('chmod-suid-dir', lambda: os.chmod('d', 0o6755))
attempt('chmod-readonly-dir', lambda: os.chmod(sys.argv[1], 0o2755))
# The race: the name is a directory and a file by turns while another thread sets 2755 on it.
open('payload', 'w').close()
os.mkdir('swap')
stop = False
def flip():
    while not stop:
        os.rename('swap', 'tmpdir'); os.rename('payload', 'swap')
        os.rename('swap', 'payload'); os.rename('tmpdir', 'swap')
t = threading.Thread(target=flip); t.start()
for _ in range(2000):
    try:
        os.chmod('swap', 0o2755)
    except OSError:
        pass
stop = True; t.join()
print('DONE')
"""
        path = self.write(os.path.join(self.dir, "sgid.py"), script)
        out, err = self.sh(f"python3 {path} {ro}")
        lines = out.split()
        for key in ("chmod-dir", "chmod-link-to-dir", "fchmod-dir", "fchmodat-dir"):
            self.assertIn("MADE-" + key, lines, out + err)
        for key in ("chmod-file", "chmod-link-to-file", "fchmod-file", "fchmod-opath", "chmod-suid-dir",
                    "chmod-readonly-dir"):
            self.assertIn("REFUSED-" + key, lines, out + err)
        self.assertIn("DONE", lines, out + err)
        modes = {name: stat.S_IMODE(os.stat(os.path.join(self.cwd, name)).st_mode) for name in "defg"}
        self.assertEqual(modes, {"d": 0o2775, "e": 0o2755, "f": 0o2750, "g": 0o2755})
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.cwd, "file")).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(ro).st_mode), 0o755)
        self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.cwd, "payload")).st_mode) & 0o6000, 0)
        for name in ("swap", "payload"):
            st = os.stat(os.path.join(self.cwd, name))
            if not stat.S_ISDIR(st.st_mode):
                self.assertEqual(st.st_mode & 0o6000, 0, f"{name} is a set-id file")

    # HOLE with --user (holds as root and unprivileged, where the supervisor is the caller's identity): a
    # listed socket's listener reads the peer's credentials and the uid is now the jailed user's, but the
    # peer process SO_PEERCRED names (and SO_PEERPIDFD) is the supervisor, a root process (real, saved and
    # file-system uid 0). A service that authorises by the peer's process (polkit's unix-process subject,
    # systemd's pidfd-based peers, anything reading /proc/PID) sees root. The connect should come from a
    # process with the caller's ids, not from a root thread with its effective ids switched.
    def test_listed_socket_peer_process_is_the_callers(self):
        path = os.path.join(self.outside, "svc.sock")
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        srv.bind(path)
        os.chmod(path, 0o777)
        srv.listen(4)
        self.addCleanup(srv.close)
        seen = []

        def serve():
            srv.settimeout(30)
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            with conn:
                pid, uid, gid = struct.unpack("3i", conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                     struct.calcsize("3i")))
                try:
                    with open(f"/proc/{pid}/status") as f:
                        uids = [line.split()[1:] for line in f if line.startswith("Uid:")][0]
                except OSError:
                    uids = []
                seen.append((pid, uid, uids))
                conn.sendall(b"ok\n")

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        settings = self.write(os.path.join(self.dir, "svc.json"),
                              json.dumps({"network": {"allowUnixSockets": [path]}}))
        out, err = self.sh(f"python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); "
                           "print(s.recv(10).decode().strip())\"", "--settings", settings)
        thread.join(10)
        self.assertEqual(out.strip(), "ok", err)
        expected = str(Env.uid) if (self.AS_USER or self.USER_FLAG) else "0"
        pid, uid, uids = seen[0]
        self.assertEqual(str(uid), expected)
        self.assertEqual(uids, [expected] * 4, f"the peer process {pid} has uids {uids}")

    # HOLE. Where the repository's own configuration sends git: `core.hooksPath` (husky sets it to `.husky/_`,
    # many projects to `.githooks`) names the hooks directory git runs instead of `.git/hooks`, and
    # `include.path` / `includeIf` a file read as configuration (core.fsmonitor: run by `git status`). Both
    # usually point into the worktree, which is writable: the command writes a pre-commit hook there or
    # core.fsmonitor into the included file, and the user's next commit or status runs it on the host. The
    # paths are known when the run starts (read the repository's config, and the user's); they deserve the
    # protection of `.git/hooks` and `.git/config`.
    def test_hooks_path_and_included_config_are_protected(self):
        self.existing_repo()
        self.git("config", "core.hooksPath", ".githooks")
        self.git("config", "include.path", "../tools/git.conf")
        self.write(os.path.join(self.cwd, "tools/git.conf"), "[user]\n\tname = owner\n")
        self.mkdir("project/.githooks")
        time.sleep(0.02)
        made, out, err = self.attempts({
            "hook": "echo 'touch /tmp/pwned' > .githooks/pre-commit && chmod +x .githooks/pre-commit",
            "included": "printf '[core]\\n\\tfsmonitor = touch /tmp/pwned\\n' >> tools/git.conf",
        })
        self.assertEqual(made, [], out + err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".githooks/pre-commit")))
        self.assertEqual(self.host_git("config", "--get", "core.fsmonitor", cwd=self.cwd).stdout, "")

    # HOLDS. Other spellings of a reopen and other calls reaching a protected name: a read-only descriptor
    # (of a file the command may not write) reopened for writing through /proc/thread-self/fd,
    # /proc/self/task/TID/fd, /proc/PID/task/TID/fd, /dev/fd, an openat() relative to an open /proc/self/fd
    # directory, and an O_PATH descriptor; openat2 with RESOLVE_BENEATH; O_TMPFILE + linkat(AT_EMPTY_PATH)
    # and + linkat of /proc/self/fd/N; renameat2(RENAME_NOREPLACE) onto a protected name.
    def test_reopen_spellings_and_other_calls_hold(self):
        script = r"""
import ctypes, os, threading
libc = ctypes.CDLL(None, use_errno=True)
def attempt(key, fn):
    try:
        r = fn()
        if isinstance(r, int) and r < 0:
            raise OSError(ctypes.get_errno(), key)
        print('MADE-' + key)
    except OSError:
        print('REFUSED-' + key)
fd = os.open('/etc/hostname', os.O_RDONLY)
tid = threading.get_native_id()
pid = os.getpid()
attempt('thread-self', lambda: os.open('/proc/thread-self/fd/%d' % fd, os.O_WRONLY))
attempt('task', lambda: os.open('/proc/self/task/%d/fd/%d' % (tid, fd), os.O_RDWR))
attempt('pid-task', lambda: os.open('/proc/%d/task/%d/fd/%d' % (pid, tid, fd), os.O_WRONLY | os.O_APPEND))
attempt('dev-fd', lambda: os.open('/dev/fd/%d' % fd, os.O_WRONLY | os.O_TRUNC))
d = os.open('/proc/self/fd', os.O_RDONLY | os.O_DIRECTORY)
attempt('dirfd', lambda: os.open(str(fd), os.O_WRONLY, dir_fd=d))
p = os.open('/etc/hostname', os.O_PATH)
attempt('o-path', lambda: os.open('/proc/self/fd/%d' % p, os.O_RDWR))
class How(ctypes.Structure):
    _fields_ = [('flags', ctypes.c_uint64), ('mode', ctypes.c_uint64), ('resolve', ctypes.c_uint64)]
how = How(os.O_WRONLY | os.O_CREAT, 0o644, 0x08)  # RESOLVE_BENEATH
attempt('openat2', lambda: libc.syscall(437, -100, b'.mcp.json', ctypes.byref(how), ctypes.sizeof(how)))
t = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o644)
os.write(t, b'{}')
attempt('linkat-empty', lambda: libc.linkat(t, b'', -100, b'.mcp.json', 0x1000))
attempt('linkat-proc', lambda: libc.linkat(-100, b'/proc/self/fd/%d' % t, -100, b'.bashrc', 0x400))
open('x', 'w').close()
attempt('noreplace', lambda: libc.renameat2(-100, b'x', -100, b'.gitmodules', 1))
"""
        path = self.write(os.path.join(self.cwd, "spell.py"), script)
        out, err = self.sh(f"python3 {path}")
        self.assertNotIn("MADE-", out, err)
        self.assertEqual(out.count("REFUSED-"), 10, out + err)
        for name in (".mcp.json", ".bashrc", ".gitmodules"):
            self.assertFalse(os.path.lexists(os.path.join(self.cwd, name)), name)

    # HOLE. A symlink named for the directory that holds protected names: `.claude/settings.json` may not be
    # written, nor a prepared directory moved to `.claude`, but `ln -s evil .claude` is allowed, and Claude
    # Code on the host reads `evil/settings.json` as the project's settings (hooks: commands it runs on the
    # host; permissions; `sandbox.enabled: false`). The same for `.config` in a writable home
    # (`.config/git/config`: git's global configuration, core.fsmonitor/core.pager for every repository).
    # A symlink is a rename of a whole tree into place: decided as decide_directory_move decides one.
    def test_symlink_to_a_prepared_protected_directory(self):
        made, out, err = self.attempts({
            "claude": "mkdir evil && echo '{\"hooks\": {}}' > evil/settings.json && ln -s evil .claude",
            "config": f"mkdir -p {self.home}/prep/git && echo '[core]' > {self.home}/prep/git/config && "
                      f"ln -s prep {self.home}/.config",
        }, "--allow-write", self.home)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".claude/settings.json")), out + err)
        self.assertFalse(os.path.exists(os.path.join(self.home, ".config/git/config")), out + err)
        self.assertEqual(made, [], out + err)

# The connect race above: a thread flips O_NONBLOCK on the socket being connected to a full backlog.
RACE_C = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static atomic_int cur = -1, stop;

static void *flip(void *arg) {
    (void)arg;
    while (!stop) {
        int fd = cur;
        if (fd < 0) continue;
        fcntl(fd, F_SETFL, O_NONBLOCK);
        for (volatile int i = 0; i < 200; ++i) {}
        fcntl(fd, F_SETFL, 0);
        for (volatile int i = 0; i < 200; ++i) {}
    }
    return 0;
}

static void on_alarm(int s) { (void)s; }

int main(void) {
    struct sockaddr_un un = {.sun_family = AF_UNIX};
    snprintf(un.sun_path + 1, sizeof un.sun_path - 1, "cordon-review-%d", getpid());
    socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(un.sun_path + 1);
    int srv = socket(AF_UNIX, SOCK_STREAM, 0);
    if (bind(srv, (void *)&un, len) || listen(srv, 0)) {
        perror("listen");
        return 2;
    }
    for (int i = 0; i < 4; ++i) {  /* the backlog is full: a blocking connect waits */
        int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(c, (void *)&un, len);
    }
    struct sigaction sa = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &sa, 0);  /* no SA_RESTART: a call that waits returns EINTR */
    pthread_t t;
    pthread_create(&t, 0, flip, 0);
    int n, waited = 0;
    const time_t until = time(0) + 60;
    for (n = 0; n < 100000 && time(0) < until; ++n) {
        int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
        cur = s;
        alarm(2);
        int rc = connect(s, (void *)&un, len), err = errno;
        alarm(0);
        cur = -1;
        close(s);
        if (rc == 0 || err != EINTR) continue;
        ++waited;  /* a connect that waited (on a thread of the supervisor, or on its receive thread?) */
        alarm(3);
        int fd = open("made", O_CREAT | O_WRONLY, 0644);
        err = errno;
        alarm(0);
        if (fd < 0) {
            printf("STALLED (%s) after %d connects, %d waited\n", strerror(err), n, waited);
            stop = 1;
            pthread_join(t, 0);
            return 0;
        }
        close(fd);
    }
    stop = 1;
    pthread_join(t, 0);
    printf("CREATED after %d connects, %d waited\n", n, waited);
    return 0;
}
"""


class AsRoot(ReviewCase, unittest.TestCase):
    AS_USER = False


class AsUser(ReviewCase, unittest.TestCase):
    AS_USER = True


class WithUserFlag(ReviewCase, unittest.TestCase):
    USER_FLAG = True


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
