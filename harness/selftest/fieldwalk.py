"""The field-walking mutation suite: coverage of the bundle's records by construction.

Where harness/selftest/tamper.py lists forgeries one by one, this walks the closed contract
(`contract.FIELDS`, `contract.BAG_INFO_FIELDS`): every leaf of every record and receipt in a
bundle (run and instruction records, a reproduction receipt included), every bag-info key and
manifest line, is matched to its declared field, and each field gets every mutation kind its
type allows (scale by 7 and 1/7, 0, negative, huge, 1e400, a value swapped from another run or
item, timestamps shifted, strings changed, booleans flipped, nulls set). Each mutation is made
as a forger would: the record edited, comparison.json and Abba-Status re-derived with the
harness's own code (and a reproduction receipt re-derived from the bundle it re-ran), both
manifests re-hashed. Then it must be refused by the checkers its rule names (contract.RULES:
both; `verify` for campaign.yaml rules; `verify --repo` for anchors; `verify --original` for a
reproduction's other side), unless the rule is "free" (contract.FREE says why) or
`contract.UNBOUND` lists that kind of the field, with the reason no checker can see it.

Each field is mutated at one of its occurrences, chosen deterministically (a candidate run
first: a swap from a base run is then the telling one), so the walk covers every declared
field present in the bundle at a cost of a few hundred checker runs.
"""
from __future__ import annotations

import copy
import datetime as _dt
import functools
import json
import math
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from harness import contract as C
from harness import rules as R
from harness import rehash
from harness.selftest import tamper

NUM_KINDS = ("x7", "/7", "zero", "negative", "huge", "1e400", "swap")
INT_KINDS = ("x7", "zero", "negative", "huge", "swap")
TIME_KINDS = ("shift+1h", "shift-1h", "shift+10y", "zero", "1e400", "swap")
ISO_KINDS = ("shift+1h", "shift-1h", "shift+10y")
STR_KINDS = ("other", "swap")
ALL_KINDS = frozenset(NUM_KINDS + INT_KINDS + TIME_KINDS + ISO_KINDS + STR_KINDS + ("set", "flip"))
HOUR, DECADE = 3600.0, 10 * 365.25 * 86400
INF = "__abba_1e400__"  # written as the literal 1e400, which JSON parses to infinity
# Which checker must refuse a change, by the rule's checker (contract.RULES): what the walk expects.
EXPECT = {"both": "both", "verify": "verify", "repo": "repo", "original": "original", "none": "free"}
MANIFEST_FIELD = C.F("sha256", "layout: every file listed once in a manifest, re-hashed")

# Each single JSON document the walk edits: its FIELDS name and its bag-relative path.
DOCUMENTS = {"campaign": C.CAMPAIGN_JSON, "runner": C.RUNNER, "cleanup": C.CLEANUP,
             "environment": C.ENVIRONMENT, "revisions": C.REVISIONS, "inputs": C.INPUTS,
             "golden": C.GOLDEN, "noise_floor": C.NOISE_FLOOR, "reproduction": C.REPRODUCTION,
             "builds": C.BUILDS, "workload": C.WORKLOAD, "comparison": C.COMPARISON}
RECORDS = {"run": "data/runs", "instructions": "data/instructions"}  # one document per run


@dataclass
class Mutation:
    doc: str  # the FIELDS document (or bag-info, manifest)
    field: str  # the declared path (below a "**" path, the concrete path with [] for indices)
    kind: str
    rel: str  # the file edited
    where: str  # the concrete path edited
    expect: str  # "both", "verify", "repo", "original" or "free"
    verify: bool = False  # refused by harness verify (with --repo or --original where expected; not run when free)
    rehash: bool = False  # refused by rehash.py (run only where both must refuse)
    line: str = ""  # the first problem line, or why nothing was refused

    @property
    def caught(self) -> bool:
        if self.expect == "free":
            return True
        return self.verify and (self.rehash or self.expect != "both")

    @property
    def name(self) -> str:
        return f"{self.doc} {self.field} {self.kind} ({self.rel} {self.where})"


