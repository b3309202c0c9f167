"""Sequential rounds (`rounds: auto`) on simulated campaigns with a known truth, looked at after
every round as the runner looks: 1,000 campaigns per scenario of docs/statistics.md (seeded, no
process, no clock). A-vs-A must claim improved or regressed in at most 5% at whatever round it
stops, and the interval it stops with (or the cap's) must hold the true ratio in at least 95%.
Beside it, today's fixed-count rule (the 95% trimmed-t interval against the band) peeked the same
way, to show what looking after every round costs a rule that is not valid at every look.
`pytest -s tests/campaign/test_sequential_simulation.py` prints the measured rates
(docs/statistics.md keeps them)."""
from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from harness import contract as C, records
from harness.comparison import analysis
from harness.comparison.stats import t_interval
from noise_support import SCENARIOS, campaign

CAMPAIGNS = int(__import__("os").environ.get("SIM_CAMPAIGNS", 1000))
THRESHOLD = 0.02
FIRST, CAP = C.DEFAULT_FIRST_LOOK, 40


def sequential(runs: list, first: int, cap: int) -> tuple[str, list[float], int, list[float]]:
    """(verdict, interval, stopping round, every round's log ratio) of a campaign of `cap` rounds
    as the runner runs it: stopped at its first look that decides (a look over disturbed rounds
    only when its undisturbed rounds agree), else the verdict at the cap, which must hold without
    the disturbed rounds (analysis.with_interference)."""
    s = analysis.analyze(runs, THRESHOLD, None, {"first": first, "cap": cap})
    d = s["rounds"]["log_ratios"]
    for row in s["sequential"]["looks"]:
        if row["verdict"] != "inconclusive":
            return row["verdict"], row["ci95"], row["round"], d
    s = analysis.with_interference(s, runs, records.interference_bounds(None), THRESHOLD)
    return s["verdict"], s["paired"]["ci95"], s["rounds"]["n"], d


def peeked_fixed(d: list[float], first: int) -> str:
    """Today's fixed-count rule looked at after every round from the 5th: the first claim of its 95%
    trimmed-t interval against the band, else its verdict at the end."""
    verdict = "inconclusive"
    for k in range(max(first, C.MIN_ROUNDS), len(d) + 1):
        lo, hi = (math.exp(v) for v in t_interval(d[:k])["ci"])
        verdict = C.decide(lo, hi, THRESHOLD, None, "x")[0]
        if verdict in ("improved", "regressed"):
            return verdict
    return verdict


def scenario(kwargs: dict, ratio: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    kwargs = dict(kwargs)
    budget = kwargs.pop("budget_s", None)
    out = {"claims": 0, "improved": 0, "covered": 0, "stops": [], "peeked_claims": 0}
    for _ in range(CAMPAIGNS):
        if budget is not None:  # the cap from the first round's pace, as the runner sets it
            runs = campaign(rng, ratio=ratio, rounds=FIRST, budget_s=budget, **kwargs)
            cap = len(runs) // 2
        else:
            runs, cap = campaign(rng, ratio=ratio, rounds=CAP, **kwargs), CAP
        verdict, (lo, hi), stop, d = sequential(runs, FIRST, cap)
        out["claims"] += verdict in ("improved", "regressed")
        out["improved"] += verdict == "improved"
        out["covered"] += lo <= ratio <= hi
        out["stops"].append(stop)
        out["peeked_claims"] += peeked_fixed(d, FIRST) in ("improved", "regressed")
    return {k: (v / CAMPAIGNS if k != "stops" else statistics.median(v)) for k, v in out.items()}


@pytest.mark.parametrize("name", SCENARIOS)
def test_sequential_rounds_hold_their_level_at_every_look(name):
    effect = scenario(SCENARIOS[name], 0.95, seed=31)
    same = scenario(SCENARIOS[name], 1.0, seed=32)
    print(f"\n| {name} | {same['claims']:.1%} | {same['peeked_claims']:.1%} | {same['covered']:.1%} | "
          f"{effect['covered']:.1%} | {effect['improved']:.1%} | {effect['stops']:g} | {same['stops']:g} |")
    assert same["claims"] <= 0.05
    assert same["covered"] >= 0.95 and effect["covered"] >= 0.95
