"""The decision rules both sides replay: the code that turns measured numbers into a verdict,
written once and run by the writer (harness/comparison/, the runner, the campaign loader) and by
both checkers (harness/rehash.py and `harness verify`) alike: the verdict and its family
(`decide`), the sequential design and its confidence sequences (`design`, `confidence_sequence`,
`stopped`), the plan of runs (`round_order`, `schedule`, `labels`) and its order and noise-floor
rules, the interference and outside-reading rules, the rules on re-derived sections, Student's t
and the bisect search.

harness/contract.py declares (the bundle's closed layout, its limits, tolerances, words and
policy constants); this module decides, reading those declarations. Standard library only, and
no import of the harness but the contract: rehash.py, run alone by a reviewer, loads this file
from beside itself as it loads contract.py (a reviewer copies rehash.py, contract.py and rules.py).
"""
import functools
import hashlib
import math
import operator
from collections import namedtuple
from typing import List, Optional, Sequence, Tuple  # Python 3.9: the worker's room

if __package__:  # harness.rules, imported as part of the harness
    from harness.contract import (
        ANSWERS, CHANGED, CONTRADICTIONS, CPU_SLACK_S, DEFAULT_QUESTION, DEFAULT_THRESHOLD, DUET, FAMILY_NAMED, HEADLINE,
        INSTRUCTION_BAND, ITEMS_SHARE, ITEMS_SLACK_S, MARK_SLACK_S, MARK_SLACK_SHARE, MAX_BAND, MAX_PROBE_BAND,
        MAX_ROUNDS, MAX_ULP, METRIC, MIN_ROUNDS, MOVED_LEVEL, MOVED_SHARE, PRECISION_LIMITS, QUESTION_ALPHA, SEQ_ALPHA,
        SEQ_SIGN_SHARE, SEQ_T_SPEND, SEQ_T_SPEND_FAMILY, SIG_DIGITS, STAMP_TOL_S, TRIM, VARIANTS, VERDICTS,
        WALK_REACH, WALK_STEP, ZYGOTE_RUNS, is_suite_entry)
else:  # loaded from its file by rehash.py, run alone: the contract it loaded from beside itself
    from abba_contract import (  # type: ignore[import-not-found, no-redef]  # rehash.py's name for contract.py
        ANSWERS, CHANGED, CONTRADICTIONS, CPU_SLACK_S, DEFAULT_QUESTION, DEFAULT_THRESHOLD, DUET, FAMILY_NAMED, HEADLINE,
        INSTRUCTION_BAND, ITEMS_SHARE, ITEMS_SLACK_S, MARK_SLACK_S, MARK_SLACK_SHARE, MAX_BAND, MAX_PROBE_BAND,
        MAX_ROUNDS, MAX_ULP, METRIC, MIN_ROUNDS, MOVED_LEVEL, MOVED_SHARE, PRECISION_LIMITS, QUESTION_ALPHA, SEQ_ALPHA,
        SEQ_SIGN_SHARE, SEQ_T_SPEND, SEQ_T_SPEND_FAMILY, SIG_DIGITS, STAMP_TOL_S, TRIM, VARIANTS, VERDICTS,
        WALK_REACH, WALK_STEP, ZYGOTE_RUNS, is_suite_entry)


# --- interference over a run's timed loop (docs/statistics.md "Interference") ------------------
def disturbance(measured, wall_s, process_cpu_s, cores, max_steal, min_cpu_per_wall):
    """(steal_share, cpu_per_wall, causes) of one ok run from what its worker measured over the
    timed loop (measured: user_hz, steal_ticks, cpu_steal_ticks; any may be None: not shown by the
    kernel). steal_share: the larger of its own CPU's steal over the wall and all CPUs' steal over
    cores x the wall (None without either); cpu_per_wall: process CPU over the wall. causes: the
    bounds crossed, in DISTURBED_CAUSES order (a tick of steal is allowed: whole ticks)."""
    hz = measured.get("user_hz")
    shares, over = [], False
    if hz and wall_s and wall_s > 0:
        tick = 1.0 / hz
        own, every = measured.get("cpu_steal_ticks"), measured.get("steal_ticks")
        if own is not None:
            shares.append(own / hz / wall_s)
            over |= own / hz > max_steal * wall_s + tick
        if every is not None and cores:
            shares.append(every / hz / (cores * wall_s))
            over |= every / hz > max_steal * cores * wall_s + tick
    cpu_per_wall = process_cpu_s / wall_s if process_cpu_s is not None and wall_s and wall_s > 0 else None
    causes = (["steal"] if over else []) + \
        (["off_cpu"] if min_cpu_per_wall is not None and cpu_per_wall is not None
         and cpu_per_wall < min_cpu_per_wall else [])
    return (sig10(max(shares)) if shares else None), sig10(cpu_per_wall), causes


def without_disturbed(verdict, reason, disturbed_rounds, other):
    """(verdict, reason, holds) once the rounds with a disturbed run are left out: other is the
    verdict the same rule gives on the remaining rounds ((verdict, rounds), None: no round is
    disturbed). A claim (improved, regressed, equal) holds only when the other rounds alone give the
    same word; else the campaign makes no claim, and says so."""
    if other is None or verdict == "inconclusive":
        return verdict, reason, True
    if other[0] == verdict:
        return verdict, reason, True
    return "inconclusive", (f"{reason}, but the verdict does not hold without the {len(disturbed_rounds)} disturbed "
                            f"round(s) ({', '.join(str(k) for k in disturbed_rounds)}): the other {other[1]} round(s) "
                            f"give {other[0]}"), False


def interference_warning(disturbed, max_steal, min_cpu_per_wall, rounds, holds):
    """The warning line of a campaign with disturbed runs (disturbed: (label, causes) pairs)."""
    bounds = f"steal above {100 * max_steal:g}% of the loop's wall" + \
        (f", or CPU/wall below {min_cpu_per_wall:g}" if min_cpu_per_wall is not None else "")
    runs = ", ".join(f"{label} ({' and '.join(causes)})" for label, causes in disturbed)
    if not rounds:
        return f"interference: disturbed ({bounds}): {runs}; not in a timed round"
    return (f"interference: disturbed ({bounds}): {runs}; the verdict "
            + ("holds" if holds else "does not hold") + f" without the {len(rounds)} round(s) "
            f"{', '.join(str(k) for k in rounds)}")

# --- measured from outside the worker (harness/engine/outside.py) -------------------------------
def contradictions(outside, wall_s, items, slots, process_cpu_s, stage_self_cpu_s):
    """The CONTRADICTIONS one ok run's figures show (outside: its record's section as JSON; items:
    (wall, cpu) per item, the worker's), in CONTRADICTIONS order."""
    found = set()
    start_lat, end_lat = outside["latency_s"]
    if start_lat < -STAMP_TOL_S or end_lat < -STAMP_TOL_S:
        found.add("stamps")
    if start_lat + end_lat > MARK_SLACK_S + MARK_SLACK_SHARE * wall_s:
        found.add("wall")
    cpu = outside["loop_cpu_s"]
    if cpu is not None:
        if process_cpu_s is not None and process_cpu_s > cpu + CPU_SLACK_S:
            found.add("cpu")
        if math.fsum(c for _w, c in items) > cpu + CPU_SLACK_S:
            found.add("items_cpu")
        if stage_self_cpu_s > cpu + CPU_SLACK_S:
            found.add("stages_cpu")
    if slots == 1 and items and math.fsum(w for w, _c in items) < \
            ITEMS_SHARE * outside["worker_wall_s"] - ITEMS_SLACK_S:
        found.add("items_wall")
    for cause, key in (("tripwire", "tripwire"), ("scheduling", "scheduling"), ("marks", "violations")):
        if outside[key]:
            found.add(cause)
    return [c for c in CONTRADICTIONS if c in found]


def outside_pair(base, candidate):
    """A paired round's two runs as moved_outside reads them: each (loop wall, time outside the loop
    by the runner's clock, the kernel's CPU over the loop and outside it). base, candidate: each
    (wall_s, its outside section, its process section, its launch mode), records as JSON. In a duet
    (`launch: duet`) each end mark is held until both loops ended (engine/outside.Together), so the
    run whose loop ended first waited there for the other's: time its process spent after its loop,
    but not work moved out of it. That wait (duet_hold) is left out of its time outside; the worker
    waits at its end mark without spinning, so it adds no CPU."""
    sides = [base, candidate]
    holds = duet_holds(base, candidate) if all(mode == DUET for *_, mode in sides) else (0.0, 0.0)
    out = []
    for (wall, o, _p, _m), hold in zip(sides, holds):
        cpu = o["before_cpu_s"] + o["after_cpu_s"] if o["before_cpu_s"] is not None and o["after_cpu_s"] is not None \
            else None
        out.append((wall, o["before_s"] + max(0.0, o["after_s"] - hold), o["loop_cpu_s"], cpu))
    return out[0], out[1]


