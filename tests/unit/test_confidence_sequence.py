"""The interval valid at every look (contract.confidence_sequence): the t-mixture's sequence for
the mean, the signs' for the median, and their intersection, which the runner and both checkers
use to decide when a sequential campaign stops."""
from __future__ import annotations

import math
import random

from harness import contract as C


def test_t_sequence_is_centred_on_the_mean_and_unbounded_below_three_values():
    assert C.t_sequence([0.1, 0.2], C.SEQ_T_ALPHA) is None
    assert C.t_sequence([0.25, 0.25, 0.25], C.SEQ_T_ALPHA) is None  # no spread to scale by
    lo, hi = C.t_sequence([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], C.SEQ_T_ALPHA)
    assert math.isclose((lo + hi) / 2, 0.35) and lo < 0.0 < 0.7 < hi


def test_sign_sequence_is_two_order_statistics_once_the_signs_can_bound_it():
    first = next(n for n in range(1, 40) if C.sign_sequence(list(range(n)), C.SEQ_SIGN_ALPHA) is not None)
    # 2^n/(n+1)-ish is the most the signs can say after n values: 1/alpha = 200 needs about a dozen
    assert 8 <= first <= 14
    values = [random.Random(3).gauss(0.0, 1.0) for _ in range(40)]
    k = C._sign_rank(40, C.SEQ_SIGN_ALPHA)
    ordered = sorted(values)
    assert C.sign_sequence(values, C.SEQ_SIGN_ALPHA) == [ordered[k - 1], ordered[40 - k]]
    assert 1 <= k < 20


def test_an_outlier_moves_the_signs_by_one_rank_where_it_widens_the_mean():
    rng = random.Random(5)
    clean = [-0.10 + rng.gauss(0.0, 0.03) for _ in range(24)]
    spoiled = clean[:-2] + [0.6, -0.6]  # one slow spell on each side: a run 1.8x slower
    t_clean, t_spoiled = C.t_sequence(clean, C.SEQ_T_ALPHA), C.t_sequence(spoiled, C.SEQ_T_ALPHA)
    s_clean, s_spoiled = C.sign_sequence(clean, C.SEQ_SIGN_ALPHA), C.sign_sequence(spoiled, C.SEQ_SIGN_ALPHA)
    assert t_spoiled[1] - t_spoiled[0] > 3 * (t_clean[1] - t_clean[0])
    assert s_spoiled[1] - s_spoiled[0] < 1.5 * (s_clean[1] - s_clean[0])
    both = C.confidence_sequence(spoiled)
    assert both == [max(t_spoiled[0], s_spoiled[0]), min(t_spoiled[1], s_spoiled[1])]
    assert both[1] < math.log(1 - 0.02)  # decided: improved, past the 2% band, in 24 rounds


def test_the_intersection_decides_nothing_when_the_two_do_not_meet():
    # a strong skew (not what shuffled rounds give): the mean and the median part ways
    values = [0.0] * 55 + [1.0] * 15
    t, s = C.t_sequence(values, C.SEQ_T_ALPHA), C.sign_sequence(values, C.SEQ_SIGN_ALPHA)
    assert t is not None and s is not None and s[1] < t[0]
    assert C.confidence_sequence(values) is None and C.sequence_ratio(values) is None


def test_the_intersection_holds_the_centre_at_every_look():
    """Looked at after every round from the 4th to the 60th, with one run in ten 1.8x slower on
    either side: the centre must stay inside at every look in at least 1 - SEQ_ALPHA of the
    sequences (Ville's inequality and the union bound; 600 seeded sequences)."""
    rng, misses, sequences = random.Random(11), 0, 600
    for _ in range(sequences):
        d = []
        for _ in range(60):
            x = -0.05 + rng.gauss(0.0, 0.03)
            x += 0.59 * ((rng.random() < 0.1) - (rng.random() < 0.1))
            d.append(x)
        for n in range(4, 61):
            cs = C.confidence_sequence(d[:n])
            if cs is not None and not cs[0] <= -0.05 <= cs[1]:
                misses += 1
                break
    assert misses / sequences <= C.SEQ_ALPHA
