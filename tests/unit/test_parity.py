"""Parity between run records: field, item and recorded-error mismatches, the divergence
report (elements differing, max abs, ULPs, NaN mismatch, integer changes), and
comparison.derive's call-count check."""
from __future__ import annotations

import numpy as np
import pytest

from harness.comparison import derive as comparison, parity
from harness.bundle import arrays as tensors


def item(item_id, arrays_dir=None, error=None, **fields):
    if error is not None:
        return {"id": item_id, "wall_s": 0.01, "cpu_s": 0.01, "fields": {}, "error": error}
    described = {name: (tensors.store(a, arrays_dir) if arrays_dir else tensors.describe(a))
                 for name, a in fields.items()}
    return {"id": item_id, "wall_s": 0.01, "cpu_s": 0.01, "fields": described, "error": None}


def record(label, items, variant=None, stages=None, wall_s=1.0):
    variant = variant or ("base" if label.startswith("A") else "candidate")
    stages = stages or {}
    return {"schema": "abba-harness/run/v1", "label": label, "variant": variant, "index": 0,
            "sha": "0" * 40, "status": "ok", "reason": None, "exit_code": 0, "timer": "perf_counter",
            "wall_s": wall_s, "items": items, "stages": stages,
            "stages_installed": {name: True for name in stages}}


X = np.array([1.0, -0.0, 2.5])


def test_identical_runs():
    ref = record("A1", [item("a", x=X), item("b", error={"type": "ValueError", "message": "bad"})])
    other = record("B1", [item("a", x=X.copy()), item("b", error={"type": "ValueError", "message": "bad"})])
    result = parity.compare_runs(ref, [other])
    assert result["mismatch_count"] == 0 and result["errors_identical"]
    assert result["fields_compared"] == result["fields_identical"] == 1
    assert result["items"] == 2 and result["error_returns"] == 1 and result["reference"] == "A1"


def test_field_mismatch_names_run_item_and_field():
    ref = record("A1", [item("a", x=X, y=X)])
    other = record("B1", [item("a", x=X, y=np.array([1.0, 0.0, 2.5]))])
    result = parity.compare_runs(ref, [other])
    assert result["fields_compared"] == 2 and result["fields_identical"] == 1
    (m,) = result["mismatches"]
    assert (m["run"], m["item"], m["field"], m["reason"]) == ("B1", "a", "y", "bytes differ")
    assert m["reference_digest"] != m["digest"]


def test_dtype_or_shape_change_is_named():
    ref = record("A1", [item("a", x=X)])
    other = record("B1", [item("a", x=X.astype(np.float32))])
    (m,) = parity.compare_runs(ref, [other])["mismatches"]
    assert m["reason"] == "<f8[3] vs <f4[3]"


@pytest.mark.parametrize("missing_in", ["reference", "other"])
def test_missing_item(missing_in):
    full = [item("a", x=X), item("b", x=X)]
    ref = record("A1", full[:1] if missing_in == "reference" else full)
    other = record("B1", full if missing_in == "reference" else full[:1])
    result = parity.compare_runs(ref, [other])
    (m,) = result["mismatches"]
    assert m["item"] == "b" and m["field"] is None
    assert m["reason"] == f"item missing from {'A1' if missing_in == 'reference' else 'B1'}"


def test_missing_field():
    ref = record("A1", [item("a", x=X, y=X)])
    other = record("B1", [item("a", x=X)])
    (m,) = parity.compare_runs(ref, [other])["mismatches"]
    assert m["field"] == "y" and m["reason"] == "field missing from B1"


def test_error_with_a_different_message():
    ref = record("A1", [item("a", error={"type": "ValueError", "message": "window 5 too big"})])
    other = record("B1", [item("a", error={"type": "ValueError", "message": "window 6 too big"})])
    result = parity.compare_runs(ref, [other])
    assert not result["errors_identical"]
    (m,) = result["mismatches"]
    assert "ValueError: window 5 too big vs ValueError: window 6 too big" in m["reason"]


def test_error_type_differs():
    ref = record("A1", [item("a", error={"type": "ValueError", "message": "m"})])
    other = record("B1", [item("a", error={"type": "TypeError", "message": "m"})])
    assert not parity.compare_runs(ref, [other])["errors_identical"]


def test_error_versus_output():
    ref = record("A1", [item("a", x=X)])
    other = record("B1", [item("a", error={"type": "IndexError", "message": "oops"})])
    result = parity.compare_runs(ref, [other])
    assert not result["errors_identical"]
    reasons = [m["reason"] for m in result["mismatches"]]
    assert "error differs: no error vs IndexError: oops" in reasons
    assert "field missing from B1" in reasons


