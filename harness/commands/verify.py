"""`harness verify BUNDLE [--repo PATH] [--original BUNDLE] [--trust FILE [--attestation FILE]] [--policy FILE]
[--legacy]`: exit 0 intact (and, with --trust, its signature verified), 1 a problem (each on its own
line; a signature that does not hold is one), 2 unusable input (a trust file or a policy that cannot
be used too), 14 intact but breaking a rule of the reviewer's policy (--policy: harness/judge/policy.py;
the bundle's verdict re-judged by it is shown, never gated on).
Without --trust an attestation beside the bundle is reported present, never trusted. A bundle
of an earlier generation is refused (exit 2, with the commands that check it), or with --legacy
judged by that generation's frozen checker and shown as such (harness/legacy)."""
from __future__ import annotations

from harness import outcomes
from harness.commands import add_policy, error, load_policy
from harness.render.text import term


def add_parser(sub) -> None:
    p = sub.add_parser("verify", help="re-hash a bundle, check its record rules and re-derive its comparison")
    p.add_argument("bundle", help="bundle directory")
    p.add_argument("--repo", metavar="PATH",
                   help="also check the bundle against this repository: its campaign and golden files, "
                        "and each revision's tree rebuilt from its commit")
    p.add_argument("--max-array-bytes", type=int, metavar="N", default=None,
                   help="decompressed bytes the stored arrays may declare, all together; checked from their headers "
                        "before any is inflated (default 4 GiB)")
    p.add_argument("--original", metavar="BUNDLE",
                   help="for a bundle `harness reproduce` made: re-derive its reproduction receipt from it and this "
                        "original bundle")
    p.add_argument("--trust", metavar="FILE",
                   help="an allowed_signers file (principal and ssh-ed25519 key per line, as `ssh-keygen -Y verify` "
                        "and git use): also check the bundle's attestation and say who signed it")
    p.add_argument("--attestation", metavar="FILE",
                   help="the attestation to check (default: BUNDLE.intoto.json beside the bundle)")
    add_policy(p)
    p.add_argument("--legacy", action="store_true",
                   help="a bundle of an earlier generation of this harness: check it under that generation's own "
                        "frozen rules (its rehash.py and contract.py, shipped in harness/legacy), shown as such with "
                        "their known holes, never as today's; without it such a bundle is refused")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.attest.check import FAILED, check
    from harness.judge.verify import verify

    if args.attestation and not args.trust:
        return error("verify", "--attestation names the attestation --trust checks; give --trust FILE",
                     code=outcomes.UNUSABLE)
    rules, code = load_policy("verify", args.policy)
    if code:
        return code
    report = verify(args.bundle, repo=args.repo, max_array_bytes=args.max_array_bytes, original=args.original,
                    legacy=args.legacy)
    if report.frozen is not None:
        return legacy_report(args, report)
    if report.unusable:
        return error("verify", report.unusable, code=outcomes.UNUSABLE)
    if report.bisect is not None or (report.problems and rehash_is_bisect(args.bundle)):
        if rules is not None:
            return error("verify", "--policy judges a bundle; a bisect folder's step bundles are judged one by one "
                                   "(harness verify STEP --policy FILE)", code=outcomes.UNUSABLE)
        return bisect_report(args, report)
    # The signature (harness/attest): only a bundle that verifies is ever "signed by" (a
    # repository that moved on, [anchors], leaves the bundle itself intact).
    intact = not [p for p in report.problems if p.rule != "anchors"]
    signed = check(args.bundle, args.trust, args.attestation, intact=intact)
    for problem in report.problems:
        print(f"FAIL {term(problem)}")
    if report.problems:
        if signed.exit_code == outcomes.UNUSABLE:
            error("verify", signed.line)
        elif signed.line:
            print(f"FAIL {term(signed.line)}" if signed.state == FAILED else term(signed.line))
        anchors_only = all(p.rule == "anchors" for p in report.problems)
        print(f"{term(args.bundle)}: {len(report.problems)} problem(s); "
              + ("the bundle itself is intact, but the repository no longer holds what it ran (a file named above "
                 "was edited since): check out the commit the bundle was made at, or re-run the campaign"
                 if anchors_only else "do not trust this bundle"))
        return outcomes.PROBLEMS
    print(f"OK {term(args.bundle)}: {report.files} payload files and {report.arrays} arrays re-hashed, every file and "
          "field "
          f"of the contract, record rules hold, campaign.yaml agrees, comparison re-derived; status {report.status}; "
          f"digest {report.digest}")
    for note in report.notes + list(signed.notes):
        print(f"note: {term(note)}")
    if signed.exit_code == outcomes.UNUSABLE:
        return error("verify", signed.line, code=outcomes.UNUSABLE)
    if signed.state == FAILED:
        print(f"FAIL {term(signed.line)}")
        print(f"{term(args.bundle)}: the bundle is intact, but its attestation does not hold; do not trust its "
              "signature")
        return outcomes.PROBLEMS
    if signed.line:
        print(term(signed.line))
    if rules is not None:  # intact: now judged by the reviewer's own rules
        return judged(args.bundle, rules)
    return outcomes.OK


