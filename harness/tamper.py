"""The tampering mutation suite (issue 6.3) as library code.

Each mutation is a small named function applied to a fresh copy of a sealed bundle; then
both checkers run on the copy: `harness verify` (harness.verify, in this process) and the
standard-library script `python -S harness/rehash.py` (a subprocess). A mutation counts as
detected by a checker when it exits 1 and one of its problem lines names the cause (the
file or path the mutation touched). Mutations that could trap a checker which follows
symlinks or opens special files (a FIFO) run both checkers as subprocesses with a timeout,
and the pickle and code-in-header mutations also check that no marker file was created
(nothing was unpickled or executed).
"""
from __future__ import annotations

import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import tensors
from harness.bundle import TAG_FILES, manifest_text
from harness.fsutil import sha256_file

REHASH = Path(__file__).resolve().parent / "rehash.py"
HAZARD_TIMEOUT_S = 30


@dataclass
class Mutation:
    name: str
    apply: Callable[[Path, "Context"], None]
    cause: str  # a substring that a problem line must hold: the file or path touched
    hazard: bool = False  # run the checkers in subprocesses with a timeout
    marker: bool = False  # the mutation plants a trap that creates ctx.marker if triggered


@dataclass
class Check:
    detected: bool
    exit_code: int | None
    lines: list[str]
    note: str = ""

    @property
    def named(self) -> str:
        return self.lines[0] if self.lines else self.note


@dataclass
class Result:
    mutation: str
    cause: str
    verify: Check
    rehash: Check

    @property
    def detected_by_both(self) -> bool:
        return self.verify.detected and self.rehash.detected


@dataclass
class Context:
    outside: Path  # a scratch folder outside the bundle copy
    marker: Path  # must never exist: created only if a checker unpickles or executes
    files: list[str] = field(default_factory=list)


# --- helpers ------------------------------------------------------------------------------
def bundle_files(root: Path) -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            out.append(os.path.relpath(os.path.join(dirpath, name), root).replace(os.sep, "/"))
    return sorted(out, key=str.encode)


def reseal(root: Path) -> None:
    """Re-hash both manifests consistently, as a forger would: manifest-sha256.txt over
    every file under data/, Payload-Oxum in bag-info.txt, then the tag manifest."""
    payload = [rel for rel in bundle_files(root) if rel.startswith("data/")]
    rows = [(sha256_file(root / rel), rel) for rel in payload]
    (root / "manifest-sha256.txt").write_text(manifest_text(rows))
    size = sum((root / rel).stat().st_size for rel in payload)
    _rewrite_oxum(root, f"{size}.{len(payload)}")
    reseal_tags(root)


def reseal_tags(root: Path) -> None:
    tags = [(sha256_file(root / rel), rel) for rel in TAG_FILES if (root / rel).is_file()]
    (root / "tagmanifest-sha256.txt").write_text(manifest_text(tags))


def _rewrite_oxum(root: Path, oxum: str) -> None:
    info = root / "bag-info.txt"
    text = re.sub(r"(?m)^Payload-Oxum: .*$", f"Payload-Oxum: {oxum}", info.read_text())
    info.write_text(text)


def _arrays(root: Path) -> list[str]:
    return [rel for rel in bundle_files(root) if rel.startswith("data/arrays/")]


def _add_manifest_line(root: Path, line: str, tag: bool = False) -> None:
    """Append a manifest line (kept sorted) and re-hash the tag manifest consistently."""
    name = "tagmanifest-sha256.txt" if tag else "manifest-sha256.txt"
    lines = (root / name).read_text().splitlines() + [line]
    lines.sort(key=lambda row: row.split("  ", 1)[1].encode())
    (root / name).write_text("".join(f"{row}\n" for row in lines))
    if not tag:
        reseal_tags(root)


