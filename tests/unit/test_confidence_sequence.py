"""The interval valid at every look (rules.confidence_sequence): a group-sequential design over
the looks first..cap (rules.design), the t's interval for the mean and the signs' for the
median at one nominal level each, and their intersection, which the runner and both checkers use
to decide when a sequential campaign stops."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

from harness import contract as C
from harness import rules as R

PLAN = R.design(4, 40)


def test_the_walk_recursion_gives_the_crossing_chance_a_simulation_measures():
    """The recursion (standard library) against 200,000 simulated random walks: the chance that
    some look after rounds 4..40 sees |S_n| > c sqrt(n), and one side of it."""
    rng = np.random.default_rng(7)
    walks = rng.standard_normal((200_000, 40)).cumsum(axis=1) / np.sqrt(np.arange(1, 41))
    z = walks[:, 3:]
    for sides, c in ((2, 2.6), (1, 2.4)):
        seen = float(((np.abs(z) if sides == 2 else z) > c).any(axis=1).mean())
        assert R._walk_exceeds(c, 4, 40, sides) == pytest.approx(seen, rel=0.03)


def test_the_pocock_bound_spends_alpha_over_the_looks_between_one_look_and_bonferroni():
    c = R.walk_bound(4, 40, 0.04, 2)
    assert R._walk_exceeds(c, 4, 40, 2) == pytest.approx(0.04, rel=1e-5)
    one_look, bonferroni = R._z_above(0.02), R._z_above(0.04 / 2 / 37)
    assert one_look < c < bonferroni
    assert 2.7 < c < 2.85  # Pocock's constant for 37 looks spaced 4..40 (simulation: 2.768)
    assert R.walk_bound(4, 12, 0.04, 2) < c < R.walk_bound(4, 100, 0.04, 2)  # more looks, a higher bar


def test_the_sign_level_is_exact_and_the_largest_that_keeps_alpha():
    level = R.sign_level(4, 40, 0.01, 2)
    assert 0 < R._sign_exceeds(level, 4, 40, 2) <= 0.01
    nxt = min(p for n in range(4, 41) for p in R._binomial_cdf(n)[:(n + 1) // 2] if p > level)
    assert R._sign_exceeds(nxt, 4, 40, 2) > 0.01
    assert R.sign_rank(40, level) > R.sign_rank(20, level) > 0 == R.sign_rank(6, level)


def test_t_sequence_is_centred_on_the_mean_and_unbounded_below_three_values():
    assert R.t_sequence([0.1, 0.2], PLAN) is None
    assert R.t_sequence([0.25, 0.25, 0.25], PLAN) is None  # no spread to scale by
    lo, hi = R.t_sequence([0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7], PLAN)
    assert math.isclose((lo + hi) / 2, 0.35) and lo < 0.35 < hi and hi - lo < 0.75


def test_the_design_is_tighter_than_the_mixture_it_replaced_where_small_effects_decide():
    """sqrt(T^2_n) of the t-mixture was 12.3, 7.1, 5.1, 4.2 at rounds 4, 6, 10, 20; the design's
    t multiplier over looks 4..40 (two-sided 4%) is far below from the sixth round on."""
    level = R.levels(PLAN)[0]
    q = {n: R.t_quantile(1 - level, n - 1) for n in (4, 6, 10, 20)}
    assert q[6] < 5.0 and q[10] < 3.8 and q[20] < 3.3  # 4.86, 3.74, 3.21
    assert q[4] < 12.3


def test_sign_sequence_is_two_order_statistics_once_the_signs_can_bound_it():
    first = next(n for n in range(1, 40) if R.sign_sequence(list(range(n)), PLAN) is not None)
    assert 7 <= first <= 12  # 2^-(n-1) must fall below the signs' nominal level
    values = [random.Random(3).gauss(0.0, 1.0) for _ in range(40)]
    k = R.sign_rank(40, R.levels(PLAN)[1])
    ordered = sorted(values)
    assert R.sign_sequence(values, PLAN) == [ordered[k - 1], ordered[40 - k]]
    assert 1 <= k < 20


def test_an_outlier_moves_the_signs_by_one_rank_where_it_widens_the_mean():
    rng = random.Random(5)
    clean = [-0.10 + rng.gauss(0.0, 0.03) for _ in range(24)]
    spoiled = clean[:-2] + [0.6, -0.6]  # one slow spell on each side: a run 1.8x slower
    t_clean, t_spoiled = R.t_sequence(clean, PLAN), R.t_sequence(spoiled, PLAN)
    s_clean, s_spoiled = R.sign_sequence(clean, PLAN), R.sign_sequence(spoiled, PLAN)
    assert t_spoiled[1] - t_spoiled[0] > 3 * (t_clean[1] - t_clean[0])
    assert s_spoiled[1] - s_spoiled[0] < 1.5 * (s_clean[1] - s_clean[0])
    both = R.confidence_sequence(spoiled, PLAN)
    assert both == [max(t_spoiled[0], s_spoiled[0]), min(t_spoiled[1], s_spoiled[1])]
    assert both[1] < math.log(1 - 0.02)  # decided: improved, past the 2% band, in 24 rounds


def test_the_intersection_decides_nothing_when_the_two_do_not_meet():
    # a strong skew (not what shuffled rounds give): the mean and the median part ways
    values = [0.0] * 55 + [1.0] * 15
    plan = R.design(4, 70)
    t, s = R.t_sequence(values, plan), R.sign_sequence(values, plan)
    assert t is not None and s is not None and s[1] < t[0]
    assert R.confidence_sequence(values, plan) is None and R.sequence_ratio(values, plan) is None


def test_a_one_sided_design_spends_its_alpha_on_each_side_apart_and_is_narrower():
    two, one = R.design(4, 20), R.design(4, 20, "not_slower")
    assert (two.alpha, two.sides) == (C.SEQ_ALPHA, 2) and (one.alpha, one.sides) == (C.QUESTION_ALPHA, 1)
    rng = random.Random(9)
    values = [rng.gauss(0.0, 0.05) for _ in range(12)]
    a, b = R.confidence_sequence(values, two), R.confidence_sequence(values, one)
    assert b[1] - b[0] < a[1] - a[0]
    family = R.design(4, 20, "claim", 12)
    assert family.alpha == pytest.approx(C.SEQ_ALPHA / 12)
    wide = R.confidence_sequence(values, family)
    assert wide[1] - wide[0] > a[1] - a[0]


def test_the_intersection_holds_the_centre_at_every_look():
    """Looked at after every round from the 4th to the 60th, with one run in ten 1.8x slower on
    either side: the centre must stay inside at every look in at least 1 - SEQ_ALPHA of the
    sequences (the design's level and the union bound; 600 seeded sequences)."""
    rng, misses, sequences = random.Random(11), 0, 600
    plan = R.design(4, 60)
    for _ in range(sequences):
        d = []
        for _ in range(60):
            x = -0.05 + rng.gauss(0.0, 0.03)
            x += 0.59 * ((rng.random() < 0.1) - (rng.random() < 0.1))
            d.append(x)
        for n in range(4, 61):
            cs = R.confidence_sequence(d[:n], plan)
            if cs is not None and not cs[0] <= -0.05 <= cs[1]:
                misses += 1
                break
    assert misses / sequences <= C.SEQ_ALPHA


@pytest.mark.parametrize("question,margin,lo,hi,word", [
    ("not_slower", 0.05, 0.97, 1.031, "not slower"),
    ("not_slower", 0.05, 1.06, 1.2, "regressed"),
    ("not_slower", 0.05, 1.0, 1.08, "inconclusive"),
    ("not_faster", 0.05, 0.96, 1.02, "not faster"),
    ("not_faster", 0.05, 0.5, 0.9, "improved"),
    ("claim", None, 0.5, 0.9, "improved"),
])
def test_decide_answers_the_question_the_campaign_asks(question, margin, lo, hi, word):
    verdict, reason = R.decide(lo, hi, 0.02, None, "x", None, question, margin)
    assert verdict == word
    if question != "claim":
        assert "5%" in reason


def test_a_gate_answer_the_run_level_ratio_contradicts_is_no_answer():
    verdict, reason = R.decide(0.97, 1.03, 0.02, 1.07, "x", None, "not_slower", 0.05)
    assert verdict == "inconclusive" and "run-level ratio" in reason


def test_a_family_decides_only_when_every_member_has_and_any_regression_is_the_word():
    assert R.family_verdict("claim", ["equal", "improved", "equal"]) == "improved"
    assert R.family_verdict("claim", ["equal", "equal"]) == "equal"
    assert R.family_verdict("claim", ["improved", "inconclusive"]) == "inconclusive"
    assert R.family_verdict("claim", ["improved", "inconclusive", "regressed"]) == "regressed"
    assert R.family_verdict("not_slower", ["not slower", "not slower"]) == "not slower"
    assert R.family_verdict("not_faster", ["not faster", "improved"]) == "improved"


def test_the_rule_says_how_many_rounds_it_expects_to_need():
    rng = random.Random(4)
    d = [-0.06 + rng.gauss(0.0, 0.08) for _ in range(10)]
    plan = R.design(4, 10)
    need = R.expected_rounds(d, plan, 0.02, None, "claim", 10)
    assert 10 < need <= C.MAX_ROUNDS
    # at that count, the mean's half-width reaches the distance to the band's edge
    m = sum(d) / len(d)
    s = math.sqrt(sum((v - m) ** 2 for v in d) / 9)
    gap = max(math.log(0.98) - m, m - math.log(1.02), min(m - math.log(0.98), math.log(1.02) - m))
    assert R.t_quantile(1 - R.levels(plan)[0], need - 1) * s / math.sqrt(need) <= gap
    assert R.expected_rounds([0.0, 0.0, 0.0], plan, 0.02, None, "claim", 3) is None  # no spread


def test_at_the_cap_the_trimmed_t_joins_and_a_stalled_host_can_still_decide():
    """One run in ten 1.8x slower on either side (a host that stalls): the plain t is wide for good;
    at the cap's look the 20%-trimmed t (at the t's level) joins the intersection, and is far
    narrower."""
    rng = random.Random(8)
    values = [-0.06 + rng.gauss(0.0, 0.02) + 0.59 * ((rng.random() < 0.1) - (rng.random() < 0.1)) for _ in range(30)]
    plan = R.design(4, 30)
    before = R.confidence_sequence(values[:29], plan)
    at_cap = R.confidence_sequence(values, plan)
    trimmed = R.trimmed_sequence(values, plan)
    assert trimmed is not None and at_cap == [max(at_cap[0], trimmed[0]), min(at_cap[1], trimmed[1])]
    t = R.t_sequence(values, plan)
    assert trimmed[1] - trimmed[0] < 0.5 * (t[1] - t[0]) and at_cap[1] - at_cap[0] < before[1] - before[0]
    assert R.confidence_sequence(values, R.design(4, 31)) != at_cap  # not the cap there: no trimmed t
