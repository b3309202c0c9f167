"""Statistics, the maths only: the trimmed-t interval. No verdict words here (the contract's
`decide`) and nothing that reads a clock.

Every float a caller puts in comparison.json is rounded with rules.sig10 to 10 significant
digits, so that a checker re-deriving comparison.json on another machine gets the same JSON even
when libm or SIMD paths differ in the last bit. The t quantile is the standard-library one of
the contract (`rules.t_quantile`), so the writer and both checkers use the same number.
"""
from __future__ import annotations

import math
from typing import Iterable, NamedTuple, Optional

from harness.contract import LEVEL, TRIM


def mean(xs: Iterable[float]) -> float:
    xs = [float(x) for x in xs]
    return math.fsum(xs) / len(xs)


def trimmed_mean(values: list[float], trim: float = TRIM) -> float:
    """The mean of `values` with floor(trim n) cut from each end (the centre t_interval gives)."""
    x = sorted(values)
    g = int(trim * len(x))
    return math.fsum(x[g:len(x) - g]) / (len(x) - 2 * g)


class TInterval(NamedTuple):
    """A trimmed-t interval: n values, g trimmed from each end, the trimmed mean, the winsorized
    sd, the t quantile and [lo, hi] (sd, q and ci None with fewer than two values kept)."""
    n: int
    trimmed: int
    mean: float
    sd: Optional[float]
    q: Optional[float]
    ci: Optional[list[float]]


def t_interval(values: list[float], level: float = LEVEL, trim: float = TRIM) -> TInterval:
    """The trimmed mean of ``values`` and its two-sided Tukey-McLaughlin (Yuen) interval:
    g = floor(trim n) values cut from each end, h = n - 2g kept, standard error
    sqrt((n - 1) s_w^2 / (h (h - 1))) with s_w^2 the variance of the winsorized values,
    Student's t with h - 1 degrees of freedom. With g = 0 (n < 5 at 20%) it is the plain
    t interval. One burst that hits one run, or a heavy tail, then moves neither the
    centre nor the width much, while normal values keep close to nominal coverage.
    Needs h >= 2; sd and the interval are None below."""
    from harness.rules import t_quantile

    x = sorted(values)
    n = len(x)
    g = int(trim * n)
    h = n - 2 * g
    m = math.fsum(x[g:n - g]) / h
    if h < 2:
        return TInterval(n, g, m, None, None, None)
    w = [min(max(v, x[g]), x[n - g - 1]) for v in x]
    wm = math.fsum(w) / n
    sw2 = math.fsum((v - wm) ** 2 for v in w) / (n - 1)
    se = math.sqrt((n - 1) * sw2 / (h * (h - 1)))
    q = t_quantile(0.5 + level / 2.0, h - 1)
    return TInterval(n, g, m, math.sqrt(sw2), q, [m - q * se, m + q * se])
