#!/usr/bin/env python3
"""Re-check an evidence bundle with the Python standard library alone.

    python -S harness/rehash.py BUNDLE [--max-array-bytes N]

A reviewer who does not trust the harness (or numpy) can run this file on its own: it
imports nothing outside the standard library and nothing from the bundle, opens only
files the manifests list (never through a symlink, never a FIFO or device), parses JSON
strictly and arrays as streams under a size cap, never unpickles and never executes
anything it reads. `harness verify` runs the same layout, array and record checks (it
imports this file), then re-derives comparison.json with the harness's own code; this
script keeps its own, independent re-derivation of the numbers.

What is checked (each problem is one line naming the file and, for record rules, the rule
in brackets):

* layout: every payload file listed once in manifest-sha256.txt, rows sorted (so a digest
  names one byte sequence), the three tag files in tagmanifest-sha256.txt, nothing missing
  or extra, no symlinks or special files, no unsafe paths, BagIt declaration, a required
  Payload-Oxum; every file re-hashed (SHA-256);
* arrays: every stored array re-hashed from its gzipped .npy bytes as a stream (header read
  with ast.literal_eval; Fortran order, object and structured dtypes refused; a header that
  declares more than the cap is refused before anything is decompressed);
* records: the rules in `check_records` (parsing, files, plan, identity, status, ledger,
  physics, arrays, bag-info);
* comparison.json re-derived from the run records: runs, walls, stages, parity, status and
  reason, and of `stats` everything but the bootstrap interval: drift, Mann-Whitney U and
  p, the geometric-mean ratios, and the verdict rule applied to the claimed interval.

Not checked here: the bootstrap interval itself and the divergence values (they need
numpy; `harness verify` re-derives them), and whether campaign.yaml says what campaign.json
says (that needs a YAML parser; `harness verify` re-parses it).

Exit 0 intact, 1 problems (one line each), 2 unusable input.
"""
import sys

# Never import a module that sits beside this script (python puts the script's folder
# first on sys.path): only the standard library is used.
_HERE = sys.path[0] if sys.path and __name__ == "__main__" else ""
if _HERE:
    import os.path as _osp

    _here_abs = _osp.abspath(_HERE)
    sys.path[:] = [p for p in sys.path if _osp.abspath(p or ".") != _here_abs]

import ast  # noqa: E402
import datetime  # noqa: E402
import gzip  # noqa: E402
import hashlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

# --- the bundle format (harness/records.py owns it; tests/test_records.py proves these agree)
SCHEMAS = {
    "job": "abba-harness/job/v2",
    "run": "abba-harness/run/v3",
    "campaign": "abba-harness/campaign/v5",
    "comparison": "abba-harness/comparison/v4",
    "environment": "abba-harness/environment/v2",
    "revisions": "abba-harness/revisions/v2",
    "inputs": "abba-harness/inputs/v2",
    "cleanup": "abba-harness/cleanup/v2",
    "runner": "abba-harness/runner/v2",
    "builds": "abba-harness/builds/v1",
    "golden": "abba-harness/golden/v1",
    "reproduction": "abba-harness/reproduction/v1",
    "noise_floor": "abba-harness/noise-floor/v1",
    "instructions": "abba-harness/instructions/v2",
    "workload": "abba-harness/workload/v1",
}
# Older schemas whose bundles still verify: campaign/v2 has no rounds or seed, comparison/v2
# the item bootstrap (the committed evidence, until it is re-run), and their run/v2 records no
# workload digest. Bundles of campaign/v3 and v4 are refused with a line saying to re-run.
LEGACY_SCHEMAS = {"campaign": "abba-harness/campaign/v2", "comparison": "abba-harness/comparison/v2",
                  "run": "abba-harness/run/v2"}
BAGIT, BAG_INFO, MANIFEST, TAGMANIFEST = "bagit.txt", "bag-info.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt"
TAG_FILES = (BAGIT, BAG_INFO, MANIFEST)
CAMPAIGN_YAML = "data/campaign.yaml"
CAMPAIGN_JSON = "data/campaign.json"
ENVIRONMENT = "data/environment.json"
COMPARISON = "data/comparison.json"
FIGURE = "data/figure.png"
GOLDEN = "data/golden.json"
REVISIONS = "data/receipts/revisions.json"
INPUTS = "data/receipts/inputs.json"
CLEANUP = "data/receipts/cleanup.json"
RUNNER = "data/receipts/runner.json"
BUILDS = "data/receipts/builds.json"  # only when the campaign has build commands
REPRODUCTION = "data/receipts/reproduction.json"  # only in a bundle made by `harness reproduce`
NOISE_FLOOR = "data/noise_floor.json"  # only when the campaign pins a noise floor (harness calibrate)
WORKLOAD = "data/receipts/workload.json"  # the workload folder's files (harness/workload.py)
WORKLOAD_DIR = "data/workload/"  # those files, byte for byte
MAX_WORKLOAD_FILES = 1000  # harness/workload.py MAX_FILES
MAX_WORKLOAD_BYTES = 16 << 20  # harness/workload.py MAX_BYTES
ARRAY_SUFFIX = ".npy.gz"
REQUIRED = (CAMPAIGN_YAML, CAMPAIGN_JSON, ENVIRONMENT, COMPARISON, FIGURE, REVISIONS, INPUTS, CLEANUP,
            RUNNER, WORKLOAD)
LABEL_RE = re.compile(r"^[AB]s?[1-9][0-9]{0,2}\Z")  # As1, Bs1: stage runs (order letters a, b)
ORDER_RE = re.compile(r"^[ABab]+\Z")
INSTRUCTION_LABEL_RE = re.compile(r"^I[AB][1-9][0-9]{0,2}\Z")
PREFLIGHT_RUNS = ("check:base", "check:candidate")  # the pre-flight workers' rows in the ledger
VARIANTS = {"A": "base", "B": "candidate"}
RUN_STATUSES = ("ok", "failed", "timeout")

BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ARRAY_PREFIX = b"abba-array-v1\n"
NPY_MAGIC = b"\x93NUMPY"
HEX = frozenset("0123456789abcdef")

# --- limits: a hostile bundle cannot make a checker hang or eat memory --------------------
MAX_NPY_HEADER = 10000  # numpy's own default limit for header length
DEFAULT_MAX_ARRAY_BYTES = 4 << 30  # decompressed bytes the stored arrays may declare, all together
MAX_JSON_BYTES = 256 << 20  # one JSON file
MAX_JSON_DEPTH = 64
MAX_TEXT_BYTES = 16 << 20  # a manifest or bag-info.txt
MAX_FILE_BYTES = 1 << 30  # any one payload file, checked from its size before it is hashed
MAX_DEPTH = 8  # folders below the root (the layout uses 3: data/arrays, data/runs, ...)
CHUNK = 1 << 20
# --- tolerances ---------------------------------------------------------------------------
REL_TOL = 1e-9  # floats re-derived here vs claimed (stats keep 10 significant digits)
CLOCK_TOL_S = 0.5  # between the runner's and the worker's clocks (ms timestamps, two clocks)
SLOT_TOL, SLOT_ABS_S = 0.01, 0.001  # item walls may sum to slots x run wall x (1 + 1%) + 1 ms
CPU_TOL_S = 1e-6  # self vs inclusive stage CPU: float sums
# An item's thread CPU and wall are read on its own thread around the same call (ns clocks):
# the CPU window overhangs the wall's by one clock read.
ITEM_CLOCK_TOL_S = 5e-5
PROCESS_TOL_S = 0.05  # a process's wall vs its end - start: the runner reads both clocks back to back
CREATE_TOL_S = 1.5  # psutil's create time vs the runner's start: boot time is whole seconds in /proc/stat
CALL_FLOOR_S = 1e-8  # no stage call completes in less CPU-wall than this: bounds a call count
TIMEOUT_TOL, TIMEOUT_GRACE_S = 0.1, 10.0  # a process or campaign may outlive its timeout by the kill
FUTURE_TOL_S = 300.0  # a bundle's clocks may run this far ahead of the checker's
TICK_S = 0.05  # other threads' CPU and the PSI stall total settle in scheduler ticks (4-10 ms)
MAX_LISTED = 50  # mismatches listed in comparison.json
# Instruction runs (harness/instructions.py owns these; test_checker_safety compares):
# the flags that count the measured region only, and the environment that makes it repeat.
REGION_FLAGS = ("--tool=callgrind", "--collect-atstart=no", "--toggle-collect=sys_call_tracing", "--cache-sim=no")
INSTRUCTION_ENV = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "OPENBLAS_NUM_THREADS": "1"}
MAX_INSTRUCTION_RUNS = 10  # per variant (harness/spec.py)
MAX_ROUNDS, MAX_TIMEOUT_S = 100, 7 * 24 * 3600.0  # harness/spec.py
# No core retires more than this many instructions a second (a few GHz x a few per cycle,
# and valgrind runs 30-100x slower): a count above it x its process's life is not measured.
MAX_INSTRUCTIONS_PER_S = 1e10
STATS_NOTE = "stats.paired ci95 (the bootstrap) not re-derived: needs numpy; harness verify does it"
YAML_NOTE = "campaign.yaml not compared with campaign.json: needs a YAML parser; harness verify does it"
DTYPE_RE = re.compile(r"^([<>|=]?)([biufc])(\d+)$")
SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 16), "c": (8, 16, 32)}


class Unusable(Exception):
    pass


def show(rel):
    """A path as printed: plain when printable, escaped otherwise."""
    return rel if rel.isprintable() else ascii(rel)


class Check:
    def __init__(self, root, max_array_bytes=None):
        self.root = root
        self.max_array_bytes = DEFAULT_MAX_ARRAY_BYTES if max_array_bytes is None else max_array_bytes
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
        """The file's bytes, at most limit: refused from its size before anything is read,
        then read in chunks (never one buffer of the limit's size)."""
        with self.open_regular(rel) as fh:
            if os.fstat(fh.fileno()).st_size > limit:
                raise OSError(f"larger than {limit} bytes")
            parts, got = [], 0
            while got <= limit:
                chunk = fh.read(min(CHUNK, limit + 1 - got))
                if not chunk:
                    break
                parts.append(chunk)
                got += len(chunk)
        if got > limit:
            raise OSError(f"larger than {limit} bytes")
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
    """Raise OSError for a file too large to hash, or sparse: a 1 TiB file of holes takes a
    few hundred KB on disk and a quarter of an hour to hash. (Bundles hold gzipped arrays,
    JSON, logs and a PNG: none has holes.)"""
    size = os.fstat(fd).st_size
    if size > MAX_FILE_BYTES:
        raise OSError(f"{size} bytes, over the {MAX_FILE_BYTES}-byte limit for one file; not hashed")
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


# --- strict JSON -----------------------------------------------------------------------------
class JSONRefused(ValueError):
    pass


def _no_duplicates(pairs):
    out = {}
    for key, value in pairs:
        if key in out:
            raise JSONRefused(f"duplicate key {key!r}")
        out[key] = value
    return out


def _no_constant(name):
    raise JSONRefused(f"{name} is not JSON")


