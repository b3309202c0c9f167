"""Parity between run records (records.RunRecord): field, item and recorded-error mismatches,
the divergence report (elements differing, max abs, ULPs, NaN mismatch, integer changes), the
tolerance of a declared `parity: {max_ulp: N}`, and comparison.derive's call-count check."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import fakes
from harness import records
from harness.bundle import arrays as tensors, model as M
from harness.comparison import derive as comparison, parity


def item(item_id, arrays_dir=None, error=None, **fields):
    """An item whose fields are these arrays (stored under arrays_dir when given), or an error."""
    described = {name: (tensors.store(a, arrays_dir) if arrays_dir else tensors.describe(a))
                 for name, a in fields.items()}
    return fakes.item(item_id, 0.01, fields=described, error=error)


def record(label, items, variant=None, stages=None, wall_s=1.0, installed=None):
    return fakes.run_record(label, items, variant=variant, wall_s=wall_s, stages=stages, stages_installed=installed)


def compare(ref, others):
    """compare_runs' counts with every mismatch beside them (comparison.json lists the first few)."""
    result, mismatches = parity.compare_runs(ref, others)
    return {**records.to_json(result), "mismatches": mismatches}


X = np.array([1.0, -0.0, 2.5])


def test_identical_runs():
    ref = record("A1", [item("a", x=X), item("b", error={"type": "ValueError", "message": "bad"})])
    other = record("B1", [item("a", x=X.copy()), item("b", error={"type": "ValueError", "message": "bad"})])
    result = compare(ref, [other])
    assert result["mismatch_count"] == 0 and result["errors_identical"]
    assert result["fields_compared"] == result["fields_identical"] == 1
    assert result["items"] == 2 and result["error_returns"] == 1 and result["reference"] == "A1"


def test_field_mismatch_names_run_item_and_field():
    ref = record("A1", [item("a", x=X, y=X)])
    other = record("B1", [item("a", x=X, y=np.array([1.0, 0.0, 2.5]))])
    result = compare(ref, [other])
    assert result["fields_compared"] == 2 and result["fields_identical"] == 1
    (m,) = result["mismatches"]
    assert (m["run"], m["item"], m["field"], m["reason"]) == ("B1", "a", "y", "bytes differ")
    assert m["reference_digest"] != m["digest"]


def test_dtype_or_shape_change_is_named():
    ref = record("A1", [item("a", x=X)])
    other = record("B1", [item("a", x=X.astype(np.float32))])
    (m,) = compare(ref, [other])["mismatches"]
    assert m["reason"] == "<f8[3] vs <f4[3]"


def test_an_item_the_reference_lacks_is_a_mismatch_and_one_a_later_run_left_out_is_the_plan_rules():
    """The reference (the first base run) holds every planned item; a later run of a suite holds only
    the benchmarks still undecided (its items are the plan rule's, checked apart), so an item it
    leaves out is no parity mismatch, while one the reference lacks is."""
    full = [item("a", x=X), item("b", x=X)]
    (m,) = compare(record("A1", full[:1]), [record("B1", full)])["mismatches"]
    assert m["item"] == "b" and m["field"] is None and m["reason"] == "item missing from A1"
    result = compare(record("A1", full), [record("B1", full[:1])])
    assert result["mismatches"] == [] and result["fields_identical"] == 1


def test_missing_field():
    ref = record("A1", [item("a", x=X, y=X)])
    other = record("B1", [item("a", x=X)])
    (m,) = compare(ref, [other])["mismatches"]
    assert m["field"] == "y" and m["reason"] == "field missing from B1"


def test_error_with_a_different_message():
    ref = record("A1", [item("a", error={"type": "ValueError", "message": "window 5 too big"})])
    other = record("B1", [item("a", error={"type": "ValueError", "message": "window 6 too big"})])
    result = compare(ref, [other])
    assert not result["errors_identical"]
    (m,) = result["mismatches"]
    assert "ValueError: window 5 too big vs ValueError: window 6 too big" in m["reason"]


def test_error_type_differs():
    ref = record("A1", [item("a", error={"type": "ValueError", "message": "m"})])
    other = record("B1", [item("a", error={"type": "TypeError", "message": "m"})])
    assert not compare(ref, [other])["errors_identical"]


def test_error_versus_output():
    ref = record("A1", [item("a", x=X)])
    other = record("B1", [item("a", error={"type": "IndexError", "message": "oops"})])
    result = compare(ref, [other])
    assert not result["errors_identical"]
    reasons = [m["reason"] for m in result["mismatches"]]
    assert "error differs: no error vs IndexError: oops" in reasons
    assert "field missing from B1" in reasons