def test_every_other_run_is_compared_to_the_reference():
    ref = record("A1", [item("a", x=X)])
    runs = [record("B1", [item("a", x=X)]), record("B2", [item("a", x=-X)]), record("A2", [item("a", x=X)])]
    result = parity.compare_runs(ref, runs)
    assert [m["run"] for m in result["mismatches"]] == ["B2"]
    assert result["fields_compared"] == 3 and result["fields_identical"] == 2


# --- divergence: how far apart differing arrays are ----------------------------------

def diverge(tmp_path, a, b):
    ref = record("A1", [item("i", tmp_path, f=a)])
    other = record("B1", [item("i", tmp_path, f=b)])
    mismatches = parity.compare_runs(ref, [other])["mismatches"]
    assert len(mismatches) == 1
    (row,) = parity.divergence(mismatches, tmp_path)
    assert (row["run"], row["item"], row["field"]) == ("B1", "i", "f")
    return row


def test_one_ulp(tmp_path):
    a = np.array([1.0, 2.0, 3.0])
    b = a.copy()
    b[1] = np.nextafter(2.0, 3.0)
    row = diverge(tmp_path, a, b)
    assert row["differing"] == 1 and row["elements"] == 3 and row["max_ulp"] == 1
    assert row["max_abs"] == np.spacing(2.0) and row["nan_mismatch"] == 0 and row["kind"] == "float64"


def test_ulps_in_float32_and_across_zero(tmp_path):
    a = np.array([1.0, 0.0], dtype=np.float32)
    b = np.array([np.nextafter(np.float32(1), np.float32(0)), 0.0], dtype=np.float32)
    b = np.array([b[0], 0.0], dtype=np.float32)
    c = a.copy()
    c[0] = np.nextafter(c[0], np.float32(2))
    c[0] = np.nextafter(c[0], np.float32(2))
    c[0] = np.nextafter(c[0], np.float32(2))
    assert diverge(tmp_path, a, c)["max_ulp"] == 3
    tiny = np.nextafter(0.0, 1.0)
    assert diverge(tmp_path, np.array([tiny]), np.array([-tiny]))["max_ulp"] == 2


def test_negative_zero_differs_by_bits_not_value(tmp_path):
    row = diverge(tmp_path, np.array([-0.0, 1.0]), np.array([0.0, 1.0]))
    assert row["differing"] == 1 and row["max_abs"] == 0.0 and row["nan_mismatch"] == 0


def test_nan_mismatch(tmp_path):
    row = diverge(tmp_path, np.array([np.nan, 1.0, 2.0]), np.array([0.5, 1.0, np.nan]))
    assert row["nan_mismatch"] == 2 and row["differing"] == 2
    assert row["max_abs"] == 0.0  # over the pairs where both are numbers


def test_nan_payload_change_is_one_differing_element(tmp_path):
    a = np.array([0x7FF8000000000001, 0x3FF0000000000000], dtype="<u8").view("<f8")
    b = np.array([0x7FF8000000000002, 0x3FF0000000000000], dtype="<u8").view("<f8")
    row = diverge(tmp_path, a, b)
    assert row["differing"] == 1 and row["nan_mismatch"] == 0


def test_integer_count_change(tmp_path):
    row = diverge(tmp_path, np.array([3, 5, 7]), np.array([3, 9, 7]))
    assert row["differing"] == 1 and row["max_abs"] == 4 and row["note"] == "count or mask changed"


def test_bool_mask_change(tmp_path):
    row = diverge(tmp_path, np.array([True, False, True]), np.array([True, True, False]))
    assert row["differing"] == 2 and row["max_abs"] == 1


def test_dtype_change_is_reported_not_compared(tmp_path):
    row = diverge(tmp_path, np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int32))
    assert "dtype/shape changed" in row["note"] and "int64" in row["note"] and "int32" in row["note"]


def test_complex_values_differ(tmp_path):
    row = diverge(tmp_path, np.array([1 + 1j, 2j]), np.array([1 + 1j, 3j]))
    assert row["differing"] >= 1 and row["kind"] == "complex128"


def test_unreadable_arrays_are_a_note_not_a_crash(tmp_path):
    m = {"run": "B1", "item": "i", "field": "f", "reference_digest": "0" * 64, "digest": "1" * 64}
    (row,) = parity.divergence([m], tmp_path)
    assert "arrays unreadable" in row["note"]


