"""Issue 45, attack 3: a candidate that takes a shortcut only under valgrind (RUNNING_ON_VALGRIND,
or valgrind's environment) had instructions "improved 0.0006", `compare --metric instructions`
exited 0 and nothing said that the wall, 1.38x slower, disagreed. The wall's interval now
cross-checks the counts (rules.contradicted): counts that claim improved while the wall's
interval lies wholly at or above 1, or equal while it lies wholly above the band, claim nothing
alone: the instruction verdict is inconclusive, comparison.json says `contradicted` (both
checkers re-derive it), the verdict line, summary and report say so, and `compare --metric
instructions` exits 11, which no CI gate reads as a pass. Honest changes that cut instructions
more than wall time do not trip it. (Fake-launcher bundles; valgrind's probe stubbed.)"""
from __future__ import annotations

import pytest

from checks_support import InstructionLauncher, forge, no_valgrind_probe, problems, refused
from fakes import Model, run_fake
from harness import cli, contract as C, outcomes, rules as R
from harness.bundle import read


def bundle(where, monkeypatch, ratio: float, counts: dict):
    no_valgrind_probe(monkeypatch)
    outcome, _ = run_fake(where, launcher=InstructionLauncher(Model(items=4, item_s=0.1, ratio=ratio, noise=0.01),
                                                              counts),
                          rounds=8, seed=3, metrics=["wall", "instructions"], instructions={"items": 2, "runs": 2})
    assert outcome.comparison.status == "complete", outcome.comparison.reason
    return outcome.out


GAMED = {"IA1": 300_000_000, "IA2": 300_000_000, "IB1": 180_000, "IB2": 180_000}  # 0.0006 under valgrind
HALVED = {"IA1": 300_000_000, "IA2": 300_000_000, "IB1": 150_000_000, "IB2": 150_000_000}


@pytest.fixture(scope="module")
def gamed(tmp_path_factory):
    monkeypatch = pytest.MonkeyPatch()
    try:
        return bundle(tmp_path_factory.mktemp("gamed") / "b", monkeypatch, 1.38, GAMED)
    finally:
        monkeypatch.undo()


def test_the_rule():
    assert R.contradicted("improved", [1.30, 1.45], 0.02) and R.contradicted("improved", [1.0, 1.1], 0.02)
    assert not R.contradicted("improved", [0.99, 1.1], 0.02)  # the wall allows a speed-up
    assert not R.contradicted("improved", [0.85, 0.95], 0.02)  # counts cut further than the wall: honest
    assert R.contradicted("equal", [1.05, 1.2], 0.02) and not R.contradicted("equal", [1.0, 1.02], 0.02)
    assert not R.contradicted("equal", [0.7, 0.8], 0.02)  # faster than equal counts: cache, not a lie
    assert not R.contradicted("regressed", [0.7, 0.8], 0.02)  # fails a gate already (the disagrees warning)
    assert not R.contradicted("improved", None, 0.02)


def test_counts_the_wall_contradicts_claim_nothing_alone(gamed):
    c = read.load(gamed).comparison
    assert c.stats.verdict == "regressed" and c.stats.paired.ci95[0] >= 1.0
    ins = c.instructions
    assert ins.contradicted and ins.verdict == "inconclusive" and ins.ratio == pytest.approx(0.0006)
    assert "instruction counts say improved (ratio 0.000600), but the wall's interval" in ins.verdict_reason
    assert c.metric("instructions").verdict == "inconclusive"
    assert problems(gamed) == ([], [])  # both checkers re-derive it


def test_compare_metric_instructions_exits_11_naming_the_contradiction(gamed, capsys):
    assert cli.main(["compare", str(gamed), "--metric", "instructions"]) == outcomes.CONTRADICTED == 11
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("verdict: "))
    assert line.startswith("verdict: instructions contradicted by the wall, wall regressed (exit 11): "), line
    assert "instructions: inconclusive, contradicted by the wall, candidate/base 0.0006" in line
    assert "instruction counts contradicted by the wall's interval" in line  # the warning
    assert cli.main(["compare", str(gamed)]) == outcomes.REGRESSED  # the wall's gate


@pytest.mark.parametrize("form", ["markdown", "text", "json", "report"])
def test_the_summary_and_report_say_so(gamed, capsys, form):
    assert cli.main(["summary", str(gamed), "--format", form]) == 0
    assert "contradicted by the wall" in capsys.readouterr().out


def test_a_forger_who_clears_the_flag_is_refused_by_both_checkers(gamed, tmp_path):
    import shutil

    copy = tmp_path / "b"
    shutil.copytree(gamed, copy)

    def clear(doc):
        doc["instructions"].update(contradicted=False, verdict="improved")
        for m in doc["metrics"]:
            if m["name"] == "instructions":
                m["verdict"] = "improved"
    forge(copy, {C.COMPARISON: clear}, rederive=False)
    ours, theirs = problems(copy)
    assert refused(ours, "instructions.contradicted") and refused(theirs, "instructions.contradicted")


@pytest.mark.parametrize("ratio", [0.8, 0.95])
def test_an_honest_change_that_cuts_instructions_more_than_wall_passes(tmp_path, monkeypatch, ratio):
    out = bundle(tmp_path / "b", monkeypatch, ratio, HALVED)
    c = read.load(out).comparison
    assert not c.instructions.contradicted and c.instructions.verdict == "improved"
    assert cli.main(["compare", str(out), "--metric", "instructions"]) == outcomes.OK
