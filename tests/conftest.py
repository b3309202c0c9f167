"""Shared fixtures: the repository root, a CLI runner, and one sealed demo bundle per session."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = ROOT / "campaigns"
TIERS = ("unit", "process", "campaign")
TESTS = ROOT / "tests"


def _tier_selectable(tier: str, markexpr: str) -> bool:
    """Whether `-m markexpr` can select any test of a tier's folder: every test there carries
    that tier's marker and no other tier's, so the expression is tried with the tier's name
    true, the other tiers' false and every assignment of the other names it mentions. True
    when in doubt (an expression pytest's parser refuses, a marker with arguments)."""
    import itertools
    import re

    from _pytest.mark.expression import Expression

    try:
        expression = Expression.compile(markexpr)
    except SyntaxError:
        return True
    words = re.findall(r"([\w.-]+)\s*(\(?)", markexpr)
    if any(paren and word not in ("and", "or", "not") for word, paren in words):
        return True
    others = sorted({word for word, _ in words} - {"and", "or", "not", *TIERS})
    if len(others) > 8:
        return True
    for values in itertools.product((False, True), repeat=len(others)):
        truth = dict(zip(others, values), **{t: t == tier for t in TIERS})
        if expression.evaluate(lambda name, **kwargs: truth.get(name, False)):
            return True
    return False


def pytest_ignore_collect(collection_path, config):
    """A tier folder `-m` cannot select is not collected: `pytest -m unit` then never imports
    the process and campaign tiers' modules (torch among their imports); the tests it runs
    are the same, and the others are left out rather than deselected."""
    markexpr = config.option.markexpr
    if markexpr and collection_path.name in TIERS and collection_path.parent.resolve() == TESTS:
        return None if _tier_selectable(collection_path.name, markexpr) else True
    return None


def pytest_collection_modifyitems(config, items):
    """Each test takes its tier's marker from the folder it lives in (tests/unit, tests/process,
    tests/campaign); a test outside them is an error, so no test escapes the tiers, and so is
    a test marked with another tier's name (pytest_ignore_collect counts on it)."""
    for item in items:
        parts = Path(str(item.fspath)).relative_to(Path(__file__).parent).parts
        if parts[0] not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: tests live in tests/unit, tests/process or tests/campaign")
        if any(mark.name in TIERS and mark.name != parts[0] for mark in item.iter_markers()):
            raise pytest.UsageError(f"{item.nodeid}: a test's tier is its folder ({parts[0]}), never a marker")
        item.add_marker(getattr(pytest.mark, parts[0]))
    if hasattr(config, "workerinput"):
        items.sort(key=lambda item: FIRST.index(item.path.name) if item.path.is_relative_to(TESTS / "unit")
                   and item.path.name in FIRST else len(FIRST))


# Under pytest-xdist (`make test`'s first pass, `-n N`) the tests go out one at a time, as a worker
# takes them, in the order collected, but each file in WHOLE goes to one worker whole: its costly
# module fixture (the summary forms' campaign, the bisect folder) is made once, not in every worker
# (pytest_xdist_make_scheduler below; pytest-xdist's own `--dist loadgroup` does nothing under
# pytest 9.2: it renames item._nodeid, which pytest no longer reads). The longest go out first, so
# the short ones fill in around them, not after them (the unit tier's test time on the 2-core AMD
# EPYC: the full walks 24 s, the bisect folder 14 s and its git, the summary forms 6 s; some 184 s
# in all). The static gate's test first: the worker it lands on waits for mypy (a process of its own,
# on the core that worker leaves) from the start. Single-process, the order is the files' (mypy
# starts with the first unit test, and its test, near the end, finds it done).
FIRST = ("test_types.py", "test_walks.py", "test_bisect_rule.py", "test_summary_forms.py")
WHOLE = ("test_summary_forms.py", "test_bisect_rule.py")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """`-n N` with the default `--dist load`: each test a unit of its own but WHOLE's files, in the
    order collected. A `--dist` named on the command line is left as asked."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.rsplit("/", 1)[-1] in WHOLE else nodeid

    config.option.loadscopereorder = False  # the units go out in the order collected
    return Scheduling(config, log)


# --- the static gate (tests/unit/test_types.py): mypy in a process of its own, started when the
# first unit test starts, so it runs on the second core beside the unit tests (which start no
# worker, read fake clocks and watch no real process), never beside a process or campaign test's
# real measurements and process ledgers (one that comes after unit tests waits for it first) -----
MYPY = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(ROOT / ".cache" / "mypy"), str(ROOT / "harness")]
TYPES_TEST = TESTS / "unit" / "test_types.py"
_mypy_run = pytest.StashKey[dict]()


def start_mypy(config) -> dict:
    """mypy over harness/ started (once per session): {"proc", "out", "err"}, its output in
    files of its own so a long report never blocks it."""
    if _mypy_run not in config.stash:
        import tempfile

        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        proc = subprocess.Popen(MYPY, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        config.stash[_mypy_run] = {"proc": proc, "out": out, "err": err}
    return config.stash[_mypy_run]


def mypy_result(config, timeout: float = 900) -> tuple[str, str, int]:
    """(stdout, stderr, exit status) of the session's mypy run, waited for."""
    run = start_mypy(config)
    status = run["proc"].wait(timeout=timeout)
    run["out"].seek(0)
    run["err"].seek(0)
    return run["out"].read().decode(errors="replace"), run["err"].read().decode(errors="replace"), status


_mypy_wanted = pytest.StashKey[bool]()


def pytest_collection_finish(session):
    # Under pytest-xdist (`make test` runs the unit tier on every core) each worker collects every
    # test but runs only some: mypy starts when test_types asks for it (mypy_result), in the one
    # worker that runs it, never once per worker (the other cores are busy with unit tests anyway).
    worker = hasattr(session.config, "workerinput")
    session.config.stash[_mypy_wanted] = not worker and any(item.path == TYPES_TEST for item in session.items)


def pytest_runtest_setup(item):
    if item.path.is_relative_to(TESTS / "unit"):
        if item.config.stash.get(_mypy_wanted, False):
            start_mypy(item.config)
    elif _mypy_run in item.config.stash:  # a process or campaign test after unit tests: mypy is done first
        item.config.stash[_mypy_run]["proc"].wait()


def pytest_unconfigure(config):
    run = config.stash.get(_mypy_run, None)
    if run is not None:
        if run["proc"].poll() is None:  # the session ended first (-x, an interrupt)
            run["proc"].kill()
            run["proc"].wait()
        run["out"].close()
        run["err"].close()


# --- the unit tier does not wait for the disk: os.fsync is a no-op around each unit test (its
# fixtures' setup and teardown included). A unit test cannot observe durability (no power is
# cut), and the harness's atomic writes fsync every file: thousands of waits of 1 to 4 ms on the
# shared machine's disk. The call is still made where the code makes it, and a test that
# patches os.fsync itself (tests/unit/test_full_disk.py's full disk) gets its own patch. ----------
def _no_fsync(fd: int) -> None:
    os.fstat(fd)  # a closed or bad descriptor still raises, as fsync would


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not item.path.is_relative_to(TESTS / "unit"):
        return (yield)
    real, os.fsync = os.fsync, _no_fsync
    try:
        return (yield)
    finally:
        os.fsync = real


def harness(*args, cwd=None, timeout=600, env=None) -> subprocess.CompletedProcess:
    """Run `python -m harness ARGS` as a user would; returns the completed process (text)."""
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def demo_bundle_master(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "bundle"
    result = harness("run", CAMPAIGNS / "demo.yaml", "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture
def demo_bundle(demo_bundle_master, tmp_path) -> Path:
    """A private copy of the sealed demo bundle, free to mutate."""
    copy = tmp_path / "bundle"
    shutil.copytree(demo_bundle_master, copy, symlinks=True)
    return copy


# --- the unit tier's fake bundles shared by modules that read them, each made once per session
# (about a second each): read one as it is, or copy it before forging (checks_support keeps a
# bundle's campaign file beside it, in the bundle's parent folder) ------------------------------
@pytest.fixture(scope="session")
def full_fake(tmp_path_factory) -> Path:
    """checks_support.full_bundle: a fake bundle with every part a campaign can give it."""
    from checks_support import full_bundle

    return full_bundle(tmp_path_factory.mktemp("full"))


@pytest.fixture(scope="session")
def precise_fake(tmp_path_factory) -> Path:
    """checks_support.precise_bundle: a sequential campaign that went on past its first decided
    look for the precision it asked."""
    from checks_support import precise_bundle

    return precise_bundle(tmp_path_factory.mktemp("precise"))


@pytest.fixture(scope="session")
def counted_fake(tmp_path_factory) -> Path:
    """checks_support.instruction_bundle: a fake bundle with instruction runs (valgrind's probe
    stubbed while it is made)."""
    from checks_support import instruction_bundle

    monkeypatch = pytest.MonkeyPatch()
    try:
        return instruction_bundle(tmp_path_factory.mktemp("counted") / "b", monkeypatch)
    finally:
        monkeypatch.undo()


class WalkBundles(dict):
    """name -> (bundle, original) for the walks (tests/unit/test_walks.py and
    tests/campaign/test_walks_every_bundle.py): a bundle with every part ("full"), its reproduction,
    one with instruction runs, one within max_ulp, one that failed, a family, a gate, a campaign of
    duets and one that asked for a precision. Each is made once a session, when a test first asks
    for it: a worker of `make test`'s parallel pass makes only the ones its tests walk."""

    FIXTURES = {"full": "full_fake", "instructions": "counted_fake", "precise": "precise_fake"}

    def __init__(self, request, tmp_path_factory):
        super().__init__()
        self.request, self.tmp = request, tmp_path_factory

    def __missing__(self, name: str) -> tuple:
        import checks_support as S

        made = {"ulp": S.ulp_bundle, "failed": S.failed_bundle, "family": S.family_bundle, "gate": S.gate_bundle,
                "duet": S.duet_bundle}
        if name in self.FIXTURES:
            pair = self.request.getfixturevalue(self.FIXTURES[name]), None
        elif name == "reproduction":
            full = self.request.getfixturevalue("full_fake")
            pair = S.reproduction(full, self.tmp.mktemp(name) / "again"), full
        else:
            pair = made[name](self.tmp.mktemp(name) / name), None
        self[name] = pair
        return pair


@pytest.fixture(scope="session")
def walk_bundles(request, tmp_path_factory) -> WalkBundles:
    return WalkBundles(request, tmp_path_factory)


# --- helpers for tests that build their own tiny targets (test_runner, test_lock, ...) ---

_patches: dict[tuple, bytes] = {}  # (base, candidate) -> their patch: git makes each one once a session


def make_target(where: Path, base: dict[str, str], candidate: dict[str, str]) -> tuple[Path, Path]:
    """Write a base tree and a patch turning it into the candidate; returns (tree, patch).
    base/candidate map relative file paths to their text (candidate: changed files only). The
    patch of the same two trees is the same bytes (git's diff of the same files), so it is made
    in a scratch repository the first time only: most of the unit tier's fake campaigns build
    the same two-commit target, and five git processes each was a tenth of a fake campaign."""
    import textwrap

    tree = where / "tree"
    for rel, text in base.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(textwrap.dedent(text))
    patch = where / "candidate.patch"
    key = (tuple(sorted(base.items())), tuple(sorted(candidate.items())))
    if key not in _patches:
        _patches[key] = _patch(where, tree, candidate)
    patch.write_bytes(_patches[key])
    return tree, patch


def _patch(where: Path, tree: Path, candidate: dict[str, str]) -> bytes:
    """git's binary diff from the tree to the tree with the candidate's files."""
    import textwrap

    scratch = where / "patch-work"
    shutil.copytree(tree, scratch)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=scratch, check=True)
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=scratch, check=True)
    for rel, text in candidate.items():
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        (scratch / rel).write_text(textwrap.dedent(text))
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True)
    diff = subprocess.run([*git, "diff", "--cached", "--binary"], cwd=scratch, check=True,
                          capture_output=True).stdout
    shutil.rmtree(scratch)
    return diff


