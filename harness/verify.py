"""`harness verify`: re-check a sealed bundle without trusting anything in it.

Layout (every payload file listed, none missing or extra, no symlinks or special files,
no absolute or '..' paths), every file re-hashed, every stored array re-hashed from its
bytes, every digest a record names present, and comparison.json re-derived from the
per-run records. Symlinks are never followed and nothing is unpickled."""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from harness import comparison, tensors
from harness.bundle import BAGIT_TXT, TAG_FILES
from harness.fsutil import sha256_file

HEX = set("0123456789abcdef")


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    unusable: str | None = None
    digest: str | None = None
    status: str | None = None
    files: int = 0
    arrays: int = 0

    def add(self, msg: str) -> None:
        self.problems.append(msg)

    @property
    def exit_code(self) -> int:
        return 2 if self.unusable else (1 if self.problems else 0)


def parse_manifest(text: str, name: str, report: Report) -> dict[str, str]:
    rows = {}
    for n, line in enumerate(text.split("\n")[:-1] if text.endswith("\n") else text.split("\n"), 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or not set(digest) <= HEX:
            report.add(f"{name}: line {n}: not '<sha256>  <path>'")
            continue
        problem = unsafe_path(rel)
        if problem:
            report.add(f"{name}: line {n}: unsafe path {rel!r} ({problem})")
            continue
        if rel in rows:
            report.add(f"{name}: line {n}: {rel} listed twice")
        rows[rel] = digest
    if text and not text.endswith("\n"):
        report.add(f"{name}: last line has no newline")
    return rows


def unsafe_path(rel: str) -> str | None:
    if not rel:
        return "empty"
    if rel.startswith("/") or PurePosixPath(rel).is_absolute():
        return "absolute"
    if any(part in ("..", ".", "") for part in rel.split("/")):
        return "'..', '.' or empty component"
    if any(ch in rel for ch in "\r\n\\%\0"):
        return "forbidden character"
    return None


def walk(root: Path, report: Report) -> set[str]:
    """Every regular file in the bundle; symlinks and special files are problems."""
    files = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                report.add(f"{rel}: is a symlink (-> {os.readlink(full)}); bundles hold regular files only")
            elif stat.S_ISREG(mode):
                files.add(rel)
            elif not stat.S_ISDIR(mode):
                report.add(f"{rel}: not a regular file")
    return files


def verify(root: str | os.PathLike) -> Report:
    root = Path(root)
    report = Report()
    if not root.is_dir() or root.is_symlink():
        report.unusable = f"{root}: not a directory"
        return report
    present = walk(root, report)
    if "tagmanifest-sha256.txt" not in present:
        if "data/comparison.json" in present or any(p.startswith("data/") for p in present):
            report.add("incomplete: tagmanifest-sha256.txt missing, the bundle was never sealed")
        else:
            report.unusable = f"{root}: not an evidence bundle (no tagmanifest-sha256.txt, no data/)"
        return report
    report.digest = sha256_file(root / "tagmanifest-sha256.txt")

    tag_rows = parse_manifest(_text(root / "tagmanifest-sha256.txt", report), "tagmanifest-sha256.txt", report)
    for rel in TAG_FILES:
        if rel not in tag_rows:
            report.add(f"tagmanifest-sha256.txt: {rel} is not listed")
    for rel, digest in tag_rows.items():
        if rel not in TAG_FILES:
            report.add(f"tagmanifest-sha256.txt: lists unexpected file {rel}")
        _check_hash(root, rel, digest, present, "tagmanifest-sha256.txt", report)

    if "bagit.txt" in present and (root / "bagit.txt").read_bytes() != BAGIT_TXT:
        report.add("bagit.txt: not the BagIt 1.0 declaration")
    rows = parse_manifest(_text(root / "manifest-sha256.txt", report), "manifest-sha256.txt", report)
    for rel, digest in rows.items():
        if not rel.startswith("data/"):
            report.add(f"manifest-sha256.txt: {rel} is outside data/")
        _check_hash(root, rel, digest, present, "manifest-sha256.txt", report)
    expected = set(rows) | set(TAG_FILES) | {"tagmanifest-sha256.txt"}
    for rel in sorted(present - expected):
        report.add(f"{rel}: extra file, not in any manifest")
    report.files = len(rows)
    _check_oxum(root, rows, present, report)
    _check_contents(root, present, report)
    return report


def _plain_file(root: Path, rel: str) -> bool:
    """rel names a regular file reached without passing through a symlink: only such files
    are read (a symlink out of the bundle, or a FIFO, is never opened)."""
    path, parts = root, rel.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return False  # a name built from the records (a run label) must not climb out
    for i, part in enumerate(parts):
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            return False
        if not (stat.S_ISREG(mode) if i == len(parts) - 1 else stat.S_ISDIR(mode)):
            return False
    return True


def _text(path: Path, report: Report) -> str:
    try:
        if not _plain_file(path.parent, path.name):
            return ""
        return path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        report.add(f"{path.name}: unreadable ({exc.__class__.__name__})")
        return ""


def _check_hash(root, rel, digest, present, manifest, report) -> None:
    if rel not in present:
        report.add(f"{rel}: missing (listed in {manifest})")
    elif sha256_file(root / rel) != digest:
        report.add(f"{rel}: hash mismatch (content differs from {manifest})")


def _check_oxum(root, rows, present, report) -> None:
    info = _text(root / "bag-info.txt", report) if "bag-info.txt" in present else ""
    for line in info.splitlines():
        if line.startswith("Payload-Oxum:"):
            want = line.split(":", 1)[1].strip()
            listed = [rel for rel in rows if rel in present]
            got = f"{sum((root / rel).stat().st_size for rel in listed)}.{len(listed)}"
            if want != got:
                report.add(f"bag-info.txt: Payload-Oxum {want} but the payload is {got}")


def _load(root: Path, rel: str, report: Report):
    if not _plain_file(root, rel):
        report.add(f"{rel}: missing (or not a regular file inside the bundle; not read)")
        return None
    try:
        return json.loads((root / rel).read_bytes().decode("utf-8"))
    except FileNotFoundError:
        report.add(f"{rel}: missing")
    except (OSError, ValueError) as exc:
        report.add(f"{rel}: not valid JSON ({exc.__class__.__name__})")
    return None


def _check_contents(root: Path, present: set[str], report: Report) -> None:
    # Stored arrays: each file's bytes must hash to the digest in its name.
    arrays = root / "data" / "arrays"
    stored = set()
    for rel in sorted(p for p in present if p.startswith("data/arrays/")):
        name = rel.rsplit("/", 1)[1]
        digest = name[: -len(tensors.SUFFIX)] if name.endswith(tensors.SUFFIX) else None
        if not digest or len(digest) != 64 or not set(digest) <= HEX:
            report.add(f"{rel}: not a stored array name (<sha256>{tensors.SUFFIX})")
            continue
        try:
            actual = tensors.digest(tensors.load(root / rel))
        except Exception as exc:  # noqa: BLE001 - any unreadable array is a finding
            report.add(f"{rel}: unreadable array ({exc.__class__.__name__}: {str(exc)[:80]})")
            continue
        if actual != digest:
            report.add(f"{rel}: array content hashes to {actual[:16]}..., not the digest in its name")
        stored.add(digest)
        report.arrays += 1

    campaign = _load(root, "data/campaign.json", report)
    claimed = _load(root, "data/comparison.json", report)
    runner = _load(root, "data/receipts/runner.json", report)
    cleanup = _load(root, "data/receipts/cleanup.json", report)
    if None in (campaign, claimed, runner, cleanup):
        return
    runs = []
    for label in campaign.get("labels", [])[: runner.get("runs_started", 0)]:
        record = _load(root, f"data/runs/{label}.json", report)
        if record is None:
            return
        runs.append(record)
    for rel in sorted(p for p in present if p.startswith("data/runs/")):
        if rel.rsplit("/", 1)[1][:-5] not in [r.get("label") for r in runs]:
            report.add(f"{rel}: a run record the campaign did not start")
    for record in runs:
        for item in record.get("items", []):
            for name, f in item.get("fields", {}).items():
                if f.get("digest") not in stored:
                    report.add(f"data/runs/{record.get('label')}.json: item {item.get('id')} field {name}: "
                               f"array {str(f.get('digest'))[:16]}... is not stored")
    golden = _load(root, "data/golden.json", report) if "data/golden.json" in present else None
    if campaign.get("golden") and golden is None:
        report.add("data/golden.json: missing although the campaign names a golden file")
    procs = cleanup.get("processes", [])
    if cleanup.get("all_absent") != all(p.get("absent") for p in procs):
        report.add("data/receipts/cleanup.json: all_absent contradicts the process list")
    try:
        derived = comparison.derive(campaign, runs, runner, cleanup, golden, arrays)
    except Exception as exc:  # noqa: BLE001 - malformed records are findings, not crashes
        report.add(f"data/comparison.json: cannot be re-derived from the run records "
                   f"({exc.__class__.__name__}: {str(exc)[:80]})")
        return
    for path, want, got in diff(derived, claimed):
        report.add(f"data/comparison.json: {path} claims {_short(got)}, the run records give {_short(want)}")
    report.status = claimed.get("status")


def diff(want, got, path: str = ""):
    """Key paths where two JSON values differ."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            sub = f"{path}.{key}" if path else key
            if key not in got or key not in want:
                yield sub, want.get(key), got.get(key)
            else:
                yield from diff(want[key], got[key], sub)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got)):
            yield from diff(a, b, f"{path}[{i}]")
    elif want != got or type(want) is not type(got):
        yield path, want, got


def _short(value) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."
