"""Parity: every field of every item of every run against the reference run (the first
base run), byte for byte through the array digests; recorded errors must match too. Where
fields differ, the divergence report says by how much; with `parity: {max_ulp: N}` floats may
differ by at most N units in the last place (then the outputs "agree", never "identical").
`explain`, `divergence_lines` and `fields_per_pair` read a verified comparison (its model)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness import contract as C
from harness import rules as R
from harness.bundle import model as M

if TYPE_CHECKING:
    from harness.bundle.model import Comparison


@dataclass(frozen=True)
class Counts:
    """What compare_runs counted against the reference run (comparison.json's parity holds each)."""
    reference: str
    items: int
    fields_compared: int
    fields_identical: int
    error_returns: int
    errors_identical: bool
    mismatch_count: int


def compare_runs(reference, others: list) -> tuple[Counts, list[dict]]:
    """parity's counts against the reference run, and every mismatch in parity's row form (the
    shared rules.tolerance_section reads and marks them; comparison.json lists the first
    MAX_LISTED)."""
    ref_items = reference.item_map()
    fields_compared = fields_identical = 0
    errors_identical = True
    mismatches = []
    for run in others:
        items = run.item_map()
        for item_id in sorted(set(ref_items) | set(items)):
            ref, other = ref_items.get(item_id), items.get(item_id)
            if other is None:  # which items a run holds is the plan rule's (a suite's decided benchmarks leave)
                continue
            if ref is None:
                mismatches.append({"run": run.label, "item": item_id, "field": None,
                                   "reason": f"item missing from {reference.label}"})
                continue
            if ref.error != other.error:
                errors_identical = False
                mismatches.append({"run": run.label, "item": item_id, "field": None,
                                   "reason": f"error differs: {_describe_error(ref.error)} vs "
                                             f"{_describe_error(other.error)}"})
            for name in sorted(set(ref.fields) | set(other.fields)):
                fields_compared += 1
                a, b = ref.fields.get(name), other.fields.get(name)
                if a is not None and b is not None and a.digest == b.digest:
                    fields_identical += 1
                    continue
                if a is None or b is None:
                    reason = f"field missing from {reference.label if a is None else run.label}"
                elif (a.dtype, a.shape) != (b.dtype, b.shape):
                    reason = f"{a.dtype}{a.shape} vs {b.dtype}{b.shape}"
                else:
                    reason = "bytes differ"
                mismatches.append({"run": run.label, "item": item_id, "field": name, "reason": reason,
                                   "reference_digest": a and a.digest, "digest": b and b.digest})
    return Counts(reference=reference.label, items=len(ref_items), fields_compared=fields_compared,
                  fields_identical=fields_identical,
                  error_returns=sum(1 for item in ref_items.values() if item.error is not None),
                  errors_identical=errors_identical, mismatch_count=len(mismatches)), mismatches


def _describe_error(error: dict | None) -> str:
    return "no error" if error is None else f"{error['type']}: {error['message'][:80]}"


def compare_golden(golden: dict, runs: list) -> M.Golden:
    """Historical frozen parity: every item a run has must carry the golden digests (a quick
    campaign runs a subset of the golden items; an item the golden file lacks fails)."""
    expected = golden["items"]
    failing, checked = [], set()
    for run in runs:
        bad = 0
        for item in run.items:
            want = expected.get(item.id)
            fields = {name: f.digest for name, f in item.fields.items()}
            if want is None or want["fields"] != fields or want["error"] != item.error:
                bad += 1
        checked |= {item.id for item in run.items}
        if bad:
            failing.append(M.GoldenFailing(run=run.label, items_differing=bad))
    return M.Golden(items=len(expected), items_checked=len(checked & set(expected)), runs=len(runs),
                    identical=not failing, failing=failing)


def ulp_distance(arrays_dir: Path, digest_a: str, digest_b: str) -> int | None:
    """The most units in the last place between two stored float arrays of one dtype and shape
    (NaN against NaN of any payload: 0; -0.0 against 0.0: 0); None when no tolerance covers the
    difference: another dtype or shape, integers or bools, a NaN against a number, an infinity
    against anything else. harness/rehash.py derives the same with the standard library."""
    return _ulp(arrays_dir, digest_a, digest_b)[0]


def _ulp(arrays_dir: Path, digest_a: str, digest_b: str) -> tuple[int | None, str | None]:
    """ulp_distance, and the name of the float dtype both arrays have (contract.FLOAT_NAMES), or None."""
    import numpy as np

    from harness.bundle import arrays as tensors

    worst = 0
    with tensors.stream(tensors.array_path(arrays_dir, digest_a)) as (dt_a, shape_a, chunks_a), \
            tensors.stream(tensors.array_path(arrays_dir, digest_b)) as (dt_b, shape_b, chunks_b):
        if dt_a != dt_b or tuple(shape_a) != tuple(shape_b) or dt_a.kind != "f" \
                or dt_a.itemsize not in C.FLOAT_NAMES:
            return None, None
        name = C.FLOAT_NAMES[dt_a.itemsize]
        for a, b in zip(chunks_a, chunks_b):
            ia, ib = _as_bits(a), _as_bits(b)
            differ = ia != ib
            if not differ.any():
                continue
            a, b, ia, ib = a[differ], b[differ], ia[differ], ib[differ]
            nan_a, nan_b = np.isnan(a), np.isnan(b)
            both = nan_a & nan_b
            if (nan_a ^ nan_b).any() or (np.isinf(a) | np.isinf(b))[~both].any():
                return None, name
            keep = ~both
            if keep.any():
                worst = max(worst, _max_ulp(ia[keep], ib[keep]))
    return worst, name


def tolerance(arrays_dir: Path, mismatches: list[dict], max_ulp: int) -> tuple[dict, bool]:
    """comparison.json parity.tolerance and whether every mismatch is a float field within
    max_ulp (rules.tolerance_section, the rule the checkers apply too), with the ULP
    distances of the stored arrays."""
    return R.tolerance_section(mismatches, max_ulp, lambda ref, got: _ulp(arrays_dir, ref, got))


def divergence(mismatches: list[M.Mismatch], arrays_dir: Path) -> list[dict]:
    """How far apart differing arrays are: elements differing, max abs and ULP difference (open
    rows: contract parity.divergence[].**). Both arrays are streamed side by side in chunks: memory
    stays a few MB whatever their size."""
    from harness.bundle import arrays as tensors

    out = []
    for m in mismatches:
        if not m.field or not m.reference_digest or not m.digest:
            continue
        row = {"run": m.run, "item": m.item, "field": m.field}
        try:
            with tensors.stream(tensors.array_path(arrays_dir, m.reference_digest)) as (dt_a, shape_a, chunks_a), \
                    tensors.stream(tensors.array_path(arrays_dir, m.digest)) as (dt_b, shape_b, chunks_b):
                if dt_a != dt_b or shape_a != shape_b:
                    out.append({**row, "kind": f"{dt_a}", "elements": math.prod(shape_a),
                                "note": f"dtype/shape changed: {dt_a}{list(shape_a)} -> {dt_b}{list(shape_b)}"})
                    continue
                row.update(_distance(dt_a, math.prod(shape_a), zip(chunks_a, chunks_b)))
        except (OSError, ValueError, EOFError) as exc:
            out.append({**row, "note": f"arrays unreadable: {exc}"})
            continue
        out.append(row)
    return out


def _distance(dtype, elements: int, pairs) -> dict:
    """Differing elements, max abs (and for floats max ULP and NaN mismatches) over chunk pairs."""
    import numpy as np

    differing, max_abs, max_ulp, nan_mismatch = 0, None, 0, 0
    ulp = dtype.kind == "f" and dtype.itemsize in C.FLOAT_NAMES  # a float of IEEE bits: float16, 32, 64
    for a, b in pairs:
        ia, ib = _as_bits(a), _as_bits(b)
        differing += int(np.count_nonzero(ia != ib) if ia.ndim == 1 else np.count_nonzero((ia != ib).any(axis=1)))
        if dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            finite = diff[np.isfinite(diff)]
            if finite.size:
                max_abs = max(max_abs or 0.0, float(finite.max()))
            if a.size and ulp:
                max_ulp = max(max_ulp, _max_ulp(ia, ib))
            nan_mismatch += int(np.count_nonzero(np.isnan(a) != np.isnan(b)))
        elif dtype.kind in "biu" and a.size:
            d = int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())
            max_abs = d if max_abs is None else max(max_abs, d)
    row = {"kind": str(dtype), "elements": int(elements), "differing": differing, "max_abs": max_abs}
    if dtype.kind == "f":
        row.update(max_ulp=max_ulp if ulp else None, nan_mismatch=nan_mismatch, note="float values differ")
    else:
        row["note"] = "count or mask changed" if dtype.kind in "biu" else "values differ"
    return row


