"""The records a campaign writes, as named types built through the contract.

harness/contract.py declares every file and field of a bundle; here each record is a frozen
dataclass whose fields are exactly the keys the contract declares for its document
(tests/unit/test_records.py holds the two together), built by one constructor and turned into
JSON by one function. The worker's result, a run record, an instruction record, the receipts and
the machine class are read the same way back from a bundle (harness/bundle/read.py), so every
module reads attributes, not string keys it spells itself. The job the runner hands each worker
(job.json, part of no bundle) is one too, built once by the runner and read back by the worker
(Job.read, which refuses another schema).

Standard library only and valid on Python 3.9: a worker imports this module, possibly under
the user's own interpreter.
"""
from __future__ import annotations

import dataclasses
import json
import os
import platform
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar, Union

from harness import contract as C
from harness import rules as R


# --- JSON in and out --------------------------------------------------------------------------
def to_json(value: Any) -> Any:
    """A record (or anything holding records) as plain JSON values, keys in declared order."""
    kind = type(value)
    shape = _SHAPES[kind] if kind in _SHAPES else _shape(kind)
    if shape is not None:
        names, absent = shape  # absent: keys a document leaves out (rather than null) when None
        left_out = getattr(value, "_absent_keys", ())  # optional keys the JSON it was built from left out
        return {name: to_json(getattr(value, name)) for name in names
                if name not in left_out and not (name in absent and getattr(value, name) is None)}
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    return value


_SHAPES: dict = {}  # type -> _shape(type), worked out once a type: to_json met thousands of values a record


def _shape(kind: type) -> Optional[tuple]:
    """(a record class's field names in declared order, its ABSENT); None for any other type."""
    made = _SHAPES[kind] = (tuple(f.name for f in dataclasses.fields(kind)), getattr(kind, "ABSENT", ())) \
        if dataclasses.is_dataclass(kind) else None
    return made


_BUILDERS: dict = {}  # annotation -> the function that builds its value from JSON, made once per annotation
_UNIONS = (Union, getattr(types, "UnionType", Union))  # Optional[X], and X | None where Python has it (3.10+)
_FIELDS: dict = {}  # record class -> (name, required, left out as null, builder) per field, made at its first build


def build(kind: Any, value: Any) -> Any:
    """value (parsed JSON) as kind, by its annotation: a record (a dataclass) from its object, a key
    with a default (one an earlier schema lacks, or the contract marks optional) absent as its
    default and left out again by to_json, one of ABSENT as None, one of EARLIER (a key the previous
    generation's document lacks: harness/legacy) as None; list[X] and dict[str, X] element by
    element; Optional[X] as X unless null; any other annotation (str, float, a free-form dict or
    list, Any, a Union of several shapes) takes the value as it is. Containers are checked (TypeError for a list where an
    object is, KeyError naming a missing key), leaves are not: the checkers bind those, and a
    worker's word is held to the runner's own figures before it enters a record."""
    return (_BUILDERS.get(kind) or _builder(kind))(value)


def _builder(kind: Any):
    made = _BUILDERS.get(kind)
    if made is not None:
        return made
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin in _UNIONS and len([a for a in args if a is not type(None)]) > 1:
        made = _same  # a value of one of several shapes (SuiteParams.number): a leaf, its reader checks it
    elif origin in _UNIONS:
        (inner,) = [a for a in args if a is not type(None)]
        one = _builder(inner)
        made = lambda value: None if value is None else one(value)  # noqa: E731
    elif isinstance(kind, type) and dataclasses.is_dataclass(kind):
        made = lambda value: _record(kind, value)  # noqa: E731
    elif origin is list:
        made = _container(list, lambda value, one=_builder(args[0]): [one(v) for v in value], args[0])
    elif origin is dict:
        made = _container(dict, lambda value, one=_builder(args[1]): {k: one(v) for k, v in value.items()}, args[1])
    else:
        made = _same
    _BUILDERS[kind] = made
    return made


def _same(value: Any) -> Any:
    return value


def _container(kind: type, each, inner: Any):
    """A list's or an object's builder: its type checked, its elements built (kept as they are
    when they are leaves)."""
    leaves = _builder(inner) is _same

    def made(value):
        if not isinstance(value, kind):
            raise TypeError(f"expected {'a list' if kind is list else 'an object'}, got {type(value).__name__}")
        return value if leaves else each(value)
    return made


def _record(cls: type, value: Any) -> Any:
    if not isinstance(value, dict):
        raise TypeError(f"{cls.__name__}: expected an object, got {type(value).__name__}")
    kwargs, left_out = {}, []
    for name, required, absent, one in _FIELDS.get(cls) or _fields(cls):
        if name in value:
            kwargs[name] = one(value[name])
        elif absent:
            kwargs[name] = None  # an optional key the document leaves out (ABSENT, left out again), or EARLIER's
        elif not required:
            left_out.append(name)  # its default, and left out when written again (to_json)
        else:
            raise KeyError(f"{cls.__name__}.{name}")
    made = cls(**kwargs)
    if left_out:
        object.__setattr__(made, "_absent_keys", frozenset(left_out))
    return made


def _fields(cls: type) -> tuple:
    hints, absent = typing.get_type_hints(cls), getattr(cls, "ABSENT", ()) + getattr(cls, "EARLIER", ())
    made = _FIELDS[cls] = tuple(
        (f.name, f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
         f.name in absent and f.default is dataclasses.MISSING, _builder(hints[f.name]))
        for f in dataclasses.fields(cls))
    return made


_R = TypeVar("_R", bound="FromJson")


