#!/usr/bin/python3
"""Attack review of issue 23's write rules, one list (policy/write_rules.hpp): what an untrusted jailed command
tries against the protected names, through every call shape, as root, as an unprivileged user and as root with
`--user`, in the namespace jail and in the jail without namespaces (`--jail landlock`). Needs root.

    python3 tests/jail/test_write_rules_attacks.py --cordon build/cordon [-k pattern]

A failing case is an open hole. The battery (test_every_call_shape_is_refused) runs one jailed Python script
that tries each (protected path x call shape) and prints {attempt: "ok" | errno name}; an attempt that
succeeds is a hole. Not in it: chmod, chown, utimes and user xattrs of a protected file's own metadata (the
kernel's, where the file is writable: the content is what the rules protect).
"""
import json
import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402
from jailtest import PY, Env, JailFixtures  # noqa: E402
from test_write_rules import GIT_ENV, landlock_available  # noqa: E402

ATTACK = r"""import ctypes, errno, json, os, socket, stat, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD = -100
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
    except Exception as e:
        out[name] = "EXC " + repr(e)
def sc(nr, *args):
    r = libc.syscall(nr, *args)
    if r < 0:
        e = ctypes.get_errno(); raise OSError(e, os.strerror(e))
    return r
class OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
def openat2(path, flags, resolve=0):
    how = OpenHow(flags, 0o644, resolve)
    fd = sc(437, AT_FDCWD, path.encode(), ctypes.byref(how), ctypes.c_size_t(24))
    os.close(fd)
def wopen(p, fl=os.O_WRONLY):
    os.close(os.open(p, fl | os.O_NONBLOCK | os.O_NOCTTY, 0o755))
def renameat2(a, b, flags):
    sc(316, AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), ctypes.c_uint(flags))
def bind(p):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try: s.bind(p)
    finally: s.close()
def bind_pair(p):
    a, b = socket.socketpair()
    try: a.bind(p)
    finally: a.close(); b.close()
def tmpfile_link(d, target):
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o755)
    try:
        os.write(fd, b"#!/bin/sh\necho PWN\n")
        sc(265, AT_FDCWD, f"/proc/self/fd/{fd}".encode(), AT_FDCWD, target.encode(), 0x400)  # AT_SYMLINK_FOLLOW
    finally: os.close(fd)
def tmpfile_link_empty(d, target):
    fd = os.open(d, os.O_TMPFILE | os.O_WRONLY, 0o755)
    try: sc(265, fd, b"", AT_FDCWD, target.encode(), 0x1000)  # AT_EMPTY_PATH
    finally: os.close(fd)
os.makedirs("src", exist_ok=True)
open("src/a", "w").write("[core]\n\tfsmonitor = echo PWN\n")
H = os.environ["H"]  # the home
O = os.environ["O"]  # outside
protected = {
 "bashrc": ".bashrc", "home_bashrc": H + "/.bashrc", "claude": ".claude/settings.json",
 "hook": ".git/hooks/pre-commit", "config": ".git/config", "hookspath": ".githooks/pre-commit",
 "bare_hook": ".bare/hooks/pre-receive", "bare_config": ".bare/config", "gitfile": "sub/.git",
 "nested_config": "deep/a/b/.git/config", "outside": O + "/x",
}
dfd = os.open(".", os.O_RDONLY | os.O_DIRECTORY)
for k, p in protected.items():
    attempt(f"{k}:open_trunc", lambda: wopen(p, os.O_WRONLY | os.O_TRUNC))
    attempt(f"{k}:open_creat", lambda: wopen(p, os.O_WRONLY | os.O_CREAT))
    attempt(f"{k}:openat2", lambda: openat2(p, os.O_WRONLY | os.O_CREAT))
    attempt(f"{k}:openat2_in_root", lambda: openat2(p, os.O_WRONLY | os.O_CREAT, 0x10))
    attempt(f"{k}:dotdot", lambda: wopen("src/../" + p if not p.startswith("/") else p + "/../" + os.path.basename(p), os.O_WRONLY))
    attempt(f"{k}:proc_cwd", lambda: wopen(("/proc/self/cwd/" + p) if not p.startswith("/") else p, os.O_WRONLY))
    attempt(f"{k}:proc_fd", lambda: wopen((f"/proc/self/fd/{dfd}/" + p) if not p.startswith("/") else p, os.O_WRONLY))
    attempt(f"{k}:truncate", lambda: os.truncate(p, 0))
    attempt(f"{k}:unlink", lambda: os.unlink(p))
    attempt(f"{k}:rename_over", lambda: (open("src/r", "w").write("x"), os.rename("src/r", p)))
    attempt(f"{k}:rename_away", lambda: (os.rename(p, "src/moved"), os.rename("src/moved", p)))
    attempt(f"{k}:exchange", lambda: (open("src/e", "w").write("x"), renameat2("src/e", p, 2)))
    attempt(f"{k}:link_over", lambda: (os.unlink(p) if False else None, os.link("src/a", p)))
    attempt(f"{k}:chmod", lambda: os.chmod(p, 0o777))
    attempt(f"{k}:chown", lambda: os.chown(p, os.getuid(), os.getgid()))
    attempt(f"{k}:utime", lambda: os.utime(p, (1, 1)))
    attempt(f"{k}:setxattr", lambda: os.setxattr(p, "user.cordon", b"x"))
# new names in protected places
news = {"hook_new": ".git/hooks/post-checkout", "claude_new": ".claude/commands/x.md", "hookspath_new": ".githooks/post-checkout",
        "bare_hook_new": ".bare/hooks/post-update", "nested_hook_new": "deep/a/b/.git/hooks/pre-commit",
        "mcp_root_bashrc_new": H + "/.bash_profile", "outside_new": O + "/new"}
for k, p in news.items():
    attempt(f"{k}:creat", lambda: wopen(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    attempt(f"{k}:mknod", lambda: os.mknod(p, stat.S_IFREG | 0o755))
    attempt(f"{k}:mkfifo", lambda: os.mkfifo(p))
    attempt(f"{k}:mkdir", lambda: os.mkdir(p))
    attempt(f"{k}:symlink", lambda: os.symlink("/bin/true", p))
    attempt(f"{k}:link", lambda: os.link("src/a", p))
    attempt(f"{k}:rename", lambda: (open("src/r2", "w").write("x"), os.rename("src/r2", p)))
    attempt(f"{k}:bind", lambda: bind(p))
    attempt(f"{k}:bind_pair", lambda: bind_pair(p))
    attempt(f"{k}:tmpfile_link", lambda: tmpfile_link(os.path.dirname(p), p))
    attempt(f"{k}:tmpfile_link_empty", lambda: tmpfile_link_empty(os.path.dirname(p), p))
    attempt(f"{k}:tmpfile_src_link", lambda: tmpfile_link("src", p))
# moved directories, symlinks
attempt("mv_git_then_config", lambda: (os.rename(".git", "g2"), wopen("g2/config", os.O_WRONLY | os.O_TRUNC)))
if os.path.exists("g2"):
    attempt("mv_git_back", lambda: os.rename("g2", ".git"))
attempt("symlink_dir_to_hooks", lambda: (os.symlink(".git/hooks", "hk"), wopen("hk/pre-commit", os.O_WRONLY | os.O_CREAT)))
attempt("symlink_to_git_then_write", lambda: (os.symlink(".git", "gl"), wopen("gl/config", os.O_WRONLY)))
attempt("mv_parent_of_nested", lambda: (os.rename("deep/a", "deep/a2"), wopen("deep/a2/b/.git/config", os.O_WRONLY)))
attempt("plant_shape_depth", lambda: (os.makedirs("src/x/y/objects"), os.makedirs("src/x/y/refs"), wopen("src/x/y/HEAD", os.O_WRONLY | os.O_CREAT)))
attempt("plant_shape_rev", lambda: (os.makedirs("src/p/q", exist_ok=True), open("src/p/q/HEAD", "w").write("ref: refs/heads/m\n"), os.mkdir("src/p/q/objects")))
attempt("plant_shape_mv_dotgit", lambda: (os.makedirs("src/m/.git/objects"), os.makedirs("src/m/.git/refs"), open("src/m/.git/HEAD", "w").write("ref: refs/heads/m\n"), os.rename("src/m/.git", "src/planted")))
attempt("plant_gitfile_to_shape", lambda: (os.makedirs("src/gf", exist_ok=True), open("src/gf/.git", "w").write("gitdir: ../m/.git\n")))
attempt("dev_mknod", lambda: os.mknod("/dev/cordon-x", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
attempt("dev_creat", lambda: wopen("/dev/cordon-y", os.O_WRONLY | os.O_CREAT))
attempt("proc_core_pattern", lambda: wopen("/proc/sys/kernel/core_pattern", os.O_WRONLY))
attempt("proc_sysrq", lambda: wopen("/proc/sysrq-trigger", os.O_WRONLY))
attempt("proc_1_dotdot_sys", lambda: wopen("/proc/self/../sys/kernel/core_pattern", os.O_WRONLY))
T = os.environ.get("THEIRS")
if T:
    attempt("shm_theirs_write", lambda: wopen(T, os.O_WRONLY))
    attempt("shm_theirs_unlink", lambda: os.unlink(T))
# odd paths: must not crash or hang the supervisor
for k, p in {"empty": "", "proc": "/proc", "dev": "/dev", "long": "a/" * 3000 + "x", "longname": "x" * 300,
             "nonutf8": b"src/\xff\xfe".decode("utf-8", "surrogateescape"), "dots": "/../../..", "slash": "/"}.items():
    attempt(f"odd_{k}:open", lambda: wopen(p, os.O_WRONLY | os.O_CREAT))
    attempt(f"odd_{k}:mkdir", lambda: os.mkdir(p))
attempt("alive", lambda: wopen("src/alive", os.O_WRONLY | os.O_CREAT))
print(json.dumps(out))"""

