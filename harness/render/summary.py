"""The claim a user posts, from one verified bundle, in every form `harness summary --format`
gives (FORMS, the one seam): `markdown` (the default), `github` for a job summary
($GITHUB_STEP_SUMMARY, at most GITHUB_LIMIT bytes), `comment` for a pull-request comment a
workflow updates in place (at most COMMENT_LIMIT characters, behind a `marker`), and the two
JSON forms of harness/render/export.py.

The Markdown is short by default: the verdict (ratio, interval, how many rounds and how the
campaign stopped), the worst items, parity in one sentence, the interpreter and machine, the
instruction counts when there are some, the digest, and the commands a reviewer runs from a
clone of the repository. `--long` adds the runs in execution order, the stage CPU table, every
warning in full and cleanup. Every figure is read from the bundle, every piece of its text goes
through harness/render/text.py; nothing else is said. A form with a size limit leaves out whole
sections from the end, saying which, never a cut line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from harness import contract as C, outcomes
from harness.render.text import (cell, code, fence, md_lines, metrics_table, num, ratio_text, shell_word, stage_order,
                                 suite_text, table)

if TYPE_CHECKING:
    from harness.bundle.model import Comparison, ItemRatio, Stats

GITHUB_LIMIT = 1 << 20  # bytes: GitHub's limit on one step's job summary ($GITHUB_STEP_SUMMARY)
COMMENT_LIMIT = 65536  # characters: GitHub's limit on an issue or pull-request comment's body
ITEMS_SHOWN = 5  # the per-item table of the short form: the worst items
WARNINGS_SHOWN = 3  # the short form's warnings, each bounded; --long shows them all in full
DESCRIPTION_LINES = 3


@dataclass
class Section:
    name: str  # what the note says was left out
    lines: list
    keep: bool = False  # never left out: the verdict, parity, the digest, the commands


def render(bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """The Markdown claim. bundle: a verified harness.bundle.read.Bundle; shown: its path as the
    reader will type it; signer: who signed it (with --trust), else None."""
    return _join(sections(bundle, shown, signer, long))


def github(bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """For $GITHUB_STEP_SUMMARY: the Markdown within GITHUB_LIMIT bytes (UTF-8)."""
    return bounded(sections(bundle, shown, signer, long), GITHUB_LIMIT, lambda s: len(s.encode()),
                   "GitHub's job summary limit of 1 MiB")


def comment(bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """For a pull-request comment updated in place: `marker(name)` on the first line (the only
    raw HTML, so a workflow finds its own comment again), then the Markdown, within
    COMMENT_LIMIT characters."""
    head = marker(bundle.name) + "\n"
    return head + bounded(sections(bundle, shown, signer, long), COMMENT_LIMIT - len(head), len,
                          "GitHub's comment limit of 65,536 characters")


def marker(name) -> str:
    """`<!-- abba-harness:NAME -->`: an HTML comment naming the campaign, built only of letters,
    digits, `_` and `.` and single `-` (a campaign's name is one already, contract.NAME_RE; any
    other character becomes `-`), so nothing in it can end the comment."""
    key = re.sub(r"-{2,}", "-", re.sub(r"[^A-Za-z0-9_.-]", "-", str(name)[:64])).strip("-") or "campaign"
    return f"<!-- abba-harness:{key} -->"


def form(kind: str, bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """The one seam: the claim in the form `kind` (FORMS), ending in a line break."""
    text = FORMS[kind](bundle, shown, signer, long)
    return text if text.endswith("\n") else text + "\n"


def _export(name):
    def one(bundle, shown, signer=None, long=False):
        from harness.render import export

        return getattr(export, name)(bundle, signer)
    return one


def text(bundle, shown: str, signer: str | None = None, long: bool = False) -> str:
    """For a terminal or a CI log: what `harness compare BUNDLE` prints (the verdict line, who
    signed it, the top stages), every piece of bundle text through the terminal's owner."""
    from harness.render.text import stage_summary, term

    lines = [term(outcomes.line(bundle.comparison))] + ([term(f"signed by {signer}")] if signer else [])
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


def sections(bundle, shown: str, signer: str | None = None, long: bool = False) -> list[Section]:
    c, campaign = bundle.comparison, bundle.campaign
    stats = c.stats
    head = [f"### Performance evidence: {cell(bundle.name)}", ""]
    if campaign["description"]:
        described = [ln for ln in str(campaign["description"]).splitlines() if ln.strip()]
        shown_lines = described if long else described[:DESCRIPTION_LINES]
        text = md_lines("\n".join(shown_lines), 1000 if long else 400)
        if len(shown_lines) < len(described):
            text += " ..."
        head += [text, ""]
    head += [_verdict(c, campaign), ""]
    out = [Section("verdict", head, True)]
    if c.metrics:
        out.append(Section("metrics table", [metrics_table(c), ""]))
    items = _items(stats, long)
    if items:
        out.append(Section("per-item table", items))
    out.append(Section("outputs", [_outputs(bundle), ""], True))
    out.append(Section("interpreter and machine", [_setting(bundle), ""], True))
    notes = []
    if c.instructions:
        notes.append(cell(outcomes.instructions_text(c)) + ".")
    warnings = list(stats.warnings) + [w for w in [outcomes.disagreement(c)] if w]
    for warning in warnings if long else warnings[:WARNINGS_SHOWN]:
        notes.append(f"Warning: {cell(warning, 600 if long else 200)}.")
    if len(warnings) > WARNINGS_SHOWN and not long:
        notes.append(f"{len(warnings) - WARNINGS_SHOWN} more warning(s): `harness summary --long` shows them all.")
    suite = suite_text(campaign, [{"items": [{"id": it.id, "error": it.error, "fields": it.fields} for it in r.items],
                                   "metrics": r.metrics} for r in bundle.runs if r.ok][:1])
    notes += [line + "." for line in suite]
    if notes:
        out.append(Section("instructions, warnings and suite notes", [*notes, ""], True))
    if long:
        out += _long(bundle)
    digest = (f"Status {c.status}" + (f" ({cell(c.reason)})" if c.reason else "")
              + f"; bundle digest (SHA-256 of `tagmanifest-sha256.txt`) {code(bundle.digest)}"
              + (f"; signed by {cell(signer)}" if signer else "") + ".")
    out.append(Section("digest and commands", [digest, "", *_how_to_check(bundle, shown)], True))
    return out


