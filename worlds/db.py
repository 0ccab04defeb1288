"""Database targets: parse a path or URL, and make engines with the settings a world needs.

SQLite connections get foreign keys ON (SQLite's default is OFF, per connection), WAL, a busy timeout, and
driver-level transaction control handed to SQLAlchemy so SAVEPOINTs nest correctly (pysqlite's own
implicit transactions break them). PostgreSQL goes through psycopg 3.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool

from worlds.errors import BadDatabaseURL


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where a world lives: a SQLite file or a PostgreSQL database."""

    backend: str
    url: str
    path: Path | None = None


def parse_target(target: str | Path) -> Target:
    """Turn a filesystem path or database URL into a Target.

    Raises:
        BadDatabaseURL: the URL is malformed or names an unsupported backend.
    """
    text = str(target)
    if isinstance(target, Path) or "://" not in text:
        if not text or "\x00" in text:
            raise BadDatabaseURL(f"invalid world path {text!r}")
        path = Path(text).expanduser().absolute()
        return Target(backend="sqlite", url=f"sqlite:///{path}", path=path)
    try:
        url = make_url(text)
    except ArgumentError:
        raise BadDatabaseURL(f"malformed database URL {text!r}; expected sqlite:///PATH or postgresql://...") from None
    if url.drivername == "sqlite":
        if not url.database or url.database == ":memory:":
            raise BadDatabaseURL(f"{text!r} is an in-memory database; a world needs a file (sqlite:///PATH)")
        path = Path(url.database).expanduser().absolute()
        return Target(backend="sqlite", url=f"sqlite:///{path}", path=path)
    if url.drivername in ("postgresql", "postgresql+psycopg", "postgres"):
        if not url.database:
            raise BadDatabaseURL(f"database URL {text!r} names no database")
        pg = url.set(drivername="postgresql+psycopg")
        return Target(backend="postgresql", url=pg.render_as_string(hide_password=False))
    raise BadDatabaseURL(f"unsupported database URL scheme {url.drivername!r}; expected sqlite or postgresql")


def configure_sqlite_connection(dbapi_conn: sqlite3.Connection, *, wal: bool = True) -> None:
    """Per-connection settings every world connection needs."""
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=5000")
    if wal:
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, emit BEGIN, so savepoints and rollbacks behave."""

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


def make_engine(target: Target, *, readonly: bool = False) -> Engine:
    """An engine for a world target (one per world handle)."""
    if target.backend == "sqlite":
        assert target.path is not None
        if readonly:
            engine = create_engine(f"sqlite:///file:{target.path}?mode=ro&uri=true", poolclass=NullPool)
        else:
            engine = create_engine(target.url, poolclass=NullPool)

        @event.listens_for(engine, "connect")
        def _connect(dbapi_conn: sqlite3.Connection, record: Any) -> None:
            configure_sqlite_connection(dbapi_conn, wal=not readonly)

        sqlite_transactions(engine)
        return engine
    return create_engine(target.url, poolclass=NullPool)
