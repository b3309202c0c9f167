"""Hashing and atomic file writes shared by every step that reads or writes evidence."""
from __future__ import annotations

import errno
import fnmatch
import hashlib
import json
import os
import tempfile
from pathlib import Path

CHUNK = 1 << 20
_UMASK = os.umask(0)
os.umask(_UMASK)


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


class NotReadable(OSError):
    """read_regular refused the file (not a regular file, or over its limit)."""


def read_regular(path: str | os.PathLike, limit: int) -> bytes:
    """A regular file's bytes, at most limit: no symlink followed, never blocking on a FIFO,
    never a device, refused from its size before anything is read (NotReadable)."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotReadable("not a regular file")
        if st.st_size > limit:
            raise NotReadable(f"larger than {limit} bytes")
        data = fh.read(limit + 1)  # bounded by the size checked above
    if len(data) > limit:
        raise NotReadable(f"larger than {limit} bytes")
    return data


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def tree_listing(root: str | os.PathLike, ignore: tuple[str, ...] = ()) -> list[tuple[str, str]]:
    """(sha256, relative path) of every regular file under root, sorted by path bytes,
    leaving out files and folders whose name matches an `ignore` glob.

    Symlinks and other special files are refused: a digest must stand for bytes on disk.
    """
    root = Path(root)
    rows = []

    def kept(name: str) -> bool:
        return not any(fnmatch.fnmatch(name, pattern) for pattern in ignore)

    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if kept(d))
        for name in [f for f in filenames if kept(f)] + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full) or not os.path.isfile(full):
                raise ValueError(f"{full}: not a regular file (symlinks are not hashed)")
            rows.append((sha256_file(full), rel))
    rows.sort(key=lambda row: row[1].encode())
    return rows


def tree_digest(root: str | os.PathLike, ignore: tuple[str, ...] = ()) -> str:
    """SHA-256 of the `sha256sum` listing of a folder, reproducible with coreutils:
    (cd DIR && find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum
    """
    listing = "".join(f"{digest}  {rel}\n" for digest, rel in tree_listing(root, ignore))
    return sha256_bytes(listing.encode())


def path_digest(path: str | os.PathLike) -> tuple[str, str]:
    """('file' | 'dir', digest) of an input path."""
    if os.path.isdir(path) and not os.path.islink(path):
        return "dir", tree_digest(path)
    return "file", sha256_file(path)


class WriteFailed(OSError):
    """A write that failed (a full disk, a quota, a read-only or vanished folder), said as one
    line: what could not be written and the OSError, what was kept, and how to go on. Raised in
    place of the OSError (it is one: `except OSError` still catches it); every command turns it
    into that line and outcomes.WRITE_FAILED, never a traceback (harness/cli.py)."""

    def __init__(self, path, cause: OSError, kept: str | None = None, fix: str | None = None,
                 folder: Path | None = None, sealable: bool = False, write: bool = True):
        super().__init__(cause.errno, cause.strerror or str(cause), None if path is None else str(path))
        self.path, self.cause, self.kept, self.fix = path, cause, kept, fix
        self.folder, self.sealable = folder, sealable  # the staging folder kept; whether `harness seal` can seal it
        self.write = write  # False: another OSError (EIO, EMFILE, ...) that stopped the campaign, said as what it is

    def why(self) -> str:
        code = errno.errorcode.get(self.cause.errno) if self.cause.errno else None
        what = self.cause.strerror or str(self.cause) or self.cause.__class__.__name__
        doing = "cannot write" if self.write else "an OS error (not a write) at"
        return f"{doing} {self.path}: {what}" + (f" ({code})" if code else "")

    def with_fix(self, kept: str | None, fix: str | None, folder: Path | None = None,
                 sealable: bool = False) -> "WriteFailed":
        """The same failure, saying what was kept (in folder) and how to go on."""
        return WriteFailed(self.path, self.cause, kept, fix, folder, sealable, self.write)

    def line(self) -> str:
        default = "free space (or make the folder writable) and run the command again" if self.write else \
            "mend what the error names, then run the command again"
        return "; ".join([self.why(), *([self.kept] if self.kept else []), self.fix or default])

    def __str__(self) -> str:
        return self.line()


# The errnos of a write that found no room or no permission to change the disk.
WRITE_ERRNOS = tuple(getattr(errno, name) for name in ("ENOSPC", "EDQUOT", "EROFS", "EFBIG") if hasattr(errno, name))


def write_failed(path, exc: OSError) -> WriteFailed:
    """exc as a WriteFailed naming path (an exc that already is one stays as it is). An OSError
    that is no write's (an EIO reading a record, too many open files) keeps the same handling,
    its runs kept, but its line says what it is rather than "cannot write"."""
    if isinstance(exc, WriteFailed):
        return exc
    return WriteFailed(getattr(exc, "filename", None) or path, exc, write=exc.errno in WRITE_ERRNOS)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over path: path
    holds its old bytes or the new ones, never part of them. A failure to write is WriteFailed
    naming path; the temporary file is removed."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise WriteFailed(path, exc) from exc
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)  # mkstemp's 0600 would hide evidence from reviewers
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and not isinstance(exc, WriteFailed):
            raise WriteFailed(path, exc) from exc
        raise


def dumps_json(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False, allow_nan=False) + "\n"


def atomic_write_json(path: str | os.PathLike, obj) -> None:
    atomic_write_bytes(path, dumps_json(obj).encode())


def read_json(path: str | os.PathLike):
    with open(path, "rb") as fh:
        return json.loads(fh.read().decode())


def harness_source_digest() -> str:
    """SHA-256 over the harness's own .py files (path and content), so a bundle says which
    harness code ran, and a harness edited in the middle of a campaign is caught."""
    root = Path(__file__).resolve().parent  # the harness package
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(f"{sha256_file(path)}  {path.relative_to(root).as_posix()}\n".encode())
    return h.hexdigest()