class FromJson:
    """A record read from its JSON object by its fields' annotations (build): `X.from_json(data)`."""

    @classmethod
    def from_json(cls: "type[_R]", data: dict) -> "_R":
        return build(cls, data)


def keys(cls) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


# --- what the runner hands a worker ----------------------------------------------------------------
@dataclass(frozen=True)
class JobWorkload:
    """The campaign's workload as a worker reads it."""
    entry: str  # MODULE:FUNC, setup(ctx) -> the workload
    params: dict  # ctx.params
    path: Optional[str]  # the workload folder (first on sys.path after the tree's), None without one
    exclude: list[str]  # what its digest leaves out (our own output inside it)
    sys_path: list[str]  # folders of the revision tree put first on sys.path (e.g. src)
    items: Optional[int]  # `workload.items: N`: the pre-flight checks N of them (None: all)
    prepare: Optional[str] = None  # MODULE:FUNC, prepare(ctx) -> ctx.prepared: run by the zygote, else by the worker


@dataclass(frozen=True)
class JobInput:
    path: str
    sha256: str  # pinned: the worker refuses an input that changed


@dataclass(frozen=True)
class Job:
    """What the runner hands one worker (job.json; not part of the bundle). mode: "run" (the
    timed item loop), "check" (the pre-flight: setup and one item, untimed) or "instructions"
    (the item loop under valgrind)."""
    mode: str
    label: str
    variant: str
    index: int
    sha: str
    tree: str  # the revision's tree, the code under test
    parent_pid: int  # the runner: the worker dies with it
    workload: JobWorkload
    inputs: dict[str, JobInput]
    slots: int
    stages: dict[str, str]  # name -> MODULE:QUALNAME, wrapped ({} in a run that carries no wrappers)
    optional_stages: list[str]
    arrays_dir: str
    result_path: str
    items: Optional[list[str]]  # the planned items (None in the pre-flight, which finds them)
    instructions_items: Optional[int]  # an instruction run counts this many of them (None: all)
    items_all: list[str]  # every item setup() gave in the pre-flight: each run's setup() must give the same
    # the base's pre-flight of a `suite.number: auto` campaign: the most seconds its calibration may take
    calibrate_s: Optional[float] = None
    schema: str = C.SCHEMAS["job"]

    @classmethod
    def from_json(cls, data: Any) -> "Job":
        """A job as the runner wrote it; ValueError, one line, for any other schema."""
        said = data.get("schema") if isinstance(data, dict) else None
        if said != C.SCHEMAS["job"]:
            raise ValueError(f"schema {said!r}, expected {C.SCHEMAS['job']}")
        return build(cls, data)

    @classmethod
    def read(cls, path: Union[str, os.PathLike]) -> "Job":
        with open(path, encoding="utf-8") as fh:
            return cls.from_json(json.load(fh))


# --- a zygote's protocol (harness/worker/zygote.py): one JSON line each way ------------------------
@dataclass(frozen=True)
class ZygoteRequest(FromJson):
    """The launcher's request for one run (its mark channel's descriptor attached): the run's job
    file, its folder (the child's cwd), its log, its environment exactly, and the rules its child
    confines itself by (engine/sandbox.Confinement.child; None: no sandbox)."""
    job: str
    cwd: str
    log: str
    env: dict[str, str]
    sandbox: Optional[dict]


@dataclass(frozen=True)
class ZygoteReady(FromJson):
    """A zygote's first line once its imports are done: its pid, its threads and what it preloaded."""
    ready: int
    threads: Optional[int]
    preloaded: list[str]


@dataclass(frozen=True)
class ZygoteForked(FromJson):
    """The child of a request is forked (its own session, like a fresh worker)."""
    pid: int


@dataclass(frozen=True)
class ZygoteReaped(FromJson):
    """The child ended and was reaped by its zygote: its exit code (negative: the signal) and rusage,
    CPU user + system with its reaped children's; the zygote's word (None where it did not say)."""
    pid: int
    exit: int
    maxrss_bytes: Optional[int] = None
    cpu_s: Optional[float] = None


# --- what a worker measured ---------------------------------------------------------------------
@dataclass(frozen=True)
class Interpreter:
    executable: str
    version: str
    implementation: str

    @classmethod
    def current(cls) -> "Interpreter":
        return cls(sys.executable, platform.python_version(), platform.python_implementation())

    def text(self) -> str:
        return f"{self.implementation} {self.version} ({self.executable})"

    def differs(self, other: "Interpreter") -> list[str]:
        """The parts of the identity (executable, version, implementation) other does not share."""
        return [name for name in ("executable", "version", "implementation")
                if getattr(self, name) != getattr(other, name)]


@dataclass(frozen=True)
class ProbedInterpreter(Interpreter):
    """A variant's interpreter as the runner's probe found it (harness/engine/environment.py) and
    environment.json's interpreters record it: the identity every worker of the variant must report
    running, and its installed distributions (name -> version)."""
    packages: dict[str, str]


@dataclass(frozen=True)
class Output:
    """One output field of an item: its array's digest, dtype and shape."""
    digest: str
    dtype: str
    shape: list


@dataclass(frozen=True)
class Item:
    id: str
    wall_s: float
    cpu_s: float
    fields: dict[str, Output]
    error: Optional[dict]  # {type, message}, never beside fields

    @classmethod
    def measured(cls, item_id: str, wall_s: float, cpu_s: float, fields: dict, error: Optional[dict]) -> "Item":
        if error is not None:
            error = {"type": error["type"][:256], "message": error["message"][:C.MAX_ERROR_MESSAGE]}
        return cls(item_id, wall_s, cpu_s, fields if error is None else {}, error)


