"""Output arrays: canonical form, digest, and a content-addressed store of gzipped `.npy`.

The digest covers dtype, shape and the raw C-contiguous little-endian bytes, so NaN payloads,
-0.0 and dtype or shape changes all count. torch is never imported here: tensors are
converted by duck typing, so a worker that returns numpy arrays never loads torch.

Two sides of one owner: the worker writes each output raw into its run's own folder
(`write_raw`: the code under test runs in the worker, so it never hashes what becomes evidence),
and the runner reads each file bounded, as a hostile file (no link followed, a regular file only,
its header held to the canonical form, its size to its header's, nothing unpickled), hashes it
and stores it into the bundle itself (`ingest`).
"""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import stat
from pathlib import Path

import numpy as np

from harness import contract
from harness.files import atomic_write_bytes

DIGEST_PREFIX = b"abba-array-v1\n"
# Stored as gzipped .npy (stdlib-readable; token ids and NaN-filled fields shrink ~20x),
# named by the array digest, not the file's.
SUFFIX = ".npy.gz"
_SUPPORTED_KINDS = set("biufc")  # bool, int, uint, float, complex: plain bytes, no objects


# What a Python number becomes once the workload wraps it (the hint the refusal gives).
_PY_DTYPES = {bool: "np.bool_", int: "np.int64", float: "np.float64", complex: "np.complex128"}


class ArrayError(ValueError):
    pass


def to_numpy(value) -> np.ndarray:
    """numpy array or torch tensor -> canonical numpy array (C order, little endian)."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        tensor = value.detach().cpu()
        if str(tensor.dtype) == "torch.bfloat16":
            raise ArrayError("bfloat16 has no numpy dtype; convert to float32 or view as int16")
        value = tensor.contiguous().numpy()
    if not isinstance(value, np.ndarray):
        if isinstance(value, np.generic):  # a numpy scalar carries its dtype: a 0-d array
            value = np.asarray(value)
        elif isinstance(value, (bool, int, float, complex)):
            # A Python number has no dtype of its own (int is int32 on some platforms, and
            # unbounded); the digest covers the dtype, so the workload names it.
            raise ArrayError(f"a Python {type(value).__name__} ({value!r:.40}), not an array: return "
                             f"np.array(value, dtype={_PY_DTYPES[type(value)]}) so its dtype is explicit")
        else:
            raise ArrayError(f"expected a numpy array or torch tensor, got {type(value).__name__}: wrap it in "
                             "np.array(..., dtype=...)")
    if value.dtype.kind not in _SUPPORTED_KINDS or value.dtype.fields is not None:
        raise ArrayError(f"unsupported dtype {value.dtype} (only bool, int, uint, float, complex)")
    if value.dtype.byteorder == ">":
        value = value.astype(value.dtype.newbyteorder("<"))
    refused = contract.dtype_problem(value.dtype.str)  # the checkers' rule: long double, among others
    if refused:
        raise ArrayError(refused)
    return np.asarray(value, order="C")  # not ascontiguousarray: it turns 0-d into shape (1,)


def header(dtype_str: str, shape) -> bytes:
    return json.dumps({"dtype": dtype_str, "shape": list(shape)}, sort_keys=True,
                      separators=(",", ":")).encode()


def digest(array: np.ndarray) -> str:
    array = to_numpy(array)
    h = hashlib.sha256(DIGEST_PREFIX)
    h.update(header(array.dtype.str, array.shape))
    h.update(b"\n")
    # ndarray exports the buffer protocol; numpy's stubs declare __buffer__ only for Python 3.12+.
    h.update(memoryview(array).cast("B") if array.size else b"")  # type: ignore[arg-type]
    return h.hexdigest()


def describe(array: np.ndarray) -> dict:
    array = to_numpy(array)
    return {"digest": digest(array), "dtype": array.dtype.str, "shape": list(array.shape)}


def npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, to_numpy(array), version=(1, 0), allow_pickle=False)
    return buf.getvalue()


def array_path(arrays_dir: Path, digest: str) -> Path:
    return Path(arrays_dir) / f"{digest}{SUFFIX}"


def store(array: np.ndarray, arrays_dir: Path) -> dict:
    """Write the array once under its digest; identical outputs across runs share one file."""
    array = to_numpy(array)
    info = describe(array)
    path = array_path(arrays_dir, info["digest"])
    if not path.exists():
        atomic_write_bytes(path, gzip.compress(npy_bytes(array), compresslevel=6, mtime=0))
    return info


def write_raw(array, folder: Path, stem: str) -> str:
    """The worker's side: the canonical array as a plain `.npy` in its own folder; its file name."""
    array = to_numpy(array)
    name = f"{stem}.npy"
    with open(Path(folder) / name, "wb") as fh:
        np.lib.format.write_array(fh, array, version=(1, 0), allow_pickle=False)
    return name


