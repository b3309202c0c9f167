"""Issue 28 ("Your code, your interpreter, your PR"): the words a newcomer met on a first campaign
of their own, without a worker process: campaigns on the fake launcher and model worker
(tests/fakes.py), the judging and rendering functions on constructed inputs. Each test says
what the user hit; the words asserted are the ones the harness prints."""
from __future__ import annotations

import dataclasses
import io
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from fakes import Model, ModelLauncher, comparison, record, run_fake, write_fake_campaign
from harness import cli, contract as C, outcomes, records, rehash, rules as R
from harness.bundle.model import Stats
from harness.comparison import analysis
from harness.engine import progress as progress_module
from harness.engine.progress import Progress, Silent
from harness.engine.runner import Runner
from harness.judge import reproduce
from harness.plan import spec


class Notes(Silent):
    """A progress that keeps what the runner says."""

    def __init__(self):
        self.lines: list[str] = []

    def note(self, msg: str) -> None:
        self.lines.append(msg)


def run_model(where: Path, model: Model, **fields) -> tuple[Runner, object, Notes]:
    """(runner, outcome, notes) of a whole campaign on the model worker, bundle at where/bundle."""
    notes = Notes()
    runner = Runner(spec.load(write_fake_campaign(where, **fields)), (where / "bundle").absolute(), progress=notes,
                    launcher=ModelLauncher(model))
    return runner, runner.run(), notes


