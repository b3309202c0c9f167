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

Verdict: improved / regressed / equal / inconclusive by contract.decide (the policy both checkers apply) against
the band [1 - b, 1 + b], b = max(threshold, noise floor). Inconclusive with fewer than
MIN_ROUNDS rounds. When runnable work waited for a core during a run (PSI) or the ratio
drifts between the campaign's halves, a claim must also clear the claim band: the rounds'
typical deviation from the ratio and the drift, in log space. `harness/rehash.py`
re-derives all of it.
"""
from __future__ import annotations

import math
import statistics
from typing import TYPE_CHECKING, Any, cast

from harness.comparison.stats import mean, t_interval, trimmed_mean
# The policy is the contract's (both checkers apply the same); the numbers are derived here.
from harness.contract import (DRIFT_RULE, DRIFT_SE, GIL_CPU_PER_WALL, METHOD, MIN_ROUNDS, PER_ITEM_SHOWN,
                              SEQ_LAST_LEVEL, SEQ_METHOD, STALL_SHARE, STALL_TICK_S, THIN_STAGE_FACTOR, WRAPPER_S,
                              decide, sequence_ratio, sig10, stopped, timed)
from harness.contract import interference_warning, moved_outside, outside_veto, without_disturbed as decide_without

if TYPE_CHECKING:
    from harness.records import Interference, RunRecord


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


def interval(logs: list[float], level: float = 0.95) -> dict:
    """Ratio and its interval (95% unless said) from per-round log ratios."""
    t = t_interval(logs, level)
    return {"geomean_ratio": sig10(math.exp(t["mean"])),
            "ci95": [sig10(math.exp(v)) for v in t["ci"]] if t["ci"] else None,
            "sd_log": sig10(t["sd"]), "t_quantile": sig10(t["q"])}


def _halves(values: list[float]) -> tuple[float, float, int]:
    """Medians of the earlier and the later half (the median: one burst is not a drift)."""
    half = len(values) // 2
    return statistics.median(values[:half]), statistics.median(values[-half:]), half


def drift(pairs: list[tuple[RunRecord, RunRecord]], d: list[float], effect: float, threshold: float) -> dict:
    """Does the ratio move during the campaign? The per-round log ratios' later half against
    their earlier half decides. Each variant's walls are shown too, but a drift both variants
    share cancels within each shuffled round, so it widens nothing."""
    def walls(runs: list[RunRecord]) -> dict | None:
        if len(runs) < 2:
            return None
        first, last, half = _halves([_wall(r) for r in runs])
        return {"first": [r.label for r in runs[:half]], "last": [r.label for r in runs[-half:]],
                "first_s": sig10(first), "last_s": sig10(last), "change_pct": sig10(100.0 * (last - first) / first)}

    out: dict[str, Any] = {"base": walls([a for a, _ in pairs]), "candidate": walls([b for _, b in pairs]),
                           "ratio": None, "effect_pct": sig10(100.0 * effect), "max_abs_drift_pct": None,
                           "flagged": False, "rule": DRIFT_RULE}
    if len(d) >= 4:
        first, last, half = _halves(d)
        # 2.5 standard errors (not 2: a MAD of few rounds runs low) of a difference of two
        # medians of h draws (~1.2533 sd / sqrt(h) each), the sd estimated robustly within each
        # half (median absolute deviation), so that the drift under test does not count as noise.
        sd = 1.4826 * statistics.median([abs(v - first) for v in d[:half]] + [abs(v - last) for v in d[-half:]])
        noise = DRIFT_SE * 1.2533 * sd * math.sqrt(2.0 / half)
        change = math.exp(last - first) - 1.0
        out["ratio"] = {"first_rounds": [1, half], "last_rounds": [len(d) - half + 1, len(d)],
                        "first": sig10(math.exp(first)), "last": sig10(math.exp(last)),
                        "change_pct": sig10(100.0 * change), "noise_pct": sig10(100.0 * (math.exp(noise) - 1.0))}
        out["max_abs_drift_pct"] = sig10(100.0 * abs(change))
        out["flagged"] = bool(abs(last - first) > noise
                              and 100.0 * abs(change) >= max(50.0 * abs(effect), 100.0 * threshold))
    return out


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


def per_item(pairs, items: list[str], logs: list[list[float]], band: float, enough: bool) -> dict:
    """Each item's own ratio over the rounds, its interval, and how many regressed beyond
    the band (interval above it): what a geometric mean over items can hide."""
    rows = []
    for j, item in enumerate(items):
        iv = interval([row[j] for row in logs])
        rows.append({"id": item, "ratio": iv["geomean_ratio"], "ci95": iv["ci95"]})
    rows.sort(key=lambda row: (-row["ratio"], row["id"]))
    regressed = [row for row in rows if enough and row["ci95"] and row["ci95"][0] > 1 + band]
    improved = [row for row in rows if enough and row["ci95"] and row["ci95"][1] < 1 - band]
    return {"items": len(rows), "band": band, "regressed": len(regressed), "improved": len(improved),
            "worst": rows[0] if rows else None, "table": rows[:PER_ITEM_SHOWN],
            "more": max(0, len(rows) - PER_ITEM_SHOWN)}


def analyze(runs: list[RunRecord], threshold: float, floor: float | None = None, sequential: dict | None = None) -> dict:
    """`stats` of comparison.json from the run records in execution order (see the module
    docstring); JSON-able, floats at 10 significant digits, a pure function of its input.
    sequential: {first, cap} of a `rounds: auto` campaign (contract.sequential_plan), whose
    looks and stop are then derived too; None for a fixed count or order."""
    threshold = float(threshold)
    if not (threshold >= 0 and math.isfinite(threshold)):
        raise ValueError(f"threshold must be a finite number >= 0, got {threshold!r}")
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
    result: dict[str, Any] = {
        "method": METHOD, "threshold": sig10(threshold), "floor": sig10(floor), "band": sig10(band),
        "rounds": {"n": len(pairs), "min": MIN_ROUNDS, "pairs": [[a.label, b.label] for a, b in pairs],
                   "unpaired": unpaired, "log_ratios": [], "sd_log": None, "t_quantile": None,
                   "typical_deviation": None},
        "paired": {"metric": "run wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None,
                   "ci95": None, "run_ratio": None},
        "claim_band": sig10(band), "per_item": None, "drift": None, "load": {"overloaded": overloaded(ok)},
        "sequential": None, "verdict": "inconclusive", "verdict_reason": "", "warnings": warnings,
    }
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
        result["verdict_reason"] = "no round with an ok run of both variants"
        return result

    items, dropped = usable_items([r for pair in pairs for r in pair], "wall_s")
    logs = round_logs(pairs, items, "wall_s")  # per item: the worker's walls, for the per-item table
    d = run_logs(pairs)  # the headline: the runner's walls
    iv = interval(d)
    run_ratio = mean(_wall(b) for _, b in pairs) / mean(_wall(a) for a, _ in pairs)
    paired, rounds = result["paired"], result["rounds"]
    paired.update(items=len(items), items_excluded=dropped, geomean_ratio=iv["geomean_ratio"], ci95=iv["ci95"],
                  run_ratio=sig10(run_ratio))
    center = math.log(iv["geomean_ratio"])
    # A round's typical distance from the ratio, as a share below it: 1 - exp(-median |d_k - c|)
    # (log space, so it stays under 1 however noisy the rounds).
    deviation = sig10(1.0 - math.exp(-statistics.median(abs(v - center) for v in d)))
    rounds.update(log_ratios=[sig10(v) for v in d], sd_log=iv["sd_log"], t_quantile=iv["t_quantile"],
                  typical_deviation=deviation)
    if items and dropped:
        warnings.append(f"{dropped} item(s) left out of the per-item table "
                        "(error or no positive wall_s in some ok run)")

    what = what_of(items, len(pairs))
    result["drift"], _, claim_band, cautions = cautions_of(pairs, d, result["load"]["overloaded"], threshold, band)
    warnings.extend(gil_bound(ok, result["load"]["overloaded"]))
    warnings.extend(cautions)
    result["claim_band"] = claim_band
    enough = len(pairs) >= MIN_ROUNDS
    if items:
        result["per_item"] = per_item(pairs, items, logs, claim_band, enough)
    if sequential is not None:
        return _sequential(result, pairs, d, items, threshold, band, sequential)
    if not enough:
        result["verdict_reason"] = (f"only {len(pairs)} round(s) of one base and one candidate run: at least "
                                    f"{MIN_ROUNDS} are needed to estimate the run-to-run variance")
        warnings.append(f"too few rounds to conclude ({len(pairs)} of at least {MIN_ROUNDS}; `rounds: N` or "
                        "`--rounds N`)")
        return result
    lo, hi = paired["ci95"]
    result["verdict"], result["verdict_reason"] = decide(lo, hi, band, paired["run_ratio"], what, claim_band)
    return result


def cautions_of(pairs, d: list[float], overloaded_runs: list[str], threshold: float, band: float):
    """(drift, typical deviation, claim band, cautions) of the rounds `pairs` with per-round log
    ratios d: under a flagged drift or overloaded runs a claim must clear the claim band, the
    rounds' typical deviation from the ratio and the drift, in log space."""
    center = math.log(sig10(math.exp(trimmed_mean(d))))  # the ratio as comparison.json holds it
    deviation = sig10(1.0 - math.exp(-statistics.median(abs(v - center) for v in d)))
    found = drift(pairs, d, math.exp(center) - 1.0, threshold)
    cautions = []
    if found["flagged"]:
        cautions.append(f"drift: the ratio of the later rounds differs from the earlier rounds' by "
                        f"{found['max_abs_drift_pct']:.2f}%")
    if overloaded_runs:
        cautions.append(f"more runnable work than cores during {', '.join(overloaded_runs)}")
    claim_band = band
    if cautions:  # a claim must clear the noise it was measured under; "equal" keeps the plain band
        moved = abs(math.log(found["ratio"]["last"] / found["ratio"]["first"])) if found["flagged"] else 0.0
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
         band: float) -> tuple[list[float] | None, str, str]:
    """One look of a sequential campaign after round len(d): ([lo, hi] of the ratio, valid at
    every look, or None while unbounded; verdict; reason) by the contract's rule."""
    ci = sequence_ratio(d)
    if ci is None:
        return None, "inconclusive", f"the interval valid at every look is still unbounded after {len(d)} rounds"
    lo, hi = ci
    labels = {r.label for pair in pairs for r in pair}
    _, _, claim_band, _ = cautions_of(pairs, d, [x for x in overloaded_runs if x in labels], threshold, band)
    run_ratio = sig10(mean(_wall(b) for _, b in pairs) / mean(_wall(a) for a, _ in pairs))
    verdict, reason = decide(lo, hi, band, run_ratio, what_of(items, len(d)) + " (valid at every look)",
                             claim_band)
    return [lo, hi], verdict, reason


