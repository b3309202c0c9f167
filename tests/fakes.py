"""Whole campaigns without a single worker process: the real Runner, revisions, bundle writer
and checkers, driven through harness.engine.launch.FakeLauncher by a model worker whose timings
come from a seeded random model. A sealed bundle in well under a second, for the unit tier."""
from __future__ import annotations

import dataclasses
import functools
import math
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from harness import contract as C, records
from harness.bundle import arrays
from harness.engine.launch import FakeLauncher, FakeRun

TREE = {"lib/__init__.py": "", "lib/core.py": 'VERSION = "base"\n'}
CANDIDATE = {"lib/core.py": 'VERSION = "candidate"\n'}


@dataclass
class Model:
    """The model worker: item walls of `item_s` seconds for the base, `ratio` times that for the
    candidate, each run scaled by a log-normal run factor of sd `noise`; outputs one float64
    array per item (the same in both variants unless `differ`)."""
    ratio: float = 0.5
    noise: float = 0.03
    items: int = 6
    item_s: float = 0.01
    seed: int = 0
    differ: bool = False
    stall: float = 0.0  # share of each run's wall a PSI stall reads (load)
    fail: set = field(default_factory=set)  # labels whose worker exits 1
    hang: set = field(default_factory=set)  # labels whose worker never ends (the timeout kills it)
    output: bytes = b"model worker\n"
    item_ids: list = None  # what setup() gives (default: item-0 ...)
    # label -> (steal ticks over the loop at 100 Hz, the factor its walls take): a run the hypervisor slowed
    disturb: dict = field(default_factory=dict)
    memory: float = 1.0  # the candidate's loop peak over the base's (each run's reading within a page or two)
    peak_bytes: int = 50 << 20  # the base's loop peak
    # (item, label) -> {name: array}: what an item returns instead of one float64 "out" (the
    # pre-flight's label is check:base or check:candidate)
    outputs: Any = None
    item_ratio: dict = field(default_factory=dict)  # item id -> the candidate's ratio for it (else `ratio`)
    # label -> FakeRun fields of what the runner sees from outside (before_s, after_s, loop_s, loop_cpu_s,
    # before_cpu_s, after_cpu_s, scheduling, violations, unmarked): a run whose outside figures differ
    outside: dict = field(default_factory=dict)
    # each distinct output array written once a run, every item that returns it naming that file (the
    # runner reads, hashes and stores whatever file each item names, so the bundle is the same): a
    # campaign of thousands of items then writes a few files a run, not one per item
    share_outputs: bool = False
    # `suite.number: auto`: item id -> the wall of one call its base pre-flight calibration reads (else item_s;
    # None: its warm call raised)
    per_call: dict = field(default_factory=dict)

    def __post_init__(self):
        self.rng = random.Random(self.seed)

    @staticmethod
    def _metrics(job: records.Job) -> dict:
        """A suite's run records the calls its timed items made, as the suite's workload does
        (harness/worker/suites/common.py): the campaign's suite.number, 1 when none is given."""
        if not C.is_suite_entry(job.workload.entry):
            return {}
        return {"suite": {"number": (job.workload.params or {}).get("number", 1)}}

    def ids(self) -> list:
        return self.item_ids or [f"item-{i}" for i in range(self.items)]

    def __call__(self, job: records.Job) -> FakeRun:
        from harness.plan import workload

        label, variant = job.label, job.variant
        if label in self.fail:
            return FakeRun(exit_code=1, output=b"Traceback (most recent call last):\nRuntimeError: boom\n")
        if label in self.hang:
            return FakeRun(hang=True)
        arrays_dir = Path(job.arrays_dir)  # the run's own output folder: the runner reads, hashes and stores
        if job.mode == "check":
            first = self.ids()[0]
            fields = {name: arrays.write_raw(value, arrays_dir, f"0-{j}")
                      for j, (name, value) in enumerate(self._outputs(first, label, variant).items())}
            calibration = {} if job.calibrate_s is None else {
                item: [] if self.per_call.get(item, self.item_s) is None else [self.per_call.get(item, self.item_s)] * 3
                for item in C.subset(self.ids(), job.workload.items)}
            return FakeRun(result=records.to_json(records.CheckResult(
                first, fields, [], self.ids(), {name: 1 for name in job.stages}, python=records.Interpreter.current(),
                calibration=calibration)), wall_s=0.5)
        factor = math.exp(self.rng.gauss(0.0, self.noise))
        steal, slowed = self.disturb.get(label, (0, 1.0))
        factor *= slowed
        items, written = [], {}
        for index, item in enumerate(job.items):
            ratio = self.item_ratio.get(item, self.ratio) if variant == "candidate" else 1.0
            wall = self.item_s * factor * ratio * math.exp(self.rng.gauss(0.0, self.noise / 4))
            outs = {}
            for j, (name, value) in enumerate(self._outputs(item, label, variant).items()):
                if not self.share_outputs:
                    outs[name] = arrays.write_raw(value, arrays_dir, f"{index}-{j}")
                    continue
                array = arrays.to_numpy(value)
                same = (array.dtype.str, array.shape, array.tobytes())
                if same not in written:
                    written[same] = arrays.write_raw(array, arrays_dir, f"{index}-{j}")
                outs[name] = written[same]
            items.append(records.WorkerItem(item, wall, wall * 0.9, outs, None))
        wall = sum(it.wall_s for it in items) * 1.001 + 1e-4
        stages = {name: records.StageTotals(len(items), 0.1 * wall, 0.2 * wall) for name in job.stages}
        result = records.WorkerResult(
            wall_s=wall, items=items, stages=stages, stages_installed={name: True for name in job.stages},
            imported_from=records.Imports(f"{job.workload.path}/model_workload.py" if job.workload.path else "<built-in>",
                                          {n: "tree:lib/core.py" for n in job.stages}),
            metrics=self._metrics(job), machine=records.Machine(cores=2, process_cpu_s=0.95 * wall,
                                                                 cpu_stall_s=self.stall * wall,
                                                stage_wrapper_s=1e-6 if job.stages else None, cpu_freq_mhz=None,
                                                warmup_s=0.25, loadavg_before=[0.1, 0.1, 0.1],
                                                loadavg_after=[0.1, 0.1, 0.1]),
            harness_source_sha256=source_digest(),
            workload_sha256=workload.folder_digest(job.workload.path, tuple(job.workload.exclude)),
            python=records.Interpreter.current(),
            started_at=_iso(0.0), ended_at=_iso(0.0),
            interference={"user_hz": 100, "steal_ticks": steal, "cpu": 0, "cpu_steal_ticks": steal,
                          "freq_mhz_before": None, "freq_mhz_after": None})
        memory = self._memory(variant)
        return FakeRun(result=records.to_json(result), wall_s=wall + 0.4, output=self.output,
                       maxrss_bytes=memory["hwm_before"] + (8 << 20), memory=memory, **self.outside.get(label, {}))

    def _memory(self, variant: str) -> dict:
        """The runner's readings as Linux gives them: whole 4 KiB pages, the loop's peak a few pages apart run to run."""
        page = 4096
        peak = int(self.peak_bytes * (self.memory if variant == "candidate" else 1.0)) // page * page
        peak += self.rng.randrange(4) * page
        return {"rss_start": peak - 256 * page, "hwm_before": peak + 64 * page, "hwm_end": peak}

    def _outputs(self, item: str, label: str, variant: str) -> dict:
        return self.outputs(item, label) if self.outputs else {"out": self._output(item, variant)}

    def _output(self, item: str, variant: str):
        value = float(sum(map(ord, item)))
        if self.differ and variant == "candidate":
            value = np.nextafter(value, np.inf)
        return np.array([value], dtype=np.float64)


