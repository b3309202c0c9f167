"""The campaign loop on the fake launcher: order, rounds, `rounds: auto`, timeouts, interruption,
a whole campaign's statistics, and the bundle it seals (which both checkers must accept), with
no worker process at all."""
from __future__ import annotations

import dataclasses
import json
import shutil
import signal

import pytest

from checks_support import forge, problems, refused
from fakes import Model, ModelLauncher, run_fake
from harness import contract as C, records, rehash
from harness import rules as R
from harness.bundle import read
from harness.judge.verify import verify


def test_a_whole_campaign_on_the_model_worker_verifies(tmp_path):
    outcome, launcher = run_fake(tmp_path, Model(ratio=0.5, noise=0.02))
    assert outcome.comparison.status == "complete"
    assert outcome.comparison.stats.verdict == "improved"
    assert 0.45 < outcome.comparison.stats.paired.geomean_ratio < 0.55
    check = rehash.rehash(str(outcome.out))
    assert not check.problems, check.problems
    report = verify(outcome.out)
    assert report.exit_code == 0, report.problems or report.unusable
    labels = [lnch.label for lnch in launcher.launches]
    assert labels[:2] == ["check:base", "check:candidate"]
    assert labels[2:] == [label for label, _ in R.labels(outcome.comparison.order)]


def test_order_follows_the_seed_and_every_run_measures_the_planned_items(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=9), seed=7, workload={"entry": "model_workload:setup",
                                                                      "path": "workloads", "items": 4})
    bundle = read.load(outcome.out)
    assert bundle.campaign.order == R.round_order(6, 7, 0)
    assert bundle.runner.items_all == [f"item-{i}" for i in range(9)]
    assert bundle.runner.items == C.subset(bundle.runner.items_all, 4)
    assert all([it.id for it in r.items] == bundle.runner.items for r in bundle.runs)


def test_rounds_auto_stops_at_the_first_look_that_decides(tmp_path):
    # a 2x change with 3% noise: the interval valid at every look clears the band after a few rounds
    outcome, _ = run_fake(tmp_path, Model(items=6, item_s=0.1), rounds="auto", budget_s=60, min_rounds=4,
                          seed=7)
    bundle = read.load(outcome.out)
    stats = bundle.comparison.stats
    seq = stats.sequential
    pace = sum(r.process.wall_s for r in bundle.runs[:2])
    assert seq.cap == R.auto_rounds(60, pace, 4) > bundle.campaign.rounds >= 4
    assert seq.stopped == "decided" and [row.round for row in seq.looks] == list(range(4, bundle.campaign.rounds + 1))
    assert [row.verdict for row in seq.looks][:-1] == ["inconclusive"] * (len(seq.looks) - 1)
    assert stats.verdict == seq.looks[-1].verdict == "improved"
    assert stats.paired.ci95 == seq.looks[-1].ci95
    assert bundle.campaign.order == R.round_order(bundle.campaign.rounds, bundle.campaign.seed, 0, 4)
    assert len(bundle.runs) == len(bundle.campaign.order)
    assert not rehash.rehash(str(outcome.out)).problems


def test_rounds_auto_without_a_decision_runs_to_the_cap(tmp_path):
    # A against A with 3% noise: no look can put a +-2% band around the truth in 6 rounds
    outcome, _ = run_fake(tmp_path, Model(items=6, item_s=1.0, ratio=1.0), rounds="auto", budget_s=30,
                          min_rounds=4, seed=7)  # a pinned shuffle: the verdict at the cap is a draw
    bundle = read.load(outcome.out)
    stats = bundle.comparison.stats
    seq = stats.sequential
    assert bundle.campaign.rounds == seq.cap and seq.stopped == "cap"
    assert all(row.verdict == "inconclusive" for row in seq.looks)
    assert stats.verdict == "inconclusive"  # the cap is the design's last look: it did not decide either
    assert "no look decided by the budget's cap" in stats.verdict_reason
    assert not rehash.rehash(str(outcome.out)).problems


