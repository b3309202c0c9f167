"""comparison/v2's `stats`: a percentile bootstrap over items within runs (A/B/B/A), kept
only so that bundles written under that schema (the committed evidence, until it is
re-run) still verify. Nothing new is written with it: it holds the item-to-item spread but
not the run-to-run variance (issue 17; harness/analysis.py replaces it).

Verdict rule: improved when the interval lies below [1-t, 1+t], regressed above, equal
inside, else inconclusive; a claim the run-level ratio of mean walls contradicts is
inconclusive.
"""
from __future__ import annotations

import math
from typing import Any

from harness import outcomes as verdict
from harness.comparison.stats import bootstrap_geomean, bootstrap_mean_ratio, is_pos, mann_whitney, mean, sig10


def _ok_runs(runs: list[dict]) -> list[dict]:
    return [r for r in runs if r.get("status") == "ok" and is_pos(r.get("wall_s"))]


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
            if it is None or it.get("error") or not is_pos(it.get(key)):
                usable = False
                break
            vals[variant].append(float(it[key]))
        if usable and vals["base"] and vals["candidate"]:
            table[item] = (mean(vals["base"]), mean(vals["candidate"]))
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
                "first_s": sig10(first["wall_s"]), "last_s": sig10(last["wall_s"]),
                "change_pct": sig10(100.0 * change)}

    out: dict[str, Any] = {"base": one(base), "candidate": one(cand), "effect_pct": None,
                           "max_abs_drift_pct": None, "flagged": False, "rule": (
                               "flagged when the larger |first-to-last change| of a variant "
                               "is at least half the effect and at least the threshold")}
    if base and cand:
        effect = (mean(r["wall_s"] for r in cand) - mean(r["wall_s"] for r in base)) \
            / mean(r["wall_s"] for r in base)
        out["effect_pct"] = sig10(100.0 * effect)
        drifts = [abs(d["change_pct"]) for d in (out["base"], out["candidate"]) if d]
        if drifts:
            m = max(drifts)
            out["max_abs_drift_pct"] = sig10(m)
            out["flagged"] = bool(m >= max(50.0 * abs(effect), 100.0 * threshold))
    return out


# --------------------------------------------------------------------------- analyze
def analyze_v2(runs: list[dict], threshold: float, seed: int = 1130,
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
        "seed": int(seed), "resamples": int(resamples), "threshold": sig10(threshold),
        "drift": _drift(base, cand, threshold),
        "paired": {"metric": "item wall_s", "items": 0, "items_excluded": 0,
                   "geomean_ratio": None, "ci95": None, "cpu": None},
        "mann_whitney": None, "verdict": "inconclusive", "verdict_reason": "",
        "warnings": warnings,
    }
    mw = mann_whitney([r["wall_s"] for r in base], [r["wall_s"] for r in cand])
    mw = {k: (sig10(v) if isinstance(v, float) else v) for k, v in mw.items()}
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

    run_ratio = mean(r["wall_s"] for r in cand) / mean(r["wall_s"] for r in base)
    paired = result["paired"]
    table, dropped = _item_table(ok, "wall_s")
    paired["items_excluded"] = dropped
    if table:
        ratios = [c / b for b, c in table.values()]
        bs = bootstrap_geomean(ratios, seed, resamples)
        paired.update(items=len(table), geomean_ratio=sig10(bs["geomean_ratio"]),
                      ci95=[sig10(v) for v in bs["ci95"]])
        what = f"the geometric-mean item wall ratio over {len(table)} items"
        if dropped:
            warnings.append(f"{dropped} item(s) left out of the paired comparison "
                            "(error or no positive wall_s in some ok run)")
        ctable, _ = _item_table(ok, "cpu_s")
        if ctable:
            cbs = bootstrap_geomean([c / b for b, c in ctable.values()], seed + 1, resamples)
            paired["cpu"] = {"metric": "item cpu_s", "items": len(ctable),
                             "geomean_ratio": sig10(cbs["geomean_ratio"]),
                             "ci95": [sig10(v) for v in cbs["ci95"]], "seed": int(seed) + 1}
    else:
        bs = bootstrap_mean_ratio([r["wall_s"] for r in base], [r["wall_s"] for r in cand],
                                  seed, resamples)
        paired.update(metric="run wall_s", geomean_ratio=sig10(bs["geomean_ratio"]),
                      ci95=[sig10(v) for v in bs["ci95"]])
        what = "the run-level ratio of mean walls (items carry no usable timings)"
        warnings.append("items carry no usable timings: the ratio and its CI fall back to "
                        "run-level walls")
    lo, hi = paired["ci95"]
    result["verdict"], result["verdict_reason"] = verdict.decide(lo, hi, threshold, run_ratio, what)
    return result
