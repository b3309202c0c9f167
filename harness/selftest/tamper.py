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

import datetime
import gzip
import io
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness import contract as C
from harness import rules as R
from harness.bundle import arrays as tensors
from harness.bundle.write import manifest_text
from harness.contract import TAG_FILES
from harness.files import sha256_file

REHASH = Path(__file__).resolve().parents[1] / "rehash.py"
HAZARD_TIMEOUT_S = 30


@dataclass
class Mutation:
    name: str
    apply: Callable[[Path, "Context"], None]
    cause: str  # a substring that a problem line must hold: the file or path touched
    hazard: bool = False  # run the checkers in subprocesses with a timeout
    marker: bool = False  # the mutation plants a trap that creates ctx.marker if triggered
    rule: str = "layout"  # the rule that catches it (contract.RULES, or layout, canonical, safety)
    verify_only: bool = False  # only campaign.yaml can tell: rehash.py has no YAML parser
    doc: str = ""  # the record type it forges (the file kind it touches), for the coverage lines

    def __post_init__(self):
        self.doc = self.doc or record_type(self.name, self.cause)


# What a mutation's name starts with -> the record type it forges (hand-written forgeries name it).
NAMED = (("records:", "run"), ("instructions:", "instructions"), ("campaign.json", "campaign"),
         ("runner.json", "runner"), ("cleanup.json", "cleanup"), ("environment.json", "environment"),
         ("receipts/revisions.json", "revisions"), ("receipts/inputs.json", "inputs"), ("golden.json", "golden"),
         ("workload:", "workload"), ("bag-info.txt", "bag-info"), ("comparison.json", "comparison"),
         ("run record", "run"), ("logs:", "log"), ("arrays:", "array"), ("stored array", "array"),
         ("manifest", "manifest"), ("tagmanifest", "tagmanifest"))


def record_type(name: str, cause: str) -> str:
    """The record type a mutation touches: the kind of the file it names (contract.FILE_KINDS),
    else the one its name starts with, else "layout" (a file no bundle holds)."""
    words = name.split()
    for word in [cause] + words[1:2] + words[:1]:
        kind = C.file_kind(word.rstrip(":,"))
        if kind is not None:
            return kind
    for prefix, doc in NAMED:
        if name.startswith(prefix):
            return doc
    return "layout"


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
    rule: str = "layout"
    verify_only: bool = False
    doc: str = "layout"

    @property
    def detected_by_both(self) -> bool:
        """Caught by every checker that can catch it: both, or verify for a verify-only one."""
        return self.verify.detected and (self.rehash.detected or self.verify_only)


@dataclass
class Context:
    outside: Path  # a scratch folder outside the bundle copy
    marker: Path  # must never exist: created only if a checker unpickles or executes
    files: list[str] = field(default_factory=list)


# --- helpers ------------------------------------------------------------------------------
def bundle_files(root: Path) -> list[str]:
    out = []
    top = os.fspath(root)
    for dirpath, _dirs, files in os.walk(top):  # each dirpath is top joined with the folders below it
        folder = dirpath[len(top) + 1:].replace(os.sep, "/")
        out += [f"{folder}/{name}" if folder else name for name in files]
    return sorted(out, key=str.encode)


def reseal(root: Path) -> None:
    """Re-hash both manifests consistently, as a forger would: manifest-sha256.txt over
    every file under data/, Payload-Oxum in bag-info.txt, then the tag manifest."""
    payload = [rel for rel in bundle_files(root) if rel.startswith("data/")]
    rows = [(sha256_file(root / rel), rel) for rel in payload]
    (root / C.MANIFEST).write_text(manifest_text(rows))
    size = sum((root / rel).stat().st_size for rel in payload)
    _rewrite_oxum(root, f"{size}.{len(payload)}")
    reseal_tags(root)


def reseal_tags(root: Path) -> None:
    tags = [(sha256_file(root / rel), rel) for rel in TAG_FILES if (root / rel).is_file()]
    (root / C.TAGMANIFEST).write_text(manifest_text(tags))


def _rewrite_oxum(root: Path, oxum: str) -> None:
    info = root / C.BAG_INFO
    text = re.sub(r"(?m)^Payload-Oxum: .*$", f"Payload-Oxum: {oxum}", info.read_text())
    info.write_text(text)


def _arrays(root: Path) -> list[str]:
    return [rel for rel in bundle_files(root) if rel.startswith("data/arrays/")]


def _add_manifest_line(root: Path, line: str, tag: bool = False) -> None:
    """Append a manifest line (kept sorted) and re-hash the tag manifest consistently."""
    name = C.TAGMANIFEST if tag else C.MANIFEST
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


