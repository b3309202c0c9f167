"""`harness bisect`: the first commit that made a campaign slower, or faster, between a good (older)
and a bad (newer) revision of its target repository.

The search is rules.bisect_search, the rule both checkers re-apply: each step is a sequential
campaign of the existing Runner (`rounds: auto`, stopping when its look decides, within a budget
per step), sealed as its own bundle under OUT/steps/NN-<sha12>/. What it looks for is the ends'
own verdict (bad improved against good: a speed-up; regressed: a slow-down) unless `--find`
says. Every probe is compared with good, not with its own parent: "has this commit already
changed from good" is a monotone question along a history whose change came in one step (equal
before the culprit, moved from it on), which is what a binary search needs; a commit against its
parent would read "equal" on both sides of the culprit and tell the halves apart only at the
culprit itself. The probes' band is half the ends' change in log space (rules.bisect_band)
unless `--band` fixes one, so a probe nearer good reads equal, one nearer bad reads moved, and
each decides in as few rounds as the change's size allows. The culprit found is then checked
against its own parent, once: a change spread over several commits, each inside the band,
crosses the band at a commit whose own step reads equal, and the search says it cannot tell.
OUT/bisect.json, the receipt, is written once at the end (atomically), whatever ended it."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Callable, ContextManager

from harness import contract as C, records
from harness import rules as R
from harness.files import atomic_write_json
from harness.plan import revisions, spec

if TYPE_CHECKING:
    from harness.engine.launch import Launcher


# The budget of each step when neither --budget nor a larger budget_s of the campaign file says:
# a cap, not a cost (a step stops at the look that decides), so it only lengthens the steps that
# would otherwise end the search inconclusive; 120 s lets a no-op commit on a shared, loaded
# machine take twice the rounds the campaign default (60 s) allows, and keeps the worst case of a
# 16-commit search (2 + 4 steps) within 12 minutes.
BISECT_BUDGET_S = 120.0


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
    find: str = "either"  # contract.BISECT_FIND
    band: float | None = None  # every step's band; None: the probes' from the ends' ratio
    budget_s: float = BISECT_BUDGET_S  # every step's

    @property
    def threshold(self) -> float:
        """The first step's band: --band, else the campaign file's verdict.threshold."""
        return self.band if self.band is not None else self.campaign.threshold


def plan(campaign_path: str | Path, good_rev: str, bad_rev: str, find: str = "either", band: float | None = None,
         budget_s: float | None = None) -> Plan:
    """The campaign, its target repository and the first-parent commits good..bad, what to look
    for, the band and each step's budget (BISECT_BUDGET_S, or the campaign's own budget_s when
    larger, unless given); BisectError (or spec.SpecError) when they cannot be had."""
    if find not in C.BISECT_FIND:
        raise BisectError(f"--find {find!r}: expected one of {', '.join(C.BISECT_FIND)}")
    if band is not None and not 0 < band <= C.MAX_PROBE_BAND:
        raise BisectError(f"--band {band:g}: expected a share above 0 and at most {C.MAX_PROBE_BAND:g} (0.25 is 25%), "
                          "or leave it out for the probes' band from the ends' change")
    if budget_s is not None and not 1 <= budget_s <= C.MAX_TIMEOUT_S:
        raise BisectError(f"--budget {budget_s:g}: expected seconds per step, from 1 to {C.MAX_TIMEOUT_S:.0f}")
    campaign = spec.load(campaign_path)
    repo = revisions.target_repo(campaign)
    def commit(flag: str, rev: str) -> str:
        if rev == revisions.WORKTREE:
            raise BisectError(f"{flag} WORKTREE: bisect walks commits; commit the change and give its SHA")
        sha = revisions.commit_sha(repo, rev)
        if sha is None:
            raise BisectError(f"{flag} {rev!r}: no such commit in the target repository {repo} "
                              "(`harness target CAMPAIGN` lists its commits)")
        return sha

    good, bad = commit("--good", good_rev), commit("--bad", bad_rev)
    if good == bad:
        raise BisectError(f"--good and --bad are the same commit {good[:12]}: give two revisions")
    try:
        commits = revisions.first_parent_line(repo, good, bad, C.MAX_BISECT_COMMITS)
    except ValueError as exc:
        raise BisectError(f"--good {good_rev} --bad {bad_rev}: {exc}") from None
    budget = budget_s if budget_s is not None else max(campaign.budget_s or 0.0, BISECT_BUDGET_S)
    return Plan(Path(campaign_path), campaign, hashlib.sha256(campaign.raw).hexdigest(), repo, good_rev, bad_rev,
                good, bad, commits, find, band, budget)


def step_campaign(p: Plan, base: str, candidate: str, band: float) -> spec.Campaign:
    """The campaign of one step: the file's own, base and candidate overridden (recorded in its
    bundle), `rounds: auto` unless the file already says so, the plan's budget per step and the
    band the rule asks for where they are not the file's."""
    overrides: dict = {"base": base, "candidate": candidate}
    if p.campaign.budget_s is None:
        overrides["rounds"] = "auto"
    if p.budget_s != p.campaign.budget_s:
        overrides["budget_s"] = p.budget_s
    if band != p.campaign.threshold:
        overrides["threshold"] = band
    campaign = spec.load(p.campaign_path, overrides)
    if hashlib.sha256(campaign.raw).hexdigest() != p.sha256:
        raise BisectError(f"{p.campaign_path}: the campaign file changed during the bisect; leave it as it was "
                          "and start again")
    return campaign


