"""What only a clone of the abba-harness repository has (the bundled campaigns, the demo)
and what only the `campaigns` extra installs (torch): commands that need either say so in
one line, exit 2, instead of failing deep inside."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from harness.outcomes import error

ROOT = Path(__file__).resolve().parents[1]


def clone_file(rel: str, command: str) -> Path:
    """ROOT/rel, or one line saying the command needs a clone (a plain `pip install .`
    installs the harness, not the campaigns it ships with)."""
    path = ROOT / rel
    if not path.exists():
        raise SystemExit(error(command, f"needs a clone of the abba-harness repository ({rel} is not part "
                                        "of an installed package); run it from a clone"))
    return path


def require(module: str, command: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise SystemExit(error(command, f"needs {module}: pip install 'abba-harness[campaigns]' "
                                        "(in a clone, `make venv` installs the CPU build)"))
