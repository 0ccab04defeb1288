"""Generated worlds as plain rows, and the bulk loader that writes them.

The generator returns ``WorldRows``: table name -> list of column dicts with explicit integer ids. Loading with
Core ``executemany`` in dependency order is ~7x faster than the ORM and identical on SQLite and PostgreSQL.
Cyclic references (a department's head is an employee of that department) use deferred foreign keys, checked
at commit.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.pool import StaticPool

from worlds.schema import Base

WorldRows = dict[str, list[dict[str, Any]]]

CHUNK = 5_000


def insert_rows(conn: Connection, rows: WorldRows) -> int:
    """Insert ``rows`` inside the caller's transaction, parents before children; returns the row count.

    Raises:
        KeyError: a table name in ``rows`` is not part of the schema.
    """
    unknown = sorted(set(rows) - set(Base.metadata.tables))
    if unknown:
        raise KeyError(f"unknown table {unknown[0]!r} in generated rows")
    if conn.dialect.name == "sqlite":
        conn.execute(text("PRAGMA defer_foreign_keys = ON"))
    total = 0
    for table in Base.metadata.sorted_tables:
        batch = rows.get(table.name)
        if not batch:
            continue
        for start in range(0, len(batch), CHUNK):
            conn.execute(table.insert(), batch[start : start + CHUNK])
        total += len(batch)
    return total


def load_in_memory(rows: WorldRows) -> Engine:
    """A fresh in-memory SQLite world holding ``rows`` (foreign keys on), for tests and hash workers.

    One connection is shared by every checkout (StaticPool), so the data outlives the loading transaction.
    """
    engine = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})

    @event.listens_for(engine, "connect")
    def _fk(dbapi_conn: Any, record: Any) -> None:
        dbapi_conn.execute("PRAGMA foreign_keys=ON")

    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        insert_rows(conn, rows)
    return engine
