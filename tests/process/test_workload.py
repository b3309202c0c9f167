"""The workload folder in the bundle: stored at the campaign's start with a receipt, held to
it by both checkers, to the repository by `verify --repo`, and a folder that changes while
the campaign runs fails the campaign."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, cache_env, harness, make_target, no_traceback, write_campaign
from harness import contract as C
from harness import outcomes
from harness import rehash, records
from harness.selftest import tamper
from harness.plan import workload
from harness.files import read_json
from harness.judge.verify import verify


def checkers(bundle: Path, repo: Path | None = None) -> tuple[list[str], list[str]]:
    report = verify(bundle, repo)
    return report.problems + ([report.unusable] if report.unusable else []), rehash.rehash(str(bundle)).problems


# --- the snapshot ----------------------------------------------------------------------------
def test_snapshot_keeps_regular_files_and_skips_byte_code(tmp_path):
    (tmp_path / "pkg" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pkg" / "__pycache__" / "mod.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "pkg" / "mod.py").write_text("X = 1\n")
    (tmp_path / "stale.pyc").write_bytes(b"\0")
    (tmp_path / "bench.py").write_text("import pkg\n")
    files = workload.snapshot(tmp_path)
    assert [rel for rel, _ in files] == ["bench.py", "pkg/mod.py"]
    rows = workload.rows(files)
    assert rows[1] == {"path": "pkg/mod.py", "size": 6, "sha256": __import__("hashlib").sha256(b"X = 1\n").hexdigest()}
    # the digest is coreutils' sha256sum listing of the folder, hashed
    listing = subprocess.run("find . -type f ! -name '*.pyc' -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 sha256sum",
                             shell=True, cwd=tmp_path, capture_output=True, check=True).stdout
    assert workload.digest(rows) == __import__("hashlib").sha256(listing).hexdigest()


def test_snapshot_refuses_links_and_bounds(tmp_path, monkeypatch):
    (tmp_path / "bench.py").write_text("x\n")
    (tmp_path / "elsewhere.py").symlink_to("/etc/passwd")
    with pytest.raises(workload.WorkloadError, match="elsewhere.py: a symlink"):
        workload.snapshot(tmp_path)
    (tmp_path / "elsewhere.py").unlink()
    monkeypatch.setattr(workload, "MAX_FILES", 0)
    with pytest.raises(workload.WorkloadError, match="more than 0 files"):
        workload.snapshot(tmp_path)
    monkeypatch.setattr(workload, "MAX_FILES", 10)
    monkeypatch.setattr(workload, "MAX_BYTES", 1)
    with pytest.raises(workload.WorkloadError, match="larger than 1 bytes"):
        workload.snapshot(tmp_path)


def test_snapshot_leaves_out_the_campaigns_own_output(tmp_path):
    (tmp_path / "bench.py").write_text("x\n")
    out = tmp_path / "out"
    (out / "data").mkdir(parents=True)
    (out / "data" / "x.json").write_text("{}")
    (tmp_path / f"out.partial-{os.getpid()}").mkdir()
    (tmp_path / ".out.lock").write_text("1\n")
    assert [rel for rel, _ in workload.snapshot(tmp_path, workload.excluded(tmp_path, out))] == ["bench.py"]
    assert workload.excluded(tmp_path, tmp_path.parent / "elsewhere") == ()


# --- the bundle ------------------------------------------------------------------------------
def test_the_bundle_stores_the_workload_and_every_run_its_digest(demo_bundle):
    receipt = read_json(demo_bundle / C.WORKLOAD)
    stored = sorted(p.relative_to(demo_bundle / "data" / "workload").as_posix()
                    for p in (demo_bundle / "data" / "workload").rglob("*") if p.is_file())
    assert receipt["path"] == "campaigns/workloads" and [r["path"] for r in receipt["files"]] == stored
    assert "demo_workload.py" in stored
    assert (demo_bundle / "data/workload/demo_workload.py").read_bytes() == \
        (ROOT / "campaigns/workloads/demo_workload.py").read_bytes()
    labels = read_json(demo_bundle / C.CAMPAIGN_JSON)["labels"]
    assert {read_json(demo_bundle / C.run_path(label))["workload_sha256"] for label in labels} == \
        {receipt["digest"]}


@pytest.mark.parametrize("forgery, named", [
    (lambda root: (root / "data/workload/demo_workload.py").write_text("# not what ran\n"),
     "data/workload/demo_workload.py: [files] 15 bytes"),
    (lambda root: (root / "data/workload/extra.py").write_text("x = 1\n"),
     "data/workload/extra.py: [files] stored under data/workload/ but not listed"),
    (lambda root: (root / "data/workload/demo_workload.py").unlink(),
     "[files] files[1]: demo_workload.py is not stored under data/workload/"),
])
def test_both_checkers_hold_the_stored_files_to_the_receipt(demo_bundle, forgery, named):
    forgery(demo_bundle)
    tamper.reseal(demo_bundle)
    for problems in checkers(demo_bundle):
        assert any(named in line for line in problems), problems


def test_a_receipt_rewritten_to_match_edited_files_is_refused_by_the_runs_digests(demo_bundle):
    path = demo_bundle / "data/workload/demo_workload.py"
    path.write_text(path.read_text() + "# edited after the campaign\n")
    receipt = read_json(demo_bundle / C.WORKLOAD)
    row = next(r for r in receipt["files"] if r["path"] == "demo_workload.py")
    row.update(size=path.stat().st_size, sha256=__import__("hashlib").sha256(path.read_bytes()).hexdigest())
    receipt["digest"] = workload.digest(receipt["files"])
    (demo_bundle / C.WORKLOAD).write_text(json.dumps(receipt, indent=2) + "\n")
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    for problems in checkers(demo_bundle):
        assert any("receipts/workload.json: [identity]" in line and "imported from a folder" in line
                   for line in problems), problems


def test_a_bundle_of_the_previous_format_is_refused_with_one_line(demo_bundle):
    campaign = read_json(demo_bundle / C.CAMPAIGN_JSON)
    old = campaign["schema"] = C.SCHEMAS["campaign"].rsplit("/v", 1)[0] + "/v4"  # an older campaign schema
    (demo_bundle / C.CAMPAIGN_JSON).write_text(json.dumps(campaign, indent=2) + "\n")
    tamper.reseal(demo_bundle)
    for problems in checkers(demo_bundle):
        assert problems == [f'data/campaign.json: [parsing] schema "{old}": this checker reads '
                            f'{C.SCHEMAS["campaign"]} only; a bundle of another version of the harness is not judged '
                            'by other rules: re-run its campaign with this harness (`harness run` of the campaign file '
                            'at its campaign_path)'], problems


# --- verify --repo -----------------------------------------------------------------------------
@pytest.fixture
def clone(tmp_path) -> Path:
    """The repository's campaigns folder in a git repository of its own (the demo's anchors)."""
    repo = tmp_path / "clone"
    shutil.copytree(ROOT / "campaigns", repo / "campaigns")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def test_verify_repo_names_a_workload_file_that_differs_or_is_missing(demo_bundle, clone):
    problems, _ = checkers(demo_bundle, clone)
    assert problems == [], problems
    (clone / "campaigns/workloads/demo_workload.py").write_text("# changed since\n")
    (clone / "campaigns/workloads/noise_workload.py").unlink()
    (clone / "campaigns/workloads/new_file.py").write_text("# gained since: not the bundle's business\n")
    problems, _ = checkers(demo_bundle, clone)
    assert len(problems) == 2, problems
    assert problems[0].startswith("data/workload/demo_workload.py: [anchors] differs from ")
    assert problems[1].startswith("data/workload/noise_workload.py: [anchors] missing or unreadable in the repository")


# --- the folder changes while the campaign runs ---------------------------------------------------
CHANGING_WORKLOAD = '''
    """Writes into its own folder during the first run: the next run imports another folder."""
    from pathlib import Path

    import numpy as np


    class Bench:
        items = ["one"]

        def run(self, item):
            return {"x": np.zeros(1)}


    def setup(ctx):
        if not ctx.label.startswith("check:"):
            (Path(__file__).parent / "state.py").write_text(f"# written by {ctx.label}\\n")
        return Bench()
'''


def test_a_workload_folder_that_changes_during_the_campaign_fails_it(tmp_path):
    """Unsandboxed (`sandbox: off`), a workload can write into the folder the runs import from (the
    workers' copy of it): the digest each run takes of it before any import tells, and the campaign
    fails. Sandboxed, that copy is read-only to them: the write itself fails the run."""
    tree, patch = make_target(tmp_path, {"pkg/__init__.py": "X = 1\n"}, {"pkg/__init__.py": "X = 2\n"})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "changing.py").write_text(textwrap.dedent(CHANGING_WORKLOAD))
    campaign = write_campaign(tmp_path / "confined.yaml", tree, patch, workloads, "changing:setup", order="ABBA")
    out = tmp_path / "confined"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    if read_json(out / C.ENVIRONMENT)["sandbox"]["level"] in ("full", "partial"):
        assert result.returncode == outcomes.FAILED and "PermissionError" in result.stdout, result.stdout
    campaign = write_campaign(tmp_path / "changing.yaml", tree, patch, workloads, "changing:setup", order="ABBA",
                              sandbox="off")
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    # failed, and its runs cannot be tied to the stored folder: `run` verifies what it sealed and
    # says both (the checker cannot tell a changed folder from a forged digest, so it refuses)
    assert result.returncode == outcomes.PROBLEMS, result.stdout + result.stderr
    assert no_traceback(result)
    assert "status: failed (the workload folder changed during the campaign" in result.stdout
    assert "(the folder changed during the campaign, or the receipt is not its)" in result.stdout
    comparison = read_json(out / "data" / "comparison.json")
    assert comparison["status"] == "failed"
    assert "the workload folder changed during the campaign" in comparison["reason"]
    # the receipt holds the folder as it was before any run
    assert [r["path"] for r in read_json(out / C.WORKLOAD)["files"]] == ["changing.py"]
