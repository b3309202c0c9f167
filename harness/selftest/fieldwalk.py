"""The field-walking mutation suite: coverage of the bundle's records by construction.

Where harness/tamper.py lists forgeries one by one, this walks the schema that rehash.py
declares (`rehash.FIELDS`): every leaf of every record and receipt in a bundle, every
bag-info key and manifest line, is matched to its declared field, and each field gets every
mutation kind its type allows (scale by 7 and 1/7, 0, negative, huge, 1e400, a value
swapped from another run or item, timestamps shifted, strings changed, booleans flipped,
nulls set). Each mutation is made as a forger would: the record edited, comparison.json and
Abba-Status re-derived with the harness's own code, both manifests re-hashed. Then it must
be refused by the checkers its rule names (both; `verify` for campaign.yaml rules; `verify
--repo` for anchors), unless `rehash.UNBOUND` lists the field, or that kind of the field,
with the reason no checker can see it.

Each field is mutated at one of its occurrences, chosen deterministically (a candidate run
first: a swap from a base run is then the telling one), so the walk covers every declared
field present in the bundle at a cost of a few hundred checker runs.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from harness import contract as C
from harness import records, rehash
from harness.selftest import tamper

NUM_KINDS = ("x7", "/7", "zero", "negative", "huge", "1e400", "swap")
INT_KINDS = ("x7", "zero", "negative", "huge", "swap")
TIME_KINDS = ("shift+1h", "shift-1h", "shift+10y", "zero", "1e400", "swap")
ISO_KINDS = ("shift+1h", "shift-1h", "shift+10y")
STR_KINDS = ("other", "swap")
HOUR, DECADE = 3600.0, 10 * 365.25 * 86400
INF = "__abba_1e400__"  # written as the literal 1e400, which JSON parses to infinity
RULES_VERIFY = ("campaign",)  # bound by campaign.yaml: only harness verify can tell
RULES_REPO = ("anchors",)  # bound by the repository: only harness verify --repo can tell

# Each JSON document the walk edits: its FIELDS name and its bag-relative paths.
DOCUMENTS = {"campaign": C.CAMPAIGN_JSON, "runner": C.RUNNER, "cleanup": C.CLEANUP,
             "environment": C.ENVIRONMENT, "revisions": C.REVISIONS, "inputs": C.INPUTS,
             "golden": C.GOLDEN, "noise_floor": C.NOISE_FLOOR, "reproduction": C.REPRODUCTION,
             "builds": C.BUILDS, "workload": C.WORKLOAD, "comparison": C.COMPARISON}


@dataclass
class Mutation:
    doc: str  # the FIELDS document
    field: str  # the declared path (below a "**" path, the concrete path with [] for indices)
    kind: str
    rel: str  # the file edited
    where: str  # the concrete path edited
    expect: str  # "both", "verify", "repo" or "free"
    verify: bool = False  # refused by harness verify
    rehash: bool = False  # refused by rehash.py
    line: str = ""  # the first problem line, or why nothing was refused

    @property
    def caught(self) -> bool:
        return {"both": self.verify and self.rehash, "verify": self.verify, "repo": self.verify,
                "free": True}[self.expect]


# --- the schema ------------------------------------------------------------------------------
def tokens(path: str) -> list[str]:
    """'items[].fields.*.shape[]' -> ['items', '[]', 'fields', '*', 'shape', '[]']."""
    return [t for t in re.split(r"\.|(\[\])", path) if t]


def declared(doc: str, concrete: list[str]) -> str | None:
    """The FIELDS path a concrete path falls under: the most specific match."""
    best, score = None, None
    for path in rehash.FIELDS[doc]:
        pattern = tokens(path)
        if _matches(pattern, concrete):
            s = (-pattern.count("**"), len(pattern) if "**" not in pattern else 0, -pattern.count("*"))
            if score is None or s > score:
                best, score = path, s
    return best


def _matches(pattern: list[str], concrete: list[str]) -> bool:
    for i, p in enumerate(pattern):
        if p == "**":
            return True
        if i >= len(concrete) or not (p == concrete[i] or (p == "*" and concrete[i] != "[]")):
            return False
    return len(pattern) == len(concrete)


def expectation(doc: str, field: str, kind: str) -> str:
    """Which checkers must refuse this mutation: from the field's rule and UNBOUND."""
    if (doc, field) in rehash.UNBOUND or any(
            d == doc and f.partition("@")[0] == field and kind in f.partition("@")[2].split(",")
            for d, f in rehash.UNBOUND):
        return "free"
    rule = rehash.FIELDS[doc][field][1].split(":", 1)[0].strip()  # the first rule binds any change
    return "free" if rule == "free" else "verify" if rule in RULES_VERIFY else "repo" if rule in RULES_REPO else "both"


