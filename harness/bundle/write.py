"""The evidence bundle: a BagIt bag (RFC 8493) built in a staging folder and sealed last.

Every file goes through a temporary file and a rename; the manifests are written only
after everything else, the tag manifest last, and the staging folder is renamed into place
only once sealed. An interrupted campaign therefore leaves no bundle at the output path, or
a staging folder that `harness verify` reports as incomplete."""
from __future__ import annotations

import datetime as _dt
import fcntl
import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from dataclasses import dataclass

from harness import __version__
from harness.contract import (BAG_INFO, BAGIT, BAGIT_TXT, CAMPAIGN_JSON, ENVIRONMENT, FORMAT, JSON_KINDS, MANIFEST,
                               TAG_FILES, TAGMANIFEST, file_kind)
from harness.files import WriteFailed, atomic_write_bytes, dumps_json, read_json, sha256_file, write_failed

FORBIDDEN_IN_NAMES = ("\r", "\n", "%", "\\")


class BundleError(Exception):
    pass


class OutputLock:
    """An exclusive lock beside the output path, so two runs cannot write the same bundle."""

    def __init__(self, out: Path):
        self.path = out.parent / f".{out.name}.lock"
        self.fd = -1  # the lock file's, from __enter__

    def __enter__(self):
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise BundleError(f"{self.path.parent}: cannot write the bundle there ({exc.strerror or exc})") from None
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise BundleError(f"{self.path.parent / self.path.name[1:-5]}: another harness run is writing "
                              "this bundle (locked)") from None
        try:
            os.write(self.fd, f"{os.getpid()}\n".encode())
        except OSError as exc:  # a full disk before anything ran: say so now, not after the runs
            self.__exit__()
            raise WriteFailed(self.path, exc, fix="free space and run the command again (nothing ran)") from None
        return self

    def __exit__(self, *exc):
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        fcntl.flock(self.fd, fcntl.LOCK_UN)
        os.close(self.fd)


@dataclass(frozen=True)
class Claim:
    """--out as it was when the campaign began: what a publish may replace. found: the folder's
    (device, inode) when --force let the campaign replace a bundle there, None when nothing was
    there. Anything else at --out by the time the bundle is sealed is not ours to touch."""
    out: Path
    force: bool
    found: tuple | None


def _identity(path: Path) -> tuple | None:
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_dev, st.st_ino)


def claim_output(out: Path, force: bool) -> Claim:
    """Check --out before anything runs (check_output) and remember what was there."""
    check_output(out, force)
    return Claim(out, force, _identity(out))


def check_output(out: Path, force: bool) -> None:
    """Refuse, before anything runs, an --out that is not ours to write: an existing path
    without --force, and with --force anything but an empty folder or a bundle of this
    harness (sealed, failed or a staging leftover). Nothing is touched when refusing."""
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise BundleError(f"{out}: exists and is not a folder; refusing to touch it (choose another --out)")
    if not out.exists():
        return
    if not force:
        raise BundleError(f"{out}: already exists (use --force to replace a bundle there)")
    if any(out.iterdir()) and not is_harness_bundle(out):
        raise BundleError(f"{out}: not an abba-harness bundle; --force replaces only bundles, so this folder "
                          "was left untouched (move it away or choose another --out)")


def is_harness_bundle(folder: Path) -> bool:
    """A folder this harness wrote: a sealed bag whose bag-info names abba-harness, or an
    unsealed staging folder whose campaign.json has this harness's schema."""
    def head(rel: str) -> bytes:
        try:
            with open(folder / rel, "rb") as fh:
                return fh.read(4096)
        except OSError:
            return b""

    if b"Bag-Software-Agent: abba-harness" in head(BAG_INFO):
        return True
    return not (folder / BAG_INFO).exists() and b'"schema": "abba-harness/campaign/' in head(CAMPAIGN_JSON)


def sealed_by(root: Path) -> str:
    """bag-info's Abba-Harness-Commit: the harness environment.json says ran the campaign (its
    commit, or none, and where its source came from), so that a reader of the bag alone knows
    which harness, and so which checker, the bundle is of."""
    try:
        env = read_json(root / ENVIRONMENT)
    except (OSError, ValueError):
        env = {}
    return f"{env.get('harness_commit') or 'none'} ({env.get('harness_origin') or 'unknown'})"


