"""The claim a user posts, from one verified bundle, in every form `harness summary --format`
gives (FORMS, the one seam): `markdown` (the default), `github` for a job summary
($GITHUB_STEP_SUMMARY, at most GITHUB_LIMIT bytes), `comment` for a pull-request comment a
workflow updates in place (at most COMMENT_LIMIT characters, behind a `marker`), and the two
JSON forms of harness/render/export.py.

The Markdown is what a reviewer reads in ten seconds, short by default (SHORT_LINES): the verdict
and its one figure, the candidate/base ratio as a factor with its interval ("1.97x faster
[1.28x, 3.03x]", outcomes.speed), how it was measured, and in plain words why an interval that
reads as a change is not one (a band load widened); per item its base and candidate times in
ms, its change and its own verdict; the metrics; a chart GitHub draws itself (render/chart.py);
the notes as a list; the digest and the commands a reviewer runs from a clone. `--long` adds the
runs in execution order, the stage CPU table, every warning in full and cleanup. Every figure is
read from the bundle, every piece of its text goes through this page's `cell` (render/text.py's,
with the machine's absolute paths shown by name); nothing else is said. A form with a size limit
leaves out whole sections from the end, saying which, never a cut line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

from harness import contract as C, outcomes
from harness import rules as R
from harness.render.chart import rounds_chart
from harness.render.text import (band, calls_per_item, cell as text_cell, code, fence, md_lines, metrics_table, ms,
                                 no_paths, num, shell_word, stage_order, suite_text, table)

code_span = code  # `code` is also a local name below (an exit code)

if TYPE_CHECKING:
    from harness.bundle.model import Comparison, ItemRatio, Stats
    from harness.records import CampaignRecord

GITHUB_LIMIT = 1 << 20  # bytes: GitHub's limit on one step's job summary ($GITHUB_STEP_SUMMARY)
COMMENT_LIMIT = 65536  # characters: GitHub's limit on an issue or pull-request comment's body
ITEMS_SHOWN = 5  # the per-item table of the short form: the worst items
SHORT_LINES = 70  # the short form's lines at most: about 60 of text and the chart's 10, drawn as one picture
WARNINGS_SHOWN = 3  # the short form's warnings, each bounded; --long shows them all in full
DESCRIPTION_LINES = 3
LOAD_CAUTION = "more runnable work than cores during "  # analysis's load warning: the notes' Load line says it


@dataclass
class Section:
    name: str  # what the note says was left out
    lines: list
    keep: bool = False  # never left out: the verdict, parity, the digest, the commands


def render(bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> str:
    """The Markdown claim. bundle: a verified harness.bundle.read.Bundle; shown: its path as the
    reader will type it; signer: who signed it (with --trust), else None; judgement: the bundle
    judged by a reviewer's policy (--policy: harness/judge/policy.py), said first, else None."""
    return _join(sections(bundle, shown, signer, long, judgement))


