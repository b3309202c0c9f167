"""Concurrency at the output path: two runs on one --out cannot both proceed, and an existing
bundle is replaced only with --force (then by a sealed one)."""
from __future__ import annotations

import hashlib
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, cache_env, harness, make_target, no_traceback, wait_until, write_campaign
from harness.files import read_json

NAP_WORKLOAD = '''
    import time

    import numpy as np

    from nap import core


    class W:
        def __init__(self, ctx):
            self.sleep = float(ctx.params["sleep"])
            self.items = ["one"]

        def run(self, item):
            time.sleep(self.sleep)
            return {"x": np.array([core.X])}


    def setup(ctx):
        return W(ctx)
'''


@pytest.fixture
def nap(tmp_path):
    """campaign(sleep) -> a two-run campaign whose single item sleeps that long."""
    tree, patch = make_target(tmp_path, {"nap/__init__.py": "", "nap/core.py": "X = 1\n"},
                              {"nap/core.py": "X = 1  # candidate\n"})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "nap_workload.py").write_text(textwrap.dedent(NAP_WORKLOAD))
    env = cache_env(tmp_path / "cache")

    def campaign(sleep: float):
        return write_campaign(tmp_path / f"nap-{sleep}.yaml", tree, patch, workloads, "nap_workload:setup",
                              name="nap", params={"sleep": sleep})
    return campaign, env


def tagmanifest_digest(bundle) -> str:
    return hashlib.sha256((bundle / "tagmanifest-sha256.txt").read_bytes()).hexdigest()


def test_second_run_on_the_same_out_is_refused(tmp_path, nap):
    campaign, env = nap
    out = tmp_path / "out" / "bundle"
    first = subprocess.Popen([sys.executable, "-m", "harness", "run", str(campaign(3.0)), "--out", str(out)],
                             cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def holds_the_lock() -> bool:
            assert first.poll() is None, first.communicate()
            return bool(list(out.parent.glob("bundle.partial-*")))

        wait_until(holds_the_lock, "the first run never took the lock", poll_s=0.05)
        for extra in ([], ["--force"]):
            second = harness("run", campaign(0.0), "--out", out, *extra, env=env, timeout=60)
            assert second.returncode == 2, second.stdout + second.stderr
            assert no_traceback(second)
            lines = second.stderr.strip().splitlines()
            assert lines[-1] == f"harness run: error: {out}: another harness run is writing this bundle (locked)"
            assert [line for line in lines if line.startswith("harness run: error")] == [lines[-1]]
        stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stdout + stderr
    assert harness("verify", out).returncode == 0
    assert f"digest: {tagmanifest_digest(out)}" in stdout.splitlines()
    assert sorted(p.name for p in out.parent.iterdir()) == ["bundle"]  # no lock file, no staging left


def test_existing_bundle_needs_force(tmp_path, nap, demo_bundle):
    campaign, env = nap
    before = {p: p.read_bytes() for p in demo_bundle.rglob("*") if p.is_file()}
    refused = harness("run", campaign(0.0), "--out", demo_bundle, env=env, timeout=60)
    assert refused.returncode == 2 and no_traceback(refused)
    assert f"harness run: error: {demo_bundle}: already exists (use --force to replace a bundle there)" in refused.stderr
    assert {p: p.read_bytes() for p in demo_bundle.rglob("*") if p.is_file()} == before  # untouched

    old_digest = tagmanifest_digest(demo_bundle)
    forced = harness("run", campaign(0.0), "--out", demo_bundle, "--force", env=env, timeout=60)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    new_digest = tagmanifest_digest(demo_bundle)
    assert new_digest != old_digest and f"digest: {new_digest}" in forced.stdout.splitlines()
    assert read_json(demo_bundle / "data" / "campaign.json")["name"] == "nap"
    assert not (demo_bundle / "data" / "golden.json").exists()  # nothing of the old bundle survives
    assert harness("verify", demo_bundle).returncode == 0
    siblings = [p.name for p in demo_bundle.parent.iterdir() if p.name.startswith(("bundle", ".bundle"))]
    assert siblings == ["bundle"]  # no .replaced-, .partial- or lock file left
