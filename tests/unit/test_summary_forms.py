"""`harness summary` as a claim fit to post (issue 36, item 2): short by default (at most 60
lines, the long form behind --long), a job-summary and a pull-request comment form within
GitHub's limits (whole sections left out, said in a note), and the two JSON forms, which
parse and hold the verdict. The bundles are the model worker's (tests/fakes.py)."""
from __future__ import annotations

import json

import pytest

from fakes import comparison, many_items, run_fake
from harness import contract as C, records
from harness.bundle import read
from harness.cli import main as cli
from harness.render import summary

ITEMS = 150  # tests/campaign/test_summary_scale.py holds the forms to their limits at 1,500


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A campaign of ITEMS items, more than any form shows one row each for."""
    return many_items(tmp_path_factory.mktemp("big"), ITEMS)


@pytest.fixture(scope="module")
def loaded(big):
    """big, loaded once for the tests that read its records (none changes them)."""
    return read.load(big)


def page(bundle, *args, capsys) -> str:
    assert cli(["summary", str(bundle), *args]) == 0
    return capsys.readouterr().out


def test_the_default_summary_is_short_and_says_how_the_campaign_stopped(big, loaded, capsys):
    text = page(big, capsys=capsys)
    stats = loaded.comparison.stats
    seq = stats.sequential
    assert len(text.splitlines()) <= summary.SHORT_LINES, text
    assert seq.stopped == "decided" and f"Decided after {stats.rounds.n} rounds" in text
    assert "interval valid at every look" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| case-")]
    assert len(rows) == summary.ITEMS_SHOWN and f"Per item ({ITEMS}, worst first, 5 shown;" in text
    assert "The runs in execution order" not in text and "Summed worker-thread CPU" not in text
    long = page(big, "--long", capsys=capsys)
    assert "The runs in execution order" in long and "Summed worker-thread CPU" in long and "Cleanup:" in long
    assert len([ln for ln in long.splitlines() if ln.startswith("| case-")]) == C.PER_ITEM_SHOWN


def test_a_fixed_count_and_a_cap_are_said_as_such(tmp_path, capsys):
    outcome, _ = run_fake(tmp_path, rounds=5)
    assert "\n5 rounds (a fixed count), each round" in page(outcome.out, capsys=capsys)
    sequential = {"method": "", "first": 5, "cap": 9, "alpha": 0.05, "sides": 2, "levels": [0.003, 0.001],
                  "looks": [], "stopped": "cap", "expected_rounds": None}
    stats = comparison(stats={"rounds": {"n": 9}, "sequential": sequential}).stats
    assert summary._rounds(stats, {"rounds": None}) == "no look decided by the cap of 9 rounds"


@pytest.mark.parametrize("long", [False, True])
def test_the_comment_form_fits_githubs_limit_and_carries_its_marker(big, capsys, long):
    text = page(big, "--format", "comment", *(["--long"] if long else []), capsys=capsys)
    assert len(text) <= summary.COMMENT_LIMIT
    assert text.splitlines()[0] == "<!-- abba-harness:model -->" and text.count("<!--") == 1
    github = page(big, "--format", "github", *(["--long"] if long else []), capsys=capsys)
    assert len(github.encode()) <= summary.GITHUB_LIMIT and github.startswith("### Performance evidence: model")


def test_a_form_over_its_limit_leaves_out_whole_sections_and_says_which(loaded):
    bundle = loaded
    parts = summary.sections(bundle, "out/b", long=True)
    full = summary._join(parts)
    limit = len(full) - 100
    text = summary.bounded(parts, limit, len, "a test's limit")
    assert len(text) <= limit
    note = next(ln for ln in text.splitlines() if ln.startswith("Left out to fit a test's limit: "))
    left = note.split(": ", 1)[1].split(" (")[0].split(", ")
    assert left and all(s.name in left for s in parts if not s.keep and "\n".join(s.lines) not in text)
    for s in parts:  # a section is there whole or not at all; the essential ones always
        body = "\n".join(s.lines)
        assert (body in text) != (s.name in left)
        assert body in text or not s.keep
    assert text.rstrip().endswith("```")  # the commands close it
    with pytest.raises(ValueError):
        summary.bounded(parts, 100, len, "a tiny limit")


def test_the_json_form_is_the_signed_claim_and_more(big, loaded, capsys):
    from harness.attest.claim import predicate

    doc = json.loads(page(big, "--format", "json", capsys=capsys))
    bundle = loaded
    assert doc["schema"] == C.SCHEMAS["claim"] and doc["bundle"] == {"name": big.name, "digest": bundle.digest}
    assert doc["claim"] == records.to_json(predicate(bundle)) and doc["claim"]["verdict"] == "improved"
    assert doc["rounds"]["stopped"] == "decided" and doc["rounds"]["n"] == bundle.comparison.stats.rounds.n
    assert len(doc["per_item"]["worst"]) == C.PER_ITEM_SHOWN and doc["per_item"]["items"] == ITEMS


def test_the_benchmark_action_form_is_githubs_custom_format(big, loaded, capsys):
    rows = json.loads(page(big, "--format", "benchmark-action", capsys=capsys))
    bundle = loaded
    paired = bundle.comparison.stats.paired
    assert all(set(row) <= {"name", "unit", "value", "range", "extra"} and {"name", "unit", "value"} <= set(row)
               and isinstance(row["value"], float) for row in rows)
    first = rows[0]
    assert first["name"] == "model" and first["unit"] == "ratio (candidate/base)"
    assert first["value"] == paired.geomean_ratio
    assert first["range"] == f"\u00b1{(paired.ci95[1] - paired.ci95[0]) / 2:.4f}"
    assert "campaign verdict improved" in first["extra"] and bundle.digest in first["extra"]
    assert len([r for r in rows if r["name"].startswith("model/")]) == C.PER_ITEM_SHOWN
    assert rows[-1]["unit"] == "s"


def test_the_marker_is_an_html_comment_nothing_can_end():
    assert summary.marker("span_finding.v2") == "<!-- abba-harness:span_finding.v2 -->"
    for name in ("a-->b", "x--!>y", "<h1>", "--", "a\n-->"):
        inner = summary.marker(name)[len("<!-- "):-len(" -->")]
        assert "--" not in inner and ">" not in inner and "<" not in inner and "\n" not in inner


def test_the_text_form_is_what_compare_prints(big, capsys):
    assert cli(["compare", str(big)]) == 0
    printed = capsys.readouterr().out
    assert page(big, "--format", "text", capsys=capsys) == printed


def test_the_report_form_is_the_bundles_report_section(big, capsys):
    text = page(big, "--format", "report", capsys=capsys)
    assert text.startswith("## model\n") and "### Metrics" in text and "### Output parity" in text  # its name


def test_the_command_offers_every_form_of_the_one_list(big, capsys):
    """`--format` takes render/summary.py's FORMS, the one list: every form in its help, and a form
    not in it refused in one line naming them all."""
    from harness.cli import build_parser

    help_text = build_parser()._subparsers._group_actions[0].choices["summary"].format_help()
    assert all(kind in " ".join(help_text.split()) for kind in summary.FORMS)
    assert cli(["summary", str(big), "--format", "html"]) == 2
    err = capsys.readouterr().err
    assert err == f"harness summary: error: --format html: no such form; give one of {', '.join(summary.FORMS)}\n"


def test_per_item_verdicts_under_the_minimum_rounds_are_said_as_not_judged(tmp_path, capsys):
    """With fewer rounds than contract.MIN_ROUNDS no item is judged (the column says "not judged"):
    the header must not read "0 of 6 regressed and 0 improved" next to items at half the base's
    time (evidence/demo_instructions, decided after 4 rounds, read so); it says why."""
    outcome, _ = run_fake(tmp_path, rounds=C.MIN_ROUNDS - 1)
    text = page(outcome.out, capsys=capsys)
    head = next(ln for ln in text.splitlines() if ln.startswith("Per item ("))
    assert "regressed" not in head and "slower and" not in head, head
    assert (f"no item has a verdict of its own: {C.MIN_ROUNDS - 1} rounds are fewer than the {C.MIN_ROUNDS} an "
            "item's own interval needs") in head
    assert head.startswith("Per item (6, worst first, 5 shown;")
    rows = [ln for ln in text.splitlines() if ln.startswith("| item-")]
    assert len(rows) == summary.ITEMS_SHOWN and all(ln.rstrip(" |").endswith("not judged") for ln in rows)
