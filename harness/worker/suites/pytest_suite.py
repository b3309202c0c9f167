"""pytest-benchmark and pytest-codspeed tests as a campaign's items
(`suite: {kind: pytest-benchmark, path: bench, select: "test_foo or test_bar"}`), without running
pytest, pytest-benchmark or pytest-codspeed: the worker imports the test files from the revision
tree (a test file imports pytest itself: then the target interpreter's pytest is used, and the
run's metrics name it; without it the suite is refused in one line) and reads them as pytest's
collection does, for what a benchmark needs:

- Tests: functions named test* and methods test* of classes Test* (without __init__), in files
  test_*.py or *_test.py under `path` (or the one file `path` names). A test is a benchmark when it
  takes the `benchmark` fixture; with pytest-codspeed also when it carries `@pytest.mark.benchmark`
  without taking the fixture (then, as CodSpeed does, the whole test body is what is timed).
- `@pytest.mark.parametrize` (stacked, `pytest.param(..., id=, marks=)`, `ids=`) expands into one
  item per combination, named as pytest names it (`bench/test_x.py::test_y[1-a]`); `skip` and a
  true `skipif` leave a test or a combination out. A test needing any other fixture (or
  `usefixtures`, or an `indirect` parameter) runs only under pytest: it is refused in one line
  when selected (`select` can leave it out).
- The `benchmark` fixture is a stand-in: during `setup()`, before the clock, the test is called
  once with it; `benchmark(fn, *args, **kwargs)` and `benchmark.pedantic(fn, args=, kwargs=,
  setup=, teardown=, rounds=, iterations=)` record fn and its arguments, call it once and return its
  result to the test (so the test's own assertions run). A timed run then calls fn once per item
  (`suite.number` times when the campaign gives it): rounds, iterations and warm-up are the
  harness's. With pedantic's
  `setup`, the arguments for each timed call are made before the clock; its `teardown` runs after
  the timed loop. A test that raises is that item's recorded error in every run.
- `select`: a pytest `-k` expression over the test's names (file, class, test with its parameters,
  marks), each word a case-insensitive substring.
"""
from __future__ import annotations

import enum
import functools
import inspect
import itertools
import os
import platform
import re
import sys
import types
from pathlib import Path

from harness.worker.suites.common import SuiteError, SuiteWorkload, origin, raiser

MISSING = object()


def _marks(obj) -> list:
    marks = getattr(obj, "pytestmark", [])
    if not isinstance(marks, list):
        marks = [marks]
    return [m for m in marks if isinstance(getattr(m, "name", None), str)]


def _ascii(text: str) -> str:
    return text.encode("unicode_escape").decode("ascii")


def idval(value, argname: str, idx: int) -> str:
    """pytest's id for one parameter value (_idval)."""
    if isinstance(value, str):
        return _ascii(value)
    if isinstance(value, bytes):
        return value.decode("ascii", "backslashreplace") if value.isascii() else repr(value)[2:-1]
    if value is None or isinstance(value, (float, int, bool, complex)):
        return str(value)
    if isinstance(value, re.Pattern):
        return _ascii(value.pattern)
    if isinstance(value, enum.Enum):
        return str(value)
    name = getattr(value, "__name__", None)
    if isinstance(name, str):
        return name
    return f"{argname}{idx}"


def _unique(ids: list) -> list:
    """pytest's rule for duplicate ids: each gets a suffix (0, 1, ...; after '_' when the id
    ends with a digit)."""
    counts = {i: 0 for i in ids if ids.count(i) > 1}
    out = []
    for i in ids:
        if i in counts:
            sep = "_" if i and i[-1].isdigit() else ""
            out.append(f"{i}{sep}{counts[i]}")
            counts[i] += 1
        else:
            out.append(i)
    return out


def _parametrize(mark, where: str) -> list:
    """One parametrize mark -> [(id, {argname: value}, marks)]."""
    args, kwargs = list(mark.args), dict(mark.kwargs)
    names = args[0] if args else kwargs.get("argnames")
    values = args[1] if len(args) > 1 else kwargs.get("argvalues")
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    names = list(names or [])
    if kwargs.get("indirect"):
        raise SuiteError(f"{where}: an indirect parameter goes through a fixture, which runs only under pytest "
                         "(leave it out with select)")
    ids = kwargs.get("ids")
    out = []
    for idx, value in enumerate(list(values or [])):
        marks, given_id = [], None
        if hasattr(value, "values") and hasattr(value, "marks") and hasattr(value, "id"):  # pytest.param(...)
            marks, given_id, value = list(value.marks), value.id, tuple(value.values)
            if len(names) == 1:
                value = value[0]
        row = dict(zip(names, value)) if len(names) > 1 else {names[0]: value} if names else {}
        if given_id is None and ids is not None:
            if callable(ids):
                parts = [ids(v) for v in row.values()]
                given_id = "-".join(p if isinstance(p, str) else idval(v, n, idx)
                                    for p, n, v in zip(parts, row, row.values()))
            elif idx < len(ids) and ids[idx] is not None:
                given_id = str(ids[idx])
        if given_id is None:
            given_id = "-".join(idval(v, n, idx) for n, v in row.items())
        out.append([given_id, row, marks])
    unique = _unique([r[0] for r in out])
    for r, i in zip(out, unique):
        r[0] = i
    return out