def duet_holds(base, candidate):
    """(base's, candidate's) wait at the end mark of a duet's round: from its own loop's end to the
    later of the two loops' ends (loop_span, by the runner's clock). base, candidate: as outside_pair."""
    ends = [loop_span(p["started_at"], o["before_s"], wall)[1] for wall, o, p, _m in (base, candidate)]
    last = max(ends)
    return last - ends[0], last - ends[1]


def moved_outside(rounds, band):
    """The time-outside-the-loop rule over paired timed rounds. rounds: per round (base, candidate),
    each (loop wall, time outside the loop by the parent's clock, the kernel's CPU over the loop and
    outside it, each None where not read). None with fewer than MIN_ROUNDS rounds; else {rounds,
    saved_s, grown_s, grown_cpu_s, lower_s: [by the clock, by CPU or None], flagged}."""
    if len(rounds) < MIN_ROUNDS:
        return None
    n = len(rounds)
    q = t_quantile(MOVED_LEVEL, n - 1)

    def lower(values):
        m = math.fsum(values) / n
        sd = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))
        return m - q * sd / math.sqrt(n)

    saved = [a[0] - b[0] for a, b in rounds]
    grown = [b[1] - a[1] for a, b in rounds]
    margin = [MOVED_SHARE * s + band * a[0] for s, (a, _b) in zip(saved, rounds)]
    by_wall = lower([g - m for g, m in zip(grown, margin)])
    cpu = None not in [x[k] for pair in rounds for x in pair for k in (2, 3)]
    grown_cpu = [b[3] - a[3] for a, b in rounds] if cpu else None
    by_cpu = lower([g - MOVED_SHARE * (a[2] - b[2]) - band * a[2] for g, (a, b) in zip(grown_cpu, rounds)]) \
        if grown_cpu is not None else None
    return {"rounds": n, "saved_s": sig10(math.fsum(saved) / n), "grown_s": sig10(math.fsum(grown) / n),
            "grown_cpu_s": sig10(math.fsum(grown_cpu) / n) if grown_cpu is not None else None,
            "lower_s": [sig10(by_wall), sig10(by_cpu)],
            "flagged": by_wall > 0 or (by_cpu is not None and by_cpu > 0)}


def outside_veto(verdict, reason, contradicted, moved):
    """(verdict, reason, holds): a claim (improved, regressed, equal) the outside figures do not
    support is not made. contradicted: (label, causes) of the timed runs whose figures the parent's
    contradict; moved: moved_outside's section (or None)."""
    if verdict == "inconclusive":
        return verdict, reason, True
    if contradicted:
        runs = ", ".join(f"{label} ({', '.join(causes)})" for label, causes in contradicted)
        return "inconclusive", (f"{reason}, but the runner's own figures contradict the worker's in {runs}: the "
                                "claim is not made"), False
    if moved is not None and moved["flagged"] and verdict in ("improved", "equal"):
        return "inconclusive", (f"{reason}, but the time outside the candidate's timed loop grew by "
                                f"{moved['grown_s']:.6g} s a round (CPU {_num(moved['grown_cpu_s'])} s) while the "
                                f"loop saved {moved['saved_s']:.6g} s: the work moved out of the loop, not away; the "
                                "claim is not made"), False
    return verdict, reason, True



def outside_section(stats, contradicted, moved):
    """stats with the runner's outside figures applied, as both sides write it: the veto on the
    verdict (outside_veto), stats.outside, and a warning for each thing found."""
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


def origin_allowed(where, roots):
    """An import origin a run can have (its record's imported_from): a path in its revision's tree
    (tree:REL, no component that leaves it), a built-in, or an absolute path under a folder the run
    could read (environment.json's sandbox.read: its interpreter, the inputs, the workload folder,
    what the campaign declared)."""
    if where == "<built-in>":
        return True
    if where.startswith("tree:"):
        rel = where[5:]
        return bool(rel) and not rel.startswith("/") and all(p not in ("..", ".", "") for p in rel.split("/")) \
            and not any(ch in rel for ch in "\r\n\\%\0")
    if not where.startswith("/") or any(p in ("..", ".") for p in where.split("/")) or "//" in where:
        return False
    return any(where == r or where.startswith(r.rstrip("/") + "/") for r in roots)


def _num(x):
    return "n/a" if x is None else f"{x:.6g}"


