"""Existing benchmark suites as campaign items (harness/worker/suites/, docs/suites.md), in this
process: asv discovery and its params expansion from a module's text, what a return value becomes
as outputs, the select rules, and the spec's one-line refusals (pytest suites:
tests/unit/test_pytest_suite.py)."""
from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from harness import contract as C
from suites_support import isolated, write  # noqa: F401 - isolated is a fixture
from harness.worker.suites import asv, common
from harness.plan import spec
from harness.plan.suite import SelectError, keyword_matcher, matcher

ASV = {
    "bm_unit_a/__init__.py": "",
    "bm_unit_a/bench_x.py": """
        CALLS = []

        def setup(*params):
            CALLS.append(("module", params))

        def time_plain():
            return b"abc"

        def track_count():
            return 42
        track_count.unit = "things"

        class Grid:
            params = [[8, 10], ["a", "b"]]
            param_names = ["n", "tag"]
            skip_params = [(10, "b")]

            def setup(self, n, tag):
                CALLS.append(("class", (n, tag)))
                self.n = n

            def time_cells(self, n, tag):
                return [self.n] * 3

            def peakmem_cells(self, n, tag):
                return bytearray(n << 22)  # 40 MiB for 10: above glibc's largest mmap threshold, fresh pages

            def mem_cells(self, n, tag):
                return [tag] * n

        class Flat:
            params = [1, 2, 2]

            def setup(self, x):
                if x == 1:
                    raise NotImplementedError("not for one")

            def time_flat(self, x):
                return x * 1.5

        class Broken:
            def setup(self):
                raise KeyError("no data")

            def time_never(self):
                pass
    """,
}


def asv_setup(root: Path, select=None):
    return asv.setup(SimpleNamespace(tree=root, params={"kind": "asv", "path": "bm_unit_a", "select": select}))


def test_asv_discovery_expands_params_like_asv_and_sets_up_before_the_clock(tmp_path, isolated):
    wl = asv_setup(write(tmp_path, ASV))
    assert wl.items == ["bench_x.Broken.time_never",
                        "bench_x.Flat.time_flat(2 (0))", "bench_x.Flat.time_flat(2 (1))",
                        "bench_x.Grid.time_cells(8, 'a')", "bench_x.Grid.time_cells(8, 'b')",
                        "bench_x.Grid.time_cells(10, 'a')",
                        "bench_x.time_plain"]
    module = sys.modules["bm_unit_a.bench_x"]
    # the module's setup first, then the class's, with the item's parameters, all in setup()
    assert ("module", ()) in module.CALLS and ("module", (1,)) in module.CALLS  # a skipped item's setup ran too
    assert module.CALLS.index(("module", (8, "a"))) < module.CALLS.index(("class", (8, "a")))
    info = wl.metrics()["suite"]
    assert info["skipped"] == {"bench_x.Flat.time_flat(1)": "setup raised NotImplementedError: not for one"}
    assert info["modules"] == {"bm_unit_a.bench_x": "tree:bm_unit_a/bench_x.py"}
    with pytest.raises(KeyError):  # a setup that fails is the item's error, in every run
        wl.run("bench_x.Broken.time_never")
    assert wl.run("bench_x.Grid.time_cells(10, 'a')") == [10, 10, 10]
    # asv's other kinds: measured once in setup(), not timed items
    measured = info["measured"]
    assert measured["bench_x.track_count"] == {"kind": "track", "unit": "things", "type": "track", "value": 42}
    assert sorted(measured) == ["bench_x.Grid.mem_cells(10, 'a')", "bench_x.Grid.mem_cells(8, 'a')",
                                "bench_x.Grid.mem_cells(8, 'b')", "bench_x.Grid.peakmem_cells(10, 'a')",
                                "bench_x.Grid.peakmem_cells(8, 'a')", "bench_x.Grid.peakmem_cells(8, 'b')",
                                "bench_x.track_count"]
    from pympler.asizeof import asizeof

    obj = ["a"] * 8  # asv's measure: what a copy of the object adds
    assert measured["bench_x.Grid.mem_cells(8, 'a')"] == {"kind": "mem", "unit": "bytes",
                                                         "value": asizeof([obj, list(obj)]) - asizeof([obj, obj])}
    peak = measured["bench_x.Grid.peakmem_cells(10, 'a')"]
    if "growth" in peak:  # Linux: the mark reset before the call; the 40 MiB it allocated are in its growth
        assert peak["value"] >= peak["growth"] >= 0
        if resident_growth_of(bytearray, 10 << 22) >= 39 << 20:  # where this kernel counts those pages at all
            assert peak["growth"] >= 39 << 20, peak
    assert ("class", (10, "a")) in module.CALLS  # each measured benchmark had its own setup


