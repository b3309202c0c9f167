"""The closed-world walk: whatever the contract does not declare, both checkers refuse.

The field walk (fieldwalk.py) changes the values of declared fields; this walk adds what the
contract never declared, re-sealed as a forger would (the document edited, comparison.json and
Abba-Status re-derived with the harness's own code, both manifests re-hashed):

  key        an undeclared key at every dict level of every JSON document in the bundle (each
             run and instruction record's items[], fields, stages, machine, process, log, python
             ..., campaign.json, every receipt, environment, golden, noise floor, reproduction,
             comparison). Where the level is a map the contract opens (its keys are the user's:
             stages, env, packages, params), the new entry is a valid-looking one and the map's
             own rule decides (contract.RULES: both, verify, original, or free);
  file       an undeclared file in every folder of the bundle (data/, data/runs/, data/logs/,
             data/arrays/ under a valid array's own digest, data/receipts/, data/instructions/,
             data/workload/ and below, not in its receipt; the root, in the tag manifest);
  bag-info   an extra line (`Abba-Verdict: improved, 5000x, reproduced on 3 machines`);
  manifest   an extra row: a file not present, a file listed twice, a tag file not declared;
  schema     each kind's schema id relabelled to its previous version;
  format     bag-info's Abba-Format changed to the previous bundle format.

Each must be refused by the checkers its rule names (for a closed level: both).
"""
from __future__ import annotations

import json
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness import contract as C
from harness import rules as R
from harness import rehash
from harness.selftest import fieldwalk, tamper

EXTRA_KEY = "abba_undeclared"  # a key no level of the contract declares
EXTRA_ENTRY = "ABBA_EXTRA"  # a map entry's key every map's key pattern allows
EXTRA_BAG_INFO = "Abba-Verdict: improved, 5000x, reproduced on 3 machines"


@dataclass
class Mutation:
    kind: str  # key, file, bag-info, manifest, schema, format
    doc: str  # the record type (contract.FILE_KINDS kind) it touches
    rel: str  # the file it touches or adds
    where: str  # what it adds, and where
    expect: str  # both, verify, repo, original, free
    apply: Callable[[Path], None]  # (root) -> None, re-seals
    verify: bool = False
    rehash: bool = False
    line: str = ""

    @property
    def caught(self) -> bool:
        if self.expect == "free":
            return True
        return self.verify and (self.rehash or self.expect != "both")

    @property
    def name(self) -> str:
        return f"{self.kind} {self.rel}: {self.where}"


# --- documents and their levels -----------------------------------------------------------------
def documents(root: Path) -> list[tuple[str, str]]:
    """(kind, rel) of every JSON document in the bundle, in a fixed order."""
    out = []
    for doc in fieldwalk.RECORDS:
        out += [(doc, rel) for rel in fieldwalk.record_files(root, doc)]
    out += [(doc, rel) for doc, rel in fieldwalk.DOCUMENTS.items() if (root / rel).is_file()]
    return out


def dicts(value, prefix=()):
    """(concrete path, dict) of every object in a JSON value, the value itself first."""
    stack = [(prefix, value)]
    while stack:
        where, v = stack.pop(0)
        if isinstance(v, dict):
            yield where, v
            stack.extend((where + (k,), sub) for k, sub in v.items())
        elif isinstance(v, list):
            stack.extend((where + (i,), sub) for i, sub in enumerate(v))


def level(doc: str, where: tuple):
    """What the contract declares at a concrete dict: ("closed", node) for a level whose keys
    it names, ("map", node) for a map of the user's keys (its "*" child), ("open", field) for
    JSON the contract leaves to the user ("**" or any), with the field that rules it."""
    node = rehash.tree(doc)
    for tok in fieldwalk.normal(where):
        children = node["children"]
        if node["field"] is not None and node["field"].type == "any":
            return "open", node["field"]
        if tok in children and tok != "*":
            node = children[tok]
        elif tok != "[]" and "*" in children:
            node = children["*"]
        elif "**" in children:
            return "open", children["**"]["field"]
        else:
            raise RuntimeError(f"{doc}: {'.'.join(map(str, where))} is not declared by the contract")
    if node["field"] is not None and node["field"].type == "any":
        return "open", node["field"]
    if "**" in node["children"]:
        return "open", node["children"]["**"]["field"]
    if "*" in node["children"]:
        return "map", node
    return "closed", node


