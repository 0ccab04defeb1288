"""``companysim tasks list|export``: the registered tasks as a dataset, with hash splits.

``list`` only names tasks (no world is built); ``export`` resets each task to read its prompt and tools and
writes JSON Lines or Parquet. ``export --mined`` writes the tasks the miner (``sim.mine``) finds in one world's
history instead (questions, redos, follow-ups, each validated: oracle 1, no-op 0), with their kind and source,
split by the hash of the source unless ``--split-by`` says otherwise. Either writes under a temporary name,
renamed into place at the end, so a failure leaves nothing behind.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from sim.cli.common import DataDir, UsageError, check_difficulty, console, output_file
from sim.taskset import TaskSelection, mined_keys, parse_seeds, task_rows, write_jsonl, write_parquet
from worlds.store import WorldStore

tasks_app = typer.Typer(help="Tasks as a dataset: list them, export them as JSONL or Parquet.", no_args_is_help=True)

Family = Annotated[list[str] | None, typer.Option("--family", help="A scenario id (repeat; default: all).")]
Split = Annotated[str | None, typer.Option(help="Keep only this split: train | val | test.")]
SplitBy = Annotated[
    str | None, typer.Option(help="What the split hashes: world | family | source (default: world; --mined: source).")
]
Seeds = Annotated[str, typer.Option(help="Task seeds: A:B (A to B-1), A, or A,B,C.")]
Difficulty = Annotated[int | None, typer.Option(help="Only this difficulty, 0-3 (default: all four).")]
WorldSeed = Annotated[int | None, typer.Option(help="Every task in this company (default: world seed = seed).")]


def register(app: typer.Typer) -> None:
    """Add ``tasks`` to the application."""
    app.add_typer(tasks_app, name="tasks")


def _selection(
    family: list[str] | None,
    split: str | None,
    split_by: str | None,
    seeds: str,
    difficulty: int | None,
    world_seed: int | None,
) -> TaskSelection:
    if difficulty is not None:
        check_difficulty(difficulty)
    if world_seed is not None and world_seed < 0:
        raise UsageError(f"--world-seed must be at least 0; got {world_seed}")
    return TaskSelection(
        families=tuple(family or ()),
        seeds=parse_seeds(seeds),
        difficulties=(difficulty,) if difficulty is not None else (0, 1, 2, 3),
        world_seed=world_seed,
        split_by=split_by or "world",
        split=split,
    )


@tasks_app.command("list")
def tasks_list(
    family: Family = None,
    split: Split = None,
    split_by: SplitBy = "world",
    seeds: Seeds = "0:10",
    difficulty: Difficulty = None,
    world_seed: WorldSeed = None,
) -> None:
    """List the selected tasks with their splits (no world is built)."""
    keys = _selection(family, split, split_by, seeds, difficulty, world_seed).keys()
    table = Table(title=f"tasks (split by {split_by})")
    for column in ("id", "family", "world seed", "seed", "difficulty", "split"):
        table.add_column(column)
    for k in keys:
        table.add_row(k.id, k.scenario, str(k.world_seed), str(k.seed), str(k.difficulty), k.split)
    console.print(table)
    console.print(f"{len(keys)} task(s)")


@tasks_app.command("export")
def tasks_export(
    out: Annotated[Path, typer.Option(help="The file to write: .jsonl or .parquet.")],
    family: Family = None,
    split: Split = None,
    split_by: SplitBy = None,
    seeds: Seeds = "0:10",
    difficulty: Difficulty = None,
    world_seed: WorldSeed = None,
    overwrite: Annotated[bool, typer.Option("--overwrite", help="Replace an existing --out file.")] = False,
    data_dir: DataDir = None,
    mined: Annotated[
        bool, typer.Option("--mined", help="Export the validated tasks mined from one world's history instead.")
    ] = False,
    employees: Annotated[int, typer.Option(help="With --mined: the world's headcount.")] = 100,
    history_days: Annotated[int, typer.Option(help="With --mined: days of history.")] = 30,
) -> None:
    """Write one row per task (id, family, seeds, difficulty, split, kind, prompt, tools) as JSONL or Parquet."""
    from sim.view.output import write_file

    writers = {".jsonl": write_jsonl, ".parquet": write_parquet}
    writer = writers.get(out.suffix)
    if writer is None:
        raise UsageError(f"--out must end in .jsonl or .parquet; got {out.name!r}")
    output_file(out, "--out", overwrite=overwrite)
    store = WorldStore(data_dir)
    if mined:
        if family or difficulty is not None or seeds != "0:10":
            raise UsageError("--mined exports every mined task of one world; drop --family, --difficulty, --seeds")
        if employees < 2 or history_days < 1:
            raise UsageError(
                f"--employees must be at least 2 and --history-days at least 1; got {employees}, {history_days}"
            )
        _selection(None, split, split_by, seeds, None, world_seed)  # the same checks of --split and --world-seed
        keys = mined_keys(world_seed or 0, employees=employees, history_days=history_days,
                          split_by=split_by or "source", split=split, store=store)  # fmt: skip
    else:
        keys = _selection(family, split, split_by or "world", seeds, difficulty, world_seed).keys()
    if not keys:
        raise UsageError("the selection holds no task; nothing to export")
    written: list[int] = []
    write_file(out, lambda tmp: written.append(writer(task_rows(keys, store), tmp)))
    console.print(f"wrote {written[0]} task(s) to {out}", markup=False)