def _as_bits(a):
    """Each element's bytes as one unsigned integer (bools and floats of 1, 2, 4 or 8 bytes), or as
    a row of bytes (complex, and any width without an unsigned integer: an array written before
    long double was refused): element i differs where row i does."""
    import numpy as np

    if a.dtype.kind in "fb" and a.dtype.itemsize in (1, 2, 4, 8):
        return a.view(np.dtype(f"<u{a.dtype.itemsize}"))
    if a.dtype.kind in "fcb":
        return a.view(np.uint8).reshape(-1, a.dtype.itemsize)
    return a


def _ordered(bits):
    """Map IEEE bit patterns to integers whose difference is the distance in ULPs."""
    import numpy as np

    width = bits.dtype.itemsize * 8
    signed = bits.astype(np.int64) if width < 64 else bits.view(np.int64)
    if width < 64:
        sign = np.int64(1) << (width - 1)
        signed = np.where(signed >= sign, signed - (np.int64(1) << width), signed)
    return np.where(signed < 0, np.int64(-(1 << (width - 1))) - signed, signed)


def _max_ulp(ia, ib) -> int:
    """Largest ULP distance, exact: float64 lost the low bits of 64-bit patterns (1 ULP read 0)."""
    import numpy as np

    oa, ob = _ordered(ia), _ordered(ib)
    ua, ub = oa.view(np.uint64), ob.view(np.uint64)
    return int(np.where(oa >= ob, ua - ub, ub - ua).max())  # modular uint64: the distance is < 2**64


