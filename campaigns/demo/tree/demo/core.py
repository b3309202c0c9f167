"""Moving means over integer series. Sums are exact integers, so any correct
implementation gives byte-identical floats."""
from __future__ import annotations

import numpy as np


def validate(values, window: int) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValueError(f"expected a 1-d integer series, got {values.dtype}{list(values.shape)}")
    if not 1 <= window <= len(values):
        raise ValueError(f"window {window} does not fit a series of {len(values)}")
    return values.astype(np.int64)


def moving_mean(values, window: int) -> np.ndarray:
    """Mean of each full window ending at i; NaN where the window is incomplete."""
    values = validate(values, window)
    out = np.full(len(values), np.nan)
    for i in range(window - 1, len(values)):
        total = 0
        for v in values[i - window + 1 : i + 1]:
            total += int(v)
        out[i] = total / window
    return out


def summarize(means: np.ndarray) -> np.ndarray:
    """Sign of each change between consecutive means (-0.0 where a mean is unchanged)."""
    change = np.diff(means)
    return np.where(change == 0, -0.0, np.sign(change))
