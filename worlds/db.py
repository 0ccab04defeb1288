"""Database targets: parse a path or URL, and make engines with the settings a world needs.

Accepted targets: a filesystem path, ``sqlite:///PATH``, ``sqlite://`` (a private in-memory database),
``postgresql://...``, ``postgresql+psycopg://...`` (PostgreSQL always goes through psycopg 3).

SQLite connections get foreign keys ON (SQLite's default is OFF, and it is per connection), a busy timeout, WAL
with ``synchronous=NORMAL`` for files, and driver-level transaction control handed to SQLAlchemy so SAVEPOINTs
nest correctly (pysqlite's own implicit transactions break them). All of it runs in a ``connect`` event, so no
connection can slip through without it.

In-memory databases (forks, ``sqlite://`` worlds) are plain ``sqlite3`` connections adopted by one shared
engine (``adopt_connection``), and SQLite files are serialized once per process for forking (``file_image``).
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError
from sqlalchemy.pool import NullPool, StaticPool

from worlds.errors import BadDatabaseURL, StoreError

Backend = Literal["sqlite", "postgresql"]
BUSY_TIMEOUT_MS = 5_000
_PG_DRIVERS = ("postgresql", "postgresql+psycopg", "postgres")
_SQLITE_DRIVERS = ("sqlite", "sqlite+pysqlite")
SQLITE_MAGIC = b"SQLite format 3\x00"
_images: dict[str, tuple[tuple[int, ...], bytes]] = {}
_images_lock = threading.Lock()
_pending = threading.local()
_memory_engine: Engine | None = None


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
        # A world file with no pending WAL content is opened immutable: nothing (no -shm, no -wal) is created
        # beside the user's file by a read-only look at it. With pending WAL content, a plain read-only open.
        wal = Path(f"{path}-wal")
        pending = wal.exists() and wal.stat().st_size > 0
        uri = f"file:{quote(str(path))}?mode=ro" + ("" if pending else "&immutable=1")

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


# -- in-memory databases and images ---------------------------------------------------------------------------


def _creator() -> sqlite3.Connection:
    """Hand over the connection ``adopt_connection`` is adopting; refuse to invent a database otherwise."""
    conn: sqlite3.Connection | None = getattr(_pending, "conn", None)
    if conn is None:
        raise StoreError("an in-memory world has exactly one connection; use World.connect() or World.session()")
    _pending.conn = None
    return conn


def _shared_memory_engine() -> Engine:
    """The one engine every in-memory world (fork) uses.

    Creating an engine per fork would cost more than the fork itself. Its creator adopts the connection that
    ``adopt_connection`` puts in a thread-local slot, so the engine never opens a database of its own.
    """
    global _memory_engine
    if _memory_engine is None:
        with _images_lock:
            if _memory_engine is None:
                engine = create_engine("sqlite://", creator=_creator, poolclass=NullPool)
                sqlite_transactions(engine)
                _memory_engine = engine
    return _memory_engine


def adopt_connection(raw: sqlite3.Connection) -> Connection:
    """Wrap a private sqlite3 connection in a SQLAlchemy Connection (closing it closes the database).

    Goes through the shared engine's pool ``creator`` so the Connection gets the engine's transaction events
    and dialect, at the cost of one pool checkout rather than a ``create_engine``.
    """
    configure_sqlite_connection(raw, wal=False)
    _pending.conn = raw
    try:
        return _shared_memory_engine().connect()
    finally:
        _pending.conn = None


def new_memory_connection(image: bytes | None = None) -> sqlite3.Connection:
    """A private ``:memory:`` database, usable from any thread, optionally filled from a SQLite image.

    ``deserialize`` copies the bytes, so writes to the new database never reach the cached image.
    """
    raw = sqlite3.connect(":memory:", check_same_thread=False)
    if image is not None:
        raw.deserialize(image)
    # The pages already live in memory; a small page cache stops each fork from holding a second copy of the
    # pages it has read (measured: 1.23 -> 1.07 MB per live episode of a 0.69 MB world, no slower per step).
    raw.execute("PRAGMA cache_size=-64")
    return raw


def file_image(path: Path) -> bytes:
    """The serialized image of a SQLite file, cached per process until the file (or its WAL) changes."""
    wal = Path(f"{path}-wal")
    st = path.stat()
    wst = wal.stat() if wal.exists() else None
    key = (st.st_ino, st.st_mtime_ns, st.st_size, wst.st_mtime_ns if wst else 0, wst.st_size if wst else 0)
    with _images_lock:
        cached = _images.get(str(path))
        if cached is not None and cached[0] == key:
            return cached[1]
        src = sqlite3.connect(f"file:{quote(str(path))}?mode=ro", uri=True)
        try:
            raw_image = bytearray(src.serialize())
        finally:
            src.close()
        # Bytes 18-19 of the header say "WAL"; an in-memory copy has no WAL file and would refuse writes, so
        # mark the image as a rollback-journal database.
        raw_image[18] = raw_image[19] = 1
        image = bytes(raw_image)
        _images[str(path)] = (key, image)
        return image
