"""pytest-benchmark and pytest-codspeed tests as a campaign's items
(`suite: {kind: pytest-benchmark, path: bench, select: "test_foo or test_bar"}`), run by pytest
itself: in each worker the target interpreter's pytest collects and runs the tests once, untimed,
as `pytest PATH -k SELECT` would from the repository's root (conftest.py files, fixtures of every
scope, parametrize including indirect, marks, skip, skipif, xfail, the project's configuration),
with the harness's plugin standing in for pytest-benchmark's and pytest-codspeed's `benchmark`
fixture. pytest comes from the target interpreter (a lazy import; without it the suite is refused
in one line); neither pytest-benchmark nor pytest-codspeed need be installed.

How pytest's phases map onto the workload protocol (harness/worker/suites/common.py):

- setup(ctx) runs `pytest.main` to its end: collection, then every selected test's setup, call
  and teardown. In the call, `benchmark(fn, *args, **kwargs)` (and `benchmark.pedantic(...)`)
  records fn and its arguments, calls it once and hands the test its result, so the test's own
  assertions run. A test marked `@pytest.mark.benchmark` without the fixture (pytest-codspeed's
  form) records the test function with its fixture values: its whole body is the benchmark.
- Fixture teardowns are held, not run: what a fixture function does after its `yield` (and what it
  gives `request.addfinalizer`) is kept aside while pytest moves on, so pytest still makes each
  test its own function-scoped values, each module its own module-scoped ones, and so on, and
  every value a recorded call holds stays set up through the timed loop. They run in close(),
  after the clock, the last set up first.
- run(item), inside the worker's timer, is `suite.number` calls of the recorded callable (with
  `auto`, the item's own calibrated count) and nothing else; pedantic's `setup` made those calls' arguments before the clock, its `teardown`
  runs in close().

What the harness changes in pytest's run, and why:
- No plugin is loaded from the environment (PYTEST_DISABLE_PLUGIN_AUTOLOAD; PYTEST_ADDOPTS and
  PYTEST_PLUGINS are set aside): what runs is the suite, not what this machine has installed.
  A plugin the suite names itself (`pytest_plugins` in its root conftest.py, `-p NAME` in its
  addopts) is loaded, except pytest-benchmark's and pytest-codspeed's, which the harness stands
  in for (their command-line options are accepted and ignored, their markers registered, and
  pytest-benchmark's hooks declared, so a conftest.py implementing one still loads).
- Nothing is written into the tree: `-p no:cacheprovider`, `--basetemp` in a folder of its own
  (removed in close()), the worker's `sys.dont_write_bytecode` (pytest's rewritten modules are not
  cached).
- The configuration file is the one pytest would find, looked for inside the revision's tree only
  (pytest.ini, .pytest.ini, pyproject.toml, tox.ini, setup.cfg, from the path's folder up to the
  tree's root): one above the tree is not the project's. Without one the rootdir is the tree's
  root, so item ids are pytest's node ids from there (`bench/test_x.py::test_y[1-a]`).
- The candidate's own code cannot replace the harness's fixture: a `benchmark` fixture the suite
  defines (in a conftest.py, a module, a class) is replaced by the harness's and said so in the
  run's metrics (`suite.fixture_replaced`); a test that never called the harness's fixture (a
  plugin or hook that handed it another) refuses the suite.

A test that fails (in its setup or its call) is that item's recorded error in every run; one that
pytest skips (skip, a true skipif, pytest.skip, an xfail that failed) is left out and listed
(`suite.skipped`).

Standard library only, Python 3.9's syntax (the worker's room): pytest is imported inside setup().
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import re
import shutil
import sys
import tempfile
import types
from pathlib import Path

from harness.plan.suite import SuiteParams
from harness.worker.suites.common import Armed, SuiteError, SuiteWorkload, origin, raiser

FIXTURES = ("benchmark", "codspeed_benchmark")  # pytest-benchmark's name; pytest-codspeed's both
MARKERS = ("benchmark", "codspeed_benchmark")  # pytest-codspeed: the whole test is the benchmark
OLDEST = (7, 0)  # the pytest this adapter drives (FixtureDef's finalizer list, cache_key)
# The plugins the harness stands in for, under every name a suite could load them by.
STOOD_IN = ("pytest_benchmark", "pytest_codspeed")
BLOCKED = ("benchmark", "pytest_benchmark", "pytest_benchmark.plugin", "codspeed", "pytest_codspeed",
           "pytest_codspeed.plugin")
# pytest-benchmark's (5.x) and pytest-codspeed's (5.x) command-line options, which a suite's addopts
# may carry (`--benchmark-skip`, `--codspeed`): accepted and ignored (the run's metrics list them).
FLAGS = ("--benchmark-disable-gc", "--benchmark-skip", "--benchmark-disable", "--benchmark-enable",
         "--benchmark-only", "--benchmark-autosave", "--benchmark-save-data", "--benchmark-verbose",
         "--benchmark-quiet", "--codspeed")
OPTIONAL = ("--benchmark-warmup", "--benchmark-compare", "--benchmark-netrc", "--benchmark-histogram",
            "--benchmark-cprofile-dump")  # a value may follow
MANY = ("--benchmark-compare-fail",)
VALUES = ("--benchmark-min-time", "--benchmark-max-time", "--benchmark-min-rounds", "--benchmark-precision",
          "--benchmark-confidence", "--benchmark-timer", "--benchmark-calibration-precision",
          "--benchmark-warmup-iterations", "--benchmark-save", "--benchmark-json", "--benchmark-cprofile",
          "--benchmark-cprofile-loops", "--benchmark-cprofile-top", "--benchmark-storage", "--benchmark-sort",
          "--benchmark-group-by", "--benchmark-columns", "--benchmark-name", "--benchmark-time-unit",
          "--codspeed-mode", "--codspeed-warmup-time", "--codspeed-max-time", "--codspeed-max-rounds")
# pytest's configuration files, in the order it looks for them in each folder, and the table a
# shared file must hold to count (None: the file counts whatever it holds).
CONFIG_FILES = (("pytest.ini", None), (".pytest.ini", None),
                ("pyproject.toml", ("[tool.pytest.ini_options]", "[tool.pytest]")),
                ("tox.ini", ("[pytest]",)), ("setup.cfg", ("[tool:pytest]",)))
MAX_CONFIG_READ = 1 << 20  # bytes of a configuration file read to find its table
MAX_OUTPUT = 64 << 10  # characters of pytest's own output kept for the worker's log


def _dest(option: str) -> str:
    return "harness_ignored_" + option[2:].replace("-", "_")


class Unsupported(SuiteError, AttributeError):
    """A part of pytest-benchmark's fixture the harness does not stand in for (an AttributeError
    too, so `hasattr` reads it as absent); using it refuses the suite."""


def config_file(tree: Path, target: Path) -> Path | None:
    """The configuration file pytest would take for `pytest TARGET`, looked for in the revision's
    tree only: from TARGET's folder up to the tree's root, the first of CONFIG_FILES that counts."""
    folder = target if target.is_dir() else target.parent
    while True:
        for name, tables in CONFIG_FILES:
            path = folder / name
            if not path.is_file():
                continue
            if tables is None:
                return path
            try:
                with open(path, "rb") as fh:
                    text = fh.read(MAX_CONFIG_READ).decode("utf-8", "replace")
            except OSError:
                continue
            if any(table in text for table in tables):
                return path
        if folder == tree or tree not in folder.parents:
            return None
        folder = folder.parent


def _prepared(setup, args, kwargs):
    if setup is None:
        return tuple(args or ()), dict(kwargs or {})
    made = setup()
    if made is None:
        return (), {}
    made_args, made_kwargs = made
    return tuple(made_args or ()), dict(made_kwargs or {})


class Recorder:
    """The harness's `benchmark` fixture, while the test runs once in setup(): it records the
    callable and its arguments, calls it once and hands the test its result."""

    def __init__(self, item):
        self.node = item.nodeid
        self.name = getattr(item, "name", self.node)
        self.fullname = self.node
        spec = getattr(item, "callspec", None)
        self.params = dict(getattr(spec, "params", {}) or {}) or None
        self.param = getattr(spec, "id", None)
        self.group = None
        self.extra_info: dict = {}
        self.disabled = False
        self.enabled = True
        self.target = None  # (fn, args, kwargs, setup, teardown)
        self.pedantic_args: dict = {}

    def _once(self):
        if self.target is not None:
            raise SuiteError(f"{self.node}: the benchmark fixture is used twice in one test (pytest-benchmark and "
                             "pytest-codspeed refuse that too)")

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
        if name.startswith("__"):
            raise AttributeError(name)
        raise Unsupported(f"{self.node}: benchmark.{name} is not something a campaign can stand in for (it offers "
                          "benchmark(fn, ...), benchmark.pedantic(...), extra_info, group, name and params)")


class Pedantic(Armed):
    """benchmark.pedantic with a setup: the arguments of each of a timed item's `number` calls are
    made before the clock (in setup(); by arm() for the pre-flight's calibration of `number: auto`;
    a call beyond them, in the pre-flight's repeats, makes its own); the teardown of every set of
    arguments a call used runs in close()."""

    def __init__(self, target, setup, teardown, number: int):
        self.target, self.setup, self.teardown = target, setup, teardown
        self.ready = [_prepared(setup, (), {}) for _ in range(number)]
        self.used: list = []

    def arm(self, n: int) -> None:
        while len(self.ready) < n:
            self.ready.append(_prepared(self.setup, (), {}))

    def __call__(self):
        args, kwargs = self.ready.pop() if self.ready else _prepared(self.setup, (), {})
        self.used.append((args, kwargs))
        return self.target(*args, **kwargs)

    def close(self):
        used, self.used = self.used, []
        if self.teardown is not None:
            for args, kwargs in used:
                self.teardown(*args, **kwargs)


class Run:
    """What the harness's plugin saw of one pytest session."""

    def __init__(self, kind: str, tree: Path):
        self.kind, self.tree = kind, tree
        self.recorders: dict = {}  # nodeid -> Recorder
        self.marked: set = set()  # nodeids of marked tests without the fixture (the body is timed)
        self.bodies: dict = {}  # nodeid -> the marked test's function with its fixture values
        self.phases: dict = {}  # nodeid -> {when: (outcome, exception or None, skip reason)}
        self.collect_errors: list = []  # (nodeid, pytest's text)
        self.held: list = []  # fixture teardowns kept for close(), in the order their fixtures were set up
        self.replaced: dict = {}  # where a suite's own benchmark fixture was defined -> what happened
        self.order: list = []  # the benchmark items, in pytest's order
        self.tests = 0  # what pytest collected and -k kept
        self.ignored: list = []  # pytest-benchmark/codspeed options in the suite's configuration
        self.plugins: list = []  # plugins the suite loaded itself
        self.taken_out: list = []  # pytest-benchmark's and pytest-codspeed's, when the suite loaded them
        self.conftests: list = []
        self.rootdir = self.inifile = None
        self.modules: dict = {}

    def where(self, func) -> str:
        func = inspect.unwrap(func)
        try:
            path = Path(inspect.getsourcefile(func) or "?")
            line = func.__code__.co_firstlineno
        except (TypeError, AttributeError):
            return repr(func)[:100]
        try:
            path = path.resolve().relative_to(self.tree.resolve())
        except ValueError:
            pass
        return f"{path.as_posix()}:{line}"

    def recorder(self, request):
        node = request.node
        if not hasattr(node, "nodeid") or not hasattr(node, "function"):
            raise SuiteError(f"the benchmark fixture was requested by {getattr(node, 'nodeid', node)!r}, not by a test "
                             "(a fixture of a wider scope cannot hold one test's benchmark)")
        if node.nodeid not in self.recorders:
            self.recorders[node.nodeid] = Recorder(node)
        return self.recorders[node.nodeid]


def _ours(func) -> bool:
    return getattr(inspect.unwrap(func), "harness_benchmark_fixture", False) is True


def plugins(pytest, run: Run) -> list:
    """The harness's two plugins for one session: the one that stands in for pytest-benchmark and
    pytest-codspeed, and the one that holds fixture teardowns until close()."""
    hookimpl = pytest.hookimpl
    stand_in = types.ModuleType("harness_benchmark_stand_in")
    hold = types.ModuleType("harness_fixture_hold")

    def benchmark(request):
        return run.recorder(request)

    def codspeed_benchmark(request):
        return run.recorder(request)

    for func in (benchmark, codspeed_benchmark):
        func.harness_benchmark_fixture = True  # type: ignore[attr-defined]
        setattr(stand_in, func.__name__, pytest.fixture(name=func.__name__)(func))

    @hookimpl(hookwrapper=True)
    def pytest_load_initial_conftests(early_config, parser, args):
        """After the plugins the suite names (`-p NAME` in its addopts, `pytest_plugins` in its root
        conftest.py) are loaded: pytest-benchmark's and pytest-codspeed's are taken out again, and
        their options declared where they are not (accepted, ignored)."""
        run.ignored = [name for name in FLAGS + OPTIONAL + MANY + VALUES
                       if any(arg == name or arg.startswith(name + "=") for arg in args)]  # with the addopts
        yield
        manager = early_config.pluginmanager
        loaded = set()  # the families whose plugin was loaded, and with it declared its own options
        for name, plugin in list(manager.list_name_plugin()):
            family = str(getattr(plugin, "__name__", "")).split(".")[0]
            if family in STOOD_IN:
                loaded.add(family)
                run.taken_out.append(str(getattr(plugin, "__name__", name)))
                manager.unregister(plugin)
        for name in BLOCKED:
            manager.set_blocked(name)
        group = parser.getgroup("harness", "pytest-benchmark's and pytest-codspeed's options, accepted and ignored "
                                           "(the harness's benchmark fixture stands in for theirs)")
        for name in FLAGS + OPTIONAL + MANY + VALUES:
            if STOOD_IN[name.startswith("--codspeed")] in loaded:
                continue
            kind = ({"action": "store_true"} if name in FLAGS else {"nargs": "?", "const": True} if name in OPTIONAL
                    else {"nargs": "+"} if name in MANY else {})
            group.addoption(name, default=None, dest=_dest(name), **kind)

    def pytest_configure(config):
        try:
            from pytest_benchmark import hookspec as specs  # the installed one's own, exactly
        except Exception:  # noqa: BLE001 - not installed (or broken): the harness's copy of their names
            specs = benchmark_hookspecs(pytest)
        with contextlib.suppress(ValueError):  # declared already (by pytest-benchmark, loaded and taken out)
            config.pluginmanager.add_hookspecs(specs)
        for mark in MARKERS:
            config.addinivalue_line("markers", f"{mark}: a benchmark, timed by the harness")
        run.rootdir = getattr(config, "rootpath", None) or getattr(config, "rootdir", None)
        run.inifile = getattr(config, "inipath", None) or getattr(config, "inifile", None)

    @hookimpl(tryfirst=True)
    def pytest_fixture_setup(fixturedef, request):
        """A `benchmark` fixture that is not the harness's is replaced by it (its function does not
        run); the harness's own goes through pytest as any fixture does."""
        if fixturedef.argname not in FIXTURES or _ours(fixturedef.func):
            return None
        run.replaced[run.where(fixturedef.func)] = (f"the suite's own {fixturedef.argname} fixture, replaced by the "
                                                    "harness's")
        value = run.recorder(request)
        fixturedef.cached_result = (value, fixturedef.cache_key(request), None)
        return value

    @hookimpl(trylast=True)
    def pytest_collection_modifyitems(session, config, items):
        run.tests = len(items)
        keep: list = []
        drop: list = []
        for item in items:
            fixture = any(name in FIXTURES for name in getattr(item, "fixturenames", ()))
            marked = not fixture and run.kind == "pytest-codspeed" and hasattr(item, "function") and \
                any(item.get_closest_marker(mark) is not None for mark in MARKERS)
            if marked:
                run.marked.add(item.nodeid)
            (keep if fixture or marked else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
        items[:] = keep

    def pytest_collection_finish(session):
        run.order = [item.nodeid for item in session.items]
        for item in session.items:
            module = getattr(item, "module", None)
            if module is not None:
                run.modules[module.__name__] = origin(module, run.tree)
        for name, plugin in session.config.pluginmanager.list_name_plugin():
            if plugin is None or plugin in (stand_in, hold):
                continue
            module = plugin.__name__ if isinstance(plugin, types.ModuleType) else type(plugin).__module__
            top = module.split(".")[0]
            path = getattr(plugin, "__file__", None)
            if isinstance(plugin, types.ModuleType) and module.rpartition(".")[2] == "conftest" and path:
                run.conftests.append(_relative(Path(path), run.tree))
            elif top not in ("_pytest", "pytest", "pluggy", "py"):
                run.plugins.append(module)

    def pytest_collectreport(report):
        if report.failed:
            run.collect_errors.append((report.nodeid, str(getattr(report, "longreprtext", report.longrepr))))

    @hookimpl(tryfirst=True)
    def pytest_pyfunc_call(pyfuncitem):
        """A marked test without the fixture: the test function, called with its fixture values,
        is the benchmark; called here once (its assertions run) and recorded."""
        if pyfuncitem.nodeid not in run.marked:
            return None
        function = pyfuncitem.obj
        if inspect.iscoroutinefunction(function) or inspect.isasyncgenfunction(function):
            return None  # pytest's own refusal of an async test
        names = getattr(getattr(pyfuncitem, "_fixtureinfo", None), "argnames", None)
        if names is None:
            names = [n for n in inspect.signature(function).parameters if n in pyfuncitem.funcargs]
        body = functools.partial(function, **{n: pyfuncitem.funcargs[n] for n in names})
        run.bodies[pyfuncitem.nodeid] = body
        body()
        return True

    @hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(item, call):
        outcome = yield
        report = outcome.get_result()
        exc = call.excinfo.value if call.excinfo is not None else None
        reason = None
        if report.skipped:
            wasxfail = getattr(report, "wasxfail", None)
            if wasxfail is not None:
                reason = f"xfail: {wasxfail}"[:200]
            else:
                longrepr = report.longrepr
                reason = str(longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else longrepr)[:200]
        run.phases.setdefault(item.nodeid, {})[call.when] = (report.outcome, exc, reason)

    @hookimpl(hookwrapper=True)
    def held_setup(fixturedef, request):
        """The finalizers a fixture's own setup added (its code after `yield`, its
        request.addfinalizer calls) are taken off it and kept for close(): pytest still finishes
        the fixture between tests (a fresh value for the next), but nothing it made is torn down."""
        finalizers = getattr(fixturedef, "_finalizers", None)
        start = len(finalizers) if isinstance(finalizers, list) else None
        yield
        if start is not None and isinstance(finalizers, list):
            run.held.extend(finalizers[start:])
            del finalizers[start:]

    for func in (pytest_load_initial_conftests, pytest_configure, pytest_fixture_setup,
                 pytest_collection_modifyitems, pytest_collection_finish, pytest_collectreport, pytest_pyfunc_call,
                 pytest_runtest_makereport):
        setattr(stand_in, func.__name__, func)
    hold.pytest_fixture_setup = held_setup  # type: ignore[attr-defined]
    return [stand_in, hold]


def benchmark_hookspecs(pytest):
    """pytest-benchmark's hooks (5.x, its hookspec.py), declared when it is not installed: pytest
    refuses a conftest.py that implements a hook nobody declared. The harness never calls them."""
    def pytest_benchmark_scale_unit(config, unit, benchmarks, best, worst, sort):
        pass

    def pytest_benchmark_generate_machine_info(config):
        pass

    def pytest_benchmark_update_machine_info(config, machine_info):
        pass

    def pytest_benchmark_generate_commit_info(config):
        pass

    def pytest_benchmark_update_commit_info(config, commit_info):
        pass

    def pytest_benchmark_group_stats(config, benchmarks, group_by):
        pass

    def pytest_benchmark_generate_json(config, benchmarks, include_data, machine_info, commit_info):
        pass

    def pytest_benchmark_update_json(config, benchmarks, output_json):
        pass

    def pytest_benchmark_compare_machine_info(config, benchmarksession, machine_info, compared_benchmark):
        pass

    specs = types.ModuleType("harness_benchmark_hookspecs")
    first = (pytest_benchmark_scale_unit, pytest_benchmark_generate_machine_info,
             pytest_benchmark_generate_commit_info, pytest_benchmark_group_stats, pytest_benchmark_generate_json)
    for func in first + (pytest_benchmark_update_machine_info, pytest_benchmark_update_commit_info,
                         pytest_benchmark_update_json, pytest_benchmark_compare_machine_info):
        setattr(specs, func.__name__, pytest.hookspec(firstresult=func in first)(func))
    return specs


def _relative(path: Path, tree: Path) -> str:
    try:
        return path.resolve().relative_to(tree.resolve()).as_posix()
    except ValueError:
        return str(path)


def import_pytest(kind: str):
    try:
        import pytest
    except ImportError:
        raise SuiteError(f"the interpreter {sys.executable} has no pytest, which collects and sets up a {kind} suite: "
                         "install pytest in it or set `python:` to one that has it") from None
    version = tuple(int(p) for p in re.findall(r"\d+", str(getattr(pytest, "__version__", "0")))[:2])
    if version < OLDEST:
        raise SuiteError(f"the interpreter {sys.executable} has pytest {pytest.__version__}; a {kind} suite needs "
                         f"pytest {OLDEST[0]}.{OLDEST[1]} or newer: upgrade it there or set `python:`")
    return pytest


def arguments(tree: Path, target: Path, params: SuiteParams, folder: Path) -> tuple[list, Path | None]:
    """pytest's command line for the suite: the path, its own configuration file (or none, with the
    tree's root as rootdir), `-k SELECT`, `suite.ini` as `-o name=value`, and the harness's."""
    config = config_file(tree, target)
    args = [str(target), "-p", "no:cacheprovider", "--basetemp", str(folder / "basetemp"), "-q"]
    if config is not None:
        args += ["-c", str(config)]  # the rootdir is its folder, as when pytest finds it
    else:
        empty = folder / "pytest.ini"
        empty.write_text("[pytest]\n")
        args += ["-c", str(empty), "--rootdir", str(tree), "--confcutdir", str(tree)]
    if params.select:
        args += ["-k", params.select]
    for name, value in (params.ini or {}).items():
        args += ["-o", f"{name}={value}"]
    return args, config


@contextlib.contextmanager
def _session_env(tree: Path):
    """pytest's environment for the session: no plugin autoloaded, none named by the shell, the
    tree as the working directory (as `pytest PATH` from the repository's root); all put back."""
    saved = {k: os.environ.get(k) for k in ("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    cwd = os.getcwd()
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    os.environ.pop("PYTEST_ADDOPTS", None)
    os.environ.pop("PYTEST_PLUGINS", None)
    os.chdir(tree)
    try:
        yield {k: v for k, v in saved.items() if v is not None and k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    finally:
        os.chdir(cwd)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _missing(text: str) -> str | None:
    m = re.search(r"No module named '([^']+)'", text)
    return m.group(1) if m else None


def _installs(missing: str) -> str:
    return (f"imports {missing}, which the target interpreter ({sys.executable}) does not have: install it there "
            f"(pip install {missing.split('.')[0].replace('_', '-')}) or name one that has it with `python:`")


def _last_error(text: str) -> str:
    lines = [line[1:].strip() for line in text.splitlines() if line.startswith("E ")]
    if lines:
        return lines[-1][:300]
    rest = [line.strip() for line in text.splitlines() if line.strip()]
    return (rest[-1] if rest else "no message")[:300]


def refusal(code: int, output: str, run: Run, config: Path | None, tree: Path) -> str:
    """One line for a pytest session that ended before its tests ran."""
    if run.collect_errors:
        nodeid, text = run.collect_errors[0]
        missing = _missing(text)
        more = f" (and {len(run.collect_errors) - 1} more)" if len(run.collect_errors) > 1 else ""
        return f"{nodeid or 'the suite'} {_installs(missing)}{more}" if missing else \
            f"{nodeid or 'the suite'}: pytest could not collect it: {_last_error(text)}{more}"
    conftest = re.search(r"ImportError while loading conftest '([^']+)'", output)
    if conftest:
        where = _relative(Path(conftest.group(1)), tree)
        missing = _missing(output)
        return f"{where} {_installs(missing)}" if missing else f"{where}: cannot be imported: {_last_error(output)}"
    usage = re.findall(r"error: (.+)", output)
    if code == 4 and usage:
        source = f"the suite's configuration ({_relative(config, tree)}) or suite.ini" if config else "suite.ini"
        return (f"pytest refused its arguments: {usage[-1].strip()[:300]} (they come from {source}; no plugin is "
                "loaded from the environment: name the one they need with `-p NAME` in the addopts, or run without "
                "the configuration's addopts with `suite: {ini: {addopts: ''}}`)")
    return f"pytest stopped before the tests ran (exit code {code}): {_last_error(output)}"


def setup(ctx):
    params = SuiteParams.from_json(ctx.params)
    kind = params.kind
    tree = Path(ctx.tree).resolve()
    target = tree / params.path
    if not target.exists():
        raise SuiteError(f"suite.path: {params.path} is neither a test file nor a folder in the revision's tree")
    pytest = import_pytest(kind)
    folder = Path(tempfile.mkdtemp(prefix="harness-pytest-"))
    cleanup = functools.partial(shutil.rmtree, folder, True)
    run = Run(kind, tree)
    try:
        args, config = arguments(tree, target, params, folder)
        output = io.StringIO()
        with _session_env(tree) as set_aside, contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            code = int(pytest.main(args, plugins=plugins(pytest, run)))
        text = output.getvalue()
        sys.stderr.write(text[-MAX_OUTPUT:])  # pytest's own report, for the worker's log
        if code not in (0, 1, 5) or run.collect_errors:
            raise SuiteError(refusal(code, text, run, config, tree))
        calls, teardowns, skipped, pedantic = items(run, params.calls_of)
    except BaseException:
        for finalizer in reversed(run.held):
            with contextlib.suppress(Exception):
                finalizer()
        cleanup()
        raise
    if not calls:
        what = "one taking the benchmark fixture" + (", or marked @pytest.mark.benchmark"
                                                     if kind == "pytest-codspeed" else "")
        raise SuiteError(f"no {kind} test ({what}) under {params.path} matches select {params.select!r}"
                         f" ({run.tests} test(s) collected" + (f", {len(skipped)} skipped" if skipped else "") + ")")
    teardowns += [finalizer for finalizer in reversed(run.held)] + [cleanup]
    version = getattr(pytest, "__version__", "?")
    info = {"kind": kind, "path": params.path, "select": params.select, "benchmarks": len(calls),
            "tests": run.tests, "skipped": skipped, "modules": run.modules,
            "pytest": (f"pytest {version} of the target interpreter collected and set up the tests: rootdir "
                       f"{_relative(Path(str(run.rootdir)), tree) if run.rootdir else '?'}, configuration "
                       f"{_relative(Path(str(run.inifile)), tree) if config is not None else 'none'}, "
                       f"{len(run.conftests)} conftest.py, plugins: {', '.join(run.plugins) or 'none'}"),
            "pytest_file": origin(pytest, tree), "conftests": run.conftests[:50], "plugins": run.plugins[:50],
            "plugins_stood_in_for": run.taken_out,
            "fixture_replaced": dict(list(run.replaced.items())[:50]),
            "options_ignored": run.ignored, "environment_ignored": sorted(set_aside),
            "pedantic": {k: {kk: repr(vv)[:40] for kk, vv in v.items()} for k, v in list(pedantic.items())[:200]}}
    if params.ini:
        info["ini"] = dict(params.ini)
    return SuiteWorkload(kind, calls, info, teardowns, params.per_item)


def items(run: Run, number):
    """The timed callable of every benchmark pytest ran, in pytest's order: (calls, teardowns,
    skipped, pedantic's arguments); number(nodeid): the calls of one timed item. A failed setup or call is the item's error in every run; a
    skip leaves it out; a harness refusal raised inside a test refuses the suite."""
    calls, teardowns, skipped, pedantic = {}, [], {}, {}
    for nodeid in run.order:
        phases = run.phases.get(nodeid, {})
        for when in ("setup", "call"):
            exc = phases.get(when, (None, None, None))[1]
            if isinstance(exc, SuiteError):
                raise SuiteError(str(exc))
        reason = next((r for _, _, r in phases.values() if r is not None), None)
        if reason is not None:
            skipped[nodeid] = reason
            continue
        failed = next((phases[w][1] for w in ("setup", "call") if w in phases and phases[w][0] == "failed"), None)
        if failed is not None:
            if not isinstance(failed, Exception):  # SystemExit, KeyboardInterrupt: not an error a run records
                raise SuiteError(f"{nodeid}: raised {type(failed).__name__} ({str(failed)[:100]}), which would end the "
                                 "worker rather than be that item's recorded error: leave it out with select")
            calls[nodeid] = raiser(failed)
            continue
        if "call" not in phases:
            raise SuiteError(f"{nodeid}: pytest did not run it (its run stopped early: -x or --maxfail in the suite's "
                             "configuration stops at a failing test)")
        if nodeid in run.marked:
            calls[nodeid] = run.bodies[nodeid]
            continue
        recorder = run.recorders.get(nodeid)
        if recorder is None or recorder.target is None:
            raise SuiteError(f"{nodeid}: the test never called the harness's benchmark fixture"
                             + (" (a plugin or hook of the suite handed it another one, which cannot time it)"
                                if recorder is None else ""))
        target, args, kwargs, psetup, pteardown = recorder.target
        if recorder.pedantic_args:
            pedantic[nodeid] = recorder.pedantic_args
        if psetup is not None:
            call = Pedantic(target, psetup, pteardown, number(nodeid))
            teardowns.append(call.close)
            calls[nodeid] = call
        else:
            calls[nodeid] = functools.partial(target, *args, **kwargs)
            if pteardown is not None:
                teardowns.append(functools.partial(pteardown, *args, **kwargs))
    return calls, teardowns, skipped, pedantic
