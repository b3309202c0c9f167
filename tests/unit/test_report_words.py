"""REPORT.md's words for a claim (issue 46, REPORT.md; issue 48, item 4): every speed-up with its
interval beside it in the comment's factor form, and a per-item table that says why no item has
a verdict of its own when the rounds were too few, instead of "0 of 8 regressed and 0 improved"
above eight items each 20x faster. The bundles are the model worker's (tests/fakes.py)."""
from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

from fakes import Model, run_fake
from harness import contract as C
from harness.bundle.model import RunRow
from harness.judge.survey import survey
from harness.render import report


def test_report_prints_the_interval_beside_every_speed_up_and_says_why_no_item_is_judged(tmp_path):
    rounds = C.MIN_ROUNDS - 1
    outcome, _ = run_fake(tmp_path / "few", Model(ratio=0.05, noise=0.02, items=8), rounds=rounds)
    text = report.render(survey([outcome.out]), tmp_path, "one bundle")
    row = next(line for line in text.splitlines() if line.startswith("| `few/bundle`"))
    assert re.search(r"\| [12]\d\.\dx faster \[\d+\.\dx, \d+\.\dx\] +\|", row), row  # about 20x
    assert "speed-up" not in text.split("## Checking")[0]  # no second figure: the mean walls' factor is gone
    assert "the mean timed wall per run of each variant is in its section's verdict line" in text  # said where
    per = next(line for line in text.splitlines() if line.startswith("Per item ("))
    assert "regressed" not in per and "improved" not in per, per
    assert (f"no item has a verdict of its own: {rounds} rounds are fewer than the {C.MIN_ROUNDS} an item's own "
            "interval needs") in per
    items = [line for line in text.splitlines() if line.startswith("| item-")]
    assert len(items) == report.ITEMS_SHOWN
    for line in items:  # base and candidate times, the change as a factor with its interval, not judged
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert 9 < float(cells[1]) < 11 and 0.4 < float(cells[2]) < 0.6, line
        assert re.fullmatch(r"\d+\.\dx faster \[\d+\.\dx, \d+\.\dx\]", cells[3]) and cells[4] == "not judged", line


def test_with_enough_rounds_the_report_counts_items_beyond_their_band(tmp_path):
    outcome, _ = run_fake(tmp_path / "enough", Model(ratio=0.5, noise=0.02), rounds=C.MIN_ROUNDS + 1)
    text = report.render(survey([outcome.out]), Path(tmp_path), "one bundle")
    per = next(line for line in text.splitlines() if line.startswith("Per item ("))
    assert re.search(r"0 slower and 6 faster beyond \u00b1\d+\.\d%, each by its own 95% interval", per), per


def rows(walls: dict[str, float]) -> SimpleNamespace:
    """A comparison's run table, as warm_up reads it (bundle/model.py RunRow)."""
    return SimpleNamespace(ok_runs=lambda: [RunRow(label, "base" if label[0] == "A" else "candidate", "0" * 40,
                                                   wall, 0, "ok") for label, wall in walls.items()])


def test_the_warm_up_line_measures_each_variants_first_run_and_round_ones_ratio():
    # Both first runs 1.5x slower than the rest: a warm-up both variants pay, round 1's ratio unmoved.
    walls = {"A1": 3.0, "B1": 1.5, "A2": 2.0, "B2": 1.0, "As1": 9.0, "Bs1": 9.0, "A3": 2.2, "B3": 1.1,
             "A4": 1.8, "B4": 0.9}
    line = report.warm_up(rows(walls))
    assert line == ("Warm-up: the first timed run against the median of the later ones, base 1.500x, candidate "
                    "1.500x; round 1's ratio against the later rounds' median 1.000x (every round stays in the "
                    "interval)"), line
    # Only the candidate's first run cold: round 1's ratio moves by as much.
    line = report.warm_up(rows({**walls, "B1": 2.0}))
    assert "base 1.500x, candidate 2.000x; round 1's ratio against the later rounds' median 1.333x" in line
    # Two rounds say nothing; a first round that failed leaves nothing to compare.
    assert report.warm_up(rows({k: v for k, v in walls.items() if k[1:] in ("1", "2")})) is None
    assert report.warm_up(rows({k: v for k, v in walls.items() if k != "A1"})) is None


def test_the_report_shows_the_warm_up_among_a_bundles_statistics(tmp_path):
    outcome, _ = run_fake(tmp_path / "warm", Model(ratio=0.5, noise=0.02), rounds=C.MIN_ROUNDS)
    text = report.render(survey([outcome.out]), Path(tmp_path), "one bundle")
    stats = text.split("### Statistics")[1].split("###")[0]
    assert re.search(r"- Warm-up: the first timed run against the median of the later ones, base \d\.\d{3}x, "
                     r"candidate \d\.\d{3}x; round 1's ratio", stats), stats
