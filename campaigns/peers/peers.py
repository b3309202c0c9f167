"""Peers side by side: one real change and one A-vs-A, under pyperf, hyperfine and the harness.

Re-runnable (docs/peers.md shows a run's table and says what it does and does not show):

    .venv/bin/pip install pyperf             # or: pip install -e '.[peers]'
    apt-get install -y hyperfine             # the Debian package
    .venv/bin/python campaigns/peers/peers.py --repeat 3 --out out/peers

What each tool is asked, per repetition, for the change (base -> candidate) and for A-vs-A
(base against base):

- pyperf, default and --fast: `python -m pyperf timeit` once per side (the side's tree on
  PYTHONPATH; for A-vs-A the same tree twice), then `python -m pyperf compare_to -v`; its
  verdict is compare_to's: faster, slower or not significant.
- hyperfine: `hyperfine -N --export-json` of the two commands (a fresh interpreter that imports
  the benchmark, runs its setup and calls it once); the verdict is this script's Welch t-test on
  the exported times: p < 0.05 gives faster or slower by the mean ratio.
- the harness: `harness run` of a campaign (`rounds: auto`, the sequential default) over the
  same asv benchmark; its verdict and ratio from the bundle's comparison.json. A-vs-A is the
  base against an empty commit on top of it (the harness refuses one SHA on both sides).

Every tool runs one asv benchmark of the library's own (`--bench FILE --benchmark Class.method
--param VALUE`; by default networkx's AllShortestPathsGrid at N = 10): pyperf and hyperfine call
the benchmark's class as asv would (instance, setup(param), method(param)), the harness selects
it by its asv name, so the three time the same call on the same trees.

Time to a verdict is the tool's whole process time (pyperf: both timeit processes and
compare_to; hyperfine: its process and the Welch test; the harness: `harness run`).

The pure parts (parse_compare_to, welch, classify, table) are tested in
tests/unit/test_peers.py without starting a process.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("pyperf", "pyperf-fast", "hyperfine", "harness")
KINDS = ("change", "aa")
CLAIMS = {"faster", "slower", "improved", "regressed"}
DETECT = {"faster", "improved"}
BENCH = "benchmarks/benchmarks/benchmark_shortest_path.py"
BENCHMARK = "AllShortestPathsGrid.time_all_shortest_paths"
PARAM = "10"
AA_DATE = "2000-01-01T00:00:00+0000"  # fixed, so the A-vs-A commit has the same SHA every run


# --------------------------------------------------------------------------- pure parts
def parse_compare_to(text: str) -> dict:
    """pyperf `compare_to -v` output of one benchmark -> {verdict, ratio (candidate/base), t}.

    Significant: `Mean +- std dev: [a] 98 ms +- 5 ms -> [b] 88 ms +- 4 ms: 1.12x faster`
    then `Significant (t=4.51)`; not: the same first line then `Not significant!`."""
    m = re.search(r":\s*(?:(\d+(?:\.\d+)?)x (faster|slower)|(no change))\s*$", text, re.M)
    if not m:
        raise ValueError(f"pyperf compare_to output has no 'Nx faster|slower' line: {text[:200]!r}")
    if m.group(3):
        ratio = 1.0
    else:
        factor = float(m.group(1))
        ratio = 1.0 / factor if m.group(2) == "faster" else factor
    t = re.search(r"Significant \(t=(-?\d+(?:\.\d+)?)\)", text)
    if "Not significant!" in text or "hidden because not significant" in text:
        verdict = "not significant"
    elif t or re.search(r"^Significant", text, re.M):
        verdict = "no change" if m.group(3) else m.group(2)
    else:
        raise ValueError(f"pyperf compare_to output says neither Significant nor Not significant: {text[:200]!r}")
    return {"verdict": verdict, "ratio": ratio, "t": float(t.group(1)) if t else None}


def pyperf_values(doc: dict) -> list:
    """Every measured value (seconds per loop) of a pyperf JSON file's benchmarks, warm-ups and
    calibration runs left out."""
    out = []
    for bench in doc.get("benchmarks", []):
        for run in bench.get("runs", []):
            out.extend(float(v) for v in run.get("values", []))
    return out


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the regularised incomplete beta (modified Lentz)."""
    tiny, qab, qap, qam = 1e-300, a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), standard library only."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(lbt) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * _betacf(b, a, 1.0 - x) / b


