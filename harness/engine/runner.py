"""A campaign end to end: inputs, revisions, one fresh worker per run of the plan (strictly
sequential, each in its own process group, started through a Launcher), cleanup proof,
comparison and the sealed bundle. This process never imports the code under test."""
from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import contract as C, outcomes, records
from harness import rules as R
from harness.bundle import arrays as tensors, write as bundle
from harness.bundle.model import Comparison
from harness.comparison import analysis, derive as comparison
from harness.engine import instructions, outside, sandbox, sealable
from harness.engine.environment import InterpreterError, mismatch as interpreter_mismatch
from harness.engine.launch import Exit, Launch, Launcher, LocalLauncher
from harness.engine.progress import Silent
from harness.files import WriteFailed, path_digest, sha256_bytes, tree_listing, write_failed
from harness.plan import revisions, workload as workload_files
from harness.plan.spec import Campaign, SpecError

# Passed through from the harness's environment when set: locale-free basics, and the
# OpenBLAS settings some CPUs need for correct results.
PASS_THROUGH = ("PATH", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "CUDA_VISIBLE_DEVICES")
# What each run has of its own: a fresh, empty home and temporary folder (the XDG folders under
# the home), made before the worker starts and removed with its run folder (its cwd) once the run
# is recorded, so that nothing a run caches there is found by the next. A key the campaign's env
# sets is left as the campaign set it: a cache it declares, shared by every run, and recorded.
PER_RUN = {"HOME": "home", "TMPDIR": "tmp", "TMP": "tmp", "TEMP": "tmp", "XDG_CACHE_HOME": "home/.cache",
           "XDG_CONFIG_HOME": "home/.config", "XDG_DATA_HOME": "home/.local/share",
           "XDG_STATE_HOME": "home/.local/state"}
# What no fresh folder isolates: recorded in environment.json beside what was (docs/guarantees.md).
# The sandbox (engine/sandbox.py) keeps a run off everything else: environment.json's sandbox says
# how far it could.
SHARED = ("its own revision's tree, read-only (a run that changes a tree fails)",
          "the inputs (hash-checked before the first run), read-only",
          "the operating system's page cache and the CPU caches",
          "the folders the campaign's env declares (shared caches) and sandbox.read declares")
RESULT_LIMIT = 64 << 20  # the most bytes a worker's result.json may have (10,000 items of 256 fields fit)
FIXED_ENV = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1",
             "PYTHONNOUSERSITE": "1", "PYTHONUNBUFFERED": "1", "HF_HUB_OFFLINE": "1",
             "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
# The pre-flight's timing notes: a base item under MIN_ITEM_S is mostly the process's own jitter
# (a repeat of it moved by 300-1400% here under load); TIMED_ITEM_S is what to aim for, and what
# `suite.number: auto` calibrates each benchmark's timed item to.
MIN_ITEM_S, TIMED_ITEM_S = 1e-3, 1e-2
# `suite.number: auto`: the most seconds the base's pre-flight spends calibrating (and at most half
# the run timeout, so that the pre-flight worker still ends within it); past it, one line refuses.
CALIBRATE_S = 120.0


@dataclass(frozen=True)
class Ready:
    """A run whose job and folders are written and whose launch is made, not yet started."""
    job: records.Job
    run_dir: Path
    out_dir: Path
    out_file: Path  # an instruction run's callgrind output
    timeout: float
    argv: list
    launch: Launch


@dataclass
class Outcome:
    out: Path
    digest: str
    comparison: Comparison  # what the runner derived and sealed
    note: str | None = None  # where the bundle went when --out was taken meanwhile

    @property
    def exit_code(self) -> int:
        return outcomes.run_code(self.comparison)


class Interrupted(Exception):
    pass


class OutputRefused(ValueError):
    """An output the contract's rules refuse (contract.fields_problem, output_problem, and the
    array reader's dtype rule): one line naming the item, the field and the fix."""


class PreflightError(SpecError):
    """The pre-flight found problems: one line each, nothing was timed, no bundle written."""

    def __init__(self, problems: list[str]):
        super().__init__("\n".join(problems))
        self.problems = problems


def timing_notes(seen: dict[str, records.CheckResult], band: float, counts_instructions: bool,
                 suite: bool = False, auto: bool = False) -> list[str]:
    """Notes from each revision's pre-flight item repeated in one process (the first repeat
    left out: a fresh process warms up): a base item too short to time (none under `suite.number:
    auto`, whose pre-flight times single calls of items it then calibrates); and, for items long
    enough to time, repeats that moved by more than the verdict's band, where instruction
    counts can decide what wall time here cannot. The spread leaves out the slowest repeat
    too (other work only ever adds time, and one interruption must not speak for the machine),
    and is the smaller of the two revisions': the machine's noise moves both, while a rhythm of
    one revision's own (a collector every other call) averages out over a run's items."""
    import statistics

    notes, spreads, medians = [], [], {}
    for variant, result in seen.items():
        repeats = result.repeats
        if repeats:  # a long item repeats once or not at all in the budget: its wall still says how far apart
            medians[variant] = statistics.median(repeats)
        walls = sorted(repeats[1:])
        if len(walls) < 3:
            continue
        median = statistics.median(walls)
        if median < MIN_ITEM_S:
            if variant == "base" and not auto:
                times = math.ceil(TIMED_ITEM_S / max(median, 1e-9))
                fix = ("give `suite: {number: auto}` (each benchmark's calls calibrated on the base's pre-flight), or "
                       f"`suite: {{number: {times}}}` (or more) so that a timed item calls it {times} times"
                       if suite else f"have run() repeat its work about {times} times")
                notes.append(
                    f"pre-flight: item {result.item} takes {1e3 * median:.3g} ms in the base: too short to "
                    f"time against a process's own jitter; {fix}, so that an item takes "
                    f"{1e3 * TIMED_ITEM_S:.0f} ms or more")
            continue
        kept = walls[:-1] if len(walls) >= 4 else walls
        spreads.append((kept[-1] - kept[0]) / statistics.median(kept))
    # A change far larger than the noise (the item's two revisions apart by more than twice
    # what its repeats moved) is resolved by wall time whatever the band.
    apart = abs(math.log(medians["candidate"] / medians["base"])) \
        if len(medians) == 2 and min(medians.values()) > 0 else 0.0
    spread = min(spreads, default=0.0)
    if spread > 2 * band and apart <= 2 * spread and not counts_instructions:
        notes.append(f"pre-flight: the item's wall moved by {100 * spread:.0f}% over a few repeats in one "
                     f"process, against an equal band of +-{100 * band:.0f}%: wall time on this machine may not "
                     "resolve a change that small; `metrics: [wall, instructions]` adds instruction counts, which "
                     "noise does not move")
    return notes


def worker_env(campaign: Campaign, code: Path | None = None) -> dict[str, str]:
    """The workers' environment: the basics passed through, the fixed settings, the campaign's
    env, and the harness's own code (a copy of it, so that a worker under the campaign's own
    interpreter imports it, and a harness edited mid-campaign changes nothing) on PYTHONPATH."""
    env = {k: os.environ[k] for k in PASS_THROUGH if k in os.environ}
    env.update(FIXED_ENV)
    env.update(campaign.env)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), campaign.env.get("PYTHONPATH")]))
    return env


def isolation(campaign: Campaign) -> dict:
    """environment.json's record of what each run had of its own and what it shared."""
    return {"per_run": sorted(k for k in PER_RUN if k not in campaign.env),
            "declared": sorted(k for k, v in campaign.env.items() if k in PER_RUN or "/" in v),
            "shared": list(SHARED)}