def test_every_other_run_is_compared_to_the_reference():
    ref = record("A1", [item("a", x=X)])
    runs = [record("B1", [item("a", x=X)]), record("B2", [item("a", x=-X)]), record("A2", [item("a", x=X)])]
    result = compare(ref, runs)
    assert [m["run"] for m in result["mismatches"]] == ["B2"]
    assert result["fields_compared"] == 3 and result["fields_identical"] == 2


# --- divergence: how far apart differing arrays are ----------------------------------

def diverge(tmp_path, a, b):
    ref = record("A1", [item("i", tmp_path, f=a)])
    other = record("B1", [item("i", tmp_path, f=b)])
    mismatches = compare(ref, [other])["mismatches"]
    assert len(mismatches) == 1
    (row,) = parity.divergence(M.build(list[M.Mismatch], mismatches), tmp_path)
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
    m = M.Mismatch(run="B1", item="i", field="f", reason="bytes differ", reference_digest="0" * 64, digest="1" * 64)
    (row,) = parity.divergence([m], tmp_path)
    assert "arrays unreadable" in row["note"]


# --- comparison.derive: call counts are part of parity -------------------------------

CAMPAIGN = {"name": "t", "order": "ABBA", "labels": ["A1", "B1", "B2", "A2"], "threshold": 0.02,
            "question": "claim", "margin": None, "workload": {"entry": "w:setup"},
            "stages": {"s": "m:f"}, "stage_calls": {}, "parity": {"max_ulp": None}, "instructions": None}
RUNNER = {"reason": None, "items": ["a", "b"], "items_all": ["a", "b"]}
CLEANUP = {"processes": []}


def _typed(campaign: dict) -> records.CampaignRecord:
    """campaign.json's record from the fields above, the rest None (derive reads no other)."""
    full = {f.name: None for f in dataclasses.fields(records.CampaignRecord)}
    full.update(campaign)
    if full["parity"] is not None:
        full["parity"] = records.ParityBound(**full["parity"])
    return records.CampaignRecord(**full)


def derive(runs, arrays_dir, campaign=CAMPAIGN):
    """comparison.json as derive writes it."""
    runner = records.runner_receipt(started_at=0.0, ended_at=0.0, runs_planned=4, runs_started=4, **RUNNER)
    cleanup = records.cleanup_receipt(method="none", **CLEANUP)
    return records.to_json(comparison.derive(_typed(campaign), runs, runner, cleanup, None, arrays_dir,
                                             workload=fakes.WORKLOAD_SHA256))


def _runs(calls_b2, installed_in_candidate=True):
    out = []
    for label in ("A1", "B1", "B2", "A2"):
        calls = calls_b2 if label == "B2" else 4
        installed = installed_in_candidate or label[0] == "A"
        out.append(record(label, [item("a", x=X), item("b", x=X)],
                          stages={"s": {"calls": calls if installed else 0, "self_cpu_s": 0.1, "incl_cpu_s": 0.2}},
                          installed={"s": installed}))
    return out


def test_call_counts_identical(tmp_path):
    result = derive(_runs(4), tmp_path)
    assert result["status"] == "complete", result["reason"]
    assert result["parity"]["call_counts_identical"] and result["parity"]["identical"]
    assert result["parity"]["agree"] and result["parity"]["tolerance"] is None
    assert result["stages"]["s"]["calls_per_run"] == 4


def test_call_count_change_breaks_parity(tmp_path):
    result = derive(_runs(5), tmp_path)
    assert result["parity"]["call_counts_identical"] is False
    assert result["parity"]["identical"] is False and result["parity"]["agree"] is False
    assert result["parity"]["mismatch_count"] == 0  # outputs are all equal: only the counts differ
    assert result["stages"]["s"]["calls_per_run"] == {"A1": 4, "B1": 4, "B2": 5, "A2": 4}


def test_stage_installed_in_one_revision_only_is_not_compared(tmp_path):
    result = derive(_runs(4, installed_in_candidate=False), tmp_path)
    assert result["parity"]["call_counts_identical"] and result["parity"]["identical"]
    assert result["stages"]["s"]["candidate_installed"] is False


def test_ulp_distance_is_exact_for_float64_extremes(tmp_path):
    big = np.finfo(np.float64).max
    row = diverge(tmp_path, np.array([big]), np.array([-big]))
    assert row["max_ulp"] == 2 * (0x7FEFFFFFFFFFFFFF)
    row = diverge(tmp_path, np.array([1e300]), np.array([np.nextafter(1e300, np.inf)]))
    assert row["max_ulp"] == 1


