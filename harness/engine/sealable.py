"""Whether a campaign's outputs can be sealed: the contract's rules on output fields and on the
records and arrays they make (contract.output_problem, dtype_problem, record_problem and the
checkers' budgets), applied by the runner to the pre-flight's item, before anything is timed, and
to every run as it ends, so a campaign the checkers would refuse stops with one line naming the
field and the fix instead of a bundle that does not verify (issue 45, attack 7).

The rules themselves are the contract's; this module only knows how a run's outputs become a
record and arrays: each field a digest, dtype and shape in the run record (written as
files.dumps_json writes it), each distinct array stored once (content-addressed)."""
from __future__ import annotations

import math
import os
from pathlib import Path

from harness import contract as C
from harness.files import dumps_json

# Room kept in contract.MAX_JSON_BYTES_TOTAL for what is written after the runs (runner.json,
# cleanup.json, comparison.json: each bounded far below it by the item count and MAX_LISTED).
SEAL_RESERVE_BYTES = 8 << 20


def fields_of(described: dict) -> dict:
    """{name: (dtype, shape)} from the fields a worker or a record describes ({name: {digest,
    dtype, shape}} or Output records)."""
    out = {}
    for name, f in described.items():
        dtype, shape = (f.get("dtype"), f.get("shape")) if isinstance(f, dict) else (f.dtype, f.shape)
        out[name] = (dtype, list(shape) if isinstance(shape, (list, tuple)) else [])
    return out


def item_bytes(item_id: str, described: dict) -> int:
    """What one item with these fields adds to a run record, as the record is written."""
    item = {"id": item_id, "wall_s": 0.001, "cpu_s": 0.001,
            "fields": {name: {"digest": "0" * 64, "dtype": dtype, "shape": shape}
                       for name, (dtype, shape) in fields_of(described).items()}, "error": None}
    return len(dumps_json({"items": [item, item]}).encode()) - len(dumps_json({"items": [item]}).encode())


def preflight(item_id: str, described: dict, items: int, runs: int) -> str | None:
    """The pre-flight item's outputs against the contract: its fields (output_problem), and
    a run record of `items` such items, and `runs` of them, against the checkers' limits. One
    line naming the field or the limit, and the fix; None when the campaign can seal."""
    fields = fields_of(described)
    problem = C.output_problem(fields)
    if problem:
        return f"item {item_id!r}: {problem}"
    per_run = items * item_bytes(item_id, described)
    problem = C.record_problem("run", per_run)
    if problem:
        return f"item {item_id!r} gives {len(fields)} output field(s), so a run of {items} such items: {problem}"
    room = C.MAX_JSON_BYTES_TOTAL - SEAL_RESERVE_BYTES
    if per_run * runs > room:
        return (f"item {item_id!r} gives {len(fields)} output field(s): {runs} runs of {items} such items would hold "
                f"about {per_run * runs} bytes of records, over the {room} the checkers read of a bundle's JSON: "
                "fewer or smaller output fields per item, fewer items (workload.items: N), or fewer rounds")
    return None


class Budget:
    """The checkers' limits over a whole campaign, as its runs end: each record's size, every
    record's JSON together, the stored arrays' declared bytes together and each array file's."""

    def __init__(self) -> None:
        self.arrays: dict[str, int] = {}  # digest -> declared bytes, of the ok runs' outputs

    def refusal(self, record, arrays_dir: Path, written: int) -> str | None:
        """Why an ok run's record cannot be sealed (one line), or None; the arrays it adds are
        counted only when it can. written: the bytes of the JSON documents staged so far."""
        for item in record.items:
            problem = C.output_problem(fields_of(item.fields))
            if problem:
                return f"item {item.id!r}: {problem}"
        from harness import records

        size = len(dumps_json(records.to_json(record)).encode())
        problem = C.record_problem("run", size)
        if problem:
            return problem
        room = C.MAX_JSON_BYTES_TOTAL - SEAL_RESERVE_BYTES
        if written + size > room:
            return (f"the records would hold {written + size} bytes of JSON, over the {room} the checkers read of a "
                    "bundle: fewer or smaller output fields per item, fewer items or fewer rounds")
        new = {}
        for item in record.items:
            for f in item.fields.values():
                m = C.DTYPE_RE.match(f.dtype)  # output_problem held each dtype to it above
                if f.digest not in self.arrays and m:
                    new[f.digest] = math.prod(f.shape) * int(m.group(3))
        total = sum(self.arrays.values()) + sum(new.values())
        if total > C.DEFAULT_MAX_ARRAY_BYTES:
            return (f"the stored outputs would declare {total} bytes in all, over the {C.DEFAULT_MAX_ARRAY_BYTES} the "
                    "checkers inflate by default (--max-array-bytes): outputs that differ from run to run are each "
                    "stored; return smaller or deterministic outputs")
        limit = next(limit for kind, _p, _w, limit in C.FILE_KINDS if kind == "array") or C.MAX_FILE_BYTES
        for digest in new:
            path = arrays_dir / f"{digest}{C.ARRAY_SUFFIX}"
            if os.path.isfile(path) and path.stat().st_size > limit:
                return (f"an output array is {path.stat().st_size} bytes compressed, over the {limit} an array file may "
                        "have: return a smaller output")
        self.arrays.update(new)
        return None

