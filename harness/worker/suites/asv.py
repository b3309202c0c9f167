"""An asv benchmark suite as a campaign's items (`suite: {kind: asv, path: benchmarks/benchmarks}`),
without asv: the worker imports the benchmark package from the revision tree and reads it as
asv's discovery does.

- Benchmarks: module-level functions and methods of classes defined in the package's modules, of
  the kind asv reads from the name (asv_runner's name_regex: `time_x` or `TimeX`, and likewise
  track, mem, peakmem, timeraw; a `benchmark_name` given by asv's decorator names it, and
  `skip_benchmark` leaves it out). Each gets the meaning asv gives it where the harness can measure
  it:
  - time: a timed item (the timed loop's calls, below);
  - track: its return value, recorded as the run's measurement (`suite.measured`), not timed;
  - mem: the size of the object it returns, as asv computes it (pympler's asizeof of
    [obj, copy(obj)] less that of [obj, obj]), not timed; pympler comes from the target
    interpreter, and a selected mem benchmark without it refuses the suite in one line;
  - peakmem: the process's resident peak over one call (the kernel's high-water mark, reset just
    before it), not timed;
  - timeraw: refused in one line when selected: asv times the code it returns in a fresh
    interpreter of its own, which a campaign's worker, timing calls in one process, does not.
  The measured kinds run in setup(), before the timed items' setups (asv runs each in a process of
  its own), each with its own setup and teardown; a campaign needs at least one time benchmark.
- Parameters: `params` and `param_names` (on the function, its class or its module, the first
  found) expand into one item per combination, named as asv shows it: `mod.Class.time_x(8, 'a')`
  (reprs without memory addresses, duplicates numbered); `skip_params` combinations are left out.
  The expansion is bounded before it is made: params whose combinations (the product of their
  lengths, each list read to at most contract.MAX_ITEMS + 1 values) exceed contract.MAX_ITEMS, or
  selected benchmarks that expand to more, refuse the suite in one line.
- Setup: `setup_cache` (once per class per run), then the module's `setup`, then the class's,
  each called with the item's parameters, all before the clock, in item order; a setup that raises
  NotImplementedError skips the item (asv: "skipped"); any other error is the item's recorded error
  in every run. `teardown`s run after the timed loop.
- Calls per timed item: the campaign's `suite.number` (default 1; `auto`: each benchmark's own,
  calibrated on the base's pre-flight); the item's wall is all its calls. The benchmark's own `number`, `repeat`, `rounds`, `warmup_time`, `sample_time` and
  `timeout` are asv's own sampling and are not used: the campaign's rounds of fresh processes are
  the samples, and a count read from each side's benchmark file could differ between the sides.
- `select`: a regular expression searched in the benchmark's name, with or without its
  parameters (`asv run --bench`).
"""
from __future__ import annotations

import copy
import functools
import inspect
import itertools
import math
import re
import sys
import types
from collections import Counter
from pathlib import Path

from harness.contract import MAX_ITEMS
from harness.plan.suite import SuiteParams
from harness.worker.suites.common import SuiteError, SuiteWorkload, finite_or_text, origin, raiser

# asv's benchmark kinds and the names that make them (asv_runner/benchmarks/*.py, name_regex)
KINDS = (("time", re.compile(r"^(Time[A-Z_].+)|(time_.+)$")),
         ("timeraw", re.compile(r"^(Timeraw[A-Z_].+)|(timeraw_.+)$")),
         ("track", re.compile(r"^(Track[A-Z_].+)|(track_.+)$")),
         ("mem", re.compile(r"^(Mem[A-Z_].+)|(mem_.+)$")),
         ("peakmem", re.compile(r"^(PeakMem[A-Z_].+)|(peakmem_.+)$")))
MAX_SCAN = 100 * MAX_ITEMS  # parameter combinations matched one by one against select
MEASURED = ("track", "mem", "peakmem")  # measured once per run, before the clock: not timed items


def _first(sources, name, default=None):
    for src in sources:
        value = getattr(src, name, None)
        if value is not None:
            return value
    return default


def _all(sources, name):
    return [v for v in (getattr(src, name, None) for src in sources) if v is not None and callable(v)]


def _repr(value) -> str:
    text = repr(value)
    m = re.match(r"^(<.*) at (0x[\da-fA-F]*)(>)$", text)
    if m:
        d = re.match(r"^(<.*) at (0x[\da-fA-F]*)(>)$", object.__repr__(value))
        if d and d.group(2) == m.group(2):
            text = m.group(1) + m.group(3)
    return text