@dataclass(frozen=True)
class WorkerItem:
    """One item as the worker reports it: its own walls, and the files (in its output folder) that
    hold its outputs, which the runner reads, hashes and stores (an Item of the run record)."""
    id: str
    wall_s: float
    cpu_s: float
    files: dict  # name -> file, relative to the run's output folder
    error: Optional[dict]  # {type, message}, never beside files

    @classmethod
    def measured(cls, item_id: str, wall_s: float, cpu_s: float, files: dict, error: Optional[dict]) -> "WorkerItem":
        if error is not None:
            error = {"type": error["type"][:256], "message": error["message"][:C.MAX_ERROR_MESSAGE]}
        return cls(item_id, wall_s, cpu_s, files if error is None else {}, error)


@dataclass(frozen=True)
class StageTotals:
    calls: int
    self_cpu_s: float
    incl_cpu_s: float


@dataclass(frozen=True)
class Machine:
    """What a worker read of the machine around its timed loop (all None for a run that failed)."""
    cores: Optional[int] = None
    process_cpu_s: Optional[float] = None
    cpu_stall_s: Optional[float] = None
    stage_wrapper_s: Optional[float] = None
    cpu_freq_mhz: Optional[float] = None
    warmup_s: Optional[float] = None
    loadavg_before: Optional[list] = None
    loadavg_after: Optional[list] = None


@dataclass(frozen=True)
class Interference:
    """What a worker read of interference over its timed loop (docs/statistics.md "Interference"),
    and the marks the runner derives from it and the campaign's bounds (rules.disturbance).
    None: the kernel does not show it (no steal column, no cpufreq), never a guess."""
    user_hz: Optional[int] = None  # the unit of the steal counts (os.sysconf("SC_CLK_TCK"))
    steal_ticks: Optional[int] = None  # all CPUs' steal, /proc/stat's cpu line, 8th value, after - before
    cpu: Optional[int] = None  # the CPU the worker ran on at the loop's start and at its end (None: it moved)
    cpu_steal_ticks: Optional[int] = None  # that CPU's steal (its cpuN line) over the loop
    freq_mhz_before: Optional[float] = None  # that CPU's cpufreq scaling_cur_freq before and after the loop
    freq_mhz_after: Optional[float] = None
    steal_share: Optional[float] = None  # derived by the runner
    cpu_per_wall: Optional[float] = None  # derived by the runner
    causes: list = field(default_factory=list)  # derived: contract.DISTURBED_CAUSES crossed
    disturbed: bool = False  # derived: causes is not empty

    MEASURED = ("user_hz", "steal_ticks", "cpu", "cpu_steal_ticks", "freq_mhz_before", "freq_mhz_after")

    @classmethod
    def marked(cls, measured: Optional[dict], wall_s: float, process_cpu_s: Optional[float], cores: Optional[int],
               bounds: "InterferenceBounds") -> "Interference":
        """The run record's section: the worker's readings and the marks of rules.disturbance."""
        raw = {k: (measured or {}).get(k) for k in cls.MEASURED}
        share, per_wall, causes = R.disturbance(raw, wall_s, process_cpu_s, cores, bounds.max_steal,
                                                bounds.min_cpu_per_wall)
        return cls(**raw, steal_share=share, cpu_per_wall=per_wall, causes=causes, disturbed=bool(causes))


@dataclass(frozen=True)
class Memory:
    """The worker's resident set (Linux /proc/self/status, in bytes) around its timed loop
    (contract.METRIC["memory"]). None: the kernel does not show it, never a guess."""
    process_peak_bytes: Optional[int] = None  # the process's high-water mark over its whole life
    loop_start_bytes: Optional[int] = None  # the resident set as the timed loop's warm-up began
    loop_peak_bytes: Optional[int] = None  # the high-water mark from then to the loop's end
    reset: bool = False  # the mark was reset at the loop's start; else loop_peak is the process's peak so far


@dataclass(frozen=True)
class Imports:
    """Where the workload and each stage were imported from (tree: paths are the revision's)."""
    workload: Optional[str] = None
    stages: dict = field(default_factory=dict)


@dataclass(frozen=True)
class WorkerResult:
    """What a worker measured and hands the runner (result.json): its word, which the runner holds
    to what it measured itself (Outside) before any of it enters a run record."""
    wall_s: float
    items: list[WorkerItem]
    stages: dict[str, StageTotals]
    stages_installed: dict
    imported_from: Imports
    metrics: dict
    machine: Machine
    harness_source_sha256: str
    workload_sha256: Optional[str]
    python: Interpreter
    started_at: str
    ended_at: str
    schema: str = C.SCHEMAS["result"]
    interference: Optional[dict] = None  # Interference.MEASURED over the timed loop (None: not read)
    tripwire: list = field(default_factory=list)  # what the worker found replaced after its loop (its clocks, its functions)

    @classmethod
    def from_json(cls, data: dict) -> "WorkerResult":
        if not isinstance(data, dict) or data.get("schema") != C.SCHEMAS["result"]:
            raise ValueError(f"not a worker result of schema {C.SCHEMAS['result']}")
        return build(cls, data)


@dataclass(frozen=True)
class CheckResult(FromJson):
    """What a pre-flight worker saw (result.json of a job in mode "check"): the item it ran untimed,
    that item's output files in its output folder (name -> file, as WorkerItem.files: the runner
    reads and hashes each itself), the items that raised before it, every item setup() gave, each
    stage's calls and where a stage's function is defined when its path names a re-export (the
    runner flags stages neither revision called), the item's walls run again (the runner's timing
    notes) and its interpreter (held to its probe); for `suite.number: auto` in the base, each
    benchmark's calibration (the wall of one call in each batch it timed; [] where its first call
    raised). All of it the worker's word."""
    item: str
    fields: dict
    raised: list[str]
    items: list[str]
    stage_calls: dict[str, int]
    stage_homes: dict[str, str] = field(default_factory=dict)
    repeats: list[float] = field(default_factory=list)
    python: Optional[Interpreter] = None
    calibration: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True)
