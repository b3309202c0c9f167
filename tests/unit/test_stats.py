"""harness.stats against known answers: exact and normal U, a fixed-seed bootstrap, Student's t;
comparison/v2's analysis (harness.legacy, still used to verify the bundles written under it);
the verdict words and exit codes (harness.verdict)."""
from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.comparison import stats
from harness.comparison.legacy import analyze_v2 as analyze
from harness.rehash import t_cdf, t_quantile
from harness.comparison.stats import mann_whitney
from harness.outcomes import exit_code as verdict_exit_code, line as verdict_line


# ----------------------------------------------------------------------------- helpers
def run(label, variant, wall, items=None, status="ok", index=0):
    return {"label": label, "variant": variant, "index": index, "status": status,
            "wall_s": wall,
            "items": [{"id": f"i{k}", "wall_s": w, "cpu_s": w, "error": None}
                      for k, w in enumerate(items or [])]}


def abba(base_items, cand_items, walls=(1.0, 0.8, 0.8, 1.0)):
    a1, b1, b2, a2 = walls
    return [run("A1", "base", a1, base_items, index=0),
            run("B1", "candidate", b1, cand_items, index=1),
            run("B2", "candidate", b2, cand_items, index=2),
            run("A2", "base", a2, base_items, index=3)]


def brute_u_p(x, y):
    """Two-sided permutation p by brute force over every split of the pooled values."""
    pooled = list(x) + list(y)
    n1, n2 = len(x), len(y)

    def u_of(a, b):
        return sum((ai > bj) + 0.5 * (ai == bj) for ai in a for bj in b)

    u = u_of(x, y)
    mu = n1 * n2 / 2
    hits = total = 0
    for combo in itertools.combinations(range(n1 + n2), n1):
        a = [pooled[j] for j in combo]
        b = [pooled[j] for j in range(n1 + n2) if j not in combo]
        total += 1
        hits += abs(u_of(a, b) - mu) >= abs(u - mu) - 1e-12
    return u, min(1.0, hits / total)


# ----------------------------------------------------------------------------- Mann-Whitney
def test_u_distribution_counts_hand_computed():
    assert stats._u_counts(2, 2) == [1, 1, 2, 1, 1]
    # partitions of u into at most 4 parts each <= 5: 1, 1, 2, 3, 5, ...; total C(9,4)=126
    assert stats._u_counts(5, 4)[:5] == [1, 1, 2, 3, 5]
    assert sum(stats._u_counts(5, 4)) == math.comb(9, 4)
    assert stats._u_counts(3, 7) == stats._u_counts(7, 3)


def test_abba_smallest_p_is_one_third_and_says_too_few():
    res = mann_whitney([1.0, 1.1], [0.8, 0.81])
    assert res["u"] == 4.0
    assert res["p"] == pytest.approx(1 / 3)
    assert res["min_p"] == pytest.approx(1 / 3)
    assert res["enough"] is False
    assert "too few runs to conclude" in res["warning"]
    assert "0.333" in res["warning"]


def test_scipy_documented_example_exact_and_normal():
    # scipy.stats.mannwhitneyu docs: males vs females, U1 = 17,
    # exact p = 0.1111111111111111, asymptotic p = 0.11134688653314041.
    males, females = [19, 22, 16, 29, 24], [20, 11, 17, 12]
    ex = mann_whitney(males, females, method="exact")
    assert ex["u"] == 17.0
    assert ex["p"] == pytest.approx(14 / 126, abs=1e-15)  # 2 * 7 / C(9, 4), by hand
    nm = mann_whitney(males, females, method="normal")
    assert nm["p"] == pytest.approx(0.11134688653314041, rel=1e-12)
    assert mann_whitney(males, females)["method"] == "exact"


def test_fully_separated_samples_hand_computed():
    res = mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert res["u"] == 0.0
    assert res["p"] == pytest.approx(2 / 252)
    assert res["enough"] is True and res["warning"] is None
    assert mann_whitney([1, 2, 3], [4, 5, 6])["p"] == pytest.approx(2 / 20)


def test_normal_with_ties_hand_formula():
    x, y = [1, 2, 2, 3], [2, 3, 3, 4]
    # ranks: 1->1, 2->3 (x3), 3->6 (x3), 4->8; R_x = 1+3+3+6 = 13, U = 13 - 10 = 3
    n1 = n2 = 4
    n = 8
    tie = (27 - 3) * 2  # two groups of three ties
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1)))
    z = (abs(3 - 8) - 0.5) / math.sqrt(var)
    res = mann_whitney(x, y, method="normal")
    assert res["u"] == 3.0
    assert res["p"] == pytest.approx(math.erfc(z / math.sqrt(2)), rel=1e-12)