def _skipped(marks: list, namespace: dict) -> str | None:
    for m in marks:
        if m.name == "skip":
            return "skip: " + str(m.kwargs.get("reason") or (m.args[0] if m.args else ""))[:200]
        if m.name == "skipif":
            for cond in m.args or [m.kwargs.get("condition")]:
                if isinstance(cond, str):
                    cond = eval(cond, {**namespace, "sys": sys, "os": os, "platform": platform})  # noqa: S307 - pytest does this
                if cond:
                    return "skipif: " + str(m.kwargs.get("reason", ""))[:200]
    return None


def test_files(root: Path) -> list:
    if root.is_file():
        return [root]
    if not root.is_dir():
        raise SuiteError(f"suite.path: {root} is neither a test file nor a folder")
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__pycache__")))
        for name in sorted(files):
            if name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")):
                out.append(Path(folder) / name)
    return out


def collect(module, rel: str, kind: str) -> list:
    """Every benchmark test of a module: dicts of id, names (for select), fn, cls, params, marker
    (True: the test body is the benchmark), error (why it cannot run here), skipped."""
    module_marks = _marks(module)
    namespace = vars(module)
    tests: list[tuple[type | None, str, types.FunctionType]] = []  # (class or None, name, function)
    for name, obj in list(vars(module).items()):
        if inspect.isfunction(obj) and name.startswith("test"):
            tests.append((None, name, obj))
        elif inspect.isclass(obj) and name.startswith("Test") and obj.__init__ is object.__init__:
            for meth, fn in list(vars(obj).items()):
                if meth.startswith("test") and inspect.isfunction(fn):
                    tests.append((obj, meth, fn))
    out = []
    for cls, name, fn in tests:
        marks = _marks(fn) + (_marks(cls) if cls is not None else []) + module_marks
        params = [p for p in inspect.signature(fn).parameters.values()][1 if cls is not None else 0:]
        takes = any(p.name == "benchmark" for p in params)
        marker = kind == "pytest-codspeed" and not takes and any(m.name == "benchmark" for m in marks)
        if not takes and not marker:
            continue
        node = f"{rel}::{cls.__name__ + '::' if cls is not None else ''}{name}"
        where = node
        error = None
        try:
            combos: list[tuple[str, dict, list]] = [("", {}, [])]  # (id, arguments, marks)
            for mark in [m for m in marks if m.name == "parametrize"]:  # pytest's order: the lowest decorator first
                rows = _parametrize(mark, where)
                combos = [((f"{cid}-{rid}" if cid else rid), {**cargs, **rargs}, cmarks + rmarks)
                          for cid, cargs, cmarks in combos for rid, rargs, rmarks in rows]
        except SuiteError as exc:
            combos, error = [("", {}, [])], str(exc)
        given = {n for _, args, _ in combos for n in args}
        fixtures = [p.name for p in params if p.name != "benchmark" and p.name not in given
                    and p.default is inspect.Parameter.empty
                    and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]
        uses = [a for m in marks if m.name == "usefixtures" for a in m.args]
        if error is None and (fixtures or uses):
            error = (f"{node} needs the fixture(s) {', '.join(repr(f) for f in fixtures + uses)}, which run only under "
                     "pytest; leave it out with select (e.g. \"not " + name + "\")")
        mark_names = sorted({m.name for m in marks})
        for cid, args, cmarks in combos:
            item = f"{node}[{cid}]" if cid else node
            names = [*Path(rel).parts, *( [cls.__name__] if cls is not None else []), f"{name}[{cid}]" if cid else name,
                     *mark_names]
            out.append({"id": item, "names": names, "fn": fn, "cls": cls, "method": name, "args": args,
                        "marker": marker, "error": error, "skipped": _skipped(marks + cmarks, namespace)})
    return out


class Fixture:
    """The `benchmark` fixture's stand-in while the test runs once in setup(): it records the
    callable and its arguments, calls it once and hands the test its result."""

    def __init__(self, node: str):
        self.node = node
        self.extra_info: dict = {}
        self.group = None
        self.name = node
        self.target = None  # (fn, args, kwargs, setup, teardown)
        self.pedantic_args: dict = {}

    def _once(self):
        if self.target is not None:
            raise SuiteError(f"{self.node}: the benchmark fixture is used twice in one test (pytest-benchmark refuses "
                             "that too)")

    def __call__(self, fn, *args, **kwargs):
        self._once()
        self.target = (fn, args, kwargs, None, None)
        return fn(*args, **kwargs)

    def pedantic(self, target, args=(), kwargs=None, setup=None, teardown=None, rounds=1, warmup_rounds=0,
                 iterations=1):
        self._once()
        if setup is not None and (args or kwargs):
            raise TypeError("Can't use `args` or `kwargs` if `setup` is given.")
        self.target = (target, tuple(args or ()), dict(kwargs or {}), setup, teardown)
        self.pedantic_args = {"rounds": rounds, "iterations": iterations, "warmup_rounds": warmup_rounds}
        call_args, call_kwargs = _prepared(setup, args, kwargs)
        result = target(*call_args, **call_kwargs)
        if teardown is not None:
            teardown(*call_args, **call_kwargs)
        return result

    def __getattr__(self, name):
        raise SuiteError(f"{self.node}: benchmark.{name} is not something a campaign can stand in for (it offers "
                         "benchmark(fn, ...), benchmark.pedantic(...) and extra_info)")


