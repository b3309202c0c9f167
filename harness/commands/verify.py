"""`harness verify BUNDLE [--repo PATH] [--original BUNDLE]`: exit 0 intact, 1 a problem (each on
its own line), 2 unusable input."""
from __future__ import annotations

from harness import outcomes
from harness.commands import error


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="re-hash a bundle, check its record rules and re-derive its comparison")
    p.add_argument("bundle", help="bundle directory")
    p.add_argument("--repo", metavar="PATH",
                   help="also check the bundle against this repository: its campaign and golden files, "
                        "and each revision's tree rebuilt from its commit")
    p.add_argument("--max-array-bytes", type=int, metavar="N", default=None,
                   help="decompressed bytes the stored arrays may declare, all together; checked from their headers "
                        "before any is inflated (default 4 GiB)")
    p.add_argument("--original", metavar="BUNDLE",
                   help="for a bundle `harness reproduce` made: re-derive its reproduction receipt from it and this "
                        "original bundle")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.judge.verify import verify

    report = verify(args.bundle, repo=args.repo, max_array_bytes=args.max_array_bytes, original=args.original)
    if report.unusable:
        return error("verify", report.unusable, code=outcomes.UNUSABLE)
    for problem in report.problems:
        print(f"FAIL {problem}")
    if report.problems:
        anchors_only = all("[anchors]" in p for p in report.problems)
        print(f"{args.bundle}: {len(report.problems)} problem(s); "
              + ("the bundle itself is intact, but the repository no longer holds what it ran (a file named above "
                 "was edited since): check out the commit the bundle was made at, or re-run the campaign"
                 if anchors_only else "do not trust this bundle"))
        return outcomes.PROBLEMS
    print(f"OK {args.bundle}: {report.files} payload files and {report.arrays} arrays re-hashed, every file and field "
          f"of the contract, record rules hold, campaign.yaml agrees, comparison re-derived; status {report.status}; "
          f"digest {report.digest}")
    for note in report.notes:
        print(f"note: {note}")
    return 0