# --- the contract ------------------------------------------------------------------------------
tokens = rehash.tokens


def fields_of(doc: str) -> dict:
    """The declared fields of a document: path -> contract.Field."""
    if doc == "bag-info":
        return C.BAG_INFO_FIELDS
    if doc == "manifest":
        return {"*": MANIFEST_FIELD}
    return C.FIELDS[doc]


def rule_word(field) -> str:
    """The first rule a field names: the one that refuses any change."""
    return field.rule.split(":", 1)[0].strip()


def declared(doc: str, concrete: list[str]) -> str | None:
    """The declared path a concrete path falls under: the most specific match."""
    if doc in ("bag-info", "manifest"):
        key = concrete[0] if doc == "bag-info" else "*"
        return key if key in fields_of(doc) else None
    return _declared(doc, tuple(concrete))


@functools.lru_cache(maxsize=1 << 14)
def _declared(doc: str, concrete: tuple[str, ...]) -> str | None:
    """declared() of a record's path, worked out once per path (a bundle's 1,000 items repeat each
    path of an item; the contract is a constant, as _patterns holds it)."""
    best, score = None, None
    for path, pattern, s in _patterns(doc):
        if _matches(pattern, list(concrete)) and (score is None or s > score):
            best, score = path, s
    return best


_PATTERNS: dict[str, list[tuple[str, list[str], tuple[int, int, int]]]] = {}


def _patterns(doc: str) -> list[tuple[str, list[str], tuple[int, int, int]]]:
    """(declared path, its tokens, how specific it is) for each field of a document, worked out
    once per document (the contract is a constant; rehash.tree holds its nodes the same way)."""
    if doc not in _PATTERNS:
        out = []
        for path, field in fields_of(doc).items():
            pattern = tokens(path)
            if field.type == "any" and pattern[-1] != "**":  # any JSON below it: as "**" would
                pattern = pattern + ["**"]
            out.append((path, pattern,
                        (-pattern.count("**"), len(pattern) if "**" not in pattern else 0, -pattern.count("*"))))
        _PATTERNS[doc] = out
    return _PATTERNS[doc]


def _matches(pattern: list[str], concrete: list[str]) -> bool:
    for i, p in enumerate(pattern):
        if p == "**":
            return True
        if i >= len(concrete) or not (p == concrete[i] or (p == "*" and concrete[i] != "[]")):
            return False
    return len(pattern) == len(concrete)


def unbound(doc: str, field: str, kind: str | None = None) -> str | None:
    """Why no checker can bind this kind of mutation of the field (contract.UNBOUND), or None."""
    for (d, entry), reason in C.UNBOUND.items():
        path, _, only = entry.partition("@")
        if d == doc and path == field and (not only or kind is None or kind in only.split(",")):
            return reason
    return None


def free_reason(doc: str, field: str) -> str | None:
    """Why a field whose rule is "free" is free (contract.FREE: its path, or a path above it, "*"
    standing for any key)."""
    want = tokens(field)
    for (d, path), reason in C.FREE.items():
        if d != doc:
            continue
        have = tokens(path)
        if len(have) <= len(want) and all(h == w or h == "*" for h, w in zip(have, want)):
            return reason
    return None


def expectation(doc: str, field: str, kind: str) -> str:
    """Which checkers must refuse this mutation: from the field's rule and contract.UNBOUND."""
    if unbound(doc, field, kind) is not None:
        return "free"
    return EXPECT[C.RULES[rule_word(fields_of(doc)[field])][0]]


# --- the bundle's leaves ---------------------------------------------------------------------
def leaves(value, prefix=()):
    """(concrete path as a tuple of keys and indices, value) for every leaf of a document."""
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            yield from leaves(sub, prefix + (key,))
    elif isinstance(value, list) and value:
        for i, sub in enumerate(value):
            yield from leaves(sub, prefix + (i,))
    else:
        yield prefix, value


