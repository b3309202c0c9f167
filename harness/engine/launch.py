"""Launching workers: the one seam between the campaign loop and the machine.

The runner (harness/engine/runner.py) decides what runs when; a Launcher starts one worker
for a run, waits for it under its timeout, kills what it left behind, and keeps the ledger of
every process it launched for the cleanup receipt. It also answers what the runner asks of the
machine the workers run on: the clock, the environment record and an interpreter's identity.

* LocalLauncher: real processes (subprocess, psutil), each in its own process group, as every
  campaign runs.
* FakeLauncher: no process at all. A Python function plays the worker (it gets the job and
  returns what the worker would write), a fake clock advances by the wall it says the run took.
  Order, rounds, `rounds: auto`, timeouts, interruption and a whole campaign's statistics are
  tested with it in milliseconds (tests/unit/test_engine.py); the tests of real processes
  (cleanup, signals, kill) use LocalLauncher.
"""
from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from harness.records import Job, Launched, Process

POLL_S = 0.05  # how soon a worker's exit is noticed
WATCH_S = 0.5  # how often its descendants are listed (~0.4 ms of parent CPU each time)


@dataclass(frozen=True)
class Launch:
    """One worker to start: its command (valgrind's prefix included), environment, folder,
    where its output goes, the run it is (ledger), its role and its timeout."""
    argv: list
    env: dict
    cwd: Path
    log: Path
    label: str
    role: str  # "worker" | "preflight"
    timeout_s: float


@dataclass(frozen=True)
class Exit:
    """What happened to one worker: its pid, exit code (negative: the signal), whether the
    timeout killed it, what it left running (killed now), and what the runner saw of it."""
    pid: int
    exit_code: Optional[int]
    timed_out: bool
    leftovers: list
    process: Process
    launch: Optional[Launched] = None  # how it was made (None: fresh, by this launcher)


def maxrss_bytes(usage) -> Optional[int]:
    """A reaped child's ru_maxrss in bytes (Linux counts KiB); None where it reads 0 (not kept)."""
    return usage.ru_maxrss * 1024 if usage.ru_maxrss > 0 else None


def reap(proc: subprocess.Popen, block: bool) -> tuple[bool, Optional[int]]:
    """Reap the worker with wait4, for the rusage Popen.wait drops: (reaped, its maxrss in bytes).
    Its exit code goes where Popen keeps it (a negative signal number, as Popen gives)."""
    if proc.returncode is not None:
        return True, None
    try:
        pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped elsewhere (never here: the runner is its only waiter)
        proc.returncode = proc.returncode if proc.returncode is not None else -1
        return True, None
    if pid == 0:
        return False, None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return True, maxrss_bytes(usage)


class Clock:
    """Wall time for records, monotonic time for deadlines."""

    @staticmethod
    def time() -> float:
        return time.time()

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()


