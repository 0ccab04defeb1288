"""World metadata (versions, spec, completeness) and the change log."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, JSONValue, utc_ts


class WorldMeta(Base):
    """Key/value facts about the world: ``schema_version``, ``generator_version``, ``spec``, ``complete``."""

    __tablename__ = "world_meta"

    key: Mapped[str] = mapped_column(String(50), primary_key=True)
    value: Mapped[str] = mapped_column(String(4000))


class ChangeLog(Base):
    """One row per insert, update or delete made through a tracked session, in commit order.

    ``row_key`` is the primary key as canonical JSON; ``changes`` maps each column to its new value (insert),
    ``[old, new]`` (update) or its old value (delete). ``actor_id`` and ``at`` come from the session's info.
    Generation writes in bulk and is not logged: the log starts where the world's life starts.
    """

    __tablename__ = "change_log"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True)
    table_name: Mapped[str] = mapped_column(String(60), index=True)
    row_key: Mapped[str] = mapped_column(String(200))
    op: Mapped[str] = mapped_column(String(6), doc="insert | update | delete")
    changes: Mapped[dict[str, Any]] = mapped_column(JSONValue())
    actor_id: Mapped[int | None] = mapped_column(Integer)
    at: Mapped[utc_ts]
    tag: Mapped[str | None] = mapped_column(String(100), doc="What made the change (tool name, setup, npc).")