def _finite_float(text):
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
    """Strict JSON: UTF-8, no duplicate keys, no NaN, Infinity or number that overflows to
    it (1e400), at most MAX_JSON_DEPTH deep."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates,
                           parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise JSONRefused(f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError:
        raise JSONRefused("not UTF-8") from None
    except JSONRefused:
        raise
    except ValueError as exc:
        raise JSONRefused(f"not valid JSON ({str(exc)[:60]})") from None
    if not _depth(value, MAX_JSON_DEPTH):
        raise JSONRefused(f"nested deeper than {MAX_JSON_DEPTH} levels")
    return value


def load_json(check, rel, required=True):
    if rel not in check.openable:
        if required:
            check.fail(rel, "missing", "files")
        return None
    try:
        return parse_json(check.read(rel, MAX_JSON_BYTES))
    except (OSError, JSONRefused) as exc:
        check.fail(rel, str(exc), "parsing")
        return None


# --- layout ------------------------------------------------------------------------------
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
    """Every regular file under the root as a '/'-separated relative path. Iterative, and
    never deeper than a bundle's layout goes (MAX_DEPTH folders): a hostile tree of
    thousands of nested folders is one finding, not a RecursionError. Symlinks are
    reported and never followed; other special files are reported."""
    pending = [("", 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(os.path.join(check.root, *folder.split("/")) if folder else check.root) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            check.fail(folder or ".", f"cannot be listed ({exc.__class__.__name__})")
            continue
        for entry in entries:
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
                if depth + 1 >= MAX_DEPTH:
                    check.fail(rel, f"folders nested deeper than {MAX_DEPTH} levels; a bundle's layout has 3; "
                                    "not descended")
                else:
                    pending.append((rel, depth + 1))
            else:
                check.fail(rel, "not a regular file")


def text_of(check, rel):
    if rel not in check.openable:
        return ""
    try:
        return check.read(rel, MAX_TEXT_BYTES).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        check.fail(rel, f"unreadable ({str(exc)[:80] or exc.__class__.__name__})")
        return ""


def parse_manifest(check, name):
    text = text_of(check, name)
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
    fields = {}
    for n, line in enumerate(text_of(check, BAG_INFO).splitlines(), 1):
        key, sep, value = line.partition(":")
        if not sep or not key or key != key.strip():
            check.fail(BAG_INFO, f"line {n}: not 'Key: value'")
            continue
        if key in fields:
            check.fail(BAG_INFO, f"line {n}: {key} given twice")
        fields[key] = value.strip()
    return fields


def check_layout(check):
    root = check.root
    if not os.path.isdir(root) or os.path.islink(root):
        raise Unusable(f"{root}: not a directory")
    walk(check)
    present = check.present
    if TAGMANIFEST not in present:
        if any(p.startswith("data/") for p in present):
            check.fail(TAGMANIFEST, "missing: incomplete, the bundle was never sealed")
            return None
        raise Unusable(f"{root}: not an evidence bundle (no tagmanifest-sha256.txt, no data/)")
    check.openable.add(TAGMANIFEST)
    check.digest = check.sha256(TAGMANIFEST)

    tag_rows = parse_manifest(check, TAGMANIFEST)
    for rel in TAG_FILES:
        if rel not in tag_rows:
            check.fail(TAGMANIFEST, f"{rel} is not listed")
    for rel in tag_rows:
        if rel not in TAG_FILES:
            check.fail(TAGMANIFEST, f"lists unexpected file {show(rel)}")
    check.openable |= set(TAG_FILES) & set(tag_rows) & present
    for rel, digest in tag_rows.items():
        if rel in TAG_FILES:
            check_hash(check, rel, digest, TAGMANIFEST)
    if BAGIT in check.openable:
        try:
            if check.read(BAGIT, len(BAGIT_TXT)) != BAGIT_TXT:
                check.fail(BAGIT, "not the BagIt 1.0 declaration")
        except OSError as exc:
            check.fail(BAGIT, f"unreadable ({str(exc)[:80]})")

    rows = parse_manifest(check, MANIFEST)
    for rel, digest in rows.items():
        if not rel.startswith("data/"):
            check.fail(MANIFEST, f"{show(rel)} is outside data/")
            continue
        if rel in present:
            check.openable.add(rel)
        check_hash(check, rel, digest, MANIFEST)
    expected = set(rows) | set(TAG_FILES) | {TAGMANIFEST}
    for rel in sorted(present - expected):
        check.fail(rel, "extra file, not in any manifest")
    check.files = len(rows)

    check.bag_info = parse_bag_info(check)
    want = check.bag_info.get("Payload-Oxum")
    listed = [rel for rel in rows if rel in present]
    got = f"{sum(os.lstat(check.path(rel)).st_size for rel in listed)}.{len(listed)}"
    if want is None:
        check.fail(BAG_INFO, "no Payload-Oxum (required: it fixes the payload's size and file count)")
    elif want != got:
        check.fail(BAG_INFO, f"Payload-Oxum {want} but the payload is {got}")
    return rows


# --- arrays ------------------------------------------------------------------------------
def npy_header(fh):
    """(dtype string as numpy's dtype.str gives it, shape, itemsize, swap, kind) from an
    open .npy stream at 0; raises ValueError for anything not a plain array."""
    magic = fh.read(8)
    if len(magic) != 8 or magic[:6] != NPY_MAGIC:
        raise ValueError("not a .npy file (bad magic)")
    major, minor = magic[6], magic[7]
    if major not in (1, 2, 3) or minor != 0:
        raise ValueError(f"unsupported .npy version {major}.{minor}")
    width = 2 if major == 1 else 4
    raw_len = fh.read(width)
    if len(raw_len) != width:
        raise ValueError("truncated header length")
    size = int.from_bytes(raw_len, "little")
    if size > MAX_NPY_HEADER:
        raise ValueError(f"header of {size} bytes is larger than {MAX_NPY_HEADER}")
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
    if not isinstance(shape, tuple) or len(shape) > 32 or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"bad shape {str(shape)[:60]}")
    m = DTYPE_RE.match(descr)
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


def array_digest(check, rel, header_only=False):
    """(digest, dtype, shape): sha256(prefix + {"dtype", "shape"} + newline + C-order
    little-endian bytes), streamed; a header declaring more than the cap is refused first.
    header_only: the data bytes the header declares, nothing else read."""
    with check.open_regular(rel) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
        refuse_unbounded(raw.fileno())
        descr, shape, itemsize, swap, kind = npy_header(fh)
        want = math.prod(shape) * itemsize
        if header_only:
            return want
        if want > check.max_array_bytes:
            raise ValueError(f"header declares {want} bytes, over the cap of {check.max_array_bytes} "
                             "(--max-array-bytes)")
        h = hashlib.sha256(ARRAY_PREFIX)
        h.update(json.dumps({"dtype": descr, "shape": shape}, sort_keys=True, separators=(",", ":")).encode())
        h.update(b"\n")
        step = max(itemsize, (CHUNK // itemsize) * itemsize)
        got = 0
        while got < want:
            chunk = fh.read(min(step, want - got))
            if not chunk:
                break
            if len(chunk) % itemsize and got + len(chunk) < want:
                chunk += fh.read(itemsize - len(chunk) % itemsize)
            got += len(chunk)
            h.update(_byteswap(chunk, itemsize, kind) if swap else chunk)
        if got != want:
            raise ValueError(f"data is {got} bytes, shape {shape} of {descr} needs {want}")
        if fh.read(1):
            raise ValueError(f"trailing bytes after the {want} data bytes")
    return h.hexdigest(), descr, shape


def check_arrays(check):
    """Digests of the stored arrays that re-hash to their names; headers kept for the records.
    First every header alone (a few hundred bytes inflated each): when the arrays declare
    more than the budget in all, none is inflated."""
    stored, named = set(), []
    for rel in sorted(p for p in check.openable if p.startswith("data/arrays/")):
        name = rel.rsplit("/", 1)[1]
        digest = name[: -len(ARRAY_SUFFIX)] if name.endswith(ARRAY_SUFFIX) else ""
        if len(digest) != 64 or not set(digest) <= HEX or rel.count("/") != 2:
            check.fail(rel, f"not a stored array name (data/arrays/<sha256>{ARRAY_SUFFIX})", "files")
            continue
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


# --- record rules ------------------------------------------------------------------------
def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


KINDS = {
    "str": lambda v: isinstance(v, str), "str?": lambda v: v is None or isinstance(v, str),
    "int": is_int, "int?": lambda v: v is None or is_int(v),
    "num": is_number, "num?": lambda v: v is None or is_number(v),
    "bool": lambda v: isinstance(v, bool), "list": lambda v: isinstance(v, list),
    "dict": lambda v: isinstance(v, dict), "dict?": lambda v: v is None or isinstance(v, dict),
    "time": is_number,
    "any": lambda v: True,
}
# --- the bundle's schema: one declaration ------------------------------------------------
# Every field of every record and receipt: its path, its kind and the rule that binds it.
# The key sets `shaped` enforces, the field-walking mutation suite (harness/fieldwalk.py)
# and the README's table of bound and free fields are all read from here, so a new field
# is one line here. Paths: "a.b" keys, "[]" any list element, "*" any key, "**" anything
# below. A rule is "<rule>: what binds it"; the rule names the checkers that can refuse a
# change: "campaign" and "anchors" only `harness verify` (campaign.yaml; --repo), "free"
# none (the reason is in UNBOUND), every other rule both checkers. The first rule named is
# the one that refuses any change; those after it bind one side (a timeout's upper bound).
FIELDS = {
    "run": {  # data/runs/<label>.json
        "schema": ("str", "parsing: the run schema id"),
        "label": ("str", "plan: the label of its file name and of its position in the order"),
        "variant": ("str", "identity: the variant its label's letter names"),
        "index": ("int", "plan: its position in the order"),
        "sha": ("str", "identity: the campaign's SHA for its variant"),
        "status": ("str", "status: ok, failed or timeout; only the last run may fail; status in comparison.json"),
        "reason": ("str?", "status: null exactly when ok"),
        "exit_code": ("int?", "status: 0 when ok"),
        "timer": ("str", "parsing: always perf_counter"),
        "wall_s": ("num?", "physics: above zero, within the process's life and the worker's own span; items fit in it"),
        "slots": ("int", "identity: the campaign's slots"),
        "items": ("list", "plan: every ok run holds the same item ids in the same order (the golden file's)"),
        "items[].id": ("str", "plan: the same ids in every ok run and in the golden file"),
        "items[].wall_s": ("num", "physics: its CPU within it, it within the run's wall, all items within slots x run wall"),
        "items[].cpu_s": ("num", "physics: within the item's wall (one thread ran the item)"),
        "items[].fields": ("dict", "plan: the same field names for an item in every ok run"),
        "items[].fields.*.digest": ("str", "arrays: a stored array; golden digests; parity re-derived"),
        "items[].fields.*.dtype": ("str", "arrays: the stored array's header"),
        "items[].fields.*.shape": ("list", "arrays: the stored array's header"),
        "items[].fields.*.shape[]": ("int", "arrays: the stored array's header"),
        "items[].error": ("dict?", "status: never beside fields; parity compares errors"),
        "items[].error.type": ("str", "derived: parity compares error returns across runs"),
        "items[].error.message": ("str", "derived: parity compares error returns across runs"),
        "stages": ("dict", "identity: the campaign's stages in every ok run"),
        "stages.*": ("dict", "identity: a campaign stage"),
        "stages.*.calls": ("int", "derived: parity's call counts; not negative"),
        "stages.*.self_cpu_s": ("num", "physics: within inclusive; all self CPU within cores x run wall"),
        "stages.*.incl_cpu_s": ("num", "physics: self within it, it within cores x run wall"),
        "stages_installed": ("dict", "identity: the campaign's stages"),
        "stages_installed.*": ("bool", "identity: every non-optional stage installed in every ok run"),
        "imported_from": ("dict", "identity: the workload and the stages"),
        "imported_from.workload": ("str", "free"),
        "imported_from.stages": ("dict", "identity: the campaign's stages"),
        "imported_from.stages.*": ("str", "identity: a tree: path inside the revision's tree, one per stage and variant"),
        "metrics": ("dict", "free"),
        "metrics.*": ("any", "free"),
        "machine": ("dict", "physics: cores bounds stage CPU"),
        "machine.cores": ("int", "identity: environment.json's cores; bounds stage CPU"),
        "machine.process_cpu_s": ("num?", "physics: holds the items' thread CPU and fits in cores x run wall"),
        "machine.cpu_stall_s": ("num?", "physics: between 0 and the run's wall; derived: the load rule"),
        "machine.stage_wrapper_s": ("num?", "physics: 0 to 1 ms in a stage run, null in a timed run; derived: the "
                                            "thin-stage warning"),
        "machine.cpu_freq_mhz": ("num", "free"),
        "machine.warmup_s": ("num?", "free"),
        "machine.loadavg_before": ("list", "free"),
        "machine.loadavg_before[]": ("num", "free"),
        "machine.loadavg_after": ("list", "free"),
        "machine.loadavg_after[]": ("num", "free"),
        "harness_source_sha256": ("str?", "identity: environment.json's harness digest"),
        "workload_sha256": ("str?", "identity: workload.json's digest (the folder the worker imported from)"),
        "worker_started_at": ("str?", "physics: an ISO time inside the process's life"),
        "worker_ended_at": ("str?", "physics: an ISO time inside the process's life, the timed wall within the span"),
        "pid": ("int", "ledger: the ledger's worker for this run"),
        "process": ("dict", "physics: start, end and wall"),
        "process.started_at": ("time", "physics: inside the runner's span, after the previous run ended"),
        "process.ended_at": ("time", "physics: inside the runner's span, not before its start"),
        "process.wall_s": ("num", "physics: within end - start, within the run timeout, holds the timed wall"),
        "log": ("str", "files: data/logs/<label>.log"),
    },
    "campaign": {  # data/campaign.json
        "schema": ("str", "parsing: the campaign schema id"),
        "name": ("str", "bag-info: External-Identifier; campaign: campaign.yaml"),
        "description": ("str", "campaign: campaign.yaml"),
        "notes": ("str", "campaign: campaign.yaml"),
        "campaign_path": ("str?", "anchors: the repository's campaign file (verify --repo)"),
        "order": ("str", "plan: A and B, both; the shuffle of rounds by seed; the labels"),
        "rounds": ("int?", "plan: with seed, gives the order; with budget_s, the first round's process walls give it"),
        "budget_s": ("num", "plan: with min_rounds and the first round's process walls, gives the rounds; "
                            "campaign: campaign.yaml (only with rounds: auto)"),
        "min_rounds": ("int", "plan: at most the rounds (only with rounds: auto); campaign: campaign.yaml"),
        "stage_rounds": ("int?", "plan: with rounds and seed, gives the order; at least 1 exactly when there are stages"),
        "seed": ("int?", "plan: with rounds, gives the order"),
        "labels": ("list", "plan: follow from the order"),
        "labels[]": ("str", "plan: follow from the order"),
        "slots": ("int", "identity: every record's slots"),
        "timeouts": ("dict", "campaign: campaign.yaml"),
        "timeouts.run_s": ("num", "campaign: campaign.yaml; physics: every process lives within it"),
        "timeouts.campaign_s": ("num", "campaign: campaign.yaml; physics: the runner's span within it"),
        "workload": ("dict", "campaign: campaign.yaml"),
        "workload.entry": ("str", "campaign: campaign.yaml"),
        "workload.path": ("str", "anchors: resolved by the machine (verify --repo)"),
        "workload.params": ("dict", "campaign: campaign.yaml"),
        "workload.params.*": ("any", "campaign: campaign.yaml"),
        "workload.sys_path": ("list", "campaign: campaign.yaml"),
        "workload.sys_path[]": ("str", "campaign: campaign.yaml"),
        "workload.items": ("any", "campaign: campaign.yaml"),
        "build": ("list", "files: builds.json exactly when there are build commands; campaign: campaign.yaml"),
        "build[]": ("list", "campaign: campaign.yaml"),
        "build[][]": ("str", "campaign: campaign.yaml"),
        "overrides": ("dict", "campaign: campaign.yaml re-read with them"),
        "overrides.**": ("any", "campaign: campaign.yaml re-read with them"),
        "revisions": ("dict", "identity: base and candidate"),
        "revisions.*.rev": ("str", "campaign: campaign.yaml"),
        "revisions.*.sha": ("str", "identity: every record's, revisions.json's and bag-info's SHA"),
        "stages": ("dict", "identity: the stages of every ok record"),
        "stages.*": ("str", "campaign: campaign.yaml"),
        "optional_stages": ("list", "identity: the stages that may be uninstalled"),
        "optional_stages[]": ("str", "campaign: campaign.yaml"),
        "stage_calls": ("dict", "derived: parity's call counts"),
        "stage_calls.*": ("str", "campaign: campaign.yaml; derived: parity's call counts"),
        "env": ("dict", "campaign: campaign.yaml"),
        "env.*": ("str", "campaign: campaign.yaml"),
        "golden": ("str?", "anchors: the repository's golden file; files: golden.json exactly when named"),
        "golden_sha256": ("str?", "identity: golden.json's SHA-256"),
        "noise_floor": ("str?", "identity: set exactly when noise_floor_sha256 is; anchors: a repository file"),
        "noise_floor_sha256": ("str?", "identity: noise_floor.json's SHA-256"),
        "threshold": ("num", "campaign: campaign.yaml; derived: the verdict"),
    },
    "runner": {  # data/receipts/runner.json
        "schema": ("str", "parsing: the runner schema id"),
        "started_at": ("time", "physics: before every process started, within the campaign timeout of the end"),
        "ended_at": ("time", "physics: after every process ended, not after the checker's clock or bag-info's date"),
        "reason": ("str?", "free"),
        "runs_planned": ("int", "plan: the order's length"),
        "runs_started": ("int", "plan: the records present"),
    },
    "cleanup": {  # data/receipts/cleanup.json
        "schema": ("str", "parsing: the cleanup schema id"),
        "method": ("str", "free"),
        "processes": ("list", "ledger: one worker per started run"),
        "processes[].pid": ("int", "ledger: the worker's pid is the record's; distinct"),
        "processes[].create_time": ("time", "ledger: a worker's is its process's start; checked after it"),
        "processes[].cmdline": ("list", "free"),
        "processes[].cmdline[]": ("str", "free"),
        "processes[].run": ("str", "ledger: a started run or a pre-flight"),
        "processes[].role": ("str", "ledger: worker, descendant or preflight"),
        "processes[].absent": ("bool", "ledger: as verified; all_absent; comparison.json's status"),
        "processes[].verified": ("str", "ledger: gone, pid reused or alive, as absent says"),
        "processes[].checked_at": ("time", "ledger: after the process's start and its run's end, within the runner's span"),
        "count": ("int", "ledger: the number of processes"),
        "all_absent": ("bool", "ledger: all processes absent"),
    },
    "environment": {  # data/environment.json
        "schema": ("str", "parsing: the environment schema id"),
        "cores": ("int", "identity: every ok record's machine.cores"),
        "harness_source_sha256": ("str", "identity: every ok record's harness digest"),
        "physical_cores": ("int", "physics: at least 1 and at most cores"),
        "**": ("any", "free"),
    },
    "revisions": {  # data/receipts/revisions.json
        "schema": ("str", "parsing: the revisions schema id"),
        "*": ("dict", "identity: base and candidate"),
        "*.sha": ("str", "identity: campaign.json's SHA"),
        "*.rev": ("str", "identity: campaign.json's rev"),
        "*.tree_sha256": ("str", "anchors: the commit's tree, recomputed (verify --repo)"),
        "*.fence": ("dict", "campaign: campaign.yaml's fence"),
        "*.fence.**": ("any", "campaign: campaign.yaml's fence"),
        "*.note": ("str", "free"),
    },
    "inputs": {  # data/receipts/inputs.json
        "schema": ("str", "parsing: the inputs schema id"),
        "inputs": ("dict", "campaign: campaign.yaml's inputs"),
        "inputs.*.sha256": ("str", "campaign: campaign.yaml's pin"),
        "inputs.*.**": ("any", "free"),
    },
    "golden": {  # data/golden.json
        "schema": ("str", "parsing: the golden schema id"),
        "items": ("dict", "derived: parity.golden re-derived"),
        "items.*.fields.*": ("str", "derived: parity.golden re-derived"),
        "items.*.error": ("dict?", "derived: parity.golden re-derived"),
        "items.*.error.*": ("str", "derived: parity.golden re-derived"),
        "**": ("any", "identity: golden.json's SHA-256 is the one campaign.json pins"),
    },
    "noise_floor": {  # data/noise_floor.json
        "schema": ("str", "parsing: the noise-floor schema id"),
        "campaign": ("str", "identity: this campaign's name"),
        "floor": ("num", "derived: the verdict; parsing: within 0..0.5"),
        "bundle_digest": ("str", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "machine": ("dict", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "started_at": ("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "rounds": ("int", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "ratio": ("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "ci95": ("list", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "**": ("any", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
    },
    "reproduction": {  # data/receipts/reproduction.json
        "schema": ("str", "parsing: the reproduction schema id"),
        "campaign": ("str", "identity: this campaign's name"),
        "original": ("dict", "parsing: a SHA-256 digest of the bundle re-run"),
        "reproduction": ("dict", "free"),
        "machines": ("dict", "free"),
        "scope": ("dict", "free"),
        "outputs": ("dict", "free"),
        "timing": ("dict", "identity: its own side is comparison.json's ratio and interval"),
        "verdict": ("str", "free"),
        "exit_code": ("int", "free"),
        "**": ("any", "free"),
    },
    "workload": {  # data/receipts/workload.json
        "schema": ("str", "parsing: the workload schema id"),
        "path": ("str?", "identity: campaign.json's workload.path"),
        "files": ("list", "files: exactly the files under data/workload/, each once, sorted by path"),
        "files[].path": ("str", "files: a file under data/workload/"),
        "files[].size": ("int", "files: the stored file's size"),
        "files[].sha256": ("str", "files: the stored file's SHA-256"),
        "digest": ("str?", "identity: the SHA-256 of the files' listing; every ok run's workload digest"),
    },
    "builds": {  # data/receipts/builds.json
        "schema": ("str", "parsing: the builds schema id"),
        "**": ("any", "free"),
    },
    "comparison": {  # data/comparison.json: every leaf re-derived from the records
        "**": ("any", "derived: re-derived from the records by both checkers"),
    },
    "bag-info": {  # bag-info.txt, one key per line
        "Payload-Oxum": ("str", "layout: the payload's size and file count"),
        "External-Identifier": ("str", "bag-info: campaign.json's name"),
        "Abba-Status": ("str", "bag-info: comparison.json's status"),
        "Abba-Base-SHA": ("str", "bag-info: campaign.json's base SHA"),
        "Abba-Candidate-SHA": ("str", "bag-info: campaign.json's candidate SHA"),
        "Bagging-Date": ("str", "physics: an ISO date, not before the runner's end, not after the checker's clock"),
        "Bag-Software-Agent": ("str", "free"),
    },
    "manifest": {  # manifest-sha256.txt and tagmanifest-sha256.txt, one line per file
        "*": ("str", "layout: every file's SHA-256, each file listed once, rows sorted"),
    },
}
# Fields (or single mutation kinds of a field: "path@kind,kind") that no checker can bind
# from the bundle, with the reason; the README's "What no checker can catch" is this list.
UNBOUND = {
    ("run", "imported_from.workload"): "an absolute path on the measuring machine; the workload is outside the "
                                       "revisions' trees",
    ("run", "metrics"): "the workload's own counters; nothing else in the bundle repeats them",
    ("run", "metrics.*"): "the workload's own counters; nothing else in the bundle repeats them",
    ("run", "machine.cpu_freq_mhz"): "what the machine reported; no other record holds it",
    ("run", "machine.warmup_s"): "the busy spin before the clock (harness/worker.py WARMUP_S): it precedes every "
                                 "timed figure and changes none; only its range (0 to 10 s) is checked",
    ("run", "machine.loadavg_before"): "the load the machine reported; no other record holds it",
    ("run", "machine.loadavg_before[]"): "the load the machine reported; no other record holds it",
    ("run", "machine.loadavg_after"): "the load the machine reported; no other record holds it",
    ("run", "machine.loadavg_after[]"): "the load the machine reported; no other record holds it",
    ("run", "items[].wall_s@/7,swap"): "an item wall above its CPU and within the run's is physical: timings "
                                       "invented consistently pass; only `harness reproduce` tests them",
    ("run", "wall_s@x7,swap"): "a run wall within its process's life and above its items is physical: timings "
                               "invented consistently pass; only `harness reproduce` tests them",
    ("run", "items[].cpu_s@x7,/7,zero,swap"): "CPU anywhere within the wall is physical (a thread that waits, or "
                                              "one descheduled on a loaded machine): only an upper bound exists",
    ("run", "stages.*.self_cpu_s@/7,zero,swap"): "less stage CPU is physical: only upper bounds exist",
    ("run", "stages.*.incl_cpu_s@x7,swap"): "inclusive CPU between self and cores x run wall is physical",
    ("run", "machine.process_cpu_s@x7,/7,zero,swap"): "process CPU between the items' CPU and cores x run wall "
                                                       "is physical (other threads)",
    ("run", "machine.cpu_stall_s@x7,/7,zero,swap"): "a CPU stall within the wall is physical; it is re-derived "
                                                    "into the load rule",
    ("run", "stages.*.calls@x7,zero,swap"): "the workload's own count; a changed count is re-derived into "
                                            "parity (call counts not identical), not refused",
    ("run", "items[].fields.*.digest@swap"): "another stored array of the same dtype and shape: re-derived into "
                                             "parity (outputs differ); which output an item gave only a re-run tells",
    ("run", "items[].error.type@other"): "another error is re-derived into parity (errors differ); which error "
                                         "an item raised only a re-run tells",
    ("run", "items[].error.message@other"): "another error is re-derived into parity (errors differ); which "
                                            "error an item raised only a re-run tells",
    ("runner", "reason"): "a reason the runner stopped only turns the bundle failed (re-derived): a failure "
                          "claimed is never read as a success",
    ("cleanup", "processes[].checked_at@swap"): "every absence is checked at the campaign's end: one check "
                                                "time for another is physical",
    ("bag-info", "Bagging-Date@shift+1h,shift-1h"): "a local date: a day either way is the time zone's",
    ("campaign", "seed@x7,zero,huge,swap"): "another seed that shuffles into the same order (1 in 2**rounds) "
                                            "describes the same runs",
    ("cleanup", "method"): "prose naming how absence was verified",
    ("cleanup", "processes[].cmdline"): "the command line the ledger saw; only the role and run are bound",
    ("cleanup", "processes[].cmdline[]"): "the command line the ledger saw; only the role and run are bound",
    ("environment", "**"): "what the machine reported (CPU model, ISA, BLAS, packages, load, worker env): "
                           "no record repeats it; `harness reproduce` compares the machine class",
    ("revisions", "*.note"): "prose about a working-tree snapshot",
    ("inputs", "inputs.*.**"): "where the input was found and how it was built on the measuring machine; its "
                               "hash is bound",
    ("reproduction", "reproduction"): "the re-run's own side, derived by `harness reproduce`; not re-derived",
    ("reproduction", "machines"): "derived by `harness reproduce` from two environments; not re-derived",
    ("reproduction", "scope"): "derived by `harness reproduce`; not re-derived",
    ("reproduction", "outputs"): "derived by `harness reproduce`; not re-derived",
    ("reproduction", "verdict"): "derived by `harness reproduce`; not re-derived",
    ("reproduction", "exit_code"): "derived by `harness reproduce`; not re-derived",
    ("reproduction", "**"): "derived by `harness reproduce`; not re-derived",
    ("builds", "**"): "the build commands' output as the machine printed it",
    ("bag-info", "Bag-Software-Agent"): "the harness version that sealed the bag; prose",
}


def keys_of(doc, prefix=""):
    """The exact keys and kinds of the object at `prefix` in a FIELDS document, for `shaped`."""
    depth = prefix.count(".") + 1 if prefix else 0
    out = {}
    for path, (kind, _rule) in FIELDS[doc].items():
        if path.startswith(prefix + "." if prefix else "") or (prefix and path.startswith(prefix + "[]")):
            rest = path[len(prefix):].lstrip(".") if prefix else path
            if rest and "." not in rest and "[" not in rest and rest not in ("*", "**") and path.count(".") == depth:
                out[rest] = {"time": "num"}.get(kind, kind)
    return out


RUN_KEYS = keys_of("run")
PROCESS_KEYS = keys_of("run", "process")
ITEM_KEYS = keys_of("run", "items[]")
FIELD_KEYS = keys_of("run", "items[].fields.*")
STAGE_KEYS = keys_of("run", "stages.*")
CAMPAIGN_KEYS = keys_of("campaign")
CAMPAIGN_AUTO_KEYS = ("budget_s", "min_rounds")  # only in campaigns of `rounds: auto`
CAMPAIGN_V3_ONLY = ("rounds", "stage_rounds", "seed", "noise_floor", "noise_floor_sha256") + CAMPAIGN_AUTO_KEYS
CAMPAIGN_INSTRUCTION_KEYS = {"metrics": "list", "instructions": "dict"}  # only in campaigns that count them
INSTRUCTION_KEYS = {"schema": "str", "label": "str", "variant": "str", "index": "int", "after": "str?", "sha": "str",
                    "status": "str", "reason": "str?", "exit_code": "int?", "instructions": "int?", "items": "list",
                    "errors": "int", "tool": "str", "valgrind": "str", "command": "list", "env": "dict",
                    "harness_source_sha256": "str?", "workload_sha256": "str?", "pid": "int", "process": "dict",
                    "log": "str"}
CAMPAIGN_KEYS_V2 = {k: v for k, v in CAMPAIGN_KEYS.items() if k not in CAMPAIGN_V3_ONLY}
RUN_KEYS_V2 = {k: v for k, v in RUN_KEYS.items() if k != "workload_sha256"}  # run/v2: no workload digest
WORKLOAD_KEYS = keys_of("workload")
WORKLOAD_FILE_KEYS = keys_of("workload", "files[]")
NOISE_FLOOR_KEYS = keys_of("noise_floor")
RUNNER_KEYS = keys_of("runner")
CLEANUP_KEYS = keys_of("cleanup")
PROC_KEYS = keys_of("cleanup", "processes[]")
REPRODUCTION_KEYS = keys_of("reproduction")
ABSENT_STATES = {"gone": True, "pid reused": True, "alive": False}


def shaped(check, rel, obj, keys, what, schema=None):
    """obj has exactly `keys`, each of its kind (and the right schema); else one line, False."""
    if not isinstance(obj, dict):
        check.fail(rel, f"{what} is not a JSON object", "parsing")
        return False
    missing, extra = sorted(set(keys) - set(obj)), sorted(set(obj) - set(keys))
    if missing or extra:
        check.fail(rel, f"{what}: " + "; ".join(
            ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(extra)}"] if extra else [])),
            "parsing")
        return False
    for key, kind in keys.items():
        if not KINDS[kind](obj[key]):
            check.fail(rel, f"{what}: {key} is {short(obj[key])}, expected {kind.rstrip('?')}"
                       + (" or null" if kind.endswith("?") else ""), "parsing")
            return False
    if schema is not None and obj.get("schema") != SCHEMAS[schema]:
        check.fail(rel, f"schema {short(obj.get('schema'))}, expected {SCHEMAS[schema]}", "parsing")
        return False
    return True


def epoch_of(text):
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except (TypeError, ValueError):
        return None


def bound(x):
    """x with the tolerance every measured bound gets (float sums, two clocks)."""
    return x * (1 + SLOT_TOL) + SLOT_ABS_S


def timeout_bound(timeout_s):
    """How long a timeout can let a process or campaign live: the runner's kill and reap."""
    return timeout_s * (1 + TIMEOUT_TOL) + TIMEOUT_GRACE_S


def check_run(check, record, label, index, variant, campaign, runner, last, legacy=False):
    """The rules one run record must keep; True when it is sound enough to derive from.
    legacy: a run/v2 record of a campaign/v2 bundle (no workload digest; read as null)."""
    rel = run_path(label)
    if legacy:
        if not shaped(check, rel, record, RUN_KEYS_V2, "run record"):
            return False
        if record["schema"] != LEGACY_SCHEMAS["run"]:
            check.fail(rel, f"schema {short(record['schema'])}, expected {LEGACY_SCHEMAS['run']}", "parsing")
            return False
        record["workload_sha256"] = None
    elif not shaped(check, rel, record, RUN_KEYS, "run record", "run"):
        return False
    process = record["process"]
    if not shaped(check, rel, process, PROCESS_KEYS, "process"):
        return False
    # plan and identity
    if record["label"] != label:
        check.fail(rel, f"label {short(record['label'])} in the file of run {label}", "plan")
    if record["index"] != index:
        check.fail(rel, f"index {record['index']}, but {label} is run {index} of the order", "plan")
    if record["variant"] != variant:
        check.fail(rel, f"variant {short(record['variant'])}, but {label} is a {variant} run", "identity")
    sha = campaign["revisions"].get(variant, {}).get("sha")
    if record["sha"] != sha:
        check.fail(rel, f"sha {short(record['sha'])} is not the campaign's {variant} SHA", "identity")
    if record["slots"] != campaign["slots"]:
        check.fail(rel, f"slots {record['slots']}, the campaign has {campaign['slots']}", "identity")
    if record["timer"] != "perf_counter":
        check.fail(rel, f"timer {short(record['timer'])}, the worker times with perf_counter", "parsing")
    if record["log"] != log_path(label):
        check.fail(rel, f"log {short(record['log'])}, expected {log_path(label)}", "files")
    # status
    status = record["status"]
    if status not in RUN_STATUSES:
        check.fail(rel, f"status {short(status)} is not one of {', '.join(RUN_STATUSES)}", "status")
        return False
    if status == "ok":
        if record["exit_code"] != 0 or record["reason"] is not None or record["wall_s"] is None:
            check.fail(rel, f"status ok with exit code {record['exit_code']}, reason {short(record['reason'])} "
                            f"and wall {short(record['wall_s'])}", "status")
    else:
        if not record["reason"]:
            check.fail(rel, f"status {status} without a reason", "status")
        if record["items"] or record["wall_s"] is not None:
            check.fail(rel, f"status {status} but it carries measurements", "status")
        if not last:
            check.fail(rel, f"a {status} run is followed by more runs (a failed run ends the campaign)", "status")
    # physics: nothing negative; timed wall <= process wall <= the runner's span
    wall = record["wall_s"]
    if min(process.values()) < 0 or (wall is not None and wall <= 0):
        check.fail(rel, "a negative (or zero) time", "physics")
    check_process(check, rel, process, runner, campaign)
    if wall is not None and wall > process["wall_s"]:
        check.fail(rel, f"timed wall {wall:.6g} s is longer than its process's life {process['wall_s']:.6g} s",
                   "physics")
    if status == "ok":
        w0, w1 = epoch_of(record["worker_started_at"]), epoch_of(record["worker_ended_at"])
        if w0 is None or w1 is None:
            check.fail(rel, "worker_started_at/worker_ended_at are not ISO timestamps", "physics")
        elif not (process["started_at"] - CLOCK_TOL_S <= w0 <= w1 <= process["ended_at"] + CLOCK_TOL_S) \
                or (wall is not None and wall > w1 - w0 + CLOCK_TOL_S):
            check.fail(rel, "the worker's own start and end do not hold its timed wall inside its process",
                       "physics")
    # items
    ids = set()
    total = 0.0
    all_stored = True
    for n, item in enumerate(record["items"]):
        if not shaped(check, rel, item, ITEM_KEYS, f"items[{n}]"):
            return False
        if item["id"] in ids:
            check.fail(rel, f"item id {short(item['id'])} appears twice", "parsing")
            return False
        ids.add(item["id"])
        if item["wall_s"] <= 0 or item["cpu_s"] < 0:  # a timed item takes some time, even one that fails
            check.fail(rel, f"item {short(item['id'])}: negative (or zero) time", "physics")
        # One slot thread ran the item: its thread CPU fits in its wall, its wall in the run's.
        if item["cpu_s"] > item["wall_s"] * (1 + SLOT_TOL) + ITEM_CLOCK_TOL_S:
            check.fail(rel, f"item {short(item['id'])}: CPU {item['cpu_s']:.6g} s above its wall "
                            f"{item['wall_s']:.6g} s (one thread's CPU cannot exceed its wall)", "physics")
        if wall is not None and item["wall_s"] > bound(wall):
            check.fail(rel, f"item {short(item['id'])}: wall {item['wall_s']:.6g} s above the run's timed wall "
                            f"{wall:.6g} s", "physics")
        total += max(item["wall_s"], 0.0)
        if item["error"] is not None:
            if set(item["error"]) != {"type", "message"} or not all(isinstance(v, str) for v in item["error"].values()):
                check.fail(rel, f"item {short(item['id'])}: error is not {{type, message}}", "parsing")
                return False
            if item["fields"]:
                check.fail(rel, f"item {short(item['id'])}: an error and fields", "status")
        for name, f in item["fields"].items():
            if not shaped(check, rel, f, FIELD_KEYS, f"item {short(item['id'])} field {short(name)}"):
                return False
            header = check.array_headers.get(f["digest"])
            if header is None:  # and never opened: a digest could name any path
                check.fail(rel, f"item {item['id']} field {name}: array {str(f['digest'])[:16]}... is not stored",
                           "arrays")
                all_stored = False
            elif [f["dtype"], f["shape"]] != [header[0], header[1]]:
                check.fail(rel, f"item {item['id']} field {name}: records {f['dtype']}{f['shape']}, the stored "
                                f"array is {header[0]}{header[1]}", "arrays")
    if wall is not None and total > record["slots"] * wall * (1 + SLOT_TOL) + SLOT_ABS_S:
        check.fail(rel, f"item walls sum to {total:.6g} s, more than {record['slots']} slot(s) x the run's "
                        f"{wall:.6g} s", "physics")
    # stages
    for name, row in record["stages"].items():
        if name not in campaign["stages"]:
            check.fail(rel, f"stage {short(name)} is not a campaign stage", "identity")
            continue
        if not shaped(check, rel, row, STAGE_KEYS, f"stage {name}"):
            return False
        if row["calls"] < 0 or row["self_cpu_s"] < 0 or row["incl_cpu_s"] < 0:
            check.fail(rel, f"stage {name}: negative calls or CPU", "physics")
        if wall is not None and is_int(record["machine"].get("cores")) and record["machine"]["cores"] >= 1:
            room = bound(record["machine"]["cores"] * wall)
            if row["incl_cpu_s"] > room:
                check.fail(rel, f"stage {name}: inclusive CPU {row['incl_cpu_s']:.6g} s above {record['machine']['cores']} "
                                f"core(s) x the run's wall {wall:.6g} s", "physics")
            if row["calls"] * CALL_FLOOR_S > room:
                check.fail(rel, f"stage {name}: {row['calls']} calls cannot fit in the run's wall", "physics")
        if row["self_cpu_s"] > row["incl_cpu_s"] + CPU_TOL_S:
            check.fail(rel, f"stage {name}: self CPU {row['self_cpu_s']:.6g} s above inclusive "
                            f"{row['incl_cpu_s']:.6g} s", "physics")
    # Stage CPU is thread CPU inside the timed region: all of it together fits in the
    # machine's cores x the run's wall (stages may run on threads of the workload's own).
    cores = record["machine"].get("cores") if isinstance(record["machine"], dict) else None
    if wall is not None and is_int(cores) and cores >= 1:
        limit = bound(cores * wall)
        if sum(max(row["self_cpu_s"], 0.0) for row in record["stages"].values()
               if isinstance(row, dict) and is_number(row.get("self_cpu_s"))) > limit:
            check.fail(rel, f"stage self CPU sums above {cores} core(s) x the run's wall {wall:.6g} s", "physics")
    elif wall is not None:
        check.fail(rel, f"machine.cores {short(cores)} is not a positive integer", "physics")
    # Over the timed loop, measured when the worker could: the process's CPU (every thread)
    # holds the items' thread CPU and fits in cores x wall; the CPU stall (PSI) fits in the wall.
    machine = record["machine"] if isinstance(record["machine"], dict) else {}
    item_cpu = sum(max(it["cpu_s"], 0.0) for it in record["items"])
    for key, low, high, what in (("process_cpu_s", item_cpu, cores * wall if is_int(cores) and wall else None,
                                  "the items' CPU and cores x the run's wall"),
                                 ("cpu_stall_s", 0.0, wall, "0 and the run's wall")):
        value = machine.get(key)
        if value is None or wall is None:
            continue
        if not is_number(value) or value < low - SLOT_ABS_S or (high is not None and value > bound(high) + TICK_S):
            check.fail(rel, f"machine.{key} {short(value)} is not between {what}", "physics")
    warmup = machine.get("warmup_s")  # the busy spin before the clock (harness/worker.py WARMUP_S)
    if warmup is not None and not (is_number(warmup) and 0.0 <= warmup <= 10.0):
        check.fail(rel, f"machine.warmup_s {short(warmup)} is not between 0 and 10 s", "physics")
    staged = instrumented(label, campaign["order"])
    if status == "ok" and not staged:  # a timed run of an order with stage runs: no wrappers at all
        if record["stages"] or record["stages_installed"] or (record["imported_from"].get("stages")
                                                                if isinstance(record["imported_from"], dict) else None):
            check.fail(rel, "a timed run with stage wrappers, but the order has stage runs: its wall is the "
                            "headline and must carry none", "identity")
        if machine.get("stage_wrapper_s") is not None:
            check.fail(rel, "machine.stage_wrapper_s in a run without stage wrappers", "identity")
    if status == "ok" and staged and set(record["stages"]) != set(campaign["stages"]):
        check.fail(rel, "stages are not the campaign's stages", "identity")
    if status == "ok" and staged:
        installed = record["stages_installed"] if isinstance(record["stages_installed"], dict) else {}
        for name in campaign["stages"]:
            if name not in campaign["optional_stages"] and installed.get(name) is not True:
                check.fail(rel, f"stage {name} is not optional but not installed", "identity")
        cost = machine.get("stage_wrapper_s")  # measured before the clock; ~1-2 us on a 2020s CPU
        if cost is not None and not (is_number(cost) and 0.0 <= cost <= 1e-3):
            check.fail(rel, f"machine.stage_wrapper_s {short(cost)} is not between 0 and 1 ms", "physics")
    return all_stored


def check_process(check, rel, process, runner, campaign):
    """A run's process (wall or instruction run): its wall fits between its start and end,
    which lie inside the campaign's, and it lived no longer than the run timeout lets it
    (the runner kills it then; a grace for the kill)."""
    if process["ended_at"] < process["started_at"] or \
            abs(process["wall_s"] - (process["ended_at"] - process["started_at"])) > PROCESS_TOL_S:
        check.fail(rel, "process wall does not fit between its start and end", "physics")
    if process["started_at"] < runner["started_at"] - CLOCK_TOL_S or process["ended_at"] > runner["ended_at"] + CLOCK_TOL_S:
        check.fail(rel, "process ran outside the campaign's start and end (runner.json)", "physics")
    run_timeout = campaign["timeouts"].get("run_s") if isinstance(campaign["timeouts"], dict) else None
    if is_number(run_timeout) and process["wall_s"] > timeout_bound(run_timeout):
        check.fail(rel, f"its process lived {process['wall_s']:.6g} s, past the run timeout of {run_timeout} s",
                   "physics")


# What a worker's log holds when it died, though its record says ok: Python's traceback
# header (the worker catches an item's exception and records it; it prints one only when
# it dies) and a kill signal's name at the start of a line.
LOG_MARKERS = (b"Traceback (most recent call last):", b"SIGKILL")


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


def auto_rounds(budget_s, first_round_s, min_rounds, max_rounds):
    """harness/records.py auto_rounds: as many rounds as fit the budget at the first round's
    pace, within [min_rounds, max_rounds]."""
    if not first_round_s > 0:
        return max_rounds
    return max(min_rounds, min(max_rounds, math.ceil(budget_s / first_round_s)))


def check_auto_rounds(check, campaign, runs):
    """`rounds: auto`: the runner chose the count after the first round (A1 and B1) from
    their process walls alone; a campaign ended before that keeps the minimum."""
    first = {r["label"]: r for r in runs[:2]}
    if set(first) == {"A1", "B1"} and all(r["status"] == "ok" for r in first.values()):
        pace = first["A1"]["process"]["wall_s"] + first["B1"]["process"]["wall_s"]
        want = auto_rounds(campaign["budget_s"], pace, campaign["min_rounds"], MAX_ROUNDS)
        why = f"the first round took {pace:.3f} s of a {campaign['budget_s']:g} s budget"
    else:
        want, why = campaign["min_rounds"], "the campaign ended before its first round did"
    if campaign["rounds"] != want:
        check.fail(CAMPAIGN_JSON, f"rounds {campaign['rounds']}, but {why}: rounds: auto gives {want}", "plan")


def round_order(rounds, seed, stage_rounds=0):
    """Each round one A and one B; A first when the low bit of the first byte of
    SHA-256("abba-rounds-v1:<seed>:<round>") is 0. Stage round j (one a and one b, a first by
    "abba-stage-rounds-v1") follows timed round ceil((j + 1) rounds / (stage_rounds + 1))
    (harness/records.py round_order)."""
    def heads(domain, i):
        return seed is None or hashlib.sha256(f"{domain}:{seed}:{i}".encode()).digest()[0] & 1 == 0

    after = {-(-(j + 1) * rounds // (stage_rounds + 1)): j for j in range(stage_rounds)}
    out = ""
    for i in range(rounds):
        out += "AB" if heads("abba-rounds-v1", i) else "BA"
        if i + 1 in after:
            out += "ab" if heads("abba-stage-rounds-v1", after[i + 1]) else "ba"
    return out


def instrumented(label, order):
    """A stage run, or any run of an order without stage runs (harness/records.py)."""
    return label[1:2] == "s" or order == order.upper()


def instruction_order(runs):
    """runs instruction runs per variant, AB and BA alternating (harness/records.py)."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(runs))


def instruction_slots(order, instr_order):
    """(label, variant, index, after) per instruction run: the j-th of m runs after wall run
    floor((j + 1) n / (m + 1)) - 1 of the n in order (-1: before the first; after is its
    label, or None) (harness/records.py schedule)."""
    walls, counts, out = [], {}, []
    for letter in order:  # a, b: stage runs As1, Bs1
        counts[letter] = counts.get(letter, 0) + 1
        walls.append(letter.upper() + ("s" if letter.islower() else "") + str(counts[letter]))
    counts = {"A": 0, "B": 0}
    for j, letter in enumerate(instr_order):
        counts[letter] += 1
        at = (j + 1) * len(walls) // (len(instr_order) + 1) - 1
        out.append((f"I{letter}{counts[letter]}", VARIANTS[letter], j, walls[at] if at >= 0 else None, at))
    return out


def check_instruction_runs(check, campaign, runner, runs, plan, started, instr_order):
    """Instruction records: exactly those the schedule ran before the campaign stopped, each
    under the rules of check_instruction_run, in their places between the wall runs.
    Returns (records, sound)."""
    present = {rel for rel in check.openable if rel.startswith("data/instructions/")}
    out, sound, stopped = [], True, False
    wall_ok = [r for r in runs if r["status"] == "ok"]
    wall_items = {it["id"] for r in wall_ok for it in r["items"]} if wall_ok else None
    failed_wall = next((n for n, r in enumerate(runs) if r["status"] != "ok"), None)
    by_label = {r["label"]: r for r in runs}
    for label, variant, index, after, at in instruction_slots(campaign["order"], instr_order):
        rel = instructions_path(label)
        # It ran before wall run at + 1: present when that one started, absent when the
        # campaign stopped before its place, either when it stopped right there.
        must = at + 1 < started and not stopped
        may = at + 1 == started and not stopped and (failed_wall is None or at < failed_wall)
        if rel not in present:
            if must:
                check.fail(rel, f"missing: wall run {plan[at + 1][0]} started after it", "plan")
                sound = False
            stopped = True
            continue
        if not (must or may):
            continue  # reported as a record the campaign did not run
        record = load_json(check, rel)
        if record is None:
            return out, False
        ok = check_instruction_run(check, record, label, index, variant, after, campaign, runner, wall_items)
        sound &= ok
        if not ok:
            return out, False
        # its process lies between its neighbours' in the schedule
        before = by_label.get(after) if after is not None else None
        later = by_label.get(plan[at + 1][0]) if at + 1 < len(plan) else None
        prev = out[-1] if out and out[-1]["after"] == after else before
        if (prev is not None and record["process"]["started_at"] < prev["process"]["ended_at"] - CLOCK_TOL_S) or \
                (later is not None and later["process"]["started_at"] < record["process"]["ended_at"] - CLOCK_TOL_S):
            check.fail(rel, "its process overlaps the run before or after it in the schedule", "physics")
        if record["status"] != "ok":
            if at + 1 != started:
                check.fail(rel, f"a {record['status']} instruction run is followed by more runs (a failed run "
                                "ends the campaign)", "status")
            stopped = True
        out.append(record)
    ok = [r for r in out if r["status"] == "ok"]
    if len({json.dumps(r["items"]) for r in ok}) > 1:
        check.fail(instructions_path(ok[0]["label"]), "instruction runs counted different items", "identity")
    if len({r["valgrind"] for r in out}) > 1:
        check.fail(instructions_path(out[0]["label"]), "instruction runs used different valgrind versions",
                   "identity")
    return out, sound


def check_instruction_run(check, record, label, index, variant, after, campaign, runner, wall_items):
    """The rules one instruction record must keep; True when it is sound enough to derive from."""
    rel = instructions_path(label)
    if not shaped(check, rel, record, INSTRUCTION_KEYS, "instruction record", "instructions"):
        return False
    process = record["process"]
    if not shaped(check, rel, process, PROCESS_KEYS, "process"):
        return False
    for key, want in (("label", label), ("index", index), ("variant", variant), ("after", after),
                      ("sha", campaign["revisions"][variant]["sha"]), ("log", log_path(label)),
                      ("tool", "callgrind"), ("env", INSTRUCTION_ENV)):
        if record[key] != want:
            check.fail(rel, f"{key} {short(record[key])}, the schedule and campaign give {short(want)}", "plan")
    status, count = record["status"], record["instructions"]
    if status not in RUN_STATUSES:
        check.fail(rel, f"status {short(status)} is not one of {', '.join(RUN_STATUSES)}", "status")
        return False
    if status == "ok":
        if record["exit_code"] != 0 or record["reason"] is not None or not (is_int(count) and count > 0):
            check.fail(rel, f"status ok with exit code {record['exit_code']}, reason {short(record['reason'])} "
                            f"and count {short(count)} (an ok run has exit 0, no reason, a positive count)", "status")
            return False
    elif not record["reason"] or count is not None or record["items"]:
        check.fail(rel, f"status {status} needs a reason and no count or items", "status")
        return False
    # the command: the flags that count the measured region only, ASLR off, the worker
    cmd = record["command"]
    if not all(isinstance(a, str) for a in cmd) or cmd[:2] != ["setarch", "-R"] \
            or not all(flag in cmd for flag in REGION_FLAGS) or "harness.engine.worker" not in cmd:
        check.fail(rel, f"command {short(cmd)} is not `setarch -R valgrind {' '.join(REGION_FLAGS)} ... -m "
                        "harness.engine.worker` (only that counts the measured region alone)", "identity")
    if not (isinstance(record["valgrind"], str) and record["valgrind"].startswith("valgrind-")):
        check.fail(rel, f"valgrind {short(record['valgrind'])} is not a `valgrind --version` line", "identity")
    # items: a subset of the wall runs' items, at most the campaign's count, each once
    items = record["items"]
    if not all(isinstance(i, str) for i in items) or len(set(items)) != len(items):
        check.fail(rel, "items must be distinct item ids", "parsing")
        return False
    limit = campaign["instructions"]["items"]
    if status == "ok" and (not items or (limit is not None and len(items) > limit)):
        check.fail(rel, f"{len(items)} items counted, the campaign asks for 1 to {short(limit)}", "plan")
    if wall_items is not None and not set(items) <= wall_items:
        check.fail(rel, "counts items the wall runs did not run", "identity")
    if not 0 <= record["errors"] <= max(len(items) - 1, 0):
        check.fail(rel, f"errors {record['errors']} outside 0..{max(len(items) - 1, 0)} (a run whose every "
                        "item raised fails)", "status")
    # physics: the process inside the campaign's span, a count it could execute
    if min(process.values()) < 0:
        check.fail(rel, "a negative time", "physics")
    check_process(check, rel, process, runner, campaign)
    if count is not None and count > MAX_INSTRUCTIONS_PER_S * process["wall_s"]:
        check.fail(rel, f"{count} instructions in a process that lived {process['wall_s']:.6g} s: more than "
                        f"{MAX_INSTRUCTIONS_PER_S:.0e} a second", "physics")
    return True


def check_records(check, stored):
    """Every rule that ties the bundle's parts together. Returns the parsed documents when
    they are sound enough to re-derive comparison.json from, else None."""
    docs = {name: load_json(check, rel) for name, rel in (
        ("campaign", CAMPAIGN_JSON), ("claimed", COMPARISON), ("runner", RUNNER), ("cleanup", CLEANUP),
        ("environment", ENVIRONMENT), ("revisions", REVISIONS), ("inputs", INPUTS))}
    campaign, runner, cleanup = docs["campaign"], docs["runner"], docs["cleanup"]
    legacy = isinstance(campaign, dict) and campaign.get("schema") == LEGACY_SCHEMAS["campaign"]
    written = campaign.get("schema") if isinstance(campaign, dict) else None
    if isinstance(written, str) and written.startswith("abba-harness/campaign/") and not legacy \
            and written != SCHEMAS["campaign"]:
        check.fail(CAMPAIGN_JSON, f"schema {short(written)}: a bundle of an older harness (before {SCHEMAS['campaign']}"
                                  ", which stores the workload); re-run the campaign to get one these checkers "
                                  "verify", "parsing")
        return None
    # files: the required set (a campaign/v2 bundle has no workload receipt), and no other kind of file
    for rel in REQUIRED:
        if rel not in check.openable and not (legacy and rel == WORKLOAD):
            check.fail(rel, "missing (every bundle holds it)", "files")
    if legacy:  # an explicit order, no rounds, no noise floor: read as v3 without them
        if not shaped(check, CAMPAIGN_JSON, campaign, CAMPAIGN_KEYS_V2, "campaign"):
            return None
        campaign = docs["campaign"] = {**campaign, "schema": SCHEMAS["campaign"],
                                       **{key: None for key in CAMPAIGN_V3_ONLY if key not in CAMPAIGN_AUTO_KEYS}}
    counting = isinstance(campaign, dict) and not legacy and bool(set(campaign) & set(CAMPAIGN_INSTRUCTION_KEYS))
    auto = isinstance(campaign, dict) and bool(set(campaign) & set(CAMPAIGN_AUTO_KEYS))
    keys = {k: v for k, v in CAMPAIGN_KEYS.items() if auto or k not in CAMPAIGN_AUTO_KEYS}
    if not (shaped(check, CAMPAIGN_JSON, campaign, {**keys, **(CAMPAIGN_INSTRUCTION_KEYS if counting else {})},
                   "campaign", "campaign")
            and shaped(check, RUNNER, runner, RUNNER_KEYS, "runner receipt", "runner")
            and shaped(check, CLEANUP, cleanup, CLEANUP_KEYS, "cleanup receipt", "cleanup")):
        return None
    for name in ("environment", "revisions", "inputs"):
        rel = {"environment": ENVIRONMENT, "revisions": REVISIONS, "inputs": INPUTS}[name]
        if docs[name] is not None and (not isinstance(docs[name], dict) or docs[name].get("schema") != SCHEMAS[name]):
            check.fail(rel, f"not a {name} receipt of schema {SCHEMAS[name]}", "parsing")
            return None
    claimed = docs["claimed"]
    if not isinstance(claimed, dict):
        if claimed is not None:
            check.fail(COMPARISON, "not a JSON object", "parsing")
        return None
    if FIGURE in check.openable:
        try:
            if check.read(FIGURE, 1 << 30)[:8] != PNG_SIGNATURE:
                check.fail(FIGURE, "not a PNG file", "files")
        except OSError as exc:
            check.fail(FIGURE, f"unreadable ({str(exc)[:80]})", "files")

    # plan: labels follow from the order; one record per started run, in order
    order = campaign["order"]
    if not ORDER_RE.match(order) or "A" not in order or "B" not in order:
        check.fail(CAMPAIGN_JSON, f"order {short(order)} is not a string of A and B holding both (a, b: stage runs)",
                   "plan")
        return None
    plan = []
    counts = {}
    for letter in order:
        counts[letter] = counts.get(letter, 0) + 1
        plan.append((letter.upper() + ("s" if letter.islower() else "") + str(counts[letter]), VARIANTS[letter.upper()]))
    if campaign["labels"] != [label for label, _ in plan]:
        check.fail(CAMPAIGN_JSON, f"labels {short(campaign['labels'])} do not follow from order {order}", "plan")
        return None
    rounds, seed, stage_rounds = campaign["rounds"], campaign["seed"], campaign["stage_rounds"]
    has_stages = bool(campaign["stages"]) if isinstance(campaign["stages"], dict) else False
    if ((rounds is None) != (seed is None) or (rounds is None) != (stage_rounds is None)
            or (rounds is not None and not (rounds >= 1 and seed >= 0 and 0 <= stage_rounds <= rounds
                                            and (stage_rounds >= 1) == has_stages))):
        check.fail(CAMPAIGN_JSON, f"rounds {short(rounds)}, stage_rounds {short(stage_rounds)} and seed {short(seed)}: "
                                  "all null (an explicit order), or a positive count, its stage rounds (at least 1 "
                                  "exactly when there are stages, at most the rounds) and its shuffle seed", "plan")
        return None
    # the length first: round_order of a forged 10**18 rounds would never return
    if rounds is not None and (len(order) != 2 * (rounds + stage_rounds)
                               or order != round_order(rounds, seed, stage_rounds)):
        check.fail(CAMPAIGN_JSON, f"order {short(order)} is not the shuffle of {rounds} rounds and {stage_rounds} "
                                  f"stage rounds by seed {seed}", "plan")
        return None
    if order != order.upper() and not has_stages:
        check.fail(CAMPAIGN_JSON, f"order {short(order)} has stage runs (a, b) but the campaign has no stages", "plan")
        return None
    budget_s, min_rounds = campaign.get("budget_s"), campaign.get("min_rounds")
    if auto and (budget_s is None or min_rounds is None) or (budget_s is not None and (
            rounds is None or not 1 <= budget_s <= MAX_TIMEOUT_S or not 2 <= min_rounds <= rounds <= MAX_ROUNDS)):
        check.fail(CAMPAIGN_JSON, f"budget_s {short(budget_s)} and min_rounds {short(min_rounds)}: both absent (a fixed "
                                  f"count or an order), or a budget of 1 s to {MAX_TIMEOUT_S:g} s and a minimum of 2 to "
                                  f"the rounds {short(rounds)} (at most {MAX_ROUNDS})", "plan")
        return None
    if set(campaign["revisions"]) != {"base", "candidate"} or not all(
            isinstance(r, dict) and set(r) == {"rev", "sha"} and isinstance(r["sha"], str)
            for r in campaign["revisions"].values()):
        check.fail(CAMPAIGN_JSON, "revisions must be exactly base and candidate, each {rev, sha}", "identity")
        return None
    if campaign["slots"] < 1 or campaign["threshold"] < 0:
        check.fail(CAMPAIGN_JSON, "slots below 1 or a negative threshold", "plan")
    if not isinstance(campaign["stages"], dict) or not all(isinstance(v, str) for v in campaign["stages"].values()):
        check.fail(CAMPAIGN_JSON, "stages must map names to 'module:function'", "parsing")
        return None
    instr_order = ""
    if counting:
        spec_ = campaign["instructions"]
        runs_ = spec_.get("runs")
        if campaign["metrics"] != ["wall", "instructions"] or set(spec_) != {"items", "runs", "order"} \
                or not (is_int(runs_) and 2 <= runs_ <= MAX_INSTRUCTION_RUNS) \
                or not (spec_["items"] is None or (is_int(spec_["items"]) and spec_["items"] >= 1)) \
                or spec_["order"] != instruction_order(runs_):
            check.fail(CAMPAIGN_JSON, f"metrics {short(campaign['metrics'])} and instructions {short(spec_)}: "
                                      "expected [wall, instructions] and {items, runs 2.." f"{MAX_INSTRUCTION_RUNS}, "
                                      "order: runs rounds of AB alternating with BA}", "plan")
            return None
        instr_order = spec_["order"]
    if runner["runs_planned"] != len(order):
        check.fail(RUNNER, f"runs_planned {runner['runs_planned']}, the order has {len(order)} runs", "plan")
    started = runner["runs_started"]
    if not 0 <= started <= len(order):
        check.fail(RUNNER, f"runs_started {started} outside 0..{len(order)}", "plan")
        return None
    if runner["ended_at"] < runner["started_at"]:
        check.fail(RUNNER, "ended before it started", "physics")

    runs, sound = [], True
    previous_end = runner["started_at"]
    for index, (label, variant) in enumerate(plan[:started]):
        record = load_json(check, run_path(label))
        if record is None:
            return None
        sound &= check_run(check, record, label, index, variant, campaign, runner, index == started - 1, legacy)
        if sound and record["process"]["started_at"] < previous_end - CLOCK_TOL_S:
            check.fail(run_path(label), "its process started before the previous run's ended", "physics")
        if sound:
            previous_end = record["process"]["ended_at"]
        runs.append(record)
    if sound and budget_s is not None:
        check_auto_rounds(check, campaign, runs)
    instr, sound_instr = check_instruction_runs(check, campaign, runner, runs, plan, started, instr_order)
    sound &= sound_instr
    expected_runs = {run_path(label) for label, _ in plan[:started]}
    expected_instr = {instructions_path(r["label"]) for r in instr}
    expected_logs = {log_path(label) for label, _ in plan[:started]} | {log_path(r["label"]) for r in instr}
    for rel in sorted(check.openable):
        if rel.startswith("data/runs/") and rel not in expected_runs:
            check.fail(rel, "a run record the campaign did not start (runner.json runs_started, order)", "plan")
        elif rel.startswith("data/instructions/") and rel not in expected_instr:
            check.fail(rel, "an instruction record the campaign did not run (campaign.json instructions, the "
                            "schedule, runner.json runs_started)", "plan")
        elif rel.startswith("data/logs/") and rel not in expected_logs:
            check.fail(rel, "a log of a run the campaign did not start", "plan")
        elif not (rel.startswith(("data/runs/", "data/logs/", "data/arrays/", "data/instructions/", WORKLOAD_DIR))
                  or rel in REQUIRED
                  or rel in (GOLDEN, BUILDS, REPRODUCTION, NOISE_FLOOR) or not rel.startswith("data/")):
            check.fail(rel, "not a file a bundle holds", "files")
    for rel in sorted(expected_logs - check.openable):
        check.fail(rel, "missing: every started run has its log", "files")
    for record in runs if sound else ():
        label = record["label"]
        if record["status"] == "ok" and log_path(label) in check.openable:
            marker = log_marker(check, log_path(label))
            if marker:
                check.fail(log_path(label), f"holds {marker} while {run_path(label)} says ok (a worker that raised "
                                            "or was killed fails its run)", "status")
    if not sound:
        return None

    # ledger: one worker per started run, the record's pid; absence as verified
    procs = cleanup["processes"]
    if cleanup["count"] != len(procs):
        check.fail(CLEANUP, f"count {cleanup['count']} but {len(procs)} processes listed", "ledger")
    started_labels = [label for label, _ in plan[:started]] + [r["label"] for r in instr]
    workers = {}
    keys = set()
    for n, p in enumerate(procs):
        if not shaped(check, CLEANUP, p, PROC_KEYS, f"processes[{n}]"):
            return None
        preflight = p["run"] in PREFLIGHT_RUNS and p["role"] in ("preflight", "descendant")
        if p["run"] not in started_labels and not preflight:
            check.fail(CLEANUP, f"processes[{n}] belongs to {short(p['run'])}, not a started run", "ledger")
        if (p["pid"], p["create_time"]) in keys:
            check.fail(CLEANUP, f"processes[{n}]: pid {p['pid']} listed twice", "ledger")
        keys.add((p["pid"], p["create_time"]))
        if ABSENT_STATES.get(p["verified"]) is not p["absent"]:
            check.fail(CLEANUP, f"processes[{n}]: absent {p['absent']} but verified {short(p['verified'])}", "ledger")
        if p["role"] == "worker":
            workers.setdefault(p["run"], []).append(p)
        elif p["role"] not in ("descendant", "preflight"):
            check.fail(CLEANUP, f"processes[{n}]: role {short(p['role'])}", "ledger")
    if cleanup["all_absent"] != all(p["absent"] for p in procs):
        check.fail(CLEANUP, "all_absent contradicts the process list", "ledger")
    worker_pids = [p["pid"] for ps in workers.values() for p in ps]
    if len(set(worker_pids)) != len(worker_pids):
        check.fail(CLEANUP, "two workers share a pid", "ledger")
    for record in runs + instr:
        ws = workers.get(record["label"], [])
        if len(ws) != 1:
            check.fail(CLEANUP, f"{len(ws)} worker processes for run {record['label']}, expected exactly 1", "ledger")
        elif ws[0]["pid"] != record["pid"]:
            check.fail(run_path(record["label"]), f"pid {record['pid']}, the ledger's worker is {ws[0]['pid']}",
                       "ledger")
        elif abs(ws[0]["create_time"] - record["process"]["started_at"]) > CREATE_TOL_S:
            check.fail(CLEANUP, f"run {record['label']}'s worker was created at {ws[0]['create_time']:.6g}, not "
                                f"when its process started ({record['process']['started_at']:.6g})", "ledger")
        elif ws[0]["checked_at"] < record["process"]["ended_at"] - CLOCK_TOL_S:
            check.fail(CLEANUP, f"run {record['label']}'s worker verified absent before its process ended", "ledger")
    # absence is verified at the end of the campaign, after each process was created
    for n, p in enumerate(procs):
        if not (p["create_time"] - CREATE_TOL_S <= p["checked_at"] and
                runner["started_at"] - CLOCK_TOL_S <= p["checked_at"] <= runner["ended_at"] + CLOCK_TOL_S):
            check.fail(CLEANUP, f"processes[{n}] checked at {p['checked_at']:.6g}, outside its life and the "
                                "runner's span", "ledger")

    # plan: every ok run measured the same items, each with the same field names
    ok_runs = [r for r in runs if r["status"] == "ok"]
    for r in ok_runs[1:]:
        if [(it["id"], sorted(it["fields"]) if it["error"] is None else None) for it in r["items"]] != \
                [(it["id"], sorted(it["fields"]) if it["error"] is None else None) for it in ok_runs[0]["items"]]:
            check.fail(run_path(r["label"]), f"its item ids or field names differ from {ok_runs[0]['label']}'s (every "
                                             "run measures the campaign's items)", "plan")

    # arrays: every stored array is referenced
    referenced = {f["digest"] for r in runs for it in r["items"] for f in it["fields"].values()}
    for digest in sorted(stored - referenced):
        check.fail(f"data/arrays/{digest}{ARRAY_SUFFIX}", "stored but no run record references it", "arrays")

    # identity across receipts
    for variant in ("base", "candidate"):
        rev = docs["revisions"].get(variant) if isinstance(docs["revisions"], dict) else None
        if not isinstance(rev, dict) or rev.get("sha") != campaign["revisions"][variant]["sha"]:
            check.fail(REVISIONS, f"{variant} SHA differs from campaign.json's", "identity")
    env = docs["environment"]
    if isinstance(env, dict) and is_int(env.get("cores")) and is_int(env.get("physical_cores")) \
            and not 1 <= env["physical_cores"] <= env["cores"]:
        check.fail(ENVIRONMENT, f"physical_cores {env['physical_cores']} outside 1..cores ({env['cores']})", "physics")
    for variant in ("base", "candidate"):
        rev = docs["revisions"].get(variant) if isinstance(docs["revisions"], dict) else None
        if isinstance(rev, dict) and rev.get("rev") != campaign["revisions"][variant]["rev"]:
            check.fail(REVISIONS, f"{variant} rev differs from campaign.json's", "identity")
    cores = {r["machine"].get("cores") for r in runs if r["status"] == "ok" and isinstance(r["machine"], dict)}
    if isinstance(env, dict) and cores and cores != {env.get("cores")}:
        check.fail(ENVIRONMENT, f"cores {short(env.get('cores'))}, the run records say {short(sorted(cores, key=str))}",
                   "identity")
    campaign_timeout = campaign["timeouts"].get("campaign_s") if isinstance(campaign["timeouts"], dict) else None
    if is_number(campaign_timeout) and runner["ended_at"] - runner["started_at"] > timeout_bound(campaign_timeout):
        check.fail(RUNNER, f"the campaign ran {runner['ended_at'] - runner['started_at']:.6g} s, past its timeout of "
                           f"{campaign_timeout} s", "physics")
    if runner["ended_at"] > time.time() + FUTURE_TOL_S:
        check.fail(RUNNER, "ended after now: the bundle's clocks are ahead of this machine's", "physics")
    # sealed the day the runner ended (a local date: a day either way for the time zone)
    bagged = epoch_of(check.bag_info.get("Bagging-Date"))
    if bagged is None or not (runner["ended_at"] - 2 * 86400 <= bagged <= runner["ended_at"] + 86400) \
            or bagged > time.time() + 86400:
        check.fail(BAG_INFO, f"Bagging-Date {short(check.bag_info.get('Bagging-Date'))} is not the date the "
                             "runner ended", "physics")
    origins = {}
    for r in runs:
        if r["status"] != "ok" or not isinstance(r.get("imported_from"), dict):
            continue
        for name, where in (r["imported_from"].get("stages") or {}).items():
            if isinstance(where, str) and where.startswith("tree:") and unsafe_path(where[5:]):
                check.fail(run_path(r["label"]), f"stage {name} imported from {short(where)}, not a path in the "
                                                 "revision's tree", "identity")
            origins.setdefault(name, set()).add((r["variant"], where))
    for name, seen in origins.items():
        for variant in ("base", "candidate"):
            places = {w for v, w in seen if v == variant}
            if len(places) > 1:
                check.fail(CAMPAIGN_JSON, f"stage {name} imported from {len(places)} places across the {variant} "
                                          "runs", "identity")
    digests = {r["harness_source_sha256"] for r in runs + instr if r["status"] == "ok"}
    if isinstance(env, dict) and digests and digests != {env.get("harness_source_sha256")}:
        check.fail(ENVIRONMENT, "harness_source_sha256 differs from the run records'", "identity")
    workload = None if legacy else check_workload(check, campaign, runs + instr)

    # builds: a receipt exactly when the campaign has build commands, for both revisions
    if campaign["build"]:
        builds = load_json(check, BUILDS)
        if builds is not None and (not isinstance(builds, dict) or builds.get("schema") != SCHEMAS["builds"]
                                   or set(builds) != {"schema", "base", "candidate"}):
            check.fail(BUILDS, "not a builds receipt for base and candidate", "parsing")
    elif BUILDS in check.openable:
        check.fail(BUILDS, "present although the campaign has no build commands", "files")

    # golden: present exactly when the campaign names one, and the one it pins
    golden = None
    if campaign["golden"] is not None:
        golden = load_json(check, GOLDEN)
        if golden is not None:
            if not isinstance(golden, dict) or not isinstance(golden.get("items"), dict):
                check.fail(GOLDEN, "has no 'items' mapping", "parsing")
                return None
            pinned = campaign["golden_sha256"]
            if pinned is not None and check.sha256(GOLDEN) != pinned:
                check.fail(GOLDEN, "its SHA-256 is not the one campaign.json pins (golden_sha256)", "identity")
    elif GOLDEN in check.openable:
        check.fail(GOLDEN, "present although the campaign names no golden file", "files")

    # noise floor: present exactly when the campaign pins one, the one it pins, of this campaign
    if (campaign["noise_floor"] is None) != (campaign["noise_floor_sha256"] is None):
        check.fail(CAMPAIGN_JSON, "noise_floor and noise_floor_sha256: both null or both set", "identity")
    floor = None
    if campaign["noise_floor_sha256"] is not None:
        floor = load_json(check, NOISE_FLOOR)
        if floor is not None:
            if not shaped(check, NOISE_FLOOR, floor, NOISE_FLOOR_KEYS, "noise floor", "noise_floor"):
                return None
            if not 0 <= floor["floor"] <= 0.5:
                check.fail(NOISE_FLOOR, f"floor {short(floor['floor'])} outside 0..0.5", "parsing")
                return None
            if check.sha256(NOISE_FLOOR) != campaign["noise_floor_sha256"]:
                check.fail(NOISE_FLOOR, "its SHA-256 is not the one campaign.json pins (noise_floor_sha256)",
                           "identity")
            if floor["campaign"] != campaign["name"]:
                check.fail(NOISE_FLOOR, f"calibrates campaign {short(floor['campaign'])}, not this one", "identity")
    elif NOISE_FLOOR in check.openable:
        check.fail(NOISE_FLOOR, "present although the campaign pins no noise floor", "files")

    if REPRODUCTION in check.openable:
        check_reproduction(check, load_json(check, REPRODUCTION), campaign, claimed)

    # bag-info agrees with the payload
    info = check.bag_info
    want = {"External-Identifier": campaign["name"], "Abba-Status": claimed.get("status"),
            "Abba-Base-SHA": campaign["revisions"]["base"]["sha"],
            "Abba-Candidate-SHA": campaign["revisions"]["candidate"]["sha"]}
    for key, value in want.items():
        if info.get(key) != value:
            check.fail(BAG_INFO, f"{key} {short(info.get(key))}, the payload says {short(value)}", "bag-info")
    return {**docs, "runs": runs, "golden": golden, "noise_floor": floor, "instructions": instr,
            "workload": workload}


def check_workload(check, campaign, runs):
    """workload.json against the stored files under data/workload/ (names, sizes, SHA-256s,
    none extra or missing) and its digest against the listing and every ok run's digest of
    the folder it imported from. Returns the receipt (None when unusable: its shape or a row's)."""
    receipt = load_json(check, WORKLOAD, required=False)
    if receipt is None or not shaped(check, WORKLOAD, receipt, WORKLOAD_KEYS, "workload receipt", "workload"):
        return None
    files = receipt["files"]
    if len(files) > MAX_WORKLOAD_FILES:
        check.fail(WORKLOAD, f"{len(files)} files, over the {MAX_WORKLOAD_FILES} a workload folder may hold", "files")
        return None
    listed, previous, total = set(), None, 0
    for n, row in enumerate(files):
        if not shaped(check, WORKLOAD, row, WORKLOAD_FILE_KEYS, f"files[{n}]"):
            return None
        rel, problem = WORKLOAD_DIR + row["path"], unsafe_path(row["path"])
        if problem:
            check.fail(WORKLOAD, f"files[{n}]: unsafe path {ascii(row['path'])} ({problem})", "files")
            return None
        if previous is not None and row["path"].encode() <= previous.encode():
            check.fail(WORKLOAD, f"files[{n}]: {show(row['path'])} after {show(previous)} (listed once each, sorted "
                                 "by path)", "files")
        previous = row["path"]
        listed.add(rel)
        total += row["size"] if is_int(row["size"]) else 0
        if rel not in check.openable:
            check.fail(WORKLOAD, f"files[{n}]: {show(row['path'])} is not stored under {WORKLOAD_DIR}", "files")
            continue
        size = os.lstat(check.path(rel)).st_size
        if row["size"] != size:
            check.fail(rel, f"{size} bytes, workload.json says {short(row['size'])}", "files")
        elif check.sha256(rel) != row["sha256"]:
            check.fail(rel, f"its SHA-256 is not the one workload.json lists", "files")
    if total > MAX_WORKLOAD_BYTES:
        check.fail(WORKLOAD, f"{total} bytes of files, over the {MAX_WORKLOAD_BYTES} a workload folder may hold",
                   "files")
    for rel in sorted(r for r in check.openable if r.startswith(WORKLOAD_DIR) and r not in listed):
        check.fail(rel, "stored under data/workload/ but not listed in workload.json", "files")
    recorded = campaign["workload"].get("path") if isinstance(campaign["workload"], dict) else None
    if receipt["path"] != recorded:
        check.fail(WORKLOAD, f"path {short(receipt['path'])}, campaign.json's workload.path is {short(recorded)}",
                   "identity")
    listing = "".join(f"{row['sha256']}  {row['path']}\n" for row in files)
    want = hashlib.sha256(listing.encode()).hexdigest() if receipt["path"] is not None else None
    if receipt["digest"] != want or (receipt["path"] is None and files):
        check.fail(WORKLOAD, f"digest {short(receipt['digest'])}, the files listed give {short(want)}", "identity")
    seen = {r["workload_sha256"] for r in runs if r["status"] == "ok"}
    if seen - {receipt["digest"]}:
        check.fail(WORKLOAD, f"digest {short(receipt['digest'])}, but the workers imported from a folder with "
                             f"digest {short(sorted(seen - {receipt['digest']}, key=str)[0])} (the folder changed "
                             "during the campaign, or the receipt is not its)", "identity")
    return receipt


def check_reproduction(check, receipt, campaign, claimed):
    """The optional receipt of `harness reproduce`: its shape, the campaign it names, and its
    own side of the timing, which must be this bundle's claimed ratio and interval."""
    if receipt is None or not shaped(check, REPRODUCTION, receipt, REPRODUCTION_KEYS, "reproduction receipt",
                                     "reproduction"):
        return
    digest = receipt["original"].get("digest")
    if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= HEX):
        check.fail(REPRODUCTION, f"original digest {short(digest)} is not a SHA-256", "parsing")
    if receipt["campaign"] != campaign["name"]:
        check.fail(REPRODUCTION, f"campaign {short(receipt['campaign'])}, this bundle runs {short(campaign['name'])}",
                   "identity")
    stats = claimed.get("stats") if isinstance(claimed.get("stats"), dict) else {}
    paired = stats.get("paired") if isinstance(stats.get("paired"), dict) else {}
    mine = receipt["timing"].get("reproduction") if isinstance(receipt["timing"].get("reproduction"), dict) else {}
    for key, name in (("ratio", "geomean_ratio"), ("ci95", "ci95")):
        if mine.get(key) != paired.get(name):
            check.fail(REPRODUCTION, f"timing.reproduction.{key} {short(mine.get(key))}, comparison.json has "
                                     f"{short(paired.get(name))}", "identity")


# --- comparison.json, re-derived ---------------------------------------------------------
def mean(values):
    return math.fsum(values) / len(values) if values else None


def by_id(record):
    return {item["id"]: item for item in record.get("items", [])}


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
            "errors_identical": errors_identical, "mismatch_count": len(mismatches),
            "mismatches": mismatches[:MAX_LISTED]}


def compare_golden(golden, runs):
    expected = golden.get("items", {})
    failing = []
    checked = set()
    for run in runs:
        items = by_id(run)
        bad = 0
        for item_id in sorted(items):
            want, got = expected.get(item_id), items[item_id]
            fields = {name: f["digest"] for name, f in got["fields"].items()}
            if want is None or want.get("fields", {}) != fields or want.get("error") != got["error"]:
                bad += 1
        checked |= set(items)
        if bad:
            failing.append({"run": run["label"], "items_differing": bad})
    return {"checked": True, "items": len(expected), "items_checked": len(checked & set(expected)),
            "runs": len(runs), "identical": not failing, "failing": failing}


def derive(campaign, runs, runner, cleanup, golden, schema=None, instr=(), workload=None):
    """comparison.json without `stats` and without `parity.divergence` values (both left to
    `derive_stats` and to harness verify); its `instructions` section is added by
    check_comparison once the stats are known."""
    ok = [r for r in runs if r["status"] == "ok"]
    base = [r for r in ok if r["variant"] == "base"]
    cand = [r for r in ok if r["variant"] == "candidate"]

    reasons = [f"{r['label']}: {r['reason']}" for r in runs if r["status"] != "ok"]
    if runner.get("reason"):
        reasons.append(runner["reason"])
    if len(runs) < len(campaign["order"]):
        reasons.append(f"only {len(runs)} of {len(campaign['order'])} runs were started")
    reasons += [f"{r['label']}: {r['reason']}" for r in instr if r["status"] != "ok"]
    if len({r.get("harness_source_sha256") for r in ok + [r for r in instr if r["status"] == "ok"]}) > 1:
        reasons.append("the harness's own source changed between runs")
    if {r.get("workload_sha256") for r in ok + [r for r in instr if r["status"] == "ok"]} - {workload}:
        reasons.append("the workload folder changed during the campaign (a run's digest is not the stored one's)")
    if not cleanup.get("all_absent", False):
        alive = [str(p["pid"]) for p in cleanup.get("processes", []) if not p["absent"]]
        reasons.append(f"processes still running after the campaign: {', '.join(alive) or 'unknown'}")

    # The headline wall from timed runs (not As1, Bs1); stages and call counts from the runs
    # with wrappers; parity over every run.
    base_mean = mean([r["wall_s"] for r in base if r["label"][1:2] != "s"])
    cand_mean = mean([r["wall_s"] for r in cand if r["label"][1:2] != "s"])
    staged = [r for r in ok if instrumented(r["label"], campaign["order"])]
    staged_base = [r for r in staged if r["variant"] == "base"]
    staged_cand = [r for r in staged if r["variant"] == "candidate"]
    base_labels, cand_labels = {r["label"] for r in staged_base}, {r["label"] for r in staged_cand}
    wall = {"timer": "perf_counter", "base_mean_s": base_mean, "candidate_mean_s": cand_mean,
            "saving_s": None, "saving_pct": None, "speedup": None}
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall["saving_s"] = base_mean - cand_mean
        wall["saving_pct"] = 100.0 * (base_mean - cand_mean) / base_mean
        wall["speedup"] = base_mean / cand_mean

    modes = campaign.get("stage_calls", {})
    stages = {}
    for name in campaign.get("stages", {}):
        per_run = {r["label"]: r["stages"].get(name, {}).get("calls", 0) for r in staged}
        base_calls = {n for label, n in per_run.items() if label in base_labels}
        cand_calls = {n for label, n in per_run.items() if label in cand_labels}
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
            row[f"{variant}_installed"] = all(r.get("stages_installed", {}).get(name, True) for r in group)
        stages[name] = row

    if not base or not cand:
        parity = {"identical": False, "reference": None, "items": 0, "fields_compared": 0,
                  "fields_identical": 0, "error_returns": 0, "errors_identical": False,
                  "call_counts_identical": False, "golden": None, "mismatch_count": 0, "mismatches": [],
                  "divergence": [], "note": "no successful run of both variants to compare"}
    else:
        reference = base[0]
        parity = compare_runs(reference, [r for r in ok if r is not reference])
        common = None
        for r in staged:
            on = {n for n, installed in r.get("stages_installed", {}).items() if installed}
            common = on if common is None else common & on
        # Equal in every run, or within each variant for stages marked calls: per_variant.
        parity["call_counts_identical"] = all(
            all(len({r["stages"][n]["calls"] for r in group}) <= 1
                for group in ([staged] if modes.get(n, "equal") == "equal" else [staged_base, staged_cand]))
            for n in sorted(common or ()))
        parity["golden"] = compare_golden(golden, ok) if golden is not None else None
        parity["divergence"] = [] if not parity["mismatches"] else None  # None: not re-derived
        parity["identical"] = (parity["mismatch_count"] == 0 and parity["errors_identical"]
                               and parity["fields_compared"] == parity["fields_identical"]
                               and parity["call_counts_identical"]
                               and (parity["golden"] is None or parity["golden"]["identical"]))

    return {
        "schema": schema or SCHEMAS["comparison"],
        "campaign": campaign["name"],
        "status": "complete" if not reasons else "failed",
        "reason": "; ".join(reasons) or None,
        "order": campaign["order"],
        "runs": [{"label": r["label"], "variant": r["variant"], "sha": r["sha"], "wall_s": r.get("wall_s"),
                  "exit_code": r["exit_code"], "status": r["status"]} for r in runs],
        "wall": wall,
        "stages": stages,
        "parity": parity,
    }


# --- Student's t, standard library only (harness/stats.py uses these same functions) ------
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
    """The p-quantile (p > 0.5) of Student's t: bisection on t_cdf to the last bit, so that
    every machine gets the same float."""
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


# --- stats, re-derived without numpy (the bootstrap interval is taken as claimed) ----------
ALPHA = 0.05


def sig10(x):
    """The harness keeps 10 significant digits of every stats float."""
    if x is None or not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.9e}")


def u_test(x, y):
    """Two-sided Mann-Whitney U by exact counting of rank-sum arrangements (doubled mid-ranks,
    a subset-sum table), or the normal approximation where the harness's rule says so."""
    n1, n2 = len(x), len(y)
    out = {"u": None, "p": None, "method": None, "n_base": n1, "n_candidate": n2, "min_p": None,
           "enough": False, "warning": None}
    if not n1 or not n2:
        out["warning"] = "no U test: a variant has no ok run"
        return out
    values = [float(v) for v in x + y]
    ordered = sorted(values)
    rank2 = {}  # doubled mid-rank of each distinct value
    for v, group in itertools.groupby(ordered):
        first = ordered.index(v)
        size = len(list(group))
        rank2[v] = 2 * first + size + 1
    r2 = [rank2[v] for v in values]
    nn = n1 * n2
    u2 = sum(r2[:n1]) - n1 * (n1 + 1)  # 2U
    total = math.comb(n1 + n2, n1)
    ties = len(rank2) < len(values)
    exact = (max(n1, n2) <= 50) if not ties else total <= 50_000
    if exact:
        table = [dict() for _ in range(n1 + 1)]  # table[k][s]: subsets of k ranks with doubled sum s
        table[0][0] = 1
        for r in r2:
            for k in range(n1 - 1, -1, -1):
                for s, c in table[k].items():
                    table[k + 1][s + r] = table[k + 1].get(s + r, 0) + c
        d = abs(u2 - nn)
        hits = sum(c for s, c in table[n1].items() if abs(s - n1 * (n1 + 1) - nn) >= d)
        p, method = min(1.0, hits / total), "exact"
    else:
        n = n1 + n2
        tie_term = math.fsum(t ** 3 - t for t in (values.count(v) for v in rank2))
        var = nn / 12.0 * ((n + 1) - tie_term / (n * (n - 1)))
        z = (abs(u2 - nn) / 2.0 - 0.5) / math.sqrt(var) if var > 0 else 0.0
        p, method = (1.0 if z <= 0 else min(1.0, math.erfc(z / math.sqrt(2.0)))), "normal"
    min_p = min(1.0, 2.0 / total)
    out.update(u=sig10(u2 / 2.0), p=sig10(p), method=method, min_p=sig10(min_p), enough=min_p < ALPHA)
    if not out["enough"]:
        need = 2
        while 2.0 / math.comb(2 * need, need) >= ALPHA:
            need += 1
        out["warning"] = (f"too few runs to conclude: with {n1} base and {n2} candidate runs the smallest "
                          f"possible two-sided p is {min_p:.3f}; at least {need} runs of each variant are "
                          f"needed for p < {ALPHA}")
    return out


def item_means(ok, key):
    """{item: (mean base, mean candidate)} over items usable in every ok run, and the count left out."""
    maps = [(r["variant"], by_id(r)) for r in ok]
    ids = sorted(set().union(*(set(m) for _, m in maps))) if maps else []
    table, dropped = {}, 0
    for item_id in ids:
        vals = {"base": [], "candidate": []}
        for variant, m in maps:
            it = m.get(item_id)
            if it is None or it["error"] or not (is_number(it.get(key)) and it[key] > 0):
                break
            vals[variant].append(float(it[key]))
        else:
            if vals["base"] and vals["candidate"]:
                table[item_id] = (mean(vals["base"]), mean(vals["candidate"]))
                continue
        dropped += 1
    return table, dropped


def geomean(pairs):
    logs = [math.log(c / b) for b, c in pairs]
    return math.exp(math.fsum(logs) / len(logs))


def verdict_rule(lo, hi, run_ratio, t, what, claim=None):
    """harness/verdict.py decide: the band t, and a wider band a claim must clear (load, drift)."""
    band = f"[{1 - t:.4f}, {1 + t:.4f}]"
    ci = f"95% CI [{lo:.4f}, {hi:.4f}] of {what}"
    if lo >= 1 - t and hi <= 1 + t:
        return "equal", f"{ci} lies inside the equal band {band}"
    if hi < 1 - t:
        verdict, reason = "improved", f"{ci} lies below the equal band {band}"
    elif lo > 1 + t:
        verdict, reason = "regressed", f"{ci} lies above the equal band {band}"
    else:
        return "inconclusive", f"{ci} straddles an edge of the equal band {band}"
    if (verdict == "improved" and run_ratio > 1 + t) or (verdict == "regressed" and run_ratio < 1 - t):
        return "inconclusive", (f"{reason}, but the run-level ratio of mean walls {run_ratio:.4f} lies on "
                                "the other side of the band")
    if claim is not None and claim > t and ((verdict == "improved" and hi >= 1 - claim)
                                            or (verdict == "regressed" and lo <= 1 + claim)):
        return "inconclusive", (f"{reason}, but measured under load or drift a claim must clear "
                                f"[{1 - claim:.4f}, {1 + claim:.4f}], and it does not")
    return verdict, reason


MIN_ROUNDS = 5  # harness/analysis.py: fewer rounds give no claim
PER_ITEM_SHOWN = 10


def t_ratio(logs):
    """(ratio, [lo, hi] or None, sd, q) of per-round log ratios: the 20%-trimmed mean and its
    Tukey-McLaughlin 95% interval (winsorized variance, t with kept - 1 degrees of freedom)."""
    x = sorted(logs)
    n = len(x)
    cut = int(0.2 * n)
    kept = x[cut:n - cut]
    m = math.fsum(kept) / len(kept)
    if len(kept) < 2:
        return sig10(math.exp(m)), None, None, None
    w = [x[cut]] * cut + kept + [x[n - cut - 1]] * cut
    wm = math.fsum(w) / n
    var_w = math.fsum((v - wm) ** 2 for v in w) / (n - 1)
    half = t_quantile(0.975, len(kept) - 1) * math.sqrt((n - 1) * var_w / (len(kept) * (len(kept) - 1)))
    return (sig10(math.exp(m)), [sig10(math.exp(m - half)), sig10(math.exp(m + half))], sig10(math.sqrt(var_w)),
            sig10(t_quantile(0.975, len(kept) - 1)))


def derive_stats(runs, threshold, floor):
    """comparison/v3 `stats` in full, from the run records (harness/analysis.py is the
    harness's own spelling; this one is written apart from it)."""
    usable = [r for r in runs if r["status"] == "ok" and is_number(r["wall_s"]) and r["wall_s"] > 0]
    warnings = []
    excluded = [r["label"] for r in runs if r not in usable]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")
    ok = [r for r in usable if r["label"][1:2] != "s"]  # stage runs (As1, Bs1) stay out of the headline
    band = sig10(max(float(threshold), floor or 0.0))
    labels = {r["label"]: r for r in ok}
    pairs = [(r, labels["B" + r["label"][1:]]) for r in ok if r["variant"] == "base" and "B" + r["label"][1:] in labels]
    paired_labels = {r["label"] for pair in pairs for r in pair}
    unpaired = [r["label"] for r in ok if r["label"] not in paired_labels]
    overloaded = []  # PSI stall over the timed loop above 10% of its wall, else load average above the cores
    for r in ok:
        m = r.get("machine") or {}
        if is_number(m.get("cpu_stall_s")):
            if m["cpu_stall_s"] > 0.10 * r["wall_s"] + 0.005:  # + a tick: PSI totals settle in ticks
                overloaded.append(r["label"])
            continue
        loads = [v[0] for v in (m.get("loadavg_before"), m.get("loadavg_after")) if isinstance(v, list) and v]
        if is_int(m.get("cores")) and loads and max(loads) > m["cores"]:
            overloaded.append(r["label"])
    out = {"method": "paired rounds, 20%-trimmed Tukey-McLaughlin t interval over per-round log ratios",
           "threshold": sig10(float(threshold)),
           "floor": sig10(floor), "band": band,
           "rounds": {"n": len(pairs), "min": MIN_ROUNDS, "pairs": [[a["label"], b["label"]] for a, b in pairs],
                      "unpaired": unpaired, "log_ratios": [], "sd_log": None, "t_quantile": None,
                      "typical_deviation": None},
           "paired": {"metric": "item wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None, "ci95": None,
                      "run_ratio": None, "cpu": None},
           "claim_band": band, "per_item": None, "drift": None, "load": {"overloaded": overloaded},
           "verdict": "inconclusive", "verdict_reason": "", "warnings": warnings}
    # A stage within 10x of the wrapper's own cost per call (as the runs measured it, else 1.1 us)
    costs = [r["machine"]["stage_wrapper_s"] for r in usable
             if isinstance(r.get("machine"), dict) and is_number(r["machine"].get("stage_wrapper_s"))]
    cost = statistics.median(costs) if costs else 1.1e-6
    for name in sorted({n for r in usable for n in r.get("stages") or {}}):
        per_call = [r["stages"][name]["self_cpu_s"] / r["stages"][name]["calls"] for r in usable
                    if name in (r.get("stages") or {}) and r["stages"][name].get("calls")]
        if per_call and statistics.median(per_call) < 10 * cost:
            warnings.append(f"stage {name}: {1e6 * statistics.median(per_call):.2f} us self CPU per call, within "
                            f"10x of the stage wrapper's own {1e6 * cost:.2f} us "
                            f"({'measured in the runs' if costs else 'typical'}): instrumentation moves its figures")
    wrapped = [r["label"] for r in ok if any((r.get("stages_installed") or {}).values())]
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

    def usable(key):
        maps = [by_id(r) for r in in_pairs]
        ids = sorted(set().union(*(set(m) for m in maps)))
        good = [i for i in ids if all(i in m and not m[i]["error"] and is_number(m[i][key]) and m[i][key] > 0
                                      for m in maps)]
        return good, len(ids) - len(good)

    def logs_of(items, key):
        return [[math.log(by_id(b)[i][key] / by_id(a)[i][key]) for i in items] if items
                else [math.log(b["wall_s"] / a["wall_s"])] for a, b in pairs]

    items, dropped = usable("wall_s")
    logs = logs_of(items, "wall_s")
    d = [math.fsum(row) / len(row) for row in logs]
    ratio, ci, sd, q = t_ratio(d)
    run_ratio = sig10(mean([b["wall_s"] for _, b in pairs]) / mean([a["wall_s"] for a, _ in pairs]))
    paired = out["paired"]
    paired.update(items=len(items), items_excluded=dropped, geomean_ratio=ratio, ci95=ci, run_ratio=run_ratio)
    center = math.log(ratio)
    deviation = sig10(1.0 - math.exp(-statistics.median([abs(v - center) for v in d])))  # in log space
    out["rounds"].update(log_ratios=[sig10(v) for v in d], sd_log=sd, t_quantile=q, typical_deviation=deviation)
    if items:
        if dropped:
            warnings.append(f"{dropped} item(s) left out of the paired comparison "
                            "(error or no positive wall_s in some ok run)")
        citems, _ = usable("cpu_s")
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
             "max_abs_drift_pct": None, "flagged": False,
             "rule": ("flagged when the median per-round ratio of the later half of the rounds differs from the "
                      "earlier half's by more than 2.5 standard errors (from the median absolute deviation "
                      "within each half), by at least half the effect and by at least the threshold; a drift of both "
                      "variants' walls cancels within the shuffled rounds and is shown only")}
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
        noise = 2.5 * 1.2533 * 1.4826 * statistics.median(spread) * math.sqrt(2.0 / half)
        drift["ratio"] = {"first_rounds": [1, half], "last_rounds": [len(d) - half + 1, len(d)],
                          "first": sig10(math.exp(early)), "last": sig10(math.exp(late)),
                          "change_pct": sig10(100.0 * (math.exp(late - early) - 1.0)),
                          "noise_pct": sig10(100.0 * (math.exp(noise) - 1.0))}
        drift["max_abs_drift_pct"] = sig10(100.0 * abs(math.exp(late - early) - 1.0))
        drift["flagged"] = (abs(late - early) > noise
                            and 100.0 * abs(math.exp(late - early) - 1.0) >= max(50.0 * abs(effect),
                                                                                 100.0 * float(threshold)))
    slots = {r.get("slots") for r in ok}
    busy = [r["machine"]["process_cpu_s"] / r["wall_s"] for r in ok
            if isinstance(r.get("machine"), dict) and is_number(r["machine"].get("process_cpu_s"))
            and r["label"] not in overloaded]  # runs that had the cores to themselves
    if len(slots) == 1 and is_int(min(slots)) and min(slots) >= 2 and busy and statistics.median(busy) < 1.2:
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
    claim = band  # under load or drift a claim clears the rounds' typical deviation and the drift too
    if cautions:
        moved = abs(math.log(drift["ratio"]["last"] / drift["ratio"]["first"])) if drift["flagged"] else 0.0
        claim = sig10(max(band, deviation, 1.0 - math.exp(-moved)))
        if claim > band:
            cautions[-1] += f"; a claim must clear +-{100 * claim:.2f}%"
        warnings.extend(cautions)
    out["claim_band"] = claim
    enough = len(pairs) >= MIN_ROUNDS
    if items:
        rows = []
        for j, item in enumerate(items):
            r_j, ci_j, _, _ = t_ratio([row[j] for row in logs])
            rows.append({"id": item, "ratio": r_j, "ci95": ci_j})
        rows.sort(key=lambda row: (-row["ratio"], row["id"]))
        out["per_item"] = {
            "items": len(rows),
            "regressed": sum(1 for row in rows if enough and row["ci95"] and row["ci95"][0] > 1 + claim),
            "improved": sum(1 for row in rows if enough and row["ci95"] and row["ci95"][1] < 1 - claim),
            "worst": rows[0], "table": rows[:PER_ITEM_SHOWN], "more": max(0, len(rows) - PER_ITEM_SHOWN)}
    if not enough:
        out["verdict_reason"] = (f"only {len(pairs)} round(s) of one base and one candidate run: at least "
                                 f"{MIN_ROUNDS} are needed to estimate the run-to-run variance")
        warnings.append(f"too few rounds to conclude ({len(pairs)} of at least {MIN_ROUNDS}; `rounds: N` or "
                        "`--rounds N`)")
        return out
    out["verdict"], out["verdict_reason"] = verdict_rule(ci[0], ci[1], run_ratio, band, what, claim)
    return out


