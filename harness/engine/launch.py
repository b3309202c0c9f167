"""Launching workers: the one seam between the campaign loop and the machine.

The runner (harness/engine/runner.py) decides what runs when; a Launcher (the `Launcher` protocol
below) starts one worker for a run, confines it (its Launch's sandbox), measures it from outside
(the mark channel, engine/outside.py), waits for it under its timeout, kills what it left behind,
and keeps the ledger of every process it launched for the cleanup receipt. It also answers what
the runner asks of the machine the workers run on: the clock, the environment record and an
interpreter's identity. What it hands back for each run is an Exit: the process's identity and
life, the parent's own marks, and how the run was made (records.Launched).

* LocalLauncher: real processes, each in its own process group and, by default, its own sandbox
  (the harness's interpreter runs harness/worker/sandbox.py, which confines itself and execs the
  worker), each given one end of a mark channel.
* ZygoteLauncher (engine/zygote_launcher.py): timed and stage runs forked from a per-variant zygote.
* FakeLauncher: no process at all. A Python function plays the worker (it gets the job and
  returns what the worker would write), a fake clock advances by the wall it says the run took,
  and the marks are what the fake run says the parent saw. Order, rounds, `rounds: auto`,
  timeouts, interruption and a whole campaign's statistics are tested with it in milliseconds
  (tests/unit/test_engine.py); the tests of real processes (cleanup, signals, kill) use
  LocalLauncher.

A new launcher (a container, a remote host) is one file: a class with these methods, which starts
what Launch.argv names (wrapped by Launch.sandbox where it confines), gives the worker its
channel (outside.CHANNEL_ENV) and returns its Exit; `runner._launcher` picks it.
"""
from __future__ import annotations

import dataclasses
import os
import selectors
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Protocol

from harness.engine import outside
from harness.engine.outside import Marks
from harness.engine.sandbox import Confinement, Probe
from harness.records import CleanupReceipt, Job, Launched, ProbedInterpreter, Process, to_json

POLL_S = 0.05  # how soon a zygote's reply is looked for when nothing else wakes the launcher
TICK_S = 0.25  # how often the progress line is redrawn while a worker runs (its marks and exit wake us at once)
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
    sandbox: Optional[Confinement] = None  # how the worker is confined (None: not at all)
    core: Optional[int] = None  # `launch: duet`: the core the worker is pinned to before it execs


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
    marks: Optional[Marks] = None  # what the parent saw of it from outside (None: no channel)


class Launcher(Protocol):
    """What the runner needs of a launcher (LocalLauncher, ZygoteLauncher, FakeLauncher)."""
    clock: "Clock | FakeClock"

    def environment(self, worker_env: dict, interpreters: dict[str, ProbedInterpreter]) -> dict: ...

    def interpreter(self, python: Optional[str], cwd: Path) -> ProbedInterpreter: ...

    def stage_code(self, scratch: Path) -> Path:
        """The folder, made in the campaign's scratch folder, that the workers import the harness
        from (the runner puts it on their PYTHONPATH, and lets their sandbox read it)."""
        ...

    def sandbox_probe(self, code: Path) -> Probe:
        """What sandbox this machine gives the workers (engine/sandbox.py)."""
        ...

    def cpus(self) -> set:
        """The CPUs a worker may be pinned to (`launch: duet`): this process's own."""
        ...

    def run(self, launch: Launch) -> Exit: ...

    def run_pair(self, first: Launch, second: Launch) -> tuple[Exit, Exit]:
        """`launch: duet`: a round's two workers at once, each on a core of its own, their loops
        started together (engine/duet_launcher.py); other launchers refuse."""
        ...

    def prepare(self, variant: str, launch: Launch, protected: frozenset = frozenset()) -> Optional[str]:
        """Before any timed run (the pre-flight): anything of this variant's launches that can be
        refused now (a zygote's preload importing one of the `protected` packages: the code under
        test), as one line; None when nothing is wrong."""
        ...

    def interrupt(self) -> None: ...

    def kill_all(self) -> None: ...

    def receipt(self) -> CleanupReceipt: ...


