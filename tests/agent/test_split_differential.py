#!/usr/bin/env python3
"""The splitter against bash, differentially. Commands are generated from shell fragments (quotes, escapes,
comments, substitutions, arithmetic, here-documents, \\r, operators) and mutated from tricky seeds; for each,
split_probe says whether the hook would allow it when only the commands `a`, `b` and `c` are allowed, and bash
runs it (with `eval`, as Claude Code does) where `a`, `b`, `c` are functions that do nothing and `p` is a
payload that records that it ran. A command the hook allows but in which bash ran `p` is a disagreement that
lets something through; there must be none. Refusing (asking) is always allowed.

CORDON_SPLIT_CASES sets the number of cases (the suite runs a fixed sample; the bench run 1,000,000),
CORDON_SPLIT_SEED the seed."""

import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import unittest

PROBE = os.environ.get("CORDON_SPLIT_PROBE") or os.path.join(os.path.dirname(__file__), "..", "..", "build",
                                                             "tests", "agent", "split_probe")
CASES = int(os.environ.get("CORDON_SPLIT_CASES", "4000"))
SEED = int(os.environ.get("CORDON_SPLIT_SEED", "25"))

FRAGMENTS = [
    "a", "b", "c", "p", "a ", "b x", "c 'y'", " p", "x", " ", " ", "  ", "\t", "\n", "\r", ";", "&&", "||", "|",
    "&", "|&", "(", ")", "{ ", " }", "$(", "`", "$((", "))", ") )", "#", " #", "\\ ", "\\;", "\\|", "\\#",
    "\\\\", "\\", "'", "\"", "$'", "\\'", "\\\"", "<<E\n", "<<'E'\n", "<<-E\n", "\nE\n", "E", ">", "<", "2>&1",
    ">x", "<(", ">(", "=", "X=1 ", "${", "}", "$x", "$", "!", "if ", "then ", "fi", "; then p; fi", "do", "\\\n",
    "<<<", "$(p)", "`p`", "$((1+2))", "'$(p)'", "\"$(p)\"", "#$(p)", "echo ", "true ", "exec ", "time ",
    "\\`", "\\\\`", "\"$'\"", "\"`", "`\"", "\\$(p)", "\\\"",
]
# A generated function definition could call itself (a fork bomb); the splitter refuses `name()` anyway.
FUNCTION = re.compile(r"\(\s*\)")
SEEDS = [
    "a \\ #$(p)", "a \\;#$(p)", "a \\|#`p`", "a\r#$(p)", "a $((p) )", "a $((b) ;p)", "a # $(p)",
    "a <<E\n$(p)\nE", "a <<'E'\n$(p)\nE", "a 'x' \"$(p)\"", "a `b` $(c)", "a && b || c | a & b; c",
    "a <<E; b\nx\nE\np", "a $'\\'' ; p", "a \"\\\"\" ; p", "(a) ; { b; }", "a\\\np", "a #\np", "a ${x:-$(p)}",
    "a $((1 + $(p)))", "a <(p)", "a >(p)", "a | p", "X=$(p) a",
    # Quoting that changes meaning with its context: `$'` inside double quotes is literal; inside backquotes
    # an escaped backquote opens a nested substitution, and `\"` is unescaped within double quotes.
    "a \"$'\"; p; a \"'\"", "a `a \\`p\\``", "a \"`a \\`p\\``\"", "a `a \"\\`p\\`\"`", "a `a '\\`p\\`'`",
    "a `a \\\\`p\\\\``", "a \"`a \\\"\\`p\\`\\\"`\"", "a `a \\$(p)`",
]


def generate(rng):
    if rng.random() < 0.5:
        return "".join(rng.choice(FRAGMENTS) for _ in range(rng.randint(1, 8)))
    text = rng.choice(SEEDS)
    for _ in range(rng.randint(1, 3)):
        k = rng.randint(0, len(text))
        op = rng.random()
        if op < 0.5:
            text = text[:k] + rng.choice(FRAGMENTS) + text[k:]
        elif op < 0.8:
            text = text[:k] + text[k + 1:]
        else:
            text = text[:k] + rng.choice(FRAGMENTS) + text[k + 1:]
    return text


