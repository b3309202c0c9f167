"""Text: the tables, cells and stage tables every renderer prints (report, compare, run,
summary, fleet), and the two owners of how text from a bundle is shown. On a page (Markdown,
HTML): `cell` (also `md_text`) for a line, `md_lines` for a multi-line description, `code` for
a code span, `fence` for a code block, `md_url` for a link's target, `shell_word` for a path in a
command to paste, `figure_text` for a figure's label. On a terminal: `term` for a line, and
`Terminal`, the guard cli puts on stdout and stderr. No bundle text (a description, an item id,
a field name, an error message, a machine's name, a folder's name) becomes markup, a mention, a
link, math, or a terminal control (docs/guarantees.md, "Text from a bundle")."""
from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from harness.contract import all_shown, shown

if TYPE_CHECKING:
    from harness.bundle.model import Comparison, Stage
    from harness.records import CampaignWorkload

NA = "n/a"
STAGES_SHOWN = 5  # the short table `run` and `compare` print: the stages that dominate base CPU

# --- Markdown: the one owner of how bundle text reaches a page ------------------------------------
# Every ASCII character CommonMark or GitHub reads as syntax anywhere in a line: HTML, entities and
# autolinks (< > &), code spans and fences (` ~), emphasis and strikethrough (* _ ~), links, images,
# footnotes and task lists ([ ]), table breaks (|), backslash escapes themselves (\\), headers (#,
# an entity below), math ($, an entity: GitHub reads math before escapes), mentions (@) and issue references (#123,
# owner/repo#123, GH-123): an entity and a word joiner, since GitHub finds mentions and references
# in the rendered text, where an entity is an @ or # again. What is syntax only at a line's start
# (- + = and `1.` lists, setext rules, indented code) is escaped there. A commit SHA in bundle text
# may still link to that commit of the page's own repository: harmless, and what a reader wants.
_MD = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "\\": "\\\\", "`": "\\`", "*": "\\*", "_": "\\_",
                     "~": "\\~", "[": "\\[", "]": "\\]", "|": "\\|", "#": "&#35;&#8288;", "$": "&#36;",
                     "@": "&#64;&#8288;"})
_WORD_JOINER = "&#8288;"  # invisible: breaks what GitHub would link (http://, www., GH-1) without a visible mark
_AUTOLINK = re.compile(r"(?i)(?<=[a-z0-9])(:)(?=//)|(?<=\bwww)(\.)|(?<=\bgh)(-)(?=\d)")
_LINE_START = re.compile(r"^(\d{1,9})([.)])|^([-+=])")


def _printable(text: str, instead: str = " ") -> str:
    """Every character a page or terminal could take as a control (C0, C1, DEL, line and paragraph
    separators, bidi overrides and other format characters) or that shows as nothing or a blank
    (default-ignorable code points, fillers: contract.shown) replaced by `instead`."""
    return text if all_shown(text) else "".join(ch if shown(ch) else instead for ch in text)


def _bounded(x: Any, limit: int) -> str:
    if isinstance(x, (dict, list)):
        x = json.dumps(x, sort_keys=True)
    text = str(x)
    return text[:limit - 3] + "..." if len(text) > limit else text


def cell(x: Any, limit: int = 400) -> str:
    """Bundle text as one inert line of Markdown (a table cell, a sentence, a paragraph): no
    HTML, entity, link, autolink, mention, math, emphasis, code span, header, list or table
    break; line breaks and controls become spaces; at most `limit` characters of the text."""
    if x is None:
        return NA
    text = _printable(_bounded(x, limit)).strip().translate(_MD)
    text = _LINE_START.sub(lambda m: f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}", text)
    return _AUTOLINK.sub(lambda m: f"{m[1]}{_WORD_JOINER}" if m[1] else f"{_WORD_JOINER}{m[2] or m[3]}", text)


md_text = cell  # the name the docs use for the Markdown owner


def md_lines(x: Any, limit: int = 1000) -> str:
    """Multi-line bundle text (a description) as inert Markdown lines: each line through `cell`,
    empty lines dropped, joined by hard line breaks, so no line of it starts a header, quote or list."""
    if x is None:
        return NA
    lines = [cell(line, limit) for line in _bounded(x, limit).splitlines() if _printable(line).strip()]
    return "\\\n".join(lines) or NA