# --- comparison.derive: call counts are part of parity -------------------------------

CAMPAIGN = {"name": "t", "order": "ABBA", "labels": ["A1", "B1", "B2", "A2"], "threshold": 0.02,
            "stages": {"s": "m:f"}}
CLEANUP = {"all_absent": True, "processes": []}


def _runs(calls_b2):
    out = []
    for label in ("A1", "B1", "B2", "A2"):
        calls = calls_b2 if label == "B2" else 4
        out.append(record(label, [item("a", x=X), item("b", x=X)],
                          stages={"s": {"calls": calls, "self_cpu_s": 0.1, "incl_cpu_s": 0.2}}))
    return out


def test_call_counts_identical(tmp_path):
    result = comparison.derive(CAMPAIGN, _runs(4), {}, CLEANUP, None, tmp_path)
    assert result["status"] == "complete"
    assert result["parity"]["call_counts_identical"] and result["parity"]["identical"]
    assert result["stages"]["s"]["calls_per_run"] == 4


def test_call_count_change_breaks_parity(tmp_path):
    result = comparison.derive(CAMPAIGN, _runs(5), {}, CLEANUP, None, tmp_path)
    assert result["parity"]["call_counts_identical"] is False
    assert result["parity"]["identical"] is False
    assert result["parity"]["mismatch_count"] == 0  # outputs are all equal: only the counts differ
    assert result["stages"]["s"]["calls_per_run"] == {"A1": 4, "B1": 4, "B2": 5, "A2": 4}


def test_stage_installed_in_one_revision_only_is_not_compared(tmp_path):
    runs = _runs(4)
    for r in runs:
        if r["variant"] == "candidate":
            r["stages"]["s"]["calls"] = 0
            r["stages_installed"] = {"s": False}
    result = comparison.derive(CAMPAIGN, runs, {}, CLEANUP, None, tmp_path)
    assert result["parity"]["call_counts_identical"] and result["parity"]["identical"]
    assert result["stages"]["s"]["candidate_installed"] is False


def test_ulp_distance_is_exact_for_float64_extremes(tmp_path):
    big = np.finfo(np.float64).max
    row = diverge(tmp_path, np.array([big]), np.array([-big]))
    assert row["max_ulp"] == 2 * (0x7FEFFFFFFFFFFFFF)
    row = diverge(tmp_path, np.array([1e300]), np.array([np.nextafter(1e300, np.inf)]))
    assert row["max_ulp"] == 1


def _calls_run(label, variant, calls, installed=True):
    return {"label": label, "variant": variant, "stages": {"step": {"calls": calls}},
            "stages_installed": {"step": installed}}


def test_call_counts_per_variant_may_differ_between_variants_only():
    from harness.comparison.derive import call_counts_hold, calls_per_run

    runs = [_calls_run("A1", "base", 60), _calls_run("B1", "candidate", 10),
            _calls_run("B2", "candidate", 10), _calls_run("A2", "base", 60)]
    assert not call_counts_hold({"stage_calls": {}}, runs)
    assert call_counts_hold({"stage_calls": {"step": "per_variant"}}, runs)
    assert calls_per_run("step", runs) == {"base": 60, "candidate": 10}
    # Within a variant the count must still repeat: a run that calls it once more is caught.
    runs[3] = _calls_run("A2", "base", 61)
    assert not call_counts_hold({"stage_calls": {"step": "per_variant"}}, runs)
    assert calls_per_run("step", runs) == {"A1": 60, "B1": 10, "B2": 10, "A2": 61}


def test_golden_checks_the_items_a_run_has_and_fails_unknown_or_changed_ones():
    from harness.comparison.parity import compare_golden

    def run(label, items):
        return {"label": label, "items": [{"id": i, "fields": {"x": {"digest": d}}, "error": None}
                                          for i, d in items.items()]}

    golden = {"items": {"a": {"fields": {"x": "1"}, "error": None},
                        "b": {"fields": {"x": "2"}, "error": None}}}
    subset = compare_golden(golden, [run("A1", {"a": "1"})])  # a quick campaign: fewer items
    assert subset["identical"] and subset["items_checked"] == 1
    changed = compare_golden(golden, [run("A1", {"a": "1", "b": "3"})])
    assert not changed["identical"] and changed["failing"] == [{"run": "A1", "items_differing": 1}]
    unknown = compare_golden(golden, [run("B1", {"c": "1"})])
    assert not unknown["identical"]
