"""Bundles for the checkers' tests, made on the fake launcher in about a second each: a full
bundle (stages, a golden file, a noise floor, build commands), one with instruction runs (the
callgrind output written by the fake worker, valgrind's probe stubbed), and a reproduction of
either (harness.judge.reproduce.reproduce on the fake launcher); plus the forger's edit and
both checkers' verdicts in one call."""
from __future__ import annotations

import hashlib
import json
import re
import sys
from pathlib import Path

from fakes import TREE, Model, ModelLauncher, run_fake, source_digest
from harness import contract as C, rehash, records
from harness.engine.launch import FakeRun
from harness.selftest import tamper

STAGES = {"core": "lib.core:VERSION"}


class InstructionLauncher(ModelLauncher):
    """The model worker, and for an instruction run a callgrind output file holding its count
    (counts: {label: count}; else base 3e8 and candidate 1.5e8 per counted item set)."""

    def __init__(self, model: Model, counts: dict | None = None, **kw):
        super().__init__(model, **kw)
        self.counts = counts or {}
        self.out_file = None

    def run(self, launch):
        found = [a.split("=", 1)[1] for a in launch.argv if a.startswith("--callgrind-out-file=")]
        self.out_file = Path(found[0]) if found else None
        return super().run(launch)

    def _play(self, job: records.Job) -> FakeRun:
        if job.mode != "instructions":
            return super()._play(job)
        from harness.plan import workload

        digest = workload.folder_digest(job.workload.path, tuple(job.workload.exclude))
        count = self.counts.get(job.label, 300_000_000 if job.variant == "base" else 150_000_000)
        self.out_file.write_text(f"events: Ir\ntotals: {count}\n")
        return FakeRun(result=records.to_json(records.CountResult(
            C.subset(job.items, job.instructions_items), 0, source_digest(), digest,
            records.Interpreter.current())), wall_s=4.0)


def no_valgrind_probe(monkeypatch) -> None:
    """The runner's valgrind look-ups, stubbed: the fake launcher runs no valgrind."""
    from harness.engine import instructions

    monkeypatch.setattr(instructions, "problems", lambda python: [])
    monkeypatch.setattr(instructions, "valgrind", lambda: "/usr/bin/valgrind")
    monkeypatch.setattr(instructions, "version", lambda path: "valgrind-3.22.0")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class ErringModel(Model):
    """The model worker whose listed items raise (an error, no fields) in every variant."""

    def __init__(self, *args, raising=("item-3",), **kw):
        super().__init__(*args, **kw)
        self.raising = set(raising)

    def __call__(self, job: records.Job) -> FakeRun:
        run = super().__call__(job)
        for item in (run.result or {}).get("items", []) if job.mode == "run" else []:
            if item["id"] in self.raising:
                item.update(files={}, error={"type": "ValueError", "message": f"{item['id']}: no such series"})
        return run


