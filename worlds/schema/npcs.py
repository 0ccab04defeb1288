"""NPC coworkers' own state: persona (traits, goals, perception cursor) and memory.

These are the only tables NPCs write directly (everything else they change through the app services, as an
Actor). Keeping them in the world database means a snapshot, fork or replay carries the NPCs' minds along
with the company, and the canonical dump and state hash cover them.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from worlds.schema.base import Base, JSONValue, intpk, json_dict, json_list, utc_ts


class NpcPersona(Base):
    """One NPC: its trait vector, goals, preset name and where its perception stopped.

    ``cursor`` holds the highest post, ticket comment and mail message ids already perceived and the ticket
    ids assigned at the last turn; ``turns`` counts turns taken, so turn ``n``'s randomness is a pure function of
    (world seed, employee, n).
    """

    __tablename__ = "npc_personas"

    id: Mapped[intpk]
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), unique=True)
    preset: Mapped[str | None] = mapped_column(String(30))
    traits: Mapped[dict[str, Any]] = mapped_column(JSONValue())
    goals: Mapped[json_list]
    cursor: Mapped[json_dict]
    turns: Mapped[int] = mapped_column(Integer, default=0)


class NpcMemory(Base):
    """Something an NPC perceived, said or did (``kind``), about ``subject`` (a ticket key, a username, ...)."""

    __tablename__ = "npc_memory"

    id: Mapped[intpk]
    employee_id: Mapped[int] = mapped_column(ForeignKey("employees.id"), index=True)
    at: Mapped[utc_ts]
    turn: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(30))
    subject: Mapped[str] = mapped_column(String(200))
    data: Mapped[dict[str, Any]] = mapped_column(JSONValue())