# An absolute path of the machine that made a bundle (an interpreter in a venv, a workload or a
# campaign file outside a repository, a module's origin in an error): POSIX `/a/b...` (two parts at
# least, not the `//` of a URL), `~/...`, or a Windows drive `C:\...`. A page shows it by name.
_ABSOLUTE = re.compile(r"(?<![\w.:/~\\-])(?:~|/(?=[^/\s]))(?:/?[^/\s'\"(),;|<>`\[\]]+)*/[^/\s'\"(),;|<>`\[\]]+"
                       r"|(?<![\w])[A-Za-z]:\\(?:[^\\\s'\"(),;|<>`]+\\)*[^\\\s'\"(),;|<>`]+")
_PACKAGES = ("site-packages", "dist-packages")


def short_path(path: str) -> str:
    """An absolute path by name: what follows site-packages (a module's import path), else its
    last part."""
    parts = [p for p in re.split(r"[/\\]", path) if p]
    for folder in _PACKAGES:
        if folder in parts[:-1]:
            return "/".join(parts[len(parts) - parts[::-1].index(folder):])
    return parts[-1] if parts else path


def no_paths(x: Any) -> Any:
    """Bundle text with every absolute path of the machine shown by name (`short_path`), so a page
    posted from a runner or a laptop never carries its home folder, venv or user name; anything not
    text is returned as it is. Relative paths (what a reader finds in a clone) stay as written."""
    if not isinstance(x, str):
        return x
    return _ABSOLUTE.sub(lambda m: short_path(m[0]), x)


def band(x: float) -> str:
    """An equal band as a page shows it: "±2.0%"."""
    return f"\u00b1{100 * x:.1f}%"


def ms(seconds: Any) -> str:
    """A time in milliseconds at three significant digits (n/a for none)."""
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not math.isfinite(seconds):
        return NA
    v = 1000 * seconds
    return f"{v:,.0f}" if v >= 999.5 else f"{v:#.3g}".rstrip(".")


def code(x: Any) -> str:
    """Bundle text inside a code span: backticks and controls removed, bounded."""
    text = "".join(ch for ch in _printable(str(x)[:400], "") if ch != "`")
    return f"`{text}`" if text else NA


def fence(lines: list, info: str = "") -> list[str]:
    """A fenced code block holding `lines` literally: each line's controls become spaces (so none
    can end the block early), and the fence is longer than any run of backticks inside."""
    body = [_printable(str(line)) for line in lines]
    longest = max((len(run) for line in body for run in re.findall("`+", line)), default=0)
    mark = "`" * max(3, longest + 1)
    return [mark + info, *body, mark]


def md_url(x: Any) -> str:
    """A path as a link's destination: percent-encoded, so no character of it ends the link."""
    from urllib.parse import quote

    return quote(_printable(str(x), ""), safe="/")


def shell_word(x: Any) -> str:
    """A path from a bundle or its reader as one word of a shell command a reader may paste:
    controls removed, quoted where it holds anything a shell reads."""
    import shlex

    return shlex.quote(_printable(str(x), ""))


def figure_text(x: Any, width: int = 28) -> str:
    """Bundle text for a figure (matplotlib): one line, no mathtext ($ is literal), bounded."""
    return _printable(_bounded(x, width)).replace("$", "\\$")


def tcell(x: Any, limit: int = 400) -> str:
    """Bundle text as one cell of a table printed on a terminal (`run`, `compare`): one line, every
    control shown escaped (`term`), `|` escaped so the columns hold; no Markdown escapes to read."""
    return NA if x is None else tline(x, limit).replace("|", "\\|")


def tline(x: Any, limit: int = 400) -> str:
    """Bundle text inside a sentence printed on a terminal (`run`): one line, every control shown
    escaped (`term`), bounded; no Markdown escapes, so a path or a regular expression reads as typed."""
    return NA if x is None else term(_bounded(x, limit))