def github(bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> str:
    """For $GITHUB_STEP_SUMMARY: the Markdown within GITHUB_LIMIT bytes (UTF-8)."""
    return bounded(sections(bundle, shown, signer, long, judgement), GITHUB_LIMIT, lambda s: len(s.encode()),
                   "GitHub's job summary limit of 1 MiB")


def comment(bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> str:
    """For a pull-request comment updated in place: `marker(name)` on the first line (the only
    raw HTML, so a workflow finds its own comment again), then the Markdown, within
    COMMENT_LIMIT characters."""
    head = marker(bundle.name) + "\n"
    return head + bounded(sections(bundle, shown, signer, long, judgement), COMMENT_LIMIT - len(head), len,
                          "GitHub's comment limit of 65,536 characters")


def marker(name) -> str:
    """`<!-- abba-harness:NAME -->`: an HTML comment naming the campaign, built only of letters,
    digits, `_` and `.` and single `-` (a campaign's name is one already, contract.NAME_RE; any
    other character becomes `-`), so nothing in it can end the comment."""
    key = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9_.-]", "-", str(name)[:64])).strip("-") or "campaign"
    return f"<!-- abba-harness:{key} -->"


JUDGED_FORMS = ("markdown", "github", "comment", "json", "text")  # the forms that say a policy's judgement


def form(kind: str, bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> str:
    """The one seam: the claim in the form `kind` (FORMS), ending in a line break; with a
    judgement (a reviewer's policy), one of JUDGED_FORMS."""
    assert judgement is None or kind in JUDGED_FORMS, kind
    text = FORMS[kind](bundle, shown, signer, long, **({"judgement": judgement} if judgement is not None else {}))
    return text if text.endswith("\n") else text + "\n"


def _export(name):
    def one(bundle, shown, signer=None, long=False, judgement=None):
        from harness.render import export

        return getattr(export, name)(bundle, signer, **({"judgement": judgement} if judgement is not None else {}))
    return one


def text(bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> str:
    """For a terminal or a CI log: what `harness compare BUNDLE` prints (the verdict line, who
    signed it, the top stages), every piece of bundle text through the terminal's owner; with a
    judgement, what `harness compare --policy` prints first."""
    from harness.render.text import stage_summary, term

    lines = [term(outcomes.line(bundle.comparison))] + ([term(f"signed by {signer}")] if signer else [])
    if judgement is not None:
        lines = [term(outcomes.judged_line(judgement)[0]), term(judgement.summary),
                 term(f"the campaign's own: {outcomes.line(bundle.comparison)}")] + lines[1:]
    return "\n".join(lines + stage_summary(bundle.comparison)) + "\n"


def report_section(bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """The bundle's section of REPORT.md (harness/render/report.py) as `harness report` writes it,
    without the picture and the reproductions found beside it (those need the evidence folder)."""
    from pathlib import Path

    from harness.judge.survey import Entry
    from harness.render import report

    return report.section(Entry(path=Path(shown), bundle=bundle, signer=signer), Path("."))


FORMS = {"markdown": render, "github": github, "comment": comment, "json": _export("claim_json"),
         "benchmark-action": _export("benchmark_action"), "text": text, "report": report_section}


def bounded(parts: list[Section], limit: int, size, why: str) -> str:
    """The sections joined within `limit` (as `size` measures): the sections one may leave out,
    last first, until the rest and a note naming them fit."""
    text = _join(parts)
    if size(text) <= limit:
        return text
    kept = list(parts)
    left: list[str] = []  # the names of the parts dropped
    while size(text) > limit and any(not s.keep for s in kept):
        drop = max(i for i, s in enumerate(kept) if not s.keep)
        left.insert(0, kept.pop(drop).name)
        note = Section("note", [f"Left out to fit {why}: {', '.join(left)} (`harness summary --long` prints them).",
                                ""], True)
        text = _join(kept[:-1] + [note] + kept[-1:])
    if size(text) > limit:  # the kept sections alone are bounded far below either limit: never reached
        raise ValueError(f"the claim's essential sections exceed {why}")
    return text


def _join(parts: list[Section]) -> str:
    return "\n".join(line for s in parts for line in s.lines)


def judged(judgement) -> list[str]:
    """The paragraph a policy's judgement opens the claim with: the verdict by the reviewer's
    rules, the exit `compare --policy` gives, and what the policy changed or refuses."""
    line, code = outcomes.judged_line(judgement)
    c = judgement.comparison
    word = "Refused" if code == outcomes.REFUSED else str(c.stats.verdict).capitalize()
    said = judgement.summary.split(": ", 1)[1]
    shown = outcomes.speed(c.stats.paired.geomean_ratio, c.stats.paired.ci95)
    return [f"**{cell(word)} by your policy** {code_span(judgement.policy.path)} (`harness compare --policy` exit "
            f"{code}): {cell(said, 1000)}" + (f"; {shown}, equal band ±{100 * c.stats.band:.1f}%"
                                             if code != outcomes.REFUSED and c.stats.paired.ci95 else "")
            + ". The campaign's own claim follows.", ""]


def sections(bundle, shown: str, signer: str | None = None, long: bool = False, judgement=None) -> list[Section]:
    c, campaign = bundle.comparison, bundle.campaign
    stats = c.stats
    head = [f"### Performance evidence: {cell(bundle.name)}", ""]
    if judgement is not None:
        head += judged(judgement)
    if campaign.description:
        described = [ln for ln in str(campaign.description).splitlines() if ln.strip()]
        shown_lines = described if long else described[:DESCRIPTION_LINES]
        text = md_lines(no_paths("\n".join(shown_lines)), 1000 if long else 400)
        if len(shown_lines) < len(described):
            text += " ..."
        head += [text, ""]
    head += [*_verdict(c, campaign), ""]
    out = [Section("verdict", head, True)]
    items = _items(bundle, long)
    if items:
        out.append(Section("per-item table", items))
    if c.other_metrics():
        out.append(Section("metrics table", ["Every metric with its own verdict:", "", metrics_table(c, cell), ""]))
    chart = rounds_chart(stats) if c.complete else []
    if chart:
        out.append(Section("chart", [*chart, ""]))
    out.append(Section("notes", ["Notes:", "", *(f"- {note}" for note in _notes(bundle, long)), ""], True))
    if long:
        out += _long(bundle)
    digest = (f"Status {c.status}" + (f" ({cell(c.reason)})" if c.reason else "")
              + f"; bundle digest (SHA-256 of `tagmanifest-sha256.txt`) {code(bundle.digest)}"
              + (f"; signed by {cell(signer)}" if signer else "") + ".")
    out.append(Section("digest and commands", [digest, "", *_how_to_check(bundle, _typed(shown))], True))
    return out


def cell(x, limit: int = 400) -> str:
    """Bundle text on this page: text.cell, with the machine's absolute paths shown by name
    (text.no_paths) and the harness's own `+-` as `±`, so nothing of the runner's or laptop's
    folders reaches a comment."""
    x = no_paths(x)
    return text_cell(x.replace("+-", "\u00b1") if isinstance(x, str) else x, limit)


def _typed(shown: str) -> str:
    """The bundle's path as a reader types it: as given when relative, by name when absolute (the
    reader downloads the bundle into a clone of their own)."""
    return shown if no_paths(shown) == shown else PurePath(shown).name or shown


def _rounds(stats: Stats, campaign: CampaignRecord) -> str:
    """How many rounds, and how the campaign stopped: its sequential looks when it had them."""
    n = stats.rounds.n
    seq = stats.sequential
    if seq is not None:
        if seq.stopped == "decided":
            within = f", precision +-{100 * seq.precision:g}%" if seq.precision else ""
            return f"decided after {n} rounds (sequential looks from round {seq.first}, cap {seq.cap}{within})"
        if seq.stopped == "cap":
            return f"no look decided by the cap of {seq.cap} rounds"
        if seq.stopped == "imprecise" and seq.precision:
            return f"decided {stats.verdict}, but {R.imprecision(stats.paired.ci95, seq.precision, seq.cap)}"
        return f"ended after {n} of at most {seq.cap} rounds before a look decided"
    if campaign.rounds:
        return f"{n} rounds (a fixed count)"
    return f"{n} rounds of the order {code(campaign.order)}"


def _level(stats: Stats) -> str:
    one_sided = stats.question != "claim"
    return ("one-sided 95% bounds" if one_sided else "a 95% interval") + \
        (" valid at every look" if stats.sequential is not None else "")


def _verdict(c: Comparison, campaign: CampaignRecord) -> list[str]:
    """The headline (the verdict and its one figure, a factor with its interval), how it was
    measured and between which revisions, and in plain words why it is not a change where the
    interval alone would read as one."""
    stats, paired = c.stats, c.stats.paired
    code_ = outcomes.exit_code(c)
    answer = outcomes.answer_word(stats)
    word = {outcomes.FAILED: "Campaign failed", outcomes.PARITY: "Parity mismatch",
            outcomes.UNUSABLE: "Unusable"}.get(code_, answer[:1].upper() + answer[1:])
    family = outcomes.family_text(stats)
    figure = outcomes.speed_text(stats) if family is None and paired.ci95 and code_ != outcomes.FAILED else None
    confined = outcomes.sandbox_text(c)
    lines = [f"**{cell(word)}{f': {figure}' if figure else ''}** (`harness compare` exit {code_})"
             + (f"; **{cell(confined, 400)}**" if confined else ""), ""]
    if code_ == outcomes.FAILED:
        lines += [f"{cell(c.reason or stats.verdict_reason, 600)}.", ""]
    edge = (f"margin {100 * (stats.margin or 0.0):g}%" if stats.question != "claim" else
            f"equal band {band(stats.band)}")
    if family is not None:
        lines += [f"{cell(family, 2000)}: each benchmark its own claim, with {_level(stats)} at its share of "
                  f"alpha; {edge}.", ""]
        how = f"{_rounds(stats, campaign).capitalize()}, {_each_round(campaign)}."
    elif paired.ci95:
        how = (f"{_rounds(stats, campaign).capitalize()}, {_each_round(campaign)}. The figure is candidate time "
               f"over base time ({paired.geomean_ratio:.4g}), the geometric "
               f"mean over the rounds of each run's timed loop ({paired.items} items) as the runner's own clock "
               f"measured it, shown as a factor with {_level(stats)}; {edge}.")
    else:
        how = f"{cell(stats.verdict_reason)}; {_rounds(stats, campaign)}."
    budget = outcomes.budget_text(stats)
    if budget:
        how += (f" {cell(budget[:1].upper() + budget[1:])}: re-run with a larger `budget_s` (a campaign cannot go "
                "on past its cap).")
    revs = " \u2192 ".join(f"{label} {code(r.sha)}" + (f" ({cell(r.rev, 80)})" if r.rev != r.sha else "")
                          for label, r in (("Base", campaign.revisions["base"]),
                                           ("candidate", campaign.revisions["candidate"])))
    lines.append(f"{how} {revs}.")
    why = _not_a_change(stats) if paired.ci95 else None
    return lines + (["", why] if why else [])


def _each_round(campaign: CampaignRecord) -> str:
    """What each round ran: one run after the other, or both at once on cores of their own (a duet)."""
    if campaign.launch == C.DUET:
        return ("each round one base and one candidate run at once (a duet), fresh processes pinned to CPUs "
                f"{' and '.join(str(int(c)) for c in campaign.cores or ())}")
    return "each round one base and one candidate run in fresh processes"


def _duet(bundle) -> str | None:
    """A duet's rounds: how much of its time the shorter loop of each round ran beside the other."""
    campaign = bundle.campaign
    if campaign.launch != C.DUET:
        return None
    ok = {r.label: R.loop_span(r.process.started_at, r.outside.before_s, r.wall_s)
          for r in bundle.runs if r.ok and r.outside is not None}
    labels = [label for label, _ in R.labels(campaign.order)]
    shares = sorted(R.overlap(ok[a], ok[b]) for a, b in zip(labels[::2], labels[1::2]) if a in ok and b in ok)
    if not shares:
        return None
    return (f"Duet: the shorter timed loop of each round ran beside the other for {100 * shares[len(shares) // 2]:.0f}% "
            f"of its time at the median round (least {100 * shares[0]:.0f}%, {len(shares)} rounds); what each loop "
            "did to the other (shared caches, memory bandwidth) is in both runs of its round.")


def _pressure(stats: Stats) -> str:
    """What widened the band a claim had to clear: load, drift, or both."""
    loaded, drifted = bool(stats.load.overloaded), bool(stats.drift and stats.drift.flagged)
    return ("the machine was loaded and the ratio drifted" if loaded and drifted else
            "the ratio drifted between the campaign's halves" if drifted else "the machine was loaded")


def _not_a_change(stats: Stats) -> str | None:
    """Plain words where the interval alone would read as a change, or as none, and the verdict
    says otherwise: an interval beyond the equal band that did not clear the band load widened,
    the runs' mean walls pointing the other way, or one reaching into the band from outside."""
    lo, hi = stats.paired.ci95 or (None, None)
    if stats.verdict != "inconclusive" or lo is None or hi is None:
        return None
    b, wide = stats.band, stats.claim_band
    if wide > b and (hi < 1 - b or lo > 1 + b):
        return (f"**Not shown as a change: {_pressure(stats)}, so a claim had to clear {band(wide)}** (the interval "
                f"clears the equal band {band(b)}, not {band(wide)}). Re-run on a quieter machine, or with more "
                "rounds (a larger `budget_s`).")
    if "run-level ratio" in stats.verdict_reason:
        return ("**Not shown as a change: the runs' mean walls point the other way** (the items' figure and the "
                "whole loops' disagree: look for work outside the timed items).")
    edge = band(wide)
    return (f"**Not decided: the interval reaches from outside the equal band {edge} into it**, so it can be "
            "neither a change nor equal yet. More rounds (a larger `budget_s`) narrow it; a wider "
            "`verdict.threshold` asks a coarser question.")


def _item_verdict(row: ItemRatio, stats: Stats, enough: bool) -> str:
    """An item's own verdict in words: the model's when comparison.json gives one per item,
    else its interval against the per-item band (the claim band: load widens it too)."""
    own = getattr(row, "verdict", None)
    if isinstance(own, str):
        return cell(own, 60)
    if not enough:
        return "not judged"
    ci, b = row.ci95, stats.per_item.band if stats.per_item else stats.band
    if not ci:
        return "n/a"
    if ci[1] < 1 - b:
        return "**faster**"
    if ci[0] > 1 + b:
        return "**slower**"
    if ci[0] >= 1 - b and ci[1] <= 1 + b:
        return f"equal ({band(b)})"
    if b > stats.band and (ci[1] < 1 - stats.band or ci[0] > 1 + stats.band):
        return f"not shown: load, {band(b)}"
    return "undecided"


def _items(bundle, long: bool) -> list[str]:
    return item_rows(bundle, None if long else ITEMS_SHOWN)


def item_rows(bundle, limit: int | None) -> list[str]:
    """The per-benchmark table of a suite (its family: every changed one, at least `limit` rows)
    or the per-item table of a workload (at most `limit` rows; None: all), as this page and
    REPORT.md's section show them."""
    if bundle.comparison.stats.family is not None:
        return _members(bundle, limit is None)
    return per_item(bundle, limit, cell)


def per_item(bundle, limit: int | None, esc=None) -> list[str]:
    """Per item, worst first (at most `limit` rows of comparison.json's table): its base and
    candidate times (median over the paired rounds, per call for a suite item timed over several
    calls), its change as a factor with its interval, and its own verdict, or the sentence that
    says why no item has one. esc: how bundle text is shown (this page's `cell` by default);
    REPORT.md's section shows the same table."""
    from harness.comparison.analysis import item_times

    esc = esc or cell
    stats = bundle.comparison.stats
    per = stats.per_item
    if not per or not per.items:
        return []
    rows = per.table[:limit]
    enough = stats.rounds.n >= C.MIN_ROUNDS or stats.sequential is not None
    times = item_times(bundle.runs)
    number, counts = _calls(bundle)
    each = _each(counts, "per call, each item timed over {} calls", "per timed item")
    shown = [{"item": esc(r.id, 120), "base (ms)": ms(times[r.id][0] / number(r.id)) if r.id in times else "n/a",
              "candidate (ms)": ms(times[r.id][1] / number(r.id)) if r.id in times else "n/a",
              "change [interval]": outcomes.speed(r.ratio, r.ci95), "verdict": _item_verdict(r, stats, enough)}
             for r in rows]
    more = per.items - len(rows)
    kind = ("each by its interval valid at every look, alpha shared among the items" if stats.sequential is not None
            else "each by its own 95% interval")
    if enough:
        judged = f"{per.regressed} slower and {per.improved} faster beyond {band(per.band)}, {kind}"
        if per.note:
            judged += f"; {esc(per.note, 300)}"
    else:
        judged = (f"no item has a verdict of its own: {stats.rounds.n} rounds are fewer than the {C.MIN_ROUNDS} an "
                  "item's own interval needs (the campaign's verdict above covers them together)")
    return [f"Per item ({per.items}, worst first{f', {len(rows)} shown' if more else ''}; median time {each}): "
            f"{judged}.", "", table(shown, right=("base (ms)", "candidate (ms)")), ""]


def _calls(bundle):
    """How many calls each suite item's timed item made (its records' suite.number: one count, or
    each benchmark's as `number: auto` calibrated it; 1 for anything else): (item -> calls, the
    set of counts made)."""
    ok = [r for r in bundle.runs if r.ok]
    info = (ok[0].metrics.get("suite") if ok and isinstance(ok[0].metrics, dict) else None) or {}
    return calls_per_item(info.get("number") if isinstance(info, dict) else None)


def _each(counts: set, several: str, once: str) -> str:
    """The per-item table's unit: per call over N (or LOW-HIGH) calls, else per timed item."""
    if counts <= {1}:
        return once
    low, high = min(counts), max(counts)
    return several.format(low if low == high else f"{low}-{high}")


def _notes(bundle, long: bool) -> list[str]:
    """The notes under the figures, one list item each: outputs, interpreter and machine, load,
    instruction counts, warnings, the suite's own notes."""
    c, campaign = bundle.comparison, bundle.campaign
    stats = c.stats
    notes = [_outputs(bundle), _setting(bundle), *filter(None, [_duet(bundle)])]
    if stats.load.overloaded:
        timed = [r for r in c.ok_runs() if R.timed(r.label)]
        notes.append(f"Load: more runnable work than cores during {len(stats.load.overloaded)} of the {len(timed)} "
                     f"timed runs ({cell(', '.join(stats.load.overloaded[:8]), 200)}"
                     + (", ..." if len(stats.load.overloaded) > 8 else "") + ")"
                     + (f", so a claim had to clear {band(stats.claim_band)}, not {band(stats.band)}"
                        if stats.claim_band > stats.band else "") + ".")
    if c.instructions and not c.other_metrics():  # the metrics table above shows the counts otherwise
        notes.append(cell(outcomes.instructions_text(c)).capitalize() + ".")
    warnings = [w for w in stats.warnings if not w.startswith(LOAD_CAUTION)] \
        + [w for w in [outcomes.disagreement(c)] if w]
    for warning in warnings if long else warnings[:WARNINGS_SHOWN]:
        notes.append(f"Warning: {cell(warning, 600 if long else 200)}.")
    if len(warnings) > WARNINGS_SHOWN and not long:
        notes.append(f"{len(warnings) - WARNINGS_SHOWN} more warning(s): `harness summary --long` shows them all.")
    suite = suite_text(campaign.workload, campaign.stages, [{"items": [{"id": it.id, "error": it.error, "fields": it.fields} for it in r.items],
                                   "metrics": r.metrics, "variant": r.variant} for r in bundle.runs if r.ok], cell)
    return notes + [line + "." for line in suite]


def _members(bundle, long: bool) -> list[str]:
    """A suite's benchmarks, the changed ones first: each its base and candidate times, its own
    verdict and its change as a factor with its interval, the look that decided it (it left the
    later rounds), or why it could not decide."""
    from harness.comparison.analysis import item_times

    stats = bundle.comparison.stats
    fam = stats.family
    assert fam is not None
    ordered = fam.leading()
    changed = [m for m in ordered if m.changed]
    rows = ordered if long else ordered[:max(ITEMS_SHOWN, len(changed))]
    times, (number, counts) = item_times(bundle.runs), _calls(bundle)

    def when(m) -> str:
        if m.decided_at is not None:
            return f"round {m.decided_at}"
        if m.expected_rounds is not None:
            return ("more than one campaign's rounds" if m.expected_rounds > C.MAX_ROUNDS
                    else f"undecided: about {m.expected_rounds} rounds in all")
        return "undecided"

    shown = [{"benchmark": cell(m.id, 120), "base (ms)": ms(times[m.id][0] / number(m.id)) if m.id in times else "n/a",
              "candidate (ms)": ms(times[m.id][1] / number(m.id)) if m.id in times else "n/a",
              "change [interval]": outcomes.speed(m.ratio, m.ci95) if m.ratio is not None else "n/a",
              "verdict": f"**{cell(m.verdict)}**" if m.changed else cell(m.verdict), "decided": when(m)}
             for m in rows]
    more = fam.members - len(rows)
    each = _each(counts, "; median time per call, each timed over {} calls", "; median time per timed item")
    head = (f"Per benchmark, changed first ({fam.members} claims, each at alpha {fam.alpha:.3g}: any false claim "
            f"among them at most {C.SEQ_ALPHA if stats.question == 'claim' else C.QUESTION_ALPHA:g}; a benchmark "
            f"that decided left the later rounds{each})")
    out = [head + (f" ({more} more not shown: `harness summary --long`)" if more else "") + ":", "",
           table(shown, right=("base (ms)", "candidate (ms)")), ""]
    undecided = [m for m in rows if m.verdict == "inconclusive"][:1]
    if undecided:
        out += [f"Why {cell(undecided[0].id, 120)} did not decide: {cell(undecided[0].verdict_reason, 600)}.", ""]
    return out


def _outputs(bundle) -> str:
    c = bundle.comparison
    parity = c.parity
    fields = {f for r in bundle.runs if r.ok for it in r.items for f in it.fields}
    dtypes = sorted({f.dtype for r in bundle.runs if r.ok for it in r.items for f in it.fields.values()})
    golden = parity.golden
    ok_runs = [r for r in bundle.runs if r.ok]
    giving = sum(1 for it in ok_runs[0].items if it.fields) if ok_runs else parity.items
    of_items = f"{parity.items} items" if giving == parity.items else \
        f"the {giving} items that give outputs (of {parity.items})"
    if parity.identical and not parity.fields_compared:
        sentence = f"Outputs: none to compare (no item gave outputs; {parity.items} items)"
    elif parity.identical:
        names = sorted(fields)
        sentence = (f"Outputs: all {parity.fields_identical} fields of {of_items} byte-identical in "
                    f"every run (fields {', '.join(cell(f, 80) for f in names[:8])}"
                    + (f" and {len(names) - 8} more" if len(names) > 8 else "")
                    + f"; dtypes {', '.join(cell(d, 40) for d in dtypes[:8])}; dtype, shape and raw bytes, "
                    "NaN payloads included)")
    elif parity.agree:
        sentence = f"Outputs: {cell(outcomes.parity_text(c))}"
    else:
        from harness.comparison.parity import explain

        sentence = f"Outputs DIFFER: {cell(explain(c), 600)}"
    sentence += (f"; {parity.error_returns} recorded error return(s), "
                 + ("identical" if parity.errors_identical else "not identical")
                 + f"; stage call counts {'identical' if parity.call_counts_identical else 'NOT identical'}")
    if golden:
        sentence += (f"; golden file {'identical' if golden.identical else 'DIFFERS'} on "
                     f"{golden.items_checked} of its {golden.items} items")
    return sentence + "."


def _setting(bundle) -> str:
    """The interpreter each variant's runs used (its implementation and version) and the machine."""
    c, campaign = bundle.comparison, bundle.campaign
    seen = {v: sorted({f"{r.python.implementation} {r.python.version}" for r in bundle.runs
                       if r.ok and r.variant == v and r.python is not None}) for v in ("base", "candidate")}
    if seen["base"] == seen["candidate"]:
        python = ", ".join(cell(p, 80) for p in seen["base"]) or "n/a"
    else:
        python = "; ".join(f"{v} {', '.join(cell(p, 80) for p in seen[v]) or 'n/a'}" for v in ("base", "candidate"))
    env = bundle.environment
    extra = [f"{env['memory_gib']:g} GiB" if isinstance(env.get("memory_gib"), (int, float)) else None,
             cell(env.get("os"), 120) if env.get("os") else None]
    return (f"Interpreter {python}; machine {cell(bundle.machine.text())}"
            + "".join(f", {x}" for x in extra if x)
            + f"; {campaign.slots} work slot(s); {c.items.planned} of the {c.items.of} items the "
            "workload gives.")


def _long(bundle) -> list[Section]:
    c = bundle.comparison
    rows = [{"run": cell(r.label), "variant": cell(r.variant.capitalize()), "timed wall (s)": num(r.wall_s, 3),
             "status": cell(r.status)} for r in bundle.runs]
    out = [Section("run table", ["The runs in execution order:", "", table(rows, right=("timed wall (s)",)), ""])]
    if c.stages:
        stage_rows = []
        for name in stage_order(c.stages):
            s = c.stages[name]
            calls = s.calls_per_run
            if isinstance(calls, dict):
                calls = ", ".join(f"{cell(k)} {v:,}" for k, v in sorted(calls.items()))
            else:
                calls = f"{calls:,}"
            stage_rows.append({"stage": cell(name), "calls/run": calls,
                               "base self CPU (s)": num(s.base_self_cpu_s, 3),
                               "candidate self CPU (s)": num(s.candidate_self_cpu_s, 3)})
        out.append(Section("stage table", [
            "Summed worker-thread CPU per run, each stage excluding its instrumented child stages (stage runs; no "
            "interval: read it as where the time went, not as a second verdict):", "",
            table(stage_rows, right=("calls/run", "base self CPU (s)", "candidate self CPU (s)")), ""]))
    procs = bundle.cleanup.processes
    out.append(Section("cleanup", [f"Cleanup: {len(procs)} launched process(es) "
                                   + ("verified absent" if bundle.cleanup.all_absent else "NOT all verified absent")
                                   + ".", ""]))
    return out


def _how_to_check(bundle, shown: str) -> list[str]:
    """The commands a reviewer pastes, only those that work for this bundle from a clone of the
    repository the campaign file is in: one whose campaign file lay outside any git repository
    has no anchors (no `--repo`, no `reproduce`); one with a WORKTREE revision ran a commit no
    clone holds (the same two left out, and said why)."""
    from harness.judge.anchors import anchorable

    word = shell_word(shown)
    if not anchorable(bundle.campaign):
        return ["Verify (its campaign file lay outside any git repository when it ran, so the bundle has no anchors "
                "in a repository: `verify --repo` and `reproduce` cannot work for it):", "",
                *fence([f"harness verify {word}"], "sh"), "", *_standalone(word)]
    snapshot = [v for v in ("base", "candidate") if bundle.campaign.revisions[v].rev == "WORKTREE"]
    if snapshot:
        return [f"Verify (its {snapshot[0]} is a snapshot of uncommitted changes, a commit no clone holds, so "
                "`verify --repo` and `reproduce` work only where it ran; commit the change and run the campaign "
                "with `--candidate SHA` for a claim a reviewer can re-run):", "",
                *fence([f"harness verify {word}"], "sh"), "", *_standalone(word)]
    where = cell(bundle.campaign.campaign_path, 200)
    return [f"Check it: in a clone of the repository that holds the campaign file ({where}) and both commits "
            "(fetch the pull request's branch if the candidate is on it), from its top folder, with abba-harness "
            "installed and the bundle downloaded there:", "",
            *fence([f"harness verify {word} --repo .", f"harness reproduce {word}"], "sh"), "",
            *_standalone(word)]


def _standalone(word: str) -> list[str]:
    """The standard-library checker: one file of the harness's sources, whichever project the
    bundle measured, so the line says where a reviewer finds it."""
    return ["The standard-library checker, `harness/rehash.py` of the abba-harness sources (nothing to install; "
            "run from a checkout of them, or with the file copied from an installed abba-harness, whose path "
            "`python -c 'import harness.rehash as r; print(r.__file__)'` prints):", "",
            *fence([f"python -S harness/rehash.py {word}"], "sh"), ""]
