#!/usr/bin/python3
"""The jail's write rules, one list (policy/write_rules.hpp): `cordon check write:PATH` and a real jailed write
agree on every path below, as root, as an unprivileged user and as root with `--user`, in the namespace jail and
in the jail without namespaces (`--jail landlock`, where the kernel has Landlock). Needs root.

    python3 tests/jail/test_write_rules.py --cordon build/cordon [-k pattern]

A jailed "write" opens the path for writing (O_CREAT where the case makes a name) and closes it: nothing is ever
written, so a device or a kernel knob that the jail wrongly let through is not changed.
"""
import json
import shutil
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jailtest  # noqa: E402
from jailtest import PY, Env, JailFixtures  # noqa: E402

GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}

# Run inside the jail: each line of stdin is "CREATE PATH"; prints one JSON object {path: "ok" | errno name}.
OPENER = r"""
import errno, json, os, sys
out = {}
for line in sys.stdin.read().splitlines():
    create, path = line.split(" ", 1)
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | (os.O_CREAT if create == "1" else 0)
    try:
        os.close(os.open(path, flags, 0o644))
        out[path] = "ok"
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""


def landlock_available(cwd):
    try:
        p = subprocess.run([Env.cordon, "run", "--no-discover", "--jail", "landlock", "--", "/bin/true"],
                           cwd=cwd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0


class WriteRulesCase(JailFixtures):
    JAIL = "namespaces"

    def setUp(self):
        super().setUp()
        if self.JAIL == "landlock" and not landlock_available(self.cwd):
            self.skipTest("the jail without namespaces cannot run here (Landlock)")
        self.made_outside = []  # host paths a jail without namespaces may make: removed in tearDown

    def tearDown(self):
        for path in self.made_outside:
            try:
                os.unlink(path)
            except OSError:
                pass
        super().tearDown()

    def git(self, *args, cwd=None):
        env = {**os.environ, **GIT_ENV, "HOME": self.home}
        who = {"user": Env.uid, "group": Env.gid, "extra_groups": []} if (self.AS_USER or self.USER_FLAG) else {}
        return subprocess.run(["git", *args], cwd=cwd or self.cwd, check=True, capture_output=True, text=True,
                              env=env, **who)

    def check(self, path):
        """`cordon check write:PATH` as the identity runs cordon: (allowed, the JSON answer)."""
        p = subprocess.run([Env.cordon, "check", "--no-discover", "--jail", self.JAIL, "--json", f"write:{path}"],
                           cwd=self.cwd, env=self.env(), capture_output=True, text=True, timeout=30,
                           **self._identity())
        self.assertIn(p.returncode, (0, 1), p.stderr)
        return p.returncode == 0, json.loads(p.stdout)

    def jailed_opens(self, cases):
        """Each (path, create) opened for writing in one jailed run: {path: "ok" | errno name}."""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", OPENER],
                                     input_text="".join(f"{1 if c else 0} {p}\n" for p, c in cases))
        self.assertEqual(rc, 0, err)
        return json.loads(out.strip().splitlines()[-1])

    def run_jail(self, args, cwd=None, timeout=60, input_text=None):
        user = ["--user", Env.user] if self.USER_FLAG else []
        p = subprocess.run([Env.cordon, "run", "--no-discover", *user, *args], cwd=cwd or self.cwd,
                           env=self.env(), input=input_text, capture_output=True, text=True, timeout=timeout,
                           **self._identity())
        return p.returncode, p.stdout, p.stderr

    def prepare(self):
        """The project: a repository that existed before the run (with core.hooksPath), a bare git directory, a
        gitfile, the repository shape's half, a shared-memory entry of another program. Returns the cases:
        (path, create, expected allowed in the namespace jail, expected allowed without namespaces)."""
        cwd, outside = self.cwd, self.outside
        self.git("init", "-q", cwd)
        self.git("config", "core.hooksPath", ".githooks")
        self.write(os.path.join(cwd, ".githooks/pre-commit"), "#!/bin/sh\n")
        self.write(os.path.join(cwd, "src/main.c"), "int main;\n")
        self.write(os.path.join(cwd, ".bashrc"), "# rc\n")
        self.mkdir("project/.claude")
        self.write(os.path.join(cwd, "sub/.git"), "gitdir: ../.bare\n")
        bare = os.path.join(cwd, ".bare")
        self.git("init", "-q", "--bare", bare)
        self.mkdir("project/shape/objects")
        # A nested repository that existed before the run, with targets of its own (a vendored package, a
        # monorepo's subproject): its core.hooksPath and the file its configuration includes.
        nested = self.mkdir("project/vendor/lib")
        self.git("init", "-q", nested, cwd=nested)
        self.git("config", "core.hooksPath", ".githooks", cwd=nested)
        self.git("config", "include.path", "../../extra.cfg", cwd=nested)  # from .git/: vendor/extra.cfg
        self.write(os.path.join(cwd, "vendor/extra.cfg"), "")
        self.write(os.path.join(outside, "x"), "outside\n")
        theirs = f"/dev/shm/cordon-test-theirs-{os.getpid()}-{self.id().rsplit('.', 1)[-1]}"[:200]
        with open(theirs, "w") as f:
            f.write("theirs\n")
        os.chmod(theirs, 0o666)
        self.own(theirs)
        self.made_outside.append(theirs)
        mine = f"/dev/shm/cordon-test-mine-{os.getpid()}-{self.id().rsplit('.', 1)[-1]}"[:200]
        self.made_outside.append(mine)
        host_tmp = f"/tmp/cordon-test-write-{os.getpid()}"
        self.made_outside.append(host_tmp)
        knob = "/proc/sys/kernel/core_pattern"
        device = next((d for d in ("/dev/mem", "/dev/kmsg", "/dev/loop-control", "/dev/vcs")
                       if os.path.exists(d)), None)
        time.sleep(0.05)  # birth times before the run (the file system's clock is coarse)
        cases = [
            ("/dev/null", False, True, True),
            ("/dev/zero", False, True, True),
            ("/dev/cordon-new-node", True, False, False),
            (knob, False, False, False),
            ("/proc/sysrq-trigger", False, False, False),
            ("/proc/self/oom_score_adj", False, True, True),
            (mine, True, True, True),
            (theirs, True, True, False),  # the namespace jail's /dev/shm is its own: nothing of others there
            (host_tmp, True, True, False),  # /tmp: the private one, or the host's without namespaces
            (os.path.join(cwd, "src/main.c"), True, True, True),
            (os.path.join(cwd, "src/new.c"), True, True, True),
            (os.path.join(cwd, ".bashrc"), True, False, False),
            (os.path.join(cwd, ".claude/settings.json"), True, False, False),
            (os.path.join(cwd, ".git/hooks/pre-commit"), True, False, False),
            (os.path.join(cwd, ".git/config"), True, False, False),
            (os.path.join(cwd, ".git/description"), True, True, True),
            (os.path.join(cwd, ".githooks/pre-commit"), True, False, False),
            (os.path.join(cwd, ".bare/hooks/pre-receive"), True, False, False),
            (os.path.join(cwd, ".bare/description"), True, True, True),
            (os.path.join(cwd, "sub/.git"), True, False, False),
            (os.path.join(cwd, "shape/HEAD"), True, False, False),
            (os.path.join(cwd, "vendor/lib/.githooks/pre-commit"), True, False, False),
            (os.path.join(cwd, "vendor/extra.cfg"), True, False, False),
            (os.path.join(cwd, "vendor/lib/src.c"), True, True, True),
            (os.path.join(outside, "x"), True, False, False),
            ("/etc/hostname", True, False, False),
        ]
        if device:
            cases.append((device, False, False, False))
        return cases

    def test_check_and_the_jail_agree(self):
        cases = self.prepare()
        landlock = self.JAIL == "landlock"
        # `cordon check` first: it looks at the file system as it is before the run (what the run makes there,
        # in the host's /dev/shm without namespaces, is the run's own, not another program's).
        checked = {path: self.check(path) for path, _, _, _ in cases}
        got = self.jailed_opens([(p, c) for p, c, _, _ in cases])
        # The TMPDIR of the run: written in the jail, and `cordon check` knows it by its name.
        rc, out, err = self.run_jail(["--jail", self.JAIL, "-c",
                                      'd="${TMPDIR:-/tmp}"; echo "$d"; : > "$d/t" && echo MADE'])
        self.assertEqual(rc, 0, err)
        tmpdir, made = (out.splitlines() + ["", ""])[:2]
        self.assertEqual(made, "MADE", err)
        tmp_file = os.path.join(tmpdir, "t")
        cases.append((tmp_file, True, True, True))
        got[tmp_file] = "ok"
        checked[tmp_file] = self.check(tmp_file)
        disagreements = []
        for path, _, in_namespaces, in_landlock in cases:
            expected = in_landlock if landlock else in_namespaces
            in_jail = got.get(path) == "ok"
            allowed, answer = checked[path]
            with self.subTest(path=path):
                self.assertEqual(in_jail, expected, f"jail: {got.get(path)}; check: {answer}")
                self.assertEqual(allowed, in_jail, f"jail: {got.get(path)}; check: {answer}")
                self.assertIn("writeRule", answer)
            if allowed != in_jail:
                disagreements.append((path, got.get(path), answer.get("writeRule"), answer.get("reason")))
        self.assertEqual(disagreements, [])

    def test_check_names_the_rule(self):
        self.prepare()
        rules = {
            "/dev/cordon-new-node": "devices",
            "/proc/sys/kernel/core_pattern": "proc-knobs",
            os.path.join(self.cwd, ".githooks/pre-commit"): "git-config-targets",
            os.path.join(self.cwd, "vendor/lib/.githooks/pre-commit"): "git-config-targets",
            os.path.join(self.cwd, "vendor/extra.cfg"): "git-config-targets",
            os.path.join(self.cwd, ".bare/hooks/pre-receive"): "git-dirs-by-content",
            os.path.join(self.cwd, "sub/.git"): "gitfile",
            os.path.join(self.cwd, "shape/HEAD"): "repository-shape",
            os.path.join(self.cwd, ".bashrc"): "path-rules",
        }
        if self.JAIL == "landlock":
            rules[f"/tmp/cordon-test-write-{os.getpid()}"] = "default-tmp"
        for path, rule in rules.items():
            with self.subTest(path=path):
                allowed, answer = self.check(path)
                self.assertFalse(allowed, answer)
                self.assertEqual(answer["writeRule"], rule, answer)
                self.assertEqual(answer["jail"], self.JAIL)

    def test_check_and_the_jail_agree_on_moves(self):
        """`cordon check move:FROM TO`, `remove:PATH` and `symlink:PATH` and the same call in a real jail agree,
        and a refusal names protected-moves (each case on fixtures of its own, all made before the run)."""
        self.prepare()
        cwd = self.cwd
        for rel in ("plain/a.c", "plain2/keep", "tree/src/x.c", "m/keep", "m2/keep"):
            self.write(os.path.join(cwd, rel))
        self.mkdir("project/empty")
        for rel in ("prepped/objects", "prepped/refs"):
            self.mkdir("project/" + rel)
        self.write(os.path.join(cwd, "prepped/HEAD"), "ref: refs/heads/main\n")
        old_tree = self.mkdir("project/tree/lib")
        self.git("init", "-q", old_tree, cwd=old_tree)
        link = os.path.join(cwd, "lnk")
        os.symlink("plain", link)
        self.own(link)
        # A .git that is a symlink to the git directory (git init --separate-git-dir, then a link): it says
        # where git reads, as a gitfile does (the attack review: removed, then a prepared .git put there).
        self.mkdir("project/lg")
        git_link = os.path.join(cwd, "lg/.git")
        os.symlink("../.bare", git_link)
        self.own(git_link)
        time.sleep(0.05)  # birth times before the run
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        cases = [  # (what, path, to, allowed)
            ("move", j(".git"), j("old-git"), False),          # the repository's own .git
            ("move", j(".claude"), j("claude2"), False),       # a directory holding protected names
            ("move", j("plain"), j("plain-moved"), True),
            ("move", j("tree"), j("tree2"), False),            # holds a .git that existed (tree/lib/.git)
            ("move", j("prepped"), j("m/prepped"), False),     # a git directory of its own shape, old
            ("move", j("lnk"), j("m2/.claude"), False),        # a symlink into a protected name's place
            ("move", j("plain2/keep"), j("plain2/kept"), True),
            ("remove", j(".claude"), None, False),
            ("remove", j("lg/.git"), None, False),             # an old .git symlink stays
            ("move", j("lg/.git"), j("lg/old"), False),
            ("remove", j("empty"), None, True),
            ("symlink", j("m/.git"), None, False),
            ("symlink", j("plain2/link"), None, True),
        ]
        checked = []
        for what, path, to, _ in cases:
            args = [f"{what}:{path}"] + ([to] if to else [])
            p = subprocess.run([Env.cordon, "check", "--no-discover", "--jail", self.JAIL, "--json", *args],
                               cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=30,
                               **self._identity())
            self.assertIn(p.returncode, (0, 1), p.stderr)
            checked.append((p.returncode == 0, json.loads(p.stdout)))
        script = r"""
