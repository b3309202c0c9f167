"""One bundle reader (harness/bundle/read.py) for report, reproduce, compare, golden and summary,
returning a typed Bundle, and one BundleError; it reads as the checkers read: no link followed,
strict JSON, each file under its kind's limit and never a reservation of that limit."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conftest import ROOT
from harness import contract as C
from harness.bundle import read as bundlereader
from harness.bundle import write as bundle
from harness.records import InstructionRecord, MachineClass, RunRecord


def test_one_loader_reads_every_record_the_readers_use(demo_bundle):
    b = bundlereader.load(demo_bundle)
    assert all(isinstance(r, RunRecord) for r in b.runs) and b.instructions == []
    assert [r.label for r in b.runs] == b.campaign.labels == [r.label for r in b.comparison.runs]
    assert b.runner.runs_started == len(b.runs) and b.inputs.schema == C.SCHEMAS["inputs"]
    assert b.workload.digest == b.runs[0].workload_sha256 and b.reproduction is None
    assert b.digest == bundlereader.digest(demo_bundle) and len(b.digest) == 64
    assert isinstance(b.machine, MachineClass) and b.name == "demo" and b.arrays == demo_bundle / "data" / "arrays"
    assert b.golden is not None and set(b.golden["items"]) >= set(b.runner.items)
    assert InstructionRecord  # the other record type the reader returns, for bundles that count instructions


def test_the_loader_follows_no_link_and_refuses_in_one_line(demo_bundle, tmp_path):
    target = demo_bundle / C.COMPARISON
    os.replace(target, tmp_path / "elsewhere.json")
    target.symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(bundle.BundleError, match=r"comparison.json: unreadable"):
        bundlereader.load(demo_bundle)
    target.unlink()
    target.write_text('{"status": "complete", "status": "failed"}')
    with pytest.raises(bundle.BundleError, match=r"comparison.json: invalid JSON \(duplicate key 'status'\)"):
        bundlereader.load(demo_bundle)
    with pytest.raises(bundle.BundleError, match="missing"):
        bundlereader.read_json(tmp_path / "absent.json")
    assert bundlereader.read_json(tmp_path / "absent.json", required=False) is None


def test_a_read_never_reserves_its_kinds_limit(tmp_path):
    """An array's kind may hold 1 GiB: reading a small one under a 256 MB address space works (a
    buffered read of the limit reserved it first)."""
    small = tmp_path / "a.npy.gz"
    small.write_bytes(b"\x1f\x8b small")
    code = (f"from pathlib import Path; from harness.bundle import read; "
            f"print(len(read.read_bytes(Path({str(small)!r}), 1 << 30)))")
    result = subprocess.run(["bash", "-c", f"ulimit -v 262144; exec '{sys.executable}' -c \"{code}\""],
                            capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert (result.returncode, result.stdout.strip()) == (0, "8"), result.stderr[-2000:]


def test_there_is_one_bundle_error_and_no_second_loader():
    from harness.commands import compare, golden
    from harness.judge import reproduce
    from harness.render import report

    assert not hasattr(report, "BundleError") and not hasattr(report, "_read_json")
    assert not hasattr(reproduce, "load") and not hasattr(reproduce, "machine")
    assert "read_json" not in vars(golden) and "json" not in vars(compare)