def undisturbed_verdict(pairs, overloaded_runs: list[str], threshold: float, band: float) -> str | None:
    """The same look on the rounds of `pairs` without a disturbed run (items and log ratios
    derived again from those rounds, as with_interference derives them), or None when no round
    is disturbed: a look decides only when its claim holds on these too."""
    kept = [(a, b) for a, b in pairs if not (a.disturbed or b.disturbed)]
    if len(kept) == len(pairs):
        return None
    if not kept:
        return "inconclusive"
    return look(kept, run_logs(kept), [], overloaded_runs, threshold, band)[1]


def _sequential(result: dict, pairs, d: list[float], items: list[str], threshold: float, band: float,
                plan: dict) -> dict:
    """A sequential campaign's looks, and its verdict: the first look that decides, else at the
    budget's cap the fixed-count trimmed-t interval at SEQ_LAST_LEVEL (contract: SEQ_*). A look
    over disturbed rounds decides only when the undisturbed rounds' look gives the same word, so
    the campaign goes on rather than stop on a claim the disturbed rounds alone carry."""
    first, cap = plan["first"], plan["cap"]
    overloaded_runs = result["load"]["overloaded"]
    looks: list[dict] = []
    last: tuple[list[float] | None, str, str] | None = None
    for k in range(first, len(pairs) + 1):
        last = look(pairs[:k], d[:k], items, overloaded_runs, threshold, band)
        if last[1] != "inconclusive" and undisturbed_verdict(pairs[:k], overloaded_runs, threshold,
                                                               band) not in (None, last[1]):
            last = (last[0], "inconclusive", f"{last[2]}, but not without the disturbed rounds")
        looks.append({"round": k, "ci95": last[0], "verdict": last[1]})
    why = stopped([(row["round"], row["verdict"]) for row in looks], len(pairs), cap)
    result["sequential"] = {"method": SEQ_METHOD, "first": first, "cap": cap, "looks": looks,
                            "stopped": why or "ended"}
    result["method"] = f"{METHOD}; {SEQ_METHOD}"
    paired = result["paired"]
    if why == "decided":
        assert last is not None  # a look decided, so there was one
        paired["ci95"] = last[0]
        result["verdict"], result["verdict_reason"] = last[1], f"{last[2]}, decided at round {len(pairs)}"
    elif why == "cap" and len(d) >= 2:
        fixed = interval(d, SEQ_LAST_LEVEL)
        paired["ci95"] = fixed["ci95"]
        lo, hi = fixed["ci95"]
        verdict, reason = decide(lo, hi, band, paired["run_ratio"],
                                 what_of(items, len(d)).replace("ratio", f"ratio ({100 * SEQ_LAST_LEVEL:g}%)", 1),
                                 result["claim_band"])
        result["verdict"] = verdict
        result["verdict_reason"] = f"{reason}; no look decided before the budget's cap of {cap} rounds"
    else:
        paired["ci95"] = last[0] if last else None
        result["verdict_reason"] = (f"the campaign ended after {len(pairs)} of at most {cap} rounds before a look "
                                    "decided")
    return result


