#!/usr/bin/env python3
"""Re-check an evidence bundle with the Python standard library alone.

    python -S harness/rehash.py BUNDLE [--max-array-bytes N]

A reviewer who does not trust the harness (or numpy) runs this file, with harness/contract.py
beside it (the bundle's closed contract, also standard library only). It imports nothing else
and nothing from the bundle, opens only files the manifests list (never through a symlink,
never a FIFO or device), reads every file under the limit its kind declares, parses JSON
strictly, never unpickles and never executes anything it reads. `harness verify` runs the same
checks (it imports this file), then re-derives comparison.json once more with the harness's own
code and re-reads campaign.yaml; this script keeps its own, independent re-derivation of the
numbers.

The contract decides, never the bundle: a file of a kind it does not declare, a key it does
not declare at any level, a bag-info line it does not name, or a schema id that is not the
current one is refused. Each problem is one line naming the file and, for record rules, the
rule in brackets (contract.RULES). Exit 0 intact, 1 problems, 2 unusable input.
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


def _load_contract():
    """harness/contract.py: imported as part of the harness, or loaded from its file beside
    this script when a reviewer runs it alone."""
    if __package__:
        from harness import contract

        return contract
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract.py")
    spec = importlib.util.spec_from_file_location("abba_contract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


C = _load_contract()
CHUNK = 1 << 20
SHAPE_PROBLEMS = 20  # shape lines per file; past them the file is refused as a whole
ABSENT_STATES = {"gone": True, "pid reused": True, "alive": False}
LOG_MARKERS = (b"Traceback (most recent call last):", b"SIGKILL")  # a worker that died, though ok
SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 16), "c": (8, 16, 32)}
HEX = frozenset("0123456789abcdef")


class Unusable(Exception):
    pass


def show(rel):
    """A path as printed: plain when printable, escaped otherwise."""
    return rel if rel.isprintable() else ascii(rel)


def short(value):
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class Check:
    def __init__(self, root, max_array_bytes=None):
        self.root = root
        self.max_array_bytes = C.DEFAULT_MAX_ARRAY_BYTES if max_array_bytes is None else max_array_bytes
        self.problems = []
        self.notes = []
        self.present = set()  # regular files found by the walk
        self.openable = set()  # of those, the ones a manifest lists: the only files opened
        self.files = 0
        self.arrays = 0
        self.status = None
        self.digest = None
        self.bag_info = {}
        self.array_headers = {}  # digest -> (dtype, shape) of each stored array
        self.json_bytes = 0  # all JSON read so far (contract.MAX_JSON_BYTES_TOTAL)

    def fail(self, rel, msg, rule=None):
        self.problems.append(f"{show(rel)}: " + (f"[{rule}] " if rule else "") + msg)

    def path(self, rel):
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

    def read(self, rel, limit):
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

    def sha256(self, rel):
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


# --- strict, bounded JSON --------------------------------------------------------------------
class JSONRefused(ValueError):
    pass


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise JSONRefused(f"duplicate key {key!r}")
        # one string object for each short value a bundle repeats (item ids, digests, dtypes, labels:
        # 200 runs of 1000 items hold each 200 times), so a large bundle is checked in less memory
        out[key] = sys.intern(value) if type(value) is str and len(value) <= 128 else value
    return out


def _no_constant(name):
    raise JSONRefused(f"{name} is not JSON")


def _bounded_int(text):
    digits = len(text.lstrip("-"))
    if digits > C.MAX_INT_DIGITS:
        raise JSONRefused(f"an integer of {digits} digits (at most {C.MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text):
    if len(text) > C.MAX_NUMBER_CHARS:
        raise JSONRefused(f"a number written with {len(text)} characters (at most {C.MAX_NUMBER_CHARS})")
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to infinity
        raise JSONRefused(f"{text[:20]} is not a finite number")
    return value


def _depth(value, limit):
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return False
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v)
    return True


def parse_json(data):
    """Strict JSON: UTF-8, no duplicate keys, no NaN, Infinity or number that overflows to it,
    integers within 64 bits, at most contract.MAX_JSON_DEPTH deep."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                           parse_float=_finite_float, parse_int=_bounded_int)
    except RecursionError:
        raise JSONRefused(f"nested deeper than {C.MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise JSONRefused("not UTF-8") from None
    except JSONRefused:
        raise
    except ValueError as exc:
        raise JSONRefused(f"not valid JSON ({str(exc)[:60]})") from None
    if not _depth(value, C.MAX_JSON_DEPTH):
        raise JSONRefused(f"nested deeper than {C.MAX_JSON_DEPTH} levels")
    return value


# --- the closed shape of every document -------------------------------------------------------
def tokens(path):
    """'items[].fields.*.shape[]' -> ['items', '[]', 'fields', '*', 'shape', '[]']."""
    return [t for t in re.split(r"\.|(\[\])", path) if t]


_TREES = {}


def tree(doc):
    """FIELDS[doc] as nested nodes {"field": Field or None, "children": {token: node}}."""
    if doc not in _TREES:
        fields = C.FIELDS[doc] if doc != "bag-info" else C.BAG_INFO_FIELDS
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


def conform(doc, value):
    """Every problem of value against FIELDS[doc], closed: (path, problem) pairs, an undeclared
    key at any level among them. Iterative, and it stops at SHAPE_PROBLEMS."""
    out = []
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
        value = parse_json(data)
    except (OSError, JSONRefused) as exc:
        check.fail(rel, str(exc), "parsing")
        return None
    schema = value.get("schema") if isinstance(value, dict) else None
    if schema != C.SCHEMAS[kind]:
        check.fail(rel, f"schema {short(schema)}: this checker reads {C.SCHEMAS[kind]} only; a bundle of another "
                        "version of the harness is not judged by other rules: re-run its campaign with this harness "
                        "(`harness run` of the campaign file at its campaign_path)", "parsing")
        return None
    problems = conform(kind, value)
    for where, problem in problems:
        check.fail(rel, f"{where}: {problem}", "parsing")
    return None if problems else value


# --- layout ------------------------------------------------------------------------------------
def unsafe_path(rel):
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
    intact = C.BAG_INFO in check.openable and not any(p.startswith(f"{C.BAG_INFO}: ") for p in check.problems)
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
    if "Abba-Format" not in fields and intact:  # every bundle before v6: one line, not one per file it holds
        raise Unusable(f"{C.BAG_INFO}: no Abba-Format line: a bundle of an older harness (before {C.FORMAT}), or of "
                       "none; this checker reads that format only; re-run its campaign with this harness to get a bundle it judges")
    if fields.get("Abba-Format") not in (None, C.FORMAT) and intact:
        raise Unusable(f"{C.BAG_INFO}: Abba-Format {short(fields['Abba-Format'])}: this checker reads {C.FORMAT} "
                       "only; re-run its campaign with this harness to get a bundle it judges")
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
    m = C.DTYPE_RE.match(descr)
    if not m:
        raise ValueError(f"dtype {descr!r} refused (only plain bool, int, uint, float, complex)")
    order, kind, itemsize = m.group(1), m.group(2), int(m.group(3))
    if itemsize not in SIZES[kind]:
        raise ValueError(f"dtype {descr!r} refused (unknown size)")
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
    stored, named = set(), []
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
    rel_a, rel_b = C.array_path(digest_a), C.array_path(digest_b)
    da, sa, ka, ia, _, ca = array_chunks(check, rel_a, check.max_array_bytes)
    db, sb, kb, ib, _, cb = array_chunks(check, rel_b, check.max_array_bytes)
    try:
        if (da, sa) != (db, sb) or (ka, ia) not in FLOAT_FORMATS:
            return None
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
                    return None
                ox = -(x & (top - 1)) if x & top else x  # monotone in the float's value; -0.0 is +0.0
                oy = -(y & (top - 1)) if y & top else y
                worst = max(worst, abs(ox - oy))
        return worst
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
    # items: exactly the planned ones, in order
    if status == "ok" and [it["id"] for it in record["items"]] != runner["items"]:
        got = [it["id"] for it in record["items"]]
        missing = [i for i in runner["items"] if i not in set(got)]
        check.fail(rel, f"items {short(got)} are not the {len(runner['items'])} planned (runner.json items"
                        + (f"; missing {short(missing[:3])}" if missing else "") + ")", "plan")
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
        if item["error"] is None and not item["fields"]:
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
    staged = C.instrumented(label, campaign["order"])
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


def check_auto_rounds(check, campaign, runs):
    """`rounds: auto`: the runner chose the count after the first round (A1 and B1) from their
    process walls alone; a campaign ended before that keeps the minimum."""
    first = {r["label"]: r for r in runs[:2]}
    if set(first) == {"A1", "B1"} and all(r["status"] == "ok" for r in first.values()):
        pace = first["A1"]["process"]["wall_s"] + first["B1"]["process"]["wall_s"]
        want = C.auto_rounds(campaign["budget_s"], pace, campaign["min_rounds"])
        why = f"the first round took {pace:.3f} s of a {campaign['budget_s']:g} s budget"
    else:
        want, why = campaign["min_rounds"], "the campaign ended before its first round did"
    if campaign["rounds"] != want:
        check.fail(C.CAMPAIGN_JSON, f"rounds {campaign['rounds']}, but {why}: rounds: auto gives {want}", "plan")


def check_plan(check, campaign, runner):
    """The campaign's order follows from its rounds, seed and budget (or is an explicit one),
    its labels from its order, and the runner's plan from both. Returns the plan or None."""
    order = campaign["order"]
    if not C.ORDER_RE.match(order) or "A" not in order or "B" not in order:
        check.fail(C.CAMPAIGN_JSON, f"order {short(order)} is not a string of A and B holding both (a, b: stage "
                                    "runs)", "plan")
        return None
    plan = C.labels(order)
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
    if rounds is not None and (len(order) != 2 * (rounds + stage_rounds)
                               or order != C.round_order(rounds, seed, stage_rounds)):
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
    counting = campaign["instructions"] is not None
    if campaign["metrics"] != (["wall", "instructions"] if counting else ["wall"]) or \
            (counting and campaign["instructions"]["order"] != C.instruction_order(campaign["instructions"]["runs"])):
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
    out, sound, stopped = [], True, False
    failed_wall = next((n for n, r in enumerate(runs) if r["status"] != "ok"), None)
    by_label = {r["label"]: r for r in runs}
    walls = C.labels(campaign["order"])
    instr = [row for row in C.schedule(campaign["order"], instr_order) if row[0].startswith("I")]
    slowest = {}  # (variant, item) -> the longest wall the item took in an ok wall run of its variant
    for r in runs:
        if r["status"] == "ok":
            for it in r["items"]:
                key = (r["variant"], it["id"])
                slowest[key] = max(slowest.get(key, 0.0), it["wall_s"])
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
                or "harness.engine.worker" not in cmd:
            check.fail(rel, f"command {short(cmd)} is not `setarch -R valgrind {' '.join(C.REGION_FLAGS)} ... -m "
                            "harness.engine.worker` (only that counts the measured region alone)", "identity")
        if not record["valgrind"].startswith("valgrind-"):
            check.fail(rel, f"valgrind {short(record['valgrind'])} is not a `valgrind --version` line", "identity")
        check_interpreter(check, rel, record, env)
        check_process(check, rel, record["process"], runner, campaign)
        if count is not None and count > C.MAX_INSTRUCTIONS_PER_S * record["process"]["wall_s"]:
            check.fail(rel, f"{count} instructions in a process that lived {record['process']['wall_s']:.6g} s: "
                            f"more than {C.MAX_INSTRUCTIONS_PER_S:.0e} a second", "physics")
        timed_s = [slowest.get((variant, i)) for i in record["items"]]
        if count is not None and record["items"] and None not in timed_s and \
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


def check_ledger(check, cleanup, runner, records):
    """One worker per started run in the cleanup receipt, its pid the record's; absence as verified."""
    procs = cleanup["processes"]
    if cleanup["count"] != len(procs):
        check.fail(C.CLEANUP, f"count {cleanup['count']} but {len(procs)} processes listed", "ledger")
    started = {r["label"] for r in records}
    workers, keys = {}, set()
    for n, p in enumerate(procs):
        preflight = p["run"] in C.PREFLIGHT_RUNS and p["role"] in ("preflight", "descendant")
        if p["run"] not in started and not preflight:
            check.fail(C.CLEANUP, f"processes[{n}] belongs to {short(p['run'])}, not a started run", "ledger")
        if (p["role"] == "preflight") != (p["run"] in C.PREFLIGHT_RUNS and p["role"] != "descendant"):
            check.fail(C.CLEANUP, f"processes[{n}]: role {p['role']} for run {short(p['run'])}", "ledger")
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
    want = C.listing_digest(files) if receipt["path"] is not None else None
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
    runs, sound, previous_end = [], True, runner["started_at"] - C.CLOCK_TOL_S
    for index, (label, variant) in enumerate(plan[:started]):
        record = load_doc(check, "run", C.run_path(label))
        if record is None:
            return None
        sound &= check_run(check, record, label, index, variant, campaign, runner, env, index == started - 1)
        if record["process"]["started_at"] < previous_end:
            check.fail(C.run_path(label), "its process started before the previous run's ended", "physics")
        previous_end = record["process"]["ended_at"] - clock_tol(record["process"]["wall_s"])
        check_log(check, record)
        runs.append(record)
    if campaign["budget_s"] is not None:
        check_auto_rounds(check, campaign, runs)
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
    check_ledger(check, docs["cleanup"], runner, runs + instr)
    # every ok run measured the same field names per item: the odd ones out against the shape most share
    ok_runs = [r for r in runs if r["status"] == "ok"]
    shapes = [tuple((it["id"], tuple(sorted(it["fields"])) if it["error"] is None else None) for it in r["items"])
              for r in ok_runs]
    if shapes:
        counts = {}
        for shape in shapes:
            counts[shape] = counts.get(shape, 0) + 1
        common = max(shapes, key=counts.get)
        first = ok_runs[shapes.index(common)]["label"]
        for r, shape in zip(ok_runs, shapes):
            if shape != common:
                check.fail(C.run_path(r["label"]), f"its field names differ from {first}'s and those of most runs "
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
    origins = {}
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


sig10 = C.sig10


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
            if ref is None or other is None:
                who = reference["label"] if ref is None else run["label"]
                mismatches.append({"run": run["label"], "item": item_id, "field": None,
                                   "reason": f"item missing from {who}"})
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
    """With `parity: {max_ulp: N}`: the most ULP between differing float fields, and whether
    every mismatch is such a field within N (an error, a missing field, another dtype or shape,
    a non-float field, or a NaN against a number never is). Each listed mismatch gets its max_ulp."""
    worst, within, fine = 0, 0, True
    for m in mismatches:
        distance = None
        if m["field"] is not None and m["reason"] == "bytes differ":
            distance = ulp_distance(check, m["reference_digest"], m["digest"])
        m["max_ulp"] = distance
        if distance is None or distance > max_ulp:
            fine = False
        else:
            within += 1
        if distance is not None:
            worst = max(worst, distance)
    return {"max_ulp": max_ulp, "max_ulp_seen": worst, "fields_within": within}, fine


def derive(check, campaign, runs, runner, cleanup, golden, instr, workload):
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

    base_mean = mean([r["wall_s"] for r in base if C.timed(r["label"])])
    cand_mean = mean([r["wall_s"] for r in cand if C.timed(r["label"])])
    wall = {"timer": "perf_counter", "base_mean_s": base_mean, "candidate_mean_s": cand_mean,
            "saving_s": None, "saving_pct": None, "speedup": None}
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall.update(saving_s=base_mean - cand_mean, saving_pct=100.0 * (base_mean - cand_mean) / base_mean,
                    speedup=base_mean / cand_mean)

    staged = [r for r in ok if C.instrumented(r["label"], campaign["order"])]
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
        parity = {"identical": False, "agree": False, "tolerance": None, "reference": None, "items": 0,
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
        "wall": wall,
        "stages": stages,
        "parity": parity,
    }


# --- Student's t, standard library only ---------------------------------------------------------
def _betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-16:
            break
    return h


def _betainc(a, b, x):
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with df degrees of freedom."""
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


_T_QUANTILES = {}


def t_quantile(p, df):
    """The p-quantile (p > 0.5) of Student's t: bisection on t_cdf to the last bit, so that every
    machine gets the same float."""
    key = (p, df)
    if key not in _T_QUANTILES:
        lo, hi = 0.0, 1.0
        while t_cdf(hi, df) < p:
            hi *= 2.0
        for _ in range(200):
            mid = (lo + hi) / 2.0
            if mid in (lo, hi):
                break
            lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
        _T_QUANTILES[key] = hi
    return _T_QUANTILES[key]


# --- stats, re-derived without numpy (harness/comparison/analysis.py is the harness's own) ------
def t_ratio(logs):
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
    q = t_quantile(0.5 + C.LEVEL / 2.0, len(kept) - 1)
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


def derive_stats(runs, threshold, floor):
    """comparison.json `stats` in full, from the run records (written apart from the harness's
    analysis; only the policy constants and the verdict rule come from the contract)."""
    usable = [r for r in runs if r["status"] == "ok" and r["wall_s"] is not None and r["wall_s"] > 0]
    warnings = []
    excluded = [r["label"] for r in runs if r not in usable]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")
    ok = [r for r in usable if C.timed(r["label"])]
    band = sig10(max(float(threshold), floor or 0.0))
    labels = {r["label"]: r for r in ok}
    pairs = [(r, labels["B" + r["label"][1:]]) for r in ok if r["variant"] == "base" and "B" + r["label"][1:] in labels]
    paired_labels = {r["label"] for pair in pairs for r in pair}
    unpaired = [r["label"] for r in ok if r["label"] not in paired_labels]
    overloaded = overloaded_runs(ok)
    out = {"method": C.METHOD, "threshold": sig10(float(threshold)), "floor": sig10(floor), "band": band,
           "rounds": {"n": len(pairs), "min": C.MIN_ROUNDS, "pairs": [[a["label"], b["label"]] for a, b in pairs],
                      "unpaired": unpaired, "log_ratios": [], "sd_log": None, "t_quantile": None,
                      "typical_deviation": None},
           "paired": {"metric": "item wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None, "ci95": None,
                      "run_ratio": None, "cpu": None},
           "claim_band": band, "per_item": None, "drift": None, "load": {"overloaded": overloaded},
           "verdict": "inconclusive", "verdict_reason": "", "warnings": warnings}
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
    logs = logs_of(items, "wall_s")
    d = [math.fsum(row) / len(row) for row in logs]
    ratio, ci, sd, q = t_ratio(d)
    run_ratio = sig10(mean([b["wall_s"] for _, b in pairs]) / mean([a["wall_s"] for a, _ in pairs]))
    paired = out["paired"]
    paired.update(items=len(items), items_excluded=dropped, geomean_ratio=ratio, ci95=ci, run_ratio=run_ratio)
    center = math.log(ratio)
    deviation = sig10(1.0 - math.exp(-statistics.median([abs(v - center) for v in d])))
    out["rounds"].update(log_ratios=[sig10(v) for v in d], sd_log=sd, t_quantile=q, typical_deviation=deviation)
    if items:
        if dropped:
            warnings.append(f"{dropped} item(s) left out of the paired comparison "
                            "(error or no positive wall_s in some ok run)")
        citems, _ = usable_items("cpu_s")
        if citems:
            cratio, cci, _, _ = t_ratio([math.fsum(row) / len(row) for row in logs_of(citems, "cpu_s")])
            paired["cpu"] = {"metric": "item cpu_s", "items": len(citems), "geomean_ratio": cratio, "ci95": cci}
        what = f"the geometric-mean item wall ratio over {len(items)} items and {len(pairs)} rounds"
    else:
        paired["metric"] = "run wall_s"
        what = f"the run wall ratio over {len(pairs)} rounds (items carry no usable timings)"
        warnings.append("items carry no usable timings: the ratio and its CI come from run walls")

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
    slots = {r["slots"] for r in ok}
    busy = [r["machine"]["process_cpu_s"] / r["wall_s"] for r in ok
            if r["machine"]["process_cpu_s"] is not None and r["label"] not in overloaded]
    if len(slots) == 1 and min(slots) >= 2 and busy and statistics.median(busy) < C.GIL_CPU_PER_WALL:
        warnings.append(f"slots {min(slots)}, but the timed loops used {statistics.median(busy):.2f} CPU s per wall s "
                        "(median over runs): the items likely hold the GIL (pure-Python code), so the slots contend "
                        "instead of running in parallel and the ratio measures the contention; use `slots: 1`")
    out["drift"] = drift
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
        warnings.extend(cautions)
    out["claim_band"] = claim
    enough = len(pairs) >= C.MIN_ROUNDS
    if items:
        rows = []
        for j, item in enumerate(items):
            r_j, ci_j, _, _ = t_ratio([row[j] for row in logs])
            rows.append({"id": item, "ratio": r_j, "ci95": ci_j})
        rows.sort(key=lambda row: (-row["ratio"], row["id"]))
        out["per_item"] = {
            "items": len(rows), "band": claim,
            "regressed": sum(1 for row in rows if enough and row["ci95"] and row["ci95"][0] > 1 + claim),
            "improved": sum(1 for row in rows if enough and row["ci95"] and row["ci95"][1] < 1 - claim),
            "worst": rows[0], "table": rows[:C.PER_ITEM_SHOWN], "more": max(0, len(rows) - C.PER_ITEM_SHOWN)}
    if not enough:
        out["verdict_reason"] = (f"only {len(pairs)} round(s) of one base and one candidate run: at least "
                                 f"{C.MIN_ROUNDS} are needed to estimate the run-to-run variance")
        warnings.append(f"too few rounds to conclude ({len(pairs)} of at least {C.MIN_ROUNDS}; `rounds: N` or "
                        "`--rounds N`)")
        return out
    out["verdict"], out["verdict_reason"] = C.decide(ci[0], ci[1], band, run_ratio, what, claim)
    return out


def instructions_section(instr, wall_verdict):
    """comparison.json `instructions`: per variant its ok counts, repeated exactly or their
    spread; the ratio of mean counts; a change beyond the spread is detected; a verdict of the
    counts' own against a band of max(contract.INSTRUCTION_BAND, twice the spread)."""
    ok = [r for r in instr if r["status"] == "ok"]
    out = {"tool": "callgrind", "items": len(ok[0]["items"]) if ok else 0}
    for variant in ("base", "candidate"):
        counts = [r["instructions"] for r in ok if r["variant"] == variant]
        out[variant] = {"runs": [r["label"] for r in ok if r["variant"] == variant], "counts": counts,
                        "repeated": len(counts) >= 2 and len(set(counts)) == 1,
                        "spread_pct": sig10(100.0 * (max(counts) - min(counts)) / min(counts)) if counts else None}
    base, cand = out["base"]["counts"], out["candidate"]["counts"]
    ratio = sig10(math.fsum(cand) / len(cand) / (math.fsum(base) / len(base))) if base and cand else None
    spread = max((out[v]["spread_pct"] or 0.0) for v in ("base", "candidate"))
    change = sig10(100.0 * (ratio - 1.0)) if ratio is not None else None
    band = sig10(max(C.INSTRUCTION_BAND, 2 * spread / 100.0))
    out.update(ratio=ratio, change_pct=change, repeated=out["base"]["repeated"] and out["candidate"]["repeated"],
               detected=change is not None and change != 0 and abs(change) > spread,
               direction=None if ratio is None else "fewer" if ratio < 1 else "more" if ratio > 1 else "same",
               band=band)
    if ratio is None or len(base) < 2 or len(cand) < 2:
        out["verdict"] = "inconclusive"
        out["verdict_reason"] = "fewer than two ok instruction runs of each variant: no repeatability to judge by"
    else:
        edges = f"[{1 - band:.4f}, {1 + band:.4f}]"
        out["verdict"] = "equal" if abs(ratio - 1) <= band else "improved" if ratio < 1 else "regressed"
        out["verdict_reason"] = (f"instruction ratio {ratio:.6f} lies {'inside' if out['verdict'] == 'equal' else 'outside'} "
                                 f"the band {edges} (+-{100 * band:.2f}%: at least {100 * C.INSTRUCTION_BAND:.1f}%, "
                                 "and twice the counts' own spread)")
    # opposite ways: a move within the counts' own spread says nothing
    out["disagrees"] = out["detected"] and ((wall_verdict == "improved" and ratio > 1)
                                            or (wall_verdict == "regressed" and ratio < 1))
    return out


def diff(want, got, path=""):
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


def report_diff(check, derived, claimed):
    for path, want, got in diff(derived, claimed):
        check.fail(C.COMPARISON, f"{path} claims {short(got)}, the run records give {short(want)}", "derived")


def check_comparison(check, docs):
    campaign, claimed = docs["campaign"], docs["claimed"]
    try:
        derived = derive(check, campaign, docs["runs"], docs["runner"], docs["cleanup"], docs["golden"],
                         docs["instructions"], docs["workload"]["digest"])
        derived["stats"] = derive_stats(docs["runs"], campaign["threshold"],
                                        docs["noise_floor"]["floor"] if docs["noise_floor"] else None)
        derived["instructions"] = instructions_section(docs["instructions"], derived["stats"]["verdict"]) \
            if campaign["instructions"] is not None else None
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


def structure(root, max_array_bytes=None):
    """Layout, arrays and record rules: what both checkers share. Returns (check, docs); docs is
    None when the records cannot be re-derived from."""
    check = Check(root, max_array_bytes)
    rows = check_layout(check)
    if rows is None:
        return check, None
    stored = check_arrays(check)
    return check, check_records(check, stored)


def rehash(root, max_array_bytes=None):
    check, docs = structure(root, max_array_bytes)
    if docs is not None:
        check_comparison(check, docs)
        check.notes.append("campaign.yaml not compared with campaign.json: needs a YAML parser; harness verify does it")
    return check


def attestation_note(root):
    """A signature beside the bag (BUNDLE.intoto.json) is not checked here (Ed25519 needs a
    library): say whether one is present."""
    sibling = os.path.abspath(root).rstrip(os.sep) + C.ATTESTATION_SUFFIX
    if os.path.lexists(sibling):
        return (f"an attestation is present beside the bundle ({os.path.basename(sibling)}), not checked here: "
                "`harness verify BUNDLE --trust FILE` checks who signed it")
    return None


def main(argv):
    args = argv[1:]
    cap = None
    if len(args) == 3 and args[1] == "--max-array-bytes" and args[2].isdigit() and len(args[2]) <= 19:
        cap = int(args[2])
        args = args[:1]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print("usage: python -S rehash.py BUNDLE [--max-array-bytes N]", file=sys.stderr)
        return 2
    root = args[0]
    try:
        check = rehash(root, cap)
    except Unusable as exc:
        print(f"rehash: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:
        print(f"rehash: error: {root}: checking the bundle needs more memory than this process may use; run it "
              "where it may use more (ulimit -v)", file=sys.stderr)
        return 2
    for problem in check.problems:
        print(f"FAIL {problem}")
    if check.problems:
        print(f"{root}: {len(check.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {root}: {check.files} payload files and {check.arrays} arrays re-hashed with the standard library; "
          f"every file and field is of the contract ({C.FORMAT}); record rules hold; comparison re-derived (runs, "
          f"wall, stages, parity, status, the rounds' trimmed-t interval, per-item ratios, drift, load, the verdict "
          f"rule, instruction counts); status {check.status}; digest {check.digest}")
    for note in check.notes + [n for n in [attestation_note(root)] if n]:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv)
        sys.stdout.flush()
    except BrokenPipeError:  # `rehash.py B | head -1`: the reader left; end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    sys.exit(code)
