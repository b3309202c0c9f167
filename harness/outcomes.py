"""Outcomes: every exit code of the harness, the code each verdict word gives, and the one
verdict line `run`, `compare`, `reproduce`, `report` and `summary` print.

The words are the contract's (contract.VERDICTS, contract.REPRODUCTION_VERDICTS); the codes are
spelled here and nowhere else: a new code is one line here and its use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from harness import contract as C
from harness import rules as R

if TYPE_CHECKING:
    from harness.bundle.model import Comparison, MetricEntry, Stats

# --- exit codes -----------------------------------------------------------------------------
OK = 0
PROBLEMS = 1  # verify: the bundle does not verify
UNUSABLE = 2  # usage, input, pre-flight, or a comparison without usable stats
PARITY = 3  # outputs differ
FAILED = 4  # a run failed, timed out or was interrupted
REGRESSED = 5
INCONCLUSIVE = 6
NOT_REPRODUCED = 7
NOT_CONTRADICTED = 8  # reproduce: the re-run could not tell (too wide, or no claim to test)
PARTIAL = 9  # reproduce: the two bundles do not cover the same items
WRITE_FAILED = 10  # a write failed (a full disk, a quota, a read-only folder), or another OS error stopped a campaign: nothing half-written, the runs kept
CONTRADICTED = 11  # compare --metric instructions: the wall's interval contradicts the counts (rules.contradicted)
NO_CULPRIT = 12  # bisect: cannot tell which commit (spread, inconclusive, not monotone)
NOTHING_TO_FIND = 13  # bisect: bad is not slower (or faster) than good, as it was asked
REFUSED = 14  # --policy: the bundle breaks a rule of the reviewer's policy (harness/judge/policy.py)
INTERRUPTED = 130  # Ctrl-C on a command that has nothing to seal

def error(command: str, *lines, code: int = UNUSABLE) -> int:
    """Print each line as `harness COMMAND: error: LINE` on stderr; return the exit code."""
    import sys

    for line in lines:
        print(f"harness {command}: error: {line}", file=sys.stderr)
    return code


# Keyed by object: a verdict read from a bundle may be any JSON value (a missing one is None).
# A one-sided question's answer exits 0 like a claim's improved or equal: "not slower than 5%" is what a
# CI gate passes on; its other side, regressed, fails it (5), and not knowing yet is 6.
EXIT_CODES: dict[object, int] = {"improved": OK, "equal": OK, "not slower": OK, "not faster": OK,
                                 "regressed": REGRESSED, "inconclusive": INCONCLUSIVE}
RUN_EXIT_MEANING = {OK: "complete, outputs agree", PARITY: "parity mismatch", FAILED: "campaign failed",
                    PROBLEMS: "the sealed bundle does not verify"}
REPRODUCTION_CODES = {"reproduced": OK, "not contradicted": NOT_CONTRADICTED, "not reproduced": NOT_REPRODUCED,
                      "partial": PARTIAL, "outputs differ": PARITY, "run failed": FAILED}
# `harness bisect`, by how the search ended (contract.BISECT_ENDINGS).
BISECT_CODES = {"culprit": OK, "nothing to find": NOTHING_TO_FIND, "spread": NO_CULPRIT, "inconclusive": NO_CULPRIT,
                "not monotone": NO_CULPRIT, "outputs differ": PARITY, "failed": FAILED, "stopped": FAILED}
assert set(EXIT_CODES) == set(C.VERDICTS) and set(REPRODUCTION_CODES) == set(C.REPRODUCTION_VERDICTS)
assert set(BISECT_CODES) == set(C.BISECT_ENDINGS)


def run_code(comparison: Comparison) -> int:
    """`harness run`'s own code: did the campaign produce evidence (0), outputs that disagree
    (3), or no evidence (4)."""
    if not comparison.complete:
        return FAILED
    return OK if comparison.parity.agree else PARITY


def exit_code(comparison: Comparison, metric: str = "wall") -> int:
    """0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign failed,
    2 unusable (an unknown verdict). Another metric (contract.METRIC_NAMES, e.g.
    "instructions", "memory"): its own entry's verdict gives the code (2 when the campaign did
    not measure it; 11 for instruction counts the wall's interval contradicts); a failed campaign
    and a parity mismatch keep theirs."""
    if not comparison.complete:
        return FAILED
    if comparison.parity.agree is not True:
        return PARITY
    if metric != C.HEADLINE:
        entry = comparison.metric(metric)
        if entry is not None and metric == "instructions" and comparison.instructions is not None \
                and comparison.instructions.contradicted:
            return CONTRADICTED  # never a pass, whatever a CI gate does with inconclusive
        return EXIT_CODES.get(entry.verdict, UNUSABLE) if entry is not None else UNUSABLE
    return EXIT_CODES.get(comparison.stats.verdict, UNUSABLE)


def quantity(value: float, unit: str) -> str:
    """A metric's value in its unit: seconds to the ms, bytes in MiB, counts with separators."""
    if unit == "s":
        return f"{value:.3f} s"
    if unit == "B":
        return f"{value / 2**20:.1f} MiB"
    return f"{value:,.0f}"


