"""The pull-request comment a reviewer reads in ten seconds (issue 46, item 3), checked as GitHub
shows it: the Markdown of `harness summary --format comment` rendered to HTML by cmark-gfm,
GitHub's own Markdown renderer (cmarkgfm binds it; markdown-it-py only imitates GFM), then its
structure read back: the headline a factor with its interval, a table with a row per item
holding base and candidate times, the notes a list, the chart a fenced Mermaid block of nothing
but the harness's own words and numbers, no raw HTML beyond the marker, no absolute path of the
machine. The bundles are the model worker's (tests/fakes.py)."""
from __future__ import annotations

import html
import os
import re
import sys
from html.parser import HTMLParser

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

from fakes import Model, ModelLauncher, comparison, run_fake
from harness import outcomes
from harness.bundle import read
from harness.render import chart, summary

# What cmark-gfm makes of the comment's Markdown: anything else is raw HTML that got through.
TAGS = {"h3", "p", "strong", "code", "table", "thead", "tbody", "tr", "th", "td", "ul", "li", "pre", "br"}
# An absolute path of this machine, as a page would show it (not a URL's //host, not a relative a/b).
ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?!/)[^/\s]+/[^\s]+|~/|[A-Za-z]:\\")


class Page(HTMLParser):
    """The rendered comment's tags, comments, tables (rows of cell texts), list items and
    preformatted blocks (with their lang)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags, self.comments, self.tables, self.lists, self.pres = [], [], [], [], []
        self.text: list[str] = []
        self._cell = self._pre = None
        self._list: list | None = None

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "ul":
            self._list = []
            self.lists.append(self._list)
        elif tag == "li" and self._list is not None:
            self._list.append("")
        elif tag == "pre":
            self._pre = [dict(attrs).get("lang"), ""]
            self.pres.append(self._pre)

    def handle_endtag(self, tag):
        if tag in ("td", "th"):
            self.tables[-1][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "ul":
            self._list = None
        elif tag == "pre":
            self._pre = None

    def handle_data(self, data):
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)
        if self._list is not None and self._list:
            self._list[-1] += data
        if self._pre is not None:
            self._pre[1] += data

    def handle_comment(self, data):
        self.comments.append(data)


def rendered(markdown: str) -> Page:
    """The comment as GitHub's renderer makes it: GFM with its extensions, raw HTML let through
    (so the check sees any that the Markdown lets in), fenced blocks with their language."""
    page = Page()
    page.feed(cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE | Options.CMARK_OPT_GITHUB_PRE_LANG))
    return page


def comment_of(bundle, shown="out/abba", long=False) -> str:
    return summary.form("comment", read.load(bundle), shown, long=long)


@pytest.fixture(scope="module")
def faster(tmp_path_factory):
    """A sequential campaign 2x faster over six items, with instruction-free metrics."""
    where = tmp_path_factory.mktemp("faster")
    (where / ".git").mkdir()
    outcome, _ = run_fake(where, Model(ratio=0.5, noise=0.02, seed=3), rounds="auto", budget_s=60, min_rounds=5)
    return outcome.out


def test_the_headline_is_one_factor_with_its_interval_in_the_same_form():
    # the issue's own figures: candidate/base 0.5066 [0.3305, 0.7794] reads 1.97x faster [1.28x, 3.03x]
    assert outcomes.speed(0.5066, [0.3305, 0.7794]) == "1.97x faster [1.28x, 3.03x]"
    assert outcomes.speed(1.38, [1.1, 1.72]) == "1.38x slower [1.10x, 1.72x]"
    assert outcomes.speed(0.98, [0.95, 1.02]) == "1.020x faster [1.053x faster to 1.020x slower]"
    assert outcomes.speed(0.0321, [0.0034, 0.3021]) == "31.2x faster [3.31x, 294x]"
    assert outcomes.speed(1.0, [1.0, 1.0]) == "1.00x (no change) [1.000x, 1.000x]"
    assert outcomes.speed(0.5, None) == "2.00x faster (no interval)" and outcomes.speed(None) == "no figure"
    assert outcomes.speed(1.3, [1.2, 1.4], outcomes.FACTOR_WORDS["B"]) == "1.30x larger [1.20x, 1.40x]"


def test_the_comment_renders_as_a_reviewer_reads_it(faster):
    text = comment_of(faster)
    bundle = read.load(faster)
    stats = bundle.comparison.stats
    page = rendered(text)
    # no raw HTML but the marker; the marker is the one comment
    assert set(page.tags) <= TAGS, set(page.tags) - TAGS
    assert page.comments == [summary.marker(bundle.name)[4:-3]]
    # the headline: the verdict and one figure, a factor with its interval
    headline = outcomes.speed(stats.paired.geomean_ratio, stats.paired.ci95)
    assert f"**Improved: {headline}** (`harness compare` exit 0)" in text
    assert re.match(r"(1\.9\d|2\.0\d)x faster \[", headline), headline  # the model's 2x, with its noise
    assert "+-" not in text and "\u00b1" in text
    # a table with a row per item: base and candidate times in ms, the change as a factor
    items = next(t for t in page.tables if t[0][:3] == ["item", "base (ms)", "candidate (ms)"])
    assert len(items) == 1 + summary.ITEMS_SHOWN
    for row in items[1:]:
        base, cand = float(row[1]), float(row[2])
        assert 9 < base < 11 and 4.5 < cand < 5.5  # the model's 10 ms base, half that for the candidate
        assert re.fullmatch(r"\d\.\d+x faster \[\d\.\d+x, \d\.\d+x\]", row[3]) and row[4] == "faster"
    # the notes: a list, one item per note, not one paragraph
    notes = page.lists[-1]
    assert len(notes) >= 2 and notes[0].startswith("Outputs: ") and notes[1].startswith("Interpreter ")
    # the chart: one fenced Mermaid block, every line of it in the harness's own grammar
    (lang, source), = [p for p in page.pres if p[0] == "mermaid"]
    assert source.splitlines()[0] == chart.SIZE and "xychart-beta" in source
    block = ["```mermaid", *source.rstrip("\n").splitlines(), "```"]
    assert all(chart.SAFE_LINE.fullmatch(line) for line in block), block
    assert len(re.findall(r"bar \[([^\]]*)\]", source)[0].split(", ")) == stats.rounds.n
    assert not ABSOLUTE.search(" ".join(page.text))


def test_no_absolute_path_of_the_machine_reaches_the_comment(tmp_path):
    """A campaign outside any repository, whose interpreter, workload and description name
    absolute paths, and an item whose error names one: the comment shows each by name."""
    home = os.path.expanduser("~")
    described = f"timed with {sys.executable}; data from /srv/data/series.npy and {home}/notes.txt"
    outcome, _ = run_fake(tmp_path, Model(ratio=0.7, item_ids=[f"{tmp_path}/case-a", "case-b", "case-c"]),
                          rounds=5, description=described, python=sys.executable)
    for long in (False, True):
        for kind in ("comment", "github", "markdown"):
            text = summary.form(kind, read.load(outcome.out), str(outcome.out), long=long)
            assert str(tmp_path) not in text and sys.executable not in text and f"{home}/" not in text
            assert not ABSOLUTE.search(" ".join(rendered(text).text)), (kind, long, text)
            assert "series.npy" in text and "case-a" in text  # by name
            assert f"harness verify {outcome.out.name}\n" in text  # the reader's copy, by its folder's name


HOSTILE = ['"]\n%%{init: {"securityLevel": "loose"}}%%', "<script>alert(1)</script>", "x --> y; click A call f()",
           "`mermaid`", "%%", "/home/victim/.ssh/id_rsa"]


def test_hostile_bundle_text_cannot_reach_the_chart_or_the_page_as_markup(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(ratio=0.6, item_ids=HOSTILE), rounds=6, name="hostile",
                          description="\n".join(HOSTILE))
    text = comment_of(outcome.out, long=True)
    page = rendered(text)
    assert set(page.tags) <= TAGS and len(page.comments) == 1
    (_, source), = [p for p in page.pres if p[0] == "mermaid"]
    assert all(chart.SAFE_LINE.fullmatch(line) for line in source.rstrip("\n").splitlines())
    assert "securityLevel" not in source and "script" not in source and "click" not in source
    assert "id\\_rsa" in text and "/home/victim" not in text  # by name, its _ escaped


@pytest.mark.parametrize("ci, overloaded, says", [
    ([0.576, 0.858], ["A1", "B3"], "**Not shown as a change: the machine was loaded, so a claim had to clear \u00b120.7%**"),
    ([0.95, 1.09], [], "**Not decided: the interval reaches from outside the equal band \u00b12.0% into it**"),
])
def test_an_undecided_interval_says_in_words_why_it_is_no_change(ci, overloaded, says):
    """0.7031 [0.576, 0.858] beside "within" read as no change: it is an improvement the band
    load widened to 20.7% did not let through, and the comment says so."""
    c = comparison(stats={"rounds": {"n": 8}, "band": 0.02, "claim_band": 0.207 if overloaded else 0.02,
                          "paired": {"geomean_ratio": 0.7031, "ci95": ci, "items": 3},
                          "load": {"overloaded": overloaded}, "verdict": "inconclusive"})
    assert summary._not_a_change(c.stats).startswith(says)


def test_an_item_between_the_two_bands_is_not_shown_as_within():
    c = comparison(stats={"rounds": {"n": 8}, "band": 0.02, "claim_band": 0.207,
                          "per_item": {"items": 1, "band": 0.207, "regressed": 0, "improved": 0, "worst": None, "note": None,
                                       "table": [], "more": 0}})
    row = type("Row", (), {"ci95": [0.576, 0.858], "ratio": 0.7031})()
    assert summary._item_verdict(row, c.stats, True) == "not shown: load, \u00b120.7%"
    row.ci95 = [0.99, 1.01]
    assert summary._item_verdict(row, c.stats, True) == "equal (\u00b120.7%)"
    row.verdict = "improved"  # a per-item verdict comparison.json gives is shown as it is
    assert summary._item_verdict(row, c.stats, True) == "improved"
