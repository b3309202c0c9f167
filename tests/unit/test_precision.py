"""`precision: p` (issue 48 item 4): a `rounds: auto` campaign of a workload ends at a look that
decides only once that look's interval also lies within a factor 1 + p of its ratio; at its cap a
campaign that decided keeps its word and says the interval is wider than asked ("imprecise"). The
rule (rules.precise, rules.stopped) is the writer's and both checkers': a bundle cannot claim a stop
it did not make, nor carry a precision it did not stop by. tests/campaign/test_precision_simulation.py
holds the rule's coverage and its rounds on simulated campaigns."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from checks_support import forge, problems, refused
from fakes import Model, run_fake
from harness import contract as C, outcomes, records, rehash
from harness import rules as R
from harness.bundle import read
from harness.comparison import analysis
from harness.plan import spec
from harness.render import summary
from noise_support import campaign


# --- the rule ---------------------------------------------------------------------------------------
def test_a_look_is_precise_when_both_ends_lie_within_the_factor_of_its_centre():
    d = [np.log(0.04)] * 2  # centre 0.04 exactly
    c = R.centre(d)
    assert c == 0.04
    assert R.precise([c / 1.1, c * 1.1], d, 0.10)  # on the edges: within
    assert not R.precise([c / 1.1, c * 1.1001], d, 0.10)  # the upper end past it
    assert not R.precise([c / 1.1001, c * 1.05], d, 0.10)  # the lower end past it, however narrow the rest
    assert R.precise([0.03, 0.05], d, None) is None  # no precision asked: no answer
    assert R.precise(None, d, 0.10) is False  # an unbounded look is never precise


def test_the_stop_waits_for_a_look_that_decides_and_is_precise():
    # no precision: the first look that decides
    assert R.stopped([(4, "improved"), (5, "improved")], 4, 9) == "decided"
    assert R.stopped([(4, "improved"), (5, "improved")], 5, 9) is None  # it should have stopped at 4
    # with one: a decided look that is not precise goes on; the first that is both ends it
    looks = [(4, "improved", False), (5, "improved", False), (6, "improved", True)]
    assert R.stopped(looks[:1], 4, 9) is None and R.stopped(looks[:2], 5, 9) is None
    assert R.stopped(looks, 6, 9) == "decided"
    assert R.stopped(looks + [(7, "improved", True)], 7, 9) is None  # went on past its stop
    assert R.stopped([(4, "inconclusive", True), (5, "improved", True)], 5, 9) == "decided"  # precise alone is no stop
    # at the cap: a decided look none of which was precise keeps its word; none decided: the cap
    assert R.stopped([(4, "improved", False), (5, "inconclusive", False)], 5, 5) == "imprecise"
    assert R.stopped([(4, "inconclusive", False), (5, "inconclusive", True)], 5, 5) == "cap"
    assert R.ends("improved", None) and R.ends("improved", True) and not R.ends("improved", False)
    assert not R.ends("inconclusive", True)


def test_an_imprecise_end_keeps_the_first_decided_word_and_says_how_wide():
    verdict, reason = R.sequential_ending("imprecise", ([0.031, 0.048], "improved", "r"), 20, 20,
                                          (4, "improved", "95% CI [0.02, 0.06] lies below the band"), 0.10)
    assert verdict == "improved"
    assert reason == ("95% CI [0.02, 0.06] lies below the band, decided at round 4, but the interval 0.031-0.048 "
                      "is wider than the +-10% precision asked for at the cap of 20 rounds")
    verdict, reason = R.sequential_ending("decided", ([0.0391, 0.0412], "improved", "r"), 9, 20, None, 0.10)
    assert (verdict, reason) == ("improved", "r, decided at round 9, its interval within the +-10% precision "
                                             "asked for")


@pytest.mark.parametrize("precision, auto, suite, problem", [
    (0.10, True, False, None), (None, False, False, None), (0.001, True, False, None), (0.999, True, False, None),
    (0.10, False, False, "only with `rounds: auto`"), (0.10, True, True, "not with a suite"),
    (0.0, True, False, "above 0 and below 1"), (1.0, True, False, "above 0 and below 1"),
    (0.0005, True, False, "from 0.001 to 0.999")])
def test_which_precision_a_campaign_may_ask(precision, auto, suite, problem):
    got = R.precision_problem(precision, auto, suite)
    assert (got is None) if problem is None else (problem in got)


def test_the_writer_and_rehash_derive_the_same_looks_and_stop():
    """analysis (the runner's and verify's) and rehash.py's own derivation, on simulated rounds of an
    AR-like change (25x, per-round spread 0.12): the same JSON at every precision, and a stop no
    earlier for a tighter precision than for a looser one (without one: the first look)."""
    rng = np.random.default_rng(48)
    for _ in range(4):
        runs = campaign(rng, ratio=0.04, rounds=30, run_sd=0.085)
        stops = []
        for precision in (None, 0.25, 0.10, 0.05):
            plan = {"first": 4, "cap": 30, "precision": precision}
            got = analysis.analyze(runs, 0.02, None, plan)
            assert list(rehash.diff(got, rehash.derive_stats(records.to_json(runs), 0.02, None, plan))) == []
            seq = got["sequential"]
            assert seq["precision"] == precision
            assert all((look["precise"] is None) == (precision is None) for look in seq["looks"])
            stops.append(next((look["round"] for look in seq["looks"] if R.ends(look["verdict"], look["precise"])),
                              31))  # 31: no look within the cap of 30 ends it
        assert stops == sorted(stops) and stops[0] == 4


# --- the campaign file --------------------------------------------------------------------------------
BASE = {"name": "p", "target": {"repo": "."}, "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"},
        "workload": {"entry": "w:setup"}}


def load(overrides=None, **fields):
    """The campaign BASE with `fields` set (None: the key left out), as the loader parses it."""
    body = {k: v for k, v in {**BASE, **fields}.items() if v is not None}
    return spec.loads(yaml.safe_dump(body).encode(), Path("/tmp/c.yaml"), overrides)


def test_the_campaign_file_asks_for_a_precision_with_rounds_auto_only():
    assert load(precision=0.1).precision == 0.1 and load().precision is None
    assert load(rounds="auto", budget_s=300, precision=0.05).precision == 0.05
    for fields, words in (({"rounds": 5, "precision": 0.1}, "precision: expected only with `rounds: auto`"),
                          ({"order": "ABBA", "precision": 0.1}, "no precision with an explicit order"),
                          ({"precision": 0}, "above 0 and below 1"), ({"precision": 1}, "above 0 and below 1"),
                          ({"precision": True}, "a number above 0 and below 1"),
                          ({"precision": "10%"}, "a number above 0 and below 1"),
                          ({"workload": None, "suite": {"kind": "asv", "path": "benchmarks"}, "precision": 0.1},
                           "not with a suite")):
        with pytest.raises(spec.SpecError) as exc:
            load(**fields)
        assert words in str(exc.value) and "\n" not in str(exc.value), (fields, str(exc.value))


def test_a_fixed_count_from_the_command_line_drops_the_precision_with_the_budget():
    fixed = load({"rounds": 5}, budget_s=100, precision=0.1)
    assert fixed.rounds == 5 and fixed.budget_s is None and fixed.precision is None


# --- a campaign, both checkers, the words -------------------------------------------------------------
def test_a_campaign_goes_on_past_its_first_decided_look_until_its_interval_is_precise(precise_fake):
    bundle = read.load(precise_fake)
    stats = bundle.comparison.stats
    seq = stats.sequential
    assert bundle.campaign.precision == 0.05 and seq.precision == 0.05
    assert [look.verdict for look in seq.looks] == ["improved"] * len(seq.looks) and len(seq.looks) == 7
    assert bundle.campaign.rounds == stats.rounds.n == 10 < seq.cap
    lo, hi = stats.paired.ci95
    c = stats.paired.geomean_ratio
    assert hi <= c * 1.05 and lo >= c / 1.05
    for lines in problems(precise_fake):
        assert lines == [], lines
    line = outcomes.line(bundle.comparison)
    assert "10 rounds, decided at the look after round 10 within the +-5% precision asked for" in line
    assert "its interval within the +-5% precision asked for" in outcomes.method_text(stats)
    assert "precision +-5%" in summary.form("markdown", bundle, "b")


def test_at_its_cap_a_decided_campaign_keeps_its_word_and_says_the_interval_is_wider(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.1, noise=0.05, seed=3), rounds="auto", budget_s=8,
                          min_rounds=4, seed=7, precision=0.02)
    stats = read.load(outcome.out).comparison.stats
    seq = stats.sequential
    assert seq.stopped == "imprecise" and stats.rounds.n == seq.cap and stats.verdict == "improved"
    assert not any(look.precise for look in seq.looks) and seq.expected_rounds > seq.cap
    lo, hi = stats.paired.ci95
    assert f"but the interval {lo:.4g}-{hi:.4g} is wider than the +-2% precision asked for at the cap of {seq.cap} " \
           "rounds" in stats.verdict_reason
    line = outcomes.line(outcome.comparison)
    assert line.startswith("verdict: improved (exit 0)")
    assert f"decided improved, but the interval {lo:.4g}-{hi:.4g} is wider than the +-2% precision" in line
    assert "the budget ran out before the interval reached the +-2% precision asked for" in line
    for lines in problems(outcome.out):
        assert lines == [], lines


def test_both_checkers_refuse_a_stop_the_precision_did_not_make(precise_fake, tmp_path):
    """The forger's edits, comparison.json re-derived and the bag re-sealed each time: a precision
    widened (an earlier look was within it: the campaign should have stopped there), removed (the
    first decided look ends it), the rounds cut to the first decided look (not precise: no stop), a
    precision on a fixed count; and the looks' precise flipped without re-deriving."""
    def edited(name, edits, rederive=True):
        copy = tmp_path / name
        shutil.copytree(precise_fake, copy)
        forge(copy, edits, rederive)
        return copy

    wider = edited("wider", {C.CAMPAIGN_JSON: lambda doc: doc.update(precision=0.5)})
    for lines in problems(wider):
        assert refused(lines, "the look after round 4 decided with an interval within its precision, but the "
                              "campaign went on to round 10"), lines
    _, verify_lines = problems(wider)
    assert refused(verify_lines, "precision is 0.5, campaign.yaml gives 0.05"), verify_lines
    gone = edited("gone", {C.CAMPAIGN_JSON: lambda doc: doc.update(precision=None)})
    for lines in problems(gone):
        assert refused(lines, "the look after round 4 decided, but the campaign went on to round 10"), lines
    fixed = edited("fixed", {C.CAMPAIGN_JSON: lambda doc: doc.update(budget_s=None, min_rounds=None)})
    for lines in problems(fixed):
        assert refused(lines, "precision 0.05: only with `rounds: auto`"), lines
    flipped = edited("flipped", {C.COMPARISON: lambda doc: doc["stats"]["sequential"]["looks"][0].update(
        precise=True)}, rederive=False)
    for lines in problems(flipped):
        assert refused(lines, "stats.sequential"), lines