def _bounded(values, name: str) -> list:
    """An iterable read to at most MAX_ITEMS + 1 values: an endless one is refused, not followed."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise SuiteError(f"asv benchmark {name}: params is not a list")
    out = list(itertools.islice(values, MAX_ITEMS + 1))
    if len(out) > MAX_ITEMS:
        raise SuiteError(f"asv benchmark {name}: params with more than {MAX_ITEMS:,} values; a run measures at most "
                         f"{MAX_ITEMS:,} items: narrow its params (or leave it out with select)")
    return out


def expand(params, param_names, name: str, select=None):
    """asv's rule: a flat list is one parameter; a list of lists, one per parameter. Returns
    (combinations as tuples, their id strings), those select keeps (all without one). Bounded: the
    combinations are counted from the lists' lengths first: a benchmark select keeps by its name
    with more than MAX_ITEMS of them is refused before any is made; one whose name select does not
    match, with more than MAX_SCAN, is matched by its name only (no combination kept: each id would
    have to be made and matched)."""
    if params is None or params == []:
        return [()], [name]
    params = _bounded(params, name)
    if params and not isinstance(params[0], (tuple, list)):
        params = [params]
    else:
        params = [_bounded(entry, name) for entry in params]
    total = math.prod(len(entry) for entry in params)
    whole = select is None or select([name])
    if whole and total > MAX_ITEMS:
        raise SuiteError(f"asv benchmark {name}: params of {total:,} combinations "
                         f"({' x '.join(str(len(entry)) for entry in params)}); a run measures at most {MAX_ITEMS:,} "
                         "items: narrow its params (or leave it out with select)")
    if not whole and total > MAX_SCAN:
        return [], []  # select matched against its name only (setup() lists it)
    names = [str(x) for x in _bounded(param_names or [], name)][:len(params)]
    names += [f"param{k + 1}" for k in range(len(names), len(params))]
    reprs = []
    for entry in params:  # asv's _unique_param_ids: duplicate reprs numbered within a parameter
        shown = [_repr(v) for v in entry]
        dupes = {n: 0 for n, c in Counter(shown).items() if c > 1}
        for j, n in enumerate(shown):
            if n in dupes:
                shown[j] = f"{n} ({dupes[n]})"
                dupes[n] += 1
        reprs.append(shown)
    combos, ids = [], []
    for combo, parts in zip(itertools.product(*params), itertools.product(*reprs)):
        item = f"{name}({', '.join(parts)})"
        if whole or select([name, item]):
            combos.append(combo)
            ids.append(item)
    return combos, ids


def kind_of(attr: str, func) -> tuple[str | None, str | None]:
    """(asv's kind, the name asv's decorator gave it or None) of a function or method; (None, None)
    when it is not a benchmark (asv's _get_benchmark)."""
    if getattr(func, "skip_benchmark", False):
        return None, None
    given = getattr(func, "benchmark_name", None)
    given = given if isinstance(given, str) and given else None
    search = given.split(".")[-1] if given else attr
    return next((kind for kind, regex in KINDS if regex.match(search)), None), given


def _modules(folder: Path, package: str):
    """Dotted names of the package and every module below it (sub-packages hold __init__.py)."""
    out = [package]
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith((".", "_")) and entry.name != "__init__.py":
            continue
        if entry.is_dir() and (entry / "__init__.py").is_file():
            out += _modules(entry, f"{package}.{entry.name}")
        elif entry.is_file() and entry.suffix == ".py" and entry.name != "__init__.py":
            out.append(f"{package}.{entry.stem}")
    return out


def module_of(path: Path) -> tuple:
    """One benchmark file's (package folder, dotted module name), as asv imports it: the package
    is the highest folder above the file that holds an __init__.py, its parent goes on sys.path."""
    folder = path.parent
    while (folder.parent / "__init__.py").is_file():
        folder = folder.parent
    inner = path.relative_to(folder).with_suffix("").parts
    return folder, ".".join((folder.name, *inner)) if inner != ("__init__",) else folder.name


def discover(path: Path, select, notes: dict) -> list:
    """Every selected benchmark: (item id, name, function or (class, method name), module, its
    parameters, asv's kind).
    path: asv's benchmark folder (every module in it is imported, as asv does), or one .py file
    of it (only that module: a suite whose modules build large data at import stays quick)."""
    import importlib

    if path.is_file() and path.suffix == ".py":
        folder, dotted = module_of(path)
        package = folder.name
        dotted_names = [dotted]
    elif path.is_dir():
        folder, package = path, path.name
        dotted_names = _modules(folder, package)
    else:
        raise SuiteError(f"suite.path: {path} is neither a folder nor a .py file (asv's benchmark_dir, e.g. "
                         "benchmarks/benchmarks, or one module of it)")
    if str(folder.parent) in sys.path:
        sys.path.remove(str(folder.parent))
    sys.path.insert(0, str(folder.parent))  # asv imports the benchmark folder as a package by its name
    # (name, the function or (class, method name), its module, asv's kind)
    found: list[tuple[str, object, types.ModuleType, str]] = []
    not_imported = {}
    for dotted in dotted_names:
        try:
            module = importlib.import_module(dotted)
        except Exception as exc:  # noqa: BLE001 - asv reports such a module and runs the others
            not_imported[dotted] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        short = dotted[len(package) + 1:] if dotted != package else ""
        prefix = f"{short}." if short else ""
        for attr, obj in sorted(vars(module).items()):
            if attr.startswith("_"):
                continue
            if inspect.isclass(obj) and obj.__module__ == module.__name__ and not inspect.isabstract(obj):
                for meth in sorted(dir(obj)):
                    member = getattr(obj, meth, None)
                    kind, given = kind_of(meth, member) if callable(member) else (None, None)
                    if kind is not None:
                        found.append((given or f"{prefix}{attr}.{meth}", (obj, meth), module, kind))
            elif inspect.isfunction(obj) and obj.__module__ == module.__name__:
                kind, given = kind_of(attr, obj)
                if kind is not None:
                    found.append((given or f"{prefix}{attr}", obj, module, kind))
    notes["not_imported"] = not_imported
    out = []
    for name, what, module, kind in found:
        if isinstance(what, tuple):
            cls, meth = what
            sources = [getattr(cls, meth), cls, module]
        else:
            sources = [what, module]
        combos, ids = expand(_first(sources, "params", []), _first(sources, "param_names", []), name, select)
        if not combos:
            notes.setdefault("unmatched", []).append(name)
        skip = {tuple(s) if isinstance(s, (list, tuple)) else (s,) for s in (_first(sources, "skip_params", []) or [])}
        for combo, item in zip(combos, ids):
            if combo in skip or not select([name, item]):
                continue
            out.append((item, name, what, module, combo, kind))
            if len(out) > MAX_ITEMS:
                raise SuiteError(f"the selected asv benchmarks expand to more than {MAX_ITEMS:,} items (params "
                                 "combinations); a run measures at most that: narrow select")
    return out


def prepared(what, module, combo, caches: dict):
    """One benchmark set up as asv sets it up: (the function to call, its arguments, its teardowns).
    setup_cache once per class (or module), then the module's setup, then the class's."""
    if isinstance(what, tuple):
        cls, meth = what
        instance = cls()
        func = getattr(instance, meth)
        sources = [func, instance, module]
    else:
        func, sources = what, [what, module]
    args = tuple(combo)
    cache = _first(sources, "setup_cache")
    if cache is not None:
        key = getattr(cache, "__func__", cache)
        if key not in caches:
            caches[key] = cache()
        args = (caches[key],) + args
    for fn in _all(sources, "setup")[::-1]:  # the module's first, then the class's
        fn(*args)
    return func, args, [functools.partial(fn, *args) for fn in _all(sources, "teardown")], sources


def asizeof_of():
    """pympler's asizeof, asv's own measure of a mem benchmark, from the target interpreter."""
    try:
        from pympler.asizeof import asizeof
    except ImportError:
        return None
    return asizeof


def memory_status() -> dict:
    """This process's resident set now (VmRSS) and its high-water mark (VmHWM), in bytes, from
    Linux's /proc/self/status; {} where the kernel does not show them."""
    try:
        text = Path("/proc/self/status").read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("VmHWM", "VmRSS") and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key] = int(parts[0]) * 1024
    return out


