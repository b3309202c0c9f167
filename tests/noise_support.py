"""Simulated campaigns for the statistics: run records (records.RunRecord, as the runner
writes them) from a known true ratio and run-level noise, with no process and no clock
(seeded numpy)."""
from __future__ import annotations

import dataclasses

import numpy as np

from fakes import run_record
from harness import contract as C
from harness import rules as R
from harness import records

MAX_ROUNDS = C.MAX_ROUNDS
BASE_ITEMS = (0.012, 0.020, 0.031, 0.015, 0.026, 0.011, 0.018, 0.023)  # seconds
ITEM_IDS = tuple(f"item{j}" for j in range(len(BASE_ITEMS)))


def campaign(rng: np.random.Generator, *, ratio: float = 1.0, rounds: int = 20, run_sd: float = 0.03,
             item_sd: float = 0.02, tails: bool = False, drift: float = 0.0, burst: float = 1.0,
             per_item: dict[int, float] | None = None, load: float = 0.0, spells: bool = False,
             budget_s: float | None = None, seen: bool = False, hiccups: float = 0.0) -> list[records.RunRecord]:
    """Run records of one campaign of `rounds` shuffled rounds.

    Each run's items are scaled by one run-level factor (log-normal with sd `run_sd`, or a
    t(3) draw of that scale with `tails`: the process-level noise load changes), a slow
    drift (the whole campaign slows by `drift`, linearly in execution order), and `burst`
    on one run picked at random (another job hitting that run only); each item then gets
    its own log-normal noise `item_sd`. The candidate's items take `ratio` times the base
    time, or `per_item[j]` for item j. With `load`, each run is hit by another job with that
    probability: 1.2x to 2x slower, and its record shows the CPU stall (PSI) that says so.
    With `spells`, the host itself slows 1.9x for spells of a few runs (about 14% of them),
    as this project's VM does, and nothing in the guest shows it (no PSI stall). With
    `budget_s`, the count is `rounds: auto`'s: rounds is the minimum, and the first round's
    walls decide the rest (R.auto_rounds). With `seen`, the guest sees the spells: each run in
    one reads the steal that slowed it, and the runner's rule marks it disturbed. With
    `hiccups`, each run alone is 1.8x slower with that probability, unseen (a short stall of
    the host that hits one run of a round, as this project's VMs show under a neighbour's load)."""
    # The draws keep the order they were first written in (per run: its factor, its load, its
    # host spell, its items; with a budget all MAX_ROUNDS rounds are drawn), so every seed gives
    # the campaigns the rates were first measured on. Records are built only for the runs kept.
    order = R.round_order(MAX_ROUNDS if budget_s is not None else rounds, int(rng.integers(0, 2**32)))
    slow = False
    hit = int(rng.integers(0, len(order)))
    base = np.array(BASE_ITEMS)
    effect = base * np.array([(per_item or {}).get(j, ratio) for j in range(len(BASE_ITEMS))])
    drawn = []
    for index, (label, variant) in enumerate(R.labels(order)):
        z = rng.standard_t(3) / np.sqrt(3.0) if tails else rng.standard_normal()
        factor = np.exp(run_sd * z) * (1.0 + drift * index / len(order)) * (burst if index == hit else 1.0)
        loaded = bool(rng.random() < load)
        slowdown = float(rng.uniform(1.2, 2.0)) if loaded else 1.0
        factor *= slowdown
        if spells:  # a two-state host: enters a slow spell with p 0.04 per run, stays in it with p 0.75
            slow = bool(rng.random() < (0.75 if slow else 0.04))
            factor *= 1.9 if slow else 1.0
        if hiccups and rng.random() < hiccups:  # drawn only here: the other scenarios keep their draws
            factor *= 1.8
        walls = ((effect if variant == "candidate" else base) * factor
                 * np.exp(item_sd * rng.standard_normal(len(BASE_ITEMS)))).tolist()
        drawn.append((label, variant, walls, sum(walls) * 1.01, slowdown, slow))
    if budget_s is not None:  # `rounds: auto`: the first round's two walls decide how many rounds run
        drawn = drawn[:2 * R.auto_rounds(budget_s, drawn[0][3] + drawn[1][3], rounds, MAX_ROUNDS)]
    return [dataclasses.replace(run, interference=stolen(run, slow and seen))
            for run, slow in ((run_record(label, [records.Item(item_id, w, w, {}, None)
                                                  for item_id, w in zip(ITEM_IDS, walls)],
                                          variant=variant, index=index, wall_s=wall, loadavg_before=[0.5],
                                          loadavg_after=[0.5], cpu_stall_s=wall * (1 - 1 / slowdown)), slow)
                              for index, (label, variant, walls, wall, slowdown, slow) in enumerate(drawn))]


def stolen(run: records.RunRecord, slow: bool) -> records.Interference:
    """The run's readings at 100 Hz: in a host spell (1.9x) the hypervisor took 0.9/1.9 of its wall."""
    ticks = int(100 * run.wall_s * 0.9 / 1.9) if slow else 0
    return records.Interference.marked({"user_hz": 100, "steal_ticks": ticks, "cpu": 0, "cpu_steal_ticks": ticks},
                                       run.wall_s, run.wall_s, 2, records.interference_bounds(None))


SCENARIOS = {
    "log-normal run noise 3%": {"run_sd": 0.03},
    "heavy-tailed run noise (t3)": {"run_sd": 0.03, "tails": True},
    "slow drift 20% over the campaign": {"run_sd": 0.02, "drift": 0.20},
    "burst: one run 1.6x slower": {"run_sd": 0.02, "burst": 1.6},
    "all of them, noisy (8%)": {"run_sd": 0.08, "tails": True, "drift": 0.20, "burst": 1.6},
    "host slow spells (1.9x, ~14% of runs)": {"run_sd": 0.03, "spells": True},
    "rounds: auto (8%, spells)": {"run_sd": 0.08, "tails": True, "spells": True, "budget_s": 12.0},
    "host slow spells the guest sees (steal)": {"run_sd": 0.03, "spells": True, "seen": True},
    "host hiccups (one run alone 1.8x, 10% of runs, unseen)": {"run_sd": 0.03, "hiccups": 0.10},
}
