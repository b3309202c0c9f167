"""Issue 33.8: a lying or broken interpreter. `python:` names a wrapper script that answers the
harness's probe itself and runs the real python for everything else: one whose answer lacks a
field (it gave `harness check` a traceback), one whose answer is not a Python's, and one that
claims 3.13 while it runs this 3.x (it gave `run` "exit: 0 (complete, outputs agree)" for a
bundle its own verify refused with 28 identity problems). Each is now one line naming the field
or the mismatch and the interpreter, exit 2, no traceback and no bundle."""
from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import pytest

from conftest import cache_env, harness, no_traceback, small_campaign

WORKLOAD = '''
    import numpy as np


    class Bench:
        items = ["a", "b"]

        def run(self, item):
            return {"total": np.array([sum(range(2000))], dtype=np.int64)}


    def setup(ctx):
        return Bench()
'''


def wrapper(where: Path, answer, roots: bool = True) -> Path:
    """A python that prints `answer` (JSON) when probed (`-I -c PROBE`) and execs the real one
    (this test's interpreter) otherwise, the sandbox's roots probe included unless `roots` is False."""
    path = where / "fake-python"
    text = answer if isinstance(answer, str) else json.dumps(answer)
    (where / "answer.json").write_text(text + "\n")
    real = f'case "$3" in *"abba-harness: roots probe"*) exec "{sys.executable}" "$@";; esac\n' if roots else ""
    path.write_text(f'#!/bin/sh\n{real}'
                    f'if [ "$1" = "-I" ] && [ "$2" = "-c" ]; then cat "{where / "answer.json"}"; exit 0; fi\n'
                    f'exec "{sys.executable}" "$@"\n')
    path.chmod(0o755)
    return path


def answer(path: Path, **changes) -> dict:
    good = {"executable": str(path), "version": platform.python_version(), "implementation": "CPython",
            "numpy": "1.26.4", "packages": {"numpy": "1.26.4"}}
    good.update(changes)
    return {k: v for k, v in good.items() if v is not None}


def errors(result) -> list[str]:
    return [line for line in result.stderr.splitlines() if " error: " in line]


@pytest.mark.parametrize("change, expected", [
    ({"version": None}, "its probe's version is missing"),
    ({"packages": None}, "its probe's packages is missing"),
    ({"version": 313}, "its probe's version is int 313, not a string"),
    ({"version": "three"}, "its probe's version 'three' is not a Python version (e.g. 3.11.4)"),
    ({"executable": "/nowhere/python"}, "its probe's executable '/nowhere/python' is no executable file"),
    ({"packages": {"bad name": "1"}}, "its probe's packages entry 'bad name': '1' is not a distribution name"),
])
def test_a_probe_that_lacks_or_garbles_a_field_is_one_line_from_check(tmp_path, change, expected):
    python = tmp_path / "fake-python"
    wrapper(tmp_path, answer(python, **change))
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA", python=str(python))
    result = harness("check", campaign, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    lines = errors(result)
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"harness check: error: {campaign}: python: {python}: {expected}"), lines[0]


def test_a_probe_that_is_no_json_object_is_one_line(tmp_path):
    python = wrapper(tmp_path, "[1, 2]")
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA", python=str(python))
    result = harness("check", campaign, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    assert errors(result) == [f"harness check: error: {campaign}: python: {python}: its probe's answer is list, not a "
                              "JSON object; the workers need an interpreter that says what it is (a wrapper script "
                              "must run the real python with every argument)"]


def test_an_interpreter_that_answers_the_roots_probe_with_garbage_is_one_line(tmp_path):
    """The sandbox asks the campaign's interpreter what its runs may read: an answer of the wrong
    shape (here the interpreter probe's, to every probe) is refused in one line, no traceback."""
    python = wrapper(tmp_path, answer(tmp_path / "fake-python"), roots=False)
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA", python=str(python))
    result = harness("check", campaign, env=cache_env(tmp_path / "cache"))
    assert result.returncode == 2 and no_traceback(result), result.stdout + result.stderr
    lines = errors(result)
    assert len(lines) == 1 and lines[0].startswith(f"harness check: error: {campaign}: python: {python}: its answer to "
                                                   "the sandbox's roots probe is not"), lines


def test_an_interpreter_that_claims_another_version_is_refused_before_anything_is_timed(tmp_path):
    # in a folder of its own: the runs may read the interpreter's folder, never the bundle's
    (tmp_path / "bin").mkdir()
    python = tmp_path / "bin" / "fake-python"
    wrapper(tmp_path / "bin", answer(python, version="3.13.0"))
    campaign = small_campaign(tmp_path, WORKLOAD, "bench:setup", order="ABBA", python=str(python))
    env = cache_env(tmp_path / "cache")
    mine = f"CPython {platform.python_version()} ({sys.executable})"
    said = f"but the interpreter's probe said CPython 3.13.0 ({python})"

    checked = harness("check", campaign, env=env)
    assert checked.returncode == 2 and no_traceback(checked), checked.stdout + checked.stderr
    lines = errors(checked)
    assert len(lines) == 2, lines  # base and candidate, a line each
    for line, variant in zip(lines, ("base", "candidate")):
        assert line.startswith(f"harness check: error: {campaign}: {variant} (")
        assert f"python: the {variant} pre-flight worker ran {mine}, {said}" in line
        assert "(executable, version differ); name the real interpreter in `python:`" in line

    out = tmp_path / "bundle"
    ran = harness("run", campaign, "--out", out, env=env)
    assert ran.returncode == 2 and no_traceback(ran), ran.stdout + ran.stderr
    assert "exit: 0" not in ran.stdout and "complete" not in ran.stdout
    assert any(f"pre-flight: {campaign}: base (" in line and said in line for line in errors(ran)), ran.stderr
    assert not out.exists()  # nothing was timed, no bundle