def full_bundle(where: Path, floor_value: float = 0.01, **fields) -> Path:
    """A fake bundle holding every part a campaign can give it: stage runs (one stage optional,
    one counted per variant), a golden file and a noise floor, a build command, an input and a
    fence, workload params and sys_path, campaign env, an override, an item that raises."""
    from harness.bundle import read

    model = dict(items=5, item_s=0.1)  # item walls that differ by more than the checkers' tolerances
    workload = {"entry": "model_workload:setup", "path": "workloads", "sys_path": ["lib"],
                "params": {"n": 3, "nested": {"a": [1, 2.5], "b": None}}}
    first, _ = run_fake(where / "first", ErringModel(**model), rounds=3, workload=workload)
    b = read.load(first.out)
    golden = where / "golden.json"
    golden.write_text(json.dumps(records.golden(b.runs[0], campaign="model", machine=b.machine,
                                                bundle_digest=b.digest), indent=2))
    floor = where / "floor.json"
    floor.write_text(json.dumps(records.to_json(records.noise_floor(
        campaign="model", bundle_digest=b.digest, machine=b.machine, started_at=b.runner.started_at, rounds=5,
        ratio=1.0, ci95=[0.99, 1.01], floor=floor_value)), indent=2))
    corpus = where / "corpus.txt"
    corpus.write_text("an input the workload reads\n")
    body = dict(stages={"core": "lib.core:VERSION", "counted": {"path": "lib.core:VERSION", "calls": "per_variant"},
                        "maybe": {"path": "lib.core:NEW", "optional": True}},
                stage_rounds=2, golden={"path": str(golden), "sha256": sha256(golden)},
                noise_floor={"path": str(floor), "sha256": sha256(floor)}, build=[["true"]],
                inputs={"CORPUS": {"path": str(corpus), "sha256": sha256(corpus)}}, env={"MODEL_FLAG": "1"},
                base={"rev": "HEAD~1", "fence": {"lib/core.py": hashlib.sha256(TREE["lib/core.py"].encode())
                                                 .hexdigest()}}, workload=workload)
    body.update(fields)
    outcome, _ = run_fake(where / "full", ErringModel(**model), rounds=3, overrides={"params": {"n": 3}}, **body)
    assert outcome.comparison.status == "complete", outcome.comparison.reason
    return outcome.out


def ulp_bundle(where: Path) -> Path:
    """A fake bundle whose candidate outputs are one ulp off, within a declared max_ulp."""
    outcome, _ = run_fake(where, Model(items=4, item_s=0.1, differ=True), rounds=3, parity={"max_ulp": 4})
    assert outcome.comparison.parity.agree, outcome.comparison.parity
    return outcome.out


def failed_bundle(where: Path) -> Path:
    """A fake bundle whose fourth run failed (a record of nulls, the campaign stopped)."""
    outcome, _ = run_fake(where, Model(items=4, item_s=0.1, fail={"B2"}), rounds=3)
    assert outcome.comparison.status == "failed"
    return outcome.out


def family_bundle(where: Path) -> Path:
    """A sequential suite campaign (a family: every benchmark its own verdict, the decided ones
    leaving the later rounds), two of its six benchmarks faster."""
    outcome, _ = run_fake(where, Model(items=6, item_s=0.05, ratio=1.0, noise=0.004, seed=3,
                                       item_ratio={"item-0": 0.40, "item-1": 0.70}),
                          rounds="auto", budget_s=60, min_rounds=4,
                          workload={"entry": C.SUITE_ENTRIES["asv"], "path": "workloads"})
    assert outcome.comparison.stats.family is not None, outcome.comparison.stats.verdict_reason
    return outcome.out


def gate_bundle(where: Path) -> Path:
    """A sequential campaign asking the CI gate's one-sided question (not slower than 5%), answered
    after more rounds than its first look (12 of a cap of 39): a budget cut to a seventh gives a cap
    of 6, below the rounds it ran, which the checkers refuse; a campaign that decides at its first
    look holds its budget to nothing but a cap at or above that look. The shuffle's seed is pinned:
    the rounds a campaign needs follow from its order (seed 5 decides at its first look, 4 rounds)."""
    outcome, _ = run_fake(where, Model(items=4, item_s=0.1, ratio=1.0, noise=0.03, seed=5), rounds="auto",
                          budget_s=60, min_rounds=4, seed=2, verdict={"question": "not_slower", "margin": 0.05})
    order = json.loads((outcome.out / "data/campaign.json").read_text())["order"]
    assert len(order) == 2 * 12, order
    assert outcome.comparison.stats.verdict == "not slower", outcome.comparison.stats.verdict_reason
    return outcome.out


def duet_bundle(where: Path) -> Path:
    """A campaign of duets (`launch: duet`: each round's two runs at once, each on a core of its
    own), with stage rounds, that claims its 0.5x."""
    outcome, _ = run_fake(where, Model(items=4, item_s=0.1), rounds=5, launch={"mode": "duet", "cores": [0, 1]},
                          stages=STAGES, stage_rounds=2, seed=1)  # seed 1: round 1 is AB
    assert outcome.comparison.stats.verdict == "improved", outcome.comparison.stats.verdict_reason
    return outcome.out