def test_asv_select_is_a_regex_on_the_name_with_or_without_params(tmp_path, isolated):
    write(tmp_path, ASV)
    assert asv_setup(tmp_path, r"Grid\.time_cells\(8").items == ["bench_x.Grid.time_cells(8, 'a')",
                                                                 "bench_x.Grid.time_cells(8, 'b')"]
    with pytest.raises(common.SuiteError, match="no asv time benchmark .* matches select 'nothing'"):
        asv_setup(tmp_path, "nothing")
    with pytest.raises(common.SuiteError) as exc:
        asv_setup(tmp_path, "track_")
    assert str(exc.value) == ("no asv time benchmark (time_*) under bm_unit_a matches select 'track_' (it selects 1 "
                              "of other kinds, which are measured beside timed ones, not timed)")


def test_asv_kinds_it_cannot_measure_and_unbounded_params_are_refused_in_one_line(tmp_path, isolated, monkeypatch):
    write(tmp_path, {"bm_unit_k/__init__.py": "", "bm_unit_k/bench_k.py": """
        def time_ok():
            pass

        def timeraw_import():
            return "import json"

        def mem_list():
            return [1, 2]
    """, "bm_unit_k/bench_big.py": """
        class Huge:
            params = [list(range(400))] * 3  # 64 million combinations

            def time_huge(self, a, b, c):
                pass

        def time_small():
            pass
    """, "bm_unit_k/bench_many.py": """
        class Many:
            params = list(range(6000))

            def time_many(self, n):
                pass

        class More:
            params = list(range(6000))

            def time_more(self, n):
                pass
    """, "bm_unit_k/bench_endless.py": """
        import itertools

        class Endless:
            params = itertools.count()

            def time_endless(self, n):
                pass
    """})

    def refused(select, path="bm_unit_k/bench_k.py") -> str:
        with pytest.raises(common.SuiteError) as exc:
            asv.setup(SimpleNamespace(tree=tmp_path, params={"kind": "asv", "path": path, "select": select}))
        assert "\n" not in str(exc.value)
        return str(exc.value)

    assert refused("time_ok|timeraw").startswith("asv benchmark bench_k.timeraw_import is a timeraw benchmark: asv "
                                                 "times the code it returns in a fresh interpreter of its own")
    big = "bm_unit_k/bench_big.py"
    assert refused("Huge", big) == ("asv benchmark bench_big.Huge.time_huge: params of 64,000,000 combinations (400 x "
                                    "400 x 400); a run measures at most 10,000 items: narrow its params (or leave it "
                                    "out with select)")
    # a select its name does not match: each of its 64 million ids would have to be matched; its name is
    wl = asv.setup(SimpleNamespace(tree=tmp_path, params={"kind": "asv", "path": big, "select": r"small|\(1, 2, 3\)"}))
    assert wl.items == ["bench_big.time_small"]
    assert wl.metrics()["suite"]["matched_by_name_only"] == ["bench_big.Huge.time_huge"]
    many = "bm_unit_k/bench_many.py"
    assert refused(r"Many|More", many) == ("the selected asv benchmarks expand to more than 10,000 items (params "
                                           "combinations); a run measures at most that: narrow select")
    assert asv.setup(SimpleNamespace(tree=tmp_path, params={"kind": "asv", "path": many, "select": r"many\(1"})).items \
        == ["bench_many.Many.time_many(1)"] + [f"bench_many.Many.time_many(1{i})" for i in range(10)] + \
        [f"bench_many.Many.time_many(1{i:02d})" for i in range(100)] + \
        [f"bench_many.Many.time_many(1{i:03d})" for i in range(1000)]
    assert refused(None, "bm_unit_k/bench_endless.py").startswith(
        "asv benchmark bench_endless.Endless.time_endless: params with more than 10,000 values")
    monkeypatch.setitem(sys.modules, "pympler.asizeof", None)  # an interpreter without pympler
    assert refused("time_ok|mem_").startswith("asv benchmark bench_k.mem_list is a mem benchmark, which asv sizes "
                                              "with pympler's asizeof, and the target interpreter")


