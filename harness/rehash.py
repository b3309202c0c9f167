#!/usr/bin/env python3
"""Re-check an evidence bundle with the Python standard library alone.

    python -S harness/rehash.py BUNDLE [--max-array-bytes N] [--legacy]
    python -S harness/rehash.py BISECT_FOLDER    (what `harness bisect` wrote: every step bundle, then the culprit)

A reviewer who does not trust the harness (or numpy) runs this file, with harness/contract.py and
harness/rules.py beside it (the bundle's closed contract, and the decision rules both sides replay
over it, both standard library only: copy the three files; and harness/legacy/ for --legacy, below). It imports nothing else and nothing from the bundle, opens only files the
manifests list (never through a symlink,
never a FIFO or device), reads every file under the limit its kind declares, parses JSON
strictly, never unpickles and never executes anything it reads. `harness verify` runs the same
checks (it imports this file), then re-derives comparison.json once more with the harness's own
code and re-reads campaign.yaml; this script keeps its own, independent re-derivation of the
numbers.

Its re-derivation is a port, said plainly: `derive`, `derive_stats`, `sequential_stats`,
`with_interference` and `metrics_section` follow harness/comparison/derive.py, analysis.py and
metrics.py step by step (the same formulas, written again over plain JSON with the standard
library: its own t quantile, trimmed mean and winsorized variance, no numpy, no records), so a
reviewer can read the one beside the other. What the two share is only the contract's policy and
the decision rules harness/rules.py holds (the verdict rule and a sequential campaign's ending,
wording included, the confidence sequence, the stop, the metric entries), never code of the
writer's: this paragraph is the one place the port is declared. A port agrees with the writer by construction, not by independence of method: the
tests hold the two to the same JSON on every bundle they make, and a bug written into both would
pass both; `harness reproduce` (a measurement again, not a re-derivation) is what tests a claim.

The contract decides, never the bundle: a file of a kind it does not declare, a key it does
not declare at any level, a bag-info line it does not name, or a schema id that is not the
current one is refused. Each problem is one line naming the file and, for record rules, the
rule in brackets (contract.RULES). Exit 0 intact, 1 problems, 2 unusable input.

A bundle of an earlier generation (harness/legacy, loaded from beside this script like the
contract) is refused in one line that names it and the commands that check it; with --legacy,
the reviewer's word, this script runs that generation's frozen checker (harness/legacy/vendor/)
and shows its verdict as that generation's, with the generation's known holes, never as today's.
"""
import sys

# Never import a module that sits beside this script (python puts the script's folder first
# on sys.path): only the standard library, and the contract loaded from its own file.
_HERE = sys.path[0] if sys.path and __name__ == "__main__" else ""
if _HERE:
    import os.path as _osp

    _here_abs = _osp.abspath(_HERE)
    sys.path[:] = [p for p in sys.path if _osp.abspath(p or ".") != _here_abs]

import ast  # noqa: E402
import collections  # noqa: E402
import datetime  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
import statistics  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402
from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:  # annotations only (as strings: the reviewer's Python may be 3.9)
    from typing import Iterator


def _load_contract():
    """harness/contract.py: imported as part of the harness, or loaded from its file beside
    this script when a reviewer runs it alone."""
    if __package__:
        from harness import contract

        return contract
    return _load_beside("contract.py", "abba_contract")


def _load_rules():
    """harness/rules.py, the decision rules both sides replay: imported as part of the harness, or
    loaded from its file beside this script (after the contract, which it reads as abba_contract)."""
    if __package__:
        from harness import rules

        return rules
    return _load_beside("rules.py", "abba_rules")


