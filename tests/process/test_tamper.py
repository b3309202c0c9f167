"""Issue 6.3: the hand-written tampering suite on a sealed demo bundle. Every mutation must be
caught, with its cause named, by `harness verify` and by the stdlib rehash script, and
neither may follow a symlink out of the bundle or unpickle/execute anything; `harness
selftest tamper` runs it beside the field and closed-world walks and prints their coverage."""
from __future__ import annotations

import gzip
import io
import re

import numpy as np

from conftest import harness
from harness.selftest import tamper


def test_every_mutation_is_detected_by_both_checkers(demo_bundle):
    results = tamper.run_suite(demo_bundle)
    names = [r.mutation for r in results]
    files = tamper.bundle_files(demo_bundle)
    # The suite covers what the issue lists: every file flipped and deleted, and the rest.
    assert sum(n.startswith("flip-byte ") for n in names) == len(files)
    assert sum(n.startswith("delete ") for n in names) == len(files)
    for kind in ("add ", "rename ", "symlink ", "outside FIFO", "FIFO in place", "manifest line data/../",
                 "absolute path", "better speed-up", "swapped for another valid one", "pickled", "holding code"):
        assert any(kind in n for n in names), kind
    missed = [(r.mutation, r.verify.note or r.verify.lines[:2], r.rehash.note or r.rehash.lines[:2])
              for r in results if not r.detected_by_both]
    assert not missed, missed
    # At least one re-sealed forgery per record rule, each named by its rule.
    rules = {r.rule for r in results}
    assert {"plan", "identity", "status", "ledger", "physics", "arrays", "files", "parsing", "bag-info",
            "campaign", "canonical", "safety"} <= rules
    for r in results:  # a forgery's problem line names its rule in brackets
        if r.rule not in ("layout", "canonical", "safety"):
            assert f"[{r.rule}]" in r.cause or r.rule in ("parsing", "bag-info"), r.mutation
    # and says which record type it forges, for the coverage table
    docs = {r.doc for r in results}
    assert {"run", "campaign", "runner", "cleanup", "environment", "revisions", "workload", "bag-info", "comparison",
            "golden", "log", "array", "manifest", "tagmanifest", "layout"} <= docs, docs
    # Verify-only mutations are exactly those only campaign.yaml can expose; rehash passes them.
    only = [r for r in results if r.verify_only]
    assert only and all(r.rule == "campaign" and r.rehash.exit_code == 0 for r in only)
    n = len(results)
    assert tamper.summary(results) == (f"{n} mutations, {n} detected by harness verify, {n - len(only)} of "
                                       f"{n - len(only)} detected by rehash.py ({len(only)} verify-only: only "
                                       "campaign.yaml can tell)")


def test_the_untouched_bundle_passes_both(demo_bundle):
    v, r = tamper.baseline(demo_bundle)
    assert v.exit_code == 0 and r.exit_code == 0, (v.lines, r.lines)


def test_forged_speedup_is_caught_only_by_rederiving(demo_bundle, tmp_path):
    """After a consistent re-hash every file hashes right: the only evidence of the forgery
    is that the per-run records give another number."""
    tamper.claim_speedup(demo_bundle, tamper.Context(tmp_path, tmp_path / "marker"))
    v = tamper.run_verify(demo_bundle, "wall.speedup")
    r = tamper.run_rehash(demo_bundle, "wall.speedup")
    for check in (v, r):
        assert check.detected and len(check.lines) == 1
        forged_claim = "data/comparison.json: [derived] wall.speedup claims"
        assert check.lines[0].startswith(forged_claim)
    assert not any("hash mismatch" in line for line in v.lines + r.lines)


def test_traps_are_real(demo_bundle, tmp_path):
    """The pickle trap creates its marker when loaded the unsafe way, so the suite's
    'marker absent' check means something."""
    ctx = tamper.Context(tmp_path, tmp_path / "marker")
    tamper.pickled_array(demo_bundle, ctx)
    victim = demo_bundle / tamper._referenced_array(demo_bundle)
    assert not ctx.marker.exists()
    np.load(io.BytesIO(gzip.decompress(victim.read_bytes())), allow_pickle=True)[0]  # a careless checker
    assert ctx.marker.exists()


def test_symlink_out_of_the_bundle_is_never_followed(demo_bundle, tmp_path):
    """A symlink to a FIFO outside the bundle: opening it would block, so a checker that
    finishes at all did not follow it; the CLI and rehash.py both name it."""
    ctx = tamper.Context(tmp_path, tmp_path / "marker")
    tamper.symlink_to_fifo("data/comparison.json")(demo_bundle, ctx)
    result = harness("verify", demo_bundle, timeout=60)
    assert result.returncode == 1
    assert "FAIL data/comparison.json: is a symlink" in result.stdout
    r = tamper.run_rehash(demo_bundle, "data/comparison.json: is a symlink", timeout=60)
    assert r.detected


def test_selftest_command(demo_bundle):
    result = harness("selftest", "tamper", "--bundle", demo_bundle, "--only", "speed-up", timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("ok   [layout] comparison.json claims a 1.5x better speed-up")
    assert "by rule: layout 1/1" in lines
    assert ("1 mutations, 1 detected by harness verify, 1 of 1 detected by rehash.py "
            "(0 verify-only: only campaign.yaml can tell)") in lines
    table = lines[lines.index("coverage per record type (mutations / refused / free):") + 1:]
    assert table[0].split() == ["record", "type", "hand-written", "field", "walk", "closed", "world"]
    assert table[1].split() == ["comparison", "1", "/", "1", "/", "0", "-", "-"]
    assert "note: fields only the repository binds were not walked: give --repo" in lines


def test_selftest_command_runs_the_walks_and_prints_their_coverage(demo_bundle):
    """--only picks mutations of all three suites by name: the run record's wall in the field
    walk, its log level in the closed-world walk."""
    result = harness("selftest", "tamper", "--bundle", demo_bundle, "--only", "data/runs/B1.json", timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert not [line for line in lines if line.startswith("MISS")]
    walk = next(line for line in lines if line.startswith("field walk: "))
    closed = next(line for line in lines if line.startswith("closed-world walk: "))
    assert re.match(r"field walk: (\d+) mutations, (\d+) of \2 bindable refused", walk), walk
    assert re.match(r"closed-world walk: (\d+) mutations \(.*\), (\d+) of \2 refused", closed), closed
    run = next(line for line in lines if line.split()[:1] == ["run"])
    hand, field, world = re.findall(r"(\d+) / (\d+) / (\d+)", run)
    assert int(field[0]) > 20 and int(world[0]) > 5 and int(hand[0]) >= 2


def test_selftest_refuses_a_bundle_that_fails_untouched(demo_bundle):
    (demo_bundle / "data" / "notes.txt").write_text("already tampered\n")
    result = harness("selftest", "tamper", "--bundle", demo_bundle, "--only", "speed-up", timeout=120)
    assert result.returncode == 2 and "does not pass both checkers" in result.stderr