def round_of(label: str) -> int:
    """A timed run's round: A3 and B3 are round 3."""
    return int(label[1:])


def outside_of(r: RunRecord) -> tuple:
    """(loop wall, time outside the loop by the runner's clock, the kernel's CPU over the loop and
    outside it, each None where not read)."""
    o = r.outside
    assert o is not None  # an ok run of the current schema has its section
    cpu = o.before_cpu_s + o.after_cpu_s if o.before_cpu_s is not None and o.after_cpu_s is not None else None
    return _wall(r), o.before_s + o.after_s, o.loop_cpu_s, cpu


def with_outside(stats: dict, runs: list) -> dict:
    """stats with `outside`: the runs whose figures the runner's own contradict, and the rule on the
    time outside the timed loop over the paired rounds (contract.moved_outside); a claim the outside
    figures do not support is not made (contract.outside_veto)."""
    usable = [r for r in usable_runs(runs) if r.outside is not None]
    contradicted = [(r.label, r.outside.contradictions) for r in usable if r.outside and r.outside.contradicted]
    pairs, _ = pairs_of([r for r in usable if timed(r.label)])
    moved = moved_outside([(outside_of(a), outside_of(b)) for a, b in pairs], stats["band"])
    stats["verdict"], stats["verdict_reason"], holds = outside_veto(stats["verdict"], stats["verdict_reason"],
                                                                    contradicted, moved)
    stats["outside"] = {"contradicted": [label for label, _ in contradicted], "moved": moved, "holds": holds}
    if contradicted:
        stats["warnings"].append("outside: the runner's own figures contradict the worker's in " + ", ".join(
            f"{label} ({', '.join(causes)})" for label, causes in contradicted))
    if moved is not None and moved["flagged"]:
        stats["warnings"].append(f"outside: the time outside the candidate's timed loop grew by {moved['grown_s']:.3g} "
                                 f"s a round while its loop saved {moved['saved_s']:.3g} s")
    return stats


