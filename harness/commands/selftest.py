"""`harness selftest tamper [--bundle DIR]`: the tampering mutation suite (issue 6.3).

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


def add_parser(sub) -> None:
    p = sub.add_parser("selftest", help="self-checks; 'tamper' runs the tampering mutation suite on a bundle")
    p.add_argument("suite", choices=["tamper"], help="which self-check to run")
    p.add_argument("--bundle", help="a sealed bundle to mutate copies of (default: run the demo campaign)")
    p.add_argument("--only", help="run only the mutations whose name holds this text")
    p.set_defaults(func=main)


def _demo_bundle(tmp: Path) -> Path | None:
    from harness import spec
    from harness.runner import Runner

    campaign_path = Path(__file__).resolve().parents[2] / "campaigns" / "demo.yaml"
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

    return (f"{'ok  ' if result.detected_by_both else 'MISS'} {_short(result.mutation, 200)}: "
            f"{part('verify', result.verify)}; {part('rehash', result.rehash)}")


def main(args) -> int:
    from harness import tamper

    with tempfile.TemporaryDirectory(prefix="abba-selftest-") as tmp:
        if args.bundle:
            bundle = Path(args.bundle)
            if not (bundle / "tagmanifest-sha256.txt").is_file():
                print(f"harness selftest: error: {bundle}: not a sealed bundle", file=sys.stderr)
                return 2
        else:
            bundle = _demo_bundle(Path(tmp))
            if bundle is None:
                return 2
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
    print(tamper.summary(results))
    return 0 if results and all(res.detected_by_both for res in results) else 1