def receipt(p: Plan, steps: list[records.BisectStep], ending: str, culprit: str | None,
            reason: str) -> records.BisectReceipt:
    return records.BisectReceipt(
        schema=C.SCHEMAS["bisect"], campaign=p.campaign.name, campaign_sha256=p.sha256, good=p.good, bad=p.bad,
        good_rev=p.good_rev[:256], bad_rev=p.bad_rev[:256], find=p.find, threshold=p.threshold, band=p.band,
        budget_s=p.budget_s, commits=list(p.commits), steps=list(steps), ending=ending, culprit=culprit,
        reason=reason[:8192])


def claim_out(out: Path) -> None:
    """OUT must be new or an empty folder: a bisect never mixes its steps with another's."""
    if out.is_symlink() or (out.exists() and (not out.is_dir() or any(out.iterdir()))):
        raise BisectError(f"--out {out}: exists and is not an empty folder; give a new folder (a bisect never "
                          "writes over another's steps)")
    out.mkdir(parents=True, exist_ok=True)


def run(p: Plan, out: Path, say: Callable[[str], None] = print, launcher_for: Callable[[], Launcher] | None = None,
        progress_for: Callable[[], ContextManager] | None = None) -> records.BisectReceipt:
    """The search, step by step, into OUT; returns the receipt it wrote to OUT/bisect.json.
    launcher_for: a fresh launcher per step (tests); progress_for: a progress context per step."""
    import contextlib

    from harness.bundle.write import BundleError
    from harness.engine.runner import Interrupted, PreflightError, Runner

    claim_out(out)
    steps: list[records.BisectStep] = []
    ending = culprit = None
    reason = ""
    while True:
        rule = search(p, records.to_json(steps))  # the shared rule reads the steps as JSON
        if rule["next"] is None:
            ending, culprit, reason = rule["ending"], rule["culprit"], rule["reason"]
            break
        base, candidate, band = rule["next"]
        n = len(steps) + 1
        folder = f"{n:02d}-{candidate[:12]}"
        where = f"step {n:02d} ({_name(p, base)} -> {_name(p, candidate)})"
        say(f"{where}: {_position(p, candidate)}")
        try:
            campaign = step_campaign(p, base, candidate, band)
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
        verdict, ratio, interval, _ = R.bisect_step(records.to_json(outcome.comparison))
        steps.append(records.BisectStep(n, folder, base, candidate, band, outcome.digest, verdict, ratio, interval))
        shown = f", candidate/base {ratio:.4f}" if ratio is not None else ""
        shown += f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""
        say(f"{where}: {verdict}{shown}; bundle steps/{folder}")
    doc = receipt(p, steps, ending, culprit, reason)
    atomic_write_json(out / C.BISECT_FILE, records.to_json(doc))
    return doc


def _name(p: Plan, sha: str) -> str:
    return "good" if sha == p.good else "bad" if sha == p.bad else sha[:12]


def _position(p: Plan, sha: str) -> str:
    return f"commit {p.commits.index(sha) + 1} of {len(p.commits)} after good"


def search(p: Plan, steps: list[dict]) -> dict:
    """rules.bisect_search with the plan's own inputs."""
    return R.bisect_search(p.good, p.commits, steps, p.find, p.threshold, p.band)


def next_steps(p: Plan, receipt: records.BisectReceipt, campaign_arg: str, out: Path) -> list[str]:
    """For a search that ended without a culprit it could have found with more: the commands to
    run next, each one line a reader pastes (a larger budget, a wider band, and the narrower range
    the steps so far have left). [] for an ending more budget would not change."""
    import shlex

    if receipt.ending != "inconclusive":
        return []
    rule = search(p, records.to_json(receipt.steps))
    lo, hi = rule["range"]
    span = p.commits.index(hi) - (p.commits.index(lo) if lo in p.commits else -1)
    find = rule["direction"] or p.find
    last = receipt.steps[-1].band if receipt.steps else p.threshold
    wider = min(C.MAX_PROBE_BAND, round(max(2 * last, last + 0.05), 4))
    base = ["harness", "bisect", campaign_arg, "--good", lo, "--bad", hi] + (["--find", find] if find != "either" else [])
    word = shlex.join
    lines = [f"next: the {'change' if find == 'either' else find + ' commit'} lies after "
             f"{'good' if lo == p.good else lo[:12]} and at or before {'bad' if hi == p.bad else hi[:12]} "
             f"({span} commit(s)); to go on from there:",
             "  " + word(base + ["--budget", f"{2 * p.budget_s:g}", "--out", f"{out}.2"])
             + f"    # twice the budget per step ({p.budget_s:g} s now)"]
    if wider > last:
        lines.append("  " + word(base + ["--band", f"{wider:g}", "--out", f"{out}.3"])
                     + f"    # a wider band ({100 * last:.1f}% now): it asks whether a commit moved by {100 * wider:.0f}%")
    return lines
