"""Outcomes: every exit code of the harness, the code each verdict word gives, and the one
verdict line `run`, `compare`, `reproduce`, `report` and `summary` print.

The words are the contract's (contract.VERDICTS, contract.REPRODUCTION_VERDICTS); the codes are
spelled here and nowhere else: a new code is one line here and its use.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from harness import contract as C

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
NO_CULPRIT = 12  # bisect: cannot tell which commit (spread, inconclusive, not monotone)
NOT_REGRESSED = 13  # bisect: bad is not slower than good, nothing to find
INTERRUPTED = 130  # Ctrl-C on a command that has nothing to seal

def error(command: str, *lines, code: int = UNUSABLE) -> int:
    """Print each line as `harness COMMAND: error: LINE` on stderr; return the exit code."""
    import sys

    for line in lines:
        print(f"harness {command}: error: {line}", file=sys.stderr)
    return code


# Keyed by object: a verdict read from a bundle may be any JSON value (a missing one is None).
EXIT_CODES: dict[object, int] = {"improved": OK, "equal": OK, "regressed": REGRESSED, "inconclusive": INCONCLUSIVE}
RUN_EXIT_MEANING = {OK: "complete, outputs agree", PARITY: "parity mismatch", FAILED: "campaign failed",
                    PROBLEMS: "the sealed bundle does not verify"}
REPRODUCTION_CODES = {"reproduced": OK, "not contradicted": NOT_CONTRADICTED, "not reproduced": NOT_REPRODUCED,
                      "partial": PARTIAL, "outputs differ": PARITY, "run failed": FAILED}
# `harness bisect`, by how the search ended (contract.BISECT_ENDINGS).
BISECT_CODES = {"culprit": OK, "not regressed": NOT_REGRESSED, "spread": NO_CULPRIT, "inconclusive": NO_CULPRIT,
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
    not measure it); a failed campaign and a parity mismatch keep theirs."""
    if not comparison.complete:
        return FAILED
    if comparison.parity.agree is not True:
        return PARITY
    if metric != C.HEADLINE:
        entry = comparison.metric(metric)
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


def per_item_text(stats: Stats) -> str | None:
    """"2 of 14 items regressed beyond +-2.0%, worst s3 1.31x": what the geometric mean hides,
    against the band it names."""
    per = stats.per_item
    if per is None or not per.items:
        return None
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
    if ins.repeated:
        how = "repeated exactly"
    else:
        spread = max(side.spread_pct or 0.0 for side in (ins.base, ins.candidate))
        how = f"did NOT repeat: runs of one variant up to {spread:.4f}% apart"
    return (f"instructions: {ins.verdict}, candidate/base {ins.ratio:.4f} ({ins.change_pct:+.2f}%, {how}, "
            f"{runs}, band +-{100 * ins.band:.1f}%)")


def disagreement(comparison: Comparison) -> str | None:
    """The warning when wall and instructions point opposite ways, else None."""
    ins = comparison.instructions
    if ins is None or not ins.disagrees:
        return None
    return (f"wall says {comparison.stats.verdict} but instructions went the other way "
            f"({ins.change_pct:+.2f}%): I/O, parallelism or memory effects that instruction counts do not see")


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
    if not seq:
        return f"{n} rounds, 95% CI"
    if seq.stopped == "decided":
        return f"{n} rounds, decided at the look after round {n}, 95% interval valid at every look"
    if seq.stopped == "cap":
        return f"{n} rounds, no look decided by the cap of {seq.cap}, 97.5% CI at the cap"
    return f"{n} rounds, ended before a look decided"


def sandbox_text(comparison: Comparison) -> str | None:
    """"not sandboxed: WHY" or "partly sandboxed: WHY" when the workers did not run fully confined
    (comparison.json's sandbox), else None: the headline carries it."""
    box = comparison.sandbox
    if box.full:
        return None
    return f"{'partly sandboxed' if box.level == 'partial' else 'not sandboxed'}: {box.reason or box.level}"


def line(comparison: Comparison, exit_word: str = "exit", metric: str = "wall") -> str:
    """One line for humans and CI logs, e.g.
    ``verdict: improved (exit 0): candidate/base 0.8123 [0.8011, 0.8240] ...; warnings: ...``.
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
    word = stats.verdict if code != PARITY else f"parity mismatch, timing {stats.verdict}"
    gate = comparison.metric(metric) if metric != C.HEADLINE else None
    if gate is not None and code != PARITY:
        word = f"{gate.verdict} by {gate.title}, wall {stats.verdict}"
    parts = [f"verdict: {word} ({exit_word} {code})"]
    confined = sandbox_text(comparison)
    if confined:
        parts.append(confined)
    paired = stats.paired
    if paired.geomean_ratio is not None and paired.ci95:
        lo, hi = paired.ci95
        floor = f", noise floor {100 * stats.floor:.1f}%" if stats.floor else ""
        wider = f", claims +-{100 * stats.claim_band:.1f}%" if stats.claim_band > stats.band else ""
        parts.append(f"candidate/base {paired.geomean_ratio:.4f} [{lo:.4f}, {hi:.4f}] ({paired.metric}, "
                     f"{rounds_text(stats)}, band +-{100 * stats.band:.1f}%{wider}{floor})")
    elif stats.verdict_reason:
        parts.append(stats.verdict_reason)
    wall = comparison.wall
    if wall.base_mean_s is not None and wall.candidate_mean_s is not None:
        txt = f"wall {wall.base_mean_s:.3f} s -> {wall.candidate_mean_s:.3f} s"
        if wall.saving_pct is not None and wall.speedup is not None:
            txt += f" ({wall.saving_pct:.1f}% saving, {wall.speedup:.3f}x)"
        parts.append(txt)
    items = per_item_text(stats)
    if items:
        parts.append(items)
    parts.extend(metric_text(comparison, entry) for entry in comparison.other_metrics())
    parts.append(parity_text(comparison) if code != PARITY else f"parity mismatch: {explain(comparison)}")
    text = parts[0] + ": " + "; ".join(parts[1:])
    warnings = list(stats.warnings) + [w for w in [disagreement(comparison)] if w]
    if warnings:
        text += "; warnings: " + "; ".join(warnings)
    return text
