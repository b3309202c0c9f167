"""The evidence bundle's closed contract: every file a bundle may hold, every field of every
record with its type, bounds and the rule that binds it (or the reason it is free), the
schema ids, the limits, the statistics' policy constants and the verdict words.

Standard library only, and no import of the harness: the writer (harness/records.py), the
campaign loader (harness/plan/spec.py), both checkers (harness/rehash.py and `harness
verify`), the mutation suites (harness/selftest/) and the docs' field table all read this one
declaration. Whatever it does not declare, the checkers refuse: a file, a key at any level, a
bag-info line, a schema id of another version. The checker chooses the rules, never the bundle.

Paths inside a document: "a.b" keys, "[]" any list element, "*" any key of a map (its key
pattern, when it has one, is the field's `key`), "**" any JSON below (only where the value is
the user's own, bounded by the file's size). A rule is "<rule>: what binds it"; the first rule
named is the one that refuses any change (see RULES for which checker applies it).
"""
import functools
import json
import math
import re
import sys
import unicodedata
from collections import namedtuple
from typing import Any, Dict, Optional, Sequence, Tuple  # Python 3.9: the worker's room

FORMAT = "abba-harness/bundle/v10"  # the bundle format this contract describes (bag-info Abba-Format); v10: duets, precision

# --- schema ids: one current set; a file of any other id is refused ------------------------
SCHEMAS = {
    "job": "abba-harness/job/v3",  # runner -> worker, not part of a bundle
    "result": "abba-harness/result/v3",  # worker -> runner, not part of a bundle
    "fleet_run": "abba-harness/fleet-run/v1",  # harness fleet run: OUT/fleet.json, not part of a bundle
    "bisect": "abba-harness/bisect/v2",  # harness bisect: OUT/bisect.json beside its step bundles, not part of one
    "claim": "abba-harness/claim/v2",  # harness summary --format json: the claim for dashboards, not part of a bundle
    "run": "abba-harness/run/v9",  # v9: launch.core (launch: duet)
    "instructions": "abba-harness/instructions/v4",
    "campaign": "abba-harness/campaign/v11",  # v10: verdict.question and margin; bisect's overrides; v11: cores, precision
    "comparison": "abba-harness/comparison/v9",  # v8: the looks' design, one-sided questions, a suite's family, contradicted counts; v9: precision (looks' precise, stopped imprecise)
    "environment": "abba-harness/environment/v4",
    "revisions": "abba-harness/revisions/v3",
    "inputs": "abba-harness/inputs/v3",
    "cleanup": "abba-harness/cleanup/v4",
    "runner": "abba-harness/runner/v3",
    "builds": "abba-harness/builds/v2",
    "workload": "abba-harness/workload/v2",
    "reproduction": "abba-harness/reproduction/v2",
    # Files of the repository that a bundle copies byte for byte (pinned by SHA-256):
    "golden": "abba-harness/golden/v1",
    "noise_floor": "abba-harness/noise-floor/v1",
}
SCHEMA_PREFIX = "abba-harness/"
# Schema ids a checker still reads, of bundles an earlier harness wrote, with the top-level keys
# their records lack. "Absent" is accepted only as a whole earlier generation: every run record of
# the bundle has that id, none holds a key it lacks, and campaign.json and comparison.json lack
# what came with them (INTERFERENCE_KEYS); a record of the current id must hold every key. The
# checkers say in their output that such a bundle measured no interference.
# None today: the launch records (run/v6, campaign/v8, cleanup/v4: how each run's process was
# made, the zygotes in the ledger) came after the sequential rounds, and every committed bundle
# was re-run; an entry here re-opens exactly the generation it names.
PREVIOUS_SCHEMAS: dict = {}
INTERFERENCE_KEYS = {"campaign": "interference", "comparison": "stats.interference"}

# --- the bundle's files --------------------------------------------------------------------
BAGIT, BAG_INFO, MANIFEST, TAGMANIFEST = "bagit.txt", "bag-info.txt", "manifest-sha256.txt", "tagmanifest-sha256.txt"
TAG_FILES = (BAGIT, BAG_INFO, MANIFEST)
CAMPAIGN_YAML = "data/campaign.yaml"
CAMPAIGN_JSON = "data/campaign.json"
ENVIRONMENT = "data/environment.json"
COMPARISON = "data/comparison.json"
GOLDEN = "data/golden.json"
NOISE_FLOOR = "data/noise_floor.json"
REVISIONS = "data/receipts/revisions.json"
INPUTS = "data/receipts/inputs.json"
CLEANUP = "data/receipts/cleanup.json"
RUNNER = "data/receipts/runner.json"
BUILDS = "data/receipts/builds.json"
WORKLOAD = "data/receipts/workload.json"
REPRODUCTION = "data/receipts/reproduction.json"
WORKLOAD_DIR = "data/workload/"
ARRAY_SUFFIX = ".npy.gz"
ATTESTATION_SUFFIX = ".intoto.json"  # BUNDLE.intoto.json: a signature beside the bag, never inside it

LABEL_RE = re.compile(r"^[AB]s?[1-9][0-9]{0,2}\Z")  # A1, B1: timed runs; As1, Bs1: stage runs
INSTRUCTION_LABEL_RE = re.compile(r"^I[AB][1-9][0-9]{0,2}\Z")  # IA1: the first base instruction run
ZYGOTE_LABEL_RE = re.compile(r"^Z[AB][1-9][0-9]{0,2}\Z")  # ZA1: the base's first zygote (`launch: zygote`)
ORDER_RE = re.compile(r"^[ABab]+\Z")
HEX64_RE = re.compile(r"^[0-9a-f]{64}\Z")
GITSHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
MODULE_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")  # a dotted module name: transformers, torch.nn
STAGE_PATH_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")
ENTRY_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*\Z")
DTYPE_RE = re.compile(r"^([<>|=]?)([biufc])(\d+)$")
OXUM_RE = re.compile(r"^[0-9]{1,19}\.[0-9]{1,9}\Z")
DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
# `suite:` campaigns (docs/suites.md): an existing benchmark suite run through the harness's own
# workload entry for its kind (harness/worker/suites/). Such an item may give no outputs (a
# benchmark that returns None, or something that is not data): its record then has neither fields
# nor an error, and the run's metrics (suite.outputs) say why. Both checkers allow that for these
# entries only; every other workload's item has fields or an error.
SUITE_ENTRIES = {"asv": "harness.worker.suites.asv:setup",
                 "pytest-benchmark": "harness.worker.suites.pytest_suite:setup",
                 "pytest-codspeed": "harness.worker.suites.pytest_suite:setup"}
# The worker's module: every run is `python -m WORKER_MODULE JOB.json` (an instruction run's under
# valgrind, and both checkers hold its recorded command to that).
WORKER_MODULE = "harness.worker"


def is_suite_entry(entry) -> bool:
    """Whether a workload entry is the harness's adapter for an existing suite (SUITE_ENTRIES)."""
    return entry in SUITE_ENTRIES.values()


PREFLIGHT_RUNS = ("check:base", "check:candidate")  # the pre-flight workers' rows in the ledger
VARIANTS = {"A": "base", "B": "candidate"}
RUN_STATUSES = ("ok", "failed", "timeout")
BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
ARRAY_PREFIX = b"abba-array-v1\n"
NPY_MAGIC = b"\x93NUMPY"


def run_path(label: str) -> str:
    return f"data/runs/{label}.json"


def instructions_path(label: str) -> str:
    return f"data/instructions/{label}.json"


def log_path(label: str) -> str:
    return f"data/logs/{label}.log"


def array_path(digest: str) -> str:
    return f"data/arrays/{digest}{ARRAY_SUFFIX}"


# Every file a bundle may hold: (kind, path pattern, when it is present, the most bytes it may
# have). Nothing else may be in a bundle. The JSON kinds are the documents of FIELDS.
FILE_KINDS = (
    ("bagit", re.compile(r"^bagit\.txt\Z"), "always: the BagIt 1.0 declaration, byte for byte", len(BAGIT_TXT)),
    ("bag-info", re.compile(r"^bag-info\.txt\Z"), "always", 64 << 10),
    ("manifest", re.compile(r"^manifest-sha256\.txt\Z"), "always", 16 << 20),
    ("tagmanifest", re.compile(r"^tagmanifest-sha256\.txt\Z"), "always", 4 << 10),
    ("campaign-yaml", re.compile(r"^data/campaign\.yaml\Z"), "always: the campaign file, byte for byte", 1 << 20),
    ("campaign", re.compile(r"^data/campaign\.json\Z"), "always", 4 << 20),
    ("environment", re.compile(r"^data/environment\.json\Z"), "always", 1 << 20),
    ("comparison", re.compile(r"^data/comparison\.json\Z"), "always", 16 << 20),
    ("runner", re.compile(r"^data/receipts/runner\.json\Z"), "always", 8 << 20),
    ("cleanup", re.compile(r"^data/receipts/cleanup\.json\Z"), "always", 8 << 20),
    ("revisions", re.compile(r"^data/receipts/revisions\.json\Z"), "always", 1 << 20),
    ("inputs", re.compile(r"^data/receipts/inputs\.json\Z"), "always", 1 << 20),
    ("workload", re.compile(r"^data/receipts/workload\.json\Z"), "always", 1 << 20),
    ("builds", re.compile(r"^data/receipts/builds\.json\Z"), "exactly when the campaign has build commands", 4 << 20),
    ("golden", re.compile(r"^data/golden\.json\Z"), "exactly when the campaign pins a golden file", 16 << 20),
    ("noise_floor", re.compile(r"^data/noise_floor\.json\Z"), "exactly when the campaign pins a noise floor", 64 << 10),
    ("reproduction", re.compile(r"^data/receipts/reproduction\.json\Z"), "only in a bundle `harness reproduce` "
                                                                         "made", 4 << 20),
    ("run", re.compile(r"^data/runs/[AB]s?[1-9][0-9]{0,2}\.json\Z"), "one per started run of the order", 8 << 20),
    ("instructions", re.compile(r"^data/instructions/I[AB][1-9][0-9]{0,2}\.json\Z"),
     "one per instruction run the schedule started", 1 << 20),
    ("log", re.compile(r"^data/logs/(?:I?[AB]s?[1-9][0-9]{0,2})\.log\Z"), "one per started run", None),
    ("array", re.compile(r"^data/arrays/[0-9a-f]{64}\.npy\.gz\Z"), "one per distinct output a record names", 1 << 30),
    ("workload-file", re.compile(r"^data/workload/.+\Z"), "exactly the files workload.json lists", 16 << 20),
)
JSON_KINDS = ("campaign", "environment", "comparison", "runner", "cleanup", "revisions", "inputs", "workload",
              "builds", "golden", "noise_floor", "reproduction", "run", "instructions")


def file_kind(rel: str) -> Optional[str]:
    """The kind of a bag-relative path, or None: a file no bundle holds."""
    for kind, pattern, _when, _limit in FILE_KINDS:
        if pattern.match(rel):
            return kind
    return None


# --- limits: what a bundle may hold, and what a checker reads at the most -------------------
MAX_ROUNDS = 100
MAX_RUNS = 2 * MAX_ROUNDS + 20  # an explicit order, or rounds plus stage rounds
MAX_SEED = 2**32 - 1
MAX_SLOTS = 256
MAX_TIMEOUT_S = 7 * 24 * 3600.0
MAX_ITEMS = 10_000  # items per run: a record's size (and a checker's memory) follows from it
MAX_SUITE_NUMBER = 1_000_000  # a suite item's calls per timed item (asv's `number`)
MAX_AUTO_NUMBER = 1 << 19  # `suite.number: auto`'s most: the largest power of two within MAX_SUITE_NUMBER
MAX_FIELDS = 256  # output fields per item
MAX_SHAPE_DIMS = 32
MAX_INSTRUCTION_RUNS = 10  # per variant
MAX_PROCESSES = 10_000  # in the cleanup ledger
MAX_STAGES = 64
MAX_FILES = 100_000  # files a checker lists in a bundle before it refuses to look further
MAX_DEPTH = 8  # folders below the root (the layout uses 3; the stored workload up to 5 more)
MAX_JSON_BYTES_TOTAL = 96 << 20  # all JSON documents of a bundle together
MAX_JSON_DEPTH = 64
MAX_INT_DIGITS = 19  # JSON and YAML integers: within a signed 64-bit integer
MAX_NUMBER_CHARS = 40  # a JSON number's text (a double needs 24)
MAX_STR = 65_536  # a string, where the field declares no other bound
MAX_FILE_BYTES = 1 << 30  # any payload file, checked from its size before it is hashed
MAX_NPY_HEADER = 10_000  # numpy's own default limit for header length
DEFAULT_MAX_ARRAY_BYTES = 4 << 30  # decompressed bytes the stored arrays may declare, all together
MAX_WORKLOAD_FILES = 1000  # a workload folder holds code and small data, not the inputs (those are pinned)
MAX_WORKLOAD_BYTES = 16 << 20
MAX_WORKLOAD_DEPTH = 5
MAX_YAML_BYTES = 1 << 20  # a campaign file
LOG_HEAD_BYTES = LOG_TAIL_BYTES = 512 << 10  # a worker's output kept in the bundle: its start and its end
LOG_CUT_MARK = b"\n[abba-harness: %d bytes of this worker's output left out here]\n"  # %d: the bytes cut
MAX_ERROR_MESSAGE = 4000  # an item's recorded error message, as the worker cuts it
MAX_LISTED = 50  # mismatches listed in comparison.json
MAX_PARAMS_BYTES = 256 << 10  # workload params as JSON
# Signature checks (harness/attest, docs/signing.md): every check of an attestation is bounded
# before any crypto runs; past a bound it is refused in one line naming the bound.
MAX_ATTESTATION_BYTES = 1 << 20  # an attestation file: a few KiB; anything larger is refused unread
MAX_SIGNATURES = 8  # signatures in one DSSE envelope (one is the norm; a few co-signers at most)
MAX_KEYS_PER_SIGNATURE = 8  # trusted keys tried against one signature (those its keyid names, or any without one)
MAX_TRUST_BYTES = 1 << 20  # an allowed_signers file
MAX_TRUST_KEYS = 256  # keys (lines) in an allowed_signers file


def log_limit() -> int:
    """The most bytes a stored log may have: its head, the mark and its tail."""
    return LOG_HEAD_BYTES + LOG_TAIL_BYTES + len(LOG_CUT_MARK % 10**19)


def cut_log(data: bytes) -> Tuple[bytes, bool]:
    """A worker's output as the bundle keeps it: whole when it fits, else its head, a line
    saying how much was left out, and its tail. Returns (stored bytes, truncated)."""
    if len(data) <= LOG_HEAD_BYTES + LOG_TAIL_BYTES:
        return data, False
    cut = len(data) - LOG_HEAD_BYTES - LOG_TAIL_BYTES
    return data[:LOG_HEAD_BYTES] + (LOG_CUT_MARK % cut) + data[-LOG_TAIL_BYTES:], True