def _prepared(setup, args, kwargs):
    if setup is None:
        return tuple(args or ()), dict(kwargs or {})
    made = setup()
    if made is None:
        return (), {}
    made_args, made_kwargs = made
    return tuple(made_args or ()), dict(made_kwargs or {})


class Pedantic:
    """benchmark.pedantic with a setup: the arguments for the next timed call are made before
    the clock (in setup(), and again after each call outside the timed runs: each timed run calls
    each item once); the teardown of the last arguments runs after the timed loop."""

    def __init__(self, target, setup, teardown):
        self.target, self.setup, self.teardown = target, setup, teardown
        self.ready = _prepared(setup, (), {})
        self.last = None

    def __call__(self):
        if self.ready is None:
            self.ready = _prepared(self.setup, (), {})
        args, kwargs = self.last = self.ready
        self.ready = None
        return self.target(*args, **kwargs)

    def close(self):
        if self.teardown is not None and self.last is not None:
            self.teardown(*self.last[0], **self.last[1])


def setup(ctx):
    params = ctx.params
    kind = params["kind"]
    tree = Path(ctx.tree)
    from harness.plan.suite import matcher

    select = matcher(kind, params.get("select"))
    files = test_files(tree / params["path"])
    if not files:
        raise SuiteError(f"suite.path: no test files (test_*.py, *_test.py) under {params['path']}")
    found, modules = [], {}
    for path in files:
        rel = path.relative_to(tree).as_posix()
        try:
            module, _ = import_test(path)
        except ModuleNotFoundError as exc:
            missing = exc.name or str(exc)
            raise SuiteError(f"{rel} imports {missing}, which the target interpreter ({sys.executable}) does not have: "
                             f"install it there (pip install {missing.split('.')[0].replace('_', '-')}) or name one "
                             "that has it with `python:`") from None
        except Exception as exc:  # noqa: BLE001
            raise SuiteError(f"{rel}: cannot be imported: {type(exc).__name__}: {str(exc)[:200]}") from None
        modules[module.__name__] = origin(module, tree)
        found += [t for t in collect(module, rel, kind) if select(t["names"])]
    skipped = {t["id"]: t["skipped"] for t in found if t["skipped"]}
    found = [t for t in found if not t["skipped"]]
    if not found:
        raise SuiteError(f"no {kind} test (one taking the benchmark fixture"
                         + (", or marked @pytest.mark.benchmark" if kind == "pytest-codspeed" else "")
                         + f") under {params['path']} matches select {params.get('select')!r}"
                         + (f" ({len(skipped)} skipped by their marks)" if skipped else ""))
    for t in found:
        if t["error"]:
            raise SuiteError(t["error"])
    calls, teardowns, pedantic = {}, [], {}
    for t in found:
        instance = t["cls"]() if t["cls"] is not None else None
        fn = getattr(instance, t["method"]) if instance is not None else t["fn"]
        if t["marker"]:  # pytest-codspeed's marker: the test itself is the benchmark
            calls[t["id"]] = functools.partial(fn, **t["args"])
            continue
        fixture = Fixture(t["id"])
        try:
            fn(**t["args"], benchmark=fixture)
        except SuiteError:
            raise
        except Exception as exc:  # noqa: BLE001 - the test fails here: that is the item's result
            calls[t["id"]] = raiser(exc)
            continue
        if fixture.target is None:
            raise SuiteError(f"{t['id']}: the test never called its benchmark fixture")
        target, args, kwargs, psetup, pteardown = fixture.target
        if fixture.pedantic_args:
            pedantic[t["id"]] = fixture.pedantic_args
        if psetup is not None:
            call = Pedantic(target, psetup, pteardown)
            teardowns.append(call.close)
            calls[t["id"]] = call
        else:
            calls[t["id"]] = functools.partial(target, *args, **kwargs)
            if pteardown is not None:
                teardowns.append(functools.partial(pteardown, *args, **kwargs))
    runner = sys.modules.get("pytest")
    info = {"kind": kind, "path": params["path"], "select": params.get("select"), "benchmarks": len(calls),
            "skipped": skipped, "modules": modules,
            "pytest": (f"pytest {getattr(runner, '__version__', '?')} of the target interpreter, imported by the test "
                       f"files ({origin(runner, tree)}); its collection, fixtures and plugins were not run")
            if runner is not None else None,
            "pedantic": {k: {kk: repr(vv)[:40] for kk, vv in v.items()} for k, v in list(pedantic.items())[:200]}}
    return SuiteWorkload(kind, calls, info, teardowns, params.get("number", 1))


def import_test(path: Path):
    from harness.worker.suites.common import import_file

    return import_file(path)
