"""A campaign end to end: inputs, revisions, one fresh worker process per letter of the
order (strictly sequential, each in its own process group), cleanup proof, comparison and
the sealed bundle. This process never imports the code under test."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from harness import records
from harness.bundle import write as bundle
from harness.engine import cleanup, environment, instructions
from harness.comparison import derive as comparison
from harness.render import figure
from harness.plan import revisions, workload as workload_files
from harness import outcomes as verdict
from harness.files import path_digest, read_json, sha256_bytes
from harness.engine.progress import Silent
from harness.plan.spec import MAX_ROUNDS, Campaign, SpecError

POLL_S = 0.05  # how soon a worker's exit is noticed
WATCH_S = 0.5  # how often its descendants are listed (~0.4 ms of parent CPU each time);
# orphans come back to us as subreaper and every kill lists them first, so none is missed
# Passed through from the harness's environment when set: locale-free basics, and the
# OpenBLAS settings some CPUs need for correct results.
PASS_THROUGH = ("PATH", "HOME", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES")
FIXED_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
             "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


@dataclass
class Outcome:
    out: Path
    digest: str
    comparison: dict

    @property
    def exit_code(self) -> int:
        if self.comparison["status"] != "complete":
            return verdict.FAILED
        return verdict.OK if self.comparison["parity"]["identical"] else verdict.PARITY


class Interrupted(Exception):
    pass


class PreflightError(SpecError):
    """The pre-flight found problems: one line each, nothing was timed, no bundle written."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def worker_env(campaign: Campaign) -> dict[str, str]:
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(FIXED_ENV)
    env.update(campaign.env)
    return env


def prepare_inputs(campaign: Campaign, log) -> dict[str, dict]:
    """Build missing inputs with their recorded command, then check every pinned hash."""
    receipts = {}
    for inp in campaign.inputs:
        if not inp.path.exists() and inp.build:
            log(f"building input '{inp.name}' -> {inp.path}")
            _build_input(campaign, inp)
        if not inp.path.exists():
            raise SpecError(f"{campaign.source}: inputs.{inp.name}.path: '{inp.path}' does not exist")
        kind, digest = path_digest(inp.path)
        if digest != inp.sha256:
            # In full, so that a deliberate change can be pasted into the YAML.
            raise SpecError(f"{campaign.source}: inputs.{inp.name}.sha256: '{inp.path}' has sha256 "
                            f"{digest}, pinned {inp.sha256}")
        receipts[inp.name] = {"path": str(inp.path), "kind": kind, "sha256": digest, "build": inp.build}
    return receipts


def _build_input(campaign: Campaign, inp) -> None:
    # Build beside the target path, then rename: a failed build leaves nothing behind.
    inp.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{inp.path.name}.", dir=inp.path.parent)) / inp.path.name
    cmd = [a.replace("{python}", sys.executable).replace("{path}", str(tmp)) for a in inp.build]
    try:
        result = subprocess.run(cmd, cwd=campaign.source.parent, capture_output=True, text=True)
        if result.returncode or not tmp.exists():
            last = (result.stderr.strip().splitlines() or ["no output"])[-1]
            raise SpecError(f"{campaign.source}: inputs.{inp.name}.build: command failed "
                            f"(exit {result.returncode}): {last}")
        os.rename(tmp, inp.path)
    finally:
        shutil.rmtree(tmp.parent, ignore_errors=True)


def load_golden(campaign: Campaign) -> tuple[dict, bytes] | None:
    """The golden file, parsed, and its bytes (copied into the bundle as they are, so the
    bundle's copy still has the SHA-256 the campaign pins)."""
    if campaign.golden is None:
        return None
    try:
        raw = campaign.golden.read_bytes()
        golden = json.loads(raw.decode())
    except (OSError, ValueError) as exc:
        raise SpecError(f"{campaign.source}: golden.path: cannot read '{campaign.golden}': {exc}") from None
    actual = sha256_bytes(raw)
    if actual != campaign.golden_sha256:
        raise SpecError(f"{campaign.source}: golden.sha256: '{campaign.golden}' has sha256 {actual}, "
                        f"pinned {campaign.golden_sha256}")
    if not isinstance(golden, dict) or not isinstance(golden.get("items"), dict):
        raise SpecError(f"{campaign.source}: golden.path: '{campaign.golden}' has no 'items' mapping")
    return golden, raw


