"""Issue 35 item 3, `launch: zygote`, for real: its honesty measured, not assumed.

* The demo's change under `launch: zygote` agrees with the same change under fresh processes by
  the reproduce rule (each bundle's claim held by the other's interval, widened by
  contract.REPRODUCE_TOLERANCE, the same verdict), with the same output digests; an A-vs-A under
  zygote makes no claim.
* Every child and every zygote is in the cleanup receipt, verified absent, and really gone: after
  the campaign, and after SIGINT / SIGTERM of `harness run` (the fault suite's hang).
* Both checkers accept the bundles and refuse one whose launch records were edited.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from conftest import CAMPAIGNS, ROOT, harness, small_campaign
from harness import contract as C
from harness import rules as R
from harness.bundle.model import Stats
from harness.judge.reproduce import claim
from harness.selftest import tamper

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "faulty"))
import faultlib  # noqa: E402


def demo_under(tmp: Path, launch: str, preload: tuple = ()) -> Path:
    """campaigns/demo.yaml with `launch:` set (and its preload), written to tmp with its paths made
    absolute."""
    text = (CAMPAIGNS / "demo.yaml").read_text()
    text = text.replace("tree: demo/", f"tree: {CAMPAIGNS}/demo/").replace("patch: demo/", f"patch: {CAMPAIGNS}/demo/")
    text = text.replace("path: workloads", f"path: {CAMPAIGNS}/workloads")
    text = text.replace("golden: {path: demo/", f"golden: {{path: {CAMPAIGNS}/demo/")
    value = f"{{mode: {launch}, preload: [{', '.join(preload)}]}}" if preload else launch
    text = text.replace("name: demo\n", f"name: demo_{launch}\n") + f"launch: {value}\n"
    path = tmp / f"demo_{launch}.yaml"
    path.write_text(text)
    return path


def doc(bundle: Path, rel: str) -> dict:
    return json.loads((bundle / rel).read_text())


def runs(bundle: Path) -> list:
    return [json.loads(p.read_text()) for p in sorted((bundle / "data" / "runs").glob("*.json"))]


def gone(pid: int, create_time: float) -> bool:
    try:
        proc = psutil.Process(pid)
        return abs(proc.create_time() - create_time) > 0.01 or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def assert_all_gone(bundle: Path, zygotes: bool = True) -> dict:
    receipt = doc(bundle, C.CLEANUP)
    assert receipt["all_absent"] is True
    for p in receipt["processes"]:
        assert p["absent"] is True and p["verified"] in ("gone", "pid reused"), p
        assert gone(p["pid"], p["create_time"]), f"{p['role']} {p['pid']} ({p['run']}) is still running"
    if zygotes:
        assert any(p["role"] == "zygote" for p in receipt["processes"]), receipt["processes"]
    return receipt


def checkers_accept(bundle: Path) -> None:
    verify = harness("verify", bundle)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    rehash = faultlib.rehash(bundle)
    assert rehash.returncode == 0, rehash.stdout + rehash.stderr


@pytest.fixture(scope="module")
def zygote_demo(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("zygote-demo")
    out = where / "bundle"
    # numpy preloaded: the demo's workload imports it, its env holds OpenBLAS to one thread
    result = harness("run", demo_under(where, "zygote", ("numpy",)), "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def test_the_demo_under_zygote_agrees_with_fresh_processes(zygote_demo, demo_bundle_master):
    fresh, zygote = demo_bundle_master, zygote_demo
    checkers_accept(zygote)
    # how each run was made, as recorded: every fresh run fresh, every zygote run forked by its zygote
    assert {r["launch"]["mode"] for r in runs(fresh)} == {"fresh"}
    assert doc(fresh, C.CAMPAIGN_JSON)["launch"] == "fresh" and doc(fresh, C.CAMPAIGN_JSON)["preload"] == []
    assert doc(zygote, C.CAMPAIGN_JSON)["preload"] == ["numpy"]
    receipt = assert_all_gone(zygote)
    rows = {p["pid"]: p for p in receipt["processes"]}
    generation = R.generations(doc(zygote, C.CAMPAIGN_JSON)["labels"])
    for r in runs(zygote):
        assert r["launch"]["mode"] == "zygote" and r["launch"]["generation"] == generation[r["label"]]
        z = rows[r["launch"]["zygote"]]
        assert z["role"] == "zygote" and z["run"] == R.zygote_label(r["variant"], r["launch"]["generation"])
        assert rows[r["pid"]]["role"] == "worker" and rows[r["pid"]]["parent"] == z["pid"]
    assert {p["run"] for p in receipt["processes"] if p["role"] == "zygote"} == {"ZA1", "ZA2", "ZB1", "ZB2"}
    # the same outputs, bit for bit
    digests = [{(r["variant"], it["id"], name): f["digest"] for r in runs(b) if r["status"] == "ok"
                for it in r["items"] for name, f in it["fields"].items()} for b in (fresh, zygote)]
    assert digests[0] == digests[1]
    # the same answer: both improved, and their 95% intervals meet. (Not the reproduce rule's
    # +-10% around one campaign's point: a demo decided at its first look has an interval far wider
    # than that, so on a busy machine its point alone can sit 15% from the other's.)
    a, b = (claim(Stats.of(doc(x, C.COMPARISON)["stats"])) for x in (fresh, zygote))
    assert a.verdict == b.verdict == "improved"
    assert a.ci95[0] <= b.ci95[1] and b.ci95[0] <= a.ci95[1], (a, b)


A_VS_A = """
import time