def unbound_reason(doc: str, field: str, kind: str | None = None) -> str | None:
    if (doc, field) in rehash.UNBOUND:
        return rehash.UNBOUND[(doc, field)]
    for (d, f), reason in rehash.UNBOUND.items():
        if d == doc and f.partition("@")[0] == field and (kind is None or kind in f.partition("@")[2].split(",")):
            return reason
    return None


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


def occurrences(root: Path) -> list[tuple[str, str, tuple, object]]:
    """(doc, rel, concrete path, value) for every leaf of every document in the bundle;
    bag-info keys and manifest lines are leaves of their own documents."""
    out = []
    campaign = json.loads((root / C.CAMPAIGN_JSON).read_text())
    runs = sorted((root / "data" / "runs").glob("*.json"))
    # a candidate run first, so that a swap takes a base run's value
    runs.sort(key=lambda p: (not p.stem.startswith("B"), campaign["labels"].index(p.stem)
                             if p.stem in campaign["labels"] else 1 << 20))
    for path in runs:
        for where, value in leaves(json.loads(path.read_text())):
            out.append(("run", f"data/runs/{path.name}", where, value))
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
def kinds(kind: str, value) -> tuple[str, ...]:
    if value is None:
        return ("set",)
    if isinstance(value, bool):
        return ("flip",)
    if kind == "time":
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


def mutated(kind: str, declared_kind: str, value, others: list):
    """The new value, or None when this kind cannot change this value."""
    if kind == "set":
        return {"str?": "forged", "int?": 1, "num?": 1.0, "dict?": {"type": "Forged", "message": "forged"}}.get(
            declared_kind, "forged")
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


def _dump(obj) -> str:
    return (json.dumps(obj, indent=2) + "\n").replace(f'"{INF}"', "1e400")


# --- applying and judging ------------------------------------------------------------------------
def apply(root: Path, doc: str, rel: str, where: tuple, value) -> None:
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
    (root / rel).write_text(_dump(obj))
    if doc != "comparison":
        tamper.rederive(root)
    tamper.reseal(root)


def judge(root: Path, m: Mutation, repo: Path | None) -> None:
    from harness.judge import verify

    try:
        report = verify.verify(root, repo if m.expect == "repo" else None)
        m.verify = report.exit_code in (1, 2)
        v_lines = report.problems or [report.unusable or ""]
    except Exception as exc:  # noqa: BLE001 - a checker that crashes refused nothing
        m.verify, v_lines = False, [f"harness verify crashed: {exc.__class__.__name__}: {exc}"]
    try:
        check = rehash.rehash(str(root))
        m.rehash = bool(check.problems)
        r_lines = check.problems
    except rehash.Unusable as exc:
        m.rehash, r_lines = True, [str(exc)]
    except Exception as exc:  # noqa: BLE001
        m.rehash, r_lines = False, [f"rehash.py crashed: {exc.__class__.__name__}: {exc}"]
    if m.caught and m.expect != "free":
        m.line = (v_lines or r_lines or [""])[0]
    else:
        m.line = "passed " + ", ".join(name for name, ok in (("harness verify", m.verify), ("rehash.py", m.rehash))
                                       if not ok) + (f" ({v_lines[0]})" if "crashed" in (v_lines or [""])[0] else "")


def plan(root: Path) -> list[tuple[Mutation, object]]:
    """Every (declared field present in the bundle) x (mutation kind its value allows)."""
    found = occurrences(root)
    by_field: dict[tuple[str, str], list] = {}
    for doc, rel, where, value in found:
        field = declared(doc, normal(where))
        if field is None:
            raise RuntimeError(f"{rel}: {'.'.join(map(str, where))} is not declared in rehash.FIELDS")
        # below "**" each concrete path (indices as []) is a field of its own
        shown = ".".join(normal(where)).replace(".[]", "[]") if field.endswith("**") else field
        by_field.setdefault((doc, field, shown), []).append((rel, where, value))
    out = []
    for (doc, field, shown), seen in by_field.items():
        rel, where, value = seen[0]
        declared_kind = rehash.FIELDS[doc][field][0]
        # swaps come from the other occurrences of the same field, another run's first
        others = [v for r, _w, v in seen[1:] if r != rel] + [v for r, _w, v in seen[1:] if r == rel]
        for kind in kinds(declared_kind, value):
            new = mutated(kind, declared_kind, value, others)
            if new is None or (new == value and type(new) is type(value)):
                continue
            m = Mutation(doc, shown, kind, rel, ".".join(map(str, where)), expectation(doc, field, kind))
            out.append((m, (where, new)))
    return out


