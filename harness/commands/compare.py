"""`harness compare BUNDLE`: one verdict line (then the short stage table), and an exit code a
CI job can act on.

0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign failed,
2 unusable input (missing folder, unreadable or invalid comparison.json). The bundle is
verified first: one that does not verify gives verify's exit code (1) and no verdict;
`--no-verify` skips that and says so.

`harness compare A B`: two verified bundles of one campaign side by side (machine,
speed-up and interval, stage self CPU per variant) and whether their outputs agree under
`harness reproduce`'s rules. A is the reference and B the bundle judged, in the order
given (never by the bundles' own clocks, which a forger sets): the exit code is B's
verdict code, or 3 when the outputs differ.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from harness import outcomes as verdict
from harness.commands import error

HELP = "print a bundle's verdict (or compare two); exit 0 improved/equal, 5 regressed, 6 inconclusive"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare", help=HELP,
        description=HELP + ", 3 parity mismatch, 4 campaign failed, 2 unusable input.")
    p.add_argument("bundles", nargs="+", metavar="BUNDLE",
                   help="a bundle folder (or, with --no-verify, its data/comparison.json); two bundles of one "
                        "campaign: a table of both")
    p.add_argument("--no-verify", action="store_true",
                   help="print the verdict without verifying the bundle first (the output says so)")
    p.set_defaults(func=main)
    return p


def _problem(comparison) -> str | None:
    """Why this comparison.json cannot give a verdict, or None."""
    from harness.outcomes import VERDICTS

    if not isinstance(comparison, dict):
        return "expected a JSON object"
    if comparison.get("status") not in ("complete", "failed"):
        return f"status must be 'complete' or 'failed', got {comparison.get('status')!r}"
    if comparison["status"] == "failed":
        return None
    if not isinstance(comparison.get("parity"), dict) or \
            not isinstance(comparison["parity"].get("identical"), bool):
        return "no parity.identical"
    if not comparison["parity"]["identical"]:
        return None
    stats = comparison.get("stats")
    if not isinstance(stats, dict):
        return "no stats"
    if stats.get("verdict") not in VERDICTS:
        return f"stats.verdict must be one of {', '.join(VERDICTS)}, got {stats.get('verdict')!r}"
    paired = stats.get("paired")
    if paired is not None and not isinstance(paired, dict):
        return "stats.paired must be an object"
    return None


def main(args) -> int:
    if len(args.bundles) > 2 or (len(args.bundles) == 2 and args.no_verify):
        return error("compare", "give one bundle, or two bundles without --no-verify", code=verdict.UNUSABLE)
    if len(args.bundles) == 2:
        return compare_two(*map(Path, args.bundles))
    return compare_one(Path(args.bundles[0]), args.no_verify)


def _unverified(path: Path, consequence: str) -> int:
    """0 when the bundle verifies; else its first problems, one error line and verify's code."""
    from harness.judge.verify import verify

    report = verify(path)
    if report.exit_code:
        for line in report.problems[:5]:
            print(f"FAIL {line}")
        error("compare", f"{report.unusable or f'{path} does not verify'}; {consequence}")
    return report.exit_code


def compare_two(a: Path, b: Path) -> int:
    """Two bundles of one campaign: one table, stage CPU per variant, outputs agreement."""
    import datetime as dt

    from harness.bundle import read as bundlereader
    from harness.engine import environment
    from harness.comparison import parity
    from harness.judge import reproduce
    from harness.render.report import _table, _verdict_word, stage_cells, stage_order
    from harness.outcomes import exit_code as verdict_exit_code

    for path in (a, b):
        code = _unverified(path, "no comparison")
        if code:
            return code
    x, y = bundlereader.load(a), bundlereader.load(b)
    apart = reproduce.other_campaign(x["campaign"], y["campaign"])
    if apart:
        return error("compare", f"not two bundles of one campaign: {apart}", code=verdict.UNUSABLE)
    machines = [environment.machine(d["environment"]) for d in (x, y)]
    same, why = environment.same_class(*machines)
    outputs = parity.compare_outputs(x["runs"], y["runs"], same)
    rows, stages = [], {}
    for n, (d, m) in enumerate(zip((x, y), machines), 1):
        c = d["comparison"]
        speedup = (c.get("wall") or {}).get("speedup")
        rows.append({"#": n, "bundle": str(d["path"]),
                     "started (UTC)": dt.datetime.fromtimestamp(d["runner"]["started_at"], dt.timezone.utc)
                     .strftime("%Y-%m-%d %H:%M"),
                     "machine": environment.machine_text(m), "order": d["campaign"]["order"],
                     "items": parity.items_run(d["runs"]),
                     "speed-up": f"{speedup:.3f}x" if speedup else "n/a",
                     "candidate/base [95% CI]": reproduce.ratio_text(reproduce.claim(c)),
                     "verdict": _verdict_word(c)})
        found = c.get("stages") or {}
        for name in stage_order(found):  # the reference's order first: where its base time went
            stages.setdefault(name, {"stage": name}).update(stage_cells(found[name] or {}, prefix=f"{n} "))
    print(_table(rows))
    if stages:
        print("\nStage self CPU (s per run, mean over ok runs; bundle 1's most base CPU first):\n")
        print(_table(list(stages.values())))
    print(f"\nmachines: {why}")
    print(f"outputs: {reproduce.outputs_text(outputs)}")
    if outputs["mismatches"]:
        rows = parity.divergence_across(outputs["mismatches"][:5], a / "data" / "arrays", b / "data" / "arrays")
        print("\n".join(reproduce.divergence_lines(rows)))
    # The order given decides which bundle is judged; the bundles' clocks are theirs to set.
    code = verdict.PARITY if not outputs["agree"] else verdict_exit_code(y["comparison"])
    why_code = "outputs differ" if not outputs["agree"] else "the verdict of bundle 2, the one judged (A B: B)"
    print(f"exit {code}: {why_code}")
    return code


def compare_one(target: Path, no_verify: bool) -> int:
    from harness.outcomes import UNUSABLE as EXIT_UNUSABLE, exit_code as verdict_exit_code, line as verdict_line

    from harness import records
    from harness.bundle import read as bundlereader
    from harness.bundle.write import BundleError
    from harness.render.report import stage_summary

    path = target if target.is_file() else target / records.COMPARISON
    if not target.exists():
        return error("compare", f"{target}: no such bundle", code=EXIT_UNUSABLE)
    if not no_verify:
        if target.is_file():
            return error("compare", f"{target}: give the bundle folder (a lone comparison.json cannot be "
                         "verified; --no-verify reads it unverified)", code=EXIT_UNUSABLE)
        code = _unverified(target, "no verdict (run `harness verify` for every problem)")
        if code:
            return code
    try:
        comparison = bundlereader.read_json(path)
    except BundleError as exc:
        return error("compare", exc, code=EXIT_UNUSABLE)
    problem = _problem(comparison)
    if problem:
        return error("compare", f"{path}: {problem}", code=EXIT_UNUSABLE)
    try:
        line = verdict_line(comparison)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        return error("compare", f"{path}: malformed comparison ({exc})", code=EXIT_UNUSABLE)
    print(line if not no_verify else f"{line} [not verified: --no-verify]")
    try:
        stages = stage_summary(comparison)
    except (TypeError, AttributeError, ValueError) as exc:  # only a file read with --no-verify gets here
        stages = [f"stages: malformed ({exc}); the verdict above does not depend on them"]
    for text in stages:
        print(text)
    return verdict_exit_code(comparison)
