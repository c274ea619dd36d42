#!/usr/bin/env python3
"""cordon's AppArmor profile (packaging/apparmor/cordon.in) as `cmake --install` writes it: in /etc/apparmor.d for
a system prefix (PREFIX/etc/apparmor.d otherwise), naming the installed binary, granting `userns`; and
apparmor_parser parses and compiles it without loading anything into the kernel (-Q: --skip-kernel-load).

Debian 12's apparmor_parser (3.0) predates the `userns` rule and abi 4.0 (AppArmor 4.0, Ubuntu 23.10's parser
has them): with it the profile is compiled with those two lines left out, and their presence is checked in the
text; a parser that knows `userns` compiles the profile as installed. A broken copy must fail either way.

usage: test_apparmor.py --build BUILD_DIR"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None
PARSER = shutil.which("apparmor_parser") or "/usr/sbin/apparmor_parser"


def compile_profile(path):
    """apparmor_parser's verdict on `path`: parse and compile only (no kernel, no cache), includes from
    /etc/apparmor.d (tunables/global is the apparmor package's)."""
    return subprocess.run([PARSER, "--skip-kernel-load", "--skip-cache", "--skip-read-cache", "--quiet",
                           "--base", "/etc/apparmor.d", path], capture_output=True, text=True)


def parser_knows_userns(tmp):
    probe = os.path.join(tmp, "userns-probe")
    with open(probe, "w") as f:
        f.write("abi <abi/4.0>,\nprofile userns-probe /nonexistent flags=(unconfined) {\n  userns,\n}\n")
    return compile_profile(probe).returncode == 0


class AppArmorProfileTest(unittest.TestCase):
    def setUp(self):
        if not os.path.exists(PARSER):
            self.skipTest("apparmor_parser is not installed (scripts/setup --test installs apparmor)")
        self.dest = tempfile.mkdtemp(prefix="cordon-apparmor-test-")
        self.addCleanup(shutil.rmtree, self.dest, ignore_errors=True)

    def install(self, prefix):
        r = subprocess.run(["cmake", "--install", ARGS.build, "--prefix", prefix], capture_output=True, text=True,
                           env=dict(os.environ, DESTDIR=self.dest))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def check_compiles(self, path):
        if parser_knows_userns(self.dest):
            r = compile_profile(path)
            self.assertEqual(r.returncode, 0, r.stderr)
            return
        with open(path) as f:
            lines = f.read().splitlines(keepends=True)
        kept = [line for line in lines if line.strip() not in ("userns,", "abi <abi/4.0>,")]
        self.assertEqual(len(lines) - len(kept), 2, "the profile has `abi <abi/4.0>,` and `userns,`")
        older = path + ".abi3"
        with open(older, "w") as f:
            f.writelines(kept)
        r = compile_profile(older)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The check can fail: a profile with an unbalanced brace does not compile.
        with open(older, "w") as f:
            f.writelines(kept[:-1])
        self.assertNotEqual(compile_profile(older).returncode, 0)

    def test_system_prefix_installs_into_etc_apparmor_d(self):
        for prefix in ("/usr", "/usr/local"):
            self.install(prefix)
            path = os.path.join(self.dest, "etc/apparmor.d/cordon")
            with open(path) as f:
                text = f.read()
            self.assertIn("profile cordon %s/bin/cordon flags=(unconfined) {" % prefix, text)
            self.assertIn("\n  userns,\n", text)
            self.assertIn("include if exists <local/cordon>", text)
            self.check_compiles(path)
            os.remove(path)

    def test_other_prefix_keeps_it_below_the_prefix(self):
        self.install("/opt/cordon")
        self.assertFalse(os.path.exists(os.path.join(self.dest, "etc/apparmor.d/cordon")))
        path = os.path.join(self.dest, "opt/cordon/etc/apparmor.d/cordon")
        with open(path) as f:
            self.assertIn("profile cordon /opt/cordon/bin/cordon ", f.read())
        self.check_compiles(path)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
