"""comparison.json: everything derived from the per-run records. The runner writes it and both
checkers re-derive it from the bundle (`harness verify` with this code, harness/rehash.py with
its own), so a number can only be in it if the records produce it."""
from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from harness import contract as C
from harness import rules as R
from harness.bundle import model as M
from harness.comparison import analysis, metrics, parity
from harness.rules import sig10
from harness.records import CampaignRecord, CleanupReceipt, NoiseFloor, RunnerReceipt, to_json

if TYPE_CHECKING:
    from harness.records import InstructionRecord


def mean(values: list[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def derive(campaign: CampaignRecord, runs: list, runner: RunnerReceipt, cleanup: CleanupReceipt, golden: dict | None,
           arrays_dir: Path, floor: NoiseFloor | None = None, instr: Sequence[InstructionRecord] = (),
           workload: str | None = None, sandbox: dict | None = None) -> M.Comparison:
    """comparison.json, typed (harness/bundle/model.py; records.to_json writes it). campaign: data/campaign.json; runs: RunRecords in execution order; runner and cleanup:
    their receipts; golden: the pinned golden file; floor: the pinned noise-floor file; instr:
    the InstructionRecords in execution order; workload: the workload receipt's digest, which
    every ok run's must equal; sandbox: environment.json's sandbox (what every worker ran under)."""
    ok = [r for r in runs if r.ok]
    ok_instr = [r for r in instr if r.ok]

    reasons = [f"{r.label}: {r.reason}" for r in runs if not r.ok]
    if runner.reason:
        reasons.append(runner.reason)
    if len(runs) < len(campaign.order):
        reasons.append(f"only {len(runs)} of {len(campaign.order)} runs were started")
    reasons += [f"{r.label}: {r.reason}" for r in instr if not r.ok]
    if len({r.harness_source_sha256 for r in ok + ok_instr}) > 1:
        reasons.append("the harness's own source changed between runs")
    if {r.workload_sha256 for r in ok + ok_instr} - {workload}:
        reasons.append("the workload folder changed during the campaign (a run's digest is not the stored one's)")
    if not cleanup.all_absent:
        alive = [str(p.pid) for p in cleanup.processes if not p.absent]
        reasons.append(f"processes still running after the campaign: {', '.join(alive) or 'unknown'}")

    # The headline wall from the timed runs; stage CPU and call counts from the instrumented
    # ones (the same runs, for an order without stage runs); parity over every run.
    base_mean = mean([r.wall_s for r in ok if r.variant == "base" and r.timed])
    cand_mean = mean([r.wall_s for r in ok if r.variant == "candidate" and r.timed])
    wall = M.Wall(C.WALL_TIMER, base_mean, cand_mean, None, None, None)
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall = M.Wall(C.WALL_TIMER, base_mean, cand_mean, saving_s=base_mean - cand_mean,
                      saving_pct=100.0 * (base_mean - cand_mean) / base_mean, speedup=base_mean / cand_mean)
    staged = [r for r in ok if R.instrumented(r.label, campaign.order)]
    doc = to_json(campaign)  # the contract's shared rules read campaign.json as the checkers parse it
    plan = R.sequential_plan(doc, [(r.label, r.status, r.process.wall_s) for r in runs[:2]])
    floor_value = floor.floor if floor is not None else None
    question, margin, threshold = campaign.question, campaign.margin, campaign.threshold
    stats = analysis.stats_of(runs, threshold, floor_value, plan, question=question, margin=margin,
                              family=R.family_members(doc, runner.items))
    stats = analysis.with_interference(stats, runs, campaign.interference, threshold, floor_value, question, margin)
    stats = analysis.with_outside(stats, runs)
    instructions = instructions_section(instr, stats) if campaign.instructions is not None else None
    return M.Comparison(
        schema=C.SCHEMAS["comparison"],
        campaign=campaign.name,
        status="complete" if not reasons else "failed",
        reason="; ".join(reasons) or None,
        order=campaign.order,
        items=M.Items(planned=len(runner.items), of=len(runner.items_all)),
        runs=[M.RunRow(r.label, r.variant, r.sha, r.wall_s, r.exit_code, r.status) for r in runs],
        sandbox=M.build(M.Sandbox, C.sandbox_summary(sandbox)),
        wall=wall,
        stages=_stages(campaign, staged),
        parity=_parity(campaign, ok, golden, arrays_dir, staged),
        stats=stats,
        instructions=M.build(M.Instructions | None, instructions),
        metrics=M.build(list[M.MetricEntry], metrics.section(runs, stats, wall, instructions, threshold)),
    )


def instructions_section(instr: Sequence[InstructionRecord], stats: M.Stats) -> dict:
    """comparison.json `instructions` (rules.instructions_section, the rule the checkers apply
    too) from the instruction run records and the wall's verdict, interval and band."""
    return R.instructions_section([(r.label, r.variant, r.instructions, len(r.items)) for r in instr if r.ok],
                                  stats.verdict, stats.paired.ci95, stats.band)


def calls_per_run(name: str, ok: list):
    """One count when every run agrees, {variant: count} when each variant agrees with itself,
    else {label: count}."""
    per_run = {r.label: r.stages[name].calls if name in r.stages else 0 for r in ok}
    if len(set(per_run.values())) == 1:
        return next(iter(per_run.values()))
    per_variant = {v: {n for label, n in per_run.items() if label in {r.label for r in ok if r.variant == v}}
                   for v in ("base", "candidate")}
    if all(len(c) == 1 for c in per_variant.values()):
        return {v: c.pop() for v, c in per_variant.items()}
    return per_run


def call_counts_hold(campaign: CampaignRecord, ok: list) -> bool:
    """Stages installed in every run must be called as often in every run, or, for stages the
    campaign marks calls: per_variant, as often within each variant."""
    if not ok:
        return True
    common = set.intersection(*({n for n, on in r.stages_installed.items() if on} for r in ok))
    modes = campaign.stage_calls
    for name in sorted(common):
        groups = [ok] if modes.get(name, "equal") == "equal" else \
            [[r for r in ok if r.variant == v] for v in ("base", "candidate")]
        if any(len({r.stages[name].calls for r in group}) > 1 for group in groups):
            return False
    return True


def _stages(campaign: CampaignRecord, ok: list) -> dict[str, M.Stage]:
    out = {}
    for name in campaign.stages:
        row: dict = {"calls_per_run": calls_per_run(name, ok), "calls": campaign.stage_calls.get(name, "equal")}
        for variant in ("base", "candidate"):
            runs = [r for r in ok if r.variant == variant]
            row[f"{variant}_self_cpu_s"] = mean([r.stages[name].self_cpu_s if name in r.stages else 0.0 for r in runs])
            row[f"{variant}_incl_cpu_s"] = mean([r.stages[name].incl_cpu_s if name in r.stages else 0.0 for r in runs])
            row[f"{variant}_installed"] = all(r.stages_installed.get(name, True) for r in runs)
        out[name] = M.Stage(**row)
    return out


def _parity(campaign: CampaignRecord, ok: list, golden: dict | None, arrays_dir: Path, staged: list) -> M.Parity:
    base = [r for r in ok if r.variant == "base"]
    if not base or not any(r.variant == "candidate" for r in ok):
        return M.Parity(identical=False, agree=False, tolerance=None, reference=None, items=0, fields_compared=0,
                        fields_identical=0, error_returns=0, errors_identical=False, call_counts_identical=False,
                        golden=None, mismatch_count=0, mismatches=[],
                        note="no successful run of both variants to compare", divergence=[])
    reference = base[0]
    counts, mismatches = parity.compare_runs(reference, [r for r in ok if r is not reference])
    calls = call_counts_hold(campaign, staged)
    golden_ = parity.compare_golden(golden, ok) if golden is not None else None
    clean = counts.errors_identical and calls and (golden_ is None or golden_.identical)
    identical = clean and not mismatches
    max_ulp = campaign.parity.max_ulp
    # rules.tolerance_section, shared with the checkers, marks each row with its max_ulp
    tolerance, within = (None, False) if max_ulp is None else parity.tolerance(arrays_dir, mismatches, max_ulp)
    listed = M.build(list[M.Mismatch], mismatches[:C.MAX_LISTED])
    return M.Parity(identical=identical, agree=identical or (clean and within),
                    tolerance=M.build(M.Tolerance | None, tolerance), reference=counts.reference, items=counts.items,
                    fields_compared=counts.fields_compared, fields_identical=counts.fields_identical,
                    error_returns=counts.error_returns, errors_identical=counts.errors_identical,
                    call_counts_identical=calls, golden=golden_, mismatch_count=counts.mismatch_count,
                    mismatches=listed, note=None,
                    divergence=parity.divergence(listed, arrays_dir) if mismatches else [])