def add_valid_array(root: Path, ctx: Context | None = None) -> None:
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
    text = (root / C.MANIFEST).read_text()
    text = text.replace("  data/comparison.json\n", "  data/runs/../comparison.json\n")
    (root / C.MANIFEST).write_text(text)
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
            return C.array_path(f['digest'])
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
    item = next(i for i in record["items"] if i["fields"])
    name = sorted(item["fields"])[0]
    mine = item["fields"][name]
    like = sorted({f["digest"] for it in record["items"] for f in it["fields"].values()
                   if (f["dtype"], f["shape"]) == (mine["dtype"], mine["shape"]) and f["digest"] != mine["digest"]})
    other = like[0] if like else next(f["digest"] for it in record["items"] for f in it["fields"].values()
                                      if f["digest"] != mine["digest"])
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


# --- forgeries of the records: every file re-hashed, comparison re-derived -------------------
def _load(root: Path, rel: str):
    return json.loads((root / rel).read_text())


def _dump(root: Path, rel: str, obj) -> None:
    (root / rel).write_text(json.dumps(obj, indent=2) + "\n")


def rederive(root: Path, original: Path | None = None) -> None:
    """What a careful forger does after editing records: comparison.json derived again from
    them with the harness's own code (harness.comparison.derive over RunRecord.from_json), and
    bag-info's status to match; in a reproduction bundle, with the original at hand, its
    receipt derived again from the two bundles (harness.judge.reproduce.receipt, the measured
    divergence kept)."""
    from harness import rehash
    from harness.comparison import derive as comparison
    from harness.records import (CampaignRecord, CleanupReceipt, InstructionRecord, NoiseFloor, RunnerReceipt,
                                 RunRecord, to_json)

    try:
        campaign, runner = _load(root, C.CAMPAIGN_JSON), _load(root, C.RUNNER)
        if rehash.conform("campaign", campaign):  # outside its contract (min_rounds 10**18): no plan to derive
            return
        runs = [RunRecord.from_json(_load(root, C.run_path(label)))
                for label in campaign["labels"][:runner["runs_started"]] if (root / C.run_path(label)).is_file()]
        golden = _load(root, C.GOLDEN) if (root / C.GOLDEN).is_file() else None
        floor = NoiseFloor.from_json(_load(root, C.NOISE_FLOOR)) if (root / C.NOISE_FLOOR).is_file() else None
        workload = _load(root, C.WORKLOAD) if (root / C.WORKLOAD).is_file() else {}
        instr = [InstructionRecord.from_json(_load(root, C.instructions_path(label))) for label, *_ in
                 R.schedule(campaign["order"], (campaign.get("instructions") or {}).get("order", ""),
                            R.spread_of(campaign))
                 if label.startswith("I") and (root / C.instructions_path(label)).is_file()]
        env = _load(root, C.ENVIRONMENT) if (root / C.ENVIRONMENT).is_file() else {}
        result = comparison.derive(CampaignRecord.from_json(campaign), runs, RunnerReceipt.from_json(runner),
                                   CleanupReceipt.from_json(_load(root, C.CLEANUP)), golden, root / "data" / "arrays",
                                   floor, instr, workload.get("digest") if isinstance(workload, dict) else None,
                                   env.get("sandbox") if isinstance(env, dict) else None)
    except Exception:  # noqa: BLE001 - records too broken to derive from: leave the old claim
        return
    _dump(root, C.COMPARISON, to_json(result))
    info = root / C.BAG_INFO
    info.write_text(re.sub(r"(?m)^Abba-Status: .*$", f"Abba-Status: {result.status}", info.read_text()))
    if original is not None and (root / C.REPRODUCTION).is_file():
        rederive_receipt(root, original)


def rederive_receipt(root: Path, original: Path) -> None:
    """A reproduction receipt derived again from this bundle and the one it re-ran."""
    from dataclasses import replace

    from harness.bundle import read
    from harness.judge import reproduce
    from harness.records import to_json

    stored = _load(root, C.REPRODUCTION)
    try:
        receipt = reproduce.receipt(read.load(original), read.load(root))
        receipt = replace(receipt, outputs=replace(receipt.outputs, divergence=stored["outputs"]["divergence"]))
    except Exception:  # noqa: BLE001 - a bundle too broken to load: leave the old receipt
        return
    _dump(root, C.REPRODUCTION, to_json(receipt))


def forge(edit: Callable[[Path], object], derive: bool = True) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        edit(root)
        if derive:
            rederive(root)
        reseal(root)
    return apply


def edit_json(rel: str, change: Callable) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        obj = _load(root, rel)
        change(obj)
        _dump(root, rel, obj)
    return edit


