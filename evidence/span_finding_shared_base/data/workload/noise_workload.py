"""Noise self-test workload (`harness selftest noise`): each item spins a pure-Python loop;
the candidate's loops are `candidate_work` times as long. The effect is known by
construction (1.0: an A-vs-A campaign), whatever the code under test; outputs do not
depend on the amount of work, so parity holds at every setting."""
from __future__ import annotations

import numpy as np


class NoiseWorkload:
    def __init__(self, ctx):
        p = ctx.params
        factor = float(p.get("candidate_work", 1.0)) if ctx.variant == "candidate" else 1.0
        self.loops = int(int(p.get("work", 600_000)) * factor)
        self.items = [f"spin-{i}" for i in range(int(p.get("items", 8)))]

    def run(self, item: str) -> dict:
        total = 0
        for i in range(self.loops):
            total += i
        return {"item": np.array([int(item.rsplit("-", 1)[1])], dtype=np.int64)}


def setup(ctx) -> NoiseWorkload:
    return NoiseWorkload(ctx)