class CountResult(FromJson):
    """What an instruction run's worker hands the runner (result.json of a job in mode
    "instructions"): the items it ran in the counted region, how many raised, the digests of the
    harness and the workload it ran, and its interpreter. The count is callgrind's, which the
    runner reads itself."""
    items: list[str]
    errors: int
    harness_source_sha256: Optional[str]
    workload_sha256: Optional[str]
    python: Optional[Interpreter]


# --- the bundle's records -----------------------------------------------------------------------
@dataclass(frozen=True)
class Process:
    """What the runner saw of a worker process: epoch start and end, its wall, and the kernel's
    high-water mark of its resident set as the reaped process's rusage gives it (None: the
    launcher could not read it). That mark carries its launcher's across exec and fork, so it
    bounds the worker's own memory readings from above; it is not the worker's peak."""
    started_at: float
    ended_at: float
    wall_s: float
    maxrss_bytes: Optional[int] = None


@dataclass(frozen=True)
class Log:
    """A worker's output as the bundle keeps it (contract.cut_log), bound to its record."""
    path: str
    bytes: int
    sha256: str
    written: int
    truncated: bool


@dataclass(frozen=True)
class Outside:
    """What the runner saw of a run's process from outside it (harness/engine/outside.py): by its own
    clock the process's life before the timed loop and after it (the loop itself is the record's
    wall_s), the kernel's CPU time of the process in each part, the worker's own wall and how far its
    readings lie inside the runner's (each latency >= 0), and what the worker's figures contradict
    (rules.contradictions: a claim is not made on a campaign with a contradicted run)."""
    before_s: float  # launch -> the loop's start mark (the parent's monotonic clock)
    after_s: float  # the loop's end mark -> reap
    worker_wall_s: float  # the worker's own wall of its loop (its perf_counter): its word
    latency_s: list  # [worker's start - parent's start, parent's end - worker's end]
    loop_cpu_s: Optional[float]  # the kernel's CPU time of the process over the loop (None: not readable)
    before_cpu_s: Optional[float]  # ... from its launch (fork, for a zygote's child) to the loop
    after_cpu_s: Optional[float]  # ... after the loop, to its reap (rusage: its reaped children's too)
    tripwire: list  # what the worker found replaced (its clocks, its functions): its word
    scheduling: list  # scheduling changes seen: its own beyond its launcher's, or another process's
    violations: list  # what it sent on its channel that the protocol does not allow
    contradictions: list = field(default_factory=list)  # derived: contract.CONTRADICTIONS
    contradicted: bool = False  # derived: contradictions is not empty

    @classmethod
    def judged(cls, *, wall_s: float, items: list, slots: int, process_cpu_s: Optional[float], stages: dict,
               **readings) -> "Outside":
        """The section with its contradictions derived (rules.contradictions)."""
        raw = cls(**readings)
        found = R.contradictions(to_json(raw), wall_s, [(it.wall_s, it.cpu_s) for it in items], slots, process_cpu_s,
                                 sum(t.self_cpu_s for t in stages.values()))
        return dataclasses.replace(raw, contradictions=found, contradicted=bool(found))


@dataclass(frozen=True)
class Launched:
    """How a run's process was made: fresh (its own interpreter), forked by its variant's zygote of
    that generation, or fresh beside its round's other run on a core of its own (a duet)
    (contract.LAUNCH_MODES, rules.generations, rules.duet_core)."""
    mode: str = C.DEFAULT_LAUNCH
    zygote: Optional[int] = None  # the zygote's pid
    generation: Optional[int] = None
    core: Optional[int] = None  # `launch: duet`: the core its process was pinned to (rules.duet_core)


