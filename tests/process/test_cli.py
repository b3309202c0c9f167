"""The command line as a user meets it: help, usage errors, and the demo end to end with the
digest it prints."""
from __future__ import annotations

import hashlib
import re

from conftest import CAMPAIGNS, harness, no_traceback
from harness.files import read_json


def test_help():
    result = harness("--help")
    assert result.returncode == 0 and result.stderr == ""
    for command in ("run", "verify", "target"):
        assert re.search(rf"^\s+{command}\s", result.stdout, re.M), result.stdout
    run_help = harness("run", "--help")
    assert run_help.returncode == 0 and "--force" in run_help.stdout and "--out" in run_help.stdout


def test_usage_errors_exit_2():
    for args in ([], ["nonsense"], ["run"], ["verify"]):
        result = harness(*args)
        assert result.returncode == 2, args
        assert "usage:" in result.stderr and no_traceback(result)


def test_missing_campaign_file(tmp_path):
    result = harness("run", tmp_path / "missing.yaml", "--out", tmp_path / "out")
    assert result.returncode == 2 and no_traceback(result)
    assert result.stderr.strip() == f"harness run: error: {tmp_path / 'missing.yaml'}: cannot read campaign file " \
                                    f"(No such file or directory)"
    assert not (tmp_path / "out").exists()


def test_demo_end_to_end(tmp_path):
    out = tmp_path / "demo"
    result = harness("run", CAMPAIGNS / "demo.yaml", "--out", out, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"bundle: {out}"
    assert "status: complete" in lines and any(line.startswith("parity: identical") for line in lines)
    digest = hashlib.sha256((out / "tagmanifest-sha256.txt").read_bytes()).hexdigest()
    assert lines[-2:] == [f"digest: {digest}", "exit: 0 (complete, outputs agree)"]
    comparison = read_json(out / "data" / "comparison.json")
    # The short stage table (issue 21.6): most base self CPU first, as REPORT.md orders it.
    head = next(k for k, line in enumerate(lines) if line.startswith("stage self CPU (s per run"))
    from harness.bundle.model import Comparison
    from harness.render.text import stage_order

    shown = [line.split("|")[1].strip().split(" ")[0] for line in lines[head + 3:head + 3 + len(comparison["stages"])]]
    assert shown == stage_order(Comparison.of(comparison).stages)[:len(shown)] and shown
    assert comparison["status"] == "complete" and comparison["parity"]["identical"]
    assert comparison["parity"]["error_returns"] == 1 and comparison["parity"]["errors_identical"]
    golden = comparison["parity"]["golden"]
    assert golden is None or golden["identical"] is True  # demo.yaml may pin a golden file
    assert (out / "data" / "campaign.yaml").read_bytes() == (CAMPAIGNS / "demo.yaml").read_bytes()
    verified = harness("verify", out)
    assert verified.returncode == 0 and f"digest {digest}" in verified.stdout