def test_asv_params_expansion_follows_asv():
    assert asv.expand([1, 2], [], "f") == ([(1,), (2,)], ["f(1)", "f(2)"])
    combos, ids = asv.expand([["x"], [1, 2]], ["s", "n"], "g")
    assert combos == [("x", 1), ("x", 2)] and ids == ["g('x', 1)", "g('x', 2)"]
    assert asv.expand([], [], "h") == ([()], ["h"])

    class Thing:
        pass

    _, ids = asv.expand([Thing()], [], "k")
    assert ids[0].startswith("k(<") and " at 0x" not in ids[0]  # no memory address in an id


def test_outputs_are_hashed_when_data_and_said_when_not():
    def one(value):
        outputs, note = common.outputs_of(value)
        return (sorted(outputs), note)

    assert one(None) == ([], "not given: returned None")
    assert one(np.arange(3.0)) == (["return"], "hashed: ndarray float64 [3]")
    assert one(3) == (["return"], "hashed: int") and one(b"x") == (["return"], "hashed: bytes")
    assert one("é")[1] == "hashed: str (its UTF-8 bytes)"
    assert one({"a": [1, (2.0, "x")]})[1] == "hashed: dict (canonical encoding)"
    assert one(object())[1] == "not data: returned object"
    assert one([1, object()])[1] == "not data: returned list (holds object)"
    assert one(np.array(["a"], dtype=object))[1] == "not data: returned an array of dtype object"
    # equal data, equal bytes; a change of type changes them
    digest = lambda v: common.outputs_of(v)[0]["return"].tobytes()  # noqa: E731
    assert digest({"b": 1, "a": 2}) == digest({"a": 2, "b": 1})
    assert digest([1, 2]) != digest((1, 2)) != digest([1.0, 2])
    assert digest({1, 2, 3}) == digest({3, 2, 1})
    assert common.outputs_of(2 ** 70)[0]["return"].dtype == np.uint8  # beyond int64: its canonical bytes


def test_select_rules():
    match = keyword_matcher("foo and not (bar or baz)")
    assert match(["x.py", "test_foo"]) and not match(["test_foo_bar"]) and not match(["test_x"])
    assert keyword_matcher("FOO")(["test_foo[1]"])  # case-insensitive substrings, as -k
    for bad in ("foo and", "(foo", "or foo", "foo )"):
        with pytest.raises(SelectError):
            keyword_matcher(bad)
    assert matcher("asv", r"^bench\.T")(["bench.Time.time_x"])
    with pytest.raises(SelectError):
        matcher("asv", "([")


BASE = b"name: s\ntarget: {repo: /tmp/r}\nbase: {rev: HEAD~1}\ncandidate: {rev: HEAD}\n"


