"""`harness microbench span-prefix`: the span finder's `_common_prefix_length` helper vs
the element-by-element loop it replaced, on str and on list[int].

The helper is taken from the candidate revision's source: the campaign's pinned candidate
revision is exported (SHA and fence checked, as for a worker), the module is parsed with
`ast`, and only the helper (and private module-level functions it calls) is compiled and
executed. Nothing else of the module runs, so no transformers, torch or numpy import.

Every case is checked against a linear oracle before it is timed. A case of size P is two
sequences sharing P elements and then differing (size 0: differing at the first element).
The list case uses ints that are distinct objects in the two lists, as two `encode` calls
return them. Results: median microseconds per call over the repeats, and the iterations.

`--differential N` times nothing: it checks the helper against the linear oracle on N seeded
cases (str and list[int]; unicode, NUL, big ints; common prefixes up to a few thousand
elements, every power-of-two boundary), and exits 1 at the first disagreement.
"""
from __future__ import annotations

import ast
import hashlib
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness.plan.checkout import CAMPAIGNS, checkout

HELPER = "_common_prefix_length"
MODULE = "spanfind/tokenize.py"
DEFAULT_CAMPAIGN = CAMPAIGNS / "span_finding.yaml"
MIN_REPEAT_S = 0.02


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[0, 16, 1024, 65536],
                        help="common-prefix lengths to time (default: 0 16 1024 65536)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per case (median reported)")
    parser.add_argument("--json", metavar="FILE", help="also write the results to FILE")
    parser.add_argument("--campaign", default=str(DEFAULT_CAMPAIGN),
                        help="campaign whose candidate revision holds the helper")
    parser.add_argument("--source", metavar="FILE",
                        help="take the helper from this Python file instead of the candidate revision")
    parser.add_argument("--differential", type=int, metavar="N",
                        help="instead of timing, check the helper against a linear oracle on N seeded cases")
    parser.add_argument("--seed", type=int, default=20260917, help="seed of --differential (default 20260917)")


# ---- locating and loading the helper ------------------------------------------------------

def locate_source(args) -> tuple[bytes, str]:
    if args.source:
        path = Path(args.source)
        return path.read_bytes(), str(path)
    with tempfile.TemporaryDirectory(prefix="abba-span-prefix-") as tmp:
        tree = checkout(args.campaign, "candidate", Path(tmp))
        return (tree / MODULE).read_bytes(), f"candidate revision of {args.campaign}"


def _called_names(node: ast.AST) -> set[str]:
    return {n.func.id for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def load_helper(source: bytes, name: str = HELPER):
    """Compile and execute only `name` (and the private functions it calls) from source."""
    tree = ast.parse(source)
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if name not in functions:
        raise SystemExit(f"span-prefix: no function {name} in the candidate source")
    wanted, todo = [], [name]
    while todo:
        current = todo.pop()
        if current in wanted:
            continue
        wanted.append(current)
        todo += sorted(c for c in _called_names(functions[current]) if c.startswith("_") and c in functions)
    body = []
    for fname in wanted:
        node = functions[fname]
        for arg in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs,
                    node.args.vararg, node.args.kwarg):
            if arg is not None:
                arg.annotation = None  # annotations name typing objects we do not import
        node.returns = None
        node.decorator_list = []
        body.append(node)
    module = ast.Module(body=body, type_ignores=[])
    namespace: dict = {"__name__": "span_prefix_helper"}
    exec(compile(module, "<candidate spanfind/tokenize.py>", "exec"), namespace)
    return namespace[name]


# ---- oracle, loop and cases ------------------------------------------------------------

def oracle(left, right) -> int:
    count = 0
    for a, b in zip(left, right):
        if a != b:
            break
        count += 1
    return count


def loop(left, right) -> int:
    """The base revision's element-by-element loop."""
    start = 0
    limit = min(len(left), len(right))
    while start < limit and left[start] == right[start]:
        start += 1
    return start


