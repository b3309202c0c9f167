"""Text from a bundle never becomes markup or a terminal control (issue 33, items 2 and 3), and
what `run`, `summary` and `verify` say of a campaign file outside any git repository (item 10)
and of one commit on both sides (item 11). harness/render/text.py owns both escapings: `cell`,
`md_lines`, `code`, `fence` for a page, `term` and the `Terminal` guard for a terminal."""
from __future__ import annotations

import io
import re

import pytest

from fakes import Model, ModelLauncher, run_fake
from harness import contract as C
from harness.cli import main as cli
from harness.records import CampaignWorkload, to_json
from harness.render import chart, text

LIVE_HTML = "<h1>Improved 3.2x: signed by the maintainers, VERIFIED</h1>"
HOSTILE = [
    LIVE_HTML,
    "# Improved\n> signed\n- VERIFIED\n1. ok\n---\n    indented code",
    "@octocat and @org/team, mail a@b.example",
    r"$\color{green}{\textsf{improved}}$ and $$x$$",
    "[verified](https://evil.example) ![x](https://evil.example/x.png) [^1] [ ] [x]",
    "see https://evil.example, http://a.example/b, www.evil.example and <https://auto.example>",
    "**bold** _em_ ~~struck~~ `code` \\*not\\* &lt;h1&gt; &#64;octocat | table | break",
    "fixes #1, closes owner/repo#22, see GH-333 and gh-4",  # references GitHub links in rendered text
]
ESCAPES = ["\x1b[2K\rverdict: improved (exit 0)", "\x1b]0;title\x07", "\x9b2K", "\u202eevil\u202c", "\u2066x\u2069",
           "\x7f", "a\u2028b", "\x85next"]
# Issue 45, attack 8: what shows as nothing or a blank, that str.isprintable lets through: the Hangul
# fillers, the braille blank, the combining grapheme joiner, a musical null notehead, the Khmer
# inherent vowels, variation selectors (Mongolian, standard, supplement); and beside them the
# default-ignorables it already refused (zero-width space, word joiner, a tag, soft hyphen), an
# unassigned and a private-use code point, and a no-break space.
INVISIBLE = ["\u115f", "\u1160", "\u3164", "\uffa0", "\u2800", "\u034f", "\U0001d159", "\u17b4", "\u17b5", "\u180b",
             "\u180f", "\ufe0f", "\U000e0100", "\u200b", "\u2060", "\U000e0041", "\u00ad", "\u0378", "\ue000", "\u00a0"]
SPOOFS = [f"s1{ch}" for ch in INVISIBLE]  # each reads as "s1"


def nothing_hidden(text: str) -> bool:
    """Every character of text shows as itself (line breaks and tabs aside)."""
    return not [ch for ch in text if ch not in "\n\t" and not C.shown(ch)]


def fenced_commands_only(page: str) -> bool:
    """The verify block and the standard-library checker's: each a fence around commands only
    (a hostile folder name that closed one would leave text or a third fence between them); the
    chart's Mermaid block, the harness's own words and numbers (render/chart.py), set aside."""
    charts = re.findall(r"(?ms)^```mermaid\n.*?^```$", page)
    assert len(charts) <= 1 and all(chart.SAFE_LINE.fullmatch(ln) for block in charts for ln in block.splitlines())
    lines = re.sub(r"(?ms)^```mermaid\n.*?^```$", "", page).splitlines()
    fences = [i for i, ln in enumerate(lines) if ln.startswith("```")]
    return len(fences) == 4 and all(lines[i].startswith(("harness ", "python "))
                                    for a, b in (fences[:2], fences[2:]) for i in range(a + 1, b))


def prose(page: str) -> str:
    """The page without its code blocks and code spans (their text is literal: never markup)."""
    page = re.sub(r"(?ms)^(`{3,})[^\n]*\n.*?^\1$", "", page)
    return re.sub(r"`[^`\n]*`", "", page)


def commands(page: str) -> list[str]:
    """The lines of the page's code blocks: what a reviewer pastes."""
    return [ln for block in re.findall(r"(?ms)^(`{3,})sh\n(.*?)^\1$", page) for ln in block[1].splitlines()]


