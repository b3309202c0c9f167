"""One run of a campaign, in a fresh process: `python -m harness.worker JOB.json`.

Protocol (the parent wrote JOB.json, a harness.records.Job): verify inputs, import the code
under test from this revision's tree only, install stage instrumentation, set the workload up,
check it gives the items the pre-flight found, then time exactly the item loop on `slots`
threads. The loop's start and end are marked to the parent over its channel (ABBA_CHANNEL, see
harness/engine/outside.py), which times it by its own clock and the kernel's accounting while the
worker waits at each mark. After the loop each item's outputs are written, raw, into the run's own
output folder (the job's arrays_dir), which the parent reads, hashes and stores itself; the result
(harness.records.WorkerResult) says which file holds which output. Exit 0 means the result was
written; anything else is a failed run.

The code under test runs in this process, so every figure here is its word: the clocks this module
times with are bound when it is imported (before any code under test), and after the loop a
tripwire names any of them, or of this module's functions, that were replaced (result.tripwire).
The parent's figures are the evidence; these are checked against them.

It may run under the campaign's own interpreter (`python:`), CPython 3.9 or newer with numpy:
it and what it imports keep to the worker's room (harness/worker/__init__.py).
"""
from __future__ import annotations

import datetime as _dt
import gc
import importlib
import itertools
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

from harness.records import (CheckResult, CountResult, Imports, Interpreter, Job, JobInput, Machine, StageTotals,
                             WorkerItem, WorkerResult, to_json)

# The clocks the worker times with, bound before any code under test is imported: a module that
# replaces time.perf_counter afterwards changes what it calls, not what the worker calls.
_perf_counter, _thread_time, _process_time, _monotonic = time.perf_counter, time.thread_time, time.process_time, \
    time.monotonic
BOUND_CLOCKS = {"time.perf_counter": _perf_counter, "time.thread_time": _thread_time,
                "time.process_time": _process_time, "time.monotonic": _monotonic}

