"""The reviewer's standard-library rehash script (issue 2, point 9): it runs under
`python -S` from any folder with nothing but the standard library, agrees with
`harness verify` on intact bundles (complete, failed, parity mismatch), hashes arrays
exactly as harness.tensors does, and refuses what it cannot read safely."""
from __future__ import annotations

import hashlib
import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, harness
from harness import contract as C, rehash
from harness import rules as R
from harness.selftest import tamper
from harness.bundle import arrays as tensors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "faulty"))
import faultlib  # noqa: E402

SCRIPT = ROOT / "harness" / "rehash.py"


def run(bundle, cwd="/", env=None, script=SCRIPT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-S", str(script), str(bundle)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_intact_demo_bundle_passes_with_the_standard_library_alone(demo_bundle, tmp_path):
    # Poison every non-stdlib module it could reach, and shadow stdlib modules beside a copy
    # of the script: it must import none of them.
    poison = tmp_path / "poison"
    for name in ("numpy", "harness", "yaml", "psutil", "torch"):
        (poison / name).mkdir(parents=True)
        (poison / name / "__init__.py").write_text("raise SystemExit('imported ' + __name__)\n")
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(SCRIPT, alone / "rehash.py")
    shutil.copy(SCRIPT.parent / "contract.py", alone / "contract.py")  # the one contract, standard library only
    shutil.copy(SCRIPT.parent / "rules.py", alone / "rules.py")  # the decision rules both sides replay, likewise
    for name in ("hashlib", "json", "ast", "math", "stat", "re", "statistics"):
        (alone / f"{name}.py").write_text("raise SystemExit('shadowed ' + __name__)\n")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(poison)}
    result = run(demo_bundle, cwd=tmp_path, env=env, script=alone / "rehash.py")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"OK {demo_bundle}: ")
    assert "status complete" in result.stdout
    # It says exactly what it re-derived and what it left to harness verify.
    assert f"every file and field is of the contract ({C.FORMAT})" in result.stdout
    assert "the rounds' trimmed-t interval, per-item ratios, drift, load, the verdict rule, instruction counts" \
        in result.stdout
    assert "not re-derived: needs numpy" not in result.stdout
    assert "note: campaign.yaml not compared with campaign.json: needs a YAML parser" in result.stdout
    digest = hashlib.sha256((demo_bundle / "tagmanifest-sha256.txt").read_bytes()).hexdigest()
    assert f"digest {digest}\n" in result.stdout
    verify = harness("verify", demo_bundle)
    assert verify.returncode == 0 and f"digest {digest}\n" in verify.stdout


def test_comparison_rederived_without_numpy_matches_the_harness(demo_bundle):
    claimed = json.loads((demo_bundle / "data" / "comparison.json").read_text())
    load = lambda rel: json.loads((demo_bundle / rel).read_text())  # noqa: E731
    campaign = load("data/campaign.json")
    runs = [load(f"data/runs/{label}.json") for label in campaign["labels"]]
    golden = load("data/golden.json") if (demo_bundle / "data" / "golden.json").exists() else None
    check = rehash.Check(str(demo_bundle))
    derived = rehash.derive(check, campaign, runs, load("data/receipts/runner.json"),
                            load("data/receipts/cleanup.json"), golden, [],
                            load("data/receipts/workload.json")["digest"], load(C.ENVIRONMENT)["sandbox"])
    plan = R.sequential_plan(campaign, [(r["label"], r["status"], r["process"]["wall_s"]) for r in runs[:2]])
    derived["stats"] = rehash.with_outside(rehash.with_interference(
        rehash.derive_stats(runs, campaign["threshold"], None, plan), runs, campaign["interference"],
        campaign["threshold"], None), runs)
    derived["instructions"] = None
    derived["metrics"] = rehash.metrics_section(runs, derived["stats"], derived["wall"], None, campaign["threshold"])
    assert [m["name"] for m in derived["metrics"]] == ["wall", "cpu", "memory"]
    assert derived == claimed  # bit for bit: same formulas, math.fsum means, 10 significant digits


