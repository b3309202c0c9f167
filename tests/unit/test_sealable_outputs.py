"""Issue 45, attack 7: outputs the contract refuses are found before the first timed run, not
after the whole campaign. 300 output fields, a 5,000-character field name, a record too large
for the checkers: the pre-flight refuses each in one line naming the field and the fix, and no
timed run starts. An item whose outputs break a rule only in a later run fails that run with
the reason, in a bundle that verifies, and so does the run whose record would take the bundle's
JSON past what the checkers read. Long double (float128, complex256), whose padding bytes
differ from process to process, is refused with its reason where an output is stored and by
both checkers; the divergence report reads any width without a traceback."""
from __future__ import annotations

import gzip
import io

import numpy as np
import pytest

from checks_support import problems
from fakes import Model, ModelLauncher, run_fake
from harness import contract as C, rehash, rules as R
from harness.bundle import arrays
from harness.bundle.model import Mismatch
from harness.comparison import parity
from harness.engine import sealable
from harness.engine.launch import FakeClock
from harness.engine.runner import PreflightError


def many_fields(n: int):
    return lambda item, label: {f"f{k}": np.array([k], dtype=np.int64) for k in range(n)}


def refused_before_any_run(tmp_path, model: Model, **fields) -> str:
    launcher = ModelLauncher(model)
    with pytest.raises(PreflightError) as refused:
        run_fake(tmp_path, launcher=launcher, **fields)
    assert not (tmp_path / "bundle").exists()
    started = [p["run"] for p in launcher.processes]
    assert started and set(started) <= set(C.PREFLIGHT_RUNS), started  # nothing timed
    lines = refused.value.problems
    assert all("\n" not in line for line in lines)
    return lines[0]


def test_300_output_fields_are_refused_by_the_pre_flight(tmp_path):
    line = refused_before_any_run(tmp_path, Model(outputs=many_fields(300)))
    assert "outputs: item 'item-0': 300 output fields; a bundle holds at most 256 per item" in line
    assert "return fewer" in line


def test_a_5000_character_field_name_is_refused_by_the_pre_flight(tmp_path):
    name = "x" * 5000
    line = refused_before_any_run(tmp_path, Model(outputs=lambda item, label: {name: np.zeros(1)}))
    assert "has 5000 characters; a field name has 1 to 128: give it a shorter name" in line
    assert len(line) < 600  # the name is shown cut, not whole


def test_a_record_the_checkers_would_refuse_is_refused_by_the_pre_flight(tmp_path):
    """256 fields per item is within the rule, but 400 such items make a run record over 8 MiB."""
    line = refused_before_any_run(tmp_path, Model(outputs=many_fields(256), items=400))
    assert "so a run of 400 such items: its record would be" in line and "a run record may have" in line


def test_outputs_that_break_a_rule_only_in_a_later_run_fail_that_run_with_the_reason(tmp_path):
    """Fine in the pre-flight and the first runs, 300 fields in B2: B2 fails naming why, the
    campaign ends there, and the sealed bundle verifies (a failure, not a bundle the checkers refuse)."""
    def outputs(item, label):
        return many_fields(300 if label == "B2" else 1)(item, label)

    outcome, _ = run_fake(tmp_path, Model(outputs=outputs), rounds=4, seed=1)
    failed = [r for r in outcome.comparison.runs if r.status != "ok"]
    assert [r.label for r in failed] == ["B2"]
    assert outcome.comparison.status == "failed"
    assert "B2: outputs: item 'item-0': 300 output fields" in outcome.comparison.reason
    assert problems(outcome.out) == ([], [])


def test_the_run_whose_record_would_pass_the_checkers_json_budget_fails_naming_the_bytes(tmp_path, monkeypatch):
    """The checkers read at most MAX_JSON_BYTES_TOTAL of a bundle's JSON: the run whose record
    would take the JSON documents written so far past it (less the room kept for what is written
    after the runs) fails naming the bytes, and the failed bundle verifies. The same campaign
    sealed beside it, on a clock from the same start, says how many bytes each document has: the
    count is theirs, to the byte."""
    start = FakeClock().start
    reference, _ = run_fake(tmp_path / "a", launcher=ModelLauncher(Model(), clock=FakeClock(start)), rounds=4, seed=1)
    sizes = {p.relative_to(reference.out).as_posix(): p.stat().st_size for p in (reference.out / "data").rglob("*")}
    first = sum(size for rel, size in sizes.items()
                if C.file_kind(rel) in ("campaign", "environment", "revisions", "inputs", "workload", "builds"))
    labels = [label for label, _ in R.labels(reference.comparison.order)]
    upto = first + sum(sizes[C.run_path(label)] for label in labels[:3])
    with monkeypatch.context() as m:
        m.setattr(C, "MAX_JSON_BYTES_TOTAL", sealable.SEAL_RESERVE_BYTES + upto - 1)
        outcome, _ = run_fake(tmp_path / "b", launcher=ModelLauncher(Model(), clock=FakeClock(start)), rounds=4, seed=1)
    assert [r.label for r in outcome.comparison.runs if r.status != "ok"] == [labels[2]]
    assert outcome.comparison.status == "failed"
    assert f"outputs: the records would hold {upto} bytes of JSON, over the {upto - 1} the checkers read" \
        in outcome.comparison.reason
    assert problems(outcome.out) == ([], [])