def run(bundle: str | Path, repo: str | Path | None = None, on_result=None,
        sample: int | None = None) -> list[Mutation]:
    """The walk on a copy of a sealed bundle. sample: at most that many kinds per field
    (chosen deterministically, rotating with the field), for a quicker run that still
    touches every field."""
    bundle = Path(bundle)
    results = []
    with tempfile.TemporaryDirectory(prefix="abba-fieldwalk-") as tmp:
        work = Path(tmp) / "bundle"
        shutil.copytree(bundle, work, symlinks=True)
        snapshot = {rel: (work / rel).read_bytes() for rel in tamper.bundle_files(work)
                    if not rel.startswith("data/arrays/")}
        planned = [(m, change) for m, change in plan(work) if repo is not None or m.expect != "repo"]
        if sample is not None:
            planned = _sampled(planned, sample)
        for m, (where, new) in planned:
            apply(work, m.doc, m.rel, where, new)
            judge(work, m, Path(repo) if repo is not None else None)
            results.append(m)
            if on_result:
                on_result(m)
            for rel in tamper.bundle_files(work):
                if rel not in snapshot and not rel.startswith("data/arrays/"):
                    (work / rel).unlink()
            for rel, data in snapshot.items():
                if (work / rel).read_bytes() != data:
                    (work / rel).write_bytes(data)
    return results


def _sampled(planned, k):
    fields: dict[tuple, list] = {}
    for item in planned:
        fields.setdefault((item[0].doc, item[0].field), []).append(item)
    out = []
    for n, group in enumerate(fields.values()):
        out.extend(group[(n + i) % len(group)] for i in range(min(k, len(group))))
    return out


# --- coverage ------------------------------------------------------------------------------------
def coverage(results: list[Mutation]) -> dict[str, dict]:
    """Per document: fields walked, bindable fields, those with every bindable mutation
    refused, mutations, and the misses."""
    out: dict[str, dict] = {}
    fields: dict[tuple, list[Mutation]] = {}
    for m in results:
        fields.setdefault((m.doc, m.field), []).append(m)
    for (doc, _field), ms in fields.items():
        row = out.setdefault(doc, {"fields": 0, "bindable": 0, "bound": 0, "mutations": 0, "free": 0,
                                   "misses": []})
        row["fields"] += 1
        row["mutations"] += len(ms)
        row["free"] += sum(m.expect == "free" for m in ms)
        bindable = [m for m in ms if m.expect != "free"]
        if bindable:
            row["bindable"] += 1
            row["bound"] += all(m.caught for m in bindable)
        row["misses"] += [m for m in bindable if not m.caught]
    return out


def summary(results: list[Mutation]) -> list[str]:
    lines = []
    for doc, row in sorted(coverage(results).items()):
        pct = 100.0 * row["bound"] / row["bindable"] if row["bindable"] else 100.0
        lines.append(f"{doc}: {row['bound']}/{row['bindable']} bindable fields bound ({pct:.0f}%), "
                     f"{row['fields'] - row['bindable']} free, {row['mutations']} mutations "
                     f"({row['free']} of them listed free)")
    caught = sum(m.caught for m in results if m.expect != "free")
    bindable = sum(m.expect != "free" for m in results)
    lines.append(f"field walk: {len(results)} mutations, {caught} of {bindable} bindable refused by the checkers "
                 f"their rules name, {len(results) - bindable} listed free (rehash.UNBOUND)")
    return lines


def unbound_markdown() -> str:
    """The README's list of what no checker can bind, generated from rehash.UNBOUND."""
    rows = ["| record | field | mutations | why no checker can tell |", "|---|---|---|---|"]
    for (doc, field), reason in rehash.UNBOUND.items():
        path, _, only = field.partition("@")
        rows.append(f"| {doc} | `{path}` | {only.replace(',', ', ') if only else 'any'} | {reason} |")
    return "\n".join(rows) + "\n"


README_BLOCK = re.compile(r"(<!-- unbound: begin[^\n]*-->\n)(.*?)(<!-- unbound: end -->)", re.S)


def update_readme(path: str | Path = Path(__file__).resolve().parents[2] / "README.md") -> bool:
    """Rewrite the README's generated block from rehash.UNBOUND; True when it changed.
    (python -c 'from harness import fieldwalk; fieldwalk.update_readme()')"""
    path = Path(path)
    text = path.read_text()
    new = README_BLOCK.sub(lambda m: m.group(1) + unbound_markdown() + m.group(3), text, count=1)
    if new != text:
        path.write_text(new)
    return new != text
