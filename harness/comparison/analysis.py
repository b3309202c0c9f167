"""comparison.json `stats` (comparison/v4): an interval that holds the run-to-run variance.

Method (README "Statistics and verdict"). Ok timed runs are paired into rounds: the k-th
base run with the k-th candidate run (with `rounds: N` they ran in round k, in a shuffled
order); stage runs (As1, Bs1) carry the stage wrappers and stay out of the headline.
Per round, d_k = log(candidate run wall / base run wall), each run's wall its timed loop by the
runner's own clock between the worker's marks (harness/engine/outside.py): the code under test
runs in the worker, so nothing the worker times is the headline. Each item's own ratio over the
rounds (the per-item table) reads the worker's item walls, its word. The ratio is exp(the 20%-trimmed mean of d_k),
its 95% interval the Tukey-McLaughlin (Yuen) trimmed-t interval: the spread between
rounds, so the interval holds what load and drift change (the process, the run), not
only the item-to-item spread.

Assumptions: the d_k are independent draws of one distribution whose centre is the true
log ratio (the shuffled order within each round makes a slow drift symmetric and cancels
one both variants share), and the trimmed-t interval is close enough to it for
n >= MIN_ROUNDS (tests/unit/test_noise_simulation.py measures coverage under log-normal,
heavy-tailed, drifting and bursty run noise).

Verdict: improved / regressed / equal / inconclusive by rules.decide (the policy both checkers apply) against
the band [1 - b, 1 + b], b = max(threshold, noise floor). Inconclusive with fewer than
MIN_ROUNDS rounds. When runnable work waited for a core during a run (PSI) or the ratio
drifts between the campaign's halves, a claim must also clear the claim band: the rounds'
typical deviation from the ratio and the drift, in log space. `harness/rehash.py`
re-derives all of it.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, cast

from harness.comparison.stats import mean, t_interval, trimmed_mean
# The policy is the contract's (both checkers apply the same); the numbers are derived here.
from harness import contract as C
from harness import rules as R
from harness.bundle import model as M
from harness.records import build, to_json
from harness.contract import (DRIFT_RULE, DRIFT_SE, GIL_CPU_PER_WALL, METHOD, MIN_ROUNDS, PER_ITEM_SHOWN,
                              SEQ_METHOD, STALL_SHARE, STALL_TICK_S, THIN_STAGE_FACTOR, WRAPPER_S)
from harness.rules import decide, sequence_ratio, sig10, stopped, timed
from harness.rules import interference_warning, moved_outside, without_disturbed as decide_without

if TYPE_CHECKING:
    from harness.records import Interference, InterferenceBounds, RunRecord


def thin_stages(ok: list[RunRecord]) -> list[str]:
    """A warning per stage whose self CPU per call (the median over runs) is within 10x of
    the stage wrapper's own cost, as the runs measured it (WRAPPER_S where they did not):
    instrumenting it moves its figures."""
    measured = [r.machine.stage_wrapper_s for r in ok if r.machine.stage_wrapper_s is not None]
    cost = statistics.median(measured) if measured else WRAPPER_S
    out = []
    for name in sorted({n for r in ok for n in r.stages}):
        per_call = [s.self_cpu_s / s.calls for r in ok for s in [r.stages.get(name)] if s and s.calls]
        if per_call and statistics.median(per_call) < THIN_STAGE_FACTOR * cost:
            out.append(f"stage {name}: {1e6 * statistics.median(per_call):.2f} us self CPU per call, within "
                       f"{THIN_STAGE_FACTOR}x "
                       f"of the stage wrapper's own {1e6 * cost:.2f} us ({'measured in the runs' if measured else 'typical'})"
                       ": instrumentation moves its figures")
    return out


def pairs_of(ok: list[RunRecord]) -> tuple[list[tuple[RunRecord, RunRecord]], list[str]]:
    """(A_k, B_k) for every k where both ran ok, and the labels left without a partner."""
    by_label = {r.label: r for r in ok}
    pairs, unpaired = [], []
    for r in ok:
        if r.variant == "base":
            partner = by_label.get("B" + r.label[1:])
            if partner is not None:
                pairs.append((r, partner))
                continue
        elif ("A" + r.label[1:]) in by_label:
            continue
        unpaired.append(r.label)
    return pairs, unpaired


def usable_items(ok: list[RunRecord], key: str) -> tuple[list[str], int]:
    """Items with a positive `key` and no error in every ok run (sorted), and how many
    items were left out."""
    maps = [r.item_map() for r in ok]
    ids = sorted(set().union(*(set(m) for m in maps))) if maps else []
    good = [i for i in ids if all(i in m and not m[i].error and getattr(m[i], key) > 0 for m in maps)]
    return good, len(ids) - len(good)


def _wall(r: RunRecord) -> float:
    """A usable run's wall (usable_runs kept only runs whose wall_s is set and positive)."""
    return cast(float, r.wall_s)


