"""The engine for real: execution order from a log the workers append to (hyperfine style),
one process per run importing its own revision, stage CPU in a real run, a parity mismatch
end to end, a run killed at its timeout, and no torch in the demo's worker."""
from __future__ import annotations

import json
import signal
import textwrap
from pathlib import Path

import pytest
import yaml

from conftest import CAMPAIGNS, cache_env, harness, make_target, no_traceback, write_campaign
from harness import contract as C
from harness import rules as R
from harness.files import read_json


def steps(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def expected_tokens(labels: list[str], items: int = 3) -> list[str]:
    out = []
    for label in labels:
        out += [f"{label} setup"] + [f"{label} run"] * items + [f"{label} close"]
    return out


@pytest.mark.parametrize("order, labels", [
    ("ABBA", ["A1", "B1", "B2", "A2"]),
    ("ABBAABBA", ["A1", "B1", "B2", "A2", "A3", "B3", "B4", "A4"]),
])
def test_execution_order_from_the_log(probe_runs, order, labels):
    run = probe_runs[order]
    assert run.result.returncode == 0, run.result.stdout + run.result.stderr
    rows = steps(run.log)
    # The pre-flight (one worker per revision: setup, one item and a few repeats of it, to see how
    # much its wall moves) comes before any run.
    first = next(i for i, r in enumerate(rows) if not r["label"].startswith("check:"))
    for label in ("check:base", "check:candidate"):
        tokens = [r["token"] for r in rows[:first] if r["label"] == label]
        assert tokens[0] == "setup" and tokens[-1] == "close" and set(tokens[1:-1]) == {"run"}, tokens
    labels_seen = [r["label"] for r in rows[:first]]
    assert labels_seen == sorted(labels_seen, key=("check:base", "check:candidate").index)
    assert all(not r["label"].startswith("check:") for r in rows[first:])
    rows = rows[first:]
    # The file, token by token: every run set up, ran its items, closed, then the next began.
    assert [f"{r['label']} {r['token']}" for r in rows] == expected_tokens(labels)
    assert [r["variant"] for r in rows if r["token"] == "setup"] == \
        ["base" if label[0] == "A" else "candidate" for label in labels]
    comparison = read_json(run.out / "data" / "comparison.json")
    assert [r["label"] for r in comparison["runs"]] == labels
    assert read_json(run.out / "data" / "campaign.json")["labels"] == labels


@pytest.mark.parametrize("order", ["ABBA", "ABBAABBA"])
def test_runs_are_sequential_separate_processes(probe_runs, order):
    run = probe_runs[order]
    rows = steps(run.log)  # the pre-flight's workers are fresh processes too, before the runs
    spans, pids = [], []
    for label in dict.fromkeys(r["label"] for r in rows):
        mine = [r for r in rows if r["label"] == label]
        spans.append((min(r["t_ns"] for r in mine), max(r["t_ns"] for r in mine)))
        assert len({r["pid"] for r in mine}) == 1  # items ran on threads of one process
        pids.append(mine[0]["pid"])
        if label.startswith("check:"):
            continue
        record = read_json(run.out / "data" / "runs" / f"{label}.json")
        assert record["pid"] == mine[0]["pid"] and record["status"] == "ok"
    assert len(set(pids)) == len(pids), pids  # a fresh process per run
    for (_, end), (start, _) in zip(spans, spans[1:]):
        assert end < start  # no overlap: the next run starts after the previous one ended


@pytest.mark.parametrize("order", ["ABBA", "ABBAABBA"])
def test_each_run_imports_its_own_revision(probe_runs, order):
    run = probe_runs[order]
    for row in steps(run.log):
        assert row["version"] == row["variant"]  # a module constant that differs between revisions
        if row["token"] == "setup":
            tree = Path(row["tree"])
            assert tree.name == row["variant"]
            assert Path(row["core_file"]).is_relative_to(tree)
    for path in sorted((run.out / "data" / "runs").glob("*.json")):
        record = read_json(path)
        assert record["imported_from"]["stages"] == {"outer": "tree:probe/core.py", "inner": "tree:probe/core.py"}
        # the workers' copy of the workload folder, as the bundle stores it (runner.stage_workload)
        assert record["imported_from"]["workload"].endswith("/workload/probe_workload.py")
        assert record["stages_installed"] == {"outer": True, "inner": True}


def test_stage_cpu_in_a_real_run(probe_runs):
    """outer(n) spins n itself and calls inner(n/2) twice: inner is about half of outer."""
    run = probe_runs["ABBA"]
    for label in ("A1", "B1", "B2", "A2"):
        stages = read_json(run.out / "data" / "runs" / f"{label}.json")["stages"]
        outer, inner = stages["outer"], stages["inner"]
        assert outer["calls"] == 3 and inner["calls"] == 6  # 3 items, counted per run
        assert inner["self_cpu_s"] == pytest.approx(inner["incl_cpu_s"])  # inner calls no stage
        assert 0 < outer["self_cpu_s"] < outer["incl_cpu_s"]
        assert outer["self_cpu_s"] == pytest.approx(outer["incl_cpu_s"] - inner["incl_cpu_s"], rel=1e-9, abs=1e-9)
        assert 0.3 < inner["incl_cpu_s"] / outer["incl_cpu_s"] < 0.7, stages
    comparison = read_json(run.out / "data" / "comparison.json")
    assert comparison["stages"]["outer"]["calls_per_run"] == 3
    assert comparison["stages"]["inner"]["calls_per_run"] == 6
    assert comparison["parity"]["call_counts_identical"] and comparison["parity"]["identical"]


def test_worker_does_not_import_torch(probe_runs):
    run = probe_runs["ABBA"]
    assert all(not r["torch_imported"] for r in steps(run.log) if r["token"] == "close")


# --- a parity mismatch end to end ------------------------------------------------------

SIGNS_CORE = '''
    import numpy as np


    def signs():
        return np.array([-0.0, 1.0, 2.0])
'''

SIGNS_WORKLOAD = '''
    import numpy as np

    from signs import core


    class W:
        items = ["only"]

        def run(self, item):
            return {"same": np.arange(4), "signed": core.signs()}


    def setup(ctx):
        return W()
'''


def test_parity_mismatch_end_to_end(tmp_path):
    tree, patch = make_target(tmp_path, {"signs/__init__.py": "", "signs/core.py": SIGNS_CORE},
                              {"signs/core.py": SIGNS_CORE.replace("[-0.0,", "[0.0,")})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "signs_workload.py").write_text(textwrap.dedent(SIGNS_WORKLOAD))
    campaign = write_campaign(tmp_path / "signs.yaml", tree, patch, workloads, "signs_workload:setup",
                              order="ABBA")
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=120)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "parity: NOT identical" in result.stdout
    comparison = read_json(out / "data" / "comparison.json")
    assert comparison["status"] == "complete"
    parity = comparison["parity"]
    assert parity["identical"] is False and parity["reference"] == "A1"
    assert parity["fields_compared"] == 6 and parity["fields_identical"] == 4  # B1 and B2 differ
    assert {(m["run"], m["field"], m["reason"]) for m in parity["mismatches"]} == \
        {("B1", "signed", "bytes differ"), ("B2", "signed", "bytes differ")}
    for row in parity["divergence"]:
        assert row["field"] == "signed" and row["differing"] == 1 and row["elements"] == 3
        assert row["max_abs"] == 0.0 and row["max_ulp"] == 0 and row["nan_mismatch"] == 0
    assert len(parity["divergence"]) == 2
    verified = harness("verify", out)
    assert verified.returncode == 0, verified.stdout  # a mismatch is evidence, not corruption