def load_noise_floor(campaign: Campaign) -> tuple[dict, bytes] | None:
    """The pinned noise-floor file, parsed, and its bytes (copied into the bundle as they are)."""
    if campaign.noise_floor is None:
        return None
    where = f"{campaign.source}: noise_floor"
    try:
        raw = campaign.noise_floor.read_bytes()
        doc = json.loads(raw.decode())
    except (OSError, ValueError) as exc:
        raise SpecError(f"{where}.path: cannot read '{campaign.noise_floor}': {exc}") from None
    if sha256_bytes(raw) != campaign.noise_floor_sha256:
        raise SpecError(f"{where}.sha256: '{campaign.noise_floor}' has sha256 {sha256_bytes(raw)[:16]}..., "
                        f"pinned {campaign.noise_floor_sha256[:16]}...")
    floor = doc.get("floor") if isinstance(doc, dict) else None
    if doc.get("schema") != records.SCHEMAS["noise_floor"] or not isinstance(floor, (int, float)) \
            or isinstance(floor, bool) or not 0 <= floor <= 0.5:
        raise SpecError(f"{where}.path: '{campaign.noise_floor}' is not a noise-floor file of `harness calibrate`")
    if doc.get("campaign") != campaign.name:
        raise SpecError(f"{where}.path: '{campaign.noise_floor}' calibrates campaign {doc.get('campaign')!r}, "
                        f"not {campaign.name!r}")
    return doc, raw


def resolved_campaign(campaign: Campaign, materialized: dict, repo_root: Path | None) -> dict:
    def rel(p: Path | None) -> str | None:
        if p is None:
            return None
        try:
            return str(p.relative_to(repo_root)) if repo_root else str(p)
        except ValueError:
            return str(p)

    return records.campaign(campaign, {v: (m.rev, m.sha) for v, m in materialized.items()}, rel)


