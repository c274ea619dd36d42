#!/usr/bin/env python3
"""Attacks on `cordon claude-hook` with the real Claude Code (the pinned version scripts/setup installs; see
claude_code.py), run headless against a mock Messages API. Each case first shows what Claude Code alone does
with the command (it refuses or asks: headless, an ask is a refusal), then that the set-up with the hook does
the same and that the command's effect did not happen. Needs root (the jail). If Claude Code is not installed
the tests fail, loudly."""

import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "proxy"))
import claude_code  # noqa: E402
from proxytest import CORDON  # noqa: E402

DENY_RM = {"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"]}}

# Refused by Claude Code 2.1.332 alone for DENY_RM; each removed the victim with the hook installed.
RM_SPELLINGS = [
    "bash -c -- 'rm -f victim'",
    "bash -o pipefail -c 'rm -f victim'",
    "bash -O extglob -c 'rm -f victim'",
    "rbash -c 'rm -f victim'",
    "x=rm; $x -f victim",
    "export X=rm; $X -f victim",
    "a[0]=1 rm -f victim",
    "flock lockfile -c 'rm -f victim'",
    "unshare -r rm -f victim",
]

# Asked about by Claude Code 2.1.332 alone with no rules; each ran unprompted with the hook (no --auto-allow).
# `sort -uo g f` writes the file g.
PROMPTED = [
    "sort -uo g f",
    "sort --compress-prog=sh f",
    "grep -f/etc/hostname f",
    "git diff /etc/hostname f",
]


def install_hook(session, *flags):
    r = subprocess.run([CORDON, "claude-hook", "--install", *flags], cwd=session.project, env=session.env(),
                       capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"--install failed: {r.stderr}")