def write_campaign(path: Path, tree: Path, patch: Path, workload_dir: Path, entry: str, **fields) -> Path:
    """A campaign YAML over a built target: base = HEAD~1 (tree), candidate = HEAD (patch)."""
    import yaml

    body = {"name": fields.pop("name", path.stem),
            "target": {"build": [{"tree": str(tree), "message": "base"},
                                 {"patch": str(patch), "message": "candidate"}]},
            "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"},
            "workload": {"entry": entry, "path": str(workload_dir), "params": fields.pop("params", {})},
            "order": "AB", "slots": 1, "timeouts": {"run_s": 60, "campaign_s": 300}}
    body.update(fields)
    body = {k: v for k, v in body.items() if v is not None}  # a field given as None leaves the default out
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def small_campaign(where: Path, source: str, entry: str, **fields) -> Path:
    """A campaign over a one-file package whose candidate changes X, with the workload module
    `source` (dedented) as the entry's module; `fields` update the YAML."""
    import textwrap

    tree, patch = make_target(where, {"pkg/__init__.py": "X = 1\n"}, {"pkg/__init__.py": "X = 2\n"})
    workloads = where / "workloads"
    workloads.mkdir()
    (workloads / f"{entry.split(':')[0]}.py").write_text(textwrap.dedent(source))
    return write_campaign(where / "c.yaml", tree, patch, workloads, entry, **fields)


