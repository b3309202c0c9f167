"""The layout is the data's journey and imports only point down it: a module imports from its
own package or from a layer below, never above (lazy imports included), so a change in the
report never reaches the runner and the reviewer's checker stays at the bottom."""
from __future__ import annotations

import ast
import functools
import tomllib

from conftest import ROOT

# Bottom first. contract and rehash: the closed contract, the decision rules both sides replay
# over it (rules), and its standard-library checker (legacy, beside the contract: the frozen
# checkers of earlier generations, which rehash runs);
# then the records, the bundle on disk, the statistics, the exit codes and words, the plan,
# the worker that runs in the code under test's interpreter (its own room besides:
# tests/unit/test_worker_room.py), the engine that runs the plan, signatures, the judges, the
# renderers, fleets, self-tests, commands.
LAYERS = [
    {"contract", "legacy"},
    {"rules"},
    {"rehash", "records", "files"},
    {"bundle"},
    {"comparison"},
    {"outcomes"},
    {"clone"},
    {"plan"},
    {"worker"},
    {"engine"},
    {"attest"},
    {"judge"},
    {"render"},
    {"fleet"},
    {"selftest"},
    {"commands"},
    {"cli"},
    {"__main__"},
]
LAYER = {name: depth for depth, names in enumerate(LAYERS) for name in names}
PACKAGE = ROOT / "harness"
# Earlier generations' checkers, frozen byte for byte as git holds them (harness/legacy,
# tests/unit/test_legacy.py): their imports are their own time's, run as scripts, never imported.
FROZEN = PACKAGE / "legacy" / "vendor"


def _modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if FROZEN not in p.parents)


def _unit(path) -> str:
    """The layer unit a file belongs to: its sub-package, or its module at the top."""
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _imported(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module
            yield from (f"{node.module}.{a.name}" for a in node.names)


@functools.cache
def _imports_of(path) -> tuple[str, ...]:
    """What a module imports (_imported), parsed once for the tests here."""
    return tuple(_imported(ast.parse(path.read_text())))


def test_every_module_has_a_layer():
    units = {_unit(p) for p in _modules()} - {"__init__"}
    assert sorted(units - set(LAYER)) == []


def test_imports_point_down_the_journey():
    upward = []
    for path in _modules():
        me = _unit(path)
        if me == "__init__":
            continue
        for name in _imports_of(path):
            parts = name.split(".")
            if parts[0] != "harness" or len(parts) < 2 or parts[1] not in LAYER or parts[1] == me:
                continue
            if LAYER[parts[1]] >= LAYER[me]:
                upward.append(f"{path.relative_to(ROOT)} imports {name}")
    assert upward == []


def test_what_the_type_gate_does_not_follow_is_never_imported():
    """pyproject.toml's follow_imports = "skip" modules (torch, the ray libraries beside its core
    API) are Any to mypy (tests/unit/test_types.py): were a module of harness to import one, the
    names it uses from it would go unchecked. None does."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    skipped = [name for override in config["overrides"] if override.get("follow_imports") == "skip"
               for name in override["module"]]
    assert "torch" in skipped and "ray.data" in skipped

    def is_skipped(module: str) -> bool:
        return any(module == s or (s.endswith(".*") and module.startswith(s[:-1])) for s in skipped)

    found = [f"{path.relative_to(ROOT)} imports {name}" for path in _modules() for name in _imports_of(path)
             if is_skipped(name)]
    assert found == [], "harness imports modules the type gate does not follow (pyproject.toml [tool.mypy])"
