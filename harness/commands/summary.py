"""`harness summary BUNDLE [--long] [--format FORM] [--trust FILE]`: the claim a pull request
quotes, from a bundle that verifies (harness/render/summary.py says what each form holds):
short Markdown by default, `--long` adding the run and stage tables and every warning; FORM
`github` for $GITHUB_STEP_SUMMARY (within 1 MiB), `comment` for a pull-request comment updated
in place (within 65,536 characters, behind an HTML marker naming the campaign), `json` and
`benchmark-action` for dashboards, `text` for a terminal or a CI log, `report` for the bundle's
REPORT.md section. `--policy FILE` opens the claim with the bundle judged by the reviewer's own
rules (harness/judge/policy.py; the markdown, github, comment, json and text forms). Exit 0, 1
the bundle does not verify, or with --trust its signature does not hold (nothing printed to
paste), 2 unusable input (a trust file or a policy that cannot be used too), 14 the bundle
breaks a rule of the policy (the claim is printed, saying so)."""
from __future__ import annotations

from pathlib import Path

from harness import contract as C, outcomes
from harness.commands import add_policy, error, load_policy

HELP = "print a verified bundle's claim for a pull request: Markdown, a job summary, a PR comment or JSON"


def add_parser(sub) -> None:
    p = sub.add_parser("summary", help=HELP, description=HELP + ".")
    p.add_argument("bundle", metavar="BUNDLE")
    p.add_argument("--trust", metavar="FILE", help="an allowed_signers file: name who signed the bundle")
    p.add_argument("--long", action="store_true",
                   help="add the runs in execution order, the stage CPU table, every warning in full and cleanup")
    add_policy(p)
    # FORM is one of render/summary.py's FORMS, the one list (checked in main: the renderer loads lazily)
    p.add_argument("--format", default="markdown", metavar="FORM",
                   help="markdown (default), github ($GITHUB_STEP_SUMMARY, at most 1 MiB), comment (a pull-request "
                        "comment, at most 65,536 characters, with a marker to update it in place), json, "
                        "benchmark-action (github-action-benchmark's customSmallerIsBetter), text (what `harness "
                        "compare` prints, for a terminal or a CI log), report (the bundle's REPORT.md section)")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.bundle import read
    from harness.judge.survey import survey
    from harness.render import summary

    from harness.commands.sign import unusable_trust

    if unusable_trust("summary", args.trust):
        return outcomes.UNUSABLE
    rules, code = load_policy("summary", args.policy)
    if code:
        return code
    if args.format not in summary.FORMS:
        return error("summary", f"--format {args.format}: no such form; give one of {', '.join(summary.FORMS)}")
    if rules is not None and args.format not in summary.JUDGED_FORMS:
        return error("summary", f"--policy: the {args.format} form is the bundle's own claim; give --format "
                                f"{', '.join(summary.JUDGED_FORMS)} to say your policy's judgement")
    bundle = Path(args.bundle)
    entry = survey([bundle], Path(args.trust) if args.trust else None)[0]
    if entry.problems:
        return error("summary", f"{bundle} does not verify ({entry.problems[0]}); there is no claim to post",
                     code=outcomes.PROBLEMS)
    if entry.earlier is not None:  # a claim to post is judged by today's rules; REPORT.md shows it as earlier
        from harness import legacy

        return error("summary", f"{bundle}: {legacy.refusal(entry.earlier, str(bundle), C.FORMAT)}",
                     code=outcomes.PROBLEMS)
    if entry.attestation_code:  # with --trust: a signature that does not hold is no claim to post either
        return error("summary", f"{bundle}: {entry.attestation}", code=entry.attestation_code)
    judgement = None
    if rules is not None:
        from harness.judge import policy

        judgement = policy.judge(entry.bundle, rules)
    try:
        print(summary.form(args.format, entry.bundle, args.bundle, entry.signer, args.long, judgement), end="")
    except read.BundleError as exc:
        return error("summary", exc, code=outcomes.UNUSABLE)
    return outcomes.REFUSED if judgement is not None and judgement.refused else outcomes.OK
