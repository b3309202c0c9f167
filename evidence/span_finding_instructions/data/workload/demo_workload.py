"""Demo workload: moving means over seeded integer series (numpy only, starts fast).

One item is malformed on purpose: both revisions must record the same error for it.
NaN (incomplete windows) and -0.0 (unchanged means) appear in the outputs, so parity
really is byte-level."""
from __future__ import annotations

import numpy as np

from demo import core


class DemoWorkload:
    def __init__(self, ctx):
        p = ctx.params
        self.length = int(p.get("length", 4000))
        self.window = int(p.get("window", 64))
        rng = np.random.default_rng(int(p.get("seed", 7)))
        self.series = {f"series-{i:02d}": rng.integers(0, 5, size=self.length) for i in range(int(p.get("items", 8)))}
        self.series["series-malformed"] = np.zeros((2, 3), dtype=np.int64)
        self.items = list(self.series)

    def run(self, item: str) -> dict:
        means = core.moving_mean(self.series[item], self.window)
        return {"means": means, "trend": core.summarize(means)}

    def metrics(self) -> dict:
        return {"series": len(self.series), "length": self.length, "window": self.window}


def setup(ctx) -> DemoWorkload:
    return DemoWorkload(ctx)
