"""Sequential rounds (`rounds: auto`) on simulated campaigns with a known truth, looked at after
every round as the runner looks: 1,000 campaigns per scenario (seeded, no process, no clock;
SIM_CAMPAIGNS sets the count). docs/statistics.md keeps the figures this prints
(`SIM_CAMPAIGNS=1000 nice -n 10 .venv/bin/python -m pytest -s tests/campaign/test_sequential_simulation.py`).

Two kinds: campaigns of run records (tests/noise_support.py's scenarios: log-normal, heavy tails,
drift, bursts, host spells, hiccups) through analysis.analyze, the rule with every guard, as the
runner and both checkers apply it; and per-round log ratios through tests/sequential_support.py's
numpy copy of the rule (held to analysis.analyze by tests/unit/test_sequential_rates.py) for the
figures that need many campaigns: the gate's question, a small change, every look's coverage, and
suites of 12 benchmarks. Beside each: the rule this one replaced (the t-mixture valid for ever, the
97.5% trimmed-t interval at the cap) on the same rounds, and the oracle (a fixed-sample t test told
the count). tests/unit/test_sequential_rates.py runs a reduced version of each."""
from __future__ import annotations

import math
import os
import statistics

import numpy as np
import pytest

from harness import contract as C, records
from harness import rules as R
from harness.comparison import analysis
from noise_support import SCENARIOS, campaign
import sequential_support as S

pytestmark = pytest.mark.untimed  # no process, no clock: `make test` runs it on every core

CAMPAIGNS = int(os.environ.get("SIM_CAMPAIGNS", 1000))
THRESHOLD = 0.02
FIRST, CAP = C.DEFAULT_FIRST_LOOK, 40


def sequential(runs: list, first: int, cap: int) -> tuple[str, list[float], int, list[float]]:
    """(verdict, interval, stopping round, every round's log ratio) of a campaign of `cap` rounds
    as the runner runs it: stopped at its first look that decides (a look over disturbed rounds
    only when its undisturbed rounds agree), else the verdict at the cap, which must hold without
    the disturbed rounds (analysis.with_interference)."""
    s = analysis.stats_of(runs, THRESHOLD, None, {"first": first, "cap": cap})
    d = s.rounds.log_ratios
    assert s.sequential is not None
    for row in s.sequential.looks:
        if row.verdict != "inconclusive":
            return row.verdict, row.ci95, row.round, d
    s = analysis.with_interference(s, runs, records.interference_bounds(None), THRESHOLD)
    return s.verdict, s.paired.ci95 or [0.0, math.inf], s.rounds.n, d