def _rounds(stats: Stats, campaign: dict) -> str:
    """How many rounds, and how the campaign stopped: its sequential looks when it had them."""
    n = stats.rounds.n
    seq = stats.sequential
    if seq is not None:
        if seq.stopped == "decided":
            return f"decided after {n} rounds (sequential looks from round {seq.first}, cap {seq.cap})"
        if seq.stopped == "cap":
            return f"no look decided by the cap of {seq.cap} rounds"
        return f"ended after {n} of at most {seq.cap} rounds before a look decided"
    if campaign["rounds"]:
        return f"{n} rounds (a fixed count)"
    return f"{n} rounds of the order {code(campaign['order'])}"


def _verdict(c: Comparison, campaign: dict) -> str:
    stats, paired, wall = c.stats, c.stats.paired, c.wall
    base, cand = (campaign["revisions"][v] for v in ("base", "candidate"))
    code_ = outcomes.exit_code(c)
    word = {outcomes.FAILED: "Campaign failed", outcomes.PARITY: "Parity mismatch",
            outcomes.UNUSABLE: "Unusable"}.get(code_, str(stats.verdict).capitalize())
    line = f"**{cell(word)}** (`harness compare` exit {code_})"
    confined = outcomes.sandbox_text(c)
    if confined:
        line += f"; **{cell(confined, 400)}**"
    if paired.ci95:
        seq = stats.sequential
        level = ("interval valid at every look" if seq is not None and seq.stopped == "decided" else
                 f"{100 * C.SEQ_LAST_LEVEL:g}% interval" if seq is not None and seq.stopped == "cap"
                 else "95% interval")
        line += (f": candidate/base {ratio_text(paired.geomean_ratio, paired.ci95)} ({level}, "
                 f"{cell(paired.metric)} over {paired.items} items, equal band +-{100 * stats.band:.1f}%"
                 + (f", claims had to clear +-{100 * stats.claim_band:.1f}% under load or drift"
                    if stats.claim_band > stats.band else "") + ")")
    else:
        line += f": {cell(stats.verdict_reason)}"
    rounds = _rounds(stats, campaign)
    if rounds not in stats.verdict_reason:
        line += f"; {rounds}"
    line += ", each round one base and one candidate run in fresh processes."
    if wall.speedup:
        line += (f" Mean timed wall {wall.base_mean_s:.3f} s -> {wall.candidate_mean_s:.3f} s "
                 f"({wall.speedup:.3f}x).")
    revs = " ".join(f"{label} {code(r['sha'])}" + (f" ({cell(r['rev'], 80)})" if r["rev"] != r["sha"] else "")
                    for label, r in (("Base", base), ("candidate", cand)))
    return line + f"\n\n{revs.replace(' candidate', '; candidate', 1)}."


def _items(stats: Stats, long: bool) -> list[str]:
    per = stats.per_item
    if not per or not per.items:
        return []
    rows = per.table if long else per.table[:ITEMS_SHOWN]
    band, enough = per.band, stats.rounds.n >= C.MIN_ROUNDS

    def beyond(row: ItemRatio) -> str:
        ci = row.ci95
        if not enough or not ci:
            return "n/a"
        return "regressed" if ci[0] > 1 + band else "improved" if ci[1] < 1 - band else "within"

    shown = [{"item": cell(r.id, 120), "candidate/base": num(r.ratio, 4),
              "95% interval": f"[{r.ci95[0]:.4f}, {r.ci95[1]:.4f}]" if r.ci95 else "n/a",
              f"beyond +-{100 * band:.1f}%": beyond(r)} for r in rows]
    more = per.items - len(rows)
    judged = (f"{per.regressed} of {per.items} regressed and {per.improved} improved beyond +-{100 * band:.1f}%"
              if enough else f"none of the {per.items} judged beyond +-{100 * band:.1f}% ({stats.rounds.n} "
              f"rounds, fewer than the {C.MIN_ROUNDS} a per-item verdict needs)")
    return [f"Per item, worst first: {judged}" + (f" ({more} more not shown)" if more else "") + ":", "",
            table(shown, right=("candidate/base",)), ""]


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
            + f"; {campaign['slots']} work slot(s); {c.items.planned} of the {c.items.of} items the "
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
    procs = bundle.cleanup["processes"]
    out.append(Section("cleanup", [f"Cleanup: {len(procs)} launched process(es) "
                                   + ("verified absent" if bundle.cleanup["all_absent"] else "NOT all verified absent")
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
    snapshot = [v for v in ("base", "candidate") if bundle.campaign["revisions"][v]["rev"] == "WORKTREE"]
    if snapshot:
        return [f"Verify (its {snapshot[0]} is a snapshot of uncommitted changes, a commit no clone holds, so "
                "`verify --repo` and `reproduce` work only where it ran; commit the change and run the campaign "
                "with `--candidate SHA` for a claim a reviewer can re-run):", "",
                *fence([f"harness verify {word}"], "sh"), "", *_standalone(word)]
    where = cell(bundle.campaign["campaign_path"], 200)
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
