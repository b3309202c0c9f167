"""`harness compare BUNDLE`: one verdict line, and an exit code a CI job can act on.

0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign failed,
2 unusable input (missing folder, unreadable or invalid comparison.json). The bundle is
verified first: one that does not verify gives verify's exit code (1) and no verdict;
`--no-verify` skips that and says so.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HELP = "print a bundle's verdict; exit 0 improved/equal, 5 regressed, 6 inconclusive"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser(
        "compare", help=HELP,
        description=HELP + ", 3 parity mismatch, 4 campaign failed, 2 unusable input.")
    p.add_argument("bundle", metavar="BUNDLE",
                   help="a bundle folder (or, with --no-verify, its data/comparison.json)")
    p.add_argument("--no-verify", action="store_true",
                   help="print the verdict without verifying the bundle first (the output says so)")
    p.set_defaults(func=main)
    return p


def _problem(comparison) -> str | None:
    """Why this comparison.json cannot give a verdict, or None."""
    from harness.stats import VERDICTS

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
    from harness.stats import EXIT_UNUSABLE, verdict_exit_code, verdict_line

    from harness import records

    target = Path(args.bundle)
    path = target if target.is_file() else target / records.COMPARISON
    if not target.exists():
        print(f"harness compare: error: {target}: no such bundle", file=sys.stderr)
        return EXIT_UNUSABLE
    if not args.no_verify:
        from harness.verify import verify

        if target.is_file():
            print(f"harness compare: error: {target}: give the bundle folder (a lone comparison.json cannot be "
                  "verified; --no-verify reads it unverified)", file=sys.stderr)
            return EXIT_UNUSABLE
        report = verify(target)
        if report.exit_code:
            for line in report.problems[:5]:
                print(f"FAIL {line}")
            print(f"harness compare: error: {report.unusable or f'{target} does not verify'}; no verdict "
                  "(run `harness verify` for every problem)", file=sys.stderr)
            return report.exit_code
    try:
        comparison = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"harness compare: error: {path}: missing", file=sys.stderr)
        return EXIT_UNUSABLE
    except (OSError, UnicodeDecodeError) as exc:
        print(f"harness compare: error: {path}: unreadable ({exc})", file=sys.stderr)
        return EXIT_UNUSABLE
    except ValueError as exc:
        print(f"harness compare: error: {path}: invalid JSON ({exc})", file=sys.stderr)
        return EXIT_UNUSABLE
    problem = _problem(comparison)
    if problem:
        print(f"harness compare: error: {path}: {problem}", file=sys.stderr)
        return EXIT_UNUSABLE
    try:
        line = verdict_line(comparison)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        print(f"harness compare: error: {path}: malformed comparison ({exc})", file=sys.stderr)
        return EXIT_UNUSABLE
    print(line if not args.no_verify else f"{line} [not verified: --no-verify]")
    return verdict_exit_code(comparison)
