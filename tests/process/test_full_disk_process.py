"""Issue 33, item 1: a full disk while the bundle is sealed, or while a bundle is signed, on
real processes. The harness runs under tests/fixtures/faulty/enospc_at.py, which makes the
fsync of one file fail with ENOSPC as a full disk does (the workers run as ever): the command
says one line naming the file, the OSError and the fix, exits 10, half-writes nothing, and a
campaign keeps its finished runs in the staging folder the line names, which `harness seal`
then seals into a bundle both checkers accept."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import CAMPAIGNS, ROOT, harness, no_traceback
from harness import contract as C, outcomes

FULL = ROOT / "tests" / "fixtures" / "faulty" / "enospc_at.py"


def full_disk(at: str, *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "ABBA_ENOSPC_AT": at}
    return subprocess.run([sys.executable, str(FULL), *map(str, args)], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)


def error_lines(result: subprocess.CompletedProcess) -> list[str]:
    return [line for line in result.stderr.splitlines() if ": error: " in line]


def test_a_full_disk_at_the_manifest_keeps_the_runs_and_harness_seal_seals_them(tmp_path):
    out = tmp_path / "demo"
    result = full_disk(".manifest-sha256.txt.", "run", CAMPAIGNS / "demo.yaml", "--out", out, "--order", "ABBA")
    assert result.returncode == outcomes.WRITE_FAILED == 10, result.stdout + result.stderr
    assert no_traceback(result)
    line, = error_lines(result)
    staging = Path(re.search(r"kept in (\S+);", line).group(1))
    assert line.startswith(f"harness run: error: cannot write {staging}/manifest-sha256.txt: ")
    assert "(ENOSPC)" in line and f"free space, then `harness seal {staging} --out {out}`" in line
    assert not out.exists()
    assert sorted(p.name for p in (staging / "data" / "runs").iterdir()) == ["A1.json", "A2.json", "B1.json",
                                                                            "B2.json"]
    assert (staging / C.RUNNER).is_file() and not (staging / C.MANIFEST).exists()
    assert not [p for p in staging.rglob("*.tmp")]  # the manifest's temporary file went with the failure
    assert "the 4 finished run(s) are kept in" in line

    sealed = harness("seal", staging, "--out", out)
    assert sealed.returncode == 0 and no_traceback(sealed), sealed.stdout + sealed.stderr
    assert f"bundle: {out} (sealed from the 4 run(s) kept in {staging})" in sealed.stdout
    assert not staging.exists()
    verified = harness("verify", out)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    rehashed = subprocess.run([sys.executable, "-S", str(ROOT / "harness" / "rehash.py"), str(out)],
                              capture_output=True, text=True, timeout=300)
    assert rehashed.returncode == 0, rehashed.stdout + rehashed.stderr

    # sign on a full disk: one line, exit 10, no attestation and no part of one
    key = tmp_path / "key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    signing = full_disk(f".{out.name}.intoto.json.", "sign", out, "--key", key)
    assert signing.returncode == 10 and no_traceback(signing), signing.stdout + signing.stderr
    line, = error_lines(signing)
    assert line.startswith(f"harness sign: error: cannot write {out}.intoto.json: ") and "(ENOSPC)" in line
    assert "sign again" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["demo", "key", "key.pub"]
    # with room again, the same command signs
    again = harness("sign", out, "--key", key)
    assert again.returncode == 0, again.stdout + again.stderr


def test_harness_seal_refuses_a_campaign_that_stopped_before_its_runs_ended(tmp_path):
    out = tmp_path / "demo"
    result = full_disk(".B1.json.", "run", CAMPAIGNS / "demo.yaml", "--out", out, "--order", "AB")
    assert result.returncode == 10 and no_traceback(result), result.stdout + result.stderr
    line, = error_lines(result)
    assert "cannot write" in line and "B1.json" in line and "(ENOSPC)" in line
    assert "cannot be sealed" in line and "run the campaign again" in line
    staging = Path(re.search(r"kept in (\S+),", line).group(1))
    assert (staging / "data" / "runs" / "A1.json").is_file()  # the finished run is kept, for a human
    refused = harness("seal", staging, "--out", out)
    assert refused.returncode == 2 and no_traceback(refused), refused.stdout + refused.stderr
    line, = error_lines(refused)
    assert "the campaign stopped before its runs ended" in line and not out.exists()
