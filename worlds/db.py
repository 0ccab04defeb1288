"""Database targets: parse a path or URL, and make engines with the settings a world needs.

Accepted targets: a filesystem path, ``sqlite:///PATH``, ``sqlite://`` (a private in-memory database),
``postgresql://...``, ``postgresql+psycopg://...`` (PostgreSQL always goes through psycopg 3).

SQLite connections get foreign keys ON (SQLite's default is OFF, and it is per connection), a busy timeout, WAL
with ``synchronous=NORMAL`` for files, and driver-level transaction control handed to SQLAlchemy so SAVEPOINTs
nest correctly (pysqlite's own implicit transactions break them). All of it runs in a ``connect`` event, so no
connection can slip through without it.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool, StaticPool

from worlds.errors import BadDatabaseURL

Backend = Literal["sqlite", "postgresql"]
BUSY_TIMEOUT_MS = 5_000
_PG_DRIVERS = ("postgresql", "postgresql+psycopg", "postgres")
_SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")


@dataclass(frozen=True, kw_only=True)
class Target:
    """Where a world lives: a SQLite file, a private in-memory SQLite database, or a PostgreSQL database."""

    backend: Backend
    url: str
    path: Path | None = None

    @property
    def memory(self) -> bool:
        """True for ``sqlite://``: a database that lives and dies with its engine."""
        return self.backend == "sqlite" and self.path is None

    @property
    def display(self) -> str:
        """The target for messages: the path, or the URL with any password masked."""
        if self.path is not None:
            return str(self.path)
        return make_url(self.url).render_as_string(hide_password=True)

    @property
    def database(self) -> str | None:
        """The PostgreSQL database name (None for SQLite)."""
        return make_url(self.url).database if self.backend == "postgresql" else None


def parse_target(target: str | Path) -> Target:
    """Turn a filesystem path or database URL into a Target.

    Paths are made absolute so a world handle keeps pointing at the same file if the process changes directory.

    Raises:
        BadDatabaseURL: the URL is malformed or names an unsupported backend or driver (one-line message).
    """
    text = str(target)
    if isinstance(target, Path) or "://" not in text:
        if not text.strip() or "\x00" in text:
            raise BadDatabaseURL(f"invalid world path {text!r}; expected a file path or a database URL")
        path = Path(text).expanduser().absolute()
        return Target(backend="sqlite", url=f"sqlite:///{path}", path=path)
    try:
        url = make_url(text)
    except (ArgumentError, ValueError):
        raise BadDatabaseURL(f"malformed database URL {text!r}; expected sqlite:///PATH or postgresql://...") from None
    if url.drivername in _SQLITE_DRIVERS:
        if not url.database or url.database == ":memory:":
            return Target(backend="sqlite", url="sqlite://")
        path = Path(url.database).expanduser().absolute()
        return Target(backend="sqlite", url=f"sqlite:///{path}", path=path)
    if url.drivername in _PG_DRIVERS:
        if not url.database:
            raise BadDatabaseURL(f"database URL {url.render_as_string(hide_password=True)!r} names no database")
        pg = url.set(drivername="postgresql+psycopg")
        return Target(backend="postgresql", url=pg.render_as_string(hide_password=False))
    raise BadDatabaseURL(
        f"unsupported database URL scheme {url.drivername!r}; expected sqlite:///PATH, sqlite://, "
        "postgresql:// or postgresql+psycopg://"
    )


def configure_sqlite_connection(dbapi_conn: sqlite3.Connection, *, wal: bool = True) -> None:
    """Per-connection settings every world connection needs.

    ``isolation_level = None`` stops pysqlite from issuing its own BEGIN/COMMIT; SQLAlchemy's ``begin`` event
    (see ``sqlite_transactions``) emits BEGIN instead, so savepoints nest and rollbacks are real.
    """
    dbapi_conn.isolation_level = None
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    if wal:
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


def sqlite_transactions(engine: Engine) -> None:
    """Let SQLAlchemy, not pysqlite, emit BEGIN, so savepoints and rollbacks behave."""

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        conn.exec_driver_sql("BEGIN")


def _sqlite_file_creator(path: Path, readonly: bool) -> Any:
    """A pool ``creator`` opening ``path`` directly, so no character in the path needs URL escaping."""
    if readonly:
        uri = f"file:{quote(str(path))}?mode=ro"

        def connect_ro() -> sqlite3.Connection:
            return sqlite3.connect(uri, uri=True, check_same_thread=False)

        return connect_ro

    def connect_rw() -> sqlite3.Connection:
        return sqlite3.connect(path, check_same_thread=False)

    return connect_rw


def make_engine(target: Target | str | Path, *, readonly: bool = False) -> Engine:
    """An engine for a world target (one per world handle).

    File SQLite and PostgreSQL use ``NullPool``: a world handle keeps no idle connection, which is what lets a
    PostgreSQL base serve as a ``CREATE DATABASE ... TEMPLATE`` and a SQLite file be replaced safely. An
    in-memory SQLite target keeps its one connection (``StaticPool``), usable from any thread.

    Raises:
        BadDatabaseURL: ``target`` is a string that does not parse.
    """
    tgt = target if isinstance(target, Target) else parse_target(target)
    if tgt.backend == "postgresql":
        return create_engine(tgt.url, poolclass=NullPool)
    if tgt.path is None:
        engine = create_engine("sqlite://", poolclass=StaticPool, connect_args={"check_same_thread": False})
        wal = False
    else:
        engine = create_engine(tgt.url, creator=_sqlite_file_creator(tgt.path, readonly), poolclass=NullPool)
        wal = not readonly

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: sqlite3.Connection, record: Any) -> None:
        configure_sqlite_connection(dbapi_conn, wal=wal)

    sqlite_transactions(engine)
    return engine
