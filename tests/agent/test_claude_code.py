#!/usr/bin/env python3
"""The hook with the real Claude Code (the pinned version scripts/setup installs; see claude_code.py), run
headless against a mock Messages API: each command is asked for once by the "model", and what Claude Code did
with it (ran it, or refused/asked: headless, an ask is a refusal) is read from the tool_result it sends back.

Every case runs the same command with and without cordon's hook installed (`cordon claude-hook --install`):
whenever Claude Code alone refuses or asks, so does the set-up with the hook; whenever it runs a command
unprompted, so does the set-up with the hook. Needs root (the jail). If Claude Code is not installed the tests
fail, loudly: they never pass by skipping."""

import json
import os
import subprocess
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "proxy"))
import claude_code  # noqa: E402
from proxytest import CORDON  # noqa: E402

# Every spelling of `rm` that Claude Code 2.1.332 itself refuses for a `Bash(rm:*)` deny rule (measured), and
# that ran once the hook's wrapper hid it from that check.
RM_SPELLINGS = [
    "timeout 5 rm -f victim", "env rm -f victim", "command rm -f victim", "/bin/rm -f victim",
    "echo victim | xargs rm -f", "nohup rm -f victim", "bash -c 'rm -f victim'", "rm>/dev/null -f victim",
    "exec rm -f victim", "nice rm -f victim", "nice -n 5 rm -f victim", "sudo rm -f victim",
    "time -p rm -f victim", "time rm -f victim", "X='' rm -f victim", ">/dev/null rm -f victim",
    "sh -c 'rm -f victim'", "FOO=1 rm -f victim", "r'm' -f victim", "\\rm -f victim", "env -i rm -f victim",
    "timeout -s KILL 5 rm -f victim", "bash -lc 'rm -f victim'", "stdbuf -o0 rm -f victim",
    "setsid rm -f victim", "ionice rm -f victim", "env -S 'rm -f victim'", "true && rm -f victim",
    "(rm -f victim)", "echo $(rm -f victim)", "rm -f victim",
]

# Commands Claude Code 2.1.332 runs unprompted with no rules at all (measured), and some it asks about.
READ_ONLY = ["ls", "ls -la", "cat f", "git status --short", "grep -r x .", "ls | wc -l", "head -n 5 f",
             "find . -name f", "wc -l f", "pwd", "echo hi", "git log --oneline -5", "sort f", "ls 2>&1",
             "ls > /dev/null", "cat f | grep x"]
ASKED = ["touch new", "echo hi > g", "cd /tmp", "make", "FOO=1 ls", "cat /etc/hostname", "find . -delete",
         "sort -o g f", "python3 -c 1", "ls -la /etc", "git -C . status", "curl -s http://127.0.0.1:9/"]

SETTINGS = {
    "none": {},
    "deny rm, allow Bash": {"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"]}},
    "ask rm, allow Bash": {"permissions": {"ask": ["Bash(rm:*)"], "allow": ["Bash"]}},
    "allow touch, deny curl and rm -f": {"permissions": {"allow": ["Bash(touch:*)", "Bash(make:*)"],
                                                         "deny": ["Bash(curl:*)", "Bash(rm -f:*)"]}},
}

# Where the hook is stricter than Claude Code on purpose: Claude Code 2.1.332 applies an ask rule neither
# inside a shell's -c script nor to eval's words (it does apply deny rules there, and asks); the hook applies
# the user's ask rule to them.
STRICTER = {("ask rm, allow Bash", c) for c in ("bash -c 'rm -f victim'", "sh -c 'rm -f victim'",
                                                "bash -lc 'rm -f victim'", "env -S 'rm -f victim'")}


def install_hook(session, *flags):
    """`cordon claude-hook --install` in the session's project (its settings.local.json)."""
    r = subprocess.run([CORDON, "claude-hook", "--install", *flags], cwd=session.project,
                       env=dict(session.env()), capture_output=True, text=True, timeout=30)
    if r.returncode != 0:
        raise AssertionError(f"--install failed: {r.stderr}")
    return r