def judged(bundle, rules) -> int:
    """A verified bundle against the reviewer's policy: the judgement and its verdict line; exit
    14 (one FAIL line per rule it breaks) when the bundle breaks the policy, else 0 (verify judges
    the evidence, not the verdict)."""
    from harness.bundle import read
    from harness.judge import policy

    try:
        judgement = policy.judge(read.load(bundle), rules)
    except read.BundleError as exc:
        return error("verify", exc, code=outcomes.UNUSABLE)
    for refusal in judgement.refused:
        print(f"FAIL policy {term(rules.path)}: {term(refusal)}")
    print(term(judgement.summary))
    print(term(outcomes.judged_line(judgement)[0]))
    return outcomes.REFUSED if judgement.refused else outcomes.OK


def legacy_report(args, report) -> int:
    """A bundle judged by its generation's frozen checker: that checker's lines, under a header
    that says whose rules they are, and the generation's known holes (harness/legacy.report);
    with --trust, its signature over the bundle's digest (the signed claim is today's reader's
    to re-derive, and today's reader does not read an earlier generation)."""
    from harness import contract as C, legacy
    from harness.attest.check import FAILED, check

    assert report.frozen is not None and report.earlier is not None
    code, out, err = legacy.report(report.earlier, report.frozen, args.bundle, C.FORMAT)
    for line in out:
        print(term(line))
    for line in err:
        error("verify", line)
    if code == outcomes.UNUSABLE:
        return code
    signed = check(args.bundle, args.trust, args.attestation, intact=code == outcomes.OK, rederive=False)
    if signed.exit_code == outcomes.UNUSABLE:
        return error("verify", signed.line, code=outcomes.UNUSABLE)
    if signed.state == FAILED:
        print(f"FAIL {term(signed.line)}")
        return outcomes.PROBLEMS
    for note in signed.notes:
        print(f"note: {term(note)}")
    if signed.line:
        print(term(signed.line))
    return code


def rehash_is_bisect(path) -> bool:
    from harness import rehash

    return rehash.is_bisect(str(path))


def bisect_report(args, report) -> int:
    """A bisect folder (harness bisect's OUT): its problems, or the OK line, the culprit and
    the rule's reason."""
    from harness import rehash
    if args.trust:
        return error("verify", "--trust checks a bundle's signature; a bisect folder's step bundles are not signed "
                               "(verify a step bundle with --trust)", code=outcomes.UNUSABLE)
    for problem in report.problems:
        print(f"FAIL {problem}")
    if report.problems:
        print(f"{args.bundle}: {len(report.problems)} problem(s); do not trust this bisect")
        return outcomes.PROBLEMS
    check = rehash.Check(str(args.bundle))
    check.files, check.arrays, check.digest = report.files, report.arrays, report.digest
    print(rehash.bisect_line(args.bundle, check, report.bisect))
    print(f"reason: {rehash.show(report.bisect['reason'])}")
    for note in report.notes:
        print(f"note: {note}")
    return outcomes.OK
