"""Statistics beyond the mean, and the verdict a CI job can act on.

Pure functions over run records (README format); numpy only, so the parent process that
builds comparison.json can import this without pandas or matplotlib. Everything here is
deterministic: the bootstrap draws from ``numpy.random.default_rng(seed)`` with the seed
recorded in the output, nothing reads a clock, and every float in the result is rounded to
10 significant digits so that ``harness verify`` re-deriving comparison.json on another
machine gets the same JSON even when libm or SIMD paths differ in the last bit.

Verdict rule (``analyze``). Let r = candidate / base time and [lo, hi] its bootstrap 95%
confidence interval, t the campaign's ``verdict.threshold`` (relative, e.g. 0.02):

* a variant without any ``ok`` run                -> ``inconclusive``
* hi < 1 - t                                      -> ``improved``
* lo > 1 + t                                      -> ``regressed``
* 1 - t <= lo and hi <= 1 + t                     -> ``equal``
* anything else (the CI straddles a band edge)    -> ``inconclusive``

and, as a guard against per-item timings that thread contention distorts, an ``improved``
or ``regressed`` verdict becomes ``inconclusive`` when the run-level ratio of mean walls
lies on the other side of the equal band (beyond 1 + t, resp. below 1 - t).

r is the geometric mean over items of (mean candidate item wall / mean base item wall), the
CI a percentile bootstrap over items (items resampled with replacement). Items enter only
when they have a positive ``wall_s`` and no error in every ok run. When no item qualifies
(workloads that do not time items), r falls back to the run level: mean candidate run wall
/ mean base run wall, with base and candidate runs resampled independently.

Failed and timed-out runs are excluded from everything here. The Mann-Whitney U test on
the run walls is reported beside the verdict, not folded into it: with A/B/B/A (2 vs 2) the
smallest two-sided p it can give is 1/3, and the result says so plainly.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

ALPHA = 0.05
DIGITS = 10  # significant digits kept in every float of the result
EXACT_MAX_N = 50  # exact U distribution (no ties) when both samples are this small
PERMUTATION_MAX = 50_000  # exact permutation p (with ties) up to this many arrangements
_CHUNK = 1000  # bootstrap resamples drawn per block (fixed: part of the definition)

VERDICTS = ("improved", "regressed", "equal", "inconclusive")
EXIT_CODES = {"improved": 0, "equal": 0, "regressed": 5, "inconclusive": 6}
EXIT_PARITY, EXIT_FAILED, EXIT_UNUSABLE = 3, 4, 2


# --------------------------------------------------------------------------- helpers
def _r(x: float | None) -> float | None:
    """Round to DIGITS significant digits as a plain Python float (None and non-finite kept)."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{DIGITS - 1}e}")


def _mean(xs: Iterable[float]) -> float:
    xs = [float(x) for x in xs]
    return math.fsum(xs) / len(xs)


def _ok_runs(runs: list[dict]) -> list[dict]:
    return [r for r in runs if r.get("status") == "ok" and _is_pos(r.get("wall_s"))]


def _is_pos(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


# --------------------------------------------------------------------------- Mann-Whitney U
def _u_counts(n1: int, n2: int) -> list[int]:
    """Number of arrangements giving U = 0..n1*n2 (no ties): the coefficients of the
    Gaussian binomial [n1+n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)."""
    size = n1 * n2 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        k = n2 + i  # multiply by (1 - q^k), truncated (the quotient has degree n1*n2)
        for d in range(size - 1, k - 1, -1):
            poly[d] -= poly[d - k]
        for d in range(i, size):  # divide by (1 - q^i): running sum with stride i
            poly[d] += poly[d - i]
    return poly


def _midranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda j: values[j])
    ranks = [0.0] * len(values)
    j = 0
    while j < len(order):
        k = j
        while k + 1 < len(order) and values[order[k + 1]] == values[order[j]]:
            k += 1
        rank = (j + k + 2) / 2.0  # 1-based mean rank of positions j..k
        for m in range(j, k + 1):
            ranks[order[m]] = rank
        j = k + 1
    return ranks


