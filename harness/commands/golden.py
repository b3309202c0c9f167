"""`harness golden BUNDLE -o FILE`: freeze a verified bundle's reference-run digests as a
campaign's golden file, so every later run also proves historical parity. The file names
the machine class it holds for (CPU model, vector ISA, BLAS): float outputs are not
portable across them. Pin it in the campaign as `golden: {path: FILE, sha256: ...}`."""
from __future__ import annotations

from pathlib import Path

from harness import outcomes, records
from harness.bundle import read as bundlereader
from harness.commands import error
from harness.files import atomic_write_json, sha256_file


def add_parser(sub) -> None:
    p = sub.add_parser("golden", help="write a golden file (expected digests per item and field) from a bundle")
    p.add_argument("bundle", help="a sealed bundle with parity identical")
    p.add_argument("-o", "--output", required=True, help="golden JSON file to write")
    p.set_defaults(func=main)


def main(args) -> int:
    from harness.judge.verify import verify

    bundle = Path(args.bundle)
    report = verify(bundle)
    if report.exit_code:
        return error("golden", f"{bundle} does not verify ({(report.unusable or report.problems[0])})",
                     code=outcomes.UNUSABLE)
    loaded = bundlereader.load(bundle)
    result = loaded.comparison
    if not result.complete or not result.parity.identical:
        return error("golden", f"{bundle}: only a complete bundle with identical parity can be frozen",
                     code=outcomes.UNUSABLE)
    if loaded.runner.items != loaded.runner.items_all:
        return error("golden", f"{bundle} ran {len(loaded.runner.items)} of the workload's "
                     f"{len(loaded.runner.items_all)} items: a golden file covers them all (re-run without "
                     "workload.items)", code=outcomes.UNUSABLE)
    reference = next(r for r in loaded.runs if r.label == result.parity.reference)
    assert report.digest is not None  # it verified: sealed
    golden = records.golden(reference, campaign=loaded.name, machine=loaded.machine, bundle_digest=report.digest)
    atomic_write_json(args.output, golden)
    from harness.render.text import term

    print(term(f"golden: {len(golden['items'])} items from run {reference.label} ({reference.sha[:12]}) on "
               f"{loaded.machine.text()} -> {args.output}"))
    print(f"pin it in the campaign: golden: {{path: {args.output}, sha256: {sha256_file(args.output)}}}")
    return 0
