"""The sequential rule on simulated per-round log ratios, vectorised with numpy over many campaigns
at once: the rule as contract.py states it (the design's levels and sign ranks, the t and sign
intervals, their intersection, rules.decide's comparisons), the rule it replaced (the t-mixture
valid for ever, with the 97.5% trimmed-t interval at the cap), and the oracle (a fixed-sample test
told the count). tests/unit/test_sequential_rates.py holds this copy to the contract's own code
on campaigns it also runs through analysis.analyze; the rates it measures are docs/statistics.md's.

Only the statistics: no run records, no load, drift or run-ratio guards (tests/noise_support.py's
campaigns through analysis.analyze measure those)."""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from harness import contract as C
from harness import rules as R

VERDICT_CODES = {word: i for i, word in enumerate(C.VERDICTS)}
UNDECIDED = VERDICT_CODES["inconclusive"]


@dataclass
class Outcome:
    """Per campaign: the round it stopped at, its verdict (VERDICT_CODES), the interval it stopped
    with in log space (nan: unbounded), and whether every look's interval held the truth (held:
    both ends; held_upper: the upper end, a one-sided question's bound)."""
    stop: np.ndarray
    verdict: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    held: np.ndarray
    held_upper: np.ndarray
    imprecise: np.ndarray | None = None  # with a precision: a look decided, none that precise by the cap

    def rate(self, *words: str) -> float:
        return float(np.isin(self.verdict, [VERDICT_CODES[w] for w in words]).mean())

    def median_stop(self) -> float:
        return float(np.median(self.stop))


def _decide(lo: np.ndarray, hi: np.ndarray, band: float, question: str, margin: float | None) -> np.ndarray:
    """rules.decide's comparisons, vectorised (log space; nan: unbounded, inconclusive)."""
    out = np.full(lo.shape, UNDECIDED)
    known = ~(np.isnan(lo) | np.isnan(hi))
    if question == "claim":
        low, high = math.log(1 - band), math.log1p(band)
        out[known & (lo >= low) & (hi <= high)] = VERDICT_CODES["equal"]
        out[known & (hi < low)] = VERDICT_CODES["improved"]
        out[known & (lo > high)] = VERDICT_CODES["regressed"]
        return out
    past = max(margin, band)
    if question == "not_slower":
        out[known & (lo > math.log1p(past))] = VERDICT_CODES["regressed"]
        out[known & (hi <= math.log1p(margin))] = VERDICT_CODES["not slower"]
    else:
        out[known & (hi < math.log(1 - past))] = VERDICT_CODES["improved"]
        out[known & (lo >= math.log(1 - margin))] = VERDICT_CODES["not faster"]
    return out


def _moments(d: np.ndarray):
    n = np.arange(1, d.shape[1] + 1)
    s1, s2 = d.cumsum(axis=1), (d * d).cumsum(axis=1)
    mean = s1 / n
    var = np.maximum(s2 - n * mean * mean, 0.0) / np.maximum(n - 1, 1)
    return mean, np.sqrt(var)


