#!/usr/bin/env python3
"""`cmake --install` (issue 16) into a temporary DESTDIR with another prefix: every file in its place, the unit
and its policy path follow the prefix, an administrator's egress.json is never overwritten, the man pages come
from the --help texts, and the bash completion offers the flags `cordon COMMAND --help` lists.

usage: test_install.py --build BUILD_DIR"""

import argparse
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None


class InstallTest(unittest.TestCase):
    def setUp(self):
        self.dest = tempfile.mkdtemp(prefix="cordon-install-test-")
        self.addCleanup(shutil.rmtree, self.dest, ignore_errors=True)

    def install(self, prefix):
        r = subprocess.run(["cmake", "--install", ARGS.build, "--prefix", prefix], capture_output=True, text=True,
                           env=dict(os.environ, DESTDIR=self.dest))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return self.dest + prefix

    def test_files_and_prefix(self):
        root = self.install("/opt/cordon")
        for path in ["bin/cordon", "share/man/man1/cordon.1.gz", "share/man/man1/cordon-proxy.1.gz",
                     "share/man/man1/cordon-run.1.gz", "share/bash-completion/completions/cordon",
                     "share/doc/cordon/examples/settings.json", "lib/sysusers.d/cordon.conf",
                     "lib/systemd/system/cordon-proxy.service", "etc/cordon/egress.json"]:
            self.assertTrue(os.path.exists(os.path.join(root, path)), path)
        with open(os.path.join(root, "lib/systemd/system/cordon-proxy.service")) as f:
            unit = f.read()
        self.assertIn("ExecStart=/opt/cordon/bin/cordon proxy ", unit)
        self.assertIn("--settings /opt/cordon/etc/cordon/egress.json", unit)
        r = subprocess.run([os.path.join(root, "bin/cordon"), "--version"], capture_output=True, text=True)
        self.assertEqual(r.returncode, 0)
        with gzip.open(os.path.join(root, "share/man/man1/cordon-proxy.1.gz"), "rt") as f:
            page = f.read()
        help_text = subprocess.run([os.path.join(root, "bin/cordon"), "proxy", "--help"], capture_output=True,
                                   text=True).stdout
        # Every flag of the help is in the page (help2man escapes '-' as '\-').
        for line in help_text.splitlines():
            word = line.strip().split(" ")[0]
            if word.startswith("--"):
                self.assertIn(word.replace("-", "\\-"), page)

    def test_usr_prefix_uses_etc_and_keeps_the_administrators_policy(self):
        root = self.install("/usr")
        egress = os.path.join(self.dest, "etc/cordon/egress.json")
        with open(os.path.join(root, "lib/systemd/system/cordon-proxy.service")) as f:
            self.assertIn("--settings /etc/cordon/egress.json", f.read())
        with open(egress, "w") as f:
            f.write('{"network": {"allowedDomains": ["mine.example"]}}\n')
        self.install("/usr")
        with open(egress) as f:
            self.assertIn("mine.example", f.read())

    def test_bash_completion(self):
        root = self.install("/usr/local")
        script = ('source %s; COMP_WORDS=(cordon proxy --wa); COMP_CWORD=2; _cordon; echo "${COMPREPLY[@]}"; '
                  'COMP_WORDS=(cordon ru); COMP_CWORD=1; _cordon; echo "${COMPREPLY[@]}"'
                  % os.path.join(root, "share/bash-completion/completions/cordon"))
        env = dict(os.environ, PATH=os.path.join(root, "bin") + ":" + os.environ.get("PATH", ""))
        r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=env)
        self.assertEqual(r.stdout.splitlines(), ["--watch", "run"], r.stderr)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