def markdown_is_inert(page: str) -> None:
    """No raw HTML, no line a header, quote, list or rule, no mention, math, bare link or emphasis
    (an entity, &gt; at a line's start included, is text: CommonMark reads blocks from raw characters)."""
    assert "<" not in page and "$" not in page, page
    assert not re.search(r"(?<![&\w])@\w", page), page  # every @ is an entity, a word joiner after it
    assert not re.search(r"(?i)https?://|www\.", page), page
    # every # is an entity with a word joiner after it: no #1, repo#1 or GH-1 reference in the text
    assert not re.search(r"(?<!&)#(?!35;&#8288;|8288;|64;|36;)", page) and not re.search(r"(?i)\bgh-\d", page), page
    assert not re.search(r"(?<!\\)[*_~`\[\]|]", page.replace("\\\\", "")), page
    for line in page.splitlines():
        assert not re.match(r"\s*(#|>|[-+=]|\d+[.)]|\s{4})", line), line


@pytest.mark.parametrize("hostile", HOSTILE + ESCAPES)
def test_a_cell_is_inert_markdown(hostile):
    markdown_is_inert(text.cell(hostile))
    assert "\n" not in text.cell(hostile) and "\x1b" not in text.cell(hostile)


@pytest.mark.parametrize("spoof", SPOOFS)
def test_every_owner_shows_no_filler_raw(spoof):
    """A page blanks them, a code span drops them, a terminal shows each as its escape: "s1" plus a
    filler never reads as "s1"."""
    for owner in (text.cell, text.md_lines, text.code, text.md_url, text.shell_word, text.figure_text):
        assert nothing_hidden(owner(spoof)), (owner.__name__, ascii(owner(spoof)))
    assert nothing_hidden("\n".join(text.fence([spoof])))
    shown = text.term(spoof)
    assert nothing_hidden(shown) and shown != "s1" and shown.startswith("s1\\")
    below = io.StringIO()
    text.Terminal(below).write(spoof + "\n")
    assert below.getvalue() == shown + "\n"


def test_the_rule_covers_every_default_ignorable_code_point():
    """contract.shown against Unicode's Default_Ignorable_Code_Point as the `regex` module knows it
    (its own copy of the Unicode data), over every code point: none is shown as itself, nor any
    White_Space but the ASCII space; every ASCII letter, and letters and marks of other scripts, are."""
    regex = pytest.importorskip("regex")
    ignorable = regex.compile(r"\p{Default_Ignorable_Code_Point}|\p{White_Space}")
    leaks = [hex(cp) for cp in range(0x110000) if ignorable.match(chr(cp)) and chr(cp) != " " and C.shown(chr(cp))]
    assert not leaks, leaks
    assert all(C.shown(ch) for ch in "azAZ09 é日本語한국어ÅΏ")


@pytest.mark.parametrize("hostile", HOSTILE)
def test_a_multi_line_description_is_escaped_lines(hostile):
    page = text.md_lines(hostile)
    markdown_is_inert(page)
    # every line of it is there, none raw
    assert len(page.splitlines()) == len([ln for ln in hostile.splitlines() if ln.strip()])


def test_a_fence_outlasts_every_backtick_run_and_a_newline_cannot_close_it():
    name = "out/evil\n```\n<h1>VERIFIED</h1>\n````"
    block = text.fence([f"harness verify {text.shell_word(name)}"], "sh")
    assert len(block) == 3  # the newlines inside became spaces: one line between the fences
    opening, body, closing = block
    assert opening == "`````sh" and closing == "`````" and "`````" not in body
    assert text.shell_word("out/$(rm -rf ~)") == "'out/$(rm -rf ~)'"


