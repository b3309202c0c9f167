"""Parity: every field of every item of every run against the reference run (the first
base run), byte for byte through the array digests; recorded errors must match too. Where
fields differ, the divergence report says by how much."""
from __future__ import annotations

import math

from pathlib import Path

MAX_LISTED = 50


def _items(record: dict) -> dict[str, dict]:
    return {item["id"]: item for item in record.get("items", [])}


def compare_runs(reference: dict, others: list[dict]) -> dict:
    ref_items = _items(reference)
    fields_compared = fields_identical = 0
    errors_identical = True
    mismatches = []
    for run in others:
        items = _items(run)
        for item_id in sorted(set(ref_items) | set(items)):
            ref, other = ref_items.get(item_id), items.get(item_id)
            if ref is None or other is None:
                mismatches.append({"run": run["label"], "item": item_id, "field": None,
                                   "reason": f"item missing from {reference['label'] if ref is None else run['label']}"})
                continue
            if ref["error"] != other["error"]:
                errors_identical = False
                mismatches.append({"run": run["label"], "item": item_id, "field": None,
                                   "reason": f"error differs: {_describe_error(ref['error'])} vs "
                                             f"{_describe_error(other['error'])}"})
            for name in sorted(set(ref["fields"]) | set(other["fields"])):
                fields_compared += 1
                a, b = ref["fields"].get(name), other["fields"].get(name)
                if a is not None and b is not None and a["digest"] == b["digest"]:
                    fields_identical += 1
                    continue
                if a is None or b is None:
                    reason = f"field missing from {reference['label'] if a is None else run['label']}"
                elif (a["dtype"], a["shape"]) != (b["dtype"], b["shape"]):
                    reason = f"{a['dtype']}{a['shape']} vs {b['dtype']}{b['shape']}"
                else:
                    reason = "bytes differ"
                mismatches.append({"run": run["label"], "item": item_id, "field": name, "reason": reason,
                                   "reference_digest": a and a["digest"], "digest": b and b["digest"]})
    return {
        "reference": reference["label"],
        "items": len(ref_items),
        "fields_compared": fields_compared,
        "fields_identical": fields_identical,
        "error_returns": sum(1 for item in ref_items.values() if item["error"] is not None),
        "errors_identical": errors_identical,
        "mismatch_count": len(mismatches),
        "mismatches": mismatches[:MAX_LISTED],
    }


def _describe_error(error: dict | None) -> str:
    return "no error" if error is None else f"{error['type']}: {error['message'][:80]}"


def compare_golden(golden: dict, runs: list[dict]) -> dict:
    """Historical frozen parity: every item a run has must carry the golden digests
    (a quick campaign runs a subset of the golden items; an item the golden file lacks fails)."""
    expected = golden.get("items", {})
    failing = []
    checked = set()
    for run in runs:
        items = _items(run)
        bad = 0
        for item_id in sorted(items):
            want, got = expected.get(item_id), items[item_id]
            fields = {name: f["digest"] for name, f in got["fields"].items()}
            if want is None or want.get("fields", {}) != fields or want.get("error") != got["error"]:
                bad += 1
        checked |= set(items)
        if bad:
            failing.append({"run": run["label"], "items_differing": bad})
    return {"checked": True, "items": len(expected), "items_checked": len(checked & set(expected)),
            "runs": len(runs), "identical": not failing, "failing": failing}