def own_folders(run_dir: Path, campaign_env: dict) -> dict[str, str]:
    """The run's own home and temporary folder under its run folder, made now, empty: the
    PER_RUN keys the campaign's env does not set, pointing at them."""
    env = {}
    for key, rel in PER_RUN.items():
        if key not in campaign_env:
            (run_dir / rel).mkdir(parents=True, exist_ok=True)
            env[key] = str(run_dir / rel)
    return env


def stage_workload(scratch: Path, files: list[tuple[str, bytes]]) -> Path:
    """The workload folder as the bundle stores it (its snapshot: without byte code, .git, bundles
    and our own output), copied for the workers, which import it from here: what ran is what the
    bundle holds, and nothing else of the folder (an earlier bundle's outputs) is theirs to read."""
    dest = scratch / "workload"
    dest.mkdir()
    for rel, data in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_bytes(data)
    return dest


def prepare_inputs(campaign: Campaign, log) -> dict[str, records.InputPin]:
    """Build missing inputs with their recorded command, then check every pinned hash: each as
    inputs.json records it."""
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
        receipts[inp.name] = records.InputPin(path=str(inp.path), kind=kind, sha256=digest,
                                              build=list(inp.build) if inp.build is not None else None)
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
        try:
            os.rename(tmp, inp.path)
        except OSError:
            if not inp.path.exists():  # another run of the campaign built it first; its hash is checked next
                raise
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


def load_noise_floor(campaign: Campaign) -> tuple[records.NoiseFloor, bytes] | None:
    """The pinned noise-floor file, read through its type, and its bytes (copied into the bundle as
    they are); refused in one line when it is not one `harness calibrate` wrote for this campaign."""
    if campaign.noise_floor is None:
        return None
    where = f"{campaign.source}: noise_floor"
    try:
        raw = campaign.noise_floor.read_bytes()
        doc = json.loads(raw.decode())
    except (OSError, ValueError) as exc:
        raise SpecError(f"{where}.path: cannot read '{campaign.noise_floor}': {exc}") from None
    if sha256_bytes(raw) != campaign.noise_floor_sha256:
        assert campaign.noise_floor_sha256 is not None  # the spec reads the path and its sha256 together
        raise SpecError(f"{where}.sha256: '{campaign.noise_floor}' has sha256 {sha256_bytes(raw)[:16]}..., "
                        f"pinned {campaign.noise_floor_sha256[:16]}...")
    try:
        pinned = records.NoiseFloor.from_json(doc)
    except (KeyError, TypeError):
        pinned = None
    if pinned is None or pinned.schema != C.SCHEMAS["noise_floor"] or not isinstance(pinned.floor, (int, float)) \
            or isinstance(pinned.floor, bool) or not 0 <= pinned.floor <= 0.5:
        raise SpecError(f"{where}.path: '{campaign.noise_floor}' is not a noise-floor file of `harness calibrate`")
    if pinned.campaign != campaign.name:
        raise SpecError(f"{where}.path: '{campaign.noise_floor}' calibrates campaign {pinned.campaign!r}, "
                        f"not {campaign.name!r}")
    refused = R.noise_floor_problem(doc)  # the contract's decision rule, as both checkers apply it
    if refused:
        raise SpecError(f"{where}.path: '{campaign.noise_floor}': {refused}")
    return pinned, raw


