"""`harness bisect CAMPAIGN --good REV --bad REV [--find faster|slower] [--budget S] [--band B]
[--out DIR]`: the first commit between good (older) and bad (newer) that made the campaign
slower, or faster, against good, each step a sequential campaign sealed as its own bundle
(OUT/steps/NN-<sha12>/), the receipt OUT/bisect.json naming the culprit or saying why it cannot
(harness/judge/bisect.py runs it; rules.bisect_search is the rule; `harness verify OUT` and
`python -S harness/rehash.py OUT` re-derive it). What it looks for is the ends' own verdict
unless --find says; where a step stays inconclusive it prints the commands to run next.

Exit codes: 0 a culprit named, 12 cannot tell (spread over several commits, a step inconclusive,
the history not monotone), 13 nothing to find (bad is not slower, or faster, than good), 3 a
step's outputs differ, 4 a step failed or the search stopped (interrupted, a pre-flight problem),
2 usage or input error (nothing run)."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes
from harness.commands import error

HELP = "find the first commit between a good and a bad revision that made a campaign slower, or faster"


def add_parser(sub) -> None:
    p = sub.add_parser("bisect", help=HELP, description=HELP + ": each step an interleaved campaign that stops when "
                       "decided, sealed as its own bundle; OUT/bisect.json names the culprit. Exit 0 culprit named, 12 "
                       "cannot tell, 13 nothing to find, 3 outputs differ, 4 a step failed or stopped, 2 unusable "
                       "input.")
    p.add_argument("campaign", help="campaign YAML file (its target is the repository searched)")
    p.add_argument("--good", "--old", dest="good", required=True, metavar="REV",
                   help="the older revision, before the change (an ancestor of --bad along first parents)")
    p.add_argument("--bad", "--new", dest="bad", required=True, metavar="REV",
                   help="the newer revision, after the change (slower, or faster, than --good)")
    p.add_argument("--find", choices=("faster", "slower"),
                   help="look for the commit that made it faster, or slower (default: whichever the ends' own "
                        "verdict says)")
    p.add_argument("--budget", type=float, metavar="S",
                   help="seconds per step, the cap of its sequential rounds (default: 120, or the campaign's "
                        "budget_s when larger); a step stops sooner when its look decides")
    p.add_argument("--band", type=float, metavar="SHARE",
                   help="every step's equal band, e.g. 0.25 for 25%% (default: the campaign's verdict.threshold for "
                        "good against bad, then half the change that step measured, in log space, for the probes)")
    p.add_argument("--out", metavar="DIR", help="a new folder for the steps and bisect.json (default: "
                                                "out/<campaign name>.bisect)")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.engine.progress import Progress
    from harness.judge import bisect
    from harness.plan import spec

    try:
        plan = bisect.plan(args.campaign, args.good, args.bad, args.find or "either", args.band, args.budget)
        out = Path(args.out) if args.out else Path("out") / f"{plan.campaign.name}.bisect"
        bisect.claim_out(out)
    except (spec.SpecError, bisect.BisectError) as exc:
        return error("bisect", exc)
    auto = "" if plan.campaign.budget_s is not None else ", `rounds: auto` overriding the file's"
    looking = {"either": "the commit that made it faster or slower, as good against bad says",
               "slower": "the commit that made it slower", "faster": "the commit that made it faster"}[plan.find]
    band = (f"band {100 * plan.band:g}% every step" if plan.band is not None else
            f"band {100 * plan.threshold:g}% for good against bad, then half the change it measured for the probes")
    print(f"bisect: {len(plan.commits)} first-parent commit(s) {plan.good[:12]}..{plan.bad[:12]} in {plan.repo}; "
          f"looking for {looking}; every probe against good; {band}; at most {plan.budget_s:g} s a step{auto}")
    receipt = bisect.run(plan, out, say=lambda line: print(line, flush=True), progress_for=Progress)
    code = outcomes.BISECT_CODES[receipt.ending]
    if receipt.culprit:
        print(f"culprit: {receipt.culprit}")
    else:
        print(f"culprit: none ({receipt.ending})")
    print(f"reason: {receipt.reason}")
    for line in bisect.next_steps(plan, receipt, args.campaign, out):
        print(line)
    print(f"receipt: {out / 'bisect.json'} ({len(receipt.steps)} step bundle(s) under {out / 'steps'})")
    print(f"check it: harness verify {out}   or   python -S harness/rehash.py {out}")
    print(f"exit: {code}")
    return code