def edit_runs(change: Callable[[str, dict], None]) -> Callable[[Path], None]:
    def edit(root: Path) -> None:
        for label in _load(root, C.CAMPAIGN_JSON)["labels"]:
            path = root / C.run_path(label)
            if path.is_file():
                record = json.loads(path.read_text())
                change(label, record)
                _dump(root, C.run_path(label), record)
    return edit


def speed_up(factors: list[float]) -> Callable[[Path], None]:
    """The candidate's ok runs made faster, consistently, the k-th of them divided by
    factors[k % len(factors)]: every time of its loop scaled alike (the runner's loop wall, the
    worker's own wall and the two mark latencies that make it up, item walls and CPU, stage CPU,
    the process's and the kernel's loop CPU, the stall), the process's life and the worker's end
    moved earlier by what was "saved", steal ticks scaled with the wall, and every mark the
    checkers re-derive from a record (its outside contradictions, its interference) re-derived
    with the rules they call. With rederive and reseal after it, both checkers pass the bundle:
    the claim a forger can make that only `harness reproduce` tests."""
    def edit(root: Path) -> None:
        bounds = _load(root, C.CAMPAIGN_JSON).get("interference")
        done: list[str] = []

        def faster(label: str, record: dict) -> None:
            if record["variant"] != "candidate" or record["status"] != "ok":
                return
            f = factors[len(done) % len(factors)]
            done.append(label)
            saved = record["wall_s"] * (1 - 1 / f)
            record["wall_s"] /= f
            for item in record["items"]:
                item["wall_s"] /= f
                item["cpu_s"] /= f
            for row in record["stages"].values():
                row["self_cpu_s"] /= f
                row["incl_cpu_s"] /= f
            machine, outside, interference = record["machine"], record["outside"], record["interference"]
            for key in ("process_cpu_s", "cpu_stall_s"):
                if machine[key] is not None:
                    machine[key] /= f
            # the runner's own figures (the headline is its clock): the loop between its marks
            # shrunk, the worker's wall and the latencies still making it up, the process's life shorter
            outside["worker_wall_s"] /= f
            outside["latency_s"] = [x / f for x in outside["latency_s"]]
            if outside["loop_cpu_s"] is not None:
                outside["loop_cpu_s"] /= f
            record["process"]["wall_s"] -= saved
            record["process"]["ended_at"] -= saved
            if record["worker_ended_at"] is not None:
                ended = datetime.datetime.fromisoformat(record["worker_ended_at"]) - datetime.timedelta(seconds=saved)
                record["worker_ended_at"] = ended.isoformat(timespec="milliseconds")
            stages = math.fsum(row["self_cpu_s"] for row in record["stages"].values())
            found = R.contradictions(outside, record["wall_s"], [(it["wall_s"], it["cpu_s"]) for it in record["items"]],
                                     record["slots"], machine["process_cpu_s"], stages)
            outside.update(contradictions=found, contradicted=bool(found))
            # the kernel's steal over a shorter loop: fewer whole ticks, and the marks they give
            for key in ("steal_ticks", "cpu_steal_ticks"):
                if interference[key] is not None:
                    interference[key] = int(interference[key] // f)
            if bounds is not None:
                share, per_wall, causes = R.disturbance(interference, record["wall_s"], machine["process_cpu_s"],
                                                        machine["cores"], bounds["max_steal"],
                                                        bounds["min_cpu_per_wall"])
                interference.update(steal_share=share, cpu_per_wall=per_wall, causes=causes, disturbed=bool(causes))
        edit_runs(faster)(root)
    return edit


def _swap_variants(label: str, record: dict) -> None:
    other = {"base": "candidate", "candidate": "base"}[record["variant"]]
    record["variant"] = other


def swap_identities(root: Path) -> None:
    """Every record's variant and SHA swapped between A and B: a regression reads as a speed-up."""
    shas = {v: r["sha"] for v, r in _load(root, C.CAMPAIGN_JSON)["revisions"].items()}

    def change(label, record):
        _swap_variants(label, record)
        record["sha"] = shas[record["variant"]]
    edit_runs(change)(root)


def cherry_pick(root: Path) -> None:
    """Order shortened to its first round (AB or BA, as it ran) and its first stage round; the
    dropped runs' records, logs, ledger rows and arrays removed; receipts made consistent. Only campaign.yaml still says what was run (rounds, or ABBA)."""
    campaign = _load(root, C.CAMPAIGN_JSON)
    labels = campaign["labels"]
    # A1 and B1 in the order they ran (rounds shuffle them), and the first stage round's runs
    keep = [label for label in labels if R.timed(label)][:2] + \
        [label for label in labels if not R.timed(label)][:2]
    keep.sort(key=labels.index)
    for label in labels:
        if label not in keep:
            (root / C.run_path(label)).unlink()
            (root / C.log_path(label)).unlink()
    for index, label in enumerate(keep):
        edit_json(C.run_path(label), lambda r, i=index: r.update(index=i))(root)
    order = "".join(label[0] if R.timed(label) else label[0].lower() for label in keep)
    campaign.update(order=order, labels=keep, rounds=None, stage_rounds=None, seed=None)
    _dump(root, C.CAMPAIGN_JSON, campaign)
    edit_json(C.RUNNER, lambda r: r.update(runs_planned=len(keep), runs_started=len(keep)))(root)

    def ledger(c):
        c["processes"] = [p for p in c["processes"] if p["run"] in keep]
        c["count"] = len(c["processes"])
    edit_json(C.CLEANUP, ledger)(root)
    kept = {f["digest"] for label in keep for it in _load(root, C.run_path(label))["items"]
            for f in it["fields"].values()}
    for path in (root / "data" / "arrays").iterdir():
        if path.name[:64] not in kept:
            path.unlink()


def ghost_run(root: Path) -> None:
    """A2 kept as an ok record while the ledger and logs show it never ran."""
    (root / C.log_path("A2")).unlink()
    edit_json(C.CLEANUP, lambda c: c.update(
        processes=[p for p in c["processes"] if p["run"] != "A2"], count=len(c["processes"]) - 1))(root)


def duplicate_key(root: Path, ctx: Context) -> None:
    """comparison.json opens with a second "status": a human reading the top sees one value,
    a lenient parser keeps the last."""
    path = root / C.COMPARISON
    text = path.read_text()
    path.write_text('{\n  "status": "failed",' + text[1:])
    reseal(root)


def nan_literal(root: Path, ctx: Context) -> None:
    path = root / C.run_path("B1")
    record = json.loads(path.read_text())
    record["items"][0]["cpu_s"] = float("nan")
    path.write_text(json.dumps(record))  # json.dumps writes NaN, which is not JSON
    reseal(root)


def deep_json(root: Path, ctx: Context) -> None:
    (root / C.INPUTS).write_text("[" * 100_000 + "]" * 100_000)
    reseal(root)


def array_bomb(root: Path, ctx: Context) -> None:
    """A referenced array replaced by a header declaring 8 GiB of zeros (kilobytes gzipped):
    refused from its header, before anything is decompressed."""
    victim = _referenced_array(root)
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1073741824,), }"
    head = header.encode("latin1")
    head += b" " * (64 - (10 + len(head) + 1) % 64) + b"\n"
    blob = b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head
    (root / victim).write_bytes(gzip.compress(blob + b"\0" * (1 << 20), mtime=0))
    reseal(root)