def round_logs(pairs: list[tuple[RunRecord, RunRecord]], items: list[str], key: str) -> list[list[float]]:
    """Per round, the log ratio of each item (or of the run walls when there are no items)."""
    out = []
    for a, b in pairs:
        if not items:
            out.append([math.log(_wall(b) / _wall(a))])
            continue
        ia, ib = a.item_map(), b.item_map()
        out.append([math.log(getattr(ib[i], key) / getattr(ia[i], key)) for i in items])
    return out


@dataclass(frozen=True)
class Interval:
    """A ratio and its interval from per-round log ratios, as stats.paired and stats.rounds hold them."""
    geomean_ratio: float
    ci95: list[float] | None
    sd_log: float | None
    t_quantile: float | None


def interval(logs: list[float], level: float = 0.95) -> Interval:
    """Ratio and its interval (95% unless said) from per-round log ratios."""
    t = t_interval(logs, level)
    return Interval(sig10(math.exp(t.mean)), [sig10(math.exp(v)) for v in t.ci] if t.ci else None, sig10(t.sd),
                    sig10(t.q))


@dataclass(frozen=True)
class Plan:
    """The looks of a `rounds: auto` campaign (rules.sequential_plan's {first, cap, precision}); design: the
    (first, cap) of the campaign whose design the looks read, when these rounds are some of its
    (with_interference)."""
    first: int
    cap: int
    design: tuple[int, int] | None = None
    precision: float | None = None  # `precision:` the interval's width that ends it (rules.precise)

    @classmethod
    def of(cls, plan: Plan | dict | None) -> Plan | None:
        """A plan as rules.sequential_plan gives it (a dict both checkers read too), read through
        this type; the runner's between rounds is one already."""
        if plan is None or isinstance(plan, Plan):
            return plan
        return build(cls, plan)

    def looks(self) -> tuple[int, int]:
        """(first, cap) of the design whose looks the analysis reads."""
        return self.design or (self.first, self.cap)


def _halves(values: list[float]) -> tuple[float, float, int]:
    """Medians of the earlier and the later half (the median: one burst is not a drift)."""
    half = len(values) // 2
    return statistics.median(values[:half]), statistics.median(values[-half:]), half


def drift(pairs: list[tuple[RunRecord, RunRecord]], d: list[float], effect: float, threshold: float) -> M.Drift:
    """Does the ratio move during the campaign? The per-round log ratios' later half against
    their earlier half decides. Each variant's walls are shown too, but a drift both variants
    share cancels within each shuffled round, so it widens nothing."""
    def walls(runs: list[RunRecord]) -> M.DriftSide | None:
        if len(runs) < 2:
            return None
        first, last, half = _halves([_wall(r) for r in runs])
        return M.DriftSide(first=[r.label for r in runs[:half]], last=[r.label for r in runs[-half:]],
                           first_s=sig10(first), last_s=sig10(last), change_pct=sig10(100.0 * (last - first) / first))

    out = M.Drift(base=walls([a for a, _ in pairs]), candidate=walls([b for _, b in pairs]), ratio=None,
                  effect_pct=sig10(100.0 * effect), max_abs_drift_pct=None, flagged=False, rule=DRIFT_RULE)
    if len(d) < 4:
        return out
    first, last, half = _halves(d)
    # 2.5 standard errors (not 2: a MAD of few rounds runs low) of a difference of two
    # medians of h draws (~1.2533 sd / sqrt(h) each), the sd estimated robustly within each
    # half (median absolute deviation), so that the drift under test does not count as noise.
    sd = 1.4826 * statistics.median([abs(v - first) for v in d[:half]] + [abs(v - last) for v in d[-half:]])
    noise = DRIFT_SE * 1.2533 * sd * math.sqrt(2.0 / half)
    change = math.exp(last - first) - 1.0
    ratio = M.DriftRatio(first_rounds=[1, half], last_rounds=[len(d) - half + 1, len(d)],
                         first=sig10(math.exp(first)), last=sig10(math.exp(last)), change_pct=sig10(100.0 * change),
                         noise_pct=sig10(100.0 * (math.exp(noise) - 1.0)))
    return replace(out, ratio=ratio, max_abs_drift_pct=sig10(100.0 * abs(change)),
                   flagged=bool(abs(last - first) > noise
                                and 100.0 * abs(change) >= max(50.0 * abs(effect), 100.0 * threshold)))


def overloaded(ok: list[RunRecord]) -> list[str]:
    """Runs during which the machine had more runnable work than cores: other work competed
    with the timed loop. Measured by the CPU stall time over the loop (Linux PSI) when the
    record has it, else by the 1-minute load average before and after the run."""
    out = []
    for r in ok:
        m = r.machine
        if m.cpu_stall_s is not None:
            if m.cpu_stall_s > STALL_SHARE * _wall(r) + STALL_TICK_S:
                out.append(r.label)
            continue
        loads = [v[0] for v in (m.loadavg_before, m.loadavg_after) if v]
        if m.cores and loads and max(loads) > m.cores:
            out.append(r.label)
    return out


