"""README "Benchmark your own change": its commands, exactly as written, in an empty folder,
end in a verified bundle (issue 11.3)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT


def test_readme_commands_from_an_empty_folder(tmp_path):
    text = (ROOT / "README.md").read_text()
    block = re.search(r"<!-- own-change -->\n```sh\n(.*?)\n```", text, re.S).group(1)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "ABBA_HARNESS_CACHE": str(tmp_path / "cache")}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    # 20 rounds (the default): 39 runs compared with the reference, 8 fields each
    assert "parity: identical (312/312 fields, 8 per run compared with the reference, 8 items, 0 recorded errors)" in result.stdout
    assert result.stdout.splitlines()[-2].startswith("OK bench/out: ")
    repo = tmp_path / "fastsum"
    # The change is still uncommitted, the repository untouched.
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status.splitlines() == [" M src/fastsum/__init__.py", "?? bench/"]