def metric_text(comparison: Comparison, entry: MetricEntry) -> str:
    """"peak memory: equal, candidate/base 1.0049 [1.0034, 1.0064] (43.3 MiB -> 43.5 MiB)": a metric
    other than the headline with its own verdict (instruction counts say more: instructions_text)."""
    if entry.name == "instructions":
        return instructions_text(comparison) or f"{entry.title}: {entry.verdict}"
    if entry.ratio is None:
        return f"{entry.title}: not measured ({entry.verdict_reason})"
    ci = f" [{entry.ci95[0]:.4f}, {entry.ci95[1]:.4f}]" if entry.ci95 else ""
    moved = (f" ({quantity(entry.base, entry.unit)} -> {quantity(entry.candidate, entry.unit)})"
             if entry.base is not None and entry.candidate is not None else "")
    return f"{entry.title}: {entry.verdict}, candidate/base {entry.ratio:.4f}{ci}{moved}"


def factor(x: float) -> str:
    """A factor of at least 1 at three significant digits, four near 1 (where a 0.4% change would
    read 1.00x): 1.004x, 1.97x, 19.2x, 294x."""
    return (f"{x:.3f}x" if x < 1.0995 else f"{x:.2f}x" if x < 9.995 else f"{x:.1f}x" if x < 99.95
            else f"{x:,.0f}x")


# How a factor reads for a metric's unit: time (less is faster), bytes (smaller), counts (fewer).
FACTOR_WORDS = {"s": ("faster", "slower"), "B": ("smaller", "larger")}
COUNT_WORDS = ("fewer", "more")


def speed(ratio, ci=None, words: tuple[str, str] = ("faster", "slower")) -> str:
    """candidate/base as the one figure a reader takes in: a factor in the direction it points,
    with its interval in the same form, "1.97x faster [1.28x, 3.03x]", "1.38x slower [1.10x,
    1.72x]", or an interval across no change "1.02x faster [1.05x faster to 1.02x slower]".
    words: what less and more of the measure are called (FACTOR_WORDS)."""
    less, more = words
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not ratio > 0:
        return "no figure"
    centre = "1.00x (no change)" if ratio == 1 else f"{factor(1 / ratio)} {less}" if ratio < 1 else \
        f"{factor(ratio)} {more}"
    if not ci or not all(isinstance(v, (int, float)) and v > 0 for v in ci):
        return centre + " (no interval)"
    lo, hi = ci
    if factor(1 / lo if lo < 1 else lo) == factor(1 / hi if hi < 1 else hi) == factor(1.0):
        return f"{centre} [{factor(1.0)}, {factor(1.0)}]"  # both ends within 0.05% of no change
    if hi <= 1:
        return f"{centre} [{factor(1 / hi)}, {factor(1 / lo)}]"
    if lo >= 1:
        return f"{centre} [{factor(lo)}, {factor(hi)}]"
    return f"{centre} [{factor(1 / lo)} {less} to {factor(hi)} {more}]"


