"""One module per subcommand (cli.COMMANDS lists them). Their one-line error is outcomes'."""
from __future__ import annotations

from harness.outcomes import error  # noqa: F401 (every command's `harness COMMAND: error: LINE`)