def reset_peak() -> bool:
    """Reset this process's resident high-water mark to its resident set now (Linux 4.0 and
    later: "5" to /proc/self/clear_refs, which touches no page); False where that is refused (a
    sandbox that keeps /proc read-only: the peak is then the process's since it started)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def measure(kind: str, func, args, sources) -> dict:
    """What asv records for a benchmark that is not timed, measured once here (outside the clock)."""
    if kind == "track":
        value = func(*args)
        return {"kind": "track", "unit": str(_first(sources, "unit", "unit"))[:40],
                "type": str(_first(sources, "type", "track"))[:40], "value": finite_or_text(value)}
    if kind == "mem":
        asizeof = asizeof_of()
        assert asizeof is not None  # setup() refused the suite without it
        obj = func(*args)
        return {"kind": "mem", "unit": "bytes", "value": int(asizeof([obj, copy.copy(obj)]) - asizeof([obj, obj]))}
    reset = reset_peak()
    before = memory_status()
    result = func(*args)
    after = memory_status()  # with the result still held, so its pages are in the resident set
    del result
    # a kernel that takes the reset but keeps no mark after it (the mark below the resident set
    # it bounds) gets the process's own peak instead, as where the reset is refused
    if reset and "VmHWM" in after and "VmRSS" in before and after["VmHWM"] >= after.get("VmRSS", 0):
        return {"kind": "peakmem", "unit": "bytes", "value": after["VmHWM"],
                "growth": after["VmHWM"] - before["VmRSS"],
                "how": "the resident high-water mark after the call, reset to the resident set just before it"}
    import resource

    return {"kind": "peakmem", "unit": "bytes", "value": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "how": "the process's peak since it started (getrusage; the kernel could not reset its mark), as asv's"}


def setup(ctx):
    params = SuiteParams.from_json(ctx.params)
    tree = Path(ctx.tree)
    folder = tree / params.path
    from harness.plan.suite import matcher

    notes: dict = {}
    found = discover(folder, matcher("asv", params.select), notes)
    timed = [f for f in found if f[5] == "time"]
    if not timed:
        why = "; modules not imported: " + "; ".join(f"{k}: {v}" for k, v in list(notes["not_imported"].items())[:2]) \
            if notes["not_imported"] else ""
        other = f" (it selects {len(found)} of other kinds, which are measured beside timed ones, not timed)" \
            if found else ""
        raise SuiteError(f"no asv time benchmark (time_*) under {params.path} matches select "
                         f"{params.select!r}{other}{why}")
    raw = next((f for f in found if f[5] == "timeraw"), None)
    if raw is not None:
        raise SuiteError(f"asv benchmark {raw[0]} is a timeraw benchmark: asv times the code it returns in a fresh "
                         "interpreter of its own, which a campaign's worker, timing calls in one process, does not; "
                         "leave it out with select (e.g. '^(?!.*timeraw_)')")
    mem = next((f for f in found if f[5] == "mem"), None)
    if mem is not None and asizeof_of() is None:
        raise SuiteError(f"asv benchmark {mem[0]} is a mem benchmark, which asv sizes with pympler's asizeof, and the "
                         f"target interpreter ({sys.executable}) has no pympler: install it there (pip install "
                         "pympler) or leave it out with select (e.g. '^(?!.*mem_)')")
    calls, teardowns, skipped, modules, measured = {}, [], {}, {}, {}
    caches: dict = {}
    for item, name, what, module, combo, kind in sorted(found, key=lambda f: f[5] == "time"):  # measured first
        modules[module.__name__] = origin(module, tree)
        try:
            func, args, item_teardowns, sources = prepared(what, module, combo, caches)
            if kind in MEASURED:
                try:
                    measured[item] = measure(kind, func, args, sources)
                finally:
                    for teardown in item_teardowns:
                        teardown()
                continue
        except NotImplementedError as exc:
            skipped[item] = f"setup raised NotImplementedError: {str(exc)[:200]}"
            continue
        except Exception as exc:  # noqa: BLE001 - the item's error, in every run
            if kind in MEASURED:
                measured[item] = {"kind": kind, "error": f"{type(exc).__name__}: {str(exc)[:200]}"}
            else:
                calls[item] = raiser(exc)
            continue
        calls[item] = functools.partial(func, *args)
        teardowns += item_teardowns
    if not calls:
        raise SuiteError(f"every selected asv time benchmark was skipped by its setup ({len(skipped)}): "
                         f"{next(iter(skipped.items()))[0]}")
    info = {"kind": "asv", "path": params.path, "select": params.select, "benchmarks": len(calls),
            "skipped": skipped, "not_imported": notes["not_imported"], "modules": modules,
            "matched_by_name_only": notes.get("unmatched", [])[:200],
            "measured": dict(list(measured.items())[:200])}
    return SuiteWorkload("asv", calls, info, teardowns, params.per_item)
