"""What the suite adapters share: the workload they give the worker, the refusal, and what a
benchmark's return value becomes as outputs.

The worker calls `run(item)` inside its timer: it is `number` calls of the benchmarked callable
(the campaign's suite.number, 1 unless it says more; with `number: auto`, the item's own count the
runner calibrated from `batch`'s calls in the base's pre-flight) and nothing
else (its setup ran in `setup()`, before the clock). What the last call returned goes through
`suite_outputs(item, returned)` after the timer stops: data (numpy arrays, bytes, str, numbers,
and lists, tuples, dicts and sets of those) becomes the output field `return` and is hashed for
parity; None and anything else gives no outputs, and `metrics()["suite"]["outputs"]` says so per
item ("not given: returned None", "not data: returned networkx.classes.graph.Graph").

Standard library and numpy only, Python 3.9's syntax: this runs in the user's interpreter.
"""
from __future__ import annotations

import enum
import math
from pathlib import Path
from typing import Union

import numpy as np

MAX_ENCODED = 64 << 20  # bytes of a container's canonical encoding; beyond: "not data (too large)"
MAX_DEPTH = 32  # nesting of containers
NOT_GIVEN = "not given by this benchmark"


class SuiteError(Exception):
    """The suite cannot run as asked: one line naming the benchmark or file and the fix."""


class NotData(Exception):
    pass


def type_name(value) -> str:
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


_INT64 = (-(2 ** 63), 2 ** 63 - 1)


def _encode(value, out: list, depth: int, budget: list) -> None:
    """A canonical, type-tagged encoding of plain data: equal data gives equal bytes, and a
    change of type (1 vs 1.0 vs True, a list vs a tuple, an int vs an IntEnum) changes them.
    Floats by their exact hex, dict and set entries sorted by their own encoding."""
    if depth > MAX_DEPTH:
        raise NotData(f"nested more than {MAX_DEPTH} levels")
    if budget[0] < 0:
        raise NotData(f"over {MAX_ENCODED} bytes to hash")
    cls = type(value)
    if value is None:
        piece = b"N"
    elif cls is bool:
        piece = b"T" if value else b"F"
    elif cls is int:
        piece = b"i%d;" % value
    elif cls is float:
        piece = b"f" + value.hex().encode() + b";"
    elif cls is complex:
        piece = b"c" + value.real.hex().encode() + b"," + value.imag.hex().encode() + b";"
    elif cls is str:
        data = value.encode("utf-8", "surrogatepass")
        piece = b"s%d:" % len(data) + data
    elif cls in (bytes, bytearray):
        piece = (b"b" if cls is bytes else b"B") + b"%d:" % len(value) + bytes(value)
    elif isinstance(value, enum.Enum):
        name = f"{cls.__module__}.{cls.__qualname__}.{value.name}".encode()
        piece = b"e%d:" % len(name) + name
    elif isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind not in "biufc" or arr.dtype.fields is not None:
            raise NotData(f"an array of dtype {arr.dtype}")
        arr = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<")) if arr.dtype.byteorder == ">" else arr)
        head = f"{arr.dtype.str}{list(arr.shape)}".encode()
        raw = arr.tobytes()
        piece = b"a%d:" % len(head) + head + b"%d:" % len(raw) + raw
    elif cls in (list, tuple):
        out.append((b"l" if cls is list else b"t") + b"%d[" % len(value))
        for sub in value:
            _encode(sub, out, depth + 1, budget)
        out.append(b"]")
        return
    elif cls in (dict, set, frozenset):
        entries = []
        for sub in (value.items() if cls is dict else value):
            part: list = []
            if cls is dict:
                _encode(sub[0], part, depth + 1, budget)
                _encode(sub[1], part, depth + 1, budget)
            else:
                _encode(sub, part, depth + 1, budget)
            entries.append(b"".join(part))
        entries.sort()
        out.append({dict: b"d", set: b"S", frozenset: b"Z"}[cls] + b"%d{" % len(entries))
        out.extend(entries)
        out.append(b"}")
        return
    elif isinstance(value, (int, str, float, bytes)):  # a subclass of a plain type: tagged by its class
        name = f"{cls.__module__}.{cls.__qualname__}".encode()
        base: type = next(t for t in (bool, int, float, str, bytes) if isinstance(value, t))
        out.append(b"x%d:" % len(name) + name)
        _encode(base(value), out, depth + 1, budget)
        return
    else:
        raise NotData(f"holds {type_name(value)}")
    budget[0] -= len(piece)
    out.append(piece)


