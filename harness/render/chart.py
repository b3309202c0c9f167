"""A chart GitHub draws itself: the per-round ratios of a campaign as a Mermaid `xychart-beta`
block in a fenced code block, which GitHub renders in a comment or a job summary with its own
copy of Mermaid (nothing for the reader to fetch, no image to host).

Mermaid's text has its own injection surface: a quoted title or label can be ended by a quote,
`%%` starts a comment and `%%{...}%%` a directive (its init directive sets the theme, the
security level and the fonts), `;` and a line break end a statement, `-->` is an arrow, and
some diagram kinds read HTML in their labels. The rule here is the one that leaves none of it
to escape: no text from a bundle enters the chart. Its title, axis names and categories are the
harness's own fixed words and round numbers; its values are numbers the harness formats from
floats it checked (finite, clipped to [MIN_VALUE, MAX_VALUE]). `SAFE_LINE` is the whole grammar
a line of the block may have, and tests/unit/test_summary_forms.py holds every chart to it,
hostile bundle text included."""
from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.bundle.model import Stats

MAX_ROUNDS_SHOWN = 100  # bars in one chart: more reads as a smear; the first ones are shown, said in the title
MIN_VALUE, MAX_VALUE = 1e-6, 1e6
# Every line a chart may hold: the fence, the kind, a title and axis names of the harness's own
# words (letters, digits, spaces and `( ) / , . - :` only, no quote inside), categories and
# values as numbers.
SIZE = '%%{init: {"xyChart": {"width": 720, "height": 320}}}%%'  # the harness's own directive, fixed text
SAFE_LINE = re.compile(r"```mermaid|```|xychart-beta|" + re.escape(SIZE) + "|  title \"[A-Za-z0-9 ().,/:-]+\""
                       r"|  x-axis \"[a-z ]+\" \[[0-9]+(, [0-9]+)*\]|  y-axis \"[A-Za-z0-9 ().,/:-]+\" 0 --> [0-9.]+"
                       r"|  (bar|line) \[[0-9.e+-]+(, [0-9.e+-]+)*\]")  # a whole line: SAFE_LINE.fullmatch


def _value(x: float) -> str:
    """A finite number clipped to the chart's range, in a form Mermaid reads (no exponent)."""
    v = min(MAX_VALUE, max(MIN_VALUE, x)) if math.isfinite(x) else 1.0
    return f"{v:.4g}" if 1e-3 <= v < 1e4 else f"{v:.0f}" if v >= 1e4 else f"{v:.7f}".rstrip("0")


def _top(values: list[float]) -> str:
    """The y axis's upper end: a round number a little above the largest value (and above 1)."""
    top = max([1.0, *values]) * 1.1
    step = 10 ** math.floor(math.log10(top))
    return _value(math.ceil(top / step) * step)


def rounds_chart(stats: Stats) -> list[str]:
    """The fenced block of the per-round ratios (stats.rounds.log_ratios, one mean log ratio over
    the items per round), oriented as the headline reads: base time over candidate time ("x
    faster") when the campaign's ratio is below 1, candidate over base ("x slower") otherwise,
    with a line at 1 (no change). [] when there are fewer than two rounds."""
    logs = [v for v in stats.rounds.log_ratios if isinstance(v, (int, float)) and math.isfinite(v)]
    if len(logs) < 2 or len(logs) != len(stats.rounds.log_ratios):
        return []
    ratio = stats.paired.geomean_ratio
    faster = isinstance(ratio, (int, float)) and ratio < 1
    shown = logs[:MAX_ROUNDS_SHOWN]
    values = [math.exp(-v if faster else v) for v in shown]
    n = len(logs)
    which = f"rounds 1-{len(shown)} of {n}" if len(shown) < n else f"{n} rounds"
    title = f"{'Speed-up' if faster else 'Slow-down'} per round, {which} (line at 1: no change)"
    return ["```mermaid", SIZE, "xychart-beta", f'  title "{title}"',
            f'  x-axis "round" [{", ".join(str(k + 1) for k in range(len(shown)))}]',
            f'  y-axis "{"base / candidate time" if faster else "candidate / base time"}" 0 --> {_top(values)}',
            f"  bar [{', '.join(_value(v) for v in values)}]",
            f"  line [{', '.join('1' for _ in values)}]", "```"]
