"""`harness reproduce` measures instead of believing (issue 26, item 4): the re-run is the
measurement and the original the claim; the original's own interval has no say. On bundles the
fake launcher makes, in seconds."""
from __future__ import annotations

import math

import pytest

from fakes import Model, run_fake
from harness import records
from harness.bundle import read
from harness.judge import reproduce
from harness.selftest import tamper


def claim(ratio, ci, verdict):
    return records.Claim(ratio=ratio, ci95=ci, verdict=verdict, items=6)


@pytest.mark.parametrize("claimed, measured, word", [
    (claim(0.5, [0.48, 0.52], "improved"), claim(0.51, [0.49, 0.53], "improved"), "reproduced"),
    # the claim lies outside the re-run's interval even widened by the tolerance: contradicted
    (claim(1 / 2589, [1e-6, 1e-1], "improved"), claim(1 / 466, [1 / 480, 1 / 452], "improved"), "not reproduced"),
    # the original's width has no say: a claim with a wide interval is not held to it
    (claim(0.5, [0.01, 25.0], "improved"), claim(0.9, [0.88, 0.92], "improved"), "not reproduced"),
    # held, but the re-run is too wide to say improved itself
    (claim(0.9, [0.85, 0.95], "improved"), claim(0.95, [0.7, 1.3], "inconclusive"), "not contradicted"),
    # both conclusive and different words: contradicted, even within the tolerance
    (claim(0.97, [0.96, 0.975], "improved"), claim(0.99, [0.985, 0.995], "equal"), "not reproduced"),
    # the original concluded nothing: there is no claim to reproduce
    (claim(1.0, [0.9, 1.1], "inconclusive"), claim(1.0, [0.99, 1.01], "equal"), "not contradicted"),
    (claim(1.0, [0.99, 1.01], "equal"), claim(1.0, None, "inconclusive"), "not contradicted"),
])
def test_the_words_of_the_timing_judgment(claimed, measured, word):
    assert reproduce.judge_timing(claimed, measured).word == word


def _forge_walls(bundle, factors):
    """The candidate's runs made faster by a different factor in each round, every figure the
    checkers cross-check re-derived and re-sealed as a forger would (tamper.speed_up): both
    checkers pass it, and the interval is very wide."""
    tamper.speed_up(factors)(bundle)
    tamper.rederive(bundle)
    tamper.reseal(bundle)
    for check in tamper.baseline(bundle):
        assert check.exit_code == 0, check.lines


def test_a_claim_the_rerun_contradicts_is_not_reproduced_whatever_its_own_interval(tmp_path):
    original, _ = run_fake(tmp_path / "a", Model(ratio=0.5, seed=1))
    _forge_walls(original.out, [100.0, 3000.0, 30.0, 9000.0, 400.0, 5.0])
    forged = read.load(original.out)
    lo, hi = forged.comparison.stats.paired.ci95
    assert hi / lo > 1000  # the author's door is wide open
    rerun, _ = run_fake(tmp_path / "b", Model(ratio=0.5, seed=2))
    receipt = records.to_json(reproduce.receipt(forged, read.load(rerun.out)))
    assert receipt["verdict"] == "not reproduced", receipt["reason"]
    assert "excludes the claimed ratio" in receipt["reason"]


def test_the_same_claim_remeasured_is_reproduced(tmp_path):
    original, _ = run_fake(tmp_path / "a", Model(ratio=0.5, noise=0.01, seed=1))
    rerun, _ = run_fake(tmp_path / "b", Model(ratio=0.5, noise=0.01, seed=2))
    receipt = records.to_json(reproduce.receipt(read.load(original.out), read.load(rerun.out)))
    assert receipt["verdict"] == "reproduced", receipt["reason"]
    assert receipt["scope"]["same_items"] and receipt["original"]["digest"] == original.digest
    # read through its type and written again: itself, key for key and in its order
    import json

    again = records.to_json(records.ReproductionReceipt.from_json(json.loads(json.dumps(receipt))))
    assert json.dumps(again) == json.dumps(receipt)


def test_bundles_that_do_not_cover_the_same_items_are_partial(tmp_path):
    # the original's plan forged to 3 of the 6 items (consistently: runs, runner.json, comparison)
    original, _ = run_fake(tmp_path / "a", Model(ratio=0.5, items=3, seed=1))
    rerun, _ = run_fake(tmp_path / "b", Model(ratio=0.5, items=6, seed=2))
    receipt = records.to_json(reproduce.receipt(read.load(original.out), read.load(rerun.out)))
    assert receipt["verdict"] == "partial", receipt["reason"]
    assert "3 item(s) the original did not run" in receipt["scope"]["note"]
    assert not math.isnan(receipt["timing"]["held_to"]["ratio"])


def test_fewer_rounds_than_the_original_is_stated_as_a_fact(tmp_path):
    original, _ = run_fake(tmp_path / "a", Model(ratio=0.5, noise=0.01, seed=1), rounds=8)
    rerun, _ = run_fake(tmp_path / "b", Model(ratio=0.5, noise=0.01, seed=2), rounds=5)
    receipt = records.to_json(reproduce.receipt(read.load(original.out), read.load(rerun.out)))
    assert receipt["scope"]["note"] == "the same 6 items; 5 rounds against the original's 8"
    assert receipt["verdict"] == "reproduced"
