"""The bundles a report shows, each judged before anything of it is shown: verified with both
checkers' rules, loaded through the one reader, its reproductions tied to it by digest and each
receipt re-derived from the two bundles, its signature checked when a trust file is given. A
bundle that does not verify, or cannot be read, is an entry that says so; it never stops the
others."""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from harness import contract as C, legacy, outcomes

if TYPE_CHECKING:
    from harness.bundle.read import Bundle


@dataclass
class Reproduction:
    """A bundle whose receipt names another: what its re-run said, on which machine, and
    whether the receipt re-derives from the two bundles."""
    path: Path
    verdict: str
    reason: str
    machine: str
    measured: str
    scope: str
    outputs: str
    rederived: bool


@dataclass
class Entry:
    """One bundle: its path, what `harness verify` said, the loaded bundle (None when it could
    not be read), its reproductions, who signed it, and its picture (relative to the report).
    An attestation that is not verified says why in `attestation`: present, not verified (no
    trust file given: never trusted), or its signature does not hold (`attestation_code`
    outcomes.PROBLEMS, or outcomes.UNUSABLE for a trust file that cannot be used)."""
    path: Path
    problems: list = field(default_factory=list)
    bundle: Optional[Bundle] = None
    reproductions: list = field(default_factory=list)
    signer: Optional[str] = None
    figure: Optional[str] = None
    attestation: Optional[str] = None
    attestation_code: int = 0
    # a bundle of an earlier generation its own frozen checker passed (harness/legacy), read by today's
    # reader where its documents lack only what that reader takes as null (records' EARLIER)
    earlier: Optional[legacy.Generation] = None


def find_bundles(root: os.PathLike | str) -> list[Path]:
    """The bundles under root/evidence: its folders that hold a tag manifest or a BagIt
    declaration, one level down (a bundle's own stored workload is never taken for one)."""
    evidence = Path(root) / "evidence"
    if not evidence.is_dir():
        return []
    return sorted((p for p in evidence.iterdir() if p.is_dir() and not p.is_symlink()
                   and ((p / C.TAGMANIFEST).exists() or (p / C.BAGIT).exists())), key=lambda p: p.name)


def survey(paths: list, trust: Optional[Path] = None) -> list[Entry]:
    from harness.bundle import read
    from harness.judge import reproduce
    from harness.judge.verify import verify

    entries = []
    for path in paths:
        path = Path(path)
        report = verify(path, legacy=True)
        problems: list[str] = [*report.problems] or ([report.unusable] if report.unusable else [])
        entry = Entry(path, problems)
        if report.frozen is not None and report.earlier is not None:
            entry.problems = frozen_problems(report.earlier, report.frozen, path)
            entry.earlier = report.earlier
        if not entry.problems:
            try:
                entry.bundle = read.load(path)
            except read.BundleError as exc:
                entry.problems = [str(exc) if entry.earlier is None else
                                  f"{path}: {legacy.refusal(entry.earlier, str(path), C.FORMAT)}"]
        entries.append(entry)
    by_digest = {e.bundle.digest: e for e in entries if e.bundle is not None}
    for e in entries:
        b = e.bundle
        if b is None or b.reproduction is None:
            continue
        receipt = b.reproduction
        original = by_digest.get(receipt.original.digest)
        if original is None or original.bundle is None:  # by_digest holds loaded bundles only
            continue
        try:
            want = reproduce.receipt(original.bundle, b)  # its divergence: measured by harness reproduce
            same = replace(want, outputs=replace(want.outputs, divergence=receipt.outputs.divergence)) == receipt
        except (KeyError, TypeError, ValueError):
            same = False
        original.reproductions.append(Reproduction(
            path=e.path, verdict=receipt.verdict, reason=receipt.reason, machine=b.machine.text(),
            measured=reproduce.ratio_text(receipt.timing.measured), scope=receipt.scope.note,
            outputs=reproduce.outputs_text(receipt.outputs), rederived=same))
    from harness.attest import AttestError, check

    for e in entries:
        if e.bundle is None:
            continue
        if trust is None:
            e.attestation = check.presence(e.path)
            continue
        try:
            e.signer = signer(e.path, trust)
        except AttestError as exc:
            e.attestation = str(exc)
            e.attestation_code = outcomes.UNUSABLE if exc.unusable else outcomes.PROBLEMS
    return entries


def frozen_problems(gen: legacy.Generation, outcome: legacy.Outcome, path: Path) -> list[str]:
    """What an earlier generation's frozen checker found in the bundle (its lines are bundle
    text: the renderers escape them), or [] when it holds under that generation's rules."""
    if outcome.code == 0:
        return []
    said = [line.strip()[5:] for line in outcome.out if line.strip().startswith("FAIL ")] or outcome.err
    return [f"under {gen.rules}: {line}" for line in said] or [f"{path}: under {gen.rules}: exit {outcome.code}"]


def signer(bundle: Path, trust: Path) -> Optional[str]:
    """Who signed the bundle (its attestation beside it, checked with the trust file), or None
    when it has none; harness.attest.AttestError (one line) when its signature does not hold."""
    from harness.attest import check

    return check.signer_line(bundle, trust)
