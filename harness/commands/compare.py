"""`harness compare BUNDLE`: one verdict line, and an exit code a CI job can act on.

0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4 campaign failed,
2 unusable input (missing folder, unreadable or invalid comparison.json).
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
                   help="a bundle folder (or its data/comparison.json)")
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

    target = Path(args.bundle)
    path = target if target.is_file() else target / "data" / "comparison.json"
    if not target.exists():
        print(f"harness compare: error: {target}: no such bundle", file=sys.stderr)
        return EXIT_UNUSABLE
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
    print(line)
    return verdict_exit_code(comparison)