def per_item_text(stats: Stats) -> str | None:
    """"2 of 14 items regressed beyond +-2.0%, worst s3 1.31x": what the geometric mean hides,
    against the band it names."""
    per = stats.per_item
    if per is None or not per.items:
        return None
    if per.note and not (per.regressed or per.improved):
        return f"per item: {per.note}"
    text = f"{per.regressed} of {per.items} items regressed beyond +-{100 * per.band:.1f}%"
    if per.worst:
        text += f", worst {per.worst.id} {per.worst.ratio:.4f}"
    return text


def instructions_text(comparison: Comparison) -> str | None:
    """"instructions: improved, candidate/base 0.9901 (-0.99%, repeated exactly, 2+2 runs of 3
    items, band +-0.2%)": the second metric's own verdict beside the wall's, or None."""
    ins = comparison.instructions
    if ins is None:
        return None
    if ins.ratio is None:
        return "instructions: no ok instruction run of both variants"
    runs = f"{len(ins.base.counts)}+{len(ins.candidate.counts)} runs of {ins.items} items"
    if ins.contradicted:
        return (f"instructions: {ins.verdict}, contradicted by the wall, candidate/base {ins.ratio:.4f} "
                f"({ins.change_pct:+.2f}%, {runs}): {ins.verdict_reason}")
    if ins.repeated:
        how = "repeated exactly"
    else:
        spread = max(side.spread_pct or 0.0 for side in (ins.base, ins.candidate))
        how = f"did NOT repeat: runs of one variant up to {spread:.4f}% apart"
    return (f"instructions: {ins.verdict}, candidate/base {ins.ratio:.4f} ({ins.change_pct:+.2f}%, {how}, "
            f"{runs}, band +-{100 * ins.band:.1f}%)")


def disagreement(comparison: Comparison) -> str | None:
    """The warning when wall and instructions point opposite ways, or the wall's interval
    contradicts the counts' own verdict, else None."""
    ins = comparison.instructions
    if ins is None or not (ins.disagrees or ins.contradicted):
        return None
    said = []
    if ins.contradicted:
        said.append("instruction counts contradicted by the wall's interval, so they claim nothing alone (`harness "
                    f"compare --metric instructions` exits {CONTRADICTED}): gate on the wall")
    if ins.disagrees:
        said.append(f"wall says {comparison.stats.verdict} but instructions went the other way "
                    f"({ins.change_pct:+.2f}%): I/O, parallelism or memory effects that instruction counts do not see")
    return "; ".join(said)


def parity_text(comparison: Comparison) -> str:
    """Parity in words that scale with the tolerance: "parity identical" for byte-identical
    outputs; under a declared `max_ulp` "within N ULP (close, not identical)", never "equal" or
    "identical" (only 0 ULP apart, NaN payloads or zero signs, is "equal in value")."""
    p = comparison.parity
    if p.identical:
        return "parity identical"
    tol = p.tolerance
    if p.agree and tol:
        if not tol.max_ulp_seen:
            return (f"outputs equal in value, 0 ULP apart ({tol.fields_within} field(s) differ only in NaN "
                    "payloads or the sign of zero: not byte-identical)")
        return (f"outputs within {tol.max_ulp} ULP (close, not identical: max seen {tol.max_ulp_seen} ULP, "
                f"{tol.fields_within} field(s) not bit-identical)")
    return "parity mismatch"


def rounds_text(stats: Stats) -> str:
    """How many rounds and which interval: a sequential campaign says how it stopped."""
    n, seq = stats.rounds.n, stats.sequential
    kind = "one-sided 95% bounds" if stats.question != "claim" else "95% interval"
    if not seq:
        return f"{n} rounds, {kind.replace('interval', 'CI')}"
    if seq.stopped == "decided":
        within = f" within the +-{100 * seq.precision:g}% precision asked for" if seq.precision else ""
        return f"{n} rounds, decided at the look after round {n}{within}, {kind} valid at every look"
    if seq.stopped == "cap":
        return f"{n} rounds, no look decided by the cap of {seq.cap}, {kind} valid at every look"
    if seq.stopped == "imprecise" and seq.precision:
        return (f"{n} rounds, decided {stats.verdict}, but {R.imprecision(stats.paired.ci95, seq.precision, seq.cap)}, "
                f"{kind} valid at every look")
    return f"{n} rounds, ended before a look decided"


