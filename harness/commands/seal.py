"""`harness seal STAGING --out OUT [--force]`: seal the staging folder a campaign kept when a
write failed (a full disk while its bundle was sealed or published), once there is room again.

comparison.json is re-derived from the kept run records (harness/engine/reseal.py), the bag is
sealed, verified, and only then published at OUT. Refused, one line, where that would not be
sound: a folder that is not a staging folder of this harness, one still being written, one whose
campaign stopped before its runs ended, records that cannot be read in full.

Exit codes: as `harness run` (0 complete, outputs agree, 3 parity mismatch, 4 campaign failed);
2 refused (nothing published), 1 the sealed folder does not verify (not published), 10 a write
failed again (the folder is kept)."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes
from harness.commands import error

HELP = "seal the staging folder a campaign kept when a write failed (a full disk), into a verified bundle at --out"


def add_parser(sub) -> None:
    p = sub.add_parser("seal", help=HELP, description=HELP + ". Exit as `harness run` (0, 3, 4); 2 refused, 1 does "
                       "not verify once sealed, 10 a write failed again.")
    p.add_argument("staging", metavar="STAGING", help="the folder the failed campaign's line names (OUT.partial-PID)")
    p.add_argument("--out", required=True, metavar="DIR", help="where the sealed bundle goes")
    p.add_argument("--force", action="store_true",
                   help="replace an existing bundle at --out (only a bundle of this harness is replaced)")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.bundle import write as bundle
    from harness.engine import reseal
    from harness.files import WriteFailed
    from harness.judge.verify import verify

    root, out = Path(args.staging).absolute(), Path(args.out).absolute()
    try:
        reseal.check_idle(root)
        claim = bundle.claim_output(out, args.force)
        with bundle.OutputLock(out):
            sealed = reseal.seal_kept(root, out)
            report = verify(root)
            if report.exit_code:
                why = report.unusable or f"{len(report.problems)} problem(s), the first: {report.problems[0]}"
                return error("seal", f"{root} does not verify once sealed ({why}); it was not published and stays "
                                     "where it is", code=outcomes.PROBLEMS)
            where, note = sealed.staging.publish(claim, sealed.digest)
    except (reseal.Unsealable, bundle.BundleError) as exc:
        return error("seal", exc)
    except WriteFailed as exc:
        kept = exc if exc.fix else exc.with_fix(f"the runs are kept in {root}",
                                                f"free space, then `harness seal {root} --out {out}` again")
        return error("seal", kept.line(), code=outcomes.WRITE_FAILED)
    result = sealed.comparison  # re-derived, sealed and verified above
    if note:
        print(f"note: {note}")
    print(f"bundle: {where} (sealed from the {sealed.runs} run(s) kept in {root})")
    print(f"status: {result.status}" + (f" ({result.reason})" if result.reason else ""))
    print(outcomes.line(result, exit_word="harness compare would exit"))
    print(f"digest: {sealed.digest}")
    code = outcomes.run_code(result)
    print(f"exit: {code} ({outcomes.RUN_EXIT_MEANING[code]})")
    return code
