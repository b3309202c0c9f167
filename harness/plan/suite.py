"""Which benchmarks of an existing suite a `suite:` campaign runs (`suite.select`), read the way
the suite's own tool reads it: for asv a regular expression searched in the benchmark's name, as
`asv run --bench` does; for pytest-benchmark and pytest-codspeed a `-k` expression (words joined
by and, or, not and parentheses, each a case-insensitive substring of the test's names); and the
params the spec hands a suite's adapter (SuiteParams).

Standard library only and Python 3.9's syntax: the spec validates `select` with it, and the
worker (harness/worker/suites/), running in the user's interpreter, applies it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional

from harness.records import FromJson

PYTEST_KINDS = ("pytest-benchmark", "pytest-codspeed")
MAX_SELECT = 1000  # characters


@dataclass(frozen=True)
class SuiteParams(FromJson):
    """A `suite:` campaign's workload params (campaign.json's workload.params, a free-form mapping
    for any other workload): built by the spec, read by the suite's adapter. The suite's kind, its
    path in the revision's tree, the select expression (None: every benchmark), and only where the
    campaign gives them the calls one timed item makes (`number`) and pytest's `-o` values (`ini`)."""
    kind: str
    path: str
    select: Optional[str] = None
    number: Optional[int] = None
    ini: Optional[dict] = None

    ABSENT = ("number", "ini")  # left out of campaign.json while not given, as before they were typed

    @property
    def calls(self) -> int:
        """The calls of each benchmark one timed item makes."""
        return self.number if self.number is not None else 1


class SelectError(ValueError):
    """A select expression that cannot be read: one line naming the cause."""


def _tokens(expr: str) -> list:
    return re.findall(r"\(|\)|[^\s()]+", expr)


def keyword_matcher(expr: str):
    """A pytest `-k` expression -> a function of the test's names (a list of str) -> bool."""
    tokens = _tokens(expr)
    if not tokens:
        raise SelectError("an empty -k expression")
    pos = 0

    def peek():
        return tokens[pos] if pos < len(tokens) else None

    def take():
        nonlocal pos
        pos += 1
        return tokens[pos - 1]

    def or_():
        left = and_()
        while peek() == "or":
            take()
            right = and_()
            left = (lambda a, b: lambda names: a(names) or b(names))(left, right)
        return left

    def and_():
        left = not_()
        while peek() == "and":
            take()
            right = not_()
            left = (lambda a, b: lambda names: a(names) and b(names))(left, right)
        return left

    def not_():
        tok = peek()
        if tok is None:
            raise SelectError(f"-k expression {expr!r} ends where a word was expected")
        if tok == "not":
            take()
            inner = not_()
            return lambda names: not inner(names)
        if tok == "(":
            take()
            inner = or_()
            if peek() != ")":
                raise SelectError(f"-k expression {expr!r}: a '(' without its ')'")
            take()
            return inner
        if tok in (")", "and", "or"):
            raise SelectError(f"-k expression {expr!r}: {tok!r} where a word was expected")
        word = take().lower()
        return lambda names: any(word in name.lower() for name in names)

    match = or_()
    if pos != len(tokens):
        raise SelectError(f"-k expression {expr!r}: unexpected {tokens[pos]!r}")
    return match


def regex_matcher(expr: str):
    """asv's `--bench` rule: the regular expression searched in the benchmark's name, with or
    without its parameters."""
    try:
        pattern = re.compile(expr)
    except re.error as exc:
        raise SelectError(f"not a regular expression ({exc})") from None
    return lambda names: any(pattern.search(name) for name in names)


def matcher(kind: str, expr):
    """The select rule for a suite kind; None selects everything."""
    if expr is None:
        return lambda names: True
    if len(expr) > MAX_SELECT:
        raise SelectError(f"at most {MAX_SELECT} characters")
    return keyword_matcher(expr) if kind in PYTEST_KINDS else regex_matcher(expr)
