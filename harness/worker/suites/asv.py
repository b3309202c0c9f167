"""An asv benchmark suite as a campaign's items (`suite: {kind: asv, path: benchmarks/benchmarks}`),
without asv: the worker imports the benchmark package from the revision tree and reads it as
asv's discovery does.

- Benchmarks: module-level functions and methods of classes defined in the package's modules whose
  names start with `time_` or `track_`. `mem_`, `peakmem_` and `timeraw_` benchmarks are listed in
  metrics as not run (they measure something else than one call's time).
- Parameters: `params` and `param_names` (on the function, its class or its module, the first
  found) expand into one item per combination, named as asv shows it: `mod.Class.time_x(8, 'a')`
  (reprs without memory addresses, duplicates numbered); `skip_params` combinations are left out.
- Setup: `setup_cache` (once per class per run), then the module's `setup`, then the class's,
  each called with the item's parameters, all before the clock, in item order; a setup that raises
  NotImplementedError skips the item (asv: "skipped"); any other error is the item's recorded error
  in every run. `teardown`s run after the timed loop.
- Calls per timed item: the campaign's `suite.number` (default 1); the item's wall is all its
  calls. The benchmark's own `number`, `repeat`, `rounds`, `warmup_time`, `sample_time` and
  `timeout` are asv's own sampling and are not used: the campaign's rounds of fresh processes are
  the samples, and a count read from each side's benchmark file could differ between the sides.
- `select`: a regular expression searched in the benchmark's name, with or without its
  parameters (`asv run --bench`).
"""
from __future__ import annotations

import functools
import inspect
import itertools
import re
import sys
import types
from collections import Counter
from pathlib import Path

from harness.worker.suites.common import SuiteError, SuiteWorkload, origin, raiser

TIMED = ("time_", "track_")
NOT_RUN = ("mem_", "peakmem_", "timeraw_")


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


def expand(params, param_names, name: str):
    """asv's rule: a flat list is one parameter; a list of lists, one per parameter. Returns
    (combinations as tuples, their id strings)."""
    if params is None or params == []:
        return [()], [name]
    if isinstance(params, (str, bytes)) or not hasattr(params, "__iter__"):
        raise SuiteError(f"asv benchmark {name}: params is not a list")
    params = list(params)
    if params and not isinstance(params[0], (tuple, list)):
        params = [params]
    else:
        params = [list(entry) for entry in params]
    names = [str(x) for x in list(param_names or [])][:len(params)]
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
    combos = list(itertools.product(*params))
    ids = [f"{name}({', '.join(parts)})" for parts in itertools.product(*reprs)]
    return combos, ids


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
    """Every selected benchmark: (item id, name, function or (class, method name), module).
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
    # (name, the function or (class, method name), its module)
    found: list[tuple[str, object, types.ModuleType]] = []
    not_imported, not_run = {}, []
    for dotted in dotted_names:
        try:
            module = importlib.import_module(dotted)
        except Exception as exc:  # noqa: BLE001 - asv reports such a module and runs the others
            not_imported[dotted] = f"{type(exc).__name__}: {str(exc)[:200]}"
            continue
        short = dotted[len(package) + 1:] if dotted != package else ""
        prefix = f"{short}." if short else ""
        for attr, obj in sorted(vars(module).items()):
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                for meth in sorted(dir(obj)):
                    if meth.startswith(NOT_RUN):
                        not_run.append(f"{prefix}{attr}.{meth}")
                    elif meth.startswith(TIMED) and callable(getattr(obj, meth, None)):
                        found.append((f"{prefix}{attr}.{meth}", (obj, meth), module))
            elif inspect.isfunction(obj) and obj.__module__ == module.__name__:
                if attr.startswith(NOT_RUN):
                    not_run.append(f"{prefix}{attr}")
                elif attr.startswith(TIMED):
                    found.append((f"{prefix}{attr}", obj, module))
    notes["not_imported"] = not_imported
    notes["not_run"] = not_run
    out = []
    for name, what, module in found:
        if isinstance(what, tuple):
            cls, meth = what
            sources = [getattr(cls, meth), cls, module]
        else:
            sources = [what, module]
        combos, ids = expand(_first(sources, "params", []), _first(sources, "param_names", []), name)
        skip = {tuple(s) if isinstance(s, (list, tuple)) else (s,) for s in (_first(sources, "skip_params", []) or [])}
        for combo, item in zip(combos, ids):
            if combo in skip or not select([name, item]):
                continue
            out.append((item, name, what, module, combo))
    return out


def setup(ctx):
    params = ctx.params
    tree = Path(ctx.tree)
    folder = tree / params["path"]
    from harness.plan.suite import matcher

    notes: dict = {}
    found = discover(folder, matcher("asv", params.get("select")), notes)
    if not found:
        why = "; modules not imported: " + "; ".join(f"{k}: {v}" for k, v in list(notes["not_imported"].items())[:2]) \
            if notes["not_imported"] else ""
        raise SuiteError(f"no asv benchmark (time_*, track_*) under {params['path']} matches select "
                         f"{params.get('select')!r}{why}")
    calls, teardowns, skipped, caches, modules = {}, [], {}, {}, {}
    for item, name, what, module, combo in found:
        modules[module.__name__] = origin(module, tree)
        try:
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
        except NotImplementedError as exc:
            skipped[item] = f"setup raised NotImplementedError: {str(exc)[:200]}"
            continue
        except Exception as exc:  # noqa: BLE001 - the item's error, in every run
            calls[item] = raiser(exc)
            continue
        calls[item] = functools.partial(func, *args)
        teardowns += [functools.partial(fn, *args) for fn in _all(sources, "teardown")]
    if not calls:
        raise SuiteError(f"every selected asv benchmark was skipped by its setup ({len(skipped)}): "
                         f"{next(iter(skipped.items()))[0]}")
    info = {"kind": "asv", "path": params["path"], "select": params.get("select"), "benchmarks": len(calls),
            "skipped": skipped, "not_imported": notes["not_imported"], "not_run": notes["not_run"][:200], "modules": modules}
    return SuiteWorkload("asv", calls, info, teardowns, params.get("number", 1))