import errno, json, os, sys
out = []
for line in sys.stdin.read().splitlines():
    what, path, to = line.split("\t")
    try:
        if what == "move":
            os.rename(path, to)
        elif what == "remove":
            os.rmdir(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
        else:
            os.symlink("plain", path)
        out.append("ok")
    except OSError as e:
        out.append(errno.errorcode.get(e.errno, str(e.errno)))
print(json.dumps(out))
"""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", script],
                                     input_text="".join(f"{w}\t{p}\t{t or ''}\n" for w, p, t, _ in cases))
        self.assertEqual(rc, 0, err)
        got = json.loads(out.strip().splitlines()[-1])
        for (what, path, to, expected), (allowed, answer), in_jail in zip(cases, checked, got):
            with self.subTest(what=what, path=path, to=to):
                self.assertEqual(in_jail == "ok", expected, f"jail: {in_jail}; check: {answer}")
                self.assertEqual(allowed, in_jail == "ok", f"jail: {in_jail}; check: {answer}")
                if not expected:
                    # (The namespace jail binds the repository's .git over itself: a mount point, EBUSY.)
                    busy = self.JAIL == "namespaces" and path == j(".git")
                    self.assertEqual(in_jail, "EBUSY" if busy else "EACCES", answer)
                    self.assertEqual(answer["writeRule"], "protected-moves", answer)

    def test_a_symlink_at_a_protected_name_protects_where_it_leads(self):
        """The attack review (issue 23): with `.claude -> dotclaude` the command wrote
        dotclaude/settings.local.json and dotclaude/commands/ (and without namespaces dotclaude/settings.json):
        Claude Code follows the link, so they steered the agent. Also a chain (`.vscode -> hop -> editor`), a
        link inside the target (`dotclaude/commands -> ../cmds`) and a tracked hooks directory
        (`.git/hooks -> ../githooks`). `cordon check` agrees with the jail on each write and move."""
        cwd = self.cwd
        self.git("init", "-q", cwd)
        for d in ("dotclaude", "editor", "cmds", "githooks"):
            self.mkdir("project/" + d)
        self.write(os.path.join(cwd, "dotclaude/notes.md"), "notes\n")
        self.write(os.path.join(cwd, "cmds/review.md"), "review\n")
        hooks = os.path.join(cwd, ".git/hooks")
        subprocess.run(["rm", "-rf", hooks], check=True)
        for link, to in ((".claude", "dotclaude"), ("dotclaude/commands", "../cmds"), (".vscode", "hop"),
                         ("hop", "editor"), (".git/hooks", "../githooks")):
            os.symlink(to, os.path.join(cwd, link))
            self.own(os.path.join(cwd, link))
        time.sleep(0.05)  # birth times before the run
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        writes = [  # (path, create, allowed)
            (j(".claude/settings.local.json"), True, False),
            (j("dotclaude/settings.local.json"), True, False),
            (j("dotclaude/commands/evil.md"), True, False),
            (j("cmds/evil.md"), True, False),
            (j("cmds/review.md"), False, False),
            (j("editor/tasks.json"), True, False),
            (j("githooks/pre-commit"), True, False),
            (j("dotclaude/notes.md"), False, True),  # not a protected name at the link either
            (j("editor.txt"), True, True),
        ]
        checked = {path: self.check(path) for path, _, _ in writes}
        got = self.jailed_opens([(p, c) for p, c, _ in writes])
        for path, _, expected in writes:
            allowed, answer = checked[path]
            with self.subTest(path=path):
                self.assertEqual(got.get(path) == "ok", expected, f"jail: {got.get(path)}; check: {answer}")
                self.assertEqual(allowed, expected, answer)
                if not expected and "settings" not in path:
                    self.assertEqual(answer["writeRule"], "protected-links", answer)
        moves = [  # (what, path, to): none allowed
            ("move", j("dotclaude"), j("away")),
            ("remove", j("hop"), None),
            ("move", j("hop"), j("hop2")),
            ("remove", j("dotclaude/commands"), None),
            ("move", j("editor"), j("ed2")),
        ]
        for what, path, to in moves:
            args = [f"{what}:{path}"] + ([to] if to else [])
            p = subprocess.run([Env.cordon, "check", "--no-discover", "--jail", self.JAIL, "--json", *args],
                               cwd=cwd, env=self.env(), capture_output=True, text=True, timeout=30,
                               **self._identity())
            with self.subTest(check=args):
                self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        script = r"""
import errno, os, sys
for line in sys.stdin.read().splitlines():
    what, path, to = line.split("\t")
    try:
        os.rename(path, to) if what == "move" else os.unlink(path)
        print("ok")
    except OSError as e:
        print(errno.errorcode.get(e.errno, str(e.errno)))
"""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", script],
                                     input_text="".join(f"{w}\t{p}\t{t or ''}\n" for w, p, t in moves))
        self.assertEqual(rc, 0, err)
        # (The namespace jail binds a protected directory over itself: a mount point, EBUSY.)
        for (what, path, _), answer in zip(moves, out.split()):
            with self.subTest(jail=what, path=path):
                self.assertIn(answer, ("EACCES", "EBUSY") if self.JAIL == "namespaces" else ("EACCES",), err)
        self.assertEqual(len(out.split()), len(moves), out + err)
        for link in (".claude", "dotclaude/commands", ".vscode", "hop", ".git/hooks"):
            self.assertTrue(os.path.islink(j(link)), link)
        self.assertEqual(sorted(os.listdir(j("cmds"))), ["review.md"])

    def test_links_to_protected_names_from_outside_and_inside_are_followed(self):
        """The second review of protected-links (issue 23), each a plant the host read: a `..` in a link's
        target (`.claude -> m/../dotclaude`, then m swapped for a link); the home's names leading into the
        project (dotfiles: ~/.gitconfig -> project/dotfiles/gitconfig, ~/.ssh -> project/dotfiles/ssh); an
        ancestor's (the repository above the working directory: ../.git/hooks -> project/githooks,
        ../.claude -> project/dc); a hook that is a link inside a real .git/hooks; a link inside a linked
        protected directory (`githooks/pre-commit -> ../scripts/pre-commit`, `dc/commands/x.md ->
        ../../docs/x.md`)."""
        cwd, top = self.cwd, self.dir
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        self.git("init", "-q", cwd)
        for d in ("m", "dotclaude", "deep/er", "dotfiles/ssh", "githooks", "dc/commands", "docs", "scripts"):
            self.mkdir("project/" + d)
        self.write(j("dotfiles/gitconfig"), "[user]\n")
        self.write(j("scripts/pre-commit"), "#!/bin/sh\n")
        self.write(j("scripts/pre-push"), "#!/bin/sh\n")
        self.write(j("docs/x.md"), "a command\n")
        links = [(j(".claude"), "m/../dotclaude"),
                 (j(".git/hooks/pre-push"), "../../scripts/pre-push"),
                 (j("githooks/pre-commit"), "../scripts/pre-commit"),
                 (j("dc/commands/x.md"), "../../docs/x.md"),
                 (os.path.join(top, ".claude"), "project/dc"),
                 (os.path.join(top, ".git"), "project/.git-above")]
        # The repository above the working directory, whose hooks are a link into the project.
        above = os.path.join(cwd, ".git-above")
        self.git("init", "-q", "--bare", above)
        subprocess.run(["rm", "-rf", os.path.join(above, "hooks")], check=True)
        links.append((os.path.join(above, "hooks"), "../githooks"))
        if not self.USER_FLAG:  # (--user: the home is the user's own)
            links += [(os.path.join(self.home, ".gitconfig"), os.path.join(cwd, "dotfiles/gitconfig")),
                      (os.path.join(self.home, ".ssh"), os.path.join(cwd, "dotfiles/ssh"))]
        for link, to in links:
            os.symlink(to, link)
            self.own(link)
        # Hard links made before the run: another name of a protected file is that file.
        self.write(j(".vscode/settings.json"), "{}\n")
        self.write(j("scripts/post-merge"), "#!/bin/sh\n")
        self.write(j("docs/x2.md"), "a command\n")
        self.write(j("dotfiles/bashrc"), "# rc\n")
        hard = [(j(".vscode/settings.json"), j("bk.json")), (j("scripts/post-merge"), j(".git/hooks/post-merge")),
                (j("docs/x2.md"), j("dc/commands/x2.md"))]
        if not self.USER_FLAG:
            hard.append((j("dotfiles/bashrc"), os.path.join(self.home, ".bashrc")))
        for existing, new in hard:
            os.link(existing, new)
        time.sleep(0.05)  # birth times before the run
        writes = [  # (path, create): none allowed
            (j("bk.json"), False),
            (j("scripts/post-merge"), False),
            (j("docs/x2.md"), False),
            (j("dotclaude/settings.local.json"), True),
            (j("scripts/pre-push"), False),
            (j("scripts/pre-commit"), False),
            (j("githooks/post-checkout"), True),
            (j("dc/settings.local.json"), True),
            (j("docs/x.md"), False),
        ]
        if not self.USER_FLAG:
            writes += [(j("dotfiles/gitconfig"), False), (j("dotfiles/ssh/authorized_keys"), True),
                       (j("dotfiles/bashrc"), False)]
        checked = {path: self.check(path) for path, _ in writes}
        script = r"""
