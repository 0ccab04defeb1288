"""A tiny world for the NPC tests: the app tests' hand-built company, on an engine with real savepoints.

The rows come from ``tests/mcp_tools/conftest.py`` (loaded by path: ``tests`` is not a package). The engine is
configured as world engines are (``worlds.db``): SQLAlchemy emits BEGIN, so the NPCs' per-action SAVEPOINTs
nest inside the session's transaction. The agent plays ``lena.lead`` (id 2); ``dev.one`` (3) is the usual NPC
under test; it works 09:00-17:00 Europe/Berlin, Monday to Friday.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, event, text
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from mcp_tools.base import Actor, ToolContext
from mcp_tools.chat import service as chat
from npcs.model import NpcWorld
from worlds.changelog import track
from worlds.clock import FixedClock
from worlds.db import configure_sqlite_connection, sqlite_transactions
from worlds.schema import Base

_spec = importlib.util.spec_from_file_location(
    "_npcs_tiny_company", Path(__file__).resolve().parent.parent / "mcp_tools" / "conftest.py"
)
assert _spec is not None and _spec.loader is not None
tiny = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tiny)
T0: datetime = tiny.T0  # Monday 2026-03-02 09:00 UTC = 10:00 in Berlin


class Tiny:
    """The tiny company with a tracked session, a settable clock and the agent's Actor."""

    def __init__(self) -> None:
        self.engine = create_engine("sqlite://", poolclass=StaticPool)
        event.listen(self.engine, "connect", lambda c, r: configure_sqlite_connection(c, wal=False))
        sqlite_transactions(self.engine)
        Base.metadata.create_all(self.engine)
        rows = tiny.tiny_rows()
        rows["mailboxes"] = [
            dict(id=i, address=f"{u}@acme.test", display_name=f"{f} {la}", employee_id=i)
            for i, u, f, la, *_ in tiny.PEOPLE
        ]
        with self.engine.begin() as conn:
            conn.execute(text("PRAGMA defer_foreign_keys = ON"))
            for table in Base.metadata.sorted_tables:
                if rows.get(table.name):
                    conn.execute(table.insert(), rows[table.name])
        self.session = Session(self.engine)
        self.clock = FixedClock(T0)
        self.changes = track(self.session, clock=self.clock, actor_id=2, tag="agent")
        self.agent = Actor.load(self.session, "lena.lead")

    def ctx(self) -> ToolContext:
        """The agent's tool context."""
        return ToolContext(session=self.session, actor=self.agent, clock=self.clock)

    def npcs(self, seed: int = 7, **kw: Any) -> NpcWorld:
        """An NPC population on this world, the agent excluded."""
        return NpcWorld(self.session, seed, self.clock, agent="lena.lead", **kw)

    def dm(self, world: NpcWorld, to: str, message: str) -> dict[str, Any]:
        """The agent DMs ``to`` now, then pokes the population (what the episode does after a step)."""
        out = chat.direct_message(self.ctx(), to, message)
        world.poke()
        return out

    def run_until(self, world: NpcWorld, until: datetime) -> list[Any]:
        """Advance the clock from wakeup to wakeup up to ``until``, running due turns; returns the actions."""
        actions: list[Any] = []
        while (at := world.next_wakeup()) is not None and at <= until:
            self.clock.set(max(at, self.clock.now()))
            actions += world.run_due(self.clock.now())
        self.clock.set(max(until, self.clock.now()))
        return actions

    def close(self) -> None:
        self.session.close()
        self.engine.dispose()


@pytest.fixture
def tinyworld() -> Iterator[Tiny]:
    """A fresh tiny world per test."""
    w = Tiny()
    yield w
    w.close()


DAY = timedelta(days=1)
