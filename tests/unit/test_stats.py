"""The statistics' maths against known answers (Student's t quantile and CDF, the trimmed-t
interval of harness/comparison/stats.py), the verdict rule of comparison.json `stats` on run
records (harness/comparison/analysis.py, re-derived by harness/rehash.py), and the verdict words
and exit codes (harness/outcomes.py). comparison/v2 (item bootstrap, Mann-Whitney) is gone with
the legacy bundles: only its successor is tested here."""
from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

import fakes
from fakes import run_record
from harness import rehash, records
from harness.bundle.model import Comparison
from harness.comparison import analysis, stats
from harness.contract import MIN_ROUNDS
from harness.outcomes import exit_code as verdict_exit_code, line as verdict_line
from harness.rehash import t_cdf, t_quantile


# ----------------------------------------------------------------------------- Student's t
@pytest.mark.parametrize("df, q", [  # published two-sided 95% critical values
    (1, 12.7062047362), (2, 4.3026527297), (4, 2.7764451052), (9, 2.2621571628), (19, 2.0930240544),
    (29, 2.0452296421), (99, 1.9842169516)])
def test_t_quantile_matches_tables(df, q):
    assert t_quantile(0.975, df) == pytest.approx(q, rel=1e-9)
    assert t_cdf(t_quantile(0.975, df), df) == pytest.approx(0.975, abs=1e-13)


def test_t_cdf_closed_forms():
    # df 1 is Cauchy, df 2 has t / sqrt(t^2 + 2) / 2 + 1/2
    for t in (-3.0, -0.5, 0.0, 0.7, 4.0):
        assert t_cdf(t, 1) == pytest.approx(0.5 + math.atan(t) / math.pi, abs=1e-13)
        assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(t * t + 2)), abs=1e-13)


def test_t_interval_by_hand():
    got = stats.t_interval([0.1, 0.3, 0.2, 0.4])
    sd = math.sqrt(((0.15 ** 2) * 2 + (0.05 ** 2) * 2) / 3)
    half = 3.182446305284263 * sd / 2
    assert got.mean == pytest.approx(0.25) and got.sd == pytest.approx(sd)
    assert got.ci == [pytest.approx(0.25 - half), pytest.approx(0.25 + half)]
    assert stats.t_interval([0.5]).ci is None


# ----------------------------------------------------------------------------- the trimmed-t interval
def test_trimmed_interval_by_hand():
    # n = 10 at 20%: g = 2 values cut from each end, h = 6 kept, the winsorized variance, t with 5 df
    values = [0.9, 0.1, 0.5, 0.3, 0.7, 0.2, 0.6, 0.4, 5.0, -3.0]
    got = stats.t_interval(values)
    x = sorted(values)
    kept = x[2:8]
    w = [x[2]] * 2 + kept + [x[7]] * 2
    wm = sum(w) / 10
    sw2 = sum((v - wm) ** 2 for v in w) / 9
    half = t_quantile(0.975, 5) * math.sqrt(9 * sw2 / (6 * 5))
    assert got.n == 10 and got.trimmed == 2
    assert got.mean == pytest.approx(sum(kept) / 6) and got.sd == pytest.approx(math.sqrt(sw2))
    assert got.q == pytest.approx(2.5705818366) and got.ci == [pytest.approx(got.mean - half),
                                                                     pytest.approx(got.mean + half)]


def test_one_wild_value_moves_the_trimmed_interval_little():
    calm = [0.01 * k for k in range(-5, 6)]
    wild = calm[:-1] + [40.0]
    a, b = stats.t_interval(calm), stats.t_interval(wild)
    assert abs(b.mean - a.mean) < 0.01 and (b.ci[1] - b.ci[0]) < 2 * (a.ci[1] - a.ci[0])


# ----------------------------------------------------------------------------- the verdict on run records
ITEMS = [0.010, 0.020, 0.030, 0.015, 0.025, 0.012, 0.018, 0.022]


