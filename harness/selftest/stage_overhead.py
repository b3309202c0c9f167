"""What a stage wrapper costs per call: an empty function called plain, wrapped but
unarmed (outside the timed loop), and wrapped and armed (two thread_time reads, a stack
push and pop, and the per-thread totals)."""
from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass

from harness.records import to_json
from harness.worker.stagetimer import StageTimer


def add_arguments(parser) -> None:
    parser.add_argument("--calls", type=int, default=200_000, help="calls per repeat")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", help="also write the results to this file")


def _noop():
    return None


def _per_call_ns(func, calls: int, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            func()
        samples.append((time.perf_counter_ns() - t0) / calls)
    return statistics.median(samples)


@dataclass(frozen=True)
class Overhead:
    """The median per-call cost of each way of calling (what --json writes)."""
    calls: int
    repeats: int
    plain_ns: float
    unarmed_ns: float
    armed_ns: float
    overhead_armed_ns: float
    overhead_unarmed_ns: float


def measure(calls: int, repeats: int) -> Overhead:
    timer = StageTimer()
    wrapped = timer.wrap("noop", _noop)
    plain = _per_call_ns(_noop, calls, repeats)
    unarmed = _per_call_ns(wrapped, calls, repeats)
    timer.armed = True
    armed = _per_call_ns(wrapped, calls, repeats)
    timer.armed = False
    return Overhead(calls=calls, repeats=repeats, plain_ns=plain, unarmed_ns=unarmed, armed_ns=armed,
                    overhead_armed_ns=armed - plain, overhead_unarmed_ns=unarmed - plain)


def main(args) -> int:
    result = measure(args.calls, args.repeats)
    print(f"stage wrapper, median of {args.repeats} x {args.calls} calls of an empty function:")
    print(f"  plain call        {result.plain_ns:8.1f} ns")
    print(f"  wrapped, unarmed  {result.unarmed_ns:8.1f} ns  (+{result.overhead_unarmed_ns:.1f} ns)")
    print(f"  wrapped, armed    {result.armed_ns:8.1f} ns  (+{result.overhead_armed_ns:.1f} ns per call)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(to_json(result), fh, indent=2)
    return 0
