"""Issue 33, item 4: a fleet does not believe its nodes. A bundle a node returns lands only when
it verifies here and is its job's: the job's campaign (name, campaign file, the file's digest as
sealed), the job's SHAs, for a reproduction the job's original; and the exit code and verdict are
re-derived here from the verified bundle, never taken from the node.

No Ray: the jobs are built as `fleet run` and `reproduce --fleet` build them
(commands/fleet.campaign_group, reproduction_group), the nodes' results are forged as
jobs.node_job returns them (a real bundle packed as a node packs it), and schedule.settle, the
step that handles every result Ray hands back, takes them. The bundles are real: the demo
bundle, and small campaigns of the faulty workload (seconds each) in a git repository of their
own, one with a parity mismatch."""
from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import CAMPAIGNS, ROOT, harness

sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "faulty"))
import faultlib  # noqa: E402

from harness import contract as C, outcomes  # noqa: E402
from harness.bundle import read  # noqa: E402
from harness.commands.fleet import campaign_group, reproduction_group  # noqa: E402
from harness.engine import environment  # noqa: E402
from harness.files import harness_source_digest  # noqa: E402
from harness.fleet import jobs, schedule  # noqa: E402

NODE = "ab" * 28  # a Ray node id
REPRODUCE_ARGV = ["reproduce", "{original}", "--repo", ".", "--out", "{out}"]


def on_node(*args, cwd: Path) -> subprocess.CompletedProcess:
    """`harness ARGS` as a fleet job runs it on NODE (the environment names the node)."""
    env = {**os.environ, environment.FLEET_NODE_ID: NODE, environment.FLEET_CLUSTER: "test:0"}
    return harness(*args, cwd=cwd, env=env, timeout=300)


def forged(bundle: Path, exit_code: int) -> jobs.NodeResult:
    """What jobs.node_job returns, with the node's word for the exit code."""
    now = time.time()
    data = jobs.pack(bundle)
    return jobs.NodeResult(node_id=NODE, hostname="node", started_at=now, submitted_at=now, repo=str(ROOT),
                           status="finished", exit_code=exit_code, tail=[], bundle=data, bundle_bytes=len(data),
                           run_s=1.0, pack_s=0.0, shipped=None, ended_at=now)


def settle(job: schedule.Job, result: jobs.NodeResult, out: Path, repo: Path) -> list:
    """schedule.settle with a finish that records what schedule.run's own would print."""
    said = []

    def finish(job, ok, cause=None, code=outcomes.FAILED, quiet=False):
        job.state, job.ok, job.cause, job.code = "done", ok, cause, code
        said.append((ok, cause))

    out.mkdir(parents=True, exist_ok=True)
    schedule.settle(job, result, 0.0, out, repo, harness_source_digest(), finish)
    return said


def landed(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.rglob(C.TAGMANIFEST))


@pytest.fixture(scope="module")
def faulty(tmp_path_factory) -> dict:
    """A git repository of small campaigns and their bundles, made on NODE: `faulty` (twice: two
    originals), `faulty` again in another file (`copy/faulty.yaml`, other params), a parity
    mismatch (`parity.yaml`), and a reproduction of the second `faulty` bundle."""
    repo = tmp_path_factory.mktemp("fleetrepo")
    faultlib.write_campaign(repo)
    (repo / "copy").mkdir()
    faultlib.write_campaign(repo / "copy")  # its own pids path: other bytes
    parity = faultlib.write_campaign(repo, name="parity", mismatch=True)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "campaigns"], cwd=repo, check=True)
    made = {"repo": repo, "parity_file": parity}
    for name, campaign, code in (("one", "faulty.yaml", 0), ("two", "faulty.yaml", 0),
                                 ("copy", "copy/faulty.yaml", 0), ("parity", "parity.yaml", outcomes.PARITY)):
        made[name] = repo.parent / f"{repo.name}-{name}"
        result = on_node("run", campaign, "--out", made[name], cwd=repo)
        assert result.returncode == code, result.stdout + result.stderr
    made["repro"] = repo.parent / f"{repo.name}-repro"
    result = on_node("reproduce", made["two"], "--repo", ".", "--out", made["repro"], cwd=repo)
    assert result.returncode in outcomes.REPRODUCTION_CODES.values(), result.stdout + result.stderr
    made["repro_code"] = result.returncode
    return made


