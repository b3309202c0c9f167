"""`harness bisect CAMPAIGN --good REV --bad REV [--out DIR]`: the first commit between good and bad
where the campaign regresses against good, each step a sequential campaign sealed as its own
bundle (OUT/steps/NN-<sha12>/), the receipt OUT/bisect.json naming the culprit or saying why it
cannot (harness/judge/bisect.py runs it; contract.bisect_search is the rule; `harness verify
OUT` and `python -S harness/rehash.py OUT` re-derive it).

Exit codes: 0 a culprit named, 12 cannot tell (spread over several commits, a step inconclusive,
the history not monotone), 13 bad is not slower than good, 3 a step's outputs differ, 4 a step
failed or the search stopped (interrupted, a pre-flight problem), 2 usage or input error (nothing
run)."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes
from harness.commands import error

HELP = "find the first commit between a good and a bad revision where a campaign regresses"


def add_parser(sub) -> None:
    p = sub.add_parser("bisect", help=HELP, description=HELP + ": each step an interleaved campaign that stops when "
                       "decided, sealed as its own bundle; OUT/bisect.json names the culprit. Exit 0 culprit named, 12 "
                       "cannot tell, 13 not regressed, 3 outputs differ, 4 a step failed or stopped, 2 unusable input.")
    p.add_argument("campaign", help="campaign YAML file (its target is the repository searched)")
    p.add_argument("--good", required=True, metavar="REV", help="a revision that is not slower (an ancestor of --bad "
                                                                 "along first parents)")
    p.add_argument("--bad", required=True, metavar="REV", help="a revision that is slower")
    p.add_argument("--out", metavar="DIR", help="a new folder for the steps and bisect.json (default: "
                                                "out/<campaign name>.bisect)")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.engine.progress import Progress
    from harness.judge import bisect
    from harness.plan import spec

    try:
        plan = bisect.plan(args.campaign, args.good, args.bad)
        out = Path(args.out) if args.out else Path("out") / f"{plan.campaign.name}.bisect"
        bisect.claim_out(out)
    except (spec.SpecError, bisect.BisectError) as exc:
        return error("bisect", exc)
    auto = "" if plan.campaign.budget_s is not None else " (each step `rounds: auto`, overriding the file's)"
    print(f"bisect: {len(plan.commits)} first-parent commit(s) {plan.good[:12]}..{plan.bad[:12]} in {plan.repo}; "
          f"every probe against good{auto}")
    receipt = bisect.run(plan, out, say=lambda line: print(line, flush=True), progress_for=Progress)
    code = outcomes.BISECT_CODES[receipt["ending"]]
    if receipt["culprit"]:
        print(f"culprit: {receipt['culprit']}")
    else:
        print(f"culprit: none ({receipt['ending']})")
    print(f"reason: {receipt['reason']}")
    print(f"receipt: {out / 'bisect.json'} ({len(receipt['steps'])} step bundle(s) under {out / 'steps'})")
    print(f"check it: harness verify {out}   or   python -S harness/rehash.py {out}")
    print(f"exit: {code}")
    return code
