"""Statistics, the maths only: Student's t interval, the Mann-Whitney U test and the
bootstraps. No verdict words here (harness/verdict.py) and nothing that reads a clock;
numpy only, so the parent process that builds comparison.json can import this without
pandas or matplotlib.

Every float a caller puts in comparison.json is rounded with ``sig10`` to 10 significant
digits, so that `harness verify` re-deriving comparison.json on another machine gets the
same JSON even when libm or SIMD paths differ in the last bit. The t quantile is the
standard-library one of `harness/rehash.py`, so both checkers use the same number.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

import numpy as np

ALPHA = 0.05
DIGITS = 10  # significant digits kept in every float of the result
EXACT_MAX_N = 50  # exact U distribution (no ties) when both samples are this small
PERMUTATION_MAX = 50_000  # exact permutation p (with ties) up to this many arrangements
_CHUNK = 1000  # bootstrap resamples drawn per block (fixed: part of the definition)



# --------------------------------------------------------------------------- helpers
def sig10(x: float | None) -> float | None:
    """Round to DIGITS significant digits as a plain Python float (None and non-finite kept)."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{DIGITS - 1}e}")


def mean(xs: Iterable[float]) -> float:
    xs = [float(x) for x in xs]
    return math.fsum(xs) / len(xs)


def is_num(x: Any) -> bool:
    """A finite JSON number (not a bool)."""
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def is_pos(x: Any) -> bool:
    return is_num(x) and x > 0


# --------------------------------------------------------------------------- Mann-Whitney U
def _u_counts(n1: int, n2: int) -> list[int]:
    """Number of arrangements giving U = 0..n1*n2 (no ties): the coefficients of the
    Gaussian binomial [n1+n2 choose n1]_q = prod_{i=1..n1} (1 - q^(n2+i)) / (1 - q^i)."""
    size = n1 * n2 + 1
    poly = [0] * size
    poly[0] = 1
    for i in range(1, n1 + 1):
        k = n2 + i  # multiply by (1 - q^k), truncated (the quotient has degree n1*n2)
        for d in range(size - 1, k - 1, -1):
            poly[d] -= poly[d - k]
        for d in range(i, size):  # divide by (1 - q^i): running sum with stride i
            poly[d] += poly[d - i]
    return poly


def _midranks(values: list[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda j: values[j])
    ranks = [0.0] * len(values)
    j = 0
    while j < len(order):
        k = j
        while k + 1 < len(order) and values[order[k + 1]] == values[order[j]]:
            k += 1
        rank = (j + k + 2) / 2.0  # 1-based mean rank of positions j..k
        for m in range(j, k + 1):
            ranks[order[m]] = rank
        j = k + 1
    return ranks


def mann_whitney(x: list[float], y: list[float], method: str = "auto") -> dict:
    """Two-sided Mann-Whitney U test of samples x and y.

    ``u`` is U for x: the number of pairs (xi, yj) with xi > yj, ties counting 1/2
    (scipy's ``statistic``). ``method``: ``exact`` (no ties: the exact null distribution by
    counting; with ties: exact enumeration of all arrangements of the mid-ranks), ``normal``
    (normal approximation with tie correction and continuity correction 1/2) or ``auto``
    (exact when there are no ties and both samples have at most 50 values, or when there
    are ties and at most 50,000 arrangements; normal otherwise). Two-sided p for the exact
    methods is P(|U - n1 n2 / 2| >= |u - n1 n2 / 2|), which is 2 min(P(U<=u), P(U>=u))
    capped at 1 when the null distribution is symmetric.

    ``min_p`` is the smallest two-sided p these sample sizes can give (no ties),
    2 / C(n1+n2, n1); ``enough`` is ``min_p < 0.05``.
    """
    n1, n2 = len(x), len(y)
    out: dict[str, Any] = {"u": None, "p": None, "method": None, "n_base": n1,
                           "n_candidate": n2, "min_p": None, "enough": False, "warning": None}
    if n1 == 0 or n2 == 0:
        out["warning"] = "no U test: a variant has no ok run"
        return out
    values = [float(v) for v in x] + [float(v) for v in y]
    ranks = _midranks(values)
    u2 = int(round(2 * math.fsum(ranks[:n1]))) - n1 * (n1 + 1)  # 2U, an integer
    nn = n1 * n2  # 2 * mean of U
    ties = len(set(values)) < len(values)
    total = math.comb(n1 + n2, n1)
    min_p = min(1.0, 2.0 / total)
    if method == "auto":
        if not ties:
            method = "exact" if max(n1, n2) <= EXACT_MAX_N else "normal"
        else:
            method = "exact" if total <= PERMUTATION_MAX else "normal"
    if method == "exact" and not ties:
        counts = _u_counts(n1, n2)
        d = abs(u2 - nn)  # |2U - n1 n2|
        hits = sum(c for k, c in enumerate(counts) if abs(2 * k - nn) >= d)
        p = min(1.0, hits / total)
    elif method == "exact":
        if total > 5_000_000:
            raise ValueError(f"exact permutation test too large ({total} arrangements)")
        import itertools

        r2 = [int(round(2 * r)) for r in ranks]  # doubled mid-ranks are integers
        base2 = n1 * (n1 + 1)
        d = abs(u2 - nn)
        hits = 0
        for combo in itertools.combinations(range(n1 + n2), n1):
            if abs(sum(r2[j] for j in combo) - base2 - nn) >= d:
                hits += 1
        p = min(1.0, hits / total)
    elif method == "normal":
        n = n1 + n2
        counts: dict[float, int] = {}
        for v in values:
            counts[v] = counts.get(v, 0) + 1
        tie_term = math.fsum(t ** 3 - t for t in counts.values())
        var = n1 * n2 / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
        if var <= 0:
            p = 1.0
        else:
            z = (abs(u2 - nn) / 2.0 - 0.5) / math.sqrt(var)
            p = 1.0 if z <= 0 else min(1.0, math.erfc(z / math.sqrt(2.0)))
    else:
        raise ValueError(f"unknown method {method!r}")
    out.update(u=u2 / 2.0, p=p, method=method, min_p=min_p, enough=min_p < ALPHA)
    if not out["enough"]:
        need = 2
        while 2.0 / math.comb(2 * need, need) >= ALPHA:
            need += 1
        out["warning"] = (
            f"too few runs to conclude: with {n1} base and {n2} candidate runs the smallest "
            f"possible two-sided p is {min_p:.3f}; at least {need} runs of each variant are "
            f"needed for p < {ALPHA}")
    return out


# --------------------------------------------------------------------------- bootstrap
def _percentile_ci(stats: np.ndarray) -> list[float]:
    lo, hi = np.percentile(stats, [2.5, 97.5])
    return [float(lo), float(hi)]


def bootstrap_geomean(ratios: list[float], seed: int, resamples: int) -> dict:
    """Geometric mean of ``ratios`` and its percentile-bootstrap 95% CI (items resampled
    with replacement, ``default_rng(seed).integers(0, n, size=(1000, n))`` per block)."""
    logs = np.array([math.log(r) for r in ratios], dtype=np.float64)
    n = len(logs)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _CHUNK):
        k = min(_CHUNK, resamples - start)
        idx = rng.integers(0, n, size=(k, n))
        out[start:start + k] = logs[idx].sum(axis=1) / n
    lo, hi = _percentile_ci(out)
    return {"geomean_ratio": math.exp(math.fsum(logs.tolist()) / n),
            "ci95": [math.exp(lo), math.exp(hi)]}