@functools.lru_cache(maxsize=None)
def source_digest() -> str:
    """files.harness_source_digest, worked out once a session, as a worker process works it out
    once: the harness does not change under the tests, and hashing every harness file on every
    fake run was a quarter of a fake campaign's time (once a model, still 13 ms a campaign)."""
    from harness import files

    return files.harness_source_digest()


def job(label: str, *, variant: str | None = None, mode: str = "run", index: int = 0, sha: str = "0" * 40,
        items: list | None = None, tree: str = "/fake/tree", result_path: str = "/fake/result.json") -> records.Job:
    """A job as the runner hands it, for what reads one without a campaign (the record
    constructors, job.json's round trip): variant from the label (A1, IA1 base; B1, IB1 candidate)
    unless given, no workload folder, no inputs, no stages."""
    items = ["item-0", "item-1"] if items is None else items
    return records.Job(
        mode=mode, label=label, variant=variant or ("base" if label.lstrip("I")[:1] == "A" else "candidate"),
        index=index,
        sha=sha, tree=tree, parent_pid=1,
        workload=records.JobWorkload(entry="model_workload:setup", params={}, path=None, exclude=[], sys_path=[],
                                     items=None),
        inputs={}, slots=1, stages={}, optional_stages=[], arrays_dir="/fake/arrays", result_path=result_path,
        items=None if mode == "check" else items, instructions_items=None, items_all=items)


