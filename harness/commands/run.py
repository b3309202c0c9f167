"""`harness run CAMPAIGN [--out DIR] [--force] [--sign KEY] [overrides]`: run a campaign and seal
its bundle; with --sign, sign it right after sealing (harness/attest, BUNDLE.intoto.json).

Exit codes: 0 complete, outputs agree, 3 parity mismatch, 4 a run failed or timed out (or
the campaign was interrupted), 1 the sealed bundle does not verify (`run` verifies what it
sealed, as `harness verify` would, before it signs or says anything of the result; such a
bundle is not signed), 2 usage or input error (then no bundle is written), or a key that
cannot sign (loaded before anything runs), 10 a write failed (a full disk: the line names
the staging folder that keeps the finished runs, for `harness seal`; cli.main says it)."""
from __future__ import annotations

from pathlib import Path

from harness import contract as C
from harness.bundle.model import Comparison
from harness.plan import spec
from harness.bundle.write import BundleError
from harness.commands import error
from harness.render.text import term
from harness.engine.progress import Progress
from harness.outcomes import FAILED, INTERRUPTED, PROBLEMS


def add_overrides(p) -> None:
    """The command-line overrides `run` and `check` share; a bundle records them."""
    p.add_argument("--base", metavar="REV", help="base revision instead of the YAML's (WORKTREE: uncommitted "
                                                 "changes)")
    p.add_argument("--candidate", metavar="REV", help="candidate revision instead of the YAML's (WORKTREE: "
                                                      "the working tree)")
    p.add_argument("--order", help="an explicit run order instead of the YAML's rounds or order, e.g. ABBAABBA")
    p.add_argument("--rounds", metavar="N|auto",
                   help="N rounds (each one A and one B, shuffled), or auto (as many as fit the YAML's budget_s), "
                        "instead of the YAML's order or rounds")
    p.add_argument("--items", type=int, metavar="N", help="run N of the workload's items, evenly spread")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="set workload.params.KEY (the value is read as YAML); repeatable")
    p.add_argument("--metric", action="append", default=[], metavar="METRIC",
                   help="instructions: also count instructions under valgrind (extra runs beside the wall runs); "
                        "wall: wall runs only; instead of the YAML's metrics")


def load_campaign(args) -> spec.Campaign:
    overrides = spec.parse_overrides(args.base, args.candidate, args.order, args.items, args.param, args.rounds,
                                     args.metric)
    return spec.load(args.campaign, overrides)


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run an interleaved A/B campaign (shuffled rounds of fresh processes) and seal its evidence bundle")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--out", help="bundle directory to create (default: out/<campaign name>)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing bundle at --out (only a bundle of this harness is replaced)")
    p.add_argument("--sign", metavar="KEY",
                   help="sign the sealed bundle with this OpenSSH Ed25519 private key (BUNDLE.intoto.json beside "
                        "it; the key is loaded before anything runs)")
    add_overrides(p)
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.engine.runner import Interrupted, PreflightError, Runner
    from harness.comparison.parity import divergence_lines
    from harness.render.text import stage_summary
    from harness.outcomes import RUN_EXIT_MEANING, line as verdict_line

    key = signed = None
    if args.sign:  # a key that cannot sign stops the campaign before anything runs
        from harness.commands.sign import in_the_way, load_key

        key, code = load_key("run", args.sign)
        if key is None:
            return code
    try:
        with Progress() as progress:
            campaign = load_campaign(args)
            out = Path(args.out) if args.out else Path("out") / campaign.name
            blocked = in_the_way("run", out, args.force) if key is not None else 0
            if blocked:
                return blocked
            runner = Runner(campaign, out.absolute(), force=args.force, progress=progress)
            outcome = runner.run()
            assert outcome is not None  # not check_only: run() seals a bundle
    except PreflightError as exc:
        return error("run", *(f"pre-flight: {line}" for line in exc.problems),
                     "nothing was timed and no bundle was written (`harness check` repeats the pre-flight)")
    except (spec.SpecError, BundleError) as exc:
        return error("run", exc)
    except Interrupted as exc:
        return error("run", exc, code=FAILED)
    from harness.judge.verify import verify

    try:  # what it sealed, checked as a reviewer will: never "complete" for a bundle verify refuses
        checked = verify(outcome.out)
    except KeyboardInterrupt:
        return error("run", f"interrupted while verifying the sealed bundle {outcome.out}; run "
                            f"`harness verify {outcome.out}`", code=INTERRUPTED)
    refused: list[str] = [*checked.problems] or ([checked.unusable] if checked.unusable else [])
    if key is not None and not refused:  # right after sealing
        from harness.commands.sign import sign_sealed

        code, signed = sign_sealed("run", key, outcome.out, force=args.force)
        if code:
            return code
    result = outcome.comparison  # what the runner derived and sealed
    for warning in runner.warnings + [runner.unanchored] * bool(runner.unanchored):
        print(f"warning: {term(warning)}")
    if outcome.note:
        print(f"note: {term(outcome.note)}")
    print(f"bundle: {term(outcome.out)}")
    print(f"status: {result.status}" + (f" ({term(result.reason)})" if result.reason else "")
          + (" as its comparison.json says, but the bundle does NOT verify" if refused else ""))
    wall = result.wall
    if wall.speedup is not None:
        print(f"wall: base {wall.base_mean_s:.3f} s, candidate {wall.candidate_mean_s:.3f} s, "
              f"speedup {wall.speedup:.3f}x ({wall.saving_pct:.1f}% saved)")
    for line in stage_summary(result):
        print(line)
    items = result.items
    print(f"items: {items.planned} of the {items.of} the workload gives"
          + (" (workload.items picks them)" if items.planned < items.of else ""))
    print(term(parity_line(result, outcome.out)))
    for line in suite_lines(outcome.out):
        print(term(line))
    for line in divergence_lines(result):
        print(term(line))
    golden = result.parity.golden
    if golden:
        subset = golden.items_checked < golden.items
        print(f"golden: {'identical' if golden.identical else 'DIFFERS'} on {golden.items_checked} of "
              f"{golden.items} golden items" + (" (this campaign runs a subset)" if subset else ""))
    # The verdict as `harness compare` gives it; this command's own exit code is below.
    if refused:
        for problem in refused[:5]:
            print(f"FAIL {term(problem)}")
        more = f", {len(refused) - 5} more" if len(refused) > 5 else ""
        print(f"verify: the sealed bundle does not verify ({len(refused)} problem(s){more}: `harness verify "
              f"{term(outcome.out)}` lists them); no verdict (harness compare would exit {PROBLEMS})"
              + ("; not signed" if key is not None else ""))
    else:
        print(term(verdict_line(result, exit_word="harness compare would exit")))
    if signed:
        print(term(signed))
    print(f"digest: {outcome.digest}")
    code = PROBLEMS if refused else outcome.exit_code
    print(f"exit: {code} ({RUN_EXIT_MEANING[code]})")
    return code