def _calls_run(label, variant, calls, installed=True):
    return fakes.run_record(label, variant=variant, stages={"step": {"calls": calls, "self_cpu_s": 0.0,
                                                                     "incl_cpu_s": 0.0}},
                            stages_installed={"step": installed})


def test_call_counts_per_variant_may_differ_between_variants_only():
    from harness.comparison.derive import call_counts_hold, calls_per_run

    runs = [_calls_run("A1", "base", 60), _calls_run("B1", "candidate", 10),
            _calls_run("B2", "candidate", 10), _calls_run("A2", "base", 60)]
    assert not call_counts_hold(_typed({"stage_calls": {}}), runs)
    assert call_counts_hold(_typed({"stage_calls": {"step": "per_variant"}}), runs)
    assert calls_per_run("step", runs) == {"base": 60, "candidate": 10}
    # Within a variant the count must still repeat: a run that calls it once more is caught.
    runs[3] = _calls_run("A2", "base", 61)
    assert not call_counts_hold(_typed({"stage_calls": {"step": "per_variant"}}), runs)
    assert calls_per_run("step", runs) == {"A1": 60, "B1": 10, "B2": 10, "A2": 61}


def test_golden_checks_the_items_a_run_has_and_fails_unknown_or_changed_ones():
    from harness.comparison.parity import compare_golden
    from harness.records import to_json

    def run(label, items):
        return fakes.run_record(label, [fakes.item(i, fields={"x": {"digest": d, "dtype": "<f8", "shape": [1]}})
                                        for i, d in items.items()])

    golden = {"items": {"a": {"fields": {"x": "1"}, "error": None},
                        "b": {"fields": {"x": "2"}, "error": None}}}
    subset = to_json(compare_golden(golden, [run("A1", {"a": "1"})]))  # a quick campaign: fewer items
    assert subset["identical"] and subset["items_checked"] == 1
    changed = to_json(compare_golden(golden, [run("A1", {"a": "1", "b": "3"})]))
    assert not changed["identical"] and changed["failing"] == [{"run": "A1", "items_differing": 1}]
    unknown = to_json(compare_golden(golden, [run("B1", {"c": "1"})]))
    assert not unknown["identical"]


# --- parity: {max_ulp: N}: floats within N units in the last place agree, never "identical" ----

def mismatches_of(tmp_path, a, b):
    ref = record("A1", [item("i", tmp_path, f=a)])
    other = record("B1", [item("i", tmp_path, f=b)])
    return parity.compare_runs(ref, [other])[1]


def ulps_apart(x, n):
    for _ in range(n):
        x = np.nextafter(x, np.inf)
    return x


def test_tolerance_holds_floats_within_max_ulp(tmp_path):
    a = np.array([1.0, 2.0, -3.0])
    b = a.copy()
    b[0], b[2] = ulps_apart(a[0], 1), ulps_apart(a[2], 3)
    found = mismatches_of(tmp_path, a, b)
    assert parity.ulp_distance(tmp_path, found[0]["reference_digest"], found[0]["digest"]) == 3
    tol, within = parity.tolerance(tmp_path, found, 3)
    assert within and tol == {"max_ulp": 3, "max_ulp_seen": 3, "fields_within": 1, "over_bound": {}}
    assert found[0]["max_ulp"] == 3
    tol, within = parity.tolerance(tmp_path, mismatches_of(tmp_path, a, b), 2)
    assert not within and tol == {"max_ulp": 2, "max_ulp_seen": 3, "fields_within": 0, "over_bound": {}}


@pytest.mark.parametrize("a, b", [
    (np.array([1.0, np.nan]), np.array([1.0, 2.0])),  # a NaN against a number
    (np.array([1.0, np.inf]), np.array([1.0, np.finfo(np.float64).max])),  # an infinity against anything else
    (np.array([3, 5]), np.array([3, 6])),  # integers: no ULP
    (np.array([1.0, 2.0]), np.array([1.0, 2.0], dtype=np.float32)),  # another dtype
    (np.array([1.0, 2.0]), np.array([[1.0, 2.0]])),  # another shape
])
def test_no_tolerance_covers_what_is_not_a_float_moved_in_its_last_places(tmp_path, a, b):
    found = mismatches_of(tmp_path, a, b)
    tol, within = parity.tolerance(tmp_path, found, 2 ** 26)
    assert not within and tol["fields_within"] == 0 and found[0]["max_ulp"] is None


