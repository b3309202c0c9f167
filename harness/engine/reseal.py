"""Sealing what a campaign kept when a write failed (`harness seal STAGING --out OUT`).

A full disk while the bundle is sealed (its comparison, its manifests) or published stops the
runner after every run has ended: the runs' records, logs and arrays and the runner's receipts
are in the staging folder, which the runner then keeps (harness/engine/runner.py) instead of
deleting it. Sealing it later is sound because nothing is left to measure: comparison.json is
re-derived here from the kept records by the one derivation the checkers use
(harness/comparison/derive.py), then the bag is sealed as the runner would have sealed it.

It refuses, one line each, a folder that is not a staging folder of this harness, one a run is
still writing (its output lock is held), and one whose campaign stopped before its runs ended
(no runner receipt: a run is missing, and a bundle would claim runs it does not have), or whose
records cannot be read in full. `harness seal` verifies the sealed folder before it publishes it.
"""
from __future__ import annotations

import fcntl
import os
import re
from dataclasses import dataclass
from pathlib import Path

from harness import contract as C, records
from harness.bundle import read, write as bundle
from harness.bundle.model import Comparison
from harness.comparison import derive as comparison

PARTIAL = re.compile(r"^(?P<name>.+)\.partial-(?P<pid>\d+)\Z")


class Unsealable(Exception):
    """The folder cannot be sealed soundly: one line naming why and what to do instead."""


@dataclass
class Sealed:
    staging: bundle.Staging
    digest: str
    comparison: Comparison
    runs: int


def still_written(root: Path) -> bool:
    """Whether the campaign that made root (NAME.partial-PID) still holds NAME's output lock."""
    m = PARTIAL.match(root.name)
    if not m:
        return False
    lock = root.parent / f".{m['name']}.lock"
    try:
        fd = os.open(lock, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False  # no lock: no run holds it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def check_idle(root: Path) -> None:
    """Unsealable when the campaign that made root still runs (before taking --out's lock,
    which may be the same one)."""
    if still_written(root):
        raise Unsealable(f"{root}: a harness run is still writing it (its output lock is held); wait for it to end")


def seal_kept(root: Path, out: Path) -> Sealed:
    """Re-derive comparison.json from the records kept in root and seal root in place as a
    bundle to be published at out (Unsealable, one line, when that would not be sound)."""
    if root.is_symlink() or not root.is_dir():
        raise Unsealable(f"{root}: not a folder")
    if not bundle.is_harness_bundle(root):
        raise Unsealable(f"{root}: not a staging folder of this harness (no campaign.json of abba-harness)")
    if out.absolute() == root.absolute() or root.absolute() in out.absolute().parents:
        raise Unsealable(f"--out {out}: must lie outside the staging folder {root}")
    for rel in (C.RUNNER, C.CLEANUP):
        if not (root / rel).is_file():
            raise Unsealable(f"{root}: no {rel}: the campaign stopped before its runs ended, so a bundle of these "
                             "runs would claim runs it does not have; run the campaign again")
    try:
        kept = read.load(root, unsealed=True)
        floor = read.read_json(root / C.NOISE_FLOOR, required=False, limit=read.limit_of(C.NOISE_FLOOR))
    except bundle.BundleError as exc:
        raise Unsealable(f"{exc}: the kept records are not complete; run the campaign again") from None
    if len(kept.runs) != kept.runner.runs_started:
        raise Unsealable(f"{root}: {len(kept.runs)} run record(s) for runner.json's {kept.runner.runs_started}"
                         "; run the campaign again")
    try:
        pinned = records.NoiseFloor.from_json(floor) if floor is not None else None
        result = comparison.derive(kept.campaign, kept.runs, kept.runner, kept.cleanup, kept.golden, kept.arrays,
                                   pinned, kept.instructions, kept.workload.digest,
                                   kept.environment.get("sandbox"))
    except (OSError, ValueError, KeyError, TypeError, EOFError) as exc:
        raise Unsealable(f"{root}: comparison.json cannot be re-derived from the kept records "
                         f"({exc.__class__.__name__}: {str(exc)[:200]}); run the campaign again") from None
    staging = bundle.Staging.adopt(root, out)
    staging.write_json(C.COMPARISON, records.to_json(result))
    digest = staging.seal({"External-Identifier": kept.campaign.name, "Abba-Status": result.status,
                           "Abba-Base-SHA": kept.campaign.sha("base"),
                           "Abba-Candidate-SHA": kept.campaign.sha("candidate")})
    return Sealed(staging, digest, result, len(kept.runs))
