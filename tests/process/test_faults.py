"""Issue 6.1: faults during a campaign, for real.

Each case runs `harness run` on a small campaign whose workload misbehaves on purpose
(tests/fixtures/faulty): a worker that exits 3, aborts, hangs past its run timeout, is
SIGKILLed from outside, leaves a grandchild (in its process group, or double-forked into
its own session), and SIGINT/SIGTERM sent to `harness run` itself. In every case:
exit code 4, a sealed bundle with status `failed` and the reason, `harness verify` and
rehash.py accept it (it is authentic evidence of a failure), nothing printed says
complete, the cleanup receipt lists every process the test knows of as absent, and
psutil confirms none of them is alive."""
from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import psutil
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "faulty"))
import faultlib  # noqa: E402


def _ours(pid: int) -> bool:
    """Is pid still one of the processes the fault suite started (not a reused pid)?"""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        cmd = " ".join(proc.cmdline())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return False
    return cmd == "sleep 300" or "-m harness.worker " in cmd


@pytest.fixture
def tidy(tmp_path):
    """Kill anything of ours a failing test leaves behind (by the pids it noted)."""
    yield
    for _, pid in faultlib.read_pids(faultlib.pids_file(tmp_path)):
        if _ours(pid):
            os.kill(pid, signal.SIGKILL)


def assert_failed_bundle(tmp_path: Path, rc: int, stdout: str, label: str, reason: str,
                         record_status: str = "failed") -> dict:
    bundle = tmp_path / "b"
    assert rc == 4, stdout
    assert "status: failed" in stdout and "complete" not in stdout, stdout
    assert "verdict: campaign failed" in stdout
    assert bundle.is_dir() and (bundle / "tagmanifest-sha256.txt").is_file()
    assert not list(tmp_path.glob("b.partial-*")) and not list(tmp_path.glob(".b.lock"))

    comp = faultlib.comparison(bundle)
    assert comp["status"] == "failed"
    assert reason in comp["reason"], comp["reason"]
    assert f"{label}: " in comp["reason"] or label == "-"
    assert comp["parity"]["identical"] is False or label != "A1"
    if label != "-":
        record = json.loads((bundle / "data" / "runs" / f"{label}.json").read_text())
        assert record["status"] == record_status and reason in record["reason"]
    info = (bundle / "bag-info.txt").read_text()
    assert "Abba-Status: failed" in info

    # Authentic evidence of a failure: both checkers accept it and say so.
    verify = faultlib.run_harness("verify", bundle)
    assert verify.returncode == 0 and "status failed" in verify.stdout, verify.stdout + verify.stderr
    rehash = faultlib.rehash(bundle)
    assert rehash.returncode == 0 and "status failed" in rehash.stdout, rehash.stdout + rehash.stderr
    compare = faultlib.run_harness("compare", bundle)
    assert compare.returncode == 4 and "campaign failed" in compare.stdout
    assert "complete" not in compare.stdout

    # Every process the workload noted is in the receipt, verified absent, and really gone.
    receipt = faultlib.cleanup_receipt(bundle)
    listed = {p["pid"]: p for p in receipt["processes"]}
    noted = [(role, pid) for role, pid in faultlib.read_pids(faultlib.pids_file(tmp_path)) if role != "hanging"]
    assert noted
    for role, pid in noted:
        assert pid in listed, f"{role} {pid} missing from the cleanup receipt {sorted(listed)}"
        assert listed[pid]["absent"] is True and listed[pid]["verified"] in ("gone", "pid reused")
        expected = "descendant" if not role.startswith("worker") else \
            "preflight" if role.startswith("worker-check:") else "worker"  # the pre-flight's workers too
        assert listed[pid]["role"] == expected
        assert not _ours(pid), f"{role} {pid} is still running"
    assert receipt["all_absent"] is True and receipt["count"] == len(receipt["processes"])
    return comp


def _run(tmp_path, **params):
    campaign = faultlib.write_campaign(tmp_path, **params)
    result = faultlib.run_harness("run", campaign, "--out", tmp_path / "b")
    return result.returncode, result.stdout


@pytest.mark.parametrize("params, reason", [
    ({"fault": "exit"}, "worker exited with code 3: faulty: exit"),
    ({"fault": "abort"}, "worker exited with signal SIGABRT"),
    ({"spawn": "child"}, "worker left processes running: pid"),
    ({"spawn": "daemon"}, "worker left processes running: pid"),
    ({"spawn": "daemon", "fault": "exit"}, "worker exited with code 3"),
], ids=["exit-3", "abort", "grandchild", "setsid-double-fork", "double-fork-then-exit"])
def test_worker_fault_fails_the_campaign(tmp_path, tidy, params, reason):
    rc, out = _run(tmp_path, **params)
    comp = assert_failed_bundle(tmp_path, rc, out, "A1", reason)
    assert "only 1 of 2 runs were started" in comp["reason"]
    if params.get("spawn"):
        (_, grandchild), = [(r, p) for r, p in faultlib.read_pids(faultlib.pids_file(tmp_path)) if r in ("child", "daemon")]
        if "left processes" in reason:
            # (its command line is the one seen first: 'sleep 300', or the worker's if the
            # runner saw it between fork and exec)
            assert f"pid {grandchild} (" in comp["reason"]


def test_hang_past_run_timeout_kills_the_group(tmp_path, tidy):
    rc, out = _run(tmp_path, fault="hang", spawn="child", run_s=1)
    assert_failed_bundle(tmp_path, rc, out, "A1", "killed after 1.0 s (run timeout 1 s)", record_status="timeout")


def test_failure_in_a_later_run_keeps_earlier_evidence(tmp_path, tidy):
    rc, out = _run(tmp_path, fault="exit", spawn="daemon", at="B1", order="ABBA")
    comp = assert_failed_bundle(tmp_path, rc, out, "B1", "worker exited with code 3")
    assert [r["status"] for r in comp["runs"]] == ["ok", "failed"]
    assert "only 2 of 4 runs were started" in comp["reason"]
    assert comp["parity"]["note"] == "no successful run of both variants to compare"


def test_worker_killed_from_outside(tmp_path, tidy):
    campaign = faultlib.write_campaign(tmp_path, fault="hang", spawn="child")
    proc = faultlib.popen_harness("run", campaign, "--out", tmp_path / "b")
    try:
        worker = faultlib.wait_for_pid(faultlib.pids_file(tmp_path), "hanging", proc)
        os.kill(worker, signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert_failed_bundle(tmp_path, proc.returncode, out, "A1", "worker exited with signal SIGKILL")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_to_harness_run(tmp_path, tidy, sig):
    campaign = faultlib.write_campaign(tmp_path, fault="hang", spawn="daemon" if sig == signal.SIGINT else "child")
    proc = faultlib.popen_harness("run", campaign, "--out", tmp_path / "b")
    try:
        faultlib.wait_for_pid(faultlib.pids_file(tmp_path), "hanging", proc)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    comp = assert_failed_bundle(tmp_path, proc.returncode, out, "A1", f"interrupted by {sig.name}")
    assert comp["reason"].count(f"interrupted by {sig.name}") == 2  # the run's reason and the runner's