def maxrss_bytes(usage) -> Optional[int]:
    """A reaped child's ru_maxrss in bytes (Linux counts KiB); None where it reads 0 (not kept)."""
    return usage.ru_maxrss * 1024 if usage.ru_maxrss > 0 else None


def reap(proc: subprocess.Popen, block: bool) -> tuple[bool, Optional[int], Optional[float]]:
    """Reap the worker with wait4, for the rusage Popen.wait drops: (reaped, its maxrss in bytes,
    its CPU time: user + system, its reaped descendants' included). Its exit code goes where Popen
    keeps it (a negative signal number, as Popen gives)."""
    if proc.returncode is not None:
        return True, None, None
    try:
        pid, status, usage = os.wait4(proc.pid, 0 if block else os.WNOHANG)
    except ChildProcessError:  # reaped elsewhere (never here: the runner is its only waiter)
        proc.returncode = proc.returncode if proc.returncode is not None else -1
        return True, None, None
    if pid == 0:
        return False, None, None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return True, maxrss_bytes(usage), usage.ru_utime + usage.ru_stime


def channel_pair() -> tuple[socket.socket, socket.socket]:
    """(the parent's end, the worker's end) of a mark channel; the worker's is inheritable."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.set_inheritable(True)
    return ours, theirs


def pidfd(pid: int) -> Optional[int]:
    """A descriptor that becomes readable when the process ends (Linux 5.3+), or None."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def watched(launcher, channel: Optional["outside.Channel"]) -> dict:
    """The scheduling of the processes a worker could reach but must not change: the runner and
    every live zygote (ZygoteLauncher.others), read before a run and compared after it."""
    seen = {"runner": outside.scheduling(os.getpid())}
    for name, pid in getattr(launcher, "others", lambda: {})().items():
        seen[name] = outside.scheduling(pid)
    return seen


def scheduling_moved(before: dict, after: dict) -> list[str]:
    return [line for name in before for line in outside.changes(name, before[name], after.get(name))]


class Clock:
    """Wall time for records, monotonic time for deadlines."""

    @staticmethod
    def time() -> float:
        return time.time()

    @staticmethod
    def monotonic() -> float:
        return time.monotonic()


@dataclass
class Live:
    """One worker LocalLauncher started and waits for: its launch, process, marks and channel, its
    pidfd, when it started (wall clock, monotonic), and what its end gave."""
    launch: Launch
    proc: subprocess.Popen
    marks: Marks
    channel: "outside.Channel"
    exited: Optional[int]  # its pidfd (None: the kernel has none; polled)
    started_at: float
    t0: float
    timed_out: bool = False
    done: bool = False
    listening: bool = True  # its channel is in the wait's selector
    maxrss: Optional[int] = None


def pinned(core: int) -> Callable[[], None]:
    """What the child runs between fork and exec: pin itself to `core` (a duet's run)."""
    def pin() -> None:
        os.sched_setaffinity(0, (core,))
    return pin