def fifo_at_array(root: Path, ctx: Context) -> None:
    """The array a record names replaced by a FIFO and dropped from the manifest: a checker
    that opened the path the record names would block forever."""
    victim = _referenced_array(root)
    (root / victim).unlink()
    os.mkfifo(root / victim)
    rows = [row for row in (root / C.MANIFEST).read_text().splitlines() if not row.endswith(victim)]
    (root / C.MANIFEST).write_text("".join(f"{row}\n" for row in rows))
    reseal_tags(root)


def unsorted_manifest(root: Path, ctx: Context) -> None:
    rows = (root / C.MANIFEST).read_text().splitlines()
    rows[0], rows[1] = rows[1], rows[0]
    (root / C.MANIFEST).write_text("".join(f"{row}\n" for row in rows))
    reseal_tags(root)


def bag_info(pattern: str, replacement: str) -> Callable:
    def apply(root: Path, ctx: Context) -> None:
        info = root / C.BAG_INFO
        info.write_text(re.sub(pattern, replacement, info.read_text(), flags=re.M))
        reseal_tags(root)
    return apply


def _first_item(record: dict) -> dict:
    return next(it for it in record["items"] if it["fields"])


def record_rules() -> list[Mutation]:
    """One forgery (or more) per record rule, each re-sealed as a forger would."""
    def run(label: str, change: Callable[[dict], object]) -> Callable[[Path], None]:  # change's value is dropped
        return edit_json(C.run_path(label), change)

    def both(*edits):
        def edit(root):
            for e in edits:
                e(root)
        return edit

    def double_items(r):
        r["items"].append(dict(r["items"][0]))

    def wider(r):
        f = next(iter(_first_item(r)["fields"].values()))
        f["dtype"], f["shape"] = ("<f8" if f["dtype"] != "<f8" else "<f4"), f["shape"] + [1]

    def outside_digest(r):
        next(iter(_first_item(r)["fields"].values()))["digest"] = "/etc/passwd"

    def second_worker(c):
        w = next(p for p in c["processes"] if p["role"] == "worker" and p["run"] == "B1")
        c["processes"].append({**w, "pid": w["pid"] + 100000})
        c["count"] += 1

    def alive(c):
        c["processes"][0].update(absent=True, verified="alive")

    def overlap(root):
        a1 = _load(root, C.run_path("A1"))
        run("B1", lambda r: r["process"].update(started_at=a1["process"]["started_at"]))(root)

    def cut_walls(r):
        r["wall_s"] /= 1000
        for it in r["items"]:
            it["wall_s"] /= 1000

    def stage_cpu_x20(r):
        for row in r["stages"].values():
            row["self_cpu_s"] = row["incl_cpu_s"] = row["incl_cpu_s"] * 20 + r["wall_s"] * 4

    def uninstall(r):
        name = next(iter(r["stages_installed"]))
        r["stages_installed"][name] = False
        r["stages"][name].update(calls=0, self_cpu_s=0.0, incl_cpu_s=0.0)

    def outlive_timeout(root):
        limit = _load(root, C.CAMPAIGN_JSON)["timeouts"]["run_s"]

        def longer(r):
            r["process"]["wall_s"] = limit * 7
            r["process"]["ended_at"] = r["process"]["started_at"] + limit * 7
        run("A2", longer)(root)
        edit_json(C.RUNNER, lambda x: x.update(ended_at=x["ended_at"] + limit * 7))(root)

    def future(root):
        shift = 10 * 365.25 * 86400
        edit_json(C.RUNNER, lambda x: x.update(started_at=x["started_at"] + shift,
                                                     ended_at=x["ended_at"] + shift))(root)

        def later(label, r):
            r["process"]["started_at"] += shift
            r["process"]["ended_at"] += shift
        edit_runs(later)(root)

    def workload_edited(root, receipt_too: bool):
        """The stored entry module of the workload changed; with receipt_too, its row and
        the receipt's digest re-derived to match, as a forger would."""
        from harness.plan import workload

        receipt = _load(root, C.WORKLOAD)
        row = next(r for r in receipt["files"] if r["path"].endswith(".py"))
        path = root / (C.WORKLOAD_DIR + row["path"])
        path.write_bytes(path.read_bytes() + b"\n# the code that was not measured\n")
        if receipt_too:
            row.update(size=path.stat().st_size, sha256=sha256_file(path))
            receipt["digest"] = workload.digest(receipt["files"])
            _dump(root, C.WORKLOAD, receipt)

    def workload_extra(root):
        (root / (C.WORKLOAD_DIR + "extra.py")).write_text("print('not measured')\n")

    def workload_dropped(root):
        from harness.plan import workload

        receipt = _load(root, C.WORKLOAD)
        gone = receipt["files"].pop()
        (root / (C.WORKLOAD_DIR + gone["path"])).unlink()
        receipt["digest"] = workload.digest(receipt["files"])
        _dump(root, C.WORKLOAD, receipt)

    m = Mutation
    return [
        m("workload: a stored file edited, its receipt kept, re-hashed",
          forge(lambda root: workload_edited(root, False), derive=False), "[files]", rule="files"),
        m("workload: a stored file edited with its receipt row and digest, re-derived",
          forge(lambda root: workload_edited(root, True)), "[identity]", rule="identity"),
        m("workload: a file under data/workload/ the receipt does not list, re-hashed",
          forge(workload_extra, derive=False), "[files]", rule="files"),
        m("workload: a stored file and its row dropped, digest re-derived",
          forge(workload_dropped), "[identity]", rule="identity"),
        m("records: B1 imported from a workload folder of another digest, re-derived",
          forge(run("B1", lambda r: r.update(workload_sha256="0" * 64))), "[identity]", rule="identity"),
        m("records: variant and SHA of every run swapped between A and B, re-derived",
          forge(swap_identities), "[identity]", rule="identity"),
        m("records: B1 says it is a base run, re-derived", forge(run("B1", lambda r: r.update(variant="base"))),
          "[identity]", rule="identity"),
        m("receipts/revisions.json: candidate SHA changed, re-hashed",
          forge(edit_json(C.REVISIONS, lambda r: r["candidate"].update(sha="0" * 40)), derive=False),
          "[identity]", rule="identity"),
        m("environment.json: another harness digest, re-hashed",
          forge(edit_json(C.ENVIRONMENT, lambda e: e.update(harness_source_sha256="0" * 64)), derive=False),
          "[identity]", rule="identity"),
        m("golden.json: an item's digest changed, re-derived",
          forge(edit_json(C.GOLDEN, lambda g: next(iter(g["items"].values())).update(error=None, fields={}))),
          "[identity]", rule="identity"),
        m("campaign.json: threshold raised to 1000, re-derived",
          forge(edit_json(C.CAMPAIGN_JSON, lambda c: c.update(threshold=1000.0))), "[parsing] threshold",
          rule="parsing"),
        m("campaign.json: threshold raised to 0.2, within its bounds (campaign.yaml keeps its own), re-derived",
          forge(edit_json(C.CAMPAIGN_JSON, lambda c: c.update(threshold=0.2))), "[campaign] threshold",
          rule="campaign", verify_only=True),
        m("campaign.json: order cut to two cherry-picked runs, everything else made consistent",
          forge(cherry_pick), "[campaign]", rule="campaign", verify_only=True),
        m("campaign.json: labels repeat B1 and drop B2, re-hashed",
          forge(edit_json(C.CAMPAIGN_JSON, lambda c: c.update(labels=["A1", "B1", "B1", "A2"])), derive=False),
          "[plan]", rule="plan"),
        m("runner.json: runs_started lowered below the records present, re-derived",
          forge(edit_json(C.RUNNER, lambda r: r.update(runs_started=3))), "[plan]", rule="plan"),
        m("records: B2's index changed, re-derived", forge(run("B2", lambda r: r.update(index=7))), "[plan]",
          rule="plan"),
        m("records: status ok with a negative exit code, re-derived",
          forge(run("B1", lambda r: r.update(exit_code=-9))), "[status]", rule="status"),
        m("records: A2 ok although the ledger and logs show it never ran, re-derived",
          forge(ghost_run), "[ledger]", rule="ledger"),
        m("bag-info.txt: Abba-Status failed while the payload says complete",
          bag_info(r"^Abba-Status: .*$", "Abba-Status: failed"), "[bag-info]", rule="bag-info"),
        m("bag-info.txt: another base SHA", bag_info(r"^Abba-Base-SHA: .*$", "Abba-Base-SHA: " + "1" * 40),
          "[bag-info]", rule="bag-info"),
        m("bag-info.txt: Payload-Oxum removed", bag_info(r"^Payload-Oxum: .*\n", ""), "no Payload-Oxum",
          rule="bag-info"),
        m("cleanup.json: B1's worker pid differs from its record, re-hashed",
          forge(run("B1", lambda r: r.update(pid=r["pid"] + 1)), derive=False), "[ledger]", rule="ledger"),
        m("cleanup.json: a second worker for B1, re-hashed", forge(edit_json(C.CLEANUP, second_worker),
                                                                   derive=False), "[ledger]", rule="ledger"),
        m("cleanup.json: a process marked absent although verified alive, re-hashed",
          forge(edit_json(C.CLEANUP, alive), derive=False), "[ledger]", rule="ledger"),
        m("records: B1's timed wall longer than its process lived, re-derived",
          forge(run("B1", lambda r: r.update(wall_s=r["process"]["wall_s"] * 3))), "[physics]", rule="physics"),
        m("records: B1's item walls sum past slots x run wall, re-derived",
          forge(run("B1", lambda r: [it.update(wall_s=r["wall_s"]) for it in r["items"]])), "[physics]",
          rule="physics"),
        m("records: negative item CPU, re-derived",
          forge(run("B1", lambda r: r["items"][0].update(cpu_s=-1.0))), "[parsing] items[0].cpu_s", rule="parsing"),
        m("records: stage self CPU above inclusive, re-derived",
          forge(run("As1", lambda r: [s.update(self_cpu_s=s["incl_cpu_s"] + 1.0) for s in r["stages"].values()])),
          "[physics]", rule="physics"),
        m("records: B1's timed and item walls cut a thousandfold (a regression reads as faster), re-derived",
          forge(run("B1", cut_walls)), "[physics]", rule="physics"),
        m("records: A1's item CPU x40, above its item wall, re-derived",
          forge(run("A1", lambda r: [it.update(cpu_s=it["cpu_s"] * 40 + 1.0) for it in r["items"]])),
          "[physics]", rule="physics"),
        m("records: As1's stage CPU x20, above cores x the run's wall, re-derived",
          forge(run("As1", stage_cpu_x20)), "[physics]", rule="physics"),
        m("records: a non-optional stage not installed in stage run Bs1, re-derived",
          forge(run("Bs1", uninstall)), "[identity]", rule="identity"),
        m("records: Bs1 imported a stage from outside its tree, re-derived",
          forge(run("Bs1", lambda r: [r["imported_from"]["stages"].update({k: "tree:../../elsewhere.py"})
                                     for k in r["imported_from"]["stages"]])), "[identity]", rule="identity"),
        m("records: timed run B1 given Bs1's stage figures (the headline would hold the wrappers), re-derived",
          forge(lambda root: run("B1", lambda r: r.update(
              {k: _load(root, C.run_path("Bs1"))[k] for k in ("stages", "stages_installed")}))(root)),
          "[identity]", rule="identity"),
        m("records: A1's process CPU below its items' thread CPU, re-derived",
          forge(run("A1", lambda r: r["machine"].update(process_cpu_s=0.0))), "[physics]", rule="physics"),
        m("records: B1's CPU stall longer than its wall (a quiet run made loaded, or the reverse), re-derived",
          forge(run("B1", lambda r: r["machine"].update(cpu_stall_s=r["wall_s"] * 3 + 1.0))), "[physics]",
          rule="physics"),
        m("records: As1's stage wrapper cost 1 s a call, re-derived",
          forge(run("As1", lambda r: r["machine"].update(stage_wrapper_s=1.0))), "[parsing] machine.stage_wrapper_s",
          rule="parsing"),
        m("campaign.json: stage_rounds changed, the order kept, re-derived",
          forge(edit_json(C.CAMPAIGN_JSON, lambda c: c.update(stage_rounds=c["stage_rounds"] + 1))), "[plan]",
          rule="plan"),
        m("records: B1's process lived past the run timeout, re-derived",
          forge(outlive_timeout), "[physics]", rule="physics"),
        m("environment.json: 64 cores while the records say otherwise, re-hashed",
          forge(edit_json(C.ENVIRONMENT, lambda e: e.update(cores=64)), derive=False), "[identity]",
          rule="identity"),
        m("every clock moved ten years ahead, re-derived", forge(future), "[physics]", rule="physics"),
        m("records: B1's process started before A1's ended, re-hashed",
          forge(overlap, derive=False), "[physics]", rule="physics"),
        m("records: dtype and shape that contradict the stored array, re-derived",
          forge(run("B1", wider)), "[arrays]", rule="arrays"),
        m("records: a field digest naming an absolute path outside the bundle, re-hashed",
          forge(run("B1", outside_digest), derive=False), "not a SHA-256", rule="parsing"),
        m("arrays: a valid array no record references, re-hashed", forge(
            lambda root: add_valid_array(root), derive=False), "[arrays]", rule="arrays"),
        m("logs: A1's log deleted, re-hashed", forge(lambda root: (root / C.log_path("A1")).unlink(),
                                                     derive=False), "[files]", rule="files"),
        m("receipts/inputs.json deleted, re-hashed", forge(lambda root: (root / C.INPUTS).unlink(),
                                                           derive=False), "[files]", rule="files"),
        m("environment.json deleted, re-hashed", forge(lambda root: (root / C.ENVIRONMENT).unlink(),
                                                       derive=False), "[files]", rule="files"),
        m("data/figure.png: a picture added to the payload (bundles hold none), re-hashed",
          forge(lambda root: (root / "data/figure.png").write_bytes(b"\x89PNG\r\n\x1a\n"), derive=False),
          "data/figure.png: [files]", rule="files"),
        m("data/receipts/notes.json: an unknown kind of file, re-hashed",
          forge(lambda root: (root / "data/receipts/notes.json").write_text("{}\n"), derive=False), "[files]",
          rule="files"),
        m("records: the same item id twice in B1, re-derived", forge(run("B1", double_items)),
          "data/runs/B1.json: [plan] items", rule="plan"),
        m("comparison.json: a duplicate key (the first copy says failed), re-hashed", duplicate_key,
          "duplicate key", rule="parsing"),
        m("records: a NaN literal in B1, re-hashed", nan_literal, "[parsing]", rule="parsing"),
        m("records: another schema version, re-derived",
          forge(run("A1", lambda r: r.update(schema=C.SCHEMAS["run"].rsplit("/v", 1)[0] + "/v1"))), "[parsing]", rule="parsing"),
        m("receipts/inputs.json: JSON nested 100,000 deep, re-hashed", deep_json, "[parsing]", hazard=True,
          rule="parsing"),
        m("manifest rows out of order, tag manifest re-hashed", unsorted_manifest, "not sorted", rule="canonical"),
        m("a referenced array declaring 8 GiB (a bomb), re-hashed", array_bomb, "over the budget", hazard=True,
          rule="safety"),
        m("a FIFO at the array path a record names, left out of the manifest", fifo_at_array, "not a regular file",
          hazard=True, rule="safety"),
    ]


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
                 rename("data/runs/A1.json", "data/runs/A9.json"), C.run_path("A1")),
        Mutation("rename data/comparison.json -> data/comparison.json.bak",
                 rename("data/comparison.json", "data/comparison.json.bak"), C.COMPARISON),
        Mutation(f"rename {arrays[0]} -> {arrays[0]}.old", rename(arrays[0], arrays[0] + ".old"), arrays[0]),
        Mutation("symlink data/comparison.json -> outside copy", symlink_outside(C.COMPARISON),
                 C.COMPARISON, hazard=True),
        Mutation("symlink data/runs/A1.json -> outside copy", symlink_outside(C.run_path("A1")),
                 C.run_path("A1"), hazard=True),
        Mutation(f"symlink {arrays[0]} -> outside copy", symlink_outside(arrays[0]), arrays[0], hazard=True),
        Mutation("symlink manifest-sha256.txt -> outside copy", symlink_outside(C.MANIFEST),
                 C.MANIFEST, hazard=True),
        Mutation("symlink data/runs/ (folder) -> outside copy", symlink_dir_outside("data/runs"),
                 "data/runs", hazard=True),
        Mutation("symlink data/receipts/cleanup.json -> outside FIFO",
                 symlink_to_fifo(C.CLEANUP), C.CLEANUP, hazard=True),
        Mutation("FIFO in place of manifest-sha256.txt", fifo_in_place(C.MANIFEST),
                 C.MANIFEST, hazard=True),
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
                 "data/comparison.json: [derived] parity."),
        Mutation("run record B1 deleted, re-hashed", drop_run_record, C.run_path("B1")),
        Mutation("campaign.json run label '../../../forged' (a record outside), re-hashed", label_climbs_out,
                 "[parsing] labels[0]", rule="parsing"),
        Mutation("pickled object array (unpickling creates a marker), re-hashed", pickled_array,
                 "data/arrays/", marker=True),
        Mutation("gzipped .npy header holding code (evaluating creates a marker), re-hashed", code_in_npy_header,
                 "data/arrays/", marker=True),
    ]
    return out + record_rules()