def normal(path: tuple) -> list[str]:
    return ["[]" if isinstance(p, int) else p for p in path]


def record_files(root: Path, doc: str) -> list[str]:
    """The bundle's records of one kind (run or instructions), a candidate's first, then in
    execution order: a swap then takes a base run's value."""
    folder = root / RECORDS[doc]
    if not folder.is_dir():
        return []
    campaign = json.loads((root / C.CAMPAIGN_JSON).read_text())
    order = [label for label, *_ in R.schedule(campaign["order"], (campaign.get("instructions") or {})
                                                 .get("order", ""), R.spread_of(campaign))]
    names = sorted(p.stem for p in folder.glob("*.json"))
    names.sort(key=lambda s: ("B" not in s[:2], order.index(s) if s in order else 1 << 20))
    return [f"{RECORDS[doc]}/{name}.json" for name in names]


def occurrences(root: Path) -> list[tuple[str, str, tuple, object]]:
    """(doc, rel, concrete path, value) for every leaf of every document in the bundle;
    bag-info keys and manifest lines are leaves of their own documents."""
    out: list[tuple[str, str, tuple, object]] = []
    for doc in RECORDS:
        for rel in record_files(root, doc):
            out.extend((doc, rel, where, value) for where, value in leaves(json.loads((root / rel).read_text())))
    for doc, rel in DOCUMENTS.items():
        if (root / rel).is_file():
            obj = json.loads((root / rel).read_text())
            found = list(leaves(obj))
            if doc == "cleanup":  # a worker's row first: a pre-flight process has no record to bind it to
                roles = [p.get("role") for p in obj.get("processes", [])]
                found.sort(key=lambda leaf: leaf[0][:1] == ("processes",) and roles[leaf[0][1]] != "worker")
            out.extend((doc, rel, where, value) for where, value in found)
    for line in (root / C.BAG_INFO).read_text().splitlines():
        key, _, value = line.partition(": ")
        out.append(("bag-info", C.BAG_INFO, (key,), value))
    for name in (C.MANIFEST, C.TAGMANIFEST):
        rows = [row.split("  ", 1) for row in (root / name).read_text().splitlines()]
        # a run record's line first: the files the walk edits are re-hashed in any case
        rows.sort(key=lambda r: (not r[1].startswith("data/runs/"), r[1]))
        for digest, rel in rows:
            out.append(("manifest", name, (rel,), digest))
    return out


# --- mutation kinds ----------------------------------------------------------------------------
def kinds(field, value) -> tuple[str, ...]:
    if value is None:
        return ("set",)
    if isinstance(value, bool):
        return ("flip",)
    if field.type == "time":
        return TIME_KINDS
    if isinstance(value, int):
        return INT_KINDS
    if isinstance(value, float):
        return NUM_KINDS
    if isinstance(value, str):
        return (ISO_KINDS if _iso(value) is not None else ()) + STR_KINDS
    return ()


def _iso(text: str):
    try:
        return _dt.datetime.fromisoformat(text) if re.match(r"^\d{4}-\d\d-\d\d", text) else None
    except ValueError:
        return None


SET = {"str": "forged", "iso": "2030-01-01T00:00:00.000+00:00", "name": "forged", "label": "A1", "gitsha": "1" * 40,
       "sha256": "1" * 64, "date": "2030-01-01", "int": 1, "num": 1.0, "time": 2e9, "bool": True,
       "list": ["forged"], "dict": {"type": "Forged", "message": "forged"}, "any": "forged", "int|str": 1}