def campaign_of(factors, walls=None, seed=1):
    """Rounds A_k, B_k: the candidate's items are ITEMS x factors[k] (each +-2% jitter); run walls
    the items' sum unless walls gives (base, candidate)."""
    rng = np.random.default_rng(seed)
    runs = []
    for k, factor in enumerate(factors, 1):
        for variant, f in (("base", 1.0), ("candidate", factor)):
            items = [w * f * float(rng.uniform(0.98, 1.02)) for w in ITEMS]
            wall = walls[variant == "candidate"] if walls else None
            runs.append(run_record(f"{'A' if variant == 'base' else 'B'}{k}", items, index=len(runs), wall_s=wall))
    return runs


def both(runs, threshold=0.02):
    """analysis.analyze, and rehash.py's own derivation of the same from the records' JSON."""
    got = analysis.analyze(runs, threshold)
    assert list(rehash.diff(got, rehash.derive_stats(records.to_json(runs), threshold, None))) == []
    return got


def test_improved_regressed_equal_inconclusive():
    s = both(campaign_of([0.8] * 6))
    assert s["verdict"] == "improved" and s["paired"]["items"] == len(ITEMS)
    assert s["paired"]["ci95"][1] < 0.98 and s["paired"]["geomean_ratio"] == pytest.approx(0.8, rel=0.02)
    assert "lies below the equal band" in s["verdict_reason"]
    s = both(campaign_of([1.25] * 6))
    assert s["verdict"] == "regressed" and "lies above the equal band" in s["verdict_reason"]
    s = both(campaign_of([1.0] * 6), threshold=0.05)
    assert s["verdict"] == "equal" and "lies inside the equal band" in s["verdict_reason"]
    s = both(campaign_of([0.9, 1.1, 0.95, 1.08, 0.97, 1.05]))
    assert s["verdict"] == "inconclusive" and "straddles" in s["verdict_reason"]


def test_too_few_rounds_make_no_claim():
    s = both(campaign_of([0.5] * (MIN_ROUNDS - 1)))
    assert s["verdict"] == "inconclusive" and s["paired"]["ci95"][1] < 0.6
    assert f"at least {MIN_ROUNDS} are needed" in s["verdict_reason"]


def test_the_headline_is_the_runners_wall_not_the_workers_items():
    # the items (the worker's word) say 20% faster, the runner timed the candidate's loops 30% longer:
    # the runner's walls decide; the per-item table still shows the worker's items
    s = both(campaign_of([0.8] * 6, walls=(1.0, 1.3)))
    assert s["verdict"] == "regressed" and s["paired"]["geomean_ratio"] == pytest.approx(1.3)
    assert s["paired"]["metric"] == "run wall_s" and "the run wall ratio (the runner's clock)" in s["verdict_reason"]
    assert s["per_item"]["worst"]["ratio"] == pytest.approx(0.8, rel=0.05)


def test_failed_runs_are_left_out_and_named():
    runs = campaign_of([0.8] * 6)
    runs[1] = dataclasses.replace(runs[1], status="failed", reason="exit 1", wall_s=None)  # B1
    s = both(runs)
    assert s["rounds"]["n"] == 5 and s["rounds"]["unpaired"] == ["A1"]
    assert "runs excluded (not ok or no wall time): B1" in s["warnings"]
    assert any("without a partner" in w and "A1" in w for w in s["warnings"])
    timed_out = [dataclasses.replace(r, status="timeout", reason="killed", wall_s=None) if r.variant == "candidate"
                 else r for r in runs]
    s = both(timed_out)
    assert s["verdict"] == "inconclusive" and s["verdict_reason"] == "no round with an ok run of both variants"
    assert s["paired"]["ci95"] is None


def test_error_items_are_left_out_of_the_pairing():
    runs = campaign_of([0.8] * 6)
    failed = dataclasses.replace(runs[2].items[0], fields={}, error={"type": "ValueError", "message": "x"})
    runs[2] = dataclasses.replace(runs[2], items=[failed, *runs[2].items[1:]])
    s = both(runs)
    assert s["paired"]["items"] == len(ITEMS) - 1 and s["paired"]["items_excluded"] == 1
    assert "1 item(s) left out of the per-item table (error or no positive wall_s in some ok run)" in s["warnings"]
    assert s["verdict"] == "improved"