def precise_bundle(where: Path) -> Path:
    """A sequential campaign that asks for `precision: 0.05`: its looks decide improved from its
    first (round 4) but end it only at round 10, the first whose interval lies within +-5% of its
    ratio (seed 7 and the model's seed 3 pin the rounds)."""
    outcome, _ = run_fake(where, Model(items=4, item_s=0.1, noise=0.05, seed=3), rounds="auto", budget_s=20,
                          min_rounds=4, seed=7, precision=0.05)
    seq = outcome.comparison.stats.sequential
    assert seq is not None and seq.stopped == "decided" and seq.looks[0].verdict == "improved", seq
    assert [look.precise for look in seq.looks] == [False] * (len(seq.looks) - 1) + [True], seq.looks
    return outcome.out


def instruction_bundle(where: Path, monkeypatch, counts: dict | None = None, **fields) -> Path:
    no_valgrind_probe(monkeypatch)
    body = dict(metrics=["wall", "instructions"], instructions={"items": 2, "runs": 2})
    body.update(fields)
    outcome, _ = run_fake(where, launcher=InstructionLauncher(Model(items=4, item_s=0.1), counts), rounds=4, **body)
    assert outcome.comparison.status == "complete", outcome.comparison.reason
    return outcome.out


def reproduction(original: Path, out: Path, launcher=None) -> Path:
    """A reproduction of a fake bundle, made the way `harness reproduce` makes one."""
    from harness.bundle import read
    from harness.judge import reproduce
    from harness.plan import spec

    campaign_file = original.parent / "model.yaml"
    bundle = read.load(original)
    campaign = spec.load(campaign_file, dict(bundle.campaign.overrides))
    result = reproduce.reproduce(bundle, campaign, out, launcher=launcher or ModelLauncher(Model(items=4, item_s=0.1, seed=1)))
    return result.out


# --- the forger and the checkers ----------------------------------------------------------------
def forge(bundle: Path, edits: dict, rederive: bool = True, original: Path | None = None) -> None:
    """{rel: edit(obj)} applied to the bundle's JSON (an edit may return a new object), then
    comparison.json and Abba-Status re-derived with the harness's code, both manifests re-hashed."""
    for rel, edit in edits.items():
        obj = json.loads((bundle / rel).read_text())
        new = edit(obj)
        (bundle / rel).write_text(json.dumps(obj if new is None else new, indent=2) + "\n")
    if rederive:
        tamper.rederive(bundle, original)
    tamper.reseal(bundle)


def bag_info(bundle: Path, change) -> None:
    info = bundle / C.BAG_INFO
    info.write_text(change(info.read_text()))
    tamper.reseal_tags(bundle)


def problems(bundle: Path, **verify_kw) -> tuple[list, list]:
    """(rehash.py's problem lines or its one unusable line, harness verify's)."""
    from harness.judge.verify import verify

    try:
        r = rehash.rehash(str(bundle)).problems
    except rehash.Unusable as exc:
        r = [f"unusable: {exc}"]
    report = verify(bundle, **verify_kw)
    return r, report.problems or ([f"unusable: {report.unusable}"] if report.unusable else [])


def misses(results) -> list:
    """The mutations of a walk (harness/selftest) that a checker its rule names let through."""
    return [(m.name, m.expect, m.line) for m in results if not m.caught]


def refused(lines: list, *needles: str) -> bool:
    return bool(lines) and any(all(n in line for n in needles) for line in lines)


def set_bag(key: str, value: str):
    return lambda text: re.sub(rf"(?m)^{re.escape(key)}: .*$", f"{key}: {value}", text)


sys.modules.setdefault("checks_support", sys.modules[__name__])