def mutated(kind: str, field, value, others: list):
    """The new value, or None when this kind cannot change this value."""
    if kind == "set":
        return field.values[0] if field.type == "enum" else SET.get(field.type, "forged")
    if kind == "flip":
        return not value
    if kind == "swap":
        different = [o for o in others if o != value and type(o) is type(value)]
        if not different:
            return None
        if isinstance(value, (int, float)):  # the most different: the swap a forger would want
            return max(different, key=lambda o: abs(math.log((abs(o) + 1e-12) / (abs(value) + 1e-12))))
        if isinstance(value, str) and _iso(value) is not None and all(_iso(o) for o in different):
            return max(different, key=lambda o: abs((_iso(o) - _iso(value)).total_seconds()))
        return different[0]
    if kind == "other":
        if re.fullmatch(r"[0-9a-f]+", value):
            return value[:-1] + ("0" if value[-1] != "0" else "1")
        return value + "x"
    if kind.startswith("shift"):
        delta = {"+1h": HOUR, "-1h": -HOUR, "+10y": DECADE}[kind[5:]]
        if isinstance(value, str):
            moment = _iso(value)
            if len(value) == 10:  # a date: a day per hour asked
                return (moment + _dt.timedelta(days=3653 if delta == DECADE else (1 if delta > 0 else -1))) \
                    .date().isoformat()
            return (moment + _dt.timedelta(seconds=delta)).isoformat(timespec="milliseconds")
        return value + delta
    if kind == "1e400":
        return INF
    if isinstance(value, int):
        return {"x7": value * 7 if value else 7, "zero": 0, "negative": -value if value else -1,
                "huge": 10 ** 18}[kind]
    return {"x7": value * 7, "/7": value / 7, "zero": 0.0, "negative": -value if value else -1.0,
            "huge": 1e300}[kind]


def _set(obj, where: tuple, value) -> None:
    for key in where[:-1]:
        obj = obj[key]
    obj[where[-1]] = value


def dump(obj) -> str:
    return (json.dumps(obj, indent=2) + "\n").replace(f'"{INF}"', "1e400")


# --- applying and judging ------------------------------------------------------------------------
def apply(root: Path, doc: str, rel: str, where: tuple, value, original: Path | None = None) -> None:
    """Write the mutation into the bundle at root and re-seal it as a forger would."""
    if doc == "bag-info":
        text = (root / rel).read_text()
        (root / rel).write_text(re.sub(rf"(?m)^{re.escape(where[0])}: .*$",
                                       lambda _m: f"{where[0]}: {value}", text))
        tamper.reseal_tags(root)
        return
    if doc == "manifest":
        text = (root / rel).read_text()
        (root / rel).write_text(re.sub(rf"(?m)^[0-9a-f]+  {re.escape(where[0])}$",
                                       lambda _m: f"{value}  {where[0]}", text))
        if rel == C.MANIFEST:
            tamper.reseal_tags(root)
        return
    obj = json.loads((root / rel).read_text())
    _set(obj, where, value)
    (root / rel).write_text(dump(obj))
    if doc not in ("comparison", "reproduction"):
        tamper.rederive(root, original)
    tamper.reseal(root)


def checkers(root: Path, expect: str, repo: Path | None = None,
             original: Path | None = None) -> tuple[bool, Sequence[str], bool, Sequence[str]]:
    """(refused by harness verify, its lines, refused by rehash.py, its lines) for a mutation of
    this expectation (not free): harness verify (with --repo or --original where expected), and
    rehash.py where both must refuse. A checker that crashes refused nothing (its line says so).
    Where both run, what they share (rehash.structure: the layout, arrays and records, read and
    held to the contract) is made once, and each goes on from its own copy, as it would have
    made it: the same bytes give the same structure, so each says what it says alone."""
    from harness.judge import verify

    shared = None
    if expect == "both":
        try:
            shared = rehash.structure(str(root))
        except Exception:  # noqa: BLE001 - each checker meets it again below, and answers it its own way
            shared = None
    v_lines: Sequence[str]
    r_lines: Sequence[str]
    try:
        report = verify.verify(root, repo if expect == "repo" else None,
                               original=original if expect == "original" else None,
                               structured=(copy.deepcopy(shared[0]), _copied(shared[1])) if shared is not None
                               else None)
        v_ok = report.exit_code in (1, 2)
        v_lines = report.problems or [report.unusable or ""]
    except Exception as exc:  # noqa: BLE001 - a checker that crashes refused nothing
        v_ok, v_lines = False, [f"harness verify crashed: {exc.__class__.__name__}: {exc}"]
    r_ok, r_lines = False, []
    if expect == "both":
        try:
            check = rehash.rehash(str(root), structured=shared)
            r_ok, r_lines = bool(check.problems), check.problems
        except rehash.Unusable as exc:
            r_ok, r_lines = True, [str(exc)]
        except Exception as exc:  # noqa: BLE001
            r_ok, r_lines = False, [f"rehash.py crashed: {exc.__class__.__name__}: {exc}"]
    return v_ok, v_lines, r_ok, r_lines