def setup(ctx):
    return Work()

class Work:
    items = [f"i{k}" for k in range(6)]

    def run(self, item):
        import numpy as np
        end, n = time.perf_counter() + 0.004, 0
        while time.perf_counter() < end:
            n += 1
        return {"out": np.array([len(item)])}
"""


def test_a_against_a_under_zygote_makes_no_claim(tmp_path):
    """The same code both sides (the candidate changes a constant nothing reads): no claim."""
    import yaml

    campaign = small_campaign(tmp_path, A_VS_A, "avsa:setup", launch="zygote")
    body = yaml.safe_load(campaign.read_text())
    del body["order"]
    campaign.write_text(yaml.safe_dump({**body, "rounds": 6}, sort_keys=False))
    out = tmp_path / "b"
    result = harness("run", campaign, "--out", out)
    assert result.returncode in (0, 9), result.stdout + result.stderr  # complete; no claim is not a failure
    verdict = doc(out, C.COMPARISON)["stats"]["verdict"]
    assert verdict in ("equal", "inconclusive"), doc(out, C.COMPARISON)["stats"]["verdict_reason"]
    checkers_accept(out)
    assert_all_gone(out)


def _preload_in(cwd: Path, modules: list, path: str = "", **env) -> str:
    """What harness.worker.zygote.preload says of modules, run as a zygote is (cwd first on sys.path,
    this checkout's harness on PYTHONPATH as the runner puts its copy, then `path`)."""
    import os

    code = ("import sys; from harness.worker.zygote import preload; "
            f"print(preload({modules!r}) or 'ready'); print(len(sys.path))")
    env = {**os.environ, **env, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), path]))}
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=120,
                         env=env)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_zygote_never_preloads_the_code_under_test(tmp_path):
    (tmp_path / "undertest.py").write_text("X = 1\n")
    # the tree (its cwd) is off sys.path while it preloads: the module is not found there
    said = _preload_in(tmp_path, ["undertest"])
    assert "preload undertest: ModuleNotFoundError" in said, said
    # reached another way (here PYTHONPATH), a module from the tree is refused by where it lies
    said = _preload_in(tmp_path, ["json", "undertest"], path=str(tmp_path))
    assert "preload imported undertest from the variant's tree" in said and "launch.preload" in said, said