def usable_runs(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs the statistics read: ok, with a positive wall."""
    return [r for r in runs if r.ok and r.wall_s is not None and r.wall_s > 0]


def item_times(runs: list[RunRecord]) -> dict[str, tuple[float, float]]:
    """Each item's median timed wall per variant (base, candidate) over the rounds the statistics
    pair that hold it usable in both runs (every round for a workload; a suite's benchmark leaves
    the rounds after the look that decided it): the times a page shows beside an item's ratio (the
    ratio itself is per_item's or its family member's, from the same rounds)."""
    pairs, _ = pairs_of([r for r in usable_runs(runs) if timed(r.label)])
    maps = [(a.item_map(), b.item_map()) for a, b in pairs]
    held: dict[str, list[tuple[float, float]]] = {}
    for ma, mb in maps:
        for i, a in ma.items():
            b = mb.get(i)
            if b is not None and not a.error and not b.error and a.wall_s > 0 and b.wall_s > 0:
                held.setdefault(i, []).append((a.wall_s, b.wall_s))
    return {i: (statistics.median(a for a, _ in walls), statistics.median(b for _, b in walls))
            for i, walls in sorted(held.items())}


def load_reading(r: RunRecord) -> str:
    """What made a run overloaded, in words (for the report)."""
    m = r.machine
    if m.cpu_stall_s is not None and r.wall_s:
        return f"work waited for a core {100 * m.cpu_stall_s / r.wall_s:.0f}% of its timed loop"
    loads = [v[0] for v in (m.loadavg_before, m.loadavg_after) if v]
    return f"load {max(loads):.2f} on {m.cores} cores" if loads else "no load reading"


def gil_bound(ok: list[RunRecord], overloaded_runs: list[str]) -> list[str]:
    """A warning when slots > 1 but the runs kept under GIL_CPU_PER_WALL cores busy: the
    items likely hold the GIL, so more slots add contention, not parallelism. Judged on the
    runs that had the cores to themselves (others' load also keeps a run's cores idle)."""
    slots = {r.slots for r in ok}
    use = [r.machine.process_cpu_s / _wall(r) for r in ok
           if r.machine.process_cpu_s is not None and r.label not in overloaded_runs]
    if len(slots) != 1 or not isinstance(next(iter(slots)), int) or next(iter(slots)) < 2 or not use:
        return []
    busy = statistics.median(use)
    if busy >= GIL_CPU_PER_WALL:
        return []
    return [f"slots {next(iter(slots))}, but the timed loops used {busy:.2f} CPU s per wall s (median over runs): "
            "the items likely hold the GIL (pure-Python code), so the slots contend instead of running in "
            "parallel and the ratio measures the contention; use `slots: 1`"]


def per_item(pairs, items: list[str], logs: list[list[float]], band: float, enough: bool,
             plan: R.Design | None = None) -> M.PerItem:
    """Each item's own ratio over the rounds, its interval, and how many regressed beyond the band
    (interval above it) or improved: what a geometric mean over items can hide. A sequential
    campaign's item intervals are its design's with each item's share of alpha (valid at whichever
    look stopped it, for every item together); a fixed count's the 95% trimmed-t. `note` says when
    the items cannot be judged, and why."""
    rows = []
    for j, item in enumerate(items):
        column = [row[j] for row in logs]
        iv = interval(column)
        rows.append(M.ItemRatio(item, iv.geomean_ratio, sequence_ratio(column, plan) if plan is not None else iv.ci95))
    rows.sort(key=lambda row: (-row.ratio, row.id))
    judged = enough or plan is not None
    regressed = [row for row in rows if judged and row.ci95 and row.ci95[0] > 1 + band]
    improved = [row for row in rows if judged and row.ci95 and row.ci95[1] < 1 - band]
    return M.PerItem(items=len(rows), band=band, regressed=len(regressed), improved=len(improved),
                     note=item_note(len(logs), len(rows), sum(1 for row in rows if row.ci95 is None), judged),
                     worst=rows[0] if rows else None, table=rows[:PER_ITEM_SHOWN],
                     more=max(0, len(rows) - PER_ITEM_SHOWN))


def item_note(rounds: int, items: int, unbounded: int, judged: bool) -> str | None:
    """Why the per-item counts may say nothing: too few rounds, or intervals still unbounded."""
    if not judged:
        return (f"{rounds} round(s): too few for a verdict per item (at least {MIN_ROUNDS}); each item's ratio is "
                "shown, none is judged")
    if unbounded:
        return (f"{unbounded} of {items} items' intervals are still unbounded after {rounds} rounds (each item has "
                "its share of alpha): those items cannot be judged")
    return None


def stats_of(runs: list[RunRecord], threshold: float, floor: float | None = None,
             sequential: Plan | dict | None = None, *, question: str = C.DEFAULT_QUESTION,
             margin: float | None = None, family: list[str] | None = None) -> M.Stats:
    """`stats` of comparison.json from the run records in execution order (see the module
    docstring), typed (bundle/model.Stats); floats at 10 significant digits, a pure function of
    its input. sequential: the Plan ({first, cap}) of a `rounds: auto` campaign
    (rules.sequential_plan), whose looks and stop are then derived too (with a design, the looks
    of another campaign's design read on these rounds); None for a fixed count or order. question
    and margin: what the campaign asks (contract.QUESTIONS). family: a suite's planned benchmarks,
    each a claim of its own (family_section); None for a workload, whose items are one claim."""
    threshold = float(threshold)
    if not (threshold >= 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
    plan = Plan.of(sequential)
    usable = usable_runs(runs)
    warnings: list[str] = []
    kept = {id(r) for r in usable}  # by identity: `r not in usable` compares whole frozen records, O(runs^2)
    excluded = [r.label for r in runs if id(r) not in kept]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")
    # The headline from the timed runs only; stage runs (As1, Bs1) time the stages.
    ok = [r for r in usable if timed(r.label)]
    band = sig10(max(threshold, floor or 0.0))
    pairs, unpaired = pairs_of(ok)
    stats = M.Stats(
        method=METHOD, question=question, threshold=sig10(threshold),
        margin=sig10(margin) if question != "claim" else None, floor=sig10(floor), band=sig10(band),
        claim_band=sig10(band),
        rounds=M.Rounds(n=len(pairs), min=MIN_ROUNDS, pairs=[[a.label, b.label] for a, b in pairs],
                        unpaired=unpaired, log_ratios=[], sd_log=None, t_quantile=None, typical_deviation=None),
        sequential=None,
        paired=M.Paired(metric="run wall_s", items=0, items_excluded=0, geomean_ratio=None, ci95=None,
                        run_ratio=None),
        per_item=None, family=None, drift=None, load=M.Load(overloaded(ok)), verdict="inconclusive",
        verdict_reason="", warnings=warnings)
    warnings.extend(thin_stages(usable))
    wrapped = [r.label for r in ok if any(r.stages_installed.values())]
    if wrapped:
        warnings.append(f"the headline wall comes from runs with stage wrappers ({len(wrapped)} of {len(ok)}: an "
                        "explicit order without stage runs), so it holds the wrappers' cost; use `rounds:` or add "
                        "stage runs (a, b) to the order")
    if unpaired:
        warnings.append(f"runs without a partner of the other variant, left out of the interval: "
                        f"{', '.join(unpaired)}")
    if not pairs:
        return replace(stats, verdict_reason="no round with an ok run of both variants")
    if family is not None:
        return _family(stats, pairs, family, threshold, band, plan, question, margin)

    items, dropped = usable_items([r for pair in pairs for r in pair], "wall_s")
    logs = round_logs(pairs, items, "wall_s")  # per item: the worker's walls, for the per-item table
    d = run_logs(pairs)  # the headline: the runner's walls
    iv = interval(d)
    run_ratio = mean(_wall(b) for _, b in pairs) / mean(_wall(a) for a, _ in pairs)
    paired = replace(stats.paired, items=len(items), items_excluded=dropped, geomean_ratio=iv.geomean_ratio,
                     ci95=iv.ci95, run_ratio=sig10(run_ratio))
    center = math.log(iv.geomean_ratio)
    # A round's typical distance from the ratio, as a share below it: 1 - exp(-median |d_k - c|)
    # (log space, so it stays under 1 however noisy the rounds).
    deviation = sig10(1.0 - math.exp(-statistics.median(abs(v - center) for v in d)))
    rounds = replace(stats.rounds, log_ratios=[sig10(v) for v in d], sd_log=iv.sd_log, t_quantile=iv.t_quantile,
                     typical_deviation=deviation)
    if items and dropped:
        warnings.append(f"{dropped} item(s) left out of the per-item table "
                        "(error or no positive wall_s in some ok run)")

    what = what_of(items, len(pairs))
    found, _, claim_band, cautions = cautions_of(pairs, d, stats.load.overloaded, threshold, band)
    warnings.extend(gil_bound(ok, stats.load.overloaded))
    warnings.extend(cautions)
    enough = len(pairs) >= MIN_ROUNDS
    items_ = None
    if items:
        item_plan = R.design(*plan.looks(), "claim", len(items)) if plan is not None else None
        items_ = per_item(pairs, items, logs, claim_band, enough, item_plan)
    stats = replace(stats, rounds=rounds, paired=paired, drift=found, claim_band=claim_band, per_item=items_)
    if plan is not None:
        return _sequential(stats, pairs, d, items, threshold, band, plan, question, margin)
    if not enough:
        warnings.append(f"too few rounds to conclude ({len(pairs)} of at least {MIN_ROUNDS}; `rounds: N` or "
                        "`--rounds N`)")
        return replace(stats, verdict_reason=(f"only {len(pairs)} round(s) of one base and one candidate run: at "
                                              f"least {MIN_ROUNDS} are needed to estimate the run-to-run variance"))
    if question != "claim":  # a one-sided question: each end a one-sided bound at its alpha
        paired = replace(paired, ci95=interval(d, 1.0 - 2.0 * C.QUESTION_ALPHA).ci95)
    lo, hi = cast("list[float]", paired.ci95)  # enough rounds: the interval is bounded
    verdict, reason = decide(lo, hi, band, paired.run_ratio, what, claim_band, question, margin)
    return replace(stats, paired=paired, verdict=verdict, verdict_reason=reason)


def analyze(runs: list[RunRecord], threshold: float, floor: float | None = None, sequential: dict | None = None, *,
            question: str = C.DEFAULT_QUESTION, margin: float | None = None, family: list[str] | None = None) -> dict:
    """stats_of as the JSON comparison.json holds (before with_interference and with_outside): what
    the tests hold to rehash.py's derivation (the runner reads a look between rounds as stats_of's Stats)."""
    return to_json(stats_of(runs, threshold, floor, sequential, question=question, margin=margin, family=family))


def cautions_of(pairs, d: list[float], overloaded_runs: list[str], threshold: float, band: float):
    """(drift, typical deviation, claim band, cautions) of the rounds `pairs` with per-round log
    ratios d: under a flagged drift or overloaded runs a claim must clear the claim band, the
    rounds' typical deviation from the ratio and the drift, in log space."""
    center = math.log(sig10(math.exp(trimmed_mean(d))))  # the ratio as comparison.json holds it
    deviation = sig10(1.0 - math.exp(-statistics.median(abs(v - center) for v in d)))
    found = drift(pairs, d, math.exp(center) - 1.0, threshold)
    cautions = []
    if found.flagged:
        cautions.append(f"drift: the ratio of the later rounds differs from the earlier rounds' by "
                        f"{found.max_abs_drift_pct:.2f}%")
    if overloaded_runs:
        cautions.append(f"more runnable work than cores during {', '.join(overloaded_runs)}")
    claim_band = band
    if cautions:  # a claim must clear the noise it was measured under; "equal" keeps the plain band
        moved = abs(math.log(found.ratio.last / found.ratio.first)) if found.flagged and found.ratio else 0.0
        claim_band = sig10(max(band, deviation, 1.0 - math.exp(-moved)))
        if claim_band > band:
            cautions[-1] += f"; a claim must clear +-{100 * claim_band:.2f}%"
    return found, deviation, claim_band, cautions


