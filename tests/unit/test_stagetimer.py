"""StageTimer with a hand-advanced clock (pyperf style): every figure below is exact.

The fake clock is per thread, like time.thread_time: a stage function "does work" by
advancing its own thread's clock. The real-process counterpart (busy loops of known
relative size in a real campaign) is in test_runner.py::test_stage_cpu_in_a_real_run."""
from __future__ import annotations

import itertools
import sys
import textwrap
import threading

import pytest

from harness.worker.stagetimer import StageError, StageTimer, install


class FakeClock:
    def __init__(self):
        self._local = threading.local()

    def __call__(self) -> float:
        return getattr(self._local, "t", 0.0)

    def advance(self, dt: float) -> None:
        self._local.t = self() + dt


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def timer(clock):
    t = StageTimer(clock=clock)
    t.armed = True
    return t


def test_nested_self_is_inclusive_minus_children(timer, clock):
    def inner_body():
        clock.advance(2)

    inner = timer.wrap("inner", inner_body)

    def outer_body():
        clock.advance(1)
        inner()
        inner()
        clock.advance(3)

    outer = timer.wrap("outer", outer_body)
    outer()
    t = timer.totals(["outer", "inner"])
    assert t["outer"] == {"calls": 1, "self_cpu_s": 4.0, "incl_cpu_s": 8.0}
    assert t["inner"] == {"calls": 2, "self_cpu_s": 4.0, "incl_cpu_s": 4.0}
    assert t["outer"]["self_cpu_s"] == t["outer"]["incl_cpu_s"] - t["inner"]["incl_cpu_s"]


def test_unwrapped_code_between_stages_is_self_time_of_the_caller(timer, clock):
    def helper():  # not a stage: its time belongs to whoever called it
        clock.advance(5)

    inner = timer.wrap("inner", lambda: clock.advance(1))
    outer = timer.wrap("outer", lambda: (helper(), inner()))
    outer()
    t = timer.totals(["outer", "inner"])
    assert t["outer"]["self_cpu_s"] == 5.0 and t["outer"]["incl_cpu_s"] == 6.0
    assert t["inner"]["incl_cpu_s"] == 1.0


def test_direct_recursion_counted_once_in_inclusive(timer, clock):
    def fact(n):
        clock.advance(1)
        return 1 if n <= 1 else n * staged(n - 1)

    staged = timer.wrap("fact", fact)
    assert staged(3) == 6
    t = timer.totals(["fact"])["fact"]
    assert t == {"calls": 3, "self_cpu_s": 3.0, "incl_cpu_s": 3.0}


def test_mutual_recursion_counted_once_in_inclusive(timer, clock):
    def a_body(d):
        clock.advance(1)
        if d:
            b(d - 1)

    def b_body(d):
        clock.advance(2)
        a(d)

    a = timer.wrap("a", a_body)
    b = timer.wrap("b", b_body)
    a(1)  # a(1) -> b(0) -> a(0)
    t = timer.totals(["a", "b"])
    assert t["a"] == {"calls": 2, "self_cpu_s": 2.0, "incl_cpu_s": 4.0}
    assert t["b"] == {"calls": 1, "self_cpu_s": 2.0, "incl_cpu_s": 3.0}


def test_exception_still_closes_the_stage(timer, clock):
    def failing():
        clock.advance(2)
        raise ValueError("boom")

    inner = timer.wrap("inner", failing)

    def outer_body():
        clock.advance(1)
        with pytest.raises(ValueError, match="boom"):
            inner()
        clock.advance(1)

    outer = timer.wrap("outer", outer_body)
    outer()
    outer()  # a leaked frame would make the second outer a child of the first
    t = timer.totals(["outer", "inner"])
    assert t["inner"] == {"calls": 2, "self_cpu_s": 4.0, "incl_cpu_s": 4.0}
    assert t["outer"] == {"calls": 2, "self_cpu_s": 4.0, "incl_cpu_s": 8.0}
    assert timer._state().stack == []


def test_exception_propagates_unchanged(timer):
    class Custom(Exception):
        pass

    err = Custom("x")

    def raiser():
        raise err

    with pytest.raises(Custom) as info:
        timer.wrap("s", raiser)()
    assert info.value is err


def test_unarmed_calls_are_not_counted(clock):
    timer = StageTimer(clock=clock)
    f = timer.wrap("f", lambda: clock.advance(1) or "result")
    assert f() == "result"  # set-up call: not counted
    timer.armed = True
    f()
    f()
    timer.armed = False
    f()  # after the timed loop: not counted
    assert timer.totals(["f"])["f"] == {"calls": 2, "self_cpu_s": 2.0, "incl_cpu_s": 2.0}


def test_stage_never_called_reports_zero(timer):
    assert timer.totals(["never"]) == {"never": {"calls": 0, "self_cpu_s": 0.0, "incl_cpu_s": 0.0}}


