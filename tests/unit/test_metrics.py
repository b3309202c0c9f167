"""The metric seam (issue 34 item 1): every metric the campaign measured is one entry of one shape
in comparison.json `metrics`, derived apart by both checkers, shown by every renderer and gated
on by `harness compare --metric NAME`. Peak memory proves it: on the model worker a candidate
whose loop peaks 30% higher is regressed by memory while its wall is improved; A against A is
equal; a forged reading is refused by both checkers."""
from __future__ import annotations

import json
import math
import os
import shutil

import pytest

from checks_support import forge, problems, refused
import fakes
from fakes import Model, run_fake
from harness import cli, contract as C, outcomes, records, rules as R
from harness.engine import launch


@pytest.fixture(scope="module")
def heavier(tmp_path_factory):
    """Half the wall, 1.3x the loop's peak memory, a fixed count of 6 rounds."""
    outcome, _ = run_fake(tmp_path_factory.mktemp("heavier"), Model(ratio=0.5, memory=1.3, items=4, item_s=0.1),
                          rounds=6)
    return outcome


def entries(comparison: dict) -> dict:
    return {m["name"]: m for m in comparison["metrics"]}


def test_every_metric_is_one_entry_of_one_shape(heavier):
    c = records.to_json(heavier.comparison)  # as comparison.json holds it
    assert [m["name"] for m in c["metrics"]] == ["wall", "cpu", "memory"]  # no instruction runs here
    declared = {p.split(".", 1)[1] for p in C.FIELDS["comparison"] if p.startswith("metrics[].") and
                p.count(".") == 1 and not p.endswith("[]")}
    assert all(set(m) == declared for m in c["metrics"])
    wall = entries(c)["wall"]
    assert (wall["ratio"], wall["ci95"], wall["verdict"]) == (c["stats"]["paired"]["geomean_ratio"],
                                                              c["stats"]["paired"]["ci95"], c["stats"]["verdict"])


def test_memory_has_a_verdict_of_its_own(heavier):
    by = entries(records.to_json(heavier.comparison))
    assert by["wall"]["verdict"] == "improved" and by["cpu"]["verdict"] == "improved"
    memory = by["memory"]
    assert memory["verdict"] == "regressed" and memory["unit"] == "B" and memory["of"] == "memory.loop_peak_bytes"
    assert 1.29 < memory["ratio"] < 1.31 and memory["ci95"][0] > 1.02
    assert memory["candidate"] > memory["base"] > 0


def test_compare_gates_on_the_metric_it_is_given(heavier, capsys):
    assert cli.main(["compare", str(heavier.out)]) == outcomes.OK
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("verdict: "))
    assert "peak memory: regressed, candidate/base 1.30" in line or "peak memory: regressed, candidate/base 1.29" in line and "CPU: improved" in line
    assert cli.main(["compare", str(heavier.out), "--metric", "memory"]) == outcomes.REGRESSED
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("verdict: "))
    assert line.startswith("verdict: regressed by peak memory, wall improved (exit 5): "), line


def test_summary_and_report_show_every_metric(heavier, capsys, tmp_path):
    assert cli.main(["summary", str(heavier.out)]) == 0
    page = capsys.readouterr().out
    assert "| peak memory | regressed |" in page and "| CPU         | improved  |" in page
    rows = json.loads(cli_out(capsys, ["summary", str(heavier.out), "--format", "json"]))["metrics"]
    assert [r["name"] for r in rows] == ["wall", "cpu", "memory"] and rows[2]["verdict"] == "regressed"
    report = tmp_path / "REPORT.md"
    assert cli.main(["report", str(heavier.out), "-o", str(report)]) == 0
    assert "### Metrics" in report.read_text() and "| peak memory | regressed |" in report.read_text()


def cli_out(capsys, argv: list) -> str:
    assert cli.main(argv) == 0
    return capsys.readouterr().out


def test_a_against_a_memory_is_equal(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(ratio=1.0, memory=1.0, items=4, item_s=0.1), rounds=6)
    assert entries(records.to_json(outcome.comparison))["memory"]["verdict"] == "equal"