def test_both_checkers_refuse_a_campaign_cut_short_at_its_first_decided_look(precise_fake, tmp_path):
    from test_engine import _truncate_to

    short = tmp_path / "short"
    shutil.copytree(precise_fake, short)
    _truncate_to(short, 4)
    doc = json.loads((short / C.COMPARISON).read_text())
    assert doc["stats"]["sequential"]["looks"] == [{"round": 4, "ci95": doc["stats"]["paired"]["ci95"],
                                                    "verdict": "improved", "precise": False}]
    for lines in problems(short):
        assert refused(lines, "rounds 4, below the cap", "no look decided with an interval within its precision at "
                              "round 4"), lines


def test_the_runner_says_why_it_goes_on_past_a_decided_look_and_why_it_stops(tmp_path):
    from fakes import ModelLauncher, write_fake_campaign
    from harness.engine.runner import Runner
    from test_newcomer_words import Notes

    notes = Notes()
    Runner(spec.load(write_fake_campaign(tmp_path, rounds="auto", budget_s=20, min_rounds=4, seed=7, precision=0.05)),
           (tmp_path / "bundle").absolute(), progress=notes,
           launcher=ModelLauncher(Model(items=4, item_s=0.1, noise=0.05, seed=3))).run()
    going = [line for line in notes.lines if "going on" in line]
    assert len(going) == 6 and going[0].startswith("rounds: auto: the look after round 4 decided improved, but its "
                                                   "interval ")
    assert going[0].endswith("is wider than the +-5% precision asked for: going on")
    assert "rounds: auto: the look after round 10 decided within the +-5% precision asked for; stopping" in notes.lines
