"""Would a speed probe see this host's speed changes? An experiment for issue 35, no harness.

Each round starts two fresh interpreters (A then B, or B then A, shuffled; both do the same
work: this is A-vs-A). Each spins 0.25 s (the worker's warm-up), times a fixed reference
loop (the probe), times the noise self-test's work (8 items of 600k additions, a small
60k-addition probe after each item), then the probe again. Printed: the spread (standard
deviation) of the rounds' log ratio of the loop time, and of the same ratio divided by
  - the probes before and after the loop (a per-run speed reference), or
  - each item's own probe (a per-item reference),
so the spread a speed reference would remove is measured, not assumed.

    .venv/bin/python campaigns/probe/speed_probe.py --rounds 100
"""
from __future__ import annotations

import argparse
import json
import math
import platform
import random
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, time
end = time.perf_counter() + 0.25
while time.perf_counter() < end:
    pass
def spin(n):
    t = 0
    for i in range(n):
        t += i
    return t
t0 = time.perf_counter(); spin(300_000); before = time.perf_counter() - t0
loop = per_item = 0.0
for _ in range(8):
    t0 = time.perf_counter(); spin(600_000); t1 = time.perf_counter(); spin(60_000); t2 = time.perf_counter()
    loop += t1 - t0
    per_item += (t1 - t0) / (t2 - t1)
t0 = time.perf_counter(); spin(300_000); after = time.perf_counter() - t0
print(json.dumps({"before": before, "loop": loop, "after": after, "per_item": per_item}))
"""


def one() -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, timeout=60)
    return json.loads(done.stdout)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng, rows, started = random.Random(args.seed), [], time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for _ in range(args.rounds):
        order = ["A", "B"]
        rng.shuffle(order)
        rows.append({v: one() for v in order})

    def log_ratio(f) -> list:
        return [math.log(f(r["B"]) / f(r["A"])) for r in rows]

    loop = log_ratio(lambda s: s["loop"])
    run_probe = log_ratio(lambda s: math.sqrt(s["before"] * s["after"]))
    agree = [x for x, p in zip(loop, log_ratio(lambda s: s["before"])) if abs(p) < 0.08]
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    print(json.dumps({
        "started": started, "rounds": args.rounds, "python": platform.python_version(), "cpu": cpu,
        "loop_s_range": [min(min(r["A"]["loop"], r["B"]["loop"]) for r in rows),
                         max(max(r["A"]["loop"], r["B"]["loop"]) for r in rows)],
        "sd_log_ratio_loop": statistics.stdev(loop),
        "sd_log_ratio_per_run_probe": statistics.stdev([x - p for x, p in zip(loop, run_probe)]),
        "correlation_loop_per_run_probe": statistics.correlation(loop, run_probe),
        "rounds_whose_probes_agree_within_8pct": len(agree),
        "sd_log_ratio_those_rounds": statistics.stdev(agree) if len(agree) > 2 else None,
        "sd_log_ratio_per_item_probe": statistics.stdev(log_ratio(lambda s: s["per_item"])),
        "mean_log_ratio_per_item_probe": statistics.mean(log_ratio(lambda s: s["per_item"])),
    }, indent=1))


if __name__ == "__main__":
    main()
