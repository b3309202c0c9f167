"""What the suite adapters' in-process tests share (tests/unit/test_suite_discovery.py,
tests/unit/test_pytest_suite.py): small suites written from text, imported in this process and
undone after, with bytecode left unwritten as the worker leaves it."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest


@pytest.fixture
def isolated(monkeypatch):
    """sys.path and sys.modules as they were (each test imports its own small suite), and the
    worker's rule: no bytecode written (pytest's rewritten modules are not cached either). A
    module the suite's own took the name of (its conftest: the test suite's is `conftest` too)
    is put back, so a test after it that imports `from conftest` finds the test suite's."""
    path, modules = list(sys.path), dict(sys.modules)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    yield
    sys.path[:] = path
    for name in set(sys.modules) - set(modules):
        del sys.modules[name]
    for name, module in modules.items():
        if sys.modules.get(name) is not module:
            sys.modules[name] = module


def write(root: Path, files: dict) -> Path:
    """Each file's text (dedented) at its path under root; returns root."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(textwrap.dedent(text))
    return root
