"""The checkers' proof by construction, on fake-launcher bundles (issue 26, items 1 and 2): the
closed contract is one consistent declaration (every rule has a checker, every free field a
reason, every unbound kind a declared field, the docs' tables generated from it); the field walk
touches every declared field present in a bundle with every part (instruction records and a
reproduction receipt included) and each mutation is refused by the checkers its rule names; the
closed-world walk adds what the contract never declared at every level and in every folder, and
both checkers refuse it. tests/campaign/test_walks_every_bundle.py walks what each other kind of
bundle adds (beside the unit tier, untimed); tests/process/test_fieldwalk.py runs the whole walks
on real bundles."""
from __future__ import annotations

import re
import shutil

import pytest

from checks_support import full_bundle, misses
from conftest import ROOT
from harness import contract as C
from harness.selftest import closedworld, fieldwalk


# --- the contract is one consistent declaration -----------------------------------------------------
def all_fields():
    for doc, fields in list(C.FIELDS.items()) + [("bag-info", C.BAG_INFO_FIELDS)]:
        for path, field in fields.items():
            yield doc, path, field


def test_every_rule_a_field_names_has_a_checker():
    for doc, path, field in all_fields():
        words = [part.split(":", 1)[0].strip() for part in field.rule.split("; ") if ":" in part]
        assert fieldwalk.rule_word(field) in C.RULES, (doc, path, field.rule)
        assert all(w in C.RULES for w in words if re.fullmatch(r"[a-z-]+", w)), (doc, path, field.rule)
    assert {checker for checker, _ in C.RULES.values()} == set(fieldwalk.EXPECT)


def test_every_free_field_has_a_reason_and_every_reason_a_free_field():
    free = [(doc, path) for doc, path, field in all_fields() if fieldwalk.rule_word(field) == "free"]
    assert free
    for doc, path in free:
        assert fieldwalk.free_reason(doc, path), (doc, path)
    for (doc, path), reason in C.FREE.items():
        assert reason and not reason.endswith(".")
        assert any(d == doc and fieldwalk.free_reason(d, p) == reason for d, p in free), (doc, path)


def test_every_unbound_entry_names_a_bound_field_and_the_kinds_the_walk_makes():
    for (doc, entry), reason in C.UNBOUND.items():
        path, _, only = entry.partition("@")
        field = fieldwalk.fields_of(doc).get(path)
        assert field is not None and fieldwalk.rule_word(field) != "free", entry  # free fields are FREE's
        assert only and set(only.split(",")) <= fieldwalk.ALL_KINDS, entry
        assert reason and not reason.endswith("."), entry


def test_the_docs_tables_are_generated_from_the_contract():
    page = (ROOT / "docs" / "bundle-format.md").read_text()
    for name, body in fieldwalk.generated().items():
        block = fieldwalk.block_re(name).search(page)
        assert block, f"docs/bundle-format.md lacks the generated {name} block"
        assert block.group(2) == body, "regenerate: python -c 'from harness.selftest import fieldwalk; " \
                                       "fieldwalk.update_docs()'"
    rows = fieldwalk.fields_markdown().splitlines()[2:]
    assert len(rows) == sum(1 for _ in all_fields())
    assert "| run | `items[].cpu_s` | num 0..604800 | physics:" in fieldwalk.fields_markdown()


def test_update_docs_writes_the_blocks_into_a_page_and_keeps_the_rest(tmp_path):
    page = tmp_path / "docs" / "format.md"
    assert fieldwalk.update_docs(page) and not fieldwalk.update_docs(page)
    text = page.read_text().replace("# The bundle format\n", "# The bundle format\n\nThe lead's prose.\n")
    page.write_text(text.replace("| run | `metrics` |", "| run | `stale` |"))
    assert fieldwalk.update_docs(page)
    assert "The lead's prose." in page.read_text() and "| run | `stale` |" not in page.read_text()