# --- running the checkers -------------------------------------------------------------------
def _judge(code: int | None, lines: list[str], cause: str, note: str = "") -> Check:
    """Refused (exit 1 with problem lines, or 2: unusable, in one line) by a line naming the cause."""
    named = [line for line in lines if cause in line]
    detected = code in (1, 2) and bool(named)
    if code in (1, 2) and not named:
        note = note or f"failed, but no problem line names {cause!r}"
    elif code == 0:
        note = note or "passed the tampered bundle"
    return Check(detected, code, named or lines, note)


def run_verify(root: Path, cause: str, subprocess_timeout: float | None = None) -> Check:
    if subprocess_timeout is None:
        from harness.judge.verify import verify

        report = verify(root)
        code = report.exit_code
        return _judge(code, list(report.problems) if code != 2 else [report.unusable or ""], cause)
    try:
        proc = subprocess.run([sys.executable, "-m", "harness", "verify", str(root)], capture_output=True,
                              text=True, timeout=subprocess_timeout)
    except subprocess.TimeoutExpired:
        return Check(False, None, [], f"hung for {subprocess_timeout:g} s (followed a link or opened a FIFO)")
    lines = [line[5:] for line in proc.stdout.splitlines() if line.startswith("FAIL ")] + \
        [line.split(": error: ", 1)[1] for line in proc.stderr.splitlines() if ": error: " in line]
    return _judge(proc.returncode, lines, cause)


