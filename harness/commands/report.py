"""`harness report [BUNDLE...] [-o REPORT.md] [--check]`: REPORT.md from sealed bundles only."""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

HELP = "render REPORT.md from evidence bundles (every bundle under evidence/ by default)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help=HELP, description=HELP + ". Reads only the "
                              "bundles' files; --check makes CI fail when REPORT.md drifts.")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE",
                   help="bundle folders (default: every folder under ROOT/evidence holding "
                        "a bagit.txt)")
    p.add_argument("-o", "--output", metavar="REPORT.md",
                   help="where to write ('-' for stdout; default: ROOT/REPORT.md for every bundle "
                        "under evidence/, stdout when bundles are named)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when the output file differs from what the "
                        "bundles produce")
    p.add_argument("--root", default=".", metavar="DIR",
                   help="repository root: where evidence/ lives and what paths in the "
                        "report are relative to (default: the current directory)")
    p.set_defaults(func=main)
    return p


def main(args) -> int:
    from harness.files import atomic_write_bytes
    from harness.bundle.write import BundleError
    from harness.render.report import find_bundles, render_report, verification

    root = Path(args.root)
    if not root.is_dir():
        print(f"harness report: error: {root}: not a directory", file=sys.stderr)
        return 2
    bundles = [Path(b) for b in args.bundles] if args.bundles else find_bundles(root)
    # Named bundles are a preview: they never overwrite the report of the whole evidence.
    to_stdout = args.output == "-" or (args.bundles and not args.output and not args.check)
    out = None if to_stdout else Path(args.output) if args.output else root / "REPORT.md"
    if to_stdout and args.check:
        print("harness report: error: --check needs a file, not '-o -'", file=sys.stderr)
        return 2
    try:
        text = render_report(bundles, root, report_dir=out.parent if out else root)
    except BundleError as exc:
        print(f"harness report: error: {exc}", file=sys.stderr)
        return 2
    failing = [b for b in bundles if verification(str(b))[0]]
    for bundle in failing:
        print(f"harness report: error: {bundle} does not verify (`harness verify {bundle}` lists why); "
              "REPORT.md says so at its section", file=sys.stderr)
    code = 1 if failing else 0
    if to_stdout:
        sys.stdout.write(text)
        return code
    if args.check:
        try:
            current = out.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            print(f"harness report: {out} is missing; run `harness report`", file=sys.stderr)
            return 1
        if current == text:
            print(f"harness report: {out} matches its {len(bundles)} bundle(s)")
            return code
        diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(),
                                         f"{out} (committed)", f"{out} (from the bundles)",
                                         lineterm="", n=1))
        print(f"harness report: {out} differs from what its {len(bundles)} bundle(s) produce; "
              "run `harness report` and commit the result", file=sys.stderr)
        for line in diff[:40]:
            print(line, file=sys.stderr)
        if len(diff) > 40:
            print(f"... ({len(diff) - 40} more diff lines)", file=sys.stderr)
        return 1
    atomic_write_bytes(out, text.encode("utf-8"))
    print(f"harness report: wrote {out} from {len(bundles)} bundle(s)")
    return code
