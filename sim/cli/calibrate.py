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
    for d in data["disagreements"][:10]:
        console.print(f"disagreement: {json.dumps(d)[:400]}", markup=False)
    if out is not None:
        _write(out, data)
        console.print(f"wrote {out / 'calibration.json'} and {out / 'calibration.png'}", markup=False)
    if low:
        console.print(f"agreement below {min_agreement:.0%} in: {', '.join(low)}")
        raise typer.Exit(1)


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
    agents = sorted({r["agent"] for r in rows})

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        width = 0.8 / max(len(families), 1)
        for i, family in enumerate(families):
            means = []
            for agent in agents:
                cells = [r for r in rows if r["family"] == family and r["agent"] == agent]
                means.append(sum(c["mean"] for c in cells) / len(cells) if cells else 0.0)
            ax.bar([x + i * width for x in range(len(agents))], means, width, label=family)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(agents))], agents, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1.05)
        ax.set_ylabel("mean reward (over difficulties)")
        ax.set_title("Calibration: mean reward per agent and family")
        ax.legend(fontsize=6)

    plot = render("calibration", "Mean reward per agent and family.", draw, height=4.2)
    text = json.dumps(data, indent=1, sort_keys=True).encode() + b"\n"
    out.parent.mkdir(parents=True, exist_ok=True)
    write_dir(out, {"calibration.json": text, "calibration.png": plot.png})
