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
import hashlib
import math
import re
from collections import namedtuple

FORMAT = "abba-harness/bundle/v6"  # the bundle format this contract describes (bag-info Abba-Format)

# --- schema ids: one current set; a file of any other id is refused ------------------------
SCHEMAS = {
    "job": "abba-harness/job/v3",  # runner -> worker, not part of a bundle
    "result": "abba-harness/result/v1",  # worker -> runner, not part of a bundle
    "fleet_run": "abba-harness/fleet-run/v1",  # harness fleet run: OUT/fleet.json, not part of a bundle
    "run": "abba-harness/run/v4",
    "instructions": "abba-harness/instructions/v3",
    "campaign": "abba-harness/campaign/v6",
    "comparison": "abba-harness/comparison/v5",
    "environment": "abba-harness/environment/v3",
    "revisions": "abba-harness/revisions/v3",
    "inputs": "abba-harness/inputs/v3",
    "cleanup": "abba-harness/cleanup/v3",
    "runner": "abba-harness/runner/v3",
    "builds": "abba-harness/builds/v2",
    "workload": "abba-harness/workload/v2",
    "reproduction": "abba-harness/reproduction/v2",
    # Files of the repository that a bundle copies byte for byte (pinned by SHA-256):
    "golden": "abba-harness/golden/v1",
    "noise_floor": "abba-harness/noise-floor/v1",
}
SCHEMA_PREFIX = "abba-harness/"

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
ORDER_RE = re.compile(r"^[ABab]+\Z")
HEX64_RE = re.compile(r"^[0-9a-f]{64}\Z")
GITSHA_RE = re.compile(r"^(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z")
ENV_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}\Z")
STAGE_PATH_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")
ENTRY_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*\Z")
DTYPE_RE = re.compile(r"^([<>|=]?)([biufc])(\d+)$")
OXUM_RE = re.compile(r"^[0-9]{1,19}\.[0-9]{1,9}\Z")
DATE_RE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")
PREFLIGHT_RUNS = ("check:base", "check:candidate")  # the pre-flight workers' rows in the ledger
VARIANTS = {"A": "base", "B": "candidate"}
RUN_STATUSES = ("ok", "failed", "timeout")
BAGIT_TXT = b"BagIt-Version: 1.0\nTag-File-Character-Encoding: UTF-8\n"
ARRAY_PREFIX = b"abba-array-v1\n"
NPY_MAGIC = b"\x93NUMPY"


def run_path(label):
    return f"data/runs/{label}.json"


def instructions_path(label):
    return f"data/instructions/{label}.json"


def log_path(label):
    return f"data/logs/{label}.log"


def array_path(digest):
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


def file_kind(rel):
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


def log_limit():
    """The most bytes a stored log may have: its head, the mark and its tail."""
    return LOG_HEAD_BYTES + LOG_TAIL_BYTES + len(LOG_CUT_MARK % 10**19)


def cut_log(data):
    """A worker's output as the bundle keeps it: whole when it fits, else its head, a line
    saying how much was left out, and its tail. Returns (stored bytes, truncated)."""
    if len(data) <= LOG_HEAD_BYTES + LOG_TAIL_BYTES:
        return data, False
    cut = len(data) - LOG_HEAD_BYTES - LOG_TAIL_BYTES
    return data[:LOG_HEAD_BYTES] + (LOG_CUT_MARK % cut) + data[-LOG_TAIL_BYTES:], True


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

# --- the campaign's defaults (harness/plan/spec.py) -------------------------------------------
DEFAULT_ROUNDS = 20  # the minimum of `rounds: auto`, and what `harness init` writes
DEFAULT_BUDGET_S = 60.0
DEFAULT_STAGE_ROUNDS = 2
DEFAULT_SLOTS = 1
DEFAULT_RUN_TIMEOUT_S = 600.0
DEFAULT_CAMPAIGN_TIMEOUT_S = 1200.0
DEFAULT_THRESHOLD = 0.02
DEFAULT_INSTRUCTION_RUNS = 2
METRICS = ("wall", "instructions")
CALL_MODES = ("equal", "per_variant")
OVERRIDES = ("base", "candidate", "order", "rounds", "items", "params", "metrics")

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

