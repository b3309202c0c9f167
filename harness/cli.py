"""The command line: one module per subcommand under harness.commands, each
`add_parser(subparsers)` and `main(args) -> exit code`. Imports stay lazy, so `harness verify`
never pays for what `harness run` needs.

The data's journey, and the commands along it:
  plan      init, check, target           a campaign file, its revisions, its pre-flight
  engine    run, calibrate, seal           fresh worker processes -> run records -> a sealed bundle
  judge     verify, compare, reproduce,    the bundle against the contract, its verdict, a re-run,
            bisect                         the first commit that regresses
  render    report, summary                REPORT.md, a pull request's section
  beyond    sign, fleet, golden, microbench, selftest
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys

COMMANDS = ("init", "check", "target", "run", "calibrate", "seal", "verify", "compare", "reproduce", "bisect",
            "report", "summary", "sign", "fleet", "golden", "microbench", "selftest")


# What a write that cannot succeed until the user acts fails with: no space, over a quota, a
# read-only file system, a file too large for it.


def build_parser() -> argparse.ArgumentParser:
    from harness import __version__

    parser = argparse.ArgumentParser(
        prog="harness", description="Interleaved A/B performance campaigns with output parity and sealed, "
                                    "re-checkable evidence.")
    parser.add_argument("--version", action="version", version=f"abba-harness {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"harness.commands.{name}").add_parser(sub)
    return parser


class _Stdout:
    """stdout that outlives its reader: `harness compare B | head -1` may close the pipe before
    the command is done. What is left to print goes to /dev/null and the command ends as it
    would have, with its own exit code (a CI gate under `set -o pipefail` still sees a regression)."""

    def __init__(self, stream):
        self._stream = stream

    def _reader_left(self) -> None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def write(self, text):
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self):
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()
            self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    from harness import outcomes
    from harness.render.text import Terminal

    args = build_parser().parse_args(argv)
    stdout, stderr = sys.stdout, sys.stderr
    # Whatever a command prints reaches the terminal as characters: a bundle's text can neither
    # erase nor rewrite the verdict line (harness/render/text.py owns the escaping).
    sys.stdout, sys.stderr = _Stdout(Terminal(stdout)), Terminal(stderr)
    try:
        code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except KeyboardInterrupt:
        print(f"harness {args.command}: error: interrupted", file=sys.stderr)
        return outcomes.INTERRUPTED
    except BrokenPipeError:
        # written past the wrapper (a raw descriptor): the reader left; end quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), stdout.fileno())
        return outcomes.OK
    except OSError as exc:
        # A write that failed where no command caught it (a full disk under a figure, a scratch
        # copy, a golden file): its one line and WRITE_FAILED, never a traceback. Any other
        # OSError is a bug to see whole.
        from harness.files import WRITE_ERRNOS, WriteFailed

        if isinstance(exc, WriteFailed) or exc.errno in WRITE_ERRNOS:
            failed = exc if isinstance(exc, WriteFailed) else WriteFailed(exc.filename or "a file", exc)
            print(f"harness {args.command}: error: {failed.line()}", file=sys.stderr)
            return outcomes.WRITE_FAILED
        raise
    finally:
        sys.stdout, sys.stderr = stdout, stderr


if __name__ == "__main__":
    sys.exit(main())