class Staging:
    """A bundle being written; files are named by their bag-relative paths (harness.records)."""

    def __init__(self, out: Path):
        self.out = out
        self.root = out.parent / f"{out.name}.partial-{os.getpid()}"
        self.json_bytes: dict[str, int] = {}  # rel -> the bytes of each JSON document written (json_total)
        if self.root.exists():
            shutil.rmtree(self.root)
        try:
            (self.root / "data").mkdir(parents=True)
        except OSError as exc:
            raise WriteFailed(self.root, exc, fix="free space (or make the folder writable) and run the campaign "
                                                  "again (nothing was timed)") from None

    @classmethod
    def adopt(cls, root: Path, out: Path) -> "Staging":
        """A staging folder a campaign left when a write failed, to be sealed into out
        (`harness seal`)."""
        staging = cls.__new__(cls)
        staging.out, staging.root, staging.json_bytes = out, root, {}
        return staging

    @property
    def arrays_dir(self) -> Path:
        return self.root / "data" / "arrays"

    def write_json(self, rel: str, obj) -> None:
        self.write_bytes(rel, dumps_json(obj).encode())

    def write_bytes(self, rel: str, blob: bytes) -> None:
        atomic_write_bytes(self.root / rel, blob)
        if file_kind(rel) in JSON_KINDS:
            self.json_bytes[rel] = len(blob)

    def json_total(self) -> int:
        """The bytes of the JSON documents this staging has written (those the checkers read at
        most contract.MAX_JSON_BYTES_TOTAL of), each counted once as last written: what a walk of
        the folder would add up, without one after every run (an adopted folder's count only
        what was written since)."""
        return sum(self.json_bytes.values())

    def seal(self, info: Mapping[str, object]) -> str:  # each value written as str(value)
        """Write bagit.txt, bag-info.txt and both manifests; return the bundle digest."""
        payload = payload_files(self.root)
        rows = [(sha256_file(self.root / rel), rel) for rel in payload]
        size = sum((self.root / rel).stat().st_size for rel in payload)
        atomic_write_bytes(self.root / BAGIT, BAGIT_TXT)
        fields = {
            "Bag-Software-Agent": f"abba-harness {__version__}",
            "Bagging-Date": _dt.date.today().isoformat(),
            "Payload-Oxum": f"{size}.{len(payload)}",
            "Abba-Format": FORMAT,
            "Abba-Harness-Commit": sealed_by(self.root),
            **info,
        }
        text = "".join(f"{k}: {' '.join(str(v).split())}\n" for k, v in fields.items())
        atomic_write_bytes(self.root / BAG_INFO, text.encode())
        atomic_write_bytes(self.root / MANIFEST, manifest_text(rows).encode())
        tag_rows = [(sha256_file(self.root / rel), rel) for rel in TAG_FILES]
        atomic_write_bytes(self.root / TAGMANIFEST, manifest_text(tag_rows).encode())
        return sha256_file(self.root / TAGMANIFEST)

    def publish(self, claim: Claim, digest: str) -> tuple[Path, str | None]:
        """Move the sealed bundle to its output path and return (where it went, a note). It
        replaces only what the claim found there at the start (with --force), and only while
        that is still a bundle of this harness; anything else that appeared at --out meanwhile
        is left untouched and the sealed bundle goes beside it under another name, said in the
        note: a sealed bundle is never thrown away, and nothing not ours is ever deleted."""
        try:
            return self._publish(claim, digest)
        except OSError as exc:
            raise write_failed(self.out, exc).with_fix(
                f"the sealed bundle is kept in {self.root}",
                f"free space, then `harness seal {self.root} --out {self.out}`", self.root, True) from None

    def _publish(self, claim: Claim, digest: str) -> tuple[Path, str | None]:
        now = _identity(self.out)
        if now is None:
            os.rename(self.root, self.out)
            return self.out, None
        if claim.force and now == claim.found and is_harness_bundle(self.out):
            old = self.out.parent / f"{self.out.name}.replaced-{os.getpid()}"
            os.rename(self.out, old)
            try:
                os.rename(self.root, self.out)
            except OSError:
                os.rename(old, self.out)  # the bundle it was to replace goes back where it was
                raise
            shutil.rmtree(old, ignore_errors=True)
            return self.out, None
        other = self.out.parent / f"{self.out.name}-{digest[:12]}"
        n = 1
        while os.path.lexists(other):
            n += 1
            other = self.out.parent / f"{self.out.name}-{digest[:12]}-{n}"
        os.rename(self.root, other)
        return other, (f"{self.out} was taken by something else while the campaign ran (left untouched); the "
                       f"sealed bundle is at {other}")

    def discard(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


def payload_files(root: Path) -> list[str]:
    """Every file under data/, as bag-relative POSIX paths sorted by bytes."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root / "data"):
        dirnames.sort()
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), root)
            if any(ch in rel for ch in FORBIDDEN_IN_NAMES):
                raise BundleError(f"{rel!r}: file names in a bundle may not hold CR, LF, '%' or '\\'")
            out.append(rel)
    return sorted(out, key=str.encode)


def manifest_text(rows) -> str:
    return "".join(f"{digest}  {rel}\n" for digest, rel in sorted(rows, key=lambda r: r[1].encode()))
