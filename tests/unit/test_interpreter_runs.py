"""Issue 33.8 on the fake launcher: every worker's own report of its interpreter is held to what
the probe said (a run whose worker ran another fails, naming both, and the bundle stays valid
evidence of that), and `harness run` verifies the bundle it sealed: one that its own verify
refuses never reads "complete" (exit 1, the line says why, it is not signed)."""
from __future__ import annotations

from pathlib import Path

from checks_support import problems
from fakes import Model, ModelLauncher, run_fake, write_fake_campaign
from harness import cli, outcomes
from harness.engine import environment, runner as runner_module
from harness.records import Interpreter, Job, ProbedInterpreter, to_json


class SwitchingModel(Model):
    """The model worker whose run B1 reports CPython 3.13.0: its interpreter changed under it."""

    def __call__(self, job: Job):
        run = super().__call__(job)
        if job.label == "B1" and run.result:
            run.result["python"] = {**run.result["python"], "version": "3.13.0"}
        return run


def test_a_run_whose_worker_reports_another_interpreter_fails_and_names_both(tmp_path):
    outcome, _ = run_fake(tmp_path, SwitchingModel(items=4, item_s=0.1), rounds=3)
    assert outcome.exit_code == outcomes.FAILED
    me = Interpreter.current()
    assert f"B1: B1's worker ran CPython 3.13.0 ({me.executable}), but the interpreter's probe said CPython " \
           f"{me.version} ({me.executable})" in outcome.comparison.reason
    assert problems(outcome.out) == ([], [])  # the failed run keeps no interpreter; the bundle is sound


def test_the_mismatch_words():
    probed = ProbedInterpreter("/p/python", "3.13.0", "CPython", {"numpy": "2.0.0"})
    assert environment.mismatch(probed, Interpreter("/p/python", "3.13.0", "CPython"), "A1's worker") is None
    assert environment.mismatch(probed, None, "A1's worker") is None
    said = environment.mismatch(probed, Interpreter("/usr/bin/python3.11", "3.11.2", "CPython"), "A1's worker")
    assert said == ("A1's worker ran CPython 3.11.2 (/usr/bin/python3.11), but the interpreter's probe said CPython "
                    "3.13.0 (/p/python): the interpreter does not run what it says it is (executable, version "
                    "differ); name the real interpreter in `python:`")


class LyingEnvironment(ModelLauncher):
    """A launcher whose environment.json names another interpreter than the workers ran: the
    sealed bundle breaks the identity rule in every run record."""

    def environment(self, worker_env: dict, interpreters: dict) -> dict:
        env = super().environment(worker_env, interpreters)
        env["interpreters"] = {v: {**to_json(i), "version": "3.13.0"} for v, i in interpreters.items()}
        return env


def test_run_never_says_complete_for_a_bundle_its_own_verify_refuses(tmp_path, monkeypatch, capsys):
    campaign = write_fake_campaign(tmp_path, rounds=3)
    monkeypatch.setattr(runner_module, "LocalLauncher", lambda **kw: LyingEnvironment(Model(items=4, item_s=0.1)))
    out = tmp_path / "bundle"
    code = cli.main(["run", str(campaign), "--out", str(out)])
    printed = capsys.readouterr().out.splitlines()
    assert code == outcomes.PROBLEMS
    assert printed[-1] == "exit: 1 (the sealed bundle does not verify)"
    assert not any(line.startswith("verdict: ") or "complete, outputs agree" in line for line in printed)
    said = next(line for line in printed if line.startswith("verify: "))
    assert said.startswith("verify: the sealed bundle does not verify (") and "no verdict" in said
    fails = [line for line in printed if line.startswith("FAIL ")]
    assert fails and all("[identity]" in line and "3.13.0" in line for line in fails), fails
    assert next(line for line in printed if line.startswith("status: ")).endswith("but the bundle does NOT verify")
    assert Path(out).is_dir()  # the evidence is kept, for `harness verify` to show in full