def what_of(items: list[str], rounds: int) -> str:
    """The verdict reason's name for the interval's quantity."""
    return f"the run wall ratio (the runner's clock) over {rounds} rounds"


def run_logs(pairs: list[tuple[RunRecord, RunRecord]]) -> list[float]:
    """Per round, log(candidate run wall / base run wall): the headline's d_k."""
    return [math.log(_wall(b) / _wall(a)) for a, b in pairs]


def look(pairs, d: list[float], items: list[str], overloaded_runs: list[str], threshold: float,
         band: float, plan: R.Design, question: str = C.DEFAULT_QUESTION, margin: float | None = None,
         member: str | None = None) -> tuple[list[float] | None, str, str]:
    """One look of a sequential campaign after round len(d): ([lo, hi] of the ratio at that look of
    the design `plan`, or None while unbounded; verdict; reason) by the contract's rule. The
    run-level ratio guards a workload's look; a family's `member` (one benchmark) has none."""
    ci = sequence_ratio(d, plan)
    if ci is None:
        return None, "inconclusive", f"the interval valid at every look is still unbounded after {len(d)} rounds"
    lo, hi = ci
    labels = {r.label for pair in pairs for r in pair}
    _, _, claim_band, _ = cautions_of(pairs, d, [x for x in overloaded_runs if x in labels], threshold, band)
    run_ratio = sig10(mean(_wall(b) for _, b in pairs) / mean(_wall(a) for a, _ in pairs)) if member is None else None
    what = what_of(items, len(d)) if member is None else member_what(member, len(d))
    verdict, reason = decide(lo, hi, band, run_ratio, what + " (valid at every look)", claim_band, question, margin)
    return [lo, hi], verdict, reason