def test_float_tolerance():
    assert not list(rehash.diff({"x": 1.0}, {"x": 1.0 + 1e-15}))
    assert list(rehash.diff({"x": 1.0}, {"x": 1.0 + 1e-9}))
    assert list(rehash.diff({"x": 3}, {"x": 4}))
    assert list(rehash.diff({"x": True}, {"x": 1}))
    assert list(rehash.diff({"x": None}, {"x": 0.0}))


def test_failed_and_parity_mismatch_bundles_pass(tmp_path):
    failed = tmp_path / "failed"
    failed.mkdir()
    result = faultlib.run_harness("run", faultlib.write_campaign(failed, fault="exit", at="B1"), "--out",
                                  failed / "b")
    assert result.returncode == 4
    r = run(failed / "b")
    assert r.returncode == 0 and "status failed" in r.stdout, r.stdout

    mismatch = tmp_path / "mismatch"
    mismatch.mkdir()
    result = faultlib.run_harness("run", faultlib.write_campaign(mismatch, mismatch=True), "--out",
                                  mismatch / "b")
    assert result.returncode == 3, result.stdout + result.stderr
    comp = faultlib.comparison(mismatch / "b")
    assert comp["parity"]["identical"] is False and comp["parity"]["divergence"]
    r = run(mismatch / "b")
    assert r.returncode == 0, r.stdout
    assert "parity.divergence not re-derived" in r.stdout
    # ... but the mismatch itself is re-derived: claiming identity is caught.
    comp["parity"]["identical"] = True
    (mismatch / "b" / "data" / "comparison.json").write_text(json.dumps(comp))
    tamper.reseal(mismatch / "b")
    r = run(mismatch / "b")
    assert r.returncode == 1 and "FAIL data/comparison.json: [derived] parity.identical claims true" in r.stdout


def test_exit_codes_for_unusable_and_incomplete_input(tmp_path, demo_bundle):
    assert run(tmp_path / "nope").returncode == 2
    (tmp_path / "empty").mkdir()
    assert run(tmp_path / "empty").returncode == 2
    usage = subprocess.run([sys.executable, "-S", str(SCRIPT)], capture_output=True, text=True)
    assert usage.returncode == 2 and "usage" in usage.stderr
    (demo_bundle / "tagmanifest-sha256.txt").unlink()
    r = run(demo_bundle)
    assert r.returncode == 1 and "FAIL tagmanifest-sha256.txt: missing: incomplete" in r.stdout
    link = tmp_path / "link"
    link.symlink_to(demo_bundle)
    assert run(link).returncode == 2


# --- arrays ---------------------------------------------------------------------------------
def _digest_file(path: Path) -> str:
    """rehash's digest of a .npy, stored gzipped as the harness stores arrays."""
    stored = path.parent / (path.name + ".gz")
    stored.write_bytes(gzip.compress(path.read_bytes(), mtime=0))
    check = rehash.Check(str(path.parent))
    check.openable.add(stored.name)  # the manifests would list it
    return rehash.array_digest(check, stored.name)[0]


DTYPES = ["|b1", "|i1", "<i2", ">i2", "<i4", ">i4", "<i8", ">i8", "|u1", "<u2", ">u4", "<u8",
          "<f2", ">f2", "<f4", ">f4", "<f8", ">f8", "<c8", ">c8", "<c16", ">c16"]


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(DTYPES), shape=st.lists(st.integers(0, 4), max_size=3),
       version=st.sampled_from([(1, 0), (2, 0), (3, 0)]), seed=st.integers(0, 2**32 - 1))
def test_array_digest_matches_the_harness(tmp_path_factory, dtype, shape, version, seed):
    rng = np.random.default_rng(seed)
    raw = rng.integers(0, 256, size=int(np.prod(shape)) * np.dtype(dtype).itemsize, dtype=np.uint8)
    arr = raw.view(np.dtype(dtype)).reshape(shape)  # any bit pattern: NaN payloads, -0.0
    path = tmp_path_factory.mktemp("npy") / "a.npy"
    with open(path, "wb") as fh:
        np.lib.format.write_array(fh, arr, version=version, allow_pickle=False)
    assert _digest_file(path) == tensors.digest(arr)