# --- verdicts: the words (harness/outcomes.py gives their exit codes and the verdict line) ----
VERDICTS = ("improved", "regressed", "equal", "inconclusive")
# `harness reproduce`: the re-run is the measurement, the original the claim.
REPRODUCTION_VERDICTS = ("reproduced", "not contradicted", "not reproduced", "partial", "outputs differ",
                         "run failed")
# On a machine of the same class, a re-run's interval, widened by this share either way,
# must hold the claimed ratio (machines of one class still differ by a few percent).
REPRODUCE_TOLERANCE = 0.10


def sig10(x):
    """x rounded to SIG_DIGITS significant digits (None and non-finite kept), so that a number
    re-derived on another machine is the same JSON even when libm differs in the last bit."""
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x) or x == 0.0:
        return x
    return float(f"{x:.{SIG_DIGITS - 1}e}")


def decide(lo, hi, band, run_ratio, what, claim_band=None):
    """(verdict, reason) of a 95% interval [lo, hi] of candidate/base against the equal band
    [1 - band, 1 + band]: improved below it, regressed above it, equal inside it, else
    inconclusive; a claim the run-level ratio of mean walls contradicts (it lies on the other
    side of the band) is inconclusive too; measured under load or drift, a claim must also clear
    the wider claim_band."""
    edges = f"[{1 - band:.4f}, {1 + band:.4f}]"
    ci = f"95% CI [{lo:.4f}, {hi:.4f}] of {what}"
    if lo >= 1 - band and hi <= 1 + band:
        return "equal", f"{ci} lies inside the equal band {edges}"
    if hi < 1 - band:
        verdict, reason = "improved", f"{ci} lies below the equal band {edges}"
    elif lo > 1 + band:
        verdict, reason = "regressed", f"{ci} lies above the equal band {edges}"
    else:
        return "inconclusive", f"{ci} straddles an edge of the equal band {edges}"
    if run_ratio is not None and ((verdict == "improved" and run_ratio > 1 + band)
                                  or (verdict == "regressed" and run_ratio < 1 - band)):
        return "inconclusive", (f"{reason}, but the run-level ratio of mean walls {run_ratio:.4f} lies on "
                                "the other side of the band")
    if claim_band is not None and claim_band > band and not (hi < 1 - claim_band if verdict == "improved"
                                                             else lo > 1 + claim_band):
        return "inconclusive", (f"{reason}, but measured under load or drift a claim must clear "
                                f"[{1 - claim_band:.4f}, {1 + claim_band:.4f}], and it does not")
    return verdict, reason


# --- the plan: definitions both the runner and the checkers follow -------------------------------
def coin(domain, seed, index):
    """A fresh, recorded coin: the low bit of SHA-256("<domain>:<seed>:<index>") is 0."""
    return hashlib.sha256(f"{domain}:{seed}:{index}".encode()).digest()[0] & 1 == 0