def cpu_freq_mhz() -> float | None:
    """The first CPU's current frequency as Linux reports it, or None."""
    try:
        with open("/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "rb") as fh:
            return round(int(fh.read(32).strip()) / 1000.0, 1)
    except (OSError, ValueError):
        pass
    try:
        with open("/proc/cpuinfo", "rb") as fh:
            for line in fh.read(1 << 16).decode("ascii", "replace").splitlines():
                if line.startswith("cpu MHz"):
                    return round(float(line.split(":", 1)[1]), 1)
    except (OSError, ValueError):
        pass
    return None


@dataclass(frozen=True)
class Snapshot:
    """The machine as the run begins or ends: its load averages and the first CPU's frequency."""
    loadavg: Optional[list]
    cpu_freq_mhz: Optional[float]


def machine_snapshot() -> Snapshot:
    try:
        load = [round(x, 6) for x in os.getloadavg()]
    except OSError:
        load = None
    return Snapshot(load, cpu_freq_mhz())


def cpu_stall_us() -> int | None:
    """Linux PSI: microseconds since boot during which some runnable task waited for a CPU
    (/proc/pressure/cpu, "some ... total="); None where the kernel has no PSI. Over the timed
    loop it says whether the machine had more runnable work than cores, our own or not."""
    try:
        with open("/proc/pressure/cpu", "rb") as fh:
            return parse_psi(fh.read(256).decode("ascii", "replace"))
    except OSError:
        return None


def parse_psi(text: str) -> int | None:
    """The "some" line's total= (microseconds) of a PSI file's text; None when it has none."""
    first = text.split("\n", 1)[0]
    fields = dict(part.split("=", 1) for part in first.split()[1:] if "=" in part)
    return int(fields["total"]) if first.startswith("some ") and fields.get("total", "").isdigit() else None


def parse_steal(text: str) -> dict:
    """Steal per line of /proc/stat's text: {"cpu": all CPUs, "cpu0": ..., ...} in USER_HZ ticks, the
    8th value after the name (user nice system idle iowait irq softirq steal); a line with fewer
    values (a kernel before 2.6.11) or one that is not a count is left out."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        name = parts[0] if parts else ""
        if len(parts) >= 9 and name.startswith("cpu") and (name == "cpu" or name[3:].isdigit()) \
                and parts[8].isdigit():
            out[parts[0]] = int(parts[8])
    return out


def read_steal() -> dict:
    try:
        with open("/proc/stat", "rb") as fh:
            return parse_steal(fh.read(1 << 20).decode("ascii", "replace"))
    except OSError:
        return {}


def parse_processor(text: str) -> int | None:
    """The CPU a task last ran on: field 39 of /proc/<pid>/stat ("processor"), counted after the
    command name's closing parenthesis (the name may hold spaces and parentheses)."""
    rest = text.rpartition(")")[2].split()
    return int(rest[36]) if len(rest) > 36 and rest[36].isdigit() else None


def current_cpu() -> int | None:
    for path in ("/proc/thread-self/stat", "/proc/self/stat"):
        try:
            with open(path, "rb") as fh:
                return parse_processor(fh.read(4096).decode("ascii", "replace"))
        except OSError:
            continue
    return None


def cpu_freq_of(cpu: int | None) -> float | None:
    """The kernel's current frequency of one CPU (cpufreq scaling_cur_freq, kHz), in MHz; None where
    the machine has no cpufreq (most VMs): absent, never a nominal figure."""
    if cpu is None:
        return None
    try:
        with open(f"/sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_cur_freq", "rb") as fh:
            return round(int(fh.read(32).strip()) / 1000.0, 3)
    except (OSError, ValueError):
        return None


def user_hz() -> int | None:
    try:
        return int(os.sysconf("SC_CLK_TCK"))
    except (AttributeError, ValueError, OSError):
        return None


@dataclass(frozen=True)
class Reading:
    """Read at one end of the timed loop, outside it: steal per /proc/stat CPU line (parse_steal),
    the CPU this thread is on and that CPU's frequency."""
    steal: dict
    cpu: Optional[int]
    freq: Optional[float]


def interference_reading() -> Reading:
    cpu = current_cpu()
    return Reading(read_steal(), cpu, cpu_freq_of(cpu))


def steal_over(before: dict, after: dict, line: str) -> Optional[int]:
    """A /proc/stat line's steal ticks over the loop; None when the kernel did not show it at both
    ends, or it ran backwards."""
    first, last = before.get(line), after.get(line)
    return last - first if first is not None and last is not None and last >= first else None


def interference_over(before: Reading, after: Reading) -> dict:
    """records.Interference.MEASURED over the loop from the readings at its two ends: a count the
    kernel does not show at both ends is None, and so is the CPU when the worker moved."""
    steal = steal_over(before.steal, after.steal, "cpu")  # the line of all CPUs
    cpu = before.cpu if before.cpu is not None and before.cpu == after.cpu else None
    own = steal_over(before.steal, after.steal, f"cpu{cpu}") if cpu is not None and steal is not None else None
    return {"user_hz": user_hz() if steal is not None else None, "steal_ticks": steal, "cpu": cpu,
            "cpu_steal_ticks": own, "freq_mhz_before": before.freq if cpu is not None else None,
            "freq_mhz_after": after.freq if cpu is not None else None}


def now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def error_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def verify_inputs(inputs: dict[str, JobInput]) -> dict[str, Path]:
    from harness.files import path_digest

    paths = {}
    for name, pinned in inputs.items():
        path = Path(pinned.path)
        _, actual = path_digest(path)
        if actual != pinned.sha256:
            raise SystemExit(f"input '{name}' ({path}) changed: sha256 {actual} != pinned {pinned.sha256}")
        paths[name] = path
    return paths


def from_tree(names, tree: str) -> tuple[str, str] | None:
    """(name, file) of the first of these modules whose file lies inside the revision's tree
    (realpath), or None. A relative __file__ names no place (torch.classes says "_classes.py"):
    only a real path is judged."""
    for name in sorted(names):
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and os.path.isabs(path) and os.path.realpath(path).startswith(tree + os.sep):
            return name, path
    return None


def prepare(job: Job, inputs: dict) -> object:
    """workload.prepare's object, ctx.prepared for setup() (None without one): what setup() needs
    that no revision's code makes (a tokenizer, a model's weights, a corpus), made by the
    campaign's prepare(ctx) (ctx.params, ctx.inputs) with the revision's tree off sys.path; a
    module it imports from the tree is refused. A zygote makes it once, before it forks its
    runs (harness/worker/zygote.py); a fresh worker here, at the same point of its start."""
    if not job.workload.prepare:
        return None
    tree = os.path.realpath(job.tree)
    saved, before = list(sys.path), set(sys.modules)
    sys.path[:] = [p for p in saved if p and os.path.realpath(p) != tree and
                   not os.path.realpath(p).startswith(tree + os.sep)]
    if job.workload.path and job.workload.path not in sys.path:
        sys.path.insert(0, job.workload.path)
    try:
        made = import_entry(job.workload.prepare)(SimpleNamespace(params=job.workload.params or {}, inputs=inputs))
    except Exception as exc:  # noqa: BLE001 - any import or failure of the user's prepare
        raise SystemExit(f"workload.prepare: {job.workload.prepare} failed: {describe(exc)}"
                         f"{where(exc, [Path(job.workload.path)] if job.workload.path else [])}") from None
    finally:
        sys.path[:] = saved
    found = from_tree(set(sys.modules) - before, tree)
    if found:
        raise SystemExit(f"workload.prepare imported {found[0]} from the revision's tree ({found[1]}): what it "
                         "makes must come from outside the code under test (a library, the workload folder, an "
                         "input)")
    shadow = shadowed(set(sys.modules) - before, [os.path.join(tree, sub) for sub in job.workload.sys_path] + [tree])
    if shadow:
        raise SystemExit(f"workload.prepare imported {shadow} from outside the revision's tree, but the tree holds a "
                         "module of that name: every later import of it would get that copy in place of the code under "
                         "test; make it without importing the code under test")
    return made


def shadowed(names, roots: list) -> str | None:
    """The first of these modules whose top-level name the tree's import roots also offer (the
    code under test), imported from elsewhere (an installed copy), or None."""
    for name in sorted(names):
        top = name.split(".")[0]
        for root in roots:
            if os.path.isdir(os.path.join(root, top)) or os.path.isfile(os.path.join(root, top + ".py")):
                return name
    return None


def import_entry(entry: str):
    module_name, _, func = entry.partition(":")
    return getattr(importlib.import_module(module_name), func)


def origin(module_name: str, tree: Path) -> str:
    """Where a module was imported from, relative to the revision tree when inside it."""
    module = sys.modules.get(module_name)
    path = getattr(module, "__file__", None)
    if not path:
        return "<built-in>"
    try:
        return "tree:" + str(Path(path).resolve().relative_to(tree.resolve()))
    except ValueError:
        return path


def describe(exc: BaseException) -> str:
    return f"{error_name(exc)}: {str(exc)[:300]}"


def where(exc: BaseException, roots: list[Path]) -> str:
    """' (at FILE:LINE)' for the innermost frame of the traceback in the user's code (the
    revision tree or the workload folder), else '' (the error is elsewhere, e.g. numpy)."""
    import traceback

    frames = traceback.extract_tb(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        frames.append(traceback.FrameSummary(exc.filename, exc.lineno, "<module>"))
    resolved = [r.resolve() for r in roots]
    for frame in reversed(frames):
        path = Path(frame.filename)
        if not path.is_absolute():
            continue
        path = path.resolve()
        for root in resolved:
            if path.is_relative_to(root):
                return f" (at {path.relative_to(root) if root == resolved[0] else path}:{frame.lineno})"
    return ""


def missing_module_hint(exc: BaseException, tree: Path, sys_path: list[str]) -> str:
    """A src layout without `sys_path`: the package the import wanted is in a folder of
    the revision tree that is not on sys.path."""
    name = getattr(exc, "name", None)
    if not isinstance(exc, ModuleNotFoundError) or not name:
        return ""
    top = name.split(".")[0]
    listed = {(tree / sub).resolve() for sub in sys_path} | {tree.resolve()}
    try:
        folders = sorted(p for p in tree.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return ""
    for folder in folders:
        if folder.resolve() in listed:
            continue
        if (folder / top).is_dir() or (folder / f"{top}.py").is_file():
            found = f"{folder.name}/{top}" + ("" if (folder / top).is_dir() else ".py")
            return f"; the target has {found}: add `sys_path: [{folder.name}]` under workload"
    return ""


def write_outputs(item_id: str, index: int, outputs, out_dir: Path, allow_empty: bool = False) -> dict:
    """Write one item's outputs, raw (.npy), into the run's own output folder: {name: file}, the
    file relative to that folder. The parent reads, hashes and stores them (harness/bundle/arrays.py
    ingest); nothing here is believed unchecked. A broken output protocol ends the run (exit 1 with
    the cause): recorded as an item error it would read as "parity identical, 0 fields".
    allow_empty: a suite's benchmark that gives no outputs (its metrics say why)."""
    from harness.bundle import arrays as tensors

    if allow_empty and outputs == {}:
        return {}
    if not isinstance(outputs, dict) or not outputs:
        raise SystemExit(f"run({item_id!r}) broke the output protocol: returned {type(outputs).__name__}, "
                         "expected a non-empty dict of name -> array")
    fields = {}
    for j, name in enumerate(sorted(outputs, key=str)):
        if not isinstance(name, str):
            raise SystemExit(f"run({item_id!r}) broke the output protocol: field name {name!r} is not a str")
        try:
            fields[name] = tensors.write_raw(outputs[name], out_dir, f"{index}-{j}")
        except tensors.ArrayError as exc:
            raise SystemExit(f"run({item_id!r}) broke the output protocol: field {name!r}: {exc}") from None
    return fields


def stage_homes(stages: dict) -> dict:
    """Where each stage's function is defined, when that is not where its path names it (a
    re-export: `pkg:func` with func from pkg.impl, whose own callers never see a wrapper on pkg)."""
    from harness.worker import stagetimer

    out = {}
    for name, path in stages.items():
        try:
            _, _, value = stagetimer.resolve(path)
        except Exception:  # noqa: BLE001 - install() reports it
            continue
        fn = getattr(value, "__func__", value)
        module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and f"{module}:{qualname}" != path:
            out[name] = f"{module}:{qualname}"
    return out


def repeat_walls(workload, item_id: str, budget_s: float = 2.0, most: int = 6) -> list:
    """The pre-flight item run again a few times (at most budget_s): how much its wall moves
    here, for the runner's note when the machine is too noisy for the verdict's band."""
    walls: list[float] = []
    end = _perf_counter() + budget_s
    while len(walls) < most and _perf_counter() < end:
        t0 = _perf_counter()
        try:
            workload.run(item_id)
        except Exception:  # noqa: BLE001 - it returned once; a flaky item is the runs' business
            break
        walls.append(_perf_counter() - t0)
    return walls


# `suite.number: auto`'s calibration (the base's pre-flight): a benchmark's calls are timed in batches,
# doubled until one takes CALIBRATE_BATCH_S (perf_counter reads a batch that long to well under 1%),
# CALIBRATE_BATCHES of them kept (their median per call decides), for at most about CALIBRATE_ITEM_S
# of each benchmark's batches (at least one is kept: a benchmark of a second takes its warm call and one).
CALIBRATE_BATCH_S, CALIBRATE_BATCHES, CALIBRATE_ITEM_S = 1e-3, 3, 0.2


def calibrate(workload, items: list, budget_s: float) -> dict:
    """`suite.number: auto`: each benchmark's wall of one call, for the runner to turn into its calls
    (plan.suite.calls_for): a warm call, then batches of calls as a timed item makes them
    (workload.batch: pedantic's arguments made before the clock). {item: [the wall of one call in
    each kept batch]}; [] for a benchmark whose warm call raised (its error is what every run
    records). A benchmark that returned and then raised, or a calibration past budget_s, ends the
    pre-flight in one line (SystemExit) before any timed run."""
    from harness.contract import MAX_AUTO_NUMBER

    out: dict = {}
    start = _perf_counter()
    for done, item_id in enumerate(items):
        if _perf_counter() - start > budget_s:
            slowest = max((min(w) for w in out.values() if w), default=0.0)
            raise SystemExit(f"suite.number: auto: calibrating the base's {len(items)} benchmarks ran past its "
                             f"{budget_s:g} s budget before {item_id} ({done} calibrated, the slowest "
                             f"{slowest:.3g} s a call): give `suite: {{number: N}}` by hand (1 for benchmarks "
                             "of 10 ms or more), or select fewer benchmarks")
        try:
            workload.batch(item_id, 1)()  # warm: a first call's own costs (imports, caches) stay out
        except Exception:  # noqa: BLE001 - its error is its record in every run, compared like an output
            out[item_id] = []
            continue
        per_call: list = []
        size, began = 1, _perf_counter()
        while True:
            calls = workload.batch(item_id, size)
            t0 = _perf_counter()
            try:
                calls()
            except Exception as exc:  # noqa: BLE001
                raise SystemExit(f"suite.number: auto: {item_id} returned, then raised when called again in "
                                 f"calibration ({describe(exc)}): a benchmark that cannot be called repeatedly "
                                 "cannot be timed over several calls; make it repeatable, or give "
                                 "`suite: {number: 1}`, or leave it out with select") from None
            wall = _perf_counter() - t0
            spent = _perf_counter() - began
            if wall < CALIBRATE_BATCH_S and size < MAX_AUTO_NUMBER and spent < CALIBRATE_ITEM_S:
                size *= 2
                continue
            per_call.append(wall / size)
            if len(per_call) >= CALIBRATE_BATCHES or spent >= CALIBRATE_ITEM_S:
                break
        out[item_id] = per_call
    return out


def is_suite(job: Job) -> bool:
    """A `suite:` campaign: the workload is the harness's adapter for an existing benchmark suite."""
    from harness import contract

    return job.workload.entry in contract.SUITE_ENTRIES.values()


def outputs_of(workload, item_id: str, returned, suite: bool):
    """What run() returned, as the outputs to store: a suite's benchmark returns what it returns,
    made outputs (or none) here, outside the timer."""
    return workload.suite_outputs(item_id, returned) if suite else returned


def check_protocol(workload, items: list, arrays_dir: Path, result_path: str, timer=None,
                   stages: dict | None = None, items_all: list | None = None, homes: dict | None = None,
                   suite: bool = False, calibrate_s: float | None = None) -> int:
    """The pre-flight: run items untimed, in order, until one returns (items may raise:
    recorded errors are allowed when alike in both revisions), check its outputs, and write
    what was seen. Only a workload whose every item raises fails here, as its runs would.
    Stage timers are armed only to count calls (the runner flags stages neither revision
    called); their times are not used. calibrate_s: `suite.number: auto` in the base, every
    item calibrated (calibrate) within that many seconds."""
    from harness.files import atomic_write_json

    raised = []
    for item_id in items:
        if timer is not None:
            timer.armed = True
        try:
            outputs = workload.run(item_id)
        except Exception as exc:  # noqa: BLE001 - allowed on some items, if alike in both revisions
            raised.append(f"{item_id}: {describe(exc)}")
            continue
        finally:
            if timer is not None:
                timer.armed = False
        if hasattr(workload, "sync"):
            workload.sync()
        fields = write_outputs(item_id, 0, outputs_of(workload, item_id, outputs, suite), arrays_dir, suite)
        calls = {name: t["calls"] for name, t in timer.totals(stages).items()} if timer is not None else {}
        repeats = repeat_walls(workload, item_id)
        calibration = calibrate(workload, items, calibrate_s) if calibrate_s is not None and suite else {}
        if hasattr(workload, "close"):
            workload.close()
        atomic_write_json(result_path, to_json(CheckResult(item_id, fields, raised, items_all or [], calls, homes or {},
                                                           repeats, Interpreter.current(), calibration)))
        return 0
    raise SystemExit(f"{'suite' if suite else 'workload.entry'}: run() raised on every item ({len(raised)}); the first: "
                     f"{raised[0]}")


# A fresh process's first ~0.1 s of work runs up to 1.7x slower on a VM whose vCPU was idle
# (measured here: eight 12 ms loops right after start-up, then steady): so many busy ms before
# the clock, or a light setup() hands that slowness to the first items.
WARMUP_S = 0.25


def spin(seconds: float) -> None:
    end = _perf_counter() + seconds
    while _perf_counter() < end:
        pass


class Marks:
    """The worker's end of its mark channel (ABBA_CHANNEL, harness/engine/outside.py): each mark
    waits for the parent's answer, so the parent's readings are taken while this process waits.
    Without a channel (a worker run by hand) marking does nothing."""

    def __init__(self):
        import socket

        fd = os.environ.pop("ABBA_CHANNEL", None)
        self.sock = socket.socket(fileno=int(fd)) if fd and fd.isdigit() else None
        if self.sock is not None:
            self.sock.setblocking(True)

    def mark(self, text: str, spin_s: float = 1.0) -> None:
        """Send a mark and wait for the parent's answer, spinning (yielding the CPU between tries)
        for up to spin_s so that this process is running, not asleep, when the answer comes: a
        wake-up after it would count in the parent's loop wall."""
        if self.sock is None:
            return
        self.sock.sendall(text.encode() + b"\n")
        end = _monotonic() + spin_s
        while _monotonic() < end:
            try:
                got = self.sock.recv(1, socket_dontwait())
            except BlockingIOError:
                os.sched_yield()
                continue
            if not got:
                raise SystemExit("the parent closed the mark channel")
            return
        if not self.sock.recv(1):
            raise SystemExit("the parent closed the mark channel")


def socket_dontwait() -> int:
    import socket

    return socket.MSG_DONTWAIT


MARKS: Marks | None = None  # made once per process, before the code under test can read the channel's number


def tripwire(bound: dict) -> list:
    """The names of what was replaced since the worker bound it: a clock of the time module, a
    function or method of this module (or its code), or this module itself in sys.modules. A
    tripwire only: the parent's figures are the evidence."""
    changed = [name for name, fn in BOUND_CLOCKS.items() if getattr(time, name.split(".")[1], None) is not fn]
    here = sys.modules.get(__name__)
    if here is not bound["<module>"]:
        changed.append(f"sys.modules[{__name__!r}]")
    for name, held in bound.items():
        if name == "<module>":
            continue
        fn, code = held
        owner, _, attr = name.rpartition(".")
        now = getattr(getattr(here, owner, None) if owner else here, attr, None)
        if now is not fn or getattr(now, "__code__", None) is not code:
            changed.append(f"{__name__}.{name}")
    return changed


def bind_functions() -> dict:
    """This module's functions and its classes' methods with their code, as imported (before any
    code under test), and the module itself."""
    out: dict = {"<module>": sys.modules.get(__name__)}
    for name, value in list(globals().items()):
        if getattr(value, "__module__", None) != __name__:
            continue
        if isinstance(value, type):
            for attr, fn in vars(value).items():
                if hasattr(fn, "__code__"):
                    out[f"{name}.{attr}"] = (fn, fn.__code__)
        elif hasattr(value, "__code__"):
            out[name] = (value, value.__code__)
    return out


@dataclass(frozen=True)
class Region:
    """The timed loop as the worker read it: every thread's CPU (slots, and any the workload's
    libraries start), the time runnable work waited for a core (None without PSI), and
    records.Interference.MEASURED over it."""
    process_cpu_s: float
    cpu_stall_s: Optional[float]
    interference: dict


def run_items(workload, items: list[str], slots: int, timer) -> tuple[float, list[tuple], Region]:
    sync = getattr(workload, "sync", None) or (lambda: None)
    clock, cpu_clock, process_clock = _perf_counter, _thread_time, _process_time
    marks = MARKS or Marks()

    def one(item: str):
        w0, c0 = clock(), cpu_clock()
        try:
            outputs, error = workload.run(item), None
        except Exception as exc:  # noqa: BLE001 - recorded and compared like an output
            outputs, error = None, {"type": error_name(exc), "message": str(exc)}
        sync()
        return outputs, error, clock() - w0, cpu_clock() - c0

    # One slot runs on this thread, the one that ran setup(): thread-affine runtimes
    # (OpenMP teams, CUDA contexts) stay warm. More slots get a pool started before the clock.
    pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="slot") if slots > 1 else None
    try:
        if pool is not None:
            barrier = threading.Barrier(slots + 1)
            warm = [pool.submit(barrier.wait) for _ in range(slots)]
            barrier.wait()
            for f in warm:
                f.result()
        spin(WARMUP_S)
        gc.collect()
        timer.armed = True
        sync()
        # The parent reads its clock, the kernel's CPU and memory of this process (and resets its
        # high-water mark) while this waits; the loop starts once it answers. The machine's
        # readings (PSI, steal) are taken inside the parent's window, so that they cover the loop
        # and not a wait at a mark (a duet's worker waits there for its partner).
        marks.mark("S")
        near = interference_reading()
        stall0 = cpu_stall_us()
        cpu0 = process_clock()
        start = clock()
        if pool is None:
            results = [one(item) for item in items]
        else:
            results = [f.result() for f in [pool.submit(one, item) for item in items]]
        sync()
        end = clock()
        cpu = process_clock() - cpu0
        stall1 = cpu_stall_us()
        far = interference_reading()
        # No spin here: the loop has ended, so a wake-up after the answer counts in the time after
        # it, and a duet's worker may wait at this mark for its partner's loop (rules.outside_pair).
        marks.mark(f"E {start!r} {end!r}", spin_s=0.0)
        wall = end - start
        timer.armed = False
    finally:
        if pool is not None:
            pool.shutdown()
    stall = (stall1 - stall0) / 1e6 if stall0 is not None and stall1 is not None else None
    return wall, results, Region(cpu, stall, interference_over(near, far))


def measured(loop) -> None:
    """Run loop() with callgrind collecting: an instruction run's worker is started under
    valgrind with collection toggled on only inside `sys.call_tracing` (contract.REGION_FLAGS,
    harness/engine/instructions.py), so nothing outside this call is counted."""
    sys.call_tracing(loop, ())


def count_items(workload, items: list[str], result_path: str, workload_digest: str | None) -> int:
    """An instruction run: the items in order on this thread, through the one call that
    callgrind collects inside (measured); outputs are dropped, not stored (the wall runs
    carry parity)."""
    from harness.files import atomic_write_json, harness_source_digest

    sync = getattr(workload, "sync", None) or (lambda: None)
    raised = []

    def loop():
        for item in items:
            try:
                workload.run(item)
            except Exception:  # noqa: BLE001 - an item that raises in the wall runs raises here too
                raised.append(item)
            sync()

    gc.collect()
    measured(loop)
    if len(raised) == len(items):
        raise SystemExit(f"every item raised ({len(items)} of {len(items)}) in the instruction run")
    if hasattr(workload, "close"):
        workload.close()
    atomic_write_json(result_path, to_json(CountResult(items, len(raised), harness_source_digest(), workload_digest,
                                                       Interpreter.current())))
    return 0


NOT_PREPARED = object()  # main's `prepared` when no zygote made it: the worker makes it itself


def main(job_path: str, parent_pid: int | None = None, prepared: object = NOT_PREPARED) -> int:
    """parent_pid: the process this worker dies with, when not the runner the job names (a child
    of a zygote, harness/worker/zygote.py, dies with its zygote, which dies with the runner);
    prepared: workload.prepare's object as its zygote made it."""
    global MARKS
    MARKS = Marks()  # the channel's number leaves the environment before any code under test reads it
    bound = BOUND_FUNCTIONS
    try:
        job = Job.read(job_path)
    except ValueError as exc:
        raise SystemExit(f"job file {job_path}: {exc}") from None
    from harness import contract
    from harness.worker.prctl import die_with_parent

    die_with_parent(job.parent_pid if parent_pid is None else parent_pid)
    started_at, before = now_iso(), machine_snapshot()
    tree = Path(job.tree)

    # The code under test comes from this revision's tree and nowhere else.
    sys.path[:] = [p for p in sys.path if p not in ("", os.getcwd())]
    roots = [str(tree / sub) for sub in job.workload.sys_path] + [str(tree)]
    if job.workload.path:
        roots.append(job.workload.path)
    sys.path[:0] = roots
    sys.dont_write_bytecode = True

    inputs = verify_inputs(job.inputs)
    if prepared is NOT_PREPARED:
        prepared = prepare(job, inputs)
    # What this run imports from the workload folder, digested before any import: the runner
    # stored the folder at the campaign's start, and a run whose digest is not the stored
    # one fails the campaign (harness/comparison/derive.py).
    from harness.plan.workload import WorkloadError, folder_digest

    try:
        workload_digest = folder_digest(job.workload.path, tuple(job.workload.exclude))
    except (WorkloadError, OSError) as exc:
        raise SystemExit(f"workload.path: {exc}") from None

    from harness.files import atomic_write_json, harness_source_digest
    from harness.worker import stagetimer

    # Failures name the campaign key that leads to them (the pre-flight prints these lines),
    # and where in the user's code they were raised.
    user_roots = [tree] + ([Path(job.workload.path)] if job.workload.path else [])

    def hints(exc: BaseException | None) -> str:
        if exc is None:
            return ""
        return where(exc, user_roots) + missing_module_hint(exc, tree, job.workload.sys_path)

    timer = stagetimer.StageTimer()
    # An instruction run counts the code as it is: no stage wrappers in its region.
    stages = job.stages if job.mode != "instructions" else {}
    homes = stage_homes(stages) if job.mode == "check" else {}
    try:
        installed = stagetimer.install(stages, timer, frozenset(job.optional_stages))
    except stagetimer.StageError as exc:  # its message names the stage path and the cause, not its class
        # (an import error it wraps is its __context__: it is raised `from None`)
        raise SystemExit(f"stages: {exc}{hints(exc.__context__)}") from None
    except Exception as exc:  # noqa: BLE001 - any import or wrapping failure
        raise SystemExit(f"stages: {describe(exc)}{hints(exc)}") from None
    try:
        setup = import_entry(job.workload.entry)
    except Exception as exc:  # noqa: BLE001
        raise SystemExit(f"workload.entry: cannot import '{job.workload.entry}': {describe(exc)}"
                         f"{hints(exc)}") from None
    ctx = SimpleNamespace(params=job.workload.params or {}, inputs=inputs, slots=job.slots, label=job.label,
                          variant=job.variant, tree=tree, prepared=prepared)
    suite = is_suite(job)
    try:
        workload = setup(ctx)
        # at most one more than a run measures: an endless `items` (a generator that never ends) is refused, not followed
        items = [str(i) for i in itertools.islice(workload.items, contract.MAX_ITEMS + 1)]
    except Exception as exc:  # noqa: BLE001
        if suite:  # the adapter's refusal is its own line; anything else names where it was raised
            text = str(exc) if type(exc).__name__ == "SuiteError" else f"{describe(exc)}{hints(exc)}"
            raise SystemExit(f"suite: {text}") from None
        raise SystemExit(f"workload.entry: setup() failed: {describe(exc)}{hints(exc)}") from None
    if len(set(items)) != len(items):
        raise SystemExit("workload.entry: setup()'s items have duplicate ids")
    if not items:
        raise SystemExit("workload.entry: setup() gave no items")
    if len(items) > contract.MAX_ITEMS or any(len(i) > 256 for i in items):
        raise SystemExit(f"workload.entry: setup() gave {'more than ' * (len(items) > contract.MAX_ITEMS)}"
                         f"{min(len(items), contract.MAX_ITEMS)} items; a run measures at most "
                         f"{contract.MAX_ITEMS}, with ids of at most 256 characters (workload.items: N picks N of them)")
    arrays_dir = Path(job.arrays_dir)

    if job.mode == "check":
        return check_protocol(workload, contract.subset(items, job.workload.items), arrays_dir, job.result_path,
                              timer, job.stages, items, homes, suite, job.calibrate_s)
    if items != job.items_all:
        raise SystemExit(f"workload.entry: setup() gave {len(items)} items, not the {len(job.items_all)} the "
                         "pre-flight found (the item list must be the same in every run of a campaign)")
    assert job.items is not None  # a run's job plans its items; only the pre-flight's finds them
    items = job.items
    if job.mode == "instructions":
        return count_items(workload, contract.subset(items, job.instructions_items), job.result_path,
                           workload_digest)

    # Measured before the clock, in runs that carry wrappers: what one costs here.
    wrapper_s = stagetimer.wrapper_cost() if any(installed.values()) else None
    wall, results, region = run_items(workload, items, job.slots, timer)

    # Everything below is outside the timer.
    changed = tripwire(bound)
    item_records = []
    for index, (item_id, (outputs, error, item_wall, item_cpu)) in enumerate(zip(items, results)):
        files = write_outputs(item_id, index, outputs_of(workload, item_id, outputs, suite), arrays_dir, suite) \
            if error is None else {}
        item_records.append(WorkerItem.measured(item_id, item_wall, item_cpu, files, error))
    if all(r.error is not None for r in item_records):  # items is never empty (checked above)
        first = item_records[0].error
        assert first is not None  # every item raised
        raise SystemExit(f"every item raised ({len(items)} of {len(items)}); the first: {first['type']}: "
                         f"{first['message'][:200]}")
    metrics = workload.metrics() if hasattr(workload, "metrics") else {}
    if hasattr(workload, "close"):
        workload.close()
    after = machine_snapshot()

    stage_modules = {name: origin(path.partition(":")[0], tree) for name, path in job.stages.items()
                     if installed.get(name)}
    # What this worker measured; the runner makes it a run record (harness.records.RunRecord.of).
    result = WorkerResult(
        wall_s=wall, items=item_records,
        stages={name: StageTotals(**t) for name, t in timer.totals(job.stages).items()},
        stages_installed=installed,
        imported_from=Imports(origin(job.workload.entry.partition(":")[0], tree), stage_modules),
        metrics=metrics or {},
        machine=Machine(cores=os.cpu_count(), process_cpu_s=region.process_cpu_s, cpu_stall_s=region.cpu_stall_s,
                        stage_wrapper_s=wrapper_s, cpu_freq_mhz=before.cpu_freq_mhz, warmup_s=WARMUP_S,
                        loadavg_before=before.loadavg, loadavg_after=after.loadavg),
        harness_source_sha256=harness_source_digest(), workload_sha256=workload_digest,
        python=Interpreter.current(), started_at=started_at, ended_at=now_iso(),
        interference=region.interference, tripwire=(changed + [n for n in tripwire(bound) if n not in changed])[:32])
    atomic_write_json(job.result_path, to_json(result))
    return 0


BOUND_FUNCTIONS = bind_functions()  # at import: before the code under test is