class LocalLauncher:
    def __init__(self, tick: Callable[[], None] = lambda: None):
        from harness.engine import cleanup

        self.clock = Clock()
        self.ledger = cleanup.Ledger()
        self.tick = tick
        self.current: Optional[subprocess.Popen] = None  # a process the launcher is starting (a zygote)
        self.current_label: Optional[str] = None
        self.running: dict = {}  # label -> the Popen of each worker now running
        cleanup.become_subreaper()

    def environment(self, worker_env: dict, interpreters: dict[str, ProbedInterpreter]) -> dict:
        from harness.engine import environment

        return environment.capture(worker_env, interpreters)

    def interpreter(self, python: Optional[str], cwd: Path) -> ProbedInterpreter:
        from harness.engine import environment

        return environment.interpreter(python, cwd)

    def prepare(self, variant: str, launch: Launch, protected: frozenset = frozenset()) -> Optional[str]:
        return None

    def stage_code(self, scratch: Path) -> Path:
        """A copy of the harness package (its .py files: the digest the workers record), so that
        an edit of the harness during the campaign never reaches its runs."""
        dest = scratch / "harness-code"
        shutil.copytree(Path(__file__).resolve().parents[1], dest / "harness",
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        return dest

    def sandbox_probe(self, code: Path) -> Probe:
        from harness.engine import sandbox

        return sandbox.probe(str(code), os.environ.get(sandbox.DISABLE_ENV, ""))

    def cpus(self) -> set:
        try:
            return set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            return set(range(os.cpu_count() or 1))

    def run(self, launch: Launch) -> Exit:
        """Start the worker (in its sandbox, given its channel), wait for it (killing it at its
        timeout), then kill and record anything of its run still alive: a worker that leaves
        processes behind fails. Its marks are read as they come, the parent's clock first."""
        before = watched(self, None)
        live = self._start(launch, before)
        self._wait([live])
        return self._finish(live, before)

    def run_pair(self, first: Launch, second: Launch) -> tuple[Exit, Exit]:
        """A duet's round, both at once: only DuetLauncher (engine/duet_launcher.py) runs one."""
        raise NotImplementedError("fresh and zygote launches run one worker at a time (launch: duet runs two)")

    def _start(self, launch: Launch, before: dict, together: Optional[outside.Together] = None) -> Live:
        """One worker started, given its channel (and, in a duet, pinned to its launch's core before
        it execs, its marks held by `together`), in the ledger."""
        import psutil

        ours, theirs = channel_pair()
        env = {**launch.env, outside.CHANNEL_ENV: str(theirs.fileno())}
        argv = launch.sandbox.argv(launch.argv) if launch.sandbox is not None else launch.argv
        started_at, t0 = time.time(), time.monotonic()
        marks = Marks(launched=t0)
        with open(launch.log, "wb") as log:
            try:
                proc = subprocess.Popen(argv, cwd=launch.cwd, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                        stderr=subprocess.STDOUT, start_new_session=True, pass_fds=(theirs.fileno(),),
                                        preexec_fn=None if launch.core is None else pinned(launch.core))
            finally:
                theirs.close()
        self.running[launch.label] = proc
        try:
            self.ledger.add(psutil.Process(proc.pid), launch.label, launch.role, launch.argv)
        except psutil.NoSuchProcess:
            pass
        baseline = before["runner"]
        if launch.core is not None and baseline is not None:  # its launcher's scheduling, on its own core
            baseline = {**baseline, "affinity": str(launch.core)}
        channel = outside.Channel(ours, marks, proc.pid, baseline, together=together)
        return Live(launch, proc, marks, channel, pidfd(proc.pid), started_at, t0)

    def _wait(self, lives: list) -> None:
        """Until every worker ended or met its timeout: woken by their marks and their exits (pidfd),
        not by a poll; each one's timeout, maxrss and CPU at reap go into its Live."""
        selector = selectors.DefaultSelector()
        for live in lives:
            selector.register(live.channel, selectors.EVENT_READ, (live, "marks"))
            if live.exited is not None:
                selector.register(live.exited, selectors.EVENT_READ, (live, "exit"))
        next_watch = 0.0
        try:
            while True:
                for live in lives:
                    if not live.done:
                        reaped, maxrss, cpu = reap(live.proc, block=False)
                        if reaped:
                            self._ended(live, selector, maxrss, cpu)
                now = time.monotonic()
                pending = [live for live in lives if not live.done]
                if pending and now >= next_watch:
                    for live in pending:
                        self.ledger.watch_descendants(live.proc.pid, live.launch.label)
                    next_watch = now + WATCH_S
                self.tick()
                for live in pending:
                    if now - live.t0 > live.launch.timeout_s:
                        self._kill_run(live.proc.pid, live.launch.label)
                        _, maxrss, cpu = reap(live.proc, block=True)
                        live.timed_out = True
                        self._ended(live, selector, maxrss, cpu)
                pending = [live for live in pending if not live.done]
                if not pending:
                    return
                wait = min(TICK_S, next_watch - now,
                           min(live.t0 + live.launch.timeout_s for live in pending) - now + 0.001)
                if any(live.exited is None for live in pending):
                    wait = min(wait, POLL_S)
                for key, _ in selector.select(max(0.0, wait)):
                    live, what = key.data
                    if what == "marks" and not live.done and not live.channel.feed():
                        selector.unregister(live.channel)
                        live.listening = False
        finally:
            selector.close()

    def _ended(self, live: Live, selector, maxrss: Optional[int], cpu: Optional[float]) -> None:
        """A worker reaped: its marks read to the end, its partner's held marks released."""
        live.done, live.maxrss = True, maxrss
        live.marks.reaped, live.marks.life_cpu = time.monotonic(), cpu
        live.channel.drain()
        live.channel.gone()
        if live.listening:
            selector.unregister(live.channel)
            live.listening = False
        if live.exited is not None:
            selector.unregister(live.exited)
            os.close(live.exited)
            live.exited = None

    def _finish(self, live: Live, before: dict) -> Exit:
        """After the wait: whatever of its run is still alive recorded and killed, its Exit."""
        from harness.engine import cleanup

        live.channel.close()
        self.running.pop(live.launch.label, None)
        label, proc, marks = live.launch.label, live.proc, live.marks
        cleanup.reap_orphans()
        self.ledger.watch_descendants(os.getpid(), label)
        leftovers = [f"pid {p.pid} ({' '.join(p.cmdline)[:60]})" for p in self.ledger.alive(label) if p.pid != proc.pid]
        self._kill_run(proc.pid, label)
        self.ledger.kill_all(label)
        marks.scheduling += scheduling_moved(before, watched(self, None))
        # One wall-clock reading anchors the process; its length is the monotonic clock's. Reading
        # both clocks again at the end would put whatever preempts the runner between the two reads
        # (tens of ms on a loaded machine) into the record as a process that does not add up.
        wall_s = time.monotonic() - live.t0
        return Exit(proc.pid, proc.returncode, live.timed_out, leftovers,
                    Process(started_at=live.started_at, ended_at=live.started_at + wall_s, wall_s=wall_s,
                            maxrss_bytes=live.maxrss), marks=marks)

    def _kill_run(self, pgid: int, label: str) -> None:
        """Record every process of the run first, so the receipt lists what the kill ends."""
        self.ledger.watch_descendants(pgid, label)
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def interrupt(self) -> None:
        """From a signal handler: end the workers now running (their runs then fail)."""
        if self.current is not None:
            self._kill_run(self.current.pid, self.current_label or "")  # both are set together
        for label, proc in list(self.running.items()):
            self._kill_run(proc.pid, label)

    def kill_all(self) -> None:
        self.ledger.kill_all()

    def receipt(self) -> CleanupReceipt:
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
    # What the parent would have seen from outside (engine/outside.py): the process's life before
    # and after its timed loop, the loop as the parent timed it (None: the worker's wall plus a
    # wake-up), the kernel's CPU over it and outside it, its memory, and anything marks() changes.
    before_s: float = 0.3
    after_s: float = 0.1
    loop_s: Optional[float] = None
    loop_cpu_s: Optional[float] = None  # None: 0.95 of the loop
    before_cpu_s: Optional[float] = None  # None: 0.9 of before_s
    after_cpu_s: Optional[float] = None  # None: 0.9 of after_s
    memory: Optional[dict] = None  # {rss_start, hwm_before, hwm_end}: the parent's readings
    scheduling: list = field(default_factory=list)
    violations: list = field(default_factory=list)
    unmarked: bool = False  # the worker never marked its loop
    marked_s: Optional[float] = None  # the loop as the worker's own end mark says (None: its result's wall)

    def marks(self, launched: float, worker_wall: Optional[float]) -> Marks:
        """The marks of this fake run, launched at `launched` on the fake clock."""
        loop = self.loop_s if self.loop_s is not None else (worker_wall or 0.0) + 2e-4
        start = launched + self.before_s
        cpu_start = self.before_cpu_s if self.before_cpu_s is not None else 0.9 * self.before_s
        loop_cpu = self.loop_cpu_s if self.loop_cpu_s is not None else 0.95 * loop
        after_cpu = self.after_cpu_s if self.after_cpu_s is not None else 0.9 * self.after_s
        mem = self.memory or {}
        marks = Marks(launched=launched, reaped=start + loop + self.after_s,
                      life_cpu=cpu_start + loop_cpu + after_cpu, rss_start=mem.get("rss_start"),
                      hwm_before=mem.get("hwm_before"), hwm_end=mem.get("hwm_end"), reset=bool(mem),
                      violations=list(self.violations), scheduling=list(self.scheduling))
        if worker_wall is not None and not self.unmarked:
            marks.start, marks.end, marks.cpu_start, marks.cpu_end = start, start + loop, cpu_start, cpu_start + loop_cpu
            marks.worker = (start + 1e-4, start + 1e-4 + (self.marked_s if self.marked_s is not None else worker_wall))
        return marks

    @property
    def life_s(self) -> float:
        return self.before_s + self.after_s


_FAKE_IDENTITY: dict = {}


def _fake_identity() -> dict:
    """The harness that seals a fake campaign is this process's own: its identity (three git
    commands and a hash of its source, a tenth of a fake campaign's time) is worked out once."""
    if not _FAKE_IDENTITY:
        from harness.engine import environment

        _FAKE_IDENTITY.update(environment.harness_identity())
    return _FAKE_IDENTITY


class FakeLauncher:
    """Workers played by `worker(job) -> FakeRun` (job: records.Job), in this process, on a FakeClock.
    `on_launch(n, launch)` may act before the n-th launch (0-based), e.g. interrupt the runner."""

    def __init__(self, worker: Callable[[Job], FakeRun], environment: Optional[dict] = None,
                 on_launch: Optional[Callable[[int, Launch], None]] = None, clock: Optional[FakeClock] = None,
                 sandbox: Optional[Probe] = None):
        self.clock = clock or FakeClock()
        self.cores = int((environment or {}).get("cores") or 2)  # the fake machine's CPUs (cpus)
        self.sandbox = sandbox or Probe(7, True, ())  # what the fake machine "gives": recorded, never applied
        self.worker = worker
        self.on_launch = on_launch
        self.launches: list = []
        self.processes: list = []
        self.env = environment
        self.next_pid = 1000

    def environment(self, worker_env: dict, interpreters: dict[str, ProbedInterpreter]) -> dict:
        base = {"cpu_model": "Fake CPU", "vector_isa": {"summary": "avx2", "flags": ["avx2"]}, "blas": None,
                "torch_threads": None, "torch_runtime": {"version": None, "reason": "fake launcher"}, "cores": 2,
                "physical_cores": 2, "memory_gib": 8.0, "loadavg": [0.0, 0.0, 0.0], "kernel": "fake",
                "os": "fake", "python": "3.11.0", "python_implementation": "CPython", "packages": {},
                **_fake_identity(), "worker_env": dict(worker_env),
                "interpreters": to_json(interpreters), "fleet": None}
        return {**base, **(self.env or {})}

    def interpreter(self, python: Optional[str], cwd: Path) -> ProbedInterpreter:
        """This interpreter (the fake worker runs in it)."""
        from harness.records import Interpreter

        me = Interpreter.current()
        return ProbedInterpreter(me.executable, me.version, me.implementation,
                                 {"numpy": __import__("numpy").__version__})

    def run(self, launch: Launch) -> Exit:
        job, outcome = self._played(launch)
        started, launched = self.clock.time(), self.clock.monotonic()
        marks = outcome.marks(launched, self._worker_wall(job, outcome))
        wall = self._life(launch, outcome, marks, launched)
        self.clock.advance(wall)
        return self._exit(launch, job, outcome, marks, started, wall)

    def run_pair(self, first: Launch, second: Launch) -> tuple[Exit, Exit]:
        """A duet's round on the fake clock: both launched at once, both loops started when the later
        of the two reaches its start mark, and each end mark answered when both loops ended (the
        runner answers both marks together): the run whose loop ended first lives on by its wait."""
        played = [self._played(launch) for launch in (first, second)]
        started, launched = self.clock.time(), self.clock.monotonic()
        together = max(outcome.before_s for _, outcome in played)
        marks = [dataclasses.replace(outcome, before_s=together).marks(launched, self._worker_wall(job, outcome))
                 for job, outcome in played]
        ends = [m.end for m in marks if m.end is not None]
        for m in marks:
            if m.end is not None and m.reaped is not None:
                m.reaped += max(ends) - m.end
        walls = [self._life(launch, outcome, m, launched) for launch, (_, outcome), m in zip((first, second), played, marks)]
        exits = []
        for launch, (job, outcome), m, wall in zip((first, second), played, marks, walls):
            made = self._exit(launch, job, outcome, m, started, wall, started + wall)
            exits.append(dataclasses.replace(made, launch=Launched("duet", None, None, launch.core)))
        self.clock.advance(max(walls))
        return exits[0], exits[1]

    def _played(self, launch: Launch) -> tuple[Job, "FakeRun"]:
        n = len(self.launches)
        self.launches.append(launch)
        if self.on_launch is not None:
            self.on_launch(n, launch)
        job = Job.read(launch.cwd / "job.json")
        return job, self.worker(job)

    @staticmethod
    def _worker_wall(job: Job, outcome: "FakeRun") -> Optional[float]:
        wall = outcome.result.get("wall_s") if isinstance(outcome.result, dict) and job.mode == "run" else None
        return wall if isinstance(wall, (int, float)) else None

    @staticmethod
    def _life(launch: Launch, outcome: "FakeRun", marks: Marks, launched: float) -> float:
        return launch.timeout_s + 0.01 if outcome.hang else max(outcome.wall_s, (marks.reaped or launched) - launched)

    def _exit(self, launch: Launch, job: Job, outcome: "FakeRun", marks: Marks, started: float, wall: float,
              ended: Optional[float] = None) -> Exit:
        """The Exit of a fake run that lived `wall` from `started` (ended: its end by the wall clock,
        when the clock has not yet moved past it)."""
        pid = self.next_pid
        self.next_pid += 1
        timed_out = outcome.hang or wall > launch.timeout_s
        launch.log.write_bytes(outcome.output)
        if outcome.result is not None and not timed_out:
            from harness.files import atomic_write_json

            atomic_write_json(job.result_path, outcome.result)
        self.processes.append({"pid": pid, "create_time": started, "cmdline": list(launch.argv),
                               "run": launch.label, "role": launch.role})
        return Exit(pid, -9 if timed_out else outcome.exit_code, timed_out, list(outcome.leftovers),
                    Process(started_at=started, ended_at=self.clock.time() if ended is None else ended, wall_s=wall,
                            maxrss_bytes=outcome.maxrss_bytes), marks=None if timed_out else marks)

    def prepare(self, variant: str, launch: Launch, protected: frozenset = frozenset()) -> Optional[str]:
        return None

    def stage_code(self, scratch: Path) -> Path:
        """The folder the runs' PYTHONPATH and sandbox name, left empty: the fake worker plays in
        this process, so no worker imports the harness (copying it for none took a sixth of a fake
        campaign's time)."""
        dest = scratch / "harness-code"
        dest.mkdir()
        return dest

    def sandbox_probe(self, code: Path) -> Probe:
        return self.sandbox

    def cpus(self) -> set:
        return set(range(self.cores))

    def interrupt(self) -> None:
        pass

    def kill_all(self) -> None:
        pass

    def receipt(self) -> CleanupReceipt:
        from harness import records

        checked = self.clock.time()
        return records.cleanup_receipt(method="fake launcher: no process was started", processes=[
            records.Reaped(**p, parent=None, absent=True, verified="gone", checked_at=checked) for p in self.processes])
