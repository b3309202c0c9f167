"""What a worker or a zygote hands the runner is read through its type (issue 47: the pre-flight's
records.CheckResult, an instruction run's records.CountResult, a zygote's lines), as hostile input:
the code under test can write any of it. One that is not of its type's shape fails the pre-flight
or the run in one line that names it, never the runner with a traceback, and never passes with a
part of it made up."""
from __future__ import annotations

import pytest

from checks_support import InstructionLauncher, no_valgrind_probe
from fakes import FakeRun, Model, ModelLauncher, run_fake, write_fake_campaign
from harness import records
from harness.engine import zygote_launcher
from harness.engine.runner import PreflightError, Runner
from harness.plan import spec


class Reshaped(Model):
    """The model worker whose pre-flight result is edited by `edit` (the check's JSON, in place)."""

    def __init__(self, edit, **kw):
        super().__init__(**kw)
        self.edit = edit

    def __call__(self, job: records.Job) -> FakeRun:
        run = super().__call__(job)
        if job.mode == "check" and job.variant == "candidate":
            run.result = self.edit(run.result)
        return run


@pytest.mark.parametrize("edit, says", [
    (lambda doc: {k: v for k, v in doc.items() if k != "item"}, "(KeyError: 'CheckResult.item')"),
    (lambda doc: {**doc, "items": "item-0"}, "(TypeError: expected a list, got str)"),
    (lambda doc: [doc], "(TypeError: CheckResult: expected an object, got list)"),
    (lambda doc: {**doc, "python": ["CPython"]}, "(TypeError: Interpreter: expected an object, got list)"),
])
def test_a_pre_flight_result_of_another_shape_is_one_problem_line(tmp_path, edit, says):
    path = write_fake_campaign(tmp_path)
    launcher = ModelLauncher(Reshaped(edit))
    with pytest.raises(PreflightError) as info:
        Runner(spec.load(path), (tmp_path / "b").absolute(), launcher=launcher).run()
    [line] = info.value.problems
    assert "candidate" in line and f"the pre-flight worker's result cannot be read {says}" in line, line


class Recounted(InstructionLauncher):
    """An instruction run whose worker's result is edited by `edit`."""

    def __init__(self, edit, **kw):
        super().__init__(Model(items=4, item_s=0.1), **kw)
        self.edit = edit

    def _play(self, job: records.Job) -> FakeRun:
        run = super()._play(job)
        if job.mode == "instructions" and job.label == "IB1":
            run.result = self.edit(run.result)
        return run


@pytest.mark.parametrize("edit, says", [
    (lambda doc: [doc], "(TypeError: CountResult: expected an object, got list)"),  # stopped the runner before
    (lambda doc: {k: v for k, v in doc.items() if k != "errors"}, "(KeyError: 'CountResult.errors')"),  # read as 0
])
def test_an_instruction_result_of_another_shape_fails_its_run_in_one_line(tmp_path, monkeypatch, edit, says):
    no_valgrind_probe(monkeypatch)
    outcome, _ = run_fake(tmp_path, launcher=Recounted(edit), rounds=4, metrics=["wall", "instructions"],
                          instructions={"items": 2, "runs": 2})
    assert outcome.comparison.status != "complete"
    assert f"IB1: the worker's result cannot be read {says}" in outcome.comparison.reason


def test_a_zygote_line_is_read_through_its_type_or_not_at_all():
    said = zygote_launcher._said
    assert said(records.ZygoteReady, {"ready": 7, "threads": 1, "preloaded": ["harness"]}).ready == 7
    assert said(records.ZygoteReaped, {"pid": 8, "exit": -9}) == records.ZygoteReaped(8, -9)  # rusage unsaid: None
    assert said(records.ZygoteReaped, {"pid": 8}) is None  # the forked line is not the ended one
    assert said(records.ZygoteForked, [8]) is None and said(records.ZygoteForked, None) is None
    assert said(records.ZygoteForked, {}) is None  # a line that was no JSON reads as {}
    assert not zygote_launcher._count(said(records.ZygoteForked, {"pid": True}).pid)  # the launcher refuses it
    request = records.ZygoteRequest("/r/job.json", "/r", "/r/worker.log", {"PATH": "/bin"}, None)
    assert records.ZygoteRequest.from_json(records.to_json(request)) == request
