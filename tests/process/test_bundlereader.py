"""One bundle reader for report, reproduce, compare and golden, and one BundleError."""
from __future__ import annotations

import os

import pytest

from harness import contract as C
from harness import records
from harness.bundle import write as bundle, read as bundlereader
from harness.render import report
from harness.commands import compare, golden


def test_one_loader_reads_every_record_the_readers_use(demo_bundle):
    b = bundlereader.load(demo_bundle)
    assert [r["label"] for r in b["runs"]] == b["campaign"]["labels"] == [r["label"] for r in b["comparison"]["runs"]]
    assert b["runner"]["runs_started"] == len(b["runs"]) and b["inputs"]["schema"] == C.SCHEMAS["inputs"]
    assert b["workload"]["digest"] == b["runs"][0]["workload_sha256"] and b["reproduction"] is None
    assert b["digest"] == bundlereader.digest(demo_bundle) and len(b["digest"]) == 64
    assert report.load_bundle(demo_bundle)["verified"] == (0, ())


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


def test_there_is_one_bundle_error_and_no_second_loader():
    assert not hasattr(report, "BundleError") and not hasattr(report, "_read_json")
    from harness.judge import reproduce

    assert not hasattr(reproduce, "load") and not hasattr(reproduce, "machine")
    assert "read_json" not in vars(golden) and "json" not in vars(compare)
