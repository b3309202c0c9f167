"""Reading a bundle: the one loader that report, reproduce, compare, golden, summary, sign and
fleet go through.

It parses; it does not judge. A caller that needs a bundle it can trust verifies it first
(harness/judge/verify.py): the loader only refuses what it cannot read, one line naming the file
(BundleError). Files are read as the checkers read them: no symlink followed, no FIFO or device
opened, each under the limit the contract gives its kind, each JSON strict (contract.parse_json, the checkers' parser),
and the records come back as the named types of harness/records.py, comparison.json as the model of
harness/bundle/model.py."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, overload

from harness import contract as C
from harness import rules as R
from harness.bundle.model import Comparison
from harness.bundle.write import BundleError
from harness.files import NotReadable, read_regular
from harness.records import (CampaignRecord, CleanupReceipt, InputsReceipt, InstructionRecord, MachineClass,
                             ReproductionReceipt, RunnerReceipt, RunRecord, WorkloadReceipt)


def limit_of(rel: str) -> int:
    """The most bytes the file at bag-relative rel may have (its kind's, contract.FILE_KINDS)."""
    kind = C.file_kind(rel)
    limit = next((limit for k, _p, _w, limit in C.FILE_KINDS if k == kind), None)
    return limit if limit is not None else C.log_limit()


def read_bytes(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most limit; a missing one is FileNotFoundError. The read is
    bounded by the file's size too: a buffered read of n bytes reserves n first, and a kind's
    limit (1 GiB for an array) must never become a reservation."""
    try:
        return read_regular(path, max(0, min(limit, os.lstat(path).st_size)))
    except NotReadable as exc:
        raise BundleError(f"{path}: {exc}") from None


def read_json(path: Path, required: bool = True, limit: int = 16 << 20) -> Any:
    """The parsed file; None when it is absent and not required."""
    try:
        return C.parse_json(read_bytes(path, limit))
    except FileNotFoundError:
        if required:
            raise BundleError(f"{path}: missing") from None
        return None
    except OSError as exc:
        raise BundleError(f"{path}: unreadable ({exc.strerror or exc})") from None
    except C.JSONRefused as exc:
        raise BundleError(f"{path}: invalid JSON ({exc})") from None


def digest(bundle: os.PathLike | str) -> Optional[str]:
    """SHA-256 of BUNDLE/tagmanifest-sha256.txt, or None when the bundle is not sealed."""
    try:
        return hashlib.sha256(read_bytes(Path(bundle) / C.TAGMANIFEST, limit_of(C.TAGMANIFEST))).hexdigest()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BundleError(f"{Path(bundle) / C.TAGMANIFEST}: unreadable ({exc.strerror or exc})") from None


@dataclass(frozen=True)
class Bundle:
    """A bundle's records, as named types where they have one."""
    path: Path
    digest: Optional[str]
    campaign: CampaignRecord
    model: Optional[Comparison]  # None only from load(unsealed=True) (seal re-derives it): read .comparison
    runs: list[RunRecord]  # in execution order
    instructions: list[InstructionRecord]  # in execution order
    runner: RunnerReceipt
    environment: dict
    cleanup: CleanupReceipt
    inputs: InputsReceipt
    workload: WorkloadReceipt
    golden: Optional[dict]
    reproduction: Optional[ReproductionReceipt]  # only in a bundle `harness reproduce` made

    @property
    def comparison(self) -> Comparison:
        """data/comparison.json, typed (harness/bundle/model.py)."""
        if self.model is None:
            raise BundleError(f"{self.path}: no comparison.json read (a staging folder: `harness seal` re-derives it)")
        return self.model

    @property
    def machine(self) -> MachineClass:
        return MachineClass.of(self.environment)

    @property
    def arrays(self) -> Path:
        return self.path / "data" / "arrays"

    @property
    def name(self) -> str:
        return self.campaign.name


def load(bundle_dir: os.PathLike | str, unsealed: bool = False) -> Bundle:
    """The bundle's records (BundleError when one cannot be read as its kind). unsealed: a
    staging folder a failed write left (`harness seal`), whose comparison.json may be missing
    (model then None: it is re-derived from the records)."""
    bundle = Path(bundle_dir)
    if not bundle.is_dir():
        raise BundleError(f"{bundle}: not a directory")

    @overload
    def doc(rel: str) -> dict: ...
    @overload
    def doc(rel: str, required: bool) -> Optional[dict]: ...

    def doc(rel: str, required: bool = True) -> Optional[dict]:
        value = read_json(bundle / rel, required, limit_of(rel))
        if value is None and not required:
            return None
        if not isinstance(value, dict):
            raise BundleError(f"{bundle / rel}: expected a JSON object")
        return value

    campaign = doc(C.CAMPAIGN_JSON)
    runner = doc(C.RUNNER)
    labels = campaign.get("labels")
    started = runner.get("runs_started")
    if not isinstance(labels, list) or not isinstance(started, int) or not 0 <= started <= len(labels):
        raise BundleError(f"{bundle / C.CAMPAIGN_JSON}: no labels for runner.json's runs_started")
    runs: list[RunRecord] = []
    for label in labels[:started]:
        if not isinstance(label, str) or not C.LABEL_RE.match(label):
            raise BundleError(f"{bundle / C.CAMPAIGN_JSON}: {label!r} is not a run label")
        try:
            runs.append(RunRecord.from_json(doc(C.run_path(label))))
        except (KeyError, TypeError, AttributeError) as exc:
            raise BundleError(f"{bundle / C.run_path(label)}: not a run record ({exc})") from None
    instructions: list[InstructionRecord] = []
    folder = bundle / "data" / "instructions"
    if folder.is_dir() and not folder.is_symlink():
        for path in sorted(folder.iterdir(), key=lambda p: (len(p.name), p.name))[:4 * C.MAX_INSTRUCTION_RUNS]:
            rel = f"data/instructions/{path.name}"
            if C.file_kind(rel) == "instructions":
                try:
                    instructions.append(InstructionRecord.from_json(doc(rel)))
                except (KeyError, TypeError, AttributeError) as exc:
                    raise BundleError(f"{path}: not an instruction record ({exc})") from None
        order = [label for label, *_ in R.schedule(campaign.get("order", ""),
                                                     (campaign.get("instructions") or {}).get("order", ""),
                                                     R.spread_of(campaign))]
        instructions.sort(key=lambda r: order.index(r.label) if r.label in order else len(order))
    sealed, model = digest(bundle), None
    if unsealed:
        doc(C.COMPARISON, required=False)  # read as before, when there: seal re-derives it
    else:
        try:
            model = Comparison.of(doc(C.COMPARISON))
        except (KeyError, TypeError, ValueError) as exc:
            raise BundleError(f"{bundle / C.COMPARISON}: not a comparison of this harness ({exc})") from None
    def typed(kind: Any, rel: str, data: Optional[dict]) -> Any:
        try:
            return None if data is None else kind.from_json(data)
        except (KeyError, TypeError, AttributeError) as exc:
            raise BundleError(f"{bundle / rel}: not a {C.file_kind(rel)} document of this harness ({exc})") from None

    return Bundle(
        path=bundle, digest=sealed, campaign=typed(CampaignRecord, C.CAMPAIGN_JSON, campaign), model=model, runs=runs,
        instructions=instructions, runner=typed(RunnerReceipt, C.RUNNER, runner), environment=doc(C.ENVIRONMENT),
        cleanup=typed(CleanupReceipt, C.CLEANUP, doc(C.CLEANUP)),
        inputs=typed(InputsReceipt, C.INPUTS, doc(C.INPUTS)), workload=typed(WorkloadReceipt, C.WORKLOAD, doc(C.WORKLOAD)),
        golden=doc(C.GOLDEN, required=False),
        reproduction=typed(ReproductionReceipt, C.REPRODUCTION, doc(C.REPRODUCTION, required=False)))
