"""comparison.json `stats` (harness/comparison/analysis.py) on hand-made and simulated run
records (records.RunRecord): rounds paired, too few rounds, load and drift widening the band,
per-item truth, the verdict line; harness/rehash.py re-derives every one from the records' JSON."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from fakes import comparison, run_record, with_machine
from harness import rehash, records
from harness.comparison import analysis
from harness import outcomes as verdict
from harness.bundle.model import Stats
from noise_support import campaign


def rounds_of(ratios_per_round, base=(0.010, 0.020, 0.030)):
    """Runs A_k, B_k per round; the candidate's items are base x ratio (one per round, or a
    list per item). No stall reading: load is judged by the load average (0.1 on 2 cores)."""
    runs = []
    for k, ratio in enumerate(ratios_per_round, 1):
        per_item = ratio if isinstance(ratio, (list, tuple)) else [ratio] * len(base)
        for variant, factors in (("base", [1.0] * len(base)), ("candidate", per_item)):
            walls = {f"i{j}": b * f for j, (b, f) in enumerate(zip(base, factors))}
            runs.append(run_record(f"{'A' if variant == 'base' else 'B'}{k}", walls, variant=variant,
                                   index=len(runs), wall_s=sum(walls.values()), loadavg_before=[0.1],
                                   loadavg_after=[0.1]))
    return runs


def same(runs, threshold=0.02, floor=None):
    """analysis.analyze, and proof that rehash.py re-derives exactly the same from the records
    as the bundle holds them (JSON)."""
    got = analysis.analyze(runs, threshold, floor)
    assert list(rehash.diff(got, rehash.derive_stats(records.to_json(runs), threshold, floor))) == []
    return got


def replaced(runs, k, **changes):
    """runs with runs[k] changed (records are frozen)."""
    return runs[:k] + [dataclasses.replace(runs[k], **changes)] + runs[k + 1:]


def test_improved_with_enough_rounds_and_the_reason_names_them():
    s = same(rounds_of([0.80, 0.81, 0.79, 0.80, 0.82, 0.80]))
    assert s["verdict"] == "improved" and s["rounds"]["n"] == 6
    assert s["paired"]["geomean_ratio"] == pytest.approx(0.80, rel=0.01)
    assert "6 rounds" in s["verdict_reason"]


def test_too_few_rounds_is_inconclusive_and_says_so():
    s = same(rounds_of([0.5, 0.5001, 0.4999]))  # a huge, clean effect: still no claim from 3 rounds
    assert s["verdict"] == "inconclusive" and s["paired"]["ci95"] is not None
    assert "at least 5 are needed to estimate the run-to-run variance" in s["verdict_reason"]
    assert any(w.startswith("too few rounds to conclude") for w in s["warnings"])


def test_equal_and_regressed():
    assert same(rounds_of([1.001, 0.999, 1.0, 1.002, 0.998]))["verdict"] == "equal"
    assert same(rounds_of([1.2, 1.21, 1.19, 1.2, 1.22]))["verdict"] == "regressed"


def test_unpaired_runs_are_named_and_left_out():
    runs = rounds_of([0.8] * 5)
    runs.append(dataclasses.replace(runs[0], label="A6", index=len(runs)))
    s = same(runs)
    assert s["rounds"]["unpaired"] == ["A6"] and s["rounds"]["n"] == 5
    assert any("A6" in w and "without a partner" in w for w in s["warnings"])


def test_overload_makes_a_claim_clear_the_noise_it_was_measured_under():
    noisy = [0.95, 0.90, 1.00, 0.93, 0.97, 0.92, 0.98, 0.94]
    quiet = same(rounds_of(noisy))
    runs = rounds_of(noisy)
    runs[3] = with_machine(runs[3], loadavg_after=[4.0])
    loaded = same(runs)
    assert loaded["load"]["overloaded"] == [runs[3].label]
    assert quiet["verdict"] == "improved" and quiet["claim_band"] == quiet["band"] == 0.02
    assert loaded["band"] == 0.02 and loaded["claim_band"] == loaded["rounds"]["typical_deviation"] > 0.02
    assert loaded["verdict"] == "inconclusive" and "measured under load or drift" in loaded["verdict_reason"]
    assert any("more runnable work than cores" in w and "a claim must clear" in w for w in loaded["warnings"])
    assert loaded["paired"]["ci95"] == quiet["paired"]["ci95"]  # the interval is the interval


def test_under_load_a_claim_far_beyond_the_noise_stands_and_equal_keeps_the_plain_band():
    # Rounds whose ratios scatter over a factor of 10 under load: the typical deviation stays
    # below 1 (log space), and a 100x gain is still a gain, not "equal" inside a +-115% band.
    scattered = [0.001, 0.01, 0.003, 0.02, 0.005, 0.0015, 0.008]
    runs = rounds_of(scattered)
    runs[0] = with_machine(runs[0], loadavg_after=[9.0])
    s = same(runs)
    assert 0.5 < s["claim_band"] < 1 and s["verdict"] == "improved"
    flat = rounds_of([1.001, 0.999, 1.0, 1.002, 0.998])
    flat[0] = with_machine(flat[0], loadavg_after=[9.0])
    assert same(flat)["verdict"] == "equal"


def test_a_drift_both_variants_share_is_shown_and_widens_nothing():
    # The machine slows by 30% over the campaign: each variant's walls drift, the shuffled
    # rounds cancel it, and the 10% gain is still claimed against the plain threshold.
    rng = np.random.default_rng(1)
    s = same(campaign(rng, ratio=0.9, rounds=10, run_sd=0.002, item_sd=0.002, drift=0.3))
    assert s["drift"]["base"]["change_pct"] > 10 and s["drift"]["candidate"]["change_pct"] > 10
    assert s["drift"]["flagged"] is False and s["band"] == 0.02
    assert s["verdict"] == "improved"
    assert not any(w.startswith("drift:") for w in s["warnings"])


def test_a_ratio_that_moves_during_the_campaign_is_flagged_and_widens_the_band():
    # The gain fades from 20% to 2% over the rounds: no single ratio describes the campaign.
    fading = [0.80 + 0.02 * k for k in range(10)]
    s = same(rounds_of(fading))
    d = s["drift"]
    assert d["flagged"] is True and d["ratio"]["first_rounds"] == [1, 5] and d["ratio"]["last_rounds"] == [6, 10]
    assert d["ratio"]["last"] > d["ratio"]["first"]
    assert s["claim_band"] > s["band"] == 0.02
    assert any(w.startswith("drift: the ratio of the later rounds") for w in s["warnings"])


def test_a_ratio_that_only_jitters_is_not_a_drift():
    rng = np.random.default_rng(3)
    jitter = [0.9 * float(np.exp(0.03 * rng.standard_normal())) for _ in range(20)]
    assert same(rounds_of(jitter))["drift"]["flagged"] is False


def test_load_is_the_cpu_stall_over_the_timed_loop_when_the_record_has_it():
    # a high load average, but no wait for a core
    runs = [with_machine(r, loadavg_after=[5.0], cpu_stall_s=0.0) for r in rounds_of([0.9] * 6)]
    runs[4] = with_machine(runs[4], cpu_stall_s=0.5 * runs[4].wall_s)  # runnable work waited half of this run
    s = same(runs)
    assert s["load"]["overloaded"] == [runs[4].label]
    runs[4] = with_machine(runs[4], cpu_stall_s=0.05 * runs[4].wall_s)
    assert same(runs)["load"]["overloaded"] == []


def test_slots_on_a_gil_bound_workload_get_a_warning_naming_the_gil():
    # one busy core for four slots
    runs = [with_machine(dataclasses.replace(r, slots=4), process_cpu_s=1.02 * r.wall_s) for r in rounds_of([0.9] * 6)]
    s = same(runs)
    assert any("slots 4" in w and "GIL" in w and "`slots: 1`" in w for w in s["warnings"])
    stalled = [with_machine(r, cpu_stall_s=0.5 * r.wall_s) for r in runs]  # others' load idles the slots too
    assert not any("GIL" in w for w in same(stalled)["warnings"])  # no judgement
    busy = [with_machine(r, process_cpu_s=3.5 * r.wall_s, cpu_stall_s=0.0) for r in runs]
    assert not any("GIL" in w for w in same(busy)["warnings"])
    one_slot = [with_machine(dataclasses.replace(r, slots=1), process_cpu_s=1.0 * r.wall_s) for r in runs]
    assert not any("GIL" in w for w in same(one_slot)["warnings"])


def test_a_floor_above_the_threshold_is_the_band():
    s = same(rounds_of([0.97, 0.971, 0.969, 0.97, 0.97]), floor=0.05)
    assert s["band"] == 0.05 and s["verdict"] == "equal"  # a 3% gain under a 5% noise floor is no claim


def test_per_item_truth_names_the_worst():
    # Issue 17: a change that makes most items much faster and 2 of them slower reads "improved".
    fast, slow1, slow2 = 0.3, 1.3, 2.1
    ratios = [[fast * (1 + 0.01 * k), slow1, slow2, fast, fast, fast] for k in range(6)]
    s = same(rounds_of(ratios, base=(0.01, 0.02, 0.03, 0.04, 0.05, 0.06)))
    per = s["per_item"]
    assert s["verdict"] == "improved" and per["items"] == 6 and per["regressed"] == 2
    assert per["worst"]["id"] == "i2" and per["worst"]["ratio"] == pytest.approx(2.1)
    assert [row["id"] for row in per["table"][:2]] == ["i2", "i1"]
    line = verdict.line(comparison(stats=s))
    assert "2 of 6 items regressed beyond +-2.0%, worst i2 2.1000" in line


def test_every_warning_is_on_the_verdict_line():
    runs = rounds_of([0.8] * 3)
    runs[0] = with_machine(runs[0], loadavg_before=[9.0])
    s = same(runs)
    line = verdict.line(comparison(stats=s))
    assert line.startswith("verdict: inconclusive (exit 6)") and "\n" not in line
    for warning in s["warnings"]:
        assert warning in line


def test_run_walls_when_items_carry_no_timings():
    runs = [dataclasses.replace(r, items=[]) for r in rounds_of([0.5] * 5)]
    s = same(runs)
    assert s["paired"]["metric"] == "run wall_s" and s["verdict"] == "improved" and s["per_item"] is None


def test_json_plain_and_deterministic():
    runs = campaign(np.random.default_rng(4), ratio=0.9)
    a = analysis.analyze(runs, 0.02)
    # through JSON and back (as harness verify reads a bundle's records): the same stats, byte for byte
    back = [records.RunRecord.from_json(r) for r in json.loads(json.dumps(records.to_json(runs)))]
    assert json.dumps(a, sort_keys=True) == json.dumps(analysis.analyze(back, 0.02), sort_keys=True)

    def plain(o):
        if isinstance(o, dict):
            return all(isinstance(k, str) and plain(v) for k, v in o.items())
        if isinstance(o, list):
            return all(map(plain, o))
        return o is None or type(o) in (str, int, float, bool)

    assert plain(a)


def test_a_stage_whose_calls_cost_about_the_wrapper_is_named():
    stages = {"tiny": records.StageTotals(calls=1000, self_cpu_s=0.002, incl_cpu_s=0.002),  # 2 us a call
              "big": records.StageTotals(calls=10, self_cpu_s=0.5, incl_cpu_s=0.5)}
    # stage runs (As1, Bs1) carry the wrappers; the timed runs none
    runs = rounds_of([0.8] * 5) + [dataclasses.replace(r, label=f"{r.label[0]}s1", stages=stages,
                                                       stages_installed={n: True for n in stages})
                                   for r in rounds_of([0.8])]
    s = same(runs)
    named = [w for w in s["warnings"] if w.startswith("stage ")]
    assert len(named) == 1 and named[0].startswith("stage tiny: 2.00 us self CPU per call, within 10x")


def both_ways(runs, threshold=0.02, floor=None, sequential=None, **kw):
    """analysis.analyze, and rehash.derive_stats re-deriving the same from the records' JSON."""
    got = analysis.analyze(runs, threshold, floor, sequential, **kw)
    family = kw.get("family")
    again = rehash.derive_stats(records.to_json(runs), threshold, floor, sequential, kw.get("question", "claim"),
                                kw.get("margin"), family)
    assert list(rehash.diff(got, again)) == []
    return got


