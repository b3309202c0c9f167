"""What a user's workload can do to a campaign, on real workers (issue 26, item 6): rewrite the
code under test while a run goes (the next run would measure other code): the campaign fails with
the cause named, and the bundle it seals verifies. A worker that prints a gigabyte:
tests/campaign/test_big_output.py."""
from __future__ import annotations

from conftest import cache_env, harness, no_traceback, small_campaign as _campaign
from harness import contract as C, rehash
from harness.files import read_json

REWRITER = '''
    """Rewrites its revision's tree during the first timed run."""
    import numpy as np


    class Bench:
        items = ["one", "two"]

        def __init__(self, ctx):
            self.ctx = ctx

        def run(self, item):
            if self.ctx.label == "A1":
                (self.ctx.tree / "pkg" / "__init__.py").write_text("X = 3  # rewritten\\n")
            return {"x": np.zeros(1)}


    def setup(ctx):
        return Bench(ctx)
'''

def test_a_workload_that_rewrites_its_revision_tree_fails_the_campaign(tmp_path):
    """Under the sandbox the tree is read-only to its runs: the write fails in the workload.
    With the sandbox off (or where none can be had), the runner's check of the tree after each
    run still finds the change and fails the campaign, naming the file."""
    (tmp_path / "boxed").mkdir()
    campaign = _campaign(tmp_path / "boxed", REWRITER, "rewriter:setup", order="ABBA")
    out = tmp_path / "boxed" / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 4 and no_traceback(result), result.stdout + result.stderr
    comparison = read_json(out / C.COMPARISON)
    box = read_json(out / C.ENVIRONMENT)["sandbox"]["level"]
    if box in ("full", "partial"):
        assert "PermissionError" in comparison["reason"] and "pkg/__init__.py" in comparison["reason"]
    assert not rehash.rehash(str(out)).problems

    (tmp_path / "open").mkdir()
    campaign = _campaign(tmp_path / "open", REWRITER, "rewriter:setup", order="ABBA", sandbox="off")
    out = tmp_path / "open" / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 4 and no_traceback(result), result.stdout + result.stderr
    comparison = read_json(out / C.COMPARISON)
    assert comparison["runs"][-1]["label"] == "A1" and comparison["runs"][-1]["status"] == "failed"
    assert "the base revision's tree changed during A1 (pkg/__init__.py)" in comparison["reason"]
    assert not rehash.rehash(str(out)).problems
