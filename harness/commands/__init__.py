"""One module per subcommand (cli.COMMANDS lists them). Their one-line error is outcomes'; what
a command prints of a bundle goes through render.text.term (one line, every control shown)."""
from __future__ import annotations

from harness import outcomes
from harness.render.text import term


def error(command: str, *lines, code: int = outcomes.UNUSABLE) -> int:
    """Every command's `harness COMMAND: error: LINE`: each line one line on the terminal,
    whatever bundle text it quotes (outcomes.error prints it)."""
    return outcomes.error(command, *(term(line) for line in lines), code=code)


def add_policy(p) -> None:
    """--policy FILE, which compare, verify and summary share (harness/judge/policy.py)."""
    p.add_argument("--policy", metavar="FILE",
                   help="judge the bundle by your own rules (YAML or JSON: max_threshold, threshold, noise_floor, "
                        "min_rounds, metrics, disturbed, sandbox; docs/checking.md): the verdict re-judged at your "
                        "band, exit 14 when the bundle breaks a rule of it")


def load_policy(command: str, path):
    """(the policy, 0) or (None, exit code) after one error line."""
    from harness.judge import policy

    if path is None:
        return None, outcomes.OK
    try:
        return policy.load(path), outcomes.OK
    except policy.PolicyError as exc:
        return None, error(command, f"--policy {exc}", code=outcomes.UNUSABLE)
