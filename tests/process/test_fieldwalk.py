"""Issue 20, item 1: every field of every record, receipt, bag-info line and manifest line
is declared once (rehash.FIELDS), and a field-walking mutation suite proves each declared
field bound: every mutation kind its type allows is refused by the checkers its rule names,
or the field (or that kind of it) is listed in rehash.UNBOUND with the reason."""
from __future__ import annotations

import json
import re
import time

from conftest import ROOT
from harness import rehash
from harness.selftest import fieldwalk, tamper
from harness.judge import verify


def test_every_bindable_field_is_bound(demo_bundle):
    results = fieldwalk.run(demo_bundle, repo=ROOT)
    misses = [(m.doc, m.field, m.kind, m.expect, m.line) for m in results if not m.caught]
    assert not misses, "\n".join(map(str, misses))
    cover = fieldwalk.coverage(results)
    # the records, receipts and tag files a demo bundle holds are all walked, every field bound
    assert {"run", "campaign", "runner", "cleanup", "environment", "revisions", "golden", "comparison",
            "bag-info", "manifest"} <= set(cover)
    for doc, row in cover.items():
        assert row["bound"] == row["bindable"], (doc, row)
    # each field got the kinds its value allows: a run's wall every numeric kind, timestamps shifted
    kinds = {(m.doc, m.field): set() for m in results}
    for m in results:
        kinds[(m.doc, m.field)].add(m.kind)
    assert set(fieldwalk.NUM_KINDS) <= kinds[("run", "wall_s")]
    assert {"shift+1h", "shift-1h", "shift+10y", "1e400"} <= kinds[("runner", "ended_at")]
    assert {"shift+10y"} <= kinds[("run", "worker_started_at")]
    # verify-only fields are exactly those of campaign.yaml and the repository
    assert {m.expect for m in results} == {"both", "verify", "repo", "free"}
    assert all(rehash.FIELDS[m.doc][m.field][1].startswith("campaign:") for m in results
               if m.expect == "verify" and m.field in rehash.FIELDS[m.doc])
    assert fieldwalk.summary(results)[-1].startswith(f"field walk: {len(results)} mutations, ")


def test_the_schema_is_the_shape_both_checkers_enforce():
    """The key sets `shaped` checks are read from FIELDS: one declaration."""
    assert rehash.RUN_KEYS == rehash.keys_of("run") and "timer" in rehash.RUN_KEYS
    assert rehash.ITEM_KEYS == {"id": "str", "wall_s": "num", "cpu_s": "num", "fields": "dict", "error": "dict?"}
    assert rehash.PROCESS_KEYS == {"started_at": "num", "ended_at": "num", "wall_s": "num"}
    assert set(rehash.PROC_KEYS) == {"pid", "create_time", "cmdline", "run", "role", "absent", "verified",
                                     "checked_at"}


def test_every_unbound_entry_names_a_declared_field_and_every_free_field_has_a_reason():
    kinds = set(fieldwalk.NUM_KINDS + fieldwalk.INT_KINDS + fieldwalk.TIME_KINDS + fieldwalk.ISO_KINDS
                + fieldwalk.STR_KINDS + ("set", "flip"))
    for (doc, entry), reason in rehash.UNBOUND.items():
        path, _, only = entry.partition("@")
        assert path in rehash.FIELDS[doc], entry
        assert not only or set(only.split(",")) <= kinds, entry
        assert reason and not reason.endswith("."), entry
    for doc, fields in rehash.FIELDS.items():
        for path, (_kind, rule) in fields.items():
            if rule.split(":")[0] == "free":
                assert (doc, path) in rehash.UNBOUND, (doc, path)


def test_readme_lists_what_no_checker_binds_from_the_one_list():
    readme = (ROOT / "README.md").read_text()
    block = fieldwalk.README_BLOCK.search(readme)
    assert block, "README.md lacks the generated unbound-fields block"
    assert block.group(2) == fieldwalk.unbound_markdown(), "regenerate: fieldwalk.update_readme()"


def test_forged_rounds_count_is_refused_at_once(demo_bundle):
    """10**18 rounds made both checkers build a 2e18-letter order (found by the walk: 8 GB, then
    no end); the order's length is compared first."""
    campaign = json.loads((demo_bundle / "data/campaign.json").read_text())
    campaign["rounds"] = 10 ** 18
    (demo_bundle / "data/campaign.json").write_text(json.dumps(campaign, indent=2))
    tamper.reseal(demo_bundle)
    started = time.monotonic()
    check = rehash.rehash(str(demo_bundle))
    assert any("[plan] order" in line and "shuffle of 1000000000000000000 rounds" in line for line in check.problems)
    assert verify.verify(demo_bundle).exit_code == 1
    assert time.monotonic() - started < 30


def test_gaps_the_walk_found_are_refused(demo_bundle, tmp_path):
    """Forgeries that passed both checkers before the walk: each now one line naming its rule."""
    def forged(edit, rel):
        import shutil

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

    def later_stage(r):
        next(iter(r["stages"].values()))["incl_cpu_s"] = 1e300

    cases = [
        (lambda r: r.update(timer="time"), "data/runs/B1.json", "[parsing] timer"),
        (lambda r: r["items"][0].update(id="series-99"), "data/runs/B1.json", "[plan] its item ids"),
        (lambda r: r["items"][0].update(wall_s=0.0), "data/runs/B1.json", "[physics] item"),
        (later_stage, "data/runs/Bs1.json", "inclusive CPU"),  # a stage run: timed runs carry no wrappers
        (lambda r: r["process"].update(wall_s=r["process"]["wall_s"] / 7), "data/runs/B1.json",
         "process wall does not fit"),
        (lambda c: next(p for p in c["processes"] if p["role"] == "worker").update(pid=1), records_cleanup(),
         "[ledger]"),
        (lambda c: next(p for p in c["processes"] if p["role"] == "worker").update(create_time=0), records_cleanup(),
         "was created at"),
        (lambda c: next(p for p in c["processes"] if p["role"] == "worker" and p["run"] == "A1").update(
            checked_at=c["processes"][0]["create_time"]), records_cleanup(), "[ledger]"),
        (lambda c: c.update(noise_floor="campaigns/x.json"), "data/campaign.json", "noise_floor and"),
        (lambda e: e.update(physical_cores=64), "data/environment.json", "physical_cores"),
        (lambda t: re.sub(r"Bagging-Date: \d{4}", "Bagging-Date: 2036", t), "bag-info.txt", "Bagging-Date"),
    ]
    for edit, rel, cause in cases:
        for problems in forged(edit, rel):
            assert any(cause in line for line in problems), (cause, problems)


def records_cleanup() -> str:
    return "data/receipts/cleanup.json"
