"""Issue 45 on the fake launcher: the runner's own figures against the worker's word.

The headline is the runner's wall between the worker's marks; a run whose worker's figures the
runner's contradict (rules.contradictions) and a campaign whose candidate saved loop time that
reappeared outside its loop (rules.moved_outside) make no claim, by both checkers' derivation.
Honest campaigns, A against A among them, are never flagged. The sandbox a campaign's workers ran
under is recorded, shown in every verdict line and the summary's headline when it is not full, and
held by both checkers to the campaign's setting; where a run's code came from must be a place it
could read. The real workers' side is tests/process/test_adversary.py and test_sandbox.py."""
from __future__ import annotations

import dataclasses
import json
import shutil
from typing import Callable, Optional

import pytest

from checks_support import forge, problems, refused
from fakes import Model, ModelLauncher, run_fake
from harness import cli, contract as C, outcomes, records
from harness.engine import sandbox
from harness.files import read_json

ROUNDS = 6


@dataclasses.dataclass
class Tweaked(Model):
    """The model worker whose timed runs' results and outside readings `tweak(label, run)` changes."""
    tweak: Optional[Callable] = None

    def __call__(self, job: records.Job):
        run = super().__call__(job)
        if job.mode == "run" and run.result and self.tweak is not None:
            self.tweak(job.label, run)
        return run


def campaign(where, model=None, launcher=None, **fields):
    out, _ = run_fake(where, model or Model(), launcher=launcher, rounds=ROUNDS, **fields)
    return out, read_json(out.out / C.COMPARISON)


def both_accept(out) -> None:
    rehash_lines, verify_lines = problems(out)
    assert not rehash_lines and not verify_lines, (rehash_lines, verify_lines)


# --- honest campaigns are never flagged ---------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("ratio", [1.0, 0.5], ids=["A-vs-A", "half"])
def test_an_honest_campaign_is_never_flagged(tmp_path, seed, ratio):
    """Process lives that move run to run (before and after the loop, log-normal, 20%) never read as
    work moved out of the loop, and nothing contradicts the worker."""
    import random

    rng = random.Random(seed)
    noisy = Tweaked(ratio=ratio, seed=seed, tweak=lambda label, run: setattr(
        run, "before_s", 0.3 * rng.lognormvariate(0, 0.2)) or setattr(run, "after_s", 0.1 * rng.lognormvariate(0, 0.2)))
    out, comparison = campaign(tmp_path, noisy)
    section = comparison["stats"]["outside"]
    assert section["contradicted"] == [] and section["moved"]["flagged"] is False and section["holds"], section
    assert comparison["stats"]["verdict"] == ("improved" if ratio < 1 else comparison["stats"]["verdict"])
    if seed == 0:
        both_accept(out.out)


# --- work moved out of the loop ------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["before_s", "after_s"])
def test_loop_time_that_reappears_outside_the_loop_makes_no_claim(tmp_path, where):
    """The candidate's loop is half the base's, and what it saved reappears before its loop (done at
    import) or after it (finished after the end mark): improved by the loop, no claim by the process."""
    model = Model(ratio=0.5, seed=3)

    def moved(label, run):
        if label.startswith("B"):
            saved = json.loads(json.dumps(run.result))["wall_s"]  # as much as the loop now takes
            setattr(run, where, getattr(run, where) + saved)
            setattr(run, where.replace("_s", "_cpu_s"), 0.9 * getattr(run, where))
    out, comparison = campaign(tmp_path, Tweaked(ratio=model.ratio, seed=model.seed, tweak=moved))
    stats = comparison["stats"]
    assert stats["paired"]["geomean_ratio"] < 0.6  # the loop alone says improved
    assert stats["outside"]["moved"]["flagged"] and not stats["outside"]["holds"]
    assert stats["verdict"] == "inconclusive" and "the work moved out of the loop" in stats["verdict_reason"]
    both_accept(out.out)
    assert cli.main(["compare", str(out.out)]) == outcomes.INCONCLUSIVE


# --- the worker's figures held to the runner's -----------------------------------------------------------
def _claim_shorter(label, run):  # the runner saw a loop far longer than the worker claims
    if label == "B2":
        run.loop_s = run.result["wall_s"] + 0.3


def _claim_cpu(label, run):  # more CPU over the loop than the kernel charged
    if label == "B2":
        run.loop_cpu_s = 0.001


def _tripwire(label, run):
    if label == "B2":
        run.result["tripwire"] = ["time.perf_counter", "harness.worker.main.run_items"]


def _scheduling(label, run):
    if label == "B2":
        run.scheduling = ["ZA1: nice [0] -> [19]"]


def _violations(label, run):
    if label == "B2":
        run.violations = ["an unexpected mark b'E 1 2'"]