def test_a_sequential_campaign_reads_the_other_metrics_with_its_interval_valid_at_any_stop(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(ratio=0.5, memory=1.3, items=4, item_s=0.1), rounds="auto",
                          budget_s=60)
    c = records.to_json(outcome.comparison)  # as comparison.json holds it
    assert c["stats"]["sequential"]["stopped"] == "decided"
    def peak(label):
        return json.loads((outcome.out / C.run_path(label)).read_text())["memory"]["loop_peak_bytes"]

    d = [math.log(peak(f"B{k}") / peak(f"A{k}")) for k in range(1, c["stats"]["rounds"]["n"] + 1)]
    seq = c["stats"]["sequential"]
    assert entries(c)["memory"]["ci95"] == R.metric_interval(d, R.design(seq["first"], seq["cap"]), None)
    assert entries(c)["memory"]["n"] == len(d)


def test_identical_readings_in_every_round_are_a_point():
    plan = R.design(4, 20)
    assert R.metric_interval([0.0] * 5, plan, None) == [1.0, 1.0]
    assert R.metric_interval([0.1, 0.1, 0.1, 0.1], plan, None) == [R.sig10(math.exp(0.1))] * 2


def forged(bundle, where, label, edit):
    """A copy of the bundle with one run record edited, comparison.json re-derived and resealed as a
    careful forger would: (rehash.py's problems, harness verify's)."""
    copy = where / "forged"
    shutil.copytree(bundle, copy)
    forge(copy, {C.run_path(label): edit})
    return problems(copy)


@pytest.mark.parametrize("edit, why", [
    (lambda m: m.update(loop_peak_bytes=m["process_peak_bytes"] + 4096), "above the process's peak"),
    (lambda m: m.update(loop_start_bytes=m["loop_peak_bytes"] + 4096), "above the loop's peak"),
    (lambda m: m.update(loop_start_bytes=None), "come together"),
])
def test_a_forged_memory_reading_is_refused_by_both_checkers(heavier, tmp_path, edit, why):
    found = forged(heavier.out, tmp_path, "B2", lambda r: edit(r["memory"]))
    assert all(refused(lines, "data/runs/B2.json", why) for lines in found), found


def test_a_reading_above_the_kernels_mark_of_the_reaped_process_is_refused(heavier, tmp_path):
    found = forged(heavier.out, tmp_path, "A3",
                   lambda r: r["process"].update(maxrss_bytes=r["memory"]["loop_peak_bytes"] - 1
                                                 - C.rss_slack_bytes(r["machine"]["cores"])))
    assert all(refused(lines, "data/runs/A3.json", "kernel's mark") for lines in found), found


def test_the_runners_memory_readings():
    """The runner reads a worker's memory itself at its marks (engine/outside.py): the loop's start
    and peak, the process's peak the higher of the mark before the reset and at the loop's end."""
    from harness.engine import outside, runner

    now = outside.memory(os.getpid())
    if now:  # Linux: both in bytes, the mark at least the resident set
        assert now["VmHWM"] >= now["VmRSS"] > 0

    def memory(**marks):
        m = outside.Marks(launched=0.0, start=1.0, end=2.0, reaped=2.5, worker=(1.0001, 1.9999), **marks)
        exit_ = launch.Exit(1, 0, False, [], records.Process(1e9, 1e9 + 3, 3.0), marks=m)
        result = records.WorkerResult(0.9998, [], {}, {}, records.Imports(), {}, records.Machine(), "f" * 64, None,
                                      records.Interpreter.current(), "", "")
        return runner.from_outside(exit_, result, [], fakes.job("A1"))[2]

    got = memory(rss_start=100, hwm_before=900, hwm_end=300, reset=True)
    assert (got.process_peak_bytes, got.loop_start_bytes, got.loop_peak_bytes, got.reset) == (900, 100, 300, True)
    assert memory(rss_start=100, hwm_before=200, hwm_end=300, reset=True).process_peak_bytes == 300
    assert memory().loop_peak_bytes is None
