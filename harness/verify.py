"""`harness verify`: re-check a sealed bundle without trusting anything in it.

The layout, array and record rules are the reviewer script's own (`harness/rehash.py`,
imported here so the two checkers cannot drift). On top, with the harness's code:
comparison.json re-derived in full (the bootstrap statistics and the divergence report
too), campaign.yaml re-parsed with the campaign loader and compared with campaign.json,
and, with `--repo`, the anchors outside the bundle: the campaign and golden files in the
repository and each revision's source tree rebuilt from its commit."""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness import comparison, records, rehash


@dataclass
class Report:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unusable: str | None = None
    digest: str | None = None
    status: str | None = None
    files: int = 0
    arrays: int = 0

    @property
    def exit_code(self) -> int:
        return 2 if self.unusable else (1 if self.problems else 0)


def verify(root: str | os.PathLike, repo: str | os.PathLike | None = None,
           max_array_bytes: int | None = None) -> Report:
    root = Path(root)
    try:
        check, docs = rehash.structure(str(root), max_array_bytes)
    except rehash.Unusable as exc:
        return Report(unusable=str(exc))
    if docs is not None:
        _check_comparison(check, docs, root)
        _check_yaml(check, docs)
        if repo is not None:
            _check_anchors(check, docs, Path(repo))
        else:
            check.notes.append("anchors outside the bundle not checked (give --repo PATH)")
    return Report(check.problems, check.notes, None, check.digest, check.status, check.files, check.arrays)


def _check_comparison(check: rehash.Check, docs: dict, root: Path) -> None:
    try:
        derived = comparison.derive(docs["campaign"], docs["runs"], docs["runner"], docs["cleanup"],
                                    docs["golden"], root / "data" / "arrays", docs["claimed"].get("schema"),
                                    docs["noise_floor"])
    except Exception as exc:  # noqa: BLE001 - malformed records are findings, not crashes
        check.fail(records.COMPARISON, f"cannot be re-derived from the run records "
                                       f"({exc.__class__.__name__}: {str(exc)[:80]})")
        return
    rehash.report_diff(check, derived, docs["claimed"])
    check.status = docs["claimed"].get("status")


def _check_yaml(check: rehash.Check, docs: dict) -> None:
    """campaign.json must say what campaign.yaml says, field by field, except what the
    machine resolved (SHAs, paths)."""
    from harness import spec

    campaign = docs["campaign"]
    try:
        raw = check.read(records.CAMPAIGN_YAML, rehash.MAX_TEXT_BYTES)
        parsed = spec.loads(raw, Path("/bundle") / (campaign["campaign_path"] or "campaign.yaml"),
                            campaign["overrides"])
    except (OSError, spec.SpecError) as exc:
        check.fail(records.CAMPAIGN_YAML, f"does not load as a campaign: {exc}", "campaign")
        return
    parsed = parsed.with_seed(campaign["seed"])  # a seed the runner drew is recorded, not in the YAML
    shas = {v: (parsed.revision(v).rev, campaign["revisions"][v]["sha"]) for v in ("base", "candidate")}
    want = records.campaign(parsed, shas, rel=lambda p: None)
    for path, expected, got in rehash.diff(want, campaign):
        if path not in records.CAMPAIGN_RESOLVED:
            check.fail(records.CAMPAIGN_JSON, f"{path} is {rehash.short(got)}, campaign.yaml gives "
                                              f"{rehash.short(expected)}", "campaign")


def _check_anchors(check: rehash.Check, docs: dict, repo: Path) -> None:
    """The bundle against the repository: same campaign file, same golden file, and each
    revision's tree digest recomputed from its commit."""
    from harness import revisions, spec
    from harness.fsutil import sha256_file, tree_digest

    campaign = docs["campaign"]
    if not campaign["campaign_path"]:
        check.fail(records.CAMPAIGN_JSON, "no campaign_path to find the campaign in the repository", "anchors")
        return
    source = repo / campaign["campaign_path"]
    try:
        same = source.read_bytes() == check.read(records.CAMPAIGN_YAML, rehash.MAX_TEXT_BYTES)
    except OSError as exc:
        check.fail(records.CAMPAIGN_YAML, f"cannot compare with {source}: {exc}", "anchors")
        return
    if not same:
        check.fail(records.CAMPAIGN_YAML, f"differs from {source}", "anchors")
    if campaign["golden"]:
        golden = repo / campaign["golden"]
        if not golden.is_file() or sha256_file(golden) != check.sha256(records.GOLDEN):
            check.fail(records.GOLDEN, f"differs from {golden}", "anchors")
    try:
        spec_campaign = spec.load(source)
        target = revisions.target_repo(spec_campaign)
    except spec.SpecError as exc:
        check.fail(records.REVISIONS, f"cannot rebuild the target repository: {exc}", "anchors")
        return
    for variant in ("base", "candidate"):
        receipt = docs["revisions"].get(variant) or {}
        with tempfile.TemporaryDirectory(prefix="abba-anchor-") as tmp:
            try:
                revisions.export(target, campaign["revisions"][variant]["sha"], Path(tmp) / "tree")
                digest = tree_digest(Path(tmp) / "tree")
            except (RuntimeError, OSError, ValueError) as exc:
                check.fail(records.REVISIONS, f"{variant}: commit not in {target} ({str(exc)[:80]})", "anchors")
                continue
        if digest != receipt.get("tree_sha256"):
            check.fail(records.REVISIONS, f"{variant}: tree_sha256 {rehash.short(receipt.get('tree_sha256'))}, "
                                          f"the commit's tree gives {digest[:16]}...", "anchors")
