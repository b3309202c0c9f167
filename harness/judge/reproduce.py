"""`harness reproduce`: re-run the campaign a bundle records, and judge its claim by the re-run.

Checkers prove a bundle consistent; only a re-run tests the claim. The re-run is the
measurement, the original is the claim: the original's own interval has no say. The re-run
uses the repository's campaign file (byte for byte the bundle's campaign.yaml), the recorded
overrides and SHAs, seals a new bundle, and writes into it a receipt
(`data/receipts/reproduction.json`) derived from the two bundles alone (so `harness verify
--original` and `harness report` re-derive it before anything shows it):

* scope: whether the two bundles cover the same items; a re-run of other or fewer items is
  "partial" whatever else holds (a spot check of N items is held to the original's ratio
  re-derived over those N);
* outputs: harness/judge/agreement.py (bit for bit on one machine class; on another, float
  fields may differ, nothing else may);
* timing: "reproduced" when the re-run's own 95% interval, widened by contract.REPRODUCE_TOLERANCE
  either way, holds the claimed ratio and the two verdict words agree; "not contradicted"
  when it holds it but the re-run's interval is too wide to give a verdict (or the original
  gave none); "not reproduced" when it excludes it, or the two verdicts are conclusive and
  differ.
"""
from __future__ import annotations

import dataclasses
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from harness import contract as C, records
from harness import rules as R
from harness.bundle import read
from harness.bundle.model import Comparison, Stats
from harness.files import WriteFailed, write_failed
from harness.judge import agreement

OUT = Path("out")  # where a default reproduction goes: the current folder's scratch, never evidence/


def default_name(bundle: Path) -> str:
    """The first default folder's name for BUNDLE's reproduction (REPORT.md names it too)."""
    return f"{bundle.absolute().name}.reproduction"


def fresh_out(bundle: Path) -> Path:
    """The default --out: out/BUNDLE.reproduction of the current folder, or the first free
    out/BUNDLE.reproduction-N. Never an existing folder, and never beside the bundle: a
    bundle is usually committed under evidence/, and a re-run written there would be
    committed and reported as evidence by accident."""
    first = OUT.absolute() / default_name(bundle)
    n, out = 1, first
    while os.path.lexists(out) or os.path.lexists(out.parent / f".{out.name}.lock"):
        n += 1
        out = first.parent / f"{first.name}-{n}"
    return out


class Refused(Exception):
    """Nothing was run: the bundle cannot be re-run as it was (one line, exit 2)."""


# --------------------------------------------------------------------------- the claim
def claim(stats: Stats) -> records.Claim:
    """A bundle's timing claim (its comparison's stats): its candidate/base ratio, 95% interval,
    verdict and timed items."""
    paired = stats.paired
    return records.Claim(ratio=paired.geomean_ratio, ci95=paired.ci95, verdict=stats.verdict, items=paired.items)


def claim_on(original: read.Bundle, ids: set) -> records.Claim:
    """The original's claim re-derived over some of its items: per-item speed-ups differ, so a
    spot check of N items is held to what the original measured on those N."""
    from harness.comparison import analysis

    def part(r):
        """The run with those items only, its wall (the runner's) their share of it by the items' walls."""
        kept = [it for it in r.items if it.id in ids]
        total = sum(it.wall_s for it in r.items)
        share = sum(it.wall_s for it in kept) / total if total > 0 else 1.0
        return dataclasses.replace(r, items=kept, wall_s=r.wall_s * share if r.wall_s is not None else None)

    runs = [part(r) for r in original.runs]
    floor = original.comparison.stats.floor
    threshold = original.campaign.threshold
    stats = analysis.with_outside(analysis.with_interference(analysis.stats_of(runs, threshold, floor), runs,
                                                             original.campaign.interference, threshold, floor),
                                  runs)
    return claim(stats)


def ratio_text(c: records.Claim) -> str:
    if c.ratio is None or not c.ci95:
        return "no interval"
    return f"{c.ratio:.4g} [{c.ci95[0]:.4g}, {c.ci95[1]:.4g}]"


