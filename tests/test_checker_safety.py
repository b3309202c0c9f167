"""Issue 9.4: both checkers stay safe on hostile bundles. Each runs in a subprocess under a
memory limit (ulimit -v) and a hang guard; a FIFO, an array bomb and 100,000-deep JSON must
each end in a named problem, never a hang, a traceback or an out-of-memory kill."""
from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT
from harness import rehash, records, tamper

MEMORY_KIB = 1_500_000  # address space for `harness verify` (numpy, pandas-free) and rehash.py
HANG_GUARD_S = 120  # not a timing assertion: a checker that blocks on a FIFO never returns


def checkers(bundle, *extra):
    verify = [sys.executable, "-m", "harness", "verify", str(bundle), *extra]
    script = [sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle), *extra]
    for argv in (verify, script):
        cmd = f"ulimit -v {MEMORY_KIB}; exec " + " ".join(f"'{a}'" for a in argv)
        yield subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=ROOT)


def test_a_one_gib_bomb_is_streamed_in_bounded_memory(demo_bundle):
    """1 GiB of zeros behind a referenced array's name, about 1 MB gzipped: both checkers
    hash it as a stream under a 1.5 GB address-space limit and name the file."""
    victim = tamper._referenced_array(demo_bundle)
    head = b"{'descr': '|u1', 'fortran_order': False, 'shape': (1073741824,), }"
    head += b" " * (64 - (10 + len(head) + 1) % 64) + b"\n"
    with gzip.GzipFile(demo_bundle / victim, "wb", compresslevel=9, mtime=0) as fh:
        fh.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head)
        zeros = b"\0" * (1 << 24)
        for _ in range(64):
            fh.write(zeros)
    assert (demo_bundle / victim).stat().st_size < 2 << 20
    tamper.reseal(demo_bundle)
    for result in checkers(demo_bundle):
        assert result.returncode == 1, result.stdout + result.stderr
        assert "Traceback" not in result.stderr and "MemoryError" not in result.stdout + result.stderr
        assert f"FAIL {victim}: array content hashes to" in result.stdout


def test_the_cap_refuses_a_declared_size_before_decompressing(demo_bundle, tmp_path):
    tamper.array_bomb(demo_bundle, tamper.Context(tmp_path, tmp_path / "m"))
    victim = tamper._referenced_array(demo_bundle)
    for result in checkers(demo_bundle, "--max-array-bytes", "1000000"):
        assert result.returncode == 1
        assert f"FAIL {victim}: unreadable array (header declares 8589934592 bytes, over the cap of 1000000" \
            in result.stdout


def test_fifo_named_by_a_record_is_never_opened(demo_bundle, tmp_path):
    tamper.fifo_at_array(demo_bundle, tamper.Context(tmp_path, tmp_path / "m"))
    victim = tamper._referenced_array(demo_bundle)
    for result in checkers(demo_bundle):
        assert result.returncode == 1
        assert f"FAIL {victim}: not a regular file" in result.stdout


def test_deep_json_is_refused_in_one_line(demo_bundle, tmp_path):
    tamper.deep_json(demo_bundle, tamper.Context(tmp_path, tmp_path / "m"))
    for result in checkers(demo_bundle):
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert f"FAIL {records.INPUTS}: [parsing] nested deeper than 64 levels" in result.stdout


@pytest.mark.parametrize("text, why", [
    ('{"a": 1, "a": 2}', "duplicate key 'a'"),
    ('{"a": NaN}', "NaN is not JSON"),
    ('{"a": -Infinity}', "-Infinity is not JSON"),
    ('{"a": ' * 70 + "1" + "}" * 70, "nested deeper than 64"),
    ('{"a": 1', "not valid JSON"),
    (b'"\xff"', "not UTF-8"),
])
def test_strict_json(text, why):
    with pytest.raises(rehash.JSONRefused, match=why):
        rehash.parse_json(text if isinstance(text, bytes) else text.encode())


def test_a_record_naming_a_path_outside_is_not_opened(demo_bundle, tmp_path):
    """A field digest that is an absolute path: reported as not stored, never opened (the
    divergence report would otherwise read it)."""
    outside = tmp_path / "outside"
    os.mkfifo(outside)  # opening it would block
    path = demo_bundle / records.run_path("B1")
    record = json.loads(path.read_text())
    item = next(it for it in record["items"] if it["fields"])
    next(iter(item["fields"].values()))["digest"] = str(outside)
    path.write_text(json.dumps(record))
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    for result in checkers(demo_bundle):
        assert result.returncode == 1
        assert "[arrays]" in result.stdout and "is not stored" in result.stdout


def test_records_and_rehash_spell_the_format_alike():
    """rehash.py cannot import the harness; the format it checks must be the one written."""
    assert rehash.SCHEMAS == records.SCHEMAS
    assert rehash.LEGACY_SCHEMAS == records.LEGACY_SCHEMAS
    for rounds, seed in ((1, 0), (7, 12345), (40, 2**32 - 1)):
        assert rehash.round_order(rounds, seed) == records.round_order(rounds, seed)
    for name in ("BAGIT", "BAG_INFO", "MANIFEST", "TAGMANIFEST", "TAG_FILES", "CAMPAIGN_YAML", "CAMPAIGN_JSON",
                 "ENVIRONMENT", "COMPARISON", "FIGURE", "GOLDEN", "REVISIONS", "INPUTS", "CLEANUP", "RUNNER", "BUILDS",
                 "REPRODUCTION", "NOISE_FLOOR", "ARRAY_SUFFIX", "REQUIRED", "VARIANTS", "RUN_STATUSES"):
        assert getattr(rehash, name) == getattr(records, name), name
    receipt = records.reproduction_receipt(campaign="c", original={}, reproduction={}, machines={}, scope={},
                                           outputs={}, timing={}, verdict="reproduced", exit_code=0)
    assert set(receipt) == set(rehash.REPRODUCTION_KEYS)
    assert rehash.LABEL_RE.pattern == records.LABEL_RE.pattern
    for label in ("A1", "B12"):
        assert rehash.run_path(label) == records.run_path(label)
        assert rehash.log_path(label) == records.log_path(label)