# --- the field walk ---------------------------------------------------------------------------------
def test_the_field_walk_touches_every_declared_field_of_a_bundle_with_every_part(walk_bundles):
    """Each field present once (sample=1: a kind per field, rotating); every bindable mutation
    refused by the checkers its rule names."""
    bundle, _ = walk_bundles["full"]
    planned = {(m.doc, m.field) for m, _ in fieldwalk.plan(bundle) if m.expect != "repo"}  # no repository here
    results = fieldwalk.run(bundle, sample=1)
    assert not misses(results), misses(results)
    assert {(m.doc, m.field) for m in results} == planned
    docs = {m.doc for m in results}
    assert {"run", "campaign", "runner", "cleanup", "environment", "revisions", "inputs", "workload", "builds",
            "golden", "noise_floor", "comparison", "bag-info", "manifest"} <= docs
    # the leaves of the records a campaign with every part writes: nothing here is unknown
    assert ("run", "items[].error.message") in planned and ("revisions", "base.fence.*.sha256") in planned


def test_a_walk_without_the_original_leaves_the_receipts_other_side_out(walk_bundles):
    bundle, _ = walk_bundles["reproduction"]
    results = fieldwalk.run(bundle, sample=1, only=lambda m: m.doc == "reproduction")
    assert results and all(m.expect != "original" for m in results)


# --- the closed-world walk ----------------------------------------------------------------------------
def test_whatever_the_contract_does_not_declare_is_refused(walk_bundles):
    bundle, _ = walk_bundles["full"]
    results = closedworld.run(bundle)
    assert not misses(results), misses(results)
    kinds = {m.kind for m in results}
    assert kinds == {"key", "file", "bag-info", "manifest", "schema", "format"}
    # every folder of the bundle got an undeclared file, each refused by both
    folders = {m.rel.rsplit("/", 1)[0] if "/" in m.rel else "" for m in results if m.kind == "file"}
    assert {"", "data", "data/runs", "data/logs", "data/arrays", "data/receipts", "data/instructions",
            "data/workload"} <= folders
    # a key at every declared level of a run record, each refused by both checkers (closed levels)
    run_levels = {m.where for m in results if m.kind == "key" and m.rel == C.run_path("A1")}
    for level in ("(top level)", "items.0", "items.0.fields", "items.0.fields.out", "stages", "machine", "process",
                  "log", "python", "imported_from", "imported_from.stages"):
        assert any(f" at {level} " in w or w.endswith(f" at {level}") or f"map {level} " in w for w in run_levels), \
            (level, run_levels)
    assert all(m.verify and m.rehash for m in results if m.expect == "both")
    # every JSON kind of the bundle relabelled to its older schema id
    assert {m.doc for m in results if m.kind == "schema"} == {kind for kind, _ in closedworld.documents(bundle)}
    # maps the contract opens to the user are judged by the map's own rule
    free = [m for m in results if m.expect == "free"]
    assert free and all(m.doc in ("environment", "run", "golden") for m in free)
    verify_only = [m for m in results if m.expect == "verify"]
    assert any("map env" in m.where for m in verify_only) and any("map stages" in m.where for m in verify_only)


def test_a_walk_restores_its_copy_and_never_touches_the_bundle(walk_bundles, tmp_path):
    bundle, _ = walk_bundles["failed"]
    copy = shutil.copytree(bundle, tmp_path / "copy")
    before = {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()}
    closedworld.run(copy, only=lambda m: m.kind in ("file", "manifest"))
    fieldwalk.run(copy, sample=1, only=lambda m: m.doc == "runner")
    assert {p.relative_to(copy): p.read_bytes() for p in copy.rglob("*") if p.is_file()} == before


def test_the_fields_only_the_repository_binds(tmp_path):
    """A bundle made in a git repository: campaign_path, workload.path, golden, noise_floor and
    each tree digest, walked with verify --repo; the pinned noise-floor file edited in the
    repository afterwards is named as an anchor that no longer holds."""
    import subprocess

    from harness.judge.verify import verify

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    bundle = full_bundle(tmp_path)
    assert verify(bundle, repo=tmp_path).exit_code == 0
    results = fieldwalk.run(bundle, repo=tmp_path, only=lambda m: m.expect == "repo")
    assert {(m.doc, m.field) for m in results} >= {("campaign", "campaign_path"), ("campaign", "workload.path"),
                                                   ("campaign", "golden"), ("campaign", "noise_floor"),
                                                   ("revisions", "base.tree_sha256")}
    assert not misses(results), misses(results)
    (tmp_path / "floor.json").write_text((tmp_path / "floor.json").read_text() + "\n")
    report = verify(bundle, repo=tmp_path)
    assert report.problems == [f"{C.NOISE_FLOOR}: [anchors] differs from {tmp_path / 'floor.json'}"]
