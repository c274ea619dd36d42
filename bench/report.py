#!/usr/bin/env python3
"""Turns bench/out/results.tsv (written by bench/run) into the Markdown results table on stdout.

    report.py RESULTS_TSV [--readme README.md]

With --readme it also replaces, in that file, everything between the lines `<!-- results:begin -->` and
`<!-- results:end -->` with the table (its title demoted one level)."""
import math
import re
import sys


def load(path):
    res = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if "\t" in line:
                k, v = line.split("\t", 1)
                res[k] = v
    return res


R = load(sys.argv[1])


def num(key):
    try:
        v = float(R[key])
    except (KeyError, ValueError):
        return None
    return None if math.isnan(v) else v


def fmt(v, pattern):
    return "—" if v is None else pattern.format(v)


HAVE_PROXY = R.get("have_cordon_proxy") == "1"
HAVE_RUN = R.get("have_cordon_run") == "1"
WHY_PROXY = R.get("cordon_why_proxy", "")
WHY_RUN = R.get("cordon_why_run", "")
out = []
targets = []  # (benchmark, target, measured, met: True/False/None)


def target(bench, text, measured, ok):
    targets.append((bench, text, measured, ok))


def verdict(ok):
    return {True: "**met**", False: "**NOT met**", None: "not measured"}[ok]


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


out.append("# cordon benchmark results")
out.append("")
out.append(f"Measured {R.get('date', '?')} by `bench/run`, all peers in the same run, everything on loopback.")
out.append("")
out.append(f"- Machine: {R.get('cpu', '?')}, {R.get('mem', '?')} RAM, {R.get('os', '?')}, kernel {R.get('kernel', '?')}; "
           f"load average at start {R.get('loadavg', '?')}")
out.append(f"- {R.get('v_cordon', '?')}{'; cordon run: ' + R['v_cordon_run'] if 'v_cordon_run' in R else ''}; {R.get('v_tinyproxy', '?')}; {R.get('v_squid', '?')}; "
           f"{R.get('v_srt', '?')}; upstream {R.get('v_nginx', '?')}")
out.append(f"- clients: {R.get('v_curl', '?')}, {R.get('v_wrk', '?')}, {R.get('v_hyperfine', '?')}; "
           f"{R.get('v_bwrap', '?')}; {R.get('v_socat', '?')}")
out.append("")

PROXY_NAMES = {"direct": "direct (no proxy)", "srt": "srt's proxy", "cordon": "cordon proxy"}


def proxy_rows(targets, columns):
    """The targets with their names in the tables; cordon's row says why, when its proxy was not measured."""
    for t in targets:
        if t == "cordon" and not HAVE_PROXY:
            out.append(f"| cordon proxy | not measured: {WHY_PROXY} |" + " |" * (columns - 2))
            continue
        yield t, PROXY_NAMES.get(t, t)


