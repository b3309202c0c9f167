"""Interference over a run's timed loop (issue 35, item 2): the worker's readings of /proc/stat
steal, the CPU it ran on and PSI, parsed from fixture text; the disturbed-marking rule
(rules.disturbance); the verdict-without-disturbed rule (a campaign whose disturbed rounds carry
the effect makes no claim, and says so), re-derived the same by rehash.py; the campaign's bounds;
and a whole campaign on the model worker whose sealed bundle both checkers accept."""
from __future__ import annotations

import dataclasses
import json

import pytest

from fakes import Model, run_fake, run_record
from harness import contract as C, rehash, records
from harness import rules as R
from harness.bundle import read
from harness.comparison import analysis
from harness.worker import main as worker
from harness.judge.verify import verify
from harness.plan import spec

PROC_STAT = """cpu  67368 0 25833 4501862 3436 0 784 3689 0 0
cpu0 8090 0 6205 2284944 433 0 116 1828 0 0
cpu1 59277 0 19628 2216917 3003 0 667 1861 0 0
intr 123 0 0
ctxt 99
btime 1700000000
"""
OLD_KERNEL = "cpu  1 2 3 4 5 6 7\ncpu0 1 2 3 4 5 6 7\n"  # no steal column (before 2.6.11)


def test_steal_is_the_eighth_value_of_each_cpu_line():
    assert worker.parse_steal(PROC_STAT) == {"cpu": 3689, "cpu0": 1828, "cpu1": 1861}
    assert worker.parse_steal(OLD_KERNEL) == {}
    assert worker.parse_steal("cpux 1 2 3 4 5 6 7 8\ncpu0 1 2 3 4 5 6 7 x\n") == {}
    assert worker.parse_steal("") == {}


def test_the_processor_field_is_counted_after_the_command_name():
    fields = ["S"] + [str(i) for i in range(4, 39)] + ["3"] + ["0"] * 13  # field 39 is the processor
    assert worker.parse_processor("1234 (a) (b c) " + " ".join(fields)) == 3
    assert worker.parse_processor("1234 (short) S 1 2") is None


def test_psi_total_of_the_some_line():
    assert worker.parse_psi("some avg10=2.49 avg60=1.40 avg300=0.66 total=33798032\n"
                            "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n") == 33798032
    assert worker.parse_psi("full avg10=0.00 total=5\n") is None
    assert worker.parse_psi("some avg10=0.00 total=x\n") is None


def reading(stat: str, cpu, freq=None) -> worker.Reading:
    return worker.Reading(worker.parse_steal(stat), cpu, freq)


def test_readings_over_the_loop_say_absent_never_a_guess():
    before = reading(PROC_STAT, 1, 2400.0)
    after = reading(PROC_STAT.replace(" 3689 ", " 3699 ").replace(" 1861 ", " 1866 "), 1, 2300.0)
    got = worker.interference_over(before, after)
    assert got["steal_ticks"] == 10 and got["cpu"] == 1 and got["cpu_steal_ticks"] == 5
    assert (got["freq_mhz_before"], got["freq_mhz_after"]) == (2400.0, 2300.0) and got["user_hz"] >= 10
    moved = worker.interference_over(before, reading(PROC_STAT, 0))
    assert moved["cpu"] is None and moved["cpu_steal_ticks"] is None and moved["freq_mhz_before"] is None
    assert moved["steal_ticks"] == 0
    none = worker.interference_over(reading(OLD_KERNEL, 0), reading(OLD_KERNEL, 0))
    assert none["steal_ticks"] is None and none["user_hz"] is None and none["cpu_steal_ticks"] is None
    assert none["cpu"] == 0
    assert worker.cpu_freq_of(None) is None and worker.cpu_freq_of(10**6) is None  # no such CPU: absent


def test_disturbed_when_steal_or_off_cpu_crosses_its_bound():
    quiet = {"user_hz": 100, "steal_ticks": 2, "cpu_steal_ticks": 1}
    assert R.disturbance(quiet, 1.0, 0.99, 2, 0.02, None) == (0.01, 0.99, [])
    # a tick is allowed: 3 ticks of a 1 s loop is 2% + one tick
    assert R.disturbance({**quiet, "cpu_steal_ticks": 3, "steal_ticks": 3}, 1.0, 0.99, 2, 0.02, None)[2] == []
    stolen = {"user_hz": 100, "steal_ticks": 5, "cpu_steal_ticks": 5}
    share, _, causes = R.disturbance(stolen, 1.0, 0.99, 2, 0.02, None)
    assert share == 0.05 and causes == ["steal"]
    # all CPUs' steal counts too (over cores x the wall): the worker may have moved, threads use other cores
    assert R.disturbance({"user_hz": 100, "steal_ticks": 9, "cpu_steal_ticks": None}, 1.0, 0.99, 2, 0.02,
                         None)[2] == ["steal"]
    # off its core: only for work the campaign declares single-threaded
    assert R.disturbance(quiet, 1.0, 0.7, 2, 0.02, None)[2] == []
    assert R.disturbance(quiet, 1.0, 0.7, 2, 0.02, 0.9)[2] == ["off_cpu"]
    assert R.disturbance(stolen, 1.0, 0.7, 2, 0.02, 0.9)[2] == ["steal", "off_cpu"]
    # nothing shown by the kernel: nothing claimed
    assert R.disturbance({}, 1.0, None, 2, 0.02, 0.9) == (None, None, [])