# --- verdicts: the words (harness/outcomes.py gives their exit codes and the verdict line) ----
def sig10(x):
    """x rounded to SIG_DIGITS significant digits (None and non-finite kept), so that a number
    re-derived on another machine is the same JSON even when libm differs in the last bit."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{SIG_DIGITS - 1}e}")


def decide(lo: float, hi: float, band: float, run_ratio: Optional[float], what: str, claim_band: Optional[float] = None,
           question: str = "claim", margin: Optional[float] = None) -> Tuple[str, str]:
    """(verdict, reason) of an interval [lo, hi] of candidate/base. A claim (question "claim", the
    interval two-sided at 95%) against the equal band [1 - band, 1 + band]: improved below it,
    regressed above it, equal inside it, else inconclusive; a claim the run-level ratio of mean
    walls contradicts (it lies on the other side of the band) is inconclusive too; measured under
    load or drift, a claim must also clear the wider claim_band. A one-sided question (each end a
    one-sided 95% bound) against its margin: "not_slower" answers "not slower" when the upper end
    is within 1 + margin, "regressed" when the lower end is past it (and past the claim band);
    "not_faster" the mirror ("not faster", "improved"). A pure function of the interval, the band
    and the margin."""
    if question != "claim":
        return _one_sided(lo, hi, band, run_ratio, what, claim_band, question, margin)
    edges = f"[{1 - band:.4f}, {1 + band:.4f}]"
    ci = f"95% CI [{lo:.4f}, {hi:.4f}] of {what}"
    if lo >= 1 - band and hi <= 1 + band:
        return "equal", f"{ci} lies inside the equal band {edges}"
    if hi < 1 - band:
        verdict, reason = "improved", f"{ci} lies below the equal band {edges}"
    elif lo > 1 + band:
        verdict, reason = "regressed", f"{ci} lies above the equal band {edges}"
    else:
        return "inconclusive", f"{ci} straddles an edge of the equal band {edges}"
    if run_ratio is not None and ((verdict == "improved" and run_ratio > 1 + band)
                                  or (verdict == "regressed" and run_ratio < 1 - band)):
        return "inconclusive", (f"{reason}, but the run-level ratio of mean walls {run_ratio:.4f} lies on "
                                "the other side of the band")
    if claim_band is not None and claim_band > band and not (hi < 1 - claim_band if verdict == "improved"
                                                             else lo > 1 + claim_band):
        return "inconclusive", (f"{reason}, but measured under load or drift a claim must clear "
                                f"[{1 - claim_band:.4f}, {1 + claim_band:.4f}], and it does not")
    return verdict, reason


def _one_sided(lo, hi, band, run_ratio, what, claim_band, question, margin):
    """decide for a one-sided question (QUESTIONS): its answer, the other side, or inconclusive."""
    slower = question == "not_slower"
    edge = 1 + margin if slower else 1 - margin
    name = f"{'slower' if slower else 'faster'} than {100 * margin:g}%"
    bounds = f"one-sided 95% bounds [{lo:.4f}, {hi:.4f}] of {what}"
    past = max(margin, claim_band or band)  # the other side is a claim: it clears the claim band too
    if (hi <= edge) if slower else (lo >= edge):
        word = "not slower" if slower else "not faster"
        reason = f"the {'upper' if slower else 'lower'} bound of the {bounds} lies within {edge:.4f}: not {name}"
        if run_ratio is not None and ((run_ratio > edge) if slower else (run_ratio < edge)):
            return "inconclusive", (f"{reason}, but the run-level ratio of mean walls {run_ratio:.4f} lies beyond "
                                    f"{edge:.4f}")
        return word, reason
    if (lo > 1 + past) if slower else (hi < 1 - past):
        word = "regressed" if slower else "improved"
        reason = f"the {'lower' if slower else 'upper'} bound of the {bounds} lies beyond {edge:.4f}: {name}"
        if run_ratio is not None and ((run_ratio < 1 - band) if slower else (run_ratio > 1 + band)):
            return "inconclusive", (f"{reason}, but the run-level ratio of mean walls {run_ratio:.4f} lies on "
                                    "the other side of the band")
        return word, reason
    if (lo > edge) if slower else (hi < edge):
        return "inconclusive", (f"the {bounds} lie beyond {edge:.4f}, but measured under load or drift the answer "
                                f"must clear {1 + past if slower else 1 - past:.4f}, and it does not")
    return "inconclusive", f"the {bounds} straddle {edge:.4f}: not yet known whether {name}"


def family_verdict(question, verdicts):
    """The word a family of claims (a suite's benchmarks) gives once every member has decided:
    the other side of the question if any member reached it (regressed for a claim or a gate,
    improved for "not faster"), inconclusive if any member did not decide, else a claim's
    improved when any member improved and equal when all are, a one-sided question's answer."""
    words = set(verdicts)
    against = "improved" if question == "not_faster" else "regressed"
    if against in words:
        return against
    if "inconclusive" in words or not words:
        return "inconclusive"
    if question == "claim":
        return "improved" if "improved" in words else "equal"
    return ANSWERS[question][0]


def family_of(question, rows, first, rounds):
    """(stats.family, the family's looks) from its benchmarks' rows (id, n, ratio, ci95, verdict,
    verdict_reason, decided_at, expected_rounds), each derived by the same look rule: the counts of
    every word, each benchmark's share of alpha, and at each look from `first` to `rounds` (None:
    a fixed count, no looks) the family's word once every benchmark has decided by it."""
    m = len(rows)
    looks = []
    for k in range(first, rounds + 1) if first is not None else ():
        done = [row["verdict"] for row in rows if row["decided_at"] is not None and row["decided_at"] <= k]
        looks.append({"round": k, "ci95": None, "verdict": family_verdict(question, done) if len(done) == m
                      else "inconclusive", "precise": None})
    expected = [row["expected_rounds"] for row in rows if row["expected_rounds"] is not None]
    section = {"members": m, "alpha": sig10((QUESTION_ALPHA if question != "claim" else SEQ_ALPHA) / m),
               "counts": {word: sum(1 for row in rows if row["verdict"] == word) for word in VERDICTS},
               "items": rows, "expected_rounds": max(expected) if expected else None}
    return section, looks


def family_summary(section):
    """A suite's counts in words, naming its changed benchmarks (FAMILY_NAMED at most): "12
    benchmarks: 2 improved (b3 0.4012, b7 0.7003), 0 regressed, 10 equal, 0 undecided"."""
    rows, counts, parts = section["items"], section["counts"], []
    for word in VERDICTS:
        if word == "inconclusive":
            continue
        named = [f"{row['id']} {row['ratio']:.4f}" for row in rows if row["verdict"] == word and word in CHANGED]
        if counts[word] or word in CHANGED:
            text = f"{counts[word]} {word}"
            if named:
                text += f" ({', '.join(named[:FAMILY_NAMED])}{', ...' if len(named) > FAMILY_NAMED else ''})"
            parts.append(text)
    parts.append(f"{counts['inconclusive']} undecided")
    return f"{section['members']} benchmarks: " + ", ".join(parts)


def family_ending(question, section, looks, why, rounds, cap):
    """(verdict, reason) of a sequential suite: the family's look that decided (every benchmark
    had), or at the cap the members' words as they stand."""
    summary = family_summary(section)
    if why == "decided":
        return looks[-1]["verdict"], f"{summary}; every benchmark decided by round {rounds}"
    if why == "cap":
        return (family_verdict(question, [row["verdict"] for row in section["items"]]),
                f"{summary}; the budget's cap of {cap} rounds came first")
    return "inconclusive", f"{summary}; the campaign ended after {rounds} of at most {cap} rounds"


def sequential_ending(why: Optional[str], last, rounds: int, cap: int, decided=None,
                      precision: Optional[float] = None) -> Tuple[str, str]:
    """(verdict, reason) of a sequential campaign of one claim, wording included: the look that
    decided (last: the last look's (ci95, verdict, reason)), or at the cap no claim, or an end
    before any look decided (why: stopped's). With a precision: the look that stopped was that
    precise too; "imprecise" keeps the word of the first look that decided (decided: its (round,
    verdict, reason)) and says the interval at the cap is wider than asked."""
    if why == "decided":
        within = f", its interval within the +-{100 * precision:g}% precision asked for" if precision else ""
        return last[1], f"{last[2]}, decided at round {rounds}{within}"
    if why == "imprecise" and decided is not None and precision is not None:
        return decided[1], f"{decided[2]}, decided at round {decided[0]}, but {imprecision(last[0], precision, cap)}"
    if why == "cap":
        return "inconclusive", f"{last[2] if last else 'no look'}; no look decided by the budget's cap of {cap} rounds"
    return "inconclusive", f"the campaign ended after {rounds} of at most {cap} rounds before a look decided"


def imprecision(ci, precision: float, cap: int) -> str:
    """Why a decided campaign stopped at its cap: "the interval 0.031-0.048 is wider than the
    +-10% precision asked for at the cap of 20 rounds"."""
    shown = f"the interval {ci[0]:.4g}-{ci[1]:.4g} is wider than" if ci else "the interval is unbounded, not within"
    return f"{shown} the +-{100 * precision:g}% precision asked for at the cap of {cap} rounds"


def centre(values: Sequence[float]) -> float:
    """The ratio a look's interval is held to by a precision: exp of the mean per-round log ratio
    (the headline's geometric-mean ratio), at SIG_DIGITS."""
    return sig10(math.exp(max(-20.0, min(20.0, math.fsum(values) / len(values)))))


def precise(ci, values: Sequence[float], precision: Optional[float]) -> Optional[bool]:
    """Whether a look's interval ci = [lo, hi] (a ratio interval, or None while unbounded) lies
    within a factor 1 + precision of its centre c (of the per-round log ratios `values` so far):
    hi <= c (1 + precision) and lo >= c / (1 + precision). None without a precision."""
    if precision is None:
        return None
    if ci is None or not values:
        return False
    c = centre(values)
    return ci[1] <= c * (1.0 + precision) and ci[0] >= c / (1.0 + precision)


def expected_rounds(values, plan, band, margin, question, rounds, precision=None):
    """The rounds in all a campaign of this Design's level would need for the mean's interval to
    decide, if its per-round log ratios kept their mean and spread: the first count whose half
    width is within the distance from the mean to the nearest answer (with a precision, a
    campaign that decided but was not that precise: within log(1 + precision)) (MAX_ROUNDS + 1:
    more than one campaign may run; None: no spread, or the mean on an edge that no count clears)."""
    n = len(values)
    if n < 3:
        return None
    m = math.fsum(values) / n
    s = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))
    if precision is not None:
        gap = math.log1p(precision)
    elif question == "claim":
        low, high = math.log(1 - band), math.log1p(band)
        gap = max(low - m, m - high, min(m - low, high - m))
    else:
        gap = abs(m - (math.log1p(margin) if question == "not_slower" else math.log(1 - margin)))
    if s == 0.0 or gap <= 0.0:
        return None
    level = levels(plan)[0]
    for count in range(max(rounds + 1, 3), MAX_ROUNDS + 1):
        if t_quantile(1.0 - level, count - 1) * s / math.sqrt(count) <= gap:
            return count
    return MAX_ROUNDS + 1


def metric_interval(d, sequential, fixed):
    """[lo, hi] of a metric other than the headline, from its per-round log ratios d at the
    campaign's last round. A sequential campaign (`sequential`: its claim Design): the interval of
    its looks (valid at whichever look stopped, so at the one the headline chose), or a point when
    every round gave the same ratio (a reading that repeats exactly, as a peak in whole pages can);
    None while unbounded. A fixed count (None): `fixed`, the 95% trimmed-t interval each checker
    derives its own way."""
    if not sequential:
        return fixed
    if len(d) >= 3 and max(d) == min(d):
        point = sig10(math.exp(max(-20.0, min(20.0, d[0]))))
        return [point, point]
    return sequence_ratio(d, sequential)