def member_what(member: str, rounds: int) -> str:
    """A benchmark's interval's quantity, in words."""
    return f"benchmark {member}'s wall ratio over {rounds} rounds"


def undisturbed_verdict(pairs, overloaded_runs: list[str], threshold: float, band: float, plan: R.Design,
                        question: str = C.DEFAULT_QUESTION, margin: float | None = None,
                        member: tuple[str, dict] | None = None) -> str | None:
    """The same look on the rounds of `pairs` without a disturbed run (items and log ratios
    derived again from those rounds, as with_interference derives them; one benchmark's when
    `member` is (its id, each run's items by id)), or None when no round is disturbed: a look
    decides only when its claim holds on these too."""
    kept = [(a, b) for a, b in pairs if not (a.disturbed or b.disturbed)]
    if len(kept) == len(pairs):
        return None
    if not kept:
        return "inconclusive"
    if member is not None:
        item, maps = member
        d = [math.log(maps[b.label][item].wall_s / maps[a.label][item].wall_s) for a, b in kept]
        return look(kept, d, [], overloaded_runs, threshold, band, plan, question, margin, item)[1]
    return look(kept, run_logs(kept), [], overloaded_runs, threshold, band, plan, question, margin)[1]


def _sequential(stats: M.Stats, pairs, d: list[float], items: list[str], threshold: float, band: float,
                sequential: Plan, question: str, margin: float | None) -> M.Stats:
    """A sequential campaign's looks, and its verdict: the first look that decides (with a
    precision, the first that decides with an interval that precise: rules.precise), else at the
    budget's cap no claim (or, when a look decided but none was precise enough, that look's
    word, "imprecise"), and the rounds the rule expects a campaign to need (contract: design,
    expected_rounds). A look over disturbed rounds decides only when the undisturbed rounds'
    look gives the same word, so the campaign goes on rather than stop on a claim the disturbed
    rounds alone carry."""
    first, cap, precision = sequential.first, sequential.cap, sequential.precision
    plan = R.design(*sequential.looks(), question)
    overloaded_runs = stats.load.overloaded
    looks: list[M.Look] = []
    last: tuple[list[float] | None, str, str] | None = None
    decided = None  # the first look that decided: (round, verdict, reason)
    for k in range(first, len(pairs) + 1):
        last = look(pairs[:k], d[:k], items, overloaded_runs, threshold, band, plan, question, margin)
        if last[1] != "inconclusive" and undisturbed_verdict(pairs[:k], overloaded_runs, threshold, band, plan,
                                                               question, margin) not in (None, last[1]):
            last = (last[0], "inconclusive", f"{last[2]}, but not without the disturbed rounds")
        if decided is None and last[1] != "inconclusive":
            decided = (k, last[1], last[2])
        looks.append(M.Look(round=k, ci95=last[0], verdict=last[1], precise=R.precise(last[0], d[:k], precision)))
    why = stopped([(row.round, row.verdict, row.precise) for row in looks], len(pairs), cap)
    verdict, reason = R.sequential_ending(why, last, len(pairs), cap, decided, precision)
    expected = R.expected_rounds(d, plan, band, margin, question, len(d), precision if why == "imprecise" else None) \
        if why in ("cap", "imprecise") else None
    return replace(stats, sequential=sequential_section(plan, first, cap, looks, why, expected, precision),
                   method=f"{METHOD}; {SEQ_METHOD}", paired=replace(stats.paired, ci95=last[0] if last else None),
                   verdict=verdict, verdict_reason=reason)