# --- (a) a genuine bundle of another campaign ----------------------------------------------------
def test_a_bundle_of_another_campaign_is_refused(demo_bundle, tmp_path):
    out = tmp_path / "out"
    (job,) = campaign_group(CAMPAIGNS / "demo_instructions.yaml", ROOT, out, 1).jobs
    said = settle(job, forged(demo_bundle, outcomes.OK), out, ROOT)
    assert said == [(False, f"does not match its job: {C.CAMPAIGN_JSON} name is 'demo', the job ran campaign "
                            "'demo_instructions'; nothing landed")]
    assert job.code == outcomes.PROBLEMS and schedule.exit_code([job]) == outcomes.PROBLEMS
    assert landed(out) == []
    # Its own job does not take it either: it ran on no node of this fleet.
    (job,) = campaign_group(CAMPAIGNS / "demo.yaml", ROOT, out, 1).jobs
    ((ok, cause),) = settle(job, forged(demo_bundle, outcomes.OK), out, ROOT)
    assert not ok and cause.startswith("does not verify: the bundle says it ran on node None, Ray ran the job on ")
    assert landed(out) == []


def test_a_campaign_of_the_same_name_from_another_file_or_other_bytes_is_refused(faulty, tmp_path):
    repo, out = faulty["repo"], tmp_path / "out"
    (job,) = campaign_group(repo / "faulty.yaml", repo, out, 1).jobs
    said = settle(job, forged(faulty["copy"], outcomes.OK), out, repo)
    assert said == [(False, f"does not match its job: {C.CAMPAIGN_JSON} campaign_path is 'copy/faulty.yaml', the job "
                            "ran 'faulty.yaml'; nothing landed")]
    assert schedule.exit_code([job]) == outcomes.PROBLEMS and landed(out) == []
    # A genuine bundle of another campaign, made on the node the job ran on, with its own true exit code.
    (job,) = campaign_group(repo / "faulty.yaml", repo, out, 1).jobs
    ((ok, cause),) = settle(job, forged(faulty["parity"], outcomes.PARITY), out, repo)
    assert not ok and cause == (f"does not match its job: {C.CAMPAIGN_JSON} name is 'parity', the job ran campaign "
                                "'faulty'; nothing landed")
    # The campaign file as the job read it is held to the digest data/campaign.yaml seals.
    (job,) = campaign_group(repo / "faulty.yaml", repo, out, 1).jobs
    sealed = hashlib.sha256((faulty["one"] / C.CAMPAIGN_YAML).read_bytes()).hexdigest()
    job.group.terms = dataclasses.replace(job.group.terms, campaign_sha256="0" * 64)
    ((ok, cause),) = settle(job, forged(faulty["one"], outcomes.OK), out, repo)
    assert not ok and cause == (f"does not match its job: {C.CAMPAIGN_YAML} has SHA-256 {sealed[:16]}..., the job's "
                                "campaign file faulty.yaml 0000000000000000...; nothing landed")
    # Other SHAs than the job resolved.
    (job,) = campaign_group(repo / "faulty.yaml", repo, out, 1).jobs
    base = read.load(faulty["one"]).campaign.revisions["base"].sha
    job.group.terms.revisions["base"] = ("commit", "1" * 40)
    ((ok, cause),) = settle(job, forged(faulty["one"], outcomes.OK), out, repo)
    assert not ok and cause == (f"does not match its job: {C.CAMPAIGN_JSON} revisions.base.sha is '{base}', "
                                f"the job ran base {'1' * 40}; nothing landed")
    assert landed(out) == []


