"""`harness selftest tamper [--bundle DIR [--original DIR]] [--repo PATH] [--only TEXT]`: the
checkers' proof. Three suites, each mutation re-sealed as a forger would and put to both
checkers (`harness verify` and the standard-library `python -S harness/rehash.py`):
  the hand-written forgeries (harness/selftest/tamper.py: every file flipped and deleted, links,
  FIFOs, traps, one or more forgery per record rule), one line each;
  the field walk (fieldwalk.py: every declared field present, every mutation its type allows);
  the closed-world walk (closedworld.py: an undeclared key at every level, an undeclared file in
  every folder, an extra bag-info line and manifest row, older schema ids and format).
Then the coverage per record type (mutations / refused / free) of each suite. Without --bundle,
a demo_instructions bundle (instruction records) and a reproduction of the demo bundle (its
receipt walked with verify --original) are made first. Exit 0 only when every bindable mutation
is refused by the checkers its rule names (and each untouched bundle passes both); 1
otherwise; 2 unusable input.
`harness selftest scale`: a demo campaign of ABBA x 8 runs, and a bundle of about 10,000
stored arrays verified by both checkers, with their times.
`harness selftest noise [--campaigns N] [--effect-campaigns N] [--rounds N] [--effect F] [--quiet-only | --load-only]
[--launch fresh|zygote|duet]`: A-vs-A and
known-effect campaigns, quiet and under a load generator it starts and stops itself, with
false claims, coverage and detections (harness/selftest/noise.py)."""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from harness import contract as C
from harness.bundle.model import Comparison
from harness.clone import clone_file


def add_parser(sub) -> None:
    p = sub.add_parser("selftest", help="self-checks; 'tamper' runs the tampering mutation suite on a bundle")
    p.add_argument("suite", choices=["tamper", "scale", "noise"], help="which self-check to run")
    p.add_argument("--bundle", help="a sealed bundle to mutate copies of (default: run the demo campaign)")
    p.add_argument("--only", help="tamper: run only the mutations whose name holds this text")
    p.add_argument("--repo", help="tamper: the repository the bundle was made in, for the fields only the "
                                  "repository binds (default: the demo's own; with --bundle, skipped)")
    p.add_argument("--original", metavar="BUNDLE",
                   help="tamper: with --bundle a reproduction bundle, the bundle it re-ran (its receipt's other "
                        "side is walked with verify --original)")
    p.add_argument("--campaigns", type=int, default=3, metavar="N",
                   help="noise: campaigns per kind and condition (default 3)")
    p.add_argument("--rounds", type=int, metavar="N",
                   help="noise: rounds per campaign (default: the campaigns' default, rounds: auto)")
    p.add_argument("--effect-campaigns", type=int, metavar="N",
                   help="noise: known-effect campaigns per condition (default: as many as --campaigns)")
    p.add_argument("--effect", type=float, default=0.05, metavar="F",
                   help="noise: the known effect, the candidate doing 1/(1+F) of the work (default 0.05)")
    p.add_argument("--work", type=int, default=600_000, metavar="N", help="noise: loop length per item")
    p.add_argument("--quiet-only", action="store_true", help="noise: skip the campaigns under load")
    p.add_argument("--launch", choices=["fresh", "zygote", "duet"], default="fresh",
                   help="noise: how each run's process is made (campaign.md 'Launch', 'Duet'; default fresh)")
    p.add_argument("--load-only", action="store_true",
                   help="noise: only the campaigns under load (claims are held to the work ratio)")
    p.set_defaults(func=main)


DEMO = "campaigns/demo.yaml"  # in a clone: harness.clone.clone_file finds it or says why not
DEMO_INSTRUCTIONS = "campaigns/demo_instructions.yaml"


def _demo_variant(out: Path, **changes) -> tuple[Comparison, float]:
    """Run the demo campaign with some top-level keys or workload params changed."""
    import time

    import yaml

    from harness.plan import spec
    from harness.engine.runner import Runner

    demo = clone_file(DEMO, "selftest")
    data = yaml.safe_load(demo.read_bytes())
    data["workload"]["params"].update(changes.pop("params", {}))
    data.update(changes)
    data.pop("golden", None)  # other items than the golden file's
    campaign = spec.parse(data, demo, yaml.safe_dump(data, sort_keys=False).encode())
    t0 = time.monotonic()
    outcome = Runner(campaign, out).run()
    assert outcome is not None  # not check_only: run() seals a bundle
    return outcome.comparison, time.monotonic() - t0


def _timed_checks(bundle: Path) -> tuple[float, int, float, int]:
    import subprocess
    import time

    from harness.judge.verify import verify

    t0 = time.monotonic()
    report = verify(bundle)
    t_verify = time.monotonic() - t0
    t0 = time.monotonic()
    rehash = subprocess.run([sys.executable, "-S", str(Path(__file__).resolve().parents[1] / "rehash.py"),
                             str(bundle)], capture_output=True, text=True)
    return t_verify, report.exit_code, time.monotonic() - t0, rehash.returncode