# --- mutations ----------------------------------------------------------------------------
def flip_byte(rel: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        path = root / rel
        data = bytearray(path.read_bytes())
        if data:
            data[len(data) // 2] ^= 0x01
        else:
            data = bytearray(b"\x01")  # an empty file has no byte to flip: one appears
        path.write_bytes(bytes(data))
    return apply


def delete(rel: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        (root / rel).unlink()
    return apply


def add_file(rel: str, content: bytes = b"not evidence\n") -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(content)
    return apply


def add_valid_array(root: Path, ctx: Context) -> None:
    """A well-formed array under its own correct digest, just not in the manifest."""
    import numpy as np

    tensors.store(np.arange(7, dtype=np.int16), root / "data" / "arrays")


def rename(rel: str, new: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        os.rename(root / rel, root / new)
    return apply


def symlink_outside(rel: str) -> Callable:
    """Move the file out of the bundle and leave a symlink to it: following the link would
    find exactly the bytes the manifest expects."""
    def apply(root: Path, ctx: Context) -> None:
        target = ctx.outside / rel.replace("/", "__")
        shutil.move(root / rel, target)
        os.symlink(target, root / rel)
    return apply


def symlink_inside(rel: str, to: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        (root / rel).unlink()
        os.symlink(os.path.relpath(root / to, (root / rel).parent), root / rel)
    return apply


def symlink_dir_outside(rel: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        target = ctx.outside / rel.replace("/", "__")
        shutil.move(root / rel, target)
        os.symlink(target, root / rel, target_is_directory=True)
    return apply


def symlink_to_fifo(rel: str) -> Callable:
    """A symlink to a FIFO outside the bundle: a checker that follows it blocks forever."""
    def apply(root: Path, ctx: Context) -> None:
        fifo = ctx.outside / f"fifo-{rel.replace('/', '__')}"
        os.mkfifo(fifo)
        (root / rel).unlink()
        os.symlink(fifo, root / rel)
    return apply


def fifo_in_place(rel: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        (root / rel).unlink()
        os.mkfifo(root / rel)
    return apply


def manifest_dotdot(root: Path, ctx: Context) -> None:
    """A payload line that climbs out of data/ and out of the bundle, with the right hash."""
    target = ctx.outside / "outside.txt"
    target.write_bytes(b"outside the bundle\n")
    rel = os.path.relpath(target, root / "data").replace(os.sep, "/")
    _add_manifest_line(root, f"{sha256_file(target)}  data/{rel}")


def manifest_dotdot_alias(root: Path, ctx: Context) -> None:
    """An existing file listed through '..' (resolving it would still find the file)."""
    text = (root / "manifest-sha256.txt").read_text()
    text = text.replace("  data/comparison.json\n", "  data/runs/../comparison.json\n")
    (root / "manifest-sha256.txt").write_text(text)
    reseal_tags(root)


def manifest_absolute(root: Path, ctx: Context) -> None:
    target = ctx.outside / "absolute.txt"
    target.write_bytes(b"an absolute path\n")
    _add_manifest_line(root, f"{sha256_file(target)}  {target}")


def tagmanifest_dotdot(root: Path, ctx: Context) -> None:
    target = ctx.outside / "tag.txt"
    target.write_bytes(b"tag file outside\n")
    rel = os.path.relpath(target, root).replace(os.sep, "/")
    _add_manifest_line(root, f"{sha256_file(target)}  {rel}", tag=True)


def _edit_comparison(root: Path, edit: Callable[[dict], None]) -> None:
    path = root / "data" / "comparison.json"
    comp = json.loads(path.read_text())
    edit(comp)
    path.write_text(json.dumps(comp, indent=2) + "\n")
    reseal(root)


def claim_speedup(root: Path, ctx: Context) -> None:
    """Claim a better speed-up and re-hash both manifests consistently."""
    def edit(comp):
        comp["wall"]["speedup"] = comp["wall"]["speedup"] * 1.5
    _edit_comparison(root, edit)


def claim_consistent_wall(root: Path, ctx: Context) -> None:
    """Halve the candidate mean and recompute saving, saving_pct and speed-up from it: the
    wall block is self-consistent, only the per-run records contradict it."""
    def edit(comp):
        w = comp["wall"]
        w["candidate_mean_s"] = w["candidate_mean_s"] / 2
        w["saving_s"] = w["base_mean_s"] - w["candidate_mean_s"]
        w["saving_pct"] = 100.0 * w["saving_s"] / w["base_mean_s"]
        w["speedup"] = w["base_mean_s"] / w["candidate_mean_s"]
    _edit_comparison(root, edit)


def claim_run_wall(root: Path, ctx: Context) -> None:
    def edit(comp):
        comp["runs"][-1]["wall_s"] = comp["runs"][-1]["wall_s"] * 0.5
    _edit_comparison(root, edit)


def claim_stage_cpu(root: Path, ctx: Context) -> None:
    def edit(comp):
        name = sorted(comp["stages"])[0]
        comp["stages"][name]["candidate_self_cpu_s"] = comp["stages"][name]["candidate_self_cpu_s"] / 3
    _edit_comparison(root, edit)


def claim_parity(root: Path, ctx: Context) -> None:
    def edit(comp):
        comp["parity"]["fields_compared"] += 1
        comp["parity"]["fields_identical"] += 1
    _edit_comparison(root, edit)


def swap_array(a: str, b: str) -> Callable:
    """Replace one stored array by another valid one (another digest's bytes) and re-hash."""
    def apply(root: Path, ctx: Context) -> None:
        (root / a).write_bytes((root / b).read_bytes())
        reseal(root)
    return apply


def swap_array_renamed(root: Path, ctx: Context) -> None:
    """Replace a stored array by a different valid array stored under its own correct
    digest (the old file gone), and re-hash: the run records name a digest not stored."""
    import numpy as np

    victim = _arrays(root)[0]
    arr = tensors.load(root / victim)
    changed = np.asarray(arr).copy()
    flat = changed.reshape(-1).view(np.uint8)
    if flat.size:
        flat[0] ^= 1
    (root / victim).unlink()
    tensors.store(changed if changed.size else np.arange(3), root / "data" / "arrays")
    reseal(root)


def _referenced_array(root: Path) -> str:
    """An array file a record names (the first field of the first item of A1)."""
    record = json.loads((root / "data" / "runs" / "A1.json").read_text())
    for item in record["items"]:
        for f in item["fields"].values():
            return f"data/arrays/{f['digest']}{tensors.SUFFIX}"
    raise RuntimeError("no stored array is referenced by A1")


def pickled_array(root: Path, ctx: Context) -> None:
    """An object array whose unpickling would create the marker file, in place of a stored
    array (same name), re-hashed: a checker that unpickles creates the marker."""
    import numpy as np

    class Trap:
        def __reduce__(self):
            return (open, (str(ctx.marker), "w"))

    victim = _referenced_array(root)
    buf = io.BytesIO()
    arr = np.empty(1, dtype=object)
    arr[0] = Trap()
    np.lib.format.write_array(buf, arr, allow_pickle=True)
    assert b"builtins" in buf.getvalue() or b"io" in buf.getvalue()  # the trap is really in there
    (root / victim).write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    reseal(root)


def code_in_npy_header(root: Path, ctx: Context) -> None:
    """A .npy header that is code, not a literal: evaluating it would create the marker."""
    victim = _referenced_array(root)
    code = f"{{'descr': open({str(ctx.marker)!r}, 'w').name, 'fortran_order': False, 'shape': (1,), }}"
    header = code.encode("latin1")
    pad = 64 - (10 + len(header) + 1) % 64
    header += b" " * pad + b"\n"
    blob = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + b"\x00" * 8
    (root / victim).write_bytes(gzip.compress(blob, mtime=0))
    reseal(root)


def record_digest_swap(root: Path, ctx: Context) -> None:
    """Point a candidate run's field at another stored (valid) array and re-hash: every
    file hashes right, parity re-derived from the records contradicts comparison.json."""
    path = root / "data" / "runs" / "B1.json"
    record = json.loads(path.read_text())
    digests = sorted({f["digest"] for item in record["items"] for f in item["fields"].values()})
    item = next(i for i in record["items"] if i["fields"])
    name = sorted(item["fields"])[0]
    other = next(d for d in digests if d != item["fields"][name]["digest"])
    item["fields"][name]["digest"] = other
    path.write_text(json.dumps(record, indent=2) + "\n")
    reseal(root)


def label_climbs_out(root: Path, ctx: Context) -> None:
    """A run label in campaign.json that climbs out of the bundle to a forged record placed
    beside it, re-hashed: a checker that builds paths from labels would read it."""
    campaign = json.loads((root / "data" / "campaign.json").read_text())
    record = json.loads((root / "data" / "runs" / "A1.json").read_text())
    forged = root.parent / "forged.json"
    forged.write_text(json.dumps(record))
    label = os.path.relpath(root.parent / "forged", root / "data" / "runs").replace(os.sep, "/")
    campaign["labels"][0] = label
    (root / "data" / "campaign.json").write_text(json.dumps(campaign, indent=2) + "\n")
    reseal(root)


def drop_run_record(root: Path, ctx: Context) -> None:
    """Delete the slowest candidate run's record and re-hash: the campaign says it started."""
    (root / "data" / "runs" / "B1.json").unlink()
    reseal(root)


def mutations(files: list[str]) -> list[Mutation]:
    """The suite for a bundle holding `files` (bag-relative paths)."""
    payload = [f for f in files if f.startswith("data/")]
    arrays = [f for f in payload if f.startswith("data/arrays/")]
    out = []
    for rel in files:
        out.append(Mutation(f"flip-byte {rel}", flip_byte(rel), rel))
    for rel in files:
        out.append(Mutation(f"delete {rel}", delete(rel), rel))
    out += [
        Mutation("add data/notes.txt", add_file("data/notes.txt"), "data/notes.txt"),
        Mutation("add extra.txt (bundle root)", add_file("extra.txt"), "extra.txt"),
        Mutation(f"add data/arrays/<valid array>{tensors.SUFFIX}", add_valid_array, "data/arrays/"),
        Mutation("rename data/runs/A1.json -> data/runs/A9.json",
                 rename("data/runs/A1.json", "data/runs/A9.json"), "data/runs/A1.json"),
        Mutation("rename data/comparison.json -> data/comparison.json.bak",
                 rename("data/comparison.json", "data/comparison.json.bak"), "data/comparison.json"),
        Mutation(f"rename {arrays[0]} -> {arrays[0]}.old", rename(arrays[0], arrays[0] + ".old"), arrays[0]),
        Mutation("symlink data/comparison.json -> outside copy", symlink_outside("data/comparison.json"),
                 "data/comparison.json", hazard=True),
        Mutation("symlink data/runs/A1.json -> outside copy", symlink_outside("data/runs/A1.json"),
                 "data/runs/A1.json", hazard=True),
        Mutation(f"symlink {arrays[0]} -> outside copy", symlink_outside(arrays[0]), arrays[0], hazard=True),
        Mutation("symlink manifest-sha256.txt -> outside copy", symlink_outside("manifest-sha256.txt"),
                 "manifest-sha256.txt", hazard=True),
        Mutation("symlink data/runs/ (folder) -> outside copy", symlink_dir_outside("data/runs"),
                 "data/runs", hazard=True),
        Mutation("symlink data/receipts/cleanup.json -> outside FIFO",
                 symlink_to_fifo("data/receipts/cleanup.json"), "data/receipts/cleanup.json", hazard=True),
        Mutation("FIFO in place of manifest-sha256.txt", fifo_in_place("manifest-sha256.txt"),
                 "manifest-sha256.txt", hazard=True),
        Mutation("manifest line data/../<outside file> with its right hash", manifest_dotdot, "unsafe path"),
        Mutation("manifest line data/runs/../comparison.json (alias of a real file)", manifest_dotdot_alias,
                 "unsafe path"),
        Mutation("manifest line with an absolute path and its right hash", manifest_absolute, "unsafe path"),
        Mutation("tagmanifest line ../<outside file>", tagmanifest_dotdot, "unsafe path"),
        Mutation("comparison.json claims a 1.5x better speed-up, both manifests re-hashed", claim_speedup,
                 "wall.speedup"),
        Mutation("comparison.json wall block halved consistently, re-hashed", claim_consistent_wall,
                 "wall."),
        Mutation("comparison.json run wall halved, re-hashed", claim_run_wall, "runs["),
        Mutation("comparison.json stage CPU cut, re-hashed", claim_stage_cpu, "stages."),
        Mutation("comparison.json parity field counts raised, re-hashed", claim_parity, "parity.fields_"),
        Mutation(f"stored array {arrays[0]} swapped for another valid one, re-hashed",
                 swap_array(arrays[0], arrays[1]), arrays[0]),
        Mutation("stored array replaced by a changed one under its own digest, re-hashed",
                 swap_array_renamed, "is not stored"),
        Mutation("run record B1 points a field at another stored array, re-hashed", record_digest_swap,
                 "data/comparison.json: parity."),
        Mutation("run record B1 deleted, re-hashed", drop_run_record, "data/runs/B1.json"),
        Mutation("campaign.json run label '../../../forged' (a record outside), re-hashed", label_climbs_out,
                 "forged.json"),
        Mutation("pickled object array (unpickling creates a marker), re-hashed", pickled_array,
                 "data/arrays/", marker=True),
        Mutation("gzipped .npy header holding code (evaluating creates a marker), re-hashed", code_in_npy_header,
                 "data/arrays/", marker=True),
    ]
    return out


# --- running the checkers -------------------------------------------------------------------
def _judge(code: int | None, lines: list[str], cause: str, note: str = "") -> Check:
    named = [line for line in lines if cause in line]
    detected = code == 1 and bool(named)
    if code == 1 and not named:
        note = note or f"failed, but no problem line names {cause!r}"
    elif code == 0:
        note = note or "passed the tampered bundle"
    return Check(detected, code, named or lines, note)


def run_verify(root: Path, cause: str, subprocess_timeout: float | None = None) -> Check:
    if subprocess_timeout is None:
        from harness.verify import verify

        report = verify(root)
        code = report.exit_code
        return _judge(code, report.problems if code != 2 else [report.unusable or ""], cause)
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", "verify", str(root)], capture_output=True,
                              text=True, timeout=subprocess_timeout)
    except subprocess.TimeoutExpired:
        return Check(False, None, [], f"hung for {subprocess_timeout:g} s (followed a link or opened a FIFO)")
    lines = [line[5:] for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
    return _judge(proc.returncode, lines, cause)


def run_rehash(root: Path, cause: str, timeout: float = 300) -> Check:
    try:
        proc = subprocess.run([sys.executable, "-S", str(REHASH), str(root)], capture_output=True, text=True,
                              timeout=timeout, cwd=os.path.dirname(str(root)) or "/")
    except subprocess.TimeoutExpired:
        return Check(False, None, [], f"hung for {timeout:g} s (followed a link or opened a FIFO)")
    lines = [line[5:] for line in proc.stdout.splitlines() if line.startswith("FAIL ")]
    return _judge(proc.returncode, lines, cause)


def _trapped(ctx: Context, check: Check) -> Check:
    """A checker that created the marker unpickled or executed bundle content: a failure."""
    if ctx.marker.exists():
        ctx.marker.unlink()
        check.detected = False
        check.note = "unpickled or executed bundle content (the trap's marker file was created)"
    return check


def baseline(bundle: Path) -> tuple[Check, Check]:
    """Both checkers on the untouched bundle: each must pass for the suite to mean anything."""
    return run_verify(bundle, ""), run_rehash(bundle, "")


def run_suite(bundle: str | os.PathLike, only: Callable[[Mutation], bool] | None = None,
              on_result: Callable[[Result], None] | None = None) -> list[Result]:
    bundle = Path(bundle)
    files = bundle_files(bundle)
    results = []
    with tempfile.TemporaryDirectory(prefix="abba-tamper-") as tmp:
        tmp = Path(tmp)
        for i, mutation in enumerate(mutations(files)):
            if only is not None and not only(mutation):
                continue
            work = tmp / f"m{i}"
            copy = work / "bundle"
            outside = work / "outside"
            outside.mkdir(parents=True)
            shutil.copytree(bundle, copy, symlinks=True)
            ctx = Context(outside=outside, marker=work / "MARKER-unpickled-or-executed", files=files)
            mutation.apply(copy, ctx)
            timeout = HAZARD_TIMEOUT_S if mutation.hazard else None
            v = _trapped(ctx, run_verify(copy, mutation.cause, subprocess_timeout=timeout))
            r = _trapped(ctx, run_rehash(copy, mutation.cause, timeout=HAZARD_TIMEOUT_S if mutation.hazard else 300))
            result = Result(mutation.name, mutation.cause, v, r)
            results.append(result)
            if on_result:
                on_result(result)
            shutil.rmtree(work, ignore_errors=True)
    return results


def summary(results: list[Result]) -> str:
    n = len(results)
    return (f"{n} mutations, {sum(r.verify.detected for r in results)} detected by harness verify, "
            f"{sum(r.rehash.detected for r in results)} detected by rehash.py")
