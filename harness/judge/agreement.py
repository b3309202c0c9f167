"""Agreement between two bundles of one campaign: the one owner of what `harness reproduce`,
`harness compare A B` and `harness fleet report` say about a pair. Are they one campaign at one
pair of SHAs; are the machines of one class (records.MachineClass); do their outputs agree
(bit for bit on one class; on another class float fields may differ, integers, bools, dtypes,
shapes and errors may not); which items each covers."""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from harness.bundle import model as M
from harness.comparison import parity
from harness.contract import MAX_LISTED
from harness.records import CampaignRecord, MachineClass, OutputItems, Outputs


def other_campaign(a: CampaignRecord, b: CampaignRecord) -> str | None:
    """Why two campaign.json records are not one campaign at one pair of SHAs, or None:
    outputs of different code are not comparable under these rules."""
    for what, x, y in (("name", a.name, b.name), ("base SHA", a.sha("base"), b.sha("base")),
                       ("candidate SHA", a.sha("candidate"), b.sha("candidate"))):
        if x != y:
            return f"{what} {x} vs {y}"
    return None


def same_class(a: MachineClass, b: MachineClass) -> tuple[bool | None, str]:
    """(True, why) when CPU model, vector ISA and BLAS are recorded and equal; (False, why) when
    one recorded on both sides differs; (None, why) when the class cannot be told."""
    keys = MachineClass.CLASS_KEYS
    differ = [k for k in keys if getattr(a, k) and getattr(b, k) and getattr(a, k) != getattr(b, k)]
    if differ:
        return False, "another machine class: " + "; ".join(f"{k} {getattr(a, k)!r} vs {getattr(b, k)!r}"
                                                           for k in differ)
    unknown = [k for k in keys if not (getattr(a, k) and getattr(b, k))]
    if unknown:
        return None, f"machine class not established ({', '.join(unknown)} not recorded)"
    return True, "same machine class (CPU model, vector ISA and BLAS build equal)"


FLOAT_KINDS = "fc"  # dtype kinds whose bits legitimately depend on the machine
REASONS = {"structure": "missing, or another dtype or shape", "float": "float values differ",
           "discrete": "integer or bool values differ"}


def items_of(runs: list) -> list[str]:
    """The items the bundle's ok runs measured (every ok run measures the same ones)."""
    return next(([it.id for it in r.items] for r in runs if r.ok), [])


def _first_ok(runs: list, variant: str):
    return next((r for r in runs if r.ok and r.variant == variant), None)


def _kind(a, b) -> str:
    """How one field differs: structure (missing, dtype or shape), float or discrete bits."""
    if a is None or b is None or (a.dtype, a.shape) != (b.dtype, b.shape):
        return "structure"
    return "float" if a.dtype.lstrip("<>|=")[:1] in FLOAT_KINDS else "discrete"


def compare_outputs(original: list, reproduction: list, same: bool | None) -> Outputs:
    """The two bundles' outputs, per variant (first ok run of each), over the items both
    have. Mismatch rows use parity's form, so parity.divergence can measure them."""
    items: dict = {}
    mismatches, fields, kinds = [], [0, 0], set()
    for variant in ("base", "candidate"):
        a, b = _first_ok(original, variant), _first_ok(reproduction, variant)
        if a is None or b is None:
            continue
        ia, ib = a.item_map(), b.item_map()
        run = f"{variant} {a.label}/{b.label}"
        for item_id in sorted(set(ia) & set(ib)):
            x, y = ia[item_id], ib[item_id]
            items.setdefault(item_id, "identical")
            if x.error != y.error:
                items[item_id] = "error"
                kinds.add("error")
                mismatches.append({"run": run, "item": item_id, "field": None, "kind": "error",
                                   "reason": "recorded errors differ"})
            for name in sorted(set(x.fields) | set(y.fields)):
                f, g = x.fields.get(name), y.fields.get(name)
                fields[0] += 1
                if f is not None and g is not None and f.digest == g.digest:
                    fields[1] += 1
                    continue
                kind = _kind(f, g)
                if items[item_id] in ("identical", "float"):
                    items[item_id] = kind
                kinds.add(kind)
                mismatches.append({"run": run, "item": item_id, "field": name, "kind": kind,
                                   "reason": REASONS[kind],
                                   "reference_digest": f and f.digest, "digest": g and g.digest})
    if not items:
        agree, why = False, "no ok run of a variant to compare"
    elif not mismatches:
        agree, why = True, "identical"
    elif kinds == {"float"} and same is not True:
        agree, why = True, "float fields differ only: expected non-portability across machine classes"
    elif kinds == {"float"}:
        agree, why = False, "float fields differ on a machine of the same class"
    else:
        agree, why = False, f"{'/'.join(sorted(kinds - {'float'}))} differences (not machine-dependent)"
    differing = {i: k for i, k in items.items() if k != "identical"}
    return Outputs(agree=agree, why=why, same_class=same,
                   items=OutputItems(original=len(items_of(original)), reproduction=len(items_of(reproduction)),
                                     compared=len(items), identical=len(items) - len(differing)),
                   items_differing=dict(sorted(differing.items())[:MAX_LISTED]), fields_compared=fields[0],
                   fields_identical=fields[1], kinds=sorted(kinds), mismatch_count=len(mismatches),
                   mismatches=mismatches[:MAX_LISTED], divergence=[])


def divergence_across(mismatches: list[dict], original_arrays: Path, reproduction_arrays: Path) -> list[dict]:
    """parity.divergence over two bundles (Outputs.mismatches, parity's row form): the differing
    arrays, side by side in one folder (content-addressed, so names cannot clash)."""
    from harness.bundle import arrays as tensors

    rows = M.build(list[M.Mismatch], mismatches)
    with tempfile.TemporaryDirectory(prefix="abba-divergence-") as tmp:
        for m in rows:
            for digest, folder in ((m.reference_digest, original_arrays), (m.digest, reproduction_arrays)):
                if digest and tensors.array_path(folder, digest).is_file():
                    shutil.copyfile(tensors.array_path(folder, digest), tensors.array_path(Path(tmp), digest))
        return parity.divergence(rows, Path(tmp))
