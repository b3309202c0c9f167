"""A suite is a family of claims (docs/statistics.md "A suite is a family"): on the fake launcher, a
suite campaign's benchmarks each get their own verdict and interval at their share of alpha, a
benchmark that decided leaves the later rounds (its runs hold only the undecided ones), the
campaign stops when every one has, and the verdict line, the summary and the JSON name the changed
ones. Both checkers re-derive which benchmarks each run holds: a bundle that keeps timing a decided
benchmark, or drops an undecided one, is refused; so is a one-sided question's answer edited."""
from __future__ import annotations

import json
import shutil

import pytest

from checks_support import family_bundle, forge, problems, refused
from fakes import Model, run_fake
from harness import contract as C, outcomes, rehash
from harness import rules as R
from harness.bundle import read
from harness.render import summary


@pytest.fixture(scope="module")
def suite_bundle(tmp_path_factory):
    return family_bundle(tmp_path_factory.mktemp("family"))  # item-0 0.40x, item-1 0.70x, four unchanged


def test_every_benchmark_gets_its_own_verdict_and_the_changed_ones_are_named(suite_bundle):
    c = read.load(suite_bundle).comparison
    fam = c.stats.family
    assert fam is not None and fam.members == 6 and fam.alpha == pytest.approx(C.SEQ_ALPHA / 6)
    verdicts = {m.id: m.verdict for m in fam.items}
    assert verdicts["item-0"] == verdicts["item-1"] == "improved"
    assert fam.counts["improved"] == 2 and fam.counts["regressed"] == 0
    assert [m.id for m in fam.leading()[:2]] == ["item-0", "item-1"]  # the changed first, the larger change first
    line = outcomes.line(c)
    assert "6 benchmarks: 2 improved (item-0 0." in line and ", item-1 0." in line and "0 regressed" in line
    assert "drift" not in line  # benchmarks leaving move the rounds' mean: no drift of the family's
    assert c.stats.per_item is None  # the family is the per-benchmark view


def test_a_decided_benchmark_leaves_the_later_rounds(suite_bundle):
    b = read.load(suite_bundle)
    fam = b.comparison.stats.family
    decided = {m.id: m.decided_at for m in fam.items if m.decided_at is not None}
    assert decided, "no benchmark decided"
    for run in b.runs:
        held = [it.id for it in run.items]
        assert held == R.run_items([m.id for m in fam.items], decided, run.label), run.label
    later = [r for r in b.runs if R.timed(r.label) and int(r.label[1:]) > min(decided.values())]
    assert later and all(len(r.items) < 6 for r in later)
    seq = b.comparison.stats.sequential
    if len(decided) == 6:  # the campaign stops once every benchmark has decided
        assert seq.stopped == "decided" and b.comparison.stats.rounds.n == max(decided.values())


def test_both_checkers_rederive_the_family_and_the_summary_leads_with_the_changed(suite_bundle, capsys):
    assert not rehash.rehash(str(suite_bundle)).problems
    r, v = problems(suite_bundle)
    assert not r and not v, (r, v)
    b = read.load(suite_bundle)
    text = summary.render(b, "out")
    table = text[text.index("Per benchmark, changed first"):]
    rows = [[c.strip() for c in ln.split("|")[1:6:4]] for ln in table.splitlines() if ln.startswith("| item-")]
    assert rows[:2] == [["item-0", "**improved**"], ["item-1", "**improved**"]] and len(rows) == summary.ITEMS_SHOWN
    assert "(1 more not shown" in table


def _timed_labels(bundle, after_round):
    return [p.stem for p in sorted((bundle / "data" / "runs").glob("*.json"))
            if R.timed(p.stem) and int(p.stem[1:]) > after_round]