def resolved_campaign(campaign: Campaign, materialized: dict, repo_root: Path | None) -> records.CampaignRecord:
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
                 check_only: bool = False, calibration: bool = False, launcher: Launcher | None = None):
        self.campaign = campaign.with_seed()  # rounds: the shuffle settled (and recorded) now
        self.out = out
        self.force = force
        self.check_only = check_only  # `harness check`: the pre-flight only, no bundle
        self.calibration = calibration  # `harness calibrate`: base against base, one SHA allowed
        self.progress = progress or Silent()
        self.launcher = launcher or _launcher(campaign, self.progress.tick)
        self.clock = self.launcher.clock
        self.interrupted: str | None = None
        self.workload: list[tuple[str, bytes]] = []  # the workload folder's files, read at the start
        self.left_out: list[str] = []  # what the snapshot left out by its rules
        self.exclude: tuple[str, ...] = ()  # our own output, when it lies inside the workload folder
        self.trees: dict[str, list] = {}  # variant -> its tree's listing before the first run
        self.items_all: list[str] = []  # the workload's items, as the pre-flight found them
        self.warnings: list[str] = []  # the pre-flight's notes (outputs that already differ, ...)
        self.receipts_written = False  # every run ended and the runner's receipts are in the staging folder
        self.unanchored: str | None = None  # the campaign file lies outside any git repository: why that matters
        self.budget = sealable.Budget()  # the checkers' limits on outputs, over the runs so far
        self.decided_at: dict[str, int] = {}  # a suite's benchmarks the looks decided: they leave the later rounds
        self.found: sandbox.Probe | None = None  # what sandbox this machine gives (probed once, at the start)
        self.workload_copy: Path | None = None  # the workload folder's snapshot, which the workers import from
        self.readable: dict[str, list[str]] = {}  # variant -> what its runs may read

    # --- signals: SIGINT/SIGTERM kill the running worker and end in a sealed, failed bundle
    def _on_signal(self, signum, _frame):
        self.interrupted = f"interrupted by {signal.Signals(signum).name}"
        self.launcher.interrupt()

    def run(self) -> Outcome | None:
        """The campaign, sealed into --out; with check_only, the pre-flight alone (None)."""
        if self.campaign.launch == C.DUET:  # the cores its rounds' runs are pinned to, settled (and recorded) now
            from harness.engine.duet_launcher import DuetError, cores_for, crowded

            allowed = self.launcher.cpus()
            try:
                self.campaign = self.campaign.with_cores(cores_for(self.campaign.cores, allowed))
            except DuetError as exc:
                raise SpecError(f"{self.campaign.source}: {exc}") from None
            warning = crowded(allowed)
            if warning:  # said before the pre-flight, and again with the verdict
                self.warnings.append(warning)
                self.progress.note(f"warning: {warning}")
        campaign = self.campaign
        claim = None if self.check_only else bundle.claim_output(self._out(), self.force)
        with contextlib.nullcontext() if self.check_only else bundle.OutputLock(self._out()):
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
                self.workload = workload_files.snapshot(workload_path, self.exclude, self.left_out) \
                    if workload_path else []
            except workload_files.WorkloadError as exc:
                raise SpecError(f"{campaign.source}: workload.path: {exc}") from None
            if _repo_root(campaign.source) is None:  # campaign_path sealed absolute: never anchored, never re-run
                self.unanchored = outside_repository(campaign.source)
            if self.left_out:
                shown = ", ".join(self.left_out[:4]) + (f" and {len(self.left_out) - 4} more"
                                                        if len(self.left_out) > 4 else "")
                self.progress.note(f"workload: stored {len(self.workload)} file(s) of {workload_path}; left out "
                                   f"by rule: {shown}")
            try:
                interpreters = {v: self.launcher.interpreter(campaign.revision(v).python, campaign.source.parent)
                                for v in ("base", "candidate")}
            except InterpreterError as exc:
                raise SpecError(f"{campaign.source}: {exc}") from None
            self.interpreters = interpreters  # what each worker must report it runs (interpreter_mismatch)
            scratch = Path(tempfile.mkdtemp(prefix=f"abba-{campaign.name}-"))
            staging = None
            old_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                code = self.launcher.stage_code(scratch)
                self.workload_copy = stage_workload(scratch, self.workload) if campaign.workload.path else None
                materialized = {v: revisions.materialize(campaign, repo, campaign.revision(v), scratch)
                                for v in ("base", "candidate")}
                self._materialized = materialized
                self._confine(code, materialized, inputs, interpreters)
                if materialized["base"].sha == materialized["candidate"].sha and not self.calibration and \
                        interpreters["base"].executable == interpreters["candidate"].executable:
                    raise SpecError(_same_revision(campaign, repo, materialized["base"].sha))
                problems = self.preflight(scratch, materialized, inputs, interpreters, code)
                problems = [p + revisions.untracked_hint(campaign, repo, p) for p in problems]
                if self.interrupted:
                    raise Interrupted(f"{self.interrupted} during the pre-flight; no bundle was written")
                if problems:
                    raise PreflightError(problems)
                if self.check_only:
                    return None
                self._trees = {v: str(m.tree) for v, m in materialized.items()}
                self.trees = {v: tree_listing(m.tree) for v, m in materialized.items()}
                staging = bundle.Staging(self._out())
                return self._campaign(staging, scratch, materialized, inputs, golden, floor, interpreters, code,
                                      claim)
            except OSError as exc:
                if staging is None:
                    raise
                # A write failed (a full disk, most often while sealing): the finished runs stay
                # in the staging folder, and the line says how to seal them once there is room.
                raise self._kept(staging, exc) from None
            except BaseException:
                if staging is not None:
                    staging.discard()
                raise
            finally:
                for s, h in old_handlers.items():
                    signal.signal(s, h)
                self.launcher.kill_all()
                shutil.rmtree(scratch, ignore_errors=True)

    def _out(self) -> Path:
        """--out, which every mode but the pre-flight alone (`harness check`) has."""
        assert self.out is not None, "a campaign without --out"
        return self.out

    def _kept(self, staging, exc: OSError) -> WriteFailed:
        """The failure, saying where the finished runs are and how to go on: `harness seal` once
        every run ended and its receipts are written (then nothing is left to measure), a fresh
        campaign otherwise. A failed publish already says where its sealed bundle is."""
        failed = write_failed(staging.root, exc)
        if failed.fix:
            return failed
        runs = staging.root / "data" / "runs"
        n = sum(1 for p in runs.iterdir() if p.suffix == ".json") if runs.is_dir() else 0
        mend = "free space" if failed.write else "mend what the error names"
        if self.receipts_written:
            return failed.with_fix(f"the {n} finished run(s) are kept in {staging.root}",
                                   f"{mend}, then `harness seal {staging.root} --out {self.out}`",
                                   staging.root, True)
        return failed.with_fix(f"the {n} finished run(s) are kept in {staging.root}, but the campaign stopped "
                               "before its runs ended, so they cannot be sealed", f"{mend} and run the campaign "
                               "again", staging.root, False)

    def _campaign(self, staging, scratch, materialized, inputs, golden, floor, interpreters, code,
                  claim) -> Outcome:
        campaign = self.campaign
        env = worker_env(campaign, code)
        repo_root = _repo_root(campaign.source)
        resolved = resolved_campaign(campaign, materialized, repo_root)
        staging.write_bytes(C.CAMPAIGN_YAML, campaign.raw)
        staging.write_json(C.CAMPAIGN_JSON, records.to_json(resolved))  # what makes a kept staging folder this harness's
        sandboxed = self._sandbox_record()
        staging.write_json(C.ENVIRONMENT, records.environment({**self.launcher.environment(
            {k: v for k, v in env.items() if k != "PYTHONPATH" or k in campaign.env}, interpreters),
            "isolation": isolation(campaign), "sandbox": records.to_json(sandboxed)}))
        if sandboxed.level != "full":
            self.progress.note(f"sandbox {sandboxed.level}: {sandboxed.reason}")
        staging.write_json(C.REVISIONS, records.revisions_receipt({v: m.receipt() for v, m in materialized.items()}))
        staging.write_json(C.INPUTS, records.to_json(records.inputs_receipt(inputs)))
        listed = workload_files.rows(self.workload)
        for rel, data in self.workload:
            staging.write_bytes(C.WORKLOAD_DIR + rel, data)
        workload = records.workload_receipt(path=resolved.workload.path, files=listed,
                                            digest=workload_files.digest(listed) if campaign.workload.path else None,
                                            left_out=self.left_out)
        staging.write_json(C.WORKLOAD, records.to_json(workload))
        if campaign.build:
            staging.write_json(C.BUILDS, records.builds_receipt({v: m.build for v, m in materialized.items()}))
        if golden is not None:
            staging.write_bytes(C.GOLDEN, golden[1])
        if floor is not None:
            staging.write_bytes(C.NOISE_FLOOR, floor[1])

        items = C.subset(self.items_all, campaign.workload.items)
        started = self.clock.time()
        deadline = self.clock.monotonic() + campaign.campaign_timeout_s
        runs, instr_runs = [], []
        plan = R.schedule(campaign.order, self._instruction_order(), self._spread())
        valgrind = self._valgrind() if campaign.instructions is not None else None
        self.progress.start(campaign.name, [label for label, *_ in plan])
        step = 0
        while step < len(plan):
            label, variant, index, after = plan[step]
            if self.interrupted:
                break
            if self.clock.monotonic() >= deadline:
                self.interrupted = f"campaign timeout ({campaign.campaign_timeout_s:g} s) reached before {label}"
                break
            mode = "instructions" if label.startswith("I") else "run"
            together = plan[step:step + 2] if campaign.launch == C.DUET and mode == "run" else [plan[step]]
            for at, (label_, variant_, *_rest) in enumerate(together):
                self.progress.run_started(step + at, label_, variant_)
            if len(together) == 2:  # a duet's round: both runs at once
                made = self._duet(staging, scratch, materialized, inputs, env, together, deadline, interpreters, items)
            else:
                held = R.run_items(items, self.decided_at, label) if mode == "run" else items
                made = [self._one_run(staging, scratch, materialized[variant], inputs, env, index, label, variant,
                                      deadline, interpreters[variant].executable, held, mode, after, valgrind)]
            for at, record in enumerate(made):
                shutil.rmtree(scratch / "runs" / record.variant / record.label, ignore_errors=True)  # never the next run's
                if mode == "instructions":
                    instr_runs.append(record)
                    staging.write_json(C.instructions_path(record.label), records.to_json(record))
                else:
                    runs.append(record)
                    staging.write_json(C.run_path(record.label), records.to_json(record))
                self.progress.run_finished(step + at, record.label, record)
            if any(record.status != "ok" for record in made):
                break  # a failed run ends the campaign: its evidence is already unusable
            step += len(made)
            if campaign.budget_s is not None and mode == "run" and (step == 2 or self._decides(runs, floor, items)):
                campaign, plan = self._cap_rounds(campaign, runs, plan) if step == 2 else \
                    self._stop_rounds(campaign, runs, plan, step)

        self.launcher.kill_all()
        if campaign.budget_s is not None:
            # Sequential rounds: the count the looks settled, once (seal reads it only with the receipts).
            resolved = resolved_campaign(campaign, materialized, repo_root)
            staging.write_json(C.CAMPAIGN_JSON, records.to_json(resolved))
        _drop_unreferenced_arrays(staging.arrays_dir, runs)
        cleanup_receipt = self.launcher.receipt()
        runner_receipt = records.runner_receipt(
            started_at=started, ended_at=self.clock.time(), reason=self.interrupted,
            runs_planned=len(campaign.order), runs_started=len(runs), items_all=self.items_all, items=items)
        staging.write_json(C.CLEANUP, records.to_json(cleanup_receipt))
        staging.write_json(C.RUNNER, records.to_json(runner_receipt))
        self.receipts_written = True  # from here on `harness seal` can finish what a failed write stops
        result = comparison.derive(resolved, runs, runner_receipt, cleanup_receipt, golden and golden[0],
                                   staging.arrays_dir, floor=floor and floor[0], instr=instr_runs,
                                   workload=workload.digest, sandbox=records.to_json(sandboxed))
        staging.write_json(C.COMPARISON, records.to_json(result))
        digest = staging.seal({"External-Identifier": campaign.name,
                               "Abba-Status": result.status,
                               "Abba-Base-SHA": materialized["base"].sha,
                               "Abba-Candidate-SHA": materialized["candidate"].sha})
        if self.interrupted and not runner_receipt.reason:
            # A signal after the runs but before publishing: the user asked to stop, so no
            # bundle appears rather than one whose receipts say nothing was interrupted.
            raise Interrupted(f"{self.interrupted} while sealing; no bundle was written")
        where, note = staging.publish(claim, digest)
        return Outcome(where, digest, result, note)

    def _spread(self) -> int | None:
        """The wall runs the instruction runs are spread between: a sequential campaign's first look."""
        c = self.campaign
        if c.budget_s is None:
            return None
        assert c.min_rounds is not None  # `rounds: auto` sets budget_s and min_rounds together
        return 2 * (c.min_rounds + (c.stage_rounds or 0))

    def _cap_rounds(self, campaign, runs, plan):
        """`rounds: auto`, after the first round: the cap, as many rounds as fit the budget at its
        pace (process walls, start-up included). Only time sets it; the looks decide the stop.
        The order of a longer campaign begins with a shorter one's, so the first round stands."""
        pace = R.round_pace(campaign.launch, runs[0].process.wall_s, runs[1].process.wall_s)
        campaign = campaign.with_rounds(R.auto_rounds(campaign.budget_s, pace, campaign.min_rounds))
        longer = R.schedule(campaign.order, self._instruction_order(), self._spread())
        assert longer[:2] == plan[:2], "the first round moved"  # spec: no instruction run precedes it
        self.campaign = campaign
        self.progress.replan([label for label, *_ in longer], 2)
        fit = R.auto_rounds(campaign.budget_s, pace, 1)
        if fit >= campaign.min_rounds:
            how = (f"; from round {campaign.min_rounds} a look after each round decides when to stop, at most "
                   f"{campaign.rounds} rounds (the {campaign.budget_s:g} s budget)")
        else:
            how = (f", so {fit} round(s) would fit the {campaign.budget_s:g} s budget; the first look after "
                   f"{campaign.min_rounds} rounds makes it about {campaign.rounds * pace / 60:.1f} minutes "
                   f"(`min_rounds:` lowers it, to 3 at the least)")
        self.progress.note(f"rounds: auto: the first round took {pace:.1f} s{how}")
        return campaign, longer

    def _decides(self, runs, floor, items) -> bool:
        """After a round from the first look, before the cap: does its look decide? A suite's
        benchmarks that its look decided leave the later rounds (self.decided_at)."""
        last = runs[-1]
        k = int(last.label[1:]) if R.timed(last.label) else 0
        partner = ("B" if last.label[0] == "A" else "A") + last.label[1:]
        first, cap = self.campaign.min_rounds, self.campaign.rounds
        assert first is not None and cap is not None  # `rounds: auto` (budget_s) sets both
        if not first <= k < cap or partner not in {r.label for r in runs}:
            return False
        precision = self.campaign.precision
        plan = analysis.Plan(first, cap, precision=precision)
        family = items if C.is_suite_entry(self.campaign.workload.entry) else None
        stats = analysis.stats_of(runs, self.campaign.threshold, floor[0].floor if floor else None, plan,
                                  question=self.campaign.question, margin=self.campaign.margin, family=family)
        if stats.family is not None:
            decided = {m.id: m.decided_at for m in stats.family.items if m.decided_at is not None}
            now = [i for i in decided if i not in self.decided_at]
            self.decided_at = decided
            if now and len(decided) < len(items):
                self.progress.note(f"rounds: auto: the look after round {k} decided {len(now)} benchmark(s), "
                                   f"{len(items) - len(decided)} still undecided: the decided ones leave the later rounds")
        looks = stats.sequential.looks if stats.sequential is not None else []
        if not looks:
            return False
        last_look = looks[-1]
        if last_look.verdict != "inconclusive" and last_look.precise is False and precision is not None \
                and last_look.ci95 is not None:
            lo, hi = last_look.ci95
            self.progress.note(f"rounds: auto: the look after round {k} decided {last_look.verdict}, but its "
                               f"interval {lo:.4g}-{hi:.4g} is wider than the +-{100 * precision:g}% precision asked "
                               "for: going on")
        return R.ends(last_look.verdict, last_look.precise)

    def _stop_rounds(self, campaign, runs, plan, step):
        """The look after this round decided: the campaign ends here (the runs done are the plan)."""
        rounds = int(runs[-1].label[1:])
        campaign = campaign.with_rounds(rounds)
        shorter = R.schedule(campaign.order, self._instruction_order(), self._spread())
        assert shorter == plan[:step], "a stop moved a run"
        self.campaign = campaign
        self.progress.replan([label for label, *_ in shorter], step)
        within = f" within the +-{100 * campaign.precision:g}% precision asked for" if campaign.precision else ""
        self.progress.note(f"rounds: auto: the look after round {rounds} decided{within}; stopping")
        return campaign, shorter

    def _instruction_order(self) -> str:
        spec_ = self.campaign.instructions
        return R.instruction_order(spec_.runs) if spec_ is not None else ""

    def _valgrind(self) -> instructions.Valgrind:
        """The valgrind every instruction run of this campaign uses (the pre-flight probed it)."""
        path = instructions.valgrind()
        if path is None:
            raise SpecError(f"{self.campaign.source}: metrics: instructions needs valgrind: install it with "
                            f"`{instructions.INSTALL}`")
        try:
            return instructions.Valgrind(path, instructions.version(path))
        except instructions.InstructionsError as exc:
            raise SpecError(f"{self.campaign.source}: metrics: instructions: {exc}") from None

    def _job(self, mat, inputs, index, label, variant, arrays_dir: Path, run_dir: Path, items,
             mode: str, calibrate_s: float | None = None) -> records.Job:
        campaign = self.campaign
        # Timed runs carry no stage wrappers when the order has stage runs: the headline wall
        # is then free of the wrappers' cost. The pre-flight checks every stage.
        staged = mode == "check" or (mode == "run" and R.instrumented(label, campaign.order))
        return records.Job(
            mode=mode, label=label, variant=variant, index=index, sha=mat.sha, tree=str(mat.tree),
            parent_pid=os.getpid(),
            workload=records.JobWorkload(
                entry=campaign.workload.entry, params=campaign.workload.params,
                path=str(self.workload_copy) if self.workload_copy else None, exclude=[],
                sys_path=list(campaign.workload.sys_path), items=campaign.workload.items,
                prepare=campaign.workload.prepare),
            inputs={name: records.JobInput(path=pin.path, sha256=pin.sha256) for name, pin in inputs.items()},
            # Instruction runs count on one slot: threads under valgrind interleave differently
            # from run to run, and with them the count (span finding's 4 slots: 0.03% apart).
            slots=1 if mode == "instructions" else campaign.slots, stages=campaign.stages if staged else {},
            optional_stages=sorted(campaign.optional_stages) if staged else [],
            arrays_dir=str(arrays_dir), result_path=str(run_dir / "result.json"), items=items,
            instructions_items=campaign.instructions.items if campaign.instructions is not None else None,
            items_all=self.items_all, calibrate_s=calibrate_s)

    def _launch(self, job: records.Job, run_dir: Path, label: str, role: str, timeout: float, env: dict,
                python: str, prefix: tuple = ()) -> tuple[list, Exit]:
        """One worker through the launcher, in its sandbox; its job file beside its log."""
        argv, launch = self._launch_of(job, run_dir, label, role, timeout, env, python, prefix)
        return argv, self.launcher.run(launch)

    def _launch_of(self, job: records.Job, run_dir: Path, label: str, role: str, timeout: float, env: dict,
                   python: str, prefix: tuple = ()) -> tuple[list, Launch]:
        """A worker's launch (its job file written beside its log), not started."""
        (run_dir / "job.json").write_text(json.dumps(records.to_json(job)))
        argv = [*prefix, python, "-m", C.WORKER_MODULE, str(run_dir / "job.json")]
        env = {**env, **own_folders(run_dir, self.campaign.env)}
        return argv, Launch(argv, env, run_dir, run_dir / "worker.log", label, role, timeout,
                            self._confinement(job.variant, run_dir))

    # --- the sandbox -------------------------------------------------------------------------
    def _confine(self, code: Path, materialized: dict, inputs: dict, interpreters: dict) -> None:
        """What this machine gives (probed once) and what each variant's runs may read."""
        setting = self.campaign.sandbox
        self.code, self.trees_of = code, {v: str(m.tree) for v, m in materialized.items()}
        self.found = self.launcher.sandbox_probe(code) if setting.mode != "off" else None
        for variant in materialized:
            try:
                roots = sandbox.interpreter_roots(interpreters[variant].executable)
            except sandbox.SandboxError as exc:
                raise SpecError(f"{self.campaign.source}: {exc}") from None
            workload = str(self.workload_copy) if self.workload_copy else None
            # the harness's code copy too: a suite's adapter is the workload entry
            self.readable[variant] = sandbox.readable(roots, [pin.path for pin in inputs.values()], workload,
                                                      [*setting.read, str(code)], self.campaign.env,
                                                      interpreters[variant].executable)
        if self.out is not None and setting.mode != "off":
            staging = self.out.absolute().parent
            for what, folders in (("readable", sorted({p for v in self.readable.values() for p in v})),
                                  ("writable (the campaign's env names it)", sandbox.declared_write(self.campaign.env))):
                for folder in folders:
                    if staging == Path(folder) or Path(folder) in staging.parents:
                        raise SpecError(f"{self.campaign.source}: the runs' {what} folder {folder} holds the bundle's "
                                        f"output ({self.out}): the code under test could read or write the evidence; "
                                        "write the bundle elsewhere (--out)")

    def _confinement(self, variant: str, run_dir: Path) -> sandbox.Confinement | None:
        if self.found is None or variant not in self.readable:
            return None
        return sandbox.confinement(self.found, self.campaign.sandbox, self.code, self.trees_of[variant],
                                   self.readable[variant], run_dir, sandbox.declared_write(self.campaign.env))

    def _sandbox_record(self) -> records.SandboxRecord:
        found = self.found or sandbox.Probe(None, False, ("no sandbox probe",))
        read = sorted({p for paths in self.readable.values() for p in paths})
        return sandbox.record(found, self.campaign.sandbox, read, sandbox.declared_write(self.campaign.env))

    # --- what the worker hands back, checked -------------------------------------------------
    def _result(self, run_dir: Path) -> dict:
        """The worker's result.json, read as hostile input: bounded, no link followed, strict JSON."""
        from harness.files import read_regular

        return C.parse_json(read_regular(run_dir / "result.json", RESULT_LIMIT))

    @staticmethod
    def _outputs(out_dir: Path, files: dict, arrays_dir: Path | None, where: str) -> dict:
        """{name: Output} of one item's output files, read, hashed and (into arrays_dir) stored by the
        runner; ValueError naming the field and what is wrong."""
        if not isinstance(files, dict):
            raise ValueError(f"{where}: its outputs are not a mapping of field names to files")
        refused = C.fields_problem(list(files))  # the contract's rules on names, before any file is read
        if refused:
            raise OutputRefused(f"{where}: {refused}")
        fields = {}
        for name, file in files.items():
            if not isinstance(file, str) or not file.endswith(".npy") or "/" in file or file.startswith(".") \
                    or len(file) > 64:
                raise ValueError(f"{where}: output {str(name)[:60]!r} names no file of its output folder")
            try:
                fields[name] = records.Output(**tensors.ingest(out_dir / file, arrays_dir))
            except tensors.ArrayError as exc:
                raise OutputRefused(f"{where}: field {name[:60]!r}: {exc}") from None
        refused = C.output_problem({name: (f.dtype, f.shape) for name, f in fields.items()})
        if refused:
            raise OutputRefused(f"{where}: {refused}")
        return fields

    def _ingest(self, measured: records.WorkerResult, out_dir: Path, arrays_dir: Path) -> list:
        """The run record's items: the worker's walls and errors, with the outputs the runner read
        from its output folder, hashed and stored itself (the folder opened without following a link)."""
        try:
            fd = os.open(out_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError as exc:
            raise ValueError(f"its output folder cannot be opened ({exc.strerror}): the worker replaced it") from None
        try:
            safe = Path(f"/proc/self/fd/{fd}")
            return [records.Item.measured(it.id, it.wall_s, it.cpu_s,
                                          self._outputs(safe, it.files, arrays_dir, f"item {it.id[:60]!r}")
                                          if it.error is None else {}, it.error) for it in measured.items]
        finally:
            os.close(fd)

    def _status(self, exit_, run_dir: Path, timeout: float) -> tuple[str, str | None]:
        """(status, reason) of a finished worker."""
        if exit_.timed_out:
            return "timeout", f"killed after {timeout:.1f} s (run timeout {self.campaign.run_timeout_s:g} s)"
        if self.interrupted:
            return "failed", self.interrupted
        if exit_.exit_code != 0:
            return "failed", self._shown(f"worker exited with {_describe_exit(exit_.exit_code)}: "
                                         f"{_last_line(run_dir / 'worker.log')}")
        if not (run_dir / "result.json").exists():
            return "failed", "worker exited 0 without writing its result"
        if exit_.leftovers:
            return "failed", "worker left processes running: " + ", ".join(exit_.leftovers)
        return "ok", None

    def preflight(self, scratch: Path, materialized: dict, inputs: dict, interpreters: dict, code: Path) -> list[str]:
        """`harness check`: each revision in a fresh worker started exactly as a run is (tree,
        build, env, interpreter, inputs), importing the entry point and every stage, calling
        setup() and one item untimed, checking the output protocol; it finds the items. One line
        per problem; notes (outputs that already differ) go to self.warnings."""
        problems, env = [], worker_env(self.campaign, code)
        seen: dict[str, records.CheckResult] = {}  # variant -> what its pre-flight worker said
        outputs: dict[str, dict] = {}  # variant -> its item's outputs as the runner read them ({name: Output})
        problems += self._preload_problems(materialized)
        for variant in ("base", "candidate"):
            label = f"check:{variant}"
            run_dir = scratch / "preflight" / variant
            (run_dir / "out").mkdir(parents=True)
            # `suite.number: auto` is calibrated on the base alone: the candidate then makes the same calls
            # of each benchmark, so each item's ratio compares equal work (a count of each side's own would
            # time the candidate's faster benchmark over more calls, and per-item walls would not compare).
            calibrate = variant == "base" and self.campaign.auto_number
            job = self._job(materialized[variant], inputs, -1, label, variant, run_dir / "out", run_dir, None,
                            "check", min(CALIBRATE_S, self.campaign.run_timeout_s / 2) if calibrate else None)
            self.progress.note(f"pre-flight: {variant} ({materialized[variant].sha[:12]}): setup() and one item")
            _argv, exit_ = self._launch(job, run_dir, label, "preflight", self.campaign.run_timeout_s, env,
                                        interpreters[variant].executable)
            status, reason = self._status(exit_, run_dir, self.campaign.run_timeout_s)
            if status == "ok" and exit_.marks is not None and exit_.marks.scheduling:
                status, reason = "failed", ("its worker changed the scheduling of another process of the campaign: "
                                            + "; ".join(exit_.marks.scheduling[:4]))
            if status != "ok":
                if exit_.exit_code and not exit_.timed_out and not self.interrupted:
                    reason = _last_line(run_dir / "worker.log")
                problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): {reason}")
            else:
                try:
                    seen[variant] = records.CheckResult.from_json(self._result(run_dir))
                    outputs[variant] = self._outputs(run_dir / "out", seen[variant].fields, None,
                                                     f"item {str(seen[variant].item)[:60]!r}")
                except OutputRefused as exc:  # the contract's rules on outputs: refused before the first timed run
                    problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): outputs: "
                                    f"{exc}")
                    seen.pop(variant, None)
                except (OSError, ValueError, C.JSONRefused) as exc:
                    problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): the "
                                    f"pre-flight worker's result: {exc}")
                    seen.pop(variant, None)
                except (KeyError, TypeError) as exc:  # not of CheckResult's shape
                    problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): the "
                                    f"pre-flight worker's result cannot be read ({exc.__class__.__name__}: {exc})")
                    seen.pop(variant, None)
                lied = variant in seen and interpreter_mismatch(interpreters[variant], seen[variant].python,
                                                                f"the {variant} pre-flight worker")
                if lied:
                    problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): python: "
                                    f"{lied}")
                unsealable = variant in seen and sealable.preflight(
                    seen[variant].item, outputs[variant],
                    len(C.subset(seen[variant].items, self.campaign.workload.items)), len(self.campaign.order))
                if unsealable:  # the contract's rules on outputs: refused before the first timed run
                    problems.append(f"{self.campaign.source}: {variant} ({materialized[variant].sha[:12]}): outputs: "
                                    f"{unsealable}")
            shutil.rmtree(run_dir, ignore_errors=True)  # its own folders: never a run's
            if not problems:
                problems += self._prepare(scratch, materialized[variant], inputs, variant, env, interpreters)
        if self.campaign.instructions is not None:
            problems += [f"{self.campaign.source}: {p}" for p in instructions.problems(sys.executable)]
        if len(seen) == 2:
            base, cand = seen["base"], seen["candidate"]
            if base.items != cand.items:
                problems.append(f"{self.campaign.source}: workload.entry: base and candidate give different items "
                                f"({len(base.items)} vs {len(cand.items)}; first difference "
                                f"{_first_difference(base.items, cand.items)}): both revisions must run the same "
                                "items")
            self.items_all = list(base.items)
            self.warnings += timing_notes(seen, self.campaign.threshold, self.campaign.instructions is not None,
                                          self.campaign.suite is not None, self.campaign.auto_number)
            ours, theirs = outputs["base"], outputs["candidate"]
            if base.item == cand.item and ours != theirs:
                differ = sorted(n for n in set(ours) | set(theirs) if ours.get(n) != theirs.get(n))
                self.warnings.append(
                    f"pre-flight: base and candidate outputs already differ on item {base.item} (field(s) "
                    f"{', '.join(differ[:3])}): parity will fail"
                    + ("" if self.campaign.max_ulp is not None else
                       "; if the change moves floats in their last bits by design, declare `parity: {max_ulp: N}`"))
        problems += self._uncalled_stages({v: s.stage_calls for v, s in seen.items()},
                                          {k: v for s in seen.values() for k, v in s.stage_homes.items()})
        if self.campaign.auto_number and len(seen) == 2 and not problems:
            problems += self._calibrate(base)  # the base's pre-flight (len(seen) == 2 above)
        elif isinstance(self.campaign.suite_number, dict) and len(seen) == 2:
            problems += self._recorded_numbers()
        return [self._shown(p) for p in problems]

    def _recorded_numbers(self) -> list[str]:
        """A re-run of a `suite.number: auto` bundle (`harness reproduce`) makes the calls its bundle
        recorded, never calibrated again: each benchmark it runs must have its count there."""
        numbers = self.campaign.suite_number
        items = C.subset(self.items_all, self.campaign.workload.items)
        missing = [item for item in items if item not in numbers]
        if missing:
            return [f"{self.campaign.source}: suite.number: the recorded calls name no count for {missing[0][:120]!r} "
                    f"({len(missing)} of the {len(items)} benchmarks this campaign runs): a re-run of a `number: auto` "
                    "bundle runs the benchmarks that bundle calibrated (leave --items as it was)"]
        self.campaign = self.campaign.with_suite_number({item: numbers[item] for item in items})
        return []

    def _calibrate(self, base: records.CheckResult) -> list[str]:
        """`suite.number: auto`: each benchmark's calls from the base pre-flight's calibration
        (plan.suite.calls_for at the median wall of one call), settled into the campaign before the
        first timed run, so campaign.json records them where a given number goes and every run,
        base and candidate, makes them. One problem line if the worker's figures cannot be read."""
        import statistics

        from harness.plan.suite import calls_for

        items = C.subset(self.items_all, self.campaign.workload.items)
        where = f"{self.campaign.source}: base: suite.number: auto"
        numbers, raised = {}, 0
        for item in items:
            walls = base.calibration.get(item)
            if not isinstance(walls, list) or not all(isinstance(w, (int, float)) and not isinstance(w, bool)
                                                      and math.isfinite(w) and w > 0 for w in walls):
                return [f"{where}: the pre-flight worker's calibration gives no readable walls for {item[:120]!r}"]
            raised += not walls
            numbers[item] = calls_for(statistics.median(walls) if walls else None, TIMED_ITEM_S)
        self.campaign = self.campaign.with_suite_number(numbers)
        low, high = min(numbers.values()), max(numbers.values())
        spread = f"{low} call{'s' * (low > 1)} each" if low == high else f"{low}-{high} calls each"
        self.progress.note(
            f"suite.number: auto: calibrated on the base's pre-flight: {len(numbers)} benchmark(s), {spread} (each "
            f"timed item >= {1e3 * TIMED_ITEM_S:.0f} ms at its median call, at most {C.MAX_AUTO_NUMBER} calls)"
            + (f"; {raised} raised when calibrated, 1 call each (their errors recorded in each run)"
               if raised else ""))
        return []

    def _shown(self, text: str) -> str:
        """A line about the workers' copy of the workload folder, naming the folder itself."""
        if self.workload_copy is None or self.campaign.workload.path is None:
            return text
        return text.replace(str(self.workload_copy), str(self.campaign.workload.path))

    def _packages(self, materialized: dict) -> dict[str, str]:
        """{top-level package: where} that either revision's tree offers the workers to import (the
        code under test: no zygote may preload one, not even an installed copy)."""
        found: dict[str, str] = {}
        for variant in ("candidate", "base"):
            found.update(revisions.packages(Path(materialized[variant].tree), self.campaign.workload.sys_path))
        return found

    def _preload_problems(self, materialized: dict) -> list[str]:
        """`launch.preload` names that are the code under test: refused before anything runs."""
        if self.campaign.launch != "zygote":
            return []
        packages = self._packages(materialized)
        return [f"{self.campaign.source}: launch.preload: {name} is the code under test (its package {top} is in the "
                f"revisions' trees: {packages[top]}): a zygote would serve both variants that copy, or an installed "
                "one, in place of each run's own tree; take it out of launch.preload" for name in self.campaign.preload
                for top in [name.split(".")[0]] if top in packages]

    def _prepare(self, scratch: Path, mat, inputs: dict, variant: str, env: dict, interpreters: dict) -> list[str]:
        """The launcher's own pre-flight of this variant (a zygote started now, its preload held to the
        trees' packages): one line per problem."""
        folder = scratch / "runs" / variant / "prepare"
        folder.mkdir(parents=True, exist_ok=True)
        job = self._job(mat, inputs, 0, f"{variant[0].upper()}1", variant, folder, folder, [], "run")
        (folder / "job.json").write_text(json.dumps(records.to_json(job)))
        python = interpreters[variant].executable
        launch = Launch([python, "-m", C.WORKER_MODULE, str(folder / "job.json")],
                        {**env, **own_folders(folder, self.campaign.env)}, folder, folder / "worker.log",
                        job.label, "worker", self.campaign.run_timeout_s, self._confinement(variant, folder))
        refused = self.launcher.prepare(variant, launch, frozenset(self._packages(self._materialized)))
        return [f"{self.campaign.source}: {variant}: {refused}"] if refused else []

    def _uncalled_stages(self, calls: dict[str, dict], homes: dict[str, str]) -> list[str]:
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
        moved = [f"'{name}' is defined as {homes[name]}: the path names a re-export, and the code calls the "
                 f"function where it is defined; use `{name}: {homes[name]}`" for name in never if name in homes]
        if moved:
            return [f"{self.campaign.source}: stages: {named} never called in either revision's pre-flight item: "
                    + "; ".join(moved)]
        return [f"{self.campaign.source}: stages: {named} never called in either revision's pre-flight item: "
                "the code calls it through a name bound before the wrapper was installed (an alias such as "
                "`f = module.func`, a registry, a default argument), or the path names a function this "
                "workload does not run (a method a subclass overrides, a fallback); point the path at what "
                "runs, or mark the stage `optional: true` if some items skip it"]

    def _one_run(self, staging, scratch, mat, inputs, env, index, label, variant, deadline, python, items,
                 mode, after=None, valgrind=None):
        """One run (mode "run") or instruction run (mode "instructions", a fresh worker under
        valgrind counting its item loop only, in the fixed environment that makes the count
        repeat): its record, its log kept as the contract says, and the trees checked after."""
        ready = self._ready_run(scratch, mat, inputs, env, index, label, variant, deadline, python, items, mode, valgrind)
        return self._run_record(staging, ready, self.launcher.run(ready.launch), after, valgrind)

    def _duet(self, staging, scratch, materialized, inputs, env, rows, deadline, interpreters, items) -> list:
        """`launch: duet`: a round's two runs (`rows`, two rows of the plan) at once; their records."""
        ready = [self._ready_run(scratch, materialized[variant], inputs, env, index, label, variant, deadline,
                                 interpreters[variant].executable, R.run_items(items, self.decided_at, label), "run")
                 for label, variant, index, _after in rows]
        first, second = (dataclasses.replace(r.launch, core=R.duet_core(self.campaign.cores, index))
                         for r, (_label, _variant, index, _after) in zip(ready, rows))
        exits = self.launcher.run_pair(first, second)
        return [self._run_record(staging, r, exit_) for r, exit_ in zip(ready, exits)]

    def _ready_run(self, scratch, mat, inputs, env, index, label, variant, deadline, python, items, mode,
                   valgrind=None) -> "Ready":
        """A run's folders and job written, its launch made (not started)."""
        run_dir = scratch / "runs" / variant / label
        counting = mode == "instructions"
        out_dir = run_dir / ("arrays" if counting else "out")  # the worker's own: the runner ingests from it
        out_dir.mkdir(parents=True)
        job = self._job(mat, inputs, index, label, variant, out_dir, run_dir, items, mode)
        timeout = min(self.campaign.run_timeout_s, max(0.0, deadline - self.clock.monotonic()))
        out_file = run_dir / "callgrind.out"
        argv, launch = self._launch_of(job, run_dir, label, "worker", timeout,
                                       {**env, **instructions.ENV} if counting else env, python,
                                       tuple(instructions.command(valgrind.path, out_file)) if counting else ())
        return Ready(job, run_dir, out_dir, out_file, timeout, argv, launch)

    def _run_record(self, staging, ready: "Ready", exit_: Exit, after=None, valgrind=None):
        """The record of a run that ended (`exit_`): see _one_run."""
        job, run_dir, out_dir, out_file, timeout, argv = ready.job, ready.run_dir, ready.out_dir, ready.out_file, \
            ready.timeout, ready.argv
        label, variant, counting = job.label, job.variant, job.mode == "instructions"
        log = _keep_log(staging, label, run_dir / "worker.log")
        status, reason = self._status(exit_, run_dir, timeout)
        if status == "ok":
            changed = self._trees_changed(label)
            if changed:
                status, reason = "failed", changed
        if counting:
            assert valgrind is not None  # an instruction run's campaign probed its valgrind
            count = counted = None
            if status == "ok":
                try:
                    count = instructions.read_count(out_file)
                    counted = records.CountResult.from_json(self._result(run_dir))
                except instructions.InstructionsError as exc:
                    status, reason = "failed", str(exc)
                except (OSError, ValueError, KeyError, TypeError, C.JSONRefused) as exc:
                    status, count = "failed", None
                    reason = f"the worker's result cannot be read ({exc.__class__.__name__}: {exc})"
            lied = status == "ok" and counted is not None and self._interpreter_lied(variant, counted.python, label)
            if lied:
                status, reason, counted, count = "failed", lied, None, None
            return records.InstructionRecord.of(
                job, status=status, reason=reason, exit_code=exit_.exit_code, pid=exit_.pid, process=exit_.process,
                log=log, counted=counted, count=count, after=after, version=valgrind.version, command=argv,
                env=dict(instructions.ENV))
        measured = None
        if status == "ok":
            try:
                measured = records.WorkerResult.from_json(self._result(run_dir))
            except (OSError, ValueError, KeyError, TypeError, AttributeError, C.JSONRefused) as exc:
                status, reason = "failed", f"the worker's result cannot be read ({exc.__class__.__name__}: {exc})"
        lied = status == "ok" and measured is not None and self._interpreter_lied(variant, measured.python, label)
        if lied:  # the record keeps no interpreter then: the reason names both
            status, reason, measured = "failed", lied, None
        taken: dict = {}
        if status == "ok":
            assert measured is not None  # ok: read above
            elsewhere = self._elsewhere(measured, variant)
            if elsewhere:
                status, reason, measured = "failed", elsewhere, None
        if status == "ok":
            assert measured is not None  # ok: read above
            try:
                taken["items"] = self._ingest(measured, out_dir, staging.arrays_dir)
                taken["wall_s"], taken["outside"], taken["memory"] = from_outside(exit_, measured, taken["items"], job)
            except OutputRefused as exc:
                status, reason, measured, taken = "failed", f"outputs: {str(exc)[:1000]}", None, {}
            except (ValueError, TypeError, AttributeError) as exc:
                status, reason, measured, taken = "failed", f"{str(exc)[:1000]}", None, {}

        def record(status, reason, measured, taken):
            return records.RunRecord.of(job, status=status, reason=reason, exit_code=exit_.exit_code, pid=exit_.pid,
                                        process=exit_.process, log=log, measured=measured, **taken,
                                        launch=exit_.launch or records.Launched(),
                                        bounds=records.interference_bounds(self.campaign.interference))
        made = record(status, reason, measured, taken)
        # Outputs the checkers would refuse fail the run here, not the sealed bundle.
        refused = made.ok and self.budget.refusal(made, staging.arrays_dir, staging.json_total())
        return record("failed", f"outputs: {refused}", None, {}) if refused else made

    def _elsewhere(self, measured: records.WorkerResult, variant: str) -> str | None:
        """Why a run fails whose worker says its workload or a stage came from a folder it could not
        read (its tree, or environment.json's sandbox.read): under the sandbox an honest run cannot
        say that; without one, the folder must be declared (`sandbox: {read: [...]}`) all the same."""
        roots = sorted({p for paths in self.readable.values() for p in paths})
        said = [("workload", measured.imported_from.workload)] + \
            [(f"stage {name}", where) for name, where in measured.imported_from.stages.items()]
        for what, where in said:
            if where is not None and not (isinstance(where, str) and R.origin_allowed(where, roots)):
                return (f"the worker says its {what} was imported from {str(where)[:300]!r}, neither its revision's "
                        "tree nor a folder its runs may read: code the campaign does not hold (a folder it needs goes "
                        "in `sandbox: {read: [...]}`)")
        return None

    def _interpreter_lied(self, variant: str, reported, label: str) -> str | None:
        """Why a run fails when its worker ran another interpreter than the probe described."""
        probed = getattr(self, "interpreters", None)
        return interpreter_mismatch(probed[variant], reported, f"{label}'s worker") if probed else None

    def _trees_changed(self, label: str) -> str | None:
        """Why the run fails when it changed a revision's tree (the code under test must be the
        same for every run), naming the first file; None when both trees are as they were."""
        for variant, before in self.trees.items():
            tree = Path(self._tree_of(variant))
            try:
                now = tree_listing(tree)
            except (OSError, ValueError) as exc:
                return f"the {variant} revision's tree changed during {label}: {exc}"
            if now != before:
                old, new = dict((rel, d) for d, rel in before), dict((rel, d) for d, rel in now)
                first = sorted(set(old) ^ set(new) | {r for r in old if r in new and old[r] != new[r]})[0]
                return (f"the {variant} revision's tree changed during {label} ({first}): the workload wrote into the "
                        "code under test, so later runs would measure other code; write to a temporary folder")
        return None

    def _tree_of(self, variant: str) -> str:
        return self._trees[variant]


