"""One module per subcommand; helpers they share."""
from __future__ import annotations

import sys


def error(command: str, *lines, code: int = 2) -> int:
    """Print each line as `harness COMMAND: error: LINE` on stderr; return the exit code."""
    for line in lines:
        print(f"harness {command}: error: {line}", file=sys.stderr)
    return code
