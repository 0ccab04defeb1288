"""Tasks as a dataset: one row per (family, world seed, seed, difficulty), with its split, prompt and tools.

Why a dataset: trainers (TRL, verl, SkyRL) and evaluation harnesses start from rows, not from a registry. A row
holds what a rollout needs to ask for its episode (``scenario``, ``seed``, ``difficulty``, ``options`` with the
``world_seed``, exactly what ``sim.adapters.common.TaskRow`` reads) and what a model is shown (the prompt and the
tools as OpenAI function schemas), plus the task's split. A row is a valid adapter row as it is
(``TaskRow.parse(row, scenario)``). The prompt and the tools come from resetting the
episode, so they are what the agent will really get; the same selection gives the same bytes.

``tools`` is the JSON text of the OpenAI tool list, not a nested column: every family has another tool set, and
a nested column would be the union of every schema's fields, mostly nulls, in Parquet. Splits are by hash
(``scenarios.splits``): by company, by family (held-out families) or by source; ``source`` is the family id
for generated tasks and the provenance of mined ones.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scenarios.registry import make, registered
from scenarios.splits import check_split, family_name, split_of
from sim.errors import SimError
from sim.trace import canonical
from worlds.store import WorldStore

__all__ = [
    "COLUMNS",
    "TaskKey",
    "TaskSelection",
    "mined_keys",
    "parse_seeds",
    "task_rows",
    "write_jsonl",
    "write_parquet",
]

COLUMNS = (
    "id",
    "scenario",
    "family",
    "world_seed",
    "seed",
    "difficulty",
    "split",
    "source",
    "kind",
    "prompt",
    "tools",
    "options",
)
"""The columns of an exported row, in order."""


@dataclass(frozen=True, kw_only=True)
class TaskKey:
    """One task, before it is built: which family, company, seed and difficulty, and where it splits."""

    scenario: str
    world_seed: int
    seed: int
    difficulty: int
    split: str
    source: str
    kind: str = "generated"
    """``generated`` (a family's own task), or the mined kind: ``question``, ``redo`` or ``followup``."""
    employees: int | None = None
    history_days: int | None = None
    """The world's size and history when not the family's defaults (a mined task's world)."""

    @property
    def id(self) -> str:
        """The task's stable id: ``triage-tickets-v0/w3/s3/d1`` (``/w3e100h30/`` in a world of its own size)."""
        world = f"w{self.world_seed}"
        if self.employees is not None or self.history_days is not None:
            world += f"e{self.employees}h{self.history_days}"
        return f"{self.scenario}/{world}/s{self.seed}/d{self.difficulty}"

    @property
    def options(self) -> dict[str, Any]:
        """The reset options that give this task (with ``seed``)."""
        out: dict[str, Any] = {"difficulty": self.difficulty, "world_seed": self.world_seed}
        if self.employees is not None:
            out["employees"] = self.employees
        if self.history_days is not None:
            out["history_days"] = self.history_days
        return out


@dataclass(frozen=True, kw_only=True)
class TaskSelection:
    """Which tasks to list or export.

    Attributes:
        families: Scenario ids (empty: every registered one).
        seeds: Task seeds.
        difficulties: Difficulties to include.
        world_seed: The company every task plays in (None: each task's own, ``world_seed = seed``, as ``run``).
        split_by: ``world``, ``family`` or ``source``: which hash assigns the split.
        split: Keep only tasks of this split (None: all).
    """

    families: tuple[str, ...] = ()
    seeds: tuple[int, ...] = (0,)
    difficulties: tuple[int, ...] = (0, 1, 2, 3)
    world_seed: int | None = None
    split_by: str = "world"
    split: str | None = None

    def keys(self) -> list[TaskKey]:
        """Every selected task, family by family, then seed, then difficulty.

        Raises:
            ScenarioRegistryError: a family is not registered. SplitError: an unknown split or split kind.
        """
        if self.split is not None:
            check_split(self.split)
        families = self.families or tuple(r.id for r in registered())
        for family in families:
            make(family)  # an unknown id fails here, before any work
        out: list[TaskKey] = []
        for family in families:
            for seed in self.seeds:
                world = seed if self.world_seed is None else self.world_seed
                split = split_of(self.split_by, world_seed=world, scenario_id=family, source=family)
                if self.split is not None and split != self.split:
                    continue
                out += [
                    TaskKey(scenario=family, world_seed=world, seed=seed, difficulty=d, split=split, source=family)
                    for d in self.difficulties
                ]
        return out


def mined_keys(
    world_seed: int,
    *,
    employees: int = 100,
    history_days: int = 30,
    split_by: str = "source",
    split: str | None = None,
    store: WorldStore | None = None,
) -> list[TaskKey]:
    """The tasks the miner validates in one world (``sim.mine``), each split by ``split_by`` over its source.

    Mining plays every candidate (oracle and no-op), so this builds worlds, unlike ``TaskSelection.keys``.

    Raises:
        SplitError: an unknown split or split kind.
    """
    from sim.mine import KINDS, mine  # lazy: mining plays episodes

    if split is not None:
        check_split(split)
    split_of(split_by, world_seed=world_seed, scenario_id=KINDS["redo"], source="")  # a bad kind fails before mining
    out: list[TaskKey] = []
    for kind, mined in mine(world_seed, employees=employees, history_days=history_days, store=store).items():
        for task in sorted(mined.valid.values(), key=lambda t: (t["difficulty"], t["seed"])):
            scenario = str(task["scenario"])
            where = split_of(split_by, world_seed=world_seed, scenario_id=scenario, source=str(task["source"]))
            if split is not None and where != split:
                continue
            out.append(
                TaskKey(scenario=scenario, world_seed=world_seed, seed=int(task["seed"]),
                        difficulty=int(task["difficulty"]), split=where, source=str(task["source"]), kind=kind,
                        employees=employees, history_days=history_days)
            )  # fmt: skip
    return out


def parse_seeds(text: str) -> tuple[int, ...]:
    """``A:B`` (A to B-1), ``A`` or ``A,B,C`` as seeds.

    Raises:
        SimError: not that shape, a negative seed, or an empty range.
    """
    try:
        if ":" in text:
            start, _, stop = text.partition(":")
            seeds = tuple(range(int(start), int(stop)))
        else:
            seeds = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise SimError(f"--seeds must be A:B, A or A,B,C with integers; got {text!r:.40}") from None
    if not seeds or min(seeds) < 0:
        raise SimError(f"--seeds must name at least one seed, none negative; got {text!r:.40}")
    return seeds


def task_rows(keys: Sequence[TaskKey], store: WorldStore | None = None) -> Iterator[dict[str, Any]]:
    """Build each task (a reset: fork, setup) and yield its row with the prompt and tools it gives.

    One episode per family is reused, so a task repeated in the process is forked from the setup cache.
    """
    from sim.episode import Episode  # lazy: listing tasks builds no world

    episodes: dict[str, Episode] = {}
    try:
        for key in keys:
            episode = episodes.get(key.scenario)
            if episode is None:
                episode = episodes[key.scenario] = Episode(key.scenario, store=store)
            prompt, info = episode.reset(seed=key.seed, options=key.options)
            yield {
                **asdict(key),
                "id": key.id,
                "family": family_name(key.scenario),
                "prompt": prompt,
                "tools": canonical(info["tools"]),
                "options": key.options,
            }
    finally:
        for episode in episodes.values():
            episode.close()


def _ordered(row: dict[str, Any]) -> dict[str, Any]:
    return {column: row[column] for column in COLUMNS}


def write_jsonl(rows: Iterable[dict[str, Any]], path: Path) -> int:
    """Write rows as JSON Lines (one canonical object a line); returns how many."""
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(_ordered(row), ensure_ascii=False, separators=(",", ":")) + "\n")
            n += 1
    return n


def write_parquet(rows: Iterable[dict[str, Any]], path: Path) -> int:
    """Write rows as one Parquet table with a fixed schema; returns how many."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = [_ordered(r) for r in rows]
    # Mined tasks name their world's size; a generated task's options stay two fields, so its rows read back
    # from Parquet equal the JSON Lines rows (no null employees a reset would take for a value).
    options = ["difficulty", "world_seed"]
    options += [k for k in ("employees", "history_days") if any(k in r["options"] for r in data)]
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("scenario", pa.string()),
            ("family", pa.string()),
            ("world_seed", pa.int64()),
            ("seed", pa.int64()),
            ("difficulty", pa.int64()),
            ("split", pa.string()),
            ("source", pa.string()),
            ("kind", pa.string()),
            ("prompt", pa.string()),
            ("tools", pa.string()),
            ("options", pa.struct([(name, pa.int64()) for name in options])),
        ]
    )
    table = pa.Table.from_pylist(data, schema=schema)
    pq.write_table(table, path, compression="zstd")
    return len(data)