# What the battery may do (a new repository the run made is named in the summary; a file of its own).
ALLOWED = {"alive", "plant_gitfile_to_shape", "odd_nonutf8:open"}
METADATA = (":chmod", ":chown", ":utime", ":setxattr")


class AttackCase(JailFixtures):
    JAIL = "namespaces"

    def setUp(self):
        super().setUp()
        if self.JAIL == "landlock" and not landlock_available(self.cwd):
            self.skipTest("the jail without namespaces cannot run here (Landlock)")

    def git(self, *args, cwd=None):
        env = {**os.environ, **GIT_ENV, "HOME": self.home}
        who = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if (self.AS_USER or self.USER_FLAG) else {}
        return subprocess.run(["git", *args], cwd=cwd or self.cwd, check=True, capture_output=True, text=True,
                              env=env, **who)

    def jailed(self, script, cwd=None, env=None, args=()):
        user = ["--user", Env.user] if self.USER_FLAG else []
        p = subprocess.run([Env.cordon, "run", "--no-discover", *user, "--jail", self.JAIL, *args, "--", PY, "-c",
                            script],
                           cwd=cwd or self.cwd, env={**self.env(), **(env or {})}, capture_output=True, text=True,
                           timeout=180, **self._identity())
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr

    def test_every_call_shape_is_refused(self):
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.git("config", "core.hooksPath", ".githooks")
        self.write(os.path.join(cwd, ".githooks/pre-commit"), "#!/bin/sh\n")
        self.write(os.path.join(cwd, ".git/hooks/pre-commit"), "#!/bin/sh\n")
        self.write(os.path.join(cwd, ".bashrc"), "# rc\n")
        self.write(os.path.join(self.home, ".bashrc"), "# rc\n")
        self.write(os.path.join(cwd, ".claude/settings.json"), "{}\n")
        self.write(os.path.join(cwd, "sub/.git"), "gitdir: ../.bare\n")
        self.git("init", "-q", "--bare", os.path.join(cwd, ".bare"))
        self.write(os.path.join(cwd, ".bare/hooks/pre-receive"), "#!/bin/sh\n")
        self.mkdir("project/deep/a/b")
        self.own(os.path.join(cwd, "deep/a"))
        self.git("init", "-q", os.path.join(cwd, "deep/a/b"))
        self.write(os.path.join(self.outside, "x"), "outside\n")
        theirs = f"/dev/shm/cordon-attack-theirs-{os.getpid()}-{type(self).__name__}"
        with open(theirs, "w") as f:
            f.write("theirs\n")
        os.chmod(theirs, 0o666)
        self.own(theirs)
        self.addCleanup(lambda: os.path.exists(theirs) and os.unlink(theirs))
        time.sleep(0.05)  # birth times before the run
        got, err = self.jailed(ATTACK, env={"H": self.home, "O": self.outside, "THEIRS": theirs})
        self.assertEqual(got.get("alive"), "ok", err)  # the supervisor still answers after the odd paths
        holes = sorted(k for k, v in got.items() if v == "ok" and k not in ALLOWED and not k.endswith(METADATA))
        self.assertEqual(holes, [], json.dumps(got))
        for rel in (".bashrc", ".claude/settings.json", ".git/hooks/pre-commit", ".githooks/pre-commit",
                    ".bare/hooks/pre-receive"):
            self.assertIn(self.read(os.path.join(cwd, rel)), ("# rc\n", "{}\n", "#!/bin/sh\n"), rel)
        for rel in (".git/hooks/post-checkout", ".githooks/post-checkout", ".bare/hooks/post-update",
                    "deep/a/b/.git/hooks/pre-commit", "src/x/y/HEAD", "src/planted"):
            self.assertFalse(os.path.lexists(os.path.join(cwd, rel)), rel)
        self.assertEqual(self.read(theirs), "theirs\n")

    # HOLE (fixed): in a case-insensitive directory `.bare/HOOKS/x` is an old bare repository's `hooks/x` (git
    # reads them alike there) and `.HUSKY/pre-commit` the core.hooksPath directory `.husky`'s hook: the rules
    # git-dirs-by-content and git-config-targets compared `hooks` and the configured target byte for byte. Needs
    # a casefold tmpfs (Linux >= 6.13 with CONFIG_UNICODE); tests/policy/write_rules_test.cpp states the same
    # facts without one.
    def test_git_dirs_and_targets_spelt_otherwise_where_names_fold(self):
        mnt = os.path.join(self.dir, "cf")
        os.mkdir(mnt)
        if subprocess.run(["mount", "-t", "tmpfs", "-o", "casefold,mode=0755", "tmpfs", mnt],
                          stderr=subprocess.DEVNULL).returncode != 0:
            self.skipTest(f"SKIPPED LOUDLY: no casefold tmpfs on Linux {os.uname().release} (CONFIG_UNICODE)")
        self.addCleanup(subprocess.run, ["umount", "-l", mnt], check=False)
        project = os.path.join(mnt, "project")
        os.mkdir(project)
        subprocess.run(["chattr", "+F", project], stderr=subprocess.DEVNULL, check=False)
        self.own(project)
        self.git("init", "-q", project, cwd=project)
        self.git("config", "core.hooksPath", ".husky", cwd=project)
        self.git("init", "-q", "--bare", os.path.join(project, ".bare"), cwd=project)
        os.makedirs(os.path.join(project, ".husky"))
        if self.AS_USER or self.USER_FLAG:
            subprocess.run(["chown", "-R", f"{Env.uid}:{Env.gid}", project], check=True)
        if not os.path.exists(os.path.join(project, ".BARE")):
            self.skipTest("the casefold tmpfs does not fold this directory")
        time.sleep(0.05)
        script = (
            "import errno, json, os\n"
            "out = {}\n"
            "for name, p in (('bare-hook', '.bare/HOOKS/pre-receive'), ('bare-config', '.bare/Config'),\n"
            "                ('husky', '.HUSKY/pre-commit')):\n"
            "    try:\n"
            "        os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o755)); out[name] = 'ok'\n"
            "    except OSError as e:\n"
            "        out[name] = errno.errorcode.get(e.errno, str(e.errno))\n"
            "print(json.dumps(out))\n")
        got, err = self.jailed(script, cwd=project)
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertFalse(os.path.exists(os.path.join(project, ".bare/hooks/pre-receive")))
        self.assertFalse(os.path.exists(os.path.join(project, ".husky/pre-commit")))


    # HOLE (fixed): the audit log inside a writable area (`--audit-log audit.jsonl` in the project). The
    # namespace jail binds it read-only; the jail without namespaces ignores the plan's read-only binds and
    # the write rules did not know the file: the command appended forged lines, truncated, removed, moved or
    # hard-linked it (then wrote the link), or moved its directory away
    # and made another in its place.
    def test_audit_log_is_never_written(self):
        log = self.write(os.path.join(self.cwd, "logs/audit.jsonl"), "")
        user = ["--user", Env.user] if self.USER_FLAG else []
        script = (
            "import errno, json, os\n"
            "out = {}\n"
            "def t(name, f):\n"
            "    try:\n"
            "        f(); out[name] = 'ok'\n"
            "    except OSError as e:\n"
            "        out[name] = errno.errorcode.get(e.errno, str(e.errno))\n"
            "t('append', lambda: os.close(os.open('logs/audit.jsonl', os.O_WRONLY | os.O_APPEND)))\n"
            "t('truncate', lambda: os.truncate('logs/audit.jsonl', 0))\n"
            "t('link', lambda: os.link('logs/audit.jsonl', 'hard'))\n"
            "t('rename', lambda: os.rename('logs/audit.jsonl', 'moved'))\n"
            "t('over', lambda: (open('new', 'w').close(), os.rename('new', 'logs/audit.jsonl')))\n"
            "t('unlink', lambda: os.unlink('logs/audit.jsonl'))\n"
            "t('dir-move', lambda: os.rename('logs', 'd2'))\n"
            "print(json.dumps(out))\n")
        p = subprocess.run([Env.cordon, "run", "--no-discover", *user, "--jail", self.JAIL, "--audit-log", log,
                            "--", PY, "-c", script], cwd=self.cwd, env=self.env(), capture_output=True, text=True,
                           timeout=120, **self._identity())
        self.assertEqual(p.returncode, 0, p.stderr)
        got = json.loads(p.stdout.strip().splitlines()[-1])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, p.stderr)
        self.assertTrue(os.path.exists(log))
        self.assertFalse(os.path.lexists(os.path.join(self.cwd, "hard")))

    # HOLE (fixed): cordon's own binary inside a writable area (a developer's `./build/cordon run` in its own
    # tree, a project's vendored tools/cordon). The namespace jail binds it read-only; without namespaces the
    # command moved it away and put its own program in its place: the user's next `cordon` ran that on the
    # host, unjailed (as root when root runs it).
    def test_cordon_binary_is_never_replaced(self):
        own = os.path.join(self.mkdir("project/tools"), "cordon")
        shutil.copy2(Env.cordon, own)
        os.chmod(own, 0o755)
        self.own(own)
        self.write(os.path.join(self.cwd, "evil"), "#!/bin/sh\necho EVIL\n")
        os.chmod(os.path.join(self.cwd, "evil"), 0o755)
        user = ["--user", Env.user] if self.USER_FLAG else []
        script = ("mv tools/cordon tools/old && cp evil tools/cordon && echo REPLACED; "
                  "ln tools/cordon tools/hard && echo LINKED; mv tools t2 && echo DIRMOVED; "
                  "rm -f tools/cordon && echo REMOVED; true")
        p = subprocess.run([own, "run", "--no-discover", *user, "--jail", self.JAIL, "--", "/bin/sh", "-c", script],
                           cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=120,
                           **self._identity())
        self.assertEqual(p.returncode, 0, p.stderr)
        for word in ("REPLACED", "LINKED", "DIRMOVED", "REMOVED"):
            self.assertNotIn(word, p.stdout, p.stderr)
        with open(own, "rb") as f:
            self.assertEqual(f.read(4), b"\x7fELF")

    # Git's configured targets of a nested repository that existed before the run (vendor/lib, a submodule's
    # working tree, a monorepo's subproject): with core.hooksPath .githooks or an include.path, the jailed
    # command wrote vendor/lib/.githooks/pre-commit, and the user's next `git commit` in vendor/lib ran it on
    # the host (an included core.fsmonitor runs at `git status`). Every repository in the writable areas is
    # read when the run starts (policy/git_config.cpp find_targets_below).
    def test_nested_repository_hooks_path_and_include(self):
        cwd = self.cwd
        self.git("init", "-q", cwd)
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        self.git("config", "core.hooksPath", ".githooks", cwd=nested)
        self.git("config", "include.path", "../../extra.cfg", cwd=nested)  # from .git/: vendor/extra.cfg
        self.mkdir("project/vendor/lib/.githooks")
        self.write(os.path.join(cwd, "vendor/extra.cfg"), "")
        time.sleep(0.05)
        got, err = self.jailed(
            "import errno, json, os\n"
            "out = {}\n"
            "for p in ('vendor/lib/.githooks/pre-commit', 'vendor/extra.cfg'):\n"
            "    try:\n"
            "        os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o755)); out[p] = 'ok'\n"
            "    except OSError as e:\n"
            "        out[p] = errno.errorcode.get(e.errno, str(e.errno))\n"
            "print(json.dumps(out))\n")
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertFalse(os.path.exists(os.path.join(nested, ".githooks/pre-commit")))

    def creates(self, paths):
        """Each path created for writing (its directories made first where missing) in one jailed run:
        {path: "ok" | errno name}, and the run's stderr."""
        return self.jailed(
            "import errno, json, os, sys\n"
            "out = {}\n"
            f"for p in {list(paths)!r}:\n"
            "    try:\n"
            "        os.makedirs(os.path.dirname(p), exist_ok=True)\n"
            "        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)\n"
            "        os.write(fd, b'#!/bin/sh\\necho PWN\\n'); os.close(fd); out[p] = 'ok'\n"
            "    except OSError as e:\n"
            "        out[p] = errno.errorcode.get(e.errno, str(e.errno))\n"
            "print(json.dumps(out))\n")

    def test_nested_repository_include_that_sets_hooks_path(self):
        # The nested repository's config includes a file (outside its tree) that sets core.hooksPath: the
        # hooks directory is taken from the nested repository's top, the included file is protected too.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        self.git("config", "include.path", "../../../conf/lib.cfg", cwd=nested)
        self.write(os.path.join(cwd, "conf/lib.cfg"), "[include]\n\tpath = more.cfg\n")
        self.write(os.path.join(cwd, "conf/more.cfg"), "[core]\n\thooksPath = tools/hooks\n")
        time.sleep(0.05)
        got, err = self.creates(["vendor/lib/tools/hooks/pre-commit", "conf/lib.cfg", "conf/more.cfg",
                                 "vendor/lib/tools/other.sh"])
        self.assertEqual(got.pop("vendor/lib/tools/other.sh"), "ok", err)
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertFalse(os.path.exists(os.path.join(nested, "tools/hooks/pre-commit")))

    def test_gitfile_to_a_git_directory_with_hooks_path(self):
        # A working tree whose `.git` is a gitfile naming a git directory elsewhere (`git init
        # --separate-git-dir`), whose config sets core.hooksPath: git in vendor/wt runs vendor/wt/.hooks.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        wt = self.mkdir("project/vendor/wt")
        self.mkdir("project/gitdirs")
        self.git("init", "-q", "--separate-git-dir", os.path.join(cwd, "gitdirs/wt"), wt, cwd=wt)
        self.git("config", "core.hooksPath", ".hooks", cwd=wt)
        time.sleep(0.05)
        got, err = self.creates(["vendor/wt/.hooks/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertFalse(os.path.exists(os.path.join(wt, ".hooks/pre-commit")))

    def test_linked_worktree_takes_hooks_path_from_its_own_top(self):
        # A linked worktree (`git worktree add`) reads the main repository's config through its commondir; a
        # relative core.hooksPath there is taken from the worktree's own top: wt/.githooks runs in wt.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.git("config", "core.hooksPath", ".githooks")
        self.write(os.path.join(cwd, "README"), "x\n")
        self.git("add", "README")
        self.git("commit", "-qm", "x")
        self.git("worktree", "add", "-q", os.path.join(cwd, "wt"))
        time.sleep(0.05)
        got, err = self.creates(["wt/.githooks/pre-commit", ".githooks/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertFalse(os.path.exists(os.path.join(cwd, "wt/.githooks/pre-commit")))

    def test_nested_bare_repository_hooks_path(self):
        # A bare repository in the tree (a local remote) with core.hooksPath: taken from the bare repository.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        bare = self.mkdir("project/remotes/origin.git")
        self.git("init", "-q", "--bare", bare, cwd=bare)
        self.git("config", "core.hooksPath", "custom-hooks", cwd=bare)
        time.sleep(0.05)
        got, err = self.creates(["remotes/origin.git/custom-hooks/post-receive"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)

    def test_search_past_its_bound_says_so(self):
        # A repository deeper than the search goes (64 levels) is unknown, and may name any hooks directory:
        # every writable area is read-only for the run, one stderr line names the directories past the bound.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        deep = "/".join(["d"] * 66)
        nested = self.mkdir("project/" + deep)
        self.git("init", "-q", nested, cwd=nested)
        time.sleep(0.05)
        got, err = self.creates(["sub/out.txt"])
        self.assertNotEqual(got, {"sub/out.txt": "ok"}, err)
        self.assertIn("were not searched for git repositories", err)
        self.assertIn("every writable area is read-only in this run", err)
        self.assertIn(os.path.join(cwd, "/".join(["d"] * 65)), err)
        got, err = self.creates([deep + "/.githooks/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)

    def test_nested_repository_made_during_the_run_is_named(self):
        # A repository the run makes is the run's own (its hooks and config are not protected): it is named
        # at the end, and it cannot take over a pre-existing repository's git directory by a gitfile either
        # (the old git directory's config stays protected).
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.mkdir("project/vendor")
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        time.sleep(0.05)
        got, err = self.jailed(
            "import errno, json, os, subprocess\n"
            "out = {}\n"
            "env = dict(os.environ, GIT_CONFIG_NOSYSTEM='1', HOME=os.getcwd())\n"
            "subprocess.run(['git', 'init', '-q', 'vendor/new'], check=True, env=env)\n"
            "subprocess.run(['git', '-C', 'vendor/new', 'config', 'core.hooksPath', 'h'], check=True, env=env)\n"
            "os.makedirs('vendor/new/h')\n"
            "open('vendor/new/h/pre-commit', 'w').write('#!/bin/sh\\n')\n"
            "out['new'] = 'ok'\n"
            "os.makedirs('other')\n"
            "open('other/.git', 'w').write('gitdir: ../vendor/lib/.git\\n')\n"
            "try:\n"
            "    fd = os.open('vendor/lib/.git/config', os.O_WRONLY | os.O_APPEND); os.close(fd)\n"
            "    out['old_config'] = 'ok'\n"
            "except OSError as e:\n"
            "    out['old_config'] = errno.errorcode.get(e.errno, str(e.errno))\n"
            "print(json.dumps(out))\n")
        self.assertEqual(got, {"new": "ok", "old_config": "EACCES"}, err)
        self.assertIn("a git repository was created during the run: " + os.path.join(cwd, "vendor/new/.git"), err)
        self.assertIn("a git repository was created during the run: " + os.path.join(cwd, "other/.git"), err)

    def test_unlisted_directory_does_not_hide_a_nested_repository(self):
        # A directory the search cannot list hides the repositories below it: the jailed command (its owner)
        # runs `chmod 311 vendor` (not a call the filter sends on), and the next run's search cannot open
        # vendor, so vendor/lib's core.hooksPath stays writable, while execute permission still lets the
        # command, and the host's git, reach vendor/lib by name: the user's next `git commit` there runs the
        # hook. A directory of the writable areas that cannot be listed is protected as a whole.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.mkdir("project/vendor")
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        self.git("config", "core.hooksPath", ".githooks", cwd=nested)
        time.sleep(0.05)
        got, err = self.jailed("import json, os\nos.chmod('vendor', 0o311)\nprint(json.dumps({}))\n")
        try:
            got, err = self.creates(["vendor/lib/.githooks/pre-commit", "vendor/lib/.githooks/x/y"])
            self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
            self.assertFalse(os.path.exists(os.path.join(nested, ".githooks/pre-commit")))
        finally:
            os.chmod(os.path.join(cwd, "vendor"), 0o755)
        # The host's git in vendor/lib runs no hook of the command's.
        self.write(os.path.join(nested, "f"), "x\n")
        self.git("add", "f", cwd=nested)
        self.assertNotIn("PWN", self.git("commit", "-qm", "x", cwd=nested).stdout)

    def test_deinitialized_submodule_keeps_its_hooks_path(self):
        # `git submodule deinit` leaves the submodule's git directory (.git/modules/sub, with its
        # core.hooksPath) and removes the working tree's gitfile, which is how the search found it: the jailed
        # command wrote sub/.husky/pre-commit, and the user's next `git submodule update --init` and `git
        # commit` in sub ran it on the host. The git directories in .git/modules are read too.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        src = self.mkdir("outside/src")
        self.git("init", "-q", src, cwd=src)
        self.write(os.path.join(src, "a"), "a\n")
        self.git("add", "a", cwd=src)
        self.git("commit", "-qm", "a", cwd=src)
        self.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
        self.git("commit", "-qm", "sub")
        self.git("-C", "sub", "config", "core.hooksPath", ".husky")
        self.git("submodule", "deinit", "-q", "-f", "sub")
        time.sleep(0.05)
        got, err = self.creates(["sub/.husky/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.git("-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        sub = os.path.join(cwd, "sub")
        self.write(os.path.join(sub, "b"), "b\n")
        self.git("add", "b", cwd=sub)
        self.assertNotIn("PWN", self.git("commit", "-qm", "b", cwd=sub).stdout)

    # The search's bound is the jailed command's to reach. An earlier run (25 s as a user on
    # /dev/shm) makes 1,000,001 empty files in the project's top, all listed before the walk descends into
    # any directory: this run's search stops at its bound, names vendor on stderr (which the command reads;
    # the user may not), and leaves vendor/lib's core.hooksPath writable; the user's next `git commit` in
    # vendor/lib runs the hook. A fix fails closed: the directories past the bound protected as a whole (a
    # project that big loses writes there), or searched when a call first lands below one or moves one (a
    # design, not a local change). Fixed the first way. Slow (a million files): one identity only.
    def test_search_bound_reached_by_an_earlier_run(self):
        if type(self).__name__ != "AsUser":
            self.skipTest("a million files: run once (AsUser)")
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.mkdir("project/vendor")
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        self.git("config", "core.hooksPath", ".githooks", cwd=nested)
        for i in range(1000001):
            os.close(os.open(os.path.join(cwd, f"j{i}"), os.O_CREAT | os.O_WRONLY, 0o644))
        time.sleep(0.05)
        got, err = self.creates(["vendor/lib/.githooks/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)

    def test_include_past_the_64th_of_a_nested_repository(self):
        # git reads any number of includes side by side: the nested repository's config includes 70 files
        # and the 70th includes deep.cfg. The search read 64 files per repository, so deep.cfg stayed
        # writable: the jailed command wrote core.fsmonitor there, run by the host's next `git status`.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        for i in range(70):
            self.git("config", "--add", "include.path", f"../../../inc/{i}.cfg", cwd=nested)
            self.write(os.path.join(cwd, f"inc/{i}.cfg"), "")
        self.write(os.path.join(cwd, "inc/69.cfg"), "[include]\n\tpath = deep.cfg\n")
        self.write(os.path.join(cwd, "inc/deep.cfg"), "")
        time.sleep(0.05)
        got, err = self.creates(["inc/deep.cfg"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.assertNotIn("PWN", self.read(os.path.join(cwd, "inc/deep.cfg")))

    def test_core_worktree_is_where_relative_hooks_path_runs(self):
        # A repository whose core.worktree names another directory (meta/.git working on site/): git in meta
        # runs its hooks in site, so a relative core.hooksPath is site/.githooks. The search took it from
        # meta (the directory holding .git): the jailed command wrote site/.githooks/pre-commit, and the
        # user's next `git commit` in meta ran it on the host.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        meta = self.mkdir("project/meta")
        site = self.mkdir("project/site")
        self.git("init", "-q", meta, cwd=meta)
        self.git("config", "core.worktree", "../../site", cwd=meta)
        self.git("config", "core.hooksPath", ".githooks", cwd=meta)
        time.sleep(0.05)
        got, err = self.creates(["site/.githooks/pre-commit"])
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        self.write(os.path.join(site, "f"), "f\n")
        self.git("add", "f", cwd=meta)
        self.assertNotIn("PWN", self.git("commit", "-qm", "f", cwd=meta).stdout)

    def test_protected_file_made_unreadable_by_an_earlier_run(self):
        # A chmod of a protected file is a metadata change, not a write: an earlier run makes what the search
        # reads unreadable to an unprivileged supervisor (chmod 000 of a .git/config where the jail allows
        # it, of an included file, of a gitfile; chmod 311 of .git/modules), this run's search learns nothing
        # from it, and the command restores the mode and writes the hooks the configuration names (each ran
        # at the host's next commit or status). Now what cannot be read is protected as a whole.
        cwd = self.cwd
        self.git("init", "-q", cwd)
        self.git("config", "core.hooksPath", ".githooks")
        a = self.mkdir("project/a")
        self.git("init", "-q", a, cwd=a)
        self.git("config", "include.path", "../../conf/a.cfg", cwd=a)
        self.write(os.path.join(cwd, "conf/a.cfg"), "[include]\n\tpath = deep.cfg\n")
        self.write(os.path.join(cwd, "conf/deep.cfg"), "")
        b = self.mkdir("project/b")
        self.mkdir("project/gitdirs")
        self.git("init", "-q", "--separate-git-dir", os.path.join(cwd, "gitdirs/b"), b, cwd=b)
        self.git("config", "core.hooksPath", ".hooks", cwd=b)
        src = self.mkdir("outside/src")
        self.git("init", "-q", src, cwd=src)
        self.write(os.path.join(src, "a"), "a\n")
        self.git("add", "a", cwd=src)
        self.git("commit", "-qm", "a", cwd=src)
        self.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", src, "sub")
        self.git("-C", "sub", "config", "core.hooksPath", ".husky")
        self.git("submodule", "deinit", "-q", "-f", "sub")
        time.sleep(0.05)
        modes = {".git/config": 0o000, "conf/a.cfg": 0o000, "b/.git": 0o000, ".git/modules": 0o311}
        self.jailed("import json, os\n"
                    f"for p, m in {modes!r}.items():\n"
                    "    try: os.chmod(p, m)\n"
                    "    except OSError: pass\n"
                    "print(json.dumps({}))\n")
        restore = "".join(f"    try: os.chmod({p!r}, 0o755)\n    except OSError: pass\n" for p in modes)
        try:
            got, err = self.jailed(
                "import errno, json, os\n"
                f"if True:\n{restore}"
                "out = {}\n"
                "for p in ['.githooks/pre-commit', 'conf/deep.cfg', 'b/.hooks/pre-commit', 'sub/.husky/pre-commit']:\n"
                "    try:\n"
                "        os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                "        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o755)\n"
                "        os.write(fd, b'#!/bin/sh\\necho PWN\\n'); os.close(fd); out[p] = 'ok'\n"
                "    except OSError as e:\n"
                "        out[p] = errno.errorcode.get(e.errno, str(e.errno))\n"
                "print(json.dumps(out))\n")
            self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        finally:
            for p in modes:
                try:
                    os.chmod(os.path.join(cwd, p), 0o755 if p.endswith("modules") else 0o644)
                except OSError:
                    pass

    # Where a jailed write plants a hook that marks its own running: `touch "$0.ran"`.
    HOOK = "#!/bin/sh\ntouch \"$0.ran\"\n"

    def plants(self, writes, args=(), env=None):
        """One jailed run that writes each {path: text} (its directories made first where missing), mode 0755:
        {path: "ok" | errno name}, and the run's stderr."""
        user = ["--user", Env.user] if self.USER_FLAG else []
        script = ("import errno, json, os\n"
                  "out = {}\n"
                  f"for p, text in {dict(writes)!r}.items():\n"
                  "    try:\n"
                  "        os.makedirs(os.path.dirname(p) or '.', exist_ok=True)\n"
                  "        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755)\n"
                  "        os.write(fd, text.encode()); os.close(fd); out[p] = 'ok'\n"
                  "    except OSError as e:\n"
                  "        out[p] = errno.errorcode.get(e.errno, str(e.errno))\n"
                  "print(json.dumps(out))\n")
        p = subprocess.run([Env.cordon, "run", "--no-discover", *user, "--jail", self.JAIL, *args, "--", PY, "-c",
                            script], cwd=self.cwd, env={**self.env(), **(env or {})}, capture_output=True, text=True,
                           timeout=180, **self._identity())
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr

    def commit(self, repo, env=None):
        """The host's `git commit` in `repo`, as the user (a file added first)."""
        self.write(os.path.join(repo, "f"), str(time.time()))
        self.git("add", "f", cwd=repo)
        return subprocess.run(["git", "commit", "-qm", "x"], cwd=repo, capture_output=True, text=True,
                              env={**os.environ, **GIT_ENV, "HOME": self.home, **(env or {})},
                              **({"user": Env.uid, "group": Env.gid, "extra_groups": []}
                                 if (self.AS_USER or self.USER_FLAG) else {}))

    def nested_repository(self, rel, hooks_path):
        """A pre-existing repository at `rel` (below the test's base) whose core.hooksPath is `hooks_path`."""
        repo = self.mkdir(rel)
        self.git("init", "-q", repo, cwd=repo)
        self.git("config", "core.hooksPath", hooks_path, cwd=repo)
        return repo

    # A chmod (or setfacl) of a protected file is metadata, which the kernel answers: an earlier run makes a
    # config the next run's search must read unreadable (to an unprivileged supervisor), and what it names
    # elsewhere stays writable: an absolute core.hooksPath in a nested repository's config, an include's own
    # (absolute) include, a repository below a directory made unlistable (`chmod 311 d`), ~/.gitconfig's
    # hooksPath. The next run plants the hooks there without restoring anything; the user restores the modes
    # (git fails on an unreadable config), and the host's `git commit` runs them. Now the search fails closed:
    # every writable area is read-only in such a run, and stderr says why.
    def test_unreadable_config_hides_targets_elsewhere(self):
        out = self.outside
        self.git("init", "-q", self.cwd)
        b = self.nested_repository("project/b", hooks_path=os.path.join(out, "bhooks"))
        a = self.mkdir("project/a")
        self.git("init", "-q", a, cwd=a)
        self.git("config", "include.path", "../../conf/a.cfg", cwd=a)
        self.write(os.path.join(self.cwd, "conf/a.cfg"), f"[include]\n\tpath = {out}/deep.cfg\n")
        self.write(os.path.join(out, "deep.cfg"), "")
        self.mkdir("project/d")
        sub = self.mkdir("project/d/sub")
        self.git("init", "-q", sub, cwd=sub)
        self.git("config", "core.hooksPath", os.path.join(out, "dhooks"), cwd=sub)
        self.write(os.path.join(self.home, ".gitconfig"), "[core]\n\thooksPath = ~/ghooks\n")
        plain = os.path.join(self.dir, "plain")  # a repository outside every writable area
        os.makedirs(plain)
        self.own(plain)
        self.git("init", "-q", plain, cwd=plain)
        area = ["--allow-write", out, "--allow-write", self.home]
        time.sleep(0.05)
        modes = {"b/.git/config": 0o000, "conf/a.cfg": 0o000, "d": 0o311, os.path.join(self.home, ".gitconfig"): 0}
        chmod = ("import json, os\nout = {}\n"
                 f"for p, m in {modes!r}.items():\n"
                 "    try: os.chmod(p, m); out[p] = 'ok'\n"
                 "    except OSError as e: out[p] = str(e)\n"
                 "print(json.dumps(out))\n")
        changed, _ = self.jailed(chmod, args=area)
        if self.AS_USER:  # metadata: the kernel's to answer (root's without namespaces: the supervisor's; the
            # namespace jail binds ~/.gitconfig read-only)
            self.assertEqual({k: v for k, v in changed.items() if v != "ok" and "gitconfig" not in k}, {})
        hooks = {f"{out}/bhooks/pre-commit": self.HOOK, f"{out}/dhooks/pre-commit": self.HOOK,
                 f"{out}/deep.cfg": f"[core]\n\thooksPath = {out}/ahooks\n", f"{out}/ahooks/pre-commit": self.HOOK,
                 f"{self.home}/ghooks/pre-commit": self.HOOK, "alive.txt": "x"}
        try:
            got, err = self.plants(hooks, area)
        finally:
            for p, m in modes.items():
                os.chmod(os.path.join(self.cwd, p), 0o755 if p == "d" else 0o644)
        alive = got.pop("alive.txt")
        got.pop(f"{out}/ahooks/pre-commit")  # (a hooks directory only where deep.cfg was planted)
        for repo in (b, a, sub, plain):
            self.commit(repo)
        ran = [h for h in hooks if os.path.exists(h + ".ran")]
        self.assertEqual(ran, [], f"{got}\n{err}")  # the host's git ran none of the command's hooks
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)
        if self.AS_USER:  # an unprivileged supervisor cannot read them: it says so, and writes nothing
            self.assertIn("cannot be read", err)
            self.assertIn(os.path.join(self.cwd, "conf/a.cfg"), err)
            self.assertEqual(alive, "EACCES", err)
        else:  # root's supervisor reads them whatever their mode
            self.assertEqual(alive, "ok", err)

    # `~name/` in core.hooksPath is that user's home (git expands it with getpwnam): it was skipped, and a
    # command that may write there planted the hook the host's `git commit` runs.
    def test_hooks_path_in_another_users_home(self):
        name = "cordonhk" + os.urandom(3).hex()
        other = self.mkdir("outside/otherhome")
        subprocess.run(["useradd", "--no-create-home", "--home-dir", other, "--shell", "/bin/sh", name],
                       check=True)
        self.addCleanup(subprocess.run, ["userdel", name], check=False, stderr=subprocess.DEVNULL)
        self.git("init", "-q", self.cwd)
        self.git("config", "core.hooksPath", f"~{name}/hooks")
        time.sleep(0.05)
        got, err = self.plants({f"{other}/hooks/pre-commit": self.HOOK, f"{other}/notes.txt": "x"},
                               ["--allow-write", self.outside])
        self.commit(self.cwd)
        self.assertFalse(os.path.exists(f"{other}/hooks/pre-commit.ran"), f"{got}\n{err}")
        self.assertEqual(got.pop(f"{other}/notes.txt"), "ok", err)
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)

    # A config is read whole (up to 16 MiB): one whose core.hooksPath comes after its first megabyte (a long
    # comment, thousands of aliases) had that hooksPath skipped, and the hook planted there ran at the host's
    # next `git commit`.
    def test_hooks_path_past_the_first_megabyte(self):
        self.git("init", "-q", self.cwd)
        with open(os.path.join(self.cwd, ".git/config"), "a") as f:
            f.write("[alias]\n" + "".join(f"\ta{i} = status --short # {'x' * 40}\n" for i in range(20000)))
            f.write("[core]\n\thooksPath = .githooks\n")
        self.assertGreater(os.path.getsize(os.path.join(self.cwd, ".git/config")), 1 << 20)
        time.sleep(0.05)
        got, err = self.plants({".githooks/pre-commit": self.HOOK})
        self.commit(self.cwd)
        self.assertFalse(os.path.exists(os.path.join(self.cwd, ".githooks/pre-commit.ran")), f"{got}\n{err}")
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)


    # A relative path with `X/..` is opened by git as written: the kernel follows X, then goes up from where X
    # leads. The search collapsed `..` on the string, so with X missing (git skips the include) the command
    # made X a symlink elsewhere (`.git/sub -> outside/deep`) and wrote outside/extra.cfg, which git then
    # included (its core.hooksPath, and the hook planted there, ran at the host's next `git commit`); the same
    # for a core.hooksPath `tools/../hooks`.
    def test_dotdot_after_a_missing_directory(self):
        out = self.outside
        self.mkdir("outside/deep")
        self.mkdir("outside/deep2")
        self.git("init", "-q", self.cwd)
        self.git("config", "include.path", "sub/../extra.cfg")
        b = self.mkdir("project/b")
        self.git("init", "-q", b, cwd=b)
        self.git("config", "core.hooksPath", "tools/../hooks", cwd=b)
        time.sleep(0.05)
        script = ("import errno, json, os\nout = {}\n"
                  "def w(p, t):\n"
                  "    os.makedirs(os.path.dirname(p), exist_ok=True)\n"
                  "    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o755); os.write(fd, t.encode())\n"
                  "    os.close(fd)\n"
                  f"steps = [('link', lambda: os.symlink({out!r} + '/deep', '.git/sub')),\n"
                  f"         ('cfg', lambda: w({out!r} + '/extra.cfg', '[core]\\n\\thooksPath = {out}/hk\\n')),\n"
                  f"         ('hook', lambda: w({out!r} + '/hk/pre-commit', {self.HOOK!r})),\n"
                  f"         ('link2', lambda: os.symlink({out!r} + '/deep2', 'b/tools')),\n"
                  f"         ('hook2', lambda: w({out!r} + '/hooks/pre-commit', {self.HOOK!r}))]\n"
                  "for k, f in steps:\n"
                  "    try: f(); out[k] = 'ok'\n"
                  "    except OSError as e: out[k] = errno.errorcode.get(e.errno, str(e.errno))\n"
                  "print(json.dumps(out))\n")
        got, err = self.jailed(script, args=["--allow-write", out])
        self.commit(self.cwd)
        self.commit(b)
        ran = [h for h in (f"{out}/hk/pre-commit", f"{out}/hooks/pre-commit") if os.path.exists(h + ".ran")]
        self.assertEqual(ran, [], f"{got}\n{err}")  # the host's git ran none of the command's hooks


    # The fail-closed mode (a directory of the user's own that cannot be listed) makes every writable area
    # read-only, but the jail's own /tmp stays writable: without namespaces, with `--allow-write /tmp`, the
    # run's private TMPDIR (made in the host's /tmp, removed at the end) was refused too (git-config-targets),
    # and mktemp, compilers and test runners failed.
    def test_fail_closed_keeps_the_private_tmpdir(self):
        self.git("init", "-q", self.cwd)
        d = self.mkdir("project/d")
        os.chmod(d, 0)
        script = ("import errno, json, os\nout = {}\n"
                  "for k, p in (('tmpdir', os.path.join(os.environ.get('TMPDIR') or '/tmp', 'x')),\n"
                  "             ('project', 'alive.txt'), ('shm', '/dev/shm/sem.cordon-fail-closed')):\n"
                  "    try: os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644)); out[k] = 'ok'\n"
                  "    except OSError as e: out[k] = errno.errorcode.get(e.errno, str(e.errno))\n"
                  "print(json.dumps(out))\n")
        try:
            got, err = self.jailed(script, args=["--allow-write", "/tmp"])
        finally:
            os.chmod(d, 0o755)
            if os.path.exists("/dev/shm/sem.cordon-fail-closed"):  # the host's, where a run may write it
                os.unlink("/dev/shm/sem.cordon-fail-closed")
        if self.AS_USER:
            self.assertIn("cannot be read", err)
            self.assertEqual(got["project"], "EACCES", err)
        if self.JAIL == "landlock":  # the private TMPDIR (the namespace jail's /tmp is then the host's)
            self.assertEqual(got["tmpdir"], "ok", err)
            if self.AS_USER:  # the host's /dev/shm, which outlives the run
                self.assertEqual(got["shm"], "EACCES", err)
        else:  # the namespace jail's /dev/shm is its own tmpfs (POSIX semaphores: multiprocessing.Lock)
            self.assertEqual(got["shm"], "ok", err)


    # The search's bound (1,000,000 entries) is the command's to reach: an earlier run fills a writable area
    # that is walked first (here outside/, sorted before project/) with a million empty files, and in the next
    # run a nested repository past the bound is protected as a whole, but what its config names elsewhere (an
    # absolute core.hooksPath, an include) is not read: the command plants the hook there, and the host's
    # `git commit` in that repository runs it. (The fillers are made here, as the earlier run would; slow: one
    # identity only.) Fixed: a search past its bound makes every writable area read-only for the run, as an
    # unreadable config does.
    def test_search_bound_reached_by_the_command_hides_a_hooks_path(self):
        if type(self).__name__ != "AsUser":
            self.skipTest("a million files: run once (AsUser)")
        out = self.outside
        self.git("init", "-q", self.cwd)
        b = self.nested_repository("project/b", hooks_path=os.path.join(out, "bhooks"))
        fill = self.mkdir("outside/fill")
        for i in range(1_000_001):
            os.close(os.open(f"{fill}/{i}", os.O_WRONLY | os.O_CREAT, 0o644))
        time.sleep(0.05)
        got, err = self.plants({f"{out}/bhooks/pre-commit": self.HOOK}, ["--allow-write", out])
        self.commit(b)
        self.assertFalse(os.path.exists(f"{out}/bhooks/pre-commit.ran"), f"{got}\n{err}")
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)


    # The user's git reads the global and system configuration GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM name
    # (instead of ~/.gitconfig and /etc/gitconfig) and what GIT_CONFIG_COUNT/KEY_n/VALUE_n set, from the
    # environment cordon runs in too. The search read only the fixed files: the global file's core.hooksPath,
    # the file itself, and a hooksPath set in the environment stayed writable, and the host's `git commit`
    # (same environment) ran the hooks planted there.
    def test_git_config_from_the_environment(self):
        out = self.outside
        self.git("init", "-q", self.cwd)
        glob = self.write(os.path.join(out, "dot/gitconfig"), f"[core]\n\thooksPath = {out}/ghooks\n")
        system = self.write(os.path.join(out, "dot/system"), "")
        env = {"GIT_CONFIG_GLOBAL": glob, "GIT_CONFIG_SYSTEM": system, "GIT_CONFIG_COUNT": "1",
               "GIT_CONFIG_KEY_0": "core.hooksPath", "GIT_CONFIG_VALUE_0": f"{out}/ehooks"}
        time.sleep(0.05)
        got, err = self.plants({f"{out}/ghooks/pre-commit": self.HOOK, f"{out}/ehooks/pre-commit": self.HOOK,
                                system: f"[core]\n\thooksPath = {out}/shooks\n",
                                f"{out}/shooks/pre-commit": self.HOOK, f"{out}/alive": "x"},
                               ["--allow-write", out], env=env)
        self.assertEqual(got.pop(f"{out}/alive"), "ok", err)
        for only in (["GIT_CONFIG_GLOBAL"], ["GIT_CONFIG_SYSTEM"],  # each hooksPath on its own (the last wins)
                     ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"]):
            self.commit(self.cwd, {k: env[k] for k in only})
        ran = [h for h in got if os.path.exists(h + ".ran")]
        self.assertEqual(ran, [], f"{got}\n{err}")
        got.pop(f"{out}/shooks/pre-commit")  # (a hooks directory only where the system file was planted)
        self.assertEqual({k: v for k, v in got.items() if v == "ok"}, {}, err)


class AsRoot(AttackCase, unittest.TestCase):
    AS_USER = False


class AsUser(AttackCase, unittest.TestCase):
    AS_USER = True


class WithUserFlag(AttackCase, unittest.TestCase):
    USER_FLAG = True


class LandlockAsRoot(AttackCase, unittest.TestCase):
    AS_USER = False
    JAIL = "landlock"


class LandlockAsUser(AttackCase, unittest.TestCase):
    AS_USER = True
    JAIL = "landlock"


class LandlockWithUserFlag(AttackCase, unittest.TestCase):
    USER_FLAG = True
    JAIL = "landlock"


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