# --- run records without a campaign: what the statistics and parity read ---------------------
PYTHON = records.Interpreter.current()
WORKLOAD_SHA256 = "e" * 64  # every run record's workload digest (derive's `workload`)
EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"


def item(item_id: str, wall_s: float = 0.01, *, cpu_s: float | None = None, fields: dict | None = None,
         error: dict | None = None) -> records.Item:
    """One measured item; fields: name -> records.Output or the dict arrays.describe/store gives."""
    fields = {name: f if isinstance(f, records.Output) else records.Output(**f) for name, f in (fields or {}).items()}
    return records.Item(item_id, wall_s, wall_s if cpu_s is None else cpu_s, fields if error is None else {}, error)


def run_record(label: str, items=(), *, variant: str | None = None, wall_s: float | None = None,
               status: str = "ok", index: int = 0, slots: int = 1, sha: str = "0" * 40, stages: dict | None = None,
               stages_installed: dict | None = None, machine: records.Machine | None = None,
               **machine_fields) -> records.RunRecord:
    """A minimal RunRecord as the runner would write it, from its label and its items' walls.

    items: walls (ids item0, item1, ...), a mapping id -> wall, or records.Item; variant: from the
    label (A base, B candidate) unless given; wall_s: 1.01 x the items' walls (1.0 without items);
    stages: name -> StageTotals or {calls, self_cpu_s, incl_cpu_s}, installed unless
    stages_installed says otherwise; machine: 2 cores and a quiet load average, machine_fields
    (cpu_stall_s=..., process_cpu_s=...) changing it. A run that is not ok keeps its items, as
    no runner would: the statistics must leave it out all the same."""
    if isinstance(items, dict):
        items = [item(k, w) for k, w in items.items()]
    items = [it if isinstance(it, records.Item) else item(f"item{j}", float(it)) for j, it in enumerate(items)]
    if wall_s is None:
        wall_s = 1.01 * sum(it.wall_s for it in items) if items else 1.0
    stages = {name: s if isinstance(s, records.StageTotals) else records.StageTotals(**s)
              for name, s in (stages or {}).items()}
    if machine is None:
        machine = records.Machine(**{"cores": 2, "loadavg_before": [0.1, 0.1, 0.1],
                                     "loadavg_after": [0.1, 0.1, 0.1], **machine_fields})
    elif machine_fields:
        machine = dataclasses.replace(machine, **machine_fields)
    return records.RunRecord(
        schema=C.SCHEMAS["run"], label=label, variant=variant or ("base" if label[0] == "A" else "candidate"),
        index=index, sha=sha, status=status, reason=None if status == "ok" else f"{label} {status}",
        exit_code=0 if status == "ok" else 1, wall_s=wall_s, slots=slots, items=items, stages=stages,
        stages_installed=stages_installed if stages_installed is not None else {name: True for name in stages},
        imported_from=records.Imports(), metrics={}, machine=machine,
        harness_source_sha256="f" * 64, workload_sha256=WORKLOAD_SHA256, python=PYTHON,
        worker_started_at=None, worker_ended_at=None, pid=0, launch=records.Launched(), process=records.Process(0.0, wall_s, wall_s),
        log=records.Log(C.log_path(label), 0, EMPTY_SHA256, 0, False))


