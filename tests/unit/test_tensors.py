"""Array digests count every bit (NaN payloads, -0.0, dtype, shape), inputs are canonicalised
(byte order, memory layout), and the .npy store reads back without pickle. Torch tensors:
tests/campaign/test_torch_arrays.py; the README's one-liner on a real bundle:
tests/process/test_arrays_readme.py."""
from __future__ import annotations

import hashlib
import json

import gzip
import io

import numpy as np
import pytest

from harness.bundle import arrays as tensors
from harness.bundle.arrays import ArrayError


def nan_with_payload(payload: int) -> np.float64:
    return np.array([0x7FF8000000000000 | payload], dtype="<u8").view("<f8")[0]


def reference_digest(a: np.ndarray) -> str:
    """docs/bundle-format.md's array digest formula, written out independently."""
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    head = json.dumps({"dtype": a.dtype.str, "shape": list(a.shape)}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(b"abba-array-v1\n" + head.encode() + b"\n" + a.tobytes(order="C")).hexdigest()


def test_digest_matches_documented_formula():
    for a in (np.arange(6, dtype="<f4").reshape(2, 3), np.array([True, False]), np.zeros(0, dtype="<i2"),
              np.array(3.5)):
        assert tensors.digest(a) == reference_digest(a)


def test_nan_payloads_differ():
    a, b = nan_with_payload(1), nan_with_payload(2)
    assert np.isnan(a) and np.isnan(b)
    assert tensors.digest(np.array([a])) != tensors.digest(np.array([b]))
    assert tensors.digest(np.array([a])) == tensors.digest(np.array([nan_with_payload(1)]))


def test_negative_zero_differs_from_zero():
    assert np.array([-0.0]) == np.array([0.0])
    assert tensors.digest(np.array([-0.0])) != tensors.digest(np.array([0.0]))


def test_dtype_and_shape_changes_differ():
    base = np.arange(6, dtype=np.float64)
    variants = [base.astype(np.float32), base.astype(np.int64), base.reshape(2, 3), base.reshape(3, 2),
                base.reshape(1, 6), base[:5]]
    digests = {tensors.digest(v) for v in variants} | {tensors.digest(base)}
    assert len(digests) == len(variants) + 1
    # Same raw bytes, different dtype: still different.
    raw = np.arange(4, dtype="<i4")
    assert tensors.digest(raw) != tensors.digest(raw.view("<f4"))


def test_big_endian_input_is_canonicalised():
    le = np.array([1.5, -0.0, 2.25], dtype="<f8")
    be = le.astype(">f8")
    assert be.tobytes() != le.tobytes()
    assert tensors.digest(be) == tensors.digest(le)
    assert tensors.describe(be)["dtype"] == "<f8"
    assert tensors.digest(np.array([1, 2], dtype=">i4")) == tensors.digest(np.array([1, 2], dtype="<i4"))


def test_memory_layout_does_not_matter():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    assert tensors.digest(np.asfortranarray(a)) == tensors.digest(a)
    assert tensors.digest(a.T) == tensors.digest(np.ascontiguousarray(a.T))
    assert tensors.digest(a[:, ::2]) == tensors.digest(a[:, ::2].copy())


@pytest.mark.parametrize("array, dtype_str", [
    (np.array([True, False, True]), "|b1"),
    (np.array([-1, 2], dtype=np.int8), "|i1"),
    (np.array([1, 2], dtype=np.int64), "<i8"),
    (np.array([1, 2], dtype=np.uint16), "<u2"),
    (np.array([0.5], dtype=np.float16), "<f2"),
    (np.array([0.5], dtype=np.float32), "<f4"),
    (np.array([0.5], dtype=np.float64), "<f8"),
    (np.array([1 + 2j], dtype=np.complex64), "<c8"),
    (np.array([1 - 0j], dtype=np.complex128), "<c16"),
])
def test_supported_kinds(array, dtype_str):
    info = tensors.describe(array)
    assert info == {"digest": reference_digest(array), "dtype": dtype_str, "shape": list(array.shape)}


def test_bool_and_uint8_with_same_bytes_differ():
    assert tensors.digest(np.array([1, 0], dtype=np.uint8)) != tensors.digest(np.array([True, False]))


@pytest.mark.parametrize("value", [
    np.array([object(), 1], dtype=object),
    np.array(["a", "b"]),
    np.array([b"a"]),
    np.zeros(2, dtype=[("x", "<f4"), ("y", "<i4")]),
    np.array(["2020-01-01"], dtype="datetime64[D]"),
    [1.0, 2.0],
    "text",
    None,
])
def test_unsupported_values_refused(value):
    with pytest.raises(ArrayError):
        tensors.digest(value)


def test_zero_d_differs_from_one_element():
    assert tensors.describe(np.array(2.5))["shape"] == []
    assert tensors.digest(np.array(2.5)) != tensors.digest(np.array([2.5]))
    assert tensors.digest(np.array([[2.5]])) != tensors.digest(np.array([2.5]))


@pytest.mark.parametrize("value, dtype", [(3, "np.int64"), (2.5, "np.float64"), (True, "np.bool_"),
                                          (1j, "np.complex128")])
def test_python_numbers_are_refused_with_the_dtype_to_name(value, dtype):
    """Issue 21.4: outputs are arrays (README); a Python number's dtype is the platform's
    guess, so the refusal says how to wrap it."""
    with pytest.raises(ArrayError, match=rf"a Python {type(value).__name__} .*not an array: return "
                                         rf"np.array\(value, dtype={dtype}\)"):
        tensors.store(value, "/nonexistent")


def test_numpy_scalar_is_a_zero_d_array():
    assert tensors.describe(np.float64(2.5))["shape"] == []
    assert tensors.digest(np.float64(2.5)) == tensors.digest(np.array(2.5))


def test_store_round_trip_without_pickle(tmp_path):
    arrays = [np.array([nan_with_payload(5), -0.0, 1.0]), np.arange(6, dtype=">i4").reshape(2, 3),
              np.array([True]), np.array([1 + 1j], dtype=np.complex64), np.zeros((0, 3))]
    for a in arrays:
        info = tensors.store(a, tmp_path)
        path = tmp_path / f"{info['digest']}.npy.gz"
        raw = gzip.decompress(path.read_bytes())
        assert raw[:8] == b"\x93NUMPY\x01\x00"  # gzipped .npy, format version 1.0
        back = np.load(io.BytesIO(raw), allow_pickle=False)
        assert back.dtype.byteorder in "<|=" and back.flags.c_contiguous
        assert tensors.digest(back) == info["digest"] == tensors.digest(tensors.load(path))
        assert back.tobytes() == tensors.to_numpy(a).tobytes()


def test_store_writes_each_digest_once(tmp_path):
    a = np.arange(3.0)
    first = tensors.store(a, tmp_path)
    path = tmp_path / f"{first['digest']}.npy.gz"
    mtime = path.stat().st_mtime_ns
    assert tensors.store(a.copy(), tmp_path) == first
    assert path.stat().st_mtime_ns == mtime
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_load_refuses_pickled_arrays(tmp_path):
    path = tmp_path / "evil.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        tensors.load(path)


def test_store_is_deterministic_gzip(tmp_path):
    """Same array, same bytes on disk (no gzip timestamp), so bundles stay reproducible."""
    a, b = tmp_path / "a", tmp_path / "b"
    info = tensors.store(np.arange(100), a)
    tensors.store(np.arange(100), b)
    name = f"{info['digest']}.npy.gz"
    assert (a / name).read_bytes() == (b / name).read_bytes()


def test_an_ingested_output_has_no_file_name_in_its_gzip_header(tmp_path):
    """The worker's plain .npy taken into the store (arrays.ingest, streamed through a temporary
    file named with the runner's pid) carries no file name in its gzip header: equal arrays are
    equal bytes from one campaign to the next, as arrays.store's are."""
    value = np.arange(1000, dtype=np.int64).reshape(10, 100)
    raw = tmp_path / "worker"
    raw.mkdir()
    info = tensors.ingest(raw / tensors.write_raw(value, raw, "out"), tmp_path / "store")
    assert info == tensors.describe(value)
    stored = (tmp_path / "store" / f"{info['digest']}.npy.gz").read_bytes()
    assert stored[3] == 0 and stored[4:8] == bytes(4)  # FLG: no name, comment or extra; MTIME 0
    assert gzip.decompress(stored) == tensors.npy_bytes(value)
