"""The bundle format, in one place: schema versions, the bundle's path layout, and one
constructor per record. Everything that writes evidence (runner, worker, comparison) and
everything that reads it (verify, report, golden, compare, tamper) goes through here.

The reviewer's script `harness/rehash.py` cannot import the harness (it must run with the
standard library alone), so it spells the same layout and schemas itself;
`tests/test_checker_safety.py` proves the two spellings agree.
"""
from __future__ import annotations

import math
import re
from typing import Any

# --- schema versions ---------------------------------------------------------------------
SCHEMAS = {
    "job": "abba-harness/job/v2",
    "run": "abba-harness/run/v3",
    "campaign": "abba-harness/campaign/v5",
    "comparison": "abba-harness/comparison/v4",
    "environment": "abba-harness/environment/v2",
    "revisions": "abba-harness/revisions/v2",
    "inputs": "abba-harness/inputs/v2",
    "cleanup": "abba-harness/cleanup/v2",
    "runner": "abba-harness/runner/v2",
    "builds": "abba-harness/builds/v1",
    "golden": "abba-harness/golden/v1",
    "reproduction": "abba-harness/reproduction/v1",
    "noise_floor": "abba-harness/noise-floor/v1",
    "instructions": "abba-harness/instructions/v2",
    "workload": "abba-harness/workload/v1",
}

# Bundles written under these older schemas still verify (the committed evidence, until it
# is re-run): campaign/v2 has no rounds or seed, comparison/v2 the item bootstrap, and their
# run/v2 records no workload digest. Bundles of campaign/v3 and v4 are refused: re-run them.
LEGACY_SCHEMAS = {"campaign": "abba-harness/campaign/v2", "comparison": "abba-harness/comparison/v2",
                  "run": "abba-harness/run/v2"}

# --- the bundle's path layout (bag-relative, '/'-separated) ------------------------------
BAGIT = "bagit.txt"
BAG_INFO = "bag-info.txt"
MANIFEST = "manifest-sha256.txt"
TAGMANIFEST = "tagmanifest-sha256.txt"
TAG_FILES = (BAGIT, BAG_INFO, MANIFEST)

CAMPAIGN_YAML = "data/campaign.yaml"
CAMPAIGN_JSON = "data/campaign.json"
ENVIRONMENT = "data/environment.json"
COMPARISON = "data/comparison.json"
FIGURE = "data/figure.png"
GOLDEN = "data/golden.json"
REVISIONS = "data/receipts/revisions.json"
INPUTS = "data/receipts/inputs.json"
CLEANUP = "data/receipts/cleanup.json"
RUNNER = "data/receipts/runner.json"
BUILDS = "data/receipts/builds.json"  # only when the campaign has build commands
REPRODUCTION = "data/receipts/reproduction.json"  # only in a bundle made by `harness reproduce`
NOISE_FLOOR = "data/noise_floor.json"  # the calibration the campaign pins, byte for byte, when it pins one
WORKLOAD = "data/receipts/workload.json"  # the workload folder's files: path, size, SHA-256, their digest
WORKLOAD_DIR = "data/workload/"  # the workload folder's files, byte for byte
ARRAY_SUFFIX = ".npy.gz"
# Every bundle holds these; golden.json only when the campaign names a golden file.
REQUIRED = (CAMPAIGN_YAML, CAMPAIGN_JSON, ENVIRONMENT, COMPARISON, FIGURE, REVISIONS, INPUTS, CLEANUP,
            RUNNER, WORKLOAD)
# A1, B1: timed runs (no stage wrappers when the order has stage runs); As1, Bs1: stage runs
# (order letters a, b), instrumented, kept out of the headline wall.
LABEL_RE = re.compile(r"^[AB]s?[1-9][0-9]{0,2}\Z")
ORDER_RE = re.compile(r"^[ABab]+\Z")
INSTRUCTION_LABEL_RE = re.compile(r"^I[AB][1-9][0-9]{0,2}\Z")  # IA1: the first base instruction run
PREFLIGHT_RUNS = ("check:base", "check:candidate")  # the pre-flight workers' rows in the ledger
VARIANTS = {"A": "base", "B": "candidate"}
RUN_STATUSES = ("ok", "failed", "timeout")


def run_path(label: str) -> str:
    return f"data/runs/{label}.json"


def log_path(label: str) -> str:
    return f"data/logs/{label}.log"


def instructions_path(label: str) -> str:
    return f"data/instructions/{label}.json"


def array_path(digest: str) -> str:
    return f"data/arrays/{digest}{ARRAY_SUFFIX}"


def coin(domain: str, seed: int, index: int) -> bool:
    """A fresh, recorded coin: the low bit of SHA-256("<domain>:<seed>:<index>") is 0."""
    import hashlib

    return hashlib.sha256(f"{domain}:{seed}:{index}".encode()).digest()[0] & 1 == 0


