"""The walks of tests/unit/test_walks.py on what each other kind of bundle adds to the one with
every part (issue 26, items 1 and 2): instruction runs (every mutation kind), a reproduction's
receipt, a comparison within max_ulp, a failed run, a family, a gate, a campaign of duets and one
that asked for a precision; and the closed world of instruction records and a receipt. Each
mutation is refused by the checkers its rule names. Untimed (no process, no clock): `make test`
runs it beside the unit tier, on every core; the unit tier keeps the walks of the full bundle."""
from __future__ import annotations

import pytest

from checks_support import misses
from harness.selftest import closedworld, fieldwalk

pytestmark = pytest.mark.untimed


@pytest.mark.parametrize("name, docs", [("instructions", ("instructions",)), ("reproduction", ("reproduction",)),
                                        ("ulp", ("comparison",)), ("failed", ("run", "comparison")),
                                        ("family", ("comparison",)), ("gate", ("comparison", "campaign")),
                                        ("duet", ("run", "campaign")), ("precise", ("comparison", "campaign"))])
def test_the_field_walk_on_what_each_other_bundle_adds(walk_bundles, name, docs):
    bundle, original = walk_bundles[name]
    results = fieldwalk.run(bundle, original=original, sample=None if name == "instructions" else 1,
                            only=lambda m: m.doc in docs)
    assert results and not misses(results), misses(results)
    expects = {m.expect for m in results}
    if name == "reproduction":
        assert {"both", "original"} <= expects  # its own side both checkers bind; the rest verify --original
    if name == "instructions":
        assert {m.kind for m in results if m.field == "instructions"} >= {"x7", "zero", "negative", "huge", "swap"}
    if name == "duet":  # a duet's own fields, each mutated: its run's core, the campaign's cores
        assert {("run", "launch.core"), ("campaign", "cores[]")} <= {(m.doc, m.field) for m in results}
    if name == "precise":  # the precision asked, each look's precise and the section's precision, each mutated
        assert {("campaign", "precision"), ("comparison", "stats.sequential.looks[].precise"),
                ("comparison", "stats.sequential.precision")} <= {(m.doc, m.field) for m in results}



@pytest.mark.parametrize("name, doc", [("instructions", "instructions"), ("reproduction", "reproduction")])
def test_the_closed_world_of_instruction_records_and_a_receipt(walk_bundles, name, doc):
    bundle, original = walk_bundles[name]
    results = closedworld.run(bundle, original=original, only=lambda m: m.doc == doc)
    assert results and not misses(results), misses(results)
    assert any(m.kind == "schema" for m in results)