def explain(comparison: Comparison) -> str:
    """Why parity failed, by class (outputs, recorded errors, call counts, golden), naming
    the first differing item or stage and, for call counts, the fix."""
    p = comparison.parity
    if p.note:
        return p.note
    reasons = []
    over = p.tolerance.over_bound if p.tolerance else {}
    if p.tolerance and over:
        dtypes = ", ".join(f"{name}: at most {bound} ULP" for name, bound in over.items())
        reasons.append(f"parity.max_ulp {p.tolerance.max_ulp} is over the bound of the differing fields' "
                       f"dtype ({dtypes}; a wider tolerance lets more than the low half of the significand move), "
                       "so it covers none of them; declare a max_ulp within the bound")
    mismatches = p.mismatches
    unstable = _nondeterministic(comparison)
    if unstable:
        reasons.append(unstable)
    errors = [m for m in mismatches if m.field is None and m.reason.startswith("error differs")]
    # An item that raised in one run has no fields there: its missing fields are the error's.
    raised = {(m.run, m.item) for m in errors}
    outputs = [m for m in mismatches if m.field and (m.run, m.item) not in raised]
    if outputs:
        m = outputs[0]
        reasons.append(f"outputs differ in {p.mismatch_count} place(s), first "
                       f"{m.run} item {m.item} field {m.field} ({m.reason})")
    elif mismatches and not errors:
        m = mismatches[0]
        reasons.append(f"items differ, first {m.run} item {m.item}: {m.reason}")
    if p.errors_identical is False:
        if errors:
            m = errors[0]
            detail = m.reason.removeprefix("error differs: ")
            reasons.append(f"recorded errors differ in {len(errors)} place(s), first {m.run} item "
                           f"{m.item} ({p.reference} vs {m.run}: {detail})")
        else:
            reasons.append("recorded errors differ between base and candidate")
    if p.call_counts_identical is False:
        reasons.append(_call_counts(comparison))
    golden = p.golden
    if golden is not None and not golden.identical:
        first = golden.failing[0] if golden.failing else None
        reasons.append(f"golden digests differ ({first and first.items_differing} item(s) in run "
                       f"{first and first.run})")
    return "; ".join(reasons) or "outputs differ between base and candidate"


