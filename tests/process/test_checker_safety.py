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
from harness import contract as C
from harness import rules as R
from harness import rehash
from harness.selftest import tamper

MEMORY_KIB = 262_144  # 256 MB of address space for `harness verify` (numpy, pandas-free) and rehash.py
HANG_GUARD_S = 120  # not a timing assertion: a checker that blocks on a FIFO never returns


def checkers(bundle, *extra):
    verify = [sys.executable, "-m", "harness", "verify", str(bundle), *extra]
    script = [sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(bundle), *extra]
    for argv in (verify, script):
        cmd = f"ulimit -v {MEMORY_KIB}; exec " + " ".join(f"'{a}'" for a in argv)
        yield subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=ROOT)


def test_a_one_gib_bomb_is_streamed_in_bounded_memory(demo_bundle):
    """1 GiB of zeros behind a referenced array's name, about 1 MB gzipped: both checkers
    hash it as a stream under a 256 MB address-space limit and name the file."""
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
    for result in checkers(demo_bundle, "--max-array-bytes", "1000000"):
        assert result.returncode == 1
        assert "FAIL data/arrays: [arrays] the stored arrays declare " in result.stdout
        assert "over the budget of 1000000 (--max-array-bytes); none was inflated" in result.stdout


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
        assert f"FAIL {C.INPUTS}: [parsing] nested deeper than 64 levels" in result.stdout


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
    """A field digest that is an absolute path (to a FIFO: opening it would block), with
    comparison.json re-derived from it: refused as not a SHA-256, never opened."""
    outside = tmp_path / "outside"
    os.mkfifo(outside)
    path = demo_bundle / C.run_path("B1")
    record = json.loads(path.read_text())
    item = next(it for it in record["items"] if it["fields"])
    next(iter(item["fields"].values()))["digest"] = str(outside)
    path.write_text(json.dumps(record))
    tamper.rederive(demo_bundle)
    tamper.reseal(demo_bundle)
    for result in checkers(demo_bundle):
        assert result.returncode == 1
        assert f"FAIL {C.run_path('B1')}: [parsing] items[0].fields.means.digest: " in result.stdout
        assert "not a SHA-256" in result.stdout


def test_rehash_reads_the_one_contract():
    """rehash.py imports nothing of the harness but the contract (loaded from its own file when
    a reviewer runs the script alone): the format it checks is the one the writer writes."""
    assert rehash.C is C
    assert rehash.tree("run")["children"].keys() == {path.split(".")[0].split("[")[0]
                                                     for path in C.FIELDS["run"]}
    for rounds, seed in ((1, 0), (7, 12345), (40, 2**32 - 1)):
        assert R.round_order(rounds, seed) == R.round_order(rounds, seed, 0)


def test_an_honest_bundle_verifies_in_256_mb(demo_bundle):
    """No read preallocates its limit (a 256 MiB JSON cap once meant a 256 MiB buffer)."""
    for result in checkers(demo_bundle):
        assert result.returncode == 0, result.stdout + result.stderr


def test_a_sparse_file_is_refused_before_it_is_hashed(demo_bundle):
    """A 1 TiB log of holes takes a few hundred KB on disk and a quarter of an hour to hash."""
    log = demo_bundle / C.log_path("B1")
    with open(log, "r+b") as fh:  # after the seal: resealing would hash it
        fh.truncate(1 << 40)
    for result in checkers(demo_bundle):
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stdout + result.stderr
        assert f"FAIL {C.log_path('B1')}: unreadable (" in result.stdout
        assert "over the 1073741824-byte limit for one file; not hashed" in result.stdout


def test_a_sparse_file_under_the_size_limit_is_refused_too(demo_bundle):
    log = demo_bundle / C.log_path("B1")
    with open(log, "r+b") as fh:
        fh.truncate(512 << 20)
    tamper.reseal(demo_bundle)  # 512 MiB of holes hashes in a second or two here
    for result in checkers(demo_bundle):
        assert result.returncode == 1
        assert "sparse file (a hole at byte" in result.stdout


def test_deep_folders_are_one_finding(demo_bundle):
    """1,500 nested folders (made and removed iteratively: pathlib and shutil recurse)."""
    chain = [demo_bundle / "data" / "d"]
    for _ in range(1499):
        chain.append(chain[-1] / "d")
    for folder in chain:
        os.mkdir(folder)
    try:
        for result in checkers(demo_bundle):
            assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr[-500:]
            assert "folders nested deeper than 8 levels" in result.stdout
    finally:
        for folder in reversed(chain):
            os.rmdir(folder)


def test_many_bombs_are_refused_from_their_headers(demo_bundle):
    """Twelve small gzips each declaring 4 GiB: the whole-bundle budget refuses them from
    their headers, so nothing is inflated."""
    head = b"{'descr': '|u1', 'fortran_order': False, 'shape': (4294967296,), }"
    head += b" " * (64 - (10 + len(head) + 1) % 64) + b"\n"
    for i in range(12):
        rel = f"data/arrays/{i:064x}.npy.gz"
        with gzip.GzipFile(demo_bundle / rel, "wb", compresslevel=9, mtime=0) as fh:
            fh.write(b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head)
            fh.write(b"\0" * (4 << 20))
    tamper.reseal(demo_bundle)
    for result in checkers(demo_bundle):
        assert result.returncode == 1 and "Traceback" not in result.stderr
        assert "none was inflated" in result.stdout


def test_a_number_that_overflows_to_infinity_is_refused():
    with pytest.raises(rehash.JSONRefused, match="1e400 is not a finite number"):
        rehash.parse_json(b'{"wall_s": 1e400}')


def test_the_divergence_of_two_large_arrays_is_streamed(tmp_path):
    """Two 512 MiB float32 arrays that differ: the divergence report runs in 256 MB."""
    import numpy as np

    from harness.bundle import arrays as tensors

    a = np.zeros(1 << 27, dtype=np.float32)
    da = tensors.store(a, tmp_path)["digest"]
    a[-1] = 1.0
    db = tensors.store(a, tmp_path)["digest"]
    del a
    code = (f"import json; from pathlib import Path; from harness.comparison import parity; "
            f"from harness.bundle.model import Mismatch; print(json.dumps(parity.divergence("
            f"[Mismatch(run='B1', item='x', field='f', reason='bytes differ', reference_digest='{da}', digest='{db}')], "
            f"Path('{tmp_path}'))))")
    cmd = f"ulimit -v {MEMORY_KIB}; exec '{sys.executable}' -c \"{code}\""
    result = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=HANG_GUARD_S, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads(result.stdout)[0]
    assert row["differing"] == 1 and row["max_abs"] == 1.0 and row["elements"] == 1 << 27
