"""`harness calibrate`: the demo campaign base against base, its noise floor pinned by a
campaign, copied into that campaign's bundles and held by both checkers."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from conftest import CAMPAIGNS, ROOT, harness
from harness import contract as C
from harness.commands.calibrate import floor_of


def test_floor_is_the_farthest_bound_from_one():
    assert floor_of([0.97, 1.01]) == 0.03
    assert floor_of([0.995, 1.04]) == 0.04
    assert floor_of([1.01, 1.02]) == 0.02  # a biased A-vs-A: the whole offset
    assert floor_of(None) is None


def demo_copy(where, **extra):
    d = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    for step in d["target"]["build"]:
        for kind in ("tree", "patch"):
            if kind in step:
                step[kind] = str(CAMPAIGNS / step[kind])
    d["workload"]["path"] = str(CAMPAIGNS / "workloads")
    d["workload"]["params"] = {**d["workload"]["params"], "items": 3, "length": 3000}
    d.pop("golden", None)
    d.update(extra)
    path = where / "demo.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def checkers(bundle):
    return [harness("verify", bundle),
            subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle)],
                           capture_output=True, text=True)]


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    where = tmp_path_factory.mktemp("calibrate")
    campaign = demo_copy(where)
    result = harness("calibrate", campaign, "--out", where / "aa")
    assert result.returncode == 0, result.stdout + result.stderr
    floor_file = where / "demo.noise-floor.json"
    doc = json.loads(floor_file.read_text())
    pin = next(line for line in result.stdout.splitlines() if line.startswith("noise_floor: "))
    with campaign.open("a") as fh:
        fh.write(pin + "\n")
    out = where / "pinned"
    run = harness("run", campaign, "--out", out)
    assert run.returncode == 0, run.stdout + run.stderr
    return where, doc, out


def test_calibration_runs_one_sha_on_both_sides_and_verifies(calibrated):
    where, doc, _ = calibrated
    campaign = json.loads((where / "aa" / C.CAMPAIGN_JSON).read_text())
    assert campaign["revisions"]["base"]["sha"] == campaign["revisions"]["candidate"]["sha"]
    assert doc["schema"] == C.SCHEMAS["noise_floor"] and doc["campaign"] == "demo"
    assert doc["floor"] == floor_of(doc["ci95"]) and doc["rounds"] == 5
    for check in checkers(where / "aa"):
        assert check.returncode == 0, check.stdout + check.stderr
    again = harness("calibrate", where / "demo.yaml", "--out", where / "aa2")
    assert again.returncode == 2 and "already exists" in again.stderr


def test_a_pinned_floor_is_the_band_and_both_checkers_hold_it(calibrated, tmp_path):
    _, doc, out = calibrated
    stats = json.loads((out / C.COMPARISON).read_text())["stats"]
    assert stats["floor"] == doc["floor"] and stats["band"] >= max(doc["floor"], 0.02)
    for check in checkers(out):
        assert check.returncode == 0, check.stdout + check.stderr
    # A floor edited after the fact (to let a small claim through) no longer has the pinned hash.
    forged = tmp_path / "forged"
    import shutil

    from harness.selftest import tamper

    shutil.copytree(out, forged)
    tamper.edit_json(C.NOISE_FLOOR, lambda d: d.update(floor=0.0))(forged)
    tamper.rederive(forged)
    tamper.reseal(forged)
    # a careful forgery: comparison.json re-derived under the edited floor, both manifests re-hashed,
    # so the pinned hash in campaign.json is all that is left to catch it
    assert json.loads((forged / C.COMPARISON).read_text())["stats"]["floor"] == 0.0
    for check in checkers(forged):
        assert check.returncode == 1 and "noise_floor_sha256" in check.stdout


def test_same_sha_is_still_refused_by_run(tmp_path):
    campaign = demo_copy(tmp_path)
    d = yaml.safe_load(campaign.read_text())
    result = harness("run", campaign, "--candidate", d["base"]["rev"], "--out", tmp_path / "o")
    assert result.returncode == 2 and "nothing to compare" in result.stderr
    # and how to run A against A after all (issue 33, item 11), in the same one line; the progress
    # notes before it ("harness: workload: ... left out by rule: __pycache__/" where the repository's
    # workload folder holds byte code, as it does wherever Python writes it) are not the error
    error = [line for line in result.stderr.splitlines() if not line.startswith("harness: ")]
    assert len(error) == 1 and error[0].startswith("harness run: error: "), result.stderr
    assert "harness calibrate" in error[0] and "git commit --allow-empty" in error[0]
