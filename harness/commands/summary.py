"""`harness summary BUNDLE [--trust FILE]`: the Markdown section a pull request quotes, from a
bundle that verifies (harness/render/summary.py says what it holds). Exit 0, 1 the bundle does
not verify, or with --trust its signature does not hold (nothing printed to paste), 2 unusable
input (a trust file that cannot be used too)."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes
from harness.commands import error

HELP = "print a verified bundle's claim as a Markdown section for a pull request"


def add_parser(sub) -> None:
    p = sub.add_parser("summary", help=HELP, description=HELP + ".")
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--trust", metavar="FILE", help="an allowed_signers file: name who signed the bundle")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.bundle import read
    from harness.judge.survey import survey
    from harness.render import summary

    from harness.commands.sign import unusable_trust

    if unusable_trust("summary", args.trust):
        return outcomes.UNUSABLE
    bundle = Path(args.bundle)
    entry = survey([bundle], Path(args.trust) if args.trust else None)[0]
    if entry.problems:
        return error("summary", f"{bundle} does not verify ({entry.problems[0]}); there is no claim to post",
                     code=outcomes.PROBLEMS)
    if entry.attestation_code:  # with --trust: a signature that does not hold is no claim to post either
        return error("summary", f"{bundle}: {entry.attestation}", code=entry.attestation_code)
    try:
        print(summary.render(entry.bundle, args.bundle, entry.signer), end="")
    except read.BundleError as exc:
        return error("summary", exc, code=outcomes.UNUSABLE)
    return outcomes.OK
