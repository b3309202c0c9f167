"""The worker's own room (harness/worker/__init__.py): what runs in the code under test's
interpreter imports only the standard library, numpy, harness.worker and the few bottom modules it
shares with the runner (SHARED), lazy imports included, and keeps to Python 3.9: its syntax, the
3.10+ constructs that parse but fail there at run time, and, where pyenv has a CPython 3.9, that
interpreter compiling and importing every module of the room."""
from __future__ import annotations

import ast
import io
import json
import os
import re
import subprocess
import sys
import tokenize
from pathlib import Path

import pytest

from conftest import ROOT

PACKAGE = ROOT / "harness"
WORKER = "harness.worker"
# What the worker shares with the runner, each for one reason: the contract (limits, suite
# entries), the decision rules the records it writes derive their marks by (rules.py: a run's
# label kind, its interference and outside contradictions), the records it writes, file helpers (atomic writes, digests), the workload folder's
# digest (taken again before any import from it), a suite's select rule (the spec validates it
# too) and the output arrays' store (the checkers read it too).
SHARED = {"harness.contract", "harness.rules", "harness.records", "harness.files", "harness.plan.workload", "harness.plan.suite",
          "harness.bundle.arrays"}
THIRD_PARTY = {"numpy"}
# The names a shared module's imports have when rehash.py, run alone, loaded them from beside itself
# (rules.py reads the contract as abba_contract there): the same module of the room.
LOADED_BESIDE = {"abba_contract": "harness.contract"}
# What a suite adapter takes from the user's interpreter, as the suite's own tool does there, each
# imported lazily (inside the function that needs it: the room imports without them) and refused in
# one line where missing: pytest collects and sets up a pytest suite (and pytest-benchmark's own
# hook declarations are used when it is installed); pympler's asizeof is how asv sizes a mem_
# benchmark's object.
USERS_OWN = {"harness.worker.suites.pytest_suite": {"pytest", "pytest_benchmark"},
             "harness.worker.suites.asv": {"pympler"}}
# Standard-library modules newer than 3.9 (sys.stdlib_module_names is this interpreter's).
NEW_MODULES = {"tomllib": "3.11"}
# Names of the standard library newer than 3.9, as module.attribute (read as `mod.name` or
# `from mod import name`): each fails under 3.9 only when the line runs.
NEW_NAMES = {
    "itertools": {"pairwise": "3.10", "batched": "3.12"},
    "contextlib": {"aclosing": "3.10", "chdir": "3.11"},
    "typing": {name: "3.10+" for name in ("TypeAlias", "ParamSpec", "TypeGuard", "Concatenate", "is_typeddict",
                                           "Self", "LiteralString", "Never", "assert_never", "assert_type",
                                           "reveal_type", "Required", "NotRequired", "TypeVarTuple", "Unpack",
                                           "dataclass_transform", "override", "get_overloads", "TypeAliasType")},
    "dataclasses": {"KW_ONLY": "3.10"},
    "sys": {"stdlib_module_names": "3.10", "orig_argv": "3.10", "exception": "3.11", "monitoring": "3.12"},
    "inspect": {"get_annotations": "3.10", "getmembers_static": "3.11", "markcoroutinefunction": "3.12"},
    "types": {"EllipsisType": "3.10", "NoneType": "3.10", "NotImplementedType": "3.10", "UnionType": "3.10"},
    "hashlib": {"file_digest": "3.11"},
    "enum": {"StrEnum": "3.11", "ReprEnum": "3.11", "verify": "3.11", "member": "3.11", "nonmember": "3.11"},
    "math": {"cbrt": "3.11", "exp2": "3.11", "sumprod": "3.12"},
    "datetime": {"UTC": "3.11"},
    "operator": {"call": "3.11"},
    "os": {"eventfd": "3.10", "splice": "3.10", "process_cpu_count": "3.13"},
    "re": {"NOFLAG": "3.11"},
    "statistics": {"correlation": "3.10", "covariance": "3.10", "linear_regression": "3.10"},
    "logging": {"getLevelNamesMapping": "3.11"},
}
NEW_BUILTINS = {"aiter": "3.10", "anext": "3.10", "EncodingWarning": "3.10", "ExceptionGroup": "3.11",
                "BaseExceptionGroup": "3.11"}