def with_interference(stats: dict, runs: list, bounds: dict | None, threshold: float,
                      floor: float | None = None) -> dict:
    """stats with `interference` (campaign.json's bounds given; None: a bundle of an earlier run
    schema, whose records measured none): the ok runs the runner marked disturbed, the rounds they
    are in, and the verdict of the same rule (analyze) on the other rounds. A claim that the other
    rounds alone do not give is no claim (contract.without_disturbed)."""
    if bounds is None:
        return stats
    usable = usable_runs(runs)
    marked = [r for r in usable if r.disturbed]
    pairs = stats["rounds"]["pairs"]
    labels = {r.label for r in marked}
    rounds = [round_of(a) for a, b in pairs if a in labels or b in labels]
    other, without = None, None
    if rounds:
        gone = {f"{v}{k}" for k in rounds for v in "AB"}
        kept = len(pairs) - len(rounds)
        # A sequential campaign's rule on the other rounds: one look over all of them (its cap).
        plan = {"first": kept, "cap": kept} if stats["sequential"] is not None and kept else None
        rest = analyze([r for r in runs if r.label not in gone], threshold, floor, plan)
        other = (rest["verdict"], rest["rounds"]["n"])
        without = {"rounds": rest["rounds"]["n"], "geomean_ratio": rest["paired"]["geomean_ratio"],
                   "ci95": rest["paired"]["ci95"], "verdict": rest["verdict"]}
    verdict, reason, holds = decide_without(stats["verdict"], stats["verdict_reason"], rounds, other)
    stats["verdict"], stats["verdict_reason"] = verdict, reason
    stats["interference"] = {
        "max_steal": bounds["max_steal"], "min_cpu_per_wall": bounds["min_cpu_per_wall"],
        "steal_runs": sum(1 for r in usable if r.interference is not None and r.interference.steal_ticks is not None),
        "freq_runs": sum(1 for r in usable if r.interference is not None
                         and r.interference.freq_mhz_before is not None),
        "disturbed": [r.label for r in marked], "disturbed_rounds": rounds, "without": without, "holds": holds}
    if marked:
        stats["warnings"].append(interference_warning([(r.label, cast("Interference", r.interference).causes) for r in marked],
                                                      bounds["max_steal"], bounds["min_cpu_per_wall"], rounds, holds))
    return stats
