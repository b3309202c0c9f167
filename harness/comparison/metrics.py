"""comparison.json `metrics`: every metric the campaign measured, one entry of one shape each,
in the order of contract.METRIC_DEFINITIONS.

The headline's entry restates what `stats` and `wall` derive (its looks, drift, load and
interference stay there). Every other "rounds" metric is derived here from the same timed
rounds: per round the log ratio of the candidate's reading to the base's (the mean over the
items usable in every paired run, for an item field), its ratio the exponent of the 20%-trimmed
mean, its interval read at the campaign's last round by rules.metric_interval, its verdict by
rules.metric_entry. Instruction counts come from their runs' own section. harness/rehash.py
derives the same entries apart (its `metrics_section`), with the standard library.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from harness import contract as C
from harness import rules as R
from harness.bundle import model as M
from harness.comparison.analysis import interval, round_logs, usable_items, usable_runs
from harness.records import to_json

if TYPE_CHECKING:
    from harness.records import RunRecord


def section(runs: list[RunRecord], stats: M.Stats, wall: M.Wall, instructions: dict | None,
            threshold: float) -> list[dict]:
    """The `metrics` list from the run records, the derived `stats` and `wall`, and the
    instructions section (None: the campaign counted none)."""
    by_label = {r.label: r for r in usable_runs(runs)}
    pairs = [(by_label[a], by_label[b]) for a, b in stats.rounds.pairs]
    seq = stats.sequential  # the other metrics are claims read at the headline's stop, by its looks' design
    sequential = R.design(seq.first, seq.cap) if seq is not None else None
    out = [R.headline_entry(to_json(wall), to_json(stats))]  # the shared rule reads them as JSON
    for metric in C.METRIC_DEFINITIONS:
        if metric.name != C.HEADLINE and metric.statistic == "rounds":
            out.append(rounds_entry(metric, pairs, threshold, sequential, stats.family is not None))
    if instructions is not None:
        out.append(R.instructions_entry(instructions))
    return out


def run_value(run: RunRecord, path: str) -> Any:
    """A run field by its dotted path ("memory.loop_peak_bytes"); None where the run lacks it."""
    value: Any = run
    for part in path.split("."):
        value = getattr(value, part, None)
    return value


def rounds_entry(metric: C.Metric, pairs: list[tuple[RunRecord, RunRecord]], threshold: float,
                 sequential: R.Design | None, family: bool = False) -> dict:
    """One metric's entry from the paired timed rounds (a family's: an item field per round over
    the items both runs of the round held, as its decided benchmarks leave the later rounds)."""
    runs = [r for pair in pairs for r in pair]
    if metric.reads.startswith("items[].") and family:
        key = metric.reads[len("items[]."):]
        d: list[float] = []
        totals: dict[str, float] = {}
        for a, b in pairs:
            ma, mb = a.item_map(), b.item_map()
            common = [i for i in ma if i in mb and all(not m[i].error and getattr(m[i], key) > 0 for m in (ma, mb))]
            if not common:
                d = []
                break
            d.append(math.fsum(math.log(getattr(mb[i], key) / getattr(ma[i], key)) for i in common) / len(common))
            totals[a.label] = math.fsum(getattr(ma[i], key) for i in common)
            totals[b.label] = math.fsum(getattr(mb[i], key) for i in common)
        of = f"item {key} over the benchmarks each round held"
    elif metric.reads.startswith("items[]."):
        key = metric.reads[len("items[]."):]
        items, _ = usable_items(runs, key)
        logs = round_logs(pairs, items, key) if items else []
        d = [math.fsum(row) / len(row) for row in logs]
        maps = [r.item_map() for r in runs]  # once per run, not once per item
        totals = {r.label: math.fsum(getattr(m[i], key) for i in items) for r, m in zip(runs, maps)}
        of = f"item {key} over {len(items)} items"
    else:
        values = {r.label: run_value(r, metric.reads) for r in runs}
        usable = all(isinstance(v, (int, float)) and v > 0 for v in values.values())
        d = [math.log(values[b.label] / values[a.label]) for a, b in pairs] if usable and pairs else []
        totals = values if d else {}
        of = metric.reads
    if not d:
        return R.metric_entry(metric.name, of, 0, None, None, None, None, threshold, sequential)
    iv = interval(d)
    base, candidate = (math.fsum(totals[r.label] for r in runs if r.variant == v) / len(pairs)
                       for v in ("base", "candidate"))
    return R.metric_entry(metric.name, of, len(d), R.sig10(base), R.sig10(candidate), iv.geomean_ratio,
                          R.metric_interval(d, sequential, iv.ci95), threshold, sequential)