def _copied(value):
    """A JSON value's own copy: its objects and lists new all the way down, its strings, numbers
    and nulls shared (they cannot change). What copy.deepcopy gives of the documents
    rehash.structure parsed (plain JSON, no object in two places), in a third of its time."""
    if type(value) is dict:
        return {key: _copied(sub) for key, sub in value.items()}
    if type(value) is list:
        return [_copied(sub) for sub in value]
    return value


def judge(root: Path, m: Mutation, repo: Path | None, original: Path | None = None) -> None:
    """Run the checkers whose verdict the mutation's expectation reads: none for a free one
    (no checker has to refuse it; m.verify and m.rehash stay False), harness verify alone where
    only verify can bind it (verify, repo, original), both where both must refuse it."""
    if m.expect == "free":
        m.line = "free: " + (unbound(m.doc, m.field, m.kind) or free_reason(m.doc, m.field) or "")
        return
    m.verify, v_lines, m.rehash, r_lines = checkers(root, m.expect, repo, original)
    if m.caught:
        m.line = (v_lines or r_lines or [""])[0]
    else:
        missed = [name for name, ok in (("harness verify", m.verify), ("rehash.py", m.rehash))
                  if not ok and (name == "harness verify" or m.expect == "both")]
        crashed = [line for line in (*v_lines, *r_lines) if "crashed" in line]
        m.line = "passed " + ", ".join(missed) + (f" ({crashed[0]})" if crashed else "")


def plan(root: Path) -> list[tuple[Mutation, tuple[tuple, object]]]:
    """Every (declared field present in the bundle) x (mutation kind its value allows)."""
    found = occurrences(root)
    by_field: dict[tuple[str, str, str], list] = {}
    for doc, rel, where, value in found:
        field = declared(doc, normal(where))
        if field is None:
            raise RuntimeError(f"{rel}: {'.'.join(map(str, where))} is not declared by the contract")
        # below "**" each concrete path (indices as []) is a field of its own
        shown = ".".join(normal(where)).replace(".[]", "[]") if field.endswith("**") or \
            fields_of(doc)[field].type == "any" else field
        by_field.setdefault((doc, field, shown), []).append((rel, where, value))
    out: list[tuple[Mutation, tuple[tuple, object]]] = []  # (mutation, (concrete path, new value))
    for (doc, field, shown), seen in by_field.items():
        rel, where, value = seen[0]
        declared_field = fields_of(doc)[field]
        # swaps come from the other occurrences of the same field, another run's first
        others = [v for r, _w, v in seen[1:] if r != rel] + [v for r, _w, v in seen[1:] if r == rel]
        for kind in kinds(declared_field, value):
            new = mutated(kind, declared_field, value, others)
            if new is None or (new == value and type(new) is type(value)):
                continue
            m = Mutation(doc, shown, kind, rel, ".".join(map(str, where)), expectation(doc, field, kind))
            out.append((m, (where, new)))
    return out


