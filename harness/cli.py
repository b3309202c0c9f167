"""Command line entry point: one module per subcommand under harness.commands."""
from __future__ import annotations

import argparse
import importlib
import sys

# Subcommand name -> module in harness.commands. Each module defines
# add_parser(subparsers) and main(args) -> int; imports stay lazy so `harness verify`
# never pays for what `harness run` needs.
COMMANDS = {
    "run": "run",
    "check": "check",
    "init": "init",
    "verify": "verify",
    "report": "report",
    "compare": "compare",
    "target": "target",
    "microbench": "microbench",
    "selftest": "selftest",
    "golden": "golden",
    "reproduce": "reproduce",
    "calibrate": "calibrate",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="harness",
        description="A/B/B/A performance campaigns with output parity and sealed evidence.",
    )
    from harness import __version__

    parser.add_argument("--version", action="version", version=f"abba-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module in COMMANDS.items():
        try:
            mod = importlib.import_module(f"harness.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"harness.commands.{module}":
                raise
            continue  # a subcommand not built yet
        mod.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(f"harness {args.command}: error: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