def run(d: np.ndarray, plan: R.Design, band: float = 0.02, question: str = "claim", margin: float | None = None,
        truth: float | np.ndarray = 0.0, through: bool = False, precision: float | None = None) -> Outcome:
    """Every campaign (a row of d, its per-round log ratios up to the design's cap) looked at after
    each round from plan.first, stopped at the first look that decides (rules.stopped; with a
    precision, the first that decides with its interval within log(1 + precision) of the mean on
    each side, rules.precise; at the cap without one, the first decided look's word and the cap's
    interval: imprecise); `truth` (log, one per campaign or one for all) tells whether every look's
    interval held it (through: every look to the cap, whether or not an earlier one decided)."""
    rows, cap = d.shape
    t_level, sign_level = R.levels(plan)
    mean, sd = _moments(d)
    stop = np.full(rows, cap)
    verdict = np.full(rows, UNDECIDED)
    lo_at, hi_at = np.full(rows, np.nan), np.full(rows, np.nan)
    held = np.ones(rows, dtype=bool)
    held_upper = np.ones(rows, dtype=bool)
    going = np.ones(rows, dtype=bool)
    first_word = np.full(rows, UNDECIDED)  # the first look's word that decided (a precision's imprecise end)
    imprecise = np.zeros(rows, dtype=bool)
    width = math.log1p(precision) if precision is not None else math.inf
    truth = np.broadcast_to(np.asarray(truth, dtype=float), (rows,))
    for n in range(plan.first, cap + 1):
        m, s = mean[:, n - 1], sd[:, n - 1]
        half = R.t_quantile(1 - t_level, n - 1) * s / math.sqrt(n) if n >= 3 else np.full(rows, np.nan)
        t_lo = np.where(s > 0, m - half, np.nan)
        t_hi = np.where(s > 0, m + half, np.nan)
        k = R.sign_rank(n, sign_level)
        if k:
            ordered = np.sort(d[:, :n], axis=1)
            s_lo, s_hi = ordered[:, k - 1], ordered[:, n - k]
            lo = np.fmax(t_lo, s_lo)  # fmax/fmin: an unbounded side (nan) leaves the other's
            hi = np.fmin(t_hi, s_hi)
        else:
            lo, hi = t_lo, t_hi
        if n == cap:  # the cap's look: the 20%-trimmed t at the t's level too
            y_lo, y_hi = trimmed_t(d[:, :n], 1 - 2 * t_level)
            lo, hi = np.fmax(lo, y_lo), np.fmin(hi, y_hi)
        apart = lo > hi
        lo, hi = np.where(apart, np.nan, lo), np.where(apart, np.nan, hi)
        looking = np.ones(rows, dtype=bool) if through else going
        held &= ~(looking & ~np.isnan(lo) & ((lo > truth) | (hi < truth)))
        held_upper &= ~(looking & ~np.isnan(hi) & (hi < truth))
        said = _decide(lo, hi, band, question, margin)
        first_word = np.where((first_word == UNDECIDED) & going, said, first_word)
        with np.errstate(invalid="ignore"):
            precise = (hi - m <= width) & (m - lo <= width)  # nan (unbounded): never
        ends = (said != UNDECIDED) & precise
        now = going & (ends | (n == cap))
        short = now & ~ends & (first_word != UNDECIDED)  # at the cap: decided once, never that precise
        word = np.where(short, first_word, said)
        stop[now], verdict[now], lo_at[now], hi_at[now] = n, word[now], lo[now], hi[now]
        imprecise |= short
        going &= ~now
        if not going.any() and not through:
            break
    return Outcome(stop, verdict, lo_at, hi_at, held, held_upper, imprecise if precision is not None else None)


# --- the rule it replaced: the t-mixture valid for ever (2%), the signs (0.5%), the cap's 97.5% trimmed t
MIX_GRID = (0.1, 1.0, 10.0, 100.0)


def _log_mixture(t2: float, n: int) -> float:
    nu = n - 1
    terms = [-0.5 * math.log(1.0 + n * g) + 0.5 * n * (math.log1p(t2 / nu) - math.log1p(t2 / (nu * (1.0 + n * g))))
             for g in MIX_GRID]
    top = max(terms)
    return top + math.log(sum(math.exp(v - top) for v in terms) / len(terms))


@functools.lru_cache(maxsize=None)
def mixture_bound(n: int, alpha: float = 0.02) -> float:
    """sqrt(T^2_n): the t at which the mixture reached 1/alpha after n rounds (inf: never)."""
    target = math.log(1.0 / alpha)
    if sum(math.exp(0.5 * (n - 1) * math.log(1.0 + n * g)) for g in MIX_GRID) / len(MIX_GRID) <= 1.0 / alpha:
        return math.inf
    lo, hi = 0.0, 1.0
    while _log_mixture(hi, n) < target:
        lo, hi = hi, 2.0 * hi
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _log_mixture(mid, n) < target else (lo, mid)
    return math.sqrt(hi)


