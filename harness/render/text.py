"""Text: the tables, cells and stage tables every renderer prints (report, compare, run,
summary, fleet). Whatever comes from a bundle goes through `cell`: escaped, so that text a
bundle holds (a description, an item id, an error message) can never become Markdown or HTML of
the page it is shown in."""
from __future__ import annotations

import json
import math
from typing import Any

NA = "n/a"
STAGES_SHOWN = 5  # the short table `run` and `compare` print: the stages that dominate base CPU
# What could make bundle text into markup: HTML (a comment that hides what follows), a table
# break, a code span, a link. Emphasis and headers need a line start or pairs a cell cannot break.
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "|": "\\|", "`": "'", "\r": " ", "\n": " ",
                          "[": "\\[", "]": "\\]"})


def cell(x: Any, limit: int = 400) -> str:
    """Bundle text as one inert line of Markdown: no HTML, no link, no table break, no code span,
    at most `limit` characters."""
    if x is None:
        return NA
    if isinstance(x, (dict, list)):
        x = json.dumps(x, sort_keys=True)
    text = str(x)
    if len(text) > limit:
        text = text[:limit - 3] + "..."
    return "".join(ch if ch.isprintable() else " " for ch in text).translate(_ESCAPES)


def code(x: Any) -> str:
    """Bundle text inside a code span: backticks and line breaks removed, bounded."""
    text = "".join(ch for ch in str(x)[:400] if ch.isprintable() and ch != "`")
    return f"`{text}`" if text else NA


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


def verdict_word(comparison: dict) -> str:
    """The one word a summary row shows for a comparison."""
    from harness import outcomes

    code_ = outcomes.exit_code(comparison)
    words = {outcomes.UNUSABLE: "unusable", outcomes.PARITY: "parity mismatch", outcomes.FAILED: "campaign failed"}
    return words.get(code_) or cell(comparison["stats"]["verdict"])


# --- stage tables --------------------------------------------------------------------------------
def _stage_ratio(s: dict) -> float | None:
    b, c = s.get("base_self_cpu_s"), s.get("candidate_self_cpu_s")
    ok = all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (b, c))
    return c / b if ok and b > 0 else None


def stage_order(stages: dict) -> list[str]:
    """Stage names, most base self CPU first (ties by name): where the base's time went."""
    def base(name):
        v = (stages[name] or {}).get("base_self_cpu_s")
        return v if isinstance(v, (int, float)) and not isinstance(v, bool) else -1.0
    return sorted(stages, key=lambda name: (-base(name), str(name)))


def stage_cells(s: dict, prefix: str = "") -> dict:
    """One stage's base and candidate self CPU and their ratio, as every stage table shows them."""
    return {f"{prefix}base self": num(s.get("base_self_cpu_s"), 4),
            f"{prefix}candidate self": num(s.get("candidate_self_cpu_s"), 4),
            f"{prefix}candidate/base": num(_stage_ratio(s), 3)}


def stage_table(stages: dict, top: int | None = None, incl: bool = True) -> tuple[str, int]:
    """The stage self CPU table, most base self CPU first, and how many stages `top` left out."""
    names = stage_order(stages)
    rows = []
    for name in names[:top]:
        s = stages[name] or {}
        calls = s.get("calls_per_run")
        if isinstance(calls, dict):
            calls = ", ".join(f"{k}: {calls[k]}" for k in sorted(calls))
        row = {"stage": cell(name), "calls per run": num(calls), **stage_cells(s)}
        if incl:
            row.update({"base incl": num(s.get("base_incl_cpu_s"), 4),
                        "candidate incl": num(s.get("candidate_incl_cpu_s"), 4)})
        if s.get("base_installed") is False or s.get("candidate_installed") is False:
            row["stage"] += " (not installed in every run)"
        rows.append(row)
    right = ("calls per run", "base self", "candidate self", "candidate/base", "base incl", "candidate incl")
    return table(rows, right=right), len(names) - len(rows)


def stage_summary(comparison: dict) -> list[str]:
    """The short stage table `harness run` and `harness compare` print: the top stages by base
    self CPU, so a terminal shows where the time went without opening REPORT.md."""
    stages = comparison.get("stages") or {}
    if not stages:
        return []
    text, left = stage_table(stages, top=STAGES_SHOWN, incl=False)
    head = "stage self CPU (s per run, mean over ok runs), most base CPU first"
    return [head + (f"; {left} smaller stage(s) left out (REPORT.md has all):" if left else ":"), text]


def suite_text(campaign: dict, runs: list) -> list[str]:
    """What a `suite:` campaign's benchmarks gave, in sentences (none for a workload): the suite,
    how many items' outputs were hashed, and for the rest what they returned instead ("outputs:
    not given by this benchmark"); its stages when none were declared. runs: the ok runs' records
    as dicts (items, metrics); every value from them goes through cell."""
    from harness import contract as C

    workload = campaign.get("workload") or {}
    if workload.get("entry") not in C.SUITE_ENTRIES.values() or not runs:
        return []
    params = workload.get("params") or {}
    info = (runs[0].get("metrics") or {}).get("suite") or {}
    notes = info.get("outputs") if isinstance(info.get("outputs"), dict) else {}
    items = runs[0].get("items") or []
    without = [it["id"] for it in items if it.get("error") is None and not it.get("fields")]
    lines = [f"Suite: {cell(params.get('kind'))} benchmarks of {cell(params.get('path'))}"
             + (f" selected by {cell(params.get('select'))}" if params.get("select") else "")
             + f", {len(items)} items, each run calling each benchmark once (its setup before the clock)"
             + (f"; {cell(info['pytest'], 300)}" if info.get("pytest") else "")]
    if without:
        reasons: dict = {}
        for item in without:
            reasons.setdefault(str(notes.get(item, "no outputs recorded")), []).append(item)
        shown = "; ".join(f"{cell(why, 120)} ({len(ids)})" for why, ids in sorted(reasons.items())[:4])
        lines.append(f"Outputs: not given by this benchmark for {len(without)} of {len(items)} items ({shown}); "
                     + ("parity covers the items' errors only" if len(without) == len(items)
                        else "parity covers the rest and every item's errors"))
    else:
        lines.append(f"Outputs: every one of the {len(items)} items returned data, hashed for parity")
    if not campaign.get("stages"):
        lines.append("Stages: not given by this benchmark (declare `stages:` to time functions inside it)")
    return lines
