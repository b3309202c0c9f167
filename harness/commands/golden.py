"""`harness golden BUNDLE -o FILE`: freeze a verified bundle's reference-run digests as a
campaign's golden file, so every later run also proves historical parity."""
from __future__ import annotations

import sys

from harness.fsutil import atomic_write_json, read_json


def add_parser(sub) -> None:
    p = sub.add_parser("golden", help="write a golden file (expected digests per item and field) from a bundle")
    p.add_argument("bundle", help="a sealed bundle with parity identical")
    p.add_argument("-o", "--output", required=True, help="golden JSON file to write")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness import parity
    from harness.verify import verify

    report = verify(args.bundle)
    if report.exit_code:
        print(f"harness: error: {args.bundle} does not verify ({(report.unusable or report.problems[0])})",
              file=sys.stderr)
        return 2
    result = read_json(f"{args.bundle}/data/comparison.json")
    if result["status"] != "complete" or not result["parity"]["identical"]:
        print(f"harness: error: {args.bundle}: only a complete bundle with identical parity can be frozen",
              file=sys.stderr)
        return 2
    reference = read_json(f"{args.bundle}/data/runs/{result['parity']['reference']}.json")
    golden = parity.golden_from_run(reference)
    golden["bundle_digest"] = report.digest
    atomic_write_json(args.output, golden)
    print(f"golden: {len(golden['items'])} items from run {reference['label']} ({reference['sha'][:12]}) "
          f"-> {args.output}")
    return 0
