"""Shared fixtures: the repository root, a CLI runner, and one sealed demo bundle per session."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGNS = ROOT / "campaigns"


def harness(*args, cwd=None, timeout=600, env=None) -> subprocess.CompletedProcess:
    """Run `python -m harness ARGS` as a user would; returns the completed process (text)."""
    return subprocess.run([sys.executable, "-m", "harness", *map(str, args)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="session")
def demo_bundle_master(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "bundle"
    result = harness("run", CAMPAIGNS / "demo.yaml", "--out", out)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


@pytest.fixture
def demo_bundle(demo_bundle_master, tmp_path) -> Path:
    """A private copy of the sealed demo bundle, free to mutate."""
    copy = tmp_path / "bundle"
    shutil.copytree(demo_bundle_master, copy, symlinks=True)
    return copy