@pytest.mark.parametrize("extra, words", [
    (b"suite: {kind: pytest, path: bench}", "suite.kind: expected one of asv, pytest-benchmark, pytest-codspeed"),
    (b"suite: {kind: asv, path: ../x}", "suite.path: expected a path inside the revision tree"),
    (b"suite: {kind: asv, path: /x}", "suite.path: expected a path inside the revision tree"),
    (b"suite: {kind: asv}", "suite.path: expected a value"),
    (b"suite: {kind: asv, path: x, select: '(['}", "suite.select: expected a readable selection"),
    (b"suite: {kind: pytest-benchmark, path: x, select: 'a and'}", "suite.select: expected a readable selection"),
    (b"suite: {kind: asv, path: x, params: {}}", "suite.params: expected one of the known keys"),
    (b"suite: {kind: asv, path: x, number: 0}", "suite.number: expected"),
    (b"suite: {kind: asv, path: x, number: 2.5}", "suite.number: expected"),
    (b"suite: {kind: asv, path: x, number: '9'}", "suite.number: expected"),
    (b"suite: {kind: asv, path: x, number: true}", "suite.number: expected"),
    (b"suite: {kind: asv, path: x, number: 1000001}", "suite.number: expected"),
    (b"suite: {kind: asv, path: x}\nworkload: {entry: 'a:b'}", "a suite (an existing benchmark suite, docs/suites.md), "
                                                               "not both"),
    (b"", "workload: expected a value (required key is missing; or `suite:`"),
    (b"suite: {kind: asv, path: x, ini: {addopts: ''}}", "suite.ini: expected no ini for an asv suite"),
    (b"suite: {kind: pytest-benchmark, path: x, ini: [addopts]}", "suite.ini: expected a mapping of at most 32"),
    (b"suite: {kind: pytest-benchmark, path: x, ini: {'a b': c}}", "suite.ini: expected pytest configuration names"),
    (b"suite: {kind: pytest-benchmark, path: x, ini: {addopts: [a]}}", "suite.ini.addopts: expected a one-line value"),
    (b"suite: {kind: pytest-benchmark, path: x, ini: {addopts: \"a\\nb\"}}", "suite.ini.addopts: expected a one-line"),
])
def test_spec_refuses_a_bad_suite_in_one_line(extra, words):
    with pytest.raises(spec.SpecError) as exc:
        spec.loads(BASE + extra, Path("/tmp/c.yaml"))
    assert words in str(exc.value) and "\n" not in str(exc.value)


def test_spec_turns_a_suite_into_the_harness_entry_for_its_kind():
    c = spec.loads(BASE + b"suite: {kind: pytest-codspeed, path: bench, select: 'a or b', sys_path: [src], items: 2}",
                   Path("/tmp/c.yaml"))
    assert c.suite == spec.Suite("pytest-codspeed", "bench", "a or b")
    assert c.workload == spec.Workload("harness.worker.suites.pytest_suite:setup", None,
                                       {"kind": "pytest-codspeed", "path": "bench", "select": "a or b"}, ("src",), 2)
    assert spec.loads(BASE + b"suite: {kind: asv, path: b}", Path("/tmp/c.yaml"), {"items": 3}).workload.items == 3
    numbered = spec.loads(BASE + b"suite: {kind: asv, path: b, number: 40}", Path("/tmp/c.yaml")).workload.params
    assert numbered == {"kind": "asv", "path": "b", "select": None, "number": 40}
    ini = spec.loads(BASE + b"suite: {kind: pytest-benchmark, path: b, ini: {addopts: '', xfail_strict: 1}}",
                     Path("/tmp/c.yaml")).workload.params
    assert ini == {"kind": "pytest-benchmark", "path": "b", "select": None, "ini": {"addopts": "", "xfail_strict": "1"}}
    with pytest.raises(spec.SpecError, match="--param: a suite campaign has no params"):
        spec.loads(BASE + b"suite: {kind: asv, path: b}", Path("/tmp/c.yaml"), {"params": {"a": 1}})