def test_the_runner_marks_the_record():
    section = records.Interference.marked({"user_hz": 100, "steal_ticks": 40, "cpu": 0, "cpu_steal_ticks": 30},
                                          1.0, 0.5, 2, records.InterferenceBounds(max_steal=0.02, min_cpu_per_wall=0.8))
    assert section.disturbed and section.causes == ["steal", "off_cpu"] and section.steal_share == 0.3
    assert section.freq_mhz_before is None  # not read: absent
    blank = records.Interference.marked(None, 1.0, 0.99, 2, records.interference_bounds(None))
    assert not blank.disturbed and blank.steal_ticks is None


def marked(run: records.RunRecord, steal: int = 0, max_steal: float = 0.02) -> records.RunRecord:
    """The run as the runner records it: its worker saw `steal` ticks on its own CPU."""
    section = records.Interference.marked({"user_hz": 100, "steal_ticks": steal, "cpu": 0, "cpu_steal_ticks": steal},
                                          run.wall_s, 0.99 * run.wall_s, 2,
                                          records.InterferenceBounds(max_steal=max_steal, min_cpu_per_wall=None))
    return dataclasses.replace(run, interference=section)


def campaign(ratios, disturbed=(), steal=20):
    """Rounds A_k, B_k of three items each, candidate = base x ratios[k]; the runs of the rounds in
    `disturbed` saw `steal` ticks of a 60 ms loop."""
    runs = []
    for k, ratio in enumerate(ratios, 1):
        for letter, factor in (("A", 1.0), ("B", ratio)):
            walls = {f"i{j}": w * factor for j, w in enumerate((0.010, 0.020, 0.030))}
            run = run_record(f"{letter}{k}", walls, index=len(runs), wall_s=sum(walls.values()),
                             loadavg_before=[0.1], loadavg_after=[0.1])
            runs.append(marked(run, steal if k in disturbed else 0))
    return runs


BOUNDS = {"max_steal": 0.02, "min_cpu_per_wall": None}


def both(runs, threshold=0.02):
    """analysis.with_interference, and proof that rehash.py gives the same from the records' JSON."""
    got = records.to_json(analysis.with_interference(analysis.stats_of(runs, threshold), runs,
                                                     records.InterferenceBounds(**BOUNDS), threshold))
    as_json = records.to_json(runs)
    again = rehash.with_interference(rehash.derive_stats(as_json, threshold, None), as_json, BOUNDS, threshold, None)
    assert list(rehash.diff(got, again)) == []
    return got


def test_a_verdict_the_disturbed_rounds_carry_is_no_claim():
    claim = [0.6, 0.61, 0.59, 0.6, 0.6, 0.62, 0.6, 0.58, 1.0, 1.0]  # the effect in rounds 1-8; 9, 10 quiet
    assert analysis.analyze(campaign(claim), 0.02)["verdict"] == "improved"
    stats = both(campaign(claim, disturbed={1, 2, 3, 4, 5, 6}))
    section = stats["interference"]
    assert section["disturbed_rounds"] == [1, 2, 3, 4, 5, 6] and len(section["disturbed"]) == 12
    assert section["without"]["rounds"] == 4 and section["without"]["verdict"] == "inconclusive"
    assert stats["verdict"] == "inconclusive" and section["holds"] is False
    assert "the verdict does not hold without the 6 disturbed round(s) (1, 2, 3, 4, 5, 6)" in stats["verdict_reason"]
    assert any(w.startswith("interference: disturbed") and "does not hold" in w for w in stats["warnings"])


def test_a_verdict_that_holds_without_the_disturbed_rounds_stands():
    ratios = [0.6, 0.61, 0.59, 0.6, 0.6, 0.62, 0.6, 0.58]
    stats = both(campaign(ratios, disturbed={2}))
    assert stats["verdict"] == "improved" and stats["interference"]["holds"] is True
    assert stats["interference"]["without"]["verdict"] == "improved"
    assert stats["interference"]["without"]["rounds"] == 7
    quiet = both(campaign(ratios))
    assert quiet["interference"]["without"] is None and quiet["interference"]["disturbed"] == []
    assert quiet["interference"]["steal_runs"] == 16 and quiet["interference"]["freq_runs"] == 0


def test_without_disturbed_rule():
    assert R.without_disturbed("improved", "r", [], None) == ("improved", "r", True)
    assert R.without_disturbed("inconclusive", "r", [3], ("improved", 4)) == ("inconclusive", "r", True)
    assert R.without_disturbed("equal", "r", [3], ("equal", 9)) == ("equal", "r", True)
    verdict, reason, holds = R.without_disturbed("equal", "r", [3, 5], ("improved", 8))
    assert (verdict, holds) == ("inconclusive", False)
    assert reason == "r, but the verdict does not hold without the 2 disturbed round(s) (3, 5): the other 8 " \
                     "round(s) give improved"


