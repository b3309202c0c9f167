"""comparison.json: everything derived from the per-run records. The runner writes it and
`harness verify` re-derives it from the bundle, so a number can only be in it if the
records produce it."""
from __future__ import annotations

import math
from pathlib import Path

from harness import records
from harness.comparison import analysis, legacy, parity
from harness.comparison.stats import sig10


def mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def derive(campaign: dict, runs: list[dict], runner: dict, cleanup: dict, golden: dict | None,
           arrays_dir: Path, schema: str | None = None, floor: dict | None = None,
           instr: list[dict] = (), workload: str | None = None) -> dict:
    """campaign: data/campaign.json; runs: records in execution order; runner:
    receipts/runner.json (interruptions, runs not started); cleanup: receipts/cleanup.json.
    schema: the comparison schema to derive (verify passes the claimed one, so that a
    comparison/v2 bundle is re-derived the way it was written); default the current one.
    floor: the pinned noise-floor file (`harness calibrate`), when the campaign pins one.
    instr: the instruction records (data/instructions/) in execution order. workload: the
    workload receipt's digest (data/receipts/workload.json), which every ok run's must equal."""
    v2 = schema == records.LEGACY_SCHEMAS["comparison"]
    ok = [r for r in runs if r["status"] == "ok"]
    by_variant = {v: [r for r in ok if r["variant"] == v] for v in ("base", "candidate")}

    reasons = [f"{r['label']}: {r['reason']}" for r in runs if r["status"] != "ok"]
    if runner.get("reason"):
        reasons.append(runner["reason"])
    if len(runs) < len(campaign["order"]):
        reasons.append(f"only {len(runs)} of {len(campaign['order'])} runs were started")
    # (the schedule puts every instruction run before a wall run: all wall runs started, all ran)
    reasons += [f"{r['label']}: {r['reason']}" for r in instr if r["status"] != "ok"]
    harness_digests = {r.get("harness_source_sha256") for r in ok + [r for r in instr if r["status"] == "ok"]}
    if len(harness_digests) > 1:
        reasons.append("the harness's own source changed between runs")
    if {r.get("workload_sha256") for r in ok + [r for r in instr if r["status"] == "ok"]} - {workload}:
        reasons.append("the workload folder changed during the campaign (a run's digest is not the stored one's)")
    if not cleanup.get("all_absent", False):
        alive = [str(p["pid"]) for p in cleanup.get("processes", []) if not p["absent"]]
        reasons.append(f"processes still running after the campaign: {', '.join(alive) or 'unknown'}")
    status = "complete" if not reasons else "failed"

    # The headline wall from the timed runs; stage CPU and call counts from the instrumented
    # ones (the same runs, for an order without stage runs); parity over every run.
    timed = {v: [r for r in runs_ if records.timed(r["label"])] for v, runs_ in by_variant.items()}
    staged = [r for r in ok if records.instrumented(r["label"], campaign["order"])]
    base_walls = [r["wall_s"] for r in timed["base"]]
    cand_walls = [r["wall_s"] for r in timed["candidate"]]
    base_mean, cand_mean = mean(base_walls), mean(cand_walls)
    wall = {"timer": "perf_counter", "base_mean_s": base_mean, "candidate_mean_s": cand_mean,
            "saving_s": None, "saving_pct": None, "speedup": None}
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall.update(saving_s=base_mean - cand_mean, saving_pct=100.0 * (base_mean - cand_mean) / base_mean,
                    speedup=base_mean / cand_mean)

    stats = (legacy.analyze_v2(runs, threshold=campaign.get("threshold", 0.02)) if v2 else
             analysis.analyze(runs, campaign.get("threshold", 0.02), floor and floor["floor"]))
    return {
        "schema": records.LEGACY_SCHEMAS["comparison"] if v2 else records.SCHEMAS["comparison"],
        "campaign": campaign["name"],
        "status": status,
        "reason": "; ".join(reasons) or None,
        "order": campaign["order"],
        "runs": [{"label": r["label"], "variant": r["variant"], "sha": r["sha"], "wall_s": r.get("wall_s"),
                  "exit_code": r["exit_code"], "status": r["status"]} for r in runs],
        "wall": wall,
        "stages": _stages(campaign, staged),
        "parity": _parity(campaign, ok, by_variant, golden, arrays_dir, staged),
        "stats": stats,
        # Only when the campaign asked for instruction runs (older bundles have no such key).
        **({"instructions": instructions_section(instr, stats)} if campaign.get("instructions") else {}),
    }