def cache_env(cache: Path) -> dict[str, str]:
    """The test process's environment with a private target cache."""
    return {**os.environ, "ABBA_HARNESS_CACHE": str(cache)}


def no_traceback(result: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in result.stderr and "Traceback" not in result.stdout


def wait_until(condition, what: str, within_s: float = 60.0, poll_s: float = 0.1) -> None:
    """Poll condition() until it holds; a hang guard, not a timing: past within_s the test
    fails saying what never happened."""
    give_up = time.monotonic() + within_s
    while not condition():
        if time.monotonic() > give_up:
            pytest.fail(f"{what} (waited {within_s:g} s)")
        time.sleep(poll_s)


PROBE_CORE = '''
    """Probe library: busy loops of known relative size (outer's own work = inner's two calls)."""
    VERSION = "base"


    def spin(n):
        total = 0
        for i in range(n):
            total += i
        return total


    def inner(n):
        return spin(n)


    def outer(n):
        return spin(n) + inner(n // 2) + inner(n // 2)
'''

PROBE_WORKLOAD = '''
    """Logs every step (label, variant, token, pid, time, the revision's VERSION) to params.log."""
    import json
    import os
    import sys
    import time

    import numpy as np

    from probe import core


    class Probe:
        def __init__(self, ctx):
            self.ctx = ctx
            self.n = int(ctx.params["n"])
            self.items = [f"item-{i}" for i in range(int(ctx.params["items"]))]
            self.write("setup", tree=str(ctx.tree), core_file=core.__file__)

        def write(self, token, **extra):
            row = {"label": self.ctx.label, "variant": self.ctx.variant, "token": token, "pid": os.getpid(),
                   "t_ns": time.time_ns(), "version": core.VERSION, **extra}
            fd = os.open(self.ctx.params["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (json.dumps(row) + "\\n").encode())
            finally:
                os.close(fd)

        def run(self, item):
            self.write("run", item=item)
            return {"value": np.array([core.outer(self.n)], dtype=np.int64)}

        def metrics(self):
            return {"torch_imported": "torch" in sys.modules}

        def close(self):
            self.write("close", torch_imported="torch" in sys.modules)


    def setup(ctx):
        return Probe(ctx)
'''


@pytest.fixture(scope="session")
def probe_runs(tmp_path_factory):
    """Two real campaigns (ABBA and ABBAABBA) over a two-revision 'probe' target whose
    workload logs every step. Returns {order: SimpleNamespace(out, log, result, campaign,
    env, scratch)}; both run at once (separate outputs, logs and scratch folders)."""
    from types import SimpleNamespace

    root = tmp_path_factory.mktemp("probe")
    tree, patch = make_target(root, {"probe/__init__.py": "", "probe/core.py": PROBE_CORE},
                              {"probe/core.py": PROBE_CORE.replace('VERSION = "base"', 'VERSION = "candidate"')})
    workloads = root / "workloads"
    workloads.mkdir()
    import textwrap
    (workloads / "probe_workload.py").write_text(textwrap.dedent(PROBE_WORKLOAD))
    env = cache_env(root / "cache")
    runs, procs = {}, {}
    for order in ("ABBA", "ABBAABBA"):
        here = root / order
        scratch = here / "tmp"
        scratch.mkdir(parents=True)
        log = here / "log" / "steps.log"  # a folder the campaign declares shared: the workers write it
        log.parent.mkdir()
        campaign = write_campaign(here / "probe.yaml", tree, patch, workloads, "probe_workload:setup",
                                  name=f"probe-{order.lower()}", order=order, slots=2,
                                  params={"log": str(log), "n": 100000, "items": 3},
                                  stages={"outer": "probe.core:outer", "inner": "probe.core:inner"},
                                  env={"PROBE_LOG": str(log.parent)})
        run_env = {**env, "TMPDIR": str(scratch)}
        out = here / "bundle"
        procs[order] = subprocess.Popen([sys.executable, "-m", "harness", "run", str(campaign), "--out", str(out)],
                                        cwd=ROOT, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True)
        runs[order] = SimpleNamespace(out=out, log=log, campaign=campaign, env=env, scratch=scratch)
    for order, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        runs[order].result = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    return runs