@dataclass(frozen=True)
class RunRecord(FromJson):
    """data/runs/<label>.json, for every run that started, ok or not."""
    schema: str
    label: str
    variant: str
    index: int
    sha: str
    status: str
    reason: Optional[str]
    exit_code: Optional[int]
    wall_s: Optional[float]
    slots: int
    items: list[Item]
    stages: dict[str, StageTotals]
    stages_installed: dict
    imported_from: Imports
    metrics: dict
    machine: Machine
    harness_source_sha256: Optional[str]
    workload_sha256: Optional[str]
    python: Optional[Interpreter]
    worker_started_at: Optional[str]
    worker_ended_at: Optional[str]
    pid: int
    launch: Launched
    process: Process
    log: Log
    # Absent (None) only in a record of an earlier schema (contract.PREVIOUS_SCHEMAS); null in a failed run.
    interference: Optional[Interference] = None
    memory: Memory = field(default_factory=Memory)  # all None in a failed run
    outside: Optional[Outside] = None  # null in a failed run

    @classmethod
    def of(cls, job: Job, *, status: str, reason: Optional[str], exit_code: Optional[int], pid: int,
           process: Process, log: Log, measured: Optional[WorkerResult], items: Optional[list] = None,
           wall_s: Optional[float] = None, outside: Optional[Outside] = None, memory: Optional[Memory] = None,
           launch: Optional[Launched] = None, bounds: Optional["InterferenceBounds"] = None) -> "RunRecord":
        """A run record from what the runner gave the worker (job), saw of its process and log, and
        what the worker measured (None when it failed before writing it, or cannot be trusted); items:
        the worker's items with the outputs the runner read, hashed and stored; wall_s: the timed
        loop's wall by the runner's clock, outside: what it saw from outside, memory: its readings. A
        run is 'ok' only with all of these, exit code 0 and no reason. bounds: campaign.json's
        interference (the contract's when None), which mark the run disturbed."""
        if status not in C.RUN_STATUSES:
            raise ValueError(f"run status {status!r}")
        if status == "ok" and (measured is None or exit_code != 0 or reason is not None or items is None
                               or wall_s is None or outside is None):
            raise ValueError("an ok run needs the worker's measurements, the runner's own, exit code 0 and no reason")
        m = measured if status == "ok" else None
        return cls(
            schema=C.SCHEMAS["run"], label=job.label, variant=job.variant, index=job.index, sha=job.sha,
            status=status, reason=reason, exit_code=exit_code, wall_s=wall_s if m else None, slots=job.slots,
            items=(items or []) if m else [], stages=m.stages if m else {},
            stages_installed=m.stages_installed if m else {},
            imported_from=m.imported_from if m else Imports(), metrics=m.metrics if m else {},
            machine=m.machine if m else Machine(), harness_source_sha256=m.harness_source_sha256 if m else None,
            workload_sha256=m.workload_sha256 if m else None, python=m.python if m else None,
            worker_started_at=m.started_at if m else None, worker_ended_at=m.ended_at if m else None,
            pid=pid, launch=launch or Launched(), process=process, log=log,
            interference=Interference.marked(m.interference, wall_s or 0.0, m.machine.process_cpu_s,
                                             m.machine.cores, bounds or interference_bounds(None)) if m else None,
            memory=(memory or Memory()) if m else Memory(), outside=outside if m else None)

    @property
    def disturbed(self) -> bool:
        return self.interference is not None and self.interference.disturbed


    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def timed(self) -> bool:
        """Its wall is in the headline (not a stage run)."""
        return R.timed(self.label)

    def item_map(self) -> dict:
        return {it.id: it for it in self.items}


@dataclass(frozen=True)
class InstructionRecord(FromJson):
    """data/instructions/<label>.json, for every instruction run that started, ok or not."""
    schema: str
    label: str
    variant: str
    index: int
    after: Optional[str]
    sha: str
    status: str
    reason: Optional[str]
    exit_code: Optional[int]
    instructions: Optional[int]
    items: list
    errors: int
    tool: str
    valgrind: str
    command: list
    env: dict
    harness_source_sha256: Optional[str]
    workload_sha256: Optional[str]
    python: Optional[Interpreter]
    pid: int
    process: Process
    log: Log

    @classmethod
    def of(cls, job: Job, *, status: str, reason: Optional[str], exit_code: Optional[int], pid: int,
           process: Process, log: Log, counted: Optional[CountResult], count: Optional[int],
           after: Optional[str], version: str, command: list, env: dict) -> "InstructionRecord":
        """counted: the worker's result of an instruction run; count: callgrind's total inside the
        measured region; version, command and env: the valgrind that counted and how it ran."""
        if status not in C.RUN_STATUSES:
            raise ValueError(f"run status {status!r}")
        if status == "ok" and (counted is None or count is None or exit_code != 0 or reason is not None):
            raise ValueError("an ok instruction run needs its count, the worker's result, exit code 0 and no reason")
        m = counted if status == "ok" else None  # ok has a count: checked above
        return cls(
            schema=C.SCHEMAS["instructions"], label=job.label, variant=job.variant, index=job.index,
            after=after, sha=job.sha, status=status, reason=reason, exit_code=exit_code,
            instructions=count if status == "ok" else None, items=m.items if m else [], errors=m.errors if m else 0,
            tool="callgrind", valgrind=version, command=command, env=env,
            harness_source_sha256=m.harness_source_sha256 if m else None,
            workload_sha256=m.workload_sha256 if m else None, python=m.python if m else None, pid=pid,
            process=process, log=log)


    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class MachineClass:
    """What float kernels depend on (CPU model, vector ISA, BLAS build), the torch threads and
    cores: outputs are comparable bit for bit only within one class. Read from environment.json,
    a golden file or a noise-floor file; the one spelling of the class (judge/agreement.py
    compares two)."""
    cpu_model: Optional[str]
    vector_isa: Optional[str]
    blas: Optional[str]
    torch_threads: Optional[int]
    cores: Optional[int] = None  # optional in the contract (a golden file leaves it out)

    CLASS_KEYS = ("cpu_model", "vector_isa", "blas")

    @classmethod
    def of(cls, env: dict) -> "MachineClass":
        isa = env.get("vector_isa")
        isa = isa.get("summary") if isinstance(isa, dict) else isa

        def text(value):
            return None if value in (None, "", "unknown") else str(value)

        return cls(text(env.get("cpu_model")), text(isa), text(env.get("blas")), env.get("torch_threads"),
                   env.get("cores"))

    def text(self) -> str:
        parts = [self.cpu_model or "CPU unknown", self.vector_isa or "ISA unknown",
                 (self.blas or "BLAS unknown").split(" ")[0]]
        return ", ".join(parts) + (f", {self.cores} cores" if self.cores else "")


# --- the campaign and its receipts ----------------------------------------------------------------
@dataclass(frozen=True)
class Timeouts:
    run_s: float
    campaign_s: float


@dataclass(frozen=True)
class CampaignWorkload:
    entry: str
    path: Optional[str]  # as the bundle records it (relative to the repository when inside it)
    params: dict
    sys_path: list
    items: Optional[int]
    prepare: Optional[str]


@dataclass(frozen=True)
class Pin:
    """A revision as campaign.yaml names it and the commit it resolved to."""
    rev: str
    sha: str


@dataclass(frozen=True)
class CampaignSandbox:
    mode: str
    network: bool
    read: list