def sequential_section(plan: R.Design, first: int, cap: int, looks: list[M.Look], why: str | None,
                       expected_rounds: int | None = None, precision: float | None = None) -> M.Sequential:
    """comparison.json stats.sequential: the design's looks, its alpha and the nominal level of each
    look (the t's and the signs'), every look, why it stopped, (stopped at the cap) the rounds
    the rule expects to need, and the precision the campaign asked for."""
    t_level, sign_level = R.levels(plan)
    return M.Sequential(method=SEQ_METHOD, first=first, cap=cap, alpha=sig10(plan.alpha), sides=plan.sides,
                        levels=[sig10(t_level), sig10(sign_level)], looks=looks, stopped=why or "ended",
                        expected_rounds=expected_rounds, precision=precision)


# --- a suite: a family of claims, one per benchmark ------------------------------------------------
def holds(items: dict, item: str) -> bool:
    """A run (its items by id) timed the item: it holds it, without an error, with a positive wall."""
    got = items.get(item)
    return got is not None and not got.error and got.wall_s > 0


def _family(stats: M.Stats, pairs, members: list[str], threshold: float, band: float, sequential: Plan | None,
            question: str, margin: float | None) -> M.Stats:
    """A suite's stats: every benchmark its own verdict and interval (family_section), the headline
    the family's word (rules.family_verdict) and its counts; a sequential campaign's looks are
    the family's (decided once every benchmark has), and a benchmark that has decided leaves the
    later rounds. The ratio shown is the geometric mean of the benchmarks' own ratios, with no
    interval of its own (a family is its members' claims)."""
    overloaded_runs = stats.load.overloaded
    maps = {r.label: r.item_map() for pair in pairs for r in pair}
    section, looks = family_section(pairs, maps, members, threshold, band, sequential, question, margin,
                                    overloaded_runs)
    d = []
    for a, b in pairs:  # per round, the mean log ratio of the benchmarks both its runs timed
        ma, mb = maps[a.label], maps[b.label]
        common = [i for i in members if holds(ma, i) and holds(mb, i)]
        d.append(math.fsum(math.log(mb[i].wall_s / ma[i].wall_s) for i in common) / len(common) if common else 0.0)
    ratios = [math.log(row.ratio) for row in section.items if row.ratio is not None]
    if overloaded_runs:  # each benchmark's claim cleared its own claim band (its looks); drift is its own too
        stats.warnings.append(f"more runnable work than cores during {', '.join(overloaded_runs)}")
    stats = replace(stats, family=section, rounds=replace(stats.rounds, log_ratios=[sig10(v) for v in d]),
                    paired=replace(stats.paired, items=len(members), items_excluded=len(members) - len(ratios),
                                   geomean_ratio=sig10(math.exp(math.fsum(ratios) / len(ratios))) if ratios else None),
                    method=f"{METHOD}; {C.FAMILY_METHOD}" + (f"; {SEQ_METHOD}" if sequential is not None else ""))
    # the family's words are the shared rules' (rules.family_*), which read the section as JSON
    doc = to_json(section)
    if sequential is None:
        return replace(stats, verdict=R.family_verdict(question, [row.verdict for row in section.items]),
                       verdict_reason=R.family_summary(doc))
    first, cap = sequential.first, sequential.cap
    why = stopped([(row.round, row.verdict) for row in looks], len(pairs), cap)
    verdict, reason = R.family_ending(question, doc, to_json(looks), why, len(pairs), cap)
    return replace(stats, sequential=sequential_section(R.design(*sequential.looks(), question, len(members)), first,
                                                        cap, looks, why,
                                                        section.expected_rounds if why == "cap" else None),
                   verdict=verdict, verdict_reason=reason)