class LocalLauncher:
    def __init__(self, tick: Callable[[], None] = lambda: None):
        from harness.engine import cleanup

        self.clock = Clock()
        self.ledger = cleanup.Ledger()
        self.tick = tick
        self.current: Optional[subprocess.Popen] = None
        self.current_label: Optional[str] = None
        cleanup.become_subreaper()

    def environment(self, worker_env: dict, interpreters: dict) -> dict:
        from harness.engine import environment

        return environment.capture(worker_env, interpreters)

    def interpreter(self, python: Optional[str], cwd: Path) -> dict:
        from harness.engine import environment

        return environment.interpreter(python, cwd)

    def run(self, launch: Launch) -> Exit:
        """Start the worker, wait for it (killing it at its timeout), then kill and record
        anything of its run still alive: a worker that leaves processes behind fails."""
        import psutil

        from harness.engine import cleanup

        started_at, t0 = time.time(), time.monotonic()
        with open(launch.log, "wb") as log:
            proc = subprocess.Popen(launch.argv, cwd=launch.cwd, env=launch.env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.current, self.current_label = proc, launch.label
            try:
                self.ledger.add(psutil.Process(proc.pid), launch.label, launch.role, launch.argv)
            except psutil.NoSuchProcess:
                pass
            timed_out, next_watch, maxrss = False, 0.0, None
            while True:
                reaped, maxrss = reap(proc, block=False)
                if reaped:
                    break
                if time.monotonic() >= next_watch:
                    self.ledger.watch_descendants(proc.pid, launch.label)
                    next_watch = time.monotonic() + WATCH_S
                self.tick()
                if time.monotonic() - t0 > launch.timeout_s:
                    timed_out = True
                    self._kill_run(proc.pid, launch.label)
                    _, maxrss = reap(proc, block=True)
                    break
                time.sleep(POLL_S)
            self.current = None
        cleanup.reap_orphans()
        self.ledger.watch_descendants(os.getpid(), launch.label)
        leftovers = [f"pid {p.pid} ({' '.join(p.cmdline)[:60]})" for p in self.ledger.alive(launch.label)
                     if p.pid != proc.pid]
        self._kill_run(proc.pid, launch.label)
        self.ledger.kill_all(launch.label)
        # One wall-clock reading anchors the process; its length is the monotonic clock's. Reading
        # both clocks again at the end would put whatever preempts the runner between the two reads
        # (tens of ms on a loaded machine) into the record as a process that does not add up.
        wall_s = time.monotonic() - t0
        return Exit(proc.pid, proc.returncode, timed_out, leftovers,
                    Process(started_at=started_at, ended_at=started_at + wall_s, wall_s=wall_s, maxrss_bytes=maxrss))

    def _kill_run(self, pgid: int, label: str) -> None:
        """Record every process of the run first, so the receipt lists what the kill ends."""
        self.ledger.watch_descendants(pgid, label)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def interrupt(self) -> None:
        """From a signal handler: end the worker now running (its run then fails)."""
        if self.current is not None:
            self._kill_run(self.current.pid, self.current_label or "")  # both are set together

    def kill_all(self) -> None:
        self.ledger.kill_all()

    def receipt(self) -> dict:
        return self.ledger.receipt()


# --- the fake: no process, a fake clock ----------------------------------------------------------
class FakeClock:
    """Starts half a day ago (so a long fake campaign still ends before the checkers' now) and
    moves only when told. rate: how much faster the wall clock runs than the monotonic one
    (0.005: a system clock slewed at 500 ppm)."""

    def __init__(self, start: float | None = None, rate: float = 0.0):
        self.start = time.time() - 43200.0 if start is None else start
        self.elapsed, self.rate = 0.0, rate

    def time(self) -> float:
        return self.start + self.elapsed * (1 + self.rate)

    def monotonic(self) -> float:
        return self.start + self.elapsed

    def advance(self, seconds: float) -> None:
        self.elapsed += seconds


@dataclass
class FakeRun:
    """What a fake worker did: the JSON it wrote to its result file (None: nothing), how long
    its process lived, its exit code, its output, whether it hung (the timeout kills it), and
    processes it left behind."""
    result: Optional[dict] = None
    wall_s: float = 1.0
    exit_code: int = 0
    output: bytes = b""
    hang: bool = False
    leftovers: list = field(default_factory=list)
    maxrss_bytes: Optional[int] = None  # what wait4 would give of the reaped process


class FakeLauncher:
    """Workers played by `worker(job) -> FakeRun` (job: records.Job), in this process, on a FakeClock.
    `on_launch(n, launch)` may act before the n-th launch (0-based), e.g. interrupt the runner."""

    def __init__(self, worker: Callable[[Job], FakeRun], environment: Optional[dict] = None,
                 on_launch: Optional[Callable[[int, Launch], None]] = None, clock: Optional[FakeClock] = None):
        self.clock = clock or FakeClock()
        self.worker = worker
        self.on_launch = on_launch
        self.launches: list = []
        self.processes: list = []
        self.env = environment
        self.next_pid = 1000

    def environment(self, worker_env: dict, interpreters: dict) -> dict:
        from harness.engine import environment

        base = {"cpu_model": "Fake CPU", "vector_isa": {"summary": "avx2", "flags": ["avx2"]}, "blas": None,
                "torch_threads": None, "torch_runtime": {"version": None, "reason": "fake launcher"}, "cores": 2,
                "physical_cores": 2, "memory_gib": 8.0, "loadavg": [0.0, 0.0, 0.0], "kernel": "fake",
                "os": "fake", "python": "3.11.0", "python_implementation": "CPython", "packages": {},
                **environment.harness_identity(), "worker_env": dict(worker_env),
                "interpreters": interpreters, "fleet": None}
        return {**base, **(self.env or {})}

    def interpreter(self, python: Optional[str], cwd: Path) -> dict:
        """This interpreter (the fake worker runs in it)."""
        from harness.records import Interpreter

        me = Interpreter.current()
        return {"executable": me.executable, "version": me.version, "implementation": me.implementation,
                "packages": {"numpy": __import__("numpy").__version__}}

    def run(self, launch: Launch) -> Exit:
        n = len(self.launches)
        self.launches.append(launch)
        if self.on_launch is not None:
            self.on_launch(n, launch)
        job = Job.read(launch.cwd / "job.json")
        outcome = self.worker(job)
        pid = self.next_pid
        self.next_pid += 1
        started = self.clock.time()
        wall = launch.timeout_s + 0.01 if outcome.hang else outcome.wall_s
        timed_out = outcome.hang or outcome.wall_s > launch.timeout_s
        self.clock.advance(wall)
        launch.log.write_bytes(outcome.output)
        if outcome.result is not None and not timed_out:
            from harness.files import atomic_write_json

            atomic_write_json(job.result_path, outcome.result)
        self.processes.append({"pid": pid, "create_time": started, "cmdline": list(launch.argv),
                               "run": launch.label, "role": launch.role})
        return Exit(pid, -9 if timed_out else outcome.exit_code, timed_out, list(outcome.leftovers),
                    Process(started_at=started, ended_at=self.clock.time(), wall_s=wall,
                            maxrss_bytes=outcome.maxrss_bytes))

    def interrupt(self) -> None:
        pass

    def kill_all(self) -> None:
        pass

    def receipt(self) -> dict:
        from harness import records

        checked = self.clock.time()
        return records.cleanup_receipt(method="fake launcher: no process was started", processes=[
            {**p, "parent": None, "absent": True, "verified": "gone", "checked_at": checked} for p in self.processes])