def mann_whitney(x: list[float], y: list[float], method: str = "auto") -> dict:
    """Two-sided Mann-Whitney U test of samples x and y.

    ``u`` is U for x: the number of pairs (xi, yj) with xi > yj, ties counting 1/2
    (scipy's ``statistic``). ``method``: ``exact`` (no ties: the exact null distribution by
    counting; with ties: exact enumeration of all arrangements of the mid-ranks), ``normal``
    (normal approximation with tie correction and continuity correction 1/2) or ``auto``
    (exact when there are no ties and both samples have at most 50 values, or when there
    are ties and at most 50,000 arrangements; normal otherwise). Two-sided p for the exact
    methods is P(|U - n1 n2 / 2| >= |u - n1 n2 / 2|), which is 2 min(P(U<=u), P(U>=u))
    capped at 1 when the null distribution is symmetric.

    ``min_p`` is the smallest two-sided p these sample sizes can give (no ties),
    2 / C(n1+n2, n1); ``enough`` is ``min_p < 0.05``.
    """
    n1, n2 = len(x), len(y)
    out: dict[str, Any] = {"u": None, "p": None, "method": None, "n_base": n1,
                           "n_candidate": n2, "min_p": None, "enough": False, "warning": None}
    if n1 == 0 or n2 == 0:
        out["warning"] = "no U test: a variant has no ok run"
        return out
    values = [float(v) for v in x] + [float(v) for v in y]
    ranks = _midranks(values)
    u2 = int(round(2 * math.fsum(ranks[:n1]))) - n1 * (n1 + 1)  # 2U, an integer
    nn = n1 * n2  # 2 * mean of U
    ties = len(set(values)) < len(values)
    total = math.comb(n1 + n2, n1)
    min_p = min(1.0, 2.0 / total)
    if method == "auto":
        if not ties:
            method = "exact" if max(n1, n2) <= EXACT_MAX_N else "normal"
        else:
            method = "exact" if total <= PERMUTATION_MAX else "normal"
    if method == "exact" and not ties:
        counts = _u_counts(n1, n2)
        d = abs(u2 - nn)  # |2U - n1 n2|
        hits = sum(c for k, c in enumerate(counts) if abs(2 * k - nn) >= d)
        p = min(1.0, hits / total)
    elif method == "exact":
        if total > 5_000_000:
            raise ValueError(f"exact permutation test too large ({total} arrangements)")
        import itertools

        r2 = [int(round(2 * r)) for r in ranks]  # doubled mid-ranks are integers
        base2 = n1 * (n1 + 1)
        d = abs(u2 - nn)
        hits = 0
        for combo in itertools.combinations(range(n1 + n2), n1):
            if abs(sum(r2[j] for j in combo) - base2 - nn) >= d:
                hits += 1
        p = min(1.0, hits / total)
    elif method == "normal":
        n = n1 + n2
        counts: dict[float, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        tie_term = math.fsum(t ** 3 - t for t in counts.values())
        var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
        if var <= 0:
            p = 1.0
        else:
            z = (abs(u2 - nn) / 2.0 - 0.5) / math.sqrt(var)
            p = 1.0 if z <= 0 else min(1.0, math.erfc(z / math.sqrt(2.0)))
    else:
        raise ValueError(f"unknown method {method!r}")
    out.update(u=u2 / 2.0, p=p, method=method, min_p=min_p, enough=min_p < ALPHA)
    if not out["enough"]:
        need = 2
        while 2.0 / math.comb(2 * need, need) >= ALPHA:
            need += 1
        out["warning"] = (
            f"too few runs to conclude: with {n1} base and {n2} candidate runs the smallest "
            f"possible two-sided p is {min_p:.3f}; at least {need} runs of each variant are "
            f"needed for p < {ALPHA}")
    return out


# --------------------------------------------------------------------------- bootstrap
def _percentile_ci(stats: np.ndarray) -> list[float]:
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return [float(lo), float(hi)]


def bootstrap_geomean(ratios: list[float], seed: int, resamples: int) -> dict:
    """Geometric mean of ``ratios`` and its percentile-bootstrap 95% CI (items resampled
    with replacement, ``default_rng(seed).integers(0, n, size=(1000, n))`` per block)."""
    logs = np.array([math.log(r) for r in ratios], dtype=np.float64)
    n = len(logs)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _CHUNK):
        k = min(_CHUNK, resamples - start)
        idx = rng.integers(0, n, size=(k, n))
        out[start:start + k] = logs[idx].sum(axis=1) / n
    lo, hi = _percentile_ci(out)
    return {"geomean_ratio": math.exp(math.fsum(logs.tolist()) / n),
            "ci95": [math.exp(lo), math.exp(hi)]}