@dataclass(frozen=True)
class ParityBound:
    max_ulp: Optional[int]


@dataclass(frozen=True)
class InstructionPlan:
    items: Optional[int]
    runs: int
    order: str


@dataclass(frozen=True)
class InterferenceBounds:
    """campaign.json's interference: the bounds that mark a run disturbed (rules.disturbance)."""
    max_steal: float
    min_cpu_per_wall: Optional[float]


@dataclass(frozen=True)
class CampaignRecord(FromJson):
    """data/campaign.json: the campaign as run (contract.FIELDS["campaign"], field for field)."""
    schema: str
    name: str
    description: str
    notes: str
    campaign_path: Optional[str]
    order: str
    rounds: Optional[int]  # null for an explicit order
    budget_s: Optional[float]  # `rounds: auto` only: the count follows it (rules.auto_rounds)
    min_rounds: Optional[int]
    precision: Optional[float]  # `precision:` a look ends it only once its interval is this precise (rules.precise)
    stage_rounds: Optional[int]
    seed: Optional[int]
    labels: list
    slots: int
    timeouts: Timeouts
    workload: CampaignWorkload
    build: list
    overrides: dict
    revisions: dict[str, Pin]
    python: dict  # variant -> its interpreter (None: the harness's own)
    launch: str
    preload: list
    cores: Optional[list]  # `launch: duet`: its two cores (rules.duet_core); null under any other launch
    sandbox: CampaignSandbox
    stages: dict
    optional_stages: list
    stage_calls: dict
    env: dict
    golden: Optional[str]
    golden_sha256: Optional[str]
    noise_floor: Optional[str]
    noise_floor_sha256: Optional[str]
    threshold: float
    question: str
    margin: Optional[float]
    interference: Optional[InterferenceBounds]  # absent only beside run records of an earlier schema
    parity: ParityBound
    metrics: list
    instructions: Optional[InstructionPlan]

    ABSENT = ("interference",)
    # keys the previous generation's campaign.json lacks (campaign/v10: harness/legacy), read as null so that
    # `harness report` can show a bundle its frozen checker passed; the checkers hold today's to every key
    EARLIER = ("precision", "cores")


    def sha(self, variant: str) -> str:
        return self.revisions[variant].sha

    def shas(self) -> list:
        return [self.sha(v) for v in ("base", "candidate")]


def campaign(campaign, revisions: dict, rel) -> CampaignRecord:
    """data/campaign.json: the campaign as run. revisions: variant -> (rev, sha); rel turns a path
    into how the bundle records it (relative to the repository when inside it)."""
    return CampaignRecord(
        schema=C.SCHEMAS["campaign"],
        name=campaign.name,
        description=campaign.description,
        notes=campaign.notes,
        campaign_path=rel(campaign.source),
        order=campaign.order,
        rounds=campaign.rounds,
        budget_s=campaign.budget_s,
        min_rounds=campaign.min_rounds,
        precision=campaign.precision,
        stage_rounds=campaign.stage_rounds,
        seed=campaign.seed,
        labels=[label for label, _ in R.labels(campaign.order)],
        slots=campaign.slots,
        timeouts=Timeouts(campaign.run_timeout_s, campaign.campaign_timeout_s),
        workload=CampaignWorkload(entry=campaign.workload.entry, path=rel(campaign.workload.path),
                                  params=campaign.workload.params, sys_path=list(campaign.workload.sys_path),
                                  items=campaign.workload.items, prepare=campaign.workload.prepare),
        build=[list(cmd) for cmd in campaign.build],
        overrides=campaign.overrides,
        revisions={v: Pin(rev, sha) for v, (rev, sha) in revisions.items()},
        python={v: campaign.revision(v).python for v in ("base", "candidate")},
        launch=campaign.launch,
        preload=list(campaign.preload),
        cores=list(campaign.cores) if campaign.launch == C.DUET else None,
        sandbox=CampaignSandbox(campaign.sandbox.mode, campaign.sandbox.network, list(campaign.sandbox.read)),
        stages=campaign.stages,
        optional_stages=sorted(campaign.optional_stages),
        stage_calls=campaign.stage_calls,
        env=campaign.env,
        golden=rel(campaign.golden),
        golden_sha256=campaign.golden_sha256,
        noise_floor=rel(campaign.noise_floor),
        noise_floor_sha256=campaign.noise_floor_sha256,
        threshold=campaign.threshold,
        question=campaign.question,
        margin=campaign.margin,
        interference=interference_bounds(campaign.interference),
        parity=ParityBound(campaign.max_ulp),
        metrics=list(campaign.metrics),
        instructions=(InstructionPlan(campaign.instructions.items, campaign.instructions.runs,
                                      R.instruction_order(campaign.instructions.runs))
                      if campaign.instructions is not None else None),
    )


def interference_bounds(declared: Optional[dict]) -> "InterferenceBounds":
    """campaign.json's interference: the campaign's declared bounds (plan/spec's, as parsed) over
    the contract's defaults."""
    return InterferenceBounds(**{"max_steal": C.MAX_STEAL, "min_cpu_per_wall": None, **(declared or {})})


# Fields of campaign.json that come from the machine or the repository, not from the YAML.
CAMPAIGN_RESOLVED = ("campaign_path", "workload.path", "golden", "noise_floor", "revisions.base.sha",
                     "revisions.candidate.sha")


@dataclass(frozen=True)
class BuildStep:
    argv: list
    exit_code: Optional[int]
    output_tail: str


@dataclass(frozen=True)
class Build(FromJson):
    """One variant's build (plan/revisions.built_tree): its cache key, the tree it built from,
    whether it came from the cache, and each step."""
    key: str
    tree_sha256: str
    cached: bool
    steps: list[BuildStep]