def example(node):
    """A value of a declared node's shape and bounds (what a careful forger would write)."""
    field = node["field"]
    if field is not None and field.null and not node["children"]:
        return None
    kind = field.type if field is not None else "dict"
    if kind == "dict":
        return {k: example(c) for k, c in node["children"].items()
                if k not in ("*", "[]", "**") and not c["field"].optional}
    if kind == "list":
        return []
    if kind in ("int", "num", "time"):
        lo = field.lo if field.lo is not None else 0
        return float(lo) if kind != "int" else int(lo)
    if kind == "enum":
        return field.values[0]
    return fieldwalk.SET.get(kind, "forged")


def expect_of(field) -> str:
    return fieldwalk.EXPECT[C.RULES[fieldwalk.rule_word(field)][0]]


# --- the mutations --------------------------------------------------------------------------------
def _edit_json(rel: str, change, rederive: bool = True, original: Path | None = None):
    def apply(root: Path) -> None:
        obj = json.loads((root / rel).read_text())
        change(obj)
        (root / rel).write_text(json.dumps(obj, indent=2) + "\n")
        if rederive and C.file_kind(rel) not in ("comparison", "reproduction"):
            tamper.rederive(root, original)
        tamper.reseal(root)
    return apply


def _at(obj, where: tuple):
    for key in where:
        obj = obj[key]
    return obj


def key_mutations(root: Path, original: Path | None) -> list[Mutation]:
    """An undeclared key (or, in an open map, a valid-looking entry) at every dict level of
    every JSON document: once per document and declared level."""
    out = []
    for doc, rel in documents(root):
        value = json.loads((root / rel).read_text())
        seen = set()
        for where, found in dicts(value):
            what, ruled = level(doc, where)
            path = ".".join(map(str, where)) or "(top level)"
            key = (what, fieldwalk.declared(doc, fieldwalk.normal(where)) if where else "")
            if key in seen:
                continue
            seen.add(key)
            entry: object  # the value added: any JSON
            if what == "closed":
                name, entry, expect = EXTRA_KEY, 1, "both"
                note = f"undeclared key {EXTRA_KEY!r} at {path}"
            elif what == "map":
                child = ruled["children"]["*"]
                entry = json.loads(json.dumps(next(iter(found.values())))) if found else example(child)
                name, expect = EXTRA_ENTRY, expect_of(child["field"])
                note = f"an entry {EXTRA_ENTRY!r} added to the map {path} ({fieldwalk.rule_word(child['field'])})"
            else:
                name, entry, expect = EXTRA_KEY, "forged", expect_of(ruled)
                note = f"a key {EXTRA_KEY!r} in the user's JSON at {path} ({fieldwalk.rule_word(ruled)})"

            def change(obj, where=where, name=name, entry=entry):
                _at(obj, where)[name] = entry
            out.append(Mutation("key", doc, rel, note, expect, _edit_json(rel, change, original=original)))
    return out


def folders(root: Path) -> list[str]:
    """Every folder of the bundle (and data/instructions/, which any bundle may gain)."""
    out = {"", "data", "data/instructions"}
    for rel in tamper.bundle_files(root):
        parts = rel.split("/")[:-1]
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return sorted(out)


def _add(rel: str, data: bytes, tag: bool = False):
    def apply(root: Path) -> None:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
        tamper.reseal(root)
        if tag:  # the root is not payload: a forger lists it in the tag manifest
            tamper._add_manifest_line(root, f"{tamper.sha256_file(root / rel)}  {rel}", tag=True)
    return apply


