#!/usr/bin/python3
"""Integration tests for the protected names at the system-call boundary (seccomp user notification, issue 11):
real jailed commands, as root and as an unprivileged user created for the run. Needs root.

    python3 tests/jail/test_notify.py --cordon build/cordon [-k pattern]
"""
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402  (the fixtures shared by the jail tests)
from jailtest import PY, Env, JailFixtures  # noqa: E402


def snapshot(root):
    """Every entry below `root` with its inode, type, mode, size and mtime: byte-for-byte enough to see a
    placeholder come or go, or anything else change."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out[os.path.relpath(path, root)] = (st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns)
    return out


# The suite against the jail without namespaces (CORDON_TEST_JAIL=landlock, ctest lockdown_notify_landlock):
# what does not apply there skips and says why (jail/README.md lists these cases).
LANDLOCK = os.environ.get("CORDON_TEST_JAIL") == "landlock"


def not_without_namespaces(why):
    return unittest.skipIf(LANDLOCK, f"does not apply to the jail without namespaces: {why}")


GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


class GitFixtures(JailFixtures):
    """The fixtures of the jail tests (JailFixtures), with git on the host side."""

    def git(self, *args, cwd=None):
        env = {**os.environ, **GIT_ENV, "HOME": self.home}
        who = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if self.USER_FLAG else self._identity()
        return subprocess.run(["git", *args], cwd=cwd or self.cwd, check=True, capture_output=True, text=True,
                               env=env, **who)

    def existing_repo(self, rel="."):
        path = os.path.join(self.cwd, rel)
        os.makedirs(path, exist_ok=True)
        self.own(path)
        self.git("init", "-q", path)
        # Birth times before the run (the file system's clock is coarse).
        time.sleep(0.02)
        return path


class NotifyCase(GitFixtures):
    """The protected names."""

    # 1. git redirection: commondir, a linked worktree's files, a submodule's config, config.worktree.
    def test_git_redirection_refused_in_existing_repository(self):
        self.existing_repo()
        self.write(os.path.join(self.cwd, ".git/worktrees/w/gitdir"), "/elsewhere/.git\n")
        self.write(os.path.join(self.cwd, ".git/modules/sub/config"), "[core]\n")
        attempts = {
            "commondir": "echo ../evil > .git/commondir",
            "worktree-gitdir": "echo /tmp/evil > .git/worktrees/w/gitdir",
            "worktree-commondir": "echo ../evil > .git/worktrees/w/commondir",
            "submodule": "git config -f .git/modules/sub/config core.fsmonitor 'touch /tmp/pwned'",
            "new-submodule": "mkdir -p .git/modules/other && echo x > .git/modules/other/config",
            "config-worktree": "echo '[core]' > .git/config.worktree",
            "config": "git config core.fsmonitor 'touch /tmp/pwned'",
            "hook": "mkdir -p .git/hooks && echo x > .git/hooks/pre-commit",
            "move-git-away": "mv .git g2",
            "remove-config": "rm -f .git/config",
        }
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; echo x > .git/description && echo DESC; git status --porcelain >/dev/null "
                           "&& echo STATUS; true", expect=None)
        for key in attempts:
            self.assertNotIn(f"MADE-{key}", out, err)
        self.assertIn("DESC", out, err)
        self.assertIn("STATUS", out, err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git/commondir")))
        self.assertEqual(self.read(os.path.join(self.cwd, ".git/worktrees/w/gitdir")), "/elsewhere/.git\n")
        self.assertEqual(self.read(os.path.join(self.cwd, ".git/modules/sub/config")), "[core]\n")
        self.assertNotIn("fsmonitor", self.read(os.path.join(self.cwd, ".git/config")))

    def test_gitfile_and_bare_repository_trick(self):
        self.write(os.path.join(self.cwd, "wt/.git"), "gitdir: /elsewhere/.git/worktrees/wt\n")
        attempts = {
            "gitfile-rewrite": "echo 'gitdir: /tmp/evil' > wt/.git",
            "gitfile-remove": "rm -f wt/.git",
            "gitfile-rename": "mv wt/.git wt/g",
            "bare-head": "mkdir objects refs && echo 'ref: refs/heads/main' > HEAD",
        }
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; rmdir objects refs; echo x > HEAD && echo HEAD-ALONE; "
                           "(mkdir refs) 2>/dev/null && echo MADE-bare-refs; true")
        for key in list(attempts) + ["bare-refs"]:
            self.assertNotIn(f"MADE-{key}", out, err)
        self.assertIn("HEAD-ALONE", out)
        self.assertEqual(self.read(os.path.join(self.cwd, "wt/.git")), "gitdir: /elsewhere/.git/worktrees/wt\n")

    def test_new_repository_works_and_is_named(self):
        out, err = self.sh("git init -q fresh && cd fresh && git config user.name x && echo x > f && git add f && "
                           "git -c user.email=t@t commit -qm one && echo COMMITTED && cd .. && rm -rf fresh && "
                           "echo REMOVED")
        self.assertIn("COMMITTED", out, err)
        self.assertIn("REMOVED", out, err)
        self.assertIn("a git repository was created during the run", err)
        self.assertIn(os.path.join(self.cwd, "fresh/.git"), err)

    # 2. concurrent jails in one directory.
    def test_repository_made_in_the_first_milliseconds_is_new(self):
        # File systems stamp a new directory with the coarse clock (a tick, ~4 ms, behind): a repository the
        # command makes right after the jail starts read as born before the run, and its hooks were refused.
        for i in range(40):
            rc, out, err = self.run_jail(["--", "/bin/mkdir", "-p", f"r{i}/.git/hooks"])
            self.assertEqual(rc, 0, f"run {i}: {err}")
            self.assertIn(f"r{i}/.git", err)  # named as a repository the run created

    def test_two_concurrent_jails(self):
        self.existing_repo()
        first = self.popen(["-c", "echo ready; read x; echo done"], stdin=subprocess.PIPE)
        self.assertEqual(first.stdout.readline().strip(), "ready")
        second = self.popen(["-c", "echo ready; read x; for f in .bashrc .claude/settings.json "
                                   ".git/hooks/pre-commit; do mkdir -p $(dirname $f); (echo x > $f) 2>/dev/null && "
                                   "echo MADE $f; done; true"], stdin=subprocess.PIPE)
        self.assertEqual(second.stdout.readline().strip(), "ready")
        first.communicate("go\n", timeout=30)
        self.assertEqual(first.returncode, 0)
        out, err = second.communicate("go\n", timeout=30)
        self.assertEqual(second.returncode, 0, err)
        self.assertNotIn("MADE", out, err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".bashrc")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".claude/settings.json")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".git/hooks/pre-commit")))

    # 3. no scan budget: a run that made more than 20,000 entries leaves the next run's protection whole.
    def test_many_entries_do_not_end_protection(self):
        self.sh("mkdir many && cd many && seq 1 20500 | xargs touch")
        self.existing_repo("a/b/c/d/nested")
        out, err = self.sh("mkdir -p a/b/c/d/nested/.git/hooks 2>/dev/null && "
                           "(echo x > a/b/c/d/nested/.git/hooks/pre-commit) 2>/dev/null && echo HOOK; "
                           "(echo x > a/b/c/d/nested/.git/config) 2>/dev/null && echo CONFIG; true")
        self.assertNotIn("HOOK", out, err)
        self.assertNotIn("CONFIG", out, err)

    # 4. SIGKILL of the supervisor leaves the directory as it was; during the run git sees nothing new.
    def test_supervisor_killed_leaves_directory_unchanged(self):
        self.existing_repo()
        self.write(os.path.join(self.cwd, "tracked"), "t\n")
        before = snapshot(self.cwd)
        p = self.popen(["-c", "echo ready; sleep 60"])
        self.assertEqual(p.stdout.readline().strip(), "ready")
        self.assertEqual(snapshot(self.cwd), before)
        p.send_signal(signal.SIGKILL)
        p.communicate(timeout=30)
        time.sleep(0.2)
        self.assertEqual(snapshot(self.cwd), before)

    def test_git_status_from_outside_during_a_run(self):
        self.existing_repo()
        os.makedirs(os.path.join(self.cwd, "sub"))
        self.own(os.path.join(self.cwd, "sub"))
        before = self.git("status", "--porcelain", "--ignored").stdout
        p = self.popen(["-c", "echo ready; read x"], stdin=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline().strip(), "ready")
            during = self.git("status", "--porcelain", "--ignored").stdout
            during_sub = self.git("status", "--porcelain", "--ignored", cwd=os.path.join(self.cwd, "sub")).stdout
        finally:
            p.communicate("go\n", timeout=30)
        self.assertEqual(during, before)
        self.assertEqual(during_sub, before)

    # 5. depth: protected names below the first level.
    def test_protected_names_at_any_depth(self):
        self.existing_repo("x/y/z/deep")
        attempts = {
            "claude-settings": "mkdir -p sub/.claude && echo '{}' > sub/.claude/settings.json",
            "claude-commands": "mkdir -p a/b/c/d/.claude/commands",
            "vscode": "mkdir -p sub/deeper/.vscode",
            "bashrc": "echo x > sub/deeper/.bashrc",
            "deep-hooks": "mkdir -p x/y/z/deep/.git/hooks && echo x > x/y/z/deep/.git/hooks/pre-commit",
            "link-into": "ln -s /etc/passwd sub/.mcp.json",
            "rename-into": "mkdir -p t other && echo '{}' > t/settings.json && mv t other/.claude",
        }
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; true")
        for key in attempts:
            self.assertNotIn(f"MADE-{key}", out, err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, "sub/.claude/settings.json")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, "other/.claude")))
        self.assertFalse(os.path.exists(os.path.join(self.cwd, "x/y/z/deep/.git/hooks/pre-commit")))

    @not_without_namespaces("/dev/shm is the host's (no private one to bind a project onto; what the run makes there stays visible)")
    def test_project_below_dev_shm(self):
        # A project on the /dev/shm scratch tmpfs is the real directory inside the jail (bound onto the jail's
        # own /dev/shm), and its protected names are refused like anywhere else; the jail's own /dev/shm stays
        # free for POSIX shared memory and leaves nothing on the host's.
        import tempfile
        project = tempfile.mkdtemp(prefix="cordon-test-", dir="/dev/shm")
        try:
            os.chmod(project, 0o755)
            self.own(project)
            self.write(os.path.join(project, "input"), "from the host\n")
            out, err = self.sh("cat input; echo made > made; (echo x > .bashrc) 2>/dev/null && echo MADE-bashrc; "
                               "(mkdir -p sub/.vscode) 2>/dev/null && echo MADE-vscode; "
                               "echo shm > /dev/shm/cordon-own-shm && cat /dev/shm/cordon-own-shm", cwd=project)
            self.assertEqual(out, "from the host\nshm\n", err)
            self.assertEqual(open(os.path.join(project, "made")).read(), "made\n")
            self.assertFalse(os.path.exists(os.path.join(project, ".bashrc")))
            self.assertFalse(os.path.exists("/dev/shm/cordon-own-shm"))
        finally:
            subprocess.run(["rm", "-rf", project])

    # The mechanism's pitfalls.
    def test_magic_links_and_descriptors(self):
        ro = self.write(os.path.join(self.outside, "input"), "data\n")
        # Pipes made inside the jail (one the test made as root could not be reopened by the test user, with or
        # without cordon: a pipe's inode is its creator's, mode 0600).
        out, err = self.sh("(echo to-stderr > /dev/stderr) 2>&1 | cat; (echo to-stdout > /dev/stdout) | cat; "
                           "(echo fd1 > /proc/self/fd/1) | cat; "
                           "(echo x > /proc/self/fd/0) 2>/dev/null && echo STDIN-WRITTEN; "
                           "(echo x > /dev/fd/0) 2>/dev/null && echo FD0-WRITTEN; true", stdin=open(ro))
        self.assertIn("to-stdout", out)
        self.assertIn("fd1", out)
        self.assertIn("to-stderr", out)
        self.assertNotIn("WRITTEN", out)
        self.assertEqual(self.read(ro), "data\n")

    def test_opens_answered_from_a_wait_thread_hand_a_descriptor_over(self):
        # A FIFO opened by the supervisor (on a wait thread) and a reopened FIFO for reading: each open returns
        # a descriptor of the FIFO (a write and a read through it round-trip), never 0 with no descriptor (the
        # reaper once took an answered notification for a caller gone and withdrew the descriptor).
        script = ("import os, stat\n"
                  "os.mkfifo('ff')\n"
                  "for i in range(20):\n"
                  "    w = os.open('ff', os.O_RDWR)\n"
                  "    r = os.open('/proc/self/fd/%d' % w, os.O_RDONLY | os.O_CREAT)\n"
                  "    assert stat.S_ISFIFO(os.fstat(w).st_mode) and stat.S_ISFIFO(os.fstat(r).st_mode), (w, r)\n"
                  "    os.write(w, b'hi'); assert os.read(r, 2) == b'hi'\n"
                  "    os.close(r); os.close(w)\n"
                  "print('ROUND-TRIPS')\n")
        path = self.write(os.path.join(self.cwd, "fifo.py"), script)
        out, err = self.sh(f"{PY} {path}")
        self.assertIn("ROUND-TRIPS", out, err)

    def test_credentials_umask_cloexec_and_errors(self):
        out, err = self.sh(
            "umask 027; echo x > f; mkdir d; stat -c '%a %u' f d; "
            "(echo x > missing/f) 2>&1; (mkdir f) 2>&1; (rmdir nothere) 2>&1; "
            f"{PY} -c \"import os, fcntl; fd = os.open('g', os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC); "
            "print('cloexec', bool(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC)); "
            "import ctypes; fd2 = ctypes.CDLL(None).open(b'h', os.O_CREAT | os.O_WRONLY, 0o644); "
            "print('plain', bool(fcntl.fcntl(fd2, fcntl.F_GETFD) & fcntl.FD_CLOEXEC))\"", expect=None)
        uid = str(Env.uid if self.AS_USER else 0)
        self.assertIn(f"640 {uid}", out, err)
        self.assertIn(f"750 {uid}", out, err)
        self.assertIn("No such file or directory", out)
        self.assertIn("File exists", out)
        self.assertIn("cloexec True", out)
        self.assertIn("plain False", out)

    @not_without_namespaces("/tmp is the host's (the run writes only its own TMPDIR, so `echo t > /tmp/t` is refused)")
    def test_symlinks_tmpfile_and_moves(self):
        # A symlink as the last component is followed where the call follows it, and decided where it leads;
        # O_TMPFILE and linkat through /proc/self/fd work; a move from /tmp (another mount) copies.
        out, err = self.sh(
            "ln -s .bashrc rc && (echo x > rc) 2>/dev/null && echo THROUGH-LINK; "
            "ln -s /etc/cordon-notify-test out && (echo x > out) 2>/dev/null && echo OUTSIDE; "
            "ln -s real ok && echo fine > ok && cat real; "
            "echo t > /tmp/t && mv /tmp/t moved && cat moved; "
            f"{PY} -c \"import os; fd = os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o644); os.write(fd, b'anon'); "
            "os.link(f'/proc/self/fd/{fd}', 'named', follow_symlinks=True); print(open('named').read())\"; "
            "mkdir d1 d2 && touch d1/a && mv -T d1 d2 2>/dev/null; ls d2; "
            "echo u > /tmp/u && (mv /tmp/u .bashrc) 2>/dev/null || echo MV-REFUSED; (ln /tmp/u hl) 2>&1", expect=None)
        self.assertNotIn("THROUGH-LINK", out, err)
        self.assertNotIn("OUTSIDE", out, err)
        self.assertIn("fine", out, err)
        self.assertIn("t\n", out, err)
        self.assertIn("anon", out, err)
        self.assertIn("MV-REFUSED", out, err)
        self.assertIn("Invalid cross-device link", out, err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".bashrc")))
        self.assertFalse(os.path.exists("/etc/cordon-notify-test"))

    def test_exclusive_creates_land_where_decided(self):
        # O_CREAT|O_EXCL (tar, git's checkout) takes a one-call path in the supervisor: a symlinked directory or
        # ".." on the way still leads to the decision where the file lands; "name/" is EISDIR and creates nothing.
        self.existing_repo()
        cases = [("hk/pre-commit", "Permission denied"), ("d/../.bashrc", "Permission denied"),
                 ("d/.vscode", "Permission denied"), ("d/f", "made"), ("d/f", "File exists"),
                 ("newf/", "Is a directory")]
        script = (
            "import os, sys\n"
            "os.symlink('.git/hooks', 'hk')\n"
            "os.mkdir('d')\n"
            "for path in sys.argv[1:]:\n"
            "    try:\n"
            "        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)); print(path, 'made')\n"
            "    except OSError as e:\n"
            "        print(path, e.strerror)\n")
        out, err = self.run_py(script, *[path for path, _ in cases])
        self.assertEqual(out.splitlines(), [f"{path} {result}" for path, result in cases], err)
        for name in (".git/hooks/pre-commit", ".bashrc", "d/.vscode", "newf"):
            self.assertFalse(os.path.lexists(os.path.join(self.cwd, name)), name)

    def test_fifo_open_waits_without_holding_up_other_calls(self):
        # A writer's open of a FIFO waits for a reader, on a thread of its own: other calls go on meanwhile.
        out, err = self.sh("mkfifo p && { echo through-fifo > p & } && sleep 0.3 && mkdir made && echo MADE && "
                           "cat p && wait")
        self.assertEqual(out, "MADE\nthrough-fifo\n", err)

    def test_racing_threads_cannot_escape(self):
        # One thread flips a path buffer between a harmless name and `.bashrc` while another creates files
        # through it: the supervisor decides on the string it read and performs the call on that string.
        script = (
            "import ctypes, os, threading\n"
            "libc = ctypes.CDLL(None, use_errno=True)\n"
            "buf = ctypes.create_string_buffer(b'harmless', 64)\n"
            "stop = False\n"
            "def flip():\n"
            "    while not stop:\n"
            "        ctypes.memmove(buf, b'.bashrc\\0', 8)\n"
            "        ctypes.memmove(buf, b'harmless\\0', 9)\n"
            "t = threading.Thread(target=flip); t.start()\n"
            "made = 0\n"
            "for flags in (os.O_CREAT | os.O_WRONLY, os.O_CREAT | os.O_EXCL | os.O_WRONLY):\n"
            "    for i in range(3000):\n"
            "        fd = libc.open(buf, flags, 0o644)\n"
            "        if fd >= 0:\n"
            "            made += 1; os.close(fd)\n"
            "            if flags & os.O_EXCL and os.path.exists('harmless'): os.unlink('harmless')\n"
            "stop = True; t.join()\n"
            "print('made', made, 'bashrc', os.path.exists('.bashrc'))\n")
        out, err = self.run_py(script)
        self.assertIn("bashrc False", out, err)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".bashrc")))

    def run_py(self, script, *args):
        path = os.path.join(self.dir, "script.py")
        with open(path, "w") as f:
            f.write(script)
        os.chmod(path, 0o644)
        rc, out, err = self.run_jail(["--", PY, path, *args])
        self.assertEqual(rc, 0, err)
        return out, err

    @not_without_namespaces("it needs seccomp user notification (without it the run stops, 125; no placeholders)")
    def test_fallback_placeholders_on_old_kernels(self):
        # CORDON_TEST_NO_USER_NOTIF=1: as on a kernel before 5.14, placeholders with a one-line notice, removed
        # at the end.
        env = {**self.env(), "CORDON_TEST_NO_USER_NOTIF": "1"}
        p = subprocess.Popen([Env.cordon, "run", "--no-discover", "-c",
                              "(echo x > .bashrc) 2>/dev/null && echo MADE; ls -a"], cwd=self.cwd, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **self._identity())
        out, err = p.communicate(timeout=30)
        self.assertEqual(p.returncode, 0, err)
        self.assertNotIn("MADE", out)
        self.assertIn(".bashrc", out)  # the placeholder, visible during the run
        self.assertIn("no seccomp user notification", err)
        self.assertEqual(os.listdir(self.cwd), [])


class AttackCase(GitFixtures):
    """What the second attack on the jail found: each attack as it was made, as root, as a user and with --user."""

    def attempts(self, attempts, tail="", **kw):
        script = "; ".join(f"({cmd}) 2>/dev/null && echo MADE-{key}" for key, cmd in attempts.items())
        out, err = self.sh(script + "; " + (tail or "true"), expect=None, **kw)
        for key in attempts:
            self.assertNotIn(f"MADE-{key}", out, err)
        return out, err

    def supervisor(self, pid):
        """Threads, descriptors and resident memory (kB) of the supervisor (cordon itself)."""
        with open(f"/proc/{pid}/status") as f:
            status = dict(line.split(":", 1) for line in f if ":" in line)
        return (int(status["Threads"]), len(os.listdir(f"/proc/{pid}/fd")),
                int(status["VmRSS"].split()[0]))

    # 1. An old git directory moved to where a new one was, and back: its config and hooks stay protected.
    def test_moved_old_repository_keeps_its_protection(self):
        self.existing_repo("a")
        self.git("config", "user.name", "owner", cwd=os.path.join(self.cwd, "a"))
        config = self.read(os.path.join(self.cwd, "a/.git/config"))
        # b/.git is new (written during the run); then the old a takes its path, is written and moved back.
        out, err = self.attempts({
            "launder": "mkdir -p b/.git && touch b/.git/config && rm -rf b && mv a b && "
                       "git -C b config core.fsmonitor 'touch /tmp/pwned' && mkdir -p b/.git/hooks && "
                       "echo 'touch /tmp/pwned' > b/.git/hooks/pre-commit && mv b a",
            "parent": "mkdir -p p && mv a p/a",
            "copy-back": "mv a c && cp -r c a",
            "exchange": "mkdir -p e/.git && python3 -c \"import ctypes,os; l=ctypes.CDLL(None,use_errno=True); "
                        "exit(l.renameat2(-100,b'a',-100,b'e',2))\"",
        })
        self.assertEqual(self.read(os.path.join(self.cwd, "a/.git/config")), config)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, "a/.git/hooks/pre-commit")))
        # A new repository may still move (its hooks are the run's and named).
        out, err = self.sh("git init -q n && mv n m && echo x > m/.git/hooks/pre-commit && echo MOVED")
        self.assertIn("MOVED", out, err)

    # 2. A repository planted below the top: refused at any depth, unless allowBareRepositories; named.
    def test_planted_repository_at_any_depth(self):
        self.mkdir("project/src")
        self.mkdir("project/src/deep")
        self.attempts({
            "head-last": "mkdir -p src/deep/objects src/deep/refs && echo 'ref: refs/heads/main' > src/deep/HEAD",
            "refs-last": "rm -rf src/deep/*; echo 'ref: refs/heads/main' > src/deep/HEAD && mkdir src/deep/refs",
            "bare-init": "git init -q --bare src/x.git",
            "moved-out": "git init -q n && mv n/.git src/evil",
            "moved-parent": "mkdir -p q/.git && git init -q --bare q/.git/inner && mv q/.git/inner src/inner",
        })
        for rel in ("src/deep/HEAD", "src/deep/refs", "src/x.git/HEAD", "src/evil", "src/inner"):
            if rel != "src/deep/HEAD" or os.path.exists(os.path.join(self.cwd, "src/deep/objects")):
                self.assertFalse(os.path.exists(os.path.join(self.cwd, rel)), rel)
        # Every repository the run created is named, a gitfile too; and allowed bare ones when the setting says.
        settings = self.write(os.path.join(self.dir, "bare.json"),
                              '{"filesystem": {"allowBareRepositories": true}}')
        out, err = self.sh("git init -q --bare src/y.git && echo BARE && mkdir g && "
                           "echo 'gitdir: ../src/y.git' > g/.git && echo GITFILE", "--settings", settings)
        self.assertIn("GITFILE", out, err)
        self.assertIn(os.path.join(self.cwd, "src/y.git") + " ", err)
        self.assertIn(os.path.join(self.cwd, "g/.git") + " ", err)

    # Also: directories that compare names without case. `.BASHRC` is bash's `.bashrc` there, `.Git/Hooks` git's,
    # `.ba\u017fhrc` bash's again (the comparison itself is unit-tested in tests/policy/casefold_test.cpp).
    def test_case_insensitive_directories(self):
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "casefold,mode=0755", "cordon-casefold", self.cwd],
                           capture_output=True, text=True)
        if r.returncode != 0:
            self.skipTest(f"SKIPPED LOUDLY: no case-insensitive tmpfs on Linux {os.uname().release} "
                          f"(mount -t tmpfs -o casefold: {r.stderr.strip() or r.returncode}; it needs Linux >= 6.13 "
                          "built with CONFIG_UNICODE, see dmesg)")
        self.addCleanup(subprocess.run, ["umount", "-l", self.cwd])
        self.own(self.cwd)
        self.existing_repo("r")
        self.mkdir("project/b")
        out, err = self.attempts({
            "bashrc": "echo x > .BASHRC",
            "bashrc-deep": "mkdir -p sub && echo x > sub/.BaShRc",
            "hook": "mkdir -p r/.Git/Hooks && echo x > r/.Git/Hooks/pre-commit",
            "config": "echo '[core]' >> r/.GIT/CONFIG",
            "bare": "mkdir -p b/OBJECTS b/Refs && echo 'ref: refs/heads/main' > b/head",
            "move": "mv r r2",
            # The kernel folds fully and compares NFD forms: LONG S is s, KELVIN SIGN k, the fi ligature fi.
            "long-s": "echo x > .ba\u017fhrc",
            "kelvin": "mkdir -p r/.git/hoo\u212as && echo x > r/.git/hoo\u212as/post-checkout",
            "ligature": "echo '[core]' >> r/.git/con\ufb01g",
        })
        for rel in (".bashrc", "sub/.bashrc", "r/.git/hooks/pre-commit", "r/.git/hooks/post-checkout", "b/head"):
            self.assertFalse(os.path.exists(os.path.join(self.cwd, rel)), rel)
        self.assertNotIn("[core]\n[core]", self.read(os.path.join(self.cwd, "r/.git/config")))

    # 6. Another process's /proc directory, reached through `..` or a symlink.
    def test_other_process_proc_refused_on_the_resolved_path(self):
        script = ("sleep 30 & P=$!; ln -s /proc/$P pl; "
                  "for p in /proc/1/../$P/mem pl/mem /proc/self/../$P/mem; do "
                  "python3 -c \"import sys; open(sys.argv[1], 'r+b'); print('OPENED', sys.argv[1])\" $p "
                  "2>/dev/null || echo REFUSED; done; kill $P")
        out, err = self.sh(script)
        self.assertNotIn("OPENED", out, err)
        self.assertEqual(out.count("REFUSED"), 3, out + err)

    # 7. A reopen through /proc/self/fd never widens the descriptor's access.
    def test_reopen_never_widens_access(self):
        log = self.write(os.path.join(self.outside, "log"), "SECRET-LOG\n")
        script = ("import os\n"
                  "for flags in (os.O_RDWR, os.O_RDONLY | os.O_CREAT):\n"
                  "    try:\n"
                  "        fd = os.open('/proc/self/fd/2', flags)\n"
                  "        os.lseek(fd, 0, 0); print('READ', os.read(fd, 100))\n"
                  "    except OSError as e:\n"
                  "        print('REFUSED', e.errno)\n"
                  "os.write(2, b'appended\\n')\n")
        path = self.write(os.path.join(self.cwd, "reopen.py"), script)
        for scope in ([], ["--read-scope", "project"]):
            with open(log, "a") as stderr:
                user = ["--user", Env.user] if self.USER_FLAG else []
                p = subprocess.run([Env.cordon, "run", "--no-discover", *user, *scope, "--", PY, path], cwd=self.cwd,
                                   env=self.env(), stdout=subprocess.PIPE, stderr=stderr, text=True, timeout=30,
                                   **self._identity())
            self.assertNotIn("SECRET", p.stdout)
            self.assertEqual(p.stdout.count("REFUSED"), 2, p.stdout + self.read(log))
        self.assertIn("appended", self.read(log))

    # 5. FIFO openers killed while they wait: the supervisor's threads, descriptors and memory come back.
    def test_killed_fifo_openers_release_the_supervisor(self):
        script = ("import os, signal, sys, time\n"
                  "os.mkfifo('p')\n"
                  "def step(word):\n"
                  "    print(word, flush=True); sys.stdin.readline()\n"
                  "step('BASE')\n"
                  "for round in range(3):\n"
                  "    kids = []\n"
                  "    for i in range(300):\n"
                  "        pid = os.fork()\n"
                  "        if pid == 0:\n"
                  "            try:\n"
                  "                os.open('p', os.O_WRONLY)\n"
                  "            except OSError as e:\n"
                  "                os._exit(e.errno)\n"
                  "            os._exit(0)\n"
                  "        kids.append(pid)\n"
                  "    time.sleep(1)\n"
                  "    for pid in kids:\n"
                  "        os.kill(pid, signal.SIGKILL)\n"
                  "    codes = [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in kids]\n"
                  "    print('EAGAIN', codes.count(11), 'KILLED', codes.count(-9), flush=True)\n"
                  "time.sleep(1.2)\n"
                  "open('made', 'w').write('x')\n"
                  "step('DONE')\n")
        path = self.write(os.path.join(self.dir, "fifo.py"), script)
        p = self.popen(["--", PY, path], stdin=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline(), "BASE\n")
            time.sleep(0.3)
            base = self.supervisor(p.pid)
            p.stdin.write("go\n")
            p.stdin.flush()
            lines = [p.stdout.readline() for _ in range(4)]
            self.assertEqual(lines[-1], "DONE\n", lines)
            after = self.supervisor(p.pid)
            p.stdin.write("end\n")
            p.stdin.flush()
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err)
        for line in lines[:3]:
            self.assertIn("EAGAIN", line)
            self.assertGreater(int(line.split()[1]), 0, line)  # beyond the bound
        self.assertEqual(after[0], base[0], f"threads {base} -> {after}")
        self.assertLessEqual(after[1], base[1] + 4, f"descriptors {base} -> {after}")
        if not jailtest.sanitized():
            self.assertLessEqual(after[2], base[2] + 2048, f"memory {base} -> {after}")
        self.assertTrue(os.path.exists(os.path.join(self.cwd, "made")))

    # 10. Renames of a new repository: the supervisor's state (memory, threads, descriptors) and the summary stay
    # bounded, --quiet or not.
    def test_rename_flood_is_bounded(self):
        script = ("import os, subprocess, sys\n"
                  "subprocess.run(['git', 'init', '-q', 'r0'], check=True)\n"
                  "def step(word):\n"
                  "    print(word, flush=True); sys.stdin.readline()\n"
                  "open('r0/.git/config', 'a').close()\n"
                  "step('BASE')\n"
                  "cur = 'r0'\n"
                  "for i in range(1, 20001):\n"
                  "    os.rename(cur, f'r{i}'); cur = f'r{i}'\n"
                  "    open(f'{cur}/.git/config', 'a').close()\n"
                  "for i in range(300):\n"
                  "    os.makedirs(f'n{i}/.git/hooks')\n"
                  "step('DONE')\n")
        path = self.write(os.path.join(self.dir, "flood.py"), script)
        p = self.popen(["--quiet", "--", PY, path], stdin=subprocess.PIPE)
        try:
            self.assertEqual(p.stdout.readline(), "BASE\n")
            base = self.supervisor(p.pid)
            p.stdin.write("go\n")
            p.stdin.flush()
            self.assertEqual(p.stdout.readline(), "DONE\n")
            after = self.supervisor(p.pid)
            p.stdin.write("end\n")
            p.stdin.flush()
            out, err = p.communicate(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
                p.communicate()
        self.assertEqual(p.returncode, 0, err)
        # Threads and descriptors back to the baseline, as after the FIFO flood.
        self.assertEqual(after[0], base[0], f"threads {base} -> {after}")
        self.assertLessEqual(after[1], base[1] + 4, f"descriptors {base} -> {after}")
        if not jailtest.sanitized():
            self.assertLessEqual(after[2], base[2] + 2048, f"memory {base} -> {after}")
        notes = [line for line in err.splitlines() if "git repositories created during the run" in line or
                 "a git repository was created during the run" in line]
        self.assertLessEqual(len(notes), 21, err[-2000:])
        self.assertIn("and 281 more git repositories", err)


class RootInAnotherUsersProject(JailFixtures, unittest.TestCase):
    """Root runs cordon in a project of the test user's that only its owner may enter (mode 0700)."""

    USER_FLAG = True  # the case's files are the user's (cordon itself runs without --user below)

    def test_runs_as_the_projects_owner(self):
        os.chmod(self.cwd, 0o700)
        p = subprocess.run([Env.cordon, "run", "--no-discover", "-c", "id -u; echo x > made && cat made"],
                           cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.split(), [str(Env.uid), "x"], p.stderr)
        self.assertIn(f"runs as uid {Env.uid}", p.stderr)
        self.assertEqual(os.stat(os.path.join(self.cwd, "made")).st_uid, Env.uid)
        # Asked for explicitly, root stays root and cannot enter (no capability): the setup says so.
        p = subprocess.run([Env.cordon, "run", "--no-discover", "--user", "0", "--", "/bin/true"], cwd=self.cwd,
                           env=self.env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 125, p.stderr)
        self.assertIn("Permission denied", p.stderr)


class AsRoot(NotifyCase, unittest.TestCase):
    AS_USER = False


class AsUser(NotifyCase, unittest.TestCase):
    AS_USER = True


class AttacksAsRoot(AttackCase, unittest.TestCase):
    AS_USER = False


class AttacksAsUser(AttackCase, unittest.TestCase):
    AS_USER = True


class AttacksWithUserFlag(AttackCase, unittest.TestCase):
    USER_FLAG = True


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
