"""The picture of a bundle, drawn from its verified records (never taken from the bundle):

1. the per-round candidate/base ratio, in execution order, with the campaign's ratio, its 95%
   interval and the equal band; rounds with a run other work disturbed are marked;
2. every item's own ratio and 95% interval over the rounds (the worst and best when there are
   many), so what a geometric mean hides shows;
3. each run's timed wall in execution order, base and candidate apart, each variant's mean as its
   own line and label (equal means cannot hide one another);
4. stage self CPU per variant, and instruction counts per variant where the campaign counted them.

Readable at 100 rounds: ticks thin out, labels never sit on one another. Matplotlib's Agg
backend, no timestamps in the file: the same records give the same picture on one machine.
"""
from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

BASE, CANDIDATE, LOAD = "#1f77b4", "#d62728", "#ff7f0e"
if TYPE_CHECKING:
    from harness.bundle.model import Instructions, Stage, Stats

ITEMS_SHOWN = 24  # per-item rows drawn: the worst and the best halves when there are more


def render(bundle, path: os.PathLike | str) -> None:
    """Draw bundle (harness.bundle.read.Bundle) into a PNG at path."""
    from harness.comparison import analysis

    c = bundle.comparison
    stats = c.stats
    ok = analysis.usable_runs(bundle.runs)
    timed = [r for r in ok if r.timed]
    overloaded = set(stats.load.overloaded)
    ins = c.instructions if c.instructions is not None and c.instructions.ratio is not None else None
    panels = 4 if (c.stages or ins) else 3
    fig = plt.figure(figsize=(11, 3.4 * panels))
    grid = fig.add_gridspec(panels, 2 if (c.stages and ins) else 1)
    name = _short(bundle.name, 80)
    _rounds(fig.add_subplot(grid[0, :]), stats, overloaded, name)
    _items(fig.add_subplot(grid[1, :]), bundle, timed, stats)
    _walls(fig.add_subplot(grid[2, :]), timed, overloaded)
    if panels == 4:
        if c.stages and ins:
            _stages(fig.add_subplot(grid[3, 0]), c.stages)
            _instructions(fig.add_subplot(grid[3, 1]), ins)
        elif c.stages:
            _stages(fig.add_subplot(grid[3, :]), c.stages)
        elif ins:
            _instructions(fig.add_subplot(grid[3, :]), ins)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)


def _thin(ax, count: int) -> None:
    """Integer ticks on the x axis, at most about 20 of them."""
    step = max(1, math.ceil(count / 20))
    ax.set_xticks(range(1, count + 1, step))


def _log_scale(ax, which: str = "y", digits: int = 3) -> None:
    """A log axis labelled in plain numbers (0.95, not 9.5x10^-1); minor ticks are labelled only
    when the axis spans less than a decade, where they are the only ticks."""
    axis, lim = (ax.yaxis, ax.get_ylim) if which == "y" else (ax.xaxis, ax.get_xlim)
    (ax.set_yscale if which == "y" else ax.set_xscale)("log")

    def major(v, _):
        return f"{v:.{digits}g}"

    def minor(v, _):
        lo, hi = sorted(lim())
        return major(v, _) if lo > 0 and math.log10(hi / lo) < 1 else ""

    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(major))
    axis.set_minor_formatter(matplotlib.ticker.FuncFormatter(minor))


def _rounds(ax, stats: Stats, overloaded: set, name: str) -> None:
    pairs = stats.rounds.pairs
    logs = stats.rounds.log_ratios
    x = list(range(1, len(logs) + 1))
    y = [math.exp(v) for v in logs]
    ax.plot(x, y, "o-", color="#444444", markersize=3, linewidth=0.8, label="round's ratio (mean over items)")
    hit = [(i, v) for i, v, pair in zip(x, y, pairs) if set(pair) & overloaded]
    if hit:
        ax.scatter(*zip(*hit), s=60, facecolors="none", edgecolors=LOAD, linewidths=1.5,
                   label="a run of the round disturbed by other work", zorder=3)
    ratio, ci = stats.paired.geomean_ratio, stats.paired.ci95
    if ratio:
        ax.axhline(ratio, color=CANDIDATE, linewidth=1.2, label=f"ratio {ratio:.4f}")
    if ci:
        ax.axhspan(ci[0], ci[1], color=CANDIDATE, alpha=0.15, label=f"95% interval [{ci[0]:.4f}, {ci[1]:.4f}]")
    band = stats.band
    ax.axhspan(1 - band, 1 + band, color="#2ca02c", alpha=0.08, label=f"equal band +-{100 * band:.1f}%")
    ax.axhline(1.0, color="#2ca02c", linewidth=0.6, linestyle=":")
    _log_scale(ax, "y")  # ratios multiply: 0.5 and 2 lie as far from 1
    ax.set_xlabel("round (execution order)")
    ax.set_ylabel("candidate / base")
    ax.set_title(f"{name}: {stats.verdict}, {len(logs)} rounds")
    if x:
        _thin(ax, len(x))
    ax.legend(loc="best", fontsize=7, framealpha=0.8)