def outputs_of(value) -> tuple[dict, str]:
    """(the outputs dict the worker hashes, the note metrics() records) for one return value.
    An array (or numpy scalar) of plain numbers is stored as it is, so parity sees its dtype and
    shape and `parity: max_ulp` applies; a Python number becomes a 0-d array of its exact type
    (int64, float64, complex128, bool); str and bytes their bytes; containers their canonical
    encoding (_encode) as bytes."""
    cls = type(value)
    if value is None:
        return {}, "not given: returned None"
    if isinstance(value, (np.ndarray, np.generic)):
        arr = np.asarray(value)
        if arr.dtype.kind in "biufc" and arr.dtype.fields is None:
            return {"return": arr}, f"hashed: ndarray {arr.dtype} {list(arr.shape)}"
        return {}, f"not data: returned an array of dtype {arr.dtype}"
    if cls is bool:
        return {"return": np.array(value, dtype=np.bool_)}, "hashed: bool"
    if cls is int and _INT64[0] <= value <= _INT64[1]:
        return {"return": np.array(value, dtype=np.int64)}, "hashed: int"
    if cls is float:
        return {"return": np.array(value, dtype=np.float64)}, "hashed: float"
    if cls is complex:
        return {"return": np.array(value, dtype=np.complex128)}, "hashed: complex"
    if cls is str:
        return {"return": np.frombuffer(value.encode("utf-8", "surrogatepass"), dtype=np.uint8)}, \
            "hashed: str (its UTF-8 bytes)"
    if cls in (bytes, bytearray):
        return {"return": np.frombuffer(bytes(value), dtype=np.uint8)}, f"hashed: {cls.__name__}"
    data_like = cls in (int, list, tuple, dict, set, frozenset) or isinstance(value, (enum.Enum, int, float, str, bytes))
    if not data_like:
        return {}, f"not data: returned {type_name(value)}"
    out: list = []
    try:
        _encode(value, out, 0, [MAX_ENCODED])
    except NotData as exc:
        return {}, f"not data: returned {type_name(value)} ({exc})"
    except RecursionError:
        return {}, f"not data: returned {type_name(value)} nested too deeply"
    data = b"".join(out)
    return {"return": np.frombuffer(data, dtype=np.uint8)}, f"hashed: {type_name(value)} (canonical encoding)"


class Armed:
    """A benchmark whose calls' arguments are made before the clock (pytest-benchmark's pedantic
    with a setup): arm(n) makes those of the next n calls."""

    def arm(self, n: int) -> None:
        raise NotImplementedError


class SuiteWorkload:
    """The worker's workload for a suite: items are the selected benchmarks, each timed item
    `number` calls of one (the campaign's suite.number, asv's word: a benchmark far shorter than a
    process's own jitter is timed over many calls, as asv and pyperf do; an int for every item, or
    {item: calls} as `number: auto` calibrated them), the last call's return value its outputs."""

    def __init__(self, kind: str, calls: dict, info: dict, teardowns: list | None = None,
                 number: Union[int, dict] = 1):
        self.kind = kind
        self.items = list(calls)
        self._calls = calls  # item -> a callable of no arguments: the benchmark, set up
        self._number = number
        self._info = info
        self._notes: dict = {}
        self._teardowns = teardowns or []

    def calls_of(self, item: str) -> int:
        number = self._number
        return number.get(item, 1) if isinstance(number, dict) else number

    def run(self, item: str):
        call = self._calls[item]
        for _ in range(self.calls_of(item) - 1):
            call()
        return call()

    def batch(self, item: str, n: int):
        """n calls of item as run() makes them, ready to time (`number: auto`'s calibration in the
        pre-flight): pedantic's arguments for them are made now, before the caller's clock."""
        call = self._calls[item]
        if isinstance(call, Armed):
            call.arm(n)

        def calls():
            for _ in range(n - 1):
                call()
            return call()
        return calls

    def suite_outputs(self, item: str, returned) -> dict:
        outputs, note = outputs_of(returned)
        self._notes[item] = note
        return outputs

    def metrics(self) -> dict:
        notes = dict(self._notes)
        given = sum(1 for n in notes.values() if n.startswith("hashed"))
        return {"suite": {**self._info, "number": self._number, "outputs": notes,
                          "outputs_given": given, "outputs_not_given": len(notes) - given}}

    def close(self) -> None:
        for teardown in self._teardowns:
            try:
                teardown()
            except Exception:  # noqa: BLE001 - after the measurement; a teardown failure changes nothing timed
                pass
        self._teardowns = []


def raiser(exc: BaseException):
    """An item whose set-up failed: each run of it raises that error again (recorded and compared
    like an output, as a workload's raising item is)."""
    def call():
        raise exc
    return call


def origin(module, tree: Path) -> str:
    """Where a module was imported from: the worker's own rule (harness.worker.main.origin)."""
    from harness.worker.main import origin as origin_of

    return origin_of(module.__name__, tree)


def finite_or_text(value):
    """A JSON-safe copy of a small value for metrics (numbers stay numbers, the rest its repr)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and _INT64[0] <= value <= _INT64[1]:
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    return repr(value)[:200]