def with_machine(run: records.RunRecord, **changes) -> records.RunRecord:
    """The record with some of its machine readings changed (records are frozen)."""
    return dataclasses.replace(run, machine=dataclasses.replace(run.machine, **changes))


def _iso(_offset: float) -> str:
    return "__now__"


class ModelLauncher(FakeLauncher):
    """FakeLauncher whose worker results carry the clock's own ISO times."""

    def __init__(self, model: Model, **kw):
        super().__init__(self._play, **kw)
        self.model = model

    def _play(self, job: records.Job) -> FakeRun:
        import datetime as dt

        run = self.model(job)
        if run.result and "started_at" in run.result:
            start = dt.datetime.fromtimestamp(self.clock.time() + 0.1, dt.timezone.utc)
            end = dt.datetime.fromtimestamp(self.clock.time() + run.wall_s - 0.05, dt.timezone.utc)
            run.result["started_at"] = start.isoformat(timespec="milliseconds")
            run.result["ended_at"] = end.isoformat(timespec="milliseconds")
        return run


def write_fake_campaign(where: Path, **fields) -> Path:
    """A campaign over a two-commit build target (no worker will import it) with a workload
    folder, fixed rounds; `fields` update the YAML."""
    import yaml

    from conftest import make_target

    tree, patch = make_target(where, TREE, CANDIDATE)
    workloads = where / "workloads"
    workloads.mkdir(exist_ok=True)
    (workloads / "model_workload.py").write_text("def setup(ctx):\n    raise SystemExit('a model campaign')\n")
    body = {"name": "model", "target": {"build": [{"tree": str(tree), "message": "base"},
                                                   {"patch": str(patch), "message": "candidate"}]},
            "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"},
            "workload": {"entry": "model_workload:setup", "path": str(workloads)},
            "rounds": 6, "slots": 1, "timeouts": {"run_s": 60, "campaign_s": 3600}}
    if "order" not in fields and fields.get("rounds", 6) is not None:
        # the shuffle's seed pinned unless a test gives its own: the model's values are fixed by its
        # seed, and the rounds a sequential campaign needs follow from its order, so a test's
        # campaign is the same campaign on every machine (a drawn seed made some tests flaky)
        body["seed"] = 1
    body.update(fields)
    if "suite" in fields:  # a suite in place of the workload (the model worker plays its benchmarks)
        body.pop("workload")
    path = where / "model.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def run_fake(where: Path, model: Model | None = None, out: Path | None = None, launcher=None, overrides=None,
             **fields):
    """(Outcome, launcher) of a whole campaign on the model worker; the bundle at out
    (default where/bundle)."""
    from harness.engine.runner import Runner
    from harness.plan import spec

    path = write_fake_campaign(where, **fields)
    launcher = launcher or ModelLauncher(model or Model())
    runner = Runner(spec.load(path, overrides or {}), (out or where / "bundle").absolute(), launcher=launcher)
    return runner.run(), launcher


LONG_ID = "case-{:05d}/" + "x" * 200  # ids near the contract's 256 characters


