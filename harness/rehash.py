#!/usr/bin/env python3
"""Re-check an evidence bundle with the Python standard library alone.

    python -S harness/rehash.py BUNDLE

A reviewer who does not trust the harness (or numpy) can run this file on its own: it
imports nothing outside the standard library and nothing from the bundle, never follows a
symlink, never unpickles and never executes anything it reads. It does what
`harness verify` does, written independently on purpose (sharing code with the harness
would make it a second opinion in name only):

* layout: every payload file listed in manifest-sha256.txt, the tag files in
  tagmanifest-sha256.txt, nothing missing or extra, no symlinks or special files, no
  absolute, '..' or otherwise unsafe manifest paths, BagIt declaration and Payload-Oxum;
* every file re-hashed (SHA-256);
* every stored array re-hashed from its gzipped .npy bytes (header parsed by hand: magic, version
  1/2/3, a header dict read with ast.literal_eval only; Fortran order, object and
  structured dtypes are refused) and compared with the digest in its file name;
* every array digest a run record names is stored;
* data/comparison.json re-derived from the per-run records: runs, wall means, saving,
  speed-up, stage calls and CPU means, parity (reference = first ok base run), status and
  reason. Floats are compared with a relative tolerance of 1e-12.

The `stats` block (bootstrap, Mann-Whitney) needs numpy and is not re-derived here;
`harness verify` re-derives it.

Exit 0 intact, 1 problems (one line each, naming the file), 2 unusable input.
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
import gzip  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
import zlib  # noqa: E402

HEX = frozenset("0123456789abcdef")
TAG_FILES = ("bagit.txt", "bag-info.txt", "manifest-sha256.txt")
BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
SCHEMA = "abba-harness/comparison/v1"
ARRAY_PREFIX = b"abba-array-v1\n"
ARRAY_SUFFIX = ".npy.gz"  # gzipped .npy, named by the array digest
NPY_MAGIC = b"\x93NUMPY"
MAX_NPY_HEADER = 10000  # numpy's own default limit for header length
REL_TOL = 1e-12
MAX_LISTED = 50  # mismatches listed in comparison.json
CHUNK = 1 << 20
STATS_NOTE = "stats not re-derived: needs numpy; harness verify does it"
DTYPE_RE = re.compile(r"^([<>|=]?)([biufc])(\d+)$")
SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8, 16), "c": (8, 16, 32)}


class Unusable(Exception):
    pass


def show(rel):
    """A path as printed: plain when printable, escaped otherwise."""
    return rel if rel.isprintable() else ascii(rel)


class Check:
    def __init__(self, root):
        self.root = root
        self.problems = []
        self.notes = []
        self.present = set()
        self.files = 0
        self.arrays = 0
        self.status = None
        self.digest = None

    def fail(self, rel, msg):
        self.problems.append(f"{show(rel)}: {msg}")

    def path(self, rel):
        return os.path.join(self.root, *rel.split("/"))

    # --- reading, never through a symlink -------------------------------------------
    def open_regular(self, rel):
        """A file object for a regular file found by the walk; symlinks are refused."""
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(self.path(rel), flags)
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise OSError(f"{rel}: not a regular file")
        return os.fdopen(fd, "rb")

    def read(self, rel):
        with self.open_regular(rel) as fh:
            return fh.read()

    def sha256(self, rel):
        h = hashlib.sha256()
        with self.open_regular(rel) as fh:
            while True:
                chunk = fh.read(CHUNK)
                if not chunk:
                    break
                h.update(chunk)
        return h.hexdigest()


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
    """Every regular file under the root as a '/'-separated relative path. Symlinks are
    reported and never followed; other special files are reported."""
    root = check.root
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            try:
                st = os.lstat(full)
            except OSError as exc:
                check.fail(rel, f"cannot be examined ({exc.__class__.__name__})")
                continue
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = os.readlink(full)
                except OSError:
                    target = "?"
                check.fail(rel, f"is a symlink (-> {show(target)}); bundles hold regular files only")
            elif stat.S_ISREG(st.st_mode):
                check.present.add(rel)
            elif not stat.S_ISDIR(st.st_mode):
                check.fail(rel, "not a regular file")
        # os.walk(followlinks=False) does not descend into symlinked folders; reported above.


def text_of(check, rel):
    if rel not in check.present:
        return ""
    try:
        return check.read(rel).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        check.fail(rel, f"unreadable ({exc.__class__.__name__})")
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
        rows[rel] = digest
    return rows


def check_hash(check, rel, digest, manifest):
    if rel not in check.present:
        check.fail(rel, f"missing (listed in {manifest})")
        return
    try:
        actual = check.sha256(rel)
    except OSError as exc:
        check.fail(rel, f"unreadable ({exc.__class__.__name__})")
        return
    if actual != digest:
        check.fail(rel, f"hash mismatch: sha256 {actual[:16]}..., {manifest} says {digest[:16]}...")


def check_layout(check):
    root = check.root
    if not os.path.isdir(root) or os.path.islink(root):
        raise Unusable(f"{root}: not a directory")
    walk(check)
    present = check.present
    if "tagmanifest-sha256.txt" not in present:
        if any(p.startswith("data/") for p in present):
            check.fail("tagmanifest-sha256.txt", "missing: incomplete, the bundle was never sealed")
            return None
        raise Unusable(f"{root}: not an evidence bundle (no tagmanifest-sha256.txt, no data/)")
    check.digest = check.sha256("tagmanifest-sha256.txt")

    tag_rows = parse_manifest(check, "tagmanifest-sha256.txt")
    for rel in TAG_FILES:
        if rel not in tag_rows:
            check.fail("tagmanifest-sha256.txt", f"{rel} is not listed")
    for rel, digest in tag_rows.items():
        if rel not in TAG_FILES:
            check.fail("tagmanifest-sha256.txt", f"lists unexpected file {show(rel)}")
        check_hash(check, rel, digest, "tagmanifest-sha256.txt")
    if "bagit.txt" in present:
        try:
            if check.read("bagit.txt") != BAGIT_TXT:
                check.fail("bagit.txt", "not the BagIt 1.0 declaration")
        except OSError as exc:
            check.fail("bagit.txt", f"unreadable ({exc.__class__.__name__})")

    rows = parse_manifest(check, "manifest-sha256.txt")
    for rel, digest in rows.items():
        if not rel.startswith("data/"):
            check.fail("manifest-sha256.txt", f"{show(rel)} is outside data/")
        check_hash(check, rel, digest, "manifest-sha256.txt")
    expected = set(rows) | set(TAG_FILES) | {"tagmanifest-sha256.txt"}
    for rel in sorted(present - expected):
        check.fail(rel, "extra file, not in any manifest")
    check.files = len(rows)

    info = text_of(check, "bag-info.txt")
    for line in info.splitlines():
        if line.startswith("Payload-Oxum:"):
            want = line.split(":", 1)[1].strip()
            listed = [rel for rel in rows if rel in present]
            size = sum(os.lstat(check.path(rel)).st_size for rel in listed)
            got = f"{size}.{len(listed)}"
            if want != got:
                check.fail("bag-info.txt", f"Payload-Oxum {want} but the payload is {got}")
    return rows


# --- arrays ------------------------------------------------------------------------------
def npy_header(fh):
    """(dtype string as numpy's dtype.str gives it, shape, itemsize, swap) from an open
    .npy file positioned at 0; raises ValueError for anything not a plain array."""
    magic = fh.read(8)
    if len(magic) != 8 or magic[:6] != NPY_MAGIC:
        raise ValueError("not a .npy file (bad magic)")
    major, minor = magic[6], magic[7]
    if major == 1:
        raw_len = fh.read(2)
        size = int.from_bytes(raw_len, "little") if len(raw_len) == 2 else -1
    elif major in (2, 3):
        raw_len = fh.read(4)
        size = int.from_bytes(raw_len, "little") if len(raw_len) == 4 else -1
    else:
        raise ValueError(f"unsupported .npy version {major}.{minor}")
    if minor != 0:
        raise ValueError(f"unsupported .npy version {major}.{minor}")
    if size < 0:
        raise ValueError("truncated header length")
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
    if not isinstance(shape, tuple) or not all(type(n) is int and n >= 0 for n in shape):
        raise ValueError(f"bad shape {shape!r}")
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


def array_digest(check, rel):
    """sha256(prefix + {"dtype", "shape"} + newline + C-order little-endian bytes)."""
    with check.open_regular(rel) as raw, gzip.GzipFile(fileobj=raw, mode="rb") as fh:
        descr, shape, itemsize, swap, kind = npy_header(fh)
        count = 1
        for n in shape:
            count *= n
        want = count * itemsize
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
                rest = fh.read(itemsize - len(chunk) % itemsize)
                chunk += rest
            got += len(chunk)
            h.update(_byteswap(chunk, itemsize, kind) if swap else chunk)
        if got != want:
            raise ValueError(f"data is {got} bytes, shape {shape} of {descr} needs {want}")
        if fh.read(1):
            raise ValueError(f"trailing bytes after the {want} data bytes")
    return h.hexdigest()


def check_arrays(check):
    stored = set()
    for rel in sorted(p for p in check.present if p.startswith("data/arrays/")):
        name = rel.rsplit("/", 1)[1]
        digest = name[: -len(ARRAY_SUFFIX)] if name.endswith(ARRAY_SUFFIX) else ""
        if len(digest) != 64 or not set(digest) <= HEX or rel.count("/") != 2:
            check.fail(rel, f"not a stored array name (data/arrays/<sha256>{ARRAY_SUFFIX})")
            continue
        try:
            actual = array_digest(check, rel)
        except (OSError, ValueError, EOFError, zlib.error) as exc:
            check.fail(rel, f"unreadable array ({exc})")
            continue
        if actual != digest:
            check.fail(rel, f"array content hashes to {actual[:16]}..., not the digest in its name")
        stored.add(digest)
        check.arrays += 1
    return stored


# --- comparison.json, re-derived ---------------------------------------------------------
def load_json(check, rel):
    if rel not in check.present:
        check.fail(rel, "missing")
        return None
    try:
        return json.loads(check.read(rel).decode("utf-8"))
    except (OSError, ValueError) as exc:
        check.fail(rel, f"not valid JSON ({exc.__class__.__name__})")
        return None


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


def derive(campaign, runs, runner, cleanup, golden):
    """comparison.json without `stats` (numpy) and without `parity.divergence` values
    (which need the arrays' numbers); both are left out and said so."""
    ok = [r for r in runs if r["status"] == "ok"]
    base = [r for r in ok if r["variant"] == "base"]
    cand = [r for r in ok if r["variant"] == "candidate"]

    reasons = [f"{r['label']}: {r['reason']}" for r in runs if r["status"] != "ok"]
    if runner.get("reason"):
        reasons.append(runner["reason"])
    if len(runs) < len(campaign["order"]):
        reasons.append(f"only {len(runs)} of {len(campaign['order'])} runs were started")
    if len({r.get("harness_source_sha256") for r in ok}) > 1:
        reasons.append("the harness's own source changed between runs")
    if not cleanup.get("all_absent", False):
        alive = [str(p["pid"]) for p in cleanup.get("processes", []) if not p["absent"]]
        reasons.append(f"processes still running after the campaign: {', '.join(alive) or 'unknown'}")

    base_mean, cand_mean = mean([r["wall_s"] for r in base]), mean([r["wall_s"] for r in cand])
    wall = {"timer": "perf_counter", "base_mean_s": base_mean, "candidate_mean_s": cand_mean,
            "saving_s": None, "saving_pct": None, "speedup": None}
    if base_mean is not None and cand_mean is not None and cand_mean > 0:
        wall["saving_s"] = base_mean - cand_mean
        wall["saving_pct"] = 100.0 * (base_mean - cand_mean) / base_mean
        wall["speedup"] = base_mean / cand_mean

    modes = campaign.get("stage_calls", {})
    stages = {}
    for name in campaign.get("stages", {}):
        per_run = {r["label"]: r["stages"].get(name, {}).get("calls", 0) for r in ok}
        base_calls = {n for label, n in per_run.items() if label in {r["label"] for r in base}}
        cand_calls = {n for label, n in per_run.items() if label in {r["label"] for r in cand}}
        if len(set(per_run.values())) == 1:
            calls = next(iter(per_run.values()))
        elif len(base_calls) == 1 and len(cand_calls) == 1:
            calls = {"base": base_calls.pop(), "candidate": cand_calls.pop()}
        else:
            calls = per_run
        row = {"calls_per_run": calls, "calls": modes.get(name, "equal")}
        for variant, group in (("base", base), ("candidate", cand)):
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
        for r in ok:
            on = {n for n, installed in r.get("stages_installed", {}).items() if installed}
            common = on if common is None else common & on
        # Equal in every run, or within each variant for stages marked calls: per_variant.
        parity["call_counts_identical"] = all(
            all(len({r["stages"][n]["calls"] for r in group}) == 1
                for group in ([ok] if modes.get(n, "equal") == "equal" else [base, cand]))
            for n in sorted(common))
        parity["golden"] = compare_golden(golden, ok) if golden is not None else None
        parity["divergence"] = [] if not parity["mismatches"] else None  # None: not re-derived
        parity["identical"] = (parity["mismatch_count"] == 0 and parity["errors_identical"]
                               and parity["fields_compared"] == parity["fields_identical"]
                               and parity["call_counts_identical"]
                               and (parity["golden"] is None or parity["golden"]["identical"]))

    return {
        "schema": SCHEMA,
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


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def diff(want, got, path=""):
    """Key paths where the re-derived value and the claimed one differ."""
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


def check_comparison(check, stored):
    campaign = load_json(check, "data/campaign.json")
    claimed = load_json(check, "data/comparison.json")
    runner = load_json(check, "data/receipts/runner.json")
    cleanup = load_json(check, "data/receipts/cleanup.json")
    if not all(isinstance(x, dict) for x in (campaign, claimed, runner, cleanup)):
        for rel, x in (("data/campaign.json", campaign), ("data/comparison.json", claimed),
                       ("data/receipts/runner.json", runner), ("data/receipts/cleanup.json", cleanup)):
            if x is not None and not isinstance(x, dict):
                check.fail(rel, "not a JSON object")
        return
    labels = campaign.get("labels", [])
    started = runner.get("runs_started", 0)
    if not isinstance(labels, list) or type(started) is not int:
        check.fail("data/campaign.json", "labels or runs_started malformed")
        return
    runs = []
    for label in labels[:started]:
        rel = f"data/runs/{label}.json"
        record = load_json(check, rel)
        if record is None:
            return
        if not isinstance(record, dict):
            check.fail(rel, "not a JSON object")
            return
        if record.get("label") != label:
            check.fail(rel, f"record label {short(record.get('label'))} is not {label}")
        runs.append(record)
    names = {f"data/runs/{r.get('label')}.json" for r in runs}
    for rel in sorted(p for p in check.present if p.startswith("data/runs/")):
        if rel not in names:
            check.fail(rel, "a run record the campaign did not start")
    try:
        for record in runs:
            for item in record.get("items", []):
                for name, f in item.get("fields", {}).items():
                    if f.get("digest") not in stored:
                        check.fail(f"data/runs/{record.get('label')}.json",
                                   f"item {item.get('id')} field {name}: array "
                                   f"{str(f.get('digest'))[:16]}... is not stored")
    except (AttributeError, TypeError) as exc:
        check.fail("data/runs", f"malformed run record ({exc.__class__.__name__})")
        return
    golden = None
    if "data/golden.json" in check.present:
        golden = load_json(check, "data/golden.json")
    if campaign.get("golden") and golden is None:
        check.fail("data/golden.json", "missing although the campaign names a golden file")
    procs = cleanup.get("processes", [])
    try:
        if cleanup.get("all_absent") != all(p.get("absent") for p in procs):
            check.fail("data/receipts/cleanup.json", "all_absent contradicts the process list")
    except (AttributeError, TypeError):
        check.fail("data/receipts/cleanup.json", "malformed process list")
    try:
        derived = derive(campaign, runs, runner, cleanup, golden)
    except Exception as exc:  # noqa: BLE001 - malformed records are findings, not crashes
        check.fail("data/comparison.json", f"cannot be re-derived from the run records "
                                           f"({exc.__class__.__name__}: {str(exc)[:80]})")
        return
    claimed_cmp = {k: v for k, v in claimed.items() if k != "stats"}
    if "stats" not in claimed:
        check.fail("data/comparison.json", "has no stats block")
    if derived["parity"].get("divergence") is None:
        derived["parity"].pop("divergence")
        if isinstance(claimed_cmp.get("parity"), dict):
            claimed_cmp["parity"] = {k: v for k, v in claimed_cmp["parity"].items() if k != "divergence"}
        check.notes.append("parity.divergence not re-derived: needs the arrays' values; harness verify does it")
    for path, want, got in diff(derived, claimed_cmp):
        check.fail("data/comparison.json", f"{path} claims {short(got)}, the run records give {short(want)}")
    check.status = claimed.get("status")
    check.notes.append(STATS_NOTE)


def rehash(root):
    check = Check(root)
    rows = check_layout(check)
    if rows is None:
        return check
    stored = check_arrays(check)
    check_comparison(check, stored)
    return check


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print("usage: python -S rehash.py BUNDLE", file=sys.stderr)
        return 2
    root = argv[1]
    try:
        check = rehash(root)
    except Unusable as exc:
        print(f"rehash: error: {exc}", file=sys.stderr)
        return 2
    for problem in check.problems:
        print(f"FAIL {problem}")
    if check.problems:
        print(f"{root}: {len(check.problems)} problem(s); do not trust this bundle")
        return 1
    print(f"OK {root}: {check.files} payload files and {check.arrays} arrays re-hashed with the standard "
          f"library, comparison re-derived; status {check.status}; digest {check.digest}")
    for note in check.notes:
        print(f"note: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
