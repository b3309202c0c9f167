"""`precision: p` on simulated campaigns with a known truth (seeded, no process, no clock): stopping
later for precision keeps the interval's coverage at the stop (every look's interval is valid
whichever look stops the campaign, so a stop chosen by the data, precision included, keeps it), and
the rounds an AR-like change (the committed seed bundles' 17-28x, per-round log spread 0.10-0.13)
needs for +-10% at the caps a budget gives. docs/statistics.md ("Precision") keeps the figures this
prints: `SIM_CAMPAIGNS=1000 nice -n 10 .venv/bin/python -m pytest -s tests/campaign/test_precision_simulation.py`.

Two kinds, as in test_sequential_simulation.py: per-round log ratios through
tests/sequential_support.py's numpy copy of the rule (held to analysis.analyze with a precision by
tests/unit/test_sequential_rates.py) for 1,000 campaigns a scenario, beside the oracle (a
fixed-sample t told the count that gives +-10% in half the campaigns); and campaigns of run records
(tests/noise_support.py) through analysis.stats_of, the rule with every guard, each stopped where
the runner stops it, fewer of them (SIM_RECORD_CAMPAIGNS, 200)."""
from __future__ import annotations

import math
import os
import statistics

import numpy as np
import pytest

from harness import rules as R
from harness.comparison import analysis
from noise_support import campaign
import sequential_support as S

pytestmark = pytest.mark.untimed  # no process, no clock

CAMPAIGNS = int(os.environ.get("SIM_CAMPAIGNS", 1000))
RECORD_CAMPAIGNS = int(os.environ.get("SIM_RECORD_CAMPAIGNS", 200))
EFFECT = 0.04  # 25x: the AR loop's seed bundles read 0.031-0.036
PRECISION = 0.10


def oracle_rounds(d: np.ndarray, precision: float) -> int:
    """The fewest rounds n at which a fixed-sample 95% t interval, told n in advance, lies within
    log(1 + precision) of the mean in at least half the campaigns."""
    mean_sd = S._moments(d)[1]
    for n in range(3, d.shape[1] + 1):
        half = R.t_quantile(0.975, n - 1) * mean_sd[:, n - 1] / math.sqrt(n)
        if float((half <= math.log1p(precision)).mean()) >= 0.5:
            return n
    return d.shape[1] + 1


def rounds_of(rng: np.random.Generator, spread: float, cap: int, tails: bool) -> np.ndarray:
    """Per-round log ratios of an AR-like change: normal noise of sd `spread`, or t(3) scaled to it."""
    noise = rng.standard_t(3, (CAMPAIGNS, cap)) / math.sqrt(3.0) if tails else rng.standard_normal((CAMPAIGNS, cap))
    return math.log(EFFECT) + spread * noise


@pytest.mark.parametrize("spread, tails", [(0.10, False), (0.13, False), (0.10, True)])
@pytest.mark.parametrize("cap", [12, 20, 30, 40])
def test_stopping_later_for_precision_keeps_the_coverage_at_the_stop(spread, tails, cap):
    rng = np.random.default_rng(4800 + int(1000 * spread) + cap + 7 * tails)
    d = rounds_of(rng, spread, cap, tails)
    truth = math.log(EFFECT)
    plan = R.design(4, cap)
    out = S.run(d, plan, truth=truth, precision=PRECISION)
    plain = S.run(d, plan, truth=truth)
    covered = float(((out.lo <= truth) & (out.hi >= truth)).mean())
    reached = 1.0 - float(out.imprecise.mean())
    width = np.exp(out.hi - out.lo)
    print(f"\n| {spread:g}{' (t3)' if tails else ''} | {cap} | {statistics.median(out.stop.tolist()):g} | "
          f"{reached:.1%} | {covered:.1%} | {float(np.median(width)):.3f} | "
          f"{statistics.median(plain.stop.tolist()):g} | {float(((plain.lo <= truth) & (plain.hi >= truth)).mean()):.1%} "
          f"| {float(np.median(np.exp(plain.hi - plain.lo))):.2f} | {oracle_rounds(d, PRECISION)} |")
    assert covered >= 0.95 and out.held.mean() >= 0.95  # at the stop, and at every look up to it
    assert out.rate("improved") == 1.0  # decided, precise or not: the word is kept
    assert (out.stop >= plain.stop).all()  # never earlier than without a precision
    precise = ~out.imprecise
    assert (np.exp(out.hi - out.lo)[precise] <= (1 + PRECISION) ** 2 + 1e-9).all()


def test_the_median_rounds_to_ten_percent_for_an_ar_like_spread():
    """The budget a seed bundle needs: at a per-round spread of 0.10 (the attention and the
    reproduced markov bundles read 0.10-0.13), +-10% in a median of at most 13 rounds with a cap of
    20, every campaign there within its cap at a cap of 30; at 0.13, a cap of 30."""
    rng = np.random.default_rng(4801)
    truth = math.log(EFFECT)
    for spread, cap, median_at_most, reached_at_least in ((0.10, 20, 13, 0.97), (0.10, 30, 13, 0.995),
                                                          (0.13, 30, 19, 0.97)):
        d = math.log(EFFECT) + spread * rng.standard_normal((CAMPAIGNS, cap))
        out = S.run(d, R.design(4, cap), truth=truth, precision=PRECISION)
        assert statistics.median(out.stop.tolist()) <= median_at_most, (spread, cap)
        assert 1.0 - float(out.imprecise.mean()) >= reached_at_least, (spread, cap)


@pytest.mark.parametrize("name, kwargs", [("AR-like, log-normal runs", {"run_sd": 0.085}),
                                          ("AR-like, one run in ten 1.8x slower (unseen)",
                                           {"run_sd": 0.07, "hiccups": 0.10})])
def test_campaigns_of_run_records_stopped_where_the_runner_stops(name, kwargs):
    """Run records through analysis.stats_of with every guard (the run-level ratio, load, drift),
    each campaign cut at the look that ends it, as the runner cuts it: the interval at the stop
    holds the truth in at least 95%, and the word is always the truth's (improved)."""
    rng = np.random.default_rng(4802)
    cap = 30
    stops, covered, reached, improved, spreads = [], 0, 0, 0, []
    for _ in range(RECORD_CAMPAIGNS):
        runs = campaign(rng, ratio=EFFECT, rounds=cap, **kwargs)
        plan = {"first": 4, "cap": cap, "precision": PRECISION}
        looks = analysis.stats_of(runs, 0.02, None, plan).sequential.looks
        stop = next((row.round for row in looks if R.ends(row.verdict, row.precise)), cap)
        s = analysis.stats_of(runs[:2 * stop], 0.02, None, plan)
        lo, hi = s.paired.ci95
        stops.append(stop)
        covered += lo <= EFFECT <= hi
        reached += s.sequential.stopped == "decided"
        improved += s.verdict == "improved"
        spreads.append(statistics.stdev(s.rounds.log_ratios))
    n = RECORD_CAMPAIGNS
    print(f"\n| {name} | {statistics.median(spreads):.3f} | {cap} | {statistics.median(stops):g} | {reached / n:.1%} | "
          f"{covered / n:.1%} | {improved / n:.1%} |")
    assert covered / n >= 0.95 and improved == n
