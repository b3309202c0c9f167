"""docs/bundle-format.md's one-liner that shows a stored array, run verbatim on a real bundle's array."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import ROOT
from harness.bundle import arrays as tensors


def test_the_readme_one_liner_shows_a_stored_array(demo_bundle_master):
    """Issue 21.8: docs/bundle-format.md's `gunzip -c F | python -c ...` line, verbatim (F a real stored
    array of the demo bundle); numpy 2.4 refuses a pipe ("not seekable"), so it reads the
    stream into a BytesIO first."""
    line = re.search(r"`(gunzip -c F \| python -c '[^`]*')`", (ROOT / "docs" / "bundle-format.md").read_text()).group(1)
    stored = sorted((demo_bundle_master / "data" / "arrays").glob("*.npy.gz"))[0]
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", line.replace(" F ", f" '{stored}' ", 1)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(tensors.load(stored)).strip()