def _items_short(label, run):  # one slot, and its items' walls account for a fifth of its own loop
    if label == "B2":
        for item in run.result["items"]:
            item["wall_s"] *= 0.2
            item["cpu_s"] *= 0.2


@pytest.mark.parametrize("tweak, cause", [(_claim_shorter, "wall"), (_claim_cpu, "cpu"), (_tripwire, "tripwire"),
                                          (_scheduling, "scheduling"), (_violations, "marks"),
                                          (_items_short, "items_wall")],
                         ids=["wall", "cpu", "tripwire", "scheduling", "marks", "items_wall"])
def test_a_run_the_runners_figures_contradict_makes_no_claim(tmp_path, tweak, cause):
    out, comparison = campaign(tmp_path, Tweaked(ratio=0.5, seed=4, item_s=0.1, tweak=tweak))
    record = read_json(out.out / C.run_path("B2"))
    assert cause in record["outside"]["contradictions"] and record["outside"]["contradicted"], record["outside"]
    stats = comparison["stats"]
    assert stats["outside"]["contradicted"] == ["B2"] and stats["verdict"] == "inconclusive"
    assert "the runner's own figures contradict the worker's in B2" in stats["verdict_reason"]
    both_accept(out.out)


def test_a_worker_that_never_marks_its_loop_fails_its_run(tmp_path):
    out, comparison = campaign(tmp_path, Tweaked(seed=5, tweak=lambda label, run: label == "B1" and setattr(
        run, "unmarked", True)))
    assert comparison["status"] == "failed" and "B1: the worker never marked its timed loop" in comparison["reason"]


def test_a_worker_claiming_a_loop_its_end_mark_does_not_show_is_contradicted(tmp_path):
    def claim(label, run):
        if label == "B3":
            run.marked_s, run.loop_s = run.result["wall_s"], run.result["wall_s"] + 2e-4
            run.result["wall_s"] *= 0.25  # its result says a quarter of what its own end mark said
    out, comparison = campaign(tmp_path, Tweaked(ratio=0.5, seed=6, tweak=claim))
    section = read_json(out.out / C.run_path("B3"))["outside"]
    assert "marks" in section["contradictions"] and any("its result claims a loop" in v for v in section["violations"])


# --- forgeries of the new fields: both checkers refuse ---------------------------------------------------
@pytest.fixture(scope="module")
def honest(tmp_path_factory):
    out, _ = campaign(tmp_path_factory.mktemp("honest"), Model(ratio=0.5, seed=7))
    return out.out


def forged(bundle, where, edits) -> tuple:
    copy = where / "forged"
    shutil.copytree(bundle.parent, copy)
    forge(copy / bundle.name, edits)
    return problems(copy / bundle.name)


def _edit(section: str, **changes):
    return lambda r: r[section].update(changes)


@pytest.mark.parametrize("label, edit, why", [
    ("B2", _edit("outside", contradictions=[], contradicted=False, tripwire=["time.perf_counter"]), "outside.contradictions"),
    ("B2", _edit("outside", before_s=1e4), "exceed its process's life"),
    ("B2", lambda r: r["outside"].update(worker_wall_s=r["outside"]["worker_wall_s"] / 4), "do not make the loop's"),
    ("A1", lambda r: r.update(outside=None), "outside null in an ok run"),
    ("B1", lambda r: r["imported_from"].update(workload="/home/author/evil.py"), "imported from \"/home/author/evil.py\""),
], ids=["contradictions", "life", "worker-wall", "missing", "origin-outside"])
def test_a_forged_outside_record_is_refused_by_both_checkers(honest, tmp_path, label, edit, why):
    found = forged(honest, tmp_path, {C.run_path(label): edit})
    assert all(refused(lines, C.run_path(label), why) for lines in found), found


def test_a_stage_said_to_come_from_outside_every_readable_folder_is_refused(tmp_path):
    """Attack 4 of issue 45: a re-sealed bundle whose candidate runs say their stages came from an
    author's home folder (the earlier rule refused only tree: paths leaving the tree)."""
    out, _ = run_fake(tmp_path, Model(ratio=0.5, seed=8), rounds=3, stages={"core": "lib.core:VERSION"})
    edits = {C.run_path(label): (lambda r: r["imported_from"]["stages"].update(core="/home/author/lib/core.py"))
             for label in ("Bs1",)}
    found = forged(out.out, tmp_path, edits)
    assert all(refused(lines, C.run_path("Bs1"), "stage core imported from", "/home/author") for lines in found), found


def test_the_runner_fails_a_run_whose_worker_says_its_code_came_from_elsewhere(tmp_path):
    def elsewhere(label, run):
        if label == "B1":
            run.result["imported_from"]["workload"] = "/home/author/workload.py"
    out, comparison = campaign(tmp_path, Tweaked(seed=9, tweak=elsewhere))
    assert comparison["status"] == "failed" and "imported from '/home/author/workload.py'" in comparison["reason"]