# --- a run killed at its timeout ----------------------------------------------------------

SLEEPY_WORKLOAD = '''
    import time

    import numpy as np


    class W:
        items = ["quick", "slow"]  # the pre-flight runs "quick"; the timed loop hangs on "slow"

        def run(self, item):
            if item == "slow":
                time.sleep(60)
            return {"x": np.zeros(1)}


    def setup(ctx):
        return W()
'''


def test_run_killed_at_its_timeout(tmp_path):
    tree, patch = make_target(tmp_path, {"pkg/__init__.py": "X = 1\n"}, {"pkg/__init__.py": "X = 2\n"})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "sleepy.py").write_text(textwrap.dedent(SLEEPY_WORKLOAD))
    campaign = write_campaign(tmp_path / "sleepy.yaml", tree, patch, workloads, "sleepy:setup",
                              order="ABBA", timeouts={"run_s": 2, "campaign_s": 120})
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=120)
    assert result.returncode == 4, result.stdout + result.stderr
    assert no_traceback(result)
    comparison = read_json(out / "data" / "comparison.json")
    assert comparison["status"] == "failed"
    assert "run timeout 2 s" in comparison["reason"] and comparison["reason"].startswith("A1: killed after")
    assert [r["label"] for r in comparison["runs"]] == ["A1"]  # the campaign stopped there
    record = read_json(out / "data" / "runs" / "A1.json")
    assert record["status"] == "timeout" and record["exit_code"] == -signal.SIGKILL  # the group was killed
    cleanup = read_json(out / "data" / "receipts" / "cleanup.json")
    workers = [p for p in cleanup["processes"] if p["role"] == "worker"]
    assert [(p["run"], p["pid"]) for p in workers] == [("A1", record["pid"])]
    assert all(p["absent"] for p in cleanup["processes"]) and cleanup["all_absent"] is True
    assert harness("verify", out).returncode == 0


# --- the demo's worker never loads torch ---------------------------------------------------

PROBE_DEMO = '''
    """The demo workload, unchanged, plus a report of what the worker has imported."""
    import sys

    sys.path.insert(0, {workloads!r})
    import demo_workload


    class Probe(demo_workload.DemoWorkload):
        def metrics(self):
            return {{**super().metrics(), "torch_imported": "torch" in sys.modules,
                    "transformers_imported": "transformers" in sys.modules}}


    def setup(ctx):
        return Probe(ctx)
'''