def judge_timing(claimed: records.Claim, measured: records.Claim) -> records.Judgment:
    """claimed: the original's claim (its ratio and verdict; its interval has no say); measured:
    the re-run's own ratio, interval and verdict. The word and why."""
    tol = C.REPRODUCE_TOLERANCE

    def judged(word: str, reason: str, widened: list | None = None, holds: bool | None = None) -> records.Judgment:
        return records.Judgment(held_to=claimed, measured=measured, widened=widened, holds=holds, word=word,
                                reason=reason)

    if claimed.ratio is None:
        return judged("not contradicted", "the original makes no timing claim (no ratio)")
    if not measured.ci95:
        return judged("not contradicted", "the re-run has no interval to test the claim with")
    lo, hi = (R.sig10(measured.ci95[0] / (1 + tol)), R.sig10(measured.ci95[1] * (1 + tol)))
    holds = lo <= claimed.ratio <= hi
    where = (f"the re-run's 95% interval {ratio_text(measured)}, widened by {100 * tol:.0f}% either way to "
             f"[{lo:.4g}, {hi:.4g}], {'holds' if holds else 'excludes'} the claimed ratio {claimed.ratio:.4g}")
    conclusive = ("improved", "regressed", "equal")
    if not holds:
        return judged("not reproduced", where, [lo, hi], holds)
    if measured.verdict in conclusive and claimed.verdict in conclusive:
        if measured.verdict == claimed.verdict:
            return judged("reproduced", f"{where}, and both say {claimed.verdict}", [lo, hi], holds)
        return judged("not reproduced",
                      f"{where}, but the re-run says {measured.verdict} where the claim says {claimed.verdict}",
                      [lo, hi], holds)
    if claimed.verdict not in conclusive:
        return judged("not contradicted", f"{where}; the original itself concluded nothing", [lo, hi], holds)
    return judged("not contradicted",
                  f"{where}, but the re-run is {measured.verdict}: too wide to say {claimed.verdict} itself", [lo, hi],
                  holds)


# --------------------------------------------------------------------------- scope, verdict
def scope(original: read.Bundle, reproduction: read.Bundle) -> records.Scope:
    """How much of the original campaign the re-run repeated. Fewer rounds is a fact (a budget
    or a spot check chose them), not a weakness in itself; other items make it partial."""
    items_a, items_b = original.runner.items, reproduction.runner.items
    rounds = [b.campaign.rounds if b.campaign.rounds else len(b.campaign.order) // 2
              for b in (original, reproduction)]
    same = items_a == items_b
    missing = [i for i in items_a if i not in set(items_b)]
    extra = [i for i in items_b if i not in set(items_a)]
    def n_rounds(n):
        return f"{n} round{'s' if n != 1 else ''}"

    plan = f"{n_rounds(rounds[1])} against the original's {rounds[0]}" if rounds[1] != rounds[0] else \
        f"{n_rounds(rounds[1])}, as the original"
    if same:
        note = f"the same {len(items_b)} items; {plan}"
    else:
        parts = []
        if missing:
            parts.append(f"{len(missing)} of the original's {len(items_a)} items not re-run (e.g. {missing[0]!r})")
        if extra:
            parts.append(f"{len(extra)} item(s) the original did not run (e.g. {extra[0]!r}): the campaign's workload "
                         f"gives {len(reproduction.runner.items_all)} now, the original ran "
                         f"{len(items_a)}")
        note = "partial: " + "; ".join(parts) + f"; {plan}"
    return records.Scope(rounds=rounds[1], rounds_original=rounds[0], items=len(items_b), items_original=len(items_a),
                         same_items=same, missing=len(missing), extra=len(extra), note=note)


def verdict(comparison: Comparison, outputs: records.Outputs, timing: records.Judgment,
            scope_: records.Scope) -> tuple[str, str]:
    """The reproduction's word and its reason, the strongest finding first."""
    if not comparison.complete:
        return "run failed", f"the re-run failed: {comparison.reason}"
    if not outputs.agree or not comparison.parity.agree:
        return "outputs differ", f"outputs: {outputs.why}"
    if timing.word == "not reproduced":
        return "not reproduced", timing.reason
    if not scope_.same_items:
        return "partial", f"{scope_.note}; on the common items the timing is {timing.word}: {timing.reason}"
    return timing.word, timing.reason


