"""Reads one WorldSpec JSON per line on stdin; prints the generated world's state hash per line."""

import sqlite3
import sys

from sqlalchemy import create_engine, event

from worlds.dump import state_hash
from worlds.generate import generate
from worlds.rows import insert_rows
from worlds.schema import Base
from worlds.spec import WorldSpec


def world_hash(spec: WorldSpec) -> str:
    engine = create_engine("sqlite://")

    @event.listens_for(engine, "connect")
    def _fk(conn: sqlite3.Connection, record: object) -> None:
        conn.execute("PRAGMA foreign_keys=ON")

    Base.metadata.create_all(engine)
    with engine.begin() as conn:
        insert_rows(conn, generate(spec))
    with engine.connect() as conn:
        h = state_hash(conn)
    engine.dispose()
    return h


for line in sys.stdin:
    sys.stdout.write(world_hash(WorldSpec.model_validate_json(line)) + "\n")
    sys.stdout.flush()