def judged_line(judgement, metric: str = "wall") -> tuple[str, int]:
    """(the verdict line, the exit code) of a bundle judged by a reviewer's policy
    (harness/judge/policy.py): refused (14) when the bundle breaks the policy, else the re-judged
    comparison's own line and code, the policy named in its first words. A failed campaign and a
    parity mismatch keep their codes."""
    own = exit_code(judgement.comparison, metric)
    where = f"your policy {judgement.policy.path}"
    if judgement.refused and own not in (FAILED, PARITY):
        return (f"verdict: refused by {where} (exit {REFUSED}): {'; '.join(judgement.refused)}", REFUSED)
    text = line(judgement.comparison, metric=metric)
    head, sep, rest = text.partition(" (exit ")
    return f"{head}, judged by {where}{sep}{rest}", own


def method_text(stats: Stats) -> str:
    """The rule that decided this comparison, in words: the sequential design's looks and levels,
    or the fixed count's trimmed-t interval; a one-sided question's margin; a suite's family."""
    asked = question_text(stats)
    what = (f"one-sided bounds (each side's error at most {100 * C.QUESTION_ALPHA:g}%) for the question \"{asked}?\""
            if asked else f"a two-sided interval (error at most {100 * C.SEQ_ALPHA:g}%) against the equal band "
            f"+-{100 * stats.band:.1f}%")
    fam = stats.family
    family = (f"; a suite's {fam.members} benchmarks are a family of claims, each its own interval at alpha "
              f"{fam.alpha:.3g} (Bonferroni over benchmarks and looks), and a benchmark that decided left the later "
              "rounds") if fam is not None else ""
    seq = stats.sequential
    if seq is None:
        return (f"fixed count: {stats.rounds.n} rounds, the 20%-trimmed mean of the per-round log ratios and its "
                f"Tukey-McLaughlin interval, {what}{family}")
    t_level, sign_level = seq.levels
    precision = seq.precision
    asked = f"+-{100 * precision:g}%" if precision else None
    how = {"decided": f"it decided at the look after round {stats.rounds.n}"
                      + (f", its interval within the {asked} precision asked for" if asked else ""),
           "cap": f"no look decided by the cap of {seq.cap} rounds",
           "imprecise": f"a look decided, but none with an interval within the {asked} precision asked for by the "
                        f"cap of {seq.cap} rounds",
           "ended": f"it ended after {stats.rounds.n} rounds before a look decided"}.get(seq.stopped, seq.stopped)
    if precision:
        how = (f"a look that decides ends the campaign only once its interval lies within {asked} of its ratio "
               f"(a factor {1 + precision:g} either way); {how}")
    return (f"sequential: a look after each round from round {seq.first} to the cap of {seq.cap} (set by the budget "
            f"after the first round), each the intersection of a t interval of the mean per-round log ratio and a "
            f"sign interval of their median at one nominal level per look (t {100 * t_level:.3g}%, signs "
            f"{100 * sign_level:.3g}% a tail), set so that any look errs at most as often as said (Pocock's "
            f"group-sequential design); {what}{family}; {how}")


def question_text(stats: Stats) -> str | None:
    """A one-sided question in words: "slower than 5%" ("not_slower"), "faster than 5%"; None for a claim."""
    if stats.question == "claim" or stats.margin is None:
        return None
    return f"{'slower' if stats.question == 'not_slower' else 'faster'} than {100 * stats.margin:g}%"


def answer_word(stats: Stats) -> str:
    """The verdict as the question reads it: a claim's word, or "not slower than 5%", "regressed,
    slower than 5%", "inconclusive: slower than 5%?"."""
    asked = question_text(stats)
    if asked is None:
        return stats.verdict
    if stats.verdict in ("not slower", "not faster"):
        return f"not {asked}"
    if stats.verdict == "inconclusive":
        return f"inconclusive, {asked}?"
    return f"{stats.verdict}, {asked}"


