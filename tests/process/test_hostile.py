"""Hostile input on the command line (issue 26, item 7): each command a reviewer or CI runs on a
bundle it did not make ends in one line or succeeds, in a 256 MB address space, within seconds,
and quietly when its reader leaves; never a traceback, never MemoryError. The bundles are made
on the fake launcher; the commands run as a user runs them, each in a fresh process."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

from checks_support import full_bundle
from conftest import ROOT
from harness import contract as C
from harness.selftest import tamper

MEMORY_KIB = 262_144  # ulimit -v: 256 MB of address space
HANG_GUARD_S = 120  # not a timing assertion: a command that expands a YAML bomb never returns
SCRIPT = ROOT / "harness" / "rehash.py"
HARNESS = [sys.executable, "-m", "harness"]


def commands(bundle):
    """What a reviewer runs on a bundle: the standard-library script, verify, compare, summary, report."""
    return {"rehash.py": [sys.executable, "-S", str(SCRIPT), str(bundle)],
            "verify": HARNESS + ["verify", str(bundle)], "compare": HARNESS + ["compare", str(bundle)],
            "summary": HARNESS + ["summary", str(bundle)], "report": HARNESS + ["report", str(bundle), "-o", "-"]}


def limited(argv, memory_kib=MEMORY_KIB, pipe="") -> subprocess.CompletedProcess:
    cmd = " ".join(f"'{a}'" for a in argv)
    shell = f"ulimit -v {memory_kib}; {cmd}{pipe}" if memory_kib else f"{cmd}{pipe}"
    return subprocess.run(["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True,
                          timeout=HANG_GUARD_S, cwd=ROOT)


def calm(result) -> bool:
    text = result.stdout + result.stderr
    return "Traceback" not in text and "MemoryError" not in text


def one_error_line(result, command) -> str:
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and re.match(rf"(harness {command}|rehash): error: ", lines[0]), result.stderr
    return lines[0]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    return full_bundle(tmp_path_factory.mktemp("hostile"))


@pytest.fixture
def bundle(made, tmp_path):
    shutil.copytree(made.parent, tmp_path / "full", symlinks=True)
    return tmp_path / "full" / made.name


# --- memory -----------------------------------------------------------------------------------------
def test_an_honest_bundle_is_read_by_every_command_in_256_mb(bundle):
    for name, argv in commands(bundle).items():
        result = limited(argv)
        assert result.returncode in (0, 5, 6), (name, result.stdout[-1000:], result.stderr[-1000:])
        assert calm(result), name


def test_a_24_mib_record_is_one_line_in_256_mb(bundle):
    """A run record padded to 24 MiB (three times its kind's limit): refused from its size before
    it is read, by every command, in one line."""
    path = bundle / C.run_path("A1")
    record = json.loads(path.read_text())
    record["reason"] = "x" * (24 << 20)
    path.write_text(json.dumps(record))
    tamper.reseal(bundle)
    why = f"{C.run_path('A1')}: [parsing] {path.stat().st_size} bytes, over the {8 << 20} its kind may have"
    for name, argv in commands(bundle).items():
        result = limited(argv)
        assert result.returncode == 1 and calm(result), (name, result.stdout[-1000:], result.stderr[-1000:])
        if name in ("rehash.py", "verify", "compare"):
            assert [line for line in result.stdout.splitlines() if line.startswith("FAIL ")] == [f"FAIL {why}"]
        if name != "rehash.py" and name != "verify":
            assert why in one_error_line(result, name) or name == "compare"


def test_json_past_the_bundles_total_is_one_line_in_256_mb(bundle):
    """Documents each under its kind's limit (the run records' free metrics, the golden file's
    free machine description, a stage's call counts padded), together past the total a bundle's JSON may hold:
    refused as a whole, in one line, before the memory they would need is used."""
    labels = json.loads((bundle / C.CAMPAIGN_JSON).read_text())["labels"]
    for label in labels:
        path = bundle / C.run_path(label)
        record = json.loads(path.read_text())
        record["metrics"]["pad"] = "x" * ((8 << 20) - 8192)
        path.write_text(json.dumps(record))
    golden = json.loads((bundle / C.GOLDEN).read_text())
    golden["machine"]["vector_isa"] = "x" * ((16 << 20) - 8192)
    (bundle / C.GOLDEN).write_text(json.dumps(golden))
    comparison = json.loads((bundle / C.COMPARISON).read_text())
    next(iter(comparison["stages"].values()))["calls_per_run"] = "x" * (8 << 20)
    (bundle / C.COMPARISON).write_text(json.dumps(comparison))
    tamper.reseal(bundle)
    assert sum(p.stat().st_size for p in (bundle / "data").rglob("*.json")) > C.MAX_JSON_BYTES_TOTAL
    for name in ("rehash.py", "verify", "compare", "summary"):
        result = limited(commands(bundle)[name])
        assert result.returncode in (1, 2) and calm(result), (name, result.stdout[-800:], result.stderr[-800:])
        line = one_error_line(result, name)
        assert f"its JSON documents hold more than {C.MAX_JSON_BYTES_TOTAL} bytes in all" in line or \
            "more memory than this process may use" in line, line


# --- numbers ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("rel", [C.run_path("B1"), C.CAMPAIGN_JSON])
def test_huge_integers_are_one_line_on_the_command_line(bundle, rel):
    path = bundle / rel
    path.write_text(re.sub(r'"slots": \d+', '"slots": 1' + "0" * 4999, path.read_text(), count=1))
    tamper.reseal(bundle)
    for name in ("rehash.py", "verify", "compare"):
        result = limited(commands(bundle)[name], memory_kib=None)
        assert result.returncode == 1 and calm(result), (name, result.stdout, result.stderr)
        assert [line for line in result.stdout.splitlines() if line.startswith("FAIL ")] == \
            [f"FAIL {rel}: [parsing] an integer of 5000 digits (at most {C.MAX_INT_DIGITS})"], name


# --- YAML ----------------------------------------------------------------------------------------------
def billion_laughs(levels: int = 9) -> str:
    lines = ["name: laughs", 'a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels):
        lines.append(f"{chr(97 + i)}: &{chr(97 + i)} [" + ", ".join([f"*{chr(96 + i)}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_a_yaml_alias_bomb_in_a_bundle_is_one_line(bundle):
    (bundle / C.CAMPAIGN_YAML).write_text(billion_laughs())
    tamper.reseal(bundle)
    for name in ("verify", "compare"):
        result = limited(commands(bundle)[name])
        assert result.returncode == 1 and calm(result), (name, result.stdout, result.stderr)
        fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL ")]
        assert len(fails) == 1 and fails[0].startswith(f"FAIL {C.CAMPAIGN_YAML}: [campaign] does not load")
        assert "an alias (*name): a campaign file has none" in fails[0]


def test_a_yaml_alias_bomb_as_a_campaign_file_is_one_line(tmp_path):
    path = tmp_path / "laughs.yaml"
    path.write_text(billion_laughs())
    result = limited(HARNESS + ["check", str(path)])
    assert result.returncode == 2 and calm(result)
    line = one_error_line(result, "check")
    assert f"{path}: not valid YAML at line 3" in line and "an alias (*name)" in line


# --- a reader that leaves ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rehash.py", "verify", "compare"])
def test_a_reader_that_leaves_ends_the_command_quietly(bundle, name):
    """`harness compare B | head -1`: the first line, then nothing: no BrokenPipeError, and the
    command's own exit code. A reader that closed before anything was written, too."""
    result = limited(commands(bundle)[name], memory_kib=None, pipe=" | head -1")
    assert result.returncode in (0, 6) and result.stderr == "", result.stderr
    assert len(result.stdout.splitlines()) == 1
    proc = subprocess.Popen(commands(bundle)[name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    proc.stdout.close()  # gone before the first write
    _, err = proc.communicate(timeout=HANG_GUARD_S)
    assert proc.returncode in (0, 6) and b"Traceback" not in err and b"BrokenPipe" not in err, err
