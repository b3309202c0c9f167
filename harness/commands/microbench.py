"""`harness microbench NAME ...`: standalone benchmarks that need no campaign.

  span-prefix     the span-finding helper vs the element-by-element loop
  ar-loop         the AR sampler, full-length vs compacted
  stage-overhead  what one stage wrapper costs per call
  gemm-rows       whether a row's bits depend on its call's size (F.linear, the AR model's tiles)
"""
from __future__ import annotations

import importlib
import sys

BENCHES = {
    "span-prefix": ("span_prefix", "span finding: _common_prefix_length vs the element loop"),
    "ar-loop": ("ar_loop", "AR loop: full_length=True vs compacted active rows"),
    "stage-overhead": ("stage_overhead", "per-call cost of the stage CPU wrapper"),
    "gemm-rows": ("gemm_rows", "does a row get the same bits at every position and call size"),
}


def add_parser(sub) -> None:
    p = sub.add_parser("microbench", help="standalone microbenchmarks")
    benches = p.add_subparsers(dest="bench", required=True, metavar="BENCH")
    for name, (module, help_text) in BENCHES.items():
        bp = benches.add_parser(name, help=help_text)
        bp.set_defaults(func=main, bench_module=module)
        # Arguments come from the bench module; importing it must stay light (no torch).
        try:
            mod = importlib.import_module(f"harness.microbench.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"harness.microbench.{module}":
                raise
            bp.set_defaults(func=_missing)
            continue
        mod.add_arguments(bp)


def _missing(args) -> int:
    print(f"harness microbench: error: '{args.bench}' is not available in this checkout", file=sys.stderr)
    return 2


def main(args) -> int:
    mod = importlib.import_module(f"harness.microbench.{args.bench_module}")
    return int(mod.main(args) or 0)