def test_a_bundle_that_keeps_timing_a_decided_benchmark_is_refused(suite_bundle, tmp_path):
    b = read.load(suite_bundle)
    decided = {m.id: m.decided_at for m in b.comparison.stats.family.items if m.decided_at is not None}
    gone, at = min(decided.items(), key=lambda kv: kv[1])
    labels = _timed_labels(suite_bundle, at)
    assert labels
    forged = tmp_path / "kept"
    shutil.copytree(suite_bundle, forged)
    first = json.loads((forged / C.run_path("A1")).read_text())
    extra = next(it for it in first["items"] if it["id"] == gone)

    def keep(run):
        ids = [it["id"] for it in run["items"]]
        planned = [it["id"] for it in first["items"]]
        run["items"] = sorted(run["items"] + [dict(extra)], key=lambda it: planned.index(it["id"])) \
            if gone not in ids else run["items"]
    forge(forged, {C.run_path(label): keep for label in labels[:1]})
    for lines in problems(forged):
        assert refused(lines, "decided at round", "leaves the rounds after the look that decided it"), lines


def test_a_bundle_that_drops_an_undecided_benchmark_is_refused(suite_bundle, tmp_path):
    forged = tmp_path / "dropped"  # round 2 comes before the first look: every benchmark is still undecided
    shutil.copytree(suite_bundle, forged)
    forge(forged, {C.run_path("A2"): lambda run: run.update(items=run["items"][1:])})
    for lines in problems(forged):
        assert refused(lines, "runs/A2.json", "lacks", "still undecided at the look before it"), lines


def test_a_family_member_verdict_edited_alone_is_refused(suite_bundle, tmp_path):
    forged = tmp_path / "edited"
    shutil.copytree(suite_bundle, forged)

    def flip(doc):
        doc["stats"]["family"]["items"][0]["verdict"] = "regressed"
    forge(forged, {C.COMPARISON: flip}, rederive=False)
    for lines in problems(forged):
        assert refused(lines, "stats.family.items[0].verdict"), lines


def test_a_gate_answers_not_slower_and_says_so_in_words(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.1, ratio=1.0, noise=0.01, seed=5), rounds="auto",
                          budget_s=60, min_rounds=4, verdict={"question": "not_slower", "margin": 0.05})
    c = read.load(outcome.out).comparison
    assert c.stats.verdict == "not slower" and c.stats.question == "not_slower" and c.stats.margin == 0.05
    assert outcomes.exit_code(c) == outcomes.OK
    line = outcomes.line(c)
    assert line.startswith("verdict: not slower than 5% (exit 0): ") and ", at most " in line.split(" (candidate/base ")[0]
    assert "(candidate/base " in line
    assert ", at most " in line and "one-sided 95% bounds valid at every look" in line and "margin 5%" in line
    r, v = problems(outcome.out)
    assert not r and not v, (r, v)
    forged = tmp_path / "forged"
    shutil.copytree(outcome.out, forged)
    forge(forged, {C.CAMPAIGN_JSON: lambda doc: doc.update(margin=0.2)}, rederive=False)
    for lines in problems(forged):
        assert lines, "a margin edited alone passed"


def test_a_slow_down_fails_the_gate(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.1, ratio=1.3, noise=0.01, seed=6), rounds="auto",
                          budget_s=60, min_rounds=4, verdict={"question": "not_slower", "margin": 0.05})
    c = read.load(outcome.out).comparison
    assert c.stats.verdict == "regressed" and outcomes.exit_code(c) == outcomes.REGRESSED
    line = outcomes.line(c)
    assert line.startswith("verdict: regressed, slower than 5% (exit 5): ")
    figure = float(line.split("(exit 5): ")[1].split("x slower")[0])
    assert abs(figure - 1.3) < 0.05, line  # the model's 1.3x, measured
    assert "x slower, at least " in outcomes.line(c) and "(candidate/base " in outcomes.line(c)
    assert ", at least " in outcomes.line(c)


def test_at_the_cap_the_rule_says_how_many_rounds_it_expects_to_need(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=1.0, ratio=0.985, noise=0.03, seed=7), rounds="auto",
                          budget_s=40, min_rounds=4)
    c = read.load(outcome.out).comparison
    seq = c.stats.sequential
    assert seq.stopped == "cap" and c.stats.verdict == "inconclusive"
    assert seq.expected_rounds is not None and seq.expected_rounds > c.stats.rounds.n
    line = outcomes.line(c)
    assert "the budget ran out before a look decided; at this spread the rule expects " in line
    assert ("more rounds" in line or "more round " in line or "more than the" in line)
    assert not rehash.rehash(str(outcome.out)).problems