def receipt(original: read.Bundle, reproduction: read.Bundle) -> records.ReproductionReceipt:
    """The receipt from the two loaded bundles alone (the divergence left empty)."""
    from harness.comparison import analysis

    ma, mb = original.machine, reproduction.machine
    same, why = agreement.same_class(ma, mb)
    outputs = agreement.compare_outputs(original.runs, reproduction.runs, same)
    claimed = claim(original.comparison.stats)
    ran = set(reproduction.runner.items)
    held_to = claimed if ran >= set(original.runner.items) else claim_on(original, ran)
    measured = claim(reproduction.comparison.stats)
    judged = judge_timing(held_to, measured)
    timing = records.Timing(held_to=judged.held_to, measured=judged.measured, widened=judged.widened,
                            holds=judged.holds, word=judged.word, reason=judged.reason, claimed=claimed,
                            overloaded=analysis.overloaded([r for r in reproduction.runs if r.ok]))
    scope_ = scope(original, reproduction)
    word, reason = verdict(reproduction.comparison, outputs, timing, scope_)
    return records.reproduction_receipt(
        campaign=original.name,
        original=records.Original(digest=original.digest, started_at=original.runner.started_at, machine=ma,
                                  claim=claimed),
        reproduction=records.Rerun(started_at=reproduction.runner.started_at, machine=mb, measured=measured),
        machines=records.Machines(same_class=same, why=why), scope=scope_, outputs=outputs,
        timing=timing, verdict=word, reason=reason)


def divergence_lines(rows: list, most: int = 5) -> list:
    """parity.divergence's rows (open: measured from the arrays), a line each."""
    return [f"  {r['run']} item {r['item']} field {r['field']}: {r.get('differing')} of {r.get('elements')} elements "
            f"differ, max abs {r.get('max_abs')}, max ulp {r.get('max_ulp')}" for r in rows[:most]]


def timing_text(timing: records.Timing) -> str:
    held = f"claimed {ratio_text(timing.claimed)} ({timing.claimed.verdict})"
    if timing.held_to != timing.claimed:
        held += f", {ratio_text(timing.held_to)} on the items re-run"
    text = f"{held}; re-run {ratio_text(timing.measured)} ({timing.measured.verdict}): {timing.reason}"
    if timing.overloaded:
        text += (f"; more work than cores was runnable during {', '.join(timing.overloaded)}, so other work "
                 "competed with the re-run")
    return text


def outputs_text(outputs: records.Outputs) -> str:
    n = outputs.items
    if outputs.why == "identical":
        return f"identical ({n.compared} items, {outputs.fields_compared} fields)"
    return (f"{'agree' if outputs.agree else 'DIFFER'}: {outputs.why} ({n.identical} of {n.compared} "
            "common items identical)")


# --------------------------------------------------------------------------- running
def campaign_for(original: read.Bundle, repo: Path, order: str | None, items: int | None, rounds: int | None = None,
                 campaign_file: Path | None = None):
    """The campaign as the bundle ran it, from the repository's campaign file (or the
    reviewer's --campaign FILE, never a bundle's), at the recorded SHAs, with the recorded
    overrides (and --order/--rounds/--items on top); a campaign of rounds gets a fresh
    shuffle; a suite's `number: auto` the calls the bundle calibrated (checked numbers). Overrides
    can only choose revisions, order, rounds, items and params (the spec refuses any other key),
    so nothing the bundle wrote becomes a command."""
    from harness.plan import spec
    from harness.plan.suite import number_of

    recorded = original.campaign
    if not recorded.campaign_path:
        raise Refused("the bundle records no campaign_path to find its campaign in the repository")
    overrides = dict(recorded.overrides)
    for variant, rev in recorded.revisions.items():
        if rev.rev != rev.sha:  # WORKTREE or a moved branch would name another commit now
            overrides[variant] = rev.sha
    if order is not None or rounds is not None:
        overrides.pop("order", None)
        overrides.pop("rounds", None)
    overrides.update(spec.parse_overrides(order=order, items=items, rounds=rounds))
    from harness.judge import anchors

    try:  # the repository's own campaign file, or the reviewer's: never one inside a bundle
        source = anchors.outside_bundles(Path(campaign_file)) if campaign_file is not None else \
            anchors.campaign_file(anchors.repository(repo), recorded.campaign_path, recorded.shas())
    except anchors.AnchorError as exc:
        raise Refused(str(exc)) from None
    campaign = spec.load(source, overrides)
    if campaign.auto_number:  # the calls the original calibrated, never calibrated again: the same work is re-timed
        try:
            campaign = campaign.with_suite_number(number_of(recorded.workload.params))
        except ValueError as exc:
            raise Refused(f"the campaign file says suite.number: auto, and the bundle's campaign.json workload.params."
                          f"number does not hold the calls it calibrated ({exc})") from None
    pinned = {inp.name: inp.sha256 for inp in campaign.inputs}
    had = original.inputs.pins()
    if pinned != had:
        name = next(n for n in sorted(set(pinned) | set(had)) if pinned.get(n) != had.get(n))
        raise Refused(f"input '{name}' is pinned to {str(pinned.get(name))[:16]}... in {campaign.source}, the "
                      f"bundle ran {str(had.get(name))[:16]}...")
    return campaign


