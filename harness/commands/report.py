"""`harness report [BUNDLE...] [-o REPORT.md] [--check] [--trust FILE]`: REPORT.md from verified
bundles (every bundle under evidence/ by default), with each bundle's picture drawn from its
records into docs/figures/. `--check` writes nothing and exits 1 when REPORT.md differs from
what the bundles give (CI runs it)."""
from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

from harness import outcomes
from harness.commands import error

HELP = "render REPORT.md from evidence bundles (every bundle under evidence/ by default)"


def add_parser(subparsers) -> argparse.ArgumentParser:
    p = subparsers.add_parser("report", help=HELP, description=HELP + ". Reads only verified bundles; --check "
                              "makes CI fail when REPORT.md drifts.")
    p.add_argument("bundles", nargs="*", metavar="BUNDLE", help="bundle folders (default: the bundles under evidence/)")
    p.add_argument("-o", "--output", metavar="REPORT.md",
                   help="where to write ('-' for stdout; default: ROOT/REPORT.md for the bundles under evidence/, "
                        "stdout when bundles are named)")
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when the output file differs from what the bundles produce")
    p.add_argument("--root", default=".", metavar="DIR",
                   help="repository root: where evidence/ lives and what paths in the report are relative to")
    p.add_argument("--trust", metavar="FILE",
                   help="an allowed_signers file: show who signed each bundle that has an attestation "
                        "(BUNDLE.intoto.json; exit 1 when one does not hold); without it an attestation shows as "
                        "present, not verified")
    p.set_defaults(func=main)
    return p


def main(args) -> int:
    from harness.files import atomic_write_bytes
    from harness.judge.survey import find_bundles, survey
    from harness.render import report

    root = Path(args.root)
    if not root.is_dir():
        return error("report", f"{root}: not a directory")
    named = bool(args.bundles)
    paths = [Path(b) for b in args.bundles] if named else find_bundles(root)
    # Named bundles are a preview: they never overwrite the report of the whole evidence.
    to_stdout = args.output == "-" or (named and not args.output and not args.check)
    out = None if to_stdout else Path(args.output) if args.output else root / "REPORT.md"
    if to_stdout and args.check:
        return error("report", "--check needs a file, not '-o -'")
    from harness.commands.sign import unusable_trust

    if unusable_trust("report", args.trust):  # one line for it, not one per bundle
        return outcomes.UNUSABLE
    entries = survey(paths, Path(args.trust) if args.trust else None)
    report_dir = out.parent if out else root
    if not args.check and not to_stdout:
        _draw(entries, report_dir)
    for e in entries:
        figure = report_dir / report.FIGURES / f"{e.path.name}.png"
        if e.bundle is not None and not e.problems:
            e.figure = f"{report.FIGURES}/{e.path.name}.png" if (figure.is_file() or args.check) else None
    from harness.render.text import code as md_code, term

    sources = ("the bundles named on the command line: " + ", ".join(md_code(p.name) for p in paths) if named
               else "every bundle under `evidence/`")
    if args.trust:  # the reader should know whose keys made a "signed by" hold
        sources += f", signatures checked against {md_code(args.trust)}"
    text = report.render(entries, root, sources)
    failing = [e for e in entries if e.problems]
    for e in failing:
        error("report", f"{e.path} does not verify ({e.problems[0]}); REPORT.md says so at its section")
    unsigned = [e for e in entries if e.attestation_code]
    for e in unsigned:
        error("report", f"{e.path}: {e.attestation}; REPORT.md says so at its section")
    code = max((e.attestation_code for e in unsigned), default=outcomes.OK) if not failing else outcomes.PROBLEMS
    if to_stdout:
        sys.stdout.write(text)
        return code
    assert out is not None  # set whenever the report does not go to stdout
    if args.check:
        try:
            current = out.read_bytes().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return error("report", f"{out} is missing; run `harness report`", code=outcomes.PROBLEMS)
        if current == text:
            print(f"harness report: {out} matches its {len(entries)} bundle(s)")
            return code
        diff = list(difflib.unified_diff(current.splitlines(), text.splitlines(), f"{out} (committed)",
                                         f"{out} (from the bundles)", lineterm="", n=1))
        error("report", f"{out} differs from what its {len(entries)} bundle(s) produce; run `harness report` and "
                        "commit the result", code=outcomes.PROBLEMS)
        for line in diff[:40]:
            print(term(line), file=sys.stderr)
        return outcomes.PROBLEMS
    atomic_write_bytes(out, text.encode("utf-8"))
    print(f"harness report: wrote {out} from {len(entries)} bundle(s)")
    return code


def _draw(entries, report_dir: Path) -> None:
    """Each verified bundle's picture, drawn from its records (never taken from the bundle)."""
    from harness.files import atomic_write_bytes, write_failed
    from harness.render import figure, report

    folder = report_dir / report.FIGURES
    for e in entries:
        if e.bundle is None or e.problems:
            continue
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{e.path.name}.png.tmp"
        try:
            figure.render(e.bundle, tmp)
            atomic_write_bytes(folder / f"{e.path.name}.png", tmp.read_bytes())
        except OSError as exc:  # a full disk: one line (cli), no half-drawn picture left behind
            raise write_failed(folder / f"{e.path.name}.png", exc) from None
        finally:
            tmp.unlink(missing_ok=True)