def _load_beside(name, as_module):
    """A standard-library module of the harness loaded from its file beside this script, under a
    name of its own (registered, so that rules.py finds the contract this script loaded)."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    spec = importlib.util.spec_from_file_location(as_module, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[as_module] = module
    spec.loader.exec_module(module)
    return module


def _load_legacy():
    """harness/legacy: the frozen checkers of earlier generations, loaded from beside this script
    like the contract; None where a reviewer copied this script and the contract alone."""
    if __package__:
        from harness import legacy

        return legacy
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "legacy", "__init__.py")
    if not os.path.isfile(path):
        return None
    spec = importlib.util.spec_from_file_location("abba_legacy", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


C = _load_contract()
R = _load_rules()
L = _load_legacy()
CHUNK = 1 << 20
SHAPE_PROBLEMS = 20  # shape lines per file; past them the file is refused as a whole
ABSENT_STATES = {"gone": True, "pid reused": True, "alive": False}
LOG_MARKERS = (b"Traceback (most recent call last):", b"SIGKILL")  # a worker that died, though ok
HEX = frozenset("0123456789abcdef")


class Unusable(Exception):
    pass


class Earlier(Unusable):
    """A bundle of an earlier generation (harness/legacy): today's rules do not judge it; the
    message gives the commands that check it under its own (generation: legacy.Generation)."""

    def __init__(self, generation, root):
        super().__init__(f"{C.BAG_INFO}: {L.refusal(generation, root, C.FORMAT)}")
        self.generation = generation


def earlier(root) -> None:
    """Raise Earlier when the bundle at root carries the ids of a frozen earlier generation: read
    before any check, and only to refuse it (or, when the reviewer asks, to hand it to that
    generation's own checker: legacy.run)."""
    generation = L.identify(str(root)) if L is not None else None
    if generation is not None:
        raise Earlier(generation, str(root))


class Problem(str):
    """One refusal as a value: the bundle file, the rule that refused (None for the layout's own
    checks) and what is wrong. It reads as the one line it prints ("FILE: [RULE] TEXT"), so a
    caller that shows problems shows them unchanged; one that sorts them asks for .rule."""
    __slots__ = ("file", "rule", "text")
    file: str  # declared for type checkers; __new__ sets the slots
    rule: "str | None"
    text: str

    def __new__(cls, file, text, rule=None):
        line = super().__new__(cls, f"{show(file)}: " + (f"[{rule}] " if rule else "") + text)
        line.file, line.rule, line.text = file, rule, text
        return line

    def __getnewargs__(self):  # copied or pickled, it is made again from its parts (a str's would be its line)
        return self.file, self.text, self.rule


def show(rel: str) -> str:
    """A path as printed: plain when every character shows as itself (contract.shown), escaped otherwise."""
    return rel if C.all_shown(rel) else ascii(rel)


def short(value: object) -> str:
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Check:
    def __init__(self, root: str, max_array_bytes: "int | None" = None) -> None:
        self.root = root
        self.max_array_bytes = C.DEFAULT_MAX_ARRAY_BYTES if max_array_bytes is None else max_array_bytes
        self.problems: list[Problem] = []
        self.notes: list[str] = []
        self.present: set[str] = set()  # regular files found by the walk
        self.openable: set[str] = set()  # of those, the ones a manifest lists: the only files opened
        self.files = 0
        self.arrays = 0
        self.status: "str | None" = None
        self.digest: "str | None" = None
        self.bag_info: dict[str, str] = {}
        self.array_headers: dict = {}  # digest -> (dtype, shape) of each stored array
        self.json_bytes = 0  # all JSON read so far (contract.MAX_JSON_BYTES_TOTAL)

    def fail(self, rel: str, msg: str, rule: "str | None" = None) -> None:
        self.problems.append(Problem(rel, msg, rule))

    def path(self, rel: str) -> str:
        return os.path.join(self.root, *rel.split("/"))

    # --- reading: listed regular files only, never through a symlink, never blocking ----
    def open_regular(self, rel):
        if rel not in self.openable:
            raise OSError(f"{rel}: not a file the manifests list; not opened")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(self.path(rel), flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{rel}: not a regular file")
        return os.fdopen(fd, "rb")

    def read(self, rel: str, limit: int) -> bytes:
        """The file's bytes, at most limit: refused from its size before anything is read, then
        read in chunks up to its size (never a buffer of the limit's size)."""
        with self.open_regular(rel) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size > limit:
                raise OSError(f"{size} bytes, over the {limit} its kind may have")
            parts, got = [], 0
            while got <= size:
                chunk = fh.read(min(CHUNK, size + 1 - got))
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
        if got > limit:
            raise OSError(f"larger than the {limit} bytes its kind may have")
        return b"".join(parts)

    def sha256(self, rel: str) -> str:
        h = hashlib.sha256()
        with self.open_regular(rel) as fh:
            refuse_unbounded(fh.fileno())
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                h.update(chunk)
        return h.hexdigest()


def refuse_unbounded(fd):
    """OSError for a file too large to hash, or sparse: a 1 TiB file of holes takes a few
    hundred KB on disk and a quarter of an hour to hash."""
    size = os.fstat(fd).st_size
    if size > C.MAX_FILE_BYTES:
        raise OSError(f"{size} bytes, over the {C.MAX_FILE_BYTES}-byte limit for one file; not hashed")
    seek_hole = getattr(os, "SEEK_HOLE", None)
    if size and seek_hole is not None:
        try:
            hole = os.lseek(fd, 0, seek_hole)
        except OSError:
            hole = size
        finally:
            os.lseek(fd, 0, os.SEEK_SET)
        if hole < size:
            raise OSError(f"sparse file (a hole at byte {hole} of {size}); not hashed")


# --- strict, bounded JSON: contract.parse_json (one parser for the bundle's readers and both checkers)
JSONRefused, parse_json = C.JSONRefused, C.parse_json


# --- the closed shape of every document -------------------------------------------------------
def tokens(path):
    """'items[].fields.*.shape[]' -> ['items', '[]', 'fields', '*', 'shape', '[]']."""
    return [t for t in re.split(r"\.|(\[\])", path) if t]


_TREES: dict[str, dict] = {}


def tree(doc: str) -> dict:
    """FIELDS[doc] as nested nodes {"field": Field or None, "children": {token: node}}."""
    if doc not in _TREES:
        fields = C.BAG_INFO_FIELDS if doc == "bag-info" else C.FIELDS[doc] if doc in C.FIELDS else \
            C.RECEIPT_FIELDS[doc]
        root = {"field": C.F("dict", "parsing: the document"), "children": {}}
        for path, field in fields.items():
            node = root
            for tok in (tokens(path) if doc != "bag-info" else [path]):
                node = node["children"].setdefault(tok, {"field": None, "children": {}})
            node["field"] = field
        _TREES[doc] = root
    return _TREES[doc]


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def iso_epoch(text):
    """Seconds of an ISO time with its zone, or None."""
    try:
        moment = datetime.datetime.fromisoformat(text)
    except (TypeError, ValueError):
        return None
    return moment.timestamp() if moment.tzinfo is not None else None


def date_ok(text):
    try:
        return bool(C.DATE_RE.match(text)) and datetime.date.fromisoformat(text) is not None
    except (TypeError, ValueError):
        return False


def _bounded(value, field):
    lo = -(2**63) if field.lo is None else field.lo
    hi = 2**63 if field.hi is None else field.hi
    return lo <= value <= hi


def value_problem(value, field):
    """Why value is not of the field's declared type and bounds, or None."""
    if value is None:
        return None if field.null else "null"
    kind, size = field.type, field.size
    if kind in ("str", "iso", "name", "label", "gitsha", "sha256", "date", "enum"):
        if not isinstance(value, str):
            return f"{short(value)}, not a string"
        if len(value) > (size or C.MAX_STR):
            return f"a string of {len(value)} characters (at most {size or C.MAX_STR})"
        if kind == "iso" and iso_epoch(value) is None:
            return f"{short(value)}, not an ISO time with its zone"
        if kind == "date" and not date_ok(value):
            return f"{short(value)}, not a date YYYY-MM-DD"
        if kind == "name" and not C.NAME_RE.match(value):
            return f"{short(value)}, not a name (letters, digits, '_', '.', '-')"
        if kind == "label" and not C.LABEL_RE.match(value):
            return f"{short(value)}, not a run label"
        if kind == "gitsha" and not C.GITSHA_RE.match(value):
            return f"{short(value)}, not a full git SHA"
        if kind == "sha256" and not C.HEX64_RE.match(value):
            return f"{short(value)}, not a SHA-256"
        if kind == "enum" and value not in field.values:
            return f"{short(value)}, not one of {', '.join(field.values)}"
        return None
    if kind == "int|str":
        if isinstance(value, str):
            return None if len(value) <= (size or C.MAX_STR) else "a string too long"
        kind = "int"
    if kind == "int":
        if not is_int(value):
            return f"{short(value)}, not an integer"
        return None if _bounded(value, field) else f"{value} outside {field.lo}..{field.hi}"
    if kind in ("num", "time"):
        if not is_number(value) or not math.isfinite(value):
            return f"{short(value)}, not a number"
        return None if _bounded(value, field) else f"{value:.6g} outside {field.lo:g}..{field.hi:g}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"{short(value)}, not true or false"
    if kind == "list":
        if not isinstance(value, list):
            return f"{short(value)}, not a list"
        return None if size is None or len(value) <= size else f"a list of {len(value)} (at most {size})"
    if kind == "dict":
        if not isinstance(value, dict):
            return f"{short(value)}, not an object"
        return None if size is None or len(value) <= size else f"an object of {len(value)} keys (at most {size})"
    if kind == "any":
        return None
    return f"of undeclared type {kind}"


def conform(doc: str, value) -> "list[tuple[str, str]]":
    """Every problem of value against FIELDS[doc], closed: (path, problem) pairs, an undeclared
    key at any level among them. Iterative, and it stops at SHAPE_PROBLEMS."""
    out: list[tuple[str, str]] = []
    pending = [(value, tree(doc), "")]
    while pending and len(out) < SHAPE_PROBLEMS:
        v, node, where = pending.pop()
        field = node["field"]
        problem = value_problem(v, field)
        if problem:
            out.append((where or "(top level)", problem))
            continue
        children = node["children"]
        if "**" in children or v is None or field.type == "any":
            continue
        if isinstance(v, dict):
            for key, sub in v.items():
                child = children.get(key)
                if child is None and "*" in children:
                    child = children["*"]
                    pattern = child["field"].key if child["field"] is not None else None
                    if pattern is not None and not pattern.match(key):
                        out.append((f"{where}.{key}" if where else key, "a key its map does not allow"))
                        continue
                if child is None:
                    out.append((f"{where}.{key}" if where else key, "not declared by the contract"))
                    continue
                pending.append((sub, child, f"{where}.{key}" if where else key))
            for key, child in children.items():
                if key not in ("*", "[]") and key not in v and not child["field"].optional:
                    out.append((f"{where}.{key}" if where else key, "missing"))
        elif isinstance(v, list) and "[]" in children:
            for i, sub in enumerate(v):
                pending.append((sub, children["[]"], f"{where}[{i}]"))
    return out


_SHAPES: "dict[tuple[str, bytes], list[tuple[str, str]]]" = {}
SHAPES_KEPT = 4096


def shape_problems(key, value):
    """conform(kind, value) of a document whose bytes have key (kind, their SHA-256), remembered:
    the same bytes parse to the same value, which has the same problems. One checker run meets a
    document once; what checks many bundles that differ in a document or two (harness selftest's
    walks: both checkers after each mutation) holds each of the others to its shape once."""
    if key not in _SHAPES:
        if len(_SHAPES) >= SHAPES_KEPT:
            _SHAPES.clear()
        _SHAPES[key] = conform(key[0], value)
    return _SHAPES[key]


def load_doc(check, kind, rel, required=True):
    """The document at rel, parsed and held to its declared shape and current schema id; None
    (and the reason as a problem) when it is missing, over its size, not JSON or not its shape."""
    if rel not in check.openable:
        if required:
            check.fail(rel, "missing", "files")
        return None
    limit = next(limit for k, _p, _w, limit in C.FILE_KINDS if k == kind)
    try:
        data = check.read(rel, limit)
        check.json_bytes += len(data)
        if check.json_bytes > C.MAX_JSON_BYTES_TOTAL:
            raise Unusable(f"{check.root}: its JSON documents hold more than {C.MAX_JSON_BYTES_TOTAL} bytes in all; "
                           "no bundle of this harness does")
        # the digest of the bytes just read (never the manifest's: a file can change between reads)
        shape_key = (kind, hashlib.sha256(data).digest())
        # bytes met before held to the strict parser (contract.parse_json), which gives what the plain one does
        value = json.loads(data.decode("utf-8")) if shape_key in _SHAPES else parse_json(data)
    except (OSError, JSONRefused) as exc:
        check.fail(rel, str(exc), "parsing")
        return None
    schema = value.get("schema") if isinstance(value, dict) else None
    lacks = C.PREVIOUS_SCHEMAS.get(kind, {}).get(schema)
    if schema != C.SCHEMAS[kind] and lacks is None:
        check.fail(rel, f"schema {short(schema)}: this checker reads {C.SCHEMAS[kind]} only; a bundle of another "
                        "version of the harness is not judged by other rules: re-run its campaign with this harness "
                        "(`harness run` of the campaign file at its campaign_path)", "parsing")
        return None
    # An earlier schema's record (contract.PREVIOUS_SCHEMAS) lacks some keys: they must be absent.
    problems = [(where, problem) for where, problem in shape_problems(shape_key, value)
                if not (lacks and where in lacks and problem == "missing")]
    problems += [(key, f"present, but a {schema} record has no such key") for key in lacks or () if key in value]
    for where, problem in problems:
        check.fail(rel, f"{where}: {problem}", "parsing")
    return None if problems else value


# --- layout ------------------------------------------------------------------------------------
def unsafe_path(rel: str) -> "str | None":
    if not rel:
        return "empty"
    if rel.startswith("/"):
        return "absolute"
    if any(part in ("..", ".", "") for part in rel.split("/")):
        return "'..', '.' or empty component"
    if any(ch in rel for ch in "\r\n\\%\0"):
        return "forbidden character"
    return None


def walk(check):
    """Every regular file under the root as a '/'-separated relative path. Iterative, never
    deeper than contract.MAX_DEPTH folders, never more than contract.MAX_FILES entries; symlinks
    are reported and never followed; other special files are reported."""
    pending, seen = [("", 0)], 0
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(os.path.join(check.root, *folder.split("/")) if folder else check.root) as it:
                entries = []
                for entry in it:
                    seen += 1
                    if seen > C.MAX_FILES:
                        raise Unusable(f"{check.root}: more than {C.MAX_FILES} entries; no bundle of this harness "
                                       "holds that many, and none is read")
                    entries.append(entry)
        except OSError as exc:
            check.fail(folder or ".", f"cannot be listed ({exc.__class__.__name__})")
            continue
        for entry in sorted(entries, key=lambda e: e.name):
            rel = f"{folder}/{entry.name}" if folder else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError as exc:
                check.fail(rel, f"cannot be examined ({exc.__class__.__name__})")
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(entry.path)
                except OSError:
                    target = "?"
                check.fail(rel, f"is a symlink (-> {show(target)}); bundles hold regular files only")
            elif stat.S_ISREG(st.st_mode):
                check.present.add(rel)
            elif stat.S_ISDIR(st.st_mode):
                if depth + 1 >= C.MAX_DEPTH:
                    check.fail(rel, f"folders nested deeper than {C.MAX_DEPTH} levels; not descended")
                else:
                    pending.append((rel, depth + 1))
            else:
                check.fail(rel, "not a regular file")


def text_of(check, rel, limit):
    if rel not in check.openable:
        return ""
    try:
        return check.read(rel, limit).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        check.fail(rel, f"unreadable ({str(exc)[:80] or exc.__class__.__name__})")
        return ""


def limit_of(kind):
    return next(limit for k, _p, _w, limit in C.FILE_KINDS if k == kind)


def parse_manifest(check, name, kind):
    text = text_of(check, name, limit_of(kind))
    rows = {}
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    elif text:
        check.fail(name, "last line has no newline")
    if not text:
        lines = []
    previous = None
    for n, line in enumerate(lines, 1):
        digest, sep, rel = line.partition("  ")
        if not sep or len(digest) != 64 or not set(digest) <= HEX:
            check.fail(name, f"line {n}: not '<sha256>  <path>'")
            continue
        problem = unsafe_path(rel)
        if problem:
            check.fail(name, f"line {n}: unsafe path {ascii(rel)} ({problem})")
            continue
        if rel in rows:
            check.fail(name, f"line {n}: {show(rel)} listed twice")
        elif previous is not None and rel.encode() < previous.encode():
            # One order, so that a bundle's digest names one byte sequence of its tag files.
            check.fail(name, f"line {n}: rows not sorted by path ({show(rel)} after {show(previous)})")
        previous = rel
        rows[rel] = digest
    return rows


def check_hash(check, rel, digest, manifest):
    if rel not in check.present:
        check.fail(rel, f"missing (listed in {manifest})")
        return
    try:
        actual = check.sha256(rel)
    except OSError as exc:
        check.fail(rel, f"unreadable ({str(exc)[:80] or exc.__class__.__name__})")
        return
    if actual != digest:
        check.fail(rel, f"hash mismatch: sha256 {actual[:16]}..., {manifest} says {digest[:16]}...")


def parse_bag_info(check):
    """bag-info.txt: exactly the keys the contract names, each once, each of its type."""
    # as the tag manifest says: listed there, present, and of the digest it gives
    intact = C.BAG_INFO in check.openable and not any(p.file == C.BAG_INFO for p in check.problems)
    fields = {}
    for n, line in enumerate(text_of(check, C.BAG_INFO, limit_of("bag-info")).splitlines(), 1):
        key, sep, value = line.partition(": ")
        if not sep or not key or key != key.strip() or value != value.strip():
            check.fail(C.BAG_INFO, f"line {n}: not 'Key: value'", "bag-info")
            continue
        if key in fields:
            check.fail(C.BAG_INFO, f"line {n}: {key} given twice", "bag-info")
            continue
        if key not in C.BAG_INFO_FIELDS:
            check.fail(C.BAG_INFO, f"line {n}: {show(key[:60])} is not a key the contract declares (it says "
                                   "nothing the checkers read; a claim there would be believed by no one)", "bag-info")
            continue
        problem = value_problem(value, C.BAG_INFO_FIELDS[key])
        if problem:
            check.fail(C.BAG_INFO, f"{key}: {problem}", "bag-info")
        fields[key] = value
    for key in C.BAG_INFO_FIELDS:
        if key not in fields:
            check.fail(C.BAG_INFO, f"no {key} line (required)", "bag-info")
    # A bundle of an earlier generation this harness ships is refused before this (earlier());
    # what reaches here names no generation it knows: one line, not one per file it holds.
    shipped = "with harness/legacy beside it, `--legacy` checks the earlier generations it ships under their own rules"
    if "Abba-Format" not in fields and intact:
        raise Unusable(f"{C.BAG_INFO}: no Abba-Format line: a bundle of a harness before abba-harness/bundle/v6, or of "
                       f"none; this checker reads {C.FORMAT} only ({shipped}); re-run its campaign with this harness to "
                       "get a bundle it judges")
    if fields.get("Abba-Format") not in (None, C.FORMAT) and intact:
        said = ", ".join(f"{key} {short(fields[key])}" for key in ("Bag-Software-Agent", "Abba-Harness-Commit")
                         if key in fields)
        raise Unusable(f"{C.BAG_INFO}: Abba-Format {short(fields['Abba-Format'])} with schema ids of no generation "
                       f"this checker knows: a newer harness's bundle (it says {said or 'nothing of its harness'}), or "
                       f"one relabelled; this checker reads {C.FORMAT} only ({shipped}); check a newer bundle with the "
                       "harness that sealed it, or re-run its campaign with this harness")
    return fields


def check_layout(check):
    root = check.root
    if not os.path.isdir(root) or os.path.islink(root):
        raise Unusable(f"{root}: not a directory")
    walk(check)
    present = check.present
    if C.TAGMANIFEST not in present:
        if any(p.startswith("data/") for p in present):
            check.fail(C.TAGMANIFEST, "missing: incomplete, the bundle was never sealed")
            return None
        raise Unusable(f"{root}: not an evidence bundle (no tagmanifest-sha256.txt, no data/)")
    check.openable.add(C.TAGMANIFEST)
    try:
        check.digest = check.sha256(C.TAGMANIFEST)
    except OSError as exc:
        raise Unusable(f"{root}/{C.TAGMANIFEST}: unreadable ({exc})") from None
    tag_rows = parse_manifest(check, C.TAGMANIFEST, "tagmanifest")
    for rel in C.TAG_FILES:
        if rel not in tag_rows:
            check.fail(C.TAGMANIFEST, f"{rel} is not listed")
    for rel in tag_rows:
        if rel not in C.TAG_FILES:
            check.fail(C.TAGMANIFEST, f"lists unexpected file {show(rel)}")
    check.openable |= set(C.TAG_FILES) & set(tag_rows) & present
    for rel, digest in tag_rows.items():
        if rel in C.TAG_FILES:
            check_hash(check, rel, digest, C.TAGMANIFEST)
    if C.BAGIT in check.openable:
        try:
            if check.read(C.BAGIT, len(C.BAGIT_TXT)) != C.BAGIT_TXT:
                check.fail(C.BAGIT, "not the BagIt 1.0 declaration")
        except OSError as exc:
            check.fail(C.BAGIT, f"not the BagIt 1.0 declaration ({str(exc)[:80]})")
    rows = parse_manifest(check, C.MANIFEST, "manifest")
    for rel, digest in rows.items():
        kind = C.file_kind(rel)
        if kind is None or kind in ("bagit", "bag-info", "manifest", "tagmanifest"):
            check.fail(rel, "not a file a bundle holds (the contract declares no such kind)", "files")
            continue
        if rel in present:
            check.openable.add(rel)
        check_hash(check, rel, digest, C.MANIFEST)
    expected = set(rows) | set(C.TAG_FILES) | {C.TAGMANIFEST}
    for rel in sorted(present - expected):
        check.fail(rel, "extra file, not in any manifest")
    check.files = len(rows)
    check.bag_info = parse_bag_info(check)
    want = check.bag_info.get("Payload-Oxum")
    listed = [rel for rel in rows if rel in present]
    got = f"{sum(os.lstat(check.path(rel)).st_size for rel in listed)}.{len(listed)}"
    if want is not None and want != got:
        check.fail(C.BAG_INFO, f"Payload-Oxum {want} but the payload is {got}", "layout")
    return rows


# --- arrays ----------------------------------------------------------------------------------
def npy_header(fh):
    """(canonical dtype, shape, itemsize, swap, kind) from an open .npy stream at 0; ValueError
    for anything but a plain C-order array of bool, int, uint, float or complex."""
    magic = fh.read(8)
    if len(magic) != 8 or magic[:6] != C.NPY_MAGIC:
        raise ValueError("not a .npy file (bad magic)")
    major, minor = magic[6], magic[7]
    if major not in (1, 2, 3) or minor != 0:
        raise ValueError(f"unsupported .npy version {major}.{minor}")
    width = 2 if major == 1 else 4
    raw_len = fh.read(width)
    if len(raw_len) != width:
        raise ValueError("truncated header length")
    size = int.from_bytes(raw_len, "little")
    if size > C.MAX_NPY_HEADER:
        raise ValueError(f"header of {size} bytes is larger than {C.MAX_NPY_HEADER}")
    blob = fh.read(size)
    if len(blob) != size:
        raise ValueError("truncated header")
    text = blob.decode("utf-8" if major == 3 else "latin1")
    try:
        header = ast.literal_eval(text)  # literals only: nothing is executed
    except Exception as exc:  # noqa: BLE001 - any malformed header is a finding
        raise ValueError(f"header is not a literal dict ({exc.__class__.__name__})") from None
    if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
        raise ValueError("header is not {'descr', 'fortran_order', 'shape'}")
    descr, fortran, shape = header["descr"], header["fortran_order"], header["shape"]
    if not isinstance(descr, str):
        raise ValueError("structured dtype refused")
    if fortran is not False:
        raise ValueError("fortran_order arrays refused (the harness stores C order only)")
    if not isinstance(shape, tuple) or len(shape) > C.MAX_SHAPE_DIMS or \
            not all(type(n) is int and 0 <= n < 2**62 for n in shape):
        raise ValueError(f"bad shape {str(shape)[:60]}")
    refused = C.dtype_problem(descr)
    if refused:
        raise ValueError(f"dtype {descr!r} refused: {refused}")
    m = C.DTYPE_RE.match(descr)
    order, kind, itemsize = m.group(1), m.group(2), int(m.group(3))
    if order == "=":
        order = "<" if sys.byteorder == "little" else ">"
    swap = order == ">" and itemsize > 1
    canonical = ("|" if itemsize == 1 else "<") + kind + str(itemsize)
    return canonical, list(shape), itemsize, swap, kind


def _byteswap(data, itemsize, kind):
    """Big endian to little endian, element by element (complex: each half)."""
    width = itemsize // 2 if kind == "c" else itemsize
    out = bytearray(len(data))
    for start in range(width):
        out[start::width] = data[width - 1 - start::width]
    return bytes(out)


def array_chunks(check, rel, cap):
    """(canonical dtype, shape, kind, itemsize, chunks): the array's little-endian C-order data
    bytes as a generator of whole elements; a header declaring more than cap is refused first."""
    raw = check.open_regular(rel)
    try:
        refuse_unbounded(raw.fileno())
        fh = gzip.GzipFile(fileobj=raw, mode="rb")
        descr, shape, itemsize, swap, kind = npy_header(fh)
    except BaseException:
        raw.close()
        raise
    want = math.prod(shape) * itemsize
    if want > cap:
        raw.close()
        raise ValueError(f"header declares {want} bytes, over the cap of {cap} (--max-array-bytes)")

    def chunks():
        try:
            step = max(itemsize, (CHUNK // itemsize) * itemsize)
            got = 0
            while got < want:
                chunk = fh.read(min(step, want - got))
                if not chunk:
                    break
                if len(chunk) % itemsize and got + len(chunk) < want:
                    chunk += fh.read(itemsize - len(chunk) % itemsize)
                got += len(chunk)
                yield _byteswap(chunk, itemsize, kind) if swap else chunk
            if got != want:
                raise ValueError(f"data is {got} bytes, shape {shape} of {descr} needs {want}")
            if fh.read(1):
                raise ValueError(f"trailing bytes after the {want} data bytes")
        finally:
            raw.close()

    return descr, shape, kind, itemsize, want, chunks()


def array_digest(check, rel, header_only=False):
    """(digest, dtype, shape): sha256(prefix + {"dtype", "shape"} + newline + C-order
    little-endian bytes), streamed. header_only: the data bytes the header declares."""
    descr, shape, _kind, _size, want, chunks = array_chunks(check, rel, 1 << 62 if header_only else
                                                            check.max_array_bytes)
    if header_only:
        chunks.close()
        return want
    h = hashlib.sha256(C.ARRAY_PREFIX)
    h.update(json.dumps({"dtype": descr, "shape": shape}, sort_keys=True, separators=(",", ":")).encode())
    h.update(b"\n")
    for chunk in chunks:
        h.update(chunk)
    return h.hexdigest(), descr, shape


def check_arrays(check):
    """Digests of the stored arrays that re-hash to their names; headers kept for the records.
    First every header alone: when the arrays declare more than the budget in all, none is
    inflated."""
    stored: set[str] = set()
    named = []
    for rel in sorted(p for p in check.openable if C.file_kind(p) == "array"):
        digest = rel.rsplit("/", 1)[1][: -len(C.ARRAY_SUFFIX)]
        try:
            declared = array_digest(check, rel, header_only=True)
        except (OSError, ValueError, EOFError, zlib.error) as exc:
            check.fail(rel, f"unreadable array ({str(exc)[:120]})")
            continue
        named.append((rel, digest, declared))
    total = sum(declared for _, _, declared in named)
    if total > check.max_array_bytes:
        check.fail("data/arrays", f"the stored arrays declare {total} bytes decompressed in all, over the budget "
                                  f"of {check.max_array_bytes} (--max-array-bytes); none was inflated", "arrays")
        return stored
    for rel, digest, _ in named:
        try:
            actual, descr, shape = array_digest(check, rel)
        except (OSError, ValueError, EOFError, zlib.error) as exc:
            check.fail(rel, f"unreadable array ({str(exc)[:120]})")
            continue
        if actual != digest:
            check.fail(rel, f"array content hashes to {actual[:16]}..., not the digest in its name")
        stored.add(digest)
        check.array_headers[digest] = (descr, shape)
        check.arrays += 1
    return stored


FLOAT_FORMATS = {("f", 2): ("e", "H"), ("f", 4): ("f", "I"), ("f", 8): ("d", "Q")}


def ulp_distance(check, digest_a, digest_b):
    """The most units in the last place between two stored float arrays of one dtype and
    shape, element by element (NaN against NaN of any payload: 0; NaN against a number, or an
    infinity against a finite number: None, no tolerance covers it). None for other dtypes."""
    return ulp_and_dtype(check, digest_a, digest_b)[0]


def ulp_and_dtype(check, digest_a, digest_b):
    """ulp_distance, and the name of the float dtype both arrays have (contract.FLOAT_NAMES) or None."""
    rel_a, rel_b = C.array_path(digest_a), C.array_path(digest_b)
    da, sa, ka, ia, _, ca = array_chunks(check, rel_a, check.max_array_bytes)
    db, sb, kb, ib, _, cb = array_chunks(check, rel_b, check.max_array_bytes)
    try:
        if (da, sa) != (db, sb) or (ka, ia) not in FLOAT_FORMATS:
            return None, None
        name = C.FLOAT_NAMES[ia]
        _, int_code = FLOAT_FORMATS[(ka, ia)]
        bits = 8 * ia
        top = 1 << (bits - 1)
        exp_mask = ((1 << {2: 5, 4: 8, 8: 11}[ia]) - 1) << {2: 10, 4: 23, 8: 52}[ia]
        frac_mask = (1 << {2: 10, 4: 23, 8: 52}[ia]) - 1
        worst, rest_a, rest_b = 0, b"", b""  # noqa: F841 (bits: the width the masks follow)
        for chunk_a, chunk_b in zip(ca, cb):
            chunk_a, chunk_b = rest_a + chunk_a, rest_b + chunk_b
            n = min(len(chunk_a), len(chunk_b)) // ia
            rest_a, rest_b = chunk_a[n * ia:], chunk_b[n * ia:]
            xs = struct.unpack(f"<{n}{int_code}", chunk_a[:n * ia])
            ys = struct.unpack(f"<{n}{int_code}", chunk_b[:n * ia])
            for x, y in zip(xs, ys):
                if x == y:
                    continue
                nan_x = (x & exp_mask) == exp_mask and x & frac_mask
                nan_y = (y & exp_mask) == exp_mask and y & frac_mask
                if nan_x and nan_y:
                    continue
                inf_x = (x & exp_mask) == exp_mask and not x & frac_mask
                inf_y = (y & exp_mask) == exp_mask and not y & frac_mask
                if nan_x or nan_y or inf_x or inf_y:
                    return None, name
                ox = -(x & (top - 1)) if x & top else x  # monotone in the float's value; -0.0 is +0.0
                oy = -(y & (top - 1)) if y & top else y
                worst = max(worst, abs(ox - oy))
        return worst, name
    finally:
        ca.close()
        cb.close()


# --- record rules --------------------------------------------------------------------------------
def bound(x):
    """x with the tolerance every measured bound gets (float sums, two clocks)."""
    return x * (1 + C.SLOT_TOL) + C.SLOT_ABS_S


def timeout_bound(timeout_s):
    """How long a timeout can let a process or campaign live: the runner's kill and reap."""
    return timeout_s * (1 + C.TIMEOUT_TOL) + C.TIMEOUT_GRACE_S


def clock_tol(span_s, absolute=None):
    """How far a wall-clock reading and a monotonic span may disagree over span_s."""
    return (C.CLOCK_TOL_S if absolute is None else absolute) + C.CLOCK_RATE_TOL * abs(span_s)


def check_process(check, rel, process, runner, campaign):
    """A run's process: its wall fits between its start and end, which lie inside the
    campaign's, and it lived no longer than the run timeout lets it."""
    if process["ended_at"] < process["started_at"] or abs(process["wall_s"] - (
            process["ended_at"] - process["started_at"])) > clock_tol(process["wall_s"], C.PROCESS_TOL_S):
        check.fail(rel, "process wall does not fit between its start and end", "physics")
    if process["started_at"] < runner["started_at"] - C.CLOCK_TOL_S or \
            process["ended_at"] > runner["ended_at"] + clock_tol(process["wall_s"]):
        check.fail(rel, "process ran outside the campaign's start and end (runner.json)", "physics")
    if process["wall_s"] > timeout_bound(campaign["timeouts"]["run_s"]):
        check.fail(rel, f"its process lived {process['wall_s']:.6g} s, past the run timeout of "
                        f"{campaign['timeouts']['run_s']} s", "physics")


def check_log(check, record):
    """The run's log is the one its record names: its path, size and SHA-256, all or the head
    and tail of what the worker wrote (contract.cut_log), and no sign of a worker that died."""
    rel, log = C.log_path(record["label"]), record["log"]
    if log["path"] != rel:
        check.fail(C.run_path(record["label"]) if C.LABEL_RE.match(record["label"]) else
                   C.instructions_path(record["label"]), f"log.path {short(log['path'])}, expected {rel}", "files")
        return
    if rel not in check.openable:
        check.fail(rel, "missing: every started run has its log", "files")
        return
    size = os.lstat(check.path(rel)).st_size
    limit = C.log_limit()
    cut = log["written"] - C.LOG_HEAD_BYTES - C.LOG_TAIL_BYTES
    want = log["written"] if cut <= 0 else C.LOG_HEAD_BYTES + C.LOG_TAIL_BYTES + len(C.LOG_CUT_MARK % cut)
    if log["truncated"] != (cut > 0) or log["bytes"] != want:
        check.fail(rel, f"the record says {log['bytes']} bytes kept of {log['written']} written (truncated "
                        f"{log['truncated']}); the rule keeps {want}", "files")
    elif size != log["bytes"] or size > limit:
        check.fail(rel, f"{size} bytes, the record says {log['bytes']}", "files")
    elif check.sha256(rel) != log["sha256"]:
        check.fail(rel, "its SHA-256 is not the one its record names", "files")
    if record["status"] == "ok":
        marker = log_marker(check, rel)
        if marker:
            check.fail(rel, f"holds {marker} while its record says ok (a worker that raised or was killed fails "
                            "its run)", "status")


def log_marker(check, rel):
    """The first LOG_MARKERS entry at the start of a line of the log, streamed, or None."""
    tail = b"\n"
    try:
        with check.open_regular(rel) as fh:
            refuse_unbounded(fh.fileno())
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    return None
                text = tail + chunk
                for marker in LOG_MARKERS:
                    if b"\n" + marker in text:
                        return marker.decode()
                tail = text[-64:]
    except OSError:
        return None  # the layout check names an unreadable file


def check_interpreter(check, rel, record, env):
    """A run's interpreter is the one environment.json names for its variant."""
    if record["python"] is None:
        return
    want = env["interpreters"][record["variant"]]
    for key in ("executable", "version", "implementation"):
        if record["python"][key] != want[key]:
            check.fail(rel, f"python.{key} {short(record['python'][key])}, environment.json's {record['variant']} "
                            f"interpreter has {short(want[key])}", "identity")


def check_run(check, record, label, index, variant, campaign, runner, env, last):
    """The rules one run record keeps beyond its shape; True when it is sound to derive from."""
    rel = C.run_path(label)
    process, wall, status = record["process"], record["wall_s"], record["status"]
    if record["label"] != label:
        check.fail(rel, f"label {short(record['label'])} in the file of run {label}", "plan")
    if record["index"] != index:
        check.fail(rel, f"index {record['index']}, but {label} is run {index} of the order", "plan")
    if record["variant"] != variant:
        check.fail(rel, f"variant {short(record['variant'])}, but {label} is a {variant} run", "identity")
    if record["sha"] != campaign["revisions"][variant]["sha"]:
        check.fail(rel, f"sha {short(record['sha'])} is not the campaign's {variant} SHA", "identity")
    if record["slots"] != campaign["slots"]:
        check.fail(rel, f"slots {record['slots']}, the campaign has {campaign['slots']}", "identity")
    check_interpreter(check, rel, record, env)
    # status
    if status == "ok":
        if record["exit_code"] != 0 or record["reason"] is not None or wall is None or wall <= 0 \
                or record["python"] is None or record["harness_source_sha256"] is None:
            check.fail(rel, f"status ok with exit code {record['exit_code']}, reason {short(record['reason'])} and "
                            f"wall {short(wall)} (an ok run has exit 0, no reason, a positive wall and its worker's "
                            "measurements)", "status")
            return False
    else:
        if not record["reason"]:
            check.fail(rel, f"status {status} without a reason", "status")
        if record["items"] or wall is not None or record["stages"] or record["python"] is not None:
            check.fail(rel, f"status {status} but it carries measurements", "status")
        if not last:
            check.fail(rel, f"a {status} run is followed by more runs (a failed run ends the campaign)", "status")
    check_process(check, rel, process, runner, campaign)
    if wall is not None and wall > process["wall_s"]:
        check.fail(rel, f"timed wall {wall:.6g} s is longer than its process's life {process['wall_s']:.6g} s",
                   "physics")
    if status == "ok":
        w0, w1 = iso_epoch(record["worker_started_at"]), iso_epoch(record["worker_ended_at"])
        span = clock_tol(process["wall_s"])
        if w0 is None or w1 is None or not (process["started_at"] - C.CLOCK_TOL_S <= w0 <= w1 <=
                                            process["ended_at"] + span) or wall > w1 - w0 + span:
            check.fail(rel, "the worker's own start and end do not hold its timed wall inside its process", "physics")
    # items: exactly the planned ones, in order; a sequential suite's timed runs the benchmarks still
    # undecided at the look before them (a subsequence here; which one, check_family_items)
    workload = campaign.get("workload") if isinstance(campaign, dict) else None
    suite = isinstance(workload, dict) and C.is_suite_entry(workload.get("entry"))
    got = [it["id"] for it in record["items"]]
    compacts = suite and campaign.get("budget_s") is not None and R.timed(label)
    if status == "ok" and (not subsequence(got, runner["items"]) if compacts else got != runner["items"]):
        missing = [i for i in runner["items"] if i not in set(got)]
        check.fail(rel, f"items {short(got)} are not the {len(runner['items'])} planned (runner.json items"
                        + (f"; missing {short(missing[:3])}" if missing and not compacts else "") + ")", "plan")
    total, all_stored = 0.0, True
    for item in record["items"]:
        name = short(item["id"])
        if item["wall_s"] <= 0:  # a timed item takes some time, even one that fails
            check.fail(rel, f"item {name}: zero time", "physics")
        if item["cpu_s"] > item["wall_s"] * (1 + C.SLOT_TOL) + C.ITEM_CLOCK_TOL_S:
            check.fail(rel, f"item {name}: CPU {item['cpu_s']:.6g} s above its wall {item['wall_s']:.6g} s (one "
                            "thread's CPU cannot exceed its wall)", "physics")
        if wall is not None and item["wall_s"] > bound(wall):
            check.fail(rel, f"item {name}: wall {item['wall_s']:.6g} s above the run's timed wall {wall:.6g} s",
                       "physics")
        total += item["wall_s"]
        if item["error"] is not None and item["fields"]:
            check.fail(rel, f"item {name}: an error and fields", "status")
        if item["error"] is None and not item["fields"] and not suite:  # a suite's benchmark may give none
            check.fail(rel, f"item {name}: neither fields nor an error", "status")
        for fname, f in item["fields"].items():
            header = check.array_headers.get(f["digest"])
            if header is None:  # and never opened: a digest could name any path
                check.fail(rel, f"item {name} field {short(fname)}: array {f['digest'][:16]}... is not stored",
                           "arrays")
                all_stored = False
            elif [f["dtype"], f["shape"]] != [header[0], header[1]]:
                check.fail(rel, f"item {name} field {short(fname)}: records {f['dtype']}{f['shape']}, the stored "
                                f"array is {header[0]}{header[1]}", "arrays")
    if wall is not None and total > record["slots"] * wall * (1 + C.SLOT_TOL) + C.SLOT_ABS_S:
        check.fail(rel, f"item walls sum to {total:.6g} s, more than {record['slots']} slot(s) x the run's "
                        f"{wall:.6g} s", "physics")
    # stages
    machine = record["machine"]
    cores = machine["cores"]
    if status == "ok" and cores != env["cores"]:
        check.fail(rel, f"machine.cores {short(cores)}, environment.json says {env['cores']}", "identity")
    room = bound(cores * wall) if wall is not None and cores else None
    for name, row in record["stages"].items():
        if name not in campaign["stages"]:
            check.fail(rel, f"stage {short(name)} is not a campaign stage", "identity")
            continue
        if room is not None and row["incl_cpu_s"] > room:
            check.fail(rel, f"stage {name}: inclusive CPU {row['incl_cpu_s']:.6g} s above {cores} core(s) x the "
                            f"run's wall {wall:.6g} s", "physics")
        if room is not None and row["calls"] * C.CALL_FLOOR_S > room:
            check.fail(rel, f"stage {name}: {row['calls']} calls cannot fit in the run's wall", "physics")
        if row["self_cpu_s"] > row["incl_cpu_s"] + C.CPU_TOL_S:
            check.fail(rel, f"stage {name}: self CPU {row['self_cpu_s']:.6g} s above inclusive "
                            f"{row['incl_cpu_s']:.6g} s", "physics")
    if room is not None and sum(row["self_cpu_s"] for row in record["stages"].values()) > room:
        check.fail(rel, f"stage self CPU sums above {cores} core(s) x the run's wall {wall:.6g} s", "physics")
    for name in list(record["stages_installed"]) + list(record["imported_from"]["stages"]):
        if name not in campaign["stages"]:
            check.fail(rel, f"stage {short(name)} is not a campaign stage", "identity")
    item_cpu = sum(it["cpu_s"] for it in record["items"])
    for key, low, high, what in (("process_cpu_s", item_cpu, cores * wall if cores and wall else None,
                                  "the items' CPU and cores x the run's wall"),
                                 ("cpu_stall_s", 0.0, wall, "0 and the run's wall")):
        value = machine[key]
        if value is not None and wall is not None and (value < low - C.SLOT_ABS_S or
                                                       (high is not None and value > bound(high) + C.TICK_S)):
            check.fail(rel, f"machine.{key} {short(value)} is not between {what}", "physics")
    if "interference" in record:  # absent only in a record of an earlier schema (load_doc)
        check_interference(check, rel, record, campaign)
    check_memory(check, rel, record)
    check_outside(check, rel, record)
    check_origins(check, rel, record, env)
    staged = R.instrumented(label, campaign["order"])
    if status == "ok" and not staged:  # a timed run of an order with stage runs: no wrappers at all
        if record["stages"] or record["stages_installed"] or record["imported_from"]["stages"]:
            check.fail(rel, "a timed run with stage wrappers, but the order has stage runs: its wall is the "
                            "headline and must carry none", "identity")
        if machine["stage_wrapper_s"] is not None:
            check.fail(rel, "machine.stage_wrapper_s in a run without stage wrappers", "identity")
    if status == "ok" and staged:
        if set(record["stages"]) != set(campaign["stages"]) or set(record["stages_installed"]) != \
                set(campaign["stages"]):
            check.fail(rel, "stages are not the campaign's stages", "identity")
        for name in campaign["stages"]:
            if name not in campaign["optional_stages"] and record["stages_installed"].get(name) is not True:
                check.fail(rel, f"stage {name} is not optional but not installed", "identity")
        for name, where in record["imported_from"]["stages"].items():
            if not record["stages_installed"].get(name):
                check.fail(rel, f"stage {name} names where it was imported from but is not installed", "identity")
            elif where.startswith("tree:") and unsafe_path(where[5:]):
                check.fail(rel, f"stage {name} imported from {short(where)}, not a path in the revision's tree",
                           "identity")
    return all_stored


def check_interference(check, rel, record, campaign):
    """A run record's interference: present exactly when ok; its readings within what the loop's
    wall allows; its marks re-derived from them and campaign.json's bounds (rules.disturbance)."""
    section, wall, status = record["interference"], record["wall_s"], record["status"]
    if (section is None) != (status != "ok"):
        check.fail(rel, "interference " + ("null in an ok run" if section is None else f"in a {status} run"),
                   "status")
        return
    if section is None:
        return
    cores = record["machine"]["cores"]
    hz, steal, own, cpu = section["user_hz"], section["steal_ticks"], section["cpu_steal_ticks"], section["cpu"]
    if (hz is None) != (steal is None):
        check.fail(rel, "interference.user_hz is given exactly with steal_ticks (it is their unit)", "physics")
    if own is not None and (cpu is None or steal is None):
        check.fail(rel, "interference.cpu_steal_ticks without the CPU and all CPUs' steal it is part of", "physics")
    if cpu is not None and cores and cpu >= cores:
        check.fail(rel, f"interference.cpu {cpu}, but the machine has {cores} CPU(s)", "physics")
    if hz and steal is not None and cores and steal / hz > cores * (wall + C.TICK_S) + 1.0 / hz:
        check.fail(rel, f"interference.steal_ticks {steal} ({steal / hz:.6g} s) above {cores} CPU(s) x the loop's "
                        f"wall {wall:.6g} s", "physics")
    if hz and own is not None and steal is not None and (own / hz > wall + C.TICK_S + 1.0 / hz or own > steal + 2):
        check.fail(rel, f"interference.cpu_steal_ticks {own} above the loop's wall {wall:.6g} s or all CPUs' "
                        f"steal {steal}", "physics")
    bounds = campaign.get("interference")
    if bounds is None:  # the generations disagree: check_records says so
        return
    share, per_wall, causes = R.disturbance(section, wall, record["machine"]["process_cpu_s"], cores,
                                            bounds["max_steal"], bounds["min_cpu_per_wall"])
    for key, want in (("steal_share", share), ("cpu_per_wall", per_wall), ("causes", causes),
                      ("disturbed", bool(causes))):
        if list(diff(want, section[key])):
            check.fail(rel, f"interference.{key} {short(section[key])}, but its readings and campaign.json's bounds "
                            f"give {short(want)}", "derived")


def check_outside(check, rel, record):
    """A run record's outside section (what the runner saw of its process): present exactly when ok;
    the loop and the time before and after it within the process's life, the worker's own wall the
    loop less its latencies, the kernel's CPU within the cores, and its contradictions re-derived
    from the record's figures (rules.contradictions)."""
    section, wall, status = record.get("outside"), record["wall_s"], record["status"]
    if (section is None) != (status != "ok"):
        check.fail(rel, "outside " + ("null in an ok run" if section is None else f"in a {status} run"), "status")
        return
    if section is None or wall is None:
        return
    cores, process = record["machine"]["cores"] or 1, record["process"]
    if section["before_s"] + wall + section["after_s"] > bound(process["wall_s"]):
        check.fail(rel, f"outside: {section['before_s']:.6g} s before the loop, {wall:.6g} s in it and "
                        f"{section['after_s']:.6g} s after it exceed its process's life {process['wall_s']:.6g} s",
                   "physics")
    latency = section["latency_s"]
    if abs(section["worker_wall_s"] + latency[0] + latency[1] - wall) > C.STAMP_TOL_S * 10 + C.REL_TOL * wall:
        check.fail(rel, f"outside: the worker's wall {section['worker_wall_s']:.9g} s and its latencies do not make "
                        f"the loop's {wall:.9g} s", "physics")
    if section["loop_cpu_s"] is not None and section["loop_cpu_s"] > bound(cores * wall) + C.TICK_S:
        check.fail(rel, f"outside.loop_cpu_s {section['loop_cpu_s']:.6g} above {cores} core(s) x the loop's "
                        f"{wall:.6g} s", "physics")
    before, after = section["before_cpu_s"], section["after_cpu_s"]
    if (before is None) != (after is None):
        check.fail(rel, "outside: the CPU before and after the loop come together or not at all", "physics")
    elif before is not None and before > bound(cores * section["before_s"]) + C.TICK_S:
        check.fail(rel, f"outside.before_cpu_s {before:.6g} above {cores} core(s) x the {section['before_s']:.6g} s "
                        "before the loop", "physics")
    stages = math.fsum(row["self_cpu_s"] for row in record["stages"].values())
    want = R.contradictions(section, wall, [(it["wall_s"], it["cpu_s"]) for it in record["items"]], record["slots"],
                            record["machine"]["process_cpu_s"], stages)
    for key, value in (("contradictions", want), ("contradicted", bool(want))):
        if list(diff(value, section[key])):
            check.fail(rel, f"outside.{key} {short(section[key])}, but its figures give {short(value)}", "derived")


def check_origins(check, rel, record, env):
    """Where the workload and each stage came from is the worker's word: it must be a place the run
    could read (its tree, or a folder environment.json's sandbox lists): a path elsewhere (an
    author's home folder) is code the campaign does not hold."""
    if record["status"] != "ok":
        return
    roots = (env.get("sandbox") or {}).get("read") or []
    origins = [("workload", record["imported_from"]["workload"])] + \
        [(f"stage {name}", where) for name, where in record["imported_from"]["stages"].items()]
    for what, where in origins:
        if where is not None and not R.origin_allowed(where, roots):
            check.fail(rel, f"{what} imported from {short(where)}: neither its revision's tree nor a folder its "
                            "sandbox could read (environment.json sandbox.read)", "identity")


def check_sandbox(check, campaign, env):
    """environment.json's sandbox against campaign.json's setting and itself (contract.SANDBOX_LEVELS),
    and said: a bundle whose workers were not fully sandboxed says so in both checkers' output."""
    box, setting = env["sandbox"], campaign["sandbox"]
    level, on = box["level"], box["level"] in ("full", "partial")
    rules = [((level == "off") == (setting["mode"] == "off"), "level off exactly when campaign.json's sandbox mode is"),
             ((box["reason"] is None) == (level == "full"), "a reason exactly when the level is not full"),
             ((box["landlock"] is not None) == on, "Landlock's ABI exactly when the level is full or partial"),
             (box["namespaces"] == (level == "full"), "namespaces exactly when the level is full"),
             (box["scheduling"] == on, "the scheduling filter exactly when the level is full or partial"),
             ((box["network"] == "declared") == bool(setting["network"]),
              "network declared exactly when campaign.json's sandbox declares it"),
             (setting["network"] or box["network"] == ("cut" if level == "full" else "tcp" if on else "open"),
              "network cut under full, tcp under partial, open otherwise"),
             (set(setting["read"]) <= set(box["read"]), "read holds what campaign.json's sandbox declares")]
    for holds, what in rules:
        if not holds:
            check.fail(C.ENVIRONMENT, f"sandbox {short(box)[:200]}: {what}", "identity")
    if level != "full":
        check.notes.append(f"{'not sandboxed' if level in ('none', 'off') else 'partly sandboxed'}: {box['reason']}")


def check_memory(check, rel, record):
    """A run record's memory readings: none in a failed run; in an ok one the loop's peak within
    the process's peak and the kernel's mark of the reaped process, and the loop's start within
    its peak when the mark was reset at that start."""
    mem, status = record["memory"], record["status"]
    peak, start, loop = mem["process_peak_bytes"], mem["loop_start_bytes"], mem["loop_peak_bytes"]
    if status != "ok":
        if peak is not None or start is not None or loop is not None or mem["reset"]:
            check.fail(rel, f"memory readings in a {status} run", "status")
        return
    if (peak is None) != (loop is None) or (start is None) != (loop is None):
        check.fail(rel, "memory readings come together (the process's peak, the loop's start and its peak) or "
                        "not at all", "physics")
    if loop is not None and peak is not None and loop > peak:
        check.fail(rel, f"memory.loop_peak_bytes {loop} above the process's peak {short(peak)}", "physics")
    if mem["reset"] and start is not None and loop is not None and start > loop:
        check.fail(rel, f"memory.loop_start_bytes {start} above the loop's peak {loop}, though the mark was reset "
                        "at that start", "physics")
    maxrss, slack = record["process"]["maxrss_bytes"], C.rss_slack_bytes(record["machine"]["cores"])
    if maxrss is not None and loop is not None and loop > maxrss + slack:
        check.fail(rel, f"memory.loop_peak_bytes {loop} above the kernel's mark of the reaped process {maxrss} "
                        f"(and its per-CPU slack of {slack} bytes)", "physics")


def check_generation(check, campaign, runs):
    """One generation of records: every run record of one schema id; campaign.json's interference
    present exactly when they are of the current one (contract.PREVIOUS_SCHEMAS). Absent is accepted
    only as a whole earlier generation, and said."""
    ids = [r["schema"] for r in runs]
    for r in runs:
        if r["schema"] != ids[0]:
            check.fail(C.run_path(r["label"]), f"schema {short(r['schema'])}, but {runs[0]['label']}'s is "
                                               f"{short(ids[0])}: one bundle, one harness", "parsing")
            return
    current = not runs or ids[0] == C.SCHEMAS["run"]
    if current != ("interference" in campaign):
        schema = ids[0] if runs else C.SCHEMAS["run"]
        check.fail(C.CAMPAIGN_JSON, f"interference {'missing' if current else 'present'}, but the run records are of "
                                    f"{schema}", "identity")
    if not current:
        check.notes.append(f"interference not measured: the run records are of {ids[0]}, from a harness before it "
                           "(no steal, CPU/wall or frequency per run; no run could be marked disturbed)")


def check_auto_rounds(check, campaign, runs):
    """`rounds: auto`: the runner set the cap after the first round (A1 and B1) from their
    process walls alone; the campaign may stop before it only where a look decided
    (check_stop, with the looks re-derived)."""
    plan = R.sequential_plan(campaign, [(r["label"], r["status"], r["process"]["wall_s"]) for r in runs[:2]])
    if campaign["rounds"] > plan["cap"]:
        check.fail(C.CAMPAIGN_JSON, f"rounds {campaign['rounds']}, but the first round's process walls give a cap of "
                                    f"{plan['cap']} rounds within the {campaign['budget_s']:g} s budget", "plan")


def subsequence(got, planned):
    """got holds some of planned, each once, in planned's order, and at least one."""
    it = iter(planned)
    return bool(got) and all(any(i == p for p in it) for i in got)


def check_suite_number(check, campaign, runner, runs):
    """A suite's calls per timed item: campaign.json's workload.params.number is a whole number
    (given), absent (1), or {item: calls} for exactly the benchmarks the campaign runs, each a power
    of two (`suite.number: auto`, calibrated in the pre-flight; a sealed bundle never says auto);
    and every ok run's metrics.suite.number records the calls it made: the campaign's."""
    workload = campaign["workload"]
    if not C.is_suite_entry(workload["entry"]):
        return
    number = workload["params"].get("number", 1)
    where = "workload.params.number"
    if isinstance(number, dict):
        if sorted(number) != sorted(runner["items"]):
            check.fail(C.CAMPAIGN_JSON, f"{where}: calibrated for {len(number)} benchmark(s), not exactly the "
                                        f"{len(runner['items'])} it runs (runner.json items)", "plan")
        odd = [k for k, v in number.items() if not is_int(v) or not 1 <= v <= C.MAX_AUTO_NUMBER or v & (v - 1)]
        if odd:
            check.fail(C.CAMPAIGN_JSON, f"{where}.{short(odd[0])}: {short(number[odd[0]])}, not a power of two "
                                        f"from 1 to {C.MAX_AUTO_NUMBER} (suite.number: auto's calls)", "plan")
    elif not is_int(number) or not 1 <= number <= C.MAX_SUITE_NUMBER:
        check.fail(C.CAMPAIGN_JSON, f"{where}: {short(number)}, not calls from 1 to {C.MAX_SUITE_NUMBER} nor "
                                    "{benchmark: calls} as suite.number: auto calibrated them", "plan")
        return
    for record in runs:
        info = record["metrics"].get("suite") if record["status"] == "ok" else {}
        made = info.get("number") if isinstance(info, dict) else None
        if record["status"] == "ok" and made != number:
            check.fail(C.run_path(record["label"]), f"metrics.suite.number {short(made)}: the calls its timed items "
                                                     f"made are not the campaign's ({where} {short(number)})",
                       "identity")


def check_family_items(check, campaign, runner, held, stats):
    """A sequential suite's timed run of round k holds exactly the benchmarks still undecided at
    the look after round k - 1 (rules.run_items), with the decisions re-derived from the
    records (stats): a bundle cannot keep timing a benchmark that decided, nor drop one that did
    not. held: (label, status, its item ids) of every run."""
    family = stats.get("family")
    if family is None or campaign["budget_s"] is None:
        return
    decided = {row["id"]: row["decided_at"] for row in family["items"] if row["decided_at"] is not None}
    for label, status, got in held:
        want = R.run_items(runner["items"], decided, label)
        if status == "ok" and got != want:
            extra = [i for i in got if i not in set(want)]
            gone = [i for i in want if i not in set(got)]
            why = (f"holds {short(extra[:3])}, decided at round(s) {short(sorted({decided[i] for i in extra}))}"
                   if extra else f"lacks {short(gone[:3])}, still undecided at the look before it")
            check.fail(C.run_path(label), f"items: {why} (a suite's benchmark leaves the rounds after the look that "
                                          "decided it, and only then)", "plan")


def check_stop(check, campaign, stats):
    """A sequential campaign stops at its first look that decides (with a precision, that
    decides with an interval that precise), or at its cap: a bundle cannot claim a stop it did
    not make (stats: the re-derived comparison stats; a family's look decides once every
    benchmark has)."""
    seq = stats.get("sequential")
    if campaign["budget_s"] is None or seq is None:
        return
    rounds, ran = campaign["rounds"], stats["rounds"]["n"]
    early = [row["round"] for row in seq["looks"] if R.ends(row["verdict"], row["precise"]) and row["round"] < ran]
    precise = " with an interval within its precision" if seq["precision"] is not None else ""
    if early:
        check.fail(C.CAMPAIGN_JSON, f"the look after round {early[0]} decided{precise}, but the campaign went on to "
                                    f"round {ran}", "plan")
    elif rounds < seq["cap"] and not (ran == rounds and seq["stopped"] == "decided"):
        check.fail(C.CAMPAIGN_JSON, f"rounds {rounds}, below the cap of {seq['cap']}, but no look decided{precise} at "
                                    f"round {rounds}", "plan")


def check_plan(check, campaign, runner):
    """The campaign's order follows from its rounds, seed and budget (or is an explicit one),
    its labels from its order, and the runner's plan from both. Returns the plan or None."""
    order = campaign["order"]
    if not C.ORDER_RE.match(order) or "A" not in order or "B" not in order:
        check.fail(C.CAMPAIGN_JSON, f"order {short(order)} is not a string of A and B holding both (a, b: stage "
                                    "runs)", "plan")
        return None
    unpaired = R.order_problem(order)
    if unpaired:
        check.fail(C.CAMPAIGN_JSON, f"order {short(order)} does not interleave: {unpaired}", "decision")
    plan = R.labels(order)
    if campaign["labels"] != [label for label, _ in plan]:
        check.fail(C.CAMPAIGN_JSON, f"labels {short(campaign['labels'])} do not follow from order {order}", "plan")
        return None
    rounds, seed, stage_rounds = campaign["rounds"], campaign["seed"], campaign["stage_rounds"]
    has_stages = bool(campaign["stages"])
    if (rounds is None) != (seed is None) or (rounds is None) != (stage_rounds is None) or \
            (rounds is not None and not (stage_rounds <= rounds and (stage_rounds >= 1) == has_stages)):
        check.fail(C.CAMPAIGN_JSON, f"rounds {short(rounds)}, stage_rounds {short(stage_rounds)} and seed "
                                    f"{short(seed)}: all null (an explicit order), or a count, its stage rounds (at "
                                    "least 1 exactly with stages, at most the rounds) and its seed", "plan")
        return None
    first = campaign["min_rounds"] if campaign["budget_s"] is not None else None
    if rounds is not None and (len(order) != 2 * (rounds + stage_rounds)
                               or order != R.round_order(rounds, seed, stage_rounds, first)):
        check.fail(C.CAMPAIGN_JSON, f"order {short(order)} is not the shuffle of {rounds} rounds and {stage_rounds} "
                                    f"stage rounds by seed {seed}", "plan")
        return None
    if order != order.upper() and not has_stages:
        check.fail(C.CAMPAIGN_JSON, f"order {short(order)} has stage runs (a, b) but the campaign has no stages",
                   "plan")
        return None
    budget_s, min_rounds = campaign["budget_s"], campaign["min_rounds"]
    if (budget_s is None) != (min_rounds is None) or (budget_s is not None and (rounds is None
                                                                               or min_rounds > rounds)):
        check.fail(C.CAMPAIGN_JSON, f"budget_s {short(budget_s)} and min_rounds {short(min_rounds)}: both null (a "
                                    f"fixed count or an order), or a budget and a minimum of at most the rounds "
                                    f"{short(rounds)}", "plan")
        return None
    unaskable = R.precision_problem(campaign["precision"], budget_s is not None,
                                    C.is_suite_entry(campaign["workload"]["entry"]))
    if unaskable:
        check.fail(C.CAMPAIGN_JSON, f"precision {short(campaign['precision'])}: {unaskable}", "plan")
        return None
    counting = campaign["instructions"] is not None
    if campaign["metrics"] != (["wall", "instructions"] if counting else ["wall"]) or \
            (counting and campaign["instructions"]["order"] != R.instruction_order(campaign["instructions"]["runs"])):
        check.fail(C.CAMPAIGN_JSON, f"metrics {short(campaign['metrics'])} and instructions "
                                    f"{short(campaign['instructions'])}: [wall] and null, or [wall, instructions] and "
                                    "their runs in rounds of AB and BA alternating", "plan")
        return None
    if (campaign["noise_floor"] is None) != (campaign["noise_floor_sha256"] is None):
        check.fail(C.CAMPAIGN_JSON, "noise_floor and noise_floor_sha256: both null or both set", "identity")
    if (campaign["golden"] is None) != (campaign["golden_sha256"] is None):
        check.fail(C.CAMPAIGN_JSON, "golden and golden_sha256: both null or both set", "identity")
    if runner["runs_planned"] != len(order):
        check.fail(C.RUNNER, f"runs_planned {runner['runs_planned']}, the order has {len(order)} runs", "plan")
    if not runner["runs_started"] <= len(order):
        check.fail(C.RUNNER, f"runs_started {runner['runs_started']} outside 0..{len(order)}", "plan")
        return None
    if runner["ended_at"] < runner["started_at"]:
        check.fail(C.RUNNER, "ended before it started", "physics")
    # items: the workload's list, distinct; the planned ones by the subset rule
    if len(set(runner["items_all"])) != len(runner["items_all"]):
        check.fail(C.RUNNER, "items_all holds an item id twice", "plan")
    if runner["items"] != C.subset(runner["items_all"], campaign["workload"]["items"]):
        check.fail(C.RUNNER, f"items are not the {short(campaign['workload']['items'])} of items_all the subset rule "
                             "picks (every run measures the campaign's items)", "plan")
    if runner["runs_started"] and not runner["items"]:
        check.fail(C.RUNNER, "no planned items, but runs started", "plan")
    return plan


def check_instruction_runs(check, campaign, runner, env, runs, plan, started):
    """Instruction records: exactly those the schedule ran before the campaign stopped, in their
    places between the wall runs. Returns (records, sound)."""
    if campaign["instructions"] is None:
        return [], True
    instr_order = campaign["instructions"]["order"]
    want_items = C.subset(runner["items"], campaign["instructions"]["items"])
    out: list = []
    sound, stopped = True, False
    failed_wall = next((n for n, r in enumerate(runs) if r["status"] != "ok"), None)
    by_label = {r["label"]: r for r in runs}
    walls = R.labels(campaign["order"])
    instr = [row for row in R.schedule(campaign["order"], instr_order, R.spread_of(campaign))
             if row[0].startswith("I")]
    # (variant, item) -> the longest wall the item took in an ok wall run of its variant
    slowest: dict[tuple[str, str], float] = {}
    for r in runs:
        if r["status"] == "ok":
            for it in r["items"]:
                pair = (r["variant"], it["id"])
                slowest[pair] = max(slowest.get(pair, 0.0), it["wall_s"])
    for label, variant, index, after in instr:
        at = next(i for i, (w, _) in enumerate(walls) if w == after) if after is not None else -1
        rel = C.instructions_path(label)
        must = at + 1 < started and not stopped
        may = at + 1 == started and not stopped and (failed_wall is None or at < failed_wall)
        if rel not in check.openable:
            if must:
                check.fail(rel, f"missing: wall run {plan[at + 1][0]} started after it", "plan")
                sound = False
            stopped = True
            continue
        if not (must or may):
            continue  # reported as a record the campaign did not run
        record = load_doc(check, "instructions", rel)
        if record is None:
            return out, False
        for key, want in (("label", label), ("index", index), ("variant", variant), ("after", after),
                          ("sha", campaign["revisions"][variant]["sha"]), ("env", C.INSTRUCTION_ENV)):
            if record[key] != want:
                check.fail(rel, f"{key} {short(record[key])}, the schedule and campaign give {short(want)}", "plan")
        status, count = record["status"], record["instructions"]
        if status == "ok":
            if record["exit_code"] != 0 or record["reason"] is not None or count is None or record["python"] is None:
                check.fail(rel, f"status ok with exit code {record['exit_code']}, reason {short(record['reason'])} "
                                f"and count {short(count)}", "status")
                return out, False
            if record["items"] != want_items:
                check.fail(rel, f"items {short(record['items'])} are not the {len(want_items)} planned ones the "
                                "campaign counts (the subset rule of runner.json's items)", "plan")
            if not record["errors"] < len(record["items"]):
                check.fail(rel, f"errors {record['errors']} of {len(record['items'])} items (a run whose every item "
                                "raised fails)", "status")
        elif not record["reason"] or count is not None or record["items"]:
            check.fail(rel, f"status {status} needs a reason and no count or items", "status")
            return out, False
        cmd = record["command"]
        if cmd[:2] != ["setarch", "-R"] or not all(flag in cmd for flag in C.REGION_FLAGS) \
                or C.WORKER_MODULE not in cmd:
            check.fail(rel, f"command {short(cmd)} is not `setarch -R valgrind {' '.join(C.REGION_FLAGS)} ... -m "
                            f"{C.WORKER_MODULE}` (only that counts the measured region alone)", "identity")
        if not record["valgrind"].startswith("valgrind-"):
            check.fail(rel, f"valgrind {short(record['valgrind'])} is not a `valgrind --version` line", "identity")
        check_interpreter(check, rel, record, env)
        check_process(check, rel, record["process"], runner, campaign)
        if count is not None and count > C.MAX_INSTRUCTIONS_PER_S * record["process"]["wall_s"]:
            check.fail(rel, f"{count} instructions in a process that lived {record['process']['wall_s']:.6g} s: "
                            f"more than {C.MAX_INSTRUCTIONS_PER_S:.0e} a second", "physics")
        timed_s = [slowest[(variant, i)] for i in record["items"] if (variant, i) in slowest]
        if count is not None and record["items"] and len(timed_s) == len(record["items"]) and \
                count > C.MAX_NATIVE_INSTRUCTIONS_PER_S * math.fsum(timed_s):
            check.fail(rel, f"{count} instructions for {len(timed_s)} item(s) that took at most "
                            f"{math.fsum(timed_s):.6g} s in the {variant} wall runs: more than a core retires "
                            f"({C.MAX_NATIVE_INSTRUCTIONS_PER_S:.0e} a second)", "physics")
        check_log(check, record)
        before = by_label.get(after) if after is not None else None
        later = by_label.get(plan[at + 1][0]) if at + 1 < len(plan) else None
        prev = out[-1] if out and out[-1]["after"] == after else before
        if (prev is not None and record["process"]["started_at"] <
                prev["process"]["ended_at"] - clock_tol(prev["process"]["wall_s"])) or \
                (later is not None and later["process"]["started_at"] <
                 record["process"]["ended_at"] - clock_tol(record["process"]["wall_s"])):
            check.fail(rel, "its process overlaps the run before or after it in the schedule", "physics")
        if status != "ok":
            if at + 1 != started:
                check.fail(rel, f"a {status} instruction run is followed by more runs (a failed run ends the "
                                "campaign)", "status")
            stopped = True
        out.append(record)
    if len({r["valgrind"] for r in out}) > 1:
        check.fail(C.instructions_path(out[0]["label"]), "instruction runs used different valgrind versions",
                   "identity")
    return out, sound


def check_ledger(check, cleanup, runner, records, launch=C.DEFAULT_LAUNCH):
    """One worker per started run in the cleanup receipt, its pid the record's; absence as verified;
    under `launch: zygote` each zygote a run names, and only those (check_launch)."""
    procs = cleanup["processes"]
    if cleanup["count"] != len(procs):
        check.fail(C.CLEANUP, f"count {cleanup['count']} but {len(procs)} processes listed", "ledger")
    started = {r["label"] for r in records}
    zygotes = {R.zygote_label(r["variant"], r["launch"]["generation"]) for r in records
               if launch == "zygote" and isinstance(r.get("launch"), dict) and r["launch"]["generation"] is not None}
    workers: dict = {}
    keys = set()
    for n, p in enumerate(procs):
        preflight = p["run"] in C.PREFLIGHT_RUNS and p["role"] in ("preflight", "descendant")
        zygote = p["run"] in zygotes and p["role"] == "zygote"
        if p["run"] not in started and not preflight and not zygote:
            check.fail(C.CLEANUP, f"processes[{n}] belongs to {short(p['run'])}, not a started run"
                       + (" or a zygote a run names" if p["role"] == "zygote" else ""), "ledger")
        if (p["role"] == "preflight") != (p["run"] in C.PREFLIGHT_RUNS and p["role"] != "descendant") or \
                (p["role"] == "zygote") != (p["run"] in zygotes):
            check.fail(C.CLEANUP, f"processes[{n}]: role {p['role']} for run {short(p['run'])}", "ledger")
        if p["parent"] is not None and p["role"] != "worker":
            check.fail(C.CLEANUP, f"processes[{n}]: a {p['role']} with a parent zygote ({p['parent']}): only a "
                                  "forked worker has one", "ledger")
        if (p["pid"], p["create_time"]) in keys:
            check.fail(C.CLEANUP, f"processes[{n}]: pid {p['pid']} listed twice", "ledger")
        keys.add((p["pid"], p["create_time"]))
        if ABSENT_STATES[p["verified"]] is not p["absent"]:
            check.fail(C.CLEANUP, f"processes[{n}]: absent {p['absent']} but verified {short(p['verified'])}",
                       "ledger")
        if p["role"] == "worker":
            workers.setdefault(p["run"], []).append(p)
        if not (p["create_time"] - C.CREATE_TOL_S <= p["checked_at"] and
                runner["started_at"] - C.CLOCK_TOL_S <= p["checked_at"] <= runner["ended_at"] + C.CLOCK_TOL_S):
            check.fail(C.CLEANUP, f"processes[{n}] checked at {p['checked_at']:.6g}, outside its life and the "
                                  "runner's span", "ledger")
    if cleanup["all_absent"] != all(p["absent"] for p in procs):
        check.fail(C.CLEANUP, "all_absent contradicts the process list", "ledger")
    worker_pids = [p["pid"] for ps in workers.values() for p in ps]
    if len(set(worker_pids)) != len(worker_pids):
        check.fail(C.CLEANUP, "two workers share a pid", "ledger")
    for record in records:
        rel = C.run_path(record["label"]) if C.LABEL_RE.match(record["label"]) else \
            C.instructions_path(record["label"])
        ws = workers.get(record["label"], [])
        if not ws and record["status"] != "ok" and launch == "zygote" and isinstance(record.get("launch"), dict) \
                and record["launch"]["zygote"] == record["pid"]:
            continue  # its zygote failed to start or to fork: no worker, the run failed (check_launch)
        if len(ws) != 1:
            check.fail(C.CLEANUP, f"{len(ws)} worker processes for run {record['label']}, expected exactly 1",
                       "ledger")
        elif ws[0]["pid"] != record["pid"]:
            check.fail(rel, f"pid {record['pid']}, the ledger's worker is {ws[0]['pid']}", "ledger")
        elif abs(ws[0]["create_time"] - record["process"]["started_at"]) > C.CREATE_TOL_S:
            check.fail(C.CLEANUP, f"run {record['label']}'s worker was created at {ws[0]['create_time']:.6g}, not "
                                  f"when its process started ({record['process']['started_at']:.6g})", "ledger")
        elif ws[0]["checked_at"] < record["process"]["ended_at"] - C.CLOCK_TOL_S:
            check.fail(C.CLEANUP, f"run {record['label']}'s worker verified absent before its process ended",
                       "ledger")
        if len(ws) == 1 and ws[0]["parent"] != ((record.get("launch") or {}).get("zygote")):
            check.fail(C.CLEANUP, f"run {record['label']}'s worker has parent {short(ws[0]['parent'])}, its record's "
                                  f"zygote is {short((record.get('launch') or {}).get('zygote'))}", "ledger")
    check_launch(check, procs, records, launch)


def check_duet(check, campaign, runs):
    """`launch: duet` (contract.DUET): the order's runs pair into rounds (duet_problem), one slot,
    no instruction runs; campaign.json's two cores distinct; each run's core the one its place in
    its round gives (duet_core); and the two loops of each round ran at once: each began before
    the other ended (by the runner's clock: its process's start and its life before the loop)."""
    cores, order = campaign["cores"], campaign["order"]
    unpaired = R.duet_problem(order)
    if unpaired or campaign["slots"] != 1 or campaign["instructions"] is not None:
        check.fail(C.CAMPAIGN_JSON, f"launch duet with order {short(order)}, slots {campaign['slots']} and "
                                    f"instructions {short(campaign['instructions'])}: a duet pairs the order's runs "
                                    f"into rounds, one slot each, no instruction runs" + (f" ({unpaired})" if unpaired
                                                                                          else ""), "plan")
    if cores is None or len(set(cores)) != C.DUET_CORES:
        check.fail(C.CAMPAIGN_JSON, f"cores {short(cores)}: a duet names two distinct cores", "plan")
        return
    if len(runs) % 2:
        check.fail(C.RUNNER, f"runs_started {len(runs)}: a duet starts its rounds' runs two at a time", "plan")
    loops = {}
    for index, record in enumerate(runs):
        want = R.duet_core(cores, index)
        if record["launch"]["core"] is not None and record["launch"]["core"] != want:
            check.fail(C.run_path(record["label"]), f"launch.core {record['launch']['core']}, its place in its round "
                                                    f"gives core {want} (campaign.json cores {cores})", "plan")
        if record["status"] == "ok":
            # both starts are the runner's wall clock read a few ms apart (a process's own tolerance)
            loops[index] = (*R.loop_span(record["process"]["started_at"], record["outside"]["before_s"], record["wall_s"]),
                            clock_tol(record["process"]["wall_s"], C.PROCESS_TOL_S))
    for index in range(0, len(runs) - 1, 2):
        if index in loops and index + 1 in loops:
            (s0, e0, t0), (s1, e1, t1) = loops[index], loops[index + 1]
            if s0 > e1 + t0 + t1 or s1 > e0 + t0 + t1:
                check.fail(C.run_path(runs[index + 1]["label"]), f"its loop and {runs[index]['label']}'s did not "
                                                                 "run at once, though the campaign ran its rounds as "
                                                                 "duets", "physics")


def check_launch(check, procs, records, launch):
    """Every run record's launch: a fresh campaign's runs all fresh (no zygote, no generation);
    a zygote campaign's runs each forked by its variant's zygote of the generation its place gives
    (rules.generations), that zygote a ledger row of that name and pid, created before its
    worker. A failed run may name its zygote as its pid (the zygote forked nothing)."""
    runs = [r for r in records if C.LABEL_RE.match(r["label"])]
    generation = R.generations([r["label"] for r in runs])
    rows: dict = {}
    for p in procs:
        if p["role"] == "zygote":
            rows.setdefault((p["run"], p["pid"]), p)
    workers = {p["run"]: p for p in procs if p["role"] == "worker"}
    for record in runs:
        rel, how = C.run_path(record["label"]), record["launch"]
        if how["mode"] != launch:
            check.fail(rel, f"launch.mode {short(how['mode'])}, campaign.json's launch is {short(launch)}", "identity")
            continue
        if (how["core"] is None) == (launch == C.DUET):
            check.fail(rel, f"launch.core {short(how['core'])}: a core exactly for a duet's run", "plan")
        if launch in ("fresh", C.DUET):
            if how["zygote"] is not None or how["generation"] is not None:
                check.fail(rel, f"a {launch} run names a zygote or a generation", "ledger")
            continue
        if how["generation"] != generation[record["label"]]:
            check.fail(rel, f"launch.generation {short(how['generation'])}, its place among its variant's runs gives "
                            f"{generation[record['label']]} ({C.ZYGOTE_RUNS} runs a zygote)", "plan")
            continue
        name = R.zygote_label(record["variant"], how["generation"])
        row = rows.get((name, how["zygote"]))
        if row is None:
            check.fail(rel, f"launch.zygote {short(how['zygote'])}: no zygote {name} of that pid in the ledger", "ledger")
            continue
        if record["pid"] == how["zygote"]:
            if record["status"] == "ok":
                check.fail(rel, "an ok run whose pid is its zygote's: a forked worker has its own", "ledger")
            continue
        worker = workers.get(record["label"])
        if worker is not None and worker["create_time"] < row["create_time"] - C.CLOCK_TOL_S:
            check.fail(C.CLEANUP, f"run {record['label']}'s worker was created before its zygote {name}", "ledger")
    if launch != "zygote" and rows:
        check.fail(C.CLEANUP, f"{len(rows)} zygote process(es) in a campaign of {launch} launches", "ledger")


def check_workload(check, campaign, receipt, records):
    """workload.json against the stored files under data/workload/ (names, sizes, SHA-256s, none
    extra or missing), its digest against the listing and every ok run's digest of the folder it
    imported from."""
    files = receipt["files"]
    listed, previous, total = set(), None, 0
    for n, row in enumerate(files):
        rel, problem = C.WORKLOAD_DIR + row["path"], unsafe_path(row["path"])
        if problem or row["path"].count("/") > C.MAX_WORKLOAD_DEPTH:
            check.fail(C.WORKLOAD, f"files[{n}]: unsafe path {ascii(row['path'])} ({problem or 'too deep'})", "files")
            return
        if previous is not None and row["path"].encode() <= previous.encode():
            check.fail(C.WORKLOAD, f"files[{n}]: {show(row['path'])} after {show(previous)} (listed once each, "
                                   "sorted by path)", "files")
        previous = row["path"]
        listed.add(rel)
        total += row["size"]
        if rel not in check.openable:
            check.fail(C.WORKLOAD, f"files[{n}]: {show(row['path'])} is not stored under {C.WORKLOAD_DIR}", "files")
            continue
        size = os.lstat(check.path(rel)).st_size
        if row["size"] != size:
            check.fail(rel, f"{size} bytes, workload.json says {row['size']}", "files")
        elif check.sha256(rel) != row["sha256"]:
            check.fail(rel, "its SHA-256 is not the one workload.json lists", "files")
    if total > C.MAX_WORKLOAD_BYTES:
        check.fail(C.WORKLOAD, f"{total} bytes of files, over the {C.MAX_WORKLOAD_BYTES} a workload folder may hold",
                   "files")
    for rel in sorted(r for r in check.openable if r.startswith(C.WORKLOAD_DIR) and r not in listed):
        check.fail(rel, "stored under data/workload/ but not listed in workload.json", "files")
    if receipt["path"] != campaign["workload"]["path"]:
        check.fail(C.WORKLOAD, f"path {short(receipt['path'])}, campaign.json's workload.path is "
                               f"{short(campaign['workload']['path'])}", "identity")
    want = R.listing_digest(files) if receipt["path"] is not None else None
    if receipt["digest"] != want or (receipt["path"] is None and files):
        check.fail(C.WORKLOAD, f"digest {short(receipt['digest'])}, the files listed give {short(want)}", "identity")
    seen = {r["workload_sha256"] for r in records if r["status"] == "ok"}
    if seen - {receipt["digest"]}:
        check.fail(C.WORKLOAD, f"digest {short(receipt['digest'])}, but the workers imported from a folder with "
                               f"digest {short(sorted(seen - {receipt['digest']}, key=str)[0])} (the folder changed "
                               "during the campaign, or the receipt is not its)", "identity")


def machine_class(env):
    """The machine class environment.json states (harness/records.py MachineClass spells it)."""
    return {"cpu_model": env["cpu_model"] or None,
            "vector_isa": env["vector_isa"]["summary"] or None, "blas": env["blas"] or None,
            "torch_threads": env["torch_threads"], "cores": env["cores"]}


# Said when a reproduction's receipt is checked without its original; `harness verify
# --original` checks the other side and replaces it.
NEEDS_ORIGINAL = ("the reproduction receipt's other side (the original's claim, scope, outputs, timing, verdict) is "
                  "re-derived only with the original bundle: `harness verify BUNDLE --original ORIGINAL`, or "
                  "`harness report` with both under evidence/")


def check_reproduction(check, receipt, docs):
    """A reproduction's own side: this bundle's start, machine class, ratio, interval, verdict
    and items. The other side needs the original (`harness verify --original`, `harness report`)."""
    own = receipt["reproduction"]
    paired = docs["claimed"]["stats"]["paired"]
    want = {"started_at": docs["runner"]["started_at"], "machine": machine_class(docs["environment"]),
            "measured": {"ratio": paired["geomean_ratio"], "ci95": paired["ci95"],
                         "verdict": docs["claimed"]["stats"]["verdict"], "items": paired["items"]}}
    for path, expected, got in diff(want, own):
        check.fail(C.REPRODUCTION, f"reproduction.{path} {short(got)}, this bundle gives {short(expected)}",
                   "identity")
    if receipt["campaign"] != docs["campaign"]["name"]:
        check.fail(C.REPRODUCTION, f"campaign {short(receipt['campaign'])}, this bundle runs "
                                   f"{short(docs['campaign']['name'])}", "identity")
    check.notes.append(NEEDS_ORIGINAL)


def check_records(check, stored):
    """Every rule that ties the bundle's parts together. Returns the parsed documents when they
    are sound enough to re-derive comparison.json from, else None."""
    kinds = {rel: C.file_kind(rel) for rel in check.openable}
    docs = {}
    for kind, rel in (("campaign", C.CAMPAIGN_JSON), ("claimed", C.COMPARISON), ("runner", C.RUNNER),
                      ("cleanup", C.CLEANUP), ("environment", C.ENVIRONMENT), ("revisions", C.REVISIONS),
                      ("inputs", C.INPUTS), ("workload", C.WORKLOAD)):
        docs[kind] = load_doc(check, "comparison" if kind == "claimed" else kind, rel)
    if C.CAMPAIGN_YAML not in check.openable:
        check.fail(C.CAMPAIGN_YAML, "missing (every bundle holds it)", "files")
    campaign, runner, env = docs["campaign"], docs["runner"], docs["environment"]
    # A comparison.json that is not of the contract still leaves the records to judge: their own
    # problems are named (a forger re-derives the claim from a forged record), then nothing is
    # re-derived.
    if any(v is None for kind, v in docs.items() if kind != "claimed"):
        return None
    # files present exactly when their condition holds
    for rel, cond, what in ((C.BUILDS, bool(campaign["build"]), "the campaign has build commands"),
                            (C.GOLDEN, campaign["golden"] is not None, "the campaign names a golden file"),
                            (C.NOISE_FLOOR, campaign["noise_floor"] is not None, "the campaign pins a noise floor")):
        if cond and rel not in check.openable:
            check.fail(rel, f"missing, though {what}", "files")
        elif not cond and rel in check.openable:
            check.fail(rel, f"present, though it is held only when {what}", "files")
    plan = check_plan(check, campaign, runner)
    if plan is None:
        return None
    started = runner["runs_started"]
    runs: "list[dict]" = []
    sound, previous_end = True, runner["started_at"] - C.CLOCK_TOL_S
    duet = campaign["launch"] == C.DUET
    for index, (label, variant) in enumerate(plan[:started]):
        record = load_doc(check, "run", C.run_path(label))
        if record is None:
            return None
        sound &= check_run(check, record, label, index, variant, campaign, runner, env, index >= started - (2 if duet else 1))
        if record["process"]["started_at"] < previous_end:
            check.fail(C.run_path(label), "its process started before the previous " + (
                "round's runs ended" if duet else "run's ended"), "physics")
        ended = record["process"]["ended_at"] - clock_tol(record["process"]["wall_s"])
        if not duet:
            previous_end = ended
        elif index % 2:  # a duet's round: its two runs overlap; the next round starts after both ended
            previous_end = max(ended, runs[-1]["process"]["ended_at"] - clock_tol(runs[-1]["process"]["wall_s"]))
        check_log(check, record)
        runs.append(record)
    if duet:
        check_duet(check, campaign, runs)
    elif campaign["cores"] is not None:
        check.fail(C.CAMPAIGN_JSON, f"cores {short(campaign['cores'])} under launch {short(campaign['launch'])}: "
                                    "only a duet names cores", "plan")
    check_generation(check, campaign, runs)
    if campaign["budget_s"] is not None:
        check_auto_rounds(check, campaign, runs)
    check_suite_number(check, campaign, runner, runs)
    instr, sound_instr = check_instruction_runs(check, campaign, runner, env, runs, plan, started)
    sound &= sound_instr
    expected = {C.run_path(label) for label, _ in plan[:started]} | {C.instructions_path(r["label"]) for r in instr} \
        | {C.log_path(label) for label, _ in plan[:started]} | {C.log_path(r["label"]) for r in instr}
    for rel, kind in sorted(kinds.items()):
        if kind in ("run", "instructions", "log") and rel not in expected:
            check.fail(rel, "a record or log of a run the campaign did not start (runner.json runs_started, the "
                            "order, the schedule)", "plan")
    if not sound:
        return None
    check_ledger(check, docs["cleanup"], runner, runs + instr, campaign["launch"])
    check_sandbox(check, campaign, env)
    # every ok run measured the same field names per item: the odd ones out against the names most
    # runs give it (an item that recorded an error has no fields; parity reports the error itself)
    ok_runs = [r for r in runs if r["status"] == "ok"]
    names: dict[str, list] = {}
    for r in ok_runs:
        for it in r["items"]:
            if it["error"] is None:
                names.setdefault(it["id"], []).append((r["label"], tuple(sorted(it["fields"]))))
    odd: dict = {}
    for seen in names.values():
        common = collections.Counter(shape for _, shape in seen).most_common(1)[0][0]
        first = next(label for label, shape in seen if shape == common)
        for label, shape in seen:
            if shape != common:
                odd.setdefault(label, first)
    for label, first in odd.items():
        check.fail(C.run_path(label), f"its field names differ from {first}'s and those of most runs "
                                      "(every run gives each item the same fields)", "plan")
    referenced = {f["digest"] for r in runs for it in r["items"] for f in it["fields"].values()}
    for digest in sorted(stored - referenced):
        check.fail(C.array_path(digest), "stored but no run record references it", "arrays")
    # identity across receipts
    revisions = docs["revisions"]
    for variant in ("base", "candidate"):
        for key in ("sha", "rev"):
            if revisions[variant][key] != campaign["revisions"][variant][key]:
                check.fail(C.REVISIONS, f"{variant}.{key} differs from campaign.json's", "identity")
        if not all(row["ok"] for row in revisions[variant]["fence"].values()):
            check.fail(C.REVISIONS, f"{variant}: a fence that did not hold, yet the campaign ran", "status")
    if env["physical_cores"] is not None and env["physical_cores"] > env["cores"]:
        check.fail(C.ENVIRONMENT, f"physical_cores {env['physical_cores']} above cores ({env['cores']})", "physics")
    digests = {r["harness_source_sha256"] for r in runs + instr if r["status"] == "ok"}
    if digests - {env["harness_source_sha256"]}:
        check.fail(C.ENVIRONMENT, "harness_source_sha256 differs from the run records'", "identity")
    if check.bag_info.get("Bag-Software-Agent") != f"abba-harness {env['harness_version']}":
        check.fail(C.BAG_INFO, f"Bag-Software-Agent {short(check.bag_info.get('Bag-Software-Agent'))}, "
                               f"environment.json's harness is {short(env['harness_version'])}", "bag-info")
    sealed_by = f"{env['harness_commit'] or 'none'} ({env['harness_origin']})"
    if check.bag_info.get("Abba-Harness-Commit") != sealed_by:
        check.fail(C.BAG_INFO, f"Abba-Harness-Commit {short(check.bag_info.get('Abba-Harness-Commit'))}, "
                               f"environment.json's harness is {short(sealed_by)}", "bag-info")
    if (env["harness_commit"] is None) != (env["harness_origin"] == "unknown"):
        check.fail(C.ENVIRONMENT, f"harness_commit {short(env['harness_commit'])} with harness_origin "
                                  f"{short(env['harness_origin'])}: a commit is known exactly when the origin is not "
                                  "unknown", "bag-info")
    if runner["ended_at"] - runner["started_at"] > timeout_bound(campaign["timeouts"]["campaign_s"]):
        check.fail(C.RUNNER, f"the campaign ran {runner['ended_at'] - runner['started_at']:.6g} s, past its timeout of "
                             f"{campaign['timeouts']['campaign_s']} s", "physics")
    if runner["ended_at"] > time.time() + C.FUTURE_TOL_S:
        check.fail(C.RUNNER, "ended after now: the bundle's clocks are ahead of this machine's", "physics")
    bagged = check.bag_info.get("Bagging-Date")
    bagged = datetime.datetime.fromisoformat(bagged).timestamp() if bagged and date_ok(bagged) else None
    if bagged is None or not (runner["ended_at"] - 2 * 86400 <= bagged <= runner["ended_at"] + 86400) \
            or bagged > time.time() + 86400:
        check.fail(C.BAG_INFO, f"Bagging-Date {short(check.bag_info.get('Bagging-Date'))} is not the date the runner "
                               "ended", "physics")
    origins: dict[tuple[str, str], set] = {}
    for r in ok_runs:
        for name, where in r["imported_from"]["stages"].items():
            origins.setdefault((name, r["variant"]), set()).add(where)
    for (name, variant), places in sorted(origins.items()):
        if len(places) > 1:
            check.fail(C.CAMPAIGN_JSON, f"stage {name} imported from {len(places)} places across the {variant} runs",
                       "identity")
    check_workload(check, campaign, docs["workload"], runs + instr)
    if campaign["build"]:
        builds = load_doc(check, "builds", C.BUILDS, required=False)
        if builds is not None:
            for variant in ("base", "candidate"):
                if builds[variant]["tree_sha256"] != revisions[variant]["tree_sha256"]:
                    check.fail(C.BUILDS, f"{variant}.tree_sha256 is not revisions.json's", "identity")
                if len(builds[variant]["steps"]) != len(campaign["build"]) or \
                        any(step["exit_code"] != 0 for step in builds[variant]["steps"]):
                    check.fail(C.BUILDS, f"{variant}: not one successful step per build command", "status")
    golden = None
    if campaign["golden"] is not None:
        golden = load_doc(check, "golden", C.GOLDEN, required=False)
        if golden is None:
            return None
        if check.sha256(C.GOLDEN) != campaign["golden_sha256"]:
            check.fail(C.GOLDEN, "its SHA-256 is not the one campaign.json pins (golden_sha256)", "identity")
        outside = [i for i in runner["items"] if i not in golden["items"]]
        if outside:
            check.fail(C.RUNNER, f"{len(outside)} planned item(s) the golden file does not hold (e.g. "
                                 f"{short(outside[0])}): a golden file covers every item of its campaign", "plan")
    floor = None
    if campaign["noise_floor"] is not None:
        floor = load_doc(check, "noise_floor", C.NOISE_FLOOR, required=False)
        if floor is None:
            return None
        if check.sha256(C.NOISE_FLOOR) != campaign["noise_floor_sha256"]:
            check.fail(C.NOISE_FLOOR, "its SHA-256 is not the one campaign.json pins (noise_floor_sha256)",
                       "identity")
        if floor["campaign"] != campaign["name"]:
            check.fail(C.NOISE_FLOOR, f"calibrates campaign {short(floor['campaign'])}, not this one", "identity")
        refused = R.noise_floor_problem(floor)
        if refused:
            check.fail(C.NOISE_FLOOR, refused, "decision")
    docs.update(runs=runs, instructions=instr, golden=golden, noise_floor=floor)
    if docs["claimed"] is None:
        return None
    if C.REPRODUCTION in check.openable:
        receipt = load_doc(check, "reproduction", C.REPRODUCTION)
        if receipt is not None:
            check_reproduction(check, receipt, docs)
    info = check.bag_info
    for key, value in (("External-Identifier", campaign["name"]), ("Abba-Status", docs["claimed"]["status"]),
                       ("Abba-Base-SHA", campaign["revisions"]["base"]["sha"]),
                       ("Abba-Candidate-SHA", campaign["revisions"]["candidate"]["sha"])):
        if info.get(key) != value:
            check.fail(C.BAG_INFO, f"{key} {short(info.get(key))}, the payload says {short(value)}", "bag-info")
    return docs


# --- comparison.json, re-derived --------------------------------------------------------------
def mean(values):
    return math.fsum(values) / len(values) if values else None


sig10 = R.sig10


def by_id(record):
    return {item["id"]: item for item in record["items"]}


def describe_error(error):
    return "no error" if error is None else f"{error['type']}: {error['message'][:80]}"


def compare_runs(reference, others):
    ref_items = by_id(reference)
    compared = identical = 0
    errors_identical = True
    mismatches = []
    for run in others:
        items = by_id(run)
        for item_id in sorted(set(ref_items) | set(items)):
            ref, other = ref_items.get(item_id), items.get(item_id)
            if other is None:  # which items a run holds is the plan rule's (check_run, check_family_items)
                continue
            if ref is None:
                mismatches.append({"run": run["label"], "item": item_id, "field": None,
                                   "reason": f"item missing from {reference['label']}"})
                continue
            if ref["error"] != other["error"]:
                errors_identical = False
                mismatches.append({"run": run["label"], "item": item_id, "field": None,
                                   "reason": f"error differs: {describe_error(ref['error'])} vs "
                                             f"{describe_error(other['error'])}"})
            for name in sorted(set(ref["fields"]) | set(other["fields"])):
                compared += 1
                a, b = ref["fields"].get(name), other["fields"].get(name)
                if a is not None and b is not None and a["digest"] == b["digest"]:
                    identical += 1
                    continue
                if a is None or b is None:
                    reason = f"field missing from {reference['label'] if a is None else run['label']}"
                elif (a["dtype"], a["shape"]) != (b["dtype"], b["shape"]):
                    reason = f"{a['dtype']}{a['shape']} vs {b['dtype']}{b['shape']}"
                else:
                    reason = "bytes differ"
                mismatches.append({"run": run["label"], "item": item_id, "field": name, "reason": reason,
                                   "reference_digest": a and a["digest"], "digest": b and b["digest"]})
    return {"reference": reference["label"], "items": len(ref_items), "fields_compared": compared,
            "fields_identical": identical,
            "error_returns": sum(1 for item in ref_items.values() if item["error"] is not None),
            "errors_identical": errors_identical, "mismatch_count": len(mismatches), "all_mismatches": mismatches}


def compare_golden(golden, runs):
    expected = golden["items"]
    failing, checked = [], set()
    for run in runs:
        bad = 0
        for item in run["items"]:
            want = expected.get(item["id"])
            fields = {name: f["digest"] for name, f in item["fields"].items()}
            if want is None or want["fields"] != fields or want["error"] != item["error"]:
                bad += 1
        checked |= {item["id"] for item in run["items"]}
        if bad:
            failing.append({"run": run["label"], "items_differing": bad})
    return {"items": len(expected), "items_checked": len(checked & set(expected)), "runs": len(runs),
            "identical": not failing, "failing": failing}


def tolerance_section(check, mismatches, max_ulp):
    """parity.tolerance by rules.tolerance_section, with the ULP distances read here."""
    return R.tolerance_section(mismatches, max_ulp, lambda ref, got: ulp_and_dtype(check, ref, got))


def derive(check, campaign, runs, runner, cleanup, golden, instr, workload, sandbox=None):
    """comparison.json without `stats` and `instructions` (derive_stats, instructions_section)
    and without the values of `parity.divergence` (harness verify re-derives those)."""
    ok = [r for r in runs if r["status"] == "ok"]
    base = [r for r in ok if r["variant"] == "base"]
    cand = [r for r in ok if r["variant"] == "candidate"]
    ok_instr = [r for r in instr if r["status"] == "ok"]
    reasons = [f"{r['label']}: {r['reason']}" for r in runs if r["status"] != "ok"]
    if runner["reason"]:
        reasons.append(runner["reason"])
    if len(runs) < len(campaign["order"]):
        reasons.append(f"only {len(runs)} of {len(campaign['order'])} runs were started")
    reasons += [f"{r['label']}: {r['reason']}" for r in instr if r["status"] != "ok"]
    if len({r["harness_source_sha256"] for r in ok + ok_instr}) > 1:
        reasons.append("the harness's own source changed between runs")
    if {r["workload_sha256"] for r in ok + ok_instr} - {workload}:
        reasons.append("the workload folder changed during the campaign (a run's digest is not the stored one's)")
    if not cleanup["all_absent"]:
        alive = [str(p["pid"]) for p in cleanup["processes"] if not p["absent"]]
        reasons.append(f"processes still running after the campaign: {', '.join(alive) or 'unknown'}")

    base_mean = mean([r["wall_s"] for r in base if R.timed(r["label"])])
    cand_mean = mean([r["wall_s"] for r in cand if R.timed(r["label"])])
    wall = {"timer": C.WALL_TIMER, "base_mean_s": base_mean, "candidate_mean_s": cand_mean,
            "saving_s": None, "saving_pct": None, "speedup": None}
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall.update(saving_s=base_mean - cand_mean, saving_pct=100.0 * (base_mean - cand_mean) / base_mean,
                    speedup=base_mean / cand_mean)

    staged = [r for r in ok if R.instrumented(r["label"], campaign["order"])]
    staged_base = [r for r in staged if r["variant"] == "base"]
    staged_cand = [r for r in staged if r["variant"] == "candidate"]
    modes = campaign["stage_calls"]
    stages = {}
    for name in campaign["stages"]:
        per_run = {r["label"]: r["stages"].get(name, {}).get("calls", 0) for r in staged}
        base_calls = {n for label, n in per_run.items() if label in {r["label"] for r in staged_base}}
        cand_calls = {n for label, n in per_run.items() if label in {r["label"] for r in staged_cand}}
        if len(set(per_run.values())) == 1:
            calls = next(iter(per_run.values()))
        elif len(base_calls) == 1 and len(cand_calls) == 1:
            calls = {"base": base_calls.pop(), "candidate": cand_calls.pop()}
        else:
            calls = per_run
        row = {"calls_per_run": calls, "calls": modes.get(name, "equal")}
        for variant, group in (("base", staged_base), ("candidate", staged_cand)):
            row[f"{variant}_self_cpu_s"] = mean([r["stages"].get(name, {}).get("self_cpu_s", 0.0) for r in group])
            row[f"{variant}_incl_cpu_s"] = mean([r["stages"].get(name, {}).get("incl_cpu_s", 0.0) for r in group])
            row[f"{variant}_installed"] = all(r["stages_installed"].get(name, True) for r in group)
        stages[name] = row

    max_ulp = campaign["parity"]["max_ulp"]
    if not base or not cand:
        parity: dict = {"identical": False, "agree": False, "tolerance": None, "reference": None, "items": 0,
                  "fields_compared": 0, "fields_identical": 0, "error_returns": 0, "errors_identical": False,
                  "call_counts_identical": False, "golden": None, "mismatch_count": 0, "mismatches": [],
                  "note": "no successful run of both variants to compare", "divergence": []}
    else:
        reference = base[0]
        parity = compare_runs(reference, [r for r in ok if r is not reference])
        mismatches = parity.pop("all_mismatches")
        common = None
        for r in staged:
            on = {n for n, installed in r["stages_installed"].items() if installed}
            common = on if common is None else common & on
        parity["call_counts_identical"] = all(
            all(len({r["stages"][n]["calls"] for r in group}) <= 1
                for group in ([staged] if modes.get(n, "equal") == "equal" else [staged_base, staged_cand]))
            for n in sorted(common or ()))
        parity["golden"] = compare_golden(golden, ok) if golden is not None else None
        clean = (parity["errors_identical"] and parity["call_counts_identical"]
                 and (parity["golden"] is None or parity["golden"]["identical"]))
        parity["identical"] = clean and parity["mismatch_count"] == 0
        parity["tolerance"], within = (None, False) if max_ulp is None else \
            tolerance_section(check, mismatches, max_ulp)
        parity["agree"] = parity["identical"] or (clean and within)
        parity["mismatches"] = mismatches[:C.MAX_LISTED]
        if max_ulp is None:
            for m in parity["mismatches"]:
                m.pop("max_ulp", None)
        parity["note"] = None
        parity["divergence"] = [] if not mismatches else None  # None: the values are harness verify's
    return {
        "schema": C.SCHEMAS["comparison"],
        "campaign": campaign["name"],
        "status": "complete" if not reasons else "failed",
        "reason": "; ".join(reasons) or None,
        "order": campaign["order"],
        "items": {"planned": len(runner["items"]), "of": len(runner["items_all"])},
        "runs": [{"label": r["label"], "variant": r["variant"], "sha": r["sha"], "wall_s": r["wall_s"],
                  "exit_code": r["exit_code"], "status": r["status"]} for r in runs],
        "sandbox": C.sandbox_summary(sandbox),
        "wall": wall,
        "stages": stages,
        "parity": parity,
    }


# --- Student's t: rules.t_quantile (the one quantile the writer and both checkers use)
t_cdf, t_quantile = R.t_cdf, R.t_quantile


# --- stats, re-derived without numpy (harness/comparison/analysis.py is the harness's own) ------
def t_ratio(logs, level=C.LEVEL):
    """(ratio, [lo, hi] or None, sd, q) of per-round log ratios: the 20%-trimmed mean and its
    Tukey-McLaughlin 95% interval (winsorized variance, t with kept - 1 degrees of freedom)."""
    x = sorted(logs)
    n = len(x)
    cut = int(C.TRIM * n)
    kept = x[cut:n - cut]
    m = math.fsum(kept) / len(kept)
    if len(kept) < 2:
        return sig10(math.exp(m)), None, None, None
    w = [x[cut]] * cut + kept + [x[n - cut - 1]] * cut
    wm = math.fsum(w) / n
    var_w = math.fsum((v - wm) ** 2 for v in w) / (n - 1)
    q = t_quantile(0.5 + level / 2.0, len(kept) - 1)
    half = q * math.sqrt((n - 1) * var_w / (len(kept) * (len(kept) - 1)))
    return (sig10(math.exp(m)), [sig10(math.exp(m - half)), sig10(math.exp(m + half))], sig10(math.sqrt(var_w)),
            sig10(q))


def overloaded_runs(ok):
    """Runs during which runnable work waited for a core more than STALL_SHARE of the timed loop
    (PSI), or, without PSI, whose load average exceeded the cores."""
    out = []
    for r in ok:
        m = r["machine"]
        if m["cpu_stall_s"] is not None:
            if m["cpu_stall_s"] > C.STALL_SHARE * r["wall_s"] + C.STALL_TICK_S:
                out.append(r["label"])
            continue
        loads = [v[0] for v in (m["loadavg_before"], m["loadavg_after"]) if v]
        if m["cores"] and loads and max(loads) > m["cores"]:
            out.append(r["label"])
    return out


def claim_band_of(pairs, d, overloaded, threshold, band):
    """(drift, claim band, cautions) of rounds `pairs` with per-round log ratios d: a flagged
    drift of the ratio or an overloaded run makes a claim clear the rounds' typical deviation
    and the drift (log space)."""
    x = sorted(d)
    cut = int(C.TRIM * len(x))
    center = math.log(sig10(math.exp(math.fsum(x[cut:len(x) - cut]) / (len(x) - 2 * cut))))
    deviation = sig10(1.0 - math.exp(-statistics.median([abs(v - center) for v in d])))
    effect = math.exp(center) - 1.0
    drift = {"base": None, "candidate": None, "ratio": None, "effect_pct": sig10(100.0 * effect),
             "max_abs_drift_pct": None, "flagged": False, "rule": C.DRIFT_RULE}
    for variant, group in (("base", [a for a, _ in pairs]), ("candidate", [b for _, b in pairs])):
        if len(group) >= 2:
            half = len(group) // 2
            first, last = (statistics.median([r["wall_s"] for r in part]) for part in (group[:half], group[-half:]))
            drift[variant] = {"first": [r["label"] for r in group[:half]], "last": [r["label"] for r in group[-half:]],
                              "first_s": sig10(first), "last_s": sig10(last),
                              "change_pct": sig10(100.0 * (last - first) / first)}
    if len(d) >= 4:
        half = len(d) // 2
        early, late = statistics.median(d[:half]), statistics.median(d[-half:])
        spread = [abs(v - early) for v in d[:half]] + [abs(v - late) for v in d[-half:]]
        noise = C.DRIFT_SE * 1.2533 * 1.4826 * statistics.median(spread) * math.sqrt(2.0 / half)
        drift["ratio"] = {"first_rounds": [1, half], "last_rounds": [len(d) - half + 1, len(d)],
                          "first": sig10(math.exp(early)), "last": sig10(math.exp(late)),
                          "change_pct": sig10(100.0 * (math.exp(late - early) - 1.0)),
                          "noise_pct": sig10(100.0 * (math.exp(noise) - 1.0))}
        drift["max_abs_drift_pct"] = sig10(100.0 * abs(math.exp(late - early) - 1.0))
        drift["flagged"] = (abs(late - early) > noise
                            and 100.0 * abs(math.exp(late - early) - 1.0) >= max(50.0 * abs(effect),
                                                                                 100.0 * float(threshold)))
    cautions = []
    if drift["flagged"]:
        cautions.append(f"drift: the ratio of the later rounds differs from the earlier rounds' by "
                        f"{drift['max_abs_drift_pct']:.2f}%")
    if overloaded:
        cautions.append(f"more runnable work than cores during {', '.join(overloaded)}")
    claim = band
    if cautions:
        moved = abs(math.log(drift["ratio"]["last"] / drift["ratio"]["first"])) if drift["flagged"] else 0.0
        claim = sig10(max(band, deviation, 1.0 - math.exp(-moved)))
        if claim > band:
            cautions[-1] += f"; a claim must clear +-{100 * claim:.2f}%"
    return drift, claim, cautions


def interval_name(items, rounds):
    """What the verdict's interval is of, in words (the run walls: the runner's clock)."""
    return f"the run wall ratio (the runner's clock) over {rounds} rounds"


def marked_disturbed(run):
    """The runner's mark (check_interference holds it to the readings); an earlier generation has none."""
    return bool((run.get("interference") or {}).get("disturbed"))


def design_looks(plan):
    """(first, cap) of the design a sequential analysis reads: the campaign's, or the one it names
    for a subset of its rounds."""
    first, cap = plan.get("design") or (plan["first"], plan["cap"])
    return first, cap


def seq_look(pairs, d, what, overloaded, threshold, band, design, question, margin, whole=True):
    """(interval or None, verdict, reason) of one look of the design over rounds `pairs`."""
    ci = R.sequence_ratio(d, design)
    if ci is None:
        return None, "inconclusive", f"the interval valid at every look is still unbounded after {len(d)} rounds"
    labels = {r["label"] for pair in pairs for r in pair}
    _, claim_k, _ = claim_band_of(pairs, d, [x for x in overloaded if x in labels], threshold, band)
    run_ratio = sig10(mean([b["wall_s"] for _, b in pairs]) / mean([a["wall_s"] for a, _ in pairs])) if whole else None
    return (ci, *R.decide(ci[0], ci[1], band, run_ratio, what + " (valid at every look)", claim_k, question, margin))


def undisturbed_look(pairs, threshold, band, plan, question, margin):
    """The verdict of the one look of the campaign's design over the rounds of `pairs` without a
    disturbed run, derived from those runs alone, or None when no round is disturbed."""
    kept = [(a, b) for a, b in pairs if not (marked_disturbed(a) or marked_disturbed(b))]
    if len(kept) == len(pairs):
        return None
    return derive_stats([r for pair in kept for r in pair], threshold, band,
                        {"first": len(kept), "cap": len(kept) + 1, "design": list(design_looks(plan))},
                        question, margin)["verdict"]


def sequential_stats(out, pairs, d, items, overloaded, threshold, band, plan, question, margin):
    """The looks of a sequential campaign and its verdict: at each round from the first look the
    design's interval (rules.design) against the band or margin, and with a precision whether it
    is that precise (rules.precise); the first look that decides (and is precise) is the verdict;
    without one, at the cap, no claim, or the first decided look's word when none was precise
    ("imprecise"), and the rounds the rule expects to need. A look over disturbed rounds decides
    only when the undisturbed rounds' look gives the same word."""
    design = R.design(*design_looks(plan), question)
    precision = plan.get("precision")
    looks, last, decided = [], None, None
    for k in range(plan["first"], len(pairs) + 1):
        last = seq_look(pairs[:k], d[:k], interval_name(items, k), overloaded, threshold, band, design, question,
                        margin)
        if last[1] != "inconclusive" and undisturbed_look(pairs[:k], threshold, band, plan, question,
                                                            margin) not in (None, last[1]):
            last = (last[0], "inconclusive", f"{last[2]}, but not without the disturbed rounds")
        if decided is None and last[1] != "inconclusive":
            decided = (k, last[1], last[2])
        looks.append({"round": k, "ci95": last[0], "verdict": last[1], "precise": R.precise(last[0], d[:k], precision)})
    why = R.stopped([(row["round"], row["verdict"], row["precise"]) for row in looks], len(pairs), plan["cap"])
    out["sequential"] = sequential_section(design, plan, looks, why, precision)
    out["method"] = f"{C.METHOD}; {C.SEQ_METHOD}"
    out["paired"]["ci95"] = last[0] if last else None
    out["verdict"], out["verdict_reason"] = R.sequential_ending(why, last, len(pairs), plan["cap"], decided, precision)
    if why in ("cap", "imprecise"):
        out["sequential"]["expected_rounds"] = R.expected_rounds(d, design, band, margin, question, len(d),
                                                                 precision if why == "imprecise" else None)
    return out


def sequential_section(design, plan, looks, why, precision=None):
    t_level, sign_level = R.levels(design)
    return {"method": C.SEQ_METHOD, "first": plan["first"], "cap": plan["cap"], "alpha": sig10(design.alpha),
            "sides": design.sides, "levels": [sig10(t_level), sig10(sign_level)], "looks": looks,
            "stopped": why or "ended", "expected_rounds": None, "precision": precision}


def timed_item(items, item):
    """The run (its items by id) timed the item: held, no error, a positive wall."""
    got = items.get(item)
    return got is not None and not got["error"] and got["wall_s"] > 0


def member_name(item, rounds):
    return f"benchmark {item}'s wall ratio over {rounds} rounds"


def family_stats(out, pairs, members, threshold, band, plan, question, margin, overloaded):
    """A suite's stats (rules.family_members): each benchmark's own looks at its share of alpha
    (Bonferroni), the family's looks (decided when every benchmark has), the headline its word."""
    maps = {r["label"]: by_id(r) for pair in pairs for r in pair}
    m = len(members)
    design = R.design(*design_looks(plan), question, m) if plan is not None else None
    rows = []
    for item in members:
        held = [(a, b) for a, b in pairs if timed_item(maps[a["label"]], item) and timed_item(maps[b["label"]], item)]
        d = [math.log(maps[b["label"]][item]["wall_s"] / maps[a["label"]][item]["wall_s"]) for a, b in held]
        row = {"id": item, "n": len(d), "ratio": t_ratio(d)[0] if d else None, "ci95": None,
               "verdict": "inconclusive", "verdict_reason": "", "decided_at": None, "expected_rounds": None}
        rows.append(row)
        if design is None:
            if len(d) < C.MIN_ROUNDS:
                row["verdict_reason"] = (f"only {len(d)} round(s) timed it: at least {C.MIN_ROUNDS} are needed for a "
                                         "verdict per benchmark")
                continue
            alpha = (2.0 * C.QUESTION_ALPHA if question != "claim" else C.SEQ_ALPHA) / m
            row["ci95"] = t_ratio(d, 1.0 - alpha)[1]
            labels = {r["label"] for pair in held for r in pair}
            _, claim, _ = claim_band_of(held, d, [x for x in overloaded if x in labels], threshold, band)
            row["verdict"], row["verdict_reason"] = R.decide(row["ci95"][0], row["ci95"][1], band, None,
                                                             member_name(item, len(d)), claim, question, margin)
            continue
        last = None
        for k in range(plan["first"], len(pairs) + 1):
            upto = [(a, b) for a, b in held if int(a["label"][1:]) <= k]
            last = seq_look(upto, d[:len(upto)], member_name(item, len(upto)), overloaded, threshold, band, design,
                            question, margin, whole=False)
            if last[1] != "inconclusive":
                kept = [(a, b) for a, b in upto if not (marked_disturbed(a) or marked_disturbed(b))]
                if len(kept) < len(upto):
                    other = "inconclusive"
                    if kept:
                        dk = [math.log(maps[b["label"]][item]["wall_s"] / maps[a["label"]][item]["wall_s"])
                              for a, b in kept]
                        other = seq_look(kept, dk, member_name(item, len(kept)), overloaded, threshold, band, design,
                                         question, margin, whole=False)[1]
                    if other != last[1]:
                        last = (last[0], "inconclusive", f"{last[2]}, but not without the disturbed rounds")
            if last[1] != "inconclusive":
                row["decided_at"] = k
                break
        if last is not None:
            row["ci95"], row["verdict"], row["verdict_reason"] = last
        else:
            row["verdict_reason"] = f"no look yet: {len(d)} of the first look's {plan['first']} rounds"
        if row["decided_at"] is None and d and len(pairs) >= plan["cap"]:
            row["expected_rounds"] = R.expected_rounds(d, design, band, margin, question, len(d))
    section, looks = R.family_of(question, rows, plan["first"] if plan is not None else None, len(pairs))
    out["family"] = section
    d = []
    for a, b in pairs:
        ma, mb = maps[a["label"]], maps[b["label"]]
        common = [i for i in members if timed_item(ma, i) and timed_item(mb, i)]
        d.append(math.fsum(math.log(mb[i]["wall_s"] / ma[i]["wall_s"]) for i in common) / len(common)
                 if common else 0.0)
    out["rounds"]["log_ratios"] = [sig10(v) for v in d]
    ratios = [math.log(row["ratio"]) for row in rows if row["ratio"] is not None]
    out["paired"].update(items=m, items_excluded=m - len(ratios),
                         geomean_ratio=sig10(math.exp(math.fsum(ratios) / len(ratios))) if ratios else None)
    if overloaded:  # each benchmark's own looks cleared its claim band and drift
        out["warnings"].append(f"more runnable work than cores during {', '.join(overloaded)}")
    out["method"] = f"{C.METHOD}; {C.FAMILY_METHOD}" + (f"; {C.SEQ_METHOD}" if plan is not None else "")
    if plan is None:
        out["verdict"] = R.family_verdict(question, [row["verdict"] for row in rows])
        out["verdict_reason"] = R.family_summary(section)
        return out
    why = R.stopped([(row["round"], row["verdict"]) for row in looks], len(pairs), plan["cap"])
    out["sequential"] = sequential_section(design, plan, looks, why)
    out["verdict"], out["verdict_reason"] = R.family_ending(question, section, looks, why, len(pairs), plan["cap"])
    if why == "cap":
        out["sequential"]["expected_rounds"] = section["expected_rounds"]
    return out


def derive_stats(runs, threshold, floor, sequential=None, question=C.DEFAULT_QUESTION, margin=None, family=None):
    """comparison.json `stats` in full, from the run records (written apart from the harness's
    analysis; only the policy constants and the verdict rule come from the contract).
    sequential: {first, cap} of a `rounds: auto` campaign (sequential_plan; "design": the
    campaign's looks when these are some of its rounds), else None. question, margin: what the
    campaign asks. family: a suite's benchmarks (rules.family_members), else None."""
    usable = [r for r in runs if r["status"] == "ok" and r["wall_s"] is not None and r["wall_s"] > 0]
    warnings = []
    excluded = [r["label"] for r in runs if r not in usable]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")
    ok = [r for r in usable if R.timed(r["label"])]
    band = sig10(max(float(threshold), floor or 0.0))
    labels = {r["label"]: r for r in ok}
    pairs = [(r, labels["B" + r["label"][1:]]) for r in ok if r["variant"] == "base" and "B" + r["label"][1:] in labels]
    paired_labels = {r["label"] for pair in pairs for r in pair}
    unpaired = [r["label"] for r in ok if r["label"] not in paired_labels]
    overloaded = overloaded_runs(ok)
    out = {"method": C.METHOD, "question": question, "threshold": sig10(float(threshold)),
           "margin": sig10(margin) if question != "claim" else None, "floor": sig10(floor), "band": band,
           "rounds": {"n": len(pairs), "min": C.MIN_ROUNDS, "pairs": [[a["label"], b["label"]] for a, b in pairs],
                      "unpaired": unpaired, "log_ratios": [], "sd_log": None, "t_quantile": None,
                      "typical_deviation": None},
           "paired": {"metric": "run wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None, "ci95": None,
                      "run_ratio": None},
           "claim_band": band, "per_item": None, "family": None, "drift": None, "load": {"overloaded": overloaded},
           "sequential": None, "verdict": "inconclusive", "verdict_reason": "", "warnings": warnings}
    costs = [r["machine"]["stage_wrapper_s"] for r in usable if r["machine"]["stage_wrapper_s"] is not None]
    cost = statistics.median(costs) if costs else C.WRAPPER_S
    for name in sorted({n for r in usable for n in r["stages"]}):
        per_call = [r["stages"][name]["self_cpu_s"] / r["stages"][name]["calls"] for r in usable
                    if name in r["stages"] and r["stages"][name]["calls"]]
        if per_call and statistics.median(per_call) < C.THIN_STAGE_FACTOR * cost:
            warnings.append(f"stage {name}: {1e6 * statistics.median(per_call):.2f} us self CPU per call, within "
                            f"{C.THIN_STAGE_FACTOR}x of the stage wrapper's own {1e6 * cost:.2f} us "
                            f"({'measured in the runs' if costs else 'typical'}): instrumentation moves its figures")
    wrapped = [r["label"] for r in ok if any(r["stages_installed"].values())]
    if wrapped:
        warnings.append(f"the headline wall comes from runs with stage wrappers ({len(wrapped)} of {len(ok)}: an "
                        "explicit order without stage runs), so it holds the wrappers' cost; use `rounds:` or add "
                        "stage runs (a, b) to the order")
    if unpaired:
        warnings.append(f"runs without a partner of the other variant, left out of the interval: {', '.join(unpaired)}")
    if not pairs:
        out["verdict_reason"] = "no round with an ok run of both variants"
        return out
    if family is not None:
        return family_stats(out, pairs, family, threshold, band, sequential, question, margin, overloaded)
    in_pairs = [r for pair in pairs for r in pair]

    def usable_items(key):
        maps = [by_id(r) for r in in_pairs]
        ids = sorted(set().union(*(set(m) for m in maps)))
        good = [i for i in ids if all(i in m and not m[i]["error"] and m[i][key] > 0 for m in maps)]
        return good, len(ids) - len(good)

    def logs_of(items, key):
        def row(a, b):  # each run's items by id once (per item it was quadratic: 10,000 items took hours)
            if not items:
                return [math.log(b["wall_s"] / a["wall_s"])]
            ma, mb = by_id(a), by_id(b)
            return [math.log(mb[i][key] / ma[i][key]) for i in items]
        return [row(a, b) for a, b in pairs]

    items, dropped = usable_items("wall_s")
    logs = logs_of(items, "wall_s")  # per item: the worker's walls, for the per-item table
    d = [row[0] for row in logs_of([], "wall_s")]  # the headline: the runner's walls
    ratio, ci, sd, q = t_ratio(d)
    run_ratio = sig10(mean([b["wall_s"] for _, b in pairs]) / mean([a["wall_s"] for a, _ in pairs]))
    paired = out["paired"]
    paired.update(items=len(items), items_excluded=dropped, geomean_ratio=ratio, ci95=ci, run_ratio=run_ratio)
    center = math.log(ratio)
    deviation = sig10(1.0 - math.exp(-statistics.median([abs(v - center) for v in d])))
    out["rounds"].update(log_ratios=[sig10(v) for v in d], sd_log=sd, t_quantile=q, typical_deviation=deviation)
    if items and dropped:
        warnings.append(f"{dropped} item(s) left out of the per-item table "
                        "(error or no positive wall_s in some ok run)")
    what = interval_name(len(items), len(pairs))

    drift, claim, cautions = claim_band_of(pairs, d, overloaded, threshold, band)
    slots = {r["slots"] for r in ok}
    busy = [r["machine"]["process_cpu_s"] / r["wall_s"] for r in ok
            if r["machine"]["process_cpu_s"] is not None and r["label"] not in overloaded]
    if len(slots) == 1 and min(slots) >= 2 and busy and statistics.median(busy) < C.GIL_CPU_PER_WALL:
        warnings.append(f"slots {min(slots)}, but the timed loops used {statistics.median(busy):.2f} CPU s per wall s "
                        "(median over runs): the items likely hold the GIL (pure-Python code), so the slots contend "
                        "instead of running in parallel and the ratio measures the contention; use `slots: 1`")
    out["drift"] = drift
    warnings.extend(cautions)
    out["claim_band"] = claim
    enough = len(pairs) >= C.MIN_ROUNDS
    if items:
        item_design = R.design(*design_looks(sequential), "claim", len(items)) if sequential is not None else None
        judged = enough or item_design is not None
        rows = []
        for j, item in enumerate(items):
            column = [row[j] for row in logs]
            r_j, ci_j, _, _ = t_ratio(column)
            rows.append({"id": item, "ratio": r_j,
                         "ci95": R.sequence_ratio(column, item_design) if item_design is not None else ci_j})
        rows.sort(key=lambda row: (-row["ratio"], row["id"]))
        unbounded = sum(1 for row in rows if row["ci95"] is None)
        note = None
        if not judged:
            note = (f"{len(logs)} round(s): too few for a verdict per item (at least {C.MIN_ROUNDS}); each item's "
                    "ratio is shown, none is judged")
        elif unbounded:
            note = (f"{unbounded} of {len(rows)} items' intervals are still unbounded after {len(logs)} rounds (each "
                    "item has its share of alpha): those items cannot be judged")
        out["per_item"] = {
            "items": len(rows), "band": claim,
            "regressed": sum(1 for row in rows if judged and row["ci95"] and row["ci95"][0] > 1 + claim),
            "improved": sum(1 for row in rows if judged and row["ci95"] and row["ci95"][1] < 1 - claim),
            "note": note, "worst": rows[0], "table": rows[:C.PER_ITEM_SHOWN],
            "more": max(0, len(rows) - C.PER_ITEM_SHOWN)}
    if sequential is not None:
        return sequential_stats(out, pairs, d, len(items), overloaded, threshold, band, sequential, question, margin)
    if not enough:
        out["verdict_reason"] = (f"only {len(pairs)} round(s) of one base and one candidate run: at least "
                                 f"{C.MIN_ROUNDS} are needed to estimate the run-to-run variance")
        warnings.append(f"too few rounds to conclude ({len(pairs)} of at least {C.MIN_ROUNDS}; `rounds: N` or "
                        "`--rounds N`)")
        return out
    if question != "claim":  # each end a one-sided bound at the question's alpha
        _, ci, _, _ = t_ratio(d, 1.0 - 2.0 * C.QUESTION_ALPHA)
        paired["ci95"] = ci
    out["verdict"], out["verdict_reason"] = R.decide(ci[0], ci[1], band, run_ratio, what, claim, question, margin)
    return out


def with_interference(stats, runs, bounds, threshold, floor, question=C.DEFAULT_QUESTION, margin=None):
    """stats with `interference` when campaign.json has its bounds: the runs marked disturbed (the
    marks are checked against their readings by check_interference), the rounds they are in, and
    derive_stats on the other rounds; a claim those alone do not give is no claim."""
    if bounds is None:
        return stats
    usable = [r for r in runs if r["status"] == "ok" and r["wall_s"] is not None and r["wall_s"] > 0]
    section = [(r, r.get("interference")) for r in usable]
    marked = [r["label"] for r, _s in section if marked_disturbed(r)]
    rounds = [int(a[1:]) for a, b in stats["rounds"]["pairs"] if a in marked or b in marked]
    other = without = None
    if rounds and stats["family"] is None:
        gone = {f"{v}{k}" for k in rounds for v in "AB"}
        kept = len(stats["rounds"]["pairs"]) - len(rounds)
        seq = stats["sequential"]
        plan = {"first": kept, "cap": kept, "design": [seq["first"], seq["cap"]]} if seq is not None and kept else None
        rest = derive_stats([r for r in runs if r["label"] not in gone], threshold, floor, plan, question, margin)
        other = (rest["verdict"], rest["rounds"]["n"])
        without = {"rounds": rest["rounds"]["n"], "geomean_ratio": rest["paired"]["geomean_ratio"],
                   "ci95": rest["paired"]["ci95"], "verdict": rest["verdict"]}
    stats["verdict"], stats["verdict_reason"], holds = R.without_disturbed(stats["verdict"], stats["verdict_reason"],
                                                                           rounds, other)
    stats["interference"] = {
        "max_steal": bounds["max_steal"], "min_cpu_per_wall": bounds["min_cpu_per_wall"],
        "steal_runs": sum(1 for _r, s in section if s is not None and s["steal_ticks"] is not None),
        "freq_runs": sum(1 for _r, s in section if s is not None and s["freq_mhz_before"] is not None),
        "disturbed": marked, "disturbed_rounds": rounds, "without": without, "holds": holds}
    if marked:
        stats["warnings"].append(R.interference_warning([(r["label"], s["causes"]) for r, s in section
                                                         if s is not None and s["disturbed"]],
                                                        bounds["max_steal"], bounds["min_cpu_per_wall"], rounds, holds))
    return stats


def with_outside(stats, runs):
    """stats with `outside`, as harness/comparison/analysis.py derives it: the contradicted runs (the
    runner's marks, which check_outside holds to the records' figures) and the time-outside-the-loop
    rule over the paired timed rounds; a claim they do not support is not made."""
    usable = [r for r in runs if r["status"] == "ok" and r["wall_s"] is not None and r["wall_s"] > 0
              and isinstance(r.get("outside"), dict)]
    contradicted = [(r["label"], r["outside"]["contradictions"]) for r in usable if r["outside"]["contradicted"]]
    timed = {r["label"]: r for r in usable if R.timed(r["label"])}

    def side(r):
        return r["wall_s"], r["outside"], r["process"], r["launch"]["mode"]

    rounds = [R.outside_pair(side(r), side(timed["B" + label[1:]])) for label, r in timed.items()
              if r["variant"] == "base" and "B" + label[1:] in timed]
    moved = R.moved_outside(rounds, stats["band"])
    return R.outside_section(stats, contradicted, moved)


def instructions_section(instr, wall_verdict, wall_ci=None, band=0.0):
    """comparison.json `instructions` by rules.instructions_section from the ok records."""
    return R.instructions_section([(r["label"], r["variant"], r["instructions"], len(r["items"])) for r in instr
                                   if r["status"] == "ok"], wall_verdict, wall_ci, band)


def metrics_section(runs, stats, wall, instructions, threshold):
    """comparison.json `metrics`, a port of harness/comparison/metrics.py over plain JSON: the
    headline's entry from stats and wall; each other "rounds" metric of contract.METRIC_DEFINITIONS
    from the paired timed rounds' records, read here by its field path; the instruction counts'."""
    labels = {r["label"]: r for r in runs}
    pairs = [(labels[a], labels[b]) for a, b in stats["rounds"]["pairs"]]
    seq = stats["sequential"]
    sequential = R.design(seq["first"], seq["cap"]) if seq is not None else None
    out = [R.headline_entry(wall, stats)]
    for metric in C.METRIC_DEFINITIONS:
        if metric.name == C.HEADLINE or metric.statistic != "rounds":
            continue
        d, totals, of = metric_rounds(metric.reads, pairs, stats["family"] is not None)
        if not d:
            out.append(R.metric_entry(metric.name, of, 0, None, None, None, None, threshold, sequential))
            continue
        ratio, fixed, _, _ = t_ratio(d)
        base = sig10(math.fsum(totals[a["label"]] for a, _ in pairs) / len(pairs))
        cand = sig10(math.fsum(totals[b["label"]] for _, b in pairs) / len(pairs))
        out.append(R.metric_entry(metric.name, of, len(d), base, cand, ratio,
                                  R.metric_interval(d, sequential, fixed), threshold, sequential))
    if instructions is not None:
        out.append(R.instructions_entry(instructions))
    return out


def metric_rounds(reads, pairs, family=False):
    """(per-round log ratios, each run's value by label, what was compared) of the field `reads`:
    an item field over the items usable in every paired run (the mean of their log ratios; a
    family's: per round over the items both its runs held), or a run field (one value per run,
    every paired run holding a positive one)."""
    runs = [r for pair in pairs for r in pair]
    if reads.startswith("items[].") and family:
        key = reads[len("items[]."):]
        d, totals = [], {}
        for a, b in pairs:
            ma, mb = by_id(a), by_id(b)
            common = [i for i in ma if i in mb and all(not m[i]["error"] and m[i][key] > 0 for m in (ma, mb))]
            if not common:
                return [], {}, f"item {key} over the benchmarks each round held"
            d.append(math.fsum(math.log(mb[i][key] / ma[i][key]) for i in common) / len(common))
            totals[a["label"]] = math.fsum(ma[i][key] for i in common)
            totals[b["label"]] = math.fsum(mb[i][key] for i in common)
        return d, totals, f"item {key} over the benchmarks each round held"
    if reads.startswith("items[]."):
        key = reads[len("items[]."):]
        maps = [by_id(r) for r in runs]
        ids = sorted(set().union(*(set(m) for m in maps))) if maps else []
        items = [i for i in ids if all(i in m and not m[i]["error"] and m[i][key] > 0 for m in maps)]
        if not items:
            return [], {}, f"item {key} over 0 items"
        d = []
        for a, b in pairs:
            ma, mb = by_id(a), by_id(b)
            d.append(math.fsum(math.log(mb[i][key] / ma[i][key]) for i in items) / len(items))
        totals = {r["label"]: math.fsum(m[i][key] for i in items) for r, m in zip(runs, maps)}
        return d, totals, f"item {key} over {len(items)} items"
    values = {}
    for r in runs:
        value = r
        for part in reads.split("."):
            value = value.get(part) if isinstance(value, dict) else None
        values[r["label"]] = value
    if not pairs or not all(is_number(v) and v > 0 for v in values.values()):
        return [], {}, reads
    return [math.log(values[b["label"]] / values[a["label"]]) for a, b in pairs], values, reads


def diff(want, got, path: str = "") -> "Iterator[tuple[str, object, object]]":
    """Key paths where the re-derived value and the claimed one differ (floats within REL_TOL)."""
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            sub = f"{path}.{key}" if path else key
            if key not in got or key not in want:
                yield sub, want.get(key), got.get(key)
            else:
                yield from diff(want[key], got[key], sub)
    elif isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        for i, (a, b) in enumerate(zip(want, got)):
            yield from diff(a, b, f"{path}[{i}]")
    elif is_number(want) and is_number(got) and (isinstance(want, float) or isinstance(got, float)):
        if not math.isclose(want, got, rel_tol=C.REL_TOL, abs_tol=0.0):
            yield path, want, got
    elif want != got or type(want) is not type(got):
        yield path, want, got


def report_diff(check: Check, derived, claimed) -> None:
    for path, want, got in diff(derived, claimed):
        check.fail(C.COMPARISON, f"{path} claims {short(got)}, the run records give {short(want)}", "derived")


def check_comparison(check, docs):
    campaign, claimed = docs["campaign"], docs["claimed"]
    try:
        derived = derive(check, campaign, docs["runs"], docs["runner"], docs["cleanup"], docs["golden"],
                         docs["instructions"], docs["workload"]["digest"], docs["environment"].get("sandbox"))
        floor = docs["noise_floor"]["floor"] if docs["noise_floor"] else None
        plan = R.sequential_plan(campaign, [(r["label"], r["status"], r["process"]["wall_s"]) for r in docs["runs"][:2]])
        question, margin = campaign["question"], campaign["margin"]
        derived["stats"] = with_outside(with_interference(
            derive_stats(docs["runs"], campaign["threshold"], floor, plan, question, margin,
                         R.family_members(campaign, docs["runner"]["items"])),
            docs["runs"], campaign.get("interference"), campaign["threshold"], floor, question, margin), docs["runs"])
        stats = derived["stats"]
        derived["instructions"] = instructions_section(docs["instructions"], stats["verdict"],
                                                       stats["paired"]["ci95"], stats["band"]) \
            if campaign["instructions"] is not None else None
        derived["metrics"] = metrics_section(docs["runs"], derived["stats"], derived["wall"], derived["instructions"],
                                             campaign["threshold"])
        check_stop(check, campaign, derived["stats"])
        check_family_items(check, campaign, docs["runner"],
                           [(r["label"], r["status"], [it["id"] for it in r["items"]]) for r in docs["runs"]],
                           derived["stats"])
    except (OSError, ValueError, EOFError, zlib.error) as exc:
        check.fail(C.COMPARISON, f"cannot be re-derived from the records ({exc.__class__.__name__}: {str(exc)[:80]})",
                   "derived")
        return
    claimed = dict(claimed)
    if derived["parity"]["divergence"] is None:
        derived["parity"] = {k: v for k, v in derived["parity"].items() if k != "divergence"}
        claimed["parity"] = {k: v for k, v in claimed["parity"].items() if k != "divergence"}
        check.notes.append("parity.divergence not re-derived: its values need the arrays decoded; harness verify "
                           "does it")
    report_diff(check, derived, claimed)
    check.status = claimed["status"]


def structure(root, max_array_bytes: "int | None" = None) -> "tuple[Check, dict | None]":
    """Layout, arrays and record rules: what both checkers share. Returns (check, docs); docs is
    None when the records cannot be re-derived from."""
    earlier(root)
    check = Check(root, max_array_bytes)
    rows = check_layout(check)
    if rows is None:
        return check, None
    stored = check_arrays(check)
    return check, check_records(check, stored)


def rehash(root, max_array_bytes: "int | None" = None, structured=None) -> Check:
    """structured: what structure(root, max_array_bytes) returned, made once by a caller that runs
    both checkers on the same bytes (harness selftest's walks); this check's own, as it goes on
    to change it."""
    check, docs = structure(root, max_array_bytes) if structured is None else structured
    if docs is not None:
        check_comparison(check, docs)
        check.notes.append("campaign.yaml not compared with campaign.json: needs a YAML parser; harness verify does it")
    return check


# --- a bisect folder: OUT/bisect.json and its step bundles -------------------------------------
def is_bisect(root) -> bool:
    """A folder `harness bisect` wrote: bisect.json at its root, no bundle's tag manifest."""
    return os.path.lexists(os.path.join(root, C.BISECT_FILE)) and \
        not os.path.lexists(os.path.join(root, C.TAGMANIFEST))


def rehash_step(path, max_array_bytes=None):
    """This script's checks of one step bundle: (check, docs), docs None when its records
    cannot be re-derived from."""
    check, docs = structure(path, max_array_bytes)
    if docs is not None:
        check_comparison(check, docs)
    return check, docs


def _entries(check, rel, limit):
    """The names in a folder of the bisect folder, each (name, lstat), at most limit of them;
    None (and a problem) when it is not a plain folder."""
    path = check.path(rel) if rel else check.root
    try:
        st = os.lstat(path)
    except OSError as exc:
        check.fail(rel or ".", f"cannot be examined ({exc.__class__.__name__})", "bisect")
        return None
    if not stat.S_ISDIR(st.st_mode):
        check.fail(rel or ".", "not a folder (a symlink or a file)", "bisect")
        return None
    out: list = []
    with os.scandir(path) as it:
        for entry in it:
            if len(out) >= limit:
                raise Unusable(f"{path}: more than {limit} entries; no bisect folder holds that many, and none is read")
            out.append((entry.name, entry.stat(follow_symlinks=False)))
    return sorted(out)


def check_bisect(root, step_check=None, max_array_bytes=None):
    """A bisect folder: bisect.json of its declared shape, nothing beside it but steps/, in
    steps/ exactly the receipt's step bundles; each step bundle verified by step_check (this
    script's own checks by default; `harness verify` passes its own) and its digest, campaign,
    SHAs, verdict, ratio and interval the receipt's; then the search rule (rules.bisect_search)
    replayed over the steps' verified verdicts: every step the one it asks for, none past its end,
    and its ending, culprit and reason the receipt's. Returns (check, receipt or None)."""
    step_check = step_check or rehash_step
    check = Check(root, max_array_bytes)
    if not os.path.isdir(root) or os.path.islink(root):
        raise Unusable(f"{root}: not a directory")
    top = _entries(check, "", 64)
    names = {name: st for name, st in top or ()}
    for name in sorted(set(names) - {C.BISECT_FILE, C.BISECT_STEPS}):
        check.fail(name, "extra: a bisect folder holds bisect.json and steps/ only", "bisect")
    st = names.get(C.BISECT_FILE)
    if st is None or not stat.S_ISREG(st.st_mode):
        check.fail(C.BISECT_FILE, "not a regular file (a symlink, a folder or missing)", "bisect")
        return check, None
    check.openable.add(C.BISECT_FILE)
    try:
        check.digest = check.sha256(C.BISECT_FILE)
        receipt = parse_json(check.read(C.BISECT_FILE, C.MAX_BISECT_BYTES))
    except (OSError, JSONRefused) as exc:
        check.fail(C.BISECT_FILE, str(exc)[:200], "parsing")
        return check, None
    schema = receipt.get("schema") if isinstance(receipt, dict) else None
    if schema != C.SCHEMAS["bisect"]:
        check.fail(C.BISECT_FILE, f"schema {short(schema)}: this checker reads {C.SCHEMAS['bisect']} only", "parsing")
        return check, None
    shape = conform("bisect", receipt)
    for where, problem in shape:
        check.fail(C.BISECT_FILE, f"{where}: {problem}", "parsing")
    if shape:
        return check, None
    commits, good, steps = receipt["commits"], receipt["good"], receipt["steps"]
    if not commits or commits[-1] != receipt["bad"] or len(set(commits)) != len(commits) or good in commits:
        check.fail(C.BISECT_FILE, "commits: not the commits good..bad (bad last, each once, good not among them)",
                   "bisect")
        return check, receipt
    folders = [s["folder"] for s in steps]
    if C.BISECT_STEPS in names:
        listed = _entries(check, C.BISECT_STEPS, C.MAX_BISECT_STEPS + 8)
        for name, _st in listed or ():
            if name not in folders:
                check.fail(f"{C.BISECT_STEPS}/{name}", "extra: not a step bisect.json lists", "bisect")
    elif steps:
        check.fail(C.BISECT_STEPS, "missing", "bisect")
    verified = []
    for n, s in enumerate(steps):
        rel = f"{C.BISECT_STEPS}/{s['folder']}"
        want = f"{n + 1:02d}-{s['candidate'][:12]}"
        if s["step"] != n + 1 or s["folder"] != want:
            check.fail(C.BISECT_FILE, f"steps[{n}]: step {s['step']} in {short(s['folder'])}, its position gives "
                                      f"{n + 1} in {want}", "bisect")
            continue
        path = check.path(rel)
        if not os.path.isdir(path) or os.path.islink(path):
            check.fail(rel, "missing (or not a folder)", "bisect")
            continue
        try:
            sub, docs = step_check(path, max_array_bytes)
        except Unusable as exc:
            check.fail(rel, f"unusable: {exc}", "bisect")
            continue
        check.problems += [Problem(f"{rel}/{p.file}", p.text, p.rule) for p in sub.problems]
        check.files += sub.files
        check.arrays += sub.arrays
        if sub.problems or docs is None:
            check.fail(rel, "the step bundle does not verify", "bisect")
            continue
        campaign = docs["campaign"]
        got = {"digest": sub.digest, "base": campaign["revisions"]["base"]["sha"],
               "candidate": campaign["revisions"]["candidate"]["sha"]}
        got["verdict"], got["ratio"], got["interval"], got["band"] = R.bisect_step(docs["claimed"])
        for key, value in got.items():
            if s[key] != value:
                check.fail(C.BISECT_FILE, f"steps[{n}].{key} {short(s[key])}, its bundle gives {short(value)}",
                           "bisect")
        if campaign["name"] != receipt["campaign"]:
            check.fail(rel, f"a bundle of campaign {short(campaign['name'])}, not {short(receipt['campaign'])}",
                       "bisect")
        if sub.sha256(C.CAMPAIGN_YAML) != receipt["campaign_sha256"]:
            check.fail(rel, "data/campaign.yaml is not the campaign file bisect.json names (campaign_sha256)",
                       "bisect")
        if campaign.get("budget_s") != receipt["budget_s"]:
            check.fail(rel, f"budget_s {short(campaign.get('budget_s'))}, bisect.json's budget per step is "
                            f"{short(receipt['budget_s'])}", "bisect")
        verified.append({**s, **got})
    if len(verified) != len(steps):
        check.fail(C.BISECT_FILE, "culprit not re-derived: a step bundle does not verify", "bisect")
        return check, receipt
    try:
        rule = R.bisect_search(good, commits, verified, receipt["find"], receipt["threshold"], receipt["band"])
    except R.BisectOff as off:
        check.fail(C.BISECT_FILE, f"steps[{off.index}]: compares {verified[off.index]['base'][:12]} -> "
                                  f"{verified[off.index]['candidate'][:12]} with band "
                                  f"{short(verified[off.index]['band'])}; the search rule asks for "
                                  f"{off.want[0][:12]} -> {off.want[1][:12]} with band {off.want[2]:g}", "bisect")
        return check, receipt
    if len(steps) > rule["used"]:
        check.fail(C.BISECT_FILE, f"steps[{rule['used']}]: a step after the search rule ended "
                                  f"({rule['ending']})", "bisect")
    elif rule["next"] is not None:
        if receipt["ending"] != "stopped" or receipt["culprit"] is not None:
            check.fail(C.BISECT_FILE, f"ending {short(receipt['ending'])}: the search rule asks for another step "
                                      f"({rule['next'][0][:12]} -> {rule['next'][1][:12]}); a search that ended "
                                      "there is stopped, with no culprit", "bisect")
    else:
        for key in ("ending", "culprit", "reason"):
            if receipt[key] != rule[key]:
                check.fail(C.BISECT_FILE, f"{key} {short(receipt[key])}, the search rule over the verified steps "
                                          f"gives {short(rule[key])}", "bisect")
    check.status = receipt["ending"]
    return check, receipt


def bisect_line(root, check, receipt):
    """The OK line of a bisect folder."""
    steps = receipt["steps"]
    found = f"culprit {receipt['culprit']}" if receipt["culprit"] else f"no culprit ({receipt['ending']})"
    return (f"OK {root}: bisect of {len(receipt['commits'])} commit(s) {receipt['good'][:12]}..{receipt['bad'][:12]}; "
            f"{len(steps)} step bundle(s) verified ({check.files} payload files, {check.arrays} arrays), each the "
            f"step the search rule asks for; {found}, re-derived from their verdicts; bisect.json sha256 "
            f"{check.digest}")


def attestation_note(root):
    """A signature beside the bag (BUNDLE.intoto.json) is not checked here (Ed25519 needs a
    library): say whether one is present."""
    sibling = os.path.abspath(root).rstrip(os.sep) + C.ATTESTATION_SUFFIX
    if os.path.lexists(sibling):
        return (f"an attestation is present beside the bundle ({os.path.basename(sibling)}), not checked here: "
                "`harness verify BUNDLE --trust FILE` checks who signed it")
    return None


def _shown(text) -> str:
    """A line for the terminal: every character that is not printable (ESC, CSI, CR, bidi
    overrides...) or shows as nothing or a blank (a filler: contract.shown) shown as its escape,
    as harness/render/text.term shows it."""
    text = str(text)
    return text if C.all_shown(text) else "".join(ch if C.shown(ch) else ascii(ch)[1:-1] for ch in text)


def main(argv: "list[str]") -> int:
    args = argv[1:]
    legacy = "--legacy" in args  # the reviewer's word, never the bundle's: earlier rules may judge
    args = [a for a in args if a != "--legacy"]
    cap = None
    if len(args) == 3 and args[1] == "--max-array-bytes" and args[2].isdigit() and len(args[2]) <= 19:
        cap = int(args[2])
        args = args[:1]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -S rehash.py BUNDLE|BISECT_FOLDER [--max-array-bytes N] [--legacy]", file=sys.stderr)
        return 2
    root = args[0]
    if is_bisect(root):
        return main_bisect(root, cap)
    try:
        check = rehash(root, cap)
    except Earlier as exc:
        if not legacy:
            print(f"rehash: error: {_shown(exc)}", file=sys.stderr)
            return 2
        return main_legacy(exc.generation, root, cap)
    except Unusable as exc:
        print(f"rehash: error: {_shown(exc)}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"rehash: error: {_shown(root)}: checking the bundle needs more memory than this process may use; run it "
              "where it may use more (ulimit -v)", file=sys.stderr)
        return 2
    for problem in check.problems:
        print(f"FAIL {_shown(problem)}")
    if check.problems:
        print(f"{_shown(root)}: {len(check.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {_shown(root)}: {check.files} payload files and {check.arrays} arrays re-hashed with the standard "
          "library; "
          f"every file and field is of the contract ({C.FORMAT}); record rules hold; comparison re-derived (runs, "
          f"wall, stages, parity, status, the rounds' trimmed-t interval, per-item ratios, drift, load, the verdict "
          f"rule, instruction counts, every metric's entry: {', '.join(C.METRIC_NAMES)}); status {check.status}; "
          f"digest {check.digest}")
    for note in check.notes + [n for n in [attestation_note(root)] if n]:
        print(f"note: {_shown(note)}")
    return 0


def main_legacy(generation, root, cap):
    """--legacy on a bundle of an earlier generation: its frozen checker's verdict, shown as that
    generation's (legacy.report), every line escaped."""
    try:
        outcome = L.run(generation, root, cap)
    except (L.Refused, OSError) as exc:
        print(f"rehash: error: {_shown(exc)}", file=sys.stderr)
        return 2
    code, out, err = L.report(generation, outcome, root, C.FORMAT)
    for line in out:
        print(_shown(line))
    for line in err:
        print(f"rehash: error: {_shown(line)}", file=sys.stderr)
    return code


def main_bisect(root, cap):
    try:
        check, receipt = check_bisect(root, max_array_bytes=cap)
    except Unusable as exc:
        print(f"rehash: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"rehash: error: {root}: checking the bisect folder needs more memory than this process may use",
              file=sys.stderr)
        return 2
    for problem in check.problems:
        print(f"FAIL {_shown(problem)}")
    if check.problems:
        print(f"{_shown(root)}: {len(check.problems)} problem(s); do not trust this bisect")
        return 1
    print(bisect_line(root, check, receipt))
    print(f"reason: {show(receipt['reason'])}")
    print("note: the commit list is not checked against the repository here; `harness verify OUT --repo PATH` does it")
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv)
        sys.stdout.flush()
    except BrokenPipeError:  # `rehash.py B | head -1`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