# --- terminals: the one owner of how bundle text reaches a terminal -------------------------------
# A character a terminal could act on (ESC, CSI \x9b and every other C0 and C1 control, DEL, bidi
# overrides and isolates, zero-width and other format characters, line and paragraph separators),
# or one that shows as nothing or a blank (contract.shown: fillers, variation selectors), is shown
# as its escape, `\x1b`, `\u202e`, `\u3164`: visible, and never able to erase, move or recolour a
# line, nor to pass for another name. `term` makes one line (\n shown too); `Terminal` guards a
# whole stream (cli installs it on stdout and stderr), keeping only its line breaks and tabs.
def _escape(ch: str) -> str:
    return ascii(ch)[1:-1]  # \x1b, \r, \u202e: Python's own spelling


def term(x: Any, keep: str = "") -> str:
    """Text for a terminal: every character but those in `keep` that is not printable or shows as
    nothing or a blank (contract.shown) shown escaped."""
    text = str(x)
    return text if all_shown(text) else "".join(ch if shown(ch) or ch in keep else _escape(ch) for ch in text)


class Terminal:
    """A text stream whose every write goes through `term`, line breaks and tabs kept: whatever a
    command prints (its own words, a bundle's text, an exception's message) reaches the terminal
    as characters, never as control. `unguarded` is the stream below and `escape` the rule, for a
    progress bar that moves the cursor itself (harness/engine/progress.py)."""

    def __init__(self, stream):
        self.unguarded = stream

    @staticmethod
    def escape(text) -> str:
        return term(text, keep="\n\t")

    def write(self, text):
        self.unguarded.write(self.escape(text))
        return len(text)

    def __getattr__(self, name):
        return getattr(self.unguarded, name)


def num(x: Any, decimals: int = 3) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    if isinstance(x, float):
        return f"{x:.{decimals}f}" if math.isfinite(x) else str(x)
    return NA if x is None else cell(x)


def pct(x: Any, decimals: int = 2) -> str:
    return f"{x:+.{decimals}f}%" if isinstance(x, (int, float)) and not isinstance(x, bool) else NA


def metric(x: Any) -> str:
    if isinstance(x, float) and math.isfinite(x) and x != 0 and (abs(x) >= 1e6 or abs(x) < 1e-3):
        return f"{x:.4e}"
    return num(x, 4)


def table(rows: list[dict], right: tuple = ()) -> str:
    """A Markdown table; cells are strings already (callers pass them through cell/num)."""
    if not rows:
        return "_none_"
    columns = list(dict.fromkeys(k for row in rows for k in row))
    body = [[row.get(c, NA) if isinstance(row.get(c, NA), str) else cell(row.get(c)) for c in columns]
            for row in rows]
    widths = [max(3, len(c), *(len(r[i]) for r in body)) for i, c in enumerate(columns)]

    def line(values):
        return "| " + " | ".join(v.rjust(w) if c in right else v.ljust(w)
                                 for v, w, c in zip(values, widths, columns)) + " |"

    rule = "|" + "|".join((":" + "-" * (w + 1) if c not in right else "-" * (w + 1) + ":")
                          for w, c in zip(widths, columns)) + "|"
    return "\n".join([line(columns), rule] + [line(r) for r in body])


def ratio_text(ratio: Any, ci: Any) -> str:
    if not isinstance(ratio, (int, float)) or not ci:
        return "no interval"
    return f"{ratio:.4f} [{ci[0]:.4f}, {ci[1]:.4f}]"


def metrics_table(comparison: Comparison, esc=cell) -> str:
    """Every metric of comparison.json `metrics` in one table: its own verdict, its change as a
    factor with its interval, in the metric's words (`outcomes.speed`: faster, smaller, fewer;
    instruction counts have no interval: exact counts), the mean per run of each variant in its
    unit, and its equal band."""
    from harness import outcomes

    rows = []
    for m in comparison.metrics:
        words = outcomes.FACTOR_WORDS.get(m.unit, outcomes.COUNT_WORDS)
        shown = outcomes.speed(m.ratio, m.ci95, words) if m.ratio is not None else "not measured"
        moved = (f"{outcomes.quantity(m.base, m.unit)} \u2192 {outcomes.quantity(m.candidate, m.unit)}"
                 if m.base is not None and m.candidate is not None else NA)
        rows.append({"metric": m.title, "verdict": esc(m.verdict), "change [interval]": shown,
                     "base \u2192 candidate (mean per run)": moved, "band": band(m.band), "of": esc(m.of, 120)})
    return table(rows)