def plan_lines(campaign) -> list[str]:
    """What the re-run will execute, shown before anything runs: every command and entry
    point comes from the campaign file; the bundle's choices are the overrides."""
    lines = [f"campaign file: {campaign.source}"]
    for variant in ("base", "candidate"):
        lines.append(f"{variant}: revision {campaign.revision(variant).rev}")
    for cmd in campaign.build:
        lines.append(f"build command (in each revision's tree): {' '.join(cmd)}")
    for inp in campaign.inputs:
        if inp.build:
            lines.append(f"input builder for {inp.name} (only when {inp.path} is missing): {' '.join(inp.build)}")
    lines.append(f"entry point: {campaign.workload.entry} from {campaign.workload.path}")
    for name, target in campaign.stages.items():
        lines.append(f"stage {name}: {target}")
    chosen = ", ".join(f"{k} {v}" for k, v in sorted(campaign.overrides.items())) or "nothing"
    numbers = campaign.suite_number
    if isinstance(numbers, dict):
        chosen += (f"; suite.number: auto's calls as it calibrated them ({len(numbers)} benchmarks, "
                   f"{min(numbers.values())}-{max(numbers.values())} calls each)")
    lines.append(f"the bundle chooses (revisions, order, rounds, items, params only): {chosen}")
    return lines


@dataclass
class Reproduction:
    out: Path
    digest: str
    receipt: records.ReproductionReceipt
    comparison: Comparison
    note: str | None = None


def reproduce(original: read.Bundle, campaign, out: Path, force: bool = False, progress=None,
              launcher=None) -> Reproduction:
    """Run the campaign into a private folder, derive the receipt, then seal the run's payload
    plus the receipt as a new bundle at out (published only once sealed)."""
    from harness.bundle import write as bundle
    from harness.engine.runner import Runner

    out = out.absolute()
    claim_ = bundle.claim_output(out, force)
    work = out.parent / f".{out.name}.run-{os.getpid()}"
    with bundle.OutputLock(out):
        try:
            try:
                outcome = Runner(campaign, work, force=True, progress=progress, launcher=launcher).run()
                assert outcome is not None  # not check_only: run() seals a bundle
            except WriteFailed as exc:
                if not exc.sealable:
                    raise
                raise exc.with_fix(exc.kept, f"free space, then run `harness reproduce` again (`harness seal "
                                             f"{exc.folder} --out {out}` seals the re-run's runs as a plain bundle, "
                                             "without the reproduction receipt)", exc.folder, True) from None
            new = read.load(work)
            result = receipt(original, new)
            shown = result.outputs.mismatches
            if shown:  # measured here, from both bundles' arrays
                result = dataclasses.replace(result, outputs=dataclasses.replace(
                    result.outputs, divergence=agreement.divergence_across(shown, original.arrays, new.arrays)))
            staging = bundle.Staging(out)
            try:
                os.rmdir(staging.root / "data")
                os.rename(work / "data", staging.root / "data")
                staging.write_json(C.REPRODUCTION, records.to_json(result))
                info = dict(line.split(": ", 1) for line in (work / C.BAG_INFO).read_text().splitlines())
                digest = staging.seal({k: v for k, v in info.items()
                                       if k == "External-Identifier" or (k.startswith("Abba-") and k != "Abba-Format")})
                where, note = staging.publish(claim_, digest)
            except OSError as exc:  # a full disk: the re-run's runs (and its receipt, once written) are kept
                failed = write_failed(staging.root, exc)
                raise (failed if failed.fix else failed.with_fix(
                    f"the re-run's runs are kept in {staging.root}",
                    f"free space, then `harness seal {staging.root} --out {out}`", staging.root, True)) from None
            except BaseException:
                staging.discard()
                raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return Reproduction(where, digest, result, outcome.comparison, note)
