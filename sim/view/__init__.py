"""The replay viewer and the dataset export (``companysim view`` and ``companysim export``).

- ``sim.view.model``: recorded episodes read from traces, optionally replayed for their state diff and the
  coworkers' actions per step; first divergence of two runs of a task; reward and fault tables.
- ``sim.view.plots``: reward per family and difficulty and fault rate per tool, as PNG and deterministic SVG.
- ``sim.view.html``: the self-contained report page.
- ``sim.view.export``: one Parquet row per episode.
- ``sim.view.output``: atomic writes (a temporary name, then a rename).

``report`` puts the pieces together; the same traces give a report with the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sim.view.model import EpisodeView, comparisons, fault_table, load, reward_table
from worlds.store import WorldStore

__all__ = ["Report", "report", "report_files"]


@dataclass(frozen=True, kw_only=True)
class Report:
    """A rendered report: its files by name (``index.html`` and the plots) and what it covers."""

    files: dict[str, bytes]
    episodes: list[EpisodeView]
    compared: int


def report_files() -> set[str]:
    """The names a report directory may hold (what ``--overwrite`` may replace)."""
    return {"index.html", "rewards.png", "rewards.svg", "faults.png", "faults.svg"}


def report(paths: Sequence[str | Path], *, replay: bool = True, store: WorldStore | None = None) -> Report:
    """Read (and by default replay) the traces at ``paths`` and render the report's files in memory.

    Raises:
        TraceError: a trace is missing, corrupt or truncated.
    """
    from sim.view.html import render
    from sim.view.plots import fault_plot, reward_plot

    episodes = load(paths, replay=replay, store=store)
    divergences = comparisons(episodes)
    plots = [reward_plot(reward_table(episodes)), fault_plot(fault_table(episodes))]
    files = {"index.html": render(episodes, divergences, plots).encode("utf-8")}
    for plot in plots:
        files[f"{plot.name}.png"] = plot.png
        files[f"{plot.name}.svg"] = plot.svg
    return Report(files=files, episodes=episodes, compared=len(divergences))
