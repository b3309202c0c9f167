"""The campaign every spec test mutates (VALID), and how they mutate it: shared by
tests/unit/test_spec.py, tests/unit/test_spec_fuzz.py and tests/process/test_spec_cli.py."""
from __future__ import annotations

import copy
from pathlib import Path

from hypothesis import strategies as st

class _Delete:
    """The sentinel for "this key removed": its repr names it, so test ids are the same in every
    process (pytest-xdist's workers must collect the same ids)."""

    def __repr__(self) -> str:
        return "DELETE"


DELETE = _Delete()
SOURCE = Path("/campaigns/x.yaml")
HEX = "ab" * 32

VALID = {
    "name": "demo",
    "description": "one line",
    "target": {"build": [{"tree": "demo/tree", "message": "base"},
                         {"patch": "demo/candidate.patch", "message": "cand"}]},
    "base": {"rev": "HEAD~1", "fence": {"demo/core.py": HEX}},
    "candidate": {"rev": "HEAD"},
    "workload": {"entry": "demo_workload:setup", "path": "workloads", "params": {"n": 1, "l": [1, "a"]}},
    "inputs": {"corpus": {"path": "c.jsonl", "sha256": HEX, "build": ["{python}", "make.py", "{path}"]}},
    "order": "ABBA",
    "slots": 2,
    "timeouts": {"run_s": 60, "campaign_s": 300},
    "stages": {"a": "demo.core:f", "b": {"path": "demo.core:C.m", "optional": True}},
    "env": {"OMP_NUM_THREADS": "1"},
    "golden": {"path": "demo/golden.json", "sha256": HEX},
    "verdict": {"threshold": 0.05},
}


def mutated(path: str, value):
    d = copy.deepcopy(VALID)
    keys = path.split("/")
    node = d
    for k in keys[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    last = int(keys[-1]) if isinstance(node, list) else keys[-1]
    if value is DELETE:
        del node[last]
    else:
        node[last] = value
    return d


# --- the fuzzers' shared pieces: every key path of VALID, and any value to put there -------------
def dotted(parts) -> str:
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def all_paths(node, prefix=()):
    """Every key path of VALID, as tuples of keys and list indexes."""
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield prefix + (key,)
        yield from all_paths(value, prefix + (key,))


PATHS = sorted(all_paths(VALID), key=str)
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-(2 ** 80), max_value=2 ** 80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "HEAD", "a:b", "\x00", "\n", "-x", "ABBA", "x" * 100, "../..", "/abs"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5) | st.integers(), inner,
                                                                 max_size=3),
    max_leaves=8,
)


def get(d, parts):
    for p in parts:
        d = d[p]
    return d
