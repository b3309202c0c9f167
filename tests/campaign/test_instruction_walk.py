"""The walks on a real instruction-counting bundle (issue 26, item 1): the demo campaign with
metrics [wall, instructions] under valgrind, its instruction records walked field by field and
level by level, each mutation refused by the checkers its rule names; and the review's forgery,
the base's counts x60 re-derived into comparison.json, refused as more than a core retires in
the items' walls. (tests/unit/test_walks.py walks fake instruction records in seconds.)"""
from __future__ import annotations

import json
import shutil

import pytest

from checks_support import misses
from conftest import CAMPAIGNS, ROOT, harness
from harness import contract as C, rehash
from harness import rules as R
from harness.judge import verify
from harness.selftest import closedworld, fieldwalk, tamper

pytestmark = pytest.mark.skipif(shutil.which("valgrind") is None,
                                reason="valgrind is not installed (sudo apt-get install valgrind)")


@pytest.fixture(scope="module")
def counted(tmp_path_factory):
    out = tmp_path_factory.mktemp("counted") / "bundle"
    result = harness("run", CAMPAIGNS / "demo_instructions.yaml", "--rounds", "5", "--out", out, timeout=1800)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    return out


def test_every_field_and_level_of_real_instruction_records_is_bound(counted):
    results = fieldwalk.run(counted, repo=ROOT, only=lambda m: m.doc == "instructions"
                            or m.field.startswith("instructions"))
    assert {m.doc for m in results} == {"instructions", "comparison", "campaign"}
    assert not misses(results), misses(results)
    closed = closedworld.run(counted, only=lambda m: m.doc == "instructions" or "instructions" in m.where)
    assert closed and not misses(closed), misses(closed)


def test_base_counts_times_sixty_are_refused(counted, tmp_path):
    forged = shutil.copytree(counted, tmp_path / "forged")
    base = [label for label, variant, *_ in R.schedule("", "ABBA") if variant == "base"]
    for label in base:
        tamper.edit_json(C.instructions_path(label), lambda r: r.update(instructions=r["instructions"] * 60))(forged)
    tamper.rederive(forged)
    tamper.reseal(forged)
    claimed = json.loads((forged / C.COMPARISON).read_text())["instructions"]
    assert claimed["ratio"] < 1 / 50  # what the forger wanted: the candidate 60x leaner
    for lines in (rehash.rehash(str(forged)).problems, verify.verify(forged).problems):
        assert any("[physics]" in line and "more than a core retires" in line for line in lines), lines
