#!/usr/bin/env python3
"""cordon's Seatbelt profile (`cordon policy --format sbpl`) against srt's own macOS profile builder
(@anthropic-ai/sandbox-runtime, pinned, run under node on Linux by srt_profiles.mjs) for a corpus of settings:
every srt filesystem and network key, globs, symlinks, managed-only, protected names.

Both profiles are read as S-expressions, normalised (sbpl.py) and evaluated for the same questions: may the
command read, write, create, remove or rename each of a set of paths (the corpus's own paths, the protected
names at several depths and spellings, system paths), connect to the proxy's port, another loopback port, a
listed and an unlisted Unix socket. Every answer that differs must belong to one of the differences listed in
seatbelt/README.md (the KNOWN table below names each by its README heading); any other fails the test. Every
profile cordon makes must also be read by guile (Debian's guile-3.0) without error.

Hermetic: a temporary tree of files and symlinks; srt's proxies listen on 127.0.0.1 only, and nothing runs
under sandbox-exec (this is Linux)."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sbpl  # noqa: E402

CORDON = os.environ.get("CORDON_BIN", "cordon")
SRT_VERSION = "0.0.83"
SRT_PKG = os.environ.get(
    "CORDON_SRT_PKG",
    "/var/cache/cordon-test/sandbox-runtime-%s/node_modules/@anthropic-ai/sandbox-runtime" % SRT_VERSION)
HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "seatbelt", "README.md")

# cordon's protected names (policy/policy.cpp), srt's (sandbox-utils.ts DANGEROUS_FILES and directories).
CORDON_NAMES = [".claude/settings.json", ".claude/settings.local.json", ".claude/commands", ".claude/agents",
                ".claude/skills", ".claude/hooks", ".claude/workflows", ".claude/scheduled_tasks.json",
                ".credentials.json", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile", ".gitconfig",
                ".gitmodules", ".mcp.json", ".ripgreprc", ".git/hooks", ".git/config", ".vscode", ".idea",
                ".git/commondir", ".git/config.worktree", ".git/modules"]
HOME_NAMES = [".ssh", ".zshenv", ".zlogin", ".bash_login", ".bash_logout", ".config/git", ".config/systemd",
              ".config/autostart", ".local/bin", "bin", ".claude", ".claude.json"]

FILE_OPS = ["file-read-data", "file-write-data", "file-write-create", "file-write-unlink"]
WRITE_OPS = FILE_OPS[1:]


def contains_name(path, names, case_fold=True):
    """Whether a run of `path`'s components is one of `names`, or (prefix=True) a proper prefix of one."""
    parts = path.strip("/").split("/")
    f = (lambda s: s.lower()) if case_fold else (lambda s: s)
    for name in names:
        n = [f(x) for x in name.split("/")]
        for i in range(len(parts) - len(n) + 1):
            if [f(x) for x in parts[i:i + len(n)]] == n:
                return True
    return False


def ends_in_prefix(path, names):
    parts = path.strip("/").split("/")
    for name in names:
        n = name.split("/")
        for k in range(1, len(n)):
            if [x.lower() for x in parts[-k:]] == [x.lower() for x in n[:k]]:
                return True
    return False