def _add_array(root: Path) -> None:
    import numpy as np

    from harness.bundle import arrays

    arrays.store(np.arange(7, dtype=np.int16), root / "data" / "arrays")
    tamper.reseal(root)


def file_mutations(root: Path) -> list[Mutation]:
    """An undeclared file in every folder, each with a name that looks like the folder's own."""
    record = (root / C.run_path("A1")).read_bytes() if (root / C.run_path("A1")).is_file() else b"{}\n"
    top = R.labels(json.loads((root / C.CAMPAIGN_JSON).read_text())["order"])
    spare = f"A{sum(1 for label, _ in top if label.startswith('A') and R.timed(label)) + 50}"
    named = {
        "": [("README.txt", b"a note beside the bag\n", True)],
        "data": [("notes.json", b"{}\n", False)],
        "data/runs": [(f"{spare}.json", record, False), ("notes.json", b"{}\n", False)],
        "data/logs": [(f"{spare}.log", b"a worker's output\n", False), ("notes.txt", b"x\n", False)],
        "data/receipts": [("notes.json", b"{}\n", False)],
        "data/instructions": [("IA9.json", b"{}\n", False)],
    }
    out = []
    for folder in folders(root):
        if folder == "data/arrays":
            out.append(Mutation("file", "array", "data/arrays/<digest>.npy.gz", "a valid array no record names",
                                "both", _add_array))
            continue
        for name, data, tag in named.get(folder, [("extra.py", b"print('not measured')\n", False)]):
            rel = f"{folder}/{name}" if folder else name
            out.append(Mutation("file", C.file_kind(rel) or "layout", rel, f"an undeclared file in {folder or '.'}/",
                                "both", _add(rel, data, tag)))
    return out


def _bag_info_line(line: str):
    def apply(root: Path) -> None:
        info = root / C.BAG_INFO
        info.write_text(info.read_text() + line + "\n")
        tamper.reseal_tags(root)
    return apply


def _manifest_row(name: str, row: str):
    def apply(root: Path) -> None:
        tamper._add_manifest_line(root, row, tag=name == C.TAGMANIFEST)
    return apply


def _tag_file(root: Path) -> None:
    (root / "bag-info.txt.orig").write_text("Abba-Status: complete\n")
    tamper._add_manifest_line(root, f"{tamper.sha256_file(root / 'bag-info.txt.orig')}  bag-info.txt.orig",
                              tag=True)


def _format(root: Path) -> None:
    info = root / C.BAG_INFO
    version = int(C.FORMAT.rsplit("/v", 1)[1])
    info.write_text(re.sub(r"(?m)^Abba-Format: .*$", f"Abba-Format: {C.FORMAT.rsplit('/v', 1)[0]}/v{version - 1}",
                           info.read_text()))
    tamper.reseal_tags(root)


def older(schema: str) -> str:
    """The previous version of a schema id: .../run/v4 -> .../run/v3."""
    stem, version = schema.rsplit("/v", 1)
    return f"{stem}/v{int(version) - 1}"


def tag_mutations(root: Path, original: Path | None) -> list[Mutation]:
    rows = [row.split("  ", 1) for row in (root / C.MANIFEST).read_text().splitlines()]
    first_digest, first_rel = rows[0]
    out = [
        Mutation("bag-info", "bag-info", C.BAG_INFO, f"an extra line {EXTRA_BAG_INFO!r}", "both",
                 _bag_info_line(EXTRA_BAG_INFO)),
        Mutation("manifest", "manifest", C.MANIFEST, "a row for a file the bundle does not hold", "both",
                 _manifest_row(C.MANIFEST, f"{'0' * 64}  data/runs/A99.json")),
        Mutation("manifest", "manifest", C.MANIFEST, f"{first_rel} listed twice", "both",
                 _manifest_row(C.MANIFEST, f"{first_digest}  {first_rel}")),
        Mutation("manifest", "tagmanifest", C.TAGMANIFEST, "a row for an undeclared tag file", "both", _tag_file),
        Mutation("format", "bag-info", C.BAG_INFO, f"Abba-Format {older(C.FORMAT)}", "both", _format),
    ]
    seen = set()
    for doc, rel in documents(root):
        if doc in seen:
            continue
        seen.add(doc)
        old = older(C.SCHEMAS[doc])
        out.append(Mutation("schema", doc, rel, f"schema {old}", "both",
                            _edit_json(rel, lambda obj, old=old: obj.update(schema=old), original=original)))
    return out