# 1. bulk
if "bulk_direct" in R:
    runs = R.get("runs", "?")
    out.append(f"## 1. CONNECT bulk throughput (1 GiB, `curl --proxytunnel`, {runs} interleaved rounds)")
    out.append("")
    out.append("| target | best MB/s | best vs direct | median MB/s | per-round ratio to direct (median) | all runs (MB/s) |")
    out.append("|---|---:|---:|---:|---:|---|")
    direct_runs = [float(x) for x in R.get("bulk_all_direct", "").split()]
    direct = num("bulk_best_direct")
    for t, name in proxy_rows(["direct", "cordon", "tinyproxy", "squid", "srt"], 6):
        v, med = num(f"bulk_best_{t}"), num(f"bulk_{t}")
        runs_t = [float(x) for x in R.get(f"bulk_all_{t}", "").split()]
        per_round = sorted(a / d for a, d in zip(runs_t, direct_runs) if d > 0 and not math.isnan(a) and not math.isnan(d))
        pr = None if not per_round else (per_round[len(per_round) // 2] if len(per_round) % 2 else
                                         (per_round[len(per_round) // 2 - 1] + per_round[len(per_round) // 2]) / 2)
        allr = " ".join(fmt(float(x) / 1e6 if x != "nan" else None, "{:.0f}") for x in R.get(f"bulk_all_{t}", "").split())
        out.append(f"| {name} | {fmt(v and v / 1e6, '{:.0f}')} | {fmt(ratio(v, direct), '{:.2f}')} | "
                   f"{fmt(med and med / 1e6, '{:.0f}')} | {fmt(pr, '{:.2f}')} | {allr} |")
    out.append("")
    c = num("bulk_best_cordon") if HAVE_PROXY else None
    target("1 bulk", "cordon ≥ 3× srt's proxy", fmt(ratio(c, num("bulk_best_srt")), "{:.1f}×"),
           None if ratio(c, num("bulk_best_srt")) is None else ratio(c, num("bulk_best_srt")) >= 3)
    target("1 bulk", "cordon ≥ tinyproxy", fmt(ratio(c, num("bulk_best_tinyproxy")), "{:.2f}×"),
           None if ratio(c, num("bulk_best_tinyproxy")) is None else ratio(c, num("bulk_best_tinyproxy")) >= 1)
    target("1 bulk", "cordon ≥ 0.8 of direct (goal)", fmt(ratio(c, direct), "{:.2f}"),
           None if ratio(c, direct) is None else ratio(c, direct) >= 0.8)

# 2. rps
if any(k.startswith("rps_rps_") for k in R):
    out.append(f"## 2. Small HTTP requests/s through the proxy (absolute-form, keep-alive; `wrk {R.get('wrk_params', '')}`)")
    out.append("")
    out.append("Best round shown (requests/s counts 2xx responses only); all rounds in the last column.")
    out.append("")
    out.append("| proxy | requests/s (2xx) | p50 latency | p99 latency | socket errors | non-2xx | all rounds (req/s) |")
    out.append("|---|---:|---:|---:|---:|---:|---|")
    for t, name in proxy_rows(["cordon", "tinyproxy", "squid", "srt"], 7):
        p50, p99 = num(f"rps_p50_us_{t}"), num(f"rps_p99_us_{t}")
        out.append(f"| {name} | {fmt(num(f'rps_rps_{t}'), '{:.0f}')} | {fmt(p50 and p50 / 1000, '{:.2f} ms')} | "
                   f"{fmt(p99 and p99 / 1000, '{:.2f} ms')} | {R.get(f'rps_errors_{t}', '—')} | "
                   f"{R.get(f'rps_non2xx_{t}', '—')} | {R.get(f'rps_all_{t}', '')} |")
    out.append("")
    c = num("rps_rps_cordon") if HAVE_PROXY else None
    for peer in ["squid", "tinyproxy"]:
        r = ratio(c, num(f"rps_rps_{peer}"))
        target("2 req/s", f"cordon ≥ 2× {peer}", fmt(r, "{:.1f}×"), None if r is None else r >= 2)

# 3. tunnels
if any(k.startswith("tun_open_") for k in R):
    n = R.get("tunnels_wanted", "?")
    out.append(f"## 3. {n} concurrent idle CONNECT tunnels: proxy memory")
    out.append("")
    if R.get("tunnels_asked") and R.get("tunnels_asked") != n:
        out.append(f"{n} rather than {R['tunnels_asked']}: this machine's hard limit on open files is {R.get('fd_limit')} "
                   "(no CAP_SYS_RESOURCE to raise it) and a proxy needs two per tunnel.")
        out.append("")
    out.append("Each proxy freshly started and warmed with 100 tunnels; memory of the proxy process (all threads) "
               "before and while holding the tunnels. Per tunnel = increase / tunnels open.")
    out.append("")
    out.append("| proxy | tunnels open | RSS before → during (KiB) | RSS per tunnel | PSS per tunnel | threads | open fds |")
    out.append("|---|---:|---:|---:|---:|---:|---:|")
    for t, name in proxy_rows(["cordon", "tinyproxy", "squid", "srt"], 7):
        if f"tun_open_{t}" not in R:
            continue
        opened = num(f"tun_open_{t}") or 0
        rss0, rss1, pss0, pss1 = (num(f"tun_{k}_{t}") for k in ["rss0", "rss1", "pss0", "pss1"])
        per_rss = (rss1 - rss0) * 1024 / opened if opened and rss0 is not None and rss1 is not None else None
        per_pss = (pss1 - pss0) * 1024 / opened if opened and pss0 is not None and pss1 is not None else None
        R[f"tun_per_{t}"] = per_rss
        out.append(f"| {name} | {int(opened)} (upstream saw {R.get(f'tun_upstream_{t}', '?')}) | "
                   f"{R.get(f'tun_rss0_{t}', '?')} → {R.get(f'tun_rss1_{t}', '?')} | "
                   f"{fmt(per_rss and per_rss / 1024, '{:.2f} KiB')} | {fmt(per_pss and per_pss / 1024, '{:.2f} KiB')} | "
                   f"{R.get(f'tun_threads_{t}', '?')} | {R.get(f'tun_fds_{t}', '?')} |")
    out.append("")
    c = R.get("tun_per_cordon") if HAVE_PROXY else None
    full = HAVE_PROXY and R.get("tun_open_cordon") == R.get("tunnels_wanted")
    target("3 tunnels", f"cordon ≤ 8 KiB per tunnel with {n} open", fmt(c and c / 1024, "{:.2f} KiB"),
           None if c is None else (c <= 8192 and full))

# 4. startup
if "start_bwrap" in R:
    out.append("## 4. Sandbox start-up: `/bin/true` (hyperfine -N, interleaved rounds of 3 warm-up + 10 runs)")
    out.append("")
    out.append("Run as root, and (rows marked unprivileged) as the user nobody, hyperfine included; the unprivileged "
               "commands bind their own working directory instead.")
    out.append("")
    out.append("| sandbox | median wall time | min | mean | runs | command |")
    out.append("|---|---:|---:|---:|---:|---|")
    for suffix in ["", "_unpriv"]:
        if suffix and f"start_bwrap{suffix}" not in R:
            continue
        for t in ["cordon", "cordon_scope", "cordon_landlock", "cordon_session", "bwrap", "srt"]:
            label = ({"cordon_scope": "cordon --read-scope project", "cordon_landlock": "cordon --jail landlock",
                      "cordon_session": "cordon run --session (joining)"}
                     .get(t, t)) + (" (unprivileged)" if suffix else "")
            if t in ("cordon_scope", "cordon_landlock", "cordon_session") and f"start_{t}{suffix}" not in R:
                continue
            if t == "cordon" and not HAVE_RUN:
                out.append(f"| {label} | not measured: {WHY_RUN} | | | | |")
                continue
            v, mn, mean = (num(f"start_{k}{t}{suffix}") for k in ["", "min_", "mean_"])
            cmd = R.get(f"start_cmd_{t}", "").replace("|", "\\|") if not suffix else "same"
            out.append(f"| {label} | {fmt(v and v * 1000, '{:.2f} ms')} | {fmt(mn and mn * 1000, '{:.2f} ms')} | "
                       f"{fmt(mean and mean * 1000, '{:.2f} ms')} | {R.get(f'start_runs_{t}{suffix}', '?')} | "
                       f"{'`' + cmd + '`' if not suffix else cmd} |")
        c = num(f"start_cordon{suffix}") if HAVE_RUN else None
        b, s_ = num(f"start_bwrap{suffix}"), num(f"start_srt{suffix}")
        who = " (unprivileged)" if suffix else " (root)"
        target("4 start-up", "cordon run ≤ bwrap" + who, fmt(ratio(c, b), "{:.2f}× bwrap's time"),
               None if ratio(c, b) is None else c <= b)
        target("4 start-up", "cordon run ≥ 30× faster than srt" + who, fmt(ratio(s_, c), "{:.0f}× faster"),
               None if ratio(s_, c) is None else s_ / c >= 30)
        j = num(f"start_cordon_session{suffix}") if HAVE_RUN else None
        if j is not None:
            target("4 start-up", "cordon run --session ≤ 0.3× bwrap" + who, fmt(ratio(j, b), "{:.2f}× bwrap's time"),
                   None if ratio(j, b) is None else j <= 0.3 * b)
    out.append("")

# 5. jailed download
if "jdl_srt" in R:
    out.append(f"## 5. 1 GiB download inside the sandbox over CONNECT (`curl -p` via the sandbox's proxy, {R.get('runs', '?')} interleaved rounds)")
    out.append("")
    out.append("| sandbox | best MB/s | median MB/s | all runs (MB/s) |")
    out.append("|---|---:|---:|---|")
    for t in ["cordon", "srt"]:
        if t == "cordon" and not HAVE_RUN:
            out.append(f"| cordon run | not measured: {WHY_RUN} | | |")
            continue
        v, med = num(f"jdl_best_{t}"), num(f"jdl_{t}")
        if v is None:
            out.append(f"| {'cordon run -- curl' if t == 'cordon' else 'srt curl'} | failed in every round: "
                       f"{R.get(f'jdl_why_{t}', 'see bench/out/run/jail-' + t + '.err')} | | |")
            continue
        allr = " ".join(fmt(float(x) / 1e6 if x != "nan" else None, "{:.0f}") for x in R.get(f"jdl_all_{t}", "").split())
        out.append(f"| {'cordon run -- curl' if t == 'cordon' else 'srt curl'} | {fmt(v and v / 1e6, '{:.0f}')} | "
                   f"{fmt(med and med / 1e6, '{:.0f}')} | {allr} |")
    out.append("")
    c = num("jdl_best_cordon") if HAVE_RUN else None
    r = ratio(c, num("jdl_best_srt"))
    target("5 jailed download", "cordon ≥ 3× srt", fmt(r, "{:.1f}×"), None if r is None else r >= 3)

# 6. transparent vs CONNECT inside cordon run
if "tsetup_transparent" in R:
    out.append(f"## 6. Transparent proxying vs CONNECT inside `cordon run` (bench/transparent.py, {R.get('runs', '?')} interleaved rounds)")
    out.append("")
    out.append("| path | connection set-up, median ms | bulk 1 GiB, median MB/s | best MB/s |")
    out.append("|---|---:|---:|---:|")
    for t, label in (("transparent", "transparent (fake address, nftables redirect)"), ("connect", "CONNECT via HTTPS_PROXY")):
        st, bm, bb = num(f"tsetup_{t}"), num(f"tbulk_{t}"), num(f"tbulk_best_{t}")
        out.append(f"| {label} | {fmt(st, '{:.3f}')} | {fmt(bm and bm / 1e6, '{:.0f}')} | {fmt(bb and bb / 1e6, '{:.0f}')} |")
    out.append("")
    r = ratio(num("tsetup_transparent"), num("tsetup_connect"))
    target("6 transparent", "set-up ≤ 1.2× CONNECT's", fmt(r, "{:.2f}×"), None if r is None else r <= 1.2)
    b = ratio(num("tbulk_transparent"), num("tbulk_connect"))
    target("6 transparent", "bulk throughput equal to CONNECT's (≥ 0.95×)", fmt(b, "{:.2f}×"), None if b is None else b >= 0.95)

if "files_extract_bwrap" in R:
    out.append(f"## 7. 20,000 files created inside the sandbox, on tmpfs (median of {R.get('runs', '?')} interleaved rounds)")
    out.append("")
    out.append("| sandbox | tar x of 20,000 files | git clone --local | all runs (tar x; clone), s |")
    out.append("|---|---:|---:|---|")
    for t in ["cordon", "bwrap"]:
        if f"files_extract_{t}" not in R:
            continue
        out.append(f"| {'cordon run' if t == 'cordon' else 'bwrap'} | {fmt(num(f'files_extract_{t}'), '{:.2f} s')} | "
                   f"{fmt(num(f'files_clone_{t}'), '{:.2f} s')} | {R.get(f'files_extract_all_{t}', '')}; "
                   f"{R.get(f'files_clone_all_{t}', '')} |")
    out.append("")
    if "files_floor_kernel_us" in R:
        out.append("The floor (`notify_bench`: `open(O_CREAT|O_EXCL)` + `close` of 20,000 files on the same tmpfs, "
                   "nothing of cordon in it), µs per file: answered by the kernel "
                   f"{fmt(num('files_floor_kernel_us'), '{:.2f}')}; by a supervisor thread continuing the call "
                   f"{fmt(num('files_floor_send_us'), '{:.2f}')}; performing it and handing the descriptor over with "
                   f"ADDFD, as cordon does, {fmt(num('files_floor_addfd_us'), '{:.2f}')}; the same with the caller kept "
                   f"on the supervisor's CPU {fmt(num('files_floor_addfd_pin_us'), '{:.2f}')}.")
        out.append("")
    for task, name in (("extract", "tar x"), ("clone", "git clone --local")):
        r = ratio(num(f"files_{task}_cordon"), num(f"files_{task}_bwrap"))
        target(f"7 {name}", "cordon ≤ 1.3× bwrap", fmt(r, "{:.2f}×"), None if r is None else r <= 1.3)

# 8. TLS termination
if "tls_mint_median_us" in R:
    out.append("## 8. TLS termination: leaf minting and requests/s through an inspected keep-alive connection")
    out.append("")
    mint, absolute, inspected = num("tls_mint_median_us"), num("tls_rps_absolute"), num("tls_rps_inspected")
    out.append("| measure | value |")
    out.append("|---|---:|")
    out.append(f"| leaf mint, median (p99) | {fmt(mint, '{:.0f} µs')} ({fmt(num('tls_mint_p99_us'), '{:.0f} µs')}) |")
    out.append(f"| absolute-form requests/s through the inspecting proxy | {fmt(absolute, '{:.0f}')} |")
    out.append(f"| requests/s inside inspected connections (CONNECT + TLS both sides) | {fmt(inspected, '{:.0f}')} |")
    out.append("")
    target("8 leaf mint", "median < 1 ms", fmt(mint, "{:.0f} µs"), None if mint is None else mint < 1000)
    r = ratio(inspected, absolute)
    target("8 inspected requests/s", "≥ 0.5 of absolute-form", fmt(r, "{:.2f}×"), None if r is None else r >= 0.5)

out.append("## Targets")
out.append("")
out.append("| benchmark | target | measured | |")
out.append("|---|---|---:|---|")
for bench, text, measured, ok in targets:
    out.append(f"| {bench} | {text} | {measured} | {verdict(ok)} |")
text = "\n".join(out)
print(text)
if len(sys.argv) >= 4 and sys.argv[2] == "--readme":
    with open(sys.argv[3], encoding="utf-8") as f:
        readme = f.read()
    body = re.sub(r"^(#+) ", r"#\1 ", text, flags=re.M).split("\n", 1)[1].lstrip("\n")
    new, n = re.subn(r"(<!-- results:begin -->\n).*?(<!-- results:end -->)", lambda m: m.group(1) + body + "\n" + m.group(2),
                     readme, flags=re.S)
    if n != 1:
        sys.exit(f"report.py: no results markers in {sys.argv[3]}")
    with open(sys.argv[3], "w", encoding="utf-8") as f:
        f.write(new)

