"""`harness compare BUNDLE`: one verdict line (then the short stage table), and an exit code a
CI job can act on: 0 improved or equal, 5 regressed, 6 inconclusive, 3 parity mismatch, 4
campaign failed, 2 unusable input. The bundle is verified first: one that does not verify gives
verify's exit code (1) and no verdict; `--no-verify` skips that and says so. `--metric NAME`
(cpu, memory, instructions) gates on that metric's own verdict instead of the wall's.

`harness compare A B`: two verified bundles of one campaign side by side (machine, speed-up and
interval, stage self CPU per variant) and whether their outputs agree (harness/judge/agreement.py).
A is the reference and B the bundle judged, in the order given (never by the bundles' own clocks,
which a forger sets): the exit code is B's verdict code, or 3 when the outputs differ.

`--trust FILE` (an allowed_signers file) also checks each bundle's attestation (harness/attest)
and prints who signed it; one that does not hold is exit 1, as a bundle that does not verify.
Without it, a bundle's attestation shows as present, not verified.

`--policy FILE`: the bundle judged by the reviewer's own rules (harness/judge/policy.py), not the
campaign file's: the verdict re-judged at the policy's band from the bundle's interval, the line
saying "judged by your policy FILE", exit 14 when the bundle breaks a rule of the policy; the
campaign's own verdict on the line after. `--metric instructions` exits 11 when the wall's
interval contradicts the counts (rules.contradicted).
"""
from __future__ import annotations

import argparse
import datetime as dt
from pathlib import Path

from harness import contract as C, outcomes
from harness.bundle.model import Comparison
from harness.commands import add_policy, error, load_policy
from harness.render.text import term

HELP = "print a bundle's verdict (or compare two); exit 0 improved/equal, 5 regressed, 6 inconclusive"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("compare", help=HELP,
                              description=HELP + ", 3 parity mismatch, 4 campaign failed, 2 unusable input.")
    p.add_argument("bundles", nargs="+", metavar="BUNDLE",
                   help="a bundle folder (or, with --no-verify, its data/comparison.json); two bundles of one "
                        "campaign: a table of both")
    p.add_argument("--no-verify", action="store_true",
                   help="print the verdict without verifying the bundle first (the output says so)")
    p.add_argument("--metric", choices=C.METRIC_NAMES, default=C.HEADLINE,
                   help="the verdict the exit code follows: the wall's (default), or another metric's own (thread "
                        "CPU, peak memory, instruction counts)")
    p.add_argument("--trust", metavar="FILE",
                   help="an allowed_signers file: check each bundle's attestation (BUNDLE.intoto.json) and show who "
                        "signed it; one that does not hold is exit 1, as a bundle that does not verify")
    add_policy(p)
    p.set_defaults(func=main)
    return p



def main(args) -> int:
    if len(args.bundles) > 2 or (len(args.bundles) == 2 and args.no_verify):
        return error("compare", "give one bundle, or two bundles without --no-verify", code=outcomes.UNUSABLE)
    if args.trust and args.no_verify:
        return error("compare", "--trust checks the signatures of verified bundles; drop --no-verify",
                     code=outcomes.UNUSABLE)
    if args.policy and (args.no_verify or len(args.bundles) == 2):
        return error("compare", "--policy judges one verified bundle: give one bundle, without --no-verify",
                     code=outcomes.UNUSABLE)
    rules, code = load_policy("compare", args.policy)
    if code:
        return code
    from harness.commands.sign import unusable_trust

    if unusable_trust("compare", args.trust):
        return outcomes.UNUSABLE
    if len(args.bundles) == 2:
        first, second = map(Path, args.bundles)
        return compare_two(first, second, trust=args.trust)
    return compare_one(Path(args.bundles[0]), args.no_verify, args.metric, trust=args.trust, rules=rules)


def _signers(paths, trust) -> tuple[int, list[str]]:
    """(0, a line per bundle with an attestation) or (exit code, nothing) after one error
    line: with --trust, an attestation that does not hold fails the comparison as verify
    would; without it, an attestation is only present, never trusted."""
    from harness.attest.check import check

    lines = []
    for n, path in enumerate(paths, 1):
        signed = check(path, trust)
        if signed.exit_code:
            return error("compare", f"{path}: {signed.line}", code=signed.exit_code), []
        if signed.short:
            lines.append(f"{f'bundle {n} ' if len(paths) > 1 else ''}{signed.short}")
    return outcomes.OK, lines


def _unverified(path: Path, consequence: str) -> int:
    """0 when the bundle verifies; else its first problems, one error line and verify's code."""
    from harness.judge.verify import verify

    report = verify(path)
    if report.exit_code:
        for line in report.problems[:5]:
            print(f"FAIL {term(line)}")
        error("compare", f"{report.unusable or f'{path} does not verify'}; {consequence}")
    return report.exit_code


