"""`harness calibrate CAMPAIGN [--rounds N] [--out DIR] [-o FILE] [--force]`: run the campaign
base against base (the one case where one SHA on both sides is allowed), seal that A-vs-A
bundle, and write the machine's noise floor: the largest change the 95% interval of a
no-change ratio allowed, max(1 - lo, hi - 1). A campaign pins the file
(`noise_floor: {path, sha256}`); its runs then copy it into the bundle and no claim smaller
than the floor is "improved" or "regressed" (both checkers re-derive it).

Exit codes: 0 written, 4 the calibration campaign failed or gave a floor no campaign could pin
(rules.noise_floor_problem: fewer than 5 rounds, or wider than contract.MAX_BAND), 2 usage,
input or pre-flight, 10 a write failed (a full disk; the line says what was kept)."""
from __future__ import annotations

import json
from pathlib import Path

from harness import contract as C
from harness import rules as R
from harness.plan import spec
from harness import outcomes as verdict
from harness.commands import error

HELP = "run a campaign base against base and write its noise floor for campaigns to pin"


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help=HELP, description=HELP + ".")
    p.add_argument("campaign", help="campaign YAML file")
    p.add_argument("--rounds", metavar="N|auto", help="rounds instead of the YAML's order or rounds")
    p.add_argument("--out", help="the A-vs-A bundle (default: out/<campaign name>.calibration)")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="the noise-floor file (default: <campaign name>.noise-floor.json beside the YAML)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at --out and FILE")
    p.set_defaults(func=main)


floor_of = R.noise_floor_of  # the farthest end of an A-vs-A interval from 1: the contract's, which the checkers hold


def main(args) -> int:
    from harness import records
    from harness.bundle.write import BundleError
    from harness.files import atomic_write_bytes, read_json, sha256_bytes
    from harness.engine.progress import Progress
    from harness.engine.runner import Interrupted, PreflightError, Runner

    try:
        base = spec.load(args.campaign).base.rev
        campaign = spec.load(args.campaign, spec.parse_overrides(candidate=base, rounds=args.rounds))
    except spec.SpecError as exc:
        return error("calibrate", exc)
    out = Path(args.out) if args.out else Path("out") / f"{campaign.name}.calibration"
    target = Path(args.output) if args.output else campaign.source.parent / f"{campaign.name}.noise-floor.json"
    if target.exists() and not args.force:
        return error("calibrate", f"{target} already exists (--force replaces it)")
    try:
        with Progress() as progress:
            outcome = Runner(campaign, out.absolute(), force=args.force, progress=progress, calibration=True).run()
            assert outcome is not None  # not check_only: run() seals a bundle
    except PreflightError as exc:
        return error("calibrate", *(f"pre-flight: {line}" for line in exc.problems))
    except (spec.SpecError, BundleError) as exc:
        return error("calibrate", exc)
    except Interrupted as exc:
        return error("calibrate", exc, code=verdict.FAILED)
    result = outcome.comparison  # what the runner derived and sealed
    paired = result.stats.paired
    floor = floor_of(paired.ci95)
    from harness.render.text import term

    print(term(f"bundle: {outcome.out} (digest {outcome.digest})"))
    print(term(verdict.line(result)))
    if not result.complete or floor is None or paired.ci95 is None or paired.geomean_ratio is None:
        return error("calibrate", f"no noise floor: {result.reason or result.stats.verdict_reason}",
                     code=verdict.FAILED)
    environment = read_json(outcome.out / C.ENVIRONMENT)
    doc = records.to_json(records.noise_floor(
        campaign=campaign.name, bundle_digest=outcome.digest, machine=records.MachineClass.of(environment),
        started_at=records.RunnerReceipt.from_json(read_json(outcome.out / C.RUNNER)).started_at,
        rounds=result.stats.rounds.n, ratio=paired.geomean_ratio, ci95=paired.ci95, floor=floor))
    refused = R.noise_floor_problem(doc)  # what a campaign could not pin: the contract's decision rule
    if refused:
        return error("calibrate", f"no noise floor written: {refused}", code=verdict.FAILED)
    raw = (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode()
    atomic_write_bytes(target, raw)  # a full disk: WriteFailed, one line (cli), no half-written floor
    print(f"noise floor: {100 * floor:.2f}% (A-vs-A {paired.geomean_ratio:.4f} "
          f"[{paired.ci95[0]:.4f}, {paired.ci95[1]:.4f}] over {result.stats.rounds.n} rounds) -> {target}")
    print(f"pin it in {campaign.source.name}:\nnoise_floor: {{path: {target.name}, sha256: {sha256_bytes(raw)}}}")
    return verdict.OK