def derive_stats_v2(runs, threshold, claimed):
    """comparison/v2's `stats` (the item bootstrap of A/B/B/A bundles written before rounds),
    with both ci95 intervals copied from the claim."""
    claimed = claimed if isinstance(claimed, dict) else {}
    cpaired = claimed.get("paired") if isinstance(claimed.get("paired"), dict) else {}
    ok = [r for r in runs if r["status"] == "ok" and is_number(r["wall_s"]) and r["wall_s"] > 0]
    base = [r for r in ok if r["variant"] == "base"]
    cand = [r for r in ok if r["variant"] == "candidate"]
    seed = claimed.get("seed", 1130)
    warnings = []
    excluded = [r["label"] for r in runs if r not in ok]
    if excluded:
        warnings.append(f"runs excluded (not ok or no wall time): {', '.join(excluded)}")

    def one(group):
        if len(group) < 2:
            return None
        a, b = group[0], group[-1]
        return {"first": a["label"], "last": b["label"], "first_s": sig10(a["wall_s"]),
                "last_s": sig10(b["wall_s"]), "change_pct": sig10(100.0 * (b["wall_s"] - a["wall_s"]) / a["wall_s"])}

    drift = {"base": one(base), "candidate": one(cand), "effect_pct": None, "max_abs_drift_pct": None,
             "flagged": False, "rule": ("flagged when the larger |first-to-last change| of a variant "
                                        "is at least half the effect and at least the threshold")}
    if base and cand:
        b_mean, c_mean = mean([r["wall_s"] for r in base]), mean([r["wall_s"] for r in cand])
        effect = (c_mean - b_mean) / b_mean
        drift["effect_pct"] = sig10(100.0 * effect)
        changes = [abs(d["change_pct"]) for d in (drift["base"], drift["candidate"]) if d]
        if changes:
            drift["max_abs_drift_pct"] = sig10(max(changes))
            drift["flagged"] = max(changes) >= max(50.0 * abs(effect), 100.0 * threshold)
    mw = u_test([r["wall_s"] for r in base], [r["wall_s"] for r in cand])
    mw["metric"] = "run wall_s"
    if mw["warning"]:
        warnings.append(mw["warning"])
    if drift["flagged"]:
        warnings.append(f"drift: a variant changed by {drift['max_abs_drift_pct']:.2f}% from its first to its "
                        f"last run, comparable to the effect ({drift['effect_pct']:.2f}%)")
    paired = {"metric": "item wall_s", "items": 0, "items_excluded": 0, "geomean_ratio": None, "ci95": None,
              "cpu": None}
    out = {"seed": seed, "resamples": claimed.get("resamples"), "threshold": sig10(float(threshold)),
           "drift": drift, "paired": paired, "mann_whitney": mw, "verdict": "inconclusive",
           "verdict_reason": "", "warnings": warnings}
    if not base or not cand:
        out["verdict_reason"] = "no ok " + " and ".join(v for v, g in (("base", base), ("candidate", cand)) if not g) + " run"
        return out
    run_ratio = mean([r["wall_s"] for r in cand]) / mean([r["wall_s"] for r in base])
    table, dropped = item_means(ok, "wall_s")
    paired["items_excluded"] = dropped
    ci = cpaired.get("ci95")
    if table:
        paired.update(items=len(table), geomean_ratio=sig10(geomean(table.values())), ci95=ci)
        what = f"the geometric-mean item wall ratio over {len(table)} items"
        if dropped:
            warnings.append(f"{dropped} item(s) left out of the paired comparison "
                            "(error or no positive wall_s in some ok run)")
        ctable, _ = item_means(ok, "cpu_s")
        if ctable:
            ccpu = cpaired.get("cpu") if isinstance(cpaired.get("cpu"), dict) else {}
            paired["cpu"] = {"metric": "item cpu_s", "items": len(ctable),
                             "geomean_ratio": sig10(geomean(ctable.values())), "ci95": ccpu.get("ci95"),
                             "seed": seed + 1 if is_int(seed) else seed}
    else:
        paired.update(metric="run wall_s", geomean_ratio=sig10(run_ratio), ci95=ci)
        what = "the run-level ratio of mean walls (items carry no usable timings)"
        warnings.append("items carry no usable timings: the ratio and its CI fall back to run-level walls")
    if not (isinstance(ci, list) and len(ci) == 2 and all(is_number(v) for v in ci) and ci[0] <= ci[1]):
        out["verdict_reason"] = "(claimed ci95 unusable)"
        return out
    out["verdict"], out["verdict_reason"] = verdict_rule(ci[0], ci[1], run_ratio, threshold, what)
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
        if not math.isclose(want, got, rel_tol=REL_TOL, abs_tol=0.0):
            yield path, want, got
    elif want != got or type(want) is not type(got):
        yield path, want, got