COUNTED = {
    "bm_unit_n/__init__.py": "",
    "bm_unit_n/bench_n.py": """
        CALLS = {"plain": 0, "own": 0}

        def time_plain():
            CALLS["plain"] += 1
            return CALLS["plain"]

        class Own:
            number = 7  # asv's own count, read from one side's file: not followed

            def time_own(self):
                CALLS["own"] += 1
                return CALLS["own"]
    """,
}


def test_a_timed_item_makes_the_campaigns_number_of_calls_the_last_ones_return_its_outputs(tmp_path, isolated):
    write(tmp_path, COUNTED)
    wl = asv.setup(SimpleNamespace(tree=tmp_path, params={"kind": "asv", "path": "bm_unit_n", "select": None}))
    calls = sys.modules["bm_unit_n.bench_n"].CALLS
    assert wl.run("bench_n.time_plain") == 1 and calls["plain"] == 1
    assert wl.run("bench_n.Own.time_own") == 1 and calls["own"] == 1  # the benchmark's own number is not used
    assert wl.metrics()["suite"]["number"] == 1
    wl = asv.setup(SimpleNamespace(tree=tmp_path, params={"kind": "asv", "path": "bm_unit_n", "select": "time_",
                                                          "number": 3}))
    assert wl.run("bench_n.time_plain") == 4 and wl.run("bench_n.Own.time_own") == 4
    assert wl.metrics()["suite"]["number"] == 3


@pytest.mark.parametrize("kind, path, extra", [
    ("asv", "benchmarks/benchmarks", None),
    ("pytest-benchmark", "bench/test_core.py", "# ini: {}"),
    ("pytest-codspeed", "bench", "# ini: {}"),
])
def test_init_writes_a_campaign_for_an_existing_suite(tmp_path, capsys, kind, path, extra):
    """`harness init --suite KIND PATH`: the suite set, every other key a comment holding its
    default, and the file loads to that suite."""
    from harness import cli

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / path).mkdir(parents=True) if "." not in Path(path).name else write(repo, {path: ""})
    out = tmp_path / "c.yaml"
    assert cli.main(["init", "--repo", str(repo), "--suite", kind, path, "-o", str(out)]) == 0, capsys.readouterr().err
    text = out.read_text()
    campaign = spec.load(out)
    assert campaign.suite == spec.Suite(kind, path) and campaign.workload.entry == C.SUITE_ENTRIES[kind]
    assert "workload:" not in text and "entry:" not in text
    for default in ("# select: null", "# sys_path: []", "# items: null", "# number: 1", "# rounds: auto",
                    "# metrics: [wall]", "# python: null"):
        assert default in text, default
    assert (extra in text) if extra else "# ini:" not in text
    # what cannot be: one line naming the cause
    for argv, words in ((["--suite", "pytest", path], "--suite pytest: expected one of asv, pytest-benchmark, "
                                                      "pytest-codspeed"),
                        (["--suite", kind, "no/such"], f"--suite {kind} no/such: expected a file or folder inside the "
                                                       "repository"),
                        (["--suite", kind, "../x"], f"--suite {kind} ../x: expected a file or folder inside the "
                                                    "repository")):
        assert cli.main(["init", "--repo", str(repo), *argv, "-o", str(tmp_path / "d.yaml"), "--force"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"harness init: error: {words}") and err.count("\n") == 1, err
    with pytest.raises(SystemExit) as exit_:  # --entry or --suite: argparse's usage line
        cli.main(["init", "--repo", str(repo), "-o", str(tmp_path / "d.yaml")])
    assert exit_.value.code == 2 and "one of the arguments --entry --suite is required" in capsys.readouterr().err


def resident_growth_of(make, *args) -> int:
    """How much this process's resident set grows while make(*args) is held, as the kernel counts it."""
    from harness.worker.suites.asv import memory_status

    before = memory_status().get("VmRSS", 0)
    held = make(*args)
    grown = memory_status().get("VmRSS", 0) - before
    del held
    return grown