NEW_METHODS = {"bit_count": "int.bit_count, 3.10", "hardlink_to": "Path.hardlink_to, 3.10",
               "add_note": "BaseException.add_note, 3.11", "is_junction": "Path.is_junction, 3.12",
               "with_segments": "Path.with_segments, 3.12"}
# Keyword arguments newer than 3.9, by the called name.
NEW_KEYWORDS = {"zip": {"strict": "3.10"}, "dataclass": {"slots": "3.10", "kw_only": "3.10", "match_args": "3.10",
                                                         "weakref_slot": "3.11"},
                "field": {"kw_only": "3.10"}, "TemporaryDirectory": {"ignore_cleanup_errors": "3.10", "delete": "3.12"},
                "NamedTemporaryFile": {"delete_on_close": "3.12"}, "rmtree": {"onexc": "3.12"},
                "glob": {"root_dir": "3.10", "dir_fd": "3.10"}, "bisect_left": {"key": "3.10"},
                "bisect_right": {"key": "3.10"}, "insort_left": {"key": "3.10"}, "insort_right": {"key": "3.10"}}
TYPE_NAMES = {"int", "float", "complex", "bool", "str", "bytes", "bytearray", "list", "dict", "tuple", "set",
              "frozenset", "type", "object", "Optional", "Union", "Any", "Callable"}


def module_path(name: str) -> Path | None:
    """The file of a harness module (a package's __init__.py), or None when the name is not one."""
    rel = Path(*name.split("."))
    for path in (ROOT / rel.with_suffix(".py"), ROOT / rel / "__init__.py"):
        if path.is_file():
            return path
    return None


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    return ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)


def imports(path: Path):
    """(line, module) for every import of a file, lazy ones included: `from pkg import mod` is an
    import of pkg.mod where that is a harness module; a relative import is refused (None)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                yield node.lineno, None
                continue
            yield node.lineno, node.module
            for alias in node.names:
                if node.module.split(".")[0] == "harness" and module_path(f"{node.module}.{alias.name}"):
                    yield node.lineno, f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str) and (
                    (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
                    or (isinstance(node.func, ast.Name) and node.func.id == "__import__")):
            yield node.lineno, node.args[0].value


PACKAGES = {".".join(name.split(".")[:depth]) for name in SHARED for depth in range(1, name.count(".") + 1)}


def allowed(name: str) -> bool:
    """A harness module of the room: the worker's package, SHARED, or a package above them."""
    return name == WORKER or name.startswith(WORKER + ".") or name in SHARED or name in PACKAGES


def room() -> dict[str, Path]:
    """Every module of the room the worker reaches, from harness/worker/ outward, with the packages
    above each (their __init__ runs first); an import out of the room is not followed (the test
    below names it)."""
    seen: dict[str, Path] = {}
    pending = sorted((PACKAGE / "worker").rglob("*.py"))
    while pending:
        path = pending.pop()
        name = module_name(path)
        if name in seen:
            continue
        seen[name] = path
        parts = name.split(".")
        for depth in range(1, len(parts)):
            parent = module_path(".".join(parts[:depth]))
            if parent is not None:
                pending.append(parent)
        for _, imported in imports(path):
            if imported and imported.split(".")[0] == "harness" and allowed(imported):
                found = module_path(imported)
                if found is not None:
                    pending.append(found)
    return seen


ROOM = room()


