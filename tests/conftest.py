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


# --- helpers for tests that build their own tiny targets (test_runner, test_lock, ...) ---

def make_target(where: Path, base: dict[str, str], candidate: dict[str, str]) -> tuple[Path, Path]:
    """Write a base tree and a patch turning it into the candidate; returns (tree, patch).
    base/candidate map relative file paths to their text (candidate: changed files only)."""
    import textwrap

    tree = where / "tree"
    for rel, text in base.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(textwrap.dedent(text))
    scratch = where / "patch-work"
    shutil.copytree(tree, scratch)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=scratch, check=True)
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=scratch, check=True)
    for rel, text in candidate.items():
        (scratch / rel).parent.mkdir(parents=True, exist_ok=True)
        (scratch / rel).write_text(textwrap.dedent(text))
    subprocess.run([*git, "add", "-A"], cwd=scratch, check=True)
    diff = subprocess.run([*git, "diff", "--cached", "--binary"], cwd=scratch, check=True,
                          capture_output=True).stdout
    patch = where / "candidate.patch"
    patch.write_bytes(diff)
    shutil.rmtree(scratch)
    return tree, patch


def write_campaign(path: Path, tree: Path, patch: Path, workload_dir: Path, entry: str, **fields) -> Path:
    """A campaign YAML over a built target: base = HEAD~1 (tree), candidate = HEAD (patch)."""
    import yaml

    body = {"name": fields.pop("name", path.stem),
            "target": {"build": [{"tree": str(tree), "message": "base"},
                                 {"patch": str(patch), "message": "candidate"}]},
            "base": {"rev": "HEAD~1"}, "candidate": {"rev": "HEAD"},
            "workload": {"entry": entry, "path": str(workload_dir), "params": fields.pop("params", {})},
            "order": "AB", "slots": 1, "timeouts": {"run_s": 60, "campaign_s": 300}}
    body.update(fields)
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def cache_env(cache: Path) -> dict[str, str]:
    """The test process's environment with a private target cache."""
    return {**os.environ, "ABBA_HARNESS_CACHE": str(cache)}


def no_traceback(result: subprocess.CompletedProcess) -> bool:
    return "Traceback" not in result.stderr and "Traceback" not in result.stdout
