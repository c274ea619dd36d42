#!/usr/bin/env python3
"""examples/kubernetes (issue 16): every YAML file parses; the Deployment passes `cordon proxy` only flags that
`cordon proxy --help` lists; ports, probes, mount and grace period agree with those flags; and the proxy started
with the Deployment's exact arguments (addresses moved to 127.0.0.1 port 0, the ConfigMap laid out as the kubelet
does) loads the ConfigMap's policy and answers /readyz.

usage: test_kubernetes.py --cordon BINARY --source SOURCE_DIR"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

try:
    import yaml
except ImportError:  # python3-yaml is Debian's; a python3 of its own (pyenv) may lack it
    if os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3") and os.path.exists("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

ARGS = None


class KubernetesExampleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = os.path.join(ARGS.source, "examples", "kubernetes")
        cls.docs = []
        for path in sorted(glob.glob(os.path.join(cls.dir, "*.yaml"))):
            with open(path) as f:
                cls.docs += [(os.path.basename(path), d) for d in yaml.safe_load_all(f) if d is not None]
        cls.kinds = {d["kind"]: d for _, d in cls.docs}
        deployment = cls.kinds["Deployment"]
        cls.pod = deployment["spec"]["template"]
        (cls.container,) = [c for c in cls.pod["spec"]["containers"] if c["name"] == "cordon"]
        cls.args = [str(a) for a in cls.container["args"]]
        help_text = subprocess.run([ARGS.cordon, "proxy", "--help"], capture_output=True, text=True).stdout
        cls.help_flags = set(re.findall(r"(?m)^\s+(--[a-z][a-z-]*)", help_text))

    def flag(self, name):
        return self.args[self.args.index(name) + 1]

    def test_every_kind_is_there(self):
        for kind in ["Namespace", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "NetworkPolicy"]:
            self.assertIn(kind, self.kinds)
        with open(os.path.join(self.dir, "kustomization.yaml")) as f:
            listed = yaml.safe_load(f)["resources"]
        files = {os.path.basename(p) for p in glob.glob(os.path.join(self.dir, "*.yaml"))} - {"kustomization.yaml"}
        self.assertEqual(set(listed), files)

    def test_every_flag_exists(self):
        self.assertEqual(self.container["command"], ["/usr/bin/cordon"])
        self.assertEqual(self.args[0], "proxy")
        self.assertIn("--watch", self.help_flags)  # the help was read
        flags = [a for a in self.args if a.startswith("-") and a != "-"]
        self.assertTrue(flags)
        for flag in flags:
            self.assertIn(flag, self.help_flags, "%s is not in `cordon proxy --help`" % flag)

    def test_settings_agree_with_flags(self):
        spec = self.pod["spec"]
        self.assertGreater(self.kinds["Deployment"]["spec"]["replicas"], 1)
        metrics_port = int(self.flag("--metrics").rsplit(":", 1)[1])
        listen_port = int(self.flag("--listen").rsplit(":", 1)[1])
        ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        self.assertEqual((ports["proxy"], ports["metrics"]), (listen_port, metrics_port))
        self.assertEqual(self.container["readinessProbe"]["httpGet"]["path"], "/readyz")
        self.assertEqual(self.container["livenessProbe"]["httpGet"]["path"], "/healthz")
        annotations = self.pod["metadata"]["annotations"]
        self.assertEqual((annotations["prometheus.io/scrape"], int(annotations["prometheus.io/port"])),
                         ("true", metrics_port))
        # The drain, the audit flush (5 s) and the preStop pause fit in the grace period.
        pre_stop = int(self.container["lifecycle"]["preStop"]["exec"]["command"][1])
        self.assertLess(pre_stop + float(self.flag("--drain-timeout")) + 5, spec["terminationGracePeriodSeconds"])
        # The ConfigMap is the managed directory, mounted whole (a subPath mount is never updated).
        (mount,) = self.container["volumeMounts"]
        self.assertEqual(mount["mountPath"], self.flag("--managed-dir"))
        self.assertNotIn("subPath", mount)
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        self.assertEqual(volume["configMap"]["name"], self.kinds["ConfigMap"]["metadata"]["name"])
        service = self.kinds["Service"]["spec"]
        self.assertEqual(service["selector"], self.kinds["Deployment"]["spec"]["selector"]["matchLabels"])
        self.assertEqual(self.kinds["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"], service["selector"])

    def test_the_deployments_arguments_run(self):
        tmp = tempfile.mkdtemp(prefix="cordon-k8s-test-")
        proc = None
        try:
            # The kubelet's layout: files -> ..data/files, ..data -> ..<timestamp>/.
            managed = os.path.join(tmp, "managed")
            version = os.path.join(managed, "..2026_12_01_00_00_00.1")
            os.makedirs(version)
            for name, text in self.kinds["ConfigMap"]["data"].items():
                with open(os.path.join(version, name), "w") as f:
                    f.write(text)
                os.symlink(os.path.join("..data", name), os.path.join(managed, name))
            os.symlink(os.path.basename(version), os.path.join(managed, "..data"))
            policy = subprocess.run([ARGS.cordon, "policy", "--no-discover", "--managed-dir", managed],
                                    capture_output=True, text=True)
            self.assertEqual(policy.returncode, 0, policy.stderr)
            allowed = [e["rule"] for e in json.loads(policy.stdout)["network"]["allowedDomains"]]
            self.assertIn("github.com", allowed)

            args = list(self.args)
            args[args.index("--listen") + 1] = "127.0.0.1:0"
            args[args.index("--metrics") + 1] = "127.0.0.1:0"
            args[args.index("--managed-dir") + 1] = managed
            proc = subprocess.Popen([ARGS.cordon, *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    text=True, cwd=tmp)
            port = None
            lines = []
            deadline = time.time() + 10
            while time.time() < deadline and port is None:
                line = proc.stderr.readline()
                lines.append(line)
                m = re.search(r"metrics on [^\s]*:(\d+)", line)
                if m:
                    port = int(m.group(1))
            self.assertIsNotNone(port, "".join(lines))
            with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=5) as r:
                self.assertEqual((r.status, r.read()), (200, b"ready\n"))
        finally:
            if proc:
                proc.terminate()
                proc.wait(10)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--cordon", required=True)
    parser.add_argument("--source", required=True)
    ARGS, rest = parser.parse_known_args()
    unittest.main(argv=[sys.argv[0], *rest])