def t_sf2(t: float, df: float) -> float:
    """Two-sided p-value of Student's t with df degrees of freedom."""
    return betainc(df / 2.0, 0.5, df / (df + t * t))


def welch(a: list, b: list, use_scipy: bool = True) -> dict:
    """Welch's unequal-variance t-test of b against a: t, df, two-sided p, mean ratio b/a.
    scipy's ttest_ind(equal_var=False) when installed (and use_scipy), else the same figures
    from the standard library; `by` says which."""
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's test needs at least two values on each side")
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    va, vb = statistics.variance(a), statistics.variance(b)
    se2 = va / len(a) + vb / len(b)
    ratio = mb / ma
    if se2 == 0.0:
        return {"t": 0.0 if ma == mb else math.copysign(math.inf, mb - ma), "df": float(len(a) + len(b) - 2),
                "p": 1.0 if ma == mb else 0.0, "ratio": ratio, "by": "stdlib"}
    t = (mb - ma) / math.sqrt(se2)
    df = se2 ** 2 / ((va / len(a)) ** 2 / (len(a) - 1) + (vb / len(b)) ** 2 / (len(b) - 1))
    if use_scipy:
        try:
            from scipy import stats as sps  # optional
        except ImportError:
            pass
        else:
            res = sps.ttest_ind(b, a, equal_var=False)
            return {"t": float(res.statistic), "df": df, "p": float(res.pvalue), "ratio": ratio, "by": "scipy"}
    return {"t": t, "df": df, "p": t_sf2(t, df), "ratio": ratio, "by": "stdlib"}


def hyperfine_verdict(test: dict, alpha: float = 0.05) -> str:
    if test["p"] >= alpha:
        return "not significant"
    return "faster" if test["ratio"] < 1.0 else "slower"


def classify(kind: str, verdict: str) -> str:
    """One repetition's outcome: on the change (candidate really faster) `detected`, `wrong`
    (slower, regressed, or a claim of no change: equal) or `undecided`; on A-vs-A `false claim`
    (any direction claimed), `equal` (the harness's positive no-change claim, correct here) or
    `undecided`. A tool error is `error`."""
    if verdict in ("error", "timeout"):
        return "error"
    if kind == "change":
        if verdict in DETECT:
            return "detected"
        if verdict in CLAIMS or verdict == "equal":
            return "wrong"
        return "undecided"
    if verdict in CLAIMS:
        return "false claim"
    return "equal" if verdict == "equal" else "undecided"


def net_s(rep: dict) -> float:
    """Time to a verdict net of the seconds the run was stopped (Pauses)."""
    return rep["wall_s"] - (rep.get("paused_s") or 0.0)


def _spread(xs: list) -> str:
    if not xs:
        return "-"
    return f"{statistics.median(xs):.0f} [{min(xs):.0f}, {max(xs):.0f}]"


def table(reps: list, machine: dict) -> str:
    """The Markdown table of a run: per tool, time to a verdict (median [min, max] seconds),
    detections on the change, false claims on A-vs-A, the ratios; and its caption."""
    lines = ["| tool | change: time to a verdict, s | change: detected | change: ratio (median) "
             "| A-vs-A: time to a verdict, s | A-vs-A: false claims | A-vs-A: ratio range |",
             "|---|---|---|---|---|---|---|"]
    for tool in TOOLS:
        rows = {k: [r for r in reps if r["tool"] == tool and r["kind"] == k] for k in KINDS}
        if not rows["change"] and not rows["aa"]:
            continue
        ch, aa = rows["change"], rows["aa"]

        def count(rs, outcome):
            errs = sum(r["outcome"] == "error" for r in rs)
            return f"{sum(r['outcome'] == outcome for r in rs)} of {len(rs)}" + (f" ({errs} failed)" if errs else "")

        ratios = [r["ratio"] for r in ch if r.get("ratio") is not None]
        aar = [r["ratio"] for r in aa if r.get("ratio") is not None]
        words = lambda rs: ", ".join(r["verdict"] + ("*" if r.get("paused_s") else "") for r in rs) or "-"  # noqa: E731
        med = f"{statistics.median(ratios):.3f}" if ratios else "-"
        rng = f"{min(aar):.3f}..{max(aar):.3f}" if aar else "-"
        lines.append(f"| {tool} | {_spread([net_s(r) for r in ch])} | {count(ch, 'detected')} ({words(ch)}) "
                     f"| {med} | {_spread([net_s(r) for r in aa])} | {count(aa, 'false claim')} ({words(aa)}) "
                     f"| {rng} |")
    loads = [r["load_before"][0] for r in reps if r.get("load_before")] + \
            [r["load_after"][0] for r in reps if r.get("load_after")]
    caption = (f"Machine: {machine.get('model', '?')}, {machine.get('cores', '?')} cores, "
               f"shared with other sessions and busy: 1-minute load average "
               f"{min(loads):.1f}..{max(loads):.1f} over the run" if loads else
               f"Machine: {machine.get('model', '?')}, {machine.get('cores', '?')} cores")
    steal = [r["steal_share"] for r in reps if r.get("steal_share") is not None]
    if steal:
        caption += f", steal {100 * min(steal):.1f}..{100 * max(steal):.1f}% of CPU time per tool run"
    paused = [r for r in reps if r.get("paused_s")]
    if paused:
        caption += (f"; {len(paused)} of {len(reps)} tool runs (marked *) were stopped by the host for "
                    f"{sum(r['paused_s'] for r in paused):.0f} s in all: their times are net of the stop, their "
                    f"verdicts are the tool's under that stop")
    caption += (". Ratio: candidate/base mean time (pyperf, hyperfine) or the harness's geometric-mean ratio; "
                "time to a verdict: the tool's whole process time.")
    return "\n".join(lines) + "\n\n" + caption + "\n"