def short(value):
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def instructions_section(instr, wall_verdict):
    """comparison.json `instructions` (harness/comparison.py instructions_section): per
    variant its ok counts, repeated exactly or their spread; the ratio of mean counts; a
    change beyond the spread is detected; disagreement with the wall verdict's direction."""
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
    out["ratio"], out["change_pct"] = ratio, change
    out["repeated"] = out["base"]["repeated"] and out["candidate"]["repeated"]
    out["detected"] = change is not None and change != 0 and abs(change) > spread
    out["direction"] = None if ratio is None else "fewer" if ratio < 1 else "more" if ratio > 1 else "same"
    out["disagrees"] = out["detected"] and ((wall_verdict == "improved" and ratio > 1)
                                            or (wall_verdict == "regressed" and ratio < 1))
    return out


def report_diff(check, derived, claimed):
    for path, want, got in diff(derived, claimed):
        check.fail(COMPARISON, f"{path} claims {short(got)}, the run records give {short(want)}")


def check_comparison(check, docs):
    campaign, claimed, runs = docs["campaign"], docs["claimed"], docs["runs"]
    v2 = claimed.get("schema") == LEGACY_SCHEMAS["comparison"]
    try:
        derived = derive(campaign, runs, docs["runner"], docs["cleanup"], docs["golden"],
                         LEGACY_SCHEMAS["comparison"] if v2 else None, docs["instructions"],
                         docs["workload"] and docs["workload"]["digest"])
        derived["stats"] = (derive_stats_v2(runs, campaign["threshold"], claimed.get("stats")) if v2 else
                            derive_stats(runs, campaign["threshold"],
                                         docs["noise_floor"]["floor"] if docs["noise_floor"] else None))
        if campaign.get("instructions") is not None:
            derived["instructions"] = instructions_section(docs["instructions"], derived["stats"]["verdict"])
    except Exception as exc:  # noqa: BLE001 - malformed records are findings, not crashes
        check.fail(COMPARISON, f"cannot be re-derived from the run records ({exc.__class__.__name__}: {str(exc)[:80]})")
        return
    claimed = dict(claimed)
    if derived["parity"].get("divergence") is None and isinstance(claimed.get("parity"), dict):
        derived["parity"].pop("divergence")
        claimed["parity"] = {k: v for k, v in claimed["parity"].items() if k != "divergence"}
        check.notes.append("parity.divergence not re-derived: needs the arrays' values; harness verify does it")
    report_diff(check, derived, claimed)
    check.status = claimed.get("status")