# --- (b) a reproduction of another original ------------------------------------------------------
def test_a_reproduction_of_another_original_is_refused(faulty, tmp_path):
    repo, out = faulty["repo"], tmp_path / "out"
    one, two = (read.load(faulty[n]).digest for n in ("one", "two"))
    assert one != two
    (job,) = reproduction_group(faulty["one"], one, repo, out, 1, REPRODUCE_ARGV).jobs
    said = settle(job, forged(faulty["repro"], faulty["repro_code"]), out, repo)
    assert said == [(False, f"does not match its job: {C.REPRODUCTION} original.digest is '{two[:16]}...', the job "
                            f"reproduced {faulty['one']} (digest {one[:16]}...); nothing landed")]
    assert schedule.exit_code([job]) == outcomes.PROBLEMS and landed(out) == []
    # A campaign run in place of a reproduction, and a reproduction in place of a run.
    ((ok, cause),) = settle(reproduction_group(faulty["one"], one, repo, out, 1, REPRODUCE_ARGV).jobs[0],
                            forged(faulty["one"], outcomes.OK), out, repo)
    assert not ok and cause.startswith(f"does not match its job: {C.REPRODUCTION}: none, the job was a reproduction")
    ((ok, cause),) = settle(campaign_group(repo / "faulty.yaml", repo, out, 1).jobs[0],
                            forged(faulty["repro"], outcomes.OK), out, repo)
    assert not ok and cause.startswith(f"does not match its job: {C.REPRODUCTION}: present, the job was a campaign run")
    # Its own original's job lands it, with the verdict re-derived here (verify --original).
    (job,) = reproduction_group(faulty["two"], two, repo, out, 1, REPRODUCE_ARGV).jobs
    assert settle(job, forged(faulty["repro"], faulty["repro_code"]), out, repo) == [(True, None)]
    word = read.load(job.path).reproduction.verdict
    assert job.code == job.exit_code == outcomes.REPRODUCTION_CODES[word] == faulty["repro_code"]
    assert landed(out) == [job.path]


# --- (c) a node's word for the exit code ---------------------------------------------------------
def test_a_node_reporting_exit_0_for_a_parity_mismatch_is_refused(faulty, tmp_path):
    repo, out = faulty["repo"], tmp_path / "out"
    (job,) = campaign_group(faulty["parity_file"], repo, out, 1).jobs
    said = settle(job, forged(faulty["parity"], outcomes.OK), out, repo)
    assert said == [(False, "does not match its job: exit code: the node reported exit 0 (complete, outputs agree), "
                            "the verified bundle gives exit 3 (parity mismatch); a node's word is not taken; "
                            "nothing landed")]
    assert job.code == outcomes.PROBLEMS and schedule.exit_code([job]) == outcomes.PROBLEMS
    assert landed(out) == []
    # The truth lands, and the fleet's exit is the bundle's: 3.
    (job,) = campaign_group(faulty["parity_file"], repo, out, 1).jobs
    assert settle(job, forged(faulty["parity"], outcomes.PARITY), out, repo) == [(True, None)]
    assert job.code == job.exit_code == outcomes.PARITY and schedule.exit_code([job]) == outcomes.PARITY
    assert landed(out) == [job.path]
    # A good bundle under a node's "parity mismatch": refused too (the node's word either way).
    (job,) = campaign_group(repo / "faulty.yaml", repo, tmp_path / "out2", 1).jobs
    ((ok, cause),) = settle(job, forged(faulty["one"], outcomes.PARITY), tmp_path / "out2", repo)
    assert not ok and "the node reported exit 3 (parity mismatch), the verified bundle gives exit 0" in cause
    (job,) = campaign_group(repo / "faulty.yaml", repo, tmp_path / "out2", 1).jobs
    assert settle(job, forged(faulty["one"], outcomes.OK), tmp_path / "out2", repo) == [(True, None)]
    assert schedule.exit_code([job]) == outcomes.OK


def test_a_bundle_its_own_node_refused_is_named_by_its_first_problem(demo_bundle, tmp_path):
    """A node whose `harness run` sealed a bundle that does not verify there (exit 1): nothing
    lands, and the cause is the node's first FAIL line, not only its exit line."""
    out = tmp_path / "out"
    (job,) = campaign_group(CAMPAIGNS / "demo.yaml", ROOT, out, 1).jobs
    tail = ["bundle: /tmp/x", "FAIL data/runs/A1.json: its process lived 99 s, past the run timeout of 60 s",
            "FAIL data/runner.json: a second problem",
            "verify: the sealed bundle does not verify (2 problem(s): `harness verify /tmp/x` lists them)",
            "exit: 1 (the sealed bundle does not verify)"]
    result = dataclasses.replace(forged(demo_bundle, outcomes.PROBLEMS), tail=tail)
    ((ok, cause),) = settle(job, result, out, ROOT)
    assert not ok and cause == ("harness run exited 1 (the sealed bundle does not verify): FAIL data/runs/A1.json: "
                                "its process lived 99 s, past the run timeout of 60 s; nothing landed")
    assert landed(out) == []