# --------------------------------------------------------------------------- machine
def loadavg() -> list:
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def cpu_times() -> list:
    """The cpu line of /proc/stat (user nice system idle iowait irq softirq steal ...), ticks."""
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("cpu "):
                return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return []


def steal_share(before: list, after: list):
    if len(before) < 8 or len(after) < 8:
        return None
    d = [y - x for x, y in zip(before, after)]
    total = sum(d[:8])
    return d[7] / total if total > 0 else None


def machine() -> dict:
    model = "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"model": model, "cores": os.cpu_count(), "python": sys.version.split()[0],
            "kernel": os.uname().release}


class Pauses:
    """Seconds this process was not running at all: a thread ticks every TICK s and counts a gap
    over GAP s as a pause (a SIGSTOP of the session, a suspended VM), so a repetition that spent
    minutes stopped is marked and its time to a verdict can be given net of the stop."""
    TICK, GAP = 0.5, 3.0

    def __init__(self):
        import threading
        self.total = 0.0
        self._last = time.monotonic()
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self):
        while True:
            time.sleep(self.TICK)
            now = time.monotonic()
            if now - self._last > self.GAP:
                self.total += now - self._last - self.TICK
            self._last = now


# --------------------------------------------------------------------------- processes
def git(clone: Path, *args, env=None) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


def export(clone: Path, sha: str, dest: Path) -> Path:
    """The revision's tree as plain files (git archive), so nothing in the clone changes."""
    if dest.exists():
        return dest
    part = dest.with_name(dest.name + ".partial")
    shutil.rmtree(part, ignore_errors=True)
    part.mkdir(parents=True)
    tar = dest.with_name(dest.name + ".tar")
    with open(tar, "wb") as fh:
        subprocess.run(["git", "-C", str(clone), "archive", "--format=tar", sha], check=True, stdout=fh)
    with tarfile.open(tar) as tf:
        tf.extractall(part, filter="data")
    tar.unlink()
    part.rename(dest)  # whole or absent: a tree cut short by an interruption is never reused
    return dest


def aa_commit(clone: Path, base: str) -> str:
    """An empty commit on top of base (same tree), made with fixed dates so its SHA repeats;
    kept alive by refs/peers/aa."""
    env = dict(os.environ, GIT_AUTHOR_NAME="peers", GIT_AUTHOR_EMAIL="peers@local", GIT_AUTHOR_DATE=AA_DATE,
               GIT_COMMITTER_NAME="peers", GIT_COMMITTER_EMAIL="peers@local", GIT_COMMITTER_DATE=AA_DATE)
    sha = git(clone, "commit-tree", f"{base}^{{tree}}", "-p", base, "-m", "peers: A-vs-A (empty commit on the base)",
              env=env)
    git(clone, "update-ref", "refs/peers/aa", sha)
    return sha