class AttackReviewTest(unittest.TestCase):
    def setUp(self):
        claude_code.binary()  # fails loudly when it is not installed
        self.alone = claude_code.Session(trusted=True)
        self.addCleanup(self.alone.close)
        self.hooked = claude_code.Session(trusted=True)
        self.addCleanup(self.hooked.close)

    def prepare(self, session):
        for name, text in (("victim", "keep me\n"), ("f", "x\n")):
            with open(os.path.join(session.project, name), "w") as f:
                f.write(text)
        g = os.path.join(session.project, "g")
        if os.path.exists(g):
            os.unlink(g)

    def test_deny_rule_spellings_claude_code_refuses(self):
        for s in (self.alone, self.hooked):
            s.write_settings(DENY_RM)
        install_hook(self.hooked, "--auto-allow")
        for command in RM_SPELLINGS:
            with self.subTest(command=command):
                self.prepare(self.alone)
                self.assertEqual(self.alone.run(command).kind, "refused", "Claude Code alone")
                self.prepare(self.hooked)
                outcome = self.hooked.run(command)
                self.assertTrue(os.path.exists(os.path.join(self.hooked.project, "victim")),
                                f"the denied command ran with the hook: {outcome}")
                self.assertEqual(outcome.kind, "refused", outcome)

    def test_no_unprompted_run_where_claude_code_asks(self):
        for s in (self.alone, self.hooked):
            subprocess.run(["git", "init", "-q"], cwd=s.project, check=True)
            subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q",
                            "--allow-empty", "-m", "x"], cwd=s.project, check=True)
        install_hook(self.hooked)
        for command in PROMPTED:
            with self.subTest(command=command):
                self.prepare(self.alone)
                self.assertEqual(self.alone.run(command).kind, "refused", "Claude Code alone")
                self.prepare(self.hooked)
                outcome = self.hooked.run(command)
                self.assertEqual(outcome.kind, "refused", outcome)
                self.assertFalse(os.path.exists(os.path.join(self.hooked.project, "g")))

    def test_another_hooks_updated_input_does_not_unjail_an_allowed_command(self):
        """A second PreToolUse hook for Bash that answers with updatedInput (a command rewriter, or any hook
        that echoes the input back) replaces cordon's wrapped command: what cordon allowed to run in its jail
        then runs outside it, unprompted."""
        s = self.hooked
        other = os.path.join(s.root, "other_hook.py")
        with open(other, "w") as f:
            f.write("#!/usr/bin/env python3\nimport json, sys\nd = json.load(sys.stdin)\n"
                    "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PreToolUse',"
                    " 'updatedInput': d['tool_input']}}))\n")
        os.chmod(other, 0o755)
        s.write_settings({"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [
            {"type": "command", "command": other}]}]}}, where=os.path.join(s.home, ".claude"))
        install_hook(s, "--auto-allow")
        outside = os.path.join(s.root, "outside")
        outcome = s.run(f"touch {outside}; echo \"proxy=$HTTPS_PROXY\"")
        self.assertFalse(os.path.exists(outside), f"ran outside cordon's jail: {outcome}")
        # Without the other hook the same command runs in the jail: the write outside is refused there.
        os.unlink(os.path.join(s.home, ".claude", "settings.json"))
        outcome = s.run(f"touch {outside} 2>/dev/null || echo outside-refused")
        self.assertIn("outside-refused", outcome.output)
        self.assertFalse(os.path.exists(outside))

    def test_install_warns_and_the_hook_names_another_bash_hook(self):
        """The same set-up without Claude Code: `--install` warns about the other hook, and the hook's answer
        to an auto-allowed command is `ask`, naming that hook and its file."""
        import json
        s = self.hooked
        other = os.path.join(s.root, "rewrite-hook")
        user_settings = os.path.join(s.home, ".claude", "settings.json")
        s.write_settings({"hooks": {"PreToolUse": [{"matcher": "Edit|Bash", "hooks": [
            {"type": "command", "command": other}]}]}}, where=os.path.join(s.home, ".claude"))
        r = subprocess.run([CORDON, "claude-hook", "--install", "--auto-allow"], cwd=s.project, env=s.env(),
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("another PreToolUse hook for Bash", r.stderr)
        self.assertIn(other, r.stderr)
        hook_input = {"session_id": "s", "tool_name": "Bash", "cwd": s.project, "hook_event_name": "PreToolUse",
                      "tool_input": {"command": "make"}}
        r = subprocess.run([CORDON, "claude-hook", "--auto-allow"], input=json.dumps(hook_input), cwd=s.project,
                           env=s.env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)["hookSpecificOutput"]
        self.assertEqual(answer["permissionDecision"], "ask")
        self.assertIn(other, answer["permissionDecisionReason"])
        self.assertIn(user_settings, answer["permissionDecisionReason"])
        # Without it the same command is allowed.
        os.unlink(user_settings)
        r = subprocess.run([CORDON, "claude-hook", "--auto-allow"], input=json.dumps(hook_input), cwd=s.project,
                           env=s.env(), capture_output=True, text=True, timeout=30)
        self.assertEqual(json.loads(r.stdout)["hookSpecificOutput"]["permissionDecision"], "allow")

    def test_another_bash_hook_is_found_with_no_discover(self):
        """With --no-discover cordon reads only its --settings files, but Claude Code still runs the hooks of
        the user's settings: the other hook is found there too."""
        import json
        s = self.hooked
        other = os.path.join(s.root, "rewrite-hook")
        s.write_settings({"hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": other}]}]}},
                         where=os.path.join(s.home, ".claude"))
        policy = os.path.join(s.root, "policy.json")
        with open(policy, "w") as f:
            json.dump({"permissions": {"allow": ["Bash(make:*)"]}}, f)
        hook_input = {"session_id": "s", "tool_name": "Bash", "cwd": s.project, "hook_event_name": "PreToolUse",
                      "tool_input": {"command": "make"}}
        r = subprocess.run([CORDON, "claude-hook", "--no-discover", "--settings", policy],
                           input=json.dumps(hook_input), cwd=s.project, env=s.env(), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        answer = json.loads(r.stdout)["hookSpecificOutput"]
        self.assertEqual(answer["permissionDecision"], "ask")
        self.assertIn(other, answer["permissionDecisionReason"])

    def test_excluded_command_carries_no_payload_outside_the_jail(self):
        """sandbox.excludedCommands `git` runs unwrapped (outside the jail) when every part of the command is
        git. bash runs `touch` in both commands, the splitter saw only git: `$'` inside double quotes is not
        ANSI-C quoting, an escaped backquote inside backquotes nests a substitution."""
        s = self.hooked
        s.write_settings({"permissions": {"allow": ["Bash"]}, "sandbox": {"excludedCommands": ["git"]}})
        install_hook(s, "--auto-allow")
        outside = os.path.join(s.root, "outside")
        for command in [f"git --version \"$'\"; touch {outside}; echo \"'\"",
                        f"git --version `git --version \\`touch {outside}\\``"]:
            with self.subTest(command=command):
                if os.path.exists(outside):
                    os.unlink(outside)
                outcome = s.run(command)
                self.assertFalse(os.path.exists(outside), f"the payload ran outside the jail: {outcome}")


if __name__ == "__main__":
    unittest.main()