def family_section(pairs, maps: dict, members: list[str], threshold: float, band: float, sequential: Plan | None,
                   question: str, margin: float | None, overloaded_runs: list[str]) -> tuple[M.Family, list[M.Look]]:
    """(stats.family, the family's looks) of a suite's rounds. Each benchmark's per-round log ratios
    over the rounds whose two runs both timed it; its interval the design's with alpha shared among
    the benchmarks (Bonferroni: any benchmark errs at any look with probability at most alpha in
    all), looked at after every round from the first until it decides (then it leaves the later
    rounds), or, with a fixed count, the trimmed-t interval at 1 - alpha / members once at the end."""
    m = len(members)
    plan = R.design(*sequential.looks(), question, m) if sequential is not None else None
    rows: list[M.Member] = []
    for item in members:
        held = [(a, b) for a, b in pairs if holds(maps[a.label], item) and holds(maps[b.label], item)]
        d = [math.log(maps[b.label][item].wall_s / maps[a.label][item].wall_s) for a, b in held]
        ratio = interval(d).geomean_ratio if d else None
        if plan is None:
            ci, verdict, reason = _fixed_member(held, d, item, threshold, band, question, margin, m, overloaded_runs)
            rows.append(M.Member(id=item, n=len(d), ratio=ratio, ci95=ci, verdict=verdict, verdict_reason=reason,
                                 decided_at=None, expected_rounds=None))
            continue
        assert sequential is not None  # a design comes from a sequential plan
        last, decided_at = None, None
        for k in range(sequential.first, len(pairs) + 1):
            upto = [(a, b) for a, b in held if round_of(a.label) <= k]
            last = look(upto, d[:len(upto)], [], overloaded_runs, threshold, band, plan, question, margin, item)
            if last[1] != "inconclusive" and undisturbed_verdict(upto, overloaded_runs, threshold, band, plan,
                                                                   question, margin, (item, maps)) not in (None,
                                                                                                            last[1]):
                last = (last[0], "inconclusive", f"{last[2]}, but not without the disturbed rounds")
            if last[1] != "inconclusive":
                decided_at = k
                break
        ci, verdict, reason = last if last is not None else \
            (None, "inconclusive", f"no look yet: {len(d)} of the first look's {sequential.first} rounds")
        expected = R.expected_rounds(d, plan, band, margin, question, len(d)) \
            if decided_at is None and d and len(pairs) >= sequential.cap else None
        rows.append(M.Member(id=item, n=len(d), ratio=ratio, ci95=ci, verdict=verdict, verdict_reason=reason,
                             decided_at=decided_at, expected_rounds=expected))
    # the counts, alpha and the family's looks by the shared rule (rules.family_of), over the rows as JSON
    section, looks = R.family_of(question, to_json(rows), sequential.first if sequential is not None else None,
                                 len(pairs))
    return M.build(M.Family, section), M.build(list[M.Look], looks)


