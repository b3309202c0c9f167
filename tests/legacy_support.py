"""Bundles of earlier generations for the tests of harness/legacy: one real bundle per frozen
generation under tests/fixtures/legacy/vendor/ID/ (tests/fixtures/legacy/README.md says where each
came from), and the forger's relabelling of today's bundle as an earlier generation."""
from __future__ import annotations

import ast
import json
import re
import shutil
import sys
from pathlib import Path

from conftest import ROOT
from harness import contract as C, legacy
from harness.selftest import tamper

FIXTURES = ROOT / "tests" / "fixtures" / "legacy" / "vendor"


def fixture(gen_id: str) -> Path:
    """The one bundle a generation's fixture folder holds."""
    (bundle,) = [p for p in (FIXTURES / gen_id).iterdir() if p.is_dir()]
    return bundle


def ids_of(gen: legacy.Generation) -> dict[str, str]:
    """Every bundle document's schema id in gen: the manifest's, or before v6 (no contract) the
    SCHEMAS its frozen rehash.py declares."""
    if gen.format is not None:
        return gen.schemas
    tree = ast.parse((Path(gen.folder) / "rehash.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "SCHEMAS":
            return {k: v for k, v in ast.literal_eval(node.value).items() if k not in ("job", "result")}
    raise AssertionError(f"{gen.id}: no SCHEMAS in its frozen rehash.py")


def strip_today(kind: str, doc: dict) -> None:
    """What today's generation added over the newest frozen one (v9-run8: a duet's cores and a
    run's core, the precision asked and each look's precise), dropped from a document of `kind`."""
    if kind == "campaign":
        doc.pop("cores", None)
        doc.pop("precision", None)
    elif kind == "run":
        (doc.get("launch") or {}).pop("core", None)
    elif kind == "comparison" and isinstance((doc.get("stats") or {}).get("sequential"), dict):
        seq = doc["stats"]["sequential"]
        seq.pop("precision", None)
        for look in seq.get("looks") or []:
            look.pop("precise", None)


def relabel(src: Path, dst: Path, gen: legacy.Generation, strip: bool = False) -> Path:
    """A copy of today's bundle src at dst with every schema id and bag-info's Abba-Format set to
    gen's (before v6: the line removed), re-sealed as a forger would. strip: also drop what
    today's generation added over the newest frozen one (strip_today), as a careful forger would
    to make the bundle hold under that generation's closed contract."""
    shutil.copytree(src, dst, symlinks=True)
    ids = ids_of(gen)
    for rel in tamper.bundle_files(dst):
        kind = C.file_kind(rel)
        if not rel.endswith(".json") or kind not in ids:
            continue
        doc = json.loads((dst / rel).read_text())
        if isinstance(doc, dict) and "schema" in doc:
            doc["schema"] = ids[kind]
            if strip:
                strip_today(kind, doc)
            (dst / rel).write_text(json.dumps(doc, indent=2) + "\n")
    info = dst / C.BAG_INFO
    text = re.sub(r"(?m)^Abba-Format: .*\n", "" if gen.format is None else f"Abba-Format: {gen.format}\n",
                  info.read_text())
    info.write_text(text)
    tamper.reseal(dst)
    return dst


sys.modules.setdefault("legacy_support", sys.modules[__name__])