def test_a_legacy_record_has_no_section_and_no_mark():
    run = run_record("A1", [0.01])
    data = records.to_json(run)
    del data["interference"]
    back = records.RunRecord.from_json(data)
    assert back.interference is None and not back.disturbed


def load_campaign(tmp_path, block):
    from fakes import write_fake_campaign

    return spec.load(write_fake_campaign(tmp_path, **({"interference": block} if block is not None else {})))


def test_the_campaign_declares_its_bounds_within_the_contracts_limits(tmp_path):
    assert load_campaign(tmp_path, None).interference is None
    assert records.to_json(records.interference_bounds(None)) == {"max_steal": C.MAX_STEAL, "min_cpu_per_wall": None}
    got = load_campaign(tmp_path, {"max_steal": 0.05, "min_cpu_per_wall": 0.9}).interference
    assert records.to_json(records.interference_bounds(got)) == {"max_steal": 0.05, "min_cpu_per_wall": 0.9}
    for block, key in (({"max_steal": 0.5}, "interference.max_steal"),
                       ({"min_cpu_per_wall": 0.1}, "interference.min_cpu_per_wall"),
                       ({"steal": 0.01}, "interference.steal")):
        with pytest.raises(spec.SpecError, match=key.replace(".", r"\.")):
            load_campaign(tmp_path, block)


def test_a_campaign_whose_disturbed_rounds_carry_the_effect_is_sealed_inconclusive(tmp_path):
    """The model worker: no change, except that in rounds 1-6 the hypervisor stole 30% of the base
    runs' time (and slowed them by 1.4x): the candidate looks faster in exactly those rounds."""
    disturb = {f"A{k}": (int(0.3 * 100 * 0.06 * 1.4), 1.4) for k in range(1, 7)}
    outcome, _ = run_fake(tmp_path, Model(ratio=1.0, noise=0.002, disturb=disturb), rounds=8)
    stats = records.to_json(outcome.comparison.stats)  # as comparison.json holds it
    assert stats["verdict"] == "inconclusive", stats["verdict_reason"]
    assert stats["interference"]["disturbed"] == [f"A{k}" for k in range(1, 7)]
    assert stats["interference"]["disturbed_rounds"] == [1, 2, 3, 4, 5, 6]
    assert "lies below the equal band" in stats["verdict_reason"]  # the claim all rounds gave
    assert "does not hold without the 6 disturbed round(s)" in stats["verdict_reason"]
    record = json.loads((outcome.out / C.run_path("A1")).read_text())
    assert record["interference"]["disturbed"] is True and record["interference"]["causes"] == ["steal"]
    assert json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())["interference"] == \
        records.to_json(records.interference_bounds(None))
    assert not rehash.rehash(str(outcome.out)).problems
    report = verify(outcome.out)
    assert report.exit_code == 0, report.problems or report.unusable


def test_a_sequential_campaign_goes_on_until_its_undisturbed_rounds_decide(tmp_path):
    """A real 0.6x change; the hypervisor took most of rounds 1 and 2's base runs (their walls
    unmoved). The first look (round 4) decides on all rounds, but two undisturbed rounds cannot:
    the runner goes on, and stops at the first look whose undisturbed rounds give the same word
    (an earlier harness stopped at round 4 and sealed it inconclusive). Both checkers replay it."""
    disturb = {f"A{k}": (5, 1.0) for k in (1, 2)}  # 5 ticks at 100 Hz: 50 ms of a 60 ms loop
    outcome, _ = run_fake(tmp_path, Model(ratio=0.6, noise=0.002, disturb=disturb), rounds="auto", budget_s=600,
                          min_rounds=4, seed=7)
    stats = records.to_json(outcome.comparison.stats)  # as comparison.json holds it
    seq, section = stats["sequential"], stats["interference"]
    assert section["disturbed_rounds"] == [1, 2]
    looks = [row["verdict"] for row in seq["looks"]]
    assert looks[0] == "inconclusive" and looks[-1] == "improved" and len(looks) > 1, looks
    assert seq["stopped"] == "decided" and stats["verdict"] == "improved" and section["holds"] is True
    assert section["without"]["verdict"] == "improved" and section["without"]["rounds"] == stats["rounds"]["n"] - 2
    # the first look's rounds unmarked decide: only the disturbed rounds held the campaign back
    runs = [dataclasses.replace(r, interference=None) for r in read.load(outcome.out).runs
            if R.timed(r.label) and int(r.label[1:]) <= 4]
    assert analysis.analyze(runs, 0.02, None, {"first": 4, "cap": 5})["verdict"] == "improved"
    assert not rehash.rehash(str(outcome.out)).problems
    report = verify(outcome.out)
    assert report.exit_code == 0, report.problems or report.unusable
