"""Instruction counts under valgrind (issue 19): the campaign keys, the schedule and the
comparison section both checkers spell, and, where valgrind is installed, a campaign whose
base sets up heavily and whose items are light: setup must not reach the counts."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

import fakes
from conftest import CAMPAIGNS, harness, make_target, write_campaign
from harness import contract as C
from harness import rules as R
from harness import records, rehash
from harness.comparison import derive as comparison
from harness.engine import instructions
from harness.plan import spec
from harness import outcomes as verdict

NEEDS_VALGRIND = pytest.mark.skipif(shutil.which("valgrind") is None,
                                    reason="valgrind is not installed (sudo apt-get install valgrind)")

MINIMAL = {"name": "c", "target": {"repo": "."}, "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"},
           "workload": {"entry": "w:setup"}}


def parse(**extra) -> spec.Campaign:
    return spec.parse({**MINIMAL, **extra}, Path("/x/c.yaml"))


def test_metrics_default_to_wall_and_instructions_take_items_and_runs():
    assert parse().metrics == ("wall",) and parse().instructions is None
    c = parse(metrics=["wall", "instructions"], instructions={"items": 3})
    assert c.metrics == ("wall", "instructions") and c.instructions == spec.Instructions(3, 2)


def test_an_unset_first_look_grows_to_follow_the_instruction_runs_and_a_set_one_is_held():
    metrics = {"metrics": ["wall", "instructions"]}
    for runs in (2, 3):
        c = parse(**metrics, instructions={"runs": runs})
        assert c.min_rounds == c.rounds == max(C.DEFAULT_FIRST_LOOK, 2 * runs + 1)
        assert c.order.count("A") + c.order.count("B") == 2 * c.min_rounds
    with pytest.raises(spec.SpecError, match=r": min_rounds: expected at least 5 with 2 instruction runs"):
        parse(**metrics, instructions={"runs": 2}, min_rounds=4)
    assert parse(min_rounds=4).min_rounds == 4  # without instructions, nothing moves


@pytest.mark.parametrize("extra, key", [
    ({"metrics": ["instructions"]}, "metrics"),
    ({"metrics": "wall"}, "metrics"),
    ({"metrics": ["wall", "cycles"]}, "metrics"),
    ({"instructions": {"items": 2}}, "instructions"),  # without the metric
    ({"metrics": ["wall", "instructions"], "instructions": {"runs": 1}}, "instructions.runs"),
    ({"metrics": ["wall", "instructions"], "instructions": {"items": 0}}, "instructions.items"),
    ({"metrics": ["wall", "instructions"], "instructions": {"repeat": 2}}, "instructions.repeat"),
])
def test_bad_metric_settings_are_one_line_errors_naming_the_key(extra, key):
    with pytest.raises(spec.SpecError) as err:
        parse(**extra)
    assert f": {key}: expected" in str(err.value) and "\n" not in str(err.value)


def test_metric_override_adds_instructions_and_wall_turns_them_off():
    assert spec.parse_overrides(metrics=["instructions"]) == {"metrics": ["wall", "instructions"]}
    with pytest.raises(spec.SpecError, match="--metric 'cycles'"):
        spec.parse_overrides(metrics=["cycles"])
    data = {**MINIMAL, "metrics": ["wall", "instructions"], "instructions": {"items": 2}}
    off = spec._apply_overrides(data, {"metrics": ["wall"]}, Path("c.yaml"))
    assert spec.parse(off, Path("/x/c.yaml")).instructions is None


@pytest.mark.parametrize("order, runs", [("AB", 2), ("ABBAABBAAB", 2), ("BAAB", 3), ("AB" * 20, 10)])
def test_schedule_puts_every_instruction_run_before_the_last_wall_run(order, runs):
    assert rehash.C is C  # both checkers read the one contract: one schedule
    instr = R.instruction_order(runs)
    assert instr.count("A") == instr.count("B") == runs
    assert all(instr[k:k + 2] in ("AB", "BA") for k in range(0, len(instr), 2))
    plan = R.schedule(order, instr)
    assert [label for label, *_ in plan if not label.startswith("I")] == [label for label, _ in R.labels(order)]
    assert [label for label, *_ in plan if label.startswith("I")] == ["I" + label for label, _ in R.labels(instr)]
    assert all(C.INSTRUCTION_LABEL_RE.match(label) for label, *_ in plan if label.startswith("I"))
    assert not plan[-1][0].startswith("I")
    for label, _, _, after in plan:  # each instruction run sits right after the wall run it names
        if label.startswith("I") and after is not None:
            walls = [row[0] for row in plan[:[row[0] for row in plan].index(label)] if not row[0].startswith("I")]
            assert walls[-1] == after


def test_the_runner_counts_with_the_flags_and_environment_the_contract_declares():
    # the command and environment rehash.py holds every instruction record to are the runner's own
    assert instructions.REGION_FLAGS is C.REGION_FLAGS and instructions.ENV is C.INSTRUCTION_ENV
    assert spec.MAX_INSTRUCTION_RUNS == C.MAX_INSTRUCTION_RUNS
    record = _instr("IA1", 5)
    assert set(records.to_json(record)) == {k for k in C.FIELDS["instructions"] if "." not in k and "[" not in k}
    assert record.tool == "callgrind" and record.instructions == 5 and record.ok
    failed = _instr("IB1", 5, status="failed")
    assert failed.instructions is None and failed.items == [] and failed.python is None
    with pytest.raises(ValueError, match="an ok instruction run needs its count"):
        records.InstructionRecord.of(fakes.job("IA1", mode="instructions"), status="ok",
                                     reason=None, exit_code=0, pid=1, process=records.Process(0.0, 1.0, 1.0),
                                     log=records.Log("data/logs/IA1.log", 0, "0" * 64, 0, False), counted=None,
                                     count=None, after=None, **VALGRIND)


VALGRIND = {"version": "valgrind-3.19.0", "command": ["setarch", "-R", "valgrind"], "env": dict(C.INSTRUCTION_ENV)}


def _instr(label: str, count: int, status: str = "ok") -> records.InstructionRecord:
    """An instruction record as the runner writes it, counting items a and b."""
    ok = status == "ok"
    job = fakes.job(label, mode="instructions")
    counted = records.CountResult(["a", "b"], 0, "f" * 64, "e" * 64, records.Interpreter.current()) if ok else None
    return records.InstructionRecord.of(job, status=status, reason=None if ok else "exit 1", exit_code=0 if ok else 1,
                                        pid=1, process=records.Process(0.0, 1.0, 1.0),
                                        log=records.Log(C.log_path(label), 0, "0" * 64, 0, False), counted=counted,
                                        count=count if ok else None, after=None, **VALGRIND)


def _wall(verdict: str, ci95: list[float] | None = None):
    """The three figures of the wall's stats the instructions section reads (verdict, interval,
    band), in the typed shape comparison passes it."""
    return SimpleNamespace(verdict=verdict, paired=SimpleNamespace(ci95=ci95), band=0.02)


@pytest.mark.parametrize("counts, wall, repeated, detected, disagrees", [
    ({"IA1": 1000, "IA2": 1000, "IB1": 1000, "IB2": 1000}, "equal", True, False, False),
    ({"IA1": 1000, "IA2": 1000, "IB1": 990, "IB2": 990}, "equal", True, True, False),
    ({"IA1": 1000, "IA2": 1000, "IB1": 1010, "IB2": 1010}, "improved", True, True, True),
    ({"IA1": 1000, "IA2": 1001, "IB1": 1000, "IB2": 1000}, "regressed", False, False, False),
    ({"IA1": 1000, "IA2": 1002, "IB1": 990, "IB2": 990}, "inconclusive", False, True, False),
])
def test_the_instructions_section_is_derived_alike_by_both_checkers(counts, wall, repeated, detected, disagrees):
    instr = [_instr(label, n) for label, n in counts.items()]
    ours = comparison.instructions_section(instr, _wall(wall))
    assert ours == rehash.instructions_section(records.to_json(instr), wall)
    assert (ours["repeated"], ours["detected"], ours["disagrees"]) == (repeated, detected, disagrees)
    if not repeated:  # the campaign says by how much the runs of one variant differ
        assert ours["base"]["spread_pct"] == pytest.approx(100 * (max(counts["IA1"], counts["IA2"])
                                                                  / min(counts["IA1"], counts["IA2"]) - 1))


def test_the_verdict_line_shows_instructions_and_flags_disagreement_in_direction():
    instr = [_instr("IA1", 1000), _instr("IA2", 1000), _instr("IB1", 1010), _instr("IB2", 1010)]
    parts = {"stats": {"verdict": "improved", "rounds": {"n": 5}, "band": 0.02, "warnings": [],
                       "paired": {"geomean_ratio": 0.9, "ci95": [0.85, 0.95], "metric": "item wall_s"}}}
    ins = comparison.instructions_section(instr, _wall("improved", [0.85, 0.95]))
    text = verdict.line(fakes.comparison(**parts, instructions=ins, metrics=[R.instructions_entry(ins)]))
    # the counts' own verdict beside the wall's: 1% more instructions, outside the +-0.2% band
    assert ("instructions: regressed, candidate/base 1.0100 (+1.00%, repeated exactly, 2+2 runs of 2 items, "
            "band +-0.2%)") in text
    assert "wall says improved but instructions went the other way (+1.00%)" in text
    assert "instructions" not in verdict.line(fakes.comparison(**parts))


# --- under valgrind ------------------------------------------------------------------------
SETUP_LOOPS = 3_000_000  # ~100M instructions of setup in the base, none in the candidate

HEAVY_SETUP = f'''
import numpy as np


class Workload:
    """Heavy setup in the base only, the same light items in both."""

    def __init__(self, ctx):
        total = 0
        for i in range({SETUP_LOOPS} if ctx.variant == "base" else 0):
            total += i
        self.items = ["i0", "i1", "i2"]

    def run(self, item):
        total = 0
        for i in range(2000):
            total += i
        return {{"total": np.array([total], dtype=np.int64)}}


def setup(ctx):
    return Workload(ctx)
'''


@pytest.fixture(scope="module")
def counted(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("instructions")
    tree, patch = make_target(where, {"lib/__init__.py": "VERSION = 1\n"}, {"lib/__init__.py": "VERSION = 2\n"})
    (where / "wl").mkdir()
    (where / "wl" / "heavy.py").write_text(HEAVY_SETUP)
    yaml_path = write_campaign(where / "heavy.yaml", tree, patch, where / "wl", "heavy:setup",
                               metrics=["wall", "instructions"], instructions={"items": 2},
                               timeouts={"run_s": 120, "campaign_s": 600})
    out = where / "bundle"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@NEEDS_VALGRIND
def test_setup_does_not_reach_the_counts_and_they_repeat_exactly(counted):
    section = json.loads((counted / C.COMPARISON).read_text())["instructions"]
    base, cand = section["base"]["counts"][0], section["candidate"]["counts"][0]
    # The base's setup ran SETUP_LOOPS loop iterations (tens of instructions each, ~50x the
    # region) that the candidate's did not: even 1% of it counted would put the base ~1M
    # above. What is left is the state setup leaves behind (allocator and free lists, a few
    # hundred instructions here), never setup's own work.
    assert base < SETUP_LOOPS and cand < SETUP_LOOPS
    assert abs(base - cand) < 1e-3 * cand and abs(base - cand) < SETUP_LOOPS / 1000
    # Two runs of one variant agree to the instruction.
    assert section["repeated"] and section["base"]["spread_pct"] == 0 == section["candidate"]["spread_pct"]
    assert section["items"] == 2
    record = json.loads((counted / C.instructions_path("IA1")).read_text())
    assert record["items"] == ["i0", "i1"] and record["env"] == instructions.ENV
    assert record["command"][:2] == ["setarch", "-R"] and record["valgrind"].startswith("valgrind-")


@NEEDS_VALGRIND
def test_both_checkers_pass_the_bundle_and_the_verdict_line_shows_the_counts(counted):
    assert harness("verify", counted).returncode == 0
    assert rehash.rehash(str(counted)).problems == []
    shown = harness("compare", counted)
    assert "repeated exactly, 2+2 runs of 2 items, band +-0.2%)" in shown.stdout
    # the same region in both variants: 1 within the few hundred instructions setup leaves behind,
    # so the counts' own verdict is equal
    found = re.search(r"instructions: (\w+), candidate/base ([0-9.]+) ", shown.stdout)
    assert abs(float(found.group(2)) - 1) < 1e-3 and found.group(1) == "equal", shown.stdout


def _edit(bundle: Path, label: str, **changes) -> None:
    path = bundle / C.instructions_path(label)
    record = json.loads(path.read_text())
    record.update(changes)
    path.write_text(json.dumps(record))


def _impossible_counts(bundle: Path) -> None:
    """Both candidate counts past 1e10 instructions a second of their processes' lives, alike so
    that the re-derived comparison stays inside the contract's bounds (a spread of 0, a ratio
    under 1e9): only the records' own physics can catch them."""
    walls = [json.loads((bundle / C.instructions_path(label)).read_text())["process"]["wall_s"]
             for label in ("IB1", "IB2")]
    for label in ("IB1", "IB2"):
        _edit(bundle, label, instructions=int(2 * C.MAX_INSTRUCTIONS_PER_S * max(walls)) + 1)


