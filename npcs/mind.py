"""The NPC turn graph's checkpointer: a langgraph ``BaseCheckpointSaver`` whose storage is the world database.

Why a checkpointer and why in the world: an NPC carries state from one turn to the next (how far it has read
each app, which tickets it had, how many turns it has taken). The turn graph declares that state as its
``mind`` channel, langgraph loads it before a turn and saves it after, and the nodes read and write it like any
other channel. Stored in langgraph's own savers it would live outside the world, so a snapshot, a fork or a
campaign's next episode would lose it; here a thread is one NPC (``thread_id`` is its username) and its
checkpoint is its ``npc_personas`` row (``cursor``, ``turns``), written through ``worlds.rawsql.Sql`` so the
write is change-logged, hashed and carried by every snapshot like the rest of the world.

Determinism: only the ``mind`` channel is stored, never langgraph's checkpoint id or timestamp (a time-based
UUID and the wall clock). The loaded checkpoint's id is derived from the turn count, and the channel version
from it too, so the same world gives langgraph the same checkpoint in every run. Within a turn's run the
other channels (stimuli, plans, actions) are transient: the run starts from fresh input each time.

The graph runs with ``durability="exit"``: one ``put`` after the last node, none between nodes (a turn is
short, runs inside the episode's transaction, and a crash mid-turn rolls the world back anyway), so pending
writes are never needed and ``put_writes`` keeps nothing. langgraph calls ``put`` from its background
executor, and a SQLite connection belongs to the thread that opened it, so ``put`` hands the checkpoint to the
turn's runtime and ``save`` writes it in the caller's thread once ``invoke`` has returned (which waits for it).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, CheckpointTuple, empty_checkpoint

from worlds.rawsql import Sql

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata

    from npcs.persona import Persona

MIND = "mind"
"""The channel the saver persists: ``{"cursor": {...}, "turns": int}``."""


def _persona(config: RunnableConfig) -> tuple[Sql, Persona]:
    """The world and the persona of the thread, from the turn's runtime in ``configurable``."""
    rt = (config.get("configurable") or {})["rt"]
    env = rt.env
    return Sql.of(env.ctx.session), env.persona


def _config(thread: str, checkpoint_id: str) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}}


class WorldSaver(BaseCheckpointSaver[int]):
    """Checkpoints of NPC threads kept in their ``npc_personas`` rows (latest only: a persona has no history)."""

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The thread's latest checkpoint: its persona row's cursor and turn count as the ``mind`` channel."""
        sql, persona = _persona(config)
        row = sql.one("SELECT cursor, turns FROM npc_personas WHERE id = ?", (persona.row_id,))
        if row is None:
            return None
        cursor = row[0] if isinstance(row[0], dict) else _loads(row[0])
        turns = int(row[1])
        checkpoint = empty_checkpoint()
        checkpoint["id"] = f"{turns:012d}"
        checkpoint["ts"] = ""
        checkpoint["channel_values"] = {MIND: {"cursor": {**persona.cursor, **cursor}, "turns": turns}}
        checkpoint["channel_versions"] = {MIND: turns}
        config_out = _config(persona.username, checkpoint["id"])
        return CheckpointTuple(config_out, checkpoint, {"source": "loop", "step": -1, "parents": {}}, None, [])

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Stage the ``mind`` channel for ``save`` (this runs on langgraph's executor thread, not the world's)."""
        rt = (config.get("configurable") or {})["rt"]
        mind = checkpoint["channel_values"].get(MIND)
        if isinstance(mind, dict):
            rt.mind = {"cursor": dict(mind["cursor"]), "turns": int(mind["turns"])}
        return _config(rt.env.persona.username, checkpoint["id"])

    def put_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        """Nothing to keep: the graph runs with ``durability="exit"`` and a turn is never resumed mid-way."""

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,  # noqa: A002 - langgraph's signature
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """The thread's one checkpoint (a persona keeps only its latest state)."""
        if config is not None and (found := self.get_tuple(config)) is not None:
            yield found

    def get_next_version(self, current: int | None, channel: None) -> int:
        """Integer versions counting up from the stored one (deterministic: no random or time component)."""
        return 1 if current is None else int(current) + 1


def save(sql: Sql, persona: Persona, mind: dict[str, Any] | None) -> None:
    """Write a staged checkpoint to the persona row (change-logged) and mirror it into ``persona``."""
    if mind is None or (mind["cursor"] == persona.cursor and mind["turns"] == persona.turns):
        return
    sql.update(
        "npc_personas",
        persona.row_id,
        {"cursor": (dict(persona.cursor), mind["cursor"]), "turns": (persona.turns, mind["turns"])},
    )
    persona.cursor, persona.turns = dict(mind["cursor"]), int(mind["turns"])


def _loads(value: Any) -> dict[str, Any]:
    loaded = json.loads(value) if isinstance(value, str | bytes) else dict(value or {})
    assert isinstance(loaded, dict)
    return loaded