def test_markdown_renders_no_element_from_bundle_text():
    """With a CommonMark renderer at hand: the hostile text is one paragraph of text."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark").enable(["table", "strikethrough"])
    for hostile in HOSTILE:
        html = md.render(text.md_lines(hostile))
        assert re.fullmatch(r"<p>.*</p>\n", html, re.S), html
        assert not re.search(r"<(?!/?p>|br />)", html), html


@pytest.mark.parametrize("hostile", ESCAPES + HOSTILE)
def test_term_shows_every_control_and_keeps_one_line(hostile):
    shown = text.term(hostile)
    assert all(ch.isprintable() for ch in shown), shown
    assert "\n" not in shown
    if "\x1b" in hostile:
        assert "\\x1b" in shown


def test_the_terminal_guard_keeps_line_breaks_and_shows_the_rest():
    below = io.StringIO()
    guard = text.Terminal(below)
    guard.write("verdict: regressed (exit 5)\x1b[1A\x1b[2K\r\x9b\u202e\n\tnext\n")
    assert below.getvalue() == "verdict: regressed (exit 5)\\x1b[1A\\x1b[2K\\r\\x9b\\u202e\n\tnext\n"
    assert guard.unguarded is below and guard.escape("\x07") == "\\x07"


def test_a_figure_label_is_no_mathtext():
    assert text.figure_text("$\\color{red}{x}$\nnext") == "\\$\\color{red}{x}\\$ next"


# --- a verified bundle that carries hostile text ------------------------------------------------------
CPU = "Fake CPU \x1b[2K\r\x1b]0;pwned\x07\x9b1A\u202e <h1>VERIFIED</h1> @octocat" + "".join(INVISIBLE)
DESCRIPTION = (f"{LIVE_HTML}\n# Improved 3.2x, signed\n@octocat @org/team please merge\n"
               r"$\color{green}{\textsf{improved}}$ [verified](https://evil.example) https://evil.example"
               "\nverified" + "".join(INVISIBLE))
ITEMS = ["item-0", "x\x1b[2K\r\x1b[1Averdict: improved (exit 0)", "<h1>VERIFIED</h1>", "@octocat $x$",
         "item-0" + "".join(INVISIBLE)]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A regressed campaign (ratio 1.5), honest in every byte, whose description, item ids and
    CPU model are hostile, sealed in a folder whose name holds a newline and a closing fence."""
    where = tmp_path_factory.mktemp("hostile")
    out = where / "evil\n```\n<h1>VERIFIED</h1>"
    launcher = ModelLauncher(Model(ratio=1.5, noise=0.01, item_ids=ITEMS), environment={"cpu_model": CPU})
    outcome, _ = run_fake(where, out=out, launcher=launcher, rounds=6, description=DESCRIPTION)
    assert outcome.comparison.stats.verdict == "regressed"
    return outcome.out


def test_summary_of_a_hostile_bundle_has_nothing_live(hostile, capsys):
    assert cli(["summary", str(hostile)]) == 0
    page = capsys.readouterr().out
    assert "<" not in prose(page)
    assert [ln for ln in page.splitlines() if ln.startswith("#")] == [ln for ln in page.splitlines()
                                                                        if ln.startswith("### Performance evidence")]
    assert not re.search(r"(?<![&\w])@\w", page) and "$" not in page and "https://" not in page
    assert "\x1b" not in page and "\x9b" not in page and "\u202e" not in page and "\r" not in page
    assert "**Regressed: " in page and nothing_hidden(page)
    # the folder's newline cannot close the fence: the blocks hold commands only
    assert fenced_commands_only(page)


@pytest.mark.parametrize("command, code, last", [
    (["compare"], 5, None), (["verify"], 0, None)])
def test_the_terminal_shows_hostile_text_as_characters(hostile, capsys, command, code, last):
    assert cli([*command, str(hostile)]) == code
    cap = capsys.readouterr()
    shown = cap.out + cap.err
    for raw in ("\x1b", "\x9b", "\r", "\u202e", "\x07"):
        assert raw not in shown, (raw, shown)
    assert nothing_hidden(shown), ascii(shown)
    if command == ["compare"]:
        first = shown.splitlines()[0]
        assert first.startswith("verdict: regressed (exit 5)"), first
        # nothing of an item id starts a line that could pass for a verdict
        assert [ln for ln in shown.splitlines() if "verdict:" in ln] == [first]


def test_report_of_a_hostile_bundle_has_nothing_live(hostile, capsys):
    assert cli(["report", str(hostile), "-o", "-"]) == 0
    page = capsys.readouterr().out
    assert "<h1" not in prose(page) and "\x1b" not in page and not re.search(r"(?<![&\w])@\w", prose(page))
    assert not [ln for ln in page.splitlines() if ln.startswith("#") and "Improved" in ln]
    assert nothing_hidden(page)


# --- item 10: a campaign file outside any git repository ------------------------------------------------
def test_a_campaign_outside_git_has_a_summary_that_suggests_only_what_works(hostile, tmp_path, capsys):
    from harness.judge.anchors import UNANCHORED

    assert cli(["summary", str(hostile)]) == 0
    page = capsys.readouterr().out
    shown = commands(page)
    assert len(shown) == 2 and shown[0].startswith("harness verify ") and "rehash.py" in shown[1]
    assert not [ln for ln in shown if "--repo" in ln or "reproduce" in ln]
    assert "outside any git repository" in page
    assert cli(["verify", str(hostile)]) == 0
    assert f"note: {UNANCHORED}" in capsys.readouterr().out
    # `verify --repo` and `reproduce` find the campaign file by this anchor: one line why not
    from harness.judge.anchors import AnchorError, anchor
    from harness.bundle import read

    with pytest.raises(AnchorError) as refused:
        anchor(tmp_path, read.load(hostile).campaign.campaign_path, "campaign_path")
    line = str(refused.value)
    assert "\n" not in line and "outside any git repository" in line and "`harness verify BUNDLE`" in line