def top_level_lines(path: Path) -> set[int]:
    """Lines of the imports a module runs when it is imported (outside any function)."""
    lines: set[int] = set()
    pending = list(ast.parse(path.read_text()).body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.add(node.lineno)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            pending.extend(ast.iter_child_nodes(node))
    return lines


def test_the_worker_imports_only_its_room():
    wrong = []
    for name, path in sorted(ROOM.items()):
        eager = top_level_lines(path)
        for line, imported in imports(path):
            where = f"{path.relative_to(ROOT)}:{line}"
            if imported is None:
                wrong.append(f"{where}: a relative import (the room imports by absolute name)")
                continue
            imported = LOADED_BESIDE.get(imported, imported)
            top = imported.split(".")[0]
            if top == "harness":
                if module_path(imported) is None:
                    continue  # `from harness.x import Name`: the module itself is yielded too
                if not allowed(imported):
                    wrong.append(f"{where}: imports {imported}, outside the worker's room")
            elif top in USERS_OWN.get(name, ()):
                if line in eager:
                    wrong.append(f"{where}: imports {imported} when the module is imported (the user's own "
                                 "interpreter may lack it: import it where it is needed)")
            elif top in NEW_MODULES:
                wrong.append(f"{where}: imports {imported}, new in Python {NEW_MODULES[top]}")
            elif top not in sys.stdlib_module_names and top not in THIRD_PARTY:
                wrong.append(f"{where}: imports {imported}, neither the standard library nor numpy")
    assert wrong == []


def test_an_import_of_the_users_own_is_found_when_it_runs_at_import(tmp_path):
    """USERS_OWN's rule: an import the module runs when it is imported (at the top, in a class
    body, under `if`/`try`) is eager; one inside a function is lazy."""
    path = tmp_path / "probe.py"
    path.write_text("import os\ntry:\n    import pytest\nexcept ImportError:\n    pass\n\n\nclass A:\n"
                    "    import json\n\n\ndef f():\n    import pytest\n    return pytest\n")
    assert top_level_lines(path) == {1, 3, 9}


def test_the_room_is_what_the_worker_reaches():
    """SHARED lists no module the worker no longer reaches, and the room is the worker's package,
    those modules and the packages above them."""
    reached = {name for name in ROOM if name != WORKER and not name.startswith(WORKER + ".")}
    packages = {name for name in reached if ROOM[name].name == "__init__.py"}
    assert reached - packages == SHARED


def test_a_fresh_worker_and_a_zygote_load_no_harness_module_outside_the_room():
    """Imported for real (what a zygote holds before it forks, and every suite adapter): the
    harness modules then in sys.modules are the room's."""
    names = sorted(name for name in ROOM if name.startswith(WORKER + "."))
    code = ("import json, sys\n" + "".join(f"import {n}\n" for n in names if not n.endswith("__main__")) +
            "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'harness')))")
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert sorted(set(json.loads(result.stdout)) - set(ROOM)) == []


# --- Python 3.9 -----------------------------------------------------------------------------------
def group_withs(source: str) -> set[int]:
    """Lines of `with (a as b, c as d):`, parenthesized context managers (3.10's grammar; CPython
    3.9's parser happens to take them, its grammar does not)."""
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(source).readline)
              if t.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT)]
    lines = set()
    for i, tok in enumerate(tokens[:-1]):
        if tok.type != tokenize.NAME or tok.string != "with" or tokens[i + 1].string != "(":
            continue
        depth, items, named = 0, 1, False
        for j in range(i + 1, len(tokens) - 1):
            after = tokens[j]
            if after.type == tokenize.OP:
                depth += {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}.get(after.string, 0)
                items += depth == 1 and after.string == ","
            named = named or (depth == 1 and after.type == tokenize.NAME and after.string == "as")
            if depth == 0:
                if tokens[j + 1].string == ":" and (named or items > 1):
                    lines.add(tok.start[0])
                break
    return lines


