"""Issue 26, items 1 and 2, on real bundles: every declared field present in a demo bundle gets
every mutation its type allows, re-derived and re-sealed as a forger would, and each is refused
by the checkers its rule names (both, `verify`, `verify --repo`), unless the contract lists it
free or unbound with the reason; a reproduction made by `harness reproduce` has its receipt
walked the same way, its other side with `verify --original`; the closed-world walk refuses what
the contract never declared. (tests/unit/test_walks.py runs the walks on fake bundles with every
part; tests/campaign/test_instruction_walk.py on a real instruction-counting bundle.)"""
from __future__ import annotations

import json
import re
import shutil

import pytest

from checks_support import misses
from conftest import ROOT, harness
from harness import contract as C, rehash
from harness.judge import verify
from harness.selftest import closedworld, fieldwalk, tamper


def test_every_bindable_field_of_a_demo_bundle_is_bound(demo_bundle):
    results = fieldwalk.run(demo_bundle, repo=ROOT)
    assert not misses(results), "\n".join(map(str, misses(results)))
    cover = fieldwalk.coverage(results)
    assert {"run", "campaign", "runner", "cleanup", "environment", "revisions", "inputs", "workload", "golden",
            "comparison", "bag-info", "manifest"} <= set(cover)
    for doc, row in cover.items():
        assert row["bound"] == row["bindable"], (doc, row)
    kinds: dict = {}
    for m in results:
        kinds.setdefault((m.doc, m.field), set()).add(m.kind)
    assert set(fieldwalk.NUM_KINDS) <= kinds[("run", "wall_s")]
    assert {"shift+1h", "shift-1h", "shift+10y", "1e400"} <= kinds[("runner", "ended_at")]
    assert {"shift+10y"} <= kinds[("run", "worker_started_at")]
    # the checkers each rule names: both, campaign.yaml (verify), the repository (verify --repo)
    assert {m.expect for m in results} == {"both", "verify", "repo", "free"}
    for m in results:
        if m.expect == "verify" and m.field in C.FIELDS.get(m.doc, {}):
            assert C.RULES[fieldwalk.rule_word(C.FIELDS[m.doc][m.field])][0] == "verify", m.name
    assert fieldwalk.summary(results)[-1].startswith(f"field walk: {len(results)} mutations, ")


def test_the_closed_world_of_a_demo_bundle(demo_bundle):
    results = closedworld.run(demo_bundle, repo=ROOT)
    assert not misses(results), "\n".join(map(str, misses(results)))
    assert {m.kind for m in results} == {"key", "file", "bag-info", "manifest", "schema", "format"}
    assert closedworld.summary(results)[-1].startswith(f"closed-world walk: {len(results)} mutations")


@pytest.fixture
def reproduced(demo_bundle, tmp_path):
    """A reproduction of the demo bundle, made by `harness reproduce`."""
    again = tmp_path / "again"
    result = harness("reproduce", demo_bundle, "--repo", ROOT, "--out", again, timeout=600)
    assert result.returncode in (0, 8, 9, 7), result.stdout[-2000:] + result.stderr[-2000:]
    assert harness("verify", again, "--original", demo_bundle).returncode == 0
    return again


def test_a_reproduction_receipt_is_bound_on_both_sides(reproduced, demo_bundle):
    """Its own side by both checkers, the rest by `verify --original`: every leaf of the receipt
    walked, each refused; an undeclared key at every level of it too."""
    results = fieldwalk.run(reproduced, original=demo_bundle, only=lambda m: m.doc == "reproduction")
    assert results and not misses(results), "\n".join(map(str, misses(results)))
    assert {m.expect for m in results} == {"both", "original"}
    closed = closedworld.run(reproduced, original=demo_bundle, only=lambda m: m.doc == "reproduction")
    assert closed and not misses(closed), misses(closed)
    # on the command line: the receipt's verdict edited, then both bundles disagree with it
    tamper.edit_json(C.REPRODUCTION, lambda r: r.update(verdict="reproduced" if r["verdict"] != "reproduced"
                                                        else "not reproduced"))(reproduced)
    tamper.reseal(reproduced)
    assert harness("verify", reproduced).returncode == 0  # this bundle alone cannot tell
    result = harness("verify", reproduced, "--original", demo_bundle)
    assert result.returncode == 1 and "FAIL data/receipts/reproduction.json: [original] verdict claims" in result.stdout


def test_forged_rounds_count_is_refused_in_one_line(demo_bundle):
    """10**18 rounds made both checkers build a 2e18-letter order (found by the walk: 8 GB, then
    no end); the contract bounds the count before any rule reads it."""
    campaign = json.loads((demo_bundle / C.CAMPAIGN_JSON).read_text())
    campaign["rounds"] = 10 ** 18
    (demo_bundle / C.CAMPAIGN_JSON).write_text(json.dumps(campaign, indent=2))
    tamper.reseal(demo_bundle)
    for lines in (rehash.rehash(str(demo_bundle)).problems, verify.verify(demo_bundle).problems):
        assert lines == [f"{C.CAMPAIGN_JSON}: [parsing] rounds: 1000000000000000000 outside 1..{C.MAX_ROUNDS}"], lines


def _forged(demo_bundle, tmp_path, edit, rel):
    copy = tmp_path / f"b{len(list(tmp_path.iterdir()))}"
    shutil.copytree(demo_bundle, copy)
    if rel.endswith(".json"):
        obj = json.loads((copy / rel).read_text())
        edit(obj)
        (copy / rel).write_text(json.dumps(obj, indent=2))
        tamper.rederive(copy)
        tamper.reseal(copy)
    else:
        (copy / rel).write_text(edit((copy / rel).read_text()))
        tamper.reseal_tags(copy)
    return rehash.rehash(str(copy)).problems, verify.verify(copy).problems


def _worker(c, run=None):
    return next(p for p in c["processes"] if p["role"] == "worker" and (run is None or p["run"] == run))


@pytest.mark.parametrize("rel, edit, cause", [
    (C.run_path("B1"), lambda r: r.update(timer="time"), "[parsing] timer: not declared by the contract"),
    (C.run_path("B1"), lambda r: r["items"][0].update(id="series-99"), "[plan] items"),
    (C.run_path("B1"), lambda r: r["items"][0].update(wall_s=0.0), "[physics] item"),
    (C.run_path("Bs1"), lambda r: next(iter(r["stages"].values())).update(incl_cpu_s=1e5), "inclusive CPU"),
    (C.run_path("B1"), lambda r: r["process"].update(wall_s=r["process"]["wall_s"] / 7), "process wall does not fit"),
    (C.CLEANUP, lambda c: _worker(c).update(pid=1), "[ledger]"),
    (C.CLEANUP, lambda c: _worker(c).update(create_time=c["processes"][0]["create_time"] - 3600), "was created at"),
    (C.CLEANUP, lambda c: _worker(c, "A1").update(checked_at=_worker(c, "A1")["create_time"]), "[ledger]"),
    (C.CAMPAIGN_JSON, lambda c: c.update(noise_floor="campaigns/x.json"), "noise_floor and"),
    (C.ENVIRONMENT, lambda e: e.update(physical_cores=64), "physical_cores"),
    (C.BAG_INFO, lambda t: re.sub(r"Bagging-Date: \d{4}", "Bagging-Date: 2036", t), "Bagging-Date"),
])
def test_gaps_the_walk_found_are_refused(demo_bundle, tmp_path, rel, edit, cause):
    """Forgeries that passed both checkers before the walk: each now a line naming its rule."""
    for problems in _forged(demo_bundle, tmp_path, edit, rel):
        assert any(cause in line for line in problems), (cause, problems)
