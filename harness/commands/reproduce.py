"""`harness reproduce BUNDLE [--repo PATH] [--campaign FILE] [--out DIR] [--force] [--order ORDER | --rounds N]
[--items N] [--sign KEY] [--fleet N [--address ADDR] [--timeout S] [--code ship|shared]]`:
re-run the campaign a bundle records, seal a new bundle with a reproduction receipt, and
say whether the claim held (harness/judge/reproduce.py has the rules); with --sign, sign the
new bundle, whose claim names the original's digest (harness/attest).

Exit codes: 0 reproduced, 8 not contradicted (the re-run could not tell), 9 partial (not the
same items), 7 not reproduced, 3 outputs differ, 4 a run failed; 1 the original does not
verify, 2 unusable input or refused (nothing was run; a key that cannot sign too), 10 a write
failed (a full disk: the line says what was kept)."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes
from harness.commands import error
from harness.render.text import term

HELP = "re-run a bundle's campaign into a new bundle and judge the claim against it"


def add_parser(sub) -> None:
    p = sub.add_parser("reproduce", help=HELP, description=HELP + ". Exit 0 reproduced, 8 not contradicted (too wide "
                       "to tell), 9 partial (other items), 7 not reproduced, 3 outputs differ, 4 a run failed, 1 the "
                       "original does not verify, 2 refused (nothing run), 10 a write failed.")
    p.add_argument("bundle", metavar="BUNDLE", help="the bundle whose claim to re-run")
    p.add_argument("--repo", default=".", metavar="PATH",
                   help="the repository the bundle's campaign_path is relative to (default: the current folder)")
    p.add_argument("--campaign", metavar="FILE",
                   help="the campaign file to run (default: the repository's, at the bundle's campaign_path); "
                        "never one inside a bundle")
    p.add_argument("--out", metavar="DIR", help="the new bundle (default: a fresh folder under ./out, "
                                                "out/NAME.reproduction, or out/NAME.reproduction-2 and so on when taken)")
    p.add_argument("--force", action="store_true", help="replace an existing bundle at --out")
    p.add_argument("--order", help="a cheaper order than the recorded one, e.g. AB (the scope line states the re-run's "
                                   "rounds against the original's)")
    p.add_argument("--rounds", metavar="N|auto", help="N rounds (or auto) instead of the recorded order or rounds")
    p.add_argument("--items", type=int, metavar="N", help="re-run N of the items, evenly spread (other items than the "
                                                           "original's make the verdict partial)")
    p.add_argument("--sign", metavar="KEY",
                   help="sign the new bundle with this OpenSSH Ed25519 private key; its claim names the original's "
                        "digest (the key is loaded before anything runs)")
    p.add_argument("--fleet", type=int, metavar="N",
                   help="re-run on N distinct Ray nodes at once (harness fleet), each judged as here; --out then holds "
                        "one reproduction per node")
    from harness.commands.fleet import add_cluster_options

    add_cluster_options(p, fleet_flag=True)
    p.set_defaults(func=main)


def main(args) -> int:
    if args.fleet is not None:
        from harness.commands.fleet import reproduce_on_fleet

        if args.sign or args.force:
            return error("reproduce", "--sign and --force do not go with --fleet: the reproductions land in a new "
                                      "--out; sign each one afterwards with `harness sign`")
        return reproduce_on_fleet(args)
    if args.address or args.timeout is not None or args.code != "ship":
        return error("reproduce", "--address, --timeout and --code go with --fleet N")
    from harness.bundle import read as bundlereader
    from harness.judge import reproduce
    from harness.plan import spec
    from harness.bundle.write import BundleError
    from harness.engine.progress import Progress
    from harness.engine.runner import Interrupted, PreflightError
    from harness.judge.verify import verify

    bundle, repo = Path(args.bundle), Path(args.repo)
    key = signed = None
    if args.sign:  # a key that cannot sign stops the reproduction before anything runs
        from harness.commands.sign import in_the_way, load_key

        key, code = load_key("reproduce", args.sign)
        if key is None:
            return code
    # The original must verify, then still match the repository (campaign file, golden
    # file, each revision's tree digest): otherwise the re-run would test other code.
    report = verify(bundle, repo=repo)
    if report.unusable:
        return error("reproduce", report.unusable)
    anchors = [p for p in report.problems if p.rule == "anchors"]
    inside = [p for p in report.problems if p not in anchors]
    for problem in inside:
        print(f"FAIL {term(problem)}")
    if inside:
        return error("reproduce", f"{bundle} does not verify; nothing to reproduce", code=outcomes.PROBLEMS)
    if anchors:
        return error("reproduce", f"{bundle} no longer matches {repo}: {anchors[0]}"
                     + (f" (and {len(anchors) - 1} more)" if len(anchors) > 1 else ""))
    original = bundlereader.load(bundle)
    try:
        with Progress() as progress:
            campaign = reproduce.campaign_for(original, repo, args.order, args.items, args.rounds,
                                              Path(args.campaign) if args.campaign else None)
            for line in reproduce.plan_lines(campaign):
                print(f"will run: {term(line)}", flush=True)
            out = Path(args.out) if args.out else reproduce.fresh_out(bundle)
            blocked = in_the_way("reproduce", out, args.force) if key is not None else 0
            if blocked:
                return blocked
            progress.note(f"reproduction: writing the new bundle to {out}")
            result = reproduce.reproduce(original, campaign, out, force=args.force, progress=progress)
    except PreflightError as exc:
        return error("reproduce", f"pre-flight: {exc.problems[0]}")
    except (reproduce.Refused, spec.SpecError, BundleError) as exc:
        return error("reproduce", exc)
    except Interrupted as exc:
        return error("reproduce", exc, code=outcomes.FAILED)
    if key is not None:  # right after sealing: "reproduced by" becomes a signed statement
        from harness.commands.sign import sign_sealed

        code, signed = sign_sealed("reproduce", key, result.out, force=args.force)
        if code:
            return code
    r = result.receipt
    if result.note:
        print(f"note: {term(result.note)}")
    print(term(f"original: {bundle} (digest {original.digest}) on {original.machine.text()}"))
    new = bundlereader.load(result.out)
    print(term(f"reproduction: {result.out} (digest {result.digest}) on {new.machine.text()}"))
    if signed:
        print(term(signed))
    print(f"machines: {term(r.machines.why)}")
    print(f"scope: {term(r.scope.note)}")
    print(f"outputs: {term(reproduce.outputs_text(r.outputs))}")
    for line in reproduce.divergence_lines(r.outputs.divergence):
        print(term(line))
    print(f"timing: {term(reproduce.timing_text(r.timing))}")
    if not new.comparison.complete:
        print(f"run: {term(new.comparison.reason)}")
    code = outcomes.REPRODUCTION_CODES[r.verdict]
    print(f"verdict: {r.verdict} (exit {code}): {term(r.reason)}")
    return code
