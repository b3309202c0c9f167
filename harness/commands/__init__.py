"""One module per subcommand (cli.COMMANDS lists them). Their one-line error is outcomes'; what
a command prints of a bundle goes through render.text.term (one line, every control shown)."""
from __future__ import annotations

from harness import outcomes
from harness.render.text import term


def error(command: str, *lines, code: int = outcomes.UNUSABLE) -> int:
    """Every command's `harness COMMAND: error: LINE`: each line one line on the terminal,
    whatever bundle text it quotes (outcomes.error prints it)."""
    return outcomes.error(command, *(term(line) for line in lines), code=code)