CHUNK = 1 << 20
MAX_RAW_BYTES = 4 << 30  # the most one output file may hold (the contract's arrays total, decompressed)


def ingest(path: str | os.PathLike, arrays_dir: Path | None, limit: int = MAX_RAW_BYTES) -> dict:
    """The runner's side: a worker's raw output file read as hostile input (no link followed, a
    regular file of at most `limit` bytes, a canonical header: a plain little-endian C-order array of
    a supported kind, exactly the bytes its header declares, nothing unpickled), hashed here, and
    stored into arrays_dir under its digest (None: hashed only). {digest, dtype, shape}, or
    ArrayError naming what is wrong."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise ArrayError(f"cannot open it ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ArrayError("not a regular file")
        if st.st_size > limit:
            raise ArrayError(f"{st.st_size} bytes, over the {limit} an output may have")
        try:
            version = np.lib.format.read_magic(fh)
            if version != (1, 0):
                raise ValueError(f".npy version {version}, not the (1, 0) the worker writes")
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh, max_header_size=1 << 12)
        except (ValueError, OSError, SyntaxError) as exc:
            raise ArrayError(f"not an .npy file the worker writes ({str(exc)[:200]})") from None
        if fortran or dtype.hasobject or dtype.fields is not None or dtype.kind not in _SUPPORTED_KINDS:
            raise ArrayError(f"not a plain C-order array of a supported kind ({dtype})")
        if dtype.byteorder == ">" or len(shape) > 32 or any(n < 0 for n in shape):
            raise ArrayError(f"not in canonical form ({dtype.str}, {len(shape)} dimensions)")
        size = math.prod(shape) * dtype.itemsize
        if fh.tell() + size != st.st_size:
            raise ArrayError(f"{st.st_size - fh.tell()} bytes of data, its header declares {size}")
        h = hashlib.sha256(DIGEST_PREFIX)
        h.update(header(dtype.str, shape))
        h.update(b"\n")
        start = fh.tell()
        for data in _chunks(fh, size):
            h.update(data)
        digest_ = h.hexdigest()
        info = {"digest": digest_, "dtype": dtype.str, "shape": list(shape)}
        if arrays_dir is not None:
            dest = array_path(arrays_dir, digest_)
            if not dest.exists():
                fh.seek(start)
                _store_stream(fh, dtype, shape, size, dest)
    return info


def _chunks(fh, size: int):
    """The next `size` bytes of fh, CHUNK at a time; ArrayError if the file ends first."""
    left = size
    while left:
        data = fh.read(min(CHUNK, left))
        if not data:
            raise ArrayError("the file shrank while it was read")
        yield data
        left -= len(data)


def _store_stream(fh, dtype, shape, size: int, dest: Path) -> None:
    """Gzip the canonical .npy (header as `store` writes it, then the data) into dest, atomically."""
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        # filename="": GzipFile would take the temporary file's name (with the runner's pid) into
        # its header, and equal arrays would be unequal bytes from one campaign to the next.
        with open(tmp, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6,
                                                   mtime=0) as gz:
            np.lib.format.write_array_header_1_0(gz, {"descr": dtype.str, "fortran_order": False,
                                                      "shape": tuple(shape)})
            for data in _chunks(fh, size):
                gz.write(data)
        with open(tmp, "rb") as done:
            os.fsync(done.fileno())
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def load(path: str | os.PathLike) -> np.ndarray:
    """Read a stored array (gzipped or plain .npy) without ever unpickling."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as fh:
        array = np.lib.format.read_array(fh, allow_pickle=False)
        if fh.read(1):
            raise ValueError("trailing bytes after the array data")
    return array


STREAM_ELEMENTS = 1 << 20  # elements per chunk when two stored arrays are compared


@contextlib.contextmanager
def stream(path: str | os.PathLike, elements: int = STREAM_ELEMENTS):
    """A stored array as (dtype, shape, chunks): flat chunks of at most `elements`, read
    from the gzip stream as they are used, so two arrays of any size are compared in a few
    MB. Plain C-order arrays only (what `store` writes); never unpickles."""
    with gzip.open(path, "rb") as fh:
        version = np.lib.format.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
        else:
            raise ValueError(f"unsupported .npy version {version}")
        if fortran or dtype.hasobject or dtype.fields is not None:
            raise ValueError(f"not a plain C-order array ({dtype})")
        total = math.prod(shape)

        def chunks():
            left = total
            while left:
                n = min(elements, left)
                data = fh.read(n * dtype.itemsize)
                if len(data) != n * dtype.itemsize:
                    raise ValueError("truncated array data")
                left -= n
                yield np.frombuffer(data, dtype=dtype)

        yield dtype, tuple(shape), chunks()
