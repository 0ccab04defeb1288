"""``companysim campaign``: several episodes on one persistent world, with snapshots at every boundary."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from scenarios.splits import seeds_in
from sim.campaign import Boundary, Campaign, CampaignError, continue_trace
from sim.cli.common import NPCS_HELP, DataDir, Db, UsageError, check_count, console, output_dir, output_file
from sim.cli.episodes import check_agent
from sim.curriculum import Curriculum, CurriculumError
from sim.trace import TraceWriter
from worlds.store import WorldStore


def register(app: typer.Typer) -> None:
    """Add ``campaign`` to the application."""
    app.command("campaign")(campaign)


def campaign(
    scenarios: Annotated[list[str], typer.Argument(help="Scenario ids, played in turn.")],
    seed: Annotated[
        int | None, typer.Option(help="World seed (with --split: the N-th world of that split). Default 0.")
    ] = None,
    episodes: Annotated[int, typer.Option(help="Episodes to play.")] = 3,
    agent: Annotated[str, typer.Option(help="oracle | noop | random")] = "oracle",
    noise: Annotated[str, typer.Option(help="Fault injection: none | realistic | harsh.")] = "none",
    npcs: Annotated[str | None, typer.Option(help=NPCS_HELP)] = None,
    split: Annotated[str | None, typer.Option(help="train | val | test: play a company of that split.")] = None,
    trace: Annotated[Path | None, typer.Option(help="Write a JSONL trace here (replayable).")] = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --trace file.")] = False,
    snapshots: Annotated[Path | None, typer.Option(help="Write boundary snapshots and a manifest here.")] = None,
    resume: Annotated[bool, typer.Option(help="Continue the campaign saved in --snapshots.")] = False,
    curriculum: Annotated[
        bool,
        typer.Option(
            "--curriculum",
            help="Let a curriculum pick each episode's scenario and difficulty from the rewards so far.",
        ),
    ] = False,
    band: Annotated[
        str, typer.Option(help="With --curriculum: the pass-rate band LOW,HIGH to keep tasks in.")
    ] = "0.2,0.8",
    data_dir: DataDir = None,
    db: Db = None,
) -> None:
    """Play episodes one after another on one company; each starts from the state the last one left."""
    check_agent(agent)
    check_count("--episodes", episodes)
    output_dir(snapshots, "--snapshots")
    if resume and snapshots is None:
        raise CampaignError("--resume needs --snapshots DIR (the directory of the campaign to continue)")
    if resume and split is not None:
        raise UsageError("--resume continues the saved campaign's world; --split cannot choose another")
    if not resume:
        output_file(trace, "--trace", overwrite=overwrite)  # a resumed campaign appends to its trace
    sampler = _curriculum(scenarios, band, seed or 0) if curriculum else None
    world = 0 if seed is None else seed
    if split is not None:
        check_count("--seed", world, minimum=0)
        world = seeds_in(split, world + 1)[world]
    store = WorldStore(data_dir, db=db)
    if resume:
        camp = Campaign.resume(snapshots, store=store, noise=noise, npcs=npcs)  # type: ignore[arg-type]
        if curriculum and camp.curriculum is None:
            camp.close()
            raise CampaignError("the saved campaign was played without --curriculum; resume it without the flag")
        if camp.scenarios != scenarios or (seed is not None and seed != camp.seed):
            saved = f"{', '.join(camp.scenarios)} on world {camp.seed}"
            asked = f"{', '.join(scenarios)} on world {camp.seed if seed is None else seed}"
            camp.close()
            raise CampaignError(f"the saved campaign plays {saved}, not {asked}")
    else:
        camp = Campaign(
            scenarios, seed=world, store=store, noise=noise, npcs=npcs, snapshots=snapshots, curriculum=sampler
        )
    if resume and trace is not None:
        try:
            dropped = continue_trace(trace, camp.boundaries)
        except CampaignError:
            camp.close()
            raise
        if dropped:
            console.print(f"{trace}: dropped {dropped} record(s) of episodes no snapshot holds; playing them again")
    writer = TraceWriter(trace, append=resume) if trace is not None else None
    for ep in camp.episodes.values():
        ep.trace = writer
    table = Table(title=f"campaign on world {camp.seed} ({agent})")
    for column in ("episode", "scenario", "seed", "difficulty", "reward", "state hash", "next start"):
        table.add_column(column)

    def row(b: Boundary) -> None:
        level = "default" if b.difficulty is None else str(b.difficulty)
        table.add_row(str(b.index), b.scenario, str(b.seed), level, f"{b.reward:.3f}", b.state_hash[:12], b.next_start)

    try:
        done = camp.run(agent, episodes)
    finally:
        camp.close()
        if writer is not None:
            writer.close()
    for b in done:
        row(b)
    console.print(table)
    console.print(f"mean reward {sum(b.reward for b in done) / len(done):.3f} over {len(done)} episode(s)")


def _curriculum(scenarios: list[str], band: str, seed: int) -> Curriculum:
    """The sampler ``--curriculum`` asks for, over the campaign's scenarios (a bad ``--band`` is a usage error)."""
    try:
        low, high = (float(x) for x in band.split(","))
    except ValueError:
        raise UsageError(f"--band must be LOW,HIGH (two numbers between 0 and 1), got {band!r}") from None
    try:
        return Curriculum(list(dict.fromkeys(scenarios)), band=(low, high), seed=seed)
    except CurriculumError as exc:
        raise UsageError(f"--band: {exc}") from None