def bootstrap_mean_ratio(base: list[float], cand: list[float], seed: int,
                         resamples: int) -> dict:
    """mean(cand) / mean(base) and its percentile-bootstrap 95% CI, the two samples
    resampled independently (base first, then candidate, per block of 1000)."""
    b = np.array(base, dtype=np.float64)
    c = np.array(cand, dtype=np.float64)
    rng = np.random.default_rng(seed)
    out = np.empty(resamples, dtype=np.float64)
    for start in range(0, resamples, _CHUNK):
        k = min(_CHUNK, resamples - start)
        ib = rng.integers(0, len(b), size=(k, len(b)))
        ic = rng.integers(0, len(c), size=(k, len(c)))
        out[start:start + k] = (c[ic].sum(axis=1) / len(c)) / (b[ib].sum(axis=1) / len(b))
    lo, hi = _percentile_ci(out)
    return {"geomean_ratio": mean(cand) / mean(base), "ci95": [lo, hi]}


# --------------------------------------------------------------------------- Student's t
TRIM = 0.2  # share of values trimmed from each end (Tukey & McLaughlin; Wilcox recommends 20%)


def t_interval(values: list[float], level: float = 0.95, trim: float = TRIM) -> dict:
    """The trimmed mean of ``values`` and its two-sided Tukey-McLaughlin (Yuen) interval:
    g = floor(trim n) values cut from each end, h = n - 2g kept, standard error
    sqrt((n - 1) s_w^2 / (h (h - 1))) with s_w^2 the variance of the winsorized values,
    Student's t with h - 1 degrees of freedom. With g = 0 (n < 5 at 20%) it is the plain
    t interval. One burst that hits one run, or a heavy tail, then moves neither the
    centre nor the width much, while normal values keep close to nominal coverage.
    Needs h >= 2; sd and the interval are None below."""
    from harness.rehash import t_quantile

    x = sorted(values)
    n = len(x)
    g = int(trim * n)
    h = n - 2 * g
    m = math.fsum(x[g:n - g]) / h
    if h < 2:
        return {"n": n, "trimmed": g, "mean": m, "sd": None, "q": None, "ci": None}
    w = [min(max(v, x[g]), x[n - g - 1]) for v in x]
    wm = math.fsum(w) / n
    sw2 = math.fsum((v - wm) ** 2 for v in w) / (n - 1)
    se = math.sqrt((n - 1) * sw2 / (h * (h - 1)))
    q = t_quantile(0.5 + level / 2.0, h - 1)
    return {"n": n, "trimmed": g, "mean": m, "sd": math.sqrt(sw2), "q": q, "ci": [m - q * se, m + q * se]}