def bootstrap_mean_ratio(base: list[float], cand: list[float], seed: int,
                         resamples: int) -> dict:
    """mean(cand) / mean(base) and its percentile-bootstrap 95% CI, the two samples
    resampled independently (base first, then candidate, per block of 1000)."""
    b = np.array(base, dtype=np.float64)
    c = np.array(cand, dtype=np.float64)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _CHUNK):
        k = min(_CHUNK, resamples - start)
        ib = rng.integers(0, len(b), size=(k, len(b)))
        ic = rng.integers(0, len(c), size=(k, len(c)))
        out[start:start + k] = (c[ic].sum(axis=1) / len(c)) / (b[ib].sum(axis=1) / len(b))
    lo, hi = _percentile_ci(out)
    return {"geomean_ratio": _mean(cand) / _mean(base), "ci95": [lo, hi]}


# --------------------------------------------------------------------------- pieces
def _item_table(ok: list[dict], key: str) -> tuple[dict[str, tuple[float, float]], int]:
    """{item id: (mean base, mean candidate)} of ``key`` over items usable in every ok run,
    and the number of items left out."""
    per_run: list[tuple[str, dict[str, dict]]] = []
    for run in ok:
        items = run.get("items") or []
        per_run.append((run["variant"], {str(it.get("id")): it for it in items
                                         if isinstance(it, dict)}))
    if not per_run:
        return {}, 0
    ids = sorted(set().union(*(set(m) for _, m in per_run)))
    table: dict[str, tuple[float, float]] = {}
    dropped = 0
    for item in ids:
        vals: dict[str, list[float]] = {"base": [], "candidate": []}
        usable = True
        for variant, m in per_run:
            it = m.get(item)
            if it is None or it.get("error") or not _is_pos(it.get(key)):
                usable = False
                break
            vals[variant].append(float(it[key]))
        if usable and vals["base"] and vals["candidate"]:
            table[item] = (_mean(vals["base"]), _mean(vals["candidate"]))
        else:
            dropped += 1
    return table, dropped


def _drift(base: list[dict], cand: list[dict], threshold: float) -> dict:
    def one(runs: list[dict]) -> dict | None:
        if len(runs) < 2:
            return None
        first, last = runs[0], runs[-1]
        change = (last["wall_s"] - first["wall_s"]) / first["wall_s"]
        return {"first": first.get("label"), "last": last.get("label"),
                "first_s": _r(first["wall_s"]), "last_s": _r(last["wall_s"]),
                "change_pct": _r(100.0 * change)}

    out: dict[str, Any] = {"base": one(base), "candidate": one(cand), "effect_pct": None,
                           "max_abs_drift_pct": None, "flagged": False, "rule": (
                               "flagged when the larger |first-to-last change| of a variant "
                               "is at least half the effect and at least the threshold")}
    if base and cand:
        effect = (_mean(r["wall_s"] for r in cand) - _mean(r["wall_s"] for r in base)) \
            / _mean(r["wall_s"] for r in base)
        out["effect_pct"] = _r(100.0 * effect)
        drifts = [abs(d["change_pct"]) for d in (out["base"], out["candidate"]) if d]
        if drifts:
            m = max(drifts)
            out["max_abs_drift_pct"] = _r(m)
            out["flagged"] = bool(m >= max(50.0 * abs(effect), 100.0 * threshold))
    return out