class Runner:
    def __init__(self, campaign: Campaign, out: Path | None, force: bool = False, progress=None,
                 check_only: bool = False, calibration: bool = False):
        self.campaign = campaign.with_seed()  # rounds: the shuffle settled (and recorded) now
        self.out = out
        self.force = force
        self.check_only = check_only  # `harness check`: the pre-flight only, no bundle
        self.calibration = calibration  # `harness calibrate`: base against base, one SHA allowed
        self.progress = progress or Silent()
        self.ledger = cleanup.Ledger()
        self.current: subprocess.Popen | None = None
        self.current_label: str | None = None
        self.interrupted: str | None = None
        self.workload: list[tuple[str, bytes]] = []  # the workload folder's files, read at the start
        self.exclude: tuple[str, ...] = ()  # our own output, when it lies inside the workload folder

    # --- signals: SIGINT/SIGTERM kill the running worker and end in a sealed, failed bundle
    def _on_signal(self, signum, _frame):
        self.interrupted = f"interrupted by {signal.Signals(signum).name}"
        if self.current is not None:
            self._kill_run(self.current.pid, self.current_label)

    def _kill_run(self, pgid: int, label: str) -> None:
        """Record every process of the run first, so the receipt lists what the kill ends."""
        self.ledger.watch_descendants(pgid, label)
        _killpg(pgid)

    def run(self) -> Outcome | None:
        """The campaign, sealed into --out; with check_only, the pre-flight alone (None)."""
        campaign = self.campaign
        if not self.check_only:
            bundle.check_output(self.out, self.force)
        cleanup.become_subreaper()
        with contextlib.nullcontext() if self.check_only else bundle.OutputLock(self.out):
            inputs = prepare_inputs(campaign, self.progress.note)
            golden = load_golden(campaign)
            floor = load_noise_floor(campaign)
            repo = revisions.target_repo(campaign)
            workload_path = campaign.workload.path
            if workload_path is not None and not workload_path.is_dir():
                raise SpecError(f"{campaign.source}: workload.path: folder '{workload_path}' does not exist "
                                "(a relative path is relative to the campaign file)")
            # The workload as the bundle will store it, read before any run: every worker's
            # digest of the folder must be this one's.
            self.exclude = workload_files.excluded(workload_path, self.out)
            try:
                self.workload = workload_files.snapshot(workload_path, self.exclude) if workload_path else []
            except workload_files.WorkloadError as exc:
                raise SpecError(f"{campaign.source}: workload.path: {exc}") from None
            scratch = Path(tempfile.mkdtemp(prefix=f"abba-{campaign.name}-"))
            staging = None
            old_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                materialized = {v: revisions.materialize(campaign, repo, campaign.revision(v), scratch)
                                for v in ("base", "candidate")}
                if materialized["base"].sha == materialized["candidate"].sha and not self.calibration:
                    raise SpecError(_same_revision(campaign, repo, materialized["base"].sha))
                problems = self.preflight(scratch, materialized, inputs)
                problems = [p + revisions.untracked_hint(campaign, repo, p) for p in problems]
                if self.interrupted:
                    raise Interrupted(f"{self.interrupted} during the pre-flight; no bundle was written")
                if problems:
                    raise PreflightError(problems)
                if self.check_only:
                    return None
                staging = bundle.Staging(self.out)
                return self._campaign(staging, scratch, materialized, inputs, golden, floor)
            except BaseException:
                if staging is not None:
                    staging.discard()
                raise
            finally:
                for s, h in old_handlers.items():
                    signal.signal(s, h)
                self.ledger.kill_all()
                shutil.rmtree(scratch, ignore_errors=True)

    def _campaign(self, staging, scratch, materialized, inputs, golden, floor) -> Outcome:
        campaign = self.campaign
        env = worker_env(campaign)
        repo_root = _repo_root(campaign.source)
        resolved = resolved_campaign(campaign, materialized, repo_root)
        staging.write_bytes(records.CAMPAIGN_YAML, campaign.raw)
        staging.write_json(records.CAMPAIGN_JSON, resolved)
        staging.write_json(records.ENVIRONMENT, records.environment(environment.capture(env)))
        staging.write_json(records.REVISIONS,
                           records.revisions_receipt({v: m.receipt() for v, m in materialized.items()}))
        staging.write_json(records.INPUTS, records.inputs_receipt(inputs))
        listed = workload_files.rows(self.workload)
        for rel, data in self.workload:
            staging.write_bytes(records.workload_file(rel), data)
        workload = records.workload_receipt(path=resolved["workload"]["path"], files=listed,
                                            digest=workload_files.digest(listed) if campaign.workload.path else None)
        staging.write_json(records.WORKLOAD, workload)
        if campaign.build:
            staging.write_json(records.BUILDS, records.builds_receipt({v: m.build for v, m in materialized.items()}))
        if golden is not None:
            golden, golden_raw = golden
            staging.write_bytes(records.GOLDEN, golden_raw)
        if floor is not None:
            floor, floor_raw = floor
            staging.write_bytes(records.NOISE_FLOOR, floor_raw)

        started = time.time()
        deadline = time.monotonic() + campaign.campaign_timeout_s
        runs, instr_runs = [], []
        labels = campaign.labels()
        plan = records.schedule(campaign.order, self._instruction_order())
        valgrind = self._valgrind() if campaign.instructions is not None else None
        self.progress.start(campaign.name, [label for label, *_ in plan])
        step = 0
        while step < len(plan):
            label, variant, index, after = plan[step]
            if self.interrupted:
                break
            if time.monotonic() >= deadline:
                self.interrupted = f"campaign timeout ({campaign.campaign_timeout_s:g} s) reached before {label}"
                break
            self.progress.run_started(step, label, variant)
            if label.startswith("I"):
                record = self._one_instruction_run(staging, scratch, materialized[variant], inputs, env, index,
                                                   label, variant, after, deadline, valgrind)
                instr_runs.append(record)
                staging.write_json(records.instructions_path(label), record)
            else:
                record = self._one_run(staging, scratch, materialized[variant], inputs, env, index, label,
                                       variant, deadline)
                runs.append(record)
                staging.write_json(records.run_path(label), record)
            self.progress.run_finished(step, label, record)
            if record["status"] != "ok":
                break  # a failed run ends the campaign: its evidence is already unusable
            step += 1
            if campaign.budget_s is not None and step == 2:
                campaign, plan, labels = self._decide_rounds(campaign, runs, plan)
                resolved = resolved_campaign(campaign, materialized, repo_root)
                staging.write_json(records.CAMPAIGN_JSON, resolved)

        self.ledger.kill_all()
        _drop_unreferenced_arrays(staging.arrays_dir, runs)
        cleanup_receipt = self.ledger.receipt()
        runner_receipt = records.runner_receipt(started_at=started, ended_at=time.time(), reason=self.interrupted,
                                                runs_planned=len(labels), runs_started=len(runs))
        staging.write_json(records.CLEANUP, cleanup_receipt)
        staging.write_json(records.RUNNER, runner_receipt)
        result = comparison.derive(resolved, runs, runner_receipt, cleanup_receipt, golden, staging.arrays_dir,
                                   floor=floor, instr=instr_runs, workload=workload["digest"])
        staging.write_json(records.COMPARISON, result)
        # Rendered outside the bundle, then copied in through a temporary file and a rename.
        figure.render(result, runs, scratch / "figure.png")
        staging.write_bytes(records.FIGURE, (scratch / "figure.png").read_bytes())
        digest = staging.seal({"External-Identifier": campaign.name,
                               "Abba-Status": result["status"],
                               "Abba-Base-SHA": materialized["base"].sha,
                               "Abba-Candidate-SHA": materialized["candidate"].sha})
        if self.interrupted and not runner_receipt["reason"]:
            # A signal after the runs but before publishing: the user asked to stop, so no
            # bundle appears rather than one whose receipts say nothing was interrupted.
            raise Interrupted(f"{self.interrupted} while sealing; no bundle was written")
        staging.publish(self.force)
        return Outcome(self.out, digest, result)

    def _decide_rounds(self, campaign, runs, plan):
        """`rounds: auto`, after the first round: as many rounds as fit the budget at its pace
        (process walls, start-up included). Only time decides, so stopping cannot shop for a
        verdict; the first round stays where it was in the longer plan."""
        pace = sum(r["process"]["wall_s"] for r in runs[:2])
        campaign = campaign.with_rounds(records.auto_rounds(campaign.budget_s, pace, campaign.min_rounds,
                                                            MAX_ROUNDS))
        longer = records.schedule(campaign.order, self._instruction_order())
        assert longer[:2] == plan[:2], "the first round moved"  # spec: no instruction run precedes it
        self.campaign = campaign
        labels = campaign.labels()
        self.progress.replan([label for label, *_ in longer], 2)
        self.progress.note(f"rounds: auto: the first round took {pace:.1f} s, so {campaign.rounds} rounds fit the "
                           f"{campaign.budget_s:g} s budget (at least {campaign.min_rounds}, at most {MAX_ROUNDS})")
        return campaign, longer, labels

    def _instruction_order(self) -> str:
        spec_ = self.campaign.instructions
        return records.instruction_order(spec_.runs) if spec_ is not None else ""

    def _valgrind(self) -> dict:
        """The valgrind every instruction run of this campaign uses (the pre-flight probed it)."""
        path = instructions.valgrind()
        if path is None:
            raise SpecError(f"{self.campaign.source}: metrics: instructions needs valgrind: install it with "
                            f"`{instructions.INSTALL}`")
        try:
            return {"path": path, "version": instructions.version(path)}
        except instructions.InstructionsError as exc:
            raise SpecError(f"{self.campaign.source}: metrics: instructions: {exc}") from None

    def _job(self, mat, inputs, index, label, variant, arrays_dir: Path, run_dir: Path, mode: str = "run") -> dict:
        campaign = self.campaign
        # Timed runs carry no stage wrappers when the order has stage runs: the headline wall
        # is then free of the wrappers' cost. The pre-flight checks every stage.
        staged = mode == "check" or (mode == "run" and campaign.instrumented(label))
        return records.job(
            label=label, variant=variant, index=index, sha=mat.sha, tree=str(mat.tree), parent_pid=os.getpid(),
            workload={"entry": campaign.workload.entry, "params": campaign.workload.params,
                      "path": str(campaign.workload.path) if campaign.workload.path else None,
                      "exclude": list(self.exclude),
                      "sys_path": list(campaign.workload.sys_path), "items": campaign.workload.items},
            inputs={name: {"path": r["path"], "sha256": r["sha256"]} for name, r in inputs.items()},
            # Instruction runs count on one slot: threads under valgrind interleave differently
            # from run to run, and with them the count (span finding's 4 slots: 0.03% apart).
            slots=1 if mode == "instructions" else campaign.slots, stages=campaign.stages if staged else {},
            optional_stages=sorted(campaign.optional_stages) if staged else [],
            arrays_dir=str(arrays_dir), result_path=str(run_dir / "result.json"), mode=mode,
            instructions_items=campaign.instructions.items if campaign.instructions is not None else None)

    def _launch(self, job: dict, run_dir: Path, label: str, role: str, timeout: float, env: dict,
                prefix: tuple[str, ...] = ()) -> dict:
        """One worker process, start to verified end: its exit, whether it timed out, what
        it left running (killed), its log, and what the runner saw of it. prefix: what the
        worker's command runs under (valgrind, for an instruction run)."""
        (run_dir / "job.json").write_text(json.dumps(job))
        log_path = run_dir / "worker.log"
        started_at, t0 = time.time(), time.monotonic()
        with open(log_path, "wb") as log:
            argv = [*prefix, sys.executable, "-m", "harness.engine.worker", str(run_dir / "job.json")]
            proc = subprocess.Popen(argv, cwd=run_dir, env=env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            self.current, self.current_label = proc, label
            try:
                self.ledger.add(psutil.Process(proc.pid), label, role, argv)
            except psutil.NoSuchProcess:
                pass
            timed_out = False
            next_watch = 0.0
            while proc.poll() is None:
                if time.monotonic() >= next_watch:
                    self.ledger.watch_descendants(proc.pid, label)
                    next_watch = time.monotonic() + WATCH_S
                self.progress.tick()
                if time.monotonic() - t0 > timeout:
                    timed_out = True
                    self._kill_run(proc.pid, label)
                    proc.wait()
                    break
                time.sleep(POLL_S)
            self.current = None
        # Anything of this run still running now was left behind by the worker: a failure.
        cleanup.reap_orphans()
        self.ledger.watch_descendants(os.getpid(), label)
        leftovers = [p for p in self.ledger.alive(label) if p.pid != proc.pid]
        self._kill_run(proc.pid, label)
        self.ledger.kill_all(label)
        return {"exit_code": proc.returncode, "timed_out": timed_out, "leftovers": leftovers, "log": log_path,
                "result": run_dir / "result.json", "argv": argv,
                "process": {"pid": proc.pid, "started_at": started_at, "wall_s": time.monotonic() - t0,
                            "ended_at": time.time()}}

    def _verdict(self, w: dict, timeout: float) -> tuple[str, str | None]:
        """(status, reason) of a finished worker."""
        if w["timed_out"]:
            return "timeout", f"killed after {timeout:.1f} s (run timeout {self.campaign.run_timeout_s:g} s)"
        if self.interrupted:
            return "failed", self.interrupted
        if w["exit_code"] != 0:
            return "failed", f"worker exited with {_describe_exit(w['exit_code'])}: {_last_line(w['log'])}"
        if not w["result"].exists():
            return "failed", "worker exited 0 without writing its result"
        if w["leftovers"]:
            return "failed", ("worker left processes running: "
                              + ", ".join(f"pid {p.pid} ({' '.join(p.cmdline)[:60]})" for p in w["leftovers"]))
        return "ok", None

    def preflight(self, scratch: Path, materialized: dict, inputs: dict) -> list[str]:
        """`harness check`: each revision in a fresh worker started exactly as a run is
        (tree, build, env, inputs), importing the entry point and every stage, calling
        setup() and one item untimed, checking the output protocol. One line per problem."""
        problems, env, calls = [], worker_env(self.campaign), {}
        for variant in ("base", "candidate"):
            label = f"check:{variant}"
            run_dir = scratch / "preflight" / variant
            run_dir.mkdir(parents=True)
            job = self._job(materialized[variant], inputs, -1, label, variant, run_dir / "arrays", run_dir, "check")
            self.progress.note(f"pre-flight: {variant} ({materialized[variant].sha[:12]}): setup() and one item")
            w = self._launch(job, run_dir, label, "preflight", self.campaign.run_timeout_s, env)
            status, reason = self._verdict(w, self.campaign.run_timeout_s)
            if status != "ok":
                if w["exit_code"] and not w["timed_out"] and not self.interrupted:
                    reason = _last_line(w["log"])
                problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): {reason}")
            else:
                calls[variant] = read_json(run_dir / "result.json").get("stage_calls") or {}
        if self.campaign.instructions is not None:
            problems += [f"{self.campaign.source}: {p}" for p in instructions.problems(sys.executable)]
        return problems + self._uncalled_stages(calls)

    def _uncalled_stages(self, calls: dict[str, dict]) -> list[str]:
        """Stages that neither revision called in its pre-flight item: a setup mistake (each
        run would record 0 calls and pass). One revision calling a stage less is the change's
        business: parity on call counts, or `calls: per_variant`, judges that."""
        if len(calls) < 2:
            return []
        stages = self.campaign.stages
        never = [name for name in stages if name not in self.campaign.optional_stages
                 and all(c.get(name) == 0 for c in calls.values())]
        if not never:
            return []
        named = ", ".join(f"'{name}' ({stages[name]})" for name in never)
        return [f"{self.campaign.source}: stages: {named} never called in either revision's pre-flight item: "
                "the code calls it through a name bound before the wrapper was installed (an alias such as "
                "`f = module.func`, a registry, a default argument), or the path names a function this "
                "workload does not run (a method a subclass overrides, a fallback); point the path at what "
                "runs, or mark the stage `optional: true` if some items skip it"]

    def _one_run(self, staging, scratch, mat, inputs, env, index, label, variant, deadline) -> dict:
        run_dir = scratch / "runs" / label
        run_dir.mkdir(parents=True)
        job = self._job(mat, inputs, index, label, variant, staging.arrays_dir, run_dir)
        # The worker streams its output into the scratch folder; the bundle gets the log
        # through a temporary file and a rename once the worker is gone (every evidence
        # file is written atomically).
        timeout = min(self.campaign.run_timeout_s, max(0.0, deadline - time.monotonic()))
        w = self._launch(job, run_dir, label, "worker", timeout, env)
        staging.write_bytes(records.log_path(label), w["log"].read_bytes())
        status, reason = self._verdict(w, timeout)
        measured = read_json(w["result"]) if status == "ok" else None
        return records.run_record(job, status=status, reason=reason, exit_code=w["exit_code"], process=w["process"],
                                  measured=measured)


    def _one_instruction_run(self, staging, scratch, mat, inputs, env, index, label, variant, after, deadline,
                             valgrind) -> dict:
        """One instruction run: a fresh worker under valgrind, counting its item loop only,
        in the fixed environment that makes the count repeat (recorded with the command)."""
        run_dir = scratch / "runs" / label
        run_dir.mkdir(parents=True)
        job = self._job(mat, inputs, index, label, variant, run_dir / "arrays", run_dir, "instructions")
        out_file = run_dir / "callgrind.out"
        timeout = min(self.campaign.run_timeout_s, max(0.0, deadline - time.monotonic()))
        run_env = {**env, **instructions.ENV}
        w = self._launch(job, run_dir, label, "worker", timeout, run_env,
                         tuple(instructions.command(valgrind["path"], out_file)))
        staging.write_bytes(records.log_path(label), w["log"].read_bytes())
        status, reason = self._verdict(w, timeout)
        count = measured = None
        if status == "ok":
            try:
                count, measured = instructions.read_count(out_file), read_json(w["result"])
            except instructions.InstructionsError as exc:
                status, reason = "failed", str(exc)
        return records.instruction_record(
            job, status=status, reason=reason, exit_code=w["exit_code"], process=w["process"], measured=measured,
            count=count, after=after,
            valgrind={"version": valgrind["version"], "command": w["argv"], "env": dict(instructions.ENV)})