def run(bundle: str | Path, repo: str | Path | None = None, on_result=None, sample: int | None = None,
        original: str | Path | None = None, only=None) -> list[Mutation]:
    """The walk on a copy of a sealed bundle. repo: the repository, for the fields only `verify
    --repo` binds (without it they are not walked); original: the bundle a reproduction re-ran,
    for the receipt's other side (`verify --original`; without it those fields are not walked).
    sample: at most that many kinds per field (chosen deterministically, rotating with the
    field), for a quicker run that still touches every field; only: a test of a Mutation that
    picks the ones to run."""
    bundle = Path(bundle)
    original = Path(original) if original is not None else None
    results = []
    with tempfile.TemporaryDirectory(prefix="abba-fieldwalk-") as tmp:
        work = Path(tmp) / "bundle"
        shutil.copytree(bundle, work, symlinks=True)
        snapshot = {rel: (work / rel).read_bytes() for rel in tamper.bundle_files(work)
                    if not rel.startswith("data/arrays/")}
        planned = [(m, change) for m, change in plan(work)
                   if (repo is not None or m.expect != "repo") and (original is not None or m.expect != "original")]
        if sample is not None:
            planned = _sampled(planned, sample)
        if only is not None:
            planned = [(m, change) for m, change in planned if only(m)]
        for m, (where, new) in planned:
            apply(work, m.doc, m.rel, where, new, original)
            judge(work, m, Path(repo) if repo is not None else None, original)
            results.append(m)
            if on_result:
                on_result(m)
            restore(work, snapshot)
    return results


def restore(work: Path, snapshot: dict) -> None:
    """The bundle copy as it was (its arrays never change)."""
    for rel in tamper.bundle_files(work):
        if rel not in snapshot and not rel.startswith("data/arrays/"):
            (work / rel).unlink()
    for rel, data in snapshot.items():
        if not (work / rel).is_file() or (work / rel).read_bytes() != data:
            (work / rel).parent.mkdir(parents=True, exist_ok=True)
            (work / rel).write_bytes(data)


def _sampled(planned, k):
    fields: dict[tuple, list] = {}
    for item in planned:
        fields.setdefault((item[0].doc, item[0].field), []).append(item)
    out: list = []
    for n, group in enumerate(fields.values()):
        out.extend(group[(n + i) % len(group)] for i in range(min(k, len(group))))
    return out


# --- coverage ------------------------------------------------------------------------------------
def coverage(results: list[Mutation]) -> dict[str, dict]:
    """Per document: fields walked, bindable fields, those with every bindable mutation
    refused, mutations, refused, listed free, and the misses."""
    out: dict[str, dict] = {}
    fields: dict[tuple, list[Mutation]] = {}
    for m in results:
        fields.setdefault((m.doc, m.field), []).append(m)
    for (doc, _field), ms in fields.items():
        row = out.setdefault(doc, {"fields": 0, "bindable": 0, "bound": 0, "mutations": 0, "refused": 0, "free": 0,
                                   "misses": []})
        row["fields"] += 1
        row["mutations"] += len(ms)
        row["free"] += sum(m.expect == "free" for m in ms)
        bindable = [m for m in ms if m.expect != "free"]
        row["refused"] += sum(m.caught for m in bindable)
        if bindable:
            row["bindable"] += 1
            row["bound"] += all(m.caught for m in bindable)
        row["misses"] += [m for m in bindable if not m.caught]
    return out


def summary(results: list[Mutation]) -> list[str]:
    lines = []
    for doc, row in sorted(coverage(results).items()):
        pct = 100.0 * row["bound"] / row["bindable"] if row["bindable"] else 100.0
        lines.append(f"{doc}: {row['mutations']} mutations, {row['refused']} refused, {row['free']} free; "
                     f"{row['bound']}/{row['bindable']} bindable fields bound ({pct:.0f}%), "
                     f"{row['fields'] - row['bindable']} fields free")
    caught = sum(m.caught for m in results if m.expect != "free")
    bindable = sum(m.expect != "free" for m in results)
    lines.append(f"field walk: {len(results)} mutations, {caught} of {bindable} bindable refused by the checkers "
                 f"their rules name, {len(results) - bindable} free (contract.FREE, contract.UNBOUND)")
    return lines


