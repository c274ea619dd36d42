#!/usr/bin/env python3
"""Start-up of `cordon run` in a project holding N nested git repositories (vendored packages each with a .git),
where the supervisor reads every repository's core.hooksPath / include.path when the run starts (jail/README.md,
"Where git's configuration sends git").

    bench/nested_repos.py [--dir DIR] [--repos 0,2000] [--runs 20] CORDON [CORDON ...]

Each binary (an older one to compare with) runs, interleaved round by round, `cordon run --no-discover --quiet --
/bin/true` (writes nothing: never waits for the search) and `-- /bin/sh -c ': > out'` (its first write waits for
the search), in a project on DIR (default /dev/shm: a tmpfs measures cordon, not this VM's disk). Prints the
minimum and the median wall time of each, in ms. Needs git. Removes what it made.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def make_project(base, repos):
    root = tempfile.mkdtemp(prefix="cordon-nested-", dir=base)
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "HOME": root}
    subprocess.run(["git", "init", "-q", root], check=True, env=env)
    for i in range(repos):
        pkg = os.path.join(root, "vendor", f"pkg{i}")
        os.makedirs(os.path.join(pkg, "src"))
        with open(os.path.join(pkg, "package.json"), "w") as f:
            f.write('{"name": "pkg%d"}\n' % i)
        with open(os.path.join(pkg, "src", "index.js"), "w") as f:
            f.write("module.exports = %d;\n" % i)
        subprocess.run(["git", "init", "-q", pkg], check=True, env=env)
    return root


def timed(cmd, cwd):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    t = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{cmd}: exit {p.returncode}: {p.stderr}")
    return t * 1000


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/dev/shm")
    ap.add_argument("--repos", default="0,2000")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("cordon", nargs="+")
    a = ap.parse_args()
    for repos in [int(n) for n in a.repos.split(",")]:
        root = make_project(a.dir, repos)
        try:
            tasks = {"true": ["/bin/true"], "first-write": ["/bin/sh", "-c", ": > out"]}
            times = {(c, t): [] for c in a.cordon for t in tasks}
            for c in a.cordon:  # warm-up
                timed([c, "run", "--no-discover", "--quiet", "--", "/bin/true"], root)
            for _ in range(a.runs):
                for c in a.cordon:
                    for t, argv in tasks.items():
                        times[(c, t)].append(timed([c, "run", "--no-discover", "--quiet", "--", *argv], root))
            for (c, t), v in times.items():
                print(f"repos={repos}\t{t}\t{c}\tmin {min(v):.1f} ms\tmedian {statistics.median(v):.1f} ms")
        finally:
            shutil.rmtree(root)


if __name__ == "__main__":
    main()