def _same_revision(campaign: Campaign, repo: Path, sha: str) -> str:
    worktree = [v for v in ("base", "candidate") if campaign.revision(v).rev == revisions.WORKTREE]
    if not worktree:
        return (f"{campaign.source}: base.rev and candidate.rev both resolve to {sha[:12]}: nothing to compare")
    untracked = revisions.untracked_files(repo)
    extra = (f"; {len(untracked)} untracked file(s) (e.g. {untracked[0]}) are left out: `git add` them, "
             "a WORKTREE revision takes tracked files only") if untracked else ""
    return (f"{campaign.source}: {worktree[0]}.rev: WORKTREE: the working tree has no uncommitted changes to "
            f"tracked files (it is HEAD, {sha[:12]}, like the other revision): nothing to compare{extra}")


def _drop_unreferenced_arrays(arrays_dir: Path, runs: list[dict]) -> None:
    """A run that failed after storing outputs has no items in its record: its arrays are
    evidence of nothing, and a bundle holds only arrays its records name."""
    referenced = {records.array_path(f["digest"]).rsplit("/", 1)[1]
                  for r in runs for it in r["items"] for f in it["fields"].values()}
    if arrays_dir.is_dir():
        for path in arrays_dir.iterdir():
            if path.name not in referenced:
                path.unlink()


def _repo_root(path: Path) -> Path | None:
    for parent in [path.parent, *path.parents]:
        if (parent / ".git").exists():
            return parent
    return None


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"signal {signal.Signals(-code).name}"
        except ValueError:
            return f"signal {-code}"
    return f"code {code}"


def _last_line(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return "no log"
    return lines[-1][:800] if lines else "no output"  # room for the cause and its fix
