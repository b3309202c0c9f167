"""Per-stage thread CPU: self time (own work) and inclusive time, without the code under
test knowing. Configured functions are wrapped at run time; each thread keeps a stack of
active stages, and when a stage exits its self CPU is the elapsed thread CPU minus what
the instrumented stages it called used."""
from __future__ import annotations

import functools
import importlib
import inspect
import threading
import time
from dataclasses import dataclass


class StageError(Exception):
    pass


@dataclass
class _Totals:
    calls: int = 0
    self_cpu: float = 0.0
    incl_cpu: float = 0.0


class StageTimer:
    """Counts only while armed, so set-up calls and warm-ups stay out of the figures."""

    def __init__(self, clock=time.thread_time):
        self.clock = clock
        self.armed = False
        self._local = threading.local()
        self._lock = threading.Lock()
        self._tables: list[dict[str, _Totals]] = []

    def _state(self):
        local = self._local
        if not hasattr(local, "stack"):
            local.stack = []  # [name, start, child_cpu]
            local.table = {}
            with self._lock:
                self._tables.append(local.table)
        return local

    def wrap(self, name: str, func):
        timer = self

        @functools.wraps(func)
        def staged(*args, **kwargs):
            if not timer.armed:
                return func(*args, **kwargs)
            state = timer._state()
            frame = [name, timer.clock(), 0.0]
            state.stack.append(frame)
            try:
                return func(*args, **kwargs)
            finally:
                elapsed = timer.clock() - frame[1]
                state.stack.pop()
                totals = state.table.get(name)
                if totals is None:
                    totals = state.table[name] = _Totals()
                totals.calls += 1
                totals.self_cpu += elapsed - frame[2]
                # A stage re-entered through itself counts once in its inclusive time.
                if not any(f[0] == name for f in state.stack):
                    totals.incl_cpu += elapsed
                if state.stack:
                    state.stack[-1][2] += elapsed

        setattr(staged, "__abba_stage__", name)  # the marker a wrapped function carries
        return staged

    def totals(self, names) -> dict[str, dict]:
        out = {name: _Totals() for name in names}
        with self._lock:
            for table in self._tables:
                for name, t in table.items():
                    agg = out.setdefault(name, _Totals())
                    agg.calls += t.calls
                    agg.self_cpu += t.self_cpu
                    agg.incl_cpu += t.incl_cpu
        return {name: {"calls": t.calls, "self_cpu_s": t.self_cpu, "incl_cpu_s": t.incl_cpu}
                for name, t in out.items()}


def wrapper_cost(clock=time.thread_time, calls: int = 20_000) -> float:
    """Thread CPU an armed wrapper adds to one call, on this machine and interpreter: calls
    of a no-op through the wrapper of a fresh timer minus as many bare calls, best of 3 (the
    least disturbed). A stage whose self CPU per call is near this measures the wrapper."""
    timer = StageTimer(clock)
    timer.armed = True

    def noop():
        return None

    wrapped = timer.wrap("noop", noop)
    best = float("inf")
    for _ in range(3):
        t0 = clock()
        for _ in range(calls):
            wrapped()
        t1 = clock()
        for _ in range(calls):
            noop()
        t2 = clock()
        best = min(best, ((t1 - t0) - (t2 - t1)) / calls)
    return max(best, 0.0)


def resolve(path: str):
    """'pkg.mod:Class.meth' -> (owner object, attribute name, static attribute value)."""
    module_name, _, qualname = path.partition(":")
    try:
        owner = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is a configuration error
        raise StageError(f"cannot import module '{module_name}': {type(exc).__name__}: {exc}") from None
    parts = qualname.split(".")
    for part in parts[:-1]:
        try:
            owner = getattr(owner, part)
        except AttributeError:
            raise StageError(f"'{path}': '{part}' not found") from None
    try:
        value = inspect.getattr_static(owner, parts[-1])
    except AttributeError:
        raise StageError(f"'{path}': '{parts[-1]}' not found") from None
    # An inherited method is patched on the named class, so only it and its subclasses see it.
    return owner, parts[-1], value


def install(stages: dict[str, str], timer: StageTimer, optional: frozenset = frozenset()) -> dict[str, bool]:
    """Wrap every configured function; returns {stage: installed}. Missing optional stages
    are reported as not installed; anything else that cannot be wrapped raises StageError."""
    seen: dict[tuple[int, str], str] = {}
    installed: dict[str, bool] = {}
    for name, path in stages.items():
        try:
            owner, attr, value = resolve(path)
        except StageError:
            if name in optional:
                installed[name] = False
                continue
            raise
        key = (id(owner), attr)
        if key in seen:
            raise StageError(f"stages '{seen[key]}' and '{name}' name the same function '{path}'")
        seen[key] = name
        wrapped: object
        if isinstance(value, staticmethod):
            wrapped = staticmethod(timer.wrap(name, value.__func__))
        elif isinstance(value, classmethod):
            wrapped = classmethod(timer.wrap(name, value.__func__))
        elif callable(value):
            wrapped = timer.wrap(name, value)
        else:
            raise StageError(f"'{path}' is not a function or method")
        try:
            setattr(owner, attr, wrapped)
        except (AttributeError, TypeError) as exc:
            raise StageError(f"'{path}' cannot be wrapped: {exc}") from None
        installed[name] = True
    return installed