def uninstall_hook(session):
    subprocess.run([CORDON, "claude-hook", "--uninstall"], cwd=session.project, env=dict(session.env()),
                   capture_output=True, text=True, timeout=30, check=True)


class ClaudeCodeTest(unittest.TestCase):
    def setUp(self):
        claude_code.binary()  # fails loudly when it is not installed
        self.session = claude_code.Session(trusted=True)
        self.addCleanup(self.session.close)

    def victim(self):
        path = os.path.join(self.session.project, "victim")
        with open(path, "w") as f:
            f.write("keep me\n")
        return path

    def test_version_is_the_pinned_one(self):
        r = subprocess.run([claude_code.binary(), "--version"], capture_output=True, text=True, timeout=60)
        self.assertIn(claude_code.VERSION, r.stdout)

    def test_deny_rule_spellings_stay_refused_with_the_hook(self):
        s = self.session
        s.write_settings({"permissions": {"deny": ["Bash(rm:*)"], "allow": ["Bash"]}})
        install_hook(s, "--auto-allow")
        for command in RM_SPELLINGS:
            with self.subTest(command=command):
                victim = self.victim()
                outcome = s.run(command)
                self.assertEqual(outcome.kind, "refused", outcome)
                self.assertTrue(os.path.exists(victim), "the denied command ran")

    def test_ask_rule_spellings_stay_asked_with_the_hook(self):
        s = self.session
        s.write_settings({"permissions": {"ask": ["Bash(rm:*)"]}})
        install_hook(s, "--auto-allow")
        for command in RM_SPELLINGS[:12]:
            with self.subTest(command=command):
                victim = self.victim()
                self.assertEqual(s.run(command).kind, "refused")
                self.assertTrue(os.path.exists(victim))

    def test_auto_allow_runs_in_the_jail(self):
        s = self.session
        install_hook(s, "--auto-allow")
        outside = os.path.join(s.root, "outside")
        outcome = s.run(f"touch inside && echo made-inside; touch {outside} 2>/dev/null || echo outside-refused;"
                        " echo \"proxy=$HTTPS_PROXY\"")
        self.assertEqual(outcome.kind, "ran", outcome)
        self.assertIn("made-inside", outcome.output)
        self.assertIn("outside-refused", outcome.output)
        self.assertIn("proxy=http://", outcome.output)
        self.assertTrue(os.path.exists(os.path.join(s.project, "inside")))
        self.assertFalse(os.path.exists(outside))
        # Without the hook Claude Code asks before the same write.
        uninstall_hook(s)
        self.assertEqual(s.run("touch inside2").kind, "refused")

    def test_session_keeps_a_background_server_between_bash_calls(self):
        """claude-hook --session: the server one Bash call starts in the background answers the next call, in
        one cordon session; Claude Code's SessionEnd (at the end of `claude -p`) stops it."""
        s = self.session
        with open(os.path.join(s.project, "marker.txt"), "w") as f:
            f.write("served between calls\n")
        install_hook(s, "--auto-allow", "--session")
        results, final = s.run_sequence([
            "python3 -m http.server 3000 --bind 127.0.0.1 >/dev/null 2>&1 &",
            "curl -sf --retry 30 --retry-delay 1 --retry-connrefused http://127.0.0.1:3000/marker.txt"])
        self.assertEqual(len(results), 2, (results, final))
        self.assertIn("served between calls", results[1], results)
        name = "claude-" + final["session_id"]
        r = subprocess.run([CORDON, "session", "list", "--json"], env=dict(s.env()), capture_output=True,
                           text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn(name, [x["name"] for x in json.loads(r.stdout)], "SessionEnd stopped the session")

    def test_large_command_runs_byte_for_byte(self):
        """96 KB with 6,000 quotes: Claude Code runs it (its own quoting for `bash -c` stays under the kernel's
        128 KiB per argument); quoted once more by a wrapper it would not fit (E2BIG)."""
        import hashlib
        s = self.session
        s.write_settings({"permissions": {"allow": ["Bash"]}})
        chunk = "'" + "a" * 30 + "'"
        command = "printf '%s' " + chunk * 3000 + " | sha256sum"
        expected = hashlib.sha256(("a" * 30 * 3000).encode()).hexdigest()
        alone = s.run(command)
        self.assertEqual(alone.kind, "ran", alone)
        self.assertIn(expected, alone.output)
        install_hook(s, "--auto-allow")
        outcome = s.run(command)
        self.assertEqual(outcome.kind, "ran", outcome)
        self.assertIn(expected, outcome.output)

    def test_untrusted_workspace_project_allow_is_not_honoured(self):
        s = self.session
        s.set_trusted(False)
        s.write_settings({"permissions": {"allow": ["Bash(touch:*)"]}})
        self.assertEqual(s.run("touch a").kind, "refused")
        install_hook(s, "--auto-allow")
        self.assertEqual(s.run("touch b").kind, "refused")
        self.assertFalse(os.path.exists(os.path.join(s.project, "b")))
        # Trusted, both honour it.
        s.set_trusted(True)
        self.assertEqual(s.run("touch c").kind, "ran")
        self.assertTrue(os.path.exists(os.path.join(s.project, "c")))

    def test_read_only_commands_are_not_prompted(self):
        s = self.session
        with open(os.path.join(s.project, "f"), "w") as f:
            f.write("x\n")
        install_hook(s)
        for command in ["git status --short", "ls -la", "cat f | grep x"]:
            with self.subTest(command=command):
                outcome = s.run(command)
                self.assertEqual(outcome.kind, "ran", outcome)

    def test_differential_corpus(self):
        """Every settings x command pair, with and without the hook (no --auto-allow: its purpose is to run
        what Claude Code would ask about): the same outcome."""
        commands = RM_SPELLINGS + READ_ONLY + ASKED
        pairs = [(name, command) for name in SETTINGS for command in commands]
        self.assertGreaterEqual(len(pairs), 200)
        results = {}
        lock = threading.Lock()
        errors = []

        def worker(chunk):
            alone = claude_code.Session(trusted=True)
            hooked = claude_code.Session(trusted=True)
            try:
                for s in (alone, hooked):
                    with open(os.path.join(s.project, "f"), "w") as f:
                        f.write("x\n")
                install_hook(hooked)
                current = None
                for name, command in chunk:
                    if name != current:
                        alone.write_settings(SETTINGS[name])
                        hooked.write_settings(SETTINGS[name])
                        current = name
                    outcomes = []
                    for s in (alone, hooked):
                        with open(os.path.join(s.project, "victim"), "w") as f:
                            f.write("keep\n")
                        outcomes.append(s.run(command))
                    with lock:
                        results[(name, command)] = outcomes
                        if outcomes[0].kind != outcomes[1].kind:
                            print(f"  differs: {name!r} {command!r}: alone {outcomes[0].kind}, with the hook "
                                  f"{outcomes[1].kind}: {outcomes[1].output[:160]!r}", file=sys.stderr, flush=True)
                        if len(results) % 20 == 0:
                            print(f"  {len(results)} pairs done", file=sys.stderr, flush=True)
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)
            finally:
                alone.close()
                hooked.close()

        workers = 4
        chunks = [pairs[k::workers] for k in range(workers)]
        for chunk in chunks:
            chunk.sort(key=lambda p: p[0])
        threads = [threading.Thread(target=worker, args=(chunk,)) for chunk in chunks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        mismatches = [(name, command, alone.kind, hooked.kind, hooked.output[:160])
                      for (name, command), (alone, hooked) in sorted(results.items())
                      if alone.kind != hooked.kind]
        stricter = [m for m in mismatches if (m[0], m[1]) in STRICTER and m[2] == "ran"]
        print(f"differential corpus: {len(results)} pairs, {len(mismatches)} differ, {len(stricter)} of them "
              "where the hook applies an ask rule Claude Code skips", file=sys.stderr)
        for m in mismatches:
            print("  ", m, file=sys.stderr)
        # Refused alone but run with the hook: a rule weakened. Run alone but asked with the hook: a prompt
        # more. Both are failures, but for the ask rules Claude Code itself skips.
        self.maxDiff = None
        self.assertEqual([m for m in mismatches if m not in stricter], [])
        self.assertEqual(len(results), len(pairs))


if __name__ == "__main__":
    unittest.main()