def scenario(kwargs: dict, ratio: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    kwargs = dict(kwargs)
    budget = kwargs.pop("budget_s", None)
    out = {"claims": 0, "improved": 0, "covered": 0, "stops": [], "before_improved": 0, "before_stops": []}
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
        before = S.run_before(np.array([d]), FIRST, cap)  # the rule this one replaced, on the same rounds
        out["before_improved"] += int(before.verdict[0] == S.VERDICT_CODES["improved"])
        out["before_stops"].append(int(before.stop[0]))
    return {k: (statistics.median(v) if isinstance(v, list) else v / CAMPAIGNS) for k, v in out.items()}


@pytest.mark.parametrize("name", SCENARIOS)
def test_sequential_rounds_hold_their_level_at_every_look(name):
    effect = scenario(SCENARIOS[name], 0.95, seed=31)
    same = scenario(SCENARIOS[name], 1.0, seed=32)
    print(f"\n| {name} | {same['claims']:.1%} | {same['covered']:.1%} | {effect['covered']:.1%} | "
          f"{effect['improved']:.1%} ({effect['before_improved']:.1%}) | {effect['stops']:g} "
          f"({effect['before_stops']:g}) | {same['stops']:g} |")
    assert same["claims"] <= 0.05
    assert same["covered"] >= 0.95 and effect["covered"] >= 0.95


@pytest.mark.parametrize("name", ["log-normal run noise 3%", "host hiccups (one run alone 1.8x, 10% of runs, unseen)"])
def test_a_larger_change_stops_when_the_signs_see_it(name):
    """A 1.12x change (ratio 1/1.12) on run records: where a host's stalls spoil the runs, the signs
    let a campaign stop before the cap; the interval it stops with must hold the truth."""
    ratio = 1 / 1.12
    effect = scenario(SCENARIOS[name], ratio, seed=33)
    print(f"\n| {name} | 1.12x: improved {effect['improved']:.1%} ({effect['before_improved']:.1%}), median stop "
          f"{effect['stops']:g} ({effect['before_stops']:g}), interval holds the truth {effect['covered']:.1%} |")
    assert effect["covered"] >= 0.95
    assert effect["stops"] <= effect["before_stops"]


# --- the figures, on per-round log ratios (tests/sequential_support.py) ------------------------
def test_the_gate_answers_not_slower_fast_and_rarely_for_a_slow_down():
    rng = np.random.default_rng(61)
    plan = R.design(FIRST, CAP, "not_slower")
    rows = []
    for effect in (1.0, 1.03, 1.08):
        d = S.normal_rounds(rng, CAMPAIGNS, CAP, effect, 0.05)
        out = S.run(d, plan, question="not_slower", margin=0.05, truth=math.log(effect))
        n, share = S.oracle(d, question="not_slower", margin=0.05, words=("not slower",))
        rows.append((effect, out))
        print(f"\n| gate (not slower than 5%), true {effect:g}x, spread 0.05 | not slower {out.rate('not slower'):.1%} | "
              f"regressed {out.rate('regressed'):.1%} | median stop {out.median_stop():g} | upper bound held at every "
              f"look {out.held_upper.mean():.1%} | oracle: {n} rounds ({share:.1%}) |")
    same, slower = rows[0][1], rows[2][1]
    assert same.median_stop() <= 10 and slower.rate("not slower") <= 0.05


def test_a_small_change_decides_in_twelve_rounds():
    rng = np.random.default_rng(62)
    for effect, spread in ((1 / 1.12, 0.1), (1 / 1.05, 0.03), (1 / 1.5, 0.1), (0.5, 0.1)):
        d = S.normal_rounds(rng, CAMPAIGNS, CAP, effect, spread)
        now = S.run(d, R.design(FIRST, CAP), truth=math.log(effect))
        before = S.run_before(d, FIRST, CAP, truth=math.log(effect))
        n, share = S.oracle(d)
        print(f"\n| {1 / effect:.3g}x faster, spread {spread:g} | improved {now.rate('improved'):.1%} "
              f"({before.rate('improved'):.1%}) | median stop {now.median_stop():g} ({before.median_stop():g}) | "
              f"interval at the stop holds the truth {np.mean((now.lo <= math.log(effect)) & (math.log(effect) <= now.hi)):.1%} | "
              f"oracle {n} rounds ({share:.1%}) |")
        if effect == 1 / 1.12:
            assert now.median_stop() <= 12 < before.median_stop()


@pytest.mark.parametrize("question,spread", [("claim", 0.05), ("claim", 0.1), ("not_slower", 0.05)])
def test_every_look_holds_the_truth_and_a_vs_a_claims_nothing(question, spread):
    rng = np.random.default_rng(63)
    many = S.normal_rounds(rng, 10 * CAMPAIGNS, CAP, 1.0, spread)  # coverage: ten times the campaigns, for its SE
    every = S.run(many, R.design(FIRST, CAP, question), band=0.0, through=True)
    d = many[:CAMPAIGNS]
    held = every.held if question == "claim" else every.held_upper
    margin = 0.05 if question != "claim" else None
    out = S.run(d, R.design(FIRST, CAP, question), question=question, margin=margin)
    before = S.run_before(many, FIRST, CAP, band=0.0) if question == "claim" else None
    print(f"\n| A-vs-A, {question}, spread {spread:g} | every look held the truth {held.mean():.1%}"
          + (f" (before: {before.held.mean():.1%})" if before is not None else "")
          + f" | false claims {out.rate('improved', 'regressed'):.1%} | answered {out.rate(*C.ANSWERS[question][:1]):.1%}"
          f" | median stop {out.median_stop():g} |")
    assert held.mean() >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / (10 * CAMPAIGNS))
    assert out.rate("improved", "regressed") <= 0.05