def run_rehash(root: Path, cause: str, timeout: float = 300) -> Check:
    try:
        proc = subprocess.run([sys.executable, "-S", str(REHASH), str(root)], capture_output=True, text=True,
                              timeout=timeout, cwd=os.path.dirname(str(root)) or "/")
    except subprocess.TimeoutExpired:
        return Check(False, None, [], f"hung for {timeout:g} s (followed a link or opened a FIFO)")
    lines = [line[5:] for line in proc.stdout.splitlines() if line.startswith("FAIL ")] + \
        [line.split(": error: ", 1)[1] for line in proc.stderr.splitlines() if ": error: " in line]
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
    with tempfile.TemporaryDirectory(prefix="abba-tamper-") as scratch:
        tmp = Path(scratch)
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
            result = Result(mutation.name, mutation.cause, v, r, mutation.rule, mutation.verify_only, mutation.doc)
            results.append(result)
            if on_result:
                on_result(result)
            shutil.rmtree(work, ignore_errors=True)
    return results


def summary(results: list[Result]) -> str:
    n = len(results)
    only = sum(r.verify_only for r in results)
    return (f"{n} mutations, {sum(r.verify.detected for r in results)} detected by harness verify, "
            f"{sum(r.rehash.detected for r in results if not r.verify_only)} of {n - only} detected by rehash.py "
            f"({only} verify-only: only campaign.yaml can tell)")


def per_rule(results: list[Result]) -> str:
    counts: dict[str, list[int]] = {}
    for r in results:
        c = counts.setdefault(r.rule, [0, 0])
        c[0] += 1
        c[1] += r.detected_by_both
    return "by rule: " + ", ".join(f"{rule} {caught}/{total}" for rule, (total, caught) in sorted(counts.items()))