def run_path(label):
    return f"data/runs/{label}.json"


def log_path(label):
    return f"data/logs/{label}.log"


def instructions_path(label):
    return f"data/instructions/{label}.json"


def structure(root, max_array_bytes=None):
    """Layout, arrays and record rules: what both checkers share. Returns (check, docs);
    docs is None when the records cannot be re-derived from."""
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
        if docs["claimed"].get("schema") == LEGACY_SCHEMAS["comparison"]:
            check.notes.append(STATS_NOTE)
        check.notes.append(YAML_NOTE)
    return check


def main(argv):
    args = argv[1:]
    cap = None
    if len(args) == 3 and args[1] == "--max-array-bytes" and args[2].isdigit():
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
    for problem in check.problems:
        print(f"FAIL {problem}")
    if check.problems:
        print(f"{root}: {len(check.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {root}: {check.files} payload files and {check.arrays} arrays re-hashed with the standard "
          "library; record rules hold; comparison re-derived (runs, wall, stages, parity, status; stats: "
          f"the rounds' trimmed-t interval, per-item ratios, drift, load and the verdict rule; comparison/v2: "
          f"drift, Mann-Whitney U and p, geometric-mean ratios, verdict rule on the claimed interval); "
          f"status {check.status}; digest {check.digest}")
    for note in check.notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
