"""The static gate: mypy over harness/ with the project's [tool.mypy] config reports no error.

mypy runs in-process (mypy.api.run; a unit test starts no process), its cache under the repo's
.cache/mypy so a re-run is incremental (cold about 40 s on the 2-core machine, warm a few s).
Every module of harness/ is held to it: pyproject.toml silences no module's errors."""
from __future__ import annotations

from pathlib import Path

import mypy.api

ROOT = Path(__file__).resolve().parents[2]


def test_mypy_reports_no_error():
    stdout, stderr, status = mypy.api.run([
        "--config-file", str(ROOT / "pyproject.toml"),
        "--cache-dir", str(ROOT / ".cache" / "mypy"),
        str(ROOT / "harness"),
    ])
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, (
        f"mypy found {len(errors)} error(s) (exit {status}):\n" + "\n".join(errors or [stdout, stderr]))