@pytest.mark.parametrize("label,effects,round_sd,item_sd,question", [
    ("2 faster (0.40, 0.70), 10 unchanged, spread 0.05", [0.40, 0.70] + [1.0] * 10, 0.04, 0.03, "claim"),
    ("12 unchanged, spread 0.05", [1.0] * 12, 0.04, 0.03, "claim"),
    ("2 faster, 10 unchanged, quiet (spread 0.01)", [0.40, 0.70] + [1.0] * 10, 0.008, 0.006, "claim"),
    ("1.1x slower, 1.1x faster, 10 unchanged, spread 0.05", [1.1, 1 / 1.1] + [1.0] * 10, 0.04, 0.03, "claim"),
    ("gate: 1 slower 1.2x, 11 unchanged, spread 0.05", [1.2] + [1.0] * 11, 0.04, 0.03, "not_slower"),
])
def test_a_suite_is_a_family_of_claims(label, effects, round_sd, item_sd, question):
    """1,000 suites of 12 benchmarks looked at after every round: each benchmark at alpha/12
    (Bonferroni), leaving the rounds once decided; the family-wise error (any benchmark's verdict
    false) within alpha; the rounds it costs beside one campaign per benchmark at the whole alpha
    (whose family-wise error is not bounded)."""
    rng = np.random.default_rng(64)
    margin = 0.05 if question != "claim" else None
    d = S.family(rng, CAMPAIGNS, CAP, effects, round_sd, item_sd)
    fam = S.run_family(d, FIRST, CAP, question=question, margin=margin, effects=effects)
    alone = S.run_family(d, FIRST, CAP, question=question, margin=margin, members_alpha=1, effects=effects)
    wrong = S.false_claims(fam.verdicts, effects)
    if question != "claim":  # a gate's false answer: "not slower" for a benchmark slower than the margin
        e = np.asarray(effects)[None, :]
        wrong = wrong | ((fam.verdicts == S.VERDICT_CODES["not slower"]) & (e > 1.05)).any(axis=1)
    wrong_alone = S.false_claims(alone.verdicts, effects)
    found = [float((fam.verdicts[:, j] != S.UNDECIDED).mean()) for j in range(len(effects))]
    separate = alone.decided_at.clip(min=1) + (alone.decided_at == 0) * (CAP - 1)
    print(f"\n| {label} | family-wise error {wrong.mean():.1%} (one campaign each at 5%: {wrong_alone.mean():.1%}) | "
          f"every benchmark's interval at its stop held its truth {fam.held.mean():.1%} ({alone.held.mean():.1%}) | "
          f"decided: changed {np.mean(found[:2]):.1%}, unchanged {np.mean(found[2:]):.1%} | median rounds "
          f"{np.median(fam.stop):g} (benchmark-rounds {np.median(fam.member_rounds):g}) | one campaign each: "
          f"{np.median(separate.sum(axis=1)):g} rounds |")
    assert wrong.mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / CAMPAIGNS)
    assert fam.held.mean() >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / CAMPAIGNS)


@pytest.mark.parametrize("first,cap,question,members,runs", [
    (4, 40, "claim", 1, 100_000), (3, 12, "claim", 1, 100_000), (4, 100, "claim", 1, 50_000),
    (4, 40, "not_slower", 1, 100_000), (4, 20, "claim", 12, 300_000), (3, 12, "claim", 12, 400_000),
    (4, 100, "claim", 12, 100_000), (4, 20, "claim", 100, 1_000_000), (4, 40, "not_slower", 12, 200_000)])
def test_the_design_holds_alpha_across_first_looks_caps_and_families(first, cap, question, members, runs):
    """Normal rounds, every look to the cap: the chance that any look's interval misses the centre
    (a one-sided question: its upper bound), as a share of the design's alpha; the t's spend
    (contract.SEQ_T_SPEND) is what keeps it below 1 where the t statistics' estimated spread
    alone would not."""
    plan = R.design(first, cap, question, members)
    rng = np.random.default_rng(65)
    missed = 0
    for done in range(0, runs, 100_000):
        out = S.run(rng.standard_normal((min(100_000, runs - done), cap)), plan, band=0.0, through=True)
        missed += int((~(out.held if question == "claim" else out.held_upper)).sum())
    share = missed / runs / plan.alpha
    print(f"\n| looks {first}..{cap}, {question}, alpha/{members} | any look missed: {share:.3f} of alpha "
          f"({missed} of {runs:,}) |")
    assert share <= 1 + 2 * math.sqrt(1 / (plan.alpha * runs))


@pytest.mark.parametrize("first,cap,alpha,sides,runs", [
    (4, 40, 0.04, 2, 200_000), (3, 10, 0.04, 2, 200_000), (8, 40, 0.04, 2, 200_000), (4, 40, 0.04, 1, 200_000),
    (4, 40, 0.04 / 12, 2, 600_000), (4, 100, 0.04 / 12, 2, 300_000), (4, 40, 0.0004, 2, 2_000_000),
    (3, 20, 0.0004, 2, 2_000_000)])
def test_the_t_alone_errs_more_often_than_the_walk_it_is_computed_for(first, cap, alpha, sides, runs):
    """Why the t's design spends SEQ_T_SPEND of its share: at the walk's level for alpha (a known
    spread), the t with its spread estimated at every look misses more often; the ratio printed."""
    level = R._above(R.walk_bound(first, cap, alpha, sides))
    rng = np.random.default_rng(66)
    missed = 0
    for done in range(0, runs, 100_000):
        d = rng.standard_normal((min(100_000, runs - done), cap))
        mean, sd = S._moments(d)
        miss = np.zeros(d.shape[0], dtype=bool)
        for n in range(first, cap + 1):
            half = R.t_quantile(1 - level, n - 1) * sd[:, n - 1] / math.sqrt(n)
            miss |= (np.abs(mean[:, n - 1]) if sides == 2 else mean[:, n - 1]) > half
        missed += int(miss.sum())
    ratio = missed / runs / alpha
    print(f"\n| looks {first}..{cap}, alpha {alpha:.2g}, {sides} side(s) | the t alone missed {ratio:.3f} times the walk's "
          f"alpha ({missed} of {runs:,}) |")
    assert 1.0 < ratio < 1 / (C.SEQ_T_SPEND_FAMILY if alpha < 0.01 else C.SEQ_T_SPEND)
