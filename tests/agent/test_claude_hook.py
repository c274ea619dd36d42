#!/usr/bin/env python3
"""`cordon claude-hook` end to end: a recorded PreToolUse input goes in, the hook's answer comes out, and the
rewritten command is run the way Claude Code runs it (bash -c) and is seen jailed. Also the installer on real
files. The jail needs root; the rest does not."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "proxy"))
from proxytest import CORDON  # noqa: E402

# What Claude Code sends for a Bash call (recorded; cwd and command are filled in per test).
RECORDED = {
    "session_id": "4f1c2a0e-1d1b-4b7c-9a57-2c1f8d0e6a11",
    "transcript_path": "/root/.claude/projects/x/4f1c2a0e.jsonl",
    "cwd": None,
    "permission_mode": "default",
    "hook_event_name": "PreToolUse",
    "tool_name": "Bash",
    "tool_input": {"command": None, "description": "Run the script", "timeout": 120000},
    "tool_use_id": "toolu_01ABCdef",
}


class HookTest(unittest.TestCase):
    def setUp(self):
        # Not below /tmp: the jail has a private /tmp, so a write there would not show whether it was refused.
        self.dir = tempfile.mkdtemp(prefix="cordon-hook-test-", dir="/var/tmp")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.work = os.path.join(self.dir, "work")
        self.home = os.path.join(self.dir, "home")
        self.managed = os.path.join(self.dir, "managed")
        for d in (self.work, self.home, self.managed, os.path.join(self.work, ".claude")):
            os.makedirs(d, exist_ok=True)
        self.audit = os.path.join(self.dir, "audit.jsonl")
        self.env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home}
        # Claude Code's record that the user trusts the workspace (the project's allow rules and --auto-allow
        # apply only then).
        with open(os.path.join(self.home, ".claude.json"), "w") as f:
            json.dump({"projects": {self.work: {"hasTrustDialogAccepted": True}}}, f)

    def settings(self, obj, name="settings.json"):
        with open(os.path.join(self.work, ".claude", name), "w") as f:
            json.dump(obj, f)

    def hook(self, command, tool="Bash", extra_input=None, raw=None):
        data = dict(RECORDED, cwd=self.work, tool_name=tool)
        data["tool_input"] = dict(RECORDED["tool_input"], command=command, **(extra_input or {}))
        return subprocess.run([CORDON, "claude-hook", "--auto-allow", "--managed-dir", self.managed,
                               "--audit-log", self.audit],
                              input=raw if raw is not None else json.dumps(data), cwd=self.work, env=self.env,
                              capture_output=True, text=True, timeout=30)

    def answer(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["hookSpecificOutput"]

    def audit_lines(self):
        with open(self.audit) as f:
            return [json.loads(line) for line in f]

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_rewritten_command_runs_jailed_with_quoting_intact(self):
        self.settings({"sandbox": {"enabled": True}, "permissions": {"deny": ["Bash(rm -rf:*)"]}})
        outside = os.path.join(self.dir, "outside")
        command = ("printf '%s|' \"it's\" 'a  b' \"$(echo sub)\"; echo\n"
                   "cat <<'EOF'\nhere $HOME `x` 'q'\nEOF\n"
                   "echo \"proxy=$HTTPS_PROXY runtime=$SANDBOX_RUNTIME\"\n"
                   f"touch {outside} 2>/dev/null && echo wrote-outside || echo outside-refused\n"
                   "touch inside && echo wrote-inside")
        h = self.answer(self.hook(command))
        self.assertEqual(h["permissionDecision"], "allow")
        self.assertIn("--auto-allow", h["permissionDecisionReason"])
        updated = h["updatedInput"]
        self.assertEqual(updated["description"], "Run the script")
        self.assertEqual(updated["timeout"], 120000)
        # Claude Code runs the command with bash in the session's directory.
        r = subprocess.run(["bash", "-c", updated["command"]], cwd=self.work, env=self.env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "it's|a  b|sub|")
        self.assertEqual(lines[1], "here $HOME `x` 'q'")
        self.assertRegex(lines[2], r"^proxy=http://(127\.0\.0\.1|\[::1\]|localhost):\d+ runtime=1$")
        self.assertEqual(lines[3], "outside-refused")
        self.assertEqual(lines[4], "wrote-inside")
        self.assertFalse(os.path.exists(outside))
        self.assertTrue(os.path.exists(os.path.join(self.work, "inside")))
        event = [e for e in self.audit_lines() if e["event"] == "command"][-1]
        self.assertEqual(event["decision"], "allow")
        self.assertEqual(event["session_id"], RECORDED["session_id"])
        self.assertEqual(event["command"], command)
        self.assertTrue(event["wrapped"])

    def test_deny_ask_and_other_tools(self):
        self.settings({"sandbox": {"enabled": True, "excludedCommands": ["docker"]},
                       "permissions": {"deny": ["Bash(rm -rf:*)"], "ask": ["Bash(git push:*)"]}})
        h = self.answer(self.hook("ls && echo $(rm -rf /)"))
        self.assertEqual(h["permissionDecision"], "deny")
        self.assertIn("Bash(rm -rf:*)", h["permissionDecisionReason"])
        self.assertNotIn("updatedInput", h)
        h = self.answer(self.hook("git push origin main"))
        self.assertEqual(h["permissionDecision"], "ask")
        self.assertIn("cordon", h["updatedInput"]["command"])
        h = self.answer(self.hook("curl example.com", extra_input={"dangerouslyDisableSandbox": True}))
        self.assertEqual(h["permissionDecision"], "ask")
        self.assertNotIn("updatedInput", h)
        # excluded: no opinion, Claude Code's flow
        r = self.hook("docker ps")
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        r = self.hook(None, tool="Read", extra_input={"file_path": "/etc/hosts"})
        self.assertEqual((r.returncode, r.stdout), (0, ""))
        decisions = [(e["decision"], e["rule"]) for e in self.audit_lines()]
        self.assertEqual(decisions, [("deny", "Bash(rm -rf:*)"), ("ask", "Bash(git push:*)"), ("ask", ""),
                                     ("none", "docker")])

    def test_managed_settings_override(self):
        with open(os.path.join(self.managed, "managed-settings.json"), "w") as f:
            json.dump({"sandbox": {"allowUnsandboxedCommands": False}}, f)
        self.settings({"sandbox": {"enabled": True, "allowUnsandboxedCommands": True}})
        h = self.answer(self.hook("curl example.com", extra_input={"dangerouslyDisableSandbox": True}))
        self.assertEqual(h["permissionDecision"], "deny")
        self.assertIn("allowUnsandboxedCommands", h["permissionDecisionReason"])

    def test_failures_block(self):
        r = self.hook("ls", raw="{not json")
        self.assertEqual(r.returncode, 2)
        self.assertIn("not JSON", r.stderr)
        self.settings({"permissions": {"deny": ["WebFetch(domain:)"]}})
        r = self.hook("ls")
        self.assertEqual(r.returncode, 2)
        self.assertIn("blocked", r.stderr)

    def test_install_uninstall_round_trip(self):
        original = ('{\n    "permissions": {"allow": ["Bash(ls *)"]},\n    "hooks": {\n        "PreToolUse": [\n'
                    '            {"matcher": "Write", "hooks": [{"type": "command", "command": "lint.sh"}]}\n'
                    '        ]\n    }\n}\n')
        path = os.path.join(self.work, ".claude", "settings.local.json")
        with open(path, "w") as f:
            f.write(original)
        run = lambda *a: subprocess.run([CORDON, "claude-hook", *a], cwd=self.work, env=self.env,
                                        capture_output=True, text=True, timeout=30)
        r = run("--install", "--audit-log", "audit.jsonl")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            installed = json.load(f)
        entries = installed["hooks"]["PreToolUse"]
        self.assertEqual(entries[0]["hooks"][0]["command"], "lint.sh")
        command = entries[1]["hooks"][0]["command"]
        self.assertEqual(entries[1]["matcher"], "Bash")
        self.assertTrue(command.startswith(os.path.realpath(CORDON) + " claude-hook"), command)
        self.assertIn("--audit-log=" + os.path.join(self.work, "audit.jsonl"), command)
        self.assertIn("installed", run("--install").stderr + "installed")
        r = run("--uninstall")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            self.assertEqual(f.read(), original)
        # --user: the home directory's settings, created when missing
        r = run("--install", "--user")
        self.assertEqual(r.returncode, 0, r.stderr)
        user = os.path.join(self.home, ".claude", "settings.json")
        with open(user) as f:
            self.assertEqual(len(json.load(f)["hooks"]["PreToolUse"]), 1)
        self.assertEqual(run("--uninstall", "--user").returncode, 0)
        with open(user) as f:
            self.assertEqual(json.load(f), {})
        # a file cordon cannot read as settings is left alone
        with open(path, "w") as f:
            f.write("[1]")
        r = run("--install")
        self.assertEqual(r.returncode, 2)
        with open(path) as f:
            self.assertEqual(f.read(), "[1]")

    def test_install_cannot_be_turned_against_the_user(self):
        """A jailed command can write the project, so it can plant symlinks where the installer writes: the
        old fixed temporary name `settings.local.json.cordon-tmp`, followed, overwrote their target."""
        claude = os.path.join(self.work, ".claude")
        path = os.path.join(claude, "settings.local.json")
        bashrc = os.path.join(self.home, ".bashrc")
        with open(bashrc, "w") as f:
            f.write("# the user's shell start-up\n")
        for name in ("settings.local.json.cordon-tmp", ".settings.local.json.cordon-tmp",
                     "settings.local.json.tmp"):
            os.symlink(bashrc, os.path.join(claude, name))
        run = lambda *a: subprocess.run([CORDON, "claude-hook", *a], cwd=self.work, env=self.env,
                                        capture_output=True, text=True, timeout=30)
        with open(path, "w") as f:
            f.write('{"model": "opus"}\n')
        os.chmod(path, 0o640)
        os.chown(path, 65534, 65534)
        for args in (("--install",), ("--uninstall",), ("--install", "--auto-allow")):
            r = run(*args)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(bashrc) as f:
                self.assertEqual(f.read(), "# the user's shell start-up\n")
            st = os.stat(path)
            self.assertEqual((st.st_mode & 0o7777, st.st_uid, st.st_gid), (0o640, 65534, 65534))
        with open(path) as f:
            self.assertTrue(json.load(f)["hooks"]["PreToolUse"][0]["hooks"][0]["command"].endswith("--auto-allow"))
        # Nothing left behind but the planted links.
        self.assertEqual(sorted(os.listdir(claude)), sorted(["settings.local.json", "settings.local.json.cordon-tmp",
                                                             ".settings.local.json.cordon-tmp",
                                                             "settings.local.json.tmp"]))
        # A settings file that is a symlink is edited at its target; the link stays.
        os.unlink(path)
        target = os.path.join(self.dir, "dotfiles-settings.json")
        with open(target, "w") as f:
            f.write("\ufeff{}\n")  # with a byte order mark
        os.symlink(target, path)
        r = run("--install")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.islink(path))
        with open(target, encoding="utf-8-sig") as f:
            self.assertEqual(len(json.load(f)["hooks"]["PreToolUse"]), 1)
        self.assertEqual(run("--uninstall").returncode, 0)
        with open(target, "rb") as f:
            self.assertEqual(f.read(), "\ufeff{}\n".encode())

    @unittest.skipUnless(os.geteuid() == 0, "needs root to drop what another sandbox would drop")
    def test_inside_another_sandbox_says_so_in_one_line(self):
        # What Claude Code's bubblewrap leaves a command: no capabilities, no_new_privs. The namespace jail
        # cannot be made there: auto falls back to the jail without namespaces (and says so); with
        # --jail namespaces the run stops and says, in one line, that another sandbox is in the way.
        drop = ["setpriv", "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        r = subprocess.run(drop + [CORDON, "run", "--", "true"], cwd=self.work, env=self.env,
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        # ONE line: which jail runs, why (the namespace jail's setup failed there, and how) and what it lacks;
        # the jail child's own failure is not a line of its own above it.
        fallback = [line for line in r.stderr.splitlines() if line.startswith("cordon: ") and "summary" not in line]
        self.assertEqual(len(fallback), 1, r.stderr)
        self.assertTrue(fallback[0].startswith("cordon: running the jail without namespaces ("), r.stderr)
        self.assertIn("could not be set up: ", fallback[0])
        self.assertIn("; it lacks: no PID namespace", fallback[0])
        r = subprocess.run(drop + [CORDON, "run", "--jail", "namespaces", "--", "true"], cwd=self.work,
                           env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 125, r.stderr)
        notices = [line for line in r.stderr.splitlines() if "inside another sandbox" in line]
        self.assertEqual(len(notices), 1, r.stderr)
        self.assertIn("no_new_privs", notices[0])
        self.assertIn("sandbox.enabled false", notices[0])
        # Not said where cordon builds its jail.
        r = subprocess.run([CORDON, "run", "--", "true"], cwd=self.work, env=self.env, capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("another sandbox", r.stderr)
        self.assertNotIn("without namespaces", r.stderr)

    def test_install_advises_when_claude_codes_sandbox_is_on(self):
        self.settings({"sandbox": {"enabled": True}})
        r = subprocess.run([CORDON, "claude-hook", "--install", "--auto-allow"], cwd=self.work, env=self.env,
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("sandbox.enabled is on", r.stderr)
        self.assertIn('"enabled": false', r.stderr)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# What Claude Code sends when its session ends (recorded; cwd and session_id are filled in per test).
RECORDED_SESSION_END = {
    "session_id": None,
    "transcript_path": "/root/.claude/projects/x/4f1c2a0e.jsonl",
    "cwd": None,
    "hook_event_name": "SessionEnd",
    "reason": "prompt_input_exit",
}


class HookSessionTest(HookTest):
    """`claude-hook --session`: one cordon session per Claude Code session_id, started by the first Bash call,
    joined by the next ones, stopped by SessionEnd."""

    def setUp(self):
        super().setUp()
        self.xdg = os.path.join(self.dir, "xdg")
        os.mkdir(self.xdg, 0o700)
        self.env["XDG_RUNTIME_DIR"] = self.xdg
        self.session_id = "5e2d" + os.urandom(6).hex() + "-1d1b-4b7c-9a57-2c1f8d0e6a11"
        self.name = "claude-" + self.session_id
        self.addCleanup(subprocess.run, [CORDON, "session", "stop", self.name], env=self.env, capture_output=True,
                        timeout=30)

    def session_hook(self, command=None, end=False, flags=()):
        if end:
            data = dict(RECORDED_SESSION_END, cwd=self.work, session_id=self.session_id)
        else:
            data = dict(RECORDED, cwd=self.work, session_id=self.session_id)
            data["tool_input"] = dict(RECORDED["tool_input"], command=command)
        return subprocess.run([CORDON, "claude-hook", "--session", *flags, "--auto-allow", "--managed-dir",
                               self.managed, "--audit-log", self.audit], input=json.dumps(data), cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=60)

    def bash_call(self, command, flags=()):
        """What Claude Code does for one Bash call: the hook, then bash -c with the updated command."""
        h = self.answer(self.session_hook(command, flags=flags))
        self.assertEqual(h["permissionDecision"], "allow")
        updated = h["updatedInput"]["command"]
        self.assertIn(f"run --session '{self.name}' --", updated)
        return subprocess.run(["bash", "-c", updated], cwd=self.work, env=self.env, capture_output=True,
                              text=True, timeout=60)

    def sessions(self):
        r = subprocess.run([CORDON, "session", "list", "--json"], env=self.env, capture_output=True, text=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return {s["name"]: s for s in json.loads(r.stdout)}

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_background_job_survives_between_bash_calls(self):
        with open(os.path.join(self.work, "marker.txt"), "w") as f:
            f.write("from the background job\n")
        self.assertNotIn(self.name, self.sessions())
        r = self.bash_call("python3 -m http.server 3000 --bind 127.0.0.1 >/dev/null 2>&1 &")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(self.name, self.sessions(), "the first call started the session")
        r = self.bash_call("curl -sf --retry 30 --retry-delay 1 --retry-connrefused "
                           "http://127.0.0.1:3000/marker.txt")
        self.assertEqual((r.returncode, r.stdout), (0, "from the background job\n"), r.stderr)
        # Still jailed: the policy is the hook's.
        outside = os.path.join(self.dir, "outside")
        r = self.bash_call(f"touch {outside}")
        self.assertNotEqual(r.returncode, 0)
        self.assertFalse(os.path.exists(outside))
        self.assertEqual(self.sessions()[self.name]["commands"], 3)
        # Claude Code's session ends: so does cordon's.
        r = self.session_hook(end=True)
        self.assertEqual((r.returncode, r.stdout), (0, ""), r.stderr)
        self.assertNotIn(self.name, self.sessions())
        self.assertFalse(os.path.exists(os.path.join(self.xdg, "cordon", self.name + ".sock")))
        # An end without a session is nothing to do.
        r = self.session_hook(end=True)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_linger_ends_the_session(self):
        # The hook's entry says --session --linger=2: the session it starts ends 2 s after the last Bash call's
        # command, with no SessionEnd; the next call starts another.
        flags = ["--linger=2"]
        sock = os.path.join(self.xdg, "cordon", self.name + ".sock")
        r = self.bash_call("sleep 3; echo still-here", flags)  # longer than the linger: the command keeps it
        self.assertEqual((r.returncode, r.stdout), (0, "still-here\n"), r.stderr)
        session = self.sessions()[self.name]
        self.assertEqual(session["linger_seconds"], 2, session)
        supervisor = session["pid"]
        # Watched by its socket and pid, not by `session list`: a list request is a client, which the linger
        # counts as use.
        end = time.monotonic() + 10
        while (os.path.exists(sock) or alive(supervisor)) and time.monotonic() < end:
            time.sleep(0.2)
        self.assertNotIn(self.name, self.sessions(), "--linger did not end the hook's session")
        self.assertFalse(os.path.exists(sock))
        self.assertFalse(alive(supervisor), "the session's supervisor is still there")
        r = self.bash_call("echo again", flags)
        self.assertEqual((r.returncode, r.stdout), (0, "again\n"), r.stderr)
        self.assertNotEqual(self.sessions()[self.name]["pid"], supervisor)

    @unittest.skipUnless(os.geteuid() == 0, "cordon run needs root here")
    def test_command_runs_after_its_session_lingered_out(self):
        # Claude Code runs the updated command only once the user answers an "ask": the session the hook
        # started may have lingered out by then. The command starts it again (same flags) and runs in it.
        flags = ["--linger=1"]
        h = self.answer(self.session_hook("echo answered-late; cat /etc/hostname >/dev/null", flags=flags))
        updated = h["updatedInput"]["command"]
        first = self.sessions()[self.name]["pid"]
        sock = os.path.join(self.xdg, "cordon", self.name + ".sock")
        end = time.monotonic() + 10
        while (os.path.exists(sock) or alive(first)) and time.monotonic() < end:
            time.sleep(0.2)
        self.assertFalse(alive(first), "the session did not linger out")
        r = subprocess.run(["bash", "-c", updated], cwd=self.work, env=self.env, capture_output=True, text=True,
                           timeout=60)
        self.assertEqual((r.returncode, r.stdout), (0, "answered-late\n"), r.stderr)
        again = self.sessions()[self.name]
        self.assertNotEqual(again["pid"], first)
        self.assertEqual(again["linger_seconds"], 1, again)
        # Still the hook's policy: the network stays refused in the restarted session.
        r = subprocess.run(["bash", "-c", updated.replace("echo answered-late; cat /etc/hostname >/dev/null",
                                                          "curl -s -o /dev/null -w '%{http_code}' http://example.com/")],
                           cwd=self.work, env=self.env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.stdout, "403", r.stderr)

    def test_install_writes_both_entries(self):
        run = lambda *a: subprocess.run([CORDON, "claude-hook", *a], cwd=self.work, env=self.env,
                                        capture_output=True, text=True, timeout=30)
        path = os.path.join(self.work, ".claude", "settings.local.json")
        r = run("--install", "--session", "--linger", "600")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            hooks = json.load(f)["hooks"]
        pre, end = hooks["PreToolUse"][0], hooks["SessionEnd"][0]
        self.assertEqual(pre["matcher"], "Bash")
        self.assertNotIn("matcher", end)
        for entry in (pre, end):
            self.assertRegex(entry["hooks"][0]["command"], r"cordon claude-hook .*--session --linger=600$")
        r = run("--uninstall")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(path) as f:
            self.assertNotIn("hooks", json.load(f))
        self.assertEqual(run("--linger", "5").returncode, 2)


if __name__ == "__main__":
    unittest.main()