def test_scalar_and_special_floats(tmp_path):
    for arr in (np.float64(-0.0), np.array([np.nan, -np.nan, np.inf, -0.0], dtype=np.float32),
                np.array(True), np.zeros((0, 3), dtype=np.int64)):
        path = tmp_path / "a.npy"
        path.write_bytes(tensors.npy_bytes(arr))
        assert _digest_file(path) == tensors.digest(arr)


def _npy(header: str, data: bytes = b"", version: bytes = b"\x01\x00") -> bytes:
    blob = header.encode("latin1")
    blob += b" " * (63 - (10 + len(blob)) % 64) + b"\n"
    size = len(blob).to_bytes(2 if version[0] == 1 else 4, "little")
    return b"\x93NUMPY" + version + size + blob + data


@pytest.mark.parametrize("blob, why", [
    (b"PK\x03\x04 not an npy", "bad magic"),
    (_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", b"\0" * 4, b"\x04\x00"),
     "unsupported .npy version"),
    (_npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }", b"\0" * 16), "fortran_order"),
    (_npy("{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", b"\x80\x04N."), "refused"),
    (_npy("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,), }", b"\0" * 4), "structured"),
    (_npy("{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }", b"\0" * 12), "refused"),
    (_npy("{'descr': __import__('os').getcwd(), 'fortran_order': False, 'shape': (1,), }"), "not a literal"),
    (_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", b"\0" * 8), "needs 12"),
    (_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", b"\0" * 5), "trailing bytes"),
    (_npy("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,), }"), "bad shape"),
    (_npy("{'descr': '<i4', 'shape': (1,), }", b"\0" * 4), "header is not"),
    (b"\x93NUMPY\x01\x00\xff\xff", "larger than"),
])
def test_refused_npy(tmp_path, blob, why):
    path = tmp_path / "a.npy"
    path.write_bytes(blob)
    with pytest.raises(ValueError, match=why.replace("(", r"\(")):
        _digest_file(path)


def test_refusal_is_reported_with_the_file(demo_bundle):
    arrays = sorted((demo_bundle / "data" / "arrays").iterdir())
    arrays[0].write_bytes(gzip.compress(
        _npy("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2), }", b"\0" * 16), mtime=0))
    tamper.reseal(demo_bundle)
    r = run(demo_bundle)
    assert r.returncode == 1
    assert f"FAIL data/arrays/{arrays[0].name}: unreadable array (fortran_order" in r.stdout


def test_a_bundle_of_an_older_harness_is_refused_in_one_line():
    """A bundle written before the closed contract (the span_finding_unmappable bundle as
    committed at comparison/v2) is refused, in one line that names its generation and the
    commands that check it under its own rules, by both checkers; never judged by rules of its
    own choosing (tests/process/test_legacy_checkers.py: and with --legacy, under its frozen rules)."""
    bundle = Path(__file__).resolve().parents[1] / "fixtures" / "legacy" / "vendor" / "pre-v6" / \
        "span_finding_unmappable"
    start = (f"{C.BAG_INFO}: a bundle of an earlier generation, the format before abba-harness/bundle/v6, without an "
             "Abba-Format line, written by harness 0.1.0 at ")
    result = run(bundle.name, cwd=bundle.parent)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"rehash: error: {start}") and "--legacy span_finding_unmappable" in result.stderr
    result = harness("verify", bundle)
    assert result.returncode == 2 and result.stdout == "" and result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"harness verify: error: {start}") and f"--legacy {bundle}" in result.stderr


def test_rehash_and_the_harness_decide_by_the_one_rule(demo_bundle):
    """The verdict rule lives once, in the contract; rehash.py re-derives the stats with it and
    gets the harness's verdict and reason."""
    claimed = json.loads((demo_bundle / "data" / "comparison.json").read_text())["stats"]
    campaign = json.loads((demo_bundle / "data" / "campaign.json").read_text())
    runs = [json.loads((demo_bundle / f"data/runs/{label}.json").read_text()) for label in campaign["labels"]]
    stats = rehash.with_interference(rehash.derive_stats(runs, campaign["threshold"], None), runs,
                                     campaign["interference"], campaign["threshold"], None)
    assert (stats["verdict"], stats["verdict_reason"]) == (claimed["verdict"], claimed["verdict_reason"])
