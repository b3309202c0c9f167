"""On the caller: a bundle that came back from a node lands under --out only once it
verifies here.

The tar stream is unpacked into a staging folder inside --out (`.NAME.partial-PID`, so
the rename into place is atomic and a crash leaves only a folder both checkers call
incomplete), verified with the harness's own `verify --repo` against the caller's clone
(every file and array re-hashed, the records' rules, comparison.json re-derived, the
campaign file byte for byte the clone's, each revision's tree digest recomputed from its
commit), then held to what the fleet knows: the node it says it ran on is the node Ray
ran the job on, and the harness that ran is this checkout's (its source digest). Only
then is it renamed to its final folder; anything else removes the staging folder.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness.fleet import jobs

# A test hook: flip one byte of this bundle file (path inside the bundle) after it
# arrives and before it is verified, as a corrupted or tampered transfer would.
TAMPER_ENV = "ABBA_FLEET_TAMPER_IN_TRANSIT"


@dataclass
class Landing:
    ok: bool
    cause: str | None = None  # why it did not land (one line)
    path: Path | None = None
    digest: str | None = None
    unpack_s: float = 0.0
    verify_s: float = 0.0


def _flip(bundle: Path, rel: str) -> None:
    path = bundle / rel
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))


def land(data: bytes, out: Path, final: Path, repo: Path, node_id: str, harness_digest: str) -> Landing:
    """Unpack, verify and rename one returned bundle to `final` (inside `out`)."""
    import time

    from harness import contract as C
    from harness.bundle.read import limit_of, read_json
    from harness.judge.verify import verify

    staging = out / f".{'.'.join(final.relative_to(out).parts)}.partial-{os.getpid()}"
    landing = Landing(ok=False)
    try:
        t0 = time.monotonic()
        try:
            bundle = jobs.unpack(data, staging)
        except jobs.UnsafeArchive as exc:
            landing.cause = f"does not verify: the returned archive is unsafe ({exc})"
            return landing
        landing.unpack_s = time.monotonic() - t0
        tamper = os.environ.get(TAMPER_ENV)
        if tamper and (bundle / tamper).is_file():
            _flip(bundle, tamper)
        t1 = time.monotonic()
        report = verify(bundle, repo=repo)
        landing.verify_s = time.monotonic() - t1
        if report.unusable:
            landing.cause = f"does not verify: {report.unusable}"
            return landing
        if report.problems:
            more = f" (and {len(report.problems) - 1} more)" if len(report.problems) > 1 else ""
            landing.cause = f"does not verify: {report.problems[0]}{more}"
            return landing
        env = read_json(bundle / C.ENVIRONMENT, limit=limit_of(C.ENVIRONMENT))
        where = env.get("fleet") if isinstance(env, dict) else None
        if not isinstance(where, dict) or where.get("node_id") != node_id:
            said = where.get("node_id") if isinstance(where, dict) else None
            landing.cause = f"does not verify: the bundle says it ran on node {said}, Ray ran the job on {node_id}"
            return landing
        if env.get("harness_source_sha256") != harness_digest:
            landing.cause = (f"does not verify: the node ran another harness (source digest "
                             f"{str(env.get('harness_source_sha256'))[:12]}, this checkout {harness_digest[:12]}): "
                             "install this revision of the harness on the node")
            return landing
        final.parent.mkdir(parents=True, exist_ok=True)
        if os.path.lexists(final):
            landing.cause = f"{final} exists; nothing written"
            return landing
        os.rename(bundle, final)
        landing.ok, landing.path, landing.digest = True, final, report.digest
        return landing
    finally:
        shutil.rmtree(staging, ignore_errors=True)
