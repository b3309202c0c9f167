"""`harness microbench NAME ...`: standalone benchmarks that need no campaign.

  span-prefix     the span-finding helper vs the element-by-element loop
  ar-loop         the AR sampler, full-length vs compacted
  stage-overhead  what one stage wrapper costs per call
  gemm-rows       whether a row's bits depend on its call's size (F.linear, the AR model's tiles)
"""
from __future__ import annotations

import sys

BENCHES = {
    "span-prefix": "span finding: _common_prefix_length vs the element loop",
    "ar-loop": "AR loop: full_length=True vs compacted active rows",
    "stage-overhead": "per-call cost of the stage CPU wrapper",
    "gemm-rows": "does a row get the same bits at every position and call size",
}


def add_parser(sub) -> None:
    p = sub.add_parser("microbench", help="standalone microbenchmarks")
    benches = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name, help_text in BENCHES.items():
        bp = benches.add_parser(name, help=help_text)
        bp.set_defaults(func=main)
        # Arguments come from the bench module; importing it must stay light (no torch).
        try:
            mod = _module(name)
        except SystemExit:  # not a clone: the campaigns' benches are not installed
            bp.set_defaults(func=_missing)
            continue
        mod.add_arguments(bp)


def _module(name: str):
    """stage-overhead measures the harness itself; the others live beside their campaigns."""
    if name == "stage-overhead":
        from harness.selftest import stage_overhead

        return stage_overhead
    from harness.plan.checkout import bench

    return bench(name)


def _missing(args) -> int:
    print(f"harness microbench: error: '{args.bench}' is not available in this checkout", file=sys.stderr)
    return 2


def main(args) -> int:
    return int(_module(args.bench).main(args) or 0)