def _nondeterministic(comparison: Comparison) -> str | None:
    """Base runs that differ from the reference (the first base run) ran the same code:
    the workload's outputs are not a function of its inputs (a timing, an unseeded random
    value, an address), and parity cannot judge the change until that field goes."""
    p = comparison.parity
    base = {r.label for r in comparison.runs if r.variant == "base"}
    same = [m for m in p.mismatches if m.run in base and m.run != p.reference]
    if not same:
        return None
    fields = sorted({m.field for m in same if m.field})
    m = same[0]
    what = f"field(s) {', '.join(repr(f) for f in fields)}" if fields else "recorded errors"
    return (f"the workload is not deterministic: base runs {p.reference} and {m.run} ran the same "
            f"code and differ in {what} (first item {m.item}); return only what the code computes "
            "from its inputs (a timing or an unseeded random value belongs in metrics()), then re-run")


def _call_counts(comparison: Comparison) -> str:
    for name, row in comparison.stages.items():
        calls = row.calls_per_run
        if not isinstance(calls, dict):
            continue
        if set(calls) == {"base", "candidate"} and row.calls == "equal":
            return (f"stage call counts differ: '{name}' is called {calls['base']} times per base run and "
                    f"{calls['candidate']} per candidate run; if the change is meant to call it less, mark it "
                    f"`calls: per_variant` in the campaign's stages")
        per_run = ", ".join(f"{label} {n}" for label, n in calls.items())
        return f"stage call counts differ between runs of one variant: '{name}' ({per_run})"
    return "stage call counts differ"


def divergence_lines(comparison: Comparison, limit: int = 3) -> list[str]:
    """How far apart differing fields are (comparison.json parity.divergence), one line per
    field over every listed run and item, for the output of `harness run`."""
    rows = comparison.parity.divergence
    by_field: dict[str, list[dict]] = {}
    for row in rows:
        by_field.setdefault(str(row.get("field")), []).append(row)
    lines = []
    for name, group in list(by_field.items())[:limit]:
        first = group[0]
        head = (f"divergence: field '{name}' ({first.get('kind')}) in {len(group)} place(s), first "
                f"{first.get('run')} item {first.get('item')}")
        measured = [r for r in group if "differing" in r]
        if not measured:
            lines.append(f"{head}: {first.get('note')}")
            continue
        text = (f"{head}: {sum(r['differing'] for r in measured)} of {sum(r['elements'] for r in measured)} "
                "elements differ")
        abs_values = [r["max_abs"] for r in measured if r.get("max_abs") is not None]
        if abs_values:
            text += f", max abs {max(abs_values):.6g}"
        ulps = [r["max_ulp"] for r in measured if r.get("max_ulp") is not None]
        if ulps:
            text += f", max {max(ulps)} ULP"
        nans = sum(r.get("nan_mismatch") or 0 for r in measured)
        if nans:
            text += f", {nans} NaN where the other is not"
        lines.append(text)
    if len(by_field) > limit:
        lines.append(f"divergence: {len(by_field) - limit} more field(s) in data/comparison.json (parity.divergence)")
    return lines


def fields_per_pair(comparison: Comparison) -> int | None:
    """fields_compared counts every ok run against the reference; per pair is that over
    the ok runs other than the reference (768 per pair = 2304 over ABBA's three pairs)."""
    others = len(comparison.ok_runs()) - 1
    total = comparison.parity.fields_compared
    if others < 1 or total % others:
        return None
    return total // others
