"""`harness verify`: re-check a sealed bundle without trusting anything in it.

The contract, layout, array and record rules are the reviewer script's own (`harness/rehash.py`,
imported here so the two checkers cannot drift). On top, with the harness's code: comparison.json
re-derived once more (the divergence report too), campaign.yaml re-parsed with the campaign
loader and compared with campaign.json; with `--repo`, the anchors outside the bundle (the
campaign and golden files in the repository, the workload folder, each revision's source tree
rebuilt from its commit); with `--original`, a reproduction receipt re-derived from both
bundles."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from harness import contract as C, legacy, records, rehash
from harness.comparison import derive as comparison
from harness.judge.anchors import (UNANCHORED, AnchorError, anchor, anchorable, campaign_file, read_anchor,
                                   repository)
from harness.records import (CampaignRecord, CleanupReceipt, InputsReceipt, InstructionRecord, NoiseFloor,
                             RevisionsReceipt, RunnerReceipt, RunRecord, WorkloadReceipt)

FULL_SHA = re.compile(r"[0-9a-f]{40}")


@dataclass
class Report:
    problems: list[rehash.Problem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    unusable: str | None = None
    digest: str | None = None
    status: str | None = None
    files: int = 0
    arrays: int = 0
    bisect: dict | None = None  # a bisect folder's receipt (verified when there are no problems)
    earlier: legacy.Generation | None = None  # a bundle of an earlier generation (harness/legacy)
    frozen: legacy.Outcome | None = None  # with legacy=True: what its frozen checker said

    @property
    def exit_code(self) -> int:
        if self.frozen is not None:
            return self.frozen.code
        return 2 if self.unusable else (1 if self.problems else 0)


def verify(root: str | os.PathLike, repo: str | os.PathLike | None = None,
           max_array_bytes: int | None = None, original: str | os.PathLike | None = None,
           legacy: bool = False, structured: tuple | None = None) -> Report:
    """legacy: the reviewer allows a bundle of an earlier generation to be judged by that
    generation's frozen checker (harness/legacy), its outcome in Report.frozen; without it such
    a bundle is unusable here, with the commands that check it under its own rules. structured:
    what rehash.structure(root, max_array_bytes) returned, made once by a caller that runs both
    checkers on the same bytes (harness selftest's walks); this check's own, as it goes on to
    change it."""
    root = Path(root)
    try:
        return _verify(root, repo, max_array_bytes, original, legacy, structured)
    except MemoryError:
        return Report(unusable=f"{root}: checking the bundle needs more memory than this process may use; run it "
                               "where it may use more (ulimit -v)")


def _verify(root: Path, repo, max_array_bytes, original, allow_legacy=False, structured=None) -> Report:
    if rehash.is_bisect(str(root)):
        return _verify_bisect(root, repo, max_array_bytes, original)
    try:
        check, docs = rehash.structure(str(root), max_array_bytes) if structured is None else structured
    except rehash.Earlier as exc:
        if not allow_legacy:
            return Report(unusable=str(exc), earlier=exc.generation)
        return _verify_earlier(exc.generation, root, max_array_bytes, repo, original)
    except rehash.Unusable as exc:
        return Report(unusable=str(exc))
    if docs is not None:
        campaign = _check_comparison(check, docs, root)
        _check_yaml(check, docs, campaign)
        if repo is not None:
            try:
                _check_anchors(check, docs, campaign, Path(repo))
            except AnchorError as exc:
                return Report(unusable=str(exc))
        elif anchorable(campaign):
            check.notes.append("anchors outside the bundle not checked (give --repo PATH)")
        else:
            check.notes.append(UNANCHORED)
        if original is not None:
            unusable = _check_original(check, root, Path(original), max_array_bytes)
            if unusable:
                return Report(unusable=unusable)
    return Report(check.problems, check.notes, None, check.digest, check.status, check.files, check.arrays)


def _verify_earlier(generation: legacy.Generation, root: Path, max_array_bytes: int | None, repo, original) -> Report:
    """A bundle of an earlier generation, judged by its frozen checker alone: what today's
    harness adds (anchors, a reproduction receipt) is that generation's harness's to check."""
    for flag, given in (("--repo", repo), ("--original", original)):
        if given is not None:
            return Report(unusable=f"{flag}: {legacy.not_checked(generation, str(root))}", earlier=generation)
    try:
        outcome = legacy.run(generation, str(root), max_array_bytes)
    except (legacy.Refused, OSError) as exc:
        return Report(unusable=str(exc), earlier=generation)
    return Report(earlier=generation, frozen=outcome)


def verify_step(path, max_array_bytes=None):
    """One step bundle of a bisect folder, checked as `harness verify` checks a bundle (no
    anchors): (check, docs)."""
    check, docs = rehash.structure(str(path), max_array_bytes)
    if docs is not None:
        _check_yaml(check, docs, _check_comparison(check, docs, Path(path)))
    return check, docs


def _verify_bisect(root: Path, repo, max_array_bytes, original) -> Report:
    """A folder `harness bisect` wrote: every step bundle verified as a bundle is, then the
    receipt and the search rule (rehash.check_bisect, the rule rules.bisect_search); with
    --repo (the target repository) the commit list against its first-parent history."""
    if original is not None:
        return Report(unusable=f"--original {original}: a bisect folder holds no reproduction receipt")
    try:
        check, receipt = rehash.check_bisect(str(root), verify_step, max_array_bytes)
    except rehash.Unusable as exc:
        return Report(unusable=str(exc))
    if receipt is not None and repo is not None and not check.problems:
        from harness.plan import revisions

        said = records.BisectReceipt.from_json(receipt)  # rehash held it to the contract
        repo = Path(repo)
        if not repo.is_dir() or revisions.commit_sha(repo, said.bad) is None:
            return Report(unusable=f"--repo {repo}: expected the target repository of this bisect, whose commits it "
                                   f"walked; {repo} has no commit {said.bad[:12]}: give the campaign's target "
                                   "repository (the code's; a bundle's --repo is the one holding its campaign file)")
        try:
            line = revisions.first_parent_line(repo, said.good, said.bad, C.MAX_BISECT_COMMITS)
        except ValueError as exc:
            line = None
            check.fail(C.BISECT_FILE, f"commits: the repository says {exc}", "anchors")
        if line == said.commits:
            check.notes.append(f"the commit list is the repository's first-parent line good..bad ({repo})")
        elif line is not None:
            check.fail(C.BISECT_FILE, f"commits: {len(said.commits)} listed, the repository's first-parent "
                                      f"line good..bad has {len(line)}"
                       + ("" if len(line) != len(said.commits) else " (others, or in another order)"),
                       "anchors")
    elif receipt is not None:
        check.notes.append("the commit list is not checked against the repository (give --repo, the target "
                           "repository)")
    return Report(check.problems, check.notes, None, check.digest, check.status, check.files, check.arrays,
                  bisect=receipt)


def _check_original(check: rehash.Check, root: Path, original: Path, max_array_bytes: int | None) -> str | None:
    """A reproduction receipt re-derived from this bundle and the one it re-ran (which must
    verify, and be the one the receipt names): every part, or one line per difference."""
    from harness.bundle import read
    from harness.judge import reproduce

    if C.REPRODUCTION not in check.openable:
        return f"--original {original}: {root} holds no reproduction receipt"
    other = verify(original, max_array_bytes=max_array_bytes)
    if other.exit_code:
        return f"--original {original}: does not verify ({other.unusable or other.problems[0]})"
    try:
        stored = read.read_json(root / C.REPRODUCTION, limit=read.limit_of(C.REPRODUCTION))
    except read.BundleError as exc:
        return f"--original {original}: {exc}"
    try:  # rehash held its own side to the contract; the parts it re-derives are open there
        said = records.ReproductionReceipt.from_json(stored)
    except (KeyError, TypeError, AttributeError) as exc:
        check.fail(C.REPRODUCTION, f"is not a reproduction receipt of this harness ({exc.__class__.__name__}: "
                                   f"{str(exc)[:80]}): the two bundles give another", "original")
        return None
    try:
        want = reproduce.receipt(read.load(original), read.load(root))
    except read.BundleError as exc:
        return f"--original {original}: {exc}"
    assert other.digest is not None  # it verified: sealed
    named = said.original.digest
    if named != other.digest:
        check.fail(C.REPRODUCTION, f"names the original {str(named)[:16]}..., but {original} is "
                                   f"{other.digest[:16]}...", "original")
        return None
    # its divergence: values harness reproduce measured from both bundles' arrays
    want = dataclasses.replace(want, outputs=dataclasses.replace(want.outputs, divergence=said.outputs.divergence))
    for path, expected, got in rehash.diff(records.to_json(want), stored):
        check.fail(C.REPRODUCTION, f"{path} claims {rehash.short(got)}, the two bundles give "
                                   f"{rehash.short(expected)}", "original")
    if rehash.NEEDS_ORIGINAL in check.notes:  # answered here
        check.notes.remove(rehash.NEEDS_ORIGINAL)
    check.notes.append(f"reproduction receipt re-derived from this bundle and the original {original}")
    return None


def _check_comparison(check: rehash.Check, docs: dict, root: Path) -> CampaignRecord:
    """comparison.json re-derived from the records; the campaign as its type (rehash held every
    document to the contract: the typed ones are read through the writers' own types)."""
    campaign = CampaignRecord.from_json(docs["campaign"])
    runs = []
    for n, record in enumerate(docs["runs"]):  # each parsed record freed as its typed one is made: one copy
        runs.append(RunRecord.from_json(record))
        docs["runs"][n] = None
    pinned = docs["noise_floor"]
    floor = NoiseFloor.from_json(pinned) if pinned is not None else None
    try:
        derived = comparison.derive(campaign, runs, RunnerReceipt.from_json(docs["runner"]),
                                    CleanupReceipt.from_json(docs["cleanup"]), docs["golden"],
                                    root / "data" / "arrays", floor,
                                    [InstructionRecord.from_json(r) for r in docs["instructions"]],
                                    WorkloadReceipt.from_json(docs["workload"]).digest, docs["environment"].get("sandbox"))
    except (OSError, ValueError, EOFError) as exc:
        check.fail(C.COMPARISON, f"cannot be re-derived from the run records ({exc.__class__.__name__}: "
                                 f"{str(exc)[:80]})", "derived")
        return campaign
    stats = records.to_json(derived.stats)
    rehash.check_stop(check, docs["campaign"], stats)
    rehash.check_family_items(check, docs["campaign"], docs["runner"],
                              [(r.label, r.status, [it.id for it in r.items]) for r in runs], stats)
    claimed = docs["claimed"]
    rehash.report_diff(check, records.to_json(derived), claimed)
    check.status = claimed["status"]
    return campaign


_LOADED: dict = {}  # (campaign.yaml's bytes, its path, the overrides) -> the campaign spec.loads gives
LOADED_KEPT = 64


def _loaded(raw: bytes, source: Path, overrides: dict):
    """spec.loads(raw, source, overrides), remembered by its arguments: it reads nothing else (the
    same bytes give the same campaign, which nothing here changes). harness selftest's walks verify
    one campaign.yaml hundreds of times, and its YAML parser was a tenth of their time."""
    from harness.plan import spec

    key = (raw, str(source), json.dumps(overrides, sort_keys=True))
    if key not in _LOADED:
        if len(_LOADED) >= LOADED_KEPT:
            _LOADED.clear()
        _LOADED[key] = spec.loads(raw, source, overrides)
    return _LOADED[key]


def _check_yaml(check: rehash.Check, docs: dict, campaign: CampaignRecord) -> None:
    """campaign.json must say what campaign.yaml says, field by field, except what the
    machine resolved (SHAs, paths)."""
    from harness.plan import spec
    from harness.plan.suite import number_of

    try:
        raw = check.read(C.CAMPAIGN_YAML, C.MAX_YAML_BYTES)
        parsed = _loaded(raw, Path("/bundle") / (campaign.campaign_path or "campaign.yaml"), campaign.overrides)
    except (OSError, spec.SpecError) as exc:
        check.fail(C.CAMPAIGN_YAML, f"does not load as a campaign: {exc}", "campaign")
        return
    parsed = parsed.with_seed(campaign.seed)  # a seed the runner drew is recorded, not in the YAML
    if isinstance(campaign.cores, list) and len(campaign.cores) == C.DUET_CORES:
        parsed = parsed.with_cores(campaign.cores)  # a duet's cores the runner chose are recorded, not in the YAML
    if parsed.budget_s is not None and parsed.min_rounds is not None and isinstance(campaign.rounds, int) \
            and parsed.min_rounds <= campaign.rounds <= C.MAX_ROUNDS:
        parsed = parsed.with_rounds(campaign.rounds)  # chosen after the first round; rehash binds it
    recorded = number_of(campaign.workload.params)
    if parsed.auto_number and isinstance(recorded, dict):  # calibrated in the pre-flight; rehash binds it to the runs
        try:
            parsed = parsed.with_suite_number(recorded)
        except ValueError as exc:
            check.fail(C.CAMPAIGN_JSON, f"workload.params.number, where campaign.yaml says auto: {exc}", "campaign")
    shas = {v: (parsed.revision(v).rev, campaign.sha(v)) for v in ("base", "candidate")}
    want = records.campaign(parsed, shas, rel=lambda p: None)
    if campaign.interference is None and parsed.interference is None:
        # a bundle of an earlier run schema, whose YAML declares none (rehash binds it): left out
        want = dataclasses.replace(want, interference=None)
    for path, expected, got in rehash.diff(records.to_json(want), docs["campaign"]):
        if path not in records.CAMPAIGN_RESOLVED:
            check.fail(C.CAMPAIGN_JSON, f"{path} is {rehash.short(got)}, campaign.yaml gives "
                                              f"{rehash.short(expected)}", "campaign")
    # What the YAML pins, the receipts must hold: a full SHA is the SHA that ran (the records'
    # SHAs are bound to campaign.json's by both checkers), each fence, each input's hash.
    for variant in ("base", "candidate"):
        revision = parsed.revision(variant)
        if FULL_SHA.fullmatch(revision.rev) and campaign.sha(variant) != revision.rev:
            check.fail(C.CAMPAIGN_JSON, f"revisions.{variant}.sha {rehash.short(campaign.sha(variant))}"
                                              f", campaign.yaml pins {revision.rev}", "campaign")
        got = {path: row.sha256 for path, row in RevisionsReceipt.from_json(docs["revisions"]).variant(variant)
               .fence.items()}
        if got != dict(revision.fence):
            check.fail(C.REVISIONS, f"{variant}.fence {rehash.short(got)}, campaign.yaml pins "
                                          f"{rehash.short(dict(revision.fence))}", "campaign")
    got = InputsReceipt.from_json(docs["inputs"]).pins()
    pins = {inp.name: inp.sha256 for inp in parsed.inputs}
    if got != pins:
        check.fail(C.INPUTS, f"inputs {rehash.short(got)}, campaign.yaml pins {rehash.short(pins)}", "campaign")


def _check_anchors(check: rehash.Check, docs: dict, campaign: CampaignRecord, repo: Path) -> None:
    """The bundle against the repository at --repo: the same campaign file, the same golden
    file, and each revision's tree digest recomputed from its commit. A repository or an
    anchor that cannot be read is AnchorError (exit 2), never a pass."""
    from harness.plan import revisions, spec
    from harness.files import tree_digest

    repo = repository(repo)
    if not campaign.campaign_path:
        check.fail(C.CAMPAIGN_JSON, "no campaign_path to find the campaign in the repository", "anchors")
        return
    source = campaign_file(repo, campaign.campaign_path, campaign.shas())
    if read_anchor(source) != check.read(C.CAMPAIGN_YAML, C.MAX_YAML_BYTES):
        check.fail(C.CAMPAIGN_YAML, f"differs from {source}", "anchors")
    if campaign.golden:
        golden = anchor(repo, campaign.golden, "golden")
        if C.GOLDEN not in check.openable or \
                hashlib.sha256(read_anchor(golden, 16 << 20)).hexdigest() != check.sha256(C.GOLDEN):
            check.fail(C.GOLDEN, f"differs from {golden}", "anchors")
    if campaign.noise_floor:
        floor = anchor(repo, campaign.noise_floor, "noise_floor")
        if C.NOISE_FLOOR not in check.openable or \
                hashlib.sha256(read_anchor(floor, 64 << 10)).hexdigest() != check.sha256(C.NOISE_FLOOR):
            check.fail(C.NOISE_FLOOR, f"differs from {floor}", "anchors")
    try:
        spec_campaign = spec.load(source)
        target = revisions.target_repo(spec_campaign)
    except spec.SpecError as exc:
        check.fail(C.REVISIONS, f"cannot rebuild the target repository: {exc}", "anchors")
        return
    # the workload folder the repository's campaign file names, as the machine resolved it
    recorded = campaign.workload.path
    if spec_campaign.workload.path is None:  # no folder (a suite, or an entry in the target): none stored
        if recorded is not None:
            check.fail(C.CAMPAIGN_JSON, f"workload.path {rehash.short(recorded)}, the repository's campaign file "
                                        "names none", "anchors")
        if docs["workload"] is not None and WorkloadReceipt.from_json(docs["workload"]).files:
            check.fail(C.WORKLOAD, "stores files, but the repository's campaign file names no workload folder",
                       "anchors")
    else:
        workload = Path(spec_campaign.workload.path).resolve()
        if not isinstance(recorded, str) or (repo / recorded).resolve() != workload:
            check.fail(C.CAMPAIGN_JSON, f"workload.path {rehash.short(recorded)}, the repository's campaign file "
                                        f"names {workload}", "anchors")
        _check_workload_files(check, docs, workload)
    receipts = RevisionsReceipt.from_json(docs["revisions"])
    for variant in ("base", "candidate"):
        receipt = receipts.variant(variant)
        with tempfile.TemporaryDirectory(prefix="abba-anchor-") as tmp:
            try:
                revisions.export(target, campaign.sha(variant), Path(tmp) / "tree")
                digest = tree_digest(Path(tmp) / "tree")
            except (RuntimeError, OSError, ValueError) as exc:
                if not check.problems:  # nothing decided yet: the commit could not be read, exit 2
                    raise AnchorError(f"{C.REVISIONS}: {variant}: {str(exc)[:200]}") from None
                # the bundle already fails its own checks (a flipped byte may name another commit):
                # that failure is the verdict, the commit it names one more problem under it
                check.fail(C.REVISIONS, f"{variant}: {str(exc)[:200]}", "anchors")
                continue
        if digest != receipt.tree_sha256:
            check.fail(C.REVISIONS, f"{variant}: tree_sha256 {rehash.short(receipt.tree_sha256)}, "
                                          f"the commit's tree gives {digest[:16]}...", "anchors")


def _check_workload_files(check: rehash.Check, docs: dict, folder: Path) -> None:
    """Each file the bundle stored of the workload must be the repository's, byte for byte,
    in the folder the repository's campaign file names (its working tree, where the runner
    read it). Files the folder gained since are not the bundle's business."""
    receipt = WorkloadReceipt.from_json(docs["workload"]) if docs["workload"] is not None else None
    for row in receipt.files if receipt is not None else ():
        path = (folder / row.path).resolve()
        if folder.resolve() not in path.parents:
            check.fail(C.WORKLOAD, f"{row.path!r} resolves outside the workload folder {folder}", "anchors")
            continue
        try:
            data = read_anchor(path, C.MAX_WORKLOAD_BYTES)
        except AnchorError as exc:
            check.fail(C.WORKLOAD_DIR + row.path, f"missing or unreadable in the repository: {exc}", "anchors")
            continue
        if hashlib.sha256(data).hexdigest() != row.sha256:
            check.fail(C.WORKLOAD_DIR + row.path, f"differs from {path}", "anchors")

