"""The cross-machine view: bundles of one campaign made on several nodes, side by side.

One row per bundle (node, machine class, speed-up, ratio and interval, verdict, parity,
a digest of each variant's outputs), then whether the verdicts agree, whether the outputs
are bit-identical across nodes (the AR loop's promise of bit-identity needs exactly
that), the machine classes, and the spread of the ratio across machines. Every bundle is
verified first; one that does not verify is named and left out of the table.

Exit: 0 the verdicts agree and the outputs are bit-identical, 3 the outputs differ
across nodes, 6 the verdicts disagree (the claim is inconclusive across machines), 1 a
bundle does not verify, 2 unusable input (no bundle found, unreadable).
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness import outcomes
from harness.fleet import short

if TYPE_CHECKING:
    from harness.bundle.read import Bundle

MAX_DEPTH = 4


def find_bundles(paths: list[Path]) -> list[Path]:
    """Each path that is a bundle, and the bundles inside each folder that is not (not
    entering bundles, nor dot-folders such as a staging `.NAME.partial-PID`)."""
    found = []
    for path in paths:
        stack = [(path, 0)]
        while stack:
            folder, depth = stack.pop()
            if (folder / "bagit.txt").is_file():
                found.append(folder)
                continue
            if depth >= MAX_DEPTH or not folder.is_dir():
                continue
            for child in sorted(folder.iterdir(), reverse=True):
                if child.is_dir() and not child.is_symlink() and not child.name.startswith("."):
                    stack.append((child, depth + 1))
    return found


def output_digest(runs: list, variant: str) -> str | None:
    """SHA-256 (12 hex digits) over the first ok run of a variant: each item's id, error and
    every field's name and array digest, sorted. Equal digests: bit-identical outputs."""
    run = next((r for r in runs if r.variant == variant and r.ok), None)
    if run is None:
        return None
    h = hashlib.sha256(b"abba-fleet-outputs-v1\n")
    for item in sorted(run.items, key=lambda it: it.id):
        h.update(f"{item.id}\0{item.error!r}\n".encode())
        for name in sorted(item.fields):
            h.update(f"  {name}\0{item.fields[name].digest}\n".encode())
    return h.hexdigest()[:12]


@dataclass
class Placed:
    """A verified bundle and where the fleet ran it."""
    bundle: Bundle
    node: str  # the node id's first 12 hex digits, or "-" off a fleet
    cluster: Optional[str]
    base_outputs: Optional[str]  # output_digest of the base runs
    candidate_outputs: Optional[str]  # ... of the candidate runs


def load(bundles: list[Path], repo: Path | None = None) -> tuple[list[Placed], list[str]]:
    """(the verified bundles, loaded; a line per bundle that does not verify or cannot be read)."""
    from harness.bundle import read
    from harness.judge.verify import verify

    loaded, problems = [], []
    for path in bundles:
        report = verify(path, repo=repo)
        if report.exit_code:
            first = report.unusable or (report.problems[0] if report.problems else "does not verify")
            problems.append(f"{path}: does not verify: {first}")
            continue
        try:
            bundle = read.load(path)
        except read.BundleError as exc:
            problems.append(f"{path}: {exc}")
            continue
        fleet = bundle.environment.get("fleet") or {}
        loaded.append(Placed(bundle, short(fleet["node_id"]) if fleet.get("node_id") else "-", fleet.get("cluster"),
                             output_digest(bundle.runs, "base"), output_digest(bundle.runs, "candidate")))
    return loaded, problems


def groups(loaded: list[Placed]) -> dict[tuple, list[Placed]]:
    """Bundles of one campaign at one pair of SHAs together."""
    out: dict[tuple, list[Placed]] = {}
    for doc in loaded:
        c = doc.bundle.campaign
        key = (c.name, c.sha("base"), c.sha("candidate"))
        out.setdefault(key, []).append(doc)
    return out