def interval_text(stats: Stats) -> str | None:
    """"0.9980 [0.9700, 1.0310]", or a one-sided question's side: "0.9980, at most 1.0310" (the
    answer's bound: at most for not slower, at least for not faster; both for no answer yet)."""
    paired = stats.paired
    if paired.geomean_ratio is None or not paired.ci95:
        return None
    lo, hi = paired.ci95
    if stats.verdict == "not slower" or (stats.question == "not_faster" and stats.verdict == "improved"):
        return f"{paired.geomean_ratio:.4f}, at most {hi:.4f}"
    if stats.verdict == "not faster" or (stats.question == "not_slower" and stats.verdict == "regressed"):
        return f"{paired.geomean_ratio:.4f}, at least {lo:.4f}"
    return f"{paired.geomean_ratio:.4f} [{lo:.4f}, {hi:.4f}]"


def family_text(stats: Stats) -> str | None:
    """A suite's verdicts: "12 benchmarks: 2 improved (b3 0.4012 [0.35, 0.46], ...), 0 regressed,
    10 equal, 0 undecided"; None for a workload."""
    fam = stats.family
    if fam is None:
        return None
    parts = []
    for word in C.VERDICTS:
        if word == "inconclusive" or not (fam.counts.get(word) or word in C.CHANGED):
            continue
        named = [m for m in fam.leading() if m.verdict == word and m.changed]
        shown = ", ".join(f"{m.id} {m.ratio:.4f}" + (f" [{m.ci95[0]:.4f}, {m.ci95[1]:.4f}]" if m.ci95 else "")
                          for m in named[:C.FAMILY_NAMED] if m.ratio is not None)
        more = f", and {len(named) - C.FAMILY_NAMED} more" if len(named) > C.FAMILY_NAMED else ""
        parts.append(f"{fam.counts.get(word, 0)} {word}" + (f" ({shown}{more})" if shown else ""))
    parts.append(f"{fam.undecided} undecided")
    return f"{fam.members} benchmarks: " + ", ".join(parts)


def budget_text(stats: Stats) -> str | None:
    """The last line's hint when the budget ran out before the rule decided: what it expects to need."""
    seq = stats.sequential
    precision = seq.precision if seq is not None and seq.stopped == "imprecise" else None
    if seq is None or not (precision or (seq.stopped == "cap" and stats.verdict == "inconclusive")):
        return None
    more = seq.more_rounds(stats.rounds.n)
    if more is None:
        return None
    if precision:
        return (f"the budget ran out before the interval reached the +-{100 * precision:g}% precision asked for; at "
                f"this spread the rule expects {more}")
    return f"the budget ran out before a look decided; at this spread the rule expects {more}"


def speed_text(stats: Stats) -> str:
    """The campaign's one figure as a factor (speed), a one-sided answer with the bound it rests
    on: "1.00x faster, at most 1.03x slower" (not slower than the margin), "1.20x slower, at least
    1.12x slower" (regressed against it); a claim's with its interval."""
    paired = stats.paired
    ratio, ci = paired.geomean_ratio, paired.ci95
    if ratio is None or not ci:
        return speed(ratio, ci)
    centre = speed(ratio).replace(" (no interval)", "")
    lo, hi = ci
    if stats.verdict == "not slower" or (stats.question == "not_faster" and stats.verdict == "improved"):
        return f"{centre}, at most {factor(hi)} slower" if hi > 1 else f"{centre}, at least {factor(1 / hi)} faster"
    if stats.verdict == "not faster" or (stats.question == "not_slower" and stats.verdict == "regressed"):
        return f"{centre}, at least {factor(lo)} slower" if lo > 1 else f"{centre}, at most {factor(1 / lo)} faster"
    return speed(ratio, ci)