def test_a_worker_past_its_timeout_fails_the_campaign(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(hang={"A2"}), timeouts={"run_s": 5, "campaign_s": 3600})
    c = records.to_json(outcome.comparison)  # as comparison.json holds it
    assert c["status"] == "failed" and "killed after" in c["reason"]
    assert [r["label"] for r in c["runs"]][-1] == "A2" and c["runs"][-1]["status"] == "timeout"
    assert not rehash.rehash(str(outcome.out)).problems


def test_a_failed_worker_ends_the_campaign_and_the_bundle_says_so(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(fail={"B2"}))
    c = records.to_json(outcome.comparison)  # as comparison.json holds it
    assert c["status"] == "failed" and c["runs"][-1]["label"] == "B2"
    assert not rehash.rehash(str(outcome.out)).problems


def test_an_interruption_seals_a_failed_bundle(tmp_path):
    def interrupt(n, launch):
        if launch.label == "A3":
            signal.raise_signal(signal.SIGINT)

    outcome, _ = run_fake(tmp_path, launcher=ModelLauncher(Model(), on_launch=interrupt))
    c = records.to_json(outcome.comparison)  # as comparison.json holds it
    assert c["status"] == "failed" and "interrupted by SIGINT" in c["reason"]
    assert not rehash.rehash(str(outcome.out)).problems


def test_a_vs_a_on_the_model_makes_no_claim(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(ratio=1.0, noise=0.03, seed=3), rounds=20)
    assert outcome.comparison.stats.verdict in ("equal", "inconclusive")


def test_outputs_one_ulp_apart_agree_only_within_a_declared_tolerance(tmp_path):
    exact, _ = run_fake(tmp_path / "exact", Model(differ=True))
    assert exact.comparison.parity.agree is False
    within, _ = run_fake(tmp_path / "within", Model(differ=True), parity={"max_ulp": 4})
    p = records.to_json(within.comparison.parity)  # as comparison.json holds it
    assert p["agree"] is True and p["identical"] is False and p["tolerance"]["max_ulp_seen"] == 1
    assert not rehash.rehash(str(within.out)).problems
    assert verify(within.out).exit_code == 0


def test_a_slewed_wall_clock_is_not_a_forgery(tmp_path):
    """While the system clock is slewed its wall clock and the monotonic one run apart (0.5% was
    measured on a VM: an 11 s process 56 ms apart): a campaign of minute-long runs recorded under
    a clock 0.5% fast or slow verifies in both checkers."""
    from harness.engine.launch import FakeClock

    for rate in (0.005, -0.005):
        out = tmp_path / f"rate{rate}"
        launcher = ModelLauncher(Model(item_s=10.0), clock=FakeClock(rate=rate))
        outcome, _ = run_fake(out, launcher=launcher, timeouts={"run_s": 600, "campaign_s": 36000})
        assert outcome.comparison.status == "complete"
        check = rehash.rehash(str(outcome.out))
        assert not check.problems, (rate, check.problems)
        assert verify(outcome.out).exit_code == 0


def _truncate_to(bundle, rounds):
    """A forger's shorter campaign: the runs past `rounds` deleted, campaign.json, the runner's
    and the cleanup receipts made to match, comparison.json re-derived, both manifests re-hashed."""
    campaign = json.loads((bundle / C.CAMPAIGN_JSON).read_text())
    order = R.round_order(rounds, campaign["seed"], campaign["stage_rounds"], campaign["min_rounds"])
    keep = [label for label, _ in R.labels(order)]
    for label in campaign["labels"][len(keep):]:
        (bundle / C.run_path(label)).unlink()
        (bundle / C.log_path(label)).unlink()

    def runner(doc):
        doc.update(runs_planned=len(keep), runs_started=len(keep))

    def cleanup(doc):
        doc["processes"] = [p for p in doc["processes"] if p["role"] != "run" or p["run"] in keep]
        doc["count"] = len(doc["processes"])
    forge(bundle, {C.CAMPAIGN_JSON: lambda doc: doc.update(rounds=rounds, order=order, labels=keep),
                   C.RUNNER: runner, C.CLEANUP: cleanup})


