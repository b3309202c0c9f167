"""Revisions: the bundled targets build to the same commit SHAs everywhere (the pins in
campaigns/demo.yaml), records carry the resolved SHA, exports hold exactly the revision's
files, fences are checked, and the scratch trees are gone after a run."""
from __future__ import annotations

import copy
import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import CAMPAIGNS, harness
from harness import records
from harness.plan import revisions, spec
from harness.files import read_json, sha256_file, tree_digest

SHA_LINE = re.compile(r"^([0-9a-f]{40})  tree ([0-9a-f]{16})  (.*)$")


def target_listing(campaign: Path, env) -> tuple[str, list[tuple[str, str, str]]]:
    result = harness("target", campaign, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("repository: ")
    rows = [SHA_LINE.match(line).groups() for line in lines[1:]]
    return lines[0].split(": ", 1)[1], rows


def test_demo_target_builds_to_the_pinned_shas(tmp_path):
    pins = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    env_a = {**os.environ, "ABBA_HARNESS_CACHE": str(tmp_path / "a")}
    env_b = {**env_a, "ABBA_HARNESS_CACHE": str(tmp_path / "b")}
    repo_a, rows_a = target_listing(CAMPAIGNS / "demo.yaml", env_a)
    repo_b, rows_b = target_listing(CAMPAIGNS / "demo.yaml", env_b)
    assert Path(repo_a).is_relative_to(tmp_path / "a") and Path(repo_b).is_relative_to(tmp_path / "b")
    assert [sha for sha, _, _ in rows_a] == [pins["base"]["rev"], pins["candidate"]["rev"]]
    assert rows_a == rows_b  # two fresh builds: same SHAs, same tree digests
    assert [subject for _, _, subject in rows_a] == [step["message"] for step in pins["target"]["build"]]
    # The tree digest column is the digest of the base revision's files: the tree it was built from.
    clean = tmp_path / "clean"
    shutil.copytree(CAMPAIGNS / "demo" / "tree", clean, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    assert tree_digest(clean).startswith(rows_a[0][1])


@pytest.fixture
def demo_spec(tmp_path, monkeypatch) -> spec.Campaign:
    monkeypatch.setenv("ABBA_HARNESS_CACHE", str(tmp_path / "cache"))
    return spec.load(CAMPAIGNS / "demo.yaml")


def test_target_is_built_once_and_reused(demo_spec):
    repo = revisions.target_repo(demo_spec)
    head = (repo / ".git" / "HEAD").stat().st_mtime_ns
    assert revisions.target_repo(demo_spec) == repo
    assert (repo / ".git" / "HEAD").stat().st_mtime_ns == head
    assert [sha for sha, _ in revisions.commits(repo)] == [demo_spec.base.rev, demo_spec.candidate.rev]


def test_changed_build_input_gets_its_own_target(demo_spec, tmp_path):
    tree = tmp_path / "tree"
    shutil.copytree(CAMPAIGNS / "demo" / "tree", tree, ignore=shutil.ignore_patterns("__pycache__"))
    (tree / "demo" / "extra.py").write_text("X = 1\n")
    steps = (spec.BuildStep("tree", tree, "base"),)
    changed = copy.copy(demo_spec)
    object.__setattr__(changed, "target", spec.Target(repo=None, build=steps))
    assert revisions.target_repo(changed) != revisions.target_repo(demo_spec)


def test_resolve_commit_ish_to_full_sha(demo_spec):
    repo = revisions.target_repo(demo_spec)
    head = revisions.resolve(demo_spec, repo, spec.Revision("candidate", "HEAD"))
    assert head == demo_spec.candidate.rev
    assert revisions.resolve(demo_spec, repo, spec.Revision("base", "HEAD~1")) == demo_spec.base.rev
    assert revisions.resolve(demo_spec, repo, spec.Revision("base", demo_spec.base.rev[:10])) == demo_spec.base.rev
    with pytest.raises(spec.SpecError, match=r"base\.rev: commit 'nope' does not exist"):
        revisions.resolve(demo_spec, repo, spec.Revision("base", "nope"))


def test_export_holds_exactly_the_revision(demo_spec, tmp_path):
    repo = revisions.target_repo(demo_spec)
    m = revisions.materialize(demo_spec, repo, demo_spec.base, tmp_path / "scratch")
    files = sorted(str(p.relative_to(m.tree)) for p in m.tree.rglob("*") if p.is_file())
    assert files == ["demo/__init__.py", "demo/core.py"]
    assert (m.tree / "demo" / "core.py").read_bytes() == (CAMPAIGNS / "demo/tree/demo/core.py").read_bytes()
    assert m.sha == demo_spec.base.rev and m.tree_sha256 == tree_digest(m.tree)
    cand = revisions.materialize(demo_spec, repo, demo_spec.candidate, tmp_path / "scratch")
    assert "running" in (cand.tree / "demo" / "core.py").read_text()  # the patch applied


def test_fence_ok_is_recorded(demo_spec, tmp_path):
    repo = revisions.target_repo(demo_spec)
    digest = sha256_file(CAMPAIGNS / "demo/tree/demo/core.py")
    fenced = spec.Revision("base", demo_spec.base.rev, {"demo/core.py": digest})
    m = revisions.materialize(demo_spec, repo, fenced, tmp_path / "scratch")
    assert records.to_json(m.receipt().fence) == {"demo/core.py": {"sha256": digest, "ok": True}}
    wrong = spec.Revision("candidate", demo_spec.candidate.rev, {"demo/core.py": digest})  # patched: differs
    with pytest.raises(spec.SpecError, match=r"candidate\.fence\.demo/core\.py: source fence mismatch"):
        revisions.materialize(demo_spec, repo, wrong, tmp_path / "scratch2")


# --- from a real run (the probe campaigns in conftest) ---------------------------------

def test_records_carry_the_resolved_sha(probe_runs):
    run = probe_runs["ABBA"]
    assert run.result.returncode == 0, run.result.stderr
    _, rows = target_listing(run.campaign, run.env)
    base_sha, cand_sha = rows[0][0], rows[1][0]  # HEAD~1, HEAD
    data = run.out / "data"
    for label in ("A1", "B1", "B2", "A2"):
        assert read_json(data / "runs" / f"{label}.json")["sha"] == (base_sha if label[0] == "A" else cand_sha)
    receipt = read_json(data / "receipts" / "revisions.json")
    assert (receipt["base"]["rev"], receipt["base"]["sha"]) == ("HEAD~1", base_sha)
    assert (receipt["candidate"]["rev"], receipt["candidate"]["sha"]) == ("HEAD", cand_sha)
    assert read_json(data / "campaign.json")["revisions"] == {"base": {"rev": "HEAD~1", "sha": base_sha},
                                                             "candidate": {"rev": "HEAD", "sha": cand_sha}}
    info = (run.out / "bag-info.txt").read_text()
    assert f"Abba-Base-SHA: {base_sha}" in info and f"Abba-Candidate-SHA: {cand_sha}" in info


@pytest.mark.parametrize("order", ["ABBA", "ABBAABBA"])
def test_scratch_trees_are_removed_after_a_run(probe_runs, order):
    run = probe_runs[order]
    trees = {line for line in run.log.read_text().splitlines() if '"setup"' in line}
    assert trees
    for line in trees:
        assert not Path(yaml.safe_load(line)["tree"]).exists()
    assert list(run.scratch.iterdir()) == []  # TMPDIR of that run: nothing left behind