def test_exact_with_ties_matches_brute_force():
    x, y = [1, 2, 2, 3], [2, 3, 3, 4]
    u, p = brute_u_p(x, y)
    res = mann_whitney(x, y)
    assert res["method"] == "exact"
    assert res["u"] == u
    assert res["p"] == pytest.approx(p, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=5),
       st.lists(st.integers(0, 6), min_size=1, max_size=5))
def test_exact_matches_brute_force_property(x, y):
    u, p = brute_u_p(x, y)
    res = mann_whitney(x, y, method="exact")
    assert res["u"] == u
    assert res["p"] == pytest.approx(p, abs=1e-12)


def test_large_samples_use_normal_and_agree_with_exact():
    rng = np.random.default_rng(3)
    x = rng.normal(0, 1, 40).tolist()
    y = rng.normal(0.3, 1, 45).tolist()
    ex = mann_whitney(x, y, method="exact")
    nm = mann_whitney(x, y, method="normal")
    assert ex["u"] == nm["u"]
    assert abs(ex["p"] - nm["p"]) < 0.01
    assert mann_whitney(x * 2, y * 2)["method"] == "normal"


def test_no_runs_in_a_variant():
    res = mann_whitney([], [1.0])
    assert res["p"] is None and res["enough"] is False and res["warning"]


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
    assert got["mean"] == pytest.approx(0.25) and got["sd"] == pytest.approx(sd)
    assert got["ci"] == [pytest.approx(0.25 - half), pytest.approx(0.25 + half)]
    assert stats.t_interval([0.5])["ci"] is None


# ----------------------------------------------------------------------------- bootstrap
def test_bootstrap_matches_naive_loop_with_fixed_seed():
    ratios = [0.8, 0.9, 0.85, 1.1, 0.7, 0.95, 0.88]
    got = stats.bootstrap_geomean(ratios, seed=1130, resamples=2500)
    rng = np.random.default_rng(1130)
    logs = [math.log(r) for r in ratios]
    means = []
    for block in (1000, 1000, 500):
        idx = rng.integers(0, len(ratios), size=(block, len(ratios)))
        for row in idx:
            means.append(sum(logs[j] for j in row) / len(ratios))
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert got["geomean_ratio"] == pytest.approx(math.exp(sum(logs) / len(logs)), rel=1e-14)
    assert got["ci95"][0] == pytest.approx(math.exp(lo), rel=1e-12)
    assert got["ci95"][1] == pytest.approx(math.exp(hi), rel=1e-12)


def test_bootstrap_known_answer_pinned():
    # Pinned with seed 1130 and 10,000 resamples; a change here changes every bundle's
    # comparison.json, so it must be deliberate.
    got = stats.bootstrap_geomean([0.8, 0.9, 0.85, 1.1, 0.7, 0.95, 0.88], 1130, 10000)
    assert round(got["geomean_ratio"], 10) == 0.875400757
    assert [round(v, 10) for v in got["ci95"]] == [0.7956545871, 0.964036101]


def test_bootstrap_constant_ratio_is_degenerate():
    got = stats.bootstrap_geomean([0.5] * 9, 7, 1000)
    assert got["geomean_ratio"] == pytest.approx(0.5)
    assert got["ci95"] == [pytest.approx(0.5), pytest.approx(0.5)]


# ----------------------------------------------------------------------------- analyze
ITEMS = [0.010, 0.020, 0.030, 0.015, 0.025, 0.012, 0.018, 0.022]


def jitter(items, factor, seed):
    rng = np.random.default_rng(seed)
    return [w * factor * float(rng.uniform(0.98, 1.02)) for w in items]


def test_improved_regressed_equal_inconclusive():
    runs = abba(ITEMS, jitter(ITEMS, 0.8, 1))
    s = analyze(runs, 0.02)
    assert s["verdict"] == "improved"
    assert s["paired"]["items"] == len(ITEMS)
    assert s["paired"]["ci95"][1] < 0.98
    assert s["paired"]["geomean_ratio"] == pytest.approx(0.8, rel=0.02)

    s = analyze(abba(ITEMS, jitter(ITEMS, 1.25, 2), walls=(1, 1.25, 1.25, 1)), 0.02)
    assert s["verdict"] == "regressed"

    s = analyze(abba(ITEMS, jitter(ITEMS, 1.0, 3), walls=(1, 1, 1, 1)), 0.05)
    assert s["verdict"] == "equal"

    noisy = [w * f for w, f in zip(ITEMS, [0.6, 1.5, 0.7, 1.4, 0.8, 1.3, 0.9, 1.2])]
    s = analyze(abba(ITEMS, noisy, walls=(1, 1, 1, 1)), 0.02)
    assert s["verdict"] == "inconclusive"
    assert "straddles" in s["verdict_reason"]


