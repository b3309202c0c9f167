"""`suite.number: auto` (docs/suites.md): the spec's word, the calibration rule (a benchmark's
median call -> its calls per timed item), the base pre-flight's calibration in the worker (batches,
its bounds, its one-line refusals), the runner settling the calls into campaign.json before the
first timed run (on the fake launcher), what the summary shows, and both checkers holding every
run's calls to the campaign's (a forged record refused). A real pytest-benchmark suite end to end,
and `harness reproduce` making the recorded calls: tests/process/test_suites.py."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from checks_support import forge, problems, refused
from fakes import Model, ModelLauncher, write_fake_campaign
from harness import contract as C, records, rehash
from harness.engine.progress import Silent
from harness.engine.runner import TIMED_ITEM_S, Runner, timing_notes
from harness.judge.verify import verify
from harness.plan import spec
from harness.plan.suite import AUTO, SuiteParams, calls_for, numbers_problem
from harness.worker import main as worker
from harness.worker.suites.common import Armed, SuiteWorkload, raiser

BASE = b"name: s\ntarget: {repo: /tmp/r}\nbase: {rev: HEAD~1}\ncandidate: {rev: HEAD}\n"


def loads(suite: bytes) -> spec.Campaign:
    return spec.loads(BASE + b"suite: " + suite, Path("/tmp/c.yaml"))


# --------------------------------------------------------------------------- the spec
def test_the_spec_takes_auto_or_a_whole_number_and_refuses_anything_else_in_one_line():
    auto = loads(b"{kind: pytest-benchmark, path: bench, number: auto}")
    assert auto.workload.params["number"] == AUTO and auto.auto_number
    given = loads(b"{kind: asv, path: b, number: 40}")
    assert given.workload.params["number"] == 40 and not given.auto_number
    assert not loads(b"{kind: asv, path: b}").auto_number and "number" not in loads(b"{kind: asv, path: b}").workload.params
    for bad in (b"fast", b"Auto", b"0", b"2.5", b"'9'", b"true", b"1000001", b"{a: 2}", b"[auto]"):
        with pytest.raises(spec.SpecError) as exc:
            loads(b"{kind: asv, path: b, number: " + bad + b"}")
        text = str(exc.value)
        assert "suite.number: expected an integer from 1 to 1,000,000" in text and "or auto (each benchmark's calls " \
            "calibrated on the base's pre-flight)" in text and "\n" not in text, text


def test_a_calibrated_mapping_settles_auto_and_is_held_to_its_shape():
    auto = loads(b"{kind: asv, path: b, number: auto}")
    settled = auto.with_suite_number({"x": 8, "y": 1})
    assert settled.workload.params == {"kind": "asv", "path": "b", "select": None, "number": {"x": 8, "y": 1}}
    assert not settled.auto_number and auto.workload.params["number"] == AUTO  # frozen: a new campaign
    assert settled.with_suite_number({"x": 8}).workload.params["number"] == {"x": 8}  # a re-run keeps its items'
    for bad in ({}, {"x": 3}, {"x": 0}, {"x": True}, {"x": 1 << 20}, {"x": 2.0}, [1], "auto", 4):
        with pytest.raises(ValueError, match="suite.number: expected"):
            auto.with_suite_number(bad)
    with pytest.raises(ValueError, match="only for a campaign of `suite.number: auto`"):
        loads(b"{kind: asv, path: b, number: 4}").with_suite_number({"x": 4})
    assert numbers_problem({"x": C.MAX_AUTO_NUMBER}) is None and numbers_problem({"x": 2 * C.MAX_AUTO_NUMBER})


def test_each_benchmark_makes_its_own_calls_and_a_run_records_them():
    assert SuiteParams("asv", "b").calls_of("x") == 1 and SuiteParams("asv", "b").per_item == 1
    assert SuiteParams("asv", "b", number=7).calls_of("x") == 7 and SuiteParams("asv", "b", number=7).per_item == 7
    assert SuiteParams("asv", "b", number=AUTO).calls_of("x") == 1  # the pre-flight, before calibrating: single calls
    calibrated = SuiteParams.from_json({"kind": "asv", "path": "b", "number": {"x": 64, "y": 1}})
    assert (calibrated.calls_of("x"), calibrated.calls_of("y"), calibrated.calls_of("left out")) == (64, 1, 1)
    assert calibrated.per_item == {"x": 64, "y": 1}
    made = []
    wl = SuiteWorkload("asv", {"x": lambda: made.append("x") or len(made), "y": lambda: made.append("y")}, {},
                       number=calibrated.per_item)
    assert wl.run("x") == 64 and made.count("x") == 64
    wl.run("y")
    assert made.count("y") == 1 and wl.metrics()["suite"]["number"] == {"x": 64, "y": 1}


# --------------------------------------------------------------------------- the rule
@pytest.mark.parametrize("per_call_s, calls", [
    (None, 1),  # raised on its first call: its error is its record, once a timed item
    (0.5, 1), (TIMED_ITEM_S, 1),  # already long enough
    (0.006, 2), (0.004, 4), (0.0025, 4), (0.0024, 8),
    (1e-6, 16384),  # 16384 us >= 10 ms > 8192 us
    (1e-9, C.MAX_AUTO_NUMBER), (0.0, C.MAX_AUTO_NUMBER),  # capped
])
def test_the_calls_are_the_smallest_power_of_two_reaching_a_timed_item(per_call_s, calls):
    assert calls_for(per_call_s, TIMED_ITEM_S) == calls
    if per_call_s and calls < C.MAX_AUTO_NUMBER:
        assert calls * per_call_s >= TIMED_ITEM_S and (calls == 1 or calls // 2 * per_call_s < TIMED_ITEM_S)


def check(repeats: list, item: str = "x") -> records.CheckResult:
    return records.CheckResult(item, {}, [], [item], {}, repeats=repeats)


def test_the_too_short_note_suggests_auto_for_a_suite_and_is_not_said_under_auto():
    short = {"base": check([1e-4] * 6), "candidate": check([1e-4] * 6)}
    [note] = timing_notes(short, 0.02, False, suite=True)
    assert "too short to time" in note and "give `suite: {number: auto}` (each benchmark's calls calibrated on the " \
        "base's pre-flight), or `suite: {number: 100}` (or more)" in note
    assert "number: auto" not in timing_notes(short, 0.02, False)[0]  # a workload repeats its own work
    assert timing_notes(short, 0.02, False, suite=True, auto=True) == []  # calibrated: each timed item >= 10 ms


# --------------------------------------------------------------------------- the worker's calibration
class Prepared(Armed):
    """A pedantic-like benchmark: each call takes arguments made before the clock by arm()."""

    def __init__(self):
        self.ready, self.made, self.bare = [], 0, 0

    def arm(self, n):
        while len(self.ready) < n:
            self.made += 1
            self.ready.append(self.made)

    def __call__(self):
        if not self.ready:
            self.bare += 1
            return 0
        return self.ready.pop()


def test_calibration_times_batches_warm_and_bounded_and_a_first_call_error_is_the_items_own():
    prepared = Prepared()
    slow_calls = []

    def slow():
        slow_calls.append(1)
        worker.spin(0.004)

    wl = SuiteWorkload("asv", {"tiny": lambda: 1, "slow": slow, "broken": raiser(ValueError("no")),
                               "pedantic": prepared}, {})
    found = worker.calibrate(wl, ["tiny", "slow", "broken", "pedantic"], 60.0)
    assert set(found) == {"tiny", "slow", "broken", "pedantic"} and found["broken"] == []
    for item in ("tiny", "slow", "pedantic"):
        assert 1 <= len(found[item]) <= worker.CALIBRATE_BATCHES and all(w > 0 for w in found[item])
    assert max(found["tiny"]) < 1e-4 and min(found["slow"]) >= 0.004  # one call's wall, not a batch's
    assert 1 < len(slow_calls) <= 1 + 2 * worker.CALIBRATE_BATCHES  # a warm call, then whole calls, never many
    assert prepared.bare == 0 and prepared.made > 1  # every timed call's arguments were made before it ran


def test_a_benchmark_that_cannot_be_called_again_and_a_calibration_past_its_budget_are_one_line():
    calls = []

    def once():
        calls.append(1)
        if len(calls) > 1:
            raise RuntimeError("consumed")
        return 1

    with pytest.raises(SystemExit) as exc:
        worker.calibrate(SuiteWorkload("asv", {"bench.once": once}, {}), ["bench.once"], 60.0)
    text = str(exc.value)
    assert text.startswith("suite.number: auto: bench.once returned, then raised when called again in calibration "
                           "(RuntimeError: consumed)") and "`suite: {number: 1}`" in text and "\n" not in text

    def long():
        worker.spin(0.02)

    wl = SuiteWorkload("asv", {"a": long, "b": long, "c": long}, {})
    with pytest.raises(SystemExit) as exc:
        worker.calibrate(wl, ["a", "b", "c"], 0.01)
    text = str(exc.value)
    assert text.startswith("suite.number: auto: calibrating the base's 3 benchmarks ran past its 0.01 s budget "
                           "before b (1 calibrated") and "give `suite: {number: N}` by hand" in text and "\n" not in text


# --------------------------------------------------------------------------- a campaign on the fake launcher
PER_CALL = {"item-0": 2e-6, "item-1": 0.003, "item-2": None, "item-3": 0.05}
WANT = {"item-0": 8192, "item-1": 4, "item-2": 1, "item-3": 1}


class Notes(Silent):
    def __init__(self):
        self.lines = []

    def note(self, text):
        self.lines.append(text)


def auto_campaign(where: Path, **suite) -> tuple:
    path = write_fake_campaign(where, suite={"kind": "asv", "path": "benchmarks", "number": "auto", **suite},
                               rounds=3)
    notes = Notes()
    model = Model(items=4, item_s=0.02, per_call=PER_CALL)
    outcome = Runner(spec.load(path, {}), (where / "bundle").absolute(), launcher=ModelLauncher(model),
                     progress=notes).run()
    return outcome, notes.lines


@pytest.fixture(scope="module")
def auto_bundle(tmp_path_factory) -> tuple:
    return auto_campaign(tmp_path_factory.mktemp("auto"))


def test_auto_is_calibrated_on_the_base_recorded_before_the_runs_and_said_in_one_line(auto_bundle):
    outcome, notes = auto_bundle
    assert outcome.comparison.status == "complete", outcome.comparison.reason
    campaign = json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())
    assert campaign["workload"]["params"]["number"] == WANT
    for run in outcome.out.glob("data/runs/*.json"):
        assert json.loads(run.read_text())["metrics"]["suite"]["number"] == WANT
    assert notes.count(next(n for n in notes if n.startswith("suite.number: auto"))) == 1
    assert ("suite.number: auto: calibrated on the base's pre-flight: 4 benchmark(s), 1-8192 calls each (each timed "
            "item >= 10 ms at its median call, at most 524288 calls); 1 raised when calibrated, 1 call each (their "
            "errors recorded in each run)") in notes
    # said before the first timed run: the pre-flight's lines, then the calibration
    assert notes.index(next(n for n in notes if n.startswith("suite.number"))) > \
        notes.index(next(n for n in notes if n.startswith("pre-flight: candidate")))
    assert not any("too short to time" in n for n in notes)
    assert rehash.rehash(str(outcome.out)).problems == []
    report = verify(outcome.out)
    assert report.exit_code == 0, report.problems or report.unusable


def test_the_summary_shows_each_benchmarks_time_per_call_and_the_calibrated_counts(auto_bundle):
    from harness.bundle import read
    from harness.comparison.analysis import item_times
    from harness.render import summary
    from harness.render.text import ms

    bundle = read.load(auto_bundle[0].out)
    text = summary.render(bundle, "bundle")
    assert "median time per call, each timed over 1-8192 calls" in text
    assert "each run calling each benchmark 1-8192 time(s) per timed item (suite.number: auto: each benchmark's own " \
           "count, calibrated on the base's pre-flight)" in text
    times = item_times(bundle.runs)
    for item, calls in WANT.items():  # each benchmark's timed item over its own calls
        cells = next([c.strip() for c in line.split("|")[1:-1]] for line in text.splitlines()
                     if line.startswith(f"| {item} "))
        assert cells[1:3] == [ms(times[item][0] / calls), ms(times[item][1] / calls)], cells


def test_a_record_whose_calls_are_not_the_campaigns_is_refused_by_both_checkers(auto_bundle, tmp_path):
    import shutil

    def copy(name: str) -> Path:
        return Path(shutil.copytree(auto_bundle[0].out, tmp_path / name))

    def more_calls(record):
        record["metrics"]["suite"]["number"]["item-0"] = 16384

    forged = copy("record")
    forge(forged, {"data/runs/A1.json": more_calls})
    for lines in problems(forged):
        assert refused(lines, "runs/A1.json", "metrics.suite.number", "not the campaign's"), lines

    def odd_count(campaign):
        campaign["workload"]["params"]["number"]["item-1"] = 3

    def fewer(campaign):
        del campaign["workload"]["params"]["number"]["item-3"]

    for name, edit, words in (("odd", odd_count, "not a power of two"),
                              ("fewer", fewer, "calibrated for 3 benchmark(s), not exactly the 4 it runs")):
        forged = copy(name)
        forge(forged, {C.CAMPAIGN_JSON: edit})
        for lines in problems(forged):
            assert refused(lines, "campaign.json", words), (name, lines)

    def auto_left(campaign):
        campaign["workload"]["params"]["number"] = "auto"

    forged = copy("auto")
    forge(forged, {C.CAMPAIGN_JSON: auto_left, **{f"data/runs/{label}.json": (lambda r: r["metrics"]["suite"].update(
        number="auto")) for label in ("A1", "B1", "B2", "A2", "A3", "B3")}})
    for lines in problems(forged):
        assert refused(lines, "campaign.json", "workload.params.number: \"auto\", not calls"), lines


def test_a_fixed_number_holds_every_record_to_it_too(tmp_path):
    path = write_fake_campaign(tmp_path, suite={"kind": "asv", "path": "benchmarks", "number": 8}, rounds=3)
    outcome = Runner(spec.load(path, {}), (tmp_path / "bundle").absolute(),
                     launcher=ModelLauncher(Model(items=3, item_s=0.02))).run()
    assert json.loads((outcome.out / "data/runs/B2.json").read_text())["metrics"]["suite"]["number"] == 8
    assert rehash.rehash(str(outcome.out)).problems == []
    forge(outcome.out, {"data/runs/B2.json": lambda r: r["metrics"]["suite"].update(number=1)})
    for lines in problems(outcome.out):
        assert refused(lines, "runs/B2.json", "metrics.suite.number 1", "(workload.params.number 8)"), lines