def test_the_runner_says_so_in_one_line(tmp_path):
    from harness.engine.runner import Runner
    from harness.plan import spec
    from fakes import write_fake_campaign

    path = write_fake_campaign(tmp_path, rounds=2)
    runner = Runner(spec.load(path), (tmp_path / "b").absolute(), launcher=ModelLauncher(Model()))
    runner.run()
    assert "\n" not in runner.unanchored and "outside any git repository" in runner.unanchored
    assert "verify --repo" in runner.unanchored and "reproduce" in runner.unanchored


def test_a_campaign_inside_a_repository_keeps_every_command(tmp_path, capsys):
    (tmp_path / ".git").mkdir()  # the campaign file's folder is a repository's top: campaign_path relative
    outcome, _ = run_fake(tmp_path, rounds=2)
    assert cli(["summary", str(outcome.out)]) == 0
    page = capsys.readouterr().out
    shown = commands(page)
    assert len(shown) == 3 and shown[0].endswith(" --repo .") and shown[1].startswith("harness reproduce ")
    assert shown[2].startswith("python -S harness/rehash.py ")  # its own block: run from the harness's sources
    assert "outside any git repository" not in page and "clone of the repository" in page


# --- item 11: one commit on both sides ------------------------------------------------------------------
def test_the_same_commit_refusal_says_how_to_run_a_against_a(tmp_path):
    from harness.plan.spec import SpecError

    with pytest.raises(SpecError) as refused:
        run_fake(tmp_path, rounds=2, candidate={"rev": "HEAD~1"})
    line = str(refused.value)
    assert "nothing to compare" in line and "\n" not in line
    assert "harness calibrate" in line and "git commit --allow-empty" in line


# --- issue 36, item 2: every form `summary --format` gives keeps the hostile text inert ---------------------
@pytest.mark.parametrize("form", ["markdown", "github", "comment"])
@pytest.mark.parametrize("long", [False, True])
def test_every_markdown_form_of_a_hostile_bundle_has_nothing_live(hostile, capsys, form, long):
    from harness.render.summary import marker

    assert cli(["summary", str(hostile), "--format", form] + (["--long"] if long else [])) == 0
    page = capsys.readouterr().out
    if form == "comment":  # the marker, the one raw HTML, is the first line and is the campaign's name only
        first, page = page.split("\n", 1)
        assert first == marker("model") == "<!-- abba-harness:model -->"
    assert "<" not in prose(page) and "$" not in page and "https://" not in page
    assert not re.search(r"(?<![&\w])@\w", page)
    assert not any(raw in page for raw in ("\x1b", "\x9b", "\u202e", "\r", "\x07"))
    assert nothing_hidden(page), [ascii(ln) for ln in page.splitlines() if not nothing_hidden(ln)]
    assert [ln for ln in page.splitlines() if ln.startswith("#")] == [page.splitlines()[0]]
    assert fenced_commands_only(page)
    assert re.search(r"\*\*Regressed: [0-9.]+x slower \[[^]]*\]\*\* \(`harness compare` exit 5\)", page)
    for line in page.splitlines():  # every item id that reaches the table is one inert cell
        if line.startswith("| ") and "VERIFIED" in line:
            assert "&lt;h1&gt;VERIFIED&lt;/h1&gt;" in line


@pytest.mark.parametrize("form", ["json", "benchmark-action"])
def test_the_json_forms_of_a_hostile_bundle_are_ascii_and_hold_no_markup(hostile, capsys, form):
    import json

    assert cli(["summary", str(hostile), "--format", form]) == 0
    out = capsys.readouterr().out
    assert out.isascii() and not re.search(r"[<>&\x00-\x09\x0b-\x1f\x7f]", out)
    doc = json.loads(out)
    if form == "json":  # data: the ids as they are (fillers as \u escapes), for a dashboard to escape
        assert {row["id"] for row in doc["per_item"]["worst"]} == set(ITEMS)
        assert doc["claim"]["verdict"] == "regressed" and doc["claim"]["exit_code"] == 5
    else:  # github-action-benchmark writes names and extras into its own Markdown: they are inert already
        for row in doc:
            markdown_is_inert(row["name"].replace("/", " "))
            markdown_is_inert(row["extra"])
            assert nothing_hidden(row["name"]) and nothing_hidden(row["extra"]), row  # decoded: no filler either


