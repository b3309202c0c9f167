"""pytest suites run by pytest (harness/worker/suites/pytest_suite.py, docs/suites.md), in this
process: pytest itself collects and sets up small test trees (conftest.py, fixtures of every
scope, parametrize including indirect, marks, the project's configuration), the harness's
`benchmark` fixture records what each test benchmarks, fixture teardowns wait for close(), and
what pytest cannot run here is refused in one line."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from suites_support import isolated, write  # noqa: F401 - isolated is a fixture
from harness.worker.suites import common, pytest_suite


def suite(root: Path, path: str, kind="pytest-benchmark", **params):
    return pytest_suite.setup(SimpleNamespace(tree=root, params={"kind": kind, "path": path, **params}))


def files(root: Path) -> set:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


PYTEST = {
    "pb_unit/__init__.py": "",
    "pb_unit/test_b.py": """
        import pytest

        STATE = {"made": 0}


        def work(n):
            return list(range(n))


        @pytest.mark.parametrize("n", [1, 2])
        @pytest.mark.parametrize("kind", ["x", pytest.param("y", id="why"), pytest.param("z", marks=pytest.mark.skip)])
        def test_work(benchmark, kind, n):
            assert benchmark(work, n) == list(range(n))


        def make():
            STATE["made"] += 1
            return (3,), {}


        def test_pedantic(benchmark):
            benchmark.pedantic(work, setup=make, rounds=5, iterations=1)


        def test_fails(benchmark):
            assert benchmark(work, 1) == []


        @pytest.mark.benchmark
        def test_marked():
            return None


        def test_plain():
            pass


        class TestGroup:
            def test_method(self, benchmark):
                benchmark(work, 2)
    """,
}


def test_pytest_runs_the_file_and_the_items_are_its_node_ids(tmp_path, isolated):
    before = files(write(tmp_path, PYTEST))
    wl = suite(tmp_path, "pb_unit", number=2)
    assert wl.items == ["pb_unit/test_b.py::test_work[x-1]", "pb_unit/test_b.py::test_work[x-2]",
                        "pb_unit/test_b.py::test_work[why-1]", "pb_unit/test_b.py::test_work[why-2]",
                        "pb_unit/test_b.py::test_pedantic", "pb_unit/test_b.py::test_fails",
                        "pb_unit/test_b.py::TestGroup::test_method"]
    info = wl.metrics()["suite"]
    assert info["skipped"] == {"pb_unit/test_b.py::test_work[z-1]": "Skipped: unconditional skip",
                               "pb_unit/test_b.py::test_work[z-2]": "Skipped: unconditional skip"}
    assert info["pytest"].startswith(f"pytest {pytest.__version__} of the target interpreter")
    assert "rootdir ., configuration none" in info["pytest"] and info["tests"] == 11
    # the recorded callable, `number` calls per timed item: work(2), not the test
    assert wl.run("pb_unit/test_b.py::test_work[why-2]") == [0, 1]
    with pytest.raises(AssertionError):  # a failing test is that item's error in every run
        wl.run("pb_unit/test_b.py::test_fails")
    state = next(m for n, m in sys.modules.items() if n.endswith("test_b")).STATE
    # pedantic's setup: once in the test's own call, then the arguments of both timed calls
    assert state["made"] == 3
    assert wl.run("pb_unit/test_b.py::test_pedantic") == [0, 1, 2]
    assert state["made"] == 3  # made before the clock, not inside run()
    assert info["pedantic"]["pb_unit/test_b.py::test_pedantic"]["rounds"] == "5"
    wl.close()
    assert files(tmp_path) == before  # no cache, no bytecode, no basetemp in the tree


def test_codspeed_marker_times_the_whole_test_with_its_fixture_values(tmp_path, isolated):
    write(tmp_path, {"cs_unit/test_c.py": """
        import pytest

        CALLS = []

        @pytest.fixture
        def data():
            return [1, 2, 3]

        @pytest.mark.benchmark
        def test_marked(data):
            CALLS.append(len(data))
            return sum(data)

        @pytest.mark.codspeed_benchmark
        def test_marked_too():
            pass

        def test_fixture(codspeed_benchmark):
            codspeed_benchmark(len, "ab")
    """})
    wl = suite(tmp_path, "cs_unit", "pytest-codspeed", select="marked or fixture")
    assert wl.items == ["cs_unit/test_c.py::test_marked", "cs_unit/test_c.py::test_marked_too",
                        "cs_unit/test_c.py::test_fixture"]
    calls = next(m for n, m in sys.modules.items() if n.endswith("test_c")).CALLS
    assert calls == [3] and wl.run("cs_unit/test_c.py::test_marked") == 6 and calls == [3, 3]
    assert wl.run("cs_unit/test_c.py::test_fixture") == 2
    wl.close()
    # pytest-benchmark does not read the mark: only the test taking the fixture is a benchmark
    assert suite(tmp_path, "cs_unit").items == ["cs_unit/test_c.py::test_fixture"]


FIXTURES = {
    "fx_unit/conftest.py": """
        import pytest

        EVENTS = []


        def pytest_benchmark_update_machine_info(config, machine_info):  # a pytest-benchmark hook
            import psutil_is_never_imported
            machine_info["x"] = 1


        @pytest.fixture(scope="session")
        def corpus():
            EVENTS.append("session up")
            yield "abc " * 100
            EVENTS.append("session down")


        @pytest.fixture(autouse=True)
        def everywhere():
            EVENTS.append("autouse")
    """,
    "fx_unit/test_fx.py": """
        import pytest

        from conftest import EVENTS


        @pytest.fixture(scope="module")
        def words(corpus):
            EVENTS.append("module up")
            yield corpus.split()
            EVENTS.append("module down")


        @pytest.fixture
        def fresh(words):
            box = {"words": list(words)}
            EVENTS.append("function up")
            yield box
            box["torn down"] = True
            EVENTS.append("function down")


        @pytest.fixture
        def size(request):
            return request.param * 10


        @pytest.mark.parametrize("size", [1, 2], indirect=True)
        def test_indirect(benchmark, fresh, size):
            assert benchmark(lambda: len(fresh["words"][:size])) == size


        @pytest.mark.usefixtures("fresh")
        class TestKept:
            @pytest.fixture(scope="class")
            def table(self):
                EVENTS.append("class up")
                yield {}
                EVENTS.append("class down")

            def test_uses(self, benchmark, table, fresh):
                benchmark(lambda box: "torn down" in box, fresh)
    """,
}


def test_fixtures_of_every_scope_are_set_up_by_pytest_and_torn_down_after_the_clock(tmp_path, isolated, monkeypatch):
    write(tmp_path, FIXTURES)
    monkeypatch.setitem(sys.modules, "pytest_benchmark", None)  # not installed: the harness declares its hooks
    wl = suite(tmp_path, "fx_unit")
    assert wl.items == ["fx_unit/test_fx.py::test_indirect[1]", "fx_unit/test_fx.py::test_indirect[2]",
                        "fx_unit/test_fx.py::TestKept::test_uses"]
    events = sys.modules["conftest"].EVENTS
    # pytest made each test its own function-scoped values, the module and the session theirs once
    assert events.count("session up") == 1 and events.count("module up") == 1 and events.count("class up") == 1
    assert events.count("function up") == 3 and events.count("autouse") == 3
    assert not any(e.endswith("down") for e in events)  # every teardown waits for close()
    assert wl.run("fx_unit/test_fx.py::test_indirect[2]") == 20
    assert wl.run("fx_unit/test_fx.py::TestKept::test_uses") is False  # its fixture's value is still set up
    wl.close()
    downs = [e for e in events if e.endswith("down")]
    # the last set up first: the class's fixture came before its test's own, after the other tests'
    assert downs == ["function down", "class down", "function down", "function down", "module down", "session down"]
    assert wl.metrics()["suite"]["conftests"] == ["fx_unit/conftest.py"]


def test_a_suites_own_benchmark_fixture_is_replaced_and_said(tmp_path, isolated):
    write(tmp_path, {"own_unit/conftest.py": """
        import pytest

        @pytest.fixture
        def benchmark():
            raise AssertionError("the suite's own fixture ran")
    """, "own_unit/test_o.py": """
        def test_o(benchmark):
            assert benchmark(len, "abc") == 3
    """})
    wl = suite(tmp_path, "own_unit")
    assert wl.run("own_unit/test_o.py::test_o") == 3
    assert wl.metrics()["suite"]["fixture_replaced"] == {
        "own_unit/conftest.py:4": "the suite's own benchmark fixture, replaced by the harness's"}
    wl.close()


def test_a_hook_that_hands_the_test_another_benchmark_refuses_the_suite(tmp_path, isolated):
    write(tmp_path, {"hook_unit/conftest.py": """
        import pytest

        @pytest.hookimpl(tryfirst=True)
        def pytest_fixture_setup(fixturedef, request):
            if fixturedef.argname == "benchmark":
                value = lambda fn, *a, **k: fn(*a, **k)
                fixturedef.cached_result = (value, fixturedef.cache_key(request), None)
                return value
    """, "hook_unit/test_h.py": """
        def test_h(benchmark):
            benchmark(len, "abc")
    """})
    with pytest.raises(common.SuiteError) as exc:
        suite(tmp_path, "hook_unit")
    assert str(exc.value) == ("hook_unit/test_h.py::test_h: the test never called the harness's benchmark fixture (a "
                              "plugin or hook of the suite handed it another one, which cannot time it)")


CONFIGURED = {
    "pyproject.toml": """
        [tool.pytest.ini_options]
        addopts = "--benchmark-disable --benchmark-min-rounds 9 --strict-markers"
        python_files = ["bench_*.py"]
    """,
    "bench/bench_k.py": """
        import pytest

        @pytest.mark.benchmark(group="core")
        def test_k(benchmark):
            benchmark(sum, [1, 2])
    """,
}


def test_the_projects_configuration_is_read_and_benchmark_options_ignored(tmp_path, isolated):
    write(tmp_path / "outer", {"pytest.ini": "[pytest]\naddopts = --no-such-option\n"})  # above the tree: not read
    tree = write(tmp_path / "outer" / "tree", CONFIGURED)
    wl = suite(tree, "bench")  # a folder: its python_files found bench_k.py
    assert wl.items == ["bench/bench_k.py::test_k"]
    info = wl.metrics()["suite"]
    assert "configuration pyproject.toml" in info["pytest"]
    assert info["options_ignored"] == ["--benchmark-disable", "--benchmark-min-rounds"]
    wl.close()


def test_options_no_plugin_takes_are_refused_in_one_line_and_suite_ini_overrides(tmp_path, isolated):
    write(tmp_path, {"setup.cfg": "[tool:pytest]\naddopts = --cov=pkg -n 4\n",
                     "bench/test_c.py": "def test_c(benchmark):\n    benchmark(len, 'x')\n"})
    with pytest.raises(common.SuiteError) as exc:
        suite(tmp_path, "bench/test_c.py")
    text = str(exc.value)
    assert text.startswith("pytest refused its arguments: unrecognized arguments: --cov=pkg -n (they come from "
                           "the suite's configuration (setup.cfg) or suite.ini") and "\n" not in text
    assert "`suite: {ini: {addopts: ''}}`" in text
    wl = suite(tmp_path, "bench/test_c.py", ini={"addopts": ""})
    assert wl.items == ["bench/test_c.py::test_c"] and wl.metrics()["suite"]["ini"] == {"addopts": ""}
    wl.close()


def test_what_pytest_cannot_run_is_refused_in_one_line(tmp_path, isolated, monkeypatch):
    write(tmp_path, {"pr_unit/test_f.py": """
                         def test_never(benchmark):
                             pass

                         def test_twice(benchmark):
                             benchmark(len, "x")
                             benchmark(len, "y")

                         def test_weave(benchmark):
                             benchmark.weave(len)

                         def test_exits(benchmark):
                             benchmark(exit, 3)
                     """,
                     "pr_unit/test_g.py": "import not_installed_anywhere_xyz\n",
                     "pr_conf/conftest.py": "import not_installed_either_xyz\n",
                     "pr_conf/test_h.py": "def test_h(benchmark):\n    benchmark(len, 'x')\n"})

    def refused(path, **params) -> str:
        with pytest.raises(common.SuiteError) as exc:
            suite(tmp_path, path, **params)
        assert "\n" not in str(exc.value)
        return str(exc.value)

    assert refused("pr_unit/test_f.py", select="never") == \
        "pr_unit/test_f.py::test_never: the test never called the harness's benchmark fixture"
    assert "used twice in one test" in refused("pr_unit/test_f.py", select="twice")
    assert "benchmark.weave is not something a campaign can stand in for" in refused("pr_unit/test_f.py",
                                                                                        select="weave")
    assert refused("pr_unit/test_f.py", select="exits") == (
        "pr_unit/test_f.py::test_exits: raised SystemExit (3), which would end the worker rather than be that item's "
        "recorded error: leave it out with select")
    assert refused("pr_unit/test_g.py").startswith("pr_unit/test_g.py imports not_installed_anywhere_xyz, which the "
                                                   "target interpreter")
    assert refused("pr_conf").startswith("pr_conf/conftest.py imports not_installed_either_xyz, which the target")
    assert refused("pr_unit/test_f.py", select="nothing") == \
        "no pytest-benchmark test (one taking the benchmark fixture) under pr_unit/test_f.py matches select " \
        "'nothing' (0 test(s) collected)"
    assert "Wrong expression passed to '-k'" in refused("pr_unit/test_f.py", select="a,b")
    assert refused("pr_nothing") == "suite.path: pr_nothing is neither a test file nor a folder in the revision's tree"
    monkeypatch.setitem(sys.modules, "pytest", None)  # an interpreter without pytest
    assert refused("pr_unit/test_f.py") == (
        f"the interpreter {sys.executable} has no pytest, which collects and sets up a pytest-benchmark suite: "
        "install pytest in it or set `python:` to one that has it")


def test_the_config_file_is_the_one_pytest_would_find_inside_the_tree(tmp_path):
    tree = write(tmp_path, {"pyproject.toml": "[project]\nname = 'x'\n", "setup.cfg": "[tool:pytest]\n",
                            "a/tox.ini": "[tox]\n", "a/b/test_x.py": "", "c/.pytest.ini": "", "c/test_y.py": ""})
    assert pytest_suite.config_file(tree, tree / "a" / "b" / "test_x.py") == tree / "setup.cfg"
    assert pytest_suite.config_file(tree, tree / "c") == tree / "c" / ".pytest.ini"
    (tree / "setup.cfg").write_text("[metadata]\n")
    assert pytest_suite.config_file(tree, tree / "a") is None  # nothing counts inside; the parent is not read


def test_a_suite_that_imports_or_names_the_plugins_runs_when_they_are_installed(tmp_path, isolated):
    """pytest-benchmark and pytest-codspeed (the `test` extra installs them): a conftest may import
    them and name them as plugins; neither is loaded, the harness's fixture times the call."""
    pytest.importorskip("pytest_benchmark")
    pytest.importorskip("pytest_codspeed")
    write(tmp_path, {"conftest.py": """
        from pytest_benchmark.fixture import BenchmarkFixture
        import pytest_codspeed

        pytest_plugins = ["pytest_benchmark.plugin", "pytest_codspeed.plugin"]

        def pytest_benchmark_update_json(config, benchmarks, output_json):
            output_json["x"] = 1
    """, "pytest.ini": "[pytest]\naddopts = -p pytest_benchmark.plugin --benchmark-autosave --codspeed\n",
        "bench/test_p.py": """
        def test_p(benchmark):
            assert type(benchmark).__module__ == "harness.worker.suites.pytest_suite"
            benchmark(len, "abcd")
    """})
    wl = suite(tmp_path, "bench")
    assert wl.items == ["bench/test_p.py::test_p"] and wl.run("bench/test_p.py::test_p") == 4
    info = wl.metrics()["suite"]
    assert info["plugins"] == [] and info["options_ignored"] == ["--benchmark-autosave", "--codspeed"]
    assert sorted(info["plugins_stood_in_for"]) == ["pytest_benchmark.plugin", "pytest_codspeed.plugin"]
    wl.close()
    assert not (tmp_path / ".benchmarks").exists()


