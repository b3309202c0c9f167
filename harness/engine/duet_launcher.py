"""`launch: duet`: a LocalLauncher that runs each round's two workers at once (duet benchmarking,
Bulej et al., ICPE 2020), each a fresh process pinned to a core of its own.

The two are started back to back, each pinned before it execs (sched_setaffinity between fork and
exec: the interpreter's own start-up already runs on its core), and each is given its own mark
channel; the channels are joined (outside.Together), so that the first worker to reach its start
mark waits there until the other has reached its own, and the runner then takes both workers'
readings and answers both marks in one pass: the two timed loops begin together. The end marks are
held the same way, so the first loop to end does not write its outputs beside the other's loop.
Whatever else the machine does meanwhile (another tenant, a noisy neighbour, the host) falls on
both loops of the round, and the round's ratio cancels it; what the two loops do to each other
(shared caches and memory bandwidth) is the price: the summary says how much of each round the
two loops ran at once (rules.overlap), and each run's steal on its own core is in its record.

Everything else is a fresh run's: its sandbox, its ledger rows, its timeout (each its own), its
leftovers killed and recorded. The pre-flight and any lone run go through LocalLauncher.run. Each
run's record says its core (records.Launched.core, rules.duet_core binds it), and the runner
reads each worker's own scheduling at its marks against that core: a worker that moves itself off
it is contradicted (`scheduling`).
"""
from __future__ import annotations

import dataclasses

from harness import contract as C
from harness.engine import outside
from harness.engine.launch import Exit, Launch, LocalLauncher, watched
from harness.records import Launched


class DuetError(ValueError):
    """This machine cannot run the campaign's duets (one line: the cause and the fix)."""


def cores_for(wanted: tuple, allowed: set) -> tuple[int, int]:
    """The two cores a duet pins its runs to: the campaign's (each one the workers may run on),
    else the first two of those."""
    if wanted:
        missing = [c for c in wanted if c not in allowed]
        if missing:
            raise DuetError(f"launch.cores: CPU {missing[0]} is not one the workers may run on here "
                            f"({_listed(sorted(allowed))}); name two of those")
        return wanted[0], wanted[1]
    if len(allowed) < C.DUET_CORES:
        raise DuetError(f"launch: duet needs two cores, one for each run of a round; the workers may run on "
                        f"{len(allowed)} here ({_listed(sorted(allowed))}): use `launch: fresh`")
    first, second = sorted(allowed)[:2]
    return first, second


def crowded(allowed: set) -> str | None:
    """A warning when the duet's two cores are all the workers may run on: the runner, its
    watchers and the rest of the machine then share the cores the two timed loops are pinned to,
    so whatever they do falls on one run of a round and not the other (on a 2-core VM the A-vs-A
    spread per round was several times a fresh campaign's: docs/campaign.md "Duet")."""
    if len(allowed) > C.DUET_CORES:
        return None
    return (f"launch: duet: the workers may run on {len(allowed)} CPUs here ({_listed(sorted(allowed))}), both "
            "pinned to the duet's runs, so the runner and everything else the machine does share their cores and "
            "fall on one run of a round, not both: measured on a 2-core VM, its rounds moved several times as much "
            "as fresh processes' (docs/campaign.md \"Duet\"); give it a machine with a core to spare, or use "
            "`launch: fresh`")


def _listed(cpus: list) -> str:
    return "CPU " + ",".join(map(str, cpus[:16])) + (", ..." if len(cpus) > 16 else "")


class DuetLauncher(LocalLauncher):
    def run_pair(self, first: Launch, second: Launch) -> tuple[Exit, Exit]:
        """Both workers of a round at once, each pinned to its launch's core (the runner gives the
        first of the round cores[0], the second cores[1]: rules.duet_core), their marks answered
        together; their Exits in that order."""
        before = watched(self, None)
        together = outside.Together()
        lives: list = []
        try:
            for launch in (first, second):
                lives.append(self._start(launch, before, together))
            self._wait(lives)
        except BaseException:  # the second failed to start, or the wait was broken: neither outlives it
            for live in lives:
                if not live.done:
                    self._kill_run(live.proc.pid, live.launch.label)
            raise
        exits = []
        for live in lives:
            made = self._finish(live, before)
            exits.append(dataclasses.replace(made, launch=Launched(C.DUET, None, None, live.launch.core)))
        return exits[0], exits[1]