# --- text from a bundle: which characters may reach a page or a terminal as themselves ---------
# harness/render/text.py (every page and terminal) and harness/rehash.py (its own lines) keep only
# these; any other is escaped or blanked. What shows as nothing, or as a blank, is as hostile as a
# control: "s1" and "s1" + U+3164 read alike. str.isprintable is False for every control (Cc),
# format character (Cf: bidi, zero-width), separator but the ASCII space (Zs, Zl, Zp: every
# White_Space but it), surrogate, private use and unassigned code point (Cs, Co, Cn). What it lets
# through of Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt: Cf, the variation
# selectors and Other_Default_Ignorable_Code_Point) is the variation selectors, found here by their
# names, and the assigned code points of Other_Default_Ignorable_Code_Point (PropList.txt;
# unicodedata has no lookup of that property): the combining grapheme joiner, the Hangul fillers,
# the Khmer inherent vowels. Beside them, two that are not default-ignorable but show as a blank
# glyph: BRAILLE PATTERN BLANK and MUSICAL SYMBOL NULL NOTEHEAD. tests/unit/test_bundle_text.py
# holds the rule to the `regex` module's \p{Default_Ignorable_Code_Point} over every code point.
IGNORABLE_SHOWN = frozenset("\u034f\u115f\u1160\u17b4\u17b5\u3164\uffa0")  # Other_Default_Ignorable, assigned
BLANK_GLYPHS = frozenset("\u2800\U0001d159")  # BRAILLE PATTERN BLANK, MUSICAL SYMBOL NULL NOTEHEAD


@functools.lru_cache(maxsize=8192)
def shown(ch: str) -> bool:
    """Whether a character may be shown as itself: printable, and neither default-ignorable nor a
    blank glyph (see above)."""
    return ch.isprintable() and ch not in IGNORABLE_SHOWN and ch not in BLANK_GLYPHS \
        and "VARIATION SELECTOR" not in unicodedata.name(ch, "")


def all_shown(text: str) -> bool:
    """Whether every character of text may be shown as itself (ASCII text: a quick test)."""
    return text.isprintable() and (text.isascii() or all(shown(ch) for ch in text))


# --- tolerances of the physical rules --------------------------------------------------------
REL_TOL = 1e-9  # floats re-derived vs claimed (stats keep 10 significant digits)
CLOCK_TOL_S = 0.5  # between the runner's and the worker's clocks (ms timestamps, two clocks)
SLOT_TOL, SLOT_ABS_S = 0.01, 0.001  # item walls may sum to slots x run wall x (1 + 1%) + 1 ms
CPU_TOL_S = 1e-6  # self vs inclusive stage CPU: float sums
ITEM_CLOCK_TOL_S = 3e-4  # an item's thread CPU may read above its wall by this much: one clock read, and
# under load on a VM 0.13 ms was seen (the thread CPU and monotonic clocks are kept apart)
PROCESS_TOL_S = 0.05  # a process's wall vs its end - start: the runner reads both clocks back to back
CLOCK_RATE_TOL = 0.01  # the wall clock and the monotonic one may run apart while the system clock is
# slewed: 0.5% was measured on a VM (an 11 s process 56 ms apart); a comparison of the two over a span
# gets this share of the span on top of its absolute tolerance
CREATE_TOL_S = 1.5  # psutil's create time vs the runner's start: boot time is whole seconds in /proc/stat
CALL_FLOOR_S = 1e-8  # no stage call completes in less CPU-wall than this: bounds a call count
TIMEOUT_TOL, TIMEOUT_GRACE_S = 0.1, 10.0  # a process or campaign may outlive its timeout by the kill
FUTURE_TOL_S = 300.0  # a bundle's clocks may run this far ahead of the checker's
TICK_S = 0.05  # other threads' CPU and the PSI stall total settle in scheduler ticks (4-10 ms)
MAX_WARMUP_S = 10.0
MAX_WRAPPER_S = 1e-3
# No core retires more than this many instructions a second (a few GHz x a few per cycle, and
# valgrind runs 30-100x slower): a count above it x its process's life is not measured.
MAX_INSTRUCTIONS_PER_S = 1e10
# Nor does any core, natively, retire more than this (6 GHz x 8 a cycle): an instruction run's
# count is at most this x the longest wall its items took in the wall runs of its variant.
MAX_NATIVE_INSTRUCTIONS_PER_S = 5e10
# Instruction runs: the flags that count the measured region only, and the environment that
# makes the count repeat (harness/engine/instructions.py builds the command from these).
REGION_FLAGS = ("--tool=callgrind", "--collect-atstart=no", "--toggle-collect=sys_call_tracing", "--cache-sim=no")
# PYTHONMALLOC=malloc: pymalloc's cost depends on what setup left in its pools (the same loop
# counted 1,611,254 or 1,715,758 instructions, 6.5% apart, after two setups; under the system
# allocator 2,177,583 and 2,177,760), so base and candidate, whose setups differ, are counted
# with the system allocator: the counts rank the code's work, they are not pymalloc's counts.
INSTRUCTION_ENV = {"PYTHONHASHSEED": "0", "PYTHONMALLOC": "malloc", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                   "OPENBLAS_NUM_THREADS": "1"}

# --- outputs: the rules every item's output fields keep -----------------------------------------
# A field is a name (FIELDS["run"] items[].fields.*: 1 to 128 characters, at most MAX_FIELDS a item)
# and a stored array of a plain dtype (DTYPE_RE, of these sizes), at most MAX_SHAPE_DIMS dims. The
# checkers apply them to a bundle (the record's shape, rehash.npy_header); the worker to what it
# stores and the runner to the pre-flight's item and every run (output_problem, record_problem), so
# a campaign whose outputs cannot seal is refused before its first timed run, in one line.
DTYPE_SIZES = {"b": (1,), "i": (1, 2, 4, 8), "u": (1, 2, 4, 8), "f": (2, 4, 8), "c": (8, 16)}
# Long double (numpy's float128/complex256 on x86, float96 on 32-bit x86) is refused, not compared:
# x86's 80-bit extended value sits in 16 (or 12) bytes whose padding holds whatever that memory held
# before, so one value has many byte forms (parity would compare garbage: a float128 output differed
# in every process), and on other machines the same name is IEEE quad, another format: no value
# bytes are portable evidence. Its fix keeps every bit where it matters.
LONG_DOUBLE = ("long double (float128, complex256) is refused: on x86 its 80-bit value sits in 16 bytes whose 6 "
               "padding bytes hold whatever the memory held, so one value has many byte forms, and elsewhere "
               "the name is another format; return x.astype(np.float64) (complex: np.complex128), or, for "
               "every bit on x86, its 10 value bytes x.view(np.uint8).reshape(x.shape + (16,))[..., :10]")


def dtype_problem(descr: object) -> Optional[str]:
    """Why an array of this dtype (numpy's descr, '<f8') cannot be stored, or None."""
    m = DTYPE_RE.match(descr) if isinstance(descr, str) else None
    if not m:
        return f"dtype {str(descr)[:40]!r}: only plain bool, int, uint, float and complex arrays are stored"
    kind, size = m.group(2), int(m.group(3))
    if kind in "fc" and size > max(DTYPE_SIZES[kind]):
        return LONG_DOUBLE
    if size not in DTYPE_SIZES[kind]:
        return f"dtype {descr!r}: no {kind}{size} ({kind} of {', '.join(map(str, DTYPE_SIZES[kind]))} bytes)"
    return None


def fields_problem(names: Any) -> Optional[str]:
    """The first rule of the contract an item's output field names break (how many, and each name),
    as one line naming the field and the fix, or None: what the runner checks before it reads an
    output's file (output_problem checks the rest once it has)."""
    spec = FIELDS["run"]
    most, name_rule = spec["items[].fields"].size, spec["items[].fields.*"].key
    if len(names) > most:
        return (f"{len(names)} output fields; a bundle holds at most {most} per item: return fewer (stack fields of "
                "one shape into one array, or keep what parity needs)")
    for name in names:
        if not isinstance(name, str) or not name_rule.match(name):
            shown_name = repr(name)[:40] + ("..." if len(repr(name)) > 40 else "")
            length = len(name) if isinstance(name, str) else 0
            return (f"field name {shown_name} has {length} characters; a field name has 1 to 128: give it a "
                    "shorter name")
    return None


def output_problem(fields: Dict[str, Any]) -> Optional[str]:
    """The first rule of the contract an item's outputs break, as one line naming the field and
    the fix, or None. fields: {name: (dtype, shape)}, dtype numpy's descr ('<f8'), as a run record
    keeps them; the bounds are FIELDS["run"]'s items[].fields, the dtypes dtype_problem's, and one
    array's bytes at most the checkers' default budget for all of them."""
    spec = FIELDS["run"]
    dims, dim = spec["items[].fields.*.shape"].size, spec["items[].fields.*.shape[]"]
    problem = fields_problem(list(fields))
    if problem:
        return problem
    for name, (dtype, shape) in fields.items():
        problem = dtype_problem(dtype)
        if problem:
            return f"field {name!r}: {problem}"
        if len(shape) > dims or not all(isinstance(n, int) and dim.lo <= n <= dim.hi for n in shape):
            return f"field {name!r}: shape {list(shape)[:8]}: at most {dims} dimensions, each of 0 to 2**62 elements"
        size = int(DTYPE_RE.match(dtype).group(3))  # type: ignore[union-attr]  # dtype_problem: it matches
        nbytes = math.prod(shape) * size
        if nbytes > DEFAULT_MAX_ARRAY_BYTES:
            return (f"field {name!r}: {nbytes} bytes, over the {DEFAULT_MAX_ARRAY_BYTES} bytes the checkers read of "
                    "all stored arrays together: return a smaller output (a digest or a sample of it)")
    return None


def record_problem(kind: str, size: int) -> Optional[str]:
    """Why a record of this kind ("run", "instructions") of `size` bytes cannot be in a bundle, or None."""
    limit = next(limit for k, _p, _w, limit in FILE_KINDS if k == kind)
    if limit is None or size <= limit:
        return None
    return (f"its record would be {size} bytes, over the {limit} a {kind} record may have: fewer or smaller "
            "output fields per item (each field is a digest, dtype and shape per item), or fewer items "
            "(workload.items: N)")


