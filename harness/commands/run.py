"""`harness run CAMPAIGN [--out DIR] [--force]`: run a campaign and seal its bundle.

Exit codes: 0 complete with parity, 3 parity mismatch, 4 a run failed or timed out (or
the campaign was interrupted), 2 usage or input error (then no bundle is written)."""
from __future__ import annotations

import sys
from pathlib import Path

from harness import spec
from harness.bundle import BundleError
from harness.progress import Progress
from harness.stats import verdict_line


def add_parser(sub) -> None:
    p = sub.add_parser("run", help="run an A/B/B/A campaign and seal its evidence bundle")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--out", help="bundle directory to create (default: out/<campaign name>)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at --out")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.runner import Interrupted, Runner

    progress = Progress()
    try:
        campaign = spec.load(args.campaign)
        out = Path(args.out) if args.out else Path("out") / campaign.name
        outcome = Runner(campaign, out.absolute(), force=args.force, progress=progress).run()
    except (spec.SpecError, BundleError) as exc:
        progress.close()
        print(f"harness: error: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        progress.close()
        print(f"harness: {exc}", file=sys.stderr)
        return 4
    progress.close()
    result = outcome.comparison
    print(f"bundle: {outcome.out}")
    print(f"status: {result['status']}" + (f" ({result['reason']})" if result["reason"] else ""))
    wall = result["wall"]
    if wall["speedup"] is not None:
        print(f"wall: base {wall['base_mean_s']:.3f} s, candidate {wall['candidate_mean_s']:.3f} s, "
              f"speedup {wall['speedup']:.3f}x ({wall['saving_pct']:.1f}% saved)")
    p = result["parity"]
    print(f"parity: {'identical' if p['identical'] else 'NOT identical'} ({p['fields_identical']}/"
          f"{p['fields_compared']} fields, {p['items']} items, {p['error_returns']} recorded errors)")
    golden = p.get("golden")
    if golden:
        subset = golden["items_checked"] < golden["items"]
        print(f"golden: {'identical' if golden['identical'] else 'DIFFERS'} on {golden['items_checked']} of "
              f"{golden['items']} golden items" + (" (this campaign runs a subset)" if subset else ""))
    print(verdict_line(result))
    print(f"digest: {outcome.digest}")
    return outcome.exit_code