# --- the sandbox recorded, shown and checked ------------------------------------------------------------
@pytest.mark.parametrize("probe, level, says", [
    (sandbox.Probe(None, False, ("Landlock: the kernel has no Landlock (before 5.13, or built without it)",
                                 "user and network namespaces: refused by the kernel")), "none",
     "not sandboxed: Landlock: the kernel has no Landlock"),
    (sandbox.Probe(7, False, ("user and network namespaces: refused by the kernel",)), "partial",
     "partly sandboxed: user and network namespaces: refused"),
], ids=["none", "partial"])
def test_a_machine_without_a_full_sandbox_says_so_everywhere(tmp_path, capsys, probe, level, says):
    out, comparison = campaign(tmp_path, launcher=ModelLauncher(Model(ratio=0.5, seed=10), sandbox=probe))
    env = read_json(out.out / C.ENVIRONMENT)["sandbox"]
    assert env["level"] == level and comparison["sandbox"]["level"] == level
    assert env["network"] == ("open" if level == "none" else "tcp") and env["namespaces"] is False
    rehash_lines, verify_lines = problems(out.out)
    assert not rehash_lines and not verify_lines
    from harness import rehash
    from harness.judge.verify import verify

    assert any(note.startswith(says.split(":")[0]) for note in rehash.rehash(str(out.out)).notes)
    assert any(note.startswith(says.split(":")[0]) for note in verify(out.out).notes)
    assert cli.main(["compare", str(out.out)]) == outcomes.OK
    assert says in capsys.readouterr().out
    assert cli.main(["summary", str(out.out)]) == outcomes.OK
    head = capsys.readouterr().out.split("\n\n")[1]
    assert says in head, head


def test_a_full_sandbox_is_not_mentioned_and_the_campaign_setting_is_recorded(honest, capsys):
    env, camp = read_json(honest / C.ENVIRONMENT)["sandbox"], read_json(honest / C.CAMPAIGN_JSON)["sandbox"]
    assert env["level"] == "full" and env["reason"] is None and env["network"] == "cut"
    assert camp == {"mode": "on", "network": False, "read": []}
    assert cli.main(["compare", str(honest)]) == outcomes.OK
    assert "sandboxed" not in capsys.readouterr().out


@pytest.mark.parametrize("rel, edit, why", [
    (C.ENVIRONMENT, lambda e: e["sandbox"].update(level="off", reason="x", landlock=None, namespaces=False,
                                                  network="open", scheduling=False), "level off exactly"),
    (C.ENVIRONMENT, lambda e: e["sandbox"].update(network="open"), "network cut under full"),
    (C.ENVIRONMENT, lambda e: e["sandbox"].update(level="partial", reason="x", namespaces=False, network="tcp"),
     "comparison"),
    (C.CAMPAIGN_JSON, lambda c: c["sandbox"].update(network=True), "network declared exactly"),
], ids=["off", "network", "partial-summary", "declared"])
def test_a_forged_sandbox_record_is_refused_by_both_checkers(honest, tmp_path, rel, edit, why):
    copy = tmp_path / "forged"
    shutil.copytree(honest.parent, copy)
    bundle = copy / honest.name
    forge(bundle, {rel: edit}, rederive=why != "comparison")
    found = problems(bundle)
    if why == "comparison":  # the level changed, the summary it derives not re-derived: refused as derived
        assert all(refused(lines, C.COMPARISON, "sandbox.level") for lines in found), found
    else:
        assert all(refused(lines, why) for lines in found), found


def test_a_campaign_may_opt_out_and_declare_but_that_is_recorded(tmp_path):
    out, comparison = campaign(tmp_path, Model(seed=11), sandbox="off")
    assert comparison["sandbox"] == {"level": "off", "reason": "the campaign opted out (sandbox: off)"}
    assert read_json(out.out / C.CAMPAIGN_JSON)["sandbox"]["mode"] == "off"
    both_accept(out.out)
    folder = tmp_path / "declared"
    folder.mkdir()
    out, comparison = campaign(tmp_path / "again", Model(seed=11), sandbox={"network": True, "read": [str(folder)]})
    env = read_json(out.out / C.ENVIRONMENT)["sandbox"]
    assert env["network"] == "declared" and str(folder) in env["read"] and comparison["sandbox"]["level"] == "full"
    both_accept(out.out)


def test_a_declared_folder_that_holds_the_bundle_is_refused(tmp_path):
    from harness.plan.spec import SpecError

    with pytest.raises(SpecError, match="holds the bundle's output"):
        campaign(tmp_path, Model(seed=12), sandbox={"read": [str(tmp_path)]})
