#!/usr/bin/env python3
"""What a jailed command on a Mac could try against cordon's Seatbelt profile (`cordon policy --format sbpl`),
evaluated with sbpl.py: each case is a path the policy forbids, reached by a spelling the profile's author did
not write, and a path the policy allows (so that a profile denying everything fails too).

- Letter case: macOS file systems ignore case by default, so `~/.AWS/credentials` is `~/.aws/credentials`, and
  every deny (denyRead, denyWrite, the audit log, moves of their parents) must match either case.
- Unicode normalisation: APFS treats the composed (NFC) and decomposed (NFD) spellings of a name as one name,
  so a deny written in one form must match the other.
- Globs in allow rules: a bracket set (`[!x]`, or a range across `/`) matches one character of a name and never
  `/`, so an allowWrite glob never grants a path in another directory.

sbpl.py compares paths as strings, the way Seatbelt's filters do; it does not model which spelling the kernel
reports for a path (the one written by the command or the one on disk), so each deny is checked against every
spelling. Hermetic: a temporary tree; nothing runs under sandbox-exec (this is Linux)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbpl  # noqa: E402

CORDON = os.environ.get("CORDON_BIN", "cordon")


class ProfileAttacks(unittest.TestCase):
    def setUp(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="cordon-sbpl-attack-"))
        self.home = self.root + "/home"
        self.cwd = self.home + "/proj"
        self.tmp = self.root + "/tmpdir"
        for d in [self.cwd + "/secrets", self.home + "/.aws", self.home + "/docs", self.home + "/cache", self.tmp,
                  self.root + "/managed", self.root + "/settings"]:
            os.makedirs(d, exist_ok=True)

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def profile(self, filesystem, *flags):
        path = self.root + "/settings/s.json"
        with open(path, "w") as f:
            json.dump({"filesystem": filesystem, "network": {"allowedDomains": []}}, f)
        cmd = [CORDON, "policy", "--format", "sbpl", "--no-discover", "--managed-dir", self.root + "/managed",
               "--settings", path, "--proxy-port", "3128", "--temp-dir", self.tmp] + list(flags)
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=self.cwd, env=dict(os.environ, HOME=self.home),
                           timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        return sbpl.normalise(sbpl.read(r.stdout))

    def assertDecides(self, rules, op, path, expected):
        self.assertEqual(sbpl.decide(rules, op, ("path", path)), expected, "%s %s" % (op, ascii(path)))

    def test_read_deny_matches_either_case(self):
        rules = self.profile({"denyRead": ["~/.aws"]})
        for path in [self.home + "/.aws/credentials", self.home + "/.AWS/credentials", self.home + "/.Aws"]:
            self.assertDecides(rules, "file-read-data", path, "deny")
        # Moved away it would be readable elsewhere: no rename of it in any case.
        self.assertDecides(rules, "file-write-unlink", self.home + "/.AWS", "deny")
        self.assertDecides(rules, "file-read-data", self.home + "/docs/x", "allow")

    def test_write_deny_and_audit_log_match_either_case(self):
        rules = self.profile({"denyWrite": ["secrets", "*.[a-p]em"]}, "--audit-log", self.cwd + "/audit.log")
        for path in [self.cwd + "/secrets/key", self.cwd + "/SECRETS/key", self.cwd + "/Secrets", self.cwd + "/x.PEM",
                     self.cwd + "/audit.log", self.cwd + "/AUDIT.LOG", self.cwd + "/Audit.log"]:
            self.assertDecides(rules, "file-write-data", path, "deny")
            self.assertDecides(rules, "file-write-create", path, "deny")
        self.assertDecides(rules, "file-write-data", self.cwd + "/notes.txt", "allow")

    def test_deny_matches_letters_that_case_fold_to_ascii(self):
        # APFS folds case by Unicode: the long s (U+017F) is `s`, the Kelvin sign (U+212A) is `k`.
        rules = self.profile({"allowWrite": ["~"], "denyRead": ["~/.aws"]})
        for path in [self.home + "/.aw\u017f/credentials", self.home + "/.AW\u017f"]:
            self.assertDecides(rules, "file-read-data", path, "deny")
        for path in [self.home + "/.\u017fsh/authorized_keys", self.cwd + "/.claude/\u017f\u212aills/x.md",
                     self.cwd + "/.git/hoo\u212a\u017f/pre-commit"]:
            self.assertDecides(rules, "file-write-data", path, "deny")
        self.assertDecides(rules, "file-write-data", self.home + "/notes", "allow")

    def test_read_denied_path_in_a_writable_root_is_not_written(self):
        # A planted ~/.aws/config runs its credential_process in the user's next `aws`; the Linux jail's mask
        # is read-only. A longer writable root inside the denied path stays writable, as the jail binds it.
        rules = self.profile({"allowWrite": ["~", "~/.aws/cli/cache"], "denyRead": ["~/.aws"]})
        for path in [self.home + "/.aws/config", self.home + "/.AWS/config", self.home + "/.aws"]:
            self.assertDecides(rules, "file-write-data", path, "deny")
            self.assertDecides(rules, "file-write-create", path, "deny")
        self.assertDecides(rules, "file-write-create", self.home + "/.aws/cli/cache/token", "allow")
        self.assertDecides(rules, "file-write-data", self.home + "/notes", "allow")
        # A read-denied `/` leaves the devices and the terminal writable (the Linux jail has its own /dev).
        rules = self.profile({"denyRead": ["/"], "allowRead": ["/usr", "~"]})
        for path in ["/dev/null", "/dev/tty", "/dev/ttys003"]:
            self.assertDecides(rules, "file-write-data", path, "allow")
        self.assertDecides(rules, "file-write-data", self.cwd + "/x", "allow")
        self.assertDecides(rules, "file-write-data", self.root + "/x", "deny")

    def test_parents_of_a_deny_are_not_moved_in_another_case(self):
        # `mv ~/proj/SECRETS ~/x` would take the denied file out from under its rule.
        rules = self.profile({"allowWrite": ["~"], "denyWrite": ["~/proj/secrets/key"]})
        for path in [self.cwd + "/secrets", self.cwd + "/SECRETS", self.home + "/PROJ/Secrets"]:
            self.assertDecides(rules, "file-write-unlink", path, "deny")
            self.assertDecides(rules, "file-write-create", path, "deny")
        self.assertDecides(rules, "file-write-unlink", self.cwd + "/other", "allow")

    def test_deny_matches_either_unicode_normalisation(self):
        composed = unicodedata.normalize("NFC", "Données")
        decomposed = unicodedata.normalize("NFD", "Données")
        self.assertNotEqual(composed, decomposed)
        for written, other in [(composed, decomposed), (decomposed, composed)]:
            rules = self.profile({"denyRead": ["~/" + written], "denyWrite": [written]})
            for name in [written, other, other.upper()]:
                self.assertDecides(rules, "file-read-data", self.home + "/" + name + "/x", "deny")
                self.assertDecides(rules, "file-write-data", self.cwd + "/" + name + "/x", "deny")
            self.assertDecides(rules, "file-read-data", self.home + "/docs/x", "allow")
            self.assertDecides(rules, "file-write-data", self.cwd + "/Dates/x", "allow")

    def test_allow_write_glob_through_a_planted_link_is_not_followed(self):
        # An earlier command planted `proj/cache -> ~/Library/LaunchAgents` (the working directory is writable);
        # `allowWrite: ["cache/*"]` must not then grant the target, which Seatbelt sees as the written path.
        agents = self.home + "/Library/LaunchAgents"
        os.makedirs(agents)
        os.symlink(agents, self.cwd + "/cache")
        rules = self.profile({"allowWrite": ["cache/*", "~/docs/*"]})
        self.assertDecides(rules, "file-write-create", agents + "/evil.plist", "deny")
        self.assertDecides(rules, "file-write-data", self.home + "/docs/notes", "allow")
        # A link the user made where the command cannot write is followed, as the Linux jail follows it.
        os.symlink(self.home + "/docs", self.root + "/docs-link")
        rules = self.profile({"allowWrite": [self.root + "/docs-link/*"]})
        self.assertDecides(rules, "file-write-data", self.home + "/docs/notes", "allow")

    def test_long_glob_deny_splits_into_regexes_that_still_match(self):
        # Too long for one Seatbelt string, the deny becomes pieces: each must be a regex (never one that
        # starts with a quantifier cut off its set) and together they must still match the path.
        # Names of many lengths, so that some cut falls right after a `[^/]` (where `*` would follow).
        for n in range(60, 140, 3):
            parts = ["d" * n + "*"] * 12
            rules = self.profile({"denyRead": [self.cwd + "/" + "/".join(parts)]})
            deep = self.cwd + "/" + "/".join(["d" * n + "x"] * 12) + "/f"
            for _, _, flt in rules:
                stack = [flt]
                while stack:
                    f = stack.pop()
                    if isinstance(f, list) and f and f[0] == "regex":
                        sbpl.re.compile(f[1])
                    elif isinstance(f, list):
                        stack.extend(f[1:])
            self.assertDecides(rules, "file-read-data", deep, "deny")
            self.assertDecides(rules, "file-read-data", self.cwd + "/ddd/f", "allow")

    def test_allow_write_glob_set_never_matches_a_slash(self):
        rules = self.profile({"allowWrite": ["~/cache/a[!x]b", "~/cache/c[+-0]d"]})
        self.assertDecides(rules, "file-write-data", self.home + "/cache/ayb", "allow")
        self.assertDecides(rules, "file-write-data", self.home + "/cache/c,d/f", "allow")
        # `/` is no character of a name: these are other directories, not granted.
        self.assertDecides(rules, "file-write-data", self.home + "/cache/a/b", "deny")
        self.assertDecides(rules, "file-write-create", self.home + "/cache/a/b/f", "deny")
        self.assertDecides(rules, "file-write-data", self.home + "/cache/c/d", "deny")


if __name__ == "__main__":
    unittest.main()