def verdict_word(comparison: Comparison) -> str:
    """The one word a summary row shows for a comparison."""
    from harness import outcomes

    code_ = outcomes.exit_code(comparison)
    words = {outcomes.UNUSABLE: "unusable", outcomes.PARITY: "parity mismatch", outcomes.FAILED: "campaign failed"}
    return words.get(code_) or cell(outcomes.answer_word(comparison.stats))


# --- stage tables --------------------------------------------------------------------------------
def stage_order(stages: dict[str, Stage]) -> list[str]:
    """Stage names, most base self CPU first (ties by name): where the base's time went."""
    def base(name):
        v = stages[name].base_self_cpu_s
        return v if v is not None else -1.0
    return sorted(stages, key=lambda name: (-base(name), str(name)))


def stage_cells(s: Stage, prefix: str = "") -> dict:
    """One stage's base and candidate self CPU and their ratio, as every stage table shows them."""
    return {f"{prefix}base self": num(s.base_self_cpu_s, 4),
            f"{prefix}candidate self": num(s.candidate_self_cpu_s, 4),
            f"{prefix}candidate/base": num(s.ratio, 3)}


def stage_table(stages: dict[str, Stage], top: int | None = None, incl: bool = True, esc=cell) -> tuple[str, int]:
    """The stage self CPU table, most base self CPU first, and how many stages `top` left out;
    esc: how a stage's name is escaped (`cell` on a page, `tcell` on a terminal)."""
    names = stage_order(stages)
    rows = []
    for name in names[:top]:
        s = stages[name]
        calls = s.calls_per_run
        if isinstance(calls, dict):
            calls = ", ".join(f"{k}: {calls[k]}" for k in sorted(calls))  # escaped once, below
        row = {"stage": esc(name), "calls per run": esc(calls) if isinstance(calls, str) else num(calls),
               **stage_cells(s)}
        if incl:
            row.update({"base incl": num(s.base_incl_cpu_s, 4), "candidate incl": num(s.candidate_incl_cpu_s, 4)})
        if not (s.base_installed and s.candidate_installed):
            row["stage"] += " (not installed in every run)"
        rows.append(row)
    right = ("calls per run", "base self", "candidate self", "candidate/base", "base incl", "candidate incl")
    return table(rows, right=right), len(names) - len(rows)


def stage_summary(comparison: Comparison) -> list[str]:
    """The short stage table `harness run` and `harness compare` print: the top stages by base
    self CPU, so a terminal shows where the time went without opening REPORT.md."""
    stages = comparison.stages
    if not stages:
        return []
    text, left = stage_table(stages, top=STAGES_SHOWN, incl=False, esc=tcell)
    head = "stage self CPU (s per run, mean over ok runs), most base CPU first"
    return [head + (f"; {left} smaller stage(s) left out (REPORT.md has all):" if left else ":"), text]


def calls_per_item(number: Any) -> tuple:
    """How many calls each item's timed item made, from a run's suite metrics (suite.number: one
    count, or each benchmark's own as `suite.number: auto` calibrated them; a bundle's text, so
    only whole numbers are read, anything else reads as 1): (item -> calls, the set of counts)."""
    def whole(n: Any) -> int:
        return n if isinstance(n, int) and not isinstance(n, bool) and n > 1 else 1
    if isinstance(number, dict) and number:
        return (lambda item: whole(number.get(item))), {whole(n) for n in number.values()}
    count = whole(number)
    return (lambda item: count), {count}


def _calls(number: Any) -> str:
    """How many calls a timed item made (calls_per_item), in words."""
    _, counts = calls_per_item(number)
    low, high = min(counts), max(counts)
    if isinstance(number, dict) and number:
        return (f"{low if low == high else f'{low}-{high}'} time(s) per timed item (suite.number: auto: each "
                "benchmark's own count, calibrated on the base's pre-flight)")
    return f"{low} times per timed item" if low > 1 else "once"