def _decide(lo: float, hi: float, run_ratio: float | None, threshold: float,
            what: str) -> tuple[str, str]:
    t = threshold
    band = f"[{1 - t:.4f}, {1 + t:.4f}]"
    ci = f"95% CI [{lo:.4f}, {hi:.4f}] of {what}"
    if hi < 1 - t:
        verdict, reason = "improved", f"{ci} lies below the equal band {band}"
    elif lo > 1 + t:
        verdict, reason = "regressed", f"{ci} lies above the equal band {band}"
    elif lo >= 1 - t and hi <= 1 + t:
        return "equal", f"{ci} lies inside the equal band {band}"
    else:
        return "inconclusive", f"{ci} straddles an edge of the equal band {band}"
    if run_ratio is not None and (
            (verdict == "improved" and run_ratio > 1 + t)
            or (verdict == "regressed" and run_ratio < 1 - t)):
        return "inconclusive", (f"{reason}, but the run-level ratio of mean walls "
                                f"{run_ratio:.4f} lies on the other side of the band")
    return verdict, reason


# --------------------------------------------------------------------------- analyze
def analyze(runs: list[dict], threshold: float, seed: int = 1130,
            resamples: int = 10000) -> dict:
    """Drift, per-item paired ratio with bootstrap CI, Mann-Whitney U and the verdict.

    ``runs``: run records in execution order. See the module docstring for the verdict
    rule. The result is JSON-able (plain floats, rounded to 10 significant digits) and a
    pure function of its arguments.
    """
    threshold = float(threshold)
    if not (threshold >= 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    ok = _ok_runs(runs)
    base = [r for r in ok if r.get("variant") == "base"]
    cand = [r for r in ok if r.get("variant") == "candidate"]
    warnings: list[str] = []
    excluded = [str(r.get("label")) for r in runs if r not in ok]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")

    result: dict[str, Any] = {
        "seed": int(seed), "resamples": int(resamples), "threshold": _r(threshold),
        "drift": _drift(base, cand, threshold),
        "paired": {"metric": "item wall_s", "items": 0, "items_excluded": 0,
                   "geomean_ratio": None, "ci95": None, "cpu": None},
        "mann_whitney": None, "verdict": "inconclusive", "verdict_reason": "",
        "warnings": warnings,
    }
    mw = mann_whitney([r["wall_s"] for r in base], [r["wall_s"] for r in cand])
    mw = {k: (_r(v) if isinstance(v, float) else v) for k, v in mw.items()}
    mw["metric"] = "run wall_s"
    result["mann_whitney"] = mw
    if mw["warning"]:
        warnings.append(mw["warning"])
    if result["drift"]["flagged"]:
        d = result["drift"]
        warnings.append(
            f"drift: a variant changed by {d['max_abs_drift_pct']:.2f}% from its first to its "
            f"last run, comparable to the effect ({d['effect_pct']:.2f}%)")

    if not base or not cand:
        missing = " and ".join(v for v, rs in (("base", base), ("candidate", cand)) if not rs)
        result["verdict_reason"] = f"no ok {missing} run"
        return result

    run_ratio = _mean(r["wall_s"] for r in cand) / _mean(r["wall_s"] for r in base)
    paired = result["paired"]
    table, dropped = _item_table(ok, "wall_s")
    paired["items_excluded"] = dropped
    if table:
        ratios = [c / b for b, c in table.values()]
        bs = bootstrap_geomean(ratios, seed, resamples)
        paired.update(items=len(table), geomean_ratio=_r(bs["geomean_ratio"]),
                      ci95=[_r(v) for v in bs["ci95"]])
        what = f"the geometric-mean item wall ratio over {len(table)} items"
        if dropped:
            warnings.append(f"{dropped} item(s) left out of the paired comparison "
                            "(error or no positive wall_s in some ok run)")
        ctable, _ = _item_table(ok, "cpu_s")
        if ctable:
            cbs = bootstrap_geomean([c / b for b, c in ctable.values()], seed + 1, resamples)
            paired["cpu"] = {"metric": "item cpu_s", "items": len(ctable),
                             "geomean_ratio": _r(cbs["geomean_ratio"]),
                             "ci95": [_r(v) for v in cbs["ci95"]], "seed": int(seed) + 1}
    else:
        bs = bootstrap_mean_ratio([r["wall_s"] for r in base], [r["wall_s"] for r in cand],
                                  seed, resamples)
        paired.update(metric="run wall_s", geomean_ratio=_r(bs["geomean_ratio"]),
                      ci95=[_r(v) for v in bs["ci95"]])
        what = "the run-level ratio of mean walls (items carry no usable timings)"
        warnings.append("items carry no usable timings: the ratio and its CI fall back to "
                        "run-level walls")
    lo, hi = paired["ci95"]
    result["verdict"], result["verdict_reason"] = _decide(lo, hi, run_ratio, threshold, what)
    return result


# --------------------------------------------------------------------------- verdict line
def verdict_exit_code(comparison: dict) -> int:
    """0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign
    failed, 2 unusable input (no stats / unknown verdict)."""
    if not isinstance(comparison, dict):
        return EXIT_UNUSABLE
    if comparison.get("status") != "complete":
        return EXIT_FAILED
    parity = comparison.get("parity")
    if not isinstance(parity, dict) or parity.get("identical") is not True:
        return EXIT_PARITY
    stats = comparison.get("stats")
    if not isinstance(stats, dict):
        return EXIT_UNUSABLE
    return EXIT_CODES.get(stats.get("verdict"), EXIT_UNUSABLE)


def verdict_line(comparison: dict, exit_word: str = "exit") -> str:
    """One line for humans and CI logs, e.g.
    ``verdict: improved (exit 0): candidate/base 0.8123 [0.8011, 0.8240] ...``.
    exit_word: how the code is introduced (`harness run` says whose code it is)."""
    from harness.parity import explain

    code = verdict_exit_code(comparison)
    if code == EXIT_FAILED:
        return (f"verdict: campaign failed ({exit_word} {code}): "
                f"{comparison.get('reason') or 'status ' + str(comparison.get('status'))}")
    if code == EXIT_PARITY:
        return f"verdict: parity mismatch ({exit_word} {code}): {explain(comparison)}"
    stats = comparison.get("stats")
    if code == EXIT_UNUSABLE:
        return f"verdict: unusable ({exit_word} {code}): comparison.json has no usable stats"
    parts = [f"verdict: {stats['verdict']} ({exit_word} {code})"]
    paired = stats.get("paired") or {}
    if paired.get("geomean_ratio") is not None and paired.get("ci95"):
        lo, hi = paired["ci95"]
        parts.append(f"candidate/base {paired['geomean_ratio']:.4f} "
                     f"[{lo:.4f}, {hi:.4f}] ({paired.get('metric')}, 95% CI, "
                     f"threshold {100 * float(stats.get('threshold') or 0):.1f}%)")
    wall = comparison.get("wall") or {}
    if wall.get("base_mean_s") is not None and wall.get("candidate_mean_s") is not None:
        txt = f"wall {wall['base_mean_s']:.3f} s -> {wall['candidate_mean_s']:.3f} s"
        if wall.get("saving_pct") is not None and wall.get("speedup") is not None:
            txt += f" ({wall['saving_pct']:.1f}% saving, {wall['speedup']:.3f}x)"
        parts.append(txt)
    parts.append("parity identical")
    return parts[0] + ": " + "; ".join(parts[1:])