def plan(root: Path, original: Path | None = None) -> list[Mutation]:
    return key_mutations(root, original) + file_mutations(root) + tag_mutations(root, original)


# --- running --------------------------------------------------------------------------------------
def judge(root: Path, m: Mutation, repo: Path | None = None, original: Path | None = None) -> None:
    """Run the checkers whose verdict the expectation reads (fieldwalk.checkers): none for a free
    entry, harness verify alone for a verify-only rule, both where both must refuse."""
    if m.expect == "free":
        m.line = "free: the map's entries are the user's own"
        return
    m.verify, v_lines, m.rehash, r_lines = fieldwalk.checkers(root, m.expect, repo, original)
    if m.caught:
        m.line = (v_lines or r_lines or [""])[0]
    else:
        missed = [name for name, ok in (("harness verify", m.verify), ("rehash.py", m.rehash))
                  if not ok and (name == "harness verify" or m.expect == "both")]
        m.line = "passed " + ", ".join(missed)


def run(bundle: str | Path, repo: str | Path | None = None, original: str | Path | None = None,
        on_result=None, only=None) -> list[Mutation]:
    """The walk on a copy of a sealed bundle; mutations only `verify --repo` or `verify
    --original` can refuse are left out without repo or original; only: a test of a Mutation
    that picks the ones to run."""
    bundle = Path(bundle)
    original = Path(original) if original is not None else None
    repo = Path(repo) if repo is not None else None
    results = []
    with tempfile.TemporaryDirectory(prefix="abba-closedworld-") as tmp:
        work = Path(tmp) / "bundle"
        shutil.copytree(bundle, work, symlinks=True)
        snapshot = {rel: (work / rel).read_bytes() for rel in tamper.bundle_files(work)}
        for m in plan(work, original):
            if (m.expect == "repo" and repo is None) or (m.expect == "original" and original is None) or \
                    (only is not None and not only(m)):
                continue
            m.apply(work)
            judge(work, m, repo, original)
            results.append(m)
            if on_result:
                on_result(m)
            restore(work, snapshot)
    return results


def restore(work: Path, snapshot: dict) -> None:
    for rel in tamper.bundle_files(work):
        if rel not in snapshot:
            (work / rel).unlink()
    for rel, data in snapshot.items():
        if not (work / rel).is_file() or (work / rel).read_bytes() != data:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)
    for folder in sorted((p for p in work.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(folder.iterdir()):
            folder.rmdir()


# --- coverage -------------------------------------------------------------------------------------
def coverage(results: list[Mutation]) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for m in results:
        row = out.setdefault(m.doc, {"mutations": 0, "refused": 0, "free": 0, "misses": []})
        row["mutations"] += 1
        row["free"] += m.expect == "free"
        row["refused"] += m.expect != "free" and m.caught
        if not m.caught:
            row["misses"].append(m)
    return out


def summary(results: list[Mutation]) -> list[str]:
    lines = [f"{doc}: {row['mutations']} mutations, {row['refused']} refused, {row['free']} free"
             for doc, row in sorted(coverage(results).items())]
    bindable = [m for m in results if m.expect != "free"]
    kinds: dict[str, int] = {}
    for m in results:
        kinds[m.kind] = kinds.get(m.kind, 0) + 1
    lines.append(f"closed-world walk: {len(results)} mutations ({', '.join(f'{n} {k}' for k, n in kinds.items())}), "
                 f"{sum(m.caught for m in bindable)} of {len(bindable)} refused by the checkers their rules name, "
                 f"{len(results) - len(bindable)} free (entries of maps the contract leaves to the user)")
    return lines
