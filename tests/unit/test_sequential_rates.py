"""The sequential rule's error rates and stopping rounds on simulated campaigns, reduced to run in
seconds: each figure docs/statistics.md gives at 1,000 campaigns (tests/campaign/
test_sequential_simulation.py makes them; `SIM_CAMPAIGNS=1000 pytest -s` there) measured here on
fewer, seeded, and held to its bound with room for the smaller count (two standard errors).

The simulator (tests/sequential_support.py, numpy over many campaigns at once) is first held to the
rule's own code: on campaigns of run records, analysis.analyze's looks and its stop agree."""
from __future__ import annotations

import math

import numpy as np
import pytest

from harness import contract as C, records
from harness import rules as R
from harness.comparison import analysis
from noise_support import campaign
import sequential_support as S

N = 300  # campaigns per scenario here (1,000 in the campaign tier)
CAP = 40


def within(rate: float, bound: float, n: int = N, above: bool = False) -> bool:
    """rate is within bound, give or take two standard errors of a rate measured on n campaigns."""
    se = math.sqrt(max(bound * (1 - bound), 1e-4) / n)
    return rate >= bound - 2 * se if above else rate <= bound + 2 * se


@pytest.mark.parametrize("ratio,question", [(0.95, "claim"), (1.0, "claim"), (1.0, "not_slower"),
                                            (1 / 1.12, "claim")])
def test_the_simulator_stops_where_the_rule_itself_stops(ratio, question):
    """analysis.analyze (the runner's and the checkers' rule) and the vectorised copy, on the same
    rounds: the same word, and the same stopping round but where a guard the copy leaves out (a
    drift flagged at a look widens the band a claim must clear) held analysis back a few rounds."""
    rng = np.random.default_rng(41)
    margin = 0.05 if question != "claim" else None
    same = 0
    for _ in range(12):
        runs = campaign(rng, ratio=ratio, rounds=30, run_sd=0.04)
        s = analysis.analyze(runs, 0.02, None, {"first": 4, "cap": 30}, question=question, margin=margin)
        decided = next((row for row in s["sequential"]["looks"] if row["verdict"] != "inconclusive"), None)
        d = np.array([s["rounds"]["log_ratios"]])
        got = S.run(d, R.design(4, 30, question), 0.02, question, margin)
        want_stop = decided["round"] if decided else 30
        want_word = decided["verdict"] if decided else s["sequential"]["looks"][-1]["verdict"]
        assert C.VERDICTS[got.verdict[0]] == want_word and got.stop[0] <= want_stop
        same += int(got.stop[0]) == want_stop
    assert same >= 10


@pytest.mark.parametrize("cap", [8, 30])
def test_the_simulator_stops_for_a_precision_where_the_rule_itself_stops(cap):
    """`precision: 0.10` on an AR-like change (25x, per-round spread about 0.12): the same stopping
    round and word as analysis.analyze, each campaign cut where the runner would stop it (a cap of 8
    ends some imprecise, keeping the first decided word; one of 30 lets most reach the precision)."""
    rng = np.random.default_rng(43)
    kinds = set()
    for _ in range(12):
        runs = campaign(rng, ratio=0.04, rounds=cap, run_sd=0.085)
        s = analysis.analyze(runs, 0.02, None, {"first": 4, "cap": cap, "precision": 0.10})
        looks = s["sequential"]["looks"]
        ended = next((row for row in looks if R.ends(row["verdict"], row["precise"])), None)
        stop = ended["round"] if ended else cap
        got = S.run(np.array([s["rounds"]["log_ratios"]]), R.design(4, cap), precision=0.10)
        ran = analysis.analyze(runs[:2 * stop], 0.02, None, {"first": 4, "cap": cap, "precision": 0.10})
        assert got.stop[0] == stop and C.VERDICTS[got.verdict[0]] == ran["verdict"]
        assert bool(got.imprecise[0]) == (ran["sequential"]["stopped"] == "imprecise")
        kinds.add(ran["sequential"]["stopped"])
    assert ("imprecise" if cap == 8 else "decided") in kinds


def test_a_gate_answers_an_a_vs_a_within_ten_rounds_and_a_slow_down_rarely():
    """verdict: {question: not_slower, margin: 0.05}: an A-vs-A at per-round spread 0.05 answers
    "not slower than 5%" in a median of at most 10 rounds; a true 1.08x slow-down gets that answer
    in at most 5% of campaigns."""
    rng = np.random.default_rng(51)
    plan = R.design(4, CAP, "not_slower")
    same = S.run(S.normal_rounds(rng, N, CAP, 1.0, 0.05), plan, question="not_slower", margin=0.05)
    slower = S.run(S.normal_rounds(rng, N, CAP, 1.08, 0.05), plan, question="not_slower", margin=0.05,
                   truth=math.log(1.08))
    assert same.median_stop() <= 10 and same.rate("not slower") >= 0.95
    assert within(slower.rate("not slower"), 0.05)