def with_bench_of(clone: Path, base: str, cand: str, bench: str = BENCH) -> str:
    """A commit on top of base whose tree is base's with BENCH taken from cand, so both sides run
    one benchmark file (for a change that adds its own benchmark); fixed dates, so its SHA repeats;
    kept alive by refs/peers/base. Everything else, the code under test included, is base's."""
    env = dict(os.environ, GIT_AUTHOR_NAME="peers", GIT_AUTHOR_EMAIL="peers@local", GIT_AUTHOR_DATE=AA_DATE,
               GIT_COMMITTER_NAME="peers", GIT_COMMITTER_EMAIL="peers@local", GIT_COMMITTER_DATE=AA_DATE)
    with tempfile.TemporaryDirectory() as tmp:  # a private index: the clone's own is left alone
        env["GIT_INDEX_FILE"] = str(Path(tmp) / "index")
        git(clone, "read-tree", base, env=env)
        blob = git(clone, "rev-parse", "--verify", f"{cand}:{bench}")
        git(clone, "update-index", "--add", "--cacheinfo", f"100644,{blob},{bench}", env=env)
        tree = git(clone, "write-tree", env=env)
    sha = git(clone, "commit-tree", tree, "-p", base, "-m", f"peers: the base with {bench} of {cand[:12]}", env=env)
    git(clone, "update-ref", "refs/peers/base", sha)
    return sha


def timed(cmd: list, log: Path, env=None, timeout=3600, cwd=None) -> tuple:
    """Run cmd, its output to log; (seconds, exit code or 'timeout')."""
    t0 = time.perf_counter()
    with open(log, "ab") as fh:
        fh.write(("$ " + " ".join(map(str, cmd)) + "\n").encode())
        fh.flush()
        try:
            rc = subprocess.run(list(map(str, cmd)), stdout=fh, stderr=subprocess.STDOUT, env=env, timeout=timeout,
                                cwd=cwd).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout"
    return time.perf_counter() - t0, rc


def bench_module(bench: str, tree: Path) -> tuple:
    """(the folder, relative to the tree, to put on sys.path; the benchmark module's dotted name):
    the harness's own asv rule (harness.worker.suites.asv.module_of), so pyperf and hyperfine
    import the module the harness times."""
    from harness.worker.suites.asv import module_of

    folder, dotted = module_of(tree / bench)
    return folder.parent.relative_to(tree), dotted


def parse_param(text):
    """--param as asv holds it: a Python literal (10, 'x', (1, 2)) when it reads as one, else the
    string itself; None (no --param) for a benchmark without parameters."""
    if text is None:
        return None
    import ast
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def asv_select(benchmark: str, param) -> str:
    """The harness's select for one benchmark and one parameter: its asv name, anchored, so
    `time_x(10)` matches neither `time_x(100)` nor `time_x_more(10)`."""
    name = benchmark if param is None else f"{benchmark}({param!r})"
    return r"(^|\.)" + re.escape(name) + "$"


def setup_stmt(dotted: str, benchmark: str, param) -> tuple:
    """pyperf's setup and statement: the benchmark called as asv calls it (a class is made, its
    setup run with the parameter, then the method timed with it; a function is called alone)."""
    cls, _, meth = benchmark.rpartition(".")
    arg = "" if param is None else "p"
    given = f"p = {param!r}; " if param is not None else ""
    if cls:
        return (f"from {dotted} import {cls} as Bench; {given}b = Bench(); "
                f"getattr(b, 'setup', lambda *a: None)({arg})", f"b.{meth}({arg})")
    return f"from {dotted} import {meth} as f; {given}".rstrip("; "), f"f({arg})"


def calls_for(per_call_s: float, item_s: float = 0.01) -> int:
    """suite.number for a benchmark whose one call takes per_call_s: enough calls for item_s (the
    harness pre-flight's 10 ms), 1 for a call that long already."""
    return math.ceil(item_s / max(per_call_s, 1e-9)) if per_call_s < item_s else 1


