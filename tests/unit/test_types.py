"""The static gate: mypy over harness/ with the project's [tool.mypy] config reports no error.

mypy runs as `python -m mypy` in a process of its own (tests/conftest.py starts it when the first
unit test starts, so on the 2-core machine it runs beside the other unit tests; this test waits for
it), its cache under the repo's .cache/mypy so a re-run is incremental (cold, as on CI's fresh
clone, 18 s of one core's CPU on the shared 2-core AMD EPYC, with torch and the ray libraries
harness/ never imports left unfollowed; warm 0.5 s). It checks every function's body, annotated or
not (check_untyped_defs). Every module of harness/ is held to it: pyproject.toml silences no
module's errors."""
from __future__ import annotations

from conftest import mypy_result


def test_mypy_reports_no_error(request):
    stdout, stderr, status = mypy_result(request.config)
    errors = [line for line in stdout.splitlines() if ": error:" in line]
    assert status == 0 and not errors, (
        f"mypy found {len(errors)} error(s) (exit {status}):\n" + "\n".join(errors or [stdout, stderr]))