def from_outside(exit_: Exit, measured: records.WorkerResult, items: list,
                 job: records.Job) -> tuple[float, records.Outside, records.Memory]:
    """(the loop's wall by the runner's clock, the outside section, the memory readings) of an ok
    run from its marks; ValueError when the worker never marked its loop as the protocol says."""
    m = exit_.marks
    if m is None or not m.complete:
        said = f" ({'; '.join(m.violations)})" if m is not None and m.violations else ""
        raise ValueError(f"the worker never marked its timed loop on its channel{said}")
    assert m.start is not None and m.end is not None and m.worker is not None  # complete
    if not all(math.isfinite(x) for x in m.worker):
        raise ValueError("the worker's end mark holds readings that are not finite numbers")
    wall = m.end - m.start
    ends = m.reaped if m.reaped is not None else m.end
    said = m.worker[1] - m.worker[0]
    violations = list(m.violations)
    if abs(measured.wall_s - said) > C.STAMP_TOL_S:  # its result and its own end mark disagree
        violations.append(f"its result claims a loop of {measured.wall_s:.9g} s, its end mark {said:.9g} s")
    loop_cpu = m.cpu_end - m.cpu_start if m.cpu_start is not None and m.cpu_end is not None else None
    after_cpu = max(0.0, m.life_cpu - m.cpu_end) if m.life_cpu is not None and m.cpu_end is not None else None
    section = records.Outside.judged(
        wall_s=wall, items=items, slots=job.slots, process_cpu_s=measured.machine.process_cpu_s,
        stages=measured.stages, before_s=m.start - m.launched, after_s=max(0.0, ends - m.end),
        worker_wall_s=m.worker[1] - m.worker[0], latency_s=[m.worker[0] - m.start, m.end - m.worker[1]],
        loop_cpu_s=loop_cpu, before_cpu_s=m.cpu_start if after_cpu is not None else None,
        after_cpu_s=after_cpu if m.cpu_start is not None else None,
        tripwire=[str(t)[:256] for t in measured.tripwire[:32]], scheduling=[s[:256] for s in m.scheduling[:64]],
        violations=[v[:256] for v in violations[:8]])
    memory = records.Memory()
    if m.rss_start is not None and m.hwm_end is not None:
        memory = records.Memory(process_peak_bytes=max(m.hwm_end, m.hwm_before or 0), loop_start_bytes=m.rss_start,
                                loop_peak_bytes=m.hwm_end, reset=m.reset)
    return wall, section, memory