def ansi_c(text):
    out = []
    for ch in text.encode():
        c = chr(ch)
        if c.isalnum() or c in " ;&|()<>{}$#=!:`\"-_.,+*/@%^[]~?":
            out.append(c)
        else:
            out.append("\\x%02x" % ch)
    return "$'" + "".join(out) + "'"


def run_script(cases, first, workdir, timeout):
    """Runs cases[k] for k from `first` under one bash (each with eval in a subshell with a CPU limit, stdin
    /dev/null, output discarded); True when all finished in `timeout` seconds. The payload appends the case's
    index to the trace file."""
    trace = os.path.join(workdir, "trace")
    lines = ["a() { :; }", "b() { :; }", "c() { :; }",
             f"p() {{ printf '%s\\n' \"$__cordon_case\" >> {trace}; }}", "cd " + workdir]
    for k, case in enumerate(cases):
        lines.append(f"__cordon_case={first + k}; ( ulimit -t 2; eval {ansi_c(case)} ) </dev/null >/dev/null 2>&1")
    script = os.path.join(workdir, "cases.sh")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    process = subprocess.Popen(["bash", script], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL, cwd=workdir, start_new_session=True)
    try:
        process.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        return False
    finally:
        # Whatever a case left running in the background goes with its session.
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        process.wait()


def run_bash(cases, workdir):
    """The indices of the cases in which the payload p ran. A batch that does not finish (a case that blocks)
    is run again one case at a time; a case that blocks alone counts as not finished, its trace kept."""
    trace = os.path.join(workdir, "trace")
    open(trace, "w").close()
    if not run_script(cases, 0, workdir, 120):
        for k, case in enumerate(cases):
            run_script([case], k, workdir, 5)
    with open(trace) as f:
        return {int(line) for line in f if line.strip().isdigit()}


class SplitDifferentialTest(unittest.TestCase):
    def test_no_payload_runs_in_an_allowed_command(self):
        rng = random.Random(SEED)
        workdir = tempfile.mkdtemp(prefix="cordon-split-")
        allowed_total = ran_total = 0
        disagreements = []
        done = 0
        batch = 2000
        while done < CASES:
            cases = []
            while len(cases) < min(batch, CASES - done):
                case = generate(rng).replace("\0", "")
                if not FUNCTION.search(case):
                    cases.append(case)
            answer = subprocess.run([PROBE], input=b"".join(c.encode() + b"\0" for c in cases),
                                    capture_output=True, timeout=600).stdout.decode()
            self.assertEqual(len(answer), len(cases))
            ran = run_bash(cases, workdir)
            for k, case in enumerate(cases):
                allowed = answer[k] == "A"
                allowed_total += allowed
                ran_total += k in ran
                if allowed and k in ran:
                    disagreements.append(case)
                    print(f"split differential: allowed, yet bash ran the payload: {case!r}", file=sys.stderr,
                          flush=True)
            done += len(cases)
            if CASES > 100000 and done % 50000 < batch:
                print(f"split differential: {done} cases so far, {allowed_total} allowed, payload ran in "
                      f"{ran_total}, {len(disagreements)} disagreements", file=sys.stderr, flush=True)
        subprocess.run(["rm", "-rf", "--", workdir])
        print(f"split differential: {done} cases, {allowed_total} allowed, payload ran in {ran_total}, "
              f"{len(disagreements)} allowed with the payload run", file=sys.stderr)
        self.assertGreater(allowed_total, done // 20)  # the generator reaches allowed commands
        self.assertGreater(ran_total, done // 20)      # and commands that run the payload
        self.assertEqual(disagreements[:20], [])


if __name__ == "__main__":
    unittest.main()