# ----------------------------------------------------------------------------- exit codes
def comparison(verdict="improved", status="complete", identical=True, tolerance=None):
    """tolerance: {max_ulp, max_ulp_seen, fields_within} when the campaign declared parity.max_ulp
    and every mismatch lies within it (then the outputs agree without being identical)."""
    mismatch = {"run": "B1", "item": "x", "field": "out", "reason": "bytes differ"}
    return fakes.comparison(
        status=status, reason="worker B1 crashed" if status != "complete" else None,
        parity={"identical": identical, "agree": identical or tolerance is not None, "tolerance": tolerance,
                "mismatch_count": 0 if identical else 1, "mismatches": [] if identical else [mismatch]},
        wall={"base_mean_s": 1.0, "candidate_mean_s": 0.8, "saving_s": 0.2, "saving_pct": 20.0, "speedup": 1.25},
        stats={"verdict": verdict, "threshold": 0.02, "band": 0.02, "claim_band": 0.02, "floor": None,
               "rounds": {"n": 6}, "warnings": [],
               "paired": {"metric": "item wall_s", "geomean_ratio": 0.8, "ci95": [0.78, 0.82]}})


@pytest.mark.parametrize("kwargs,code,word", [
    ({"verdict": "improved"}, 0, "improved"),
    ({"verdict": "equal"}, 0, "equal"),
    ({"verdict": "regressed"}, 5, "regressed"),
    ({"verdict": "inconclusive"}, 6, "inconclusive"),
    ({"identical": False}, 3, "parity mismatch, timing improved"),
    ({"status": "failed"}, 4, "campaign failed"),
    ({"status": "failed", "identical": False}, 4, "campaign failed"),
    ({"verdict": "bogus"}, 2, "unusable"),
])
def test_verdict_exit_codes_and_line(kwargs, code, word):
    c = comparison(**kwargs)
    assert verdict_exit_code(c) == code
    line = verdict_line(c)
    assert line.startswith(f"verdict: {word} (exit {code})")
    assert "\n" not in line


def test_outputs_within_a_declared_tolerance_agree_but_are_never_identical():
    c = comparison(identical=False, tolerance={"max_ulp": 4, "max_ulp_seen": 1, "fields_within": 3,
                                               "over_bound": {}})
    assert verdict_exit_code(c) == 0
    line = verdict_line(c)
    assert line.startswith("verdict: improved (exit 0)")
    assert "outputs within 4 ULP (close, not identical: max seen 1 ULP, 3 field(s) not bit-identical)" in line
    assert "equal" not in line.replace("not identical", "").replace("not bit-identical", "")
    assert "identical" not in line.replace("not identical", "").replace("not bit-identical", "")


def test_outputs_zero_ulp_apart_are_equal_in_value_but_not_byte_identical():
    c = comparison(identical=False, tolerance={"max_ulp": 0, "max_ulp_seen": 0, "fields_within": 2,
                                               "over_bound": {}})
    line = verdict_line(c)
    assert "outputs equal in value, 0 ULP apart (2 field(s) differ only in NaN payloads or the sign of zero: " \
           "not byte-identical)" in line


def test_verdict_line_content():
    line = verdict_line(comparison())
    # one figure for the claim, the factor, with the ratio it is made from; the mean walls as context only
    assert line.startswith("verdict: improved (exit 0): 1.25x faster [1.22x, 1.28x] (candidate/base 0.8000 "
                           "[0.7800, 0.8200], ")
    assert "mean timed wall per run 1.000 s -> 0.800 s;" in line and "saving" not in line and "1.250x" not in line


def test_a_comparison_without_stats_is_no_comparison():
    # the readers take the model, built only from a document of the contract's shape
    doc = fakes.comparison_doc()
    del doc["stats"]
    with pytest.raises(KeyError):
        Comparison.of(doc)
    with pytest.raises(TypeError):
        Comparison.of([])