def round_order(rounds, seed, stage_rounds=0):
    """Each round one A and one B, A first when coin("abba-rounds-v1", seed, round) (always,
    before a seed is drawn). Stage round j (one a and one b, a first when
    coin("abba-stage-rounds-v1", seed, j)) follows timed round ceil((j + 1) rounds /
    (stage_rounds + 1)), spread through the campaign."""
    after = {-(-(j + 1) * rounds // (stage_rounds + 1)): j for j in range(stage_rounds)}
    out = []
    for i in range(rounds):
        out.append("AB" if seed is None or coin("abba-rounds-v1", seed, i) else "BA")
        if i + 1 in after:
            out.append("ab" if seed is None or coin("abba-stage-rounds-v1", seed, after[i + 1]) else "ba")
    return "".join(out)


def auto_rounds(budget_s, first_round_s, min_rounds, max_rounds=MAX_ROUNDS):
    """`rounds: auto`: as many rounds as fit budget_s when the first round's two runs took
    first_round_s (their process walls, start-up included), within [min_rounds, max_rounds].
    Time alone decides, never a ratio."""
    if not first_round_s > 0:
        return max_rounds
    return max(min_rounds, min(max_rounds, math.ceil(budget_s / first_round_s)))


def labels(order):
    """(label, variant) per run in execution order: ABBA -> A1 B1 B2 A2; ABab -> A1 B1 As1 Bs1."""
    counts, out = {}, []
    for letter in order:
        counts[letter] = counts.get(letter, 0) + 1
        upper = letter.upper()
        out.append((f"{upper}{'s' if letter.islower() else ''}{counts[letter]}", VARIANTS[upper]))
    return out


def instrumented(label, order):
    """A run with stage wrappers: a stage run, or any run of an order without stage runs."""
    return label[1:2] == "s" or order == order.upper()


def timed(label):
    """A run whose wall is in the headline (not a stage run)."""
    return label[1:2] != "s"


def instruction_order(runs):
    """`runs` instruction runs per variant, alternating which goes first: ABBA for 2."""
    return "".join("AB" if k % 2 == 0 else "BA" for k in range(runs))


def schedule(order, instr_order=""):
    """Every run in execution order as (label, variant, index, after): the wall runs of order
    (after None) with the instruction runs spread evenly between them, the j-th of m after wall
    run floor((j + 1) n / (m + 1)) - 1 (None: before the first). index counts within its kind."""
    walls, instr = labels(order), labels(instr_order)
    out = []
    for j, (label, variant) in enumerate(instr):
        at = (j + 1) * len(walls) // (len(instr) + 1) - 1
        out.append((at, 1, j, "I" + label, variant, walls[at][0] if at >= 0 else None))
    out += [(i, 0, i, label, variant, None) for i, (label, variant) in enumerate(walls)]
    return [(label, variant, index, after) for _, _, index, label, variant, after in
            sorted(out, key=lambda row: (row[0] + row[1] * 0.5, row[2]))]


def subset(items, n):
    """`workload.items: N`: N items spread evenly over the workload's list, the first always
    included, the same ones on every run and machine; None: all of them."""
    if n is None or n >= len(items):
        return list(items)
    return [items[(i * len(items)) // n] for i in range(n)]


def listing_digest(rows):
    """The digest of a folder's files as `sha256sum` lists them (rows of {path, sha256},
    sorted by path bytes): (cd DIR && find . -type f -printf '%P\\0' | LC_ALL=C sort -z |
    xargs -0 sha256sum) | sha256sum gives the same."""
    return hashlib.sha256("".join(f"{r['sha256']}  {r['path']}\n" for r in rows).encode()).hexdigest()


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


T0, T1 = 1.0e9, 1.0e10  # epoch seconds a bundle's clocks may show (2001 to 2286)
SECONDS = dict(lo=0.0, hi=MAX_TIMEOUT_S)
PCT = dict(lo=-1e9, hi=1e9)
RATIO = dict(lo=0.0, hi=1e9)
COUNT = dict(lo=0, hi=2**53)

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
        "harness_source_sha256": F("sha256?", "identity: environment.json's harness digest"),
        "workload_sha256": F("sha256?", "identity: workload.json's digest (the folder the worker imported from)"),
        **INTERPRETER,
        "worker_started_at": F("iso?", "physics: an ISO time inside the process's life", size=64),
        "worker_ended_at": F("iso?", "physics: an ISO time inside the process's life, the timed wall within the "
                                     "span", size=64),
        "pid": F("int", "ledger: the ledger's worker for this run", lo=1, hi=2**31),
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
        "order": F("str", "plan: the shuffle of rounds by seed, or campaign.yaml's order; the labels", size=MAX_RUNS),
        "rounds": F("int?", "plan: with seed, gives the order; with budget_s, the first round's process walls give "
                            "it", lo=1, hi=MAX_ROUNDS),
        "budget_s": F("num?", "plan: with min_rounds and the first round's process walls, gives the rounds; "
                              "campaign: campaign.yaml", lo=1.0, hi=MAX_TIMEOUT_S),
        "min_rounds": F("int?", "plan: at most the rounds; campaign: campaign.yaml", lo=2, hi=MAX_ROUNDS),
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
        "threshold": F("num", "campaign: campaign.yaml; derived: the verdict", lo=0.0, hi=0.5),
        "parity": F("dict", "derived: parity; campaign: campaign.yaml"),
        "parity.max_ulp": F("int?", "campaign: campaign.yaml; derived: floats may differ by this many units in the "
                                    "last place (null: bit for bit)", lo=0, hi=2**52),
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
        "processes[].run": F("str", "ledger: a started run or a pre-flight", size=16),
        "processes[].role": F("enum", "ledger: worker, descendant or preflight",
                              values=("worker", "descendant", "preflight")),
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
        "floor": F("num", "derived: the verdict's band", lo=0.0, hi=0.5),
        "bundle_digest": F("sha256", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "machine": F("dict", "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        **_under("machine", MACHINE, "identity: noise_floor.json's SHA-256 is the one campaign.json pins"),
        "started_at": F("time", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", lo=T0, hi=T1),
        "rounds": F("int", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", lo=1,
                    hi=MAX_ROUNDS),
        "ratio": F("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", **RATIO),
        "ci95": F("list", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", size=2),
        "ci95[]": F("num", "identity: noise_floor.json's SHA-256 is the one campaign.json pins", **RATIO),
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
    "wall": F("dict", _D),
    "wall.timer": F("enum", _D, values=("perf_counter",)),
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
    "parity.tolerance.max_ulp": F("int", _D, lo=0, hi=2**52),
    "parity.tolerance.max_ulp_seen": F("int", _D, lo=0, hi=2**64),
    "parity.tolerance.fields_within": F("int", _D, **COUNT),
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
    "stats.method": F("str", _D, size=256),
    "stats.threshold": F("num", _D, lo=0.0, hi=0.5),
    "stats.floor": F("num?", _D, lo=0.0, hi=0.5),
    "stats.band": F("num", _D, lo=0.0, hi=0.5),
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
    "stats.paired": F("dict", _D),
    "stats.paired.metric": F("enum", _D, values=("item wall_s", "run wall_s")),
    "stats.paired.items": F("int", _D, **COUNT),
    "stats.paired.items_excluded": F("int", _D, **COUNT),
    "stats.paired.geomean_ratio": F("num?", _D, **RATIO),
    "stats.paired.ci95": F("list?", _D, size=2),
    "stats.paired.ci95[]": F("num", _D, **RATIO),
    "stats.paired.run_ratio": F("num?", _D, **RATIO),
    "stats.paired.cpu": F("dict?", _D),
    "stats.paired.cpu.metric": F("enum", _D, values=("item cpu_s",)),
    "stats.paired.cpu.items": F("int", _D, **COUNT),
    "stats.paired.cpu.geomean_ratio": F("num?", _D, **RATIO),
    "stats.paired.cpu.ci95": F("list?", _D, size=2),
    "stats.paired.cpu.ci95[]": F("num", _D, **RATIO),
    "stats.per_item": F("dict?", _D),
    "stats.per_item.items": F("int", _D, **COUNT),
    "stats.per_item.band": F("num", _D, lo=0.0, hi=1.0),
    "stats.per_item.regressed": F("int", _D, **COUNT),
    "stats.per_item.improved": F("int", _D, **COUNT),
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
    "stats.verdict": F("enum", _D, values=VERDICTS),
    "stats.verdict_reason": F("str", _D, size=4096),
    "stats.warnings": F("list", _D, size=64),
    "stats.warnings[]": F("str", _D, size=4096),
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
    "instructions.band": F("num", _D, lo=0.0, hi=2 * PCT["hi"] / 100),  # twice the spread, however large
    "instructions.verdict": F("enum", _D, values=VERDICTS),
    "instructions.verdict_reason": F("str", _D, size=1024),
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
}

# What no checker can bind from the bundle, beyond the fields whose rule is "free", or single
# mutation kinds of a bound field ("path@kind,kind"): the reason, for the docs and the walk.
UNBOUND = {
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
    ("run", "machine.cpu_freq_mhz"): "what the machine reported; no other record holds it",
    ("run", "machine.warmup_s"): "the busy spin before the clock: it precedes every timed figure and changes none; "
                                 "only its range is checked",
    ("run", "machine.loadavg_before"): "the load the machine reported; no other record holds it",
    ("run", "machine.loadavg_after"): "the load the machine reported; no other record holds it",
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