def test_a_fixed_count_answers_a_one_sided_question_with_one_sided_bounds():
    s = both_ways(rounds_of([1.00, 1.01, 0.99, 1.00, 1.005, 0.995]), question="not_slower", margin=0.05)
    assert s["verdict"] == "not slower" and s["question"] == "not_slower" and s["margin"] == 0.05
    assert "not slower than 5%" in s["verdict_reason"]
    s = both_ways(rounds_of([1.2, 1.21, 1.19, 1.2, 1.22, 1.18]), question="not_slower", margin=0.05)
    assert s["verdict"] == "regressed" and "slower than 5%" in s["verdict_reason"]
    s = both_ways(rounds_of([0.5, 0.51, 0.49, 0.5, 0.5, 0.5]), question="not_faster", margin=0.05)
    assert s["verdict"] == "improved"


def test_a_fixed_count_suite_judges_each_benchmark_at_its_share_of_alpha():
    jitter = [0.0, 0.002, -0.002, 0.001, -0.001, 0.0]
    runs = rounds_of([[0.5 + j, 1.0 + j, 1.0 - j] for j in jitter], base=(0.010, 0.020, 0.030))
    s = both_ways(runs, family=["i0", "i1", "i2"])
    fam = s["family"]
    assert [row["verdict"] for row in fam["items"]] == ["improved", "equal", "equal"]
    assert s["verdict"] == "improved" and s["per_item"] is None and s["sequential"] is None
    assert fam["counts"]["improved"] == 1 and fam["counts"]["equal"] == 2 and fam["alpha"] == pytest.approx(0.05 / 3)
    assert s["verdict_reason"].startswith("3 benchmarks: 1 improved (i0 0.5000), 0 regressed, 2 equal")


def test_per_item_says_why_the_items_cannot_be_judged():
    s = both_ways(rounds_of([0.05, 0.05, 0.05, 0.05], base=(0.010, 0.020, 0.030)), sequential={"first": 4, "cap": 10})
    per = s["per_item"]
    assert per["regressed"] == per["improved"] == 0
    assert per["note"] and "cannot be judged" in per["note"]
    assert verdict.per_item_text(Stats.of(s)).startswith("per item: ")
    fixed = both_ways(rounds_of([0.5, 0.5, 0.5]))
    assert "too few for a verdict per item" in fixed["per_item"]["note"]
