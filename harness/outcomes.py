"""Verdicts: the words, the exit codes a CI acts on, the rule that turns an interval into a
word, and the one verdict line `run`, `compare`, `reproduce` and `report` print.

Every exit code of the harness is spelled here and nowhere else.
"""
from __future__ import annotations

# --- exit codes -----------------------------------------------------------------------------
OK = 0
PROBLEMS = 1  # verify: the bundle does not verify
UNUSABLE = 2  # usage, input, pre-flight, or a comparison without usable stats
PARITY = 3  # outputs differ
FAILED = 4  # a run failed, timed out or was interrupted
REGRESSED = 5
INCONCLUSIVE = 6
NOT_REPRODUCED = 7

VERDICTS = ("improved", "regressed", "equal", "inconclusive")
EXIT_CODES = {"improved": OK, "equal": OK, "regressed": REGRESSED, "inconclusive": INCONCLUSIVE}
RUN_EXIT_MEANING = {OK: "complete, outputs identical", PARITY: "parity mismatch", FAILED: "campaign failed"}
REPRODUCTION_CODES = {"reproduced": OK, "outputs differ": PARITY, "run failed": FAILED,
                      "timing not reproduced": NOT_REPRODUCED}


def decide(lo: float, hi: float, band: float, run_ratio: float | None, what: str,
           claim_band: float | None = None) -> tuple[str, str]:
    """(verdict, reason) of a 95% interval [lo, hi] of candidate/base against the equal band
    [1 - band, 1 + band]: improved below it, regressed above it, equal inside it, else
    inconclusive; a claim the run-level ratio of mean walls contradicts (it lies on the
    other side of the band) is inconclusive too. Measured under load or drift, a claim must
    also clear the wider claim_band. rehash.py spells the same rule."""
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


def exit_code(comparison: dict) -> int:
    """0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign
    failed, 2 unusable input (no stats / unknown verdict)."""
    if not isinstance(comparison, dict):
        return UNUSABLE
    if comparison.get("status") != "complete":
        return FAILED
    parity = comparison.get("parity")
    if not isinstance(parity, dict) or parity.get("identical") is not True:
        return PARITY
    stats = comparison.get("stats")
    if not isinstance(stats, dict):
        return UNUSABLE
    return EXIT_CODES.get(stats.get("verdict"), UNUSABLE)


def per_item_text(stats: dict) -> str | None:
    """"2 of 14 items regressed beyond the band, worst s3 1.31x": what the geometric mean
    hides (comparison/v3 only)."""
    per = stats.get("per_item")
    if not isinstance(per, dict) or not per.get("items"):
        return None
    text = f"{per['regressed']} of {per['items']} items regressed beyond the band"
    worst = per.get("worst")
    if worst:
        text += f", worst {worst['id']} {worst['ratio']:.4f}"
    return text


def instructions_text(comparison: dict) -> str | None:
    """"instructions candidate/base 0.9901 (-0.99%, repeated exactly, 2+2 runs of 3 items)":
    the second metric beside the wall, or None when the campaign counted no instructions."""
    ins = comparison.get("instructions")
    if not isinstance(ins, dict):
        return None
    if ins.get("ratio") is None:
        return "instructions: no ok instruction run of both variants"
    runs = f"{len(ins['base']['counts'])}+{len(ins['candidate']['counts'])} runs of {ins['items']} items"
    if ins["repeated"]:
        how = "repeated exactly"
    else:
        spread = max(ins[v]["spread_pct"] or 0.0 for v in ("base", "candidate"))
        how = f"did NOT repeat: runs of one variant up to {spread:.4f}% apart"
    return f"instructions candidate/base {ins['ratio']:.4f} ({ins['change_pct']:+.2f}%, {how}, {runs})"


def disagreement(comparison: dict) -> str | None:
    """The warning when wall and instructions point opposite ways, else None."""
    ins = comparison.get("instructions")
    if not isinstance(ins, dict) or not ins.get("disagrees"):
        return None
    return (f"wall says {comparison['stats']['verdict']} but instructions went the other way "
            f"({ins['change_pct']:+.2f}%): I/O, parallelism or memory effects that instruction counts do not see")


def line(comparison: dict, exit_word: str = "exit") -> str:
    """One line for humans and CI logs, e.g.
    ``verdict: improved (exit 0): candidate/base 0.8123 [0.8011, 0.8240] ...; warnings: ...``.
    exit_word: how the code is introduced (`harness run` says whose code it is)."""
    from harness.comparison.parity import explain

    code = exit_code(comparison)
    if code == FAILED:
        return (f"verdict: campaign failed ({exit_word} {code}): "
                f"{comparison.get('reason') or 'status ' + str(comparison.get('status'))}")
    if code == PARITY:
        return f"verdict: parity mismatch ({exit_word} {code}): {explain(comparison)}"
    stats = comparison.get("stats")
    if code == UNUSABLE:
        return f"verdict: unusable ({exit_word} {code}): comparison.json has no usable stats"
    parts = [f"verdict: {stats['verdict']} ({exit_word} {code})"]
    paired = stats.get("paired") or {}
    v3 = isinstance(stats.get("rounds"), dict)  # comparison/v2 bundles keep their old line
    if paired.get("geomean_ratio") is not None and paired.get("ci95"):
        lo, hi = paired["ci95"]
        floor = f", noise floor {100 * stats['floor']:.1f}%" if v3 and stats.get("floor") else ""
        wider = stats.get("claim_band")
        wider = f", claims +-{100 * float(wider):.1f}%" if v3 and wider and wider > stats["band"] else ""
        how = (f"{stats['rounds']['n']} rounds, 95% CI, band +-{100 * float(stats['band']):.1f}%{wider}{floor}" if v3 else
               f"95% CI, threshold {100 * float(stats.get('threshold') or 0):.1f}%")
        parts.append(f"candidate/base {paired['geomean_ratio']:.4f} [{lo:.4f}, {hi:.4f}] "
                     f"({paired.get('metric')}, {how})")
    elif v3 and stats.get("verdict_reason"):
        parts.append(stats["verdict_reason"])
    wall = comparison.get("wall") or {}
    if wall.get("base_mean_s") is not None and wall.get("candidate_mean_s") is not None:
        txt = f"wall {wall['base_mean_s']:.3f} s -> {wall['candidate_mean_s']:.3f} s"
        if wall.get("saving_pct") is not None and wall.get("speedup") is not None:
            txt += f" ({wall['saving_pct']:.1f}% saving, {wall['speedup']:.3f}x)"
        parts.append(txt)
    items = per_item_text(stats)
    if items:
        parts.append(items)
    counted = instructions_text(comparison)
    if counted:
        parts.append(counted)
    parts.append("parity identical")
    text = parts[0] + ": " + "; ".join(parts[1:])
    warnings = (stats.get("warnings") or []) + [w for w in [disagreement(comparison)] if w]
    if warnings and v3:
        text += "; warnings: " + "; ".join(warnings)
    return text
