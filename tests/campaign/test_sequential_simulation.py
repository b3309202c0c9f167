"""Sequential rounds (`rounds: auto`) on simulated campaigns with a known truth, looked at after
every round as the runner looks: 1,000 campaigns per scenario of docs/statistics.md (seeded, no
process, no clock). A-vs-A must claim improved or regressed in at most 5% at whatever round it
stops, and the interval it stops with (or the cap's) must hold the true ratio in at least 95%.
Beside it, today's fixed-count rule (the 95% trimmed-t interval against the band) peeked the same
way, to show what looking after every round costs a rule that is not valid at every look, and
in brackets the t-mixture alone (the rule before the signs joined it) on the same rounds.
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


def t_mixture_alone(runs: list, first: int, cap: int) -> tuple[str, int]:
    """The rule before the signs joined it, on the same campaign: the t-mixture alone at the whole
    SEQ_ALPHA at every look (the cap's interval unchanged); (its verdict, its stopping round)."""
    def t_ratio(values):
        cs = C.t_sequence(values, C.SEQ_ALPHA)
        return None if cs is None else [C.sig10(math.exp(cs[0])), C.sig10(math.exp(cs[1]))]

    saved, analysis.sequence_ratio = analysis.sequence_ratio, t_ratio
    try:
        verdict, _, stop, _ = sequential(runs, first, cap)
    finally:
        analysis.sequence_ratio = saved
    return verdict, stop


def scenario(kwargs: dict, ratio: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    kwargs = dict(kwargs)
    budget = kwargs.pop("budget_s", None)
    out = {"claims": 0, "improved": 0, "covered": 0, "stops": [], "peeked_claims": 0, "t_improved": 0,
           "t_stops": []}
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
        t_verdict, t_stop = t_mixture_alone(runs, FIRST, cap)
        out["t_improved"] += t_verdict == "improved"
        out["t_stops"].append(t_stop)
    return {k: (statistics.median(v) if isinstance(v, list) else v / CAMPAIGNS) for k, v in out.items()}


@pytest.mark.parametrize("name", SCENARIOS)
def test_sequential_rounds_hold_their_level_at_every_look(name):
    effect = scenario(SCENARIOS[name], 0.95, seed=31)
    same = scenario(SCENARIOS[name], 1.0, seed=32)
    print(f"\n| {name} | {same['claims']:.1%} | {same['peeked_claims']:.1%} | {same['covered']:.1%} | "
          f"{effect['covered']:.1%} | {effect['improved']:.1%} ({effect['t_improved']:.1%}) | {effect['stops']:g} "
          f"({effect['t_stops']:g}) | {same['stops']:g} |")
    assert same["claims"] <= 0.05
    assert same["covered"] >= 0.95 and effect["covered"] >= 0.95


@pytest.mark.parametrize("name", ["log-normal run noise 3%", "host hiccups (one run alone 1.8x, 10% of runs, unseen)"])
def test_a_larger_change_stops_when_the_signs_see_it(name):
    """A 1.12x change (ratio 1/1.12): the sign sequence lets a campaign whose runs a host's stalls
    spoil stop when the signs decide, where the t-mixture alone waits for the cap; on clean noise
    the pair costs at most a round. The interval it stops with must hold the truth."""
    ratio = 1 / 1.12
    effect = scenario(SCENARIOS[name], ratio, seed=33)
    print(f"\n| {name} | 1.12x: improved {effect['improved']:.1%} ({effect['t_improved']:.1%}), median stop "
          f"{effect['stops']:g} ({effect['t_stops']:g}), interval holds the truth {effect['covered']:.1%} |")
    assert effect["covered"] >= 0.95
    assert effect["stops"] <= effect["t_stops"] + 1
