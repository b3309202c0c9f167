"""Workers under the campaign's own interpreter (issue 28, item 1): CPython 3.9 and 3.13 from
pyenv, each in a venv of its own holding numpy only (the harness's venv untouched), top level and
per variant (two interpreters on one commit). The bundle records each interpreter, its version
and packages, binds every run to its variant's, and verifies; an interpreter without numpy is one
line at the pre-flight."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import cache_env, harness, no_traceback, small_campaign
from harness import contract as C, rehash
from harness.files import read_json

PYENV = Path.home() / ".pyenv" / "versions"
WORKLOAD = '''
    import sys

    import numpy as np


    class Bench:
        items = ["a", "b"]

        def run(self, item):
            total = sum(range(20000))
            return {"total": np.array([total], dtype=np.int64),
                    "major_minor": np.array(sys.version_info[:2], dtype=np.int64)}


    def setup(ctx):
        return Bench()
'''


def venv(version: str, numpy: bool = True) -> Path:
    """A venv of pyenv's CPython `version` holding numpy only (cached between sessions)."""
    base = PYENV / version / "bin" / "python"
    if not base.is_file():
        pytest.skip(f"pyenv has no CPython {version} on this machine")
    home = Path.home() / ".cache" / "abba-harness" / "pythons" / (version + ("" if numpy else "-bare"))
    python = home / "bin" / "python"
    if not python.is_file():
        subprocess.run([str(base), "-m", "venv", str(home)], check=True, timeout=300)
        if numpy:
            subprocess.run([str(python), "-m", "pip", "install", "-q", "numpy"], check=True, timeout=600)
    return python


@pytest.mark.parametrize("version", ["3.9.18", "3.13.0"])
def test_workers_run_the_campaigns_own_interpreter(tmp_path, version):
    python = venv(version)
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA", python=str(python))
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=600)
    assert result.returncode == 0 and no_traceback(result), result.stdout + result.stderr
    env = read_json(out / C.ENVIRONMENT)
    for variant in ("base", "candidate"):
        assert env["interpreters"][variant]["version"] == version
        assert env["interpreters"][variant]["executable"] == str(python)
        assert "numpy" in env["interpreters"][variant]["packages"]
        assert "torch" not in env["interpreters"][variant]["packages"]  # not the harness's venv
    for label in ("A1", "B1"):
        assert read_json(out / C.run_path(label))["python"]["version"] == version
    assert not rehash.rehash(str(out)).problems
    assert harness("verify", out).returncode == 0


def test_two_interpreters_on_one_commit(tmp_path):
    old, new = venv("3.9.18"), venv("3.13.0")
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA",
                              base={"rev": "HEAD", "python": str(old)}, candidate={"rev": "HEAD", "python": str(new)})
    out = tmp_path / "bundle"
    result = harness("run", campaign, "--out", out, env=cache_env(tmp_path / "cache"), timeout=600)
    # the outputs differ by design (each returns its own version): the run says so, the bundle verifies
    assert result.returncode == 3 and no_traceback(result), result.stdout + result.stderr
    runs = {label: read_json(out / C.run_path(label)) for label in ("A1", "B1")}
    assert runs["A1"]["python"]["version"] == "3.9.18" and runs["B1"]["python"]["version"] == "3.13.0"
    assert runs["A1"]["sha"] == runs["B1"]["sha"]
    assert not rehash.rehash(str(out)).problems


def test_an_interpreter_without_numpy_is_one_line_at_the_preflight(tmp_path):
    bare = venv("3.9.18", numpy=False)
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="AB", python=str(bare))
    result = harness("check", campaign, env=cache_env(tmp_path / "cache"), timeout=300)
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if "error" in line]
    assert lines == [f"harness check: error: {campaign}: python: {bare} (3.9.18) has no numpy, which every worker "
                     f"needs: install it with `{bare} -m pip install numpy`"], result.stderr
