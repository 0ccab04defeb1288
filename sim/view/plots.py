"""The report's plots: reward distribution per family and difficulty, and fault rates per tool, as PNG and SVG.

matplotlib draws with the Agg backend (no display, no GUI toolkit) and is pinned exactly in constraints.txt,
since its version shapes every byte. The SVG is made deterministic: a fixed ``svg.hashsalt`` (element ids are
otherwise random), no ``Date`` metadata, and text kept as text (``svg.fonttype: none``: smaller files, and no
glyph outlines that depend on the fonts found). The PNG carries no software-version text either.

Each plot is returned as bytes rather than written, so the caller writes the whole report atomically.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sim.view.model import RewardRow

RC: dict[Any, Any] = {  # keys are typed as literals in matplotlib's stubs
    "svg.hashsalt": "companysim-view",
    "svg.fonttype": "none",
    "font.family": "DejaVu Sans",
    "font.size": 9.0,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "path.simplify": False,
}


@dataclass(frozen=True, kw_only=True)
class Plot:
    """One rendered plot: its file stem, a sentence describing it (alt text), and its PNG and SVG bytes."""

    name: str
    description: str
    png: bytes
    svg: bytes


def render(name: str, description: str, draw: Any, *, height: float = 3.6) -> Plot:
    """Draw ``draw(figure)`` under the deterministic settings above; returns its PNG and SVG bytes."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    with matplotlib.rc_context(RC):
        fig = plt.figure(figsize=(7.0, height))
        try:
            draw(fig)
            fig.tight_layout()
            png, svg = io.BytesIO(), io.BytesIO()
            fig.savefig(png, format="png", metadata={"Software": None})
            fig.savefig(svg, format="svg", metadata={"Date": None, "Creator": None})
        finally:
            plt.close(fig)
    return Plot(name=name, description=description, png=png.getvalue(), svg=svg.getvalue())


def reward_plot(rows: Sequence[RewardRow]) -> Plot:
    """Each episode's reward as a dot over its family and difficulty, with the group mean as a bar."""
    labels = [f"{r.scenario}\ndifficulty {r.difficulty}" for r in rows]

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        for x, row in enumerate(rows):
            n = len(row.rewards)
            # Spread a group's dots evenly across its slot (deterministic, unlike random jitter).
            xs = [x + (0.0 if n == 1 else -0.25 + 0.5 * i / (n - 1)) for i in range(n)]
            ax.scatter(xs, row.rewards, s=14, color="#1f5fa8", alpha=0.7, zorder=3)
            ax.hlines(row.mean, x - 0.35, x + 0.35, color="#b3261e", linewidth=2, zorder=4)
        ax.set_xticks(range(len(rows)), labels, fontsize=7)
        ax.set_xlim(-0.6, max(len(rows), 1) - 0.4)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("reward")
        ax.set_title("Reward per family and difficulty (dots: episodes, bar: mean)")
        ax.grid(axis="y", color="#dddddd", zorder=0)

    groups = ", ".join(f"{r.scenario} difficulty {r.difficulty}: mean {r.mean:.3f} over {len(r.rewards)}" for r in rows)
    return render("rewards", f"Reward distribution per family and difficulty. {groups}.", draw)


def fault_plot(table: Sequence[tuple[str, int, int]]) -> Plot:
    """Per tool, the share of its calls that had a fault injected (a bar per tool, the counts written on it)."""
    rows = list(table)

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        ys = list(range(len(rows)))
        rates = [faults / calls if calls else 0.0 for _, calls, faults in rows]
        ax.barh(ys, rates, color="#b3261e", zorder=3)
        for y, (_, calls, faults) in zip(ys, rows, strict=True):
            ax.text(1.01, y, f"{faults}/{calls}", va="center", fontsize=7, transform=ax.get_yaxis_transform())
        ax.set_yticks(ys, [tool for tool, _, _ in rows], fontsize=7)
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_xlabel("share of calls with an injected fault")
        ax.set_title("Fault rate per tool")
        ax.grid(axis="x", color="#dddddd", zorder=0)

    faulted = [f"{tool} {faults} of {calls}" for tool, calls, faults in rows if faults]
    said = ", ".join(faulted) if faulted else "no faults injected"
    return render("faults", f"Fault rate per tool: {said}.", draw, height=max(2.4, 1.2 + 0.16 * len(rows)))