def _launcher(campaign: Campaign, tick):
    """The launcher `launch:` names: fresh interpreters, or runs forked by per-variant zygotes."""
    if campaign.launch == "zygote":
        from harness.engine.zygote_launcher import ZygoteLauncher

        return ZygoteLauncher(tick=tick, preload=campaign.preload)
    if campaign.launch == C.DUET:
        from harness.engine.duet_launcher import DuetLauncher

        return DuetLauncher(tick=tick)
    return LocalLauncher(tick=tick)


def _same_revision(campaign: Campaign, repo: Path, sha: str) -> str:
    worktree = [v for v in ("base", "candidate") if campaign.revision(v).rev == revisions.WORKTREE]
    if not worktree:
        return (f"{campaign.source}: base.rev and candidate.rev both resolve to {sha[:12]}: nothing to compare; "
                f"to run A against A, `harness calibrate {campaign.source}` (base against base, and the noise floor "
                "it gives), or give the candidate an empty commit (`git commit --allow-empty -m 'A vs A'`) and name "
                "that commit as candidate.rev")
    untracked = revisions.untracked_files(repo)
    extra = (f"; {len(untracked)} untracked file(s) (e.g. {untracked[0]}) are left out: `git add` them, "
             "a WORKTREE revision takes tracked files only") if untracked else ""
    return (f"{campaign.source}: {worktree[0]}.rev: WORKTREE: the working tree has no uncommitted changes to "
            f"tracked files (it is HEAD, {sha[:12]}, like the other revision): nothing to compare{extra}")