def compare_two(a: Path, b: Path, trust=None) -> int:
    """Two bundles of one campaign: one table, stage CPU per variant, outputs agreement."""
    from harness.bundle import read
    from harness.judge import agreement
    from harness.render.text import stage_cells, stage_order, table, tcell, verdict_word

    for path in (a, b):
        code = _unverified(path, "no comparison")
        if code:
            return code
    code, signers = _signers((a, b), trust)
    if code:
        return code
    try:
        x, y = read.load(a), read.load(b)
    except MemoryError:
        return error("compare", f"{a} and {b} together need more memory than this process may use; compare each "
                                "alone (harness compare BUNDLE), or run it where it may use more", code=outcomes.UNUSABLE)
    apart = agreement.other_campaign(x.campaign, y.campaign)
    if apart:
        return error("compare", f"not two bundles of one campaign: {apart}", code=outcomes.UNUSABLE)
    same, why = agreement.same_class(x.machine, y.machine)
    outputs = agreement.compare_outputs(x.runs, y.runs, same)
    rows: list = []
    stages: dict = {}
    for n, d in enumerate((x, y), 1):
        c = d.comparison
        rows.append({"#": str(n), "bundle": tcell(d.path),
                     "started (UTC)": dt.datetime.fromtimestamp(d.runner.started_at, dt.timezone.utc)
                     .strftime("%Y-%m-%d %H:%M"),
                     "machine": tcell(d.machine.text()),
                     "rounds": str(d.campaign.rounds or len(d.campaign.order)),
                     "items": str(len(d.runner.items)),
                     "change [interval]": outcomes.speed(c.stats.paired.geomean_ratio, c.stats.paired.ci95),
                     "verdict": verdict_word(c)})
        found = c.stages
        for name in stage_order(found):  # the reference's order first: where its base time went
            stages.setdefault(name, {"stage": tcell(name)}).update(stage_cells(found[name], prefix=f"{n} "))
    print(table(rows))
    if stages:
        print("\nStage self CPU (s per run, mean over the stage runs; bundle 1's most base CPU first):\n")
        print(table(list(stages.values())))
    print(f"\nmachines: {term(why)}")
    for text in signers:
        print(term(text))
    print(f"items: {'the same' if x.runner.items == y.runner.items else 'NOT the same'} "
          f"({len(x.runner.items)} and {len(y.runner.items)})")
    from harness.judge.reproduce import divergence_lines, outputs_text

    print(f"outputs: {term(outputs_text(outputs))}")
    if outputs.mismatches:
        rows = agreement.divergence_across(outputs.mismatches[:5], x.arrays, y.arrays)
        for line in divergence_lines(rows):
            print(term(line))
    # The order given decides which bundle is judged; the bundles' clocks are theirs to set.
    code = outcomes.PARITY if not outputs.agree else outcomes.exit_code(y.comparison)
    why_code = "outputs differ" if not outputs.agree else "the verdict of bundle 2, the one judged (A B: B)"
    print(f"exit {code}: {why_code}")
    return code


def compare_one(target: Path, no_verify: bool, metric: str = "wall", trust=None, rules=None) -> int:
    from harness import rehash
    from harness.bundle import read
    from harness.render.text import stage_summary

    if not target.exists():
        return error("compare", f"{target}: no such bundle", code=outcomes.UNUSABLE)
    path = target if target.is_file() else target / C.COMPARISON
    if not no_verify:
        if target.is_file():
            return error("compare", f"{target}: give the bundle folder (a lone comparison.json cannot be verified; "
                         "--no-verify reads it unverified)", code=outcomes.UNUSABLE)
        code = _unverified(target, "no verdict (run `harness verify` for every problem)")
        if code:
            return code
    code, signers = _signers([target], trust) if not no_verify else (outcomes.OK, [])
    if code:
        return code
    try:
        document = read.read_json(path, limit=read.limit_of(C.COMPARISON))
    except read.BundleError as exc:
        return error("compare", exc, code=outcomes.UNUSABLE)
    if no_verify:  # unverified: at least the contract's shape, or no verdict
        problems = rehash.conform("comparison", document)
        if problems:
            where, problem = problems[0]
            return error("compare", f"{path}: {where}: {problem} (not a comparison.json of {C.FORMAT})",
                         code=outcomes.UNUSABLE)
    comparison = Comparison.of(document)  # verified, or of the contract's shape (conform)
    if metric != C.HEADLINE and comparison.metric(metric) is None:
        more = " (metrics: [wall, instructions] adds them)" if metric == "instructions" else ""
        return error("compare", f"--metric {metric}: this campaign measured no {C.METRIC[metric].title}{more}",
                     code=outcomes.UNUSABLE)
    if rules is not None:  # the reviewer's policy: its line and code, the campaign's own beside them
        from harness.judge import policy

        try:
            judgement = policy.judge(read.load(target), rules)
        except read.BundleError as exc:
            return error("compare", exc, code=outcomes.UNUSABLE)
        text, code = outcomes.judged_line(judgement, metric)
        print(term(text))
        print(term(judgement.summary))
        print(term(f"the campaign's own: {outcomes.line(comparison, metric=metric)}"))
    else:
        # The line shows the code this command exits with: with --metric NAME, that metric's.
        print(term(outcomes.line(comparison, metric=metric)) + (" [not verified: --no-verify]" if no_verify else ""))
        code = outcomes.exit_code(comparison, metric)
    for text in signers:
        print(term(text))
    for text in stage_summary(comparison):
        print(text)
    return code
