"""`harness selftest tamper [--bundle DIR]`: the tampering mutation suite (issue 6.3).
`harness selftest scale`: a demo campaign of ABBA x 8 runs, and a bundle of about 10,000
stored arrays verified by both checkers, with their times.
`harness selftest noise [--campaigns N] [--effect-campaigns N] [--rounds N] [--effect F] [--quiet-only | --load-only]`: A-vs-A and
known-effect campaigns, quiet and under a load generator it starts and stops itself, with
false claims, coverage and detections (harness/selftest/noise.py).

Each mutation is applied to a fresh copy of a sealed bundle and both checkers run on it:
`harness verify` and the standard-library `python -S harness/rehash.py`. One line per
mutation, then `N mutations, N detected by harness verify, N detected by rehash.py`.
Without --bundle the demo campaign is run into a temporary folder first.
Exit 0 only if every mutation is detected by both checkers (and the untouched bundle
passes both); 1 otherwise; 2 unusable input."""
from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

from harness import contract as C
from harness.clone import clone_file


def add_parser(sub) -> None:
    p = sub.add_parser("selftest", help="self-checks; 'tamper' runs the tampering mutation suite on a bundle")
    p.add_argument("suite", choices=["tamper", "scale", "noise"], help="which self-check to run")
    p.add_argument("--bundle", help="a sealed bundle to mutate copies of (default: run the demo campaign)")
    p.add_argument("--only", help="run only the mutations whose name holds this text")
    p.add_argument("--repo", help="tamper: the repository the bundle was made in, for the field walk's "
                                  "repository-bound fields (default: the demo's own; with --bundle, skipped)")
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
    p.add_argument("--load-only", action="store_true",
                   help="noise: only the campaigns under load (claims are held to the work ratio)")
    p.set_defaults(func=main)


DEMO = "campaigns/demo.yaml"  # in a clone: harness.clone.clone_file finds it or says why not


def _demo_variant(out: Path, **changes) -> tuple[dict, float]:
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
        print(f"demo campaign, order ABBA x 8 ({len(result['runs'])} runs): {result['status']} in {took:.1f} s; "
              f"verify {tv:.2f} s (exit {rv}), rehash.py {tr:.2f} s (exit {rr})")
        ok = result["status"] == "complete" and rv == rr == 0
        result, took = _demo_variant(Path(tmp) / "many", order="AB", slots=1,
                                     params={"items": 4999, "length": 64, "window": 4})
        files = sum(1 for p in (Path(tmp) / "many").rglob("*") if p.is_file())
        tv, rv, tr, rr = _timed_checks(Path(tmp) / "many")
        print(f"bundle of {files} files (demo, 5,000 items, order AB, made in {took:.1f} s): {result['status']}; "
              f"verify {tv:.2f} s (exit {rv}), rehash.py {tr:.2f} s (exit {rr})")
        ok = ok and result["status"] == "complete" and rv == rr == 0
    return 0 if ok else 1


def _demo_bundle(tmp: Path) -> Path | None:
    from harness.plan import spec
    from harness.engine.runner import Runner

    campaign_path = clone_file(DEMO, "selftest")
    out = tmp / "demo"
    print(f"selftest: running the demo campaign ({campaign_path}) into {out}", file=sys.stderr)
    try:
        outcome = Runner(spec.load(campaign_path), out).run()
    except (spec.SpecError, OSError) as exc:
        print(f"harness selftest: error: demo campaign: {exc}", file=sys.stderr)
        return None
    if outcome.comparison["status"] != "complete":
        print(f"harness selftest: error: demo campaign {outcome.comparison['status']}: "
              f"{outcome.comparison['reason']}", file=sys.stderr)
        return None
    return out


def _short(text: str, width: int = 80) -> str:
    text = re.sub(r"\b([0-9a-f]{12})[0-9a-f]{52}\b", r"\1...", text)  # long digests
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


def main(args) -> int:
    if args.suite == "scale":
        return _scale()
    if args.suite == "noise":
        from harness.selftest import noise as noise_selftest

        if args.quiet_only and args.load_only:
            print("harness selftest: --quiet-only and --load-only: give one of them", file=sys.stderr)
            return 2
        return noise_selftest.run(clone_file(DEMO, "selftest"), args.campaigns, args.rounds, args.effect, args.work,
                                  not args.quiet_only, args.effect_campaigns, not args.load_only)
    from harness import records
    from harness.selftest import fieldwalk, tamper

    repo = Path(args.repo) if args.repo else None
    with tempfile.TemporaryDirectory(prefix="abba-selftest-") as tmp:
        if args.bundle:
            bundle = Path(args.bundle)
            if not (bundle / C.TAGMANIFEST).is_file():
                print(f"harness selftest: error: {bundle}: not a sealed bundle", file=sys.stderr)
                return 2
        else:
            bundle = _demo_bundle(Path(tmp))
            if bundle is None:
                return 2
            repo = repo or _repo_of(clone_file(DEMO, "selftest"))
        v, r = tamper.baseline(bundle)
        if v.exit_code != 0 or r.exit_code != 0:
            print(f"harness selftest: error: {bundle}: the untouched bundle does not pass both checkers "
                  f"(verify exit {v.exit_code}, rehash exit {r.exit_code}); mutations would prove nothing",
                  file=sys.stderr)
            for line in (v.lines + r.lines)[:10]:
                print(f"  {line}", file=sys.stderr)
            return 2
        only = (lambda m: args.only in m.name) if args.only else None
        results = tamper.run_suite(bundle, only=only, on_result=lambda res: print(_line(res), flush=True))
        walked = [] if args.only else fieldwalk.run(bundle, repo, on_result=_walk_line)
    print(tamper.per_rule(results))
    print(tamper.summary(results))
    if walked:
        print("field walk coverage per record type (rehash.FIELDS; free fields: rehash.UNBOUND):")
        for line in fieldwalk.summary(walked):
            print(f"  {line}")
        if repo is None:
            print("  (fields only the repository binds were not walked: give --repo)")
    return 0 if results and all(res.detected_by_both for res in results) and \
        all(m.caught for m in walked) else 1


def _repo_of(path: Path) -> Path | None:
    from harness.judge import verify

    try:
        return verify.repository(path.parent)
    except verify.AnchorError:
        return None


def _walk_line(m) -> None:
    """One line per field-walk mutation that was not refused as its rule says (the rest are
    counted in the coverage lines)."""
    if not m.caught:
        print(f"MISS [field walk] {m.doc} {m.field} {m.kind}: {_short(m.line, 160)}", flush=True)
