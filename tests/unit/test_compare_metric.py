"""Issue 33.9: `harness compare --metric instructions` printed "verdict: inconclusive (exit 6)"
(the wall's) and exited 0 (the counts'). The line now shows the code the command exits with.
On a fake-launcher bundle with instruction runs (valgrind's probe stubbed): four rounds leave
the wall inconclusive, the counts (half the base's) say improved."""
from __future__ import annotations

import pytest

from fakes import Model, comparison, run_fake
from harness import cli, outcomes


@pytest.fixture
def counted(counted_fake):
    return counted_fake  # read only: compare writes nothing into the bundle


def verdict(capsys) -> str:
    return next(x for x in capsys.readouterr().out.splitlines() if x.startswith("verdict: "))


def test_the_printed_exit_is_the_exit_under_metric_instructions(counted, capsys):
    assert cli.main(["compare", str(counted)]) == outcomes.INCONCLUSIVE
    assert verdict(capsys).startswith("verdict: inconclusive (exit 6): ")
    code = cli.main(["compare", str(counted), "--metric", "instructions"])
    line = verdict(capsys)
    assert code == outcomes.OK
    assert line.startswith("verdict: improved by instructions, wall inconclusive (exit 0): "), line
    assert "(exit 6)" not in line


def test_metric_instructions_without_counts_is_one_line_and_exit_2(tmp_path, capsys):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.1), rounds=3)
    assert cli.main(["compare", str(outcome.out), "--metric", "instructions"]) == outcomes.UNUSABLE
    captured = capsys.readouterr()
    assert "verdict: " not in captured.out  # no line that shows another code
    assert captured.err.strip() == ("harness compare: error: --metric instructions: this campaign measured no "
                                    "instructions (metrics: [wall, instructions] adds them)")


def test_the_verdict_line_for_instructions_follows_their_code():
    entry = {"unit": "s", "of": "", "n": 0, "base": None, "candidate": None, "ratio": None, "ci95": None, "band": 0.02,
             "verdict_reason": ""}
    metrics = [{**entry, "name": "wall", "verdict": "regressed"}, {**entry, "name": "instructions", "verdict": "equal"}]
    c = comparison(stats={"verdict": "regressed"}, metrics=metrics)
    assert outcomes.exit_code(c) == outcomes.REGRESSED and outcomes.exit_code(c, "instructions") == outcomes.OK
    assert outcomes.exit_code(comparison(stats={"verdict": "regressed"}, metrics=metrics[:1]),
                              "instructions") == outcomes.UNUSABLE