def metric_entry(name, of, n, base, candidate, ratio, ci, band, sequential):
    """One entry of comparison.json `metrics` for a "rounds" metric other than the headline: its
    interval (metric_interval) against its band by `decide`, without the headline's run-ratio and
    claim-band guards (those judge the wall's noise). A fixed count needs MIN_ROUNDS rounds."""
    entry = {"name": name, "unit": METRIC[name].unit, "of": of, "n": n, "base": base,
             "candidate": candidate, "ratio": ratio, "ci95": ci, "band": sig10(band), "verdict": "inconclusive",
             "verdict_reason": ""}
    if ratio is None:
        entry["verdict_reason"] = f"no round with a {METRIC[name].title} reading of both variants"
    elif not sequential and n < MIN_ROUNDS:
        entry["verdict_reason"] = f"only {n} round(s): at least {MIN_ROUNDS} are needed"
    elif ci is None:
        entry["verdict_reason"] = f"the interval valid at every look is still unbounded after {n} rounds"
    else:
        what = f"the {METRIC[name].title} ratio ({of}, {n} rounds" + (
            ", valid at every look)" if sequential else ")")
        entry["verdict"], entry["verdict_reason"] = decide(ci[0], ci[1], band, None, what)
    return entry


def headline_entry(wall, stats):
    """The headline's entry of comparison.json `metrics`: what `stats` and `wall` hold, in the
    one shape every metric has (the headline's own detail stays in `stats`)."""
    paired = stats["paired"]
    of = paired["metric"]
    return {"name": HEADLINE, "unit": METRIC[HEADLINE].unit, "of": of, "n": stats["rounds"]["n"],
            "base": wall["base_mean_s"], "candidate": wall["candidate_mean_s"], "ratio": paired["geomean_ratio"],
            "ci95": paired["ci95"], "band": stats["band"], "verdict": stats["verdict"],
            "verdict_reason": stats["verdict_reason"]}


def instructions_entry(section):
    """The instruction counts' entry of comparison.json `metrics` from its `instructions` section
    (the counts of each run stay there)."""
    means = {v: (math.fsum(section[v]["counts"]) / len(section[v]["counts"]) if section[v]["counts"] else None)
             for v in ("base", "candidate")}
    return {"name": "instructions", "unit": METRIC["instructions"].unit,
            "of": f"instruction counts of {section['items']} items", "n": min(
                len(section["base"]["counts"]), len(section["candidate"]["counts"])),
            "base": sig10(means["base"]), "candidate": sig10(means["candidate"]), "ratio": section["ratio"],
            "ci95": None, "band": section["band"], "verdict": section["verdict"],
            "verdict_reason": section["verdict_reason"]}


# --- the plan: definitions both the runner and the checkers follow -------------------------------
def coin(domain: str, seed: int, index: int) -> bool:
    """A fresh, recorded coin: the low bit of SHA-256("<domain>:<seed>:<index>") is 0."""
    return hashlib.sha256(f"{domain}:{seed}:{index}".encode()).digest()[0] & 1 == 0


