"""The claim of every committed bundle fits where it is posted (issue 36, item 2, "done when"):
its default summary in 60 lines, its pull-request comment, long form included, within GitHub's
65,536 characters, its job summary within 1 MiB, its JSON forms parsing to its verdict. Each
bundle is verified once, as `summary` does (a bundle that does not verify fails here), then
every form is rendered from it."""
from __future__ import annotations

import json

import pytest

from conftest import ROOT

BUNDLES = sorted(p.name for p in (ROOT / "evidence").iterdir() if (p / "bagit.txt").is_file())


@pytest.mark.parametrize("name", BUNDLES)
def test_every_committed_bundle_has_a_short_claim_that_fits_its_forms(name):
    from harness.judge.survey import survey
    from harness.render import summary

    bundle = ROOT / "evidence" / name
    entry = survey([bundle], None)[0]
    assert not entry.problems, entry.problems[:3]
    shown = f"evidence/{name}"
    short = summary.form("markdown", entry.bundle, shown)
    assert len(short.splitlines()) <= summary.SHORT_LINES, short
    comment = summary.form("comment", entry.bundle, shown, long=True)
    assert comment.startswith("<!-- abba-harness:") and len(comment) <= summary.COMMENT_LIMIT
    assert len(summary.form("github", entry.bundle, shown, long=True).encode()) <= summary.GITHUB_LIMIT
    claim = json.loads(summary.form("json", entry.bundle, shown))
    rows = json.loads(summary.form("benchmark-action", entry.bundle, shown))
    assert claim["claim"]["verdict"] in short.lower() and claim["bundle"]["digest"] in short
    assert all({"name", "unit", "value"} <= set(row) for row in rows)
