"""Owning processes: every process a campaign launches (and every descendant seen) goes
into a ledger; at the end each is verified absent. A pid that now belongs to a process
with another create time counts as absent (the pid was reused)."""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field

import psutil

from harness import records
from harness.worker.prctl import become_subreaper  # noqa: F401 (the runner's side of the process controls)


def reap_orphans() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


@dataclass
class Owned:
    pid: int
    create_time: float
    cmdline: list[str]
    run: str
    role: str  # "worker" | "descendant" | "preflight" | "zygote"
    parent: int | None = None  # a forked worker's zygote; None: the runner started it


@dataclass
class Ledger:
    processes: list[Owned] = field(default_factory=list)
    _keys: set = field(default_factory=set)

    def add(self, proc: psutil.Process, run: str, role: str, cmdline: list[str] | None = None,
            parent: int | None = None) -> None:
        try:
            with proc.oneshot():
                key = (proc.pid, proc.create_time())
                if key in self._keys:
                    return
                if cmdline is None:
                    try:
                        cmdline = proc.cmdline()
                    except (psutil.AccessDenied, psutil.ZombieProcess):
                        cmdline = []
        except psutil.NoSuchProcess:
            return
        self._keys.add(key)
        self.processes.append(Owned(proc.pid, key[1], cmdline, run, role, parent))

    def watch_descendants(self, root_pid: int, run: str) -> None:
        """Record every process below root_pid, and below us: orphans re-parented to us
        (we are a subreaper) belong to the run that is going."""
        me = os.getpid()
        found = []
        for pid in {root_pid, me}:
            try:
                found += psutil.Process(pid).children(recursive=True)
            except psutil.NoSuchProcess:
                pass
        for child in found:
            if child.pid != root_pid:
                self.add(child, run, "descendant")

    def alive(self, run: str | None = None) -> list[Owned]:
        return [p for p in self.processes if (run is None or p.run == run) and _alive(p)]

    def kill_all(self, run: str | None = None) -> None:
        for owned in self.alive(run):
            try:
                os.kill(owned.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def receipt(self, settle_s: float = 2.0) -> records.CleanupReceipt:
        deadline = time.monotonic() + settle_s
        while True:
            reap_orphans()
            survivors = self.alive()
            if not survivors or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        rows = []
        for p in self.processes:
            state = _state(p)
            rows.append(records.Reaped(pid=p.pid, create_time=p.create_time, cmdline=p.cmdline, run=p.run,
                                       role=p.role, parent=p.parent, absent=state != "alive", verified=state,
                                       checked_at=time.time()))
        return records.cleanup_receipt(
            method="psutil: pid absent, or pid reused by a process with another create time", processes=rows)


def _state(owned: Owned) -> str:
    try:
        proc = psutil.Process(owned.pid)
        if abs(proc.create_time() - owned.create_time) > 0.01:
            return "pid reused"
        return "alive"  # a zombie still holds its identity until reaped: not yet absent
    except psutil.NoSuchProcess:
        return "gone"


def _alive(owned: Owned) -> bool:
    return _state(owned) == "alive"
