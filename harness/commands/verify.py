"""`harness verify BUNDLE`: exit 0 intact, 1 a problem (each on its own line), 2 unusable input."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="re-hash a bundle and re-derive its comparison from the run records")
    p.add_argument("bundle", help="bundle directory")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.verify import verify

    report = verify(args.bundle)
    if report.unusable:
        print(f"harness: error: {report.unusable}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"FAIL {problem}")
    if report.problems:
        print(f"{args.bundle}: {len(report.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {args.bundle}: {report.files} payload files and {report.arrays} arrays re-hashed, "
          f"comparison re-derived; status {report.status}; digest {report.digest}")
    return 0