def many_items(where: Path, items: int) -> Path:
    """The bundle of a sequential campaign of `items` items with long ids and two stages, in a
    repository, for the summary's forms (the model writes each distinct output once a run: one
    file an item a run was half its making)."""
    (where / ".git").mkdir()
    ids = [LONG_ID.format(i) for i in range(items)]
    launcher = ModelLauncher(Model(ratio=0.8, noise=0.01, item_ids=ids, item_s=1e-4, share_outputs=True))
    outcome, _ = run_fake(where, launcher=launcher, rounds="auto", budget_s=60, min_rounds=5,
                          stages={"core": "lib.core:f", "other": "lib.core:g"}, description="line\n" * 40)
    return outcome.out


sys.modules.setdefault("fakes", sys.modules[__name__])


def record(label: str, variant: str, items: list, wall_s: float = 1.0, status: str = "ok"):
    """A minimal RunRecord holding `items` (records.Item), for tests of what reads records."""
    ok = status == "ok"
    return records.RunRecord(
        schema="", label=label, variant=variant, index=0, sha="0" * 40, status=status, reason=None if ok else "x",
        exit_code=0 if ok else 1, wall_s=wall_s if ok else None, slots=1, items=items if ok else [], stages={},
        stages_installed={}, imported_from=records.Imports(), metrics={}, machine=records.Machine(cores=2),
        harness_source_sha256=None, workload_sha256=None, python=None, worker_started_at=None, worker_ended_at=None,
        pid=1, launch=records.Launched(), process=records.Process(0.0, wall_s, wall_s), log=records.Log("", 0, "", 0, False))


# --- a comparison.json by hand, for the readers (harness/bundle/model.py) --------------------------
def _stats_doc() -> dict:
    return {"method": "paired rounds", "question": "claim", "threshold": 0.02, "margin": None, "floor": None,
            "band": 0.02, "claim_band": 0.02,
            "rounds": {"n": 0, "min": 0, "pairs": [], "unpaired": [], "log_ratios": [], "sd_log": None,
                       "t_quantile": None, "typical_deviation": None},
            "sequential": None,
            "paired": {"metric": "run wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None, "ci95": None,
                       "run_ratio": None},
            "per_item": None, "family": None, "drift": None, "load": {"overloaded": []},
            "verdict": "inconclusive", "verdict_reason": "", "warnings": [],
            "outside": {"contradicted": [], "moved": None, "holds": True}}


def comparison_doc(**parts) -> dict:
    """A complete comparison.json (every declared key; nothing measured) with `parts` merged
    in, level by level: a dict merges into the level it names, anything else replaces it."""
    doc = {"schema": C.SCHEMAS["comparison"], "campaign": "hand", "status": "complete", "reason": None, "order": "",
           "items": {"planned": 0, "of": 0}, "runs": [],
           "sandbox": {"level": "full", "reason": None},
           "wall": {"timer": C.WALL_TIMER, "base_mean_s": None, "candidate_mean_s": None, "saving_s": None,
                    "saving_pct": None, "speedup": None},
           "stages": {},
           "parity": {"identical": True, "agree": True, "tolerance": None, "reference": None, "items": 0,
                      "fields_compared": 0, "fields_identical": 0, "error_returns": 0, "errors_identical": True,
                      "call_counts_identical": True, "golden": None, "mismatch_count": 0, "mismatches": [],
                      "note": None, "divergence": []},
           "stats": _stats_doc(), "instructions": None, "metrics": []}

    def merge(into: dict, changes: dict) -> dict:
        for key, value in changes.items():
            into[key] = merge(dict(into[key]), value) if isinstance(value, dict) and isinstance(into.get(key), dict) \
                else value
        return into
    return merge(doc, parts)


def comparison(**parts):
    """comparison_doc(**parts) as the readers take it (harness.bundle.model.Comparison)."""
    from harness.bundle.model import Comparison

    return Comparison.of(comparison_doc(**parts))