def _scale() -> int:
    with tempfile.TemporaryDirectory(prefix="abba-scale-") as tmp:
        result, took = _demo_variant(Path(tmp) / "abba8", order="ABBA" * 8,
                                     timeouts={"run_s": 120, "campaign_s": 1800})
        tv, rv, tr, rr = _timed_checks(Path(tmp) / "abba8")
        print(f"demo campaign, order ABBA x 8 ({len(result.runs)} runs): {result.status} in {took:.1f} s; "
              f"verify {tv:.2f} s (exit {rv}), rehash.py {tr:.2f} s (exit {rr})")
        ok = result.complete and rv == rr == 0
        result, took = _demo_variant(Path(tmp) / "many", order="AB", slots=1,
                                     params={"items": 4999, "length": 64, "window": 4})
        files = sum(1 for p in (Path(tmp) / "many").rglob("*") if p.is_file())
        tv, rv, tr, rr = _timed_checks(Path(tmp) / "many")
        print(f"bundle of {files} files (demo, 5,000 items, order AB, made in {took:.1f} s): {result.status}; "
              f"verify {tv:.2f} s (exit {rv}), rehash.py {tr:.2f} s (exit {rr})")
        ok = ok and result.complete and rv == rr == 0
    return 0 if ok else 1


def _campaign(tmp: Path, rel: str, name: str, **overrides) -> Path | None:
    """A bundled campaign run into tmp/name (None, and one line, when it did not complete)."""
    from harness.engine.runner import PreflightError, Runner
    from harness.plan import spec

    campaign_path = clone_file(rel, "selftest")
    out = tmp / name
    print(f"selftest: running {campaign_path} into {out}", file=sys.stderr)
    try:
        outcome = Runner(spec.load(campaign_path, overrides), out).run()
        assert outcome is not None  # not check_only: run() seals a bundle
    except (spec.SpecError, OSError, PreflightError) as exc:
        print(f"harness selftest: error: {rel}: {exc}", file=sys.stderr)
        return None
    result = outcome.comparison
    if not result.complete:
        print(f"harness selftest: error: {rel} {result.status}: {result.reason}", file=sys.stderr)
        return None
    return out


def _reproduction(tmp: Path, original: Path, repo: Path | None) -> Path | None:
    """`harness reproduce` of a bundle, into tmp (None, and one line, when it cannot be made)."""
    from harness.bundle import read
    from harness.judge import reproduce
    from harness.plan import spec

    if repo is None:
        print("harness selftest: note: not in a git clone: no reproduction bundle to walk", file=sys.stderr)
        return None
    out = tmp / "reproduction"
    print(f"selftest: reproducing {original} into {out}", file=sys.stderr)
    try:
        bundle = read.load(original)
        campaign = reproduce.campaign_for(bundle, repo, None, None)
        reproduce.reproduce(bundle, campaign, out)
    except (reproduce.Refused, spec.SpecError, read.BundleError, OSError) as exc:
        print(f"harness selftest: error: reproduce {original}: {exc}", file=sys.stderr)
        return None
    return out


def _short(text: str, width: int = 80) -> str:
    """A checker's line (it may quote a bundle) as one bounded terminal line."""
    from harness.render.text import term

    text = re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1...", term(text))  # long digests
    return text if len(text) <= width else text[:width - 3] + "..."


def _line(result) -> str:
    def part(name, check):
        if check.detected:
            return f"{name} detected ({_short(check.named)})"
        return f"{name} MISSED ({_short(check.note or check.named)})"

    rehash = "rehash passes it (verify-only: needs campaign.yaml)" if result.verify_only and \
        not result.rehash.detected else part("rehash", result.rehash)
    return (f"{'ok  ' if result.detected_by_both else 'MISS'} [{result.rule}] {_short(result.mutation, 200)}: "
            f"{part('verify', result.verify)}; {rehash}")


def _walk_line(suite: str):
    """One line per walk mutation that was not refused as its rule says (the rest are counted
    in the coverage table)."""
    def show(m) -> None:
        if not m.caught:
            print(f"MISS [{suite}] {_short(m.name, 160)} (expected: {m.expect}): {_short(m.line, 160)}", flush=True)
    return show


