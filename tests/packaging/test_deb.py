#!/usr/bin/env python3
"""The Debian package (issue 16): `cpack -G DEB` builds cordon_<version>_amd64.deb; it installs with dpkg into a
fresh Debian 12 root made by mmdebstrap (essential packages plus the .deb's own dependencies and systemd, from
the Debian mirrors this machine's apt uses: the only test that uses the network, and only those mirrors);
`cordon --version` runs from /usr/bin; the system user exists; `systemd-analyze verify` passes on
cordon-proxy.service (and fails on a broken copy, so the check can fail); /etc/cordon/egress.json is a conffile
an upgrade keeps; the AppArmor profile (/etc/apparmor.d/cordon, a conffile) grants /usr/bin/cordon `userns`
(the root's kernel mediates no user namespaces, so postinst leaves it unloaded and succeeds); man pages and bash
completion are in place.

usage: test_deb.py --build BUILD_DIR --version VERSION"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

ARGS = None
# The Debian 12 mirrors (and apt proxy) this machine's apt uses: the new root is made from the same ones.
DEBIAN_SOURCES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fresh", "debian-sources")
# Debian archives this machine already downloaded are hard-linked into the new root's apt cache (when on the
# same file system), so only the missing ones come from the mirror.
HOST_CACHE = "/var/cache/apt/archives"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


class DebTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root (mmdebstrap, chroot)")
        cls.tmp = tempfile.mkdtemp(prefix="cordon-deb-test-")
        try:
            cls._build_and_install()
        except BaseException:
            shutil.rmtree(cls.tmp, ignore_errors=True)
            raise

    @classmethod
    def _build_and_install(cls):
        out = os.path.join(cls.tmp, "out")
        r = run(["cpack", "-G", "DEB", "--config", os.path.join(ARGS.build, "CPackConfig.cmake"), "-B", out])
        assert r.returncode == 0, r.stdout + r.stderr
        cls.deb = os.path.join(out, "cordon_%s_amd64.deb" % ARGS.version)
        assert os.path.exists(cls.deb), "no %s: %s" % (cls.deb, os.listdir(out))
        depends = run(["dpkg-deb", "-f", cls.deb, "Depends"]).stdout.strip()
        cls.depends = depends
        # "libc6 (>= 2.36), adduser | passwd" -> the first of each alternative, without versions.
        names = [re.split(r"[\s(|]", d.strip())[0] for d in depends.split(",") if d.strip()]
        cls.root = os.path.join(cls.tmp, "root")
        hook = ('mkdir -p "$1"%s && for f in %s/*.deb; do ln "$f" "$1"%s/ 2>/dev/null || true; done'
                % (HOST_CACHE, HOST_CACHE, HOST_CACHE))
        sources = run([DEBIAN_SOURCES])
        assert sources.returncode == 0, sources.stderr
        aptopts = ["--aptopt=" + line for line in run([DEBIAN_SOURCES, "--aptopts"]).stdout.splitlines()]
        r = run(["mmdebstrap", "--variant=essential", "--quiet", "--include=" + ",".join(names + ["systemd"]),
                 "--setup-hook=" + hook, *aptopts, "bookworm", cls.root, "-"], input=sources.stdout, timeout=600)
        assert r.returncode == 0, "mmdebstrap: " + r.stdout + r.stderr
        shutil.copy(cls.deb, os.path.join(cls.root, "tmp"))
        r = cls.chroot("dpkg", "-i", "/tmp/" + os.path.basename(cls.deb))
        assert r.returncode == 0, "dpkg -i: " + r.stdout + r.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def chroot(cls, *cmd):
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        return run(["chroot", cls.root, *cmd], env=env)

    def test_dependencies_come_from_dpkg_shlibdeps(self):
        self.assertRegex(self.depends, r"libc6 \(>= [0-9.]+\)")

    def test_version_from_usr_bin(self):
        r = self.chroot("/usr/bin/cordon", "--version")
        self.assertEqual((r.returncode, r.stdout), (0, "cordon %s\n" % ARGS.version), r.stderr)
        r = self.chroot("cordon", "proxy", "--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("--watch", r.stdout)

    def test_system_user(self):
        r = self.chroot("getent", "passwd", "cordon")
        self.assertEqual(r.returncode, 0, "postinst made no user 'cordon'")
        self.assertIn("/nonexistent", r.stdout)

    def test_unit_verifies(self):
        unit = "/usr/lib/systemd/system/cordon-proxy.service"
        # --man=no: the root has no man; the pages are checked below.
        r = self.chroot("systemd-analyze", "verify", "--man=no", unit)
        self.assertEqual((r.returncode, r.stdout + r.stderr), (0, ""))
        with open(self.root + unit) as f:
            text = f.read()
        for line in ["ExecStart=/usr/bin/cordon proxy ", "--settings /etc/cordon/egress.json", "User=cordon",
                     "ProtectSystem=strict", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n",
                     "LimitNOFILE=1048576", "ExecReload=/bin/sh -c 'kill -HUP $MAINPID'"]:
            self.assertIn(line, text)
        # Its sandboxing: systemd's exposure score at most 2.0 ("OK"; 1.4 when written).
        r = self.chroot("systemd-analyze", "security", "--offline=true", "--threshold=20", unit)
        self.assertEqual(r.returncode, 0, r.stdout[-2000:] + r.stderr)
        # The check can fail: a unit whose binary is missing does not verify.
        with open(self.root + "/tmp/broken.service", "w") as f:
            f.write(text.replace("/usr/bin/cordon", "/usr/bin/no-such-cordon"))
        r = self.chroot("systemd-analyze", "verify", "--man=no", "/tmp/broken.service")
        self.assertNotEqual(r.returncode, 0)

    def test_conffile_kept_on_upgrade(self):
        r = self.chroot("dpkg-query", "-W", "-f=${Conffiles}", "cordon")
        self.assertIn("/etc/cordon/egress.json", r.stdout)
        egress = self.root + "/etc/cordon/egress.json"
        with open(egress, "w") as f:
            f.write('{"network": {"allowedDomains": ["example.org"]}}\n')
        r = self.chroot("dpkg", "-i", "--force-confold", "/tmp/" + os.path.basename(self.deb))
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(egress) as f:
            self.assertIn("example.org", f.read())
        r = self.chroot("cordon", "policy", "--no-discover", "--settings", "/etc/cordon/egress.json")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_apparmor_profile(self):
        r = run(["dpkg-deb", "-c", self.deb])
        self.assertIn("./etc/apparmor.d/cordon", r.stdout)
        with open(self.root + "/etc/apparmor.d/cordon") as f:
            text = f.read()
        self.assertIn("profile cordon /usr/bin/cordon flags=(unconfined) {", text)
        self.assertIn("\n  userns,\n", text)
        r = self.chroot("dpkg-query", "-W", "-f=${Conffiles}", "cordon")
        self.assertIn("/etc/apparmor.d/cordon", r.stdout)

    def test_man_pages_and_completion(self):
        for page in ["cordon", "cordon-run", "cordon-proxy", "cordon-check", "cordon-policy", "cordon-connect",
                     "cordon-ca", "cordon-doctor"]:
            path = self.root + "/usr/share/man/man1/%s.1.gz" % page
            self.assertTrue(os.path.exists(path), path)
        r = run(["sh", "-c", "zcat %s/usr/share/man/man1/cordon-proxy.1.gz" % self.root])
        self.assertIn("drain", r.stdout)  # generated from `cordon proxy --help`
        self.assertIn("watch", r.stdout)
        self.assertTrue(os.path.exists(self.root + "/usr/share/bash-completion/completions/cordon"))
        self.assertTrue(os.path.exists(self.root + "/usr/share/doc/cordon/examples/settings.json"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", required=True)
    parser.add_argument("--version", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