def test_both_checkers_refuse_a_stop_the_looks_did_not_make(tmp_path):
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.5, ratio=1.0), rounds="auto", budget_s=40,
                          min_rounds=4, seed=7)
    seq = read.load(outcome.out).comparison.stats.sequential
    assert seq.stopped == "cap" and seq.cap > 5
    # stopped early, as if a look had decided: the re-derived looks say none did
    short = tmp_path / "short"
    shutil.copytree(outcome.out, short)
    _truncate_to(short, 5)
    for lines in problems(short):
        assert refused(lines, "rounds 5, below the cap", "no look decided"), lines
    # a look edited to have decided, or the stop's reason: comparison.json is re-derived from the records
    for field, value in (("looks", lambda s: s["looks"][0].update(verdict="improved")),
                         ("stopped", lambda s: s.update(stopped="decided"))):
        edited = tmp_path / field
        shutil.copytree(outcome.out, edited)
        forge(edited, {C.COMPARISON: lambda doc: value(doc["stats"]["sequential"])}, rederive=False)
        for lines in problems(edited):
            assert refused(lines, "stats.sequential"), (field, lines)


def test_both_checkers_refuse_a_campaign_that_went_on_after_a_look_decided(tmp_path, monkeypatch):
    from harness.engine.runner import Runner

    monkeypatch.setattr(Runner, "_decides", lambda self, runs, floor, items: False)  # a runner that never stops early
    outcome, _ = run_fake(tmp_path, Model(items=4, item_s=0.1), rounds="auto", budget_s=20, min_rounds=4,
                          seed=7)
    bundle = read.load(outcome.out)
    seq = bundle.comparison.stats.sequential
    assert bundle.campaign.rounds == seq.cap > 5 and seq.looks[0].verdict == "improved"
    for lines in problems(outcome.out):
        assert refused(lines, "the look after round 4 decided, but the campaign went on"), lines


# --- the job: one typed record from the runner to its worker ---------------------------------------
JOB_KEYS = {"schema", "mode", "label", "variant", "index", "sha", "tree", "parent_pid", "workload", "inputs", "slots",
            "stages", "optional_stages", "arrays_dir", "result_path", "items", "instructions_items", "items_all",
            "calibrate_s"}


def test_a_job_reads_back_as_written_and_another_schema_is_refused_in_one_line(tmp_path):
    from fakes import job
    from harness import records
    from harness.worker import main as worker

    written = dataclasses.replace(job("A1"), inputs={"corpus": records.JobInput("/data/corpus", "a" * 64)})
    data = records.to_json(written)
    assert set(data) == JOB_KEYS and set(data["workload"]) == {"entry", "params", "path", "exclude", "sys_path",
                                                                 "items", "prepare"}
    path = tmp_path / "job.json"
    path.write_text(json.dumps(data))
    assert records.Job.read(path) == written
    path.write_text(json.dumps({**data, "schema": "abba-harness/job/v2"}))
    with pytest.raises(SystemExit) as refused_job:
        worker.main(str(path))
    assert str(refused_job.value.code) == \
        f"job file {path}: schema 'abba-harness/job/v2', expected {C.SCHEMAS['job']}"


def test_every_worker_is_handed_the_items_the_pre_flight_found(tmp_path):
    class Recording(Model):
        def __call__(self, job):
            self.jobs.append(job)
            return super().__call__(job)

    model = Recording(items=4)
    model.jobs = []
    outcome, _ = run_fake(tmp_path, model, rounds=3)
    assert outcome.exit_code == 0
    checks = [j for j in model.jobs if j.mode == "check"]
    runs = [j for j in model.jobs if j.mode == "run"]
    assert len(checks) == 2 and all(j.items is None and j.items_all == [] for j in checks)
    assert len(runs) == 6 and all(j.items_all == model.ids() == j.items for j in runs)
