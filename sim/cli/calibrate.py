"""``companysim calibrate``: rewards per family x difficulty x agent, and grader-verifier agreement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import Progress
from rich.table import Table

from sim.cli.common import NPCS_HELP, DataDir, UsageError, check_count, check_difficulty, console, output_dir
from worlds.store import WorldStore


def register(app: typer.Typer) -> None:
    """Add ``calibrate`` to the application."""
    app.command("calibrate")(calibrate)


def _difficulties(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--difficulties must be comma-separated integers 0-3; got {text!r}") from None
    if not values:
        raise UsageError("--difficulties names no difficulty")
    return [check_difficulty(v) for v in values]


def calibrate(
    families: Annotated[list[str] | None, typer.Argument(help="Scenario ids (default: every family).")] = None,
    seeds: Annotated[int, typer.Option(help="Seeds per agent and difficulty (0..N-1).")] = 5,
    difficulties: Annotated[str, typer.Option(help="Comma-separated difficulties.")] = "1,2,3",
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    npcs: Annotated[str | None, typer.Option(help=NPCS_HELP)] = None,
    out: Annotated[Path | None, typer.Option(help="Directory for calibration.json and calibration.png.")] = None,
    min_agreement: Annotated[
        float, typer.Option(help="Exit 1 when a family's grader-verifier agreement is below this share.")
    ] = 0.99,
    data_dir: DataDir = None,
) -> None:
    """Play every agent (oracle, no-op, random, partial agents, cheaters) and tabulate rewards and agreement."""
    from scenarios.registry import registered
    from sim.calibrate import agents_for
    from sim.calibrate import calibrate as run
    from sim.episode import Episode
    from sim.noise import NoiseProfile

    known = [r.id for r in registered()]
    chosen = list(families or known)
    unknown = [f for f in chosen if f not in known]
    if unknown:
        raise UsageError(f"unknown scenario {unknown[0]!r}; known: {', '.join(known)}")
    check_count("--seeds", seeds)
    levels = _difficulties(difficulties)
    NoiseProfile.parse(noise)
    output_dir(out, "--out")
    store = WorldStore(data_dir)
    total = sum(len(agents_for(f)) for f in chosen) * seeds * len(levels)
    with Progress(console=console, transient=True) as bar:
        task = bar.add_task("calibrate", total=total)
        report = run(
            chosen,
            seeds=range(seeds),
            difficulties=levels,
            episode_factory=lambda family: Episode(family, store=store, noise=noise, npcs=npcs),
            on_episode=lambda *_: bar.advance(task),
        )
    data = report.to_json()
    console.print(_table(data))
    low = []
    for family, got in data["agreement"].items():
        share = got["agree"] / got["episodes"]
        console.print(f"{family}: grader-verifier agreement {got['agree']}/{got['episodes']} ({share:.2%})")
        low += [family] * (share < min_agreement)
    for family, verdict in data["ordering"].items():
        console.print(_ordering_line(family, verdict), markup=False)
    for d in data["disagreements"][:10]:
        console.print(f"disagreement: {json.dumps(d)[:400]}", markup=False)
    if out is not None:
        _write(out, data)
        console.print(f"wrote {out / 'calibration.json'} and {out / 'calibration.png'}", markup=False)
    if low:
        console.print(f"agreement below {min_agreement:.0%} in: {', '.join(low)}")
        raise typer.Exit(1)


def _ordering_line(family: str, verdict: dict[str, Any]) -> str:
    """One line per family: ordered (noop < every partial < oracle at every difficulty), difficulty lowers."""
    if verdict["ordered"] is None:
        return f"{family}: ordered n/a, difficulty_lowers n/a ({verdict['why']})"
    slope = ", ".join(f"{k} {v:.3f}" for k, v in verdict["partial_means"].items())
    lowers = {True: "yes", False: "NO", None: "n/a (one difficulty)"}[verdict["difficulty_lowers"]]
    line = f"{family}: ordered {'yes' if verdict['ordered'] else 'NO'}, difficulty_lowers {lowers} (partials {slope})"
    return line + (f"; unordered: {', '.join(verdict['unordered'])}" if verdict["unordered"] else "")


def _table(data: dict[str, Any]) -> Table:
    table = Table(title="Calibration (reward per family, difficulty and agent)")
    for column in ("family", "difficulty", "agent", "episodes", "mean", "std", "pass rate"):
        table.add_column(column, justify="right" if column not in ("family", "agent") else "left")
    for r in data["rows"]:
        table.add_row(r["family"], str(r["difficulty"]), r["agent"], str(r["episodes"]), f"{r['mean']:.3f}",
                      f"{r['std']:.3f}", f"{r['pass_rate']:.2f}")  # fmt: skip
    return table


def _write(out: Path, data: dict[str, Any]) -> None:
    from sim.view.output import write_dir
    from sim.view.plots import render

    rows = data["rows"]
    families = sorted({r["family"] for r in rows})
    levels = sorted({int(r["difficulty"]) for r in rows})
    columns = ["oracle", *(f"partials\nd{d}" for d in levels), "lowest\npartial", "no-op", "random", "best\ncheater"]

    def mean(family: str, keep: Any) -> float | None:
        cells = [r["mean"] for r in rows if r["family"] == family and keep(r)]
        return sum(cells) / len(cells) if cells else None

    def cell(family: str, column: str) -> float | None:
        """One heat-map cell: a mean reward over the family's seeds (and difficulties, unless the column names one)."""
        if column == "oracle" or column in ("no-op", "random"):
            agent = {"no-op": "noop"}.get(column, column)
            return mean(family, lambda r: r["agent"] == agent)
        if column.startswith("partials"):
            level = int(column.rsplit("d", 1)[1])
            return mean(family, lambda r: r["agent"].startswith("partial") and int(r["difficulty"]) == level)
        names = sorted({r["agent"] for r in rows if r["family"] == family})
        prefix = "partial" if column.startswith("lowest") else "cheat"
        per = [
            v for n in names if n.startswith(prefix) and (v := mean(family, lambda r, n=n: r["agent"] == n)) is not None
        ]
        if not per:
            return None
        return min(per) if prefix == "partial" else max(per)

    def draw(fig: Any) -> None:
        # a heat map, one row per family: with dozens of families a bar per (family, agent) cannot be read
        import numpy as np

        grid = np.array([[cell(f, c) if cell(f, c) is not None else np.nan for c in columns] for f in families])
        ax = fig.add_subplot(1, 1, 1)
        ax.imshow(grid, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
        for (i, j), value in np.ndenumerate(grid):
            if not np.isnan(value):
                ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=6,
                        color="black" if value > 0.6 else "white")  # fmt: skip
        ax.set_xticks(range(len(columns)), columns, fontsize=7)
        ax.set_yticks(range(len(families)), families, fontsize=7)
        ax.xaxis.tick_top()
        ax.set_title(
            "Mean reward per family: oracle, partial agents by difficulty, no-op, random, cheaters", fontsize=8
        )

    plot = render("calibration", "Mean reward per family and agent kind.", draw, height=1.2 + 0.22 * len(families))
    text = json.dumps(data, indent=1, sort_keys=True).encode() + b"\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_dir(out, {"calibration.json": text, "calibration.png": plot.png})