def test_run_level_disagreement_makes_it_inconclusive():
    runs = abba(ITEMS, jitter(ITEMS, 0.8, 1), walls=(1.0, 1.3, 1.3, 1.0))
    s = analyze(runs, 0.02)
    assert s["verdict"] == "inconclusive"
    assert "run-level" in s["verdict_reason"]


def test_deterministic_and_json_plain():
    runs = abba(ITEMS, jitter(ITEMS, 0.9, 5))
    a, b = analyze(runs, 0.02), analyze(json.loads(json.dumps(runs)), 0.02)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert a["seed"] == 1130 and a["resamples"] == 10000 and a["threshold"] == 0.02

    def walk(o):
        if isinstance(o, dict):
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)
        else:
            assert o is None or type(o) in (str, int, float, bool)
    walk(a)
    assert analyze(runs, 0.02, seed=1)["seed"] == 1


def test_failed_runs_excluded_and_missing_variant_inconclusive():
    runs = abba(ITEMS, jitter(ITEMS, 0.8, 1))
    runs[1]["status"] = "failed"
    s = analyze(runs, 0.02)
    assert s["mann_whitney"]["n_candidate"] == 1
    assert any("B1" in w for w in s["warnings"])
    for r in runs:
        if r["variant"] == "candidate":
            r["status"] = "timeout"
    s = analyze(runs, 0.02)
    assert s["verdict"] == "inconclusive"
    assert "no ok candidate run" in s["verdict_reason"]


def test_items_without_timings_fall_back_to_runs():
    runs = abba([], [], walls=(1.0, 0.5, 0.5, 1.0))
    s = analyze(runs, 0.02)
    # Without item timings the ratio falls back to run-level figures; the label says so.
    assert s["paired"]["metric"].startswith("run ")
    assert s["paired"]["geomean_ratio"] == pytest.approx(0.5)
    assert s["verdict"] == "improved"
    assert any("fall back" in w for w in s["warnings"])


def test_error_items_left_out_of_pairing():
    runs = abba(ITEMS, jitter(ITEMS, 0.8, 1))
    runs[2]["items"][0]["error"] = {"type": "ValueError", "message": "x"}
    s = analyze(runs, 0.02)
    assert s["paired"]["items"] == len(ITEMS) - 1
    assert s["paired"]["items_excluded"] == 1


def test_drift_flagged_when_comparable_to_effect():
    # effect ~ -5%, base drifts +8% from A1 to A2
    runs = abba(ITEMS, ITEMS, walls=(0.96, 0.95, 0.95, 1.04))
    s = analyze(runs, 0.02)
    d = s["drift"]
    assert d["base"]["first"] == "A1" and d["base"]["last"] == "A2"
    assert d["base"]["change_pct"] == pytest.approx(100 * 0.08 / 0.96)
    assert d["candidate"]["change_pct"] == 0.0
    assert d["flagged"] is True
    assert any(w.startswith("drift") for w in s["warnings"])
    s = analyze(abba(ITEMS, ITEMS, walls=(1.0, 0.5, 0.51, 1.01)), 0.02)
    assert s["drift"]["flagged"] is False


# ----------------------------------------------------------------------------- exit codes
def comparison(verdict="improved", status="complete", identical=True):
    return {"status": status, "reason": "worker B1 crashed" if status != "complete" else None,
            "parity": {"identical": identical, "mismatches": [] if identical else [{"item": "x"}]},
            "wall": {"base_mean_s": 1.0, "candidate_mean_s": 0.8, "saving_s": 0.2,
                     "saving_pct": 20.0, "speedup": 1.25},
            "stats": {"verdict": verdict, "threshold": 0.02,
                      "paired": {"metric": "item wall_s", "geomean_ratio": 0.8,
                                 "ci95": [0.78, 0.82]}}}


@pytest.mark.parametrize("kwargs,code,word", [
    ({"verdict": "improved"}, 0, "improved"),
    ({"verdict": "equal"}, 0, "equal"),
    ({"verdict": "regressed"}, 5, "regressed"),
    ({"verdict": "inconclusive"}, 6, "inconclusive"),
    ({"identical": False}, 3, "parity mismatch"),
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


def test_verdict_line_content():
    line = verdict_line(comparison())
    assert "candidate/base 0.8000 [0.7800, 0.8200]" in line
    assert "1.000 s -> 0.800 s" in line and "20.0% saving" in line


def test_exit_code_without_stats_is_unusable():
    c = comparison()
    del c["stats"]
    assert verdict_exit_code(c) == 2
    assert verdict_exit_code([]) == 2
