"""Load the ar_loop code under test at both revisions into one process.

The base is ``campaigns/ar_loop/tree``; the candidate is a scratch copy of it with
``campaigns/ar_loop/candidate.patch`` applied by ``git apply``. Each revision's
``stage2/model.py`` is imported under its own module name, so both live side by side.
"""
from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AR_LOOP = ROOT / "campaigns" / "ar_loop"
TREE = AR_LOOP / "tree"
PATCH = AR_LOOP / "candidate.patch"


def materialize(dest: Path, variant: str) -> Path:
    """Copy the base tree to ``dest``; for the candidate, apply the patch there."""
    shutil.copytree(TREE, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    if variant == "candidate":
        subprocess.run(["git", "apply", "--whitespace=nowarn", str(PATCH)], cwd=dest, check=True,
                       capture_output=True)
    elif variant != "base":
        raise ValueError(variant)
    return dest


def load_model_module(tree: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, tree / "stage2" / "model.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses resolve their module through sys.modules
    spec.loader.exec_module(module)
    return module