def coverage_table(results, walked, closed) -> list[str]:
    """Per record type: mutations / refused / free of the hand-written rules, the field walk and
    the closed-world walk, and the totals."""
    from harness.selftest import closedworld, fieldwalk

    hand: dict[str, list] = {}
    for r in results:
        row = hand.setdefault(r.doc, [0, 0, 0])
        row[0] += 1
        row[1] += r.detected_by_both
    suites = [hand,
              {d: [c["mutations"], c["refused"], c["free"]] for d, c in fieldwalk.coverage(walked).items()},
              {d: [c["mutations"], c["refused"], c["free"]] for d, c in closedworld.coverage(closed).items()}]
    names = ("hand-written", "field walk", "closed world")
    docs = sorted(set().union(*suites))
    width = max([len("record type"), len("total")] + [len(d) for d in docs])
    lines = ["coverage per record type (mutations / refused / free):",
             f"  {'record type':<{width}}  " + "  ".join(f"{n:>16}" for n in names)]

    def cells(rows):
        return "  ".join(f"{'-' if r is None else f'{r[0]} / {r[1]} / {r[2]}':>16}" for r in rows)
    for doc in docs:
        lines.append(f"  {doc:<{width}}  " + cells([suite.get(doc) for suite in suites]))
    totals = [[sum(r[i] for r in suite.values()) for i in range(3)] for suite in suites]
    lines.append(f"  {'total':<{width}}  " + cells(totals))
    return lines


def main(args) -> int:
    if args.suite == "scale":
        return _scale()
    if args.suite == "noise":
        from harness.selftest import noise as noise_selftest

        if args.quiet_only and args.load_only:
            print("harness selftest: --quiet-only and --load-only: give one of them", file=sys.stderr)
            return 2
        return noise_selftest.run(clone_file(DEMO, "selftest"), args.campaigns, args.rounds, args.effect, args.work,
                                  not args.quiet_only, args.effect_campaigns, not args.load_only, args.launch)
    return tamper_main(args)


def tamper_main(args) -> int:
    """The hand-written forgeries on the first bundle, then the field walk and the closed-world
    walk on every bundle: without --bundle, a demo_instructions bundle (instruction records) and a
    reproduction of the demo (a reproduction receipt, checked with verify --original)."""
    from harness.selftest import closedworld, fieldwalk, tamper

    repo = Path(args.repo) if args.repo else None
    with tempfile.TemporaryDirectory(prefix="abba-selftest-") as tmp_name:
        tmp = Path(tmp_name)
        if args.bundle:
            bundles = [(Path(args.bundle), Path(args.original) if args.original else None)]
            for path in filter(None, bundles[0]):
                if not (path / C.TAGMANIFEST).is_file():
                    print(f"harness selftest: error: {path}: not a sealed bundle", file=sys.stderr)
                    return 2
        else:
            repo = repo or _repo_of(clone_file(DEMO, "selftest"))
            counted = _campaign(tmp, DEMO_INSTRUCTIONS, "demo_instructions", rounds=5)
            demo = _campaign(tmp, DEMO, "demo")
            if counted is None or demo is None:
                return 2
            bundles = [(counted, None)]
            again = _reproduction(tmp, demo, repo)
            if again is not None:
                bundles.append((again, demo))
        for bundle, original in bundles:
            v, r = tamper.baseline(bundle)
            if v.exit_code != 0 or r.exit_code != 0:
                print(f"harness selftest: error: {bundle}: the untouched bundle does not pass both checkers "
                      f"(verify exit {v.exit_code}, rehash exit {r.exit_code}); mutations would prove nothing",
                      file=sys.stderr)
                for line in (v.lines + r.lines)[:10]:
                    print(f"  {_short(line, 400)}", file=sys.stderr)
                return 2
        only = args.only

        def chosen(m) -> bool:
            return only is None or only in m.name
        results = tamper.run_suite(bundles[0][0], only=chosen, on_result=lambda res: print(_line(res), flush=True))
        walked, closed = [], []
        for bundle, original in bundles:
            walked += [m for m in fieldwalk.run(bundle, repo, original=original, on_result=_walk_line("field walk"),
                                                only=chosen)]
            closed += closedworld.run(bundle, repo, original, on_result=_walk_line("closed world"), only=chosen)
    print(tamper.per_rule(results))
    print(tamper.summary(results))
    if walked:
        for line in fieldwalk.summary(walked)[-1:]:
            print(line)
    if closed:
        for line in closedworld.summary(closed)[-1:]:
            print(line)
    for line in coverage_table(results, walked, closed):
        print(line)
    if repo is None:
        print("note: fields only the repository binds were not walked: give --repo")
    if any(original is None and (bundle / C.REPRODUCTION).is_file() for bundle, original in bundles):
        print("note: a reproduction receipt's other side was not walked: give --original")
    ran = results or walked or closed
    return 0 if ran and all(res.detected_by_both for res in results) and all(m.caught for m in walked) \
        and all(m.caught for m in closed) else 1


def _repo_of(path: Path) -> Path | None:
    from harness.judge.anchors import AnchorError, repository

    try:
        return repository(path.parent)
    except AnchorError:
        return None
