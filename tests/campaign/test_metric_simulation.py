"""Metrics other than the headline (thread CPU, peak memory) on simulated campaigns with a known
truth: the wall's looks decide when a sequential campaign stops, and each other metric's interval
is read at that stop (rules.metric_interval). Valid at any stopping time, the confidence
sequence must hold the metric's true ratio in at least 95% of campaigns whatever round the wall
chose, and a metric whose truth is 1 must be called improved or regressed in at most 5%; beside it,
the fixed-sample 95% trimmed-t interval read at the same stop, to show what reading a
fixed-sample interval at a data-chosen stop costs. 1,000 campaigns per scenario (seeded, no
process, no clock); `pytest -s` prints the rates (docs/statistics.md keeps them)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from harness import contract as C, records
from harness.bundle import model as M
from harness.comparison import analysis, metrics
from noise_support import campaign

pytestmark = pytest.mark.untimed  # no process, no clock: `make test` runs it on every core

CAMPAIGNS = int(__import__("os").environ.get("SIM_CAMPAIGNS", 1000))
THRESHOLD = 0.02
FIRST, CAP = C.DEFAULT_FIRST_LOOK, 40

# name: (the wall's true ratio, the wall's run noise, the metric's noise, the share of the metric's
# log noise the run's wall factor carries: a slow run is also a heavy one)
SCENARIOS = {
    "wall 0.95, 3% runs; metric 2%, independent": (0.95, 0.03, 0.02, 0.0),
    "wall 0.95, 3% runs; metric 2%, half the wall's": (0.95, 0.03, 0.02, 0.5),
    "wall 0.5 (stops at once); metric 5%": (0.5, 0.03, 0.05, 0.0),
    "wall 1.0 (runs to the cap); metric 1%": (1.0, 0.03, 0.01, 0.0),
}


def with_metrics(runs: list, rng: np.random.Generator, cpu: float, memory: float, sd: float,
                 shared: float) -> list:
    """Each run's item CPU and loop peak memory drawn around the truth (the candidate's `cpu` and
    `memory` times the base's), with log noise `sd`, a `shared` part of it the run's own wall
    factor (its items' log walls against the base's mean)."""
    level = {r.label: float(np.mean([math.log(it.wall_s) for it in r.items])) for r in runs}
    centre = {v: float(np.mean([level[r.label] for r in runs if r.variant == v])) for v in ("base", "candidate")}
    out = []
    for run in runs:
        slow = level[run.label] - centre[run.variant]  # this run's own wall factor, in logs, the truth taken out
        noise = lambda: sd * float(rng.standard_normal())  # noqa: E731
        c, m = (cpu, memory) if run.variant == "candidate" else (1.0, 1.0)
        items = [dataclasses.replace(it, cpu_s=0.02 * c * math.exp(shared * slow + noise())) for it in run.items]
        peak = int(200e6 * m * math.exp(shared * slow + noise()))
        out.append(dataclasses.replace(run, items=items, memory=records.Memory(peak + 4096, peak - 4096, peak, True)))
    return out


def stopped(runs: list) -> tuple[list, dict]:
    """The runs a sequential campaign of CAP rounds keeps (it stops at the wall's first deciding
    look) and the stats it seals with."""
    s = analysis.stats_of(runs, THRESHOLD, None, {"first": FIRST, "cap": CAP})
    assert s.sequential is not None
    decided = [row.round for row in s.sequential.looks if row.verdict != "inconclusive"]
    kept = runs[:2 * decided[0]] if decided else runs
    return kept, analysis.stats_of(kept, THRESHOLD, None, {"first": FIRST, "cap": CAP})


def scenario(name: str, truth: float, seed: int) -> dict:
    ratio, run_sd, sd, shared = SCENARIOS[name]
    rng = np.random.default_rng(seed)
    out = {"covered": 0, "claims": 0, "regressed": 0, "fixed_covered": 0, "stop": []}
    for _ in range(CAMPAIGNS):
        runs = with_metrics(campaign(rng, ratio=ratio, rounds=CAP, run_sd=run_sd), rng, truth, truth, sd, shared)
        kept, stats = stopped(runs)
        wall = M.Wall(C.WALL_TIMER, 1.0, 1.0, None, None, None)
        entries = {m["name"]: m for m in metrics.section(kept, stats, wall, None, THRESHOLD)}
        for name_ in ("cpu", "memory"):
            lo, hi = entries[name_]["ci95"] or (0.0, math.inf)
            out["covered"] += lo <= truth <= hi
            out["claims"] += entries[name_]["verdict"] in ("improved", "regressed")
            out["regressed"] += entries[name_]["verdict"] == "regressed"
            pairs = [(a, b) for a, b in zip(kept[0::2], kept[1::2])]
            d = [math.log(max(b.memory.loop_peak_bytes, 1) / a.memory.loop_peak_bytes) if name_ == "memory" else
                 float(np.mean([math.log(y.cpu_s / x.cpu_s) for x, y in zip(a.items, b.items)])) for a, b in
                 (sorted(p, key=lambda r: r.variant) for p in pairs)]
            fixed = analysis.interval(d).ci95
            out["fixed_covered"] += fixed is not None and fixed[0] <= truth <= fixed[1]
        out["stop"].append(stats.rounds.n)
    n = 2 * CAMPAIGNS
    return {"covered": out["covered"] / n, "claims": out["claims"] / n, "regressed": out["regressed"] / n,
            "fixed_covered": out["fixed_covered"] / n, "stop": float(np.median(out["stop"]))}


@pytest.mark.parametrize("name", SCENARIOS)
def test_other_metrics_hold_their_level_at_the_walls_stop(name):
    same = scenario(name, 1.0, seed=41)
    heavier = scenario(name, 1.10, seed=42)
    print(f"\n| {name} | {same['stop']:g} | {same['claims']:.1%} | {same['covered']:.1%} | "
          f"{heavier['covered']:.1%} | {heavier['regressed']:.1%} | {same['fixed_covered']:.1%} | "
          f"{heavier['fixed_covered']:.1%} |")
    assert same["claims"] <= 0.05
    assert same["covered"] >= 0.95 and heavier["covered"] >= 0.95