def test_the_text_form_of_a_hostile_bundle_shows_every_control_escaped(hostile, capsys):
    """`summary --format text` is the terminal's text: no control byte of the bundle reaches it raw."""
    assert cli(["summary", str(hostile), "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("verdict: regressed (exit 5): ")
    assert not any(raw in out for raw in ("\x1b", "\x9b", "\u202e", "\r", "\x07"))
    assert nothing_hidden(out), ascii(out)


def _campaign_record(workload: CampaignWorkload, labels: list):
    """A campaign.json of this harness around a workload, the rest plain placeholders."""
    from harness import records

    return records.CampaignRecord(
        schema=C.SCHEMAS["campaign"], name="suite", description="", notes="", campaign_path=None, order="AB",
        rounds=None, budget_s=None, min_rounds=None, precision=None, stage_rounds=None, seed=None, labels=labels,
        slots=1,
        timeouts=records.Timeouts(60.0, 600.0), workload=workload, build=[], overrides={},
        revisions={v: records.Pin("HEAD", "0" * 40) for v in ("base", "candidate")},
        python={"base": None, "candidate": None}, launch="fresh", preload=[], cores=None,
        sandbox=records.CampaignSandbox("on", False, []), stages={}, optional_stages=[], stage_calls={}, env={},
        golden=None, golden_sha256=None, noise_floor=None, noise_floor_sha256=None, threshold=0.02,
        question="claim", margin=None, interference=None, parity=records.ParityBound(None), metrics=["wall"],
        instructions=None)


def test_a_suites_lines_on_the_terminal_carry_no_markdown_escapes(tmp_path):
    """`harness run` of a `suite:` campaign prints what its benchmarks gave on a terminal: the
    path, the `select` regular expression and a return's type name as typed (an escaped
    `AllShortestPaths\\\\.time` is another expression), controls still shown escaped; the page
    keeps its Markdown escapes."""
    import json

    from harness import contract as C
    from harness.commands.run import suite_lines

    select = r"AllShortestPathsGrid\.time_all_shortest_paths\((8|10)\)"
    workload = CampaignWorkload(entry=C.SUITE_ENTRIES["asv"], path=None, params={
        "kind": "asv", "path": "bench/test_attrs_collections.py", "select": select}, sys_path=[], items=None,
        prepare=None)
    campaign = _campaign_record(workload, labels=["A1"])
    why = "not data: returned bench.test_x.<locals>.C \x1b[2K"
    record = {"status": "ok", "items": [{"id": "t[a_b]", "error": None, "fields": {}}],
              "metrics": {"suite": {"outputs": {"t[a_b]": why}}}}
    (tmp_path / "data" / "runs").mkdir(parents=True)
    (tmp_path / C.CAMPAIGN_JSON).write_text(json.dumps(to_json(campaign)))
    (tmp_path / C.run_path("A1")).write_text(json.dumps(record))
    shown = "\n".join(suite_lines(tmp_path))
    assert f"asv benchmarks of bench/test_attrs_collections.py selected by {select}," in shown
    assert "returned bench.test_x.<locals>.C \\x1b[2K (1)" in shown and "\x1b" not in shown
    assert "\\_" not in shown and "&lt;" not in shown and "\\|" not in shown
    page = "\n".join(text.suite_text(workload, {}, [record]))
    assert "test\\_attrs\\_collections.py" in page and "&lt;locals&gt;" in page and "\x1b" not in page
    auto = " per timed item (suite.number: auto: each benchmark's own count, calibrated on the base's pre-flight)"
    for number, said in (("3\n```\n<b>@someone\x1b[2K", "once"), (True, "once"), (57, "57 times per timed item"),
                         ({"<b>@someone\x1b[2K": 8, "t[a_b]": "<b>\x1b[2K", "x": [1]}, "1-8 time(s)" + auto),
                         ({"t[a_b]": 4}, "4 time(s)" + auto)):
        record["metrics"]["suite"]["number"] = number  # a bundle's count: only a whole number is read
        (tmp_path / C.run_path("A1")).write_text(json.dumps(record))
        for shown in ("\n".join(suite_lines(tmp_path)), "\n".join(text.suite_text(workload, {}, [record]))):
            assert f"calling each benchmark {said} (its setup" in shown
            assert "\x1b" not in shown and "<b>" not in shown and "@someone" not in shown