def round_order(rounds, seed, stage_rounds=0, first=None):
    """Each round one A and one B, A first when coin("abba-rounds-v1", seed, round) (always,
    before a seed is drawn). Stage round j (one a and one b, a first when
    coin("abba-stage-rounds-v1", seed, j)) follows timed round ceil((j + 1) m /
    (stage_rounds + 1)), spread through the first m rounds: m = rounds, or with `first` (a
    sequential campaign, `rounds: auto`) m = first, so that the order of a longer campaign
    begins with the order of a shorter one and where it stops cannot move a run."""
    span = rounds if first is None else min(first, rounds)
    after = {-(-(j + 1) * span // (stage_rounds + 1)): j for j in range(stage_rounds)}
    out = []
    for i in range(rounds):
        out.append("AB" if seed is None or coin("abba-rounds-v1", seed, i) else "BA")
        if i + 1 in after:
            out.append("ab" if seed is None or coin("abba-stage-rounds-v1", seed, after[i + 1]) else "ba")
    return "".join(out)


def order_problem(order: str) -> Optional[str]:
    """Why an order cannot decide a claim (the `decision` rule), or None. A round is a pair of
    consecutive timed runs (A, B, read apart from the stage runs a, b), and each must hold one A
    and one B (AB or BA: ABBA is two rounds), the stage runs likewise: the k-th base run is paired
    with the k-th candidate run, and only runs of one round are measured under the same load.
    BBBBBBAAAAAA compares the candidate's spell with the base's, and a change of load between them
    passes for a change of code (identical code read "improved 0.77")."""
    for letters, what in (("AB", "timed"), ("ab", "stage")):
        runs = "".join(ch for ch in order if ch in letters)
        for k in range(0, len(runs), 2):
            pair = runs[k:k + 2]
            if sorted(pair) != sorted(letters):
                where = f"{what} runs {k + 1}-{k + 2} ({pair}) are not one {letters[0]} and one {letters[1]}" \
                    if len(pair) == 2 else f"the last {what} run ({pair}) has no partner"
                return (f"{where}: each round, consecutive {what} runs read in pairs, must hold one of each (e.g. "
                        f"{letters[0]}{letters[1]}{letters[1]}{letters[0]}), so that a change of load between "
                        "spells cannot pass for a change of code")
    return None


def noise_floor_of(ci):
    """The noise floor an A-vs-A interval gives: the farthest its ends lie from 1 (harness
    calibrate writes it; both checkers hold a pinned file to it), within [0, 0.5]; None without
    an interval."""
    if not ci:
        return None
    return round(min(0.5, max(0.0, 1.0 - ci[0], ci[1] - 1.0)), 6)


def noise_floor_problem(doc: dict) -> Optional[str]:
    """Why a noise-floor file (its fields as FIELDS["noise_floor"] declares them) cannot widen a
    band (the `decision` rule), or None: its floor must be the one its own interval gives
    (noise_floor_of), its ratio inside that interval, its rounds at least MIN_ROUNDS, and the
    floor at most MAX_BAND."""
    ci, floor, rounds, ratio = doc.get("ci95"), doc.get("floor"), doc.get("rounds"), doc.get("ratio")
    if not (isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci)
            and isinstance(ratio, (int, float)) and isinstance(floor, (int, float)) and isinstance(rounds, int)):
        return "not a noise-floor file of `harness calibrate` (ci95, ratio, floor and rounds)"
    if not ci[0] <= ratio <= ci[1]:
        return f"its ratio {ratio} lies outside its own interval [{ci[0]}, {ci[1]}]"
    if floor != noise_floor_of(ci):
        return (f"floor {floor} is not the one its interval [{ci[0]}, {ci[1]}] gives, {noise_floor_of(ci)} (the "
                "farthest end from 1): a floor is what its A-vs-A campaign measured; run `harness calibrate` again")
    if rounds < MIN_ROUNDS:
        return f"{rounds} round(s) of A against A; a noise floor needs at least {MIN_ROUNDS} (`harness calibrate --rounds N`)"
    if floor > MAX_BAND:
        return (f"floor {floor}: over {MAX_BAND}, this machine's noise lets no claim be made; calibrate on a quieter "
                "machine, or with more rounds")
    return None


def auto_rounds(budget_s: float, first_round_s: float, min_rounds: int, max_rounds: int = MAX_ROUNDS) -> int:
    """`rounds: auto`: the cap of a sequential campaign, as many rounds as fit budget_s when the
    first round's two runs took first_round_s (their process walls, start-up included), within
    [min_rounds, max_rounds]. Time alone sets the cap, never a ratio."""
    if not first_round_s > 0:
        return max_rounds
    return max(min_rounds, min(max_rounds, math.ceil(budget_s / first_round_s)))


# --- sequential rounds: a plan of looks, each valid whichever one stops the campaign ----------
# the looks first..cap, alpha over all of them, 2 or 1 sides, and the t's spend (SEQ_T_SPEND or _FAMILY)
Design = namedtuple("Design", "first cap alpha sides spend")


def design(first: int, cap: int, question: str = DEFAULT_QUESTION, members: int = 1) -> Design:
    """The design of a sequential campaign's looks after rounds first..cap (cap at least first)
    for its question: a claim spends SEQ_ALPHA over both sides, a one-sided question
    QUESTION_ALPHA on each side; a family of `members` claims (a suite's benchmarks) gives each
    its share (Bonferroni: any member errs with probability at most alpha)."""
    one = question != "claim"
    return Design(first, max(first, cap), (QUESTION_ALPHA if one else SEQ_ALPHA) / max(1, members), 1 if one else 2,
                  SEQ_T_SPEND if members <= 1 else SEQ_T_SPEND_FAMILY)


def _phi(x):
    return math.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


def _above(x):
    """P(Z > x) for a standard normal Z."""
    return 0.5 * math.erfc(x / math.sqrt(2.0))


def _walk_exceeds(c, first, cap, sides):
    """The chance that a random walk of standard normal steps, S_n, has S_n > c sqrt(n) (or, two
    sides, |S_n| > c sqrt(n)) at some look n in first..cap: the density of S_n on the still-going
    region, carried one step at a time by the normal kernel on a grid of WALK_STEP (trapezoids,
    the region's two ends as nodes of their own), and the mass each step carries past an edge
    summed from the normal tail. Standard library; the same float on every machine."""
    h, reach = WALK_STEP, WALK_REACH
    taps = int(round(reach / h))
    kernel = [_phi(k * h) for k in range(-taps, taps + 1)]

    def edges(n):
        up = c * math.sqrt(n)
        return (-up if sides == 2 else -reach * math.sqrt(n)), up

    def nodes(low, up):
        return math.floor(low / h) + 1, math.ceil(up / h) - 1

    s = math.sqrt(first)
    low, up = edges(first)
    i0, i1 = nodes(low, up)
    f = [_phi(i * h / s) / s for i in range(i0, i1 + 1)]
    f_low, f_up = _phi(low / s) / s, _phi(up / s) / s
    total = sides * _above(c)
    for n in range(first + 1, cap + 1):
        xs = [i * h for i in range(i0, i1 + 1)]
        if not xs:  # the region is narrower than a grid step: c is far too small to matter
            return 1.0
        # trapezoids over low, x_0 .. x_m-1, up: the masses each node carries into this step
        e_low, e_up = xs[0] - low, up - xs[-1]
        a = [h * v for v in f]
        a[0] += (e_low - h) / 2 * f[0]
        a[-1] += (e_up - h) / 2 * f[-1]
        ends = ((low, e_low / 2 * f_low), (up, e_up / 2 * f_up))
        n_low, n_up = edges(n)

        def out(x):
            return _above(n_up - x) + (_above(x - n_low) if sides == 2 else 0.0)

        near = [j for j in range(len(xs)) if n_up - xs[j] < reach or (sides == 2 and xs[j] - n_low < reach)]
        total += math.fsum([a[j] * out(xs[j]) for j in near] + [m * out(x) for x, m in ends])
        j0, j1 = nodes(n_low, n_up)
        g = []
        for j in range(0 if sides == 2 else j0, j1 + 1):  # two sides: the density is even, half of it
            lo_i, hi_i = max(i0, j - taps), min(i1, j + taps)
            v = sum(map(operator.mul, a[lo_i - i0:hi_i - i0 + 1], kernel[lo_i - j + taps:hi_i - j + taps + 1]))
            y = j * h
            for x, m in ends:
                if abs(y - x) < reach:
                    v += m * _phi(y - x)
            g.append(v)
        if sides == 2:
            g = g[:0:-1] + g
        def density(y):  # over the nodes within reach of y (found among theirs and one more on each side)
            close = range(max(0, math.floor((y - reach) / h) - i0 - 1),
                          min(len(xs), math.ceil((y + reach) / h) - i0 + 2))
            return math.fsum([a[k] * _phi(y - xs[k]) for k in close if abs(y - xs[k]) < reach]
                             + [m * _phi(y - x) for x, m in ends])

        f_low, f_up = density(n_low), density(n_up)
        f, i0, i1, low, up = g, j0, j1, n_low, n_up
    return total


def _z_above(p):
    """The z with P(Z > z) = p (0 < p < 1/2), by bisection on the normal tail."""
    lo, hi = 0.0, 40.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if _above(mid) > p else (lo, mid)
    return hi


@functools.lru_cache(maxsize=None)
def walk_bound(first, cap, alpha, sides):
    """The constant c at which a look after each round first..cap crosses c standard errors (one
    side, or either) with probability alpha in all (the Pocock boundary), by regula falsi on log
    chance between the one-look bound and Bonferroni's."""
    looks = cap - first + 1
    lo, hi = _z_above(alpha / sides), _z_above(alpha / (sides * looks))
    f_lo = math.log(_walk_exceeds(lo, first, cap, sides) / alpha)
    f_hi = math.log(_walk_exceeds(hi, first, cap, sides) / alpha)
    while f_hi > 0.0:  # the grid's error may leave Bonferroni's bound a hair low
        hi += 0.05
        f_hi = math.log(_walk_exceeds(hi, first, cap, sides) / alpha)
    if looks == 1 or f_lo <= 0.0:
        return lo
    side = 0
    for _ in range(100):  # Illinois: regula falsi that halves the stale end's value
        c = (lo * f_hi - hi * f_lo) / (f_hi - f_lo)
        if not lo < c < hi:
            break
        f_c = math.log(_walk_exceeds(c, first, cap, sides) / alpha)
        if abs(f_c) < 1e-7:  # alpha to a part in ten million
            return c
        if f_c > 0.0:
            lo, f_lo = c, f_c
            if side == 1:
                f_hi /= 2.0
            side = 1
        else:
            hi, f_hi = c, f_c
            if side == -1:
                f_lo /= 2.0
            side = -1
    return hi  # the safe side: at most alpha


@functools.lru_cache(maxsize=None)
def _binomial_cdf(n):
    """P(B <= k) for k = 0..n, B binomial(n, 1/2)."""
    total, out = 0, []
    for k in range(n + 1):
        total += math.comb(n, k)
        out.append(total / 2 ** n)
    return tuple(out)


def sign_rank(n, level):
    """The rank k of the sign interval [x_(k), x_(n-k+1)] after n rounds at one-tail nominal
    level `level`: the largest k with P(B <= k - 1) <= level, B binomial(n, 1/2); 0 when no k
    is (the interval is unbounded)."""
    cdf = _binomial_cdf(n) if n else ()
    k = 0
    while k < (n + 1) // 2 and cdf[k] <= level:
        k += 1
    return k


def _sign_exceeds(level, first, cap, sides):
    """The exact chance that the sign interval at `level` misses the median at some look n in
    first..cap (one side, or either): the count below the median moves as a fair coin."""
    dist, total = [1.0], 0.0
    for n in range(1, cap + 1):
        dist = [0.5 * ((dist[b] if b < n else 0.0) + (dist[b - 1] if b else 0.0)) for b in range(n + 1)]
        k = sign_rank(n, level) if n >= first else 0
        if k:
            gone = list(range(k)) + (list(range(n - k + 1, n + 1)) if sides == 2 else [])
            total += math.fsum(dist[b] for b in gone)
            for b in gone:
                dist[b] = 0.0
    return total


@functools.lru_cache(maxsize=None)
def sign_level(first, cap, alpha, sides):
    """The largest one-tail nominal level (a binomial tail) at which the sign interval misses the
    median at any look first..cap with probability at most alpha (0.0: it never bounds)."""
    tails = sorted({p for n in range(max(1, first), cap + 1) for p in _binomial_cdf(n)[:(n + 1) // 2] if p <= alpha})
    lo, hi, best = 0, len(tails) - 1, 0.0
    while lo <= hi:  # the chance grows with the level: the last tail that keeps it within alpha
        mid = (lo + hi) // 2
        if _sign_exceeds(tails[mid], first, cap, sides) <= alpha:
            best, lo = tails[mid], mid + 1
        else:
            hi = mid - 1
    return best


def levels(plan):
    """(the t's one-tail nominal level, the signs') at every look of a Design."""
    t_alpha = plan.alpha * (1.0 - SEQ_SIGN_SHARE) * plan.spend
    return (_above(walk_bound(plan.first, plan.cap, t_alpha, plan.sides)),
            sign_level(plan.first, plan.cap, plan.alpha * SEQ_SIGN_SHARE, plan.sides))


def t_sequence(values, plan):
    """[lo, hi] of the mean of `values` from the group-sequential t at the Design's nominal level,
    n - 1 degrees of freedom; None while unbounded (fewer than 3 values, or no spread)."""
    n = len(values)
    if n < 3:
        return None
    m = math.fsum(values) / n
    s = math.sqrt(math.fsum((v - m) ** 2 for v in values) / (n - 1))
    if s == 0.0:
        return None
    half = t_quantile(1.0 - levels(plan)[0], n - 1) * s / math.sqrt(n)
    return [m - half, m + half]


def sign_sequence(values, plan):
    """[lo, hi] of the median of `values` from the signs at the Design's nominal level (no moment,
    no scale: a slow spell's outlier moves it by one rank); None while unbounded."""
    n = len(values)
    k = sign_rank(n, levels(plan)[1]) if n else 0
    if not k:
        return None
    ordered = sorted(values)
    return [ordered[k - 1], ordered[n - k]]


def trimmed_sequence(values, plan):
    """[lo, hi] of the centre of `values` from the 20%-trimmed (Tukey-McLaughlin) t at the t's
    nominal level: read at the cap's look only, where a host's stalls that widen the plain t for
    good leave a trimmed mean the rounds can still decide on (None below two kept values)."""
    x = sorted(values)
    n = len(x)
    g = int(TRIM * n)
    h = n - 2 * g
    if h < 2:
        return None
    m = math.fsum(x[g:n - g]) / h
    w = [min(max(v, x[g]), x[n - g - 1]) for v in x]
    wm = math.fsum(w) / n
    sw2 = math.fsum((v - wm) ** 2 for v in w) / (n - 1)
    if sw2 == 0.0:
        return None
    half = t_quantile(1.0 - levels(plan)[0], h - 1) * math.sqrt((n - 1) * sw2 / (h * (h - 1)))
    return [m - half, m + half]


def confidence_sequence(values, plan):
    """[lo, hi] of the per-round log ratios' centre at a look of the Design, or None while it is
    unbounded: the intersection of the t's interval for the mean and the signs' for the median
    (and, at the cap's look, the trimmed t's). Intervals that do not meet cannot all hold the
    centre: that look decides nothing (None)."""
    parts = (t_sequence(values, plan), sign_sequence(values, plan),
             trimmed_sequence(values, plan) if len(values) == plan.cap else None)
    both = [cs for cs in parts if cs is not None]
    if not both:
        return None
    lo, hi = max(cs[0] for cs in both), min(cs[1] for cs in both)
    return [lo, hi] if lo <= hi else None


def sequence_ratio(values, plan):
    """The Design's interval of per-round log ratios as a ratio interval [lo, hi], each end at 10
    significant digits and within the ratios a bundle may hold (1e-9..1e9); None while unbounded."""
    cs = confidence_sequence(values, plan)
    if cs is None:
        return None
    return [sig10(math.exp(max(cs[0], -20.0))), sig10(math.exp(min(cs[1], 20.0)))]


def sequential_plan(campaign, first_runs):
    """{first, cap, precision} of a `rounds: auto` campaign (campaign.json) or None for a fixed
    count: its first look is min_rounds, its cap as many rounds as fit budget_s at the first
    round's pace, its precision the campaign's (None: none asked, or an earlier schema's).
    first_runs: (label, status, process wall) of its first two runs; a campaign that ended
    before its first round did keeps the minimum."""
    if campaign.get("budget_s") is None:
        return None
    walls = {label: wall for label, status, wall in first_runs if status == "ok"}
    if set(walls) == {"A1", "B1"}:
        pace = round_pace(campaign.get("launch"), walls["A1"], walls["B1"])
        cap = auto_rounds(campaign["budget_s"], pace, campaign["min_rounds"])
    else:
        cap = campaign["min_rounds"]
    return {"first": campaign["min_rounds"], "cap": cap, "precision": campaign.get("precision")}


def family_members(campaign, planned):
    """A suite campaign's benchmarks (its planned items), each a claim of its own; None for a
    workload, whose items are parts of one claim (docs/statistics.md "A suite is a family")."""
    return list(planned) if is_suite_entry(campaign["workload"]["entry"]) else None


def run_items(planned, decided_at, label):
    """The items a run holds: a timed run of round k in a family, the benchmarks still undecided at
    the look after round k - 1 (decided_at: item -> the round whose look decided it); every other
    run, all the planned items."""
    if not decided_at or not timed(label):
        return list(planned)
    k = int(label[1:])
    return [i for i in planned if decided_at.get(i) is None or decided_at[i] >= k]


def stopped(looks: List[Tuple], rounds: int, cap: int) -> Optional[str]:
    """Why a sequential campaign of `rounds` rounds ended, from its looks [(round, verdict)], or
    with a precision [(round, verdict, precise)]: "decided" at its first look that ends it (its
    verdict not inconclusive and, with a precision, its interval that precise: `ends`), "cap" at
    the budget's cap without a decided look, "imprecise" at the cap with one but none precise
    enough, else None (it should have gone on, or stopped earlier). A family's look decides when
    every member has (family_verdict)."""
    stops = [row[0] for row in looks if ends(*row[1:])]
    if stops:
        return "decided" if stops[0] == rounds else None
    if rounds != cap:
        return None
    return "imprecise" if any(row[1] != "inconclusive" for row in looks) else "cap"


def precision_problem(precision: Optional[float], auto: bool, suite: bool) -> Optional[str]:
    """Why a campaign cannot ask for this precision (the loader and both checkers), or None: it is
    a `rounds: auto` campaign's (auto), of a workload's one claim (not a suite, whose benchmarks
    each decide and leave the rounds on their own), within PRECISION_LIMITS."""
    if precision is None:
        return None
    if not auto:
        return "only with `rounds: auto` (a fixed count or an order has no looks to stop at)"
    if suite:
        return ("not with a suite (each benchmark decides and leaves the rounds on its own); a workload's one "
                "claim only")
    if not PRECISION_LIMITS[0] <= precision <= PRECISION_LIMITS[1]:
        return (f"a number above 0 and below 1, from {PRECISION_LIMITS[0]:g} to {PRECISION_LIMITS[1]:g} (0.10: the "
                "interval within +-10% of the ratio)")
    return None


def ends(verdict: str, precise: Optional[bool] = None) -> bool:
    """Whether a look ends a sequential campaign: it decided, and its interval is as precise as the
    campaign asked (precise: rules.precise, None without a precision)."""
    return verdict != "inconclusive" and precise is not False


def labels(order: str) -> List[Tuple[str, str]]:
    """(label, variant) per run in execution order: ABBA -> A1 B1 B2 A2; ABab -> A1 B1 As1 Bs1."""
    counts: dict[str, int] = {}
    out = []
    for letter in order:
        counts[letter] = counts.get(letter, 0) + 1
        upper = letter.upper()
        out.append((f"{upper}{'s' if letter.islower() else ''}{counts[letter]}", VARIANTS[upper]))
    return out


def instrumented(label: str, order: str) -> bool:
    """A run with stage wrappers: a stage run, or any run of an order without stage runs."""
    return label[1:2] == "s" or order == order.upper()


def timed(label: str) -> bool:
    """A run whose wall is in the headline (not a stage run)."""
    return label[1:2] != "s"


def instruction_order(runs):
    """`runs` instruction runs per variant, alternating which goes first: ABBA for 2."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(runs))


def schedule(order, instr_order="", spread=None):
    """Every run in execution order as (label, variant, index, after): the wall runs of order
    (after None) with the instruction runs spread evenly between the first `spread` of them
    (all by default; a sequential campaign's first look), the j-th of m after wall run
    floor((j + 1) n / (m + 1)) - 1 (None: before the first). index counts within its kind."""
    walls, instr = labels(order), labels(instr_order)
    n = len(walls) if spread is None else min(spread, len(walls))
    out = []
    for j, (label, variant) in enumerate(instr):
        at = (j + 1) * n // (len(instr) + 1) - 1
        out.append((at, 1, j, "I" + label, variant, walls[at][0] if at >= 0 else None))
    out += [(i, 0, i, label, variant, None) for i, (label, variant) in enumerate(walls)]
    return [(label, variant, index, after) for _, _, index, label, variant, after in
            sorted(out, key=lambda row: (row[0] + row[1] * 0.5, row[2]))]


def spread_of(campaign):
    """The wall runs a campaign.json's instruction runs are spread between: a sequential
    campaign's first look (its min_rounds and stage rounds), else all."""
    if campaign.get("budget_s") is None or campaign.get("min_rounds") is None:
        return None
    return 2 * (campaign["min_rounds"] + (campaign.get("stage_rounds") or 0))


def zygote_label(variant: str, generation: int) -> str:
    """The ledger's run name for a variant's generation-th zygote: ZA1, ZB3."""
    return f"Z{'A' if variant == 'base' else 'B'}{generation}"


def generations(labels):
    """`launch: zygote`: the zygote generation of each run (timed and stage runs; instruction runs
    are always fresh), by its place among its variant's runs: runs 1-ZYGOTE_RUNS of a variant have
    its zygote 1, the next ZYGOTE_RUNS its zygote 2, and so on."""
    counts: dict[str, int] = {}
    out = {}
    for label in labels:
        counts[label[0]] = counts.get(label[0], 0) + 1
        out[label] = (counts[label[0]] - 1) // ZYGOTE_RUNS + 1
    return out


# --- less noise per round (issue 48 item 3): a duet's rounds (contract.DUET) ---------------------
def duet_problem(order: str) -> Optional[str]:
    """Why an order cannot run as duets (`launch: duet`), or None: its runs pair up by position (runs
    2k and 2k + 1: one A and one B, or one a and one b), each pair the two runs of one round."""
    for k in range(0, len(order), 2):
        pair = order[k:k + 2]
        if "".join(sorted(pair)) not in ("AB", "ab"):
            return (f"runs {k + 1}-{k + 2} ({pair}) are not one round (AB, BA, ab or ba): a duet runs each two "
                    "consecutive runs of the order at once, so they must be one base and one candidate run of "
                    "one kind")
    return None


def duet_core(cores: Sequence[int], index: int) -> int:
    """The core the index-th run of a duet order is pinned to: the first of its round cores[0]."""
    return cores[index % 2]


def loop_span(started_at: float, before_s: float, wall_s: float) -> Tuple[float, float]:
    """A run's timed loop on the runner's wall clock: its process's start (process.started_at) plus
    its life before the loop (outside.before_s), for its timed wall (wall_s)."""
    return started_at + before_s, started_at + before_s + wall_s


def overlap(first: Tuple[float, float], second: Tuple[float, float]) -> float:
    """How much of the shorter of two loops (spans) ran beside the other: 1.0 when it lay wholly
    inside the other's, 0.0 when one ended before the other began (a duet's rounds, in the summary)."""
    shorter = min(first[1] - first[0], second[1] - second[0])
    both = min(first[1], second[1]) - max(first[0], second[0])
    return min(1.0, max(0.0, both) / shorter) if shorter > 0 else 0.0


def round_pace(launch: Optional[str], first: float, second: float) -> float:
    """What one round takes, from its two runs' process walls: one after the other, or at once in
    a duet (the longer of the two)."""
    return max(first, second) if launch == DUET else first + second


def listing_digest(rows: List[dict]) -> str:
    """The digest of a folder's files as `sha256sum` lists them (rows of {path, sha256},
    sorted by path bytes): (cd DIR && find . -type f -printf '%P\\0' | LC_ALL=C sort -z |
    xargs -0 sha256sum) | sha256sum gives the same."""
    return hashlib.sha256("".join(f"{r['sha256']}  {r['path']}\n" for r in rows).encode()).hexdigest()


# --- rules both the writer and the checkers apply to re-derived sections --------------------
def contradicted(verdict, wall_ci, band):
    """Whether the wall's interval contradicts an instruction-count verdict a gate would pass:
    "improved" while the wall's interval lies wholly at or above 1 (no speed-up at all is
    possible), "equal" while it lies wholly above the equal band [1 - band, 1 + band] (a slow-down
    the counts do not show). Counts that fall further than the wall (an honest change whose time is
    not all instructions: memory, I/O) never trip it, nor a wall decisively faster than equal
    counts: the wall must rule out what the counts claim. Counts that say "regressed" fail a gate
    already (a faster wall beside them is the `disagrees` warning). No wall interval: nothing can
    be read."""
    if not wall_ci:
        return False
    lo, _hi = wall_ci
    return (verdict == "improved" and lo >= 1.0) or (verdict == "equal" and lo > 1.0 + band)


def instructions_section(ok_runs, wall_verdict, wall_ci=None, band=0.0):
    """comparison.json `instructions` from the ok instruction runs, (label, variant, count, items)
    each: per variant its counts, repeated exactly or their spread; the ratio of mean counts; a
    change beyond the spread is detected; a verdict of the counts' own against a band of
    max(INSTRUCTION_BAND, twice the spread); whether counts and the wall verdict point opposite
    ways (I/O, parallelism or memory effects that instructions do not see); and whether the wall's
    interval (wall_ci, against the campaign's band) contradicts the counts' verdict (`contradicted`):
    then the counts make no claim (inconclusive), whatever valgrind saw, and `harness compare
    --metric instructions` exits with outcomes.CONTRADICTED."""
    out: dict = {"tool": "callgrind", "items": ok_runs[0][3] if ok_runs else 0}
    for variant in ("base", "candidate"):
        counts = [count for _, v, count, _ in ok_runs if v == variant]
        out[variant] = {"runs": [label for label, v, _, _ in ok_runs if v == variant], "counts": counts,
                        "repeated": len(counts) >= 2 and len(set(counts)) == 1,
                        "spread_pct": sig10(100.0 * (max(counts) - min(counts)) / min(counts)) if counts else None}
    base, cand = out["base"]["counts"], out["candidate"]["counts"]
    ratio = sig10(math.fsum(cand) / len(cand) / (math.fsum(base) / len(base))) if base and cand else None
    spread = max((out[v]["spread_pct"] or 0.0) for v in ("base", "candidate"))
    change = sig10(100.0 * (ratio - 1.0)) if ratio is not None else None
    band = sig10(max(INSTRUCTION_BAND, 2 * spread / 100.0))
    out.update(ratio=ratio, change_pct=change, repeated=out["base"]["repeated"] and out["candidate"]["repeated"],
               # a change the counts' own run-to-run spread cannot explain
               detected=change is not None and change != 0 and abs(change) > spread,
               direction=None if ratio is None else "fewer" if ratio < 1 else "more" if ratio > 1 else "same",
               band=band)
    if ratio is None or len(base) < 2 or len(cand) < 2:
        out["verdict"] = "inconclusive"
        out["verdict_reason"] = "fewer than two ok instruction runs of each variant: no repeatability to judge by"
    else:
        out["verdict"] = "equal" if abs(ratio - 1) <= band else "improved" if ratio < 1 else "regressed"
        out["verdict_reason"] = (f"instruction ratio {ratio:.6f} lies "
                                 f"{'inside' if out['verdict'] == 'equal' else 'outside'} the band "
                                 f"[{1 - band:.4f}, {1 + band:.4f}] (+-{100 * band:.2f}%: at least "
                                 f"{100 * INSTRUCTION_BAND:.1f}%, and twice the counts' own spread)")
    # opposite ways: a move within the counts' own spread says nothing
    out["disagrees"] = out["detected"] and ratio is not None and ((wall_verdict == "improved" and ratio > 1)
                                            or (wall_verdict == "regressed" and ratio < 1))
    # the wall's interval rules out the counts' own direction: a candidate can run other code under
    # valgrind than without it (docs/guarantees.md), so the counts alone claim nothing then
    out["contradicted"] = contradicted(out["verdict"], wall_ci, band)
    if out["contradicted"]:
        lo, hi = wall_ci
        where = ("at or above 1 (no speed-up)" if out["verdict"] == "improved" else
                 f"above the equal band [{1 - band:.4f}, {1 + band:.4f}] (slower)")
        out["verdict_reason"] = (f"instruction counts say {out['verdict']} (ratio {ratio:.6f}), but the wall's interval "
                                 f"[{lo:.4f}, {hi:.4f}] lies wholly {where}: the wall contradicts the counts (code that "
                                 "runs otherwise under valgrind, or time the counts do not see), so they claim nothing "
                                 "alone")
        out["verdict"] = "inconclusive"
    return out


def tolerance_section(mismatches, max_ulp, ulp_of):
    """comparison.json parity.tolerance under `parity: {max_ulp: N}`, and whether every mismatch
    is a float field within N (an error, a missing field, another dtype or shape, a non-float
    field, or a NaN against a number never is). ulp_of(reference_digest, digest): (the most ULP
    between the two stored arrays, their dtype's name), or (None, None) where no distance is
    defined. Each mismatch gets its max_ulp. A tolerance wider than a differing field's dtype
    admits (MAX_ULP: more than the low half of the significand would move) covers nothing there:
    that dtype goes in over_bound and the outputs do not agree."""
    worst, within, fine, over = 0, 0, True, {}
    for m in mismatches:
        distance = name = None
        if m["field"] is not None and m["reason"] == "bytes differ":
            distance, name = ulp_of(m["reference_digest"], m["digest"])
        m["max_ulp"] = distance
        if distance is not None and name is not None and max_ulp > MAX_ULP[name]:
            over[name] = MAX_ULP[name]
            fine = False
        elif distance is None or distance > max_ulp:
            fine = False
        else:
            within += 1
        if distance is not None:
            worst = max(worst, distance)
    return {"max_ulp": max_ulp, "max_ulp_seen": worst, "fields_within": within,
            "over_bound": dict(sorted(over.items()))}, fine


# --- Student's t, standard library only ---------------------------------------------------------
def _betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: int) -> float:
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


_T_QUANTILES: dict[tuple[float, int], float] = {}


def t_quantile(p: float, df: int) -> float:
    """The p-quantile (p > 0.5) of Student's t: bisection on t_cdf to the last bit, so that every
    machine gets the same float."""
    key = (p, df)
    if key not in _T_QUANTILES:
        lo, hi = 0.0, 1.0
        while t_cdf(hi, df) < p:
            hi *= 2.0
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        _T_QUANTILES[key] = hi
    return _T_QUANTILES[key]


# --- harness bisect: the first commit that made a campaign slower, or faster ---------------------
def bisect_step(comparison):
    """(verdict, ratio, interval, band) of a step from its verified comparison.json: "failed" for
    a campaign that did not complete, "outputs differ" when parity fails, else the wall verdict,
    with the paired geometric-mean ratio, its interval and the band it was judged against (the
    campaign's verdict.threshold)."""
    stats: dict = comparison["stats"] if isinstance(comparison.get("stats"), dict) else {}
    paired: dict = stats["paired"] if isinstance(stats.get("paired"), dict) else {}
    ratio, interval = paired.get("geomean_ratio"), paired.get("ci95")
    if comparison.get("status") != "complete":
        verdict = "failed"
    elif not (comparison.get("parity") or {}).get("agree"):
        verdict = "outputs differ"
    else:
        verdict = stats["verdict"] if stats.get("verdict") in VERDICTS else "failed"
    return verdict, ratio, list(interval) if interval else None, stats.get("threshold")


def bisect_band(ratio, threshold):
    """The probes' band, from the ends' ratio: half the change in log space (sqrt(ratio)), so a
    probe reads "equal" while it is nearer good and beyond the band once it is nearer bad, and each
    decides in as few rounds as the change's size allows; at least the first step's threshold, at
    most MAX_PROBE_BAND, to 4 decimals."""
    if not isinstance(ratio, (int, float)) or not ratio > 0:
        return threshold
    half = math.sqrt(ratio) - 1 if ratio > 1 else 1 - math.sqrt(ratio)
    return max(threshold, min(MAX_PROBE_BAND, math.floor(half * 1e4) / 1e4))


class BisectOff(ValueError):
    """A recorded step is not the one the search rule asks for at its position."""

    def __init__(self, index, want):
        self.index, self.want = index, want
        super().__init__(f"step {index + 1} should compare {want[0][:12]} -> {want[1][:12]} with band {want[2]:g}")


def bisect_search(good, commits, steps, find="either", threshold=DEFAULT_THRESHOLD, band=None):
    """The search rule, replayed over the steps so far. commits: the first-parent commits
    good..bad, oldest first (bad last; good is the first one's first parent); steps: dicts of
    base, candidate, band, verdict, ratio, interval, in order; find: "slower", "faster" or
    "either" (BISECT_FIND); threshold: the first step's band; band: every step's band, or None
    for the probes' band from the ends' ratio (bisect_band). Every probe is compared with good (a
    history whose change came in one commit reads "equal" before it and "moved" from it on):

      1. good -> bad: the change it looks for (regressed for slower, improved for faster; either
         takes whichever it reads) goes on; equal, or the other way, ends "nothing to find";
         inconclusive ends "inconclusive".
      2. binary search: lo = good (equal), hi = bad (moved); while a commit lies between, good ->
         the middle one: moved moves hi there, equal moves lo there; the other way ends "not
         monotone", inconclusive ends "inconclusive" (no neighbour is tried: the history
         between is what the search cannot read).
      3. hi is the first commit moved from good. Unless its parent is good (that step is its
         own), its parent -> hi: moved names hi the culprit; equal ends "spread" (no single commit
         makes the change); inconclusive and the other way end as above.
      A step that failed or whose outputs differ ends the search with that word.

    Returns {"next": (base, candidate, band) or None, "ending", "culprit", "reason", "used",
    "direction" ("slower", "faster", or None while unknown), "range" (lo, hi: the commits between
    which the change lies as far as the steps so far tell; lo may be good)}: next is the step the
    rule asks for when the steps so far do not end it. BisectOff when a recorded step is not the
    one the rule asks for; a step past the end is the caller's to refuse (len(steps) > "used")."""
    asked: list = []
    bad = commits[-1]
    state: dict = {"direction": None if find == "either" else find, "range": (good, bad)}
    moved = {"slower": "regressed", "faster": "improved"}

    def ask(base, candidate, step_band):
        k = len(asked)
        asked.append((base, candidate, step_band))
        if k >= len(steps):
            return None
        s = steps[k]
        if (s["base"], s["candidate"], s.get("band")) != (base, candidate, step_band):
            raise BisectOff(k, (base, candidate, step_band))
        return s

    def done(ending, culprit, reason):
        return {"next": None, "ending": ending, "culprit": culprit, "reason": reason, "used": len(asked), **state}

    def need():
        return {"next": asked[-1], "ending": None, "culprit": None, "reason": None, "used": len(asked) - 1, **state}

    def name(sha):
        return "good" if sha == good else ("bad" if sha == bad else sha[:12])

    def text(s):
        ratio, iv = s.get("ratio"), s.get("interval")
        where = f"step {[a[:2] for a in asked].index((s['base'], s['candidate'])) + 1:02d} ({name(s['base'])} -> " \
                f"{name(s['candidate'])})"
        if ratio is None:
            return f"{where} {s['verdict']}"
        return f"{where} {s['verdict']}, candidate/base {ratio:.4f}" + (f" [{iv[0]:.4f}, {iv[1]:.4f}]" if iv else "")

    def change():
        return "slow-down" if state["direction"] == "slower" else "speed-up"

    def stop_on(s, what):
        """The ending of a step that does not move the search (None: it does)."""
        v = s["verdict"]
        if v == "failed":
            return done("failed", None, f"cannot tell: {text(s)}: the campaign did not complete (its bundle "
                                        "says why)")
        if v == "outputs differ":
            return done("outputs differ", None, f"cannot tell: {text(s)}: the outputs differ, so the timing "
                                                "compares different work; find where the outputs change first")
        if v == "inconclusive":
            return done("inconclusive", None, f"cannot tell: {text(s)}: {what}; a larger budget per step "
                                              "(--budget), a wider band (--band) or a narrower range may decide")
        if v in ("improved", "regressed") and v != moved[state["direction"]]:
            return done("not monotone", None, f"cannot tell: {text(s)} while bad is {state['direction']} than "
                                              "good: the history is not monotone (a slow-down and a speed-up "
                                              "between them); bisect a narrower range")
        return None

    s = ask(good, bad, threshold if band is None else band)
    if s is None:
        return need()
    v = s["verdict"]
    if state["direction"] is None and v in moved.values():
        state["direction"] = "slower" if v == "regressed" else "faster"
    if v == "equal":
        return done("nothing to find", None, f"bad is as fast as good within the band: no change to find ({text(s)})")
    if v in moved.values() and v != moved[state["direction"]]:
        found = "faster" if v == "improved" else "slower"
        return done("nothing to find", None, f"bad is {found} than good: no {change()} to find (leave --find out, "
                                             f"or give --find {found}, to find the commit that made it {found}) "
                                             f"({text(s)})")
    ended = stop_on(s, "whether bad differs from good")
    if ended:
        return ended
    want = moved[state["direction"]]
    step_band = bisect_band(s.get("ratio"), threshold) if band is None else band
    lo, hi = -1, len(commits) - 1
    while hi - lo > 1:
        mid = (lo + hi) // 2
        s = ask(good, commits[mid], step_band)
        if s is None:
            return need()
        if s["verdict"] == want:
            hi = mid
        elif s["verdict"] == "equal":
            lo = mid
        else:
            return stop_on(s, f"the probe is neither equal to good nor beyond the band: the noise, or a {change()} "
                              "spread over several commits")
        state["range"] = (good if lo < 0 else commits[lo], commits[hi])
    first = [x for x in steps[:len(asked)] if x["candidate"] == commits[hi] and x["base"] == good][0]
    way = state["direction"]
    if hi == 0:
        return done("culprit", commits[0], f"{commits[0][:12]} is the first commit {way} than good, and good is its "
                                           f"parent: {text(first)}")
    s = ask(commits[hi - 1], commits[hi], step_band)
    if s is None:
        return need()
    if s["verdict"] == "equal":
        return done("spread", None, f"cannot tell: the {change()} is spread over several commits ({text(first)}, "
                                    f"but against its own parent {text(s)}: no single commit makes it)")
    ended = stop_on(s, f"the first commit beyond the band against its own parent: the {change()} may be spread "
                       "over several commits")
    if ended:
        return ended
    reason = f"{commits[hi][:12]} is the first commit {way} than good ({text(first)}) and {way} than its parent " \
             f"({text(s)})"
    end, own = steps[0].get("interval"), s.get("interval")
    if own and end and (own[1] < end[0] if way == "slower" else own[0] > end[1]):
        reason += f"; it makes only part of bad's {change()}: later commits add to it"
    return done("culprit", commits[hi], reason)