def table_lines(docs: list[Placed], base: Path | None = None) -> tuple[list[str], int]:
    """The table and the lines under it for one campaign's bundles; and the exit code."""
    from harness.judge import reproduce
    from harness.render import text

    rows = []
    for doc in docs:
        c = doc.bundle.comparison
        speedup = c.wall.speedup
        rows.append({"node": text.cell(doc.node), "bundle": text.cell(_rel(doc.bundle.path, base)),
                     "machine": text.cell(doc.bundle.machine.text()),
                     "speed-up": f"{speedup:.3f}x" if speedup else "n/a",
                     "candidate/base [95% CI]": reproduce.ratio_text(reproduce.claim(c.stats)),
                     "verdict": text.verdict_word(c),
                     "parity": "identical" if c.parity.identical else "NOT identical",
                     "outputs base": doc.base_outputs or "n/a",
                     "outputs candidate": doc.candidate_outputs or "n/a"})
    lines = [*text.table(rows).splitlines(), ""]  # one row a line: callers escape line by line
    words = [row["verdict"] for row in rows]
    agree = len(set(words)) == 1
    lines.append(f"verdicts: {'agree' if agree else 'DISAGREE'} ("
                 + ", ".join(f"{w} on {words.count(w)} of {len(words)}" for w in sorted(set(words))) + ")")
    digests = {(doc.base_outputs, doc.candidate_outputs) for doc in docs}
    identical = len(digests) == 1 and None not in next(iter(digests))
    if identical:
        lines.append(f"outputs: bit-identical across the {len(docs)} nodes (base {docs[0].base_outputs}, "
                     f"candidate {docs[0].candidate_outputs})")
    else:
        lines.append(f"outputs: NOT bit-identical across nodes: {len(digests)} different sets of output digests"
                     + _differences(docs))
    classes = {text.cell(doc.bundle.machine.text()) for doc in docs}
    lines.append(f"machines: {len(classes)} machine class{'es' if len(classes) > 1 else ''} "
                 f"({'; '.join(sorted(classes))})")
    ratios = [r for doc in docs for r in [doc.bundle.comparison.stats.paired.geomean_ratio] if r is not None and r > 0]
    if len(ratios) >= 2:
        lo, hi = min(ratios), max(ratios)
        logs = [math.log(r) for r in ratios]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        lines.append(f"ratio spread: {lo:.4g} to {hi:.4g} across {len(ratios)} nodes (max/min {hi / lo:.3f}, "
                     f"speed-up {1 / hi:.3g}x to {1 / lo:.3g}x, sd of log ratio {sd:.4f})")
    elif ratios:
        lines.append(f"ratio spread: one node with a ratio ({ratios[0]:.4g}); nothing to spread")
    code = outcomes.PARITY if not identical else (outcomes.OK if agree else outcomes.INCONCLUSIVE)
    return lines, code


def _differences(docs: list[Placed]) -> str:
    """Against the first bundle: how the others' outputs differ (the agreement's words)."""
    from harness.judge import agreement
    from harness.render.text import cell

    parts = []
    for doc in docs[1:]:
        cmp = agreement.compare_outputs(docs[0].bundle.runs, doc.bundle.runs, same=True)
        if cmp.mismatch_count:
            parts.append(f"node {cell(doc.node)} vs {cell(docs[0].node)}: {cmp.mismatch_count} fields differ "
                         f"({', '.join(cmp.kinds)}), {cmp.items.identical} of {cmp.items.compared} items identical")
    return ("; " + "; ".join(parts)) if parts else ""


def _rel(path: Path, base: Path | None) -> str:
    """The path relative to base when it lies inside, else as it is."""
    try:
        return Path(path).absolute().relative_to(base.absolute()).as_posix() if base else str(path)
    except ValueError:
        return str(path)


def render(paths: list[Path], repo: Path | None = None, echo=print) -> int:
    """`harness fleet report`: every campaign's table; the worst exit code."""
    from harness.render.text import cell, term

    bundles = find_bundles(paths)
    if not bundles:
        echo("no bundle found under " + ", ".join(map(str, paths)))
        return outcomes.UNUSABLE
    loaded, problems = load(bundles, repo)
    for line in problems:
        echo(f"FAIL {term(line)}")
    codes = [outcomes.PROBLEMS] if problems else []
    for (name, base_sha, cand_sha), docs in groups(loaded).items():
        echo(f"\n## {cell(name)} (base {cell(base_sha[:12])}, candidate {cell(cand_sha[:12])}): {len(docs)} bundle"
             f"{'s' if len(docs) > 1 else ''}\n")
        lines, code = table_lines(docs, Path.cwd())
        for line in lines:
            echo(line)
        codes.append(code)
    for code in (outcomes.PROBLEMS, outcomes.PARITY, outcomes.INCONCLUSIVE):
        if code in codes:
            return code
    return outcomes.OK