def annotations(tree) -> set[int]:
    """ids of the nodes under annotations (evaluated at run time only without the __future__ import)."""
    out = set()
    for node in ast.walk(tree):
        roots = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            roots = [node.returns] + [a.annotation for a in (node.args.posonlyargs + node.args.args +
                                                              node.args.kwonlyargs + [node.args.vararg,
                                                                                      node.args.kwarg]) if a]
        elif isinstance(node, ast.AnnAssign):
            roots = [node.annotation]
        for root in roots:
            if root is not None:
                out.update(id(n) for n in ast.walk(root))
    return out


def typeish(node) -> bool:
    """An operand of `|` that is a type (a union, 3.10+ at run time), not a number or a flag."""
    if isinstance(node, ast.Constant):
        return node.value is None
    if isinstance(node, ast.Subscript):
        return typeish(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return typeish(node.left) or typeish(node.right)
    if isinstance(node, ast.Name):
        return node.id in TYPE_NAMES or bool(re.fullmatch(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*", node.id))
    return False


def called(node) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def newer_than_3_9(path: Path) -> list[str]:
    """What in one module needs Python 3.10 or newer: its syntax (the parser's own 3.9 mode), and
    what parses but fails when the line runs under 3.9."""
    source = path.read_text()
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    try:
        tree = ast.parse(source, filename=str(rel), feature_version=(3, 9))
    except SyntaxError as exc:
        return [f"{rel}:{exc.lineno}: {exc.msg}"]
    out = [f"{rel}:{line}: parenthesized context managers (3.10)" for line in sorted(group_withs(source))]
    future = any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and
                 any(a.name == "annotations" for a in n.names) for n in tree.body)
    annotated = annotations(tree) if future else set()
    modules = {}  # local name -> standard-library module, for `mod.name`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update({(a.asname or a.name): a.name for a in node.names})
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr) and id(node) not in annotated \
                and (typeish(node.left) or typeish(node.right)):
            out.append(f"{where}: `X | Y` of types evaluated at run time (3.10)")
        elif isinstance(node, ast.ImportFrom) and node.module in NEW_NAMES:
            out += [f"{where}: {node.module}.{a.name} ({NEW_NAMES[node.module][a.name]})" for a in node.names
                    if a.name in NEW_NAMES[node.module]]
        elif isinstance(node, ast.Attribute):
            owner = modules.get(node.value.id) if isinstance(node.value, ast.Name) else None
            if owner in NEW_NAMES and node.attr in NEW_NAMES[owner]:
                out.append(f"{where}: {owner}.{node.attr} ({NEW_NAMES[owner][node.attr]})")
            elif node.attr in NEW_METHODS:
                out.append(f"{where}: .{node.attr} ({NEW_METHODS[node.attr]})")
        elif isinstance(node, ast.Name) and node.id in NEW_BUILTINS:
            out.append(f"{where}: {node.id} ({NEW_BUILTINS[node.id]})")
        elif isinstance(node, ast.Call):
            name = called(node)
            for kw in node.keywords:
                if kw.arg in NEW_KEYWORDS.get(name or "", {}):
                    out.append(f"{where}: {name}({kw.arg}=) ({NEW_KEYWORDS[name][kw.arg]})")
            if name in ("format_exception", "print_exception") and len(node.args) == 1 and not node.keywords:
                out.append(f"{where}: traceback.{name}(exc) with one argument (3.10)")
    return out


def test_the_room_keeps_to_python_3_9():
    assert [line for path in ROOM.values() for line in newer_than_3_9(path)] == []


@pytest.mark.parametrize("source, found", [
    ("match x:\n    case 1:\n        pass\n", "Pattern matching"),
    ("with (open(a) as f, open(b) as g):\n    pass\n", "parenthesized context managers"),
    ("with (open(a)) as f:\n    pass\n", None),
    ("ok = isinstance(x, int | None)\n", "`X | Y` of types"),
    ("Alias = Optional[int] | Job\n", "`X | Y` of types"),
    ("flags = os.O_WRONLY | os.O_CREAT\nbits = 3 | n\n", None),
    ("def f(x: int | None) -> str | None:\n    pass\n", "`X | Y` of types"),
    ("from __future__ import annotations\ndef f(x: int | None) -> str | None:\n    pass\n", None),
    ("for a, b in zip(x, y, strict=True):\n    pass\n", "zip(strict=)"),
    ("@dataclass(frozen=True, slots=True)\nclass A:\n    pass\n", "dataclass(slots=)"),
    ("n = (5).bit_count()\n", ".bit_count"),
    ("import itertools as it\npairs = it.pairwise(x)\n", "itertools.pairwise"),
    ("from typing import TypeAlias\n", "typing.TypeAlias"),
    ("import os\nos.chdir(d)\n", None),
    ("import traceback\ntraceback.print_exception(exc)\n", "with one argument"),
])
def test_what_the_3_9_check_finds(tmp_path, source, found):
    path = tmp_path / "probe.py"
    path.write_text(source)
    lines = newer_than_3_9(path)
    assert (lines == []) if found is None else any(found in line for line in lines), lines


def python_3_9() -> str:
    """A CPython 3.9 (pyenv's), or the test is skipped saying so."""
    versions = Path.home() / ".pyenv" / "versions"
    found = sorted(versions.glob("3.9.*/bin/python")) if versions.is_dir() else []
    if not found:
        pytest.skip(f"no CPython 3.9 on this machine ({versions}/3.9.*): the room's 3.9 syntax is checked above")
    return str(found[-1])


def run_3_9(python: str, code: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([python, "-s", "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_python_3_9_compiles_the_room():
    python = python_3_9()
    code = ("import sys\nbad = []\nfor path in sys.argv[1:]:\n"
            "    try:\n        compile(open(path, 'rb').read(), path, 'exec', dont_inherit=True)\n"
            "    except SyntaxError as exc:\n        bad.append(f'{path}:{exc.lineno}: {exc.msg}')\n"
            "print('\\n'.join(bad))\n")
    result = subprocess.run([python, "-s", "-c", code, *map(str, ROOM.values())], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "", result.stdout + result.stderr


def numpy_3_9(python: str) -> str | None:
    """A 3.9 with numpy: pyenv's own, or the venv tests/campaign/test_interpreters.py builds."""
    cached = Path.home() / ".cache" / "abba-harness" / "pythons" / Path(python).parents[1].name / "bin" / "python"
    for candidate in (python, str(cached)):
        if Path(candidate).is_file() and run_3_9(candidate, "import numpy").returncode == 0:
            return candidate
    return None


def test_python_3_9_imports_the_room():
    """Every module of the room imported under 3.9 (its module-level code run: decorators,
    dataclasses, defaults); without numpy there, those that need it are left out and the test is
    skipped after the rest passed, saying so."""
    python = python_3_9()
    with_numpy = numpy_3_9(python)
    names = sorted(n for n in ROOM if not n.endswith("__main__"))
    code = ("import importlib, json, sys\nout = {}\nfor name in sys.argv[1:]:\n"
            "    try:\n        importlib.import_module(name)\n"
            "    except Exception as exc:\n        out[name] = f'{type(exc).__name__}: {exc}'\n"
            "print(json.dumps(out))\n")
    result = run_3_9(with_numpy or python, code.replace("sys.argv[1:]", json.dumps(names)))
    assert result.returncode == 0, result.stderr
    failed = json.loads(result.stdout)
    needs_numpy = {n for n, why in failed.items() if with_numpy is None and why == "ModuleNotFoundError: "
                   "No module named 'numpy'"}
    assert {n: why for n, why in failed.items() if n not in needs_numpy} == {}
    if needs_numpy:
        pytest.skip(f"{python} has no numpy: {len(names) - len(needs_numpy)} modules imported, "
                    f"{', '.join(sorted(needs_numpy))} only compiled (tests/campaign/test_interpreters.py "
                    "builds a 3.9 venv with numpy)")