def env_for(tree: Path, bench_dir: Path = None) -> dict:
    paths = [str(tree)] + ([str(tree / bench_dir)] if bench_dir is not None else [])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def run_pyperf(a: Path, b: Path, work: Path, args, fast: bool) -> dict:
    setup, stmt = args.setup_stmt
    log, total = work / "log.txt", 0.0
    for side, tree in (("a", a), ("b", b)):
        cmd = [args.python, "-m", "pyperf", "timeit", "--name", args.benchmark,
               *(["--fast"] if fast else []), "-o", work / f"{side}.json", "-s", setup, stmt]
        dt, rc = timed(cmd, log, env=env_for(tree, args.bench_dir), timeout=args.timeout)
        total += dt
        if rc != 0:
            return {"wall_s": total, "verdict": "timeout" if rc == "timeout" else "error", "ratio": None,
                    "detail": f"pyperf timeit ({side}) exit {rc}"}
    t0 = time.perf_counter()
    res = subprocess.run([args.python, "-m", "pyperf", "compare_to", "-v", work / "a.json", work / "b.json"],
                         capture_output=True, text=True, timeout=120)
    total += time.perf_counter() - t0
    (work / "compare_to.txt").write_text(res.stdout + res.stderr)
    try:
        parsed = parse_compare_to(res.stdout)
    except ValueError as exc:
        return {"wall_s": total, "verdict": "error", "ratio": None, "detail": str(exc)}
    va = pyperf_values(json.loads((work / "a.json").read_text()))
    vb = pyperf_values(json.loads((work / "b.json").read_text()))
    return {"wall_s": total, "verdict": parsed["verdict"], "ratio": statistics.fmean(vb) / statistics.fmean(va),
            "detail": {"compare_to": res.stdout.strip(), "t": parsed["t"], "values": [len(va), len(vb)],
                       "printed_ratio": parsed["ratio"]}}


def run_hyperfine(a: Path, b: Path, work: Path, args) -> dict:
    script = work.parent.parent / "stmt.py"
    cmds = [f"env PYTHONPATH={env_for(tree, args.bench_dir)['PYTHONPATH']} {args.python} {script}" for tree in (a, b)]
    cmd = [args.hyperfine, "-N", "--style", "basic", "--export-json", work / "hyperfine.json", "-n", "base", cmds[0],
           "-n", "candidate" if a != b else "base-again", cmds[1]]
    t0 = time.perf_counter()
    dt, rc = timed(cmd, work / "log.txt", timeout=args.timeout)
    if rc != 0:
        return {"wall_s": dt, "verdict": "timeout" if rc == "timeout" else "error", "ratio": None,
                "detail": f"hyperfine exit {rc}"}
    results = json.loads((work / "hyperfine.json").read_text())["results"]
    test = welch(results[0]["times"], results[1]["times"])
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "verdict": hyperfine_verdict(test), "ratio": test["ratio"],
            "detail": {"welch": test, "runs": [len(r["times"]) for r in results]}}


def campaign_yaml(clone: Path, base: str, cand: str, select: str, name: str, bench: str = BENCH,
                  benchmark: str = BENCHMARK, number: int = 1) -> str:
    return (f"name: {name}\n"
            f"description: {json.dumps(f'peers.py - asv {benchmark}, {base[:9]} -> {cand[:9]}')}\n"
            f"target: {{repo: {json.dumps(str(clone))}}}\n"
            f"base: {{rev: \"{base}\"}}\n"
            f"candidate: {{rev: \"{cand}\"}}\n"
            f"suite:\n  kind: asv\n  path: {json.dumps(bench)}\n  select: {json.dumps(select)}\n"
            + (f"  number: {number}\n" if number > 1 else "") +
            f"rounds: auto\n")