def test_a_small_change_is_decided_in_twelve_rounds_where_the_old_rule_took_twenty():
    rng = np.random.default_rng(52)
    d = S.normal_rounds(rng, N, CAP, 1 / 1.12, 0.1)
    now, before = S.run(d, R.design(4, CAP), truth=-math.log(1.12)), S.run_before(d, 4, CAP)
    assert now.median_stop() <= 12 < before.median_stop()
    assert now.rate("improved") >= 0.95
    n, _ = S.oracle(d)
    assert n < now.median_stop()  # told the count, a fixed-sample test needs fewer: the price of looking


@pytest.mark.parametrize("question", ["claim", "not_slower"])
def test_every_look_holds_the_truth_together_and_a_vs_a_makes_no_false_claim(question):
    """Looked at after every round to the cap, the intervals of all looks hold the truth at once in
    at least 95% (a one-sided question: each bound on its own side); with the 2% band an A-vs-A
    claims improved or regressed in at most 5%."""
    rng = np.random.default_rng(53)
    d = S.normal_rounds(rng, N * 4, CAP, 1.0, 0.1)
    every = S.run(d, R.design(4, CAP, question), band=0.0, through=True)
    held = every.held if question == "claim" else every.held_upper
    assert within(float(held.mean()), 0.95, N * 4, above=True)
    claims = S.run(d, R.design(4, CAP, question), band=0.02, question=question,
                   margin=0.05 if question != "claim" else None)
    assert claims.rate("improved", "regressed") <= 0.05


@pytest.mark.parametrize("first,cap,question,members", [(3, 12, "claim", 1), (4, 40, "not_slower", 1),
                                                        (4, 20, "claim", 12)])
def test_the_t_and_the_signs_together_stay_within_alpha(first, cap, question, members):
    """The design's pair on normal rounds (the t's level is the walk's with a known spread, spent
    at SEQ_T_SPEND of its share; the signs' exact): the chance that any look misses the centre."""
    plan = R.design(first, cap, question, members)
    rng = np.random.default_rng(54)
    runs = 30_000 if members == 1 else 60_000
    out = S.run(rng.standard_normal((runs, cap)), plan, band=0.0, through=True)
    held = out.held if question == "claim" else out.held_upper
    assert within(1 - float(held.mean()), plan.alpha, runs)


def test_a_suite_family_names_its_changed_benchmarks_and_keeps_its_family_wise_error():
    """12 benchmarks, two of them faster (0.40 and 0.70), the rest unchanged, per-round spread 0.05
    (0.04 of it the round's, shared): both changed ones are found in every family, no family claims
    a change it does not have beyond 5%, and they leave after a few rounds."""
    rng = np.random.default_rng(55)
    effects = [0.40, 0.70] + [1.0] * 10
    d = S.family(rng, N, CAP, effects, 0.04, 0.03)
    out = S.run_family(d, 4, CAP)
    improved = out.verdicts == S.VERDICT_CODES["improved"]
    assert improved[:, :2].all() and np.median(out.decided_at[:, :2]) <= 5
    assert within(float(S.false_claims(out.verdicts, effects).mean()), 0.05)
    alone = S.run_family(d, 4, CAP, members_alpha=1)  # each benchmark its own campaign at the whole alpha
    assert S.false_claims(alone.verdicts, effects).mean() >= S.false_claims(out.verdicts, effects).mean()


def test_a_family_runs_fewer_processes_than_a_campaign_per_benchmark():
    """On a quiet machine (spread 0.01) the unchanged benchmarks decide "equal" too: the family stops
    once all have, each round timing only the undecided ones."""
    rng = np.random.default_rng(56)
    effects = [0.40, 0.70] + [1.0] * 10
    d = S.family(rng, N, CAP, effects, 0.008, 0.006)
    out = S.run_family(d, 4, CAP)
    alone = S.run_family(d, 4, CAP, members_alpha=1)
    assert np.median(out.stop) < CAP
    separate_rounds = np.where(alone.decided_at > 0, alone.decided_at, CAP).sum(axis=1)  # one campaign each
    assert np.median(out.stop) < np.median(separate_rounds)
    assert (out.member_rounds >= out.stop).all()


def test_the_scenarios_of_run_records_keep_their_level():
    """A-vs-A campaigns of run records under today's scenarios (log-normal, hiccups, drift), through
    analysis.analyze as the runner looks: no more than 5% claim."""
    rng = np.random.default_rng(57)
    for kwargs in ({"run_sd": 0.03}, {"run_sd": 0.03, "hiccups": 0.10}, {"run_sd": 0.02, "drift": 0.20}):
        claims = 0
        for _ in range(40):
            runs = campaign(rng, ratio=1.0, rounds=20, **kwargs)
            s = analysis.stats_of(runs, 0.02, None, {"first": 4, "cap": 20})
            decided = next((row for row in s.sequential.looks if row.verdict != "inconclusive"), None)
            if decided is None:
                s = analysis.with_interference(s, runs, records.interference_bounds(None), 0.02)
                claims += s.verdict in ("improved", "regressed")
            else:
                claims += decided.verdict in ("improved", "regressed")
        assert claims <= 2, kwargs