MEASURED_SHOWN = 8


def measured_text(runs: list, esc=cell) -> str:
    """asv's track, mem and peakmem benchmarks (metrics suite.measured: measured once per run
    before the clock, not timed): each one's median value per variant, from the runs' records
    (dicts with variant and metrics); "" when there are none. A value that is not a number (a
    bundle's text) is shown as text, from the first run that has it."""
    import statistics

    values: dict = {}
    for run in runs:
        info = ((run.get("metrics") or {}).get("suite") or {}) if isinstance(run, dict) else {}
        measured = info.get("measured") if isinstance(info, dict) else None
        if not isinstance(measured, dict):
            continue
        for name, entry in list(measured.items())[:200]:
            if isinstance(entry, dict):
                values.setdefault(str(name), (entry, {}))[1].setdefault(str(run.get("variant")), []).append(
                    entry.get("value", entry.get("error")))
    if not values:
        return ""

    def shown(found: list) -> str:
        numbers = [v for v in found if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)]
        if numbers and len(numbers) == len(found):
            middle = statistics.median(numbers)
            return f"{middle:.6g}" + (f" (median of {len(numbers)})" if len(numbers) > 1 else "")
        return esc(found[0], 60) if found else "none"

    parts = []
    for name, (entry, by_variant) in sorted(values.items())[:MEASURED_SHOWN]:
        parts.append(f"{esc(name, 120)} ({esc(entry.get('kind'), 20)}, {esc(entry.get('unit', ''), 40)}): "
                     f"base {shown(by_variant.get('base', []))}, candidate {shown(by_variant.get('candidate', []))}")
    more = f"; {len(values) - MEASURED_SHOWN} more in the runs' metrics (suite.measured)" \
        if len(values) > MEASURED_SHOWN else ""
    return ("Measured, not timed (asv's track, mem and peakmem benchmarks, once per run before the clock; no "
            "verdict): " + "; ".join(parts) + more)


def suite_text(workload: CampaignWorkload, stages: dict, runs: list, esc=cell) -> list[str]:
    """What a `suite:` campaign's benchmarks gave, in sentences (none for a workload): the suite,
    how many items' outputs were hashed, and for the rest what they returned instead ("outputs:
    not given by this benchmark"); its stages when none were declared. runs: the ok runs' records
    as dicts (items, metrics, variant: the first is read for the suite's notes, all for what asv's
    measured benchmarks gave); every value from them goes through esc (`cell` on a page, `tline` on
    a terminal). workload and stages: campaign.json's."""
    from harness import contract as C

    if not C.is_suite_entry(workload.entry) or not runs:
        return []
    params = workload.params or {}
    info = (runs[0].get("metrics") or {}).get("suite") or {}
    outputs = info.get("outputs")
    notes: dict = outputs if isinstance(outputs, dict) else {}
    items = runs[0].get("items") or []
    without = [it["id"] for it in items if it.get("error") is None and not it.get("fields")]
    lines = [f"Suite: {esc(params.get('kind'))} benchmarks of {esc(params.get('path'))}"
             + (f" selected by {esc(params.get('select'))}" if params.get("select") else "")
             + f", {len(items)} items, each run calling each benchmark {_calls(info.get('number'))} (its setup "
               "before the clock)"
             + (f"; {esc(info['pytest'], 300)}" if info.get("pytest") else "")]
    if without:
        reasons: dict = {}
        for item in without:
            reasons.setdefault(str(notes.get(item, "no outputs recorded")), []).append(item)
        shown = "; ".join(f"{esc(why, 120)} ({len(ids)})" for why, ids in sorted(reasons.items())[:4])
        lines.append(f"Outputs: not given by this benchmark for {len(without)} of {len(items)} items ({shown}); "
                     + ("parity covers the items' errors only" if len(without) == len(items)
                        else "parity covers the rest and every item's errors"))
    else:
        lines.append(f"Outputs: every one of the {len(items)} items returned data, hashed for parity")
    measured = measured_text(runs, esc)
    if measured:
        lines.append(measured)
    if not stages:
        lines.append("Stages: not given by this benchmark (declare `stages:` to time functions inside it)")
    return lines