@functools.lru_cache(maxsize=None)
def mixture_sign_rank(n: int, alpha: float = 0.005) -> int:
    target = math.log(1.0 / alpha)
    for k in range(0, n // 2 + 1):
        factor = (math.lgamma(0.5 + k) + math.lgamma(0.5 + n - k) - math.lgamma(1.0 + n) - 2 * math.lgamma(0.5)
                  + n * math.log(2.0))
        if factor < target:
            return k
    return 0


def trimmed_t(d: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The 20%-trimmed Tukey-McLaughlin interval of each row at two-sided `level` (log space)."""
    n = d.shape[1]
    g = int(C.TRIM * n)
    h = n - 2 * g
    x = np.sort(d, axis=1)
    m = x[:, g:n - g].mean(axis=1)
    w = np.clip(x, x[:, [g]], x[:, [n - g - 1]])
    sw2 = w.var(axis=1, ddof=1)
    half = R.t_quantile(0.5 + level / 2, h - 1) * np.sqrt((n - 1) * sw2 / (h * (h - 1)))
    return m - half, m + half


def run_before(d: np.ndarray, first: int, cap: int, band: float = 0.02, truth: float = 0.0) -> Outcome:
    """The rule before this one, on the same rounds: stopped at its first deciding look, else the
    97.5% trimmed-t interval at the cap."""
    rows = d.shape[0]
    mean, sd = _moments(d)
    stop, verdict = np.full(rows, cap), np.full(rows, UNDECIDED)
    lo_at, hi_at = np.full(rows, np.nan), np.full(rows, np.nan)
    held, going = np.ones(rows, dtype=bool), np.ones(rows, dtype=bool)
    held_upper = np.ones(rows, dtype=bool)
    for n in range(first, cap + 1):
        m, s = mean[:, n - 1], sd[:, n - 1]
        q = mixture_bound(n)
        t_lo = np.where((s > 0) & np.isfinite(q), m - q * s / math.sqrt(n), np.nan)
        t_hi = np.where((s > 0) & np.isfinite(q), m + q * s / math.sqrt(n), np.nan)
        k = mixture_sign_rank(n)
        lo, hi = t_lo, t_hi
        if k:
            ordered = np.sort(d[:, :n], axis=1)
            lo, hi = np.fmax(t_lo, ordered[:, k - 1]), np.fmin(t_hi, ordered[:, n - k])
        apart = lo > hi
        lo, hi = np.where(apart, np.nan, lo), np.where(apart, np.nan, hi)
        held &= ~(going & ~np.isnan(lo) & ((lo > truth) | (hi < truth)))
        held_upper &= ~(going & ~np.isnan(hi) & (hi < truth))
        said = _decide(lo, hi, band, "claim", None)
        if n == cap:
            c_lo, c_hi = trimmed_t(d[:, :n], 0.975)
            said = np.where(said == UNDECIDED, _decide(c_lo, c_hi, band, "claim", None), said)
            lo, hi = np.where(np.isnan(lo), c_lo, lo), np.where(np.isnan(hi), c_hi, hi)
        now = going & ((said != UNDECIDED) | (n == cap))
        stop[now], verdict[now], lo_at[now], hi_at[now] = n, said[now], lo[now], hi[now]
        going &= ~now
        if not going.any():
            break
    return Outcome(stop, verdict, lo_at, hi_at, held, held_upper)


def oracle(d: np.ndarray, band: float = 0.02, question: str = "claim", margin: float | None = None,
           words: tuple[str, ...] = ("improved", "regressed", "equal"), upto: int = C.MAX_ROUNDS) -> tuple[int, float]:
    """A fixed-sample t test told the count: the fewest rounds n at which its 95% interval (one-sided
    95% bounds for a one-sided question) gives one of `words` in at least half the campaigns, as a
    campaign told n in advance would run them; (n, the share that gave one of the words there)."""
    level = 0.95 if question == "claim" else 0.90
    mean, sd = _moments(d)
    codes = [VERDICT_CODES[w] for w in words]
    for n in range(2, min(upto, d.shape[1]) + 1):
        half = R.t_quantile(0.5 + level / 2, n - 1) * sd[:, n - 1] / math.sqrt(n)
        said = _decide(mean[:, n - 1] - half, mean[:, n - 1] + half, band, question, margin)
        share = float(np.isin(said, codes).mean())
        if share >= 0.5:
            return n, share
    return upto + 1, float("nan")


def normal_rounds(rng: np.random.Generator, campaigns: int, rounds: int, effect: float, spread: float) -> np.ndarray:
    """Per-round log ratios: log(effect) plus normal noise of sd `spread` (the per-round spread)."""
    return math.log(effect) + spread * rng.standard_normal((campaigns, rounds))


def family(rng: np.random.Generator, families: int, rounds: int, effects: list[float], round_sd: float,
           item_sd: float) -> np.ndarray:
    """(families, rounds, members) per-round log ratios of a suite: each benchmark's effect, a
    round's run-level noise shared by all its benchmarks (both runs of the round ran them all) and
    each benchmark's own."""
    shared = round_sd * rng.standard_normal((families, rounds, 1))
    own = item_sd * rng.standard_normal((families, rounds, len(effects)))
    return np.log(np.asarray(effects))[None, None, :] + shared + own


@dataclass
class FamilyOutcome:
    """Per family: the round it stopped at, each benchmark's verdict and decision round (0: none), and
    the benchmark-rounds it ran (each round times the benchmarks still undecided in it); held: every
    benchmark's interval at its stop held its true effect (a one-sided question: its upper bound)."""
    stop: np.ndarray
    verdicts: np.ndarray
    decided_at: np.ndarray
    member_rounds: np.ndarray
    held: np.ndarray


def run_family(d: np.ndarray, first: int, cap: int, band: float = 0.02, question: str = "claim",
               margin: float | None = None, members_alpha: int | None = None,
               effects: list[float] | None = None) -> FamilyOutcome:
    """A suite campaign (analysis.family_section): each benchmark its own looks at alpha / members
    until it decides, the family stopped when all have (or at the cap). members_alpha: the count
    alpha is shared by (default: the members; 1: each benchmark alone at the whole alpha)."""
    families, rounds, members = d.shape
    plan = R.design(first, cap, question, members if members_alpha is None else members_alpha)
    flat = d.transpose(0, 2, 1).reshape(families * members, rounds)[:, :cap]
    out = run(flat, plan, band, question, margin)
    verdicts = out.verdict.reshape(families, members)
    decided = np.where(out.verdict != UNDECIDED, out.stop, 0).reshape(families, members)
    stop = np.where((decided > 0).all(axis=1), decided.max(axis=1), cap)
    member_rounds = np.where(decided > 0, decided, stop[:, None]).sum(axis=1)
    truth = np.tile(np.log(np.asarray(effects if effects is not None else [1.0] * members)), families)
    lo, hi = out.lo, out.hi
    missed = (~np.isnan(lo) & ((lo > truth) | (hi < truth))) if question == "claim" else (~np.isnan(hi) & (hi < truth))
    return FamilyOutcome(stop, verdicts, decided, member_rounds, ~missed.reshape(families, members).any(axis=1))


def false_claims(verdicts: np.ndarray, effects: list[float], band: float = 0.02) -> np.ndarray:
    """Per family, whether some benchmark's verdict is false for its true effect: improved when it
    is not below 1 - band, regressed when not above 1 + band, equal when outside the band."""
    e = np.asarray(effects)[None, :]
    wrong = ((verdicts == VERDICT_CODES["improved"]) & (e >= 1 - band)) \
        | ((verdicts == VERDICT_CODES["regressed"]) & (e <= 1 + band)) \
        | ((verdicts == VERDICT_CODES["equal"]) & ((e < 1 - band) | (e > 1 + band)))
    return wrong.any(axis=1)
