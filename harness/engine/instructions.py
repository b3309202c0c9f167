"""Instruction counts under valgrind: the deterministic second metric (issue 19).

An instruction run is a fresh worker started under `setarch -R valgrind --tool=callgrind`
with collection off at start and toggled on only inside `sys.call_tracing`, the C function
the worker calls the item loop through (harness/worker/main.py `measured`): imports, setup,
parity work and the interpreter's start and exit are not counted. `sys.call_tracing` is a
debugger's hook that workloads do not call; if one did, its call would toggle collection off
inside the region.
Callgrind's default is no cache simulation, so the one event is Ir (instructions executed).

The environment that makes counts repeat run to run is fixed here and recorded in every
instruction record: PYTHONHASHSEED=0 (the runner sets it for every worker), address-space
randomisation off (`setarch -R`), one thread for the BLAS/OpenMP pools. This module is the
runner's side (the probe, the command, the count); the worker's is that one call.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness.contract import INSTRUCTION_ENV as ENV, REGION_FLAGS  # noqa: F401 (the contract's: the checkers hold
# every recorded command line and environment to them)
INSTALL = "sudo apt-get install valgrind"
PROBE_TIMEOUT_S = 120.0


class InstructionsError(Exception):
    """One line: what is wrong with an instruction run or its tools, and the fix."""


@dataclass(frozen=True)
class Valgrind:
    """The valgrind a campaign's instruction runs use: where it is and what it says of its version
    (the instruction records keep that line)."""
    path: str
    version: str


def valgrind() -> str | None:
    return shutil.which("valgrind")


def version(path: str) -> str:
    result = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    text = result.stdout.strip()
    if result.returncode or not text.startswith("valgrind-"):
        raise InstructionsError(f"{path} --version gave {text[:60]!r}, not valgrind-X.Y.Z: reinstall it ({INSTALL})")
    return text


def command(path: str, out_file: Path) -> list[str]:
    """The prefix an instruction run's python command is started under."""
    return ["setarch", "-R", path, "-q", *REGION_FLAGS, "--dump-instr=no", f"--callgrind-out-file={out_file}"]


def read_count(out_file: Path) -> int:
    """Ir inside the measured region, from callgrind's `totals:` line."""
    try:
        lines = out_file.read_text(errors="replace").splitlines()
    except OSError as exc:
        raise InstructionsError(f"callgrind wrote no output file {out_file.name} ({exc.strerror or exc})") from None
    totals = [line.split()[1:] for line in lines if line.startswith("totals:")]
    if len(totals) != 1 or len(totals[0]) != 1 or not totals[0][0].isdigit():
        raise InstructionsError(f"{out_file.name}: no single `totals: N` line (not a callgrind output with Ir only)")
    count = int(totals[0][0])
    if count == 0:
        raise InstructionsError(
            f"callgrind counted 0 instructions: it never saw sys_call_tracing run, so this Python ({sys.executable}) "
            "has no symbol for it (a stripped binary): use a Python built with symbols (pyenv, or install its "
            "debug symbols, e.g. python3-dbg)")
    return count


def problems(python: str) -> list[str]:
    """What stops instruction runs on this machine, one line each with the fix; [] when a
    probe under valgrind counted the toggled region."""
    path = valgrind()
    if path is None:
        return [f"metrics: instructions needs valgrind, which is not on PATH: install it with `{INSTALL}`"]
    if shutil.which("setarch") is None:
        return ["metrics: instructions needs setarch (util-linux) to turn address randomisation off: install "
                "it with `sudo apt-get install util-linux`"]
    with tempfile.TemporaryDirectory(prefix="abba-valgrind-") as tmp:
        out = Path(tmp) / "callgrind.out"
        argv = command(path, out) + [python, "-S", "-c", "import sys; sys.call_tracing(sum, ([1, 2],))"]
        try:
            result = subprocess.run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return [f"metrics: instructions: a probe under valgrind took over {PROBE_TIMEOUT_S:g} s"]
        if result.returncode:
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            return [f"metrics: instructions: a probe under valgrind exited {result.returncode}: {last[:200]}"]
        try:
            read_count(out)
        except InstructionsError as exc:
            return [f"metrics: instructions: {exc}"]
    return []
