"""Differential tests of the candidate's `_common_prefix_length` against a linear oracle
(and the base loop), on str and on int lists. No timing assertions."""
from __future__ import annotations

import argparse
import copy
import json
import random

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from harness.plan.checkout import bench
span_prefix = bench("span-prefix")
from spanfind_support import ROOT, TREE, build_revisions

LENGTHS = [1, 2, 3, 7, 16, 31, 64, 129, 1025]


@pytest.fixture(scope="module")
def helper(tmp_path_factory):
    trees = build_revisions(tmp_path_factory.mktemp("span_prefix"))
    source = (trees["candidate"] / "spanfind" / "tokenize.py").read_bytes()
    return span_prefix.load_helper(source)


def check(helper, left, right):
    before = (copy.copy(left), copy.copy(right))
    expected = span_prefix.oracle(left, right)
    assert helper(left, right) == expected
    assert helper(right, left) == expected
    assert span_prefix.loop(left, right) == expected  # the base loop agrees too
    assert (left, right) == before  # inputs are never mutated


def test_empty_and_first_mismatch(helper):
    for empty in ("", []):
        check(helper, empty, empty)
    check(helper, "", "abc")
    check(helper, [], [1, 2])
    check(helper, "xbc", "abc")
    check(helper, [5, 1], [6, 1])
    check(helper, "a", "a")


@pytest.mark.parametrize("length", LENGTHS)
def test_every_boundary_str(helper, length):
    base = "".join(chr(0x61 + (i * 5) % 26) for i in range(length))
    check(helper, base, base)
    for cut in range(length + 1):
        check(helper, base[:cut], base)  # a prefix of the other
    for position in range(length):
        changed = base[:position] + "#" + base[position + 1:]
        check(helper, base, changed)


@pytest.mark.parametrize("length", LENGTHS)
def test_every_boundary_list(helper, length):
    def make():  # equal values, distinct int objects, as two encode calls give them
        return [151_000 + (i * 37) % 997 for i in range(length)]
    base = make()
    check(helper, base, make())
    for cut in range(length + 1):
        check(helper, base[:cut], make())
    for position in range(length):
        changed = make()
        changed[position] = -1
        check(helper, base, changed)


def test_unicode(helper):
    check(helper, "\u00e9", "e\u0301")  # precomposed vs combining: differ at once
    check(helper, "caf\u00e9 au lait", "cafe\u0301 au lait")
    rocket = "\U0001F680" * 300
    check(helper, rocket + "a", rocket + "b")
    check(helper, rocket, rocket + "\U0001F680")
    family = "\U0001F468\u200d\U0001F469\u200d\U0001F467"
    check(helper, family * 50 + "x", family * 49 + "\U0001F468\u200d\U0001F469")
    check(helper, "\u6f22\u5b57" * 200 + "\U00010000", "\u6f22\u5b57" * 200 + "\U0010FFFF")


def test_big_ints(helper):
    big = [2**65, -(2**65), 2**65 + 1, -(2**65) - 1] * 300
    other = [int(str(x)) for x in big]  # same values, new objects
    check(helper, big, other)
    for position in (0, 1, 2, 511, 1199):
        changed = list(other)
        changed[position] = -changed[position]
        check(helper, big, changed)


def test_seeded_random_pairs(helper):
    rng = random.Random(20260917)
    for _ in range(3000):
        n = rng.choice([0, 1, 2, 5, 17, 100, 700])
        common = rng.randint(0, n)
        alphabet = rng.choice(["ab", "abc\u00e9", "\U0001F680x"])
        head = "".join(rng.choice(alphabet) for _ in range(common))
        left = head + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        right = head + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        check(helper, left, right)
        check(helper, [ord(c) * 1000 for c in left], [ord(c) * 1000 for c in right])


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80), st.text(max_size=20), st.text(max_size=20))
def test_property_str(helper, head, a, b):
    check(helper, head + a, head + b)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=-(2**70), max_value=2**70), max_size=80),
       st.lists(st.integers(-3, 3), max_size=10), st.lists(st.integers(-3, 3), max_size=10))
def test_property_list(helper, head, a, b):
    check(helper, head + a, [int(x) for x in head] + b)


def test_microbench_reports_every_case(tmp_path, monkeypatch):
    monkeypatch.setattr(span_prefix, "MIN_REPEAT_S", 0.0)
    parser = argparse.ArgumentParser()
    span_prefix.add_arguments(parser)
    out = tmp_path / "mb.json"
    args = parser.parse_args(["--sizes", "0", "16", "--repeats", "1", "--json", str(out)])
    assert span_prefix.main(args) == 0
    result = json.loads(out.read_text())
    assert len(result["source_sha256"]) == 64
    cases = {(c["kind"], c["size"]) for c in result["cases"]}
    assert cases == {("str", 0), ("str", 16), ("list", 0), ("list", 16)}
    assert all(c["loop_us"] > 0 and c["helper_us"] > 0 for c in result["cases"])
    # The source timed is the candidate revision's file, exactly as the campaign fences it.
    fence = yaml.safe_load((ROOT / "campaigns" / "span_finding.yaml").read_text())["candidate"]["fence"]
    assert result["source_sha256"] == fence["spanfind/tokenize.py"]


def test_microbench_loads_only_the_helper(tmp_path):
    # Nothing but the helper runs: a module-level import that would fail is never executed.
    poison = b"import abba_module_that_does_not_exist\n"
    candidate = build_revisions(tmp_path)["candidate"] / "spanfind" / "tokenize.py"
    helper = span_prefix.load_helper(poison + candidate.read_bytes())
    assert helper("abcd", "abxy") == 2
    with pytest.raises(SystemExit):  # the base revision has no helper
        span_prefix.load_helper(poison + (TREE / "spanfind" / "tokenize.py").read_bytes())