def round_order(rounds: int, seed: int | None, stage_rounds: int = 0) -> str:
    """The order of a campaign made of rounds: each round one A and one B, A first when
    coin("abba-rounds-v1", seed, round) (always, for the plan's shape before a seed is drawn). Stage rounds (one a and one b, a first when
    coin("abba-stage-rounds-v1", seed, j)) go after timed round ceil((j + 1) x rounds /
    (stage_rounds + 1)), spread through the campaign. Spelled so that rehash.py re-derives it."""
    stage_after = {-(-(j + 1) * rounds // (stage_rounds + 1)): j for j in range(stage_rounds)}
    out = []
    for i in range(rounds):
        out.append("AB" if seed is None or coin("abba-rounds-v1", seed, i) else "BA")
        if i + 1 in stage_after:
            out.append("ab" if seed is None or coin("abba-stage-rounds-v1", seed, stage_after[i + 1]) else "ba")
    return "".join(out)


def auto_rounds(budget_s: float, first_round_s: float, min_rounds: int, max_rounds: int) -> int:
    """`rounds: auto`: how many rounds fit budget_s when the first round's two runs took
    first_round_s (their process walls, start-up included), at least min_rounds, at most
    max_rounds. Time alone decides, never a ratio. rehash.py spells it too."""
    if not first_round_s > 0:
        return max_rounds
    return max(min_rounds, min(max_rounds, math.ceil(budget_s / first_round_s)))


def labels(order: str) -> list[tuple[str, str]]:
    """(label, variant) per run in execution order: ABBA -> A1 B1 B2 A2; ABab -> A1 B1 As1 Bs1."""
    counts: dict[str, int] = {}
    out = []
    for letter in order:
        counts[letter] = counts.get(letter, 0) + 1
        upper = letter.upper()
        out.append((f"{upper}{'s' if letter.islower() else ''}{counts[letter]}", VARIANTS[upper]))
    return out


def instrumented(label: str, order: str) -> bool:
    """Whether a run has the stage wrappers: a stage run, or any run of an order without
    stage runs (an explicit A/B string: the stages wrap the timed runs themselves)."""
    return label[1:2] == "s" or order == order.upper()


def timed(label: str) -> bool:
    """Whether a run's wall is in the headline (not a stage run)."""
    return label[1:2] != "s"


def instruction_order(runs: int) -> str:
    """`runs` instruction runs per variant, alternating which goes first: ABBA for 2."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(runs))


def schedule(order: str, instr_order: str = "") -> list[tuple[str, str, int, str | None]]:
    """Every run in execution order as (label, variant, index, after): the wall runs of
    `order` (after None) with the instruction runs of `instr_order` spread evenly between
    them, the j-th of m after wall run floor((j + 1) n / (m + 1)) - 1 (None: before the
    first; never after the last). index counts within its own kind. rehash.py spells it too."""
    walls, instr = labels(order), labels(instr_order)
    out = []
    for j, (label, variant) in enumerate(instr):
        at = (j + 1) * len(walls) // (len(instr) + 1) - 1
        out.append((at, 1, j, "I" + label, variant, walls[at][0] if at >= 0 else None))
    out += [(i, 0, i, label, variant, None) for i, (label, variant) in enumerate(walls)]
    # an instruction run placed after wall run `at` sorts between it and the next one
    return [(label, variant, index, after) for _, _, index, label, variant, after in
            sorted(out, key=lambda row: (row[0] + row[1] * 0.5, row[2]))]


# --- constructors --------------------------------------------------------------------------
def job(*, label: str, variant: str, index: int, sha: str, tree: str, parent_pid: int, workload: dict,
        inputs: dict, slots: int, stages: dict, optional_stages: list[str], arrays_dir: str,
        result_path: str, mode: str = "run", instructions_items: int | None = None) -> dict:
    """What the runner hands one worker (not part of the bundle). mode: "run" (the timed
    item loop), "check" (the pre-flight: setup and one item, untimed) or "instructions"
    (the item loop under valgrind, on `instructions_items` of the run's items)."""
    return {"schema": SCHEMAS["job"], "mode": mode, "label": label, "variant": variant, "index": index, "sha": sha,
            "tree": tree, "parent_pid": parent_pid, "workload": workload, "inputs": inputs, "slots": slots,
            "stages": stages, "optional_stages": optional_stages, "arrays_dir": arrays_dir,
            "result_path": result_path, "instructions_items": instructions_items}


def run_record(job: dict, *, status: str, reason: str | None, exit_code: int | None, process: dict,
               measured: dict | None) -> dict:
    """data/runs/<label>.json, for every run that started, ok or not.

    job: what the worker was given; process: what the runner saw of the worker process
    (pid, started_at, ended_at as epoch seconds, wall_s); measured: what the worker
    measured and wrote (None when it failed before writing it, or when its result cannot be
    trusted). A run is 'ok' only with a measurement, exit code 0 and no reason."""
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r}")
    if status == "ok" and (measured is None or exit_code != 0 or reason is not None):
        raise ValueError("an ok run needs the worker's measurements, exit code 0 and no reason")
    m = measured if status == "ok" else {}
    return {
        "schema": SCHEMAS["run"],
        "label": job["label"],
        "variant": job["variant"],
        "index": job["index"],
        "sha": job["sha"],
        "status": status,
        "reason": reason,
        "exit_code": exit_code,
        "timer": "perf_counter",
        "wall_s": m.get("wall_s"),
        "slots": job["slots"],
        "items": m.get("items", []),
        "stages": m.get("stages", {}),
        "stages_installed": m.get("stages_installed", {}),
        "imported_from": m.get("imported_from", {}),
        "metrics": m.get("metrics", {}),
        "machine": m.get("machine", {}),
        "harness_source_sha256": m.get("harness_source_sha256"),
        "workload_sha256": m.get("workload_sha256"),
        "worker_started_at": m.get("started_at"),
        "worker_ended_at": m.get("ended_at"),
        "pid": process["pid"],
        "process": {"started_at": process["started_at"], "ended_at": process["ended_at"],
                    "wall_s": process["wall_s"]},
        "log": log_path(job["label"]),
    }


def instruction_record(job: dict, *, status: str, reason: str | None, exit_code: int | None, process: dict,
                       measured: dict | None, count: int | None, after: str | None, valgrind: dict) -> dict:
    """data/instructions/<label>.json, for every instruction run that started, ok or not.

    count: Ir inside the measured region (callgrind's totals); valgrind: {version,
    command} of the run (the command line it was started with, python command included);
    measured: what the worker wrote (items counted, how many raised). after: the wall run
    it followed in the schedule (None: the first thing run)."""
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r}")
    if status == "ok" and (measured is None or count is None or exit_code != 0 or reason is not None):
        raise ValueError("an ok instruction run needs its count, the worker's result, exit code 0 and no reason")
    m = measured if status == "ok" else {}
    return {
        "schema": SCHEMAS["instructions"],
        "label": job["label"],
        "variant": job["variant"],
        "index": job["index"],
        "after": after,
        "sha": job["sha"],
        "status": status,
        "reason": reason,
        "exit_code": exit_code,
        "instructions": count if status == "ok" else None,
        "items": m.get("items", []),
        "errors": m.get("errors", 0),
        "tool": "callgrind",
        "valgrind": valgrind["version"],
        "command": valgrind["command"],
        "env": valgrind["env"],
        "harness_source_sha256": m.get("harness_source_sha256"),
        "workload_sha256": m.get("workload_sha256"),
        "pid": process["pid"],
        "process": {"started_at": process["started_at"], "ended_at": process["ended_at"],
                    "wall_s": process["wall_s"]},
        "log": log_path(job["label"]),
    }


def item(*, item_id: str, wall_s: float, cpu_s: float, fields: dict, error: dict | None) -> dict:
    return {"id": item_id, "wall_s": wall_s, "cpu_s": cpu_s, "fields": fields if error is None else {},
            "error": error}


def campaign(campaign, revisions: dict[str, tuple[str, str]], rel) -> dict:
    """data/campaign.json: the campaign as run. revisions: variant -> (rev, sha); rel turns
    a path into how the bundle records it (relative to the repository when inside it)."""
    return {
        "schema": SCHEMAS["campaign"],
        "name": campaign.name,
        "description": campaign.description,
        "notes": campaign.notes,
        "campaign_path": rel(campaign.source),
        "order": campaign.order,
        "rounds": campaign.rounds,  # null for an explicit order
        "stage_rounds": campaign.stage_rounds,  # rounds of stage runs among them (null: explicit order)
        "seed": campaign.seed,  # the shuffle seed of the rounds (null for an explicit order)
        "labels": [label for label, _ in labels(campaign.order)],
        "slots": campaign.slots,
        "timeouts": {"run_s": campaign.run_timeout_s, "campaign_s": campaign.campaign_timeout_s},
        "workload": {"entry": campaign.workload.entry, "path": rel(campaign.workload.path),
                     "params": campaign.workload.params, "sys_path": list(campaign.workload.sys_path),
                     "items": campaign.workload.items},
        "build": [list(cmd) for cmd in campaign.build],
        "overrides": campaign.overrides,
        "revisions": {v: {"rev": rev, "sha": sha} for v, (rev, sha) in revisions.items()},
        "stages": campaign.stages,
        "optional_stages": sorted(campaign.optional_stages),
        "stage_calls": campaign.stage_calls,
        "env": campaign.env,
        "golden": rel(campaign.golden),
        "golden_sha256": campaign.golden_sha256,
        "noise_floor": rel(campaign.noise_floor),
        "noise_floor_sha256": campaign.noise_floor_sha256,
        "threshold": campaign.threshold,
        # Only in campaigns of `rounds: auto`: the count follows budget_s (records.auto_rounds).
        **({"budget_s": campaign.budget_s, "min_rounds": campaign.min_rounds} if campaign.budget_s is not None
           else {}),
        # Only in campaigns that ask for instruction runs: older bundles keep their keys.
        **({"metrics": list(campaign.metrics),
            "instructions": {"items": campaign.instructions.items, "runs": campaign.instructions.runs,
                             "order": instruction_order(campaign.instructions.runs)}}
           if campaign.instructions is not None else {}),
    }


# Fields of campaign.json that come from the machine or the repository, not from the YAML.
CAMPAIGN_RESOLVED = ("campaign_path", "workload.path", "golden", "noise_floor", "revisions.base.sha",
                     "revisions.candidate.sha")


def builds_receipt(builds: dict[str, dict]) -> dict:
    """data/receipts/builds.json, when the campaign has build commands: per variant, the
    commands, their exit codes and output, and whether the build came from the cache."""
    return {"schema": SCHEMAS["builds"], **builds}


def runner_receipt(*, started_at: float, ended_at: float, reason: str | None, runs_planned: int,
                   runs_started: int) -> dict:
    return {"schema": SCHEMAS["runner"], "started_at": started_at, "ended_at": ended_at, "reason": reason,
            "runs_planned": runs_planned, "runs_started": runs_started}


def cleanup_receipt(*, method: str, processes: list[dict]) -> dict:
    return {"schema": SCHEMAS["cleanup"], "method": method, "processes": processes, "count": len(processes),
            "all_absent": all(p["absent"] for p in processes)}


def revisions_receipt(receipts: dict[str, dict]) -> dict:
    return {"schema": SCHEMAS["revisions"], **receipts}


def inputs_receipt(receipts: dict[str, dict]) -> dict:
    return {"schema": SCHEMAS["inputs"], "inputs": receipts}


def workload_receipt(*, path: str | None, files: list[dict], digest: str | None) -> dict:
    """data/receipts/workload.json: the workload folder (as campaign.json records its path),
    each stored file's path under data/workload/, size and SHA-256, and the digest of that
    list, which every ok run's workload_sha256 must equal (harness/workload.py)."""
    return {"schema": SCHEMAS["workload"], "path": path, "files": files, "digest": digest}


def workload_file(rel: str) -> str:
    return WORKLOAD_DIR + rel


def environment(fields: dict[str, Any]) -> dict:
    return {"schema": SCHEMAS["environment"], **fields}


def golden(run: dict, *, campaign: str, machine: dict, bundle_digest: str) -> dict:
    """A campaign's golden file from one run record: the digests every later run must give.
    machine: the class of machine the digests hold for (float outputs are not portable
    across CPUs or BLAS builds)."""
    return {"schema": SCHEMAS["golden"], "campaign": campaign, "source_run": run["label"], "sha": run["sha"],
            "machine": machine, "bundle_digest": bundle_digest,
            "items": {it["id"]: {"fields": {n: f["digest"] for n, f in it["fields"].items()}, "error": it["error"]}
                      for it in run["items"]}}


def noise_floor(*, campaign: str, bundle_digest: str, machine: dict, started_at: float, rounds: int,
                ratio: float, ci95: list[float], floor: float) -> dict:
    """A noise-floor file from `harness calibrate`: the campaign run base against base, and
    the largest ratio its 95% interval allowed for no change, max(1 - lo, hi - 1). A
    campaign pins the file (noise_floor: {path, sha256}); its verdicts then make no claim
    smaller than the floor."""
    return {"schema": SCHEMAS["noise_floor"], "campaign": campaign, "bundle_digest": bundle_digest,
            "machine": machine, "started_at": started_at, "rounds": rounds, "ratio": ratio, "ci95": ci95,
            "floor": floor}


def reproduction_receipt(*, campaign: str, original: dict, reproduction: dict, machines: dict, scope: dict,
                         outputs: dict, timing: dict, verdict: str, exit_code: int) -> dict:
    """data/receipts/reproduction.json, only in a bundle `harness reproduce` made: the bundle
    it re-ran (original: digest, start, machine), this run's side (reproduction), whether the
    two machines are of one class, how much of the campaign was re-run (scope), and how
    outputs and timing agree (harness/reproduce.py derives every part)."""
    return {"schema": SCHEMAS["reproduction"], "campaign": campaign, "original": original,
            "reproduction": reproduction, "machines": machines, "scope": scope, "outputs": outputs,
            "timing": timing, "verdict": verdict, "exit_code": exit_code}
