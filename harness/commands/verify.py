"""`harness verify BUNDLE [--repo PATH]`: exit 0 intact, 1 a problem (each on its own line),
2 unusable input."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="re-hash a bundle, check its record rules and re-derive its comparison")
    p.add_argument("bundle", help="bundle directory")
    p.add_argument("--repo", metavar="PATH",
                   help="also check the bundle against this repository: its campaign and golden files, "
                        "and each revision's tree rebuilt from its commit")
    p.add_argument("--max-array-bytes", type=int, metavar="N", default=None,
                   help="decompressed bytes the stored arrays may declare, all together; checked from their headers "
                        "before any is inflated (default 4 GiB)")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.judge.verify import verify

    report = verify(args.bundle, repo=args.repo, max_array_bytes=args.max_array_bytes)
    if report.unusable:
        print(f"harness verify: error: {report.unusable}", file=sys.stderr)
        return 2
    for problem in report.problems:
        print(f"FAIL {problem}")
    if report.problems:
        print(f"{args.bundle}: {len(report.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {args.bundle}: {report.files} payload files and {report.arrays} arrays re-hashed, record rules "
          f"hold, campaign.yaml agrees, comparison re-derived; status {report.status}; digest {report.digest}")
    for note in report.notes:
        print(f"note: {note}")
    return 0
