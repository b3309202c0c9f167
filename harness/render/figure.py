"""The bundle's figure: wall time per run in execution order, and stage self CPU per variant.

Headless (Agg) and deterministic: fixed size, dpi and fonts, no timestamp or software tag in
the PNG metadata, so the same comparison and runs give the same bytes on the same
matplotlib. The bundle writer calls ``render`` before sealing; the report only links it.
"""
from __future__ import annotations

import os
from pathlib import Path

from harness import records

COLOURS = {"base": "#4c72b0", "candidate": "#dd8452"}
OTHER = "#999999"
_STAGE_PALETTE = ["#55a868", "#8172b3", "#ccb974", "#64b5cd", "#c44e52", "#937860",
                  "#da8bc3", "#8c8c8c", "#2ca02c", "#9467bd"]


def render(comparison: dict, runs: list[dict], path: os.PathLike | str,
           title: str | None = None) -> None:
    """Write a PNG to ``path``: left, each run's measured wall time in execution order,
    coloured by variant (failed runs hatched, with no bar when they have no wall time);
    right, stage self CPU per run stacked per variant (from ``comparison["stages"]``)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    rc = {"font.family": "DejaVu Sans", "font.size": 9, "svg.hashsalt": "abba",
          "path.simplify": True, "figure.dpi": 100}
    with matplotlib.rc_context(rc):
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4),
                                       gridspec_kw={"width_ratios": [3, 2]})
        try:
            _runs_panel(ax1, comparison, runs)
            _stages_panel(ax2, comparison)
            fig.suptitle(title or "wall time per run and stage self CPU")
            fig.tight_layout()
            out = Path(path)
            out.parent.mkdir(parents=True, exist_ok=True)
            fig.savefig(out, format="png", dpi=100, metadata={"Software": None})
        finally:
            plt.close(fig)


def _runs_panel(ax, comparison: dict, runs: list[dict]) -> None:
    rows = runs or comparison.get("runs") or []
    labels, walls, colours, hatches, alphas = [], [], [], [], []
    for r in rows:
        labels.append(str(r.get("label")))
        w = r.get("wall_s")
        walls.append(float(w) if isinstance(w, (int, float)) else 0.0)
        colours.append(COLOURS.get(r.get("variant"), OTHER))
        hatches.append("" if r.get("status", "ok") == "ok" else "//")
        alphas.append(1.0 if records.timed(labels[-1]) else 0.35)  # stage runs: not in the headline
    xs = list(range(len(labels)))
    bars = ax.bar(xs, walls, color=colours, edgecolor="black", linewidth=0.5)
    for bar, h, w, r, alpha in zip(bars, hatches, walls, rows, alphas):
        bar.set_hatch(h)
        bar.set_alpha(alpha)
        text = f"{w:.3f}" if isinstance(r.get("wall_s"), (int, float)) else str(r.get("status"))
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, w), xytext=(0, 2),
                    textcoords="offset points", ha="center", va="bottom", fontsize=7)
    ax.set_xticks(xs, labels)
    ax.set_xlabel("run, in execution order")
    ax.set_ylabel("measured wall time (s)")
    wall = comparison.get("wall") or {}
    for variant, key in (("base", "base_mean_s"), ("candidate", "candidate_mean_s")):
        if isinstance(wall.get(key), (int, float)):
            ax.axhline(wall[key], color=COLOURS[variant], linestyle="--", linewidth=1)
    from matplotlib.patches import Patch

    handles = [Patch(facecolor=COLOURS["base"], label="base (A)"),
               Patch(facecolor=COLOURS["candidate"], label="candidate (B)")]
    if any(hatches):
        handles.append(Patch(facecolor="white", edgecolor="black", hatch="//",
                             label="not ok"))
    if min(alphas, default=1.0) < 1.0:
        handles.append(Patch(facecolor=OTHER, alpha=0.35, label="stage run (As, Bs): not in the mean"))
    top = max(walls, default=0.0)
    ax.set_ylim(0, (top if top > 0 else 1.0) * 1.2)
    ax.legend(handles=handles, loc="upper center", ncol=len(handles), fontsize=8)
    ax.set_title("wall per run (dashed: variant mean of the timed runs)")


def _stages_panel(ax, comparison: dict) -> None:
    stages = comparison.get("stages") or {}
    names = sorted(stages)
    if not names:
        ax.text(0.5, 0.5, "no stages timed", ha="center", va="center",
                transform=ax.transAxes)
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title("stage self CPU per run")
        return
    variants = ["base", "candidate"]
    bottoms = [0.0, 0.0]
    for k, name in enumerate(names):
        st = stages[name] or {}
        vals = [float(st.get(f"{v}_self_cpu_s") or 0.0) for v in variants]
        ax.bar([0, 1], vals, bottom=bottoms, label=name,
               color=_STAGE_PALETTE[k % len(_STAGE_PALETTE)], edgecolor="black",
               linewidth=0.5, width=0.6)
        bottoms = [b + v for b, v in zip(bottoms, vals)]
    for x, total in enumerate(bottoms):
        ax.annotate(f"{total:.3f} s", (x, total), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize=7)
    ax.set_xticks([0, 1], ["base", "candidate"])
    ax.set_ylabel("self CPU per run (s)")
    ax.set_title("stage self CPU per run")
    top = max(bottoms)
    rows = -(-len(names) // 3)
    ax.set_ylim(0, (top if top > 0 else 1.0) * (1.08 + 0.07 * rows))
    ax.legend(loc="upper center", ncol=min(3, len(names)), fontsize=7)