@NEEDS_VALGRIND
@pytest.mark.parametrize("edit, finding", [
    (_impossible_counts, "more than 1e+10 a second"),
    (lambda b: _edit(b, "IA1", command=["valgrind", "python3"]), "is not `setarch -R valgrind"),
    (lambda b: _edit(b, "IA2", env={"PYTHONHASHSEED": "1"}), "env"),
    (lambda b: _edit(b, "IB2", items=["i0", "zz"]), "are not the 2 planned ones the campaign counts"),
    (lambda b: _edit(b, "IA1", status="failed", reason="x", instructions=None, items=[]),
     "followed by more runs"),
    (lambda b: (b / C.instructions_path("IB2")).unlink(), "missing: wall run"),
])
def test_checkers_refuse_forged_instruction_records(counted, tmp_path, edit, finding):
    from harness.selftest import tamper

    bundle = tmp_path / "bundle"
    shutil.copytree(counted, bundle)
    edit(bundle)
    tamper.rederive(bundle)
    tamper.reseal(bundle)
    check = rehash.rehash(str(bundle))
    assert any(finding in p for p in check.problems), check.problems
    assert harness("verify", bundle).returncode == 1


def test_instruction_runs_count_on_one_slot_whatever_the_campaigns_slots(tmp_path):
    """Threads under valgrind interleave differently from run to run, and the count with
    them: the wall runs keep the campaign's slots, the instruction runs use one."""
    import dataclasses
    from types import SimpleNamespace

    from harness.engine.runner import Runner

    runner = Runner(dataclasses.replace(spec.load(CAMPAIGNS / "demo_instructions.yaml"), slots=4), None,
                    check_only=True)
    mat = SimpleNamespace(sha="0" * 40, tree=tmp_path)
    assert runner._job(mat, {}, 0, "IA1", "base", tmp_path, tmp_path, ["i0"], "instructions").slots == 1
    assert runner._job(mat, {}, 0, "A1", "base", tmp_path, tmp_path, ["i0"], "run").slots == 4