# --- 1. an all-digit short SHA --------------------------------------------------------------------
def test_init_quotes_an_all_digit_short_sha_so_the_campaign_reads_it_as_a_string(tmp_path, capsys):
    """`harness init --base 1234567` wrote `rev: 1234567`, which YAML reads as a number. init
    quotes both revisions, and the campaign it wrote loads them as the strings given."""
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    out = tmp_path / "campaign.yaml"
    code = cli.main(["init", "--repo", str(tmp_path / "repo"), "--base", "1234567", "--candidate", "0123456",
                     "--entry", "bench:setup", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    text = out.read_text()
    assert '  rev: "1234567"' in text and '  rev: "0123456"' in text
    campaign = spec.load(out)
    assert (campaign.base.rev, campaign.candidate.rev) == ("1234567", "0123456")


@pytest.mark.parametrize("written", ["1234567", "0123456"])
def test_an_unquoted_all_digit_rev_is_one_line_naming_the_key_and_the_fix(tmp_path, capsys, written):
    """A hand-written `rev: 1234567` was read as a number and the user got a message about a
    commit or file that does not exist. `harness check` now stops at the campaign file with one
    line naming the key and the fix, quoting what was written: 0123456 is octal to YAML (42798),
    and quoting 42798 would name another commit."""
    path = tmp_path / "c.yaml"
    path.write_text(f"name: x\ntarget: {{repo: .}}\nbase:\n  rev: {written}   # the short SHA\ncandidate: {{rev: "
                    "WORKTREE}\nworkload: {entry: 'bench:setup'}\n")
    assert cli.main(["check", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1, err
    assert err[0].startswith(f"harness check: error: {path.resolve()}: base.rev: expected a git commit-ish as a string")
    assert f'(quote it: rev: "{written}")' in err[0] and "does not exist" not in err[0]


# --- 6. what the workload snapshot leaves out -------------------------------------------------------
def test_the_workload_snapshot_leaves_out_bundles_staging_git_and_byte_code_and_lists_them(tmp_path):
    """The user kept bench/ as the workload folder and wrote bundles into it (bench/out, as the
    README does); the next campaign stored the earlier bundle, .git and byte code as its
    workload. The snapshot stores only the workload's own files and the receipt lists what it
    left out by rule."""
    earlier, _ = run_fake(tmp_path / "a", Model(), rounds=2)
    where = tmp_path / "b"
    workloads = where / "workloads"
    shutil.copytree(earlier.out, workloads / "out" / "earlier")
    for rel in (".git/HEAD", "__pycache__/helper.cpython-311.pyc", "lib/__pycache__/x.cpython-311.pyc",
                "stale.pyc", "old.partial-123/data/x.json", ".again.run-77/data/x.json", "prev.replaced-5/bagit.txt"):
        (workloads / rel).parent.mkdir(parents=True, exist_ok=True)
        (workloads / rel).write_text("not the workload\n")
    (workloads / "helper.py").write_text("SCALE = 2\n")
    (workloads / "lib" / "util.py").write_text("X = 1\n")
    outcome, _ = run_fake(where, Model(), out=workloads / "out" / "now", rounds=2)
    bundle = outcome.out
    stored = sorted(p.relative_to(bundle / C.WORKLOAD_DIR).as_posix()
                    for p in (bundle / C.WORKLOAD_DIR).rglob("*") if p.is_file())
    assert stored == ["helper.py", "lib/util.py", "model_workload.py"]
    receipt = json.loads((bundle / C.WORKLOAD).read_text())
    assert [row["path"] for row in receipt["files"]] == stored
    # folders with a trailing /; out/.now.lock is this campaign's own lock beside its --out
    assert receipt["left_out"] == [".again.run-77/", ".git/", "__pycache__/", "lib/__pycache__/", "old.partial-123/",
                                   "out/.now.lock", "out/earlier/", "prev.replaced-5/", "stale.pyc"]
    assert not rehash.rehash(str(bundle)).problems


# --- 7. rounds: auto when min_rounds forces more than the budget fits -------------------------------
def test_rounds_auto_says_min_rounds_forced_the_count_and_how_long_it_takes(tmp_path):
    """With `rounds: auto`, a 5 s budget and runs of several seconds, the runner said that 5
    rounds fit the budget, and the campaign then took a minute. It now says how many rounds
    the budget fits, that the minimum forced 5, and about how long that takes."""
    runner, outcome, notes = run_model(tmp_path, Model(item_s=1.0), rounds="auto", budget_s=5, min_rounds=5)
    campaign = json.loads((outcome.out / C.CAMPAIGN_JSON).read_text())
    assert campaign["rounds"] == 5
    first = [json.loads((outcome.out / C.run_path(label)).read_text()) for label in campaign["labels"][:2]]
    pace = sum(r["process"]["wall_s"] for r in first)
    assert pace > 5  # one round alone overruns the budget
    said = [line for line in notes.lines if line.startswith("rounds: auto: ")]
    assert said == [f"rounds: auto: the first round took {pace:.1f} s, so 1 round(s) would fit the 5 s budget; the "
                    f"first look after 5 rounds makes it about {5 * pace / 60:.1f} minutes (`min_rounds:` lowers it, "
                    "to 3 at the least)"]
    assert "rounds fit the" not in said[0]


# --- 8. the progress estimate per kind of run ---------------------------------------------------------
class FakeTime:
    def __init__(self):
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now


def test_the_progress_estimate_times_instruction_runs_and_stage_runs_at_their_own_pace(monkeypatch):
    """A campaign with instruction runs promised "about 1:30 left" and took half an hour: every
    run was priced at the mean of those so far, and a run under valgrind takes tens of times a
    wall run. The estimate counts each kind at its own pace, stage runs with the wall runs, and
    says how many instruction runs are not yet timed."""
    clock = FakeTime()
    monkeypatch.setattr(progress_module, "time", clock)
    plan = [label for label, *_ in R.schedule("ABabBA", R.instruction_order(2))]
    assert plan == ["A1", "IA1", "B1", "IB1", "As1", "IB2", "Bs1", "IA2", "B2", "A2"]
    stream = io.StringIO()
    p = Progress(stream)
    p.start("demo", plan)
    for index, (label, seconds) in enumerate([("A1", 10.0), ("IA1", 600.0)]):
        p.run_started(index, label, "base")
        clock.now += seconds
        p.run_finished(index, label, SimpleNamespace(status="ok", wall_s=1.0, instructions=None, reason=None))
    p.run_started(2, "B1", "candidate")
    lines = stream.getvalue().splitlines()
    # after A1: five wall and stage runs at 10 s, four instruction runs not yet timed
    assert "harness: run 2/10 IA1 (base) started; elapsed 0:10, about 0:50 left and 4 instruction run(s) not yet " \
           "timed" in lines
    # after IA1: those five at 10 s, three instruction runs at 600 s
    assert "harness: run 3/10 B1 (candidate) started; elapsed 10:10, about 30:50 left" in lines


# --- 9. outputs one ULP apart, with and without a declared tolerance ----------------------------------
def test_outputs_that_already_differ_are_noted_at_the_pre_flight_and_the_campaign_runs(tmp_path):
    """The pre-flight saw the outputs differ and said nothing; the user learned it at the end.
    The runner now notes it (with the fix) and runs the campaign; its verdict line shows the
    timing beside the parity mismatch."""
    runner, outcome, _ = run_model(tmp_path, Model(differ=True))
    assert runner.warnings == ["pre-flight: base and candidate outputs already differ on item item-0 (field(s) out): "
                               "parity will fail; if the change moves floats in their last bits by design, declare "
                               "`parity: {max_ulp: N}`"]
    assert outcome.exit_code == outcomes.PARITY
    line = outcomes.line(outcome.comparison)
    assert line.startswith("verdict: parity mismatch, timing improved (exit 3): ") and "x faster [" in line


def test_a_declared_ulp_tolerance_says_within_and_never_identical_or_equal(tmp_path):
    """With `parity: {max_ulp: 4}` and outputs one ULP apart the line must not say the outputs
    are identical or equal: it says "within 4 ULP (close, not identical", and the timing verdict
    is there."""
    runner, outcome, _ = run_model(tmp_path, Model(differ=True), parity={"max_ulp": 4})
    assert runner.warnings[0].endswith("parity will fail")  # the fix is declared already
    line = outcomes.line(outcome.comparison)
    assert line.startswith("verdict: improved (exit 0): ") and "(candidate/base " in line
    assert "; outputs within 4 ULP (close, not identical: max seen 1 ULP, " in line
    assert "outputs equal" not in line
    assert "parity identical" not in line and "byte-identical" not in line


# --- 11. honest words in reproduce ------------------------------------------------------------------------
def test_fewer_rounds_chosen_by_rounds_auto_are_stated_as_a_fact(tmp_path, capsys):
    """A re-run under `rounds: auto` chose 5 rounds where the original ran 8. What reproduce
    prints states the counts as a fact and judges by the re-run's own interval: no "weaker",
    no "spot check"; nor does `harness reproduce --help` promise a "weaker check" that the
    output would say."""
    original, _ = run_fake(tmp_path / "a", Model(ratio=0.5, noise=0.01, seed=1), rounds=8)
    rerun, _ = run_fake(tmp_path / "b", Model(ratio=0.5, noise=0.01, seed=2), rounds="auto", budget_s=1,
                        min_rounds=5)
    from harness.bundle import read

    receipt = reproduce.receipt(read.load(original.out), read.load(rerun.out))
    assert receipt.scope.note == "the same 6 items; 5 rounds against the original's 8"
    said = " ".join([receipt.scope.note, reproduce.timing_text(receipt.timing), receipt.reason])
    for word in ("weaker", "spot check", "only "):
        assert word not in said, (word, said)
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "--help"])
    assert "weaker" not in capsys.readouterr().out


def claim(ratio, ci, verdict):
    return records.Claim(ratio=ratio, ci95=ci, verdict=verdict, items=6)


@pytest.mark.parametrize("claimed, measured", [
    (claim(0.8, [0.78, 0.82], "improved"), claim(0.85, [0.6, 1.2], "inconclusive")),
    (claim(1.3, [1.25, 1.35], "regressed"), claim(1.2, [0.95, 1.5], "inconclusive")),
    (claim(1.0, [0.995, 1.005], "equal"), claim(1.0, [0.9, 1.1], "inconclusive")),
])
def test_an_interval_too_wide_to_decide_is_not_contradicted_never_reproduced(claimed, measured):
    """A re-run whose interval was too wide for a verdict of its own holds the claim but does
    not repeat it: "not contradicted" (exit 8), with the reason, never "reproduced"."""
    timing = reproduce.judge_timing(claimed, measured)
    assert timing.word == "not contradicted" and timing.holds is True
    assert timing.reason.endswith(f"but the re-run is inconclusive: too wide to say {claimed.verdict} itself")
    scope = SimpleNamespace(same_items=True, note="the same 6 items; 5 rounds, as the original")
    word, _ = reproduce.verdict(comparison(), SimpleNamespace(agree=True, why="identical"), timing, scope)
    assert word == "not contradicted" and outcomes.REPRODUCTION_CODES[word] == outcomes.NOT_CONTRADICTED


# --- 12. the per-item count against the band it prints ----------------------------------------------------
def test_the_per_item_line_counts_regressions_against_the_band_it_prints():
    """Under load a claim must clear a wider band than the plain one; the per-item line said
    "N of M items regressed beyond +-X%" with N counted against the other band. Here item
    `mild` lies between the two bands and `bad` beyond both: the line's count is the one its
    printed band gives."""
    import math

    rounds, items = 100, {"flat": 1.0, "mild": 1.067, "bad": 1.15}
    runs = []
    for k in range(rounds):
        noise = 0.07 if k % 2 else -0.07  # the rounds move together: a typical deviation of ~6.8%
        for variant, letter in (("base", "A"), ("candidate", "B")):
            walls = {i: (f * math.exp(noise) if variant == "candidate" else 1.0) for i, f in items.items()}
            run = record(f"{letter}{k + 1}", variant, [records.Item(i, w, w, {}, None) for i, w in walls.items()],
                         wall_s=sum(walls.values()))
            # runnable work waited for a core over half of each loop: every run overloaded
            runs.append(dataclasses.replace(run, machine=records.Machine(cores=2, cpu_stall_s=0.5 * run.wall_s)))
    stats = analysis.analyze(runs, 0.02)
    per = stats["per_item"]
    assert stats["claim_band"] > stats["band"] == 0.02 and per["band"] == stats["claim_band"]
    text = outcomes.per_item_text(Stats.of(stats))
    printed = float(text.split("beyond +-")[1].split("%")[0]) / 100
    lows = {row["id"]: row["ci95"][0] for row in per["table"]}
    beyond_printed = sorted(i for i, lo in lows.items() if lo > 1 + printed)
    beyond_plain = sorted(i for i, lo in lows.items() if lo > 1 + stats["band"])
    assert beyond_printed == ["bad"] and beyond_plain == ["bad", "mild"]  # the two bands disagree on `mild`
    assert text.startswith(f"1 of 3 items regressed beyond +-{100 * stats['claim_band']:.1f}%, worst bad ")


# --- 14. report of named bundles; many overloaded runs --------------------------------------------------
def test_a_report_of_named_bundles_says_so_and_names_its_overloaded_runs_once(tmp_path, capsys):
    """`harness report B` said it was made "from every bundle under evidence/", and a campaign
    whose every run was overloaded listed its runs three times in its section (the verdict
    line, the load line and a warning repeating it). The preview names the bundle it was made
    from, and the list of overloaded runs appears once."""
    outcome, _ = run_fake(tmp_path, Model(stall=0.5), rounds=6)
    overloaded = outcome.comparison.stats.load.overloaded
    assert len(overloaded) == 12
    assert cli.main(["report", str(outcome.out), "--root", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "Made from the bundles named on the command line: `bundle`." in text
    assert "every bundle under `evidence/`" not in text
    assert text.count(", ".join(overloaded)) == 1, text
    assert "- Load: more runnable work than cores during 12 of the 12 timed runs" in text


# --- the pre-flight's noise note: one interruption does not call the machine noisy ------------------
def test_one_slow_repeat_does_not_make_the_pre_flight_call_the_machine_noisy():
    """`make demo` once warned that span finding's item "moved by 55%" because another process
    interrupted one of its five repeats (0.19 s among 0.12-0.14 s), while the campaign's interval
    was +-5%. Other work only ever adds time: the slowest repeat is left out of the spread, and
    a change far larger than the rest needs no note. Repeats that truly wander still get it."""
    from harness.engine.runner import timing_notes

    def seen(base, candidate):
        return {variant: records.CheckResult(item="one", fields={}, raised=[], items=["one"], stage_calls={},
                                             repeats=repeats) for variant, repeats in (("base", base),
                                                                                       ("candidate", candidate))}

    interrupted = seen([0.131, 0.132, 0.138, 0.191, 0.123, 0.118], [0.102, 0.085, 0.084, 0.086, 0.084, 0.086])
    assert timing_notes(interrupted, 0.02, False) == []
    erratic = seen([0.05, 0.01, 0.05, 0.01, 0.05, 0.01], [0.05, 0.01, 0.05, 0.01, 0.05, 0.01])
    [note] = timing_notes(erratic, 0.02, False)
    assert note.startswith("pre-flight: the item's wall moved by ") and "+-2%" in note
    assert timing_notes(erratic, 0.02, True) == []  # instruction counts already decide
    rhythm = seen([0.138, 0.118, 0.162, 0.114, 0.170, 0.111], [0.092, 0.086, 0.104, 0.097, 0.094, 0.090])
    assert timing_notes(rhythm, 0.02, False) == []  # the base's own every-other-call rhythm (measured in make demo)
    quiet = seen([0.113, 0.116, 0.109, 0.111, 0.110, 0.112], [0.084, 0.082, 0.083, 0.081, 0.084, 0.086])
    assert timing_notes(quiet, 0.02, False) == []
