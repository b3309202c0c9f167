"""The interval holds run-to-run variance: 1,000 simulated campaigns per scenario (seeded, no
process, no clock) with a known true ratio. The nominal 95% interval must hold the truth in
at least 93% of them, and an A-vs-A campaign must claim improved or regressed in at most 5%.
The campaigns are typed run records (tests/noise_support.py); rehash.py re-derives their stats
from the records' JSON. `pytest -s tests/unit/test_noise_simulation.py` prints the measured rates."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fakes import with_machine
from harness import rehash, records
from harness.comparison import analysis
from noise_support import SCENARIOS, campaign

pytestmark = pytest.mark.untimed  # no process, no clock: `make test` runs it on every core

CAMPAIGNS = 1000
THRESHOLD = 0.02


def rates(kwargs: dict, ratio: float, seed: int) -> tuple[float, float, float]:
    """(coverage of the true ratio, share of claims, share called improved) over CAMPAIGNS."""
    rng = np.random.default_rng(seed)
    covered = claims = improved = 0
    for _ in range(CAMPAIGNS):
        s = analysis.analyze(campaign(rng, ratio=ratio, **kwargs), THRESHOLD)
        lo, hi = s["paired"]["ci95"]
        covered += lo <= ratio <= hi
        claims += s["verdict"] in ("improved", "regressed")
        improved += s["verdict"] == "improved"
    return covered / CAMPAIGNS, claims / CAMPAIGNS, improved / CAMPAIGNS


@pytest.mark.parametrize("name", SCENARIOS)
def test_coverage_and_a_vs_a_false_claims(name):
    kwargs = SCENARIOS[name]
    coverage, _, detected = rates(kwargs, 0.95, seed=17)
    aa_coverage, false_claims, _ = rates(kwargs, 1.0, seed=18)
    print(f"\n{name}: true ratio 0.95 covered {coverage:.1%}, detected (improved) {detected:.1%}; "
          f"A-vs-A covered {aa_coverage:.1%}, false claims {false_claims:.1%}")
    assert coverage >= 0.93 and aa_coverage >= 0.93
    assert false_claims <= 0.05


@pytest.mark.parametrize("load", [0.2, 0.5])
def test_under_load_the_verdict_holds_the_quiet_truth_or_makes_no_claim(load):
    """Another job slows a share of the runs 1.2-2x, and their records show it (PSI): a
    claim must then clear the rounds' noise. Whatever the verdict says holds the truth:
    A-vs-A claims nothing in at least 95%, and a claimed ratio's interval holds 0.95."""
    rng = np.random.default_rng(23)
    aa_claims = wrong = improved = 0
    for _ in range(CAMPAIGNS // 2):
        aa = analysis.analyze(campaign(rng, ratio=1.0, load=load), THRESHOLD)
        aa_claims += aa["verdict"] in ("improved", "regressed")
        fx = analysis.analyze(campaign(rng, ratio=0.95, load=load), THRESHOLD)
        lo, hi = fx["paired"]["ci95"]
        wrong += fx["verdict"] in ("improved", "regressed") and not lo <= 0.95 <= hi
        improved += fx["verdict"] == "improved"
    n = CAMPAIGNS // 2
    print(f"\nload {load:.0%} of runs: A-vs-A false claims {aa_claims / n:.1%}; a 5% effect called improved "
          f"{improved / n:.1%}, a claim whose interval misses the truth {wrong / n:.1%}")
    assert aa_claims / n <= 0.05 and wrong / n <= 0.05


def test_rehash_rederives_every_simulated_campaign():
    """The reviewer's script and the harness give the same stats on campaigns of every shape."""
    rng = np.random.default_rng(99)
    shapes = [dict(SCENARIOS[name]) for name in SCENARIOS]
    for k in range(40):
        kwargs = shapes[k % len(shapes)]
        runs = campaign(rng, ratio=float(rng.choice([0.9, 1.0, 1.04])), rounds=int(rng.integers(2, 12)), **kwargs)
        if k % 7 == 0:  # overloaded (PSI: runnable work waited half the loop): the band widens
            runs[-1] = with_machine(runs[-1], cpu_stall_s=0.5 * runs[-1].wall_s)
        if k % 5 == 0:
            failed = dataclasses.replace(runs[1].items[2], fields={}, error={"type": "E", "message": "m"})
            runs[1] = dataclasses.replace(runs[1], items=[*runs[1].items[:2], failed, *runs[1].items[3:]])
        want = analysis.analyze(runs, THRESHOLD)
        assert (runs[-1].label in want["load"]["overloaded"]) == (k % 7 == 0), k
        got = rehash.derive_stats(records.to_json(runs), THRESHOLD, None)
        assert list(rehash.diff(want, got)) == [], k