# --- parity: how far a declared tolerance may reach (`parity: {max_ulp: N}`) -------------------
# One ULP near 1.0 is 2**-m of the value for a float of m stored significand bits, so N ULP is a
# relative difference of about N * 2**-m, and 2**m ULP (all values from 1.0 to 2.0) is no
# tolerance at all: a candidate returning one constant would pass. A tolerance may therefore
# let at most the low half of the significand move: max_ulp <= 2**ceil(m / 2), which keeps the
# high floor(m / 2) bits in agreement (a relative difference below 2**-floor(m / 2)):
#   float16 (m = 10): 32 ULP, about 3%;  float32 (m = 23): 4096 ULP, about 0.05%;
#   float64 (m = 52): 2**26 ULP, about 1.5e-8.
# (bfloat16, m = 7, would get 16; it has no numpy dtype and is refused when stored, so no output
# is bfloat16.) The campaign file cannot know its outputs' dtypes: it is refused above the widest
# bound (float64's); both checkers then refuse the tolerance for a differing field whose dtype's
# bound it exceeds (comparison.json parity.tolerance.over_bound), so it never makes them agree.
FLOAT_NAMES = {2: "float16", 4: "float32", 8: "float64"}  # a stored float's itemsize -> its name
SIGNIFICAND_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}
MAX_ULP = {name: 2 ** -(-bits // 2) for name, bits in SIGNIFICAND_BITS.items()}
MAX_ULP_ANY = max(MAX_ULP.values())  # what a campaign file may declare at the most


def ulp_bound(kind: str, itemsize: int) -> Optional[int]:
    """The widest tolerance a float field of this numpy kind and itemsize admits, or None
    (no float16/32/64: no tolerance covers it)."""
    name = FLOAT_NAMES.get(itemsize) if kind == "f" else None
    return None if name is None else MAX_ULP[name]


# --- the campaign's defaults (harness/plan/spec.py) -------------------------------------------
DEFAULT_ROUNDS = 20  # what `harness init` writes for a fixed count
DEFAULT_FIRST_LOOK = 4  # `rounds: auto`: the first round after which the sequential interval may stop
DEFAULT_BUDGET_S = 60.0
# `precision: p` (`rounds: auto` of a workload's one claim; issue 48): a look that decides ends the
# campaign only once its interval [lo, hi] also lies within a factor 1 + p of its centre c, the
# ratio exp(mean per-round log ratio): hi <= c (1 + p) and lo >= c / (1 + p) (rules.precise). At
# the cap, a campaign that decided keeps its word and says its interval is wider than asked
# (stopped "imprecise"). Every look's interval is valid whichever look stops, so stopping later
# for precision keeps the level. Within PRECISION_LIMITS: 0.1% to 99.9%.
PRECISION_LIMITS = (0.001, 0.999)
DEFAULT_STAGE_ROUNDS = 2
DEFAULT_SLOTS = 1
DEFAULT_RUN_TIMEOUT_S = 600.0
DEFAULT_CAMPAIGN_TIMEOUT_S = 1200.0
DEFAULT_THRESHOLD = 0.02
# The widest equal band a claim may be decided against (threshold, noise floor, their max), and
# so the widest a campaign file may set (the `decision` rule; issue 45). The tools people use set
# 1-10% (asv's regression factor 1.1, pytest-benchmark's compare-fail and CodSpeed's thresholds a
# few percent); a quarter leaves room for a noisy shared runner and for bisecting a large
# regression. Past it "equal" would pass a change of 1.3x, which no reader calls equal: a
# campaign that needs more is measuring on a machine too noisy to claim anything.
MAX_BAND = 0.25
DEFAULT_INSTRUCTION_RUNS = 2
# `launch:` how a run's process is made. fresh: a new interpreter per run (exec). zygote: per
# variant, a process that has imported the worker's own modules (never the code under test) forks
# one child per run, and is re-made after ZYGOTE_RUNS of its variant's runs, so that what is fixed
# at exec (the memory layout ASLR draws, a random hash seed) is drawn again every that many runs.
LAUNCH_MODES = ("fresh", "zygote", "duet")  # duet: issue 48 item 3 (DUET below)
DEFAULT_LAUNCH = "fresh"
ZYGOTE_RUNS = 4
MAX_PRELOAD = 32  # `launch: {mode: zygote, preload: [...]}`: the libraries a zygote imports, at most
# `launch: duet` (Bulej et al., ICPE 2020, "Duet Benchmarking"): each round's two runs at once, fresh
# processes each pinned to a core of its own (sched_setaffinity before exec), their loops started
# together (each worker waits at its start mark until both are there, and the runner answers both
# marks in one pass) and their ends held the same way (neither's writing of outputs runs beside the
# other's loop), so that what else the machine does lands on both runs of the round and the round's
# ratio cancels it. A round is two consecutive runs of the order (runs 2k and 2k + 1): the first
# runs on cores[0], the second on cores[1] (rules.duet_core), so the shuffled order also shuffles
# which variant has which core. The runs of a round overlap; a round starts after the one before it ended.
DUET = "duet"
DUET_CORES = 2  # the cores a duet's two runs are pinned to, one each
MAX_CPU = 8191  # the highest CPU number a campaign may name (the kernel's NR_CPUS at the most)
METRICS = ("wall", "instructions")
CALL_MODES = ("equal", "per_variant")
# budget_s and threshold: what `harness bisect` sets on each step (its per-step budget, the probes' band)
OVERRIDES = ("base", "candidate", "order", "rounds", "items", "params", "metrics", "budget_s", "threshold")

# --- statistics: policy (harness/comparison/analysis.py and rehash.py each derive the numbers)
METHOD = "paired rounds, 20%-trimmed Tukey-McLaughlin t interval over per-round log ratios"
LEVEL = 0.95
TRIM = 0.2  # share trimmed from each end (Tukey & McLaughlin; Wilcox recommends 20%)
MIN_ROUNDS = 5  # below this the run-to-run variance is not estimated well enough to claim
PER_ITEM_SHOWN = 10  # per-item rows kept in comparison.json, worst first
WRAPPER_S = 1.1e-6  # a stage wrapper's own cost per call where a run did not measure it
THIN_STAGE_FACTOR = 10  # a stage within this many wrapper costs per call gets a warning
STALL_SHARE = 0.10  # a run is overloaded when runnable work waited for a core this share of its wall
STALL_TICK_S = 0.005  # plus a scheduler tick: PSI totals settle in ticks
GIL_CPU_PER_WALL = 1.2  # slots > 1 below this many busy cores: the GIL serialises the items
DRIFT_SE = 2.5  # standard errors of a difference of two half-medians that flag a drift
DRIFT_RULE = ("flagged when the median per-round ratio of the later half of the rounds differs from the earlier "
              "half's by more than 2.5 standard errors (from the median absolute deviation within each half), by "
              "at least half the effect and by at least the threshold; a drift of both variants' walls cancels "
              "within the shuffled rounds and is shown only")
INSTRUCTION_BAND = 0.002  # instruction counts within +-0.2% read "equal" (rustc-perf: a no-op stays within it)
SIG_DIGITS = 10  # every stats float keeps 10 significant digits

# --- metrics: one definition each (docs/developing.md "A metric") ------------------------------
# Where a metric is measured, what its comparison reads, its unit, the band its verdict is judged
# against and how it is shown. comparison.json `metrics` holds one entry of one shape (FIELDS,
# metrics[]) per metric the campaign measured, in this order; analysis, both checkers and every
# renderer loop over them. statistic "rounds": the per-round log ratios of the timed rounds (the
# headline's decides when a sequential campaign stops; the others are read at that stop with the
# same confidence sequence, which holds at any stopping time); "counts": the instruction runs'.
# band "campaign": max(threshold, noise floor); "threshold": the campaign's threshold; "counts":
# instructions_section's. A metric whose `reads` is a run field reads one value per run, an
# item field (items[].x) the mean over items of the per-item log ratios.
Metric = namedtuple("Metric", "name title unit reads where statistic band")
METRIC_DEFINITIONS = (
    Metric("wall", "wall", "s", "wall_s",
           "the runner: its own monotonic clock between the worker's marks around the timed loop, read while the "
           "worker waits at each (the worker's own perf_counter walls are held to it)", "rounds", "campaign"),
    Metric("cpu", "CPU", "s", "outside.loop_cpu_s",
           "the runner: the kernel's CPU time of the worker process (every thread: its process CPU clock) over the "
           "timed loop, read at the marks", "rounds", "threshold"),
    Metric("memory", "peak memory", "B", "memory.loop_peak_bytes",
           "the runner: the worker's resident high-water mark (Linux VmHWM) reset at the loop's start mark "
           "(/proc/PID/clear_refs) and read at its end mark; the kernel's rusage of the reaped process bounds it",
           "rounds", "threshold"),
    Metric("instructions", "instructions", "instructions", "instructions",
           "instruction runs of their own under callgrind (`metrics: [wall, instructions]`)", "counts", "counts"),
)
METRIC_NAMES = tuple(m.name for m in METRIC_DEFINITIONS)
METRIC = {m.name: m for m in METRIC_DEFINITIONS}
HEADLINE = "wall"  # the metric whose looks stop a sequential campaign and whose verdict `compare` gates on

# --- interference over a run's timed loop (docs/statistics.md "Interference") ------------------
# A run is disturbed when the hypervisor took more than MAX_STEAL of its loop's wall (steal time,
# /proc/stat, plus one USER_HZ tick: the counts are whole ticks), or, for work the campaign declares
# single-threaded (`interference: {min_cpu_per_wall: X}`), when its process CPU over the loop was
# below X of the loop's wall (the worker was off its core). A campaign may set either within the
# limits below; the verdict must then hold on the rounds without a disturbed run, or it is no claim.
MAX_STEAL = 0.02
MAX_STEAL_LIMITS = (0.0, 0.10)  # a campaign may tighten the steal bound, or loosen it to 10% at most
MIN_CPU_PER_WALL_LIMITS = (0.5, 1.0)  # a declared single-threaded loop: at least half its wall on a core
DISTURBED_CAUSES = ("steal", "off_cpu")


# --- the sandbox (harness/worker/sandbox.py, harness/engine/sandbox.py) --------------------------------
# What every worker ran under, environment.json `sandbox`, worst last: full (Landlock and a user
# namespace; the network cut unless the campaign declared it), partial (Landlock without a user
# namespace: UDP and unix sockets open, a root harness's capabilities reach the worker), none (no
# Landlock: nothing confined), off (the campaign opted out). Anything but full is said in the
# summary's headline (comparison.json `sandbox`, re-derived by both checkers).
SANDBOX_LEVELS = ("full", "partial", "none", "off")
WALL_TIMER = "runner monotonic"  # what times a run's loop: the runner's clock between the worker's marks
SANDBOX_NETWORK = ("cut", "tcp", "open", "declared")
DEFAULT_SANDBOX = {"mode": "on", "network": False, "read": []}
MAX_SANDBOX_READ = 64  # folders a campaign may declare readable (`sandbox: {read: [...]}`)
MAX_SANDBOX_PATHS = 512  # shared folders environment.json lists


def sandbox_summary(env_sandbox: Optional[dict]) -> dict:
    """comparison.json `sandbox` from environment.json's: its level and why it is not full."""
    if env_sandbox is None:
        return {"level": "none", "reason": "no sandbox record"}
    return {"level": env_sandbox["level"], "reason": env_sandbox["reason"]}


# --- measured from outside the worker (harness/engine/outside.py) -------------------------------
# The parent times each run's loop between the worker's marks by its own clock, while the worker
# waits at each mark; the worker's own figures are held to it. A run is contradicted when:
#   stamps      the worker's own start or end lies outside the parent's loop (no clock can do that)
#   wall        the worker claims a loop shorter than the parent saw by more than a wake-up at each
#               mark (MARK_SLACK_S + MARK_SLACK_SHARE x the loop)
#   cpu         it claims more process CPU over the loop than the kernel charged (CPU_SLACK_S)
#   items_cpu   its items' thread CPU sums above the kernel's CPU over the loop
#   stages_cpu  its stages' self CPU sums above the kernel's CPU over the loop
#   items_wall  one slot, and its items' walls sum below ITEMS_SHARE of its own loop less ITEMS_SLACK_S
#               (a collection between two items falls outside both: only a gross shortfall counts)
#   tripwire    it found its clocks or its functions replaced after its loop
#   scheduling  the scheduling of another process (the runner, a zygote) or its own beyond its
#               launcher's changed during the run
#   marks       it sent marks the protocol does not allow
# A claim is not made on a campaign with a contradicted timed run (rules.outside_veto).
CONTRADICTIONS = ("stamps", "wall", "cpu", "items_cpu", "stages_cpu", "items_wall", "tripwire", "scheduling",
                  "marks")
MARK_SLACK_S, MARK_SLACK_SHARE = 0.1, 0.05
CPU_SLACK_S = 0.002  # the kernel's process CPU clock and the worker's read it at different instants
STAMP_TOL_S = 1e-6  # float rounding of the two readings of one monotonic clock
ITEMS_SHARE, ITEMS_SLACK_S = 0.5, 0.01
# The time outside the loop: a candidate whose loop saved time that reappears before or after it (work
# done at import, or finished after the end mark) saved nothing. Per round k: r_k = (candidate's time
# outside its loop - the base's) - MOVED_SHARE x (base loop - candidate loop) - band x base loop, by
# the parent's clock and, separately, by the kernel's CPU (outside and in the loop alike); the claim is
# not supported when the lower bound of a one-sided MOVED_LEVEL t interval of the mean r_k is above 0
# by either.
MOVED_SHARE = 0.5
MOVED_LEVEL = 0.995


# --- verdicts: the words (harness/outcomes.py gives their exit codes and the verdict line) ----
VERDICTS = ("improved", "regressed", "equal", "not slower", "not faster", "inconclusive")
# The words each question may stop on (a claim: two-sided; a one-sided question: its answer, or the
# other side past the margin), inconclusive aside.
ANSWERS = {"claim": ("improved", "regressed", "equal"), "not_slower": ("not slower", "regressed"),
           "not_faster": ("not faster", "improved")}
CHANGED = ("improved", "regressed")  # the words that say a benchmark of a family changed
# How a sequential campaign ended (rules.stopped): at the first look that decided (and, with a
# precision, was that precise); at the cap without a decided look; at the cap with one, none of them
# precise enough (the word kept); before either (a campaign cut short).
STOPS = ("decided", "cap", "imprecise", "ended")
FAMILY_NAMED = 5  # changed benchmarks a verdict line names (the summary and the report show every one)
FAMILY_METHOD = ("a suite is a family of claims: every benchmark its own interval at alpha / benchmarks "
                 "(Bonferroni, over benchmarks and looks); a benchmark that has decided leaves the later rounds")
# `harness reproduce`: the re-run is the measurement, the original the claim.
REPRODUCTION_VERDICTS = ("reproduced", "not contradicted", "not reproduced", "partial", "outputs differ",
                         "run failed")
# On a machine of the same class, a re-run's interval, widened by this share either way,
# must hold the claimed ratio (machines of one class still differ by a few percent).
REPRODUCE_TOLERANCE = 0.10


# --- the plan: definitions both the runner and the checkers follow -------------------------------
# --- sequential rounds: a plan of looks, each valid whichever one stops the campaign ----------
# The cap is known after the first round (auto_rounds: time alone sets it, never a ratio), so the
# looks a campaign may take are known before any ratio is: one after each round from `first` to
# `cap`. A group-sequential design spends alpha over exactly those looks (Pocock 1977): one
# nominal level at every look, the level at which the chance that ANY of them rejects the true
# value is alpha. The interval of the per-round log ratios' centre at a look is the intersection
# of two such designs, so by the union bound the pair misses at any look with probability at
# most the sum of their alphas:
# - for the mean, Student's t at the nominal level with n - 1 degrees of freedom (the
#   significance-level approach to a group-sequential t-test, Jennison & Turnbull 2000, ch. 11),
#   the level computed for normal values by the recursion of Armitage, McPherson & Rowe (1969)
#   over the random walk of their standardized sums (_walk_exceeds, standard library); it
#   decides a clean change in few rounds;
# - for the median, the signs of the rounds against each value: at each look a count of rounds
#   below it that the binomial distribution makes rarer than the sign design's nominal level
#   rejects it, the level set so that the exact chance of any look rejecting the median is the
#   signs' alpha (_sign_exceeds, by recursion over the counts). No moment and no scale, so a
#   slow spell that doubles one run moves it by one rank where it widens the t for the rest of
#   the campaign.
# Their centres agree when the log ratios are symmetric about the effect, which the shuffled order
# gives when the noise does not depend on the variant. A claim (improved, regressed, equal)
# spends SEQ_ALPHA over both sides and every look up to the cap; a one-sided question ("not
# slower than the margin?", "not faster?") spends QUESTION_ALPHA on each side apart, so each of
# its answers is wrong at most that often. The design holds for the planned looks only: a
# campaign cannot go on past its cap (re-run it with a larger budget), which is the price of
# intervals 30% narrower than a confidence sequence valid for ever (docs/statistics.md).
SEQ_ALPHA = 0.05  # a claim: both sides, every look to the cap included
QUESTION_ALPHA = 0.05  # a one-sided question: each side's answer
SEQ_SIGN_SHARE = 0.15  # of each alpha to the signs (they cannot bound before ~8 rounds), the rest to the t
# The t's level comes from the walk of normal sums with a KNOWN spread; estimated afresh at every look,
# the spread makes the t statistics of successive looks less alike than the walk's, and their
# chance of any rejection runs 1.11-1.21x the walk's at a claim's alpha and up to 1.38x at a family
# member's smaller one (simulated: 200,000-2,000,000 normal campaigns per design, first look 3-8,
# cap 10-100, alpha 4% to 0.04%: tests/campaign/test_sequential_simulation.py). The t's design
# therefore spends this share of its alpha (the second: a member of a family), and the three
# parts stay within alpha together (measured there; tests/unit/test_sequential_rates.py).
SEQ_T_SPEND, SEQ_T_SPEND_FAMILY = 0.8, 0.68
QUESTIONS = ("claim", "not_slower", "not_faster")
DEFAULT_QUESTION = "claim"
DEFAULT_MARGIN = 0.05  # a one-sided question's margin where the campaign names none
WALK_STEP = 0.25  # the recursion's grid, in units of one round's standard deviation (its error: under 0.5% of alpha)
WALK_REACH = 7.0  # standard deviations beyond which a step's kernel and a far tail are left out (1e-12)
SEQ_METHOD = ("sequential: after each round from the first look to the cap, the intersection of a group-sequential "
              "t interval of the mean per-round log ratio and a sign interval of their median (at the cap also the "
              "20%-trimmed t), one nominal level at every look, set so that any look errs with probability at most "
              "alpha (Pocock); stops when it decides")

def subset(items: Sequence, n: Optional[int]) -> list:
    """`workload.items: N`: N items spread evenly over the workload's list, the first always
    included, the same ones on every run and machine; None: all of them."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


# --- the rules ------------------------------------------------------------------------------------
# Which checker applies a rule: "both" (rehash.py and harness verify), "verify" (only harness
# verify: campaign.yaml needs a YAML parser), "repo" (harness verify --repo: the repository),
# "original" (harness report and verify --original: the bundle a reproduction re-ran), "none".
RULES = {
    "layout": ("both", "every file listed once in a manifest, re-hashed; nothing extra; no links"),
    "parsing": ("both", "strict JSON, the declared keys and types at every level, the current schema id"),
    "files": ("both", "only the declared kinds of file, each present exactly when its condition holds"),
    "plan": ("both", "runs, labels, items and rounds follow from the campaign's order, seed and budget"),
    "identity": ("both", "records agree with the campaign and with each other (variants, SHAs, digests)"),
    "status": ("both", "ok means exit 0, no reason, measurements; a failure ends the campaign"),
    "ledger": ("both", "one worker per started run in the cleanup receipt, verified absent"),
    "physics": ("both", "timings a machine could produce: clocks, CPU within walls, processes in order"),
    "arrays": ("both", "every field's dtype and shape are the stored array's; every stored array named"),
    "bag-info": ("both", "bag-info.txt's keys, exactly, and their values the payload's"),
    "derived": ("both", "re-derived from the records: comparison.json"),
    "decoded": ("verify", "re-derived from the stored arrays' values, decoded with numpy: parity.divergence"),
    "campaign": ("verify", "campaign.json says what campaign.yaml says"),
    "anchors": ("repo", "the repository holds the bundle's campaign file, golden and noise-floor files, workload "
                        "and trees"),
    "original": ("original", "re-derived from the reproduction bundle and the bundle it re-ran"),
    "bisect": ("both", "a bisect folder: every step bundle verifies, the receipt holds what they give, each step is "
                       "the one the search rule asks for, and the culprit is the rule's"),
    "decision": ("both", "what decides a claim is bounded: a band (threshold, noise floor) of at most MAX_BAND, an "
                         "order whose every round interleaves A and B, a noise floor that is its own interval's, over "
                         "enough rounds"),
    "free": ("none", "no checker can tell; the reason is given"),
}

Field = namedtuple("Field", "type rule null optional lo hi size values key")


def F(type_, rule, *, lo=None, hi=None, size=None, values=None, key=None, optional=False):
    """A declared field. type_: str int num bool time iso date sha256 gitsha label name enum
    list dict any int|str; a trailing "?" allows null. lo/hi bound a number; size bounds a
    string's length or a list's or map's entries; values: an enum's words; key: the pattern of
    a map's keys (on "*" fields); optional: the key may be absent (only in maps of options)."""
    null = type_.endswith("?") or type_ == "any"  # any JSON value, null among them
    return Field(type_.rstrip("?"), rule, null, optional, lo, hi, size, tuple(values) if values else None, key)


# Where the sealing harness's source came from (environment.json harness_origin): a git checkout
# at harness_commit, clean or with changes under harness/ (then harness_source_sha256, not the
# commit, says what ran); an installed copy whose installer recorded its commit (PEP 610
# vcs_info); unknown (a wheel or sdist, or a checkout git cannot read: no commit).
HARNESS_ORIGINS = ("checkout", "checkout-modified", "installed-vcs", "unknown")
T0, T1 = 1.0e9, 1.0e10  # epoch seconds a bundle's clocks may show (2001 to 2286)
SECONDS = dict(lo=0.0, hi=MAX_TIMEOUT_S)
PCT = dict(lo=-1e9, hi=1e9)
RATIO = dict(lo=0.0, hi=1e300)  # an interval over two noisy rounds can reach far (df 1: t = 12.7)
COUNT = dict(lo=0, hi=2**53)
BYTES = dict(lo=0, hi=2**50)  # a resident set (1 PiB: beyond any machine)
# Linux keeps resident-page counts per CPU and folds them in batches (percpu_counter_batch,
# max(32, 2 x CPUs) pages a CPU): the kernel's mark of a reaped process may read below what /proc
# showed the worker by up to a batch a CPU (seen: 10 pages on 2 cores, 36 pages on a 16-core Xeon).
# Twice that bound.
def rss_slack_bytes(cores: Optional[int]) -> int:
    """How far below /proc's high-water mark the kernel's mark of a reaped process may read."""
    cores = max(1, cores or 1)
    return 2 * max(32, 2 * cores) * cores * 4096

MACHINE = {  # a machine class as the environment, a golden or a noise-floor file states it
    "cpu_model": F("str?", "free", size=512),
    "vector_isa": F("any", "free"),
    "blas": F("str?", "free", size=1024),
    "torch_threads": F("int?", "free", lo=0, hi=4096),
    "cores": F("int?", "free", lo=1, hi=1 << 20, optional=True),
}


def _under(prefix, fields, rule=None):
    """fields nested under prefix, their rule replaced when given."""
    return {f"{prefix}.{k}": (v._replace(rule=rule) if rule else v) for k, v in fields.items()}


PROCESS = {
    "process": F("dict", "physics: start, end and wall"),
    "process.started_at": F("time", "physics: inside the runner's span, after the previous run ended", lo=T0, hi=T1),
    "process.ended_at": F("time", "physics: inside the runner's span, not before its start", lo=T0, hi=T1),
    "process.wall_s": F("num", "physics: within end - start, within the run timeout, holds the timed wall", **SECONDS),
    "process.maxrss_bytes": F("int?", "physics: the kernel's high-water mark of the reaped process's resident set "
                                      "(its rusage), at least the worker's loop peak less rss_slack_bytes; "
                                      "it carries the launcher's "
                                      "across exec and fork, so it bounds from above only (null: not read)",
                              **BYTES),
}
LOG = {
    "log": F("dict", "files: its log, bound to this record"),
    "log.path": F("str", "files: data/logs/<label>.log", size=64),
    "log.bytes": F("int", "files: the stored log's size", lo=0, hi=1 << 40),
    "log.sha256": F("sha256", "files: the stored log's SHA-256"),
    "log.written": F("int", "files: what the worker wrote; the stored log is all of it or its head and tail",
                     lo=0, hi=1 << 50),
    "log.truncated": F("bool", "files: exactly when the worker wrote more than the bundle keeps"),
}
INTERPRETER = {
    "python": F("dict?", "identity: the interpreter environment.json names for its variant (null: failed run)"),
    "python.executable": F("str", "identity: environment.json's interpreter of its variant", size=4096),
    "python.version": F("str", "identity: environment.json's interpreter of its variant", size=64),
    "python.implementation": F("str", "identity: environment.json's interpreter of its variant", size=64),
}

FIELDS = {
    "run": {  # data/runs/<label>.json
        "schema": F("str", "parsing: the run schema id"),
        "label": F("label", "plan: the label of its file name and of its position in the order"),
        "variant": F("enum", "identity: the variant its label's letter names", values=("base", "candidate")),
        "index": F("int", "plan: its position in the order", lo=0, hi=MAX_RUNS),
        "sha": F("gitsha", "identity: the campaign's SHA for its variant"),
        "status": F("enum", "status: only the last run may fail; comparison.json's status",
                    values=RUN_STATUSES),
        "reason": F("str?", "status: null exactly when ok", size=8192),
        "exit_code": F("int?", "status: 0 when ok", lo=-255, hi=255),
        "wall_s": F("num?", "physics: above zero, within the process's life; items fit in it", **SECONDS),
        "slots": F("int", "identity: the campaign's slots", lo=1, hi=MAX_SLOTS),
        "items": F("list", "plan: every ok run holds exactly the planned items, in order (runner.json)",
                   size=MAX_ITEMS),
        "items[]": F("dict", "plan: one planned item"),
        "items[].id": F("str", "plan: runner.json's planned item at its position", size=256),
        "items[].wall_s": F("num", "physics: its CPU within it, it within the run's wall, all within slots x run "
                                   "wall", **SECONDS),
        "items[].cpu_s": F("num", "physics: within the item's wall (one thread ran the item)", **SECONDS),
        "items[].fields": F("dict", "plan: the same field names for an item in every ok run", size=MAX_FIELDS),
        "items[].fields.*": F("dict", "plan: an output field", key=re.compile(r"^.{1,128}\Z", re.S)),
        "items[].fields.*.digest": F("sha256", "arrays: a stored array; golden digests; parity re-derived"),
        "items[].fields.*.dtype": F("str", "arrays: the stored array's header", size=8),
        "items[].fields.*.shape": F("list", "arrays: the stored array's header", size=MAX_SHAPE_DIMS),
        "items[].fields.*.shape[]": F("int", "arrays: the stored array's header", lo=0, hi=2**62),
        "items[].error": F("dict?", "status: never beside fields; parity compares errors"),
        "items[].error.type": F("str", "derived: parity compares error returns across runs", size=256),
        "items[].error.message": F("str", "derived: parity compares error returns across runs",
                                   size=MAX_ERROR_MESSAGE),
        "stages": F("dict", "identity: the campaign's stages in every ok stage run, none in a timed run",
                    size=MAX_STAGES),
        "stages.*": F("dict", "identity: a campaign stage"),
        "stages.*.calls": F("int", "derived: parity's call counts; physics: they fit in the run", lo=0, hi=2**62),
        "stages.*.self_cpu_s": F("num", "physics: within inclusive; all self CPU within cores x run wall", **SECONDS),
        "stages.*.incl_cpu_s": F("num", "physics: self within it, it within cores x run wall", **SECONDS),
        "stages_installed": F("dict", "identity: the campaign's stages", size=MAX_STAGES),
        "stages_installed.*": F("bool", "identity: every non-optional stage installed in every ok stage run"),
        "imported_from": F("dict", "identity: the workload and the stages"),
        "imported_from.workload": F("str?", "free", size=4096),
        "imported_from.stages": F("dict", "identity: the campaign's stages", size=MAX_STAGES),
        "imported_from.stages.*": F("str", "identity: a tree: path inside the revision's tree, one per stage and "
                                           "variant", size=4096),
        "metrics": F("dict", "free", size=256),
        "metrics.**": F("any", "free"),
        "machine": F("dict", "physics: cores bounds stage CPU"),
        "machine.cores": F("int?", "identity: environment.json's cores; bounds stage CPU", lo=1, hi=1 << 20),
        "machine.process_cpu_s": F("num?", "physics: holds the items' thread CPU and fits in cores x run wall",
                                   **SECONDS),
        "machine.cpu_stall_s": F("num?", "physics: between 0 and the run's wall; derived: the load rule", **SECONDS),
        "machine.stage_wrapper_s": F("num?", "physics: 0 to 1 ms in a stage run, null in a timed run; derived: the "
                                             "thin-stage warning", lo=0.0, hi=MAX_WRAPPER_S),
        "machine.cpu_freq_mhz": F("num?", "free", lo=0.0, hi=1e6),
        "machine.warmup_s": F("num?", "free", lo=0.0, hi=MAX_WARMUP_S),
        "machine.loadavg_before": F("list?", "free", size=3),
        "machine.loadavg_before[]": F("num", "free", lo=0.0, hi=1e6),
        "machine.loadavg_after": F("list?", "free", size=3),
        "machine.loadavg_after[]": F("num", "free", lo=0.0, hi=1e6),
        "interference": F("dict?", "status: present exactly when ok (null in a failed run); a run/v4 record, of "
                                   "a harness before it, lacks the key"),
        "interference.user_hz": F("int?", "physics: the kernel's USER_HZ (10 to 10000), the unit of the steal "
                                          "counts; derived: the disturbed rule", lo=10, hi=10_000),
        "interference.steal_ticks": F("int?", "physics: all CPUs' steal over the timed loop (/proc/stat cpu line, "
                                              "8th value), within cores x the wall and a tick; derived: the "
                                              "disturbed rule (null: the kernel shows no steal)", lo=0, hi=2**62),
        "interference.cpu": F("int?", "physics: below environment.json's cores: the CPU the worker ran on at the "
                                      "loop's start and end (null: it moved, or unknown)", lo=0, hi=1 << 20),
        "interference.cpu_steal_ticks": F("int?", "physics: that CPU's steal over the loop, within the wall and a "
                                                  "tick and within all CPUs' steal; null when cpu or steal_ticks is; "
                                                  "derived: the disturbed rule",
                                          lo=0, hi=2**62),
        "interference.freq_mhz_before": F("num?", "free", lo=0.0, hi=1e6),
        "interference.freq_mhz_after": F("num?", "free", lo=0.0, hi=1e6),
        "interference.steal_share": F("num?", "derived: the larger of own-CPU steal / wall and all-CPU steal / "
                                              "(cores x wall) (rules.disturbance)", lo=0.0, hi=1e6),
        "interference.cpu_per_wall": F("num?", "derived: machine.process_cpu_s / wall_s (rules.disturbance)",
                                       lo=0.0, hi=1e9),
        "interference.causes": F("list", "derived: the bounds of campaign.json's interference it crosses",
                                 size=len(DISTURBED_CAUSES)),
        "interference.causes[]": F("enum", "derived: the bounds of campaign.json's interference it crosses",
                                   values=DISTURBED_CAUSES),
        "interference.disturbed": F("bool", "derived: exactly when it crosses a bound (causes)"),
        "memory": F("dict", "status: every reading null in a failed run"),
        "memory.process_peak_bytes": F("int?", "physics: at least loop_peak_bytes, given with it: the worker's "
                                               "resident high-water mark over its life (Linux VmHWM), null where "
                                               "the kernel shows none",
                                       **BYTES),
        "memory.loop_start_bytes": F("int?", "physics: given with loop_peak_bytes, at most it when the mark was "
                                             "reset: the resident set as the loop's warm-up ended", **BYTES),
        "memory.loop_peak_bytes": F("int?", "physics: within process_peak_bytes and the reaped process's maxrss; "
                                            "derived: the memory metric", **BYTES),
        "memory.reset": F("bool", "free"),
        "harness_source_sha256": F("sha256?", "identity: environment.json's harness digest"),
        "workload_sha256": F("sha256?", "identity: workload.json's digest (the folder the worker imported from)"),
        **INTERPRETER,
        "worker_started_at": F("iso?", "physics: an ISO time inside the process's life", size=64),
        "worker_ended_at": F("iso?", "physics: an ISO time inside the process's life, the timed wall within the "
                                     "span", size=64),
        "outside": F("dict?", "status: present exactly when ok: what the runner saw of its process from outside"),
        "outside.before_s": F("num", "physics: its process's life before the loop, by the runner's clock; with the "
                                     "loop and after_s within the process's wall; derived: the moved-outside rule",
                              **SECONDS),
        "outside.after_s": F("num", "physics: its process's life after the loop, by the runner's clock; derived: the "
                                    "moved-outside rule", **SECONDS),
        "outside.worker_wall_s": F("num", "physics: the worker's own loop wall: wall_s less the two latencies; "
                                          "derived: contradictions", **SECONDS),
        "outside.latency_s": F("list", "physics: [the worker's start after the runner's, the runner's end after the "
                                       "worker's]; derived: contradictions (stamps, wall)", size=2),
        "outside.latency_s[]": F("num", "derived: contradictions (stamps, wall)", lo=-MAX_TIMEOUT_S, hi=MAX_TIMEOUT_S),
        "outside.loop_cpu_s": F("num?", "physics: the kernel's CPU of the process over the loop, within cores x the "
                                        "loop; derived: contradictions (cpu, items_cpu, stages_cpu)", **SECONDS),
        "outside.before_cpu_s": F("num?", "physics: the kernel's CPU before the loop, within cores x before_s; "
                                          "derived: the moved-outside rule", **SECONDS),
        "outside.after_cpu_s": F("num?", "physics: the kernel's CPU after the loop (rusage at reap), given with "
                                         "before_cpu_s; derived: the moved-outside rule", **SECONDS),
        "outside.tripwire": F("list", "derived: contradictions (tripwire): what the worker found replaced", size=32),
        "outside.tripwire[]": F("str", "free", size=256),
        "outside.scheduling": F("list", "derived: contradictions (scheduling): changes the runner saw", size=64),
        "outside.scheduling[]": F("str", "free", size=256),
        "outside.violations": F("list", "derived: contradictions (marks): what the worker sent out of protocol",
                                size=8),
        "outside.violations[]": F("str", "free", size=256),
        "outside.contradictions": F("list", "derived: rules.contradictions of the record's figures",
                                    size=len(CONTRADICTIONS)),
        "outside.contradictions[]": F("enum", "derived: rules.contradictions", values=CONTRADICTIONS),
        "outside.contradicted": F("bool", "derived: exactly when contradictions is not empty"),
        "pid": F("int", "ledger: the ledger's worker for this run", lo=1, hi=2**31),
        "launch": F("dict", "identity: how its process was made"),
        "launch.mode": F("enum", "identity: campaign.json's launch", values=LAUNCH_MODES),
        "launch.zygote": F("int?", "ledger: the pid of the zygote row of its variant and generation, the parent of "
                                   "its worker; null when fresh", lo=1, hi=2**31),
        "launch.generation": F("int?", "plan: its place among its variant's runs, by ZYGOTE_RUNS; null when fresh",
                               lo=1, hi=MAX_RUNS),
        "launch.core": F("int?", "plan: a duet run's core, campaign.json's cores by its place in its round "
                                 "(rules.duet_core); null unless duet", lo=0, hi=MAX_CPU),
        **PROCESS,
        **LOG,
    },
    "instructions": {  # data/instructions/<label>.json
        "schema": F("str", "parsing: the instructions schema id"),
        "label": F("str", "plan: the schedule's label at its place", size=8),
        "variant": F("enum", "plan: its label's letter", values=("base", "candidate")),
        "index": F("int", "plan: its place among the instruction runs", lo=0, hi=2 * MAX_INSTRUCTION_RUNS),
        "after": F("str?", "plan: the wall run it follows in the schedule", size=8),
        "sha": F("gitsha", "plan: the campaign's SHA for its variant"),
        "status": F("enum", "status: only the last run may fail", values=RUN_STATUSES),
        "reason": F("str?", "status: null exactly when ok", size=8192),
        "exit_code": F("int?", "status: 0 when ok", lo=-255, hi=255),
        "instructions": F("int?", "physics: positive when ok, at most 1e10 a second of its process's life and "
                                  "5e10 a second of its items' longest walls in its variant's wall runs",
                          lo=1, hi=2**62),
        "items": F("list", "plan: the campaign's count of the planned items", size=MAX_ITEMS),
        "items[]": F("str", "plan: the planned items the subset rule picks", size=256),
        "errors": F("int", "status: fewer than its items", lo=0, hi=MAX_ITEMS),
        "tool": F("enum", "plan: callgrind", values=("callgrind",)),
        "valgrind": F("str", "identity: one valgrind version for all; a `valgrind --version` line", size=128),
        "command": F("list", "identity: setarch -R valgrind with the flags that count the region only", size=64),
        "command[]": F("str", "identity: setarch -R valgrind with the flags that count the region only",
                       size=4096),
        "env": F("dict", "plan: the environment that makes counts repeat", size=16),
        "env.*": F("str", "plan: the environment that makes counts repeat", size=64, key=ENV_KEY_RE),
        "harness_source_sha256": F("sha256?", "identity: environment.json's harness digest"),
        "workload_sha256": F("sha256?", "identity: workload.json's digest"),
        **INTERPRETER,
        "pid": F("int", "ledger: the ledger's worker for this run", lo=1, hi=2**31),
        **PROCESS,
        **LOG,
    },
    "campaign": {  # data/campaign.json
        "schema": F("str", "parsing: the campaign schema id"),
        "name": F("name", "bag-info: External-Identifier; campaign: campaign.yaml"),
        "description": F("str", "campaign: campaign.yaml", size=4096),
        "notes": F("str", "campaign: campaign.yaml", size=MAX_STR),
        "campaign_path": F("str?", "anchors: the repository's campaign file (verify --repo)", size=4096),
        "order": F("str", "plan: the shuffle of rounds by seed, or campaign.yaml's order; the labels; decision: every "
                          "round interleaves A and B", size=MAX_RUNS),
        "rounds": F("int?", "plan: with seed, gives the order; with budget_s, the round whose look decided, or the "
                            "cap the first round's process walls give", lo=1, hi=MAX_ROUNDS),
        "budget_s": F("num?", "plan: with min_rounds and the first round's process walls, gives the cap on the "
                              "rounds; campaign: campaign.yaml", lo=1.0, hi=MAX_TIMEOUT_S),
        "min_rounds": F("int?", "plan: the first look, at most the rounds; campaign: campaign.yaml", lo=3,
                        hi=MAX_ROUNDS),
        "precision": F("num?", "plan: null, or with budget_s (a workload's rounds: auto) the interval's width that "
                               "ends it (rules.stopped); derived: the looks' precise and the stop; campaign: "
                               "campaign.yaml", lo=PRECISION_LIMITS[0], hi=PRECISION_LIMITS[1]),
        "stage_rounds": F("int?", "plan: with rounds and seed, gives the order; at least 1 exactly with stages",
                          lo=0, hi=MAX_ROUNDS),
        "seed": F("int?", "plan: with rounds, gives the order", lo=0, hi=MAX_SEED),
        "labels": F("list", "plan: follow from the order", size=MAX_RUNS),
        "labels[]": F("label", "plan: follow from the order"),
        "slots": F("int", "identity: every record's slots; campaign: campaign.yaml", lo=1, hi=MAX_SLOTS),
        "timeouts": F("dict", "campaign: campaign.yaml"),
        "timeouts.run_s": F("num", "campaign: campaign.yaml; physics: every process lives within it", lo=1.0,
                            hi=MAX_TIMEOUT_S),
        "timeouts.campaign_s": F("num", "campaign: campaign.yaml; physics: the runner's span within it", lo=1.0,
                                 hi=MAX_TIMEOUT_S),
        "workload": F("dict", "campaign: campaign.yaml"),
        "workload.entry": F("str", "campaign: campaign.yaml", size=512),
        "workload.path": F("str?", "anchors: resolved by the machine (verify --repo)", size=4096),
        "workload.params": F("dict", "campaign: campaign.yaml", size=4096),
        "workload.params.**": F("any", "campaign: campaign.yaml"),
        "workload.sys_path": F("list", "campaign: campaign.yaml", size=64),
        "workload.sys_path[]": F("str", "campaign: campaign.yaml", size=1024),
        "workload.prepare": F("str?", "campaign: campaign.yaml", size=512),
        "workload.items": F("int?", "plan: runner.json's planned items are this many of the workload's; campaign: "
                                    "campaign.yaml", lo=1, hi=MAX_ITEMS),
        "build": F("list", "files: builds.json exactly when there are build commands; campaign: campaign.yaml",
                   size=64),
        "build[]": F("list", "campaign: campaign.yaml", size=256),
        "build[][]": F("str", "campaign: campaign.yaml", size=4096),
        "overrides": F("dict", "campaign: campaign.yaml re-read with them", size=len(OVERRIDES)),
        "overrides.base": F("str", "campaign: campaign.yaml re-read with them", size=256, optional=True),
        "overrides.candidate": F("str", "campaign: campaign.yaml re-read with them", size=256, optional=True),
        "overrides.order": F("str", "campaign: campaign.yaml re-read with them", size=MAX_RUNS, optional=True),
        "overrides.rounds": F("int|str", "campaign: campaign.yaml re-read with them", lo=1, hi=MAX_ROUNDS, size=4,
                              optional=True),
        "overrides.items": F("int", "campaign: campaign.yaml re-read with them", lo=1, hi=MAX_ITEMS, optional=True),
        "overrides.params": F("dict", "campaign: campaign.yaml re-read with them", size=4096, optional=True),
        "overrides.params.**": F("any", "campaign: campaign.yaml re-read with them"),
        "overrides.metrics": F("list", "campaign: campaign.yaml re-read with them", size=2, optional=True),
        "overrides.metrics[]": F("enum", "campaign: campaign.yaml re-read with them", values=METRICS),
        "overrides.budget_s": F("num", "campaign: campaign.yaml re-read with them", lo=1.0, hi=MAX_TIMEOUT_S,
                                optional=True),
        "overrides.threshold": F("num", "campaign: campaign.yaml re-read with them", lo=0.0, hi=0.5, optional=True),
        "revisions": F("dict", "identity: base and candidate"),
        "revisions.base": F("dict", "identity: the base revision"),
        "revisions.base.rev": F("str", "campaign: campaign.yaml", size=256),
        "revisions.base.sha": F("gitsha", "identity: every base record's, revisions.json's and bag-info's SHA"),
        "revisions.candidate": F("dict", "identity: the candidate revision"),
        "revisions.candidate.rev": F("str", "campaign: campaign.yaml", size=256),
        "revisions.candidate.sha": F("gitsha", "identity: every candidate record's, revisions.json's and "
                                               "bag-info's SHA"),
        "python": F("dict", "campaign: campaign.yaml"),
        "python.base": F("str?", "campaign: campaign.yaml (null: the harness's own interpreter)", size=4096),
        "python.candidate": F("str?", "campaign: campaign.yaml (null: the harness's own interpreter)", size=4096),
        "launch": F("enum", "campaign: campaign.yaml; identity: every run's launch.mode", values=LAUNCH_MODES),
        "preload": F("list", "campaign: campaign.yaml (launch.preload: what each zygote imported before it forked; "
                             "empty under fresh launches)", size=MAX_PRELOAD),
        "preload[]": F("str", "campaign: campaign.yaml", size=128),
        "cores": F("list?", "campaign: campaign.yaml's launch.cores, else the runner's first two CPUs; plan: every "
                            "duet run's launch.core; null exactly unless launch is duet", size=DUET_CORES),
        "cores[]": F("int", "campaign: campaign.yaml; plan: two distinct cores", lo=0, hi=MAX_CPU),
        "stages": F("dict", "identity: the stages of every ok stage run; campaign: campaign.yaml", size=MAX_STAGES),
        "stages.*": F("str", "campaign: campaign.yaml", size=512, key=re.compile(r"^.{1,128}\Z", re.S)),
        "optional_stages": F("list", "identity: the stages that may be uninstalled; campaign: campaign.yaml",
                             size=MAX_STAGES),
        "optional_stages[]": F("str", "campaign: campaign.yaml", size=128),
        "stage_calls": F("dict", "derived: parity's call counts; campaign: campaign.yaml", size=MAX_STAGES),
        "stage_calls.*": F("enum", "campaign: campaign.yaml; derived: parity's call counts", values=CALL_MODES),
        "env": F("dict", "campaign: campaign.yaml", size=256),
        "env.*": F("str", "campaign: campaign.yaml", size=4096, key=ENV_KEY_RE),
        "golden": F("str?", "anchors: the repository's golden file; files: golden.json exactly when named",
                    size=4096),
        "golden_sha256": F("sha256?", "identity: golden.json's SHA-256; campaign: campaign.yaml"),
        "noise_floor": F("str?", "anchors: the repository's noise-floor file (verify --repo); identity: set exactly "
                                 "when noise_floor_sha256 is", size=4096),
        "noise_floor_sha256": F("sha256?", "identity: noise_floor.json's SHA-256; campaign: campaign.yaml"),
        "threshold": F("num", "campaign: campaign.yaml; derived: the verdict; decision: at most MAX_BAND", lo=0.0,
                       hi=MAX_BAND),
        "question": F("enum", "campaign: campaign.yaml; derived: the verdict and the looks' design", values=QUESTIONS),
        "margin": F("num?", "campaign: campaign.yaml (null exactly for a claim); derived: a one-sided question's "
                            "verdict; decision: at most MAX_BAND", lo=0.001, hi=MAX_BAND),
        "interference": F("dict", "campaign: campaign.yaml (its bounds, else the contract's); identity: present "
                                  "exactly when the run records are of the current run schema", optional=True),
        "interference.max_steal": F("num", "campaign: campaign.yaml; derived: the disturbed rule",
                                    lo=MAX_STEAL_LIMITS[0], hi=MAX_STEAL_LIMITS[1]),
        "interference.min_cpu_per_wall": F("num?", "campaign: campaign.yaml (null: not declared single-threaded); "
                                                   "derived: the disturbed rule", lo=MIN_CPU_PER_WALL_LIMITS[0],
                                           hi=MIN_CPU_PER_WALL_LIMITS[1]),
        "sandbox": F("dict", "campaign: campaign.yaml (sandbox:, else the default); identity: environment.json's "
                             "sandbox level off exactly when its mode is"),
        "sandbox.mode": F("enum", "campaign: campaign.yaml", values=("on", "off")),
        "sandbox.network": F("bool", "campaign: campaign.yaml; identity: environment.json's network declared "
                                     "exactly when true"),
        "sandbox.read": F("list", "campaign: campaign.yaml", size=MAX_SANDBOX_READ),
        "sandbox.read[]": F("str", "campaign: campaign.yaml", size=4096),
        "parity": F("dict", "derived: parity; campaign: campaign.yaml"),
        "parity.max_ulp": F("int?", "campaign: campaign.yaml; derived: floats may differ by this many units in the "
                                    "last place (null: bit for bit)", lo=0, hi=MAX_ULP_ANY),
        "metrics": F("list", "plan: instruction runs exactly with instructions; campaign: campaign.yaml", size=2),
        "metrics[]": F("enum", "campaign: campaign.yaml", values=METRICS),
        "instructions": F("dict?", "plan: the instruction runs (null: none); campaign: campaign.yaml"),
        "instructions.items": F("int?", "plan: items counted per instruction run; campaign: campaign.yaml", lo=1,
                                hi=MAX_ITEMS),
        "instructions.runs": F("int", "plan: runs per variant; campaign: campaign.yaml", lo=2,
                               hi=MAX_INSTRUCTION_RUNS),
        "instructions.order": F("str", "plan: runs rounds of AB and BA alternating", size=2 * MAX_INSTRUCTION_RUNS),
    },
    "runner": {  # data/receipts/runner.json
        "schema": F("str", "parsing: the runner schema id"),
        "started_at": F("time", "physics: before every process started, within the campaign timeout of the end",
                        lo=T0, hi=T1),
        "ended_at": F("time", "physics: after every process ended, not after the checker's clock or bag-info's date",
                      lo=T0, hi=T1),
        "reason": F("str?", "derived: a reason the runner stopped turns the bundle failed", size=8192),
        "runs_planned": F("int", "plan: the order's length", lo=0, hi=MAX_RUNS),
        "runs_started": F("int", "plan: the records present", lo=0, hi=MAX_RUNS),
        "items_all": F("list", "plan: the items the workload's setup() gave, in order; a superset of golden's "
                               "coverage", size=MAX_ITEMS),
        "items_all[]": F("str", "plan: distinct item ids", size=256),
        "items": F("list", "plan: the subset rule of items_all by workload.items; every ok run's items exactly",
                   size=MAX_ITEMS),
        "items[]": F("str", "plan: the subset rule of items_all by workload.items", size=256),
    },
    "cleanup": {  # data/receipts/cleanup.json
        "schema": F("str", "parsing: the cleanup schema id"),
        "method": F("str", "free", size=1024),
        "processes": F("list", "ledger: one worker per started run", size=MAX_PROCESSES),
        "processes[]": F("dict", "ledger: a process the campaign launched"),
        "processes[].pid": F("int", "ledger: the worker's pid is the record's; distinct", lo=1, hi=2**31),
        "processes[].create_time": F("time", "ledger: a worker's is its process's start; checked after it",
                                     lo=T0, hi=T1),
        "processes[].cmdline": F("list", "free", size=256),
        "processes[].cmdline[]": F("str", "free", size=8192),
        "processes[].run": F("str", "ledger: a started run, a pre-flight or a zygote (ZA1) a run names", size=16),
        "processes[].role": F("enum", "ledger: worker, descendant, preflight or zygote",
                              values=("worker", "descendant", "preflight", "zygote")),
        "processes[].parent": F("int?", "ledger: a forked worker's zygote (the pid its run record names); null for "
                                        "every process the runner started itself", lo=1, hi=2**31),
        "processes[].absent": F("bool", "ledger: as verified; all_absent; comparison.json's status"),
        "processes[].verified": F("enum", "ledger: as absent says", values=("gone", "pid reused", "alive")),
        "processes[].checked_at": F("time", "ledger: after the process's start and its run's end, within the "
                                            "runner's span", lo=T0, hi=T1),
        "count": F("int", "ledger: the number of processes", lo=0, hi=MAX_PROCESSES),
        "all_absent": F("bool", "ledger: all processes absent"),
    },
    "environment": {  # data/environment.json
        "schema": F("str", "parsing: the environment schema id"),
        "cpu_model": F("str", "free", size=512),
        "vector_isa": F("dict", "free"),
        "vector_isa.summary": F("str", "free", size=64),
        "vector_isa.flags": F("list", "free", size=64),
        "vector_isa.flags[]": F("str", "free", size=64),
        "blas": F("str?", "free", size=1024),
        "torch_threads": F("int?", "free", lo=0, hi=4096),
        "torch_runtime": F("dict", "free"),
        "torch_runtime.version": F("str?", "free", size=128),
        "torch_runtime.blas": F("str?", "free", size=128, optional=True),
        "torch_runtime.blas_version": F("str?", "free", size=1024, optional=True),
        "torch_runtime.cpu_capability": F("str?", "free", size=64, optional=True),
        "torch_runtime.threads": F("int?", "free", lo=0, hi=4096, optional=True),
        "torch_runtime.reason": F("str", "free", size=1024, optional=True),
        "cores": F("int", "identity: every ok record's machine.cores", lo=1, hi=1 << 20),
        "physical_cores": F("int?", "physics: at least 1 and at most cores", lo=1, hi=1 << 20),
        "memory_gib": F("num", "free", lo=0.0, hi=1e9),
        "loadavg": F("list", "free", size=3),
        "loadavg[]": F("num", "free", lo=0.0, hi=1e6),
        "kernel": F("str", "free", size=256),
        "os": F("str", "free", size=512),
        "python": F("str", "free", size=64),
        "python_implementation": F("str", "free", size=64),
        "packages": F("dict", "free", size=64),
        "packages.*": F("str?", "free", size=128, key=re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")),
        "harness_version": F("str", "bag-info: Bag-Software-Agent names it", size=64),
        "harness_source_sha256": F("sha256", "identity: every ok record's harness digest"),
        "harness_commit": F("gitsha?", "bag-info: Abba-Harness-Commit names it; null exactly when "
                                       "harness_origin is unknown"),
        "harness_origin": F("enum", "bag-info: Abba-Harness-Commit names it", values=HARNESS_ORIGINS),
        "worker_env": F("dict", "free", size=512),
        "worker_env.*": F("str", "free", size=MAX_STR, key=ENV_KEY_RE),
        "interpreters": F("dict", "identity: every ok record's interpreter of its variant"),
        "interpreters.base": F("dict", "identity: every ok base record's interpreter"),
        "interpreters.base.executable": F("str", "identity: every ok base record's python.executable", size=4096),
        "interpreters.base.version": F("str", "identity: every ok base record's python.version", size=64),
        "interpreters.base.implementation": F("str", "identity: every ok base record's python.implementation",
                                              size=64),
        "interpreters.base.packages": F("dict", "free", size=4096),
        "interpreters.base.packages.*": F("str", "free", size=128, key=re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")),
        "interpreters.candidate": F("dict", "identity: every ok candidate record's interpreter"),
        "interpreters.candidate.executable": F("str", "identity: every ok candidate record's python.executable",
                                               size=4096),
        "interpreters.candidate.version": F("str", "identity: every ok candidate record's python.version", size=64),
        "interpreters.candidate.implementation": F("str", "identity: every ok candidate record's "
                                                          "python.implementation", size=64),
        "interpreters.candidate.packages": F("dict", "free", size=4096),
        "interpreters.candidate.packages.*": F("str", "free", size=128,
                                               key=re.compile(r"^[A-Za-z0-9_.-]{1,128}\Z")),
        "sandbox": F("dict", "identity: the campaign's sandbox setting; derived: comparison.json's sandbox"),
        "sandbox.level": F("enum", "identity: off exactly when campaign.json's sandbox mode is; derived: "
                                   "comparison.json's sandbox", values=SANDBOX_LEVELS),
        "sandbox.reason": F("str?", "identity: null exactly when the level is full", size=2048),
        "sandbox.landlock": F("int?", "identity: Landlock's ABI, set exactly when the level is full or partial",
                              lo=1, hi=1024),
        "sandbox.namespaces": F("bool", "identity: exactly when the level is full"),
        "sandbox.network": F("enum", "identity: declared exactly when campaign.json's sandbox network is; cut "
                                     "exactly with namespaces otherwise", values=SANDBOX_NETWORK),
        "sandbox.scheduling": F("bool", "identity: exactly when the level is full or partial"),
        "sandbox.read": F("list", "identity: campaign.json's sandbox read", size=MAX_SANDBOX_READ),
        "sandbox.read[]": F("str", "free", size=4096),
        "sandbox.write": F("list", "free", size=MAX_SANDBOX_PATHS),
        "sandbox.write[]": F("str", "free", size=4096),
        "isolation": F("dict", "free", optional=True),  # absent in bundles sealed before issue 33
        "isolation.per_run": F("list", "free", size=32),
        "isolation.per_run[]": F("str", "free", size=128),
        "isolation.declared": F("list", "free", size=512),
        "isolation.declared[]": F("str", "free", size=128),
        "isolation.shared": F("list", "free", size=32),
        "isolation.shared[]": F("str", "free", size=512),
        "fleet": F("dict?", "free"),
        "fleet.scheduler": F("enum", "free", values=("ray",)),
        "fleet.node_id": F("str", "free", size=256),
        "fleet.cluster": F("str", "free", size=1024),
        "fleet.cluster_id": F("str?", "free", size=256),
    },
    "revisions": {  # data/receipts/revisions.json
        "schema": F("str", "parsing: the revisions schema id"),
        **{f"{v}{k}": f for v in ("base", "candidate") for k, f in {
            "": F("dict", f"identity: the {v} revision"),
            ".sha": F("gitsha", "identity: campaign.json's SHA"),
            ".rev": F("str", "identity: campaign.json's rev", size=256),
            ".tree_sha256": F("sha256", "anchors: the commit's tree, recomputed (verify --repo)"),
            ".fence": F("dict", "campaign: campaign.yaml's fence", size=256),
            ".fence.*": F("dict", "campaign: campaign.yaml's fence", key=re.compile(r"^.{1,4096}\Z", re.S)),
            ".fence.*.sha256": F("sha256", "campaign: campaign.yaml's fence"),
            ".fence.*.ok": F("bool", "status: a fence that did not hold stops the campaign before it runs"),
            ".note": F("str?", "free", size=4096),
        }.items()},
    },
    "inputs": {  # data/receipts/inputs.json
        "schema": F("str", "parsing: the inputs schema id"),
        "inputs": F("dict", "campaign: campaign.yaml's inputs", size=256),
        "inputs.*": F("dict", "campaign: campaign.yaml's inputs", key=ENV_KEY_RE),
        "inputs.*.sha256": F("sha256", "campaign: campaign.yaml's pin"),
        "inputs.*.path": F("str", "free", size=4096),
        "inputs.*.kind": F("enum", "free", values=("file", "dir")),
        "inputs.*.build": F("list?", "free", size=256),
        "inputs.*.build[]": F("str", "free", size=4096),
    },
    "workload": {  # data/receipts/workload.json
        "schema": F("str", "parsing: the workload schema id"),
        "path": F("str?", "identity: campaign.json's workload.path"),
        "files": F("list", "files: exactly the files under data/workload/, each once, sorted by path",
                   size=MAX_WORKLOAD_FILES),
        "files[]": F("dict", "files: a file under data/workload/"),
        "files[].path": F("str", "files: a file under data/workload/", size=4096),
        "files[].size": F("int", "files: the stored file's size", lo=0, hi=MAX_WORKLOAD_BYTES),
        "files[].sha256": F("sha256", "files: the stored file's SHA-256"),
        "digest": F("sha256?", "identity: the SHA-256 of the files' listing; every ok run's workload digest"),
        "left_out": F("list", "free", size=1024),
        "left_out[]": F("str", "free", size=4096),
    },
    "builds": {  # data/receipts/builds.json
        "schema": F("str", "parsing: the builds schema id"),
        **{f"{v}{k}": f for v in ("base", "candidate") for k, f in {
            "": F("dict", f"files: the {v} tree's build"),
            ".key": F("str", "free", size=64),
            ".tree_sha256": F("sha256", "identity: revisions.json's tree digest of the variant"),
            ".cached": F("bool", "free"),
            ".steps": F("list", "campaign: one per build command", size=64),
            ".steps[]": F("dict", "campaign: a build command"),
            ".steps[].argv": F("list", "free", size=256),
            ".steps[].argv[]": F("str", "free", size=4096),
            ".steps[].exit_code": F("int?", "status: 0 (a failed build stops the campaign before it runs)",
                                    lo=-255, hi=255),
            ".steps[].output_tail": F("str", "free", size=8192),
        }.items()},
    },
    "golden": {  # data/golden.json: the repository's golden file, byte for byte
        "schema": F("str", "parsing: the golden schema id"),
        "campaign": F("str", "free", size=64),
        "source_run": F("str", "free", size=16),
        "sha": F("gitsha", "free"),
        **_under("machine", MACHINE, "free"),
        "machine": F("dict", "free"),
        "bundle_digest": F("sha256", "free"),
        "items": F("dict", "derived: parity.golden; plan: every planned item is one of them", size=1 << 20),
        "items.*": F("dict", "derived: parity.golden", key=re.compile(r"^.{1,256}\Z", re.S)),
        "items.*.fields": F("dict", "derived: parity.golden", size=MAX_FIELDS),
        "items.*.fields.*": F("sha256", "derived: parity.golden", key=re.compile(r"^.{1,128}\Z", re.S)),
        "items.*.error": F("dict?", "derived: parity.golden"),
        "items.*.error.type": F("str", "derived: parity.golden", size=256),
        "items.*.error.message": F("str", "derived: parity.golden", size=MAX_ERROR_MESSAGE),
    },
    "noise_floor": {  # data/noise_floor.json: the campaign's pinned calibration, byte for byte
        "schema": F("str", "parsing: the noise-floor schema id"),
        "campaign": F("name", "identity: this campaign's name"),
        "floor": F("num", "derived: the verdict's band; decision: its own interval's farthest end from 1, at most "
                          "MAX_BAND", lo=0.0, hi=MAX_BAND),
        "bundle_digest": F("sha256", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "machine": F("dict", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        **_under("machine", MACHINE, "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "started_at": F("time", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", lo=T0, hi=T1),
        "rounds": F("int", "identity: noise_floor.json's SHA-256 is the one campaign.json pins; decision: at least "
                           "MIN_ROUNDS", lo=1, hi=MAX_ROUNDS),
        "ratio": F("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins; decision: inside its "
                          "interval", **RATIO),
        "ci95": F("list", "identity: noise_floor.json's SHA-256 is the one campaign.json pins; decision: gives the "
                          "floor", size=2),
        "ci95[]": F("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins; decision: gives the "
                           "floor", **RATIO),
    },
}

# comparison.json: every leaf re-derived from the records by both checkers ("derived").
_D = "derived: re-derived from the records"
_RATIO_CI = {"ratio": F("num?", _D, **RATIO), "ci95": F("list?", _D, size=2), "ci95[]": F("num", _D, **RATIO)}
FIELDS["comparison"] = {
    "schema": F("str", "parsing: the comparison schema id"),
    "campaign": F("name", _D),
    "status": F("enum", _D + "; bag-info: Abba-Status", values=("complete", "failed")),
    "reason": F("str?", _D, size=1 << 20),
    "order": F("str", _D, size=MAX_RUNS),
    "items": F("dict", _D),
    "items.planned": F("int", _D, **COUNT),
    "items.of": F("int", _D, **COUNT),
    "runs": F("list", _D, size=MAX_RUNS),
    "runs[]": F("dict", _D),
    "runs[].label": F("label", _D),
    "runs[].variant": F("enum", _D, values=("base", "candidate")),
    "runs[].sha": F("gitsha", _D),
    "runs[].wall_s": F("num?", _D, **SECONDS),
    "runs[].exit_code": F("int?", _D, lo=-255, hi=255),
    "runs[].status": F("enum", _D, values=RUN_STATUSES),
    "sandbox": F("dict", _D + " from environment.json's sandbox (contract.sandbox_summary)"),
    "sandbox.level": F("enum", _D, values=SANDBOX_LEVELS),
    "sandbox.reason": F("str?", _D, size=2048),
    "wall": F("dict", _D),
    "wall.timer": F("enum", _D, values=(WALL_TIMER,)),
    "wall.base_mean_s": F("num?", _D, **SECONDS),
    "wall.candidate_mean_s": F("num?", _D, **SECONDS),
    "wall.saving_s": F("num?", _D, lo=-MAX_TIMEOUT_S, hi=MAX_TIMEOUT_S),
    "wall.saving_pct": F("num?", _D, **PCT),
    "wall.speedup": F("num?", _D, **RATIO),
    "stages": F("dict", _D, size=MAX_STAGES),
    "stages.*": F("dict", _D),
    "stages.*.calls_per_run": F("any", _D),  # one count, {variant: count} or {label: count}
    "stages.*.calls": F("enum", _D, values=CALL_MODES),
    **{f"stages.*.{v}_{k}": F("num?", _D, **SECONDS) for v in ("base", "candidate") for k in ("self_cpu_s",
                                                                                            "incl_cpu_s")},
    "stages.*.base_installed": F("bool", _D),
    "stages.*.candidate_installed": F("bool", _D),
    "parity": F("dict", _D),
    "parity.identical": F("bool", _D),
    "parity.agree": F("bool", _D + "; outputs agree under the campaign's parity rule (bit for bit, or max_ulp)"),
    "parity.tolerance": F("dict?", _D),
    "parity.tolerance.max_ulp": F("int", _D, lo=0, hi=MAX_ULP_ANY),
    "parity.tolerance.max_ulp_seen": F("int", _D, lo=0, hi=2**64),
    "parity.tolerance.fields_within": F("int", _D, **COUNT),
    "parity.tolerance.over_bound": F("dict", _D + "; the dtypes of differing float fields whose bound (contract.MAX_ULP) "
                                     "max_ulp exceeds: no tolerance for them", size=len(FLOAT_NAMES)),
    "parity.tolerance.over_bound.*": F("int", _D, lo=0, hi=MAX_ULP_ANY, key=re.compile(r"^float(16|32|64)\Z")),
    "parity.reference": F("label?", _D),
    "parity.items": F("int", _D, **COUNT),
    "parity.fields_compared": F("int", _D, **COUNT),
    "parity.fields_identical": F("int", _D, **COUNT),
    "parity.error_returns": F("int", _D, **COUNT),
    "parity.errors_identical": F("bool", _D),
    "parity.call_counts_identical": F("bool", _D),
    "parity.golden": F("dict?", _D),
    "parity.golden.items": F("int", _D, **COUNT),
    "parity.golden.items_checked": F("int", _D, **COUNT),
    "parity.golden.runs": F("int", _D, **COUNT),
    "parity.golden.identical": F("bool", _D),
    "parity.golden.failing": F("list", _D, size=MAX_RUNS),
    "parity.golden.failing[]": F("dict", _D),
    "parity.golden.failing[].run": F("label", _D),
    "parity.golden.failing[].items_differing": F("int", _D, **COUNT),
    "parity.mismatch_count": F("int", _D, **COUNT),
    "parity.mismatches": F("list", _D, size=MAX_LISTED),
    "parity.mismatches[]": F("dict", _D),
    "parity.mismatches[].run": F("label", _D),
    "parity.mismatches[].item": F("str", _D, size=256),
    "parity.mismatches[].field": F("str?", _D, size=128),
    "parity.mismatches[].reason": F("str", _D, size=1024),
    "parity.mismatches[].reference_digest": F("sha256?", _D, optional=True),
    "parity.mismatches[].digest": F("sha256?", _D, optional=True),
    "parity.mismatches[].max_ulp": F("int?", _D, lo=0, hi=2**64, optional=True),
    "parity.note": F("str?", _D, size=1024),
    "parity.divergence": F("list", "decoded: re-derived from the stored arrays' values by harness verify",
                           size=MAX_LISTED),
    "parity.divergence[]": F("dict", "decoded: re-derived from the stored arrays' values by harness verify"),
    "parity.divergence[].**": F("any", "decoded: re-derived from the stored arrays' values by harness verify"),
    "stats": F("dict", _D),
    "stats.method": F("str", _D, size=1024),
    "stats.question": F("enum", _D + " (campaign.json's question)", values=QUESTIONS),
    "stats.threshold": F("num", _D, lo=0.0, hi=MAX_BAND),
    "stats.margin": F("num?", _D + " (campaign.json's margin)", lo=0.001, hi=MAX_BAND),
    "stats.floor": F("num?", _D, lo=0.0, hi=MAX_BAND),
    "stats.band": F("num", _D, lo=0.0, hi=MAX_BAND),
    "stats.claim_band": F("num", _D, lo=0.0, hi=1.0),
    "stats.rounds": F("dict", _D),
    "stats.rounds.n": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.rounds.min": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.rounds.pairs": F("list", _D, size=MAX_RUNS),
    "stats.rounds.pairs[]": F("list", _D, size=2),
    "stats.rounds.pairs[][]": F("label", _D),
    "stats.rounds.unpaired": F("list", _D, size=MAX_RUNS),
    "stats.rounds.unpaired[]": F("label", _D),
    "stats.rounds.log_ratios": F("list", _D, size=MAX_RUNS),
    "stats.rounds.log_ratios[]": F("num", _D, lo=-1e3, hi=1e3),
    "stats.rounds.sd_log": F("num?", _D, lo=0.0, hi=1e3),
    "stats.rounds.t_quantile": F("num?", _D, lo=0.0, hi=1e6),
    "stats.rounds.typical_deviation": F("num?", _D, lo=0.0, hi=1.0),
    "stats.sequential": F("dict?", _D),
    "stats.sequential.method": F("str", _D, size=512),
    "stats.sequential.first": F("int", _D, lo=3, hi=MAX_ROUNDS),
    "stats.sequential.cap": F("int", _D, lo=3, hi=MAX_ROUNDS),
    "stats.sequential.alpha": F("num", _D + " (the design's: rules.design)", lo=0.0, hi=0.5),
    "stats.sequential.sides": F("int", _D, lo=1, hi=2),
    "stats.sequential.levels": F("list", _D + " (the t's and the signs' one-tail nominal level at every look)", size=2),
    "stats.sequential.levels[]": F("num", _D, lo=0.0, hi=0.5),
    "stats.sequential.looks": F("list", _D, size=MAX_ROUNDS),
    "stats.sequential.looks[]": F("dict", _D),
    "stats.sequential.looks[].round": F("int", _D, lo=3, hi=MAX_ROUNDS),
    "stats.sequential.looks[].ci95": F("list?", _D, size=2),
    "stats.sequential.looks[].ci95[]": F("num", _D, **RATIO),
    "stats.sequential.looks[].verdict": F("enum", _D, values=VERDICTS),
    "stats.sequential.looks[].precise": F("bool?", _D + " (with a precision: the interval within it of the look's "
                                                        "ratio, rules.precise; null without one)"),
    "stats.sequential.stopped": F("enum", _D, values=STOPS),
    "stats.sequential.expected_rounds": F("int?", _D + " (at the cap, undecided or imprecise: the rounds in all the "
                                                       "rule expects to need; MAX_ROUNDS + 1: more than one campaign "
                                                       "may run)", lo=1, hi=MAX_ROUNDS + 1),
    "stats.sequential.precision": F("num?", _D + " (campaign.json's precision)", lo=PRECISION_LIMITS[0],
                                    hi=PRECISION_LIMITS[1]),
    "stats.paired": F("dict", _D),
    "stats.paired.metric": F("enum", _D, values=("item wall_s", "run wall_s")),
    "stats.paired.items": F("int", _D, **COUNT),
    "stats.paired.items_excluded": F("int", _D, **COUNT),
    "stats.paired.geomean_ratio": F("num?", _D, **RATIO),
    "stats.paired.ci95": F("list?", _D, size=2),
    "stats.paired.ci95[]": F("num", _D, **RATIO),
    "stats.paired.run_ratio": F("num?", _D, **RATIO),
    "stats.per_item": F("dict?", _D),
    "stats.per_item.items": F("int", _D, **COUNT),
    "stats.per_item.band": F("num", _D, lo=0.0, hi=1.0),
    "stats.per_item.regressed": F("int", _D, **COUNT),
    "stats.per_item.improved": F("int", _D, **COUNT),
    "stats.per_item.note": F("str?", _D + " (why the items cannot be judged)", size=1024),
    "stats.per_item.worst": F("dict?", _D),
    "stats.per_item.worst.id": F("str", _D, size=256),
    "stats.per_item.worst.ratio": F("num", _D, **RATIO),
    "stats.per_item.worst.ci95": F("list?", _D, size=2),
    "stats.per_item.worst.ci95[]": F("num", _D, **RATIO),
    "stats.per_item.table": F("list", _D, size=PER_ITEM_SHOWN),
    "stats.per_item.table[]": F("dict", _D),
    "stats.per_item.table[].id": F("str", _D, size=256),
    "stats.per_item.table[].ratio": F("num", _D, **RATIO),
    "stats.per_item.table[].ci95": F("list?", _D, size=2),
    "stats.per_item.table[].ci95[]": F("num", _D, **RATIO),
    "stats.per_item.more": F("int", _D, **COUNT),
    "stats.family": F("dict?", _D + " (a suite's benchmarks, each a claim of its own; null for a workload)"),
    "stats.family.members": F("int", _D, lo=1, hi=MAX_ITEMS),
    "stats.family.alpha": F("num", _D + " (each benchmark's share)", lo=0.0, hi=0.5),
    "stats.family.counts": F("dict", _D, size=len(VERDICTS)),
    "stats.family.counts.*": F("int", _D + " (every verdict word, how many benchmarks have it)", lo=0, hi=MAX_ITEMS,
                               key=re.compile("^(" + "|".join(VERDICTS) + r")\Z")),
    "stats.family.items": F("list", _D + " (in the planned order)", size=MAX_ITEMS),
    "stats.family.items[]": F("dict", _D),
    "stats.family.items[].id": F("str", _D, size=256),
    "stats.family.items[].n": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.family.items[].ratio": F("num?", _D, **RATIO),
    "stats.family.items[].ci95": F("list?", _D, size=2),
    "stats.family.items[].ci95[]": F("num", _D, **RATIO),
    "stats.family.items[].verdict": F("enum", _D, values=VERDICTS),
    "stats.family.items[].verdict_reason": F("str", _D, size=4096),
    "stats.family.items[].decided_at": F("int?", _D + "; plan: the rounds after it do not time it", lo=1,
                                         hi=MAX_ROUNDS),
    "stats.family.items[].expected_rounds": F("int?", _D, lo=1, hi=MAX_ROUNDS + 1),
    "stats.family.expected_rounds": F("int?", _D, lo=1, hi=MAX_ROUNDS + 1),
    "stats.drift": F("dict?", _D),
    **{f"stats.drift.{v}{k}": f for v in ("base", "candidate") for k, f in {
        "": F("dict?", _D),
        ".first": F("list", _D, size=MAX_RUNS), ".first[]": F("label", _D),
        ".last": F("list", _D, size=MAX_RUNS), ".last[]": F("label", _D),
        ".first_s": F("num", _D, **SECONDS), ".last_s": F("num", _D, **SECONDS),
        ".change_pct": F("num", _D, **PCT)}.items()},
    "stats.drift.ratio": F("dict?", _D),
    "stats.drift.ratio.first_rounds": F("list", _D, size=2),
    "stats.drift.ratio.first_rounds[]": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.drift.ratio.last_rounds": F("list", _D, size=2),
    "stats.drift.ratio.last_rounds[]": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.drift.ratio.first": F("num", _D, **RATIO),
    "stats.drift.ratio.last": F("num", _D, **RATIO),
    "stats.drift.ratio.change_pct": F("num", _D, **PCT),
    "stats.drift.ratio.noise_pct": F("num", _D, **PCT),
    "stats.drift.effect_pct": F("num", _D, **PCT),
    "stats.drift.max_abs_drift_pct": F("num?", _D, **PCT),
    "stats.drift.flagged": F("bool", _D),
    "stats.drift.rule": F("str", _D, size=1024),
    "stats.load": F("dict", _D),
    "stats.load.overloaded": F("list", _D, size=MAX_RUNS),
    "stats.load.overloaded[]": F("label", _D),
    "stats.interference": F("dict", _D + " (present exactly when campaign.json's interference is)", optional=True),
    "stats.interference.max_steal": F("num", _D, lo=MAX_STEAL_LIMITS[0], hi=MAX_STEAL_LIMITS[1]),
    "stats.interference.min_cpu_per_wall": F("num?", _D, lo=MIN_CPU_PER_WALL_LIMITS[0],
                                             hi=MIN_CPU_PER_WALL_LIMITS[1]),
    "stats.interference.steal_runs": F("int", _D, **COUNT),
    "stats.interference.freq_runs": F("int", _D, **COUNT),
    "stats.interference.disturbed": F("list", _D, size=MAX_RUNS),
    "stats.interference.disturbed[]": F("label", _D),
    "stats.interference.disturbed_rounds": F("list", _D, size=MAX_RUNS),
    "stats.interference.disturbed_rounds[]": F("int", _D, lo=1, hi=MAX_RUNS),
    "stats.interference.without": F("dict?", _D),
    "stats.interference.without.rounds": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.interference.without.geomean_ratio": F("num?", _D, **RATIO),
    "stats.interference.without.ci95": F("list?", _D, size=2),
    "stats.interference.without.ci95[]": F("num", _D, **RATIO),
    "stats.interference.without.verdict": F("enum", _D, values=VERDICTS),
    "stats.interference.holds": F("bool", _D),
    "stats.verdict": F("enum", _D, values=VERDICTS),
    "stats.verdict_reason": F("str", _D, size=4096),
    "stats.warnings": F("list", _D, size=64),
    "stats.warnings[]": F("str", _D, size=4096),
    "stats.outside": F("dict", _D + ": the runner's own figures against the claim (rules.outside_veto); "
                                    "always re-derived, so never absent from a bundle that verifies", optional=True),
    "stats.outside.contradicted": F("list", _D, size=MAX_RUNS),
    "stats.outside.contradicted[]": F("label", _D),
    "stats.outside.moved": F("dict?", _D + " (null: fewer than MIN_ROUNDS rounds)"),
    "stats.outside.moved.rounds": F("int", _D, lo=0, hi=MAX_RUNS),
    "stats.outside.moved.saved_s": F("num", _D, lo=-MAX_TIMEOUT_S, hi=MAX_TIMEOUT_S),
    "stats.outside.moved.grown_s": F("num", _D, lo=-MAX_TIMEOUT_S, hi=MAX_TIMEOUT_S),
    "stats.outside.moved.grown_cpu_s": F("num?", _D, lo=-MAX_TIMEOUT_S, hi=MAX_TIMEOUT_S),
    "stats.outside.moved.lower_s": F("list", _D, size=2),
    "stats.outside.moved.lower_s[]": F("num?", _D, lo=-1e9, hi=1e9),
    "stats.outside.moved.flagged": F("bool", _D),
    "stats.outside.holds": F("bool", _D),
    "instructions": F("dict?", _D),
    "instructions.tool": F("enum", _D, values=("callgrind",)),
    "instructions.items": F("int", _D, **COUNT),
    **{f"instructions.{v}{k}": f for v in ("base", "candidate") for k, f in {
        "": F("dict", _D),
        ".runs": F("list", _D, size=MAX_INSTRUCTION_RUNS), ".runs[]": F("str", _D, size=8),
        ".counts": F("list", _D, size=MAX_INSTRUCTION_RUNS), ".counts[]": F("int", _D, lo=1, hi=2**62),
        ".repeated": F("bool", _D), ".spread_pct": F("num?", _D, **PCT)}.items()},
    "instructions.ratio": F("num?", _D, **RATIO),
    "instructions.change_pct": F("num?", _D, **PCT),
    "instructions.repeated": F("bool", _D),
    "instructions.detected": F("bool", _D),
    "instructions.direction": F("enum?", _D, values=("fewer", "more", "same")),
    "instructions.disagrees": F("bool", _D),
    "instructions.contradicted": F("bool", _D + "; the wall's interval rules out the counts' direction "
                                   "(rules.contradicted): their verdict is then inconclusive"),
    "instructions.band": F("num", _D, lo=0.0, hi=2 * PCT["hi"] / 100),  # twice the spread, however large
    "instructions.verdict": F("enum", _D, values=VERDICTS),
    "instructions.verdict_reason": F("str", _D, size=1024),
    "metrics": F("list", _D + " (every metric the campaign measured, in METRIC_DEFINITIONS order)",
                 size=len(METRIC_DEFINITIONS)),
    "metrics[]": F("dict", _D),
    "metrics[].name": F("enum", _D, values=METRIC_NAMES),
    "metrics[].unit": F("enum", _D, values=tuple(sorted({m.unit for m in METRIC_DEFINITIONS}))),
    "metrics[].of": F("str", _D, size=1024),
    "metrics[].n": F("int", _D, lo=0, hi=MAX_RUNS),
    "metrics[].base": F("num?", _D, lo=0.0, hi=1e20),
    "metrics[].candidate": F("num?", _D, lo=0.0, hi=1e20),
    "metrics[].ratio": F("num?", _D, **RATIO),
    "metrics[].ci95": F("list?", _D, size=2),
    "metrics[].ci95[]": F("num", _D, **RATIO),
    "metrics[].band": F("num", _D, lo=0.0, hi=2 * PCT["hi"] / 100),
    "metrics[].verdict": F("enum", _D, values=VERDICTS),
    "metrics[].verdict_reason": F("str", _D, size=4096),
}

# reproduction.json: its own side is bound inside the bundle; the rest is re-derived from this
# bundle and the original by `harness report` and `harness verify --original`.
_O = "original: re-derived from both bundles"
_CLAIM = {"": F("dict", _O), ".ratio": F("num?", _O, **RATIO), ".ci95": F("list?", _O, size=2),
          ".ci95[]": F("num", _O, **RATIO), ".verdict": F("enum", _O, values=VERDICTS),
          ".items": F("int?", _O, **COUNT)}
FIELDS["reproduction"] = {
    "schema": F("str", "parsing: the reproduction schema id"),
    "campaign": F("name", "identity: this campaign's name"),
    "original": F("dict", _O),
    "original.digest": F("sha256", "original: the digest of the bundle re-run"),
    "original.started_at": F("time", _O, lo=T0, hi=T1),
    "original.machine": F("dict", _O),
    **_under("original.machine", MACHINE, _O),
    **{f"original.claim{k}": f for k, f in _CLAIM.items()},
    "reproduction": F("dict", "identity: this bundle's own"),
    "reproduction.started_at": F("time", "identity: runner.json's start", lo=T0, hi=T1),
    "reproduction.machine": F("dict", "identity: environment.json's machine class"),
    **_under("reproduction.machine", MACHINE, "identity: environment.json's machine class"),
    **{f"reproduction.measured{k}": f._replace(rule="identity: comparison.json's ratio, interval and verdict")
       for k, f in _CLAIM.items()},
    "machines": F("dict", _O),
    "machines.same_class": F("bool?", _O),
    "machines.why": F("str", _O, size=1024),
    "scope": F("dict", _O),
    "scope.**": F("any", _O),
    "outputs": F("dict", _O),
    "outputs.**": F("any", _O),
    "timing": F("dict", _O),
    "timing.**": F("any", _O),
    "tolerance": F("num", _O, lo=0.0, hi=1.0),
    "verdict": F("enum", _O, values=REPRODUCTION_VERDICTS),
    "reason": F("str", _O, size=4096),
}

BAG_INFO_FIELDS = {
    "Bag-Software-Agent": F("str", "bag-info: abba-harness and environment.json's harness version", size=128),
    "Bagging-Date": F("date", "physics: the date the runner ended, not after the checker's clock"),
    "Payload-Oxum": F("str", "layout: the payload's size and file count", size=32),
    "Abba-Format": F("enum", "parsing: this contract's format", values=(FORMAT,)),
    "External-Identifier": F("name", "bag-info: campaign.json's name"),
    "Abba-Status": F("enum", "bag-info: comparison.json's status", values=("complete", "failed")),
    "Abba-Base-SHA": F("gitsha", "bag-info: campaign.json's base SHA"),
    "Abba-Candidate-SHA": F("gitsha", "bag-info: campaign.json's candidate SHA"),
    "Abba-Harness-Commit": F("str", "bag-info: environment.json's harness_commit (or none) and (harness_origin)",
                             size=64),
}

# What no checker can bind from the bundle, beyond the fields whose rule is "free", or single
# mutation kinds of a bound field ("path@kind,kind"): the reason, for the docs and the walk.
UNBOUND = {
    ("run", "outside.after_s@/7,zero,swap"): "less of the process's life after its loop is physical: only its life bounds "
                                         "it from above; the moved-outside rule is re-derived from it",
    ("run", "outside.before_s@/7,zero,swap"): "less of the process's life before its loop is physical: only its life "
                                              "bounds it from above; the moved-outside rule is re-derived from it",
    ("run", "outside.latency_s[]@swap"): "which side of the loop a wake-up fell on: their sum is bound (the loop less "
                                         "the worker's wall) and re-derived into the contradictions",
    ("run", "outside.loop_cpu_s@x7,/7,zero,swap"): "the kernel's CPU over the loop anywhere up to cores x the loop "
                                                   "and a tick is physical (a thread that waits; a short loop's tick "
                                                   "is most of it); the contradictions are re-derived from it",
    ("run", "outside.before_cpu_s@/7,zero,swap"): "less CPU before the loop is physical (a process that waits); "
                                                  "the moved-outside rule is re-derived from it",
    ("run", "outside.after_cpu_s@x7,/7,zero,swap"): "the CPU after the loop holds the reaped children's, spent at "
                                                    "any time: no bound; the moved-outside rule is re-derived from it",
    ("environment", "sandbox.landlock@x7"): "another Landlock ABI is another kernel's: any version a kernel may give",
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
    ("run", "memory.loop_peak_bytes@swap"): "another run's loop peak, within this run's process peak and the "
                                            "kernel's mark and above its loop start, is physical: only `harness "
                                            "reproduce` re-measures it",
    ("run", "memory.process_peak_bytes@x7,swap"): "a process's peak above its loop's is physical (setup may peak "
                                                  "higher): only a lower bound exists",
    ("run", "memory.loop_start_bytes@/7,zero,swap"): "a resident set below the loop's peak is physical: only an "
                                                     "upper bound exists",
    ("run", "process.maxrss_bytes@x7,swap,set"): "the kernel's mark carries the launcher's resident set across exec "
                                                 "and fork: only a lower bound (the loop's peak) exists, and a "
                                                 "launcher that could not read it writes null",
    ("instructions", "process.maxrss_bytes@x7,/7,zero,swap,set"): "an instruction run records no memory readings to bound it (valgrind "
                                              "and the worker together); it is kept, never compared",
    ("run", "interference.steal_ticks@x7,zero,swap"): "steal within cores x the wall is physical: a changed "
                                                      "count is re-derived into the disturbed mark, refused only "
                                                      "when it crosses the bound",
    ("run", "interference.cpu_steal_ticks@x7,zero,swap"): "steal within the wall is physical: a changed count is "
                                                          "re-derived into the disturbed mark, refused only when "
                                                          "it crosses the bound",
    ("run", "interference.user_hz@x7,swap"): "another tick length within its range is physical: re-derived into "
                                             "the disturbed mark, refused only when it crosses the bound",
    ("run", "interference.cpu@x7,zero,swap"): "another CPU of the machine is physical: which core the kernel "
                                              "chose no other record holds",
    ("run", "stages.*.calls@x7,zero,swap"): "the workload's own count; a changed count is re-derived into "
                                            "parity (call counts not identical), not refused",
    ("run", "items[].fields.*.digest@swap"): "another stored array of the same dtype and shape: re-derived into "
                                             "parity (outputs differ); which output an item gave only a re-run tells",
    ("run", "items[].error.type@other"): "another error is re-derived into parity (errors differ); which error "
                                         "an item raised only a re-run tells",
    ("run", "items[].error.message@other"): "another error is re-derived into parity (errors differ); which "
                                            "error an item raised only a re-run tells",
    ("runner", "reason@set,other,swap"): "a reason the runner stopped only turns the bundle failed (re-derived "
                                         "into comparison.json and Abba-Status): a failure claimed is never read as "
                                         "a success",
    ("instructions", "instructions@x7,/7,swap"): "a count within what a core retires in its process's life and in its "
                                           "items' walls is physical: counts invented consistently pass; only "
                                           "`harness reproduce` tests them",
    ("runner", "started_at@shift-1h"): "an earlier start within the campaign timeout is physical: building the "
                                        "revisions before the first run takes any time",
    ("runner", "ended_at@shift+1h"): "a later end within the campaign timeout and the bagging date is physical: "
                                     "sealing after the last run takes any time",
    ("cleanup", "processes[].checked_at@swap"): "every absence is checked at the campaign's end: one check "
                                                "time for another is physical",
    ("bag-info", "Bagging-Date@shift+1h,shift-1h"): "a local date: a day either way is the time zone's",
    ("campaign", "seed@x7,zero,huge,swap"): "another seed that shuffles into the same order (1 in 2**rounds) "
                                            "describes the same runs",
}
# Why each "free" field is free, by document (the docs' table lists them with these words).
FREE = {
    ("run", "imported_from.workload"): "an absolute path on the measuring machine; the workload is outside the "
                                       "revisions' trees",
    ("run", "metrics"): "the workload's own counters; nothing else in the bundle repeats them",
    ("run", "memory.reset"): "whether the kernel let the worker reset its high-water mark at the loop's start "
                             "(else loop_peak_bytes is the process's peak up to the loop's end); no rule reads it",
    ("run", "machine.cpu_freq_mhz"): "what the machine reported; no other record holds it",
    ("run", "machine.warmup_s"): "the busy spin before the clock: it precedes every timed figure and changes none; "
                                 "only its range is checked",
    ("run", "machine.loadavg_before"): "the load the machine reported; no other record holds it",
    ("run", "machine.loadavg_after"): "the load the machine reported; no other record holds it",
    ("run", "interference.freq_mhz_before"): "what the kernel's cpufreq reported for the worker's CPU (null where "
                                             "the machine has none); no other record holds it, and no rule reads it",
    ("run", "interference.freq_mhz_after"): "what the kernel's cpufreq reported for the worker's CPU (null where "
                                            "the machine has none); no other record holds it, and no rule reads it",
    ("environment", "sandbox.read[]"): "the folders the runner let the runs read (interpreters, inputs, workload, "
                                       "declared): a machine's paths; campaign.json's declared ones must be among "
                                       "them, and every import origin under one of them",
    ("run", "outside.tripwire[]"): "the names the worker's tripwire gave (its word); that any were given is bound "
                                   "(contradictions)",
    ("run", "outside.scheduling[]"): "the runner's words for the scheduling changes it saw; that any were seen is "
                                     "bound (contradictions)",
    ("run", "outside.violations[]"): "the runner's words for what the worker sent out of protocol; that any were "
                                     "sent is bound (contradictions)",
    ("cleanup", "method"): "prose naming how absence was verified",
    ("cleanup", "processes[].cmdline"): "the command line the ledger saw; only the role and run are bound",
    ("environment", "*"): "what the machine reported (CPU model, ISA, BLAS, packages, load, worker env): no record "
                          "repeats it; `harness reproduce` compares the machine class and a signature says who "
                          "made the bundle",
    ("revisions", "*.note"): "prose about a working-tree snapshot",
    ("inputs", "inputs.*"): "where the input was found and how it was built on the measuring machine; its hash "
                            "is bound",
    ("workload", "left_out"): "what the snapshot left out by its rules (byte code, bundles, the campaign's own "
                              "output); the stored files are bound",
    ("builds", "*"): "the build commands' output as the machine printed it; the commands and tree are bound",
    ("golden", "*"): "the golden file's own description of where it came from; it is pinned by SHA-256 and its "
                     "items are re-derived",
}


# --- rules both the writer and the checkers apply to re-derived sections --------------------
# --- strict, bounded JSON (every JSON document a bundle holds is read through parse_json) --------------------------------------------------------------------
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
    if digits > MAX_INT_DIGITS:
        raise JSONRefused(f"an integer of {digits} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def _finite_float(text):
    if len(text) > MAX_NUMBER_CHARS:
        raise JSONRefused(f"a number written with {len(text)} characters (at most {MAX_NUMBER_CHARS})")
    value = float(text)
    if not math.isfinite(value):  # 1e400 parses to infinity
        raise JSONRefused(f"{text[:20]} is not a finite number")
    return value


def _depth(value, limit):
    """Whether every value in value (itself at depth 1, a member one deeper than its container)
    lies at most limit deep. Only containers are visited: a member's depth is its container's
    plus one, so a container with members at limit is already too deep."""
    if limit < 1:
        return False
    stack = [(value, 1)]
    while stack:
        v, d = stack.pop()
        members = v.values() if isinstance(v, dict) else v if isinstance(v, list) else ()
        if members:
            if d >= limit:
                return False
            for x in members:
                if isinstance(x, (dict, list)):
                    stack.append((x, d + 1))
    return True


def parse_json(data: bytes) -> Any:
    """Strict JSON: UTF-8, no duplicate keys, no NaN, Infinity or number that overflows to it,
    integers within 64 bits, at most contract.MAX_JSON_DEPTH deep."""
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_no_duplicates, parse_constant=_no_constant,
                           parse_float=_finite_float, parse_int=_bounded_int)
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


# --- Student's t, standard library only ---------------------------------------------------------
# --- harness bisect: the first commit that made a campaign slower, or faster ---------------------
# OUT/bisect.json (a receipt beside its step bundles, not part of one) and OUT/steps/NN-<sha12>/,
# one sealed bundle per step. The search rule below is the one the command follows and both
# checkers re-apply to the steps' verified verdicts.
BISECT_FILE = "bisect.json"
BISECT_STEPS = "steps"
BISECT_FOLDER_RE = re.compile(r"^([0-9]{2})-([0-9a-f]{12})\Z")  # NN-<the step's candidate SHA, 12 digits>
MAX_BISECT_COMMITS = 10_000  # first-parent commits good..bad
MAX_BISECT_STEPS = 2 + MAX_BISECT_COMMITS.bit_length()  # the endpoint, the halvings, the culprit's own step
MAX_BISECT_BYTES = 2 << 20  # bisect.json
# A step's verdict: the wall verdict of a complete campaign whose outputs agree, else what stopped it.
BISECT_STEP_VERDICTS = VERDICTS + ("outputs differ", "failed")
# What a search looks for: the commit that made it slower, faster, or either (the ends' own verdict
# says which: bad improved against good, a speed-up; regressed, a slow-down).
BISECT_FIND = ("either", "slower", "faster")
# How a search ends. culprit: one commit named; nothing to find: bad is not slower (faster) than
# good; spread: the change crosses the band at a commit whose own step does not; inconclusive: a
# step could not tell; not monotone: a probe moved the other way; outputs differ, failed: a step's;
# stopped: the search ended before the rule did (interrupted, a pre-flight problem).
BISECT_ENDINGS = ("culprit", "nothing to find", "spread", "inconclusive", "not monotone", "outputs differ",
                  "failed", "stopped")
MAX_PROBE_BAND = MAX_BAND  # a probe is a campaign: the contract's widest band (decision rule) bounds it too

_B = "bisect: "
RECEIPT_FIELDS = {  # receipts beside bundles, not part of one: read by the checkers' own modes
    "bisect": {
        "schema": F("str", "parsing: the bisect schema id"),
        "campaign": F("name", _B + "every step bundle's campaign name"),
        "campaign_sha256": F("sha256", _B + "every step bundle's data/campaign.yaml hashes to it"),
        "good": F("gitsha", _B + "the base of every step but the culprit's own"),
        "bad": F("gitsha", _B + "the last of commits, the first step's candidate"),
        "good_rev": F("str", "free: the revision as the user gave it; its SHA is bound", size=256),
        "bad_rev": F("str", "free: the revision as the user gave it; its SHA is bound", size=256),
        "find": F("enum", _B + "the search rule's input: what it looks for (either: the ends' verdict says)",
                  values=BISECT_FIND),
        "threshold": F("num", _B + "the search rule's input: the first step's band (the campaign file's "
                                   "verdict.threshold, or --band)", lo=0.0, hi=MAX_PROBE_BAND),
        "band": F("num?", _B + "the search rule's input: every step's band (--band); null: the probes' band from the "
                               "ends' ratio (bisect_band)", lo=0.0, hi=MAX_PROBE_BAND),
        "budget_s": F("num", _B + "every step bundle's budget_s", lo=1.0, hi=MAX_TIMEOUT_S),
        "commits": F("list", _B + "the search's input, first-parent good..bad oldest first (`verify --repo` "
                                  "reads the repository's)", size=MAX_BISECT_COMMITS),
        "commits[]": F("gitsha", _B + "each once, good never among them"),
        "steps": F("list", _B + "each the step the search rule asks for, in order", size=MAX_BISECT_STEPS),
        "steps[]": F("dict", _B + "one step: a sealed bundle under steps/"),
        "steps[].step": F("int", _B + "its position, from 1", lo=1, hi=MAX_BISECT_STEPS),
        "steps[].folder": F("str", _B + "steps/NN-<candidate's first 12 hex digits>", size=64),
        "steps[].base": F("gitsha", _B + "the step bundle's base SHA; the rule's"),
        "steps[].candidate": F("gitsha", _B + "the step bundle's candidate SHA; the rule's"),
        "steps[].band": F("num", _B + "the step bundle's verdict.threshold (stats.threshold); the rule's",
                          lo=0.0, hi=MAX_PROBE_BAND),
        "steps[].digest": F("sha256", _B + "the step bundle's digest (SHA-256 of its tag manifest)"),
        "steps[].verdict": F("enum", _B + "the step bundle's verdict (bisect_verdict)", values=BISECT_STEP_VERDICTS),
        "steps[].ratio": F("num?", _B + "the step bundle's candidate/base ratio", **RATIO),
        "steps[].interval": F("list?", _B + "the step bundle's interval of the ratio", size=2),
        "steps[].interval[]": F("num", _B + "the step bundle's interval of the ratio", **RATIO),
        "ending": F("enum", _B + "the search rule's ending (or stopped, while the rule asks for a step)",
                    values=BISECT_ENDINGS),
        "culprit": F("gitsha?", _B + "the search rule's culprit, null unless it names one"),
        "reason": F("str", _B + "the search rule's reason (free text only when stopped)", size=8192),
    },
}