def sandbox_text(comparison: Comparison) -> str | None:
    """"not sandboxed: WHY" or "partly sandboxed: WHY" when the workers did not run fully confined
    (comparison.json's sandbox), else None: the headline carries it."""
    box = comparison.sandbox
    if box.full:
        return None
    return f"{'partly sandboxed' if box.level == 'partial' else 'not sandboxed'}: {box.reason or box.level}"


def line(comparison: Comparison, exit_word: str = "exit", metric: str = "wall") -> str:
    """One line for humans and CI logs, e.g.
    ``verdict: improved (exit 0): 1.23x faster [1.21x, 1.25x] (candidate/base 0.8123 [0.8011,
    0.8240], ...); ...; warnings: ...``: one figure for the claim, the factor, with the ratio it
    is made from beside it (the mean walls follow as context, without a second factor).
    The timing is shown whatever parity says; exit_word introduces the code (`harness run`
    says whose code it is). Another metric (`compare --metric memory`): the code and the first
    word are that metric's verdict, the wall's named beside it, so the exit the line shows is the
    exit the command gives. Every metric other than the headline follows with its own verdict."""
    from harness.comparison.parity import explain

    code = exit_code(comparison, metric)
    if code == FAILED:
        return (f"verdict: campaign failed ({exit_word} {code}): "
                f"{comparison.reason or 'status ' + str(comparison.status)}")
    stats = comparison.stats
    if code == UNUSABLE:
        what = f"no {C.METRIC[metric].title} metric" if metric != C.HEADLINE else "no usable stats"
        return f"verdict: unusable ({exit_word} {code}): comparison.json has {what}"
    word = answer_word(stats) if code != PARITY else f"parity mismatch, timing {stats.verdict}"
    gate = comparison.metric(metric) if metric != C.HEADLINE else None
    if gate is not None and code == CONTRADICTED:
        word = f"{gate.title} contradicted by the wall, wall {stats.verdict}"
    elif gate is not None and code != PARITY:
        word = f"{gate.verdict} by {gate.title}, wall {stats.verdict}"
    parts = [f"verdict: {word} ({exit_word} {code})"]
    confined = sandbox_text(comparison)
    if confined:
        parts.append(confined)
    paired = stats.paired
    shown = speed_text(stats)
    floor = f", noise floor {100 * stats.floor:.1f}%" if stats.floor else ""
    wider = f", claims +-{100 * stats.claim_band:.1f}%" if stats.claim_band > stats.band else ""
    band = f"band +-{100 * stats.band:.1f}%" if stats.question == "claim" else \
        f"margin {100 * (stats.margin or 0.0):g}%"
    family = family_text(stats)
    interval = interval_text(stats)
    if family is not None:
        parts.append(family)
        if paired.geomean_ratio is not None:
            parts.append(f"geometric mean of the benchmarks' ratios {paired.geomean_ratio:.4f} (no claim of its "
                         f"own; {rounds_text(stats).replace('valid', 'each valid')}, {band}{wider}{floor})")
    elif interval is not None:
        parts.append(f"{shown} (candidate/base {interval}, {paired.metric}, {rounds_text(stats)}, {band}{wider}"
                     f"{floor})")
    elif stats.verdict_reason:
        parts.append(stats.verdict_reason)
    wall = comparison.wall  # the timed loops' mean walls, as context: the claim is the one figure above
    if wall.base_mean_s is not None and wall.candidate_mean_s is not None:
        parts.append(f"mean timed wall per run {wall.base_mean_s:.3f} s -> {wall.candidate_mean_s:.3f} s")
    items = per_item_text(stats)
    if items:
        parts.append(items)
    budget = budget_text(stats)
    if budget:
        parts.append(budget)
    parts.extend(metric_text(comparison, entry) for entry in comparison.other_metrics())
    parts.append(parity_text(comparison) if code != PARITY else f"parity mismatch: {explain(comparison)}")
    text = parts[0] + ": " + "; ".join(parts[1:])
    warnings = list(stats.warnings) + [w for w in [disagreement(comparison)] if w]
    if warnings:
        text += "; warnings: " + "; ".join(warnings)
    return text