def divergence(mismatches: list[dict], arrays_dir: Path) -> list[dict]:
    """How far apart differing arrays are: elements differing, max abs and ULP difference.
    Both arrays are streamed side by side in chunks: memory stays a few MB whatever their size."""
    from harness import tensors

    out = []
    for m in mismatches:
        if not m.get("field") or not m.get("reference_digest") or not m.get("digest"):
            continue
        row = {"run": m["run"], "item": m["item"], "field": m["field"]}
        try:
            with tensors.stream(tensors.array_path(arrays_dir, m["reference_digest"])) as (dt_a, shape_a, chunks_a), \
                    tensors.stream(tensors.array_path(arrays_dir, m["digest"])) as (dt_b, shape_b, chunks_b):
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
    for a, b in pairs:
        ia, ib = _as_bits(a), _as_bits(b)
        differing += int(np.count_nonzero(ia != ib))
        if dtype.kind == "f":
            with np.errstate(invalid="ignore", over="ignore"):
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
            finite = diff[np.isfinite(diff)]
            if finite.size:
                max_abs = max(max_abs or 0.0, float(finite.max()))
            if a.size:
                max_ulp = max(max_ulp, _max_ulp(ia, ib))
            nan_mismatch += int(np.count_nonzero(np.isnan(a) != np.isnan(b)))
        elif dtype.kind in "biu" and a.size:
            d = int(np.abs(a.astype(np.int64) - b.astype(np.int64)).max())
            max_abs = d if max_abs is None else max(max_abs, d)
    row = {"kind": str(dtype), "elements": int(elements), "differing": differing, "max_abs": max_abs}
    if dtype.kind == "f":
        row.update(max_ulp=max_ulp, nan_mismatch=nan_mismatch, note="float values differ")
    else:
        row["note"] = "count or mask changed" if dtype.kind in "biu" else "values differ"
    return row


def _as_bits(a):
    import numpy as np

    if a.dtype.kind in "fc" or a.dtype.kind == "b":
        return a.view(np.dtype(f"<u{a.dtype.itemsize}")) if a.dtype.kind != "c" else a.view(np.uint8)
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


def explain(comparison: dict) -> str:
    """Why parity failed, by class (outputs, recorded errors, call counts, golden), naming
    the first differing item or stage and, for call counts, the fix."""
    p = comparison.get("parity") or {}
    if p.get("note"):
        return p["note"]
    reasons = []
    mismatches = p.get("mismatches") or []
    outputs = [m for m in mismatches if m.get("field")]
    if outputs:
        m = outputs[0]
        reasons.append(f"outputs differ in {p.get('mismatch_count', len(mismatches))} place(s), first "
                       f"{m.get('run')} item {m.get('item')} field {m.get('field')} ({m.get('reason')})")
    elif mismatches:
        m = mismatches[0]
        reasons.append(f"items differ, first {m.get('run')} item {m.get('item')}: {m.get('reason')}")
    if p.get("errors_identical") is False:
        reasons.append("recorded errors differ between base and candidate")
    if p.get("call_counts_identical") is False:
        reasons.append(_call_counts(comparison))
    golden = p.get("golden")
    if isinstance(golden, dict) and not golden.get("identical"):
        failing = golden.get("failing") or [{}]
        reasons.append(f"golden digests differ ({failing[0].get('items_differing')} item(s) in run "
                       f"{failing[0].get('run')})")
    return "; ".join(reasons) or "outputs differ between base and candidate"


def _call_counts(comparison: dict) -> str:
    for name, row in (comparison.get("stages") or {}).items():
        calls = row.get("calls_per_run")
        if not isinstance(calls, dict):
            continue
        if set(calls) == {"base", "candidate"} and row.get("calls") == "equal":
            return (f"stage call counts differ: '{name}' is called {calls['base']} times per base run and "
                    f"{calls['candidate']} per candidate run; if the change is meant to call it less, mark it "
                    f"`calls: per_variant` in the campaign's stages")
        per_run = ", ".join(f"{label} {n}" for label, n in calls.items())
        return f"stage call counts differ between runs of one variant: '{name}' ({per_run})"
    return "stage call counts differ"


def fields_per_pair(comparison: dict) -> int | None:
    """fields_compared counts every ok run against the reference; per pair is that over
    the ok runs other than the reference (768 per pair = 2304 over ABBA's three pairs)."""
    p = comparison.get("parity") or {}
    others = sum(1 for r in comparison.get("runs") or [] if r.get("status") == "ok") - 1
    total = p.get("fields_compared")
    if not isinstance(total, int) or others < 1 or total % others:
        return None
    return total // others
