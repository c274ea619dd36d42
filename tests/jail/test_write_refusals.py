#!/usr/bin/python3
"""Refused writes, explained (issue 28 part 1): every write the jail's supervisor refuses is in the end-of-run
summary (grouped by path and rule, with the advice that fits), in the audit log (`event: "write"`) and on the
control channel (`refused`, `kind: "write"`); a flood of refused writes keeps the supervisor's memory and the
summary bounded; `cordon policy suggest` on a real run's audit log gives settings that make the same run pass.
Real jailed processes, in the namespace jail and in the jail without namespaces (`--jail landlock`). Needs root.

    python3 tests/jail/test_write_refusals.py --cordon build/cordon [-k pattern]
"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest

CORDON = None
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def landlock_available(cwd):
    p = subprocess.run([CORDON, "run", "--no-discover", "--jail", "landlock", "--", "/bin/true"], cwd=cwd,
                       capture_output=True, text=True, timeout=60)
    return p.returncode == 0


def read_lines(sock, timeout):
    """Every JSON line the control channel's peer got until it closes (the run ended) or `timeout`."""
    sock.settimeout(timeout)
    data = b""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            break
        if not chunk:
            break
        data += chunk
    return [json.loads(line) for line in data.split(b"\n") if line.strip()]


class WriteRefusalsCase(unittest.TestCase):
    JAIL = "namespaces"

    def setUp(self):
        self.base = tempfile.mkdtemp(prefix="cordon-write-refusals-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.base, True)
        self.project = os.path.join(self.base, "project")
        self.home = os.path.join(self.base, "home")
        self.outside = os.path.join(self.base, "outside")
        for d in (self.project, self.home, self.outside):
            os.makedirs(d)
        if self.JAIL == "landlock" and not landlock_available(self.project):
            self.skipTest("the jail without namespaces cannot run here (Landlock)")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home, **GIT_ENV}

    def git(self, *args):
        subprocess.run(["git", *args], cwd=self.project, check=True, capture_output=True, env=self.env)

    def run_jail(self, script, *flags, pass_fds=(), timeout=120):
        """Runs `script` jailed; also notes the supervisor's peak RSS (VmHWM, KiB: the cordon process itself, read
        until it exits) in self.peak_kib and the time taken in self.elapsed."""
        start = time.time()
        p = subprocess.Popen([CORDON, "run", "--no-discover", "--jail", self.JAIL, *flags, "--", "sh", "-c", script],
                             cwd=self.project, env=self.env, pass_fds=pass_fds, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.peak_kib = 0

        def watch():
            while p.poll() is None:
                try:
                    with open(f"/proc/{p.pid}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                self.peak_kib = max(self.peak_kib, int(line.split()[1]))
                except OSError:
                    return
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            out, err = p.communicate(timeout=timeout)
        finally:
            if p.poll() is None:
                p.kill()
            watcher.join()
        self.elapsed = time.time() - start
        return p.returncode, out, err

    def audit_writes(self, log):
        with open(log) as f:
            lines = [json.loads(line) for line in f]
        return [line for line in lines if line.get("event") == "write"]

    def test_each_refusal_listed_with_rule_and_advice_in_summary_audit_and_control(self):
        self.git("init", "-q")  # a .git that existed before the run: its hooks are protected
        self.git("init", "-q", "--bare", "old.git")  # a git directory of another name, older than the run
        secret = os.path.join(self.project, "secret.txt")
        with open(secret, "w") as f:
            f.write("keep\n")
        target = os.path.join(self.outside, "out.txt")
        log = os.path.join(self.base, "audit.jsonl")
        ours, theirs = socket.socketpair()
        self.addCleanup(ours.close)
        script = (f"for p in {target} \"$HOME/.bashrc\" .git/hooks/pre-commit old.git/hooks/post-checkout "
                  f"secret.txt; do (echo x > \"$p\") 2>/dev/null && echo \"wrote $p\"; done; "
                  f"(echo x > {target}) 2>/dev/null; true")
        rc, out, err = self.run_jail(script, "--allow-write", self.home,
                                     "--deny-write", secret, "--audit-log", log,
                                     "--control-fd", str(theirs.fileno()), pass_fds=(theirs.fileno(),))
        theirs.close()
        control = read_lines(ours, 30)
        self.assertEqual(rc, 0, err)
        self.assertEqual(out, "", "a refused write went through: " + out)
        for path in (target, os.path.join(self.home, ".bashrc"),
                     os.path.join(self.project, ".git/hooks/pre-commit"),
                     os.path.join(self.project, "old.git/hooks/post-checkout")):
            self.assertFalse(os.path.exists(path), path)

        # The summary: each path once, with its count, rule and advice.
        self.assertIn("cordon: refused 6 write(s):", err)
        outside, rest = err.split("  outside the writable areas:\n", 1)[1].split("\n  denied by a deny rule:\n", 1)
        denied, never = rest.split("\n  never allowed: --allow-write does not lift these:\n", 1)
        self.assertIn(f"    {target}  x2  (open by sh)", outside)
        self.assertIn("allow with --allow-write PATH or sandbox.filesystem.allowWrite", outside)
        self.assertIn(f"    {secret}  x1  by `{secret}` from ", denied)
        self.assertIn("a deny rule (denyWrite, an Edit deny rule) wins over allowWrite", denied)
        self.assertIn(f"    {self.home}/.bashrc  x1  by `", never)
        self.assertIn(f"    {self.project}/.git/hooks/pre-commit  x1  by `", never)
        self.assertIn(f"    {self.project}/old.git/hooks/post-checkout  x1  write rule git-dirs-by-content", never)
        self.assertIn("the protected names (settings files, shell start-up files", never)
        self.assertIn("git-dirs-by-content: git reads the config and runs the hooks", never)
        self.assertNotIn("--allow-write PATH", never)

        # The audit log: one `write` line per refusal, explained as `cordon check write:PATH` explains it.
        writes = self.audit_writes(log)
        self.assertEqual(len(writes), 6, writes)
        by_path = {}
        for w in writes:
            by_path.setdefault(w["path"], []).append(w)
            for key in ("ts", "id", "sandbox", "path", "operation", "decision", "reason", "rule", "write_rule",
                        "error", "pid", "program"):
                self.assertIn(key, w)
            self.assertEqual((w["event"], w["decision"], w["operation"], w["program"]), ("write", "deny", "open", "sh"))
            self.assertTrue(w["sandbox"].startswith("cordon-"), w)
            self.assertGreater(w["pid"], 1)
        self.assertEqual([w["id"] for w in writes], sorted(w["id"] for w in writes))
        out_line = by_path[target][0]
        self.assertEqual((out_line["reason"], out_line["rule"], out_line["write_rule"], out_line["error"]),
                         ("default-deny", None, "path-rules", "EROFS"))
        bashrc = by_path[os.path.join(self.home, ".bashrc")][0]
        self.assertEqual((bashrc["reason"], bashrc["write_rule"], bashrc["error"]),
                         ("always-read-only", "path-rules", "EACCES"))
        hooks = by_path[os.path.join(self.project, ".git/hooks/pre-commit")][0]
        self.assertEqual((hooks["reason"], hooks["write_rule"]), ("always-read-only", "path-rules"))
        old = by_path[os.path.join(self.project, "old.git/hooks/post-checkout")][0]
        self.assertEqual((old["reason"], old["rule"], old["write_rule"], old["error"]),
                         ("always-read-only", "write rule git-dirs-by-content", "git-dirs-by-content", "EACCES"))
        deny = by_path[secret][0]
        self.assertEqual((deny["reason"], deny["rule"], deny["write_rule"]), ("blocked-by-denylist", secret, "path-rules"))
        self.assertIn("--deny-write", deny["source"])
        # `cordon check write:PATH` names the same rule.
        for path, line in ((bashrc["path"], bashrc), (old["path"], old), (secret, deny)):
            c = subprocess.run([CORDON, "check", "--no-discover", "--jail", self.JAIL, "--allow-write", self.home,
                                "--deny-write", secret, "--json", "write:" + path], cwd=self.project, env=self.env,
                               capture_output=True, text=True, timeout=30)
            answer = json.loads(c.stdout)
            self.assertEqual((answer["reason"], answer["rule"], answer["writeRule"]),
                             (line["reason"], line["rule"], line["write_rule"]), path)

        # The control channel: a `refused` line of kind `write` for each.
        refused = [line["refused"] for line in control if "refused" in line]
        self.assertEqual(len(refused), 6, control)
        for r in refused:
            self.assertEqual(r["kind"], "write")
        self.assertEqual(sorted((r["path"], r["write_rule"], r["reason"]) for r in refused),
                         sorted((w["path"], w["write_rule"], w["reason"]) for w in writes))

    def test_kernel_answers_and_moves_seen_where_cordon_decides(self):
        # A kernel knob: the rules leave /proc to the jail, whose read-only /proc/sys answers EROFS (namespaces);
        # without namespaces the rule refuses it (EACCES). Either way the refusal is listed, never with
        # --allow-write as the advice. Opened for writing and closed: nothing is written.
        self.git("init", "-q", "sub")
        log = os.path.join(self.base, "audit.jsonl")
        opener = ("import os\n"
                  "try: os.close(os.open('/proc/sys/kernel/core_pattern', os.O_WRONLY))\n"
                  "except OSError as e: print(e.errno)\n")
        rc, out, err = self.run_jail(f"/usr/bin/python3 -c \"{opener}\"; mv sub moved 2>/dev/null; true",
                                     "--audit-log", log)
        self.assertEqual(rc, 0, err)
        writes = {w["path"]: w for w in self.audit_writes(log)}
        knob = writes["/proc/sys/kernel/core_pattern"]
        self.assertEqual(knob["write_rule"], "proc-knobs")
        self.assertEqual(knob["error"], "EROFS" if self.JAIL == "namespaces" else "EACCES")
        never = err.split("never allowed: --allow-write does not lift these:\n", 1)[1]
        self.assertIn("/proc/sys/kernel/core_pattern  x1  write rule proc-knobs  (open by python3)", never)
        self.assertTrue(os.path.isdir(os.path.join(self.project, "sub/.git")))
        if self.JAIL == "landlock":
            # A directory holding a .git older than the run is not moved: the move rules (protected-moves). (In
            # the namespace jail it is a mount point, pinned: EBUSY, the mount's answer, not a write rule's.)
            moved = writes[os.path.join(self.project, "sub")]
            self.assertEqual((moved["operation"], moved["write_rule"], moved["error"]),
                             ("rename", "protected-moves", "EACCES"))
            self.assertIn("protected-moves: moving or replacing an ancestor would launder", never)

    def test_a_move_out_of_the_project_is_listed_as_the_jail_answers_it(self):
        # The namespace jail: the project and the rest are two mounts, so the rename is EXDEV whatever the rules
        # say (the kernel's answer, not listed) and `mv` copies: the copy's first refused step is listed (GNU mv
        # removes the destination first). Without namespaces they are one mount: the rename itself is refused
        # and listed.
        log = os.path.join(self.base, "audit.jsonl")
        target = os.path.join(self.outside, "moved.txt")
        rc, out, err = self.run_jail(f"echo a > f.txt; mv f.txt {target} 2>/dev/null; true", "--audit-log", log)
        self.assertEqual(rc, 0, err)
        self.assertFalse(os.path.exists(target))
        ops = [w["operation"] for w in self.audit_writes(log) if w["path"] == target]
        self.assertEqual(len(ops), 1, err)
        if self.JAIL == "namespaces":
            self.assertIn(ops[0], ("remove", "open"), err)
        else:
            self.assertEqual(ops[0], "rename", err)
        self.assertIn(f"    {target}  x1  ({ops[0]} by mv)", err)

    def flood_script(self):
        """A python script (readable by the test user) that tries to create ARGV[2]/f0 .. f(ARGV[1]-1)."""
        script = os.path.join(self.base, "flood.py")
        with open(script, "w") as f:
            f.write("import os, sys\n"
                    "for i in range(int(sys.argv[1])):\n"
                    "    try: os.close(os.open(sys.argv[2] + '/f%d' % i, os.O_WRONLY | os.O_CREAT, 0o644))\n"
                    "    except OSError: pass\n")
        os.chmod(self.base, 0o755)
        os.chmod(script, 0o644)
        return script

    def test_a_flood_of_refused_writes_stays_bounded(self):
        # 100,000 refused creations of distinct names: the summary names at most a page of them and says how many
        # more; the supervisor's memory does not grow with the number of paths (against a run of 5,000).
        script = self.flood_script()

        def run(n):
            log = os.path.join(self.base, f"audit-{n}.jsonl")
            rc, out, err = self.run_jail(f"/usr/bin/python3 {script} {n} {self.outside}", "--audit-log", log,
                                         timeout=900)
            self.assertEqual(rc, 0, err[-2000:])
            self.assertEqual(os.listdir(self.outside), [])
            self.assertGreater(self.peak_kib, 0)
            return err, self.peak_kib, log

        small_err, small_rss, _ = run(5000)
        err, rss, log = run(100000)
        growth_kib = rss - small_rss
        print(f"\nflood ({self.JAIL}): 100,000 refused writes in {self.elapsed:.1f} s; supervisor peak RSS {rss} KiB "
              f"(5,000: {small_rss} KiB)", file=sys.stderr)
        # Unbounded, 100,000 groups of path and rule would be some 50 MiB more. Not under AddressSanitizer,
        # whose quarantine keeps freed memory resident (the bounded summary below shows the bound there).
        with open(CORDON, "rb") as f:
            sanitized = b"AddressSanitizer" in f.read()
        if not sanitized:
            self.assertLess(growth_kib, 16 * 1024, f"supervisor grew by {growth_kib} KiB")
        self.assertIn("cordon: refused 100000 write(s):", err)
        self.assertIn("    ... and 985 more path(s)\n", err)
        self.assertIn("  ... and 99000 more refused write(s) to other paths (past 1000 paths counted)", err)
        self.assertLess(len(err.splitlines()), 40, err)
        self.assertIn("cordon: refused 5000 write(s):", small_err)
        # The audit log has a line per refusal (or the summary says how many it lacks).
        with open(log) as f:
            lines = sum(1 for line in f if '"event":"write"' in line)
        unlogged = re.search(r"\((\d+) of them not in the audit log", err)
        dropped = re.search(r"audit log .*: (\d+) line\(s\) dropped", err)
        self.assertGreater(lines, 0)
        self.assertEqual(lines + (int(unlogged.group(1)) if unlogged else 0) + (int(dropped.group(1)) if dropped else 0),
                         100000, err[-1500:])

    def test_a_refusal_before_a_flood_stays_in_the_summary(self):
        # Review hole: the summary was sorted by count, so 10,000 refusals of other paths (as often refused, and
        # sorting before it) pushed an earlier, different refusal into "... and N more". First seen first now.
        script = self.flood_script()
        first = os.path.join(self.outside, "zz-first.txt")
        rc, out, err = self.run_jail(f"(echo x > {first}) 2>/dev/null; /usr/bin/python3 {script} 10000 {self.outside}; true",
                                     timeout=600)
        self.assertEqual(rc, 0, err[-2000:])
        self.assertIn("cordon: refused 10001 write(s):", err)
        section = err.split("  outside the writable areas:\n", 1)[1]
        self.assertTrue(section.startswith(f"    {first}  x1  (open by sh)\n"), section[:500])
        self.assertIn("    ... and 985 more path(s)\n", section)

    def test_writes_into_cordons_ca_are_never_allowed_as_check_says(self):
        # Review hole: a write into cordon's CA directory (outside every writable area) was listed "outside the
        # writable areas" with --allow-write as the advice, and `cordon check` did not know the directory at all.
        # It is never allowed (no allowWrite lifts it), and run and check say so alike; a CA directory inside
        # the project (--ca-dir) is refused too, not written.
        subprocess.run([CORDON, "ca", "init"], env=self.env, check=True, capture_output=True, timeout=60)
        home_ca = os.path.join(self.home, ".config/cordon/ca")
        project_ca = os.path.join(self.project, "ca")
        subprocess.run([CORDON, "ca", "init", "--dir", project_ca], env=self.env, check=True, capture_output=True,
                       timeout=60)
        for ca, flags in ((home_ca, []), (project_ca, ["--ca-dir", project_ca])):
            with self.subTest(ca=ca):
                log = os.path.join(self.base, "audit-%d.jsonl" % len(flags))
                rc, out, err = self.run_jail(f"(echo x > {ca}/new) 2>/dev/null && echo wrote; true", "--audit-log",
                                             log, *flags)
                self.assertEqual((rc, out), (0, ""), err)
                self.assertFalse(os.path.exists(os.path.join(ca, "new")))
                writes = [w for w in self.audit_writes(log) if w["path"] == os.path.join(ca, "new")]
                self.assertEqual(len(writes), 1, err)
                w = writes[0]
                self.assertEqual((w["reason"], w["rule"], w["write_rule"], w["error"]),
                                 ("always-read-only", ca, "path-rules", "EACCES"), w)
                self.assertIn("cordon's CA (its private key)", w["source"])
                self.assertNotIn("outside the writable areas", err)
                never = err.split("never allowed: --allow-write does not lift these:\n", 1)[1]
                self.assertIn(f"    {ca}/new  x1  by `{ca}` from ", never)
                self.assertIn("cordon's CA directory holds the private key", never)
                c = subprocess.run([CORDON, "check", "--no-discover", "--jail", self.JAIL, *flags, "--json",
                                    "write:" + os.path.join(ca, "new")], cwd=self.project, env=self.env,
                                   capture_output=True, text=True, timeout=30)
                self.assertEqual(c.returncode, 1, c.stderr)
                answer = json.loads(c.stdout)
                self.assertEqual((answer["decision"], answer["reason"], answer["rule"], answer["writeRule"]),
                                 ("deny", "always-read-only", ca, "path-rules"))

    def test_magic_link_refusals_are_listed(self):
        # The supervisor's own refusals: a read-only descriptor reopened for writing through /proc/self/fd/0, and
        # another process's /proc/PID opened for writing. They were answered EACCES and listed nowhere.
        ro = os.path.join(self.project, "readonly.txt")
        with open(ro, "w") as f:
            f.write("keep\n")
        log = os.path.join(self.base, "audit.jsonl")
        opener = ("import os, sys\n"
                  "for p in ('/proc/self/fd/0', '/proc/%d/environ' % os.getppid()):\n"
                  "    try: os.close(os.open(p, os.O_WRONLY))\n"
                  "    except OSError as e: print(p, e.errno)\n")
        script = os.path.join(self.base, "opener.py")
        with open(script, "w") as f:
            f.write(opener)
        os.chmod(self.base, 0o755)
        os.chmod(script, 0o644)
        rc, out, err = self.run_jail(f"/usr/bin/python3 {script} < {ro}; true", "--audit-log", log)
        self.assertEqual(rc, 0, err)
        self.assertIn("/proc/self/fd/0 13\n", out)
        with open(ro) as f:
            self.assertEqual(f.read(), "keep\n")
        writes = {w["path"]: w for w in self.audit_writes(log)}
        fd0 = writes["/proc/self/fd/0"]
        self.assertEqual((fd0["write_rule"], fd0["reason"], fd0["error"], fd0["program"]),
                         ("magic-links", "always-read-only", "EACCES", "python3"))
        never = err.split("never allowed: --allow-write does not lift these:\n", 1)[1]
        self.assertIn("/proc/self/fd/0  x1  write rule magic-links  (open by python3)", never)
        self.assertIn("magic-links: the supervisor opens what the caller names with its own rights", never)
        # The parent (sh) is another process: refused in either jail, by the same rule where cordon decides it.
        other = [p for p in writes if p.startswith("/proc/") and p.endswith("/environ")]
        self.assertEqual(len(other), 1, writes)
        self.assertEqual(writes[other[0]]["write_rule"], "magic-links")

    def test_suggest_from_a_real_run_makes_it_pass(self):
        cache = os.path.join(self.outside, "cache")
        os.makedirs(cache)
        log = os.path.join(self.base, "first.jsonl")
        script = (f"echo data > {cache}/a.txt; echo again >> {cache}/a.txt; mkdir {cache}/sub; "
                  f"echo more > {cache}/sub/b.txt && echo done")
        rc, out, err = self.run_jail(script, "--audit-log", log)
        self.assertNotEqual(rc, 0)
        self.assertIn("outside the writable areas", err)
        # Neither a.txt nor sub exists: allowWrite makes writable what exists at start, so their directory.
        s = subprocess.run([CORDON, "policy", "suggest", "--from", log], capture_output=True, text=True, timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(json.loads(s.stdout)["sandbox"]["filesystem"]["allowWrite"], ["/" + cache])  # `//abs`
        self.assertIn(f"write {cache}/a.txt: does not exist, suggested as {cache}", s.stderr)
        srt = subprocess.run([CORDON, "policy", "suggest", "--from", log, "--format", "srt"], capture_output=True,
                             text=True, timeout=30)
        self.assertEqual(json.loads(srt.stdout)["filesystem"]["allowWrite"], [cache])
        settings = os.path.join(self.base, "suggested.json")
        with open(settings, "w") as f:
            f.write(s.stdout)
        log = os.path.join(self.base, "second.jsonl")
        rc, out, err = self.run_jail(script, "--audit-log", log, "--settings", settings)
        self.assertEqual((rc, out), (0, "done\n"), err)
        self.assertNotIn("cordon: refused", err)
        self.assertEqual(self.audit_writes(log), [])
        with open(os.path.join(self.outside, "cache/sub/b.txt")) as f:
            self.assertEqual(f.read(), "more\n")
        # srt's shape does the same (plain absolute paths).
        shutil.rmtree(cache)
        os.makedirs(cache)
        with open(settings, "w") as f:
            f.write(srt.stdout)
        rc, out, err = self.run_jail(script, "--settings", settings)
        self.assertEqual((rc, out), (0, "done\n"), err)
        self.assertNotIn("cordon: refused", err)

    def test_a_write_into_the_audit_log_is_listed_under_cordon_files(self):
        # The audit log inside the project (a writable area): only the write rule cordon-files keeps the command
        # from forging or erasing it. Appending and truncating are refused, each listed in the summary under
        # that rule and logged, and the log stays whole.
        log = os.path.join(self.project, "audit.jsonl")
        script = f"(echo x >> {log}) 2>/dev/null && echo appended; (: > {log}) 2>/dev/null && echo truncated; true"
        rc, out, err = self.run_jail(script, "--audit-log", log)
        self.assertEqual((rc, out), (0, ""), err)
        never = err.split("never allowed: --allow-write does not lift these:\n", 1)[1]
        self.assertIn(f"    {log}  x2  write rule cordon-files", never)
        writes = [w for w in self.audit_writes(log) if w["path"] == log]  # every line still parses
        self.assertEqual([(w["write_rule"], w["error"], w["program"]) for w in writes],
                         [("cordon-files", "EACCES", "sh")] * 2, writes)

    def test_suggest_from_a_real_git_run_makes_it_pass(self):
        # A jailed git that makes a repository outside the writable areas and commits in it: refused (git stops at
        # its first refused mkdir); the suggestion given back makes the same run pass with no refusal.
        repo = os.path.join(self.outside, "repo")
        script = f"git init -q {repo} && git -C {repo} commit -q --allow-empty -m first && echo done"
        log = os.path.join(self.base, "first.jsonl")
        rc, out, err = self.run_jail(script, "--audit-log", log)
        self.assertNotEqual(rc, 0, err)
        self.assertIn(f"    {repo}  x1  (mkdir by git)", err)
        s = subprocess.run([CORDON, "policy", "suggest", "--from", log], capture_output=True, text=True, timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(json.loads(s.stdout)["sandbox"]["filesystem"]["allowWrite"], ["/" + self.outside])
        settings = os.path.join(self.base, "suggested.json")
        with open(settings, "w") as f:
            f.write(s.stdout)
        log = os.path.join(self.base, "second.jsonl")
        rc, out, err = self.run_jail(script, "--audit-log", log, "--settings", settings)
        self.assertEqual((rc, out), (0, "done\n"), err)
        self.assertNotIn("cordon: refused", err)
        self.assertEqual(self.audit_writes(log), [])
        self.assertTrue(os.path.isfile(os.path.join(repo, ".git/HEAD")))

    def test_suggest_lists_protected_paths_apart(self):
        self.git("init", "-q")
        log = os.path.join(self.base, "audit.jsonl")
        rc, out, err = self.run_jail(f"echo x > .git/hooks/pre-commit; echo y > {self.outside}/o.txt; true",
                                     "--audit-log", log)
        self.assertEqual(rc, 0, err)
        s = subprocess.run([CORDON, "policy", "suggest", "--from", log], capture_output=True, text=True, timeout=30)
        self.assertEqual(s.returncode, 0, s.stderr)
        self.assertEqual(json.loads(s.stdout)["sandbox"]["filesystem"]["allowWrite"], ["/" + self.outside])
        apart = s.stderr.split("not lifted by the suggestion:\n", 1)[1]
        self.assertIn(f"{self.project}/.git/hooks/pre-commit  x1  never allowed: ", apart)

    def test_hostile_names_cannot_forge_summary_lines_or_send_escapes(self):
        # Review hole: the summary printed the jailed command's paths and program name as they were: a newline
        # forged a summary line ("cordon: refused 0 write(s)"), an escape sequence reached the user's terminal
        # (set its title, cleared it), bytes that are not UTF-8 went out raw. Now each shows as \xNN.
        hostile = ("import ctypes, os, sys\n"
                   "out = sys.argv[1].encode()\n"
                   "names = [b'/a\\ncordon: refused 0 write(s) FORGED\\n', b'/\\x1b]0;pwned\\x07\\x1b[2Jx', b'/\\xff\\xfe',\n"
                   "         b'/\\xc2\\x9bc1', b'/caf\\xc3\\xa9']\n"
                   "for n in names:\n"
                   "    try: os.close(os.open(out + n, os.O_WRONLY | os.O_CREAT, 0o644))\n"
                   "    except OSError: pass\n"
                   "ctypes.CDLL(None).prctl(15, b'\\x1b[31mEVIL\\nX', 0, 0, 0)\n"
                   "try: os.close(os.open(out + b'/z', os.O_WRONLY | os.O_CREAT, 0o644))\n"
                   "except OSError: pass\n")
        script = os.path.join(self.base, "hostile.py")
        with open(script, "w") as f:
            f.write(hostile)
        os.chmod(self.base, 0o755)
        os.chmod(script, 0o644)
        p = subprocess.run([CORDON, "run", "--no-discover", "--jail", self.JAIL, "--", "/usr/bin/python3", script,
                            self.outside], cwd=self.project, env=self.env, capture_output=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        err = p.stderr
        self.assertNotIn(b"\x1b", err)
        self.assertNotIn(b"\x07", err)
        self.assertNotIn(b"\xff", err)
        self.assertNotIn(b"\xc2\x9b", err)
        self.assertNotIn(b"FORGED\n", err)
        self.assertEqual([line for line in err.split(b"\n") if line.startswith(b"cordon: refused ")],
                         [b"cordon: refused 6 write(s):"], err)
        text = err.decode()
        self.assertIn(f"    {self.outside}/a\\x0acordon: refused 0 write(s) FORGED\\x0a  x1  (open by python3)", text)
        self.assertIn(f"    {self.outside}/\\x1b]0;pwned\\x07\\x1b[2Jx  x1", text)
        self.assertIn(f"    {self.outside}/\\xff\\xfe  x1", text)
        self.assertIn(f"    {self.outside}/\\xc2\\x9bc1  x1", text)
        self.assertIn(f"    {self.outside}/caf\u00e9  x1", text)  # UTF-8 shown as it is
        self.assertIn(f"    {self.outside}/z  x1  (open by \\x1b[31mEVIL\\x0aX)", text)

    def test_suggest_never_opens_protected_paths_the_ca_the_audit_log_or_the_root(self):
        # Review hole: suggest took every default-deny line for a path allowWrite should open. Real refusals in
        # the log (cordon's CA key, the audit log itself, a pre-existing git directory outside the project, a
        # new file at / and in the home directory) and lines a log could hold forged (protected names, a .git,
        # `..` spellings) were all suggested: allowWrite `//` (the whole file system), the home directory, the
        # CA's directory, the audit log. None of them may be; the one plain refusal is, and gives back a pass.
        env = dict(self.env)
        subprocess.run([CORDON, "ca", "init"], env=env, check=True, capture_output=True, timeout=60)
        ca = os.path.join(self.home, ".config/cordon/ca")
        self.assertTrue(os.path.exists(os.path.join(ca, "ca.key")))
        bare = os.path.join(self.outside, "repo.git")
        subprocess.run(["git", "init", "-q", "--bare", bare], check=True, capture_output=True, env=self.env)
        cache = os.path.join(self.outside, "cache")
        os.makedirs(cache)
        log = os.path.join(self.base, "audit.jsonl")
        root_file = "/cordon-review28-" + str(os.getpid())
        self.addCleanup(lambda: os.path.exists(root_file) and os.unlink(root_file))
        script = (f"echo x > {ca}/ca.key; echo x > {ca}/new; echo x >> {log}; echo x > {root_file}; "
                  f"echo x > {self.home}/newfile; echo x > {bare}/objects/planted; echo x > {bare}/HEAD; "
                  f"echo data > {cache}/a.txt && echo done")
        rc, out, err = self.run_jail(script, "--audit-log", log)
        self.assertNotEqual(rc, 0)
        forged = [{"event": "write", "decision": "deny", "reason": "default-deny", "write_rule": "path-rules",
                   "path": p} for p in (os.path.join(self.home, ".bashrc"),
                                        os.path.join(self.project, ".git/hooks/pre-commit"),
                                        os.path.join(self.project, "sub/../.git/config"),
                                        os.path.join(self.home, ".ssh/authorized_keys"),
                                        os.path.join(self.outside, "x/.claude/settings.json"),
                                        os.path.join(self.outside, "y/.git"),
                                        ca + "/../ca/ca.pem")]
        with open(log, "a") as f:
            for line in forged:
                f.write(json.dumps(line) + "\n")
        s = subprocess.run([CORDON, "policy", "suggest", "--from", log], capture_output=True, text=True,
                           timeout=30, env=env)
        self.assertEqual(s.returncode, 0, s.stderr)
        allow = json.loads(s.stdout)["sandbox"]["filesystem"]["allowWrite"]
        self.assertEqual(allow, ["/" + cache], s.stderr)
        apart = s.stderr.split("not lifted by the suggestion:\n", 1)[1]
        # (Without namespaces the supervisor refuses the hidden CA itself: listed too.)
        logged = {os.path.normpath(w["path"]) for w in self.audit_writes(log)}
        self.assertIn(log, logged)  # the write into the audit log itself was seen, and is never suggested
        for path in (f"{ca}/ca.key", log, root_file, f"{self.home}/newfile", f"{bare}/objects/planted",
                     f"{bare}/HEAD", f"{self.home}/.bashrc", f"{self.project}/.git/hooks/pre-commit",
                     f"{self.project}/.git/config", f"{self.home}/.ssh/authorized_keys",
                     f"{self.outside}/x/.claude/settings.json", f"{ca}/ca.pem"):
            if path in logged:
                self.assertRegex(apart, re.escape(path) + r"  x\d+  never ", path)
        # The suggestion given back: the plain write passes.
        settings = os.path.join(self.base, "suggested.json")
        with open(settings, "w") as f:
            f.write(s.stdout)
        rc, out, err = self.run_jail(f"echo data > {cache}/a.txt && echo done", "--settings", settings)
        self.assertEqual((rc, out), (0, "done\n"), err)


class WriteRefusalsLandlock(WriteRefusalsCase):
    JAIL = "landlock"


def main():
    global CORDON
    args = sys.argv[1:]
    if "--cordon" not in args:
        print("usage: test_write_refusals.py --cordon BINARY [unittest args]", file=sys.stderr)
        return 2
    i = args.index("--cordon")
    CORDON = os.path.abspath(args[i + 1])
    del args[i:i + 2]
    if os.geteuid() != 0:
        print("test_write_refusals.py needs root (cordon run)", file=sys.stderr)
        return 77
    prog = unittest.main(argv=[sys.argv[0], *args], exit=False, verbosity=2)
    return 0 if prog.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
