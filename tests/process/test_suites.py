"""Existing benchmark suites as campaigns (docs/suites.md): a small target holding an asv suite
and a pytest-benchmark test file, two revisions, a `suite:` campaign per kind with no workload
code, to a bundle both checkers verify, the outputs of benchmarks that return data hashed for
parity, and those that return none said to be "not given"; a suite that cannot run is one line."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from checks_support import problems
from conftest import ROOT, harness, make_target, no_traceback
from harness import outcomes, rehash
from harness.files import read_json
from harness.judge.verify import verify

CORE = """\
def work(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


class Box:
    def __init__(self, n):
        self.n = n
"""
FASTER = """\
def work(n):
    return (n - 1) * n * (2 * n - 1) // 6


class Box:
    def __init__(self, n):
        self.n = n
"""
FILES = {
    "pkg/__init__.py": "",
    "pkg/core.py": CORE,
    "benchmarks/benchmarks/__init__.py": "",
    "benchmarks/benchmarks/bench_core.py": """\
        import numpy as np

        from pkg import core

        TABLE = None


        def setup(*params):
            global TABLE
            TABLE = np.arange(8.0)


        def time_table():
            return TABLE * 2


        class Work:
            params = [[20000, 40000]]
            param_names = ["n"]

            def setup(self, n):
                self.n = n

            def time_work(self, n):
                core.work(self.n)

            def track_value(self, n):
                return core.work(n)
        """,
    "bench/__init__.py": "",
    "bench/test_core.py": """\
        import pytest

        from pkg import core


        @pytest.mark.parametrize("n", [20000, 40000])
        def test_work(benchmark, n):
            assert benchmark(core.work, n) == sum(i * i for i in range(n))


        def test_pedantic(benchmark):
            benchmark.pedantic(core.work, setup=lambda: ((30000,), {}), rounds=3, iterations=2)


        def test_box(benchmark):
            benchmark(core.Box, 3)
        """,
    "bench/test_missing.py": """\
        import not_installed_anywhere_xyz
        """,
    "bench/test_calibrate.py": """\
        import time

        from pkg import core


        def test_tiny(benchmark):
            assert benchmark(core.work, 8) == 140


        def test_slow(benchmark):
            benchmark(time.sleep, 0.02)
        """,
    "bench/test_limited.py": """\
        CALLS = []


        def limited():
            CALLS.append(1)
            if len(CALLS) > 20:
                raise RuntimeError("its pool of 20 is used up")


        def test_limited(benchmark):
            benchmark(limited)
        """,
}


@pytest.fixture(scope="module")
def target(tmp_path_factory):
    where = tmp_path_factory.mktemp("suites")
    tree, patch = make_target(where, FILES, {"pkg/core.py": FASTER})
    # the campaign files live in a repository of their own, so `verify --repo` has anchors to check
    subprocess.run(["git", "init", "-q"], cwd=where, check=True)
    return where, tree, patch


def campaign(where: Path, tree: Path, patch: Path, name: str, suite: dict) -> Path:
    path = where / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "name": name, "target": {"build": [{"tree": str(tree), "message": "base"},
                                           {"patch": str(patch), "message": "candidate"}]},
        "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"}, "suite": suite, "order": "ABBA",
        "timeouts": {"run_s": 120, "campaign_s": 600}}, sort_keys=False))
    return path


@pytest.mark.parametrize("suite, given, not_given", [
    ({"kind": "asv", "path": "benchmarks/benchmarks"},
     {"bench_core.time_table": "hashed: ndarray float64 [8]"},
     {"bench_core.Work.time_work(20000)": "not given: returned None",
      "bench_core.Work.time_work(40000)": "not given: returned None"}),
    ({"kind": "pytest-benchmark", "path": "bench/test_core.py", "select": "work or pedantic or box"},
     {"bench/test_core.py::test_work[20000]": "hashed: int", "bench/test_core.py::test_work[40000]": "hashed: int",
      "bench/test_core.py::test_pedantic": "hashed: int"},
     {"bench/test_core.py::test_box": "not data: returned pkg.core.Box"}),
    ({"kind": "asv", "path": "benchmarks/benchmarks", "select": "time_", "number": 3},
     {"bench_core.time_table": "hashed: ndarray float64 [8]"},
     {"bench_core.Work.time_work(20000)": "not given: returned None",
      "bench_core.Work.time_work(40000)": "not given: returned None"}),
], ids=["asv", "pytest-benchmark", "asv-number"])
def test_a_suite_runs_unchanged_to_a_verified_bundle_with_parity_hashed(target, suite, given, not_given):
    where, tree, patch = target
    tag = suite["kind"] + ("-number" if "number" in suite else "")
    yaml_path = campaign(where, tree, patch, f"suite-{tag}", suite)
    out = where / f"out-{tag}"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "outputs: not given by this benchmark for" in result.stdout
    comparison = read_json(out / "data" / "comparison.json")
    assert comparison["parity"]["identical"] and comparison["parity"]["fields_compared"] == 3 * len(given)
    for label in ("A1", "B1", "B2", "A2"):
        record = read_json(out / "data" / "runs" / f"{label}.json")
        fields = {it["id"]: sorted(it["fields"]) for it in record["items"]}
        assert {i: fields[i] for i in given} == {i: ["return"] for i in given}
        assert {i: fields[i] for i in not_given} == {i: [] for i in not_given}
        assert record["metrics"]["suite"]["outputs"] == {**given, **not_given}
        assert record["metrics"]["suite"]["number"] == suite.get("number", 1)
    report = verify(out)
    assert report.exit_code == 0, report.problems or report.unusable
    assert not rehash.rehash(str(out)).problems
    checked = harness("verify", out, "--repo", where)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    summary = harness("summary", out)
    assert "Outputs: not given by this benchmark for" in summary.stdout
    if suite == {"kind": "asv", "path": "benchmarks/benchmarks"}:  # asv's track benchmarks: measured, not timed
        measured = read_json(out / "data" / "runs" / "A1.json")["metrics"]["suite"]["measured"]
        assert measured["bench_core.Work.track_value(20000)"] == {"kind": "track", "unit": "unit", "type": "track",
                                                                   "value": sum(i * i for i in range(20000))}
        value = f"{sum(i * i for i in range(20000)):.6g} (median of 2)"
        line = ("Measured, not timed (asv's track, mem and peakmem benchmarks, once per run before the clock; no "
                f"verdict): bench_core.Work.track_value(20000) (track, unit): base {value}, candidate {value}")
        assert line.replace("_", "\\_") in summary.stdout and line.replace("Measured", "measured") in result.stdout
    assert "Stages: not given by this benchmark" in summary.stdout
    calls = f"calling each benchmark {suite['number']} times per timed item" if "number" in suite else \
        "calling each benchmark once"
    assert calls in result.stdout and calls in summary.stdout


def test_number_auto_calibrates_each_benchmark_on_the_base_and_reproduce_makes_the_recorded_calls(target):
    """`suite.number: auto` on a real pytest-benchmark file: a benchmark of about a microsecond gets
    many calls per timed item, one of 20 ms one call; campaign.json records them before the runs,
    every run makes them, both checkers verify the bundle, and `harness reproduce` makes the
    recorded calls without calibrating again."""
    where, tree, patch = target
    tiny, slow = "bench/test_calibrate.py::test_tiny", "bench/test_calibrate.py::test_slow"
    yaml_path = campaign(where, tree, patch, "suite-auto",
                         {"kind": "pytest-benchmark", "path": "bench/test_calibrate.py", "number": "auto"})
    out = where / "out-auto"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    said = re.findall(r"suite\.number: auto: calibrated on the base's pre-flight: 2 benchmark\(s\), 1-(\d+) calls each "
                      r"\(each timed item >= 10 ms at its median call, at most 524288 calls\)", result.stderr)
    assert len(said) == 1, result.stderr
    assert "too short to time" not in result.stdout + result.stderr
    numbers = read_json(out / "data" / "campaign.json")["workload"]["params"]["number"]
    assert numbers == {tiny: int(said[0]), slow: 1}, numbers
    assert 64 <= numbers[tiny] <= 2 ** 19 and numbers[tiny] & (numbers[tiny] - 1) == 0  # a power of two, many calls
    for label in ("A1", "B1", "B2", "A2"):
        assert read_json(out / "data" / "runs" / f"{label}.json")["metrics"]["suite"]["number"] == numbers
    report = verify(out)
    assert report.exit_code == 0, report.problems or report.unusable
    alone = subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(out)], capture_output=True,
                           text=True)
    assert alone.returncode == 0, alone.stdout + alone.stderr
    checked = harness("verify", out, "--repo", where)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert f"calling each benchmark 1-{numbers[tiny]} time(s) per timed item (suite.number: auto" in result.stdout

    again = where / "out-auto.reproduction"
    reproduced = harness("reproduce", out, "--repo", where, "--out", again, "--order", "AB")
    assert reproduced.returncode in outcomes.REPRODUCTION_CODES.values(), reproduced.stdout + reproduced.stderr
    assert "calibrated on the base's pre-flight:" not in reproduced.stdout + reproduced.stderr  # never again
    assert f"suite.number: auto's calls as it calibrated them (2 benchmarks, 1-{numbers[tiny]} calls each)" in \
        reproduced.stdout
    assert read_json(again / "data" / "campaign.json")["workload"]["params"]["number"] == numbers
    for label in ("A1", "B1"):
        assert read_json(again / "data" / "runs" / f"{label}.json")["metrics"]["suite"]["number"] == numbers
    assert not rehash.rehash(str(again)).problems
    report = verify(again)
    assert report.exit_code == 0, report.problems or report.unusable


def test_a_benchmark_that_cannot_be_called_again_refuses_auto_in_one_line_before_any_run(target):
    where, tree, patch = target
    yaml_path = campaign(where, tree, patch, "suite-limited",
                         {"kind": "pytest-benchmark", "path": "bench/test_limited.py", "number": "auto"})
    out = where / "out-limited"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    [line] = [line for line in result.stderr.splitlines() if "suite.number: auto:" in line]
    assert ("base (" in line and "): suite.number: auto: bench/test_limited.py::test_limited returned, then raised "
            "when called again in calibration (RuntimeError: its pool of 20 is used up)") in line, line
    assert "give `suite: {number: 1}`" in line and "campaign 'suite-limited'" not in result.stderr  # no run began
    assert not out.exists()


# The layout of a real library's pytest-benchmark file (markdown-it-py's benchmarking/, written
# anew here): a file pytest is given by name (bench_core.py, not test_*), a test taking two
# fixtures defined in the same file, a group mark, and beside it a conftest.py holding a
# pytest-benchmark hook whose body imports what this interpreter lacks; the project's pytest
# configuration carries a plugin's key (pytest-timeout's) that pytest only warns about.
MDLITE = {
    "mdlite/__init__.py": "from mdlite.main import MarkdownIt\n",
    "mdlite/main.py": """\
        import re


        class MarkdownIt:
            def __init__(self, preset):
                self.preset = preset

            def render(self, text):
                out = []
                for line in text.splitlines():
                    heading = re.match(r"^(#+) (.*)$", line)
                    if heading:
                        n = len(heading.group(1))
                        out.append(f"<h{n}>{heading.group(2)}</h{n}>")
                    elif line.strip():
                        out.append("<p>" + re.sub(r"\\*(.+?)\\*", r"<em>\\1</em>", line) + "</p>")
                return "\\n".join(out) + "\\n"
        """,
    "benchmarking/conftest.py": """\
        def pytest_benchmark_update_machine_info(config, machine_info):
            import psutil_is_not_installed_here

            machine_info["cpus"] = psutil_is_not_installed_here.cpu_count()
        """,
    "benchmarking/bench_core.py": """\
        from pathlib import Path

        import pytest

        import mdlite


        @pytest.fixture
        def spec_text():
            return Path(__file__).parent.joinpath("samples", "spec.md").read_text()


        @pytest.fixture
        def parser():
            return mdlite.MarkdownIt("commonmark")


        @pytest.mark.benchmark(group="core")
        def test_spec(benchmark, parser, spec_text):
            benchmark(parser.render, spec_text)
        """,
    "benchmarking/samples/spec.md": "".join(f"# Part {i}\n\nSome *emphasis* and text {i}.\n\n" for i in range(400)),
    "pyproject.toml": """\
        [tool.pytest.ini_options]
        xfail_strict = true
        timeout = 10
        """,
}
MDLITE_FASTER = {"mdlite/main.py": MDLITE["mdlite/main.py"].replace(
    "            def render(self, text):", "            HEADING = re.compile(r\"^(#+) (.*)$\")\n\n            def render(self, text):").replace(
    'heading = re.match(r"^(#+) (.*)$", line)', "heading = self.HEADING.match(line)")}


def test_a_real_librarys_benchmark_file_with_fixtures_and_a_conftest_runs_unchanged(tmp_path):
    """What issue 46 found refused ("needs the fixture(s) ..."): pytest collects and sets it up,
    the benchmarked call is what is timed, to a bundle both checkers verify."""
    where = tmp_path
    tree, patch = make_target(where, MDLITE, MDLITE_FASTER)
    subprocess.run(["git", "init", "-q"], cwd=where, check=True)
    suite = {"kind": "pytest-benchmark", "path": "benchmarking/bench_core.py"}
    yaml_path = campaign(where, tree, patch, "suite-mdlite", suite)
    out = where / "out"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    for label in ("A1", "B1", "B2", "A2"):
        record = read_json(out / "data" / "runs" / f"{label}.json")
        assert [(it["id"], sorted(it["fields"]), it.get("error")) for it in record["items"]] == \
            [("benchmarking/bench_core.py::test_spec", ["return"], None)]
        info = record["metrics"]["suite"]
        assert info["outputs"] == {"benchmarking/bench_core.py::test_spec": "hashed: str (its UTF-8 bytes)"}
        assert "collected and set up the tests: rootdir ., configuration pyproject.toml, 1 conftest.py, " \
               "plugins: none" in info["pytest"]
    comparison = read_json(out / "data" / "comparison.json")
    assert comparison["parity"]["identical"] and comparison["parity"]["fields_compared"] == 3
    report = verify(out)
    assert report.exit_code == 0, report.problems or report.unusable
    assert not rehash.rehash(str(out)).problems
    checked = harness("verify", out, "--repo", where)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "collected and set up the tests" in harness("summary", out).stdout
    # the library's repository is a bisect folder's --repo, not a bundle's: said so
    from harness.plan import revisions, spec

    target = revisions.target_repo(spec.load(yaml_path))
    wrong = harness("verify", out, "--repo", target)
    assert wrong.returncode == 2 and no_traceback(wrong)
    assert (f"--repo: expected the repository holding the campaign file suite-mdlite.yaml (the bundle's campaign_path); "
            f"{target} has no such file (it holds the campaign's commit ") in wrong.stderr, wrong.stderr
    assert "it is the target repository, which --repo names for a bisect folder, not for a bundle)" in wrong.stderr


@pytest.fixture
def asv_copy(target, tmp_path) -> Path:
    """A private copy of the asv bundle the test above made, free to forge."""
    import shutil

    out = target[0] / "out-asv"
    if not out.is_dir():
        pytest.skip("needs the asv bundle of the test above")
    return Path(shutil.copytree(out, tmp_path / "b"))


def test_an_item_without_outputs_is_allowed_for_suites_only(asv_copy):
    """The checkers' rule: neither fields nor an error is a suite's benchmark that gave none; in a
    workload's bundle it is still a broken record."""
    copy = asv_copy
    path = copy / "data" / "campaign.json"
    doc = json.loads(path.read_text())
    doc["workload"]["entry"] = "my_workload:setup"
    path.write_text(json.dumps(doc))
    problems = rehash.rehash(str(copy)).problems
    assert any("neither fields nor an error" in p for p in problems), problems


def test_a_suite_that_cannot_run_is_one_line_and_no_bundle(target):
    where, tree, patch = target
    yaml_path = campaign(where, tree, patch, "suite-missing", {"kind": "pytest-benchmark", "path": "bench"})
    out = where / "out-missing"
    result = harness("run", yaml_path, "--out", out)
    assert result.returncode == 2 and no_traceback(result)
    assert ("suite: bench/test_missing.py imports not_installed_anywhere_xyz, which the target interpreter"
            in result.stderr), result.stderr
    assert not out.exists()


def test_a_revision_with_committed_symlinks_exports_as_regular_files(tmp_path):
    """networkx commits benchmarks/pyproject.toml -> "../pyproject.toml\\n" (a link to nothing): a
    link to a file of the tree is copied in, one to nothing left out, one out of the tree refused."""
    import os

    from harness.plan import revisions

    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    (repo / "real.txt").write_text("bytes\n")
    os.symlink("../real.txt", repo / "sub" / "link.txt")
    os.symlink("../real.txt\n", repo / "sub" / "dangling.txt")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "links"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                         text=True).stdout.strip()
    revisions.export(repo, sha, tmp_path / "tree")
    link = tmp_path / "tree" / "sub" / "link.txt"
    assert not link.is_symlink() and link.read_text() == "bytes\n"
    assert not os.path.lexists(tmp_path / "tree" / "sub" / "dangling.txt")
    revisions.tree_digest(tmp_path / "tree")  # regular files only: the digest stands for them

    os.symlink("/etc/hostname", repo / "out.txt")
    subprocess.run([*git, "add", "-A"], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "out"], cwd=repo, check=True)
    with pytest.raises(RuntimeError, match="out.txt"):  # tarfile's data filter, or ours: one line naming it
        revisions.export(repo, "HEAD", tmp_path / "tree2")