def test_what_pytest_skips_is_left_out_and_pedantic_tears_down_after_the_clock(tmp_path, isolated):
    write(tmp_path, {"sk_unit/test_s.py": """
        import sys

        import pytest

        DOWN = []


        @pytest.fixture
        def needs_thing():
            pytest.skip("no thing here")


        @pytest.mark.skipif(sys.version_info > (3,), reason="python 3")
        def test_skipif(benchmark):
            benchmark(len, "x")


        @pytest.mark.skipif(sys.version_info < (3,), reason="python 2")
        def test_runs(benchmark):
            benchmark(len, "x")


        def test_fixture_skips(benchmark, needs_thing):
            benchmark(len, "x")


        @pytest.mark.xfail(reason="known")
        def test_xfailed(benchmark):
            benchmark(len, "x")
            assert False


        @pytest.mark.xfail(reason="was known", strict=False)
        def test_xpassed(benchmark):
            benchmark(len, "xy")


        def test_importorskip(benchmark):
            pytest.importorskip("not_installed_anywhere_xyz")


        def test_pedantic(benchmark):
            benchmark.pedantic(len, setup=lambda: (([1, 2, 3],), {}), teardown=lambda seq: DOWN.append(len(seq)))
    """})
    wl = suite(tmp_path, "sk_unit", number=3)
    assert wl.items == ["sk_unit/test_s.py::test_runs", "sk_unit/test_s.py::test_xpassed",
                        "sk_unit/test_s.py::test_pedantic"]
    skipped = wl.metrics()["suite"]["skipped"]
    assert skipped == {"sk_unit/test_s.py::test_skipif": "Skipped: python 3",
                       "sk_unit/test_s.py::test_fixture_skips": "Skipped: no thing here",
                       "sk_unit/test_s.py::test_xfailed": "xfail: known",
                       "sk_unit/test_s.py::test_importorskip": "Skipped: could not import "
                                                               "'not_installed_anywhere_xyz': No module named "
                                                               "'not_installed_anywhere_xyz'"}
    down = next(m for n, m in sys.modules.items() if n.endswith("test_s")).DOWN
    assert down == [3]  # the test's own call tore its arguments down, as pytest-benchmark does
    assert wl.run("sk_unit/test_s.py::test_pedantic") == 3 and down == [3]  # nothing torn down inside the clock
    wl.close()
    assert down == [3] * 4  # the arguments of the timed item's 3 calls, torn down after it