def make_case(kind: str, size: int):
    if kind == "str":
        alphabet = "abcdefghijklmnopqrstuvwxyz <>{}\n"
        prefix = "".join(alphabet[(i * 7 + i // 13) % len(alphabet)] for i in range(size))
        return prefix + "x" + "tail", prefix + "y" + "tail"

    def ids(last: int) -> list[int]:  # built twice: equal values, distinct int objects
        return [1000 + (i * 7919) % 150000 for i in range(size)] + [last, 1001]

    return ids(151000), ids(151001)


# Alphabets small enough that long common runs happen by chance; NUL, combining marks and
# astral characters for str, values around machine-word and bignum limits for lists.
_CHARS = ["ab", "a\0", "e\u0301\u00e9", "\U0001F680\U0001F468\u200d", "\u6f22\ud7ff\U00010000x"]
_INTS = [[0, 1], [-1, 2**63 - 1, 2**63], [2**65, -(2**65), 7], list(range(151_640, 151_650))]


def random_pair(rng: random.Random):
    """Two sequences of one kind sharing a seeded prefix; lists hold distinct int objects."""
    roll = rng.random()
    if roll < 0.03:
        common = rng.choice([1, 2, 3]) * 2 ** rng.randint(1, 11) + rng.choice([-1, 0, 1])
    elif roll < 0.1:
        common = rng.randint(0, 2000)
    else:
        common = rng.randint(0, 200)
    tails = (rng.randint(0, 8), rng.randint(0, 8))
    if rng.random() < 0.5:
        alphabet = rng.choice(_CHARS)
        head = "".join(rng.choices(alphabet, k=common))
        return tuple(head + "".join(rng.choices(alphabet, k=n)) for n in tails)
    values = rng.choice(_INTS)
    head = rng.choices(values, k=common)
    # `v + 0` builds a new object for every int outside the small-int cache.
    return tuple([v + 0 for v in head] + rng.choices(values, k=n) for n in tails)


def differential(helper, count: int, seed: int) -> int:
    """Check helper(a, b) == oracle(a, b) on seeded pairs, both orders; returns the checks
    made (>= count). Raises AssertionError naming the first disagreement."""
    rng = random.Random(seed)
    checks = 0
    while checks < count:
        left, right = random_pair(rng)
        for a, b in ((left, right), (right, left)):
            expected, got = oracle(a, b), helper(a, b)
            if got != expected:
                raise AssertionError(f"check {checks}: helper {got}, oracle {expected} "
                                     f"({type(a).__name__} of {len(a)} and {len(b)})")
            checks += 1
    return checks


def _time_per_call_us(func, left, right, repeats: int) -> tuple[float, int]:
    iterations = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(iterations):
            func(left, right)
        if time.perf_counter() - t0 >= MIN_REPEAT_S or iterations >= 1 << 22:
            break
        iterations *= 2
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(iterations):
            func(left, right)
        samples.append((time.perf_counter() - t0) / iterations * 1e6)
    return statistics.median(samples), iterations


def measure(helper, sizes: list[int], repeats: int) -> list[dict]:
    cases = []
    for kind in ("str", "list"):
        for size in sizes:
            left, right = make_case(kind, size)
            expected = oracle(left, right)
            for label, func in (("loop", loop), ("helper", helper)):
                got = func(left, right)
                if got != expected:
                    raise SystemExit(f"span-prefix: {label} returned {got}, oracle {expected} "
                                     f"({kind}, size {size}); nothing timed")
            loop_us, loop_n = _time_per_call_us(loop, left, right, repeats)
            helper_us, helper_n = _time_per_call_us(helper, left, right, repeats)
            cases.append({"kind": kind, "size": size, "loop_us": round(loop_us, 4),
                          "helper_us": round(helper_us, 4),
                          "iterations": {"loop": loop_n, "helper": helper_n},
                          "speedup": round(loop_us / helper_us, 3) if helper_us else None})
    return cases


def main(args) -> int:
    source, origin = locate_source(args)
    helper = load_helper(source)
    if args.differential is not None:
        try:
            checks = differential(helper, args.differential, args.seed)
        except AssertionError as exc:
            print(f"span-prefix: {HELPER} disagrees with the oracle: {exc}")
            return 1
        print(f"helper: {HELPER} from {origin}")
        print(f"source sha256: {hashlib.sha256(source).hexdigest()}")
        print(f"differential: {checks} checks against the linear oracle (seed {args.seed}), all equal")
        return 0
    cases = measure(helper, list(args.sizes), int(args.repeats))
    result = {"source_sha256": hashlib.sha256(source).hexdigest(), "source": origin,
              "repeats": int(args.repeats), "python": sys.version.split()[0], "cases": cases}
    print(f"helper: {HELPER} from {origin}")
    print(f"source sha256: {result['source_sha256']}")
    print(f"{'kind':5s} {'size':>7s} {'loop us':>12s} {'(iters)':>9s} {'helper us':>12s} {'(iters)':>9s} {'speedup':>9s}")
    for c in cases:
        print(f"{c['kind']:5s} {c['size']:7d} {c['loop_us']:12.3f} {c['iterations']['loop']:9d} "
              f"{c['helper_us']:12.3f} {c['iterations']['helper']:9d} {c['speedup']:8.2f}x")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    return 0
