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

from harness.files import NotReadable, read_regular

MAX_FILES = 1000  # a workload folder holds code and small data, not the inputs (those are pinned)
MAX_BYTES = 16 << 20  # all files together: the snapshot holds them in memory to store what it hashed
MAX_DEPTH = 5  # folders below the workload folder (data/workload/ is two levels of a bundle's eight)
SKIPPED_DIRS = ("__pycache__",)  # byte code: written by imports, not part of what was measured
SKIPPED_SUFFIXES = (".pyc",)
FORBIDDEN = ("\r", "\n", "%", "\\", "\0")  # a bundle's manifests cannot name these


class WorkloadError(ValueError):
    """The folder cannot be stored as it is: one line naming the entry."""


def _read(path: str, budget: int) -> bytes:
    try:
        return read_regular(path, budget)
    except NotReadable as exc:
        raise WorkloadError(f"{path}: {exc} (the workload folder may hold {MAX_BYTES} bytes in all; keep data "
                            "out of it, pin large files as inputs)") from None


def snapshot(folder: str | os.PathLike, exclude: tuple[str, ...] = ()) -> list[tuple[str, bytes]]:
    """(relative '/'-path, bytes) of every regular file under folder, sorted by path bytes;
    __pycache__ folders, *.pyc files and the `exclude` relative paths (the campaign's own
    output when it lies inside the folder) left out. A symlink, a special file, an unsafe
    name or a folder over the bounds is WorkloadError: the bundle must hold what ran."""
    root = os.fspath(folder)
    out, budget, pending = [], MAX_BYTES, [("", 0)]
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
                    continue
                raise WorkloadError(f"{entry.path!r}: a file name a bundle cannot hold (CR, LF, '%', '\\')")
            st = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(st.st_mode):
                raise WorkloadError(f"{entry.path}: a symlink; the bundle stores regular files only (copy the "
                                    "target in, or pin it as an input)")
            if stat.S_ISDIR(st.st_mode):
                if entry.name in SKIPPED_DIRS:
                    continue
                if depth + 1 > MAX_DEPTH:
                    raise WorkloadError(f"{entry.path}: folders nested deeper than {MAX_DEPTH} levels")
                pending.append((rel, depth + 1))
            elif not stat.S_ISREG(st.st_mode):
                raise WorkloadError(f"{entry.path}: not a regular file")
            elif not entry.name.endswith(SKIPPED_SUFFIXES):
                if len(out) == MAX_FILES:
                    raise WorkloadError(f"{root}: more than {MAX_FILES} files in the workload folder")
                data = _read(entry.path, budget)
                budget -= len(data)
                out.append((rel, data))
    return sorted(out, key=lambda row: row[0].encode())


def rows(files: list[tuple[str, bytes]]) -> list[dict]:
    return [{"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest()} for rel, data in files]


def digest(listed: list[dict]) -> str:
    """SHA-256 of the `sha256sum` listing of the files, as coreutils gives it inside
    data/workload/: (find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum"""
    return hashlib.sha256("".join(f"{r['sha256']}  {r['path']}\n" for r in listed).encode()).hexdigest()


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
