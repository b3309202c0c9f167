"""Which benchmarks of an existing suite a `suite:` campaign runs (`suite.select`), read the way
the suite's own tool reads it: for asv a regular expression searched in the benchmark's name, as
`asv run --bench` does; for pytest-benchmark and pytest-codspeed a `-k` expression (words joined
by and, or, not and parentheses, each a case-insensitive substring of the test's names); and the
params the spec hands a suite's adapter (SuiteParams), with `suite.number: auto`'s rule (calls_for).

Standard library only and Python 3.9's syntax: the spec validates `select` with it, and the
worker (harness/worker/suites/), running in the user's interpreter, applies it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Optional, Union

from harness.contract import MAX_AUTO_NUMBER, MAX_ITEMS
from harness.records import FromJson

PYTEST_KINDS = ("pytest-benchmark", "pytest-codspeed")
MAX_SELECT = 1000  # characters
AUTO = "auto"  # `suite.number: auto`: each benchmark's calls calibrated on the base's pre-flight


@dataclass(frozen=True)
class SuiteParams(FromJson):
    """A `suite:` campaign's workload params (campaign.json's workload.params, a free-form mapping
    for any other workload): built by the spec, read by the suite's adapter. The suite's kind, its
    path in the revision's tree, the select expression (None: every benchmark), and only where the
    campaign gives them the calls one timed item makes (`number`) and pytest's `-o` values (`ini`).
    `number` is one of three shapes: an int (given, every benchmark alike); "auto" (the spec's
    word, never a sealed bundle's: the runner calibrates it before the first timed run); or
    {item: calls} (what the runner calibrated for each item the campaign runs, recorded in
    campaign.json in place of "auto", so the checkers and `harness reproduce` see what ran)."""
    kind: str
    path: str
    select: Optional[str] = None
    number: Union[int, str, dict[str, int], None] = None
    ini: Optional[dict] = None

    ABSENT = ("number", "ini")  # left out of campaign.json while not given, as before they were typed

    def calls_of(self, item: str) -> int:
        """The calls of a benchmark one timed item makes: the given number, the item's calibrated
        one, else 1 (no number given; `auto` before it is calibrated, when the pre-flight times
        single calls; an item the campaign does not run)."""
        number = self.number
        if isinstance(number, dict):
            number = number.get(item)
        return number if isinstance(number, int) and not isinstance(number, bool) else 1

    @property
    def per_item(self) -> Union[int, dict[str, int]]:
        """What the adapter's workload times by, and each run's metrics record as suite.number:
        the calibrated {item: calls}, else the one count of every benchmark."""
        return dict(self.number) if isinstance(self.number, dict) else self.calls_of("")


def number_of(params) -> Union[int, str, dict, None]:
    """A suite's `number` as a campaign's workload params hold it (a spec's, or campaign.json's):
    None when none is given, or the params are not a suite's."""
    try:
        return SuiteParams.from_json(params).number
    except (KeyError, TypeError):
        return None


def calls_for(per_call_s: Optional[float], target_s: float) -> int:
    """`suite.number: auto`'s rule for one benchmark, from the median wall of one call in the base's
    pre-flight: the smallest power of two of calls that together take at least target_s (1 for a
    call already that long), at most MAX_AUTO_NUMBER, as pyperf calibrates its loops (a power of
    two, to a minimum time per value) and asv its `number` (until a sample takes sample_time).
    None (the benchmark raised on its first call: its error is what every run records) gives 1."""
    if per_call_s is None:
        return 1
    calls = 1
    while calls < MAX_AUTO_NUMBER and calls * per_call_s < target_s:
        calls *= 2
    return calls


def numbers_problem(numbers) -> Optional[str]:
    """What is wrong with a calibrated {item: calls} mapping (None: nothing): campaign.json's
    workload.params.number where the campaign file says `auto`."""
    if not isinstance(numbers, dict) or not numbers or len(numbers) > MAX_ITEMS:
        return f"a mapping of 1 to {MAX_ITEMS} benchmarks to their calls"
    for item, calls in numbers.items():
        if not isinstance(item, str) or not isinstance(calls, int) or isinstance(calls, bool) \
                or not 1 <= calls <= MAX_AUTO_NUMBER or calls & (calls - 1):
            return (f"calls that are powers of two from 1 to {MAX_AUTO_NUMBER} (benchmark {str(item)[:60]!r}: "
                    f"{str(calls)[:20]})")
    return None


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