def _fixed_member(held, d: list[float], item: str, threshold: float, band: float, question: str,
                  margin: float | None, members: int, overloaded_runs: list[str]) -> tuple[list[float] | None, str, str]:
    """(ci95, verdict, reason) of a benchmark in a fixed-count suite: its trimmed-t interval at its
    share of alpha, once, at the end (MIN_ROUNDS rounds at least)."""
    if len(d) < MIN_ROUNDS:
        return None, "inconclusive", (f"only {len(d)} round(s) timed it: at least {MIN_ROUNDS} are needed for a "
                                      "verdict per benchmark")
    alpha = (2.0 * C.QUESTION_ALPHA if question != "claim" else C.SEQ_ALPHA) / members
    ci = cast("list[float]", interval(d, 1.0 - alpha).ci95)  # MIN_ROUNDS rounds: bounded
    labels = {r.label for pair in held for r in pair}
    _, _, claim_band, _ = cautions_of(held, d, [x for x in overloaded_runs if x in labels], threshold, band)
    lo, hi = ci
    verdict, reason = decide(lo, hi, band, None, member_what(item, len(d)), claim_band, question, margin)
    return ci, verdict, reason


def round_of(label: str) -> int:
    """A timed run's round: A3 and B3 are round 3."""
    return int(label[1:])


def outside_of(r: RunRecord) -> tuple:
    """A run as rules.outside_pair reads it: (wall, its outside section, its process section, its
    launch mode), the sections as JSON."""
    assert r.outside is not None  # an ok run of the current schema has its section
    return _wall(r), to_json(r.outside), to_json(r.process), r.launch.mode


def with_outside(stats: M.Stats, runs: list) -> M.Stats:
    """stats with `outside`: the runs whose figures the runner's own contradict, and the rule on the
    time outside the timed loop over the paired rounds (rules.moved_outside); a claim the outside
    figures do not support is not made (rules.outside_veto, applied by rules.outside_section, the
    rule both checkers apply to stats as JSON)."""
    usable = [r for r in usable_runs(runs) if r.outside is not None]
    contradicted = [(r.label, r.outside.contradictions) for r in usable if r.outside and r.outside.contradicted]
    pairs, _ = pairs_of([r for r in usable if timed(r.label)])
    moved = moved_outside([R.outside_pair(outside_of(a), outside_of(b)) for a, b in pairs], stats.band)
    return M.Stats.of(R.outside_section(to_json(stats), contradicted, moved))


def with_interference(stats: M.Stats, runs: list, bounds: InterferenceBounds | None, threshold: float,
                      floor: float | None = None, question: str = C.DEFAULT_QUESTION,
                      margin: float | None = None) -> M.Stats:
    """stats with `interference` (campaign.json's bounds given; None: a bundle of an earlier run
    schema, whose records measured none): the ok runs the runner marked disturbed, the rounds they
    are in, and the verdict of the same rule (stats_of) on the other rounds. A claim that the other
    rounds alone do not give is no claim (rules.without_disturbed). A family's benchmarks each
    held every decided look to its undisturbed rounds already: it has no `without`."""
    if bounds is None:
        return stats
    usable = usable_runs(runs)
    marked = [r for r in usable if r.disturbed]
    pairs = stats.rounds.pairs
    labels = {r.label for r in marked}
    rounds = [round_of(a) for a, b in pairs if a in labels or b in labels]
    other, without = None, None
    if rounds and stats.family is None:
        gone = {f"{v}{k}" for k in rounds for v in "AB"}
        kept = len(pairs) - len(rounds)
        seq = stats.sequential
        # A sequential campaign's rule on the other rounds: one look over all of them, by its design.
        plan = Plan(kept, kept, (seq.first, seq.cap)) if seq is not None and kept else None
        rest = stats_of([r for r in runs if r.label not in gone], threshold, floor, plan, question=question,
                        margin=margin)
        other = (rest.verdict, rest.rounds.n)
        without = M.Without(rounds=rest.rounds.n, geomean_ratio=rest.paired.geomean_ratio, ci95=rest.paired.ci95,
                            verdict=rest.verdict)
    verdict, reason, holds_ = decide_without(stats.verdict, stats.verdict_reason, rounds, other)
    if marked:
        stats.warnings.append(interference_warning([(r.label, cast("Interference", r.interference).causes)
                                                    for r in marked], bounds.max_steal, bounds.min_cpu_per_wall,
                                                   rounds, holds_))
    section = M.Interference(
        max_steal=bounds.max_steal, min_cpu_per_wall=bounds.min_cpu_per_wall,
        steal_runs=sum(1 for r in usable if r.interference is not None and r.interference.steal_ticks is not None),
        freq_runs=sum(1 for r in usable if r.interference is not None and r.interference.freq_mhz_before is not None),
        disturbed=[r.label for r in marked], disturbed_rounds=rounds, without=without, holds=holds_)
    return replace(stats, verdict=verdict, verdict_reason=reason, interference=section)