def _first_difference(a: list, b: list) -> str:
    for x, y in zip(a, b):
        if x != y:
            return f"{x!r} vs {y!r}"
    return f"{len(a)} vs {len(b)} items"


def _keep_log(staging, label: str, path: Path) -> records.Log:
    """The worker's output into the bundle as the contract keeps it: all of it, or its head, a
    line saying how much was left out, and its tail (contract.cut_log), read without loading
    what is cut."""
    try:
        written = path.stat().st_size
    except OSError:
        written = 0
    limit = C.LOG_HEAD_BYTES + C.LOG_TAIL_BYTES
    with (open(path, "rb") if written else contextlib.nullcontext(None)) as fh:
        if fh is None:
            data = b""
        elif written <= limit:
            data = fh.read(limit + 1)[:written]
        else:
            head = fh.read(C.LOG_HEAD_BYTES)
            fh.seek(written - C.LOG_TAIL_BYTES)
            data = head + (C.LOG_CUT_MARK % (written - limit)) + fh.read(C.LOG_TAIL_BYTES)
    rel = C.log_path(label)
    staging.write_bytes(rel, data)
    return records.Log(path=rel, bytes=len(data), sha256=sha256_bytes(data), written=written,
                       truncated=written > limit)


def _drop_unreferenced_arrays(arrays_dir: Path, runs: list) -> None:
    """A run that failed after storing outputs has no items in its record: its arrays are
    evidence of nothing, and a bundle holds only arrays its records name."""
    referenced = {C.array_path(f.digest).rsplit("/", 1)[1] for r in runs for it in r.items for f in it.fields.values()}
    if arrays_dir.is_dir():
        for path in arrays_dir.iterdir():
            if path.name not in referenced:
                path.unlink()


def outside_repository(source: Path) -> str:
    """The one line `run` and `check` give for a campaign file outside any git repository."""
    return (f"{source} lies outside any git repository: its bundle records the absolute campaign_path, so it "
            "verifies alone but can never be anchored (`harness verify --repo`) nor reproduced (`harness "
            "reproduce`); keep the campaign file in a git repository (the target's) for both")


def _repo_root(path: Path) -> Path | None:
    for parent in [path.parent, *path.parents]:
        if (parent / ".git").exists():
            return parent
    return None



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