def test_demo_worker_never_imports_torch(tmp_path):
    d = yaml.safe_load((CAMPAIGNS / "demo.yaml").read_text())
    for step in d["target"]["build"]:
        for kind in ("tree", "patch"):
            if kind in step:
                step[kind] = str(CAMPAIGNS / step[kind])
    # a folder of its own: the bundle stores the workload folder, which must not hold the target cache
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "probe_demo.py").write_text(
        textwrap.dedent(PROBE_DEMO.format(workloads=str(CAMPAIGNS / "workloads"))))
    d["workload"] = {"entry": "probe_demo:setup", "path": str(tmp_path / "probe"),
                     "params": {**d["workload"]["params"], "items": 2, "length": 500}}
    d["sandbox"] = {"read": [str(CAMPAIGNS / "workloads")]}  # the demo's workload, which the probe imports
    d.pop("rounds", None)
    d["order"] = "AB"
    d.pop("golden", None)
    campaign = tmp_path / "demo-probe.yaml"
    campaign.write_text(yaml.safe_dump(d))
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert str(CAMPAIGNS / "workloads") in read_json(out / C.CAMPAIGN_JSON)["sandbox"]["read"]
    for label in ("A1", "B1"):
        metrics = read_json(out / "data" / "runs" / f"{label}.json")["metrics"]
        assert metrics["torch_imported"] is False and metrics["transformers_imported"] is False


def test_preflight_that_hangs_is_killed_at_the_run_timeout(tmp_path):
    tree, patch = make_target(tmp_path, {"pkg/__init__.py": "X = 1\n"}, {"pkg/__init__.py": "X = 2\n"})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "sleepy.py").write_text(textwrap.dedent(SLEEPY_WORKLOAD).replace('["quick", "slow"]', '["slow"]'))
    campaign = write_campaign(tmp_path / "sleepy.yaml", tree, patch, workloads, "sleepy:setup",
                              timeouts={"run_s": 2, "campaign_s": 120})
    result = harness("run", campaign, "--out", tmp_path / "bundle", env=cache_env(tmp_path / "cache"), timeout=120)
    assert result.returncode == 2 and no_traceback(result)
    assert "pre-flight: " in result.stderr and "base (" in result.stderr and "killed after 2.0 s" in result.stderr
    assert not (tmp_path / "bundle").exists()


# --- rounds: auto ---------------------------------------------------------------------------

def test_rounds_auto_takes_as_many_rounds_as_the_first_round_says_fit_the_budget(tmp_path):
    from harness import records, rehash
    from harness.selftest.tamper import reseal

    same = SIGNS_CORE
    tree, patch = make_target(tmp_path, {"signs/__init__.py": "", "signs/core.py": same},
                              {"signs/core.py": same + "\n    # candidate\n"})
    workloads = tmp_path / "workloads"
    workloads.mkdir()
    (workloads / "signs_workload.py").write_text(textwrap.dedent(SIGNS_WORKLOAD))
    campaign = write_campaign(tmp_path / "auto.yaml", tree, patch, workloads, "signs_workload:setup",
                              budget_s=2.5, min_rounds=3)
    text = campaign.read_text().replace("order: AB\n", "rounds: auto\n")
    campaign.write_text(text)
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode in (0, 6), result.stdout + result.stderr
    doc = read_json(out / "data" / "campaign.json")
    first = sum(read_json(out / "data" / "runs" / f"{label}.json")["process"]["wall_s"] for label in ("A1", "B1"))
    cap = R.auto_rounds(2.5, first, 3, 100)
    seq = read_json(out / "data" / "comparison.json")["stats"]["sequential"]
    want = doc["rounds"]  # the cap ends it, or a look that decided (a quiet A against A can read equal)
    assert (doc["budget_s"], doc["min_rounds"], seq["cap"]) == (2.5, 3, cap)
    assert (want, seq["stopped"]) == (cap, "cap") or (want < cap and seq["stopped"] == "decided"
                                                       and seq["looks"][-1]["verdict"] == "equal")
    assert doc["order"] == R.round_order(want, doc["seed"], 0, 3) and len(doc["labels"]) == 2 * want
    assert len(list((out / "data" / "runs").iterdir())) == 2 * want
    assert "rounds: auto: the first round took" in result.stderr
    assert harness("verify", out).returncode == 0 and not rehash.rehash(out).problems

    # A budget whose cap the campaign did not reach, with no look that decided, is refused, even re-sealed.
    doc["budget_s"] = 250.0
    (out / "data" / "campaign.json").write_text(json.dumps(doc))
    reseal(out)
    problems = rehash.rehash(out).problems
    assert any("below the cap" in str(p) or "stats.sequential.cap" in str(p) for p in problems), problems
    assert harness("verify", out).returncode == 1