@dataclass(frozen=True)
class BuildsReceipt:
    """data/receipts/builds.json, when the campaign has build commands: each variant's build."""
    schema: str
    base: Build
    candidate: Build


def builds_receipt(builds: dict) -> dict:
    """builds.json as JSON (the runner writes it as it is): builds, variant -> its Build."""
    return to_json(BuildsReceipt(C.SCHEMAS["builds"], **builds))


@dataclass(frozen=True)
class RunnerReceipt(FromJson):
    """data/receipts/runner.json: the runner's span, why it stopped, and the items it planned."""
    schema: str
    started_at: float
    ended_at: float
    reason: Optional[str]
    runs_planned: int
    runs_started: int
    items_all: list
    items: list



def runner_receipt(*, started_at: float, ended_at: float, reason: Optional[str], runs_planned: int,
                   runs_started: int, items_all: list, items: list) -> RunnerReceipt:
    return RunnerReceipt(C.SCHEMAS["runner"], started_at, ended_at, reason, runs_planned, runs_started, items_all,
                         items)


@dataclass(frozen=True)
class Reaped:
    """A process the campaign launched, as the cleanup found it."""
    pid: int
    create_time: float
    cmdline: list
    run: str
    role: str
    parent: Optional[int]
    absent: bool
    verified: str
    checked_at: float


@dataclass(frozen=True)
class CleanupReceipt(FromJson):
    """data/receipts/cleanup.json: every process the campaign launched, and whether each is gone."""
    schema: str
    method: str
    processes: list[Reaped]
    count: int
    all_absent: bool



def cleanup_receipt(*, method: str, processes: list) -> CleanupReceipt:
    return CleanupReceipt(C.SCHEMAS["cleanup"], method, processes, len(processes), all(p.absent for p in processes))


@dataclass(frozen=True)
class Fenced:
    """A fenced file of a revision: its SHA-256 as campaign.yaml pins it, found in the tree."""
    sha256: str
    ok: bool


@dataclass(frozen=True)
class RevisionReceipt:
    """One revision as the runner materialized it (plan/revisions.Materialized.receipt): as the
    campaign names it, the commit, its tree's digest, its fenced files, and a note for a revision
    that names no fixed commit (WORKTREE, merge-base)."""
    rev: str
    sha: str
    tree_sha256: str
    fence: dict[str, Fenced]
    note: Optional[str]


@dataclass(frozen=True)
class RevisionsReceipt(FromJson):
    """data/receipts/revisions.json: each variant's revision."""
    schema: str
    base: RevisionReceipt
    candidate: RevisionReceipt


    def variant(self, name: str) -> RevisionReceipt:
        return self.base if name == "base" else self.candidate


def revisions_receipt(receipts: dict) -> dict:
    """revisions.json as JSON (the runner writes it as it is): receipts, variant -> its RevisionReceipt."""
    return to_json(RevisionsReceipt(C.SCHEMAS["revisions"], **receipts))


@dataclass(frozen=True)
class InputPin:
    """One input as the campaign pinned it and the runner found it."""
    path: str
    kind: str  # file or dir
    sha256: str
    build: Optional[list]


@dataclass(frozen=True)
class InputsReceipt(FromJson):
    """data/receipts/inputs.json."""
    schema: str
    inputs: dict[str, InputPin]


    def pins(self) -> dict:
        """name -> its pinned SHA-256."""
        return {name: pin.sha256 for name, pin in self.inputs.items()}


def inputs_receipt(pins: dict[str, InputPin]) -> InputsReceipt:
    """pins: name -> its InputPin, as the runner prepared each input."""
    return InputsReceipt(C.SCHEMAS["inputs"], pins)


@dataclass(frozen=True)
class WorkloadFile:
    path: str  # under data/workload/
    size: int
    sha256: str


@dataclass(frozen=True)
class WorkloadReceipt(FromJson):
    """data/receipts/workload.json: the workload folder as campaign.json records its path, each
    stored file's path under data/workload/, size and SHA-256, the digest of that listing (which
    every ok run's workload_sha256 must equal) and what the snapshot left out by its rules."""
    schema: str
    path: Optional[str]
    files: list[WorkloadFile]
    digest: Optional[str]
    left_out: list



def workload_receipt(*, path: Optional[str], files: list, digest: Optional[str], left_out: list) -> WorkloadReceipt:
    """files: plan/workload.rows' {path, size, sha256}, one per stored file."""
    return WorkloadReceipt(C.SCHEMAS["workload"], path, [WorkloadFile(**row) for row in files], digest, left_out)


@dataclass(frozen=True)
class SandboxRecord(FromJson):
    """environment.json's sandbox (harness/engine/sandbox.record): what every worker of the campaign
    ran under, its level (contract.SANDBOX_LEVELS) and why it is not full, Landlock's ABI, whether
    it had namespaces of its own, the network (declared, cut, tcp or open), whether only its own
    scheduling was open to it, and the folders its runs could read besides their trees and the
    harness's code copy, and write besides their own."""
    level: str
    reason: Optional[str]
    landlock: Optional[int]
    namespaces: bool
    network: str
    scheduling: bool
    read: list[str]
    write: list[str]


def environment(fields: dict) -> dict:
    return {"schema": C.SCHEMAS["environment"], **fields}