# --- the docs' tables, from the contract ----------------------------------------------------------
DOCS = Path(__file__).resolve().parents[2] / "docs" / "bundle-format.md"
BLOCKS = {"unbound": "what no checker can bind", "fields": "every declared field"}


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def unbound_markdown() -> str:
    """What no checker can bind: every free field (contract.FREE says why) and every single
    mutation kind of a bound field that passes (contract.UNBOUND)."""
    rows = ["| record | field | mutations | why no checker can tell |", "|---|---|---|---|"]
    for (doc, path), reason in C.FREE.items():
        rows.append(f"| {doc} | `{path}` | any (free) | {_esc(reason)} |")
    for (doc, entry), reason in C.UNBOUND.items():
        path, _, only = entry.partition("@")
        rows.append(f"| {doc} | `{path}` | {only.replace(',', ', ') if only else 'any'} | {_esc(reason)} |")
    return "\n".join(rows) + "\n"


def type_text(field) -> str:
    """A field's type and bounds as the docs' table shows them."""
    text = field.type + ("?" if field.null else "")
    if field.values:
        text += " (" + ", ".join(field.values) + ")"
    if field.lo is not None or field.hi is not None:
        text += f" {_num(field.lo)}..{_num(field.hi)}"
    if field.size is not None:
        text += f", at most {field.size} " + ("entries" if field.type in ("list", "dict") else "characters")
    if field.key is not None:
        text += f", keys {field.key.pattern}"
    if field.optional:
        text += ", optional"
    return text


def _num(x) -> str:
    if x is None:
        return ""
    if isinstance(x, int) and x >= 2**20 and (x & (x - 1)) == 0:
        return f"2**{x.bit_length() - 1}"
    return f"{x:g}" if isinstance(x, float) else str(x)


def fields_markdown() -> str:
    """Every declared field of every document, with its type, bounds and rule."""
    rows = ["| document | path | type and bounds | rule (checker) |", "|---|---|---|---|"]
    docs = [(doc, C.FIELDS[doc]) for doc in C.FIELDS] + [("bag-info", C.BAG_INFO_FIELDS)]
    for doc, fields in docs:
        for path, field in fields.items():
            checker = C.RULES[rule_word(field)][0]
            rows.append(f"| {doc} | `{path}` | {_esc(type_text(field))} | {_esc(field.rule)} ({checker}) |")
    return "\n".join(rows) + "\n"


def block_re(name: str) -> re.Pattern:
    return re.compile(rf"(<!-- {name}: begin[^\n]*-->\n)(.*?)(<!-- {name}: end -->)", re.S)


def generated() -> dict[str, str]:
    return {"unbound": unbound_markdown(), "fields": fields_markdown()}


def update_docs(path: str | Path = DOCS) -> bool:
    """Rewrite the generated blocks of the bundle-format page from the contract (a page
    without them gains them at its end); True when it changed.
    (python -c 'from harness.selftest import fieldwalk; fieldwalk.update_docs()')"""
    path = Path(path)
    text = path.read_text() if path.exists() else "# The bundle format\n"
    new = text
    for name, body in generated().items():
        pattern = block_re(name)
        if pattern.search(new):
            new = pattern.sub(lambda m: m.group(1) + body + m.group(3), new, count=1)  # called here, in this turn
        else:
            new += (f"\n<!-- {name}: begin (generated by harness.selftest.fieldwalk from harness/contract.py: "
                    f"{BLOCKS[name]}) -->\n{body}<!-- {name}: end -->\n")
    if new != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new)
    return new != text
