"""`harness bisect`: the first commit where a campaign regresses, between a good and a bad revision
of its target repository.

The search is contract.bisect_search, the rule both checkers re-apply: each step is a sequential
campaign of the existing Runner (`rounds: auto`, stopping when its look decides), sealed as its
own bundle under OUT/steps/NN-<sha12>/. Every probe is compared with good, not with its own
parent: "is this commit already slower than good" is a monotone question along a history whose
slow-down came in one step (equal before the culprit, regressed from it on), which is what a
binary search needs; a commit against its parent would read "equal" on both sides of the
culprit and tell the halves apart only at the culprit itself. The culprit found is then checked
against its own parent, once: a slow-down spread over several commits, each inside the band,
crosses the band at a commit whose own step reads equal, and the search says it cannot tell.
OUT/bisect.json, the receipt, is written once at the end (atomically), whatever ended it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

from harness import contract as C
from harness.files import atomic_write_json
from harness.plan import revisions, spec

if TYPE_CHECKING:
    from harness.engine.launch import Launcher


class BisectError(Exception):
    """A bisect that cannot start: one line naming the cause and the fix (exit 2)."""


@dataclass(frozen=True)
class Plan:
    campaign_path: Path
    campaign: spec.Campaign
    sha256: str  # of the campaign file's bytes: every step's data/campaign.yaml
    repo: Path
    good_rev: str
    bad_rev: str
    good: str
    bad: str
    commits: list[str]


def plan(campaign_path: str | Path, good_rev: str, bad_rev: str) -> Plan:
    """The campaign, its target repository and the first-parent commits good..bad; BisectError
    (or spec.SpecError) when they cannot be had."""
    campaign = spec.load(campaign_path)
    repo = revisions.target_repo(campaign)
    shas = {}
    for flag, rev in (("--good", good_rev), ("--bad", bad_rev)):
        if rev == revisions.WORKTREE:
            raise BisectError(f"{flag} WORKTREE: bisect walks commits; commit the change and give its SHA")
        sha = revisions.commit_sha(repo, rev)
        if sha is None:
            raise BisectError(f"{flag} {rev!r}: no such commit in the target repository {repo} "
                              "(`harness target CAMPAIGN` lists its commits)")
        shas[flag] = sha
    if shas["--good"] == shas["--bad"]:
        raise BisectError(f"--good and --bad are the same commit {shas['--good'][:12]}: give two revisions")
    try:
        commits = revisions.first_parent_line(repo, shas["--good"], shas["--bad"], C.MAX_BISECT_COMMITS)
    except ValueError as exc:
        raise BisectError(f"--good {good_rev} --bad {bad_rev}: {exc}") from None
    return Plan(Path(campaign_path), campaign, hashlib.sha256(campaign.raw).hexdigest(), repo, good_rev, bad_rev,
                shas["--good"], shas["--bad"], commits)


def step_campaign(p: Plan, base: str, candidate: str) -> spec.Campaign:
    """The campaign of one step: the file's own, base and candidate overridden (recorded in its
    bundle), and `rounds: auto` unless the file already says so."""
    overrides = {"base": base, "candidate": candidate}
    if p.campaign.budget_s is None:
        overrides["rounds"] = "auto"
    campaign = spec.load(p.campaign_path, overrides)
    if hashlib.sha256(campaign.raw).hexdigest() != p.sha256:
        raise BisectError(f"{p.campaign_path}: the campaign file changed during the bisect; leave it as it was "
                          "and start again")
    return campaign


@dataclass
class Step:
    step: int
    folder: str
    base: str
    candidate: str
    digest: str
    verdict: str
    ratio: float | None
    interval: list | None

    def receipt(self) -> dict:
        return dict(self.__dict__)


def receipt(p: Plan, steps: list[Step], ending: str, culprit: str | None, reason: str) -> dict:
    return {"schema": C.SCHEMAS["bisect"], "campaign": p.campaign.name, "campaign_sha256": p.sha256,
            "good": p.good, "bad": p.bad, "good_rev": p.good_rev[:256], "bad_rev": p.bad_rev[:256],
            "commits": list(p.commits), "steps": [s.receipt() for s in steps], "ending": ending,
            "culprit": culprit, "reason": reason[:8192]}


def claim_out(out: Path) -> None:
    """OUT must be new or an empty folder: a bisect never mixes its steps with another's."""
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise BisectError(f"--out {out}: exists and is not an empty folder; give a new folder (a bisect never "
                          "writes over another's steps)")
    out.mkdir(parents=True, exist_ok=True)


def run(p: Plan, out: Path, say: Callable[[str], None] = print, launcher_for: Callable[[], Launcher] | None = None,
        progress_for: Callable[[], ContextManager] | None = None) -> dict:
    """The search, step by step, into OUT; returns the receipt it wrote to OUT/bisect.json.
    launcher_for: a fresh launcher per step (tests); progress_for: a progress context per step."""
    import contextlib

    from harness.bundle.write import BundleError
    from harness.engine.runner import Interrupted, PreflightError, Runner

    claim_out(out)
    steps: list[Step] = []
    ending = culprit = None
    reason = ""
    while True:
        rule = C.bisect_search(p.good, p.commits, [s.__dict__ for s in steps])
        if rule["next"] is None:
            ending, culprit, reason = rule["ending"], rule["culprit"], rule["reason"]
            break
        base, candidate = rule["next"]
        n = len(steps) + 1
        folder = f"{n:02d}-{candidate[:12]}"
        where = f"step {n:02d} ({_name(p, base)} -> {_name(p, candidate)})"
        say(f"{where}: {_position(p, candidate)}")
        try:
            campaign = step_campaign(p, base, candidate)
            with (progress_for() if progress_for else contextlib.nullcontext()) as progress:
                runner = Runner(campaign, (out / C.BISECT_STEPS / folder).absolute(), progress=progress,
                                launcher=launcher_for() if launcher_for else None)
                outcome = runner.run()
                assert outcome is not None  # not check_only: run() seals a bundle
        except PreflightError as exc:
            ending, reason = "stopped", f"{where}: pre-flight: {exc.problems[0] if exc.problems else 'failed'}"
            break
        except (spec.SpecError, BundleError, BisectError, Interrupted) as exc:
            ending, reason = "stopped", f"{where}: {exc}"
            break
        except KeyboardInterrupt:
            ending, reason = "stopped", f"{where}: interrupted"
            break
        if outcome.out != (out / C.BISECT_STEPS / folder).absolute():
            ending, reason = "stopped", f"{where}: its bundle went to {outcome.out}, not {folder}"
            break
        verdict, ratio, interval = C.bisect_step(outcome.comparison)
        steps.append(Step(n, folder, base, candidate, outcome.digest, verdict, ratio, interval))
        shown = f", candidate/base {ratio:.4f}" if ratio is not None else ""
        shown += f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
        say(f"{where}: {verdict}{shown}; bundle steps/{folder}")
    doc = receipt(p, steps, ending, culprit, reason)
    atomic_write_json(out / C.BISECT_FILE, doc)
    return doc


def _name(p: Plan, sha: str) -> str:
    return "good" if sha == p.good else "bad" if sha == p.bad else sha[:12]


def _position(p: Plan, sha: str) -> str:
    return f"commit {p.commits.index(sha) + 1} of {len(p.commits)} after good"
