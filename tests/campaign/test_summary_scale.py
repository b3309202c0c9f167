"""`harness summary` at a large suite's scale (issue 36, item 2): a campaign of 1,500 items with
ids near the contract's 256 characters still gives a short default summary, a pull-request comment
within GitHub's 65,536 characters and a job summary within its 1 MiB, each with or without
--long, and the JSON form counts every item. tests/unit/test_summary_forms.py holds each form's
behaviour on 150 items; this file holds their limits where the items would overflow them, and
runs beside the unit tier (it times nothing and measures no process)."""
from __future__ import annotations

import json

import pytest

from fakes import many_items
from harness import contract as C
from harness.cli import main as cli
from harness.render import summary

pytestmark = pytest.mark.untimed

ITEMS = 1500


@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    return many_items(tmp_path_factory.mktemp("huge"), ITEMS)


def page(bundle, *args, capsys) -> str:
    assert cli(["summary", str(bundle), *args]) == 0
    return capsys.readouterr().out


def test_every_form_of_a_1500_item_campaign_fits_its_limit(huge, capsys):
    text = page(huge, capsys=capsys)
    assert len(text.splitlines()) <= summary.SHORT_LINES and f"Per item ({ITEMS}, worst first, 5 shown;" in text
    for long in ([], ["--long"]):
        comment = page(huge, "--format", "comment", *long, capsys=capsys)
        assert len(comment) <= summary.COMMENT_LIMIT and comment.startswith("<!-- abba-harness:model -->\n")
        github = page(huge, "--format", "github", *long, capsys=capsys)
        assert len(github.encode()) <= summary.GITHUB_LIMIT and github.startswith("### Performance evidence: model")
    doc = json.loads(page(huge, "--format", "json", capsys=capsys))
    assert doc["per_item"]["items"] == ITEMS and len(doc["per_item"]["worst"]) == C.PER_ITEM_SHOWN