def test_nan_payloads_and_signed_zeros_are_zero_ulp_apart(tmp_path):
    a = np.array([0x7FF8000000000001, 0], dtype="<u8").view("<f8")
    b = np.array([0x7FF8000000000002, 0x8000000000000000], dtype="<u8").view("<f8")  # another NaN, -0.0
    found = mismatches_of(tmp_path, a, b)
    tol, within = parity.tolerance(tmp_path, found, 0)
    assert within and tol["max_ulp_seen"] == 0


def test_derive_agrees_within_a_declared_tolerance_and_says_not_identical(tmp_path):
    near = ulps_apart(X, 1)
    runs = [record(label, [item("a", tmp_path, x=near if label[0] == "B" else X),
                           item("b", tmp_path, x=X)]) for label in ("A1", "B1", "B2", "A2")]
    exact = derive(runs, tmp_path)
    assert exact["parity"]["identical"] is False and exact["parity"]["agree"] is False
    assert exact["parity"]["tolerance"] is None
    declared = derive(runs, tmp_path, {**CAMPAIGN, "stages": {}, "parity": {"max_ulp": 1}})
    p = declared["parity"]
    assert p["agree"] is True and p["identical"] is False and p["mismatch_count"] == 2
    assert p["tolerance"] == {"max_ulp": 1, "max_ulp_seen": 1, "fields_within": 2, "over_bound": {}}
    assert [m["max_ulp"] for m in p["mismatches"]] == [1, 1]


# --- issue 33.6: a tolerance may not span its dtype's range ----------------------------------------

def test_a_tolerance_wider_than_the_dtypes_bound_covers_nothing_there(tmp_path):
    """float32 admits at most 4096 ULP (contract.MAX_ULP): a wider max_ulp is refused for a float32
    field, even one a single ULP apart, and over_bound names the dtype; float64 takes it."""
    a32 = np.array([1.0, 2.0], dtype=np.float32)
    b32 = a32.copy()
    b32[0] = np.nextafter(a32[0], np.float32(np.inf))
    tol, within = parity.tolerance(tmp_path, mismatches_of(tmp_path, a32, b32), 4096)
    assert within and tol["over_bound"] == {}
    tol, within = parity.tolerance(tmp_path, mismatches_of(tmp_path, a32, b32), 4097)
    assert not within and tol == {"max_ulp": 4097, "max_ulp_seen": 1, "fields_within": 0,
                                  "over_bound": {"float32": 4096}}
    a16, b16 = a32.astype(np.float16), b32.astype(np.float16)
    b16[0] = np.nextafter(a16[0], np.float16(np.inf))
    tol, within = parity.tolerance(tmp_path, mismatches_of(tmp_path, a16, b16), 64)
    assert not within and tol["over_bound"] == {"float16": 32}
    a64 = np.array([1.0, 2.0])
    tol, within = parity.tolerance(tmp_path, mismatches_of(tmp_path, a64, ulps_apart(a64, 3)), 4097)
    assert within and tol["over_bound"] == {}


def test_a_constant_output_under_a_huge_tolerance_is_a_mismatch_and_never_equal(tmp_path):
    """Issue 33.6: a candidate that returns one constant for every value, under the widest max_ulp a
    campaign may declare (float64's 2**26), on float32 outputs: parity fails, the line names the
    bound, and no word says equal or identical."""
    from harness import outcomes

    values = np.linspace(-1000.0, 1000.0, 64, dtype=np.float32)
    constant = np.full_like(values, 0.5)
    runs = [record(label, [item("a", tmp_path, x=constant if label[0] == "B" else values)])
            for label in ("A1", "B1", "B2", "A2")]
    result = derive(runs, tmp_path, {**CAMPAIGN, "stages": {}, "parity": {"max_ulp": 2 ** 26}})
    p = result["parity"]
    assert p["agree"] is False and p["identical"] is False
    assert p["tolerance"]["over_bound"] == {"float32": 4096} and p["tolerance"]["fields_within"] == 0
    c = fakes.comparison(**{**result, "stats": {"verdict": "improved"}})
    assert outcomes.exit_code(c) == outcomes.PARITY
    line = outcomes.line(c)
    assert line.startswith("verdict: parity mismatch, timing improved (exit 3)")
    assert "parity.max_ulp 67108864 is over the bound of the differing fields' dtype (float32: at most 4096 ULP; " in line
    assert "equal" not in line and "identical" not in line