def suite_lines(out: Path) -> list[str]:
    """A `suite:` campaign: what its benchmarks gave (outputs hashed or not given, stages), read
    from the sealed bundle's first ok run, and what asv's measured benchmarks gave, from every one."""
    from harness.files import read_json
    from harness.records import CampaignRecord
    from harness.render.text import suite_text, tline

    try:
        campaign = CampaignRecord.from_json(read_json(out / C.CAMPAIGN_JSON))
        records = [read_json(out / C.run_path(label)) for label in campaign.labels
                   if (out / C.run_path(label)).is_file()]
        ok = [r for r in records if isinstance(r, dict) and r.get("status") == "ok"]
        lines = suite_text(campaign.workload, campaign.stages, ok, esc=tline)
        return [line[0].lower() + line[1:] for line in lines] if ok else []
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return []


def parity_line(result: Comparison, out: Path) -> str:
    """The parity summary. A failed campaign with nothing compared says so rather than
    "NOT identical (0/0 fields)"; recorded errors are counted per run when they differ,
    since the reference's count alone ("0 recorded errors") hides what differs."""
    from harness.comparison.parity import fields_per_pair
    from harness.files import read_json
    from harness.outcomes import parity_text

    p = result.parity
    ok = result.ok_runs()
    if not result.complete and not p.fields_compared:
        why = p.note or f"{len(ok)} ok run(s), none to compare with the reference"
        return f"parity: not compared, the campaign failed ({why})"
    if not p.fields_compared and p.identical:  # a suite whose benchmarks gave no outputs
        return (f"parity: no outputs to compare (0 fields, {p.items} items); recorded errors "
                + ("identical" if p.errors_identical else "differ"))
    per = fields_per_pair(result)
    errors = {}
    for run in ok:
        try:
            items = read_json(out / C.run_path(run.label))["items"]
            errors[run.label] = sum(1 for item in items if item["error"] is not None)
        except (OSError, ValueError, KeyError, TypeError):
            errors = {}
            break
    if p.errors_identical or not errors:
        counted = f"{p.error_returns} recorded errors"
    else:
        counted = "recorded errors differ (per run: " + ", ".join(f"{k} {n}" for k, n in errors.items()) + ")"
    scope = "" if result.complete else f" over the {len(ok)} ok runs of a failed campaign"
    word = "identical" if p.identical else parity_text(result).removeprefix("outputs ") if p.agree else \
        "NOT identical"
    return (f"parity{scope}: {word} ({p.fields_identical}/"
            f"{p.fields_compared} fields" + (f", {per} per run compared with the reference" if per else "")
            + f", {p.items} items, {counted})")

