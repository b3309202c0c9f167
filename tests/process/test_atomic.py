"""Issue 6.2: atomic writes. Every evidence file reaches the bundle through a temporary
file and a rename, and a campaign killed at any of those points leaves no bundle at the
output path, only a staging folder that `harness verify` and rehash.py report as
incomplete (or, killed just before the final publish, a complete sealed one)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from harness import files as fsutil
from harness.bundle import arrays as tensors

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "faulty"))
import faultlib  # noqa: E402

KILLER = faultlib.HERE / "kill_at_rename.py"


def _run_killer(tmp: Path, campaign: Path, out: Path, kill_at: int = 0, log: Path | None = None):
    scratch = tmp / "tmp"  # a killed harness cannot remove its scratch folder: keep it out of /tmp
    scratch.mkdir(exist_ok=True)
    env = {**os.environ, "ABBA_KILL_AT": str(kill_at), "TMPDIR": str(scratch)}
    if log:
        env["ABBA_RENAMES"] = str(log)
    return subprocess.run([sys.executable, str(KILLER), "run", str(campaign), "--out", str(out)],
                          cwd=faultlib.ROOT, capture_output=True, text=True, timeout=120, env=env)


def _files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path, monkeypatch):
    target = tmp_path / "a.json"
    fsutil.atomic_write_bytes(target, b"old")

    def broken_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    with pytest.raises(OSError):
        fsutil.atomic_write_bytes(target, b"new content that never lands")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]  # no temporary left behind


def test_stored_arrays_are_renamed_into_place(tmp_path, monkeypatch):
    renamed = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda s, d: (renamed.append((Path(s), Path(d))), real(s, d))[1])
    info = tensors.store(np.arange(5, dtype=np.int32), tmp_path)
    (src, dst), = renamed
    assert dst == tmp_path / f"{info['digest']}.npy.gz" and src.parent == tmp_path and src.name.endswith(".tmp")


def test_campaign_killed_at_every_rename(tmp_path):
    campaign = faultlib.write_campaign(tmp_path)
    log = tmp_path / "renames.txt"

    # Build the target repository first (on a fresh machine the first run builds it into
    # the cache with a rename of its own), so the logged run renames evidence files only.
    assert _run_killer(tmp_path, campaign, tmp_path / "warm" / "b").returncode == 0

    # A complete run, logging every rename the harness process makes.
    full = tmp_path / "full"
    result = _run_killer(tmp_path, campaign, full / "b", log=log)
    assert result.returncode == 0, result.stdout + result.stderr
    renames = [line.split(" -> ") for line in log.read_text().splitlines()]
    partial = renames[-1][0]
    assert renames[-1][1] == str(full / "b") and Path(partial).name.startswith("b.partial-")
    # Every file of the bundle was renamed into place by this process, the arrays included
    # (the runner reads the worker's outputs and writes them itself: they are hashed outside).
    landed = {dst[len(partial) + 1:] for src, dst in renames[:-1]}
    assert all(Path(src).name.startswith(".") and src.endswith(".tmp") for src, _ in renames[:-1])
    files = _files(full / "b")
    assert set(files) == landed
    assert any(f.startswith("data/arrays/") for f in files)
    assert faultlib.run_harness("verify", full / "b").returncode == 0

    # Now crash just before each of those renames in turn.
    for n in range(1, len(renames) + 1):
        where = tmp_path / f"kill{n}"
        out = where / "b"
        result = _run_killer(tmp_path, campaign, out, kill_at=n)
        assert result.returncode == -9, (n, result.stdout, result.stderr)
        assert "status: complete" not in result.stdout
        assert not out.exists(), f"crash before rename {n}: a bundle appeared at the output path"
        staging, = where.glob("b.partial-*")
        verify = faultlib.run_harness("verify", staging)
        rehash = faultlib.rehash(staging)
        if n < len(renames):
            what = f"crash before rename {n} ({renames[n - 1][1][len(partial) + 1:]})"
            assert verify.returncode == 1 and "incomplete" in verify.stdout, (what, verify.stdout)
            assert rehash.returncode == 1 and "incomplete" in rehash.stdout, (what, rehash.stdout)
        else:  # sealed but not yet published: complete evidence, just not at the output path
            assert verify.returncode == 0 and rehash.returncode == 0, verify.stdout + rehash.stdout

    # The killed runs left no lock behind: the same output path runs normally afterwards.
    result = faultlib.run_harness("run", campaign, "--out", tmp_path / "kill1" / "b")
    assert result.returncode == 0, result.stdout + result.stderr