def instructions_section(instr: list[dict], stats: dict) -> dict:
    """comparison.json `instructions`: per variant the counts of its ok instruction runs and
    whether they repeated exactly (else their spread), candidate/base of the mean counts,
    and whether instructions and the wall verdict point opposite ways (I/O, parallelism or
    memory effects that instructions do not see). rehash.py re-derives it."""
    ok = [r for r in instr if r["status"] == "ok"]
    out = {"tool": "callgrind", "items": len(ok[0]["items"]) if ok else 0}
    for variant in ("base", "candidate"):
        counts = [r["instructions"] for r in ok if r["variant"] == variant]
        out[variant] = {"runs": [r["label"] for r in ok if r["variant"] == variant], "counts": counts,
                        "repeated": len(counts) >= 2 and len(set(counts)) == 1,
                        "spread_pct": sig10(100.0 * (max(counts) - min(counts)) / min(counts)) if counts else None}
    base, cand = out["base"]["counts"], out["candidate"]["counts"]
    ratio = sig10(math.fsum(cand) / len(cand) / (math.fsum(base) / len(base))) if base and cand else None
    spread = max((out[v]["spread_pct"] or 0.0) for v in ("base", "candidate"))
    change = sig10(100.0 * (ratio - 1.0)) if ratio is not None else None
    wall = stats.get("verdict") if isinstance(stats, dict) else None
    out.update(ratio=ratio, change_pct=change, repeated=out["base"]["repeated"] and out["candidate"]["repeated"],
               # a change the counts' own run-to-run spread cannot explain
               detected=change is not None and change != 0 and abs(change) > spread,
               direction=None if ratio is None else "fewer" if ratio < 1 else "more" if ratio > 1 else "same")
    # opposite ways: a move within the counts' own spread says nothing
    out["disagrees"] = out["detected"] and ((wall == "improved" and ratio > 1) or (wall == "regressed" and ratio < 1))
    return out


def calls_per_run(name: str, ok: list[dict]):
    """One count when every run agrees, {variant: count} when each variant agrees with
    itself, else {label: count}."""
    per_run = {r["label"]: r["stages"].get(name, {}).get("calls", 0) for r in ok}
    if len(set(per_run.values())) == 1:
        return next(iter(per_run.values()))
    per_variant = {v: {r["stages"].get(name, {}).get("calls", 0) for r in ok if r["variant"] == v}
                   for v in ("base", "candidate")}
    if all(len(c) == 1 for c in per_variant.values()):
        return {v: c.pop() for v, c in per_variant.items()}
    return per_run


def call_counts_hold(campaign: dict, ok: list[dict]) -> bool:
    """Stages installed in every run must be called as often in every run, or, for stages
    the campaign marks calls: per_variant, as often within each variant."""
    if not ok:
        return True
    common = set.intersection(*({n for n, on in r.get("stages_installed", {}).items() if on} for r in ok))
    modes = campaign.get("stage_calls", {})
    for name in sorted(common):
        groups = [ok] if modes.get(name, "equal") == "equal" else \
            [[r for r in ok if r["variant"] == v] for v in ("base", "candidate")]
        if any(len({r["stages"][name]["calls"] for r in group}) > 1 for group in groups):
            return False
    return True


def _stages(campaign: dict, ok: list[dict]) -> dict:
    out = {}
    for name in campaign.get("stages", {}):
        row = {"calls_per_run": calls_per_run(name, ok),
               "calls": campaign.get("stage_calls", {}).get(name, "equal")}
        for variant in ("base", "candidate"):
            runs = [r for r in ok if r["variant"] == variant]
            row[f"{variant}_self_cpu_s"] = mean([r["stages"].get(name, {}).get("self_cpu_s", 0.0) for r in runs])
            row[f"{variant}_incl_cpu_s"] = mean([r["stages"].get(name, {}).get("incl_cpu_s", 0.0) for r in runs])
            row[f"{variant}_installed"] = all(r.get("stages_installed", {}).get(name, True) for r in runs)
        out[name] = row
    return out


def _parity(campaign: dict, ok: list[dict], by_variant: dict, golden: dict | None, arrays_dir: Path,
            staged: list[dict]) -> dict:
    if not by_variant["base"] or not by_variant["candidate"]:
        return {"identical": False, "reference": None, "items": 0, "fields_compared": 0,
                "fields_identical": 0, "error_returns": 0, "errors_identical": False,
                "call_counts_identical": False, "golden": None, "mismatch_count": 0, "mismatches": [],
                "divergence": [], "note": "no successful run of both variants to compare"}
    reference = by_variant["base"][0]
    result = parity.compare_runs(reference, [r for r in ok if r is not reference])
    result["call_counts_identical"] = call_counts_hold(campaign, staged)
    result["golden"] = parity.compare_golden(golden, ok) if golden is not None else None
    result["divergence"] = parity.divergence(result["mismatches"], arrays_dir) if result["mismatches"] else []
    result["identical"] = (result["mismatch_count"] == 0 and result["errors_identical"]
                           and result["fields_compared"] == result["fields_identical"]
                           and result["call_counts_identical"]
                           and (result["golden"] is None or result["golden"]["identical"]))
    return result