@pytest.mark.skipif((psutil.cpu_count() or 1) < 2, reason="OpenBLAS starts no thread of its own on one core")
def test_a_zygote_refuses_a_preload_that_starts_threads(tmp_path):
    said = _preload_in(tmp_path, ["numpy"], OPENBLAS_NUM_THREADS="2", OMP_NUM_THREADS="2")
    assert "preload numpy:" in said and "threads after its import" in said and "OPENBLAS_NUM_THREADS" in said, said
    assert _preload_in(tmp_path, ["numpy"], OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1").startswith("ready")


def test_a_run_whose_zygote_cannot_preload_fails_naming_the_module(tmp_path):
    """Refused in the pre-flight (each variant's first zygote starts there), before any timed run."""
    campaign = small_campaign(tmp_path, A_VS_A, "avsa:setup", launch={"mode": "zygote", "preload": ["nosuchmodule"]})
    out = tmp_path / "b"
    result = harness("run", campaign, "--out", out)
    assert result.returncode == 2 and not out.exists(), result.stdout + result.stderr
    assert "preload nosuchmodule: ModuleNotFoundError" in result.stderr, result.stdout + result.stderr
    assert "nothing was timed" in result.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_harness_run_leaves_no_child_and_no_zygote(tmp_path, sig):
    campaign = faultlib.write_campaign(tmp_path, fault="hang", spawn="child", at="B1", order="ABAB")
    campaign.write_text(campaign.read_text() + "launch: zygote\n")
    proc = faultlib.popen_harness("run", campaign, "--out", tmp_path / "b")
    try:
        faultlib.wait_for_pid(faultlib.pids_file(tmp_path), "hanging", proc, 60.0)
        zygotes = [p for p in psutil.Process(proc.pid).children() if "harness.worker.zygote" in " ".join(p.cmdline())]
        assert len(zygotes) == 2  # A1's stays for A2, B1's forked the hanging child
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 4, out + err
    bundle = tmp_path / "b"
    comp = doc(bundle, C.COMPARISON)
    assert comp["status"] == "failed" and f"interrupted by {sig.name}" in comp["reason"]
    checkers_accept(bundle)
    receipt = assert_all_gone(bundle)
    listed = {p["pid"] for p in receipt["processes"]}
    for z in zygotes:
        assert z.pid in listed and not z.is_running()
    for role, pid in faultlib.read_pids(faultlib.pids_file(tmp_path)):
        if role != "hanging":
            assert pid in listed, (role, pid)


def _edited(bundle: Path, tmp_path: Path, edit) -> subprocess.CompletedProcess:
    copy = tmp_path / "edited"
    shutil.copytree(bundle, copy)
    edit(copy)
    tamper.reseal(copy)
    return faultlib.rehash(copy)


def _edit_run(label: str, change):
    def edit(root: Path) -> None:
        path = root / C.run_path(label)
        record = json.loads(path.read_text())
        change(record)
        path.write_text(json.dumps(record))
    return edit


def _edit_cleanup(change):
    def edit(root: Path) -> None:
        path = root / C.CLEANUP
        receipt = json.loads(path.read_text())
        change(receipt)
        receipt["count"] = len(receipt["processes"])
        path.write_text(json.dumps(receipt))
    return edit


def _drop_zygote(receipt: dict) -> None:
    receipt["processes"] = [p for p in receipt["processes"] if p["run"] != "ZA1"]


def _reparent(receipt: dict) -> None:
    others = [p["pid"] for p in receipt["processes"] if p["role"] == "zygote" and p["run"] != "ZA1"]
    for p in receipt["processes"]:
        if p["run"] == "A1":
            p["parent"] = others[0]


@pytest.mark.parametrize("edit, says", [
    (_edit_run("A1", lambda r: r["launch"].update(mode="fresh", zygote=None, generation=None)),
     "launch.mode \"fresh\", campaign.json's launch is \"zygote\""),
    (_edit_run("A1", lambda r: r["launch"].update(generation=2)), "launch.generation 2"),
    (_edit_cleanup(_drop_zygote), "no zygote ZA1 of that pid"),
    (_edit_cleanup(_reparent), "A1's worker has parent"),
], ids=["mode", "generation", "zygote-row", "parent"])
def test_checkers_refuse_edited_launch_records(zygote_demo, tmp_path, edit, says):
    result = _edited(zygote_demo, tmp_path, edit)
    assert result.returncode != 0 and says in result.stdout + result.stderr, result.stdout + result.stderr


def test_a_fresh_bundle_naming_a_zygote_is_refused(demo_bundle_master, tmp_path):
    result = _edited(demo_bundle_master, tmp_path, _edit_run("A1", lambda r: r["launch"].update(generation=1)))
    assert result.returncode != 0 and "a fresh run names a zygote or a generation" in result.stdout, result.stdout


# --- workload.prepare: what setup() needs that no revision's code makes ----------------------------
PREPARED = """
import os

import numpy as np

def setup(ctx):
    return Work(ctx.prepared)

class Work:
    items = ["i0", "i1", "i2"]

    def __init__(self, prepared):
        self.prepared = prepared

    def run(self, item):
        return {"out": np.array([self.prepared["table"][item]])}

    def metrics(self):
        return {"prepared_by": self.prepared["pid"], "run_by": os.getpid()}
"""
PREPARE = """
import os

def prepare(ctx):
    return {"pid": os.getpid(), "table": {f"i{k}": k * ctx.params["scale"] for k in range(3)}}
"""


def prepared_campaign(tmp: Path, launch, prepare_source: str = PREPARE, entry: str = "prep:prepare") -> Path:
    campaign = small_campaign(tmp, PREPARED, "work:setup", order="ABBA", launch=launch)
    (tmp / "workloads" / "prep.py").write_text(prepare_source)
    text = campaign.read_text().replace("  entry: work:setup\n", f"  entry: work:setup\n  prepare: {entry}\n")
    campaign.write_text(text.replace("  params: {}\n", "  params: {scale: 7}\n"))
    return campaign


@pytest.mark.parametrize("launch", ["zygote", "fresh"])
def test_workload_prepare_is_made_by_the_zygote_before_it_forks_or_by_each_fresh_worker(tmp_path, launch):
    out = tmp_path / "b"
    result = harness("run", prepared_campaign(tmp_path, launch), "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    checkers_accept(out)
    assert doc(out, C.CAMPAIGN_JSON)["workload"]["prepare"] == "prep:prepare"
    for run in runs(out):
        made_by, ran_in = run["metrics"]["prepared_by"], run["metrics"]["run_by"]
        if launch == "zygote":  # made once by the zygote that forked this run, not by the run itself
            assert made_by == run["launch"]["zygote"] != ran_in, run["label"]
        else:
            assert made_by == ran_in == run["pid"], run["label"]


def test_a_prepare_that_imports_the_code_under_test_fails_the_run_in_one_line(tmp_path):
    campaign = prepared_campaign(tmp_path, "zygote", "import pkg\n\ndef prepare(ctx):\n    return {}\n")
    result = harness("run", campaign, "--out", tmp_path / "b")
    assert result.returncode != 0
    said = result.stdout + result.stderr
    assert "workload.prepare" in said and ("pkg" in said) and "Traceback" not in result.stderr, said