def test_per_thread_stacks_aggregate(timer, clock):
    inner = timer.wrap("inner", lambda: clock.advance(1))

    def outer_body(k):
        clock.advance(k)
        inner()

    outer = timer.wrap("outer", outer_body)
    threads_n, calls_n = 4, 25
    barrier = threading.Barrier(threads_n)
    errors = []

    def worker(k):
        try:
            barrier.wait()
            for _ in range(calls_n):
                outer(k)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(1, threads_n + 1)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    t = timer.totals(["outer", "inner"])
    own = sum(k * calls_n for k in range(1, threads_n + 1))  # 250
    assert t["outer"]["calls"] == threads_n * calls_n
    assert t["inner"]["calls"] == threads_n * calls_n
    assert t["outer"]["self_cpu_s"] == own
    assert t["inner"]["incl_cpu_s"] == threads_n * calls_n
    assert t["outer"]["incl_cpu_s"] == own + threads_n * calls_n


def test_wrap_keeps_name_and_marks_the_stage(timer):
    def documented(x):
        """doc"""
        return x + 1

    w = timer.wrap("s", documented)
    assert w(1) == 2
    assert w.__name__ == "documented" and w.__doc__ == "doc" and w.__abba_stage__ == "s"
    assert w.__wrapped__ is documented


# --- install(): patching real modules -------------------------------------------------

_COUNTER = itertools.count()


@pytest.fixture
def module(tmp_path, monkeypatch):
    """A fresh importable module (unique name) with every kind of callable."""
    name = f"stagetarget_{next(_COUNTER)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent('''
        CONSTANT = 3

        def func(x):
            return x * 2

        class Base:
            def meth(self, x):
                return x + 1

            @staticmethod
            def stat(x):
                return x - 1

            @classmethod
            def klass(cls):
                return cls.__name__

            class Inner:
                def deep(self):
                    return "deep"

        class Sub(Base):
            pass
    '''))
    (tmp_path / f"{name}_broken.py").write_text("raise RuntimeError('import-time failure')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    for mod in (name, f"{name}_broken"):
        sys.modules.pop(mod, None)


def test_install_wraps_functions_and_every_method_kind(module, timer):
    stages = {"func": f"{module}:func", "meth": f"{module}:Base.meth", "stat": f"{module}:Base.stat",
              "klass": f"{module}:Base.klass", "deep": f"{module}:Base.Inner.deep"}
    assert install(stages, timer) == {name: True for name in stages}
    mod = sys.modules[module]
    obj = mod.Base()
    assert mod.func(2) == 4
    assert obj.meth(1) == 2
    assert mod.Base.stat(1) == 0 and obj.stat(1) == 0  # still a staticmethod
    assert mod.Base.klass() == "Base" and mod.Sub.klass() == "Sub" and obj.klass() == "Base"
    assert mod.Base.Inner().deep() == "deep"
    t = timer.totals(stages)
    assert {name: t[name]["calls"] for name in stages} == {"func": 1, "meth": 1, "stat": 2, "klass": 3,
                                                           "deep": 1}
    assert isinstance(vars(mod.Base)["stat"], staticmethod)
    assert isinstance(vars(mod.Base)["klass"], classmethod)


def test_inherited_method_is_patched_on_the_named_class_only(module, timer):
    install({"m": f"{module}:Sub.meth"}, timer)
    mod = sys.modules[module]
    mod.Base().meth(1)
    mod.Sub().meth(1)
    mod.Sub().meth(1)
    assert timer.totals(["m"])["m"]["calls"] == 2


@pytest.mark.parametrize("path, match", [
    ("no_such_module_xyz:func", "cannot import module 'no_such_module_xyz'"),
    ("{m}:missing", "'missing' not found"),
    ("{m}:Missing.meth", "'Missing' not found"),
    ("{m}:Base.missing", "'missing' not found"),
    ("{m}:CONSTANT", "is not a function or method"),
    ("{m}_broken:f", "RuntimeError: import-time failure"),
])
def test_install_errors_for_bad_paths(module, timer, path, match):
    with pytest.raises(StageError, match=match):
        install({"s": path.format(m=module)}, timer)


def test_install_refuses_two_stages_on_one_function(module, timer):
    with pytest.raises(StageError, match="name the same function"):
        install({"a": f"{module}:func", "b": f"{module}:func"}, timer)


def test_optional_stage_missing_is_not_installed(module, timer):
    stages = {"present": f"{module}:func", "gone": f"{module}:Base.not_here",
              "nomod": "no_such_module_xyz:f"}
    installed = install(stages, timer, optional=frozenset({"gone", "nomod", "present"}))
    assert installed == {"present": True, "gone": False, "nomod": False}
    # A required stage that is missing is still an error.
    with pytest.raises(StageError):
        install({"gone": f"{module}:Base.not_here"}, StageTimer(), optional=frozenset({"other"}))