def _items(ax, bundle, timed: list, stats: Stats) -> None:
    """Each item's ratio and interval over the rounds (the same statistic the verdict uses)."""
    from harness.comparison import analysis

    pairs, _ = analysis.pairs_of(timed)
    items, _ = analysis.usable_items([r for pair in pairs for r in pair], "wall_s")
    if not pairs or not items:
        ax.text(0.5, 0.5, "no per-item timings", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    logs = analysis.round_logs(pairs, items, "wall_s")
    rows = []
    for j, item in enumerate(items):
        iv = analysis.interval([row[j] for row in logs])
        rows.append((iv.geomean_ratio, iv.ci95, item))
    rows.sort(key=lambda r: -r[0])
    shown = rows if len(rows) <= ITEMS_SHOWN else rows[:ITEMS_SHOWN // 2] + rows[-ITEMS_SHOWN // 2:]
    y = list(range(len(shown)))
    for k, (ratio, ci, _) in enumerate(shown):
        if ci:
            ax.plot([ci[0], ci[1]], [k, k], color="#555555", linewidth=1.2)
        ax.plot([ratio], [k], "o", color=CANDIDATE if ratio > 1 else BASE, markersize=4)
    ax.set_yticks(y)
    ax.set_yticklabels([_short(item) for *_, item in shown], fontsize=7)
    ax.invert_yaxis()
    band = stats.band
    ax.axvspan(1 - band, 1 + band, color="#2ca02c", alpha=0.08)
    ax.axvline(1.0, color="#2ca02c", linewidth=0.6, linestyle=":")
    _log_scale(ax, "x")
    left = f"; {len(rows) - len(shown)} middle items not drawn" if len(rows) > len(shown) else ""
    ax.set_title(f"per item: candidate/base and 95% interval over the rounds, worst first ({len(rows)} items{left})",
                 fontsize=9)
    ax.set_xlabel("candidate / base")


def _walls(ax, timed: list, overloaded: set) -> None:
    x = {r.label: i for i, r in enumerate(timed, 1)}
    for variant, color, marker, style in (("base", BASE, "o", "-"), ("candidate", CANDIDATE, "s", "--")):
        runs = [r for r in timed if r.variant == variant]
        if not runs:
            continue
        ax.scatter([x[r.label] for r in runs], [r.wall_s for r in runs], color=color, marker=marker, s=14,
                   label=variant)
        mean = sum(r.wall_s for r in runs) / len(runs)
        ax.axhline(mean, color=color, linestyle=style, linewidth=1)
        ax.annotate(f"{variant} mean {mean:.4g} s", xy=(1.0, mean), xycoords=("axes fraction", "data"),
                    xytext=(4, 6 if variant == "base" else -10), textcoords="offset points", fontsize=7,
                    color=color, annotation_clip=False)
    hit = [(x[r.label], r.wall_s) for r in timed if r.label in overloaded]
    if hit:
        ax.scatter(*zip(*hit), s=70, facecolors="none", edgecolors=LOAD, linewidths=1.2, label="disturbed")
    walls = [r.wall_s for r in timed]
    if walls and max(walls) / max(min(walls), 1e-12) > 5:
        _log_scale(ax, "y")
    ax.set_xlabel("timed run (execution order)")
    ax.set_ylabel("timed wall (s)")
    ax.set_title("timed wall per run", fontsize=9)
    if timed:
        _thin(ax, len(timed))
    ax.legend(loc="upper left", fontsize=7)


def _stages(ax, stages: dict[str, Stage]) -> None:
    from harness.render.text import stage_order

    names = stage_order(stages)[:12]
    y = range(len(names))
    base = [stages[n].base_self_cpu_s or 0.0 for n in names]
    cand = [stages[n].candidate_self_cpu_s or 0.0 for n in names]
    ax.barh([v - 0.2 for v in y], base, height=0.4, color=BASE, label="base")
    ax.barh([v + 0.2 for v in y], cand, height=0.4, color=CANDIDATE, label="candidate")
    ax.set_yticks(list(y))
    ax.set_yticklabels([_short(n) for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("self CPU per run (s, stage runs)")
    ax.set_title("stage self CPU", fontsize=9)
    ax.legend(fontsize=7)


def _instructions(ax, ins: Instructions) -> None:
    for k, (side, color) in enumerate(((ins.base, BASE), (ins.candidate, CANDIDATE))):
        counts = side.counts
        ax.scatter([k] * len(counts), counts, color=color, s=20)
    ax.set_xticks([0, 1])
    ax.set_xticklabels(["base", "candidate"])
    ax.set_ylabel("instructions (measured region)")
    _log_scale(ax, "y", digits=6)
    ax.set_title(f"instructions: {ins.verdict}, ratio {ins.ratio:.4f}", fontsize=9)


def _short(text: str, width: int = 28) -> str:
    """Bundle text (an item id, a stage name) as a label: one line, no mathtext, bounded."""
    from harness.render.text import figure_text

    return figure_text(text, width)