def run_harness(yaml: Path, work: Path, args) -> dict:
    bundle = work / "bundle"
    cmd = [args.python, "-m", "harness", "run", yaml, "--out", bundle, "--force"]
    dt, rc = timed(cmd, work / "log.txt", timeout=args.timeout, cwd=ROOT)
    comp = bundle / "data" / "comparison.json"
    if rc == "timeout" or not comp.exists():
        return {"wall_s": dt, "verdict": "timeout" if rc == "timeout" else "error", "ratio": None,
                "detail": f"harness run exit {rc}"}
    doc = json.loads(comp.read_text())
    stats = doc.get("stats") or {}
    paired = stats.get("paired") or {}
    seq = stats.get("sequential") or {}
    return {"wall_s": dt, "verdict": stats.get("verdict") or "error", "ratio": paired.get("geomean_ratio"),
            "detail": {"exit": rc, "ci": paired.get("ci95"), "rounds": (stats.get("rounds") or {}).get("n"),
                       "stopped": seq.get("stopped"), "cap": seq.get("cap"), "band": stats.get("band"),
                       "claim_band": stats.get("claim_band"), "warnings": stats.get("warnings")}}


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--clone", type=Path, default=Path("/tmp/nx"), help="the library's clone (default /tmp/nx)")
    p.add_argument("--mirror", default="/work/.mirror/networkx+networkx/repo",
                   help="where to clone from when --clone is absent")
    p.add_argument("--base", default="7f7afab19^")
    p.add_argument("--candidate", default="7f7afab19")
    p.add_argument("--candidate-bench", action="store_true",
                   help="the base runs the candidate's --bench file (a change that adds its own benchmark, such "
                        "as c1c468d52): the base becomes a commit on it with that one file replaced")
    p.add_argument("--number", default="auto",
                   help="the harness's suite.number, calls per timed item (default auto: enough calls of the "
                        "benchmark, timed in the base, for 10 ms, as the harness's pre-flight advises; pyperf "
                        "calibrates its own loops)")
    p.add_argument("--library", default="networkx",
                   help="the package under test, which must import from each side's tree (default networkx)")
    p.add_argument("--bench", default=BENCH, help=f"the asv benchmark file, in the repository (default {BENCH})")
    p.add_argument("--benchmark", default=BENCHMARK, help=f"Class.method or function in it (default {BENCHMARK})")
    p.add_argument("--param", default=PARAM,
                   help=f"the benchmark's parameter as asv holds it, a Python literal or a plain string (default "
                        f"{PARAM}); --param '' for a benchmark without one")
    p.add_argument("--repeat", type=int, default=3, help="repetitions of the change per tool")
    p.add_argument("--aa-repeat", type=int, default=None, help="repetitions of A-vs-A per tool (default --repeat)")
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {','.join(TOOLS)}")
    p.add_argument("--out", type=Path, default=ROOT / "out" / "peers")
    p.add_argument("--python", default=sys.executable, help="interpreter for every tool (default this one)")
    p.add_argument("--hyperfine", default=shutil.which("hyperfine") or "hyperfine")
    p.add_argument("--timeout", type=float, default=3600,
                   help="seconds per tool process (default 3600; a stop of the host counts towards it)")
    args = p.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        p.error(f"--tools: unknown {','.join(bad)} (known: {','.join(TOOLS)})")
    aa_n = args.repeat if args.aa_repeat is None else args.aa_repeat
    param = parse_param(args.param or None)
    if args.number != "auto" and not (args.number.isdigit() and 1 <= int(args.number) <= 1_000_000):
        p.error(f"--number: expected auto or a whole number from 1 to 1000000, got {args.number!r}")
    select = asv_select(args.benchmark, param)

    if "hyperfine" in tools and not shutil.which(args.hyperfine):
        p.error("hyperfine not found: install it (apt-get install -y hyperfine) or leave it out with --tools")
    if any(t.startswith("pyperf") for t in tools):
        if subprocess.run([args.python, "-c", "import pyperf"], capture_output=True).returncode != 0:
            p.error(f"{args.python} has no pyperf: pip install pyperf (or pip install -e '.[peers]')")
    clone = args.clone.resolve()
    if not (clone / ".git").exists():
        if not Path(args.mirror).exists():
            p.error(f"--clone {clone} is not a git clone and --mirror {args.mirror} is absent: clone networkx there")
        subprocess.run(["git", "clone", "-q", args.mirror, str(clone)], check=True)
    base = git(clone, "rev-parse", "--verify", args.base + "^{commit}")
    cand = git(clone, "rev-parse", "--verify", args.candidate + "^{commit}")
    if args.candidate_bench:
        base = with_bench_of(clone, base, cand, args.bench)
    aa = aa_commit(clone, base)

    out = args.out.resolve()
    stamp = time.strftime("%Y%m%dT%H%M%S")
    run_dir = out / stamp
    run_dir.mkdir(parents=True)
    trees = {"base": export(clone, base, out / "trees" / base[:12]), "candidate": export(clone, cand, out / "trees" / cand[:12])}
    args.bench_dir, dotted = bench_module(args.bench, trees["base"])
    args.setup_stmt = setup, stmt = setup_stmt(dotted, args.benchmark, param)
    per_call = {}
    for name, tree in trees.items():  # the library and its benchmark import from the tree, not elsewhere
        probe = (f"import time, {args.library} as lib, {dotted} as m; print(lib.__file__); print(m.__file__); "
                 f"{setup}; {stmt}\nt = []\nfor _ in range(5):\n    t0 = time.perf_counter(); {stmt}; "
                 f"t.append(time.perf_counter() - t0)\nprint(sorted(t)[2])")
        got = subprocess.run([args.python, "-c", probe], env=env_for(tree, args.bench_dir), capture_output=True,
                             text=True)
        if got.returncode != 0:
            last = (got.stderr.strip().splitlines() or ["no message"])[-1]
            p.error(f"{name}: the benchmark does not run from {tree}: {last}")
        lines = got.stdout.splitlines()
        for mod, where in zip((args.library, dotted), lines):
            if not Path(where).resolve().is_relative_to(tree):
                p.error(f"{name}: {mod} imported from {where}, not from {tree}: uninstall it from {args.python}")
        per_call[name] = float(lines[-1])
    number = calls_for(per_call["base"]) if args.number == "auto" else int(args.number)
    (run_dir / "stmt.py").write_text(f"{setup}\n{stmt}\n")
    (run_dir / "change.yaml").write_text(campaign_yaml(clone, base, cand, select, "peers_change", args.bench,
                                                       args.benchmark, number))
    (run_dir / "aa.yaml").write_text(campaign_yaml(clone, base, aa, select, "peers_aa", args.bench, args.benchmark,
                                                   number))

    mach = machine()
    meta = {"machine": mach, "clone": str(clone), "base": base, "candidate": cand, "aa_commit": aa,
            "base_given": args.base, "candidate_bench": args.candidate_bench,
            "bench": args.bench, "benchmark": args.benchmark, "param": param, "select": select, "number": number,
            "per_call_s": per_call, "setup": setup,
            "stmt": stmt, "tools": tools,
            "repeat": args.repeat, "aa_repeat": aa_n, "started": stamp,
            "command": " ".join([sys.executable, *map(str, sys.argv if argv is None else [__file__, *argv])]),
            "versions": versions(args)}
    reps = []
    pauses = Pauses()
    results = run_dir / "results.json"
    print(f"peers: {mach['model']}, {mach['cores']} cores; base {base[:9]} candidate {cand[:9]}; out {run_dir}",
          flush=True)
    for i in range(max(args.repeat, aa_n)):
        # rotate the tools' order per repetition so a slow spell of the machine is spread over them
        order = tools[i % len(tools):] + tools[:i % len(tools)]
        for tool in order:
            for kind in KINDS:
                if (kind == "change" and i >= args.repeat) or (kind == "aa" and i >= aa_n):
                    continue
                work = run_dir / f"rep{i + 1:02d}" / f"{tool}-{kind}"
                work.mkdir(parents=True)
                a, b = trees["base"], (trees["candidate"] if kind == "change" else trees["base"])
                load0, cpu0, t0, p0 = loadavg(), cpu_times(), time.time(), pauses.total
                if tool in ("pyperf", "pyperf-fast"):
                    res = run_pyperf(a, b, work, args, fast=tool == "pyperf-fast")
                elif tool == "hyperfine":
                    res = run_hyperfine(a, b, work, args)
                else:
                    res = run_harness(run_dir / ("change.yaml" if kind == "change" else "aa.yaml"), work, args)
                rec = {"repetition": i + 1, "tool": tool, "kind": kind, "started": t0, **res,
                       "outcome": classify(kind, res["verdict"]), "load_before": load0, "load_after": loadavg(),
                       "steal_share": steal_share(cpu0, cpu_times()), "paused_s": pauses.total - p0}
                reps.append(rec)
                ratio = f"{rec['ratio']:.3f}" if rec["ratio"] is not None else "-"
                paused = f"; paused {rec['paused_s']:.0f} s" if rec["paused_s"] else ""
                print(f"rep {i + 1} {tool:11s} {kind:6s} {rec['wall_s']:7.1f} s  {rec['verdict']:15s} ratio {ratio} "
                      f"({rec['outcome']}; load {load0[:1]} -> {rec['load_after'][:1]}{paused})", flush=True)
                results.write_text(json.dumps({**meta, "repetitions": reps}, indent=1, default=str))
    md = table(reps, mach)
    (run_dir / "table.md").write_text(md)
    print(md)
    print(f"peers: {results} and {run_dir / 'table.md'}")
    return 0


def versions(args) -> dict:
    out = {}
    for name, cmd in (("pyperf", [args.python, "-c", "import pyperf; print(pyperf.__version__)"]),
                      ("hyperfine", [args.hyperfine, "--version"]),
                      ("harness", [args.python, "-m", "harness", "--version"])):
        try:
            out[name] = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=ROOT).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out[name] = None
    return out


if __name__ == "__main__":
    sys.exit(main())
