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


def test_what_the_gate_does_not_follow_is_never_imported_by_harness():
    """pyproject.toml's follow_imports = "skip" modules (torch, the ray libraries beside its core
    API) are Any to mypy: were harness/ to import one, the names it uses from it would go
    unchecked. No module of harness/ (its frozen earlier checkers aside) imports any of them."""
    import ast
    import tomllib

    from conftest import ROOT

    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    skipped = [name for override in config["overrides"] if override.get("follow_imports") == "skip"
               for name in override["module"]]
    assert "torch" in skipped and "ray.data" in skipped

    def is_skipped(module: str) -> bool:
        return any(module == s or (s.endswith(".*") and module.startswith(s[:-1])) for s in skipped)

    found = []
    for path in sorted((ROOT / "harness").rglob("*.py")):
        if path.is_relative_to(ROOT / "harness" / "legacy" / "vendor"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            found += [(path.relative_to(ROOT).as_posix(), node.lineno, name) for name in names if is_skipped(name)]
    assert not found, f"harness/ imports modules mypy does not follow (pyproject.toml [tool.mypy]): {found}"
