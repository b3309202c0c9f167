"""The campaign's workload folder as the bundle stores it: what was measured, for a reviewer
to read (data/workload/) and a receipt (data/receipts/workload.json) that both checkers
hold the stored files to.

The runner snapshots the folder before any run and stores exactly the bytes it hashed;
every worker digests the folder again before importing from it, and a run whose digest is
not the receipt's fails the campaign (the folder changed while it ran). Standard library
only (and harness.fsutil): the worker imports it before anything of the workload.
"""
from __future__ import annotations

import hashlib
import os
import stat

import fnmatch

from harness import contract as C
from harness import rules as R
from harness.files import NotReadable, read_regular

MAX_FILES = C.MAX_WORKLOAD_FILES  # a workload folder holds code and small data, not the inputs (pinned)
MAX_BYTES = C.MAX_WORKLOAD_BYTES  # all files together: the snapshot holds them in memory to store what it hashed
MAX_DEPTH = C.MAX_WORKLOAD_DEPTH  # folders below the workload folder
# Left out by rule, and listed in the receipt: byte code (written by imports), version control,
# evidence bundles and the harness's staging folders (a campaign's output is not its workload).
SKIPPED_DIRS = ("__pycache__", ".git")
SKIPPED_DIR_PATTERNS = ("*.partial-*", ".*.run-*", "*.replaced-*")
SKIPPED_SUFFIXES = (".pyc",)
BUNDLE_MARKS = (C.BAGIT, C.TAGMANIFEST)
MAX_LEFT_OUT = 1024
FORBIDDEN = ("\r", "\n", "%", "\\", "\0")  # a bundle's manifests cannot name these


class WorkloadError(ValueError):
    """The folder cannot be stored as it is: one line naming the entry."""


def _read(path: str, budget: int) -> bytes:
    try:
        return read_regular(path, budget)
    except NotReadable as exc:
        raise WorkloadError(f"{path}: {exc} (the workload folder may hold {MAX_BYTES} bytes in all; keep data "
                            "out of it, pin large files as inputs)") from None


def _left_out_dir(path: str, name: str) -> bool:
    """A folder the snapshot leaves out: byte code, version control, a bundle, a staging folder."""
    if name in SKIPPED_DIRS or any(fnmatch.fnmatch(name, pattern) for pattern in SKIPPED_DIR_PATTERNS):
        return True
    return any(os.path.lexists(os.path.join(path, mark)) for mark in BUNDLE_MARKS)


def snapshot(folder: str | os.PathLike, exclude: tuple[str, ...] = (), left_out: list | None = None
             ) -> list[tuple[str, bytes]]:
    """(relative '/'-path, bytes) of every regular file under folder, sorted by path bytes;
    left out (and appended to `left_out`, folders with a trailing /): byte code, .git, folders
    holding an evidence bundle, the harness's staging folders, and the `exclude` relative paths
    (the campaign's own output when it lies inside the folder). A symlink, a special file, an
    unsafe name or a folder over the bounds is WorkloadError: the bundle must hold what ran."""
    root = os.fspath(folder)
    skipped = left_out if left_out is not None else []
    out: list[tuple[str, bytes]] = []
    budget, pending = MAX_BYTES, [("", 0)]
    while pending:
        sub, depth = pending.pop()
        try:
            with os.scandir(os.path.join(root, sub) if sub else root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            raise WorkloadError(f"{os.path.join(root, sub)}: cannot be listed ({exc.strerror or exc})") from None
        for entry in entries:
            rel = f"{sub}/{entry.name}" if sub else entry.name
            if rel in exclude or any(ch in rel for ch in FORBIDDEN):
                if rel in exclude:
                    skipped.append(rel + ("/" if entry.is_dir(follow_symlinks=False) else ""))
                    continue
                raise WorkloadError(f"{entry.path!r}: a file name a bundle cannot hold (CR, LF, '%', '\\')")
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise WorkloadError(f"{entry.path}: a symlink; the bundle stores regular files only (copy the "
                                    "target in, or pin it as an input)")
            if stat.S_ISDIR(st.st_mode):
                if _left_out_dir(entry.path, entry.name):
                    skipped.append(rel + "/")
                    continue
                if depth + 1 > MAX_DEPTH:
                    raise WorkloadError(f"{entry.path}: folders nested deeper than {MAX_DEPTH} levels")
                pending.append((rel, depth + 1))
            elif not stat.S_ISREG(st.st_mode):
                raise WorkloadError(f"{entry.path}: not a regular file")
            elif entry.name.endswith(SKIPPED_SUFFIXES):
                skipped.append(rel)
            else:
                if len(out) == MAX_FILES:
                    raise WorkloadError(f"{root}: more than {MAX_FILES} files in the workload folder")
                data = _read(entry.path, budget)
                budget -= len(data)
                out.append((rel, data))
    skipped.sort(key=str.encode)
    del skipped[MAX_LEFT_OUT:]
    return sorted(out, key=lambda row: row[0].encode())


def rows(files: list[tuple[str, bytes]]) -> list[dict]:
    return [{"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for rel, data in files]


digest = R.listing_digest  # the `sha256sum` listing's digest, as coreutils gives it inside data/workload/


def folder_digest(folder: str | os.PathLike | None, exclude: tuple[str, ...] = ()) -> str | None:
    """The digest of the folder as it is now (None: the campaign has no workload folder)."""
    return None if folder is None else digest(rows(snapshot(folder, exclude)))


def excluded(folder, out) -> tuple[str, ...]:
    """The campaign's output (bundle, staging folder, lock) as paths relative to the workload
    folder, when it lies inside it: written during the campaign, never part of the workload."""
    if folder is None or out is None:
        return ()
    parent, name = os.path.abspath(os.fspath(out.parent)), out.name
    top = os.path.abspath(os.fspath(folder))
    if parent != top and not parent.startswith(top + os.sep):
        return ()
    prefix = os.path.relpath(parent, top).replace(os.sep, "/")
    prefix = "" if prefix == "." else prefix + "/"
    pid = os.getpid()
    return tuple(prefix + n for n in (name, f"{name}.partial-{pid}", f".{name}.lock", f"{name}.replaced-{pid}"))