import errno, json, os, sys
out = {}
try:
    os.rename("m", "m2")
    os.symlink("deep/er", "m")
    os.makedirs("deep/dotclaude", exist_ok=True)
    out["swap"] = "ok"
except OSError as e:
    out["swap"] = errno.errorcode.get(e.errno, str(e.errno))
for line in sys.stdin.read().splitlines():
    create, path = line.split(" ", 1)
    try:
        os.close(os.open(path, os.O_WRONLY | (os.O_CREAT if create == "1" else 0), 0o644))
        out[path] = "ok"
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", script],
                                     input_text="".join(f"{1 if c else 0} {p}\n" for p, c in writes))
        self.assertEqual(rc, 0, err)
        got = json.loads(out.strip().splitlines()[-1])
        self.assertNotEqual(got["swap"], "ok", err)  # m is on the way of .claude: it stays
        for path, _ in writes:
            allowed, answer = checked[path]
            with self.subTest(path=path):
                self.assertNotEqual(got.get(path), "ok", err)
                self.assertFalse(allowed, answer)
        self.assertFalse(os.path.exists(j("githooks/post-checkout")))
        with open(j("scripts/pre-commit")) as f:
            self.assertEqual(f.read(), "#!/bin/sh\n")

    def test_links_inside_protected_and_git_directories_are_followed(self):
        """The third review of protected-links (issue 23): symlinks inside a linked protected directory of the
        home (~/.ssh -> dotfiles/ssh holding authorized_keys -> project/keys); a hard link deep in a linked
        .claude (dc/commands/sub/x.md); hooks that are links in a submodule's git directory, in a bare
        repository and in a hooks subdirectory (pre-commit.d/lint); a .git that is a link to a git directory
        outside the writable areas whose hooks link into the project. Each plant ran on the host before."""
        cwd = self.cwd
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        for rel in ("scripts/pc", "scripts/lint", "scripts/post-receive", "scripts/sub-pc", "keys", "docs/x.md"):
            self.write(j(rel), "#!/bin/sh\n")
        realgit = os.path.join(self.outside, "realgit")
        self.own(self.outside)
        self.git("init", "-q", "--separate-git-dir", realgit, cwd)
        sub_git = os.path.join(realgit, "modules/sub")
        os.makedirs(os.path.join(realgit, "modules"))
        self.own(os.path.join(realgit, "modules"))
        self.git("init", "-q", "--separate-git-dir", sub_git, j("sub"))
        self.git("init", "-q", "--bare", j("repo.git"))
        self.mkdir("project/dc/commands/sub")
        os.link(j("docs/x.md"), j("dc/commands/sub/x.md"))
        os.makedirs(os.path.join(realgit, "hooks/pre-commit.d"), exist_ok=True)
        links = [(os.path.join(realgit, "hooks/pre-commit"), j("scripts/pc")),
                 (os.path.join(realgit, "hooks/pre-commit.d/lint"), j("scripts/lint")),
                 (os.path.join(sub_git, "hooks/pre-commit"), j("scripts/sub-pc")),
                 (j("repo.git/hooks/post-receive"), "../../scripts/post-receive"),
                 (j(".claude"), "dc")]
        if not self.USER_FLAG:
            self.mkdir("project/dotfiles/ssh")
            links += [(j("dotfiles/ssh/authorized_keys"), j("keys")),
                      (os.path.join(self.home, ".ssh"), j("dotfiles/ssh"))]
        for link, to in links:
            os.symlink(to, link)
            self.own(link)
        time.sleep(0.05)  # birth times before the run
        writes = [j("scripts/pc"), j("scripts/lint"), j("scripts/sub-pc"), j("scripts/post-receive"),
                  j("docs/x.md")]
        if not self.USER_FLAG:
            writes.append(j("keys"))
        checked = {path: self.check(path) for path in writes}
        got = self.jailed_opens([(p, False) for p in writes])
        for path in writes:
            allowed, answer = checked[path]
            with self.subTest(path=path):
                self.assertNotEqual(got.get(path), "ok")
                self.assertFalse(allowed, answer)
        # What no link leads to stays writable.
        self.assertEqual(self.jailed_opens([(j("scripts/other"), True)]), {j("scripts/other"): "ok"})

    def test_git_hooks_directories_bind_mounts_and_other_homes_are_followed(self):
        """The fourth review of protected-links (issue 23): a core.hooksPath directory holding a hard link and a
        symlink into the project, and an included config hard-linked to a project file; the home's own
        core.hooksPath (~/.githooks) linked the same way; a link in ~/.claude's data (a shell snapshot, sourced
        before each command); a worktree's config.worktree hard-linked to a project file; another home in
        /home (a --user run's user) whose ~/.ssh leads into the project; a home's ~/.claude bind-mounted into
        the project. And a link to / (`.vscode -> /`): said at start, the start does not walk the file
        system, every write is refused."""
        cwd = self.cwd
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        self.git("init", "-q", cwd)
        self.git("config", "core.hooksPath", ".husky")
        self.git("config", "include.path", "../shared.gitconfig")
        self.git("config", "extensions.worktreeConfig", "true")
        for rel in ("scripts/pc", "scripts/linked", "scripts/home-pc", "snap.sh", "dotssh/authorized_keys",
                    "shared.gitconfig", "src/a.c"):
            self.write(j(rel), "#\n")
        self.git("add", "src/a.c")
        self.git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
        wt = os.path.join(self.outside, "wt")
        self.own(self.outside)
        self.git("worktree", "add", "-q", wt)
        os.link(j("scripts/pc"), self.mkdir("project/.husky") + "/pre-commit")
        os.link(j("shared.gitconfig"), j("conf-team"))
        os.link(os.path.join(cwd, ".git/worktrees/wt/config.worktree") if os.path.exists(
            os.path.join(cwd, ".git/worktrees/wt/config.worktree")) else self._made(
            os.path.join(cwd, ".git/worktrees/wt/config.worktree")), j("notes.txt"))
        links = [(j(".husky/post-commit"), "../scripts/linked")]
        if not self.USER_FLAG:
            githooks = os.path.join(self.home, ".githooks")
            os.makedirs(githooks)
            with open(os.path.join(self.home, ".gitconfig"), "w") as f:
                f.write(f"[core]\n\thooksPath = {githooks}\n")
            links += [(os.path.join(githooks, "pre-commit"), j("scripts/home-pc")),
                      (os.path.join(self.home, ".claude/shell-snapshots/snapshot-bash.sh"), j("snap.sh"))]
            os.makedirs(os.path.join(self.home, ".claude/shell-snapshots"))
        other_home = f"/home/cordon-links-test-{os.getpid()}-{self.id().rsplit('.', 1)[0][-12:]}"
        os.makedirs(other_home)
        self.addCleanup(shutil.rmtree, other_home, True)
        links.append((os.path.join(other_home, ".ssh"), j("dotssh")))
        for link, to in links:
            os.symlink(to, link)
            self.own(link)
        # A home's .claude bind-mounted into the project (no link, one name per file).
        claude_home = os.path.join(other_home, ".claude")
        os.makedirs(claude_home)
        with open(os.path.join(claude_home, "settings.json"), "w") as f:
            f.write("{}\n")
        os.makedirs(j("claude-home"))
        self.own(j("claude-home"))
        subprocess.run(["mount", "--bind", claude_home, j("claude-home")], check=True)
        self.addCleanup(subprocess.run, ["umount", "-l", j("claude-home")], check=False)
        for p in (claude_home, os.path.join(claude_home, "settings.json")):
            self.own(p)
        time.sleep(0.05)  # birth times before the run
        writes = [j("scripts/pc"), j("scripts/linked"), j("conf-team"), j("notes.txt"), j("dotssh/authorized_keys"),
                  j("claude-home/settings.json")]
        if not self.USER_FLAG:
            writes += [j("scripts/home-pc"), j("snap.sh")]
        else:
            # --user U: U's own home (anywhere /etc/passwd says), whose ~/.ssh leads into the project.
            uhome = self.mkdir("uhome")
            os.makedirs(os.path.join(uhome, ".ssh"))
            self.own(os.path.join(uhome, ".ssh"))
            self.write(j("ukeys"), "keys\n")
            os.symlink(j("ukeys"), os.path.join(uhome, ".ssh/authorized_keys"))
            subprocess.run(["usermod", "-d", uhome, Env.user], check=True)
            self.addCleanup(subprocess.run, ["usermod", "-d", "/nonexistent", Env.user], check=False)
            writes.append(j("ukeys"))
        # (`cordon check` has no --user: it knows the caller's homes only.)
        checked = {path: self.check(path) for path in writes if path != j("ukeys")}
        got = self.jailed_opens([(p, False) for p in writes] + [(j("src/b.c"), True)])
        self.assertEqual(got.get(j("src/b.c")), "ok")
        for path in writes:
            with self.subTest(path=path):
                self.assertNotEqual(got.get(path), "ok")
                if path in checked:
                    allowed, answer = checked[path]
                    self.assertFalse(allowed, answer)
        # A link to /: said, refused everywhere, and quick (no walk of the whole file system: the run's own
        # timeout of 60 s would end it).
        os.symlink("/", j(".vscode"))
        self.own(j(".vscode"))
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", "open('src/c.c', 'w')"])
        self.assertNotEqual(rc, 0, err)
        self.assertIn(".vscode leads to /, which holds the writable area", err)

    def test_bind_mounts_gitfile_links_and_unlistable_directories(self):
        """The fifth review of protected-links (issue 23): bind mounts into the project of a home's parent of
        protected names (~/.config) and of a single file (~/.gitconfig); the project shown at a second path
        that the home's links and core.hooksPath name; a gitfile whose `gitdir:` passes a link (`gits ->
        store`), swapped for a repository of the command's; a directory of the caller's own that cannot be
        listed (mode 0) in a protected tree; a HEAD file that made a linked .claude look like a git
        directory, hiding a hard link below it."""
        cwd = self.cwd
        j = lambda rel: os.path.join(cwd, rel)  # noqa: E731
        self.git("init", "-q", cwd)
        for rel in ("docs/x.md", "agents/reviewer.md", "githooks/pre-commit", "dotclaude/settings.json",
                    "dotclaude/HEAD", "src/a.c"):
            self.write(j(rel), "#\n")
        self.mkdir("project/dotclaude/commands")
        os.link(j("docs/x.md"), j("dotclaude/commands/x.md"))
        os.symlink("dotclaude", j(".claude"))
        self.own(j(".claude"))
        # A gitfile through a link: app/.git says gitdir: ../gits/app, gits -> store.
        store = self.mkdir("project/store")
        self.git("init", "-q", "--separate-git-dir", os.path.join(store, "app"), j("app"))
        with open(j("app/.git"), "w") as f:
            f.write("gitdir: ../gits/app\n")
        self.own(j("app/.git"))
        os.symlink("store", j("gits"))
        self.own(j("gits"))
        writes = [j("docs/x.md")]
        mounts = []
        if not self.USER_FLAG:
            # The home: ~/.config/git/config and ~/.gitconfig bind-mounted into the project; the project also at
            # a second path, which ~/.claude and the repository's core.hooksPath name.
            self.write(os.path.join(self.home, ".config/git/config"), "[user]\n")
            self.write(os.path.join(self.home, ".gitconfig"), "[user]\n")
            for rel in ("cfg", "alt"):
                os.makedirs(j(rel) if rel == "cfg" else os.path.join(self.dir, rel))
            self.write(j("gc"), "")
            mounts = [(os.path.join(self.home, ".config"), j("cfg")), (os.path.join(self.home, ".gitconfig"), j("gc")),
                      (cwd, os.path.join(self.dir, "alt"))]
            for source, point in mounts:
                subprocess.run(["mount", "--bind", source, point], check=True)
                self.addCleanup(subprocess.run, ["umount", "-l", point], check=False)
            os.symlink(os.path.join(self.dir, "alt/dotclaude"), os.path.join(self.home, ".claude"))
            self.git("config", "core.hooksPath", os.path.join(self.dir, "alt/githooks"))
            # A directory of the caller's own in a protected tree that cannot be listed, holding a link into the
            # project.
            agents = os.path.join(self.home, ".config/git/hooks")
            os.makedirs(agents)
            os.symlink(j("agents/reviewer.md"), os.path.join(agents, "reviewer"))
            self.own(agents)
            os.chmod(agents, 0)
            self.addCleanup(subprocess.run, ["chmod", "-f", "755", agents], check=False)
            writes += [j("cfg/git/config"), j("gc"), j("dotclaude/settings.json"), j("githooks/pre-commit"),
                       j("agents/reviewer.md")]
        time.sleep(0.05)  # birth times before the run
        script = r"""
import errno, json, os, sys
out = {}
for what, path in (("rm", "gits"), ("mv", "gits")):
    try:
        os.unlink(path) if what == "rm" else os.rename(path, "gits2")
        out[what] = "ok"
    except OSError as e:
        out[what] = errno.errorcode.get(e.errno, str(e.errno))
for path in sys.stdin.read().split():
    try:
        os.close(os.open(path, os.O_WRONLY))
        out[path] = "ok"
    except OSError as e:
        out[path] = errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps(out))
"""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", script], input_text="\n".join(writes))
        self.assertEqual(rc, 0, err)
        got = json.loads(out.strip().splitlines()[-1])
        self.assertEqual((got["rm"], got["mv"]), ("EACCES", "EACCES"), err)
        self.assertTrue(os.path.islink(j("gits")))
        for path in writes:
            with self.subTest(path=path):
                self.assertNotEqual(got.get(path), "ok", err)

    def _made(self, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write("")
        return self.own(path)

    def test_a_fifo_open_that_waits_creates_nothing_where_the_directory_went(self):
        """The attack review's race (issue 23): an O_CREAT open of an existing FIFO named HEAD in a new .git
        waits on a thread; meanwhile the FIFO is removed and the .git moved to src/. The wait used to open the
        name again with O_CREAT: a regular HEAD next to objects/ and refs/ in src/xN, a repository (with a
        core.fsmonitor of the command's) that git on the host reads (won within ~40 attempts before)."""
        script = r"""
import os, stat, sys
os.makedirs("src", exist_ok=True)
for i in range(120):
    g = "n%d/.git" % i
    os.makedirs(g + "/objects"); os.makedirs(g + "/refs/heads")
    with open(g + "/config", "w") as f:
        f.write("[core]\n\tfsmonitor = false\n")
    os.mkfifo(g + "/HEAD")
    rd = os.open(g + "/HEAD", os.O_RDONLY | os.O_NONBLOCK)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.write(w, b"x")
        try:
            fd = os.open(g + "/HEAD", os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            os._exit(3)
        os._exit(0 if stat.S_ISREG(os.fstat(fd).st_mode) else 2)
    os.close(w)
    os.read(r, 1)
    try:
        os.unlink(g + "/HEAD")
        os.rename(g, "src/x%d" % i)
    except OSError:
        pass
    os.waitpid(pid, 0)
    os.close(rd)
    os.close(r)
"""
        rc, out, err = self.run_jail(["--jail", self.JAIL, "--", PY, "-c", script], timeout=120)
        self.assertEqual(rc, 0, err)
        src = os.path.join(self.cwd, "src")
        planted = [d for d in os.listdir(src) if os.path.isfile(os.path.join(src, d, "HEAD"))]
        self.assertEqual(planted, [])


class AsRoot(WriteRulesCase, unittest.TestCase):
    AS_USER = False


class AsUser(WriteRulesCase, unittest.TestCase):
    AS_USER = True


class WithUserFlag(WriteRulesCase, unittest.TestCase):
    USER_FLAG = True


class LandlockAsRoot(WriteRulesCase, unittest.TestCase):
    AS_USER = False
    JAIL = "landlock"


class LandlockAsUser(WriteRulesCase, unittest.TestCase):
    AS_USER = True
    JAIL = "landlock"


class LandlockWithUserFlag(WriteRulesCase, unittest.TestCase):
    USER_FLAG = True
    JAIL = "landlock"


if __name__ == "__main__":
    sys.exit(jailtest.run_main([Env], "they create a user"))