def test_long_double_is_refused_where_it_is_stored_with_the_reason(tmp_path):
    for dtype in (np.longdouble, np.clongdouble):
        value = np.ones(3, dtype=dtype)
        if value.dtype.itemsize not in (12, 16, 32):  # a machine whose long double is a double: nothing to refuse
            continue
        with pytest.raises(arrays.ArrayError) as refused:
            arrays.store(value, tmp_path)
        assert "long double" in str(refused.value) and "astype(np.float64)" in str(refused.value)
    assert C.dtype_problem("<f16") == C.LONG_DOUBLE and C.dtype_problem("<c32") == C.LONG_DOUBLE
    assert C.dtype_problem("<f8") is None and C.dtype_problem("|b1") is None and C.dtype_problem("<c16") is None
    # the worker's output protocol: one line, naming the field
    from harness.worker.main import write_outputs

    if np.dtype(np.longdouble).itemsize == 16:
        with pytest.raises(SystemExit) as stopped:
            write_outputs("i0", 0, {"mean": np.ones(2, dtype=np.longdouble)}, tmp_path)
        assert "field 'mean': long double" in str(stopped.value) and "\n" not in str(stopped.value)


def test_the_fix_the_refusal_names_keeps_the_value_bytes_and_repeats():
    if np.dtype(np.longdouble).itemsize != 16 or np.finfo(np.longdouble).nmant != 63:
        pytest.skip("not x86's 80-bit long double")
    x = np.array([1 / 3, 2.5], dtype=np.longdouble)
    kept = x.view(np.uint8).reshape(x.shape + (16,))[..., :10]
    assert kept.shape == (2, 10) and C.dtype_problem(arrays.to_numpy(kept).dtype.str) is None
    assert kept.tobytes() == np.array([1 / 3, 2.5], dtype=np.longdouble).view(np.uint8).reshape(2, 16)[:, :10].tobytes()


def npy_gz(array_bytes: bytes, descr: str, shape: tuple) -> bytes:
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, header)
    return gzip.compress(buf.getvalue() + array_bytes, mtime=0)


def test_both_checkers_refuse_a_stored_long_double_array():
    raw = gzip.decompress(npy_gz(b"\x00" * 32, "<f16", (2,)))
    with pytest.raises(ValueError) as refused:
        rehash.npy_header(io.BytesIO(raw))
    assert "long double" in str(refused.value)


def test_the_divergence_report_reads_any_width_without_a_traceback(tmp_path):
    """Two float128 arrays written before the refusal (or by hand), one value apart in the
    padding only in one element: the report says how many elements differ instead of raising."""
    one = (b"\x01" * 10 + b"\x00" * 6) * 3
    other = (b"\x01" * 10 + b"\x00" * 6) * 2 + b"\x01" * 10 + b"\xff" * 6
    digests = []
    for k, data in enumerate((one, other)):
        digest = f"{k:064x}"
        (tmp_path / f"{digest}{C.ARRAY_SUFFIX}").write_bytes(npy_gz(data, "<f16", (3,)))
        digests.append(digest)
    rows = parity.divergence([Mismatch(run="B1", item="i0", field="x", reason="bytes differ",
                                       reference_digest=digests[0], digest=digests[1])], tmp_path)
    assert len(rows) == 1 and rows[0]["differing"] == 1 and rows[0]["elements"] == 3
    assert rows[0]["max_ulp"] is None  # no ULP for a float without IEEE bits of its own width
    # complex: differing elements, not bytes
    a, b = np.array([1 + 1j, 2 + 2j], dtype=np.complex128), np.array([1 + 1j, 2 + 3j], dtype=np.complex128)
    for k, value in enumerate((a, b)):
        (tmp_path / f"{k + 2:064x}{C.ARRAY_SUFFIX}").write_bytes(npy_gz(value.tobytes(), "<c16", (2,)))
    rows = parity.divergence([Mismatch(run="B1", item="i0", field="z", reason="bytes differ",
                                       reference_digest=f"{2:064x}", digest=f"{3:064x}")], tmp_path)
    assert rows[0]["differing"] == 1