class Fixture:
    def __init__(self):
        self.root = os.path.realpath(tempfile.mkdtemp(prefix="cordon-sbpl-"))
        r = self.root
        self.home = r + "/home"
        self.cwd = self.home + "/proj"
        self.tmp = r + "/tmpdir"
        self.settings = r + "/settings"
        self.managed = r + "/managed"
        self.empty_managed = r + "/no-managed"
        for d in [self.cwd + "/src", self.cwd + "/secrets", self.cwd + "/sub/.git/hooks", self.cwd + "/.git/hooks",
                  self.cwd + "/.claude", self.home + "/.ssh", self.home + "/.aws", self.home + "/docs",
                  self.home + "/real", self.home + "/cache/a", r + "/outside", self.tmp, self.settings,
                  self.managed, self.empty_managed, r + "/sock"]:
            os.makedirs(d, exist_ok=True)
        for f in ["src/a.c", ".env", "sub/.env", "secrets/key", "secrets/b.key", ".git/config", "sub/.git/config"]:
            open(os.path.join(self.cwd, f), "w").close()
        for f in [".ssh/id_rsa", ".aws/credentials", "docs/x", "real/secret", ".bashrc"]:
            open(os.path.join(self.home, f), "w").close()
        open(r + "/outside/data", "w").close()
        os.symlink(self.home + "/real", self.home + "/link")      # a symlinked directory
        os.symlink(r + "/outside", self.cwd + "/linkout")          # a symlink in the project to outside

    def close(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def probes(self, extra):
        h, p, r = self.home, self.cwd, self.root
        paths = [p, p + "/src/a.c", p + "/new.txt", p + "/.env", p + "/sub/.env", p + "/secrets", p + "/secrets/key",
                 p + "/secrets/b.key", p + "/x.lock", p + "/sub/y.lock",
                 p + "/.git", p + "/.git/hooks", p + "/.git/hooks/pre-commit", p + "/.git/config", p + "/.git/HEAD",
                 p + "/sub/.git", p + "/sub/.git/hooks/x", p + "/sub/.git/config", p + "/deep/er/.bashrc",
                 p + "/.bashrc", p + "/sub/.zshrc", p + "/.claude", p + "/.claude/settings.json",
                 p + "/.claude/commands/x.md", p + "/sub/.claude/agents/a.md", p + "/.claude/skills/s.md",
                 p + "/.vscode/settings.json", p + "/sub/.idea/x", p + "/.mcp.json", p + "/.GIT/hooks/x",
                 p + "/.Bashrc", p + "/linkout/data", h, h + "/.ssh", h + "/.ssh/id_rsa", h + "/.aws/credentials",
                 h + "/docs/x", h + "/real/secret", h + "/link/secret", h + "/.bashrc", h + "/.config/git/config",
                 h + "/.local/bin/x", h + "/.npm/_logs/x", h + "/.claude/debug/x", h + "/cache/a/f", h + "/cache/b",
                 r + "/outside/data", self.tmp + "/x", r, "/etc/passwd", "/usr/bin/env", "/dev/null", "/dev/tty",
                 "/tmp/claude/x", "/private/tmp/claude/x", self.settings + "/s.json"]
        for e in extra:
            paths += [e, e + "/x"]
        seen, out = set(), []
        for q in paths:
            for s in {q, os.path.realpath(q)}:
                if s not in seen:
                    seen.add(s)
                    out.append(s)
        return out


def corpus(fx):
    """(name, srt filesystem+network config, extra cordon settings) — at least 50."""
    h, p, r = fx.home, fx.cwd, fx.root
    fs = lambda **k: k  # noqa: E731
    cases = [
        ("empty", fs(), {}),
        ("deny-read-home-dir", fs(denyRead=["~/.ssh"]), {}),
        ("deny-read-file", fs(denyRead=["~/.aws/credentials"]), {}),
        ("deny-read-absolute", fs(denyRead=[h + "/docs"]), {}),
        ("deny-read-relative", fs(denyRead=["secrets"]), {}),
        ("deny-read-dot-relative", fs(denyRead=["./secrets/key"]), {}),
        ("deny-read-home-allow-project", fs(denyRead=["~"], allowRead=["."]), {}),
        ("deny-read-home-allow-two", fs(denyRead=["~"], allowRead=[".", "~/docs"]), {}),
        ("deny-read-nested-deny-in-allow", fs(denyRead=["~", p + "/secrets"], allowRead=["."]), {}),
        ("deny-read-root", fs(denyRead=["/"], allowRead=["/usr", "/etc", p]), {}),
        ("deny-read-glob-env", fs(denyRead=["**/.env"]), {}),
        ("deny-read-glob-key", fs(denyRead=[p + "/**/*.key"]), {}),
        ("deny-read-glob-star", fs(denyRead=[p + "/secrets/*"]), {}),
        ("deny-read-glob-question", fs(denyRead=[p + "/secrets/ke?"]), {}),
        ("deny-read-glob-class", fs(denyRead=[p + "/secrets/[bk]*"]), {}),
        ("deny-read-trailing-globstar", fs(denyRead=["~/.ssh/**"]), {}),
        ("deny-read-glob-allow-carve", fs(denyRead=[h + "/*"], allowRead=[p]), {}),
        ("deny-read-symlink-dir", fs(denyRead=["~/link"]), {}),
        ("deny-read-through-symlink", fs(denyRead=["~/link/secret"]), {}),
        ("deny-read-symlink-in-project", fs(denyRead=["linkout"]), {}),
        ("deny-read-missing", fs(denyRead=["~/.kube"]), {}),
        ("allow-read-alone", fs(allowRead=["~/docs"]), {}),
        ("allow-write-dir", fs(allowWrite=["~/docs"]), {}),
        ("allow-write-outside", fs(allowWrite=[r + "/outside"]), {}),
        ("allow-write-relative", fs(allowWrite=["src"]), {}),
        ("allow-write-home-relative", fs(allowWrite=["~/cache"]), {}),
        ("allow-write-symlink", fs(allowWrite=["~/link"]), {}),
        ("allow-write-missing", fs(allowWrite=["~/newdir"]), {}),
        ("allow-write-glob", fs(allowWrite=["~/cache/*"]), {}),
        ("allow-write-home", fs(allowWrite=["~"]), {}),
        ("deny-write-file", fs(denyWrite=["src/a.c"]), {}),
        ("deny-write-dir", fs(denyWrite=["secrets"]), {}),
        ("deny-write-glob", fs(denyWrite=["**/*.lock"]), {}),
        ("deny-write-glob-in-root", fs(allowWrite=["~/cache"], denyWrite=["~/cache/*/f"]), {}),
        ("deny-write-absolute", fs(denyWrite=[p + "/sub"]), {}),
        ("deny-write-in-other-root", fs(allowWrite=["~/docs"], denyWrite=["~/docs/x"]), {}),
        ("deny-write-symlink", fs(denyWrite=["linkout"]), {}),
        ("deny-write-outside-roots", fs(denyWrite=[r + "/outside"]), {}),
        ("deny-read-and-write-same", fs(denyRead=["secrets"], denyWrite=["secrets"]), {}),
        ("deny-read-in-write-root", fs(allowWrite=["~/docs"], denyRead=["~/docs"]), {}),
        ("allow-git-config", fs(allowGitConfig=True), {}),
        ("allow-git-config-false", fs(allowGitConfig=False), {}),
        ("home-names-writable-home", fs(allowWrite=["~"], denyRead=["~/.ssh"]), {}),
        ("everything", fs(denyRead=["~", "**/.env"], allowRead=[".", "~/docs"], allowWrite=["~/cache"],
                          denyWrite=["**/*.lock", "src/a.c"]), {}),
        ("net-no-domains", fs(), {"network": {"allowedDomains": []}}),
        ("net-domains", fs(), {"network": {"allowedDomains": ["example.com", "*.example.org"],
                                           "deniedDomains": ["bad.example.com"]}}),
        ("net-unix-socket", fs(), {"network": {"allowUnixSockets": [r + "/sock/agent.sock"]}}),
        ("net-unix-socket-dir", fs(), {"network": {"allowUnixSockets": [r + "/sock"]}}),
        ("net-unix-socket-home", fs(), {"network": {"allowUnixSockets": ["~/.ssh/agent.sock"]}}),
        ("net-all-unix-sockets", fs(), {"network": {"allowAllUnixSockets": True}}),
        ("net-local-binding", fs(), {"network": {"allowLocalBinding": True}}),
        ("net-mach-lookup", fs(), {"network": {"allowMachLookup": ["com.example.service"]}}),
        ("net-strict", fs(), {"network": {"strictAllowlist": True, "allowedDomains": ["example.com"]}}),
        # Managed-only: cordon reads the managed file itself; srt is given what Claude Code's merge hands it.
        ("managed-read-paths-only", fs(denyRead=["~"], allowRead=[p]),
         {"settings": fs(denyRead=["~"], allowRead=["~/docs"]),
          "managed": {"sandbox": {"filesystem": {"allowManagedReadPathsOnly": True, "allowRead": ["/" + p]}}}}),
        ("managed-domains-only", fs(), {"network": {"allowedDomains": ["example.com"]},
                                        "managed": {"sandbox": {"network": {"allowManagedDomainsOnly": True,
                                                                            "allowedDomains": ["example.com"]}}}}),
        ("long-path-deny", fs(denyRead=[p + "/" + "/".join(["d" * 60] * 17)]), {}),
        ("quote-in-path", fs(denyRead=[p + '/we"ird\\name']), {}),
        ("space-in-path", fs(denyRead=[p + "/my secrets"], allowWrite=[h + "/my cache"]), {}),
    ]
    return cases


def srt_config(fx, fsconf, extra):
    """The config srt is given: the case plus cordon's defaults made explicit (the working directory and the
    private temp directory are writable in cordon without being asked; srt writes only where told)."""
    fsc = {"denyRead": [], "allowRead": [], "allowWrite": [], "denyWrite": []}
    fsc.update(json.loads(json.dumps(fsconf)))
    fsc["allowWrite"] = [".", fx.tmp] + fsc["allowWrite"]
    net = {"allowedDomains": [], "deniedDomains": []}
    net.update(extra.get("network", {}))
    return {"network": net, "filesystem": fsc}


def cordon_settings(fsconf, extra):
    s = {"filesystem": dict(extra.get("settings", fsconf)), "network": dict(extra.get("network", {}))}
    s["network"].setdefault("allowedDomains", [])
    return s


class SrtProfiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isdir(SRT_PKG):
            raise AssertionError("srt %s not found at %s: scripts/setup --test installs it" % (SRT_VERSION, SRT_PKG))
        cls.fx = Fixture()
        cls.cases = corpus(cls.fx)
        lines = []
        for name, fsconf, extra in cls.cases:
            lines.append(json.dumps({"name": name, "cwd": cls.fx.cwd, "home": cls.fx.home,
                                     "config": srt_config(cls.fx, fsconf, extra)}))
        env = dict(os.environ, HOME=cls.fx.home)
        out = subprocess.run(["node", os.path.join(HERE, "srt_profiles.mjs"), SRT_PKG], input="\n".join(lines) + "\n",
                             capture_output=True, text=True, timeout=300, env=env, cwd=cls.fx.cwd)
        if out.returncode != 0:
            raise AssertionError("srt's builder failed: " + out.stderr[-2000:])
        cls.srt = {}
        for line in out.stdout.splitlines():
            d = json.loads(line)
            cls.srt[d["name"]] = d
        cls.cordon = {}
        for name, fsconf, extra in cls.cases:
            cls.cordon[name] = cls.cordon_profile(name, fsconf, extra)

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "fx"):
            cls.fx.close()

    @classmethod
    def proxy_port(cls, name):
        m = re.search(r'remote ip "localhost:(\d+)"', cls.srt[name].get("profile", ""))
        return int(m.group(1)) if m else 3128

    @classmethod
    def cordon_profile(cls, name, fsconf, extra):
        fx = cls.fx
        path = os.path.join(fx.settings, name + ".json")
        with open(path, "w") as f:
            json.dump(cordon_settings(fsconf, extra), f)
        managed = fx.empty_managed
        if "managed" in extra:
            managed = os.path.join(fx.root, "managed-" + name)
            os.makedirs(managed, exist_ok=True)
            with open(os.path.join(managed, "managed-settings.json"), "w") as f:
                json.dump(extra["managed"], f)
        cmd = [CORDON, "policy", "--format", "sbpl", "--no-discover", "--managed-dir", managed,
               "--settings", path, "--proxy-port", str(cls.proxy_port(name)), "--temp-dir", fx.tmp]
        env = dict(os.environ, HOME=fx.home)
        r = subprocess.run(cmd, capture_output=True, text=True, cwd=fx.cwd, env=env, timeout=60)
        return {"code": r.returncode, "profile": r.stdout, "stderr": r.stderr}

    def test_corpus_is_large_enough(self):
        self.assertGreaterEqual(len(self.cases), 50)

    def test_srt_made_every_profile(self):
        for name, _, _ in self.cases:
            with self.subTest(case=name):
                self.assertIn("profile", self.srt[name], self.srt[name].get("error"))

    def test_cordon_made_every_profile(self):
        for name, _, _ in self.cases:
            with self.subTest(case=name):
                c = self.cordon[name]
                self.assertEqual(c["code"], 0, c["stderr"])
                self.assertTrue(c["profile"].startswith("(version 1)\n(deny default)"))

    def test_guile_reads_every_cordon_profile(self):
        guile = shutil.which("guile-3.0") or shutil.which("guile")
        self.assertIsNotNone(guile, "guile-3.0 not found: scripts/setup --test installs it")
        files = []
        for name, _, _ in self.cases:
            path = os.path.join(self.fx.root, "profile-" + name + ".sb")
            with open(path, "w") as f:
                f.write(self.cordon[name]["profile"])
            files.append(path)
        # Each file read form by form to its end; the count of forms printed, an error on a bad one.
        script = ("(for-each (lambda (f) (call-with-input-file f (lambda (p) (let loop ((n 0)) "
                  "(let ((x (read p))) (if (eof-object? x) (begin (display n) (newline)) (loop (+ n 1))))))))"
                  " (cdr (command-line)))")
        r = subprocess.run([guile, "--no-auto-compile", "-c", script] + files, capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        counts = [int(x) for x in r.stdout.split()]
        self.assertEqual(len(counts), len(files))
        for name, n in zip([c[0] for c in self.cases], counts):
            self.assertEqual(n, len(sbpl.read(self.cordon[name]["profile"])), name)

    def test_every_string_fits_seatbelt(self):
        for name, _, _ in self.cases:
            for s in re.findall(r'"((?:[^"\\]|\\.)*)"', self.cordon[name]["profile"]):
                self.assertLessEqual(len(s.encode()), 1025, (name, s[:80]))

    def test_same_grants_as_srt(self):
        unexplained = []
        used = set()
        for name, fsconf, extra in self.cases:
            if "profile" not in self.srt[name] or self.cordon[name]["code"] != 0:
                continue
            srt = sbpl.normalise(sbpl.read(self.srt[name]["profile"]))
            cor = sbpl.normalise(sbpl.read(self.cordon[name]["profile"]))
            extra_paths = self.config_paths(fsconf, extra)
            for path in self.fx.probes(extra_paths):
                for op in FILE_OPS:
                    a, b = sbpl.decide(srt, op, ("path", path)), sbpl.decide(cor, op, ("path", path))
                    if a == b:
                        continue
                    read_denied = sbpl.decide(cor, "file-read-data", ("path", path)) == "deny"
                    why = explain(self.fx, name, fsconf, extra, op, path, a, b, read_denied)
                    if why:
                        used.add(why)
                    else:
                        unexplained.append("%s: %s %s: srt %s, cordon %s" % (name, op, path, a, b))
            port = self.proxy_port(name)
            sockets = [self.fx.root + "/sock/agent.sock", self.fx.root + "/sock/other.sock",
                       self.fx.home + "/.ssh/agent.sock", "/var/run/docker.sock"]
            queries = [("ip", "localhost:%d" % port), ("ip", "localhost:%d" % (port + 1)), ("ip", "localhost:5432")]
            queries += [("unix", s) for s in sockets]
            for q in queries:
                a, b = sbpl.decide(srt, "network-outbound", q), sbpl.decide(cor, "network-outbound", q)
                if a == b:
                    continue
                why = explain_network(name, extra, q, a, b)
                if why:
                    used.add(why)
                else:
                    unexplained.append("%s: network-outbound %s: srt %s, cordon %s" % (name, q, a, b))
        self.assertEqual(unexplained, [], "%d differences not listed in seatbelt/README.md" % len(unexplained))
        with open(README) as f:
            readme = f.read()
        for why in sorted(used):
            self.assertIn(why, readme, "a difference the test accepts is not in seatbelt/README.md")

    def config_paths(self, fsconf, extra):
        out = []
        for key in ["denyRead", "allowRead", "allowWrite", "denyWrite"]:
            for e in fsconf.get(key, []):
                if any(c in e for c in "*?["):
                    continue
                e = self.fx.home + e[1:] if e.startswith("~") else e
                out.append(os.path.normpath(os.path.join(self.fx.cwd, e)))
        return out


# The differences seatbelt/README.md lists, each by its heading there, and the answers that show it.
SRT_OWN_WRITES = ["/tmp/claude", "/private/tmp/claude", "/.npm/_logs", "/.claude/debug"]


def under(path, base):
    return path == base or path.startswith(base.rstrip("/") + "/")


def explain(fx, name, fsconf, extra, op, path, srt, cordon, read_denied):
    h = fx.home
    if op not in WRITE_OPS:
        return None
    if srt == "allow" and cordon == "deny":
        if any(under(path, p) or under(path, h + p) for p in SRT_OWN_WRITES):
            return "srt's own write paths"
        if contains_name(path, CORDON_NAMES) or (op != "file-write-data" and ends_in_prefix(path, CORDON_NAMES)):
            return "Protected names at any depth, in every writable root, in either case"
        home_names = [h + "/" + n for n in HOME_NAMES]
        if any(under(path, n) for n in home_names) or (
                op != "file-write-data" and any(n.startswith(path + "/") for n in home_names)):
            return "The home directory's protected names"
        if op == "file-write-unlink" and read_denied and fsconf.get("denyRead"):
            return "Read-denied paths are neither moved nor removed, in writable roots too"
        return None
    # cordon grants a write srt does not.
    for root in fsconf.get("allowWrite", []):
        full = os.path.normpath(os.path.join(fx.cwd, h + root[1:] if root.startswith("~") else root))
        if any(c in root for c in "*?["):
            base = full.split("*")[0].rstrip("/")
            if under(path, base) and path != base:
                return "A glob in allowWrite covers what lies below its matches"
        elif os.path.islink(full) and under(path, os.path.realpath(full)):
            return "A symlinked allowWrite is granted where it leads"
    return None


def explain_network(name, extra, query, srt, cordon):
    net = extra.get("network", {})
    if net.get("allowLocalBinding") and query[0] == "ip" and srt == "allow" and cordon == "deny":
        return "allowLocalBinding: host ports are named"
    return None


if __name__ == "__main__":
    unittest.main(verbosity=2)
