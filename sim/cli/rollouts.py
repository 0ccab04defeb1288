"""``companysim rollouts``: many episodes of a scenario in parallel (worker processes or Ray), with traces."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from sim.cli.common import DataDir, UsageError, check_count, check_difficulty, console, output_dir

BACKENDS = ("local", "ray")


def register(app: typer.Typer) -> None:
    """Add ``rollouts`` to the application."""
    app.command("rollouts")(rollouts)


def rollouts(
    scenario: Annotated[str, typer.Argument(help="Scenario id, e.g. triage-tickets-v0.")],
    episodes: Annotated[int, typer.Option(help="Episodes to play (seeds seed..seed+N-1).")] = 8,
    workers: Annotated[int, typer.Option(help="Worker processes (local) or manager actors (ray).")] = 2,
    agent: Annotated[str, typer.Option(help="oracle | noop | random | cheat-* | partial-* (the family's).")] = "oracle",
    seed: Annotated[int, typer.Option(help="First seed.")] = 0,
    difficulty: Annotated[int, typer.Option(help="Scenario difficulty 0-3.")] = 1,
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    trace_dir: Annotated[
        Path | None, typer.Option(help="Write one JSONL trace per episode here (named by scenario, agent, seed).")
    ] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace traces already in --trace-dir.")] = False,
    backend: Annotated[str, typer.Option(help="local (worker processes) | ray (EnvManager actors).")] = "local",
    address: Annotated[
        str | None, typer.Option(help="ray: the cluster address (e.g. 127.0.0.1:6379); default: a local one.")
    ] = None,
    data_dir: DataDir = None,
) -> None:
    """Play N episodes in parallel; print reward mean/std, pass rate and episodes/s; one trace per episode."""
    from sim.rollouts.runner import LocalBackend, RolloutBackend, jobs_for, run_rollouts, trace_name

    check_count("--episodes", episodes)
    check_count("--workers", workers)
    check_difficulty(difficulty)
    if backend not in BACKENDS:
        raise UsageError(f"--backend must be one of {', '.join(BACKENDS)}; got {backend!r}")
    if address is not None and backend != "ray":
        raise UsageError("--address names a Ray cluster; pass --backend ray with it")
    output_dir(trace_dir, "--trace-dir")
    if trace_dir is not None and not trace_dir.is_dir():
        raise UsageError(f"--trace-dir {trace_dir} does not exist; create it first")
    jobs = jobs_for(scenario, agent, range(seed, seed + episodes), difficulty=difficulty, noise=noise,
                    trace_dir=trace_dir.resolve() if trace_dir is not None else None)  # fmt: skip
    if trace_dir is not None and not overwrite:
        taken = [trace_name(j) for j in jobs if (trace_dir / trace_name(j)).exists()]
        if taken:
            raise UsageError(f"--trace-dir already holds {taken[0]} (and {len(taken) - 1} more); pass --overwrite")
    runner: RolloutBackend
    if backend == "ray":
        from sim.rollouts.cluster import RayBackend

        runner = RayBackend(workers, address, data_dir)
    else:
        runner = LocalBackend(workers, data_dir)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(f"{scenario} ({agent}, {backend} x{workers})", total=len(jobs))
        summary = run_rollouts(jobs, runner, on_done=lambda _: bar.advance(task))
    table = Table(title=f"{scenario}: {agent}, difficulty {difficulty}, {backend} backend, {workers} worker(s)")
    for column in ("episodes", "reward mean", "reward std", "pass rate", "steps/episode", "episodes/s"):
        table.add_column(column, justify="right")
    steps = sum(r.steps for r in summary.rollouts) / len(summary.rollouts)
    table.add_row(
        str(len(summary.rollouts)), f"{summary.mean:.3f}", f"{summary.std:.3f}", f"{summary.pass_rate:.0%}",
        f"{steps:.1f}", f"{summary.episodes_per_s:.2f}",
    )  # fmt: skip
    console.print(table)
    if trace_dir is not None:
        console.print(f"traces in {trace_dir} ({len(summary.rollouts)} files)", markup=False)
