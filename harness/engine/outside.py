"""Measuring a worker from outside it: the parent's clock and the kernel's accounting of the child.

The code under test runs inside the worker, so whatever the worker says of itself (its clocks,
its timed-loop function, its figures) is its word. The parent owns the evidence instead:

* The mark channel. The launcher gives each worker one end of a socketpair (ABBA_CHANNEL, its fd).
  Just before its timed loop the worker sends `S` and waits; the parent reads its own monotonic
  clock, the kernel's CPU time of the child (its process CPU clock: every thread, in ns), its
  resident set and high-water mark (which it then resets), and its scheduling (nice, policy,
  affinity of every thread), then answers and the loop begins. Just after the loop the worker
  sends `E START END` (its own perf_counter readings: the same CLOCK_MONOTONIC) and waits; the parent
  reads its clock first, then the same readings, and answers. So the parent's loop wall holds the
  worker's whole loop (plus one wake-up each side), and its CPU and memory readings are taken while
  the worker waits at the marks. Launch, the two marks and the reap split the process's life into
  before-loop, loop and after-loop by the parent's clock alone.
* Scheduling. A worker may not change the scheduling of other processes (harness/worker/sandbox.py
  refuses it); where no sandbox could be had, the launcher reads the runner's and every live
  zygote's nice, policy and affinity before and after each run, and the worker's own at its marks,
  and names any change (the run is then contradicted: contract.CONTRADICTIONS).

Linux only (/proc, the process CPU clock); elsewhere every reading is None and says so.
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass, field
from typing import Optional

CHANNEL_ENV = "ABBA_CHANNEL"  # the worker's end of its mark channel (an fd number), set by the launcher
MAX_LINE = 256  # a mark is one short line; longer is a protocol violation
MAX_THREADS = 512  # threads whose scheduling is read at a mark (a worker with more is named)
POLICIES = {0: "SCHED_OTHER", 1: "SCHED_FIFO", 2: "SCHED_RR", 3: "SCHED_BATCH", 5: "SCHED_IDLE", 6: "SCHED_DEADLINE"}


def cpu_clock(pid: int) -> Optional[float]:
    """The kernel's CPU time of a process (all its threads, live and ended), in seconds, by its
    process CPU clock (clock_getcpuclockid: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED))."""
    try:
        return time.clock_gettime(((~pid) << 3) | 2)
    except (OSError, OverflowError, AttributeError):
        return None


def _read(path: str, limit: int = 1 << 16) -> Optional[str]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, limit).decode("ascii", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def memory(pid: int) -> dict:
    """{VmRSS, VmHWM} of a process in bytes (absent where the kernel shows none)."""
    out = {}
    for line in (_read(f"/proc/{pid}/status") or "").splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("VmHWM", "VmRSS") and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key] = int(parts[0]) * 1024
    return out


def reset_peak(pid: int) -> bool:
    """Reset a process's resident high-water mark to its resident set now ("5" to clear_refs)."""
    try:
        fd = os.open(f"/proc/{pid}/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        os.write(fd, b"5")
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def _task_scheduling(stat: str) -> Optional[tuple]:
    """(nice, policy) from a /proc/PID[/task/TID]/stat line (fields 19 and 41, after the name)."""
    rest = stat.rpartition(")")[2].split()
    try:
        return int(rest[16]), int(rest[38])
    except (IndexError, ValueError):
        return None


def scheduling(pid: int, threads: bool = False) -> Optional[dict]:
    """{nice, policy, affinity} of a process as the kernel has them: each the set of values over its
    threads when `threads`, else its main thread's; None when it is gone."""
    stat = _read(f"/proc/{pid}/stat", 4096)
    if stat is None:
        return None
    tasks = [stat]
    if threads:
        try:
            tids = sorted(os.listdir(f"/proc/{pid}/task"), key=lambda t: (len(t), t))[:MAX_THREADS]
        except OSError:
            tids = []
        tasks = [text for tid in tids for text in [_read(f"/proc/{pid}/task/{tid}/stat", 4096)] if text]
    nice, policy = set(), set()
    for text in tasks:
        found = _task_scheduling(text)
        if found is not None:
            nice.add(found[0])
            policy.add(POLICIES.get(found[1], str(found[1])))
    try:
        affinity = ",".join(map(str, sorted(os.sched_getaffinity(pid))))
    except OSError:
        affinity = None
    return {"nice": sorted(nice), "policy": sorted(policy), "affinity": affinity}


def changes(who: str, before: Optional[dict], after: Optional[dict]) -> list[str]:
    """One line per scheduling value of `who` that moved ("ZA1: nice [0] -> [19]")."""
    if before is None or after is None:
        return []
    return [f"{who}: {key} {before[key]} -> {after[key]}" for key in ("nice", "policy", "affinity")
            if before[key] != after[key]]


@dataclass
class Marks:
    """What the parent saw of one worker, by its own clock (monotonic seconds) and the kernel's
    accounting: when it was launched, released into its timed loop (start) and seen leaving it
    (end), and reaped; the child's CPU time at the marks and over its whole life (rusage at reap,
    its reaped descendants included); its memory around the loop; what the worker said at its end
    mark (its own start and end readings); and what went wrong on the channel or the scheduling."""
    launched: float
    start: Optional[float] = None
    end: Optional[float] = None
    reaped: Optional[float] = None
    cpu_start: Optional[float] = None
    cpu_end: Optional[float] = None
    life_cpu: Optional[float] = None
    worker: Optional[tuple] = None  # (start, end) the worker read around its loop
    rss_start: Optional[int] = None
    hwm_before: Optional[int] = None  # the process's high-water mark before the loop's reset
    hwm_end: Optional[int] = None
    reset: bool = False
    violations: list = field(default_factory=list)  # what the worker sent that the protocol does not allow
    scheduling: list = field(default_factory=list)  # scheduling changes seen during the run

    @property
    def complete(self) -> bool:
        return self.start is not None and self.end is not None and self.worker is not None


class Channel:
    """The parent's end of one worker's mark channel: readable when the worker wrote; `feed` reads
    what is there and answers each mark after taking its readings. Never blocks on the worker."""

    def __init__(self, sock: socket.socket, marks: Marks, pid: int, baseline: Optional[dict] = None,
                 who: str = "worker", together: Optional[Together] = None):
        self.sock, self.marks, self.pid, self.buffer = sock, marks, pid, b""
        self.baseline, self.who = baseline, who  # the scheduling the worker started with (its launcher's)
        self.together = together  # a duet's pair: its marks are answered with its partner's
        self.held: Optional[str] = None  # "S" or "E": a mark waiting for its partner's
        self.ended = False  # the worker is gone (reaped, or its channel closed)
        if together is not None:
            together.channels.append(self)
        self.sock.setblocking(False)

    def fileno(self) -> int:
        return self.sock.fileno()

    def close(self) -> None:
        self.sock.close()

    def feed(self) -> bool:
        """Read and act on what the worker sent; False at end of file (the worker closed it or ended)."""
        try:
            data = self.sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return True
        except OSError:
            return False
        if not data:
            self.gone()
            return False
        now = time.monotonic()  # first: the end mark's time is when it was seen
        if len(self.marks.violations) >= 8:
            return True  # a worker that floods its channel: already named, the rest is dropped unread
        self.buffer += data
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            self._mark(line, now)
            now = time.monotonic()
        if len(self.buffer) > MAX_LINE:
            self._violation(f"a mark of more than {MAX_LINE} bytes")
            self.buffer = b""
        return True

    def gone(self) -> None:
        """The worker ended or closed its channel: a partner waiting on it goes on alone."""
        self.ended = True
        if self.together is not None:
            self.together.poke()

    def drain(self) -> None:
        """What the worker wrote before it ended, read now (its exit may wake the launcher first)."""
        while True:
            try:
                data = self.sock.recv(4096, socket.MSG_PEEK)
            except (BlockingIOError, InterruptedError, OSError):
                return
            if not data or not self.feed():
                return

    def _violation(self, what: str) -> None:
        if len(self.marks.violations) < 8:
            self.marks.violations.append(what[:200])

    def _answer(self) -> None:
        try:
            self.sock.send(b"1")
        except OSError:
            pass  # it is gone: its exit says the rest

    def _own(self) -> None:
        """The worker's own scheduling against what its launcher started it with."""
        if self.baseline is None:
            return
        now = scheduling(self.pid, threads=True)
        if now is None:
            return
        for key in ("nice", "policy"):
            if set(now[key]) - set(self.baseline[key]):
                self.marks.scheduling.append(f"{self.who}: {key} {self.baseline[key]} -> {now[key]}"[:200])
        if now["affinity"] != self.baseline["affinity"]:
            self.marks.scheduling.append(f"{self.who}: affinity {self.baseline['affinity']} -> {now['affinity']}"[:200])

    def _mark(self, line: bytes, seen: float) -> None:
        m = self.marks
        parts = line.split()
        if parts == [b"S"] and m.start is None and self.held is None:
            if self.together is None:
                self._ready()
                self._go()
            else:
                self.held = "S"
                self.together.poke()
        elif len(parts) == 3 and parts[0] == b"E" and m.start is not None and m.end is None:
            m.end = seen
            m.cpu_end = cpu_clock(self.pid)
            m.hwm_end = memory(self.pid).get("VmHWM")
            self._own()
            try:
                m.worker = (float(parts[1]), float(parts[2]))
            except ValueError:
                self._violation("an end mark whose readings are not numbers")
            if self.together is None:
                self._answer()
            else:
                self.held = "E"
                self.together.poke()
        else:
            self._violation(f"an unexpected mark {line[:40]!r}")

    def _ready(self) -> None:
        """The readings at the start mark, taken while the worker waits there."""
        m = self.marks
        m.cpu_start = cpu_clock(self.pid)
        mem = memory(self.pid)
        m.rss_start, m.hwm_before = mem.get("VmRSS"), mem.get("VmHWM")
        m.reset = reset_peak(self.pid)
        self._own()

    def _go(self) -> None:
        self.held = None
        self.marks.start = time.monotonic()  # released now: the loop begins after this
        self._answer()


class Together:
    """A duet's two channels (`launch: duet`, engine/duet_launcher.py). A start mark is held until
    every worker of the pair still there waits at its own; then each one's readings are taken and
    both are answered in one pass, so the loops begin together (the answers microseconds apart).
    An end mark is held likewise until both loops ended (its time is when it came), so neither
    worker's writing of its outputs runs beside the other's loop. A partner that is gone (ended, or
    its channel closed) releases the one waiting."""

    def __init__(self):
        self.channels: list = []

    def poke(self) -> None:
        there = [c for c in self.channels if not c.ended]
        for mark in ("S", "E"):
            waiting = [c for c in there if c.held == mark]
            if waiting and len(waiting) == len(there):
                if mark == "S":
                    for c in waiting:
                        c._ready()
                    for c in waiting:
                        c._go()
                else:
                    for c in waiting:
                        c.held = None
                        c._answer()