def golden(run: RunRecord, *, campaign: str, machine: MachineClass, bundle_digest: str) -> dict:
    """A campaign's golden file from one run record: the digests every later run must give, and
    the machine class they hold for (float outputs are not portable across classes)."""
    return {"schema": C.SCHEMAS["golden"], "campaign": campaign, "source_run": run.label, "sha": run.sha,
            "machine": {k: v for k, v in to_json(machine).items() if k != "cores"}, "bundle_digest": bundle_digest,
            "items": {it.id: {"fields": {n: f.digest for n, f in it.fields.items()}, "error": it.error}
                      for it in run.items}}


@dataclass(frozen=True)
class NoiseFloor(FromJson):
    """A noise-floor file of `harness calibrate` (contract.FIELDS["noise_floor"]; a campaign pins it,
    its bundle keeps it as data/noise_floor.json): the campaign run base against base, on a machine
    of this class, and the largest ratio its 95% interval allowed for no change,
    max(1 - lo, hi - 1), which the verdict's band may not be narrower than."""
    schema: str
    campaign: str
    bundle_digest: str
    machine: MachineClass
    started_at: float
    rounds: int
    ratio: float
    ci95: list[float]
    floor: float


def noise_floor(*, campaign: str, bundle_digest: str, machine: MachineClass, started_at: float, rounds: int,
                ratio: float, ci95: list, floor: float) -> NoiseFloor:
    return NoiseFloor(C.SCHEMAS["noise_floor"], campaign, bundle_digest, machine, started_at, rounds, ratio, ci95,
                      floor)


@dataclass(frozen=True)
class BisectStep:
    """One step of `harness bisect`: a sealed bundle under steps/, its revisions, band, digest and
    what it gave (rules.bisect_step)."""
    step: int
    folder: str
    base: str
    candidate: str
    band: float
    digest: str
    verdict: str
    ratio: Optional[float]
    interval: Optional[list]


@dataclass(frozen=True)
class BisectReceipt(FromJson):
    """OUT/bisect.json beside its step bundles (contract.RECEIPT_FIELDS["bisect"]): the search's
    inputs, every step, and how it ended."""
    schema: str
    campaign: str
    campaign_sha256: str
    good: str
    bad: str
    good_rev: str
    bad_rev: str
    find: str
    threshold: float
    band: Optional[float]
    budget_s: float
    commits: list
    steps: list[BisectStep]
    ending: str
    culprit: Optional[str]
    reason: str



@dataclass(frozen=True)
class Claim:
    """A bundle's timing claim as reproduction.json holds it (its comparison's stats): the
    candidate/base ratio, its 95% interval, the verdict and the timed items."""
    ratio: Optional[float]
    ci95: Optional[list]
    verdict: str
    items: Optional[int]


@dataclass(frozen=True)
class Original:
    """reproduction.json's original: the bundle re-run, its start, machine class and claim."""
    digest: Optional[str]  # the sealed bundle's (read.Bundle.digest: None only for an unsealed folder)
    started_at: float
    machine: MachineClass
    claim: Claim


@dataclass(frozen=True)
class Rerun:
    """reproduction.json's reproduction: this bundle's own start, machine class and measurement."""
    started_at: float
    machine: MachineClass
    measured: Claim


@dataclass(frozen=True)
class Machines:
    same_class: Optional[bool]  # None: the class cannot be told
    why: str


@dataclass(frozen=True)
class Scope:
    """How much of the original campaign the re-run repeated."""
    rounds: int
    rounds_original: int
    items: int
    items_original: int
    same_items: bool
    missing: int
    extra: int
    note: str


@dataclass(frozen=True)
class OutputItems:
    original: int
    reproduction: int
    compared: int
    identical: int


@dataclass(frozen=True)
class Outputs:
    """Two bundles' outputs compared (harness/judge/agreement.py): do they agree, why, and where they
    differ; mismatches in parity's row form (an error row has no digests), divergence their
    measured rows (parity.divergence; filled by `harness reproduce`, empty until then)."""
    agree: bool
    why: str
    same_class: Optional[bool]
    items: OutputItems
    items_differing: dict  # item -> how it differs
    fields_compared: int
    fields_identical: int
    kinds: list
    mismatch_count: int
    mismatches: list  # dict rows
    divergence: list = field(default_factory=list)  # dict rows


@dataclass(frozen=True)
class Judgment:
    """The timing judgment of a reproduction (harness/judge/reproduce.judge_timing): the claim held
    to, the re-run's measurement, its interval widened by the tolerance, whether that holds the
    claim, the word and why."""
    held_to: Claim
    measured: Claim
    widened: Optional[list]
    holds: Optional[bool]
    word: str
    reason: str


@dataclass(frozen=True)
class Timing(Judgment):
    """reproduction.json's timing: the judgment, the original's whole claim, and the re-run's runs
    during which other work competed for the cores."""
    claimed: Claim
    overloaded: list


@dataclass(frozen=True)
class ReproductionReceipt(FromJson):
    """data/receipts/reproduction.json, only in a bundle `harness reproduce` made: the bundle it
    re-ran (digest, start, machine class, claim), this bundle's own side, whether the two machines
    are of one class, how much was re-run, and how outputs and timing agree
    (harness/judge/reproduce.py derives every part from the two bundles)."""
    schema: str
    campaign: str
    original: Original
    reproduction: Rerun
    machines: Machines
    scope: Scope
    outputs: Outputs
    timing: Timing
    tolerance: float
    verdict: str
    reason: str



def reproduction_receipt(*, campaign: str, original: Original, reproduction: Rerun, machines: Machines, scope: Scope,
                         outputs: Outputs, timing: Timing, verdict: str, reason: str) -> ReproductionReceipt:
    return ReproductionReceipt(C.SCHEMAS["reproduction"], campaign, original, reproduction, machines, scope, outputs,
                               timing, C.REPRODUCE_TOLERANCE, verdict, reason)
