"""Reading a bundle: the one loader that report, reproduce, compare and golden go through.

It parses; it does not judge. A caller that needs a bundle it can trust verifies it first
(`harness verify`'s rules): the loader only refuses what it cannot read, one line naming the
file (BundleError). Files are read as the checkers read them: no symlink followed, no FIFO
or device opened, each JSON strict and bounded (harness/rehash.py's parser)."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from harness import records, rehash
from harness.bundle.write import BundleError
from harness.files import NotReadable, read_regular


def read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most limit; a missing one is FileNotFoundError."""
    try:
        return read_regular(path, limit)
    except NotReadable as exc:
        raise BundleError(f"{path}: {exc}") from None


def read_json(path: Path, required: bool = True) -> Any:
    """The parsed file; None when it is absent and not required."""
    try:
        return rehash.parse_json(read_bytes(path, rehash.MAX_JSON_BYTES))
    except FileNotFoundError:
        if required:
            raise BundleError(f"{path}: missing") from None
        return None
    except OSError as exc:
        raise BundleError(f"{path}: unreadable ({exc.strerror or exc})") from None
    except rehash.JSONRefused as exc:
        raise BundleError(f"{path}: invalid JSON ({exc})") from None


def digest(bundle: os.PathLike | str) -> str | None:
    """SHA-256 of BUNDLE/tagmanifest-sha256.txt, or None when the bundle is not sealed."""
    try:
        return hashlib.sha256(read_bytes(Path(bundle) / records.TAGMANIFEST, rehash.MAX_TEXT_BYTES)).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BundleError(f"{Path(bundle) / records.TAGMANIFEST}: unreadable ({exc.strerror or exc})") from None


def _object(path: Path, value, required: bool = True) -> dict | None:
    if value is None and not required:
        return None
    if not isinstance(value, dict):
        raise BundleError(f"{path}: expected a JSON object")
    return value


def load(bundle_dir: os.PathLike | str) -> dict:
    """The bundle's records: comparison, the run records in execution order (as
    comparison.json lists them), campaign, runner, cleanup, environment, inputs, workload and
    reproduction receipts (None or {} where a bundle has none), its digest and figure path."""
    bundle = Path(bundle_dir)
    if not bundle.is_dir():
        raise BundleError(f"{bundle}: not a directory")

    def doc(rel: str, required: bool = False) -> dict | None:
        return _object(bundle / rel, read_json(bundle / rel, required), required)

    comparison = doc(records.COMPARISON, required=True)
    runs = []
    for row in comparison.get("runs") or []:  # the records, in execution order
        label = row.get("label") if isinstance(row, dict) else None
        if not isinstance(label, str) or not records.LABEL_RE.match(label):
            raise BundleError(f"{bundle / records.COMPARISON}: run label {label!r} is not a run label")
        runs.append(doc(records.run_path(label), required=True))
    return {
        "path": bundle,
        "comparison": comparison,
        "runs": runs,
        "campaign": doc(records.CAMPAIGN_JSON) or {},
        "runner": doc(records.RUNNER) or {},
        "environment": doc(records.ENVIRONMENT) or {},
        "inputs": doc(records.INPUTS) or {},
        "cleanup": doc(records.CLEANUP),
        "workload": doc(records.WORKLOAD),
        "reproduction": doc(records.REPRODUCTION),  # only in a bundle `harness reproduce` made
        "digest": digest(bundle),
        "figure": bundle / records.FIGURE,
    }
